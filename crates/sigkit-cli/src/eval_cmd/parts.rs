//! The parts of `sigkit eval` that measure, each recording its rows in the
//! run's results file and printing its table.

use std::path::Path;

use serde::Serialize;
use sigcomp::{Params, Transport};
use sigcomp_compress::{Config, Mechanism};
use sigkit_eval::capacity::{ServiceLevel, Strategy};
use sigkit_eval::corpus;
use sigkit_eval::ran::{RanCall, RanRow, THESIS_RATES_KBPS, THESIS_RTT};
use sigkit_eval::study::{compression_of, CompressionStudy};
use sigkit_loadgen::Summary as LoadSummary;
use sigkit_report::sources;
use sigkit_results::RunId;

use super::load::{self, sipp_steps, Steps};
use super::Run;
use crate::capacity_cmd::{describe, search, CapacityReport, SearchSettings};

/// The SIP overload thesis's headline scenarios (§4.3.2, §4.3.3), run by
/// `sigkit eval`: the collapse after a short surge, and the two handlers
/// that prevent it.
const OVERLOAD_SCENARIOS: [(&str, &str); 3] = [
    ("no-handling", include_str!("../../../sigkit-sim/scenarios/no-handling.toml")),
    ("h1-t1-1s", include_str!("../../../sigkit-sim/scenarios/h1-t1-1s.toml")),
    ("h2-cap503", include_str!("../../../sigkit-sim/scenarios/h2-cap503.toml")),
];

/// The call of the RAN-delay study: the SigComp performance thesis's 3GPP
/// video call.
const RAN_FLOW: &str = "3gpp-video-call";

/// One flow's ratio (SigComp bytes / SIP bytes) per mechanism.
#[derive(Serialize)]
pub struct FlowSummary {
    flow: String,
    algorithm: &'static str,
    basic: f64,
    r#static: f64,
    dynamic: f64,
    shared: f64,
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

/// Every corpus flow under each mechanism (and each algorithm, except in
/// a quick run): the SigComp performance thesis's Appendix H.
pub fn compression(
    run: &mut Run,
    corpus: Option<&Path>,
    quick: bool,
    config: Config,
    params: Params,
) -> Result<Vec<FlowSummary>, String> {
    let flows = corpus::flows(corpus).map_err(|e| format!("corpus: {e}"))?;
    let algorithms = if quick { vec![config.algorithm] } else { sigkit_eval::study::all_algorithms().to_vec() };
    let study = compression_of(&flows, &algorithms, &Mechanism::ALL, config, params).map_err(|e| e.to_string())?;
    run.store
        .record_rows(run.id, "compression_flows", &study.flows)
        .and_then(|_| run.store.record_rows(run.id, "compression_messages", &study.messages))
        .map_err(|e| e.to_string())?;
    // The published compression figures, each at its own settings (for the
    // report's reproduction section; well under a second).
    let published = sigkit_eval::published::measure_with(|flow| corpus::flow_named(corpus, flow).load())
        .map_err(|e| e.to_string())?;
    run.store.record_rows(run.id, "published_compression", &published).map_err(|e| e.to_string())?;
    let compression = summarize(&study);
    println!("{:<36} {:<8} {:>7} {:>7} {:>7} {:>7}", "flow", "algo", "basic", "static", "dynamic", "shared");
    for s in &compression {
        println!(
            "{:<36} {:<8} {:>7.3} {:>7.3} {:>7.3} {:>7.3}",
            s.flow, s.algorithm, s.basic, s.r#static, s.dynamic, s.shared
        );
    }
    Ok(compression)
}

/// The RAN-delay study (the SigComp performance thesis §2.1, §9.10): the
/// 3GPP video call's session establishment (its first 12 messages,
/// without the closing BYE), compressed over a reliable transport as the
/// thesis did.
pub fn ran(run: &mut Run, corpus: Option<&Path>, config: Config, params: Params) -> Result<Vec<RanRow>, String> {
    let source = corpus::flow_named(corpus, RAN_FLOW);
    let mut messages = source.load().map_err(|e| e.to_string())?;
    messages.truncate(12);
    let reliable = Config { transport: Transport::Stream, ..config };
    let call = RanCall::compress(&messages, params, reliable).map_err(|e| format!("{source}: {e}"))?;
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
    run.store
        .record_rows(run.id, "ran_delay", &ran_report.ran)
        .and_then(|_| run.store.record_rows(run.id, "ran_messages", &ran_report.ran_messages))
        .map_err(|e| e.to_string())?;
    Ok(ran)
}

/// Prints and records the load run's steps.
pub fn record_load(run: &mut Run, series: &str, report: &sigkit_loadgen::RunReport) -> Result<LoadSummary, String> {
    print_load(series, report);
    run.store
        .record_rows(run.id, "load_intervals", &report.intervals)
        .and_then(|_| run.store.record_rows(run.id, "load_steps", &report.steps))
        .map_err(|e| e.to_string())?;
    Ok(report.summary.clone())
}

/// A load run's table.
fn print_load(series: &str, report: &sigkit_loadgen::RunReport) {
    let s = &report.summary;
    println!(
        "\n{series}: {} of {} calls, {} failed, {} unfinished when the run ended",
        s.successful_calls, s.attempted_calls, s.failed_calls, s.calls_in_progress
    );
    for st in &report.steps {
        let unfinished = st.attempted.saturating_sub(st.successful + st.failed);
        println!(
            "  {:>6.0} calls/s offered: {} of {} successful, {} failed, {} unfinished, set-up p50 {:.2} ms, p95 {:.2} ms",
            st.offered_cps, st.successful, st.attempted, st.failed, unfinished, st.setup_ms.p50, st.setup_ms.p95
        );
    }
}

/// The proxied load run's like-for-like companions, each recorded as a
/// "load" run of its own: sigkit's UAC straight to Kamailio, and SIPp's
/// UAC the same way; their run ids.
pub fn direct_loads(
    run: &mut Run,
    runtime: &tokio::runtime::Runtime,
    servers: (std::net::SocketAddr, std::net::SocketAddr),
    steps: Steps,
    dir: &Path,
) -> Result<Vec<RunId>, String> {
    let mut ids = Vec::new();
    let direct = run.interrupt.block_on(runtime, load::direct_load(servers, steps))?;
    let id = begin_load_run(run, load::DIRECT_SERIES, steps)?;
    print_load(load::DIRECT_SERIES, &direct);
    run.store
        .record_rows(id, "load_intervals", &direct.intervals)
        .and_then(|_| run.store.record_rows(id, "load_steps", &direct.steps))
        .and_then(|_| run.store.finish_run(id, &direct.summary))
        .map_err(|e| e.to_string())?;
    ids.push(id);
    if run.interrupt.is_set() {
        return Err("interrupted".into());
    }
    let sipp = sipp_steps(dir, servers, steps)?;
    let id = begin_load_run(run, load::SIPP_SERIES, steps)?;
    println!(
        "
{}:",
        load::SIPP_SERIES
    );
    for s in &sipp {
        let unfinished = match s["unfinished"].as_u64() {
            Some(n) if n > 0 => format!(" ({n} still open at the step's limit)"),
            _ => String::new(),
        };
        println!(
            "  {:>6.0} calls/s offered: {} of {} successful, {} failed{unfinished}",
            s["offered_cps"].as_f64().unwrap_or(f64::NAN),
            s["successful"],
            s["attempted"],
            s["failed"],
        );
    }
    let successful: u64 = sipp.iter().filter_map(|s| s["successful"].as_u64()).sum();
    let failed: u64 = sipp.iter().filter_map(|s| s["failed"].as_u64()).sum();
    let attempted: u64 = sipp.iter().filter_map(|s| s["attempted"].as_u64()).sum();
    run.store
        .record_rows(id, "load_steps", &sipp)
        .and_then(|_| {
            run.store.finish_run(
                id,
                &serde_json::json!({"generator": "sipp", "attempted_calls": attempted,
                    "successful_calls": successful, "failed_calls": failed}),
            )
        })
        .map_err(|e| e.to_string())?;
    ids.push(id);
    Ok(ids)
}

/// A "load" run of the results file for a series beside the main run's.
fn begin_load_run(run: &mut Run, series: &str, steps: Steps) -> Result<RunId, String> {
    let config = serde_json::json!({
        "title": "sigkit eval", "series": series,
        "load_steps": {"start": steps.start, "end": steps.end, "step": steps.step, "dwell_s": steps.dwell.as_secs_f64()},
    });
    run.store.begin_run("load", &run.command, &config).map_err(|e| e.to_string())
}

/// A capacity search against the built-in UAS.
pub fn capacity(run: &mut Run, runtime: &tokio::runtime::Runtime, quick: bool) -> Result<CapacityReport, String> {
    let settings = SearchSettings {
        target: None,
        through: None,
        repeat: if quick { 1 } else { 3 },
        strategy: Strategy::Bisect {
            start: 1000.0,
            growth: 2.0,
            max: 200_000.0,
            resolution: if quick { 0.25 } else { 0.05 },
        },
        level: ServiceLevel::default(),
        step_s: if quick { 0.5 } else { 2.0 },
    };
    let capacity = run.interrupt.block_on(runtime, async {
        search(&settings, |i, r, served| eprintln!("  search {}: {}", i + 1, describe(r, served))).await
    })?;
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
    run.store.record_rows(run.id, "capacity_steps", &steps).map_err(|e| e.to_string())?;
    if let Some(e) = &capacity.estimate {
        println!(
            "\ncapacity of the built-in UAS with the generator: {:.0} calls/s over {} searches (±{:.1} %)",
            e.mean_cps,
            e.repetitions,
            e.max_deviation * 100.0
        );
    }
    Ok(capacity)
}

/// Runs each of [`OVERLOAD_SCENARIOS`] over `seeds` seeds and records it
/// as a "sim" run of the results file; the runs' ids and studies.
pub fn overload(run: &mut Run, seeds: u64) -> Result<Vec<(RunId, sigkit_sim::Study)>, String> {
    let mut out = Vec::new();
    for (name, text) in OVERLOAD_SCENARIOS {
        let scenario = sigkit_sim::Scenario::from_toml_str(text).map_err(|e| format!("scenario {name}: {e}"))?;
        let seed_list: Vec<u64> = (1..=seeds).collect();
        let runs = sigkit_sim::run_seeds(&scenario, &seed_list);
        let summaries: Vec<sigkit_sim::SeedSummary> = runs.iter().map(|r| r.summary.clone()).collect();
        let study = sigkit_sim::Study::of(&scenario, &summaries);
        eprintln!("  {name}: {} of {} seeds collapsed", study.collapsed, study.seeds);
        let id = crate::sim_cmd::store_results(&mut run.store, &run.command, &scenario, &runs, &study)
            .map_err(|e| e.to_string())?;
        out.push((id, study));
    }
    Ok(out)
}
