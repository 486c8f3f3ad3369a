//! Native decoders for recognised token loops, beside the UDVM.
//!
//! Nearly every cycle of a SigComp message is spent in its bytecode's
//! token loop: read a token, copy a literal or a match into the circular
//! buffer, output it, jump back. When the UDVM first reaches an
//! INPUT-HUFFMAN or INPUT-BITS, it checks whether the instructions from
//! there are one of the loops below, operand by operand as it would
//! decode them ([`pattern`]). A loop is recognised by its bytes, whoever
//! sent them; the sender is not trusted to say what its bytecode is.
//!
//! * sigkit's LZSS, LZ77 and Deflate token loops (the `@tokens` fragments
//!   of sigcomp-compress's `asm/`), whatever the mechanism program around
//!   them: [`lzss`], [`lz77`], [`deflate`].
//! * Open SigComp's Deflate token loop, whose tables sit in UDVM memory:
//!   [`osc_deflate`].
//!
//! A recognised loop runs natively one whole token at a time, from the
//! loop's first instruction back to it, and leaves the machine exactly as
//! the UDVM's run of that token would: the same memory words written (the
//! scratch words included), the same bits taken, the same output, and
//! the same cycles charged and earned (RFC 3320 §8.6). Everything outside
//! the loop (the mechanism program, STATE-ACCESS, STATE-CREATE,
//! END-MESSAGE) is the UDVM's own, so the state requests and feedback
//! follow from the same memory.
//!
//! A token that would do anything else (the input ends within it, a code
//! matches no Huffman interval, the output would pass its limit, the
//! cycles would run out) is not started natively: the bit reader goes
//! back to the token's start and the UDVM runs the token itself, meeting
//! the end of the message or the failure (and its NACK reason) at the
//! instruction where it always would. On entry the native decoder checks
//! what it relies on, each time: the loop's own bytes, the words it reads
//! as constants (INPUT-HUFFMAN's intervals, Open SigComp's tables) and the
//! registers it reads lie outside everything the loop writes (its scratch
//! words, `decompressed_pointer` and the circular buffer, with
//! `decompressed_pointer` inside the buffer). Then no token can rewrite
//! the loop or what it reads, and the decode cache, which any write into
//! the loop's bytes empties, holds the recognition for as long as it
//! holds.
//!
//! The UDVM stays the reference: the `native` fuzz target and
//! `tests/native.rs` run both on the same messages and compare every
//! result.

use super::operand::{cache_key, Decoded, Operand};
use super::recognised::{DistanceCode, Kind, Lzss, OscDeflate};
use super::stop::Res;
use super::*;

mod deflate;
mod lz77;
mod lzss;
mod osc_deflate;
mod pattern;

/// Recognitions a run may try, at most: a message's bytecode reaches a
/// handful of input instructions; one that rewrites its code to make the
/// UDVM look again at every turn of a loop runs without native decoders
/// once past this, so that looking costs a message a few microseconds at
/// most, whatever its cycles.
const MAX_RECOGNITIONS: u8 = 16;

/// The address of sigkit's and Open SigComp's first scratch word,
/// `index` (RFC 3320 §7.2 leaves 32..64 to the bytecode).
const INDEX: u16 = 32;
/// `decompressed_pointer`, the word after the input bit order (RFC 3320
/// §8.1) in the mechanism programs that recognised loops come from: the
/// destination COPY-LITERAL and COPY-OFFSET advance.
const DECOMPRESSED_POINTER: u16 = 70;

/// What one entry into a loop may rely on, checked by [`Machine::window`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    bcl: u16,
    bcr: u16,
    /// The input bit order register (RFC 3320 §8.2), at most 7.
    order: u16,
}

impl Window {
    /// The P-bit: bytes are read from their least significant bit.
    fn p(&self) -> bool {
        self.order & 1 != 0
    }

    /// The H-bit: Huffman codes arrive least significant bit first.
    fn h(&self) -> bool {
        self.order & 2 != 0
    }

    /// The F-bit: INPUT-BITS values arrive least significant bit first.
    fn f(&self) -> bool {
        self.order & 4 != 0
    }
}

/// Where the bit reader stood before a token: the token is undone by
/// going back here.
#[derive(Clone, Copy)]
struct ReaderMark {
    in_pos: usize,
    partial: u8,
    partial_left: u8,
    last_p: bool,
}

/// One token's cycles, charged and earned in the order the UDVM's
/// instructions would (RFC 3320 §8.6): each instruction is charged before
/// it acts, and the bits it reads earn cycles after. Applied to the
/// machine only when the whole token is.
#[derive(Clone, Copy)]
struct Cycles {
    left: u64,
    earned: u64,
    cpb: u64,
}

impl Cycles {
    fn of(m: &Machine<'_>) -> Cycles {
        Cycles { left: m.cycles_left, earned: 0, cpb: m.cpb }
    }

    /// Charges `cost`; None where the UDVM would fail CYCLES_EXHAUSTED.
    #[inline(always)]
    fn charge(&mut self, cost: u64) -> Option<()> {
        self.left = self.left.checked_sub(cost)?;
        Some(())
    }

    #[inline(always)]
    fn earn_bits(&mut self, bits: u64) {
        let c = bits * self.cpb;
        self.left += c;
        self.earned += c;
    }
}

/// A literal's branch, back to the loop's `head`: OUTPUT (index + 1, 1),
/// COPY-LITERAL (index + 1, 1, $decompressed_pointer), JUMP (head).
fn literal_branch(p: &mut pattern::Pattern<'_, '_>, head: u16) -> Option<()> {
    p.op(op::OUTPUT)?;
    p.value(INDEX + 1)?;
    p.value(1)?;
    p.op(op::COPY_LITERAL)?;
    p.value(INDEX + 1)?;
    p.value(1)?;
    p.reference(DECOMPRESSED_POINTER)?;
    p.op(op::JUMP)?;
    p.target_is(head)
}

/// The COMPARE after a Deflate symbol is read (RFC 1951 §3.2.5: below the
/// end-of-block symbol `end_of_block` a literal, at it the end, above it a
/// length), then the literal's branch: COMPARE ($index, end_of_block,
/// literal, end_of_message, length), OUTPUT, COPY-LITERAL, JUMP (head);
/// the length branch follows.
fn symbol_branches(p: &mut pattern::Pattern<'_, '_>, end_of_block: u16, end_of_message: u16, head: u16) -> Option<()> {
    p.op(op::COMPARE)?;
    p.memory(INDEX)?;
    p.value(end_of_block)?;
    let literal = p.target()?;
    p.target_is(end_of_message)?;
    let length = p.target()?;
    p.lands(literal)?;
    literal_branch(p, head)?;
    p.lands(length)
}

/// A match's last four instructions, back to the loop's `head`:
/// LOAD (start, $decompressed_pointer), COPY-OFFSET ($offset, $length,
/// $decompressed_pointer), OUTPUT ($start, $length), JUMP (head).
fn copy_branch(p: &mut pattern::Pattern<'_, '_>, start: u16, offset: u16, length: u16, head: u16) -> Option<()> {
    p.op(op::LOAD)?;
    p.value(start)?;
    p.memory(DECOMPRESSED_POINTER)?;
    p.op(op::COPY_OFFSET)?;
    p.memory(offset)?;
    p.memory(length)?;
    p.reference(DECOMPRESSED_POINTER)?;
    p.op(op::OUTPUT)?;
    p.memory(start)?;
    p.memory(length)?;
    p.op(op::JUMP)?;
    p.target_is(head)
}

/// A match: copy `length` bytes from `offset` back, at the pointer `dp`.
#[derive(Clone, Copy)]
struct Match {
    dp: u16,
    offset: u16,
    length: u16,
}

/// Whether [a0, a1) and [b0, b1) share an address.
fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.1 && b.0 < a.1
}

impl Machine<'_> {
    /// Tries to recognise a token loop starting at `pc` (its opcode
    /// `opcode`); keeps it in the decode cache and returns its entry.
    #[inline(never)]
    pub(super) fn recognise_native(&mut self, pc: u16, opcode: u8) -> Option<usize> {
        if self.native_recognitions == MAX_RECOGNITIONS {
            self.native_on = false;
            return None;
        }
        self.native_recognitions += 1;
        let known = self.native_memo.as_deref().and_then(|m| m.find(self.mem, pc));
        let r = match known {
            Some(r) => r,
            None => {
                let (kind, end) = match opcode {
                    op::INPUT_HUFFMAN => self
                        .recognise_lzss(pc)
                        .map(|(l, end)| (Kind::Lzss(l), end))
                        .or_else(|| self.recognise_deflate(pc).map(|end| (Kind::Deflate, end)))
                        .or_else(|| self.recognise_osc_deflate(pc).map(|(o, end)| (Kind::OscDeflate(o), end)))?,
                    op::INPUT_BITS => (Kind::Lz77, self.recognise_lz77(pc)?),
                    _ => return None,
                };
                let r = Recognised { head: pc, end, kind };
                if let Some(memo) = self.native_memo.as_deref_mut() {
                    memo.keep(self.mem, r);
                }
                r
            }
        };
        let (end, slot) = (r.end, self.native_next);
        self.native_next = (slot + 1) % NATIVE_SLOTS;
        self.natives[slot] = Some(r);
        let mut ops = [Operand::Value(0); 5];
        ops[0] = Operand::Value(slot as u16);
        // `next` spans the whole loop, so that a write into any of its
        // bytes empties the cache (Machine::wrote).
        Some(self.keep_decoded(Decoded { key: cache_key(self.key_epoch, pc), next: end, opcode: NATIVE, ops }))
    }

    /// Runs the recognised loop kept in entry `i` token by token, then the
    /// instruction at `pc` as the UDVM does (the token the native decoder
    /// did not take).
    ///
    /// A loop that takes no token natively (what it relies on does not
    /// hold) is left to the UDVM for the rest of the run: the entry then
    /// keeps the instruction's own decoded form, so a message that
    /// breaks the native decoder's assumptions runs at the UDVM's speed,
    /// never below it. After tokens taken natively the entry is kept: the
    /// token the decoder stopped at ends the loop in the UDVM (the end of
    /// the input, a failure), so it is rarely met again.
    #[inline(never)]
    pub(super) fn exec_native(&mut self, pc: u16, i: usize) -> Res<u16> {
        let entry = self.decoded[i];
        let slot = usize::from(entry.ops[0].address()) % NATIVE_SLOTS;
        let Some(r) = self.natives[slot] else { return fail(Reason::InternalError) };
        let before = self.native_tokens;
        match r.kind {
            Kind::Lzss(l) => self.lzss_tokens(&r, &l)?,
            Kind::Lz77 => self.lz77_tokens(&r)?,
            Kind::Deflate => self.deflate_tokens(&r)?,
            Kind::OscDeflate(o) => self.osc_deflate_tokens(&r, &o)?,
        }
        let took = self.native_tokens > before;
        let next = if r.head_opcode() == op::INPUT_HUFFMAN {
            self.input_huffman_decoding(pc, pc.wrapping_add(1))
        } else {
            self.step_keeping(pc)
        };
        // INPUT-HUFFMAN and INPUT-BITS keep themselves in the entry; the
        // loop goes back there unless it took no token or the instruction
        // wrote into cached code.
        if took && entry.key != 0 && entry.key == cache_key(self.key_epoch, pc) {
            self.decoded[i] = entry;
        }
        next
    }

    /// Runs the instruction at `pc` from its bytes, keeping it decoded
    /// (one of the opcodes [`operand_kinds`] lists).
    fn step_keeping(&mut self, pc: u16) -> Res<u16> {
        let opcode = self.byte(pc)?;
        let Some(kinds) = operand_kinds(opcode) else { return fail(Reason::InternalError) };
        let d = self.decode(pc, opcode, kinds)?;
        let i = self.keep_decoded(d);
        self.exec(pc, i)
    }

    /// What an entry into `r` relies on (module documentation): None when
    /// any of it does not hold, and the UDVM runs the loop instead.
    /// `scratch_end` ends the scratch words the loop writes from `index`;
    /// `read` lists the other spans it reads as constants.
    fn window(&self, r: &Recognised, scratch_end: u16, read: &[(u16, u16)]) -> Option<Window> {
        let (bcl, bcr) = self.bounds().ok()?;
        let order = self.bit_order().ok()?;
        let dp = self.word(DECOMPRESSED_POINTER).ok()?;
        let (l, h, m) = (usize::from(bcl), usize::from(bcr), self.mem.len());
        if !(l < h && h <= m && (l..h).contains(&usize::from(dp))) {
            return None;
        }
        let scratch = (usize::from(INDEX), usize::from(scratch_end));
        let pointer = (usize::from(DECOMPRESSED_POINTER), usize::from(DECOMPRESSED_POINTER) + 2);
        let buffer = (l, h);
        // The registers every instruction reads: byte_copy_left/right and
        // input_bit_order.
        let registers = (usize::from(BYTE_COPY_LEFT), usize::from(INPUT_BIT_ORDER) + 2);
        let code = (usize::from(r.head), usize::from(r.end));
        let read_only = read.iter().map(|&(a, n)| (usize::from(a), usize::from(a) + usize::from(n)));
        for span in read_only.chain([registers, code]) {
            if span.1 > m || overlaps(span, scratch) || overlaps(span, pointer) || overlaps(span, buffer) {
                return None;
            }
        }
        if overlaps(buffer, scratch) || overlaps(buffer, pointer) {
            return None;
        }
        Some(Window { bcl, bcr, order })
    }

    fn mark(&self) -> ReaderMark {
        ReaderMark { in_pos: self.in_pos, partial: self.partial, partial_left: self.partial_left, last_p: self.last_p }
    }

    /// Undoes a token: the bits it took are there again.
    #[cold]
    fn rewind(&mut self, m: ReaderMark) {
        self.in_pos = m.in_pos;
        self.partial = m.partial;
        self.partial_left = m.partial_left;
        self.last_p = m.last_p;
    }

    /// Applies a whole token's cycles.
    #[inline(always)]
    fn commit_cycles(&mut self, c: Cycles) {
        self.cycles_left = c.left;
        self.cycles_granted += c.earned;
    }

    /// INPUT-HUFFMAN's reading of one code with `sets` (bits, lower,
    /// upper, uncompressed), as [`Machine::huffman_run`] reads it: the
    /// value and the bits taken, or None where the UDVM would jump to the
    /// instruction's address (the input ends) or fail (no interval
    /// matches). The sets' bits add up to at most 16 (checked on entry).
    #[inline(always)]
    fn native_huffman(&mut self, sets: &[[u16; 4]], w: &Window, c: &mut Cycles) -> Option<u16> {
        c.charge(1 + sets.len() as u64)?;
        let p = w.p();
        self.check_p(p);
        let lsb_first = w.h();
        let available = self.bits_available();
        let window = self.peek_bits(p, lsb_first);
        let mut h: u32 = 0;
        let mut consumed: u32 = 0;
        for &[bits, lower, upper, uncompressed] in sets {
            let bits = u32::from(bits);
            if available < (consumed + bits) as usize {
                return None;
            }
            h = if lsb_first {
                (h << bits) | ((window >> consumed) & ((1 << bits) - 1))
            } else {
                window >> (16 - consumed - bits)
            };
            consumed += bits;
            if h >= u32::from(lower) && h <= u32::from(upper) {
                self.skip_bits(consumed);
                c.earn_bits(u64::from(consumed));
                return Some((h as u16).wrapping_add(uncompressed).wrapping_sub(lower));
            }
        }
        None
    }

    /// INPUT-BITS of `length` (at most 16) bits: None where the input
    /// ends (the UDVM jumps to the instruction's address).
    #[inline(always)]
    fn native_bits(&mut self, length: u16, w: &Window, c: &mut Cycles) -> Option<u16> {
        c.charge(1)?;
        let p = w.p();
        self.check_p(p);
        if self.bits_available() < usize::from(length) {
            return None;
        }
        let v = self.take_bits(u32::from(length), p, w.f());
        c.earn_bits(u64::from(length));
        Some(v)
    }

    /// COPY-OFFSET (`offset`, `length`, $decompressed_pointer) then
    /// OUTPUT (the old pointer, `length`) within the buffer of `w`, as the
    /// UDVM runs them (RFC 3320 §9.2.6, §9.4.8); the cycles are charged
    /// by the caller. Returns the old pointer.
    #[inline(always)]
    fn native_match(&mut self, dp: u16, offset: u16, length: u16, w: &Window) -> Res<()> {
        let position = offset_back(dp, offset, w.bcl, w.bcr);
        let after = self.copy(position, length, dp, w.bcl, w.bcr)?;
        if length > 0 {
            self.set_word(DECOMPRESSED_POINTER, after)?;
        }
        read_string(self.mem, dp, length, w.bcl, w.bcr, self.output)?;
        self.output_seen = true;
        Ok(())
    }

    /// The end of a match token read up to its COPY-OFFSET: charges LOAD,
    /// COPY-OFFSET, OUTPUT and JUMP, then writes the scratch `words` (the
    /// values the token leaves in them), copies and outputs; or undoes the
    /// token (false) when the cycles or the output would run out.
    #[inline(always)]
    fn finish_match(
        &mut self,
        mark: ReaderMark,
        mut c: Cycles,
        words: [(u16, u16); 3],
        m: Match,
        w: &Window,
    ) -> Res<bool> {
        let n = u64::from(m.length);
        if c.charge(1 + (1 + n) + (1 + n) + 1).is_none() || !self.output_room(m.length) {
            self.rewind(mark);
            return Ok(false);
        }
        for (address, value) in words {
            self.set_word(address, value)?;
        }
        self.native_match(m.dp, m.offset, m.length, w)?;
        self.commit_cycles(c);
        Ok(true)
    }

    /// A literal byte at `index` + 1 (OUTPUT (index + 1, 1), COPY-LITERAL
    /// (index + 1, 1, $decompressed_pointer)) after `index` was set.
    #[inline(always)]
    fn native_literal(&mut self, dp: u16, w: &Window) -> Res<()> {
        let b = self.byte(INDEX + 1)?;
        self.output.push(b);
        self.output_seen = true;
        let after = self.copy(INDEX + 1, 1, dp, w.bcl, w.bcr)?;
        self.set_word(DECOMPRESSED_POINTER, after)
    }

    /// Whether `n` more bytes of output stay within [`MAX_OUTPUT`].
    #[inline(always)]
    fn output_room(&self, n: u16) -> bool {
        self.output.len() + usize::from(n) <= MAX_OUTPUT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run looks for a token loop at most MAX_RECOGNITIONS times, then
    /// no more: bytecode that rewrites itself to be looked at again and
    /// again costs a bounded amount of looking.
    #[test]
    fn recognition_is_tried_a_bounded_number_of_times_a_run() {
        let (states, input, mut out) = (StateHandler::new(0), [0u8; 4], Vec::new());
        let mut mem = vec![0u8; 1024];
        // INPUT-BITS (8, 32, 0): the head of sigkit's LZ77 loop, without
        // the rest of it.
        mem[200..204].copy_from_slice(&[op::INPUT_BITS, 0x08, 0x20, 0x00]);
        let mut cache = DecodeCache::default();
        let mut m = Machine::new(&mut mem, &mut cache, &states, &input, &mut out, 16, 0);
        for _ in 0..MAX_RECOGNITIONS {
            assert!(m.native_on);
            assert!(m.recognise_native(200, op::INPUT_BITS).is_none());
        }
        assert!(m.recognise_native(200, op::INPUT_BITS).is_none());
        assert!(!m.native_on);
        assert_eq!(m.native_recognitions, MAX_RECOGNITIONS);
    }
}
