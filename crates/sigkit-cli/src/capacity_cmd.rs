//! `sigkit capacity`: the highest call rate a SIP system serves within a
//! service level (the framework thesis's Table 5-7: at most 10 % failed calls, set-up
//! delay at most 250 ms), found by stepped load runs of `sigkit load`,
//! repeated for a confidence interval.

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use sigkit_eval::capacity::{Bound, CapacitySearch, Estimate, Outcome, ServiceLevel, StepResult, Strategy};
use sigkit_loadgen::{EngineConfig, LoadConfig, Prepared, Role};

#[derive(Args)]
pub struct CapacityArgs {
    /// The UAS the calls are for (host:port). Without it a built-in UAS
    /// answers on 127.0.0.1 (the system under test is then what lies
    /// between, given by --through, or the generator itself).
    #[arg(long)]
    target: Option<String>,
    /// Send the calls through this SIP proxy (host:port): the system under
    /// test, e.g. Kamailio in front of the UAS.
    #[arg(long)]
    through: Option<String>,
    /// Searches to run; the capacity is reported with the spread and a
    /// 95 % confidence interval across them.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// First rate tried, calls/s.
    #[arg(long, default_value_t = 200.0)]
    start: f64,
    /// Highest rate tried, calls/s.
    #[arg(long, default_value_t = 100_000.0)]
    max: f64,
    /// Stop when the served and unserved rates are this close (fraction).
    #[arg(long, default_value_t = 0.02)]
    resolution: f64,
    /// Seconds of load per step.
    #[arg(long, default_value_t = 3.0)]
    step_s: f64,
    /// Step as the framework thesis did (start, start+step, ...) instead of bisecting.
    #[arg(long)]
    step: Option<f64>,
    /// Largest share of failed calls (0.10 = 10 %).
    #[arg(long, default_value_t = 0.10)]
    max_failed: f64,
    /// Largest 95th percentile of INVITE→200, ms.
    #[arg(long, default_value_t = 250.0)]
    max_setup_p95_ms: f64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The settings of a capacity search, apart from the command line.
#[derive(Debug, Clone, Serialize)]
pub struct SearchSettings {
    pub target: Option<SocketAddr>,
    pub through: Option<SocketAddr>,
    pub repeat: usize,
    #[serde(skip)]
    pub strategy: Strategy,
    #[serde(skip)]
    pub level: ServiceLevel,
    pub step_s: f64,
}

/// One search's steps and result, and the estimate across searches.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityReport {
    /// The system under test, in words.
    pub target: String,
    /// The service level the capacity keeps, in words.
    pub service_level: String,
    pub searches: Vec<Outcome>,
    pub estimate: Option<Estimate>,
}

impl SearchSettings {
    /// What the calls measure, in words.
    pub fn target_name(&self) -> String {
        let uas = self.target.map_or_else(|| "the built-in UAS".to_string(), |t| format!("the UAS at {t}"));
        match self.through {
            Some(p) => format!("the proxy at {p} in front of {uas}"),
            None => uas,
        }
    }
}

/// `level` in words.
pub fn service_level_name(level: &ServiceLevel) -> String {
    format!(
        "at most {} % failed calls, p95 set-up delay at most {} ms",
        level.max_failed_ratio * 100.0,
        level.max_setup_p95.as_secs_f64() * 1e3
    )
}

/// One load step at `rate` calls/s for `secs`, against `target` (or a
/// built-in UAS), through `through` if given.
pub async fn step(rate: f64, secs: f64, target: Option<SocketAddr>, through: Option<SocketAddr>) -> StepResult {
    let calls = (rate * secs).ceil().max(1.0) as u64;
    let (target, uas) = match target {
        Some(t) => (t, None),
        None => {
            let uas = LoadConfig {
                role: Role::Uas,
                duration: Some(Duration::from_secs_f64(secs + 40.0)),
                max_calls: Some(calls),
                ..LoadConfig::default()
            };
            match Prepared::bind(uas).await {
                Ok(p) => {
                    let addr = p.local_addr();
                    let (tx, rx) = tokio::sync::watch::channel(false);
                    (addr, Some((tokio::spawn(p.run(Some(rx))), tx)))
                }
                Err(_) => {
                    return StepResult { offered_cps: rate, attempted: 0, successful: 0, failed: 0, setup_p95_ms: None }
                }
            }
        }
    };
    let uac = LoadConfig {
        role: Role::Uac,
        engine: EngineConfig {
            local: step_local(target, through),
            remote: Some(target),
            next_hop: through,
            ..LoadConfig::default().engine
        },
        rate,
        max_calls: Some(calls),
        // Calls still in progress this long after the last start are
        // counted as failed.
        duration: Some(Duration::from_secs_f64(secs + 4.0)),
        ..LoadConfig::default()
    };
    let result = sigkit_loadgen::run(uac, None).await;
    if let Some((task, stop)) = uas {
        let _ = stop.send(true);
        let _ = task.await;
    }
    match result {
        Ok(r) => {
            let s = r.summary;
            StepResult {
                offered_cps: rate,
                attempted: s.attempted_calls,
                successful: s.successful_calls,
                failed: s.attempted_calls - s.successful_calls,
                setup_p95_ms: (s.setup_ms.count > 0).then_some(s.setup_ms.p95),
            }
        }
        Err(_) => StepResult { offered_cps: rate, attempted: 0, successful: 0, failed: 0, setup_p95_ms: None },
    }
}

/// The address a step's calls come from. The load generator numbers a
/// run's calls from 1 and builds their Call-IDs and branches from that
/// number, the process id and the local address, so successive steps of
/// one process would repeat them: a stateful proxy (Kamailio) then takes a
/// step's first calls for retransmissions of the previous step's and
/// answers them from the old transactions. On loopback each step takes
/// its own address (127.0.0.2 to 127.0.0.251, all of 127/8 being local).
fn step_local(target: SocketAddr, through: Option<SocketAddr>) -> SocketAddr {
    static STEPS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let loopback = target.ip().is_loopback() && through.is_none_or(|t| t.ip().is_loopback());
    if !loopback || !target.is_ipv4() {
        return LoadConfig::default().engine.local;
    }
    let n = STEPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    SocketAddr::from(([127, 0, 0, 2 + (n % 250) as u8], 0))
}

/// Runs the searches.
pub async fn search(settings: &SearchSettings, mut progress: impl FnMut(usize, &StepResult, bool)) -> CapacityReport {
    let mut searches = Vec::new();
    for i in 0..settings.repeat.max(1) {
        let mut s = CapacitySearch::new(settings.strategy, settings.level);
        while let Some(rate) = s.next_rate() {
            let r = step(rate, settings.step_s, settings.target, settings.through).await;
            let served = s.record(r) == sigkit_eval::capacity::Verdict::Served;
            progress(i, &r, served);
        }
        searches.push(s.outcome());
    }
    let found: Vec<f64> =
        searches.iter().filter(|o| o.bound == Bound::Bracketed).filter_map(|o| o.capacity_cps).collect();
    CapacityReport {
        target: settings.target_name(),
        service_level: service_level_name(&settings.level),
        estimate: Estimate::of(&found),
        searches,
    }
}

/// One step as a progress line.
pub fn describe(r: &StepResult, served: bool) -> String {
    format!(
        "{:>9.1} calls/s offered: {} of {} failed, p95 set-up {} -> {}",
        r.offered_cps,
        r.failed,
        r.attempted,
        r.setup_p95_ms.map_or("-".into(), |p| format!("{p:.2} ms")),
        if served { "served" } else { "not served" }
    )
}

fn addr(s: &Option<String>, what: &str) -> Result<Option<SocketAddr>, String> {
    match s {
        None => Ok(None),
        Some(s) => s
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .map(Some)
            .ok_or_else(|| format!("--{what} {s}: not a host:port")),
    }
}

pub fn capacity(args: CapacityArgs) -> ExitCode {
    let fail = |m: String| {
        eprintln!("sigkit capacity: {m}");
        ExitCode::from(2)
    };
    let (target, through) = match (addr(&args.target, "target"), addr(&args.through, "through")) {
        (Ok(t), Ok(p)) => (t, p),
        (Err(e), _) | (_, Err(e)) => return fail(e),
    };
    let strategy = match args.step {
        Some(step) => Strategy::Steps { start: args.start, step, end: args.max },
        None => Strategy::Bisect { start: args.start, growth: 2.0, max: args.max, resolution: args.resolution },
    };
    if CapacitySearch::new(strategy, ServiceLevel::default()).next_rate().is_none() {
        return fail("the rates do not make a search (start > 0, max >= start, resolution > 0)".into());
    }
    let level = ServiceLevel {
        max_failed_ratio: args.max_failed,
        max_setup_p95: Duration::from_secs_f64(args.max_setup_p95_ms / 1e3),
    };
    let settings = SearchSettings { target, through, repeat: args.repeat, strategy, level, step_s: args.step_s };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(e.to_string()),
    };
    let report =
        runtime.block_on(search(&settings, |i, r, served| eprintln!("search {}: {}", i + 1, describe(r, served))));
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(j) => println!("{j}"),
            Err(e) => return fail(e.to_string()),
        }
    } else {
        for (i, o) in report.searches.iter().enumerate() {
            println!(
                "search {}: capacity {} calls/s ({:?}; first unserved {})",
                i + 1,
                o.capacity_cps.map_or("-".into(), |c| format!("{c:.1}")),
                o.bound,
                o.first_unserved_cps.map_or("-".into(), |c| format!("{c:.1}"))
            );
        }
        if let Some(e) = report.estimate {
            println!(
                "capacity {:.1} calls/s over {} searches (min {:.1}, max {:.1}, ±{:.1} % at most; 95 % CI ±{})",
                e.mean_cps,
                e.repetitions,
                e.min_cps,
                e.max_cps,
                e.max_deviation * 100.0,
                e.ci95_cps.map_or("-".into(), |c| format!("{c:.1}"))
            );
        }
    }
    ExitCode::SUCCESS
}
