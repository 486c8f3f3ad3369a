//! The state handler (RFC 3320 §6, corrected by RFC 4896 §5–7).
//!
//! State items are stored once, whatever the number of compartments that
//! created them: each compartment keeps only a list of (identifier,
//! retention priority, creation order) entries and its memory accounting,
//! and an item is dropped when no compartment and no local owner holds it
//! any more (RFC 3320 §6.2 step 4).

mod compartment;
mod frozen;
mod item;
mod packing;
mod store;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use crate::feedback::Feedback;

pub use compartment::{Compartment, Entry};
pub use frozen::FrozenStates;
pub use item::{PackDictionary, State, StateId, UnpackCache};
pub use store::{LookupError, MAX_BATCH};

use item::held_bytes;
use store::{prefix_key, Items, Stored, PREFIX_LEN};

/// An application's name for a compartment (RFC 3320 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CompartmentId(pub u64);

/// Bounds on what all compartments together may hold; past them the
/// least recently used compartments are closed (RFC 3320 §4.1 and
/// RFC 5049 §5 leave closing compartments to the application; this is
/// its policy when it sets none).
///
/// A compartment counts from the first time it is used: a message
/// accepted under it, a state created in it by any caller (the endpoint's
/// own shared states included), its SMS set, or
/// [`StateHandler::touch`]. Using it makes it the most recently used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Compartments open at once (at least 1 is always allowed).
    pub max_compartments: usize,
    /// Bytes of real memory the state of all compartments together may
    /// take: each item's length plus [`STATE_OVERHEAD_BYTES`], in every
    /// compartment that holds it ([`StateHandler::real_state_bytes`]).
    /// RFC 3320 §6.2 accounts an item 64 bytes besides its value, less
    /// than it takes: counting that, 1 GiB let zero-length items take
    /// 6.6 GB.
    pub max_state_bytes: usize,
}

impl Default for Limits {
    /// 65,536 compartments and 1 GiB of state memory: a busy proxy's
    /// worth of peers, with 16 KiB each on average (most SIP peers use a
    /// few KiB; 8,192 peers can each fill an SMS of 131,072 bytes).
    fn default() -> Self {
        Limits { max_compartments: 65_536, max_state_bytes: 1 << 30 }
    }
}

impl Limits {
    /// No bound: compartments stay until the application closes them.
    pub fn unlimited() -> Limits {
        Limits { max_compartments: usize::MAX, max_state_bytes: usize::MAX }
    }
}

/// Real memory one state item held by one compartment takes besides its
/// value: the item (its slot in the index of all items, its value's
/// shared buffer) and the compartment's entry (in its list, and in the
/// position and retention indexes a compartment of more than 16 entries
/// keeps). Measured as the growth of the resident set when 1,048,576
/// zero-length items, 2048 per compartment, are stored (tests/real_memory.rs,
/// `STATES=1048576 cargo test --release -p sigcomp --test real_memory --
/// --nocapture`): 308 bytes an item on x86-64 with glibc. Right after the
/// index of all items or its vector of item slots doubles, each item
/// takes up to about 80 bytes more, hence 400. An item several
/// compartments hold is counted in each (more than it takes).
pub const STATE_OVERHEAD_BYTES: usize = 400;

/// Evicted compartments kept for [`StateHandler::take_evicted`]; an
/// application that never takes them loses the oldest past this many.
pub const MAX_UNTAKEN_EVICTIONS: usize = 65_536;

/// Outcome of one state creation request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    /// A new entry in the compartment for this item.
    Created(StateId),
    /// The item already existed in this compartment: priority and age updated.
    Refreshed(StateId),
    /// Rejected: SMS is 0, or an identifier clash with a different item.
    Rejected,
}

/// The state handler of one endpoint.
///
/// Besides the state of each compartment it keeps the compartments in
/// least-recently-used order and enforces [`Limits`]: opening a
/// compartment beyond `max_compartments`, or creating state beyond
/// `max_state_bytes`, closes whole least recently used compartments
/// (never the one in use), each in O(log n) for n compartments. Every way
/// of creating a compartment goes through this, so no caller can bypass
/// the limits.
#[derive(Debug, Default)]
pub struct StateHandler {
    items: Items,
    compartments: HashMap<CompartmentId, Compartment>,
    next_order: u64,
    default_sms: u32,
    limits: Limits,
    /// Compartments by [`Compartment::last_used`], least recent first.
    lru: BTreeMap<u64, CompartmentId>,
    next_use: u64,
    /// Sum of every compartment's `used`.
    total_used: usize,
    /// Entries of all compartments together.
    entry_count: usize,
    /// Compartments closed to keep within the limits, not taken yet.
    evicted: VecDeque<CompartmentId>,
    evictions: u64,
    /// What packs are made against from now on; `None`: the RFC 3485
    /// SIP/SDP dictionary alone ([`StateHandler::set_pack_dictionary`]).
    pack_dictionary: Option<PackDictionary>,
}

impl StateHandler {
    /// A handler with no state and [`Limits::default`]; a compartment opened
    /// without its SMS set gets `default_sms` bytes.
    pub fn new(default_sms: u32) -> StateHandler {
        StateHandler { default_sms, ..StateHandler::default() }
    }

    /// The limits in force ([`Limits::default`] unless set).
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Sets the limits; compartments beyond them are closed at once, least
    /// recently used first.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
        while self.compartments.len() > limits.max_compartments.max(1)
            || self.real_state_bytes() > limits.max_state_bytes
        {
            if !self.evict_least_recent(None) {
                break;
            }
        }
    }

    /// Marks `compartment` as used now (the most recently used), opening
    /// it if new (which may close the least recently used other one).
    pub fn touch(&mut self, compartment: CompartmentId) {
        self.mark_used(compartment);
    }

    /// Compartments open.
    pub fn compartment_count(&self) -> usize {
        self.compartments.len()
    }

    /// State memory of all compartments, as RFC 3320 §6.2 accounts it
    /// (the sum of [`Compartment::used`]).
    pub fn state_bytes(&self) -> usize {
        self.total_used
    }

    /// Real memory the state of all compartments takes, as
    /// [`Limits::max_state_bytes`] bounds it: each entry's item length plus
    /// [`STATE_OVERHEAD_BYTES`].
    pub fn real_state_bytes(&self) -> usize {
        // Every entry's cost is its item's length + 64 (RFC 3320 §6.2).
        self.total_used + self.entry_count * (STATE_OVERHEAD_BYTES - 64)
    }

    /// Entries of all compartments together.
    pub fn entry_count(&self) -> usize {
        self.entry_count
    }

    /// Real memory the stored state takes: the values held
    /// ([`StateHandler::resident_bytes`]) and [`STATE_OVERHEAD_BYTES`] per
    /// entry. Walks the stored items.
    pub fn real_bytes(&self) -> usize {
        self.resident_bytes() + self.entry_count * STATE_OVERHEAD_BYTES
    }

    /// Compartments closed to keep within the limits since the handler was
    /// made.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Drains the compartments closed to keep within the limits since the
    /// last call (at most [`MAX_UNTAKEN_EVICTIONS`], the latest), least
    /// recently used first.
    pub fn take_evicted(&mut self) -> Vec<CompartmentId> {
        self.evicted.drain(..).collect()
    }

    /// The last `n` compartments evicted (fewer if not kept).
    pub(crate) fn last_evicted(&self, n: usize) -> Vec<CompartmentId> {
        self.evicted.iter().skip(self.evicted.len().saturating_sub(n)).copied().collect()
    }

    /// The compartment, made the most recently used; a new one is opened
    /// (after closing the least recently used others beyond
    /// `max_compartments`).
    fn open(&mut self, id: CompartmentId) -> &mut Compartment {
        self.mark_used(id);
        let default_sms = self.default_sms;
        self.compartments.entry(id).or_insert_with(|| Compartment::new(default_sms, 0))
    }

    /// [`StateHandler::open`] without the compartment: an open one is
    /// found once.
    fn mark_used(&mut self, id: CompartmentId) {
        let now = self.next_use;
        if let Some(c) = self.compartments.get_mut(&id) {
            // Already the most recently used: the order stays as it is.
            if c.last_used + 1 == now {
                return;
            }
            self.next_use += 1;
            let old = std::mem::replace(&mut c.last_used, now);
            self.lru.remove(&old);
            self.lru.insert(now, id);
            return;
        }
        self.next_use += 1;
        while self.compartments.len() >= self.limits.max_compartments.max(1) {
            if !self.evict_least_recent(Some(id)) {
                break;
            }
        }
        self.lru.insert(now, id);
        let c = Compartment::new(self.default_sms, now);
        self.compartments.insert(id, c);
    }

    /// Closes the least recently used compartment other than `keep`;
    /// false if there is none.
    fn evict_least_recent(&mut self, keep: Option<CompartmentId>) -> bool {
        // `keep` is at most one entry: the first or the second one is it.
        let Some(victim) = self.lru.values().copied().find(|c| Some(*c) != keep) else { return false };
        self.close_compartment(victim);
        if self.evicted.len() >= MAX_UNTAKEN_EVICTIONS {
            self.evicted.pop_front();
        }
        self.evicted.push_back(victim);
        self.evictions += 1;
        true
    }

    /// The feedback kept for `compartment`, if it is open and has any.
    pub(crate) fn feedback(&self, compartment: CompartmentId) -> Option<&Feedback> {
        self.compartments.get(&compartment)?.feedback.as_deref()
    }

    /// The feedback of `compartment`, which is opened (and made the most
    /// recently used) if need be.
    pub(crate) fn feedback_mut(&mut self, compartment: CompartmentId) -> &mut Feedback {
        self.open(compartment).feedback.get_or_insert_with(Box::default)
    }

    /// Adds a locally available state item (RFC 3320 §3.3.3): not mapped to
    /// any compartment, never freed, no cost against any SMS.
    pub fn add_local(&mut self, state: State) {
        let id = state.id;
        match self.items.get_mut(&id) {
            Some(s) => s.local = true,
            None => self.items.insert(Stored { state, holders: 0, local: true }),
        }
    }

    /// The item with this full identifier, local or held by a compartment.
    pub fn get(&self, id: &StateId) -> Option<&State> {
        self.items.get(id).map(|s| &s.state)
    }

    /// Number of distinct stored items (each stored once).
    pub fn item_count(&self) -> usize {
        self.items.len()
    }

    /// Bytes of state values stored, each distinct item counted once, at
    /// their plain size.
    pub fn stored_bytes(&self) -> usize {
        self.items.values().map(|s| s.state.len()).sum()
    }

    /// Bytes the stored values take in memory: plain items at their size,
    /// each pack of packed items ([`StateHandler::pack_compartment`]) once.
    pub fn resident_bytes(&self) -> usize {
        held_bytes(self.items.values().map(|s| &s.state.value))
    }

    /// Bytes the values of `compartment`'s items take in memory, as
    /// [`StateHandler::resident_bytes`] counts them.
    pub fn compartment_resident_bytes(&self, compartment: CompartmentId) -> usize {
        let Some(c) = self.compartments.get(&compartment) else { return 0 };
        held_bytes(c.entries.iter().filter_map(|e| self.items.get(&e.id)).map(|s| &s.state.value))
    }

    /// Finds the unique item whose identifier begins with `partial`
    /// (RFC 3320 §7.2). Checks minimum_access_length too.
    ///
    /// In constant time for a partial identifier of 6 bytes or more (the
    /// only lengths RFC 3320 allows): the items are indexed by their
    /// first 6 bytes, and the cost of an access must not grow with the
    /// state stored (a STATE-ACCESS is charged 1 + length cycles,
    /// RFC 3320 §9.4.5). A shorter one is looked for in every item.
    pub fn lookup(&self, partial: &[u8]) -> Result<&State, LookupError> {
        // An identifier has 20 bytes: a longer partial one is matched on
        // those.
        let partial = &partial[..partial.len().min(20)];
        if partial.len() < PREFIX_LEN {
            return self.items.lookup_short(partial);
        }
        let mut padded = [0u8; 20];
        padded[..partial.len()].copy_from_slice(partial);
        self.lookup_padded(&padded, partial.len())
    }

    /// [`StateHandler::lookup`] of the first `len` bytes of `id` (6 to 20;
    /// the bytes after them are zero), as the UDVM's STATE-ACCESS holds
    /// them: no copy of its own.
    #[inline]
    pub fn lookup_padded(&self, id: &[u8; 20], len: usize) -> Result<&State, LookupError> {
        self.items.lookup_padded(id, len)
    }

    /// [`StateHandler::lookup_padded`] of each of `ids` (each padded, with
    /// its length; at most [`MAX_BATCH`]) into `found`, with their cache
    /// misses overlapped: the same answers, sooner when the store is too
    /// large for the caches.
    pub fn lookup_batch<'s>(&'s self, ids: &[([u8; 20], u8)], found: &mut [Result<&'s State, LookupError>]) {
        self.items.lookup_batch(ids, found);
    }

    /// The compartment's entries and accounting, if it is open.
    pub fn compartment(&self, id: CompartmentId) -> Option<&Compartment> {
        self.compartments.get(&id)
    }

    /// The open compartments, in no particular order.
    pub fn compartment_ids(&self) -> impl Iterator<Item = CompartmentId> + '_ {
        self.compartments.keys().copied()
    }

    /// Sets a compartment's state memory size (RFC 3320 §3.3.1: it may vary
    /// per compartment). Shrinking evicts in retention order.
    pub fn set_compartment_sms(&mut self, id: CompartmentId, sms: u32) {
        let c = self.open(id);
        c.sms = sms;
        let mut victims = Vec::new();
        let mut freed = 0;
        while c.used > c.sms {
            let Some(v) = c.eviction_victim(None) else { break };
            let e = c.remove(v);
            freed += e.cost as usize;
            victims.push(e.id);
        }
        self.total_used -= freed;
        self.entry_count -= victims.len();
        for v in victims {
            self.release(&v);
        }
    }

    /// Closes a compartment, releasing its state (RFC 3320 §6.2, last para).
    pub fn close_compartment(&mut self, id: CompartmentId) {
        if let Some(c) = self.compartments.remove(&id) {
            self.lru.remove(&c.last_used);
            self.total_used -= c.used as usize;
            self.entry_count -= c.entries.len();
            for e in c.entries {
                self.release(&e.id);
            }
        }
    }

    fn release(&mut self, id: &StateId) {
        if let Some(s) = self.items.get_mut(id) {
            s.holders = s.holders.saturating_sub(1);
            if s.holders == 0 && !s.local {
                self.items.remove(id);
            }
        }
    }

    /// A state creation request under a valid compartment identifier
    /// (RFC 3320 §6.2 steps 1–5, RFC 4896 §5.2 and §6).
    pub fn create(
        &mut self,
        compartment: CompartmentId,
        address: u16,
        instruction: u16,
        min_access_len: u16,
        value: &[u8],
        priority: u16,
    ) -> CreateOutcome {
        // Step 2's truncation first, so the identifier is hashed once.
        let value = &value[..value.len().min(value_room(self.compartment_sms(compartment)))];
        self.create_state(compartment, State::new(address, instruction, min_access_len, value), priority)
    }

    /// As [`StateHandler::create`], for a value in a buffer of its own,
    /// which the item keeps (unless truncated) instead of a copy.
    pub fn create_shared(
        &mut self,
        compartment: CompartmentId,
        address: u16,
        instruction: u16,
        min_access_len: u16,
        value: Arc<[u8]>,
        priority: u16,
    ) -> CreateOutcome {
        let max_len = value_room(self.compartment_sms(compartment));
        let state = if value.len() > max_len {
            State::new(address, instruction, min_access_len, &value[..max_len])
        } else {
            State::from_shared(address, instruction, min_access_len, value)
        };
        self.create_state(compartment, state, priority)
    }

    /// The SMS of `compartment` (the default for one not seen yet).
    fn compartment_sms(&self, compartment: CompartmentId) -> u32 {
        self.compartments.get(&compartment).map_or(self.default_sms, |c| c.sms)
    }

    /// As [`StateHandler::create`], for an item already built (its
    /// identifier hashed, its value shared, not copied): a caller that
    /// built the [`State`] for its own use saves the second SHA-1.
    ///
    /// The compartment is opened if new and becomes the most recently used
    /// ([`Limits`]). If all compartments together would hold more than
    /// `max_state_bytes`, the least recently used others are closed; if
    /// this one alone still holds too much, its own items go in retention
    /// order (as with a smaller SMS), never the one created; an item that
    /// could never fit is rejected.
    pub fn create_state(&mut self, compartment: CompartmentId, state: State, priority: u16) -> CreateOutcome {
        let max_state_bytes = self.limits.max_state_bytes;
        let sms = self.open(compartment).sms;
        // Step 1: no state memory, no state.
        if sms == 0 {
            return CreateOutcome::Rejected;
        }
        // Step 2: truncate an item larger than the whole SMS.
        let max_len = value_room(sms);
        let state = if state.len() > max_len {
            State::new(state.address, state.instruction, state.min_access_len, &state.value()[..max_len])
        } else {
            state
        };
        let id = state.id;
        let cost = state.len() as u32 + 64;
        if state.len() + STATE_OVERHEAD_BYTES > max_state_bytes {
            return CreateOutcome::Rejected;
        }
        // Step 3 reads the bytes of a packed item of the same identifier:
        // its whole pack is kept plain, so that creating a pack's items one
        // after another unpacks it once, not once per item.
        if self.items.get(&id).is_some_and(|s| s.state.is_packed()) {
            let mut cache = UnpackCache::default();
            if let Some(s) = self.items.get(&id) {
                s.state.bytes_in(&mut cache);
            }
            self.keep_unpacked(cache);
        }
        let Some(c) = self.compartments.get_mut(&compartment) else { return CreateOutcome::Rejected };
        // Step 3: an existing identifier must be the identical item.
        if let Some(existing) = self.items.get_mut(&id) {
            if !existing.state.same_item(&state) {
                return CreateOutcome::Rejected;
            }
            if existing.state.is_packed() && !state.is_packed() {
                // An idle compartment's packed item, made by a compartment
                // in use: kept plain again (the bytes are at hand).
                existing.state.value = state.value.clone();
            }
        }
        let order = self.next_order;
        self.next_order += 1;
        // RFC 4896 §5.2 and §6: re-creating an item in the same compartment
        // updates its priority and age; it counts once against the SMS.
        if let Some(i) = c.position(&id) {
            c.refresh(i, priority, order);
            return CreateOutcome::Refreshed(id);
        }
        // Steps 4–5: free in retention order until the item fits.
        let mut victims = Vec::new();
        let mut freed = 0;
        while c.used + cost > c.sms {
            let Some(v) = c.eviction_victim(None) else { break };
            let e = c.remove(v);
            freed += e.cost as usize;
            victims.push(e.id);
        }
        c.push(Entry { id, priority, order, cost });
        self.total_used = self.total_used - freed + cost as usize;
        self.entry_count = self.entry_count + 1 - victims.len();
        match self.items.get_mut(&id) {
            Some(s) => s.holders += 1,
            None => self.items.insert(Stored { state, holders: 1, local: false }),
        }
        for v in victims {
            self.release(&v);
        }
        self.keep_total_within(compartment, id);
        CreateOutcome::Created(id)
    }

    /// After `created` was created in `compartment`: closes the least
    /// recently used other compartments, then frees `compartment`'s other
    /// items in retention order, until all state is within
    /// `max_state_bytes`.
    fn keep_total_within(&mut self, compartment: CompartmentId, created: StateId) {
        while self.real_state_bytes() > self.limits.max_state_bytes {
            if self.evict_least_recent(Some(compartment)) {
                continue;
            }
            let Some(c) = self.compartments.get_mut(&compartment) else { return };
            let Some(v) = c.eviction_victim(Some(created)) else { return };
            let e = c.remove(v);
            self.total_used -= e.cost as usize;
            self.entry_count -= 1;
            self.release(&e.id);
        }
    }

    /// A state free request (RFC 3320 §9.4.9, RFC 4896 §3.3): frees the
    /// unique item of this compartment matching `partial`; otherwise ignored.
    ///
    /// The items matching a partial identifier of 6 bytes or more are
    /// found by the index of all items ([`StateHandler::lookup`]), then
    /// kept if this compartment holds them: the cost does not grow with
    /// the compartment's items.
    pub fn free(&mut self, compartment: CompartmentId, partial: &[u8]) -> Option<StateId> {
        let c = self.compartments.get(&compartment)?;
        let held = |id: &StateId| id.0.starts_with(partial) && c.position(id).is_some();
        let id = if partial.len() >= PREFIX_LEN {
            only(self.items.with_key(prefix_key(partial)).map(|s| s.state.id).filter(held))
        } else {
            only(c.entries.iter().map(|e| e.id).filter(held))
        }?;
        let c = self.compartments.get_mut(&compartment)?;
        let idx = c.position(&id)?;
        let e = c.remove(idx);
        self.total_used -= e.cost as usize;
        self.entry_count -= 1;
        self.release(&e.id);
        Some(e.id)
    }
}

/// The longest state value an SMS of `sms` bytes holds: the SMS less the
/// 64 bytes each state costs besides (RFC 3320 §6.2 step 2 truncates a
/// longer one).
fn value_room(sms: u32) -> usize {
    sms.saturating_sub(64) as usize
}

/// The one item of `matches`; `None` for none or several.
fn only(mut matches: impl Iterator<Item = StateId>) -> Option<StateId> {
    let id = matches.next()?;
    matches.next().is_none().then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: CompartmentId = CompartmentId(1);
    const B: CompartmentId = CompartmentId(2);

    #[test]
    fn shared_item_is_stored_once_and_outlives_one_holder() {
        let mut h = StateHandler::new(2048);
        let v = vec![7u8; 100];
        let CreateOutcome::Created(id) = h.create(A, 0, 0, 6, &v, 1) else { panic!() };
        assert_eq!(h.create(B, 0, 0, 6, &v, 2), CreateOutcome::Created(id));
        assert_eq!(h.item_count(), 1);
        h.close_compartment(A);
        assert!(h.get(&id).is_some());
        h.close_compartment(B);
        assert!(h.get(&id).is_none());
    }

    #[test]
    fn eviction_follows_priority_then_age() {
        let mut h = StateHandler::new(2048);
        // Each item costs 500 + 64 = 564; three fit in 2048, a fourth does not.
        let ids: Vec<StateId> = [(1u8, 5u16), (2, 3), (3, 3)]
            .iter()
            .map(|&(b, p)| match h.create(A, 0, 0, 6, &[b; 500], p) {
                CreateOutcome::Created(id) => id,
                o => panic!("{o:?}"),
            })
            .collect();
        let CreateOutcome::Created(_) = h.create(A, 0, 0, 6, &[4; 500], 9) else { panic!() };
        // Lowest priority (3), oldest first: the item of byte 2 went.
        assert!(h.get(&ids[1]).is_none());
        assert!(h.get(&ids[0]).is_some() && h.get(&ids[2]).is_some());
        assert!(h.compartment(A).unwrap().used <= 2048);
    }

    #[test]
    fn oversized_item_is_truncated() {
        let mut h = StateHandler::new(2048);
        let CreateOutcome::Created(id) = h.create(A, 0, 0, 6, &[1; 3000], 0) else { panic!() };
        assert_eq!(h.get(&id).unwrap().len(), 2048 - 64);
    }

    #[test]
    fn lookup_by_prefix() {
        let mut h = StateHandler::new(8192);
        let s = State::new(0, 0, 9, b"hello");
        h.add_local(s.clone());
        assert_eq!(h.lookup(&s.id.0[..9]).unwrap().id, s.id);
        assert_eq!(h.lookup(&s.id.0[..6]), Err(LookupError::TooShortForAccess));
        let mut other = s.id.0;
        other[0] ^= 1;
        assert_eq!(h.lookup(&other[..6]), Err(LookupError::NotFound));
    }

    #[test]
    fn lookup_tells_items_sharing_the_indexed_prefix_apart() {
        let mut h = StateHandler::new(8192);
        let with_id = |id: [u8; 20], value: &[u8]| {
            let mut s = State::new(0, 0, 6, value);
            s.id = StateId(id);
            s
        };
        let mut a = [7u8; 20];
        let mut b = [7u8; 20];
        a[8] = 1;
        b[8] = 2;
        h.add_local(with_id(a, b"a"));
        h.add_local(with_id(b, b"b"));
        // Both begin with the same 6 and 8 bytes; the ninth tells them apart.
        assert_eq!(h.lookup(&a[..6]), Err(LookupError::NotUnique));
        assert_eq!(h.lookup(&a[..8]), Err(LookupError::NotUnique));
        assert_eq!(&h.lookup(&a[..9]).unwrap().value()[..], b"a");
        assert_eq!(&h.lookup(&b[..20]).unwrap().value()[..], b"b");
        // Shorter than the index (no RFC 3320 message has one): all items
        // are searched. Longer than an identifier: its 20 bytes are used.
        assert_eq!(h.lookup(&a[..3]), Err(LookupError::NotUnique));
        let mut longer = b.to_vec();
        longer.push(0);
        assert_eq!(&h.lookup(&longer).unwrap().value()[..], b"b");
        let mut c = a;
        c[19] = 0;
        assert_eq!(h.lookup(&c), Err(LookupError::NotFound));
        assert_eq!(h.item_count(), 2);
        // An item dropped from the index is not found any more.
        let CreateOutcome::Created(id) = h.create(A, 0, 0, 6, b"in A", 1) else { panic!() };
        assert!(h.lookup(&id.0[..6]).is_ok());
        h.close_compartment(A);
        assert_eq!(h.lookup(&id.0[..6]), Err(LookupError::NotFound));
        assert_eq!(h.item_count(), 2);
    }

    /// Random creations, refreshes, frees and SMS changes in three
    /// compartments, with values up to `max_len` bytes long.
    fn random_requests(max_len: u32) -> (usize, usize) {
        let mut h = StateHandler::new(4096);
        let mut x = 0x1234_5678u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let mut ids = Vec::new();
        let (mut scanned, mut indexed) = (0, 0);
        for _ in 0..3000 {
            let r = next();
            let c = CompartmentId(u64::from(r % 3));
            match (r >> 8) % 10 {
                0 => {
                    // Free by a 6-byte partial identifier of a known item.
                    if let Some(id) = ids.get((r >> 12) as usize % ids.len().max(1)) {
                        let id: &StateId = id;
                        let held = h.compartment(c).is_some_and(|k| k.entries.iter().any(|e| e.id == *id));
                        assert_eq!(h.free(c, &id.0[..6]), held.then_some(*id));
                    }
                }
                1 => h.set_compartment_sms(c, [2048, 4096, 8192][(r >> 12) as usize % 3]),
                _ => {
                    // Few values and priorities, so that items are shared,
                    // re-created and tied.
                    let value = vec![(r >> 12) as u8 % 40; ((r >> 20) % max_len) as usize];
                    let priority = [0u16, 1, 2, 65535][(r >> 16) as usize % 4];
                    if let CreateOutcome::Created(id) | CreateOutcome::Refreshed(id) =
                        h.create(c, 0, 0, 6, &value, priority)
                    {
                        ids.push(id);
                    }
                }
            }
            for k in h.compartments.values() {
                k.check_indexes();
                if k.is_indexed() {
                    indexed += 1;
                } else {
                    scanned += 1;
                }
            }
            let total: usize = h.compartments.values().map(|k| k.used as usize).sum();
            assert_eq!(h.state_bytes(), total);
        }
        (scanned, indexed)
    }

    #[test]
    fn indexed_entries_follow_creations_refreshes_frees_and_evictions() {
        // Large values: few entries, found by scanning.
        random_requests(900);
        // Small values: up to 128 entries (SMS 8192), indexed, and back
        // under the threshold after an SMS shrinks.
        let (scanned, indexed) = random_requests(40);
        assert!(scanned > 0 && indexed > 0, "{scanned} {indexed}");
    }

    #[test]
    fn sms_zero_rejects() {
        let mut h = StateHandler::new(0);
        assert_eq!(h.create(A, 0, 0, 6, b"x", 0), CreateOutcome::Rejected);
    }
}
