//! The summary of findings and the reproduction section of a report drawn
//! from what `sigkit eval --quick` measures: the published compression
//! figures and the RAN-delay study measured now from the corpus, the load
//! run, capacity and overload simulations as eval reports them. The page
//! must open with the summary, list every published figure once with ours
//! or "not measured in this run", keep other systems' figures in the
//! context table, explain its terms at first use, and fit an 800 px window
//! in headless Chromium.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use sigcomp::{Params, Transport};
use sigcomp_compress::{Config, Priorities};
use sigkit_eval::corpus::load_flow;
use sigkit_eval::published::{measure, published_compression};
use sigkit_eval::ran::{RanCall, THESIS_RATES_KBPS, THESIS_RTT};
use sigkit_report::{runs, sources, write_report, Capacity, LoadStep, ReportInput, SimStudy};

mod common;
use common::{corpus, have, scratch};

fn step(series: &str, offered: f64, attempted: u64, successful: u64) -> LoadStep {
    LoadStep {
        series: series.into(),
        offered_cps: offered,
        attempted,
        successful,
        calls_per_s: offered * successful as f64 / attempted as f64,
        setup_p50_ms: 0.4,
        setup_p95_ms: 0.9,
        setup_p99_ms: 1.6,
        ..LoadStep::default()
    }
}

fn sim(scenario: &str, seeds: u64, collapsed: u64, frpd_p95_s: f64) -> SimStudy {
    SimStudy {
        scenario: scenario.into(),
        description: scenario.into(),
        seeds,
        collapsed,
        frpd_p95_s,
        ..SimStudy::default()
    }
}

/// What `sigkit eval --quick --peers built-in` puts in its report: the
/// compression and RAN parts measured here, the rest as eval printed them.
fn eval_input() -> ReportInput {
    let mut input = ReportInput { title: Some("sigkit eval".into()), ..ReportInput::default() };
    input.published_compression = measure(&corpus()).unwrap();
    let mut messages = load_flow(&corpus().join("3gpp-video-call")).unwrap();
    messages.truncate(12);
    let params = Params { dms: 8192, sms: 131072, cpb: 32, ..Params::default() };
    let config = Config { transport: Transport::Stream, dictionary: Priorities::new(1, 3), ..Config::default() };
    let call = RanCall::compress(&messages, params, config).unwrap();
    input.merge(sources::ran(&call, &THESIS_RATES_KBPS, THESIS_RTT, &[]));
    let series = "UAC → sigkit proxy → built-in UAS";
    input.load_steps =
        vec![step(series, 100.0, 100, 100), step(series, 200.0, 200, 200), step(series, 300.0, 300, 300)];
    input.load_steps.push(step("capacity search, built-in UAS, search 1", 16000.0, 8000, 8000));
    input.capacity = Some(Capacity {
        target: "the built-in UAS".into(),
        service_level: "at most 10 % failed calls, p95 set-up delay at most 250 ms".into(),
        calls_per_s: 24000.0,
        searches: 1,
        ..Capacity::default()
    });
    input.sim = vec![sim("no-handling", 2, 2, 16.33), sim("h1-t1-1s", 2, 0, 0.09), sim("h2-cap503", 2, 0, 0.132)];
    runs::add_seeds(&mut input);
    input
}

/// `html` between `start` and the next `</section>`.
fn section<'a>(html: &'a str, start: &str) -> &'a str {
    let i = html.find(start).unwrap_or_else(|| panic!("no {start}"));
    &html[i..i + html[i..].find("</section>").unwrap()]
}

/// The section's text with the abbreviations' titles taken out, so that a
/// term inside a title is not taken for a use of it.
fn without_titles(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(" title=\"") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 8..];
        rest = &after[after.find('"').unwrap() + 1..];
    }
    out.push_str(rest);
    out
}

/// The text a reader sees: tags dropped, entities decoded.
fn visible(s: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// Whether the first whole-word use of `term` in `text` is explained.
fn first_use_explained(text: &str, term: &str) -> Option<bool> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut from = 0;
    while let Some(i) = text[from..].find(term).map(|i| i + from) {
        let before = text[..i].chars().last();
        let after = text[i + term.len()..].chars().next();
        if !word(before) && !word(after) {
            return Some(text[..i].ends_with("<abbr>"));
        }
        from = i + term.len();
    }
    None
}

#[test]
fn the_report_opens_with_the_findings_and_reproduces_every_published_figure() {
    let dir = scratch("page");
    let input = eval_input();
    let files = write_report(&input, &dir).unwrap();
    let html = std::fs::read_to_string(&files.index).unwrap();

    // The summary comes first: before the runs and every data section.
    let summary_at = html.find("<section class=\"findings\"").unwrap();
    let first_h2 = html.find("<h2 id=").unwrap();
    assert!(summary_at < first_h2, "the summary is not first");
    let summary = section(&html, "<section class=\"findings\"");
    let headline = published_compression().into_iter().find(|p| p.key == "h-shared-8192").unwrap();
    let ours = input.published_compression.iter().find(|m| m.key == headline.key).unwrap();
    for text in [
        "Compression against the SigComp thesis",
        "2,917 of 10,640 bytes",
        "Compression against Open SigComp",
        "3,048 of 6,966 bytes",
        "RAN delay",
        "≈ 6.9 s",
        "Load through the proxy",
        "every step up to 300 calls/s had at least 99 % of its calls successful (600 calls)",
        "24,000 calls/s",
        "SIP overload (simulated)",
        "2 of 2 seeds",
    ] {
        assert!(visible(summary).contains(text), "{text} missing from the summary: {}", visible(summary));
    }
    // Our headline figure, as measured (the report writes "1,707").
    let plain = visible(summary).replace(',', "");
    assert!(plain.contains(&format!("{} of 10640 bytes", ours.sigcomp)), "{plain}");
    // Judged findings have a verdict, other systems' figures are context.
    assert!(summary.contains("class=\"v-differ\">differs (ours lower)"), "{summary}");
    assert!(summary.contains("class=\"v-match\">matches"), "{summary}");
    assert_eq!(summary.matches("class=\"v-context\">context").count(), 2, "{summary}");
    // No TAROC finding without a capture.
    assert!(!summary.contains("TAROC"));

    // Every published figure once: compression, RAN, overload, the rest.
    let repro = section(&html, "<section class=\"repro\"");
    let (main, context) = repro.split_at(repro.find("Context: published figures from other systems").unwrap());
    let rows = main.matches("<tr><td>").count();
    assert_eq!(rows, published_compression().len() + 6 + 4 + 5, "rows of the reproduction tables");
    for source in [
        "Table 11 (look-ahead 18)",
        "Table 13 (priorities 1–4)",
        "Table 16, TCP (Appendix L §14.12.5)",
        "Table 16, UDP",
        "Appendix H §14.8.1",
        "Appendix I §14.9.2",
        "Appendix J §14.10.2",
        "Appendix L §14.12.3",
        "§9.10, Figure 53",
        "§2.1, Figure 2",
        "<td>Table 2</td>",
        "<td>Table 1</td>",
        "§4.3.3, Figure 4.41",
        "Appendix A.3.1–A.3.4",
    ] {
        assert!(main.contains(source), "{source} missing from the reproduction tables");
    }
    // Measured here: no compression, RAN or overload row is unmeasured;
    // Open SigComp's speed and memory and TAROC's throughput are, each with
    // its command.
    assert_eq!(main.matches("not measured in this run: <code>").count(), 5, "unmeasured rows");
    for command in ["scripts/bench-vs-opensigcomp.sh", "sigkit bench --compartments 10000", "sigkit rohc-throughput"] {
        assert!(main.contains(command), "{command} missing");
    }
    // The thesis's Table 16 over TCP against ours, with the DMS/2 reason.
    assert!(main.contains("0.284 (3,017 of 10,640 bytes)") && main.contains("RFC 3320 §7"), "Table 16 over TCP");
    // Other systems' figures only in the context table.
    for other in ["6 to 18 calls/s", "OpenSIPS", "Pentium"] {
        assert!(!main.contains(other), "{other} beside ours in the reproduction tables");
        assert!(context.contains(other), "{other} missing from the context table");
    }

    // Every term used is explained where it first appears, in each section.
    for (name, part) in [("summary", summary), ("reproduction", repro)] {
        let text = without_titles(part);
        for term in [
            "DMS", "SMS", "UDVM", "RAN", "RTT", "fRpD", "p95", "T1", "D1", "TAROC", "BER", "IDEAL", "VJHC", "UAC",
            "UAS", "PBX", "SACK",
        ] {
            if let Some(explained) = first_use_explained(&text, term) {
                assert!(explained, "{term} is not explained at its first use in the {name}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_summary_and_the_tables_fit_an_800_px_window_in_chromium() {
    if !have("chromium") {
        return;
    }
    let dir = scratch("width");
    let files = write_report(&eval_input(), &dir).unwrap();
    let out = Command::new("timeout")
        .args(["120", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(["--virtual-time-budget=10000", "--window-size=800,3000", "--dump-dom"])
        .arg(format!("file://{}", files.index.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let check = dom.split("id=\"repro-width\"").nth(1).unwrap_or_else(|| panic!("no width check in {dom}"));
    let check = &check[..check.find('>').unwrap()];
    let attr = |name: &str| -> f64 {
        let v = check.split(&format!("{name}=\"")).nth(1).unwrap_or_else(|| panic!("no {name} in {check}"));
        v[..v.find('"').unwrap()].parse().unwrap_or_else(|_| panic!("{name} not measured: {check}"))
    };
    assert_eq!(attr("data-viewport"), 800.0, "{check}");
    assert!(attr("data-right") <= 800.0, "a table reaches past 800 px: {check}");
    assert_eq!(attr("data-overflow"), 0.0, "a table's content overflows its box: {check}");
    let _ = std::fs::remove_dir_all(&dir);
}
