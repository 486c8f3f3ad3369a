//! What `sigkit load` gives at the end of a run: the summary text and the
//! results file (`--db`).

use std::fmt::Write as _;

use super::LoadArgs;

/// The run's summary as text, as printed at its end (and written by
/// `-trace_screen`): calls, failures by cause, the server and system under
/// test, transactions, response times and steps.
pub(super) fn summary_text(report: &sigkit_loadgen::RunReport) -> String {
    let mut out = String::new();
    let s = &report.summary;
    let _ = writeln!(out,
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
        let _ = writeln!(out, "  failed: {cause}: {n}");
    }
    if s.calls_in_progress > 0 {
        let _ = writeln!(out, "  still in progress at the end: {}", s.calls_in_progress);
    }
    if let Some(c) = &s.service {
        let _ = writeln!(out,
            "  server of limited capacity: {} arrived, {} dropped (queue full), {} new and {} repeated served, {:.1} s busy{}",
            c.arrived,
            c.dropped,
            c.served_new,
            c.served_repeat,
            c.busy_s,
            if c.oc > 0 { format!(", RFC 7339 oc {} at the end", c.oc) } else { String::new() }
        );
    }
    if let Some(u) = &s.sut {
        let _ = writeln!(out, "  system under test: {:.1} % CPU, {} KiB resident at most", u.cpu_percent, u.rss_kib);
    }
    for (method, t) in &s.transactions_ms {
        let (f, p) = (&t.final_ms, &t.provisional_ms);
        let _ = write!(
            out,
            "  {method} transactions: final p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms ({})",
            f.p50, f.p95, f.p99, f.count
        );
        if p.count > 0 {
            let _ = write!(out, "; provisional p50 {:.2} ms, p95 {:.2} ms ({})", p.p50, p.p95, p.count);
        }
        out.push('\n');
    }
    for (name, p) in &s.rtd_ms {
        let _ = writeln!(
            out,
            "  rtd {name}: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms ({} samples)",
            p.p50, p.p95, p.p99, p.count
        );
    }
    if report.steps.len() > 1 {
        for st in &report.steps {
            let _ = writeln!(
                out,
                "  step {} at {:.1} calls/s: {} attempted, {} successful, {} failed; set-up p95 {:.2} ms",
                st.step, st.offered_cps, st.attempted, st.successful, st.failed, st.setup_ms.p95
            );
        }
    }
    out
}

/// One row of `load_transactions`: a method's response times over the
/// run (`scope` "run"), an interval ("interval", at `t_s`) or a load step
/// ("step"), flat so SQL can select on them.
#[derive(Debug, serde::Serialize)]
struct TransactionRow {
    scope: &'static str,
    t_s: Option<f64>,
    step: Option<usize>,
    method: String,
    /// "final" (request → first final response) or "provisional".
    kind: &'static str,
    count: u64,
    p50_ms: f64,
    p90_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    mean_ms: f64,
}

fn transaction_rows(report: &sigkit_loadgen::RunReport) -> Vec<TransactionRow> {
    let mut rows = Vec::new();
    let mut add = |scope, t_s, step, times: &std::collections::BTreeMap<String, sigkit_loadgen::TransactionTimes>| {
        for (method, t) in times {
            for (kind, p) in [("final", &t.final_ms), ("provisional", &t.provisional_ms)] {
                if p.count == 0 {
                    continue;
                }
                rows.push(TransactionRow {
                    scope,
                    t_s,
                    step,
                    method: method.clone(),
                    kind,
                    count: p.count,
                    p50_ms: p.p50,
                    p90_ms: p.p90,
                    p95_ms: p.p95,
                    p99_ms: p.p99,
                    max_ms: p.max,
                    mean_ms: p.mean,
                });
            }
        }
    };
    add("run", None, None, &report.summary.transactions_ms);
    for i in &report.intervals {
        add("interval", Some(i.t_s), Some(i.step), &i.transactions_ms);
    }
    for st in &report.steps {
        add("step", None, Some(st.step), &st.transactions_ms);
    }
    rows
}

pub(super) fn record(
    path: &std::path::Path,
    args: &LoadArgs,
    report: &sigkit_loadgen::RunReport,
) -> Result<(), String> {
    let mut store = sigkit_results::Store::open(path).map_err(|e| e.to_string())?;
    let command: Vec<String> = std::env::args().collect();
    let config = serde_json::json!({
        "scenario": args.scenario, "scenario_file": args.scenario_file, "rate": args.rate,
        "rate_period": args.rate_period, "max_calls": args.max_calls, "limit": args.limit, "hold": args.hold,
        "remote": args.remote, "next_hop": args.next_hop, "transport": args.transport, "steps": args.steps,
        "ramp": args.ramp, "burst": args.burst, "arrivals": args.arrivals, "sigcomp": args.sigcomp,
        "surge": args.surge, "capacity": args.capacity, "queue": args.queue, "repeat_cost": args.repeat_cost,
        "service_time": args.service_time, "oc_target": args.oc_target,
    });
    let run = store.begin_run("load", &command.join(" "), &config).map_err(|e| e.to_string())?;
    store.record_rows(run, "load_intervals", &report.intervals).map_err(|e| e.to_string())?;
    if !report.steps.is_empty() {
        store.record_rows(run, "load_steps", &report.steps).map_err(|e| e.to_string())?;
    }
    let transactions = transaction_rows(report);
    if !transactions.is_empty() {
        store.record_rows(run, "load_transactions", &transactions).map_err(|e| e.to_string())?;
    }
    store.finish_run(run, &report.summary).map_err(|e| e.to_string())?;
    Ok(())
}
