//! The compressor of one compartment (RFC 3320 §5, RFC 3321 mechanisms as
//! the 2005 SigComp performance thesis §3.4 and §7.11 describe them, with
//! RFC 4896's corrections).
//!
//! Before a message leaves, the compressor knows what the peer will do
//! with it (RFC 3320 §5.1): the states it will create (snapshot
//! identifiers and memory images, so the next message's window is known
//! byte for byte) and an upper bound on the cycles it will spend, computed
//! from the bytecode's own definitions (`Compressor::predict`). Where
//! that cannot be computed, and on every message with [`Config::verify`],
//! a real [`Decompressor`] with the peer's parameters runs the message
//! instead. A `PeerModel` keeps the peer's state memory by the peer's
//! retention rules, so a state the peer has evicted is never referenced.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use sigcomp::nack::{NackParseError, NackReport, SentLog, SentRecord};
use sigcomp::state::CreateOutcome;
use sigcomp::udvm::StateRequest;
use sigcomp::wire;
use sigcomp::{CompartmentId, Decompressor, Params, State, StateId, Transport};

use crate::bits::BitWriter;
use crate::bytecode::{self, Bytecode, DictionarySource, Image, Layout};
use crate::dictionary::Priorities;
use crate::lzss::{Effort, LzssFormat, MatchFinder};
use crate::peer_model::{place_after_last_anchor, PeerModel};

/// Compression algorithm (its bytecode fragment and encoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// The modified LZSS of the 2005 SigComp performance thesis §7.8.4.
    Lzss,
    /// Deflate (RFC 1951) tokens, fixed Huffman codes.
    #[cfg(feature = "deflate")]
    Deflate,
    /// LZ77 tokens.
    #[cfg(feature = "lz77")]
    Lz77,
}

impl Algorithm {
    /// Every algorithm this build has.
    pub const ALL: &'static [Algorithm] = &[
        Algorithm::Lzss,
        #[cfg(feature = "deflate")]
        Algorithm::Deflate,
        #[cfg(feature = "lz77")]
        Algorithm::Lz77,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Lzss => "lzss",
            #[cfg(feature = "deflate")]
            Algorithm::Deflate => "deflate",
            #[cfg(feature = "lz77")]
            Algorithm::Lz77 => "lz77",
        }
    }

    pub fn parse(s: &str) -> Option<Algorithm> {
        Algorithm::ALL.iter().copied().find(|a| a.name() == s)
    }

    /// The assembled bytecode (mechanism program for `mechanism` + this
    /// algorithm's fragment).
    pub fn image(self, mechanism: Mechanism) -> &'static Image {
        use bytecode::images as i;
        use Mechanism::*;
        match (self, mechanism) {
            (Algorithm::Lzss, Basic) => &i::LZSS_BASIC,
            (Algorithm::Lzss, Static) => &i::LZSS_STATIC,
            (Algorithm::Lzss, Dynamic) => &i::LZSS_DYNAMIC,
            (Algorithm::Lzss, Shared) => &i::LZSS_SHARED,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Basic) => &i::DEFLATE_BASIC,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Static) => &i::DEFLATE_STATIC,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Dynamic) => &i::DEFLATE_DYNAMIC,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Shared) => &i::DEFLATE_SHARED,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Basic) => &i::LZ77_BASIC,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Static) => &i::LZ77_STATIC,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Dynamic) => &i::LZ77_DYNAMIC,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Shared) => &i::LZ77_SHARED,
        }
    }
}

/// How much state the compressor builds at the peer (the 2005 SigComp performance thesis §9.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    pub const ALL: [Mechanism; 4] = [Mechanism::Basic, Mechanism::Static, Mechanism::Dynamic, Mechanism::Shared];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Basic => "basic",
            Mechanism::Static => "static",
            Mechanism::Dynamic => "dynamic",
            Mechanism::Shared => "shared",
        }
    }

    pub fn parse(s: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == s)
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
    /// Longest match: 18, 66 or 258 bytes (LZSS; the 2005 SigComp performance thesis §9.3).
    pub lookahead: usize,
    /// Part of the SIP/SDP dictionary in the window; None for none. With a
    /// user dictionary ([`Compressor::set_user_dictionary`]) that one is
    /// loaded instead.
    pub dictionary: Option<Priorities>,
    pub effort: Effort,
    /// Also run the peer's decompressor on every message (RFC 3320 §5.1)
    /// and check it against what the compressor computes: the output, the
    /// states it creates, the cycles within the bound. Off, an LZSS
    /// message is not run at all (the other algorithms always are); the
    /// tests turn it on.
    pub verify: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            algorithm: Algorithm::Lzss,
            mechanism: Mechanism::Shared,
            transport: Transport::Message,
            lookahead: 258,
            dictionary: Priorities::new(1, 5),
            effort: Effort::default(),
            verify: false,
        }
    }
}

/// Why a message could not be compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompressError {
    /// The lookahead is not 18, 66 or 258 (or another 2^k + 2).
    BadLookahead(usize),
    /// The peer's parameters are not ones RFC 3320 §3.3 allows (from a
    /// caller; announcements and NACKs are validated before they are used).
    PeerParams(sigcomp::params::ParamError),
    /// The peer's memory is too small for this bytecode.
    PeerTooSmall { dms: u32 },
    /// The message, compressed, does not fit the peer's memory or cycles:
    /// the model decompressor failed.
    DoesNotFit(sigcomp::Failure),
    /// The model decompressed something else (a bug; never sent).
    Mismatch,
    /// The SigComp header cannot be written (RFC 3320 §7): a malformed
    /// returned feedback item, or bytecode over 4095 bytes.
    Emit(sigcomp::wire::EmitError),
}

impl std::fmt::Display for CompressError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompressError::BadLookahead(n) => write!(f, "look-ahead {n} is not 18, 66 or 258"),
            CompressError::PeerParams(e) => write!(f, "the peer's parameters: {e}"),
            CompressError::PeerTooSmall { dms } => {
                write!(f, "a decompression memory of {dms} bytes is too small for the bytecode")
            }
            CompressError::DoesNotFit(fl) => {
                write!(f, "the compressed message would fail at the peer: {fl}")
            }
            CompressError::Mismatch => f.write_str("model decompression differs from the input"),
            CompressError::Emit(e) => write!(f, "the SigComp header cannot be written: {e}"),
        }
    }
}

impl std::error::Error for CompressError {}

impl From<sigcomp::wire::EmitError> for CompressError {
    fn from(e: sigcomp::wire::EmitError) -> CompressError {
        CompressError::Emit(e)
    }
}

/// One saved decompressor memory (dynamic mechanism). Its bytes (UDVM
/// memory from address 64 to buffer_end) are an item of the model
/// decompressor's state handler ([`Compressor::snapshot_memory`]), freed
/// once a newer usable snapshot supersedes it.
#[derive(Debug, Clone)]
struct Snapshot {
    id: StateId,
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
    /// The feedback item the message asks the peer to return (its
    /// acknowledgement over a message transport).
    pub feedback_item: Option<u8>,
    /// The message announces itself as our shared state (id to create locally).
    pub announced: Option<State>,
    /// SHA-1 of `message`, by which a NACK names it (RFC 4077 §3.1).
    pub sha1: [u8; 20],
}

/// The compressor of one compartment.
pub struct Compressor {
    config: Config,
    peer: Params,
    local: Params,
    layout: Layout,
    format: LzssFormat,
    /// Shared by the compartments of an endpoint that build the same one
    /// ([`Compressor::share_bytecode`]).
    bytecode: Arc<Bytecode>,
    dictionary: Option<DictionarySource>,
    user_dictionary: Option<Arc<[u8]>>,
    bytecode_usable: bool,
    /// The peer holds our bytecode as a local state of its own (it
    /// announced the identifier): no upload needed.
    peer_has_bytecode: bool,
    /// We hold our bytecode as a local state and announce it until the
    /// peer has shown it received an announcement.
    announce_bytecode: bool,
    snapshots: Vec<Snapshot>,
    seq: u8,
    /// Feedback item → states it acknowledges.
    awaiting: HashMap<u8, Vec<StateId>>,
    /// The last few acknowledged items with their states, latest last:
    /// an acknowledgement of an item sent before one of these shows that
    /// the peer created its states after that one's.
    acknowledged: VecDeque<(u8, Vec<StateId>)>,
    /// Over a stream a message's states are the peer's once sent (RFC 3320
    /// §5.2.3), unless its application declined them (RFC 5049 §4: an
    /// unauthenticated REGISTER, say): after a STATE_NOT_FOUND NACK they
    /// are used only once acknowledged, as over UDP, until an
    /// acknowledgement shows the peer keeps them again.
    stream_states_declined: bool,
    /// The peer's shared state (its item in the model holds the bytes).
    peer_shared: Option<StateId>,
    /// The peer's state memory: what it holds, by identifier and cost.
    peer_states: PeerModel,
    /// The peer's decompressor, run on a message where its run cannot be
    /// computed (and on every one with `verify`). Its state handler holds
    /// the bytes of the states the compressor may still use: those the
    /// peer holds ([`Compressor::peer_states`]) but for the snapshots
    /// superseded by a newer usable one.
    model: Decompressor,
    sent: SentLog,
    /// Hash chains over the history, kept between messages; dropped by
    /// [`Compressor::release_scratch`] and rebuilt on the next message.
    finder: Option<Box<Finder>>,
    /// Rebuilds done by finders since released.
    released_rebuilds: usize,
    /// Messages the model decompressor ran (the others were computed).
    model_runs: usize,
    /// The model's states are packed ([`Compressor::pack_states`]).
    packed: bool,
    /// The buffer the window of each message is laid out in, kept with
    /// the match finder.
    window: Vec<u8>,
}

const MODEL: CompartmentId = CompartmentId(0);

/// Sent messages remembered for NACKs (RFC 4077 §2.3). A NACK answers a
/// message within about one round trip, when a handful are in flight;
/// 32 records (≈ 200 B each) keep that with a wide margin without every
/// long-lived compartment holding hundreds.
const SENT_LOG: usize = 32;

/// Acknowledged items remembered for [`Compressor::order_as_acknowledged`]:
/// a message overtaken by more than this many acknowledged ones is not
/// seen as out of order (its base is gone by then anyway).
const ACKNOWLEDGED_KEPT: usize = 8;

/// Room kept in the peer's compartment for its own shared state (about one
/// large SIP message, RFC 3321 shared mode).
const SHARED_RESERVE: u32 = 1200;

impl Compressor {
    /// A compressor sending to a peer that offers `peer`; `local` is what
    /// this endpoint offers (announced to the peer).
    pub fn new(config: Config, peer: Params, local: Params) -> Result<Compressor, CompressError> {
        Compressor::with_user_dictionary(config, peer, local, None)
    }

    /// As [`Compressor::new`], loading `user_dictionary` (a state the peer
    /// holds, identified as `State::new(0, 0, 6, value)`: a user-specific
    /// dictionary, RFC 3321 §3.3) into the window instead of the SIP/SDP
    /// dictionary.
    pub fn with_user_dictionary(
        config: Config,
        peer: Params,
        local: Params,
        user_dictionary: Option<Arc<[u8]>>,
    ) -> Result<Compressor, CompressError> {
        Compressor::assemble(config, peer, local, user_dictionary, None)
    }

    /// As [`Compressor::with_user_dictionary`], with `bytecode`, which that
    /// would build (an earlier compressor's for the same settings, peer
    /// parameters and user dictionary), instead of building it again.
    pub(crate) fn with_prebuilt(
        config: Config,
        peer: Params,
        local: Params,
        user_dictionary: Option<Arc<[u8]>>,
        bytecode: Arc<Bytecode>,
    ) -> Result<Compressor, CompressError> {
        Compressor::assemble(config, peer, local, user_dictionary, Some(bytecode))
    }

    fn assemble(
        config: Config,
        peer: Params,
        local: Params,
        user_dictionary: Option<Arc<[u8]>>,
        prebuilt: Option<Arc<Bytecode>>,
    ) -> Result<Compressor, CompressError> {
        LzssFormat::length_bits_for(config.lookahead).ok_or(CompressError::BadLookahead(config.lookahead))?;
        peer.validate().map_err(CompressError::PeerParams)?;
        let image = config.algorithm.image(config.mechanism);
        let mech = config.mechanism;
        // Over a stream a snapshot is usable at once, so one is enough and
        // the window can be as large as the state memory allows.
        let reserve = if mech == Mechanism::Shared { SHARED_RESERVE.min(peer.sms / 3) } else { 0 };
        let layout = Layout::plan(image, &peer, config.transport, mech.saves_snapshots(), reserve)
            .or_else(|| Layout::plan(image, &peer, config.transport, mech.saves_snapshots(), 0))
            .ok_or(CompressError::PeerTooSmall { dms: peer.dms })?;
        let format = LzssFormat::for_buffer(usize::from(layout.buffer_size), config.lookahead)
            .ok_or(CompressError::BadLookahead(config.lookahead))?;
        let dict = match (&user_dictionary, config.dictionary) {
            (Some(v), _) => Some(DictionarySource {
                id: State::new(0, 0, 6, v).id,
                value: v.clone(),
                range: (0, u16::try_from(v.len()).unwrap_or(u16::MAX)),
            }),
            (None, Some(p)) => Some(DictionarySource {
                id: StateId(sigcomp::dict::SIP_SDP_ID),
                // The process's one copy (the state handler's), not a new one.
                value: sigcomp::dict::sip_sdp_state().shared_value(),
                range: p.string_range(),
            }),
            (None, None) => None,
        };
        let bytecode = match prebuilt {
            Some(b) => b,
            None => Arc::new(bytecode::build(image, &layout, dict.as_ref(), &local, |code, base| {
                patch_algorithm(config.algorithm, image, code, base, format)
            })),
        };
        let mut model = Decompressor::new(peer).map_err(CompressError::PeerParams)?;
        // A store of the values the compressor keeps: what the peer evicts
        // is freed by the compressor, as its model of the peer says.
        model.states_mut().set_compartment_sms(MODEL, u32::MAX);
        if let Some(v) = &user_dictionary {
            model.states_mut().add_local(State::new(0, 0, 6, v));
        }
        Ok(Compressor {
            config,
            peer,
            local,
            layout,
            format,
            bytecode,
            dictionary: dict,
            user_dictionary,
            bytecode_usable: false,
            peer_has_bytecode: false,
            announce_bytecode: false,
            snapshots: Vec::new(),
            seq: 0,
            awaiting: HashMap::new(),
            acknowledged: VecDeque::new(),
            stream_states_declined: false,
            peer_shared: None,
            peer_states: PeerModel::new(peer.sms),
            model,
            sent: SentLog::new(SENT_LOG),
            finder: None,
            released_rebuilds: 0,
            model_runs: 0,
            packed: false,
            window: Vec::new(),
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn bytecode(&self) -> &Arc<Bytecode> {
        &self.bytecode
    }

    /// Uses `other` instead of our own bytecode if they are the same bytes
    /// (same algorithm, mechanism, layout and dictionary): compartments
    /// then hold one copy. Returns whether it was shared.
    pub fn share_bytecode(&mut self, other: &Arc<Bytecode>) -> bool {
        if Arc::ptr_eq(&self.bytecode, other) {
            return true;
        }
        let same = *self.bytecode == **other;
        if same {
            self.bytecode = other.clone();
        }
        same
    }

    /// The parameters the compressor assumes the peer offers.
    pub fn peer(&self) -> &Params {
        &self.peer
    }

    pub fn local(&self) -> &Params {
        &self.local
    }

    pub fn user_dictionary(&self) -> Option<&Arc<[u8]>> {
        self.user_dictionary.as_ref()
    }

    /// How often the match finder had to rehash a whole window.
    pub fn match_finder_rebuilds(&self) -> usize {
        self.released_rebuilds + self.finder.as_ref().map_or(0, |f| f.rebuilds())
    }

    /// Frees what is only a cache between messages: the match finder's
    /// chains (≈ 16 KB of hash head plus 5 bytes per history byte) and
    /// the model decompressor's UDVM memory (up to the peer's DMS). The
    /// next message rebuilds them, which costs one hashing of the window.
    /// The tokens are the same but where stale links in a kept finder's
    /// chains used up a bounded search (none on the corpus). An endpoint
    /// with many compartments keeps them only for the recently active ones.
    pub fn release_scratch(&mut self) {
        if let Some(f) = self.finder.take() {
            self.released_rebuilds += f.rebuilds();
        }
        self.window = Vec::new();
        self.model.release_scratch();
    }

    /// For an idle compartment: keeps the model of the peer's states
    /// packed ([`sigcomp::StateHandler::pack_compartment`]), the snapshot
    /// bytes included (they are the model's values). Nothing the
    /// compressor decides changes: the next call that needs the states
    /// unpacks them first. Returns the bytes saved.
    pub fn pack_states(&mut self) -> usize {
        self.packed = true;
        self.model.states_mut().pack_compartment(MODEL)
    }

    /// Undoes [`Compressor::pack_states`].
    fn unpack_states(&mut self) {
        if !self.packed {
            return;
        }
        self.packed = false;
        self.model.states_mut().unpack_compartment(MODEL);
    }

    /// Whether the model's states are packed ([`Compressor::pack_states`]).
    pub fn states_packed(&self) -> bool {
        self.packed
    }

    /// A match finder over this compressor's fresh window (the bytecode's
    /// dictionary part, every position hashed), for an endpoint to give to
    /// later compressors with the same bytecode
    /// ([`Compressor::adopt_finder`]).
    pub fn fresh_finder(&self) -> Option<FreshFinder> {
        let window = self.bytecode.fresh_window(&self.layout);
        Some(FreshFinder(match self.config.algorithm {
            Algorithm::Lzss => Finder::Lzss(MatchFinder::over(&window)),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            _ => Finder::Chains(crate::chains::MatchFinder::over(&window)),
        }))
    }

    /// Starts from `finder` (from [`Compressor::fresh_finder`] of a
    /// compressor with the same bytecode) if this one has none yet and the
    /// finder is of this algorithm's kind. Any finder gives the same
    /// tokens; this one only saves hashing the fresh window.
    pub fn adopt_finder(&mut self, finder: FreshFinder) {
        if self.finder.is_none() && finder.0.serves(self.config.algorithm) {
            self.finder = Some(Box::new(finder.0));
        }
    }

    /// Whether the scratch of [`Compressor::release_scratch`] is held.
    pub fn holds_scratch(&self) -> bool {
        self.finder.is_some()
    }

    /// Messages of this compartment run through the model decompressor
    /// (with `verify`, or where the peer's run could not be computed: the
    /// algorithms other than LZSS, a cycle bound above the budget, a
    /// memory too small); the other messages were not run.
    pub fn model_runs(&self) -> usize {
        self.model_runs
    }

    /// Bytes of state the model says the peer holds for this compartment.
    pub fn peer_state_memory(&self) -> u32 {
        self.peer_states.used()
    }

    /// Bytes the model's items for this compartment take in memory
    /// (packed ones at their packed size, [`Compressor::pack_states`]).
    pub fn peer_state_bytes_resident(&self) -> usize {
        self.model.states().compartment_resident_bytes(MODEL)
    }

    /// Bytes of snapshot memory the compressor holds (those it may still
    /// continue from; older ones are kept only as identifiers and sizes).
    pub fn snapshot_bytes_held(&self) -> usize {
        self.snapshots.iter().filter_map(|s| self.snapshot_memory(&s.id)).map(|m| m.len()).sum()
    }

    /// The bytes of snapshot `id` (the model's item), unless forgotten
    /// ([`Compressor::forget_superseded`]) or no longer held.
    fn snapshot_memory(&self, id: &StateId) -> Option<Arc<[u8]>> {
        self.model.states().get(id).map(State::shared_value)
    }

    /// Identifiers of the dynamic snapshots the compressor may continue from.
    pub fn usable_snapshots(&self) -> Vec<StateId> {
        self.snapshots.iter().filter(|s| s.usable).map(|s| s.id).collect()
    }

    /// Whether the peer holds state `id` in this compartment.
    fn in_model(&self, id: &StateId) -> bool {
        self.peer_states.holds(id)
    }

    /// The bytecode as the state a peer with the same bytecode may hold:
    /// [`Compressor::announce_own_bytecode`].
    pub fn bytecode_state(&self) -> State {
        self.bytecode.state.clone()
    }

    /// The endpoint holds [`Compressor::bytecode_state`] as a locally
    /// available state: announce it to the peer (RFC 3320 §3.3.3), whose
    /// compressor then references it instead of uploading the same
    /// bytecode. Not for the basic mechanism, which uploads by definition.
    pub fn announce_own_bytecode(&mut self) {
        self.announce_bytecode = self.config.mechanism != Mechanism::Basic;
    }

    /// The peer announced a locally available state with this partial
    /// identifier; returns whether it is our bytecode (which we then stop
    /// uploading).
    pub fn on_peer_local_state(&mut self, announced: &[u8]) -> bool {
        self.unpack_states();
        if announced.len() < 6 || !self.bytecode.state_id.0.starts_with(announced) {
            return false;
        }
        if self.config.mechanism != Mechanism::Basic && !self.peer_has_bytecode {
            let state = self.bytecode_state();
            self.model.states_mut().add_local(state);
            self.peer_has_bytecode = true;
        }
        true
    }

    /// The peer echoed a feedback item we requested (RFC 3320 §5): the
    /// message that carried it was decompressed and its states created.
    pub fn on_returned_feedback(&mut self, item: &[u8]) {
        self.unpack_states();
        // The message carried our announcements too.
        self.announce_bytecode = false;
        if let [b] = item {
            if let Some(ids) = self.awaiting.remove(b) {
                self.stream_states_declined = false;
                self.order_as_acknowledged(*b, &ids);
                for id in &ids {
                    if *id == self.bytecode.state_id {
                        self.bytecode_usable = true;
                    }
                    if let Some(s) = self.snapshots.iter_mut().find(|s| s.id == *id) {
                        s.usable = true;
                    }
                }
                if self.acknowledged.len() == ACKNOWLEDGED_KEPT {
                    self.acknowledged.pop_front();
                }
                self.acknowledged.push_back((*b, ids));
                self.forget_superseded();
            }
        }
    }

    /// The model assumes the peer creates states in the order their
    /// messages were sent. Over UDP they may arrive in another (RFC 3320
    /// §5.1 leaves that to the compressor): the acknowledgement of item
    /// `item` after that of an item sent later shows the peer created
    /// `ids` after that item's states. The model's ages and the snapshots'
    /// order follow the peer, so that the peer's oldest snapshot is evicted
    /// first in the model too and the youngest is the base.
    fn order_as_acknowledged(&mut self, item: u8, ids: &[StateId]) {
        let sent_later: Vec<StateId> = self
            .acknowledged
            .iter()
            .filter(|(j, _)| (1..64).contains(&(j.wrapping_sub(item) % 128)))
            .flat_map(|(_, states)| states.iter().copied())
            .collect();
        if sent_later.is_empty() {
            return;
        }
        self.peer_states.created_after(ids, &sent_later);
        // (An item long acknowledged whose number has come round again
        // names snapshots gone from the list: nothing moves.)
        place_after_last_anchor(&mut self.snapshots, |s| ids.contains(&s.id), |s| sent_later.contains(&s.id));
    }

    /// Snapshots older than the newest usable one are never continued from
    /// again (the newest usable is always the base, and the peer evicts
    /// older ones first), yet the peer keeps them until evicted: the model
    /// keeps their identifiers and sizes for its accounting
    /// ([`Compressor::peer_states`]), not their bytes.
    fn forget_superseded(&mut self) {
        let Some(newest) = self.snapshots.iter().rposition(|s| s.usable) else { return };
        for s in &self.snapshots[..newest] {
            self.model.states_mut().free(MODEL, &s.id.0);
        }
    }

    /// The peer frees state `id`: the model forgets it and its bytes.
    fn model_free(&mut self, id: &StateId) {
        self.peer_states.free(id);
        self.model.states_mut().free(MODEL, &id.0);
    }

    /// The peer saved a message it sent us as a shared state and announced
    /// its identifier (RFC 3321 shared mode). `message` is what we
    /// decompressed; `announced` the partial identifier in the returned
    /// parameters. Returns whether they match.
    pub fn on_peer_shared_state(&mut self, message: &[u8], announced: &[u8]) -> bool {
        self.unpack_states();
        let state = State::new(0, 0, 6, message);
        if announced.len() < 6 || !state.id.0.starts_with(announced) {
            return false;
        }
        // Model the peer's local creation (priority 65535: freed first).
        if let Some(old) = self.peer_shared.take() {
            self.model_free(&old);
        }
        let id = state.id;
        self.model_create(vec![(state, 65535)]);
        if self.in_model(&id) {
            self.peer_shared = Some(id);
        }
        true
    }

    /// A NACK from the peer (RFC 4077 §2.3). The compressor falls back to
    /// what needs no state of the peer's but the dictionary: every snapshot,
    /// the bytecode state and the peer's shared state are forgotten (and
    /// dropped from the model), so the next message uploads the bytecode
    /// and decompresses whatever the peer lost.
    pub fn on_nack(&mut self, nack: &[u8]) -> Result<NackReport, NackParseError> {
        self.unpack_states();
        let report = self.sent.on_nack(nack)?;
        if self.config.transport == Transport::Stream && report.nack.reason == sigcomp::Reason::StateNotFound {
            self.stream_states_declined = true;
        }
        let mut gone: Vec<StateId> = self.snapshots.iter().map(|s| s.id).collect();
        gone.push(self.bytecode.state_id);
        gone.extend(self.peer_shared.take());
        gone.extend(report.lost_states.iter().copied());
        gone.extend(report.not_created.iter().copied());
        for id in gone {
            self.model_free(&id);
        }
        self.snapshots.clear();
        self.bytecode_usable = false;
        self.awaiting.clear();
        self.acknowledged.clear();
        Ok(report)
    }

    /// Whether a message's states are the peer's as soon as it is sent:
    /// over a stream whose peer has not declined them.
    fn kept_once_sent(&self) -> bool {
        self.config.transport == Transport::Stream && !self.stream_states_declined
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
        self.unpack_states();
        match self.compress_stateful(message, returned_feedback, announce) {
            // Over a message transport the UDVM memory shrinks as the
            // message grows (RFC 3320 §7): a large message at a small DMS
            // may not leave room for the planned buffer.
            Err(CompressError::DoesNotFit(_)) if self.config.transport == Transport::Message => {
                self.compress_fallback(message, returned_feedback)
            }
            other => other,
        }
    }

    /// One message that needs no state but the dictionary and creates
    /// none: the bytecode with a circular buffer that fits beside this
    /// message, or, if none does, the literal bytecode.
    fn compress_fallback(
        &mut self,
        message: &[u8],
        returned_feedback: Option<&[u8]>,
    ) -> Result<Compressed, CompressError> {
        let image = self.config.algorithm.image(self.config.mechanism);
        let mut estimate = image.code.len() + message.len() / 2;
        for _ in 0..4 {
            let memory = self.peer.dms.saturating_sub(estimate as u32 + 16).min(65535);
            let Some(layout) = Layout::plan_memory(image, &self.peer, memory, false, 0, 64) else { break };
            let Some(format) = LzssFormat::for_buffer(usize::from(layout.buffer_size), self.config.lookahead) else {
                break;
            };
            let algorithm = self.config.algorithm;
            let code = bytecode::build(image, &layout, self.dictionary.as_ref(), &self.local, |code, base| {
                patch_algorithm(algorithm, image, code, base, format)
            });
            let window = code.fresh_window(&layout);
            let mut input = vec![0u8];
            let mut finder = Finder::for_algorithm(algorithm);
            input.extend(encode_tokens(algorithm, &mut finder, &window, &[], message, format, self.config.effort));
            let sig = wire::emit_bytecode_message(returned_feedback, &code.code, code.destination, &input)?;
            if let Ok(out) = self.check_stateless(&sig, message, input.len() - 1, code.dictionary_id) {
                return Ok(out);
            }
            estimate = sig.len() + 16;
        }
        let sig = wire::emit_bytecode_message(returned_feedback, bytecode::LITERAL, 128, message)?;
        self.check_stateless(&sig, message, message.len(), None)
    }

    /// Runs a message that creates no state through the model.
    fn check_stateless(
        &mut self,
        sig: &[u8],
        message: &[u8],
        payload_len: usize,
        dictionary: Option<StateId>,
    ) -> Result<Compressed, CompressError> {
        let d = self.model.decompress(sig, self.config.transport).map_err(CompressError::DoesNotFit)?;
        if d.output != message {
            return Err(CompressError::Mismatch);
        }
        self.model_create(requested_states(&d.pending));
        let sha1 = self.sent.record(
            sig,
            SentRecord { compartment: MODEL, states_used: dictionary.into_iter().collect(), states_requested: vec![] },
        );
        Ok(Compressed { message: sig.to_vec(), payload_len, uploaded_bytecode: true, sha1, ..Compressed::default() })
    }

    /// A message that continues from the newest usable snapshot (or starts
    /// fresh), in the steps below: choose the base, write the header
    /// items, encode (trying parts of the peer's shared state), emit,
    /// work out the peer's run, and record what it creates.
    fn compress_stateful(
        &mut self,
        message: &[u8],
        returned_feedback: Option<&[u8]>,
        announce: bool,
    ) -> Result<Compressed, CompressError> {
        let (base, base_memory) = self.newest_usable_snapshot().unzip();
        let mut window = std::mem::take(&mut self.window);
        match &base_memory {
            Some(m) => self.layout.window_into(m, &mut window),
            None => self.bytecode.fresh_window_into(&self.layout, &mut window),
        }
        let snapshot = !base.as_ref().is_some_and(|b| self.snapshot_would_evict(&b.id));
        let header = self.header_items(message, announce, snapshot);
        let shared_value =
            self.peer_shared.and_then(|id| self.model.states().get(&id)).map(State::shared_value).unwrap_or_default();
        let candidates = self.shared_candidates(base.as_ref());
        let (shared_len, tokens) = self.encode_cheapest(&window, &shared_value, &candidates, message);
        let used_shared = shared_len.and(self.peer_shared);
        self.window = window;

        let mut flags = header.flags;
        let mut input = Vec::with_capacity(11 + header.items.len() + tokens.len());
        input.push(0u8);
        if let (Some(len), Some(ps)) = (shared_len, used_shared) {
            flags |= FLAG_SHARED;
            input.extend_from_slice(&ps.0[..6]);
            input.extend_from_slice(&0u16.to_be_bytes());
            input.extend_from_slice(&(len as u16).to_be_bytes());
        }
        input[0] = flags;
        input.extend_from_slice(&header.items);
        let payload_len = tokens.len();
        input.extend_from_slice(&tokens);
        let (sig, uploaded, used_state) = self.emit(base.as_ref(), returned_feedback, &input)?;

        let shared_bytes = &shared_value[..shared_len.unwrap_or(0).min(shared_value.len())];
        let view = MessageView {
            fresh: base.is_none(),
            flags,
            seq: header.seq,
            entries: &header.entries,
            shared: shared_bytes,
            message,
            sig_len: sig.len(),
        };
        let creates = self.peer_run(base_memory.as_deref(), &view, &sig)?;
        let shared_loaded = used_shared.or(base.as_ref().and_then(|b| b.shared_loaded));
        let requested = self.record_created(creates, shared_loaded);
        if let Some(seq) = header.seq {
            self.awaiting.insert(seq, requested.clone());
        }
        let fresh_dictionary = if base.is_none() { self.bytecode.dictionary_id } else { None };
        let mut used = [StateId([0; 20]); 3];
        let mut n = 0;
        for id in [used_state, used_shared, fresh_dictionary].into_iter().flatten() {
            used[n] = id;
            n += 1;
        }
        let sha1 = self.sent.record_states(&sig, MODEL, &used[..n], &requested);
        Ok(Compressed {
            sha1,
            message: sig,
            payload_len,
            uploaded_bytecode: uploaded,
            used_state,
            used_shared,
            requested,
            announced: header.own_shared,
            feedback_item: header.seq,
        })
    }

    /// Over a message transport, whether this message's snapshot would
    /// push `base`, the snapshot it continues from, out of the peer's state
    /// memory (RFC 3320 §6.2: the oldest state of the lowest priority goes
    /// first). Snapshots are used only once acknowledged, so `base` is the
    /// newest the compressor may name; with it gone, and the newer ones not
    /// yet acknowledged, the next message would have to upload the
    /// bytecode again. Such a message saves no snapshot instead
    /// (asm/mechanism.asm, flag 0x04).
    fn snapshot_would_evict(&self, base: &StateId) -> bool {
        if self.kept_once_sent() {
            return false;
        }
        let len = usize::from(self.layout.buffer_end).saturating_sub(64);
        self.peer_states.creating_would_evict(len, base)
    }

    /// The newest snapshot the peer holds and we may continue from, with
    /// its bytes (dynamic and shared mechanisms).
    fn newest_usable_snapshot(&self) -> Option<(Snapshot, Arc<[u8]>)> {
        if !self.config.mechanism.saves_snapshots() {
            return None;
        }
        // (A snapshot kept only as an identifier, forget_superseded, is
        // never the newest usable one: the peer evicts older snapshots
        // first. The check keeps that an invariant here.)
        self.snapshots
            .iter()
            .rev()
            .filter(|s| s.usable && self.in_model(&s.id))
            .find_map(|s| Some((s.clone(), self.snapshot_memory(&s.id)?)))
    }

    /// The flags and items after the flags byte other than the shared
    /// state's (asm/mechanism.asm): the feedback request, the announced
    /// entries, the request to save the bytecode.
    fn header_items(&mut self, message: &[u8], announce: bool, snapshot: bool) -> HeaderItems {
        let mech = self.config.mechanism;
        let stream = self.kept_once_sent();
        let mut flags = 0u8;
        let mut items: Vec<u8> = Vec::new();
        if mech.saves_snapshots() && !snapshot {
            flags |= FLAG_NO_SNAPSHOT;
        }
        // Over UDP a state is used only once the peer has acknowledged it
        // (RFC 3321 §5.1): ask for the acknowledgement as feedback (of
        // nothing, for a message that saves no snapshot).
        let wants_ack =
            !stream && ((mech.saves_snapshots() && snapshot) || (mech == Mechanism::Static && !self.bytecode_usable));
        let seq = if wants_ack { Some(self.next_seq()) } else { None };
        if let Some(seq) = seq {
            flags |= FLAG_FEEDBACK;
            items.push(seq);
        }
        // Hashed only if announced (the endpoint then stores this State).
        let own_shared = (announce && mech == Mechanism::Shared).then(|| State::new(0, 0, 6, message));
        // Up to two entries for the returned parameters' list.
        let mut entries: Vec<StateId> = Vec::new();
        if let Some(own) = &own_shared {
            entries.push(own.id);
        }
        if self.announce_bytecode {
            entries.push(self.bytecode.state_id);
            if stream {
                self.announce_bytecode = false;
            }
        }
        for (k, id) in entries.iter().enumerate() {
            flags |= if k == 0 { FLAG_ANNOUNCE_A } else { FLAG_ANNOUNCE_B };
            items.push(6);
            items.extend_from_slice(&id.0[..6]);
        }
        if mech == Mechanism::Static && !self.bytecode_usable {
            flags |= FLAG_SAVE_BYTECODE;
        }
        HeaderItems { flags, items, seq, entries, own_shared }
    }

    /// Shared mode: how much of the peer's last message to try appending
    /// to the buffer (RFC 3321 shared mode), 0 for none. It displaces
    /// older history, so a few lengths are tried.
    fn shared_candidates(&self, base: Option<&Snapshot>) -> Vec<usize> {
        let mut candidates: Vec<usize> = vec![0];
        if self.config.mechanism != Mechanism::Shared {
            return candidates;
        }
        let w = usize::from(self.layout.buffer_size);
        if let Some(ps) = self.peer_shared.and_then(|id| self.model.states().get(&id)) {
            let already = base.is_some_and(|b| b.shared_loaded == Some(ps.id));
            if !already && self.in_model(&ps.id) {
                let full = ps.len().min(usize::from(u16::MAX));
                for d in [4usize, 2, 1] {
                    let l = full.min(w * 3 / 4 / d);
                    if l >= 32 && !candidates.contains(&l) {
                        candidates.push(l);
                    }
                }
            }
        }
        candidates
    }

    /// Encodes `message` after `window` and each candidate part of
    /// `shared_value`, keeping the smallest: (the part's length, None for
    /// no part; the tokens). The match finder's history ends with the
    /// chosen encoding's bytes.
    fn encode_cheapest(
        &mut self,
        window: &[u8],
        shared_value: &[u8],
        candidates: &[usize],
        message: &[u8],
    ) -> (Option<usize>, Vec<u8>) {
        let mut best: Option<(usize, usize, Vec<u8>)> = None;
        // The first candidate is encoded into the history; a later one is
        // encoded after rolling that back to the window (the match finder's
        // chains over the window are shared, not copied), and the chosen
        // one's bytes are in the history at the end.
        let mut mark = None;
        // The candidate whose bytes the history ends with.
        let mut in_history = None;
        // A shared candidate costs its tokens plus 10 bytes of header, and
        // no tokens of this message can be fewer than `floor` bytes: once
        // the plain encoding is within `floor + 10` bytes, no candidate can
        // beat it (the choice is the same, the trials are saved).
        let floor = self.token_floor(message.len());
        for (k, &len) in candidates.iter().enumerate() {
            if len > 0 && best.as_ref().is_some_and(|(c, _, _)| *c <= floor + 10) {
                break;
            }
            let extra = &shared_value[..len.min(shared_value.len())];
            if candidates.len() > 1 {
                let finder = self.finder();
                if k == 0 {
                    finder.prepare(window);
                    mark = Some(finder.mark());
                } else if let Some(m) = mark {
                    finder.rollback(m);
                }
            }
            let tokens = self.encode(window, extra, message);
            in_history = Some(len);
            let cost = tokens.len() + if len > 0 { 10 } else { 0 };
            if best.as_ref().is_none_or(|(c, _, _)| cost < *c) {
                best = Some((cost, len, tokens));
            }
        }
        let (_, best_len, tokens) = best.expect("one candidate at least");
        if let (Some(m), true) = (mark, in_history != Some(best_len)) {
            let finder = self.finder();
            finder.rollback(m);
            finder.prepare(window);
            finder.append(&shared_value[..best_len.min(shared_value.len())]);
            finder.append_hashed(message);
        }
        ((best_len > 0).then_some(best_len), tokens)
    }

    /// The SigComp message (RFC 3320 §7) carrying `input`: naming the
    /// base snapshot, or the bytecode state, or uploading the bytecode.
    /// Returns it, whether the bytecode was uploaded, and the state named.
    fn emit(
        &self,
        base: Option<&Snapshot>,
        returned_feedback: Option<&[u8]>,
        input: &[u8],
    ) -> Result<(Vec<u8>, bool, Option<StateId>), CompressError> {
        let mech = self.config.mechanism;
        let bytecode_state =
            (mech == Mechanism::Static && self.bytecode_usable && self.in_model(&self.bytecode.state_id))
                || (self.peer_has_bytecode && self.model.states().get(&self.bytecode.state_id).is_some());
        if let Some(s) = base {
            Ok((wire::emit_state_message(returned_feedback, &s.id.0[..6], input)?, false, Some(s.id)))
        } else if bytecode_state {
            let id = self.bytecode.state_id;
            Ok((wire::emit_state_message(returned_feedback, &id.0[..6], input)?, false, Some(id)))
        } else {
            let code = &self.bytecode.code;
            Ok((wire::emit_bytecode_message(returned_feedback, code, self.bytecode.destination, input)?, true, None))
        }
    }

    /// What the peer will do with the message (RFC 3320 §5.1): the state
    /// creation requests, computed from what the compressor knows
    /// ([`Compressor::predict`]) or found by running the peer's
    /// decompressor on it; `verify` does both and compares them.
    fn peer_run(
        &mut self,
        base: Option<&[u8]>,
        view: &MessageView<'_>,
        sig: &[u8],
    ) -> Result<Vec<(State, u16)>, CompressError> {
        let predicted = match self.predict(base, view) {
            Some((creates, _)) if !self.config.verify => return Ok(creates),
            predicted => predicted,
        };
        self.model_runs += 1;
        let d = self.model.decompress(sig, self.config.transport).map_err(CompressError::DoesNotFit)?;
        if d.output != view.message {
            return Err(CompressError::Mismatch);
        }
        let run = requested_states(&d.pending);
        if let Some((creates, bound)) = predicted {
            if creates != run || d.cycles > bound {
                return Err(CompressError::Mismatch);
            }
        }
        Ok(run)
    }

    /// Carries out the creation requests in the model and notes the
    /// snapshots among them (`shared_loaded`: the peer shared state in
    /// their history). Returns the identifiers created or refreshed.
    fn record_created(&mut self, creates: Vec<(State, u16)>, shared_loaded: Option<StateId>) -> Vec<StateId> {
        let stream = self.kept_once_sent();
        let requested = self.model_create(creates);
        for id in &requested {
            if *id == self.bytecode.state_id {
                if stream {
                    self.bytecode_usable = true;
                }
            } else if self.model.states().get(id).is_some_and(|s| s.address == 64) {
                // The decompressor memory from address 64: a snapshot. Its
                // bytes are the model's state value.
                if !self.snapshots.iter().any(|s| s.id == *id) {
                    self.snapshots.push(Snapshot { id: *id, usable: stream, shared_loaded });
                }
            }
        }
        // Keep only snapshots the peer may still hold.
        let peer_states = &self.peer_states;
        self.snapshots.retain(|s| peer_states.holds(&s.id));
        if stream {
            self.forget_superseded();
        }
        requested
    }

    /// A lower bound on the token bytes of a message of `len` bytes.
    fn token_floor(&self, len: usize) -> usize {
        match self.config.algorithm {
            Algorithm::Lzss => self.format.min_token_bytes(len),
            #[cfg(feature = "deflate")]
            Algorithm::Deflate => crate::deflate::min_token_bytes(len),
            #[cfg(feature = "lz77")]
            Algorithm::Lz77 => crate::lz77::min_token_bytes(len),
        }
    }

    /// Carries out the peer's state creation requests in the model, in
    /// order, as its decompressor's `accept` would (RFC 3320 §6.2): the
    /// model of the peer's state memory takes them (and evicts what the
    /// peer evicts), the store keeps their bytes. Returns the identifiers
    /// created or refreshed.
    fn model_create(&mut self, creates: Vec<(State, u16)>) -> Vec<StateId> {
        let mut created = Vec::new();
        let mut evicted = Vec::new();
        for (state, priority) in creates {
            // Step 2: a value longer than the SMS allows is truncated.
            let max_len = self.peer_states.max_value_len();
            let state = if state.len() > max_len {
                State::new(state.address, state.instruction, state.min_access_len, &state.value()[..max_len])
            } else {
                state
            };
            evicted.clear();
            let outcome = self.peer_states.create(state.id, state.len(), priority, &mut evicted);
            for id in &evicted {
                self.model.states_mut().free(MODEL, &id.0);
            }
            match outcome {
                CreateOutcome::Created(id) | CreateOutcome::Refreshed(id) => {
                    self.model.states_mut().create_state(MODEL, state, priority);
                    if !created.contains(&id) {
                        created.push(id);
                    }
                }
                CreateOutcome::Rejected => {}
            }
        }
        created
    }

    /// The peer's run of a message, computed instead of run: the state
    /// creation requests (with their retention priorities) and an upper
    /// bound on the UDVM cycles. `None` where only a run can tell: a
    /// memory too small for the buffer (the run fails, and the caller
    /// falls back), or a cycle bound above the peer's budget (RFC 3320
    /// §8.6).
    ///
    /// The bytecode is `asm/mechanism.asm` with the algorithm's fragment:
    /// before the tokens it sets the words of :decompress's MULTILOAD,
    /// appends the shared state at `decompressed_pointer`, sets the
    /// feedback request and the announced entries, saves the bytecode; the
    /// tokens write the message into the circular buffer; END-MESSAGE
    /// saves memory 64..buffer_end. The fragments' own variables lie below
    /// 64, outside the snapshot. Every address, flag, priority and cycle
    /// cost is the assembly's own ([`ProgramSymbols`]).
    fn predict(&self, base: Option<&[u8]>, v: &MessageView<'_>) -> Option<(Vec<(State, u16)>, u64)> {
        let at = self.config.algorithm.symbols();
        let mech = self.config.mechanism;
        let image = self.config.algorithm.image(mech);
        let (cb, end) = (usize::from(self.layout.circular_buffer), usize::from(self.layout.buffer_end));
        let dms = self.peer.dms as usize;
        let memory = match self.config.transport {
            Transport::Message => dms.saturating_sub(v.sig_len),
            Transport::Stream => dms / 2,
        }
        .min(65536);
        if end > memory {
            return None;
        }
        let bound = self.cycle_bound(&at, v) as u64;
        // The budget: (1000 + 8 × header bytes) × CPB, plus 8 × CPB per
        // input byte consumed; all but at most 7 trailing bits are.
        let cpb = u64::from(self.peer.cpb);
        let budget = (1000 + 8 * v.sig_len as u64).saturating_sub(7) * cpb;
        if bound > budget {
            return None;
        }
        let mut creates = Vec::new();
        if v.flags & at.flag_save_bytecode != 0 {
            // STATE-CREATE ($code_length, init, init, state_min_access, bytecode_priority).
            creates.push((self.bytecode.state.clone(), at.bytecode_priority));
        }
        if !mech.saves_snapshots() || v.flags & at.flag_no_snapshot != 0 {
            // Basic and static save no memory, nor a message that saves no
            // snapshot: no image to compute.
            return Some((creates, bound));
        }
        // The snapshot's bytes, built in place: the state takes them as
        // they are.
        let mut snapshot: Arc<[u8]> = match base {
            Some(m) if m.len() == end - 64 => Arc::from(m),
            Some(_) => return None,
            None => self.initialised_memory(&at).into(),
        };
        let m = Arc::get_mut(&mut snapshot)?;
        let word = |m: &[u8], a: u16| u16::from_be_bytes([m[usize::from(a) - 64], m[usize::from(a) - 63]]);
        // :decompress: MULTILOAD (fb_loc, 4, 0, state_min_access, $announce_params, 0).
        let announce_params = word(m, image.announce_params);
        bytecode::put_word(m, 64, at.fb_loc, 0);
        bytecode::put_word(m, 64, at.snap_mal, at.state_min_access);
        bytecode::put_word(m, 64, at.returned_parameters_location, announce_params);
        bytecode::put_word(m, 64, at.announced_a, 0);
        // Bytes written at decompressed_pointer wrap within the buffer
        // (RFC 3320 §8.4; byte_copy_left/right are the buffer's bounds).
        let append = |m: &mut [u8], bytes: &[u8]| {
            let mut dp = usize::from(word(m, at.decompressed_pointer));
            if !(cb..end).contains(&dp) {
                return false;
            }
            let mut rest = bytes;
            while !rest.is_empty() {
                let n = rest.len().min(end - dp);
                m[dp - 64..dp - 64 + n].copy_from_slice(&rest[..n]);
                rest = &rest[n..];
                dp += n;
                if dp == end {
                    dp = cb;
                }
            }
            bytecode::put_word(m, 64, at.decompressed_pointer, dp as u16);
            true
        };
        if v.flags & at.flag_shared != 0 && !append(m, v.shared) {
            return None;
        }
        if let Some(seq) = v.seq {
            bytecode::put_word(m, 64, at.fb_loc, at.requested_feedback_location);
            bytecode::put_word(m, 64, at.requested_feedback_location, at.requested_feedback_q);
            m[usize::from(at.requested_feedback_item) - 64] = seq;
        }
        for (k, id) in v.entries.iter().enumerate() {
            let a = usize::from(if k == 0 { at.announced_a } else { at.announced_b }) - 64;
            m[a] = 6;
            m[a + 1..a + 7].copy_from_slice(&id.0[..6]);
        }
        if !append(m, v.message) {
            return None;
        }
        // END-MESSAGE (..., $snapshot_length, 64, decompress, $snap_mal, snapshot_priority).
        creates.push((State::from_shared(64, image.decompress, at.state_min_access, snapshot), at.snapshot_priority));
        Some((creates, bound))
    }

    /// An upper bound on the cycles the peer spends on the message (RFC
    /// 3320 §9 costs, as the assembly states them): the mechanism's part,
    /// the fragment's per message byte, and the bytes the STATE-ACCESSes,
    /// STATE-CREATE and END-MESSAGE move.
    fn cycle_bound(&self, at: &ProgramSymbols, v: &MessageView<'_>) -> usize {
        let mut bound = at.mechanism_cycles + at.cycles_per_byte * v.message.len() + v.shared.len();
        if v.fresh {
            bound += self.bytecode.dictionary.len();
        }
        if v.flags & at.flag_save_bytecode != 0 {
            bound += self.bytecode.code.len();
        }
        if self.config.mechanism.saves_snapshots() {
            bound += usize::from(self.layout.buffer_end) - 64;
        }
        bound
    }

    /// UDVM memory from address 64 to buffer_end once :init has run
    /// (bytecode uploaded or accessed as a state): the code at its
    /// destination, zeros elsewhere, then :init's MULTILOAD, the
    /// dictionary's STATE-ACCESS into the buffer and the fragment's @init.
    fn initialised_memory(&self, at: &ProgramSymbols) -> Vec<u8> {
        let (cb, end) = (usize::from(self.layout.circular_buffer), usize::from(self.layout.buffer_end));
        let mut m = vec![0u8; end - 64];
        let d = usize::from(self.bytecode.destination) - 64;
        m[d..d + self.bytecode.code.len()].copy_from_slice(&self.bytecode.code);
        let dict = &self.bytecode.dictionary;
        bytecode::put_word(&mut m, 64, at.byte_copy_left, cb as u16);
        bytecode::put_word(&mut m, 64, at.byte_copy_right, end as u16);
        bytecode::put_word(&mut m, 64, at.input_bit_order, at.initial_input_bit_order);
        bytecode::put_word(&mut m, 64, at.decompressed_pointer, (cb + dict.len()) as u16);
        m[cb - 64..cb - 64 + dict.len()].copy_from_slice(dict);
        m
    }

    /// The match finder kept between messages (made if released).
    fn finder(&mut self) -> &mut Finder {
        let algorithm = self.config.algorithm;
        self.finder.get_or_insert_with(|| Box::new(Finder::for_algorithm(algorithm)))
    }

    /// The tokens for `message` after `window` and `extra`, which the
    /// match finder's history then ends with.
    fn encode(&mut self, window: &[u8], extra: &[u8], message: &[u8]) -> Vec<u8> {
        let (algorithm, format, effort) = (self.config.algorithm, self.format, self.config.effort);
        encode_tokens(algorithm, self.finder(), window, extra, message, format, effort)
    }
}

/// The items of a message's header that are not the shared state's.
struct HeaderItems {
    flags: u8,
    /// The bytes after the flags byte (feedback item, announced entries).
    items: Vec<u8>,
    seq: Option<u8>,
    /// Announced identifiers (flag_announce_a, flag_announce_b).
    entries: Vec<StateId>,
    /// The message as our shared state, if announced.
    own_shared: Option<State>,
}

/// The flag bits of the mechanism program (asm/mechanism.asm defines
/// them; every algorithm's program has the same).
const FLAG_SHARED: u8 = bytecode::lzss_symbols::FLAG_SHARED;
const FLAG_FEEDBACK: u8 = bytecode::lzss_symbols::FLAG_FEEDBACK;
const FLAG_ANNOUNCE_A: u8 = bytecode::lzss_symbols::FLAG_ANNOUNCE_A;
const FLAG_ANNOUNCE_B: u8 = bytecode::lzss_symbols::FLAG_ANNOUNCE_B;
const FLAG_SAVE_BYTECODE: u8 = bytecode::lzss_symbols::FLAG_SAVE_BYTECODE;
const FLAG_NO_SNAPSHOT: u8 = bytecode::lzss_symbols::FLAG_NO_SNAPSHOT;

/// What [`Compressor::predict`] reads of one algorithm's program (the
/// mechanism program with its fragment), from the constants build.rs
/// generates out of the assembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProgramSymbols {
    byte_copy_left: u16,
    byte_copy_right: u16,
    input_bit_order: u16,
    decompressed_pointer: u16,
    fb_loc: u16,
    snap_mal: u16,
    returned_parameters_location: u16,
    announced_a: u16,
    announced_b: u16,
    requested_feedback_location: u16,
    requested_feedback_item: u16,
    requested_feedback_q: u16,
    state_min_access: u16,
    bytecode_priority: u16,
    snapshot_priority: u16,
    flag_shared: u8,
    flag_save_bytecode: u8,
    flag_no_snapshot: u8,
    mechanism_cycles: usize,
    /// The fragment's cycles per message byte, at most.
    cycles_per_byte: usize,
    /// input_bit_order after the fragment's @init.
    initial_input_bit_order: u16,
}

/// The [`ProgramSymbols`] of the generated module `$m`.
macro_rules! program_symbols {
    ($m:path, $cycles_per_byte:expr, $initial_input_bit_order:expr) => {{
        use $m as s;
        ProgramSymbols {
            byte_copy_left: s::BYTE_COPY_LEFT,
            byte_copy_right: s::BYTE_COPY_RIGHT,
            input_bit_order: s::INPUT_BIT_ORDER,
            decompressed_pointer: s::DECOMPRESSED_POINTER,
            fb_loc: s::FB_LOC,
            snap_mal: s::SNAP_MAL,
            returned_parameters_location: s::RETURNED_PARAMETERS_LOCATION,
            announced_a: s::ANNOUNCED_A,
            announced_b: s::ANNOUNCED_B,
            requested_feedback_location: s::REQUESTED_FEEDBACK_LOCATION,
            requested_feedback_item: s::REQUESTED_FEEDBACK_ITEM,
            requested_feedback_q: s::REQUESTED_FEEDBACK_Q,
            state_min_access: s::STATE_MIN_ACCESS,
            bytecode_priority: s::BYTECODE_PRIORITY,
            snapshot_priority: s::SNAPSHOT_PRIORITY,
            flag_shared: s::FLAG_SHARED,
            flag_save_bytecode: s::FLAG_SAVE_BYTECODE,
            flag_no_snapshot: s::FLAG_NO_SNAPSHOT,
            mechanism_cycles: s::MECHANISM_CYCLES as usize,
            cycles_per_byte: $cycles_per_byte as usize,
            initial_input_bit_order: $initial_input_bit_order,
        }
    }};
}

impl Algorithm {
    /// The symbols of this algorithm's program that the peer's run is
    /// computed from.
    fn symbols(self) -> ProgramSymbols {
        match self {
            // The LZSS fragment leaves input_bit_order as :init's MULTILOAD sets it.
            Algorithm::Lzss => {
                program_symbols!(bytecode::lzss_symbols, bytecode::lzss_symbols::LZSS_CYCLES_PER_BYTE, 0)
            }
            #[cfg(feature = "deflate")]
            Algorithm::Deflate => program_symbols!(
                bytecode::deflate_symbols,
                bytecode::deflate_symbols::DEFLATE_CYCLES_PER_BYTE,
                bytecode::deflate_symbols::DEFLATE_INPUT_BIT_ORDER
            ),
            #[cfg(feature = "lz77")]
            Algorithm::Lz77 => {
                program_symbols!(bytecode::lz77_symbols, bytecode::lz77_symbols::LZ77_CYCLES_PER_BYTE, 0)
            }
        }
    }
}

/// A match finder over a bytecode's fresh window, hashed once and cloned
/// into each new compressor with that bytecode
/// ([`Compressor::fresh_finder`], [`Compressor::adopt_finder`]).
#[derive(Debug, Clone)]
pub struct FreshFinder(Finder);

/// The encoder's match finder, kept between messages.
#[derive(Debug, Clone)]
enum Finder {
    Lzss(MatchFinder),
    #[cfg(any(feature = "deflate", feature = "lz77"))]
    Chains(crate::chains::MatchFinder),
}

/// A point in a [`Finder`]'s history.
#[derive(Debug, Clone, Copy)]
enum FinderMark {
    Lzss(crate::lzss::HistoryMark),
    #[cfg(any(feature = "deflate", feature = "lz77"))]
    Chains(crate::chains::HistoryMark),
}

impl Finder {
    fn for_algorithm(algorithm: Algorithm) -> Finder {
        match algorithm {
            Algorithm::Lzss => Finder::Lzss(MatchFinder::default()),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            _ => Finder::Chains(crate::chains::MatchFinder::default()),
        }
    }

    /// Whether this is the kind of finder `algorithm` encodes with.
    fn serves(&self, algorithm: Algorithm) -> bool {
        match self {
            Finder::Lzss(_) => algorithm == Algorithm::Lzss,
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(_) => algorithm != Algorithm::Lzss,
        }
    }

    fn rebuilds(&self) -> usize {
        match self {
            Finder::Lzss(f) => f.rebuilds,
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => f.rebuilds,
        }
    }

    fn prepare(&mut self, window: &[u8]) {
        match self {
            Finder::Lzss(f) => f.prepare(window),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => f.prepare(window),
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        match self {
            Finder::Lzss(f) => f.append(bytes),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => f.append(bytes),
        }
    }

    fn append_hashed(&mut self, bytes: &[u8]) {
        match self {
            Finder::Lzss(f) => f.append_hashed(bytes),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => f.append_hashed(bytes),
        }
    }

    fn mark(&mut self) -> FinderMark {
        match self {
            Finder::Lzss(f) => FinderMark::Lzss(f.mark()),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => FinderMark::Chains(f.mark()),
        }
    }

    fn rollback(&mut self, mark: FinderMark) {
        match (self, mark) {
            (Finder::Lzss(f), FinderMark::Lzss(m)) => f.rollback(m),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            (Finder::Chains(f), FinderMark::Chains(m)) => f.rollback(m),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            _ => {}
        }
    }
}

/// The algorithm's tokens for `message`, written after `window` (the
/// circular buffer in chronological order) and `extra` (bytes the
/// mechanism adds to the buffer before the message).
fn encode_tokens(
    algorithm: Algorithm,
    finder: &mut Finder,
    window: &[u8],
    extra: &[u8],
    message: &[u8],
    format: LzssFormat,
    effort: Effort,
) -> Vec<u8> {
    let buffer_size = window.len();
    finder.prepare(window);
    finder.append(extra);
    // Room for the tokens of a message compressed to a quarter; more
    // grows the buffer.
    let room = message.len() / 4 + 32;
    match (algorithm, finder) {
        (Algorithm::Lzss, Finder::Lzss(f)) => {
            let mut bw = BitWriter::with_capacity(room);
            f.encode(message, buffer_size, format, effort, &mut bw);
            bw.finish()
        }
        #[cfg(feature = "deflate")]
        (Algorithm::Deflate, Finder::Chains(f)) => {
            let mut out = Vec::with_capacity(room);
            let params = crate::deflate::DeflateParams { max_chain: effort.max_chain };
            crate::deflate::encode_after(f, message, buffer_size, &params, &mut out);
            out
        }
        #[cfg(feature = "lz77")]
        (Algorithm::Lz77, Finder::Chains(f)) => {
            let mut out = Vec::with_capacity(room);
            let params = crate::lz77::Lz77Params { max_chain: effort.max_chain };
            crate::lz77::encode_after(f, message, buffer_size, &params, &mut out);
            out
        }
        #[cfg(any(feature = "deflate", feature = "lz77"))]
        (algorithm, finder) => {
            // A finder of the other kind (never kept: Compressor::finder
            // makes the algorithm's own); start one of the right kind.
            *finder = Finder::for_algorithm(algorithm);
            encode_tokens(algorithm, finder, window, extra, message, format, effort)
        }
    }
}

/// Sets the algorithm's own words in the bytecode image.
fn patch_algorithm(algorithm: Algorithm, image: &Image, code: &mut [u8], base: u16, format: LzssFormat) {
    let mut put = |name: &str, v: u16| {
        let at = image.label(name).unwrap_or_else(|| panic!("bytecode has no label {name}"));
        bytecode::put_word(code, base, at, v);
    };
    match algorithm {
        Algorithm::Lzss => {
            let ob = format.offset_bits;
            // Third group of the INPUT-HUFFMAN: '11' + ob bits.
            put("lzss_offset_extra_bits", u16::from(ob - 7));
            put("lzss_offset_lower", (3u32 << ob) as u16);
            put("lzss_offset_upper", ((1u32 << (ob + 2)) - 1) as u16);
        }
        #[cfg(feature = "deflate")]
        Algorithm::Deflate => {}
        #[cfg(feature = "lz77")]
        Algorithm::Lz77 => {}
    }
}

/// The state creation requests of a run, in order, with their priorities.
fn requested_states(pending: &sigcomp::Pending) -> Vec<(State, u16)> {
    pending
        .requests
        .iter()
        .filter_map(|r| match r {
            StateRequest::Create(c) => {
                Some((State::from_shared(c.address, c.instruction, c.min_access_len, c.value.clone()), c.priority))
            }
            StateRequest::Free(_) => None,
        })
        .collect()
}

/// What [`Compressor::predict`] needs to know of one message.
struct MessageView<'a> {
    /// No snapshot: the bytecode starts at :init.
    fresh: bool,
    flags: u8,
    seq: Option<u8>,
    /// Announced identifiers (flag_announce_a, flag_announce_b).
    entries: &'a [StateId],
    /// The part of the peer's shared state appended (flag_shared).
    shared: &'a [u8],
    message: &'a [u8],
    /// Length of the SigComp message (unframed).
    sig_len: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_program_places_the_mechanism_variables_alike() {
        // The flag constants above are the LZSS program's; the mechanism
        // program is the same text in every algorithm's, with fragments
        // whose variables lie below 64.
        let lzss = Algorithm::Lzss.symbols();
        for a in Algorithm::ALL {
            let s = a.symbols();
            assert_eq!(
                ProgramSymbols { cycles_per_byte: 0, initial_input_bit_order: 0, ..s },
                ProgramSymbols { cycles_per_byte: 0, initial_input_bit_order: 0, ..lzss },
                "{a:?}"
            );
        }
    }
}
