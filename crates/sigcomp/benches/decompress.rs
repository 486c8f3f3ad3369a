//! Decompression benchmarks (criterion):
//! `cargo bench -p sigcomp --bench decompress` (about 6 minutes; criterion
//! options such as `-- --warm-up-time 1 --measurement-time 2` or a name
//! filter like `-- lz77_invite` go after `--`).
//!
//! * `rfc4465/<test>/step<N>`: every step of every RFC 4465 torture test
//!   (`tests/data/rfc4465.json`), UDP and TCP. Earlier steps of the same
//!   test are replayed once first, with `accept` into their compartment, so
//!   a step that reads state finds it. A step the RFC expects to succeed is
//!   benched only if it gives the RFC's output; a step the RFC expects to
//!   fail is benched (time to the failure, i.e. to the NACK decision) only
//!   if it fails with the RFC's reason. A TCP step is a byte stream: it is
//!   deframed once outside the timing, and each message it holds is a bench
//!   of its own (`step<N>.<M>`), decompressed as a stream message.
//! * `lz77_invite/...`: a 1030-byte IMS INVITE (`benches/data/invite.sip`)
//!   compressed with the RFC 4464 §4.1.1 LZ77 scheme, hand-assembled
//!   bytecode and encoder in `benches/support/lz77.rs` (verified by
//!   `tests/lz77_bytecode.rs`).
//!
//! The timed routine is one `Decompressor::decompress` call on a complete
//! message: header parsing, UDVM memory set-up, state access and bytecode
//! execution, output into a fresh Vec. It never calls `accept`, so the
//! endpoint is left unchanged and the same message can be decompressed
//! again; that is why no per-iteration rebuild is needed (the `+accept`
//! benches, which do change the endpoint, rebuild it outside the timing
//! with `iter_batched`).
//!
//! `benches/summarize.py` turns a run into the tables of BENCHMARKS.md.

// A setup failure here is a bug to see at once: unwrap panics with it.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::Value;
use sigcomp::wire::{Deframer, Frame};
use sigcomp::{CompartmentId, Decompressor, Params, Transport};

#[path = "support/lz77.rs"]
mod lz77;

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rfc4465.json");

fn unhex(s: &str) -> Option<Vec<u8>> {
    hex::decode(s.chars().filter(|c| !c.is_whitespace()).collect::<String>()).ok()
}

fn endpoint_params(e: &Value) -> Option<Params> {
    let n = |k: &str| e.get(k).and_then(Value::as_u64);
    let version = n("sigcomp_version").or_else(|| n("version")).unwrap_or(1);
    Some(Params { dms: n("dms")? as u32, sms: n("sms")? as u32, cpb: n("cpb")? as u16, version: version as u8 })
}

/// What the RFC expects of one message.
#[derive(Debug, Clone, PartialEq)]
enum Expected {
    Output(Vec<u8>),
    Nack(String),
}

fn expected(expect: &Value) -> Option<Expected> {
    match expect.get("nack").and_then(Value::as_str) {
        Some(reason) => Some(Expected::Nack(reason.to_string())),
        None => unhex(expect.get("output_hex")?.as_str()?).map(Expected::Output),
    }
}

/// One message of a torture test, in order: a UDP step's message, or one
/// of the messages a TCP step's stream holds (unescaped).
struct Unit {
    name: String,
    msg: Vec<u8>,
    transport: Transport,
    compartment: Option<String>,
    expected: Option<Expected>,
}

fn units(t: &Value, id: &str) -> Vec<Unit> {
    let tcp = t.get("transport").and_then(Value::as_str) == Some("tcp");
    let steps = t.get("steps").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut out = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        let Some(bytes) = step.get("message_hex").and_then(Value::as_str).and_then(unhex) else {
            eprintln!("rfc4465: {id}/step{}: bad message_hex, skipped", k + 1);
            continue;
        };
        let compartment = step.get("compartment").and_then(Value::as_str).map(str::to_string);
        let expect = step.get("expect").cloned().unwrap_or(Value::Null);
        if !tcp {
            out.push(Unit {
                name: format!("{id}/step{}", k + 1),
                msg: bytes,
                transport: Transport::Message,
                compartment,
                expected: expected(&expect),
            });
            continue;
        }
        // RFC 3320 §4.2.2: each TCP step is a stream of its own (as in
        // tests/rfc4465.rs); its expectations are `messages`, or the step's
        // own for a single message.
        let wants: Vec<Value> = match expect.get("messages").and_then(Value::as_array) {
            Some(m) => m.clone(),
            None => vec![expect.clone()],
        };
        let mut frames = Vec::new();
        Deframer::new(0).push(&bytes, &mut frames);
        let msgs: Vec<Vec<u8>> = frames
            .into_iter()
            .filter_map(|f| match f {
                Frame::Message(m) => Some(m),
                Frame::FramingError => None,
            })
            .collect();
        let many = msgs.len() > 1;
        for (j, m) in msgs.into_iter().enumerate() {
            out.push(Unit {
                name: if many { format!("{id}/step{}.{}", k + 1, j + 1) } else { format!("{id}/step{}", k + 1) },
                msg: m,
                transport: Transport::Stream,
                compartment: compartment.clone(),
                expected: wants.get(j).and_then(expected),
            });
        }
    }
    out
}

fn compartment(name: &Option<String>, ids: &mut HashMap<String, CompartmentId>) -> Option<CompartmentId> {
    let name = name.as_ref()?;
    let n = ids.len() as u64;
    Some(*ids.entry(name.clone()).or_insert(CompartmentId(n)))
}

fn rfc4465(c: &mut Criterion) {
    let text = match std::fs::read_to_string(VECTORS) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("rfc4465: {VECTORS} not readable ({e}); torture-test benches skipped");
            return;
        }
    };
    let v: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("rfc4465: {VECTORS} does not parse ({e}); torture-test benches skipped");
            return;
        }
    };
    let tests = v.get("tests").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut group = c.benchmark_group("rfc4465");
    let (mut benched, mut skipped) = (0, 0);
    for t in &tests {
        let id = t.get("id").and_then(Value::as_str).unwrap_or("?");
        let Some(params) = t.get("endpoint").and_then(endpoint_params) else {
            eprintln!("rfc4465: {id}: no usable endpoint, skipped");
            continue;
        };
        let units = units(t, id);
        for (k, unit) in units.iter().enumerate() {
            let name = &unit.name;
            let Some(want) = &unit.expected else {
                eprintln!("rfc4465: {name}: no expectation, skipped");
                skipped += 1;
                continue;
            };
            // Set-up: replay the earlier messages once, accepting as the
            // application would.
            let mut d = Decompressor::new(params).expect("valid endpoint");
            let mut ids = HashMap::new();
            for earlier in &units[..k] {
                if let Ok(out) = d.decompress(&earlier.msg, earlier.transport) {
                    if let Some(cid) = compartment(&earlier.compartment, &mut ids) {
                        d.accept(out.pending, cid);
                    }
                }
            }
            let (msg, transport) = (&unit.msg, unit.transport);
            // Only bench what gives the RFC's answer.
            let got = d.decompress(msg, transport);
            let proto = if transport == Transport::Stream { "TCP" } else { "UDP" };
            match (&got, want) {
                (Ok(out), Expected::Output(w)) if out.output == *w => {
                    eprintln!(
                        "info: rfc4465/{name}: {proto}, {} B message, {} B output, {} cycles",
                        msg.len(),
                        out.output.len(),
                        out.cycles
                    );
                }
                (Err(f), Expected::Nack(r)) if f.reason.name() == r => {
                    eprintln!(
                        "info: rfc4465/{name}: {proto}, {} B message, fails {r} after {} cycles",
                        msg.len(),
                        f.cycles
                    );
                }
                _ => {
                    let got = match &got {
                        Ok(out) => format!("output {}", hex::encode(&out.output)),
                        Err(f) => format!("failure {}", f.reason.name()),
                    };
                    eprintln!("rfc4465: {name}: {got}, RFC says {want:?}; skipped");
                    skipped += 1;
                    continue;
                }
            }
            if got.is_ok() {
                group.bench_function(name.as_str(), |b| {
                    b.iter(|| d.decompress(black_box(msg), transport).expect("verified above"))
                });
            } else {
                group.bench_function(name.as_str(), |b| {
                    b.iter(|| d.decompress(black_box(msg), transport).expect_err("verified above"))
                });
            }
            benched += 1;
        }
    }
    group.finish();
    eprintln!("info: rfc4465: {benched} messages benched, {skipped} skipped");
}

/// Decompressor holding the state `first` created (accepted into
/// compartment 1).
fn after_first(first: &[u8]) -> Decompressor {
    let mut d = Decompressor::new(lz77::params()).unwrap();
    let out = d.decompress(first, Transport::Message).unwrap();
    d.accept(out.pending, CompartmentId(1));
    d
}

fn lz77_invite(c: &mut Criterion) {
    let invite = lz77::INVITE;
    let invite2 = lz77::second_invite();
    let mut group = c.benchmark_group("lz77_invite");
    group.throughput(Throughput::Bytes(invite.len() as u64));

    for (label, variant) in [("plain", lz77::Variant::Plain), ("sipdict", lz77::Variant::SipDict)] {
        let mut comp = lz77::Lz77Compressor::new(variant);
        let m1 = comp.bytecode_message(invite);
        let m2 = comp.state_message(&invite2);

        // Verify before timing (tests/lz77_bytecode.rs checks more).
        let mut d = Decompressor::new(lz77::params()).unwrap();
        let o1 = d.decompress(&m1, Transport::Message).unwrap();
        assert_eq!(o1.output, invite);
        let mut d2 = after_first(&m1);
        let o2 = d2.decompress(&m2, Transport::Message).unwrap();
        assert_eq!(o2.output, invite2);
        eprintln!(
            "info: lz77_invite/{label}: upload {} B ({} cycles), state {} B ({} cycles), INVITE {} B",
            m1.len(),
            o1.cycles,
            m2.len(),
            o2.cycles,
            invite.len()
        );

        // First message of a compartment: bytecode uploaded.
        group.bench_function(format!("{label}/upload"), |b| {
            b.iter(|| d.decompress(black_box(&m1), Transport::Message).unwrap())
        });
        // Second message: bytecode, table and history from the state the
        // first one created, by 6-byte partial identifier.
        group.bench_function(format!("{label}/state"), |b| {
            b.iter(|| d2.decompress(black_box(&m2), Transport::Message).unwrap())
        });
        // The same, plus what a receiver must do next: accept, i.e. create
        // the new 8128-byte state (SHA-1 over it, eviction of the old one).
        group.bench_function(format!("{label}/state+accept"), |b| {
            b.iter_batched(
                || after_first(&m1),
                |mut d| {
                    let out = d.decompress(black_box(&m2), Transport::Message).unwrap();
                    d.accept(out.pending, CompartmentId(1));
                    d
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// Defaults short enough for a 2-core machine (109 benches, about 6
/// minutes on an idle one); criterion's command-line options override the
/// times. No plots: drawing them took as long as measuring.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .without_plots()
}

// criterion_group! makes `benches` a `pub fn` and takes no doc comment:
// in a private module it is not public API.
mod group {
    use super::*;
    criterion_group! {
        name = benches;
        config = config();
        targets = lz77_invite, rfc4465
    }
}
criterion_main!(group::benches);
