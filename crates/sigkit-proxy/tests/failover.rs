//! Two `sigkit proxy` instances in front of one Kamailio, as a farm behind
//! an L4 balancer (docs/deploy.md): both write the farm's service address
//! (here the first proxy's) into Record-Route and Path. The first stops in
//! the middle of a call; the terminal goes on through the second. Its
//! first message there names a state the second proxy lacks: a
//! STATE_NOT_FOUND NACK (RFC 4077) answers it, the terminal sends the
//! message again with its bytecode, and the call completes.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::ua::Terminal;
use support::*;

async fn failover(tcp: bool) {
    let (dir, kport, _kamailio) = scratch_with_kamailio(if tcp { "failover-tcp" } else { "failover-udp" });
    let uas_port = free_port();
    let uas = sipp_uas_one_call(&dir, uas_port);
    // The first proxy's ports are the farm's service address; a retry
    // (start_proxy) may change them, so they are read back after it starts.
    let farm = |port: u16, upstream_local: u16, service: Option<(SocketAddr, SocketAddr)>| {
        farm_config(port, kport, upstream_local, service)
    };
    let a = start_proxy(|port| farm(port, free_port(), None)).await;
    let (service_terminal, service_upstream) = (a.terminal_addrs[0].1, a.upstream_local);
    let b = start_proxy(|port| farm(port, 0, Some((service_terminal, service_upstream)))).await;
    let b_addr = b.terminal_addrs[0].1;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let mut alice = Terminal::new("alice", service_terminal, tcp, true).await;
    // The farm's sigcomp-id in the outbound proxy URI (docs/deploy.md):
    // one name for the farm, so one compartment at each end, whose states
    // the terminal names from the first exchange on.
    alice.outbound_with_id(&sigkit_proxy::ProxyConfig::default().sigcomp_id);
    or_explain(alice.register("secret", 300).await, &dir);
    let mut call = or_explain(alice.invite(&format!("sip:service@127.0.0.1:{uas_port}")).await, &dir);
    // The state the terminal will name next is acknowledged (UDP) or sent
    // (TCP) by now: one more round trip through the first proxy.
    assert_eq!(or_explain(alice.in_dialog_request(&mut call, "INVITE").await, &dir), 200);
    // The re-INVITE's ACK (end to end, no response) reaches the UAS
    // before the first proxy goes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let a_states: usize = a.inspect(|p| p.endpoint().decompressor().states().item_count()).into_iter().sum();
    assert!(a_states > 2, "the first proxy holds the terminal's state");
    a.stop().await;

    alice.switch_proxy(b_addr).await;
    let nacks_before = alice.nacks;
    assert_eq!(or_explain(alice.in_dialog_request(&mut call, "BYE").await, &dir), 200, "BYE through the second proxy");
    assert!(alice.nacks > nacks_before, "the second proxy NACKed the unknown state");
    let metrics = http_get(b.metrics_addr.unwrap(), "/metrics").await;
    let nacked = metric(&metrics, "sigkit_proxy_nacks_sent_total{reason=\"STATE_NOT_FOUND\"}").unwrap_or(0.0);
    assert!(nacked >= 1.0, "{metrics}");
    let uas = uas.await.unwrap();
    assert_eq!((uas.successful, uas.failed), (1, 0), "SIPp UAS:\n{}", uas.output);
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_survives_its_proxy_over_udp() {
    failover(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_survives_its_proxy_over_tcp() {
    failover(true).await;
}
