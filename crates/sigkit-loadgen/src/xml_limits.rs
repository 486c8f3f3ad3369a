//! What a scenario file may cost before roxmltree builds its tree, read
//! with xmlparser's streaming tokenizer (no tree, no recursion): its
//! size, nesting depth and element count, and no DTD entity declarations.
//! And [`LineIndex`], the line of a byte offset in logarithmic time.
//!
//! SIPp's own scenarios are a few kilobytes, nest four or five levels
//! (scenario, action, ereg, ...) and declare no entities (their DOCTYPE
//! names sipp.dtd and nothing more), so the bounds are far from any real
//! scenario and close enough to keep a crafted file's cost small.

/// The largest scenario file read, in bytes.
pub const MAX_SCENARIO_BYTES: usize = 16 << 20;

/// The deepest element nesting a scenario may have.
pub const MAX_DEPTH: usize = 64;

/// The most elements (steps, actions, labels, anything else) a scenario
/// may hold.
pub const MAX_ELEMENTS: usize = 100_000;

/// A bound a scenario file went past ([`check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LimitError {
    TooLarge { bytes: usize },
    TooDeep { line: u32 },
    TooManyElements { line: u32 },
    EntityDeclaration { line: u32, name: String },
}

/// Refuses a file over [`MAX_SCENARIO_BYTES`], nested deeper than
/// [`MAX_DEPTH`] (roxmltree's parser recurses once per level, and
/// thousands of levels overflow the stack), with more than
/// [`MAX_ELEMENTS`] elements, or declaring a DTD entity: each reference to
/// an entity is a copy of its text, so a few hundred kilobytes of nested
/// references (the "billion laughs") expand to gigabytes.
pub(crate) fn check(xml: &str) -> Result<(), LimitError> {
    if xml.len() > MAX_SCENARIO_BYTES {
        return Err(LimitError::TooLarge { bytes: xml.len() });
    }
    let lines = LineIndex::new(xml);
    let mut depth = 0usize;
    let mut elements = 0usize;
    for token in xmlparser::Tokenizer::from(xml) {
        // A malformed file is roxmltree's to report, with its position.
        let Ok(token) = token else { return Ok(()) };
        match token {
            xmlparser::Token::ElementStart { span, .. } => {
                depth += 1;
                elements += 1;
                if depth > MAX_DEPTH {
                    return Err(LimitError::TooDeep { line: lines.line_of(span.start()) });
                }
                if elements > MAX_ELEMENTS {
                    return Err(LimitError::TooManyElements { line: lines.line_of(span.start()) });
                }
            }
            xmlparser::Token::ElementEnd {
                end: xmlparser::ElementEnd::Close(..) | xmlparser::ElementEnd::Empty,
                ..
            } => {
                depth = depth.saturating_sub(1);
            }
            xmlparser::Token::EntityDeclaration { name, span, .. } => {
                return Err(LimitError::EntityDeclaration {
                    line: lines.line_of(span.start()),
                    name: name.as_str().to_string(),
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// The byte offsets of a text's line ends, for the line of any offset by
/// binary search: roxmltree's `text_pos_at` scans the text from its start
/// on every call, which made reading a scenario quadratic in its length.
pub(crate) struct LineIndex {
    newlines: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        LineIndex { newlines: text.bytes().enumerate().filter(|&(_, b)| b == b'\n').map(|(i, _)| i).collect() }
    }

    /// The line (from 1) of byte offset `at`: one more than the line ends
    /// before it.
    pub(crate) fn line_of(&self, at: usize) -> u32 {
        let before = self.newlines.partition_point(|&nl| nl < at);
        u32::try_from(before + 1).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_count_from_one_and_a_newline_belongs_to_its_line() {
        let index = LineIndex::new("ab\ncd\n\nef");
        let lines: Vec<u32> = (0..9).map(|at| index.line_of(at)).collect();
        assert_eq!(lines, [1, 1, 1, 2, 2, 2, 3, 4, 4]);
    }

    #[test]
    fn an_entity_declaration_is_refused_with_its_line() {
        let xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE scenario [\n<!ENTITY a \"aaaa\">\n]>\n<scenario/>";
        let e = check(xml).unwrap_err();
        assert_eq!(e, LimitError::EntityDeclaration { line: 3, name: "a".into() });
        // SIPp's DOCTYPE, without an internal subset, passes.
        assert_eq!(check("<!DOCTYPE scenario SYSTEM \"sipp.dtd\">\n<scenario/>"), Ok(()));
    }

    #[test]
    fn elements_are_counted_whatever_their_depth() {
        let flat = |n: usize| format!("<scenario>{}</scenario>", "<nop/>".repeat(n));
        assert_eq!(check(&flat(MAX_ELEMENTS - 1)), Ok(()));
        assert_eq!(check(&flat(MAX_ELEMENTS)), Err(LimitError::TooManyElements { line: 1 }));
    }
}
