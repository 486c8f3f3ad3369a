//! sigkit's LZ77 token loop (sigcomp-compress `asm/lz77.asm`): a control
//! byte, then a literal run read with INPUT-BYTES or a 16-bit offset.

use super::pattern::Pattern;
use super::*;

/// `length_value` and `old_pointer`, after `index`.
const LENGTH_VALUE: u16 = INDEX + 2;
const OLD_POINTER: u16 = INDEX + 4;
const SCRATCH_END: u16 = INDEX + 6;

impl Machine<'_> {
    /// The loop of `asm/lz77.asm` at `pc`, with `index`, `length_value`
    /// and `old_pointer` at 32, 34, 36: the loop's end.
    pub(super) fn recognise_lz77(&self, pc: u16) -> Option<u16> {
        let mut p = Pattern::at(self, pc);
        p.op(op::INPUT_BITS)?;
        p.value(8)?;
        p.value(INDEX)?;
        p.target()?;
        p.op(op::COMPARE)?;
        p.memory(INDEX)?;
        p.value(128)?;
        let literals = p.target()?;
        let matched = p.target()?;
        p.target_is(matched)?;
        p.lands(literals)?;
        p.op(op::ADD)?;
        p.reference(INDEX)?;
        p.value(1)?;
        p.op(op::INPUT_BYTES)?;
        p.memory(INDEX)?;
        p.memory(DECOMPRESSED_POINTER)?;
        p.target()?;
        p.op(op::OUTPUT)?;
        p.memory(DECOMPRESSED_POINTER)?;
        p.memory(INDEX)?;
        p.op(op::COPY_LITERAL)?;
        p.memory(DECOMPRESSED_POINTER)?;
        p.memory(INDEX)?;
        p.reference(DECOMPRESSED_POINTER)?;
        p.op(op::JUMP)?;
        p.target_is(pc)?;
        p.lands(matched)?;
        p.op(op::SUBTRACT)?;
        p.reference(INDEX)?;
        p.value(124)?;
        p.op(op::INPUT_BITS)?;
        p.value(16)?;
        p.value(LENGTH_VALUE)?;
        p.target()?;
        copy_branch(&mut p, OLD_POINTER, LENGTH_VALUE, INDEX, pc)?;
        Some(p.here())
    }

    /// Runs whole tokens while each can be taken natively.
    pub(super) fn lz77_tokens(&mut self, r: &Recognised) -> Res<()> {
        let Some(w) = self.window(r, SCRATCH_END, &[]) else { return Ok(()) };
        while self.lz77_token(&w)? {
            self.native_tokens += 1;
        }
        Ok(())
    }

    /// One token, or false (nothing changed) when the UDVM must run it.
    #[inline(always)]
    fn lz77_token(&mut self, w: &Window) -> Res<bool> {
        let mark = self.mark();
        let mut c = Cycles::of(self);
        let Some(control) = self.native_bits(8, w, &mut c) else {
            self.rewind(mark);
            return Ok(false);
        };
        let dp = self.word(DECOMPRESSED_POINTER)?;
        if control < 128 {
            let run = control + 1;
            let n = usize::from(run);
            // COMPARE, ADD, INPUT-BYTES (which drops a partial byte, RFC
            // 4896 §3.1), OUTPUT, COPY-LITERAL, JUMP.
            self.partial_left = 0;
            let k = u64::from(run);
            let fits = c.charge(1 + 1 + (1 + k)).is_some()
                && self.input.len() - self.in_pos >= n
                && {
                    c.earn_bits(8 * k);
                    c.charge((1 + k) + (1 + k) + 1).is_some()
                }
                && self.output_room(run);
            if !fits {
                self.rewind(mark);
                return Ok(false);
            }
            self.set_word(INDEX, run)?;
            let input = self.input;
            let after = self.write_string(dp, &input[self.in_pos..self.in_pos + n], w.bcl, w.bcr)?;
            self.in_pos += n;
            read_string(self.mem, dp, run, w.bcl, w.bcr, self.output)?;
            self.output_seen = true;
            // COPY-LITERAL of the run onto itself leaves the bytes and
            // moves the pointer past them, as the write did.
            self.set_word(DECOMPRESSED_POINTER, after)?;
            self.commit_cycles(c);
            return Ok(true);
        }
        // COMPARE, SUBTRACT, then the offset.
        let length = control - 124;
        let offset = match c.charge(2).and_then(|()| self.native_bits(16, w, &mut c)) {
            Some(offset) => offset,
            None => {
                self.rewind(mark);
                return Ok(false);
            }
        };
        let words = [(INDEX, length), (LENGTH_VALUE, offset), (OLD_POINTER, dp)];
        self.finish_match(mark, c, words, Match { dp, offset, length }, w)
    }
}
