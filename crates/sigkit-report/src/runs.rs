//! A run's own output as report input, so that a user goes from runs to a
//! report without writing report-input JSON by hand:
//!
//! - `sigkit load --json` (a [`RunReport`](https://docs.rs/sigkit-loadgen)
//!   of summary, intervals and steps): its steps against offered load;
//! - `sigkit capacity --json`: each search's steps and the capacity found,
//!   with its confidence;
//! - a results file (`sigkit load --db`, `sigkit eval`): each run's
//!   `load_steps`, `capacity_steps`, `compression_messages`, `ran_delay`
//!   and `ran_messages` rows, the capacity in its summary and the
//!   `published_compression` rows (published figures re-measured);
//! - `sigkit analyze --json`: each SIP flow of a capture, its bytes and
//!   RAN delays per way of sending it, and each call's flow;
//! - report-input JSON ([`ReportInput`]), as before.
//!
//! An input in which none of these has anything to plot is an error: a
//! file given by mistake must not vanish from the report unnoticed.

use std::path::Path;

use serde_json::{Map, Value};
use sigkit_results::{RunId, Store};

use crate::{
    seeds, Capacity, CaptureCall, CaptureFlow, CaptureVariant, FlowCompression, LoadStep, LoadTail, RanMessageRow,
    RanRow, ReportError, ReportInput, RunMeta, SimSecond, SimStudy,
};

/// What kind of output a file held, as an error message names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// `sigkit load --json`: a run report of summary, intervals and steps.
    LoadJson,
    /// `sigkit capacity --json`: each search's steps and the estimate.
    CapacityJson,
    /// `sigkit analyze --json`: a capture's SIP flows.
    AnalyzeJson,
    /// A results file (SQLite) of `sigkit load --db` or `sigkit eval`.
    ResultsFile,
    /// Report-input JSON ([`ReportInput`]).
    ReportInput,
}

impl RunKind {
    fn name(self) -> &'static str {
        match self {
            RunKind::LoadJson => "a `sigkit load --json` output",
            RunKind::CapacityJson => "a `sigkit capacity --json` output",
            RunKind::AnalyzeJson => "a `sigkit analyze --json` output",
            RunKind::ResultsFile => "a results file",
            RunKind::ReportInput => "report-input JSON",
        }
    }
}

/// One file as report input, and what kind of file it was. Errors when it
/// holds nothing to plot.
pub fn read_run(path: &Path) -> Result<(ReportInput, RunKind), ReportError> {
    let bytes = read_bounded(path)?;
    let (part, kind) = if bytes.starts_with(b"SQLite format 3\0") {
        (from_results_file(path, None)?, RunKind::ResultsFile)
    } else {
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ReportError::Json(path.to_path_buf(), format!("neither JSON nor a results file: {e}")))?;
        let series = stem(path);
        if value.get("summary").and_then(|s| s.get("successful_calls")).is_some() {
            (from_load_json(&value, &series), RunKind::LoadJson)
        } else if value.get("searches").is_some_and(Value::is_array) {
            (from_capacity_json(&value, &series), RunKind::CapacityJson)
        } else if value.get("flows").is_some_and(Value::is_array) && value.get("capture").is_some() {
            let name = path.file_name().map_or_else(|| series.clone(), |n| n.to_string_lossy().into_owned());
            (from_analyze_json(&value, &name), RunKind::AnalyzeJson)
        } else {
            let part: ReportInput = serde_json::from_value(value).map_err(|e| {
                ReportError::Json(
                    path.to_path_buf(),
                    format!("not a load, capacity or report-input JSON ({e}); a results file is SQLite"),
                )
            })?;
            (part, RunKind::ReportInput)
        }
    };
    if part.is_empty() {
        return Err(ReportError::NothingToPlot(path.to_path_buf(), kind.name()));
    }
    let mut part = part;
    if part.runs.is_empty() && kind != RunKind::ReportInput {
        // A JSON output does not say where it was made; the file does.
        part.runs.push(RunMeta {
            kind: kind.name().trim_start_matches("a ").to_string(),
            notes: path.display().to_string(),
            ..RunMeta::default()
        });
    }
    Ok((part, kind))
}

/// The largest JSON input read: `sigkit analyze --json` of its default
/// bounds (1,000 flows, 50,000 messages) is some 200 MB, and the parsed
/// text takes a few times its size.
pub const MAX_JSON_BYTES: usize = 256 << 20;

/// A run file's bytes: a results file (SQLite) whole, since SQLite reads
/// it by pages; anything else no further than one byte past
/// [`MAX_JSON_BYTES`], refused when over.
fn read_bounded(path: &Path) -> Result<Vec<u8>, ReportError> {
    use std::io::Read;
    let io = |e| ReportError::Io(path.to_path_buf(), e);
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(io)?.take(MAX_JSON_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() > MAX_JSON_BYTES && !bytes.starts_with(b"SQLite format 3\0") {
        return Err(ReportError::Json(
            path.to_path_buf(),
            format!("over {MAX_JSON_BYTES} bytes, more than any run's JSON output"),
        ));
    }
    Ok(bytes)
}

/// Adds the published values that belong beside `input`'s data (once):
/// the framework thesis's load tables beside load steps, the SigComp
/// performance thesis's RAN delays beside a RAN-delay study and its
/// Appendix H totals beside the 3GPP video call's compression.
pub fn add_seeds(input: &mut ReportInput) {
    let mut seed = ReportInput::default();
    if !input.load_steps.is_empty() {
        seed.seed_points.extend(seeds::framework_thesis_tables());
    }
    if !input.ran.is_empty() {
        let mut rates: Vec<f64> = input.ran.iter().map(|r| r.kbps).collect();
        rates.sort_by(f64::total_cmp);
        rates.dedup();
        // An RTT no duration holds (negative, not finite, too large) has no
        // published values to draw beside it.
        if let Ok(rtt) = std::time::Duration::try_from_secs_f64(input.ran[0].rtt_ms / 1e3) {
            seed.seed_points.extend(seeds::sigcomp_thesis_ran(&rates, rtt));
        }
    }
    if input.compression.iter().any(|f| f.flow == seeds::THESIS_COMPRESSION_FLOW) {
        seed.seed_points.extend(seeds::sigcomp_thesis_compression());
    }
    input.merge(seed);
}

/// `sigkit analyze --json`: one [`CaptureFlow`] per SIP flow, one
/// [`CaptureCall`] per call. A call that does not read as one (a field of
/// the wrong type) is left out rather than failing the report.
fn from_analyze_json(report: &Value, capture: &str) -> ReportInput {
    let rtt_ms = f(&report["settings"], "rtt_ms");
    let flows = report["flows"].as_array().map(Vec::as_slice).unwrap_or_default();
    let opt_u = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64);
    let captures = flows
        .iter()
        .map(|flow| {
            let variants = flow["variants"].as_array().map(Vec::as_slice).unwrap_or_default();
            let taroc = &flow["taroc"];
            CaptureFlow {
                capture: capture.to_string(),
                flow: format!(
                    "flow {}: {} {} <-> {}",
                    u(flow, "id"),
                    flow["protocol"].as_str().unwrap_or("?"),
                    flow["a"].as_str().unwrap_or("?"),
                    flow["b"].as_str().unwrap_or("?")
                ),
                protocol: flow["protocol"].as_str().unwrap_or_default().to_string(),
                messages: flow["messages"].as_array().map_or(0, |m| m.len() as u64),
                calls: u(flow, "calls"),
                sip_bytes: u(flow, "sip_bytes"),
                sigcomp_messages: u(&flow["sigcomp_in_capture"], "messages"),
                sigcomp_decoded: u(&flow["sigcomp_in_capture"], "decoded"),
                taroc_packets: opt_u(taroc, "packets"),
                header_bytes_before: opt_u(taroc, "header_bytes_before"),
                header_bytes_after: opt_u(taroc, "header_bytes_after"),
                taroc_mode: report["settings"]["taroc_mode"].as_str().unwrap_or_default().to_string(),
                rtt_ms,
                variants: variants
                    .iter()
                    .map(|v| CaptureVariant {
                        name: v["name"].as_str().unwrap_or_default().to_string(),
                        headers: v["headers"].as_str().unwrap_or_default().to_string(),
                        baseline: v["baseline"].as_str().unwrap_or_default().to_string(),
                        bytes: u(v, "bytes"),
                        ratio: f(v, "ratio"),
                        sent_plain: u(v, "sent_plain"),
                        ran: v["ran"]
                            .as_array()
                            .map(Vec::as_slice)
                            .unwrap_or_default()
                            .iter()
                            .map(|p| (f(p, "kbps"), f(p, "delay_s"), f(p, "improvement_pct")))
                            .collect(),
                    })
                    .collect(),
            }
        })
        .collect();
    let capture_calls = report["calls"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|call| serde_json::from_value::<CaptureCall>(call.clone()).ok())
        .map(|call| CaptureCall { capture: capture.to_string(), ..call })
        .collect();
    ReportInput { captures, capture_calls, ..ReportInput::default() }
}

fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(|| "run".to_string(), |s| s.to_string_lossy().into_owned())
}

fn f(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// A percentiles object, or its JSON text as a results file keeps it.
fn percentiles(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(other) => other.clone(),
        None => Value::Null,
    }
}

/// A load step from a `sigkit load` step row (StepReport) or summary.
fn load_step(series: &str, row: &Value, summary: bool) -> LoadStep {
    let key = |step: &'static str, sum: &'static str| if summary { sum } else { step };
    let attempted = u(row, key("attempted", "attempted_calls"));
    let successful = u(row, key("successful", "successful_calls"));
    let failed = u(row, key("failed", "failed_calls"));
    let setup = percentiles(row.get("setup_ms"));
    let has_setup = setup.get("count").and_then(Value::as_u64).unwrap_or(0) > 0;
    let p = |q: &str| if has_setup { f(&setup, q) } else { f64::NAN };
    let unfinished = match row.get("calls_in_progress").and_then(Value::as_u64) {
        Some(n) if summary => n,
        _ => attempted.saturating_sub(successful + failed),
    };
    let duration_s = if summary {
        f(row, "elapsed_s")
    } else {
        match row.get("duration_s").and_then(Value::as_f64) {
            Some(d) => d,
            None => f(row, "end_s") - f(row, "start_s"),
        }
    };
    let opt_u = |k: &str| row.get(k).and_then(Value::as_u64);
    let failures = json_object(row.get("failures"));
    let failed_5xx = match opt_u("failed_5xx") {
        Some(n) => Some(n),
        // A summary, or a step row written before steps counted 5xx: from
        // its failures by cause (`invite_503`), where it has them.
        None => failures.as_ref().filter(|_| summary).map(|m| {
            m.iter()
                .filter(|(k, _)| k.rsplit_once('_').is_some_and(|(_, c)| c.len() == 3 && c.starts_with('5')))
                .filter_map(|(_, v)| v.as_u64())
                .sum()
        }),
    };
    let tail = json_object(row.get("tail")).map(|t| {
        let t = Value::Object(t);
        LoadTail {
            start_s: f(&t, "start_s"),
            end_s: f(&t, "end_s"),
            successful: u(&t, "successful"),
            failed: u(&t, "failed"),
            unfinished: u(&t, "unfinished"),
        }
    });
    let mut step = LoadStep {
        series: series.to_string(),
        offered_cps: f(row, "offered_cps"),
        attempted,
        successful,
        failed,
        calls_per_s: f(row, "calls_per_s"),
        failed_pct: percent(failed, attempted),
        unfinished,
        unfinished_pct: percent(unfinished, attempted),
        setup_p50_ms: p("p50"),
        setup_p95_ms: p("p95"),
        setup_p99_ms: p("p99"),
        duration_s: if duration_s.is_finite() && duration_s > 0.0 { duration_s } else { 0.0 },
        retransmissions: opt_u("retransmissions"),
        timeouts: opt_u("timeouts"),
        unexpected: opt_u(if summary { "unexpected_messages" } else { "unexpected" }),
        failed_5xx,
        tail,
    };
    if !summary && step.duration_s > 0.0 {
        step.calls_per_s = successful as f64 / step.duration_s;
    }
    step
}

/// An object, or its JSON text as a results file keeps it.
fn json_object(v: Option<&Value>) -> Option<Map<String, Value>> {
    match v {
        Some(Value::Object(m)) => Some(m.clone()),
        Some(Value::String(s)) => serde_json::from_str(s).ok(),
        _ => None,
    }
}

/// A run's load steps from its step rows, each step's rate over its own
/// duration. Rows written before steps recorded their duration took the
/// last step to the run's end (the time the run waited for late calls
/// counted in), so there the last step is given the step before it's
/// length, the steps of a stepped run being equally long.
fn load_steps(series: &str, rows: &[Value]) -> Vec<LoadStep> {
    let mut steps: Vec<LoadStep> = rows.iter().map(|r| load_step(series, r, false)).collect();
    let recorded = rows.iter().any(|r| r.get("duration_s").is_some());
    let n = steps.len();
    if !recorded && n >= 2 && steps[n - 2].duration_s > 0.0 && steps[n - 1].duration_s > steps[n - 2].duration_s {
        let d = steps[n - 2].duration_s;
        let last = &mut steps[n - 1];
        last.duration_s = d;
        last.calls_per_s = last.successful as f64 / d;
    }
    steps
}

/// A `sigkit sim` run of a results file: its scenario (the run's
/// configuration), its study (the summary) and its `sim_seconds` rows,
/// averaged over the seeds second by second.
fn sim_study(scenario: &Value, study: &Value, seconds: &[Value]) -> SimStudy {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    // [min, mean, max] across seeds: the mean.
    let mean = |k: &str| study.get(k).and_then(|v| v.get(1)).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let mut by_t: std::collections::BTreeMap<u64, (SimSecond, f64)> = std::collections::BTreeMap::new();
    for r in seconds {
        let t = u(r, "t");
        let (sum, n) = by_t.entry(t).or_insert_with(|| (SimSecond { t: t as f64, ..SimSecond::default() }, 0.0));
        sum.started += f(r, "started");
        sum.goodput += f(r, "goodput");
        sum.uac_pending += f(r, "uac_pending");
        *n += 1.0;
    }
    SimStudy {
        scenario: text(study, "scenario"),
        description: text(scenario, "description"),
        seeds: u(study, "seeds"),
        collapsed: u(study, "collapsed"),
        window_ok_ratio: mean("window_ok_ratio"),
        window_goodput: f(study, "window_goodput_mean"),
        frpd_p95_s: mean("frpd_p95"),
        seconds: by_t
            .into_values()
            .map(|(s, n)| SimSecond {
                t: s.t,
                started: s.started / n,
                goodput: s.goodput / n,
                uac_pending: s.uac_pending / n,
            })
            .collect(),
    }
}

/// `part` as a percentage of `whole` (0 for an empty whole).
fn percent(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        part as f64 / whole as f64 * 100.0
    } else {
        0.0
    }
}

/// A UAS answers what it is sent: it has no offered load to plot against.
fn is_uac(summary: &Value) -> bool {
    summary.get("role").and_then(Value::as_str) != Some("uas")
}

fn from_load_json(report: &Value, series: &str) -> ReportInput {
    let summary = &report["summary"];
    let mut input = ReportInput::default();
    if !is_uac(summary) {
        return input;
    }
    let steps = report.get("steps").and_then(Value::as_array).filter(|s| !s.is_empty());
    input.load_steps = match steps {
        Some(steps) => load_steps(series, steps),
        None => vec![load_step(series, summary, true)],
    };
    input
}

/// The steps of each search (`searches[i].steps`: [step, verdict] pairs,
/// or rows with a `search` column) and the capacity with its confidence.
fn capacity_steps(series: &str, search: usize, steps: &[Value]) -> Vec<LoadStep> {
    steps
        .iter()
        .map(|s| {
            let r = s.get(0).unwrap_or(s);
            let attempted = u(r, "attempted");
            let failed = u(r, "failed");
            let successful = u(r, "successful");
            let unfinished = attempted.saturating_sub(successful + failed);
            LoadStep {
                series: format!("{series}, search {search}"),
                offered_cps: f(r, "offered_cps"),
                attempted,
                successful,
                failed,
                // A step offers attempted calls at offered_cps; the
                // successful ones are served at the same share of it.
                calls_per_s: f(r, "offered_cps") * successful as f64 / attempted.max(1) as f64,
                failed_pct: percent(failed, attempted),
                unfinished,
                unfinished_pct: percent(unfinished, attempted),
                setup_p50_ms: f64::NAN,
                setup_p95_ms: f(r, "setup_p95_ms"),
                setup_p99_ms: f64::NAN,
                ..LoadStep::default()
            }
        })
        .collect()
}

/// The capacity of a `sigkit capacity` report (`estimate`, `target`,
/// `service_level`).
fn capacity(report: &Value, target: &str) -> Option<Capacity> {
    let e = report.get("estimate").filter(|e| e.is_object())?;
    Some(Capacity {
        target: report.get("target").and_then(Value::as_str).unwrap_or(target).to_string(),
        service_level: report
            .get("service_level")
            .and_then(Value::as_str)
            .unwrap_or("at most 10 % failed calls, p95 set-up delay at most 250 ms")
            .to_string(),
        calls_per_s: f(e, "mean_cps"),
        ci95_calls_per_s: e.get("ci95_cps").and_then(Value::as_f64),
        searches: u(e, "repetitions") as u32,
        max_deviation_pct: e.get("max_deviation").and_then(Value::as_f64).map(|d| d * 100.0),
    })
}

fn from_capacity_json(report: &Value, series: &str) -> ReportInput {
    let mut input = ReportInput::default();
    for (i, search) in report["searches"].as_array().into_iter().flatten().enumerate() {
        let steps = search.get("steps").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        input.load_steps.extend(capacity_steps(series, i + 1, steps));
    }
    input.capacity = capacity(report, series);
    input
}

fn values(rows: Vec<Map<String, Value>>) -> Vec<Value> {
    rows.into_iter().map(Value::Object).collect()
}

/// "YYYY-MM-DD HH:MM:SS UTC" of seconds since the Unix epoch.
fn utc(secs: f64) -> String {
    let secs = secs.max(0.0) as u64;
    let (y, m, d) = crate::sources::civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem / 60 % 60, rem % 60)
}

fn machine(m: &Value) -> String {
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    format!("{} ({}, {} CPUs)", s("hostname"), s("cpu_model"), u(m, "cores"))
}

/// A run's configuration in one line: its scalar settings as `key value`,
/// and its objects' scalar members as `key.member value` (a report's own
/// naming keys, title and series, left out: the page shows them).
fn config_summary(config: &Value) -> String {
    let Some(map) = config.as_object() else { return String::new() };
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let mut parts = Vec::new();
    for (k, v) in map {
        if matches!(k.as_str(), "title" | "series" | "capacity_series" | "description") {
            continue;
        }
        match v {
            Value::Object(inner) => {
                let members: Vec<String> =
                    inner.iter().filter_map(|(m, v)| scalar(v).map(|s| format!("{m} {s}"))).collect();
                if !members.is_empty() && members.len() <= 6 {
                    parts.push(format!("{k}: {}", members.join(", ")));
                }
            }
            other => {
                if let Some(s) = scalar(other).filter(|s| s.len() <= 80) {
                    parts.push(format!("{k} {s}"));
                }
            }
        }
    }
    parts.join("; ")
}

/// One run of a results file (`sigkit eval` reports the run it made).
pub fn read_results_run(path: &Path, run: RunId) -> Result<ReportInput, ReportError> {
    let input = from_results_file(path, Some(run))?;
    if input.is_empty() {
        return Err(ReportError::NothingToPlot(path.to_path_buf(), RunKind::ResultsFile.name()));
    }
    Ok(input)
}

/// Every run of a results file (or only `only`) that has something to plot.
fn from_results_file(path: &Path, only: Option<RunId>) -> Result<ReportInput, ReportError> {
    let store_error = |e: sigkit_results::StoreError| ReportError::Json(path.to_path_buf(), e.to_string());
    // Read only: a report changes no file, and the reader's bounds apply
    // (sigkit_results::MAX_ROWS_READ, MAX_VALUE_BYTES).
    let store = Store::open_read_only(path).map_err(store_error)?;
    let tables = store.tables().map_err(store_error)?;
    let mut runs = store.runs().map_err(store_error)?;
    runs.retain(|r| only.is_none_or(|id| r.id == id));
    let rows = |table: &str, run: RunId| -> Result<Vec<Value>, ReportError> {
        if tables.iter().any(|t| t == table) {
            Ok(values(store.rows(table, Some(run)).map_err(store_error)?))
        } else {
            Ok(Vec::new())
        }
    };
    let file = stem(path);
    let mut input = ReportInput::default();
    for run in &runs {
        let summary = run.summary.clone().unwrap_or(Value::Null);
        // A run names its own series (`sigkit eval` does); otherwise the
        // file's name tells runs of several files apart, and the run's id
        // several runs of one file.
        let series = match run.config.get("series").and_then(Value::as_str) {
            Some(s) => s.to_string(),
            None if runs.len() == 1 => file.clone(),
            None => format!("{file} #{}", run.id),
        };
        let mut part = ReportInput::default();
        if run.kind == "load" || !rows("load_steps", run.id)?.is_empty() {
            let steps = rows("load_steps", run.id)?;
            if !steps.is_empty() {
                part.load_steps = load_steps(&series, &steps);
            } else if summary.get("successful_calls").is_some() && is_uac(&summary) {
                part.load_steps = vec![load_step(&series, &summary, true)];
            }
        }
        if run.kind == "sim" {
            part.sim.push(sim_study(&run.config, &summary, &rows("sim_seconds", run.id)?));
        }
        let capacity_rows = rows("capacity_steps", run.id)?;
        let capacity_series = run.config.get("capacity_series").and_then(Value::as_str).unwrap_or("capacity search");
        let mut searches: Vec<u64> = capacity_rows.iter().map(|r| u(r, "search")).collect();
        searches.dedup();
        for search in searches {
            let steps: Vec<Value> = capacity_rows.iter().filter(|r| u(r, "search") == search).cloned().collect();
            part.load_steps.extend(capacity_steps(capacity_series, search as usize, &steps));
        }
        if run.kind == "capacity" {
            part.capacity = capacity(&summary, &series);
        } else if let Some(c) = summary.get("capacity") {
            part.capacity = capacity(c, capacity_series);
        }
        let mut compression: Vec<FlowCompression> = Vec::new();
        for m in rows("compression_messages", run.id)? {
            let text = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let (flow, algorithm, mechanism) = (text("flow"), text("algorithm"), text("mechanism"));
            let i = match compression
                .iter()
                .position(|c| c.flow == flow && c.algorithm == algorithm && c.mechanism == mechanism)
            {
                Some(i) => i,
                None => {
                    compression.push(FlowCompression { flow, algorithm, mechanism, messages: Vec::new() });
                    compression.len() - 1
                }
            };
            compression[i].messages.push((text("message"), u(&m, "uncompressed"), u(&m, "sigcomp")));
        }
        part.compression = compression;
        for r in rows("ran_delay", run.id)? {
            part.ran.push(
                serde_json::from_value::<RanRow>(r)
                    .map_err(|e| ReportError::Json(path.to_path_buf(), format!("run {}: ran_delay: {e}", run.id)))?,
            );
        }
        for r in rows("ran_messages", run.id)? {
            part.ran_messages
                .push(serde_json::from_value::<RanMessageRow>(r).map_err(|e| {
                    ReportError::Json(path.to_path_buf(), format!("run {}: ran_messages: {e}", run.id))
                })?);
        }
        for r in rows("published_compression", run.id)? {
            part.published_compression.push(serde_json::from_value(r).map_err(|e| {
                ReportError::Json(path.to_path_buf(), format!("run {}: published_compression: {e}", run.id))
            })?);
        }
        if part.is_empty() {
            continue;
        }
        if part.title.is_none() {
            part.title = run.config.get("title").and_then(Value::as_str).map(str::to_string);
        }
        part.runs.push(RunMeta {
            kind: format!("{} #{}", run.kind, run.id),
            machine: machine(&run.machine),
            date: utc(run.started_at),
            command: run.command.clone(),
            config: config_summary(&run.config),
            notes: summary.get("notes").and_then(Value::as_str).unwrap_or_default().to_string(),
            warnings: summary
                .get("warnings")
                .and_then(Value::as_array)
                .map(|w| w.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
        });
        input.merge(part);
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_without_a_final_answer_are_unfinished_not_successful_nor_failed() {
        let report = serde_json::json!({
            "summary": {"role": "uac", "successful_calls": 70, "failed_calls": 10, "attempted_calls": 100,
                        "calls_in_progress": 20, "offered_cps": 50.0, "calls_per_s": 35.0},
            "steps": [
                {"offered_cps": 25.0, "attempted": 50, "successful": 50, "failed": 0, "calls_per_s": 25.0},
                {"offered_cps": 50.0, "attempted": 50, "successful": 20, "failed": 10, "calls_per_s": 10.0},
            ],
        });
        let steps = from_load_json(&report, "run").load_steps;
        assert_eq!(steps.iter().map(|s| s.unfinished).collect::<Vec<_>>(), [0, 20]);
        assert_eq!(steps[1].unfinished_pct, 40.0);
        assert_eq!(steps[1].failed_pct, 20.0);

        // Without steps the summary is the one step, and its own count of
        // calls in progress is the unfinished one.
        let summary_only = serde_json::json!({"summary": report["summary"]});
        let steps = from_load_json(&summary_only, "run").load_steps;
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].unfinished, 20);
    }

    #[test]
    fn a_steps_rate_is_over_its_own_duration_in_old_files_too() {
        // Written before steps recorded their duration: the last step's
        // end was the run's end, 10 s after its 3 s of calls.
        let old = serde_json::json!({
            "summary": {"role": "uac", "successful_calls": 5988, "attempted_calls": 6000},
            "steps": [
                {"offered_cps": 1000.0, "start_s": 0.0, "end_s": 3.0, "attempted": 3000, "successful": 3000,
                 "failed": 0, "calls_per_s": 1000.0},
                {"offered_cps": 1000.0, "start_s": 3.0, "end_s": 16.0, "attempted": 3000, "successful": 2988,
                 "failed": 12, "calls_per_s": 229.8},
            ],
        });
        let steps = from_load_json(&old, "run").load_steps;
        assert_eq!(steps[1].duration_s, 3.0);
        assert!((steps[1].calls_per_s - 996.0).abs() < 1e-9, "{}", steps[1].calls_per_s);
        assert_eq!(steps[1].retransmissions, None, "not recorded");

        // A current row: its duration, causes, and the tail as a results
        // file keeps it (JSON text).
        let new = serde_json::json!({
            "summary": {"role": "uac", "successful_calls": 2988, "attempted_calls": 3000},
            "steps": [{"offered_cps": 1000.0, "start_s": 12.0, "end_s": 15.0, "duration_s": 3.0, "attempted": 3000,
                "successful": 2988, "failed": 12, "calls_per_s": 996.0, "retransmissions": 40, "timeouts": 10,
                "unexpected": 0, "failed_5xx": 2,
                "tail": "{\"start_s\":15.0,\"end_s\":25.0,\"successful\":30,\"failed\":12,\"unfinished\":0}"}],
        });
        let s = &from_load_json(&new, "run").load_steps[0];
        assert_eq!((s.duration_s, s.calls_per_s), (3.0, 996.0));
        assert_eq!((s.retransmissions, s.timeouts, s.unexpected, s.failed_5xx), (Some(40), Some(10), Some(0), Some(2)));
        assert_eq!(s.tail.as_ref().map(|t| (t.start_s, t.end_s, t.successful)), Some((15.0, 25.0, 30)));
    }
}
