//! Hash chains over the history, kept between messages, and the matches
//! they find at every position of a message.

use super::format::{Effort, LzssFormat};
use super::parse::{greedy_parse, optimal_choice, write_choice, write_tokens, Scratch};
use crate::bits::BitWriter;
use crate::history::with_room_to_grow;

pub(super) const HASH_BITS: u32 = 12;

pub(super) const HASH_SIZE: usize = 1 << HASH_BITS;

pub(super) const NIL: u32 = u32::MAX;

#[inline]
pub(super) fn hash3(b: &[u8]) -> usize {
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
    pub(super) data: Vec<u8>,
    /// A fixed-size array, so a hash indexes it without a bounds check.
    pub(super) head: Box<[u32; HASH_SIZE]>,
    pub(super) prev: Vec<u32>,
    /// Positions below this are in the chains.
    pub(super) hashed: usize,
    /// Whole rebuilds done (for tests and reports).
    pub rebuilds: usize,
    /// The encoder's buffers, kept for the next message.
    pub(super) scratch: Scratch,
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
    pub(super) fn slide(&mut self, drop: usize) {
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
    pub(super) fn hash_up_to(&mut self, end: usize) {
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
    pub(super) fn hash_batch_up_to(&mut self, end: usize) {
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
    pub(super) fn without_search(
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
    pub(super) fn longest(
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
    pub(super) fn find_matches(
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
    pub(super) fn find_matches_into(
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
pub(super) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
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
