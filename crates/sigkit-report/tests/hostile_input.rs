//! Report input at the edges of what JSON carries: every number of an
//! input that fills every section set to the same extreme (the largest
//! and smallest finite values, zero, the smallest subnormal, the largest
//! integer), and sections of many rows. The report is written or refused
//! with an error; nothing panics.

mod common;

use serde_json::Value;
use sigkit_report::{write_report, ReportInput};

/// An input with rows in every section, their numbers all different, read
/// from report-input JSON as a user would write it.
fn full_input() -> Value {
    serde_json::json!({
        "title": "edges",
        "runs": [{"kind": "load", "machine": "m", "date": "d", "command": "c", "config": "{}", "notes": "n",
                  "warnings": ["w"]}],
        "load_steps": [
            {"series": "a", "offered_cps": 10.0, "attempted": 100, "successful": 90, "failed": 10,
             "calls_per_s": 9.0, "failed_pct": 10.0, "unfinished": 1, "unfinished_pct": 1.0,
             "setup_p50_ms": 1.0, "setup_p95_ms": 2.0, "setup_p99_ms": 3.0, "duration_s": 10.0, "retransmissions": 1,
             "timeouts": 2, "unexpected": 3,
             "tail": {"start_s": 1.0, "end_s": 2.0, "successful": 1, "failed": 2, "unfinished": 3}},
            {"series": "a", "offered_cps": 20.0, "attempted": 200, "successful": 150, "failed": 50,
             "calls_per_s": 15.0, "failed_pct": 25.0, "duration_s": 10.0},
            {"series": "b", "offered_cps": 30.0, "attempted": 300, "successful": 300, "calls_per_s": 30.0}
        ],
        "capacity": {"target": "t", "service_level": "s", "calls_per_s": 17.5, "searches": 3,
                     "max_deviation_pct": 4.0},
        "compression": [
            {"flow": "f", "algorithm": "lzss", "mechanism": "basic", "messages": [["INVITE", 900, 300], ["200", 700, 100]]},
            {"flow": "f", "algorithm": "lzss", "mechanism": "dynamic", "messages": [["INVITE", 900, 250], ["200", 700, 50]]}
        ],
        "ran": [
            {"kbps": 9.6, "method": "calculated", "rtt_ms": 70.0, "messages": 12, "sip_bytes": 9000,
             "sigcomp_bytes": 3000, "sip_delay_s": 8.0, "sigcomp_delay_s": 3.0, "improvement_s": 5.0,
             "improvement_pct": 62.0},
            {"kbps": 19.2, "method": "measured", "rtt_ms": 70.0, "messages": 12, "sip_bytes": 9000,
             "sigcomp_bytes": 3000, "sip_delay_s": 4.0, "sigcomp_delay_s": 1.5, "improvement_s": 2.5,
             "improvement_pct": 62.5}
        ],
        "ran_messages": [
            {"kbps": 9.6, "name": "INVITE", "direction": "ue->pcscf", "sip_bytes": 900, "sigcomp_bytes": 300,
             "sip_delay_s": 0.8, "sigcomp_delay_s": 0.3}
        ],
        "seed_points": [
            {"seed": "s", "source": "t", "chart": "load_setup", "series": "x", "x": 10.0, "y": 5.0},
            {"seed": "s", "source": "t", "chart": "ran_delay", "series": "x", "x": 9.6, "y": 7.0},
            {"seed": "s", "source": "t", "chart": "compression_total", "series": "f", "x": 2.0, "y": 350.0}
        ],
        "sim": [
            {"scenario": "steady", "description": "d", "seeds": 10, "collapsed": 3, "window_ok_ratio": 0.7,
             "window_goodput": 70.0, "seconds": [
                {"t": 0.0, "started": 80.0, "goodput": 79.0, "uac_pending": 3.0},
                {"t": 1.0, "started": 81.0, "goodput": 78.0, "uac_pending": 4.0}
            ]}
        ],
        "captures": [
            {"capture": "c.pcap", "flow": "flow 1", "protocol": "tcp", "messages": 2, "calls": 1, "sip_bytes": 1600,
             "sigcomp_messages": 1, "sigcomp_decoded": 1, "taroc_packets": 4, "header_bytes_before": 160,
             "header_bytes_after": 40, "taroc_mode": "o", "rtt_ms": 70.0, "variants": [
                {"name": "sip", "headers": "none", "baseline": "sip", "bytes": 1600, "ratio": 1.0, "sent_plain": 0,
                 "ran": [[9.6, 1.4, 0.0], [19.2, 0.7, 0.0]]},
                {"name": "sigcomp dynamic/lzss", "headers": "none", "baseline": "sip", "bytes": 400, "ratio": 0.25,
                 "sent_plain": 1, "ran": [[9.6, 0.4, 71.0], [19.2, 0.2, 70.0]]}
            ]}
        ],
        "capture_calls": [
            {"capture": "c.pcap", "call_id": "a<b>@\"c\"", "endpoints": ["10.0.0.1:5060", "10.0.0.2:5060"],
             "sigcomp_variant": "sigcomp dynamic/lzss", "messages": [
                {"time_s": 0.0, "from": 0, "to": 1, "label": "INVITE", "sip_bytes": 900, "sigcomp_bytes": 300,
                 "sigcomp_captured": false},
                {"time_s": 0.5, "from": 1, "to": 0, "label": "200 INVITE", "sip_bytes": 700, "sigcomp_bytes": null,
                 "sigcomp_captured": true},
                {"time_s": 0.7, "from": 1, "to": 1, "label": "MESSAGE", "sip_bytes": 500, "sigcomp_bytes": 200,
                 "sigcomp_captured": false}
            ]}
        ],
        "published_compression": [{"key": "k", "uncompressed": 1000, "payload": 300, "sigcomp": 350}]
    })
}

/// `v` with every number replaced: integers by `int`, the others by `float`.
fn with_every_number(v: &Value, int: &Value, float: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_u64() || n.is_i64() => int.clone(),
        Value::Number(_) => float.clone(),
        Value::Array(a) => Value::Array(a.iter().map(|x| with_every_number(x, int, float)).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), with_every_number(x, int, float))).collect())
        }
        other => other.clone(),
    }
}

/// Writes the report of `input`: the number of plots, or the error. A
/// report not written within two minutes fails the test (an axis spanning
/// 1e308 once kept plotters placing ticks for ever).
fn write(input: &Value, name: &str) -> Result<usize, String> {
    let input: ReportInput = serde_json::from_value(input.clone()).map_err(|e| e.to_string())?;
    let dir = common::scratch(name);
    let (done, wait) = std::sync::mpsc::channel();
    let out = dir.clone();
    std::thread::spawn(move || {
        let _ = done.send(write_report(&input, &out).map(|f| f.plots.len()).map_err(|e| e.to_string()));
    });
    let written = wait.recv_timeout(std::time::Duration::from_secs(120)).expect("the report within 2 minutes");
    let _ = std::fs::remove_dir_all(&dir);
    written
}

#[test]
fn the_full_input_draws_every_chart() {
    let plots = write(&full_input(), "edges-plain").expect("a report");
    assert!(plots >= 6, "{plots} plots");
}

#[test]
fn every_number_at_an_extreme_gives_a_report() {
    let full = full_input();
    // The largest integer every integer field holds (some are u32).
    let int_max = Value::from(u32::MAX);
    for (name, int, float) in [
        ("max", int_max.clone(), Value::from(f64::MAX)),
        ("min", Value::from(0u64), Value::from(f64::MIN)),
        ("zero", Value::from(0u64), Value::from(0.0)),
        ("subnormal", Value::from(1u64), Value::from(5e-324)),
        ("mixed", int_max, Value::from(-1.0)),
    ] {
        let input = with_every_number(&full, &int, &float);
        // Each is a report: the values are valid input, only extreme.
        let plots = write(&input, &format!("edges-{name}"));
        assert!(plots.is_ok(), "{name}: {plots:?}");
    }
    // Integers past u32 in a u32 field are refused when read.
    let huge = with_every_number(&full, &Value::from(u64::MAX), &Value::from(1.0));
    assert!(write(&huge, "edges-huge").unwrap_err().contains("expected u32"));
}

/// Many rows: 20,000 load steps in 200 series and a simulation of 100,000
/// seconds draw as quickly as a few (each chart thins what it draws).
#[test]
fn many_rows_draw_without_trouble() {
    let mut input = full_input();
    let step = input["load_steps"][0].clone();
    input["load_steps"] = Value::Array(
        (0..20_000)
            .map(|i| {
                let mut s = step.clone();
                s["series"] = Value::from(format!("s{}", i % 200));
                s["offered_cps"] = Value::from(f64::from(i));
                s
            })
            .collect(),
    );
    let second = input["sim"][0]["seconds"][0].clone();
    input["sim"][0]["seconds"] = Value::Array(
        (0..100_000)
            .map(|t| {
                let mut s = second.clone();
                s["t"] = Value::from(f64::from(t));
                s
            })
            .collect(),
    );
    assert!(write(&input, "edges-many").is_ok());
}

/// A call of 10,000 messages between 30 addresses, 40 times over: a
/// capture's first 12 calls are drawn, each its first messages between its
/// first addresses, as quickly as a few.
#[test]
fn many_calls_draw_a_bounded_number_of_ladders() {
    let mut input = full_input();
    let message = input["capture_calls"][0]["messages"][0].clone();
    let endpoints = (0..30).map(|i| Value::from(format!("10.0.0.{i}:5060"))).collect();
    input["capture_calls"][0]["endpoints"] = Value::Array(endpoints);
    input["capture_calls"][0]["messages"] = Value::Array(
        (0..10_000u32)
            .map(|i| {
                let mut m = message.clone();
                m["from"] = Value::from(i % 30);
                m["to"] = Value::from((i + 7) % 30);
                m
            })
            .collect(),
    );
    let call = input["capture_calls"][0].clone();
    input["capture_calls"] = Value::Array(vec![call; 40]);
    let plots = write(&input, "edges-calls").expect("a report");
    input["capture_calls"] = Value::Array(Vec::new());
    let without = write(&input, "edges-no-calls").expect("a report");
    assert_eq!(plots, without + 12, "12 ladders of 40 calls");
}
