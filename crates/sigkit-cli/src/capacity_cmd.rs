//! `sigkit capacity`: the highest call rate a SIP system serves within a
//! service level (the framework thesis's Table 5-7: at most 10 % failed calls, set-up
//! delay at most 250 ms), found by stepped load runs of `sigkit load`,
//! repeated for a confidence interval.

use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use sigkit_eval::capacity::{Bound, CapacitySearch, Estimate, Outcome, ServiceLevel, StepResult, Strategy};
use sigkit_loadgen::{EngineConfig, LoadConfig, Prepared, Role};
use sigkit_proxy::locate::host_port;

use crate::exit::CliError;

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
pub async fn step(rate: f64, secs: f64, target: Option<SocketAddr>, through: Option<SocketAddr>) -> StepRun {
    let calls = (rate * secs).ceil().max(1.0) as u64;
    let nothing = |next_hop: Option<SocketAddr>, error: String| StepRun {
        result: StepResult { offered_cps: rate, attempted: 0, successful: 0, failed: 0, setup_p95_ms: None },
        next_hop,
        received: 0,
        error: Some(error),
    };
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
                Err(e) => return nothing(through, format!("the built-in UAS: {e}")),
            }
        }
    };
    let next_hop = through.unwrap_or(target);
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
            StepRun {
                result: StepResult {
                    offered_cps: rate,
                    attempted: s.attempted_calls,
                    successful: s.successful_calls,
                    failed: s.attempted_calls - s.successful_calls,
                    setup_p95_ms: (s.setup_ms.count > 0).then_some(s.setup_ms.p95),
                },
                next_hop: Some(next_hop),
                received: s.messages_received,
                error: None,
            }
        }
        Err(e) => nothing(Some(next_hop), e.to_string()),
    }
}

/// What one step gave, with what the search needs to know beyond the
/// service level's figures.
#[derive(Debug, Clone)]
pub struct StepRun {
    /// The step's figures.
    pub result: StepResult,
    /// Where the calls went first (the proxy, or the UAS); `None` when the
    /// built-in UAS could not be started.
    pub next_hop: Option<SocketAddr>,
    /// SIP messages received, any response counting.
    pub received: u64,
    /// Why the step could not run at all.
    pub error: Option<String>,
}

impl StepRun {
    /// Why the search should not go on, when this is its first step: a
    /// step that could not run, or whose calls got no message back at all.
    /// Lower rates would be answered no better, and a search down to
    /// 0.1 calls/s would take minutes only to report "below the lowest
    /// rate" for what is a wrong address or a peer that is down.
    fn unanswered(&self, secs: f64) -> Option<String> {
        let at = self.next_hop.map_or_else(|| "the built-in UAS".to_string(), |a| a.to_string());
        if let Some(e) = &self.error {
            return Some(format!("no answer from {at}: {e}"));
        }
        (self.result.attempted > 0 && self.received == 0).then(|| {
            format!(
                "no answer from {at}: none of the {} calls of the first step ({:.1} calls/s for {secs} s) got a response",
                self.result.attempted, self.result.offered_cps
            )
        })
    }
}

/// Whether the host at `addr` refuses UDP at once: an empty datagram from
/// a connected socket draws an ICMP port unreachable from a host where
/// nothing listens (RFC 1122 §3.2.2.1), which Linux reports on the socket
/// as "connection refused". A SIP server ignores the empty datagram (it is
/// no message, RFC 3261 §7). No error within the wait proves nothing (a
/// remote host may drop it silently): the first step then tells.
fn refuses_udp(addr: SocketAddr) -> Option<std::io::Error> {
    const WAIT: Duration = Duration::from_millis(300);
    let local: SocketAddr =
        if addr.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { (std::net::Ipv6Addr::UNSPECIFIED, 0).into() };
    let socket = UdpSocket::bind(local).ok()?;
    socket.connect(addr).ok()?;
    socket.set_read_timeout(Some(WAIT)).ok()?;
    if let Err(e) = socket.send(&[]) {
        return (e.kind() == std::io::ErrorKind::ConnectionRefused).then_some(e);
    }
    let mut buf = [0u8; 1];
    match socket.recv(&mut buf) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Some(e),
        _ => None,
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

/// Runs the searches; stops at once with the reason when the next hop
/// refuses UDP or the first step's calls get no answer at all.
pub async fn search(
    settings: &SearchSettings,
    mut progress: impl FnMut(usize, &StepResult, bool),
) -> Result<CapacityReport, String> {
    if let Some(hop) = settings.through.or(settings.target) {
        if let Ok(Some(e)) = tokio::task::spawn_blocking(move || refuses_udp(hop)).await {
            return Err(format!("no answer from {hop}: nothing listens there on UDP ({e})"));
        }
    }
    let mut searches = Vec::new();
    let mut first = true;
    for i in 0..settings.repeat.max(1) {
        let mut s = CapacitySearch::new(settings.strategy, settings.level);
        while let Some(rate) = s.next_rate() {
            let run = step(rate, settings.step_s, settings.target, settings.through).await;
            if std::mem::take(&mut first) {
                if let Some(why) = run.unanswered(settings.step_s) {
                    return Err(why);
                }
            }
            let served = s.record(run.result) == sigkit_eval::capacity::Verdict::Served;
            progress(i, &run.result, served);
        }
        searches.push(s.outcome());
    }
    let found: Vec<f64> =
        searches.iter().filter(|o| o.bound == Bound::Bracketed).filter_map(|o| o.capacity_cps).collect();
    Ok(CapacityReport {
        target: settings.target_name(),
        service_level: service_level_name(&settings.level),
        estimate: Estimate::of(&found),
        searches,
    })
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

/// `--WHAT`'s HOST:PORT, its name resolved.
fn addr(s: &Option<String>, what: &str) -> Result<Option<SocketAddr>, CliError> {
    let Some(s) = s else { return Ok(None) };
    host_port(s).map(Some).map_err(|e| {
        let message = format!("--{what} {s}: {e}");
        if e.is_resolution() {
            CliError::network(message)
        } else {
            CliError::usage(message)
        }
    })
}

pub fn capacity(args: CapacityArgs) -> ExitCode {
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report("sigkit capacity"),
    }
}

/// The settings the arguments describe.
fn settings(args: &CapacityArgs) -> Result<SearchSettings, CliError> {
    let target = addr(&args.target, "target")?;
    let through = addr(&args.through, "through")?;
    let strategy = match args.step {
        Some(step) => Strategy::Steps { start: args.start, step, end: args.max },
        None => Strategy::Bisect { start: args.start, growth: 2.0, max: args.max, resolution: args.resolution },
    };
    if CapacitySearch::new(strategy, ServiceLevel::default()).next_rate().is_none() {
        return Err("the rates do not make a search (start > 0, max >= start, resolution > 0)".into());
    }
    if !(args.step_s.is_finite() && args.step_s > 0.0 && args.step_s <= 86_400.0) {
        return Err(format!("--step-s {}: seconds in (0, 86400]", args.step_s).into());
    }
    if !(0.0..=1.0).contains(&args.max_failed) {
        return Err(format!("--max-failed {}: a share in [0, 1]", args.max_failed).into());
    }
    if !(args.max_setup_p95_ms.is_finite() && (0.0..=86_400_000.0).contains(&args.max_setup_p95_ms)) {
        return Err(format!("--max-setup-p95-ms {}: milliseconds, 0 or more", args.max_setup_p95_ms).into());
    }
    let level = ServiceLevel {
        max_failed_ratio: args.max_failed,
        max_setup_p95: Duration::from_secs_f64(args.max_setup_p95_ms / 1e3),
    };
    Ok(SearchSettings { target, through, repeat: args.repeat, strategy, level, step_s: args.step_s })
}

fn run(args: &CapacityArgs) -> Result<(), CliError> {
    let settings = settings(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::run(format!("the async runtime: {e}")))?;
    let report = runtime
        .block_on(search(&settings, |i, r, served| eprintln!("search {}: {}", i + 1, describe(r, served))))
        .map_err(CliError::network)?;
    if args.json {
        let json = serde_json::to_string_pretty(&report).map_err(CliError::run)?;
        println!("{json}");
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
    Ok(())
}
