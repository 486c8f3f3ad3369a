//! A discrete-event simulator of SIP overload in transaction-stateful
//! proxies carrying non-INVITE transactions over UDP, after the SIP overload
//! thesis (C. Egger, "Improvement Strategies for the Signaling Performance
//! of the Session Initiation Protocol", 2012), chapters 3 and 4: its model,
//! its congestion detectors (D1 delay-based, D2 pending-transaction-based)
//! and handlers (H1 raising T1, H2 capping pending transactions with 503,
//! SIP offload), and RFC 7339 loss-based overload control beside them.
//!
//! ```
//! let scenario = sigkit_sim::Scenario::from_toml_str(r#"
//!     duration = 60.0
//!     collapse_window = [40.0, 60.0]
//!     [[proxies]]
//!     capacity_tps = 100
//!     [[sources]]
//!     rate = 50
//! "#).unwrap();
//! let run = sigkit_sim::run_seed(&scenario, 1);
//! assert!(!run.summary.collapsed);
//! ```

#![forbid(unsafe_code)]

pub mod kernel;
pub mod memory;
pub mod metrics;
mod model;
pub mod plot;
pub mod rng;
pub mod scenario;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use memory::{MemoryError, MemoryEstimate, DEFAULT_BUDGET_BYTES};
pub use metrics::{SecondRow, SeedSummary};
pub use scenario::{HandlerKind, Scenario, ScenarioError, Trigger};
pub use sigkit_overload::{detect, via};

/// One seed's run: its summary and its per-second rows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedRun {
    /// The seed's outcome over the whole run and its collapse window.
    pub summary: SeedSummary,
    /// One row per simulated second of `duration` (the drain is not
    /// recorded), in time order.
    pub seconds: Vec<SecondRow>,
}

/// Runs `scenario` with `seed`; the same seed gives the same run.
pub fn run_seed(scenario: &Scenario, seed: u64) -> SeedRun {
    let network = model::Network::new(scenario, seed);
    let (rec, txns, tests) = network.run();
    let (summary, seconds) = metrics::finish(scenario, seed, rec, &txns, tests);
    SeedRun { summary, seconds }
}

/// Runs `scenario` once per seed, in parallel on rayon's pool (all cores
/// unless configured otherwise); results come in the order of `seeds`.
pub fn run_seeds(scenario: &Scenario, seeds: &[u64]) -> Vec<SeedRun> {
    seeds.par_iter().map(|&seed| run_seed(scenario, seed)).collect()
}

/// Threads `run_seeds` runs on (rayon's pool).
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// The summary across seeds (what `sigkit sim` prints last).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Study {
    /// The scenario's name.
    pub scenario: String,
    /// Seeds run.
    pub seeds: u64,
    /// Of those, runs that collapsed: fewer than `collapse_threshold` of
    /// the window's transactions got a 200 (thesis §4.1.1).
    pub collapsed: u64,
    /// The thesis's success rate over the window, across seeds: min, mean, max.
    pub window_success_ratio: [f64; 3],
    /// Window 200 share across seeds: min, mean, max.
    pub window_ok_ratio: [f64; 3],
    /// Mean window goodput across seeds, 200s per second.
    pub window_goodput_mean: f64,
    /// Mean share of transactions rejected with 503.
    pub rejected_share_mean: f64,
    /// Mean request transmissions per transaction.
    pub transmissions_mean: f64,
    /// Largest UAC pending count over all seeds.
    pub max_uac_pending: u64,
    /// The 95th percentile of fRpD over each seed's whole run (all
    /// transactions answered, 503s included), across seeds: min, mean, max.
    pub frpd_p95: [f64; 3],
    /// Share of all recorded transactions answered 200 (or 401), across
    /// seeds: min, mean, max.
    pub ok_share: [f64; 3],
    /// The least number of registrations active in the window, across
    /// seeds: min, mean, max (with a registration workload).
    pub registrations_window_min: Option<[f64; 3]>,
    /// The share of D1's evaluations that found the next hop congested,
    /// mean over the seeds.
    pub d1_congested_share_mean: f64,
    /// Events the kernel processed, all seeds.
    pub events: u64,
}

fn spread(values: impl Iterator<Item = f64> + Clone) -> [f64; 3] {
    let n = values.clone().count().max(1) as f64;
    let min = values.clone().fold(f64::INFINITY, f64::min);
    let max = values.clone().fold(f64::NEG_INFINITY, f64::max);
    [min, values.sum::<f64>() / n, max]
}

impl Study {
    /// Summarises `runs`, one seed's outcome each (in any order), of
    /// `scenario`.
    pub fn of(scenario: &Scenario, runs: &[SeedSummary]) -> Study {
        let n = runs.len().max(1) as f64;
        Study {
            scenario: scenario.name.clone(),
            seeds: runs.len() as u64,
            collapsed: runs.iter().filter(|r| r.collapsed).count() as u64,
            window_success_ratio: spread(runs.iter().map(|r| r.window_success_ratio)),
            window_ok_ratio: spread(runs.iter().map(|r| r.window_ok_ratio)),
            window_goodput_mean: runs.iter().map(|r| r.window_goodput).sum::<f64>() / n,
            rejected_share_mean: runs.iter().map(|r| r.rejected as f64 / r.transactions.max(1) as f64).sum::<f64>() / n,
            transmissions_mean: runs.iter().map(|r| r.transmissions_mean).sum::<f64>() / n,
            max_uac_pending: runs.iter().map(|r| r.max_uac_pending).max().unwrap_or(0),
            frpd_p95: spread(runs.iter().filter_map(|r| r.frpd_p95)),
            ok_share: spread(runs.iter().map(|r| r.ok as f64 / r.transactions.max(1) as f64)),
            registrations_window_min: runs
                .iter()
                .all(|r| r.registrations_active_window_min.is_some())
                .then(|| spread(runs.iter().map(|r| r.registrations_active_window_min.unwrap_or(0) as f64))),
            d1_congested_share_mean: runs
                .iter()
                .map(|r| {
                    let evaluations = ((scenario.duration + scenario.drain) / scenario.detectors.d1.interval).floor();
                    r.d1_congested_evaluations as f64 / evaluations.max(1.0)
                })
                .sum::<f64>()
                / n,
            events: runs.iter().map(|r| r.events).sum(),
        }
    }
}
