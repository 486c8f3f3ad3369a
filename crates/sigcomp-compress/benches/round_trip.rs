//! Criterion benches of the round-trip hot paths: one SIP message
//! compressed by one endpoint and decompressed by the other, feedback
//! returned, with the Open SigComp speed-test settings (DMS 8192, SMS
//! 8192, CPB 64, LZSS shared over UDP) on the REGISTER / 200 OK pair of
//! `corpus/open-sigcomp-startup`.
//!
//! `cargo bench -p sigcomp-compress --bench round_trip`
//!
//! * `round_trip/steady_pair`: a REGISTER and its 200 OK in a compartment
//!   that has carried the pair before (history acknowledged): two round
//!   trips per iteration.
//! * `round_trip/steady_pair_woken_from_packed`: the same, both endpoints
//!   packing the compartment's states first (an idle compartment woken).
//! * `round_trip/new_pair_10_messages`: a fresh compartment pair carries ten
//!   messages and is closed, as Open SigComp's speed test switches
//!   compartments every ten messages: ten round trips per iteration.
//! * `state_id/<n>`: the SHA-1 state identifier (RFC 3320 §3.3.3) of an
//!   `n`-byte state, the size of this workload's snapshots, which both
//!   sides hash on every message.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sigcomp::{CompartmentId, Params, State};
use sigcomp_compress::{Config, Endpoint, EndpointConfig, Received};

fn message(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/open-sigcomp-startup").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn endpoints() -> (Endpoint, Endpoint) {
    let p = Params { dms: 8192, sms: 8192, cpb: 64, version: 2 };
    let config = EndpointConfig::new(p, p, Config::default());
    (Endpoint::new(config).expect("ue"), Endpoint::new(config).expect("pcscf"))
}

fn send(from: &mut Endpoint, to: &mut Endpoint, c: CompartmentId, msg: &[u8]) {
    let now = std::time::Instant::now();
    let out = from.compress(now, c, msg).expect("compress");
    match to.receive(&out.message, sigcomp::Transport::Message) {
        Ok(Received::Message(incoming)) => assert_eq!(to.accept(now, incoming, c).message.len(), msg.len()),
        other => panic!("{other:?}"),
    }
}

/// Endpoints whose compartment `c` has carried the pair a few times
/// (history acknowledged both ways).
fn warmed_pair(c: CompartmentId, request: &[u8], response: &[u8]) -> (Endpoint, Endpoint) {
    let (mut ue, mut pcscf) = endpoints();
    for _ in 0..4 {
        send(&mut ue, &mut pcscf, c, request);
        send(&mut pcscf, &mut ue, c, response);
    }
    (ue, pcscf)
}

fn benches(c: &mut Criterion) {
    let register = message("01-ue-REGISTER.sip");
    let ok = message("02-pcscf-200-OK.sip");
    let mut group = c.benchmark_group("round_trip");

    let steady = CompartmentId(1);
    let (mut ue, mut pcscf) = warmed_pair(steady, &register, &ok);
    group.throughput(Throughput::Elements(2));
    group.bench_function("steady_pair", |b| {
        b.iter(|| {
            send(&mut ue, &mut pcscf, steady, black_box(&register));
            send(&mut pcscf, &mut ue, steady, black_box(&ok));
        })
    });

    // The same, but both endpoints pack the compartment's states before
    // each pair (Endpoint::pack_compartment, what an idle compartment
    // gets): the difference to steady_pair is the cost of waking an idle
    // compartment twice (once per endpoint and direction).
    let (mut ue, mut pcscf) = warmed_pair(steady, &register, &ok);
    group.throughput(Throughput::Elements(2));
    group.bench_function("steady_pair_woken_from_packed", |b| {
        b.iter(|| {
            ue.pack_compartment(steady);
            pcscf.pack_compartment(steady);
            send(&mut ue, &mut pcscf, steady, black_box(&register));
            send(&mut pcscf, &mut ue, steady, black_box(&ok));
        })
    });

    let (mut ue, mut pcscf) = endpoints();
    let mut next = 0u64;
    group.throughput(Throughput::Elements(10));
    group.bench_function("new_pair_10_messages", |b| {
        b.iter(|| {
            next += 1;
            let c = CompartmentId(next);
            for _ in 0..5 {
                send(&mut ue, &mut pcscf, c, black_box(&register));
                send(&mut pcscf, &mut ue, c, black_box(&ok));
            }
            ue.close_compartment(c);
            pcscf.close_compartment(c);
        })
    });
    group.finish();

    let mut group = c.benchmark_group("state_id");
    for n in [600usize, 3600] {
        let value: Vec<u8> = (0..n).map(|i| (i * 31 % 251) as u8).collect();
        group.throughput(Throughput::Bytes(n as u64));
        group.bench_function(format!("{n}"), |b| b.iter(|| State::new(64, 156, 6, black_box(&value)).id));
    }
    group.finish();
}

// criterion_group! makes `round_trip` a `pub fn` and takes no doc comment:
// in a private module it is not public API.
mod group {
    use super::*;
    criterion_group! {
        name = round_trip;
        config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
        targets = benches
    }
}
criterion_main!(group::round_trip);
