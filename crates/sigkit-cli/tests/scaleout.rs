//! `scripts/scaleout-nft.sh`: two `sigkit proxy` instances in network
//! namespaces behind nftables source-hash DNAT, in front of Kamailio. One
//! stops under load; the balancer's health check moves its terminals to
//! the other, which NACKs their state (STATE_NOT_FOUND, RFC 4077), and no
//! call is lost. Needs root, iproute2, nftables, conntrack and Kamailio
//! (`.ci/run` installs them).

mod common;

use std::path::Path;
use std::process::Command;

use common::have;

#[test]
fn a_proxy_stopped_behind_nftables_loses_no_call() {
    if !["ip", "nft", "conntrack", "kamailio"].iter().all(|t| have(t)) {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("sigkit-scaleout-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new("bash")
        .arg(root.join("scripts/scaleout-nft.sh"))
        .args(["--sigkit", env!("CARGO_BIN_EXE_sigkit"), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "scaleout-nft.sh failed:\n{stderr}\n{}", String::from_utf8_lossy(&run.stdout));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["calls_successful"], s["calls_offered"], "{s}");
    assert_eq!(s["calls_failed"], 0, "{s}");
    // Source hashing put terminals on both proxies, and each of the stopped
    // one's came back through a NACK at the other.
    let on_a = s["terminals_on_a_before_the_stop"].as_f64().unwrap();
    assert!((1.0..8.0).contains(&on_a), "{s}");
    assert!(s["terminals_nacked_by_b"].as_f64().unwrap() >= on_a, "{s}");
    assert!(s["b_nacks_state_not_found"].as_f64().unwrap() >= on_a, "{s}");
    let _ = std::fs::remove_dir_all(&out);
}
