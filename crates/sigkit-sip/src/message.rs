//! The SIP message wire format (RFC 3261 §7): start line, header lines kept in
//! order as slices of the input, body, and stream framing (§18.3).

use crate::name_addr::{parse_delta_seconds, CSeq, Contacts, NameAddr};
use crate::syntax::{is_lws, is_token, parse_decimal, trim_range, ListSplit};
use crate::uri::Uri;
use crate::via::Via;
use crate::ParseError;
use std::ops::Range;

/// Longest header section (start line to empty line) accepted, in bytes: a
/// bound for stream framing, so a peer cannot make the proxy buffer forever.
pub const MAX_HEADER_BYTES: usize = 65_536;

/// Most header lines accepted in one message.
pub const MAX_HEADERS: usize = 512;

/// Header names the typed views know, with their compact forms (RFC 3261 §7.3.3;
/// `o` Event RFC 3265, `r` Refer-To RFC 3515, `a` Accept-Contact RFC 3841,
/// `u` Allow-Events RFC 3265, `x` Session-Expires RFC 4028).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeaderName {
    /// `Via`, `v`
    Via,
    /// `Call-ID`, `i`
    CallId,
    /// `Contact`, `m`
    Contact,
    /// `Content-Length`, `l`
    ContentLength,
    /// `Content-Type`, `c`
    ContentType,
    /// `Content-Encoding`, `e`
    ContentEncoding,
    /// `From`, `f`
    From,
    /// `To`, `t`
    To,
    /// `Subject`, `s`
    Subject,
    /// `Supported`, `k`
    Supported,
    /// `CSeq`
    CSeq,
    /// `Max-Forwards`
    MaxForwards,
    /// `Route`
    Route,
    /// `Record-Route`
    RecordRoute,
    /// `Path` (RFC 3327)
    Path,
    /// `Service-Route` (RFC 3608)
    ServiceRoute,
    /// `Expires`
    Expires,
    /// `Require`
    Require,
    /// `Proxy-Require`
    ProxyRequire,
    /// `Retry-After`
    RetryAfter,
    /// `Timestamp`
    Timestamp,
    /// `Event`, `o`
    Event,
    /// `Refer-To`, `r`
    ReferTo,
    /// `Accept-Contact`, `a`
    AcceptContact,
    /// `Allow-Events`, `u`
    AllowEvents,
    /// `Session-Expires`, `x`
    SessionExpires,
    /// Any other header.
    Other,
}

const NAMES: &[(HeaderName, &str, Option<u8>)] = &[
    (HeaderName::Via, "Via", Some(b'v')),
    (HeaderName::CallId, "Call-ID", Some(b'i')),
    (HeaderName::Contact, "Contact", Some(b'm')),
    (HeaderName::ContentLength, "Content-Length", Some(b'l')),
    (HeaderName::ContentType, "Content-Type", Some(b'c')),
    (HeaderName::ContentEncoding, "Content-Encoding", Some(b'e')),
    (HeaderName::From, "From", Some(b'f')),
    (HeaderName::To, "To", Some(b't')),
    (HeaderName::Subject, "Subject", Some(b's')),
    (HeaderName::Supported, "Supported", Some(b'k')),
    (HeaderName::CSeq, "CSeq", None),
    (HeaderName::MaxForwards, "Max-Forwards", None),
    (HeaderName::Route, "Route", None),
    (HeaderName::RecordRoute, "Record-Route", None),
    (HeaderName::Path, "Path", None),
    (HeaderName::ServiceRoute, "Service-Route", None),
    (HeaderName::Expires, "Expires", None),
    (HeaderName::Require, "Require", None),
    (HeaderName::ProxyRequire, "Proxy-Require", None),
    (HeaderName::RetryAfter, "Retry-After", None),
    (HeaderName::Timestamp, "Timestamp", None),
    (HeaderName::Event, "Event", Some(b'o')),
    (HeaderName::ReferTo, "Refer-To", Some(b'r')),
    (HeaderName::AcceptContact, "Accept-Contact", Some(b'a')),
    (HeaderName::AllowEvents, "Allow-Events", Some(b'u')),
    (HeaderName::SessionExpires, "Session-Expires", Some(b'x')),
];

impl HeaderName {
    /// The header a name denotes, case-insensitively, compact forms included.
    pub fn from_name(name: &[u8]) -> HeaderName {
        if name.len() == 1 {
            let c = name[0].to_ascii_lowercase();
            return NAMES.iter().find(|(_, _, compact)| *compact == Some(c)).map_or(HeaderName::Other, |n| n.0);
        }
        NAMES
            .iter()
            .find(|(_, full, _)| full.len() == name.len() && full.as_bytes().eq_ignore_ascii_case(name))
            .map_or(HeaderName::Other, |n| n.0)
    }

    /// The full name as RFC 3261 spells it (`""` for [`HeaderName::Other`]).
    pub fn as_str(self) -> &'static str {
        NAMES.iter().find(|n| n.0 == self).map_or("", |n| n.1)
    }
}

/// The first line of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartLine<'a> {
    /// `Method SP Request-URI SP SIP-Version` (RFC 3261 §7.1).
    Request {
        /// The method token (case-sensitive, §7.1).
        method: &'a str,
        /// The Request-URI text (any scheme; see [`Message::request_uri`]).
        uri: &'a str,
        /// `SIP/2.0`
        version: &'a str,
    },
    /// `SIP-Version SP Status-Code SP Reason-Phrase` (RFC 3261 §7.2).
    Response {
        /// `SIP/2.0`
        version: &'a str,
        /// 100-699.
        code: u16,
        /// The reason phrase (may be empty).
        reason: &'a str,
    },
}

/// One header line (with its folded continuation lines, RFC 3261 §7.3.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header<'a> {
    /// The name as written (`Via`, `v`, `CSEQ`).
    pub name: &'a str,
    /// The name's meaning.
    pub kind: HeaderName,
    /// The value without leading and trailing white space; folds stay inside.
    pub value: &'a [u8],
    /// Where the value lies in the input.
    pub value_range: Range<usize>,
    /// The whole line, from the name to its line end included.
    pub line: Range<usize>,
}

impl<'a> Header<'a> {
    /// The value as text.
    pub fn value_str(&self) -> Result<&'a str, ParseError> {
        std::str::from_utf8(self.value).map_err(|_| ParseError::Utf8)
    }
}

/// One element of a comma-separated header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListValue<'a> {
    /// The element, trimmed.
    pub value: &'a [u8],
    /// Where the element lies in the input.
    pub range: Range<usize>,
    /// Index of its header line in [`Message::headers`].
    pub header: usize,
    /// Position of the element within its header line (0 for the first).
    pub index: usize,
}

impl<'a> ListValue<'a> {
    /// The element as text.
    pub fn value_str(&self) -> Result<&'a str, ParseError> {
        std::str::from_utf8(self.value).map_err(|_| ParseError::Utf8)
    }
}

/// A parsed SIP message borrowing the input bytes.
#[derive(Debug, Clone)]
pub struct Message<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) start: usize,
    pub(crate) start_line: StartLine<'a>,
    pub(crate) start_line_range: Range<usize>,
    pub(crate) headers: Vec<Header<'a>>,
    /// Offset of the empty line that ends the headers.
    pub(crate) headers_end: usize,
    pub(crate) body: Range<usize>,
    pub(crate) content_length: Option<usize>,
}

/// The line starting at `pos`: (end of its content, start of the next line).
/// Lines end in CRLF; a bare LF is accepted too.
fn line_at(b: &[u8], pos: usize) -> Option<(usize, usize)> {
    let nl = b[pos..].iter().position(|&c| c == b'\n')? + pos;
    let end = if nl > pos && b[nl - 1] == b'\r' { nl - 1 } else { nl };
    Some((end, nl + 1))
}

/// Skips the empty lines a message may be preceded by (RFC 3261 §7.5).
fn skip_empty_lines(b: &[u8]) -> usize {
    let mut pos = 0;
    loop {
        if b[pos..].starts_with(b"\r\n") {
            pos += 2;
        } else if b[pos..].starts_with(b"\n") {
            pos += 1;
        } else {
            return pos;
        }
    }
}

/// `SIP/1*DIGIT.1*DIGIT`, the literal case-insensitive (RFC 3261 §7.1, §25.1).
fn is_version(v: &[u8]) -> bool {
    if v.len() < 7 || !v[..4].eq_ignore_ascii_case(b"SIP/") {
        return false;
    }
    let rest = &v[4..];
    match rest.iter().position(|&c| c == b'.') {
        Some(dot) => {
            dot > 0
                && dot + 1 < rest.len()
                && rest[..dot].iter().all(u8::is_ascii_digit)
                && rest[dot + 1..].iter().all(u8::is_ascii_digit)
        }
        None => false,
    }
}

fn as_str(b: &[u8]) -> Result<&str, ParseError> {
    std::str::from_utf8(b).map_err(|_| ParseError::Utf8)
}

fn parse_start_line(line: &[u8]) -> Result<StartLine<'_>, ParseError> {
    if line.len() >= 4 && line[..4].eq_ignore_ascii_case(b"SIP/") {
        let sp = line.iter().position(|&c| c == b' ').ok_or(ParseError::StartLine)?;
        let version = &line[..sp];
        if !is_version(version) {
            return Err(ParseError::Version);
        }
        let rest = &line[sp + 1..];
        let code = rest.get(..3).ok_or(ParseError::StatusCode)?;
        let code = parse_decimal(code, 3).filter(|c| (100..700).contains(c)).ok_or(ParseError::StatusCode)? as u16;
        let reason = match rest.get(3) {
            None => &rest[3..],
            Some(b' ') => &rest[4..],
            Some(_) => return Err(ParseError::StatusCode),
        };
        if reason.iter().any(|&c| c < 0x20 && c != b'\t') {
            return Err(ParseError::StartLine);
        }
        return Ok(StartLine::Response {
            version: as_str(version)?,
            code,
            reason: as_str(reason).map_err(|_| ParseError::StartLine)?,
        });
    }
    let mut parts = line.split(|&c| c == b' ');
    let (Some(method), Some(uri), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ParseError::StartLine);
    };
    if !is_token(method) {
        return Err(ParseError::Method);
    }
    // No `<`, `>` or `"`: a Request-URI is never enclosed (RFC 3261 §7.1, RFC 4475 §3.1.2.5).
    let uri_byte = |c: &u8| c.is_ascii_graphic() && !matches!(c, b'<' | b'>' | b'"');
    if uri.is_empty() || !uri.iter().all(uri_byte) || !uri.contains(&b':') {
        return Err(ParseError::StartLine);
    }
    if !is_version(version) {
        return Err(ParseError::Version);
    }
    Ok(StartLine::Request { method: as_str(method)?, uri: as_str(uri)?, version: as_str(version)? })
}

fn parse_content_length(value: &[u8]) -> Result<usize, ParseError> {
    parse_decimal(value, 10).filter(|&n| n <= u64::from(u32::MAX)).map(|n| n as usize).ok_or(ParseError::ContentLength)
}

impl<'a> Message<'a> {
    /// Parses one message (a UDP datagram, or one frame cut by
    /// [`Message::parse_stream_frame`]). Leading empty lines are skipped (RFC 3261 §7.5).
    ///
    /// The body is the `Content-Length` bytes after the empty line; bytes beyond it
    /// (allowed over UDP, RFC 3261 §18.3: "discarded") are in [`Message::trailing`].
    /// Without `Content-Length` the body runs to the end of the input (§18.3, UDP).
    /// A `Content-Length` larger than the bytes present gives
    /// [`ParseError::BodyTruncated`] (§18.3: a UDP message that short is discarded);
    /// [`Message::parse_headers`] accepts such a message when the caller chooses to.
    pub fn parse(bytes: &'a [u8]) -> Result<Message<'a>, ParseError> {
        let msg = Self::parse_headers(bytes)?;
        if let Some(declared) = msg.content_length {
            let available = bytes.len() - msg.body.start;
            if declared > available {
                return Err(ParseError::BodyTruncated { declared, available });
            }
        }
        Ok(msg)
    }

    /// As [`Message::parse`], but a `Content-Length` beyond the input is accepted:
    /// the body is then everything after the empty line and
    /// [`Message::content_length`] still reports the declared value.
    pub fn parse_headers(bytes: &'a [u8]) -> Result<Message<'a>, ParseError> {
        let start = skip_empty_lines(bytes);
        if start == bytes.len() {
            return Err(ParseError::Empty);
        }
        let (sl_end, mut pos) = line_at(bytes, start).ok_or(ParseError::Incomplete)?;
        let start_line = parse_start_line(&bytes[start..sl_end])?;
        let mut headers: Vec<Header<'a>> = Vec::with_capacity(24);
        let mut content_length = None;
        let headers_end = loop {
            if pos - start > MAX_HEADER_BYTES {
                return Err(ParseError::HeadersTooLarge);
            }
            let (end, next) = line_at(bytes, pos).ok_or(ParseError::Incomplete)?;
            if end == pos {
                break pos;
            }
            if bytes[pos] == b' ' || bytes[pos] == b'\t' {
                // A folded continuation of the previous header (RFC 3261 §7.3.1).
                let last = headers.last_mut().ok_or(ParseError::Continuation { offset: pos })?;
                let value_end = trim_range(bytes, last.value_range.start..end).end;
                if value_end > last.value_range.end {
                    last.value_range.end = value_end;
                    last.value = &bytes[last.value_range.clone()];
                }
                last.line.end = next;
                if last.kind == HeaderName::ContentLength {
                    return Err(ParseError::ContentLength);
                }
            } else {
                let colon =
                    bytes[pos..end].iter().position(|&c| c == b':').ok_or(ParseError::HeaderLine { offset: pos })?;
                // HCOLON = *( SP / HTAB ) ":" SWS (RFC 3261 §25.1).
                let mut name_end = pos + colon;
                while name_end > pos && matches!(bytes[name_end - 1], b' ' | b'\t') {
                    name_end -= 1;
                }
                let name = &bytes[pos..name_end];
                if !is_token(name) {
                    return Err(ParseError::HeaderLine { offset: pos });
                }
                if headers.len() == MAX_HEADERS {
                    return Err(ParseError::TooManyHeaders);
                }
                let value_range = trim_range(bytes, pos + colon + 1..end);
                let kind = HeaderName::from_name(name);
                if kind == HeaderName::ContentLength {
                    let n = parse_content_length(&bytes[value_range.clone()])?;
                    if content_length.is_some_and(|c| c != n) {
                        return Err(ParseError::ConflictingContentLength);
                    }
                    content_length = Some(n);
                }
                headers.push(Header {
                    name: as_str(name)?,
                    kind,
                    value: &bytes[value_range.clone()],
                    value_range,
                    line: pos..next,
                });
            }
            pos = next;
        };
        let (_, body_start) = line_at(bytes, headers_end).ok_or(ParseError::Incomplete)?;
        let body_end = match content_length {
            Some(n) => body_start.saturating_add(n).min(bytes.len()),
            None => bytes.len(),
        };
        Ok(Message {
            bytes,
            start,
            start_line,
            start_line_range: start..sl_end,
            headers,
            headers_end,
            body: body_start..body_end,
            content_length,
        })
    }

    /// For SIP over a stream transport (RFC 3261 §18.3): how many bytes at the
    /// start of `buf` make one complete message (leading empty lines included),
    /// from the header section and its `Content-Length`; `Ok(None)` while more
    /// bytes are needed. A header section over [`MAX_HEADER_BYTES`] and a
    /// message without `Content-Length` are errors (the connection is unusable).
    /// Empty lines before a message (RFC 3261 §7.5, and the CRLF keep-alives of
    /// RFC 5626 §3.5.1) count towards the next frame; a buffer holding only
    /// empty lines gives `Ok(None)`, so a caller that wants to answer
    /// keep-alives strips them first.
    pub fn parse_stream_frame(buf: &[u8]) -> Result<Option<usize>, ParseError> {
        let start = skip_empty_lines(buf);
        let mut pos = start;
        let mut content_length = None;
        let mut first = true;
        loop {
            if pos - start > MAX_HEADER_BYTES {
                return Err(ParseError::HeadersTooLarge);
            }
            let Some((end, next)) = line_at(buf, pos) else {
                return if buf.len() - start > MAX_HEADER_BYTES { Err(ParseError::HeadersTooLarge) } else { Ok(None) };
            };
            if end == pos && !first {
                let n = content_length.ok_or(ParseError::MissingContentLength)?;
                let total = next.checked_add(n).ok_or(ParseError::ContentLength)?;
                return Ok((total <= buf.len()).then_some(total));
            }
            if !first && !matches!(buf[pos], b' ' | b'\t') {
                if let Some(colon) = buf[pos..end].iter().position(|&c| c == b':') {
                    let name = trim_range(buf, pos..pos + colon);
                    if HeaderName::from_name(&buf[name]) == HeaderName::ContentLength {
                        let n = parse_content_length(&buf[trim_range(buf, pos + colon + 1..end)])?;
                        if content_length.is_some_and(|c| c != n) {
                            return Err(ParseError::ConflictingContentLength);
                        }
                        content_length = Some(n);
                    }
                }
            }
            first = false;
            pos = next;
        }
    }

    /// The input bytes this message was parsed from.
    pub fn input(&self) -> &'a [u8] {
        self.bytes
    }

    /// The message's bytes: start line to the end of the body (without leading
    /// empty lines and trailing bytes).
    pub fn as_bytes(&self) -> &'a [u8] {
        &self.bytes[self.start..self.body.end]
    }

    /// The start line.
    pub fn start_line(&self) -> &StartLine<'a> {
        &self.start_line
    }

    /// Whether this is a request.
    pub fn is_request(&self) -> bool {
        matches!(self.start_line, StartLine::Request { .. })
    }

    /// The request method (`None` for a response; see [`Message::cseq`] for a response's).
    pub fn method(&self) -> Option<&'a str> {
        match self.start_line {
            StartLine::Request { method, .. } => Some(method),
            StartLine::Response { .. } => None,
        }
    }

    /// The response status code (`None` for a request).
    pub fn status_code(&self) -> Option<u16> {
        match self.start_line {
            StartLine::Response { code, .. } => Some(code),
            StartLine::Request { .. } => None,
        }
    }

    /// The Request-URI text (`None` for a response).
    pub fn request_uri_text(&self) -> Option<&'a str> {
        match self.start_line {
            StartLine::Request { uri, .. } => Some(uri),
            StartLine::Response { .. } => None,
        }
    }

    /// The Request-URI's typed view ([`ParseError::UnsupportedScheme`] for `tel:` and others).
    pub fn request_uri(&self) -> Result<Uri<'a>, ParseError> {
        Uri::parse(self.request_uri_text().ok_or(ParseError::StartLine)?)
    }

    /// The header lines in order.
    pub fn headers(&self) -> &[Header<'a>] {
        &self.headers
    }

    /// The first header line of a kind.
    pub fn header(&self, kind: HeaderName) -> Option<&Header<'a>> {
        self.headers.iter().find(|h| h.kind == kind)
    }

    /// The header lines with a name (case-insensitive, compact forms included:
    /// `"v"` finds `Via` lines and `"Via"` finds `v` lines).
    pub fn headers_named<'m>(&'m self, name: &'m str) -> impl Iterator<Item = &'m Header<'a>> + 'm {
        let kind = HeaderName::from_name(name.as_bytes());
        self.headers.iter().filter(move |h| {
            if kind == HeaderName::Other {
                h.kind == HeaderName::Other && h.name.eq_ignore_ascii_case(name)
            } else {
                h.kind == kind
            }
        })
    }

    /// The elements of every header line of a kind, split on commas outside
    /// quotes and angle brackets (RFC 3261 §7.3.1), in order. Only for headers
    /// whose grammar is a comma-separated list (Via, Route, Contact, Supported...).
    pub fn values(&self, kind: HeaderName) -> impl Iterator<Item = ListValue<'a>> + '_ {
        let bytes = self.bytes;
        self.headers.iter().enumerate().filter(move |(_, h)| h.kind == kind).flat_map(move |(hi, h)| {
            let base = h.value_range.start;
            ListSplit::new(h.value).enumerate().map(move |(index, r)| ListValue {
                value: &bytes[base + r.start..base + r.end],
                range: base + r.start..base + r.end,
                header: hi,
                index,
            })
        })
    }

    fn single(&self, kind: HeaderName, name: &'static str) -> Result<&'a str, ParseError> {
        self.header(kind).ok_or(ParseError::MissingHeader(name))?.value_str()
    }

    /// Every Via value, top first.
    pub fn vias(&self) -> impl Iterator<Item = Result<Via<'a>, ParseError>> + '_ {
        self.values(HeaderName::Via).map(|v| Via::parse(v.value_str()?))
    }

    /// The top Via (RFC 3261 §8.2.6.2, §16.7 item 3, §18.2.1).
    pub fn top_via(&self) -> Result<Via<'a>, ParseError> {
        self.vias().next().ok_or(ParseError::MissingHeader("Via"))?
    }

    /// Call-ID (RFC 3261 §20.8).
    pub fn call_id(&self) -> Result<&'a str, ParseError> {
        let v = self.single(HeaderName::CallId, "Call-ID")?;
        if v.is_empty() || v.bytes().any(is_lws) {
            return Err(ParseError::CallId);
        }
        Ok(v)
    }

    /// CSeq (RFC 3261 §20.16).
    pub fn cseq(&self) -> Result<CSeq<'a>, ParseError> {
        CSeq::parse(self.single(HeaderName::CSeq, "CSeq")?)
    }

    /// From (RFC 3261 §20.20).
    pub fn from(&self) -> Result<NameAddr<'a>, ParseError> {
        NameAddr::parse(self.single(HeaderName::From, "From")?)
    }

    /// To (RFC 3261 §20.39).
    pub fn to(&self) -> Result<NameAddr<'a>, ParseError> {
        NameAddr::parse(self.single(HeaderName::To, "To")?)
    }

    /// The declared Content-Length (`None` if absent).
    pub fn content_length(&self) -> Option<usize> {
        self.content_length
    }

    /// Max-Forwards (RFC 3261 §20.22), `None` if absent.
    pub fn max_forwards(&self) -> Result<Option<u32>, ParseError> {
        let Some(h) = self.header(HeaderName::MaxForwards) else { return Ok(None) };
        let n = parse_decimal(h.value, 10).and_then(|n| u32::try_from(n).ok()).ok_or(ParseError::Number)?;
        Ok(Some(n))
    }

    /// Expires (RFC 3261 §20.19), `None` if absent; large values saturate at 2**32-1.
    pub fn expires(&self) -> Result<Option<u32>, ParseError> {
        let Some(h) = self.header(HeaderName::Expires) else { return Ok(None) };
        parse_delta_seconds(h.value).map(Some).ok_or(ParseError::Number)
    }

    /// The name-addr values of every header line of a kind, in order.
    pub fn name_addrs(&self, kind: HeaderName) -> impl Iterator<Item = Result<NameAddr<'a>, ParseError>> + '_ {
        self.values(kind).map(|v| NameAddr::parse(v.value_str()?))
    }

    /// Route values in order (RFC 3261 §20.34).
    pub fn routes(&self) -> Result<Vec<NameAddr<'a>>, ParseError> {
        self.name_addrs(HeaderName::Route).collect()
    }

    /// Record-Route values in order (RFC 3261 §20.30).
    pub fn record_routes(&self) -> Result<Vec<NameAddr<'a>>, ParseError> {
        self.name_addrs(HeaderName::RecordRoute).collect()
    }

    /// Path values in order (RFC 3327 §4).
    pub fn paths(&self) -> Result<Vec<NameAddr<'a>>, ParseError> {
        self.name_addrs(HeaderName::Path).collect()
    }

    /// Contact values (RFC 3261 §20.10): `*` or a list.
    pub fn contacts(&self) -> Result<Contacts<'a>, ParseError> {
        let mut values = self.values(HeaderName::Contact).peekable();
        if let Some(first) = values.peek() {
            if first.value == b"*" {
                values.next();
                return if values.next().is_none() { Ok(Contacts::Star) } else { Err(ParseError::NameAddr) };
            }
        }
        values.map(|v| NameAddr::parse(v.value_str()?)).collect::<Result<_, _>>().map(Contacts::List)
    }

    /// The body (Content-Length bytes after the empty line, or up to the end of input).
    pub fn body(&self) -> &'a [u8] {
        &self.bytes[self.body.clone()]
    }

    /// Bytes after the body (a UDP datagram longer than its Content-Length, RFC 3261 §18.3).
    pub fn trailing(&self) -> &'a [u8] {
        &self.bytes[self.body.end..]
    }
}
