//! One source floods the proxy with looping bytecode (each message runs
//! until its cycle budget is spent, RFC 3320 §8.6), while registered
//! SigComp terminals go on. The flood does not change any terminal's
//! state, and the terminals keep at least 95 % of what they get done
//! without it, at the same offered load. The attacker sends from
//! 127.0.0.2 and the terminals from 127.0.0.1 (Linux routes all of
//! 127/8 to lo): budgets are kept per source address, so this is the
//! isolation a real attacker meets.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sigcomp::{CompartmentId, StateId};
use support::ua::Terminal;
use support::*;

/// Bytecode that spends its whole cycle budget (RFC 3320 §8.6, with
/// RFC 4896's cycles granted per input byte consumed): it reads one input
/// byte, copies 120 bytes (121 cycles), and loops; at the end of the
/// input it jumps to itself until the budget is gone. Assembled from
///
/// ```text
/// at (128)
/// :loop
/// INPUT-BYTES (1, 64, done)
/// COPY (200, 120, 400)
/// JUMP (loop)
/// :done
/// JUMP (done)
/// ```
fn looping_message(padding: usize) -> Vec<u8> {
    let mut m =
        vec![0xf8, 0x00, 0xe1, 0x1c, 0x01, 0x86, 0x0d, 0x12, 0xa0, 0xc8, 0xa0, 0x78, 0xa1, 0x90, 0x16, 0xf5, 0x16];
    m.extend(std::iter::repeat_n(0x55u8, padding));
    m
}

type States = BTreeMap<CompartmentId, Vec<StateId>>;

fn states(proxy: &sigkit_proxy::Proxy) -> States {
    let s = proxy.endpoint().decompressor().states();
    s.compartment_ids()
        .map(|c| {
            let mut ids: Vec<StateId> =
                s.compartment(c).map(|c| c.entries.iter().map(|e| e.id).collect()).unwrap_or_default();
            ids.sort();
            (c, ids)
        })
        .collect()
}

/// Each terminal sends OPTIONS at `per_second` for `span`; the number
/// answered.
async fn offered_load(terminals: &mut [Terminal], uri: &str, per_second: u32, span: Duration) -> usize {
    let interval = Duration::from_secs(1) / per_second;
    let end = Instant::now() + span;
    let mut answered = 0;
    let mut next = Instant::now();
    while Instant::now() < end {
        for t in terminals.iter_mut() {
            if t.options(uri).await.is_ok() {
                answered += 1;
            }
        }
        next += interval;
        tokio::time::sleep_until(next.into()).await;
    }
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_bytecode_flood_leaves_the_terminals_alone() {
    let (_dir, kport, _kamailio) = scratch_with_kamailio("flood");
    let proxy = start_proxy(|port| proxy_config(port, kport)).await;
    let proxy_addr = proxy.terminal_addrs[0].1;
    let mut terminals = Vec::new();
    for user in ["alice", "bob"] {
        let mut t = Terminal::new(user, proxy_addr, false, true).await;
        t.register("secret", 300).await.unwrap();
        terminals.push(t);
    }
    let uri = format!("sip:nobody@127.0.0.1:{kport}");
    // Warm the terminals' compartments (acknowledged states both ways).
    offered_load(&mut terminals, &uri, 20, Duration::from_millis(500)).await;
    // A registered terminal that stays quiet: while the others work
    // under the flood, its compartment is one that must not change.
    let (shard, compartment) = {
        let without = proxy.inspect(states);
        let mut carol = Terminal::new("carol", proxy_addr, false, true).await;
        carol.register("secret", 300).await.unwrap();
        let with = proxy.inspect(states);
        let mut new = Vec::new();
        for (i, s) in with.iter().enumerate() {
            new.extend(s.keys().filter(|c| !without[i].contains_key(c)).map(|c| (i, *c)));
        }
        assert_eq!(new.len(), 1, "carol's compartment: {new:?}");
        new[0]
    };
    let quiet_one = |all: &[States]| all[shard].get(&compartment).cloned().expect("carol's compartment is open");
    let compartment_ids =
        |all: &[States]| -> Vec<Vec<CompartmentId>> { all.iter().map(|s| s.keys().copied().collect()).collect() };

    // The flood alone: no terminal's state at the proxy changes.
    let before = proxy.inspect(states);
    let attacker = tokio::net::UdpSocket::bind("127.0.0.2:0").await.unwrap();
    let flood = looping_message(8_000);
    let flood_for = |span: Duration| {
        let flood = flood.clone();
        let attacker = &attacker;
        async move {
            let end = Instant::now() + span;
            let mut sent = 0u64;
            while Instant::now() < end {
                for _ in 0..10 {
                    let _ = attacker.send_to(&flood, proxy_addr).await;
                    sent += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            sent
        }
    };
    let sent = flood_for(Duration::from_secs(1)).await;
    let after = proxy.inspect(states);
    assert_eq!(before, after, "the flood changed the terminals' states");
    let (refused, cycles) = proxy
        .inspect(|p| (p.metrics().refused_messages + p.metrics().refused_cycles, p.endpoint().metrics().cycles))
        .into_iter()
        .fold((0, 0), |(r, c), (pr, pc)| (r + pr, c + pc));
    assert!(sent > 500, "the flood sent {sent}");
    assert!(refused > sent / 2, "{refused} of {sent} flood messages refused");
    // What it was allowed to run is bounded by the source's cycle budget.
    let budget = sigkit_proxy::config::DefenceConfig::default();
    assert!(cycles <= budget.cycles_burst + 2 * budget.cycles_per_source_per_s + 5_000_000, "{cycles} cycles run");

    // The terminals' work, without and with the flood, at the same load.
    let span = Duration::from_secs(2);
    let quiet = offered_load(&mut terminals, &uri, 100, span).await;
    let before = proxy.inspect(states);
    let refused_before: u64 =
        proxy.inspect(|p| p.metrics().refused_messages + p.metrics().refused_cycles).into_iter().sum();
    let (flooded, mixed_sent) = tokio::join!(offered_load(&mut terminals, &uri, 100, span), flood_for(span));
    let after = proxy.inspect(states);
    // The terminals at work changed their own compartments; the flood
    // opened, closed and changed none.
    assert_eq!(quiet_one(&after), quiet_one(&before), "the flood changed a quiet terminal's state");
    assert_eq!(compartment_ids(&after), compartment_ids(&before), "the flood opened or closed a compartment");
    let refused_mixed: u64 =
        proxy.inspect(|p| p.metrics().refused_messages + p.metrics().refused_cycles).into_iter().sum::<u64>()
            - refused_before;
    assert!(refused_mixed > mixed_sent / 2, "{refused_mixed} of {mixed_sent} flood messages refused");
    let run: u64 = proxy.inspect(|p| p.endpoint().metrics().cycles).into_iter().sum();
    eprintln!("flood: {sent} sent, {refused} refused; answered {quiet} quiet, {flooded} flooded; {run} cycles run");
    assert!(quiet >= 200, "only {quiet} OPTIONS answered without a flood");
    assert!(flooded * 100 >= quiet * 95, "{flooded} answered under the flood against {quiet} without");
    for t in &terminals {
        assert_eq!(t.nacks, 0, "{} was NACKed", t.user);
    }
    proxy.stop().await;
}
