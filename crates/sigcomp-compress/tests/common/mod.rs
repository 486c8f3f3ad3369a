//! Shared by the integration tests: a tiny reader of the corpus call flows
//! and a driver that plays a flow between two endpoints.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use sigcomp::wire::{self, Deframer, Frame};
use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Config, Endpoint, EndpointConfig, ReceiveError, Received, ReceivedNack};

/// Which side sends a corpus message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Ue,
    Pcscf,
}

pub struct FlowMessage {
    pub name: String,
    pub from: Side,
    pub bytes: Vec<u8>,
}

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

/// Every flow directory of the corpus, sorted by name.
pub fn flows() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(corpus_dir())
        .expect("corpus directory")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    assert!(v.len() >= 8, "corpus has {} flows", v.len());
    v
}

/// The messages of one flow, in order (files NN-<ue|pcscf>-<name>.sip).
pub fn read_flow(flow: &str) -> Vec<FlowMessage> {
    let dir = corpus_dir().join(flow);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sip"))
        .collect();
    names.sort();
    assert!(!names.is_empty(), "{flow}: no messages");
    names
        .into_iter()
        .map(|name| {
            let side = name.split('-').nth(1).expect("NN-side-name");
            let from = match side {
                "ue" => Side::Ue,
                "pcscf" => Side::Pcscf,
                s => panic!("{flow}/{name}: unknown side {s}"),
            };
            let bytes = std::fs::read(dir.join(&name)).expect("read message");
            FlowMessage { name, from, bytes }
        })
        .collect()
}

pub const C: CompartmentId = CompartmentId(1);

/// An endpoint offering `local`, assuming `peer` of its peers.
pub fn endpoint(local: Params, peer: Params, config: Config) -> Endpoint {
    Endpoint::new(EndpointConfig::new(local, peer, config)).expect("endpoint")
}

/// The time given to the endpoints (no test here depends on idling).
pub fn now() -> Instant {
    Instant::now()
}

/// What a message delivered to an endpoint gave.
#[derive(Debug)]
pub enum Got {
    Message(Vec<u8>),
    Nack(ReceivedNack),
}

/// Receives `msg` at `to`, over the transport its configuration names,
/// and accepts it under compartment [`C`].
pub fn receive(to: &mut Endpoint, msg: &[u8]) -> Result<Got, ReceiveError> {
    receive_in(to, C, msg)
}

/// As [`receive`], accepting under `compartment`.
pub fn receive_in(to: &mut Endpoint, compartment: CompartmentId, msg: &[u8]) -> Result<Got, ReceiveError> {
    match to.receive(msg, to.config().compressor.transport)? {
        Received::Message(incoming) => Ok(Got::Message(to.accept(now(), incoming, compartment).message)),
        Received::Nack(n) => Ok(Got::Nack(n)),
    }
}

/// Totals of one flow played between two endpoints.
#[derive(Debug, Default, Clone, Copy)]
pub struct Totals {
    pub uncompressed: usize,
    pub compressed: usize,
    /// Bytes of each message after the first (per direction) that the
    /// sender compressed with a state.
    pub with_state: usize,
}

/// A pair of endpoints and, for stream transport, one TCP byte stream
/// each way (RFC 3320 §4.2.2 record marking).
pub struct Pair {
    pub ue: Endpoint,
    pub pcscf: Endpoint,
    pub transport: Transport,
    /// Bytes the transport carried for the last message (with RFC 3320
    /// §4.2.2 record marking over a stream).
    pub last_wire_len: usize,
    to_ue: Deframer,
    to_pcscf: Deframer,
}

impl Pair {
    pub fn new(params: Params, config: Config) -> Pair {
        Pair {
            ue: endpoint(params, params, config),
            pcscf: endpoint(params, params, config),
            transport: config.transport,
            last_wire_len: 0,
            to_ue: Deframer::new(1 << 20),
            to_pcscf: Deframer::new(1 << 20),
        }
    }

    pub fn sender(&mut self, from: Side) -> &mut Endpoint {
        match from {
            Side::Ue => &mut self.ue,
            Side::Pcscf => &mut self.pcscf,
        }
    }

    pub fn receiver(&mut self, from: Side) -> &mut Endpoint {
        match from {
            Side::Ue => &mut self.pcscf,
            Side::Pcscf => &mut self.ue,
        }
    }

    /// Carries one SigComp message over the transport; returns what the
    /// receiver's transport delivers (the message, unescaped).
    pub fn carry(&mut self, from: Side, msg: &[u8]) -> Vec<u8> {
        match self.transport {
            Transport::Message => {
                self.last_wire_len = msg.len();
                msg.to_vec()
            }
            Transport::Stream => {
                let mut bytes = Vec::new();
                wire::frame_for_stream(msg, &mut bytes);
                self.last_wire_len = bytes.len();
                let deframer = match from {
                    Side::Ue => &mut self.to_pcscf,
                    Side::Pcscf => &mut self.to_ue,
                };
                let mut frames = Vec::new();
                deframer.push(&bytes, &mut frames);
                match frames.as_slice() {
                    [Frame::Message(m)] => m.clone(),
                    other => panic!("stream delivered {other:?}"),
                }
            }
        }
    }

    /// Sends `msg` from `from` to the other side; returns the SigComp size.
    /// Panics unless the receiver's own decompressor outputs `msg` exactly.
    pub fn send(&mut self, from: Side, msg: &[u8]) -> usize {
        let out = self.sender(from).compress(now(), C, msg).unwrap_or_else(|e| panic!("compress: {e}"));
        let delivered = self.carry(from, &out.message);
        match receive(self.receiver(from), &delivered) {
            Ok(Got::Message(output)) => {
                assert!(output == msg, "decompressed message differs from the original");
            }
            Ok(Got::Nack(r)) => panic!("unexpected NACK {:?}", r.reason),
            Err(e) => panic!("receiver failed: {e}"),
        }
        out.message.len()
    }
}

/// Plays a whole flow; every message must round-trip.
pub fn play(flow: &[FlowMessage], params: Params, config: Config) -> Totals {
    let mut pair = Pair::new(params, config);
    let mut t = Totals::default();
    for m in flow {
        let n = pair.send(m.from, &m.bytes);
        t.uncompressed += m.bytes.len();
        t.compressed += n;
    }
    t
}

pub fn params(dms: u32) -> Params {
    Params { dms, sms: dms, cpb: 16, version: 2 }
}
