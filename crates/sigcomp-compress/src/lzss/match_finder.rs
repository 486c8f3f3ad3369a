//! The LZSS match finder: the longest match at every position of a
//! message, found over the hash chains of the history kept between
//! messages ([`crate::history`]).

use super::format::{Effort, LzssFormat};
use super::parse::{greedy_parse, optimal_choice, write_choice, write_tokens, Scratch};
use crate::bits::BitWriter;
pub use crate::history::HistoryMark;
use crate::history::{common_prefix, hash3, History, NIL};

/// How many bytes of the window may differ from the end of the history
/// and be patched in place instead of rebuilding the chains: the
/// shared-state header the bytecode writes over the message start. Stale
/// chain entries are harmless here, as every candidate is compared byte
/// by byte before use.
const MAX_PATCHED: usize = 16;

/// The history (everything written to the circular buffer, oldest first)
/// with hash chains over it, kept between messages, and the buffers of
/// the encoder's parse.
#[derive(Debug, Default)]
pub struct MatchFinder {
    pub(super) history: History,
    /// The encoder's buffers, kept for the next message.
    pub(super) scratch: Scratch,
}

impl Clone for MatchFinder {
    /// A copy of the history with room to grow for the next messages; the
    /// encoder's buffers are not copied.
    fn clone(&self) -> Self {
        MatchFinder { history: self.history.clone(), scratch: Scratch::default() }
    }
}

impl MatchFinder {
    /// A finder whose history is `window`, every position hashed: a
    /// template that new compartments with the same fresh window clone
    /// (a copy of the chains) instead of hashing the same bytes again.
    pub fn over(window: &[u8]) -> MatchFinder {
        MatchFinder { history: History::over(window), ..MatchFinder::default() }
    }

    /// Whole rebuilds of the chains done (for tests and reports).
    pub fn rebuilds(&self) -> usize {
        self.history.rebuilds
    }

    /// Makes the history end with `window` (the circular buffer in
    /// chronological order). If the history already ends with it (a few
    /// differing bytes, such as the shared-state header the bytecode writes
    /// over the message start, are patched in place) nothing is rehashed;
    /// otherwise the chains are rebuilt over the window.
    pub fn prepare(&mut self, window: &[u8]) {
        self.history.prepare(window, MAX_PATCHED);
    }

    /// Appends bytes the bytecode writes to the buffer before the message
    /// (a shared state, the announced-state header).
    pub fn append(&mut self, bytes: &[u8]) {
        self.history.append(bytes);
    }

    /// Where the history ends now, for [`MatchFinder::rollback`]. The
    /// history so far is hashed first, so trials share its chains.
    pub fn mark(&mut self) -> HistoryMark {
        self.history.mark()
    }

    /// Forgets everything appended since `mark` (a trial encoding), chains
    /// included, as if it had never been added.
    pub fn rollback(&mut self, mark: HistoryMark) {
        self.history.rollback(mark);
    }

    /// Appends `bytes` to the history and hashes it, as [`MatchFinder::encode`]
    /// would, without encoding (the message of a trial chosen after a
    /// rollback).
    pub fn append_hashed(&mut self, bytes: &[u8]) {
        self.history.append_hashed(bytes);
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
        let data = &self.history.data;
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
        let History { data, head, prev, .. } = &self.history;
        let limit = (data.len() - pos).min(max_len);
        let oldest = pos.saturating_sub(reach);
        let max_chain = effort.max_chain;
        let (mut best_len, mut best_dist) = (0, 0);
        let mut cand = head[hash3(&data[pos..])];
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
            cand = prev[c];
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
        let start = self.history.data.len();
        self.history.append(message);
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
                    self.history.hash_up_to(pos);
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
                let data = &self.history.data;
                let agree_end = if agreed < data.len() {
                    agreed + common_prefix(&data[agreed - d..data.len() - d], &data[agreed..])
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
        self.history.hash_up_to(self.history.data.len());
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
