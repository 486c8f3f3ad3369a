//! The instructions that read, create and free state, and END-MESSAGE,
//! which hands the state requests and feedback to the dispatcher
//! (RFC 3320 §9.4.5–§9.4.9).

use super::buffer::read_shared;
use super::*;

impl Machine<'_> {
    #[inline(never)]
    pub(super) fn state_access(&mut self, mut c: u16) -> Res<u16> {
        let id_start = self.multi(&mut c)?;
        let id_len = self.multi(&mut c)?;
        let state_begin = self.multi(&mut c)?;
        let state_length = self.multi(&mut c)?;
        let state_address = self.multi(&mut c)?;
        let state_instruction = self.multi(&mut c)?;
        if !(6..=20).contains(&id_len) {
            return fail(Reason::InvalidStateIdLength);
        }
        let (bcl, bcr) = self.bounds()?;
        let mut id = [0u8; 20];
        let n = usize::from(id_len);
        self.read_bytes(id_start, bcl, bcr, &mut id[..n])?;
        let found = match self.lookups.remembered(&id, n) {
            Some(found) => found,
            None if self.lookups.reads_ahead(self.states) => {
                let mut upcoming = Upcoming::NONE;
                self.upcoming_state_ids(c, bcl, bcr, &mut upcoming);
                self.lookups.look_up(self.states, &id, n, &upcoming)
            }
            None => self.lookups.look_up(self.states, &id, n, &Upcoming::NONE),
        };
        let partial = &id[..n];
        let state = match found {
            Ok(s) => s,
            Err(LookupError::NotUnique) => return self.fail_with(Reason::IdNotUnique, partial),
            Err(_) => return self.fail_with(Reason::StateNotFound, partial),
        };
        let length = if state_length == 0 { state.len as u16 } else { state_length };
        let address = if state_address == 0 { state.address } else { state_address };
        let instruction = if state_instruction == 0 { state.instruction } else { state_instruction };
        self.charge(1 + u64::from(length))?;
        if state_length == 0 && state_begin != 0 {
            return fail(Reason::InvalidStateProbe);
        }
        let begin = usize::from(state_begin);
        let end = begin + usize::from(length);
        if end > state.len {
            return self.fail_with(Reason::StateTooShort, partial);
        }
        if length > 0 {
            if let Some(plain) = state.plain {
                self.write_string(address, &plain[begin..end], bcl, bcr)?;
            } else {
                let (buffer, at) = state.state.bytes_in(&mut self.unpacked);
                let Some(bytes) = buffer.get(at + begin..at + end) else {
                    return self.fail_with(Reason::StateTooShort, partial);
                };
                self.write_string(address, bytes, bcl, bcr)?;
            }
        }
        if instruction == 0 {
            Ok(c)
        } else {
            self.jump_target(instruction)
        }
    }

    /// The partial identifiers of the STATE-ACCESSes from `c` on, while
    /// they follow one another, as memory holds them now (a lookup made
    /// ahead is right for its identifier whatever the message then does;
    /// see [`crate::lookup_memo`]). Reading stops at anything that would
    /// fail.
    pub(super) fn upcoming_state_ids(&self, mut c: u16, bcl: u16, bcr: u16, upcoming: &mut Upcoming) {
        while !upcoming.is_full() && self.byte(c) == Ok(op::STATE_ACCESS) {
            let mut p = c.wrapping_add(1);
            let Ok(start) = self.multi(&mut p) else { return };
            let Ok(len) = self.multi(&mut p) else { return };
            if !(6..=20).contains(&len) {
                return;
            }
            for _ in 0..4 {
                if self.multi_operand(&mut p).is_err() {
                    return;
                }
            }
            let mut id = [0u8; 20];
            if self.read_bytes(start, bcl, bcr, &mut id[..usize::from(len)]).is_err() {
                return;
            }
            upcoming.push(id, usize::from(len));
            if p <= c {
                return;
            }
            c = p;
        }
    }

    #[inline(never)]
    pub(super) fn state_create(&mut self, mut c: u16) -> Res<u16> {
        let length = self.multi(&mut c)?;
        let address = self.multi(&mut c)?;
        let instruction = self.multi(&mut c)?;
        let min_access_len = self.multi(&mut c)?;
        let priority = self.multi(&mut c)?;
        self.charge(1 + u64::from(length))?;
        if self.creates >= 4 {
            return fail(Reason::TooManyStateRequests);
        }
        if !(6..=20).contains(&min_access_len) {
            return fail(Reason::InvalidStateIdLength);
        }
        if priority == 65535 {
            return fail(Reason::InvalidStatePriority);
        }
        self.creates += 1;
        self.push_pending(Pending::Create(PendingCreate { length, address, instruction, min_access_len, priority }));
        Ok(c)
    }

    #[inline(never)]
    pub(super) fn state_free(&mut self, mut c: u16) -> Res<u16> {
        let start = self.multi(&mut c)?;
        let length = self.multi(&mut c)?;
        self.charge(1)?;
        if self.frees >= 4 {
            return fail(Reason::TooManyStateRequests);
        }
        if !(6..=20).contains(&length) {
            return fail(Reason::InvalidStateIdLength);
        }
        self.frees += 1;
        self.push_pending(Pending::Free { start, length });
        Ok(c)
    }

    /// Adds a state request; the counts checked before keep them within
    /// [`MAX_PENDING`].
    pub(super) fn push_pending(&mut self, p: Pending) {
        if let Some(slot) = self.pending.get_mut(self.pending_len) {
            *slot = p;
            self.pending_len += 1;
        }
    }

    /// END-MESSAGE: on success the run stops with the outcome kept in
    /// `self.outcome`.
    #[inline(never)]
    pub(super) fn end_message(&mut self, mut c: u16) -> Res<u16> {
        let requested_feedback_location = self.multi(&mut c)?;
        let returned_parameters_location = self.multi(&mut c)?;
        let length = self.multi(&mut c)?;
        let address = self.multi(&mut c)?;
        let instruction = self.multi(&mut c)?;
        let min_access_len = self.multi(&mut c)?;
        let priority = self.multi(&mut c)?;
        self.charge(1 + u64::from(length))?;
        // END-MESSAGE's own request is dropped silently when invalid
        // (RFC 3320 §9.4.9).
        if (6..=20).contains(&min_access_len) && priority != 65535 {
            if self.creates >= 4 {
                return fail(Reason::TooManyStateRequests);
            }
            self.creates += 1;
            self.push_pending(Pending::Create(PendingCreate {
                length,
                address,
                instruction,
                min_access_len,
                priority,
            }));
        }
        let outcome = self.finish(requested_feedback_location, returned_parameters_location)?;
        self.outcome = Some(outcome);
        Err(Stop::End)
    }

    /// Snapshots state requests and feedback at END-MESSAGE.
    pub(super) fn finish(&mut self, rfl: u16, rpl: u16) -> Res<Outcome> {
        let (bcl, bcr) = self.bounds()?;
        let pending = self.pending;
        let pending = &pending[..self.pending_len.min(MAX_PENDING)];
        self.pending_len = 0;
        let mut requests = Vec::with_capacity(pending.len());
        for &p in pending {
            match p {
                Pending::Create(pc) => {
                    let value = read_shared(self.mem, pc.address, pc.length, bcl, bcr)?;
                    requests.push(StateRequest::Create(CreateRequest {
                        address: pc.address,
                        instruction: pc.instruction,
                        min_access_len: pc.min_access_len,
                        priority: pc.priority,
                        value,
                    }));
                }
                Pending::Free { start, length } => {
                    let mut id = Vec::with_capacity(usize::from(length));
                    read_string(self.mem, start, length, bcl, bcr, &mut id)?;
                    requests.push(StateRequest::Free(id));
                }
            }
        }
        // Feedback is read without byte copying rules (RFC 4896 §4.1).
        let requested_feedback = if rfl == 0 {
            None
        } else {
            let flags = self.byte(rfl)?;
            let item = if flags & 0x04 != 0 { Some(self.read_feedback_item(rfl.wrapping_add(1))?) } else { None };
            Some(RequestedFeedback { item, no_state: flags & 0x02 != 0, no_local_states: flags & 0x01 != 0 })
        };
        let returned_parameters = if rpl == 0 {
            None
        } else {
            let params_byte = self.byte(rpl)?;
            let version = self.byte(rpl.wrapping_add(1))?;
            let mut local_states = Vec::new();
            let mut local_states_dropped = 0;
            let mut a = rpl.wrapping_add(2);
            // At most 65536 bytes can be scanned; each entry is ≥ 7 bytes.
            while local_states.len() + local_states_dropped < 65536 / 7 {
                let len = self.byte(a)?;
                if !(6..=20).contains(&len) {
                    break;
                }
                let first = a.wrapping_add(1);
                let last = a.wrapping_add(u16::from(len));
                if local_states.len() < MAX_ANNOUNCED_STATES {
                    let mut id = Vec::with_capacity(usize::from(len));
                    for i in 0..u16::from(len) {
                        id.push(self.byte(first.wrapping_add(i))?);
                    }
                    local_states.push(id);
                } else {
                    // Not kept, but read as a kept one is: an identifier
                    // outside memory fails the same way. Memory is one run
                    // from address 0, so its last byte (and, if it wraps,
                    // byte 0xFFFF) being inside means all of it is.
                    if last < first {
                        self.byte(0xFFFF)?;
                    }
                    self.byte(last)?;
                    local_states_dropped += 1;
                }
                a = last.wrapping_add(1);
            }
            Some(ReturnedParameters { params_byte, version, local_states, local_states_dropped })
        };
        Ok(Outcome {
            cycles: 0,
            output_seen: false,
            requests,
            requested_feedback,
            returned_parameters,
            native_tokens: 0,
        })
    }

    pub(super) fn read_feedback_item(&self, at: u16) -> Res<Vec<u8>> {
        let b = self.byte(at)?;
        let len = if b & 0x80 == 0 { 1 } else { 1 + u16::from(b & 0x7F) };
        (0..len).map(|i| self.byte(at.wrapping_add(i))).collect()
    }
}
