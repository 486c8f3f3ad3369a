//! `sigkit capacity` against a real Kamailio on 127.0.0.1 (the framework
//! thesis's system under test: a stateful, record-routing proxy in front
//! of a UAS), short: a few seconds per step, two searches; and against a
//! closed port and a silent peer, where it stops at once with the cause.
#![allow(clippy::unwrap_used)] // a test fails by panicking

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

/// A port on 127.0.0.1 where nothing listens: bound, then closed.
fn closed_udp_port() -> std::net::SocketAddr {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.local_addr().unwrap()
}

/// Nothing listens at the target: the host answers the first datagram
/// with ICMP port unreachable, and the search stops before its first step
/// with the network's exit code (4, docs/cli.md) and the cause, rather
/// than halving the rate for a minute and reporting a capacity below the
/// lowest.
#[test]
fn capacity_against_a_closed_port_stops_at_once_and_names_the_cause() {
    let target = closed_udp_port();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["capacity", "--target", &target.to_string()])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(elapsed < std::time::Duration::from_secs(5), "took {elapsed:?}: {stderr}");
    assert!(
        stderr.contains(&format!("sigkit capacity: no answer from {target}: nothing listens there on UDP")),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("BelowLowest"));
}

/// A peer that takes the datagrams and never answers (no ICMP error to
/// tell): the search stops after its first step, with the count of calls
/// that got no response.
#[test]
fn capacity_against_a_silent_peer_stops_after_the_first_step() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = silent.local_addr().unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["capacity", "--target", &target.to_string(), "--start", "20", "--step-s", "1"])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    // One step: 1 s of calls and 4 s for the last ones' answers.
    assert!(elapsed < std::time::Duration::from_secs(12), "took {elapsed:?}: {stderr}");
    assert!(
        stderr.contains(&format!(
            "no answer from {target}: none of the 20 calls of the first step (20.0 calls/s for 1 s) got a response"
        )),
        "{stderr}"
    );
    // The INVITEs did arrive (after the empty probe datagram): the peer
    // was there, silent.
    silent.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 65536];
    let mut invites = 0;
    while let Ok(n) = silent.recv(&mut buf) {
        invites += usize::from(buf[..n].starts_with(b"INVITE "));
    }
    assert!(invites >= 20, "{invites} INVITEs");
    drop(silent);
}
