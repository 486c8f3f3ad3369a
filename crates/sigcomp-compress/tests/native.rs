//! The native decoders of sigkit's own bytecode give what the UDVM gives.
//!
//! Every message of the corpus flows, compressed with each algorithm,
//! mechanism and transport, is decompressed by two receivers beside the
//! endpoints: one that runs recognised token loops natively (the
//! default) and one that runs every instruction in the UDVM. Their
//! results (output, cycles, state requests with their bytes, feedback)
//! must be equal, and the first must have decoded tokens natively.

#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use common::*;
use sigcomp::nack::Reason;
use sigcomp::{Decompressor, Params, Transport};
use sigcomp_compress::{Algorithm, Config, Endpoint, Level, Mechanism};

/// The two receivers of one side: native decoders on, and off.
struct Mirror {
    native: Decompressor,
    udvm: Decompressor,
}

impl Mirror {
    fn new(params: Params) -> Mirror {
        let mut udvm = Decompressor::new(params).unwrap();
        udvm.set_native_decoders(false);
        Mirror { native: Decompressor::new(params).unwrap(), udvm }
    }

    /// Decompresses `msg` at both, checks they agree, accepts it at both.
    /// A state the receiving endpoint `at` holds that the mirrors lack
    /// (its own bytecode, which it announces to its peer; the messages it
    /// sent, saved as shared state) is given to both first.
    fn receive(&mut self, at: &Endpoint, msg: &[u8], transport: Transport, what: &str) {
        let mut a = self.native.decompress(msg, transport);
        while let Err(f) = &a {
            if f.reason != Reason::StateNotFound {
                break;
            }
            let held = at.decompressor().states().lookup(&f.details).unwrap().clone();
            self.native.states_mut().add_local(held.clone());
            self.udvm.states_mut().add_local(held);
            a = self.native.decompress(msg, transport);
        }
        let b = self.udvm.decompress(msg, transport);
        assert_eq!(a, b, "{what}");
        let (a, b) = (a.unwrap(), b.unwrap());
        let accepted_a = self.native.accept(a.pending, C);
        let accepted_b = self.udvm.accept(b.pending, C);
        assert_eq!(accepted_a, accepted_b, "{what}");
    }
}

#[test]
fn every_corpus_message_decodes_natively_as_in_the_udvm() {
    let flows = ["3gpp-video-call", "open-sigcomp-startup", "basic-voice-call"];
    for algorithm in Algorithm::ALL.iter().copied() {
        // Level 1's dynamic and shared programs save short snapshots: a
        // different program around the same token loops.
        let programs = Mechanism::ALL
            .into_iter()
            .map(|m| (m, Level::DEFAULT))
            .chain([(Mechanism::Dynamic, Level::FASTEST), (Mechanism::Shared, Level::FASTEST)]);
        for (mechanism, level) in programs {
            for transport in [Transport::Message, Transport::Stream] {
                let config = Config { algorithm, mechanism, transport, level, ..Config::default() };
                let (mut to_pcscf, mut to_ue) = (Mirror::new(params(8192)), Mirror::new(params(8192)));
                let mut messages = 0;
                for flow in flows {
                    let mut pair = Pair::new(params(8192), config);
                    for m in read_flow(flow) {
                        let out = pair.sender(m.from).compress(now(), C, &m.bytes).unwrap();
                        let delivered = pair.carry(m.from, &out.message);
                        let mirror = match m.from {
                            Side::Ue => &mut to_pcscf,
                            Side::Pcscf => &mut to_ue,
                        };
                        let what = format!(
                            "{algorithm:?} {mechanism:?} level {} {transport:?} {flow}/{}",
                            level.get(),
                            m.name
                        );
                        mirror.receive(pair.receiver(m.from), &delivered, transport, &what);
                        assert!(matches!(receive(pair.receiver(m.from), &delivered), Ok(Got::Message(_))), "{what}");
                        messages += 1;
                    }
                }
                let what = format!("{algorithm:?} {mechanism:?} level {} {transport:?}", level.get());
                for mirror in [&to_pcscf, &to_ue] {
                    let native = mirror.native.metrics().native_tokens;
                    assert!(native > messages, "{what}: {native} tokens decoded natively in {messages} messages");
                    assert_eq!(mirror.udvm.metrics().native_tokens, 0, "{what}");
                }
            }
        }
    }
}

#[test]
fn the_compressors_model_of_its_peer_decodes_natively() {
    // Deflate and LZ77 messages always run through the model of the
    // peer's decompressor; with `verify`, LZSS messages do too.
    let flow = read_flow("3gpp-video-call");
    for &algorithm in Algorithm::ALL {
        let config = Config { algorithm, verify: true, ..Config::default() };
        let mut pair = Pair::new(params(8192), config);
        for m in &flow {
            pair.send(m.from, &m.bytes);
        }
        let model = pair.ue.compressor(C).unwrap();
        assert!(model.model_runs() > 0, "{algorithm:?}");
        assert!(model.model_native_tokens() > 100, "{algorithm:?}: {}", model.model_native_tokens());
    }
}
