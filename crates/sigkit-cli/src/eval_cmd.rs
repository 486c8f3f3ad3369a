//! `sigkit eval`: the main job on embedded defaults. It measures what
//! sigkit measures, in one run and with no server of the user's, and
//! writes the results (SQLite, JSON) and the report (sigkit-report, drawn
//! from the run's rows in the results file) into one directory.
//!
//! The load run goes through `sigkit proxy`. Where Kamailio and SIPp are
//! installed it continues through Kamailio to SIPp's UAS, the framework
//! thesis's chain of real servers; otherwise it ends at the built-in UAS.
//! The report says which.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use serde::Serialize;
use sigcomp::Transport;
use sigcomp_compress::Mechanism;
use sigkit_eval::capacity::{ServiceLevel, Strategy};
use sigkit_eval::peers;
use sigkit_eval::ran::{RanCall, RanRow, THESIS_RATES_KBPS, THESIS_RTT};
use sigkit_eval::study::{compression, flow_dirs, CompressionStudy};
use sigkit_loadgen::{LoadConfig, Pattern, Prepared, Role, Summary as LoadSummary};
use sigkit_report::{runs, sources, write_report};
use sigkit_results::Store;

use sigkit_proxy::config::TransportAddr;
use sigkit_proxy::{ProxyConfig, SipTransport};

use crate::capacity_cmd::{describe, search, CapacityReport, SearchSettings};

use crate::endpoint_args::EndpointArgs;

/// Which servers the load run goes to.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PeersArg {
    /// Through Kamailio to SIPp's UAS when both are on PATH, else to the
    /// built-in UAS.
    Auto,
    /// The built-in UAS only, as if Kamailio and SIPp were not installed.
    BuiltIn,
    /// Kamailio and SIPp; an error if either is missing.
    Kamailio,
}

#[derive(Args)]
pub struct EvalArgs {
    /// The corpus of call flows (one directory per flow).
    #[arg(long, default_value = "corpus")]
    corpus: PathBuf,
    /// Where results.sqlite, summary.json and the report go.
    #[arg(long, short = 'o', default_value = "report")]
    out: PathBuf,
    /// A short run (for CI): LZSS only, shorter load steps, a coarser
    /// capacity search.
    #[arg(long)]
    quick: bool,
    /// The servers of the load run through `sigkit proxy`.
    #[arg(long, value_enum, default_value = "auto")]
    peers: PeersArg,
    #[command(flatten)]
    endpoint: EndpointArgs,
}

/// What `summary.json` holds: one line per part of the run.
#[derive(Serialize)]
struct Summary {
    seconds: f64,
    /// The servers the load run went to, in words (also the report's
    /// note on the run).
    notes: String,
    /// "sipp-kamailio" or "built-in".
    load_path: &'static str,
    compression: Vec<FlowSummary>,
    ran: Vec<RanRow>,
    proxy_load: Option<LoadSummary>,
    capacity: Option<CapacityReport>,
    /// The SIP overload simulations, each also a run of its own (kind
    /// "sim") in the results file.
    overload: Vec<sigkit_sim::Study>,
}

/// The SIP overload thesis's headline scenarios (§4.3.2, §4.3.3), run by
/// `sigkit eval`: the collapse after a short surge, and the two handlers
/// that prevent it.
const OVERLOAD_SCENARIOS: [(&str, &str); 3] = [
    ("no-handling", include_str!("../../sigkit-sim/scenarios/no-handling.toml")),
    ("h1-t1-1s", include_str!("../../sigkit-sim/scenarios/h1-t1-1s.toml")),
    ("h2-cap503", include_str!("../../sigkit-sim/scenarios/h2-cap503.toml")),
];

/// Runs each of [`OVERLOAD_SCENARIOS`] over `seeds` seeds and records it
/// as a "sim" run of `store`; the runs' ids and studies.
fn overload_studies(
    store: &mut Store,
    command: &str,
    seeds: u64,
) -> Result<Vec<(sigkit_results::RunId, sigkit_sim::Study)>, String> {
    let mut out = Vec::new();
    for (name, text) in OVERLOAD_SCENARIOS {
        let scenario = sigkit_sim::Scenario::from_toml_str(text).map_err(|e| format!("scenario {name}: {e}"))?;
        let seed_list: Vec<u64> = (1..=seeds).collect();
        let runs = sigkit_sim::run_seeds(&scenario, &seed_list);
        let summaries: Vec<sigkit_sim::SeedSummary> = runs.iter().map(|r| r.summary.clone()).collect();
        let study = sigkit_sim::Study::of(&scenario, &summaries);
        eprintln!("  {name}: {} of {} seeds collapsed", study.collapsed, study.seeds);
        let run = crate::sim_cmd::store_results(store, command, &scenario, &runs, &study).map_err(|e| e.to_string())?;
        out.push((run, study));
    }
    Ok(out)
}

#[derive(Serialize)]
struct FlowSummary {
    flow: String,
    algorithm: &'static str,
    /// Ratio (SigComp bytes / SIP bytes) per mechanism.
    basic: f64,
    r#static: f64,
    dynamic: f64,
    shared: f64,
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("sigkit eval: {msg}");
    ExitCode::from(1)
}

fn summarize(study: &CompressionStudy) -> Vec<FlowSummary> {
    let mut out: Vec<FlowSummary> = Vec::new();
    for row in &study.flows {
        let i = match out.iter().position(|s| s.flow == row.flow && s.algorithm == row.algorithm) {
            Some(i) => i,
            None => {
                out.push(FlowSummary {
                    flow: row.flow.clone(),
                    algorithm: row.algorithm,
                    basic: f64::NAN,
                    r#static: f64::NAN,
                    dynamic: f64::NAN,
                    shared: f64::NAN,
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        match row.mechanism {
            "basic" => s.basic = row.ratio,
            "static" => s.r#static = row.ratio,
            "dynamic" => s.dynamic = row.ratio,
            _ => s.shared = row.ratio,
        }
    }
    out
}

/// The servers behind `sigkit proxy` in the load run.
enum LoadPath {
    BuiltIn { why: String },
    Kamailio { kamailio: String, sipp: String },
}

impl LoadPath {
    fn choose(peers: PeersArg) -> Result<LoadPath, String> {
        let missing: Vec<&str> = ["kamailio", "sipp"].into_iter().filter(|t| peers::find(t).is_none()).collect();
        match (peers, missing.is_empty()) {
            (PeersArg::BuiltIn, _) => Ok(LoadPath::BuiltIn { why: "--peers built-in".into() }),
            (_, true) => Ok(LoadPath::Kamailio { kamailio: peers::version("kamailio"), sipp: peers::version("sipp") }),
            (PeersArg::Kamailio, false) => Err(format!("--peers kamailio: not on PATH: {}", missing.join(", "))),
            (PeersArg::Auto, false) => Ok(LoadPath::BuiltIn { why: format!("not installed: {}", missing.join(", ")) }),
        }
    }

    /// The series name of its load steps.
    fn series(&self) -> &'static str {
        match self {
            LoadPath::BuiltIn { .. } => "UAC → sigkit proxy → built-in UAS",
            LoadPath::Kamailio { .. } => "UAC → sigkit proxy → Kamailio → SIPp UAS",
        }
    }

    fn key(&self) -> &'static str {
        match self {
            LoadPath::BuiltIn { .. } => "built-in",
            LoadPath::Kamailio { .. } => "sipp-kamailio",
        }
    }

    fn notes(&self) -> String {
        match self {
            LoadPath::BuiltIn { why } => format!(
                "Load run: {}; Kamailio and SIPp were not used ({why}). Capacity search: the built-in UAC against \
                 the built-in UAS.",
                self.series()
            ),
            LoadPath::Kamailio { kamailio, sipp } => format!(
                "Load run: {}, on 127.0.0.1 ({kamailio}; {sipp}; Kamailio as a record-routing stateful proxy with \
                 the configuration embedded in sigkit). Capacity search: the built-in UAC against the built-in UAS.",
                self.series()
            ),
        }
    }
}

/// The load run's steps, calls/s, and each step's length.
fn load_steps(quick: bool) -> (f64, f64, f64, Duration) {
    if quick {
        (100.0, 300.0, 100.0, Duration::from_secs(1))
    } else {
        (200.0, 1000.0, 200.0, Duration::from_secs(3))
    }
}

pub fn eval(args: EvalArgs) -> ExitCode {
    let started = Instant::now();
    let (config, params) = match args.endpoint.resolve() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let path = match LoadPath::choose(args.peers) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        return fail(format!("{}: {e}", args.out.display()));
    }
    let db = args.out.join("results.sqlite");
    let mut store = match Store::open(&db) {
        Ok(s) => s,
        Err(e) => return fail(format!("{}: {e}", db.display())),
    };
    let command: Vec<String> = std::env::args().collect();
    let (start, end, step, dwell) = load_steps(args.quick);
    let run_config = serde_json::json!({
        "title": "sigkit eval",
        "series": path.series(),
        "capacity_series": "capacity search, built-in UAS",
        "load_path": path.key(),
        "load_steps": {"start": start, "end": end, "step": step, "dwell_s": dwell.as_secs_f64()},
        "corpus": args.corpus,
        "quick": args.quick,
        "algorithm": config.algorithm.name(),
        "mechanism": config.mechanism.name(),
        "dms": params.dms, "sms": params.sms, "cpb": params.cpb,
    });
    let run = match store.begin_run("eval", &command.join(" "), &run_config) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };

    // 1. Every corpus flow under each mechanism (and each algorithm,
    // except in a quick run).
    eprintln!("sigkit eval: compression of every corpus flow under each mechanism");
    let flows = match flow_dirs(&args.corpus) {
        Ok(f) => f,
        Err(e) => return fail(e),
    };
    let algorithms = if args.quick { vec![config.algorithm] } else { sigkit_eval::study::all_algorithms().to_vec() };
    let study = match compression(&flows, &algorithms, &Mechanism::ALL, config, params) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    if let Err(e) = store
        .record_rows(run, "compression_flows", &study.flows)
        .and_then(|_| store.record_rows(run, "compression_messages", &study.messages))
    {
        return fail(e);
    }
    // The published compression figures, each at its own settings (for the
    // report's reproduction section; well under a second).
    if let Err(e) = sigkit_eval::published::measure(&args.corpus)
        .map_err(|e| e.to_string())
        .and_then(|rows| store.record_rows(run, "published_compression", &rows).map_err(|e| e.to_string()))
    {
        return fail(e);
    }
    let compression = summarize(&study);
    println!("{:<36} {:<8} {:>7} {:>7} {:>7} {:>7}", "flow", "algo", "basic", "static", "dynamic", "shared");
    for s in &compression {
        println!(
            "{:<36} {:<8} {:>7.3} {:>7.3} {:>7.3} {:>7.3}",
            s.flow, s.algorithm, s.basic, s.r#static, s.dynamic, s.shared
        );
    }

    // 2. The RAN-delay study (the SigComp performance thesis §2.1, §9.10):
    // the 3GPP video call's session establishment (its first 12 messages,
    // without the closing BYE), compressed over a reliable transport as
    // the thesis did.
    eprintln!("sigkit eval: RAN-delay study");
    let call_dir = args.corpus.join("3gpp-video-call");
    let call = match sigkit_eval::corpus::load_flow(&call_dir) {
        Ok(mut messages) => {
            messages.truncate(12);
            let reliable = sigcomp_compress::Config { transport: Transport::Stream, ..config };
            match RanCall::compress(&messages, params, reliable) {
                Ok(c) => c,
                Err(e) => return fail(format!("{}: {e}", call_dir.display())),
            }
        }
        Err(e) => return fail(e),
    };
    let ran = call.study(&THESIS_RATES_KBPS, THESIS_RTT);
    println!(
        "\n{:>7} {:>10} {:>12} {:>12} {:>8} {:>14}",
        "kbps", "SIP s", "SigComp s", "saved s", "saved %", "thesis saved"
    );
    for r in &ran {
        println!(
            "{:>7} {:>10.2} {:>12.2} {:>12.2} {:>8.1} {:>14}",
            r.kbps,
            r.sip_delay_s,
            r.sigcomp_delay_s,
            r.improvement_s,
            r.improvement_pct,
            r.thesis_improvement_s.map_or("".into(), |t| format!("{t:.2} s"))
        );
    }
    let ran_report = sources::ran(&call, &THESIS_RATES_KBPS, THESIS_RTT, &[]);
    if let Err(e) = store
        .record_rows(run, "ran_delay", &ran_report.ran)
        .and_then(|_| store.record_rows(run, "ran_messages", &ran_report.ran_messages))
    {
        return fail(e);
    }

    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(e),
    };

    // 3. A stepped load run through `sigkit proxy`, to Kamailio and SIPp
    // where installed.
    eprintln!("sigkit eval: a load run: {}", path.series());
    let peers_dir = args.out.join("peers");
    let servers = match &path {
        LoadPath::BuiltIn { .. } => None,
        LoadPath::Kamailio { .. } => match peers::sipp_uas(&peers_dir).and_then(|uas| {
            let kamailio = peers::kamailio(&peers_dir)?;
            Ok((uas, kamailio))
        }) {
            Ok(s) => Some(s),
            Err(e) => return fail(e),
        },
    };
    let upstream = servers.as_ref().map(|(uas, kamailio)| (uas.addr, kamailio.addr));
    let proxy_run = runtime.block_on(proxy_load(upstream, (start, end, step, dwell)));
    drop(servers);
    let proxy_load = match proxy_run {
        Ok(report) => {
            let s = &report.summary;
            println!(
                "\n{}: {} of {} calls, {} failed, {} unfinished when the run ended",
                path.series(),
                s.successful_calls,
                s.attempted_calls,
                s.failed_calls,
                s.calls_in_progress
            );
            for st in &report.steps {
                let unfinished = st.attempted.saturating_sub(st.successful + st.failed);
                println!(
                    "  {:>6.0} calls/s offered: {} of {} successful, {} failed, {} unfinished, set-up p50 {:.2} ms, p95 {:.2} ms",
                    st.offered_cps, st.successful, st.attempted, st.failed, unfinished, st.setup_ms.p50, st.setup_ms.p95
                );
            }
            if let Err(e) = store
                .record_rows(run, "load_intervals", &report.intervals)
                .and_then(|_| store.record_rows(run, "load_steps", &report.steps))
            {
                return fail(e);
            }
            Some(report.summary)
        }
        Err(e) => return fail(format!("load through the proxy: {e}")),
    };

    // 4. A capacity search against the built-in UAS.
    eprintln!("sigkit eval: capacity search against the built-in UAS");
    let settings = SearchSettings {
        target: None,
        through: None,
        repeat: if args.quick { 1 } else { 3 },
        strategy: Strategy::Bisect {
            start: 1000.0,
            growth: 2.0,
            max: 200_000.0,
            resolution: if args.quick { 0.25 } else { 0.05 },
        },
        level: ServiceLevel::default(),
        step_s: if args.quick { 0.5 } else { 2.0 },
    };
    let capacity =
        runtime.block_on(search(&settings, |i, r, served| eprintln!("  search {}: {}", i + 1, describe(r, served))));
    let steps: Vec<serde_json::Value> = capacity
        .searches
        .iter()
        .enumerate()
        .flat_map(|(i, o)| {
            o.steps.iter().map(move |(r, v)| {
                serde_json::json!({"search": i + 1, "offered_cps": r.offered_cps, "attempted": r.attempted,
                    "successful": r.successful, "failed": r.failed, "setup_p95_ms": r.setup_p95_ms,
                    "verdict": format!("{v:?}")})
            })
        })
        .collect();
    if let Err(e) = store.record_rows(run, "capacity_steps", &steps) {
        return fail(e);
    }
    if let Some(e) = &capacity.estimate {
        println!(
            "\ncapacity of the built-in UAS with the generator: {:.0} calls/s over {} searches (±{:.1} %)",
            e.mean_cps,
            e.repetitions,
            e.max_deviation * 100.0
        );
    }

    // 5. The SIP overload thesis's headline scenarios, simulated.
    eprintln!("sigkit eval: SIP overload simulations");
    let overload = match overload_studies(&mut store, &command.join(" "), if args.quick { 2 } else { 20 }) {
        Ok(o) => o,
        Err(e) => return fail(e),
    };

    let summary = Summary {
        seconds: started.elapsed().as_secs_f64(),
        notes: path.notes(),
        load_path: path.key(),
        compression,
        ran,
        proxy_load,
        capacity: Some(capacity),
        overload: overload.iter().map(|(_, s)| s.clone()).collect(),
    };
    if let Err(e) = store.finish_run(run, &summary) {
        return fail(e);
    }
    drop(store);
    let json = match serde_json::to_string_pretty(&summary) {
        Ok(j) => j,
        Err(e) => return fail(e),
    };
    if let Err(e) = std::fs::write(args.out.join("summary.json"), json) {
        return fail(e);
    }

    // 6. The report, from this run's rows in the results file (what
    // `sigkit report results.sqlite` draws too) and the simulations' runs,
    // with the published values beside ours.
    let sim_runs: Vec<sigkit_results::RunId> = overload.iter().map(|(r, _)| *r).collect();
    let index = match report(&db, run, &sim_runs, &args.out) {
        Ok(i) => i,
        Err(e) => return fail(e),
    };
    eprintln!(
        "sigkit eval: report in {}, results in {} (run {run}), {:.1} s",
        index.display(),
        db.display(),
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

fn report(
    db: &Path,
    run: sigkit_results::RunId,
    sim_runs: &[sigkit_results::RunId],
    out: &Path,
) -> Result<PathBuf, sigkit_report::ReportError> {
    let mut input = runs::read_results_run(db, run)?;
    for &sim in sim_runs {
        input.merge(runs::read_results_run(db, sim)?);
    }
    runs::add_seeds(&mut input);
    input.title = Some("sigkit eval".into());
    Ok(write_report(&input, out)?.index)
}

/// A stepped load run (`steps`: start, end, step calls/s, each step's
/// length): UAC → `sigkit proxy` (plain SIP on the terminal side) → the
/// built-in UAS, or, with `servers` (SIPp's UAS, Kamailio), → Kamailio →
/// SIPp's UAS.
async fn proxy_load(
    servers: Option<(SocketAddr, SocketAddr)>,
    (start, end, step, dwell): (f64, f64, f64, Duration),
) -> Result<sigkit_loadgen::RunReport, String> {
    let n_steps = ((end - start) / step).round() as u32 + 1;
    let secs = dwell.as_secs_f64() * f64::from(n_steps);
    let localhost = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let (uas_addr, upstream, built_in) = match servers {
        Some((uas, kamailio)) => (uas, kamailio, None),
        None => {
            let uas = Prepared::bind(LoadConfig {
                role: Role::Uas,
                duration: Some(Duration::from_secs_f64(secs + 40.0)),
                ..LoadConfig::default()
            })
            .await
            .map_err(|e| e.to_string())?;
            let addr = uas.local_addr();
            let (stop, stopped) = tokio::sync::watch::channel(false);
            (addr, addr, Some((tokio::spawn(uas.run(Some(stopped))), stop)))
        }
    };
    let config = ProxyConfig {
        listen: vec![TransportAddr { transport: SipTransport::Udp, addr: localhost(0) }],
        upstream: Some(TransportAddr { transport: SipTransport::Udp, addr: upstream }),
        upstream_local: Some(localhost(0)),
        threads: 1,
        ..ProxyConfig::default()
    };
    let proxy = sigkit_proxy::runtime::start(config).await.map_err(|e| e.to_string())?;
    let proxy_addr = proxy.terminal_addrs[0].1;
    let uac = LoadConfig {
        role: Role::Uac,
        remote: Some(uas_addr),
        next_hop: Some(proxy_addr),
        rate: start,
        pattern: Pattern::Steps { start, end, step, dwell, pause: Duration::ZERO },
        duration: Some(Duration::from_secs_f64(secs + 10.0)),
        ..LoadConfig::default()
    };
    let report = sigkit_loadgen::run(uac, None).await.map_err(|e| e.to_string());
    if let Some((task, stop)) = built_in {
        let _ = stop.send(true);
        let _ = task.await;
    }
    proxy.stop().await;
    report
}
