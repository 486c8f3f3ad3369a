//! The Universal Decompressor Virtual Machine (RFC 3320 §8–9, corrected by
//! RFC 4896 §3–4).
//!
//! A [`Machine`] runs one message: it owns nothing but borrows the UDVM
//! memory, the compressed input, the output buffer and the state handler
//! (read-only: state is created only after the application accepts the
//! message, RFC 3320 §6.3). Every memory access is bounds-checked, every
//! instruction is charged its cycles before it acts, and no loop runs longer
//! than the cycles it was charged for, so hostile bytecode ends in a
//! [`Failure`], never a panic or a hang.

use std::sync::Arc;

use sha1::{Digest, Sha1};

use crate::lookup_memo::{LookupMemo, Upcoming};
use crate::nack::{Failure, Reason};
use crate::state::{LookupError, StateHandler, UnpackCache};

/// Opcodes (RFC 3320 Figure 11).
pub mod op {
    pub const DECOMPRESSION_FAILURE: u8 = 0;
    pub const AND: u8 = 1;
    pub const OR: u8 = 2;
    pub const NOT: u8 = 3;
    pub const LSHIFT: u8 = 4;
    pub const RSHIFT: u8 = 5;
    pub const ADD: u8 = 6;
    pub const SUBTRACT: u8 = 7;
    pub const MULTIPLY: u8 = 8;
    pub const DIVIDE: u8 = 9;
    pub const REMAINDER: u8 = 10;
    pub const SORT_ASCENDING: u8 = 11;
    pub const SORT_DESCENDING: u8 = 12;
    pub const SHA_1: u8 = 13;
    pub const LOAD: u8 = 14;
    pub const MULTILOAD: u8 = 15;
    pub const PUSH: u8 = 16;
    pub const POP: u8 = 17;
    pub const COPY: u8 = 18;
    pub const COPY_LITERAL: u8 = 19;
    pub const COPY_OFFSET: u8 = 20;
    pub const MEMSET: u8 = 21;
    pub const JUMP: u8 = 22;
    pub const COMPARE: u8 = 23;
    pub const CALL: u8 = 24;
    pub const RETURN: u8 = 25;
    pub const SWITCH: u8 = 26;
    pub const CRC: u8 = 27;
    pub const INPUT_BYTES: u8 = 28;
    pub const INPUT_BITS: u8 = 29;
    pub const INPUT_HUFFMAN: u8 = 30;
    pub const STATE_ACCESS: u8 = 31;
    pub const STATE_CREATE: u8 = 32;
    pub const STATE_FREE: u8 = 33;
    pub const OUTPUT: u8 = 34;
    pub const END_MESSAGE: u8 = 35;
}

/// UDVM register addresses (RFC 3320 §8.1).
const BYTE_COPY_LEFT: u16 = 64;
const BYTE_COPY_RIGHT: u16 = 66;
const INPUT_BIT_ORDER: u16 = 68;
const STACK_LOCATION: u16 = 70;
// byte_copy_left and byte_copy_right are read together (`Machine::bounds`).
const _: () = assert!(BYTE_COPY_RIGHT == BYTE_COPY_LEFT + 2);

/// RFC 3320 §9.4.8: at most 65536 bytes of output per message.
pub const MAX_OUTPUT: usize = 65536;

/// A state creation request as buffered by STATE-CREATE or END-MESSAGE, with
/// the value copied out of UDVM memory at the end of the message
/// (RFC 4896 §4.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    pub address: u16,
    pub instruction: u16,
    pub min_access_len: u16,
    pub priority: u16,
    /// Shared with the state item made from it: the bytes are copied out
    /// of UDVM memory once.
    pub value: Arc<[u8]>,
}

/// State requests in the order the bytecode made them (RFC 3320 §9.4.9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateRequest {
    Create(CreateRequest),
    /// Partial identifier of the item to free (6–20 bytes).
    Free(Vec<u8>),
}

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
    pub fn cycles_per_bit(&self) -> Option<u16> {
        (self.params_byte != 0).then(|| crate::params::decode_cpb(self.params_byte >> 6))
    }
    pub fn decompression_memory_size(&self) -> Option<u32> {
        (self.params_byte != 0).then(|| crate::params::decode_memory_size(self.params_byte >> 3))
    }
    pub fn state_memory_size(&self) -> Option<u32> {
        (self.params_byte != 0).then(|| crate::params::decode_memory_size(self.params_byte))
    }
}

/// What a successful run hands to the dispatcher at END-MESSAGE.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    pub cycles: u64,
    /// Whether OUTPUT ran at all (a 0-byte message differs from no message,
    /// RFC 3320 §9.4.8).
    pub output_seen: bool,
    pub requests: Vec<StateRequest>,
    /// None when requested_feedback_location was 0 (RFC 4896 §9.2: keep the
    /// earlier feedback).
    pub requested_feedback: Option<RequestedFeedback>,
    pub returned_parameters: Option<ReturnedParameters>,
}

#[derive(Debug, Clone, Copy)]
struct PendingCreate {
    length: u16,
    address: u16,
    instruction: u16,
    min_access_len: u16,
    priority: u16,
}

#[derive(Debug, Clone, Copy)]
enum Pending {
    Create(PendingCreate),
    Free { start: u16, length: u16 },
}

/// Four creations and four frees.
const MAX_PENDING: usize = 8;
const NO_PENDING: Pending = Pending::Free { start: 0, length: 0 };

/// Why a run stops before its next instruction: a failure, or END-MESSAGE
/// (whose [`Outcome`] the machine then holds). It is two bytes, so operand
/// decoding and memory reads return their results in registers; the
/// [`Failure`] with its pc, opcode, cycles and details is built once, when
/// the run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Fail(Reason),
    End,
}

type Res<T> = Result<T, Stop>;

#[inline]
fn fail<T>(reason: Reason) -> Res<T> {
    Err(Stop::Fail(reason))
}

/// A decoded multitype operand (RFC 3320 §8.5, Figure 10): a value held in
/// the instruction's own bytes, or the word at a memory address, read each
/// time the instruction runs.
#[derive(Debug, Clone, Copy)]
enum Operand {
    Value(u16),
    Memory(u16),
}

/// Inputs of at most this many bytes have their SHA-1 digest kept for the
/// next SHA-1 instruction (one SHA-1 block holds 55 bytes of input).
const SHA1_REUSED_INPUT: usize = 55;

/// SHA-1 of no bytes (RFC 3174).
const SHA1_OF_NOTHING: [u8; 20] = [
    0xda, 0x39, 0xa3, 0xee, 0x5e, 0x6b, 0x4b, 0x0d, 0x32, 0x55, 0xbf, 0xef, 0x95, 0x60, 0x18, 0x90, 0xaf, 0xd8, 0x07,
    0x09,
];

/// SHA-1 of one byte, from a table of all 256 made once per process.
fn sha1_of_byte(b: u8) -> [u8; 20] {
    static DIGESTS: std::sync::OnceLock<Box<[[u8; 20]; 256]>> = std::sync::OnceLock::new();
    let table = DIGESTS.get_or_init(|| {
        let mut t = Box::new([[0u8; 20]; 256]);
        for (i, d) in t.iter_mut().enumerate() {
            *d = Sha1::digest([i as u8]).into();
        }
        t
    });
    table[usize::from(b)]
}

/// Sets of an INPUT-HUFFMAN that [`HuffmanEntry`] keeps decoded.
const HUFFMAN_CACHED_SETS: usize = 4;
/// INPUT-HUFFMAN instructions cached per run (a decoder loop has one or two).
const HUFFMAN_CACHE: usize = 4;

/// An INPUT-HUFFMAN instruction decoded once in a run. The entry is used
/// only while no write has reached the instruction's bytes (the bytecode
/// may rewrite itself): a write into `code_lo`..+`code_len` empties the
/// cache.
#[derive(Debug, Clone, Copy)]
struct HuffmanEntry {
    pc: u16,
    /// Bytes from `pc` to the next instruction; 0 for an empty slot.
    len: u16,
    destination: Operand,
    address: Operand,
    n: u8,
    sets: [[Operand; 4]; HUFFMAN_CACHED_SETS],
}

const EMPTY_HUFFMAN: HuffmanEntry = HuffmanEntry {
    pc: 0,
    len: 0,
    destination: Operand::Value(0),
    address: Operand::Value(0),
    n: 0,
    sets: [[Operand::Value(0); 4]; HUFFMAN_CACHED_SETS],
};

/// The operand sets of an INPUT-HUFFMAN as [`Machine::huffman_run`]
/// reads them: sets decoded for one run (a slice), or those of a
/// [`HuffmanEntry`] read in place ([`CachedSets`]). The run is
/// monomorphised for each, so the cached instruction reads its sets
/// straight from the cache.
trait HuffmanSets: Copy {
    /// The n sets (bits, lower_bound, upper_bound, uncompressed), which
    /// may be borrowed from the machine.
    fn sets<'s>(&'s self, m: &'s Machine<'_>) -> &'s [[Operand; 4]];

    /// Operand `k` of set `i`, read alone (a set is not copied whole).
    #[inline(always)]
    fn operand(&self, m: &Machine<'_>, i: usize, k: usize) -> Operand {
        self.sets(m)[i][k]
    }
}

impl HuffmanSets for &[[Operand; 4]] {
    #[inline(always)]
    fn sets<'s>(&'s self, _: &'s Machine<'_>) -> &'s [[Operand; 4]] {
        self
    }
}

/// The first `n` (at most [`HUFFMAN_CACHED_SETS`]) sets of the entry
/// `huffman[slot]` of a [`Machine`].
#[derive(Clone, Copy)]
struct CachedSets {
    slot: usize,
    n: usize,
}

impl HuffmanSets for CachedSets {
    #[inline(always)]
    fn sets<'s>(&'s self, m: &'s Machine<'_>) -> &'s [[Operand; 4]] {
        &m.huffman[self.slot].sets[..self.n]
    }
}

impl Operand {
    /// The address a reference operand names (decoded as
    /// [`Operand::Memory`]), or a slot number kept as a value.
    #[inline(always)]
    fn address(self) -> u16 {
        match self {
            Operand::Value(a) | Operand::Memory(a) => a,
        }
    }
}

/// How an operand is encoded (RFC 3320 §8.5): multitype (%, and address @,
/// which is multitype plus the pc), or reference ($, decoded as the
/// [`Operand::Memory`] it names).
#[derive(Debug, Clone, Copy)]
enum Kind {
    Multi,
    Reference,
}

/// The operands of the instructions [`DecodeCache`] keeps: those a decoder
/// loop repeats. INPUT-HUFFMAN, of any length, has [`HuffmanEntry`].
fn operand_kinds(opcode: u8) -> Option<&'static [Kind]> {
    use Kind::{Multi, Reference};
    Some(match opcode {
        op::AND
        | op::OR
        | op::LSHIFT
        | op::RSHIFT
        | op::ADD
        | op::SUBTRACT
        | op::MULTIPLY
        | op::DIVIDE
        | op::REMAINDER => &[Reference, Multi],
        op::NOT => &[Reference],
        op::LOAD | op::OUTPUT => &[Multi, Multi],
        op::PUSH | op::POP | op::JUMP | op::CALL => &[Multi],
        op::RETURN => &[],
        op::COPY | op::INPUT_BITS => &[Multi, Multi, Multi],
        op::COPY_LITERAL | op::COPY_OFFSET => &[Multi, Multi, Reference],
        op::COMPARE => &[Multi; 5],
        _ => return None,
    })
}

/// An instruction with its operands decoded: the next instruction's
/// address, and up to five operands (COMPARE's), read when it runs.
#[derive(Debug, Clone, Copy)]
struct Decoded {
    /// [`cache_key`] of the [`DecodeCache`] epoch it was decoded in and
    /// its pc: one comparison finds whether it is the instruction wanted.
    key: u64,
    next: u16,
    opcode: u8,
    ops: [Operand; 5],
}

impl Decoded {
    const EMPTY: Decoded = Decoded { key: 0, next: 0, opcode: 0, ops: [Operand::Value(0); 5] };

    fn pc(&self) -> u16 {
        self.key as u16
    }
}

/// The key of the instruction at `pc` decoded in `epoch` (never 0, so no
/// key matches an unused entry's 0).
#[inline(always)]
fn cache_key(epoch: u32, pc: u16) -> u64 {
    (u64::from(epoch) << 16) | u64::from(pc)
}

/// [`DecodeCache`] entries: a power of two, indexed by the pc's low bits.
const DECODED: usize = 256;
/// The entry after them holds an instruction decoded but not kept (its
/// key is 0, which no lookup matches), so that every decoded instruction
/// runs from the table.
const UNKEPT: usize = DECODED;

/// Instructions decoded once and then run from their decoded form. The
/// decompressor keeps the cache between messages, so that no message
/// pays for clearing it: an entry is used only in the epoch it was made
/// in, and every run, and every write into cached instructions (bytecode
/// may rewrite itself), starts a new epoch.
#[derive(Debug, Default)]
pub struct DecodeCache {
    /// Allocated by the first run.
    entries: Option<Box<[Decoded; DECODED + 1]>>,
    epoch: u32,
}

/// Moves to the next epoch, making every entry stale; when the epoch
/// counter wraps, the entries are cleared so no old key can match again.
fn next_epoch(epoch: &mut u32, entries: &mut [Decoded]) {
    *epoch = epoch.wrapping_add(1);
    if *epoch == 0 {
        for e in entries {
            e.key = 0;
        }
        *epoch = 1;
    }
}

/// One UDVM instance.
pub struct Machine<'a> {
    mem: &'a mut [u8],
    /// The [`DecodeCache`]'s entries, this run's those of `epoch`: held
    /// here directly, so that finding the next instruction takes no
    /// pointer chase through the cache.
    decoded: &'a mut [Decoded; DECODED + 1],
    /// The cache's epoch, written back whenever it changes.
    epoch: u32,
    cache_epoch: &'a mut u32,
    states: &'a StateHandler,
    input: &'a [u8],
    in_pos: usize,
    /// Bits of a partly consumed byte: value, count left, and P-bit used.
    partial: u8,
    partial_left: u8,
    last_p: bool,
    output: &'a mut Vec<u8>,
    output_seen: bool,
    cpb: u64,
    cycles_left: u64,
    /// The budget so far: the initial one plus cpb per bit input
    /// (RFC 3320 §8.6); the cycles used are `cycles_granted - cycles_left`.
    cycles_granted: u64,
    /// State requests so far: at most four creations and four frees
    /// (RFC 3320 §9.4.9).
    pending: [Pending; MAX_PENDING],
    pending_len: usize,
    creates: u8,
    frees: u8,
    /// INPUT-HUFFMAN decodes its up to 3 + 4n operands at every token; a
    /// decompressor loop runs the same one hundreds of times a message.
    huffman: [HuffmanEntry; HUFFMAN_CACHE],
    huffman_next: usize,
    /// Memory from `code_lo` for `code_len` bytes covers every instruction
    /// in `decoded` (this epoch's) and `huffman`; a write there empties both.
    code_lo: usize,
    code_len: usize,
    /// The sets of an INPUT-HUFFMAN being decoded.
    huffman_sets: Vec<[Operand; 4]>,
    /// The epoch instructions are decoded in: `epoch`, or 0 (which no
    /// lookup matches) when no decoded instruction is to be found again,
    /// see [`Machine::without_decode_cache`].
    key_epoch: u32,
    /// Packed states read by STATE-ACCESS, each pack unpacked once per
    /// message.
    unpacked: UnpackCache,
    /// STATE-ACCESS's lookups so far.
    lookups: LookupMemo<'a>,
    /// The bytes SHA-1 and CRC read, kept between instructions.
    scratch: Vec<u8>,
    /// The last short input SHA-1 hashed, and its digest.
    last_digest: Option<([u8; SHA1_REUSED_INPUT], usize, [u8; 20])>,
    /// Reason-specific details of the failure being returned (RFC 4077
    /// §3.2).
    details: Vec<u8>,
    /// What END-MESSAGE produced.
    outcome: Option<Outcome>,
}

impl<'a> Machine<'a> {
    /// A machine over initialised memory. `header_len` is the SigComp header
    /// size in bytes: the cycle budget starts at (1000 + 8 × header bits)
    /// × cycles_per_bit and grows by cycles_per_bit for every bit input
    /// (RFC 3320 §8.6).
    pub fn new(
        mem: &'a mut [u8],
        decoded: &'a mut DecodeCache,
        states: &'a StateHandler,
        input: &'a [u8],
        output: &'a mut Vec<u8>,
        cpb: u16,
        header_len: usize,
    ) -> Machine<'a> {
        let cpb = u64::from(cpb);
        let budget = (1000 + 8 * header_len as u64) * cpb;
        let DecodeCache { entries, epoch: cache_epoch } = decoded;
        let decoded = &mut **entries.get_or_insert_with(|| Box::new([Decoded::EMPTY; DECODED + 1]));
        next_epoch(cache_epoch, decoded);
        let epoch = *cache_epoch;
        Machine {
            mem,
            decoded,
            epoch,
            cache_epoch,
            states,
            input,
            in_pos: 0,
            partial: 0,
            partial_left: 0,
            last_p: false,
            output,
            output_seen: false,
            cpb,
            cycles_left: budget,
            cycles_granted: budget,
            pending: [NO_PENDING; MAX_PENDING],
            pending_len: 0,
            creates: 0,
            frees: 0,
            huffman: [EMPTY_HUFFMAN; HUFFMAN_CACHE],
            huffman_next: 0,
            code_lo: 0,
            code_len: 0,
            huffman_sets: Vec::new(),
            key_epoch: epoch,
            unpacked: UnpackCache::default(),
            lookups: LookupMemo::default(),
            scratch: Vec::new(),
            last_digest: None,
            details: Vec::new(),
            outcome: None,
        }
    }

    /// Reads packed states through `cache` (packs it holds are not
    /// unpacked again).
    pub fn with_unpacked(mut self, cache: UnpackCache) -> Machine<'a> {
        self.unpacked = cache;
        self
    }

    /// Keeps no decoded instruction: every instruction is decoded from
    /// its bytes each time it runs. Slower, and otherwise the same in
    /// every observable way (output, failure, cycles, state requests,
    /// memory): tests hold the decode cache, which bytecode rewriting
    /// itself must empty, to this reference.
    pub fn without_decode_cache(mut self) -> Machine<'a> {
        self.key_epoch = 0;
        self
    }

    /// Runs from `pc` to END-MESSAGE or failure.
    pub fn run(self, pc: u16) -> Result<Outcome, Failure> {
        self.run_keeping_unpacked(pc).0
    }

    /// As [`Machine::run`], and returns the packs unpacked on the way
    /// (for [`StateHandler::keep_unpacked`]).
    pub fn run_keeping_unpacked(mut self, pc: u16) -> (Result<Outcome, Failure>, UnpackCache) {
        let result = self.run_to_end(pc);
        (result, self.unpacked)
    }

    fn run_to_end(&mut self, mut pc: u16) -> Result<Outcome, Failure> {
        let stop = loop {
            match self.step(pc) {
                Ok(next) => pc = next,
                Err(stop) => break stop,
            }
        };
        let cycles = self.cycles_granted - self.cycles_left;
        match stop {
            Stop::End => {
                let mut outcome = self.outcome.take().unwrap_or_default();
                outcome.cycles = cycles;
                outcome.output_seen = self.output_seen;
                Ok(outcome)
            }
            Stop::Fail(reason) => {
                let details = if reason == Reason::CyclesExhausted {
                    vec![self.cpb.min(255) as u8]
                } else {
                    std::mem::take(&mut self.details)
                };
                let opcode = self.mem.get(usize::from(pc)).copied().unwrap_or(0);
                Err(Failure { reason, opcode, pc, details, cycles })
            }
        }
    }

    /// Fails with `reason` and `details` (RFC 4077 §3.2).
    #[cold]
    fn fail_with<T>(&mut self, reason: Reason, details: &[u8]) -> Res<T> {
        self.details = details.to_vec();
        fail(reason)
    }

    // ---- memory -------------------------------------------------------

    #[inline(always)]
    fn byte(&self, a: u16) -> Res<u8> {
        match self.mem.get(usize::from(a)) {
            Some(&b) => Ok(b),
            None => fail(Reason::Segfault),
        }
    }

    #[inline(always)]
    fn set_byte(&mut self, a: u16, v: u8) -> Res<()> {
        let i = usize::from(a);
        match self.mem.get_mut(i) {
            Some(b) => *b = v,
            None => return fail(Reason::Segfault),
        }
        self.wrote(i, 1);
        Ok(())
    }

    /// memory[a]: MSB at a, LSB at a + 1 (mod 2^16).
    #[inline(always)]
    fn word(&self, a: u16) -> Res<u16> {
        let i = usize::from(a);
        match self.mem.get(i..i + 2) {
            Some(&[hi, lo]) => Ok(u16::from_be_bytes([hi, lo])),
            _ => self.word_at_edge(a),
        }
    }

    /// A word at the end of memory: its LSB is at address 0 when memory
    /// is 65536 bytes, else outside memory.
    #[cold]
    fn word_at_edge(&self, a: u16) -> Res<u16> {
        Ok(u16::from_be_bytes([self.byte(a)?, self.byte(a.wrapping_add(1))?]))
    }

    #[inline(always)]
    fn set_word(&mut self, a: u16, v: u16) -> Res<()> {
        let i = usize::from(a);
        match self.mem.get_mut(i..i + 2) {
            Some(w) => w.copy_from_slice(&v.to_be_bytes()),
            None => return self.set_word_at_edge(a, v),
        }
        self.wrote(i, 2);
        Ok(())
    }

    #[cold]
    fn set_word_at_edge(&mut self, a: u16, v: u16) -> Res<()> {
        let [hi, lo] = v.to_be_bytes();
        self.set_byte(a, hi)?;
        self.set_byte(a.wrapping_add(1), lo)
    }

    /// Notes a write to memory [a, a + n): the cached instructions go if
    /// it reaches one of them.
    #[inline(always)]
    fn wrote(&mut self, a: usize, n: usize) {
        if a < self.code_lo + self.code_len && self.code_lo < a + n {
            self.drop_cached_code();
        }
    }

    #[cold]
    fn drop_cached_code(&mut self) {
        for e in &mut self.huffman {
            e.len = 0;
        }
        next_epoch(&mut self.epoch, &mut self.decoded[..]);
        *self.cache_epoch = self.epoch;
        if self.key_epoch != 0 {
            self.key_epoch = self.epoch;
        }
        self.code_lo = 0;
        self.code_len = 0;
    }

    // ---- operands (RFC 3320 §8.5) ---------------------------------------

    /// Literal (#), Figure 8.
    #[inline(always)]
    fn lit(&self, c: &mut u16) -> Res<u16> {
        let b0 = self.byte(*c)?;
        *c = c.wrapping_add(1);
        if b0 & 0x80 == 0 {
            Ok(u16::from(b0))
        } else if b0 & 0xC0 == 0x80 {
            let b1 = self.byte(*c)?;
            *c = c.wrapping_add(1);
            Ok((u16::from(b0 & 0x3F) << 8) | u16::from(b1))
        } else if b0 == 0xC0 {
            let v = self.word(*c)?;
            *c = c.wrapping_add(2);
            Ok(v)
        } else {
            fail(Reason::InvalidOperand)
        }
    }

    /// Reference ($), Figure 9: returns the address of the 2-byte value.
    #[inline(always)]
    fn reference(&self, c: &mut u16) -> Res<u16> {
        let b0 = self.byte(*c)?;
        *c = c.wrapping_add(1);
        if b0 & 0x80 == 0 {
            Ok(u16::from(b0) * 2)
        } else if b0 & 0xC0 == 0x80 {
            let b1 = self.byte(*c)?;
            *c = c.wrapping_add(1);
            Ok(((u16::from(b0 & 0x3F) << 8) | u16::from(b1)).wrapping_mul(2))
        } else if b0 == 0xC0 {
            let v = self.word(*c)?;
            *c = c.wrapping_add(2);
            Ok(v)
        } else {
            fail(Reason::InvalidOperand)
        }
    }

    /// Multitype (%), Figure 10.
    #[inline(always)]
    fn multi(&self, c: &mut u16) -> Res<u16> {
        let o = self.multi_operand(c)?;
        self.value(o)
    }

    /// Decodes a multitype operand without reading the memory it names.
    #[inline(always)]
    fn multi_operand(&self, c: &mut u16) -> Res<Operand> {
        let b0 = self.byte(*c)?;
        *c = c.wrapping_add(1);
        match b0 {
            0x00..=0x3F => Ok(Operand::Value(u16::from(b0))),
            0x40..=0x7F => Ok(Operand::Memory(u16::from(b0 & 0x3F) * 2)),
            0x86 | 0x87 => Ok(Operand::Value(1 << ((b0 & 1) + 6))),
            0x88..=0x8F => Ok(Operand::Value(1 << ((b0 & 7) + 8))),
            0xE0..=0xFF => Ok(Operand::Value(u16::from(b0 & 0x1F) + 65504)),
            0x90..=0xDF => {
                let b1 = self.byte(*c)?;
                *c = c.wrapping_add(1);
                match b0 {
                    0x90..=0x9F => Ok(Operand::Value(((u16::from(b0 & 0x0F) << 8) | u16::from(b1)) + 61440)),
                    0xA0..=0xBF => Ok(Operand::Value((u16::from(b0 & 0x1F) << 8) | u16::from(b1))),
                    _ => Ok(Operand::Memory((u16::from(b0 & 0x1F) << 8) | u16::from(b1))),
                }
            }
            0x80 | 0x81 => {
                let n = self.word(*c)?;
                *c = c.wrapping_add(2);
                if b0 == 0x80 {
                    Ok(Operand::Value(n))
                } else {
                    Ok(Operand::Memory(n))
                }
            }
            _ => fail(Reason::InvalidOperand), // 0x82..=0x85 are unassigned
        }
    }

    /// The value of a decoded operand now.
    #[inline(always)]
    fn value(&self, o: Operand) -> Res<u16> {
        match o {
            Operand::Value(v) => Ok(v),
            Operand::Memory(a) => self.word(a),
        }
    }

    /// Address (@): multitype plus the instruction's own address.
    #[inline(always)]
    fn address(&self, c: &mut u16, pc: u16) -> Res<u16> {
        Ok(pc.wrapping_add(self.multi(c)?))
    }

    /// Skips one operand's encoding without resolving it (for MULTILOAD's
    /// overlap check, RFC 4896 §3.2).
    fn skip_multi(&self, c: &mut u16) -> Res<()> {
        let b0 = self.byte(*c)?;
        let len: u16 = match b0 {
            0x00..=0x7F | 0x86..=0x8F | 0xE0..=0xFF => 1,
            0x90..=0xDF => 2,
            0x80 | 0x81 => 3,
            _ => return fail(Reason::InvalidOperand),
        };
        *c = c.wrapping_add(len);
        Ok(())
    }

    // ---- cycles (RFC 3320 §8.6) -----------------------------------------

    #[inline(always)]
    fn charge(&mut self, cost: u64) -> Res<()> {
        if cost > self.cycles_left {
            return fail(Reason::CyclesExhausted);
        }
        self.cycles_left -= cost;
        Ok(())
    }

    #[inline(always)]
    fn credit_bits(&mut self, bits: u64) {
        let cycles = bits * self.cpb;
        self.cycles_left += cycles;
        self.cycles_granted += cycles;
    }

    // ---- byte copying (RFC 3320 §8.4, RFC 4896 §4) -------------------------

    #[inline(always)]
    fn bounds(&self) -> Res<(u16, u16)> {
        // Both words lie in memory exactly when its byte 67 does; reading
        // them with one bounds check fails as reading each in turn does.
        let at = usize::from(BYTE_COPY_LEFT);
        match self.mem.get(at..at + 4) {
            Some(&[l0, l1, r0, r1]) => Ok((u16::from_be_bytes([l0, l1]), u16::from_be_bytes([r0, r1]))),
            _ => fail(Reason::Segfault),
        }
    }

    #[inline(always)]
    fn next(m: u16, bcl: u16, bcr: u16) -> u16 {
        let k = m.wrapping_add(1);
        if k == bcr {
            bcl
        } else {
            k
        }
    }

    /// Fills `out` from `start` under byte copying rules.
    fn read_bytes(&self, start: u16, bcl: u16, bcr: u16, out: &mut [u8]) -> Res<()> {
        let (s, n) = (usize::from(start), out.len());
        if s + n <= self.mem.len() && !(s < usize::from(bcr) && usize::from(bcr) < s + n) {
            out.copy_from_slice(&self.mem[s..s + n]);
            return Ok(());
        }
        let mut a = start;
        for b in out {
            *b = self.byte(a)?;
            a = Self::next(a, bcl, bcr);
        }
        Ok(())
    }

    /// Writes `data` starting at `start` under byte copying rules; returns
    /// the address the next byte would go to.
    fn write_string(&mut self, start: u16, data: &[u8], bcl: u16, bcr: u16) -> Res<u16> {
        let (s, n) = (usize::from(start), data.len());
        if s + n < self.mem.len().min(65536) && !(s < usize::from(bcr) && usize::from(bcr) <= s + n) {
            self.mem[s..s + n].copy_from_slice(data);
            self.wrote(s, n);
            return Ok((s + n) as u16);
        }
        self.write_string_wrapping(start, data, bcl, bcr)
    }

    /// [`Machine::write_string`] across bcr or the end of the address
    /// space: each run up to either is copied whole (a SHA-1 digest
    /// written across the buffer's end is 2 runs, not 20 bytes one by one).
    #[inline(never)]
    fn write_string_wrapping(&mut self, start: u16, mut data: &[u8], bcl: u16, bcr: u16) -> Res<u16> {
        let mut a = start;
        while !data.is_empty() {
            let at = usize::from(a);
            // Addresses at..=last follow one another (RFC 3320 §8.4: the
            // byte after bcr − 1 is bcl; after 65535, 0).
            let room = if a < bcr { usize::from(bcr) - at } else { 65536 - at };
            let n = room.min(data.len());
            let Some(run) = self.mem.get_mut(at..at + n) else {
                // Partly outside memory: byte by byte, up to the fault.
                for &b in data {
                    self.set_byte(a, b)?;
                    a = Self::next(a, bcl, bcr);
                }
                return Ok(a);
            };
            run.copy_from_slice(&data[..n]);
            self.wrote(at, n);
            data = &data[n..];
            let last = (at + n - 1) as u16;
            a = Self::next(last, bcl, bcr);
        }
        Ok(a)
    }

    /// Copies `len` bytes from `src` to `dst` one byte at a time, so a copy
    /// may read bytes it has just written (RFC 3320 §8.4). Returns the next
    /// destination address.
    #[inline(always)]
    fn copy(&mut self, src: u16, len: u16, dst: u16, bcl: u16, bcr: u16) -> Res<u16> {
        let (s, d) = (usize::from(src), usize::from(dst));
        // One byte (a literal): read at src, written at dst whatever the
        // bounds, and the next destination steps past dst.
        if len == 1 && s < self.mem.len() && d < self.mem.len() {
            self.mem[d] = self.mem[s];
            self.wrote(d, 1);
            return Ok(Self::next(dst, bcl, bcr));
        }
        self.copy_run(src, len, dst, bcl, bcr)
    }

    fn copy_run(&mut self, mut src: u16, len: u16, mut dst: u16, bcl: u16, bcr: u16) -> Res<u16> {
        let (s, d, n, r) = (usize::from(src), usize::from(dst), usize::from(len), usize::from(bcr));
        let mem_len = self.mem.len();
        // Fast path: both runs in memory and neither crosses bcr.
        if s + n <= mem_len && d + n < mem_len.min(65536) && !(s < r && r < s + n) && !(d < r && r <= d + n) {
            if s >= d || s + n <= d {
                self.mem.copy_within(s..s + n, d);
            } else {
                // The source runs into the destination ahead of it: byte by
                // byte repeats its first d − s bytes, as copies of that
                // many bytes at a time do.
                let step = d - s;
                let mut done = 0;
                while done < n {
                    let k = step.min(n - done);
                    self.mem.copy_within(s + done..s + done + k, d + done);
                    done += k;
                }
            }
            self.wrote(d, n);
            return Ok((d + n) as u16);
        }
        for _ in 0..len {
            let b = self.byte(src)?;
            self.set_byte(dst, b)?;
            src = Self::next(src, bcl, bcr);
            dst = Self::next(dst, bcl, bcr);
        }
        Ok(dst)
    }

    // ---- input (RFC 3320 §8.2, RFC 4896 §3.1) ------------------------------

    #[inline(always)]
    fn bit_order(&self) -> Res<u16> {
        let v = self.word(INPUT_BIT_ORDER)?;
        if v > 7 {
            return fail(Reason::BadInputBitorder);
        }
        Ok(v)
    }

    /// Discards a partly used byte if the P-bit changed since the last
    /// bit-wise input. (Before the first one no bits are held, so the
    /// initial `last_p` does not matter.)
    #[inline(always)]
    fn check_p(&mut self, p: bool) {
        if self.last_p != p {
            self.partial_left = 0;
        }
        self.last_p = p;
    }

    #[inline(always)]
    fn bits_available(&self) -> usize {
        usize::from(self.partial_left) + 8 * (self.input.len() - self.in_pos)
    }

    /// Takes `n` (≤ 16) bits, already known to be available. `lsb_first`
    /// is the F or H bit: whether the first bit is the value's LSB.
    ///
    /// RFC 3320 §8.2: P = 0 takes each byte's bits from its MSB, P = 1
    /// from its LSB. The bits left of a partly used byte are its low ones
    /// for P = 0 and its high ones for P = 1 (a change of P discards them).
    #[inline(always)]
    fn take_bits(&mut self, n: u32, p: bool, lsb_first: bool) -> u16 {
        if n == 0 {
            return 0;
        }
        let left = u32::from(self.partial_left);
        let mut have = left;
        let v = if p {
            // The first bit taken ends up as bit 0 of `w`.
            let mut w = u32::from(self.partial) >> (8 - left);
            while have < n {
                w |= u32::from(self.input[self.in_pos]) << have;
                self.in_pos += 1;
                have += 8;
            }
            let rest = have - n;
            self.partial = ((w >> n) << (8 - rest)) as u8;
            let v = w & ((1 << n) - 1);
            if lsb_first {
                v
            } else {
                reverse_low(v, n)
            }
        } else {
            // The first bit taken ends up as the MSB of `w`'s top n bits.
            let mut w = u32::from(self.partial) & ((1 << left) - 1);
            while have < n {
                w = (w << 8) | u32::from(self.input[self.in_pos]);
                self.in_pos += 1;
                have += 8;
            }
            let rest = have - n;
            self.partial = w as u8;
            let v = (w >> rest) & ((1 << n) - 1);
            if lsb_first {
                reverse_low(v, n)
            } else {
                v
            }
        };
        self.partial_left = (have - n) as u8;
        v as u16
    }

    /// The next 16 bits of input (fewer at its end, then padded with
    /// zeros) without taking them, in the order `take_bits` would give
    /// them one at a time: the first bit as bit 15 (`lsb_first` false),
    /// or as bit 0 (true).
    #[inline(always)]
    fn peek_bits(&self, p: bool, lsb_first: bool) -> u32 {
        let left = u32::from(self.partial_left);
        // The bits of the partial byte and the two bytes after it (at
        // least 16 bits), or as many of those as there are.
        let (b0, b1) = match self.input.get(self.in_pos..self.in_pos + 2) {
            Some(&[b0, b1]) => (b0, b1),
            _ => return self.peek_bits_at_end(p, lsb_first),
        };
        if p {
            // As take_bits: the first bit as bit 0.
            let w = (u32::from(self.partial) >> (8 - left)) | (u32::from(u16::from_le_bytes([b0, b1])) << left);
            let w = w & 0xFFFF;
            if lsb_first {
                w
            } else {
                reverse_low(w, 16)
            }
        } else {
            // As take_bits: the first bit as the MSB of `left + 16` bits.
            let w = ((u32::from(self.partial) & ((1 << left) - 1)) << 16) | u32::from(u16::from_be_bytes([b0, b1]));
            let w = (w >> left) & 0xFFFF;
            if lsb_first {
                reverse_low(w, 16)
            } else {
                w
            }
        }
    }

    /// [`Machine::peek_bits`] with fewer than two bytes of input after
    /// the partial one.
    #[cold]
    fn peek_bits_at_end(&self, p: bool, lsb_first: bool) -> u32 {
        let left = u32::from(self.partial_left);
        let rest = self.input.get(self.in_pos).map_or(0, |&b| u32::from(b));
        let have = left + if self.in_pos < self.input.len() { 8 } else { 0 };
        if p {
            let w = (u32::from(self.partial) >> (8 - left)) | (rest << left);
            if lsb_first {
                w
            } else {
                reverse_low(w, 16)
            }
        } else {
            let w = ((u32::from(self.partial) & ((1 << left) - 1)) << 8) | rest;
            // The `have` bits at the top of 16; without the byte, its 8
            // zero bits are shifted out first.
            let w = (w >> (left + 8 - have)) << (16 - have);
            if lsb_first {
                reverse_low(w, 16)
            } else {
                w
            }
        }
    }

    /// Takes `n` bits (at most 16, and at most those available) without
    /// reading them, leaving the input as `take_bits` would: the bits left
    /// of the last byte reached are its low ones for P = 0 and its high
    /// ones for P = 1, whichever end `partial` is read from.
    #[inline(always)]
    fn skip_bits(&mut self, n: u32) {
        let left = u32::from(self.partial_left);
        if n <= left {
            self.partial_left = (left - n) as u8;
            return;
        }
        let need = n - left;
        let bytes = need.div_ceil(8);
        self.in_pos += bytes as usize;
        self.partial = self.input[self.in_pos - 1];
        self.partial_left = (8 * bytes - need) as u8;
    }

    // ---- stack (RFC 3320 §8.3, RFC 4896 §3.4) ------------------------------

    fn push(&mut self, v: u16) -> Res<()> {
        let sl = self.word(STACK_LOCATION)?;
        let fill = self.word(sl)?;
        self.set_word(sl.wrapping_add(fill.wrapping_mul(2)).wrapping_add(2), v)?;
        // stack_fill is not re-read (RFC 4896 §3.4).
        self.set_word(sl, fill.wrapping_add(1))
    }

    fn pop(&mut self) -> Res<u16> {
        let sl = self.word(STACK_LOCATION)?;
        let fill = self.word(sl)?;
        if fill == 0 {
            return fail(Reason::StackUnderflow);
        }
        let fill = fill - 1;
        let v = self.word(sl.wrapping_add(fill.wrapping_mul(2)).wrapping_add(2))?;
        self.set_word(sl, fill)?;
        Ok(v)
    }

    #[inline(always)]
    fn jump_target(&self, a: u16) -> Res<u16> {
        if usize::from(a) >= self.mem.len() {
            return fail(Reason::Segfault);
        }
        Ok(a)
    }

    // ---- the instruction set (RFC 3320 §9) --------------------------------

    /// Runs the instruction at `pc`; returns the next pc. An instruction
    /// decoded earlier in the run, with its bytes unwritten since, runs from
    /// its [`Decoded`] form.
    #[inline(always)]
    fn step(&mut self, pc: u16) -> Res<u16> {
        let i = usize::from(pc) & (DECODED - 1);
        if self.decoded[i].key == cache_key(self.epoch, pc) {
            return self.exec(pc, i);
        }
        self.step_decoding(pc)
    }

    /// [`Machine::step`] for an instruction not in the decode cache: the
    /// ones a decoder loop repeats are decoded and kept; the others run
    /// from their bytes, each in a function of its own.
    #[inline(never)]
    fn step_decoding(&mut self, pc: u16) -> Res<u16> {
        let opcode = self.byte(pc)?;
        let c = pc.wrapping_add(1);
        if let Some(kinds) = operand_kinds(opcode) {
            let d = self.decode(pc, opcode, kinds)?;
            let i = self.keep_decoded(d);
            return self.exec(pc, i);
        }
        match opcode {
            op::DECOMPRESSION_FAILURE => {
                self.charge(1)?;
                fail(Reason::UserRequested)
            }
            op::SORT_ASCENDING | op::SORT_DESCENDING => self.sort_instruction(opcode, c),
            op::SHA_1 => self.sha1_instruction(c),
            op::MULTILOAD => self.multiload(pc, c),
            op::MEMSET => self.memset(c),
            op::SWITCH => self.switch(pc, c),
            op::CRC => self.crc_instruction(pc, c),
            op::INPUT_BYTES => self.input_bytes(pc, c),
            op::INPUT_HUFFMAN => self.input_huffman_decoding(pc, c),
            op::STATE_ACCESS => self.state_access(c),
            op::STATE_CREATE => self.state_create(c),
            op::STATE_FREE => self.state_free(c),
            op::END_MESSAGE => self.end_message(c),
            _ => fail(Reason::InvalidOpcode),
        }
    }

    /// Decodes the operands of the instruction at `pc`. A failure is the
    /// one decoding and running the operands in turn meets first (RFC 3320
    /// §8.5): the memory the operands before the failing one name is read
    /// first.
    #[inline(always)]
    fn decode(&self, pc: u16, opcode: u8, kinds: &[Kind]) -> Res<Decoded> {
        let mut d = Decoded { key: cache_key(self.key_epoch, pc), next: 0, opcode, ops: [Operand::Value(0); 5] };
        let mut c = pc.wrapping_add(1);
        for (i, kind) in kinds.iter().enumerate() {
            let o = match kind {
                Kind::Multi => self.multi_operand(&mut c),
                Kind::Reference => self.reference(&mut c).map(Operand::Memory),
            };
            match o {
                Ok(o) => d.ops[i] = o,
                Err(e) => {
                    for &o in &d.ops[..i] {
                        self.value(o)?;
                    }
                    return Err(e);
                }
            }
        }
        d.next = c;
        Ok(d)
    }

    /// Keeps `d` for the next runs of its instruction, unless its bytes
    /// wrap around the end of memory; returns the entry now holding it.
    fn keep_decoded(&mut self, d: Decoded) -> usize {
        let pc = d.pc();
        if d.next <= pc {
            self.decoded[UNKEPT] = Decoded { key: 0, ..d };
            return UNKEPT;
        }
        let i = usize::from(pc) & (DECODED - 1);
        self.decoded[i] = d;
        self.note_code(usize::from(pc), usize::from(d.next - pc));
        i
    }

    /// Widens the span of cached instructions to cover [at, at + len).
    fn note_code(&mut self, at: usize, len: usize) {
        let end = (self.code_lo + self.code_len).max(at + len);
        self.code_lo = if self.code_len == 0 { at } else { self.code_lo.min(at) };
        self.code_len = end - self.code_lo;
    }

    /// Runs the decoded instruction in entry `i`. Its memory operands are
    /// read now, in operand order, as decoding them would have. Each arm
    /// loads only its own operands from the entry.
    #[inline(always)]
    fn exec(&mut self, pc: u16, i: usize) -> Res<u16> {
        let (opcode, next) = (self.decoded[i].opcode, self.decoded[i].next);
        match opcode {
            op::AND
            | op::OR
            | op::LSHIFT
            | op::RSHIFT
            | op::ADD
            | op::SUBTRACT
            | op::MULTIPLY
            | op::DIVIDE
            | op::REMAINDER => {
                let o = self.decoded[i].ops;
                let a = o[0].address();
                let m = self.word(a)?;
                let n = self.value(o[1])?;
                self.charge(1)?;
                let r = match opcode {
                    op::AND => m & n,
                    op::OR => m | n,
                    op::LSHIFT => m.checked_shl(u32::from(n)).unwrap_or(0),
                    op::RSHIFT => m.checked_shr(u32::from(n)).unwrap_or(0),
                    op::ADD => m.wrapping_add(n),
                    op::SUBTRACT => m.wrapping_sub(n),
                    op::MULTIPLY => m.wrapping_mul(n),
                    op::DIVIDE => match m.checked_div(n) {
                        Some(v) => v,
                        None => return fail(Reason::DivByZero),
                    },
                    _ => match m.checked_rem(n) {
                        Some(v) => v,
                        None => return fail(Reason::DivByZero),
                    },
                };
                self.set_word(a, r)?;
                Ok(next)
            }
            op::NOT => {
                let o = self.decoded[i].ops;
                let a = o[0].address();
                let m = self.word(a)?;
                self.charge(1)?;
                self.set_word(a, !m)?;
                Ok(next)
            }
            op::LOAD => {
                let o = self.decoded[i].ops;
                let address = self.value(o[0])?;
                let value = self.value(o[1])?;
                self.charge(1)?;
                self.set_word(address, value)?;
                Ok(next)
            }
            op::PUSH => {
                let o = self.decoded[i].ops;
                let v = self.value(o[0])?;
                self.charge(1)?;
                self.push(v)?;
                Ok(next)
            }
            op::POP => {
                let o = self.decoded[i].ops;
                let address = self.value(o[0])?;
                self.charge(1)?;
                let v = self.pop()?;
                self.set_word(address, v)?;
                Ok(next)
            }
            op::COPY => {
                let o = self.decoded[i].ops;
                let position = self.value(o[0])?;
                let length = self.value(o[1])?;
                let destination = self.value(o[2])?;
                self.charge(1 + u64::from(length))?;
                let (bcl, bcr) = self.bounds()?;
                self.copy(position, length, destination, bcl, bcr)?;
                Ok(next)
            }
            op::COPY_LITERAL | op::COPY_OFFSET => {
                let o = self.decoded[i].ops;
                let first = self.value(o[0])?;
                let length = self.value(o[1])?;
                let dref = o[2].address();
                let destination = self.word(dref)?;
                self.charge(1 + u64::from(length))?;
                let (bcl, bcr) = self.bounds()?;
                let position =
                    if opcode == op::COPY_LITERAL { first } else { offset_back(destination, first, bcl, bcr) };
                let after = self.copy(position, length, destination, bcl, bcr)?;
                if length > 0 {
                    self.set_word(dref, after)?;
                }
                Ok(next)
            }
            op::JUMP => {
                let o = self.decoded[i].ops;
                let a = pc.wrapping_add(self.value(o[0])?);
                self.charge(1)?;
                self.jump_target(a)
            }
            op::COMPARE => {
                let o = self.decoded[i].ops;
                let v1 = self.value(o[0])?;
                let v2 = self.value(o[1])?;
                let a1 = pc.wrapping_add(self.value(o[2])?);
                let a2 = pc.wrapping_add(self.value(o[3])?);
                let a3 = pc.wrapping_add(self.value(o[4])?);
                self.charge(1)?;
                let t = match v1.cmp(&v2) {
                    std::cmp::Ordering::Less => a1,
                    std::cmp::Ordering::Equal => a2,
                    std::cmp::Ordering::Greater => a3,
                };
                self.jump_target(t)
            }
            op::CALL => {
                let o = self.decoded[i].ops;
                let a = pc.wrapping_add(self.value(o[0])?);
                self.charge(1)?;
                self.push(next)?;
                self.jump_target(a)
            }
            op::RETURN => {
                self.charge(1)?;
                let a = self.pop()?;
                self.jump_target(a)
            }
            op::INPUT_BITS => {
                let o = self.decoded[i].ops;
                let length = self.value(o[0])?;
                let destination = self.value(o[1])?;
                let a = pc.wrapping_add(self.value(o[2])?);
                self.charge(1)?;
                let order = self.bit_order()?;
                if length > 16 {
                    return fail(Reason::TooManyBitsRequested);
                }
                let p = order & 1 != 0;
                self.check_p(p);
                if self.bits_available() < usize::from(length) {
                    return self.jump_target(a);
                }
                let v = self.take_bits(u32::from(length), p, order & 4 != 0);
                self.set_word(destination, v)?;
                self.credit_bits(u64::from(length));
                Ok(next)
            }
            op::OUTPUT => {
                let o = self.decoded[i].ops;
                let start = self.value(o[0])?;
                let length = self.value(o[1])?;
                self.charge(1 + u64::from(length))?;
                if self.output.len() + usize::from(length) > MAX_OUTPUT {
                    return fail(Reason::OutputOverflow);
                }
                let (bcl, bcr) = self.bounds()?;
                read_string(self.mem, start, length, bcl, bcr, self.output)?;
                self.output_seen = true;
                Ok(next)
            }
            op::INPUT_HUFFMAN => self.input_huffman(pc, self.decoded[i].ops[0].address()),
            // Only the opcodes above are ever kept decoded.
            _ => fail(Reason::InternalError),
        }
    }

    #[inline(never)]
    fn sort_instruction(&mut self, opcode: u8, mut c: u16) -> Res<u16> {
        let start = self.multi(&mut c)?;
        let n = self.multi(&mut c)?;
        let k = self.multi(&mut c)?;
        let log2k = if k <= 1 { 0 } else { 16 - (k - 1).leading_zeros() as u64 };
        self.charge(1 + u64::from(k) * (log2k + u64::from(n)))?;
        self.sort(start, n, k, opcode == op::SORT_DESCENDING)?;
        Ok(c)
    }

    #[inline(never)]
    fn sha1_instruction(&mut self, mut c: u16) -> Res<u16> {
        let position = self.multi(&mut c)?;
        let length = self.multi(&mut c)?;
        let destination = self.multi(&mut c)?;
        self.charge(1 + u64::from(length))?;
        let (bcl, bcr) = self.bounds()?;
        // The digests of 0 and 1 bytes are looked up: each would cost a
        // SHA-1 block for 1 or 2 cycles.
        let digest = match length {
            0 => SHA1_OF_NOTHING,
            1 => sha1_of_byte(self.byte(position)?),
            _ => self.sha1_of(position, length, bcl, bcr)?,
        };
        self.write_string(destination, &digest, bcl, bcr)?;
        Ok(c)
    }

    /// SHA-1 of `length` bytes from `position` under byte copying rules:
    /// hashed where they lie if they do not cross bcr, else gathered.
    fn sha1_of(&mut self, position: u16, length: u16, bcl: u16, bcr: u16) -> Res<[u8; 20]> {
        let mut data = std::mem::take(&mut self.scratch);
        data.clear();
        let input = match contiguous_run(self.mem, position, length, bcr) {
            Some(run) => run,
            None => {
                read_string_wrapping(self.mem, position, length, bcl, bcr, &mut data)?;
                &data[..]
            }
        };
        // A digest costs a SHA-1 block (64 bytes) at least, for as
        // little as 3 cycles: the same short input again reuses it.
        let digest = match &self.last_digest {
            Some((last, n, digest)) if *n == input.len() && last[..*n] == *input => *digest,
            _ => {
                let digest: [u8; 20] = Sha1::digest(input).into();
                if input.len() <= SHA1_REUSED_INPUT {
                    let mut last = [0u8; SHA1_REUSED_INPUT];
                    last[..input.len()].copy_from_slice(input);
                    self.last_digest = Some((last, input.len(), digest));
                }
                digest
            }
        };
        self.scratch = data;
        Ok(digest)
    }

    #[inline(never)]
    fn multiload(&mut self, pc: u16, mut c: u16) -> Res<u16> {
        let address = self.multi(&mut c)?;
        let n = self.lit(&mut c)?;
        // Find the instruction's extent first, then load step by step
        // (RFC 3320 §9.2.2, RFC 4896 §3.2).
        let values_at = c;
        let mut end = c;
        for _ in 0..n {
            self.skip_multi(&mut end)?;
        }
        self.charge(1 + u64::from(n))?;
        let instr_len = u32::from(end.wrapping_sub(pc));
        let span = 2 * u32::from(n);
        // Writes cover [address, address + span) mod 2^16, the
        // instruction [pc, pc + instr_len) mod 2^16.
        let d = u32::from(pc.wrapping_sub(address));
        let e = u32::from(address.wrapping_sub(pc));
        if span > 0 && (d < span || e < instr_len) {
            return fail(Reason::MultiloadOverwritten);
        }
        let mut vc = values_at;
        for i in 0..n {
            let v = self.multi(&mut vc)?;
            self.set_word(address.wrapping_add(i.wrapping_mul(2)), v)?;
        }
        Ok(end)
    }

    #[inline(never)]
    fn memset(&mut self, mut c: u16) -> Res<u16> {
        let address = self.multi(&mut c)?;
        let length = self.multi(&mut c)?;
        let start = self.multi(&mut c)?;
        let offset = self.multi(&mut c)?;
        self.charge(1 + u64::from(length))?;
        let (bcl, bcr) = self.bounds()?;
        let mut a = address;
        let mut v = start as u8;
        for _ in 0..length {
            self.set_byte(a, v)?;
            v = v.wrapping_add(offset as u8);
            a = Self::next(a, bcl, bcr);
        }
        Ok(c)
    }

    #[inline(never)]
    fn switch(&mut self, pc: u16, mut c: u16) -> Res<u16> {
        let n = self.lit(&mut c)?;
        let j = self.multi(&mut c)?;
        // Decode every address operand (conceptual model, §8.5), but
        // keep only the chosen one.
        let mut target = None;
        for i in 0..n {
            let a = self.address(&mut c, pc)?;
            if i == j {
                target = Some(a);
            }
        }
        self.charge(1 + u64::from(n))?;
        match target {
            Some(t) => self.jump_target(t),
            None => fail(Reason::SwitchValueTooHigh),
        }
    }

    #[inline(never)]
    fn crc_instruction(&mut self, pc: u16, mut c: u16) -> Res<u16> {
        let value = self.multi(&mut c)?;
        let position = self.multi(&mut c)?;
        let length = self.multi(&mut c)?;
        let a = self.address(&mut c, pc)?;
        self.charge(1 + u64::from(length))?;
        let (bcl, bcr) = self.bounds()?;
        let mut data = std::mem::take(&mut self.scratch);
        data.clear();
        read_string(self.mem, position, length, bcl, bcr, &mut data)?;
        let crc = crc16_ppp(&data);
        self.scratch = data;
        if crc == value {
            Ok(c)
        } else {
            self.jump_target(a)
        }
    }

    #[inline(never)]
    fn input_bytes(&mut self, pc: u16, mut c: u16) -> Res<u16> {
        let length = self.multi(&mut c)?;
        let destination = self.multi(&mut c)?;
        let a = self.address(&mut c, pc)?;
        self.charge(1 + u64::from(length))?;
        // A partial byte is discarded even when the request fails
        // (RFC 4896 §3.1).
        self.partial_left = 0;
        let n = usize::from(length);
        if self.input.len() - self.in_pos < n {
            return self.jump_target(a);
        }
        let (bcl, bcr) = self.bounds()?;
        let input = self.input;
        let data = &input[self.in_pos..self.in_pos + n];
        self.write_string(destination, data, bcl, bcr)?;
        self.in_pos += n;
        self.credit_bits(8 * n as u64);
        Ok(c)
    }

    #[inline(never)]
    fn state_access(&mut self, mut c: u16) -> Res<u16> {
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
    fn upcoming_state_ids(&self, mut c: u16, bcl: u16, bcr: u16, upcoming: &mut Upcoming) {
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
    fn state_create(&mut self, mut c: u16) -> Res<u16> {
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
    fn state_free(&mut self, mut c: u16) -> Res<u16> {
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
    fn push_pending(&mut self, p: Pending) {
        if let Some(slot) = self.pending.get_mut(self.pending_len) {
            *slot = p;
            self.pending_len += 1;
        }
    }

    /// END-MESSAGE: on success the run stops with the outcome kept in
    /// `self.outcome`.
    #[inline(never)]
    fn end_message(&mut self, mut c: u16) -> Res<u16> {
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

    /// INPUT-HUFFMAN from its entry `slot` in `huffman`, if that still
    /// holds the instruction at `pc`: [`Machine::huffman_run`] reads the
    /// entry's sets in place.
    #[inline(always)]
    fn input_huffman(&mut self, pc: u16, slot: u16) -> Res<u16> {
        let slot = usize::from(slot) % HUFFMAN_CACHE;
        let e = &self.huffman[slot];
        if e.len == 0 || e.pc != pc {
            return self.input_huffman_decoding(pc, pc.wrapping_add(1));
        }
        let sets = CachedSets { slot, n: usize::from(e.n).min(HUFFMAN_CACHED_SETS) };
        let (destination, address, next) = (e.destination, e.address, pc.wrapping_add(e.len));
        self.huffman_run(sets, destination, address, pc, next)
    }

    /// INPUT-HUFFMAN decoded from its bytes, and kept for its next runs
    /// when it has at most [`HUFFMAN_CACHED_SETS`] sets.
    #[inline(never)]
    fn input_huffman_decoding(&mut self, pc: u16, mut c: u16) -> Res<u16> {
        // Every operand is decoded first (conceptual model of §8.5), the
        // memory it names read as it is decoded.
        let destination = self.multi_operand(&mut c)?;
        self.value(destination)?;
        let address = self.multi_operand(&mut c)?;
        self.value(address)?;
        let n = usize::from(self.lit(&mut c)?);
        if n > HUFFMAN_CACHED_SETS {
            let mut sets = std::mem::take(&mut self.huffman_sets);
            sets.clear();
            sets.resize(n, [Operand::Value(0); 4]);
            let r = self
                .decode_sets(&mut c, &mut sets)
                .and_then(|()| self.huffman_run(&sets[..], destination, address, pc, c));
            self.huffman_sets = sets;
            return r;
        }
        let mut entry = HuffmanEntry { pc, destination, address, n: n as u8, ..EMPTY_HUFFMAN };
        self.decode_sets(&mut c, &mut entry.sets[..n])?;
        if c > pc {
            entry.len = c - pc;
            let slot = self.huffman_next;
            self.huffman[slot] = entry;
            self.huffman_next = (slot + 1) % HUFFMAN_CACHE;
            let mut ops = [Operand::Value(0); 5];
            ops[0] = Operand::Value(slot as u16);
            self.keep_decoded(Decoded { key: cache_key(self.key_epoch, pc), next: c, opcode: op::INPUT_HUFFMAN, ops });
        }
        self.huffman_run(&entry.sets[..n], destination, address, pc, c)
    }

    /// Decodes operand sets of INPUT-HUFFMAN into `sets`, reading the
    /// memory each operand names as it is decoded.
    fn decode_sets(&self, c: &mut u16, sets: &mut [[Operand; 4]]) -> Res<()> {
        for o in sets.iter_mut().flatten() {
            *o = self.multi_operand(c)?;
            self.value(*o)?;
        }
        Ok(())
    }

    /// INPUT-HUFFMAN with its operands decoded (RFC 3320 §9.4.4): reads the
    /// bits of each set in turn until the code so far falls in a set's
    /// range. The one implementation of the instruction, for sets kept in
    /// the cache and sets decoded for one run alike (see [`HuffmanSets`]).
    ///
    /// Every operand was read when the instruction was decoded, in this
    /// run (a cached entry is kept only after that succeeded, and only
    /// until its bytes are written). Whether reading a word fails depends
    /// on nothing but its address and the size of memory, so no read here
    /// fails; and nothing is written before the result. So reading each
    /// operand only when the decoding needs it gives what reading them all
    /// first (RFC 3320 §8.5) does.
    #[inline(always)]
    fn huffman_run<S: HuffmanSets>(
        &mut self,
        sets: S,
        destination: Operand,
        address: Operand,
        pc: u16,
        next: u16,
    ) -> Res<u16> {
        let n = sets.sets(self).len();
        let mut total_bits: u32 = 0;
        for set in sets.sets(self) {
            total_bits += u32::from(self.value(set[0])?);
        }
        self.charge(1 + n as u64)?;
        if n == 0 {
            return Ok(next);
        }
        let order = self.bit_order()?;
        if total_bits > 16 {
            return fail(Reason::TooManyBitsRequested);
        }
        let p = order & 1 != 0;
        self.check_p(p);
        let lsb_first = order & 2 != 0;
        // The at most 16 bits the sets can take, read once; a set's bits
        // are taken from there, and from the input when the code is found
        // (or the input runs out: the bits of the sets before stay taken).
        let available = self.bits_available();
        let window = self.peek_bits(p, lsb_first);
        let mut h: u32 = 0;
        let mut consumed: u32 = 0;
        for i in 0..n {
            let bits = u32::from(self.value(sets.operand(self, i, 0))?);
            if available < (consumed + bits) as usize {
                self.skip_bits(consumed);
                self.credit_bits(u64::from(consumed));
                let a = pc.wrapping_add(self.value(address)?);
                return self.jump_target(a);
            }
            // H := H × 2^bits + k (RFC 3320 §9.4.4 step 3). With the
            // H-bit 0 the code is the bits taken so far, first bit most
            // significant: the window's top `consumed` bits.
            h = if lsb_first {
                (h << bits) | ((window >> consumed) & ((1 << bits) - 1))
            } else {
                window >> (16 - consumed - bits)
            };
            consumed += bits;
            let lower = self.value(sets.operand(self, i, 1))?;
            let upper = self.value(sets.operand(self, i, 2))?;
            if h >= u32::from(lower) && h <= u32::from(upper) {
                let uncompressed = self.value(sets.operand(self, i, 3))?;
                let v = (h as u16).wrapping_add(uncompressed).wrapping_sub(lower);
                let destination = self.value(destination)?;
                self.skip_bits(consumed);
                self.set_word(destination, v)?;
                self.credit_bits(u64::from(consumed));
                return Ok(next);
            }
        }
        fail(Reason::HuffmanNoMatch)
    }

    fn sort(&mut self, start: u16, n: u16, k: u16, descending: bool) -> Res<()> {
        if n == 0 || k == 0 {
            return Ok(());
        }
        let word_at = |list: u16, i: u16| start.wrapping_add(list.wrapping_mul(k).wrapping_add(i).wrapping_mul(2));
        let mut keys = Vec::with_capacity(usize::from(k));
        for i in 0..k {
            keys.push(self.word(word_at(0, i))?);
        }
        let mut perm: Vec<u16> = (0..k).collect();
        // Stable: equal words keep their original order (RFC 3320 §9.1.3).
        if descending {
            perm.sort_by_key(|&i| std::cmp::Reverse(keys[usize::from(i)]));
        } else {
            perm.sort_by_key(|&i| keys[usize::from(i)]);
        }
        let mut list = Vec::with_capacity(usize::from(k));
        for l in 0..n {
            list.clear();
            for i in 0..k {
                list.push(self.word(word_at(l, i))?);
            }
            for (i, &from) in perm.iter().enumerate() {
                self.set_word(word_at(l, i as u16), list[usize::from(from)])?;
            }
        }
        Ok(())
    }

    /// Snapshots state requests and feedback at END-MESSAGE.
    fn finish(&mut self, rfl: u16, rpl: u16) -> Res<Outcome> {
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
        Ok(Outcome { cycles: 0, output_seen: false, requests, requested_feedback, returned_parameters })
    }

    fn read_feedback_item(&self, at: u16) -> Res<Vec<u8>> {
        let b = self.byte(at)?;
        let len = if b & 0x80 == 0 { 1 } else { 1 + u16::from(b & 0x7F) };
        (0..len).map(|i| self.byte(at.wrapping_add(i))).collect()
    }
}

/// Each byte with its bits in reverse order.
const REVERSED: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).reverse_bits();
        i += 1;
    }
    t
};

/// `v` (< 2^n, 1 ≤ n ≤ 16) with its n bits in reverse order: two table
/// lookups, where `u32::reverse_bits` takes some fifteen instructions on
/// x86-64.
#[inline(always)]
fn reverse_low(v: u32, n: u32) -> u32 {
    let r = (u32::from(REVERSED[(v & 0xFF) as usize]) << 8) | u32::from(REVERSED[((v >> 8) & 0xFF) as usize]);
    r >> (16 - n)
}

/// The `len` bytes of `mem` from `start` as one slice, when the whole run
/// lies in memory and does not cross bcr (no byte copying rule applies).
#[inline(always)]
fn contiguous_run(mem: &[u8], start: u16, len: u16, bcr: u16) -> Option<&[u8]> {
    let (s, n, r) = (usize::from(start), usize::from(len), usize::from(bcr));
    (s + n <= mem.len() && !(s < r && r < s + n)).then(|| &mem[s..s + n])
}

/// Appends `len` bytes of `mem` from `start` to `out` under byte copying
/// rules (RFC 3320 §8.4).
#[inline(always)]
fn read_string(mem: &[u8], start: u16, len: u16, bcl: u16, bcr: u16, out: &mut Vec<u8>) -> Res<()> {
    match contiguous_run(mem, start, len, bcr) {
        Some(&[b]) => out.push(b),
        Some(run) => out.extend_from_slice(run),
        None => return read_string_wrapping(mem, start, len, bcl, bcr, out),
    }
    Ok(())
}

/// [`read_string`] into a buffer of its own, the bytes copied once.
fn read_shared(mem: &[u8], start: u16, len: u16, bcl: u16, bcr: u16) -> Res<Arc<[u8]>> {
    if let Some(run) = contiguous_run(mem, start, len, bcr) {
        return Ok(Arc::from(run));
    }
    let mut value = Vec::with_capacity(usize::from(len));
    read_string_wrapping(mem, start, len, bcl, bcr, &mut value)?;
    Ok(value.into())
}

/// [`read_string`] a byte at a time, wrapping at bcr (or failing outside
/// memory).
#[inline(never)]
fn read_string_wrapping(mem: &[u8], start: u16, len: u16, bcl: u16, bcr: u16, out: &mut Vec<u8>) -> Res<()> {
    let mut a = start;
    for _ in 0..len {
        match mem.get(usize::from(a)) {
            Some(&b) => out.push(b),
            None => return fail(Reason::Segfault),
        }
        a = Machine::next(a, bcl, bcr);
    }
    Ok(())
}

/// COPY-OFFSET's position: `offset` steps back from `dest`, wrapping from
/// byte_copy_left to byte_copy_right − 1 (RFC 3320 §9.2.6, RFC 4896 §4),
/// computed in constant time.
pub fn offset_back(dest: u16, offset: u16, bcl: u16, bcr: u16) -> u16 {
    let to_left = u32::from(dest.wrapping_sub(bcl));
    let offset = u32::from(offset);
    if offset <= to_left {
        return dest.wrapping_sub(offset as u16);
    }
    // At bcl after `to_left` steps; one more lands on bcr − 1, and from there
    // the walk cycles through [bcl, bcr) of `cycle` addresses.
    let r = offset - to_left - 1;
    let cycle = u32::from(bcr.wrapping_sub(1).wrapping_sub(bcl)) + 1;
    let idx = (cycle - 1 + cycle - (r % cycle)) % cycle;
    bcl.wrapping_add(idx as u16)
}

/// The 16-bit FCS of PPP (RFC 1662 §C.2) as the CRC instruction compares
/// it: the FCS register after the bytes, without the ones-complement PPP
/// applies before transmission (RFC 4465 §2.9 expects 0x62cb this way).
pub fn crc16_ppp(data: &[u8]) -> u16 {
    static TABLE: std::sync::OnceLock<[u16; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u16; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut v = i as u16;
            for _ in 0..8 {
                v = if v & 1 != 0 { (v >> 1) ^ 0x8408 } else { v >> 1 };
            }
            *e = v;
        }
        t
    });
    let mut fcs: u16 = 0xFFFF;
    for &b in data {
        fcs = (fcs >> 8) ^ table[usize::from((fcs ^ u16::from(b)) & 0xFF)];
    }
    fcs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_offset_back(dest: u16, offset: u16, bcl: u16, bcr: u16) -> u16 {
        let mut cur = dest;
        for _ in 0..offset {
            cur = if cur == bcl { bcr.wrapping_sub(1) } else { cur.wrapping_sub(1) };
        }
        cur
    }

    #[test]
    fn offset_back_matches_the_walk() {
        let cases = [
            (100u16, 5u16, 90u16, 110u16),
            (100, 10, 90, 110),
            (100, 11, 90, 110),
            (100, 45, 90, 110),
            (95, 300, 90, 110),
            (50, 70, 90, 110),
            (5, 20, 0, 0),
            (1000, 3000, 200, 100),
            (1000, 65535, 1000, 1001),
            (0, 1, 0, 0),
        ];
        for (d, o, l, r) in cases {
            assert_eq!(offset_back(d, o, l, r), naive_offset_back(d, o, l, r), "{d} {o} {l} {r}");
        }
    }

    /// RFC 3320 §8.2 bit by bit: what take_bits does a byte at a time.
    fn naive_take_bits(input: &[u8], at: &mut usize, n: u32, p: bool, lsb_first: bool) -> u16 {
        let mut v = 0u32;
        for i in 0..n {
            let byte = input[*at / 8];
            let k = (*at % 8) as u32;
            let bit = u32::from(if p { byte >> k } else { byte >> (7 - k) }) & 1;
            *at += 1;
            v = if lsb_first { v | bit << i } else { (v << 1) | bit };
        }
        v as u16
    }

    #[test]
    fn take_bits_matches_the_bit_by_bit_reading() {
        let input: Vec<u8> = (0..64u32).map(|i| (i.wrapping_mul(0x9E37_79B9) >> 13) as u8).collect();
        let (mut mem, states, mut out) = (vec![0u8; 64], StateHandler::new(0), Vec::new());
        for p in [false, true] {
            for lsb_first in [false, true] {
                let mut cache = DecodeCache::default();
                let mut m = Machine::new(&mut mem, &mut cache, &states, &input, &mut out, 16, 0);
                let mut at = 0;
                // Widths 1..=16 in a pattern that crosses byte boundaries
                // at every offset.
                for n in (0..40u32).map(|i| 1 + (i * 7) % 16) {
                    let want = naive_take_bits(&input, &mut at, n, p, lsb_first);
                    assert_eq!(m.take_bits(n, p, lsb_first), want, "n {n} p {p} lsb {lsb_first} at {at}");
                }
            }
        }
    }

    /// INPUT-HUFFMAN's reading (peek_bits, then skip_bits) gives the bits
    /// take_bits gives and leaves the input as it does: after every number
    /// of bits taken from a 3-byte input (so with every partial byte, and
    /// 2, 1 or 0 whole bytes left), against the bit-by-bit reading.
    #[test]
    fn peek_and_skip_match_take_bits() {
        let input = [0xB5u8, 0x3C, 0xE1];
        let (mut mem, states, mut out) = (vec![0u8; 64], StateHandler::new(0), Vec::new());
        for p in [false, true] {
            for lsb_first in [false, true] {
                for taken in 0..=24u32 {
                    let mut cache = DecodeCache::default();
                    let mut m = Machine::new(&mut mem, &mut cache, &states, &input, &mut out, 16, 0);
                    let (mut left, mut at) = (taken, taken as usize);
                    while left > 0 {
                        let k = left.min(5);
                        m.take_bits(k, p, lsb_first);
                        left -= k;
                    }
                    let window = m.peek_bits(p, lsb_first);
                    let n = (24 - taken).min(16);
                    for k in 0..=n {
                        let want = naive_take_bits(&input, &mut at.clone(), k, p, lsb_first);
                        let got = if lsb_first { window & ((1 << k) - 1) } else { window >> (16 - k) };
                        assert_eq!(got, u32::from(want), "p {p} lsb {lsb_first} taken {taken} k {k}");
                    }
                    m.skip_bits(n);
                    at += n as usize;
                    let rest = 24 - taken - n;
                    let want = naive_take_bits(&input, &mut at, rest, p, lsb_first);
                    assert_eq!(m.take_bits(rest, p, lsb_first), want, "p {p} lsb {lsb_first} taken {taken}");
                }
            }
        }
    }

    #[test]
    fn digests_of_no_byte_and_of_one_byte_are_sha1s() {
        assert_eq!(SHA1_OF_NOTHING, <[u8; 20]>::from(Sha1::digest([])));
        for b in 0..=255u8 {
            assert_eq!(sha1_of_byte(b), <[u8; 20]>::from(Sha1::digest([b])), "byte {b}");
        }
    }

    /// Writes a byte at a time under byte copying rules (RFC 3320 §8.4).
    fn naive_write(mem: &mut [u8], start: u16, data: &[u8], bcl: u16, bcr: u16) -> Option<u16> {
        let mut a = start;
        for &b in data {
            *mem.get_mut(usize::from(a))? = b;
            a = Machine::next(a, bcl, bcr);
        }
        Some(a)
    }

    #[test]
    fn a_string_written_across_the_buffer_end_matches_the_byte_walk() {
        let states = StateHandler::new(0);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = |n: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % u64::from(n)) as u16
        };
        let near = |r: u16, k: u16| r.wrapping_add(k).wrapping_sub(12);
        let mut wrapped = 0;
        for round in 0..4000 {
            let size = if round % 3 == 0 { 65536 } else { 40000 };
            let bcr = rand(65536);
            let bcl = if round % 5 == 0 { bcr } else { bcr.wrapping_sub(1 + rand(40)) };
            let start = match round % 4 {
                0 => near(bcr, rand(24)),
                1 => near(0, rand(24)),
                2 => near(size as u16, rand(24)),
                _ => rand(65536),
            };
            let data: Vec<u8> = (0..rand(70)).map(|i| i as u8 ^ 0x5a).collect();
            let mut want = vec![7u8; size];
            let want_end = naive_write(&mut want, start, &data, bcl, bcr);
            let mut mem = vec![7u8; size];
            let (input, mut out, mut cache) = ([], Vec::new(), DecodeCache::default());
            let mut m = Machine::new(&mut mem, &mut cache, &states, &input, &mut out, 16, 0);
            let got_end = m.write_string(start, &data, bcl, bcr).ok();
            assert_eq!(got_end, want_end, "start {start} len {} bcl {bcl} bcr {bcr} size {size}", data.len());
            assert!(mem == want, "start {start} len {} bcl {bcl} bcr {bcr} size {size}", data.len());
            wrapped += usize::from(want_end.is_some_and(|e| e != start.wrapping_add(data.len() as u16)));
        }
        // The cases that wrap are many, not a few by chance.
        assert!(wrapped > 150, "{wrapped}");
    }

    #[test]
    fn crc_of_check_string() {
        // RFC 1662's transmitted FCS-16 of "123456789" is 0x906E, the
        // complement of the register value.
        assert_eq!(crc16_ppp(b"123456789"), !0x906E);
    }
}
