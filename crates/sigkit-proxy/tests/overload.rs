//! Overload control toward the upstream, over real UDP on 127.0.0.1: a
//! plain-SIP terminal, `sigkit proxy`, and an upstream played by the test
//! (silent, or asking for RFC 7339 load reduction).

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use sigkit_proxy::overload::{Handler, OverloadConfig};
use sigkit_sip::Message;
use support::*;
use tokio::net::UdpSocket;

fn options(n: u32, port: u16, to_tag: Option<&str>) -> Vec<u8> {
    let to_tag = to_tag.map(|t| format!(";tag={t}")).unwrap_or_default();
    format!(
        "OPTIONS sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bKov{n};rport\r\n\
         Max-Forwards: 70\r\nFrom: <sip:alice@127.0.0.1>;tag=a{n}\r\nTo: <sip:service@127.0.0.1>{to_tag}\r\n\
         Call-ID: ov-{n}@127.0.0.1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
    )
    .into_bytes()
}

/// Every datagram `socket` receives until it is quiet for `quiet`.
async fn drain(socket: &UdpSocket, quiet: Duration) -> Vec<(Vec<u8>, SocketAddr)> {
    let mut buf = vec![0u8; 65536];
    let mut got = Vec::new();
    while let Ok(Ok((n, from))) = tokio::time::timeout(quiet, socket.recv_from(&mut buf)).await {
        got.push((buf[..n].to_vec(), from));
    }
    got
}

fn status(bytes: &[u8]) -> Option<u16> {
    Message::parse(bytes).ok()?.status_code()
}

async fn proxy_with(upstream: u16, overload: OverloadConfig) -> sigkit_proxy::runtime::Running {
    start_proxy(|port| {
        let mut c = proxy_config(port, upstream);
        c.threads = 1;
        c.overload = overload.clone();
        c
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pending_cap_answers_503_beyond_it_and_lets_in_dialog_requests_through() {
    let upstream = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let overload = OverloadConfig { handler: Handler::PendingCap, max_pending: 3, ..OverloadConfig::default() };
    let proxy = proxy_with(upstream.local_addr().unwrap().port(), overload).await;
    let terminal = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = terminal.local_addr().unwrap().port();
    let proxy_addr = proxy.terminal_addrs[0].1;
    for n in 0..5 {
        terminal.send_to(&options(n, port, None), proxy_addr).await.unwrap();
    }
    terminal.send_to(&options(9, port, Some("x9")), proxy_addr).await.unwrap();
    let at_upstream = drain(&upstream, Duration::from_millis(800)).await;
    let at_terminal = drain(&terminal, Duration::from_millis(300)).await;
    assert_eq!(at_upstream.len(), 4, "three new requests and the in-dialog one reach the silent upstream");
    let rejected: Vec<&Vec<u8>> = at_terminal.iter().map(|(b, _)| b).filter(|b| status(b) == Some(503)).collect();
    assert_eq!(rejected.len(), 2, "two new requests over the cap are answered 503");
    let reply = Message::parse(rejected[0]).unwrap();
    assert!(reply.headers_named("Retry-After").next().is_some());
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    assert_eq!(metric(&metrics, "sigkit_proxy_overload_rejected_total"), Some(2.0), "{metrics}");
    assert_eq!(metric(&metrics, "sigkit_proxy_overload_pending"), Some(4.0), "{metrics}");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_asking_rfc_7339_loss_of_100_percent_gets_no_new_requests() {
    let upstream = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let overload = OverloadConfig { handler: Handler::OcLoss, ..OverloadConfig::default() };
    let proxy = proxy_with(upstream.local_addr().unwrap().port(), overload).await;
    let terminal = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = terminal.local_addr().unwrap().port();
    let proxy_addr = proxy.terminal_addrs[0].1;

    terminal.send_to(&options(0, port, None), proxy_addr).await.unwrap();
    let mut buf = vec![0u8; 65536];
    let (n, from) = tokio::time::timeout(Duration::from_secs(5), upstream.recv_from(&mut buf)).await.unwrap().unwrap();
    let request = buf[..n].to_vec();
    let msg = Message::parse(&request).unwrap();
    let top = msg.top_via().unwrap();
    assert_eq!(top.param("oc"), Some(None), "the proxy's Via offers overload control (RFC 7339 §5.1)");
    // The upstream answers, asking for every new request to be shed.
    let answer = sigkit_sip::proxy::build_response(&msg, 200, "OK", Some("up"), &[]).unwrap();
    let text = String::from_utf8(answer).unwrap();
    // RFC 7339 §5.3: the server gives the client's `oc` parameter a value.
    let via_line = format!("Via: {}", top.text);
    let valued = via_line.replacen(";oc", ";oc=100;oc-validity=60000;oc-seq=1.5;oc-algo=\"loss\"", 1);
    let marked = text.replacen(&via_line, &valued, 1);
    assert_ne!(marked, text);
    upstream.send_to(marked.as_bytes(), from).await.unwrap();
    let first = drain(&terminal, Duration::from_millis(500)).await;
    assert!(first.iter().any(|(b, _)| status(b) == Some(200)), "the answer reaches the terminal");

    for n in 1..6 {
        terminal.send_to(&options(n, port, None), proxy_addr).await.unwrap();
    }
    let at_terminal = drain(&terminal, Duration::from_millis(500)).await;
    let at_upstream = drain(&upstream, Duration::from_millis(200)).await;
    assert_eq!(at_terminal.iter().filter(|(b, _)| status(b) == Some(503)).count(), 5);
    assert!(at_upstream.is_empty(), "nothing new reaches the upstream");
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    assert_eq!(metric(&metrics, "sigkit_proxy_overload_oc_reduction_percent"), Some(100.0), "{metrics}");
    proxy.stop().await;
}
