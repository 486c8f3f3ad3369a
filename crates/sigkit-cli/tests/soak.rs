//! `scripts/soak.sh` as CI runs it: 20 s instead of an hour, the same
//! chain (SigComp terminal, `sigkit proxy`, Kamailio, UAS), the capacity
//! measured first. No call may be lost; the script's own verdict and its
//! summary say so.

mod common;

use std::path::Path;
use std::process::Command;

use common::have;

#[test]
fn a_short_soak_through_kamailio_loses_no_call() {
    if !have("kamailio") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("sigkit-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new("bash")
        .arg(root.join("scripts/soak.sh"))
        .args(["--duration", "20", "--sigkit", env!("CARGO_BIN_EXE_sigkit"), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "soak.sh failed:\n{stderr}\n{}", String::from_utf8_lossy(&run.stdout));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let rate = summary["rate_cps"].as_u64().unwrap();
    assert!(rate >= 80, "80 % of a capacity of at least 100 calls/s: {summary}");
    assert_eq!(summary["attempted_calls"].as_u64(), Some(rate * 20), "{summary}");
    assert_eq!(summary["successful_calls"], summary["attempted_calls"], "{summary}");
    assert_eq!(summary["failed_calls"], 0, "{summary}");
    assert!(summary["rss_kib_end"].as_f64().unwrap() > 0.0, "{summary}");
    assert!(summary["proxy_cpu_us_per_message"].as_f64().unwrap() > 0.0, "{summary}");
    // The capacity steps that led to the rate.
    let steps = std::fs::read_to_string(out.join("capacity.csv")).unwrap();
    assert!(steps.lines().count() >= 2, "{steps}");
    let _ = std::fs::remove_dir_all(&out);
}
