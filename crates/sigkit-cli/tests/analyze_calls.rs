//! `sigkit analyze` shows calls: traffic that is not SIP counted apart,
//! the --call and --method filters, each call's ladder as text (checked
//! line by line against tshark's reading of the same capture) and as a
//! diagram in the HTML report (checked in headless Chromium).

// A test fails by panicking.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
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

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sigkit-analyze-calls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
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
    for option in ["--call <CALL-ID>", "--method <METHOD>", "--ladder"] {
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

/// One message line of a text ladder: (time, from column, to column,
/// label, SIP bytes, SigComp bytes, captured).
type LadderLine = (f64, usize, usize, String, u64, u64, bool);

/// The ladder printed for `call` in `text`: its endpoints and messages.
fn parse_ladder(text: &str, call: &str) -> (Vec<String>, Vec<LadderLine>) {
    let lines: Vec<&str> = text.lines().skip_while(|l| !l.starts_with(&format!("call {call}:"))).collect();
    assert!(!lines.is_empty(), "no ladder of {call}: {text}");
    let n: usize = lines[0].split(": ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    let endpoints: Vec<String> = lines[2].split_whitespace().map(str::to_string).collect();
    let lifelines: Vec<usize> = lines[4].chars().enumerate().filter(|(_, c)| *c == '│').map(|(i, _)| i).collect();
    assert_eq!(lifelines.len(), endpoints.len(), "{}", lines[4]);
    let mut out = Vec::new();
    for i in 0..n {
        let (label, arrow) = (lines[5 + 2 * i], lines[6 + 2 * i]);
        let chars: Vec<char> = arrow.chars().collect();
        let head = chars.iter().position(|c| *c == '>' || *c == '<').unwrap();
        let tail = if chars[head] == '>' {
            chars[..head].iter().rposition(|c| *c == ' ').unwrap() + 1
        } else {
            head + chars[head..].iter().position(|c| *c == ' ').unwrap() - 1
        };
        // The head is one space inside the receiver's lifeline, the tail
        // one inside the sender's.
        let column = |x: usize| lifelines.iter().position(|l| l.abs_diff(x) == 2).unwrap();
        let (from, to) = (column(tail), column(head));
        let time: f64 = arrow[..10].trim().parse().unwrap();
        let words: Vec<&str> = arrow.split_whitespace().collect();
        let captured = words.last() == Some(&"captured");
        let at = words.iter().rposition(|w| *w == "->").unwrap();
        let sip: u64 = words[at - 1].parse().unwrap();
        let sigcomp: u64 = words[at + 1].parse().unwrap();
        let text = label.replace('│', " ").trim().to_string();
        out.push((time, from, to, text, sip, sigcomp, captured));
    }
    (endpoints, out)
}

/// `--call` prints the call's ladder; each of its message lines is the
/// message tshark finds in the capture: the time since the call's first
/// message, sender and receiver, method or status, and UDP payload bytes.
#[test]
fn the_text_ladder_of_a_real_call_is_what_tshark_reads() {
    let capture = data("sip-udp.pcapng");
    let a = json(&[&capture]);
    let call = a["calls"][1]["call_id"].as_str().unwrap().to_string();
    let text = ok(&sigkit(&["analyze", &capture, "--call", &call, "--algo", "lzss", "--mechanism", "dynamic"]));
    let (endpoints, lines) = parse_ladder(&text, &call);
    assert_eq!(lines.len(), 14);
    // Only the one call is printed.
    assert_eq!(text.matches("\ncall ").count(), 1, "{text}");
    // Without --call, --ladder prints all three.
    let all = ok(&sigkit(&["analyze", &capture, "--ladder", "--algo", "lzss", "--mechanism", "dynamic"]));
    assert_eq!(all.matches("\ncall ").count(), 3);
    // The same messages; their SigComp sizes differ, since with --call
    // the what-if sends that call alone (the first message uploads state
    // the earlier calls had left).
    let without_sigcomp = |l: &[LadderLine]| l.iter().map(|m| (m.0, m.1, m.2, m.3.clone(), m.4)).collect::<Vec<_>>();
    assert_eq!(without_sigcomp(&parse_ladder(&all, &call).1), without_sigcomp(&lines));
    if !have("tshark") {
        return;
    }
    let port = a["flows"][0]["b"].as_str().unwrap().rsplit(':').next().unwrap().to_string();
    let rows = tshark_fields(
        &capture,
        &[format!("udp.port=={port},sip")],
        &format!("sip.Call-ID == \"{call}\""),
        &[
            "frame.time_relative",
            "ip.src",
            "udp.srcport",
            "ip.dst",
            "udp.dstport",
            "sip.Method",
            "sip.Status-Code",
            "sip.CSeq.method",
            "udp.length",
        ],
    );
    assert_eq!(rows.len(), lines.len(), "tshark: {rows:?}");
    let t0: f64 = rows[0][0].parse().unwrap();
    for (row, line) in rows.iter().zip(&lines) {
        let time = row[0].parse::<f64>().unwrap() - t0;
        assert!((time - line.0).abs() < 1e-6, "{row:?} against {line:?}");
        assert_eq!(endpoints[line.1], format!("{}:{}", row[1], row[2]), "{row:?}");
        assert_eq!(endpoints[line.2], format!("{}:{}", row[3], row[4]), "{row:?}");
        let label = if row[6].is_empty() { row[5].clone() } else { format!("{} {}", row[6], row[7]) };
        assert_eq!(line.3, label);
        assert_eq!(line.4, row[8].parse::<u64>().unwrap() - 8, "UDP payload");
        assert!(line.5 < line.4 && !line.6, "{line:?}");
    }
}

/// A SigComp capture: the ladder's SigComp bytes are the UDP payloads
/// tshark finds in the frames that carried them.
#[test]
fn the_ladder_of_a_sigcomp_call_shows_the_captured_bytes() {
    let capture = data("sigcomp-udp.pcapng");
    let a = json(&[&capture]);
    let call = &a["calls"][0];
    let id = call["call_id"].as_str().unwrap();
    let text = ok(&sigkit(&["analyze", &capture, "--call", id, "--algo", "lzss"]));
    let (_, lines) = parse_ladder(&text, id);
    let messages = call["messages"].as_array().unwrap();
    assert_eq!(lines.len(), messages.len());
    let udp: HashMap<u64, u64> = if have("tshark") {
        tshark_fields(&capture, &[], "udp", &["frame.number", "udp.length"])
            .iter()
            .map(|r| (r[0].parse().unwrap(), r[1].parse::<u64>().unwrap() - 8))
            .collect()
    } else {
        HashMap::new()
    };
    for (m, line) in messages.iter().zip(&lines) {
        assert!(line.6, "{line:?}");
        assert_eq!(line.5, m["sigcomp_bytes"].as_u64().unwrap());
        assert!(line.5 < line.4, "{line:?}");
        if let Some(payload) = udp.get(&m["frame"].as_u64().unwrap()) {
            assert_eq!(line.5, *payload, "frame {}", m["frame"]);
        }
    }
}

/// The x, y and text of each `<text>` of `svg`.
fn texts(svg: &str) -> Vec<(i64, i64, String)> {
    svg.split("<text")
        .skip(1)
        .map(|t| {
            let attr = |name: &str| -> i64 {
                let v = t.split(&format!(" {name}=\"")).nth(1).unwrap();
                v[..v.find('"').unwrap()].parse().unwrap()
            };
            let body = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
            (attr("x"), attr("y"), body.trim().to_string())
        })
        .collect()
}

/// The points of each `<polygon>` of `svg` (the arrowheads).
fn polygons(svg: &str) -> Vec<Vec<(i64, i64)>> {
    svg.split("<polygon")
        .skip(1)
        .map(|p| {
            let v = p.split("points=\"").nth(1).unwrap();
            v[..v.find('"').unwrap()]
                .split_whitespace()
                .map(|xy| {
                    let (x, y) = xy.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

fn chromium_dom(page: &Path, profile: &Path) -> String {
    let out = Command::new("timeout")
        .args(["120", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--virtual-time-budget=10000", "--window-size=1400,2000", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `sigkit report` of an analysis draws each call's ladder; in Chromium's
/// DOM every arrowhead points at its receiver's lifeline from its
/// sender's side, under the message's label, in the call's order.
#[test]
fn the_report_draws_each_calls_ladder_and_chromium_shows_its_arrows() {
    let dir = scratch("report");
    let a = json(&[&data("sip-tcp.pcapng"), "--algo", "lzss"]);
    let input = dir.join("sip-tcp.json");
    std::fs::write(&input, a.to_string()).unwrap();
    let out = dir.join("report");
    ok(&sigkit(&["report", input.to_str().unwrap(), "-o", out.to_str().unwrap()]));
    let page = out.join("index.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<figure class=\"plot ladder\"").count(), 3);
    for k in 1..=3 {
        assert!(out.join(format!("ladder-1-{k}-sip-tcp-json.png")).exists());
    }
    if !have("chromium") {
        return;
    }
    let dom = chromium_dom(&page, &dir.join("profile"));
    let check = dom.split("id=\"render-check\"").nth(1).unwrap_or_else(|| panic!("no render check: {dom}"));
    assert!(check.contains("data-status=\"ok\"") && check.contains("\"bad\":[]"), "{}", &check[..300.min(check.len())]);
    for (k, call) in a["calls"].as_array().unwrap().iter().enumerate() {
        let start =
            dom.find(&format!("<figure class=\"plot ladder\" id=\"ladder-1-{}-sip-tcp-json\">", k + 1)).unwrap();
        let svg = &dom[start..start + dom[start..].find("</figure>").unwrap()];
        let texts = texts(svg);
        let heads = polygons(svg);
        let messages = call["messages"].as_array().unwrap();
        assert_eq!(heads.len(), messages.len());
        assert!(texts.iter().any(|t| t.2 == format!("call {}", call["call_id"].as_str().unwrap())));
        // Each address names its lifeline's x.
        let lifeline: Vec<i64> = call["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| texts.iter().find(|t| t.2 == e.as_str().unwrap()).unwrap().0)
            .collect();
        assert_eq!(lifeline.len(), 2);
        let mut last_y = 0;
        for (m, head) in messages.iter().zip(&heads) {
            let (from, to) =
                (lifeline[m["from"].as_u64().unwrap() as usize], lifeline[m["to"].as_u64().unwrap() as usize]);
            let (tip, base) = (head[0], head[1]);
            assert_eq!(tip.0, to, "{m}: the head at the receiver");
            assert_eq!((base.0 - tip.0).signum(), (from - to).signum(), "{m}: from the sender's side");
            assert!(tip.1 > last_y, "in the call's order");
            last_y = tip.1;
            // The label above the arrow, between the two lifelines; the
            // time and the bytes on its line.
            let label = m["label"].as_str().unwrap();
            let t = texts
                .iter()
                .find(|t| t.2 == label && t.1 < tip.1 && t.1 > tip.1 - 20)
                .unwrap_or_else(|| panic!("{label}"));
            assert_eq!(t.0, (from + to) / 2);
            let time = format!("{:.6}", m["time_s"].as_f64().unwrap());
            assert!(texts.iter().any(|t| t.2 == time && t.1 == tip.1), "{time}");
            let bytes = format!("{} → {}", m["sip_bytes"], m["sigcomp_bytes"]);
            assert!(texts.iter().any(|t| t.2 == bytes && t.1 == tip.1), "{bytes}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
