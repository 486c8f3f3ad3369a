//! The caps on terminals' TCP connections (`[tcp]`, docs/deploy.md "TCP
//! limits"), each against a proxy with small ones: a silent connection is
//! closed after the idle timeout while one kept alive with CRLF pings (RFC
//! 5626 §3.5.1) stays; a connection sending an endless partial message is
//! closed at its buffer cap; and with the cap filled by idle connections,
//! a new terminal still connects and is answered.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sigkit_proxy::{ProxyConfig, SipTransport};
use sigkit_sip::Message;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream, UdpSocket};

/// An upstream answering every request but ACK with 200; a REGISTER's 200
/// lists its Contact for `REGISTERED_S` (RFC 3261 §10.3 step 8).
async fn answering_upstream() -> u16 {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = socket.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 70_000];
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let Ok(msg) = Message::parse(&buf[..n]) else { continue };
            if msg.is_request() && msg.method() != Some("ACK") {
                let contact = match msg.contacts() {
                    Ok(sigkit_sip::Contacts::List(list)) if msg.method() == Some("REGISTER") => {
                        list.first().map(|c| format!("<{}>;expires={REGISTERED_S}", c.uri))
                    }
                    _ => None,
                };
                let extra: Vec<(&str, &str)> = contact.iter().map(|c| ("Contact", c.as_str())).collect();
                let ok = sigkit_sip::proxy::build_response(&msg, 200, "OK", Some("up"), &extra).unwrap();
                let _ = socket.send_to(&ok, from).await;
            }
        }
    });
    port
}

/// The proxy in front of an answering upstream with `tcp` changed.
async fn proxy_with(
    tcp: impl Fn(&mut sigkit_proxy::config::TcpConfig),
) -> (sigkit_proxy::runtime::Running, SocketAddr) {
    let upstream = answering_upstream().await;
    let proxy = start_proxy(|port| {
        let mut c: ProxyConfig = proxy_config(port, upstream);
        tcp(&mut c.tcp);
        c
    })
    .await;
    let addr = proxy.terminal_addrs.iter().find(|(t, _)| *t == SipTransport::Tcp).unwrap().1;
    (proxy, addr)
}

/// A connection to `proxy` from 127.0.0.`host`.
async fn connect_from(host: u8, proxy: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from(([127, 0, 0, host], 0))).unwrap();
    socket.connect(proxy).await.unwrap()
}

/// Sends an OPTIONS over `stream` and returns the status of the response
/// (skipping CRLF pongs), or `None` when none came within 3 s.
async fn options(stream: &mut TcpStream, call_id: &str) -> Option<u16> {
    let local = stream.local_addr().unwrap();
    let req = format!(
        "OPTIONS sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP {local};branch=z9hG4bK{call_id}\r\n\
         Max-Forwards: 70\r\nFrom: <sip:t@127.0.0.1>;tag=t1\r\nTo: <sip:service@127.0.0.1>\r\n\
         Call-ID: {call_id}\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).await.ok()?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let end = Instant::now() + Duration::from_secs(3);
    loop {
        let start = got.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(got.len());
        if let Ok(Some(len)) = Message::parse_stream_frame(&got[start..]) {
            return Message::parse(&got[start..start + len]).ok()?.status_code();
        }
        let left = end.checked_duration_since(Instant::now())?;
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return None,
        }
    }
}

/// Whether the proxy closes `stream` within `within` (what it sends
/// before is read and dropped).
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 4096];
    tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

async fn metrics(proxy: &sigkit_proxy::runtime::Running) -> String {
    http_get(proxy.metrics_addr.unwrap(), "/metrics").await
}

/// Waits until `series` reads `want` (10 s at most) and returns the text.
async fn until_metric(proxy: &sigkit_proxy::runtime::Running, series: &str, want: f64) -> String {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let text = metrics(proxy).await;
        if metric(&text, series) == Some(want) || Instant::now() > end {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A connection that sends nothing is closed after `idle_timeout_s`; one
/// whose terminal sends a CRLF ping every 300 ms is answered with CRLF
/// pongs, outlives the timeout, and still carries requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_is_closed_at_the_idle_timeout_and_a_kept_alive_one_is_not() {
    let (proxy, addr) = proxy_with(|t| t.idle_timeout_s = 1).await;
    let started = Instant::now();
    let mut silent = connect_from(1, addr).await;
    let mut kept = connect_from(1, addr).await;
    let pinger = tokio::spawn(async move {
        let mut pongs = Vec::new();
        let mut buf = [0u8; 64];
        for _ in 0..8 {
            kept.write_all(b"\r\n\r\n").await.unwrap();
            if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(300), kept.read(&mut buf)).await {
                assert!(n > 0, "the kept-alive connection was closed");
                pongs.extend_from_slice(&buf[..n]);
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        while pongs.len() < 16 {
            match tokio::time::timeout(Duration::from_secs(1), kept.read(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => pongs.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        (kept, pongs)
    });
    assert!(closed_within(&mut silent, Duration::from_secs(4)).await, "the silent connection was not closed");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900), "closed after {took:?}, before the 1 s timeout");
    let (mut kept, pongs) = pinger.await.unwrap();
    assert!(started.elapsed() > Duration::from_secs(2), "the pings outlived the timeout");
    assert_eq!(pongs, b"\r\n".repeat(8), "each double-CRLF ping is answered with one CRLF (RFC 5626 §3.5.1)");
    assert_eq!(options(&mut kept, "kept-1").await, Some(200), "the kept-alive connection still carries requests");
    let text = metrics(&proxy).await;
    assert_eq!(metric(&text, r#"sigkit_proxy_tcp_connections_closed_total{reason="idle"}"#), Some(1.0), "{text}");
    assert_eq!(metric(&text, "sigkit_proxy_tcp_connections"), Some(1.0), "{text}");
    proxy.stop().await;
}

/// How long the upstream's registrations last.
const REGISTERED_S: u64 = 4;

/// A connection that carried a registration is how the registrar reaches
/// its terminal (RFC 5626 §5.3): idleness does not close it while the
/// registration lasts, and does once it has expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_connection_outlives_the_idle_timeout_until_its_registration_expires() {
    let (proxy, addr) = proxy_with(|t| t.idle_timeout_s = 1).await;
    let mut registered = connect_from(1, addr).await;
    let mut silent = connect_from(1, addr).await;
    let local = registered.local_addr().unwrap();
    let register = format!(
        "REGISTER sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP {local};branch=z9hG4bKreg1\r\n\
         Max-Forwards: 70\r\nFrom: <sip:alice@127.0.0.1>;tag=a1\r\nTo: <sip:alice@127.0.0.1>\r\n\
         Call-ID: reg-1\r\nCSeq: 1 REGISTER\r\nContact: <sip:alice@{local};transport=tcp>\r\n\
         Content-Length: 0\r\n\r\n"
    );
    let started = Instant::now();
    registered.write_all(register.as_bytes()).await.unwrap();
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(3), registered.read(&mut buf)).await.unwrap().unwrap();
    assert!(buf[..n].starts_with(b"SIP/2.0 200"), "{}", String::from_utf8_lossy(&buf[..n]));
    assert!(closed_within(&mut silent, Duration::from_secs(4)).await, "the unregistered connection was not closed");
    // Past two idle timeouts, silent all along, and still open.
    let closed = closed_within(&mut registered, Duration::from_millis(2200)).await;
    assert!(!closed, "closed while registered: {}", metrics(&proxy).await);
    assert!(started.elapsed() < Duration::from_secs(REGISTERED_S), "the check ran past the registration");
    // The registration expires; the next idle timeout closes it.
    assert!(
        closed_within(&mut registered, Duration::from_secs(REGISTERED_S + 2)).await,
        "still open after the registration expired"
    );
    let text = metrics(&proxy).await;
    assert_eq!(metric(&text, r#"sigkit_proxy_tcp_connections_closed_total{reason="idle"}"#), Some(2.0), "{text}");
    proxy.stop().await;
}

/// A partial message past `max_buffered_bytes` closes its connection:
/// plain SIP whose Content-Length promises a megabyte, and a SigComp
/// message whose delimiter never comes; a whole message under the cap
/// passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_buffering_past_its_cap_is_closed() {
    let (proxy, addr) = proxy_with(|t| t.max_buffered_bytes = 4096).await;
    let head = "MESSAGE sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:9;branch=z9hG4bKbig\r\n\
                Max-Forwards: 70\r\nFrom: <sip:t@127.0.0.1>;tag=b\r\nTo: <sip:service@127.0.0.1>\r\n\
                Call-ID: big\r\nCSeq: 1 MESSAGE\r\nContent-Length: 1000000\r\n\r\n";
    // SigComp: a header byte, then bytes with no 0xFF (no delimiter).
    let partials: [(&str, Vec<u8>, Vec<u8>); 2] =
        [("plain", head.as_bytes().to_vec(), vec![b'x'; 1024]), ("sigcomp", vec![0xF8], vec![0x41; 1024])];
    for (n, (kind, first, chunk)) in partials.into_iter().enumerate() {
        let mut s = connect_from(1, addr).await;
        s.write_all(&first).await.unwrap();
        let mut sent = first.len();
        // Well under the 64 KiB any message may have.
        while sent < 16 * 1024 {
            if s.write_all(&chunk).await.is_err() {
                break;
            }
            sent += chunk.len();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(closed_within(&mut s, Duration::from_secs(2)).await, "{kind}: not closed after {sent} bytes");
        let series = r#"sigkit_proxy_tcp_connections_closed_total{reason="buffer"}"#;
        let text = until_metric(&proxy, series, (n + 1) as f64).await;
        assert_eq!(metric(&text, series), Some((n + 1) as f64), "{kind}: {text}");
    }
    // A 3 kB request, whole, is under the cap.
    let mut s = connect_from(1, addr).await;
    let padding = "p".repeat(3000);
    let local = s.local_addr().unwrap();
    let req = format!(
        "MESSAGE sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP {local};branch=z9hG4bKok\r\nMax-Forwards: 70\r\n\
         From: <sip:t@127.0.0.1>;tag=b\r\nTo: <sip:service@127.0.0.1>\r\nCall-ID: ok\r\nCSeq: 1 MESSAGE\r\n\
         Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n{padding}",
        padding.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    assert_eq!(options(&mut s, "after-big").await, Some(200));
    let text = metrics(&proxy).await;
    assert_eq!(metric(&text, "sigkit_proxy_tcp_buffered_bytes"), Some(0.0), "{text}");
    proxy.stop().await;
}

/// Eight connections at most, four per source address: two attacker
/// addresses fill the proxy with connections that never send a byte (a
/// fifth from one is refused). A terminal that carried a request before
/// them keeps its connection, and a new terminal gets in: the oldest
/// silent connection is closed for it, and it is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_gets_in_when_idle_connections_fill_the_cap() {
    let (proxy, addr) = proxy_with(|t| {
        t.max_connections = 8;
        t.max_connections_per_source = 4;
    })
    .await;
    let mut registered = connect_from(1, addr).await;
    assert_eq!(options(&mut registered, "registered-1").await, Some(200));
    let mut attackers = Vec::new();
    for i in 0..7 {
        attackers.push(connect_from(2 + (i % 2) as u8, addr).await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = until_metric(&proxy, "sigkit_proxy_tcp_connections", 8.0).await;
    assert_eq!(metric(&text, "sigkit_proxy_tcp_connections"), Some(8.0), "{text}");
    // 127.0.0.2 has four: a fifth from it is refused.
    let mut refused = connect_from(2, addr).await;
    assert!(closed_within(&mut refused, Duration::from_secs(2)).await, "the fifth from one source was not refused");
    let text = metrics(&proxy).await;
    assert_eq!(metric(&text, r#"sigkit_proxy_tcp_connections_refused_total{reason="per_source"}"#), Some(1.0));

    let mut newcomer = connect_from(4, addr).await;
    assert_eq!(options(&mut newcomer, "newcomer-1").await, Some(200), "the new terminal is answered");
    // The first attacker's connection, the oldest that never carried a
    // message, made room; the registered terminal's, older still, stays.
    assert!(closed_within(&mut attackers[0], Duration::from_secs(2)).await, "the oldest silent connection stays");
    assert_eq!(options(&mut registered, "registered-2").await, Some(200), "the active terminal lost its connection");
    let text = until_metric(&proxy, "sigkit_proxy_tcp_connections", 8.0).await;
    assert_eq!(metric(&text, "sigkit_proxy_tcp_connections"), Some(8.0), "{text}");
    assert_eq!(metric(&text, r#"sigkit_proxy_tcp_connections_closed_total{reason="cap"}"#), Some(1.0), "{text}");
    assert_eq!(metric(&text, "sigkit_proxy_tcp_max_connections"), Some(8.0), "{text}");
    for (i, a) in attackers.iter_mut().enumerate().skip(1) {
        assert!(!closed_within(a, Duration::from_millis(20)).await, "attacker {i} was closed too");
    }
    proxy.stop().await;
}
