//! A byte-oriented LZ77 for SigComp, decoded by `asm/lz77.asm`.
//!
//! Token format (RFC 4464 §4.1.1 is the model: whole bytes, strings copied
//! into the circular buffer; but the copies are relative and literals come
//! in runs), each token starting with one control byte `c`:
//! * `c` in `0x00..=0x7F`: a literal run, the next `c + 1` bytes (1..=128);
//! * `c` in `0x80..=0xFF`: a match of `(c & 0x7F) + 4` bytes (4..=131)
//!   copied from `offset` bytes back; the offset follows in 2 bytes, most
//!   significant first (1..=buffer size).
//!
//! The message ends after its last token. A match costs 3 bytes and a
//! literal one byte plus one per run of up to 128, so the encoder chooses
//! its tokens by a shortest-path parse over those costs.

use crate::chains::{Match, MatchFinder, ParseScratch};

/// Shortest match the format can express (a 3-byte match would cost as
/// much as its literals).
pub const MIN_MATCH: usize = 4;
/// Longest match one token expresses; longer ones take several tokens.
pub const MAX_MATCH: usize = 131;
/// Longest literal run one control byte announces.
pub const MAX_RUN: usize = 128;
/// Largest offset the 2-byte field holds.
pub const MAX_OFFSET: usize = 65535;

/// A lower bound on the bytes of any tokens for a message of `len` bytes:
/// no token costs less per byte covered than a match of [`MAX_MATCH`]
/// bytes (3 bytes).
pub fn min_token_bytes(len: usize) -> usize {
    len * 3 / MAX_MATCH
}

/// Encoder settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lz77Params {
    /// How many earlier positions with the same 3-byte hash are compared
    /// per message position (more: slower, sometimes smaller).
    pub max_chain: usize,
}

impl Default for Lz77Params {
    fn default() -> Self {
        Lz77Params { max_chain: 256 }
    }
}

/// Encodes `message` as LZ77 tokens against `window` (the circular buffer
/// in chronological order, oldest first: exactly buffer-size bytes) and
/// appends them to `out`.
pub fn encode(window: &[u8], message: &[u8], params: &Lz77Params, out: &mut Vec<u8>) {
    let mut finder = MatchFinder::default();
    finder.prepare(window);
    encode_after(&mut finder, message, window.len(), params, out);
}

/// Encodes `message` after `finder`'s history (whose last `buffer_size`
/// bytes are the circular buffer), appends it to the history and the
/// tokens to `out`.
pub fn encode_after(
    finder: &mut MatchFinder,
    message: &[u8],
    buffer_size: usize,
    params: &Lz77Params,
    out: &mut Vec<u8>,
) {
    let n = message.len();
    let start = finder.history().len();
    finder.append(message);
    // A copy may reach the oldest byte of the buffer, `buffer size` back
    // (RFC 3320 §8.4: COPY-OFFSET wraps in the circular buffer).
    let reach = buffer_size.min(MAX_OFFSET);

    // Shortest path over message positions. Two costs per position: the
    // cheapest encoding of message[..i] that ends with a match (or is
    // empty), `after_match`, and the cheapest that ends inside a literal
    // run, `in_run` (with the length of that run, since a run of 128 needs
    // a new control byte).
    const INF: u32 = u32::MAX / 2;
    let mut after_match = vec![(INF, Step::None); n + 1];
    let mut in_run = vec![(INF, Step::None, 0usize); n + 1];
    after_match[0].0 = 0;
    // Every match costs 3 bytes whatever its length, so the matches at i
    // reach every end in i + MIN_MATCH..=i + longest at the same cost: the
    // cheapest state ending with a match at j is the cheapest of the
    // ranges covering j (the earliest start on a tie, as relaxing each
    // length in order of i would choose). Ranges wait in `waiting` until
    // they begin, then in `covering` until they end.
    let mut scratch = finder.take_scratch();
    let ParseScratch { matches, matches_at, .. } = &mut scratch;
    matches.clear();
    matches_at.clear();
    let mut from_run_at = vec![false; n];
    // Ranges are added in order of start, so they begin in that order:
    // the ones before `begun` have begun. There is at most one range per
    // position, and one token, so each of these vectors is allocated
    // once, at its largest.
    let mut waiting: Vec<(u64, usize)> = Vec::with_capacity(n);
    let mut begun = 0;
    let mut covering = Covering { ranges: Vec::with_capacity(n), front: 0 };
    for i in 0..=n {
        while let Some(&(key, end)) = waiting.get(begun).filter(|&&(k, _)| Covering::start(k) + MIN_MATCH <= i) {
            covering.insert(key, end);
            begun += 1;
        }
        if let Some(k) = covering.least(i) {
            let (cost, from) = (Covering::cost(k), Covering::start(k));
            if cost < after_match[i].0 {
                let (len, from_run) = (i - from, from_run_at[from]);
                let m = matches[matches_at[from] as usize..]
                    .iter()
                    .find(|m: &&Match| m.len >= len)
                    .expect("a covering match");
                after_match[i] = (cost, Step::Copy { len: len as u16, distance: m.distance as u16, from_run });
            }
        }
        if i == n {
            break;
        }
        let (am, _) = after_match[i];
        let (ir, _, run) = in_run[i];
        // A literal: opens a run (2 bytes with its control byte) or joins one.
        let open = am.saturating_add(2);
        let join = if run == MAX_RUN { ir.saturating_add(2) } else { ir.saturating_add(1) };
        let (cost, from_run, new_run) =
            if join <= open && ir < INF { (join, true, run % MAX_RUN + 1) } else { (open, false, 1) };
        if cost < in_run[i + 1].0 {
            in_run[i + 1] = (cost, Step::Literal { from_run }, new_run);
        }
        // Matches: 3 bytes each, from the cheaper state.
        let (base, from_run) = if ir < am { (ir, true) } else { (am, false) };
        matches_at.push(matches.len() as u32);
        // Every copy costs 3 bytes, so only the longest length counts: a
        // copy that reaches the limit is continued without a search.
        let found = finder.push_matches(start + i, reach, MAX_MATCH, params.max_chain, true, matches);
        from_run_at[i] = from_run;
        let longest = if found > 0 { matches[matches.len() - 1].len } else { 0 };
        if longest >= MIN_MATCH {
            waiting.push((Covering::key(base + 3, i), i + longest));
        }
    }
    finder.keep_scratch(scratch);
    // Walk back from the cheaper end state, then emit in order.
    let tokens = walk_back(&after_match, &in_run, n);
    write_tokens(&tokens, message, out);
}

/// How the cheapest encoding of a message prefix ends.
#[derive(Clone, Copy)]
enum Step {
    None,
    /// A literal after the state `from_run` (true: inside a run) at i − 1.
    Literal {
        from_run: bool,
    },
    /// A match of `len` from `distance` after the cheaper state at i − len.
    Copy {
        len: u16,
        distance: u16,
        from_run: bool,
    },
}

/// One token of the chosen encoding.
enum Token {
    Literal,
    Copy { len: usize, distance: usize },
}

/// The tokens of the cheapest encoding of a message of `n` bytes, from
/// the states of the shortest-path pass.
fn walk_back(after_match: &[(u32, Step)], in_run: &[(u32, Step, usize)], n: usize) -> Vec<Token> {
    let mut tokens = Vec::with_capacity(n);
    let mut i = n;
    let mut in_a_run = in_run[n].0 < after_match[n].0;
    while i > 0 {
        if in_a_run {
            let Step::Literal { from_run } = in_run[i].1 else { unreachable!("a run state ends with a literal") };
            tokens.push(Token::Literal);
            in_a_run = from_run;
            i -= 1;
        } else {
            let Step::Copy { len, distance, from_run } = after_match[i].1 else {
                unreachable!("a match state ends with a match")
            };
            tokens.push(Token::Copy { len: usize::from(len), distance: usize::from(distance) });
            in_a_run = from_run;
            i -= usize::from(len);
        }
    }
    tokens.reverse();
    tokens
}

/// Writes `tokens` of `message`: a copy as its length and distance, a run
/// of up to 128 literals after its control byte.
fn write_tokens(tokens: &[Token], message: &[u8], out: &mut Vec<u8>) {
    let mut pos = 0;
    let mut t = 0;
    while t < tokens.len() {
        match tokens[t] {
            Token::Copy { len, distance } => {
                out.push(0x80 | (len - MIN_MATCH) as u8);
                out.extend_from_slice(&(distance as u16).to_be_bytes());
                pos += len;
                t += 1;
            }
            Token::Literal => {
                let mut run = 0;
                while t < tokens.len() && run < MAX_RUN && matches!(tokens[t], Token::Literal) {
                    run += 1;
                    t += 1;
                }
                out.push((run - 1) as u8);
                out.extend_from_slice(&message[pos..pos + run]);
                pos += run;
            }
        }
    }
    debug_assert_eq!(pos, message.len());
}

/// The ranges of match ends that have begun, for the least key (cost,
/// then start) among those covering a position: only the ones no other
/// range beats for the rest of their span (a range with a smaller key
/// that ends no earlier), so ordered by key they end in order too, the
/// least is at the front and the expired ones go from the front. Keys
/// pack cost << 32 | start; a key is unique (one range per start).
#[derive(Default)]
struct Covering {
    /// (key, last end), keys and ends ascending, from `front` on (the
    /// ones before it have expired: a plain vector, as positions are
    /// asked in order and a message is short).
    ranges: Vec<(u64, usize)>,
    front: usize,
}

impl Covering {
    fn key(cost: u32, start: usize) -> u64 {
        u64::from(cost) << 32 | start as u64
    }

    fn cost(key: u64) -> u32 {
        (key >> 32) as u32
    }

    fn start(key: u64) -> usize {
        (key as u32) as usize
    }

    /// Adds a range that begins now (after every range added before).
    fn insert(&mut self, key: u64, end: usize) {
        let (r, front) = (&mut self.ranges, self.front);
        // New ranges usually cost more than the ones before.
        let at = if r.len() == front || r[r.len() - 1].0 < key {
            r.len()
        } else {
            front + r[front..].partition_point(|&(k, _)| k < key)
        };
        // The range before has the latest end of those with smaller keys.
        if at > front && r[at - 1].1 >= end {
            return;
        }
        // The ones after with no later end never win again.
        let mut beaten = at;
        while beaten < r.len() && r[beaten].1 <= end {
            beaten += 1;
        }
        if beaten == r.len() {
            r.truncate(at);
            r.push((key, end));
        } else {
            r.drain(at..beaten);
            r.insert(at, (key, end));
        }
    }

    /// The least key among the ranges covering `position` (positions are
    /// asked in order).
    fn least(&mut self, position: usize) -> Option<u64> {
        while self.ranges.get(self.front).is_some_and(|&(_, end)| end < position) {
            self.front += 1;
        }
        self.ranges.get(self.front).map(|&(k, _)| k)
    }
}

/// Decodes LZ77 tokens against `window` (a reference for tests; the real
/// decoder is the bytecode). `None` for malformed input.
pub fn decode(window: &[u8], tokens: &[u8]) -> Option<Vec<u8>> {
    let w = window.len();
    let mut hist = window.to_vec();
    let mut i = 0;
    while i < tokens.len() {
        let c = usize::from(tokens[i]);
        i += 1;
        if c < 0x80 {
            let run = tokens.get(i..i + c + 1)?;
            hist.extend_from_slice(run);
            i += c + 1;
        } else {
            let off = tokens.get(i..i + 2)?;
            let distance = usize::from(u16::from_be_bytes([off[0], off[1]]));
            i += 2;
            // The circular buffer holds the last `w` bytes.
            if distance == 0 || distance > w {
                return None;
            }
            for _ in 0..(c & 0x7F) + MIN_MATCH {
                let b = hist[hist.len() - distance];
                hist.push(b);
            }
        }
    }
    Some(hist.split_off(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(window: &[u8], msg: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(window, msg, &Lz77Params::default(), &mut out);
        assert_eq!(decode(window, &out).as_deref(), Some(msg));
        out
    }

    #[test]
    fn literal_runs_and_matches() {
        let msg = b"INVITE sip:bob@example.com SIP/2.0\r\nTo: <sip:bob@example.com>\r\n";
        let out = round_trip(&[0; 64], msg);
        assert!(out.len() < msg.len(), "{} >= {}", out.len(), msg.len());
        // Empty message: no tokens.
        assert!(round_trip(&[0; 64], b"").is_empty());
        // 300 distinct-ish literals need three runs (128 + 128 + 44).
        let lits: Vec<u8> = (0..300u32).map(|i| (i * 7 % 251) as u8).collect();
        let out = round_trip(&[1; 16], &lits);
        assert_eq!(out.len(), 300 + 3);
    }

    #[test]
    fn window_copies_and_long_matches() {
        let mut window = vec![0u8; 1000];
        let text = b"Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds\r\n";
        window[500..500 + text.len()].copy_from_slice(text);
        let out = round_trip(&window, text);
        // One match of 68 bytes: 3 bytes.
        assert_eq!(out.len(), 3);
        // A run of 1000 equal bytes: matches of 131 with offset 1.
        let out = round_trip(&[5u8; 8], &[5u8; 1000]);
        assert_eq!(out.len(), 3 * 1000usize.div_ceil(MAX_MATCH));
    }

    #[test]
    fn copies_reach_the_oldest_window_byte() {
        // The only earlier copy of the text starts at the oldest byte, a
        // full buffer size back.
        let text = b"abcdefghijklmnopqrstuvwxyz";
        let mut window = text.to_vec();
        window.extend(std::iter::repeat_n(b'-', 100));
        let out = round_trip(&window, text);
        assert_eq!(out, [0x80 | (26 - 4) as u8, 0, 126]);
    }

    #[test]
    fn min_token_bytes_is_a_lower_bound() {
        for len in [0usize, 1, 131, 1000, 5000] {
            let out = round_trip(&[5u8; 8], &vec![5u8; len]);
            assert!(min_token_bytes(len) <= out.len(), "{len}");
        }
        // Tight for whole matches of MAX_MATCH.
        assert_eq!(min_token_bytes(131 * 7), round_trip(&[5u8; 8], &[5u8; 131 * 7]).len());
    }

    #[test]
    fn covering_gives_the_least_key_of_the_ranges_over_each_position() {
        // Ranges in order of start with pseudo-random costs and lengths,
        // against the least key over all ranges covering each position.
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        for _ in 0..200 {
            let n = 300;
            let mut naive = vec![None; n + 1];
            let mut ranges = Vec::new();
            for i in 0..n - MIN_MATCH {
                if next(3) > 0 {
                    let end = (i + MIN_MATCH + next(MAX_MATCH as u64) as usize).min(n);
                    let key = Covering::key((next(40) + i as u64 / 4) as u32, i);
                    ranges.push((key, end));
                    for k in &mut naive[i + MIN_MATCH..=end] {
                        *k = Some(key.min(k.unwrap_or(u64::MAX)));
                    }
                }
            }
            let mut covering = Covering::default();
            let mut pending = ranges.iter().peekable();
            for (j, want) in naive.iter().enumerate() {
                while let Some(&&(key, end)) = pending.peek().filter(|&&&(k, _)| Covering::start(k) + MIN_MATCH <= j) {
                    covering.insert(key, end);
                    pending.next();
                }
                assert_eq!(covering.least(j), *want, "position {j}");
            }
        }
    }

    #[test]
    fn decode_rejects_truncated_and_bad_offsets() {
        assert_eq!(decode(&[0; 4], &[3, b'a']), None);
        assert_eq!(decode(&[0; 4], &[0x80, 0]), None);
        assert_eq!(decode(&[0; 4], &[0x80, 0, 5]), None);
        assert_eq!(decode(&[0; 4], &[0x80, 0, 0]), None);
    }
}
