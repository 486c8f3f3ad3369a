//! Reading the compressed input bit by bit, in either bit order
//! (RFC 3320 §8.2, RFC 4896 §3.1).

use super::*;

/// Each byte with its bits in reverse order.
pub(super) const REVERSED: [u8; 256] = {
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
pub(super) fn reverse_low(v: u32, n: u32) -> u32 {
    let r = (u32::from(REVERSED[(v & 0xFF) as usize]) << 8) | u32::from(REVERSED[((v >> 8) & 0xFF) as usize]);
    r >> (16 - n)
}

impl Machine<'_> {
    #[inline(always)]
    pub(super) fn bit_order(&self) -> Res<u16> {
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
    pub(super) fn check_p(&mut self, p: bool) {
        if self.last_p != p {
            self.partial_left = 0;
        }
        self.last_p = p;
    }

    #[inline(always)]
    pub(super) fn bits_available(&self) -> usize {
        usize::from(self.partial_left) + 8 * (self.input.len() - self.in_pos)
    }

    /// Takes `n` (≤ 16) bits, already known to be available. `lsb_first`
    /// is the F or H bit: whether the first bit is the value's LSB.
    ///
    /// RFC 3320 §8.2: P = 0 takes each byte's bits from its MSB, P = 1
    /// from its LSB. The bits left of a partly used byte are its low ones
    /// for P = 0 and its high ones for P = 1 (a change of P discards them).
    #[inline(always)]
    pub(super) fn take_bits(&mut self, n: u32, p: bool, lsb_first: bool) -> u16 {
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
    pub(super) fn peek_bits(&self, p: bool, lsb_first: bool) -> u32 {
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
    pub(super) fn peek_bits_at_end(&self, p: bool, lsb_first: bool) -> u32 {
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
    pub(super) fn skip_bits(&mut self, n: u32) {
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
}
