//! Bit-packed fields, most significant bit first (the profile's
//! `bit_alignment 8`: fields are packed back to back and the whole header
//! is padded to an octet).

/// Writes fields of 0–32 bits.
pub(crate) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    nbits: u32,
}

impl<'a> BitWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter { out, acc: 0, nbits: 0 }
    }

    /// Appends the `width` low bits of `value`.
    #[inline(always)]
    pub fn put(&mut self, value: u32, width: u32) {
        debug_assert!(width <= 32);
        // A width of 0 shifts by 0 and masks everything off: no branch.
        let v = (value as u64) & ((1u64 << width) - 1);
        // At most 31 bits wait in `acc`, so 63 fit; whole 32-bit words go
        // out at once.
        self.acc = (self.acc << width) | v;
        self.nbits += width;
        if self.nbits >= 32 {
            self.nbits -= 32;
            self.out.extend_from_slice(&((self.acc >> self.nbits) as u32).to_be_bytes());
            self.acc &= (1u64 << self.nbits) - 1;
        }
    }

    /// Pads with zero bits to the next octet.
    #[inline]
    pub fn finish(self) {
        // At most 31 bits wait: the four octets that hold them go out as
        // one fixed-size copy, and the unused ones are cut off again.
        let octets = self.nbits.div_ceil(8) as usize;
        let padded = (self.acc << (32 - self.nbits)) as u32;
        self.out.extend_from_slice(&padded.to_be_bytes());
        self.out.truncate(self.out.len() - (4 - octets));
    }
}

/// Where a format's fields of 0–32 bits go: written ([`BitWriter`]) or
/// only counted ([`BitCount`]), so that a format's length comes from the
/// very code that writes it.
pub(crate) trait PutBits {
    /// Takes the `width` low bits of `value`.
    fn put(&mut self, value: u32, width: u32);
}

impl PutBits for BitWriter<'_> {
    #[inline(always)]
    fn put(&mut self, value: u32, width: u32) {
        BitWriter::put(self, value, width);
    }
}

/// Counts the bits of the fields put, writing nothing.
#[derive(Debug, Default)]
pub(crate) struct BitCount(pub u32);

impl PutBits for BitCount {
    #[inline(always)]
    fn put(&mut self, _value: u32, width: u32) {
        self.0 += width;
    }
}

/// Fields of at most 128 bits in all, packed into one word that is
/// appended at once ([`Wide::finish`]).
#[derive(Debug, Default)]
pub(crate) struct Wide {
    acc: u128,
    nbits: u32,
}

impl PutBits for Wide {
    #[inline(always)]
    fn put(&mut self, value: u32, width: u32) {
        self.acc = (self.acc << width) | (value as u128 & ((1u128 << width) - 1));
        self.nbits += width;
    }
}

impl Wide {
    /// Appends the fields, padded with zero bits to the next octet.
    #[inline]
    pub fn finish(self, out: &mut Vec<u8>) {
        let octets = self.nbits.div_ceil(8);
        let padded = self.acc << (octets * 8 - self.nbits);
        out.extend_from_slice(&padded.to_be_bytes()[16 - octets as usize..]);
    }
}

/// Reads fields of 0–32 bits; reading past the end is an error.
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    /// What fields are loaded from: `data`, or if it is shorter than
    /// [`SHORT`] octets a zero-padded copy of it, so a field is one 8-octet
    /// load even near its end (compressed pure ACKs are a few octets long).
    src: &'a [u8],
    bit: usize,
    /// `data`'s length in bits.
    limit: usize,
}

/// Below this length a packet is read from a padded copy.
const SHORT: usize = 48;

/// The room a [`BitReader`] may copy a short packet to.
pub(crate) type Scratch = [u8; SHORT + 8];

/// A zeroed [`Scratch`].
pub(crate) const SCRATCH: Scratch = [0; SHORT + 8];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Truncated;

impl<'a> BitReader<'a> {
    /// A reader of `data`, which copies it to `scratch` (zeroed) if short.
    pub fn new(data: &'a [u8], scratch: &'a mut Scratch) -> Self {
        let src = if data.len() < SHORT {
            scratch[..data.len()].copy_from_slice(data);
            &scratch[..]
        } else {
            data
        };
        BitReader { data, src, bit: 0, limit: data.len() * 8 }
    }

    #[inline(always)]
    pub fn get(&mut self, width: u32) -> Result<u32, Truncated> {
        debug_assert!(width <= 32);
        if self.bit + width as usize > self.limit {
            return Err(Truncated);
        }
        // The field lies in the 8 octets from the one holding its first bit
        // (at most 7 + 32 bits); octets past the end read as zero.
        let at = self.bit / 8;
        let window = match self.src.get(at..at + 8) {
            Some(w) => u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]),
            None => self.window_at_end(at),
        };
        // Shifted in two steps so that a width of 0 gives 0 without a
        // branch (a shift by 64 would overflow).
        let v = ((window << (self.bit % 8)) >> 1) >> (63 - width);
        self.bit += width as usize;
        Ok(v as u32)
    }

    /// The 8 octets from `at` of a long `data` that ends before them,
    /// zero-padded.
    #[cold]
    fn window_at_end(&self, at: usize) -> u64 {
        let mut w = [0u8; 8];
        let rest = &self.data[at..];
        w[..rest.len()].copy_from_slice(rest);
        u64::from_be_bytes(w)
    }

    /// The octet offset after padding to the next octet.
    pub fn octets_used(&self) -> usize {
        self.bit.div_ceil(8)
    }
}

/// Reads fields of 0–32 bits from a packet's first 16 octets, held as one
/// 128-bit word (zero past the packet's end): the short and compact
/// formats, whose fields take at most 98 bits. Reading past the end is
/// found by [`WordReader::check`], which a parser calls before it returns
/// anything, so that a truncated packet is refused as [`BitReader`]
/// refuses it (fields read past the end are zero, and only decide how
/// many more are read).
pub(crate) struct WordReader {
    word: u128,
    bit: u32,
    /// The packet's length in bits.
    limit: usize,
}

impl WordReader {
    pub fn new(data: &[u8]) -> Self {
        let mut octets = [0u8; 16];
        match data.get(..16) {
            Some(first) => octets.copy_from_slice(first),
            None => octets[..data.len()].copy_from_slice(data),
        }
        WordReader { word: u128::from_be_bytes(octets), bit: 0, limit: data.len() * 8 }
    }

    #[inline(always)]
    pub fn get(&mut self, width: u32) -> u32 {
        debug_assert!(width <= 32 && self.bit + width <= 128);
        // Shifted in two steps so that a width of 0 gives 0 (a shift by
        // 128 would overflow).
        let v = ((self.word << self.bit) >> 1) >> (127 - width);
        self.bit += width;
        v as u32
    }

    /// Whether the fields read so far lie within the packet.
    #[inline]
    pub fn check(&self) -> Result<(), Truncated> {
        if self.bit as usize > self.limit {
            Err(Truncated)
        } else {
            Ok(())
        }
    }

    /// The octet offset after padding to the next octet.
    pub fn octets_used(&self) -> usize {
        self.bit.div_ceil(8) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_across_octets() {
        let fields = [(1, 1), (0x5, 3), (0x3fff, 14), (0xdeadbeef, 32), (0, 0), (0x7f, 7), (0xabc, 12)];
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        for (v, n) in fields {
            w.put(v, n);
        }
        w.finish();
        assert_eq!(out.len(), (1 + 3 + 14 + 32 + 7 + 12usize).div_ceil(8));
        let mut scratch = SCRATCH;
        let mut r = BitReader::new(&out, &mut scratch);
        for (v, n) in fields {
            assert_eq!(r.get(n).unwrap(), v);
        }
        assert_eq!(r.octets_used(), out.len());
        assert!(r.get(8).is_err());
    }

    #[test]
    fn the_word_reader_reads_as_the_bit_reader() {
        let fields = [(1, 1), (0x5, 3), (0x3fff, 14), (0xdeadbeef, 32), (0, 0), (0x7f, 7), (0xabc, 12), (0x2a, 6)];
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        for (v, n) in fields {
            w.put(v, n);
        }
        w.finish();
        out.extend_from_slice(&[0x55; 9]);
        for len in 0..out.len() {
            let mut scratch = SCRATCH;
            let mut bits = BitReader::new(&out[..len], &mut scratch);
            let mut word = WordReader::new(&out[..len]);
            for (_, n) in fields {
                let want = bits.get(n);
                let got = word.get(n);
                match want {
                    Ok(v) => assert_eq!((got, word.check()), (v, Ok(())), "{len} octets"),
                    Err(e) => {
                        assert_eq!(word.check(), Err(e), "{len} octets");
                        break;
                    }
                }
            }
            if word.check().is_ok() {
                assert_eq!(word.octets_used(), bits.octets_used());
            }
        }
    }
}
