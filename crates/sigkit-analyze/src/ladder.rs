//! Each call of a capture as a call flow (a "ladder"), the way sngrep's
//! call flow window draws it: one column per address that sent or received
//! a message of the call, in order of first appearance, and per message an
//! arrow from sender to receiver under the method or status it carried.
//!
//! A call is the messages sharing a Call-ID (RFC 3261 §8.1.1.4), over
//! every flow of the capture: a call through a proxy has its messages on
//! the flow each side of it, and the ladder shows both. Each message gives
//! its time since the call's first message and its bytes as SIP and as
//! SigComp: as the capture carried it where it came as SigComp, otherwise
//! as the simulated endpoints of [`LADDER_VARIANT`] would have sent it
//! (feedback and state from the flow's earlier messages included, as the
//! flow's table counts it).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::FlowReport;

/// The SigComp variant whose simulated sizes a ladder shows for messages
/// that came plain: the dynamic mechanism with LZSS, what the SigComp
/// performance thesis's Appendix H measurement ran; the first simulated
/// variant when that one was not run.
pub const LADDER_VARIANT: &str = "sigcomp dynamic/lzss";

/// One call's messages, in capture order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallLadder {
    /// The Call-ID.
    pub call_id: String,
    /// The addresses (address:port) of the ladder's columns, in order of
    /// first appearance.
    pub endpoints: Vec<String>,
    /// The simulated variant [`LadderMessage::sigcomp_bytes`] gives for
    /// messages that came plain; `None` when no SigComp variant ran.
    pub sigcomp_variant: Option<String>,
    /// Its messages, in the order the capture completed them.
    pub messages: Vec<LadderMessage>,
}

/// One message of a call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LadderMessage {
    /// The flow that carried it ([`FlowReport::id`]).
    pub flow: usize,
    /// Its number within that flow ([`crate::MessageReport::index`]).
    pub index: usize,
    /// The capture's frame (from 1) that completed it.
    pub frame: usize,
    /// Seconds since the call's first message.
    pub time_s: f64,
    /// The sender's column in [`CallLadder::endpoints`].
    pub from: usize,
    /// The receiver's column.
    pub to: usize,
    /// The method of a request; the status code and CSeq method of a
    /// response ("200 INVITE").
    pub label: String,
    /// Its size as SIP, bytes.
    pub sip_bytes: usize,
    /// Its size as SigComp, bytes: as captured if
    /// [`LadderMessage::sigcomp_captured`], else as
    /// [`CallLadder::sigcomp_variant`] would have sent it (`None` without
    /// one).
    pub sigcomp_bytes: Option<usize>,
    /// It came as SigComp in the capture.
    pub sigcomp_captured: bool,
}

/// The name of the variant ladders show: [`LADDER_VARIANT`] if it ran,
/// else the first SigComp variant without lower-layer headers.
fn ladder_variant(flows: &[FlowReport]) -> Option<String> {
    let names = || flows.iter().flat_map(|f| &f.variants).filter(|v| v.headers == "none").map(|v| v.name.as_str());
    names().find(|n| *n == LADDER_VARIANT).or_else(|| names().find(|n| n.starts_with("sigcomp "))).map(str::to_string)
}

/// The ladders of the calls in `flows`, in order of each call's first
/// message. Messages without a Call-ID (headers that do not parse) are in
/// no ladder.
pub fn calls(flows: &[FlowReport]) -> Vec<CallLadder> {
    let variant = ladder_variant(flows);
    // (frame, flow, index) of each message, by call.
    let mut by_call: HashMap<&str, Vec<(usize, usize, usize)>> = HashMap::new();
    for (f, flow) in flows.iter().enumerate() {
        for (i, m) in flow.messages.iter().enumerate() {
            if let Some(call) = &m.call_id {
                by_call.entry(call.as_str()).or_default().push((m.frame, f, i));
            }
        }
    }
    let mut ladders: Vec<(usize, CallLadder)> = by_call
        .into_iter()
        .map(|(call_id, mut ids)| {
            ids.sort_unstable();
            let first = ids[0];
            (first.0, ladder(call_id, &ids, flows, variant.as_deref()))
        })
        .collect();
    ladders.sort_by(|a, b| (a.0, &a.1.call_id).cmp(&(b.0, &b.1.call_id)));
    ladders.into_iter().map(|(_, l)| l).collect()
}

fn ladder(call_id: &str, ids: &[(usize, usize, usize)], flows: &[FlowReport], variant: Option<&str>) -> CallLadder {
    let mut endpoints: Vec<String> = Vec::new();
    let mut column = |address: &str| match endpoints.iter().position(|e| e == address) {
        Some(i) => i,
        None => {
            endpoints.push(address.to_string());
            endpoints.len() - 1
        }
    };
    let start = flows[ids[0].1].messages[ids[0].2].time_s;
    let mut messages = Vec::with_capacity(ids.len());
    for &(frame, f, i) in ids {
        let flow = &flows[f];
        let m = &flow.messages[i];
        let (src, dst) = if m.direction == "a->b" { (&flow.a, &flow.b) } else { (&flow.b, &flow.a) };
        let (from, to) = (column(src.as_str()), column(dst.as_str()));
        let simulated = variant
            .and_then(|name| flow.variants.iter().find(|v| v.name == name))
            .and_then(|v| v.sizes.get(i).copied());
        messages.push(LadderMessage {
            flow: flow.id,
            index: m.index,
            frame,
            time_s: (m.time_s - start).max(0.0),
            from,
            to,
            label: m.summary.clone(),
            sip_bytes: m.sip_bytes,
            sigcomp_bytes: if m.came_as_sigcomp { Some(m.captured_bytes) } else { simulated },
            sigcomp_captured: m.came_as_sigcomp,
        });
    }
    CallLadder { call_id: call_id.to_string(), endpoints, sigcomp_variant: variant.map(str::to_string), messages }
}

/// Width of the time column, characters.
const TIME_WIDTH: usize = 10;

/// One line of the drawing, written into by column.
struct Line(Vec<char>);

impl Line {
    fn new() -> Line {
        Line(Vec::new())
    }

    fn put(&mut self, at: usize, s: &str) {
        for (k, c) in s.chars().enumerate() {
            if self.0.len() <= at + k {
                self.0.resize(at + k + 1, ' ');
            }
            self.0[at + k] = c;
        }
    }

    /// `s` centred on column `x`.
    fn centre(&mut self, x: usize, s: &str) {
        self.put(x.saturating_sub(s.chars().count() / 2), s);
    }

    fn finish(self, out: &mut String) {
        let s: String = self.0.into_iter().collect();
        out.push_str(s.trim_end());
        out.push('\n');
    }
}

/// The ladder as text, sngrep-style: the endpoints across the top, a
/// lifeline `│` under each, and per message two lines, the label centred
/// between sender and receiver and under it the arrow (`──>` or `<──`)
/// with the time since the call's first message on the left and the
/// bytes as SIP and as SigComp on the right.
pub fn text(ladder: &CallLadder) -> String {
    let mut out = String::new();
    let duration = ladder.messages.last().map_or(0.0, |m| m.time_s);
    let _ = writeln!(
        out,
        "call {}: {} messages in {:.6} s between {} endpoints",
        ladder.call_id,
        ladder.messages.len(),
        duration,
        ladder.endpoints.len()
    );
    let simulated = match &ladder.sigcomp_variant {
        Some(v) => format!("otherwise as {v} would have sent it"),
        None => "no SigComp variant simulated".to_string(),
    };
    let _ = writeln!(out, "bytes: SIP -> SigComp (\"captured\": as the capture carried it; {simulated})");
    let name_width = ladder.endpoints.iter().map(|e| e.chars().count()).max().unwrap_or(1);
    let label_width = ladder.messages.iter().map(|m| m.label.chars().count()).max().unwrap_or(0);
    let gap = (name_width + 3).max(label_width + 6).max(16);
    let lifeline = |k: usize| TIME_WIDTH + 2 + name_width / 2 + k * gap;
    let last = lifeline(ladder.endpoints.len().saturating_sub(1));
    let bytes_at = last + name_width.div_ceil(2) + 3;
    let with_lifelines = || {
        let mut line = Line::new();
        for k in 0..ladder.endpoints.len() {
            line.put(lifeline(k), "│");
        }
        line
    };

    let mut names = Line::new();
    let mut rule = Line::new();
    for (k, e) in ladder.endpoints.iter().enumerate() {
        names.centre(lifeline(k), e);
        rule.centre(lifeline(k), &"─".repeat(name_width));
        rule.put(lifeline(k), "┬");
    }
    names.finish(&mut out);
    rule.finish(&mut out);
    let mut head = with_lifelines();
    head.put(0, &format!("{:>TIME_WIDTH$}", "time_s"));
    head.put(bytes_at, "   SIP -> SigComp");
    head.finish(&mut out);

    for m in &ladder.messages {
        let (a, b) = (lifeline(m.from), lifeline(m.to));
        let mut label = with_lifelines();
        let mut arrow = with_lifelines();
        if a == b {
            // A message an address sent to itself: a loop back to its lifeline.
            label.put(a + 1, "───┐ ");
            label.put(a + 6, &m.label);
            arrow.put(a + 1, "<──┘");
        } else {
            let (lo, hi) = (a.min(b), a.max(b));
            label.centre((lo + hi).div_ceil(2), &m.label);
            // `│ ───> │` or `│ <─── │`: a space inside each lifeline, the
            // line crossing any lifeline between them.
            let mut shaft = "─".repeat(hi - lo - 4);
            if b > a {
                shaft.push('>');
            } else {
                shaft.insert(0, '<');
            }
            arrow.put(lo + 2, &shaft);
        }
        arrow.put(0, &format!("{:>TIME_WIDTH$.6}", m.time_s));
        let sigcomp = m.sigcomp_bytes.map_or_else(|| "-".to_string(), |n| n.to_string());
        let captured = if m.sigcomp_captured { " captured" } else { "" };
        arrow.put(bytes_at, &format!("{:>6} -> {sigcomp:>6}{captured}", m.sip_bytes));
        label.finish(&mut out);
        arrow.finish(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(from: usize, to: usize, label: &str, time_s: f64) -> LadderMessage {
        LadderMessage {
            flow: 1,
            index: 1,
            frame: 1,
            time_s,
            from,
            to,
            label: label.into(),
            sip_bytes: 900,
            sigcomp_bytes: Some(300),
            sigcomp_captured: false,
        }
    }

    #[test]
    fn arrows_point_from_sender_to_receiver_and_cross_the_columns_between() {
        let ladder = CallLadder {
            call_id: "c@h".into(),
            endpoints: vec!["10.0.0.1:5060".into(), "10.0.0.2:5060".into(), "10.0.0.3:5060".into()],
            sigcomp_variant: Some(LADDER_VARIANT.into()),
            messages: vec![
                message(0, 2, "INVITE", 0.0),
                LadderMessage { sigcomp_captured: true, ..message(2, 1, "200 INVITE", 0.25) },
            ],
        };
        let text = text(&ladder);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "call c@h: 2 messages in 0.250000 s between 3 endpoints");
        assert_eq!(
            &lines[2..],
            [
                "            10.0.0.1:5060   10.0.0.2:5060   10.0.0.3:5060",
                "            ──────┬──────   ──────┬──────   ──────┬──────",
                "    time_s        │               │               │            SIP -> SigComp",
                "                  │            INVITE             │",
                "  0.000000        │ ────────────────────────────> │            900 ->    300",
                "                  │               │  200 INVITE   │",
                "  0.250000        │               │ <──────────── │            900 ->    300 captured",
            ]
        );
    }
}
