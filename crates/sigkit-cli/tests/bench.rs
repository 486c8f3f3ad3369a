//! `sigkit bench`: the JSON report's fields and counts, the compartment
//! policies, threads, the memory bench and argument errors, checked on the
//! real binary with small bounded runs. Nothing here asserts a speed: how
//! fast sigkit is gets measured by the bench itself (BENCHMARKS.md).
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::path::{Path, PathBuf};

use common::sigkit;
use serde_json::Value;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

fn flow(name: &str) -> String {
    corpus_dir().join(name).to_str().unwrap().to_string()
}

/// Sizes of a flow's messages, in file order.
fn sizes(dir: &Path) -> Vec<u64> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sip"))
        .collect();
    files.sort();
    files.iter().map(|p| std::fs::metadata(p).unwrap().len()).collect()
}

/// Runs `sigkit bench ARGS --json`, expecting success, and parses the report.
fn bench_json(args: &[&str]) -> Value {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.push("--json");
    let run = sigkit(&all, b"");
    assert_eq!(run.code, Some(0), "sigkit {all:?} failed: {}", run.stderr);
    serde_json::from_slice(&run.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", run.stdout_text()))
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} missing or not a number in {v}"))
}

fn u(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} missing or not an integer in {v}"))
}

/// The speed fields a script relies on are there and consistent.
fn check_speed_fields(v: &Value) {
    for key in [
        "round_trips_per_s",
        "round_trips_per_s_per_thread",
        "compress_us_p50",
        "compress_us_p99",
        "decompress_us_p50",
        "decompress_us_p99",
        "ratio",
    ] {
        assert!(f(v, key) > 0.0, "{key} should be positive in {v}");
    }
    assert!(f(v, "compress_us_p99") >= f(v, "compress_us_p50"));
    assert!(f(v, "decompress_us_p99") >= f(v, "decompress_us_p50"));
    let ratio = f(v, "ratio");
    assert!(ratio > 0.0 && ratio <= 1.0, "ratio {ratio} not in (0, 1]");
    let expected = f(v, "sigcomp_bytes") / f(v, "uncompressed_bytes");
    assert!((ratio - expected).abs() < 1e-9, "ratio {ratio} is not sigcomp/uncompressed {expected}");
    // The scheduler's CPU-time counter moves at ticks and context
    // switches, so a run of a few milliseconds may have none (null).
    assert!(v["round_trips_per_cpu_s"].is_null() || f(v, "round_trips_per_cpu_s") > 0.0);
    let per_thread = f(v, "round_trips_per_s") / f(v, "threads");
    assert!((f(v, "round_trips_per_s_per_thread") - per_thread).abs() < 1e-6 * per_thread);
}

#[test]
fn one_flow_runs_exactly_the_messages_asked_for() {
    let dir = corpus_dir().join("3gpp-video-call");
    let v = bench_json(&["--flow", &flow("3gpp-video-call"), "--messages", "200"]);
    check_speed_fields(&v);
    assert_eq!(v["mode"], "speed");
    assert_eq!(u(&v, "messages"), 200);
    assert_eq!(u(&v, "threads"), 1);
    assert_eq!(v["worker_messages"], serde_json::json!([200]));
    let s = sizes(&dir);
    assert_eq!(u(&v, "sequence_messages"), s.len() as u64);
    // 200 messages cycle through the 14-message flow: every byte counted.
    let expected: u64 = (0..200).map(|i| s[i % s.len()]).sum();
    assert_eq!(u(&v, "uncompressed_bytes"), expected);
    // By default every pass over the flow is a call on a fresh pair.
    assert_eq!(u(&v, "compartment_pairs"), 200_u64.div_ceil(s.len() as u64));
    assert_eq!(v["settings"]["mechanism"], "shared");
}

#[test]
fn two_threads_report_two_workers_and_split_the_messages() {
    let v = bench_json(&["--flow", &flow("3gpp-video-call"), "--messages", "201", "--threads", "2"]);
    check_speed_fields(&v);
    assert_eq!(u(&v, "threads"), 2);
    assert_eq!(u(&v, "messages"), 201);
    assert_eq!(v["worker_messages"], serde_json::json!([101, 100]));
}

#[test]
fn compartment_every_starts_a_pair_every_n_messages() {
    // Open SigComp's speed test: REGISTER and 200 OK alternating, a new
    // compartment pair every 10 messages.
    let v = bench_json(&[
        "--flow",
        &flow("open-sigcomp-startup"),
        "--first",
        "2",
        "--compartment-every",
        "10",
        "--sms",
        "8192",
        "--cpb",
        "64",
        "--messages",
        "100",
    ]);
    check_speed_fields(&v);
    assert_eq!(u(&v, "sequence_messages"), 2);
    assert_eq!(u(&v, "compartment_pairs"), 10);
    let s = sizes(&corpus_dir().join("open-sigcomp-startup"));
    assert_eq!(u(&v, "uncompressed_bytes"), 50 * (s[0] + s[1]));
    // One pair for the whole run.
    let never =
        bench_json(&["--flow", &flow("open-sigcomp-startup"), "--compartment-every", "never", "--messages", "30"]);
    assert_eq!(u(&never, "compartment_pairs"), 1);
    // A fresh pair per message: every message uploads bytecode, so the
    // ratio is worse than with one long-lived pair.
    let every1 = bench_json(&["--flow", &flow("open-sigcomp-startup"), "--compartment-every", "1", "--messages", "30"]);
    assert_eq!(u(&every1, "compartment_pairs"), 30);
    // Closed compartments are gone: each endpoint holds only its current one.
    assert!(u(&every1, "compartments_held_at_end") <= 2, "{every1}");
    assert!(u(&v, "compartments_held_at_end") <= 2, "{v}");
    assert!(f(&every1, "ratio") > f(&never, "ratio"));
}

#[test]
fn whole_corpus_is_the_default_sequence() {
    let mut total = 0u64;
    let mut flows = 0;
    for e in std::fs::read_dir(corpus_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            let n = sizes(&p).len() as u64;
            if n > 0 {
                flows += 1;
                total += n;
            }
        }
    }
    assert!(flows >= 2, "the corpus should hold several flows");
    let v = bench_json(&["--messages", "100"]);
    check_speed_fields(&v);
    assert_eq!(u(&v, "sequence_messages"), total);
    assert_eq!(u(&v, "messages"), 100);
    let explicit = bench_json(&["--corpus", corpus_dir().to_str().unwrap(), "--messages", "10"]);
    assert_eq!(u(&explicit, "sequence_messages"), total);
}

#[test]
fn per_message_medians_cover_every_message_of_the_flow() {
    let dir = corpus_dir().join("3gpp-video-call");
    let n = sizes(&dir).len();
    let count = (2 * n).to_string();
    let v = bench_json(&["--flow", &flow("3gpp-video-call"), "--messages", &count, "--per-message"]);
    let rows = v["per_message"].as_array().expect("per_message array");
    assert_eq!(rows.len(), n);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(u(row, "samples"), 2, "{row}");
        assert_eq!(u(row, "index"), i as u64 + 1);
        assert_eq!(u(row, "uncompressed"), sizes(&dir)[i]);
        assert!(f(row, "compress_us_p50") > 0.0 && f(row, "decompress_us_p50") > 0.0);
    }
    assert_eq!(rows[0]["name"], "INVITE");
}

#[test]
fn other_mechanisms_and_tcp_round_trip() {
    for mech in ["basic", "static", "dynamic", "shared"] {
        for transport in ["udp", "tcp"] {
            let v = bench_json(&[
                "--flow",
                &flow("basic-voice-call"),
                "--mechanism",
                mech,
                "--transport",
                transport,
                "--messages",
                "20",
            ]);
            check_speed_fields(&v);
            assert_eq!(u(&v, "messages"), 20, "{mech} {transport}");
            assert_eq!(v["settings"]["transport"], transport);
        }
    }
}

#[test]
fn a_duration_bound_runs_until_it_expires() {
    let v = bench_json(&["--flow", &flow("3gpp-video-call"), "--duration", "0.2"]);
    check_speed_fields(&v);
    assert!(u(&v, "messages") >= 1);
    assert!(f(&v, "wall_s") >= 0.2);
    if cfg!(target_os = "linux") {
        assert!(f(&v, "round_trips_per_cpu_s") > 0.0, "a 0.2 s run has a CPU time: {v}");
    }
}

#[test]
fn memory_bench_holds_the_compartments_and_shares_identical_states() {
    let v = bench_json(&["--compartments", "20"]);
    assert_eq!(v["mode"], "memory");
    assert_eq!(u(&v, "compartments"), 20);
    assert_eq!(u(&v, "messages_per_compartment"), sizes(&corpus_dir().join("3gpp-video-call")).len() as u64);
    assert!(f(&v, "state_bytes_per_compartment") > 0.0);
    assert!(f(&v, "model_state_bytes_per_compartment") > 0.0);
    if cfg!(target_os = "linux") {
        assert!(u(&v, "rss_before_bytes") > 0);
        assert!(u(&v, "rss_after_bytes") >= u(&v, "rss_before_bytes"));
    }
    // Every compartment holds states; with distinct calls (own Call-IDs)
    // hardly any are identical, with byte-identical calls the handler
    // stores each identical state once for all 20 compartments.
    let entries = u(&v, "state_entries");
    assert!(entries >= 20);
    let same = bench_json(&["--compartments", "20", "--same-calls"]);
    assert_eq!(u(&same, "state_entries"), entries);
    assert!(
        u(&same, "distinct_state_items") * 10 < u(&v, "distinct_state_items"),
        "identical calls should share their states: {} vs {}",
        same["distinct_state_items"],
        v["distinct_state_items"]
    );
    assert!(u(&same, "stored_state_bytes") < u(&v, "stored_state_bytes"));
    // Under 64 compartments all are hot: every value is held plain.
    assert_eq!(u(&v, "resident_state_bytes"), u(&v, "stored_state_bytes"));
}

#[test]
fn memory_bench_keeps_idle_compartments_packed() {
    // 20 compartments, 4 hot: the 16 idle ones hold their states packed,
    // at the decompressor and in the compressors' models.
    let hot = bench_json(&["--compartments", "20", "--hot", "64"]);
    let v = bench_json(&["--compartments", "20", "--hot", "4"]);
    assert_eq!(u(&v, "hot_compartments"), 4);
    assert_eq!(u(&v, "stored_state_bytes"), u(&hot, "stored_state_bytes"));
    assert_eq!(f(&v, "state_bytes_per_compartment"), f(&hot, "state_bytes_per_compartment"));
    assert!(
        u(&v, "resident_state_bytes") * 2 < u(&v, "stored_state_bytes"),
        "packed: {} of {} bytes",
        v["resident_state_bytes"],
        v["stored_state_bytes"]
    );
    assert!(f(&v, "model_resident_bytes_per_compartment") * 2.0 < f(&hot, "model_resident_bytes_per_compartment"));
}

#[test]
fn bad_arguments_are_refused_with_a_clear_error() {
    let f3 = flow("3gpp-video-call");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--threads", "0"], "--threads"),
        (vec!["--messages", "0"], "--messages"),
        (vec!["--compartment-every", "0"], "--compartment-every"),
        (vec!["--compartment-every", "ten"], "--compartment-every"),
        (vec!["--duration=-1"], "--duration"),
        (vec!["--duration", "inf"], "--duration"),
        (vec!["--algo", "zip"], "algorithm"),
        (vec!["--mechanism", "magic"], "mechanism"),
        (vec!["--dms", "1000"], "parameters"),
        (vec!["--dict-priority", "9-1"], "--dict-priority"),
        (vec!["--first", "0"], "--first"),
        (vec!["--level", "0"], "--level"),
        (vec!["--level", "10"], "--level"),
        (vec!["--compartments", "0"], "--compartments"),
        (vec!["--messages", "5", "--duration", "1"], "cannot be used with"),
        (vec!["--same-calls"], "--compartments"),
        (vec!["--compartments", "5", "--threads", "2"], "cannot be used with"),
        (vec!["--flow", &f3, "--corpus", "/tmp"], "cannot be used with"),
    ];
    for (args, needle) in cases {
        let mut all = vec!["bench"];
        all.extend_from_slice(&args);
        let run = sigkit(&all, b"");
        assert_eq!(run.code, Some(2), "{args:?} should be refused: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: error should mention {needle:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}: nothing on stdout");
    }
    // A flow or corpus that cannot be read is the input's failure (3).
    for (flag, path) in [("--flow", "/nonexistent/flow"), ("--corpus", "/nonexistent/corpus")] {
        let run = sigkit(&["bench", flag, path], b"");
        assert_eq!(run.code, Some(3), "{flag} {path}: {}", run.stderr);
        assert!(run.stderr.contains(path), "{}", run.stderr);
    }
}
