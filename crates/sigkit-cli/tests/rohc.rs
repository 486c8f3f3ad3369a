//! `sigkit rohc` end to end on real captures (crates/taroc/tests/data,
//! HTTP transfers on 127.0.0.1): exact round trips without faults, no
//! undetected corruption under bit errors, the JSON report's fields, the
//! written pcap, and bad files.
#![allow(clippy::unwrap_used)] // a test fails by panicking

use std::path::PathBuf;
use std::process::{Command, Output};

fn sigkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sigkit"))
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../taroc/tests/data").join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sigkit-rohc-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = sigkit().arg("rohc").args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn scheme<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["schemes"].as_array().unwrap().iter().find(|s| s["scheme"] == name).unwrap()
}

#[test]
fn without_faults_every_packet_comes_back_exactly_in_every_mode() {
    // The 40-packet transfer is mostly TAROC's compression slow start
    // (IR, IR-DYN); the 179-packet one mostly compressed packets.
    for (file, packets, ratio) in [("http-bulk-lo.pcap", 179, 3.0), ("http-small-any.pcapng", 40, 1.5)] {
        let path = data(file);
        for mode in ["u", "o", "r"] {
            let r = json(&[path.to_str().unwrap(), "--mode", mode]);
            assert_eq!(r["capture"]["tcp_ipv4_packets"], packets, "{file}");
            for s in r["schemes"].as_array().unwrap() {
                assert_eq!(s["delivered"], packets, "{file} {mode} {}", s["scheme"]);
                assert_eq!(s["undetected"], 0);
                assert_eq!(s["context_damage"], 0);
            }
            let taroc = scheme(&r, &format!("taroc-{mode}"));
            assert!(
                taroc["mean_header_after"].as_f64().unwrap() < taroc["mean_header_before"].as_f64().unwrap() / ratio
            );
        }
    }
}

#[test]
fn the_written_pcap_holds_the_original_packets() {
    let dir = scratch("out");
    let out = dir.join("back.pcap");
    let status =
        sigkit().args(["rohc", data("http-bulk-lo.pcap").to_str().unwrap(), "--pcap", out.to_str().unwrap()]).output();
    assert!(status.unwrap().status.success());
    let back = json(&[out.to_str().unwrap()]);
    let orig = json(&[data("http-bulk-lo.pcap").to_str().unwrap()]);
    assert_eq!(back["capture"]["link_types"][0], "RAW");
    assert_eq!(back["capture"]["checksums_fixed"], 0);
    assert_eq!(back["capture"]["tcp_ipv4_packets"], 179);
    assert_eq!(scheme(&back, "none")["header_bytes_before"], scheme(&orig, "none")["header_bytes_before"]);
    assert_eq!(scheme(&back, "taroc-o")["header_bytes_after"], scheme(&orig, "taroc-o")["header_bytes_after"]);
}

#[test]
fn bit_errors_never_become_undetected_corruption() {
    let path = data("http-bulk-lo.pcap");
    for seed in 1..=5 {
        for mode in ["u", "o", "r"] {
            let seed = seed.to_string();
            let r = json(&[path.to_str().unwrap(), "--ber", "1e-3", "--mode", mode, "--seed", &seed]);
            let t = scheme(&r, &format!("taroc-{mode}"));
            assert_eq!(t["undetected"], 0, "seed {seed} mode {mode}");
            assert!(t["link_damaged"].as_u64().unwrap() > 0);
        }
    }
}

#[test]
fn json_reports_every_figure_for_every_scheme() {
    let r = json(&[data("http-bulk-lo.pcap").to_str().unwrap(), "--loss", "0.05", "--reorder", "2", "--seed", "3"]);
    let names: Vec<_> = r["schemes"].as_array().unwrap().iter().map(|s| s["scheme"].as_str().unwrap()).collect();
    assert_eq!(names, ["taroc-o", "vj", "iphc", "iphc-twice", "none", "ideal"]);
    for s in r["schemes"].as_array().unwrap() {
        for field in [
            "header_bytes_before",
            "header_bytes_after",
            "mean_header_after",
            "context_damage",
            "undetected",
            "recovery_mean",
            "recovery_max",
            "link_lost",
            "loss_events",
            "context_recovery_mean",
            "context_recovery_max",
            "context_damage_outside_episodes",
        ] {
            assert!(s[field].is_number(), "{} lacks {field}", s["scheme"]);
        }
        assert!(s["link_lost"].as_u64().unwrap() > 0);
        // Only TAROC has a window of references (its VSW) to exceed.
        for field in ["episodes_beyond_window", "beyond_window_max"] {
            assert_eq!(s[field].is_number(), s["scheme"] == "taroc-o", "{} {field}", s["scheme"]);
            assert_eq!(s[field].is_null(), s["scheme"] != "taroc-o", "{} {field}", s["scheme"]);
        }
        // Every packet lost to context damage belongs to a loss episode or
        // is counted apart.
        let in_episodes = s["context_recovery_mean"].as_f64().unwrap() * s["loss_events"].as_f64().unwrap();
        let outside = s["context_damage_outside_episodes"].as_f64().unwrap();
        assert!((in_episodes + outside - s["context_damage"].as_f64().unwrap()).abs() < 1e-6, "{s}");
        assert!(s["context_recovery_max"].as_f64().unwrap() <= s["context_damage"].as_f64().unwrap());
    }
    assert_eq!(r["link"]["reorder"], 2);
    assert!(r["capture"]["checksums_fixed"].as_u64().unwrap() > 0, "loopback captures carry offloaded checksums");
    let table = sigkit().args(["rohc", data("http-small-any.pcapng").to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    for name in ["taroc-o", "vj", "iphc", "iphc-twice", "none", "ideal", "mean B", "ctxrec.mx", "beyond W"] {
        assert!(text.contains(name), "{text}");
    }
}

fn fails(out: Output, needle: &str) {
    assert!(!out.status.success());
    assert_ne!(out.status.code(), Some(101), "panicked");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sigkit rohc") && err.contains(needle), "{err}");
}

#[test]
fn bad_files_give_an_error_not_a_panic() {
    let dir = scratch("bad");
    let text = dir.join("notes.txt");
    std::fs::write(&text, "not a capture\n").unwrap();
    fails(sigkit().args(["rohc", text.to_str().unwrap()]).output().unwrap(), "not a pcap or pcapng");
    let good = std::fs::read(data("http-bulk-lo.pcap")).unwrap();
    // Cut inside the file header: nothing to read. (A file cut short later
    // is read with a warning: tests/cut_short.rs.)
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &good[..20]).unwrap();
    fails(sigkit().args(["rohc", cut.to_str().unwrap()]).output().unwrap(), "cut short");
    fails(sigkit().args(["rohc", dir.join("missing.pcap").to_str().unwrap()]).output().unwrap(), "missing.pcap");
    fails(
        sigkit().args(["rohc", data("http-bulk-lo.pcap").to_str().unwrap(), "--loss", "2"]).output().unwrap(),
        "--loss",
    );
}

#[test]
fn infer_adds_a_row_that_shrinks_sip_over_tcp_headers() {
    let sip = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../sigkit-analyze/tests/data/sip-tcp.pcapng");
    let r = json(&[sip.to_str().unwrap(), "--infer"]);
    let (taroc, infer) = (scheme(&r, "taroc-o"), scheme(&r, "taroc-o-infer"));
    assert_eq!(infer["delivered"], taroc["delivered"]);
    assert_eq!(infer["undetected"], 0);
    let mean = |s: &serde_json::Value| s["mean_header_after"].as_f64().unwrap();
    assert!(mean(infer) < 0.6 * mean(taroc), "{} against {}", mean(infer), mean(taroc));
    // The table names it in a column wide enough for it.
    let table = sigkit().args(["rohc", sip.to_str().unwrap(), "--infer"]).output().unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.lines().any(|l| l.starts_with("taroc-o-infer ")), "{text}");
    // Inference recovers by O-mode's feedback: other modes are refused.
    let u = sigkit().args(["rohc", sip.to_str().unwrap(), "--infer", "--mode", "u"]).output().unwrap();
    assert_eq!(u.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&u.stderr).contains("--infer needs --mode o"));
}

#[test]
fn a_shared_link_replicates_contexts_across_connections() {
    // SIPp ⇄ Kamailio with a connection per call: on one link each new
    // connection's IRs replicate an earlier connection's context.
    let file = data("sip-kamailio-short.pcapng");
    let path = file.to_str().unwrap();
    let own = json(&[path, "--infer"]);
    let one = json(&[path, "--infer", "--shared-link"]);
    assert_eq!((&own["link"]["shared"], &one["link"]["shared"]), (&false.into(), &true.into()));
    for name in ["taroc-o", "taroc-o-infer"] {
        let (a, b) = (scheme(&own, name), scheme(&one, name));
        assert_eq!(a["flows"], b["flows"], "{name}: the same connections counted on one link");
        assert_eq!(b["delivered"], b["packets"], "{name}");
        assert_eq!(b["undetected"], 0, "{name}");
        let (a, b) = (a["mean_header_after"].as_f64().unwrap(), b["mean_header_after"].as_f64().unwrap());
        assert!(b < a - 0.5, "{name}: {b} B on one link against {a} B on a link each");
    }
    let out = sigkit().args(["rohc", path, "--shared-link"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("every connection on this one link"));
}
