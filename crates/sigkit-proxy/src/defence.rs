//! What the proxy may spend decompressing. A SigComp message carries
//! bytecode from the network: each one may run its whole cycle budget,
//! (8 × length + 1000) × cycles_per_bit (RFC 3320 §8.6), and the 2005
//! SigComp performance thesis found that 8 looping messages a second
//! saturate a P-CSCF. Three budgets bound it:
//!
//! - **per source address**, in cycles: a message is charged its worst
//!   case before it runs and given back what it did not use, so no source
//!   can make the proxy run more cycles than its budget, and the others
//!   keep theirs;
//! - **overall**, in measured time: a UDP source address can be spoofed,
//!   so many sources together are held to a share of the CPU;
//! - **for unknown sources**, in measured time: a source with no accepted
//!   SigComp message and no registration (see [`Standing`]) may use only a
//!   part of the overall budget, and only while the overall budget is more
//!   than half full, so the terminals the proxy knows keep the rest.
//!
//! A message is charged the larger of the cycles it ran and its measured
//! time divided by [`DefenceConfig::charge_ns_per_cycle`]: an instruction
//! dearer than its cycle count (a SHA-1 of one byte does a whole SHA-1
//! block) cannot be repeated to spend more than the budget says.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::config::DefenceConfig;

/// Why a message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The source sent more messages than its rate allows.
    Messages,
    /// The message's worst-case cycles exceed what the source has left.
    Cycles,
    /// The proxy's overall decompression time is spent.
    Overall,
    /// The share of decompression time for unknown sources is spent.
    Unknown,
}

impl Refusal {
    /// Every reason, in the order of [`Refusal::index`].
    pub const ALL: [Refusal; 4] = [Refusal::Messages, Refusal::Cycles, Refusal::Overall, Refusal::Unknown];

    /// Its position in [`Refusal::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its metric label.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::Messages => "messages",
            Refusal::Cycles => "cycles",
            Refusal::Overall => "overall",
            Refusal::Unknown => "unknown_sources",
        }
    }
}

/// Whether the proxy knows the source of a message: a flow from its
/// address already had a SigComp message's state accepted, or carried a
/// registration (RFC 5049 §6: the proxy keeps state only of terminals it
/// knows). Known sources come first when decompression time is short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Its flow had a SigComp message's state accepted, or carries a live
    /// registration: it draws on the whole overall budget.
    Known,
    /// Neither: it draws on `defence.unknown_sources_percent` of the
    /// overall budget, and waits while less than half of its burst is
    /// left (`sigkit_proxy_refused{budget="unknown_sources"}`).
    Unknown,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    cycles: f64,
    messages: f64,
    updated: Instant,
}

/// A token bucket of nanoseconds that may run into debt down to minus its
/// size: a message is admitted while the bucket holds something, and its
/// measured time is charged after it ran.
#[derive(Debug, Clone, Copy)]
struct TimeBucket {
    level: f64,
    size: f64,
    per_s: f64,
    updated: Instant,
}

impl TimeBucket {
    fn new(now: Instant, per_s_ns: f64, size_ns: f64) -> TimeBucket {
        TimeBucket { level: size_ns, size: size_ns, per_s: per_s_ns, updated: now }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.updated).as_secs_f64();
        self.level = (self.level + dt * self.per_s).min(self.size);
        self.updated = now;
    }

    fn charge(&mut self, ns: f64) {
        self.level = (self.level - ns).max(-self.size);
    }
}

/// The proxy's (or one shard's) decompression budgets: per source
/// address, overall and for unknown sources.
#[derive(Debug)]
pub struct Budgets {
    config: DefenceConfig,
    sources: HashMap<IpAddr, Bucket>,
    overall: TimeBucket,
    unknown: TimeBucket,
    /// Decompression time spent, by [`Standing`] (known, unknown).
    spent: [Duration; 2],
}

/// A message admitted: what to settle once it ran ([`Budgets::settle`]).
#[derive(Debug, Clone, Copy)]
pub struct Admitted {
    source: IpAddr,
    standing: Standing,
    worst_cycles: u64,
}

impl Budgets {
    /// Budgets with `share` (0 < share ≤ 1) of the configured overall
    /// rates: one shard's part of the proxy's.
    pub fn new(config: DefenceConfig, share: f64, now: Instant) -> Budgets {
        let ns = |ms: u64| ms as f64 * 1e6 * share;
        let overall = TimeBucket::new(now, ns(config.decompression_ms_per_s), ns(config.decompression_burst_ms));
        let part = f64::from(config.unknown_sources_percent.min(100)) / 100.0;
        let unknown =
            TimeBucket::new(now, ns(config.decompression_ms_per_s) * part, ns(config.decompression_burst_ms) * part);
        Budgets { config, sources: HashMap::new(), overall, unknown, spent: [Duration::ZERO; 2] }
    }

    fn refill(&self, b: &mut Bucket, now: Instant) {
        let dt = now.saturating_duration_since(b.updated).as_secs_f64();
        b.cycles = (b.cycles + dt * self.config.cycles_per_source_per_s as f64).min(self.config.cycles_burst as f64);
        b.messages =
            (b.messages + dt * self.config.messages_per_source_per_s as f64).min(self.config.messages_burst as f64);
        b.updated = now;
    }

    /// Admits one message from `source` that may run up to `worst_cycles`,
    /// charging the source its worst case; or says which budget refuses it.
    pub fn admit(
        &mut self,
        now: Instant,
        source: IpAddr,
        standing: Standing,
        worst_cycles: u64,
    ) -> Result<Admitted, Refusal> {
        self.overall.refill(now);
        self.unknown.refill(now);
        if self.overall.level <= 0.0 {
            return Err(Refusal::Overall);
        }
        // Unknown sources leave the lower half of the overall budget to
        // the known ones.
        if standing == Standing::Unknown && (self.unknown.level <= 0.0 || self.overall.level <= self.overall.size / 2.0)
        {
            return Err(Refusal::Unknown);
        }
        if !self.sources.contains_key(&source) && self.sources.len() >= self.config.max_sources {
            self.forget_idle(now);
        }
        let full = Bucket {
            cycles: self.config.cycles_burst as f64,
            messages: self.config.messages_burst as f64,
            updated: now,
        };
        let mut b = self.sources.get(&source).copied().unwrap_or(full);
        self.refill(&mut b, now);
        let verdict = if b.messages < 1.0 {
            Err(Refusal::Messages)
        } else if b.cycles < worst_cycles as f64 {
            Err(Refusal::Cycles)
        } else {
            b.messages -= 1.0;
            b.cycles -= worst_cycles as f64;
            Ok(Admitted { source, standing, worst_cycles })
        };
        if self.sources.len() < self.config.max_sources || self.sources.contains_key(&source) {
            self.sources.insert(source, b);
        }
        verdict
    }

    /// Charges an admitted message what it cost: `cycles` run in `took`.
    /// The source gets back what its worst case overcharged, less any time
    /// beyond `charge_ns_per_cycle` per cycle; the overall budget (and the
    /// unknown sources', for an unknown source) pays the time.
    pub fn settle(&mut self, admitted: Admitted, cycles: u64, took: Duration) {
        let ns = took.as_nanos() as f64;
        let by_time = ns / self.config.charge_ns_per_cycle.max(1) as f64;
        let charged = (cycles as f64).max(by_time);
        let burst = self.config.cycles_burst as f64;
        if let Some(b) = self.sources.get_mut(&admitted.source) {
            b.cycles = (b.cycles + admitted.worst_cycles as f64 - charged).clamp(-burst, burst);
        }
        self.overall.charge(ns);
        let i = match admitted.standing {
            Standing::Known => 0,
            Standing::Unknown => {
                self.unknown.charge(ns);
                1
            }
        };
        self.spent[i] += took;
    }

    /// Forgets the sources whose buckets have refilled: they are where a
    /// new source starts anyway.
    fn forget_idle(&mut self, now: Instant) {
        let config = self.config.clone();
        self.sources.retain(|_, b| {
            let dt = now.saturating_duration_since(b.updated).as_secs_f64();
            let cycles = b.cycles + dt * config.cycles_per_source_per_s as f64;
            let messages = b.messages + dt * config.messages_per_source_per_s as f64;
            cycles < config.cycles_burst as f64 || messages < config.messages_burst as f64
        });
    }

    /// Source addresses tracked.
    pub fn sources(&self) -> usize {
        self.sources.len()
    }

    /// Decompression time spent on messages from known and from unknown
    /// sources.
    pub fn spent(&self) -> (Duration, Duration) {
        (self.spent[0], self.spent[1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> DefenceConfig {
        DefenceConfig {
            cycles_per_source_per_s: 1000,
            cycles_burst: 2000,
            messages_per_source_per_s: 10,
            messages_burst: 3,
            max_sources: 2,
            ..DefenceConfig::default()
        }
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    /// Admits and settles at once, as a message that used `used` cycles
    /// in no time.
    fn run(b: &mut Budgets, t: Instant, source: IpAddr, worst: u64, used: u64) -> Result<(), Refusal> {
        let a = b.admit(t, source, Standing::Known, worst)?;
        b.settle(a, used, Duration::ZERO);
        Ok(())
    }

    #[test]
    fn a_source_is_held_to_its_budget_and_others_keep_theirs() {
        let t = Instant::now();
        let mut b = Budgets::new(config(), 1.0, t);
        assert_eq!(b.admit(t, A, Standing::Known, 1500).map(|_| ()), Ok(()));
        assert_eq!(b.admit(t, A, Standing::Known, 1500).map(|_| ()), Err(Refusal::Cycles));
        assert_eq!(run(&mut b, t, B, 1500, 1500), Ok(()), "another source is not charged");
        let mut b = Budgets::new(config(), 1.0, t);
        assert_eq!(run(&mut b, t, A, 1500, 500), Ok(()), "1000 given back");
        assert_eq!(run(&mut b, t, A, 1400, 1400), Ok(()));
        assert_eq!(run(&mut b, t, A, 0, 0), Ok(()));
        assert_eq!(run(&mut b, t, A, 0, 0), Err(Refusal::Messages), "burst of 3 messages");
        let later = t + Duration::from_millis(500);
        assert_eq!(run(&mut b, later, A, 400, 0), Ok(()), "refilled by rate x time");
    }

    #[test]
    fn time_beyond_the_charge_per_cycle_is_charged_as_cycles() {
        let t = Instant::now();
        let mut c = config();
        c.charge_ns_per_cycle = 100;
        let mut b = Budgets::new(c, 1.0, t);
        // 10 cycles that took 150 µs cost 1,500 cycles: the source has
        // 500 of its 2,000 left.
        let a = b.admit(t, A, Standing::Known, 1000).unwrap();
        b.settle(a, 10, Duration::from_micros(150));
        assert_eq!(b.admit(t, A, Standing::Known, 600).map(|_| ()), Err(Refusal::Cycles));
        assert!(b.admit(t, A, Standing::Known, 500).is_ok());
    }

    #[test]
    fn unknown_sources_get_their_share_and_known_ones_the_rest() {
        let t = Instant::now();
        let mut c =
            DefenceConfig { decompression_ms_per_s: 100, decompression_burst_ms: 10, ..DefenceConfig::default() };
        c.unknown_sources_percent = 20;
        let mut b = Budgets::new(c, 1.0, t);
        // The unknown sources' bucket holds 2 ms: one 3 ms message empties
        // it, and unknown sources wait while known ones go on.
        let a = b.admit(t, A, Standing::Unknown, 100).unwrap();
        b.settle(a, 100, Duration::from_millis(3));
        assert_eq!(b.admit(t, B, Standing::Unknown, 100).map(|_| ()), Err(Refusal::Unknown));
        let k = b.admit(t, B, Standing::Known, 100).unwrap();
        b.settle(k, 100, Duration::from_millis(6));
        // The overall bucket is at 1 ms of 10: known sources still run,
        // until it is empty; then nobody does.
        assert!(b.admit(t, B, Standing::Known, 100).is_ok());
        let k = b.admit(t, B, Standing::Known, 100).unwrap();
        b.settle(k, 100, Duration::from_millis(2));
        assert_eq!(b.admit(t, B, Standing::Known, 100).map(|_| ()), Err(Refusal::Overall));
        // 100 ms per second refills 10 ms in 100 ms; the unknown share,
        // 20 ms per second, has refilled its 2 ms too.
        let later = t + Duration::from_millis(110);
        assert!(b.admit(later, A, Standing::Unknown, 100).is_ok());
        assert_eq!(b.spent(), (Duration::from_millis(8), Duration::from_millis(3)));
    }

    #[test]
    fn unknown_sources_wait_while_the_overall_budget_is_below_half() {
        let t = Instant::now();
        let c = DefenceConfig { decompression_ms_per_s: 100, decompression_burst_ms: 10, ..DefenceConfig::default() };
        let mut b = Budgets::new(c, 1.0, t);
        let k = b.admit(t, A, Standing::Known, 100).unwrap();
        b.settle(k, 100, Duration::from_millis(6));
        assert_eq!(b.admit(t, B, Standing::Unknown, 100).map(|_| ()), Err(Refusal::Unknown));
        assert!(b.admit(t, B, Standing::Known, 100).is_ok());
    }

    #[test]
    fn a_shard_gets_its_share_of_the_overall_budget() {
        let t = Instant::now();
        let c = DefenceConfig { decompression_ms_per_s: 100, decompression_burst_ms: 10, ..DefenceConfig::default() };
        let mut b = Budgets::new(c, 0.5, t);
        let k = b.admit(t, A, Standing::Known, 100).unwrap();
        b.settle(k, 100, Duration::from_millis(5));
        assert_eq!(b.admit(t, A, Standing::Known, 100).map(|_| ()), Err(Refusal::Overall));
    }

    #[test]
    fn idle_sources_are_forgotten_at_the_cap() {
        let t = Instant::now();
        let mut b = Budgets::new(config(), 1.0, t);
        for i in 1..=2u8 {
            run(&mut b, t, IpAddr::from([10, 0, 0, i]), 100, 100).unwrap();
        }
        let later = t + Duration::from_secs(10);
        run(&mut b, later, IpAddr::from([10, 0, 0, 3]), 100, 100).unwrap();
        assert_eq!(b.sources(), 1);
    }
}
