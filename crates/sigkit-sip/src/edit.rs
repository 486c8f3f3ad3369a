//! Rewriting a parsed message for forwarding (RFC 3261 §16.6, §16.7, §18.2.1;
//! RFC 3581 §4; RFC 3327 §5.2) without reparsing: edits are recorded as byte
//! ranges of the input and their replacement text, and [`Editor::emit`] copies
//! every unchanged stretch of the input in one piece.

use crate::message::{HeaderName, Message, StartLine};
use crate::name_addr::NameAddr;
use crate::syntax::{parse_decimal, Params};
use crate::via::Via;
use crate::EditError;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;

#[derive(Debug, Clone)]
struct Edit {
    /// Input bytes replaced (empty for an insertion).
    range: Range<usize>,
    /// Replacement text, a range of `Editor::text`.
    text: Range<usize>,
}

/// A set of edits over one parsed message. Insertions at the same point are
/// emitted in call order; edits that touch the same bytes are refused
/// ([`EditError::Overlap`]).
#[derive(Debug, Clone)]
pub struct Editor<'m, 'a> {
    msg: &'m Message<'a>,
    edits: Vec<Edit>,
    text: String,
}

impl<'m, 'a> Editor<'m, 'a> {
    /// An editor with no edits: [`Editor::emit`] gives the message as parsed
    /// (plus a Content-Length if it had none).
    pub fn new(msg: &'m Message<'a>) -> Self {
        Editor { msg, edits: Vec::with_capacity(8), text: String::with_capacity(256) }
    }

    /// The message being edited.
    pub fn message(&self) -> &'m Message<'a> {
        self.msg
    }

    fn push(&mut self, range: Range<usize>, write: impl FnOnce(&mut String)) -> Result<(), EditError> {
        let inside = |p: usize, r: &Range<usize>| r.start < p && p < r.end;
        for e in &self.edits {
            let overlap = if range.is_empty() {
                inside(range.start, &e.range)
            } else if e.range.is_empty() {
                inside(e.range.start, &range)
            } else {
                range.start < e.range.end && e.range.start < range.end
            };
            if overlap {
                return Err(EditError::Overlap);
            }
        }
        let start = self.text.len();
        write(&mut self.text);
        self.edits.push(Edit { range, text: start..self.text.len() });
        Ok(())
    }

    /// Inserts a header line `name: value` before the first line of `before`,
    /// or at the end of the headers if there is none.
    fn insert_header_before(&mut self, before: HeaderName, name: &str, value: &str) -> Result<(), EditError> {
        let at = self.msg.header(before).map_or(self.msg.headers_end, |h| h.line.start);
        self.push(at..at, |t| {
            let _ = write!(t, "{name}: {value}\r\n");
        })
    }

    /// Adds a header line at the end of the header section.
    pub fn append_header(&mut self, name: &str, value: &str) -> Result<(), EditError> {
        let at = self.msg.headers_end;
        self.push(at..at, |t| {
            let _ = write!(t, "{name}: {value}\r\n");
        })
    }

    /// Removes the header line at `index` of [`Message::headers`] (folded lines included).
    pub fn remove_header(&mut self, index: usize) -> Result<(), EditError> {
        let line =
            self.msg.headers.get(index).ok_or(EditError::Parse(crate::ParseError::MissingHeader("")))?.line.clone();
        self.push(line, |_| {})
    }

    /// Removes the first element of a comma-separated header: the whole line if
    /// it is the line's only element, else the element and its comma.
    fn remove_first_value(&mut self, kind: HeaderName) -> Option<Result<(), EditError>> {
        let mut values = self.msg.values(kind);
        let first = values.next()?;
        let range = match values.next() {
            Some(second) if second.header == first.header => first.range.start..second.range.start,
            _ => self.msg.headers[first.header].line.clone(),
        };
        Some(self.push(range, |_| {}))
    }

    /// Puts `via` (a via-parm such as `SIP/2.0/UDP p.example.net;branch=z9hG4bK...;comp=sigcomp`,
    /// see [`crate::proxy::format_via`]) above the existing Vias (RFC 3261 §16.6 item 8).
    pub fn prepend_via(&mut self, via: &str) -> Result<(), EditError> {
        let at = self.msg.header(HeaderName::Via).map_or(self.msg.headers_end, |h| h.line.start);
        self.push(at..at, |t| {
            t.push_str("Via: ");
            t.push_str(via);
            t.push_str("\r\n");
        })
    }

    /// Removes the top Via (a proxy forwarding a response, RFC 3261 §16.7 item 3) and returns it.
    pub fn remove_top_via(&mut self) -> Result<Via<'a>, EditError> {
        let via = self.msg.top_via().map_err(|_| EditError::NoVia)?;
        self.remove_first_value(HeaderName::Via).ok_or(EditError::NoVia)??;
        Ok(via)
    }

    /// Records the packet's source in the top Via of a received request:
    /// `received` when the sent-by host differs from the source address (or is a
    /// name), RFC 3261 §18.2.1; and when the Via has `rport`, its value set to the
    /// source port and `received` added in every case, RFC 3581 §4. Existing
    /// `received` / `rport` values are replaced.
    pub fn fill_top_via(&mut self, source: SocketAddr) -> Result<(), EditError> {
        let first = self.msg.values(HeaderName::Via).next().ok_or(EditError::NoVia)?;
        let via = Via::parse(first.value_str()?)?;
        let params_at = first.range.start + via.params_offset;
        let via_end = first.range.end;
        let has_rport = via.rport().is_some();
        let host_is_source = via.host_addr().parse::<IpAddr>().is_ok_and(|ip| ip == source.ip());
        let mut received = None;
        let mut rport = None;
        for p in Params::new(via.params).spans() {
            if p.param.name.eq_ignore_ascii_case("received") && received.is_none() {
                received = Some(p);
            } else if p.param.name.eq_ignore_ascii_case("rport") && rport.is_none() {
                rport = Some(p);
            }
        }
        if let Some(p) = rport {
            // `rport` or `rport=N` -> `rport=<source port>`.
            let range = params_at + p.name_end..params_at + p.span.end;
            self.push(range, |t| {
                let _ = write!(t, "={}", source.port());
            })?;
        }
        if has_rport || !host_is_source {
            let ip = source.ip();
            match received {
                Some(p) => {
                    let range = params_at + p.span.start..params_at + p.span.end;
                    self.push(range, |t| {
                        let _ = write!(t, ";received={ip}");
                    })?;
                }
                None => self.push(via_end..via_end, |t| {
                    let _ = write!(t, ";received={ip}");
                })?,
            }
        }
        Ok(())
    }

    /// Puts a Record-Route value above the existing ones (RFC 3261 §16.6 item 4).
    /// `uri` is the proxy's URI, with `lr` and, towards a SigComp peer,
    /// `comp=sigcomp` (RFC 3486 §4; see [`crate::proxy::route_uri`]).
    pub fn prepend_record_route(&mut self, uri: &str) -> Result<(), EditError> {
        self.insert_header_before(HeaderName::RecordRoute, "Record-Route", &format!("<{uri}>"))
    }

    /// Puts a Path value above the existing ones (RFC 3327 §5.2, a REGISTER
    /// passing through the P-CSCF).
    pub fn prepend_path(&mut self, uri: &str) -> Result<(), EditError> {
        self.insert_header_before(HeaderName::Path, "Path", &format!("<{uri}>"))
    }

    /// Loose routing (RFC 3261 §16.4): removes the first Route value if
    /// `names_us` says its URI is this proxy's, and returns whether it did.
    /// Strict-router handling (§16.4 first paragraph, §16.6 item 6: a Request-URI
    /// naming this proxy replaced by the last Route value) is left to the caller,
    /// with [`Editor::set_request_uri`] and [`Editor::remove_header`].
    pub fn remove_first_route_if(&mut self, names_us: impl FnOnce(&NameAddr<'a>) -> bool) -> Result<bool, EditError> {
        if !self.msg.is_request() {
            return Err(EditError::NotRequest);
        }
        let Some(first) = self.msg.name_addrs(HeaderName::Route).next() else { return Ok(false) };
        if !names_us(&first?) {
            return Ok(false);
        }
        self.remove_first_value(HeaderName::Route).unwrap_or(Ok(()))?;
        Ok(true)
    }

    /// Loose routing through a proxy that owns several consecutive Route
    /// entries (one per side, RFC 3261 §16.4 with double record-routing):
    /// removes the leading Route values that `names_us` claims, across
    /// header lines, and returns how many.
    pub fn remove_leading_routes_if(
        &mut self,
        mut names_us: impl FnMut(&NameAddr<'a>) -> bool,
    ) -> Result<usize, EditError> {
        if !self.msg.is_request() {
            return Err(EditError::NotRequest);
        }
        let values: Vec<_> = self.msg.values(HeaderName::Route).collect();
        let mut n = 0;
        for v in &values {
            if !names_us(&NameAddr::parse(v.value_str()?)?) {
                break;
            }
            n += 1;
        }
        let mut i = 0;
        while i < n {
            let line = values[i].header;
            let in_line: Vec<_> = values.iter().filter(|v| v.header == line).collect();
            let removed = values[..n].iter().filter(|v| v.header == line).count();
            let range = match in_line.get(removed) {
                // The line keeps its later values: remove up to the first kept one.
                Some(kept) => in_line[0].range.start..kept.range.start,
                None => self.msg.headers[line].line.clone(),
            };
            self.push(range, |_| {})?;
            i += removed;
        }
        Ok(n)
    }

    /// Replaces the Request-URI (RFC 3261 §16.5, §16.6 item 2).
    pub fn set_request_uri(&mut self, uri: &str) -> Result<(), EditError> {
        let StartLine::Request { method, uri: old, .. } = self.msg.start_line else {
            return Err(EditError::NotRequest);
        };
        let at = self.msg.start_line_range.start + method.len() + 1;
        self.push(at..at + old.len(), |t| t.push_str(uri))
    }

    /// Max-Forwards minus one (RFC 3261 §16.6 item 3), or 70 added if absent;
    /// returns the new value. A value of 0 gives [`EditError::TooManyHops`]: the
    /// proxy answers 483 ([`crate::proxy::build_response`]), §16.3 item 2.
    pub fn decrement_max_forwards(&mut self) -> Result<u32, EditError> {
        if !self.msg.is_request() {
            return Err(EditError::NotRequest);
        }
        match self.msg.header(HeaderName::MaxForwards) {
            None => {
                self.insert_header_before(HeaderName::Via, "Max-Forwards", "70")?;
                Ok(70)
            }
            Some(h) => {
                let n = parse_decimal(h.value, 10)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or(EditError::Parse(crate::ParseError::Number))?;
                if n == 0 {
                    return Err(EditError::TooManyHops);
                }
                let range = h.value_range.clone();
                self.push(range, |t| {
                    let _ = write!(t, "{}", n - 1);
                })?;
                Ok(n - 1)
            }
        }
    }

    /// Length of the emitted message.
    pub fn emitted_len(&self) -> usize {
        let msg = self.msg;
        let removed: usize = self.edits.iter().map(|e| e.range.len()).sum();
        let added: usize = self.edits.iter().map(|e| e.text.len()).sum();
        let cl = if msg.content_length.is_none() {
            "Content-Length: \r\n".len() + msg.body.len().to_string().len()
        } else {
            0
        };
        msg.body.end - msg.start - removed + added + cl
    }

    /// The edited message: leading empty lines and bytes after the body dropped,
    /// a `Content-Length` added if the message had none (mandatory on stream
    /// transports, RFC 3261 §18.3; the body is never changed, so an existing one stays right).
    pub fn emit(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.emitted_len());
        self.emit_into(&mut out);
        out
    }

    /// As [`Editor::emit`], appending to `out`.
    pub fn emit_into(&self, out: &mut Vec<u8>) {
        let msg = self.msg;
        let bytes = msg.bytes;
        let mut order: Vec<usize> = (0..self.edits.len()).collect();
        order.sort_by_key(|&i| (self.edits[i].range.start, i));
        let mut cursor = msg.start;
        // Every edit lies in the start line or the header section (up to `headers_end`).
        for &i in &order {
            let e = &self.edits[i];
            if e.range.start > cursor {
                out.extend_from_slice(&bytes[cursor..e.range.start]);
            }
            out.extend_from_slice(self.text[e.text.clone()].as_bytes());
            cursor = cursor.max(e.range.end);
        }
        if msg.content_length.is_none() {
            out.extend_from_slice(&bytes[cursor..msg.headers_end]);
            let _ = std::io::Write::write_fmt(out, format_args!("Content-Length: {}\r\n", msg.body.len()));
            cursor = msg.headers_end;
        }
        out.extend_from_slice(&bytes[cursor..msg.body.end]);
    }
}
