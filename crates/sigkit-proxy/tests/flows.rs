//! How long the proxy remembers a terminal, over real sockets on
//! 127.0.0.1: flow tokens are trusted only by the instance that wrote them
//! (a farm, docs/deploy.md); idle flows and compartments are forgotten and
//! flows are capped; a compartment ends with its registration (RFC 5049
//! §6.5), by removal or by expiry.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use sigkit_proxy::runtime::Running;
use sigkit_proxy::ProxyConfig;
use sigkit_sip::proxy::build_response;
use sigkit_sip::HeaderName;
use support::ua::Terminal;
use support::*;
use tokio::net::UdpSocket;

/// A stand-in for the SIP server: answers every request 200, a REGISTER
/// with its Contact bound for the Expires it asked.
fn answer_everything(socket: UdpSocket) -> tokio::task::JoinHandle<()> {
    scripted_upstream(socket, |msg| {
        let mut binding = String::new();
        if msg.method() == Some("REGISTER") {
            let contact = msg.header(HeaderName::Contact).map(|h| String::from_utf8_lossy(h.value).to_string());
            let expires = msg.expires().ok().flatten().unwrap_or(3600);
            if let (Some(c), true) = (contact, expires > 0) {
                binding = format!("{c};expires={expires}");
            }
        }
        let extra: Vec<(&str, &str)> = if binding.is_empty() { vec![] } else { vec![("Contact", &binding)] };
        vec![build_response(msg, 200, "OK", Some("srv"), &extra).unwrap()]
    })
}

fn sum(proxy: &Running, f: impl FnMut(&sigkit_proxy::Proxy) -> usize) -> usize {
    proxy.inspect(f).into_iter().sum()
}

fn compartments(proxy: &Running) -> usize {
    sum(proxy, |p| p.endpoint().compartment_ids().count())
}

/// The first datagram on `s` within `wait`, as text.
async fn recv_text(s: &UdpSocket, wait: Duration) -> Option<String> {
    let mut buf = vec![0u8; 65536];
    let (n, _) = tokio::time::timeout(wait, s.recv_from(&mut buf)).await.ok()?.ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).to_string())
}

fn header<'a>(msg: &'a str, name: &str) -> Option<&'a str> {
    msg.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(':')).map(str::trim))
}

/// Two instances of a farm write the same service address into Path;
/// each numbers its flows from 1. A terminating request carrying the
/// first instance's token that reaches the second must not go to the
/// second's terminal of the same number: the second routes it by its
/// Request-URI, or answers 430 Flow Failed (RFC 5626 §5.3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_token_of_another_instance_never_reaches_its_terminals() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let server_addr = server.local_addr().unwrap();
    let farm = |port: u16, upstream_local: u16, service: Option<(SocketAddr, SocketAddr)>| ProxyConfig {
        threads: 1,
        ..farm_config(port, server_addr.port(), upstream_local, service)
    };
    let a = start_proxy(|port| farm(port, free_port(), None)).await;
    let service = (a.terminal_addrs[0].1, a.upstream_local);
    let b = start_proxy(|port| farm(port, 0, Some(service))).await;

    // One terminal registers through each instance; the server keeps the
    // Path each instance wrote.
    let mut terminals = Vec::new();
    let mut paths = Vec::new();
    for (user, proxy) in [("t1", &a), ("t2", &b)] {
        let t = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let at = t.local_addr().unwrap();
        let register = format!(
            "REGISTER sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP {at};branch=z9hG4bK{user};rport\r\nMax-Forwards: 70\r\n\
             From: <sip:{user}@127.0.0.1>;tag=1\r\nTo: <sip:{user}@127.0.0.1>\r\nCall-ID: reg-{user}\r\n\
             CSeq: 1 REGISTER\r\nContact: <sip:{user}@{at}>\r\nExpires: 300\r\nContent-Length: 0\r\n\r\n"
        );
        t.send_to(register.as_bytes(), proxy.terminal_addrs[0].1).await.unwrap();
        let forwarded = recv_text(&server, Duration::from_secs(5)).await.expect("REGISTER forwarded");
        paths.push(header(&forwarded, "Path").expect("Path added").to_string());
        terminals.push((user, t, at));
    }
    let invite = |user: &str, contact: SocketAddr, route: &str, n: u32| {
        format!(
            "INVITE sip:{user}@{contact} SIP/2.0\r\nVia: SIP/2.0/UDP {server_addr};branch=z9hG4bKinv{n}\r\n\
             Route: {route}\r\nMax-Forwards: 70\r\nFrom: <sip:caller@127.0.0.1>;tag=9\r\n\
             To: <sip:{user}@127.0.0.1>\r\nCall-ID: inv-{n}\r\nCSeq: 1 INVITE\r\n\
             Contact: <sip:caller@{server_addr}>\r\nContent-Length: 0\r\n\r\n"
        )
    };
    let quiet = Duration::from_millis(500);
    let (t1, t2) = (&terminals[0], &terminals[1]);

    // t1's call with the first instance's token, at the second instance:
    // t2 gets nothing, the server gets 430.
    server.send_to(invite(t1.0, t1.2, &paths[0], 1).as_bytes(), b.upstream_local).await.unwrap();
    let answer = recv_text(&server, Duration::from_secs(5)).await.expect("an answer from the second instance");
    assert!(answer.starts_with("SIP/2.0 430 "), "{answer}");
    assert_eq!(recv_text(&t2.1, quiet).await, None, "another instance's token reached this one's terminal");
    assert_eq!(recv_text(&t1.1, quiet).await, None);

    // The same token with t2's contact as Request-URI: routed by it.
    server.send_to(invite(t2.0, t2.2, &paths[0], 2).as_bytes(), b.upstream_local).await.unwrap();
    let got = recv_text(&t2.1, Duration::from_secs(5)).await.expect("routed by the Request-URI");
    assert!(got.starts_with(&format!("INVITE sip:t2@{} ", t2.2)), "{got}");

    // At the instance that wrote it, the token finds its terminal.
    server.send_to(invite(t1.0, t1.2, &paths[0], 3).as_bytes(), a.upstream_local).await.unwrap();
    let got = recv_text(&t1.1, Duration::from_secs(5)).await.expect("t1 reached through its own instance");
    assert!(got.starts_with(&format!("INVITE sip:t1@{} ", t1.2)), "{got}");
    assert_eq!(recv_text(&t2.1, quiet).await, None);
    a.stop().await;
    b.stop().await;
}

/// Flows and compartments nobody uses are forgotten after their idle
/// timeouts (through the proxy's timer), and no more than `max_flows`
/// flows are kept at any time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_flows_and_compartments_are_forgotten_and_flows_are_capped() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let server_port = server.local_addr().unwrap().port();
    let _server = answer_everything(server);
    let proxy = start_proxy(|port| {
        let mut c = proxy_config(port, server_port);
        c.threads = 1;
        c.max_flows = 2;
        c.flow_idle_timeout_s = 1;
        c.sigcomp.idle_timeout_s = 1;
        c
    })
    .await;
    let uri = format!("sip:nobody@127.0.0.1:{server_port}");
    let mut terminals = Vec::new();
    for user in ["alice", "bob", "carol"] {
        let mut t = Terminal::new(user, proxy.terminal_addrs[0].1, false, true).await;
        assert_eq!(t.options(&uri).await, Ok(200), "{user}");
        assert!(sum(&proxy, |p| p.flow_count()) <= 2);
        terminals.push(t);
    }
    assert_eq!(sum(&proxy, |p| p.flow_count()), 2, "capped at max_flows");
    assert_eq!(compartments(&proxy), 3);
    tokio::time::sleep(Duration::from_millis(2600)).await;
    assert_eq!(sum(&proxy, |p| p.flow_count()), 0, "idle flows forgotten");
    assert_eq!(compartments(&proxy), 0, "idle compartments closed");
    // A forgotten terminal is a new one: its next request goes through.
    assert_eq!(terminals[0].options(&uri).await, Ok(200));
    assert_eq!(sum(&proxy, |p| p.flow_count()), 1);
    proxy.stop().await;
}

/// REGISTER with Expires: 0, answered 2xx by Kamailio: the terminal's
/// compartment closes with its registration (RFC 5049 §6.5), once the
/// 2xx, compressed in it, is sent. The terminal's next request names
/// states the proxy dropped: NACKed, sent again, answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deregistration_closes_the_compartment() {
    let (dir, kport, _kamailio) = scratch_with_kamailio("deregister");
    let proxy = start_proxy(|port| proxy_config(port, kport)).await;
    let mut alice = Terminal::new("alice", proxy.terminal_addrs[0].1, false, true).await;
    or_explain(alice.register("secret", 300).await, &dir);
    assert_eq!(sum(&proxy, |p| p.registered_count()), 1);
    assert_eq!(compartments(&proxy), 1);
    or_explain(alice.register("secret", 0).await, &dir);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(sum(&proxy, |p| p.registered_count()), 0);
    assert_eq!(compartments(&proxy), 0, "the compartment outlived its registration");
    let nacks = alice.nacks;
    let code = or_explain(alice.options(&format!("sip:nobody@127.0.0.1:{kport}")).await, &dir);
    assert!(code >= 200, "{code}");
    assert!(alice.nacks > nacks, "the proxy kept the terminal's states");
    proxy.stop().await;
}

/// A registration that runs out closes its compartment (RFC 5049 §6.5),
/// though the compartment's own idle timeout is far off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_registration_closes_the_compartment() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let server_port = server.local_addr().unwrap().port();
    let _server = answer_everything(server);
    let proxy = start_proxy(|port| proxy_config(port, server_port)).await;
    let mut alice = Terminal::new("alice", proxy.terminal_addrs[0].1, false, true).await;
    alice.register("secret", 1).await.unwrap();
    assert_eq!(sum(&proxy, |p| p.registered_count()), 1);
    assert_eq!(compartments(&proxy), 1);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_eq!(sum(&proxy, |p| p.registered_count()), 0);
    assert_eq!(compartments(&proxy), 0, "the compartment outlived its registration");
    proxy.stop().await;
}

/// A terminal that goes on sending after its registration ran out (it
/// did not refresh it, RFC 3261 §10.2.4) loses the states the proxy kept
/// for it: its first request after that names a state the proxy dropped,
/// is NACKed (RFC 4077) and sent again. From then on the proxy declines
/// its state (RFC 5049 §6), so it never acknowledges one, and the
/// terminal's compressor, which uses a state only once acknowledged
/// (RFC 3321 §5.1), names none: every request is answered at once, and
/// no more NACKs come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_past_its_registration_is_nacked_once_and_then_served() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let server_port = server.local_addr().unwrap().port();
    let _server = answer_everything(server);
    let proxy = start_proxy(|port| proxy_config(port, server_port)).await;
    let mut alice = Terminal::new("alice", proxy.terminal_addrs[0].1, false, true).await;
    alice.register("secret", 1).await.unwrap();
    let uri = format!("sip:bob@127.0.0.1:{server_port}");
    // Registered: the proxy keeps and acknowledges the terminal's states.
    for _ in 0..3 {
        assert_eq!(alice.options(&uri).await, Ok(200));
    }
    assert_eq!(alice.nacks, 0);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_eq!(sum(&proxy, |p| p.registered_count()), 0);
    let resends = alice.resends;
    for _ in 0..20 {
        assert_eq!(alice.options(&uri).await, Ok(200));
    }
    assert!(alice.nacks <= 1, "{} NACKs after the registration ran out", alice.nacks);
    assert!(alice.resends - resends <= 1, "{} requests sent again", alice.resends - resends);
    proxy.stop().await;
}
