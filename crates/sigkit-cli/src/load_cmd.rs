//! `sigkit load`: the SIP load generator, with SIPp's flags where the two
//! tools overlap, so a SIPp command line runs unchanged.

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use sigkit_loadgen::{LoadConfig, Role};

/// SIPp's single-dash long flags, which clap spells with two dashes.
const SIPP_FLAGS: &[&str] = &[
    "sn",
    "sf",
    "inf",
    "r",
    "rp",
    "l",
    "m",
    "d",
    "i",
    "p",
    "t",
    "s",
    "timeout",
    "trace_stat",
    "fd",
    "cp",
    "nostdin",
    "bg",
];

/// Rewrites `-sn uac` as `--sn uac` (and so on for SIPp's flags) in the
/// arguments after `load`; clap then parses them.
pub fn sipp_style(args: Vec<String>) -> Vec<String> {
    let Some(at) = args.iter().position(|a| a == "load") else { return args };
    args.iter()
        .enumerate()
        .map(|(i, a)| match a.strip_prefix('-') {
            Some(flag) if i > at && !flag.starts_with('-') && SIPP_FLAGS.contains(&flag) => format!("--{flag}"),
            _ => a.clone(),
        })
        .collect()
}

#[derive(Args)]
pub struct LoadArgs {
    /// The remote host:port (the UAC's target).
    remote: Option<String>,
    /// Built-in scenario: uac or uas (the framework thesis's simple call).
    #[arg(long = "sn", default_value = "uac")]
    scenario: String,
    /// SIPp XML scenario file: not supported yet (an error says so).
    #[arg(long = "sf")]
    scenario_file: Option<String>,
    /// CSV injection file: not supported yet.
    #[arg(long = "inf")]
    inject: Option<String>,
    /// Calls per rate period.
    #[arg(long = "r", default_value_t = 10.0)]
    rate: f64,
    /// The rate period, ms.
    #[arg(long = "rp", default_value_t = 1000)]
    rate_period_ms: u64,
    /// Calls in progress at most.
    #[arg(long = "l")]
    limit: Option<usize>,
    /// Calls in all, then stop.
    #[arg(long = "m")]
    max_calls: Option<u64>,
    /// Hold time of an answered call before BYE, ms.
    #[arg(long = "d", default_value_t = 0)]
    hold_ms: u64,
    /// Local IP address.
    #[arg(long = "i", default_value = "127.0.0.1")]
    local_ip: String,
    /// Local port (UAS default 5060, UAC default any).
    #[arg(long = "p")]
    local_port: Option<u16>,
    /// Transport mode: u1 (one UDP socket). t1 (one TCP connection) is not
    /// supported yet.
    #[arg(long = "t", default_value = "u1")]
    transport: String,
    /// The Request-URI's user part.
    #[arg(long = "s", default_value = "service")]
    service: String,
    /// Stop the whole run after this many seconds (SIPp: "10", "10s").
    #[arg(long = "timeout")]
    timeout: Option<String>,
    /// Accepted for SIPp compatibility; statistics go to --json.
    #[arg(long = "trace_stat")]
    trace_stat: bool,
    /// Reporting interval, seconds (intervals appear in --json).
    #[arg(long = "fd", default_value_t = 1)]
    report_every_s: u64,
    /// Control port: accepted, no remote control yet.
    #[arg(long = "cp")]
    control_port: Option<u16>,
    /// Accepted for SIPp compatibility (sigkit load never reads stdin).
    #[arg(long = "nostdin")]
    nostdin: bool,
    /// Accepted for SIPp compatibility.
    #[arg(long = "bg")]
    background: bool,
    /// Send through this host:port (an outbound proxy); the remote stays in
    /// the Request-URI.
    #[arg(long = "rsa")]
    next_hop: Option<String>,
    /// Record the run (command, configuration, machine, summary, one row
    /// per interval in table `load_intervals`) in this SQLite file.
    #[arg(long, value_name = "FILE")]
    db: Option<std::path::PathBuf>,
    /// Print the run's summary (and intervals) as JSON at the end.
    #[arg(long)]
    json: bool,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("sigkit load: {msg}");
    ExitCode::from(2)
}

fn seconds(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (n, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    n.parse::<f64>().ok().filter(|v| *v >= 0.0).map(|v| Duration::from_secs_f64(v * scale))
}

pub fn load(args: LoadArgs) -> ExitCode {
    if args.scenario_file.is_some() || args.inject.is_some() {
        return usage("SIPp XML scenarios (-sf) and CSV injection (-inf) are not supported yet; use -sn uac|uas");
    }
    if args.transport != "u1" {
        return usage(format!("-t {}: only u1 (one UDP socket) is supported yet", args.transport));
    }
    let role = match args.scenario.as_str() {
        "uac" => Role::Uac,
        "uas" => Role::Uas,
        other => return usage(format!("-sn {other}: the built-in scenarios are uac and uas")),
    };
    let remote = match (&args.remote, role) {
        (Some(r), _) => match r.to_socket_addrs().ok().and_then(|mut a| a.next()) {
            Some(a) => Some(a),
            None => return usage(format!("{r}: not a host:port")),
        },
        (None, Role::Uac) => return usage("the UAC needs the remote host:port"),
        (None, Role::Uas) => None,
    };
    let next_hop = match &args.next_hop {
        Some(r) => match r.to_socket_addrs().ok().and_then(|mut a| a.next()) {
            Some(a) => Some(a),
            None => return usage(format!("-rsa {r}: not a host:port")),
        },
        None => None,
    };
    let Ok(ip) = args.local_ip.parse::<std::net::IpAddr>() else {
        return usage(format!("-i {}: not an IP address", args.local_ip));
    };
    let port = args.local_port.unwrap_or(if role == Role::Uas { 5060 } else { 0 });
    let duration = match args.timeout.as_deref().map(seconds) {
        Some(None) => return usage("-timeout: not a duration"),
        Some(Some(d)) => Some(d),
        None => None,
    };
    if !(args.rate.is_finite() && args.rate > 0.0) {
        return usage("-r: the rate must be positive");
    }
    let config = LoadConfig {
        role,
        local: SocketAddr::new(ip, port),
        remote,
        next_hop,
        service: args.service.clone(),
        rate: args.rate,
        rate_period: Duration::from_millis(args.rate_period_ms.max(1)),
        max_calls: args.max_calls,
        max_concurrent: args.limit,
        hold: Duration::from_millis(args.hold_ms),
        duration,
        report_every: Duration::from_secs(args.report_every_s.max(1)),
        ..LoadConfig::default()
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return usage(e),
    };
    let report = runtime.block_on(async {
        let prepared = sigkit_loadgen::Prepared::bind(config).await?;
        eprintln!("sigkit load: {} on udp:{}", args.scenario, prepared.local_addr());
        prepared.run(None).await
    });
    let report = match report {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sigkit load: {e}");
            return ExitCode::from(1);
        }
    };
    let s = &report.summary;
    if let Some(path) = &args.db {
        if let Err(e) = record(path, &args, &report) {
            eprintln!("sigkit load: {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(j) => println!("{j}"),
            Err(e) => return usage(e),
        }
    } else {
        println!(
            "{}: {} successful, {} failed calls in {:.2} s: {:.1} calls/s; set-up p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms; {} retransmissions",
            s.role,
            s.successful_calls,
            s.failed_calls,
            s.elapsed_s,
            s.calls_per_s,
            s.setup_ms.p50,
            s.setup_ms.p95,
            s.setup_ms.p99,
            s.retransmissions
        );
        for (cause, n) in &s.failures {
            println!("  failed: {cause}: {n}");
        }
    }
    if s.failed_calls > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn record(path: &std::path::Path, args: &LoadArgs, report: &sigkit_loadgen::RunReport) -> Result<(), String> {
    let mut store = sigkit_results::Store::open(path).map_err(|e| e.to_string())?;
    let command: Vec<String> = std::env::args().collect();
    let config = serde_json::json!({
        "scenario": args.scenario, "rate": args.rate, "rate_period_ms": args.rate_period_ms,
        "max_calls": args.max_calls, "limit": args.limit, "hold_ms": args.hold_ms, "remote": args.remote,
        "next_hop": args.next_hop, "transport": args.transport,
    });
    let run = store.begin_run("load", &command.join(" "), &config).map_err(|e| e.to_string())?;
    store.record_rows(run, "load_intervals", &report.intervals).map_err(|e| e.to_string())?;
    store.finish_run(run, &report.summary).map_err(|e| e.to_string())?;
    Ok(())
}
