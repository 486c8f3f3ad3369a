//! SIPp's statistics screen, as text: the run's start, last reset and
//! current times, then each counter over the last period (since the
//! previous [`Progress`] update: SIPp resets its periodic counters at each
//! refresh) and since the start: elapsed time, call rate, calls created,
//! in progress, successful and failed, each response time's mean and the
//! calls' mean length, in SIPp 3.6's columns.

use std::time::{Duration, SystemTime};

use super::{bottom_line, ScreenInfo};
use crate::runtime::Progress;
use crate::trace::format::{format_time, hhmmss_us};

/// The screen's first line.
pub const TITLE: &str = "----------------------------- Statistics Screen ------- [1-9]: Change Screen --";

const CROSS: &str = "-------------------------+---------------------------+--------------------------";

fn txt(name: &str, value: &str) -> String {
    format!("  {name:<22.22} | {value:<52.52} ")
}

fn txt_col(name: &str, period: &str, total: &str) -> String {
    format!("  {name:<22.22} | {period:<25.25} | {total:<24.24} ")
}

fn two(name: &str, period: u64, total: u64) -> String {
    format!("  {name:<22.22} | {period:>8}                  | {total:>8}                 ")
}

fn ms(v: f64) -> String {
    hhmmss_us(v.max(0.0) as u64)
}

/// The statistics screen of snapshot `p` of a run that `info` describes
/// and that started at `start` on the clock.
pub fn statistics_screen(info: &ScreenInfo, p: &Progress, start: SystemTime) -> Vec<String> {
    let elapsed = Duration::from_secs_f64(p.elapsed_s.max(0.0));
    let period = Duration::from_secs_f64(p.period_s.clamp(0.0, p.elapsed_s.max(0.0)));
    let now = start + elapsed;
    let per_s = |n: u64, d: Duration| if d.is_zero() { 0.0 } else { n as f64 / d.as_secs_f64() };
    let (incoming, outgoing) =
        if info.client { ((0, 0), (p.period_created, p.attempted)) } else { ((p.period_created, p.attempted), (0, 0)) };
    let mut lines = vec![
        TITLE.to_string(),
        txt("Start Time", &format_time(start, false)),
        txt("Last Reset Time", &format_time(now - period, false)),
        txt("Current Time", &format_time(now, false)),
        CROSS.into(),
        "  Counter Name           | Periodic value            | Cumulative value".into(),
        CROSS.into(),
        txt_col("Elapsed Time", &ms(period.as_secs_f64() * 1000.0), &ms(elapsed.as_secs_f64() * 1000.0)),
        format!(
            "  {:<22.22} | {:>8.3} cps              | {:>8.3} cps             ",
            "Call Rate",
            per_s(p.period_created, period),
            per_s(p.attempted, elapsed)
        ),
        CROSS.into(),
        two("Incoming calls created", incoming.0, incoming.1),
        two("Outgoing calls created", outgoing.0, outgoing.1),
        format!("  {:<22.22} |                           | {:>8}                 ", "Total Calls created", p.attempted),
        format!("  {:<22.22} | {:>8}                  |                          ", "Current Calls", p.active),
        CROSS.into(),
        two("Successful call", p.period_successful, p.successful),
        two("Failed call", p.period_failed, p.failed),
        CROSS.into(),
    ];
    for (i, name) in info.rtd_names.iter().enumerate() {
        let (period, total) = (p.period_rtd.get(i).copied(), p.rtd.get(i).copied());
        let mean = |m: Option<crate::metrics::Moments>| ms(m.unwrap_or_default().mean());
        lines.push(txt_col(&format!("Response Time {name}"), &mean(period), &mean(total)));
    }
    lines.push(txt_col("Call Length", &ms(p.period_call_length.mean()), &ms(p.call_length.mean())));
    lines.push(bottom_line(info, p).to_string());
    lines
}
