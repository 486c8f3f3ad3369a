//! `sigkit rohc` on a fresh capture of real peers: SIPp's built-in UAC
//! calls through Kamailio to SIPp's built-in UAS over TCP on loopback,
//! captured by `scripts/capture-sip-tcp.sh` (the script that made
//! crates/taroc/tests/data/sip-kamailio-*.pcapng) in a network namespace of
//! its own with the kernel's default TCP settings.
//!
//! tshark checks that the capture is what it claims to be (every segment
//! with the timestamps option, window scaling offered in both SYNs, the
//! calls' INVITEs on both legs, one long connection or many short ones);
//! then every packet must come back identical from TAROC in each mode and
//! with cross-direction inference, with no undetected corruption. The
//! compressed sizes are only checked loosely: the compressor changes.
//!
//! Kamailio, SIPp, dumpcap, tshark and unshare are required in CI (`CI`
//! set); elsewhere a missing one skips the test with the reason printed.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::have;

/// Calls per capture: enough for 100 packets on each long connection
/// (9 or 10 a call towards the UAS at 20 calls/s, as delayed ACKs fall),
/// few enough for a few seconds.
const CALLS: usize = 15;

/// Whether the peers and a network namespace of our own are available
/// (in CI a missing one fails).
fn peers_ready() -> bool {
    if !["kamailio", "sipp", "dumpcap", "tshark", "unshare", "ip", "ss"].into_iter().all(have) {
        return false;
    }
    let flag = if is_root() { "-n" } else { "-rn" };
    let ok = Command::new("unshare").args([flag, "true"]).output().is_ok_and(|o| o.status.success());
    assert!(ok || std::env::var_os("CI").is_none(), "CI: `unshare {flag}` must work (CI runs as root)");
    if !ok {
        eprintln!("skipping: cannot make a network namespace (unshare {flag})");
    }
    ok
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// Runs the capture script for `cases` into a fresh folder; the folder.
fn capture(cases: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("rohc-sipp-kamailio-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/capture-sip-tcp.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&dir)
        .args(cases)
        .env("CALLS", CALLS.to_string())
        .env("RATE", "20")
        .env_remove("NO_NETNS")
        .output()
        .unwrap();
    let logs: Vec<String> = cases
        .iter()
        .flat_map(|c| ["kamailio.log", "sipp-uac.log"].map(|f| dir.join(format!("{c}-logs/{f}"))))
        .map(|p| format!("--- {}\n{}", p.display(), std::fs::read_to_string(&p).unwrap_or_default()))
        .collect();
    assert!(
        out.status.success(),
        "{}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        logs.join("\n")
    );
    dir
}

/// One row per TCP segment: tshark's `fields` for it.
fn segments(file: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(file).args(["-Y", "tcp", "-T", "fields", "-E", "occurrence=f"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

/// What tshark sees in a capture: packets per TCP connection, and the
/// checks every capture of the script must pass.
fn check_capture(file: &Path) -> Vec<usize> {
    let rows = segments(
        file,
        &["tcp.stream", "tcp.flags.syn", "tcp.options.timestamp.tsval", "tcp.options.wscale.shift", "sip.Method"],
    );
    assert!(!rows.is_empty(), "{} holds no TCP", file.display());
    let mut per_conn: BTreeMap<String, usize> = BTreeMap::new();
    let (mut syns, mut invites) = (0, 0);
    for r in &rows {
        *per_conn.entry(r[0].clone()).or_default() += 1;
        // Linux's default (net.ipv4.tcp_timestamps=1): TSopt on every
        // segment of the connection (RFC 7323 §3.2).
        assert!(!r[2].is_empty(), "a segment without timestamps in {}: {r:?}", file.display());
        if r[1] == "1" {
            syns += 1;
            // Window scaling offered in SYN and SYN-ACK alike: negotiated
            // (RFC 7323 §2.2).
            assert!(!r[3].is_empty(), "a SYN without window scale in {}: {r:?}", file.display());
        }
        invites += (r[4] == "INVITE") as usize;
    }
    assert_eq!(syns, 2 * per_conn.len(), "{}: a SYN and a SYN-ACK per connection", file.display());
    // Each call's INVITE once from the UAC to Kamailio, once from Kamailio
    // to the UAS.
    assert_eq!(invites, 2 * CALLS, "{}", file.display());
    per_conn.into_values().collect()
}

/// `sigkit rohc FILE --json ARGS`.
fn rohc(file: &Path, args: &[&str]) -> serde_json::Value {
    let out =
        Command::new(env!("CARGO_BIN_EXE_sigkit")).arg("rohc").arg(file).args(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every packet round-trips through TAROC in modes u, o, r and o with
/// inference; TAROC's mean header is a fifth smaller at least (loose: the
/// compressor changes, and U-mode's slow start weighs on a dozen calls).
fn check_round_trip(file: &Path, packets: usize) {
    for (mode, infer) in [("u", false), ("o", false), ("r", false), ("o", true)] {
        let mut args = vec!["--mode", mode];
        if infer {
            args.push("--infer");
        }
        let r = rohc(file, &args);
        let total =
            r["capture"]["tcp_ipv4_packets"].as_u64().unwrap() + r["capture"]["tcp_ipv6_packets"].as_u64().unwrap();
        assert_eq!(total as usize, packets, "{}: sigkit and tshark count the TCP packets alike", file.display());
        let name = if infer { "taroc-o-infer".to_string() } else { format!("taroc-{mode}") };
        let taroc = r["schemes"].as_array().unwrap().iter().find(|s| s["scheme"] == name.as_str());
        let taroc = taroc.unwrap_or_else(|| panic!("no {name} in {r}"));
        for s in r["schemes"].as_array().unwrap() {
            let what = format!("{} {mode} infer={infer} {}", file.display(), s["scheme"]);
            assert_eq!(s["compress_errors"], 0, "{what}");
            assert_eq!(s["delivered"], packets, "{what}");
            assert_eq!(s["undetected"], 0, "{what}");
            assert_eq!(s["context_damage"], 0, "{what}");
        }
        let (before, after) =
            (taroc["mean_header_before"].as_f64().unwrap(), taroc["mean_header_after"].as_f64().unwrap());
        assert!(after > 0.0 && after < 0.8 * before, "{name}: {after} B of {before} B");
    }
}

#[test]
fn fresh_sipp_kamailio_captures_over_tcp_round_trip_in_every_mode() {
    if !peers_ready() {
        return;
    }
    let dir = capture(&["long", "short"]);

    // One TCP connection per leg (SIPp -t t1): the UAC's to Kamailio and
    // Kamailio's to the UAS, each carrying every call.
    let long = dir.join("sip-kamailio-long.pcapng");
    let conns = check_capture(&long);
    eprintln!("long: packets per connection {conns:?}");
    assert_eq!(conns.len(), 2, "{conns:?}");
    assert!(conns.iter().all(|&n| n >= 100), "100 packets or more on each connection: {conns:?}");
    check_round_trip(&long, conns.iter().sum());

    // A connection per call from the UAC (-t tn), each a few packets
    // (handshake, the call's messages and their ACKs, FINs); Kamailio
    // keeps the one connection to the UAS it opened first.
    let short = dir.join("sip-kamailio-short.pcapng");
    let conns = check_capture(&short);
    eprintln!("short: packets per connection {conns:?}");
    assert_eq!(conns.len(), CALLS + 1, "{conns:?}");
    let brief = conns.iter().filter(|&&n| (10..=30).contains(&n)).count();
    assert_eq!(brief, CALLS, "a short connection per call: {conns:?}");
    check_round_trip(&short, conns.iter().sum());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The stored captures of the same kind (crates/taroc/tests/data, made by
/// the same script with 20 calls): each holds what its README entry says,
/// every packet round-trips in every mode, and bit errors never come out
/// of TAROC as a wrong header. Needs no peer.
#[test]
fn stored_sipp_kamailio_captures_round_trip_in_every_mode() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../taroc/tests/data");
    // (file, packets, IPv6 packets, connections)
    for (name, packets, v6, flows) in [
        ("sip-kamailio-long.pcapng", 450, 0, 2),
        ("sip-kamailio-short.pcapng", 565, 0, 21),
        ("sip-kamailio-ipv6.pcapng", 451, 451, 2),
    ] {
        let file = data.join(name);
        let r = rohc(&file, &[]);
        assert_eq!(r["capture"]["tcp_ipv6_packets"], v6, "{name}");
        let taroc = &r["schemes"][0];
        assert_eq!((taroc["packets"].as_u64(), taroc["flows"].as_u64()), (Some(packets), Some(flows)), "{name}");
        check_round_trip(&file, packets as usize);
        for mode in ["u", "o", "r"] {
            for seed in ["1", "2", "3"] {
                let r = rohc(&file, &["--mode", mode, "--ber", "1e-3", "--seed", seed]);
                // TAROC's CRCs catch what the uncompressed schemes (none,
                // VJ's uncompressed packets) may let through.
                let t = &r["schemes"][0];
                assert_eq!(t["scheme"], format!("taroc-{mode}").as_str());
                assert_eq!(t["undetected"], 0, "{name} {mode} seed {seed}");
                assert!(t["link_damaged"].as_u64().unwrap() > 0, "{name}: the link damaged none");
            }
        }
    }
}
