//! Overload control toward the upstream: detecting that the SIP server
//! behind the proxy is congested, and shedding load before it collapses.
//!
//! The SIP overload thesis (C. Egger, "Improvement Strategies for the
//! Signaling Performance of the Session Initiation Protocol", TU Wien 2012)
//! shows that a stateful SIP server carrying non-INVITE transactions over
//! UDP collapses under a short surge, because the requests it is slow to
//! answer are retransmitted (Timer E) and add to its load; and that the
//! server in front of it can see the congestion implicitly and handle it.
//! Its detectors run here, sans-IO, on the proxy's own transactions toward
//! the upstream; the detector code is `sigkit_overload::detect`, the one the
//! simulator runs:
//!
//! * D1 (§4.2.2): the 95th percentile of the final response delay (fRpD)
//!   over the last five seconds, evaluated every second, against 0.5 s;
//! * D2 (§4.2.3): the anomaly indicator κ = ΔP/Δλ of pending transactions
//!   P and new-request rate λ, each second, under Wald's sequential test of
//!   its variance; and the mean-shift variant of the thesis's lab (§5.2.3).
//!
//! The handler is chosen apart from the detector that drives it:
//!
//! * [`Handler::PendingCap`] (H2, §4.3.3): at most `max_pending` requests
//!   awaiting a final response from the upstream; beyond it, or while the
//!   detector fires, new out-of-dialog requests are answered 503 with
//!   Retry-After.
//! * [`Handler::RaiseT1`] (H1, §4.3.2): while the detector fires, new
//!   client transactions toward the upstream start from a raised T1, so
//!   Timer E adds less load; also when the upstream asks for it with
//!   `oc_t1`/`oc_t1_validity` in the proxy's Via (Listings 4.2, 4.3). Only
//!   in the transaction-stateful mode, where the proxy retransmits.
//! * [`Handler::OcLoss`]: RFC 7339 overload control. The proxy marks its
//!   Via with `oc` (§5.1); the upstream answers with `oc=N` (percent of
//!   requests to shed, §5.3), `oc-validity` and `oc-seq`, and the proxy
//!   sheds that share of new out-of-dialog requests with 503 (the "loss"
//!   algorithm, §5.10.1) until the validity ends.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Deserialize;
use sigkit_overload::config::{D1Config, D2Config, D2MeanConfig};
use sigkit_overload::detect::{AnomalyIndicator, DelayDetector, MeanTest, VarianceTest};
use sigkit_overload::via::T1Signal;

/// Which handler sheds load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Handler {
    /// Forward everything.
    #[default]
    None,
    /// The SIP overload thesis's H2: cap the requests pending at the upstream.
    PendingCap,
    /// RFC 7339 loss-based overload control, driven by the upstream.
    OcLoss,
    /// The SIP overload thesis's H1: raise T1 toward the upstream
    /// (transaction-stateful mode only).
    #[serde(rename = "t1")]
    RaiseT1,
}

/// Which detector drives the handler (all of them run, and are exported
/// as metrics, whichever is chosen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Detector {
    /// D1, the final response delay.
    #[default]
    D1,
    /// D2, Wald's test of the variance of κ.
    D2,
    /// D2's mean-shift variant (the thesis's lab).
    D2Mean,
    /// None: only the upstream's own `oc_t1` signal raises T1 (handler
    /// `t1` only; the thesis's proposal, §4.3.2).
    Via,
}

/// Overload control's keys in the configuration file (`[overload]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OverloadConfig {
    /// `none`, `pending_cap`, `t1` or `oc_loss`.
    pub handler: Handler,
    /// What drives `pending_cap` (with `delay_detector`) and `t1`: `d1`,
    /// `d2`, `d2_mean`, or `via` (t1 only).
    pub detector: Detector,
    /// pending_cap: requests awaiting a final response from the upstream
    /// at most. The default is what a server answering 1,000 requests/s
    /// within 0.5 s has pending; size it to the upstream's capacity times
    /// the set-up delay a caller tolerates.
    pub max_pending: usize,
    /// pending_cap: also shed while the detector fires (the key's name is
    /// from when D1 was the only one).
    pub delay_detector: bool,
    /// pending_cap with `delay_detector`: while the detector fires, shed
    /// only the new requests that find this many or more pending (the
    /// thesis's H2, §4.3.3: the cap holds while the trigger does); 0 sheds
    /// every new request while it fires.
    pub detector_cap: usize,
    /// D1's threshold on the 95th percentile of final response delay, ms.
    pub delay_threshold_ms: u64,
    /// D1's window, seconds.
    pub delay_window_s: u64,
    /// D2: Wald's sequential test of κ's standard deviation, σ0 against
    /// σ1 (thesis eq. 4.13-4.15). This is σ0, κ's standard deviation when
    /// the upstream is not congested; above 0. Default 0.962.
    pub d2_sigma0: f64,
    /// D2's σ1, κ's standard deviation when it is congested; above
    /// `d2_sigma0`. Default 20.392.
    pub d2_sigma1: f64,
    /// D2's α, the probability of deciding "congested" when it is not;
    /// in (0, 0.5). The mean-shift variant uses it too. Default 0.1.
    pub d2_alpha: f64,
    /// D2's β, the probability of deciding "not congested" when it is; in
    /// (0, 0.5). The mean-shift variant uses it too. Default 0.05.
    pub d2_beta: f64,
    /// D2's μ, κ's mean when not congested, about which the variance is
    /// taken. Default 0.056. D2's decisions show as
    /// `sigkit_proxy_overload_d2_alarm` and
    /// `sigkit_proxy_overload_d2_alarms{test="variance"}`.
    pub d2_mu: f64,
    /// D2's mean-shift variant: a sequential test of κ's mean, μ0 against
    /// μ1 with known σ (the thesis's lab, §5.2.3). This is μ0, κ's mean
    /// when not congested. Default 0.589.
    pub d2_mean_mu0: f64,
    /// The variant's μ1, κ's mean when congested; above `d2_mean_mu0`.
    /// Default 100.067.
    pub d2_mean_mu1: f64,
    /// The variant's σ, κ's standard deviation; above 0. Default 6.780.
    /// Its decisions show as `sigkit_proxy_overload_d2_mean_alarm` and
    /// `sigkit_proxy_overload_d2_alarms{test="mean"}`.
    pub d2_mean_sigma: f64,
    /// t1: the T1 of new client transactions toward the upstream while
    /// the detector fires, ms (thesis §4.3.2: 1 s).
    pub t1_raised_ms: u64,
    /// t1: how long T1 stays raised after the last evaluation that found
    /// the upstream congested, seconds (thesis: 60 s).
    pub t1_validity_s: u64,
    /// The T1 of client transactions toward the upstream otherwise, ms
    /// (RFC 3261 §17.1.1.1: 500 ms).
    pub t1_ms: u64,
    /// Retry-After of the 503s (RFC 3261 §21.5.4), seconds.
    pub retry_after_s: u32,
    /// A request with no final response after this many seconds is
    /// forgotten (64·T1, RFC 3261 Timer F).
    pub transaction_timeout_s: u64,
}

impl Default for OverloadConfig {
    fn default() -> Self {
        OverloadConfig {
            handler: Handler::None,
            detector: Detector::D1,
            max_pending: 500,
            delay_detector: true,
            detector_cap: 0,
            delay_threshold_ms: 500,
            delay_window_s: 5,
            d2_sigma0: 0.962,
            d2_sigma1: 20.392,
            d2_alpha: 0.1,
            d2_beta: 0.05,
            d2_mu: 0.056,
            d2_mean_mu0: 0.589,
            d2_mean_mu1: 100.067,
            d2_mean_sigma: 6.780,
            t1_raised_ms: 1000,
            t1_validity_s: 60,
            t1_ms: 500,
            retry_after_s: 5,
            transaction_timeout_s: 32,
        }
    }
}

impl OverloadConfig {
    fn d1(&self) -> D1Config {
        D1Config {
            window: self.delay_window_s as f64,
            interval: 1.0,
            threshold: self.delay_threshold_ms as f64 / 1000.0,
            ..D1Config::default()
        }
    }

    fn d2(&self) -> D2Config {
        D2Config {
            interval: 1.0,
            mu: self.d2_mu,
            sigma0: self.d2_sigma0,
            sigma1: self.d2_sigma1,
            alpha: self.d2_alpha,
            beta: self.d2_beta,
        }
    }

    fn d2_mean(&self) -> D2MeanConfig {
        D2MeanConfig {
            mu0: self.d2_mean_mu0,
            mu1: self.d2_mean_mu1,
            sigma: self.d2_mean_sigma,
            alpha: self.d2_alpha,
            beta: self.d2_beta,
        }
    }

    /// What the configuration cannot mean: (key, reason).
    pub fn check(&self, stateful: bool) -> Result<(), (&'static str, String)> {
        if self.handler == Handler::RaiseT1 && !stateful {
            return Err((
                "handler",
                "\"t1\" needs stateful = true: a stateless proxy does not retransmit, so its T1 changes nothing".into(),
            ));
        }
        if self.detector == Detector::Via && self.handler != Handler::RaiseT1 {
            return Err(("detector", "\"via\" is the upstream's T1 signal; it drives only handler = \"t1\"".into()));
        }
        if !(self.d2_sigma0 > 0.0 && self.d2_sigma1 > self.d2_sigma0) {
            return Err((
                "d2_sigma1",
                format!("need 0 < d2_sigma0 < d2_sigma1, got {} and {}", self.d2_sigma0, self.d2_sigma1),
            ));
        }
        if !(self.d2_mean_sigma > 0.0 && self.d2_mean_mu1 > self.d2_mean_mu0) {
            return Err(("d2_mean_mu1", "need d2_mean_mu0 < d2_mean_mu1 and d2_mean_sigma > 0".into()));
        }
        for (key, p) in [("d2_alpha", self.d2_alpha), ("d2_beta", self.d2_beta)] {
            if !(p > 0.0 && p < 0.5) {
                return Err((key, format!("{p} is not an error probability in (0, 0.5)")));
            }
        }
        if self.t1_ms == 0 || self.t1_raised_ms == 0 {
            return Err(("t1_ms", "T1 must be at least 1 ms".into()));
        }
        if self.delay_window_s == 0 {
            return Err(("delay_window_s", "must be at least 1".into()));
        }
        Ok(())
    }
}

/// What to do with a new request toward the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Send it to the upstream.
    Forward,
    /// Answer 503 with Retry-After, do not forward.
    Reject,
}

/// RFC 7339 §5.3: what the upstream last asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OcRequest {
    /// Percent of requests to shed, 0–100.
    reduction: u8,
    until: Instant,
    seq: f64,
}

/// Counters of overload control and the detectors' state, for the
/// metrics endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OverloadMetrics {
    /// New requests answered 503 instead of forwarded
    /// (`sigkit_proxy_overload_rejected`).
    pub rejected: u64,
    /// Requests forwarded that had no final response from the upstream
    /// within `transaction_timeout_s` (`sigkit_proxy_overload_timed_out`).
    pub timed_out: u64,
    /// Whether D1 fires now.
    pub delay_alarm: bool,
    /// Requests pending at the upstream now.
    pub pending: u64,
    /// The shed share the upstream asks for now (RFC 7339), percent.
    pub oc_reduction: u8,
    /// D1's last 95th percentile of final response delay, µs.
    pub delay_p95_us: u64,
    /// D2's last anomaly indicator κ.
    pub d2_kappa: f64,
    /// Whether D2's last decision (variance test) was "congested".
    pub d2_alarm: bool,
    /// Whether the mean-shift variant's last decision was "congested".
    pub d2_mean_alarm: bool,
    /// Decisions "congested" D2 took so far (each restarts the test, so
    /// the alarm flips with the load it sheds).
    pub d2_alarms: u64,
    /// The same for the mean-shift variant.
    pub d2_mean_alarms: u64,
    /// The T1 of new client transactions toward the upstream, ms.
    pub t1_ms: u64,
}

impl OverloadMetrics {
    /// Adds another shard's: counts and pending requests add up; of the
    /// detectors' readings the most alarming is kept (an alarm of any
    /// shard, the largest |κ|, delay, shed share and T1).
    pub fn add_shard(&mut self, o: &OverloadMetrics) {
        self.rejected += o.rejected;
        self.timed_out += o.timed_out;
        self.pending += o.pending;
        self.delay_alarm |= o.delay_alarm;
        self.oc_reduction = self.oc_reduction.max(o.oc_reduction);
        self.delay_p95_us = self.delay_p95_us.max(o.delay_p95_us);
        if o.d2_kappa.abs() > self.d2_kappa.abs() {
            self.d2_kappa = o.d2_kappa;
        }
        self.d2_alarm |= o.d2_alarm;
        self.d2_mean_alarm |= o.d2_mean_alarm;
        self.d2_alarms += o.d2_alarms;
        self.d2_mean_alarms += o.d2_mean_alarms;
        self.t1_ms = self.t1_ms.max(o.t1_ms);
    }
}

/// The overload state of one proxy shard.
pub struct Overload {
    config: OverloadConfig,
    /// Whether anything is tracked: a handler is on, or the proxy is
    /// transaction-stateful (its detectors then run for the metrics).
    active: bool,
    /// The detectors' time origin (they count seconds as f64).
    epoch: Option<Instant>,
    /// Requests forwarded upstream awaiting a final response, by the
    /// proxy's branch: when they went.
    pending: HashMap<String, Instant>,
    d1: DelayDetector,
    kappa: AnomalyIndicator,
    d2: VarianceTest,
    d2_mean: MeanTest,
    /// New requests forwarded since the last evaluation (D2's λ).
    new_requests: u64,
    /// H1: T1 raised to this until then (by the detector, or by the
    /// upstream's `oc_t1`).
    t1_raised: Option<(Duration, Instant)>,
    next_evaluation: Option<Instant>,
    oc: Option<OcRequest>,
    /// A xorshift state: which requests the loss algorithm sheds.
    rng: u64,
    metrics: OverloadMetrics,
}

impl Overload {
    /// `stateful`: the proxy keeps transactions, so the detectors run
    /// even without a handler.
    pub fn new(config: OverloadConfig, seed: u64, stateful: bool) -> Overload {
        let metrics = OverloadMetrics { t1_ms: config.t1_ms, ..OverloadMetrics::default() };
        Overload {
            active: config.handler != Handler::None || stateful,
            epoch: None,
            pending: HashMap::new(),
            d1: DelayDetector::new(config.d1()),
            kappa: AnomalyIndicator::default(),
            d2: VarianceTest::new(&config.d2()),
            d2_mean: MeanTest::new(&config.d2_mean()),
            new_requests: 0,
            t1_raised: None,
            next_evaluation: None,
            oc: None,
            rng: seed | 1,
            metrics,
            config,
        }
    }

    /// Whether requests toward the upstream are tracked: a handler is
    /// configured, or the proxy is transaction-stateful.
    pub fn enabled(&self) -> bool {
        self.active
    }

    /// `now` in the detectors' seconds.
    fn secs(&mut self, now: Instant) -> f64 {
        now.saturating_duration_since(*self.epoch.get_or_insert(now)).as_secs_f64()
    }

    /// Whether the chosen detector finds the upstream congested now.
    pub fn congested(&self) -> bool {
        match self.config.detector {
            Detector::D1 => self.metrics.delay_alarm,
            Detector::D2 => self.metrics.d2_alarm,
            Detector::D2Mean => self.metrics.d2_mean_alarm,
            Detector::Via => false,
        }
    }

    /// The T1 for a new client transaction toward the upstream (H1 raises
    /// it; transactions already running keep theirs, as in the thesis).
    pub fn t1(&self, now: Instant) -> Duration {
        match self.t1_raised {
            Some((t1, until)) if now < until => t1,
            _ => Duration::from_millis(self.config.t1_ms),
        }
    }

    fn raise_t1(&mut self, t1: Duration, until: Instant) {
        self.t1_raised = Some((t1, until));
        self.metrics.t1_ms = t1.as_millis() as u64;
    }

    /// The Via parameter that tells the upstream this proxy takes RFC
    /// 7339 overload control (§5.1), or "".
    pub fn via_param(&self) -> &'static str {
        if self.config.handler == Handler::OcLoss {
            ";oc"
        } else {
            ""
        }
    }

    /// The Retry-After of the 503s, seconds (`retry_after_s`, default 5).
    pub fn retry_after_s(&self) -> u32 {
        self.config.retry_after_s
    }

    /// The counters and the detectors' last readings, with the requests
    /// pending now.
    pub fn metrics(&self) -> OverloadMetrics {
        OverloadMetrics { pending: self.pending.len() as u64, ..self.metrics }
    }

    fn random_percent(&mut self) -> u8 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x % 100) as u8
    }

    /// Decides on a request toward the upstream. `sheddable` is false for
    /// what must never be refused for load: in-dialog requests, ACK,
    /// CANCEL (RFC 7339 §5.10.1 lets a client keep those; refusing a BYE
    /// only adds load later).
    pub fn admit(&mut self, now: Instant, sheddable: bool) -> Admission {
        if !sheddable {
            return Admission::Forward;
        }
        let reject = match self.config.handler {
            Handler::None => false,
            Handler::PendingCap => {
                self.pending.len() >= self.config.max_pending
                    || (self.config.delay_detector
                        && self.congested()
                        && self.pending.len() >= self.config.detector_cap)
            }
            Handler::RaiseT1 => false,
            Handler::OcLoss => match self.oc {
                Some(oc) if now < oc.until && oc.reduction > 0 => self.random_percent() < oc.reduction,
                _ => false,
            },
        };
        if reject {
            self.metrics.rejected += 1;
            Admission::Reject
        } else {
            Admission::Forward
        }
    }

    /// A request with the proxy's `branch` went to the upstream.
    pub fn forwarded(&mut self, now: Instant, branch: &str) {
        if self.enabled() {
            self.secs(now);
            if let std::collections::hash_map::Entry::Vacant(v) = self.pending.entry(branch.to_string()) {
                v.insert(now);
                self.new_requests += 1;
            }
            self.next_evaluation.get_or_insert(now + Duration::from_secs(1));
        }
    }

    /// A response from the upstream to the request with `branch`, with
    /// the proxy's Via as it came back: its RFC 7339 parameters (`oc`,
    /// `oc-validity`, `oc-seq`, `oc-algo`) and the thesis's `oc_t1`,
    /// `oc_t1_validity`, if any.
    pub fn response(&mut self, now: Instant, branch: &str, code: u16, via: Option<&sigkit_sip::Via<'_>>) {
        if !self.enabled() {
            return;
        }
        if code >= 200 {
            if let Some(sent) = self.pending.remove(branch) {
                let t = self.secs(now);
                self.d1.record(t, now.saturating_duration_since(sent).as_secs_f64());
            }
        }
        let Some(via) = via else { return };
        match self.config.handler {
            Handler::OcLoss => {
                if let Some(p) = OcParams::of(via) {
                    self.take_oc(now, p);
                }
            }
            Handler::RaiseT1 => {
                // Thesis §4.3.2: "use T1 = oc_t1 toward me for
                // oc_t1_validity" (ms), read in either spelling.
                let signal = T1Signal::from_params(via.params().map(|p| (p.name, p.value)));
                if let Some(s) = signal {
                    let until = now + Duration::from_millis(u64::from(s.validity_ms));
                    self.raise_t1(Duration::from_millis(u64::from(s.t1_ms)), until);
                    self.next_evaluation.get_or_insert(now + Duration::from_secs(1));
                }
            }
            Handler::None | Handler::PendingCap => {}
        }
    }

    fn take_oc(&mut self, now: Instant, p: OcParams<'_>) {
        // §5.3: only "loss" is ours; a value is a percentage 0-100.
        if p.algo.is_some_and(|a| !a.trim_matches('"').eq_ignore_ascii_case("loss")) {
            return;
        }
        let Some(reduction) = p.oc.and_then(|v| v.parse::<u8>().ok()).filter(|r| *r <= 100) else { return };
        let seq = p.seq.and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
        // §5.5: an older sequence number than the one in force is stale.
        if self.oc.is_some_and(|o| seq < o.seq) {
            return;
        }
        // §5.3: oc-validity in ms; 0 ends the request; absent, 500 ms.
        let validity = p.validity.and_then(|v| v.parse::<u64>().ok()).unwrap_or(500);
        self.oc = Some(OcRequest { reduction, until: now + Duration::from_millis(validity), seq });
        self.metrics.oc_reduction = reduction;
    }

    /// When the detectors are next evaluated (a second after the last, once
    /// the first request was tracked); `None` before.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_evaluation
    }

    /// Forgets requests past Timer F and evaluates the detectors once a
    /// second (D1's w and D2's interval, thesis §4.2.2, §4.2.3).
    pub fn handle_timeout(&mut self, now: Instant) {
        let Some(at) = self.next_evaluation else { return };
        if now < at {
            return;
        }
        let t = self.secs(now);
        let timeout = Duration::from_secs(self.config.transaction_timeout_s);
        let before = self.pending.len();
        self.pending.retain(|_, sent| now.saturating_duration_since(*sent) < timeout);
        self.metrics.timed_out += (before - self.pending.len()) as u64;
        // D1: with no response in the window, a request waiting longer
        // than the threshold counts as congestion (a silent upstream gives
        // no delay to measure).
        let oldest = self.pending.values().min().map(|sent| now.saturating_duration_since(*sent).as_secs_f64());
        self.metrics.delay_alarm = self.d1.evaluate(t, oldest);
        self.metrics.delay_p95_us = self.d1.last_p95.map_or(0, |p| (p * 1e6) as u64);
        // D2: κ of this interval's pending count and new-request rate,
        // over the nominal 1 s interval: λ is the count of new requests,
        // as in the simulator, so that Δλ = 0 means equal counts (a rate
        // over the timer's jittered interval would make Δλ tiny but not
        // 0, and κ huge).
        let rate = self.new_requests as f64;
        self.new_requests = 0;
        if let Some(k) = self.kappa.observe(self.pending.len() as f64, rate, 1.0) {
            self.metrics.d2_kappa = k;
            self.d2.observe(k);
            self.d2_mean.observe(k);
            self.metrics.d2_alarm = self.d2.congested;
            self.metrics.d2_mean_alarm = self.d2_mean.congested;
            self.metrics.d2_alarms = self.d2.alarms;
            self.metrics.d2_mean_alarms = self.d2_mean.alarms;
        }
        if self.config.handler == Handler::RaiseT1 && self.congested() {
            let until = now + Duration::from_secs(self.config.t1_validity_s);
            self.raise_t1(Duration::from_millis(self.config.t1_raised_ms), until);
        }
        if self.t1_raised.is_some_and(|(_, until)| now >= until) {
            self.t1_raised = None;
            self.metrics.t1_ms = self.config.t1_ms;
        }
        if self.oc.is_some_and(|o| now >= o.until) {
            self.oc = None;
            self.metrics.oc_reduction = 0;
        }
        // D2 needs its series without gaps, so evaluation goes on once
        // started.
        self.next_evaluation = Some(now + Duration::from_secs(1));
    }
}

/// The RFC 7339 parameters of a Via (values as written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OcParams<'a> {
    /// `oc`: the percentage of requests to shed under the loss algorithm
    /// (RFC 7339 §5.3, 0–100).
    pub oc: Option<&'a str>,
    /// `oc-validity`: how long the request holds, in milliseconds; 0 ends
    /// it (§5.3).
    pub validity: Option<&'a str>,
    /// `oc-seq`: the request's sequence number; one older than the request
    /// in force is stale and ignored (§5.5).
    pub seq: Option<&'a str>,
    /// `oc-algo`: the algorithm the upstream chose (§5.3); a request
    /// naming any but `loss` is ignored.
    pub algo: Option<&'a str>,
}

impl<'a> OcParams<'a> {
    /// The parameters of `via`, if it carries an `oc` value.
    pub fn of(via: &sigkit_sip::Via<'a>) -> Option<OcParams<'a>> {
        let oc = via.param("oc")??;
        Some(OcParams {
            oc: Some(oc),
            validity: via.param("oc-validity").flatten(),
            seq: via.param("oc-seq").flatten(),
            algo: via.param("oc-algo").flatten(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(handler: Handler) -> OverloadConfig {
        OverloadConfig { handler, max_pending: 3, ..OverloadConfig::default() }
    }

    #[test]
    fn the_pending_cap_sheds_new_requests_beyond_it_but_never_in_dialog_ones() {
        let t0 = Instant::now();
        let mut o = Overload::new(config(Handler::PendingCap), 7, false);
        for b in ["a", "b", "c"] {
            assert_eq!(o.admit(t0, true), Admission::Forward);
            o.forwarded(t0, b);
        }
        assert_eq!(o.admit(t0, true), Admission::Reject);
        assert_eq!(o.admit(t0, false), Admission::Forward, "in-dialog requests pass");
        o.response(t0 + Duration::from_millis(10), "a", 200, None);
        assert_eq!(o.admit(t0, true), Admission::Forward);
        assert_eq!(o.metrics().rejected, 1);
        assert_eq!(o.metrics().pending, 2);
        // A provisional response leaves the request pending.
        o.response(t0, "b", 100, None);
        assert_eq!(o.metrics().pending, 2);
    }

    #[test]
    fn with_a_detector_cap_a_firing_detector_sheds_only_beyond_it() {
        let t0 = Instant::now();
        let cfg = OverloadConfig { max_pending: 1000, detector_cap: 2, ..config(Handler::PendingCap) };
        let mut o = Overload::new(cfg, 7, false);
        // Silence past D1's threshold makes it fire.
        o.forwarded(t0, "a");
        o.handle_timeout(t0 + Duration::from_secs(1));
        assert!(o.congested());
        let now = t0 + Duration::from_secs(1);
        assert_eq!(o.admit(now, true), Admission::Forward, "1 pending, under the cap of 2");
        o.forwarded(now, "b");
        assert_eq!(o.admit(now, true), Admission::Reject, "2 pending while D1 fires");
        o.response(now, "a", 200, None);
        assert_eq!(o.admit(now, true), Admission::Forward);
        // Without the detector firing, only max_pending counts.
        let mut quiet = Overload::new(
            OverloadConfig { max_pending: 1000, detector_cap: 2, ..config(Handler::PendingCap) },
            7,
            false,
        );
        for b in ["x", "y", "z"] {
            assert_eq!(quiet.admit(t0, true), Admission::Forward);
            quiet.forwarded(t0, b);
        }
    }

    #[test]
    fn the_delay_detector_fires_on_slow_final_responses_and_on_silence() {
        let t0 = Instant::now();
        let mut o = Overload::new(OverloadConfig { max_pending: 1000, ..config(Handler::PendingCap) }, 7, false);
        for i in 0..20 {
            let b = format!("b{i}");
            o.forwarded(t0, &b);
            o.response(t0 + Duration::from_millis(50), &b, 200, None);
        }
        o.handle_timeout(t0 + Duration::from_secs(1));
        assert!(!o.metrics().delay_alarm);
        for i in 0..20 {
            let b = format!("s{i}");
            o.forwarded(t0 + Duration::from_secs(1), &b);
            o.response(t0 + Duration::from_millis(1900), &b, 200, None);
        }
        o.handle_timeout(t0 + Duration::from_secs(2));
        assert!(o.metrics().delay_alarm, "p95 0.9 s > 0.5 s: {:?}", o.metrics());
        assert_eq!(o.admit(t0 + Duration::from_secs(2), true), Admission::Reject);
        // Five seconds on, the slow ones leave the window.
        o.handle_timeout(t0 + Duration::from_secs(8));
        assert!(!o.metrics().delay_alarm);
        // Requests that get no answer at all fire it too.
        o.forwarded(t0 + Duration::from_secs(8), "silent");
        o.handle_timeout(t0 + Duration::from_secs(9));
        assert!(o.metrics().delay_alarm);
        o.handle_timeout(t0 + Duration::from_secs(60));
        assert_eq!(o.metrics().timed_out, 1);
        assert_eq!(o.metrics().pending, 0);
    }

    #[test]
    fn oc_loss_sheds_the_share_the_upstream_asks_for_while_it_is_valid() {
        let t0 = Instant::now();
        let mut o = Overload::new(config(Handler::OcLoss), 12345, false);
        assert_eq!(o.via_param(), ";oc");
        let via_text = "SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bKx;oc=40;oc-validity=2000;oc-seq=10.5;oc-algo=\"loss\"";
        let via = sigkit_sip::Via::parse(via_text).unwrap();
        o.forwarded(t0, "z9hG4bKx");
        o.response(t0, "z9hG4bKx", 200, Some(&via));
        assert_eq!(o.metrics().oc_reduction, 40);
        let shed = (0..10_000).filter(|_| o.admit(t0 + Duration::from_millis(10), true) == Admission::Reject).count();
        assert!((3_500..4_500).contains(&shed), "{shed} of 10000 shed for oc=40");
        assert_eq!(o.admit(t0, false), Admission::Forward);
        // An older oc-seq does not replace it; validity ends it.
        let stale = sigkit_sip::Via::parse("SIP/2.0/UDP h;branch=z9hG4bKy;oc=0;oc-seq=9").unwrap();
        o.response(t0, "z9hG4bKy", 200, Some(&stale));
        assert_eq!(o.metrics().oc_reduction, 40);
        let later = t0 + Duration::from_millis(2500);
        assert_eq!((0..100).filter(|_| o.admit(later, true) == Admission::Reject).count(), 0);
        let other = sigkit_sip::Via::parse("SIP/2.0/UDP h;branch=z9hG4bKz;oc=50;oc-algo=\"rate\"").unwrap();
        o.response(t0, "z9hG4bKz", 200, Some(&other));
        assert_eq!(o.metrics().oc_reduction, 40, "an algorithm other than loss is not ours");
    }

    #[test]
    fn h1_raises_t1_while_d1_fires_and_lets_it_fall_after_the_validity() {
        let t0 = Instant::now();
        let c = OverloadConfig { handler: Handler::RaiseT1, ..OverloadConfig::default() };
        let mut o = Overload::new(c, 1, true);
        assert_eq!(o.t1(t0), Duration::from_millis(500));
        for i in 0..20 {
            let b = format!("b{i}");
            o.forwarded(t0, &b);
            o.response(t0 + Duration::from_millis(900), &b, 200, None);
        }
        o.handle_timeout(t0 + Duration::from_secs(1));
        assert!(o.congested());
        assert_eq!(o.t1(t0 + Duration::from_secs(1)), Duration::from_secs(1));
        assert_eq!(o.metrics().t1_ms, 1000);
        assert_eq!(o.admit(t0, true), Admission::Forward, "H1 sheds nothing");
        // The slow answers leave D1's window; T1 stays raised for 60 s
        // after the last evaluation that found congestion.
        o.handle_timeout(t0 + Duration::from_secs(10));
        assert!(!o.congested());
        assert_eq!(o.t1(t0 + Duration::from_secs(60)), Duration::from_secs(1));
        o.handle_timeout(t0 + Duration::from_secs(62));
        assert_eq!(o.t1(t0 + Duration::from_secs(62)), Duration::from_millis(500));
        assert_eq!(o.metrics().t1_ms, 500);
    }

    #[test]
    fn d2_decides_congested_when_pending_transactions_rise_at_a_steady_rate() {
        let t0 = Instant::now();
        let c = OverloadConfig { handler: Handler::PendingCap, detector: Detector::D2, ..OverloadConfig::default() };
        let mut o = Overload::new(c, 1, true);
        let mut n = 0;
        // 50 new requests a second, none answered.
        for s in 0..4u64 {
            for _ in 0..50 {
                n += 1;
                o.forwarded(t0 + Duration::from_secs(s), &n.to_string());
            }
            o.handle_timeout(t0 + Duration::from_secs(s + 1));
        }
        let m = o.metrics();
        assert!(m.d2_alarm && m.d2_alarms >= 1, "{m:?}");
        assert_eq!(m.d2_kappa, 50.0, "a flat rate: kappa is the rise of P per interval");
        assert_eq!(o.admit(t0 + Duration::from_secs(4), true), Admission::Reject);
    }

    #[test]
    fn no_handler_forwards_everything_and_keeps_nothing() {
        let t0 = Instant::now();
        let mut o = Overload::new(config(Handler::None), 1, false);
        for i in 0..10 {
            o.forwarded(t0, &i.to_string());
            assert_eq!(o.admit(t0, true), Admission::Forward);
        }
        assert_eq!(o.metrics().pending, 0);
        assert_eq!(o.poll_timeout(), None);
        assert_eq!(o.via_param(), "");
    }
}
