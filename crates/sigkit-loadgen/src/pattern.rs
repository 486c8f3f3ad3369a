//! Load patterns, sans-IO: when the next call starts. Constant rate
//! (SIPp's `-r`/`-rp`), stepped (start, end, step, dwell and pause, as the
//! framework thesis's capacity runs), a linear ramp, and bursts; arrivals
//! evenly spaced or Poisson (exponential gaps with the same mean). The
//! rate can be changed while running ([`RateController::set_rate`]).

use std::time::{Duration, Instant};

use serde::Serialize;

/// The shape of the offered load.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// The run's rate throughout.
    Constant,
    /// Rates `start`, `start + step`, ... up to `end` (calls/s), each for
    /// `dwell`, with `pause` without new calls after each.
    Steps {
        /// The first step's rate, calls/s.
        start: f64,
        /// The last step's rate at most, calls/s.
        end: f64,
        /// The rate added from one step to the next, calls/s.
        step: f64,
        /// How long each step offers calls.
        dwell: Duration,
        /// How long no call starts after each step.
        pause: Duration,
    },
    /// From `from` to `to` calls/s linearly over `over`, then `to`.
    Ramp {
        /// The rate at the start, calls/s.
        from: f64,
        /// The rate at the end of the ramp and after it, calls/s.
        to: f64,
        /// The ramp's length.
        over: Duration,
    },
    /// `size` calls at once every `every`.
    Bursts {
        /// Calls started at once.
        size: u32,
        /// Time from one burst to the next.
        every: Duration,
    },
    /// `base` calls/s, `peak` from `at` for `length`, then `base` again:
    /// the overload thesis's peak load (C. Egger, SIP overload control
    /// thesis, TU Wien 2012, §5.2.1: 700 tps, 900 tps from 30 s to 90 s).
    /// Steps 0, 1 and 2 are before, during and after the peak.
    Surge {
        /// The rate before and after the peak, calls/s.
        base: f64,
        /// The rate during the peak, calls/s.
        peak: f64,
        /// When the peak starts, from the run's start.
        at: Duration,
        /// How long the peak lasts.
        length: Duration,
    },
}

/// How calls are spread in time at a given rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Arrivals {
    /// Evenly spaced, 1/rate apart (SIPp's way).
    Uniform,
    /// A Poisson process: exponential gaps of mean 1/rate.
    Poisson,
}

/// One step of the load: its rate and when it ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepSpan {
    /// The step's index, from 0 (a rate set by hand starts a new step).
    pub index: usize,
    /// The step's rate, calls/s.
    pub cps: f64,
    /// When the step's first call started, seconds since the run started.
    pub start_s: f64,
    /// When the step's last call so far started, seconds since the run started.
    pub end_s: f64,
}

/// Decides when calls start.
#[derive(Debug, Clone)]
pub struct RateController {
    pattern: Pattern,
    arrivals: Arrivals,
    start: Instant,
    /// The constant rate (and the rate after a manual change), calls/s.
    cps: f64,
    /// The pattern was overridden by a rate change: constant from now on.
    manual: Option<(Instant, usize)>,
    next: Option<Instant>,
    burst_left: u32,
    /// Evenly spaced arrivals of the current rate: the k-th is at
    /// `anchor + k / rate` (no drift from adding rounded gaps).
    regime: Option<(Instant, u64, f64, usize)>,
    paused: bool,
    rng: u64,
    /// Step spans so far (the current one's end is provisional).
    spans: Vec<StepSpan>,
}

impl RateController {
    /// `cps` is the constant rate (and the pattern's fallback).
    pub fn new(pattern: Pattern, arrivals: Arrivals, cps: f64, now: Instant, seed: u64) -> RateController {
        let mut c = RateController {
            pattern,
            arrivals,
            start: now,
            cps: if cps.is_finite() { cps.max(0.0) } else { 0.0 },
            manual: None,
            next: Some(now),
            burst_left: 0,
            regime: None,
            paused: false,
            rng: seed | 1,
            spans: Vec::new(),
        };
        c.next = c.first_arrival_from(now);
        c
    }

    fn unit(&mut self) -> f64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        ((self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn step_rates(&self) -> Vec<f64> {
        match &self.pattern {
            Pattern::Steps { start, end, step, .. } => {
                let mut v = Vec::new();
                let mut r = *start;
                let up = *step > 0.0;
                while v.len() < 10_000 && (if up { r <= end + 1e-9 } else { r >= end - 1e-9 }) {
                    v.push(r);
                    if *step == 0.0 {
                        break;
                    }
                    r += step;
                }
                v
            }
            _ => vec![self.cps],
        }
    }

    /// The rate (calls/s), the step, and whether the pattern is over, at
    /// `t`.
    pub fn rate_at(&self, t: Instant) -> (f64, usize, bool) {
        if let Some((from, step)) = self.manual {
            if t >= from {
                return (self.cps, step, false);
            }
        }
        let e = t.saturating_duration_since(self.start);
        match &self.pattern {
            Pattern::Constant => (self.cps, 0, false),
            Pattern::Steps { dwell, pause, .. } => {
                let rates = self.step_rates();
                let period = *dwell + *pause;
                if period.is_zero() || rates.is_empty() {
                    return (0.0, 0, true);
                }
                let k = ((e.as_secs_f64() + 1e-7) / period.as_secs_f64()) as usize;
                if k >= rates.len() {
                    return (0.0, rates.len().saturating_sub(1), true);
                }
                let into = e.as_secs_f64() - k as f64 * period.as_secs_f64();
                // A microsecond's tolerance: an arrival computed to fall on
                // the dwell's end (k / rate) belongs to the pause.
                let rate = if into < dwell.as_secs_f64() - 1e-6 { rates[k] } else { 0.0 };
                // The last step's pause has no calls to wait for: the
                // pattern ends with the last dwell.
                let over = k + 1 == rates.len() && into >= dwell.as_secs_f64();
                (rate, k, over)
            }
            Pattern::Ramp { from, to, over } => {
                let f = if over.is_zero() { 1.0 } else { (e.as_secs_f64() / over.as_secs_f64()).min(1.0) };
                (from + (to - from) * f, 0, false)
            }
            Pattern::Bursts { size, every } => {
                let cps = if every.is_zero() { 0.0 } else { f64::from(*size) / every.as_secs_f64() };
                (cps, 0, false)
            }
            Pattern::Surge { base, peak, at, length } => {
                if e < *at {
                    (*base, 0, false)
                } else if e < *at + *length {
                    (*peak, 1, false)
                } else {
                    (*base, 2, false)
                }
            }
        }
    }

    /// The first arrival at or after `t`: skips spans without calls.
    fn first_arrival_from(&self, t: Instant) -> Option<Instant> {
        if let (Pattern::Bursts { every, .. }, None) = (&self.pattern, self.manual) {
            if every.is_zero() {
                return None;
            }
            let e = t.saturating_duration_since(self.start).as_secs_f64();
            let k = (e / every.as_secs_f64()).ceil();
            return Some(self.start + every.mul_f64(k));
        }
        if let (Pattern::Steps { dwell, pause, .. }, None) = (&self.pattern, self.manual) {
            let (rate, k, over) = self.rate_at(t);
            if over {
                return None;
            }
            if rate > 0.0 {
                return Some(t);
            }
            let period = *dwell + *pause;
            let next = self.start + period.mul_f64((k + 1) as f64);
            return (!self.rate_at(next).2).then_some(next);
        }
        if let (Pattern::Ramp { .. }, None) = (&self.pattern, self.manual) {
            if self.rate_at(t).0 > 0.0 {
                return Some(t);
            }
            return Some(self.ramp_after(t, 1.0));
        }
        let mut t = t;
        for _ in 0..100_000 {
            let (rate, _, over) = self.rate_at(t);
            if over {
                return None;
            }
            if rate > 0.0 {
                return Some(t);
            }
            if self.manual.is_some() || !matches!(self.pattern, Pattern::Steps { .. } | Pattern::Ramp { .. }) {
                return None;
            }
            t += Duration::from_millis(10);
        }
        None
    }

    /// When the next call is due (None: no more calls, or paused).
    pub fn next_due(&self) -> Option<Instant> {
        if self.paused {
            return None;
        }
        self.next
    }

    /// Whether the pattern has no more calls to start.
    pub fn finished(&self) -> bool {
        self.next.is_none() && !self.paused
    }

    /// A call due at or before `now`: its step, and the schedule moves on.
    pub fn poll(&mut self, now: Instant) -> Option<usize> {
        if self.paused {
            return None;
        }
        let at = self.next?;
        if at > now {
            return None;
        }
        let (rate, step, over) = self.rate_at(at);
        if over {
            self.next = None;
            return None;
        }
        self.note_span(step, rate, at);
        if let (Pattern::Bursts { size, every }, None) = (&self.pattern, self.manual) {
            if self.burst_left == 0 {
                self.burst_left = *size;
            }
            self.burst_left -= 1;
            if self.burst_left == 0 {
                self.next = Some(at + *every);
            }
            return (*size > 0).then_some(step);
        }
        if rate <= 0.0 {
            self.next = self.first_arrival_from(at + Duration::from_millis(1));
            return None;
        }
        let ramp = matches!(self.pattern, Pattern::Ramp { .. }) && self.manual.is_none();
        let next = match (self.arrivals, ramp) {
            (Arrivals::Uniform, true) => self.ramp_after(at, 1.0),
            (Arrivals::Poisson, true) => {
                let d = -self.unit().ln();
                self.ramp_after(at, d)
            }
            (Arrivals::Uniform, false) => {
                let (anchor, k) = match self.regime {
                    Some((a, k, r, s)) if r == rate && s == step => (a, k + 1),
                    _ => (at, 1),
                };
                self.regime = Some((anchor, k, rate, step));
                anchor + Duration::from_secs_f64((k as f64 / rate).min(1e9))
            }
            (Arrivals::Poisson, false) => at + Duration::from_secs_f64((-self.unit().ln() / rate).min(3600.0)),
        };
        // A step boundary (or a pause) between: start from there.
        let (next_rate, next_step, _) = self.rate_at(next);
        self.next = if next_step != step || next_rate <= 0.0 { self.first_arrival_from(next) } else { Some(next) };
        Some(step)
    }

    /// The time after `t` at which a ramp has offered `count` more calls:
    /// its integral from `t` reaches `count` (solved exactly: linear rate,
    /// quadratic integral), then the final rate.
    fn ramp_after(&self, t: Instant, count: f64) -> Instant {
        let Pattern::Ramp { from, to, over } = &self.pattern else { return t };
        let (a, over_s) = (*from, over.as_secs_f64());
        let b = if over_s > 0.0 { (to - from) / over_s } else { 0.0 };
        let area = |x: f64| {
            if x <= over_s {
                a * x + b * x * x / 2.0
            } else {
                a * over_s + b * over_s * over_s / 2.0 + to * (x - over_s)
            }
        };
        let x0 = t.saturating_duration_since(self.start).as_secs_f64();
        let target = area(x0) + count;
        let x1 = if target <= area(over_s) && b.abs() > 1e-12 {
            (-a + (a * a + 2.0 * b * target).max(0.0).sqrt()) / b
        } else if target <= area(over_s) {
            if a > 0.0 {
                target / a
            } else {
                over_s
            }
        } else if *to > 0.0 {
            over_s + (target - area(over_s)) / to
        } else {
            // The ramp ends at 0: no more calls (an hour away stands in).
            x0 + 3600.0
        };
        self.start + Duration::from_secs_f64(x1.max(x0).min(1e9))
    }

    fn note_span(&mut self, step: usize, rate: f64, at: Instant) {
        let t = at.saturating_duration_since(self.start).as_secs_f64();
        match self.spans.last_mut() {
            Some(s) if s.index == step => s.end_s = t,
            _ => self.spans.push(StepSpan { index: step, cps: rate, start_s: t, end_s: t }),
        }
    }

    /// The current rate, calls/s.
    pub fn current_cps(&self, now: Instant) -> f64 {
        if self.paused {
            return 0.0;
        }
        self.rate_at(now).0
    }

    /// The current step.
    pub fn current_step(&self, now: Instant) -> usize {
        self.rate_at(now).1
    }

    /// A new rate from now on (keyboard, control socket): the pattern
    /// becomes constant at it, in a new step.
    pub fn set_rate(&mut self, cps: f64, now: Instant) {
        let cps = if cps.is_finite() { cps.max(0.0) } else { 0.0 };
        // Each rate set by hand is a step of its own.
        let step = self.spans.last().map_or(0, |s| s.index + 1);
        self.cps = cps;
        self.manual = Some((now, step));
        self.next = if cps > 0.0 {
            let gap = Duration::from_secs_f64((1.0 / cps).min(3600.0));
            Some(self.next.map_or(now, |n| n.min(now + gap)).max(now))
        } else {
            None
        };
        if cps <= 0.0 {
            // Rate 0 is a pause that a later rate change ends.
            self.next = None;
            self.paused = false;
        }
    }

    /// Whether the rate was set to 0 by hand (calls may start again).
    pub fn held(&self) -> bool {
        self.manual.is_some() && self.cps <= 0.0
    }

    /// Stops or resumes starting calls (SIPp's `p`).
    pub fn toggle_pause(&mut self, now: Instant) {
        self.paused = !self.paused;
        if !self.paused {
            self.next = self.first_arrival_from(now);
        }
    }

    /// Whether starting calls is paused by [`RateController::toggle_pause`].
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// The steps that started calls, with their rate and span (for
    /// reports).
    pub fn spans(&self) -> &[StepSpan] {
        &self.spans
    }

    /// Each step's nominal rate by index (the stepped pattern's list).
    pub fn nominal_rate(&self, step: usize) -> f64 {
        match (&self.pattern, self.manual) {
            (Pattern::Steps { .. }, None) => self.step_rates().get(step).copied().unwrap_or(0.0),
            _ => self.spans.iter().find(|s| s.index == step).map_or(self.cps, |s| s.cps),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(c: &mut RateController, from: Instant, secs: f64) -> Vec<usize> {
        let mut steps = Vec::new();
        let end = from + Duration::from_secs_f64(secs);
        while let Some(at) = c.next_due().filter(|t| *t < end) {
            if let Some(s) = c.poll(at) {
                steps.push(s);
            }
        }
        steps
    }

    #[test]
    fn constant_rate_spaces_calls_evenly() {
        let t0 = Instant::now();
        let mut c = RateController::new(Pattern::Constant, Arrivals::Uniform, 100.0, t0, 1);
        assert_eq!(count(&mut c, t0, 1.0).len(), 100);
    }

    #[test]
    fn poisson_arrivals_keep_the_mean() {
        let t0 = Instant::now();
        let mut c = RateController::new(Pattern::Constant, Arrivals::Poisson, 1000.0, t0, 7);
        let n = count(&mut c, t0, 10.0).len();
        assert!((9_500..10_500).contains(&n), "{n} calls in 10 s at 1000/s");
    }

    #[test]
    fn steps_dwell_pause_and_end() {
        let t0 = Instant::now();
        let p = Pattern::Steps {
            start: 10.0,
            end: 30.0,
            step: 10.0,
            dwell: Duration::from_secs(2),
            pause: Duration::from_secs(1),
        };
        let mut c = RateController::new(p, Arrivals::Uniform, 0.0, t0, 1);
        let steps = count(&mut c, t0, 100.0);
        let per: Vec<usize> = (0..3).map(|k| steps.iter().filter(|s| **s == k).count()).collect();
        assert_eq!(per, vec![20, 40, 60]);
        assert!(c.finished());
        let spans = c.spans();
        assert_eq!(spans.len(), 3);
        assert!((spans[1].start_s - 3.0).abs() < 1e-6, "{spans:?}");
    }

    #[test]
    fn ramp_and_bursts() {
        let t0 = Instant::now();
        let p = Pattern::Ramp { from: 0.0, to: 200.0, over: Duration::from_secs(2) };
        let mut c = RateController::new(p, Arrivals::Uniform, 0.0, t0, 1);
        let n = count(&mut c, t0, 2.0).len();
        // The area under the ramp: 200 calls (discretisation takes a few).
        assert!((180..=210).contains(&n), "{n}");
        let p = Pattern::Bursts { size: 5, every: Duration::from_secs(1) };
        let mut c = RateController::new(p, Arrivals::Uniform, 0.0, t0, 1);
        assert_eq!(count(&mut c, t0, 2.5).len(), 15);
    }

    #[test]
    fn a_surge_offers_the_peak_for_its_length_between_two_spans_of_the_base() {
        let t0 = Instant::now();
        let p = Pattern::Surge { base: 100.0, peak: 300.0, at: Duration::from_secs(2), length: Duration::from_secs(1) };
        let mut c = RateController::new(p, Arrivals::Uniform, 100.0, t0, 1);
        let steps = count(&mut c, t0, 5.0);
        let per: Vec<usize> = (0..3).map(|k| steps.iter().filter(|s| **s == k).count()).collect();
        // A call or so moves across each boundary with the spacing.
        assert!(per[0].abs_diff(200) <= 1 && per[1].abs_diff(300) <= 2 && per[2].abs_diff(200) <= 2, "{per:?}");
        assert!(!c.finished());
        let spans = c.spans();
        assert_eq!(spans.len(), 3);
        assert!((spans[1].start_s - 2.0).abs() < 0.01 && spans[1].cps == 300.0, "{spans:?}");
        assert_eq!(c.nominal_rate(2), 100.0);
    }

    #[test]
    fn rate_changes_take_effect_and_pause_holds() {
        let t0 = Instant::now();
        let mut c = RateController::new(Pattern::Constant, Arrivals::Uniform, 10.0, t0, 1);
        assert_eq!(count(&mut c, t0, 1.0).len(), 10);
        let t1 = t0 + Duration::from_secs(1);
        c.set_rate(100.0, t1);
        let n = count(&mut c, t1, 1.0).len();
        assert!((99..=101).contains(&n), "{n}");
        let t2 = t1 + Duration::from_secs(1);
        c.toggle_pause(t2);
        assert!(c.next_due().is_none() && c.poll(t2 + Duration::from_secs(5)).is_none());
        c.toggle_pause(t2 + Duration::from_secs(5));
        assert!(c.next_due().is_some());
        c.set_rate(0.0, t2);
        assert!(c.next_due().is_none() && c.held());
    }
}
