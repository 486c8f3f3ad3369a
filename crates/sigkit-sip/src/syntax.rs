//! Character classes and the small scanners every typed view shares
//! (RFC 3261 §25.1 core rules: token, LWS, quoted-string, generic-param).

use crate::ParseError;
use std::ops::Range;

/// `token` characters: alphanum / `-.!%*_+` `` ` `` `'~` (RFC 3261 §25.1).
const fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'!' | b'%' | b'*' | b'_' | b'+' | b'`' | b'\'' | b'~')
}

/// A generic-param value outside quotes: `token / host` (RFC 3261 §25.1
/// gen-value; an IPv6reference adds `:[]`).
const fn gen_value_byte(b: u8) -> bool {
    token_byte(b) || matches!(b, b':' | b'[' | b']')
}

/// Bit 0: [`token_byte`]; bit 1: [`gen_value_byte`]. One load per byte
/// for the scans every header's parameters go through.
const CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = token_byte(b as u8) as u8 | (gen_value_byte(b as u8) as u8) << 1;
        b += 1;
    }
    t
};

#[inline]
pub(crate) fn is_token_byte(b: u8) -> bool {
    CLASSES[usize::from(b)] & 1 != 0
}

/// Linear white space, folded line ends included (RFC 3261 §7.3.1, §25.1 LWS).
pub(crate) fn is_lws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

pub(crate) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_token_byte(b))
}

/// Strips LWS at both ends.
pub(crate) fn trim_lws(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_ascii() && is_lws(c as u8))
}

/// The range of `b` without LWS at both ends.
pub(crate) fn trim_range(b: &[u8], mut r: Range<usize>) -> Range<usize> {
    while r.start < r.end && is_lws(b[r.start]) {
        r.start += 1;
    }
    while r.end > r.start && is_lws(b[r.end - 1]) {
        r.end -= 1;
    }
    r
}

pub(crate) fn skip_lws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_lws(b[i]) {
        i += 1;
    }
    i
}

/// Index just after the closing quote of the quoted-string opening at `b[start]`,
/// honouring quoted-pairs (`\x`); `None` when unterminated.
pub(crate) fn quoted_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Removes the surrounding double quotes of a quoted-string (quoted-pairs kept as they are).
pub fn unquote(s: &str) -> &str {
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// Iterator over the elements of a comma-separated header value (RFC 3261 §7.3.1):
/// commas inside quoted-strings and angle brackets do not split. Yields trimmed,
/// non-empty ranges into the value.
pub(crate) struct ListSplit<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> ListSplit<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        ListSplit { bytes, pos: 0 }
    }
}

impl Iterator for ListSplit<'_> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let b = self.bytes;
        while self.pos < b.len() {
            let start = self.pos;
            let mut i = start;
            let mut in_angle = false;
            while i < b.len() {
                match b[i] {
                    b'"' if !in_angle => i = quoted_end(b, i).unwrap_or(b.len()),
                    b'<' => {
                        in_angle = true;
                        i += 1
                    }
                    b'>' => {
                        in_angle = false;
                        i += 1
                    }
                    b',' if !in_angle => break,
                    _ => i += 1,
                }
            }
            self.pos = i + 1;
            let r = trim_range(b, start..i.min(b.len()));
            if !r.is_empty() {
                return Some(r);
            }
        }
        None
    }
}

/// One `;name[=value]` generic-param (RFC 3261 §25.1). `value` is raw: a
/// quoted-string keeps its quotes (see [`unquote`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param<'a> {
    /// The parameter name (compare case-insensitively).
    pub name: &'a str,
    /// The value, `None` for a flag parameter such as `lr` or an empty `rport`.
    pub value: Option<&'a str>,
}

/// A parameter and where it lies in the text it was read from.
#[derive(Debug, Clone)]
pub(crate) struct ParamSpan<'a> {
    pub(crate) param: Param<'a>,
    /// From the `;` to the end of the value (or name).
    pub(crate) span: Range<usize>,
    /// Byte just after the name: where `=value` goes for a flag.
    pub(crate) name_end: usize,
}

/// `gen-value = token / host / quoted-string`; host adds `:` `[` `]` for IPv6.
#[inline]
fn is_gen_value_byte(b: u8) -> bool {
    CLASSES[usize::from(b)] & 2 != 0
}

/// Reads the generic-param starting at `s[pos..]` (LWS, `;`, LWS, name, optionally
/// LWS `=` LWS value). `Ok(None)` when only LWS is left.
pub(crate) fn next_param(s: &str, pos: usize) -> Result<Option<(ParamSpan<'_>, usize)>, ParseError> {
    let b = s.as_bytes();
    let mut i = skip_lws(b, pos);
    if i >= b.len() {
        return Ok(None);
    }
    if b[i] != b';' {
        return Err(ParseError::Param);
    }
    let semi = i;
    i = skip_lws(b, i + 1);
    let name_start = i;
    while i < b.len() && is_token_byte(b[i]) {
        i += 1;
    }
    if i == name_start {
        return Err(ParseError::Param);
    }
    let name_end = i;
    let name = &s[name_start..name_end];
    let j = skip_lws(b, i);
    if j < b.len() && b[j] == b'=' {
        let v = skip_lws(b, j + 1);
        let end = if v < b.len() && b[v] == b'"' {
            quoted_end(b, v).ok_or(ParseError::Param)?
        } else {
            let mut e = v;
            while e < b.len() && is_gen_value_byte(b[e]) {
                e += 1;
            }
            e
        };
        if end == v {
            return Err(ParseError::Param);
        }
        let span = ParamSpan { param: Param { name, value: Some(&s[v..end]) }, span: semi..end, name_end };
        return Ok(Some((span, end)));
    }
    Ok(Some((ParamSpan { param: Param { name, value: None }, span: semi..name_end, name_end }, name_end)))
}

/// Checks that `s` is a sequence of generic-params.
pub(crate) fn validate_params(s: &str) -> Result<(), ParseError> {
    let mut pos = 0;
    while let Some((_, next)) = next_param(s, pos)? {
        pos = next;
    }
    Ok(())
}

/// Iterator over validated generic-params.
#[derive(Debug, Clone)]
pub struct Params<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Params<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Params { text, pos: 0 }
    }

    pub(crate) fn spans(self) -> impl Iterator<Item = ParamSpan<'a>> {
        let mut pos = self.pos;
        let text = self.text;
        std::iter::from_fn(move || match next_param(text, pos) {
            Ok(Some((p, next))) => {
                pos = next;
                Some(p)
            }
            _ => None,
        })
    }

    /// The first parameter named `name` (case-insensitive): `Some(None)` for a flag.
    pub fn get(&self, name: &str) -> Option<Option<&'a str>> {
        self.clone().find(|p| p.name.eq_ignore_ascii_case(name)).map(|p| p.value)
    }
}

impl<'a> Iterator for Params<'a> {
    type Item = Param<'a>;

    fn next(&mut self) -> Option<Param<'a>> {
        match next_param(self.text, self.pos) {
            Ok(Some((p, next))) => {
                self.pos = next;
                Some(p.param)
            }
            _ => None,
        }
    }
}

/// Host (RFC 3261 §25.1 `host = hostname / IPv4address / IPv6reference`),
/// checked by its character set: `[` hex, `:` and `.` `]`, or alphanumerics,
/// `-` and `.`. Returns the length of the host at the start of `b`.
pub(crate) fn scan_host(b: &[u8]) -> Result<usize, ParseError> {
    if b.first() == Some(&b'[') {
        let close = b.iter().position(|&c| c == b']').ok_or(ParseError::Host)?;
        let inner = &b[1..close];
        if inner.is_empty() || !inner.iter().all(|&c| c.is_ascii_hexdigit() || c == b':' || c == b'.') {
            return Err(ParseError::Host);
        }
        return Ok(close + 1);
    }
    let n = b.iter().take_while(|&&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.').count();
    if n == 0 {
        return Err(ParseError::Host);
    }
    Ok(n)
}

/// A decimal port, 0-65535 (1 to 5 digits).
pub(crate) fn parse_port(s: &[u8]) -> Result<u16, ParseError> {
    if s.is_empty() || s.len() > 5 || !s.iter().all(u8::is_ascii_digit) {
        return Err(ParseError::Port);
    }
    let n = s.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
    u16::try_from(n).map_err(|_| ParseError::Port)
}

/// A decimal number of at most `max_digits` digits.
pub(crate) fn parse_decimal(s: &[u8], max_digits: usize) -> Option<u64> {
    if s.is_empty() || s.len() > max_digits || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_classes_are_rfc_3261s_token_and_gen_value() {
        let token: Vec<u8> = (0..=255u8).filter(|&b| is_token_byte(b)).collect();
        let mut expected: Vec<u8> = (b'0'..=b'9').chain(b'A'..=b'Z').chain(b'a'..=b'z').collect();
        expected.extend_from_slice(b"-.!%*_+`'~");
        expected.sort_unstable();
        assert_eq!(token, expected);
        let value: Vec<u8> = (0..=255u8).filter(|&b| is_gen_value_byte(b)).collect();
        expected.extend_from_slice(b":[]");
        expected.sort_unstable();
        assert_eq!(value, expected);
    }
}
