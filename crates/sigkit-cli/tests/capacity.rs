//! `sigkit capacity` against a real Kamailio on 127.0.0.1 (the framework
//! thesis's system under test: a stateful, record-routing proxy in front
//! of a UAS), short: a few seconds per step, two searches.

mod common;

use std::process::Command;

use common::have;
use sigkit_eval::peers;

#[test]
fn the_capacity_of_kamailio_is_found_with_its_confidence() {
    if !have("kamailio") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("sigkit-capacity-kamailio-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let kamailio = peers::kamailio(&dir).unwrap();
    // Steps of 250 calls/s from 250 up (Kamailio with one worker serves
    // some hundreds to a few thousand here), a second each, twice.
    let out = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["capacity", "--json", "--through", &kamailio.addr.to_string()])
        .args(["--start", "250", "--step", "250", "--max", "20000", "--step-s", "1", "--repeat", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["target"], format!("the proxy at {} in front of the built-in UAS", kamailio.addr));
    assert_eq!(report["service_level"], "at most 10 % failed calls, p95 set-up delay at most 250 ms");
    let searches = report["searches"].as_array().unwrap();
    assert_eq!(searches.len(), 2);
    for s in searches {
        // Each search found a rate served and the next step not served.
        assert_eq!(s["bound"], "Bracketed", "{stderr}");
        let capacity = s["capacity_cps"].as_f64().unwrap();
        assert_eq!(s["first_unserved_cps"].as_f64().unwrap(), capacity + 250.0);
        let steps = s["steps"].as_array().unwrap();
        let last = &steps.last().unwrap();
        assert_ne!(last[1], "Served", "the search ends on a step not served: {last}");
        assert!(steps[..steps.len() - 1].iter().all(|st| st[1] == "Served"), "{steps:?}");
    }
    let e = &report["estimate"];
    assert_eq!(e["repetitions"], 2);
    let (mean, min, max) =
        (e["mean_cps"].as_f64().unwrap(), e["min_cps"].as_f64().unwrap(), e["max_cps"].as_f64().unwrap());
    assert!(mean >= 250.0 && min <= mean && mean <= max, "{e}");
    // The confidence fields: a 95 % interval and the largest deviation.
    assert!(e["ci95_cps"].as_f64().is_some_and(|c| c >= 0.0), "{e}");
    assert!(e["stddev_cps"].as_f64().is_some());
    let deviation = e["max_deviation"].as_f64().unwrap();
    assert!((deviation - (max - mean).max(mean - min) / mean).abs() < 1e-9, "{e}");
    drop(kamailio);
}
