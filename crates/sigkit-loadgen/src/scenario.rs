//! Scenarios: the steps one call goes through, read from SIPp's XML
//! scenario format (its common subset), with message templates compiled
//! once into literal bytes and keywords.
//!
//! Supported elements: `send` (`retrans`, `next`, `start_rtd`, `rtd`),
//! `recv` (`response` or `request`, `optional`, `next`, `timeout`,
//! `ontimeout`, `rrs`, `auth`, `start_rtd`, `rtd`), `pause`
//! (`milliseconds`, `min`/`max`, `distribution="uniform|exponential"`),
//! `timewait`, `nop`, `label`. `ResponseTimeRepartition`,
//! `CallLengthRepartition` and `Reference` are accepted and ignored, as are
//! display attributes (`crlf`, `hide`, `display`, `lost`). Anything else is
//! an error that names it, with its line.
//!
//! A file's cost is bounded before it is parsed ([`crate::xml_limits`]:
//! size, depth, element count, no DTD entities), and reading it is linear
//! in its length: lines come from an index of line ends, and the CSeq
//! methods a response step takes are shared between steps, not copied.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::xml_limits::{LimitError, LineIndex};
pub use crate::xml_limits::{MAX_DEPTH, MAX_ELEMENTS, MAX_SCENARIO_BYTES};

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

/// A compiled scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The `<scenario name=…>` attribute (the built-in's name for a built-in).
    pub name: String,
    /// The steps in document order; `next`/`ontimeout` targets are indices into it.
    pub steps: Vec<Step>,
    /// Response-time measurements by name (`rtd="true"` is "1").
    pub rtds: Vec<String>,
    /// Whether any template reads the last received message (`[last_*]`),
    /// so a call keeps a copy of it.
    pub needs_last_message: bool,
    /// Highest `[fieldN]` index used, plus one.
    pub fields_used: usize,
}

/// One step of a scenario.
#[derive(Debug, Clone)]
pub struct Step {
    /// What the step does.
    pub kind: StepKind,
    /// Where to go after this step (`next="label"`), if not the next step.
    pub next: Option<usize>,
    /// Response-time measurement this step starts.
    pub start_rtd: Option<usize>,
    /// Response-time measurement this step stops (and records).
    pub rtd: Option<usize>,
    /// Line in the XML file (0 for built-in steps).
    pub line: u32,
}

/// What a step does: one element of SIPp's scenario.
#[derive(Debug, Clone)]
pub enum StepKind {
    /// `<send>`: send a message.
    Send(Send),
    /// `<recv>`: wait for a response or request.
    Recv(Recv),
    /// `<pause>`: wait, then go on.
    Pause(Pause),
    /// A pause after which the call ends; the call counts as successful
    /// when it enters it, and lingers only to answer retransmissions.
    Timewait(Duration),
    /// `<nop>`: nothing (it may start or stop a response time).
    Nop,
    /// `<label id=…>`: a target of `next` and `ontimeout`; does nothing.
    Label,
}

/// A message to send.
#[derive(Debug, Clone)]
pub struct Send {
    /// The message (the element's CDATA), compiled.
    pub template: Template,
    /// First retransmission interval (SIPp's `retrans`, ms), over UDP.
    pub retrans: Option<Duration>,
    /// The request method or status code on the template's start line.
    pub what: Sent,
}

/// What a sent message is, read from its template's start line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// A request of this method (`INVITE`, `ACK`, ...).
    Request(String),
    /// A response with this status code.
    Response(u16),
}

/// A message to wait for.
#[derive(Debug, Clone)]
pub struct Recv {
    /// The response code or request method the step waits for.
    pub expect: Expect,
    /// For responses: the methods whose responses this step takes (the
    /// response's CSeq must name one, as SIPp matches): the requests sent
    /// since the previous recv (ACK aside; INVITE too after a CANCEL), or
    /// the previous recv's methods if none; shared by the steps that take
    /// the same ones.
    pub cseq_methods: Arc<[String]>,
    /// `optional="true"`: the call may skip this step when the message that arrives matches a later one.
    pub optional: bool,
    /// `timeout=…`: the call fails (or goes to `ontimeout`) when nothing matched after this long; None: the run's
    /// `-recv_timeout`, if any.
    pub timeout: Option<Duration>,
    /// `ontimeout=…`: the step a timed-out call goes to instead of failing.
    pub ontimeout: Option<usize>,
    /// Keep the Record-Route set and Contact (`[routes]`, `[next_url]`).
    pub rrs: bool,
    /// Keep the challenge (`[authentication]`).
    pub auth: bool,
    /// Check the request's digest credentials against the configured user
    /// and password (a sigkit extension, for the built-in registrar); a
    /// wrong answer fails the call.
    pub verify_auth: bool,
}

/// What a `<recv>` step waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// `<recv response="NNN">`: a response with this status code (and a CSeq method in `cseq_methods`).
    Response(u16),
    /// `<recv request="METHOD">`: a request of this method.
    Request(String),
}

/// How long a pause lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pause {
    /// SIPp's `-d`.
    Default,
    /// `milliseconds="N"`: this long.
    Fixed(Duration),
    /// `min`/`max` (with `distribution="uniform"` or none): uniformly between the two, bounds included.
    Uniform(Duration, Duration),
    /// `distribution="exponential" mean="N"`: exponentially distributed with this mean.
    Exponential(Duration),
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
                    let segs = segments(l, line)?;
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
    fn start_literal(&self) -> String {
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

/// Splits one line into literals and keywords.
fn segments(line_text: &str, line: u32) -> Result<Vec<Segment>, ScenarioError> {
    let mut out = Vec::new();
    let mut lit = Vec::new();
    let bytes = line_text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'[' {
            if let Some(end) = keyword_end(bytes, i) {
                let inner = &line_text[i + 1..end];
                if let Some(k) = keyword(inner, line)? {
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
fn keyword(inner: &str, line: u32) -> Result<Option<Keyword>, ScenarioError> {
    if inner.is_empty() || inner.contains(':') && !inner.starts_with("last_") || inner.starts_with(char::is_numeric) {
        // An IPv6 address such as [::1] or [2001:db8::1].
        return Ok(None);
    }
    if let Some(rest) = inner.strip_prefix("authentication") {
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            return authentication(rest, line).map(Some);
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
fn authentication(params: &str, line: u32) -> Result<Keyword, ScenarioError> {
    let mut username = Vec::new();
    let mut password = Vec::new();
    for part in params.split_whitespace() {
        if let Some(v) = part.strip_prefix("username=") {
            username = segments(v.trim_matches('"'), line)?;
        } else if let Some(v) = part.strip_prefix("password=") {
            password = segments(v.trim_matches('"'), line)?;
        }
    }
    Ok(Keyword::Authentication { username, password })
}

fn ms_attr(node: roxmltree::Node, name: &str, line: u32) -> Result<Option<Duration>, ScenarioError> {
    match node.attribute(name) {
        None => Ok(None),
        Some(v) => {
            let v = v.trim();
            let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
                (n, 1.0)
            } else if let Some(n) = v.strip_suffix('s') {
                (n, 1000.0)
            } else {
                (v, 1.0)
            };
            match num.trim().parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 && x * scale < 1e12 => {
                    Ok(Some(Duration::from_micros((x * scale * 1000.0) as u64)))
                }
                _ => Err(ScenarioError::Bad {
                    line,
                    element: node.tag_name().name().into(),
                    why: format!("{name}=\"{v}\" is not a duration in ms"),
                }),
            }
        }
    }
}

fn bool_attr(node: roxmltree::Node, name: &str) -> bool {
    matches!(node.attribute(name), Some("true" | "global" | "1" | "yes"))
}

/// Text of an XML file as SIPp reads it: UTF-8, or else ISO-8859-1 (each
/// byte one character), the encoding SIPp's own files declare.
pub fn decode_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| b as char).collect(),
    }
}

/// The most response-time names (`start_rtd`, `rtd`) a scenario may use:
/// SIPp allows 5 (its MAX_RTD_INFO_LENGTH), and each costs a histogram.
pub const MAX_RTDS: usize = 20;

/// Parses a SIPp XML scenario.
pub fn parse(xml: &str) -> Result<Scenario, ScenarioError> {
    // roxmltree reads UTF-8 only; SIPp's files declare ISO-8859-1, which
    // `decode_text` has already turned into characters.
    let xml = strip_encoding_declaration(xml);
    crate::xml_limits::check(&xml)?;
    let opts = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(&xml, opts).map_err(|e| ScenarioError::Xml(e.to_string()))?;
    let lines = LineIndex::new(&xml);
    let line_of = |node: roxmltree::Node| lines.line_of(node.range().start);
    let root = doc.root_element();
    if root.tag_name().name() != "scenario" {
        return Err(ScenarioError::NotAScenario(root.tag_name().name().into()));
    }
    let name = root.attribute("name").unwrap_or("scenario").to_string();
    let mut steps = Vec::new();
    let mut labels: HashMap<String, usize> = HashMap::new();
    // (step index, label, is ontimeout) to resolve once every label is known.
    let mut jumps: Vec<(usize, String, bool)> = Vec::new();
    let mut rtds: Vec<String> = Vec::new();
    let mut needs_last = false;
    let mut fields_used = 0usize;
    // The methods the last response step took, and those sent since it
    // (in order, and as a set: a file may name thousands).
    let mut methods: Arc<[String]> = Arc::from(Vec::new());
    let mut sent_since_recv: Vec<String> = Vec::new();
    let mut sent_set: HashSet<String> = HashSet::new();
    // `None` past MAX_RTDS names.
    let mut rtd_index = |v: &str| -> Option<usize> {
        let key = if v == "true" { "1" } else { v };
        match rtds.iter().position(|r| r == key) {
            Some(i) => Some(i),
            None if rtds.len() >= MAX_RTDS => None,
            None => {
                rtds.push(key.to_string());
                Some(rtds.len() - 1)
            }
        }
    };
    for node in root.children().filter(|n| n.is_element()) {
        let line = line_of(node);
        let element = node.tag_name().name();
        let bad = |why: String| ScenarioError::Bad { line, element: element.into(), why };
        let kind = match element {
            "send" => {
                let (send, fields) = send_step(node, line, &line_of)?;
                fields_used = fields_used.max(fields as usize);
                needs_last |= reads_last_message(&send.template);
                if let Sent::Request(m) = &send.what {
                    if m != "ACK" && sent_set.insert(m.clone()) {
                        sent_since_recv.push(m.clone());
                        if m == "CANCEL" && sent_set.insert("INVITE".into()) {
                            sent_since_recv.push("INVITE".into());
                        }
                    }
                }
                StepKind::Send(send)
            }
            "recv" => {
                for child in node.children().filter(|c| c.is_element()) {
                    check_action(child, &line_of)?;
                }
                let expect = expect_of(node, line)?;
                if !sent_since_recv.is_empty() {
                    methods = Arc::from(std::mem::take(&mut sent_since_recv));
                    sent_set.clear();
                }
                let cseq_methods = match expect {
                    Expect::Response(_) => Arc::clone(&methods),
                    Expect::Request(_) => Arc::from(Vec::new()),
                };
                let recv = Recv {
                    expect,
                    cseq_methods,
                    optional: bool_attr(node, "optional"),
                    timeout: ms_attr(node, "timeout", line)?,
                    ontimeout: None,
                    rrs: bool_attr(node, "rrs"),
                    auth: bool_attr(node, "auth"),
                    verify_auth: bool_attr(node, "verify_auth"),
                };
                if let Some(l) = node.attribute("ontimeout") {
                    jumps.push((steps.len(), l.to_string(), true));
                }
                StepKind::Recv(recv)
            }
            "pause" => StepKind::Pause(pause_of(node, line)?),
            "timewait" => StepKind::Timewait(ms_attr(node, "milliseconds", line)?.unwrap_or(Duration::ZERO)),
            "nop" => {
                for child in node.children().filter(|c| c.is_element()) {
                    check_action(child, &line_of)?;
                }
                StepKind::Nop
            }
            "label" => {
                let id = node.attribute("id").ok_or_else(|| bad("needs id=\"NAME\"".into()))?;
                if labels.insert(id.to_string(), steps.len()).is_some() {
                    return Err(bad(format!("label \"{id}\" is defined twice")));
                }
                StepKind::Label
            }
            "ResponseTimeRepartition" | "CallLengthRepartition" | "Reference" | "User" | "Global" => continue,
            other => return Err(ScenarioError::Unsupported { line, element: other.into() }),
        };
        if let Some(l) = node.attribute("next") {
            jumps.push((steps.len(), l.to_string(), false));
        }
        let too_many = || bad(format!("more than {MAX_RTDS} response-time names (start_rtd, rtd)"));
        let start_rtd = node.attribute("start_rtd").map(|v| rtd_index(v).ok_or_else(too_many)).transpose()?;
        let rtd =
            node.attribute("rtd").filter(|v| *v != "false").map(|v| rtd_index(v).ok_or_else(too_many)).transpose()?;
        steps.push(Step { kind, next: None, start_rtd, rtd, line });
    }
    resolve_jumps(&mut steps, &labels, jumps)?;
    if !steps.iter().any(|s| matches!(s.kind, StepKind::Send(_) | StepKind::Recv(_))) {
        return Err(ScenarioError::Empty);
    }
    Ok(Scenario { name, steps, rtds, needs_last_message: needs_last, fields_used })
}

/// A `<send>` step: its message template compiled (with the number of
/// injection fields it reads), what it sends, and its retransmission
/// interval.
fn send_step(
    node: roxmltree::Node,
    line: u32,
    line_of: &impl Fn(roxmltree::Node) -> u32,
) -> Result<(Send, u32), ScenarioError> {
    let bad = |why: &str| ScenarioError::Bad { line, element: "send".into(), why: why.into() };
    let text: String = node.children().filter(|c| c.is_text()).filter_map(|c| c.text()).collect();
    for child in node.children().filter(|c| c.is_element()) {
        check_action(child, line_of)?;
    }
    let (template, fields) = Template::compile(&text, line)?;
    if template.head.is_empty() {
        return Err(bad("the message is empty"));
    }
    let what = sent_kind(&template.start_literal())
        .ok_or_else(|| bad("the first line is neither a request line (METHOD uri SIP/2.0) nor a status line"))?;
    let retrans = ms_attr(node, "retrans", line)?;
    Ok((Send { template, retrans, what }, fields))
}

/// What a `<recv>` waits for: a response code or a request method.
fn expect_of(node: roxmltree::Node, line: u32) -> Result<Expect, ScenarioError> {
    let bad = |why: String| ScenarioError::Bad { line, element: "recv".into(), why };
    match (node.attribute("response"), node.attribute("request")) {
        (Some(r), None) => Ok(Expect::Response(
            r.trim()
                .parse()
                .ok()
                .filter(|c| (100..700).contains(c))
                .ok_or_else(|| bad(format!("response=\"{r}\" is not a status code")))?,
        )),
        (None, Some(m)) if !m.trim().is_empty() => Ok(Expect::Request(m.trim().to_string())),
        _ => Err(bad("needs exactly one of response=\"CODE\" or request=\"METHOD\"".into())),
    }
}

/// A `<pause>`'s length: fixed (`milliseconds`, or the default), uniform
/// between `min` and `max`, or exponential of `mean`.
fn pause_of(node: roxmltree::Node, line: u32) -> Result<Pause, ScenarioError> {
    let ms = ms_attr(node, "milliseconds", line)?;
    let min = ms_attr(node, "min", line)?;
    let max = ms_attr(node, "max", line)?;
    let mean = ms_attr(node, "mean", line)?;
    Ok(match (node.attribute("distribution"), ms, min, max, mean) {
        (None | Some("fixed"), Some(d), _, _, _) => Pause::Fixed(d),
        (None | Some("fixed"), None, None, None, None) => Pause::Default,
        (None | Some("uniform"), None, Some(a), Some(b), _) if a <= b => Pause::Uniform(a, b),
        (Some("exponential"), _, _, _, Some(m)) => Pause::Exponential(m),
        _ => {
            return Err(ScenarioError::Bad {
                line,
                element: "pause".into(),
                why: "supported: milliseconds=\"N\", min/max (uniform), distribution=\"exponential\" mean=\"N\"".into(),
            })
        }
    })
}

/// Whether a template reads the last message received (`[last_*]` and the
/// keywords taken from it), which the engine then keeps.
fn reads_last_message(template: &Template) -> bool {
    template.keywords().any(|k| {
        matches!(k, Keyword::Last { .. } | Keyword::LastRequestUri | Keyword::LastCseqNumber | Keyword::PeerTagParam)
    })
}

/// Points each `next` and `ontimeout` at its label's step: `jumps` are
/// (step, label, whether ontimeout).
fn resolve_jumps(
    steps: &mut [Step],
    labels: &HashMap<String, usize>,
    jumps: Vec<(usize, String, bool)>,
) -> Result<(), ScenarioError> {
    for (at, label, ontimeout) in jumps {
        let target = *labels.get(&label).ok_or(ScenarioError::UnknownLabel(label))?;
        if ontimeout {
            if let StepKind::Recv(r) = &mut steps[at].kind {
                r.ontimeout = Some(target);
            }
        } else {
            steps[at].next = Some(target);
        }
    }
    Ok(())
}

/// Actions inside a step: `log` and `exec` are accepted and ignored (they
/// change no message); others are errors, since skipping them would
/// change what the scenario sends.
fn check_action(node: roxmltree::Node, line_of: &impl Fn(roxmltree::Node) -> u32) -> Result<(), ScenarioError> {
    match node.tag_name().name() {
        "action" => {
            for a in node.children().filter(|c| c.is_element()) {
                match a.tag_name().name() {
                    "log" | "exec" | "warning" => {}
                    other => {
                        return Err(ScenarioError::Unsupported { line: line_of(a), element: format!("action/{other}") })
                    }
                }
            }
            Ok(())
        }
        other => Err(ScenarioError::Unsupported { line: line_of(node), element: other.into() }),
    }
}

/// Drops the XML declaration's encoding: the text is already decoded.
fn strip_encoding_declaration(xml: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = xml.trim_start_matches('\u{feff}');
    if trimmed.starts_with("<?xml") {
        if let Some(end) = trimmed.find("?>") {
            return std::borrow::Cow::Owned(format!("<?xml version=\"1.0\"?>{}", &trimmed[end + 2..]));
        }
    }
    std::borrow::Cow::Borrowed(trimmed)
}

/// What a start line says: "INVITE sip:... SIP/2.0" or "SIP/2.0 200 OK".
fn sent_kind(start: &str) -> Option<Sent> {
    let mut words = start.split_whitespace();
    let first = words.next()?;
    if first == "SIP/2.0" {
        let code = words.next()?.parse::<u16>().ok().filter(|c| (100..700).contains(c))?;
        return Some(Sent::Response(code));
    }
    if first.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_' || b == b'.') && !first.is_empty() {
        return Some(Sent::Request(first.to_string()));
    }
    None
}

/// SIPp's built-in `uac`, with one change for proxies that record-route
/// (the framework thesis's chain, where the UAC's calls cross a proxy): the 200's
/// Record-Route set and Contact are kept (`rrs`, as SIPp's own comment on
/// that step suggests) and the ACK and BYE follow them (RFC 3261
/// §12.2.1.1). Against a UAS reached directly the messages are those of
/// SIPp's `uac`.
pub const UAC_XML: &str = include_str!("../scenarios/uac.xml");
/// SIPp's built-in `uas` (`sipp -sd uas`), unchanged in behaviour.
pub const UAS_XML: &str = include_str!("../scenarios/uas.xml");
/// REGISTER with digest authentication (RFC 3261 §22, RFC 2617): the
/// client answers the 401 challenge.
pub const REGISTER_XML: &str = include_str!("../scenarios/register.xml");
/// The registrar side of [`REGISTER_XML`]: challenges every REGISTER
/// without credentials with 401, accepts the retry.
pub const REGISTRAR_XML: &str = include_str!("../scenarios/registrar.xml");
/// One MESSAGE per call (RFC 3428), a non-INVITE transaction: the load of
/// the overload experiments.
pub const MESSAGE_XML: &str = include_str!("../scenarios/message.xml");
/// The server side of [`MESSAGE_XML`]: 200, and the transaction kept for
/// Timer J to answer retransmissions.
pub const MESSAGE_UAS_XML: &str = include_str!("../scenarios/message-uas.xml");

/// The names of the built-in scenarios.
pub const BUILT_IN: &[&str] = &["uac", "uas", "register", "registrar", "message", "message-uas"];

/// A built-in scenario's XML by name.
pub fn built_in_xml(name: &str) -> Result<&'static str, ScenarioError> {
    match name {
        "uac" => Ok(UAC_XML),
        "uas" => Ok(UAS_XML),
        "register" => Ok(REGISTER_XML),
        "registrar" => Ok(REGISTRAR_XML),
        "message" => Ok(MESSAGE_XML),
        "message-uas" => Ok(MESSAGE_UAS_XML),
        other => Err(ScenarioError::NoSuchBuiltIn(other.into())),
    }
}

/// A built-in scenario by name.
pub fn built_in(name: &str) -> Result<Scenario, ScenarioError> {
    parse(built_in_xml(name)?)
}

impl Scenario {
    /// Whether calls of this scenario start by sending (a UAC) rather
    /// than by receiving (a UAS).
    pub fn is_client(&self) -> bool {
        self.steps
            .iter()
            .find(|s| matches!(s.kind, StepKind::Send(_) | StepKind::Recv(_)))
            .is_some_and(|s| matches!(s.kind, StepKind::Send(_)))
    }

    /// The request that opens a call of a server scenario.
    pub fn first_request(&self) -> Option<&str> {
        self.steps.iter().find_map(|s| match &s.kind {
            StepKind::Recv(Recv { expect: Expect::Request(m), .. }) => Some(m.as_str()),
            StepKind::Send(_) | StepKind::Recv(_) => Some(""),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sipps_builtin_scenarios_compile() {
        let uac = built_in("uac").unwrap();
        assert!(uac.is_client());
        assert_eq!(uac.rtds, vec!["1".to_string()]);
        let kinds: Vec<&str> = uac
            .steps
            .iter()
            .map(|s| match &s.kind {
                StepKind::Send(_) => "send",
                StepKind::Recv(r) if r.optional => "opt",
                StepKind::Recv(_) => "recv",
                StepKind::Pause(_) => "pause",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["send", "opt", "opt", "opt", "recv", "send", "pause", "send", "recv"]);
        let StepKind::Recv(last) = &uac.steps[8].kind else { panic!() };
        assert_eq!(*last.cseq_methods, ["BYE"]);
        let StepKind::Recv(ok) = &uac.steps[4].kind else { panic!() };
        assert_eq!(*ok.cseq_methods, ["INVITE"]);
        let uas = built_in("uas").unwrap();
        assert!(!uas.is_client());
        assert!(uas.needs_last_message);
        assert_eq!(uas.first_request(), Some("INVITE"));
        assert!(matches!(uas.steps.last().unwrap().kind, StepKind::Timewait(d) if d == Duration::from_secs(4)));
    }

    #[test]
    fn templates_split_head_and_body_and_find_keywords() {
        let (t, fields) = Template::compile(
            "\n   INVITE sip:[field0]@[remote_ip]:[remote_port] SIP/2.0\n   Via: x;branch=[branch-1]\n   CSeq: [cseq+1] INVITE\n   Content-Length: [len]\n\n   v=0\n   c=IN IP4 [::1]\n\n  ",
            1,
        )
        .unwrap();
        assert_eq!(fields, 1);
        assert_eq!(t.head.len(), 4);
        assert_eq!(t.body.len(), 2);
        assert!(t.head[1].contains(&Segment::Keyword(Keyword::Branch(-1))));
        assert!(t.head[2].contains(&Segment::Keyword(Keyword::Cseq(1))));
        assert_eq!(t.body[1], vec![Segment::Literal(b"c=IN IP4 [::1]".to_vec())]);
    }

    #[test]
    fn errors_name_the_problem_and_the_line() {
        let e =
            parse("<scenario><send><![CDATA[INVITE sip:x SIP/2.0\n[bogus_word]\n]]></send></scenario>").unwrap_err();
        assert!(matches!(e, ScenarioError::UnknownKeyword { ref keyword, .. } if keyword == "bogus_word"), "{e}");
        let e = parse("<scenario>\n<sendCmd/></scenario>").unwrap_err();
        assert_eq!(e, ScenarioError::Unsupported { line: 2, element: "sendCmd".into() });
        let e = parse("<scenario><recv response=\"2x\"/></scenario>").unwrap_err();
        assert!(e.to_string().contains("not a status code"), "{e}");
        let e = parse("<scenario><recv response=\"200\" next=\"nowhere\"/></scenario>").unwrap_err();
        assert_eq!(e, ScenarioError::UnknownLabel("nowhere".into()));
        assert!(matches!(parse("<scenario"), Err(ScenarioError::Xml(_))));
        assert!(matches!(parse("<foo/>"), Err(ScenarioError::NotAScenario(_))));
        assert_eq!(parse("<scenario><pause/></scenario>").unwrap_err(), ScenarioError::Empty);
    }

    /// Response-time names are capped: each costs a histogram per run, and
    /// 20,000 of them took the process to gigabytes.
    #[test]
    fn response_time_names_are_capped() {
        let names = |n: usize| {
            let steps: String = (0..n).map(|i| format!("<nop start_rtd=\"r{i}\"/>\n<nop rtd=\"r{i}\"/>\n")).collect();
            format!("<scenario>\n<send><![CDATA[OPTIONS sip:x SIP/2.0\r\n\r\n]]></send>\n{steps}</scenario>")
        };
        assert_eq!(parse(&names(MAX_RTDS)).unwrap().rtds.len(), MAX_RTDS);
        let e = parse(&names(20_000)).unwrap_err();
        assert!(
            matches!(e, ScenarioError::Bad { .. }) && e.to_string().contains("more than 20 response-time names"),
            "{e}"
        );
    }

    /// A file nested thousands of levels deep is refused before roxmltree,
    /// whose parser recurses once per level, can overflow the stack; a
    /// scenario with CDATA and self-closed elements at the limit's depth
    /// counts only its elements.
    #[test]
    fn deep_nesting_is_refused_with_its_line() {
        let deep = format!("<scenario>\n{}{}</scenario>", "<a>".repeat(20_000), "</a>".repeat(20_000));
        assert_eq!(parse(&deep).unwrap_err(), ScenarioError::TooDeep { line: 2 });
        let ok = format!(
            "<scenario>{}<send><![CDATA[<a><b><c>]]></send><nop/>{}</scenario>",
            "<x>".repeat(MAX_DEPTH - 3),
            "</x>".repeat(MAX_DEPTH - 3)
        );
        assert!(!matches!(parse(&ok), Err(ScenarioError::TooDeep { .. })), "{:?}", parse(&ok));
    }

    /// Each reference to a DTD entity copies its text: a few hundred
    /// kilobytes of references to a large entity expand to gigabytes, so a
    /// declaration is refused before anything is expanded.
    #[test]
    fn entity_declarations_are_refused_before_expansion() {
        let laughs = format!(
            "<?xml version=\"1.0\"?>\n<!DOCTYPE scenario [\n<!ENTITY a \"{}\">\n]>\n<scenario><send><![CDATA[\
             OPTIONS sip:x SIP/2.0\n]]></send><nop><action><log message=\"{}\"/></action></nop></scenario>",
            "x".repeat(100_000),
            "&a;".repeat(80_000)
        );
        assert_eq!(parse(&laughs).unwrap_err(), ScenarioError::EntityDeclaration { line: 3, name: "a".into() });
    }

    /// Response steps after a run of sends share the list of methods they
    /// take: 2,000 sends of distinct methods and 2,000 recvs hold one list,
    /// not 2,000 copies of 2,000 names.
    #[test]
    fn response_steps_share_their_cseq_methods() {
        // Methods A, B, ..., Z, BA, BB, ...: base 26 in letters.
        let method = |mut i: usize| {
            let mut m = Vec::new();
            loop {
                m.insert(0, b'A' + (i % 26) as u8);
                i /= 26;
                if i == 0 {
                    return String::from_utf8(m).unwrap();
                }
            }
        };
        let sends: String =
            (0..2000).map(|i| format!("<send><![CDATA[{} sip:x SIP/2.0\r\n\r\n]]></send>\n", method(i))).collect();
        let recvs = "<recv response=\"200\"/>\n".repeat(2000);
        let s = parse(&format!("<scenario>\n{sends}{recvs}</scenario>")).unwrap();
        let lists: Vec<&Arc<[String]>> = s
            .steps
            .iter()
            .filter_map(|step| match &step.kind {
                StepKind::Recv(r) => Some(&r.cseq_methods),
                _ => None,
            })
            .collect();
        assert_eq!((lists.len(), lists[0].len()), (2000, 2000));
        assert!(lists.iter().all(|l| Arc::ptr_eq(l, lists[0])));
        assert_eq!(lists[0][1999], method(1999));
    }

    /// 40,000 labels, each the target of a jump, with 150-character names:
    /// 80,000 elements in 13 MB. Reading is one pass over the text (lines
    /// from an index of line ends): 0.3 s in a release build. Scanning the
    /// text from its start for every element's line took 78 s, so a bound
    /// of 20 s tells the two apart with a wide margin either side.
    #[test]
    fn a_scenario_of_forty_thousand_labels_reads_in_one_pass() {
        let name = "l".repeat(150);
        let mut xml = String::from("<scenario>\n<send><![CDATA[OPTIONS sip:x SIP/2.0]]></send>\n");
        for i in 0..40_000 {
            xml.push_str(&format!("<nop next=\"{name}{i}\"/>\n<label id=\"{name}{i}\"/>\n"));
        }
        xml.push_str("</scenario>\n");
        let (done, wait) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(parse(&xml).map(|s| (s.steps.len(), s.steps[80_000].line, s.steps[1].next)));
        });
        let parsed = wait.recv_timeout(Duration::from_secs(20)).expect("read within 20 s");
        assert_eq!(parsed, Ok((80_001, 80_002, Some(2))));
    }

    #[test]
    fn labels_and_jumps_resolve() {
        let s = parse(
            "<scenario><send><![CDATA[OPTIONS sip:x SIP/2.0\n]]></send>\
             <recv response=\"200\" timeout=\"100\" ontimeout=\"end\" next=\"end\"/>\
             <nop/><label id=\"end\"/></scenario>",
        )
        .unwrap();
        let StepKind::Recv(r) = &s.steps[1].kind else { panic!() };
        assert_eq!((r.ontimeout, s.steps[1].next, r.timeout), (Some(3), Some(3), Some(Duration::from_millis(100))));
        assert_eq!(*r.cseq_methods, ["OPTIONS"]);
    }
}
