//! Overload control toward the upstream: detecting that the SIP server
//! behind the proxy is congested, and shedding load before it collapses.
//!
//! The SIP overload thesis (C. Egger, "Improvement Strategies for the Signaling Performance of the Session Initiation Protocol", TU Wien) shows that a
//! stateful SIP server carrying non-INVITE transactions over UDP collapses
//! under a short surge, because the requests it is slow to answer are
//! retransmitted (Timer E) and add to its load; and that the server in
//! front of it can see the congestion in the delay of final responses and
//! shed load with 503. Two handlers of that kind run here, sans-IO:
//!
//! * [`Handler::PendingCap`] (the seed's H2): at most `max_pending`
//!   requests awaiting a final response from the upstream; beyond it, or
//!   while the delay detector fires, new out-of-dialog requests are
//!   answered 503 with Retry-After.
//! * [`Handler::OcLoss`]: RFC 7339 overload control. The proxy marks its
//!   Via with `oc` (§5.1); the upstream answers with `oc=N` (percent of
//!   requests to shed, §5.3), `oc-validity` and `oc-seq`, and the proxy
//!   sheds that share of new out-of-dialog requests with 503 (the "loss"
//!   algorithm, §5.10.1) until the validity ends.
//!
//! The detector is the seed's D1: the 95th percentile of the final
//! response delay (fRpD) over the last five seconds, evaluated every
//! second, against a threshold of 0.5 s.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde::Deserialize;

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
}

/// Overload control's keys in the configuration file (`[overload]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OverloadConfig {
    /// `none`, `pending_cap` or `oc_loss`.
    pub handler: Handler,
    /// pending_cap: requests awaiting a final response from the upstream
    /// at most. The default is what a server answering 1,000 requests/s
    /// within 0.5 s has pending; size it to the upstream's capacity times
    /// the set-up delay a caller tolerates.
    pub max_pending: usize,
    /// pending_cap: also shed while the delay detector (D1) fires.
    pub delay_detector: bool,
    /// D1's threshold on the 95th percentile of final response delay, ms.
    pub delay_threshold_ms: u64,
    /// D1's window, seconds.
    pub delay_window_s: u64,
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
            max_pending: 500,
            delay_detector: true,
            delay_threshold_ms: 500,
            delay_window_s: 5,
            retry_after_s: 5,
            transaction_timeout_s: 32,
        }
    }
}

/// What to do with a new request toward the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
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

/// Counters of overload control, for the metrics endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OverloadMetrics {
    pub rejected: u64,
    pub timed_out: u64,
    /// Whether D1 fires now.
    pub delay_alarm: bool,
    /// Requests pending at the upstream now.
    pub pending: u64,
    /// The shed share the upstream asks for now (RFC 7339), percent.
    pub oc_reduction: u8,
    /// D1's last 95th percentile of final response delay, µs.
    pub delay_p95_us: u64,
}

/// The overload state of one proxy shard.
#[derive(Debug)]
pub struct Overload {
    config: OverloadConfig,
    /// Requests forwarded upstream awaiting a final response, by the
    /// proxy's branch: when they went.
    pending: HashMap<String, Instant>,
    /// (when answered, final response delay) over the detector's window.
    delays: VecDeque<(Instant, Duration)>,
    next_evaluation: Option<Instant>,
    oc: Option<OcRequest>,
    /// A xorshift state: which requests the loss algorithm sheds.
    rng: u64,
    metrics: OverloadMetrics,
}

impl Overload {
    pub fn new(config: OverloadConfig, seed: u64) -> Overload {
        Overload {
            config,
            pending: HashMap::new(),
            delays: VecDeque::new(),
            next_evaluation: None,
            oc: None,
            rng: seed | 1,
            metrics: OverloadMetrics::default(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.config.handler != Handler::None
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

    pub fn retry_after_s(&self) -> u32 {
        self.config.retry_after_s
    }

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
                    || (self.config.delay_detector && self.metrics.delay_alarm)
            }
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
            self.pending.entry(branch.to_string()).or_insert(now);
            self.next_evaluation.get_or_insert(now + Duration::from_secs(1));
        }
    }

    /// A response from the upstream to the request with `branch`, with
    /// the RFC 7339 parameters of the proxy's Via in it (`oc`,
    /// `oc-validity`, `oc-seq`, `oc-algo`), if any.
    pub fn response(&mut self, now: Instant, branch: &str, code: u16, oc: Option<OcParams<'_>>) {
        if !self.enabled() {
            return;
        }
        if code >= 200 {
            if let Some(sent) = self.pending.remove(branch) {
                self.delays.push_back((now, now.saturating_duration_since(sent)));
            }
        }
        if let (Handler::OcLoss, Some(p)) = (self.config.handler, oc) {
            self.take_oc(now, p);
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

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_evaluation
    }

    /// Forgets requests past Timer F and evaluates D1 once a second.
    pub fn handle_timeout(&mut self, now: Instant) {
        let Some(at) = self.next_evaluation else { return };
        if now < at {
            return;
        }
        let timeout = Duration::from_secs(self.config.transaction_timeout_s);
        let before = self.pending.len();
        self.pending.retain(|_, sent| now.saturating_duration_since(*sent) < timeout);
        self.metrics.timed_out += (before - self.pending.len()) as u64;
        let window = Duration::from_secs(self.config.delay_window_s);
        while self.delays.front().is_some_and(|(t, _)| now.saturating_duration_since(*t) > window) {
            self.delays.pop_front();
        }
        // A request still pending has waited at least this long: counting
        // it keeps the detector firing while the upstream answers nothing.
        let mut delays: Vec<Duration> = self.delays.iter().map(|(_, d)| *d).collect();
        delays.extend(self.pending.values().map(|sent| now.saturating_duration_since(*sent)));
        let p95 = percentile(&mut delays, 0.95);
        self.metrics.delay_p95_us = p95.as_micros() as u64;
        self.metrics.delay_alarm = p95 > Duration::from_millis(self.config.delay_threshold_ms);
        if self.oc.is_some_and(|o| now >= o.until) {
            self.oc = None;
            self.metrics.oc_reduction = 0;
        }
        self.next_evaluation = (!self.pending.is_empty() || !self.delays.is_empty() || self.oc.is_some())
            .then_some(now + Duration::from_secs(1));
    }
}

/// The RFC 7339 parameters of a Via (values as written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OcParams<'a> {
    pub oc: Option<&'a str>,
    pub validity: Option<&'a str>,
    pub seq: Option<&'a str>,
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

fn percentile(values: &mut [Duration], q: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    values.sort_unstable();
    let i = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1;
    values[i]
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
        let mut o = Overload::new(config(Handler::PendingCap), 7);
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
    fn the_delay_detector_fires_on_slow_final_responses_and_on_silence() {
        let t0 = Instant::now();
        let mut o = Overload::new(OverloadConfig { max_pending: 1000, ..config(Handler::PendingCap) }, 7);
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
        let mut o = Overload::new(config(Handler::OcLoss), 12345);
        assert_eq!(o.via_param(), ";oc");
        let via_text = "SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bKx;oc=40;oc-validity=2000;oc-seq=10.5;oc-algo=\"loss\"";
        let via = sigkit_sip::Via::parse(via_text).unwrap();
        o.forwarded(t0, "z9hG4bKx");
        o.response(t0, "z9hG4bKx", 200, OcParams::of(&via));
        assert_eq!(o.metrics().oc_reduction, 40);
        let shed = (0..10_000).filter(|_| o.admit(t0 + Duration::from_millis(10), true) == Admission::Reject).count();
        assert!((3_500..4_500).contains(&shed), "{shed} of 10000 shed for oc=40");
        assert_eq!(o.admit(t0, false), Admission::Forward);
        // An older oc-seq does not replace it; validity ends it.
        let stale = sigkit_sip::Via::parse("SIP/2.0/UDP h;branch=z9hG4bKy;oc=0;oc-seq=9").unwrap();
        o.response(t0, "z9hG4bKy", 200, OcParams::of(&stale));
        assert_eq!(o.metrics().oc_reduction, 40);
        let later = t0 + Duration::from_millis(2500);
        assert_eq!((0..100).filter(|_| o.admit(later, true) == Admission::Reject).count(), 0);
        let other = sigkit_sip::Via::parse("SIP/2.0/UDP h;branch=z9hG4bKz;oc=50;oc-algo=\"rate\"").unwrap();
        o.response(t0, "z9hG4bKz", 200, OcParams::of(&other));
        assert_eq!(o.metrics().oc_reduction, 40, "an algorithm other than loss is not ours");
    }

    #[test]
    fn no_handler_forwards_everything_and_keeps_nothing() {
        let t0 = Instant::now();
        let mut o = Overload::new(config(Handler::None), 1);
        for i in 0..10 {
            o.forwarded(t0, &i.to_string());
            assert_eq!(o.admit(t0, true), Admission::Forward);
        }
        assert_eq!(o.metrics().pending, 0);
        assert_eq!(o.poll_timeout(), None);
        assert_eq!(o.via_param(), "");
    }
}
