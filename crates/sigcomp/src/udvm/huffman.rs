//! INPUT-HUFFMAN (RFC 3320 §9.4.4, RFC 4896 §3.1): decoding its operand
//! sets once per run, and reading each token with them.

use super::*;

/// The operand sets of an INPUT-HUFFMAN as [`Machine::huffman_run`]
/// reads them: sets decoded for one run (a slice), or those of a
/// [`HuffmanEntry`] read in place ([`CachedSets`]). The run is
/// monomorphised for each, so the cached instruction reads its sets
/// straight from the cache.
pub(super) trait HuffmanSets: Copy {
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
pub(super) struct CachedSets {
    pub(super) slot: usize,
    pub(super) n: usize,
}

impl HuffmanSets for CachedSets {
    #[inline(always)]
    fn sets<'s>(&'s self, m: &'s Machine<'_>) -> &'s [[Operand; 4]] {
        &m.huffman[self.slot].sets[..self.n]
    }
}

impl Machine<'_> {
    /// INPUT-HUFFMAN from its entry `slot` in `huffman`, if that still
    /// holds the instruction at `pc`: [`Machine::huffman_run`] reads the
    /// entry's sets in place.
    #[inline(always)]
    pub(super) fn input_huffman(&mut self, pc: u16, slot: u16) -> Res<u16> {
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
    pub(super) fn input_huffman_decoding(&mut self, pc: u16, mut c: u16) -> Res<u16> {
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
    pub(super) fn decode_sets(&self, c: &mut u16, sets: &mut [[Operand; 4]]) -> Res<()> {
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
    pub(super) fn huffman_run<S: HuffmanSets>(
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
}
