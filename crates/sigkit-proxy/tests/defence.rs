//! One source floods the proxy with looping bytecode (each message runs
//! until its cycle budget is spent, RFC 3320 §8.6), while registered
//! SigComp terminals go on. The flood does not change any terminal's
//! state, and the terminals keep at least 95 % of what they get done
//! without it, at the same offered load. The attacker sends from
//! 127.0.0.2 and the terminals from 127.0.0.1 (Linux routes all of
//! 127/8 to lo): budgets are kept per source address, so this is the
//! isolation a real attacker meets.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

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
        .inspect(|p| (p.metrics().refused.iter().sum::<u64>(), p.endpoint().metrics().cycles))
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
    let refused_before: u64 = proxy.inspect(|p| p.metrics().refused.iter().sum::<u64>()).into_iter().sum();
    let (flooded, mixed_sent) = tokio::join!(offered_load(&mut terminals, &uri, 100, span), flood_for(span));
    let after = proxy.inspect(states);
    // The terminals at work changed their own compartments; the flood
    // opened, closed and changed none.
    assert_eq!(quiet_one(&after), quiet_one(&before), "the flood changed a quiet terminal's state");
    assert_eq!(compartment_ids(&after), compartment_ids(&before), "the flood opened or closed a compartment");
    let refused_mixed: u64 =
        proxy.inspect(|p| p.metrics().refused.iter().sum::<u64>()).into_iter().sum::<u64>() - refused_before;
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

/// Bytecode whose instructions cost more time than their cycles: a SHA-1
/// of 1 byte and one of 0 bytes (2 and 1 cycles, RFC 3320 §9.1.4, each a
/// whole SHA-1 block), the digest written across the end of a 10-byte
/// circular buffer, in a loop that runs until the cycle budget is spent.
fn sha1_looping_message(padding: usize) -> Vec<u8> {
    let src = "at (64)\n:byte_copy_left pad (2)\n:byte_copy_right pad (2)\nat (128)\n\
               MULTILOAD (64, 2, 1000, 1010)\n:loop\nSHA-1 (200, 1, 1005)\nSHA-1 (200, 0, 1005)\nJUMP (loop)\n";
    let upload = sigcomp_asm::assemble(src).unwrap().upload().unwrap();
    upload.message(&vec![0x55; padding]).unwrap()
}

/// The SigComp performance thesis's denial of service from many addresses
/// at once: 100 sources each send 10 SHA-1-looping messages a second and 30
/// more send 50 looping JUMPs, every source within its own budget, while
/// registered terminals go on. The overall decompression budget, and the
/// share of it for sources the proxy does not know, keep the terminals'
/// work at 95 % or more of what it is without the flood.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_many_sources_is_held_to_the_unknown_share() {
    let (_dir, kport, _kamailio) = scratch_with_kamailio("many-sources");
    let proxy = start_proxy(|port| proxy_config(port, kport)).await;
    let proxy_addr = proxy.terminal_addrs[0].1;
    let mut terminals = Vec::new();
    for user in ["alice", "bob"] {
        let mut t = Terminal::new(user, proxy_addr, false, true).await;
        t.register("secret", 300).await.unwrap();
        terminals.push(t);
    }
    let uri = format!("sip:nobody@127.0.0.1:{kport}");
    offered_load(&mut terminals, &uri, 20, Duration::from_millis(500)).await;

    // A source's cycle budget (2,000,000 a second) lets it send about 12
    // of these SHA-1 loops (1,100 bytes, 156,800 cycles) a second, or 60
    // of the JUMP loops (117 bytes, 30,976 cycles).
    let sha1 = sha1_looping_message(1_000);
    let jump = looping_message(100);
    let mut attackers = Vec::new();
    for i in 0..130u8 {
        let socket = tokio::net::UdpSocket::bind(format!("127.0.1.{}:0", 10 + i)).await.unwrap();
        let (message, per_tick) = if i < 100 { (sha1.clone(), 1) } else { (jump.clone(), 5) };
        attackers.push((socket, message, per_tick));
    }
    let flood_for = |span: Duration| {
        let attackers = &attackers;
        async move {
            // Every 100 ms: 10 or 50 messages a second from each source.
            let end = Instant::now() + span;
            let mut sent = 0u64;
            let mut next = Instant::now();
            while Instant::now() < end {
                for (socket, message, per_tick) in attackers {
                    for _ in 0..*per_tick {
                        let _ = socket.send_to(message, proxy_addr).await;
                        sent += 1;
                    }
                }
                next += Duration::from_millis(100);
                tokio::time::sleep_until(next.into()).await;
            }
            sent
        }
    };
    let span = Duration::from_secs(3);
    let quiet = offered_load(&mut terminals, &uri, 100, span).await;
    let refused = |p: &sigkit_proxy::Proxy| p.metrics().refused;
    let sum = |all: Vec<[u64; 4]>| all.into_iter().fold([0; 4], |a, r| std::array::from_fn(|i| a[i] + r[i]));
    let before = sum(proxy.inspect(refused));
    let unknown_spent = |p: &sigkit_proxy::Proxy| p.snapshot().decompression[1].as_nanos() as u64;
    let spent_before: Vec<u64> = proxy.inspect(unknown_spent);
    let (flooded, sent) = tokio::join!(offered_load(&mut terminals, &uri, 100, span), flood_for(span));
    let after = sum(proxy.inspect(refused));
    let spent_after: Vec<u64> = proxy.inspect(unknown_spent);
    let refused: [u64; 4] = std::array::from_fn(|i| after[i] - before[i]);
    let unknown_ns: u64 = spent_after.iter().zip(&spent_before).map(|(a, b)| a - b).sum();
    eprintln!(
        "many sources: {sent} sent, refused (messages, cycles, overall, unknown) {refused:?}, \
         {:.0} ms spent on them; answered {quiet} quiet, {flooded} flooded",
        unknown_ns as f64 / 1e6
    );
    // Every source kept within its own budgets (60 messages and about
    // 60 × 30,000 cycles a second): what refused them is the unknown share.
    assert!(sent > 3_000, "the flood sent {sent}");
    assert!(refused[3] > sent / 2, "{refused:?} of {sent} refused");
    // Unknown sources get 20 % of 500 ms a second (and a burst of 20 ms).
    let budget = sigkit_proxy::config::DefenceConfig::default();
    let share_ns = budget.decompression_ms_per_s * 1_000_000 * u64::from(budget.unknown_sources_percent) / 100;
    let allowed = share_ns * (span.as_millis() as u64 + 500) / 1000 + 2 * budget.decompression_burst_ms * 1_000_000;
    assert!(unknown_ns <= allowed, "{unknown_ns} ns spent on unknown sources, {allowed} allowed");
    assert!(quiet >= 300, "only {quiet} OPTIONS answered without a flood");
    assert!(flooded * 100 >= quiet * 95, "{flooded} answered under the flood against {quiet} without");
    for t in &terminals {
        assert_eq!(t.nacks, 0, "{} was NACKed", t.user);
    }
    proxy.stop().await;
}
