//! `sigkit eval --quick`: the main job end to end, its results, and its
//! report as a browser renders it (headless Chromium); once on the
//! built-in UAS with Kamailio and SIPp out of reach (an empty PATH), once
//! through Kamailio to SIPp's UAS where they are installed, run as a new
//! user runs it: from an empty folder, with the default (relative) output
//! folder. A peer that does not start, a part that fails and an
//! interrupt each still leave a report of what finished.
#![allow(clippy::unwrap_used)] // a test fails by panicking

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

/// A fresh, empty folder for test `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sigkit-eval-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `sigkit eval --quick EXTRA` in the empty folder `cwd` with `path`
/// as PATH (None: the test's own); the exit code, stderr and the
/// summary.json of the output folder `out` (relative to `cwd`).
fn eval_in(cwd: &Path, out: &str, path: Option<&Path>, extra: &[&str]) -> (Option<i32>, String, serde_json::Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sigkit"));
    cmd.current_dir(cwd).args(["eval", "--quick"]).args(extra);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let run = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let summary = std::fs::read_to_string(cwd.join(out).join("summary.json"))
        .unwrap_or_else(|e| panic!("no summary.json ({e}): {stderr}"));
    (run.status.code(), stderr, serde_json::from_str(&summary).unwrap())
}

/// Runs `sigkit eval --quick -o OUT EXTRA` into a fresh directory with
/// `path` as PATH, and returns the directory and summary.json.
fn eval(name: &str, path: Option<&Path>, extra: &[&str]) -> (PathBuf, serde_json::Value) {
    let out = scratch(name);
    let mut args = vec!["-o", out.to_str().unwrap()];
    args.extend(extra);
    let (code, stderr, summary) = eval_in(&out, "", path, &args);
    assert_eq!(code, Some(0), "{stderr}");
    (out, summary)
}

/// An empty folder to use as PATH: Kamailio and SIPp "not installed".
fn empty_path(name: &str) -> PathBuf {
    scratch(&format!("{name}-empty-path"))
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
    // No program on PATH: Kamailio and SIPp are "not installed". The
    // corpus is the one given (the repository's), not the built-in one.
    let empty = empty_path("built-in");
    let corpus_arg = corpus();
    let (out, summary) = eval("built-in", Some(&empty), &["--corpus", corpus_arg.to_str().unwrap()]);
    assert_eq!(summary["status"], "complete");

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
    assert_eq!(
        summary["warnings"][0],
        "The load run went to the built-in UAS, not through Kamailio to SIPp's UAS: not installed: kamailio, sipp."
    );
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
fn eval_quick_runs_from_an_empty_folder_through_kamailio_to_sipp_where_installed() {
    if !(have("kamailio") && have("sipp")) {
        return;
    }
    // As a new user runs it: from a folder with no corpus in it, the
    // default output folder `report` (relative), and the peers on PATH.
    let cwd = scratch("empty-folder");
    let (code, stderr, summary) = eval_in(&cwd, "report", None, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(summary["status"], "complete", "{stderr}");
    assert_eq!(summary["load_path"], "sipp-kamailio", "{stderr}");
    // The proxy's upstream was Kamailio and the calls' target SIPp's UAS:
    // every call completed only if both served it.
    load_completed(&summary);
    // The built-in corpus: every flow of the repository's.
    let flows = std::fs::read_dir(corpus()).unwrap().filter(|e| e.as_ref().unwrap().path().is_dir()).count();
    assert_eq!(summary["compression"].as_array().unwrap().len(), flows);
    assert_eq!(summary["ran"].as_array().unwrap().len(), 7);
    let out = cwd.join("report");
    assert!(out.join("peers/kamailio.cfg").exists() && out.join("peers/sipp-uas.log").exists());
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("UAC → sigkit proxy → Kamailio → SIPp UAS"));
    assert!(html.contains("kamailio 5.") || html.contains("kamailio 6."), "the version used is named");
    // Like for like: the same steps without the proxy, from sigkit's UAC
    // and from SIPp's, each a load run of its own in the results file.
    assert!(html.contains("SIPp UAC → Kamailio → SIPp UAS"));
    assert!(html.contains("so the proxy adds"), "the summary compares the proxy with Kamailio alone");
    let steps = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .arg("results")
        .arg(out.join("results.sqlite"))
        .args(["--csv", "load_steps"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&steps.stdout);
    let mut by_run = std::collections::BTreeMap::<String, (u64, u64)>::new();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let e = by_run.entry(cells[0].to_string()).or_default();
        e.0 += cells[col("attempted")].parse::<u64>().unwrap();
        e.1 += cells[col("successful")].parse::<u64>().unwrap();
    }
    assert_eq!(by_run.len(), 3, "the proxied run, sigkit's UAC and SIPp's UAC straight to Kamailio: {by_run:?}");
    for (run, (attempted, successful)) in &by_run {
        assert_eq!(*attempted, 600, "run {run}");
        assert!(*successful >= 590, "run {run}: {successful} of {attempted}");
    }
}

#[test]
fn a_kamailio_that_does_not_start_leaves_the_load_run_on_the_built_in_uas_with_a_note() {
    if !(have("kamailio") && have("sipp")) {
        return;
    }
    let cwd = scratch("bad-kamailio");
    std::fs::write(cwd.join("broken.cfg"), "this is not a Kamailio configuration\n").unwrap();
    let (code, stderr, summary) = eval_in(&cwd, "out", None, &["-o", "out", "--kamailio-cfg", "broken.cfg"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("Kamailio did not start") && stderr.contains("falls back to the built-in UAS"), "{stderr}");
    assert_eq!(summary["load_path"], "built-in");
    load_completed(&summary);
    let notes = summary["notes"].as_str().unwrap();
    assert!(notes.contains("Kamailio did not start: Kamailio exited at start"), "{notes}");
    assert!(notes.contains("parse error in config file"), "Kamailio's own reason is kept: {notes}");
    let html = std::fs::read_to_string(cwd.join("out/index.html")).unwrap();
    let first =
        &html[html.find("Read this first").expect("a warning at the top")..html.find("id=\"summary\"").unwrap()];
    assert!(
        first.contains("The load run went to the built-in UAS") && first.contains("Kamailio did not start"),
        "{first}"
    );
    assert!(html.contains("UAC → sigkit proxy → built-in UAS"));
}

#[test]
fn a_part_that_fails_is_noted_and_the_rest_is_reported() {
    let cwd = scratch("no-corpus");
    let empty = empty_path("no-corpus");
    let (code, stderr, summary) =
        eval_in(&cwd, "out", Some(&empty), &["-o", "out", "--corpus", "no-such-corpus", "--peers", "built-in"]);
    assert_eq!(code, Some(1), "a part failed: {stderr}");
    assert_eq!(summary["status"], "incomplete");
    let problems: Vec<&str> = summary["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("compression") && problems[0].contains("no-such-corpus"), "{problems:?}");
    assert!(problems[1].starts_with("the RAN-delay study failed"), "{problems:?}");
    // What did not depend on the corpus ran and is in the report.
    load_completed(&summary);
    assert_eq!(summary["overload"].as_array().unwrap().len(), 3);
    let html = std::fs::read_to_string(cwd.join("out/index.html")).unwrap();
    let first =
        &html[html.find("Read this first").expect("a warning at the top")..html.find("id=\"summary\"").unwrap()];
    assert!(first.contains("no-such-corpus"), "the report says first what failed: {first}");
    assert!(html.contains("sim-goodput"));
}

#[test]
fn an_interrupted_run_records_and_reports_what_finished() {
    let cwd = scratch("interrupted");
    let empty = empty_path("interrupted");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .current_dir(&cwd)
        .args(["eval", "--quick", "-o", "out"])
        .env("PATH", &empty)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the capacity search has begun: compression, the RAN
    // study and the load run have finished by then.
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push(line.clone());
        if line.contains("capacity search") {
            break;
        }
    }
    assert!(seen.iter().any(|l| l.contains("capacity search")), "{seen:?}");
    let kill = Command::new("/bin/kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["status"], "interrupted");
    load_completed(&summary);
    assert!(summary["compression"].as_array().unwrap().len() >= 8);
    assert!(summary["overload"].as_array().unwrap().is_empty(), "the simulations did not run");
    let problems = summary["problems"].to_string();
    assert!(problems.contains("SIP overload simulations: not run (interrupted)"), "{problems}");
    let html = std::fs::read_to_string(cwd.join("out/index.html")).unwrap();
    let first =
        &html[html.find("Read this first").expect("a warning at the top")..html.find("id=\"summary\"").unwrap()];
    assert!(first.contains("SIP overload simulations: not run (interrupted)"), "{first}");
    assert!(html.contains("load-throughput"));
}

#[test]
fn the_defaults_work_outside_the_repository() {
    // The RAN-delay study of the built-in call, from an empty folder.
    let cwd = scratch("outside");
    let ran = Command::new(env!("CARGO_BIN_EXE_sigkit")).current_dir(&cwd).args(["ran", "--json"]).output().unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", String::from_utf8_lossy(&ran.stderr));
    let input: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap();
    assert!(input["ran"].as_array().unwrap().len() >= 7, "{input}");
    // The report's RAN section of the same call.
    let report = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .current_dir(&cwd)
        .args(["report", "--ran", "-o", "r"])
        .output()
        .unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", String::from_utf8_lossy(&report.stderr));
    assert!(std::fs::read_to_string(cwd.join("r/index.html")).unwrap().contains("ran-delay"));
    // A call that is not there is an input error (exit 3) naming it.
    let missing =
        Command::new(env!("CARGO_BIN_EXE_sigkit")).current_dir(&cwd).args(["ran", "nowhere"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nowhere"));
}

#[test]
fn eval_refuses_to_pretend_kamailio_is_there() {
    let empty = empty_path("refuses");
    let out = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["eval", "--quick", "--peers", "kamailio", "-o"])
        .arg(empty.join("out"))
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not on PATH: kamailio, sipp"));
}
