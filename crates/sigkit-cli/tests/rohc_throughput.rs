//! `sigkit rohc-throughput` end to end on a small grid: the JSON report's
//! points and fields, the draft's figures beside ours, the tables, and
//! refused arguments.
#![allow(clippy::unwrap_used)] // a test fails by panicking

use std::process::Command;

fn sigkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sigkit"))
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = sigkit().arg("rohc-throughput").args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn point<'a>(report: &'a serde_json::Value, ber: f64, scheme: &str) -> &'a serde_json::Value {
    report["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["ber"].as_f64() == Some(ber) && p["scheme"] == scheme)
        .unwrap_or_else(|| panic!("no point {ber} {scheme}"))
}

#[test]
fn a_small_grid_reports_every_point_beside_the_draft() {
    let r = json(&["--link", "9600", "--ber", "0,1e-5", "--seconds", "120", "--seeds", "2"]);
    assert_eq!(r["points"].as_array().unwrap().len(), 2 * 5);
    assert_eq!(
        (r["seeds"].as_u64(), r["mode"].as_str(), r["damaged_frames"].as_str(), r["errors"].as_str()),
        (Some(2), Some("o"), Some("discard"), Some("forward"))
    );
    for p in r["points"].as_array().unwrap() {
        // The draft's Sack table at 9.6 kb/s: NewReno stands in.
        assert_eq!(p["variant"], "newreno");
        assert_eq!(p["goodput"]["n"], 2);
        assert_eq!(p["undetected"], 0);
        let g = p["goodput"]["mean"].as_f64().unwrap();
        // Never more than the link's 1200 octets per second.
        assert!(g > 0.0 && g < 1200.0, "{p}");
        assert!(p["goodput"]["min"].as_f64().unwrap() <= g && g <= p["goodput"]["max"].as_f64().unwrap());
    }
    // BER 0 is no row of the draft's; 1e-5 (MTU 296) is.
    assert!(point(&r, 0.0, "none")["draft_goodput"].is_null());
    assert_eq!(point(&r, 1e-5, "none")["draft_goodput"], 979);
    assert_eq!(point(&r, 1e-5, "ideal")["draft_goodput"], 1123);
    // The draft's IPHC column (RFC 2507 without TWICE).
    assert_eq!(point(&r, 1e-5, "iphc")["draft_goodput"], 935);
    // 5 octets a segment, more for the retransmissions after queue drops.
    assert!(point(&r, 0.0, "iphc")["mean_header_forward"].as_f64().unwrap() < 8.0);
    assert!(point(&r, 0.0, "iphc")["goodput"]["median"].is_number());
    assert_eq!(point(&r, 1e-5, "none")["mtu"], 296);
    // Compression gains throughput; IDEAL's 4-octet headers most.
    let g = |ber, s| point(&r, ber, s)["goodput"]["mean"].as_f64().unwrap();
    assert!(g(0.0, "ideal") > g(0.0, "none") * 1.05);
    assert!(g(0.0, "taroc-o") > g(0.0, "none") * 1.04);
    assert!(point(&r, 0.0, "taroc-o")["mean_header_forward"].as_f64().unwrap() < 10.0);
    assert_eq!(point(&r, 0.0, "none")["mean_header_forward"].as_f64(), Some(40.0));
    // Errors cost throughput and bring timeouts.
    assert!(g(1e-5, "none") < g(0.0, "none"));
    assert!(point(&r, 1e-5, "vj")["context_damage"].as_f64().unwrap() > 0.0);
    // Context recovery per loss episode, over both seeds: every packet
    // lost to context damage (a mean per run above) belongs to an episode
    // or is counted apart; only TAROC has a window to exceed.
    for p in r["points"].as_array().unwrap() {
        for field in
            ["loss_episodes", "context_recovery_mean", "context_recovery_max", "context_damage_outside_episodes"]
        {
            assert!(p[field].is_number(), "{} lacks {field}", p["scheme"]);
        }
        let in_episodes = p["context_recovery_mean"].as_f64().unwrap() * p["loss_episodes"].as_f64().unwrap();
        let outside = p["context_damage_outside_episodes"].as_f64().unwrap();
        let total = p["context_damage"].as_f64().unwrap() * 2.0;
        assert!((in_episodes + outside - total).abs() < 1e-6, "{p}");
        for field in ["episodes_beyond_window", "beyond_window_max"] {
            assert_eq!(p[field].is_number(), p["scheme"] == "taroc-o", "{} {field}", p["scheme"]);
        }
    }
    assert_eq!(point(&r, 0.0, "taroc-o")["loss_episodes"], 0);
    assert!(point(&r, 1e-5, "vj")["loss_episodes"].as_u64().unwrap() > 0);
    assert!(point(&r, 1e-5, "vj")["context_recovery_max"].as_u64().unwrap() > 0);
}

#[test]
fn options_choose_the_variant_mode_mtu_and_damage_model() {
    let r = json(&[
        "--link",
        "64000",
        "--ber",
        "1e-5",
        "--seconds",
        "30",
        "--seeds",
        "1",
        "--variant",
        "tahoe",
        "--mode",
        "u",
        "--mtu",
        "576",
        "--schemes",
        "taroc,none",
        "--damaged",
        "deliver",
    ]);
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(r["damaged_frames"], "deliver");
    let taroc = point(&r, 1e-5, "taroc-u");
    assert_eq!((taroc["variant"].as_str(), taroc["mtu"].as_u64()), (Some("tahoe"), Some(576)));
    // The draft has no 576-octet row at 1e-5.
    assert!(taroc["draft_goodput"].is_null());
}

#[test]
fn sack_puts_sack_options_on_the_acks() {
    let args = ["--link", "114000", "--ber", "1e-6", "--seconds", "60", "--seeds", "2", "--schemes", "none,taroc"];
    let newreno = json(&args);
    let sack = json(&[&args[..], &["--variant", "sack"]].concat());
    let p = point(&sack, 1e-6, "none");
    assert_eq!(p["variant"], "sack");
    assert_eq!(point(&newreno, 1e-6, "none")["variant"], "newreno");
    // Queue overflows leave holes, so some ACKs carry SACK blocks: NONE's
    // mean ACK header grows past 40 octets, NewReno's does not.
    assert!(p["mean_header_backward"].as_f64().unwrap() > 40.5, "{p}");
    assert_eq!(point(&newreno, 1e-6, "none")["mean_header_backward"].as_f64(), Some(40.0));
    assert!(p["fast_retransmits"].as_f64().unwrap() > 0.0);
    // TAROC compresses them, and loses none.
    let t = point(&sack, 1e-6, "taroc-o");
    assert_eq!((t["context_damage"].as_f64(), t["undetected"].as_u64()), (Some(0.0), Some(0)));
    assert!(t["mean_header_backward"].as_f64().unwrap() < 10.0, "{t}");
}

#[test]
fn errors_on_both_directions_cost_the_acks_too() {
    let args = ["--link", "64000", "--ber", "3e-4", "--seconds", "100", "--seeds", "4", "--schemes", "none,iphc-twice"];
    let fwd = json(&args);
    let both = json(&[&args[..], &["--errors", "both", "--initial-window", "1"]].concat());
    assert_eq!((both["errors"].as_str(), both["initial_window"].as_u64()), (Some("both"), Some(1)));
    assert!(fwd["initial_window"].is_null());
    let g = |r: &serde_json::Value, s| point(r, 3e-4, s)["goodput"]["mean"].as_f64().unwrap();
    // 40-octet ACKs lost 9 % of the time: fewer ACKs, more timeouts.
    assert!(g(&both, "none") < g(&fwd, "none"), "{} {}", g(&both, "none"), g(&fwd, "none"));
    assert_eq!(point(&fwd, 3e-4, "iphc-twice")["draft_goodput"], 86);
}

#[test]
fn the_ns2_timer_is_chosen_and_reported() {
    let args = ["--link", "9600", "--ber", "3e-4", "--seconds", "100", "--seeds", "3", "--schemes", "none"];
    let rfc = json(&args);
    let ns2 = json(&[&args[..], &["--timer", "ns2", "--tcp-tick", "0.1"]].concat());
    assert_eq!((rfc["timer"].as_str(), rfc["tcp_tick"].is_null()), (Some("rfc6298"), true));
    assert_eq!((ns2["timer"].as_str(), ns2["tcp_tick"].as_f64()), (Some("ns2"), Some(0.1)));
    let p = |r: &serde_json::Value, f: &str| point(r, 3e-4, "none")[f].as_f64().unwrap();
    // Most of a run at 3e-4 waits on expired timers, which ns-2's timer
    // (SRTT + 4·RTTVAR of a 0.51 s round trip, backed off before the 1 s
    // floor) sets otherwise than RFC 6298's (the floor, doubled).
    for r in [&rfc, &ns2] {
        assert!(p(r, "timeout_wait_s") > 30.0 && p(r, "timeout_wait_s") < 100.0, "{r}");
    }
    assert_ne!(p(&rfc, "timeout_wait_s"), p(&ns2, "timeout_wait_s"));
    assert!(rfc["delayed_ack"].is_null());
    let delack = json(&[&args[..], &["--delayed-ack", "0.1"]].concat());
    assert_eq!(delack["delayed_ack"].as_f64(), Some(0.1));
    // The held ACKs change the run.
    let g = |r: &serde_json::Value| point(r, 3e-4, "none")["goodput"]["mean"].as_f64().unwrap();
    assert_ne!(g(&rfc), g(&delack));
}

#[test]
fn the_table_names_the_draft_and_its_figures() {
    let out = sigkit()
        .args(["rohc-throughput", "--link", "384000", "--ber", "1e-6", "--seconds", "20", "--seeds", "1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("draft A.3.1 Tahoe"), "{text}");
    // The draft's NONE and IDEAL figures at 1e-6, in parentheses.
    assert!(text.contains("(16703)") && text.contains("(17027)"), "{text}");
    // IPHC's column, the draft's 13840 beside it.
    assert!(text.contains("IPHC") && text.contains("(13840)"), "{text}");
    assert!(text.contains("draft-ietf-rohc-tcp-taroc-04"));
    assert!(text.contains("ctxrec.mx") && text.contains("beyond W"), "{text}");
}

#[test]
fn bad_arguments_are_refused() {
    for args in [
        &["--seeds", "0"][..],
        &["--ber", "0.9"],
        &["--ber", "nan"],
        &["--mtu", "40"],
        &["--link", "0"],
        &["--seconds", "-1"],
        &["--min-rto", "0"],
        &["--timer", "ns3"],
        &["--tcp-tick", "0"],
        &["--delayed-ack", "0"],
        &["--variant", "vegas"],
        &["--errors", "backward"],
        &["--initial-window", "0"],
        &["--schemes", "iphc-thrice"],
    ] {
        let out = sigkit().arg("rohc-throughput").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stdout));
        assert!(!out.stderr.is_empty());
    }
}
