//! A sans-IO SigComp endpoint: the decompressor for what peers send and a
//! compressor per compartment for what we send, tied together by feedback
//! (RFC 3320 §3.2, §6.3), shared states (RFC 3321) and NACKs (RFC 4077).
//!
//! The endpoint has no sockets and no clock. The application feeds it what
//! arrives and the time, and sends what it returns:
//!
//! 1. [`Endpoint::receive`] decompresses a message before anyone knows its
//!    compartment (RFC 3320 §4: the application learns that from the
//!    decompressed message, e.g. its SIP `sigcomp-id`, RFC 5049 §4). It
//!    returns an [`Incoming`], or a [`ReceiveError`] carrying the NACK to
//!    send back (RFC 4077 §2.2). A NACK from a peer is acted on at once.
//! 2. The application then either [`Endpoint::accept`]s the message under
//!    a compartment, which carries out its state requests and keeps its
//!    feedback, or [`Endpoint::discard`]s it (an unauthenticated REGISTER,
//!    a message that fails SIP parsing), which creates nothing (RFC 3320
//!    §4.3, §6.2; RFC 5049 §4).
//! 3. [`Endpoint::compress`] compresses a message for a compartment's peer.
//!
//! Each compartment has its own peer: its parameters are assumed from
//! [`EndpointConfig::assumed_peer`] until the peer announces its own
//! (RFC 3320 §9.4.9) or a NACK tells them (RFC 4077 §2.3), and its
//! transport is the one its messages arrive on. Compartments end when the
//! application closes them, after [`EndpointConfig::idle_timeout`]
//! ([`Endpoint::poll_timeout`], [`Endpoint::handle_timeout`]), or when the
//! limits of [`EndpointConfig::limits`] evict the least recently used one
//! (RFC 5049 §5 leaves the choice of which to the application).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sigcomp::nack::NackReport;
use sigcomp::state::PackDictionary;
use sigcomp::{CompartmentId, Decompressor, Failure, Limits, Nack, Params, Pending, Reason, State, StateId, Transport};

use crate::compressor::{AnnounceMessage, CompressError, Compressed, Compressor, Config, Mechanism};

/// How an endpoint behaves toward every peer.
#[derive(Debug, Clone, Copy)]
pub struct EndpointConfig {
    /// What this endpoint offers to its peers (RFC 3320 §3.3): its
    /// decompression memory, state memory per compartment and cycles.
    pub local: Params,
    /// What a peer is assumed to offer until it announces its own
    /// parameters or a NACK reveals them.
    pub assumed_peer: Params,
    /// How to compress. Its `transport` applies to a compartment that
    /// sends before it has received anything
    /// ([`Endpoint::open_compartment`] sets another).
    pub compressor: Config,
    /// A compartment with no message accepted or compressed for this long
    /// is closed by [`Endpoint::handle_timeout`]; `None` keeps it until
    /// closed or evicted.
    pub idle_timeout: Option<Duration>,
    /// Caps on the number of compartments and their total state memory;
    /// beyond them the least recently used compartment is closed.
    pub limits: Limits,
    /// How many of the most recently used compartments keep their
    /// compressor's scratch and unpacked states
    /// ([`Endpoint::set_scratch_compartments`]).
    pub hot_compartments: usize,
}

impl EndpointConfig {
    /// An endpoint offering `local`, assuming `assumed_peer` of new peers,
    /// compressing with `compressor`; no idle timeout, the default limits.
    pub fn new(local: Params, assumed_peer: Params, compressor: Config) -> EndpointConfig {
        EndpointConfig {
            local,
            assumed_peer,
            compressor,
            idle_timeout: None,
            limits: Limits::default(),
            hot_compartments: DEFAULT_SCRATCH_COMPARTMENTS,
        }
    }
}

/// How many compartments keep their compressor's scratch by default: a
/// busy server's active calls keep their chains; the thousands of idle
/// compartments hold only their states.
pub const DEFAULT_SCRATCH_COMPARTMENTS: usize = 64;

/// Sent messages whose compartment a NACK can be traced to (RFC 4077 §2.3
/// names a failed message by its SHA-1 only). A NACK answers within about
/// a round trip; this many of the most recent messages, over all
/// compartments, covers a few seconds of a busy proxy.
const SENT_INDEX: usize = 65_536;

/// The key of a sent message in the endpoint's index of them: the first 8
/// bytes of its SHA-1 (RFC 4077 §3.1), which is all a lookup needs: two of
/// the 65,536 messages indexed share them by chance once in about 2^33
/// such indexes, and a peer cannot aim a NACK at a message it never saw,
/// whose digest it does not know. The compartment's compressor then reads
/// its own record of the message by the whole digest. Half the index's
/// memory of whole digests.
fn sent_key(sha1: &[u8; 20]) -> u64 {
    let mut k = [0u8; 8];
    k.copy_from_slice(&sha1[..8]);
    u64::from_le_bytes(k)
}

/// Idle compartments packed against one [`PackDictionary`] before the
/// endpoint takes new samples from the next one: what its compartments
/// have in common changes as its traffic does. A pack holds the
/// dictionary it was made against, so the dictionaries alive are at most
/// one per this many idle compartments, each at most 64 KiB.
const PACK_SAMPLES_EVERY: u64 = 1024;

/// Bytes of state values a compartment must hold to serve as samples: a
/// compartment that has only just started (a lone REGISTER) would make a
/// poor dictionary for whole calls.
const MIN_PACK_SAMPLES: usize = 2048;

/// Why an endpoint cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointError {
    /// The parameters this endpoint offers are not valid SigComp values.
    LocalParams(sigcomp::params::ParamError),
    /// The parameters assumed of peers are not valid SigComp values.
    AssumedPeerParams(sigcomp::params::ParamError),
    /// The compressor configuration does not work for the assumed peer.
    Compressor(CompressError),
}

impl std::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndpointError::LocalParams(e) => write!(f, "local parameters: {e}"),
            EndpointError::AssumedPeerParams(e) => write!(f, "assumed peer parameters: {e}"),
            EndpointError::Compressor(e) => write!(f, "compressor: {e}"),
        }
    }
}

impl std::error::Error for EndpointError {}

/// A message that failed to decompress (RFC 3320 §8.7), with the NACK to
/// send back to its sender (RFC 4077 §2.2); `None` for a message that was
/// itself a NACK, which is never answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiveError {
    /// Why decompression failed: the RFC 4077 reason code and details,
    /// the failing instruction, and the UDVM cycles spent before it.
    pub failure: Failure,
    /// The NACK message to send to the peer (RFC 4077 §3.1); `None` for a
    /// message that was itself a NACK.
    pub nack: Option<Vec<u8>>,
}

impl ReceiveError {
    /// The RFC 4077 reason code of the failure.
    pub fn reason(&self) -> Reason {
        self.failure.reason
    }
}

impl std::fmt::Display for ReceiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "decompression failed: {}", self.failure)
    }
}

impl std::error::Error for ReceiveError {}

/// What receiving one SigComp message gave.
#[derive(Debug)]
pub enum Received {
    /// A decompressed message, waiting for the application to accept it
    /// under a compartment or to discard it.
    Message(Incoming),
    /// A NACK from a peer for a message we sent; already acted on.
    Nack(ReceivedNack),
}

/// A NACK that arrived (RFC 4077 §2.3).
#[derive(Debug, Clone)]
pub struct ReceivedNack {
    /// The reason code the peer gave (RFC 4077 §3.2).
    pub reason: Reason,
    /// The compartment whose message failed, if the NACK names a message
    /// this endpoint still remembers sending.
    pub compartment: Option<CompartmentId>,
    /// How that compartment's compressor read it: the states the peer
    /// lacks, its real cycles or memory. `None` when unmatched.
    pub report: Option<NackReport>,
}

/// A decompressed message whose state requests and feedback wait for the
/// application's decision ([`Endpoint::accept`] or [`Endpoint::discard`]).
#[derive(Debug)]
#[must_use = "accept or discard the message"]
pub struct Incoming {
    output: Vec<u8>,
    cycles: u64,
    transport: Transport,
    pending: Pending,
    uploaded_bytecode: bool,
}

impl Incoming {
    /// The decompressed message.
    pub fn message(&self) -> &[u8] {
        &self.output
    }

    /// UDVM cycles the message took.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// The transport it arrived on.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Whether the message carried its bytecode (RFC 3320 §7: `len` = 00)
    /// rather than naming a state that holds it. A peer that uploads again
    /// into a compartment where it had state has lost its model of ours.
    pub fn uploaded_bytecode(&self) -> bool {
        self.uploaded_bytecode
    }

    /// Whether accepting it would create or free state.
    pub fn requests_state(&self) -> bool {
        !self.pending.requests.is_empty()
    }

    /// Bytes this message holds while it waits for a decision: its output,
    /// its state requests' values (up to four creations, RFC 3320 §9.4.9)
    /// and its feedback, each with the size of its own record.
    pub fn held_bytes(&self) -> usize {
        use sigcomp::udvm::StateRequest;
        let requests: usize = self
            .pending
            .requests
            .iter()
            .map(|r| {
                std::mem::size_of::<StateRequest>()
                    + match r {
                        StateRequest::Create(c) => c.value.len(),
                        StateRequest::Free(id) => id.len(),
                    }
            })
            .sum();
        let p = &self.pending;
        let feedback = p.returned_feedback.as_ref().map_or(0, Vec::len)
            + p.requested_feedback.as_ref().and_then(|f| f.item.as_ref()).map_or(0, Vec::len)
            + p.returned_parameters.as_ref().map_or(0, |r| r.local_states.iter().map(Vec::len).sum());
        std::mem::size_of::<Incoming>() + self.output.len() + requests + feedback
    }
}

/// What accepting a message did.
#[derive(Debug, Clone, Default)]
pub struct Accepted {
    /// The decompressed message.
    pub message: Vec<u8>,
    /// UDVM cycles the decompression took (RFC 3320 §8.6).
    pub cycles: u64,
    /// States created or refreshed in the compartment, in request order.
    pub created: Vec<StateId>,
    /// Creation requests turned down (SMS 0, identifier clash).
    pub rejected: usize,
    /// States the message's STATE-FREE requests removed from the
    /// compartment (RFC 3320 §9.4.7).
    pub freed: Vec<StateId>,
    /// Other compartments closed to stay within the limits.
    pub evicted: Vec<CompartmentId>,
}

/// Counters of an endpoint, for metrics.
#[derive(Debug, Clone, Default)]
pub struct EndpointMetrics {
    /// Compartments open.
    pub compartments: usize,
    /// State memory used by all compartments (RFC 3320 §6.2 accounting).
    pub state_bytes: usize,
    /// SigComp messages passed to [`Endpoint::receive`], NACKs and
    /// failures included.
    pub messages_received: u64,
    /// Bytes of those messages (a stream's record marking removed).
    pub bytes_received: u64,
    /// Messages the application accepted under a compartment
    /// ([`Endpoint::accept`]).
    pub messages_accepted: u64,
    /// Messages the application discarded ([`Endpoint::discard`]): their
    /// state requests and feedback were dropped.
    pub messages_discarded: u64,
    /// Decompressed bytes of accepted and discarded messages.
    pub bytes_decompressed: u64,
    /// UDVM cycles run, failed runs included.
    pub cycles: u64,
    /// Decompression failures by RFC 4077 reason code.
    pub failures: [u64; 32],
    /// NACKs returned with a [`ReceiveError`] for the application to send
    /// (RFC 4077 §2.2).
    pub nacks_sent: u64,
    /// NACKs received from peers (RFC 4077 §2.3).
    pub nacks_received: u64,
    /// `nacks_sent` by RFC 4077 reason code (the index); a failure with
    /// no NACK (of a message that was itself a NACK) is in `failures` only.
    pub nacks_sent_by_reason: [u64; 32],
    /// `nacks_received` by RFC 4077 reason code (the index).
    pub nacks_received_by_reason: [u64; 32],
    /// Messages compressed by [`Endpoint::compress`].
    pub messages_sent: u64,
    /// Bytes of those SigComp messages (without record marking).
    pub bytes_sent: u64,
    /// Uncompressed bytes of the messages sent.
    pub bytes_compressed_from: u64,
    /// Compartments closed to stay within the limits (the state
    /// handler's count).
    pub compartments_evicted: u64,
    /// Compartments closed by [`Endpoint::handle_timeout`] after
    /// [`EndpointConfig::idle_timeout`] without a message.
    pub compartments_timed_out: u64,
}

/// Another endpoint's counts added to these: the endpoints of a sharded
/// proxy, one per shard, read as one.
impl std::ops::AddAssign<&EndpointMetrics> for EndpointMetrics {
    fn add_assign(&mut self, o: &EndpointMetrics) {
        fn add<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        self.compartments += o.compartments;
        self.state_bytes += o.state_bytes;
        self.messages_received += o.messages_received;
        self.bytes_received += o.bytes_received;
        self.messages_accepted += o.messages_accepted;
        self.messages_discarded += o.messages_discarded;
        self.bytes_decompressed += o.bytes_decompressed;
        self.cycles += o.cycles;
        add(&mut self.failures, &o.failures);
        self.nacks_sent += o.nacks_sent;
        self.nacks_received += o.nacks_received;
        add(&mut self.nacks_sent_by_reason, &o.nacks_sent_by_reason);
        add(&mut self.nacks_received_by_reason, &o.nacks_received_by_reason);
        self.messages_sent += o.messages_sent;
        self.bytes_sent += o.bytes_sent;
        self.bytes_compressed_from += o.bytes_compressed_from;
        self.compartments_evicted += o.compartments_evicted;
        self.compartments_timed_out += o.compartments_timed_out;
    }
}

impl EndpointMetrics {
    /// Failures with `reason`.
    pub fn failures(&self, reason: Reason) -> u64 {
        self.failures.get(usize::from(reason.code())).copied().unwrap_or(0)
    }
}

/// One peer as this endpoint knows it.
struct Compartment {
    transport: Transport,
    peer: Params,
    /// Boxed: a compartment that only receives holds a pointer.
    compressor: Option<Box<Compressor>>,
    /// The last feedback item echoed to the peer: an item is returned
    /// once (a lost echo only delays the peer's use of state).
    echoed: Option<Vec<u8>>,
    /// Key in [`Endpoint::idle`], once the compartment has been used.
    active: Option<(Instant, u64)>,
    /// The peer NACKed the RFC 3485 SIP/SDP dictionary as STATE_NOT_FOUND:
    /// it lacks what RFC 5049 §3 makes the minimum locally available state,
    /// so this compartment compresses without it rather than fail every
    /// message.
    without_dictionary: bool,
}

/// A SigComp endpoint: one decompressor (RFC 3320 §4.2) for every
/// compartment's incoming messages and a compressor per compartment for
/// outgoing ones, with the feedback, shared states and NACKs between them
/// (see the module documentation for the order of calls).
pub struct Endpoint {
    config: EndpointConfig,
    decompressor: Decompressor,
    compartments: HashMap<CompartmentId, Compartment>,
    /// Compartments by last activity, oldest first (idle timeout).
    idle: BTreeMap<(Instant, u64), CompartmentId>,
    activity_seq: u64,
    /// Recently sent messages, by [`sent_key`] of their SHA-1 → their
    /// compartment, for NACKs.
    sent: HashMap<u64, CompartmentId>,
    sent_order: VecDeque<u64>,
    /// Compartments whose compressors keep their scratch (match finder,
    /// model UDVM memory), least recently used first.
    hot: VecDeque<CompartmentId>,
    factory: CompressorFactory,
    metrics: EndpointMetrics,
    /// Whether [`Endpoint::sample_pack_dictionary`] has taken samples.
    pack_samples_taken: bool,
    /// Compartments packed since it last did.
    packs_since_samples: u64,
}

/// Builds the compressors of an endpoint's compartments, sharing what
/// they have in common.
struct CompressorFactory {
    config: Config,
    local: Params,
    /// A user-specific dictionary the peers hold (RFC 3321 §3.3).
    user_dictionary: Option<Arc<[u8]>>,
    /// The bytecode the last new compressor built, shared with the next
    /// ones that build the same.
    bytecode: Option<Arc<crate::bytecode::Bytecode>>,
    /// What `bytecode` was built for: a compressor with the same is given
    /// it instead of building it again.
    built_for: Option<BuildKey>,
    /// A match finder over that bytecode's fresh window, cloned into each
    /// new compressor that shares it.
    fresh_finder: Option<crate::compressor::FreshFinder>,
}

/// What a compressor's bytecode is built from, besides the factory's local
/// parameters and user dictionary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BuildKey {
    algorithm: crate::compressor::Algorithm,
    mechanism: Mechanism,
    transport: Transport,
    lookahead: usize,
    dictionary: Option<crate::dictionary::Priorities>,
    peer: Params,
}

impl CompressorFactory {
    /// A compressor for a peer offering `peer` over `transport`.
    fn build(
        &mut self,
        transport: Transport,
        peer: Params,
        with_dictionary: bool,
        decompressor: &mut Decompressor,
    ) -> Result<Compressor, CompressError> {
        let dictionary = if with_dictionary { self.config.dictionary } else { None };
        let config = Config { transport, dictionary, ..self.config };
        let key = BuildKey {
            algorithm: config.algorithm,
            mechanism: config.mechanism,
            transport,
            lookahead: config.lookahead,
            dictionary,
            peer,
        };
        let user_dictionary = self.user_dictionary.clone();
        let mut c = match &self.bytecode {
            Some(b) if self.built_for == Some(key) => {
                Compressor::with_prebuilt(config, peer, self.local, user_dictionary, b.clone())?
            }
            _ => {
                let mut c = Compressor::with_user_dictionary(config, peer, self.local, user_dictionary)?;
                // One copy of identical bytecode for all compartments.
                match &self.bytecode {
                    Some(b) if c.share_bytecode(b) => {}
                    _ => {
                        self.bytecode = Some(c.bytecode().clone());
                        self.fresh_finder = c.fresh_finder();
                    }
                }
                self.built_for = Some(key);
                c
            }
        };
        if let Some(f) = &self.fresh_finder {
            c.adopt_finder(f.clone());
        }
        // Our decompressor holds the bytecode as a locally available state
        // and the compressor announces it (RFC 3320 §3.3.3): a peer that
        // compresses with the same bytecode (same algorithm, mechanism and
        // parameters) then references it instead of uploading it.
        if config.mechanism != Mechanism::Basic {
            decompressor.states_mut().add_local(c.bytecode_state());
            c.announce_own_bytecode();
        }
        Ok(c)
    }
}

impl Compartment {
    fn new(config: &EndpointConfig) -> Compartment {
        Compartment {
            transport: config.compressor.transport,
            peer: config.assumed_peer,
            compressor: None,
            echoed: None,
            active: None,
            without_dictionary: false,
        }
    }
}

impl Endpoint {
    /// An endpoint with no compartments yet. Fails if `config.local` or
    /// `config.assumed_peer` are not valid SigComp parameters (RFC 3320
    /// §3.3), or if the compressor configuration leaves no room in the
    /// assumed peer's memory.
    pub fn new(config: EndpointConfig) -> Result<Endpoint, EndpointError> {
        config.local.validate().map_err(EndpointError::LocalParams)?;
        config.assumed_peer.validate().map_err(EndpointError::AssumedPeerParams)?;
        let mut decompressor = Decompressor::new(config.local).map_err(EndpointError::LocalParams)?;
        decompressor.set_limits(config.limits);
        // The configuration must work for the assumed peer now, not at the
        // first message.
        Compressor::new(config.compressor, config.assumed_peer, config.local).map_err(EndpointError::Compressor)?;
        Ok(Endpoint {
            config: EndpointConfig { hot_compartments: config.hot_compartments.max(1), ..config },
            decompressor,
            compartments: HashMap::new(),
            idle: BTreeMap::new(),
            activity_seq: 0,
            sent: HashMap::new(),
            sent_order: VecDeque::new(),
            hot: VecDeque::new(),
            factory: CompressorFactory {
                config: config.compressor,
                local: config.local,
                user_dictionary: None,
                bytecode: None,
                built_for: None,
                fresh_finder: None,
            },
            metrics: EndpointMetrics::default(),
            pack_samples_taken: false,
            packs_since_samples: 0,
        })
    }

    /// The configuration the endpoint was made with (the hot-compartment
    /// count as last set, at least 1).
    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }

    /// Compress with `dictionary` in the window instead of the SIP/SDP
    /// dictionary: a user-specific dictionary (RFC 3321 §3.3) that the
    /// peers hold as a state (they called [`Endpoint::add_local_dictionary`]
    /// with the same bytes). Applies to compressors created from now on.
    pub fn set_user_dictionary(&mut self, dictionary: &[u8]) {
        self.factory.user_dictionary = Some(Arc::from(dictionary));
        self.factory.built_for = None;
    }

    /// Makes `dictionary` a locally available state of our decompressor
    /// (identifier `State::new(0, 0, 6, dictionary)`), for peers that
    /// compress with it as their user dictionary.
    pub fn add_local_dictionary(&mut self, dictionary: &[u8]) -> StateId {
        let state = State::new(0, 0, 6, dictionary);
        let id = state.id;
        self.decompressor.states_mut().add_local(state);
        id
    }

    /// Keep at most `n` compartments hot (at least 1), the most recently
    /// used ones. An idle compartment's compressor releases its scratch
    /// ([`Compressor::release_scratch`]), and its states, at our
    /// decompressor and in the compressor's model of the peer, are kept
    /// packed ([`sigcomp::StateHandler::pack_compartment`],
    /// [`Compressor::pack_states`], against a [`PackDictionary`] with
    /// samples of another idle compartment's states): memory per idle
    /// compartment falls from ≈ 90 kB to about 5 kB. A compartment
    /// that becomes active again unpacks its states and rehashes its window
    /// once; nothing it sends or accepts changes.
    pub fn set_scratch_compartments(&mut self, n: usize) {
        self.config.hot_compartments = n.max(1);
        self.trim_scratch();
    }

    fn trim_scratch(&mut self) {
        while self.hot.len() > self.config.hot_compartments {
            let Some(old) = self.hot.pop_front() else { break };
            if let Some(c) = self.compartments.get_mut(&old).and_then(|c| c.compressor.as_mut()) {
                c.release_scratch();
            }
            self.pack_states_of(old);
        }
    }

    /// Packs `compartment`'s states at our decompressor and in its
    /// compressor's model of the peer, against the endpoint's
    /// [`PackDictionary`], whose samples are taken first from this
    /// compartment when they are due ([`PACK_SAMPLES_EVERY`]).
    fn pack_states_of(&mut self, compartment: CompartmentId) {
        if self.packs_since_samples >= PACK_SAMPLES_EVERY || !self.pack_samples_taken {
            self.sample_pack_dictionary(compartment);
        }
        self.packs_since_samples += 1;
        let dictionary = self.decompressor.states().pack_dictionary();
        if let Some(c) = self.compartments.get_mut(&compartment).and_then(|c| c.compressor.as_mut()) {
            c.set_pack_dictionary(dictionary);
            c.pack_states();
        }
        self.decompressor.states_mut().pack_compartment(compartment);
    }

    /// Makes `compartment`'s states, at our decompressor and in its
    /// compressor's model of the peer, the samples of the dictionary the
    /// endpoint's packs are made against from now on, if they are enough
    /// to be worth it ([`MIN_PACK_SAMPLES`]).
    fn sample_pack_dictionary(&mut self, compartment: CompartmentId) {
        let received = self.decompressor.states().packable_values(compartment);
        let sent = self.compressor(compartment).map(Compressor::packable_model_values).unwrap_or_default();
        if received.len() + sent.len() < MIN_PACK_SAMPLES {
            return;
        }
        let dictionary = PackDictionary::with_samples(&[&sent, &received]);
        self.decompressor.states_mut().set_pack_dictionary(dictionary);
        self.pack_samples_taken = true;
        self.packs_since_samples = 0;
    }

    /// Packs `compartment`'s states now, at our decompressor and in its
    /// compressor's model of the peer, as happens when it stops being one
    /// of the hot compartments, but keeping its compressor's scratch: for
    /// an application that knows a peer has gone quiet. The next message
    /// to or from it unpacks them.
    pub fn pack_compartment(&mut self, compartment: CompartmentId) {
        self.pack_states_of(compartment);
        self.hot.retain(|c| *c != compartment);
    }

    /// The decompressor shared by all compartments, with its state
    /// handler (RFC 3320 §6).
    pub fn decompressor(&self) -> &Decompressor {
        &self.decompressor
    }

    /// For tests and fault injection: the decompressor and its states.
    pub fn decompressor_mut(&mut self) -> &mut Decompressor {
        &mut self.decompressor
    }

    /// The compressor of `compartment`, if the compartment is open and
    /// has one (it is made at the first message sent or accepted).
    pub fn compressor(&self, compartment: CompartmentId) -> Option<&Compressor> {
        self.compartments.get(&compartment)?.compressor.as_deref()
    }

    /// Whether `compartment` is open.
    pub fn has_compartment(&self, compartment: CompartmentId) -> bool {
        self.compartments.contains_key(&compartment)
    }

    /// When `compartment` last sent or accepted a message (what its idle
    /// timeout counts from); `None` if it is not open or not used yet.
    pub fn last_active(&self, compartment: CompartmentId) -> Option<Instant> {
        self.compartments.get(&compartment)?.active.map(|(at, _)| at)
    }

    /// The open compartments.
    pub fn compartment_ids(&self) -> impl Iterator<Item = CompartmentId> + '_ {
        self.compartments.keys().copied()
    }

    /// The transport and parameters this endpoint assumes of the peer of
    /// `compartment`.
    pub fn peer(&self, compartment: CompartmentId) -> Option<(Transport, Params)> {
        self.compartments.get(&compartment).map(|c| (c.transport, c.peer))
    }

    /// The counters as of now, with the compartment count, state memory
    /// and evictions read from the state handler.
    pub fn metrics(&self) -> EndpointMetrics {
        let states = self.decompressor.states();
        EndpointMetrics {
            compartments: self.compartments.len(),
            state_bytes: states.state_bytes(),
            compartments_evicted: states.evictions(),
            ..self.metrics.clone()
        }
    }

    /// Opens `compartment` for a peer reached over `transport` (or changes
    /// the transport of an open one), before it sends or receives anything:
    /// a compartment opened by [`Endpoint::compress`] alone takes the
    /// configured transport. A changed transport starts its compressor over,
    /// since what the peer acknowledges differs (RFC 3320 §5.2.3).
    pub fn open_compartment(&mut self, now: Instant, compartment: CompartmentId, transport: Transport) {
        self.activate(now, compartment, transport);
    }

    /// Sets the parameters the peer of `compartment` offers, as learned
    /// outside SigComp (configuration, a previous session).
    pub fn set_peer_params(&mut self, now: Instant, compartment: CompartmentId, peer: Params) {
        if peer.validate().is_err() {
            return;
        }
        let transport = self.compartments.get(&compartment).map_or(self.config.compressor.transport, |c| c.transport);
        self.activate(now, compartment, transport);
        self.update_peer(compartment, |p| *p = peer);
    }

    /// Marks `compartment` used at `now` (opening it with `transport` if
    /// new): idle timer, LRU order, hot list. Returns the compartments
    /// closed to make room for it.
    fn activate(&mut self, now: Instant, compartment: CompartmentId, transport: Transport) -> Vec<CompartmentId> {
        self.activity_seq += 1;
        let key = (now, self.activity_seq);
        let config = &self.config;
        let c = self
            .compartments
            .entry(compartment)
            .or_insert_with(|| Compartment { transport, ..Compartment::new(config) });
        if let Some(old) = c.active.replace(key) {
            self.idle.remove(&old);
        }
        self.idle.insert(key, compartment);
        if c.transport != transport {
            c.transport = transport;
            c.compressor = None;
        }
        self.decompressor.touch(compartment);
        if self.hot.back() != Some(&compartment) {
            match self.hot.iter().position(|c| *c == compartment) {
                Some(i) => {
                    self.hot.remove(i);
                }
                None => {
                    self.decompressor.states_mut().unpack_compartment(compartment);
                }
            }
            self.hot.push_back(compartment);
            self.trim_scratch();
        }
        self.drop_evicted()
    }

    /// Drops what the endpoint keeps for compartments the decompressor
    /// evicted to stay within the limits.
    fn drop_evicted(&mut self) -> Vec<CompartmentId> {
        let evicted = self.decompressor.take_evicted();
        for c in &evicted {
            self.forget(*c);
        }
        evicted
    }

    fn forget(&mut self, compartment: CompartmentId) {
        if let Some(key) = self.compartments.remove(&compartment).and_then(|c| c.active) {
            self.idle.remove(&key);
        }
        self.hot.retain(|c| *c != compartment);
    }

    /// Receives one SigComp message (for a stream, one message with its
    /// record marking removed) that arrived over `transport`.
    pub fn receive(&mut self, message: &[u8], transport: Transport) -> Result<Received, ReceiveError> {
        self.metrics.messages_received += 1;
        self.metrics.bytes_received += message.len() as u64;
        if let Ok(nack) = Nack::parse(message) {
            self.metrics.nacks_received += 1;
            if let Some(n) = self.metrics.nacks_received_by_reason.get_mut(usize::from(nack.reason.code())) {
                *n += 1;
            }
            return Ok(Received::Nack(self.on_nack(message, &nack)));
        }
        match self.decompressor.decompress(message, transport) {
            Ok(d) => {
                self.metrics.cycles += d.cycles;
                let uploaded_bytecode = sigcomp::wire::Header::parse(message)
                    .is_ok_and(|h| matches!(h.body, sigcomp::wire::Body::Bytecode { .. }));
                Ok(Received::Message(Incoming {
                    output: d.output,
                    cycles: d.cycles,
                    transport,
                    pending: d.pending,
                    uploaded_bytecode,
                }))
            }
            Err(failure) => {
                self.metrics.cycles += failure.cycles;
                if let Some(n) = self.metrics.failures.get_mut(usize::from(failure.reason.code())) {
                    *n += 1;
                }
                let nack = self.decompressor.nack_for(message, &failure);
                if nack.is_some() {
                    self.metrics.nacks_sent += 1;
                    if let Some(n) = self.metrics.nacks_sent_by_reason.get_mut(usize::from(failure.reason.code())) {
                        *n += 1;
                    }
                }
                Err(ReceiveError { failure, nack })
            }
        }
    }

    /// A NACK for a message we sent: its compartment's compressor falls
    /// back to what the peer still has, and learns the peer's real cycles
    /// or memory where the NACK tells them (RFC 4077 §2.3).
    fn on_nack(&mut self, message: &[u8], nack: &Nack) -> ReceivedNack {
        let unmatched = ReceivedNack { reason: nack.reason, compartment: None, report: None };
        let Some(&compartment) = self.sent.get(&sent_key(&nack.message_sha1)) else { return unmatched };
        let Some(c) = self.compartments.get_mut(&compartment) else { return unmatched };
        let Some(compressor) = c.compressor.as_mut() else { return unmatched };
        let Ok(report) = compressor.on_nack(message) else { return unmatched };
        // STATE_NOT_FOUND's details are the partial identifier the peer
        // could not find (RFC 4077 §3.1).
        if nack.reason == Reason::StateNotFound
            && !nack.details.is_empty()
            && sigcomp::dict::SIP_SDP_ID.starts_with(&nack.details)
            && !c.without_dictionary
        {
            c.without_dictionary = true;
            c.compressor = None;
        }
        let cpb = report.peer_cycles_per_bit.map(u16::from).filter(|v| [16, 32, 64, 128].contains(v));
        let dms = report.peer_decompression_memory_size.map(u32::from).filter(|v| v.is_power_of_two() && *v >= 2048);
        self.update_peer(compartment, |p| {
            if let Some(cpb) = cpb {
                p.cpb = cpb;
            }
            if let Some(dms) = dms {
                p.dms = dms;
            }
        });
        ReceivedNack { reason: nack.reason, compartment: Some(compartment), report: Some(report) }
    }

    /// Changes what the peer of `compartment` offers; a change means a new
    /// layout, so its compressor starts over (the states it built at the
    /// old layout are no longer used).
    fn update_peer(&mut self, compartment: CompartmentId, change: impl FnOnce(&mut Params)) {
        let Some(c) = self.compartments.get_mut(&compartment) else { return };
        let mut peer = c.peer;
        change(&mut peer);
        if peer != c.peer && peer.validate().is_ok() {
            c.peer = peer;
            if c.compressor.is_some() {
                c.compressor = None;
                // Best effort: a peer too small for our bytecode keeps no
                // compressor until a message needs one, which then fails.
                let _ = self.compressor_mut(compartment);
            }
        }
    }

    /// The application accepts `incoming` as a message of `compartment`
    /// (RFC 3320 §4.3, §6.2): its state requests are carried out, its
    /// feedback is kept for our compressor, and the peer's announced
    /// parameters and states are learned.
    pub fn accept(&mut self, now: Instant, incoming: Incoming, compartment: CompartmentId) -> Accepted {
        let Incoming { output, cycles, transport, pending, .. } = incoming;
        self.metrics.messages_accepted += 1;
        self.metrics.bytes_decompressed += output.len() as u64;
        let mut evicted = self.activate(now, compartment, transport);
        let returned_item = pending.returned_feedback.clone();
        let returned_params = pending.returned_parameters.clone();
        let core = self.decompressor.accept(pending, compartment);
        evicted.extend(self.drop_evicted());
        if let Some(rp) = &returned_params {
            // RFC 3320 §9.4.9: the peer's parameters replace what we assumed.
            self.update_peer(compartment, |peer| {
                if let Some(cpb) = rp.cycles_per_bit() {
                    peer.cpb = cpb;
                }
                if let Some(dms) = rp.decompression_memory_size() {
                    peer.dms = dms;
                }
                if let Some(sms) = rp.state_memory_size() {
                    peer.sms = sms;
                }
                if rp.version != 0 {
                    peer.version = rp.version;
                }
            });
        }
        if let Ok(c) = self.compressor_mut(compartment) {
            if let Some(item) = returned_item {
                c.on_returned_feedback(&item);
            }
            for id in returned_params.iter().flat_map(|p| &p.local_states) {
                if !c.on_peer_local_state(id) {
                    c.on_peer_shared_state(&output, id);
                }
            }
        }
        Accepted { message: output, cycles, created: core.created, rejected: core.rejected, freed: core.freed, evicted }
    }

    /// The application declines `incoming`'s state requests and feedback
    /// (RFC 5049 §4: e.g. an unauthenticated REGISTER): nothing is created
    /// or learned. Returns the decompressed message.
    pub fn discard(&mut self, incoming: Incoming) -> Vec<u8> {
        self.metrics.messages_discarded += 1;
        self.metrics.bytes_decompressed += incoming.output.len() as u64;
        incoming.output
    }

    /// The compressor of `compartment`, created if it has none yet.
    fn compressor_mut(&mut self, compartment: CompartmentId) -> Result<&mut Compressor, CompressError> {
        let Endpoint { compartments, factory, decompressor, config, .. } = self;
        let c = compartments.entry(compartment).or_insert_with(|| Compartment::new(config));
        match &mut c.compressor {
            Some(compressor) => Ok(compressor),
            slot => {
                Ok(slot.insert(Box::new(factory.build(c.transport, c.peer, !c.without_dictionary, decompressor)?)))
            }
        }
    }

    /// Compresses `message` for the peer of `compartment` (opened with the
    /// configured transport if new).
    pub fn compress(
        &mut self,
        now: Instant,
        compartment: CompartmentId,
        message: &[u8],
    ) -> Result<Compressed, CompressError> {
        let transport = self.compartments.get(&compartment).map_or(self.config.compressor.transport, |c| c.transport);
        self.activate(now, compartment, transport);
        let pending = self.decompressor.feedback(compartment).and_then(|f| f.requested_item.clone());
        let echoed = self.compartments.get(&compartment).and_then(|c| c.echoed.as_ref());
        let returned = pending.filter(|item| echoed != Some(item));
        // Shared mode: announce the message only if saving it here evicts
        // nothing the peer created (RFC 4896 §5.3). Our shared states have
        // priority 65535, so the state handler frees the oldest of them
        // first; older ones stay while there is room, so a peer whose view
        // lags (acknowledgements and announcements delayed over UDP) still
        // finds the one it names.
        let room_for_own = self.config.compressor.mechanism == Mechanism::Shared && {
            let cost = message.len() as u32 + 64;
            let (used, sms, ours) = match self.decompressor.states().compartment(compartment) {
                Some(c) => {
                    let ours: u32 = c.entries.iter().filter(|e| e.priority == 65535).map(|e| e.cost).sum();
                    (c.used, c.sms, ours)
                }
                None => (0, self.config.local.sms, 0),
            };
            used - ours + cost <= sms
        };
        let announce = if room_for_own { AnnounceMessage::AsSharedState } else { AnnounceMessage::No };
        let out = self.compressor_mut(compartment)?.compress(message, returned.as_deref(), announce)?;
        if let Some(c) = self.compartments.get_mut(&compartment) {
            if returned.is_some() {
                c.echoed = returned;
            }
        }
        if let Some(state) = &out.announced {
            self.decompressor.states_mut().create_state(compartment, state.clone(), 65535);
            self.drop_evicted();
        }
        self.remember_sent(out.sha1, compartment);
        self.metrics.messages_sent += 1;
        self.metrics.bytes_sent += out.message.len() as u64;
        self.metrics.bytes_compressed_from += message.len() as u64;
        Ok(out)
    }

    fn remember_sent(&mut self, sha: [u8; 20], compartment: CompartmentId) {
        let key = sent_key(&sha);
        if self.sent.insert(key, compartment).is_some() {
            return;
        }
        // The oldest goes before the newest is queued: the queue never
        // holds more than SENT_INDEX, and never doubles past it.
        while self.sent_order.len() >= SENT_INDEX {
            if let Some(old) = self.sent_order.pop_front() {
                self.sent.remove(&old);
            }
        }
        self.sent_order.push_back(key);
    }

    /// Ends a compartment (RFC 3320 §4.1: the application closes it): its
    /// compressor, its states at our decompressor and its feedback go.
    pub fn close_compartment(&mut self, compartment: CompartmentId) {
        self.forget(compartment);
        self.decompressor.close_compartment(compartment);
    }

    /// When [`Endpoint::handle_timeout`] next has work: the moment the
    /// least recently used compartment reaches the idle timeout.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let timeout = self.config.idle_timeout?;
        let ((last, _), _) = self.idle.first_key_value()?;
        Some(*last + timeout)
    }

    /// Closes every compartment idle for the idle timeout at `now`;
    /// returns them.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<CompartmentId> {
        let Some(timeout) = self.config.idle_timeout else { return Vec::new() };
        let mut closed = Vec::new();
        while let Some((&(last, _), &c)) = self.idle.first_key_value() {
            if last + timeout > now {
                break;
            }
            closed.push(c);
            self.close_compartment(c);
        }
        self.metrics.compartments_timed_out += closed.len() as u64;
        closed
    }
}
