//! Runs a call flow between two in-process SigComp endpoints, a UE and a
//! P-CSCF: each message is compressed by its sender and decompressed by the
//! receiver's own UDVM, with feedback carried in the reverse direction —
//! the measurement of the SigComp performance thesis Appendix H.

use std::time::Instant;

use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{CompressError, Config, Endpoint, EndpointConfig, EndpointError, Received};

use crate::corpus::{FlowMessage, Side};

/// The compartment each endpoint keeps for the other.
pub const PEER: CompartmentId = CompartmentId(1);

/// One row of the per-message table.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageReport {
    /// The message's name as the corpus flow gives it ("INVITE", "200 OK").
    pub name: String,
    /// "ue->pcscf" or "pcscf->ue".
    pub direction: &'static str,
    /// Its size as SIP, bytes.
    pub uncompressed: usize,
    /// Compressed payload: the LZSS tokens, without header or bytecode.
    pub payload: usize,
    /// The SigComp message as sent (for a stream, with its record marking).
    pub sigcomp: usize,
    /// Whether the message carried the decompressor's bytecode (RFC 3320 §7.3)
    /// rather than naming a state that holds it.
    pub uploaded_bytecode: bool,
    /// State memory used at the receiver for this compartment afterwards.
    pub state_memory: u32,
    /// `sigcomp / uncompressed`: below 1 the message shrank.
    pub ratio: f64,
    /// Wall-clock time the sender took to compress it, microseconds (this
    /// machine, release build).
    pub compress_us: f64,
    /// Wall-clock time the receiver took to decompress it and save its states,
    /// microseconds.
    pub decompress_us: f64,
    /// UDVM cycles the receiver spent decompressing it (RFC 3320 §8.6 bounds them
    /// by the cycles per bit).
    pub cycles: u64,
    /// The state the message's header names (a memory snapshot, or the
    /// saved bytecode), if any; None when it uploads bytecode.
    pub used_state: Option<sigcomp::StateId>,
    /// The peer's shared state (RFC 3321 §5.2) the message's bytecode
    /// loads, if any.
    pub used_shared: Option<sigcomp::StateId>,
    /// States the message asks the receiver to create (END-MESSAGE).
    pub created: Vec<sigcomp::StateId>,
}

/// A flow run between the two endpoints: the per-message table of the SigComp
/// performance thesis's Appendix H and its totals.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowReport {
    /// One row per message, in flow order.
    pub messages: Vec<MessageReport>,
    /// Bytes of every message as SIP.
    pub uncompressed: usize,
    /// Bytes of every SigComp message as sent, framing included on a stream.
    pub sigcomp: usize,
    /// `sigcomp / uncompressed` over the flow (the uncompressed total taken as at
    /// least 1).
    pub ratio: f64,
    /// The SigComp messages in order, as (sender, bytes on the wire).
    pub wire: Vec<(Side, Vec<u8>)>,
}

/// Why a flow could not be run to its end; every message must decompress to its
/// original bytes.
#[derive(Debug)]
pub enum FlowError {
    /// An endpoint could not be built from the parameters and configuration.
    Setup(EndpointError),
    /// The sender could not compress a message.
    Compress {
        /// The message, as `NN-sender-name` (its index in the flow, its sender and name).
        message: String,
        /// Why compression failed.
        error: CompressError,
    },
    /// The receiver's UDVM failed on a message (RFC 3320 §8.7).
    Decompress {
        /// The message, as `NN-sender-name`.
        message: String,
        /// The decompression failure the receiver reported.
        failure: sigcomp::Failure,
    },
    /// A message decompressed to other bytes than were sent, or a stream
    /// frame or NACK came where a message was expected.
    Mismatch {
        /// The message, as `NN-sender-name`.
        message: String,
    },
}

impl std::fmt::Display for FlowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlowError::Setup(e) => write!(f, "endpoint set-up failed: {e}"),
            FlowError::Compress { message, error } => write!(f, "{message}: compression failed: {error}"),
            FlowError::Decompress { message, failure } => {
                write!(f, "{message}: the receiver could not decompress it: {failure}")
            }
            FlowError::Mismatch { message } => {
                write!(f, "{message}: decompressed bytes differ from the original")
            }
        }
    }
}

impl std::error::Error for FlowError {}

/// Runs `messages` through a UE and a P-CSCF offering `params` each.
pub fn run(messages: &[FlowMessage], params: Params, config: Config) -> Result<FlowReport, FlowError> {
    let mk = || Endpoint::new(EndpointConfig::new(params, params, config)).map_err(FlowError::Setup);
    let mut ue = mk()?;
    let mut pcscf = mk()?;
    let stream = config.transport == Transport::Stream;
    let mut deframers = [sigcomp::wire::Deframer::new(1 << 20), sigcomp::wire::Deframer::new(1 << 20)];
    let mut report = FlowReport { messages: Vec::new(), uncompressed: 0, sigcomp: 0, ratio: 0.0, wire: Vec::new() };
    for m in messages {
        let label = format!("{:02}-{}-{}", m.index, m.sender.name(), m.name);
        let (tx, rx, rx_idx) = match m.sender {
            Side::Ue => (&mut ue, &mut pcscf, 1),
            Side::Pcscf => (&mut pcscf, &mut ue, 0),
        };
        let t0 = Instant::now();
        let c =
            tx.compress(t0, PEER, &m.bytes).map_err(|error| FlowError::Compress { message: label.clone(), error })?;
        let compress_us = t0.elapsed().as_secs_f64() * 1e6;
        let wire = if stream {
            let mut framed = Vec::with_capacity(c.message.len() + 8);
            sigcomp::wire::frame_for_stream(&c.message, &mut framed);
            framed
        } else {
            c.message.clone()
        };
        // The receiver sees exactly the wire bytes.
        let t1 = Instant::now();
        let unframed = if stream {
            let mut frames = Vec::new();
            deframers[rx_idx].push(&wire, &mut frames);
            match frames.pop() {
                Some(sigcomp::wire::Frame::Message(b)) => b,
                _ => return Err(FlowError::Mismatch { message: label }),
            }
        } else {
            wire.clone()
        };
        let got = rx
            .receive(&unframed, config.transport)
            .map_err(|e| FlowError::Decompress { message: label.clone(), failure: e.failure })?;
        let accepted = match got {
            Received::Message(incoming) => rx.accept(t1, incoming, PEER),
            Received::Nack(_) => return Err(FlowError::Mismatch { message: label }),
        };
        let decompress_us = t1.elapsed().as_secs_f64() * 1e6;
        let (output, cycles) = (accepted.message, accepted.cycles);
        if output != m.bytes {
            return Err(FlowError::Mismatch { message: label });
        }
        let state_memory = rx.decompressor().states().compartment(PEER).map(|c| c.used).unwrap_or(0);
        report.uncompressed += m.bytes.len();
        report.sigcomp += wire.len();
        report.messages.push(MessageReport {
            name: m.name.clone(),
            direction: m.sender.direction(),
            uncompressed: m.bytes.len(),
            payload: c.payload_len,
            sigcomp: wire.len(),
            uploaded_bytecode: c.uploaded_bytecode,
            state_memory,
            ratio: wire.len() as f64 / m.bytes.len() as f64,
            compress_us,
            decompress_us,
            cycles,
            used_state: c.used_state,
            used_shared: c.used_shared,
            created: c.requested.clone(),
        });
        report.wire.push((m.sender, wire));
    }
    report.ratio = report.sigcomp as f64 / report.uncompressed.max(1) as f64;
    Ok(report)
}

/// The algorithms this build of `sigcomp-compress` has.
pub const ALGORITHMS: &[sigcomp_compress::Algorithm] = sigcomp_compress::Algorithm::ALL;

/// Names an algorithm may be asked for, including ones planned but not yet
/// implemented: asking for those is a clear error, not a crash.
pub const PLANNED_ALGORITHMS: &[&str] = &["lzss", "deflate", "lz77"];

/// Parses an algorithm name; an unknown or not-yet-available one is an
/// error saying which ones exist.
pub fn parse_algorithm(name: &str) -> Result<sigcomp_compress::Algorithm, AlgorithmError> {
    if let Some(a) = ALGORITHMS.iter().find(|a| a.name() == name) {
        return Ok(*a);
    }
    if PLANNED_ALGORITHMS.contains(&name) {
        Err(AlgorithmError::NotAvailable(name.to_string()))
    } else {
        Err(AlgorithmError::Unknown(name.to_string()))
    }
}

/// An algorithm name [`parse_algorithm`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlgorithmError {
    /// One of [`PLANNED_ALGORITHMS`] this build does not have.
    #[error("algorithm {0} is not available yet in sigcomp-compress (available: {available})", available = available_algorithms())]
    NotAvailable(String),
    /// A name that is neither available nor planned.
    #[error("unknown algorithm {0:?} (available: {available})", available = available_algorithms())]
    Unknown(String),
}

/// The names of [`ALGORITHMS`], comma-separated.
fn available_algorithms() -> String {
    ALGORITHMS.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names_refused_say_which_exist() {
        assert_eq!(parse_algorithm("lzss"), Ok(sigcomp_compress::Algorithm::Lzss));
        let e = parse_algorithm("zip").unwrap_err();
        assert_eq!(e, AlgorithmError::Unknown("zip".into()));
        assert!(e.to_string().starts_with("unknown algorithm \"zip\" (available: lzss"), "{e}");
        for planned in PLANNED_ALGORITHMS {
            match parse_algorithm(planned) {
                Ok(a) => assert_eq!(a.name(), *planned),
                Err(e) => assert_eq!(e, AlgorithmError::NotAvailable(planned.to_string())),
            }
        }
    }
}
