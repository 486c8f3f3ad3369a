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

use crate::bits::BitWriter;

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

const HASH_BITS: u32 = 12;
const HASH_SIZE: usize = 1 << HASH_BITS;
const NIL: u32 = u32::MAX;

#[inline]
fn hash3(b: &[u8]) -> usize {
    // Multiplicative (Fibonacci) hashing of the next three bytes, the key
    // the 2005 SigComp performance thesis §7.8.5 uses (one bounds check for
    // the three).
    let b = &b[..3];
    let k = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
    (k.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize & (HASH_SIZE - 1)
}

/// A point in the history to return to ([`MatchFinder::mark`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryMark {
    len: usize,
    hashed: usize,
}

/// A linear copy of the history (everything written to the circular
/// buffer, oldest first) with hash chains over it, kept between messages.
#[derive(Debug)]
pub struct MatchFinder {
    data: Vec<u8>,
    /// A fixed-size array, so a hash indexes it without a bounds check.
    head: Box<[u32; HASH_SIZE]>,
    prev: Vec<u32>,
    /// Positions below this are in the chains.
    hashed: usize,
    /// Whole rebuilds done (for tests and reports).
    pub rebuilds: usize,
    /// The encoder's buffers, kept for the next message.
    scratch: Scratch,
}

/// Buffers [`MatchFinder::encode`] reuses from one message to the next.
#[derive(Debug, Clone, Default)]
struct Scratch {
    /// The longest match at each position.
    matches: Vec<(usize, usize)>,
    /// The fewest bits for the rest of the message from each position.
    cost: Vec<u32>,
    /// The first rise of `cost` from each position.
    next_rise: Vec<u32>,
    /// The length taken at each position, 0 for a literal.
    choice: Vec<u16>,
}

impl Default for MatchFinder {
    fn default() -> Self {
        MatchFinder {
            data: Vec::new(),
            head: Box::new([NIL; HASH_SIZE]),
            prev: Vec::new(),
            hashed: 0,
            rebuilds: 0,
            scratch: Scratch::default(),
        }
    }
}

impl Clone for MatchFinder {
    /// A copy with room to grow ([`with_room_to_grow`]); the encoder's
    /// buffers are not copied.
    fn clone(&self) -> Self {
        MatchFinder {
            data: with_room_to_grow(&self.data, self.data.len()),
            head: self.head.clone(),
            prev: with_room_to_grow(&self.prev, self.data.len()),
            hashed: self.hashed,
            rebuilds: self.rebuilds,
            scratch: Scratch::default(),
        }
    }
}

/// A copy of a finder's history (`history_len` bytes) or of its chain
/// links, with room to grow to the bound the finders slide them back from
/// (twice the window) plus a message: a new compartment's finder, cloned
/// from a template over its fresh window, then does not reallocate (and
/// copy) them during its first messages.
pub(crate) fn with_room_to_grow<T: Copy>(items: &[T], history_len: usize) -> Vec<T> {
    /// Room for a message beyond twice the window.
    const SLACK: usize = 2048;
    let mut v = Vec::with_capacity(2 * history_len.max(1024) + SLACK);
    v.extend_from_slice(items);
    v
}

impl MatchFinder {
    /// A finder whose history is `window`, every position hashed: a
    /// template that new compartments with the same fresh window clone
    /// (a copy of the chains) instead of hashing the same bytes again.
    pub fn over(window: &[u8]) -> MatchFinder {
        let mut f = MatchFinder::default();
        f.prepare(window);
        f.mark();
        f
    }

    /// Makes the history end with `window` (the circular buffer in
    /// chronological order). If the history already ends with it (a few
    /// differing bytes, such as the shared-state header the bytecode writes
    /// over the message start, are patched in place) nothing is rehashed;
    /// otherwise the chains are rebuilt over the window.
    pub fn prepare(&mut self, window: &[u8]) {
        let w = window.len();
        let l = self.data.len();
        if l >= w {
            let tail = &mut self.data[l - w..];
            // The usual case, equal, costs one memcmp; counting is for the rest.
            let same = *tail == *window || {
                let diffs = tail.iter().zip(window).filter(|(a, b)| a != b).count();
                // Stale chain entries are harmless: every candidate is
                // compared byte by byte before use.
                if diffs <= 16 {
                    tail.copy_from_slice(window);
                }
                diffs <= 16
            };
            if same {
                // History beyond twice the window is dropped, chains kept.
                if l > 2 * w.max(1024) {
                    self.slide(l - w);
                }
                return;
            }
        }
        self.rebuilds += 1;
        self.data.clear();
        self.data.extend_from_slice(window);
        self.head.fill(NIL);
        self.prev.clear();
        self.hashed = 0;
    }

    /// Forgets the oldest `drop` bytes of the history: the chains keep the
    /// positions after them, renumbered, and lose the ones before — the
    /// chains a rebuild over the rest would give, without hashing it again.
    fn slide(&mut self, drop: usize) {
        let d = u32::try_from(drop).unwrap_or(u32::MAX);
        let shift = |p: &mut u32| *p = if *p == NIL || *p < d { NIL } else { *p - d };
        self.data.drain(..drop.min(self.data.len()));
        self.head.iter_mut().for_each(shift);
        self.prev.drain(..drop.min(self.prev.len()));
        self.prev.iter_mut().for_each(shift);
        self.hashed = self.hashed.saturating_sub(drop);
    }

    /// Appends bytes the bytecode writes to the buffer before the message
    /// (a shared state, the announced-state header).
    pub fn append(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
    }

    /// Where the history ends now, for [`MatchFinder::rollback`]. The
    /// history so far is hashed first, so trials share its chains.
    pub fn mark(&mut self) -> HistoryMark {
        self.hash_up_to(self.data.len());
        HistoryMark { len: self.data.len(), hashed: self.hashed }
    }

    /// Forgets everything appended since `mark` (a trial encoding), chains
    /// included, as if it had never been added: the head entries are
    /// restored in reverse order of insertion (each insertion saved the old
    /// head in its own link).
    pub fn rollback(&mut self, mark: HistoryMark) {
        if mark.len > self.data.len() || mark.hashed > self.hashed {
            return;
        }
        for p in (mark.hashed..self.hashed).rev() {
            self.head[hash3(&self.data[p..])] = self.prev[p];
        }
        self.hashed = mark.hashed;
        self.data.truncate(mark.len);
        self.prev.truncate(mark.len);
    }

    /// Appends `bytes` to the history and hashes it, as [`MatchFinder::encode`]
    /// would, without encoding (the message of a trial chosen after a
    /// rollback).
    pub fn append_hashed(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
        self.hash_up_to(self.data.len());
    }

    #[inline(always)]
    fn hash_up_to(&mut self, end: usize) {
        let p = self.hashed;
        if end == p + 1 && p + 3 <= self.data.len() && p < self.prev.len() {
            // One position, the encoder's step before a search: inline and
            // without the set-up of the batch below, which cost more than
            // the insertion itself.
            let h = hash3(&self.data[p..p + 3]);
            self.prev[p] = self.head[h];
            self.head[h] = p as u32;
            self.hashed = end;
            return;
        }
        self.hash_batch_up_to(end);
    }

    /// [`MatchFinder::hash_up_to`] for any number of positions.
    #[inline(never)]
    fn hash_batch_up_to(&mut self, end: usize) {
        let end = end.min(self.data.len().saturating_sub(2));
        if self.prev.len() < self.data.len() {
            self.prev.resize(self.data.len(), NIL);
        }
        if self.hashed >= end {
            return;
        }
        let from = self.hashed;
        let head = &mut self.head;
        for ((p, link), key) in (from..end).zip(&mut self.prev[from..end]).zip(self.data[from..end + 2].windows(3)) {
            let h = hash3(key);
            *link = head[h];
            head[h] = p as u32;
        }
        self.hashed = end;
    }

    /// [`MatchFinder::longest`] where it needs no chain search: too near the
    /// end for a match, or inside a long match that continues.
    #[inline]
    fn without_search(
        &self,
        pos: usize,
        max_len: usize,
        reach: usize,
        effort: Effort,
        known: (usize, usize),
    ) -> Option<(usize, usize)> {
        let data = &self.data;
        if pos + LzssFormat::MIN_MATCH > data.len() {
            return Some((0, 0));
        }
        let limit = (data.len() - pos).min(max_len);
        let oldest = pos.saturating_sub(reach);
        if known.0 >= effort.nice_len.max(LzssFormat::MIN_MATCH) && known.1 <= pos - oldest {
            // Inside a long match: continue it (its first known.0 bytes are
            // already known to match) without a search.
            let (k, c) = (known.0.min(limit), pos - known.1);
            return Some((k + common_prefix(&data[c + k..c + limit], &data[pos + k..pos + limit]), known.1));
        }
        None
    }

    /// Longest match for position `pos` among the earlier `reach` bytes:
    /// (length, distance), length 0 if none of at least 3 bytes.
    /// `known` = (k, d): the bytes at distance d are already known to match
    /// for k bytes (the previous position's match, one byte shorter), so
    /// that candidate is compared from byte k on. Inside a long match this
    /// skips nearly all of the extension and changes no result.
    fn longest(
        &self,
        pos: usize,
        reach: usize,
        max_len: usize,
        effort: Effort,
        known: (usize, usize),
    ) -> (usize, usize) {
        if let Some(m) = self.without_search(pos, max_len, reach, effort, known) {
            return m;
        }
        let data = &self.data;
        let limit = (data.len() - pos).min(max_len);
        let oldest = pos.saturating_sub(reach);
        let max_chain = effort.max_chain;
        let (mut best_len, mut best_dist) = (0, 0);
        let mut cand = self.head[hash3(&data[pos..])];
        let mut last = pos;
        let mut steps = 0;
        while cand != NIL && steps < max_chain {
            let c = cand as usize;
            // Chains run from newer to older; anything else is stale.
            if c >= last || c < oldest {
                break;
            }
            last = c;
            steps += 1;
            let probe = best_len.min(limit - 1);
            if data[c + probe] == data[pos + probe] {
                let skip = if pos - c == known.1 { known.0.min(limit) } else { 0 };
                let l = skip + common_prefix(&data[c + skip..c + limit], &data[pos + skip..pos + limit]);
                if l > best_len {
                    best_len = l;
                    best_dist = pos - c;
                    if l == limit || l >= effort.nice_len {
                        break;
                    }
                }
            }
            cand = self.prev[c];
        }
        if best_len >= LzssFormat::MIN_MATCH {
            (best_len, best_dist)
        } else {
            (0, 0)
        }
    }

    /// Appends `message` to the history and returns the longest match at
    /// each of its positions, (length, distance) with length 0 for none.
    /// `buffer_size` is the circular buffer's size: no copy reaches
    /// further back.
    #[cfg(test)]
    fn find_matches(
        &mut self,
        message: &[u8],
        buffer_size: usize,
        format: LzssFormat,
        effort: Effort,
    ) -> Vec<(usize, usize)> {
        let mut matches = Vec::new();
        self.find_matches_into(message, buffer_size, format, effort, &mut matches);
        matches
    }

    /// [`MatchFinder::find_matches`] into `matches` (cleared first).
    fn find_matches_into(
        &mut self,
        message: &[u8],
        buffer_size: usize,
        format: LzssFormat,
        effort: Effort,
        matches: &mut Vec<(usize, usize)>,
    ) {
        let start = self.data.len();
        self.data.extend_from_slice(message);
        // COPY-OFFSET counts back circularly (RFC 3320 §8.4): a distance
        // beyond the buffer would wrap onto the wrong byte.
        let reach = format.max_offset().min(buffer_size);
        let max_len = format.max_match();
        // Filled in order, so not zeroed first (a message's worth of
        // zeroing showed up in profiles).
        matches.clear();
        matches.reserve(message.len());
        let nice = effort.nice_len.max(LzssFormat::MIN_MATCH);
        let end = start + message.len();
        let mut known = (0, 0);
        let mut pos = start;
        while pos < end {
            // Positions are inserted into the chains just before a chain
            // search needs them (all earlier positions, in order, as if one
            // at a time): inside a long match none is searched, and they go
            // in later in one batch, which is cheaper than one call each.
            let m = match self.without_search(pos, max_len, reach, effort, known) {
                Some(m) => m,
                None => {
                    self.hash_up_to(pos);
                    self.longest(pos, reach, max_len, effort, known)
                }
            };
            matches.push(m);
            pos += 1;
            if m.0 > nice {
                // The positions after it continue this copy (without_search
                // with the copy one byte shorter known), for as long as that
                // stays at least `nice` long: its length at each is where
                // the bytes at its distance first differ, capped by the
                // look-ahead. That point is found once here, not once per
                // position.
                let d = m.1;
                let agreed = pos - 1 + m.0;
                let agree_end = if agreed < self.data.len() {
                    agreed + common_prefix(&self.data[agreed - d..self.data.len() - d], &self.data[agreed..])
                } else {
                    agreed
                };
                let mut length = m.0;
                while pos < end && length > nice && d <= pos - pos.saturating_sub(reach) {
                    length = (agree_end - pos).min(max_len);
                    matches.push((length, d));
                    pos += 1;
                }
                known = (length - 1, d);
            } else {
                // The copy at the same distance matches one byte less at
                // the next position.
                known = (m.0.saturating_sub(1), m.1);
            }
        }
        self.hash_up_to(self.data.len());
    }

    /// Encodes `message` after the current history, appends it to the
    /// history and the tokens to `out`. `buffer_size` is the circular
    /// buffer's size: no copy reaches further back.
    pub fn encode(
        &mut self,
        message: &[u8],
        buffer_size: usize,
        format: LzssFormat,
        effort: Effort,
        out: &mut BitWriter,
    ) {
        let mut scratch = std::mem::take(&mut self.scratch);
        self.find_matches_into(message, buffer_size, format, effort, &mut scratch.matches);
        if effort.lazy {
            optimal_choice(message, format, &mut scratch);
            write_choice(message, &scratch.matches, &scratch.choice, format, out);
        } else {
            write_tokens(message, &greedy_parse(&scratch.matches), format, out);
        }
        self.scratch = scratch;
    }
}

/// Length of the common prefix of `a` and `b` (equal lengths), 8 bytes at
/// a time: the first differing byte is the lowest set byte of the XOR of
/// two little-endian words.
#[inline]
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let mut n = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let diff =
            u64::from_le_bytes(x.try_into().expect("8 bytes")) ^ u64::from_le_bytes(y.try_into().expect("8 bytes"));
        if diff != 0 {
            return n + diff.trailing_zeros() as usize / 8;
        }
        n += 8;
    }
    n + a[n..].iter().zip(&b[n..]).take_while(|(x, y)| x == y).count()
}

/// Match lengths that cost the same number of bits: the buckets of
/// [`length_code`] (3, 6 and 10 bits).
const LENGTH_BUCKETS: [(usize, usize); 3] = [(3, 6), (7, 22), (23, usize::MAX)];

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
fn optimal_parse(message: &[u8], matches: &[(usize, usize)], format: LzssFormat) -> Vec<(usize, usize)> {
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
fn optimal_choice(message: &[u8], format: LzssFormat, scratch: &mut Scratch) {
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
fn write_choice(message: &[u8], matches: &[(usize, usize)], choice: &[u16], format: LzssFormat, out: &mut BitWriter) {
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
fn greedy_parse(matches: &[(usize, usize)]) -> Vec<(usize, usize)> {
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
fn write_tokens(message: &[u8], tokens: &[(usize, usize)], format: LzssFormat, out: &mut BitWriter) {
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
        w.extend(std::iter::repeat_n(0u8, 600));
        round_trip(&w, b"abcdefghijklmnop", f);
    }

    // ---- Reference encoder: the fast paths must give the same tokens ----

    /// The match search before the 8-byte extension: the same chain walk,
    /// bytes compared one at a time.
    fn reference_longest(
        f: &MatchFinder,
        pos: usize,
        reach: usize,
        max_len: usize,
        max_chain: usize,
    ) -> (usize, usize) {
        let data = &f.data;
        if pos + LzssFormat::MIN_MATCH > data.len() {
            return (0, 0);
        }
        let limit = (data.len() - pos).min(max_len);
        let oldest = pos.saturating_sub(reach);
        let (mut best_len, mut best_dist) = (0, 0);
        let mut cand = f.head[hash3(&data[pos..])];
        let mut last = pos;
        let mut steps = 0;
        while cand != NIL && steps < max_chain {
            let c = cand as usize;
            if c >= last || c < oldest {
                break;
            }
            last = c;
            steps += 1;
            let l = (0..limit).take_while(|&k| data[c + k] == data[pos + k]).count();
            if l > best_len {
                best_len = l;
                best_dist = pos - c;
            }
            cand = f.prev[c];
        }
        if best_len >= LzssFormat::MIN_MATCH {
            (best_len, best_dist)
        } else {
            (0, 0)
        }
    }

    /// What `find_matches` computes, with [`reference_longest`].
    fn reference_matches(
        f: &mut MatchFinder,
        message: &[u8],
        buffer_size: usize,
        format: LzssFormat,
        effort: Effort,
    ) -> Vec<(usize, usize)> {
        let start = f.data.len();
        f.data.extend_from_slice(message);
        let reach = format.max_offset().min(buffer_size);
        let mut matches = Vec::new();
        for i in 0..message.len() {
            f.hash_up_to(start + i);
            matches.push(reference_longest(f, start + i, reach, format.max_match(), effort.max_chain));
        }
        f.hash_up_to(f.data.len());
        matches
    }

    /// Longest match by trying every earlier position within reach,
    /// newest first (ties go to the nearest copy, as in the chain walk).
    fn brute_force_matches(history: &[u8], message: &[u8], reach: usize, max_len: usize) -> Vec<(usize, usize)> {
        let data = [history, message].concat();
        let start = history.len();
        (start..data.len())
            .map(|pos| {
                let limit = (data.len() - pos).min(max_len);
                let mut best = (0, 0);
                for c in (pos.saturating_sub(reach)..pos).rev() {
                    let l = (0..limit).take_while(|&k| data[c + k] == data[pos + k]).count();
                    if l > best.0 {
                        best = (l, pos - c);
                    }
                }
                if best.0 >= LzssFormat::MIN_MATCH {
                    best
                } else {
                    (0, 0)
                }
            })
            .collect()
    }

    /// The shortest-path parse trying every length `3..=len` at every
    /// position; also returns the cost array.
    fn reference_parse(
        message: &[u8],
        matches: &[(usize, usize)],
        format: LzssFormat,
    ) -> (Vec<(usize, usize)>, Vec<usize>) {
        let n = message.len();
        let mut cost = vec![0usize; n + 1];
        let mut choice = vec![0usize; n];
        for i in (0..n).rev() {
            cost[i] = LzssFormat::literal_bits(message[i]) + cost[i + 1];
            for l in LzssFormat::MIN_MATCH..=matches[i].0 {
                let c = format.match_bits(l) + cost[i + l];
                if c < cost[i] || (c == cost[i] && l > choice[i]) {
                    cost[i] = c;
                    choice[i] = l;
                }
            }
        }
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < n {
            let l = choice[i];
            tokens.push(if l == 0 { (0, 0) } else { (l, matches[i].1) });
            i += l.max(1);
        }
        (tokens, cost)
    }

    fn token_bits(message: &[u8], tokens: &[(usize, usize)], format: LzssFormat) -> usize {
        let mut i = 0;
        let mut bits = 0;
        for &(len, _) in tokens {
            if len == 0 {
                bits += LzssFormat::literal_bits(message[i]);
                i += 1;
            } else {
                bits += format.match_bits(len);
                i += len;
            }
        }
        assert_eq!(i, message.len());
        bits
    }

    /// Encodes `message` with both encoders on copies of `finder` (which
    /// is left as the fast encoder leaves it) and asserts the same matches
    /// and tokens. Returns whether the cost array rose somewhere (the
    /// bucket-scanning fallback of `optimal_parse` was needed).
    fn assert_same_as_reference(
        finder: &mut MatchFinder,
        message: &[u8],
        buffer_size: usize,
        format: LzssFormat,
        effort: Effort,
    ) -> bool {
        let mut reference = finder.clone();
        let want_matches = reference_matches(&mut reference, message, buffer_size, format, effort);
        let matches = finder.find_matches(message, buffer_size, format, effort);
        assert_eq!(matches, want_matches, "{format:?}");
        let (want, cost) = reference_parse(message, &matches, format);
        assert_eq!(optimal_parse(message, &matches, format), want, "{format:?}");
        assert_eq!(finder.data, reference.data);
        assert_eq!(finder.head, reference.head);
        assert_eq!(finder.prev, reference.prev);
        cost.windows(2).any(|w| w[0] < w[1])
    }

    fn corpus_flows() -> Vec<Vec<Vec<u8>>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
        let mut flows: Vec<_> = std::fs::read_dir(&dir)
            .expect("corpus")
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        flows.sort();
        let flows: Vec<Vec<Vec<u8>>> = flows
            .iter()
            .map(|flow| {
                let mut names: Vec<_> = std::fs::read_dir(flow)
                    .expect("flow")
                    .filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "sip"))
                    .collect();
                names.sort();
                names.iter().map(|p| std::fs::read(p).expect("message")).collect()
            })
            .collect();
        assert!(flows.len() >= 8 && flows.iter().all(|f| !f.is_empty()), "corpus flows: {}", flows.len());
        flows
    }

    #[test]
    fn fast_encoder_gives_the_reference_tokens_on_the_corpus() {
        // Every corpus flow played into one history (dictionary first, as
        // the compressor's window), for buffers of 512..16384 bytes (9..14
        // offset bits) and every look-ahead, greedy and optimal effort.
        let dict = sigcomp::dict::SIP_SDP;
        let mut rises = 0;
        let mut messages = 0;
        for flow in corpus_flows() {
            for (buffer, lookahead) in [(512, 18), (1024, 66), (4096, 258), (4096, 18), (16384, 258)] {
                let format = LzssFormat::for_buffer(buffer, lookahead).expect("format");
                for effort in [Effort::exhaustive(512, true), Effort::exhaustive(8, true)] {
                    let mut finder = MatchFinder::default();
                    finder.prepare(&dict[dict.len().saturating_sub(buffer)..]);
                    for message in &flow {
                        rises += usize::from(assert_same_as_reference(&mut finder, message, buffer, format, effort));
                        messages += 1;
                    }
                }
            }
        }
        // The fallback path (cost rising inside a bucket's range) was
        // exercised, not only the one-comparison path.
        assert!(rises > 0 && rises < messages, "{rises} of {messages}");
    }

    #[test]
    fn rollback_restores_the_history_and_its_chains() {
        // A trial encoding rolled back leaves the finder exactly as before;
        // the chosen trial re-added with append_hashed equals encoding it.
        let dict = sigcomp::dict::SIP_SDP;
        let format = LzssFormat::for_buffer(4096, 258).expect("format");
        for flow in corpus_flows().iter().take(4) {
            let mut finder = MatchFinder::default();
            finder.prepare(&dict[dict.len() - 4096..]);
            for (k, message) in flow.iter().enumerate() {
                let mark = finder.mark();
                let before = finder.clone();
                finder.append(&flow[k.saturating_sub(1)][..40]);
                let mut bw = BitWriter::default();
                finder.encode(message, 4096, format, Effort::default(), &mut bw);
                finder.rollback(mark);
                assert_eq!(
                    (&finder.data, &finder.head, &finder.prev[..finder.hashed], finder.hashed),
                    (&before.data, &before.head, &before.prev[..before.hashed], before.hashed)
                );
                let mut encoded = finder.clone();
                encoded.encode(message, 4096, format, Effort::default(), &mut BitWriter::default());
                finder.append_hashed(message);
                assert_eq!(
                    (&finder.data, &finder.head, &finder.prev[..finder.hashed], finder.hashed),
                    (&encoded.data, &encoded.head, &encoded.prev[..encoded.hashed], encoded.hashed)
                );
            }
        }
    }

    #[test]
    fn nice_length_stops_only_at_long_genuine_matches() {
        // With a nice length each match is the exhaustive search's, or at
        // least nice_len long; every match is a genuine copy within reach.
        let dict = sigcomp::dict::SIP_SDP;
        let (buffer, lookahead) = (4096, 258);
        let format = LzssFormat::for_buffer(buffer, lookahead).expect("format");
        let reach = format.max_offset().min(buffer);
        let mut shortcuts = 0;
        for flow in corpus_flows() {
            for nice in [8, 32] {
                let effort = Effort { nice_len: nice, ..Effort::default() };
                let mut finder = MatchFinder::default();
                finder.prepare(&dict[dict.len() - buffer..]);
                for message in &flow {
                    let start = finder.data.len();
                    let mut exhaustive = finder.clone();
                    let want = exhaustive.find_matches(message, buffer, format, Effort::exhaustive(512, true));
                    let got = finder.find_matches(message, buffer, format, effort);
                    for (i, (&(l, d), &(wl, _))) in got.iter().zip(&want).enumerate() {
                        assert!(l == wl || l >= nice, "position {i}: {l} vs {wl}");
                        shortcuts += usize::from(l != wl);
                        if l > 0 {
                            let p = start + i;
                            assert!(d >= 1 && d <= reach && d <= p, "distance {d}");
                            assert_eq!(finder.data[p - d..p - d + l], finder.data[p..p + l]);
                        }
                    }
                    let tokens = optimal_parse(message, &got, format);
                    let mut bw = BitWriter::default();
                    write_tokens(message, &tokens, format, &mut bw);
                    let window = &exhaustive.data[start.saturating_sub(buffer)..start];
                    assert_eq!(decode(window, &bw.finish(), format).as_deref(), Some(&message[..]));
                }
            }
        }
        assert!(shortcuts > 0, "the nice length never changed a match");
    }

    #[test]
    fn unbounded_chains_find_the_longest_nearest_match() {
        // With no chain limit and a fresh finder (no stale links) the hash
        // chains must find exactly what trying every position finds, and
        // the parse must cost no more than the reference parse of those.
        let dict = sigcomp::dict::SIP_SDP;
        let effort = Effort::exhaustive(usize::MAX, true);
        for flow in corpus_flows().iter().take(3) {
            for (buffer, lookahead) in [(1024, 66), (4096, 258)] {
                let format = LzssFormat::for_buffer(buffer, lookahead).expect("format");
                let mut finder = MatchFinder::default();
                finder.prepare(&dict[dict.len() - buffer..]);
                for message in flow {
                    let history = finder.data.clone();
                    let want =
                        brute_force_matches(&history, message, format.max_offset().min(buffer), format.max_match());
                    let matches = finder.find_matches(message, buffer, format, effort);
                    assert_eq!(matches, want);
                    let tokens = optimal_parse(message, &matches, format);
                    let (reference, cost) = reference_parse(message, &want, format);
                    assert_eq!(tokens, reference);
                    assert_eq!(token_bits(message, &tokens, format), cost[0]);
                }
            }
        }
    }

    #[test]
    fn length_buckets_follow_the_length_code() {
        // optimal_parse relies on every length of a bucket costing the same.
        let mut next = LzssFormat::MIN_MATCH;
        for &(lo, hi) in &LENGTH_BUCKETS {
            assert_eq!(lo, next);
            let top = hi.min(258);
            assert!((lo..=top).all(|l| length_code(l).1 == length_code(lo).1), "{lo}..={hi}");
            next = hi.saturating_add(1);
        }
        assert_eq!(next, usize::MAX, "the last bucket is open-ended");
        assert!(length_code(6).1 < length_code(7).1 && length_code(22).1 < length_code(23).1);
    }

    #[test]
    fn common_prefix_counts_equal_leading_bytes() {
        let a: Vec<u8> = (0..40).collect();
        for k in 0..=40 {
            let mut b = a.clone();
            if k < 40 {
                b[k] ^= 0x80;
            }
            for len in 0..=40 {
                assert_eq!(common_prefix(&a[..len], &b[..len]), k.min(len), "k {k} len {len}");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
        /// Messages over a 2–4 byte alphabet: long matches, many ties and
        /// cost rises, so every branch of the fast parse is taken.
        #[test]
        fn fast_encoder_gives_the_reference_tokens_on_repetitive_bytes(
            alphabet in 2u8..5,
            window in proptest::collection::vec(0u8..4, 0..2000),
            message in proptest::collection::vec(0u8..4, 0..1500),
            offset_bits in 9u8..13,
            length_bits in proptest::sample::select(vec![4u8, 6, 8]),
            max_chain in proptest::sample::select(vec![1usize, 8, 512]),
        ) {
            let window: Vec<u8> = window.iter().map(|b| b % alphabet + b'a').collect();
            let message: Vec<u8> = message.iter().map(|b| b % alphabet + b'a').collect();
            let format = LzssFormat { offset_bits, length_bits };
            let effort = Effort::exhaustive(max_chain, true);
            let mut finder = MatchFinder::default();
            finder.prepare(&window);
            // An empty window: an unbounded linear history, as encode() takes it.
            let buffer = if window.is_empty() { usize::MAX } else { window.len() };
            assert_same_as_reference(&mut finder, &message, buffer, format, effort);
            // A second message against the grown history (chains kept).
            assert_same_as_reference(&mut finder, &message[message.len() / 2..], buffer, format, effort);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]
        /// The floor is never above the real token bytes, whatever the
        /// history: repetitive bytes (long matches), and the message itself
        /// in the window (the longest matches there are).
        #[test]
        fn min_token_bytes_is_a_lower_bound(
            alphabet in 2u8..200,
            window in proptest::collection::vec(proptest::num::u8::ANY, 0..3000),
            message in proptest::collection::vec(proptest::num::u8::ANY, 0..1500),
            offset_bits in 9u8..13,
            length_bits in proptest::sample::select(vec![4u8, 6, 8]),
            message_in_window in proptest::bool::ANY,
        ) {
            let message: Vec<u8> = message.iter().map(|b| b % alphabet).collect();
            let mut window: Vec<u8> = window.iter().map(|b| b % alphabet).collect();
            if message_in_window {
                window.extend_from_slice(&message);
            }
            let format = LzssFormat { offset_bits, length_bits };
            let mut out = BitWriter::default();
            encode(&window, &message, format, Effort::default(), &mut out);
            let tokens = out.finish();
            proptest::prop_assert!(format.min_token_bytes(message.len()) <= tokens.len());
        }
    }

    #[test]
    fn min_token_bytes_is_tight_for_a_repeated_message() {
        // A message already in the window costs whole 258-byte matches:
        // 24 bits each with 12 offset bits, within a byte of the floor.
        let format = LzssFormat { offset_bits: 12, length_bits: 8 };
        let message: Vec<u8> = (0..1032u32).map(|i| (i * 7 % 251) as u8 & 0x7F).collect();
        let mut out = BitWriter::default();
        encode(&message, &message, format, Effort::default(), &mut out);
        let tokens = out.finish();
        let floor = format.min_token_bytes(message.len());
        assert_eq!(floor, 1032 * 24 / 258 / 8);
        assert!(floor <= tokens.len() && tokens.len() <= floor + 1, "floor {floor}, tokens {}", tokens.len());
    }

    #[test]
    fn length_bits_from_lookahead() {
        assert_eq!(LzssFormat::length_bits_for(18), Some(4));
        assert_eq!(LzssFormat::length_bits_for(66), Some(6));
        assert_eq!(LzssFormat::length_bits_for(258), Some(8));
        assert_eq!(LzssFormat::length_bits_for(100), None);
    }
}
