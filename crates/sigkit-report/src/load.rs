//! The load section: each run's steps against the offered rate
//! (throughput, failed and unfinished calls, set-up delay and, beside it,
//! what went wrong: retransmissions, timeouts, unexpected messages and
//! 5xx), each step's rate over its own duration and the run's tail apart.

use crate::charts::{wide_spread, Chart, Series, Style, MAX_SERIES};
use crate::page::{num, strings, Figure, Section, Table};
use crate::{LoadStep, ReportInput};

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

/// The offered rate as a category label ("1000").
fn rate_label(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// What went wrong in a run's steps, grouped by step (its offered rate);
/// None for a run whose steps did not record it (a capacity search, or a
/// results file written before steps counted it).
/// The causes none of whose steps had any are left out of the plot (their
/// bars would be empty slots) and named apart.
fn causes_chart(id: String, name: &str, steps: &[&LoadStep]) -> Option<(Chart, Vec<&'static str>)> {
    if steps.iter().all(|s| s.retransmissions.is_none()) {
        return None;
    }
    type Cause = (&'static str, fn(&LoadStep) -> Option<u64>);
    let causes: [Cause; 4] = [
        ("retransmissions (messages)", |s| s.retransmissions),
        ("timeouts (calls)", |s| s.timeouts),
        ("unexpected messages", |s| s.unexpected),
        ("5xx (calls)", |s| s.failed_5xx),
    ];
    let series: Vec<Series> = causes
        .iter()
        .map(|(what, f)| {
            Series::new(
                *what,
                Style::Bar,
                steps.iter().enumerate().filter_map(|(k, s)| f(s).map(|n| (k as f64, n as f64))).collect(),
            )
        })
        .collect();
    let (series, none): (Vec<Series>, Vec<Series>) =
        series.into_iter().partition(|s| s.points.iter().any(|p| p.1 > 0.0));
    if series.is_empty() {
        return None;
    }
    let none: Vec<&'static str> = causes.iter().map(|c| c.0).filter(|c| none.iter().any(|s| s.name == *c)).collect();
    let values: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
    let chart = Chart {
        log_y: wide_spread(values.iter().copied()),
        ..Chart::bars(
            id,
            format!("What went wrong, per step: {name}"),
            steps.iter().map(|s| rate_label(s.offered_cps)).collect(),
            "offered load of the step, calls/s",
            "count in the step",
            series,
        )
    };
    Some((chart, none))
}

/// The plots of one set of runs at one scale: throughput, failed calls,
/// set-up delay, and what went wrong beside the set-up delay.
fn scale_figures(group: &[&LoadSeries], suffix: &str, of: &str) -> Vec<Figure> {
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
    // A series with no value (a capacity search keeps no p50) has no
    // place in the legend.
    let keep = |v: Vec<Series>| -> Vec<Series> { v.into_iter().filter(|s| !s.points.is_empty()).collect() };
    let setup = keep(setup);
    let log_setup = wide_spread(setup.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let slowest = setup.iter().flat_map(|s| s.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    let setup_note = match (log_setup, slowest >= 500.0) {
        (false, _) => String::new(),
        (true, false) => "Log scale: the percentiles lie orders of magnitude apart.".to_string(),
        (true, true) => "Log scale: the percentiles lie orders of magnitude apart. A set-up delay of T1 (500 ms) or more is a call whose INVITE or its answer was lost and sent again (after T1, then 2·T1, 4·T1, ...).".to_string(),
    };
    let x = "offered load, calls/s";
    let mut figures = vec![
        Figure::chart(
            Chart::new(format!("load-throughput{suffix}"), format!("Throughput against offered load{of}"), x, "successful calls/s", keep(throughput)),
            "Each step's successful calls over the step's own duration (from its first call placed to one arrival gap after its last); calls that end after the step count in it, the time the run waits for them in no step.",
        ),
        Figure::chart(
            Chart::new(format!("load-failed{suffix}"), format!("Failed and unfinished calls against offered load{of}"), x, "calls, % of attempted", keep(failed)),
            "",
        ),
        Figure::chart(
            Chart {
                log_y: log_setup,
                ..Chart::new(format!("load-setup{suffix}"), format!("Call set-up delay against offered load{of}"), x, "set-up delay (INVITE to 200 OK), ms", setup)
            },
            setup_note,
        ),
    ];
    let with_causes: Vec<&&LoadSeries> =
        group.iter().filter(|s| s.1.iter().any(|x| x.retransmissions.is_some())).collect();
    for (j, (name, steps)) in with_causes.iter().map(|s| (&s.0, &s.1)).enumerate() {
        let id = if with_causes.len() == 1 {
            format!("load-causes{suffix}")
        } else {
            format!("load-causes{suffix}-{}", j + 1)
        };
        match causes_chart(id, name, steps) {
            Some((chart, none)) => {
                let mut text = if j == 0 {
                    "Beside the set-up delay: messages sent again (retransmissions, each after T1, 2·T1, ... without an answer), calls given up on a timer (timeouts), messages that fit no step of their call (unexpected), and calls refused or failed with a 5xx response, counted for the calls that started in the step.".to_string()
                } else {
                    String::new()
                };
                if !none.is_empty() {
                    text.push_str(&format!(" None in any step: {}.", none.join(", ")));
                }
                figures.push(Figure::chart(chart, text.trim_start().to_string()));
            }
            None => figures.push(Figure {
                ladder: None,
                chart: None,
                text: format!(
                    "{name}: no retransmissions, timeouts, unexpected messages or 5xx responses in any step."
                ),
                table: None,
            }),
        }
    }
    figures
}

/// The run's tail in words: the time after its last step, when it placed
/// no call and waited for the calls in progress.
fn tail_note(name: &str, steps: &[&LoadStep]) -> Option<String> {
    let t = steps.iter().filter_map(|s| s.tail.as_ref()).next()?;
    Some(format!(
        "{name}: after its last step ended at {} s, the run waited {} s for the calls in progress; in that tail {} calls ended ({} successful, {} failed){}. They count in the step they started in; the tail's time counts in no step's rate.",
        num(t.start_s, 1),
        num(t.end_s - t.start_s, 1),
        t.successful + t.failed,
        t.successful,
        t.failed,
        if t.unfinished > 0 { format!(", and {} still had no final answer when it ended", t.unfinished) } else { String::new() }
    ))
}

/// A count recorded per step, or blank where the run did not record it.
fn count(v: Option<u64>) -> String {
    v.map_or(String::new(), |n| n.to_string())
}

fn tables(series: &[LoadSeries]) -> Vec<Figure> {
    let calls = Table::new(
        "Calls per step",
        strings([
            "run",
            "offered calls/s",
            "step s",
            "attempted",
            "successful",
            "failed",
            "unfinished",
            "successful calls/s",
            "failed %",
        ]),
        series
            .iter()
            .flat_map(|(name, steps)| {
                steps.iter().map(move |s| {
                    vec![
                        name.clone(),
                        num(s.offered_cps, 1),
                        if s.duration_s > 0.0 { num(s.duration_s, 2) } else { String::new() },
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
    );
    let setup = Table::new(
        "Set-up delay and what went wrong, per step",
        strings([
            "run",
            "offered calls/s",
            "set-up p50 ms",
            "p95 ms",
            "p99 ms",
            "retransmissions",
            "timeouts",
            "unexpected",
            "5xx",
        ]),
        series
            .iter()
            .flat_map(|(name, steps)| {
                steps.iter().map(move |s| {
                    vec![
                        name.clone(),
                        num(s.offered_cps, 1),
                        num(s.setup_p50_ms, 2),
                        num(s.setup_p95_ms, 2),
                        num(s.setup_p99_ms, 2),
                        count(s.retransmissions),
                        count(s.timeouts),
                        count(s.unexpected),
                        count(s.failed_5xx),
                    ]
                })
            })
            .collect(),
    );
    vec![
        Figure::table(calls, ""),
        Figure::table(
            setup,
            "Set-up delay: from the INVITE sent to its 200 OK received, percentiles over the step's successful calls (a capacity search keeps the 95th only). Blank counts: not recorded for that run.",
        ),
    ]
}

pub(crate) fn load_section(input: &ReportInput) -> Section {
    let series = load_series(&input.load_steps);
    let scales = load_scales(&series);
    // Sets of plots: each scale's runs, split so that no plot draws more
    // than MAX_SERIES lines (three set-up percentiles a run: two runs).
    let mut sets: Vec<Vec<&LoadSeries>> = Vec::new();
    for group in &scales {
        let percentiles = group.iter().any(|s| s.1.iter().any(|x| x.setup_p50_ms.is_finite()));
        let per_set = if percentiles { MAX_SERIES / 3 } else { MAX_SERIES / 2 };
        sets.extend(group.chunks(per_set).map(<[_]>::to_vec));
    }
    let mut figures = Vec::new();
    for (k, set) in sets.iter().enumerate() {
        // Several sets: a set of one run names it in its plots' titles; a
        // set of several names them in the legend only, where a long
        // title would not fit.
        let (suffix, of) = if sets.len() > 1 {
            let of = match set.as_slice() {
                [one] => format!(": {}", runs_title(&[one.0.as_str()])),
                _ => String::new(),
            };
            (if k == 0 { String::new() } else { format!("-{}", k + 1) }, of)
        } else {
            (String::new(), String::new())
        };
        figures.extend(scale_figures(set, &suffix, &of));
    }
    for (name, steps) in &series {
        if let Some(text) = tail_note(name, steps) {
            figures.push(Figure { chart: None, ladder: None, text, table: None });
        }
    }
    figures.extend(tables(&series));
    Section {
        id: "load",
        title: "Load".into(),
        text: "Each step offers calls at a constant rate; a call is successful when it is set up and released, and counts in the step it started in. Unfinished: calls with no final answer when the run ended.".into(),
        figures,
    }
}

/// A plot title's name for its runs, short enough to fit: one run's name;
/// the words several names begin with and their count ("capacity search,
/// built-in UAS (3 runs)"); else the names, cut with an ellipsis.
pub(crate) fn runs_title(names: &[&str]) -> String {
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
mod tests {
    use super::*;

    fn step(series: &str, offered: f64, p50: f64) -> LoadStep {
        LoadStep {
            series: series.into(),
            offered_cps: offered,
            attempted: 100,
            successful: 100,
            calls_per_s: offered,
            setup_p50_ms: p50,
            setup_p95_ms: p50 * 2.0,
            setup_p99_ms: p50 * 3.0,
            retransmissions: Some(offered as u64 / 10),
            timeouts: Some(1),
            unexpected: Some(0),
            failed_5xx: Some(2),
            ..LoadStep::default()
        }
    }

    #[test]
    fn no_load_plot_draws_more_than_six_series() {
        // Five runs at one scale, each with three percentiles and causes.
        let steps: Vec<LoadStep> =
            (0..5).flat_map(|r| (1..=4).map(move |i| step(&format!("run {r}"), 100.0 * f64::from(i), 2.0))).collect();
        let input = ReportInput { load_steps: steps, ..ReportInput::default() };
        let section = load_section(&input);
        let charts: Vec<&Chart> = section.figures.iter().filter_map(|f| f.chart.as_ref()).collect();
        for c in &charts {
            assert!(c.data_series() <= MAX_SERIES, "{}: {} series", c.id, c.data_series());
        }
        // Split into three sets of plots, each of at most two runs, and a
        // chart of causes per run.
        let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
        for id in ["load-setup", "load-setup-2", "load-setup-3", "load-causes-1", "load-causes-2", "load-causes-3"] {
            assert!(ids.contains(&id), "{id} missing from {ids:?}");
        }
        assert_eq!(ids.iter().filter(|i| i.starts_with("load-causes")).count(), 5);
        let causes = charts.iter().find(|c| c.id == "load-causes-3").unwrap();
        assert_eq!(causes.categories.as_deref().unwrap(), ["100", "200", "300", "400"]);
    }

    #[test]
    fn percentiles_far_apart_are_drawn_on_a_log_axis() {
        let near =
            ReportInput { load_steps: vec![step("a", 100.0, 2.0), step("a", 200.0, 3.0)], ..ReportInput::default() };
        let far =
            ReportInput { load_steps: vec![step("a", 100.0, 0.4), step("a", 200.0, 500.0)], ..ReportInput::default() };
        let setup = |i: &ReportInput| {
            load_section(i).figures.into_iter().filter_map(|f| f.chart).find(|c| c.id == "load-setup").unwrap()
        };
        assert!(!setup(&near).log_y);
        assert!(setup(&far).log_y);
    }

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
