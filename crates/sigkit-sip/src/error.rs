//! Typed errors: bad input is reported, never a panic.

use std::fmt;

/// Why a SIP message, or one of its header values, does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// No bytes (or only empty lines, RFC 3261 §7.5).
    Empty,
    /// The header section has no terminating empty line.
    Incomplete,
    /// The start line is neither a Request-Line nor a Status-Line (RFC 3261 §7.1, §7.2).
    StartLine,
    /// The SIP-Version is not `SIP/<digits>.<digits>` (RFC 3261 §7.1).
    Version,
    /// The Method is not a token (RFC 3261 §25.1).
    Method,
    /// The Status-Code is not three digits 100-699 (RFC 3261 §7.2).
    StatusCode,
    /// A header line at this byte offset has no colon or a name that is not a token (RFC 3261 §7.3).
    HeaderLine {
        /// Offset of the line in the input.
        offset: usize,
    },
    /// A folded continuation line before any header (RFC 3261 §7.3.1).
    Continuation {
        /// Offset of the line in the input.
        offset: usize,
    },
    /// The header section is longer than [`crate::MAX_HEADER_BYTES`].
    HeadersTooLarge,
    /// The message has more than [`crate::MAX_HEADERS`] header lines.
    TooManyHeaders,
    /// Content-Length is not a decimal number that fits in 32 bits (RFC 3261 §20.14).
    ContentLength,
    /// Two Content-Length headers with different values.
    ConflictingContentLength,
    /// Content-Length announces more body than the input holds (RFC 3261 §18.3).
    BodyTruncated {
        /// The Content-Length value.
        declared: usize,
        /// The bytes after the empty line.
        available: usize,
    },
    /// A stream-transport message without Content-Length (RFC 3261 §18.3: mandatory over TCP).
    MissingContentLength,
    /// A header value is not UTF-8 where the grammar needs text.
    Utf8,
    /// A header a typed view needs is absent.
    MissingHeader(&'static str),
    /// A URI is not `sip:` or `sips:` (e.g. `tel:`): only SIP URIs have a typed view.
    UnsupportedScheme,
    /// A SIP URI does not follow RFC 3261 §19.1.1 / §25.1.
    Uri,
    /// A host is neither a hostname, an IPv4 address nor an IPv6 reference (RFC 3261 §25.1).
    Host,
    /// A port is not a number from 0 to 65535.
    Port,
    /// A Via value does not follow RFC 3261 §20.42.
    Via,
    /// A name-addr or addr-spec does not follow RFC 3261 §20.10 (bad quoting, missing `>`).
    NameAddr,
    /// A header parameter (`;name[=value]`) is malformed.
    Param,
    /// A CSeq value is not `number method` with number < 2**31 (RFC 3261 §20.16).
    CSeq,
    /// A Call-ID is empty or holds white space (RFC 3261 §20.8, `callid = word [ "@" word ]`).
    CallId,
    /// A numeric header value (Max-Forwards, Expires, Retry-After) is not a number.
    Number,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => f.write_str("empty message"),
            ParseError::Incomplete => f.write_str("header section not terminated by an empty line"),
            ParseError::StartLine => f.write_str("invalid start line"),
            ParseError::Version => f.write_str("invalid SIP version"),
            ParseError::Method => f.write_str("invalid method"),
            ParseError::StatusCode => f.write_str("invalid status code"),
            ParseError::HeaderLine { offset } => write!(f, "invalid header line at byte {offset}"),
            ParseError::Continuation { offset } => write!(f, "continuation line without header at byte {offset}"),
            ParseError::HeadersTooLarge => f.write_str("header section too large"),
            ParseError::TooManyHeaders => f.write_str("too many header lines"),
            ParseError::ContentLength => f.write_str("invalid Content-Length"),
            ParseError::ConflictingContentLength => f.write_str("conflicting Content-Length headers"),
            ParseError::BodyTruncated { declared, available } => {
                write!(f, "Content-Length {declared} but only {available} body bytes")
            }
            ParseError::MissingContentLength => f.write_str("no Content-Length on a stream transport"),
            ParseError::Utf8 => f.write_str("header value is not UTF-8"),
            ParseError::MissingHeader(name) => write!(f, "missing {name} header"),
            ParseError::UnsupportedScheme => f.write_str("not a sip: or sips: URI"),
            ParseError::Uri => f.write_str("invalid SIP URI"),
            ParseError::Host => f.write_str("invalid host"),
            ParseError::Port => f.write_str("invalid port"),
            ParseError::Via => f.write_str("invalid Via"),
            ParseError::NameAddr => f.write_str("invalid name-addr"),
            ParseError::Param => f.write_str("invalid parameter"),
            ParseError::CSeq => f.write_str("invalid CSeq"),
            ParseError::CallId => f.write_str("invalid Call-ID"),
            ParseError::Number => f.write_str("invalid number"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Why an [`crate::Editor`] operation cannot be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditError {
    /// Max-Forwards is 0: the proxy answers 483 Too Many Hops (RFC 3261 §16.3 item 2).
    TooManyHops,
    /// The message has no Via to edit.
    NoVia,
    /// The message is not a request (Request-URI, Max-Forwards and Route edits need one).
    NotRequest,
    /// Two edits touch the same bytes.
    Overlap,
    /// The header value the edit needs does not parse.
    Parse(ParseError),
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::TooManyHops => f.write_str("Max-Forwards is 0 (483 Too Many Hops)"),
            EditError::NoVia => f.write_str("no Via header"),
            EditError::NotRequest => f.write_str("not a request"),
            EditError::Overlap => f.write_str("edits overlap"),
            EditError::Parse(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for EditError {}

impl From<ParseError> for EditError {
    fn from(e: ParseError) -> Self {
        EditError::Parse(e)
    }
}
