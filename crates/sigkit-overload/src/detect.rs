//! Implicit congestion detectors of the upstream proxy (SIP overload thesis
//! §4.2): D1 on the final response delay, D2 on pending transactions.

use std::collections::VecDeque;

use crate::config::{D1Config, D2Config, D2MeanConfig};

/// The nearest-rank `q` percentile of `values` (sorted in place); None when
/// empty.
pub fn percentile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let rank = (q * values.len() as f64).ceil() as usize;
    Some(values[rank.clamp(1, values.len()) - 1])
}

/// D1 (thesis §4.2.2, Figure 4.18): every w seconds, the 95th percentile
/// of the fRpD of the transactions answered in the last m seconds; above t
/// the next hop is congested.
pub struct DelayDetector {
    config: D1Config,
    /// (time answered, fRpD) in seconds, oldest first.
    samples: VecDeque<(f64, f64)>,
    /// The last evaluation's percentile.
    pub last_p95: Option<f64>,
    /// The last evaluation's verdict.
    pub congested: bool,
}

impl DelayDetector {
    /// A detector with no samples, not congested.
    pub fn new(config: D1Config) -> DelayDetector {
        DelayDetector { config, samples: VecDeque::new(), last_p95: None, congested: false }
    }

    /// A final response received at `now` after `delay` seconds.
    pub fn record(&mut self, now: f64, delay: f64) {
        self.samples.push_back((now, delay));
    }

    /// Whether some response came in the window ending at `now`.
    pub fn has_samples(&self, now: f64) -> bool {
        self.samples.back().is_some_and(|&(t, _)| t >= now - self.config.window)
    }

    /// Evaluates at `now`. `oldest_pending` is the age of the oldest
    /// transaction still waiting: when no response at all came in the
    /// window, the next hop counts as congested if something has waited
    /// longer than t (a silent next hop gives no delay to measure).
    pub fn evaluate(&mut self, now: f64, oldest_pending: Option<f64>) -> bool {
        while self.samples.front().is_some_and(|&(t, _)| t < now - self.config.window) {
            self.samples.pop_front();
        }
        let mut delays: Vec<f64> = self.samples.iter().map(|&(_, d)| d).collect();
        self.last_p95 = percentile(&mut delays, self.config.percentile);
        self.congested = match self.last_p95 {
            Some(p) => p > self.config.threshold,
            None => oldest_pending.is_some_and(|age| age > self.config.threshold),
        };
        self.congested
    }
}

/// The anomaly indicator κ = ΔP/Δλ (thesis eq. 4.5–4.7) from successive
/// samples of pending transactions P and of the rate λ of new requests.
#[derive(Default)]
pub struct AnomalyIndicator {
    previous: Option<(f64, f64)>,
}

impl AnomalyIndicator {
    /// The κ of this interval's `pending` and `rate` (new requests per
    /// second over an interval of `interval` seconds); None for the first
    /// sample. Δλ = 0 is read as the smallest change a count can show, one
    /// request per interval (1/interval per second) signed like ΔP, so that
    /// κ stays finite and a rise of P at a steady rate still shows.
    pub fn observe(&mut self, pending: f64, rate: f64, interval: f64) -> Option<f64> {
        let previous = self.previous.replace((pending, rate))?;
        let dp = pending - previous.0;
        let dl = rate - previous.1;
        if dl == 0.0 {
            return Some(dp * interval);
        }
        Some(dp / dl)
    }
}

/// A verdict of a sequential test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// H0 accepted: not congested.
    Accept,
    /// H0 rejected: congested.
    Reject,
    /// Keep observing.
    Continue,
}

/// Wald's sequential test that a normal's standard deviation does not exceed
/// σ0 against σ1 (thesis eq. 4.13–4.15; Wald, Sequential Analysis, ch. 8).
/// It restarts after each decision, so it slides over the κ series.
pub struct VarianceTest {
    mu: f64,
    intercept_accept: f64,
    intercept_reject: f64,
    slope: f64,
    m: u32,
    xi: f64,
    /// The last decision (false before any).
    pub congested: bool,
    /// Decisions "congested" taken.
    pub alarms: u64,
    /// Observations made.
    pub observations: u64,
}

impl VarianceTest {
    /// A test with no observations, not congested, its bounds (eq. 4.13,
    /// 4.14) computed from `c`.
    pub fn new(c: &D2Config) -> VarianceTest {
        let d = 1.0 / (c.sigma0 * c.sigma0) - 1.0 / (c.sigma1 * c.sigma1);
        VarianceTest {
            mu: c.mu,
            intercept_accept: 2.0 * (c.beta / (1.0 - c.alpha)).ln() / d,
            intercept_reject: 2.0 * ((1.0 - c.beta) / c.alpha).ln() / d,
            slope: (c.sigma1 * c.sigma1 / (c.sigma0 * c.sigma0)).ln() / d,
            m: 0,
            xi: 0.0,
            congested: false,
            alarms: 0,
            observations: 0,
        }
    }

    /// The acceptance number a_m and the rejection number r_m.
    pub fn bounds(&self, m: u32) -> (f64, f64) {
        let step = f64::from(m) * self.slope;
        (self.intercept_accept + step, self.intercept_reject + step)
    }

    /// Adds (κ − μ)² to the sum and compares it with the bounds of this
    /// iteration (eq. 4.15); a decision restarts the test.
    pub fn observe(&mut self, kappa: f64) -> Verdict {
        self.observations += 1;
        self.m += 1;
        self.xi += (kappa - self.mu).powi(2);
        let (a, r) = self.bounds(self.m);
        let verdict = if self.xi >= r {
            Verdict::Reject
        } else if self.xi <= a {
            Verdict::Accept
        } else {
            Verdict::Continue
        };
        if verdict != Verdict::Continue {
            self.congested = verdict == Verdict::Reject;
            self.alarms += u64::from(self.congested);
            self.m = 0;
            self.xi = 0.0;
        }
        verdict
    }
}

/// Wald's sequential test that a normal's mean with known σ does not exceed
/// μ0 against μ1 (Wald, Sequential Analysis, ch. 7), the variant of the
/// thesis's lab (§5.2.3). Restarts after each decision.
pub struct MeanTest {
    intercept_accept: f64,
    intercept_reject: f64,
    slope: f64,
    m: u32,
    sum: f64,
    /// The last decision (false before any).
    pub congested: bool,
    /// Decisions "congested" taken.
    pub alarms: u64,
    /// Observations made.
    pub observations: u64,
}

impl MeanTest {
    /// A test with no observations, not congested, its bounds computed
    /// from `c`.
    pub fn new(c: &D2MeanConfig) -> MeanTest {
        let scale = c.sigma * c.sigma / (c.mu1 - c.mu0);
        MeanTest {
            intercept_accept: scale * (c.beta / (1.0 - c.alpha)).ln(),
            intercept_reject: scale * ((1.0 - c.beta) / c.alpha).ln(),
            slope: (c.mu0 + c.mu1) / 2.0,
            m: 0,
            sum: 0.0,
            congested: false,
            alarms: 0,
            observations: 0,
        }
    }

    /// Adds κ to the sum and compares it with this iteration's acceptance
    /// and rejection numbers; a decision restarts the test.
    pub fn observe(&mut self, kappa: f64) -> Verdict {
        self.observations += 1;
        self.m += 1;
        self.sum += kappa;
        let step = f64::from(self.m) * self.slope;
        let verdict = if self.sum >= self.intercept_reject + step {
            Verdict::Reject
        } else if self.sum <= self.intercept_accept + step {
            Verdict::Accept
        } else {
            Verdict::Continue
        };
        if verdict != Verdict::Continue {
            self.congested = verdict == Verdict::Reject;
            self.alarms += u64::from(self.congested);
            self.m = 0;
            self.sum = 0.0;
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    /// splitmix64 as uniform draws in (0, 1): the tests' own generator.
    struct Stream(u64);

    impl Stream {
        fn new(seed: u64) -> Stream {
            Stream(seed)
        }

        fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
    }

    fn normal(s: &mut Stream, mu: f64, sigma: f64) -> f64 {
        // Box–Muller.
        let (u1, u2) = (s.uniform(), s.uniform());
        mu + sigma * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).rev().collect();
        assert_eq!(percentile(&mut v, 0.95), Some(95.0));
        assert_eq!(percentile(&mut [3.0], 0.95), Some(3.0));
        assert_eq!(percentile(&mut [], 0.95), None);
    }

    #[test]
    fn d1_fires_above_half_a_second_and_forgets_after_the_window() {
        let mut d1 = DelayDetector::new(D1Config::default());
        for i in 0..100 {
            d1.record(f64::from(i) * 0.01, 0.05);
        }
        assert!(!d1.evaluate(1.0, None));
        for i in 0..100 {
            d1.record(1.0 + f64::from(i) * 0.01, 0.8);
        }
        assert!(d1.evaluate(2.0, None), "half the samples at 0.8 s put the p95 at 0.8 s");
        assert_eq!(d1.last_p95, Some(0.8));
        for i in 0..100 {
            d1.record(7.0 + f64::from(i) * 0.01, 0.05);
        }
        assert!(!d1.evaluate(8.0, None), "the slow samples are older than 5 s");
        assert!(!d1.evaluate(20.0, Some(0.1)));
        assert!(d1.evaluate(21.0, Some(3.0)), "no response for 5 s and a request waiting 3 s");
    }

    #[test]
    fn kappa_is_the_ratio_of_changes_and_finite_when_the_rate_is_flat() {
        let mut k = AnomalyIndicator::default();
        assert_eq!(k.observe(4.0, 80.0, 1.0), None);
        assert_eq!(k.observe(6.0, 90.0, 1.0), Some(0.2));
        assert_eq!(k.observe(16.0, 90.0, 1.0), Some(10.0));
        assert_eq!(k.observe(16.0, 90.0, 1.0), Some(0.0));
        assert_eq!(k.observe(20.0, 900.0, 0.1), Some(4.0 / 810.0));
        assert_eq!(k.observe(21.0, 900.0, 0.1), Some(0.1));
    }

    #[test]
    fn wald_bounds_follow_equations_4_13_and_4_14() {
        let t = VarianceTest::new(&D2Config::default());
        let d = 1.0 / 0.962f64.powi(2) - 1.0 / 20.392f64.powi(2);
        let slope = (20.392f64.powi(2) / 0.962f64.powi(2)).ln() / d;
        let (a, r) = t.bounds(3);
        assert!((a - (2.0 * (0.05f64 / 0.9).ln() / d + 3.0 * slope)).abs() < 1e-12);
        assert!((r - (2.0 * (0.95f64 / 0.1).ln() / d + 3.0 * slope)).abs() < 1e-12);
        assert!(a < r);
    }

    #[test]
    fn variance_test_errors_stay_near_alpha_and_beta() {
        // Draws from σ0 should end in "congested" at most about α of the
        // time, draws from σ1 in "not congested" at most about β.
        let c = D2Config::default();
        let mut s = Stream::new(11);
        let decide = |sigma: f64, s: &mut Stream| {
            let mut t = VarianceTest::new(&c);
            loop {
                match t.observe(normal(s, c.mu, sigma)) {
                    Verdict::Continue => continue,
                    v => return v,
                }
            }
        };
        let n = 4000;
        let false_alarms = (0..n).filter(|_| decide(c.sigma0, &mut s) == Verdict::Reject).count();
        let misses = (0..n).filter(|_| decide(c.sigma1, &mut s) == Verdict::Accept).count();
        assert!((false_alarms as f64) < 0.1 * n as f64 * 1.2, "false alarms {false_alarms}/{n}");
        assert!((misses as f64) < 0.05 * n as f64 * 1.2, "misses {misses}/{n}");
        assert!(false_alarms > 0, "a test this short does err sometimes");
    }

    #[test]
    fn mean_test_separates_the_lab_means() {
        let c = D2MeanConfig::default();
        let mut s = Stream::new(12);
        let mut quiet = MeanTest::new(&c);
        for _ in 0..2000 {
            quiet.observe(normal(&mut s, c.mu0, c.sigma));
        }
        assert!((quiet.alarms as f64) < 0.1 * quiet.observations as f64, "{} alarms", quiet.alarms);
        let mut loud = MeanTest::new(&c);
        let first = (0..100).find(|_| loud.observe(normal(&mut s, c.mu1, 83.097)) == Verdict::Reject);
        assert!(first.is_some_and(|i| i < 10), "{first:?}");
    }
}
