//! `sigkit eval`: the main job on embedded defaults. It measures what
//! sigkit measures, in one run and with no server of the user's, and
//! writes the results (SQLite, JSON) and the report (sigkit-report, drawn
//! from the run's rows in the results file) into one directory.
//!
//! Everything the defaults need is built in: the corpus (sigkit-eval's
//! `corpus`), Kamailio's configuration (`peers::KAMAILIO_CFG`) and the
//! SIP overload thesis's scenarios; `--corpus` and `--kamailio-cfg`
//! override them. The load run goes through `sigkit proxy`: where
//! Kamailio and SIPp are installed and start, it continues through
//! Kamailio to SIPp's UAS, the framework thesis's chain of real servers;
//! otherwise it ends at the built-in UAS, and the report says why.
//!
//! A part that fails does not end the run: the others still run, and the
//! report shows what finished, with the failure noted (exit 1). An
//! interrupt (SIGINT, SIGTERM) stops the run after recording what
//! finished (exit 130).

mod load;
mod parts;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde::Serialize;
use sigkit_eval::peers;
use sigkit_eval::ran::RanRow;
use sigkit_loadgen::Summary as LoadSummary;
use sigkit_report::{runs, write_report};
use sigkit_results::{RunId, Store};

use crate::capacity_cmd::CapacityReport;
use crate::endpoint_args::EndpointArgs;
use crate::exit::{CliError, Failure};
use load::{LoadPath, Steps};
use parts::FlowSummary;

/// Which servers the load run goes to.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PeersArg {
    /// Through Kamailio to SIPp's UAS when both are on PATH and start, else
    /// to the built-in UAS.
    Auto,
    /// The built-in UAS only, as if Kamailio and SIPp were not installed.
    BuiltIn,
    /// Kamailio and SIPp; an error if either is missing.
    Kamailio,
}

#[derive(Args)]
pub struct EvalArgs {
    /// A corpus of call flows (one directory per flow) instead of the one
    /// built into sigkit.
    #[arg(long, value_name = "DIR")]
    corpus: Option<PathBuf>,
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
    /// Kamailio's configuration instead of the built-in one: every
    /// LISTEN_PORT in it becomes the UDP port on 127.0.0.1 Kamailio must
    /// listen on, and it must answer an OPTIONS to itself with 200.
    #[arg(long, value_name = "FILE")]
    kamailio_cfg: Option<PathBuf>,
    #[command(flatten)]
    endpoint: EndpointArgs,
}

/// What `summary.json` holds: one line per part of the run.
#[derive(Serialize)]
struct Summary {
    seconds: f64,
    /// "complete", "incomplete" (a part failed) or "interrupted".
    status: &'static str,
    /// The servers the load run went to, and every part that failed or
    /// was not run, in words (also the report's note on the run).
    notes: String,
    /// Each part that failed, or was not run after an interrupt.
    problems: Vec<String>,
    /// What the report shows first: the problems, and a real peer the
    /// load run could not use.
    warnings: Vec<String>,
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

/// Exit status of a run that a part of failed: the report is written.
const EXIT_INCOMPLETE: u8 = Failure::Run.code();
/// Exit status of an interrupted run (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: u8 = Failure::Interrupted.code();

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    CliError::run(msg).report("sigkit eval")
}

/// Set by SIGINT or SIGTERM: the run records what finished, and stops.
#[derive(Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Waits on `runtime` for SIGINT or SIGTERM; a second one ends the
    /// process at once.
    fn watch(&self, runtime: &tokio::runtime::Runtime) {
        let flag = self.0.clone();
        runtime.spawn(async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
                return;
            };
            loop {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
                if flag.swap(true, Ordering::SeqCst) {
                    std::process::exit(i32::from(EXIT_INTERRUPTED));
                }
                eprintln!("sigkit eval: interrupted; recording what finished (again to stop at once)");
            }
        });
    }

    /// Runs `work` on `runtime` unless an interrupt comes first.
    fn block_on<T>(
        &self,
        runtime: &tokio::runtime::Runtime,
        work: impl std::future::Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        let flag = self.0.clone();
        runtime.block_on(async move {
            let interrupted = async {
                while !flag.load(Ordering::SeqCst) {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            };
            tokio::select! {
                r = work => r,
                _ = interrupted => Err("interrupted".into()),
            }
        })
    }
}

/// The run being recorded: its results file, and what went wrong so far.
struct Run {
    store: Store,
    id: RunId,
    command: String,
    interrupt: Interrupt,
    problems: Vec<String>,
}

impl Run {
    /// Runs part `name` unless the run was interrupted; a failure is noted
    /// and the run goes on.
    fn part<T>(&mut self, name: &str, work: impl FnOnce(&mut Run) -> Result<T, String>) -> Option<T> {
        if self.interrupt.is_set() {
            self.problems.push(format!("{name}: not run (interrupted)"));
            return None;
        }
        eprintln!("sigkit eval: {name}");
        match work(self) {
            Ok(t) => Some(t),
            Err(_) if self.interrupt.is_set() => {
                self.problems.push(format!("{name}: stopped (interrupted)"));
                None
            }
            Err(e) => {
                eprintln!("sigkit eval: {name} failed: {e}");
                self.problems.push(format!("{name} failed: {e}"));
                None
            }
        }
    }

    fn status(&self) -> &'static str {
        match (self.interrupt.is_set(), self.problems.is_empty()) {
            (true, _) => "interrupted",
            (false, true) => "complete",
            (false, false) => "incomplete",
        }
    }
}

pub fn eval(args: EvalArgs) -> ExitCode {
    let started = Instant::now();
    let (config, params) = match args.endpoint.resolve() {
        Ok(c) => c,
        Err(e) => return CliError::usage(e).report("sigkit eval"),
    };
    let kamailio_cfg = match kamailio_cfg(&args) {
        Ok(text) => text,
        Err(e) => return CliError::input(e).report("sigkit eval"),
    };
    // Every path of the run is absolute from here: Kamailio runs in its
    // own folder, and the report names where it is.
    let out = match std::fs::create_dir_all(&args.out).and_then(|_| std::path::absolute(&args.out)) {
        Ok(o) => o,
        Err(e) => return fail(format!("{}: {e}", args.out.display())),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let interrupt = Interrupt::default();
    interrupt.watch(&runtime);
    let path = match LoadPath::start(args.peers, &out.join("peers"), &kamailio_cfg) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let db = out.join("results.sqlite");
    let mut store = match Store::open(&db) {
        Ok(s) => s,
        Err(e) => return fail(format!("{}: {e}", db.display())),
    };
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let steps = Steps::new(args.quick);
    let run_config = run_config(&args, &path, &steps, config, params);
    let id = match store.begin_run("eval", &command, &run_config) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let mut run = Run { store, id, command, interrupt: interrupt.clone(), problems: Vec::new() };
    let corpus = args.corpus.as_deref();

    let compression = run.part("compression of every corpus flow under each mechanism", |run| {
        parts::compression(run, corpus, args.quick, config, params)
    });
    let ran = run.part("the RAN-delay study", |run| parts::ran(run, corpus, config, params));
    let proxy_load = run.part(&format!("a load run: {}", path.series()), |run| {
        let report = run.interrupt.block_on(&runtime, load::proxy_load(path.servers(), steps))?;
        parts::record_load(run, path.series(), &report)
    });
    // Like for like: the same Kamailio and SIPp UAS without the proxy,
    // driven by sigkit's UAC and by SIPp's, each a run of its own.
    let direct_runs = match (path.servers(), proxy_load.is_some()) {
        (Some(servers), true) => run
            .part("the same load without sigkit proxy, from sigkit's UAC and from SIPp's", |run| {
                parts::direct_loads(run, &runtime, servers, steps, &out.join("peers"))
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    // The real peers are done with.
    let load_path = path.key();
    let mut notes = path.notes();
    let fallback = path.warning();
    drop(path);
    let capacity =
        run.part("capacity search against the built-in UAS", |run| parts::capacity(run, &runtime, args.quick));
    let overload = run.part("SIP overload simulations", |run| parts::overload(run, if args.quick { 2 } else { 20 }));

    let status = run.status();
    for p in &run.problems {
        notes.push_str(&format!(" {p}."));
    }
    let other_runs: Vec<RunId> = direct_runs.into_iter().chain(overload.iter().flatten().map(|(r, _)| *r)).collect();
    let summary = Summary {
        seconds: started.elapsed().as_secs_f64(),
        status,
        notes,
        problems: run.problems.clone(),
        warnings: run.problems.iter().map(|p| format!("{p}.")).chain(fallback).collect(),
        load_path,
        compression: compression.unwrap_or_default(),
        ran: ran.unwrap_or_default(),
        proxy_load,
        capacity,
        overload: overload.into_iter().flatten().map(|(_, s)| s).collect(),
    };
    if let Err(e) = run.store.finish_run(run.id, &summary) {
        return fail(e);
    }
    let Run { store, id, problems, .. } = run;
    drop(store);
    if let Err(e) = write_summary(&out, &summary) {
        return fail(e);
    }

    // The report, from this run's rows in the results file (what `sigkit
    // report results.sqlite` draws too) and its other runs, with the
    // published values beside ours.
    let index = match report(&db, id, &other_runs, &out) {
        Ok(i) => i,
        Err(e) => return fail(e),
    };
    eprintln!(
        "sigkit eval: {status}; report in {}, results in {} (run {id}), {:.1} s",
        index.display(),
        db.display(),
        started.elapsed().as_secs_f64()
    );
    for p in &problems {
        eprintln!("sigkit eval: {p}");
    }
    match status {
        "complete" => ExitCode::SUCCESS,
        "interrupted" => ExitCode::from(EXIT_INTERRUPTED),
        _ => ExitCode::from(EXIT_INCOMPLETE),
    }
}

/// The Kamailio configuration the run's load path uses: `--kamailio-cfg`,
/// or the built-in one.
fn kamailio_cfg(args: &EvalArgs) -> Result<String, String> {
    match &args.kamailio_cfg {
        None => Ok(peers::KAMAILIO_CFG.to_string()),
        Some(file) => std::fs::read_to_string(file).map_err(|e| format!("--kamailio-cfg {}: {e}", file.display())),
    }
}

/// What the results file records of the run's configuration.
fn run_config(
    args: &EvalArgs,
    path: &LoadPath,
    steps: &Steps,
    config: sigcomp_compress::Config,
    params: sigcomp::Params,
) -> serde_json::Value {
    serde_json::json!({
        "title": "sigkit eval",
        "series": path.series(),
        "capacity_series": "capacity search, built-in UAS",
        "load_path": path.key(),
        "load_steps": {"start": steps.start, "end": steps.end, "step": steps.step, "dwell_s": steps.dwell.as_secs_f64()},
        "corpus": args.corpus.as_ref().map_or_else(|| "built in".to_string(), |c| c.display().to_string()),
        "quick": args.quick,
        "algorithm": config.algorithm.name(),
        "mechanism": config.mechanism.name(),
        "dms": params.dms, "sms": params.sms, "cpb": params.cpb,
    })
}

/// `summary.json` in `out`.
fn write_summary(out: &Path, summary: &Summary) -> Result<(), String> {
    let json = serde_json::to_string_pretty(summary).map_err(|e| e.to_string())?;
    std::fs::write(out.join("summary.json"), json).map_err(|e| e.to_string())
}

/// The report of `run` with its `other_runs` (the like-for-like load runs
/// and the simulations), each a run of its own in the results file.
fn report(db: &Path, run: RunId, other_runs: &[RunId], out: &Path) -> Result<PathBuf, sigkit_report::ReportError> {
    let mut input = runs::read_results_run(db, run)?;
    for &other in other_runs {
        input.merge(runs::read_results_run(db, other)?);
    }
    runs::add_seeds(&mut input);
    input.title = Some("sigkit eval".into());
    Ok(write_report(&input, out)?.index)
}
