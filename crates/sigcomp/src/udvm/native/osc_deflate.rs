//! Open SigComp's Deflate token loop (its `Deflate.asm`, in reSIProcate's
//! contrib/opensigcomp), the bytecode of most deployed terminals that
//! compress with Open SigComp: RFC 1951's fixed literal/length code read
//! with INPUT-HUFFMAN, the length and distance bases and extra-bit counts
//! read from tables in UDVM memory with COPY.
//!
//! The tables are read as the UDVM reads them, from memory at each
//! token, so a sender's own tables (or none) give what the UDVM gives.

use super::pattern::Pattern;
use super::*;

/// The scratch words after `index`: extra_length_bits, length_value,
/// extra_distance_bits, distance_value.
const EXTRA_LENGTH_BITS: u16 = INDEX + 2;
const LENGTH_VALUE: u16 = INDEX + 4;
const EXTRA_DISTANCE_BITS: u16 = INDEX + 6;
const DISTANCE_VALUE: u16 = INDEX + 8;
const SCRATCH_END: u16 = INDEX + 10;

impl Machine<'_> {
    /// Open SigComp's loop at `pc`, with its scratch words at 32..42: the
    /// table places and the loop's end.
    pub(super) fn recognise_osc_deflate(&self, pc: u16) -> Option<(OscDeflate, u16)> {
        let mut p = Pattern::at(self, pc);
        p.op(op::INPUT_HUFFMAN)?;
        p.value(INDEX)?;
        let end_of_message = p.target()?;
        p.literal(4)?;
        [7, 0, 23].iter().try_for_each(|&v| p.value(v))?;
        let length_start = value_of(p.multi()?)?;
        [1, 48, 191, 0, 0, 192, 199].iter().try_for_each(|&v| p.value(v))?;
        let length_mid = value_of(p.multi()?)?;
        [1, 400, 511, 144].iter().try_for_each(|&v| p.value(v))?;
        symbol_branches(&mut p, length_start, end_of_message, pc)?;
        table_entry(&mut p, EXTRA_LENGTH_BITS)?;
        let (distance_code, distance_start) = distance_code(&mut p)?;
        table_entry(&mut p, EXTRA_DISTANCE_BITS)?;
        copy_branch(&mut p, INDEX, DISTANCE_VALUE, LENGTH_VALUE, pc)?;
        Some((OscDeflate { length_start, length_mid, distance_start, distance_code }, p.here()))
    }

    /// Runs whole tokens while each can be taken natively.
    pub(super) fn osc_deflate_tokens(&mut self, r: &Recognised, o: &OscDeflate) -> Res<()> {
        let Some(w) = self.window(r, SCRATCH_END, &[]) else { return Ok(()) };
        let sets = [[7, 0, 23, o.length_start], [1, 48, 191, 0], [0, 192, 199, o.length_mid], [1, 400, 511, 144]];
        while self.osc_deflate_token(&sets, o, &w)? {
            self.native_tokens += 1;
        }
        Ok(())
    }

    /// One token, or false (nothing changed) when the UDVM must run it.
    /// A match writes the scratch words as it goes (COPY reads its table
    /// entries into them); they are put back if the UDVM must run it.
    #[inline(always)]
    fn osc_deflate_token(&mut self, sets: &[[u16; 4]; 4], o: &OscDeflate, w: &Window) -> Res<bool> {
        let mark = self.mark();
        let mut c = Cycles::of(self);
        let Some(symbol) = self.native_huffman(sets, w, &mut c) else {
            self.rewind(mark);
            return Ok(false);
        };
        let dp = self.word(DECOMPRESSED_POINTER)?;
        if symbol < o.length_start {
            // COMPARE, OUTPUT, COPY-LITERAL, JUMP.
            if c.charge(1 + 2 + 2 + 1).is_none() || !self.output_room(1) {
                self.rewind(mark);
                return Ok(false);
            }
            self.set_word(INDEX, symbol)?;
            self.native_literal(dp, w)?;
            self.commit_cycles(c);
            return Ok(true);
        }
        // The end of the block (COMPARE's equal branch) is the UDVM's.
        if symbol == o.length_start {
            self.rewind(mark);
            return Ok(false);
        }
        let scratch_at = usize::from(INDEX);
        const SCRATCH_LEN: usize = (SCRATCH_END - INDEX) as usize;
        let mut scratch = [0u8; SCRATCH_LEN];
        scratch.copy_from_slice(&self.mem[scratch_at..scratch_at + SCRATCH_LEN]);
        let Some((length, distance)) = c.charge(1).and_then(|()| self.osc_deflate_match(symbol, o, w, &mut c)) else {
            self.mem[scratch_at..scratch_at + SCRATCH_LEN].copy_from_slice(&scratch);
            self.rewind(mark);
            return Ok(false);
        };
        self.set_word(INDEX, dp)?;
        self.native_match(dp, distance, length, w)?;
        self.commit_cycles(c);
        Ok(true)
    }

    /// Reads a match's length and distance after its symbol into the
    /// scratch words and charges their cycles, up to COPY-OFFSET: None
    /// where the UDVM fails (or the cycles or output run out).
    #[inline(always)]
    fn osc_deflate_match(&mut self, symbol: u16, o: &OscDeflate, w: &Window, c: &mut Cycles) -> Option<(u16, u16)> {
        let length = self.osc_table_value(symbol, EXTRA_LENGTH_BITS, w, c)?;
        let code = match o.distance_code {
            DistanceCode::Bits => {
                let code = self.native_bits(5, w, c)?;
                // ADD ($index, distance_start).
                c.charge(1)?;
                code.wrapping_add(o.distance_start)
            }
            DistanceCode::Huffman => self.native_huffman(&[[5, 0, 31, o.distance_start]], w, c)?,
        };
        let distance = self.osc_table_value(code, EXTRA_DISTANCE_BITS, w, c)?;
        // LOAD, COPY-OFFSET, OUTPUT, JUMP.
        let n = u64::from(length);
        c.charge(1 + (1 + n) + (1 + n) + 1)?;
        self.output_room(length).then_some((length, distance))
    }

    /// MULTIPLY ($index, 4), COPY ($index, 4, `extra`), INPUT-BITS
    /// ($extra, extra, !), ADD ($extra + 2, $extra): the entry of
    /// `index`, its extra bits added to its base.
    #[inline(always)]
    fn osc_table_value(&mut self, index: u16, extra: u16, w: &Window, c: &mut Cycles) -> Option<u16> {
        let entry = index.wrapping_mul(4);
        self.set_word(INDEX, entry).ok()?;
        c.charge(1 + (1 + 4))?;
        self.copy(entry, 4, extra, w.bcl, w.bcr).ok()?;
        let bits = self.word(extra).ok()?;
        if bits > 16 {
            return None;
        }
        let v = self.native_bits(bits, w, c)?;
        self.set_word(extra, v).ok()?;
        c.charge(1)?;
        let value = self.word(extra + 2).ok()?.wrapping_add(v);
        self.set_word(extra + 2, value).ok()?;
        Some(value)
    }
}

/// The distance code's reading, either form: the form and distance_start.
fn distance_code(p: &mut Pattern<'_, '_>) -> Option<(DistanceCode, u16)> {
    let at = p.here();
    let bits = (|| {
        p.op(op::INPUT_BITS)?;
        p.value(5)?;
        p.value(INDEX)?;
        p.target()?;
        p.op(op::ADD)?;
        p.reference(INDEX)?;
        value_of(p.multi()?)
    })();
    if let Some(start) = bits {
        return Some((DistanceCode::Bits, start));
    }
    *p = Pattern::at_resumed(p, at);
    p.op(op::INPUT_HUFFMAN)?;
    p.value(INDEX)?;
    p.target()?;
    p.literal(1)?;
    [5, 0, 31].iter().try_for_each(|&v| p.value(v))?;
    Some((DistanceCode::Huffman, value_of(p.multi()?)?))
}

/// A value held in the instruction (not a memory word).
fn value_of(o: Operand) -> Option<u16> {
    match o {
        Operand::Value(v) => Some(v),
        Operand::Memory(_) => None,
    }
}

/// The four instructions that read a table entry: MULTIPLY ($index, 4),
/// COPY ($index, 4, `extra`), INPUT-BITS ($extra, extra, !),
/// ADD ($extra + 2, $extra).
fn table_entry(p: &mut Pattern<'_, '_>, extra: u16) -> Option<()> {
    p.op(op::MULTIPLY)?;
    p.reference(INDEX)?;
    p.value(4)?;
    p.op(op::COPY)?;
    p.memory(INDEX)?;
    p.value(4)?;
    p.value(extra)?;
    p.op(op::INPUT_BITS)?;
    p.memory(extra)?;
    p.value(extra)?;
    p.target()?;
    p.op(op::ADD)?;
    p.reference(extra + 2)?;
    p.memory(extra)?;
    Some(())
}
