//! What a load run counts: calls by outcome and failure cause, messages,
//! retransmissions, and call set-up delays as HdrHistogram percentiles in
//! microseconds (0.1 ms resolution and better).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

/// Why a call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Failure {
    /// No final response to the INVITE within Timer B.
    InviteTimeout,
    /// The INVITE was answered with this error.
    Refused(u16),
    /// No final response to the BYE within Timer F.
    ByeTimeout,
    ByeRefused(u16),
    /// The UAS's 2xx was never acknowledged (§13.3.1.4).
    AckTimeout,
    /// The call took longer than its limit.
    CallTimeout,
}

impl Failure {
    /// The cause as a metric label.
    pub fn label(self) -> String {
        match self {
            Failure::InviteTimeout => "invite_timeout".into(),
            Failure::Refused(c) => format!("invite_{c}"),
            Failure::ByeTimeout => "bye_timeout".into(),
            Failure::ByeRefused(c) => format!("bye_{c}"),
            Failure::AckTimeout => "ack_timeout".into(),
            Failure::CallTimeout => "call_timeout".into(),
        }
    }
}

/// Counters and histograms of one side of a run.
#[derive(Debug, Clone)]
pub struct Recorder {
    pub attempted: u64,
    pub successful: u64,
    pub failed: u64,
    pub failures: BTreeMap<Failure, u64>,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub retransmissions: u64,
    pub unexpected: u64,
    /// Responses to calls already over (late 1xx, retransmitted 2xx).
    pub late: u64,
    /// INVITE→180, µs.
    pub ringing_us: Histogram<u64>,
    /// INVITE→200, µs.
    pub answer_us: Histogram<u64>,
    pub last_success: Option<Instant>,
}

impl Default for Recorder {
    fn default() -> Self {
        let h = || Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds");
        Recorder {
            attempted: 0,
            successful: 0,
            failed: 0,
            failures: BTreeMap::new(),
            messages_sent: 0,
            messages_received: 0,
            retransmissions: 0,
            unexpected: 0,
            late: 0,
            ringing_us: h(),
            answer_us: h(),
            last_success: None,
        }
    }
}

fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).max(1)
}

impl Recorder {
    pub fn call_attempted(&mut self) {
        self.attempted += 1;
    }
    pub fn call_succeeded(&mut self, now: Instant) {
        self.successful += 1;
        self.last_success = Some(now);
    }
    pub fn call_failed(&mut self, cause: Failure) {
        self.failed += 1;
        *self.failures.entry(cause).or_default() += 1;
    }
    pub fn message_sent(&mut self, _retransmission: bool) {
        self.messages_sent += 1;
    }
    pub fn message_received(&mut self) {
        self.messages_received += 1;
    }
    pub fn retransmission(&mut self) {
        self.retransmissions += 1;
    }
    pub fn unexpected(&mut self) {
        self.unexpected += 1;
    }
    pub fn late(&mut self) {
        self.late += 1;
    }
    pub fn ringing(&mut self, d: Duration) {
        let _ = self.ringing_us.record(micros(d));
    }
    pub fn answered(&mut self, d: Duration) {
        let _ = self.answer_us.record(micros(d));
    }
}

/// Percentiles of a delay, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Percentiles {
            count: h.len(),
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
            mean: h.mean() / 1000.0,
        }
    }
}

/// A run's end result (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub role: &'static str,
    pub elapsed_s: f64,
    pub offered_cps: f64,
    pub attempted_calls: u64,
    pub successful_calls: u64,
    pub failed_calls: u64,
    pub failures: BTreeMap<String, u64>,
    /// Successful calls per second over the run.
    pub calls_per_s: f64,
    pub messages_sent: u64,
    pub messages_received: u64,
    pub messages_per_s: f64,
    pub retransmissions: u64,
    pub unexpected_messages: u64,
    pub late_responses: u64,
    /// INVITE→200.
    pub setup_ms: Percentiles,
    /// INVITE→180.
    pub ringing_ms: Percentiles,
}

impl Summary {
    pub fn of(role: &'static str, r: &Recorder, elapsed: Duration, offered_cps: f64) -> Summary {
        let secs = elapsed.as_secs_f64().max(1e-9);
        Summary {
            role,
            elapsed_s: elapsed.as_secs_f64(),
            offered_cps,
            attempted_calls: r.attempted,
            successful_calls: r.successful,
            failed_calls: r.failed,
            failures: r.failures.iter().map(|(f, n)| (f.label(), *n)).collect(),
            calls_per_s: r.successful as f64 / secs,
            messages_sent: r.messages_sent,
            messages_received: r.messages_received,
            messages_per_s: (r.messages_sent + r.messages_received) as f64 / secs,
            retransmissions: r.retransmissions,
            unexpected_messages: r.unexpected,
            late_responses: r.late,
            setup_ms: Percentiles::of(&r.answer_us),
            ringing_ms: Percentiles::of(&r.ringing_us),
        }
    }
}

/// One reporting interval (`-fd`) of a run, as a row for the results
/// store.
#[derive(Debug, Clone, Serialize)]
pub struct Interval {
    /// Seconds since the run started, at the interval's end.
    pub t_s: f64,
    pub offered_cps: f64,
    pub attempted: u64,
    pub successful: u64,
    pub failed: u64,
    pub calls_per_s: f64,
    pub retransmissions: u64,
    pub setup_p50_ms: f64,
    pub setup_p95_ms: f64,
    pub setup_p99_ms: f64,
    pub active_calls: u64,
}
