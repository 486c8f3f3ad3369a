//! Two SigComp terminals that key their compartments as RFC 5049 §6.1 has
//! a terminal do it (one per remote application identifier: for a request
//! sent, the `sigcomp-id` of the URI it goes to, else that URI's host), run
//! ten rounds of REGISTER, MESSAGE, INVITE/ACK/BYE and OPTIONS at each
//! other through `sigkit proxy` and Kamailio, over UDP and over TCP. Their
//! outbound proxy URI is configured without the proxy's `sigcomp-id` (so
//! each terminal knows the proxy by two identifiers: the URI's host, and
//! the `sigcomp-id` of the proxy's Record-Route and Via) or with it (one).
//!
//! The proxy must hold each terminal's messages in the compartment the
//! terminal's compressor assumes: after the first round nobody NACKs,
//! nobody uploads bytecode, and every ACK reaches the far end the first
//! time it is sent.
//!
//! And when the proxy has lost a terminal's state anyway (here: a
//! restart between a 2xx and its ACK), the ACK it cannot decompress is
//! NACKed and recovered end to end: the far end sends its 2xx again
//! (RFC 3261 §13.3.1.4), the caller answers it with the ACK again
//! (§13.2.2.4), compressed anew after the NACK (RFC 4077). A terminal that
//! lost its state shows in the proxy's metrics as NACKs and bytecode
//! uploaded again.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use sigkit_proxy::runtime::Running;
use sigkit_proxy::ProxyConfig;
use support::ua::Terminal;
use support::*;

/// What the terminals and the proxy counted, at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counts {
    /// NACKs the terminals received from the proxy and sent to it.
    nacks_to_terminals: usize,
    nacks_from_terminals: usize,
    /// SigComp messages from the proxy that uploaded bytecode, and that
    /// named a state.
    uploads_from_proxy: usize,
    state_references_from_proxy: usize,
    acks_resent: usize,
    /// The proxy's metrics: NACKs it sent, and uploads again either way.
    proxy_nacks_sent: f64,
    proxy_uploads_again: f64,
}

async fn counts(proxy: &Running, terminals: [&Terminal; 2]) -> Counts {
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    let again = |dir: &str| {
        metric(&metrics, &format!("sigkit_proxy_bytecode_uploads_total{{direction=\"{dir}\",kind=\"again\"}}"))
            .unwrap_or(0.0)
    };
    let sum = |f: fn(&Terminal) -> usize| terminals.iter().map(|t| f(t)).sum();
    Counts {
        nacks_to_terminals: sum(|t| t.nacks),
        nacks_from_terminals: sum(|t| t.nacks_sent),
        uploads_from_proxy: sum(|t| t.uploads_received),
        state_references_from_proxy: sum(|t| t.state_references_received),
        acks_resent: sum(|t| t.acks_resent),
        proxy_nacks_sent: metric_sum(&metrics, "sigkit_proxy_nacks_sent_total"),
        proxy_uploads_again: again("from_terminal") + again("to_terminal"),
    }
}

/// A SigComp terminal of `proxy` that answers what it cannot decompress
/// with a NACK, as a real one does; its outbound proxy URI carries the
/// proxy's `sigcomp-id` if `with_id`.
async fn terminal(user: &str, proxy: SocketAddr, tcp: bool, with_id: bool) -> Terminal {
    let mut t = Terminal::new(user, proxy, tcp, true).await;
    t.nack_failures = true;
    if with_id {
        t.outbound_with_id(&ProxyConfig::default().sigcomp_id);
    }
    t
}

async fn ten_rounds(tcp: bool, with_id: bool) {
    ten_rounds_through(tcp, with_id, false).await;
}

async fn ten_rounds_through(tcp: bool, with_id: bool, stateful: bool) {
    let name = format!(
        "rounds-{}-{}{}",
        if tcp { "tcp" } else { "udp" },
        if with_id { "id" } else { "host" },
        if stateful { "-stateful" } else { "" }
    );
    let (dir, kport, _kamailio) = scratch_with_kamailio(&name);
    let proxy = start_proxy(|port| ProxyConfig { stateful, ..proxy_config(port, kport) }).await;
    let addr = proxy.terminal_addrs[0].1;
    let mut alice = terminal("alice", addr, tcp, with_id).await;
    let mut bob = terminal("bob", addr, tcp, with_id).await;
    let aor = |user: &str| format!("sip:{user}@127.0.0.1:{kport}");
    or_explain(alice.register("secret", 300).await, &dir);
    or_explain(bob.register("secret", 300).await, &dir);
    let mut after_first = None;
    let rounds = 10;
    for round in 0..rounds {
        // Each terminal calls the other once a round.
        for alice_calls in [true, false] {
            let (caller, callee) = if alice_calls { (&mut alice, &mut bob) } else { (&mut bob, &mut alice) };
            let callee_aor = aor(&callee.user);
            let who = caller.user.clone();
            let at = |what: &str| format!("round {}, {what} from {who}", round + 1);
            or_explain(caller.register("secret", 300).await, &dir);

            let (sent, got) = tokio::join!(caller.message(&callee_aor, "hello"), callee.answer_request("MESSAGE"));
            or_explain(got, &dir);
            assert_eq!(or_explain(sent, &dir), 200, "{}", at("MESSAGE"));

            let acks_before = callee.acks_received.len();
            let (call, answered) = tokio::join!(caller.invite(&callee_aor), callee.answer());
            let (mut call, answered) = (or_explain(call, &dir), or_explain(answered, &dir));
            assert_eq!(callee.acks_received.len(), acks_before + 1, "{}", at("ACK"));

            let (bye, got) =
                tokio::join!(caller.in_dialog_request(&mut call, "BYE"), callee.answer_in_dialog(&answered, "BYE"));
            or_explain(got, &dir);
            assert_eq!(or_explain(bye, &dir), 200, "{}", at("BYE"));

            let (options, got) = tokio::join!(caller.options(&callee_aor), callee.answer_request("OPTIONS"));
            or_explain(got, &dir);
            assert_eq!(or_explain(options, &dir), 200, "{}", at("OPTIONS"));
        }
        if round == 0 {
            after_first = Some(counts(&proxy, [&alice, &bob]).await);
        }
    }
    let first = after_first.unwrap();
    let end = counts(&proxy, [&alice, &bob]).await;
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    let context = format!("after round 1: {first:?}\nat the end: {end:?}\n{metrics}");

    // The two ends agree: each terminal's identifiers for the proxy are
    // the proxy's compartments for it, one for one.
    let names = alice.compartment_names();
    assert_eq!(names.len(), if with_id { 1 } else { 2 }, "alice's compartments: {names:?}");
    assert_eq!(bob.compartment_names().len(), names.len());
    assert_eq!(metric(&metrics, "sigkit_proxy_compartments"), Some(2.0 * names.len() as f64), "{context}");

    // No NACK after the first round, either way, and nobody starting over.
    assert_eq!(end.nacks_to_terminals, first.nacks_to_terminals, "{context}");
    assert_eq!(end.nacks_from_terminals, first.nacks_from_terminals, "{context}");
    assert_eq!(end.proxy_nacks_sent, first.proxy_nacks_sent, "{context}");
    assert_eq!(end.proxy_uploads_again, 0.0, "{context}");

    // Every ACK reached the far end the first time it was sent.
    assert_eq!(alice.acks_received.len() + bob.acks_received.len(), 2 * rounds, "{context}");
    assert_eq!(end.acks_resent, 0, "{context}");

    // The proxy's messages keep naming states.
    assert_eq!(end.uploads_from_proxy, first.uploads_from_proxy, "{context}");
    assert!(end.state_references_from_proxy >= first.state_references_from_proxy + 9 * 20, "{context}");
    let ratio = metric(&metrics, "sigkit_proxy_compression_ratio_out").unwrap();
    assert!(ratio > 0.0 && ratio < 0.5, "{context}");
    proxy.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_rounds_over_udp_with_an_outbound_proxy_uri_without_sigcomp_id() {
    ten_rounds(false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_rounds_over_udp_with_the_proxys_sigcomp_id() {
    ten_rounds(false, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_rounds_over_tcp_with_an_outbound_proxy_uri_without_sigcomp_id() {
    ten_rounds(true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_rounds_over_tcp_with_the_proxys_sigcomp_id() {
    ten_rounds(true, true).await;
}

/// The transaction-stateful proxy answers some messages itself (100
/// Trying to an INVITE, retransmissions) in the compartment of the
/// request's name, which its transaction keeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_rounds_over_udp_through_the_stateful_proxy_without_sigcomp_id() {
    ten_rounds_through(false, false, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_rounds_over_tcp_through_the_stateful_proxy_without_sigcomp_id() {
    ten_rounds_through(true, false, true).await;
}

/// `sigkit proxy` on fixed ports, started again on them after a stop.
async fn proxy_on(port: u16, upstream_local: u16, kport: u16) -> Running {
    let mut config = proxy_config(port, kport);
    config.upstream_local = Some(SocketAddr::from(([127, 0, 0, 1], upstream_local)));
    for _ in 0..50 {
        match sigkit_proxy::runtime::start(config.clone()).await {
            Ok(running) => return running,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("sigkit proxy did not start: {e}"),
        }
    }
    panic!("the proxy's ports stayed taken");
}

/// The proxy restarts between a 2xx and its ACK: the ACK names states it
/// no longer has. It answers STATE_NOT_FOUND (it cannot read, let alone
/// ask again for, what it cannot decompress), and the ACK still reaches
/// the far end: the far end's 2xx retransmission reaches the caller
/// through the new instance (RFC 3261 §18.2.2: over UDP by the Via's
/// address, though this instance never saw the caller's flow), and the
/// caller acknowledges it again, compressed anew after the NACK.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_the_proxy_cannot_decompress_reaches_the_far_end_through_the_2xx_retransmission() {
    let (dir, kport, _kamailio) = scratch_with_kamailio("ack-after-restart");
    let (port, upstream_local) = (free_port(), free_port());
    let proxy = proxy_on(port, upstream_local, kport).await;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut alice = terminal("alice", addr, false, true).await;
    let mut bob = terminal("bob", addr, false, true).await;
    or_explain(alice.register("secret", 300).await, &dir);
    or_explain(bob.register("secret", 300).await, &dir);
    // A first call, so that the caller's ACKs name states.
    let bob_aor = format!("sip:bob@127.0.0.1:{kport}");
    let (call, answered) = tokio::join!(alice.invite(&bob_aor), bob.answer());
    let (mut call, answered) = (or_explain(call, &dir), or_explain(answered, &dir));
    let (bye, got) = tokio::join!(alice.in_dialog_request(&mut call, "BYE"), bob.answer_in_dialog(&answered, "BYE"));
    or_explain(got, &dir);
    assert_eq!(or_explain(bye, &dir), 200);

    alice.hold_ack = true;
    let nacks_before = alice.nacks;
    let caller = async {
        let call = or_explain(alice.invite(&bob_aor).await, &dir);
        proxy.stop().await;
        let restarted = proxy_on(port, upstream_local, kport).await;
        alice.send_ack(&call).await;
        // The caller keeps reading: the 2xx sent again comes to it.
        alice.count_for(Duration::from_secs(3), |_| false).await;
        (call, restarted)
    };
    let ((mut call, proxy), answered) = tokio::join!(caller, bob.answer());
    let answered = or_explain(answered, &dir);
    assert!(alice.nacks > nacks_before, "the restarted proxy NACKed the ACK");
    assert!(alice.acks_resent >= 1, "the caller sent its ACK again on the 2xx sent again");
    assert!(bob.acks_received.contains(&call.call_id), "the far end has the ACK");
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    let nacked = metric(&metrics, "sigkit_proxy_nacks_sent_total{reason=\"STATE_NOT_FOUND\"}").unwrap_or(0.0);
    assert!(nacked >= 1.0, "{metrics}");
    // The call goes on through the new instance.
    alice.hold_ack = false;
    let (bye, got) = tokio::join!(alice.in_dialog_request(&mut call, "BYE"), bob.answer_in_dialog(&answered, "BYE"));
    or_explain(got, &dir);
    assert_eq!(or_explain(bye, &dir), 200);
    proxy.stop().await;
}

/// A terminal that restarted (same identity, same address) has lost its
/// SigComp state; the proxy has not. Its next request uploads its bytecode
/// into a compartment where it had named states, it NACKs the proxy's
/// answer, which names states it lost, and the proxy's next answer uploads
/// the proxy's bytecode again: the metrics an operator watches for a
/// disagreement about state count each of these.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_that_lost_its_state_shows_in_the_metrics() {
    let (dir, kport, _kamailio) = scratch_with_kamailio("lost-state");
    let proxy = start_proxy(|port| proxy_config(port, kport)).await;
    let mut alice = terminal("alice", proxy.terminal_addrs[0].1, false, true).await;
    or_explain(alice.register("secret", 300).await, &dir);
    let nobody = format!("sip:nobody@127.0.0.1:{kport}");
    for _ in 0..3 {
        assert_eq!(or_explain(alice.options(&nobody).await, &dir), 404);
    }
    let series = |metrics: &str, s: &str| metric(metrics, s).unwrap_or(0.0);
    let before = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    let again = |dir: &str| format!("sigkit_proxy_bytecode_uploads_total{{direction=\"{dir}\",kind=\"again\"}}");
    assert_eq!(series(&before, &again("from_terminal")) + series(&before, &again("to_terminal")), 0.0, "{before}");

    alice.lose_sigcomp_state();
    for _ in 0..3 {
        assert_eq!(or_explain(alice.options(&nobody).await, &dir), 404);
    }
    let after = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    assert!(alice.nacks_sent >= 1, "the terminal NACKed what named states it lost");
    assert!(series(&after, "sigkit_proxy_nacks_received_total{reason=\"STATE_NOT_FOUND\"}") >= 1.0, "{after}");
    assert_eq!(series(&after, &again("from_terminal")), 1.0, "{after}");
    assert!(series(&after, &again("to_terminal")) >= 1.0, "{after}");
    assert_eq!(series(&after, "sigkit_proxy_compartments_reuploaded"), 1.0, "{after}");
    proxy.stop().await;
}
