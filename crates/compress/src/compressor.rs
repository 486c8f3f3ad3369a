//! The compressor of one compartment (RFC 3320 §5, RFC 3321 mechanisms as
//! seed 000 §3.4 and §7.11 describe them, with RFC 4896's corrections).
//!
//! The compressor keeps a *model* of the peer's compartment: a real
//! [`Decompressor`] with the peer's parameters, into which it feeds every
//! message it sends. That model does three jobs at once: it proves each
//! message decompresses to the original bytes within the peer's cycles and
//! memory before it leaves (RFC 3320 §5.1), it yields the exact state the
//! peer will create (snapshot identifiers and memory images, so the next
//! message's window is known byte for byte), and it tracks the peer's state
//! memory, so a state that the peer's retention rules have evicted is
//! never referenced.

use std::collections::HashMap;
use std::sync::Arc;

use sigcomp::nack::{NackParseError, NackReport, SentLog, SentRecord};
use sigcomp::udvm::StateRequest;
use sigcomp::wire;
use sigcomp::{CompartmentId, Decompressor, Params, State, StateId, Transport};

use crate::bits::BitWriter;
use crate::bytecode::{self, Bytecode, Layout};
use crate::dictionary::Priorities;
use crate::lzss::{self, Effort, LzssFormat};

/// Compression algorithm (its bytecode and encoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// The modified LZSS of seed 000 §7.8.4.
    Lzss,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Lzss => "lzss",
        }
    }
}

/// How much state the compressor builds at the peer (seed 000 §9.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// Bytecode uploaded in every message; nothing saved.
    Basic,
    /// The bytecode is saved as state and named in later headers.
    Static,
    /// Each message saves the decompressor's memory (bytecode, dictionary
    /// part, history); later messages continue from the newest one the
    /// peer has acknowledged.
    Dynamic,
    /// Dynamic, plus messages received from the peer are used as history
    /// (RFC 3321 shared mode): each side saves what it sends.
    Shared,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Basic => "basic",
            Mechanism::Static => "static",
            Mechanism::Dynamic => "dynamic",
            Mechanism::Shared => "shared",
        }
    }

    pub fn parse(s: &str) -> Option<Mechanism> {
        [Mechanism::Basic, Mechanism::Static, Mechanism::Dynamic, Mechanism::Shared]
            .into_iter()
            .find(|m| m.name() == s)
    }

    fn saves_snapshots(self) -> bool {
        matches!(self, Mechanism::Dynamic | Mechanism::Shared)
    }
}

/// Compressor settings.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub algorithm: Algorithm,
    pub mechanism: Mechanism,
    /// Message-based (UDP): states are used only once acknowledged.
    /// Stream-based (TCP): states are usable once sent.
    pub transport: Transport,
    /// Longest match: 18, 66 or 258 bytes.
    pub lookahead: usize,
    /// Part of the SIP/SDP dictionary in the window; None for none.
    pub dictionary: Option<Priorities>,
    pub effort: Effort,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            algorithm: Algorithm::Lzss,
            mechanism: Mechanism::Shared,
            transport: Transport::Message,
            lookahead: 258,
            dictionary: Priorities::new(1, 3),
            effort: Effort::default(),
        }
    }
}

/// Why a message could not be compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompressError {
    /// The lookahead is not 18, 66 or 258 (or another 2^k + 2).
    BadLookahead(usize),
    /// The peer's memory is too small for this bytecode.
    PeerTooSmall { dms: u32 },
    /// The message, compressed, does not fit the peer's memory or cycles:
    /// the model decompressor failed.
    DoesNotFit(sigcomp::Failure),
    /// The model decompressed something else (a bug; never sent).
    Mismatch,
}

impl std::fmt::Display for CompressError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompressError::BadLookahead(n) => write!(f, "look-ahead {n} is not 18, 66 or 258"),
            CompressError::PeerTooSmall { dms } => {
                write!(f, "a decompression memory of {dms} bytes is too small for the bytecode")
            }
            CompressError::DoesNotFit(fl) => {
                write!(f, "the compressed message would fail at the peer: {fl}")
            }
            CompressError::Mismatch => f.write_str("model decompression differs from the input"),
        }
    }
}

impl std::error::Error for CompressError {}

/// One saved decompressor memory (dynamic mechanism).
#[derive(Debug, Clone)]
struct Snapshot {
    id: StateId,
    /// UDVM memory from address 64 to buffer_end.
    memory: Arc<[u8]>,
    usable: bool,
    /// The peer shared state already in this snapshot's history.
    shared_loaded: Option<StateId>,
}

/// What one compressed message was, for reports.
#[derive(Debug, Clone, Default)]
pub struct Compressed {
    pub message: Vec<u8>,
    /// Bytes of the compressed payload (tokens), without header and flags.
    pub payload_len: usize,
    pub uploaded_bytecode: bool,
    pub used_state: Option<StateId>,
    pub used_shared: Option<StateId>,
    /// States the message asks the peer to create.
    pub requested: Vec<StateId>,
    /// The message announces itself as our shared state (id to create locally).
    pub announced: Option<State>,
}

/// The compressor of one compartment.
pub struct Compressor {
    config: Config,
    peer: Params,
    local: Params,
    layout: Layout,
    bytecode: Bytecode,
    bytecode_usable: bool,
    bytecode_requested: bool,
    snapshots: Vec<Snapshot>,
    seq: u8,
    /// Feedback item → states it acknowledges.
    awaiting: HashMap<u8, Vec<StateId>>,
    peer_shared: Option<State>,
    model: Decompressor,
    sent: SentLog,
}

const MODEL: CompartmentId = CompartmentId(0);

/// Room kept for the peer's own shared state in its compartment.
const SHARED_RESERVE: u32 = 1200;

impl Compressor {
    /// A compressor sending to a peer that offers `peer`; `local` is what
    /// this endpoint offers (announced to the peer).
    pub fn new(config: Config, peer: Params, local: Params) -> Result<Compressor, CompressError> {
        let length_bits = LzssFormat::length_bits_for(config.lookahead)
            .ok_or(CompressError::BadLookahead(config.lookahead))?;
        let layout = Layout::plan(&peer, config.transport, config.mechanism.saves_snapshots(), SHARED_RESERVE, length_bits)
            .ok_or(CompressError::PeerTooSmall { dms: peer.dms })?;
        let bytecode = bytecode::lzss(&layout, length_bits, config.dictionary, &local);
        let model = Decompressor::new(peer).map_err(|_| CompressError::PeerTooSmall { dms: peer.dms })?;
        Ok(Compressor {
            config,
            peer,
            local,
            layout,
            bytecode,
            bytecode_usable: false,
            bytecode_requested: false,
            snapshots: Vec::new(),
            seq: 0,
            awaiting: HashMap::new(),
            peer_shared: None,
            model,
            sent: SentLog::new(256),
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn peer(&self) -> &Params {
        &self.peer
    }

    pub fn local(&self) -> &Params {
        &self.local
    }

    /// Bytes of state the model says the peer holds for this compartment.
    pub fn peer_state_memory(&self) -> u32 {
        self.model.states().compartment(MODEL).map(|c| c.used).unwrap_or(0)
    }

    fn in_model(&self, id: &StateId) -> bool {
        self.model
            .states()
            .compartment(MODEL)
            .is_some_and(|c| c.entries.iter().any(|e| e.id == *id))
    }

    /// The peer echoed a feedback item we requested (RFC 3320 §5): the
    /// message that carried it was decompressed and its states created.
    pub fn on_returned_feedback(&mut self, item: &[u8]) {
        if let [b] = item {
            if let Some(ids) = self.awaiting.remove(b) {
                for id in ids {
                    if id == self.bytecode.state_id {
                        self.bytecode_usable = true;
                    }
                    if let Some(s) = self.snapshots.iter_mut().find(|s| s.id == id) {
                        s.usable = true;
                    }
                }
            }
        }
    }

    /// The peer saved a message it sent us as a shared state and announced
    /// its identifier (RFC 3321 shared mode). `message` is what we
    /// decompressed; `announced` the partial identifier in the returned
    /// parameters. Returns whether they match.
    pub fn on_peer_shared_state(&mut self, message: &[u8], announced: &[u8]) -> bool {
        let state = State::new(0, 0, 6, message);
        if announced.len() < 6 || !state.id.0.starts_with(announced) {
            return false;
        }
        // Model the peer's local creation (priority 65535: freed first).
        if let Some(old) = self.peer_shared.take() {
            self.model.states_mut().free(MODEL, &old.id.0);
        }
        self.model.states_mut().create(MODEL, 0, 0, 6, message, 65535);
        if self.in_model(&state.id) {
            self.peer_shared = Some(state);
        }
        true
    }

    /// A NACK from the peer (RFC 4077 §2.3): forget what it lost.
    pub fn on_nack(&mut self, nack: &[u8]) -> Result<NackReport, NackParseError> {
        let report = self.sent.on_nack(nack)?;
        let mut gone: Vec<StateId> = report.lost_states.clone();
        gone.extend(report.not_created.iter().copied());
        if report.record.is_none() || report.nack.reason == sigcomp::Reason::StateNotFound && gone.is_empty() {
            // Unknown message or no detail: start over from the bytecode.
            gone.extend(self.snapshots.iter().map(|s| s.id));
            gone.push(self.bytecode.state_id);
        }
        for id in gone {
            self.model.states_mut().free(MODEL, &id.0);
            self.snapshots.retain(|s| s.id != id);
            if id == self.bytecode.state_id {
                self.bytecode_usable = false;
                self.bytecode_requested = false;
            }
            if self.peer_shared.as_ref().is_some_and(|s| s.id == id) {
                self.peer_shared = None;
            }
        }
        Ok(report)
    }

    fn next_seq(&mut self) -> u8 {
        self.seq = (self.seq + 1) % 128;
        self.seq
    }

    /// Compresses one application message. `returned_feedback` is the item
    /// the peer asked us to echo (it goes into the header, RFC 3320 §7.1).
    /// `announce` asks for the message to be announced as our shared state
    /// (the caller then creates it locally, see [`Compressed::announced`]).
    pub fn compress(
        &mut self,
        message: &[u8],
        returned_feedback: Option<&[u8]>,
        announce: bool,
    ) -> Result<Compressed, CompressError> {
        let mech = self.config.mechanism;
        let stream = self.config.transport == Transport::Stream;
        // The newest snapshot the peer holds and we may use.
        let base = if mech.saves_snapshots() {
            self.snapshots.iter().rev().find(|s| s.usable && self.in_model(&s.id)).cloned()
        } else {
            None
        };
        let use_bytecode_state =
            base.is_none() && mech == Mechanism::Static && self.bytecode_usable && self.in_model(&self.bytecode.state_id);

        let w = usize::from(self.layout.buffer_size);
        let mut history: Vec<u8> = match &base {
            Some(s) => self.layout.window_of(&s.memory),
            None => self.bytecode.fresh_window(&self.layout),
        };
        let mut flags = 0u8;
        let mut input = vec![0u8];
        let mut used_shared = None;
        if mech == Mechanism::Shared {
            if let Some(ps) = &self.peer_shared {
                let already = base.as_ref().is_some_and(|b| b.shared_loaded == Some(ps.id));
                if !already && ps.len() + 8 < w && self.in_model(&ps.id) {
                    flags |= 0x80;
                    input.extend_from_slice(&ps.id.0[..6]);
                    input.extend_from_slice(&(ps.len() as u16).to_be_bytes());
                    history.extend_from_slice(&ps.value);
                    used_shared = Some(ps.id);
                }
            }
        }
        let wants_ack = !stream
            && (mech.saves_snapshots() || (mech == Mechanism::Static && !self.bytecode_usable));
        let seq = if wants_ack { Some(self.next_seq()) } else { None };
        if let Some(seq) = seq {
            flags |= 0x40;
            input.push(seq);
        }
        if mech.saves_snapshots() {
            flags |= 0x08;
        }
        if mech == Mechanism::Static && !self.bytecode_usable && !use_bytecode_state {
            flags |= 0x10;
        }
        let announced = announce && mech == Mechanism::Shared && message.len() + 8 < w;
        if announced {
            flags |= 0x20;
            history.extend_from_slice(&[0u8; 8]);
        }
        input[0] = flags;
        let window = &history[history.len() - w..];
        let format = self.layout.format;
        let mut bw = BitWriter::default();
        match self.config.algorithm {
            Algorithm::Lzss => lzss::encode(window, message, format, self.config.effort, &mut bw),
        }
        let tokens = bw.finish();
        let payload_len = tokens.len();
        input.extend_from_slice(&tokens);

        let (sig, uploaded, used_state) = if let Some(s) = &base {
            (wire::emit_state_message(returned_feedback, &s.id.0[..6], &input), false, Some(s.id))
        } else if use_bytecode_state {
            let id = self.bytecode.state_id;
            (wire::emit_state_message(returned_feedback, &id.0[..6], &input), false, Some(id))
        } else {
            (
                wire::emit_bytecode_message(returned_feedback, &self.bytecode.code, 128, &input),
                true,
                None,
            )
        };

        // Run the peer's decompressor on it (RFC 3320 §5.1).
        let d = self
            .model
            .decompress(&sig, self.config.transport)
            .map_err(CompressError::DoesNotFit)?;
        if d.output != message {
            return Err(CompressError::Mismatch);
        }
        let mut snapshot = None;
        for r in &d.pending.requests {
            if let StateRequest::Create(c) = r {
                if c.address == 64 {
                    snapshot = Some(Arc::<[u8]>::from(c.value.as_slice()));
                }
            }
        }
        let accepted = self.model.accept(d.pending, MODEL);
        let mut requested = Vec::new();
        for id in &accepted.created {
            requested.push(*id);
            if *id == self.bytecode.state_id {
                self.bytecode_requested = true;
                if stream {
                    self.bytecode_usable = true;
                }
            } else if let Some(mem) = &snapshot {
                if !self.snapshots.iter().any(|s| s.id == *id) {
                    self.snapshots.push(Snapshot {
                        id: *id,
                        memory: mem.clone(),
                        usable: stream,
                        shared_loaded: used_shared.or(base.as_ref().and_then(|b| b.shared_loaded)),
                    });
                }
            }
        }
        // Keep only snapshots the peer may still hold.
        let model = &self.model;
        self.snapshots.retain(|s| {
            model.states().compartment(MODEL).is_some_and(|c| c.entries.iter().any(|e| e.id == s.id))
        });
        if let Some(seq) = seq {
            self.awaiting.insert(seq, requested.clone());
        }
        let mut used = Vec::new();
        used.extend(used_state);
        used.extend(used_shared);
        if self.config.dictionary.is_some() && base.is_none() {
            used.push(StateId(sigcomp::dict::SIP_SDP_ID));
        }
        self.sent.record(
            &sig,
            SentRecord { compartment: MODEL, states_used: used, states_requested: requested.clone() },
        );
        Ok(Compressed {
            message: sig,
            payload_len,
            uploaded_bytecode: uploaded,
            used_state,
            used_shared,
            requested,
            announced: announced.then(|| State::new(0, 0, 6, message)),
        })
    }
}
