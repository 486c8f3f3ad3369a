//! Every corpus call flow round-trips between two endpoints under every
//! algorithm × mechanism × DMS × transport, each message decompressed by
//! the receiver's own decompressor and compared byte for byte.

mod common;

use common::*;
use sigcomp::Transport;
use sigcomp_compress::{Algorithm, Config, Mechanism};

fn matrix(algorithm: Algorithm) {
    let flows: Vec<(String, Vec<FlowMessage>)> = flows().into_iter().map(|f| (f.clone(), read_flow(&f))).collect();
    for mechanism in Mechanism::ALL {
        for transport in [Transport::Message, Transport::Stream] {
            for dms in [2048, 4096, 8192, 16384] {
                // verify: every LZSS message is also run by the peer's decompressor
                // and checked against what the compressor computed of that run.
                let config = Config { algorithm, mechanism, transport, verify: true, ..Config::default() };
                for (name, flow) in &flows {
                    let t = std::panic::catch_unwind(|| play(flow, params(dms), config)).unwrap_or_else(|_| {
                        panic!("{name}: {} {} {transport:?} DMS {dms} failed", algorithm.name(), mechanism.name())
                    });
                    // Compression pays: the flow is smaller than sent raw
                    // (basic mechanism uploads bytecode every time, and a
                    // 2048-byte DMS cannot hold the large messages with a
                    // useful buffer (the SigComp performance thesis, §2.6), so neither is held to it).
                    if mechanism != Mechanism::Basic && dms >= 4096 {
                        assert!(
                            t.compressed < t.uncompressed,
                            "{name}: {} {} {transport:?} DMS {dms}: {} >= {}",
                            algorithm.name(),
                            mechanism.name(),
                            t.compressed,
                            t.uncompressed
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn every_flow_round_trips_lzss() {
    matrix(Algorithm::Lzss);
}

#[test]
fn every_flow_round_trips_other_algorithms() {
    for &a in Algorithm::ALL {
        if a != Algorithm::Lzss {
            matrix(a);
        }
    }
}
