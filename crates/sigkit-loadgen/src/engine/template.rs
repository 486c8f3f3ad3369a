//! SIPp's message templates expanded for one call: keywords, `[last_*]`
//! headers, `[len]`.

use std::io::Write as _;
use std::time::Instant;

use sigkit_sip::{HeaderName, Message};

use super::call::{Call, Env};
use crate::auth;
use crate::scenario::{Keyword, Segment, Template};

/// What a message template reads.
pub(super) struct Ctx<'a> {
    pub(super) env: &'a Env,
    pub(super) call: &'a Call,
    pub(super) step: usize,
    pub(super) fields: Option<&'a [String]>,
    pub(super) now: Instant,
}

/// Formats `template` into `out`: the body first (into `body`), so that
/// `[len]` is known when the headers are written. A header line that comes
/// out empty (an absent `[last_*]`, no `[routes]`) is left out.
pub(super) fn format_message(
    ctx: &Ctx<'_>,
    template: &Template,
    body: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    body.clear();
    for line in &template.body {
        write_line(ctx, line, 0, body, scratch);
        body.extend_from_slice(b"\r\n");
    }
    for line in &template.head {
        let start = out.len();
        write_line(ctx, line, body.len(), out, scratch);
        if out.len() > start {
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}

/// The header lines of the call's last message named `name` (or its
/// compact form), each with its continuation lines.
pub(super) fn header_lines<'m>(c: &'m Call, name: &'m str) -> impl Iterator<Item = &'m [u8]> + 'm {
    let want = HeaderName::from_name(name.as_bytes());
    c.last_index.iter().filter_map(move |(kind, n, line)| {
        let hit = if want == HeaderName::Other {
            *kind == HeaderName::Other
                && c.last_msg[n.start as usize..n.end as usize].eq_ignore_ascii_case(name.as_bytes())
        } else {
            *kind == want
        };
        hit.then(|| &c.last_msg[line.start as usize..line.end as usize])
    })
}

/// The branch parameter of the first Via line of `msg` (empty if none).
pub(super) fn top_via_branch(msg: &[u8]) -> &[u8] {
    Message::parse(msg).ok().and_then(|m| m.top_via().ok()).and_then(|v| v.branch()).map_or(&[], str::as_bytes)
}

pub(super) fn trim(b: &[u8]) -> &[u8] {
    let s = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    let e = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(s, |e| e + 1);
    &b[s..e]
}

/// Writes one line's segments; returns early (dropping the rest of the
/// line) where a `[last_*]` header is absent, as SIPp does.
pub(super) fn write_line(ctx: &Ctx<'_>, segs: &[Segment], len: usize, out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
    for seg in segs {
        match seg {
            Segment::Literal(b) => out.extend_from_slice(b),
            Segment::Keyword(k) => {
                if !write_keyword(ctx, k, len, out, scratch) {
                    return;
                }
            }
        }
    }
}

pub(super) fn write_keyword(ctx: &Ctx<'_>, k: &Keyword, len: usize, out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> bool {
    let env = ctx.env;
    let c = ctx.call;
    match k {
        Keyword::CallId => out.extend_from_slice(&c.call_id),
        Keyword::Branch(off) => {
            let _ = write!(out, "z9hG4bK-{}-{}-{}", env.run_id, c.number, ctx.step as i64 + i64::from(*off));
        }
        Keyword::Cseq(off) => {
            let _ = write!(out, "{}", i64::from(c.cseq) + i64::from(*off));
        }
        Keyword::LocalIp | Keyword::MediaIp => out.extend_from_slice(env.local_ip.as_bytes()),
        Keyword::LocalIpType | Keyword::MediaIpType => out.extend_from_slice(env.local_ip_type.as_bytes()),
        Keyword::LocalPort => out.extend_from_slice(env.local_port.as_bytes()),
        Keyword::RemoteIp => out.extend_from_slice(env.remote_ip.as_bytes()),
        Keyword::RemoteIpType => out.extend_from_slice(env.remote_ip_type.as_bytes()),
        Keyword::RemotePort => out.extend_from_slice(env.remote_port.as_bytes()),
        Keyword::MediaPort(off) => {
            let _ = write!(out, "{}", i64::from(env.media_port) + i64::from(*off));
        }
        Keyword::Service => out.extend_from_slice(env.service.as_bytes()),
        Keyword::Len => {
            let _ = write!(out, "{len}");
        }
        Keyword::CallNumber => {
            let _ = write!(out, "{}", c.number);
        }
        Keyword::Transport => out.extend_from_slice(env.transport.as_bytes()),
        Keyword::Pid => out.extend_from_slice(env.pid.as_bytes()),
        Keyword::ClockTick => {
            let _ = write!(out, "{}", (ctx.now - env.started).as_millis());
        }
        Keyword::PeerTagParam => {
            if !c.peer_tag.is_empty() {
                out.extend_from_slice(b";tag=");
                out.extend_from_slice(&c.peer_tag);
            }
        }
        Keyword::Routes => {
            if !c.routes.is_empty() {
                out.extend_from_slice(b"Route: ");
                out.extend_from_slice(&c.routes);
            }
        }
        Keyword::NextUrl => {
            if c.next_url.is_empty() {
                let _ = write!(out, "sip:{}@{}:{}", env.service, env.remote_ip, env.remote_port);
            } else {
                out.extend_from_slice(&c.next_url);
            }
        }
        Keyword::Last { name, with_name } => {
            let mut any = false;
            for (i, line) in header_lines(c, name).enumerate() {
                any = true;
                if *with_name {
                    if i > 0 {
                        out.extend_from_slice(b"\r\n");
                    }
                    out.extend_from_slice(line);
                } else {
                    if i > 0 {
                        out.extend_from_slice(b", ");
                    }
                    let colon = line.iter().position(|&b| b == b':').map_or(line.len(), |p| p + 1);
                    out.extend_from_slice(trim(&line[colon..]));
                }
            }
            return any;
        }
        Keyword::ViaOf(method) => {
            let Some((_, v)) = c.vias_of.iter().find(|(m, _)| m == method) else { return false };
            out.extend_from_slice(v);
        }
        Keyword::LastRequestUri => {
            let first = c.last_msg.split(|&b| b == b'\n').next().unwrap_or(&[]);
            match first.split(|&b| b == b' ').nth(1) {
                Some(uri) if first.ends_with(b"SIP/2.0\r") || first.ends_with(b"SIP/2.0") => out.extend_from_slice(uri),
                _ => return false,
            }
        }
        Keyword::LastCseqNumber => {
            let Some(line) = header_lines(c, "CSeq").next() else { return false };
            let colon = line.iter().position(|&b| b == b':').map_or(line.len(), |p| p + 1);
            let v = trim(&line[colon..]);
            out.extend(v.iter().take_while(|b| b.is_ascii_digit()));
        }
        Keyword::Field(n) => {
            if let Some(v) = ctx.fields.and_then(|f| f.get(*n)) {
                out.extend_from_slice(v.as_bytes());
            }
        }
        Keyword::Authentication { username, password } => {
            let Some((proxy, challenge)) = &c.challenge else { return false };
            let mut text = |segs: &[Segment], default: &str| -> String {
                if segs.is_empty() {
                    return default.to_string();
                }
                scratch.clear();
                let mut inner = Vec::new();
                write_line(ctx, segs, len, scratch, &mut inner);
                String::from_utf8_lossy(scratch).into_owned()
            };
            let user = text(username, &env.auth_user);
            let pass = text(password, &env.auth_password);
            // The request line written so far gives the method and URI.
            let first = out.split(|&b| b == b'\r').next().unwrap_or(&[]);
            let mut words = first.split(|&b| b == b' ');
            let method = String::from_utf8_lossy(words.next().unwrap_or(&[])).into_owned();
            let uri = String::from_utf8_lossy(words.next().unwrap_or(&[])).into_owned();
            let cnonce = format!("{:x}{:x}", c.number, env.started.elapsed().as_nanos() as u64);
            let line = auth::authorization(*proxy, challenge, &user, &pass, &method, &uri, &cnonce);
            out.extend_from_slice(line.as_bytes());
        }
    }
    true
}
