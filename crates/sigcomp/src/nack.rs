//! Decompression failures and the NACK mechanism of RFC 4077.
//!
//! Every way a message can fail to decompress maps to exactly one
//! [`Reason`] (RFC 4077 §3.2). A [`Failure`] carries the reason, the
//! instruction that failed and the reason-specific details, and can be
//! turned into the NACK message that goes back to the sender
//! ([`Nack::emit`]). A received NACK is parsed with [`Nack::parse`].

use std::collections::VecDeque;
use std::fmt;

use sha1::{Digest, Sha1};

pub use crate::error::{Failure, Reason};
use crate::state::{CompartmentId, StateId};

/// A SigComp NACK (RFC 4077 §3.1), version 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nack {
    /// Why the message failed (RFC 4077 §3.2).
    pub reason: Reason,
    /// The opcode of the instruction that failed; 0 if none had run.
    pub opcode: u8,
    /// The address of the instruction that failed; 0 if none had run.
    pub pc: u16,
    /// SHA-1 of the SigComp message that failed (all zeros for FRAMING_ERROR).
    pub message_sha1: [u8; 20],
    /// The reason's error details (RFC 4077 Figure 2): a state identifier,
    /// the cycles per bit or the memory size; empty for the other reasons.
    pub details: Vec<u8>,
    /// Returned feedback item carried in the NACK's header, if any.
    pub returned_feedback: Option<Vec<u8>>,
}

/// Why bytes are not a NACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NackParseError {
    /// Not a SigComp message with code_len 0.
    NotNack,
    /// A NACK version this implementation does not know.
    UnknownVersion(u8),
    /// Fewer than the 24 bytes of reason, opcode, PC and SHA-1 after the
    /// header (RFC 4077 §3.1).
    Truncated,
    /// A reason code outside RFC 4077 §3.2's 1..=25; holds the code.
    UnknownReason(u8),
}

impl fmt::Display for NackParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NackParseError::NotNack => f.write_str("not a NACK (code_len is not 0)"),
            NackParseError::UnknownVersion(v) => write!(f, "unknown NACK version {v}"),
            NackParseError::Truncated => f.write_str("NACK message too short"),
            NackParseError::UnknownReason(r) => write!(f, "unknown NACK reason code {r}"),
        }
    }
}

impl std::error::Error for NackParseError {}

impl Nack {
    /// The NACK reporting `failure` of the message whose SHA-1 is
    /// `message_sha1` (zeroed for FRAMING_ERROR, RFC 4077 §3.2), without
    /// returned feedback.
    pub fn from_failure(failure: &Failure, message_sha1: [u8; 20]) -> Nack {
        let message_sha1 = if failure.reason == Reason::FramingError { [0; 20] } else { message_sha1 };
        Nack {
            reason: failure.reason,
            opcode: failure.opcode,
            pc: failure.pc,
            message_sha1,
            details: failure.details.clone(),
            returned_feedback: None,
        }
    }

    /// The NACK message bytes (RFC 4077 Figure 1).
    pub fn emit(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(26 + self.details.len());
        match &self.returned_feedback {
            Some(item) => {
                out.push(0xFC);
                out.extend_from_slice(item);
            }
            None => out.push(0xF8),
        }
        // code_len = 0, version = 1 (RFC 4077 §3.1).
        out.push(0x00);
        out.push(0x01);
        out.push(self.reason.code());
        out.push(self.opcode);
        out.extend_from_slice(&self.pc.to_be_bytes());
        out.extend_from_slice(&self.message_sha1);
        out.extend_from_slice(&self.details);
        out
    }

    /// Parses a NACK. Returns [`NackParseError::NotNack`] for any message
    /// that is not a code_len = 0 SigComp message.
    pub fn parse(msg: &[u8]) -> Result<Nack, NackParseError> {
        let header = crate::wire::Header::parse(msg).map_err(|_| NackParseError::NotNack)?;
        let crate::wire::Body::Bytecode { code, destination_bits } = header.body else {
            return Err(NackParseError::NotNack);
        };
        if !code.is_empty() {
            return Err(NackParseError::NotNack);
        }
        if destination_bits != 1 {
            return Err(NackParseError::UnknownVersion(destination_bits));
        }
        let rest = header.remaining;
        if rest.len() < 24 {
            return Err(NackParseError::Truncated);
        }
        let reason = Reason::from_code(rest[0]).ok_or(NackParseError::UnknownReason(rest[0]))?;
        let mut message_sha1 = [0u8; 20];
        message_sha1.copy_from_slice(&rest[4..24]);
        Ok(Nack {
            reason,
            opcode: rest[1],
            pc: u16::from_be_bytes([rest[2], rest[3]]),
            message_sha1,
            details: rest[24..].to_vec(),
            returned_feedback: header.returned_feedback.map(<[u8]>::to_vec),
        })
    }
}

/// What a compressor remembers about one message it sent, so that a NACK
/// naming the message's SHA-1 can be traced back (RFC 4077 §2.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentRecord {
    /// The compartment the message was sent under.
    pub compartment: CompartmentId,
    /// States the message accessed at the peer (header or STATE-ACCESS).
    pub states_used: Vec<StateId>,
    /// States the message asked the peer to create.
    pub states_requested: Vec<StateId>,
}

/// What a received NACK means for the compressor (RFC 4077 §2.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NackReport {
    /// The NACK received.
    pub nack: Nack,
    /// The sent message the NACK refers to, if it is still remembered.
    pub record: Option<SentRecord>,
    /// States the peer does not have: those the failed message used whose
    /// identifier starts with the partial identifier in the details
    /// (STATE_NOT_FOUND, STATE_TOO_SHORT, ID_NOT_UNIQUE).
    pub lost_states: Vec<StateId>,
    /// States the failed message requested, which the peer therefore did not
    /// create.
    pub not_created: Vec<StateId>,
    /// The peer's cycles per bit (CYCLES_EXHAUSTED details).
    pub peer_cycles_per_bit: Option<u8>,
    /// The peer's decompression memory size (BYTECODES_TOO_LARGE details).
    pub peer_decompression_memory_size: Option<u16>,
}

impl NackReport {
    /// Parses a received NACK message and interprets it against the record
    /// of the message it names, which `record` finds by its SHA-1 in the
    /// sender's log (RFC 4077 §2.3).
    pub fn interpret(
        nack_message: &[u8],
        record: impl FnOnce(&[u8; 20]) -> Option<SentRecord>,
    ) -> Result<NackReport, NackParseError> {
        let nack = Nack::parse(nack_message)?;
        let record = record(&nack.message_sha1);
        let mut lost_states = Vec::new();
        let mut not_created = Vec::new();
        if let Some(r) = &record {
            not_created = r.states_requested.clone();
            if matches!(nack.reason, Reason::StateNotFound | Reason::StateTooShort | Reason::IdNotUnique)
                && !nack.details.is_empty()
            {
                lost_states = r.states_used.iter().filter(|id| id.0.starts_with(&nack.details)).copied().collect();
            }
        }
        let peer_cycles_per_bit =
            (nack.reason == Reason::CyclesExhausted).then(|| nack.details.first().copied()).flatten();
        let peer_decompression_memory_size = (nack.reason == Reason::BytecodesTooLarge && nack.details.len() >= 2)
            .then(|| u16::from_be_bytes([nack.details[0], nack.details[1]]));
        Ok(NackReport { nack, record, lost_states, not_created, peer_cycles_per_bit, peer_decompression_memory_size })
    }
}

/// The compressor-facing side of RFC 4077: a bounded log of sent messages
/// keyed by SHA-1, and the interpretation of NACKs against it.
#[derive(Debug, Clone)]
pub struct SentLog {
    capacity: usize,
    /// Oldest first. A few dozen at most, searched by SHA-1 from the
    /// newest: a compressor per compartment keeps one, so it is kept small
    /// rather than indexed.
    records: VecDeque<Logged>,
}

/// A [`SentRecord`] as the log keeps it: the identifiers in one allocation.
#[derive(Debug, Clone)]
struct Logged {
    sha1: [u8; 20],
    compartment: CompartmentId,
    /// `states_used` then `states_requested`.
    states: Box<[StateId]>,
    used: usize,
}

impl Logged {
    fn record(&self) -> SentRecord {
        SentRecord {
            compartment: self.compartment,
            states_used: self.states[..self.used].to_vec(),
            states_requested: self.states[self.used..].to_vec(),
        }
    }
}

impl SentLog {
    /// Remembers at most `capacity` messages, forgetting the oldest.
    pub fn new(capacity: usize) -> SentLog {
        SentLog { capacity: capacity.max(1), records: VecDeque::new() }
    }

    /// The messages remembered, at most the capacity.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no message is remembered.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Records a sent SigComp message (unescaped, without delimiters, as
    /// RFC 4077 §3.1 hashes it). Returns its SHA-1.
    pub fn record(&mut self, message: &[u8], record: SentRecord) -> [u8; 20] {
        self.record_states(message, record.compartment, &record.states_used, &record.states_requested)
    }

    /// As [`SentLog::record`], for the identifiers of a [`SentRecord`]
    /// held elsewhere: the log copies them once.
    pub fn record_states(
        &mut self,
        message: &[u8],
        compartment: CompartmentId,
        states_used: &[StateId],
        states_requested: &[StateId],
    ) -> [u8; 20] {
        let sha1: [u8; 20] = Sha1::digest(message).into();
        let states: Box<[StateId]> = states_used.iter().chain(states_requested).copied().collect();
        let logged = Logged { sha1, compartment, states, used: states_used.len() };
        // The same message sent again replaces its record, keeping its age.
        match self.records.iter_mut().find(|r| r.sha1 == sha1) {
            Some(r) => *r = logged,
            None => self.records.push_back(logged),
        }
        while self.records.len() > self.capacity {
            self.records.pop_front();
        }
        sha1
    }

    /// The record of the sent message whose SHA-1 is `sha1`, if remembered.
    pub fn get(&self, sha1: &[u8; 20]) -> Option<SentRecord> {
        self.records.iter().rev().find(|r| &r.sha1 == sha1).map(Logged::record)
    }

    /// Interprets a received NACK message.
    pub fn on_nack(&mut self, nack_message: &[u8]) -> Result<NackReport, NackParseError> {
        NackReport::interpret(nack_message, |sha1| self.get(sha1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_codes_round_trip() {
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(r.code() as usize, i + 1);
            assert_eq!(Reason::from_code(r.code()), Some(*r));
            assert_eq!(Reason::from_name(r.name()), Some(*r));
        }
        assert_eq!(Reason::from_code(0), None);
        assert_eq!(Reason::from_code(26), None);
    }

    #[test]
    fn nack_round_trip() {
        let n = Nack {
            reason: Reason::StateNotFound,
            opcode: 31,
            pc: 0x1234,
            message_sha1: [7; 20],
            details: vec![1, 2, 3, 4, 5, 6],
            returned_feedback: Some(vec![0x05]),
        };
        let bytes = n.emit();
        assert_eq!(&bytes[..6], &[0xFC, 0x05, 0x00, 0x01, 1, 31]);
        assert_eq!(Nack::parse(&bytes), Ok(n));
    }

    #[test]
    fn framing_error_nack_has_zero_hash() {
        let f = Failure::new(Reason::FramingError);
        let n = Nack::from_failure(&f, [9; 20]);
        assert_eq!(n.message_sha1, [0; 20]);
    }

    #[test]
    fn nack_reports_lost_state() {
        let mut log = SentLog::new(4);
        let used = StateId([0xAB; 20]);
        let other = StateId([0xCD; 20]);
        let requested = StateId([0x11; 20]);
        let msg = [0xF9, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0x00];
        let hash = log.record(
            &msg,
            SentRecord {
                compartment: CompartmentId(7),
                states_used: vec![used, other],
                states_requested: vec![requested],
            },
        );
        let failure = Failure::with_details(Reason::StateNotFound, &[0xAB; 6]);
        let nack = Nack::from_failure(&failure, hash).emit();
        let report = log.on_nack(&nack).unwrap();
        assert_eq!(report.record.unwrap().compartment, CompartmentId(7));
        assert_eq!(report.lost_states, vec![used]);
        assert_eq!(report.not_created, vec![requested]);
    }

    #[test]
    fn sent_log_is_bounded() {
        let mut log = SentLog::new(2);
        let rec = SentRecord { compartment: CompartmentId(1), states_used: vec![], states_requested: vec![] };
        let h1 = log.record(b"one", rec.clone());
        log.record(b"two", rec.clone());
        log.record(b"three", rec);
        assert_eq!(log.len(), 2);
        let nack = Nack::from_failure(&Failure::new(Reason::UserRequested), h1).emit();
        assert!(log.on_nack(&nack).unwrap().record.is_none());
    }
}
