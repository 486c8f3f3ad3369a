//! A TCP terminal that reads nothing is disconnected, and the proxy goes
//! on serving the others. Its responses queue on its connection; when the
//! queue is full the proxy closes the connection instead of waiting on it
//! (waiting would stall every terminal whose messages come in behind), as
//! SIP servers bound a connection's write queue.
//!
//! An upstream played by the test floods the stuck terminal with large
//! responses to its one request, while another terminal asks for an
//! answer of its own.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sigkit_sip::Message;
use support::ua::Terminal;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, UdpSocket};

/// Responses of about 1.3 kB sent to the stuck terminal: together far more
/// than the kernel's socket buffers hold.
const FLOOD: usize = 20_000;

/// Answers a request whose Call-ID names a flood with `FLOOD` responses,
/// 100 every 5 ms (so that the proxy's socket takes them), each with
/// 1 kB of padding of its own; any other request but ACK with one 200.
async fn flooding_upstream() -> u16 {
    let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let port = socket.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let Ok(msg) = Message::parse(&buf[..n]) else { continue };
            if !msg.is_request() || msg.method() == Some("ACK") {
                continue;
            }
            if !msg.call_id().is_ok_and(|c| c.starts_with("flood")) {
                let ok = sigkit_sip::proxy::build_response(&msg, 200, "OK", Some("up"), &[]).unwrap();
                let _ = socket.send_to(&ok, from).await;
                continue;
            }
            let mut seed = 0x2545_F491_4F6C_DD1Du64;
            let responses: Vec<Vec<u8>> = (0..FLOOD)
                .map(|i| {
                    let padding: String = (0..64)
                        .map(|_| {
                            seed ^= seed << 13;
                            seed ^= seed >> 7;
                            seed ^= seed << 17;
                            format!("{seed:016x}")
                        })
                        .collect();
                    let tag = format!("f{i}");
                    sigkit_sip::proxy::build_response(&msg, 200, "OK", Some(&tag), &[("X-Padding", &padding)]).unwrap()
                })
                .collect();
            let socket = socket.clone();
            tokio::spawn(async move {
                for chunk in responses.chunks(100) {
                    for r in chunk {
                        let _ = socket.send_to(r, from).await;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_that_reads_nothing_is_disconnected_and_the_others_go_on() {
    let upstream = flooding_upstream().await;
    let proxy = start_proxy(|port| proxy_config(port, upstream)).await;
    let tcp = proxy.terminal_addrs.iter().find(|(t, _)| *t == sigkit_proxy::SipTransport::Tcp).unwrap().1;

    // The stuck terminal: plain SIP over TCP, a small receive buffer, one
    // OPTIONS, and never a read until the end.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(8192).unwrap();
    let mut stuck = socket.connect(tcp).await.unwrap();
    let local = stuck.local_addr().unwrap();
    let options = format!(
        "OPTIONS sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP {local};branch=z9hG4bKflood1\r\n\
         Max-Forwards: 70\r\nFrom: <sip:stuck@127.0.0.1>;tag=s1\r\nTo: <sip:service@127.0.0.1>\r\n\
         Call-ID: flood-1@127.0.0.1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
    );
    stuck.write_all(options.as_bytes()).await.unwrap();

    // Meanwhile another terminal is answered, round after round.
    let mut alice = Terminal::new("alice", tcp, true, true).await;
    let until = Instant::now() + Duration::from_secs(20);
    let mut closed = 0.0;
    let mut rounds = 0;
    while closed < 1.0 && Instant::now() < until {
        let answer = tokio::time::timeout(Duration::from_secs(2), alice.options("sip:service@127.0.0.1")).await;
        assert_eq!(answer, Ok(Ok(200)), "round {rounds}: the other terminal is answered within 2 s");
        rounds += 1;
        let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
        closed = metric(&metrics, "sigkit_proxy_stuck_connections_closed_total").unwrap_or(0.0);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(closed, 1.0, "the stuck terminal's connection was closed");

    // What the stuck terminal reads now ends: the proxy closed it.
    let mut buf = vec![0u8; 1 << 16];
    let mut read = 0usize;
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match stuck.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => read += n,
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the stuck terminal's connection ended ({read} bytes read)");
    assert!(read > 0, "the responses queued before the close were delivered");
    let answer = tokio::time::timeout(Duration::from_secs(2), alice.options("sip:service@127.0.0.1")).await;
    assert_eq!(answer, Ok(Ok(200)), "the other terminal is still answered");
    proxy.stop().await;
}
