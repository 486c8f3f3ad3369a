//! Every state item, stored once however many compartments hold it, and
//! found by a partial identifier (RFC 3320 §7.2, §9.4.5).
//!
//! A STATE-ACCESS of an empty state is charged one cycle (RFC 3320
//! §9.4.5), so finding the item is nearly all that cycle's cost, and it
//! must not grow with the items stored. The items are indexed by the
//! first [`PREFIX_LEN`] bytes of their identifier, the shortest partial
//! identifier a message may use; identifiers are SHA-1 digests, so two
//! items share those 48 bits by chance once in 2^24 pairs.
//!
//! With a million items stored, a lookup misses the caches. The layout
//! keeps that to one miss on the index and one on the item:
//! - each item has a slot of its own in one vector, and a freed slot is
//!   reused;
//! - the index is one table of 8-byte entries, each naming a slot (or a
//!   list of slots, for items sharing a key), with no separate control
//!   bytes or keys to read first.
//!
//! [`Items::lookup_batch`] looks up several identifiers with their misses
//! overlapped: every index entry first, then every item, then the checks.

use super::item::{State, StateId};
use crate::keyed_hash::{fold_multiply, random_seed};

/// Why a partial identifier did not select a state item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupError {
    /// No item's identifier begins with it (STATE_NOT_FOUND, RFC 4077
    /// §3.2).
    NotFound,
    /// The identifiers of more than one item begin with it (ID_NOT_UNIQUE).
    NotUnique,
    /// Found, but the item's minimum_access_length exceeds the identifier.
    TooShortForAccess,
}

/// A stored item and who holds it.
#[derive(Debug)]
pub(super) struct Stored {
    pub(super) state: State,
    /// Compartments holding this item (local items are never dropped).
    pub(super) holders: u32,
    pub(super) local: bool,
}

/// Bytes of an identifier the items are indexed by: the shortest partial
/// identifier RFC 3320 §7.2 and §9.4.5 allow.
pub(super) const PREFIX_LEN: usize = 6;

/// The index key of an identifier of at least [`PREFIX_LEN`] bytes.
pub(super) fn prefix_key(id: &[u8]) -> u64 {
    id[..PREFIX_LEN].iter().fold(0u64, |k, &b| (k << 8) | u64::from(b))
}

/// Identifiers [`Items::lookup_batch`] takes at once, at most: a missed
/// one and the 32 read after it (`crate::lookup_memo::LOOKAHEAD`).
pub const MAX_BATCH: usize = 33;

/// The stored items, by the first [`PREFIX_LEN`] bytes of their
/// identifier.
#[derive(Debug, Default)]
pub(super) struct Items {
    /// Every item; a freed slot is reused.
    slots: Vec<Option<Stored>>,
    free: Vec<u32>,
    /// Index key → the slot of its one item, or ([`SHARED`] set) which
    /// list of `shared` holds the slots of its several.
    index: PrefixIndex,
    shared: Vec<Vec<u32>>,
    shared_free: Vec<u32>,
}

/// Marks an index value naming a list of slots rather than one slot.
const SHARED: u32 = 1 << 31;

impl Items {
    pub(super) fn stored(&self, slot: u32) -> Option<&Stored> {
        self.slots.get(slot as usize)?.as_ref()
    }

    /// The slots an index value names.
    #[inline]
    fn slots_named(&self, value: u32) -> impl Iterator<Item = u32> + '_ {
        let (one, several) = if value & SHARED == 0 {
            (Some(value), &[][..])
        } else {
            (None, self.shared.get((value & !SHARED) as usize).map_or(&[][..], Vec::as_slice))
        };
        one.into_iter().chain(several.iter().copied())
    }

    /// The items whose identifiers begin with the index key `key`.
    #[inline]
    pub(super) fn with_key(&self, key: u64) -> impl Iterator<Item = &Stored> {
        self.index
            .candidates(key)
            .flat_map(move |v| self.slots_named(v))
            .filter_map(|i| self.stored(i))
            .filter(move |s| prefix_key(&s.state.id.0) == key)
    }

    /// The index position and value of the entry of key `key`.
    fn entry_of(&self, key: u64) -> Option<(usize, u32)> {
        self.index.find(key, |v| {
            self.slots_named(v).next().and_then(|i| self.stored(i)).is_some_and(|s| prefix_key(&s.state.id.0) == key)
        })
    }

    /// The slot of the item `id`.
    fn slot_of(&self, id: &StateId) -> Option<u32> {
        self.entry_and_slot_of(id).map(|(_, _, slot)| slot)
    }

    /// The index position and value of the entry of `id`'s key, and the
    /// slot of the item `id`.
    fn entry_and_slot_of(&self, id: &StateId) -> Option<(usize, u32, u32)> {
        let (at, v) = self.entry_of(prefix_key(&id.0))?;
        let slot = self.slots_named(v).find(|&i| self.stored(i).is_some_and(|s| s.state.id == *id))?;
        Some((at, v, slot))
    }

    pub(super) fn get(&self, id: &StateId) -> Option<&Stored> {
        self.stored(self.slot_of(id)?)
    }

    pub(super) fn get_mut(&mut self, id: &StateId) -> Option<&mut Stored> {
        let i = self.slot_of(id)?;
        self.slots.get_mut(i as usize)?.as_mut()
    }

    /// Adds an item whose identifier is not stored yet.
    pub(super) fn insert(&mut self, stored: Stored) {
        let key = prefix_key(&stored.state.id.0);
        let existing = self.entry_of(key);
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(stored);
                i
            }
            None => {
                self.slots.push(Some(stored));
                (self.slots.len() - 1) as u32
            }
        };
        match existing {
            None => self.index.insert(key, slot),
            Some((_, v)) if v & SHARED != 0 => {
                if let Some(list) = self.shared.get_mut((v & !SHARED) as usize) {
                    list.push(slot);
                }
            }
            Some((at, v)) => {
                let list = vec![v, slot];
                let n = match self.shared_free.pop() {
                    Some(n) => {
                        self.shared[n as usize] = list;
                        n
                    }
                    None => {
                        self.shared.push(list);
                        (self.shared.len() - 1) as u32
                    }
                };
                self.index.set(at, SHARED | n);
            }
        }
    }

    pub(super) fn remove(&mut self, id: &StateId) {
        let Some((at, v, slot)) = self.entry_and_slot_of(id) else { return };
        if v & SHARED == 0 {
            self.index.remove_at(at);
        } else {
            let n = (v & !SHARED) as usize;
            let Some(list) = self.shared.get_mut(n) else { return };
            list.retain(|&i| i != slot);
            if let [last] = list.as_slice() {
                let last = *last;
                self.shared[n] = Vec::new();
                self.shared_free.push(n as u32);
                self.index.set(at, last);
            }
        }
        self.slots[slot as usize] = None;
        self.free.push(slot);
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Stored> {
        self.slots.iter().flatten()
    }

    /// Every stored item, taken out of the store.
    pub(super) fn into_stored(self) -> impl Iterator<Item = Stored> {
        self.slots.into_iter().flatten()
    }

    /// The unique item whose identifier begins with the first `len` bytes
    /// of `id` (6 to 20; the bytes after them are zero), if a partial
    /// identifier of that length may access it.
    #[inline]
    pub(super) fn lookup_padded(&self, id: &[u8; 20], len: usize) -> Result<&State, LookupError> {
        let wanted = IdPrefix::new(id, len);
        let state = unique(self.with_key(prefix_key(id)).filter(|s| wanted.begins(&s.state.id)))?;
        access_length_checked(state, len)
    }

    /// The unique item whose identifier begins with `partial` (shorter
    /// than [`PREFIX_LEN`]: looked for in every item).
    pub(super) fn lookup_short(&self, partial: &[u8]) -> Result<&State, LookupError> {
        let state = unique(self.values().filter(|s| s.state.id.0.starts_with(partial)))?;
        access_length_checked(state, partial.len())
    }

    /// [`Items::lookup_padded`] of each of `ids` (at most [`MAX_BATCH`];
    /// each with its length) into `found`, with the cache misses of the
    /// lookups overlapped rather than one after another: each phase's
    /// loads depend on nothing the same phase loads, so the processor
    /// has them all in flight at once. The answers are exactly those of
    /// [`Items::lookup_padded`]; only the order of the loads differs.
    pub(super) fn lookup_batch<'s>(&'s self, ids: &[([u8; 20], u8)], found: &mut [Result<&'s State, LookupError>]) {
        let n = ids.len().min(MAX_BATCH).min(found.len());
        let mut entries = [PrefixIndex::EMPTY; MAX_BATCH];
        let mut tags = [0u32; MAX_BATCH];
        // The first index entry of each probe.
        for (k, (id, _)) in ids[..n].iter().enumerate() {
            let tag = self.index.tag(prefix_key(id));
            tags[k] = tag;
            entries[k] = self.index.first_entry(tag);
        }
        // The item each first entry names, where it is a likely match.
        let mut touched = 0u8;
        for k in 0..n {
            if let Some(v) = PrefixIndex::value_if_tagged(entries[k], tags[k]).filter(|v| v & SHARED == 0) {
                touched ^= self.stored(v).map_or(0, |s| s.state.id.0[0]);
            }
        }
        // Keeps the loads above: their values are used.
        std::hint::black_box(touched);
        for ((id, len), out) in ids[..n].iter().zip(found.iter_mut()) {
            *out = self.lookup_padded(id, usize::from(*len));
        }
    }
}

/// A partial identifier of 6 to 20 bytes, zero-padded to 20 and held as
/// two words with a mask of its length, so that testing an identifier
/// is a few word operations rather than a byte loop or a call.
struct IdPrefix {
    low: u128,
    high: u32,
    low_mask: u128,
    high_mask: u32,
}

impl IdPrefix {
    /// The first `len` bytes of `padded` (6 to 20; the rest are zero).
    #[inline]
    fn new(padded: &[u8; 20], len: usize) -> IdPrefix {
        let (low, high) = id_words(padded);
        let low_mask = if len >= 16 { u128::MAX } else { (1u128 << (8 * len)) - 1 };
        let high_mask = if len >= 20 { u32::MAX } else { (1u32 << (8 * len.saturating_sub(16))) - 1 };
        IdPrefix { low, high, low_mask, high_mask }
    }

    /// Whether `id` begins with this partial identifier.
    #[inline]
    fn begins(&self, id: &StateId) -> bool {
        let (low, high) = id_words(&id.0);
        (low & self.low_mask) == self.low && (high & self.high_mask) == self.high
    }
}

/// `state`, if a partial identifier of `len` bytes may access it
/// (RFC 3320 §6.2: minimum_access_length).
fn access_length_checked(state: &State, len: usize) -> Result<&State, LookupError> {
    if usize::from(state.min_access_len) > len {
        return Err(LookupError::TooShortForAccess);
    }
    Ok(state)
}

/// An identifier's bytes as two little-endian words.
#[inline]
fn id_words(id: &[u8; 20]) -> (u128, u32) {
    let mut low = [0u8; 16];
    low.copy_from_slice(&id[..16]);
    let mut high = [0u8; 4];
    high.copy_from_slice(&id[16..]);
    (u128::from_le_bytes(low), u32::from_le_bytes(high))
}

/// The one item of `matches`, if there is exactly one.
fn unique<'s>(mut matches: impl Iterator<Item = &'s Stored>) -> Result<&'s State, LookupError> {
    let first = matches.next().ok_or(LookupError::NotFound)?;
    if matches.next().is_some() {
        return Err(LookupError::NotUnique);
    }
    Ok(&first.state)
}

/// Index keys → 31-bit values, by open addressing with linear probing.
///
/// Each entry is 8 bytes: the high half is the key's tag, 32 bits of a
/// hash of the key with a random key of the table's own (a peer that
/// chose its states' digests cannot aim them at one probe sequence); the
/// low half is the value. The key itself is not kept: the caller tells a
/// tag's entries apart by the items they name, which it reads anyway. A
/// probe starts at the tag's low bits, so an entry's home is known from
/// the entry alone, and growing or deleting (by shifting the entries
/// after it back, no tombstones) reads no item.
///
/// At most half full: with a million items the table is 16 MiB, against
/// about 34 for a general hash map of (key, value) pairs, and a lookup
/// reads one entry (1.5 on average), where the map read a control group
/// and then a bucket.
#[derive(Debug)]
struct PrefixIndex {
    /// A power of two long (or empty); [`PrefixIndex::EMPTY`] marks a free
    /// entry.
    entries: Vec<u64>,
    len: usize,
    seed: [u64; 2],
}

impl Default for PrefixIndex {
    fn default() -> Self {
        PrefixIndex { entries: Vec::new(), len: 0, seed: random_seed() }
    }
}

/// Entries of a new index.
const FIRST_ENTRIES: usize = 16;

impl PrefixIndex {
    /// A free entry (no value is `u32::MAX`: slots and lists number fewer
    /// than 2^31).
    const EMPTY: u64 = u64::MAX;

    /// The tag of `key`.
    #[inline]
    fn tag(&self, key: u64) -> u32 {
        (fold_multiply(key ^ self.seed[0], self.seed[1]) >> 32) as u32
    }

    #[inline]
    fn mask(&self) -> usize {
        self.entries.len().wrapping_sub(1)
    }

    /// The entry a probe for `tag` starts at ([`PrefixIndex::EMPTY`] for an
    /// empty table).
    #[inline]
    fn first_entry(&self, tag: u32) -> u64 {
        self.entries.get(tag as usize & self.mask()).copied().unwrap_or(PrefixIndex::EMPTY)
    }

    /// `entry`'s value if the entry is `tag`'s.
    #[inline]
    fn value_if_tagged(entry: u64, tag: u32) -> Option<u32> {
        (entry != PrefixIndex::EMPTY && (entry >> 32) as u32 == tag).then_some(entry as u32)
    }

    /// The values of the entries tagged as `key` is, in probe order: the
    /// key's own is among them, if it has one.
    #[inline]
    fn candidates(&self, key: u64) -> impl Iterator<Item = u32> + '_ {
        let tag = self.tag(key);
        let mask = self.mask();
        let start = tag as usize & mask;
        (0..self.entries.len())
            .map(move |k| self.entries[(start + k) & mask])
            .take_while(|&e| e != PrefixIndex::EMPTY)
            .filter_map(move |e| PrefixIndex::value_if_tagged(e, tag))
    }

    /// The position and value of the entry tagged as `key` whose value
    /// `is_key` says is the key's.
    fn find(&self, key: u64, is_key: impl Fn(u32) -> bool) -> Option<(usize, u32)> {
        let tag = self.tag(key);
        let mask = self.mask();
        let start = tag as usize & mask;
        for k in 0..self.entries.len() {
            let at = (start + k) & mask;
            let e = self.entries[at];
            if e == PrefixIndex::EMPTY {
                return None;
            }
            if let Some(v) = PrefixIndex::value_if_tagged(e, tag).filter(|&v| is_key(v)) {
                return Some((at, v));
            }
        }
        None
    }

    /// Adds `key` (not in the index) with `value`.
    fn insert(&mut self, key: u64, value: u32) {
        if (self.len + 1) * 2 > self.entries.len() {
            self.grow();
        }
        let tag = self.tag(key);
        self.place(u64::from(tag) << 32 | u64::from(value));
        self.len += 1;
    }

    /// Puts `entry` in the first free entry of its probe.
    fn place(&mut self, entry: u64) {
        let mask = self.mask();
        let mut at = (entry >> 32) as usize & mask;
        while self.entries[at] != PrefixIndex::EMPTY {
            at = (at + 1) & mask;
        }
        self.entries[at] = entry;
    }

    /// A new value for the entry at `at`.
    fn set(&mut self, at: usize, value: u32) {
        if let Some(e) = self.entries.get_mut(at) {
            *e = (*e & !u64::from(u32::MAX)) | u64::from(value);
        }
    }

    /// Removes the entry at `at`, moving back the entries after it that
    /// a probe would otherwise no longer reach.
    fn remove_at(&mut self, at: usize) {
        let mask = self.mask();
        let mut hole = at;
        let mut i = (at + 1) & mask;
        loop {
            let e = self.entries[i];
            if e == PrefixIndex::EMPTY {
                break;
            }
            let home = (e >> 32) as usize & mask;
            // `e` may fill the hole if its home is not after the hole on
            // its way round to `i`.
            if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(hole) & mask) {
                self.entries[hole] = e;
                hole = i;
            }
            i = (i + 1) & mask;
        }
        self.entries[hole] = PrefixIndex::EMPTY;
        self.len -= 1;
    }

    /// Doubles the table and places every entry again.
    fn grow(&mut self) {
        let n = (self.entries.len() * 2).max(FIRST_ENTRIES);
        let old = std::mem::replace(&mut self.entries, vec![PrefixIndex::EMPTY; n]);
        for e in old.into_iter().filter(|&e| e != PrefixIndex::EMPTY) {
            self.place(e);
        }
    }

    #[cfg(test)]
    fn longest_probe(&self) -> usize {
        let (mut longest, mut run) = (0, 0);
        for &e in self.entries.iter().chain(&self.entries) {
            run = if e == PrefixIndex::EMPTY { 0 } else { run + 1 };
            longest = longest.max(run);
        }
        longest.min(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored_with_id(id: [u8; 20]) -> Stored {
        let mut state = State::new(0, 0, 6, &id[19..]);
        state.id = StateId(id);
        Stored { state, holders: 1, local: false }
    }

    fn hashed_id(i: u32) -> StateId {
        State::new(0, 0, 6, &i.to_be_bytes()).id
    }

    #[test]
    fn a_lookup_compares_a_bucket_not_the_store() {
        // The cost of STATE-ACCESS must not grow with the states stored
        // (RFC 3320 §9.4.5 charges 1 + length cycles): with 10,000 items a
        // lookup by a 6-byte identifier probes a few index entries and
        // compares only the items sharing its 48 bits.
        let mut items = Items::default();
        let ids: Vec<StateId> = (0u32..10_000).map(hashed_id).collect();
        for id in &ids {
            items.insert(stored_with_id(id.0));
        }
        assert_eq!(items.len(), 10_000);
        let longest = items.index.longest_probe();
        assert!(longest <= 40, "a probe of {longest} entries");
        for id in &ids {
            assert_eq!(items.with_key(prefix_key(&id.0)).count(), 1);
            assert_eq!(items.lookup_padded(&id.0, 20).unwrap().id, *id);
        }
    }

    #[test]
    fn items_sharing_an_index_key_are_kept_apart() {
        let mut items = Items::default();
        let id = |last: u8| {
            let mut id = [9u8; 20];
            id[19] = last;
            id
        };
        for last in 0..4 {
            items.insert(stored_with_id(id(last)));
        }
        assert_eq!(items.len(), 4);
        assert_eq!(items.with_key(prefix_key(&[9; 6])).count(), 4);
        assert_eq!(items.index.len, 1);
        for last in [2, 0, 3] {
            assert!(items.get(&StateId(id(last))).is_some());
            items.remove(&StateId(id(last)));
            assert!(items.get(&StateId(id(last))).is_none());
        }
        // One item left: the index names its slot again, not a list.
        assert_eq!(items.index.len, 1);
        let (_, v) = items.entry_of(prefix_key(&[9; 6])).unwrap();
        assert_eq!(v & SHARED, 0);
        assert_eq!(items.stored(v).map(|s| s.state.id), Some(StateId(id(1))));
        items.remove(&StateId(id(1)));
        assert_eq!((items.len(), items.index.len, items.values().count()), (0, 0, 0));
        // Freed slots and lists are reused.
        for last in 0..4 {
            items.insert(stored_with_id(id(last)));
        }
        assert_eq!((items.slots.len(), items.shared.len()), (4, 1));
    }

    #[test]
    fn the_index_agrees_with_a_map_through_inserts_and_removals() {
        // Removing shifts entries back (no tombstones); a wrong shift
        // would lose an item whose probe passes the removed entry. Keys
        // drawn from a small set of prefixes make long clusters and
        // shared keys; the table grows and wraps round its end.
        let mut items = Items::default();
        let mut model: std::collections::HashMap<StateId, ()> = std::collections::HashMap::new();
        let mut x = 0x9e37_79b9u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for round in 0..20_000u32 {
            let r = next();
            let mut id = hashed_id(r % 3000).0;
            // One id in eight shares its key with others of its group.
            if r % 8 == 0 {
                id[..6].copy_from_slice(&[(r % 5) as u8; 6]);
            }
            let id = StateId(id);
            if let std::collections::hash_map::Entry::Vacant(e) = model.entry(id) {
                items.insert(stored_with_id(id.0));
                e.insert(());
            } else {
                if (r >> 16) % 3 != 0 {
                    items.remove(&id);
                    model.remove(&id);
                }
            }
            if round % 997 == 0 || round == 19_999 {
                assert_eq!(items.len(), model.len());
                assert_eq!(items.values().count(), model.len());
                for id in model.keys() {
                    assert_eq!(items.get(id).map(|s| s.state.id), Some(*id), "round {round}");
                }
                let keys: std::collections::HashSet<u64> = model.keys().map(|id| prefix_key(&id.0)).collect();
                assert_eq!(items.index.len, keys.len());
                assert!(items.index.len * 2 <= items.index.entries.len());
            }
        }
    }

    #[test]
    fn a_batch_answers_as_lookups_one_by_one() {
        let mut items = Items::default();
        let mut ids: Vec<[u8; 20]> = (0u32..2_000).map(|i| hashed_id(i).0).collect();
        // Two items sharing 8 bytes, one needing 9 to be accessed.
        let (mut a, mut b) = ([7u8; 20], [7u8; 20]);
        a[8] = 1;
        b[8] = 2;
        ids.extend([a, b]);
        for id in &ids {
            items.insert(stored_with_id(*id));
        }
        let guarded = State::new(0, 0, 12, b"guarded");
        let guarded_id = guarded.id;
        items.insert(Stored { state: guarded, holders: 1, local: false });
        let mut asked: Vec<([u8; 20], u8)> = Vec::new();
        for (k, id) in ids.iter().enumerate().step_by(97) {
            let len = 6 + (k % 15) as u8;
            let mut padded = [0u8; 20];
            padded[..usize::from(len)].copy_from_slice(&id[..usize::from(len)]);
            asked.push((padded, len));
        }
        let pad = |id: &[u8], len: usize| {
            let mut p = [0u8; 20];
            p[..len].copy_from_slice(&id[..len]);
            (p, len as u8)
        };
        asked.extend([pad(&a, 6), pad(&a, 9), pad(&b, 20), pad(&[1, 2, 3, 4, 5, 6], 6)]);
        asked.extend([pad(&guarded_id.0, 6), pad(&guarded_id.0, 12)]);
        for chunk in asked.chunks(MAX_BATCH) {
            let mut found = [Err(LookupError::NotFound); MAX_BATCH];
            items.lookup_batch(chunk, &mut found);
            for ((id, len), got) in chunk.iter().zip(found) {
                let one = items.lookup_padded(id, usize::from(*len));
                assert_eq!(got.map(|s| s.id), one.map(|s| s.id));
            }
        }
        let mut found = [Err(LookupError::NotFound); 2];
        items.lookup_batch(&[pad(&a, 6), pad(&guarded_id.0, 6)], &mut found);
        assert_eq!(found[0].map(|s| s.id), Err(LookupError::NotUnique));
        assert_eq!(found[1].map(|s| s.id), Err(LookupError::TooShortForAccess));
        // An empty store answers every batch with not found.
        let empty = Items::default();
        let mut found = [Ok(empty_state()); 1];
        empty.lookup_batch(&[pad(&a, 6)], &mut found);
        assert_eq!(found[0].map(|s| s.id), Err(LookupError::NotFound));
    }

    fn empty_state() -> &'static State {
        static EMPTY: std::sync::OnceLock<State> = std::sync::OnceLock::new();
        EMPTY.get_or_init(|| State::new(0, 0, 6, &[]))
    }
}
