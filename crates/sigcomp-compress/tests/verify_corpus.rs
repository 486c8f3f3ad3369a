//! The compressor computes the peer's run of a message (the states it
//! creates and a bound on its cycles, RFC 3320 §5.1) instead of running
//! its model of the peer on it. With `Config::verify` it does both and
//! fails on any difference: here for every algorithm, mechanism and
//! transport over every corpus flow.

mod common;

use common::*;
use sigcomp::{Params, Transport};
use sigcomp_compress::{Algorithm, AnnounceMessage, Compressor, Config, Mechanism};

#[test]
fn computed_runs_match_model_runs_over_the_corpus() {
    let mut messages = 0;
    for &algorithm in Algorithm::ALL {
        for mechanism in Mechanism::ALL {
            for transport in [Transport::Message, Transport::Stream] {
                for name in flows() {
                    let config = Config { algorithm, mechanism, transport, verify: true, ..Config::default() };
                    // Pair::send panics if compressing fails (a computed run
                    // that differs from the model's is CompressError::Mismatch)
                    // or the receiver's output differs.
                    let mut pair = Pair::new(params(8192), config);
                    for m in read_flow(&name) {
                        pair.send(m.from, &m.bytes);
                        messages += 1;
                    }
                }
            }
        }
    }
    assert!(messages > 1500, "{messages} messages");
}

/// Without `verify`, no message is run through the model, for any
/// algorithm, where the peer's cycle budget covers the bound the assembly
/// gives (64 cycles per bit, as `sigkit bench` uses; at 16 a very well
/// compressed message can exceed the per-byte bound and is run): over a
/// stream (states usable once sent, no acknowledgements to wait for) every
/// message of a flow continues from the previous one's snapshot.
#[test]
fn no_algorithm_runs_the_model_unless_verifying() {
    let peer = Params { dms: 16384, sms: 16384, cpb: 64, version: 2 };
    for &algorithm in Algorithm::ALL {
        for mechanism in Mechanism::ALL {
            let config = Config { algorithm, mechanism, transport: Transport::Stream, ..Config::default() };
            let mut c = Compressor::new(config, peer, peer).unwrap();
            let flow = read_flow("3gpp-video-call");
            for m in &flow {
                c.compress(&m.bytes, None, AnnounceMessage::No).unwrap();
            }
            assert_eq!(c.model_runs(), 0, "{algorithm:?} {mechanism:?}");
        }
    }
}
