//! Budgets per source address. A SigComp message carries bytecode from the
//! network: each one may run its whole cycle budget, (8 × length + 1000) ×
//! cycles_per_bit (RFC 3320 §8.6), and the 2005 SigComp performance thesis
//! found that 8 looping messages a second saturate a P-CSCF. So a message
//! is charged its worst case before it runs, and what it did not use is
//! given back: no source can make the proxy run more cycles than its
//! budget, whatever it sends, and the others keep theirs.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use crate::config::DefenceConfig;

/// Why a message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The source sent more messages than its rate allows.
    Messages,
    /// The message's worst-case cycles exceed what the source has left.
    Cycles,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    cycles: f64,
    messages: f64,
    updated: Instant,
}

/// Token buckets of UDVM cycles and messages per source IP address.
#[derive(Debug)]
pub struct SourceBudgets {
    config: DefenceConfig,
    sources: HashMap<IpAddr, Bucket>,
}

impl SourceBudgets {
    pub fn new(config: DefenceConfig) -> SourceBudgets {
        SourceBudgets { config, sources: HashMap::new() }
    }

    fn refill(&self, b: &mut Bucket, now: Instant) {
        let dt = now.saturating_duration_since(b.updated).as_secs_f64();
        b.cycles = (b.cycles + dt * self.config.cycles_per_source_per_s as f64).min(self.config.cycles_burst as f64);
        b.messages =
            (b.messages + dt * self.config.messages_per_source_per_s as f64).min(self.config.messages_burst as f64);
        b.updated = now;
    }

    /// Charges one message that may run up to `worst_cycles` from `source`.
    pub fn admit(&mut self, now: Instant, source: IpAddr, worst_cycles: u64) -> Result<(), Refusal> {
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
            Ok(())
        };
        if self.sources.len() < self.config.max_sources || self.sources.contains_key(&source) {
            self.sources.insert(source, b);
        }
        verdict
    }

    /// Gives back the cycles an admitted message did not use.
    pub fn refund(&mut self, source: IpAddr, unused_cycles: u64) {
        let burst = self.config.cycles_burst as f64;
        if let Some(b) = self.sources.get_mut(&source) {
            b.cycles = (b.cycles + unused_cycles as f64).min(burst);
        }
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

    pub fn sources(&self) -> usize {
        self.sources.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn config() -> DefenceConfig {
        DefenceConfig {
            cycles_per_source_per_s: 1000,
            cycles_burst: 2000,
            messages_per_source_per_s: 10,
            messages_burst: 3,
            max_sources: 2,
        }
    }

    #[test]
    fn a_source_is_held_to_its_budget_and_others_keep_theirs() {
        let mut b = SourceBudgets::new(config());
        let t = Instant::now();
        let (a, other): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        assert_eq!(b.admit(t, a, 1500), Ok(()));
        assert_eq!(b.admit(t, a, 1500), Err(Refusal::Cycles));
        assert_eq!(b.admit(t, other, 1500), Ok(()), "another source is not charged");
        b.refund(a, 1000);
        assert_eq!(b.admit(t, a, 1400), Ok(()));
        assert_eq!(b.admit(t, a, 0), Ok(()));
        assert_eq!(b.admit(t, a, 0), Err(Refusal::Messages), "burst of 3 messages");
        let later = t + Duration::from_millis(500);
        assert_eq!(b.admit(later, a, 400), Ok(()), "refilled by rate x time");
    }

    #[test]
    fn idle_sources_are_forgotten_at_the_cap() {
        let mut b = SourceBudgets::new(config());
        let t = Instant::now();
        for i in 1..=2u8 {
            b.admit(t, IpAddr::from([10, 0, 0, i]), 100).unwrap();
        }
        let later = t + Duration::from_secs(10);
        b.admit(later, IpAddr::from([10, 0, 0, 3]), 100).unwrap();
        assert_eq!(b.sources(), 1);
    }
}
