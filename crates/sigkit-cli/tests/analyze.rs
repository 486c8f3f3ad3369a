//! `sigkit analyze` on the real captures of crates/sigkit-analyze/tests/data
//! (sigkit load runs captured with tshark): the table, the JSON and the
//! report section `sigkit report` makes of it; a live capture when tshark
//! and loopback capture are available (required when CI=true).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

fn sigkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sigkit"))
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../sigkit-analyze/tests/data").join(name)
}

fn run(args: &[&str]) -> Output {
    sigkit().args(args).output().expect("run sigkit")
}

fn analyze_json(capture: &Path) -> Value {
    let out = run(&["analyze", capture.to_str().expect("path"), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Messages of the corpus flow the captures replay.
fn corpus_messages() -> usize {
    std::fs::read_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/3gpp-video-call"))
        .expect("corpus")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sip")))
        .count()
}

fn variant<'a>(flow: &'a Value, name: &str) -> &'a Value {
    flow["variants"].as_array().expect("variants").iter().find(|v| v["name"] == name).expect(name)
}

#[test]
fn json_of_a_real_tcp_capture() {
    let a = analyze_json(&data("sip-tcp.pcapng"));
    let flows = a["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 1);
    let f = &flows[0];
    assert_eq!(f["protocol"], "tcp");
    assert_eq!(f["messages"].as_array().expect("messages").len(), 3 * corpus_messages());
    assert_eq!(f["calls"], 3);
    let sip = variant(f, "sip")["bytes"].as_u64().expect("bytes");
    assert_eq!(sip, f["sip_bytes"].as_u64().expect("sip_bytes"));
    for mechanism in ["basic", "static", "dynamic", "shared"] {
        let v = variant(f, &format!("sigcomp {mechanism}/lzss"));
        assert!(v["bytes"].as_u64().expect("bytes") < sip, "{mechanism}");
        let ran = v["ran"].as_array().expect("ran");
        let rates: Vec<f64> = ran.iter().map(|p| p["kbps"].as_f64().expect("kbps")).collect();
        assert_eq!(rates, [9.6, 19.2, 32.0, 64.0, 128.0, 256.0]);
        assert!(ran.iter().all(|p| p["improvement_pct"].as_f64().expect("pct") > 0.0));
    }
    let taroc = &f["taroc"];
    assert_eq!(taroc["mismatches"], 0);
    assert!(taroc["header_bytes_after"].as_u64() < taroc["header_bytes_before"].as_u64());
    assert!(variant(f, "sip + taroc")["bytes"].as_u64() < variant(f, "sip + tcp/ip")["bytes"].as_u64());
}

#[test]
fn table_names_every_variant_and_options_narrow_them() {
    let out = run(&[
        "analyze",
        data("sigcomp-udp.pcapng").to_str().expect("path"),
        "--mechanism",
        "dynamic",
        "--algo",
        "lzss",
        "--rates",
        "9.6,64",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(table.contains("1 SIP flows"), "{table}");
    assert!(table.contains("SigComp in the capture: 42 messages, 42 decoded"), "{table}");
    assert!(table.contains("sigcomp dynamic/lzss") && !table.contains("sigcomp shared/lzss"), "{table}");
    assert!(table.contains("9.6 kbit/s") && table.contains("64 kbit/s") && !table.contains("256 kbit/s"), "{table}");
    let bad = run(&["analyze", data("sip-udp.pcapng").to_str().expect("path"), "--mechanism", "best"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_bad_capture_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("sigkit-analyze-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let not_pcap = dir.join("not.pcap");
    std::fs::write(&not_pcap, b"INVITE sip:bob@example.com SIP/2.0\r\n").expect("write");
    let out = run(&["analyze", not_pcap.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a pcap or pcapng capture"));
    let cut = dir.join("cut.pcapng");
    let real = std::fs::read(data("sip-udp.pcapng")).expect("capture");
    // Cut inside the file header: nothing to read. (A file cut short later
    // is read with a warning: tests/cut_short.rs.)
    std::fs::write(&cut, &real[..20]).expect("write");
    let out = run(&["analyze", cut.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cut short inside its file header"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_has_a_section_per_capture_flow() {
    let dir = std::env::temp_dir().join(format!("sigkit-analyze-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut inputs = Vec::new();
    for name in ["sip-tcp.pcapng", "sigcomp-udp.pcapng"] {
        let json = dir.join(format!("{name}.json"));
        std::fs::write(&json, analyze_json(&data(name)).to_string()).expect("write");
        inputs.push(json);
    }
    // The same TCP capture with TAROC's cross-direction inference.
    let infer = run(&["analyze", data("sip-tcp.pcapng").to_str().expect("path"), "--json", "--taroc-infer"]);
    assert!(infer.status.success(), "{}", String::from_utf8_lossy(&infer.stderr));
    let infer_json: Value = serde_json::from_slice(&infer.stdout).expect("JSON");
    assert_eq!(infer_json["settings"]["taroc_mode"], "o-infer");
    std::fs::write(dir.join("sip-tcp-infer.json"), infer_json.to_string()).expect("write");
    inputs.push(dir.join("sip-tcp-infer.json"));
    let out_dir = dir.join("report");
    let mut cmd = sigkit();
    cmd.arg("report").args(&inputs).arg("-o").arg(&out_dir);
    let out = cmd.output().expect("sigkit report");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(out_dir.join("index.html")).expect("index.html");
    assert!(page.contains("Captures: what SigComp and TAROC would have sent"));
    for png in ["capture-1-sip-tcp-pcapng-json.png", "capture-2-sigcomp-udp-pcapng-json.png"] {
        assert!(out_dir.join(png).exists(), "{png}");
    }
    assert!(page.contains("sigcomp dynamic/lzss + taroc") && page.contains("TAROC:"));
    assert!(page.contains("TAROC (O-mode, cross-direction inference):"));
    assert!(page.contains("42 SigComp messages in the capture, 42 decoded"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A live run captured here: SIP over UDP between a `sigkit load` UAS and
/// UAC on 127.0.0.1, captured with tshark on the loopback interface, then
/// analysed. Needs tshark and the right to capture (root); skipped without
/// them, except on CI (CI=true), where that is a failure.
#[test]
fn live_capture_with_tshark() {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let can_capture = Command::new("tshark")
        .args(["-i", "lo", "-a", "packets:1", "-a", "duration:1", "-w", "/dev/null", "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !can_capture {
        assert!(!ci, "CI=true: tshark must be installed and able to capture on lo");
        eprintln!("skipped: tshark cannot capture on lo here");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sigkit-analyze-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let pcap = dir.join("live.pcapng");
    let port = 20_000 + (std::process::id() % 20_000) as u16;
    let mut tshark = Command::new("tshark")
        .args(["-q", "-i", "lo", "-f", &format!("udp port {port}"), "-w"])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tshark");
    std::thread::sleep(Duration::from_secs(2));
    let port_s = port.to_string();
    let mut uas = sigkit()
        .args(["load", "-sn", "uas", "-i", "127.0.0.1", "-p", &port_s, "-m", "2", "--quiet", "--nostdin"])
        .args(["--timeout", "20s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("uas");
    std::thread::sleep(Duration::from_millis(500));
    let uac = sigkit()
        .args(["load", "-sn", "uac", "-i", "127.0.0.1", "-r", "5", "-m", "2", "--quiet", "--nostdin"])
        .args(["--timeout", "20s", &format!("127.0.0.1:{port}")])
        .output()
        .expect("uac");
    let _ = uas.wait();
    std::thread::sleep(Duration::from_secs(1));
    // SIGINT, not SIGKILL: tshark then stops its dumpcap child, which a
    // SIGKILL would leave capturing after the test.
    let _ = Command::new("kill").args(["-INT", &tshark.id().to_string()]).status();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while tshark.try_wait().ok().flatten().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = tshark.kill();
    let _ = tshark.wait();
    assert!(uac.status.success(), "{}", String::from_utf8_lossy(&uac.stderr));
    let a = analyze_json(&pcap);
    let flows = a["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 1, "{a}");
    let f = &flows[0];
    assert_eq!(f["calls"], 2);
    // The built-in call: INVITE, 100, 180, 200, ACK, BYE, 200 (SIPp's uac).
    let summaries: Vec<&str> =
        f["messages"].as_array().expect("messages").iter().filter_map(|m| m["summary"].as_str()).collect();
    assert_eq!(summaries.iter().filter(|s| **s == "INVITE").count(), 2, "{summaries:?}");
    assert_eq!(summaries.iter().filter(|s| **s == "BYE").count(), 2, "{summaries:?}");
    assert!(variant(f, "sigcomp dynamic/lzss")["bytes"].as_u64() < variant(f, "sip")["bytes"].as_u64());
    let _ = std::fs::remove_dir_all(&dir);
}
