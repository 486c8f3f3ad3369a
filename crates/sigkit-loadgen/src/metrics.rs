//! What a load run counts: calls by outcome and failure cause, messages,
//! retransmissions, timeouts, and delays (call set-up INVITE→180 and
//! INVITE→200, each scenario response time, and the response time of
//! every client transaction by method) as HdrHistogram percentiles in
//! microseconds (0.1 ms resolution and better). Counted over the whole
//! run, per reporting interval, and per load step.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

mod messages;

pub use messages::StepMessages;

/// Longest delay a histogram holds, µs (10 minutes); longer ones are
/// clamped to it.
const MAX_DELAY_US: u64 = 600_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_DELAY_US, 3).expect("valid histogram bounds")
}

fn micros(d: Duration) -> u64 {
    (d.as_micros().min(u128::from(MAX_DELAY_US)) as u64).max(1)
}

/// Counters and histograms over one span (the run, an interval, a step).
#[derive(Debug, Clone)]
pub struct Counters {
    /// Calls the load pattern asked for (a UAC's; the limits on
    /// concurrent calls can keep some from being attempted).
    pub offered: u64,
    /// Calls placed (UAC) or taken on (UAS), counted when the call starts: SIPp's `-trace_stat` `OutgoingCall`
    /// (`IncomingCall` for a UAS).
    pub attempted: u64,
    /// Calls that reached the end of their scenario: `-trace_stat` `SuccessfulCall`.
    pub successful: u64,
    /// Calls that ended on a failure, whatever the cause (see `failures`): `-trace_stat` `FailedCall`.
    pub failed: u64,
    /// Failed calls by cause (`invite_timeout`, `invite_486`,
    /// `unexpected_message`, ...).
    pub failures: BTreeMap<String, u64>,
    /// SIP messages written to the transport, retransmissions included.
    pub messages_sent: u64,
    /// SIP messages read from the transport, retransmissions and out-of-call messages included.
    pub messages_received: u64,
    /// Messages sent again (RFC 3261 timers, or a retransmitted request
    /// answered again).
    pub retransmissions: u64,
    /// Messages received again (a retransmission from the peer).
    pub retransmissions_received: u64,
    /// Calls failed on a timer (Timer B/F, no ACK, a recv timeout).
    pub timeouts: u64,
    /// Messages that matched no step of their call (the call fails), or
    /// that could not be parsed.
    pub unexpected: u64,
    /// Messages for no call in progress (late responses after a call
    /// ended, requests for unknown calls).
    pub out_of_call: u64,
    /// INVITE→first 18x, µs.
    pub ringing_us: Histogram<u64>,
    /// INVITE→2xx, µs.
    pub setup_us: Histogram<u64>,
    /// Scenario response times (`rtd`), µs, by index.
    pub rtd_us: Vec<Histogram<u64>>,
    /// Client transactions, by method index ([`Recorder::methods`]):
    /// request sent → first final response, µs.
    pub txn_final_us: Vec<Histogram<u64>>,
    /// Request sent → first provisional response, µs.
    pub txn_provisional_us: Vec<Histogram<u64>>,
}

impl Counters {
    /// Counters with histograms for `rtds` response times (the scenario's `rtd` indices) and no timed methods.
    pub fn new(rtds: usize) -> Counters {
        Counters::with_methods(rtds, 0)
    }

    /// Counters with histograms for `rtds` response times and `methods`
    /// request methods.
    pub fn with_methods(rtds: usize, methods: usize) -> Counters {
        Counters {
            offered: 0,
            attempted: 0,
            successful: 0,
            failed: 0,
            failures: BTreeMap::new(),
            messages_sent: 0,
            messages_received: 0,
            retransmissions: 0,
            retransmissions_received: 0,
            timeouts: 0,
            unexpected: 0,
            out_of_call: 0,
            ringing_us: histogram(),
            setup_us: histogram(),
            rtd_us: (0..rtds).map(|_| histogram()).collect(),
            txn_final_us: (0..methods).map(|_| histogram()).collect(),
            txn_provisional_us: (0..methods).map(|_| histogram()).collect(),
        }
    }

    /// Back to zero, keeping the histograms' memory.
    pub fn reset(&mut self) {
        self.offered = 0;
        self.attempted = 0;
        self.successful = 0;
        self.failed = 0;
        self.failures.clear();
        self.messages_sent = 0;
        self.messages_received = 0;
        self.retransmissions = 0;
        self.retransmissions_received = 0;
        self.timeouts = 0;
        self.unexpected = 0;
        self.out_of_call = 0;
        self.ringing_us.reset();
        self.setup_us.reset();
        for h in self.rtd_us.iter_mut().chain(&mut self.txn_final_us).chain(&mut self.txn_provisional_us) {
            h.reset();
        }
    }

    fn fail(&mut self, cause: &str, timeout: bool) {
        self.failed += 1;
        if timeout {
            self.timeouts += 1;
        }
        match self.failures.get_mut(cause) {
            Some(n) => *n += 1,
            None => {
                self.failures.insert(cause.to_string(), 1);
            }
        }
    }
}

/// The counters of a run: in all, for the current interval, and per load
/// step (calls count in the step in which they started).
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Over the whole run (SIPp's cumulative `-trace_stat` columns, `(C)`).
    pub total: Counters,
    /// Over the current reporting interval (`-fd`; SIPp's periodic columns, `(P)`), reset by the caller at its end.
    pub interval: Counters,
    /// One row per load step, indexed by step (at most 4097 rows; later steps count in the last).
    pub steps: Vec<Counters>,
    /// The scenario's response-time names (the `rtd`/`start_rtd` attribute values), in the order of the counters'
    /// `rtd_us` histograms.
    pub rtd_names: Vec<String>,
    /// The request methods whose transactions are timed, in the order of
    /// the counters' `txn_*` histograms.
    pub methods: Vec<String>,
    /// When the last call succeeded (see [`Recorder::call_succeeded`]); None before the first.
    pub last_success: Option<Instant>,
    /// When the load's last step ended ([`Recorder::load_ended`]): calls
    /// that finish after it are the run's tail.
    pub tail_from: Option<Instant>,
    /// Calls that finished after `tail_from`, whatever their step.
    pub tail_successful: u64,
    /// Calls that failed after `tail_from`, whatever their step.
    pub tail_failed: u64,
    /// Over the whole run, what SIPp's `-trace_stat` file reads beyond the counters.
    pub sipp: SippTotals,
    /// Over the whole run, per step of the scenario (by index in its `steps`; empty until
    /// [`Recorder::set_scenario_steps`]): SIPp's scenario screen.
    pub scenario_steps: Vec<StepMessages>,
}

/// Count, sum and sum of squares of whole milliseconds: how SIPp keeps a
/// mean and a standard deviation (its `-trace_stat` `ResponseTime` and
/// `CallLength` columns), so a period's are the difference of two.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Moments {
    /// Samples.
    pub count: u64,
    /// Their sum, ms.
    pub sum: u64,
    /// The sum of their squares, ms².
    pub sum_sq: u64,
}

impl Moments {
    /// Adds a sample of `ms` milliseconds.
    pub fn add(&mut self, ms: u64) {
        self.count += 1;
        self.sum = self.sum.saturating_add(ms);
        self.sum_sq = self.sum_sq.saturating_add(ms.saturating_mul(ms));
    }

    /// The samples added since `earlier` was taken of the same moments.
    pub fn since(&self, earlier: &Moments) -> Moments {
        Moments {
            count: self.count.saturating_sub(earlier.count),
            sum: self.sum.saturating_sub(earlier.sum),
            sum_sq: self.sum_sq.saturating_sub(earlier.sum_sq),
        }
    }

    /// The mean, ms; 0 without samples.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The sample standard deviation from the short formula SIPp uses,
    /// √((n·Σx² − (Σx)²) / (n·(n−1))), ms; 0 below two samples.
    pub fn stdev(&self) -> f64 {
        if self.count <= 1 {
            return 0.0;
        }
        let n = self.count as f64;
        let (sum, sum_sq) = (self.sum as f64, self.sum_sq as f64);
        ((n * sum_sq - sum * sum) / (n * (n - 1.0))).max(0.0).sqrt()
    }
}

/// What SIPp's `-trace_stat` file reads beyond the counters, over the
/// whole run: response times and call lengths as [`Moments`], their
/// buckets (the scenario's `ResponseTimeRepartition` and
/// `CallLengthRepartition`), messages answered for calls already over, and
/// warnings (SIPp's `-trace_err` events).
#[derive(Debug, Clone, Default)]
pub struct SippTotals {
    /// Per response time (the recorder's `rtd_names`), ms.
    pub rtd: Vec<Moments>,
    /// Every call from its start to its end (successful, failed, or ended with the run; a `timewait` included), ms.
    pub call_length: Moments,
    /// Response-time bucket borders, ms, ascending.
    pub rtd_borders: Vec<u64>,
    /// Per response time that has buckets (the first ones), a count per border and one past the last.
    pub rtd_buckets: Vec<Vec<u64>>,
    /// Call-length bucket borders, ms, ascending.
    pub call_length_borders: Vec<u64>,
    /// A count per call-length border and one past the last (empty without borders).
    pub call_length_buckets: Vec<u64>,
    /// Messages for a call that had ended, answered from what it sent last (SIPp's `DeadCallMsgs`).
    pub dead_call: u64,
    /// Events SIPp reports as warnings: calls aborted on an unexpected message or a timeout, messages discarded.
    pub warnings: u64,
    /// Requests answered with a 200 OK by `-aa` instead of counting as unexpected (SIPp's `AutoAnswered`).
    pub auto_answered: u64,
}

/// The bucket of `ms` among `borders` as SIPp counts it: the first border
/// it is below, else the last bucket (from the last border up).
fn bucket(borders: &[u64], ms: u64) -> usize {
    borders.iter().position(|&b| ms < b).unwrap_or(borders.len())
}

impl SippTotals {
    fn new(rtds: usize) -> SippTotals {
        SippTotals { rtd: vec![Moments::default(); rtds], ..SippTotals::default() }
    }

    fn rtd_sample(&mut self, index: usize, ms: u64) {
        if let Some(m) = self.rtd.get_mut(index) {
            m.add(ms);
        }
        if let Some(b) = self.rtd_buckets.get_mut(index) {
            b[bucket(&self.rtd_borders, ms)] += 1;
        }
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new(Vec::new())
    }
}

impl Recorder {
    /// A recorder for the response times named `rtd_names`, timing no client transactions.
    pub fn new(rtd_names: Vec<String>) -> Recorder {
        Recorder::with_methods(rtd_names, Vec::new())
    }

    /// A recorder that also times the client transactions of `methods`.
    pub fn with_methods(rtd_names: Vec<String>, methods: Vec<String>) -> Recorder {
        let (n, m) = (rtd_names.len(), methods.len());
        Recorder {
            total: Counters::with_methods(n, m),
            interval: Counters::with_methods(n, m),
            steps: vec![Counters::with_methods(n, m)],
            rtd_names,
            methods,
            last_success: None,
            tail_from: None,
            tail_successful: 0,
            tail_failed: 0,
            sipp: SippTotals::new(n),
            scenario_steps: Vec::new(),
        }
    }

    /// Counts per scenario step from now on, for a scenario of `steps` steps.
    pub fn set_scenario_steps(&mut self, steps: usize) {
        self.scenario_steps = vec![StepMessages::default(); steps];
    }

    /// Counts at scenario step `index` (`count` changes its counts), if the recorder keeps them.
    pub fn at_step(&mut self, index: usize, count: impl FnOnce(&mut StepMessages)) {
        if let Some(m) = self.scenario_steps.get_mut(index) {
            count(m);
        }
    }

    /// Sets the buckets of SIPp's repartition tables: `rtd_borders` for the first `rtds_with_buckets` response
    /// times, `call_length_borders` for call lengths (ms, ascending; empty: no table).
    pub fn set_repartitions(&mut self, rtd_borders: &[u64], rtds_with_buckets: usize, call_length_borders: &[u64]) {
        let s = &mut self.sipp;
        s.rtd_borders = rtd_borders.to_vec();
        let tables = if rtd_borders.is_empty() { 0 } else { rtds_with_buckets.min(self.rtd_names.len()) };
        s.rtd_buckets = vec![vec![0; rtd_borders.len() + 1]; tables];
        s.call_length_borders = call_length_borders.to_vec();
        s.call_length_buckets =
            if call_length_borders.is_empty() { Vec::new() } else { vec![0; call_length_borders.len() + 1] };
    }

    /// A call ended (whatever the outcome) `d` after it started: SIPp's call length.
    pub fn call_ended(&mut self, d: Duration) {
        let ms = d.as_millis().min(u128::from(u64::MAX)) as u64;
        let s = &mut self.sipp;
        s.call_length.add(ms);
        if !s.call_length_buckets.is_empty() {
            s.call_length_buckets[bucket(&s.call_length_borders, ms)] += 1;
        }
    }

    /// A message for a call already over, answered again from what the call sent last.
    pub fn dead_call_message(&mut self) {
        self.sipp.dead_call += 1;
    }

    /// An event SIPp reports as a warning (and writes with `-trace_err`).
    pub fn warning(&mut self) {
        self.sipp.warnings += 1;
    }

    /// A request answered by `-aa` (SIPp's `AutoAnswered`); the answer is counted as a message sent.
    pub fn auto_answered(&mut self) {
        self.sipp.auto_answered += 1;
        self.message_sent(false);
    }

    fn step(&mut self, step: usize) -> &mut Counters {
        // Steps are few (a stepped pattern's rates); beyond a bound the
        // last row takes the rest.
        let step = step.min(4096);
        while self.steps.len() <= step {
            self.steps.push(Counters::with_methods(self.rtd_names.len(), self.methods.len()));
        }
        &mut self.steps[step]
    }

    fn each(&mut self, step: usize, f: impl Fn(&mut Counters)) {
        f(&mut self.total);
        f(&mut self.interval);
        f(self.step(step));
    }

    /// A call of load step `step` was asked for by the load pattern (it may still be held back by `-l`).
    pub fn call_offered(&mut self, step: usize) {
        self.each(step, |c| c.offered += 1);
    }
    /// A call of load step `step` was started (a UAC placed it, or a UAS took on its first request).
    pub fn call_attempted(&mut self, step: usize) {
        self.each(step, |c| c.attempted += 1);
    }
    /// A call of load step `step` reached the end of its scenario at `now`.
    pub fn call_succeeded(&mut self, step: usize, now: Instant) {
        self.each(step, |c| c.successful += 1);
        self.last_success = Some(now);
        if self.tail_from.is_some_and(|t| now >= t) {
            self.tail_successful += 1;
        }
    }
    /// A call of load step `step` failed with `cause` (`invite_timeout`, `invite_486`, ...); `timeout` when a timer
    /// ended it (counted in `timeouts` too).
    pub fn call_failed(&mut self, step: usize, cause: &str, timeout: bool) {
        self.each(step, |c| c.fail(cause, timeout));
        if self.tail_from.is_some_and(|t| Instant::now() >= t) {
            self.tail_failed += 1;
        }
    }
    /// The load's last step ended at `at` (no more calls are placed): the
    /// calls that finish from then on are counted apart, as the tail, so
    /// that no step's rate takes in the time the run waits for them.
    pub fn load_ended(&mut self, at: Instant) {
        self.tail_from.get_or_insert(at);
    }
    /// A call of load step `step` got its first provisional (18x) response `d` after its INVITE was first sent.
    pub fn ringing(&mut self, step: usize, d: Duration) {
        let us = micros(d);
        self.each(step, |c| {
            let _ = c.ringing_us.record(us);
        });
    }
    /// A call of load step `step` got its 2xx to the INVITE `d` after the INVITE was first sent (the set-up delay).
    pub fn answered(&mut self, step: usize, d: Duration) {
        let us = micros(d);
        self.each(step, |c| {
            let _ = c.setup_us.record(us);
        });
    }
    /// Response time `index` (a scenario `rtd`, `-trace_stat` `ResponseTime<index+1>`) of a call of load step `step`
    /// ended after `d`.
    pub fn rtd(&mut self, step: usize, index: usize, d: Duration) {
        self.sipp.rtd_sample(index, d.as_millis().min(u128::from(u64::MAX)) as u64);
        let us = micros(d);
        self.each(step, |c| {
            if let Some(h) = c.rtd_us.get_mut(index) {
                let _ = h.record(us);
            }
        });
    }
    /// A client transaction of method `method` got its first final
    /// response `d` after its request was first sent.
    pub fn transaction_final(&mut self, step: usize, method: usize, d: Duration) {
        let us = micros(d);
        self.each(step, |c| {
            if let Some(h) = c.txn_final_us.get_mut(method) {
                let _ = h.record(us);
            }
        });
    }
    /// A client transaction of method `method` got its first provisional
    /// response `d` after its request was first sent.
    pub fn transaction_provisional(&mut self, step: usize, method: usize, d: Duration) {
        let us = micros(d);
        self.each(step, |c| {
            if let Some(h) = c.txn_provisional_us.get_mut(method) {
                let _ = h.record(us);
            }
        });
    }
    /// A message written to the transport; `retransmission` when it was a copy sent again (counted in
    /// `retransmissions`, the `-trace_stat` `Retransmissions` column). Counts in the run and the interval only.
    pub fn message_sent(&mut self, retransmission: bool) {
        self.total.messages_sent += 1;
        self.interval.messages_sent += 1;
        if retransmission {
            self.total.retransmissions += 1;
            self.interval.retransmissions += 1;
        }
    }
    /// A message of a call of load step `step` sent again.
    pub fn retransmitted(&mut self, step: usize) {
        self.message_sent(true);
        self.step(step).retransmissions += 1;
    }
    /// A message that matched no step of a call of load step `step` (the
    /// call fails).
    pub fn unexpected_in(&mut self, step: usize) {
        self.unexpected();
        self.step(step).unexpected += 1;
    }
    /// A message read from the transport (run and interval only).
    pub fn message_received(&mut self) {
        self.total.messages_received += 1;
        self.interval.messages_received += 1;
    }
    /// A message from the peer that was a copy of one already received (run and interval only).
    pub fn retransmission_received(&mut self) {
        self.total.retransmissions_received += 1;
        self.interval.retransmissions_received += 1;
    }
    /// A message that could not be parsed (or decompressed, with SigComp) or named no Call-ID, with no load step to count it in
    /// (`-trace_stat` `FailedUnexpectedMessage` counts the calls it fails).
    pub fn unexpected(&mut self) {
        self.total.unexpected += 1;
        self.interval.unexpected += 1;
    }
    /// A message for no call in progress (`-trace_stat` `OutOfCallMsgs`).
    pub fn out_of_call(&mut self) {
        self.total.out_of_call += 1;
        self.interval.out_of_call += 1;
    }
}

/// Percentiles of a delay, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Samples in the histogram; 0 leaves every other field 0.
    pub count: u64,
    /// Median, ms (HdrHistogram, 3 significant digits).
    pub p50: f64,
    /// 90th percentile, ms.
    pub p90: f64,
    /// 95th percentile, ms.
    pub p95: f64,
    /// 99th percentile, ms.
    pub p99: f64,
    /// Largest sample, ms.
    pub max: f64,
    /// Arithmetic mean of the samples, ms.
    pub mean: f64,
}

impl Percentiles {
    /// The percentiles of `h`, whose samples are µs; all zero for an empty histogram.
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

/// The response times of one method's client transactions, ms: request
/// first sent → first final response (`final`), and → first provisional
/// response (`provisional`; none for most non-INVITE requests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TransactionTimes {
    /// Request first sent → first final response, ms.
    #[serde(rename = "final")]
    pub final_ms: Percentiles,
    /// Request first sent → first provisional response, ms.
    #[serde(rename = "provisional")]
    pub provisional_ms: Percentiles,
}

/// Each method's [`TransactionTimes`] in `c`, methods without a sample
/// left out.
pub fn transaction_map(methods: &[String], c: &Counters) -> BTreeMap<String, TransactionTimes> {
    methods
        .iter()
        .zip(c.txn_final_us.iter().zip(&c.txn_provisional_us))
        .filter(|(_, (f, p))| !f.is_empty() || !p.is_empty())
        .map(|(m, (f, p))| {
            (m.clone(), TransactionTimes { final_ms: Percentiles::of(f), provisional_ms: Percentiles::of(p) })
        })
        .collect()
}

/// Resource use of the system under test (`--sut-pid`), from /proc.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SutUsage {
    /// CPU time over wall time, % of one core (200 = two cores busy).
    pub cpu_percent: f64,
    /// Resident memory, KiB.
    pub rss_kib: u64,
}

/// A run's end result (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// "uac" for a scenario that places calls, "uas" for one that answers.
    pub role: &'static str,
    /// The scenario's name (its `<scenario name=…>`, or the built-in's name).
    pub scenario: String,
    /// "udp" or "tcp" (SIPp's `-t u1` or `-t t1`).
    pub transport: &'static str,
    /// Wall time of the run, s.
    pub elapsed_s: f64,
    /// The rate asked for at the start (calls/s).
    pub offered_cps: f64,
    /// Calls the load pattern asked for, some held back by `-l` ([`Counters::offered`]).
    pub offered_calls: u64,
    /// Calls started ([`Counters::attempted`]).
    pub attempted_calls: u64,
    /// Calls that reached the end of their scenario (`-trace_stat` `SuccessfulCall`).
    pub successful_calls: u64,
    /// Calls that failed (`-trace_stat` `FailedCall`).
    pub failed_calls: u64,
    /// Failed calls by cause (`invite_timeout`, `invite_486`, `unexpected_message`, ...).
    pub failures: BTreeMap<String, u64>,
    /// Calls still in progress when the run ended (neither successful nor
    /// failed).
    pub calls_in_progress: u64,
    /// Successful calls per second over the run.
    pub calls_per_s: f64,
    /// SIP messages sent, retransmissions included.
    pub messages_sent: u64,
    /// SIP messages received, retransmissions and out-of-call messages included.
    pub messages_received: u64,
    /// Messages sent and received per second over the run.
    pub messages_per_s: f64,
    /// Messages sent again (RFC 3261 §17.1.1.2 and §17.1.2.2 timers A/E, or a retransmitted request answered again;
    /// `-trace_stat` `Retransmissions`).
    pub retransmissions: u64,
    /// Messages the peer sent again.
    pub retransmissions_received: u64,
    /// Calls failed on a timer (Timer B/F, no ACK, a recv timeout; SIPp's `FailedTimeoutOnRecv` and
    /// `FailedMaxUDPRetrans`).
    pub timeouts: u64,
    /// Messages that matched no step of their call or could not be parsed (`FailedUnexpectedMessage` counts the calls).
    pub unexpected_messages: u64,
    /// Messages for no call in progress (late responses included).
    pub late_responses: u64,
    /// INVITE→200.
    pub setup_ms: Percentiles,
    /// INVITE→180.
    pub ringing_ms: Percentiles,
    /// The scenario's response times (`rtd`), by name.
    pub rtd_ms: BTreeMap<String, Percentiles>,
    /// Client transactions' response times, by request method.
    pub transactions_ms: BTreeMap<String, TransactionTimes>,
    /// The system under test, averaged (CPU) and at its peak (memory).
    pub sut: Option<SutUsage>,
    /// What SigComp did, with `--sigcomp`.
    pub sigcomp: Option<crate::sigcomp_layer::SigcompCounts>,
    /// What the limited-capacity server in front of a UAS did, with a
    /// service model.
    pub service: Option<crate::service::ServiceCounts>,
}

impl Summary {
    /// The summary of recorder `r` after `elapsed`: `role` "uac" or "uas", the scenario's name, `transport` "udp" or
    /// "tcp", the rate asked for at the start (calls/s), the calls still in progress, and the system under test's usage;
    /// rates are over `elapsed` (at least 1 ns). `sigcomp` and `service` are left None for the caller.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        role: &'static str,
        scenario: &str,
        transport: &'static str,
        r: &Recorder,
        elapsed: Duration,
        offered_cps: f64,
        in_progress: u64,
        sut: Option<SutUsage>,
    ) -> Summary {
        let c = &r.total;
        let secs = elapsed.as_secs_f64().max(1e-9);
        Summary {
            role,
            scenario: scenario.to_string(),
            transport,
            elapsed_s: elapsed.as_secs_f64(),
            offered_cps,
            offered_calls: c.offered,
            attempted_calls: c.attempted,
            successful_calls: c.successful,
            failed_calls: c.failed,
            failures: c.failures.clone(),
            calls_in_progress: in_progress,
            calls_per_s: c.successful as f64 / secs,
            messages_sent: c.messages_sent,
            messages_received: c.messages_received,
            messages_per_s: (c.messages_sent + c.messages_received) as f64 / secs,
            retransmissions: c.retransmissions,
            retransmissions_received: c.retransmissions_received,
            timeouts: c.timeouts,
            unexpected_messages: c.unexpected,
            late_responses: c.out_of_call,
            setup_ms: Percentiles::of(&c.setup_us),
            ringing_ms: Percentiles::of(&c.ringing_us),
            rtd_ms: rtd_map(&r.rtd_names, c),
            transactions_ms: transaction_map(&r.methods, c),
            sut,
            sigcomp: None,
            service: None,
        }
    }
}

fn rtd_map(names: &[String], c: &Counters) -> BTreeMap<String, Percentiles> {
    names.iter().zip(&c.rtd_us).map(|(n, h)| (n.clone(), Percentiles::of(h))).collect()
}

/// One reporting interval (`-fd`) of a run, as a row for a results store.
#[derive(Debug, Clone, Serialize)]
pub struct Interval {
    /// Seconds since the run started, at the interval's end.
    pub t_s: f64,
    /// The rate asked for at the interval's end, calls/s.
    pub offered_cps: f64,
    /// Calls started in the interval.
    pub attempted: u64,
    /// Calls that reached the end of their scenario in the interval.
    pub successful: u64,
    /// Calls that failed in the interval.
    pub failed: u64,
    /// Successful calls per second of the interval.
    pub calls_per_s: f64,
    /// Messages sent again in the interval (RFC 3261 §17 timers; `-trace_stat` `Retransmissions(P)`).
    pub retransmissions: u64,
    /// Set-up delay (INVITE→2xx) median over the interval, ms.
    pub setup_p50_ms: f64,
    /// Set-up delay 95th percentile over the interval, ms.
    pub setup_p95_ms: f64,
    /// Set-up delay 99th percentile over the interval, ms.
    pub setup_p99_ms: f64,
    /// Calls in progress at the interval's end (`-trace_stat` `CurrentCall`).
    pub active_calls: u64,
    /// The interval's length, s.
    pub span_s: f64,
    /// The load step in progress at the interval's end.
    pub step: usize,
    /// Calls the load pattern asked for (some held back by `-l`).
    pub offered: u64,
    /// Failed calls of the interval by cause.
    pub failures: BTreeMap<String, u64>,
    /// SIP messages sent in the interval, retransmissions included.
    pub messages_sent: u64,
    /// SIP messages received in the interval.
    pub messages_received: u64,
    /// Messages sent and received per second of the interval.
    pub messages_per_s: f64,
    /// Calls failed on a timer in the interval.
    pub timeouts: u64,
    /// Messages that matched no step of their call in the interval.
    pub unexpected: u64,
    /// Set-up delay 90th percentile over the interval, ms.
    pub setup_p90_ms: f64,
    /// Longest set-up delay of the interval, ms.
    pub setup_max_ms: f64,
    /// INVITE→first 18x median over the interval, ms.
    pub ringing_p50_ms: f64,
    /// INVITE→first 18x 95th percentile over the interval, ms.
    pub ringing_p95_ms: f64,
    /// The scenario's response times (`rtd`) over the interval, by name.
    pub rtd_ms: BTreeMap<String, Percentiles>,
    /// Client transactions' response times, by request method.
    pub transactions_ms: BTreeMap<String, TransactionTimes>,
    /// The system under test over the interval (`--sut-pid`).
    pub sut_cpu_percent: Option<f64>,
    /// Resident memory of the system under test at the interval's end, KiB (`--sut-pid`).
    pub sut_rss_kib: Option<u64>,
}

impl Interval {
    /// The row of an interval ending `t_s` seconds into the run and lasting `span_s` s (rates are over it, at least
    /// 1 ns): load step `step`, rate `offered_cps` calls/s, `c` the interval's counters (names from `r`), `active`
    /// calls in progress, `sut` the system under test's usage.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        t_s: f64,
        span_s: f64,
        step: usize,
        offered_cps: f64,
        r: &Recorder,
        c: &Counters,
        active: usize,
        sut: Option<SutUsage>,
    ) -> Interval {
        let span = span_s.max(1e-9);
        let setup = Percentiles::of(&c.setup_us);
        let ringing = Percentiles::of(&c.ringing_us);
        Interval {
            t_s,
            span_s,
            step,
            offered_cps,
            offered: c.offered,
            attempted: c.attempted,
            successful: c.successful,
            failed: c.failed,
            failures: c.failures.clone(),
            calls_per_s: c.successful as f64 / span,
            messages_sent: c.messages_sent,
            messages_received: c.messages_received,
            messages_per_s: (c.messages_sent + c.messages_received) as f64 / span,
            retransmissions: c.retransmissions,
            timeouts: c.timeouts,
            unexpected: c.unexpected,
            setup_p50_ms: setup.p50,
            setup_p90_ms: setup.p90,
            setup_p95_ms: setup.p95,
            setup_p99_ms: setup.p99,
            setup_max_ms: setup.max,
            ringing_p50_ms: ringing.p50,
            ringing_p95_ms: ringing.p95,
            rtd_ms: rtd_map(&r.rtd_names, c),
            transactions_ms: transaction_map(&r.methods, c),
            active_calls: active as u64,
            sut_cpu_percent: sut.map(|s| s.cpu_percent),
            sut_rss_kib: sut.map(|s| s.rss_kib),
        }
    }
}

/// The run's tail: from the end of its last load step to the end of the
/// run, when no call was placed any more and the run waited for the calls
/// in progress (an overloaded system answers late, after retransmissions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tail {
    /// Seconds since the run started.
    pub start_s: f64,
    /// Seconds since the run started, at the run's end.
    pub end_s: f64,
    /// Calls (of any step) that succeeded or failed in the tail.
    pub successful: u64,
    /// Calls (of any step) that failed in the tail.
    pub failed: u64,
    /// Calls still without a final answer when the run ended.
    pub unfinished: u64,
}

/// One load step (a rate of a stepped pattern; the whole run for other
/// patterns), as a row for a results store: calls count in the step they
/// started in.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// The step's index, from 0 in the order of the pattern.
    pub step: usize,
    /// The rate of the step, calls/s.
    pub offered_cps: f64,
    /// When the step started and ended (its last call placed, and one
    /// arrival gap after it), seconds since the run started: the time in
    /// which the step offered its calls, neither a pause after it nor the
    /// run's tail.
    pub start_s: f64,
    /// When the step ended, seconds since the run started (see `start_s`).
    pub end_s: f64,
    /// `end_s - start_s`.
    pub duration_s: f64,
    /// Calls the load pattern asked for in the step (some held back by `-l`).
    pub offered: u64,
    /// Calls started in the step.
    pub attempted: u64,
    /// Calls started in the step that reached the end of their scenario (whenever they ended).
    pub successful: u64,
    /// Calls started in the step that failed (whenever they ended).
    pub failed: u64,
    /// Failed calls by cause (`invite_timeout`, `invite_503`, ...).
    pub failures: BTreeMap<String, u64>,
    /// Failed calls whose cause was a 5xx final response.
    pub failed_5xx: u64,
    /// Calls failed on a timer (Timer B/F, no ACK, a recv timeout).
    pub timeouts: u64,
    /// Messages of the step's calls sent again (RFC 3261 §17 timers).
    pub retransmissions: u64,
    /// Messages that matched no step of one of the step's calls.
    pub unexpected: u64,
    /// Successful calls of the step per second of the step
    /// (`successful / duration_s`).
    pub calls_per_s: f64,
    /// INVITE→2xx of the step's calls, ms.
    pub setup_ms: Percentiles,
    /// INVITE→first 18x of the step's calls, ms.
    pub ringing_ms: Percentiles,
    /// The scenario's response times (`rtd`) of the step's calls, by name.
    pub rtd_ms: BTreeMap<String, Percentiles>,
    /// Client transactions' response times, by request method.
    pub transactions_ms: BTreeMap<String, TransactionTimes>,
    /// The last step only: the run's tail after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<Tail>,
}

/// Whether a failure cause names a 5xx final response (`invite_503`).
fn is_5xx(cause: &str) -> bool {
    cause
        .rsplit_once('_')
        .is_some_and(|(_, code)| code.len() == 3 && code.starts_with('5') && code.parse::<u16>().is_ok())
}

impl StepReport {
    /// The step's row: `c` counts the calls that started between
    /// `start_s` and `end_s`.
    pub fn of(step: usize, offered_cps: f64, start_s: f64, end_s: f64, r: &Recorder, c: &Counters) -> StepReport {
        let duration_s = (end_s - start_s).max(0.0);
        StepReport {
            step,
            offered_cps,
            start_s,
            end_s,
            duration_s,
            offered: c.offered,
            attempted: c.attempted,
            successful: c.successful,
            failed: c.failed,
            failures: c.failures.clone(),
            failed_5xx: c.failures.iter().filter(|(k, _)| is_5xx(k)).map(|(_, n)| n).sum(),
            timeouts: c.timeouts,
            retransmissions: c.retransmissions,
            unexpected: c.unexpected,
            calls_per_s: c.successful as f64 / duration_s.max(1e-9),
            setup_ms: Percentiles::of(&c.setup_us),
            ringing_ms: Percentiles::of(&c.ringing_us),
            rtd_ms: rtd_map(&r.rtd_names, c),
            transactions_ms: transaction_map(&r.methods, c),
            tail: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SIPp's buckets: a value counts below the first border it is under,
    /// else past the last; means and deviations by its short formula.
    #[test]
    fn sipps_buckets_and_moments() {
        let mut r = Recorder::new(vec!["1".into(), "2".into()]);
        r.set_repartitions(&[10, 20], 1, &[100]);
        for ms in [0, 9, 10, 19, 20, 500] {
            r.rtd(0, 0, Duration::from_millis(ms));
            r.rtd(0, 1, Duration::from_millis(ms));
        }
        assert_eq!(r.sipp.rtd_buckets, vec![vec![2, 2, 2]], "the second response time has no table");
        r.call_ended(Duration::from_millis(99));
        r.call_ended(Duration::from_millis(100));
        r.call_ended(Duration::from_micros(100_999));
        assert_eq!(r.sipp.call_length_buckets, vec![1, 2]);
        let m = r.sipp.call_length;
        assert_eq!((m.count, m.sum, m.sum_sq), (3, 299, 99 * 99 + 2 * 100 * 100));
        assert!((m.mean() - 299.0 / 3.0).abs() < 1e-9);
        // Samples 99, 100, 100: variance 1/3.
        assert!((m.stdev() - (1.0f64 / 3.0).sqrt()).abs() < 1e-9, "{}", m.stdev());
        let earlier = Moments { count: 1, sum: 99, sum_sq: 99 * 99 };
        assert_eq!(m.since(&earlier), Moments { count: 2, sum: 200, sum_sq: 20_000 });
        assert_eq!(m.since(&earlier).stdev(), 0.0);
        assert_eq!(Moments::default().mean(), 0.0);
    }

    #[test]
    fn a_steps_row_counts_its_own_failures_by_cause() {
        let mut r = Recorder::default();
        r.call_attempted(0);
        r.call_attempted(1);
        r.call_attempted(1);
        r.call_attempted(1);
        r.call_failed(1, "invite_503", false);
        r.call_failed(1, "invite_timeout", true);
        r.call_failed(1, "invite_486", false);
        r.retransmitted(1);
        r.retransmitted(1);
        r.unexpected_in(0);
        let row = |i: usize| StepReport::of(i, 10.0, 0.0, 2.0, &r, &r.steps[i]);
        let (s0, s1) = (row(0), row(1));
        assert_eq!((s1.failed, s1.failed_5xx, s1.timeouts, s1.retransmissions, s1.unexpected), (3, 1, 1, 2, 0));
        assert_eq!((s0.failed, s0.failed_5xx, s0.timeouts, s0.retransmissions, s0.unexpected), (0, 0, 0, 0, 1));
        assert_eq!((r.total.retransmissions, r.total.unexpected), (2, 1));
        assert!(is_5xx("bye_500") && !is_5xx("invite_486") && !is_5xx("invite_timeout") && !is_5xx("x_5000"));
    }

    #[test]
    fn a_steps_rate_is_over_its_duration_and_calls_after_the_load_are_the_tail() {
        let mut r = Recorder::default();
        let t0 = Instant::now();
        for _ in 0..30 {
            r.call_attempted(0);
        }
        for _ in 0..20 {
            r.call_succeeded(0, t0);
        }
        r.load_ended(t0 + Duration::from_millis(1));
        for _ in 0..10 {
            r.call_succeeded(0, t0 + Duration::from_secs(5));
        }
        // 30 calls of a 3 s step, 10 of them answered in the tail.
        let row = StepReport::of(0, 10.0, 12.0, 15.0, &r, &r.steps[0]);
        assert_eq!((row.duration_s, row.calls_per_s), (3.0, 10.0));
        assert_eq!((r.tail_successful, r.tail_failed), (10, 0));
    }
}
