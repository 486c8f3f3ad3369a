//! `sigkit eval --quick`: the main job end to end, its results, and its
//! report as a browser renders it (headless Chromium); once on the
//! built-in UAS with Kamailio and SIPp out of reach (an empty PATH), once
//! through Kamailio to SIPp's UAS where they are installed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn have(tool: &str) -> bool {
    let found =
        Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success());
    assert!(found || std::env::var_os("CI").is_none(), "{tool} is required in CI (.ci/run installs it)");
    found
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

/// Runs `sigkit eval --quick` into a fresh directory with `path` as PATH
/// (None: the test's own), and returns the directory and summary.json.
fn eval(name: &str, path: Option<&Path>, extra: &[&str]) -> (PathBuf, serde_json::Value) {
    let out = std::env::temp_dir().join(format!("sigkit-eval-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sigkit"));
    cmd.args(["eval", "--quick", "-o"]).arg(&out).arg("--corpus").arg(corpus()).args(extra);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let run = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let summary = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (out, summary)
}

/// The ids of the page's plots.
fn plots(html: &str) -> Vec<String> {
    html.split("<figure class=\"plot\" id=\"").skip(1).map(|s| s[..s.find('"').unwrap()].to_string()).collect()
}

/// Every call of the load run through the proxy completed, in three steps.
fn load_completed(summary: &serde_json::Value) {
    let load = &summary["proxy_load"];
    assert!(load["successful_calls"].as_u64().unwrap() >= 500, "{load}");
    assert_eq!(load["successful_calls"], load["attempted_calls"], "every call through the proxy completes: {load}");
}

#[test]
fn eval_quick_without_kamailio_and_sipp_runs_on_the_built_in_uas_and_its_report_renders() {
    // No program on PATH: Kamailio and SIPp are "not installed".
    let empty = std::env::temp_dir().join(format!("sigkit-eval-empty-path-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let (out, summary) = eval("built-in", Some(&empty), &[]);

    let flows = std::fs::read_dir(corpus()).unwrap().filter(|e| e.as_ref().unwrap().path().is_dir()).count();
    assert_eq!(summary["compression"].as_array().unwrap().len(), flows);
    for f in summary["compression"].as_array().unwrap() {
        assert!(f["shared"].as_f64().unwrap() < f["basic"].as_f64().unwrap(), "{f}");
    }
    let ran = summary["ran"].as_array().unwrap();
    assert_eq!(ran.len(), 7);
    let pct: Vec<f64> = ran.iter().map(|r| r["improvement_pct"].as_f64().unwrap()).collect();
    assert!(pct.windows(2).all(|w| w[0] > w[1]), "SigComp saves most on the slowest link: {pct:?}");
    assert_eq!(summary["load_path"], "built-in");
    let notes = summary["notes"].as_str().unwrap();
    assert!(notes.contains("built-in UAS") && notes.contains("not installed: kamailio, sipp"), "{notes}");
    load_completed(&summary);
    assert!(summary["capacity"]["estimate"]["mean_cps"].as_f64().unwrap() > 0.0);
    // The overload thesis's baseline collapses; raising T1 prevents it.
    let overload = summary["overload"].as_array().unwrap();
    let collapsed = |i: usize| (overload[i]["scenario"].as_str().unwrap(), overload[i]["collapsed"].as_u64().unwrap());
    assert_eq!(overload.len(), 3);
    assert_eq!(collapsed(0), ("no-handling", 2));
    assert_eq!(collapsed(1), ("h1-t1-1s", 0));

    // One generator (sigkit-report): every part plotted, as PNG too, with
    // the seeds' values beside ours, and the path of the load run named.
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let ids = plots(&html);
    for id in [
        "load-throughput",
        "load-setup",
        "load-throughput-2",
        "published-throughput",
        "compression-3gpp-video-call",
        "compression-3gpp-video-call-cumulative",
        "ran-delay",
        "ran-saved",
        "ran-reduction",
        "sim-goodput",
        "sim-pending",
    ] {
        assert!(ids.iter().any(|i| i == id), "{id} missing from {ids:?}");
        assert!(out.join(format!("{id}.png")).exists(), "{id}.png");
    }
    assert!(!html.contains("no data"));
    for text in [
        "UAC → sigkit proxy → built-in UAS",
        "not installed: kamailio, sipp",
        "Appendix H §14.8",
        "Figure 53",
        "Table 5-2",
        "capacity search, built-in UAS",
        "500 of 500 collapsed",
    ] {
        assert!(html.contains(text), "{text} missing");
    }
    // The summary of findings first; every published figure the run can
    // measure measured (the compression figures at their own settings).
    let (summary_at, runs_at) = (html.find("Summary of findings").unwrap(), html.find("<h2 id=\"runs\"").unwrap());
    assert!(summary_at < runs_at, "the summary is not first");
    let repro = &html[html.find("id=\"reproduction\"").expect("no reproduction section")..];
    assert!(repro.contains("(53 of 53 figures measured in this run)"), "SigComp thesis rows not all measured");
    assert!(repro.contains("(4 of 4 figures measured in this run)"), "overload rows not all measured");
    // The report of the results file is the same report.
    let again = out.join("again");
    let r = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .arg("report")
        .arg(out.join("results.sqlite"))
        .arg("-o")
        .arg(&again)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(plots(&std::fs::read_to_string(again.join("index.html")).unwrap()), ids);

    if !have("chromium") {
        return;
    }
    let url = format!("file://{}", out.join("index.html").display());
    let shot = out.join("screenshot.png");
    let status = Command::new("timeout")
        .args(["60", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1100,3200"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(shot.exists(), "{}", String::from_utf8_lossy(&status.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    // A blank page compresses to a few kilobytes; plots and tables do not.
    assert!(png.len() > 100_000, "screenshot of {} bytes", png.len());
    // The page's own check: every plot laid out with its lines and text,
    // and no script error.
    let dom = Command::new("timeout")
        .args(["60", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(&url)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(dom.contains("data-status=\"ok\""), "{}", dom.split("render-check").nth(1).unwrap_or(""));
    assert_eq!(plots(&dom), ids);
}

#[test]
fn eval_quick_goes_through_kamailio_to_sipp_where_installed() {
    if !(have("kamailio") && have("sipp")) {
        return;
    }
    let (out, summary) = eval("kamailio", None, &[]);
    assert_eq!(summary["load_path"], "sipp-kamailio");
    // The proxy's upstream was Kamailio and the calls' target SIPp's UAS:
    // every call completed only if both served it.
    load_completed(&summary);
    assert!(out.join("peers/kamailio.cfg").exists() && out.join("peers/sipp-uas.log").exists());
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("UAC → sigkit proxy → Kamailio → SIPp UAS"));
    assert!(html.contains("kamailio 5.") || html.contains("kamailio 6."), "the version used is named");
}

#[test]
fn eval_refuses_to_pretend_kamailio_is_there() {
    let empty = std::env::temp_dir().join(format!("sigkit-eval-empty-path-k-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["eval", "--quick", "--peers", "kamailio", "-o"])
        .arg(empty.join("out"))
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not on PATH: kamailio, sipp"));
}
