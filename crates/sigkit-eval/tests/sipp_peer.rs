//! SIPp's UAC as `sigkit eval` drives it, against a peer that never
//! answers: the run ends at its limit with its calls counted, whatever
//! SIPp's own `-timeout` does (3.6 waits for open calls, 3.7 aborts them).

use std::net::UdpSocket;
use std::time::Duration;

use sigkit_eval::peers;

#[test]
fn calls_still_open_at_the_limit_are_counted_not_an_error() {
    let found = peers::find("sipp").is_some();
    assert!(found || std::env::var_os("CI").is_none(), "sipp is required in CI (.ci/run installs it)");
    if !found {
        eprintln!("skipping: sipp is not installed");
        return;
    }
    // Bound and never read: no ICMP error, no answer, so every INVITE is
    // sent again until Timer B (32 s), far past the limit.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = silent.local_addr().unwrap();
    let dir = std::env::temp_dir().join(format!("sigkit-sipp-peer-{}", std::process::id()));
    let calls =
        peers::sipp_uac(&dir, target, target, 10.0, 2, Duration::from_secs(2)).expect("a run ended at its limit");
    assert_eq!(calls, peers::SippCalls { successful: 0, failed: 0, unfinished: 2 });
    let _ = std::fs::remove_dir_all(&dir);
}
