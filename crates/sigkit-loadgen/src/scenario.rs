//! Scenarios: the steps one call goes through, read from SIPp's XML
//! scenario format (its common subset), with message templates compiled
//! once into literal bytes and keywords.
//!
//! Supported elements: `send` (`retrans`, `next`, `start_rtd`, `rtd`),
//! `recv` (`response` or `request`, `optional`, `next`, `timeout`,
//! `ontimeout`, `rrs`, `auth`, `start_rtd`, `rtd`), `pause`
//! (`milliseconds`, `min`/`max`, `distribution="uniform|exponential"`),
//! `timewait`, `nop`, `label`; `log` actions (written with `-trace_logs`).
//! `ResponseTimeRepartition` and `CallLengthRepartition` set the buckets of
//! the `-trace_stat` file; `Reference` is accepted and ignored, as are
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

use crate::xml_limits::LineIndex;
pub use crate::xml_limits::{MAX_DEPTH, MAX_ELEMENTS, MAX_SCENARIO_BYTES};

mod error;
mod template;

pub use error::ScenarioError;
pub use template::{Keys, Keyword, Segment, Template};

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
    /// SIPp's `<ResponseTimeRepartition value="10, 20, …"/>`: bucket borders in ms, ascending (empty without the
    /// element); the `-trace_stat` file counts response times below each border and from the last one up.
    pub response_time_repartition: Vec<u64>,
    /// How many of `rtds`, from the first, take the response-time buckets: those named before the element, as SIPp
    /// gives a table only to them.
    pub repartition_rtds: usize,
    /// SIPp's `<CallLengthRepartition value="…"/>`: call-length bucket borders in ms, ascending (empty without it).
    pub call_length_repartition: Vec<u64>,
    /// Whether any step has a `<log>` action (`-trace_logs` writes them).
    pub has_logs: bool,
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
    /// The messages of the step's `<action><log message="…"/></action>`, compiled (keywords expand per call).
    pub logs: Vec<Vec<Segment>>,
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
    parse_with_keys(xml, &Keys::default())
}

/// Parses a SIPp XML scenario whose templates may use `keys`: SIPp's `-key NAME VALUE` (`[NAME]`) and
/// `-set NAME VALUE` (`[$NAME]`), fixed for the run, so they are written into the templates as text.
pub fn parse_with_keys(xml: &str, keys: &Keys) -> Result<Scenario, ScenarioError> {
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
    let mut response_time_repartition = Vec::new();
    let mut repartition_rtds = 0;
    let mut call_length_repartition = Vec::new();
    // The methods the last response step took, and those sent since it
    // (in order, and as a set: a file may name thousands).
    let mut methods: Arc<[String]> = Arc::from(Vec::new());
    let mut sent_since_recv: Vec<String> = Vec::new();
    let mut sent_set: HashSet<String> = HashSet::new();
    for node in root.children().filter(|n| n.is_element()) {
        let line = line_of(node);
        let element = node.tag_name().name();
        let bad = |why: String| ScenarioError::Bad { line, element: element.into(), why };
        let mut logs = Vec::new();
        let kind = match element {
            "send" => {
                let (send, fields) = send_step(node, line, &line_of, keys, &mut logs)?;
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
                    action_logs(child, &line_of, keys, &mut logs)?;
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
                    action_logs(child, &line_of, keys, &mut logs)?;
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
            "ResponseTimeRepartition" => {
                response_time_repartition = repartition_of(node, line)?;
                // SIPp gives buckets to the response times named so far.
                repartition_rtds = rtds.len();
                continue;
            }
            "CallLengthRepartition" => {
                call_length_repartition = repartition_of(node, line)?;
                continue;
            }
            "Reference" | "User" | "Global" => continue,
            other => return Err(ScenarioError::Unsupported { line, element: other.into() }),
        };
        if let Some(l) = node.attribute("next") {
            jumps.push((steps.len(), l.to_string(), false));
        }
        let too_many = || bad(format!("more than {MAX_RTDS} response-time names (start_rtd, rtd)"));
        let start_rtd =
            node.attribute("start_rtd").map(|v| rtd_index(&mut rtds, v).ok_or_else(too_many)).transpose()?;
        let rtd = node
            .attribute("rtd")
            .filter(|v| *v != "false")
            .map(|v| rtd_index(&mut rtds, v).ok_or_else(too_many))
            .transpose()?;
        steps.push(Step { kind, next: None, start_rtd, rtd, line, logs });
    }
    resolve_jumps(&mut steps, &labels, jumps)?;
    if !steps.iter().any(|s| matches!(s.kind, StepKind::Send(_) | StepKind::Recv(_))) {
        return Err(ScenarioError::Empty);
    }
    let has_logs = steps.iter().any(|s| !s.logs.is_empty());
    Ok(Scenario {
        name,
        steps,
        rtds,
        needs_last_message: needs_last,
        fields_used,
        response_time_repartition,
        repartition_rtds,
        call_length_repartition,
        has_logs,
    })
}

/// The index of response time `v` (`rtd="true"` is "1"), added to `rtds`
/// when new; `None` past [`MAX_RTDS`] names.
fn rtd_index(rtds: &mut Vec<String>, v: &str) -> Option<usize> {
    let key = if v == "true" { "1" } else { v };
    match rtds.iter().position(|r| r == key) {
        Some(i) => Some(i),
        None if rtds.len() >= MAX_RTDS => None,
        None => {
            rtds.push(key.to_string());
            Some(rtds.len() - 1)
        }
    }
}

/// A repartition element's `value`: SIPp's comma-separated borders in ms,
/// sorted as SIPp sorts them.
fn repartition_of(node: roxmltree::Node, line: u32) -> Result<Vec<u64>, ScenarioError> {
    let bad = || ScenarioError::Bad {
        line,
        element: node.tag_name().name().into(),
        why: "value=\"…\" must be comma-separated numbers of ms (at most 100)".into(),
    };
    let value = node.attribute("value").ok_or_else(bad)?;
    let mut borders =
        value.split(',').map(|v| v.trim().parse::<u64>().map_err(|_| bad())).collect::<Result<Vec<_>, _>>()?;
    if borders.len() > 100 {
        return Err(bad());
    }
    borders.sort_unstable();
    Ok(borders)
}

/// A `<send>` step: its message template compiled (with the number of
/// injection fields it reads), what it sends, and its retransmission
/// interval.
fn send_step(
    node: roxmltree::Node,
    line: u32,
    line_of: &impl Fn(roxmltree::Node) -> u32,
    keys: &Keys,
    logs: &mut Vec<Vec<Segment>>,
) -> Result<(Send, u32), ScenarioError> {
    let bad = |why: &str| ScenarioError::Bad { line, element: "send".into(), why: why.into() };
    let text: String = node.children().filter(|c| c.is_text()).filter_map(|c| c.text()).collect();
    for child in node.children().filter(|c| c.is_element()) {
        action_logs(child, line_of, keys, logs)?;
    }
    let (template, fields) = Template::compile_with_keys(&text, line, keys)?;
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

/// Actions inside a step: each `log` message compiled into `logs`
/// (written with `-trace_logs`); `exec` and `warning` are accepted and
/// ignored (they change no message); others are errors, since skipping
/// them would change what the scenario sends.
fn action_logs(
    node: roxmltree::Node,
    line_of: &impl Fn(roxmltree::Node) -> u32,
    keys: &Keys,
    logs: &mut Vec<Vec<Segment>>,
) -> Result<(), ScenarioError> {
    match node.tag_name().name() {
        "action" => {
            for a in node.children().filter(|c| c.is_element()) {
                match a.tag_name().name() {
                    "log" => {
                        let message = a.attribute("message").unwrap_or("");
                        logs.push(template::compile_line(message, line_of(a), keys)?);
                    }
                    "exec" | "warning" => {}
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

    /// SIPp's bucket elements (sorted, given to the response times named
    /// before them), `<log>` actions compiled, and `-key`/`-set` values
    /// written into the templates.
    #[test]
    fn repartitions_logs_and_keys() {
        let mut keys = Keys::default();
        keys.key("who", "alice");
        keys.set("v", "x");
        let s = parse_with_keys(
            "<scenario><send start_rtd=\"a\"><![CDATA[OPTIONS sip:[who] SIP/2.0\n]]><action>\
             <log message=\"[$v] [call_id]\"/></action></send><recv response=\"200\" rtd=\"a\"/>\
             <ResponseTimeRepartition value=\"20, 10\"/><nop start_rtd=\"b\" rtd=\"b\"/>\
             <CallLengthRepartition value=\"100\"/></scenario>",
            &keys,
        )
        .unwrap();
        assert_eq!((s.response_time_repartition.as_slice(), s.repartition_rtds), (&[10, 20][..], 1));
        assert_eq!((s.rtds.len(), s.call_length_repartition.as_slice()), (2, &[100][..]));
        assert!(s.has_logs);
        assert_eq!(s.steps[0].logs, [vec![Segment::Literal(b"x ".to_vec()), Segment::Keyword(Keyword::CallId)]]);
        let StepKind::Send(send) = &s.steps[0].kind else { panic!() };
        assert_eq!(send.template.head[0], [Segment::Literal(b"OPTIONS sip:alice SIP/2.0".to_vec())]);
        // Without the keys, [who] and [$v] are unknown keywords.
        assert!(matches!(
            parse("<scenario><send><![CDATA[OPTIONS sip:[who] SIP/2.0\n]]></send></scenario>"),
            Err(ScenarioError::UnknownKeyword { .. })
        ));
        let e = parse(
            "<scenario><send><![CDATA[OPTIONS sip:x SIP/2.0\n]]></send><CallLengthRepartition value=\"a\"/></scenario>",
        )
        .unwrap_err();
        assert!(e.to_string().contains("comma-separated numbers"), "{e}");
        assert!(!built_in("uas").unwrap().has_logs);
        assert_eq!(built_in("uas").unwrap().response_time_repartition, [10, 20, 30, 40, 50, 100, 150, 200]);
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
