//! What a proxy builds itself: its Via and Route URIs, branch identifiers and
//! the responses it answers on its own (RFC 3261 §8.1.1.7, §8.2.6, §16.3).

use crate::message::{HeaderName, Message};
use crate::ParseError;
use std::fmt::Write as _;

/// The magic cookie that starts every RFC 3261 branch (§8.1.1.7).
pub const BRANCH_COOKIE: &str = "z9hG4bK";

/// Whether a request of this method can create a dialog: INVITE (RFC 3261 §12),
/// SUBSCRIBE (RFC 3265 §3.1.4.4) and REFER (RFC 3515 §2.4.7, which creates a subscription).
pub fn is_dialog_forming(method: &str) -> bool {
    matches!(method, "INVITE" | "SUBSCRIBE" | "REFER")
}

/// A branch parameter value: the magic cookie followed by the caller's random
/// bytes in lower-case hex (RFC 3261 §8.1.1.7: unique across space and time; 16
/// random bytes are plenty). The crate has no random source of its own.
pub fn branch(random: &[u8]) -> String {
    let mut s = String::with_capacity(BRANCH_COOKIE.len() + 2 * random.len());
    s.push_str(BRANCH_COOKIE);
    for b in random {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// `host` with brackets if it is a bare IPv6 address (RFC 3261 §25.1 IPv6reference).
fn write_host(out: &mut String, host: &str) {
    if host.contains(':') && !host.starts_with('[') {
        let _ = write!(out, "[{host}]");
    } else {
        out.push_str(host);
    }
}

/// Escapes what a uri-parameter value cannot hold (RFC 3261 §25.1 paramchar;
/// RFC 5049 §6.1: `:` in a `sigcomp-id` URI parameter is escaped).
fn write_param_escaped(out: &mut String, value: &str) {
    for b in value.bytes() {
        let plain = b.is_ascii_alphanumeric() || b"-_.!~*'()[]/&+$".contains(&b);
        if plain {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02x}");
        }
    }
}

/// The proxy's own via-parm: `SIP/2.0/<transport> <host>[:<port>];branch=<branch>`,
/// with `;comp=sigcomp` where it faces a SigComp peer (RFC 3486 §5) and then
/// its SigComp identifier (RFC 5049 §6.1: MUST accompany `comp=sigcomp` in a
/// Via the application generates), and `;rport` if asked (RFC 3581 §3).
pub fn format_via(
    transport: &str,
    host: &str,
    port: Option<u16>,
    branch: &str,
    sigcomp_id: Option<&str>,
    rport: bool,
) -> String {
    let mut s = String::with_capacity(96);
    let _ = write!(s, "SIP/2.0/{transport} ");
    write_host(&mut s, host);
    if let Some(p) = port {
        let _ = write!(s, ":{p}");
    }
    let _ = write!(s, ";branch={branch}");
    if rport {
        s.push_str(";rport");
    }
    if let Some(id) = sigcomp_id {
        let _ = write!(s, ";comp=sigcomp;sigcomp-id=\"<{id}>\"");
    }
    s
}

/// The proxy's URI for Record-Route and Path: `sip:<host>[:<port>][;transport=..];lr`,
/// with `;comp=sigcomp;sigcomp-id=<escaped id>` towards a SigComp peer
/// (RFC 3486 §4; RFC 5049 §6.1 for the identifier).
pub fn route_uri(host: &str, port: Option<u16>, transport: Option<&str>, sigcomp_id: Option<&str>) -> String {
    let mut s = String::with_capacity(96);
    s.push_str("sip:");
    write_host(&mut s, host);
    if let Some(p) = port {
        let _ = write!(s, ":{p}");
    }
    if let Some(t) = transport {
        let _ = write!(s, ";transport={t}");
    }
    s.push_str(";lr");
    if let Some(id) = sigcomp_id {
        s.push_str(";comp=sigcomp;sigcomp-id=");
        write_param_escaped(&mut s, id);
    }
    s
}

/// A response to `request` built by the proxy itself (RFC 3261 §8.2.6): the
/// Vias (all of them, in order), From, To, Call-ID and CSeq copied; `to_tag`
/// added to To if it has none (§8.2.6.2; leave it `None` for 100 Trying, which
/// a proxy sends without a tag, §16.2); Timestamp copied into a 100 (§8.2.6.1);
/// then `extra` header lines and `Content-Length: 0`.
pub fn build_response(
    request: &Message<'_>,
    code: u16,
    reason: &str,
    to_tag: Option<&str>,
    extra: &[(&str, &str)],
) -> Result<Vec<u8>, ParseError> {
    if !request.is_request() {
        return Err(ParseError::StartLine);
    }
    let to = request.to()?;
    request.call_id()?;
    request.cseq()?;
    request.from()?;
    let mut out = Vec::with_capacity(request.headers_end - request.start + 64);
    let _ = std::io::Write::write_fmt(&mut out, format_args!("SIP/2.0 {code} {reason}\r\n"));
    for h in request.headers() {
        let copy = match h.kind {
            HeaderName::Via | HeaderName::From | HeaderName::CallId | HeaderName::CSeq => true,
            HeaderName::Timestamp => code == 100,
            _ => false,
        };
        if copy || h.kind == HeaderName::To {
            out.extend_from_slice(h.kind.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(h.value);
            if h.kind == HeaderName::To && to.tag().is_none() {
                if let Some(tag) = to_tag {
                    out.extend_from_slice(b";tag=");
                    out.extend_from_slice(tag.as_bytes());
                }
            }
            out.extend_from_slice(b"\r\n");
        }
    }
    for (name, value) in extra {
        let _ = std::io::Write::write_fmt(&mut out, format_args!("{name}: {value}\r\n"));
    }
    out.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    Ok(out)
}

/// `100 Trying` (RFC 3261 §16.2: a stateful proxy sends it for an INVITE).
pub fn trying(request: &Message<'_>) -> Result<Vec<u8>, ParseError> {
    build_response(request, 100, "Trying", None, &[])
}

/// `483 Too Many Hops` (RFC 3261 §16.3 item 2: Max-Forwards was 0).
pub fn too_many_hops(request: &Message<'_>, to_tag: &str) -> Result<Vec<u8>, ParseError> {
    build_response(request, 483, "Too Many Hops", Some(to_tag), &[])
}

/// `503 Service Unavailable` with `Retry-After` (RFC 3261 §21.5.4, §20.33): the proxy is overloaded.
pub fn service_unavailable(request: &Message<'_>, to_tag: &str, retry_after: u32) -> Result<Vec<u8>, ParseError> {
    let seconds = retry_after.to_string();
    build_response(request, 503, "Service Unavailable", Some(to_tag), &[("Retry-After", &seconds)])
}
