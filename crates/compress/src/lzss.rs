//! The modified LZSS encoder of seed 000 §7.8.4–7.8.5: literals and
//! (offset, length) pairs over a circular window that already holds the
//! dictionary, earlier messages and shared states, with hash-chain match
//! finding.
//!
//! Token format (most significant bit first, as `asm/lzss.asm` reads it):
//! `0` + 8-bit literal, or `1` + `offset_bits` of (offset − 1) +
//! `length_bits` of (length − 3).

use crate::bits::BitWriter;

/// Shape of the token stream, fixed by the bytecode parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LzssFormat {
    /// 9..=15: offsets 1..=2^offset_bits.
    pub offset_bits: u8,
    /// 4 (look-ahead 18), 6 (66) or 8 (258).
    pub length_bits: u8,
}

impl LzssFormat {
    pub const MIN_MATCH: usize = 3;

    pub fn max_match(&self) -> usize {
        Self::MIN_MATCH + (1usize << self.length_bits) - 1
    }

    pub fn max_offset(&self) -> usize {
        1usize << self.offset_bits
    }

    /// Length bits for a look-ahead buffer of `lookahead` bytes (the
    /// longest match): 18 → 4, 66 → 6, 258 → 8.
    pub fn length_bits_for(lookahead: usize) -> Option<u8> {
        let n = lookahead.checked_sub(Self::MIN_MATCH - 1)?;
        (n.is_power_of_two() && (2..=256).contains(&n)).then(|| n.trailing_zeros() as u8)
    }

    fn match_bits(&self) -> usize {
        1 + usize::from(self.offset_bits) + usize::from(self.length_bits)
    }
}

const HASH_BITS: u32 = 13;
const HASH_SIZE: usize = 1 << HASH_BITS;
const NIL: u32 = u32::MAX;

#[inline]
fn hash3(b: &[u8]) -> usize {
    // Multiplicative (Fibonacci) hashing of the next three bytes, as
    // seed 000 §7.8.5 does for its keys.
    let k = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
    (k.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

/// Hash chains over a linear history (window followed by the message).
struct Chains {
    head: Vec<u32>,
    prev: Vec<u32>,
}

impl Chains {
    fn new(len: usize) -> Chains {
        Chains { head: vec![NIL; HASH_SIZE], prev: vec![NIL; len] }
    }

    #[inline]
    fn insert(&mut self, data: &[u8], pos: usize) {
        if pos + 3 <= data.len() {
            let h = hash3(&data[pos..]);
            self.prev[pos] = self.head[h];
            self.head[h] = pos as u32;
        }
    }
}

/// Encoding effort: how many chain links are followed per position.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    pub max_chain: usize,
    /// Try one position later before committing to a match (lazy matching).
    pub lazy: bool,
}

impl Default for Effort {
    fn default() -> Self {
        Effort { max_chain: 256, lazy: true }
    }
}

/// Encodes `message` as LZSS tokens against `window` (the circular buffer
/// contents in chronological order, oldest first; its bytes are all valid
/// history). Appends the tokens to `out`.
pub fn encode(window: &[u8], message: &[u8], format: LzssFormat, effort: Effort, out: &mut BitWriter) {
    let w = window.len();
    let mut data = Vec::with_capacity(w + message.len());
    data.extend_from_slice(window);
    data.extend_from_slice(message);
    let mut chains = Chains::new(data.len());
    for p in 0..w.saturating_sub(2) {
        chains.insert(&data, p);
    }
    // Positions w-2 and w-1 start strings that run into the message; they
    // are inserted as the message is reached.
    let mut next_insert = w.saturating_sub(2);
    // COPY-OFFSET counts back circularly (RFC 3320 §8.4), so a distance
    // beyond the buffer size would wrap onto the wrong byte. An empty
    // window (tests) stands for an unbounded linear history.
    let max_offset = if w == 0 { format.max_offset() } else { format.max_offset().min(w) };
    let max_len = format.max_match();

    let find = |chains: &Chains, pos: usize| -> (usize, usize) {
        if pos + LzssFormat::MIN_MATCH > data.len() {
            return (0, 0);
        }
        let limit = (data.len() - pos).min(max_len);
        let mut best_len = 0;
        let mut best_off = 0;
        let mut cand = chains.head[hash3(&data[pos..])];
        let mut steps = 0;
        // The window holds the last `w` bytes before the current position:
        // anything older has been overwritten in the circular buffer.
        let oldest = pos.saturating_sub(max_offset);
        while cand != NIL && steps < effort.max_chain {
            let c = cand as usize;
            if c < oldest || c >= pos {
                if c < oldest {
                    break;
                }
                cand = chains.prev[c];
                continue;
            }
            steps += 1;
            if data[c + best_len.min(limit - 1)] == data[pos + best_len.min(limit - 1)] {
                let mut l = 0;
                while l < limit && data[c + l] == data[pos + l] {
                    l += 1;
                }
                if l > best_len {
                    best_len = l;
                    best_off = pos - c;
                    if l == limit {
                        break;
                    }
                }
            }
            cand = chains.prev[c];
        }
        if best_len >= LzssFormat::MIN_MATCH {
            (best_len, best_off)
        } else {
            (0, 0)
        }
    };

    let mut pos = w;
    while pos < data.len() {
        while next_insert < pos {
            chains.insert(&data, next_insert);
            next_insert += 1;
        }
        let (mut len, mut off) = find(&chains, pos);
        if len > 0 && effort.lazy && len < max_len && pos + 1 < data.len() {
            chains.insert(&data, pos);
            next_insert = next_insert.max(pos + 1);
            let (l2, o2) = find(&chains, pos + 1);
            // A longer match one byte later is worth a literal now when it
            // saves more bits than the literal costs.
            if l2 > len + 1 {
                out.write(u32::from(data[pos]), 9);
                pos += 1;
                len = l2;
                off = o2;
            }
        }
        if len == 0 {
            out.write(u32::from(data[pos]), 9);
            pos += 1;
        } else {
            let token = (1u32 << (format.offset_bits + format.length_bits))
                | ((off as u32 - 1) << format.length_bits)
                | (len - LzssFormat::MIN_MATCH) as u32;
            out.write(token, format.match_bits() as u32);
            pos += len;
        }
    }
}

/// Decodes LZSS tokens (reference implementation for tests).
pub fn decode(window: &[u8], tokens: &[u8], format: LzssFormat) -> Option<Vec<u8>> {
    let mut hist = window.to_vec();
    let w = window.len();
    let total_bits = tokens.len() * 8;
    let mut bit = 0usize;
    let read = |bit: &mut usize, n: usize| -> Option<u32> {
        if *bit + n > total_bits {
            return None;
        }
        let mut v = 0u32;
        for _ in 0..n {
            let b = (tokens[*bit / 8] >> (7 - *bit % 8)) & 1;
            v = (v << 1) | u32::from(b);
            *bit += 1;
        }
        Some(v)
    };
    loop {
        let Some(flag_lit) = read(&mut bit, 9) else { break };
        if flag_lit < 256 {
            hist.push(flag_lit as u8);
            continue;
        }
        let extra = usize::from(format.offset_bits) - 8;
        let Some(rest) = read(&mut bit, extra) else { break };
        let off = ((((flag_lit - 256) as usize) << extra) | rest as usize) + 1;
        let len = read(&mut bit, usize::from(format.length_bits))? as usize + LzssFormat::MIN_MATCH;
        if off > hist.len() {
            return None;
        }
        for _ in 0..len {
            let b = hist[hist.len() - off];
            hist.push(b);
        }
    }
    Some(hist.split_off(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(window: &[u8], msg: &[u8], f: LzssFormat) -> usize {
        let mut bw = BitWriter::default();
        encode(window, msg, f, Effort::default(), &mut bw);
        let bytes = bw.finish();
        assert_eq!(decode(window, &bytes, f).as_deref(), Some(msg));
        bytes.len()
    }

    #[test]
    fn round_trips() {
        let f = LzssFormat { offset_bits: 12, length_bits: 4 };
        let msg = b"INVITE sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP pc33.example.com\r\nTo: Bob <sip:bob@example.com>\r\n";
        // Without a window only the repeats inside the message can be
        // copied ("example.com", "sip:bob@"): fewer bytes than all literals.
        let n = round_trip(&[], msg, f);
        assert!(n < (msg.len() * 9).div_ceil(8), "{n}");
        let window = vec![0u8; 100];
        round_trip(&window, msg, f);
        // A window that holds the message compresses it to almost nothing.
        let mut w = vec![0u8; 50];
        w.extend_from_slice(msg);
        let n = round_trip(&w, msg, LzssFormat { offset_bits: 12, length_bits: 8 });
        assert!(n <= 4, "{n}");
        round_trip(&[], &[7u8; 1000], LzssFormat { offset_bits: 9, length_bits: 6 });
    }

    #[test]
    fn offsets_stay_within_the_window() {
        // The earlier copy lies beyond 2^9 bytes: it must not be used.
        let f = LzssFormat { offset_bits: 9, length_bits: 4 };
        let mut w = b"abcdefghijklmnop".to_vec();
        w.extend(std::iter::repeat(0u8).take(600));
        round_trip(&w, b"abcdefghijklmnop", f);
    }

    #[test]
    fn length_bits_from_lookahead() {
        assert_eq!(LzssFormat::length_bits_for(18), Some(4));
        assert_eq!(LzssFormat::length_bits_for(66), Some(6));
        assert_eq!(LzssFormat::length_bits_for(258), Some(8));
        assert_eq!(LzssFormat::length_bits_for(100), None);
    }
}
