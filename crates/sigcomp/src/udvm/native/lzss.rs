//! sigkit's LZSS token loop (sigcomp-compress `asm/lzss.asm`): a literal
//! of 8 or 9 bits, or a match of an offset code and a length code, both
//! read with INPUT-HUFFMAN.

use super::pattern::Pattern;
use super::*;

/// `length_value` and `old_pointer`, after `index`.
const LENGTH_VALUE: u16 = INDEX + 2;
const OLD_POINTER: u16 = INDEX + 4;
const SCRATCH_END: u16 = INDEX + 6;

/// The literal code: 8 bits 0..127 for bytes 0..127, one more bit
/// 256..383 for bytes 128..255.
const LITERAL_SETS: [[u16; 4]; 2] = [[8, 0, 127, 0], [1, 256, 383, 128]];
/// The length code: 3..6, 7..22, 23..278.
const LENGTH_SETS: [[u16; 4]; 3] = [[3, 0, 3, 3], [3, 32, 47, 7], [4, 768, 1023, 23]];
/// The offset interval's uncompressed value: offsets start at 257 − 256.
const OFFSET_BASE: u16 = 257;

impl Machine<'_> {
    /// The loop of `asm/lzss.asm` at `pc`, with `index`, `length_value`
    /// and `old_pointer` at 32, 34, 36: the offset interval and the
    /// loop's end.
    pub(super) fn recognise_lzss(&self, pc: u16) -> Option<(Lzss, u16)> {
        let mut p = Pattern::at(self, pc);
        p.op(op::INPUT_HUFFMAN)?;
        p.value(INDEX)?;
        p.target()?;
        p.literal(3)?;
        for set in LITERAL_SETS {
            set.iter().try_for_each(|&v| p.value(v))?;
        }
        let offset_set = [p.multi()?, p.multi()?, p.multi()?];
        p.value(OFFSET_BASE)?;
        p.op(op::COMPARE)?;
        p.memory(INDEX)?;
        p.value(256)?;
        let literal = p.target()?;
        let matched = p.target()?;
        p.target_is(matched)?;
        p.lands(literal)?;
        literal_branch(&mut p, pc)?;
        p.lands(matched)?;
        p.op(op::SUBTRACT)?;
        p.reference(INDEX)?;
        p.value(256)?;
        p.op(op::INPUT_HUFFMAN)?;
        p.value(LENGTH_VALUE)?;
        p.target()?;
        p.literal(3)?;
        for set in LENGTH_SETS {
            set.iter().try_for_each(|&v| p.value(v))?;
        }
        copy_branch(&mut p, OLD_POINTER, INDEX, LENGTH_VALUE, pc)?;
        Some((Lzss { offset_set }, p.here()))
    }

    /// Runs whole tokens while each can be taken natively.
    pub(super) fn lzss_tokens(&mut self, r: &Recognised, l: &Lzss) -> Res<()> {
        let mut words = [(0u16, 0u16); 3];
        let mut n = 0;
        for o in l.offset_set {
            if let Operand::Memory(a) = o {
                words[n] = (a, 2);
                n += 1;
            }
        }
        let Some(w) = self.window(r, SCRATCH_END, &words[..n]) else { return Ok(()) };
        let [bits, lower, upper] = l.offset_set.map(|o| self.value(o).unwrap_or(u16::MAX));
        // The first INPUT-HUFFMAN's sets; more than 16 bits in all is the
        // UDVM's failure to meet.
        let literal_sets = [LITERAL_SETS[0], LITERAL_SETS[1], [bits, lower, upper, OFFSET_BASE]];
        if 8 + 1 + u32::from(bits) > 16 {
            return Ok(());
        }
        while self.lzss_token(&literal_sets, &w)? {
            self.native_tokens += 1;
        }
        Ok(())
    }

    /// One token, or false (nothing changed) when the UDVM must run it.
    #[inline(always)]
    fn lzss_token(&mut self, literal_sets: &[[u16; 4]; 3], w: &Window) -> Res<bool> {
        let mark = self.mark();
        let mut c = Cycles::of(self);
        let Some(index) = self.native_huffman(literal_sets, w, &mut c) else {
            self.rewind(mark);
            return Ok(false);
        };
        let dp = self.word(DECOMPRESSED_POINTER)?;
        if index < 256 {
            // COMPARE, OUTPUT 1 byte, COPY-LITERAL 1 byte, JUMP.
            if c.charge(1 + 2 + 2 + 1).is_none() || !self.output_room(1) {
                self.rewind(mark);
                return Ok(false);
            }
            self.set_word(INDEX, index)?;
            self.native_literal(dp, w)?;
            self.commit_cycles(c);
            return Ok(true);
        }
        // COMPARE, SUBTRACT, then the length code.
        let offset = index - 256;
        let length = match c.charge(2).and_then(|()| self.native_huffman(&LENGTH_SETS, w, &mut c)) {
            Some(length) => length,
            None => {
                self.rewind(mark);
                return Ok(false);
            }
        };
        let words = [(INDEX, offset), (LENGTH_VALUE, length), (OLD_POINTER, dp)];
        self.finish_match(mark, c, words, Match { dp, offset, length }, w)
    }
}
