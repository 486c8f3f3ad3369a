//! The published values drawn beside ours, read from the source
//! documents' tables and text.

use std::time::Duration;

use sigkit_eval::ran::{thesis_figure2, THESIS_IMPROVEMENT, THESIS_UNCOMPRESSED_9K6_S};

use crate::{SeedChart, SeedPoint};

/// J. Mäenpää, 2005.
pub const SIGCOMP_THESIS: &str = "the SigComp performance thesis (\"Performance of Signalling Compression in the Third Generation Mobile Network\", 2005)";
/// N. Sangvanphant, 2009.
pub const FRAMEWORK_THESIS: &str =
    "the framework thesis (\"Performance Evaluation Framework for a SIP-based Telecommunication Call Handling System\", 2009)";

/// Call rate (calls/s), successful calls/s, failed %, call set-up time (ms).
type Step = (f64, f64, f64, f64);

/// The framework thesis's Tables 5-2 to 5-6 (average statistics per
/// target system, 10 rounds of 180 s per rate): call rate (calls/s),
/// successful calls/s, failed %, call set-up time (ms).
const FRAMEWORK_TABLES: [(&str, &str, [Step; 10]); 5] = [
    (
        "Machine A",
        "Table 5-2",
        [
            (2.0, 2.0, 0.0, 73.0),
            (4.0, 4.0, 0.0, 74.0),
            (6.0, 6.0, 0.01, 76.0),
            (8.0, 8.0, 0.01, 82.0),
            (10.0, 10.0, 0.0, 98.0),
            (12.0, 12.0, 0.03, 115.0),
            (14.0, 14.0, 0.08, 137.0),
            (16.0, 16.0, 0.04, 201.0),
            (18.0, 18.0, 0.07, 243.0),
            (20.0, 13.65, 31.76, 3289.0),
        ],
    ),
    (
        "Machine B",
        "Table 5-3",
        [
            (2.0, 2.0, 0.0, 58.0),
            (4.0, 4.0, 0.0, 69.0),
            (6.0, 6.0, 0.03, 74.0),
            (8.0, 8.0, 0.12, 121.0),
            (10.0, 10.0, 0.08, 474.0),
            (12.0, 10.95, 8.72, 3451.0),
            (14.0, 8.24, 40.83, 5289.0),
            (16.0, 5.93, 62.91, 6077.0),
            (18.0, 5.38, 70.14, 6124.0),
            (20.0, 4.54, 77.29, 6608.0),
        ],
    ),
    (
        "Machine C",
        "Table 5-4",
        [
            (2.0, 2.0, 0.0, 76.0),
            (4.0, 4.0, 0.01, 75.0),
            (6.0, 6.0, 0.03, 89.0),
            (8.0, 7.2, 9.97, 4735.0),
            (10.0, 5.67, 43.28, 7861.0),
            (12.0, 1.70, 85.84, 17583.0),
            (14.0, 1.36, 90.28, 18608.0),
            (16.0, 1.27, 92.07, 17569.0),
            (18.0, 0.87, 95.19, 17241.0),
            (20.0, 0.93, 95.35, 17813.0),
        ],
    ),
    (
        "Machine D",
        "Table 5-5",
        [
            (2.0, 2.0, 0.0, 84.0),
            (4.0, 4.0, 0.02, 89.0),
            (6.0, 5.67, 5.46, 126.0),
            (8.0, 6.10, 23.75, 6476.0),
            (10.0, 4.42, 55.93, 8235.0),
            (12.0, 1.41, 88.27, 12685.0),
            (14.0, 1.13, 91.93, 13972.0),
            (16.0, 0.58, 96.42, 14391.0),
            (18.0, 0.56, 96.89, 13876.0),
            (20.0, 0.57, 97.14, 15197.0),
        ],
    ),
    (
        "Machines C, D",
        "Table 5-6",
        [
            (2.0, 2.0, 0.0, 156.0),
            (4.0, 4.0, 0.01, 130.0),
            (6.0, 6.0, 0.06, 138.0),
            (8.0, 7.97, 0.54, 165.0),
            (10.0, 9.47, 5.29, 184.0),
            (12.0, 10.43, 13.08, 568.0),
            (14.0, 11.74, 16.17, 1743.0),
            (16.0, 12.52, 21.75, 5897.0),
            (18.0, 8.11, 54.94, 9256.0),
            (20.0, 8.33, 58.37, 9248.0),
        ],
    ),
];

/// The framework thesis's load steps (its Tables 5-2 to 5-6) for the load
/// plots: successful calls/s, failed % and mean call set-up time against
/// the offered call rate, one series per target system.
pub fn framework_thesis_tables() -> Vec<SeedPoint> {
    let mut out = Vec::new();
    for (machine, table, rows) in FRAMEWORK_TABLES {
        for (rate, ok, failed, setup) in rows {
            for (chart, y) in
                [(SeedChart::LoadThroughput, ok), (SeedChart::LoadFailed, failed), (SeedChart::LoadSetup, setup)]
            {
                out.push(SeedPoint {
                    seed: FRAMEWORK_THESIS.into(),
                    source: table.into(),
                    chart,
                    series: machine.into(),
                    x: rate,
                    y,
                    approximate: false,
                    note: String::new(),
                });
            }
        }
    }
    out
}

/// The SigComp performance thesis's RAN-delay values: its Figure 2
/// recomputed from its Table 3 by its equation 2.1 with `rtt` at each of
/// `rates`, and the values its text reads off Figures 2 and 53 (§2.1,
/// §9.10) and its conclusions (§11, item 13).
pub fn sigcomp_thesis_ran(rates: &[f64], rtt: Duration) -> Vec<SeedPoint> {
    let point = |chart, series: &str, source: &str, x, y, approximate, note: &str| SeedPoint {
        seed: SIGCOMP_THESIS.into(),
        source: source.into(),
        chart,
        series: series.into(),
        x,
        y,
        approximate,
        note: note.into(),
    };
    let mut out: Vec<SeedPoint> = rates
        .iter()
        .map(|&kbps| {
            point(
                SeedChart::RanDelay,
                "thesis: SIP, Table 3 by eq. 2.1",
                "Figure 2 (recomputed from Table 3)",
                kbps,
                thesis_figure2(kbps, rtt),
                false,
                &format!("RTT {} ms", rtt.as_millis()),
            )
        })
        .collect();
    out.push(point(
        SeedChart::RanDelay,
        "thesis: SIP, read off Figure 2",
        "§2.1",
        9.6,
        THESIS_UNCOMPRESSED_9K6_S,
        true,
        "",
    ));
    for (kbps, saved_s, saved_pct) in THESIS_IMPROVEMENT {
        out.push(point(
            SeedChart::RanSaved,
            "thesis: saved, read off Figure 53",
            "Figure 53 (§9.10)",
            kbps,
            saved_s,
            true,
            "",
        ));
        if let Some(pct) = saved_pct {
            out.push(point(
                SeedChart::RanReduction,
                "thesis: saved, approx. (§11)",
                "§11, conclusion 13",
                kbps,
                pct,
                true,
                "",
            ));
        }
    }
    out
}

/// The flow whose compression the SigComp performance thesis published
/// per mechanism (its Appendix H).
pub const THESIS_COMPRESSION_FLOW: &str = "3gpp-video-call";

/// Its Appendix H §14.8: the 3GPP video call's session establishment (the
/// first 12 messages) over UDP with DMS 8192 and the RFC 3485 dictionary
/// at priorities 1 to 5, total SigComp bytes per mechanism ("basic" is
/// stateless and dictionary-free; "static" is its "bytecode saved").
const THESIS_APPENDIX_H: [(&str, f64); 4] =
    [("basic", 9124.0), ("static", 6286.0), ("dynamic", 3145.0), ("shared", 2917.0)];

/// The SigComp performance thesis's compressed totals of the 3GPP video
/// call per mechanism, for the cumulative-bytes plot: one value each, at
/// message 12 (series: the mechanism).
pub fn sigcomp_thesis_compression() -> Vec<SeedPoint> {
    THESIS_APPENDIX_H
        .iter()
        .map(|&(mechanism, total)| SeedPoint {
            seed: SIGCOMP_THESIS.into(),
            source: "Appendix H §14.8".into(),
            chart: SeedChart::CompressionTotal,
            series: mechanism.into(),
            x: 12.0,
            y: total,
            approximate: false,
            note: "UDP, DMS 8192, dictionary priorities 1–5, the first 12 messages".into(),
        })
        .collect()
}

/// C. Egger, 2012.
pub const OVERLOAD_THESIS: &str = "the SIP overload thesis (C. Egger, \"Improvement Strategies for the Signaling Performance of the Session Initiation Protocol\", TU Wien, 2012)";

/// The SIP overload thesis's result for a scenario of sigkit-sim's set
/// (crates/sigkit-sim/scenarios, by its `name`), in the thesis's terms
/// (chapter 4); None for a scenario the thesis did not run.
pub fn overload_thesis_result(scenario: &str) -> Option<&'static str> {
    Some(match scenario {
        "no-handling" => "500 of 500 collapsed (§4.3.2)",
        "h1-t1-1s" => "0 of 500 collapsed (§4.3.2)",
        "t1-at0-660" => "its one run recovers (Fig. 4.38)",
        "t1-at50-660" => "collapses (Fig. 4.38)",
        "t1-at50-900" => "recovers (Fig. 4.38)",
        "t1-at100-900" => "collapses (Fig. 4.39)",
        "t1-at100-1200" => "recovers, slowly (Fig. 4.39)",
        "h2-cap503" => "fRpD p95 0.355 s, against 28.7 s without handling (§4.3.3)",
        "offload-12.8" | "offload-7.2" => "all handled (§4.4.2)",
        "offload-long" => "collapse, success rate ≈ 0.6 after the peak (Fig. 4.47)",
        "presence-none" => "200 share 33.3 % (§4.5.1)",
        "presence-d1" => "200 share 99.1 % (§4.5.1)",
        "presence-d2" => "200 share 97.8 % (§4.5.1)",
        "register-static" | "register-random" => "collapse (§4.5.2)",
        "register-d1" | "register-d2" => "all 200 clients stay registered (Fig. 4.64, 4.65)",
        "steady" => "unprotected collapse from 85 msg/s (§4.3.3)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_framework_table_has_ten_steps_of_three_values() {
        let points = framework_thesis_tables();
        assert_eq!(points.len(), 5 * 10 * 3);
        // Served never exceeds offered, and failures rise past capacity.
        for p in points.iter().filter(|p| p.chart == SeedChart::LoadThroughput) {
            assert!(p.y <= p.x, "{p:?}");
        }
    }

    #[test]
    fn the_thesis_ran_values_are_where_its_text_puts_them() {
        let points = sigcomp_thesis_ran(&[9.6, 256.0], Duration::from_millis(70));
        let saved: Vec<(f64, f64)> =
            points.iter().filter(|p| p.chart == SeedChart::RanSaved).map(|p| (p.x, p.y)).collect();
        assert_eq!(saved, [(9.6, 6.9), (64.0, 1.0), (256.0, 0.26)]);
        assert!(points.iter().filter(|p| p.chart == SeedChart::RanReduction).all(|p| p.approximate));
    }
}
