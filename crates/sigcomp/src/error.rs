//! Why a message failed to decompress: the reason codes of RFC 4077 §3.2
//! and where the failure happened (RFC 3320 §8.7). The crate's error type,
//! a leaf every other module may use.

use std::fmt;

/// RFC 4077 §3.2 reason codes (Figure 2), each with its code as
/// discriminant; the variants' docs follow the RFC's descriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Reason {
    /// A state referenced (by STATE-ACCESS or the message header's partial
    /// identifier) is not found, or fewer identifier bytes were given than its
    /// minimum access length; details: the identifier.
    StateNotFound = 1,
    /// The message took more UDVM cycles than it was allocated
    /// (RFC 3320 §8.6); details: the cycles per bit, one byte.
    CyclesExhausted = 2,
    /// DECOMPRESSION-FAILURE was executed.
    UserRequested = 3,
    /// A read or write outside the UDVM memory.
    Segfault = 4,
    /// More than four state creation or free requests in one message.
    TooManyStateRequests = 5,
    /// A state identifier length below 6 or above 20.
    InvalidStateIdLength = 6,
    /// State priority 65535 in a creation request.
    InvalidStatePriority = 7,
    /// The decompressed message is larger than this endpoint takes.
    OutputOverflow = 8,
    /// POP or RETURN with `stack_fill` 0.
    StackUnderflow = 9,
    /// INPUT-BITS or INPUT-HUFFMAN with one of `input_bit_order`'s upper
    /// 13 bits set.
    BadInputBitorder = 10,
    /// DIVIDE or REMAINDER by 0.
    DivByZero = 11,
    /// SWITCH's j at or above its number of branches.
    SwitchValueTooHigh = 12,
    /// INPUT-BITS or INPUT-HUFFMAN asking for more than 16 bits.
    TooManyBitsRequested = 13,
    /// An operand that does not resolve to an integer (a literal or
    /// reference beginning 11111111).
    InvalidOperand = 14,
    /// The input matches none of INPUT-HUFFMAN's bit codes.
    HuffmanNoMatch = 15,
    /// The message has too few bytes to be a valid SigComp message.
    MessageTooShort = 16,
    /// The header's code location is 0.
    InvalidCodeLocation = 17,
    /// The uploaded bytecode does not fit in the UDVM memory; details:
    /// the decompression memory size, two bytes, big-endian.
    BytecodesTooLarge = 18,
    /// A byte that is not an instruction executed as one.
    InvalidOpcode = 19,
    /// A state access with `state_length` 0 and a non-zero
    /// `state_begin`.
    InvalidStateProbe = 20,
    /// A partial state identifier that matches more than one state item;
    /// details: the identifier.
    IdNotUnique = 21,
    /// MULTILOAD writing over itself.
    MultiloadOverwritten = 22,
    /// STATE-ACCESS copying beyond the end of the state item; details: the
    /// partial identifier requested.
    StateTooShort = 23,
    /// An unexpected condition in the decompressor.
    InternalError = 24,
    /// A framing error on a stream (unquoted 0xFF 0x80..=0xFE, RFC 3320
    /// §4.2.2); the NACK's message hash is then all zeros.
    FramingError = 25,
}

impl Reason {
    /// Every reason, in code order (`ALL[i]` has code `i + 1`).
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

    /// The reason with this NACK code (1..=25); None for any other.
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

    /// The reason RFC 4077 names `name` (exact, upper case); None for an
    /// unknown name.
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
    /// The RFC 4077 reason code.
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
