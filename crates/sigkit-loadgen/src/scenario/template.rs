//! Message templates: a `<send>`'s text compiled once into literal bytes
//! and SIPp's keywords (`[call_id]`, `[branch]`, `[last_Via:]`, …), which
//! the engine expands per call (`engine/template.rs`).

use super::error::ScenarioError;

/// Values fixed for the run that templates name in brackets: SIPp's
/// `-key NAME VALUE` (`[NAME]`) and `-set NAME VALUE` (`[$NAME]`, SIPp's
/// global variable read in a template). A name is looked up before SIPp's
/// own keywords, as SIPp does for `-key`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys {
    /// (the text between the brackets, its value), in the order given.
    pub values: Vec<(String, String)>,
}

impl Keys {
    /// Adds `-key NAME VALUE`: `[NAME]` is VALUE.
    pub fn key(&mut self, name: &str, value: &str) {
        self.values.retain(|(n, _)| n != name);
        self.values.push((name.to_string(), value.to_string()));
    }

    /// Adds `-set NAME VALUE`: `[$NAME]` is VALUE.
    pub fn set(&mut self, name: &str, value: &str) {
        self.key(&format!("${name}"), value);
    }

    fn get(&self, inner: &str) -> Option<&str> {
        self.values.iter().find(|(n, _)| n == inner).map(|(_, v)| v.as_str())
    }
}

/// A message template: header lines and body, each a list of segments.
#[derive(Debug, Clone, Default)]
pub struct Template {
    /// The start line and header lines, one segment list each (CRLF added when sent).
    pub head: Vec<Vec<Segment>>,
    /// The body lines after the empty line, one segment list each; `[len]` is their length.
    pub body: Vec<Vec<Segment>>,
}

/// A piece of a template line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Bytes sent as they are.
    Literal(Vec<u8>),
    /// A keyword expanded for each call when sent.
    Keyword(Keyword),
}

/// SIPp's keywords (those of the common subset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keyword {
    /// `[call_id]`: the call's Call-ID (call number-run id@local address).
    CallId,
    /// `[branch]`/`[branch±N]`: a Via branch, `z9hG4bK-`run id-call number-step index (+N), unique per step as RFC 3261
    /// §8.1.1.7 asks.
    Branch(i32),
    /// `[cseq]`/`[cseq±N]`: the CSeq number of the call's latest request other than ACK and CANCEL (the first is `-base_cseq`),
    /// plus N.
    Cseq(i32),
    /// `[local_ip]`: the address the run sends from (IPv6 in brackets).
    LocalIp,
    /// `[local_ip_type]`: `4` or `6`.
    LocalIpType,
    /// `[local_port]`: the port the run sends from.
    LocalPort,
    /// `[remote_ip]`: the peer's address (`-rsa` or the remote host; IPv6 in brackets).
    RemoteIp,
    /// `[remote_ip_type]`: `4` or `6`.
    RemoteIpType,
    /// `[remote_port]`: the peer's port.
    RemotePort,
    /// `[media_ip]`: the local address (no media is sent).
    MediaIp,
    /// `[media_ip_type]`: `4` or `6`, as `[local_ip_type]`.
    MediaIpType,
    /// `[media_port]`/`[auto_media_port]` (±N): `-mp` plus N.
    MediaPort(i32),
    /// `[service]`: the request URI's user part (`-s`).
    Service,
    /// `[len]`: the body's length in bytes, for Content-Length.
    Len,
    /// `[call_number]`: the call's number in the run, from 1.
    CallNumber,
    /// `[transport]`: `UDP` or `TCP`.
    Transport,
    /// `[pid]`: the process id.
    Pid,
    /// `[peer_tag_param]`: `;tag=` and the peer's To/From tag, or nothing before the peer tagged the dialog.
    PeerTagParam,
    /// `[routes]`: a `Route:` header line with the Record-Route set a `recv rrs="true"` kept (RFC 3261 §12.1.2), or
    /// nothing.
    Routes,
    /// `[next_url]`: the Contact URI a `recv rrs="true"` kept (the remote target, RFC 3261 §12.1.2), else
    /// `sip:`service`@`remote ip`:`port.
    NextUrl,
    /// `[last_Name:]` (the whole header lines) or `[last_Name]` (values).
    Last {
        /// The header's name as written after `last_`.
        name: String,
        /// With the trailing colon: whole header lines; without: the values, comma-separated.
        with_name: bool,
    },
    /// `[last_Via_of_METHOD:]`: the Via lines of the last METHOD request
    /// received (a sigkit extension: a response to an earlier request of
    /// the call, as a replayed corpus flow needs).
    ViaOf(String),
    /// `[last_Request_URI]`: the request URI of the last request received.
    LastRequestUri,
    /// `[last_cseq_number]`: the CSeq number of the last message received.
    LastCseqNumber,
    /// `[fieldN]`: field N of the current `-inf` line (nothing when the line has no such field).
    Field(usize),
    /// `[authentication username=.. password=..]`: a digest answer to the
    /// challenge kept by a `recv auth="true"` (RFC 2617).
    Authentication {
        /// The user name, by default `-au` (or the service).
        username: Vec<Segment>,
        /// The password, by default `-ap`.
        password: Vec<Segment>,
    },
    /// `[clock_tick]`: milliseconds since the run started.
    ClockTick,
}

impl Template {
    /// Compiles SIPp's message text: each line trimmed, empty lines at the
    /// start and end dropped, the first empty line parting headers from
    /// the body; lines end with CRLF when sent.
    pub fn compile(text: &str, line: u32) -> Result<(Template, u32), ScenarioError> {
        Template::compile_with_keys(text, line, &Keys::default())
    }

    /// [`Template::compile`], with `keys` written in as text where named.
    pub fn compile_with_keys(text: &str, line: u32, keys: &Keys) -> Result<(Template, u32), ScenarioError> {
        let lines: Vec<&str> =
            text.split('\n').map(|l| l.trim_matches(|c| c == ' ' || c == '\t' || c == '\r')).collect();
        let first = lines.iter().position(|l| !l.is_empty()).unwrap_or(lines.len());
        let last = lines.iter().rposition(|l| !l.is_empty()).map_or(first, |i| i + 1);
        let lines = &lines[first..last];
        let split = lines.iter().position(|l| l.is_empty());
        let (head, body) = match split {
            Some(i) => (&lines[..i], &lines[i + 1..]),
            None => (lines, &[][..]),
        };
        let mut max_field = 0u32;
        let mut compile_lines = |ls: &[&str]| -> Result<Vec<Vec<Segment>>, ScenarioError> {
            ls.iter()
                .map(|l| {
                    let segs = segments(l, line, keys)?;
                    for s in &segs {
                        if let Segment::Keyword(Keyword::Field(n)) = s {
                            max_field = max_field.max(*n as u32 + 1);
                        }
                    }
                    Ok(segs)
                })
                .collect()
        };
        let head = compile_lines(head)?;
        let body = compile_lines(body)?;
        Ok((Template { head, body }, max_field))
    }

    pub(crate) fn keywords(&self) -> impl Iterator<Item = &Keyword> {
        self.head.iter().chain(self.body.iter()).flatten().filter_map(|s| match s {
            Segment::Keyword(k) => Some(k),
            Segment::Literal(_) => None,
        })
    }

    /// The start line's literal text, when it has no keyword before the
    /// method or status code.
    pub(super) fn start_literal(&self) -> String {
        let mut s = String::new();
        for seg in self.head.first().into_iter().flatten() {
            match seg {
                Segment::Literal(b) => s.push_str(&String::from_utf8_lossy(b)),
                Segment::Keyword(_) => s.push('\u{1}'),
            }
        }
        s
    }
}

/// One line of text (a `<log message="…">`) as literals and keywords.
pub(crate) fn compile_line(text: &str, line: u32, keys: &Keys) -> Result<Vec<Segment>, ScenarioError> {
    segments(text, line, keys)
}

/// Splits one line into literals and keywords.
fn segments(line_text: &str, line: u32, keys: &Keys) -> Result<Vec<Segment>, ScenarioError> {
    let mut out = Vec::new();
    let mut lit = Vec::new();
    let bytes = line_text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'[' {
            if let Some(end) = keyword_end(bytes, i) {
                let inner = &line_text[i + 1..end];
                if let Some(value) = keys.get(inner) {
                    lit.extend_from_slice(value.as_bytes());
                    i = end + 1;
                    continue;
                }
                if let Some(k) = keyword(inner, line, keys)? {
                    if !lit.is_empty() {
                        out.push(Segment::Literal(std::mem::take(&mut lit)));
                    }
                    out.push(Segment::Keyword(k));
                    i = end + 1;
                    continue;
                }
            }
        }
        lit.push(bytes[i]);
        i += 1;
    }
    if !lit.is_empty() {
        out.push(Segment::Literal(lit));
    }
    Ok(out)
}

/// The index of the `]` closing the keyword opened at `start` (nested
/// brackets allowed, for `[authentication username=[field0]]`).
fn keyword_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0;
    for (j, &b) in bytes.iter().enumerate().skip(start) {
        match b {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// `name`, `name+N` or `name-N`.
fn with_offset(inner: &str) -> (&str, i32) {
    if let Some(p) = inner.rfind(['+', '-']).filter(|&p| p > 0) {
        if let Ok(n) = inner[p + 1..].trim().parse::<i32>() {
            let n = if inner.as_bytes()[p] == b'-' { -n } else { n };
            return (inner[..p].trim(), n);
        }
    }
    (inner.trim(), 0)
}

/// The keyword `inner` names (without brackets); `Ok(None)` for text in
/// brackets that is no keyword of SIPp's syntax (an IPv6 literal, say).
fn keyword(inner: &str, line: u32, keys: &Keys) -> Result<Option<Keyword>, ScenarioError> {
    if inner.is_empty() || inner.contains(':') && !inner.starts_with("last_") || inner.starts_with(char::is_numeric) {
        // An IPv6 address such as [::1] or [2001:db8::1].
        return Ok(None);
    }
    if let Some(rest) = inner.strip_prefix("authentication") {
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            return authentication(rest, line, keys).map(Some);
        }
    }
    if let Some(name) = inner.strip_prefix("last_") {
        return Ok(Some(match name {
            "Request_URI" => Keyword::LastRequestUri,
            "cseq_number" => Keyword::LastCseqNumber,
            _ if name.starts_with("Via_of_") && name.ends_with(':') && name.len() > 8 => {
                Keyword::ViaOf(name["Via_of_".len()..name.len() - 1].to_string())
            }
            _ => {
                let with_name = name.ends_with(':');
                let name = name.trim_end_matches(':').to_string();
                if name.is_empty() {
                    return Err(ScenarioError::UnknownKeyword { line, keyword: inner.into() });
                }
                Keyword::Last { name, with_name }
            }
        }));
    }
    if let Some(n) = inner.strip_prefix("field") {
        // `[field0]`; SIPp's `[field0 file="x" line=N]` is not supported.
        return match n.trim().parse::<usize>() {
            Ok(n) => Ok(Some(Keyword::Field(n))),
            Err(_) => Err(ScenarioError::UnknownKeyword { line, keyword: inner.into() }),
        };
    }
    let (name, offset) = with_offset(inner);
    let k = match name {
        "call_id" => Keyword::CallId,
        "branch" => Keyword::Branch(offset),
        "cseq" => Keyword::Cseq(offset),
        "local_ip" => Keyword::LocalIp,
        "local_ip_type" => Keyword::LocalIpType,
        "local_port" => Keyword::LocalPort,
        "remote_ip" => Keyword::RemoteIp,
        "remote_ip_type" => Keyword::RemoteIpType,
        "remote_port" => Keyword::RemotePort,
        "media_ip" => Keyword::MediaIp,
        "media_ip_type" => Keyword::MediaIpType,
        "media_port" | "auto_media_port" => Keyword::MediaPort(offset),
        "service" => Keyword::Service,
        "len" => Keyword::Len,
        "call_number" => Keyword::CallNumber,
        "transport" => Keyword::Transport,
        "pid" => Keyword::Pid,
        "peer_tag_param" => Keyword::PeerTagParam,
        "routes" => Keyword::Routes,
        "next_url" => Keyword::NextUrl,
        "clock_tick" => Keyword::ClockTick,
        _ => {
            // Lowercase words are what SIPp's keywords look like; other
            // bracketed text is kept as it is.
            if name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit() || b == b'$') {
                return Err(ScenarioError::UnknownKeyword { line, keyword: inner.into() });
            }
            return Ok(None);
        }
    };
    if offset != 0 && !matches!(k, Keyword::Branch(_) | Keyword::Cseq(_) | Keyword::MediaPort(_)) {
        return Err(ScenarioError::UnknownKeyword { line, keyword: inner.into() });
    }
    Ok(Some(k))
}

/// `username=X password=Y` where X and Y may hold keywords.
fn authentication(params: &str, line: u32, keys: &Keys) -> Result<Keyword, ScenarioError> {
    let mut username = Vec::new();
    let mut password = Vec::new();
    for part in params.split_whitespace() {
        if let Some(v) = part.strip_prefix("username=") {
            username = segments(v.trim_matches('"'), line, keys)?;
        } else if let Some(v) = part.strip_prefix("password=") {
            password = segments(v.trim_matches('"'), line, keys)?;
        }
    }
    Ok(Keyword::Authentication { username, password })
}
