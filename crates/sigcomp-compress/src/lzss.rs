//! The modified LZSS encoder of the 2005 SigComp performance thesis §7.8.4–7.8.5: literals and
//! (offset, length) pairs over a circular window that already holds the
//! dictionary, earlier messages and shared states.
//!
//! Matches are found with hash chains keyed by the next three bytes
//! (the 2005 SigComp performance thesis §7.8.5 found hashing 64 % faster than a linear search). The
//! chains are kept between messages in a [`MatchFinder`]: when the next
//! message's window is the previous window plus what the previous message
//! added to the buffer (the usual case), only the new bytes are hashed.
//! The parse is optimal for the token costs (a shortest path over the
//! message: every token's cost is fixed, so the longest match at each
//! position and its prefixes are all the choices there are).
//!
//! Token format (most significant bit first, as `asm/lzss.asm` reads it):
//! `0` + 7 bits: a literal byte below 128 (SIP is ASCII); `10` + 7 bits: a
//! literal byte 128..=255; `11` + `offset_bits` of (offset − 1) + the
//! length's prefix code ([`length_code`]). The 2005 SigComp performance thesis §7.8.4 spends 9 bits
//! on every literal and a fixed field on the length; these codes cost less
//! on SIP.

mod format;
mod match_finder;
mod parse;

pub use format::{length_code, Effort, LzssFormat, NICE_LEN};
pub use match_finder::{HistoryMark, MatchFinder};

use crate::bits::BitWriter;

/// Encodes `message` as LZSS tokens against `window` (the circular buffer
/// contents in chronological order, oldest first; its bytes are all valid
/// history) with a fresh match finder. An empty window stands for an
/// unbounded linear history (tests).
pub fn encode(window: &[u8], message: &[u8], format: LzssFormat, effort: Effort, out: &mut BitWriter) {
    let mut f = MatchFinder::default();
    f.prepare(window);
    let size = if window.is_empty() { usize::MAX } else { window.len() };
    f.encode(message, size, format, effort, out);
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
    // Like INPUT-HUFFMAN: too few bits left for a whole code ends the
    // message.
    while let Some(first) = read(&mut bit, 8) {
        if first < 128 {
            hist.push(first as u8);
            continue;
        }
        let Some(b9) = read(&mut bit, 1) else { break };
        let code9 = (first << 1) | b9;
        if code9 < 384 {
            hist.push((code9 - 256 + 128) as u8);
            continue;
        }
        let extra = usize::from(format.offset_bits) - 7;
        let Some(rest) = read(&mut bit, extra) else { break };
        let off = ((((code9 - 384) as usize) << extra) | rest as usize) + 1;
        let len = if read(&mut bit, 1)? == 0 {
            read(&mut bit, 2)? as usize + 3
        } else if read(&mut bit, 1)? == 0 {
            read(&mut bit, 4)? as usize + 7
        } else {
            read(&mut bit, 8)? as usize + 23
        };
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
mod tests;
