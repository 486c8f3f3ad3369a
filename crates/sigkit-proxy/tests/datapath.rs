//! The runtime's own path, over real sockets on 127.0.0.1 with an
//! upstream played by the test:
//! - datagrams read and written in batches keep each source's order both
//!   ways, with several sources in one batch;
//! - each upstream message is parsed once, by the receiver that finds its
//!   shard, and that parse is what the shard handles;
//! - stateful mode's retransmissions (RFC 3261 §17.1.2.2, Timer E) go at
//!   their time with the runtime asleep in between, woken only by the
//!   core's next deadline ([`sigkit_proxy::Proxy::poll_timeout`]).

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use support::*;

/// Sources sending at once, and requests each sends back to back: enough
/// that a batch read holds datagrams of several sources.
const SOURCES: usize = 8;
const REQUESTS: u32 = 40;

/// A plain-SIP OPTIONS of `call_id` with CSeq `cseq`, from `port`.
fn options(call_id: &str, cseq: u32, port: u16) -> Vec<u8> {
    format!(
        "OPTIONS sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bK{call_id}.{cseq};rport\r\n\
         Max-Forwards: 70\r\nFrom: <sip:{call_id}@127.0.0.1>;tag=a\r\nTo: <sip:service@127.0.0.1>\r\n\
         Call-ID: {call_id}\r\nCSeq: {cseq} OPTIONS\r\nContent-Length: 0\r\n\r\n"
    )
    .into_bytes()
}

/// The Call-ID and CSeq number of a SIP message.
fn ids(bytes: &[u8]) -> Option<(String, u32)> {
    let msg = sigkit_sip::Message::parse(bytes).ok()?;
    Some((msg.call_id().ok()?.to_string(), msg.cseq().ok()?.number))
}

/// An upstream answering every request 200 and reporting its Call-ID and
/// CSeq number in the order the requests arrive.
async fn answering_upstream() -> (u16, mpsc::UnboundedReceiver<(String, u32)>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (port, task) = scripted_upstream_on_any_port(move |msg| {
        if let (Ok(call_id), Ok(cseq)) = (msg.call_id(), msg.cseq()) {
            let _ = tx.send((call_id.to_string(), cseq.number));
        }
        vec![sigkit_sip::proxy::build_response(msg, 200, "OK", Some("up"), &[]).unwrap()]
    })
    .await;
    (port, rx, task)
}

/// Receives on `socket` until `count` messages came or none comes for
/// 3 s; their CSeq numbers in arrival order.
async fn cseqs_received(socket: &UdpSocket, count: usize) -> Vec<u32> {
    let mut buf = vec![0u8; 65536];
    let mut got = Vec::new();
    while got.len() < count {
        match tokio::time::timeout(Duration::from_secs(3), socket.recv(&mut buf)).await {
            Ok(Ok(n)) => got.extend(ids(&buf[..n]).map(|(_, c)| c)),
            _ => break,
        }
    }
    got
}

/// Several terminals each send a burst of requests at once, which the
/// proxy reads in batches mixing their datagrams: every terminal's
/// requests reach the upstream in the order sent, and its answers come
/// back in that order. Each upstream answer was parsed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bursts_from_several_sources_keep_each_sources_order_and_upstream_messages_are_parsed_once() {
    let (upstream, mut arrived, task) = answering_upstream().await;
    let proxy = start_proxy(|port| {
        let mut c = proxy_config(port, upstream);
        c.threads = 4;
        c.shards = 4;
        c.udp_receive_buffer = 4 << 20;
        c
    })
    .await;
    let addr = proxy.terminal_addrs.iter().find(|(t, _)| *t == sigkit_proxy::SipTransport::Udp).unwrap().1;
    let mut sockets = Vec::new();
    for _ in 0..SOURCES {
        let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        s.connect(addr).await.unwrap();
        sockets.push(s);
    }
    // Interleaved: source 0's request 1, source 1's request 1, ...; in
    // bursts of 80 datagrams, so that a loaded machine's buffers hold them.
    for cseq in 1..=REQUESTS {
        for (i, s) in sockets.iter().enumerate() {
            let port = s.local_addr().unwrap().port();
            s.send(&options(&format!("src{i}"), cseq, port)).await.unwrap();
        }
        if cseq % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let mut answers = Vec::new();
    for s in &sockets {
        answers.push(cseqs_received(s, REQUESTS as usize).await);
    }
    let mut upstream_order = vec![Vec::new(); SOURCES];
    while let Ok(Some((call_id, cseq))) = tokio::time::timeout(Duration::from_millis(300), arrived.recv()).await {
        let i: usize = call_id.trim_start_matches("src").parse().unwrap();
        upstream_order[i].push(cseq);
    }
    let upstream_in: u64 = proxy.inspect(|p| p.metrics().messages_in[1]).iter().sum();
    let parses = proxy.upstream_parses();
    proxy.stop().await;
    task.abort();
    // A burst may overflow a socket's buffer on a busy machine: what
    // arrives must be in order, and enough of it must arrive for the
    // order to say something.
    let in_order = |seq: &[u32]| seq.windows(2).all(|w| w[0] < w[1]);
    for i in 0..SOURCES {
        assert!(in_order(&upstream_order[i]), "source {i}'s requests reached the upstream as {:?}", upstream_order[i]);
        assert!(in_order(&answers[i]), "source {i}'s answers came back as {:?}", answers[i]);
        assert!(answers[i].len() * 4 >= REQUESTS as usize, "source {i} got {} answers of {REQUESTS}", answers[i].len());
    }
    assert!(upstream_in * 4 >= (SOURCES as u64) * u64::from(REQUESTS), "{upstream_in} answers came through the proxy");
    assert_eq!(parses, upstream_in, "one SIP parse per upstream message");
}

/// Stateful mode with an upstream that never answers: the proxy
/// retransmits the request at T1, then 2·T1 after that (RFC 3261
/// §17.1.2.2, Timer E, T1 = 500 ms), each neither early nor much late,
/// and in between its timer task sleeps instead of ticking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateful_retransmissions_go_at_their_time_without_a_periodic_tick() {
    let silent = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let upstream = silent.local_addr().unwrap().port();
    let proxy = start_proxy(|port| {
        let mut c = proxy_config(port, upstream);
        c.stateful = true;
        c
    })
    .await;
    let addr: SocketAddr = proxy.terminal_addrs.iter().find(|(t, _)| *t == sigkit_proxy::SipTransport::Udp).unwrap().1;
    let terminal = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = terminal.local_addr().unwrap().port();
    let wakeups_before = proxy.timer_wakeups();
    let sent = Instant::now();
    terminal.send_to(&options("timed", 1, port), addr).await.unwrap();
    let mut buf = vec![0u8; 65536];
    let mut arrivals = Vec::new();
    while arrivals.len() < 3 {
        let r = tokio::time::timeout(Duration::from_secs(3), silent.recv_from(&mut buf)).await;
        let Ok(Ok((n, _))) = r else { break };
        if ids(&buf[..n]).is_some_and(|(c, _)| c == "timed") {
            arrivals.push(Instant::now());
        }
    }
    let wakeups = proxy.timer_wakeups() - wakeups_before;
    let retransmissions: u64 = proxy.inspect(|p| p.metrics().upstream_retransmissions).iter().sum();
    proxy.stop().await;
    assert_eq!(arrivals.len(), 3, "the request and two retransmissions reached the upstream");
    assert_eq!(retransmissions, 2);
    // Timer E runs from when the proxy forwarded the request, after the
    // terminal sent it: a retransmission seen before T1 (then 3·T1) from
    // the sending is early. Late by at most what a busy machine's
    // scheduling may add.
    let t1 = Duration::from_millis(500);
    let late = Duration::from_millis(400);
    for (k, want) in [t1, 3 * t1].into_iter().enumerate() {
        let after = arrivals[k + 1] - sent;
        assert!(after >= want, "retransmission {} early: {after:?} after the request, not {want:?}", k + 1);
        assert!(after <= want + late, "retransmission {} late: {after:?} after the request, not {want:?}", k + 1);
    }
    // Over 1.5 s a 10 ms tick wakes 150 times; sleeping until each
    // deadline wakes for the two retransmissions and the few other
    // deadlines the core holds (flows, compartments, overload control).
    assert!(wakeups <= 30, "the timer woke {wakeups} times in 1.5 s");
}
