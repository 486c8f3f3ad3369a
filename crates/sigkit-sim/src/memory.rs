//! What a run would hold in memory, estimated from its scenario before it
//! starts, so that a scenario too large for the machine is refused with
//! the keys to lower instead of aborting on an allocation part way.
//!
//! A run keeps every transaction it starts to its end (the per-second
//! metrics and the collapse verdict are taken from them), so memory grows
//! with the transactions: the sources' rate times their time, and each
//! registration client's and subscription's attempts. The per-second rows
//! add to that, for every seed, since all are returned.

use serde::Serialize;

use crate::metrics::SecondRow;
use crate::scenario::Scenario;

/// What `sigkit sim` allows a run by default: 4 GiB.
pub const DEFAULT_BUDGET_BYTES: u64 = 4 << 30;

/// A run's estimated memory.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryEstimate {
    /// Transactions one seed starts, at most (means with a margin).
    pub transactions_per_seed: f64,
    /// Of those, the registration clients' (two a cycle: REGISTER, then
    /// REGISTER with credentials; thesis §4.5.2).
    pub registration_transactions: f64,
    /// Of those, the subscriptions' (a SUBSCRIBE and a NOTIFY a cycle;
    /// thesis §4.5.1).
    pub presence_transactions: f64,
    /// Bytes one seed holds while it runs.
    pub bytes_per_seed: f64,
    /// Bytes of all seeds: those running at once, and every seed's
    /// per-second rows.
    pub bytes: f64,
}

impl MemoryEstimate {
    /// Refuses an estimate over `budget` bytes, naming what it would need
    /// and the keys that set it.
    pub fn check(&self, budget: u64) -> Result<(), MemoryError> {
        if self.transactions_per_seed > f64::from(u32::MAX) {
            return Err(MemoryError::TooManyTransactions { transactions: self.transactions_per_seed });
        }
        if self.bytes <= budget as f64 {
            return Ok(());
        }
        let mut keys = vec!["duration", "drain", "sources.*.rate"];
        if self.registration_transactions > 0.0 {
            keys.extend(["registration.clients", "registration.retry", "registration.expires"]);
        }
        if self.presence_transactions > 0.0 {
            keys.extend(["presence.watchers", "presence.presentities"]);
        }
        Err(MemoryError::OverBudget {
            gib: self.bytes / GIB,
            transactions: self.transactions_per_seed,
            seed_gib: self.bytes_per_seed / GIB,
            budget_gib: budget as f64 / GIB,
            keys: keys.join(", "),
        })
    }
}

/// Why a run would not fit in memory ([`MemoryEstimate::check`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MemoryError {
    #[error(
        "a seed would start about {transactions:.3e} transactions, more than the 2^32 a run numbers; lower \
         duration, drain, sources.*.rate, registration.clients or presence.watchers"
    )]
    /// A seed would start more transactions than the model's 32-bit
    /// transaction numbers can name.
    TooManyTransactions {
        /// Transactions one seed would start (the estimate).
        transactions: f64,
    },
    #[error(
        "the run would need about {gib:.1} GiB ({transactions:.3e} transactions a seed, {seed_gib:.1} GiB each, the \
         seeds' per-second rows besides), over the budget of {budget_gib:.1} GiB; lower {keys} or --seeds, or raise \
         --memory-budget-mib"
    )]
    /// The estimate exceeds the memory budget.
    OverBudget {
        /// Estimated memory of the whole run, in GiB.
        gib: f64,
        /// Transactions one seed would start.
        transactions: f64,
        /// Estimated memory of one running seed, in GiB.
        seed_gib: f64,
        /// The budget, in GiB.
        budget_gib: f64,
        /// The scenario keys that drive the estimate, comma-separated.
        keys: String,
    },
}

const GIB: f64 = (1u64 << 30) as f64;

impl Scenario {
    /// The memory `seeds` seeds of this scenario would take, `parallel` of
    /// them running at once.
    pub fn memory_estimate(&self, seeds: u64, parallel: usize) -> MemoryEstimate {
        let horizon = self.duration + self.drain;
        // Poisson sources: the mean count, with a margin for the spread.
        let sources: f64 = self
            .sources
            .iter()
            .map(|s| {
                let end = s.end.unwrap_or(horizon).min(horizon);
                s.rate * (end - s.start).max(0.0)
            })
            .sum::<f64>()
            * 1.1
            + 100.0;
        // A registration client's cycle is two transactions (REGISTER, 401,
        // REGISTER with credentials) and lasts at least until its
        // registration expires or its retry: the most cycles it can fit.
        let registration = self.registration.as_ref().map_or(0.0, |r| {
            let cycle = r.retry.min(if r.random_expiry { r.min_expires } else { r.expires });
            let time = (horizon - r.start).max(0.0);
            f64::from(r.clients) * 2.0 * (time / cycle + 1.0).floor()
        });
        // A subscription sends a SUBSCRIBE at most each notify_timeout and
        // its presentity a NOTIFY on each and each state_change.
        let presence = self.presence.as_ref().map_or(0.0, |p| {
            let subscriptions = f64::from(p.watchers) * f64::from(p.presentities);
            let time = (horizon - p.start).max(0.0);
            subscriptions * 2.0 * (time / p.notify_timeout.min(p.state_change) + 1.0).floor()
        });
        let transactions = sources + registration + presence;
        let per_transaction = crate::model::bytes_per_transaction(self.proxies.len()) as f64;
        // Transactions alive at once, with their timers: those started
        // within a transaction's life (Timer F, then Timer J, 64·T1 each,
        // and Timer K) at the highest rate the workloads start them.
        let life = 128.0 * self.timers.t1 + self.timers.t4;
        let peak_rate = self.sources.iter().map(|s| s.rate).sum::<f64>()
            + self.registration.as_ref().map_or(0.0, |r| 2.0 * f64::from(r.clients) / r.spread.max(1.0))
            + self
                .presence
                .as_ref()
                .map_or(0.0, |p| 2.0 * f64::from(p.watchers) * f64::from(p.presentities) / p.spread.max(1.0));
        let live = transactions.min(peak_rate * life);
        let timers = live * crate::model::timer_bytes_per_live_transaction(self.proxies.len()) as f64;
        // The recorder's second and the row made of it.
        let seconds = self.duration.ceil();
        let per_second = (std::mem::size_of::<SecondRow>() * 2 + 8 * self.proxies.len()) as f64;
        // Per registration client and subscription: its state and first event.
        let per_client = 64.0
            * (self.registration.as_ref().map_or(0.0, |r| f64::from(r.clients))
                + self.presence.as_ref().map_or(0.0, |p| f64::from(p.watchers) * f64::from(p.presentities)));
        let bytes_per_seed = transactions * per_transaction + timers + seconds * per_second + per_client;
        let running = (parallel.max(1) as u64).min(seeds.max(1)) as f64;
        let bytes = running * bytes_per_seed + seeds as f64 * seconds * std::mem::size_of::<SecondRow>() as f64;
        MemoryEstimate {
            transactions_per_seed: transactions,
            registration_transactions: registration,
            presence_transactions: presence,
            bytes_per_seed,
            bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEADY: &str = "duration = 700.0\ncollapse_window = [600.0, 700.0]\n[[proxies]]\ncapacity_tps = 1000\n\
                          [[proxies]]\ncapacity_tps = 100\n[[sources]]\nrate = 80\n";

    #[test]
    fn the_thesis_scenarios_fit_and_a_million_of_anything_does_not() {
        let steady = Scenario::from_toml_str(STEADY).unwrap();
        let e = steady.memory_estimate(100, 2);
        // 80 tps over 770 s, with the margin.
        assert!((61_600.0..75_000.0).contains(&e.transactions_per_seed), "{e:?}");
        assert_eq!(e.check(DEFAULT_BUDGET_BYTES), Ok(()));
        let long = Scenario::from_toml_str(&STEADY.replace("duration = 700.0", "duration = 1e6")).unwrap();
        let err = long.memory_estimate(1, 2).check(DEFAULT_BUDGET_BYTES).unwrap_err().to_string();
        assert!(err.contains("GiB") && err.contains("duration") && err.contains("sources.*.rate"), "{err}");
        let clients = format!("{STEADY}[registration]\nclients = 1000000\n");
        let err = Scenario::from_toml_str(&clients).unwrap().memory_estimate(1, 2).check(DEFAULT_BUDGET_BYTES);
        assert!(err.unwrap_err().to_string().contains("registration.clients"));
    }

    /// Every scenario shipped, 100 seeds eight at a time, stays within the
    /// default budget: the check refuses no run the documents describe.
    #[test]
    fn every_shipped_scenario_fits_the_default_budget() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let sc = Scenario::load(&path).unwrap();
            let e = sc.memory_estimate(100, 8);
            assert_eq!(e.check(DEFAULT_BUDGET_BYTES), Ok(()), "{}: {e:?}", path.display());
            n += 1;
        }
        assert!(n >= 20, "{n} scenarios");
    }

    /// The estimate is an upper bound of what a run holds: runs of
    /// 10,000 s and 40,000 s at 80 tps over two proxies took 277 MB and
    /// 994 MB (peak RSS), 300 bytes for each of the 2.4 million
    /// transactions between them.
    #[test]
    fn a_transaction_costs_at_least_what_was_measured() {
        assert!(crate::model::bytes_per_transaction(2) >= 300);
        let run = |d: &str| {
            let sc = Scenario::from_toml_str(&STEADY.replace("duration = 700.0", d)).unwrap();
            sc.memory_estimate(1, 1).bytes
        };
        assert!(run("duration = 10000.0") >= 277e6 && run("duration = 40000.0") >= 994e6);
    }
}
