//! Why a message failed to decompress: the reason codes of RFC 4077 §3.2
//! and where the failure happened (RFC 3320 §8.7). The crate's error type,
//! a leaf every other module may use.

use std::fmt;

/// RFC 4077 §3.2 reason codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Reason {
    StateNotFound = 1,
    CyclesExhausted = 2,
    UserRequested = 3,
    Segfault = 4,
    TooManyStateRequests = 5,
    InvalidStateIdLength = 6,
    InvalidStatePriority = 7,
    OutputOverflow = 8,
    StackUnderflow = 9,
    BadInputBitorder = 10,
    DivByZero = 11,
    SwitchValueTooHigh = 12,
    TooManyBitsRequested = 13,
    InvalidOperand = 14,
    HuffmanNoMatch = 15,
    MessageTooShort = 16,
    InvalidCodeLocation = 17,
    BytecodesTooLarge = 18,
    InvalidOpcode = 19,
    InvalidStateProbe = 20,
    IdNotUnique = 21,
    MultiloadOverwritten = 22,
    StateTooShort = 23,
    InternalError = 24,
    FramingError = 25,
}

impl Reason {
    pub const ALL: [Reason; 25] = [
        Reason::StateNotFound,
        Reason::CyclesExhausted,
        Reason::UserRequested,
        Reason::Segfault,
        Reason::TooManyStateRequests,
        Reason::InvalidStateIdLength,
        Reason::InvalidStatePriority,
        Reason::OutputOverflow,
        Reason::StackUnderflow,
        Reason::BadInputBitorder,
        Reason::DivByZero,
        Reason::SwitchValueTooHigh,
        Reason::TooManyBitsRequested,
        Reason::InvalidOperand,
        Reason::HuffmanNoMatch,
        Reason::MessageTooShort,
        Reason::InvalidCodeLocation,
        Reason::BytecodesTooLarge,
        Reason::InvalidOpcode,
        Reason::InvalidStateProbe,
        Reason::IdNotUnique,
        Reason::MultiloadOverwritten,
        Reason::StateTooShort,
        Reason::InternalError,
        Reason::FramingError,
    ];

    /// The code carried in a NACK.
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<Reason> {
        Reason::ALL.get(usize::from(code).wrapping_sub(1)).copied()
    }

    /// The name RFC 4077 gives the reason, e.g. `CYCLES_EXHAUSTED`.
    pub fn name(self) -> &'static str {
        match self {
            Reason::StateNotFound => "STATE_NOT_FOUND",
            Reason::CyclesExhausted => "CYCLES_EXHAUSTED",
            Reason::UserRequested => "USER_REQUESTED",
            Reason::Segfault => "SEGFAULT",
            Reason::TooManyStateRequests => "TOO_MANY_STATE_REQUESTS",
            Reason::InvalidStateIdLength => "INVALID_STATE_ID_LENGTH",
            Reason::InvalidStatePriority => "INVALID_STATE_PRIORITY",
            Reason::OutputOverflow => "OUTPUT_OVERFLOW",
            Reason::StackUnderflow => "STACK_UNDERFLOW",
            Reason::BadInputBitorder => "BAD_INPUT_BITORDER",
            Reason::DivByZero => "DIV_BY_ZERO",
            Reason::SwitchValueTooHigh => "SWITCH_VALUE_TOO_HIGH",
            Reason::TooManyBitsRequested => "TOO_MANY_BITS_REQUESTED",
            Reason::InvalidOperand => "INVALID_OPERAND",
            Reason::HuffmanNoMatch => "HUFFMAN_NO_MATCH",
            Reason::MessageTooShort => "MESSAGE_TOO_SHORT",
            Reason::InvalidCodeLocation => "INVALID_CODE_LOCATION",
            Reason::BytecodesTooLarge => "BYTECODES_TOO_LARGE",
            Reason::InvalidOpcode => "INVALID_OPCODE",
            Reason::InvalidStateProbe => "INVALID_STATE_PROBE",
            Reason::IdNotUnique => "ID_NOT_UNIQUE",
            Reason::MultiloadOverwritten => "MULTILOAD_OVERWRITTEN",
            Reason::StateTooShort => "STATE_TOO_SHORT",
            Reason::InternalError => "INTERNAL_ERROR",
            Reason::FramingError => "FRAMING_ERROR",
        }
    }

    pub fn from_name(name: &str) -> Option<Reason> {
        Reason::ALL.iter().copied().find(|r| r.name() == name)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why and where a message failed to decompress (RFC 3320 §8.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: Reason,
    /// Opcode at the PC when the failure occurred; 0 before execution began.
    pub opcode: u8,
    /// Address of the failing instruction; 0 before execution began.
    pub pc: u16,
    /// Reason-specific details (RFC 4077 §3.2): a partial state identifier,
    /// the cycles per bit, or the decompression memory size.
    pub details: Vec<u8>,
    /// UDVM cycles used before the failure.
    pub cycles: u64,
}

impl Failure {
    pub(crate) fn new(reason: Reason) -> Failure {
        Failure { reason, opcode: 0, pc: 0, details: Vec::new(), cycles: 0 }
    }

    pub(crate) fn with_details(reason: Reason, details: &[u8]) -> Failure {
        Failure { details: details.to_vec(), ..Failure::new(reason) }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at pc {} (opcode {})", self.reason, self.pc, self.opcode)?;
        if !self.details.is_empty() {
            f.write_str(", details ")?;
            for b in &self.details {
                write!(f, "{b:02x}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}
