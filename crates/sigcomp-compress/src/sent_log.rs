//! A compressor's log of the messages it sent, for the NACKs that name
//! them by SHA-1 (RFC 4077 §2.3): [`sigcomp::SentLog`]'s records and
//! answers, kept in one buffer. Every compartment's compressor keeps one,
//! and an idle compartment keeps it as long as it lives; a record of its
//! own per message (an allocation for its identifiers, a slot in a ring
//! left half empty by its growth) cost an idle compartment more than its
//! packed states.

use sha1::{Digest, Sha1};
use sigcomp::nack::{NackParseError, NackReport, SentRecord};
use sigcomp::{CompartmentId, StateId};

/// Bytes before a record's identifiers: SHA-1, compartment, and the
/// counts of states used and requested.
const HEAD: usize = 20 + 8 + 4 + 4;

/// Sent messages, at most `capacity`, oldest first, each as
/// `sha1 ‖ compartment (u64 LE) ‖ used (u32 LE) ‖ requested (u32 LE) ‖
/// identifiers`, back to back.
#[derive(Debug, Clone)]
pub(crate) struct SentMessages {
    capacity: usize,
    count: usize,
    bytes: Vec<u8>,
}

/// Where one record lies in the buffer, and its counts.
#[derive(Debug, Clone, Copy)]
struct Span {
    at: usize,
    used: usize,
    requested: usize,
}

impl Span {
    fn end(&self) -> usize {
        self.at + HEAD + 20 * (self.used + self.requested)
    }
}

impl SentMessages {
    /// Remembers at most `capacity` messages, forgetting the oldest.
    pub(crate) fn new(capacity: usize) -> SentMessages {
        SentMessages { capacity: capacity.max(1), count: 0, bytes: Vec::new() }
    }

    /// The records' positions, oldest first.
    fn spans(&self) -> Vec<Span> {
        let mut out = Vec::with_capacity(self.count);
        let mut at = 0;
        while at + HEAD <= self.bytes.len() {
            let used = read_u32(&self.bytes[at + 28..at + 32]) as usize;
            let requested = read_u32(&self.bytes[at + 32..at + 36]) as usize;
            let span = Span { at, used, requested };
            at = span.end();
            out.push(span);
        }
        out
    }

    /// Records a sent SigComp message (as RFC 4077 §3.1 hashes it).
    /// Returns its SHA-1.
    pub(crate) fn record(&mut self, message: &[u8], record: SentRecord) -> [u8; 20] {
        self.record_states(message, record.compartment, &record.states_used, &record.states_requested)
    }

    /// As [`SentMessages::record`], for identifiers held elsewhere.
    pub(crate) fn record_states(
        &mut self,
        message: &[u8],
        compartment: CompartmentId,
        states_used: &[StateId],
        states_requested: &[StateId],
    ) -> [u8; 20] {
        let sha1: [u8; 20] = Sha1::digest(message).into();
        let mut rec = Vec::with_capacity(HEAD + 20 * (states_used.len() + states_requested.len()));
        rec.extend_from_slice(&sha1);
        rec.extend_from_slice(&compartment.0.to_le_bytes());
        rec.extend_from_slice(&(states_used.len() as u32).to_le_bytes());
        rec.extend_from_slice(&(states_requested.len() as u32).to_le_bytes());
        for id in states_used.iter().chain(states_requested) {
            rec.extend_from_slice(&id.0);
        }
        // The same message sent again replaces its record, keeping its age.
        match self.spans().into_iter().find(|s| self.bytes[s.at..s.at + 20] == sha1) {
            Some(s) => {
                self.bytes.splice(s.at..s.end(), rec);
            }
            None => {
                self.bytes.extend_from_slice(&rec);
                self.count += 1;
            }
        }
        if self.count > self.capacity {
            let spans = self.spans();
            let drop = self.count - self.capacity;
            let cut = spans.get(drop).map_or(self.bytes.len(), |s| s.at);
            self.bytes.drain(..cut);
            self.count = self.capacity;
        }
        sha1
    }

    /// The record of the sent message whose SHA-1 is `sha1`, if remembered.
    pub(crate) fn get(&self, sha1: &[u8; 20]) -> Option<SentRecord> {
        let s = self.spans().into_iter().rev().find(|s| &self.bytes[s.at..s.at + 20] == sha1)?;
        let ids = |from: usize, n: usize| -> Vec<StateId> {
            (0..n)
                .map(|k| {
                    let mut id = [0u8; 20];
                    let at = s.at + HEAD + 20 * (from + k);
                    id.copy_from_slice(&self.bytes[at..at + 20]);
                    StateId(id)
                })
                .collect()
        };
        let mut compartment = [0u8; 8];
        compartment.copy_from_slice(&self.bytes[s.at + 20..s.at + 28]);
        Some(SentRecord {
            compartment: CompartmentId(u64::from_le_bytes(compartment)),
            states_used: ids(0, s.used),
            states_requested: ids(s.used, s.requested),
        })
    }

    /// Interprets a received NACK message, as [`sigcomp::SentLog::on_nack`].
    pub(crate) fn on_nack(&self, nack_message: &[u8]) -> Result<NackReport, NackParseError> {
        NackReport::interpret(nack_message, |sha1| self.get(sha1))
    }

    /// Gives back the room the buffer's growth left unused.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
    }
}

fn read_u32(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[..4]);
    u32::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sigcomp::SentLog;
    use sigcomp::{Nack, Reason};

    fn id(n: u8) -> StateId {
        StateId([n; 20])
    }

    proptest! {
        /// Whatever is recorded (repeats included, past the capacity),
        /// every NACK is answered exactly as sigcomp's SentLog answers it.
        #[test]
        fn answers_every_nack_as_sent_log_does(
            sends in proptest::collection::vec((0u8..12, 0usize..4, 0usize..4, 0u64..3), 1..60),
            capacity in 1usize..8,
            asked in proptest::collection::vec((0u8..12, 0usize..3, 0u8..5), 1..20),
        ) {
            let mut ours = SentMessages::new(capacity);
            let mut theirs = SentLog::new(capacity);
            for (msg, used, requested, compartment) in &sends {
                let used: Vec<StateId> = (0..*used as u8).map(|k| id(msg.wrapping_mul(7).wrapping_add(k))).collect();
                let requested: Vec<StateId> = (0..*requested as u8).map(|k| id(200u8.wrapping_add(k))).collect();
                let message = [*msg; 3];
                let c = CompartmentId(*compartment);
                prop_assert_eq!(
                    ours.record_states(&message, c, &used, &requested),
                    theirs.record_states(&message, c, &used, &requested)
                );
            }
            ours.shrink_to_fit();
            for (msg, reason, detail) in &asked {
                let reason = [Reason::StateNotFound, Reason::CyclesExhausted, Reason::BytecodesTooLarge][*reason];
                let sha1: [u8; 20] = Sha1::digest([*msg; 3]).into();
                let details = match reason {
                    Reason::StateNotFound => id(msg.wrapping_mul(7).wrapping_add(*detail)).0[..6].to_vec(),
                    Reason::CyclesExhausted => vec![16 << (detail % 4)],
                    _ => vec![0x20, *detail],
                };
                let nack = Nack { reason, opcode: 1, pc: 0, message_sha1: sha1, details, returned_feedback: None }.emit();
                prop_assert_eq!(ours.on_nack(&nack), theirs.on_nack(&nack));
            }
        }
    }
}
