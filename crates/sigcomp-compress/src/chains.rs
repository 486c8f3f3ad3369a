//! The match finder of the Deflate and LZ77 encoders: hash chains over a
//! linear copy of the history (everything written to the circular buffer,
//! oldest first), kept between messages by the same code as the LZSS
//! encoder's ([`crate::lzss::MatchFinder`]; `history.rs`). Where LZSS needs
//! only the longest match at a position, these formats price a copy by its
//! distance too (Deflate) or take every length (LZ77), so
//! [`MatchFinder::matches_at`] lists every match that beats the shorter
//! ones, each at its nearest distance. Both encoders continue a copy that
//! reaches its limit without a search (`MatchFinder::continue_capped`): the
//! longest match stays exact, and a shorter one may be listed at a farther
//! distance than a search finds, which costs Deflate at most a byte a
//! message on the corpus.
//!
//! Kept or rebuilt, the chains give the same matches: a search stops at the
//! first candidate further back than the circular buffer reaches, and every
//! position within reach is in its chain, newest first, in both.

pub use crate::history::HistoryMark;
use crate::history::{common_prefix, History, NIL};

/// The length of the match of `here` (a position's bytes up to its limit)
/// against the copy at `c` in `data`, given that its first `known` bytes
/// match (capped at the limit): the bytes after those are compared one at
/// a time, as a known match has at most one left.
#[inline(always)]
fn extend_known(data: &[u8], c: usize, here: &[u8], known: usize) -> usize {
    let mut len = known.min(here.len());
    while len < here.len() && data[c + len] == here[len] {
        len += 1;
    }
    len
}

/// One match candidate: `len` bytes from `distance` back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    /// Bytes the copy reproduces: at least 3, at most the search's
    /// `max_len` (and the bytes left in the history).
    pub len: usize,
    /// How many bytes back from the position the copy starts: at least 1,
    /// at most the search's `max_distance`.
    pub distance: usize,
}

/// Buffers an encoder's parse reuses from one message to the next (kept
/// in its finder, which lives as long as the compressor).
#[derive(Debug, Clone, Default)]
pub struct ParseScratch {
    /// The matches at every position of the message, in order.
    pub matches: Vec<Match>,
    /// Where each position's matches begin in `matches`.
    pub matches_at: Vec<u32>,
    /// The fewest bits for the rest of the message from each position
    /// (Deflate).
    pub cost: Vec<u32>,
    /// The first rise of `cost` from each position (Deflate).
    pub next_rise: Vec<u32>,
    /// The token chosen at each position (Deflate).
    pub choice: Vec<u32>,
}

/// The history (everything written to the circular buffer, oldest
/// first) with hash chains over it, kept between messages, and what the
/// last search found.
#[derive(Debug)]
pub struct MatchFinder {
    history: History,
    /// Where the matches the last search found are in its `out`, and the
    /// position after it: at that position each of their distances is
    /// known to match one byte less, which the next search need not
    /// compare again.
    known: std::ops::Range<usize>,
    known_at: usize,
    /// The longest match the last search could find: a known match
    /// shorter than that ended at a differing byte.
    known_limit: usize,
    /// The encoder's buffers ([`MatchFinder::take_scratch`]).
    scratch: ParseScratch,
}

impl Default for MatchFinder {
    fn default() -> Self {
        MatchFinder {
            history: History::default(),
            known: 0..0,
            known_at: usize::MAX,
            known_limit: 0,
            scratch: ParseScratch::default(),
        }
    }
}

impl Clone for MatchFinder {
    /// A copy of the history with room to grow for the next messages; the
    /// encoder's buffers are not copied.
    fn clone(&self) -> Self {
        MatchFinder {
            history: self.history.clone(),
            known: self.known.clone(),
            known_at: self.known_at,
            known_limit: self.known_limit,
            scratch: ParseScratch::default(),
        }
    }
}

impl MatchFinder {
    /// A finder whose history is `window`, every position hashed: a
    /// template that new compartments with the same fresh window clone (a
    /// copy of the chains) instead of hashing the same bytes again. Its
    /// chains are the ones [`MatchFinder::prepare`] and the first search
    /// build over `window`: positions are inserted in the same order.
    pub fn over(window: &[u8]) -> MatchFinder {
        MatchFinder { history: History::over(window), ..MatchFinder::default() }
    }

    /// Whole rebuilds of the chains done (for tests and reports).
    pub fn rebuilds(&self) -> usize {
        self.history.rebuilds
    }

    /// The parse buffers of the previous message (empty ones at first),
    /// to be returned with [`MatchFinder::keep_scratch`].
    pub fn take_scratch(&mut self) -> ParseScratch {
        std::mem::take(&mut self.scratch)
    }

    /// Keeps the parse buffers for the next message.
    pub fn keep_scratch(&mut self, scratch: ParseScratch) {
        self.scratch = scratch;
    }

    /// The history, oldest byte first.
    pub fn history(&self) -> &[u8] {
        &self.history.data
    }

    /// Makes the history end with `window` (the circular buffer in
    /// chronological order): kept if it already does (the usual case, the
    /// previous message's buffer), rebuilt over `window` otherwise.
    pub fn prepare(&mut self, window: &[u8]) {
        self.known_at = usize::MAX;
        // No byte patched in place: kept chains must find what rebuilt
        // ones find (the module's note).
        self.history.prepare(window, 0);
    }

    /// Appends bytes the bytecode writes to the buffer before the message
    /// (a shared state).
    pub fn append(&mut self, bytes: &[u8]) {
        self.known_at = usize::MAX;
        self.history.append(bytes);
    }

    /// Appends `bytes` and hashes the history (the message of a trial
    /// chosen after a rollback).
    pub fn append_hashed(&mut self, bytes: &[u8]) {
        self.known_at = usize::MAX;
        self.history.append_hashed(bytes);
    }

    /// Where the history ends now, for [`MatchFinder::rollback`]; the
    /// history so far is hashed first, so trials share its chains.
    pub fn mark(&mut self) -> HistoryMark {
        self.history.mark()
    }

    /// Forgets everything appended since `mark`, chains included.
    pub fn rollback(&mut self, mark: HistoryMark) {
        self.known_at = usize::MAX;
        self.history.rollback(mark);
    }

    /// The matches at history position `pos` (at least 3 bytes long, at
    /// most `max_len`, from at most `max_distance` back), each longer than
    /// the one before and at the smallest distance found for its length:
    /// for any length up to the last one's, the first entry at least that
    /// long is the nearest copy seen. At most `max_chain` candidates are
    /// compared.
    pub fn matches_at(
        &mut self,
        pos: usize,
        max_distance: usize,
        max_len: usize,
        max_chain: usize,
        out: &mut Vec<Match>,
    ) {
        out.clear();
        self.known_at = usize::MAX;
        self.push_matches(pos, max_distance, max_len, max_chain, false, out);
    }

    /// The matches at each history position in `positions`, appended to
    /// `matches` as [`MatchFinder::push_matches`] gives them (with
    /// `continue_capped`), and where each position's begin appended to
    /// `starts` (then where the last one's end): the searches of a whole
    /// message in one loop.
    #[allow(clippy::too_many_arguments)]
    pub fn push_matches_from(
        &mut self,
        positions: std::ops::Range<usize>,
        max_distance: usize,
        max_len: usize,
        max_chain: usize,
        continue_capped: bool,
        matches: &mut Vec<Match>,
        starts: &mut Vec<u32>,
    ) {
        self.history.hash_up_to(positions.start);
        // The chain head of the next position is loaded before this
        // position's chain is walked: its address does not depend on the
        // walk, so the load is not held up behind the walk's branches.
        // Inserting this position changes it only where both positions
        // hash alike.
        let mut next = self.history.chain_start(positions.start);
        for pos in positions {
            starts.push(matches.len() as u32);
            let Some((h, head)) = next else {
                self.known_at = usize::MAX;
                next = self.history.chain_start(pos + 1);
                continue;
            };
            next = self.history.chain_start(pos + 1);
            if !(continue_capped && self.continue_capped(pos, max_len, matches).is_some()) {
                self.search_from(pos, head, max_distance, max_len, max_chain, matches);
            }
            // The position goes into its chain before the next search, as
            // `hash_up_to` would put it, with the hash the search used.
            if self.history.insert_next(pos, h) {
                if let Some((hn, cn)) = &mut next {
                    if *hn == h {
                        *cn = pos as u32;
                    }
                }
            } else {
                self.history.hash_up_to(pos + 1);
                next = self.history.chain_start(pos + 1);
            }
        }
        starts.push(matches.len() as u32);
    }

    /// [`MatchFinder::matches_at`], appended to `out` (whatever it holds
    /// already); returns how many were appended. With `continue_capped`,
    /// inside a copy that reaches the limit only the longest match is
    /// exact (see `MatchFinder::continue_capped`).
    pub fn push_matches(
        &mut self,
        pos: usize,
        max_distance: usize,
        max_len: usize,
        max_chain: usize,
        continue_capped: bool,
        out: &mut Vec<Match>,
    ) -> usize {
        self.history.hash_up_to(pos);
        if continue_capped {
            if let Some(found) = self.continue_capped(pos, max_len, out) {
                return found;
            }
        }
        let first = out.len();
        match self.history.chain_start(pos) {
            Some((_, head)) => self.search_from(pos, head, max_distance, max_len, max_chain, out),
            None => self.known_at = usize::MAX,
        }
        out.len() - first
    }

    /// Inside a copy that reaches the limit (the longest length, or the
    /// end of the history) at one position and the next, the next
    /// position's matches are taken to be the last ones one byte shorter,
    /// without a search. The longest is exact (nothing is longer than the
    /// limit); a nearer copy whose match begins here is not seen, so a
    /// shorter length may have a farther distance than the search would
    /// give. `None` where the last search's matches do not continue so.
    fn continue_capped(&mut self, pos: usize, max_len: usize, out: &mut Vec<Match>) -> Option<usize> {
        let data = &self.history.data;
        let first = out.len();
        if pos + 3 > data.len() || self.known_at != pos || self.known.end != first || self.known.is_empty() {
            return None;
        }
        let known = self.known.clone();
        let limit = (data.len() - pos).min(max_len);
        let here = &data[pos..pos + limit];
        let last = out[known.end - 1];
        if last.len != self.known_limit || last.len <= 1 {
            return None;
        }
        // A byte at most is left to compare (as for a known match in
        // [`MatchFinder::search`]).
        let c = pos - last.distance;
        let len = extend_known(data, c, here, last.len - 1);
        if len != limit || len < 3 {
            return None;
        }
        for k in known.start..known.end - 1 {
            let m = out[k];
            if m.len > 3 {
                out.push(Match { len: m.len - 1, distance: m.distance });
            }
        }
        out.push(Match { len, distance: last.distance });
        self.known = first..out.len();
        self.known_at = pos + 1;
        self.known_limit = limit;
        Some(out.len() - first)
    }

    /// The chain search at `pos` (hashed up to it, at least three bytes
    /// before the end), walking the chain from `head`.
    #[inline(always)]
    fn search_from(
        &mut self,
        pos: usize,
        head: u32,
        max_distance: usize,
        max_len: usize,
        max_chain: usize,
        out: &mut Vec<Match>,
    ) {
        let (data, prev) = (&self.history.data[..], &self.history.prev[..]);
        let first = out.len();
        // The last search's matches, if they end `out` still: `k` is the
        // first of them not nearer than the candidate, and `kd` its
        // distance (none left: `usize::MAX`).
        let (mut k, known_end) =
            if self.known_at == pos && self.known.end == first { (self.known.start, self.known.end) } else { (0, 0) };
        let known_distance = |out: &[Match], k: usize| if k < known_end { out[k].distance } else { usize::MAX };
        let mut kd = known_distance(out, k);
        let known_limit = self.known_limit;
        let limit = (data.len() - pos).min(max_len);
        let here = &data[pos..pos + limit];
        let mut best = 2;
        let mut cand = head;
        let mut steps = 0;
        let max_chain = max_chain.max(1);
        while cand != NIL && steps < max_chain {
            let c = cand as usize;
            // The next link is loaded before this candidate is compared,
            // so that walking the chain does not wait on the comparison.
            let next = prev[c];
            // Positions at or after `pos` are not earlier copies (hashed
            // ahead by `append_hashed`).
            if c >= pos {
                cand = next;
                continue;
            }
            let distance = pos - c;
            if distance > max_distance {
                break;
            }
            steps += 1;
            // Candidates come nearest first, as the known matches are
            // listed.
            while kd < distance {
                k += 1;
                kd = known_distance(out, k);
            }
            let len = if kd == distance && out[k].len > 1 {
                let was = out[k].len;
                // A known match that stopped short of its limit ended at a
                // differing byte, so here it is exactly one byte shorter;
                // one that reached its limit may go on.
                if was < known_limit {
                    was - 1
                } else if was - 1 > best || data[c + best.min(limit - 1)] == here[best.min(limit - 1)] {
                    // It reached the last search's limit, and this one's
                    // is no greater given the same `max_len` (the history
                    // ends a byte nearer): a byte at most is left to
                    // compare.
                    extend_known(data, c, here, was - 1)
                } else {
                    0
                }
            } else {
                // Only a candidate that beats the best so far matters;
                // check the byte that would make it longer first.
                let probe = best.min(limit - 1);
                if data[c + probe] == here[probe] {
                    common_prefix(&data[c..c + limit], here)
                } else {
                    0
                }
            };
            if len > best {
                best = len;
                out.push(Match { len, distance });
                if len == limit {
                    break;
                }
            }
            cand = next;
        }
        self.known = first..out.len();
        self.known_at = pos + 1;
        self.known_limit = limit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_matches(f: &mut MatchFinder, from: usize, reach: usize) -> Vec<Vec<Match>> {
        let mut out = Vec::new();
        (from..f.history().len())
            .map(|p| {
                f.matches_at(p, reach, 258, 64, &mut out);
                out.clone()
            })
            .collect()
    }

    #[test]
    fn kept_chains_find_what_rebuilt_ones_find() {
        let text = b"INVITE sip:bob@biloxi.example.com SIP/2.0\r\nVia: SIP/2.0/UDP pc33.atlanta.example.com\r\n";
        let mut kept = MatchFinder::default();
        let mut window = vec![0u8; 256];
        for round in 0..6 {
            let msg: Vec<u8> = text.iter().map(|&b| b.wrapping_add(round % 3)).collect();
            kept.prepare(&window);
            let start = kept.history().len();
            kept.append_hashed(&msg);
            let mut fresh = MatchFinder::default();
            fresh.prepare(&window);
            fresh.append_hashed(&msg);
            assert_eq!(all_matches(&mut kept, start, 256), all_matches(&mut fresh, 256, 256), "round {round}");
            window.extend_from_slice(&msg);
            window.drain(..msg.len());
        }
        assert_eq!(kept.rebuilds(), 1, "one build, then the chains are kept");
    }

    #[test]
    fn a_continued_copy_lists_real_matches_and_the_longest() {
        let text = b"INVITE sip:bob@biloxi.example.com SIP/2.0\r\nVia: SIP/2.0/UDP pc33.atlanta.example.com\r\n";
        let mut window = text.to_vec();
        window.extend(text.iter().rev());
        window.extend_from_slice(&text[..40]);
        let mut message = text[10..].to_vec();
        message.extend_from_slice(text);
        message.extend_from_slice(b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        let reach = window.len();
        for max_len in [258, 16, 3] {
            let mut f = MatchFinder::default();
            f.prepare(&window);
            f.append(&message);
            let (mut matches, mut starts) = (Vec::new(), Vec::new());
            f.push_matches_from(reach..reach + message.len(), reach, max_len, 64, true, &mut matches, &mut starts);
            let mut full = MatchFinder::default();
            full.prepare(&window);
            full.append(&message);
            let data = f.history().to_vec();
            let mut searched = Vec::new();
            for (i, at) in starts.windows(2).enumerate() {
                let (pos, listed) = (reach + i, &matches[at[0] as usize..at[1] as usize]);
                let limit = (data.len() - pos).min(max_len);
                for (k, m) in listed.iter().enumerate() {
                    assert!(m.distance <= reach && m.len >= 3 && m.len <= limit, "{pos}: {m:?}");
                    let copy = pos - m.distance;
                    assert_eq!(data[copy..copy + m.len], data[pos..pos + m.len], "{pos}: {m:?}");
                    assert!(m.len == limit || data[copy + m.len] != data[pos + m.len], "{pos}: {m:?} is longer");
                    assert!(k == 0 || listed[k - 1].len < m.len, "{pos}: lengths grow");
                }
                full.matches_at(pos, reach, max_len, 64, &mut searched);
                assert_eq!(listed.last().map(|m| m.len), searched.last().map(|m| m.len), "{pos}: the longest");
            }
        }
    }

    #[test]
    fn rollback_forgets_a_trial() {
        let mut f = MatchFinder::default();
        f.prepare(b"abcdefgh-abcdefgh");
        let mark = f.mark();
        f.append_hashed(b"xyzxyzxyz");
        f.rollback(mark);
        f.append(b"abcd");
        let mut out = Vec::new();
        let at = f.history().len() - 4;
        f.matches_at(at, 64, 258, 64, &mut out);
        assert_eq!(out, [Match { len: 4, distance: 8 }]);
        // Nothing of the trial is left to match.
        f.append(b"xyz");
        let at = f.history().len() - 3;
        f.matches_at(at, 64, 258, 64, &mut out);
        assert!(out.is_empty());
    }
}
