//! `sigkit sim`: runs a SIP overload scenario of `sigkit-sim` (the SIP
//! overload thesis's simulations) over N seeds in parallel, prints each
//! seed's outcome and the collapse count, and stores the per-second metrics.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use sigkit_results::Store;
use sigkit_sim::{run_seeds, Scenario, SeedSummary, Study};

use crate::exit::Failure;

#[derive(Args)]
pub struct SimArgs {
    /// The scenario (TOML; see crates/sigkit-sim/scenarios/ and docs/overload.md).
    scenario: PathBuf,
    /// Seeds to run (seeds FIRST .. FIRST+N-1), in parallel on all cores.
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 1)]
    first_seed: u64,
    /// Print the study and every seed's summary as one JSON object instead
    /// of tables.
    #[arg(long)]
    json: bool,
    /// Record the run in this SQLite results file: run kind "sim", tables
    /// "sim_seconds" (one row per seed and second) and "sim_seeds".
    #[arg(long, value_name = "FILE")]
    db: Option<PathBuf>,
    /// Write sim_seconds.csv and sim_seeds.csv into this directory.
    #[arg(long, value_name = "DIR")]
    csv: Option<PathBuf>,
    /// Override a scenario key before the run: a dotted key (array elements
    /// by index) and a TOML value, e.g. `--set sources.0.rate=95` or
    /// `--set proxies.1.buffers.requests=50`; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Write an SVG plot of the first seed's per-second metrics (success
    /// rate, transmissions, utilisation, pending transactions) to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Memory the run may take, MiB: a scenario whose estimate (its
    /// transactions and seconds, the seeds running at once) is over it is
    /// refused before it starts, with the keys to lower.
    #[arg(long, value_name = "MIB", default_value_t = sigkit_sim::DEFAULT_BUDGET_BYTES >> 20,
          value_parser = clap::value_parser!(u64).range(1..=(1 << 40)))]
    memory_budget_mib: u64,
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

fn print_seeds(runs: &[SeedSummary]) {
    println!(
        "{:>6} {:>9} {:>8} {:>8} {:>8} {:>7} {:>8} {:>8} {:>6} {:>6}",
        "seed", "collapsed", "SR", "200s", "goodput", "RT", "max PT", "rejected", "D1 at", "D2 at"
    );
    for s in runs {
        println!(
            "{:>6} {:>9} {:>8.3} {:>8.3} {:>8.1} {:>7.2} {:>8} {:>8} {:>6} {:>6}",
            s.seed,
            if s.collapsed { "yes" } else { "no" },
            s.window_success_ratio,
            s.window_ok_ratio,
            s.window_goodput,
            s.transmissions_mean,
            s.max_uac_pending,
            s.rejected,
            opt(s.d1_first_detection),
            opt(s.d2_first_detection),
        );
    }
    println!(
        "SR: the share of the window's transactions with a final response (the thesis's success rate); 200s: \
         their share answered 200; goodput: 200s a second; RT: transmissions a transaction; max PT: most \
         transactions pending at the UAC; D1 at, D2 at: the second each detector first found overload"
    );
}

/// CPU seconds this process has used so far, all threads (utime + stime
/// of /proc/self/stat, in clock ticks of 1/100 s); None off Linux.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Some((ticks(11)? + ticks(12)?) / 100.0)
}

/// How fast the kernel ran: events over the CPU time the seeds took (per
/// core) and over the wall-clock time.
#[derive(serde::Serialize)]
struct Speed {
    events: u64,
    wall_seconds: f64,
    cpu_seconds: Option<f64>,
    events_per_second_per_core: Option<f64>,
    events_per_second_wall: f64,
    threads: usize,
}

fn print_speed(speed: &Speed) {
    let per_core = speed.events_per_second_per_core.map_or_else(|| "-".to_string(), |v| format!("{:.2}", v / 1e6));
    println!(
        "speed               {:.1} M events in {:.2} s wall, {} s CPU: {} M events/s per core, {:.2} M/s on {} threads",
        speed.events as f64 / 1e6,
        speed.wall_seconds,
        speed.cpu_seconds.map_or_else(|| "-".to_string(), |c| format!("{c:.2}")),
        per_core,
        speed.events_per_second_wall / 1e6,
        speed.threads,
    );
}

fn print_study(sc: &Scenario, study: &Study) {
    let [from, to] = sc.collapse_window;
    println!();
    println!("scenario            {}", study.scenario);
    if !sc.description.is_empty() {
        println!("                    {}", sc.description);
    }
    println!("collapsed           {} / {}", study.collapsed, study.seeds);
    let [lo, mean, hi] = study.window_success_ratio;
    println!("success rate        {mean:.3} (min {lo:.3}, max {hi:.3}), transactions started {from}-{to} s");
    let [lo, mean, hi] = study.window_ok_ratio;
    println!("200 share           {mean:.3} (min {lo:.3}, max {hi:.3})");
    println!("goodput             {:.1} 200s/s", study.window_goodput_mean);
    println!("rejected (503)      {:.2} %", 100.0 * study.rejected_share_mean);
    println!("transmissions       {:.2} per transaction", study.transmissions_mean);
    println!("max pending (UAC)   {}", study.max_uac_pending);
    let [lo, mean, hi] = study.frpd_p95;
    println!("fRpD p95 (run)      {mean:.3} s (min {lo:.3}, max {hi:.3})");
    let [lo, mean, hi] = study.ok_share;
    println!("200 share (run)     {mean:.3} (min {lo:.3}, max {hi:.3}), all recorded transactions");
    println!("D1 congested        {:.1} % of evaluations", 100.0 * study.d1_congested_share_mean);
    if let Some([lo, mean, hi]) = study.registrations_window_min {
        println!("registered (min)    {mean:.1} (min {lo:.0}, max {hi:.0}) in the window");
    }
}

pub(crate) fn store_results(
    store: &mut Store,
    command: &str,
    sc: &Scenario,
    runs: &[sigkit_sim::SeedRun],
    study: &Study,
) -> Result<sigkit_results::RunId, sigkit_results::StoreError> {
    let run = store.begin_run("sim", command, sc)?;
    for r in runs {
        store.record_rows(run, "sim_seconds", &r.seconds)?;
    }
    let seeds: Vec<&SeedSummary> = runs.iter().map(|r| &r.summary).collect();
    store.record_rows(run, "sim_seeds", &seeds)?;
    store.finish_run(run, study)?;
    Ok(run)
}

fn write_csv(store: &Store, run: sigkit_results::RunId, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for table in ["sim_seconds", "sim_seeds"] {
        let path = dir.join(format!("{table}.csv"));
        let mut file =
            std::io::BufWriter::new(std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?);
        store.export_csv(table, Some(run), &mut file).map_err(|e| format!("{}: {e}", path.display()))?;
        std::io::Write::flush(&mut file).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

pub fn sim(args: SimArgs) -> ExitCode {
    let fail = |m: String, kind: Failure| crate::exit::CliError { kind, message: m }.report("sigkit sim");
    let mut overrides = Vec::new();
    for kv in &args.set {
        let Some((k, v)) = kv.split_once('=') else {
            return fail(format!("--set {kv}: expected KEY=VALUE"), Failure::Usage);
        };
        overrides.push((k.trim().to_string(), v.trim().to_string()));
    }
    let scenario = match Scenario::load_with(&args.scenario, &overrides) {
        Ok(s) => s,
        // The scenario file, with the --set values in it.
        Err(e) => return fail(format!("{}: {e}", args.scenario.display()), Failure::Input),
    };
    if args.seeds == 0 {
        return fail("--seeds must be at least 1".into(), Failure::Usage);
    }
    let Some(last) = args.first_seed.checked_add(args.seeds - 1) else {
        return fail("--first-seed + --seeds overflows".into(), Failure::Usage);
    };
    let estimate = scenario.memory_estimate(args.seeds, sigkit_sim::threads());
    if let Err(e) = estimate.check(args.memory_budget_mib << 20) {
        return fail(format!("{}: {e}", args.scenario.display()), Failure::Usage);
    }
    let seeds: Vec<u64> = (args.first_seed..=last).collect();
    let (cpu0, wall0) = (process_cpu_seconds(), std::time::Instant::now());
    let runs = run_seeds(&scenario, &seeds);
    let wall_seconds = wall0.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
    let summaries: Vec<SeedSummary> = runs.iter().map(|r| r.summary.clone()).collect();
    let study = Study::of(&scenario, &summaries);
    let speed = Speed {
        events: study.events,
        wall_seconds,
        cpu_seconds,
        events_per_second_per_core: cpu_seconds.filter(|&c| c > 0.0).map(|c| study.events as f64 / c),
        events_per_second_wall: study.events as f64 / wall_seconds.max(1e-9),
        threads: sigkit_sim::threads(),
    };
    if args.json {
        let out = serde_json::json!({ "study": study, "speed": speed, "seeds": summaries });
        println!("{out}");
    } else {
        print_seeds(&summaries);
        print_study(&scenario, &study);
        print_speed(&speed);
    }
    if let Some(path) = &args.svg {
        let title = format!("{}: seed {}", scenario.name, runs[0].summary.seed);
        let written = sigkit_sim::plot::seconds_svg(&title, &runs[0].seconds)
            .map_err(|e| e.to_string())
            .and_then(|svg| std::fs::write(path, svg).map_err(|e| e.to_string()));
        if let Err(e) = written {
            return fail(format!("{}: {e}", path.display()), Failure::Run);
        }
    }
    if args.db.is_some() || args.csv.is_some() {
        let command = std::env::args().collect::<Vec<_>>().join(" ");
        let opened = match &args.db {
            Some(path) => Store::open(path).map_err(|e| format!("{}: {e}", path.display())),
            None => Store::in_memory().map_err(|e| e.to_string()),
        };
        let mut store = match opened {
            Ok(s) => s,
            Err(e) => return fail(e, Failure::Run),
        };
        let run = match store_results(&mut store, &command, &scenario, &runs, &study) {
            Ok(run) => run,
            Err(e) => return fail(format!("recording the run: {e}"), Failure::Run),
        };
        if let Some(dir) = &args.csv {
            if let Err(e) = write_csv(&store, run, dir) {
                return fail(e, Failure::Run);
            }
        }
    }
    ExitCode::SUCCESS
}
