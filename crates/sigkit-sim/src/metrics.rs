//! Per-second metrics (SIP overload thesis §3.2.4 and §4.1.1): fRpD,
//! success rate and request transmissions bucketed by the second the
//! transaction started; utilisation, pending transactions, goodput and the
//! detectors' outputs by the second they happened. And the seed's summary,
//! with its collapse verdict.

use serde::{Deserialize, Serialize};
use sigkit_overload::detect::percentile;

use crate::kernel::{from_secs, to_secs, Nanos, SECOND};
use crate::scenario::Scenario;

/// One transaction of the UAC.
#[derive(Debug, Clone, Copy)]
pub struct TxnRecord {
    /// When the first request was sent.
    pub start: Nanos,
    /// Requests sent (RT).
    pub transmissions: u32,
    /// When the first final response came (None: timed out or still
    /// pending at the end).
    pub final_at: Option<Nanos>,
    /// The final response's status code (0 without one).
    pub code: u16,
    /// Background traffic (MESSAGE), not a registration or presence request.
    pub background: bool,
}

/// The detectors' and handler's state at the end of a second.
#[derive(Debug, Clone, Copy, Default)]
pub struct DetectorSnapshot {
    /// D1's last evaluation: the 95th percentile of the fRpD of the
    /// transactions answered in its window, seconds (thesis §4.2.2);
    /// `None` before a response came in a window.
    pub d1_p95: Option<f64>,
    /// D1's last verdict: the next hop is congested.
    pub d1_congested: bool,
    /// The last κ = ΔPT/Δλ observed at the upstream proxy (thesis §4.2.3);
    /// `None` before the first.
    pub kappa: Option<f64>,
    /// D2's last decision (Wald's test of κ's variance): congested.
    pub d2_congested: bool,
    /// The mean-shift variant's last decision (thesis §5.2.3): congested.
    pub d2_mean_congested: bool,
    /// T1 of new transactions from the upstream proxy toward the next hop,
    /// seconds (raised by H1); `None` with a single proxy.
    pub t1_next: Option<f64>,
    /// The RFC 7339 `oc` in force at the upstream proxy: the percentage of
    /// new requests to reject (0..=100); `None` unless the handler is
    /// `oc_loss`.
    pub oc: Option<u8>,
}

#[derive(Default, Clone)]
struct Second {
    goodput: u64,
    uac_retransmissions: u64,
    proxy_retransmissions: u64,
    drops_bottleneck: u64,
    drops: u64,
    rejections: u64,
    utilisation: Vec<f64>,
    uac_pending: u64,
    upstream_pending: Option<u64>,
    registrations: Option<u64>,
    subscriptions: Option<u64>,
    detectors: DetectorSnapshot,
}

/// Collects what happens during a run.
pub struct Recorder {
    seconds: Vec<Second>,
    proxies: usize,
    d1_first: Option<f64>,
    d1_seconds: u64,
    d2_first: Option<f64>,
    d2_mean_first: Option<f64>,
}

impl Recorder {
    pub(crate) fn new(sc: &Scenario) -> Recorder {
        let n = sc.duration.ceil() as usize;
        Recorder {
            seconds: vec![Second::default(); n],
            proxies: sc.proxies.len(),
            d1_first: None,
            d1_seconds: 0,
            d2_first: None,
            d2_mean_first: None,
        }
    }

    fn at(&mut self, now: Nanos) -> Option<&mut Second> {
        self.seconds.get_mut((now / SECOND) as usize)
    }

    pub(crate) fn goodput(&mut self, now: Nanos) {
        if let Some(s) = self.at(now) {
            s.goodput += 1;
        }
    }

    /// A retransmission by node `node` (0: the UAC).
    pub(crate) fn retransmission(&mut self, now: Nanos, node: usize) {
        if let Some(s) = self.at(now) {
            if node == 0 {
                s.uac_retransmissions += 1;
            } else {
                s.proxy_retransmissions += 1;
            }
        }
    }

    /// A message lost to a full queue of proxy `p`.
    pub(crate) fn drop(&mut self, now: Nanos, p: usize) {
        let last = p + 1 == self.proxies;
        if let Some(s) = self.at(now) {
            s.drops += 1;
            s.drops_bottleneck += u64::from(last);
        }
    }

    pub(crate) fn rejection(&mut self, now: Nanos) {
        if let Some(s) = self.at(now) {
            s.rejections += 1;
        }
    }

    pub(crate) fn d1_verdict(&mut self, now: Nanos, congested: bool) {
        if congested {
            self.d1_first.get_or_insert(to_secs(now));
            self.d1_seconds += 1;
        }
    }

    pub(crate) fn d2_verdict(&mut self, now: Nanos, congested: bool, mean_congested: bool) {
        if congested {
            self.d2_first.get_or_insert(to_secs(now));
        }
        if mean_congested {
            self.d2_mean_first.get_or_insert(to_secs(now));
        }
    }

    /// The end of the logging period that ends at `now`.
    pub(crate) fn log(
        &mut self,
        now: Nanos,
        utilisation: &[f64],
        uac_pending: usize,
        upstream_pending: Option<usize>,
        (registrations, subscriptions): (Option<usize>, Option<usize>),
        detectors: DetectorSnapshot,
    ) {
        let Some(s) = now.checked_sub(1).and_then(|t| self.at(t)) else { return };
        s.utilisation = utilisation.to_vec();
        s.uac_pending = uac_pending as u64;
        s.upstream_pending = upstream_pending.map(|p| p as u64);
        s.registrations = registrations.map(|r| r as u64);
        s.subscriptions = subscriptions.map(|r| r as u64);
        s.detectors = detectors;
    }
}

/// The metrics of one simulated second of one seed (table `sim_seconds`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SecondRow {
    /// The seed of the run the row belongs to.
    pub seed: u64,
    /// The second's start, in seconds.
    pub t: u64,
    /// Transactions the UAC started in this second.
    pub started: u64,
    /// Of those, with a final response (any code).
    pub answered: u64,
    /// Of those, with a 200.
    pub ok: u64,
    /// Of those, with a 503 from the upstream proxy's handler.
    pub rejected: u64,
    /// Of those, timed out (Timer F).
    pub timed_out: u64,
    /// answered / (answered + timed_out) (thesis eq. 3.11); None when no
    /// transaction of the second has ended.
    pub success_ratio: Option<f64>,
    /// Mean fRpD of the answered ones, seconds.
    pub frpd_mean: Option<f64>,
    /// 95th percentile of their fRpD, seconds.
    pub frpd_p95: Option<f64>,
    /// Mean requests sent per transaction (RT).
    pub transmissions_mean: Option<f64>,
    /// 200s the UAC received in this second.
    pub goodput: u64,
    /// Requests the UAC sent again in this second (Timer E, RFC 3261
    /// §17.1.2.2).
    pub uac_retransmissions: u64,
    /// Requests the proxies sent again in this second (Timer E of their
    /// client transactions), all proxies together.
    pub proxy_retransmissions: u64,
    /// Messages lost to full queues at the overloaded (last) proxy.
    pub drops: u64,
    /// Busy share of the upstream proxy's processor (two-proxy chains).
    pub utilisation_upstream: Option<f64>,
    /// Busy share of the overloaded (last) proxy's processor.
    pub utilisation: f64,
    /// UAC transactions in Trying at the second's end.
    pub uac_pending: u64,
    /// The upstream proxy's client transactions in Trying.
    pub upstream_pending: Option<u64>,
    /// D1's percentile at the second's end ([`DetectorSnapshot::d1_p95`]),
    /// seconds.
    pub d1_p95: Option<f64>,
    /// D1 found the next hop congested at its last evaluation.
    pub d1_congested: bool,
    /// The last κ observed ([`DetectorSnapshot::kappa`]).
    pub kappa: Option<f64>,
    /// D2's last decision was congested.
    pub d2_congested: bool,
    /// D2's mean-shift variant's last decision was congested.
    pub d2_mean_congested: bool,
    /// T1 of new transactions toward the overloaded proxy, seconds.
    pub t1_next: Option<f64>,
    /// RFC 7339 `oc` in force at the upstream proxy.
    pub oc: Option<u8>,
    /// New requests the upstream proxy rejected with 503 in this second.
    pub rejections: u64,
    /// Registration clients registered at the second's end (thesis §4.5.2,
    /// Figures 4.62 to 4.65), with a registration workload.
    pub registrations_active: Option<u64>,
    /// Presence subscriptions active (their watcher got a NOTIFY) at the
    /// second's end (thesis §4.5.1, Figures 4.49, 4.53, 4.57).
    pub subscriptions_active: Option<u64>,
}

/// One seed's outcome (table `sim_seeds`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedSummary {
    /// The seed of the run (its random streams derive from it).
    pub seed: u64,
    /// Fewer than `collapse_threshold` of the window's transactions got a 200.
    pub collapsed: bool,
    /// The thesis's success rate (any final response) over the window.
    pub window_success_ratio: f64,
    /// Share of the window's transactions answered with a 200.
    pub window_ok_ratio: f64,
    /// Mean 200s per second received in the window.
    pub window_goodput: f64,
    /// Mean busy share of the overloaded proxy in the window.
    pub window_utilisation: f64,
    /// Transactions the UAC started in the recorded time (`duration`;
    /// those started in the drain are not recorded).
    pub transactions: u64,
    /// Of those, answered 200 (or 401, the challenge a first REGISTER
    /// asks for).
    pub ok: u64,
    /// Of those, answered 503 by the upstream proxy's handler.
    pub rejected: u64,
    /// Of those, ended by the UAC's Timer F (64·T1) without a final
    /// response.
    pub timed_out: u64,
    /// The 95th percentile of the fRpD of every answered transaction,
    /// seconds; `None` when none was answered.
    pub frpd_p95: Option<f64>,
    /// Mean requests sent per transaction (RT), the first included.
    pub transmissions_mean: f64,
    /// The most UAC transactions in Trying at the end of any second.
    pub max_uac_pending: u64,
    /// The most client transactions in Trying at the upstream proxy at the
    /// end of any second; `None` with a single proxy.
    pub max_upstream_pending: Option<u64>,
    /// Messages lost to full queues at the overloaded (last) proxy over
    /// the recorded time.
    pub drops: u64,
    /// When D1 first found the next hop congested, seconds from the start;
    /// `None` if it never did.
    pub d1_first_detection: Option<f64>,
    /// D1 evaluations (one each `detectors.d1.interval`) that found the
    /// next hop congested.
    pub d1_congested_evaluations: u64,
    /// When D2 first decided congested, seconds from the start.
    pub d2_first_detection: Option<f64>,
    /// D2's decisions "congested" (each ends one sequential test).
    pub d2_alarms: u64,
    /// κ observations D2 took.
    pub d2_observations: u64,
    /// When the mean-shift variant first decided congested, seconds from
    /// the start.
    pub d2_mean_first_detection: Option<f64>,
    /// The mean-shift variant's decisions "congested".
    pub d2_mean_alarms: u64,
    /// Registration clients registered at the end of the recorded time.
    pub registrations_active_end: Option<u64>,
    /// The least number registered over the window.
    pub registrations_active_window_min: Option<u64>,
    /// Events the kernel processed in this run (drain included).
    pub events: u64,
    /// Presence subscriptions active at the end of the recorded time.
    pub subscriptions_active_end: Option<u64>,
    /// Share of the window's background (MESSAGE) transactions that ended
    /// with a 200.
    pub window_background_ok_ratio: f64,
}

#[derive(Default)]
struct Bucket {
    started: u64,
    answered: u64,
    ok: u64,
    rejected: u64,
    timed_out: u64,
    transmissions: u64,
    delays: Vec<f64>,
}

/// Counts of the Wald tests, from the network at the end of the run.
pub(crate) struct TestCounts {
    pub d2_alarms: u64,
    pub d2_observations: u64,
    pub d2_mean_alarms: u64,
    /// Events the kernel processed.
    pub events: u64,
}

pub(crate) fn finish(
    sc: &Scenario,
    seed: u64,
    rec: Recorder,
    txns: &[TxnRecord],
    tests: TestCounts,
) -> (SeedSummary, Vec<SecondRow>) {
    let n = rec.seconds.len();
    let mut buckets: Vec<Bucket> = (0..n).map(|_| Bucket::default()).collect();
    let mut all_delays = Vec::new();
    let (mut ok, mut rejected, mut timed_out, mut transmissions) = (0, 0, 0, 0u64);
    let horizon = from_secs(sc.duration + sc.drain);
    // Transactions started in the drain are not recorded: the sources go on
    // only so that the recorded ones end as they would in a longer run.
    let recorded: Vec<&TxnRecord> = txns.iter().filter(|t| ((t.start / SECOND) as usize) < n).collect();
    for t in &recorded {
        let b = &mut buckets[(t.start / SECOND) as usize];
        b.started += 1;
        b.transmissions += u64::from(t.transmissions);
        transmissions += u64::from(t.transmissions);
        match t.final_at {
            Some(at) => {
                b.answered += 1;
                let d = to_secs(at - t.start);
                b.delays.push(d);
                all_delays.push(d);
                match t.code {
                    // The 401 that challenges a first REGISTER is the answer
                    // it asks for (thesis §3.3.5, Figure 3.12).
                    200 | 401 => {
                        b.ok += 1;
                        ok += 1;
                    }
                    503 => {
                        b.rejected += 1;
                        rejected += 1;
                    }
                    _ => {}
                }
            }
            // Timer F of the UAC is 64·T1 after the start.
            None if t.start + from_secs(64.0 * sc.timers.t1) <= horizon => {
                b.timed_out += 1;
                timed_out += 1;
            }
            None => {}
        }
    }
    let rows: Vec<SecondRow> = buckets
        .iter_mut()
        .zip(&rec.seconds)
        .enumerate()
        .map(|(t, (b, s))| second_row(seed, t as u64, b, s, rec.proxies))
        .collect();
    let [from, to] = sc.collapse_window;
    let window: Vec<&SecondRow> = rows.iter().filter(|r| (r.t as f64) >= from && ((r.t + 1) as f64) <= to).collect();
    let sum = |f: &dyn Fn(&SecondRow) -> u64| window.iter().map(|r| f(r)).sum::<u64>();
    let (w_answered, w_ok, w_timed_out) = (sum(&|r| r.answered), sum(&|r| r.ok), sum(&|r| r.timed_out));
    let w_ended = (w_answered + w_timed_out).max(1);
    let window_ok_ratio = w_ok as f64 / w_ended as f64;
    let seconds = window.len().max(1) as f64;
    let summary = SeedSummary {
        seed,
        collapsed: window_ok_ratio < sc.collapse_threshold,
        window_success_ratio: w_answered as f64 / w_ended as f64,
        window_ok_ratio,
        window_goodput: sum(&|r| r.goodput) as f64 / seconds,
        window_utilisation: window.iter().map(|r| r.utilisation).sum::<f64>() / seconds,
        transactions: recorded.len() as u64,
        ok,
        rejected,
        timed_out,
        frpd_p95: percentile(&mut all_delays, 0.95),
        transmissions_mean: transmissions as f64 / (recorded.len().max(1) as f64),
        max_uac_pending: rows.iter().map(|r| r.uac_pending).max().unwrap_or(0),
        max_upstream_pending: rows.iter().filter_map(|r| r.upstream_pending).max(),
        drops: rows.iter().map(|r| r.drops).sum(),
        d1_first_detection: rec.d1_first,
        d1_congested_evaluations: rec.d1_seconds,
        d2_first_detection: rec.d2_first,
        d2_alarms: tests.d2_alarms,
        d2_observations: tests.d2_observations,
        d2_mean_first_detection: rec.d2_mean_first,
        d2_mean_alarms: tests.d2_mean_alarms,
        registrations_active_end: rows.last().and_then(|r| r.registrations_active),
        registrations_active_window_min: window.iter().filter_map(|r| r.registrations_active).min(),
        events: tests.events,
        subscriptions_active_end: rows.last().and_then(|r| r.subscriptions_active),
        window_background_ok_ratio: background_ok_ratio(sc, &recorded, horizon),
    };
    (summary, rows)
}

/// One second's row: the transactions that started in it (`b`) and what
/// the recorder sampled (`s`).
fn second_row(seed: u64, t: u64, b: &mut Bucket, s: &Second, proxies: usize) -> SecondRow {
    let last = proxies - 1;
    let ended = b.answered + b.timed_out;
    SecondRow {
        seed,
        t,
        started: b.started,
        answered: b.answered,
        ok: b.ok,
        rejected: b.rejected,
        timed_out: b.timed_out,
        success_ratio: (ended > 0).then(|| b.answered as f64 / ended as f64),
        frpd_mean: (!b.delays.is_empty()).then(|| b.delays.iter().sum::<f64>() / b.delays.len() as f64),
        frpd_p95: percentile(&mut b.delays, 0.95),
        transmissions_mean: (b.started > 0).then(|| b.transmissions as f64 / b.started as f64),
        goodput: s.goodput,
        uac_retransmissions: s.uac_retransmissions,
        proxy_retransmissions: s.proxy_retransmissions,
        drops: s.drops_bottleneck,
        utilisation_upstream: (proxies >= 2).then(|| s.utilisation.get(last - 1).copied().unwrap_or(0.0)),
        utilisation: s.utilisation.get(last).copied().unwrap_or(0.0),
        uac_pending: s.uac_pending,
        upstream_pending: s.upstream_pending,
        d1_p95: s.detectors.d1_p95,
        d1_congested: s.detectors.d1_congested,
        kappa: s.detectors.kappa,
        d2_congested: s.detectors.d2_congested,
        d2_mean_congested: s.detectors.d2_mean_congested,
        t1_next: s.detectors.t1_next,
        oc: s.detectors.oc,
        rejections: s.rejections,
        registrations_active: s.registrations,
        subscriptions_active: s.subscriptions,
    }
}

/// Of the background transactions that started in the collapse window and
/// ended (answered, or past the UAC's Timer F within the run), the share
/// answered 200.
fn background_ok_ratio(sc: &Scenario, recorded: &[&TxnRecord], horizon: Nanos) -> f64 {
    let [from, to] = sc.collapse_window;
    let in_window = |t: &&&TxnRecord| {
        let s = to_secs(t.start);
        t.background && s >= from && s < to
    };
    let ended = recorded
        .iter()
        .filter(in_window)
        .filter(|t| t.final_at.is_some() || t.start + from_secs(64.0 * sc.timers.t1) <= horizon)
        .count();
    let ok = recorded.iter().filter(in_window).filter(|t| t.code == 200).count();
    ok as f64 / ended.max(1) as f64
}
