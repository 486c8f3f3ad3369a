//! Deflate for SigComp: the body of one RFC 1951 block with the fixed
//! Huffman codes (BTYPE=01, §3.2.6), decoded by `asm/deflate.asm` with
//! INPUT-HUFFMAN as in RFC 4464 §4.1.4.
//!
//! What is sent: the literal/length and distance symbols with their extra
//! bits, packed as RFC 1951 §3.1.1 says (bytes filled from their least
//! significant bit; Huffman codes most significant bit first, extra bits
//! least significant bit first: the bytecode's input_bit_order 5). The
//! 3-bit block header is implied and not sent, and so is the end-of-block
//! symbol: the zero bits that pad the last byte are either too few for a
//! code or exactly the 7-bit end-of-block code. [`rfc1951_block`] wraps
//! the same symbols as a complete raw RFC 1951 stream.
//!
//! The Open SigComp 0.9 characterisation names "a modified version of the
//! Deflate algorithm" (§2.2.1) without describing it; its Table 4 lists a
//! 338-byte bytecode and, in the compressor, a 1024-byte literal table and
//! a 1036-byte length table (256 and 259 four-byte entries: precomputed
//! codes, which suggests fixed codes as here), and Tables 7-8 a history
//! buffer of 8 KiB per compressing thread. The RFC 4464 §4.1.4 bytecode,
//! fixed codes with its tables in memory, is 326 bytes; this one, without
//! tables, adds 167 bytes of fragment to the mechanism program.
//!
//! Because the codes are fixed, the bit cost of every token is known in
//! advance, and the encoder picks the cheapest token sequence exactly (a
//! shortest path over message positions, given the matches the hash
//! chains find).

use crate::chains::{MatchFinder, ParseScratch};

/// Encoder settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeflateParams {
    /// How many earlier positions with the same 3-byte hash are compared
    /// per message position.
    pub max_chain: usize,
}

impl Default for DeflateParams {
    fn default() -> Self {
        DeflateParams { max_chain: 256 }
    }
}

/// RFC 1951 §3.2.5: lengths 3..=258, distances 1..=32768.
pub const MIN_MATCH: usize = 3;
/// The longest copy a Deflate length code can express (RFC 1951 §3.2.5,
/// code 285).
pub const MAX_MATCH: usize = 258;
/// The farthest back a Deflate distance code reaches (RFC 1951 §3.2.5);
/// the encoder also stays within the circular buffer.
pub const MAX_DISTANCE: usize = 32768;

/// Bits appended least significant first (RFC 1951 §3.1.1).
#[derive(Default)]
struct LsbWriter {
    bytes: Vec<u8>,
    acc: u64,
    nacc: u32,
}

impl LsbWriter {
    fn bits(&mut self, v: u32, n: u32) {
        debug_assert!(n <= 32 && (n == 32 || v >> n == 0));
        self.acc |= u64::from(v) << self.nacc;
        self.nacc += n;
        // Whole words out: fewer than 32 bits wait in `acc`.
        if self.nacc >= 32 {
            self.bytes.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.nacc -= 32;
        }
    }

    /// A Huffman code of `n` bits, sent most significant bit first.
    fn code(&mut self, code: u32, n: u32) {
        self.bits(code.reverse_bits() >> (32 - n), n);
    }

    /// The bytes, the last one padded with zero bits.
    fn finish(mut self) -> Vec<u8> {
        let whole = self.nacc.div_ceil(8) as usize;
        self.bytes.extend_from_slice(&self.acc.to_le_bytes()[..whole]);
        self.bytes
    }
}

/// The fixed literal/length code of `sym` (RFC 1951 §3.2.6): (code, bits).
const fn literal_length_code(sym: u16) -> (u32, u32) {
    let s = sym as u32;
    match sym {
        0..=143 => (0x30 + s, 8),
        144..=255 => (0x190 + s - 144, 9),
        256..=279 => (s - 256, 7),
        _ => (0xC0 + s - 280, 8),
    }
}

/// Length → (symbol, extra bits, extra value) (RFC 1951 §3.2.5).
const fn length_symbol(len: usize) -> (u16, u32, u32) {
    debug_assert!(len >= MIN_MATCH && len <= MAX_MATCH);
    if len == 258 {
        return (285, 0, 0);
    }
    let v = (len - 3) as u32;
    if v < 8 {
        return (257 + v as u16, 0, 0);
    }
    // v = (4 + m) << e + x with 0 <= m < 4, 0 <= x < 2^e; code 257 + 4(e+1) + m.
    let e = 31 - v.leading_zeros() - 2;
    let m = (v >> e) - 4;
    (257 + (4 * (e + 1) + m) as u16, e, v & ((1 << e) - 1))
}

/// Distance → (code, extra bits, extra value) (RFC 1951 §3.2.5).
fn distance_code(distance: usize) -> (u32, u32, u32) {
    debug_assert!((1..=MAX_DISTANCE).contains(&distance));
    let v = (distance - 1) as u32;
    if v < 4 {
        return (v, 0, 0);
    }
    // v = (2 + m) << e + x; code 2(e+1) + m.
    let e = 31 - v.leading_zeros() - 1;
    let m = (v >> e) - 2;
    (2 * (e + 1) + m, e, v & ((1 << e) - 1))
}

/// A lower bound on the bytes of any symbols for a message of `len`
/// bytes: no symbol costs fewer bits per byte covered than a copy of 258
/// bytes (8 bits of code 285 and 5 of distance code, no extra bits).
pub fn min_token_bytes(len: usize) -> usize {
    len * 13 / MAX_MATCH / 8
}

const fn length_cost(len: usize) -> u32 {
    let (sym, extra, _) = length_symbol(len);
    literal_length_code(sym).1 + extra
}

fn distance_cost(distance: usize) -> u32 {
    5 + distance_code(distance).1
}

/// The cheapest symbols for `message`, which `finder`'s history ends
/// with, in a circular buffer of `buffer_size` bytes, written to `out`.
fn parse_into(
    finder: &mut MatchFinder,
    message: &[u8],
    buffer_size: usize,
    params: &DeflateParams,
    out: &mut LsbWriter,
) {
    let n = message.len();
    let start = finder.history().len() - n;
    // A copy may reach the oldest byte of the circular buffer, buffer-size
    // bytes back (RFC 3320 §8.4), and RFC 1951 allows 32768.
    let reach = buffer_size.min(MAX_DISTANCE);
    let (length_costs, same_cost_from) = (&LENGTH_COSTS, &SAME_COST_FROM);
    // The matches at every position (the finder takes positions in order).
    let mut scratch = finder.take_scratch();
    let ParseScratch { matches, matches_at, cost, next_rise, choice } = &mut scratch;
    matches.clear();
    matches_at.clear();
    // Room for a few matches a position: fewer reallocations of a finder
    // that is new with its compartment.
    matches.reserve(4 * n);
    matches_at.reserve(n + 1);
    finder.push_matches_from(start..start + n, reach, MAX_MATCH, params.max_chain, true, matches, matches_at);

    // A shortest path from the end: cost[i] is the fewest bits for
    // message[i..]. Lengths of the same bits (a run of length symbols,
    // RFC 1951 §3.2.5: 3..=10 cost 7 bits, 11..=18 8 bits, ...) are one
    // choice: the length with the smallest cost[i + l] (the longest on a
    // tie). `cost` seldom rises along the message (a copy of L bytes at j
    // is one of L - 1 at j + 1, no dearer), so the range minima follow
    // from `next_rise` ([`range_min`]): one comparison where cost does not
    // rise within the range, one per rise where it does. The optimum (its
    // bits) is the one relaxing every length gives.
    // Every entry below n is written before it is read (from the end), so
    // what the last message left in them is not cleared.
    let cost = at_least(cost, n + 1);
    let next_rise = at_least(next_rise, n + 1);
    cost[n] = 0;
    next_rise[n] = u32::MAX;
    // The choice at each position: 0 for a literal, else length << 16 |
    // distance.
    let choice = at_least(choice, n);
    for i in (0..n).rev() {
        let b = message[i];
        let mut best = LITERAL_COSTS[usize::from(b)] + cost[i + 1];
        let mut token = 0;
        // Longest lengths first: once no length up to `hi` can beat the
        // best (the cheapest copy, plus the least cost among their
        // targets), the shorter ones are not weighed. A group whose
        // lengths cannot beat the best is weighed without effect, so the
        // bound is checked after each group, for the lengths below it.
        // The matches' distances grow with their lengths, so the cheapest
        // copy is a 3-byte one (7 bits) at the first match's distance.
        let here = &matches[matches_at[i] as usize..matches_at[i + 1] as usize];
        let cheapest_copy = here.first().map_or(0, |m| length_costs[MIN_MATCH] + distance_cost(m.distance));
        'lengths: for (k, m) in here.iter().enumerate().rev() {
            let shorter = if k == 0 { MIN_MATCH - 1 } else { here[k - 1].len };
            let dcost = distance_cost(m.distance);
            let mut hi = m.len;
            while hi > shorter {
                let lo = same_cost_from[hi].max(shorter + 1);
                let (least, j) = range_min(cost, next_rise, i + lo, i + hi);
                let c = length_costs[lo] + dcost + least;
                if c < best {
                    best = c;
                    token = ((j - i) as u32) << 16 | m.distance as u32;
                }
                hi = lo - 1;
                // (The least cost is at most cost[i + hi]: where even that
                // leaves room below the best, the bound is not computed.)
                if hi < MIN_MATCH
                    || (cheapest_copy + cost[i + hi] >= best
                        && cheapest_copy + least_cost_bound(cost, next_rise, i + MIN_MATCH, i + hi) >= best)
                {
                    break 'lengths;
                }
            }
        }
        cost[i] = best;
        choice[i] = token;
        next_rise[i] = if best < cost[i + 1] { i as u32 } else { next_rise[i + 1] };
    }
    let mut i = 0;
    while i < n {
        let t = choice[i];
        if t == 0 {
            let (code, bits) = LITERAL_CODES[usize::from(message[i])];
            out.bits(code, bits);
            i += 1;
        } else {
            let (len, distance) = ((t >> 16) as usize, (t & 0xFFFF) as usize);
            let (code, bits) = LENGTH_CODES[len];
            out.bits(code, bits);
            let (dc, extra, value) = distance_code(distance);
            // The 5-bit distance code most significant bit first, then
            // its extra bits (RFC 1951 §3.1.1).
            out.bits(dc.reverse_bits() >> 27 | value << 5, 5 + extra);
            i += len;
        }
    }
    finder.keep_scratch(scratch);
}

/// The first `len` entries of `v`, grown to that length if shorter (the
/// parse writes each entry before reading it).
fn at_least(v: &mut Vec<u32>, len: usize) -> &mut [u32] {
    if v.len() < len {
        v.resize(len, 0);
    }
    &mut v[..len]
}

/// Bits of each literal's code.
const LITERAL_COSTS: [u32; 256] = {
    let mut t = [0; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = literal_length_code(b as u16).1;
        b += 1;
    }
    t
};

/// `code`'s `n` bits reversed, to be sent least significant bit first:
/// the order a Huffman code is sent in (RFC 1951 §3.1.1).
const fn reversed(code: u32, n: u32) -> u32 {
    code.reverse_bits() >> (32 - n)
}

/// Each literal's code as [`LsbWriter::bits`] sends it: (bits, count).
const LITERAL_CODES: [(u32, u32); 256] = {
    let mut t = [(0, 0); 256];
    let mut b = 0;
    while b < 256 {
        let (code, n) = literal_length_code(b as u16);
        t[b] = (reversed(code, n), n);
        b += 1;
    }
    t
};

/// Each length's symbol code followed by its extra bits, as
/// [`LsbWriter::bits`] sends them: (bits, count); (0, 0) below
/// [`MIN_MATCH`].
const LENGTH_CODES: [(u32, u32); MAX_MATCH + 1] = {
    let mut t = [(0, 0); MAX_MATCH + 1];
    let mut l = MIN_MATCH;
    while l <= MAX_MATCH {
        let (sym, extra, value) = length_symbol(l);
        let (code, n) = literal_length_code(sym);
        t[l] = (reversed(code, n) | value << n, n + extra);
        l += 1;
    }
    t
};

/// Bits of each length's code and extra bits (0 below [`MIN_MATCH`]).
const LENGTH_COSTS: [u32; MAX_MATCH + 1] = {
    let mut t = [0; MAX_MATCH + 1];
    let mut l = MIN_MATCH;
    while l <= MAX_MATCH {
        t[l] = length_cost(l);
        l += 1;
    }
    t
};

/// The first length of the run of lengths that cost the same bits as
/// each length (3..=10, 11..=18, 19..=34, 35..=66, 67..=114, 115..=130,
/// 131..=257, 258).
const SAME_COST_FROM: [usize; MAX_MATCH + 1] = {
    let mut t = [0; MAX_MATCH + 1];
    let mut l = 0;
    while l <= MAX_MATCH {
        t[l] = if l <= MIN_MATCH || LENGTH_COSTS[l - 1] != LENGTH_COSTS[l] { l } else { t[l - 1] };
        l += 1;
    }
    t
};

/// The smallest `cost` in lo..=hi and its position (the last on a tie).
/// `next_rise[k]` is the first j >= k with cost[j] < cost[j + 1]
/// (`u32::MAX` for none), so cost is non-increasing from k to it: the
/// candidates are the rises within the range and `hi`.
#[inline]
fn range_min(cost: &[u32], next_rise: &[u32], lo: usize, hi: usize) -> (u32, usize) {
    let mut r = next_rise[lo] as usize;
    if r >= hi {
        return (cost[hi], hi);
    }
    let mut least = (cost[r], r);
    loop {
        r = next_rise[r + 1] as usize;
        if r >= hi {
            if cost[hi] <= least.0 {
                least = (cost[hi], hi);
            }
            return least;
        }
        if cost[r] <= least.0 {
            least = (cost[r], r);
        }
    }
}

/// A lower bound on the smallest `cost` in lo..=hi: exact where the range
/// holds at most a few rises ([`range_min`]), 0 beyond, so that a long
/// uneven range costs no more than a few steps.
#[inline]
fn least_cost_bound(cost: &[u32], next_rise: &[u32], lo: usize, hi: usize) -> u32 {
    const MAX_RISES: usize = 8;
    let mut r = next_rise[lo] as usize;
    let mut least = u32::MAX;
    for _ in 0..MAX_RISES {
        if r >= hi {
            return least.min(cost[hi]);
        }
        least = least.min(cost[r]);
        r = next_rise[r + 1] as usize;
    }
    0
}

/// Encodes `message` after `finder`'s history (whose last `buffer_size`
/// bytes are the circular buffer), appends it to the history and the
/// symbols, as `asm/deflate.asm` reads them, to `out`.
pub fn encode_after(
    finder: &mut MatchFinder,
    message: &[u8],
    buffer_size: usize,
    params: &DeflateParams,
    out: &mut Vec<u8>,
) {
    finder.append(message);
    let mut w = LsbWriter { bytes: std::mem::take(out), ..LsbWriter::default() };
    parse_into(finder, message, buffer_size, params, &mut w);
    *out = w.finish();
}

/// Encodes `message` against `window` (the circular buffer in
/// chronological order, oldest first: exactly buffer-size bytes) and
/// appends the symbols, as `asm/deflate.asm` reads them, to `out`.
pub fn encode(window: &[u8], message: &[u8], params: &DeflateParams, out: &mut Vec<u8>) {
    let mut finder = MatchFinder::default();
    finder.prepare(window);
    encode_after(&mut finder, message, window.len(), params, out);
}

/// The same symbols as a complete raw RFC 1951 stream: block header
/// BFINAL=1, BTYPE=01, the symbols, end-of-block. Any inflater given
/// `window` as its preset history decodes it to `message`.
pub fn rfc1951_block(window: &[u8], message: &[u8], params: &DeflateParams) -> Vec<u8> {
    let mut finder = MatchFinder::default();
    finder.prepare(window);
    finder.append(message);
    let mut w = LsbWriter::default();
    w.bits(0b011, 3);
    parse_into(&mut finder, message, window.len(), params, &mut w);
    w.code(0, 7);
    w.finish()
}

/// Decodes the symbols [`encode`] writes against `window` (a reference
/// for tests; the real decoder is the bytecode). `None` for malformed
/// input.
pub fn decode(window: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    let total = body.len() * 8;
    let mut bit = 0usize;
    let read_bit = |bit: &mut usize| -> Option<u32> {
        if *bit >= total {
            return None;
        }
        let b = (body[*bit / 8] >> (*bit % 8)) & 1;
        *bit += 1;
        Some(u32::from(b))
    };
    let w = window.len();
    let mut hist = window.to_vec();
    loop {
        // Fixed literal/length code, most significant bit first.
        let mut code = 0u32;
        let mut sym = None;
        for len in 1..=9 {
            let Some(b) = read_bit(&mut bit) else { return Some(hist.split_off(w)) };
            code = code << 1 | b;
            sym = match (len, code) {
                (7, 0..=23) => Some(256 + code),
                (8, 48..=191) => Some(code - 48),
                (8, 192..=197) => Some(280 + code - 192),
                (9, 400..=511) => Some(144 + code - 400),
                (9, _) => return None,
                _ => None,
            };
            if sym.is_some() {
                break;
            }
        }
        let sym = sym?;
        if sym < 256 {
            hist.push(sym as u8);
            continue;
        }
        if sym == 256 {
            return Some(hist.split_off(w));
        }
        let read = |n: u32, bit: &mut usize| -> Option<u32> {
            let mut v = 0;
            for k in 0..n {
                v |= read_bit(bit)? << k;
            }
            Some(v)
        };
        let len = if sym == 285 {
            258
        } else {
            let i = sym - 257;
            if i < 8 {
                3 + i
            } else {
                let e = i / 4 - 1;
                3 + ((4 + i % 4) << e) + read(e, &mut bit)?
            }
        };
        let mut d = 0;
        for _ in 0..5 {
            d = d << 1 | read_bit(&mut bit)?;
        }
        if d >= 30 {
            return None;
        }
        let distance = if d < 4 {
            1 + d
        } else {
            let e = d / 2 - 1;
            1 + ((2 + d % 2) << e) + read(e, &mut bit)?
        } as usize;
        if distance > w {
            return None;
        }
        for _ in 0..len {
            let b = hist[hist.len() - distance];
            hist.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The matches a search of its own finds at each position of
    /// `message` after `window` (no match known from the position before).
    fn searched_matches(window: &[u8], message: &[u8], params: &DeflateParams) -> Vec<Vec<crate::chains::Match>> {
        let mut finder = MatchFinder::default();
        finder.prepare(window);
        finder.append(message);
        let reach = window.len().min(MAX_DISTANCE);
        let mut at = Vec::new();
        (0..message.len())
            .map(|i| {
                finder.matches_at(window.len() + i, reach, MAX_MATCH, params.max_chain, &mut at);
                at.clone()
            })
            .collect()
    }

    /// The matches the encoder weighs at each position of `message` after
    /// `window`: one pass of a finder of its own, a copy that reaches its
    /// limit continued without a search.
    fn encoder_matches(window: &[u8], message: &[u8], params: &DeflateParams) -> Vec<Vec<crate::chains::Match>> {
        let mut finder = MatchFinder::default();
        finder.prepare(window);
        finder.append(message);
        let reach = window.len().min(MAX_DISTANCE);
        let (mut matches, mut starts) = (Vec::new(), Vec::new());
        let positions = window.len()..window.len() + message.len();
        finder.push_matches_from(positions, reach, MAX_MATCH, params.max_chain, true, &mut matches, &mut starts);
        starts.windows(2).map(|w| matches[w[0] as usize..w[1] as usize].to_vec()).collect()
    }

    /// The fewest bits for `message` after `window`, every length of every
    /// match a full chain search finds at each position weighed.
    fn reference_bits(window: &[u8], message: &[u8], params: &DeflateParams) -> u32 {
        let n = message.len();
        let all = searched_matches(window, message, params);
        let mut cost = vec![0u32; n + 1];
        for i in (0..n).rev() {
            let mut best = LITERAL_COSTS[usize::from(message[i])] + cost[i + 1];
            let mut shorter = MIN_MATCH - 1;
            for m in &all[i] {
                for l in shorter + 1..=m.len {
                    best = best.min(LENGTH_COSTS[l] + distance_cost(m.distance) + cost[i + l]);
                }
                shorter = m.len;
            }
            cost[i] = best;
        }
        cost[0]
    }

    /// The symbols for `message` after `window`, as [`encode`] should
    /// send them: every length of every match the encoder finds
    /// ([`encoder_matches`]) weighed at every position, longest length
    /// first and a choice replaced only by a cheaper one (a literal on a
    /// tie with every copy, else the longest of the cheapest lengths),
    /// each length at the nearest distance listed for it.
    fn reference_symbols(window: &[u8], message: &[u8], params: &DeflateParams) -> Vec<u8> {
        let n = message.len();
        let all = encoder_matches(window, message, params);
        let mut cost = vec![0u32; n + 1];
        let mut choice = vec![None; n];
        for i in (0..n).rev() {
            let mut best = LITERAL_COSTS[usize::from(message[i])] + cost[i + 1];
            let longest = all[i].last().map_or(0, |m: &crate::chains::Match| m.len);
            for len in (MIN_MATCH..=longest).rev() {
                let m = all[i].iter().find(|m| m.len >= len).expect("a match that long");
                let c = LENGTH_COSTS[len] + distance_cost(m.distance) + cost[i + len];
                if c < best {
                    best = c;
                    choice[i] = Some((len, m.distance));
                }
            }
            cost[i] = best;
        }
        let mut w = LsbWriter::default();
        let mut i = 0;
        while i < n {
            match choice[i] {
                None => {
                    let (code, n) = literal_length_code(u16::from(message[i]));
                    w.code(code, n);
                    i += 1;
                }
                Some((len, distance)) => {
                    let (sym, extra, value) = length_symbol(len);
                    let (code, n) = literal_length_code(sym);
                    w.code(code, n);
                    w.bits(value, extra);
                    let (dc, extra, value) = distance_code(distance);
                    w.code(dc, 5);
                    w.bits(value, extra);
                    i += len;
                }
            }
        }
        w.finish()
    }

    /// Text made of SIP header pieces, with a few random bytes between:
    /// long matches at many distances.
    fn sip_like(pieces: &[(u8, u8)]) -> Vec<u8> {
        const HEADERS: [&[u8]; 8] = [
            b"SIP/2.0 200 OK\r\n",
            b"Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds\r\n",
            b"To: Bob <sip:bob@biloxi.example.com>;tag=a6c85cf\r\n",
            b"From: Alice <sip:alice@atlanta.example.com>;tag=1928301774\r\n",
            b"Call-ID: a84b4c76e66710@pc33.atlanta.example.com\r\n",
            b"CSeq: 314159 INVITE\r\n",
            b"Contact: <sip:alice@pc33.atlanta.example.com>\r\n",
            b"Content-Length: 0\r\n\r\n",
        ];
        let mut text = Vec::new();
        for &(header, byte) in pieces {
            text.extend_from_slice(HEADERS[usize::from(header) % HEADERS.len()]);
            if byte % 4 == 0 {
                text.push(byte);
            }
        }
        text
    }

    /// [`encode_after`] on a finder kept from one message to the next
    /// against [`reference_symbols`] for each message.
    fn assert_reference_symbols(window: &[u8], messages: [&[u8]; 2], max_chain: usize) {
        let params = DeflateParams { max_chain };
        let mut finder = MatchFinder::default();
        let mut window = window.to_vec();
        for message in messages {
            finder.prepare(&window);
            let mut out = Vec::new();
            encode_after(&mut finder, message, window.len(), &params, &mut out);
            assert_eq!(out, reference_symbols(&window, message, &params));
            window.extend_from_slice(message);
            window.drain(..message.len());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
        /// Bytes over a 2–4 letter alphabet: long matches, many ties and
        /// cost rises.
        #[test]
        fn symbols_are_the_reference_ones_on_repetitive_bytes(
            alphabet in 2u8..5,
            window in proptest::collection::vec(0u8..4, 1..2000),
            message in proptest::collection::vec(0u8..4, 0..1500),
            max_chain in proptest::sample::select(vec![1usize, 8, 256]),
        ) {
            let window: Vec<u8> = window.iter().map(|b| b % alphabet + b'a').collect();
            let message: Vec<u8> = message.iter().map(|b| b % alphabet + b'a').collect();
            assert_reference_symbols(&window, [&message, &message[message.len() / 3..]], max_chain);
        }

        /// SIP-like text: the message's headers in the window and in the
        /// message before, at many distances.
        #[test]
        fn symbols_are_the_reference_ones_on_sip_like_text(
            window in proptest::collection::vec((0u8..8, proptest::num::u8::ANY), 1..40),
            first in proptest::collection::vec((0u8..8, proptest::num::u8::ANY), 0..30),
            second in proptest::collection::vec((0u8..8, proptest::num::u8::ANY), 0..30),
            max_chain in proptest::sample::select(vec![1usize, 8, 256]),
        ) {
            assert_reference_symbols(&sip_like(&window), [&sip_like(&first), &sip_like(&second)], max_chain);
        }
    }

    #[test]
    fn corpus_symbols_are_within_a_byte_of_the_cheapest_of_full_searches() {
        // Each corpus flow through one kept finder, as a compartment sends
        // it: its history the dictionary's tail and the messages before.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
        let mut flows: Vec<_> = std::fs::read_dir(&dir).expect("corpus").filter_map(|e| Some(e.ok()?.path())).collect();
        flows.sort();
        let params = DeflateParams::default();
        let (mut messages, mut sent, mut cheapest) = (0, 0, 0);
        for flow in flows.iter().filter(|p| p.is_dir()) {
            let mut names: Vec<_> =
                std::fs::read_dir(flow).expect("flow").filter_map(|e| Some(e.ok()?.path())).collect();
            names.sort();
            let d = sigcomp::dict::SIP_SDP;
            let mut window = d[d.len() - 4096..].to_vec();
            let mut finder = MatchFinder::default();
            for name in names.iter().filter(|p| p.extension().is_some_and(|x| x == "sip")) {
                let message = std::fs::read(name).expect("message");
                finder.prepare(&window);
                let mut out = Vec::new();
                encode_after(&mut finder, &message, window.len(), &params, &mut out);
                // A copy that reaches its limit is continued without a
                // search, so a shorter length may be weighed at a farther
                // distance than a full search finds.
                let least = reference_bits(&window, &message, &params).div_ceil(8) as usize;
                assert!(out.len() <= least + 1, "{}: {} bytes, {least} at least", name.display(), out.len());
                (sent, cheapest) = (sent + out.len(), cheapest + least);
                assert_eq!(decode(&window, &out).as_deref(), Some(&message[..]));
                window.extend_from_slice(&message);
                window.drain(..message.len());
                messages += 1;
            }
        }
        assert!(messages > 50, "{messages} corpus messages");
        assert!(sent <= cheapest + cheapest / 1000, "{sent} bytes sent, {cheapest} at least");
    }

    #[test]
    fn length_and_distance_codes_follow_rfc1951_tables() {
        // RFC 1951 §3.2.5 table rows.
        assert_eq!(length_symbol(3), (257, 0, 0));
        assert_eq!(length_symbol(10), (264, 0, 0));
        assert_eq!(length_symbol(11), (265, 1, 0));
        assert_eq!(length_symbol(12), (265, 1, 1));
        assert_eq!(length_symbol(19), (269, 2, 0));
        assert_eq!(length_symbol(227), (284, 5, 0));
        assert_eq!(length_symbol(257), (284, 5, 30));
        assert_eq!(length_symbol(258), (285, 0, 0));
        assert_eq!(distance_code(1), (0, 0, 0));
        assert_eq!(distance_code(4), (3, 0, 0));
        assert_eq!(distance_code(5), (4, 1, 0));
        assert_eq!(distance_code(7), (5, 1, 0));
        assert_eq!(distance_code(24577), (29, 13, 0));
        assert_eq!(distance_code(32768), (29, 13, 8191));
        assert_eq!(literal_length_code(0), (0x30, 8));
        assert_eq!(literal_length_code(144), (0x190, 9));
        assert_eq!(literal_length_code(256), (0, 7));
        assert_eq!(literal_length_code(287), (0xC7, 8));
    }

    #[test]
    fn every_length_and_distance_round_trips() {
        // A window of distinct-ish bytes and messages that copy every
        // length at a chosen distance.
        let window: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        for len in [3, 4, 10, 11, 17, 18, 130, 131, 257, 258] {
            for distance in [1usize, 2, 4, 5, 8, 9, 1024, 1025, 4096] {
                let start = window.len() - distance;
                let msg: Vec<u8> = (0..len).map(|k| window[start + k % distance]).collect();
                let mut out = Vec::new();
                encode(&window, &msg, &DeflateParams::default(), &mut out);
                assert_eq!(decode(&window, &out).as_deref(), Some(&msg[..]), "len {len} distance {distance}");
            }
        }
    }

    #[test]
    fn sip_text_compresses() {
        let msg = b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP pc33.example.com\r\nVia: SIP/2.0/UDP bigbox3.example.com\r\n";
        let mut out = Vec::new();
        encode(&[0; 256], msg, &DeflateParams::default(), &mut out);
        assert!(out.len() < msg.len());
        assert_eq!(decode(&[0; 256], &out).as_deref(), Some(&msg[..]));
        // The complete block: header BFINAL=1, BTYPE=01 in the first bits.
        let block = rfc1951_block(&[0; 256], msg, &DeflateParams::default());
        assert!(block.len() >= out.len());
        assert_eq!(block[0] & 0b111, 0b011);
    }

    #[test]
    fn min_token_bytes_is_a_lower_bound() {
        // The cheapest message per byte: one byte repeated, copies of 258.
        for len in [0usize, 1, 258, 1000, 5000] {
            let msg = vec![b'a'; len];
            let mut out = Vec::new();
            encode(b"a", &msg, &DeflateParams::default(), &mut out);
            assert!(min_token_bytes(len) <= out.len(), "{len}: {} > {}", min_token_bytes(len), out.len());
        }
        assert_eq!(min_token_bytes(5000), 31);
    }

    #[test]
    fn decode_rejects_undefined_codes() {
        // 8-bit code 11000110 (symbol 286) is not a fixed code: sent most
        // significant bit first into bits 0..8 of the byte.
        let code = 0b1100_0110u8.reverse_bits();
        assert_eq!(decode(&[], &[code, 0xFF]), None);
    }
}
