//! A SigComp endpoint: the decompressor for what the peer sends and a
//! compressor per compartment for what we send, tied together by feedback
//! (RFC 3320 §3.2, §6.3), shared states (RFC 3321) and NACKs (RFC 4077).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use sigcomp::{CompartmentId, Decompressor, Failure, Nack, Params, State, Transport};

use crate::compressor::{CompressError, Compressed, Compressor, Config, Mechanism};

/// What receiving one SigComp message gave.
#[derive(Debug, Clone)]
pub enum Received {
    /// A decompressed application message.
    Message { output: Vec<u8>, cycles: u64 },
    /// A NACK for a message we sent; the compressor has adjusted.
    Nack(sigcomp::NackReport),
}

/// A failure to decompress, with the NACK to send back (RFC 4077 §2.2).
#[derive(Debug, Clone)]
pub struct ReceiveError {
    pub failure: Failure,
    pub nack: Option<Vec<u8>>,
}

impl std::fmt::Display for ReceiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "decompression failed: {}", self.failure)
    }
}

impl std::error::Error for ReceiveError {}

pub struct Endpoint {
    local: Params,
    peer: Params,
    config: Config,
    decompressor: Decompressor,
    /// Boxed: the map's spare slots then cost a pointer, not a compressor.
    compressors: HashMap<CompartmentId, Box<Compressor>>,
    /// Our own shared state per compartment (the last message we announced).
    own_shared: HashMap<CompartmentId, sigcomp::StateId>,
    /// The last feedback item echoed to each compartment's peer: an item
    /// is returned once (a lost echo only delays the peer's use of state).
    echoed: HashMap<CompartmentId, Vec<u8>>,
    /// A user-specific dictionary the peer holds (RFC 3321 §3.3).
    user_dictionary: Option<Arc<[u8]>>,
    /// Compartments whose compressors keep their scratch (match finder,
    /// model UDVM memory), least recently compressing first.
    hot: VecDeque<CompartmentId>,
    scratch_compartments: usize,
    /// The bytecode the last new compressor built, shared with the next
    /// ones that build the same.
    bytecode: Option<Arc<crate::bytecode::Bytecode>>,
    /// A match finder over that bytecode's fresh window, cloned into each
    /// new compressor that shares it.
    fresh_finder: Option<crate::lzss::MatchFinder>,
}

/// How many compartments keep their compressor's scratch by default: a
/// busy server's active calls keep their chains; the thousands of idle
/// compartments hold only their states.
pub const DEFAULT_SCRATCH_COMPARTMENTS: usize = 64;

impl Endpoint {
    /// An endpoint offering `local` to its peers, expecting peers to offer
    /// `peer` (until their returned parameters say otherwise), compressing
    /// with `config`.
    pub fn new(local: Params, peer: Params, config: Config) -> Result<Endpoint, CompressError> {
        let decompressor = Decompressor::new(local).map_err(|_| CompressError::PeerTooSmall { dms: local.dms })?;
        // Checks the configuration against the assumed peer now, not at the
        // first message.
        Compressor::new(config, peer, local)?;
        Ok(Endpoint {
            local,
            peer,
            config,
            decompressor,
            compressors: HashMap::new(),
            own_shared: HashMap::new(),
            echoed: HashMap::new(),
            user_dictionary: None,
            hot: VecDeque::new(),
            scratch_compartments: DEFAULT_SCRATCH_COMPARTMENTS,
            bytecode: None,
            fresh_finder: None,
        })
    }

    /// Compress with `dictionary` in the window instead of the SIP/SDP
    /// dictionary: a user-specific dictionary (RFC 3321 §3.3) that the peer
    /// holds as a state (it called [`Endpoint::add_local_dictionary`] with
    /// the same bytes). Applies to compartments opened from now on.
    pub fn set_user_dictionary(&mut self, dictionary: &[u8]) {
        self.user_dictionary = Some(Arc::from(dictionary));
    }

    /// Makes `dictionary` a locally available state of our decompressor
    /// (identifier `State::new(0, 0, 6, dictionary)`), for peers that
    /// compress with it as their user dictionary.
    pub fn add_local_dictionary(&mut self, dictionary: &[u8]) -> sigcomp::StateId {
        let state = State::new(0, 0, 6, dictionary);
        let id = state.id;
        self.decompressor.states_mut().add_local(state);
        id
    }

    /// Keep at most `n` compartments hot (at least 1), the most recently
    /// used ones (compressing or receiving). An idle compartment's
    /// compressor releases its scratch ([`Compressor::release_scratch`]),
    /// and its states, at our decompressor and in the compressor's model of
    /// the peer, are kept packed ([`sigcomp::StateHandler::pack_compartment`],
    /// [`Compressor::pack_states`]): memory per idle compartment falls from
    /// ≈ 90 kB to its states, and those to about a third. A compartment
    /// that becomes active again unpacks its states and rehashes its window
    /// once; nothing it sends or accepts changes.
    pub fn set_scratch_compartments(&mut self, n: usize) {
        self.scratch_compartments = n.max(1);
        self.trim_scratch();
    }

    fn trim_scratch(&mut self) {
        while self.hot.len() > self.scratch_compartments {
            if let Some(old) = self.hot.pop_front() {
                if let Some(c) = self.compressors.get_mut(&old) {
                    c.release_scratch();
                    c.pack_states();
                }
                self.decompressor.states_mut().pack_compartment(old);
            }
        }
    }

    /// Packs `compartment`'s states now, at our decompressor and in its
    /// compressor's model of the peer, as happens when it stops being one
    /// of the hot compartments ([`Endpoint::set_scratch_compartments`]),
    /// but keeping its compressor's scratch: for an application that knows
    /// a peer has gone quiet. The next message to or from it unpacks them.
    pub fn pack_compartment(&mut self, compartment: CompartmentId) {
        if let Some(c) = self.compressors.get_mut(&compartment) {
            c.pack_states();
        }
        self.decompressor.states_mut().pack_compartment(compartment);
        self.hot.retain(|c| *c != compartment);
    }

    /// `compartment` compresses or receives now: it goes to the back of
    /// the hot list, its states unpacked if it was idle.
    fn touch(&mut self, compartment: CompartmentId) {
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
    }

    pub fn decompressor(&self) -> &Decompressor {
        &self.decompressor
    }

    /// For tests and fault injection: the decompressor's state handler.
    pub fn decompressor_mut(&mut self) -> &mut Decompressor {
        &mut self.decompressor
    }

    pub fn compressor(&self, compartment: CompartmentId) -> Option<&Compressor> {
        self.compressors.get(&compartment).map(|c| &**c)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    fn compressor_mut(&mut self, compartment: CompartmentId) -> Result<&mut Compressor, CompressError> {
        if !self.compressors.contains_key(&compartment) {
            let mut c =
                Compressor::with_user_dictionary(self.config, self.peer, self.local, self.user_dictionary.clone())?;
            self.share_bytecode(&mut c);
            self.hold_own_bytecode(&mut c);
            self.compressors.insert(compartment, Box::new(c));
        }
        Ok(self.compressors.get_mut(&compartment).expect("inserted above"))
    }

    /// Compresses `message` for the peer of `compartment`.
    pub fn compress(&mut self, compartment: CompartmentId, message: &[u8]) -> Result<Compressed, CompressError> {
        let pending = self.decompressor.feedback(compartment).and_then(|f| f.requested_item.clone());
        let returned = pending.filter(|item| self.echoed.get(&compartment) != Some(item));
        // Shared mode: announce the message only if saving it here evicts
        // nothing the peer created (RFC 4896 §5.3). Our shared states have
        // priority 65535, so the state handler frees the oldest of them
        // first; older ones stay while there is room, so a peer whose view
        // lags (acknowledgements and announcements delayed over UDP) still
        // finds the one it names.
        let shared = self.config.mechanism == Mechanism::Shared;
        let mut announce = false;
        if shared {
            let cost = message.len() as u32 + 64;
            let (used, sms, ours) = match self.decompressor.states().compartment(compartment) {
                Some(c) => {
                    let ours: u32 = c.entries.iter().filter(|e| e.priority == 65535).map(|e| e.cost).sum();
                    (c.used, c.sms, ours)
                }
                None => (0, self.local.sms, 0),
            };
            announce = used - ours + cost <= sms;
        }
        self.touch(compartment);
        let c = self.compressor_mut(compartment)?;
        let out = c.compress(message, returned.as_deref(), announce)?;
        if let Some(item) = returned {
            self.echoed.insert(compartment, item);
        }
        if let Some(state) = &out.announced {
            let states = self.decompressor.states_mut();
            states.create_state(compartment, state.clone(), 65535);
            self.own_shared.insert(compartment, state.id);
        }
        Ok(out)
    }

    /// Receives one SigComp message (for a stream, one unframed message)
    /// from the peer of `compartment`, which the application accepts.
    pub fn receive(&mut self, compartment: CompartmentId, msg: &[u8]) -> Result<Received, ReceiveError> {
        if Nack::parse(msg).is_ok() {
            let internal = |details: &str| ReceiveError {
                failure: Failure {
                    reason: sigcomp::Reason::InternalError,
                    opcode: 0,
                    pc: 0,
                    details: details.as_bytes().to_vec(),
                    cycles: 0,
                },
                nack: None,
            };
            let c = self.compressor_mut(compartment).map_err(|_| internal("no compressor"))?;
            let report = c.on_nack(msg).map_err(|_| internal("bad NACK"))?;
            // RFC 4077 §2.3: a NACK may tell the peer's real memory size or
            // cycles; compress for those from now on.
            let mut peer = *c.peer();
            if let Some(cpb) = report.peer_cycles_per_bit {
                if let Some(v) = [16u16, 32, 64, 128].into_iter().find(|v| u32::from(*v) == u32::from(cpb)) {
                    peer.cpb = v;
                }
            }
            if let Some(dms) = report.peer_decompression_memory_size {
                let dms = u32::from(dms);
                if [2048u32, 4096, 8192, 16384, 32768, 65536].contains(&dms) {
                    peer.dms = dms;
                }
            }
            if peer != *c.peer() {
                self.renew_compressor(compartment, peer);
            }
            return Ok(Received::Nack(report));
        }
        // The message's compartment becomes hot before decompressing, so
        // that its states are read unpacked.
        self.touch(compartment);
        let transport = self.config.transport;
        let d = match self.decompressor.decompress(msg, transport) {
            Ok(d) => d,
            Err(failure) => {
                let nack = self.decompressor.nack_for(msg, &failure);
                return Err(ReceiveError { failure, nack });
            }
        };
        let returned_item = d.pending.returned_feedback.clone();
        let returned_params = d.pending.returned_parameters.clone();
        let output = d.output;
        let cycles = d.cycles;
        self.decompressor.accept(d.pending, compartment);
        // The peer's announced parameters (RFC 3320 §9.4.9) replace what we
        // assumed; a change means a new layout, so the compartment's
        // compressor starts over.
        if let Some(rp) = &returned_params {
            if let Some(current) = self.compressor_mut(compartment).ok().map(|c| *c.peer()) {
                let mut peer = current;
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
                if peer != current && peer.validate().is_ok() {
                    self.renew_compressor(compartment, peer);
                }
            }
        }
        if let Ok(c) = self.compressor_mut(compartment) {
            if let Some(item) = returned_item {
                c.on_returned_feedback(&item);
            }
            for id in returned_params.map(|p| p.local_states).unwrap_or_default() {
                if !c.on_peer_local_state(&id) {
                    c.on_peer_shared_state(&output, &id);
                }
            }
        }
        Ok(Received::Message { output, cycles })
    }

    /// Replaces a compartment's compressor by one for `peer` (its states at
    /// the old layout are no longer used).
    fn renew_compressor(&mut self, compartment: CompartmentId, peer: Params) {
        if let Ok(mut c) = Compressor::with_user_dictionary(self.config, peer, self.local, self.user_dictionary.clone())
        {
            self.share_bytecode(&mut c);
            self.hold_own_bytecode(&mut c);
            self.compressors.insert(compartment, Box::new(c));
        }
    }

    /// One copy of identical bytecode for all compartments.
    fn share_bytecode(&mut self, c: &mut Compressor) {
        match &self.bytecode {
            Some(b) if c.share_bytecode(b) => {}
            _ => {
                self.bytecode = Some(c.bytecode().clone());
                self.fresh_finder = c.fresh_finder();
            }
        }
        if let Some(f) = &self.fresh_finder {
            c.adopt_finder(f.clone());
        }
    }

    /// Keeps the compressor's bytecode as a locally available state of our
    /// decompressor and lets the compressor announce it: a peer that
    /// compresses with the same bytecode (same algorithm, mechanism and
    /// parameters) then references it instead of uploading it.
    fn hold_own_bytecode(&mut self, c: &mut Compressor) {
        if self.config.mechanism != Mechanism::Basic {
            self.decompressor.states_mut().add_local(c.bytecode_state());
            c.announce_own_bytecode();
        }
    }

    /// Ends a compartment (RFC 3320 §4.1: the application closes it): its
    /// compressor, its states at our decompressor and its feedback go.
    pub fn close_compartment(&mut self, compartment: CompartmentId) {
        self.compressors.remove(&compartment);
        self.hot.retain(|c| *c != compartment);
        self.own_shared.remove(&compartment);
        self.echoed.remove(&compartment);
        self.decompressor.close_compartment(compartment);
    }

    /// The transport this endpoint's compressors assume.
    pub fn transport(&self) -> Transport {
        self.config.transport
    }
}
