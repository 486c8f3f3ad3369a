//! What SigComp would have sent for a flow's messages: two endpoints, one
//! at each end of the flow, compress each message in capture order and
//! the other decompresses it with its own UDVM and accepts its state, so
//! the feedback and state announcements a message carries reach the other
//! compressor with the next message going the other way — a real call,
//! as `sigkit flow` runs one (the 2005 SigComp performance thesis's
//! Appendix H measurement).

use std::time::Instant;

use serde::Serialize;
use sigcomp::wire::{frame_for_stream, Deframer, Frame};
use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Algorithm, Config, Endpoint, EndpointConfig, EndpointError, Mechanism, Received};

const PEER: CompartmentId = CompartmentId(1);

/// One SigComp configuration to try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// How state is used: basic, static, dynamic or shared.
    pub mechanism: Mechanism,
    /// The compression algorithm the bytecode runs.
    pub algorithm: Algorithm,
}

impl Variant {
    /// "sigcomp shared/lzss".
    pub fn name(&self) -> String {
        format!("sigcomp {}/{}", self.mechanism.name(), self.algorithm.name())
    }

    /// Every mechanism with every algorithm this build has.
    pub fn all() -> Vec<Variant> {
        Algorithm::ALL
            .iter()
            .flat_map(|&algorithm| Mechanism::ALL.into_iter().map(move |mechanism| Variant { mechanism, algorithm }))
            .collect()
    }
}

/// A variant's run over one flow.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Simulated {
    /// Bytes sent per message: the SigComp message (with its record
    /// marking over TCP), or the plain message where SigComp failed.
    pub sizes: Vec<usize>,
    /// Messages sent plain because compressing or decompressing them
    /// failed (a message too large for the peer's memory, say), as an
    /// RFC 3486 endpoint may.
    pub sent_plain: usize,
    /// The first such failure, for the report.
    pub first_failure: Option<String>,
}

/// Runs `messages` (direction 0 or 1, SIP bytes) between two endpoints
/// offering `params`, compressing with `variant` over `transport`; the
/// rest of the compressor's settings are `base`'s.
pub fn simulate(
    messages: &[(usize, &[u8])],
    variant: Variant,
    transport: Transport,
    params: Params,
    base: Config,
) -> Result<Simulated, EndpointError> {
    let config = Config { mechanism: variant.mechanism, algorithm: variant.algorithm, transport, ..base };
    let mk = || Endpoint::new(EndpointConfig::new(params, params, config));
    let mut ends = [mk()?, mk()?];
    let stream = transport == Transport::Stream;
    let mut deframers = [Deframer::new(1 << 20), Deframer::new(1 << 20)];
    let now = Instant::now();
    let mut out = Simulated::default();
    for (i, &(direction, sip)) in messages.iter().enumerate() {
        let (tx, rx) = match direction & 1 {
            0 => {
                let [a, b] = &mut ends;
                (a, b)
            }
            _ => {
                let [a, b] = &mut ends;
                (b, a)
            }
        };
        let fail = |out: &mut Simulated, why: String| {
            out.sizes.push(sip.len());
            out.sent_plain += 1;
            out.first_failure.get_or_insert_with(|| format!("message {}: {why}", i + 1));
        };
        let compressed = match tx.compress(now, PEER, sip) {
            Ok(c) => c,
            Err(e) => {
                fail(&mut out, format!("compression failed: {e}"));
                continue;
            }
        };
        let wire = if stream {
            let mut framed = Vec::with_capacity(compressed.message.len() + 8);
            frame_for_stream(&compressed.message, &mut framed);
            framed
        } else {
            compressed.message
        };
        // The receiver sees exactly the wire bytes.
        let unframed = if stream {
            let mut frames = Vec::new();
            deframers[direction & 1].push(&wire, &mut frames);
            match frames.pop() {
                Some(Frame::Message(m)) => m,
                _ => {
                    fail(&mut out, "record marking did not give the message back".into());
                    continue;
                }
            }
        } else {
            wire.clone()
        };
        match rx.receive(&unframed, transport) {
            Ok(Received::Message(incoming)) => {
                let accepted = rx.accept(now, incoming, PEER);
                if accepted.message != sip {
                    fail(&mut out, "the peer decompressed other bytes".into());
                    continue;
                }
            }
            Ok(Received::Nack(_)) => {
                fail(&mut out, "taken for a NACK".into());
                continue;
            }
            Err(e) => {
                fail(&mut out, format!("the peer could not decompress it: {}", e.failure));
                continue;
            }
        }
        out.sizes.push(wire.len());
    }
    Ok(out)
}
