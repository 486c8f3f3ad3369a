//! SIPp's scenario screen, as text: the run's header lines (rate, port,
//! time, calls, peer; calls in progress and their peak; messages for no
//! call) and a row per step of the scenario with its arrow and method or
//! code, and the messages, retransmissions, timeouts and unexpected
//! messages counted at it, in the columns SIPp 3.6 prints.
//!
//! [`statistics_screen`] is SIPp's statistics screen (calls and response
//! times over the last period and since the start).
//!
//! Drawing is apart from counting: [`scenario_screen`] is a pure function
//! of what the run is ([`ScreenInfo`], fixed) and a [`Progress`]
//! snapshot, which the run publishes every `progress_every` (SIPp's
//! `-f`); the caller draws the lines where it likes (a terminal, SIPp's
//! `-trace_screen` file).
//!
//! Where sigkit's screen differs from SIPp's: SIPp's scheduler resolution
//! and open-socket lines, which have no counterpart here, give way to the
//! calls successful and failed, the retransmissions and the call rate
//! (from SIPp's statistics screen); its title is SIPp's, though sigkit
//! has this one screen; a send shows a
//! timeout count when the engine can time it out (a request other than
//! ACK, or a message with `retrans`), not only with `retrans`.

use std::net::SocketAddr;
use std::time::Duration;

use crate::runtime::Progress;
use crate::scenario::{Expect, Pause, Scenario, Sent, StepKind};

/// What a row shows besides its counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowKind {
    /// A `send` of this method or code; `timeout`: whether it can time out.
    Send {
        /// The method, or the status code as text.
        label: String,
        /// Whether the row has a timeout count.
        timeout: bool,
    },
    /// A `recv` of this method or code.
    Recv {
        /// The method, or the status code as text.
        label: String,
    },
    /// A `pause` or `timewait`, its length as SIPp describes it (`500ms`, `1.5s`, `10ms/20ms`).
    Pause {
        /// The length.
        desc: String,
    },
    /// A `nop`.
    Nop,
}

/// One row of the table: a step of the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The step's index in the scenario's `steps` (and the snapshot's `scenario_steps`).
    pub step: usize,
    /// What it is.
    pub kind: RowKind,
    /// `B-RTD1` (the step starts response time 1) or `E-RTD1` (it ends it), or empty.
    pub rtd: String,
}

/// What the screen shows that does not change during a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScreenInfo {
    /// Whether calls are placed (a UAC) rather than answered.
    pub client: bool,
    /// The local port.
    pub local_port: u16,
    /// Where a UAC's calls go.
    pub remote: Option<SocketAddr>,
    /// `UDP` or `TCP`.
    pub transport: &'static str,
    /// The rate period (SIPp's `-rp`).
    pub rate_period: Duration,
    /// The hold time, a `<pause/>` without its own length (SIPp's `-d`).
    pub hold: Duration,
    /// Calls in progress at most (SIPp's `-l`).
    pub limit: Option<usize>,
    /// Calls in all (SIPp's `-m`).
    pub max_calls: Option<u64>,
    /// A row per step shown (labels are not).
    pub rows: Vec<Row>,
    /// The scenario's response-time names (its `rtds`), for the statistics screen.
    pub rtd_names: Vec<String>,
}

/// SIPp's `time_string`: a length in milliseconds as its screen shows it.
pub fn time_string(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10_000.0 {
        if ms.fract() == 0.0 {
            format!("{}ms", ms as u64)
        } else if ms < 1000.0 {
            format!("{ms:.2}ms")
        } else {
            format!("{ms:.1}ms")
        }
    } else if ms < 60_000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else {
        let s = (ms / 1000.0) as u64;
        let (h, m) = (s / 3600, s / 60 % 60);
        if h == 0 {
            format!("{m}:{:02}", s % 60)
        } else {
            format!("{h}:{m:02}:{:02}", s % 60)
        }
    }
}

/// The rows of `scenario`'s screen; `hold` is the length of a `<pause/>` without its own.
pub fn rows_of(scenario: &Scenario, hold: Duration) -> Vec<Row> {
    scenario
        .steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let kind = match &s.kind {
                StepKind::Send(send) => {
                    let (label, timeout) = match &send.what {
                        Sent::Request(m) => (m.clone(), m != "ACK" || send.retrans.is_some()),
                        Sent::Response(code) => (code.to_string(), send.retrans.is_some()),
                    };
                    RowKind::Send { label, timeout }
                }
                StepKind::Recv(r) => RowKind::Recv {
                    label: match &r.expect {
                        Expect::Response(code) => code.to_string(),
                        Expect::Request(m) => m.clone(),
                    },
                },
                StepKind::Pause(p) => RowKind::Pause {
                    desc: match p {
                        Pause::Default => time_string(hold),
                        Pause::Fixed(d) => time_string(*d),
                        Pause::Uniform(a, b) => format!("{}/{}", time_string(*a), time_string(*b)),
                        Pause::Exponential(mean) => format!("Exp({})", time_string(*mean)),
                    },
                },
                StepKind::Timewait(d) => RowKind::Pause { desc: time_string(*d) },
                StepKind::Nop => RowKind::Nop,
                StepKind::Label => return None,
            };
            let rtd = match (s.start_rtd, s.rtd) {
                (Some(n), _) => format!("B-RTD{}", n + 1),
                (None, Some(n)) => format!("E-RTD{}", n + 1),
                _ => String::new(),
            };
            Some(Row { step: i, kind, rtd })
        })
        .collect()
}

/// The screen's first line.
pub const TITLE: &str = "------------------------------ Scenario Screen -------- [1-9]: Change Screen --";

/// SIPp's last line: the run over, quitting, paused, or the keys.
fn bottom_line(info: &ScreenInfo, p: &Progress) -> &'static str {
    if p.finished {
        "------------------------------ Test Terminated --------------------------------"
    } else if p.quitting {
        "------- Waiting for active calls to end. Press [q] again to force exit. -------"
    } else if p.paused {
        "----------------- Traffic Paused - Press [p] again to resume ------------------"
    } else if info.client {
        "------ [+|-|*|/]: Adjust rate ---- [q]: Soft exit ---- [p]: Pause traffic -----"
    } else {
        "------------------------------ Sipp Server Mode -------------------------------"
    }
}

/// Seconds and hundredths, as SIPp's `Total-time`: `%6lu.%02lu s`.
fn total_time(elapsed_s: f64) -> String {
    let ms = (elapsed_s.max(0.0) * 1000.0) as u64;
    format!("{:>6}.{:02} s", ms / 1000, ms % 1000 / 10)
}

/// The header lines, down to the blank line before the table.
fn header(info: &ScreenInfo, p: &Progress) -> Vec<String> {
    let mut lines = Vec::with_capacity(9);
    let total = p.attempted;
    if info.client {
        let rate = format!("{:.1}({} ms)/{:.3}s", p.rate, info.hold.as_millis(), info.rate_period.as_secs_f64());
        let remote = info.remote.map_or_else(|| "-".to_string(), |r| r.to_string());
        lines.push("  Call rate (length)   Port   Total-time  Total-calls  Remote-host".into());
        lines.push(format!(
            "  {rate:<17}   {:<5} {}     {total:>8}  {remote}({})",
            info.local_port,
            total_time(p.elapsed_s),
            info.transport
        ));
    } else {
        lines.push("  Port   Total-time  Total-calls  Transport".into());
        lines.push(format!("  {:<5} {}     {total:>8}  {}", info.local_port, total_time(p.elapsed_s), info.transport));
    }
    lines.push(String::new());
    let period = match info.max_calls {
        Some(m) if info.client && total >= m => format!("Call limit {m} hit, {:.1} s period", p.period_s),
        _ => format!("{} new calls during {:.3} s period", p.period_created, p.period_s),
    };
    // The second column starts at 42, as in SIPp 3.6's screen.
    lines.push(format!("  {period:<39} {} successful, {} failed calls", p.successful, p.failed));
    let calls = match info.limit {
        Some(l) => format!("{} calls (limit {l})", p.active),
        None => format!("{} calls", p.active),
    };
    lines.push(format!("  {calls:<39} Peak was {} calls, after {} s", p.peak_active, p.peak_at_s as u64));
    let dead = format!("{} dead call msg (discarded)", p.dead_call);
    if info.client {
        lines.push(format!("  {dead:<39} {} out-of-call msg (discarded)", p.out_of_call));
    } else {
        lines.push(format!("  {dead:<38}"));
    }
    // SIPp's statistics screen's call rate: calls created per second,
    // since the previous refresh and since the start.
    let per_s = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    let retrans = format!("{} retransmissions", p.retransmissions);
    lines.push(format!(
        "  {retrans:<39} Call rate {:.1} cps ({:.1} overall)",
        per_s(p.period_created, p.period_s),
        per_s(p.attempted, p.elapsed_s)
    ));
    if p.auto_answered > 0 {
        lines.push(format!("  {} auto-answered (-aa)", p.auto_answered));
    }
    lines.push(String::new());
    lines
}

/// One step's row, SIPp's columns: the arrow and label (22 characters
/// after two spaces), the response-time mark (8), then counts 9 wide
/// (the last 16, as SIPp 3.6.1 pads it).
fn row(info: &ScreenInfo, r: &Row, p: &Progress) -> String {
    let c = p.scenario_steps.get(r.step).copied().unwrap_or_default();
    let rtd = if r.rtd.is_empty() { "        ".to_string() } else { format!(" {} ", r.rtd) };
    let blank = "";
    match &r.kind {
        RowKind::Send { label, timeout } => {
            let arrow =
                if info.client { format!("  {label:>10} ----------> ") } else { format!("  <---------- {label:<10} ") };
            let timeout = if *timeout || c.timeouts > 0 { c.timeouts.to_string() } else { String::new() };
            format!("{arrow}{rtd}{:<9} {:<9} {timeout:<9} {blank:<16}", c.sent, c.sent_retrans)
        }
        RowKind::Recv { label } => {
            let arrow =
                if info.client { format!("  {label:>10} <---------- ") } else { format!("  ----------> {label:<10} ") };
            format!("{arrow}{rtd}{:<9} {:<9} {:<9} {:<16}", c.recv, c.recv_retrans, c.timeouts, c.unexpected)
        }
        RowKind::Pause { desc } => {
            let len = desc.len().max(9);
            let head = if info.client {
                format!("       Pause [{desc:>9}]{}", " ".repeat(18usize.saturating_sub(len)))
            } else {
                format!("  [{desc:>9}] Pause{}", " ".repeat(23usize.saturating_sub(len)))
            };
            format!("{head}{:<9}                     {:<9}", c.sessions, c.unexpected)
        }
        RowKind::Nop => "              [ NOP ]              ".to_string(),
    }
}

/// The scenario screen for snapshot `p` of a run that `info` describes:
/// title, header, the table, and the bottom line, without line ends.
pub fn scenario_screen(info: &ScreenInfo, p: &Progress) -> Vec<String> {
    let mut lines = vec![TITLE.to_string()];
    lines.extend(header(info, p));
    lines.push("                                 Messages  Retrans   Timeout   Unexpected-Msg".into());
    lines.extend(info.rows.iter().map(|r| row(info, r, p)));
    lines.push(String::new());
    lines.push(bottom_line(info, p).to_string());
    lines
}

mod statistics;

pub use statistics::statistics_screen;

#[cfg(test)]
mod tests;
