//! The decompressor dispatcher (RFC 3320 §4.2, §7) of one endpoint.
//!
//! Decompression is two explicit steps, as RFC 3320 §4.3 and §6.3 require:
//! [`Decompressor::decompress`] runs the UDVM and returns the output plus
//! the [`Pending`] state requests and feedback; nothing is stored until the
//! application authenticates the message and calls
//! [`Decompressor::accept`] with a compartment identifier (or drops the
//! pending part, which discards it).

use sha1::{Digest, Sha1};

pub use crate::feedback::Feedback;
use crate::feedback::{RequestedFeedback, ReturnedParameters};
use crate::nack::{Failure, Nack, Reason};
use crate::params::{ParamError, Params};
use crate::state::{CompartmentId, CreateOutcome, Limits, State, StateHandler, StateId, UnpackCache};
use crate::udvm::{DecodeCache, Machine, NativeMemo, StateRequest};
use crate::wire::{destination_address, Body, Header};

/// How the message arrived: it sets the UDVM memory size (RFC 3320 §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Message-based (UDP): UDVM memory = DMS − message size, at most 65536.
    Message,
    /// Stream-based (TCP): UDVM memory = DMS / 2, at most 65536.
    Stream,
}

/// What the application must decide on before state is created.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pending {
    /// The state creation and free requests of the message, in the order
    /// the bytecode made them (RFC 3320 §9.4.9).
    pub requests: Vec<StateRequest>,
    /// The returned feedback item from the message header (RFC 3320 §7.1),
    /// for our compressor.
    pub returned_feedback: Option<Vec<u8>>,
    /// What the peer asks us to return or stop doing (RFC 3320 Figure 12);
    /// None to keep what was asked before (RFC 4896 §9.2).
    pub requested_feedback: Option<RequestedFeedback>,
    /// The peer's parameters and locally available states (RFC 3320
    /// Figure 13), if the message gave them.
    pub returned_parameters: Option<ReturnedParameters>,
}

/// A successfully decompressed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decompressed {
    /// The decompressed message (RFC 3320 §9.4.8), at most
    /// [`MAX_OUTPUT`](crate::udvm::MAX_OUTPUT) bytes.
    pub output: Vec<u8>,
    /// Whether the bytecode produced a message at all (RFC 3320 §9.4.8).
    pub output_seen: bool,
    /// UDVM cycles used (RFC 3320 §8.6).
    pub cycles: u64,
    /// State requests and feedback, applied only by
    /// [`Decompressor::accept`].
    pub pending: Pending,
}

/// What accepting a message did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Accepted {
    /// Items created or refreshed, in request order.
    pub created: Vec<StateId>,
    /// Creation requests the state handler turned down (SMS 0, clash).
    pub rejected: usize,
    /// Items the message's STATE-FREE requests removed from the
    /// compartment (RFC 3320 §9.4.7).
    pub freed: Vec<StateId>,
    /// Other compartments closed to keep within the [`Limits`], least
    /// recently used first (also returned by
    /// [`Decompressor::take_evicted`]).
    pub evicted: Vec<CompartmentId>,
}

/// Counters and sizes of one endpoint's decompressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Metrics {
    /// Compartments open.
    pub compartments: usize,
    /// State memory of all compartments, as RFC 3320 §6.2 accounts it.
    pub state_bytes: usize,
    /// Real memory the stored state takes: its values, each item once,
    /// and the measured overhead of each entry
    /// ([`StateHandler::real_bytes`]).
    pub resident_bytes: usize,
    /// Compartments closed to keep within the limits since creation.
    pub evicted_compartments: u64,
    /// Announced locally available state identifiers not kept
    /// ([`crate::udvm::MAX_ANNOUNCED_STATES`]) since creation.
    pub announced_ids_dropped: u64,
    /// Tokens of recognised bytecode decoded natively since creation
    /// ([`Decompressor::set_native_decoders`]).
    pub native_tokens: u64,
}

/// Sets `memory` to `size` bytes: `bytes` at `at`, zeros elsewhere
/// (RFC 3320 §7), each byte written once.
fn fill_memory(memory: &mut Vec<u8>, size: usize, at: usize, bytes: &[u8]) {
    memory.clear();
    memory.resize(at, 0);
    memory.extend_from_slice(bytes);
    memory.resize(size, 0);
}

/// One receiving endpoint: parameters, state handler and scratch memory.
#[derive(Debug)]
pub struct Decompressor {
    params: Params,
    states: StateHandler,
    memory: Vec<u8>,
    /// The UDVM's decoded instructions, kept with the memory.
    decoded: DecodeCache,
    announced_ids_dropped: u64,
    /// The last output's length: the next output's buffer starts that
    /// large.
    output_hint: usize,
    /// Whether recognised token loops run natively (`udvm/native.rs`).
    native: bool,
    native_tokens: u64,
    /// Token loops recognised in earlier messages.
    native_memo: NativeMemo,
}

impl Decompressor {
    /// An endpoint offering `params`, with the SIP/SDP (RFC 3485) and
    /// presence (RFC 5112) dictionaries as locally available state.
    pub fn new(params: Params) -> Result<Decompressor, ParamError> {
        let mut d = Decompressor::bare(params)?;
        d.states.add_local(State::sip_sdp_dictionary());
        d.states.add_local(State::presence_dictionary());
        Ok(d)
    }

    /// An endpoint with no locally available state.
    pub fn bare(params: Params) -> Result<Decompressor, ParamError> {
        params.validate()?;
        Ok(Decompressor {
            params,
            states: StateHandler::new(params.sms),
            memory: Vec::new(),
            decoded: DecodeCache::default(),
            announced_ids_dropped: 0,
            output_hint: 0,
            native: true,
            native_tokens: 0,
            native_memo: NativeMemo::default(),
        })
    }

    /// Whether the token loops of recognised bytecode (sigkit's LZSS, LZ77
    /// and Deflate, Open SigComp's Deflate) run natively beside the UDVM
    /// (on by default). The results are the same either way, cycle for
    /// cycle ([`Machine::without_native`]); off runs every instruction in
    /// the UDVM, the reference.
    pub fn set_native_decoders(&mut self, on: bool) {
        self.native = on;
    }

    /// The parameters this endpoint offers.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The state handler: every compartment's state and feedback.
    pub fn states(&self) -> &StateHandler {
        &self.states
    }

    /// The state handler, to add local state or close compartments.
    pub fn states_mut(&mut self) -> &mut StateHandler {
        &mut self.states
    }

    /// The feedback received under `compartment`, if it is open and
    /// received any.
    pub fn feedback(&self, compartment: CompartmentId) -> Option<&Feedback> {
        self.states.feedback(compartment)
    }

    /// The limits on compartments and state memory in force
    /// ([`Limits::default`] unless set).
    pub fn limits(&self) -> Limits {
        self.states.limits()
    }

    /// Sets the limits on compartments and state memory; compartments
    /// beyond them are closed at once, least recently used first (see
    /// [`Decompressor::take_evicted`]).
    pub fn set_limits(&mut self, limits: Limits) {
        self.states.set_limits(limits);
    }

    /// Marks `compartment` as used now, opening it if new: the
    /// application calls it when it compresses for the compartment, so
    /// that a compartment it sends on is not the first to be closed.
    /// [`Decompressor::accept`] and every state creation touch their
    /// compartment themselves.
    pub fn touch(&mut self, compartment: CompartmentId) {
        self.states.touch(compartment);
    }

    /// The compartments closed to keep within the [`Limits`] since the
    /// last call, whatever caused it (accepting, touching, creating state
    /// through [`Decompressor::states_mut`], setting the limits), least
    /// recently used first; their states and feedback are gone. Kept for
    /// at most [`crate::state::MAX_UNTAKEN_EVICTIONS`] compartments.
    pub fn take_evicted(&mut self) -> Vec<CompartmentId> {
        self.states.take_evicted()
    }

    /// Sizes and counters. Walks the stored items for `resident_bytes`.
    pub fn metrics(&self) -> Metrics {
        Metrics {
            compartments: self.states.compartment_count(),
            state_bytes: self.states.state_bytes(),
            resident_bytes: self.states.real_bytes(),
            evicted_compartments: self.states.evictions(),
            announced_ids_dropped: self.announced_ids_dropped,
            native_tokens: self.native_tokens,
        }
    }

    /// Frees the UDVM memory kept between messages (up to DMS bytes) and
    /// its decoded instructions; the next message allocates them again.
    pub fn release_scratch(&mut self) {
        self.memory = Vec::new();
        self.decoded = DecodeCache::default();
    }

    /// UDVM memory size for a message of `len` bytes (RFC 3320 §7).
    pub fn udvm_memory_size(&self, len: usize, transport: Transport) -> usize {
        let dms = self.params.dms as usize;
        match transport {
            Transport::Message => dms.saturating_sub(len).min(65536),
            Transport::Stream => (dms / 2).min(65536),
        }
    }

    /// Decompresses one complete SigComp message (for a stream, one message
    /// after record marking has been removed).
    pub fn decompress(&mut self, msg: &[u8], transport: Transport) -> Result<Decompressed, Failure> {
        let header = Header::parse(msg)?;
        let mem_size = self.udvm_memory_size(msg.len(), transport);
        let mut unpacked = UnpackCache::default();
        // RFC 3320 §8.7 item 2, a message larger than the DMS, leaves no UDVM
        // memory: uploading then fails BYTECODES_TOO_LARGE and accessing
        // state fails SEGFAULT, below.

        let (start, partial_len, state_len) = match header.body {
            Body::Bytecode { code, destination_bits } => {
                if code.is_empty() {
                    // code_len 0 is a NACK (RFC 4077 §3): nothing to run.
                    return Err(Failure::new(Reason::InvalidCodeLocation));
                }
                let dest = usize::from(destination_address(destination_bits));
                if dest + code.len() > mem_size {
                    let dms = self.params.dms.min(0xFFFF) as u16;
                    return Err(Failure::with_details(Reason::BytecodesTooLarge, &dms.to_be_bytes()));
                }
                fill_memory(&mut self.memory, mem_size, dest, code);
                (dest as u16, 0u16, 0u16)
            }
            Body::StateId(partial) => {
                let state = match self.states.lookup(partial) {
                    Ok(s) => s,
                    Err(crate::state::LookupError::NotUnique) => {
                        return Err(Failure::with_details(Reason::IdNotUnique, partial))
                    }
                    Err(_) => return Err(Failure::with_details(Reason::StateNotFound, partial)),
                };
                let a = usize::from(state.address);
                if a + state.len() > mem_size {
                    return Err(Failure::new(Reason::Segfault));
                }
                let (buffer, at) = state.bytes_in(&mut unpacked);
                let Some(value) = buffer.get(at..at + state.len()) else { return Err(Failure::new(Reason::Segfault)) };
                fill_memory(&mut self.memory, mem_size, a, value);
                (state.instruction, partial.len() as u16, state.len() as u16)
            }
        };
        let mem = &mut self.memory[..];
        // Useful values (RFC 3320 §7.2, Figure 5); bytes 10..32 are zero.
        if mem_size < 32 {
            return Err(Failure::new(Reason::Segfault));
        }
        let useful =
            [(mem_size % 65536) as u16, self.params.cpb, u16::from(self.params.version), partial_len, state_len];
        for (i, v) in useful.iter().enumerate() {
            mem[2 * i..2 * i + 2].copy_from_slice(&v.to_be_bytes());
        }
        mem[10..32].fill(0);

        let mut output = Vec::with_capacity(self.output_hint.min(crate::udvm::MAX_OUTPUT));
        let machine = Machine::new(
            mem,
            &mut self.decoded,
            &self.states,
            header.remaining,
            &mut output,
            self.params.cpb,
            header.header_len,
        );
        let machine =
            if self.native { machine.with_native_memo(&mut self.native_memo) } else { machine.without_native() };
        let (result, unpacked) = machine.with_unpacked(unpacked).run_keeping_unpacked(start);
        self.states.keep_unpacked(unpacked);
        self.output_hint = output.len();
        // A buffer sized for a longer message is not handed on.
        if output.capacity() > 2 * output.len() + 64 {
            output.shrink_to_fit();
        }
        let outcome = result?;
        self.native_tokens += outcome.native_tokens;
        if let Some(rp) = &outcome.returned_parameters {
            self.announced_ids_dropped += rp.local_states_dropped as u64;
        }
        Ok(Decompressed {
            output,
            output_seen: outcome.output_seen,
            cycles: outcome.cycles,
            pending: Pending {
                requests: outcome.requests,
                returned_feedback: header.returned_feedback.map(<[u8]>::to_vec),
                requested_feedback: outcome.requested_feedback,
                returned_parameters: outcome.returned_parameters,
            },
        })
    }

    /// The application accepts the message under `compartment`: state
    /// requests are carried out in order and feedback is kept
    /// (RFC 3320 §4.3, §6.2, §9.4.9; RFC 4896 §9.2).
    ///
    /// `compartment` becomes the most recently used, opened if new. If
    /// that exceeds [`Limits::max_compartments`], or the states created
    /// exceed [`Limits::max_state_bytes`], the least recently used other
    /// compartments are closed ([`Accepted::evicted`]).
    pub fn accept(&mut self, pending: Pending, compartment: CompartmentId) -> Accepted {
        let mut accepted = Accepted::default();
        let evictions = self.states.evictions();
        self.states.touch(compartment);
        for req in pending.requests {
            match req {
                StateRequest::Create(c) => {
                    match self.states.create_shared(
                        compartment,
                        c.address,
                        c.instruction,
                        c.min_access_len,
                        c.value,
                        c.priority,
                    ) {
                        CreateOutcome::Created(id) | CreateOutcome::Refreshed(id) => {
                            if !accepted.created.contains(&id) {
                                accepted.created.push(id)
                            }
                        }
                        CreateOutcome::Rejected => accepted.rejected += 1,
                    }
                }
                StateRequest::Free(partial) => {
                    if let Some(id) = self.states.free(compartment, &partial) {
                        accepted.freed.push(id);
                    }
                }
            }
        }
        let fb = self.states.feedback_mut(compartment);
        if let Some(rf) = pending.requested_feedback {
            // RFC 4896 §9.2: a location of 0 keeps the old request; a
            // request without Q clears the item.
            fb.requested_item = rf.item;
            fb.no_state = rf.no_state;
            fb.no_local_states = rf.no_local_states;
        }
        if let Some(rp) = pending.returned_parameters {
            fb.peer_parameters = Some(rp);
        }
        if let Some(item) = pending.returned_feedback {
            fb.returned_item = Some(item);
        }
        accepted.evicted = self.states.last_evicted((self.states.evictions() - evictions) as usize);
        accepted
    }

    /// Forgets a compartment's state and feedback.
    pub fn close_compartment(&mut self, compartment: CompartmentId) {
        self.states.close_compartment(compartment);
    }

    /// The NACK (RFC 4077) to send for `msg`, which failed with `failure`.
    /// Returns None for a message that is itself a NACK (never NACK a NACK).
    pub fn nack_for(&self, msg: &[u8], failure: &Failure) -> Option<Vec<u8>> {
        if Nack::parse(msg).is_ok() {
            return None;
        }
        let sha: [u8; 20] = Sha1::digest(msg).into();
        Some(Nack::from_failure(failure, sha).emit())
    }
}
