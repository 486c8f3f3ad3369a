//! Values that source documents published, drawn as context: the
//! framework thesis's load tables were measured on a 2009 PBX on other
//! hardware at 2 to 20 calls/s, so they appear in plots and tables of
//! their own, labelled as another system's, never in a column or plot of
//! ours as if comparable.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::charts::{Chart, Series, Style};
use crate::page::{num, strings, Figure, Section, Table};
use crate::{seeds, ReportInput, SeedChart, SeedPoint};

pub(crate) fn seed_series(points: &[SeedPoint], chart: SeedChart) -> Vec<Series> {
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
pub(crate) fn seed_note(points: &[SeedPoint], charts: &[SeedChart]) -> String {
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

/// The published load measurements of other systems, as context.
pub(crate) fn published_section(input: &ReportInput) -> Section {
    let mut figures = Vec::new();
    let charts = [
        (
            SeedChart::LoadThroughput,
            "published-throughput",
            "Context: successful calls/s against call rate, published",
            "successful calls/s",
        ),
        (
            SeedChart::LoadFailed,
            "published-failed",
            "Context: failed calls against call rate, published",
            "failed calls, %",
        ),
        (
            SeedChart::LoadSetup,
            "published-setup",
            "Context: call set-up time against call rate, published",
            "call set-up time (mean), ms",
        ),
    ];
    for (kind, id, title, y) in charts {
        let s = seed_series(&input.seed_points, kind);
        if !s.is_empty() {
            let chart = Chart {
                log_y: kind == SeedChart::LoadSetup,
                ..Chart::new(id, title, "call rate offered, calls/s", y, s)
            };
            figures.push(Figure::chart(chart, seed_note(&input.seed_points, &[kind])));
        }
    }
    let rows: Vec<Vec<String>> = published_capacity(&input.seed_points, 10.0, 250.0)
        .into_iter()
        .map(|(name, source, cps)| vec![name, source, num(cps, 0)])
        .collect();
    if !rows.is_empty() {
        figures.push(Figure::table(
            Table::new(
                "Published capacities of other systems (context, not comparable with ours)",
                strings(["system (published)", "where", "calls/s"]),
                rows,
            ),
            "The highest published call rate of each system with at most 10 % of calls failed and a mean set-up time of at most 250 ms, the rule the framework thesis applies in its Table 5-7.",
        ));
    }
    Section {
        id: "published",
        title: "Context: published load measurements of other systems".into(),
        text: format!(
            "Not comparable with ours: {} measured a virtual PBX (Gintel's EasyVPaBX, on OpenSIPS) on 2009 machines \
             (the fastest an Intel Core 2 Duo at 1.73 GHz) with calls of its own scenario, at 2 to 20 calls/s; our runs ran other software on another machine. Shown for scale and \
             shape only, in plots and tables of their own.",
            seeds::FRAMEWORK_THESIS
        ),
        figures,
    }
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
}
