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
//! a real [`sigcomp::Decompressor`] with the peer's parameters runs the message
//! instead. A `PeerModel` keeps the peer's state memory by the peer's
//! retention rules, so a state the peer has evicted is never referenced.

mod acknowledgements;
mod peer_decompressor;
mod prediction;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use sigcomp::nack::{NackParseError, NackReport, SentRecord};
use sigcomp::state::{CreateOutcome, PackDictionary};
use sigcomp::udvm::StateRequest;
use sigcomp::wire;
use sigcomp::{CompartmentId, Params, State, StateId, Transport};

use crate::bytecode::{self, Bytecode, DictionarySource, Image, Layout};
pub use crate::config::{Algorithm, CompressError, Config, Level, LevelError, Mechanism, SnapshotExtent};
pub use crate::finder::FreshFinder;
use crate::finder::{encode_tokens, Finder};
use crate::lzss::{LzssFormat, MatchFinder};
use crate::peer_model::{place_after_last_anchor, PeerModel};
use crate::sent_log::SentMessages;
use peer_decompressor::PeerDecompressor;

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

/// Whether [`Compressor::compress`] announces the message as our shared
/// state (RFC 3321 shared mode): the peer may then compress against it.
/// Only the shared mechanism announces; the others take both as
/// [`AnnounceMessage::No`]. The bytecode's own announcement
/// ([`Compressor::announce_own_bytecode`]) does not depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnounceMessage {
    /// The message is announced as our shared state; the caller then
    /// creates that state locally ([`Compressed::announced`]).
    AsSharedState,
    /// The message is not announced.
    No,
}

/// What one compressed message was, for reports.
#[derive(Debug, Clone, Default)]
pub struct Compressed {
    /// The SigComp message as sent (RFC 3320 §7: header, bytecode or
    /// partial state identifier, then the compressed data).
    pub message: Vec<u8>,
    /// Bytes of the compressed payload (tokens), without header and flags.
    pub payload_len: usize,
    /// The message carries bytecode (RFC 3320 §7.3): the mechanism
    /// program for a fresh start, or the literal fallback.
    pub uploaded_bytecode: bool,
    /// The state the header names instead of bytecode: the snapshot the
    /// message continues from, or the bytecode saved as state; `None` when
    /// bytecode is uploaded.
    pub used_state: Option<StateId>,
    /// The peer's shared state (RFC 3321 shared mode) that the message
    /// appends to the circular buffer (flag 0x80 of asm/mechanism.asm),
    /// if any.
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
    model: PeerDecompressor,
    sent: SentMessages,
    /// Hash chains over the history, kept between messages; dropped by
    /// [`Compressor::release_scratch`] and rebuilt on the next message.
    finder: Option<Box<Finder>>,
    /// Rebuilds done by finders since released.
    released_rebuilds: usize,
    /// Messages the model decompressor ran (the others were computed).
    model_runs: usize,
    /// The model's states are packed ([`Compressor::pack_states`]), and
    /// the model decompressor frozen.
    packed: bool,
    /// The buffer the window of each message is laid out in, kept with
    /// the match finder.
    window: Vec<u8>,
}

const MODEL: CompartmentId = CompartmentId(0);

/// Sent messages remembered for NACKs (RFC 4077 §2.3). A NACK answers a
/// message within about one round trip, when a handful are in flight;
/// 32 records (≈ 80 B each, [`SentMessages`]) keep that with a wide margin without every
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
        let image = config.image();
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
                value: sigcomp::State::sip_sdp_dictionary().shared_value(),
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
        let mut model = PeerDecompressor::new(peer).map_err(CompressError::PeerParams)?;
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
            sent: SentMessages::new(SENT_LOG),
            finder: None,
            released_rebuilds: 0,
            model_runs: 0,
            packed: false,
            window: Vec::new(),
        })
    }

    /// The settings this compressor was made with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Where the circular buffer lies in the peer's UDVM memory, planned
    /// from the peer's DMS and SMS when the compressor was made.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The bytecode this compressor uploads, filled in for the peer's
    /// layout (possibly another compressor's copy, see
    /// [`Compressor::share_bytecode`]).
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

    /// The parameters this endpoint offers, which the bytecode returns to
    /// the peer with every message (RFC 3320 §9.4.9).
    pub fn local(&self) -> &Params {
        &self.local
    }

    /// The user-specific dictionary (RFC 3321 §3.3) loaded into the window
    /// instead of the SIP/SDP dictionary of RFC 3485, if one was given.
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
        if self.packed {
            return 0;
        }
        self.packed = true;
        // What the compartment keeps between messages, without the room
        // its growth left.
        self.snapshots.shrink_to_fit();
        self.awaiting.shrink_to_fit();
        self.acknowledged.shrink_to_fit();
        self.sent.shrink_to_fit();
        let saved = self.model.states_mut().pack_compartment(MODEL);
        // The decompressor and its handler's index and tables cost more
        // than a few packed items: an idle compartment keeps the handler
        // frozen, as two short lists.
        self.model.freeze();
        saved
    }

    /// Makes [`Compressor::pack_states`] pack against `dictionary` from now
    /// on (packs made before keep theirs).
    pub fn set_pack_dictionary(&mut self, dictionary: PackDictionary) {
        self.model.set_pack_dictionary(dictionary);
    }

    /// The model's values [`Compressor::pack_states`] would pack now, one
    /// after another: samples for a [`PackDictionary`] (none once packed).
    pub fn packable_model_values(&self) -> Vec<u8> {
        self.model.packable_values(MODEL)
    }

    /// The dictionaries the model's packed values were packed against.
    pub fn model_pack_dictionaries(&self) -> Vec<PackDictionary> {
        self.model.states().compartment_pack_dictionaries(MODEL)
    }

    /// Undoes [`Compressor::pack_states`].
    fn unpack_states(&mut self) {
        if !self.packed {
            return;
        }
        self.packed = false;
        self.model.states_mut().unpack_compartment(MODEL);
    }

    /// Whether the model decompressor is frozen ([`Compressor::pack_states`]):
    /// only its states are held.
    pub fn model_frozen(&self) -> bool {
        self.model.is_frozen()
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

    /// Tokens the model decompressor decoded natively since it was last
    /// woken from idle (sigcomp's native decoders serve the model as they
    /// serve the receiver).
    pub fn model_native_tokens(&self) -> u64 {
        self.model.native_tokens()
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

    fn next_seq(&mut self) -> u8 {
        self.seq = (self.seq + 1) % 128;
        self.seq
    }

    /// Compresses one application message. `returned_feedback` is the item
    /// the peer asked us to echo (it goes into the header, RFC 3320 §7.1).
    /// `announce` says whether the message is announced as our shared
    /// state ([`AnnounceMessage`]).
    pub fn compress(
        &mut self,
        message: &[u8],
        returned_feedback: Option<&[u8]>,
        announce: AnnounceMessage,
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
        let image = self.config.image();
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
            input.extend(encode_tokens(
                algorithm,
                &mut finder,
                &window,
                &[],
                message,
                format,
                self.config.level.effort(),
            ));
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
        let d = self.model.live().decompress(sig, self.config.transport).map_err(CompressError::DoesNotFit)?;
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
        announce: AnnounceMessage,
    ) -> Result<Compressed, CompressError> {
        let (base, base_memory) = self.newest_usable_snapshot().unzip();
        let mut window = std::mem::take(&mut self.window);
        match &base_memory {
            Some(m) => self.layout.window_into(m, self.decompressed_pointer(m), &mut window),
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
        let appended = shared_len.unwrap_or(0) + message.len();
        if flags & FLAG_NO_SNAPSHOT == 0 && self.snapshot_may_be_short(base_memory.as_deref(), appended) {
            flags |= FLAG_SHORT_SNAPSHOT;
        }
        input[0] = flags;
        input.extend_from_slice(&header.items);
        let payload_len = tokens.len();
        input.extend_from_slice(&tokens);
        let (sig, uploaded, used_state) = self.emit(base.as_ref(), returned_feedback, &input)?;

        let shared_bytes = &shared_value[..shared_len.unwrap_or(0).min(shared_value.len())];
        let view = MessageView {
            fresh: base.is_none(),
            reloads_dictionary: base_memory.as_deref().is_some_and(|m| self.continues_from_short(m)),
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
        // The whole memory's length: a short snapshot (flag 0x02) is no
        // longer, and whether this one is short is known only once the
        // message is encoded, so the test errs toward saving no snapshot.
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
            .find_map(|s| Some((s.clone(), self.whole_memory(self.snapshot_memory(&s.id)?)?)))
    }

    /// The flags and items after the flags byte other than the shared
    /// state's (asm/mechanism.asm): the feedback request, the announced
    /// entries, the request to save the bytecode.
    fn header_items(&mut self, message: &[u8], announce: AnnounceMessage, snapshot: bool) -> HeaderItems {
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
        let own_shared = (announce == AnnounceMessage::AsSharedState && mech == Mechanism::Shared)
            .then(|| State::new(0, 0, 6, message));
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

    /// The match finder kept between messages (made if released).
    fn finder(&mut self) -> &mut Finder {
        let algorithm = self.config.algorithm;
        self.finder.get_or_insert_with(|| Box::new(Finder::for_algorithm(algorithm)))
    }

    /// The tokens for `message` after `window` and `extra`, which the
    /// match finder's history then ends with.
    fn encode(&mut self, window: &[u8], extra: &[u8], message: &[u8]) -> Vec<u8> {
        let (algorithm, format, effort) = (self.config.algorithm, self.format, self.config.level.effort());
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
const FLAG_SHORT_SNAPSHOT: u8 = bytecode::lzss_symbols::FLAG_SHORT_SNAPSHOT;

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
    /// The snapshot it continues from was short: :decompress loads the
    /// dictionary part again.
    reloads_dictionary: bool,
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
