//! Compress + decompress throughput in headers per second (issue 16's goal:
//! at least 1 M headers/s per core), for TAROC in each mode and for VJ, on
//! a bulk transfer's data and ACK directions and on SIP over TCP.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rohc_tcp::synth::{bulk_transfer, sip_over_tcp, Dir, FlowOptions};
use rohc_tcp::{Mode, Scheme};

fn flows() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let bulk = bulk_transfer(2000, 1460, 97, FlowOptions::default());
    let sip = sip_over_tcp(100, FlowOptions::default());
    let pick = |f: &[(Dir, Vec<u8>)], d: Dir| f.iter().filter(|(x, _)| *x == d).map(|(_, p)| p.clone()).collect();
    vec![
        ("bulk-data", pick(&bulk, Dir::Forward)),
        ("bulk-acks", pick(&bulk, Dir::Backward)),
        ("sip-client", pick(&sip, Dir::Forward)),
    ]
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("compress+decompress");
    for (name, packets) in flows() {
        g.throughput(Throughput::Elements(packets.len() as u64));
        for (scheme, label) in [
            (Scheme::Taroc(Mode::U), "taroc-u"),
            (Scheme::Taroc(Mode::O), "taroc-o"),
            (Scheme::Taroc(Mode::R), "taroc-r"),
            (Scheme::Vj, "vj"),
        ] {
            g.bench_function(format!("{label}/{name}"), |b| {
                b.iter_batched(
                    || scheme.pair(),
                    |(mut comp, mut decomp)| {
                        let (mut wire, mut back, mut fb) =
                            (Vec::with_capacity(2048), Vec::with_capacity(2048), Vec::new());
                        for p in &packets {
                            wire.clear();
                            back.clear();
                            comp.compress_packet(p, &mut wire).expect("compresses");
                            decomp.decompress_packet(&wire, &mut back).expect("decompresses");
                            fb.clear();
                            while decomp.poll_feedback(&mut fb) {
                                comp.feedback(&fb).expect("feedback");
                                fb.clear();
                            }
                        }
                        back.len()
                    },
                    BatchSize::LargeInput,
                )
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
