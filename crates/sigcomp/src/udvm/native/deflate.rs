//! sigkit's Deflate token loop (sigcomp-compress `asm/deflate.asm`): the
//! fixed Huffman codes of RFC 1951 §3.2.6, the length and distance bases
//! computed from the codes rather than read from tables.

use super::pattern::Pattern;
use super::*;

/// `length_value` and `old_pointer`, after `index`.
const LENGTH_VALUE: u16 = INDEX + 2;
const OLD_POINTER: u16 = INDEX + 4;
const SCRATCH_END: u16 = INDEX + 6;

/// The literal/length code (RFC 1951 §3.2.6): 256..279 in 7 bits, 0..143
/// in 8, 280..285 in 8, 144..255 in 9.
const SYMBOL_SETS: [[u16; 4]; 4] = [[7, 0, 23, 256], [1, 48, 191, 0], [0, 192, 197, 280], [1, 400, 511, 144]];
/// The distance code: 5 bits, 0..29.
const DISTANCE_SETS: [[u16; 4]; 1] = [[5, 0, 29, 0]];

impl Machine<'_> {
    /// The loop of `asm/deflate.asm` at `pc`, with `index`,
    /// `length_value` and `old_pointer` at 32, 34, 36: the loop's end.
    pub(super) fn recognise_deflate(&self, pc: u16) -> Option<u16> {
        let mut p = Pattern::at(self, pc);
        p.op(op::INPUT_HUFFMAN)?;
        p.value(INDEX)?;
        let end_of_message = p.target()?;
        p.literal(4)?;
        for set in SYMBOL_SETS {
            set.iter().try_for_each(|&v| p.value(v))?;
        }
        symbol_branches(&mut p, 256, end_of_message, pc)?;
        p.op(op::SUBTRACT)?;
        p.reference(INDEX)?;
        p.value(257)?;
        p.op(op::LOAD)?;
        p.value(LENGTH_VALUE)?;
        p.memory(INDEX)?;
        p.op(op::ADD)?;
        p.reference(LENGTH_VALUE)?;
        p.value(3)?;
        p.op(op::COMPARE)?;
        p.memory(INDEX)?;
        p.value(8)?;
        let distance = p.target()?;
        let length_extra = p.target()?;
        p.target_is(length_extra)?;
        p.lands(length_extra)?;
        p.op(op::LOAD)?;
        p.value(LENGTH_VALUE)?;
        p.value(258)?;
        p.op(op::COMPARE)?;
        p.memory(INDEX)?;
        p.value(28)?;
        let length_group = p.target()?;
        p.target_is(distance)?;
        p.target_is(distance)?;
        p.lands(length_group)?;
        group(&mut p, LENGTH_VALUE, 3, 4, 2, 3)?;
        p.lands(distance)?;
        p.op(op::INPUT_HUFFMAN)?;
        p.value(INDEX)?;
        p.target()?;
        p.literal(1)?;
        DISTANCE_SETS[0].iter().try_for_each(|&v| p.value(v))?;
        p.op(op::LOAD)?;
        p.value(OLD_POINTER)?;
        p.memory(INDEX)?;
        p.op(op::ADD)?;
        p.reference(OLD_POINTER)?;
        p.value(1)?;
        p.op(op::COMPARE)?;
        p.memory(INDEX)?;
        p.value(4)?;
        let copy = p.target()?;
        let distance_group = p.target()?;
        p.target_is(distance_group)?;
        p.lands(distance_group)?;
        group(&mut p, OLD_POINTER, 1, 2, 1, 1)?;
        p.lands(copy)?;
        copy_branch(&mut p, INDEX, OLD_POINTER, LENGTH_VALUE, pc)?;
        Some(p.here())
    }

    /// Runs whole tokens while each can be taken natively.
    pub(super) fn deflate_tokens(&mut self, r: &Recognised) -> Res<()> {
        let Some(w) = self.window(r, SCRATCH_END, &[]) else { return Ok(()) };
        while self.deflate_token(&w)? {
            self.native_tokens += 1;
        }
        Ok(())
    }

    /// One token, or false (nothing changed) when the UDVM must run it.
    #[inline(always)]
    fn deflate_token(&mut self, w: &Window) -> Res<bool> {
        let mark = self.mark();
        let mut c = Cycles::of(self);
        let taken = self.deflate_decode(w, &mut c);
        let Some(token) = taken else {
            self.rewind(mark);
            return Ok(false);
        };
        let dp = self.word(DECOMPRESSED_POINTER)?;
        match token {
            Token::Literal(symbol) => {
                self.set_word(INDEX, symbol)?;
                self.native_literal(dp, w)?;
            }
            Token::Match { length, distance } => {
                self.set_word(INDEX, dp)?;
                self.set_word(LENGTH_VALUE, length)?;
                self.set_word(OLD_POINTER, distance)?;
                self.native_match(dp, distance, length, w)?;
            }
        }
        self.commit_cycles(c);
        Ok(true)
    }

    /// Reads one token and charges its cycles: None where the UDVM
    /// leaves the loop (end of block, end of input, a code outside the
    /// fixed code, cycles or output exhausted).
    #[inline(always)]
    fn deflate_decode(&mut self, w: &Window, c: &mut Cycles) -> Option<Token> {
        let symbol = self.native_huffman(&SYMBOL_SETS, w, c)?;
        if symbol < 256 {
            // COMPARE, OUTPUT, COPY-LITERAL, JUMP.
            c.charge(1 + 2 + 2 + 1)?;
            return self.output_room(1).then_some(Token::Literal(symbol));
        }
        if symbol == 256 {
            return None;
        }
        // COMPARE, SUBTRACT, LOAD, ADD, COMPARE.
        c.charge(5)?;
        let i = symbol - 257;
        let length = if i < 8 {
            i + 3
        } else {
            // LOAD, COMPARE.
            c.charge(2)?;
            if i >= 28 {
                258
            } else {
                // The group's seven instructions, INPUT-BITS, ADD.
                let e = i / 4 - 1;
                c.charge(7)?;
                let base = (((i & 3) | 4) << e).wrapping_add(3);
                let extra = self.native_bits(e, w, c)?;
                c.charge(1)?;
                base.wrapping_add(extra)
            }
        };
        let d = self.native_huffman(&DISTANCE_SETS, w, c)?;
        // LOAD, ADD, COMPARE.
        c.charge(3)?;
        let distance = if d < 4 {
            d + 1
        } else {
            let e = d / 2 - 1;
            c.charge(7)?;
            let base = (((d & 1) | 2) << e).wrapping_add(1);
            let extra = self.native_bits(e, w, c)?;
            c.charge(1)?;
            base.wrapping_add(extra)
        };
        // LOAD, COPY-OFFSET, OUTPUT, JUMP.
        let n = u64::from(length);
        c.charge(1 + (1 + n) + (1 + n) + 1)?;
        self.output_room(length).then_some(Token::Match { length, distance })
    }
}

/// What one Deflate token does.
enum Token {
    Literal(u16),
    Match { length: u16, distance: u16 },
}

/// The seven instructions that turn a code in `index` into its base in
/// `word` (RFC 1951 §3.2.5), then INPUT-BITS of the extra bits into
/// `index` and their sum:
/// LOAD (word, $index), AND ($word, `mask`), OR ($word, `or`),
/// RSHIFT ($index, `shift`), SUBTRACT ($index, 1), LSHIFT ($word, $index),
/// ADD ($word, `base`), INPUT-BITS ($index, index, fail),
/// ADD ($word, $index).
fn group(p: &mut Pattern<'_, '_>, word: u16, mask: u16, or: u16, shift: u16, base: u16) -> Option<()> {
    p.op(op::LOAD)?;
    p.value(word)?;
    p.memory(INDEX)?;
    p.op(op::AND)?;
    p.reference(word)?;
    p.value(mask)?;
    p.op(op::OR)?;
    p.reference(word)?;
    p.value(or)?;
    p.op(op::RSHIFT)?;
    p.reference(INDEX)?;
    p.value(shift)?;
    p.op(op::SUBTRACT)?;
    p.reference(INDEX)?;
    p.value(1)?;
    p.op(op::LSHIFT)?;
    p.reference(word)?;
    p.memory(INDEX)?;
    p.op(op::ADD)?;
    p.reference(word)?;
    p.value(base)?;
    p.op(op::INPUT_BITS)?;
    p.memory(INDEX)?;
    p.value(INDEX)?;
    p.target()?;
    p.op(op::ADD)?;
    p.reference(word)?;
    p.memory(INDEX)?;
    Some(())
}
