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

mod bits;
mod buffer;
mod decode;
mod decoded;
mod huffman;
mod memory;
mod native;
mod operand;
mod recognised;
mod state_requests;
mod stop;

use crate::error::{Failure, Reason};
pub use crate::feedback::{RequestedFeedback, ReturnedParameters, MAX_ANNOUNCED_STATES};
use crate::lookup_memo::{LookupMemo, Upcoming};
use crate::state::{LookupError, StateHandler, UnpackCache};

use buffer::{contiguous_run, next, read_string, read_string_wrapping};
use operand::{cache_key, next_epoch, operand_kinds, Decoded, Operand, DECODED};
use recognised::{Recognised, NATIVE, NATIVE_SLOTS};
use stop::{fail, Res, Stop};

pub use buffer::offset_back;
pub use operand::DecodeCache;
pub use recognised::NativeMemo;

pub mod op;

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
    /// state_address: where a STATE-ACCESS of the item puts its value
    /// (RFC 3320 §3.3.3).
    pub address: u16,
    /// state_instruction: where execution continues after a STATE-ACCESS
    /// of the item; 0 to continue after it (RFC 3320 §9.4.5).
    pub instruction: u16,
    /// minimum_access_length: the fewest identifier bytes that reach the
    /// item, 6..=20 (RFC 3320 §9.4.6).
    pub min_access_len: u16,
    /// state_retention_priority: lower is freed first, below 65535
    /// (RFC 3320 §6.2).
    pub priority: u16,
    /// Shared with the state item made from it: the bytes are copied out
    /// of UDVM memory once.
    pub value: Arc<[u8]>,
}

/// State requests in the order the bytecode made them (RFC 3320 §9.4.9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateRequest {
    /// A STATE-CREATE or END-MESSAGE creation request (RFC 3320 §9.4.6).
    Create(CreateRequest),
    /// Partial identifier of the item to free (6–20 bytes).
    Free(Vec<u8>),
}

/// What a successful run hands to the dispatcher at END-MESSAGE.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    /// UDVM cycles used (RFC 3320 §8.6).
    pub cycles: u64,
    /// Whether OUTPUT ran at all (a 0-byte message differs from no message,
    /// RFC 3320 §9.4.8).
    pub output_seen: bool,
    /// State creation and free requests, at most four of each (RFC 3320
    /// §9.4.6, §9.4.7).
    pub requests: Vec<StateRequest>,
    /// None when requested_feedback_location was 0 (RFC 4896 §9.2: keep the
    /// earlier feedback).
    pub requested_feedback: Option<RequestedFeedback>,
    /// The returned parameters END-MESSAGE points at (RFC 3320 Figure 13);
    /// None when returned_parameters_location was 0.
    pub returned_parameters: Option<ReturnedParameters>,
    /// Tokens a native decoder ran in place of the UDVM (see
    /// [`Machine::without_native`]); everything else is the same either
    /// way.
    pub native_tokens: u64,
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
    /// Whether token loops are recognised and run natively
    /// ([`Machine::without_native`]).
    native_on: bool,
    /// The token loops recognised in this run, and the slot the next one
    /// takes.
    natives: [Option<Recognised>; NATIVE_SLOTS],
    native_next: usize,
    native_tokens: u64,
    /// Recognitions tried in this run (native.rs's `MAX_RECOGNITIONS`).
    native_recognitions: u8,
    /// Loops recognised in earlier messages ([`Machine::with_native_memo`]).
    native_memo: Option<&'a mut NativeMemo>,
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
            native_on: true,
            natives: [None; NATIVE_SLOTS],
            native_next: 0,
            native_tokens: 0,
            native_recognitions: 0,
            native_memo: None,
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

    /// Runs every instruction in the UDVM: no token loop is recognised
    /// and run natively (see `udvm/native.rs`). The same in every
    /// observable way (output, failure, cycles, state requests, memory),
    /// and slower: the reference the native decoders are held to.
    pub fn without_native(mut self) -> Machine<'a> {
        self.native_on = false;
        self
    }

    /// Finds loops recognised in earlier runs in `memo` (by their bytes)
    /// and keeps the ones this run recognises there.
    pub fn with_native_memo(mut self, memo: &'a mut NativeMemo) -> Machine<'a> {
        self.native_memo = Some(memo);
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
                outcome.native_tokens = self.native_tokens;
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
        // A token loop starts with the input instruction of its first
        // token.
        if self.native_on && (opcode == op::INPUT_HUFFMAN || opcode == op::INPUT_BITS) {
            if let Some(i) = self.recognise_native(pc, opcode) {
                return self.exec(pc, i);
            }
        }
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

    /// Runs the decoded instruction in entry `i`. Its memory operands are
    /// read now, in operand order, as decoding them would have. Each arm
    /// loads only its own operands from the entry; the arms' bodies are in
    /// `udvm/decoded.rs`, inlined here so that the dispatch stays one
    /// jump table.
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
            | op::REMAINDER => self.exec_arithmetic(opcode, i, next),
            op::NOT => self.exec_not(i, next),
            op::LOAD => self.exec_load(i, next),
            op::PUSH => self.exec_push(i, next),
            op::POP => self.exec_pop(i, next),
            op::COPY => self.exec_copy(i, next),
            op::COPY_LITERAL | op::COPY_OFFSET => self.exec_copy_literal_or_offset(opcode, i, next),
            op::JUMP => self.exec_jump(pc, i),
            op::COMPARE => self.exec_compare(pc, i),
            op::CALL => self.exec_call(pc, i, next),
            op::RETURN => {
                self.charge(1)?;
                let a = self.pop()?;
                self.jump_target(a)
            }
            op::INPUT_BITS => self.exec_input_bits(pc, i, next),
            op::OUTPUT => self.exec_output(i, next),
            op::INPUT_HUFFMAN => self.input_huffman(pc, self.decoded[i].ops[0].address()),
            NATIVE => self.exec_native(pc, i),
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
            a = next(a, bcl, bcr);
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
            a = next(a, bcl, bcr);
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
