//! `sigkit analyze` shows calls: traffic that is not SIP counted apart,
//! and the --call and --method filters.

// A test fails by panicking.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::have;
use serde_json::Value;

fn sigkit(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_sigkit")).args(args).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    out
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn data(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../sigkit-analyze/tests/data");
    dir.join(name).to_str().unwrap().to_string()
}

fn http_capture() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../taroc/tests/data/http-bulk-lo.pcap");
    path.to_str().unwrap().to_string()
}

fn json(args: &[&str]) -> Value {
    let mut all = vec!["analyze"];
    all.extend_from_slice(args);
    all.push("--json");
    serde_json::from_str(&ok(&sigkit(&all))).unwrap()
}

/// tshark's fields of a capture's frames, one row per frame, tab-separated.
fn tshark_fields(capture: &str, decode_as: &[String], filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r", capture]);
    for d in decode_as {
        cmd.args(["-d", d]);
    }
    if !filter.is_empty() {
        cmd.args(["-Y", filter]);
    }
    cmd.args(["-T", "fields"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

/// The real HTTP transfer (curl from python's http.server) is no SIP:
/// 0 SIP flows, and its bytes, as tshark counts them, reported as other.
#[test]
fn an_http_transfer_is_reported_apart_from_sip() {
    let capture = http_capture();
    let text = ok(&sigkit(&["analyze", &capture]));
    let first = text.lines().next().unwrap();
    let a = json(&[&capture]);
    assert_eq!(a["flows"].as_array().unwrap().len(), 0);
    let bytes = a["other_bytes"].as_u64().unwrap();
    assert!(first.ends_with(&format!("0 SIP flows; other: 1 flows, {bytes} bytes")), "{first}");
    assert!(!text.contains("bytes of SIP"), "{text}");
    if have("tshark") {
        let tcp: u64 =
            tshark_fields(&capture, &[], "", &["tcp.len"]).iter().map(|r| r[0].parse::<u64>().unwrap()).sum();
        assert_eq!(bytes, tcp);
    }
    // And a SIP capture still counts its one SIP flow, nothing else.
    let sip = ok(&sigkit(&["analyze", &data("sip-tcp.pcapng"), "--algo", "lzss"]));
    assert!(sip.lines().next().unwrap().ends_with("1 SIP flows; other: 0 flows, 0 bytes"), "{sip}");
}

/// The Call-IDs of an analysis's messages, in order of first appearance.
fn call_ids(a: &Value) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for f in a["flows"].as_array().unwrap() {
        for m in f["messages"].as_array().unwrap() {
            let id = m["call_id"].as_str().unwrap().to_string();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

#[test]
fn call_and_method_filters_are_documented_and_checked() {
    let help = ok(&sigkit(&["analyze", "--help"]));
    for option in ["--call <CALL-ID>", "--method <METHOD>"] {
        assert!(help.contains(option), "{option} missing from --help: {help}");
    }
    let capture = data("sip-udp.pcapng");
    let ids = call_ids(&json(&[&capture]));
    assert_eq!(ids.len(), 3);
    let id = ids[0].as_str();
    let one = json(&[&capture, "--call", id]);
    let messages = one["flows"][0]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 14);
    assert!(messages.iter().all(|m| m["call_id"] == id));
    assert_eq!(one["messages_filtered_out"], 28);
    let byes = json(&[&capture, "--method", "BYE", "--call", &format!("{id},{}", ids[1])]);
    let summaries: Vec<&str> =
        byes["flows"][0]["messages"].as_array().unwrap().iter().map(|m| m["summary"].as_str().unwrap()).collect();
    assert_eq!(summaries, ["BYE", "200 BYE", "BYE", "200 BYE"]);
    // The table says what was filtered, and that nothing passed.
    let none = ok(&sigkit(&["analyze", &capture, "--call", "no-such-call", "--algo", "lzss"]));
    assert!(
        none.contains("filter: call no-such-call; left out 42 SIP messages, and 1 SIP flows with none kept"),
        "{none}"
    );
    assert!(none.contains("no SIP message passed the filter"), "{none}");
    // A blank value is a usage error.
    for bad in [["--call", ""], ["--method", "IN VITE"]] {
        let out = sigkit(&["analyze", &capture, bad[0], bad[1]]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(bad[0]));
    }
}
