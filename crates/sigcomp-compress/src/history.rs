//! The history both match finders (`lzss`, `chains`) keep between
//! messages: a linear copy of everything written to the circular buffer,
//! oldest first, with hash chains over it keyed by the next three bytes
//! (the 2005 SigComp performance thesis §7.8.5). How the history is kept —
//! slid, appended to, hashed, marked and rolled back — is the same for
//! both; what they search it for differs and stays with each finder.

/// 4096 chain heads (16 KiB): every new compartment copies them from the
/// template finder, and they stay in the L1 cache. 2^15 heads gave the
/// same matches on the corpus at 8 times the copy.
const HASH_BITS: u32 = 12;

const HASH_SIZE: usize = 1 << HASH_BITS;

/// The end of a chain (and an empty head).
pub(crate) const NIL: u32 = u32::MAX;

#[inline]
pub(crate) fn hash3(b: &[u8]) -> usize {
    // Multiplicative (Fibonacci) hashing of the next three bytes, the key
    // the 2005 SigComp performance thesis §7.8.5 uses (one bounds check for
    // the three).
    let b = &b[..3];
    let k = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
    (k.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize & (HASH_SIZE - 1)
}

/// Length of the common prefix of `a` and `b` (equal lengths), 8 bytes at
/// a time: the first differing byte is the lowest set byte of the XOR of
/// two little-endian words.
#[inline]
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
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

/// A copy of a history's bytes (`history_len` of them) or of its chain
/// links, with room to grow to the bound the history slides back from
/// (twice the window) plus a message: a new compartment's finder, cloned
/// from a template over its fresh window, then does not reallocate (and
/// copy) them during its first messages.
fn with_room_to_grow<T: Copy>(items: &[T], history_len: usize) -> Vec<T> {
    /// Room for a message beyond twice the window.
    const SLACK: usize = 2048;
    let mut v = Vec::with_capacity(2 * history_len.max(1024) + SLACK);
    v.extend_from_slice(items);
    v
}

/// A point in the history to return to (a finder's `mark`, then
/// `rollback`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryMark {
    len: usize,
    hashed: usize,
}

/// The bytes written to the circular buffer, oldest first, and the hash
/// chains over them: `head[h]` is the newest hashed position whose next
/// three bytes hash to `h`, `prev[p]` the next older one after `p`, so a
/// chain runs from newer to older positions.
#[derive(Debug)]
pub(crate) struct History {
    pub(crate) data: Vec<u8>,
    /// A fixed-size array, so a hash indexes it without a bounds check.
    pub(crate) head: Box<[u32; HASH_SIZE]>,
    pub(crate) prev: Vec<u32>,
    /// Positions below this are in the chains.
    pub(crate) hashed: usize,
    /// Whole rebuilds done (for tests and reports).
    pub(crate) rebuilds: usize,
}

impl Default for History {
    fn default() -> Self {
        History { data: Vec::new(), head: Box::new([NIL; HASH_SIZE]), prev: Vec::new(), hashed: 0, rebuilds: 0 }
    }
}

impl Clone for History {
    /// A copy with room to grow ([`with_room_to_grow`]).
    fn clone(&self) -> Self {
        History {
            data: with_room_to_grow(&self.data, self.data.len()),
            head: self.head.clone(),
            prev: with_room_to_grow(&self.prev, self.data.len()),
            hashed: self.hashed,
            rebuilds: self.rebuilds,
        }
    }
}

impl History {
    /// A history that is `window`, every position hashed (a finder's
    /// template for new compartments with the same fresh window).
    pub(crate) fn over(window: &[u8]) -> History {
        let mut h = History::default();
        h.prepare(window, 0);
        h.mark();
        h
    }

    /// Makes the history end with `window` (the circular buffer in
    /// chronological order). If it already does, with at most
    /// `max_patched` differing bytes (such as the shared-state header the
    /// LZSS bytecode writes over the message start), those are patched in
    /// place and nothing is rehashed; otherwise the history is rebuilt as
    /// `window`, none of it hashed yet.
    pub(crate) fn prepare(&mut self, window: &[u8], max_patched: usize) {
        let w = window.len();
        let l = self.data.len();
        if l >= w {
            let tail = &mut self.data[l - w..];
            // The usual case, equal, costs one memcmp; counting is for the rest.
            let same = *tail == *window
                || (max_patched > 0 && {
                    let diffs = tail.iter().zip(window).filter(|(a, b)| a != b).count();
                    // Stale chain entries are harmless to a finder that
                    // compares every candidate byte by byte before use.
                    if diffs <= max_patched {
                        tail.copy_from_slice(window);
                    }
                    diffs <= max_patched
                });
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

    /// Appends `bytes` to the history, not hashed yet.
    #[inline]
    pub(crate) fn append(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
    }

    /// Appends `bytes` to the history and hashes all of it.
    pub(crate) fn append_hashed(&mut self, bytes: &[u8]) {
        self.data.extend_from_slice(bytes);
        self.hash_up_to(self.data.len());
    }

    /// Where the history ends now, for [`History::rollback`]. The history
    /// so far is hashed first, so trials share its chains.
    pub(crate) fn mark(&mut self) -> HistoryMark {
        self.hash_up_to(self.data.len());
        HistoryMark { len: self.data.len(), hashed: self.hashed }
    }

    /// Forgets everything appended since `mark` (a trial encoding), chains
    /// included, as if it had never been added: the head entries are
    /// restored in reverse order of insertion (each insertion saved the old
    /// head in its own link). A mark beyond the history changes nothing.
    pub(crate) fn rollback(&mut self, mark: HistoryMark) {
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

    /// Inserts position `pos`, whose three bytes hash to `h`, into its
    /// chain if it is the next one to insert and has its link's room;
    /// returns whether it did.
    #[cfg(any(feature = "deflate", feature = "lz77"))]
    #[inline(always)]
    pub(crate) fn insert_next(&mut self, pos: usize, h: usize) -> bool {
        let next = self.hashed == pos && pos < self.prev.len();
        if next {
            self.prev[pos] = self.head[h];
            self.head[h] = pos as u32;
            self.hashed = pos + 1;
        }
        next
    }

    /// Inserts every position below `end` that has three bytes after it.
    #[inline(always)]
    pub(crate) fn hash_up_to(&mut self, end: usize) {
        let p = self.hashed;
        if end == p + 1 && p + 3 <= self.data.len() && p < self.prev.len() {
            // One position, a parse's step before a search: inline and
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

    /// [`History::hash_up_to`] for any number of positions.
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

    /// The hash of the three bytes at `pos` and the newest position in
    /// their chain (`None` where fewer than three bytes are left).
    #[cfg(any(feature = "deflate", feature = "lz77"))]
    #[inline(always)]
    pub(crate) fn chain_start(&self, pos: usize) -> Option<(usize, u32)> {
        let b = self.data.get(pos..pos + 3)?;
        let h = hash3(b);
        Some((h, self.head[h]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes over a small alphabet, so chains are long and hashes collide.
    fn text(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed;
        (0..len)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                b"aabcd ;\r\n"[(x >> 16) as usize % 9]
            })
            .collect()
    }

    fn chains(h: &History) -> (&[u8], &[u32], &[u32], usize) {
        (&h.data, &h.head[..], &h.prev[..h.hashed], h.hashed)
    }

    #[test]
    fn a_slid_history_has_the_chains_a_rebuild_gives() {
        let bytes = text(5000, 7);
        for w in [600, 1000, 2000] {
            let window = &bytes[bytes.len() - w..];
            let mut slid = History::over(&bytes[..bytes.len() - 1500]);
            slid.append_hashed(&bytes[bytes.len() - 1500..]);
            slid.prepare(window, 0);
            assert!(slid.data.len() == w && slid.rebuilds == 1, "{w}: slid, not rebuilt");
            slid.hash_up_to(slid.data.len());
            let fresh = History::over(window);
            assert_eq!(chains(&slid), chains(&fresh), "{w}");
        }
    }

    #[test]
    fn a_few_differing_bytes_are_patched_only_where_allowed() {
        let window = text(2000, 3);
        let mut patched = window.clone();
        for k in [10, 11, 500] {
            patched[k] ^= 0x40;
        }
        for (max_patched, rebuilds) in [(16, 1), (2, 2), (0, 2)] {
            let mut h = History::over(&window);
            h.prepare(&patched, max_patched);
            assert_eq!((h.data.as_slice(), h.rebuilds), (patched.as_slice(), rebuilds), "{max_patched}");
        }
    }

    #[test]
    fn rollback_restores_the_chains_of_the_mark() {
        let bytes = text(3000, 11);
        let mut h = History::over(&bytes[..2000]);
        let before = h.clone();
        let mark = h.mark();
        h.append_hashed(&bytes[2000..]);
        assert_ne!(h.hashed, before.hashed);
        h.rollback(mark);
        assert_eq!(chains(&h), chains(&before));
    }
}
