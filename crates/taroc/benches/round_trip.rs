//! Compress + decompress throughput in headers per second (the goal:
//! at least 1 M headers/s per core), for TAROC in each mode and for VJ, on
//! a bulk transfer's data and ACK directions and on SIP over TCP.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use taroc::Scheme;

mod common;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("compress+decompress");
    for (name, packets) in common::flows() {
        g.throughput(Throughput::Elements(packets.len() as u64));
        for (scheme, label) in common::TAROC_MODES.into_iter().chain([(Scheme::Vj, "vj")]) {
            g.bench_function(format!("{label}/{name}"), |b| {
                b.iter_batched(
                    || scheme.pair(),
                    |(mut comp, mut decomp)| common::pass(comp.as_mut(), decomp.as_mut(), &packets),
                    BatchSize::LargeInput,
                )
            });
        }
    }
    g.finish();
}

// criterion_group! makes `benches` a `pub fn` and takes no doc comment:
// in a private module it is not public API.
mod group {
    use super::*;
    criterion_group!(benches, bench);
}
criterion_main!(group::benches);
