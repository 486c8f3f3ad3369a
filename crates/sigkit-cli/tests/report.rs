//! `sigkit report RUN…` on runs' own output: two stepped `sigkit load`
//! runs against a `sigkit load` UAS on 127.0.0.1 (one read from its
//! `--json` output, one from its `--db` results file) and a `sigkit
//! capacity --json` search, drawn in one report with their real values;
//! and inputs with nothing to plot refused.
#![allow(clippy::unwrap_used)] // a test fails by panicking

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Stdio};

fn sigkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sigkit"))
}

/// The cells of the table rows of `html` whose first cell is `first`.
fn rows_starting<'a>(html: &'a str, first: &str) -> Vec<Vec<&'a str>> {
    html.split("<tr>")
        .map(|r| {
            r.split("</tr>")
                .next()
                .unwrap()
                .split("<td")
                .skip(1)
                .map(|c| c[c.find('>').unwrap() + 1..].trim_end_matches("</td>"))
                .collect::<Vec<_>>()
        })
        .filter(|cells| cells.first() == Some(&first))
        .collect()
}

/// The page's table whose caption (or fold's summary) begins `caption`.
fn table<'a>(html: &'a str, caption: &str) -> &'a str {
    let at = html.find(&format!(">{caption}")).unwrap_or_else(|| panic!("no table {caption}"));
    let rest = &html[at..];
    &rest[..rest.find("</table>").unwrap()]
}

fn run_ok(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}:\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn real_load_and_capacity_runs_become_a_report_with_their_values() {
    let dir = std::env::temp_dir().join(format!("sigkit-report-runs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut uas = sigkit()
        .args(["load", "-sn", "uas", "-i", "127.0.0.1", "-p", &port.to_string(), "-timeout", "120s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let target = format!("127.0.0.1:{port}");
    // Run "a": its --json output; run "b": its results file.
    let a = run_ok(sigkit().args(["load", "-sn", "uac", "--steps", "20:60:20", "--dwell", "1s", "--json", &target]));
    std::fs::write(dir.join("a.json"), &a.stdout).unwrap();
    run_ok(
        sigkit()
            .args(["load", "-sn", "uac", "--steps", "30:90:30", "--dwell", "1s", "--db"])
            .arg(dir.join("b.sqlite"))
            .arg(&target),
    );
    let _ = uas.kill();
    let _ = uas.wait();
    let c = run_ok(sigkit().args([
        "capacity", "--json", "--start", "100", "--step", "100", "--max", "200", "--step-s", "0.5", "--repeat", "1",
    ]));
    std::fs::write(dir.join("c.json"), &c.stdout).unwrap();

    let out = dir.join("report");
    run_ok(
        sigkit()
            .arg("report")
            .arg(dir.join("a.json"))
            .arg(dir.join("b.sqlite"))
            .arg(dir.join("c.json"))
            .arg("-o")
            .arg(&out),
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    for plot in ["load-throughput", "load-failed", "load-setup"] {
        assert!(html.contains(&format!("<figure class=\"plot\" id=\"{plot}\">")), "{plot} missing");
        assert!(out.join(format!("{plot}.png")).exists());
    }
    // Run a's steps, with the counts and set-up delays its JSON reported.
    let report: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    let calls = rows_starting(table(&html, "Calls per step"), "a");
    let setups = rows_starting(table(&html, "Set-up delay and what went wrong"), "a");
    assert_eq!((calls.len(), setups.len()), (3, 3), "a calls row and a set-up row per step: {calls:?}");
    for (step, offered) in steps.iter().zip([20.0, 40.0, 60.0]) {
        let row = calls.iter().find(|r| r[1] == format!("{offered:.1}")).unwrap();
        // Each step over its own duration, its successful calls per second
        // of it.
        let duration = step["duration_s"].as_f64().unwrap();
        assert_eq!(row[2], format!("{duration:.2}"));
        assert_eq!(row[3], step["attempted"].to_string());
        assert_eq!(row[4], step["successful"].to_string());
        assert!(step["successful"].as_u64().unwrap() > 0);
        assert_eq!(row[7], format!("{:.1}", step["successful"].as_f64().unwrap() / duration));
        // Unfinished: attempted, neither successful nor failed.
        let unfinished = step["attempted"].as_u64().unwrap()
            - step["successful"].as_u64().unwrap()
            - step["failed"].as_u64().unwrap();
        assert_eq!(row[6], unfinished.to_string());
        let setup = setups.iter().find(|r| r[1] == format!("{offered:.1}")).unwrap();
        assert_eq!(setup[3], format!("{:.2}", step["setup_ms"]["p95"].as_f64().unwrap()));
        // What went wrong, per step, as the run counted it.
        assert_eq!(setup[5], step["retransmissions"].to_string());
        assert_eq!(setup[6], step["timeouts"].to_string());
    }
    // Run b from its results file: three steps at its rates.
    let b: Vec<String> = rows_starting(table(&html, "Calls per step"), "b").iter().map(|r| r[1].to_string()).collect();
    assert_eq!(b, ["30.0", "60.0", "90.0"]);
    // The capacity search's steps, with their p95 only.
    let c: Vec<Vec<&str>> = rows_starting(table(&html, "Calls per step"), "c, search 1");
    assert!(c.iter().any(|r| r[1] == "100.0"), "{c:?}");
    // The framework thesis's load tables beside ours.
    assert!(html.contains("published-throughput") && html.contains("Table 5-2"));

    // Inputs with nothing to plot are refused, each by name.
    std::fs::write(dir.join("empty.json"), "{}").unwrap();
    std::fs::write(dir.join("other.json"), r#"{"seconds": 3, "compression": []}"#).unwrap();
    std::fs::write(
        dir.join("uas.json"),
        r#"{"summary": {"role": "uas", "successful_calls": 5}, "intervals": [], "steps": []}"#,
    )
    .unwrap();
    for (file, says) in
        [("empty.json", "nothing to plot"), ("other.json", "unknown field"), ("uas.json", "nothing to plot")]
    {
        let r = sigkit().arg("report").arg(dir.join(file)).arg("-o").arg(dir.join("refused")).output().unwrap();
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(3), "{file}: {stderr}");
        assert!(stderr.contains(file) && stderr.contains(says), "{file}: {stderr}");
    }
    assert!(!Path::new(&dir.join("refused/index.html")).exists());
}

#[test]
fn a_sim_run_is_reported_beside_the_overload_thesis() {
    let dir = std::env::temp_dir().join(format!("sigkit-report-sim-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("sim.sqlite");
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sigkit-sim/scenarios");
    // The thesis's baseline, cut to 200 s (the surge is at 50-60 s; a
    // collapse has set in by 150 s).
    let out = run_ok(
        sigkit()
            .arg("sim")
            .arg(scenarios.join("no-handling.toml"))
            .args([
                "--seeds",
                "2",
                "--set",
                "duration=200.0",
                "--set",
                "collapse_window=[150.0, 200.0]",
                "--json",
                "--db",
            ])
            .arg(&db),
    );
    let sim: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let report = dir.join("report");
    run_ok(sigkit().arg("report").arg(&db).arg("-o").arg(&report));
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    for plot in ["sim-goodput", "sim-pending"] {
        assert!(html.contains(&format!("<figure class=\"plot\" id=\"{plot}\">")), "{plot} missing");
        assert!(report.join(format!("{plot}.png")).exists());
    }
    let rows = rows_starting(&html, "no-handling");
    assert_eq!(rows.len(), 1, "{rows:?}");
    let study = &sim["study"];
    assert_eq!(rows[0][3], format!("{} of 2", study["collapsed"]));
    assert_eq!(rows[0][5], format!("{:.1}", study["window_goodput_mean"].as_f64().unwrap()));
    assert!(rows[0][7].contains("500 of 500 collapsed"), "{rows:?}");
}
