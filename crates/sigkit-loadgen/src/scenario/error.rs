//! Why a scenario (or an injection file) could not be used: each error
//! names the element or attribute and its line.

use crate::xml_limits::{LimitError, MAX_DEPTH, MAX_ELEMENTS, MAX_SCENARIO_BYTES};

/// Why a scenario or injection file could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScenarioError {
    /// The XML parser's message for a file that is not well-formed.
    #[error("not well-formed XML: {0}")]
    Xml(String),
    /// Elements nest deeper than [`MAX_DEPTH`].
    #[error("elements nested deeper than {MAX_DEPTH} (line {line}); a SIPp scenario needs a few levels")]
    TooDeep {
        /// Line of the element past the depth bound.
        line: u32,
    },
    /// The file has more than [`MAX_ELEMENTS`] elements.
    #[error("more than {MAX_ELEMENTS} elements (line {line}); a SIPp scenario has tens")]
    TooManyElements {
        /// Line of the first element past the count bound.
        line: u32,
    },
    /// The DTD declares an entity (refused: references to nested entities multiply text).
    #[error(
        "line {line}: the DTD declares entity \"{name}\"; entity declarations are refused (each reference \
         copies the entity's text, which a few nested ones blow up to gigabytes), and SIPp's scenarios have none"
    )]
    EntityDeclaration {
        /// Line of the `<!ENTITY` declaration.
        line: u32,
        /// The declared entity's name.
        name: String,
    },
    /// The file is larger than [`MAX_SCENARIO_BYTES`].
    #[error("the scenario is {bytes} bytes or more, over the {MAX_SCENARIO_BYTES} it may have")]
    TooLarge {
        /// The file's size, bytes (at least the bound).
        bytes: usize,
    },
    /// The root element's name, when it is not `<scenario>`.
    #[error("the root element is <{0}>, not <scenario>")]
    NotAScenario(String),
    /// An element outside the supported subset of SIPp's scenario format.
    #[error(
        "line {line}: <{element}> is not supported (the common subset is send, recv, pause, nop, label, timewait)"
    )]
    Unsupported {
        /// Line of the element.
        line: u32,
        /// The element's name.
        element: String,
    },
    /// A supported element with a wrong or missing attribute or content.
    #[error("line {line}: <{element}>: {why}")]
    Bad {
        /// Line of the element.
        line: u32,
        /// The element's name.
        element: String,
        /// What is wrong with it (an attribute's value, a missing attribute).
        why: String,
    },
    /// A bracketed word in a message that looks like a SIPp keyword and is none the engine knows.
    #[error("line {line}: unknown keyword [{keyword}]")]
    UnknownKeyword {
        /// Line of the message text that holds it.
        line: u32,
        /// The text between the brackets.
        keyword: String,
    },
    /// A `next` or `ontimeout` names this label, and no `<label id=…>` defines it.
    #[error("label \"{0}\" is used by next/ontimeout but never defined")]
    UnknownLabel(String),
    /// The `<scenario>` holds no step.
    #[error("the scenario has no steps")]
    Empty,
    /// No built-in scenario has this name.
    #[error("no built-in scenario named \"{0}\" (built-in: uac, uas, register, registrar)")]
    NoSuchBuiltIn(String),
    /// An injection file (`-inf`) or a corpus flow could not be used: why (with the line, for an injection file).
    #[error("{0}")]
    Injection(String),
}

impl From<LimitError> for ScenarioError {
    fn from(e: LimitError) -> ScenarioError {
        match e {
            LimitError::TooLarge { bytes } => ScenarioError::TooLarge { bytes },
            LimitError::TooDeep { line } => ScenarioError::TooDeep { line },
            LimitError::TooManyElements { line } => ScenarioError::TooManyElements { line },
            LimitError::EntityDeclaration { line, name } => ScenarioError::EntityDeclaration { line, name },
        }
    }
}
