//! `sigkit eval`: the main job on embedded defaults. It measures what
//! sigkit measures, in one run and with no server of the user's, and
//! writes the results (SQLite, JSON) and the report into one directory.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use serde::Serialize;
use sigcomp_compress::Mechanism;
use sigkit_eval::study::{compression, flow_dirs, CompressionStudy};
use sigkit_results::Store;

use crate::endpoint_args::EndpointArgs;

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
    #[command(flatten)]
    endpoint: EndpointArgs,
}

/// What `summary.json` holds: one line per part of the run.
#[derive(Serialize)]
struct Summary {
    seconds: f64,
    compression: Vec<FlowSummary>,
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

pub fn eval(args: EvalArgs) -> ExitCode {
    let started = Instant::now();
    let (config, params) = match args.endpoint.resolve() {
        Ok(c) => c,
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
    let run_config = serde_json::json!({
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
    let compression = summarize(&study);
    println!("{:<36} {:<8} {:>7} {:>7} {:>7} {:>7}", "flow", "algo", "basic", "static", "dynamic", "shared");
    for s in &compression {
        println!(
            "{:<36} {:<8} {:>7.3} {:>7.3} {:>7.3} {:>7.3}",
            s.flow, s.algorithm, s.basic, s.r#static, s.dynamic, s.shared
        );
    }

    let summary = Summary { seconds: started.elapsed().as_secs_f64(), compression };
    if let Err(e) = store.finish_run(run, &summary) {
        return fail(e);
    }
    let json = match serde_json::to_string_pretty(&summary) {
        Ok(j) => j,
        Err(e) => return fail(e),
    };
    if let Err(e) = std::fs::write(args.out.join("summary.json"), json) {
        return fail(e);
    }
    eprintln!("sigkit eval: results in {} (run {run}), {:.1} s", db.display(), started.elapsed().as_secs_f64());
    ExitCode::SUCCESS
}
