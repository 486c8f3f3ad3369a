//! Feedback between the two ends of a compartment (RFC 3320 §5.1, §9.4.9):
//! what a message asks its receiver to return, the parameters and states it
//! announces, and what a compartment keeps of the feedback it received.

/// Requested feedback data (RFC 3320 Figure 12).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestedFeedback {
    /// Q-bit set: the item to return to the peer, including its length byte.
    pub item: Option<Vec<u8>>,
    /// S-bit: the peer no longer wants state saved here.
    pub no_state: bool,
    /// I-bit: the peer will not access our locally available states.
    pub no_local_states: bool,
}

/// Returned SigComp parameters (RFC 3320 Figure 13).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReturnedParameters {
    /// cpb/dms/sms byte; 0 when not included.
    pub params_byte: u8,
    /// 0 when not included.
    pub version: u8,
    /// Partial identifiers of the peer's locally available states
    /// (RFC 3320 §9.4.9): the first [`MAX_ANNOUNCED_STATES`] of the list.
    pub local_states: Vec<Vec<u8>>,
    /// Identifiers the list held after the first [`MAX_ANNOUNCED_STATES`],
    /// read (a list running outside UDVM memory still fails) but not kept.
    pub local_states_dropped: usize,
}

/// The most locally available state identifiers kept from one message's
/// returned parameters (RFC 3320 §9.4.9), and so per compartment (its
/// feedback keeps the last message's list).
///
/// A list can run to 65536 / 7 ≈ 9,362 identifiers, 0.5 MB per
/// compartment kept outside the state memory accounting (RFC 3320 §6.2),
/// for a 12-byte message. A compressor needs only the few it can use as
/// dictionaries or bytecode (the RFC 3485 and RFC 5112 dictionaries and a
/// shared bytecode make three): the first 16 are kept, in the peer's order.
pub const MAX_ANNOUNCED_STATES: usize = 16;

impl ReturnedParameters {
    /// The peer's cycles_per_bit; None when the parameters byte was not
    /// included.
    pub fn cycles_per_bit(&self) -> Option<u16> {
        (self.params_byte != 0).then(|| crate::params::decode_cpb(self.params_byte >> 6))
    }
    /// The peer's decompression_memory_size in bytes; None when the
    /// parameters byte was not included.
    pub fn decompression_memory_size(&self) -> Option<u32> {
        (self.params_byte != 0).then(|| crate::params::decode_memory_size(self.params_byte >> 3))
    }
    /// The peer's state_memory_size in bytes (0: it keeps no state); None
    /// when the parameters byte was not included.
    pub fn state_memory_size(&self) -> Option<u32> {
        (self.params_byte != 0).then(|| crate::params::decode_memory_size(self.params_byte))
    }
}

/// Feedback a compartment has received, kept for the compressor that sends
/// in the reverse direction (RFC 3320 §6.3).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Feedback {
    /// Item to echo back to the peer in our next message's header.
    pub requested_item: Option<Vec<u8>>,
    /// S-bit from the peer: it no longer wants state saved for it here
    /// (RFC 3320 §9.4.9).
    pub no_state: bool,
    /// I-bit from the peer: it will not access our locally available
    /// states.
    pub no_local_states: bool,
    /// The peer's parameters and locally available states.
    pub peer_parameters: Option<ReturnedParameters>,
    /// The last returned feedback item the peer sent us.
    pub returned_item: Option<Vec<u8>>,
}
