//! The compression section: each corpus flow's messages, original and
//! as each SigComp mechanism sent them (grouped bars: the message is a
//! category), an overview across flows, and our totals beside the
//! SigComp performance thesis's for the flow it published.

use std::collections::BTreeSet;

use crate::charts::{Chart, Series, Style, MAX_SERIES};
use crate::page::{num, slug, strings, Figure, Section, Table};
use crate::{seeds, FlowCompression, ReportInput, SeedChart, SeedPoint};

/// A message's label short enough for a bar group: a response's status
/// code ("100-Trying" → "100"), a request's method.
fn short_label(label: &str) -> String {
    let first = label.split(['-', ' ']).next().unwrap_or(label);
    if first.chars().all(|c| c.is_ascii_digit()) && !first.is_empty() {
        first.to_string()
    } else {
        label.chars().take(9).collect()
    }
}

/// Messages past which a flow's bars are labelled by number only.
const NAMED_MESSAGES: usize = 16;

fn total(f: &FlowCompression, pick: fn(&(String, u64, u64)) -> u64) -> u64 {
    f.messages.iter().map(pick).sum()
}

/// One flow: its messages as grouped bars (original and each mechanism of
/// the first algorithm) and a table of every algorithm's bytes.
fn flow_figure(flow: &str, runs: &[&FlowCompression], algorithms: &BTreeSet<&str>) -> Figure {
    let name = |f: &FlowCompression| {
        if algorithms.len() > 1 {
            format!("{} {}", f.algorithm, f.mechanism)
        } else {
            f.mechanism.clone()
        }
    };
    let first = runs[0];
    let drawn: Vec<&&FlowCompression> =
        runs.iter().filter(|f| f.algorithm == first.algorithm).take(MAX_SERIES - 1).collect();
    let mut series = vec![Series::new(
        "original SIP",
        Style::Bar,
        first.messages.iter().enumerate().map(|(i, m)| (i as f64, m.1 as f64)).collect(),
    )];
    for f in &drawn {
        series.push(Series::new(
            f.mechanism.clone(),
            Style::Bar,
            f.messages.iter().enumerate().map(|(i, m)| (i as f64, m.2 as f64)).collect(),
        ));
    }
    let categories: Vec<String> = first
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| if first.messages.len() > NAMED_MESSAGES { (i + 1).to_string() } else { short_label(&m.0) })
        .collect();
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
    let original = total(first, |m| m.1);
    let mut row = vec![String::new(), "total (ratio)".into(), original.to_string()];
    row.extend(runs.iter().map(|f| {
        let c = total(f, |m| m.2);
        format!("{c} ({:.3})", c as f64 / original.max(1) as f64)
    }));
    rows.push(row);
    let more = if algorithms.len() > 1 {
        format!(" Bars: {}; the table has every algorithm.", first.algorithm)
    } else {
        String::new()
    };
    Figure::chart(
        Chart::bars(
            format!("compression-{}", slug(flow)),
            format!("{flow}: bytes per message"),
            categories,
            "message of the flow, in order",
            "bytes",
            series,
        ),
        format!("Each message of the flow, as SIP and as each mechanism sent it.{more}"),
    )
    .with_table(Table::new(format!("{flow}: bytes per message"), head, rows))
}

/// Every flow's SigComp bytes over its original bytes, one bar per
/// mechanism (of `algorithm`), or per algorithm (of `mechanism`).
fn overview(
    flows: &[(&str, Vec<&FlowCompression>)],
    id: &str,
    title: &str,
    color_from: usize,
    pick: &dyn Fn(&FlowCompression) -> Option<String>,
) -> Chart {
    let mut names: Vec<String> = Vec::new();
    for (_, runs) in flows {
        for f in runs {
            if let Some(n) = pick(f) {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
    }
    names.truncate(MAX_SERIES);
    let series = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let points = flows
                .iter()
                .enumerate()
                .filter_map(|(k, (_, runs))| {
                    let f = runs.iter().find(|f| pick(f).as_ref() == Some(n))?;
                    Some((k as f64, total(f, |m| m.2) as f64 / total(f, |m| m.1).max(1) as f64))
                })
                .collect();
            Series { color: Some(i + color_from), ..Series::new(n.clone(), Style::Bar, points) }
        })
        .collect();
    // Names that would overlap under their bars are numbered instead
    // (the note says which is which).
    let chars: usize = flows.iter().map(|(f, _)| f.chars().count() + 2).sum();
    let numbered = chars as f64 * 7.8 > 840.0;
    let categories = flows
        .iter()
        .enumerate()
        .map(|(k, (f, _))| if numbered { (k + 1).to_string() } else { f.to_string() })
        .collect();
    let x = if numbered { "flow (numbered as listed below the plot)" } else { "flow" };
    Chart::bars(id, title, categories, x, "SigComp bytes / original bytes", series)
}

/// The flows' names by their number on an overview's axis.
fn flow_key(flows: &[(&str, Vec<&FlowCompression>)]) -> String {
    let names: Vec<String> = flows.iter().enumerate().map(|(k, (f, _))| format!("{} {f}", k + 1)).collect();
    format!("Flows: {}.", names.join(", "))
}

pub(crate) fn compression_section(input: &ReportInput) -> Section {
    let mut flows: Vec<(&str, Vec<&FlowCompression>)> = Vec::new();
    for f in &input.compression {
        match flows.iter_mut().find(|(n, _)| *n == f.flow) {
            Some((_, v)) => v.push(f),
            None => flows.push((&f.flow, vec![f])),
        }
    }
    let algorithms: BTreeSet<&str> = input.compression.iter().map(|f| f.algorithm.as_str()).collect();
    let first_algorithm = input.compression[0].algorithm.clone();
    let mut figures = Vec::new();
    if flows.len() > 1 {
        let a = first_algorithm.clone();
        // Each mechanism in the colour of its bars in the flows' plots
        // (where the original takes the first).
        let title = format!("Compression ratio of each flow by mechanism ({a})");
        let chart = overview(&flows, "compression-overview", &title, 1, &|f: &FlowCompression| {
            (f.algorithm == a).then(|| f.mechanism.clone())
        });
        figures.push(Figure::chart(
            chart,
            format!("The whole flow's SigComp bytes over its SIP bytes: lower is better. {}", flow_key(&flows)),
        ));
        if algorithms.len() > 1 {
            let title = "Compression ratio of each flow by algorithm (shared mechanism)";
            let chart = overview(&flows, "compression-algorithms", title, 0, &|f: &FlowCompression| {
                (f.mechanism == "shared").then(|| f.algorithm.clone())
            });
            figures.push(Figure::chart(
                chart,
                "The same ratio for each compression algorithm, with the shared mechanism.",
            ));
        }
    }
    for (flow, runs) in &flows {
        figures.push(flow_figure(flow, runs, &algorithms));
        let thesis: Vec<&SeedPoint> = input
            .seed_points
            .iter()
            .filter(|p| p.chart == SeedChart::CompressionTotal && *flow == seeds::THESIS_COMPRESSION_FLOW)
            .collect();
        if !thesis.is_empty() {
            figures.push(against_thesis(flow, runs, &thesis));
        }
    }
    Section {
        id: "compression",
        title: "Compression per message".into(),
        text: "Each flow between two in-process SigComp endpoints (a UE and a P-CSCF), the original SIP message against the SigComp message as sent, per mechanism.".into(),
        figures,
    }
}

/// The flow's SigComp bytes per mechanism (of its first algorithm) over
/// the messages the thesis counted, ours beside the published total: the
/// same flow, message count and settings, so like for like.
fn against_thesis(flow: &str, runs: &[&FlowCompression], thesis: &[&SeedPoint]) -> Figure {
    let algorithm = runs[0].algorithm.as_str();
    let ours: Vec<&FlowCompression> = runs.iter().copied().filter(|f| f.algorithm == algorithm).collect();
    let mut rows = Vec::new();
    let (mut our_bars, mut thesis_bars, mut categories) = (Vec::new(), Vec::new(), Vec::new());
    for f in &ours {
        if let Some(p) = thesis.iter().find(|p| p.series == f.mechanism) {
            let n = p.x as usize;
            let our_total: u64 = f.messages.iter().take(n).map(|m| m.2).sum();
            let k = categories.len() as f64;
            categories.push(f.mechanism.clone());
            our_bars.push((k, our_total as f64));
            thesis_bars.push((k, p.y));
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
            "The thesis: {}, {} ({}), total SigComp bytes of the first {} messages. Ours: {algorithm}, the settings of the runs above, the same messages.",
            p.seed, p.source, p.note, p.x
        )
    });
    let n = thesis.first().map_or(0.0, |p| p.x);
    Figure::chart(
        Chart::bars(
            format!("compression-{}-cumulative", slug(flow)),
            format!("{flow}: SigComp bytes of the first {n} messages, ours and the thesis's"),
            categories,
            "mechanism",
            "SigComp bytes sent",
            vec![
                Series::new(format!("ours ({algorithm})"), Style::Bar, our_bars),
                Series::new("the thesis (Appendix H)", Style::Bar, thesis_bars),
            ],
        ),
        note,
    )
    .with_table(Table::new(
        "Totals, ours and the thesis's",
        strings(["mechanism", "messages", "ours, SigComp bytes", "thesis, SigComp bytes", "ours against thesis"]),
        rows,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirteen_series_become_bars_of_at_most_six_in_each_chart() {
        let mut compression = Vec::new();
        for flow in ["a", "b"] {
            for algorithm in ["lzss", "deflate", "lz77"] {
                for mechanism in ["basic", "static", "dynamic", "shared"] {
                    compression.push(FlowCompression {
                        flow: flow.into(),
                        algorithm: algorithm.into(),
                        mechanism: mechanism.into(),
                        messages: vec![("INVITE".into(), 900, 300), ("100-Trying".into(), 300, 40)],
                    });
                }
            }
        }
        let input = ReportInput { compression, ..ReportInput::default() };
        let section = compression_section(&input);
        let charts: Vec<&Chart> = section.figures.iter().filter_map(|f| f.chart.as_ref()).collect();
        assert_eq!(
            charts.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["compression-overview", "compression-algorithms", "compression-a", "compression-b"]
        );
        for c in &charts {
            assert!(c.data_series() <= MAX_SERIES && c.categories.is_some(), "{}", c.id);
        }
        assert_eq!(charts[2].categories.as_deref().unwrap(), ["INVITE", "100"]);
        // The table keeps all twelve.
        let table = section.figures[2].table.as_ref().unwrap();
        assert_eq!(table.head.len(), 3 + 12);
    }
}
