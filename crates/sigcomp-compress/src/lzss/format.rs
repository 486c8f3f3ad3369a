//! The token format: offset and length fields for a buffer size, the
//! length's prefix code, and how hard the encoder searches.

/// Shape of the token stream, fixed by the bytecode parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LzssFormat {
    /// 9..=15: offsets 1..=2^offset_bits.
    pub offset_bits: u8,
    /// The longest match is 2 + 2^length_bits: 4 (look-ahead 18), 6 (66)
    /// or 8 (258). (Lengths are sent with a prefix code, not in a field of
    /// this width.)
    pub length_bits: u8,
}

impl LzssFormat {
    /// The shortest copy a match token encodes, in bytes: the length
    /// prefix code ([`length_code`], asm/lzss.asm) starts at 3.
    pub const MIN_MATCH: usize = 3;

    /// The format for a circular buffer of `buffer_size` bytes and a
    /// look-ahead of `lookahead` bytes (None if the look-ahead is not 18,
    /// 66 or 258, or another 2^k + 2 up to 258).
    pub fn for_buffer(buffer_size: usize, lookahead: usize) -> Option<LzssFormat> {
        let length_bits = Self::length_bits_for(lookahead)?;
        // Offsets reach the whole buffer (the 2005 SigComp performance thesis §7.8.4: 12 bits for a
        // 4096-byte buffer).
        let offset_bits = (usize::BITS - buffer_size.max(2).saturating_sub(1).leading_zeros()).clamp(9, 15) as u8;
        Some(LzssFormat { offset_bits, length_bits })
    }

    /// The longest copy a token encodes, in bytes: 2 + 2^`length_bits`
    /// (the look-ahead, the 2005 SigComp performance thesis §9.2, eq. 9.1).
    pub fn max_match(&self) -> usize {
        Self::MIN_MATCH + (1usize << self.length_bits) - 1
    }

    /// The farthest back a copy starts, in bytes: 2^`offset_bits`.
    pub fn max_offset(&self) -> usize {
        1usize << self.offset_bits
    }

    /// Length bits for a look-ahead buffer of `lookahead` bytes (the
    /// longest match): 18 → 4, 66 → 6, 258 → 8.
    pub fn length_bits_for(lookahead: usize) -> Option<u8> {
        let n = lookahead.checked_sub(Self::MIN_MATCH - 1)?;
        (n.is_power_of_two() && (2..=256).contains(&n)).then(|| n.trailing_zeros() as u8)
    }

    /// Bits of a match token of `length` bytes.
    pub fn match_bits(&self, length: usize) -> usize {
        2 + usize::from(self.offset_bits) + length_code(length).1 as usize
    }

    /// A lower bound on the bytes of any token sequence for a message of
    /// `len` bytes: every token covers at most [`LzssFormat::max_match`]
    /// bytes, and none costs fewer bits per byte covered than the cheapest
    /// of a literal (8 bits, 1 byte) and a match of each length bucket at
    /// its longest. (The compressor uses it to skip shared-state
    /// candidates that cannot win.)
    pub fn min_token_bytes(&self, len: usize) -> usize {
        let max = self.max_match();
        // (bits, bytes covered) of each token kind at its cheapest per
        // byte: a literal, and a match of each bucket's longest length
        // (`LENGTH_BUCKETS`); the smallest ratio bits / bytes.
        let literal = (8, 1);
        let matches = [6, 22, max].into_iter().filter(|&l| l <= max).map(|l| (self.match_bits(l), l));
        let (bits, bytes) = std::iter::once(literal)
            .chain(matches)
            .min_by(|a, b| (a.0 * b.1).cmp(&(b.0 * a.1)))
            .expect("a literal at least");
        // floor(len × bits / bytes) bits, rounded down to whole bytes.
        len * bits / bytes / 8
    }

    /// Bits of a literal: 8 for ASCII, 9 for the rest.
    pub fn literal_bits(byte: u8) -> usize {
        if byte < 128 {
            8
        } else {
            9
        }
    }
}

/// The prefix code of a match length (asm/lzss.asm): (code, bits).
pub fn length_code(length: usize) -> (u32, u32) {
    let l = length as u32;
    match length {
        0..=6 => (l - 3, 3),
        7..=22 => (32 + l - 7, 6),
        _ => (768 + l - 23, 10),
    }
}

/// Encoding effort.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    /// Chain links followed per position.
    pub max_chain: usize,
    /// Optimal (shortest-path) parse; false: greedy, the longest match at
    /// each position (faster, a few per cent larger).
    pub lazy: bool,
    /// A match this long ends the search at a position (zlib's
    /// `nice_match`): every offset costs the same bits in this format, so
    /// only a longer match elsewhere could do better, and inside a long
    /// match the previous position's copy, one byte shorter, is taken
    /// without walking the chain. `usize::MAX`: always the longest match.
    pub nice_len: usize,
}

impl Effort {
    /// Always the longest match within `max_chain` links (no early stop).
    pub const fn exhaustive(max_chain: usize, lazy: bool) -> Effort {
        Effort { max_chain, lazy, nice_len: usize::MAX }
    }
}

impl Default for Effort {
    fn default() -> Self {
        Effort { max_chain: 512, lazy: true, nice_len: NICE_LEN }
    }
}

/// Default [`Effort::nice_len`].
pub const NICE_LEN: usize = 32;
