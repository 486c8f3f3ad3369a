//! `sigkit proxy` between real parts on 127.0.0.1: a SigComp terminal
//! (the endpoint over real sockets) registers through the proxy with
//! Kamailio (digest authentication), calls a SIPp UAS (with a re-INVITE,
//! and hangs up), and is called by a SIPp UAC through Kamailio and the
//! proxy (which hangs up); the same over TCP; and a plain-SIP SIPp
//! terminal through the proxy. Results, not header text, are asserted.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use support::ua::Terminal;
use support::*;

async fn calls_through_the_proxy(tcp: bool, stateful: bool) {
    let name = format!("{}{}", if tcp { "tcp" } else { "udp" }, if stateful { "-stateful" } else { "" });
    let (dir, kport, _kamailio) = scratch_with_kamailio(&name);
    let proxy = start_proxy(|port| proxy_config_with(port, kport, stateful)).await;
    let proxy_addr = proxy.terminal_addrs[0].1;

    // The far-end UAS answers one call (re-INVITE and BYE included).
    let uas_port = free_port();
    let uas = sipp_uas_one_call(&dir, uas_port);
    tokio::time::sleep(Duration::from_millis(300)).await;

    let mut alice = Terminal::new("alice", proxy_addr, tcp, true).await;
    or_explain(alice.register("secret", 300).await, &dir);

    // Outgoing call, re-INVITE, BYE from the terminal.
    let mut call = or_explain(alice.invite(&format!("sip:service@127.0.0.1:{uas_port}")).await, &dir);
    // The ACK and a re-INVITE sent right behind it are two datagrams that
    // the proxy's workers (and Kamailio's) may forward in either order:
    // UDP keeps none (RFC 3261 §18). SIPp's UAS scenario requires the ACK
    // first, so the terminal pauses as a user would.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(or_explain(alice.in_dialog_request(&mut call, "INVITE").await, &dir), 200, "re-INVITE");
    assert_eq!(or_explain(alice.in_dialog_request(&mut call, "BYE").await, &dir), 200, "BYE");
    let uas = uas.await.unwrap();
    assert_eq!((uas.successful, uas.failed), (1, 0), "SIPp UAS:\n{}", uas.output);

    // Terminating call: SIPp UAC -> Kamailio -> proxy -> terminal; the
    // far end hangs up.
    let uac_port = free_port().to_string();
    let uac = {
        let dir = dir.clone();
        let target = format!("127.0.0.1:{kport}");
        tokio::task::spawn_blocking(move || {
            let sf = sipp_scenario("uac_routeset.xml");
            let args = ["-sf", &sf, "-s", "alice", "-i", "127.0.0.1", "-p", &uac_port, "-m", "1", &target];
            sipp(&dir, &args, Duration::from_secs(40))
        })
    };
    let incoming = or_explain(alice.answer().await, &dir);
    or_explain(alice.answer_in_dialog(&incoming, "BYE").await, &dir);
    let uac = uac.await.unwrap();
    assert_eq!((uac.successful, uac.failed), (1, 0), "SIPp UAC:\n{}", uac.output);

    // Everything the terminal received was SigComp it could decompress
    // (Terminal panics otherwise), and the proxy kept its state.
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    let accepted = metric(&metrics, "sigkit_proxy_state_decisions_total{decision=\"accepted\"}").unwrap();
    let declined = metric(&metrics, "sigkit_proxy_state_decisions_total{decision=\"declined\"}").unwrap();
    assert!(accepted >= 6.0, "accepted {accepted}\n{metrics}");
    // The first REGISTER was challenged: its state was declined.
    assert!(declined >= 1.0, "declined {declined}\n{metrics}");
    if stateful {
        // Two REGISTERs, INVITE, re-INVITE, BYE went through transactions.
        let started = metric(&metrics, "sigkit_proxy_transactions_total").unwrap();
        assert!(started >= 5.0, "transactions {started}\n{metrics}");
    }
    assert_eq!(metric(&metrics, "sigkit_proxy_registered_terminals"), Some(1.0));
    let ratio = metric(&metrics, "sigkit_proxy_compression_ratio_out").unwrap();
    assert!(ratio > 0.0 && ratio < 0.8, "ratio toward the terminal {ratio}");
    let ratio_in = metric(&metrics, "sigkit_proxy_compression_ratio_in").unwrap();
    assert!(ratio_in > 0.0 && ratio_in < 0.8, "ratio from the terminal {ratio_in}");
    assert_eq!(metric(&metrics, "sigkit_proxy_undeliverable_total"), Some(0.0), "{metrics}");
    assert!(metric(&metrics, "sigkit_proxy_compartments").unwrap() >= 1.0);
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigcomp_terminal_over_udp() {
    calls_through_the_proxy(false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigcomp_terminal_over_tcp() {
    calls_through_the_proxy(true, false).await;
}

/// The same flows through the transaction-stateful proxy (RFC 3261 §17
/// transactions toward Kamailio, 100 Trying of its own, the ACK of a
/// non-2xx final response its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigcomp_terminal_over_udp_through_the_stateful_proxy() {
    calls_through_the_proxy(false, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigcomp_terminal_over_tcp_through_the_stateful_proxy() {
    calls_through_the_proxy(true, true).await;
}

fn proxy_config_with(port: u16, upstream: u16, stateful: bool) -> sigkit_proxy::ProxyConfig {
    let mut c = proxy_config(port, upstream);
    c.stateful = stateful;
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_sipp_terminal_through_the_proxy() {
    let (dir, kport, _kamailio) = scratch_with_kamailio("plain");
    let proxy = start_proxy(|port| proxy_config(port, kport)).await;
    let proxy_addr: SocketAddr = proxy.terminal_addrs[0].1;
    let uas_port = free_port().to_string();
    let _uas = sipp_background(&dir, &["-sn", "uas", "-i", "127.0.0.1", "-p", &uas_port]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (rsa, target) = (proxy_addr.to_string(), format!("127.0.0.1:{uas_port}"));
    let r =
        tokio::task::spawn_blocking(move || sipp_uac_via(&dir, ["-sn", "uac"], &rsa, &target, 20, 20)).await.unwrap();
    assert_eq!((r.successful, r.failed), (20, 0), "{}", r.output);
    proxy.stop().await;
}

/// SIPp's UAC cancels a ringing call through `sigkit proxy` and Kamailio
/// to SIPp's UAS, which answers the CANCEL 200 and the INVITE 487: every
/// call must end that way at both SIPp ends (stateless: the CANCEL goes
/// through as a request; stateful: the proxy answers it and cancels its
/// own client transaction, RFC 3261 §16.10).
async fn cancel_across_both_hops(stateful: bool) {
    let (dir, kport, _kamailio) = scratch_with_kamailio(if stateful { "cancel-stateful" } else { "cancel" });
    let proxy = start_proxy(|port| proxy_config_with(port, kport, stateful)).await;
    let rsa = proxy.terminal_addrs[0].1.to_string();
    let uas_port = free_port();
    let calls = 5;
    let uas = {
        let dir = dir.clone();
        tokio::task::spawn_blocking(move || {
            let sf = sipp_scenario("uas_cancel.xml");
            let port = uas_port.to_string();
            sipp(&dir, &["-sf", &sf, "-i", "127.0.0.1", "-p", &port, "-m", &calls.to_string()], Duration::from_secs(40))
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let target = format!("127.0.0.1:{uas_port}");
    let uac = tokio::task::spawn_blocking({
        let dir = dir.clone();
        move || sipp_uac_via(&dir, ["-sf", &sipp_scenario("uac_cancel.xml")], &rsa, &target, calls, 5)
    })
    .await
    .unwrap();
    let uas = uas.await.unwrap();
    assert_eq!((uac.successful, uac.failed), (5, 0), "UAC:\n{}\n{}", uac.output, diagnostics(&dir));
    assert_eq!((uas.successful, uas.failed), (5, 0), "UAS:\n{}\n{}", uas.output, diagnostics(&dir));
    if stateful {
        let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
        assert_eq!(metric(&metrics, "sigkit_proxy_cancelled_invites_total"), Some(5.0), "{metrics}");
    }
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_through_the_proxy_and_kamailio() {
    cancel_across_both_hops(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_through_the_stateful_proxy_and_kamailio() {
    cancel_across_both_hops(true).await;
}
