//! A corpus flow (`corpus/<flow>/NN-<ue|pcscf>-<name>.sip`, the call flows
//! of the 2005 SigComp performance thesis) replayed as load: the UE's side
//! as a client scenario (its requests sent, the P-CSCF's responses
//! awaited) and the P-CSCF's as a server scenario, each call with fresh
//! Call-ID, tags and branches and otherwise the flow's own bytes.
//!
//! What is made fresh: the Call-ID (`[call_id]`); the UE's From tag and
//! the branch of its top Via (`[branch]`; an ACK of a non-2xx final
//! response keeps its INVITE's branch, RFC 3261 §17.1.1.3); the To tag the
//! P-CSCF gives, which the UE's later requests echo (`[peer_tag_param]`).
//! A P-CSCF response copies the Via lines of the request it answers and
//! the From and To of the last request (RFC 3261 §8.2.6.2); its
//! Content-Length is recomputed.

use std::path::Path;

use crate::scenario::{Expect, Recv, Scenario, ScenarioError, Send, Sent, Step, StepKind, Template};

/// One message of a flow.
#[derive(Debug, Clone)]
pub struct FlowMessage {
    /// Whether the UE sent it (`ue` in the file name) rather than the P-CSCF (`pcscf`).
    pub ue: bool,
    /// The `<name>` part of the file name (`invite`, `180-ringing`, ...).
    pub name: String,
    /// The file's text (UTF-8, or ISO-8859-1 as [`crate::scenario::decode_text`] reads it).
    pub text: String,
}

fn err(why: String) -> ScenarioError {
    ScenarioError::Injection(why)
}

/// Reads a flow directory: its `.sip` files in order.
pub fn read_flow(dir: &Path) -> Result<Vec<FlowMessage>, ScenarioError> {
    let entries = std::fs::read_dir(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    let mut files: Vec<(u32, std::path::PathBuf, String, bool)> = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let Some(stem) = name.strip_suffix(".sip") else { continue };
        let mut parts = stem.splitn(3, '-');
        let (Some(n), Some(sender), Some(what)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(err(format!("{}: not NN-<ue|pcscf>-<name>.sip", path.display())));
        };
        let n = n.parse::<u32>().map_err(|_| err(format!("{}: not NN-<ue|pcscf>-<name>.sip", path.display())))?;
        let ue = match sender {
            "ue" => true,
            "pcscf" => false,
            _ => return Err(err(format!("{}: the sender is ue or pcscf", path.display()))),
        };
        files.push((n, path, what.to_string(), ue));
    }
    if files.is_empty() {
        return Err(err(format!("{}: no .sip messages", dir.display())));
    }
    files.sort_by_key(|f| f.0);
    files
        .into_iter()
        .map(|(_, path, name, ue)| {
            let bytes = std::fs::read(&path).map_err(|e| err(format!("{}: {e}", path.display())))?;
            Ok(FlowMessage { ue, name, text: crate::scenario::decode_text(&bytes) })
        })
        .collect()
}

fn header_name(line: &str) -> Option<&str> {
    let colon = line.find(':')?;
    let name = line[..colon].trim();
    (!name.is_empty() && !name.contains(' ')).then_some(name)
}

fn is(name: &str, long: &str, compact: &str) -> bool {
    name.eq_ignore_ascii_case(long) || name.eq_ignore_ascii_case(compact)
}

/// The header lines and body of a message.
fn split(text: &str) -> (Vec<&str>, &str) {
    let (head, body) = text.split_once("\r\n\r\n").or_else(|| text.split_once("\n\n")).unwrap_or((text, ""));
    (head.lines().collect(), body)
}

fn cseq_method(text: &str) -> Option<String> {
    let (head, _) = split(text);
    head.iter()
        .find(|l| header_name(l).is_some_and(|n| n.eq_ignore_ascii_case("CSeq")))
        .and_then(|l| l.split_whitespace().nth(2))
        .map(str::to_string)
}

fn to_has_tag(text: &str) -> bool {
    let (head, _) = split(text);
    head.iter().any(|l| header_name(l).is_some_and(|n| is(n, "To", "t")) && l.contains(";tag="))
}

/// `line` without its `;tag=...` parameter.
fn without_tag(line: &str) -> String {
    match line.find(";tag=") {
        Some(at) => {
            let rest = &line[at + 5..];
            let end = rest.find([';', ',', ' ']).unwrap_or(rest.len());
            format!("{}{}", &line[..at], &rest[end..])
        }
        None => line.to_string(),
    }
}

/// `via` with its branch replaced by `branch` (added if absent).
fn with_branch(via: &str, branch: &str) -> String {
    match via.find(";branch=") {
        Some(at) => {
            let rest = &via[at + 8..];
            let end = rest.find([';', ',', ' ']).unwrap_or(rest.len());
            format!("{};branch={branch}{}", &via[..at], &rest[end..])
        }
        None => format!("{via};branch={branch}"),
    }
}

fn literal(line: &str) -> String {
    line.to_string()
}

/// The UE's side (a client scenario) and the P-CSCF's (a server scenario)
/// of a flow.
pub fn scenarios(flow: &[FlowMessage], name: &str) -> Result<(Scenario, Scenario), ScenarioError> {
    if !flow.first().is_some_and(|m| m.ue) {
        return Err(err(format!("flow {name}: the first message must be the UE's")));
    }
    let mut client = Vec::new();
    let mut server = Vec::new();
    // Step index, in the client scenario, of each UE request by method (the
    // last one), for the branch of an ACK of a non-2xx response.
    let mut last_request_step: Vec<(String, usize)> = Vec::new();
    let mut last_final_to_invite: Option<u16> = None;
    let mut last_ue_to_tag = false;
    for (i, m) in flow.iter().enumerate() {
        let (head, body) = split(&m.text);
        let Some(start) = head.first() else { return Err(err(format!("flow {name}: message {} is empty", i + 1))) };
        let mut lines: Vec<String> = vec![literal(start)];
        if m.ue {
            let method = start.split_whitespace().next().unwrap_or("").to_string();
            let step = client.len();
            let branch = if method == "ACK" && last_final_to_invite.is_some_and(|c| c >= 300) {
                let invite = last_request_step.iter().rev().find(|(m, _)| m == "INVITE").map_or(step, |(_, s)| *s);
                format!("[branch{:+}]", invite as i64 - step as i64)
            } else {
                "[branch]".to_string()
            };
            let mut via_done = false;
            for l in &head[1..] {
                let Some(h) = header_name(l) else {
                    lines.push(literal(l));
                    continue;
                };
                if is(h, "Via", "v") && !via_done {
                    via_done = true;
                    lines.push(with_branch(l, &branch));
                } else if is(h, "Call-ID", "i") {
                    lines.push(format!("{h}: [call_id]"));
                } else if is(h, "From", "f") {
                    let base = without_tag(l);
                    lines.push(if l.contains(";tag=") { format!("{base};tag=[pid]ue[call_number]") } else { base });
                } else if is(h, "To", "t") {
                    lines.push(if l.contains(";tag=") {
                        format!("{}[peer_tag_param]", without_tag(l))
                    } else {
                        literal(l)
                    });
                } else if is(h, "Content-Length", "l") {
                    lines.push(format!("{h}: [len]"));
                } else {
                    lines.push(literal(l));
                }
            }
            last_ue_to_tag = to_has_tag(&m.text);
            last_request_step.push((method.clone(), step));
            let text = format!("{}\n\n{}", lines.join("\n"), body);
            let (template, _) = Template::compile(&text, 0)?;
            client.push(step_of(StepKind::Send(Send { template, retrans: None, what: Sent::Request(method.clone()) })));
            server.push(step_of(StepKind::Recv(recv(Expect::Request(method), Vec::new(), false))));
        } else {
            let code: u16 = start
                .split_whitespace()
                .nth(1)
                .and_then(|c| c.parse().ok())
                .ok_or_else(|| err(format!("flow {name}: message {} ({}) is no response", i + 1, m.name)))?;
            let method =
                cseq_method(&m.text).ok_or_else(|| err(format!("flow {name}: message {} has no CSeq", i + 1)))?;
            if method == "INVITE" && code >= 200 {
                last_final_to_invite = Some(code);
            }
            let mut vias_done = false;
            for l in &head[1..] {
                let Some(h) = header_name(l) else {
                    lines.push(literal(l));
                    continue;
                };
                if is(h, "Via", "v") {
                    if !vias_done {
                        vias_done = true;
                        lines.push(format!("[last_Via_of_{method}:]"));
                    }
                } else if is(h, "Call-ID", "i") {
                    lines.push(format!("{h}: [call_id]"));
                } else if is(h, "From", "f") {
                    lines.push("[last_From:]".into());
                } else if is(h, "To", "t") {
                    lines.push(if l.contains(";tag=") && !last_ue_to_tag {
                        "[last_To:];tag=[pid]pc[call_number]".into()
                    } else {
                        "[last_To:]".into()
                    });
                } else if is(h, "Content-Length", "l") {
                    lines.push(format!("{h}: [len]"));
                } else {
                    lines.push(literal(l));
                }
            }
            let text = format!("{}\n\n{}", lines.join("\n"), body);
            let (template, _) = Template::compile(&text, 0)?;
            server.push(step_of(StepKind::Send(Send { template, retrans: None, what: Sent::Response(code) })));
            client.push(step_of(StepKind::Recv(recv(Expect::Response(code), vec![method], code < 200))));
        }
    }
    let client = Scenario {
        name: format!("{name} (ue)"),
        steps: client,
        rtds: Vec::new(),
        needs_last_message: true,
        fields_used: 0,
        response_time_repartition: Vec::new(),
        repartition_rtds: 0,
        call_length_repartition: Vec::new(),
        has_logs: false,
    };
    let server = Scenario {
        name: format!("{name} (pcscf)"),
        steps: server,
        rtds: Vec::new(),
        needs_last_message: true,
        fields_used: 0,
        response_time_repartition: Vec::new(),
        repartition_rtds: 0,
        call_length_repartition: Vec::new(),
        has_logs: false,
    };
    Ok((client, server))
}

fn step_of(kind: StepKind) -> Step {
    Step { kind, next: None, start_rtd: None, rtd: None, line: 0, logs: Vec::new() }
}

fn recv(expect: Expect, cseq_methods: Vec<String>, optional: bool) -> Recv {
    Recv {
        expect,
        cseq_methods: cseq_methods.into(),
        optional,
        timeout: None,
        ontimeout: None,
        rrs: false,
        auth: false,
        verify_auth: false,
    }
}

/// Both sides of the flow in `dir`.
pub fn flow_scenarios(dir: &Path) -> Result<(Scenario, Scenario), ScenarioError> {
    let name = dir.file_name().map_or("flow".into(), |n| n.to_string_lossy().into_owned());
    scenarios(&read_flow(dir)?, &name)
}
