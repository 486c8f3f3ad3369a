//! The page: sections of figures (a plot and the table of its numbers)
//! built from a [`ReportInput`], written as one HTML file.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::charts::{Chart, Series, Style};
use crate::{seeds, LoadStep, RanMethod, RanRow, ReportInput, SeedChart, SeedPoint};

pub(crate) struct Table {
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

pub(crate) struct Figure {
    pub chart: Option<Chart>,
    pub text: String,
    pub table: Option<Table>,
}

pub(crate) struct Section {
    pub id: &'static str,
    pub title: String,
    pub text: String,
    pub figures: Vec<Figure>,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

pub(crate) fn strings<const N: usize>(a: [&str; N]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A number with `d` decimals, or empty for NaN.
pub(crate) fn num(v: f64, d: usize) -> String {
    if v.is_finite() {
        format!("{v:.d$}")
    } else {
        String::new()
    }
}

/// A file-name-safe id.
fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

fn seed_series(points: &[SeedPoint], chart: SeedChart) -> Vec<Series> {
    let mut by_series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut order = Vec::new();
    for p in points.iter().filter(|p| p.chart == chart) {
        if !by_series.contains_key(&p.series) {
            order.push(p.series.clone());
        }
        by_series.entry(p.series.clone()).or_default().push((p.x, p.y));
    }
    order
        .into_iter()
        .map(|name| {
            let mut pts = by_series.remove(&name).unwrap_or_default();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series::new(name, Style::Published, pts)
        })
        .collect()
}

/// The sources of the seed points drawn in `charts`: each document named
/// once, then its series with where in it each comes from.
fn seed_note(points: &[SeedPoint], charts: &[SeedChart]) -> String {
    let mut docs: Vec<(String, Vec<String>)> = Vec::new();
    for p in points.iter().filter(|p| charts.contains(&p.chart)) {
        let mut line = format!("{}: {}", p.series, p.source);
        if p.approximate {
            line.push_str(" (approximate, from the text)");
        }
        if !p.note.is_empty() {
            let _ = write!(line, "; {}", p.note);
        }
        match docs.iter_mut().find(|d| d.0 == p.seed) {
            Some(d) if !d.1.contains(&line) => d.1.push(line),
            Some(_) => {}
            None => docs.push((p.seed.clone(), vec![line])),
        }
    }
    if docs.is_empty() {
        return String::new();
    }
    let docs: Vec<String> = docs.into_iter().map(|(seed, lines)| format!("{seed}: {}", lines.join(". "))).collect();
    format!("Squares: published values, from {}.", docs.join(". From "))
}

pub(crate) fn sections(input: &ReportInput) -> Vec<Section> {
    let mut out = Vec::new();
    if !input.load_steps.is_empty() {
        out.push(load_section(input));
    }
    if input.capacity.is_some() || input.seed_points.iter().any(|p| p.chart == SeedChart::LoadFailed) {
        if let Some(s) = capacity_section(input) {
            out.push(s);
        }
    }
    if !input.compression.is_empty() {
        out.push(compression_section(input));
    }
    if !input.ran.is_empty() {
        out.push(ran_section(input));
    }
    if !input.sim.is_empty() {
        out.push(crate::sim::sim_section(&input.sim));
    }
    if !input.captures.is_empty() {
        out.push(crate::capture::capture_section(&input.captures));
    }
    out
}

fn load_series(steps: &[LoadStep]) -> Vec<(String, Vec<&LoadStep>)> {
    let mut out: Vec<(String, Vec<&LoadStep>)> = Vec::new();
    for s in steps {
        let name = if s.series.is_empty() { "load".to_string() } else { s.series.clone() };
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(s),
            None => out.push((name, vec![s])),
        }
    }
    for (_, v) in &mut out {
        v.sort_by(|a, b| a.offered_cps.total_cmp(&b.offered_cps));
    }
    out
}

/// A set-up delay percentile: its name and where a step keeps it.
type Percentile = (&'static str, fn(&LoadStep) -> f64);

/// A run's name and its steps by offered rate.
type LoadSeries<'a> = (String, Vec<&'a LoadStep>);

/// Series of load steps grouped by scale: a series whose highest offered
/// rate is within 5× of a group's joins it, others start their own (a
/// load run at hundreds of calls/s beside a capacity search at tens of
/// thousands would otherwise be a dot in the corner).
fn load_scales<'a>(series: &'a [LoadSeries<'a>]) -> Vec<Vec<&'a LoadSeries<'a>>> {
    let top = |s: &LoadSeries| s.1.iter().map(|x| x.offered_cps).fold(0.0, f64::max).max(1e-9);
    let mut groups: Vec<(f64, Vec<&LoadSeries>)> = Vec::new();
    for s in series {
        let t = top(s);
        match groups.iter_mut().find(|g| t / g.0 < 5.0 && g.0 / t < 5.0) {
            Some(g) => g.1.push(s),
            None => groups.push((t, vec![s])),
        }
    }
    groups.into_iter().map(|g| g.1).collect()
}

fn load_section(input: &ReportInput) -> Section {
    let series = load_series(&input.load_steps);
    let scales = load_scales(&series);
    let chart = |id: String, title: String, y: &str, series: Vec<Series>| Chart {
        id,
        title,
        x_label: "offered load, calls/s".into(),
        y_label: y.to_string(),
        log_x: false,
        integer_x: false,
        legend_left: true,
        // A series with no value (a capacity search keeps no p50) has no
        // place in the legend.
        series: series.into_iter().filter(|s| !s.points.is_empty()).collect(),
    };
    let mut figures = Vec::new();
    for (k, group) in scales.iter().enumerate() {
        let max_offered = group.iter().flat_map(|s| s.1.iter()).map(|s| s.offered_cps).fold(0.0, f64::max);
        let mut throughput =
            vec![Series::new("offered = served", Style::Reference, vec![(0.0, 0.0), (max_offered, max_offered)])];
        let mut failed = Vec::new();
        let mut setup = Vec::new();
        let many = group.len() > 1;
        for (name, steps) in group.iter().map(|s| (&s.0, &s.1)) {
            let label = |what: &str| if many { format!("{what} ({name})") } else { what.to_string() };
            throughput.push(Series::new(
                label("successful calls/s"),
                Style::Line,
                steps.iter().map(|s| (s.offered_cps, s.calls_per_s)).collect(),
            ));
            failed.push(Series::new(
                label("failed calls %"),
                Style::Line,
                steps.iter().map(|s| (s.offered_cps, s.failed_pct)).collect(),
            ));
            // Calls without a final answer when the run ended are lost
            // calls too; drawn only where there are some.
            if steps.iter().any(|s| s.unfinished > 0) {
                failed.push(Series::new(
                    label("unfinished calls %"),
                    Style::Line,
                    steps.iter().map(|s| (s.offered_cps, s.unfinished_pct)).collect(),
                ));
            }
            let percentiles: [Percentile; 3] =
                [("p50", |s| s.setup_p50_ms), ("p95", |s| s.setup_p95_ms), ("p99", |s| s.setup_p99_ms)];
            for (p, f) in percentiles {
                setup.push(Series::new(label(p), Style::Line, steps.iter().map(|s| (s.offered_cps, f(s))).collect()));
            }
        }
        // Several scales: each set of plots names its runs in its title.
        let (suffix, of) = if scales.len() > 1 {
            let names: Vec<&str> = group.iter().map(|s| s.0.as_str()).collect();
            (if k == 0 { String::new() } else { format!("-{}", k + 1) }, format!(": {}", runs_title(&names)))
        } else {
            (String::new(), String::new())
        };
        figures.push(Figure {
            chart: Some(chart(
                format!("load-throughput{suffix}"),
                format!("Throughput against offered load{of}"),
                "successful calls/s",
                throughput,
            )),
            text: String::new(),
            table: None,
        });
        figures.push(Figure {
            chart: Some(chart(
                format!("load-failed{suffix}"),
                format!("Failed and unfinished calls against offered load{of}"),
                "calls, % of attempted",
                failed,
            )),
            text: String::new(),
            table: None,
        });
        figures.push(Figure {
            chart: Some(chart(
                format!("load-setup{suffix}"),
                format!("Call set-up delay against offered load{of}"),
                "set-up delay (INVITE to 200 OK), ms",
                setup,
            )),
            text: String::new(),
            table: None,
        });
    }
    let calls_table = Table {
        head: strings([
            "run",
            "offered calls/s",
            "attempted",
            "successful",
            "failed",
            "unfinished",
            "successful calls/s",
            "failed %",
        ]),
        rows: series
            .iter()
            .flat_map(|(name, steps)| {
                steps.iter().map(move |s| {
                    vec![
                        name.clone(),
                        num(s.offered_cps, 1),
                        s.attempted.to_string(),
                        s.successful.to_string(),
                        s.failed.to_string(),
                        s.unfinished.to_string(),
                        num(s.calls_per_s, 1),
                        num(s.failed_pct, 2),
                    ]
                })
            })
            .collect(),
    };
    let setup_table = Table {
        head: strings(["run", "offered calls/s", "set-up p50 ms", "p95 ms", "p99 ms"]),
        rows: series
            .iter()
            .flat_map(|(name, steps)| {
                steps.iter().map(move |s| {
                    vec![
                        name.clone(),
                        num(s.offered_cps, 1),
                        num(s.setup_p50_ms, 2),
                        num(s.setup_p95_ms, 2),
                        num(s.setup_p99_ms, 2),
                    ]
                })
            })
            .collect(),
    };
    figures.push(Figure { chart: None, text: String::new(), table: Some(calls_table) });
    figures.push(Figure {
        chart: None,
        text: "Set-up delay: from the INVITE sent to its 200 OK received, percentiles over the step's successful calls (a capacity search keeps the 95th only).".into(),
        table: Some(setup_table),
    });
    // The published measurements, in plots of their own: their rates (2
    // to 20 calls/s) are far below what a current machine serves.
    let published = [
        (
            SeedChart::LoadThroughput,
            "published-throughput",
            "Published: successful calls/s against call rate",
            "successful calls/s",
        ),
        (SeedChart::LoadFailed, "published-failed", "Published: failed calls against call rate", "failed calls, %"),
        (
            SeedChart::LoadSetup,
            "published-setup",
            "Published: call set-up time against call rate",
            "call set-up time (mean), ms",
        ),
    ];
    for (kind, id, title, y) in published {
        let s = seed_series(&input.seed_points, kind);
        if !s.is_empty() {
            figures.push(Figure {
                chart: Some(chart(id.to_string(), title.to_string(), y, s)),
                text: seed_note(&input.seed_points, &[kind]),
                table: None,
            });
        }
    }
    Section {
        id: "load",
        title: "Load".into(),
        text: "Each step offers calls at a constant rate; a call is successful when it is set up and released.".into(),
        figures,
    }
}

/// The highest rate of each published series within `max_failed_pct`
/// and `max_setup_ms` (the framework thesis's reading of its Table 5-7).
fn published_capacity(points: &[SeedPoint], max_failed_pct: f64, max_setup_ms: f64) -> Vec<(String, String, f64)> {
    let mut out = Vec::new();
    for s in seed_series(points, SeedChart::LoadFailed) {
        let setup = points.iter().filter(|p| p.chart == SeedChart::LoadSetup && p.series == s.name);
        let source = points
            .iter()
            .find(|p| p.chart == SeedChart::LoadFailed && p.series == s.name)
            .map(|p| p.source.clone())
            .unwrap_or_default();
        let best = s
            .points
            .iter()
            .filter(|(x, f)| *f <= max_failed_pct && setup.clone().any(|p| p.x == *x && p.y <= max_setup_ms))
            .map(|p| p.0)
            .fold(f64::NAN, f64::max);
        if best.is_finite() {
            out.push((s.name.clone(), source, best));
        }
    }
    out
}

fn capacity_section(input: &ReportInput) -> Option<Section> {
    let mut rows = Vec::new();
    if let Some(c) = &input.capacity {
        rows.push(vec![
            c.target.clone(),
            num(c.calls_per_s, 1),
            c.ci95_calls_per_s.map_or(String::new(), |h| format!("± {h:.1}")),
            c.max_deviation_pct.map_or(String::new(), |d| format!("± {d:.1} %")),
            c.searches.to_string(),
            c.service_level.clone(),
        ]);
    }
    for (name, source, cps) in published_capacity(&input.seed_points, 10.0, 250.0) {
        rows.push(vec![
            format!("{name} (published, {source})"),
            num(cps, 0),
            String::new(),
            String::new(),
            String::new(),
            "at most 10 % failed, mean set-up time at most 250 ms (published steps)".into(),
        ]);
    }
    if rows.is_empty() {
        return None;
    }
    Some(Section {
        id: "capacity",
        title: "Capacity".into(),
        text: format!("The highest call rate served within the service level. Published rows apply the same rule to the steps that {} published (the load section's published plots).", seeds::FRAMEWORK_THESIS),
        figures: vec![Figure { chart: None, text: String::new(), table: Some(Table { head: strings(["system", "calls/s", "95 % CI", "spread", "searches", "service level"]), rows }) }],
    })
}

fn compression_section(input: &ReportInput) -> Section {
    let mut flows: Vec<(&str, Vec<&crate::FlowCompression>)> = Vec::new();
    for f in &input.compression {
        match flows.iter_mut().find(|(n, _)| *n == f.flow) {
            Some((_, v)) => v.push(f),
            None => flows.push((&f.flow, vec![f])),
        }
    }
    let algorithms: std::collections::BTreeSet<&str> = input.compression.iter().map(|f| f.algorithm.as_str()).collect();
    let mut figures = Vec::new();
    for (flow, runs) in flows {
        let name = |f: &crate::FlowCompression| {
            if algorithms.len() > 1 {
                format!("{} {}", f.algorithm, f.mechanism)
            } else {
                f.mechanism.clone()
            }
        };
        let first = runs[0];
        let mut series = vec![Series::new(
            "original",
            Style::Line,
            first.messages.iter().enumerate().map(|(i, m)| ((i + 1) as f64, m.1 as f64)).collect(),
        )];
        for f in &runs {
            series.push(Series::new(
                name(f),
                Style::Line,
                f.messages.iter().enumerate().map(|(i, m)| ((i + 1) as f64, m.2 as f64)).collect(),
            ));
        }
        let mut head = strings(["#", "message", "original bytes"]);
        head.extend(runs.iter().map(|f| format!("{} bytes", name(f))));
        let mut rows: Vec<Vec<String>> = first
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let mut row = vec![(i + 1).to_string(), m.0.clone(), m.1.to_string()];
                row.extend(runs.iter().map(|f| f.messages.get(i).map_or(String::new(), |m| m.2.to_string())));
                row
            })
            .collect();
        let total =
            |f: &crate::FlowCompression, pick: fn(&(String, u64, u64)) -> u64| f.messages.iter().map(pick).sum::<u64>();
        let original = total(first, |m| m.1);
        let mut row = vec![String::new(), "total (ratio)".into(), original.to_string()];
        row.extend(runs.iter().map(|f| {
            let c = total(f, |m| m.2);
            format!("{c} ({:.3})", c as f64 / original.max(1) as f64)
        }));
        rows.push(row);
        let thesis: Vec<&SeedPoint> = input
            .seed_points
            .iter()
            .filter(|p| p.chart == SeedChart::CompressionTotal && flow == seeds::THESIS_COMPRESSION_FLOW)
            .collect();
        let per_message = Figure {
            chart: Some(Chart {
                id: format!("compression-{}", slug(flow)),
                title: format!("{flow}: bytes per message"),
                x_label: "message number in the flow".into(),
                y_label: "bytes".into(),
                log_x: false,
                integer_x: true,
                legend_left: false,
                series,
            }),
            text: String::new(),
            table: Some(Table { head, rows }),
        };
        figures.push(per_message);
        if !thesis.is_empty() {
            figures.push(compression_against_thesis(flow, &runs, &thesis));
        }
    }
    Section {
        id: "compression",
        title: "Compression per message".into(),
        text: "Each flow between two in-process SigComp endpoints (a UE and a P-CSCF), the original SIP message against the SigComp message as sent, per mechanism.".into(),
        figures,
    }
}

/// The flow's cumulative SigComp bytes per mechanism (of its first
/// algorithm) with the published totals at the published message count,
/// each in its mechanism's colour, and a table of the totals.
fn compression_against_thesis(flow: &str, runs: &[&crate::FlowCompression], thesis: &[&SeedPoint]) -> Figure {
    let algorithm = runs[0].algorithm.as_str();
    let ours: Vec<&crate::FlowCompression> = runs.iter().copied().filter(|f| f.algorithm == algorithm).collect();
    let cumulative = |pick: fn(&(String, u64, u64)) -> u64, f: &crate::FlowCompression| -> Vec<(f64, f64)> {
        let mut total = 0;
        f.messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                total += pick(m);
                ((i + 1) as f64, total as f64)
            })
            .collect()
    };
    let mut series = vec![Series::new("original SIP", Style::Line, cumulative(|m| m.1, ours[0])).colored(0)];
    let mut rows = Vec::new();
    for (i, f) in ours.iter().enumerate() {
        let color = i + 1;
        series.push(Series::new(format!("{} (ours)", f.mechanism), Style::Line, cumulative(|m| m.2, f)).colored(color));
        if let Some(p) = thesis.iter().find(|p| p.series == f.mechanism) {
            series.push(
                Series::new(format!("{} (thesis, Appendix H)", f.mechanism), Style::Published, vec![(p.x, p.y)])
                    .colored(color),
            );
            let n = p.x as usize;
            let our_total: u64 = f.messages.iter().take(n).map(|m| m.2).sum();
            rows.push(vec![
                f.mechanism.clone(),
                n.to_string(),
                our_total.to_string(),
                num(p.y, 0),
                format!("{:+.1} %", (our_total as f64 / p.y - 1.0) * 100.0),
            ]);
        }
    }
    let note = thesis.first().map_or(String::new(), |p| {
        format!(
            "Squares: {}, {} ({}), total SigComp bytes of the first {} messages, in the colour of the same mechanism's line. Ours: {algorithm}, the settings of the runs above.",
            p.seed, p.source, p.note, p.x
        )
    });
    Figure {
        chart: Some(Chart {
            id: format!("compression-{}-cumulative", slug(flow)),
            title: format!("{flow}: cumulative bytes sent, ours and the thesis's"),
            x_label: "message number in the flow".into(),
            y_label: "bytes sent so far".into(),
            log_x: false,
            integer_x: true,
            legend_left: true,
            series,
        }),
        text: note,
        table: Some(Table {
            head: strings([
                "mechanism",
                "messages",
                "ours, SigComp bytes",
                "thesis, SigComp bytes",
                "ours against thesis",
            ]),
            rows,
        }),
    }
}

fn ran_label(r: &RanRow, what: &str) -> String {
    match r.method {
        RanMethod::Calculated => format!("{what}, eq. 2.1 (RTT {} ms)", trim_ms(r.rtt_ms)),
        RanMethod::Measured => format!("{what}, measured (RTT {} ms)", trim_ms(r.rtt_ms)),
    }
}

fn trim_ms(v: f64) -> String {
    num(v, if (v - v.round()).abs() < 1e-9 { 0 } else { 1 })
}

fn ran_section(input: &ReportInput) -> Section {
    // Our rows, one line per (method, RTT).
    let mut groups: Vec<(RanMethod, f64, Vec<&RanRow>)> = Vec::new();
    for r in &input.ran {
        match groups.iter_mut().find(|g| g.0 == r.method && g.1 == r.rtt_ms) {
            Some(g) => g.2.push(r),
            None => groups.push((r.method, r.rtt_ms, vec![r])),
        }
    }
    for g in &mut groups {
        g.2.sort_by(|a, b| a.kbps.total_cmp(&b.kbps));
    }
    let style = |m: RanMethod| if m == RanMethod::Measured { Style::Measured } else { Style::Line };
    let mut delay = Vec::new();
    let mut saved = Vec::new();
    let mut reduction = Vec::new();
    for (method, _, rows) in &groups {
        let r0 = rows[0];
        delay.push(Series::new(
            ran_label(r0, "SIP"),
            style(*method),
            rows.iter().map(|r| (r.kbps, r.sip_delay_s)).collect(),
        ));
        delay.push(Series::new(
            ran_label(r0, "SigComp"),
            style(*method),
            rows.iter().map(|r| (r.kbps, r.sigcomp_delay_s)).collect(),
        ));
        saved.push(Series::new(
            ran_label(r0, "saved"),
            style(*method),
            rows.iter().map(|r| (r.kbps, r.improvement_s)).collect(),
        ));
        reduction.push(Series::new(
            ran_label(r0, "saved"),
            style(*method),
            rows.iter().map(|r| (r.kbps, r.improvement_pct)).collect(),
        ));
    }
    delay.extend(seed_series(&input.seed_points, SeedChart::RanDelay));
    saved.extend(seed_series(&input.seed_points, SeedChart::RanSaved));
    reduction.extend(seed_series(&input.seed_points, SeedChart::RanReduction));
    let chart = |id: &str, title: &str, y: &str, series| Chart {
        id: id.to_string(),
        title: title.to_string(),
        x_label: "signalling link bit rate, kbit/s (log scale)".into(),
        y_label: y.to_string(),
        log_x: true,
        integer_x: false,
        legend_left: false,
        series,
    };
    // The table: our rows, then the published value at the same rate for
    // each published series.
    let seed_columns: Vec<(SeedChart, String)> = {
        let mut v: Vec<(SeedChart, String)> = Vec::new();
        for p in input
            .seed_points
            .iter()
            .filter(|p| matches!(p.chart, SeedChart::RanDelay | SeedChart::RanSaved | SeedChart::RanReduction))
        {
            if !v.iter().any(|(c, s)| *c == p.chart && *s == p.series) {
                v.push((p.chart, p.series.clone()));
            }
        }
        v
    };
    let mut head = strings([
        "kbit/s",
        "method",
        "RTT ms",
        "SIP bytes",
        "SigComp bytes",
        "SIP s",
        "SigComp s",
        "saved s",
        "saved %",
    ]);
    head.extend(seed_columns.iter().map(|(c, s)| {
        let unit = match c {
            SeedChart::RanReduction => "%",
            _ => "s",
        };
        format!("{s} {unit}")
    }));
    let rows = groups
        .iter()
        .flat_map(|g| g.2.iter())
        .map(|r| {
            let mut row = vec![
                trim_ms(r.kbps),
                r.method.name().to_string(),
                trim_ms(r.rtt_ms),
                r.sip_bytes.to_string(),
                r.sigcomp_bytes.to_string(),
                num(r.sip_delay_s, 3),
                num(r.sigcomp_delay_s, 3),
                num(r.improvement_s, 3),
                num(r.improvement_pct, 1),
            ];
            row.extend(seed_columns.iter().map(|(c, s)| {
                input
                    .seed_points
                    .iter()
                    .find(|p| p.chart == *c && p.series == *s && (p.x - r.kbps).abs() < 1e-9)
                    .map_or(String::new(), |p| {
                        format!(
                            "{}{}",
                            if p.approximate { "≈ " } else { "" },
                            num(p.y, if *c == SeedChart::RanReduction { 0 } else { 2 })
                        )
                    })
            }));
            row
        })
        .collect();
    let mut figures = vec![
        Figure {
            chart: Some(chart(
                "ran-delay",
                "One-way RAN delay of the call's session establishment",
                "one-way RAN delay, s",
                delay,
            )),
            text: seed_note(&input.seed_points, &[SeedChart::RanDelay]),
            table: None,
        },
        Figure {
            chart: Some(chart("ran-saved", "RAN delay saved by SigComp", "saved, s", saved)),
            text: seed_note(&input.seed_points, &[SeedChart::RanSaved]),
            table: None,
        },
        Figure {
            chart: Some(chart(
                "ran-reduction",
                "RAN delay saved by SigComp, relative",
                "saved, % of the uncompressed delay",
                reduction,
            )),
            text: seed_note(&input.seed_points, &[SeedChart::RanReduction]),
            table: Some(Table { head, rows }),
        },
    ];
    if !input.ran_messages.is_empty() {
        figures.push(Figure {
            chart: None,
            text: "Per message (equation 2.1).".into(),
            table: Some(Table {
                head: strings(["kbit/s", "message", "direction", "SIP bytes", "SigComp bytes", "SIP s", "SigComp s"]),
                rows: input
                    .ran_messages
                    .iter()
                    .map(|m| {
                        vec![
                            trim_ms(m.kbps),
                            m.name.clone(),
                            m.direction.clone(),
                            m.sip_bytes.to_string(),
                            m.sigcomp_bytes.to_string(),
                            num(m.sip_delay_s, 3),
                            num(m.sigcomp_delay_s, 3),
                        ]
                    })
                    .collect(),
            }),
        });
    }
    Section {
        id: "ran",
        title: "RAN delay against bit rate".into(),
        text: format!(
            "The one-way delay the call's session-establishment messages add on the radio access network's signalling link, uncompressed and with SigComp, by equation 2.1 of {} (size × 8 / bit rate + RTT/2 per message, no lower-layer overhead){}",
            seeds::SIGCOMP_THESIS,
            if input.ran.iter().any(|r| r.method == RanMethod::Measured) {
                " and measured over an emulated link between UDP sockets. Triangles: measured."
            } else {
                "."
            }
        ),
        figures,
    }
}

fn table_html(out: &mut String, t: &Table) {
    out.push_str("<table><thead><tr>");
    for h in &t.head {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        out.push_str("<tr>");
        for c in r {
            // Numbers (with a sign, unit or ratio after them) align right,
            // names left.
            let numeric = c.trim_start_matches(['±', '≈', '+', '-', ' ']).starts_with(|ch: char| ch.is_ascii_digit());
            if numeric || c.is_empty() {
                let _ = write!(out, "<td>{}</td>", escape(c));
            } else {
                let _ = write!(out, "<td class=\"text\">{}</td>", escape(c));
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
}

const STYLE: &str = "body{font-family:'DejaVu Sans',sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}\
    h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}\
    figure{margin:1em 0}figure svg{max-width:100%;height:auto;border:1px solid #ddd}\
    table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
    td.text{text-align:left}th{text-align:center}th{background:#f4f4f4}.note{font-size:13px;color:#555}\
    #render-check{font-size:12px;color:#777}";

/// After load: every plot's SVG laid out with its lines and its text
/// measured (the browser found a font), and no script error; the result
/// goes into #render-check for a headless browser's DOM dump to read.
const CHECK: &str = r#"<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  window.addEventListener('load', function () {
    var figures = document.querySelectorAll('figure.plot');
    var bad = [];
    for (var i = 0; i < figures.length; i++) {
      var svg = figures[i].querySelector('svg');
      var box = svg ? svg.getBoundingClientRect() : null;
      var marks = svg ? svg.querySelectorAll('polyline,circle,rect,path,line').length : 0;
      var texts = svg ? svg.querySelectorAll('text') : [];
      var drawn = 0;
      for (var j = 0; j < texts.length; j++) { if (texts[j].getComputedTextLength() > 0) drawn++; }
      if (!box || box.width < 100 || box.height < 50 || marks < 5 || drawn < 3) bad.push(figures[i].id);
    }
    var out = document.getElementById('render-check');
    out.setAttribute('data-status', bad.length === 0 && errors.length === 0 ? 'ok' : 'failed');
    out.textContent = 'render check: ' + JSON.stringify({plots: figures.length, bad: bad, errors: errors});
  });
})();
</script>"#;

pub(crate) fn page(input: &ReportInput, sections: &[Section], svgs: &[String]) -> String {
    let title = input.title.clone().unwrap_or_else(|| "sigkit report".into());
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style>{CHECK}</head><body><h1>{t}</h1>",
        t = escape(&title)
    );
    out.push_str(&crate::findings::html(input));
    if !input.runs.is_empty() {
        out.push_str("<h2 id=\"runs\">Runs</h2>");
        table_html(
            &mut out,
            &Table {
                head: strings(["machine", "date", "command", "notes"]),
                rows: input
                    .runs
                    .iter()
                    .map(|r| vec![r.machine.clone(), r.date.clone(), r.command.clone(), r.notes.clone()])
                    .collect(),
            },
        );
    }
    if sections.is_empty() {
        out.push_str("<p>No section has data.</p>");
    }
    let mut svg = svgs.iter();
    for s in sections {
        let _ = write!(out, "<h2 id=\"{}\">{}</h2><p>{}</p>", s.id, escape(&s.title), escape(&s.text));
        for f in &s.figures {
            if let Some(chart) = &f.chart {
                let _ = write!(out, "<figure class=\"plot\" id=\"{}\">", escape(&chart.id));
                out.push_str(svg.next().map_or("", String::as_str));
                let _ = write!(
                    out,
                    "<figcaption class=\"note\"><a href=\"{0}.png\">{0}.png</a></figcaption></figure>",
                    escape(&chart.id)
                );
            }
            if !f.text.is_empty() {
                let _ = write!(out, "<p class=\"note\">{}</p>", escape(&f.text));
            }
            if let Some(t) = &f.table {
                table_html(&mut out, t);
            }
        }
    }
    out.push_str(&crate::reproduction::html(input));
    out.push_str("<p id=\"render-check\" data-status=\"pending\">render check: pending</p></body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_capacity_reads_the_steps_as_the_framework_thesis_did() {
        let points = seeds::framework_thesis_tables();
        let caps = published_capacity(&points, 10.0, 250.0);
        let get = |m: &str| caps.iter().find(|c| c.0 == m).map(|c| c.2);
        // Table 5-7 lists, for each configuration, the three steps around
        // its capacity; the rule picks the middle one: A 18, B 8, C 6, D 6
        // and C+D 10 calls/s.
        assert_eq!(get("Machine A"), Some(18.0));
        assert_eq!(get("Machine B"), Some(8.0));
        assert_eq!(get("Machine C"), Some(6.0));
        assert_eq!(get("Machine D"), Some(6.0));
        assert_eq!(get("Machines C, D"), Some(10.0));
    }

    #[test]
    fn names_are_escaped_and_ids_are_file_safe() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
        assert_eq!(slug("3gpp video/call"), "3gpp-video-call");
    }
}

/// A plot title's name for its runs, short enough to fit: one run's name;
/// the words several names begin with and their count ("capacity search,
/// built-in UAS (3 runs)"); else the names, cut with an ellipsis.
fn runs_title(names: &[&str]) -> String {
    const FITS: usize = 60;
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [first, rest @ ..] => {
            let mut common = first.len();
            for n in rest {
                common = first.bytes().zip(n.bytes()).take(common).take_while(|(a, b)| a == b).count();
            }
            // Back to the end of a whole clause, or else of a whole word.
            let shared = &first[..common];
            let prefix = shared.rsplit_once(',').or_else(|| shared.rsplit_once(' ')).map_or("", |(p, _)| p);
            let prefix = prefix.trim_end_matches([',', ' ', ';']);
            if prefix.len() >= 8 {
                return format!("{prefix} ({} runs)", names.len());
            }
            let all = names.join("; ");
            if all.chars().count() <= FITS {
                all
            } else {
                format!("{}…", all.chars().take(FITS).collect::<String>())
            }
        }
    }
}

#[cfg(test)]
mod runs_title_tests {
    use super::runs_title;

    #[test]
    fn several_runs_are_named_by_what_they_share() {
        let names = ["capacity search, built-in UAS, search 1", "capacity search, built-in UAS, search 2"];
        assert_eq!(runs_title(&names), "capacity search, built-in UAS (2 runs)");
        assert_eq!(runs_title(&["a load run"]), "a load run");
        let long: Vec<String> = (0..9).map(|i| format!("run number {i} of a study")).collect();
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        assert_eq!(runs_title(&long), "run number (9 runs)");
        let t = runs_title(&["alpha beta gamma delta epsilon zeta", "omega psi chi phi upsilon tau sigma rho"]);
        assert!(t.chars().count() <= 61 && t.ends_with('…'), "{t}");
    }
}
