//! Bit packing, most significant bit first (input_bit_order 0, RFC 3320 §8.2).

/// Packs bit fields into bytes for the UDVM's INPUT-BITS and INPUT-HUFFMAN
/// (RFC 3320 §8.2, §9.4.3, §9.4.4) with input_bit_order 0: each field most
/// significant bit first, each byte filled from its most significant bit.
#[derive(Debug, Default, Clone)]
pub struct BitWriter {
    bytes: Vec<u8>,
    acc: u64,
    nacc: u32,
}

impl BitWriter {
    /// A writer whose buffer starts with room for `bytes` bytes.
    pub fn with_capacity(bytes: usize) -> BitWriter {
        BitWriter { bytes: Vec::with_capacity(bytes), ..BitWriter::default() }
    }

    /// Appends the low `n` (≤ 32) bits of `v`, MSB first.
    #[inline]
    pub fn write(&mut self, v: u32, n: u32) {
        debug_assert!(n <= 32);
        if n == 0 {
            return;
        }
        self.acc = (self.acc << n) | u64::from(v & (u32::MAX >> (32 - n)));
        self.nacc += n;
        while self.nacc >= 8 {
            self.nacc -= 8;
            self.bytes.push((self.acc >> self.nacc) as u8);
        }
    }

    /// The number of bits written so far (whole bytes and the pending
    /// bits not yet forming one).
    pub fn bit_len(&self) -> usize {
        self.bytes.len() * 8 + self.nacc as usize
    }

    /// The bytes, the last one padded with zero bits.
    pub fn finish(mut self) -> Vec<u8> {
        if self.nacc > 0 {
            self.bytes.push((self.acc << (8 - self.nacc)) as u8);
        }
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_msb_first() {
        let mut w = BitWriter::default();
        w.write(0b1, 1);
        w.write(0b0110, 4);
        w.write(0x1FF, 9);
        assert_eq!(w.bit_len(), 14);
        assert_eq!(w.finish(), vec![0b1011_0111, 0b1111_1100]);
    }
}
