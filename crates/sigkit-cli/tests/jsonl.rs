//! `sigkit decompress --jsonl`: one endpoint driven by JSON lines.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::*;
use serde_json::{json, Value};
use sigcomp::{Nack, Reason};

/// Feeds `lines` to `sigkit decompress --jsonl ARGS` and parses the answers.
fn jsonl(args: &[&str], lines: &[String]) -> Vec<Value> {
    let mut full = vec!["decompress", "--jsonl"];
    full.extend_from_slice(args);
    let mut input = lines.join("\n");
    input.push('\n');
    let run = sigkit(&full, input.as_bytes());
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let answers: Vec<Value> = run
        .stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad answer {l:?}: {e}")))
        .collect();
    assert_eq!(answers.len(), lines.len(), "one answer per line: {answers:?}");
    answers
}

fn req(msg: &[u8], compartment: Option<&str>) -> String {
    json!({"message_hex": hex::encode(msg), "compartment": compartment, "stream": false}).to_string()
}

fn stream_req(chunk: &[u8], compartment: Option<&str>) -> String {
    json!({"message_hex": hex::encode(chunk), "compartment": compartment, "stream": true}).to_string()
}

fn output_of(v: &Value) -> Vec<u8> {
    hex::decode(v["output_hex"].as_str().unwrap_or_else(|| panic!("no output: {v}"))).unwrap()
}

fn nack_of(v: &Value) -> Nack {
    Nack::parse(&hex::decode(v["nack_hex"].as_str().expect("nack_hex")).unwrap()).unwrap()
}

#[test]
fn success_line_has_every_field() {
    let a = jsonl(&[], &[req(&output_message(b"hello"), None)]);
    assert_eq!(output_of(&a[0]), b"hello");
    assert!(a[0]["cycles"].as_u64().unwrap() > 0);
    assert_eq!(a[0]["nack"], Value::Null);
    assert_eq!(a[0]["nack_hex"], Value::Null);
    assert_eq!(a[0]["states_created"], json!([]));
    assert!(a[0].get("messages").is_none(), "only stream answers carry messages");
}

#[test]
fn compartment_commits_state_for_later_lines() {
    let (maker, id) = state_maker(b"stateful hello", 48);
    let lines = [
        req(&maker, Some("alice")),
        // Named by a 6-byte and by a 9-byte partial identifier.
        req(&access_message(&id.0[..6]), None),
        req(&access_message(&id.0[..9]), Some("alice")),
    ];
    let a = jsonl(&[], &lines);
    assert_eq!(output_of(&a[0]), b"stateful hello");
    assert_eq!(a[0]["states_created"], json!([id.to_hex()]));
    assert_eq!(id.to_hex().len(), 40);
    for v in &a[1..] {
        assert_eq!(v["nack"], Value::Null, "{v}");
        assert_eq!(output_of(v), b"stateful hello");
    }
    // The accessed bytecode asks for the same state again: under a null
    // compartment that is discarded; under "alice" it is refreshed.
    assert_eq!(a[1]["states_created"], json!([]));
    assert_eq!(a[2]["states_created"], json!([id.to_hex()]));
}

#[test]
fn null_compartment_discards_state() {
    let (maker, id) = state_maker(b"never saved", 48);
    let a = jsonl(&[], &[req(&maker, None), req(&access_message(&id.0[..6]), Some("bob"))]);
    assert_eq!(output_of(&a[0]), b"never saved");
    assert_eq!(a[0]["states_created"], json!([]));
    let v = &a[1];
    assert_eq!(v["nack"], "STATE_NOT_FOUND");
    assert_eq!(v["output_hex"], Value::Null);
    assert_eq!(v["states_created"], json!([]));
    let nack = nack_of(v);
    assert_eq!(nack.reason, Reason::StateNotFound);
    assert_eq!(nack.details, &id.0[..6]);
}

#[test]
fn each_compartment_name_gets_its_own_state_memory() {
    // With SMS 2048 one compartment holds one 1100-byte item (cost 1164),
    // not two.
    let (x, xid) = state_maker(b"x", 1100);
    let (y, _) = state_maker(b"y", 1100);
    let (z, _) = state_maker(b"z", 1100);
    let lines = [
        req(&x, Some("a")),
        req(&y, Some("b")),
        req(&access_message(&xid.0[..6]), None), // still there: b is not a
        req(&z, Some("a")),                      // evicts x from a
        req(&access_message(&xid.0[..6]), None),
    ];
    let a = jsonl(&["--sms", "2048"], &lines);
    assert_eq!(a[0]["states_created"], json!([xid.to_hex()]));
    assert_eq!(a[1]["states_created"].as_array().unwrap().len(), 1);
    assert_eq!(output_of(&a[2]), b"x");
    assert_eq!(a[3]["states_created"].as_array().unwrap().len(), 1);
    assert_eq!(a[4]["nack"], "STATE_NOT_FOUND", "{}", a[4]);
}

#[test]
fn failure_reports_cycles_and_nack() {
    let msg = endless_loop();
    let a = jsonl(&[], &[req(&msg, Some("c"))]);
    let v = &a[0];
    assert_eq!(v["nack"], "CYCLES_EXHAUSTED");
    assert_eq!(v["output_hex"], Value::Null);
    assert_eq!(v["states_created"], json!([]));
    // RFC 3320 §8.6: (1000 + 8 × 5 header bytes) × 16 cycles, each JUMP 1.
    assert_eq!(v["cycles"], 16640);
    let nack = nack_of(v);
    assert_eq!(nack.reason, Reason::CyclesExhausted);
    assert_eq!(nack.details, [16]);
    assert_eq!(nack.pc, 128);
    let sha: [u8; 20] = sha1_of(&msg);
    assert_eq!(nack.message_sha1, sha);
    // --cpb doubles the budget.
    let a = jsonl(&["--cpb", "32"], &[req(&msg, None)]);
    assert_eq!(a[0]["cycles"], 33280);
    assert_eq!(nack_of(&a[0]).details, [32]);
}

fn sha1_of(msg: &[u8]) -> [u8; 20] {
    // The NACK of a message that is not itself a NACK carries its SHA-1;
    // take it from the library's own NACK so the test needs no sha1 crate.
    let d = sigcomp::Decompressor::new(sigcomp::Params::default()).unwrap();
    let f = sigcomp::Failure { reason: Reason::UserRequested, opcode: 0, pc: 0, details: Vec::new(), cycles: 0 };
    Nack::parse(&d.nack_for(msg, &f).unwrap()).unwrap().message_sha1
}

#[test]
fn too_short_and_user_requested() {
    let a = jsonl(&[], &[req(&[0xf8], None), req(&user_requested_failure(), None)]);
    assert_eq!(a[0]["nack"], "MESSAGE_TOO_SHORT");
    assert_eq!(nack_of(&a[0]).reason, Reason::MessageTooShort);
    assert_eq!(a[1]["nack"], "USER_REQUESTED");
    assert_eq!(a[1]["cycles"], 1);
}

#[test]
fn stream_lines_split_mid_message() {
    let msgs = [output_message(b"one"), output_message(&[0xFF; 40]), output_message(b"three")];
    let stream = stream_of(&msgs);
    let first_len = stream_of(&msgs[..1]).len();
    let second_end = stream_of(&msgs[..2]).len();
    // Chunk 1 ends inside message 1; chunk 2 completes message 1 and ends
    // between an 0xFF and its escape byte in message 2; chunk 3 ends inside
    // the quoted run that escape starts; chunk 4 completes messages 2 and 3.
    let cut1 = first_len - 4;
    let escape = stream[first_len..].iter().position(|&b| b == 0xFF).unwrap();
    let cut2 = first_len + escape + 1;
    let cut3 = cut2 + 10;
    assert!(stream[cut2] < 0x80, "an 0xFF nn quote");
    assert!(cut3 < second_end);
    let lines = [
        stream_req(&stream[..cut1], None),
        // A message line in between does not disturb the stream.
        req(&output_message(b"datagram"), None),
        stream_req(&stream[cut1..cut2], None),
        stream_req(&stream[cut2..cut3], None),
        stream_req(&stream[cut3..], None),
    ];
    let a = jsonl(&[], &lines);

    let v = &a[0];
    assert_eq!(v["messages"], json!([]));
    assert_eq!(v["output_hex"], Value::Null);
    assert_eq!(v["cycles"], 0);
    assert_eq!(v["nack"], Value::Null);
    assert_eq!(v["states_created"], json!([]));

    assert_eq!(output_of(&a[1]), b"datagram");
    assert!(a[1].get("messages").is_none());

    let v = &a[2];
    let m = v["messages"].as_array().unwrap();
    assert_eq!(m.len(), 1);
    assert_eq!(output_of(&m[0]), b"one");
    assert_eq!(output_of(v), b"one");
    assert_eq!(v["cycles"], m[0]["cycles"]);

    assert_eq!(a[3]["messages"], json!([]));
    assert_eq!(a[3]["output_hex"], Value::Null);

    let v = &a[4];
    let m = v["messages"].as_array().unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(output_of(&m[0]), [0xFF; 40]);
    assert_eq!(output_of(&m[1]), b"three");
    // The first message's fields are repeated at top level.
    for k in ["output_hex", "cycles", "nack", "nack_hex", "states_created"] {
        assert_eq!(v[k], m[0][k], "{k}");
    }
}

#[test]
fn stream_messages_share_state_and_report_failures() {
    let (maker, id) = state_maker(b"on tcp", 40);
    let stream = stream_of(&[maker, access_message(&id.0[..6]), user_requested_failure(), access_message(&id.0[..12])]);
    let a = jsonl(&[], &[stream_req(&stream, Some("tcp-1"))]);
    let m = a[0]["messages"].as_array().unwrap();
    assert_eq!(m.len(), 4);
    assert_eq!(m[0]["states_created"], json!([id.to_hex()]));
    assert_eq!(output_of(&m[1]), b"on tcp");
    assert_eq!(m[2]["nack"], "USER_REQUESTED");
    assert_eq!(nack_of(&m[2]).reason, Reason::UserRequested);
    assert_eq!(output_of(&m[3]), b"on tcp");
}

#[test]
fn framing_error_entry() {
    let mut chunk = stream_of(&[output_message(b"ok")]);
    chunk.extend_from_slice(&[0xF8, 0x00, 0xFF, 0x80]);
    let lines = [stream_req(&chunk, None), stream_req(&stream_of(&[output_message(b"late")]), None)];
    let a = jsonl(&[], &lines);
    let m = a[0]["messages"].as_array().unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(output_of(&m[0]), b"ok");
    assert_eq!(m[1]["nack"], "FRAMING_ERROR");
    assert_eq!(m[1]["output_hex"], Value::Null);
    let nack = nack_of(&m[1]);
    assert_eq!(nack.reason, Reason::FramingError);
    assert_eq!(nack.message_sha1, [0; 20], "RFC 4077: all-zero hash for FRAMING_ERROR");
    // The broken stream delivers nothing more.
    assert_eq!(a[1]["messages"], json!([]));
}

#[test]
fn malformed_lines_get_an_error_and_processing_goes_on() {
    let good = req(&output_message(b"still here"), None);
    let lines = [
        "this is not json".to_string(),
        r#"{"message_hex": "zz", "compartment": null}"#.to_string(),
        r#"{"message_hex": "f80", "compartment": null}"#.to_string(),
        r#"{"compartment": null, "stream": false}"#.to_string(),
        r#"{"message_hex": "f8"}"#.to_string(),
        r#"{"message_hex": "f8", "compartment": 7}"#.to_string(),
        r#"{"message_hex": "f8", "compartment": null, "strem": true}"#.to_string(),
        r#"["f8", null]"#.to_string(),
        String::new(),
        good.clone(),
    ];
    let a = jsonl(&[], &lines);
    let expect = [
        (1, "bad request"),
        (2, "bad message_hex"),
        (3, "odd number of hex digits"),
        (4, "missing field `message_hex`"),
        (5, "missing field `compartment`"),
        (6, "invalid type"),
        (7, "unknown field `strem`"),
        (8, "bad request"),
        (9, "bad request"),
    ];
    for (n, needle) in expect {
        let v = &a[n - 1];
        let err = v["error"].as_str().unwrap_or_else(|| panic!("line {n}: {v}"));
        assert!(err.starts_with(&format!("line {n}: ")), "{err}");
        assert!(err.contains(needle), "line {n}: {err}");
        assert_eq!(v.as_object().unwrap().len(), 1, "only an error: {v}");
    }
    assert_eq!(output_of(&a[9]), b"still here");
}

#[test]
fn invalid_utf8_line_is_an_error_not_the_end() {
    let mut input = b"{\"message_hex\": \"\xff\xfe\", \"compartment\": null}\n".to_vec();
    input.extend_from_slice(req(&output_message(b"after"), None).as_bytes());
    input.push(b'\n');
    let run = sigkit(&["decompress", "--jsonl"], &input);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let answers: Vec<Value> = run.stdout_text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), 2);
    assert!(answers[0]["error"].as_str().unwrap().starts_with("line 1: "));
    assert_eq!(output_of(&answers[1]), b"after");
}

#[test]
fn last_line_without_newline_and_crlf_lines() {
    let input = format!("{}\r\n{}", req(&output_message(b"crlf"), None), req(&output_message(b"eof"), None));
    let run = sigkit(&["decompress", "--jsonl"], input.as_bytes());
    assert_eq!(run.code, Some(0));
    let answers: Vec<Value> = run.stdout_text().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), 2);
    assert_eq!(output_of(&answers[0]), b"crlf");
    assert_eq!(output_of(&answers[1]), b"eof");
}

#[test]
fn answers_are_flushed_line_by_line() {
    // Drive the process interactively: each answer must arrive before the
    // next request is written (and before stdin closes).
    let mut child = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["decompress", "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    for text in ["ping", "pong"] {
        writeln!(stdin, "{}", req(&output_message(text.as_bytes()), None)).unwrap();
        stdin.flush().unwrap();
        let line = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("answer not flushed");
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(output_of(&v), text.as_bytes());
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn hostile_lines_never_panic() {
    let mut seed: u64 = 0x0DDB_A11C_AFE0_0001;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let lines: Vec<String> = (0..300)
        .map(|i| {
            let n = (next() % 200) as usize;
            let mut m: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            if let Some(b) = m.first_mut() {
                *b |= 0xF8;
            }
            let comp = if i % 3 == 0 { Some("x") } else { None };
            if i % 5 == 0 {
                stream_req(&m, comp)
            } else {
                req(&m, comp)
            }
        })
        .collect();
    let a = jsonl(&[], &lines);
    for v in &a {
        assert!(v.get("error").is_none(), "{v}");
        assert!(v.get("cycles").is_some(), "{v}");
    }
}

/// The longest request line `sigkit decompress --jsonl` reads (its module
/// docs): a 1 MiB message in plain hex plus 64 KiB.
const MAX_LINE: usize = 2 * (1 << 20) + 64 * 1024;

#[test]
fn over_long_lines_are_refused_and_the_next_line_is_read() {
    // A 1 MiB message in plain hex fits; one byte over the bound does not,
    // nor does a line of 16 MiB. Each answer is one line, in order.
    let mut big = output_message(b"big");
    big.resize(1 << 20, 0);
    let fits = req(&big, None);
    assert!(fits.len() <= MAX_LINE);
    let just_over = format!(r#"{{"message_hex": "{}", "compartment": null}}"#, "0".repeat(MAX_LINE - 39));
    assert_eq!(just_over.len(), MAX_LINE + 1);
    let huge = format!(r#"{{"message_hex": "{}", "compartment": null}}"#, "ab".repeat(8 << 20));
    let lines = [fits, just_over, req(&output_message(b"after"), None), huge, req(&output_message(b"end"), None)];
    let a = jsonl(&[], &lines);
    assert!(a[0].get("error").is_none(), "a 1 MiB message is a request: {}", a[0]);
    assert!(a[0].get("cycles").is_some(), "{}", a[0]);
    for (n, len) in [(2, MAX_LINE + 1), (4, lines[3].len())] {
        let err = a[n - 1]["error"].as_str().unwrap_or_else(|| panic!("line {n}: {}", a[n - 1]));
        assert_eq!(err, format!("line {n}: line too long: {len} bytes (at most {MAX_LINE})"));
    }
    assert_eq!(output_of(&a[2]), b"after");
    assert_eq!(output_of(&a[4]), b"end");
}

fn close_req(name: &str) -> String {
    json!({ "close": name }).to_string()
}

#[test]
fn close_releases_a_compartments_state() {
    let (maker, id) = state_maker(b"closable", 48);
    let lines = [
        req(&maker, Some("alice")),
        req(&access_message(&id.0[..6]), None),
        close_req("alice"),
        req(&access_message(&id.0[..6]), None),
        close_req("alice"),
        close_req("nobody"),
        // The name starts a fresh compartment.
        req(&maker, Some("alice")),
        req(&access_message(&id.0[..6]), None),
    ];
    let a = jsonl(&[], &lines);
    assert_eq!(a[0]["states_created"], json!([id.to_hex()]));
    assert_eq!(output_of(&a[1]), b"closable");
    assert_eq!(a[2], json!({"closed": "alice", "known": true}));
    assert_eq!(a[3]["nack"], "STATE_NOT_FOUND", "{}", a[3]);
    assert_eq!(a[4], json!({"closed": "alice", "known": false}));
    assert_eq!(a[5], json!({"closed": "nobody", "known": false}));
    assert_eq!(a[6]["states_created"], json!([id.to_hex()]));
    assert_eq!(output_of(&a[7]), b"closable");
}

#[test]
fn a_new_name_after_a_close_gets_its_own_compartment() {
    // SMS 2048 holds one 1100-byte item per compartment. "c", first named
    // after "a" is closed, must not share "b"'s state memory.
    let (x, _) = state_maker(b"x", 1100);
    let (y, yid) = state_maker(b"y", 1100);
    let (z, _) = state_maker(b"z", 1100);
    let lines = [
        req(&x, Some("a")),
        req(&y, Some("b")),
        close_req("a"),
        req(&z, Some("c")),
        req(&access_message(&yid.0[..6]), None),
    ];
    let a = jsonl(&["--sms", "2048"], &lines);
    assert_eq!(a[2]["known"], true);
    assert_eq!(a[3]["states_created"].as_array().unwrap().len(), 1);
    assert_eq!(output_of(&a[4]), b"y", "{}", a[4]);
}

#[test]
fn bad_close_requests_get_an_error() {
    let lines = [
        r#"{"close": 7}"#.to_string(),
        r#"{"close": "a", "compartment": null}"#.to_string(),
        r#"{"close": null}"#.to_string(),
    ];
    let a = jsonl(&[], &lines);
    for (n, v) in a.iter().enumerate() {
        let err = v["error"].as_str().unwrap_or_else(|| panic!("{v}"));
        assert!(err.starts_with(&format!("line {}: bad close request", n + 1)), "{err}");
    }
}

fn metrics_req() -> String {
    json!({ "metrics": true }).to_string()
}

#[test]
fn max_compartments_evicts_the_least_recently_used_and_names_it() {
    let (x, xid) = state_maker(b"x", 100);
    let (y, yid) = state_maker(b"y", 100);
    let (z, zid) = state_maker(b"z", 100);
    let lines = [
        req(&x, Some("alice")),
        req(&y, Some("bob")),
        // alice is used again: bob is now the least recently used.
        req(&x, Some("alice")),
        req(&z, Some("carol")),
        req(&access_message(&yid.0[..6]), None),
        req(&access_message(&xid.0[..6]), None),
        req(&access_message(&zid.0[..6]), None),
        metrics_req(),
        close_req("bob"),
    ];
    let a = jsonl(&["--max-compartments", "2"], &lines);
    for v in &a[..3] {
        assert!(v.get("evicted").is_none(), "{v}");
    }
    assert_eq!(a[3]["evicted"], json!(["bob"]));
    assert_eq!(a[3]["states_created"], json!([zid.to_hex()]));
    assert_eq!(a[4]["nack"], "STATE_NOT_FOUND", "{}", a[4]);
    assert_eq!(output_of(&a[5]), b"x");
    assert_eq!(output_of(&a[6]), b"z");
    let m = &a[7]["metrics"];
    assert_eq!(m["compartments"], 2, "{m}");
    assert_eq!(m["evicted_compartments"], 1, "{m}");
    assert_eq!(m["state_bytes"], 2 * (100 + 64), "{m}");
    assert_eq!(m["max_compartments"], 2, "{m}");
    assert!(m["resident_bytes"].as_u64().unwrap() >= 200, "{m}");
    // An evicted name is forgotten, as after a close.
    assert_eq!(a[8], json!({"closed": "bob", "known": false}));
}

#[test]
fn max_state_bytes_evicts_compartments_over_the_budget() {
    // A 1000-byte state costs 1,064 bytes as RFC 3320 §6.2 counts it, and
    // 1,400 of real memory, which the budget counts: 3,300 holds two.
    let makers: Vec<_> = (0..3).map(|i| state_maker(format!("state {i}").as_bytes(), 1000)).collect();
    let lines = [
        req(&makers[0].0, Some("a")),
        req(&makers[1].0, Some("b")),
        req(&makers[2].0, Some("c")),
        req(&access_message(&makers[0].1 .0[..6]), None),
        req(&access_message(&makers[1].1 .0[..6]), None),
        metrics_req(),
    ];
    let a = jsonl(&["--max-state-bytes", "3300", "--sms", "2048"], &lines);
    assert_eq!(a[2]["evicted"], json!(["a"]));
    assert_eq!(a[3]["nack"], "STATE_NOT_FOUND", "{}", a[3]);
    assert_eq!(output_of(&a[4]), b"state 1");
    let m = &a[5]["metrics"];
    assert_eq!((m["compartments"].as_u64(), m["state_bytes"].as_u64()), (Some(2), Some(2 * 1064)), "{m}");
    assert_eq!(m["max_state_bytes"], 3300);
}

#[test]
fn metrics_of_a_fresh_endpoint_and_bad_metrics_requests() {
    let lines = [
        metrics_req(),
        r#"{"metrics": false}"#.to_string(),
        r#"{"metrics": true, "close": "a"}"#.to_string(),
        r#"{"metrics": true, "x": 1}"#.to_string(),
    ];
    let a = jsonl(&[], &lines);
    let m = &a[0]["metrics"];
    assert_eq!(m["compartments"], 0);
    assert_eq!(m["evicted_compartments"], 0);
    assert_eq!(m["max_compartments"], 65536, "the default Limits");
    assert_eq!(m["max_state_bytes"], 1u64 << 30);
    assert_eq!(a[0].as_object().unwrap().len(), 1);
    assert!(a[1]["error"].as_str().unwrap().contains("must be true"), "{}", a[1]);
    // A close request with another field is refused as a close request.
    assert!(a[2]["error"].as_str().unwrap().starts_with("line 3: bad close request"), "{}", a[2]);
    assert!(a[3]["error"].as_str().unwrap().starts_with("line 4: bad metrics request"), "{}", a[3]);
}

#[test]
fn limit_options_are_checked() {
    for args in [
        vec!["decompress", "--jsonl", "--max-compartments", "0"],
        vec!["decompress", "--jsonl", "--max-compartments", "many"],
        vec!["decompress", "--jsonl", "--max-state-bytes", "-1"],
    ] {
        let run = sigkit(&args, b"");
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    let run = sigkit(&["decompress", "--help"], b"");
    assert_eq!(run.code, Some(0));
    for needle in ["--max-compartments", "--max-state-bytes", "{\"close\": NAME}", "{\"metrics\": true}"] {
        assert!(run.stdout_text().contains(needle), "--help lacks {needle}: {}", run.stdout_text());
    }
}

/// Names are bounded in length and in number: a long name is refused with
/// an error line, and a name is forgotten with its compartment, so
/// thousands of names cost no more than `--max-compartments` of them.
#[test]
fn compartment_names_are_bounded() {
    let long = "n".repeat(2_000);
    let a = jsonl(&[], &[req(&output_message(b"hi"), Some(&long))]);
    assert!(a[0]["error"].as_str().is_some_and(|e| e.contains("compartment name over 1024 bytes")), "{}", a[0]);
    // 3,000 names of 900 bytes, then one whose message creates state:
    // the endpoint holds 2 compartments at most, and says which names it
    // closed.
    let (maker, id) = state_maker(b"kept", 48);
    let mut lines: Vec<String> = (0..3_000).map(|i| req(&output_message(b"x"), Some(&format!("{i:0>900}")))).collect();
    lines.push(req(&maker, Some("alice")));
    lines.push(json!({"metrics": true}).to_string());
    let a = jsonl(&["--max-compartments", "2"], &lines);
    assert!(a[..3_000].iter().all(|v| output_of(v) == b"x"));
    assert_eq!(a[3_000]["states_created"], json!([id.to_hex()]));
    assert_eq!(a[3_001]["metrics"]["compartments"], 2, "{}", a[3_001]);
    let evicted: usize = a[..3_001].iter().map(|v| v["evicted"].as_array().map_or(0, Vec::len)).sum();
    assert_eq!(evicted, 2_999, "every name but the last two closed and named");
}
