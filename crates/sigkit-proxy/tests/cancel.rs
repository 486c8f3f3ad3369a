//! CANCEL through the transaction-stateful mode (RFC 3261 §16.10), over
//! real UDP on 127.0.0.1: a plain-SIP terminal and an upstream both played
//! by the test, step by step, so that each test decides when the upstream
//! sends its provisional response and when it answers the CANCEL.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sigkit_sip::Message;
use support::*;
use tokio::net::UdpSocket;

/// The next datagram within `wait` that `want` accepts, skipping others;
/// with where it came from.
async fn next(
    socket: &UdpSocket,
    wait: Duration,
    want: impl Fn(&Message<'_>) -> bool,
) -> Option<(Vec<u8>, SocketAddr)> {
    let deadline = Instant::now() + wait;
    let mut buf = vec![0u8; 65536];
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        let Ok(Ok((n, from))) = tokio::time::timeout(left, socket.recv_from(&mut buf)).await else { return None };
        if Message::parse(&buf[..n]).is_ok_and(|m| want(&m)) {
            return Some((buf[..n].to_vec(), from));
        }
    }
}

fn is_request(method: &'static str) -> impl Fn(&Message<'_>) -> bool {
    move |m| m.method() == Some(method)
}

fn is_response(code: u16, cseq_method: &'static str) -> impl Fn(&Message<'_>) -> bool {
    move |m| m.status_code() == Some(code) && m.cseq().is_ok_and(|c| c.method == cseq_method)
}

/// Every datagram until `socket` is quiet for `quiet`, parsed.
async fn drain(socket: &UdpSocket, quiet: Duration) -> Vec<(Option<u16>, String)> {
    let mut buf = vec![0u8; 65536];
    let mut got = Vec::new();
    while let Ok(Ok((n, _))) = tokio::time::timeout(quiet, socket.recv_from(&mut buf)).await {
        if let Ok(m) = Message::parse(&buf[..n]) {
            let what = m.method().map(str::to_string).or_else(|| m.cseq().ok().map(|c| c.method.to_string()));
            got.push((m.status_code(), what.unwrap_or_default()));
        }
    }
    got
}

/// The upstream's answer to `request` (as the proxy sent it), with a To
/// tag of the upstream's.
fn answer(request: &[u8], code: u16, reason: &str) -> Vec<u8> {
    sigkit_sip::proxy::build_response(&Message::parse(request).unwrap(), code, reason, Some("up"), &[]).unwrap()
}

fn branch(bytes: &[u8]) -> String {
    Message::parse(bytes).unwrap().top_via().unwrap().branch().unwrap().to_string()
}

struct Bed {
    proxy: sigkit_proxy::runtime::Running,
    terminal: UdpSocket,
    port: u16,
    to: SocketAddr,
    upstream: UdpSocket,
}

async fn bed() -> Bed {
    let upstream = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let up_port = upstream.local_addr().unwrap().port();
    let proxy = start_proxy(|port| {
        let mut c = proxy_config(port, up_port);
        c.threads = 1;
        c.stateful = true;
        c
    })
    .await;
    let terminal = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = terminal.local_addr().unwrap().port();
    let to = proxy.terminal_addrs[0].1;
    Bed { proxy, terminal, port, to, upstream }
}

const WAIT: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_after_ringing_is_answered_by_the_proxy_and_cancels_the_upstream_invite() {
    let b = bed().await;
    b.terminal.send_to(&request("INVITE", "c-ring", b.port, "i1"), b.to).await.unwrap();
    let (invite, proxy_at) =
        next(&b.upstream, WAIT, is_request("INVITE")).await.expect("the INVITE reaches the upstream");
    b.upstream.send_to(&answer(&invite, 180, "Ringing"), proxy_at).await.unwrap();
    next(&b.terminal, WAIT, is_response(180, "INVITE")).await.expect("the terminal hears the 180");

    b.terminal.send_to(&request("CANCEL", "c-ring", b.port, "i1"), b.to).await.unwrap();
    // §16.10: the proxy answers the CANCEL itself, before the upstream
    // has said anything about it.
    next(&b.terminal, WAIT, is_response(200, "CANCEL")).await.expect("the proxy's 200 to the CANCEL");
    // ... and cancels its own client transaction (§9.1): the INVITE's
    // Request-URI, branch and CSeq number, method CANCEL.
    let (cancel, _) = next(&b.upstream, WAIT, is_request("CANCEL")).await.expect("a CANCEL reaches the upstream");
    let (c, i) = (Message::parse(&cancel).unwrap(), Message::parse(&invite).unwrap());
    assert_eq!(branch(&cancel), branch(&invite));
    assert_eq!(c.request_uri().unwrap().text, i.request_uri().unwrap().text);
    assert_eq!(c.cseq().unwrap().number, i.cseq().unwrap().number);
    assert_eq!(c.call_id(), i.call_id());
    // Unanswered, it is sent again on Timer E (T1 = 500 ms, §17.1.2.2).
    let sent = Instant::now();
    let (again, _) = next(&b.upstream, WAIT, is_request("CANCEL")).await.expect("the CANCEL is retransmitted");
    let gap = sent.elapsed();
    assert!(gap > Duration::from_millis(300) && gap < Duration::from_millis(900), "Timer E fired after {gap:?}");
    assert_eq!(again, cancel);

    // The upstream answers the CANCEL and ends the INVITE with 487.
    b.upstream.send_to(&answer(&cancel, 200, "OK"), proxy_at).await.unwrap();
    b.upstream.send_to(&answer(&invite, 487, "Request Terminated"), proxy_at).await.unwrap();
    next(&b.terminal, WAIT, is_response(487, "INVITE")).await.expect("the 487 reaches the terminal");
    // The proxy acknowledges the 487 hop by hop (§17.1.1.3), with the
    // INVITE's branch.
    let (ack, _) = next(&b.upstream, WAIT, is_request("ACK")).await.expect("the proxy ACKs the 487");
    assert_eq!(branch(&ack), branch(&invite));
    b.terminal.send_to(&request("ACK", "c-ring", b.port, "i1"), b.to).await.unwrap();
    // The upstream's 200 to the CANCEL ended at the proxy: the terminal
    // got exactly one, the proxy's; the CANCEL went no more than twice.
    let rest = drain(&b.terminal, Duration::from_millis(800)).await;
    assert!(!rest.iter().any(|(code, m)| *code == Some(200) && m == "CANCEL"), "{rest:?}");
    let late = drain(&b.upstream, Duration::from_millis(200)).await;
    assert!(!late.iter().any(|(code, m)| code.is_none() && m == "CANCEL"), "{late:?}");

    let metrics = http_get(b.proxy.metrics_addr.unwrap(), "/metrics").await;
    assert_eq!(metric(&metrics, "sigkit_proxy_cancelled_invites_total"), Some(1.0), "{metrics}");
    b.proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_before_any_provisional_response_waits_for_one() {
    let b = bed().await;
    b.terminal.send_to(&request("INVITE", "c-early", b.port, "e1"), b.to).await.unwrap();
    let (invite, proxy_at) =
        next(&b.upstream, WAIT, is_request("INVITE")).await.expect("the INVITE reaches the upstream");
    next(&b.terminal, WAIT, is_response(100, "INVITE")).await.expect("the proxy's 100 Trying");
    b.terminal.send_to(&request("CANCEL", "c-early", b.port, "e1"), b.to).await.unwrap();
    next(&b.terminal, WAIT, is_response(200, "CANCEL")).await.expect("the proxy's 200 to the CANCEL");
    // §9.1: no CANCEL upstream while the INVITE has had no provisional
    // response (the INVITE's own retransmission may come meanwhile).
    let quiet = drain(&b.upstream, Duration::from_millis(300)).await;
    assert!(!quiet.iter().any(|(code, m)| code.is_none() && m == "CANCEL"), "{quiet:?}");
    // A retransmitted CANCEL from the terminal gets the 200 again and
    // starts nothing.
    b.terminal.send_to(&request("CANCEL", "c-early", b.port, "e1"), b.to).await.unwrap();
    next(&b.terminal, WAIT, is_response(200, "CANCEL")).await.expect("the 200 again");
    // The first provisional response releases it.
    b.upstream.send_to(&answer(&invite, 100, "Trying"), proxy_at).await.unwrap();
    let (cancel, _) = next(&b.upstream, WAIT, is_request("CANCEL")).await.expect("the CANCEL after the 100");
    assert_eq!(branch(&cancel), branch(&invite));
    b.upstream.send_to(&answer(&cancel, 200, "OK"), proxy_at).await.unwrap();
    b.upstream.send_to(&answer(&invite, 487, "Request Terminated"), proxy_at).await.unwrap();
    next(&b.terminal, WAIT, is_response(487, "INVITE")).await.expect("the 487 reaches the terminal");
    let metrics = http_get(b.proxy.metrics_addr.unwrap(), "/metrics").await;
    assert_eq!(metric(&metrics, "sigkit_proxy_cancelled_invites_total"), Some(1.0), "{metrics}");
    b.proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_that_matches_no_transaction_is_forwarded_statelessly() {
    let b = bed().await;
    // §16.10: no response context: the proxy forwards the CANCEL as it is
    // and lets the upstream answer (481 here).
    b.terminal.send_to(&request("CANCEL", "c-none", b.port, "n1"), b.to).await.unwrap();
    let (cancel, proxy_at) = next(&b.upstream, WAIT, is_request("CANCEL")).await.expect("the CANCEL is forwarded");
    b.upstream.send_to(&answer(&cancel, 481, "Call/Transaction Does Not Exist"), proxy_at).await.unwrap();
    next(&b.terminal, WAIT, is_response(481, "CANCEL")).await.expect("the upstream's 481 reaches the terminal");
    let metrics = http_get(b.proxy.metrics_addr.unwrap(), "/metrics").await;
    assert_eq!(metric(&metrics, "sigkit_proxy_cancelled_invites_total"), Some(0.0), "{metrics}");
    b.proxy.stop().await;
}
