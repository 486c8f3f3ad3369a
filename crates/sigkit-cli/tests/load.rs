//! `sigkit load` as a user runs it: SIPp's flags, a UAS and a UAC as two
//! processes on 127.0.0.1, their results file, and `sigkit results`.

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
    let report: serde_json::Value = serde_json::from_slice(&uac.stdout).unwrap();
    assert_eq!(report["summary"]["successful_calls"], 20);
    assert_eq!(report["summary"]["failed_calls"], 0);
    assert!(report["summary"]["setup_ms"]["p95"].as_f64().unwrap() > 0.0);
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
}

#[test]
fn unsupported_sipp_options_are_refused_clearly() {
    let out = sigkit().args(["load", "-sn", "uac", "-users", "10", "127.0.0.1:5060"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not supported yet"));
    let out = sigkit().args(["load", "-sn", "uac", "-sf", "/nonexistent/uac.xml", "127.0.0.1:5060"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/uac.xml"));
    let out = sigkit().args(["load", "-sn", "uac", "nowhere"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = sigkit().args(["results", "/nonexistent/results.sqlite"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}
