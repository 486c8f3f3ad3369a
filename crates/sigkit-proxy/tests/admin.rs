//! The read-only admin interface on the metrics listener (`GET /status`,
//! `/compartments`, `/registrations`), over real sockets on 127.0.0.1: two
//! SigComp terminals, one over UDP and one over TCP, register through
//! `sigkit proxy` with an upstream played by the test that answers every
//! REGISTER 200 with the terminal's binding; the three answers must show
//! the compartments and registrations those REGISTERs left, agree with
//! the Prometheus metrics, and follow a registration's end.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use sigkit_proxy::admin::{CompartmentList, RegistrationList, Status};
use support::ua::Terminal;
use support::*;

/// A registrar answering every request 200 OK; a REGISTER's 200 lists its
/// Contact with the REGISTER's Expires, none when that is 0 (RFC 3261
/// §10.3 step 8).
async fn registrar() -> (u16, tokio::task::JoinHandle<()>) {
    scripted_upstream_on_any_port(|msg| {
        let text = String::from_utf8_lossy(msg.input()).to_string();
        let contact = text.lines().find_map(|l| l.strip_prefix("Contact: ")).unwrap_or_default().to_string();
        let expires = msg.expires().ok().flatten().unwrap_or(3600);
        let binding = format!("{contact};expires={expires}");
        let extra: Vec<(&str, &str)> = if msg.method() == Some("REGISTER") && expires > 0 {
            vec![("Contact", binding.as_str())]
        } else {
            Vec::new()
        };
        vec![sigkit_sip::proxy::build_response(msg, 200, "OK", Some("up"), &extra).unwrap()]
    })
    .await
}

/// The body of `GET path`, read as `T`.
async fn get<T: serde::de::DeserializeOwned>(metrics: SocketAddr, path: &str) -> T {
    let body = http_get(metrics, path).await;
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}\n{body}"))
}

/// The status line of `GET path`.
async fn status_line(metrics: SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(metrics).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out.lines().next().unwrap_or_default().to_string()
}

/// A terminal's SigComp identifier and the port of its flow, from its
/// Contact (`<sip:USER@127.0.0.1:PORT...>;+sip.instance="<URN>"`).
fn identity(t: &Terminal) -> (String, u16) {
    let contact = t.contact();
    let urn = contact.split("+sip.instance=\"<").nth(1).unwrap().trim_end_matches(">\"").to_string();
    let port = contact.split("@127.0.0.1:").nth(1).unwrap();
    let port = port[..port.find(|c: char| !c.is_ascii_digit()).unwrap()].parse().unwrap();
    (urn, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_compartments_and_registrations_show_what_the_registers_left() {
    let (upstream, task) = registrar().await;
    let proxy = start_proxy(|port| {
        let mut c = proxy_config(port, upstream);
        c.shards = 2;
        c
    })
    .await;
    let metrics = proxy.metrics_addr.unwrap();
    let udp = proxy.terminal_addrs.iter().find(|(t, _)| *t == sigkit_proxy::SipTransport::Udp).unwrap().1;
    let tcp = proxy.terminal_addrs.iter().find(|(t, _)| *t == sigkit_proxy::SipTransport::Tcp).unwrap().1;

    let before: Status = get(metrics, "/status").await;
    assert_eq!((before.counts.compartments, before.counts.registrations), (0, 0), "{before:?}");

    let mut alice = Terminal::new("alice", udp, false, true).await;
    let mut bob = Terminal::new("bob", tcp, true, true).await;
    alice.register("secret", 300).await.unwrap();
    bob.register("secret", 300).await.unwrap();
    let (alice_id, alice_port) = identity(&alice);
    let (bob_id, bob_port) = identity(&bob);

    // /status: the runtime's facts and the shards' counts, as the metrics
    // count them.
    let status: Status = get(metrics, "/status").await;
    let text = http_get(metrics, "/metrics").await;
    assert_eq!(status.version, env!("CARGO_PKG_VERSION"));
    assert_eq!((status.shards, status.stateful), (2, false));
    assert_eq!(status.instance.len(), 12, "{status:?}");
    assert!(status.listen.contains(&format!("udp:{udp}")) && status.listen.contains(&format!("tcp:{tcp}")));
    assert_eq!(status.upstream, format!("udp:127.0.0.1:{upstream}"));
    let c = &status.counts;
    assert_eq!((c.compartments, c.registrations, c.flows, c.tcp_connections), (2, 2, 2, 1), "{status:?}");
    assert_eq!(Some(c.compartments as f64), metric(&text, "sigkit_proxy_compartments"));
    assert_eq!(Some(c.state_bytes as f64), metric(&text, "sigkit_proxy_state_bytes"));
    // Each REGISTER (and any retransmission of one) forwarded, each 200
    // returned.
    assert!(c.messages_received.terminal >= 2, "{status:?}");
    assert_eq!(c.messages_sent.upstream, c.messages_received.terminal, "{status:?}");
    assert_eq!(c.messages_sent.terminal, c.messages_received.upstream, "{status:?}");

    // /compartments: one per terminal (each knows the proxy by one name
    // here), with its flow, its registration and the state it created.
    let list: CompartmentList = get(metrics, "/compartments").await;
    assert_eq!((list.total, list.compartments.len()), (2, 2), "{list:?}");
    let of = |id: &str| list.compartments.iter().find(|e| e.terminal.as_deref() == Some(id)).unwrap();
    let (a, b) = (of(&alice_id), of(&bob_id));
    assert_eq!(a.peer.as_deref(), Some(format!("udp:127.0.0.1:{alice_port}").as_str()));
    assert_eq!(b.peer.as_deref(), Some(format!("tcp:127.0.0.1:{bob_port}").as_str()));
    assert!(a.registered && b.registered);
    assert!(a.state_bytes > 0 && b.state_bytes > 0, "{list:?}");
    assert_eq!(a.state_bytes + b.state_bytes, c.state_bytes as u64, "{list:?}");
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    for e in [a, b] {
        assert!(e.idle_ms.unwrap() < 30_000, "{e:?}");
        let last = e.last_used_unix_ms.unwrap();
        assert!(last <= now_ms && now_ms - last < 30_000, "{e:?}");
    }
    // A limit of 0 lists none and still counts them all.
    let none: CompartmentList = get(metrics, "/compartments?limit=0").await;
    assert_eq!((none.total, none.compartments.len()), (2, 0));

    // /registrations: the address of record, the terminal, its flow and
    // the seconds left.
    let regs: RegistrationList = get(metrics, "/registrations").await;
    assert_eq!((regs.total, regs.registrations.len()), (2, 2), "{regs:?}");
    let r = regs.registrations.iter().find(|r| r.terminal.as_deref() == Some(alice_id.as_str())).unwrap();
    assert_eq!(r.aor, "sip:alice@127.0.0.1");
    assert_eq!(r.flow.as_deref(), Some(format!("udp:127.0.0.1:{alice_port}").as_str()));
    assert!((290..=300).contains(&r.expires_s), "{r:?}");
    assert_eq!(r.compartments, 1);
    let r = regs.registrations.iter().find(|r| r.terminal.as_deref() == Some(bob_id.as_str())).unwrap();
    assert_eq!((r.aor.as_str(), r.flow.clone()), ("sip:bob@127.0.0.1", Some(format!("tcp:127.0.0.1:{bob_port}"))));

    // Alice's binding removed: her registration and compartment are gone.
    alice.register("secret", 0).await.unwrap();
    let regs: RegistrationList = get(metrics, "/registrations").await;
    assert_eq!(regs.total, 1, "{regs:?}");
    assert_eq!(regs.registrations[0].terminal.as_deref(), Some(bob_id.as_str()));
    let list: CompartmentList = get(metrics, "/compartments").await;
    assert!(list.compartments.iter().all(|e| e.terminal.as_deref() != Some(alice_id.as_str())), "{list:?}");

    // What is not served, or not asked right.
    assert!(status_line(metrics, "/nothing").await.starts_with("HTTP/1.1 404"));
    assert!(status_line(metrics, "/registrations?limit=all").await.starts_with("HTTP/1.1 400"));
    assert!(status_line(metrics, "/metrics").await.starts_with("HTTP/1.1 200"));
    proxy.stop().await;
    task.abort();
}
