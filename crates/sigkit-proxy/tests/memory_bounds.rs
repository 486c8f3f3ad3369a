//! Floods that tried to make the proxy hold memory no limit bounds, each
//! in miniature against a proxy with small caps, and the bound asserted
//! from the proxy's own metrics: SigComp REGISTERs that the registrar
//! never answers, and plain-SIP requests that each name a new SigComp
//! identifier (RFC 5049 §6.1).

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::*;
use tokio::net::UdpSocket;

/// A registrar that never answers: it reads and drops what it gets, and
/// counts it.
async fn silent_upstream() -> (u16, tokio::task::JoinHandle<()>) {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = socket.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut buf = vec![0u8; 70_000];
        while socket.recv_from(&mut buf).await.is_ok() {}
    });
    (port, task)
}

/// Waits until the proxy has read `n` messages from terminals.
async fn received(metrics: SocketAddr, n: f64) -> String {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let text = http_get(metrics, "/metrics").await;
        let got = metric(&text, r#"sigkit_proxy_messages_received_total{side="terminal"}"#).unwrap_or(0.0);
        if got >= n || Instant::now() > end {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A SigComp message whose bytecode outputs `sip` and asks for four states
/// of 3,500 bytes each (RFC 3320 §9.4.9 allows four; END-MESSAGE's own,
/// with a minimum access length of 0, is none): about 14 KB of pending state the proxy may keep only
/// once the registrar answers 2xx (RFC 5049 §6).
fn register_with_big_state(sip: &[u8]) -> Vec<u8> {
    let n = sip.len();
    let src = format!(
        "at (128)\nINPUT-BYTES ({n}, 4096, fail)\nOUTPUT (4096, {n})\n\
         STATE-CREATE (3500, 1024, 0, 6, 0)\nSTATE-CREATE (3500, 1100, 0, 6, 0)\n\
         STATE-CREATE (3500, 1200, 0, 6, 0)\nSTATE-CREATE (3500, 1300, 0, 6, 0)\n\
         END-MESSAGE (0, 0, 0, 0, 0, 0, 0)\n:fail\nDECOMPRESSION-FAILURE\n"
    );
    sigcomp_asm::assemble(&src).unwrap().upload().unwrap().message(sip).unwrap()
}

/// 20 sources each send 12 SigComp REGISTERs that the registrar never
/// answers. Held REGISTERs are capped per source (8), and the bytes of
/// their pending state (200 kB); past the caps the REGISTERs still go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_sigcomp_registers_are_held_within_their_caps() {
    let (upstream, _sink) = silent_upstream().await;
    let proxy = start_proxy(|port| {
        let mut c = proxy_config(port, upstream);
        c.shards = 1;
        c.max_pending_registers_per_source = 8;
        c.max_pending_state_bytes = 200_000;
        c
    })
    .await;
    let (to, metrics) = (proxy.terminal_addrs[0].1, proxy.metrics_addr.unwrap());
    for source in 1..=20u8 {
        let socket = UdpSocket::bind(format!("127.0.2.{source}:0")).await.unwrap();
        let port = socket.local_addr().unwrap().port();
        for i in 0..12 {
            let sip = request("REGISTER", &format!("reg-{source}-{i}"), port, &format!("r{source}x{i}"));
            let msg = register_with_big_state(&sip);
            socket.send_to(&msg, to).await.unwrap();
        }
    }
    let text = received(metrics, 240.0).await;
    let held = metric(&text, "sigkit_proxy_pending_registers").unwrap();
    let bytes = metric(&text, "sigkit_proxy_pending_state_bytes").unwrap();
    let refused = |cap: &str| metric(&text, &format!("sigkit_proxy_pending_registers_refused_total{{cap=\"{cap}\"}}"));
    let forwarded = metric(&text, r#"sigkit_proxy_messages_sent_total{side="upstream"}"#).unwrap();
    eprintln!("held {held}, {bytes} bytes; refused {:?} {:?}", refused("per_source"), refused("bytes"));
    assert_eq!(forwarded, 240.0, "every REGISTER goes on to the registrar");
    assert_eq!(held, 160.0, "8 held from each of 20 sources");
    assert_eq!(refused("per_source"), Some(80.0));
    assert!(bytes <= 200_000.0, "{bytes} bytes of state held");
    // Each state-carrying REGISTER holds over 14 kB: at most 14 of them
    // fit, the others were held without their state.
    assert!(refused("bytes").unwrap() >= 140.0, "{:?}", refused("bytes"));
    assert_eq!(metric(&text, "sigkit_proxy_compartments"), Some(0.0), "no state kept without a 2xx");
    proxy.stop().await;
}

fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// 50 source ports send 10,000 plain-SIP requests, each naming a new
/// SigComp identifier in its Via (RFC 5049 §6.1), half of them 20 kB
/// long, and a new 20 kB `+sip.instance` in its Contact. The proxy keeps an
/// identifier only with the flow that learned it: at most one per flow,
/// none over 256 bytes, and none once the flows are idle.
///
/// (The proxy reads every message before the flows' 2 s idle time ends.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identifiers_from_plain_sip_live_with_their_flows() {
    let (upstream, _sink) = silent_upstream().await;
    let proxy = start_proxy(|port| {
        let mut c = proxy_config(port, upstream);
        c.shards = 1;
        c.max_flows = 40;
        c.flow_idle_timeout_s = 2;
        c
    })
    .await;
    let (to, metrics) = (proxy.terminal_addrs[0].1, proxy.metrics_addr.unwrap());
    let rss_before = resident_kib();
    let long = "x".repeat(20_000);
    let mut sockets = Vec::new();
    for _ in 0..50 {
        sockets.push(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    }
    for i in 0..200 {
        for (s, socket) in sockets.iter().enumerate() {
            let port = socket.local_addr().unwrap().port();
            let id = if (i + s) % 2 == 0 { format!("urn:x:{long}{i}-{s}") } else { format!("urn:uuid:{i:08}-{s:04}") };
            let req = format!(
                "OPTIONS sip:service@127.0.0.1 SIP/2.0\r\n\
                 Via: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bKid{i}x{s};rport;sigcomp-id=\"{id}\"\r\n\
                 Max-Forwards: 70\r\nFrom: <sip:alice@127.0.0.1>;tag=a\r\nTo: <sip:service@127.0.0.1>\r\n\
                 Call-ID: id-{i}-{s}\r\nCSeq: 1 OPTIONS\r\n\
                 Contact: <sip:alice@127.0.0.1:{port}>;+sip.instance=\"<urn:uuid:{i:08}-{s:04}-{long}>\"\r\n\
                 Content-Length: 0\r\n\r\n"
            );
            socket.send_to(req.as_bytes(), to).await.unwrap();
        }
        // Loopback's socket buffer holds a few hundred of these.
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    let text = received(metrics, 10_000.0).await;
    let grown_mib = resident_kib().saturating_sub(rss_before) / 1024;
    let flows = metric(&text, "sigkit_proxy_flows").unwrap();
    let ids = metric(&text, "sigkit_proxy_flow_identifiers").unwrap();
    let id_bytes = metric(&text, "sigkit_proxy_flow_identifier_bytes").unwrap();
    let got = metric(&text, r#"sigkit_proxy_messages_received_total{side="terminal"}"#).unwrap();
    eprintln!("{got} received; {flows} flows, {ids} identifiers of {id_bytes} bytes; RSS grew {grown_mib} MiB");
    assert!(got >= 9_000.0, "only {got} of 10,000 read");
    assert!(flows <= 40.0, "{flows} flows");
    assert!(ids <= flows, "{ids} identifiers for {flows} flows");
    assert!(id_bytes <= 40.0 * 256.0, "{id_bytes} bytes of identifiers");
    // 15,000 identifiers of 20 kB were offered: kept, they would be 300 MB.
    assert!(grown_mib < 64, "the proxy's process grew {grown_mib} MiB");
    // Idle flows go, and their identifiers with them.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let text = http_get(metrics, "/metrics").await;
    assert_eq!(metric(&text, "sigkit_proxy_flows"), Some(0.0));
    assert_eq!(metric(&text, "sigkit_proxy_flow_identifier_bytes"), Some(0.0));
    proxy.stop().await;
}
