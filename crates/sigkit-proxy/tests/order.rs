//! The proxy keeps each terminal's messages in order, both ways, over real
//! sockets on 127.0.0.1 with an upstream played by the test.
//!
//! - Over TCP a compressor may name a state as soon as the message
//!   creating it is sent: a reliable transport guarantees its arrival
//!   (RFC 3320 §5.1), and a stream delivers it before anything sent after
//!   it. The proxy must then write its messages to a terminal in the order
//!   it compressed them, even when back-to-back responses for one terminal
//!   come in while another thread is busy with the one before.
//! - A terminal's requests reach the upstream in the order it sent them:
//!   an ACK is not overtaken by the re-INVITE sent right after it, which a
//!   UAS would take for a second INVITE inside the first's transaction.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use tokio::sync::mpsc;

use support::ua::Terminal;
use support::*;

const BURST: usize = 40;

/// An upstream answering every request but ACK with `BURST` 200 OKs sent
/// back to back, each with a To tag of its own so each snapshot differs.
async fn bursting_upstream() -> (u16, tokio::task::JoinHandle<()>) {
    scripted_upstream_on_any_port(|msg| {
        (0..BURST)
            .map(|i| sigkit_sip::proxy::build_response(msg, 200, "OK", Some(&format!("up{i}")), &[]).unwrap())
            .collect()
    })
    .await
}

fn proxy_with_four_threads(upstream: u16) -> impl Fn(u16) -> sigkit_proxy::ProxyConfig {
    move |port| {
        let mut c = proxy_config(port, upstream);
        // One shard and several threads: consecutive messages of one
        // terminal could be handled on different threads.
        c.threads = 4;
        c.shards = 1;
        c
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_of_responses_reaches_a_tcp_terminal_in_the_order_compressed() {
    let (upstream, task) = bursting_upstream().await;
    let proxy = start_proxy(proxy_with_four_threads(upstream)).await;
    let addr = proxy.terminal_addrs.iter().find(|(t, _)| *t == sigkit_proxy::SipTransport::Tcp).unwrap().1;
    let mut t = Terminal::new("alice", addr, true, true).await;
    let mut received = 0;
    for round in 0..5 {
        assert_eq!(t.options("sip:service@127.0.0.1").await, Ok(200), "round {round}");
        // The terminal panics on any message it cannot decompress.
        received += 1 + t.count_for(Duration::from_millis(400), |m| m.status_code() == Some(200)).await;
        t.clear_inbox();
    }
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    proxy.stop().await;
    task.abort();
    assert_eq!(received, 5 * BURST, "every response arrived and decompressed");
    assert_eq!(t.nacks_sent, 0);
    assert_eq!(metric_sum(&metrics, "sigkit_proxy_nacks_received_total"), 0.0, "{metrics}");
}

/// An upstream that answers nothing and reports the CSeq number of every
/// request, in the order the requests arrive.
async fn recording_upstream() -> (u16, mpsc::UnboundedReceiver<u32>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (port, task) = scripted_upstream_on_any_port(move |msg| {
        if let Ok(cseq) = msg.cseq() {
            let _ = tx.send(cseq.number);
        }
        Vec::new()
    })
    .await;
    (port, rx, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_terminals_burst_of_requests_reaches_the_upstream_in_the_order_sent() {
    const REQUESTS: u32 = 60;
    let (upstream, mut arrived, task) = recording_upstream().await;
    let proxy = start_proxy(proxy_with_four_threads(upstream)).await;
    let addr = proxy.terminal_addrs.iter().find(|(t, _)| *t == sigkit_proxy::SipTransport::Udp).unwrap().1;
    let mut t = Terminal::new("alice", addr, false, true).await;
    let uri = "sip:service@127.0.0.1";
    for cseq in 1..=REQUESTS {
        let request = t.request("MESSAGE", uri, &format!("<{uri}>"), ("burst@127.0.0.1", "b1"), cseq, "");
        t.send(&request).await;
    }
    let mut order = Vec::new();
    while order.len() < REQUESTS as usize {
        match tokio::time::timeout(Duration::from_secs(3), arrived.recv()).await {
            Ok(Some(seq)) => order.push(seq),
            _ => break,
        }
    }
    proxy.stop().await;
    task.abort();
    assert_eq!(order, (1..=REQUESTS).collect::<Vec<_>>(), "CSeq numbers in the order they reached the upstream");
}
