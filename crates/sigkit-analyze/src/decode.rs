//! Decoding the SigComp messages already in a capture, as the receiving
//! endpoint did: one decompressor per receiving side of a flow, each
//! message decompressed in capture order and its state requests accepted
//! (RFC 3320 §4.3: the application accepts them once the decompressed SIP
//! message is valid; RFC 5049 §4), so later messages that name those
//! states decompress too.

use std::time::Instant;

use serde::Serialize;
use sigcomp::{CompartmentId, Params, State, Transport};
use sigcomp_compress::{Config, Endpoint, EndpointConfig, EndpointError, Received};

/// The one compartment each receiving side keeps for its peer: a flow is
/// one pair of endpoints.
const PEER: CompartmentId = CompartmentId(1);

/// What decoding one message gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// The SIP message it carried.
    Message(Vec<u8>),
    /// A NACK (RFC 4077) for a message the other side sent.
    Nack {
        /// The NACK's RFC 4077 reason name.
        reason: String,
    },
    /// Decompression failed, with the RFC 4077 reason (e.g.
    /// STATE_NOT_FOUND for a state created before the capture began).
    Failed {
        /// The RFC 4077 reason name.
        reason: String,
    },
}

/// Counts of the SigComp messages found in a flow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DecodeCounts {
    /// SigComp messages handed to the decoders.
    pub messages: usize,
    /// Those that decompressed to a message.
    pub decoded: usize,
    /// Those that were NACKs (RFC 4077).
    pub nacks: usize,
    /// Those that failed to decompress.
    pub failed: usize,
    /// Failures by RFC 4077 reason name, in order of first appearance.
    pub failures: Vec<(String, usize)>,
}

impl DecodeCounts {
    fn fail(&mut self, reason: &str) {
        self.failed += 1;
        match self.failures.iter_mut().find(|(r, _)| r == reason) {
            Some((_, n)) => *n += 1,
            None => self.failures.push((reason.to_string(), 1)),
        }
    }
}

/// The decompressors of a flow's two receiving sides.
pub struct FlowDecoder {
    /// `receivers[d]` decompresses what travels in direction `d` (0: from
    /// the flow's first sender, 1: back).
    receivers: [Endpoint; 2],
    transport: Transport,
    now: Instant,
    /// What the decoders met so far, both directions together.
    pub counts: DecodeCounts,
}

impl FlowDecoder {
    /// Decoders offering `params` (what the receiving endpoints offered;
    /// a larger state memory than theirs only keeps more states).
    pub fn new(params: Params, transport: Transport) -> Result<FlowDecoder, EndpointError> {
        let config = EndpointConfig::new(params, params, Config { transport, ..Config::default() });
        let mk = || Endpoint::new(config);
        Ok(FlowDecoder { receivers: [mk()?, mk()?], transport, now: Instant::now(), counts: DecodeCounts::default() })
    }

    /// Decompresses one SigComp message (for TCP, its record marking
    /// removed) that travelled in direction `direction`.
    pub fn decode(&mut self, direction: usize, message: &[u8]) -> Decoded {
        self.counts.messages += 1;
        self.learn_uploaded_bytecode(message);
        let rx = &mut self.receivers[direction & 1];
        match rx.receive(message, self.transport) {
            Ok(Received::Message(incoming)) => {
                let accepted = rx.accept(self.now, incoming, PEER);
                self.counts.decoded += 1;
                Decoded::Message(accepted.message)
            }
            Ok(Received::Nack(n)) => {
                self.counts.nacks += 1;
                Decoded::Nack { reason: n.reason.name().to_string() }
            }
            Err(e) => {
                let reason = e.reason().name().to_string();
                self.counts.fail(&reason);
                Decoded::Failed { reason }
            }
        }
    }

    /// An endpoint holds its compressor's bytecode as a locally available
    /// state and announces it (RFC 3320 §3.3.3); a peer compressing with the
    /// same bytecode then names it instead of uploading it. A passive
    /// decoder holds no bytecode of its own, but the first message of each
    /// side uploads its bytecode: kept as a local state at both receiving
    /// sides (named by its SHA-1, as the endpoint names its own:
    /// `State::new(destination, destination, 6, code)`), later messages
    /// that name it decompress.
    fn learn_uploaded_bytecode(&mut self, message: &[u8]) {
        let Ok(header) = sigcomp::wire::Header::parse(message) else { return };
        if let sigcomp::wire::Body::Bytecode { code, destination_bits } = header.body {
            let destination = sigcomp::wire::destination_address(destination_bits);
            let state = State::new(destination, destination, 6, code);
            for rx in &mut self.receivers {
                rx.decompressor_mut().states_mut().add_local(state.clone());
            }
        }
    }

    /// A SIP message the side at the start of `direction` sent (decoded or
    /// plain). In RFC 3321's shared mode (§5.2) a sender saves each message
    /// it sends as a state at its own decompressor and the peer may then
    /// name it; the sender's receiving side here does the same, so such
    /// references resolve. The state is SHA-1 named by its content, so
    /// holding one the peer never names changes nothing it decodes.
    pub fn sent(&mut self, direction: usize, sip: &[u8]) {
        let own_receiver = &mut self.receivers[(direction + 1) & 1];
        let state = State::new(0, 0, 6, sip);
        own_receiver.decompressor_mut().states_mut().create_state(PEER, state, 65535);
    }
}
