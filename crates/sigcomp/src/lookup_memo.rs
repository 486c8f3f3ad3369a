//! One message's state lookups, remembered for the rest of the message.
//!
//! A STATE-ACCESS of an empty state is charged one cycle (RFC 3320
//! §9.4.5), so its lookup is nearly all that cycle's cost. The store's
//! index ([`StateHandler::lookup_padded`]) is constant-time, but with
//! millions of states stored it spans hundreds of megabytes: a message
//! reading thousands of distinct states in turn misses the caches and the
//! TLB on every lookup. A message can only name the states whose
//! identifiers lie in its 64 KiB of memory (new ones cost charged cycles
//! to write or input), so the lookups it repeats are a few thousand at
//! most: kept here, each is found again without the store. The store
//! cannot change while a message runs (the UDVM holds it shared), so a
//! remembered answer stays right.
//!
//! The answers are kept in the order they were first asked for, and the
//! one after the last answer given is tried first. A decoder loop, or an
//! adversary's unrolled round of STATE-ACCESSes, asks in the same order
//! each time round, so its lookups walk the answers in memory order, which
//! the hardware prefetches; any other order goes through a small hash
//! index of the whole partial identifier (with a random key, so that a
//! peer cannot make its identifiers share a slot).
//!
//! A lookup the message has not made before goes to the store, and with
//! millions of states that is a cache miss or two from main memory. When
//! the instructions that follow are STATE-ACCESSes too (an unrolled run),
//! the UDVM reads their partial identifiers ahead ([`Upcoming`]) and the
//! memo looks them all up in one tight loop, so that their misses overlap
//! rather than follow one another. An answer looked up ahead is right for
//! its identifier whatever the message does next; if the message does not
//! use a batch it was given, it gets no more for the rest of the message,
//! so at most one batch per message is looked up for nothing.

use crate::keyed_hash::{fold_multiply, random_seed};
use crate::state::{LookupError, State, StateHandler, MAX_BATCH};

/// Lookups remembered per message, at most: the distinct 6-byte
/// identifiers 64 KiB of memory holds (10,922), rounded up. Past this a
/// lookup goes to the store each time (64 bytes an answer and 8 of index,
/// two 4-byte slots: at most about 1.2 MiB a message).
const MAX_REMEMBERED: usize = 16_384;

/// Index slots when the first answer is kept.
const FIRST_SLOTS: usize = 256;

/// Partial identifiers read ahead, at most, when a lookup is not
/// remembered. 32 rather than 16 took the round-robin at 16 cycles per bit
/// (`benches/worst_cycles.rs`) from a median of 78 to 59 ns a cycle.
pub const LOOKAHEAD: usize = 32;

// The store looks up the one not remembered and those read ahead at once.
const _: () = assert!(LOOKAHEAD < MAX_BATCH);

/// Items stored below which nothing is read ahead: the store's index and
/// items then stay in the caches, and decoding the STATE-ACCESSes ahead
/// costs more than the misses it would overlap (a message of 100
/// STATE-ACCESSes of packed states, 4,000 items stored, took about 95 ns
/// a cycle reading ahead and about 50 without).
const LOOKAHEAD_MIN_ITEMS: usize = 1 << 16;

/// The partial identifiers of the STATE-ACCESSes that follow the one being
/// run, in order (zero-padded, with their lengths).
pub struct Upcoming {
    ids: [[u8; 20]; LOOKAHEAD],
    lens: [u8; LOOKAHEAD],
    n: usize,
}

impl Default for Upcoming {
    fn default() -> Self {
        Upcoming::NONE
    }
}

impl Upcoming {
    /// None read ahead (a constant: passing it costs no zeroing).
    pub const NONE: Upcoming = Upcoming { ids: [[0; 20]; LOOKAHEAD], lens: [0; LOOKAHEAD], n: 0 };

    /// Adds one (6 to 20 bytes, the rest of `id` zero); false when full.
    pub fn push(&mut self, id: [u8; 20], len: usize) -> bool {
        if self.n == LOOKAHEAD {
            return false;
        }
        self.ids[self.n] = id;
        self.lens[self.n] = len as u8;
        self.n += 1;
        true
    }

    /// Whether it holds [`LOOKAHEAD`] identifiers, all it can.
    pub fn is_full(&self) -> bool {
        self.n == LOOKAHEAD
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8; 20], usize)> {
        self.ids[..self.n].iter().zip(self.lens[..self.n].iter().map(|&l| usize::from(l)))
    }
}

/// A partial identifier of 6 to 20 bytes, zero-padded, and its length.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    words: [u64; 2],
    tail: u32,
    len: u8,
}

impl Key {
    fn new(id: &[u8; 20], len: usize) -> Key {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&id[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let mut tail = [0u8; 4];
        tail.copy_from_slice(&id[16..]);
        Key { words: [word(0), word(8)], tail: u32::from_le_bytes(tail), len: len as u8 }
    }
}

/// What a STATE-ACCESS needs of the state it found, copied so that using
/// it again reads nothing of the store.
#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    /// The item found.
    pub state: &'a State,
    /// Its state_length in bytes.
    pub len: usize,
    /// Its state_address.
    pub address: u16,
    /// Its state_instruction.
    pub instruction: u16,
    /// The value's bytes if kept plain (a packed one is read through the
    /// message's [`crate::state::UnpackCache`]).
    pub plain: Option<&'a [u8]>,
}

/// One remembered lookup.
struct Answer<'a> {
    key: Key,
    found: Result<Found<'a>, LookupError>,
}

/// The lookups of one message.
#[derive(Default)]
pub struct LookupMemo<'a> {
    /// In the order first asked for.
    answers: Vec<Answer<'a>>,
    /// Open addressing over `answers`: an answer's position + 1, 0 for an
    /// empty slot; a power of two long, at most half full.
    slots: Vec<u32>,
    /// The answer tried first: the one after the last given.
    next: usize,
    /// The index hash's random key, drawn with the first slot.
    seed: [u64; 2],
    /// The answers of the last batch looked up ahead, and the furthest
    /// answer given since: a batch is used when the one given reaches its
    /// last.
    batch: std::ops::Range<usize>,
    furthest: usize,
    /// Set once a batch went unused: no more for this message.
    no_lookahead: bool,
}

/// The store's answer, as a STATE-ACCESS uses it.
#[inline]
fn look_up_in<'a>(states: &'a StateHandler, id: &[u8; 20], len: usize) -> Result<Found<'a>, LookupError> {
    states.lookup_padded(id, len).map(Found::of)
}

impl<'a> Found<'a> {
    #[inline]
    fn of(state: &'a State) -> Found<'a> {
        Found {
            state,
            len: state.len(),
            address: state.address,
            instruction: state.instruction,
            plain: state.plain_value(),
        }
    }
}

impl<'a> LookupMemo<'a> {
    /// [`StateHandler::lookup_padded`] of the first `len` bytes of `id`
    /// (6 to 20, the rest zero), remembered.
    #[cfg(test)]
    fn lookup(&mut self, states: &'a StateHandler, id: &[u8; 20], len: usize) -> Result<Found<'a>, LookupError> {
        match self.remembered(id, len) {
            Some(found) => found,
            None => self.look_up(states, id, len, &Upcoming::NONE),
        }
    }

    /// The remembered answer for the first `len` bytes of `id`, if any.
    #[inline]
    pub fn remembered(&mut self, id: &[u8; 20], len: usize) -> Option<Result<Found<'a>, LookupError>> {
        let key = Key::new(id, len);
        if let Some(a) = self.answers.get(self.next) {
            if a.key == key {
                self.furthest = self.furthest.max(self.next);
                self.next += 1;
                return Some(a.found);
            }
        }
        // The same state again (a loop around one STATE-ACCESS).
        if let Some(a) = self.next.checked_sub(1).and_then(|last| self.answers.get(last)) {
            if a.key == key {
                return Some(a.found);
            }
        }
        let at = self.position(&key)?;
        self.furthest = self.furthest.max(at);
        self.next = at + 1;
        Some(self.answers[at].found)
    }

    /// Whether identifiers read ahead would be looked up: the store is
    /// large enough for its lookups to miss the caches, and no batch of
    /// this message went unused.
    pub fn reads_ahead(&self, states: &StateHandler) -> bool {
        self.takes_batches() && states.item_count() >= LOOKAHEAD_MIN_ITEMS
    }

    /// Whether no batch of this message went unused.
    fn takes_batches(&self) -> bool {
        !self.no_lookahead
    }

    /// The store's answer for an identifier not remembered, and the
    /// answers for `upcoming` with it, remembered in that order so that
    /// the lookups after this one find them as predicted.
    #[inline(never)]
    pub fn look_up(
        &mut self,
        states: &'a StateHandler,
        id: &[u8; 20],
        len: usize,
        upcoming: &Upcoming,
    ) -> Result<Found<'a>, LookupError> {
        if self.batch.end > 0 && self.furthest + 1 < self.batch.end {
            self.no_lookahead = true;
        }
        if self.answers.len() >= MAX_REMEMBERED {
            self.next = self.answers.len();
            return look_up_in(states, id, len);
        }
        if !self.takes_batches() || upcoming.n == 0 {
            let found = look_up_in(states, id, len);
            self.remember(Key::new(id, len), found);
            self.given(self.answers.len() - 1);
            return found;
        }
        // This one and those read ahead, with their misses overlapped.
        let mut asked = [([0u8; 20], 0u8); MAX_BATCH];
        asked[0] = (*id, len as u8);
        for (slot, (id, len)) in asked[1..].iter_mut().zip(upcoming.iter()) {
            *slot = (*id, len as u8);
        }
        let n = 1 + upcoming.n;
        let mut answers = [Err(LookupError::NotFound); MAX_BATCH];
        states.lookup_batch(&asked[..n], &mut answers[..n]);
        let found = answers[0].map(Found::of);
        self.remember(Key::new(id, len), found);
        let at = self.answers.len() - 1;
        let start = self.answers.len();
        for ((id, len), answer) in asked[1..n].iter().zip(&answers[1..n]) {
            let key = Key::new(id, usize::from(*len));
            if self.answers.len() < MAX_REMEMBERED && self.position(&key).is_none() {
                self.remember(key, answer.map(Found::of));
            }
        }
        self.batch = start..self.answers.len();
        self.given(at);
        found
    }

    /// Notes that the answer at `at` was given: the next lookup tries the
    /// one after it first.
    #[inline]
    fn given(&mut self, at: usize) {
        self.furthest = self.furthest.max(at);
        self.next = at + 1;
    }

    /// Where `key`'s answer is, if remembered.
    #[inline]
    fn position(&self, key: &Key) -> Option<usize> {
        let mut slot = self.first_slot(key);
        loop {
            let taken = *self.slots.get(slot)?;
            if taken == 0 {
                return None;
            }
            let at = taken as usize - 1;
            if self.answers[at].key == *key {
                return Some(at);
            }
            slot = (slot + 1) & (self.slots.len() - 1);
        }
    }

    /// The slot `key`'s probe starts at (0 while there are no slots).
    #[inline]
    fn first_slot(&self, key: &Key) -> usize {
        if self.slots.is_empty() {
            return 0;
        }
        let h = fold_multiply(key.words[0] ^ self.seed[0], key.words[1] ^ self.seed[1]);
        let h = fold_multiply(h ^ (u64::from(key.tail) << 8 | u64::from(key.len)), self.seed[1] | 1);
        h as usize & (self.slots.len() - 1)
    }

    fn remember(&mut self, key: Key, found: Result<Found<'a>, LookupError>) {
        if self.answers.is_empty() {
            self.answers.reserve(FIRST_SLOTS / 2);
        }
        self.answers.push(Answer { key, found });
        if self.answers.len() * 2 > self.slots.len() {
            self.grow();
        } else {
            self.place(self.answers.len() - 1);
        }
    }

    /// Doubles the index (or makes its first slots) and places every
    /// answer again.
    fn grow(&mut self) {
        if self.slots.is_empty() {
            self.seed = random_seed();
        }
        let n = (self.slots.len() * 2).max(FIRST_SLOTS);
        self.slots.clear();
        self.slots.resize(n, 0);
        for at in 0..self.answers.len() {
            self.place(at);
        }
    }

    /// Puts answer `at` in the first free slot of its probe.
    fn place(&mut self, at: usize) {
        let mask = self.slots.len() - 1;
        let mut slot = self.first_slot(&self.answers[at].key);
        while self.slots[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        self.slots[slot] = at as u32 + 1;
    }

    /// Lookups remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.answers.len()
    }

    /// The longest run of taken slots: what an unpredicted lookup probes
    /// at most.
    #[cfg(test)]
    fn longest_probe(&self) -> usize {
        let (mut longest, mut run) = (0, 0);
        // Twice round, for a run that wraps past the last slot.
        for &s in self.slots.iter().chain(&self.slots) {
            run = if s == 0 { 0 } else { run + 1 };
            longest = longest.max(run);
        }
        longest.min(self.slots.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::CompartmentId;

    fn padded(id: &[u8]) -> [u8; 20] {
        let mut p = [0u8; 20];
        p[..id.len()].copy_from_slice(id);
        p
    }

    fn check<'a>(states: &'a StateHandler, memo: &mut LookupMemo<'a>, p: &[u8; 20], len: usize, context: &str) {
        let want = states.lookup_padded(p, len);
        let got = memo.lookup(states, p, len);
        match (want, got) {
            (Ok(w), Ok(g)) => {
                assert!(std::ptr::eq(w, g.state), "{context}");
                assert_eq!((g.len, g.address, g.instruction), (w.len(), w.address, w.instruction));
                assert_eq!(g.plain, Some(&w.value()[..]));
            }
            (Err(w), Err(g)) => assert_eq!(w, g, "{context}"),
            (w, g) => panic!("{context}: store {w:?}, memo {:?}", g.map(|f| f.state)),
        }
    }

    #[test]
    fn a_remembered_lookup_answers_as_the_store_does_in_any_order() {
        let mut states = StateHandler::new(131072);
        let mut ids = Vec::new();
        for a in 0..200u16 {
            let value = vec![a as u8; usize::from(a % 7)];
            match states.create(CompartmentId(u64::from(a / 50)), a, 0, if a % 3 == 0 { 12 } else { 6 }, &value, 1) {
                crate::state::CreateOutcome::Created(id) => ids.push(id),
                o => panic!("{o:?}"),
            }
        }
        let mut memo = LookupMemo::default();
        // In order twice (the second time as predicted), then backwards
        // and by a stride (through the index).
        let orders: [Vec<usize>; 4] = [
            (0..ids.len()).collect(),
            (0..ids.len()).collect(),
            (0..ids.len()).rev().collect(),
            (0..ids.len()).map(|i| i * 7 % ids.len()).collect(),
        ];
        for (round, order) in orders.iter().enumerate() {
            for &i in order {
                for len in [6usize, 9, 12, 20] {
                    check(&states, &mut memo, &padded(&ids[i].0[..len]), len, &format!("round {round}, state {i}"));
                }
            }
            // A partial identifier no state has is remembered as not found.
            let p = padded(&[0xEE; 6]);
            assert_eq!(memo.lookup(&states, &p, 6).map(|f| f.len), Err(LookupError::NotFound));
        }
        assert_eq!(memo.len(), ids.len() * 4 + 1);
    }

    #[test]
    fn identifiers_read_ahead_are_answered_as_predicted_until_a_batch_goes_unused() {
        let mut states = StateHandler::new(131072);
        let ids: Vec<[u8; 20]> = (0..40u16)
            .map(|a| match states.create(CompartmentId(1), a, 0, 6, &[a as u8], 1) {
                crate::state::CreateOutcome::Created(id) => padded(&id.0[..6]),
                o => panic!("{o:?}"),
            })
            .collect();
        let mut memo = LookupMemo::default();
        let mut upcoming = Upcoming::default();
        for id in &ids[1..=LOOKAHEAD] {
            upcoming.push(*id, 6);
        }
        assert!(!upcoming.push(ids[0], 6), "full at {LOOKAHEAD}");
        assert!(memo.remembered(&ids[0], 6).is_none());
        check_found(&states, memo.look_up(&states, &ids[0], 6, &upcoming), &ids[0]);
        assert_eq!(memo.len(), 1 + LOOKAHEAD);
        // The batch, in order: each is the one predicted.
        for id in &ids[1..=LOOKAHEAD] {
            let before = memo.next;
            check_found(&states, memo.remembered(id, 6).expect("looked up ahead"), id);
            assert_eq!(memo.next, before + 1);
        }
        // A batch used: the next miss may read ahead again; this one is
        // not used (the message goes elsewhere), and the miss after that
        // reads no further.
        assert!(memo.takes_batches());
        let (a, b) = (LOOKAHEAD + 1, LOOKAHEAD + 2);
        let mut unused = Upcoming::default();
        unused.push(ids[b], 6);
        check_found(&states, memo.look_up(&states, &ids[a], 6, &unused), &ids[a]);
        let c = LOOKAHEAD + 3;
        assert!(memo.remembered(&ids[c], 6).is_none());
        let mut more = Upcoming::default();
        more.push(ids[c + 1], 6);
        check_found(&states, memo.look_up(&states, &ids[c], 6, &more), &ids[c]);
        assert!(!memo.takes_batches());
        assert!(memo.remembered(&ids[c + 1], 6).is_none(), "no lookup ahead once a batch went unused");
    }

    fn check_found(states: &StateHandler, got: Result<Found<'_>, LookupError>, id: &[u8; 20]) {
        let want = states.lookup_padded(id, 6).expect("stored");
        let got = got.expect("found");
        assert!(std::ptr::eq(want, got.state));
        assert_eq!(got.plain, Some(&want.value()[..]));
    }

    #[test]
    fn identifiers_sharing_their_first_bytes_do_not_share_a_probe() {
        // The store indexes the first 6 bytes; the memo must not, or a
        // message naming thousands of partial identifiers that differ
        // only after them would probe them all on every lookup.
        let states = StateHandler::new(131072);
        let mut memo = LookupMemo::default();
        for i in 0..MAX_REMEMBERED as u32 {
            let mut id = [0x5Au8; 20];
            id[6..10].copy_from_slice(&i.to_be_bytes());
            for b in &mut id[10..] {
                *b = 0;
            }
            assert_eq!(memo.lookup(&states, &id, 10).map(|f| f.len), Err(LookupError::NotFound));
        }
        assert_eq!(memo.len(), MAX_REMEMBERED);
        assert!(memo.longest_probe() < 64, "a probe of {} slots", memo.longest_probe());
        // Past the cap, lookups are answered and not kept.
        let id = padded(&[1, 2, 3, 4, 5, 6]);
        assert_eq!(memo.lookup(&states, &id, 6).map(|f| f.len), Err(LookupError::NotFound));
        assert_eq!(memo.len(), MAX_REMEMBERED);
    }
}
