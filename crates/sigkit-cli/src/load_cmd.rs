//! `sigkit load`: the SIP load generator, with SIPp's flags where the two
//! tools overlap, so a SIPp command line runs unchanged; load patterns,
//! SigComp and the system under test's resources beyond them.

use std::io::{IsTerminal, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use sigkit_loadgen::engine::Transport;
use sigkit_loadgen::screen::ScreenInfo;
use sigkit_loadgen::{scenario, Arrivals, EndReason, EngineConfig, Injection, LoadConfig, LoadError, Pattern, Role};
use sigkit_proxy::locate::host_port;

use crate::exit::{CliError, Failure};

mod live;
mod outcome;
mod sipp;

/// SIPp's single-dash long flags, which clap spells with two dashes.
const SIPP_FLAGS: &[&str] = &[
    "sn",
    "sf",
    "sd",
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
    "timeout_error",
    "recv_timeout",
    "trace_stat",
    "trace_err",
    "trace_msg",
    "trace_screen",
    "trace_rtt",
    "rtt_freq",
    "trace_logs",
    "stf",
    "stat_delimiter",
    "key",
    "set",
    "fd",
    "f",
    "cp",
    "nostdin",
    "bg",
    "rsa",
    "base_cseq",
    "mp",
    "au",
    "ap",
    "rate_increase",
    "rate_max",
    "rate_interval",
    "no_rate_quit",
    "aa",
    "users",
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
    /// The remote host:port (where a UAC's calls go; [remote_ip]:[remote_port]).
    remote: Option<String>,
    /// Built-in scenario: uac, uas (the framework thesis's simple call, SIPp's
    /// messages), register (REGISTER with digest authentication),
    /// registrar (its server side), message (one MESSAGE, a non-INVITE
    /// transaction), message-uas (its server side).
    #[arg(long = "sn", default_value = "uac")]
    scenario: String,
    /// A SIPp XML scenario file (the common subset: send, recv, pause,
    /// nop, label, timewait, rtd; SIPp's keywords).
    #[arg(long = "sf")]
    scenario_file: Option<PathBuf>,
    /// Replay a corpus flow (corpus/<flow>/): with -sn uac the UE's side,
    /// with -sn uas the P-CSCF's; fresh Call-ID, tags and branches per call.
    #[arg(long, value_name = "DIR")]
    flow: Option<PathBuf>,
    /// Print a built-in scenario's XML and exit.
    #[arg(long = "sd")]
    dump: Option<String>,
    /// CSV injection file ([field0], [field1], ...): a first line
    /// SEQUENTIAL, RANDOM or USER, then ;-separated values per call.
    #[arg(long = "inf")]
    inject: Option<PathBuf>,
    /// Calls per rate period.
    #[arg(long = "r", default_value_t = 10.0)]
    rate: f64,
    /// The rate period (ms; or with a unit: 1s).
    #[arg(long = "rp", default_value = "1000")]
    rate_period: String,
    /// Calls in progress at most; a call due beyond it is not placed.
    #[arg(long = "l")]
    limit: Option<usize>,
    /// Calls in all, then stop (a UAS: calls ended).
    #[arg(long = "m")]
    max_calls: Option<u64>,
    /// Length of <pause/> without its own: the hold time (ms; or 2s).
    #[arg(long = "d", default_value = "0")]
    hold: String,
    /// Local IP address.
    #[arg(long = "i", default_value = "127.0.0.1")]
    local_ip: String,
    /// Local port (a UAS's default 5060, a UAC's any).
    #[arg(long = "p")]
    local_port: Option<u16>,
    /// Transport: u1 (one UDP socket) or t1 (one TCP connection).
    #[arg(long = "t", default_value = "u1")]
    transport: String,
    /// [service]: the Request-URI's user part.
    #[arg(long = "s", default_value = "service")]
    service: String,
    /// Stop the whole run after this long (s; or 500ms, 2m).
    #[arg(long = "timeout")]
    timeout: Option<String>,
    /// With -timeout: a run that reaches it fails (exit 1), as SIPp's.
    #[arg(long = "timeout_error")]
    timeout_error: bool,
    /// A recv step without its own timeout fails after this long (ms).
    #[arg(long = "recv_timeout")]
    recv_timeout: Option<String>,
    /// SIPp's statistics file <scenario>_<pid>_.csv: SIPp 3.6's columns, a
    /// row at the start, every -fd and at the end.
    #[arg(long = "trace_stat")]
    trace_stat: bool,
    /// The statistics file's name instead of <scenario>_<pid>_.csv.
    #[arg(long = "stf", value_name = "FILE")]
    stat_file: Option<PathBuf>,
    /// The statistics and response-time files' separator (default ;).
    #[arg(long = "stat_delimiter")]
    stat_delimiter: Option<String>,
    /// Warnings (calls aborted, messages discarded) in
    /// <scenario>_<pid>_errors.log.
    #[arg(long = "trace_err")]
    trace_err: bool,
    /// Every message sent and received in <scenario>_<pid>_messages.log.
    #[arg(long = "trace_msg")]
    trace_msg: bool,
    /// Every response time (rtd) in <scenario>_<pid>_rtt.csv.
    #[arg(long = "trace_rtt")]
    trace_rtt: bool,
    /// Response times written at a time to the -trace_rtt file (default 200).
    #[arg(long = "rtt_freq")]
    rtt_freq: Option<usize>,
    /// The scenario's <log> actions in <scenario>_<pid>_logs.log.
    #[arg(long = "trace_logs")]
    trace_logs: bool,
    /// The final scenario and statistics screens and the summary also in
    /// <scenario>_<pid>_screen.log.
    #[arg(long = "trace_screen")]
    trace_screen: bool,
    /// SIPp's -key NAME VALUE: [NAME] in the scenario is VALUE (repeat it).
    #[arg(long = "key", num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append)]
    keys: Vec<String>,
    /// SIPp's -set NAME VALUE: [$NAME] in the scenario is VALUE (repeat it).
    #[arg(long = "set", num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append)]
    sets: Vec<String>,
    /// Reporting interval: the interval rows and the -trace_stat period (s;
    /// or 500ms; SIPp's default is 60).
    #[arg(long = "fd", default_value = "1")]
    report_every: String,
    /// The live screen's refresh period (s; or 500ms; SIPp's default 1).
    #[arg(long = "f", default_value = "1")]
    screen_every: String,
    /// UDP control port (SIPp's remote control: "cset rate 50", keys
    /// + - * / p q Q). Without it there is no control socket.
    #[arg(long = "cp")]
    control_port: Option<u16>,
    /// Do not read keys from the terminal.
    #[arg(long = "nostdin")]
    nostdin: bool,
    /// Accepted for SIPp compatibility, with a warning (the run stays in the
    /// foreground).
    #[arg(long = "bg")]
    background: bool,
    /// Send through this host:port (an outbound proxy); the remote stays in
    /// the Request-URI.
    #[arg(long = "rsa")]
    next_hop: Option<String>,
    /// The first [cseq] of each call.
    #[arg(long = "base_cseq", default_value_t = 1)]
    base_cseq: u32,
    /// [media_port].
    #[arg(long = "mp", default_value_t = 6000)]
    media_port: u16,
    /// Digest user ([authentication]; default the service).
    #[arg(long = "au")]
    auth_user: Option<String>,
    /// Digest password.
    #[arg(long = "ap", default_value = "password")]
    auth_password: String,
    /// SIPp's stepped load: add this many calls per period every
    /// -rate_interval (default -fd) until -rate_max.
    #[arg(long = "rate_increase")]
    rate_increase: Option<f64>,
    #[arg(long = "rate_max")]
    rate_max: Option<f64>,
    #[arg(long = "rate_interval")]
    rate_interval: Option<String>,
    /// Keep the last rate after -rate_max instead of stopping.
    #[arg(long = "no_rate_quit")]
    no_rate_quit: bool,
    /// SIPp's automatic answers: an INFO, NOTIFY, OPTIONS or UPDATE that no
    /// step expects (in a call, or for none) is answered with 200 OK, and
    /// the call goes on.
    #[arg(long = "aa")]
    auto_answer: bool,
    /// SIPp's user-based mode: not supported (an error says so).
    #[arg(long = "users")]
    users: Option<u64>,
    /// Stepped load as the framework thesis runs it: START:END:STEP calls/s,
    /// each for --dwell, with --pause without new calls between.
    #[arg(long, value_name = "START:END:STEP")]
    steps: Option<String>,
    /// How long each step lasts (with --steps).
    #[arg(long, default_value = "10s")]
    dwell: String,
    /// How long no calls start after each step (with --steps).
    #[arg(long, default_value = "0s")]
    pause: String,
    /// A linear ramp FROM:TO calls/s over --ramp-time.
    #[arg(long, value_name = "FROM:TO")]
    ramp: Option<String>,
    #[arg(long = "ramp-time", default_value = "10s")]
    ramp_time: String,
    /// Bursts: SIZE calls at once every EVERY (e.g. 50:1s).
    #[arg(long, value_name = "SIZE:EVERY")]
    burst: Option<String>,
    /// A peak load: PEAK calls/s from AT for LENGTH, -r before and after
    /// (e.g. 900:30s:60s; the overload thesis's lab, docs/overload.md).
    #[arg(long, value_name = "PEAK:AT:LENGTH")]
    surge: Option<String>,
    /// Arrivals: uniform (evenly spaced, as SIPp) or poisson.
    #[arg(long, default_value = "uniform")]
    arrivals: String,
    /// A UAS behind a server of limited capacity: it serves this many new
    /// transactions/s, one at a time, from a finite queue, and drops what
    /// overflows (the overload lab's bottleneck, docs/overload.md).
    #[arg(long, value_name = "TPS")]
    capacity: Option<f64>,
    /// With --capacity: datagrams that wait at most.
    #[arg(long, default_value_t = 1000)]
    queue: usize,
    /// With --capacity: what a datagram of a transaction already known (a
    /// retransmission) costs, as a share of a new transaction.
    #[arg(long = "repeat-cost", default_value_t = 0.2)]
    repeat_cost: f64,
    /// With --capacity: service times const (each 1/capacity) or exp
    /// (exponential of that mean).
    #[arg(long = "service-time", default_value = "const")]
    service_time: String,
    /// With --capacity: take part in RFC 7339 overload control, sending
    /// the `oc` that keeps the server busy at this share (e.g. 0.9).
    #[arg(long = "oc-target")]
    oc_target: Option<f64>,
    /// Stop the run after this long (as -timeout).
    #[arg(long)]
    duration: Option<String>,
    /// A call not over after this long fails (call_timeout).
    #[arg(long = "call-timeout")]
    call_timeout: Option<String>,
    /// Sample the CPU and memory of these processes (the system under
    /// test) every interval, from /proc; repeat or comma-separate.
    #[arg(long = "sut-pid", value_delimiter = ',')]
    sut_pid: Vec<u32>,
    /// Compress toward the peer with SigComp (RFC 3320; comp=sigcomp in
    /// Via and Contact) and decompress what comes back; over UDP, or TCP
    /// with RFC 3320 §4.2.2's record marking.
    #[arg(long)]
    sigcomp: bool,
    /// RFC 3261's T1 (ms): the first retransmission interval; 64·T1 is
    /// Timers B and F.
    #[arg(long, default_value_t = 500)]
    t1: u64,
    /// Record the run (command, configuration, machine, summary, tables
    /// load_intervals and load_steps) in this SQLite file.
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Print the run's report (summary, intervals, steps) as JSON at the end.
    #[arg(long)]
    json: bool,
    /// No live progress on stderr (the screen, the bar, or the interval lines).
    #[arg(long)]
    quiet: bool,
    /// In a terminal, the one-line progress bar instead of SIPp's scenario screen.
    #[arg(long)]
    bar: bool,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    CliError::usage(msg).report("sigkit load")
}

/// The kind of failure of a run that could not go: a socket that cannot be
/// bound or connected is the network's, a scenario that cannot be used is
/// its file's, the rest are the arguments'.
fn failure_of(e: &LoadError) -> Failure {
    match e {
        LoadError::Bind { .. } | LoadError::Connect { .. } | LoadError::Io(_) => Failure::Network,
        LoadError::Scenario(_) => Failure::Input,
        _ => Failure::Usage,
    }
}

/// A duration in SIPp's style: a number in `unit` seconds, or with a
/// unit suffix (ms, s, m, h).
fn duration(s: &str, unit: f64) -> Option<Duration> {
    let s = s.trim();
    let (n, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, unit)
    };
    n.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0 && v * scale < 1e9)
        .map(|v| Duration::from_secs_f64(v * scale))
}

/// The address of a HOST:PORT argument (`flag` before it in errors), its
/// name resolved: a name the DNS does not know is a network failure, a
/// text that is not HOST:PORT a usage error.
fn addr(s: &str, flag: &str) -> Result<SocketAddr, CliError> {
    host_port(s).map_err(|e| {
        let message = format!("{flag}{e}");
        if e.is_resolution() {
            CliError::network(message)
        } else {
            CliError::usage(message)
        }
    })
}

fn pair(s: &str) -> Option<(&str, &str)> {
    s.split_once(':')
}

/// A scenario file's bytes, read no further than one byte past
/// [`scenario::MAX_SCENARIO_BYTES`]: a larger file is refused unread.
fn read_scenario_file(path: &std::path::Path) -> Result<Vec<u8>, String> {
    let limit = scenario::MAX_SCENARIO_BYTES;
    let bytes = read_at_most(path, limit)?;
    if bytes.len() > limit {
        return Err(scenario::ScenarioError::TooLarge { bytes: bytes.len() }.to_string());
    }
    Ok(bytes)
}

/// At most `limit` + 1 bytes of `path`: one past the limit says it is
/// over, and a device or a growing log is never read whole.
fn read_at_most(path: &std::path::Path, limit: usize) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// The configuration the arguments describe, or what is wrong with them:
/// a bad argument, an input file that cannot be used, a name that does not
/// resolve.
fn config(args: &LoadArgs) -> Result<LoadConfig, CliError> {
    if args.users.is_some() {
        return Err("-users (SIPp's user-based mode) is not supported yet; use -r, -l and -m".into());
    }
    let scenario = scenario_of(args)?;
    let injection = match &args.inject {
        Some(path) => {
            let bad = |e: String| CliError::input(format!("-inf {}: {e}", path.display()));
            let bytes = read_at_most(path, sigkit_loadgen::inject::MAX_INJECTION_BYTES).map_err(bad)?;
            Some(Arc::new(Injection::parse(&scenario::decode_text(&bytes)).map_err(|e| bad(e.to_string()))?))
        }
        None => None,
    };
    let client = scenario.is_client();
    let transport = match args.transport.as_str() {
        "u1" => Transport::Udp,
        "t1" => Transport::Tcp,
        other => {
            return Err(format!("-t {other}: supported are u1 (one UDP socket) and t1 (one TCP connection)").into())
        }
    };
    let remote = match &args.remote {
        Some(r) => Some(addr(r, "")?),
        None if client => return Err("a scenario that places calls needs the remote host:port".into()),
        None => None,
    };
    let next_hop = match &args.next_hop {
        Some(r) => Some(addr(r, "-rsa ")?),
        None => None,
    };
    let ip =
        args.local_ip.parse::<std::net::IpAddr>().map_err(|_| format!("-i {}: not an IP address", args.local_ip))?;
    let port = args.local_port.unwrap_or(if client { 0 } else { 5060 });
    let dur = |name: &str, v: &str, unit: f64| duration(v, unit).ok_or_else(|| format!("{name} {v}: not a duration"));
    let rate_period = dur("-rp", &args.rate_period, 0.001)?.max(Duration::from_millis(1));
    if !(args.rate.is_finite() && args.rate >= 0.0) {
        return Err("-r: the rate must be a number, 0 or more".into());
    }
    let report_every = dur("-fd", &args.report_every, 1.0)?.max(Duration::from_millis(10));
    let progress_every = dur("-f", &args.screen_every, 1.0)?.max(Duration::from_millis(10));
    let pattern = pattern_of(args, client, rate_period, report_every)?;
    // A server stops after -m calls only if it is given some.
    let max_calls = args.max_calls.filter(|&m| client || m != 0);
    let arrivals = match args.arrivals.as_str() {
        "uniform" => Arrivals::Uniform,
        "poisson" => Arrivals::Poisson,
        other => return Err(format!("--arrivals {other}: uniform or poisson").into()),
    };
    let duration_limit = match (&args.timeout, &args.duration) {
        (Some(t), _) => Some(dur("-timeout", t, 1.0)?),
        (None, Some(d)) => Some(dur("--duration", d, 1.0)?),
        _ => None,
    };
    let t1 = Duration::from_millis(args.t1.max(1));
    let service_model = service_model_of(args, client, t1)?;
    Ok(LoadConfig {
        role: if client { Role::Uac } else { Role::Uas },
        scenario: Some(Arc::new(scenario)),
        injection,
        engine: EngineConfig {
            local: SocketAddr::new(ip, port),
            remote,
            next_hop,
            service: args.service.clone(),
            transport,
            hold: dur("-d", &args.hold, 0.001)?,
            timers: sigkit_sip_timers(t1),
            base_cseq: args.base_cseq,
            media_port: args.media_port,
            recv_timeout: args.recv_timeout.as_deref().map(|v| dur("-recv_timeout", v, 0.001)).transpose()?,
            call_timeout: args.call_timeout.as_deref().map(|v| dur("--call-timeout", v, 1.0)).transpose()?,
            auth_user: args.auth_user.clone(),
            auth_password: args.auth_password.clone(),
            auto_answer: args.auto_answer,
            ..LoadConfig::default().engine
        },
        rate: args.rate,
        rate_period,
        pattern,
        arrivals,
        max_calls,
        max_concurrent: args.limit,
        duration: duration_limit,
        report_every,
        progress_every,
        control_port: args.control_port,
        sut_pids: args.sut_pid.clone(),
        sigcomp: args.sigcomp,
        service_model,
        trace: sipp::trace_config(args),
    })
}

/// SIPp's `-key NAME VALUE` and `-set NAME VALUE`, given as pairs.
fn keys_of(args: &LoadArgs) -> scenario::Keys {
    let mut keys = scenario::Keys::default();
    for pair in args.keys.chunks_exact(2) {
        keys.key(&pair[0], &pair[1]);
    }
    for pair in args.sets.chunks_exact(2) {
        keys.set(&pair[0], &pair[1]);
    }
    keys
}

/// The scenario the arguments name: a file (`-sf`), a flow of the corpus
/// (`--flow`), or a built-in one (`-sn`).
fn scenario_of(args: &LoadArgs) -> Result<scenario::Scenario, CliError> {
    Ok(match (&args.scenario_file, &args.flow) {
        (Some(_), Some(_)) => return Err("-sf and --flow: one scenario at a time".into()),
        (None, Some(dir)) => {
            let (ue, pcscf) = sigkit_loadgen::corpus::flow_scenarios(dir)
                .map_err(|e| CliError::input(format!("--flow {}: {e}", dir.display())))?;
            match args.scenario.as_str() {
                "uac" => ue,
                "uas" => pcscf,
                other => return Err(format!("--flow with -sn {other}: -sn uac (the UE) or uas (the P-CSCF)").into()),
            }
        }
        (Some(path), None) => {
            let bad = |e: String| CliError::input(format!("-sf {}: {e}", path.display()));
            let bytes = read_scenario_file(path).map_err(bad)?;
            scenario::parse_with_keys(&scenario::decode_text(&bytes), &keys_of(args)).map_err(|e| bad(e.to_string()))?
        }
        (None, None) => scenario::built_in_xml(&args.scenario)
            .and_then(|xml| scenario::parse_with_keys(xml, &keys_of(args)))
            .map_err(|e| CliError::usage(format!("-sn: {e}")))?,
    })
}

/// The arrival pattern the arguments describe (`--steps`, `--ramp`,
/// `--burst`, `--surge`, SIPp's `-rate_increase`, or a constant rate).
fn pattern_of(args: &LoadArgs, client: bool, rate_period: Duration, report_every: Duration) -> Result<Pattern, String> {
    let dur = |name: &str, v: &str, unit: f64| duration(v, unit).ok_or_else(|| format!("{name} {v}: not a duration"));
    let per_s = |r: f64| r / rate_period.as_secs_f64();
    Ok(if let Some(s) = &args.steps {
        let v: Vec<f64> = s.split(':').filter_map(|x| x.trim().parse().ok()).collect();
        let [start, end, step] = v[..] else { return Err(format!("--steps {s}: START:END:STEP calls/s")) };
        if start < 0.0 || end < 0.0 || step == 0.0 || (end - start) / step < 0.0 {
            return Err(format!("--steps {s}: the steps must go from START to END"));
        }
        Pattern::Steps {
            start,
            end,
            step,
            dwell: dur("--dwell", &args.dwell, 1.0)?,
            pause: dur("--pause", &args.pause, 1.0)?,
        }
    } else if let Some(s) = &args.ramp {
        let (a, b) = pair(s).ok_or_else(|| format!("--ramp {s}: FROM:TO calls/s"))?;
        let (from, to) = (a.parse::<f64>(), b.parse::<f64>());
        let (Ok(from), Ok(to)) = (from, to) else { return Err(format!("--ramp {s}: FROM:TO calls/s")) };
        if from < 0.0 || to < 0.0 {
            return Err(format!("--ramp {s}: rates are 0 or more"));
        }
        Pattern::Ramp { from, to, over: dur("--ramp-time", &args.ramp_time, 1.0)? }
    } else if let Some(s) = &args.burst {
        let (a, b) = pair(s).ok_or_else(|| format!("--burst {s}: SIZE:EVERY"))?;
        let size = a.parse::<u32>().map_err(|_| format!("--burst {s}: SIZE:EVERY"))?;
        let every = dur("--burst", b, 1.0)?;
        if every.is_zero() {
            return Err(format!("--burst {s}: EVERY must be more than 0"));
        }
        Pattern::Bursts { size, every }
    } else if let Some(s) = &args.surge {
        let parts: Vec<&str> = s.split(':').collect();
        let [peak, at, length] = parts[..] else { return Err(format!("--surge {s}: PEAK:AT:LENGTH")) };
        let peak = peak.parse::<f64>().ok().filter(|p| p.is_finite() && *p >= 0.0);
        let Some(peak) = peak else { return Err(format!("--surge {s}: PEAK is calls/s, 0 or more")) };
        if args.rate <= 0.0 {
            return Err("--surge: -r, the rate before and after the peak, must be positive".into());
        }
        Pattern::Surge {
            base: per_s(args.rate),
            peak,
            at: dur("--surge", at, 1.0)?,
            length: dur("--surge", length, 1.0)?,
        }
    } else if let Some(inc) = args.rate_increase {
        // SIPp: the rate grows by -rate_increase every -rate_interval (-fd
        // by default) up to -rate_max, then SIPp quits (or keeps going).
        let every = match &args.rate_interval {
            Some(v) => dur("-rate_interval", v, 1.0)?,
            None => report_every,
        };
        let max = args.rate_max.unwrap_or(f64::MAX / 4.0);
        if inc <= 0.0 || max < args.rate {
            return Err("-rate_increase: a positive increase and -rate_max at or above -r".into());
        }
        if args.no_rate_quit {
            return Err("-no_rate_quit is not supported; give -timeout and --steps START:END:STEP instead".into());
        }
        Pattern::Steps {
            start: per_s(args.rate),
            end: per_s(max),
            step: per_s(inc),
            dwell: every,
            pause: Duration::ZERO,
        }
    } else {
        if client && args.rate <= 0.0 {
            return Err("-r: the rate must be positive".into());
        }
        Pattern::Constant
    })
}

/// The service model of a server given `--capacity`.
fn service_model_of(
    args: &LoadArgs,
    client: bool,
    t1: Duration,
) -> Result<Option<sigkit_loadgen::ServiceModel>, String> {
    Ok(match args.capacity {
        None => None,
        Some(_) if client => return Err("--capacity limits a server: a scenario that answers calls".into()),
        Some(capacity_tps) => {
            let exponential = match args.service_time.as_str() {
                "const" => false,
                "exp" => true,
                other => return Err(format!("--service-time {other}: const or exp")),
            };
            let model = sigkit_loadgen::ServiceModel {
                capacity_tps,
                queue: args.queue,
                repeat_cost: args.repeat_cost,
                exponential,
                memory: t1 * 64,
                oc_target: args.oc_target,
            };
            model.check().map_err(|e| format!("--capacity: {e}"))?;
            Some(model)
        }
    })
}

/// Reads the keyboard (in character mode) on a thread of its own and
/// turns keys into commands for the run: SIPp's + - * / p q Q, and Ctrl-C.
fn read_keys(control: sigkit_loadgen::Control) {
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut b = [0u8; 1];
        while let Ok(1) = stdin.read(&mut b) {
            let cmd = match b[0] {
                3 => Some(sigkit_loadgen::ControlCommand::QuitNow),
                c => sigkit_loadgen::control::key(c as char),
            };
            if let Some(cmd) = cmd {
                if !control.send(cmd) {
                    return;
                }
            }
        }
    });
}

/// RFC 3261's timers with T1 as given (T2 at least T1).
fn sigkit_sip_timers(t1: Duration) -> sigkit_loadgen::Timers {
    let d = sigkit_loadgen::Timers::default();
    sigkit_loadgen::Timers { t1, t2: d.t2.max(t1), ..d }
}

/// Puts the terminal in character mode (no echo, no line editing; Ctrl-C
/// arrives as a byte) with `stty`, and back when dropped.
struct RawTerminal(Option<String>);

impl RawTerminal {
    fn enter() -> RawTerminal {
        let stty = |args: &[&str]| {
            std::process::Command::new("stty").args(args).stdin(std::process::Stdio::inherit()).output().ok()
        };
        let saved =
            stty(&["-g"]).filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if saved.is_some() {
            let _ = stty(&["-icanon", "-echo", "-isig", "min", "1"]);
        }
        RawTerminal(saved)
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        if let Some(s) = &self.0 {
            let _ = std::process::Command::new("stty").arg(s).stdin(std::process::Stdio::inherit()).status();
        }
    }
}

pub fn load(args: LoadArgs) -> ExitCode {
    if let Some(name) = &args.dump {
        return match scenario::built_in_xml(name) {
            Ok(xml) => {
                print!("{xml}");
                ExitCode::SUCCESS
            }
            Err(e) => usage(e),
        };
    }
    let config = match config(&args) {
        Ok(c) => c,
        Err(e) => return e.report("sigkit load"),
    };
    for line in sipp::ignored_flags(&args) {
        eprintln!("{line}");
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return CliError::run(format!("the async runtime: {e}")).report("sigkit load"),
    };
    let keyboard = !args.nostdin && std::io::stdin().is_terminal();
    let mode = live::Mode::choose(std::io::stderr().is_terminal(), keyboard, args.json, args.quiet, args.bar);
    let screen = ScreenParts::of(&config);
    let every = config.progress_every;
    let report = runtime.block_on(async {
        let prepared = sigkit_loadgen::Prepared::bind(config).await?;
        let transport = if args.transport == "t1" { "tcp" } else { "udp" };
        eprintln!("sigkit load: {} on {transport}:{}", prepared.scenario().name, prepared.local_addr());
        if let Some(c) = prepared.control_addr() {
            eprintln!("sigkit load: control socket udp:{c}");
        }
        let mut raw = None;
        if keyboard {
            raw = Some(RawTerminal::enter());
            eprintln!("sigkit load: keys: + - * / change the rate, p pauses, q quits (twice: at once), Q quits now");
            read_keys(prepared.control());
        }
        let stop = match sipp::stop_on_signals(mode == live::Mode::Screen) {
            Ok(rx) => Some(rx),
            Err(e) => {
                eprintln!("sigkit load: SIGINT and SIGTERM will end the process without a summary: {e}");
                None
            }
        };
        let info = screen.info(&prepared);
        let last = prepared.progress();
        let started = std::time::SystemTime::now();
        let shown = live::start(mode, prepared.progress(), info.clone(), every, started);
        let report = prepared.run(stop).await;
        if let Some(l) = shown {
            l.finish().await;
        }
        drop(raw);
        let last = last.borrow().clone();
        report.map(|r| (r, info, last, started))
    });
    let (report, info, last, started) = match report {
        Ok(r) => r,
        Err(e) => return CliError { kind: failure_of(&e), message: e.to_string() }.report("sigkit load"),
    };
    let s = &report.summary;
    if let Some(path) = &args.db {
        if let Err(e) = outcome::record(path, &args, &report) {
            return CliError::run(format!("{}: {e}", path.display())).report("sigkit load");
        }
    }
    if let Some(e) = &report.trace_error {
        eprintln!("sigkit load: trace file {e}");
    }
    let summary = outcome::summary_text(&report);
    if args.trace_screen {
        let path = sipp::screen_path(&args);
        let text = format!("{}\n{summary}", live::screen_text(&info, &last, started));
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("sigkit load: {}: {e}", path.display());
        }
    }
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(j) => println!("{j}"),
            Err(e) => return CliError::run(e).report("sigkit load"),
        }
    } else {
        print!("{summary}");
    }
    let timed_out = args.timeout_error && report.ended_by == EndReason::Duration;
    if timed_out {
        eprintln!("sigkit load: the run reached -timeout (-timeout_error: a failure)");
    }
    if s.failed_calls > 0 || timed_out {
        Failure::Run.exit()
    } else {
        ExitCode::SUCCESS
    }
}

/// What the screen shows of a run's configuration, kept before the
/// configuration goes to the run.
struct ScreenParts {
    remote: Option<SocketAddr>,
    transport: &'static str,
    rate_period: Duration,
    hold: Duration,
    limit: Option<usize>,
    max_calls: Option<u64>,
}

impl ScreenParts {
    fn of(config: &LoadConfig) -> ScreenParts {
        ScreenParts {
            remote: config.engine.remote,
            transport: match config.engine.transport {
                Transport::Udp => "UDP",
                Transport::Tcp => "TCP",
            },
            rate_period: config.rate_period,
            hold: config.engine.hold,
            limit: config.max_concurrent,
            max_calls: config.max_calls,
        }
    }

    /// The screen's description of the run `prepared` is about to make.
    fn info(&self, prepared: &sigkit_loadgen::Prepared) -> ScreenInfo {
        let scenario = prepared.scenario();
        ScreenInfo {
            client: scenario.is_client(),
            local_port: prepared.local_addr().port(),
            remote: self.remote,
            transport: self.transport,
            rate_period: self.rate_period,
            hold: self.hold,
            limit: self.limit,
            max_calls: self.max_calls,
            rows: sigkit_loadgen::screen::rows_of(scenario, self.hold),
            rtd_names: scenario.rtds.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sipp_flags_are_rewritten_only_after_load() {
        let v = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            sipp_style(v("sigkit -m load -sn uac -r 5 -rp 1s --json -x 1.2.3.4:5")),
            v("sigkit -m load --sn uac --r 5 --rp 1s --json -x 1.2.3.4:5")
        );
    }

    fn parse(line: &str) -> Result<LoadConfig, String> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            load: LoadArgs,
        }
        let cli = <Cli as clap::Parser>::try_parse_from(std::iter::once("load").chain(line.split(' ')))
            .map_err(|e| e.to_string())?;
        config(&cli.load).map_err(|e| e.to_string())
    }

    #[test]
    fn a_surge_and_a_server_of_limited_capacity_from_the_flags() {
        let c = parse("127.0.0.1:5070 --sn message --r 350 --surge 600:30s:1m").unwrap();
        assert_eq!(
            c.pattern,
            Pattern::Surge { base: 350.0, peak: 600.0, at: Duration::from_secs(30), length: Duration::from_secs(60) }
        );
        assert!(c.service_model.is_none());
        assert!(parse("127.0.0.1:5070 --sn message --r 350 --surge 600:30s").is_err());
        let c =
            parse("--sn message-uas --capacity 500 --queue 200 --repeat-cost 0.3 --oc-target 0.9 --t1 250").unwrap();
        let m = c.service_model.unwrap();
        assert_eq!((m.capacity_tps, m.queue, m.repeat_cost, m.oc_target), (500.0, 200, 0.3, Some(0.9)));
        assert_eq!(m.memory, Duration::from_secs(16), "Timer J, 64·T1");
        assert!(!m.exponential);
        assert!(
            parse("--sn message-uas --capacity 500 --service-time exp").unwrap().service_model.unwrap().exponential
        );
        for bad in [
            "127.0.0.1:5070 --sn message --capacity 500",
            "--sn message-uas --capacity 0",
            "--sn message-uas --capacity 500 --repeat-cost 2",
            "--sn message-uas --capacity 500 --service-time gamma",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_in_sipps_units() {
        assert_eq!(duration("10", 1.0), Some(Duration::from_secs(10)));
        assert_eq!(duration("500ms", 1.0), Some(Duration::from_millis(500)));
        assert_eq!(duration("2000", 0.001), Some(Duration::from_secs(2)));
        assert_eq!(duration("1m", 0.001), Some(Duration::from_secs(60)));
        assert_eq!(duration("-1", 1.0), None);
        assert_eq!(duration("x", 1.0), None);
    }
}
