//! A terminal NACKs a message the proxy compressed (RFC 4077), over real
//! sockets on 127.0.0.1: a SigComp terminal, `sigkit proxy`, and an
//! upstream played by the test that answers every request 200.
//!
//! Over TCP SIP does not retransmit (RFC 3261 §17.1.1.2, §17.1.2.2: Timers
//! A and E run only on unreliable transports), so the proxy must compress
//! the NACKed message anew and send it again; over UDP it leaves recovery
//! to SIP's retransmissions.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use support::ua::Terminal;
use support::*;

/// An upstream answering every request 200 OK, until the test ends.
async fn answering_upstream() -> (u16, tokio::task::JoinHandle<()>) {
    scripted_upstream_on_any_port(|msg| {
        vec![sigkit_sip::proxy::build_response(msg, 200, "OK", Some("up"), &[]).unwrap()]
    })
    .await
}

async fn nacked_first_response(tcp: bool) -> (Terminal, String, usize) {
    let (upstream, task) = answering_upstream().await;
    let proxy = start_proxy(|port| {
        let mut c = proxy_config(port, upstream);
        c.threads = 1;
        c
    })
    .await;
    let want = if tcp { sigkit_proxy::SipTransport::Tcp } else { sigkit_proxy::SipTransport::Udp };
    let addr = proxy.terminal_addrs.iter().find(|(t, _)| *t == want).unwrap().1;
    let mut t = Terminal::new("alice", addr, tcp, true).await;
    t.nack_first = true;
    let code = t.options("sip:service@127.0.0.1").await.unwrap();
    assert_eq!(code, 200);
    let more = t.count_for(Duration::from_millis(1500), |m| m.status_code().is_some()).await;
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    proxy.stop().await;
    task.abort();
    (t, metrics, more)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tcp_a_nacked_response_is_compressed_anew_and_arrives_once() {
    let (t, metrics, more) = nacked_first_response(true).await;
    assert_eq!(t.nacks_sent, 1, "the terminal NACKed the first response");
    assert_eq!(t.resends, 0, "over TCP the terminal never sends its request again");
    assert_eq!(more, 0, "the response arrives exactly once");
    assert_eq!(metric(&metrics, "sigkit_proxy_nack_resends_total"), Some(1.0), "{metrics}");
    assert_eq!(
        metric(&metrics, "sigkit_proxy_nacks_received_total{reason=\"STATE_NOT_FOUND\"}"),
        Some(1.0),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_udp_a_nacked_response_comes_back_through_sip_retransmission() {
    let (t, metrics, _) = nacked_first_response(false).await;
    assert_eq!(t.nacks_sent, 1);
    assert!(t.resends >= 1, "the terminal's Timer E sent the request again");
    assert_eq!(metric(&metrics, "sigkit_proxy_nack_resends_total"), Some(0.0), "{metrics}");
}
