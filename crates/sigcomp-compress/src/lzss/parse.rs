//! Choosing the tokens from the matches at every position (an optimal
//! parse, or the greedy one), and writing them.

use super::format::{length_code, LzssFormat};
use crate::bits::BitWriter;

/// Buffers [`MatchFinder::encode`] reuses from one message to the next.
#[derive(Debug, Clone, Default)]
pub(super) struct Scratch {
    /// The longest match at each position.
    pub(super) matches: Vec<(usize, usize)>,
    /// The fewest bits for the rest of the message from each position.
    pub(super) cost: Vec<u32>,
    /// The first rise of `cost` from each position.
    pub(super) next_rise: Vec<u32>,
    /// The length taken at each position, 0 for a literal.
    pub(super) choice: Vec<u16>,
}

/// Match lengths that cost the same number of bits: the buckets of
/// [`length_code`] (3, 6 and 10 bits).
pub(super) const LENGTH_BUCKETS: [(usize, usize); 3] = [(3, 6), (7, 22), (23, usize::MAX)];

/// The tokens, (length, distance) with length 0 for a literal, of the
/// cheapest parse of `message` given the longest match at each position
/// (a match's prefixes of 3 bytes or more are copies too).
///
/// A shortest path from the end: `cost[i]` is the fewest bits for
/// `message[i..]`; at `i` a literal or a match of any length
/// `3..=matches[i].0` can be taken. Ties go to the longer token (a match
/// over a literal). The cost of a match depends only on its length bucket,
/// so within a bucket the cheapest choice is the `l` with the smallest
/// `cost[i + l]`, the largest such `l` on a tie. `cost` usually never
/// increases along the message (a match of `L` at `j` is a match of `L - 1`
/// at `j + 1`, no dearer), and then that is the bucket's last length: one
/// comparison per bucket instead of one per length. Where `cost` does rise
/// somewhere in a bucket's range (two literals cheaper than a 3-byte match
/// at 9 or 10 offset bits, or a match the bounded chain search missed), the
/// bucket is scanned length by length, so the result is always the exact
/// optimum and the same tokens as scanning every length.
#[cfg(test)]
pub(super) fn optimal_parse(message: &[u8], matches: &[(usize, usize)], format: LzssFormat) -> Vec<(usize, usize)> {
    let mut scratch = Scratch { matches: matches.to_vec(), ..Scratch::default() };
    optimal_choice(message, format, &mut scratch);
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < message.len() {
        let len = usize::from(scratch.choice[i]);
        tokens.push(if len == 0 { (0, 0) } else { (len, matches[i].1) });
        i += len.max(1);
    }
    tokens
}

/// [`optimal_parse`]'s choice at every position (`scratch.choice`: the
/// length taken, 0 for a literal), from `scratch.matches`.
pub(super) fn optimal_choice(message: &[u8], format: LzssFormat, scratch: &mut Scratch) {
    let n = message.len();
    let Scratch { matches, cost, next_rise, choice } = scratch;
    // Compact types (bits fit u32 for any message a UDVM can take; a length
    // is at most 258; positions fit u32). The buffers keep the last
    // message's values: every entry below n is written (from n - 1 down)
    // before it is read, so only the ends are set here.
    // next_rise[k]: the smallest j >= k with cost[j] < cost[j + 1]
    // (u32::MAX if none), so cost is non-increasing on k..=next_rise[k].
    for (v, fill) in [(&mut *cost, 0), (&mut *next_rise, u32::MAX)] {
        v.truncate(n + 1);
        v.resize(n + 1, fill);
        v[n] = fill;
    }
    choice.truncate(n);
    choice.resize(n, 0);
    let buckets = LENGTH_BUCKETS.map(|(lo, hi)| (lo, hi, format.match_bits(lo) as u32));
    for i in (0..n).rev() {
        let mut best = LzssFormat::literal_bits(message[i]) as u32 + cost[i + 1];
        let mut best_len = 0;
        let len = matches[i].0;
        for &(lo, hi, bits) in &buckets {
            if lo > len {
                break;
            }
            let hi = hi.min(len);
            if next_rise[i + lo] as usize >= i + hi {
                // cost is non-increasing on i+lo..=i+hi.
                let c = bits + cost[i + hi];
                if c <= best {
                    best = c;
                    best_len = hi;
                }
            } else {
                for l in lo..=hi {
                    let c = bits + cost[i + l];
                    if c <= best {
                        best = c;
                        best_len = l;
                    }
                }
            }
        }
        cost[i] = best;
        choice[i] = best_len as u16;
        next_rise[i] = if best < cost[i + 1] { i as u32 } else { next_rise[i + 1] };
    }
}

/// Writes the tokens `choice` picks ([`optimal_choice`]) as
/// [`write_tokens`] does.
pub(super) fn write_choice(
    message: &[u8],
    matches: &[(usize, usize)],
    choice: &[u16],
    format: LzssFormat,
    out: &mut BitWriter,
) {
    let ob = u32::from(format.offset_bits);
    let mut i = 0;
    while i < message.len() {
        let len = usize::from(choice[i]);
        if len == 0 {
            let b = message[i];
            if b < 128 {
                out.write(u32::from(b), 8);
            } else {
                out.write(256 + u32::from(b - 128), 9);
            }
            i += 1;
        } else {
            out.write((3u32 << ob) | (matches[i].1 as u32 - 1), 2 + ob);
            let (code, bits) = length_code(len);
            out.write(code, bits);
            i += len;
        }
    }
}

/// The longest match at each position, else a literal.
pub(super) fn greedy_parse(matches: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < matches.len() {
        let (len, dist) = matches[i];
        if len == 0 {
            tokens.push((0, 0));
            i += 1;
        } else {
            tokens.push((len, dist));
            i += len;
        }
    }
    tokens
}

/// Writes the tokens in the format `asm/lzss.asm` reads (module doc).
pub(super) fn write_tokens(message: &[u8], tokens: &[(usize, usize)], format: LzssFormat, out: &mut BitWriter) {
    let mut i = 0;
    for &(len, dist) in tokens {
        if len == 0 {
            let b = message[i];
            if b < 128 {
                out.write(u32::from(b), 8);
            } else {
                out.write(256 + u32::from(b - 128), 9);
            }
            i += 1;
        } else {
            let ob = u32::from(format.offset_bits);
            out.write((3u32 << ob) | (dist as u32 - 1), 2 + ob);
            let (code, bits) = length_code(len);
            out.write(code, bits);
            i += len;
        }
    }
}
