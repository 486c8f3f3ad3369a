//! The compressor's decompressor with its peer's parameters (RFC 3320
//! §5.1: the compressor knows what the peer's decompressor will do), held
//! whole while its compartment is active and as its frozen state handler
//! alone while the compartment is idle: the decompressor itself (about
//! 400 bytes besides its states) is made again when the compartment next
//! needs it.

use sigcomp::params::ParamError;
use sigcomp::state::{FrozenStates, PackDictionary};
use sigcomp::{CompartmentId, Decompressor, Params, State, StateHandler, StateId};

/// The peer's decompressor: live, or its state handler frozen.
pub(super) struct PeerDecompressor {
    peer: Params,
    /// `Some` unless frozen.
    live: Option<Box<Decompressor>>,
    /// `Some` while frozen ([`PeerDecompressor::freeze`]).
    frozen: Option<Box<FrozenStates>>,
}

/// The states of a [`PeerDecompressor`], live or frozen, for reading.
#[derive(Clone, Copy)]
pub(super) enum PeerStates<'a> {
    Live(&'a StateHandler),
    Frozen(&'a FrozenStates),
}

impl<'a> PeerStates<'a> {
    /// The item with this full identifier.
    pub(super) fn get(self, id: &StateId) -> Option<&'a State> {
        match self {
            PeerStates::Live(h) => h.get(id),
            PeerStates::Frozen(f) => f.get(id),
        }
    }

    /// Bytes the values of `compartment`'s items take in memory.
    pub(super) fn compartment_resident_bytes(&self, compartment: CompartmentId) -> usize {
        match self {
            PeerStates::Live(h) => h.compartment_resident_bytes(compartment),
            PeerStates::Frozen(f) => f.compartment_resident_bytes(compartment),
        }
    }

    /// The dictionaries the packs of `compartment`'s items were made
    /// against.
    pub(super) fn compartment_pack_dictionaries(&self, compartment: CompartmentId) -> Vec<PackDictionary> {
        match self {
            PeerStates::Live(h) => h.compartment_pack_dictionaries(compartment),
            PeerStates::Frozen(f) => f.compartment_pack_dictionaries(compartment),
        }
    }
}

impl PeerDecompressor {
    /// A decompressor offering `peer`, with the locally available states
    /// every SigComp endpoint for SIP holds ([`Decompressor::new`]).
    pub(super) fn new(peer: Params) -> Result<PeerDecompressor, ParamError> {
        let live = Decompressor::new(peer)?;
        Ok(PeerDecompressor { peer, live: Some(Box::new(live)), frozen: None })
    }

    /// The decompressor, thawed first if frozen.
    pub(super) fn live(&mut self) -> &mut Decompressor {
        let peer = self.peer;
        let frozen = &mut self.frozen;
        self.live.get_or_insert_with(|| {
            // `peer` was validated when the decompressor was first made
            // (PeerDecompressor::new), and validation depends on it alone.
            #[allow(clippy::expect_used)]
            let mut d = Decompressor::bare(peer).expect("parameters validated by PeerDecompressor::new");
            if let Some(states) = frozen.take() {
                *d.states_mut() = states.thaw();
            }
            Box::new(d)
        })
    }

    /// The state handler, thawed first if frozen.
    pub(super) fn states_mut(&mut self) -> &mut StateHandler {
        self.live().states_mut()
    }

    /// The states, as they are.
    pub(super) fn states(&self) -> PeerStates<'_> {
        match (&self.live, &self.frozen) {
            (Some(d), _) => PeerStates::Live(d.states()),
            (None, Some(f)) => PeerStates::Frozen(f),
            // Never: one of the two is always held. An empty handler's
            // answers (nothing held) would be those of a new decompressor.
            (None, None) => PeerStates::Live(empty_handler()),
        }
    }

    /// Makes the pack dictionary of the states' next pack `dictionary`.
    pub(super) fn set_pack_dictionary(&mut self, dictionary: PackDictionary) {
        match (&mut self.live, &mut self.frozen) {
            (None, Some(f)) => f.set_pack_dictionary(dictionary),
            _ => self.states_mut().set_pack_dictionary(dictionary),
        }
    }

    /// The values of `compartment` that a pack would take now (none while
    /// frozen: its items were packed before it froze).
    pub(super) fn packable_values(&self, compartment: CompartmentId) -> Vec<u8> {
        match &self.live {
            Some(d) => d.states().packable_values(compartment),
            None => Vec::new(),
        }
    }

    /// Tokens the live decompressor decoded natively since it was made or
    /// last thawed (0 while frozen).
    pub(super) fn native_tokens(&self) -> u64 {
        self.live.as_ref().map_or(0, |d| d.metrics().native_tokens)
    }

    /// Frees the scratch of a live decompressor (its UDVM memory).
    pub(super) fn release_scratch(&mut self) {
        if let Some(d) = &mut self.live {
            d.release_scratch();
        }
    }

    /// Keeps only the state handler, frozen
    /// ([`sigcomp::StateHandler::freeze`]), until [`PeerDecompressor::live`]
    /// or [`PeerDecompressor::states_mut`] next needs the decompressor.
    pub(super) fn freeze(&mut self) {
        if let Some(mut d) = self.live.take() {
            self.frozen = Some(Box::new(std::mem::take(d.states_mut()).freeze()));
        }
    }

    /// Whether the decompressor is frozen.
    pub(super) fn is_frozen(&self) -> bool {
        self.live.is_none()
    }
}

/// A state handler holding nothing.
fn empty_handler() -> &'static StateHandler {
    static EMPTY: std::sync::OnceLock<StateHandler> = std::sync::OnceLock::new();
    EMPTY.get_or_init(StateHandler::default)
}
