//! The simplified LZ77 scheme of RFC 4464 §4.1.1: its decompressor as UDVM
//! bytecode, assembled by hand, and a small greedy encoder that produces the
//! matching compressed data.
//!
//! Shared by `benches/decompress.rs` and `tests/lz77_bytecode.rs` (included
//! with `#[path]`), so the benchmark measures exactly what the test
//! verifies.
//!
//! UDVM memory layout (RFC 4464 §4.1.1, plus the RFC 3485 dictionary):
//!
//! ```text
//! 0      32        64          128        256          512                8192           13028
//! | vals | scratch | registers | bytecode | 0..255 tbl | circular buffer  | RFC 3485 dict |
//!                  '--------------- saved as state (64..8192) ------------'  (dict variant)
//! ```
//!
//! A compressed message is a sequence of 4-byte characters: a 2-byte
//! position and a 2-byte length, both big-endian. The bytecode copies the
//! `length` bytes at `position` into the circular buffer (COPY-LITERAL,
//! byte copying rules) and outputs them. The encoder keeps its own model of
//! the decompressor's memory and picks, at every input position, the
//! longest string it can point at.

// A setup failure here is a bug to see at once: unwrap panics with it.
#![allow(clippy::unwrap_used)]
#![allow(dead_code)]

use sigcomp::state::StateId;
use sigcomp::wire;

/// Where both bytecodes are uploaded (`at (128)` after `align (64)`).
pub const DESTINATION: u16 = 128;
/// END-MESSAGE's state: address 64, length udvm_memory_size - 64.
pub const STATE_ADDRESS: u16 = 64;
pub const STATE_LENGTH: u16 = 8128;
/// `decompress_sigcomp_message`: where a message that accesses the saved
/// state starts executing.
pub const STATE_INSTRUCTION: u16 = 139;
pub const MIN_ACCESS_LEN: u16 = 6;

const STATIC_DICTIONARY: usize = 256;
const CIRCULAR_BUFFER: u16 = 512;
/// `set (udvm_memory_size, 8192)`: byte_copy_right.
const UDVM_MEMORY_SIZE: u16 = 8192;
/// Where the dict variant's STATE-ACCESS puts the RFC 3485 dictionary:
/// just past byte_copy_right, so the circular buffer never overwrites it.
pub const SIP_DICT_ADDRESS: u16 = 8192;

/// RFC 4464 §4.1.1 LZ77 decompressor, hand-assembled from the RFC's
/// assembly (operand encodings RFC 3320 §8.5, opcodes RFC 3320 Figure 11).
/// It is byte for byte the RFC's own Appendix A.1.1 dump, which the test
/// checks; the final priority operand (0) is left to the zero-initialised
/// memory after the code, as the RFC's minimal code_len does.
#[rustfmt::skip]
pub const LZ77_BYTECODE: [u8; 33] = [
    // 128 :initialize_memory
    //     MULTILOAD (64, 3, circular_buffer, udvm_memory_size, circular_buffer)
    0x0f,       // MULTILOAD
    0x86,       //   %address 64        (multitype 10000110 = 64)
    0x03,       //   #n 3               (literal 0nnnnnnn)
    0x89,       //   %512 byte_copy_left       (1000 1nnn = 2^(9))
    0x8d,       //   %8192 byte_copy_right     (2^13)
    0x89,       //   %512 decompressed_pointer
    // 134 MEMSET (static_dictionary, 256, 0, 1)
    0x15,       // MEMSET
    0x88,       //   %256 address       (2^8)
    0x88,       //   %256 length
    0x00,       //   %0 start value
    0x01,       //   %1 offset
    // 139 :decompress_sigcomp_message / :next_character
    //     INPUT-BYTES (4, position_value, end_of_message)
    0x1c,       // INPUT-BYTES
    0x04,       //   %4
    0x20,       //   %32 position_value (00nnnnnn)
    0x0d,       //   @end_of_message: 152 - 139 = 13
    // 143 COPY-LITERAL ($position_value, $length_value, $decompressed_pointer)
    0x13,       // COPY-LITERAL
    0x50,       //   %$32  (01nnnnnn = memory[2 * 16])
    0x51,       //   %$34  (memory[2 * 17])
    0x22,       //   $68   (reference 0nnnnnnn = memory[2 * 34])
    // 147 OUTPUT ($position_value, $length_value)
    0x22,       // OUTPUT
    0x50,       //   %$32
    0x51,       //   %$34
    // 150 JUMP (next_character)
    0x16,       // JUMP
    0xf5,       //   @139: 139 - 150 = -11 = 65525 (111nnnnn: 65504 + 21)
    // 152 :end_of_message
    //     END-MESSAGE (0, 0, state_length, 64, decompress_sigcomp_message, 6, 0)
    0x23,       // END-MESSAGE
    0x00,       //   %0 requested_feedback_location
    0x00,       //   %0 returned_parameters_location
    0xbf, 0xc0, //   %8128 state_length   (101nnnnn nnnnnnnn)
    0x86,       //   %64 state_address
    0xa0, 0x8b, //   %139 state_instruction
    0x06,       //   %6 minimum_access_length
    //          //   %0 state_retention_priority: the zero at 161
];

/// RFC 4464 Appendix A.1.1, as printed there.
pub const RFC4464_A_1_1_HEX: &str =
    "0f86 0389 8d89 1588 8800 011c 0420 0d13 5051 2222 5051 16f5 2300 00bf c086 a08b 06";

/// The same decompressor with the RFC 3485 SIP/SDP dictionary loaded by
/// STATE-ACCESS (RFC 4464 §5.2) at 8192, past the circular buffer. The
/// STATE-ACCESS sits after `decompress_sigcomp_message`, so a message that
/// resumes from the saved state loads the dictionary again (it is not part
/// of the 64..8192 state).
#[rustfmt::skip]
pub const LZ77_SIP_DICT_BYTECODE: [u8; 48] = [
    // 128 MULTILOAD (64, 3, 512, 8192, 512)
    0x0f, 0x86, 0x03, 0x89, 0x8d, 0x89,
    // 134 MEMSET (256, 256, 0, 1)
    0x15, 0x88, 0x88, 0x00, 0x01,
    // 139 :decompress_sigcomp_message
    //     STATE-ACCESS (dictionary_id, 6, 0, 0, 8192, 0)
    0x1f,       // STATE-ACCESS
    0xa0, 0xaa, //   %170 partial_identifier_start (101nnnnn nnnnnnnn)
    0x06,       //   %6 partial_identifier_length
    0x00,       //   %0 state_begin
    0x00,       //   %0 state_length: the whole item
    0x8d,       //   %8192 state_address
    0x00,       //   %0 state_instruction: the item's own (0: carry on)
    // 147 :next_character  INPUT-BYTES (4, 32, end_of_message)
    0x1c, 0x04, 0x20, 0x0d, //  @160 - 147 = 13
    // 151 COPY-LITERAL ($32, $34, $68)
    0x13, 0x50, 0x51, 0x22,
    // 155 OUTPUT ($32, $34)
    0x22, 0x50, 0x51,
    // 158 JUMP (next_character)
    0x16, 0xf5, //   @147 - 158 = -11
    // 160 :end_of_message  END-MESSAGE (0, 0, 8128, 64, 139, 6, 0)
    0x23, 0x00, 0x00, 0xbf, 0xc0, 0x86, 0xa0, 0x8b, 0x06, 0x00,
    // 170 :dictionary_id  byte (0xfb, 0xe5, 0x07, 0xdf, 0xe5, 0xe6)
    0xfb, 0xe5, 0x07, 0xdf, 0xe5, 0xe6,
];

/// Which of the two decompressors the compressor targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// RFC 4464 §4.1.1 as printed: the 0..255 table is the only initial text.
    Plain,
    /// Plus the RFC 3485 dictionary at 8192.
    SipDict,
}

impl Variant {
    pub fn bytecode(self) -> &'static [u8] {
        match self {
            Variant::Plain => &LZ77_BYTECODE,
            Variant::SipDict => &LZ77_SIP_DICT_BYTECODE,
        }
    }
}

/// A compressor for one compartment: its model of the peer's UDVM memory
/// after `initialize_memory`, and then after each message it sent (assuming
/// each one is decompressed and its state saved).
pub struct Lz77Compressor {
    variant: Variant,
    mem: Vec<u8>,
    /// Bytes the encoder may point at: the 0..255 table, the RFC 3485
    /// dictionary, and circular-buffer bytes already written.
    valid: Vec<bool>,
    dp: u16,
    /// Whether the peer holds our state (a message has been sent).
    has_state: bool,
}

const BCL: u16 = CIRCULAR_BUFFER;
const BCR: u16 = UDVM_MEMORY_SIZE;
const RING: usize = (BCR - BCL) as usize;

fn next_addr(a: u16) -> u16 {
    // Byte copying rules (RFC 3320 §8.4).
    if a.wrapping_add(1) == BCR {
        BCL
    } else {
        a.wrapping_add(1)
    }
}

impl Lz77Compressor {
    pub fn new(variant: Variant) -> Lz77Compressor {
        let mut mem = vec![0u8; 65536];
        let mut valid = vec![false; 65536];
        let code = variant.bytecode();
        let d = usize::from(DESTINATION);
        mem[d..d + code.len()].copy_from_slice(code);
        for i in 0..256 {
            mem[STATIC_DICTIONARY + i] = i as u8;
            valid[STATIC_DICTIONARY + i] = true;
        }
        if variant == Variant::SipDict {
            let a = usize::from(SIP_DICT_ADDRESS);
            let dict = sigcomp::dict::SIP_SDP;
            mem[a..a + dict.len()].copy_from_slice(dict);
            valid[a..a + dict.len()].fill(true);
        }
        let mut c = Lz77Compressor { variant, mem, valid, dp: CIRCULAR_BUFFER, has_state: false };
        c.store_registers();
        c
    }

    fn store_registers(&mut self) {
        self.mem[64..66].copy_from_slice(&BCL.to_be_bytes());
        self.mem[66..68].copy_from_slice(&BCR.to_be_bytes());
        self.mem[68..70].copy_from_slice(&self.dp.to_be_bytes());
    }

    /// The state item END-MESSAGE asks for: memory 64..8192.
    pub fn state_value(&self) -> &[u8] {
        &self.mem[usize::from(STATE_ADDRESS)..usize::from(STATE_ADDRESS + STATE_LENGTH)]
    }

    /// Its state identifier (RFC 3320 §9.4.9), as the compressor computes it.
    pub fn state_id(&self) -> StateId {
        StateId::compute(STATE_ADDRESS, STATE_INSTRUCTION, MIN_ACCESS_LEN, self.state_value())
    }

    /// Longest match for `input` (non-empty) that the decompressor can copy
    /// to `dp` and output unchanged: the source must be readable under the
    /// byte copying rules and must not overlap the bytes the copy writes.
    fn longest_match(&self, input: &[u8]) -> (u16, u16) {
        let max = input.len().min(usize::from(u16::MAX));
        let mut best = (0u16, 0usize);
        let mut consider = |s: u16, len: usize| {
            if len > best.1 {
                best = (s, len);
            }
        };
        // Regions outside the circular buffer are never written: a match
        // just may not run off their end.
        let mut regions = vec![(STATIC_DICTIONARY, STATIC_DICTIONARY + 256)];
        if self.variant == Variant::SipDict {
            let a = usize::from(SIP_DICT_ADDRESS);
            regions.push((a, a + sigcomp::dict::SIP_SDP.len()));
        }
        for (lo, hi) in regions {
            for s in lo..hi {
                if self.mem[s] != input[0] {
                    continue;
                }
                let limit = max.min(hi - s);
                let len = input[..limit].iter().zip(&self.mem[s..hi]).take_while(|(a, b)| a == b).count();
                consider(s as u16, len);
            }
        }
        // The circular buffer: walk with wrap-around, only over written
        // bytes, and keep clear of the destination [dp, dp + len).
        let dp_off = usize::from(self.dp - BCL);
        for f in 1..RING {
            // f: distance from dp forward to the source start.
            let s_off = (dp_off + f) % RING;
            let s = BCL + s_off as u16;
            if !self.valid[usize::from(s)] || self.mem[usize::from(s)] != input[0] {
                continue;
            }
            // Disjoint from the destination iff len <= f and f + len <= RING.
            let limit = max.min(f).min(RING - f);
            let mut len = 0;
            let mut a = s;
            while len < limit && self.valid[usize::from(a)] && self.mem[usize::from(a)] == input[len] {
                len += 1;
                a = next_addr(a);
            }
            consider(s, len);
        }
        assert!(best.1 > 0, "the 0..255 table always matches one byte");
        (best.0, best.1 as u16)
    }

    /// Compresses `input` into LZ77 characters and updates the model as the
    /// decompressor will (COPY-LITERAL into the circular buffer).
    ///
    /// Greedy longest match. Every character costs 4 bytes whatever its
    /// length, and any suffix of a match is a match, so greedy parsing
    /// already uses the fewest characters (a shortest-path parse was tried
    /// and gave byte-identical output).
    pub fn compress(&mut self, input: &[u8]) -> Vec<u8> {
        assert!(input.len() < RING, "message larger than the circular buffer");
        let mut out = Vec::new();
        let mut i = 0;
        while i < input.len() {
            let (pos, len) = self.longest_match(&input[i..]);
            out.extend_from_slice(&pos.to_be_bytes());
            out.extend_from_slice(&len.to_be_bytes());
            let mut src = pos;
            for _ in 0..len {
                let b = self.mem[usize::from(src)];
                self.mem[usize::from(self.dp)] = b;
                self.valid[usize::from(self.dp)] = true;
                src = next_addr(src);
                self.dp = next_addr(self.dp);
            }
            i += usize::from(len);
        }
        self.store_registers();
        out
    }

    /// The first message of a compartment: bytecode upload + data.
    pub fn bytecode_message(&mut self, input: &[u8]) -> Vec<u8> {
        let data = self.compress(input);
        self.has_state = true;
        wire::emit_bytecode_message(None, self.variant.bytecode(), DESTINATION, &data).unwrap()
    }

    /// A later message: 6-byte partial id of the state the previous message
    /// created + data compressed against it.
    pub fn state_message(&mut self, input: &[u8]) -> Vec<u8> {
        assert!(self.has_state, "no state at the peer yet");
        let id = self.state_id();
        let data = self.compress(input);
        wire::emit_state_message(None, &id.0[..6], &data).unwrap()
    }
}

/// The ~1 KB IMS INVITE the benchmarks compress.
pub static INVITE: &[u8] = include_bytes!("../data/invite.sip");

/// A second INVITE from the same UE for a new call: new Call-ID, tag,
/// branch, callee, SDP session id and port (same lengths, so the
/// Content-Length stays right).
pub fn second_invite() -> Vec<u8> {
    let mut s = String::from_utf8(INVITE.to_vec()).expect("ASCII");
    for (from, to) in [
        ("cb03a0s09a2sdfglkj490333", "a84b4c76e66710ebc9d4f2a1"),
        ("tag=171828", "tag=314159"),
        ("z9hG4bKnashds7", "z9hG4bKnashds9"),
        ("+1-212-555-2222", "+1-212-555-3333"),
        ("2987933615 2987933615", "2987933702 2987933702"),
        ("m=audio 49232", "m=audio 49240"),
    ] {
        assert!(s.contains(from), "{from} not in invite.sip");
        s = s.replace(from, to);
    }
    s.into_bytes()
}

/// Endpoint parameters the RFC 4464 bytecode assumes (§4: 16K DMS, 16
/// cycles per bit, 8K SMS).
pub fn params() -> sigcomp::Params {
    sigcomp::Params { dms: 16384, sms: 8192, cpb: 16, version: 2 }
}
