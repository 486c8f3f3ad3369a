//! SIPp's `-trace_stat` file, `<scenario>_<pid>_.csv`: the header and the
//! rows of SIPp 3.6's `CStat::dumpData`, columns in its names and order,
//! every field followed by the delimiter (`;` unless `-stat_delimiter`).
//! A row is written when the run starts, every `-fd` and when it ends;
//! `(P)` columns count since the previous row, `(C)` since the start.
//!
//! Where sigkit's counts map onto SIPp's: calls failed on a retransmission
//! timer (`invite_timeout`, `ack_timeout`, …) are `FailedMaxUDPRetrans`,
//! on a `recv` timeout `FailedTimeoutOnRecv`, on a message the scenario
//! did not expect (`unexpected_message`, an error response such as
//! `invite_486`) `FailedUnexpectedMessage`; failures SIPp has no column
//! for (`call_timeout`, `auth_failed`) count in `FailedCall` only, and
//! SIPp's other causes (TCP, regular expressions, the watchdog) have
//! nothing to count here and stay 0. `AutoAnswered` counts the requests
//! `-aa` answered.

use std::io::{self, Write};
use std::time::{Instant, SystemTime};

use super::format::{cpp_float, format_time, hhmmss, hhmmss_us};
use crate::metrics::{Moments, Recorder};
use crate::scenario::Scenario;

/// The counter columns of SIPp 3.6, in its order; each is a `(P)` and `(C)`
/// pair from `FailedCannotSendMessage` on.
const COUNTERS: &[&str] = &[
    "FailedCannotSendMessage",
    "FailedMaxUDPRetrans",
    "FailedTcpConnect",
    "FailedTcpClosed",
    "FailedUnexpectedMessage",
    "FailedCallRejected",
    "FailedCmdNotSent",
    "FailedRegexpDoesntMatch",
    "FailedRegexpShouldntMatch",
    "FailedRegexpHdrNotFound",
    "FailedOutboundCongestion",
    "FailedTimeoutOnRecv",
    "FailedTimeoutOnSend",
    "FailedTestDoesntMatch",
    "FailedTestShouldntMatch",
    "FailedStrcmpDoesntMatch",
    "FailedStrcmpShouldntMatch",
    "OutOfCallMsgs",
    "DeadCallMsgs",
    "Retransmissions",
    "AutoAnswered",
    "Warnings",
    "FatalErrors",
    "WatchdogMajor",
    "WatchdogMinor",
];

/// The SIPp counter column (index into [`COUNTERS`]) a failure cause
/// counts in, if any.
fn counter_of_cause(cause: &str) -> Option<usize> {
    let column = match cause {
        "recv_timeout" => "FailedTimeoutOnRecv",
        "unexpected_message" => "FailedUnexpectedMessage",
        "call_timeout" | "auth_failed" | "scenario_loop" => return None,
        c if c.ends_with("_timeout") => "FailedMaxUDPRetrans",
        // METHOD_CODE: an error response the scenario did not expect.
        c if c.rsplit_once('_').is_some_and(|(_, code)| code.len() == 3 && code.parse::<u16>().is_ok()) => {
            "FailedUnexpectedMessage"
        }
        _ => return None,
    };
    COUNTERS.iter().position(|c| *c == column)
}

/// The cumulative values a row's `(P)` columns are taken from.
#[derive(Debug, Clone, Default)]
struct Totals {
    created: u64,
    successful: u64,
    failed: u64,
    counters: Vec<u64>,
    rtd: Vec<Moments>,
    call_length: Moments,
}

impl Totals {
    fn of(r: &Recorder) -> Totals {
        let t = &r.total;
        let mut counters = vec![0; COUNTERS.len()];
        for (cause, n) in &t.failures {
            if let Some(i) = counter_of_cause(cause) {
                counters[i] += n;
            }
        }
        let mut set = |name: &str, v: u64| {
            if let Some(i) = COUNTERS.iter().position(|c| *c == name) {
                counters[i] = v;
            }
        };
        set("OutOfCallMsgs", t.out_of_call);
        set("DeadCallMsgs", r.sipp.dead_call);
        set("Retransmissions", t.retransmissions);
        set("Warnings", r.sipp.warnings);
        set("AutoAnswered", r.sipp.auto_answered);
        Totals {
            created: t.attempted,
            successful: t.successful,
            failed: t.failed,
            counters,
            rtd: r.sipp.rtd.clone(),
            call_length: r.sipp.call_length,
        }
    }
}

/// What a row needs besides the recorder.
pub struct RowInput<'a> {
    /// The run's counts.
    pub recorder: &'a Recorder,
    /// Calls in progress (`CurrentCall`).
    pub current_calls: u64,
    /// The rate asked for, calls per rate period (`TargetRate`: SIPp's `-r` unit).
    pub rate: f64,
    /// Whether calls are placed (`OutgoingCall`) rather than taken (`IncomingCall`).
    pub client: bool,
    /// When the row is written.
    pub now: Instant,
}

/// The statistics file being written.
pub struct StatFile<W: Write> {
    out: W,
    delimiter: String,
    rtd_names: Vec<String>,
    /// How many response times, from the first, have bucket columns.
    rtd_tables: usize,
    rtd_borders: Vec<u64>,
    call_length_borders: Vec<u64>,
    start: Instant,
    start_wall: SystemTime,
    /// When the previous row was written (SIPp's last reset of the `(P)` counters), and what was counted then.
    last: Instant,
    last_totals: Totals,
}

impl<W: Write> StatFile<W> {
    /// A file for `scenario`'s response times and buckets, its header
    /// written; the run started at `start` (`start_wall` on the clock).
    pub fn new(
        out: W,
        delimiter: &str,
        scenario: &Scenario,
        start: Instant,
        start_wall: SystemTime,
    ) -> io::Result<StatFile<W>> {
        let rtd_tables = if scenario.response_time_repartition.is_empty() {
            0
        } else {
            scenario.repartition_rtds.min(scenario.rtds.len())
        };
        let mut file = StatFile {
            out,
            delimiter: delimiter.to_string(),
            rtd_names: scenario.rtds.clone(),
            rtd_tables,
            rtd_borders: scenario.response_time_repartition.clone(),
            call_length_borders: scenario.call_length_repartition.clone(),
            start,
            start_wall,
            last: start,
            last_totals: Totals { counters: vec![0; COUNTERS.len()], ..Totals::default() },
        };
        let header = file.header();
        file.out.write_all(header.as_bytes())?;
        Ok(file)
    }

    /// The run starts at `start` (`start_wall` on the clock): times count from it.
    pub fn begin(&mut self, start: Instant, start_wall: SystemTime) {
        self.start = start;
        self.start_wall = start_wall;
        self.last = start;
    }

    /// The header line, SIPp's column names.
    fn header(&self) -> String {
        let d = &self.delimiter;
        let mut h = String::new();
        let mut col = |name: &str| {
            h.push_str(name);
            h.push_str(d);
        };
        for name in [
            "StartTime",
            "LastResetTime",
            "CurrentTime",
            "ElapsedTime(P)",
            "ElapsedTime(C)",
            "TargetRate",
            "CallRate(P)",
            "CallRate(C)",
            "IncomingCall(P)",
            "IncomingCall(C)",
            "OutgoingCall(P)",
            "OutgoingCall(C)",
            "TotalCallCreated",
            "CurrentCall",
            "SuccessfulCall(P)",
            "SuccessfulCall(C)",
            "FailedCall(P)",
            "FailedCall(C)",
        ] {
            col(name);
        }
        for name in COUNTERS {
            col(&format!("{name}(P)"));
            col(&format!("{name}(C)"));
        }
        for name in &self.rtd_names {
            for suffix in ["(P)", "(C)", "StDev(P)", "StDev(C)"] {
                col(&format!("ResponseTime{name}{suffix}"));
            }
        }
        for name in ["CallLength(P)", "CallLength(C)", "CallLengthStDev(P)", "CallLengthStDev(C)"] {
            col(name);
        }
        for name in &self.rtd_names[..self.rtd_tables] {
            for c in repartition_header(&format!("ResponseTimeRepartition{name}"), &self.rtd_borders) {
                col(&c);
            }
        }
        if !self.call_length_borders.is_empty() {
            for c in repartition_header("CallLengthRepartition", &self.call_length_borders) {
                col(&c);
            }
        }
        h.push('\n');
        h
    }

    /// Writes the row of the period since the previous one, ending at
    /// `input.now`, and starts the next period.
    pub fn row(&mut self, input: &RowInput<'_>) -> io::Result<()> {
        let now = input.now.max(self.last);
        let totals = Totals::of(input.recorder);
        let prev = std::mem::replace(&mut self.last_totals, totals);
        let cur = &self.last_totals;
        let period_ms = (now - self.last).as_millis() as u64;
        let total_ms = (now.max(self.start) - self.start).as_millis() as u64;
        let wall = |t: Instant| format_time(self.start_wall + t.saturating_duration_since(self.start), false);
        let rate_of = |calls: u64, ms: u64| if ms > 0 { 1000.0 * calls as f32 / ms as f32 } else { 0.0 };
        let created_p = cur.created - prev.created.min(cur.created);
        let (incoming, outgoing) =
            if input.client { ((0, 0), (created_p, cur.created)) } else { ((created_p, cur.created), (0, 0)) };
        let mut f: Vec<String> = vec![
            wall(self.start),
            wall(self.last),
            wall(now),
            hhmmss(period_ms),
            hhmmss(total_ms),
            cpp_float(input.rate),
            cpp_float(f64::from(rate_of(created_p, period_ms))),
            cpp_float(f64::from(rate_of(cur.created, total_ms))),
            incoming.0.to_string(),
            incoming.1.to_string(),
            outgoing.0.to_string(),
            outgoing.1.to_string(),
            cur.created.to_string(),
            input.current_calls.to_string(),
            (cur.successful - prev.successful.min(cur.successful)).to_string(),
            cur.successful.to_string(),
            (cur.failed - prev.failed.min(cur.failed)).to_string(),
            cur.failed.to_string(),
        ];
        for (i, c) in cur.counters.iter().enumerate() {
            let p = prev.counters.get(i).copied().unwrap_or(0);
            f.push(c.saturating_sub(p).to_string());
            f.push(c.to_string());
        }
        let ms = |v: f64| hhmmss_us(v as u64);
        for (i, c) in cur.rtd.iter().enumerate() {
            let p = c.since(prev.rtd.get(i).unwrap_or(&Moments::default()));
            f.extend([ms(p.mean()), ms(c.mean()), ms(p.stdev()), ms(c.stdev())]);
        }
        let p = cur.call_length.since(&prev.call_length);
        let c = &cur.call_length;
        f.extend([ms(p.mean()), ms(c.mean()), ms(p.stdev()), ms(c.stdev())]);
        // Buckets are counted over the whole run (SIPp without
        // -periodic_rtd); the column under the table's name stays empty.
        let sipp = &input.recorder.sipp;
        for table in sipp.rtd_buckets.iter().take(self.rtd_tables) {
            f.push(String::new());
            f.extend(table.iter().map(u64::to_string));
        }
        if !self.call_length_borders.is_empty() {
            f.push(String::new());
            f.extend(sipp.call_length_buckets.iter().map(u64::to_string));
        }
        let mut line = String::new();
        for field in f {
            line.push_str(&field);
            line.push_str(&self.delimiter);
        }
        line.push('\n');
        self.out.write_all(line.as_bytes())?;
        self.last = now;
        Ok(())
    }

    /// Flushes what was written.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The writer, written and flushed.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A bucket table's column names: the table's own, then `NAME_<B` per
/// border and `NAME_>=LAST`.
fn repartition_header(name: &str, borders: &[u64]) -> Vec<String> {
    let mut cols = vec![name.to_string()];
    cols.extend(borders.iter().map(|b| format!("{name}_<{b}")));
    if let Some(last) = borders.last() {
        cols.push(format!("{name}_>={last}"));
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sipps_columns_for_a_response_time_with_buckets() {
        let scenario = crate::scenario::built_in("uac").unwrap();
        let start = Instant::now();
        let mut file = StatFile::new(Vec::new(), ";", &scenario, start, SystemTime::now()).unwrap();
        let mut r = Recorder::new(scenario.rtds.clone());
        r.set_repartitions(
            &scenario.response_time_repartition,
            scenario.repartition_rtds,
            &scenario.call_length_repartition,
        );
        file.row(&RowInput { recorder: &r, current_calls: 0, rate: 10.0, client: true, now: start }).unwrap();
        for _ in 0..3 {
            r.call_attempted(0);
        }
        r.call_succeeded(0, start);
        r.call_failed(0, "invite_timeout", true);
        r.call_failed(0, "invite_486", false);
        r.rtd(0, 0, Duration::from_millis(15));
        r.rtd(0, 0, Duration::from_millis(25));
        r.message_sent(true);
        let later = start + Duration::from_millis(2000);
        file.row(&RowInput { recorder: &r, current_calls: 0, rate: 10.0, client: true, now: later }).unwrap();
        let text = String::from_utf8(file.into_inner().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let head: Vec<&str> = lines[0].split(';').collect();
        // Every field ends with the delimiter, so the last split is empty.
        assert_eq!(head.last(), Some(&""));
        assert_eq!(
            head[..6],
            ["StartTime", "LastResetTime", "CurrentTime", "ElapsedTime(P)", "ElapsedTime(C)", "TargetRate"]
        );
        let at = |name: &str| head.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(at("ResponseTime1(P)") + 4, at("CallLength(P)"));
        assert_eq!(head[at("ResponseTimeRepartition1") + 1], "ResponseTimeRepartition1_<10");
        assert_eq!(head[at("CallLengthRepartition") - 1], "ResponseTimeRepartition1_>=200");
        assert_eq!(*head.iter().rev().nth(1).unwrap(), "CallLengthRepartition_>=10000");
        let row: Vec<&str> = lines[2].split(';').collect();
        assert_eq!(row.len(), head.len());
        assert_eq!(row[at("TargetRate")], "10");
        assert_eq!((row[at("OutgoingCall(P)")], row[at("IncomingCall(C)")]), ("3", "0"));
        assert_eq!(row[at("CallRate(P)")], "1.5");
        assert_eq!(row[at("ElapsedTime(P)")], "00:00:02");
        assert_eq!((row[at("FailedCall(C)")], row[at("FailedMaxUDPRetrans(C)")]), ("2", "1"));
        assert_eq!(row[at("FailedUnexpectedMessage(P)")], "1");
        assert_eq!(row[at("Retransmissions(C)")], "1");
        assert_eq!(row[at("ResponseTime1(C)")], "00:00:00:020000");
        // 15 and 25 ms: a sample deviation of √50.
        assert_eq!(row[at("ResponseTime1StDev(P)")], "00:00:00:007000");
        assert_eq!(row[at("ResponseTimeRepartition1")], "");
        assert_eq!((row[at("ResponseTimeRepartition1_<20")], row[at("ResponseTimeRepartition1_<30")]), ("1", "1"));
        assert_eq!(lines[1].split(';').count(), head.len());
    }

    #[test]
    fn failure_causes_map_to_sipps_columns() {
        let col = |c: &str| counter_of_cause(c).map(|i| COUNTERS[i]);
        assert_eq!(col("invite_timeout"), Some("FailedMaxUDPRetrans"));
        assert_eq!(col("ack_timeout"), Some("FailedMaxUDPRetrans"));
        assert_eq!(col("recv_timeout"), Some("FailedTimeoutOnRecv"));
        assert_eq!(col("bye_481"), Some("FailedUnexpectedMessage"));
        assert_eq!(col("unexpected_message"), Some("FailedUnexpectedMessage"));
        assert_eq!(col("call_timeout"), None);
    }
}
