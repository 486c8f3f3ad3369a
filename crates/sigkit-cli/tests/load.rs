//! `sigkit load` as a user runs it: SIPp's flags, a UAS and a UAC as two
//! processes on 127.0.0.1, their results file, and `sigkit results`.
#![allow(clippy::unwrap_used)] // a test fails by panicking

use std::net::UdpSocket;
use std::process::{Command, Stdio};

fn sigkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sigkit"))
}

#[test]
fn a_uac_and_a_uas_with_sipps_flags_complete_their_calls_and_record_them() {
    let dir = std::env::temp_dir().join(format!("sigkit-load-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let uas = sigkit()
        .args(["load", "-sn", "uas", "-i", "127.0.0.1", "-p", &port.to_string(), "-m", "20", "-timeout", "60s"])
        .arg("--db")
        .arg(dir.join("uas.sqlite"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let uac = sigkit()
        .args(["load", "-sn", "uac", "-r", "40", "-m", "20", "-d", "10", "-fd", "1", "-timeout", "60s", "--json"])
        .arg("--db")
        .arg(dir.join("uac.sqlite"))
        .arg(format!("127.0.0.1:{port}"))
        .output()
        .unwrap();
    assert!(uac.status.success(), "{}", String::from_utf8_lossy(&uac.stderr));
    // stderr is no terminal here: no progress bar, no escape codes.
    let stderr = String::from_utf8_lossy(&uac.stderr);
    assert!(!stderr.contains('\x1b') && !stderr.contains("set-up p95"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&uac.stdout).unwrap();
    assert_eq!(report["summary"]["successful_calls"], 20);
    assert_eq!(report["summary"]["failed_calls"], 0);
    assert!(report["summary"]["setup_ms"]["p95"].as_f64().unwrap() > 0.0);
    // Every client transaction timed, by method: the INVITE's to its
    // first provisional and first final response, the BYE's to its 200.
    let txn = &report["summary"]["transactions_ms"];
    assert_eq!(txn["INVITE"]["final"]["count"], 20, "{txn}");
    assert_eq!(txn["INVITE"]["provisional"]["count"], 20, "{txn}");
    assert_eq!(txn["BYE"]["final"]["count"], 20, "{txn}");
    assert_eq!(txn["BYE"]["provisional"]["count"], 0, "{txn}");
    assert!(txn.get("ACK").is_none(), "{txn}");
    let (p50, p99) = (txn["INVITE"]["final"]["p50"].as_f64().unwrap(), txn["INVITE"]["final"]["p99"].as_f64().unwrap());
    assert!(p50 > 0.0 && p50 <= p99 && p99 < 1000.0, "{txn}");
    let per_interval: u64 = report["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["transactions_ms"]["BYE"]["final"]["count"].as_u64())
        .sum();
    assert_eq!(per_interval, 20, "the intervals add up to the run");
    let uas = uas.wait_with_output().unwrap();
    assert!(uas.status.success(), "{}", String::from_utf8_lossy(&uas.stderr));
    assert!(String::from_utf8_lossy(&uas.stdout).contains("20 successful, 0 failed"));

    let list = sigkit().arg("results").arg(dir.join("uac.sqlite")).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(list.contains("run 1 load") && list.contains("tables: load_intervals"), "{list}");
    let csv = sigkit().arg("results").arg(dir.join("uac.sqlite")).args(["--csv", "load_intervals"]).output().unwrap();
    assert!(csv.status.success());
    let csv = String::from_utf8_lossy(&csv.stdout);
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("run_id,t_s,offered_cps,attempted,successful,failed"));
    let successful: u64 = lines.map(|l| l.split(',').nth(4).unwrap().parse::<u64>().unwrap()).sum();
    assert!(successful <= 20 && successful > 0, "interval rows count the calls: {csv}");
    let csv =
        sigkit().arg("results").arg(dir.join("uac.sqlite")).args(["--csv", "load_transactions"]).output().unwrap();
    assert!(csv.status.success(), "{}", String::from_utf8_lossy(&csv.stderr));
    let csv = String::from_utf8_lossy(&csv.stdout);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name}: {csv}"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let run_row = rows
        .iter()
        .find(|r| r[col("scope")] == "run" && r[col("method")] == "INVITE" && r[col("kind")] == "final")
        .unwrap_or_else(|| panic!("{csv}"));
    assert_eq!(run_row[col("count")], "20", "{csv}");
    let bye_in_intervals: u64 = rows
        .iter()
        .filter(|r| r[col("scope")] == "interval" && r[col("method")] == "BYE" && r[col("kind")] == "final")
        .map(|r| r[col("count")].parse::<u64>().unwrap())
        .sum();
    assert_eq!(bye_in_intervals, 20, "{csv}");
}

#[test]
fn unsupported_sipp_options_are_refused_clearly() {
    let out = sigkit().args(["load", "-sn", "uac", "-users", "10", "127.0.0.1:5060"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not supported yet"));
    let out = sigkit().args(["load", "-sn", "uac", "-sf", "/nonexistent/uac.xml", "127.0.0.1:5060"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/uac.xml"));
    let out = sigkit().args(["load", "-sn", "uac", "nowhere"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = sigkit().args(["results", "/nonexistent/results.sqlite"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
}

/// `sigkit load` run in a pseudo-terminal (util-linux `script`), so that
/// stderr is a terminal: what it printed there, exit code included.
fn in_a_terminal(args: &str) -> (bool, String) {
    let command = format!("{} {args}", env!("CARGO_BIN_EXE_sigkit"));
    let out = Command::new("script").args(["-qec", &command, "/dev/null"]).stdin(Stdio::null()).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_terminal_gets_the_screen_or_the_bar_unless_quiet_or_json() {
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut uas = sigkit()
        .args(["load", "-sn", "uas", "-i", "127.0.0.1", "-p", &port.to_string(), "-timeout", "60s", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let uac = format!("load -sn uac -r 20 -m 30 -fd 200ms -nostdin -timeout 60s 127.0.0.1:{port}");
    // SIPp's scenario screen by default, its rows counting the calls.
    let (ok, screen) = in_a_terminal(&uac);
    assert!(ok, "{screen}");
    assert!(
        screen.contains("Scenario Screen") && screen.contains("      INVITE ---------->         30 "),
        "{screen:?}"
    );
    assert!(!screen.contains("set-up p95"), "no bar with the screen: {screen:?}");
    // The bar with --bar (drawn with escape codes, redrawn in place), with
    // the live rate, successes, failures and p95 set-up delay; then the summary.
    let (ok, screen) = in_a_terminal(&format!("{uac} --bar"));
    assert!(ok, "{screen}");
    assert!(screen.contains('\x1b'), "{screen:?}");
    assert!(screen.contains("/30 ") && screen.contains(" ok ") && screen.contains("set-up p95"), "{screen:?}");
    assert!(screen.contains("30 successful, 0 failed"), "{screen:?}");
    assert!(!screen.contains("Scenario Screen"), "{screen:?}");
    for quiet in ["--quiet", "--json"] {
        let (ok, screen) = in_a_terminal(&format!("{uac} {quiet}"));
        assert!(ok, "{screen}");
        assert!(!screen.contains("set-up p95") && !screen.contains("/30 "), "{quiet}: {screen:?}");
        assert!(!screen.contains("Scenario Screen"), "{quiet}: {screen:?}");
    }
    let _ = uas.kill();
    let _ = uas.wait();
}
