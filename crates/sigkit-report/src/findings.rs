//! The summary at the top of the page: each headline finding in one
//! sentence, our figure beside the published one, and a verdict (matches,
//! differs, or context for a figure from another system) with its reason in
//! one clause. Only findings whose data the report's input has; the
//! verdicts are the reproduction section's ([`crate::reproduction`]).

use std::fmt::Write as _;

use sigkit_eval::published::{published_compression, Paper};

use crate::reproduction::{
    compression_rows, explain, load_runs, overload_rows, ran_rows, thousands, verdict_html, Row, Verdict, STYLE,
};
use crate::ReportInput;

/// One headline finding.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finding {
    pub topic: &'static str,
    /// Ours beside theirs, in one sentence.
    pub sentence: String,
    /// None: context (a figure from another system, not judged), or a
    /// comparison of two runs of this report ([`Finding::like_for_like`]).
    pub verdict: Option<Verdict>,
    /// Both figures measured here, side by side in one run.
    pub like_for_like: bool,
    pub why: String,
}

/// The thesis's headline compression figure: the 3GPP video call's
/// session establishment with the shared mechanism (Appendix H).
const HEADLINE_COMPRESSION: &str = "h-shared-8192";

fn measured_sentence(what: &str, row: &Row, theirs_by: &str) -> Option<(String, Verdict)> {
    let m = row.measured.as_ref()?;
    Some((format!("{what}: ours {}, {theirs_by} {} ({}), {}", m.ours, row.theirs, row.source, m.difference), m.verdict))
}

fn compression(input: &ReportInput) -> Vec<Finding> {
    let rows = compression_rows(input);
    let keyed: Vec<(&'static str, Paper, &Row)> =
        published_compression().into_iter().zip(rows.iter()).map(|(p, r)| (p.key, p.paper, r)).collect();
    let mut out = Vec::new();
    let thesis: Vec<&Row> =
        keyed.iter().filter(|k| k.1 == Paper::SigcompThesis && k.2.measured.is_some()).map(|k| k.2).collect();
    if !thesis.is_empty() {
        let headline =
            keyed.iter().find(|k| k.0 == HEADLINE_COMPRESSION && k.2.measured.is_some()).map_or(thesis[0], |k| k.2);
        let count = |v: Verdict| thesis.iter().filter(|r| r.measured.as_ref().is_some_and(|m| m.verdict == v)).count();
        if let Some((sentence, verdict)) = measured_sentence(
            "SigComp compresses the 3GPP video call's 12 session-establishment messages (shared mechanism, UDP, DMS 8192) to a ratio of SigComp bytes over SIP bytes",
            headline,
            "the SigComp thesis",
        ) {
            out.push(Finding {
                topic: "Compression against the SigComp thesis",
                sentence: format!(
                    "{sentence}; of its {} figures re-measured at their own settings, {} match within ± 10 %, {} are lower and {} higher (reproduction section)",
                    thesis.len(),
                    count(Verdict::Matches),
                    count(Verdict::Lower),
                    count(Verdict::Higher)
                ),
                verdict: Some(verdict),
                like_for_like: false,
                why: headline.why.clone(),
            });
        }
    }
    if let Some(k) = keyed.iter().find(|k| k.1 == Paper::OpenSigcomp && k.2.measured.is_some()) {
        if let Some((sentence, verdict)) = measured_sentence(
            "Open SigComp's start-up flow (registration and a call, 11 messages, Deflate, no dictionary, DMS and SMS 8192) compresses to a ratio",
            k.2,
            "Open SigComp",
        ) {
            out.push(Finding { topic: "Compression against Open SigComp", sentence, verdict: Some(verdict), like_for_like: false, why: k.2.why.clone() });
        }
    }
    out
}

fn ran(input: &ReportInput) -> Option<Finding> {
    let rows = ran_rows(input);
    let row = rows.iter().find(|r| r.source.starts_with("§9.10") && r.figure.ends_with("at 9.6 kbit/s"))?;
    let (sentence, verdict) = measured_sentence(
        "On a 9.6 kbit/s RAN signalling link (RTT 70 ms), SigComp saves this much of the call's one-way delay",
        row,
        "the SigComp thesis",
    )?;
    Some(Finding { topic: "RAN delay", sentence, verdict: Some(verdict), like_for_like: false, why: row.why.clone() })
}

fn overload(input: &ReportInput) -> Option<Finding> {
    let rows = overload_rows(input);
    let (collapse, avoided) = (&rows[0], &rows[1]);
    let c = collapse.measured.as_ref()?;
    let mut sentence = format!(
        "Without overload handling a 10 s surge collapses the simulated SIP proxy chain in {} (the SIP overload thesis: {}, {})",
        c.ours, collapse.theirs, collapse.source
    );
    let mut verdict = c.verdict;
    let mut why = collapse.why.clone();
    if let Some(a) = &avoided.measured {
        let _ = write!(sentence, "; with T1 raised to 1 s in {} (thesis: {})", a.ours, avoided.theirs);
        if verdict == Verdict::Matches {
            verdict = a.verdict;
        }
        if a.verdict != Verdict::Matches {
            why = avoided.why.clone();
        }
    }
    Some(Finding { topic: "SIP overload (simulated)", sentence, verdict: Some(verdict), like_for_like: false, why })
}

fn load(input: &ReportInput) -> Option<Finding> {
    let run = load_runs(input).into_iter().next()?;
    Some(Finding {
        topic: "Load through the proxy",
        sentence: format!(
            "{}; the framework thesis's SIPp → OpenSIPS → SIPp chain began dropping calls near 400 calls/s (§3.3.1)",
            run.describe()
        ),
        verdict: None,
        like_for_like: false,
        why: "another proxy on 2009 hardware, shown for scale".into(),
    })
}

/// The mean over `steps` of a per-step figure.
fn mean_of(steps: &[&crate::LoadStep], f: impl Fn(&crate::LoadStep) -> f64) -> f64 {
    let v: Vec<f64> = steps.iter().map(|s| f(s)).filter(|x| x.is_finite()).collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// What `sigkit proxy` adds, and how SIPp's UAC does against sigkit's:
/// the same Kamailio, SIPp UAS and steps, measured in this run.
fn like_for_like(input: &ReportInput) -> Option<Finding> {
    use crate::series::{DIRECT, SIPP_DIRECT, THROUGH_PROXY};
    let of = |name: &str| -> Vec<&crate::LoadStep> { input.load_steps.iter().filter(|s| s.series == name).collect() };
    let (proxied, direct, sipp) = (of(THROUGH_PROXY), of(DIRECT), of(SIPP_DIRECT));
    if proxied.is_empty() || direct.is_empty() {
        return None;
    }
    let calls = |steps: &[&crate::LoadStep]| -> (u64, u64) {
        (steps.iter().map(|s| s.successful).sum(), steps.iter().map(|s| s.attempted).sum())
    };
    let ((ok_p, all_p), (ok_d, all_d)) = (calls(&proxied), calls(&direct));
    let (p50_p, p50_d) = (mean_of(&proxied, |s| s.setup_p50_ms), mean_of(&direct, |s| s.setup_p50_ms));
    let top = proxied.iter().map(|s| s.offered_cps).fold(0.0, f64::max);
    let mut sentence = format!(
        "Through sigkit proxy, Kamailio set up {ok_p} of {all_p} calls with a p50 set-up delay of {p50_p:.2} ms; \
         straight to Kamailio, {ok_d} of {all_d} in {p50_d:.2} ms, so the proxy adds {:+.2} ms a call up to {top:.0} calls/s",
        p50_p - p50_d
    );
    if !sipp.is_empty() {
        let (ok_s, all_s) = calls(&sipp);
        let _ = write!(sentence, "; SIPp's UAC through the same Kamailio completed {ok_s} of {all_s} calls");
    }
    Some(Finding {
        topic: "What the proxy adds",
        sentence,
        verdict: None,
        like_for_like: true,
        why: "the same Kamailio, SIPp UAS and load steps, one after the other in this run".into(),
    })
}

fn capacity(input: &ReportInput) -> Option<Finding> {
    let c = input.capacity.as_ref()?;
    Some(Finding {
        topic: "Capacity",
        sentence: format!(
            "The capacity search found {} calls/s for {} ({}); the framework thesis's PBX configurations reached 6 to 18 calls/s (Table 5-7)",
            thousands(c.calls_per_s.round() as u64),
            c.target,
            c.service_level
        ),
        verdict: None,
        like_for_like: false,
        why: "a PBX on 2009 machines, not sigkit's own UAS on this one".into(),
    })
}

fn taroc(input: &ReportInput) -> Option<Finding> {
    let f = input.captures.iter().find(|f| f.taroc_packets.is_some_and(|n| n > 0))?;
    let (n, before, after) = (f.taroc_packets?, f.header_bytes_before?, f.header_bytes_after?);
    let mode = match f.taroc_mode.as_str() {
        "u" => "U-mode",
        "o" => "O-mode",
        "r" => "R-mode",
        "o-infer" => "O-mode with cross-direction inference",
        _ => "its default mode",
    };
    Some(Finding {
        topic: "TCP/IP headers (TAROC)",
        sentence: format!(
            "TAROC ({mode}) compresses the {n} TCP/IP headers of {}, {} from {:.1} to {:.1} bytes on average; the TAROC draft publishes no header size (its Appendix A assumes 4 bytes for IDEAL)",
            f.capture,
            f.flow,
            before as f64 / n as f64,
            after as f64 / n as f64
        ),
        verdict: None,
        like_for_like: false,
        why: "no published figure to compare; the draft's throughput study is reproduced by sigkit rohc-throughput".into(),
    })
}

/// The headline findings this input has data for, in page order.
pub(crate) fn findings(input: &ReportInput) -> Vec<Finding> {
    let mut out = compression(input);
    out.extend(ran(input));
    out.extend(load(input));
    out.extend(like_for_like(input));
    out.extend(capacity(input));
    out.extend(overload(input));
    out.extend(taroc(input));
    out
}

/// The summary's HTML, first on the page.
pub(crate) fn html(input: &ReportInput) -> String {
    let mut seen = Vec::new();
    let mut out = String::from(STYLE);
    out.push_str("<section class=\"findings\" id=\"summary\"><h2>Summary of findings</h2>");
    let list = findings(input);
    if list.is_empty() {
        out.push_str("<p>No finding: this report's data holds nothing a published figure measured.</p></section>");
        return out;
    }
    let _ = write!(
        out,
        "<p class=\"note\">{} <a href=\"#reproduction\">Every figure, one row each.</a></p><ul>",
        explain(
            "Each finding in one sentence: our figure beside the published one and the verdict, matches or differs (by the tolerance in the reproduction section), or context where the published figure comes from another system.",
            &mut seen
        )
    );
    for f in &list {
        let verdict = match (f.verdict, f.like_for_like) {
            (Some(v), _) => verdict_html(v),
            (None, true) => "<span class=\"v-context\">like for like</span>".to_string(),
            (None, false) => "<span class=\"v-context\">context</span>".to_string(),
        };
        let _ = write!(
            out,
            "<li><b>{}.</b> {}. {verdict}: {}.</li>",
            explain(f.topic, &mut seen),
            explain(&f.sentence, &mut seen),
            explain(&f.why, &mut seen)
        );
    }
    out.push_str("</ul></section>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Capacity, CaptureFlow, LoadStep, MeasuredCompression, SimStudy};

    fn topic<'a>(list: &'a [Finding], topic: &str) -> &'a Finding {
        list.iter().find(|f| f.topic == topic).unwrap_or_else(|| panic!("no {topic} in {list:?}"))
    }

    #[test]
    fn only_findings_the_input_has_data_for() {
        assert!(findings(&ReportInput::default()).is_empty());
        let input = ReportInput {
            capacity: Some(Capacity { target: "the built-in UAS".into(), calls_per_s: 24000.0, ..Capacity::default() }),
            ..ReportInput::default()
        };
        let list = findings(&input);
        assert_eq!(list.len(), 1);
        // Another system's capacity is context, never judged.
        assert_eq!(list[0].verdict, None);
        assert!(list[0].sentence.contains("24,000 calls/s") && list[0].sentence.contains("6 to 18"), "{list:?}");
    }

    #[test]
    fn the_compression_finding_carries_ours_theirs_and_the_verdict() {
        let matching = ReportInput {
            published_compression: vec![MeasuredCompression {
                key: "h-shared-8192".into(),
                uncompressed: 10640,
                payload: 2000,
                sigcomp: 3000,
            }],
            ..ReportInput::default()
        };
        let f = topic(&findings(&matching), "Compression against the SigComp thesis").clone();
        assert_eq!(f.verdict, Some(Verdict::Matches));
        assert!(f.sentence.contains("3,000") && f.sentence.contains("2,917"), "{}", f.sentence);
        assert!(f.sentence.contains("of its 1 figures re-measured at their own settings, 1 match"), "{}", f.sentence);
        let differing = ReportInput {
            published_compression: vec![MeasuredCompression {
                sigcomp: 1705,
                ..matching.published_compression[0].clone()
            }],
            ..ReportInput::default()
        };
        let f = topic(&findings(&differing), "Compression against the SigComp thesis").clone();
        assert_eq!(f.verdict, Some(Verdict::Lower));
        assert!(f.why.contains("optimal parse"), "{}", f.why);
    }

    #[test]
    fn overload_load_and_taroc_findings() {
        let study = |scenario: &str, collapsed| SimStudy {
            scenario: scenario.into(),
            seeds: 20,
            collapsed,
            ..SimStudy::default()
        };
        let input = ReportInput {
            sim: vec![study("no-handling", 20), study("h1-t1-1s", 4)],
            load_steps: vec![
                LoadStep {
                    series: "UAC → proxy".into(),
                    offered_cps: 100.0,
                    attempted: 100,
                    successful: 100,
                    ..LoadStep::default()
                },
                LoadStep {
                    series: "UAC → proxy".into(),
                    offered_cps: 300.0,
                    attempted: 300,
                    successful: 297,
                    ..LoadStep::default()
                },
                // A capacity search's steps are not the load run.
                LoadStep { series: "capacity search, search 1".into(), offered_cps: 9000.0, ..LoadStep::default() },
            ],
            captures: vec![CaptureFlow {
                capture: "sip-tcp.pcapng".into(),
                flow: "flow 1".into(),
                taroc_packets: Some(66),
                header_bytes_before: Some(3445),
                header_bytes_after: Some(1030),
                taroc_mode: "o".into(),
                ..CaptureFlow::default()
            }],
            ..ReportInput::default()
        };
        let list = findings(&input);
        let overload = topic(&list, "SIP overload (simulated)");
        // The collapse matches (20 of 20), its avoidance does not (4 of 20).
        assert_eq!(overload.verdict, Some(Verdict::Higher));
        assert!(overload.sentence.contains("20 of 20 seeds") && overload.sentence.contains("4 of 20 seeds"));
        let load = topic(&list, "Load through the proxy");
        assert_eq!(load.verdict, None);
        // 297 of 300 is 99 %: both steps sustained.
        assert!(
            load.sentence.contains("every step up to 300 calls/s had at least 99 %")
                && load.sentence.contains("(400 calls)"),
            "{}",
            load.sentence
        );
        let falling = ReportInput {
            load_steps: vec![
                LoadStep { offered_cps: 200.0, attempted: 600, successful: 600, ..LoadStep::default() },
                LoadStep { offered_cps: 400.0, attempted: 1200, successful: 1200, ..LoadStep::default() },
                LoadStep { offered_cps: 600.0, attempted: 1800, successful: 1568, ..LoadStep::default() },
            ],
            ..ReportInput::default()
        };
        let load = topic(&findings(&falling), "Load through the proxy").clone();
        assert!(
            load.sentence.contains("up to 400 calls/s had at least 99 %")
                && load.sentence.contains("(600 calls/s) 87 %"),
            "{}",
            load.sentence
        );
        let taroc = topic(&list, "TCP/IP headers (TAROC)");
        assert!(
            taroc.sentence.contains("TAROC (O-mode) compresses") && taroc.sentence.contains("from 52.2 to 15.6 bytes"),
            "{}",
            taroc.sentence
        );
        assert_eq!(taroc.verdict, None);
    }

    #[test]
    fn the_proxy_is_compared_with_kamailio_alone_and_sipps_uac_like_for_like() {
        use crate::series::{DIRECT, SIPP_DIRECT, THROUGH_PROXY};
        let step = |series: &str, offered: f64, ok: u64, p50: f64| crate::LoadStep {
            series: series.into(),
            offered_cps: offered,
            attempted: 100,
            successful: ok,
            setup_p50_ms: p50,
            ..crate::LoadStep::default()
        };
        let mut input = ReportInput {
            load_steps: vec![
                step(THROUGH_PROXY, 100.0, 100, 2.5),
                step(THROUGH_PROXY, 200.0, 99, 2.7),
                step(DIRECT, 100.0, 100, 2.0),
                step(DIRECT, 200.0, 100, 2.2),
            ],
            ..ReportInput::default()
        };
        let f = like_for_like(&input).expect("both runs are there");
        assert!(f.like_for_like && f.verdict.is_none());
        assert!(f.sentence.contains("199 of 200 calls with a p50 set-up delay of 2.60 ms"), "{}", f.sentence);
        assert!(f.sentence.contains("200 of 200 in 2.10 ms, so the proxy adds +0.50 ms"), "{}", f.sentence);
        assert!(!f.sentence.contains("SIPp's UAC"));
        input.load_steps.push(step(SIPP_DIRECT, 100.0, 97, f64::NAN));
        let f = like_for_like(&input).unwrap();
        assert!(
            f.sentence.contains("SIPp's UAC through the same Kamailio completed 97 of 100 calls"),
            "{}",
            f.sentence
        );
        // Without the run straight to Kamailio there is nothing to compare.
        input.load_steps.retain(|s| s.series != DIRECT);
        assert!(like_for_like(&input).is_none());
    }
}
