//! Crafted files against `sigkit rohc`, `analyze`, `load -sf`, `sim`,
//! `report` and `results`, each the shape of a file that once made the
//! command panic, abort on an allocation or run for minutes: every one now
//! gives its result, or an error message and the command's documented exit
//! code. The inputs are made here, at their smallest telling size.
#![allow(clippy::unwrap_used)] // a test fails by panicking

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use etherparse::PacketBuilder;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use serde_json::Value;

fn sigkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sigkit"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `cmd`, failing the test if it has not ended within `limit`.
fn within(cmd: &mut Command, limit: Duration) -> Output {
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let id = child.id();
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    match wait.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("still running after {limit:?}");
        }
    }
}

/// `sigkit ARGS` with its address space limited to `mib` MiB (`ulimit
/// -v`): an allocation past it aborts the process.
fn sigkit_within_memory(mib: u64, args: &[&str]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", mib * 1024));
    cmd.arg(env!("CARGO_BIN_EXE_sigkit")).args(args);
    within(&mut cmd, Duration::from_secs(120))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The command ended with `code` and said `needle` on stderr.
fn refused(out: &Output, code: i32, needle: &str) {
    let err = stderr(out);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
}

fn succeeded(out: &Output) -> Value {
    let err = stderr(out);
    assert!(out.status.success() && !err.contains("panicked"), "{:?}: {err}", out.status);
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// A raw-IP pcap of `packets`.
fn write_pcap(path: &Path, packets: &[Vec<u8>]) {
    let header = PcapHeader { datalink: DataLink::RAW, ..PcapHeader::default() };
    let mut w = PcapWriter::with_header(std::fs::File::create(path).unwrap(), header).unwrap();
    for (i, p) in packets.iter().enumerate() {
        w.write_packet(&PcapPacket::new(Duration::from_millis(i as u64), p.len() as u32, p)).unwrap();
    }
}

fn tcp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, seq: u32, options: &[u8], payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ipv4(src, dst, 64).tcp(sport, dport, seq, 65535).ack(5000).psh().options_raw(options);
    let mut out = Vec::new();
    b.unwrap().write(&mut out, payload).unwrap();
    out
}

fn udp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    PacketBuilder::ipv4(src, dst, 64).udp(sport, dport).write(&mut out, payload).unwrap();
    out
}

const OPTIONS_SIP: &[u8] = b"OPTIONS sip:a@b SIP/2.0\r\nCall-ID: x\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n";

/// `i`-th address of 10.0.0.0/8.
fn host(i: u32) -> [u8; 4] {
    let [_, a, b, c] = i.to_be_bytes();
    [10, a, b, c]
}

/// 40 option bytes make up to 40 options (NOP and EOL are one byte): the
/// option parser held 20 and panicked on the 21st. A SIP-over-TCP flow
/// both ways whose segments carry 40 NOPs, NOPs around a timestamp, 40
/// EOLs, an unknown option among NOPs.
#[test]
fn forty_one_byte_tcp_options_go_through_rohc_and_analyze() {
    let shapes: [Vec<u8>; 5] = [
        vec![1; 40],
        [vec![1; 28], vec![8, 10, 0, 0, 0, 1, 0, 0, 0, 2], vec![0, 0]].concat(),
        vec![0; 40],
        [vec![1; 39], vec![0]].concat(),
        [vec![1, 1, 0x13, 0x12], vec![0; 16], vec![1; 20]].concat(),
    ];
    let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let mut packets = Vec::new();
    for k in 0..30u32 {
        let seq = 1000 + k * OPTIONS_SIP.len() as u32;
        let opts = &shapes[k as usize % shapes.len()];
        packets.push(tcp(a, 5060, b, 5061, seq, opts, OPTIONS_SIP));
        packets.push(tcp(b, 5061, a, 5060, seq, opts, OPTIONS_SIP));
    }
    let dir = scratch("options");
    let pcap = dir.join("options.pcap");
    write_pcap(&pcap, &packets);
    let p = pcap.to_str().unwrap();
    for mode in ["u", "o", "r"] {
        let report = succeeded(&sigkit().args(["rohc", p, "--mode", mode, "--json"]).output().unwrap());
        let taroc = &report["schemes"][0];
        assert_eq!((taroc["delivered"].as_u64(), taroc["undetected"].as_u64()), (Some(60), Some(0)), "{taroc}");
        succeeded(&sigkit().args(["rohc", p, "--mode", mode, "--ber", "1e-3", "--loss", "0.1"]).output().unwrap());
        let a = succeeded(&sigkit().args(["analyze", p, "--taroc-mode", mode, "--json"]).output().unwrap());
        assert_eq!(a["flows"][0]["taroc"]["mismatches"], 0, "{}", a["flows"][0]["taroc"]);
    }
    let infer = succeeded(&sigkit().args(["rohc", p, "--infer", "--json"]).output().unwrap());
    assert_eq!(infer["schemes"][1]["delivered"], 60);
    succeeded(&sigkit().args(["analyze", p, "--taroc-infer", "--json"]).output().unwrap());
}

/// 20,000 one-packet connections: every connection's contexts were kept
/// to the end, 66 KB each (1.3 GB here; 100,000 took 6.65 GB). Now at
/// most 16,384 connections hold contexts of some 9 KB, so the run fits in
/// 512 MiB of address space, and the connections closed are counted.
#[test]
fn rohc_holds_a_bounded_number_of_connections() {
    let packets: Vec<Vec<u8>> = (0..20_000u32).map(|i| tcp(host(i), 1024, [10, 255, 0, 1], 80, 1, &[], b"x")).collect();
    let dir = scratch("rohc-flows");
    let pcap = dir.join("flows.pcap");
    write_pcap(&pcap, &packets);
    let p = pcap.to_str().unwrap();
    let report = succeeded(&sigkit_within_memory(512, &["rohc", p, "--json"]));
    for s in report["schemes"].as_array().unwrap() {
        assert_eq!((s["flows"].as_u64(), s["connections_evicted"].as_u64()), (Some(20_000), Some(3_616)), "{s}");
        assert_eq!(s["delivered"], 20_000, "{s}");
    }
    let few = succeeded(&sigkit_within_memory(512, &["rohc", p, "--json", "--max-connections", "1000"]));
    assert_eq!(few["schemes"][0]["connections_evicted"], 19_000);
    assert_eq!(few["link"]["max_connections"], 1000);
    let table = sigkit().args(["rohc", p, "--max-connections", "1000"]).output().unwrap();
    assert!(table.status.success(), "{}", stderr(&table));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("19000 connections were closed to keep at most 1000"), "{text}");
    refused(&sigkit().args(["rohc", p, "--max-connections", "0"]).output().unwrap(), 2, "--max-connections");
}

/// 20,000 one-packet SIP flows: each flow's report (its messages' sizes
/// and RAN delays under 27 ways of sending them) was kept, 24 KB a flow
/// (480 MB here). Now at most 1,000 flows and 50,000 messages are
/// reported, the rest counted, within 256 MiB of address space.
#[test]
fn analyze_reports_a_bounded_number_of_flows_and_messages() {
    let packets: Vec<Vec<u8>> =
        (0..20_000u32).map(|i| udp(host(i), 5060, [10, 255, 0, 1], 5060, OPTIONS_SIP)).collect();
    let dir = scratch("analyze-flows");
    let pcap = dir.join("flows.pcap");
    write_pcap(&pcap, &packets);
    let p = pcap.to_str().unwrap();
    let out = sigkit_within_memory(256, &["analyze", p]);
    let _ = succeeded(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1000 SIP flows") && text.contains("not analysed: 19000 flows"), "{}", &text[..300]);
    let a = succeeded(&sigkit_within_memory(256, &["analyze", p, "--json", "--max-flows", "5"]));
    assert_eq!((a["flows"].as_array().unwrap().len(), a["flows_not_analysed"].as_u64()), (5, Some(19_995)));
    // One flow of 60 messages, 20 of them reported.
    let one: Vec<Vec<u8>> = (0..60).map(|_| udp([10, 0, 0, 1], 5060, [10, 0, 0, 2], 5060, OPTIONS_SIP)).collect();
    let one_pcap = dir.join("one.pcap");
    write_pcap(&one_pcap, &one);
    let a = succeeded(
        &sigkit().args(["analyze", one_pcap.to_str().unwrap(), "--json", "--max-messages", "20"]).output().unwrap(),
    );
    let flow = &a["flows"][0];
    assert_eq!((flow["messages"].as_array().unwrap().len(), flow["messages_not_analysed"].as_u64()), (20, Some(40)));
    assert_eq!(flow["variants"][0]["sizes"].as_array().unwrap().len(), 20);
}

const SEND: &str = "<send><![CDATA[OPTIONS sip:x@[remote_ip] SIP/2.0\nCall-ID: [call_id]\nCSeq: 1 OPTIONS\nContent-Length: 0\n]]></send>\n";

fn load_sf(dir: &Path, name: &str, xml: &str) -> Output {
    let path = dir.join(name);
    std::fs::write(&path, xml).unwrap();
    within(
        sigkit().args(["load", "-sf", path.to_str().unwrap(), "-m", "1", "-timeout", "10s", "127.0.0.1:9"]),
        Duration::from_secs(60),
    )
}

/// Scenarios that aborted `sigkit load`: nested 20,000 deep (stack
/// overflow), a quadratic entity expansion (8 GB), 20,000 response-time
/// names; and past the element and size bounds. Each is refused before
/// any call, exit code 3 (an input file not what it should be), with the
/// reason.
#[test]
fn load_refuses_scenarios_past_its_bounds() {
    let dir = scratch("load");
    let deep = format!("<scenario>\n{SEND}{}{}</scenario>", "<a>".repeat(20_000), "</a>".repeat(20_000));
    refused(&load_sf(&dir, "deep.xml", &deep), 3, "nested deeper than 64 (line 7)");
    let laughs = format!(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE scenario [\n<!ENTITY a \"{}\">\n]>\n<scenario>{SEND}<nop><action><log message=\"{}\"/></action></nop></scenario>",
        "x".repeat(4_000),
        "&a;".repeat(100_000)
    );
    refused(&load_sf(&dir, "laughs.xml", &laughs), 3, "line 3: the DTD declares entity \"a\"");
    let rtds: String = (0..20_000).map(|i| format!("<nop start_rtd=\"r{i}\"/><nop rtd=\"r{i}\"/>\n")).collect();
    refused(
        &load_sf(&dir, "rtds.xml", &format!("<scenario>{SEND}{rtds}</scenario>")),
        3,
        "more than 20 response-time names",
    );
    let many = format!("<scenario>{SEND}{}</scenario>", "<nop/>\n".repeat(100_000));
    refused(&load_sf(&dir, "many.xml", &many), 3, "more than 100000 elements");
    let big = format!("<scenario>{SEND}<!--{}--></scenario>", "x".repeat(16 << 20));
    refused(&load_sf(&dir, "big.xml", &big), 3, "over the 16777216 it may have");
}

/// An injection file that never ends (a device) was read whole before its
/// size was checked: now reading stops one byte past the bound.
#[test]
fn load_refuses_an_endless_injection_file() {
    let out = within(
        sigkit().args(["load", "-sn", "uac", "-inf", "/dev/zero", "-m", "1", "-timeout", "10s", "127.0.0.1:9"]),
        Duration::from_secs(60),
    );
    refused(&out, 3, "the injection file is over 67108864 bytes");
}

/// 40,000 labels, each the target of a jump (80,000 elements, 13 MB):
/// reading looked up each element's line by scanning the text from its
/// start, 78 s before the first call (and `-timeout` starts with the
/// calls). Read in one pass it takes a fraction of a second; the bound
/// here is generous either way.
#[test]
fn load_reads_forty_thousand_labels_before_its_first_call_in_seconds() {
    let dir = scratch("labels");
    let name = "l".repeat(150);
    let mut xml = format!("<scenario>\n{SEND}");
    for i in 0..40_000 {
        xml.push_str(&format!("<nop next=\"{name}{i}\"/>\n<label id=\"{name}{i}\"/>\n"));
    }
    xml.push_str("</scenario>\n");
    let started = Instant::now();
    let out = load_sf(&dir, "labels.xml", &xml);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 successful"));
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

const SIM: &str =
    "duration = 60.0\ncollapse_window = [40.0, 60.0]\n[[proxies]]\ncapacity_tps = 100\n[[sources]]\nrate = 50\n";

/// `duration = 1e6` and `registration.clients = 1e6` passed validation and
/// aborted on an allocation even with one seed. The run's memory is
/// estimated first: over the budget it is refused, exit code 2, with what
/// it would need and the keys to lower.
#[test]
fn sim_refuses_a_run_larger_than_its_memory_budget() {
    let dir = scratch("sim");
    let scenario = dir.join("small.toml");
    std::fs::write(&scenario, SIM).unwrap();
    let s = scenario.to_str().unwrap();
    let sim = |set: &[&str]| {
        let mut cmd = sigkit();
        cmd.args(["sim", s, "--seeds", "1"]);
        for kv in set {
            cmd.args(["--set", kv]);
        }
        within(&mut cmd, Duration::from_secs(60))
    };
    let long = sim(&["duration=1e6", "collapse_window=[0.0, 100.0]"]);
    refused(&long, 2, "GiB");
    refused(&long, 2, "lower duration, drain, sources.*.rate or --seeds, or raise --memory-budget-mib");
    refused(&sim(&["registration.clients=1000000"]), 2, "registration.clients");
    // The scenario itself runs, and a budget below it refuses it.
    assert!(sim(&[]).status.success());
    let mut tight = sigkit();
    tight.args(["sim", s, "--seeds", "1", "--memory-budget-mib", "1"]);
    refused(&within(&mut tight, Duration::from_secs(60)), 2, "over the budget of 0.0 GiB");
}

/// Report input at the edges: a negative RTT panicked converting it to a
/// duration; load steps at 1e308 left plotters placing ticks for ever.
/// Malformed JSON (nesting 100,000 deep, NaN, 1e400) is refused, exit 3.
#[test]
fn report_draws_extreme_numbers_and_refuses_malformed_json() {
    let dir = scratch("report");
    let run = |name: &str, json: &str| {
        let path = dir.join(name);
        std::fs::write(&path, json).unwrap();
        within(
            sigkit().args(["report", path.to_str().unwrap(), "-o"]).arg(dir.join(format!("{name}.out"))),
            Duration::from_secs(120),
        )
    };
    let ran = r#"{"ran": [{"kbps": 9.6, "rtt_ms": -70.0, "messages": 1, "sip_bytes": 900, "sigcomp_delay_s": 1.0}]}"#;
    assert!(run("ran.json", ran).status.success());
    let steps = r#"{"load_steps": [{"series": "a", "offered_cps": 1e308, "calls_per_s": -1e308, "setup_p95_ms": 1e308},
                                   {"series": "a", "offered_cps": 5, "calls_per_s": 5, "setup_p95_ms": 3}]}"#;
    let out = run("steps.json", steps);
    assert!(out.status.success(), "{}", stderr(&out));
    refused(
        &run("deep.json", &format!("{}{}", "[".repeat(100_000), "]".repeat(100_000))),
        3,
        "recursion limit exceeded",
    );
    refused(&run("nan.json", r#"{"load_steps": [{"offered_cps": NaN}]}"#), 3, "not a report input");
    refused(&run("inf.json", r#"{"load_steps": [{"offered_cps": 1e400}]}"#), 3, "number out of range");
    refused(&run("empty.json", r#"{"load_steps": []}"#), 3, "nothing to plot");
}

/// A results file given to `sigkit report` was opened to write (given a
/// schema if it had none) and read whole: a cell of 20 MB, or a table of a
/// million rows and one, is now refused before it is held, exit 3.
#[test]
fn report_refuses_a_results_file_past_its_bounds() {
    let dir = scratch("report-db");
    let db = |name: &str, rows: &str| {
        let path = dir.join(name);
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, kind TEXT, command TEXT, started_at REAL, \
             finished_at REAL, config TEXT, machine TEXT, summary TEXT);
             INSERT INTO runs VALUES (1, 'load', 'sigkit load', 0, 1, '{{}}', '{{}}', '{{}}');
             CREATE TABLE load_steps (run_id, offered_cps, calls_per_s);
             {rows}"
        ))
        .unwrap();
        drop(conn);
        let out = within(
            sigkit().args(["report", path.to_str().unwrap(), "-o"]).arg(dir.join(format!("{name}.out"))),
            Duration::from_secs(120),
        );
        (out, path)
    };
    let (out, path) =
        db("big-cell.sqlite", &format!("INSERT INTO load_steps VALUES (1, '{}', 1);", "x".repeat(20 << 20)));
    refused(&out, 3, "string or blob too big");
    let before = std::fs::read(&path).unwrap();
    let (out, _) = db(
        "many-rows.sqlite",
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x <= 1000000) \
         INSERT INTO load_steps SELECT 1, x, x FROM n;",
    );
    refused(&out, 3, "table load_steps has more than 1000000 rows to read");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the report changed its input");
}

/// `sigkit results` on files that are not results files: refused (exit 3)
/// and left as they were; a run with a NULL kind is listed, not an error.
#[test]
fn results_reads_without_changing_and_refuses_what_is_not_a_results_file() {
    let dir = scratch("results");
    let toml = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    refused(&sigkit().args(["results", toml.to_str().unwrap()]).output().unwrap(), 3, "not a results file");
    let other = dir.join("other.sqlite");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("CREATE TABLE x (a)").unwrap();
    drop(conn);
    let before = std::fs::read(&other).unwrap();
    refused(&sigkit().args(["results", other.to_str().unwrap()]).output().unwrap(), 3, "no table runs");
    assert_eq!(std::fs::read(&other).unwrap(), before, "the file was changed");
    let odd = dir.join("odd.sqlite");
    let conn = rusqlite::Connection::open(&odd).unwrap();
    conn.execute_batch(
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, kind TEXT, command TEXT, started_at REAL, finished_at REAL, \
         config TEXT, machine TEXT, summary TEXT);
         INSERT INTO runs VALUES (1, NULL, 5, 'x', 1e999, '[[[[', '{', 'nan');
         CREATE TABLE t (run_id, v);
         INSERT INTO t VALUES (1, 1e999);",
    )
    .unwrap();
    drop(conn);
    let list = sigkit().args(["results", odd.to_str().unwrap()]).output().unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
    assert!(String::from_utf8_lossy(&list.stdout).contains("run 1  5 (finished: true)"));
    let csv = sigkit().args(["results", odd.to_str().unwrap(), "--csv", "t"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&csv.stdout), "run_id,v\n1,inf\n");
    refused(&sigkit().args(["results", odd.to_str().unwrap(), "--csv", "t; DROP"]).output().unwrap(), 2, "not a table");
}
