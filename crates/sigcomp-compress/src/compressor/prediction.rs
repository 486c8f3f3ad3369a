//! What the peer will do with a message, known before it leaves (RFC 3320
//! §5.1): the states it creates and a bound on its cycles, computed from
//! the bytecode's own symbols, or by running the peer's decompressor
//! where they cannot be computed; and the model of its state memory kept
//! by those creations.

use super::*;

/// What [`Compressor::predict`] reads of one algorithm's program (the
/// mechanism program with its fragment), from the constants build.rs
/// generates out of the assembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProgramSymbols {
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
    flag_short_snapshot: u8,
    snap_short: u16,
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
            flag_short_snapshot: s::FLAG_SHORT_SNAPSHOT,
            snap_short: s::SNAP_SHORT,
            mechanism_cycles: s::MECHANISM_CYCLES as usize,
            cycles_per_byte: $cycles_per_byte as usize,
            initial_input_bit_order: $initial_input_bit_order,
        }
    }};
}

impl Algorithm {
    /// The symbols of this algorithm's program that the peer's run is
    /// computed from.
    pub(super) fn symbols(self) -> ProgramSymbols {
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

impl Compressor {
    /// What the peer will do with the message (RFC 3320 §5.1): the state
    /// creation requests, computed from what the compressor knows
    /// ([`Compressor::predict`]) or found by running the peer's
    /// decompressor on it; `verify` does both and compares them.
    pub(super) fn peer_run(
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
        let d = self.model.live().decompress(sig, self.config.transport).map_err(CompressError::DoesNotFit)?;
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
    pub(super) fn record_created(
        &mut self,
        creates: Vec<(State, u16)>,
        shared_loaded: Option<StateId>,
    ) -> Vec<StateId> {
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
    pub(super) fn token_floor(&self, len: usize) -> usize {
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
    pub(super) fn model_create(&mut self, creates: Vec<(State, u16)>) -> Vec<StateId> {
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
    /// saves memory 64..buffer_end, or 64..decompressed_pointer for a short
    /// snapshot (flag_short_snapshot). `base` is the whole memory the
    /// message continues from ([`Compressor::whole_memory`]). The
    /// fragments' own variables lie below
    /// 64, outside the snapshot. Every address, flag, priority and cycle
    /// cost is the assembly's own ([`ProgramSymbols`]).
    pub(super) fn predict(&self, base: Option<&[u8]>, v: &MessageView<'_>) -> Option<(Vec<(State, u16)>, u64)> {
        let at = self.config.algorithm.symbols();
        let mech = self.config.mechanism;
        let image = self.config.image();
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
        // :decompress: MULTILOAD (fb_loc, 4, 0, state_min_access, $announce_params, 0).
        let announce_params = bytecode::word(m, 64, image.announce_params);
        bytecode::put_word(m, 64, at.fb_loc, 0);
        bytecode::put_word(m, 64, at.snap_mal, at.state_min_access);
        bytecode::put_word(m, 64, at.returned_parameters_location, announce_params);
        bytecode::put_word(m, 64, at.announced_a, 0);
        // LOAD (snap_short, $flags); AND ($snap_short, flag_short_snapshot).
        let short = v.flags & at.flag_short_snapshot;
        bytecode::put_word(m, 64, at.snap_short, u16::from(short));
        // Bytes written at decompressed_pointer wrap within the buffer
        // (RFC 3320 §8.4; byte_copy_left/right are the buffer's bounds).
        let append = |m: &mut [u8], bytes: &[u8]| {
            let mut dp = usize::from(bytecode::word(m, 64, at.decompressed_pointer));
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
        // END-MESSAGE (..., $snap_len, 64, decompress, $snap_mal, snapshot_priority):
        // $snap_len is decompressed_pointer − 64 for a short snapshot.
        if short != 0 {
            let len = usize::from(bytecode::word(m, 64, at.decompressed_pointer)) - 64;
            snapshot = Arc::from(&snapshot[..len]);
        }
        creates.push((State::from_shared(64, image.decompress, at.state_min_access, snapshot), at.snapshot_priority));
        Some((creates, bound))
    }

    /// An upper bound on the cycles the peer spends on the message (RFC
    /// 3320 §9 costs, as the assembly states them): the mechanism's part,
    /// the fragment's per message byte, and the bytes the STATE-ACCESSes,
    /// STATE-CREATE and END-MESSAGE move.
    pub(super) fn cycle_bound(&self, at: &ProgramSymbols, v: &MessageView<'_>) -> usize {
        let mut bound = at.mechanism_cycles + at.cycles_per_byte * v.message.len() + v.shared.len();
        if v.fresh || v.reloads_dictionary {
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
    /// dictionary's STATE-ACCESS into the buffer (at its start, or at its
    /// end with short snapshots, where the history starts at the buffer's
    /// start) and the fragment's @init.
    pub(super) fn initialised_memory(&self, at: &ProgramSymbols) -> Vec<u8> {
        let (cb, end) = (usize::from(self.layout.circular_buffer), usize::from(self.layout.buffer_end));
        let mut m = vec![0u8; end - 64];
        let d = usize::from(self.bytecode.destination) - 64;
        m[d..d + self.bytecode.code.len()].copy_from_slice(&self.bytecode.code);
        let dict = &self.bytecode.dictionary;
        bytecode::put_word(&mut m, 64, at.byte_copy_left, cb as u16);
        bytecode::put_word(&mut m, 64, at.byte_copy_right, end as u16);
        bytecode::put_word(&mut m, 64, at.input_bit_order, at.initial_input_bit_order);
        if self.short_snapshots() {
            bytecode::put_word(&mut m, 64, at.decompressed_pointer, cb as u16);
            m[end - 64 - dict.len()..].copy_from_slice(dict);
        } else {
            bytecode::put_word(&mut m, 64, at.decompressed_pointer, (cb + dict.len()) as u16);
            m[cb - 64..cb - 64 + dict.len()].copy_from_slice(dict);
        }
        m
    }

    /// Whether the uploaded program saves short snapshots
    /// ([`crate::SnapshotExtent::Short`]).
    fn short_snapshots(&self) -> bool {
        self.config.image().dict_at.is_some()
    }

    /// The memory from address 64 to buffer_end that a message continuing
    /// from `snapshot` works on once :decompress has begun: a short
    /// snapshot's bytes, which end at decompressed_pointer, then zeros, and
    /// the dictionary's bytes from max(decompressed_pointer, its place) to
    /// buffer_end loaded again (asm/mechanism.asm, flag_short_snapshot).
    /// None for a value longer than the buffer.
    pub(super) fn whole_memory(&self, snapshot: Arc<[u8]>) -> Option<Arc<[u8]>> {
        let end = usize::from(self.layout.buffer_end);
        let whole = end - 64;
        if snapshot.len() >= whole {
            return (snapshot.len() == whole).then_some(snapshot);
        }
        // The snapshot's bytes, then zeros (the prefix is not zeroed first).
        let mut m = Vec::with_capacity(whole);
        m.extend_from_slice(&snapshot);
        m.resize(whole, 0);
        if self.continues_from_short(&m) {
            let dict = &self.bytecode.dictionary;
            let dict_at = end - dict.len();
            let from = self.decompressed_pointer(&m).max(dict_at);
            m[from - 64..].copy_from_slice(&dict[from - dict_at..]);
        }
        Some(m.into())
    }

    /// The word decompressed_pointer of memory `m` (from address 64).
    pub(super) fn decompressed_pointer(&self, m: &[u8]) -> usize {
        usize::from(bytecode::word(m, 64, self.config.algorithm.symbols().decompressed_pointer))
    }

    /// Whether the snapshot whose memory is `m` was a short one (its word
    /// snap_short set), so that :decompress loads the dictionary again.
    pub(super) fn continues_from_short(&self, m: &[u8]) -> bool {
        let a = usize::from(self.config.algorithm.symbols().snap_short) - 64;
        m.get(a..a + 2).is_some_and(|w| w != [0, 0])
    }

    /// Whether the snapshot of a message that appends `appended` bytes to
    /// the buffer (shared state and message) may end at
    /// decompressed_pointer: the history, which starts at the buffer's
    /// start, will not have wrapped (flag_short_snapshot). `base`: the
    /// whole memory the message continues from, None when it starts fresh.
    pub(super) fn snapshot_may_be_short(&self, base: Option<&[u8]>, appended: usize) -> bool {
        if !self.config.mechanism.saves_snapshots() || !self.short_snapshots() {
            return false;
        }
        let dp = match base {
            None => usize::from(self.layout.circular_buffer),
            // A whole snapshot: the history has wrapped.
            Some(m) if !self.continues_from_short(m) => return false,
            Some(m) => self.decompressed_pointer(m),
        };
        dp + appended < usize::from(self.layout.buffer_end)
    }
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
