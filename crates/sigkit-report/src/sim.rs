//! The SIP overload simulations' section: each scenario's outcome over its
//! seeds beside the SIP overload thesis's result for it, and the goodput
//! and pending transactions over time, averaged over the seeds.

use crate::charts::{Chart, Series, Style, MAX_SERIES};
use crate::page::{num, strings, Figure, Section, Table};
use crate::{seeds, SimStudy};

pub(crate) fn sim_section(studies: &[SimStudy]) -> Section {
    let chart =
        |id: &str, title: &str, y: &str, series: Vec<Series>| Chart::new(id, title, "simulated time, s", y, series);
    let line = |s: &SimStudy, y: fn(&crate::SimSecond) -> f64| {
        Series::new(s.scenario.clone(), Style::Line, s.seconds.iter().map(|r| (r.t, y(r))).collect())
    };
    let table = Table {
        caption: "Each scenario over its seeds, and the thesis's result".into(),
        head: strings([
            "scenario",
            "what it runs",
            "seeds",
            "collapsed",
            "200 share in the window",
            "goodput, 200s/s",
            "fRpD p95, s",
            "the thesis",
        ]),
        rows: studies
            .iter()
            .map(|s| {
                vec![
                    s.scenario.clone(),
                    s.description.clone(),
                    s.seeds.to_string(),
                    format!("{} of {}", s.collapsed, s.seeds),
                    num(s.window_ok_ratio * 100.0, 1) + " %",
                    num(s.window_goodput, 1),
                    num(s.frpd_p95_s, 3),
                    seeds::overload_thesis_result(&s.scenario).unwrap_or("—").to_string(),
                ]
            })
            .collect(),
    };
    // At most MAX_SERIES scenarios a plot: more are split over several.
    let mut figures = Vec::new();
    let sets: Vec<&[SimStudy]> = studies.chunks(MAX_SERIES).collect();
    let mut table = Some(table);
    for (k, set) in sets.iter().enumerate() {
        let (suffix, of) = if sets.len() > 1 {
            (if k == 0 { String::new() } else { format!("-{}", k + 1) }, format!(" ({} of {})", k + 1, sets.len()))
        } else {
            (String::new(), String::new())
        };
        let mut goodput: Vec<Series> = set.iter().map(|s| line(s, |r| r.goodput)).collect();
        // The offered load is the same shape in most scenarios: drawn
        // once, for the set's first study, as the guide the goodput falls
        // away from.
        goodput.push(Series::new(
            format!("offered ({})", set[0].scenario),
            Style::Reference,
            set[0].seconds.iter().map(|r| (r.t, r.started)).collect(),
        ));
        let pending: Vec<Series> = set.iter().map(|s| line(s, |r| r.uac_pending)).collect();
        figures.push(Figure {
            ladder: None,
            chart: Some(chart(
                &format!("sim-goodput{suffix}"),
                &format!("Goodput over time (mean over seeds){of}"),
                "200 responses per second",
                goodput,
            )),
            text: String::new(),
            table: table.take(),
        });
        figures.push(Figure::chart(
            chart(
                &format!("sim-pending{suffix}"),
                &format!("Pending client transactions over time (mean over seeds){of}"),
                "transactions in Trying",
                pending,
            ),
            "",
        ));
    }
    Section {
        id: "overload",
        title: "SIP overload (simulated)".into(),
        text: format!(
            "Discrete-event simulations of a transaction-stateful SIP proxy chain under a surge of non-INVITE \
             requests over UDP, after {}; each scenario runs over many seeds and its lines are the means over them, \
             second by second. The last column is the thesis's result for the same scenario.",
            seeds::OVERLOAD_THESIS
        ),
        figures,
    }
}
