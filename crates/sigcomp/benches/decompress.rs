//! Decompression benchmarks (criterion). `cargo bench -p sigcomp --bench decompress`
//!
//! * `rfc4465/<test>/step<N>`: every UDP step of the RFC 4465 torture tests
//!   (`tests/data/rfc4465.json`) that the RFC expects to succeed. Earlier
//!   steps of the same test are replayed once first, with `accept` into
//!   their compartment, so a step that reads state finds it.
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

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::Value;
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
    Some(Params {
        dms: n("dms")? as u32,
        sms: n("sms")? as u32,
        cpb: n("cpb")? as u16,
        version: version as u8,
    })
}

/// A step the RFC expects to succeed: `nack` null and an output given.
fn expected_output(step: &Value) -> Option<Vec<u8>> {
    let expect = step.get("expect")?;
    if !expect.get("nack").map_or(true, Value::is_null) {
        return None;
    }
    unhex(expect.get("output_hex")?.as_str()?)
}

fn compartment(step: &Value, ids: &mut HashMap<String, CompartmentId>) -> Option<CompartmentId> {
    let name = step.get("compartment")?.as_str()?;
    let n = ids.len() as u64;
    Some(*ids.entry(name.to_string()).or_insert(CompartmentId(n)))
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
    group.sample_size(30).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    let (mut benched, mut skipped) = (0, 0);
    for t in &tests {
        let id = t.get("id").and_then(Value::as_str).unwrap_or("?");
        if t.get("transport").and_then(Value::as_str) != Some("udp") {
            continue;
        }
        let Some(params) = t.get("endpoint").and_then(endpoint_params) else {
            eprintln!("rfc4465: {id}: no usable endpoint, skipped");
            continue;
        };
        let steps = t.get("steps").and_then(Value::as_array).cloned().unwrap_or_default();
        for (k, step) in steps.iter().enumerate() {
            let Some(want) = expected_output(step) else { continue };
            let name = format!("{id}/step{}", k + 1);
            // Set-up: replay the earlier steps once, accepting as the
            // application would.
            let mut d = Decompressor::new(params).expect("valid endpoint");
            let mut ids = HashMap::new();
            for earlier in &steps[..k] {
                let Some(m) = earlier.get("message_hex").and_then(Value::as_str).and_then(unhex) else {
                    continue;
                };
                if let Ok(out) = d.decompress(&m, Transport::Message) {
                    if let Some(cid) = compartment(earlier, &mut ids) {
                        d.accept(out.pending, cid);
                    }
                }
            }
            let Some(msg) = step.get("message_hex").and_then(Value::as_str).and_then(unhex) else {
                eprintln!("rfc4465: {name}: bad message_hex, skipped");
                skipped += 1;
                continue;
            };
            // Only bench what gives the RFC's answer.
            match d.decompress(&msg, Transport::Message) {
                Ok(out) if out.output == want => {
                    let rfc_cycles = step.pointer("/expect/cycles").and_then(Value::as_u64);
                    if rfc_cycles.is_some_and(|c| c != out.cycles) {
                        eprintln!("note: rfc4465/{name}: {} cycles, RFC says {rfc_cycles:?}", out.cycles);
                    }
                    eprintln!(
                        "info: rfc4465/{name}: {} B message, {} B output, {} cycles",
                        msg.len(),
                        out.output.len(),
                        out.cycles
                    );
                }
                Ok(out) => {
                    eprintln!("rfc4465: {name}: output {} differs from the RFC's, skipped", hex::encode(&out.output));
                    skipped += 1;
                    continue;
                }
                Err(f) => {
                    eprintln!("rfc4465: {name}: failed with {}, skipped", f.reason.name());
                    skipped += 1;
                    continue;
                }
            }
            group.bench_function(&name, |b| {
                b.iter(|| d.decompress(black_box(&msg), Transport::Message).expect("verified above"))
            });
            benched += 1;
        }
    }
    group.finish();
    eprintln!("info: rfc4465: {benched} steps benched, {skipped} skipped");
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
    group.sample_size(50).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
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

criterion_group!(benches, lz77_invite, rfc4465);
criterion_main!(benches);
