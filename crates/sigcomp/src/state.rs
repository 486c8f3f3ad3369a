//! The state handler (RFC 3320 §6, corrected by RFC 4896 §5–7).
//!
//! State items are stored once, whatever the number of compartments that
//! created them: each compartment keeps only a list of (identifier,
//! retention priority, creation order) entries and its memory accounting,
//! and an item is dropped when no compartment and no local owner holds it
//! any more (RFC 3320 §6.2 step 4).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use sha1::{Digest, Sha1};

/// A 20-byte state identifier (RFC 3320 §9.4.9).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StateId(pub [u8; 20]);

impl StateId {
    pub fn as_bytes(&self) -> &[u8; 20] {
        &self.0
    }

    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(40);
        for b in self.0 {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    pub fn from_hex(s: &str) -> Option<StateId> {
        if s.len() != 40 || !s.is_ascii() {
            return None;
        }
        let mut id = [0u8; 20];
        for (i, b) in id.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(StateId(id))
    }

    /// SHA-1 over state_length, state_address, state_instruction,
    /// minimum_access_length and state_value (RFC 3320 §9.4.9).
    pub fn compute(address: u16, instruction: u16, min_access_len: u16, value: &[u8]) -> StateId {
        let mut h = Sha1::new();
        let len = value.len() as u16;
        let mut head = [0u8; 8];
        head[0..2].copy_from_slice(&len.to_be_bytes());
        head[2..4].copy_from_slice(&address.to_be_bytes());
        head[4..6].copy_from_slice(&instruction.to_be_bytes());
        head[6..8].copy_from_slice(&min_access_len.to_be_bytes());
        h.update(head);
        h.update(value);
        StateId(h.finalize().into())
    }
}

impl fmt::Debug for StateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StateId({})", self.to_hex())
    }
}

impl fmt::Display for StateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// An item of state (RFC 3320 §3.3.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub id: StateId,
    pub address: u16,
    pub instruction: u16,
    pub min_access_len: u16,
    /// Shared between every compartment that holds the item.
    pub value: Arc<[u8]>,
}

impl State {
    pub fn new(address: u16, instruction: u16, min_access_len: u16, value: &[u8]) -> State {
        State {
            id: StateId::compute(address, instruction, min_access_len, value),
            address,
            instruction,
            min_access_len,
            value: value.into(),
        }
    }

    pub fn len(&self) -> usize {
        self.value.len()
    }

    pub fn is_empty(&self) -> bool {
        self.value.is_empty()
    }

    fn same_item(&self, other: &State) -> bool {
        self.address == other.address
            && self.instruction == other.instruction
            && self.min_access_len == other.min_access_len
            && self.value == other.value
    }
}

/// An application's name for a compartment (RFC 3320 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CompartmentId(pub u64);

/// Why a partial identifier did not select a state item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupError {
    NotFound,
    NotUnique,
    /// Found, but the item's minimum_access_length exceeds the identifier.
    TooShortForAccess,
}

#[derive(Debug)]
struct Stored {
    state: State,
    /// Compartments holding this item (local items are never dropped).
    holders: u32,
    local: bool,
}

/// One compartment's entry for a state item it created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub id: StateId,
    pub priority: u16,
    /// Creation order: lower was created earlier.
    pub order: u64,
    pub cost: u32,
}

/// What is remembered per compartment (RFC 3320 §6.2, §6.3).
#[derive(Debug, Clone, Default)]
pub struct Compartment {
    pub sms: u32,
    pub used: u32,
    pub entries: Vec<Entry>,
}

impl Compartment {
    /// RFC 3320 §6.2 step 5 with RFC 4896 §5.1: 65535 < 0 < 1 < … < 65534,
    /// and among equals the oldest goes first.
    fn eviction_victim(&self) -> Option<usize> {
        self.entries
            .iter()
            .enumerate()
            .min_by_key(|(_, e)| (e.priority.wrapping_add(1), e.order))
            .map(|(i, _)| i)
    }
}

/// Outcome of one state creation request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutcome {
    Created(StateId),
    /// The item already existed in this compartment: priority and age updated.
    Refreshed(StateId),
    /// Rejected: SMS is 0, or an identifier clash with a different item.
    Rejected,
}

/// The state handler of one endpoint.
#[derive(Debug, Default)]
pub struct StateHandler {
    items: BTreeMap<StateId, Stored>,
    compartments: HashMap<CompartmentId, Compartment>,
    next_order: u64,
    default_sms: u32,
}

impl StateHandler {
    pub fn new(default_sms: u32) -> StateHandler {
        StateHandler { default_sms, ..StateHandler::default() }
    }

    /// Adds a locally available state item (RFC 3320 §3.3.3): not mapped to
    /// any compartment, never freed, no cost against any SMS.
    pub fn add_local(&mut self, state: State) {
        let id = state.id;
        self.items
            .entry(id)
            .and_modify(|s| s.local = true)
            .or_insert(Stored { state, holders: 0, local: true });
    }

    pub fn get(&self, id: &StateId) -> Option<&State> {
        self.items.get(id).map(|s| &s.state)
    }

    /// Number of distinct stored items (each stored once).
    pub fn item_count(&self) -> usize {
        self.items.len()
    }

    /// Bytes of state values stored, each distinct item counted once.
    pub fn stored_bytes(&self) -> usize {
        self.items.values().map(|s| s.state.len()).sum()
    }

    /// Finds the unique item whose identifier begins with `partial`
    /// (RFC 3320 §7.2). Checks minimum_access_length too.
    pub fn lookup(&self, partial: &[u8]) -> Result<&State, LookupError> {
        let (lo, hi) = prefix_range(partial);
        let mut it = self.items.range((Bound::Included(lo), Bound::Included(hi)));
        let first = it.next().ok_or(LookupError::NotFound)?;
        if it.next().is_some() {
            return Err(LookupError::NotUnique);
        }
        let state = &first.1.state;
        if usize::from(state.min_access_len) > partial.len() {
            return Err(LookupError::TooShortForAccess);
        }
        Ok(state)
    }

    pub fn compartment(&self, id: CompartmentId) -> Option<&Compartment> {
        self.compartments.get(&id)
    }

    pub fn compartment_ids(&self) -> impl Iterator<Item = CompartmentId> + '_ {
        self.compartments.keys().copied()
    }

    /// Sets a compartment's state memory size (RFC 3320 §3.3.1: it may vary
    /// per compartment). Shrinking evicts in retention order.
    pub fn set_compartment_sms(&mut self, id: CompartmentId, sms: u32) {
        let default_sms = self.default_sms;
        let c = self
            .compartments
            .entry(id)
            .or_insert_with(|| Compartment { sms: default_sms, ..Compartment::default() });
        c.sms = sms;
        let mut victims = Vec::new();
        while c.used > c.sms {
            let Some(v) = c.eviction_victim() else { break };
            let e = c.entries.remove(v);
            c.used -= e.cost;
            victims.push(e.id);
        }
        for v in victims {
            self.release(&v);
        }
    }

    /// Closes a compartment, releasing its state (RFC 3320 §6.2, last para).
    pub fn close_compartment(&mut self, id: CompartmentId) {
        if let Some(c) = self.compartments.remove(&id) {
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
        let max_len = self.compartment_sms(compartment).saturating_sub(64) as usize;
        let value = if value.len() > max_len { &value[..max_len] } else { value };
        self.create_state(compartment, State::new(address, instruction, min_access_len, value), priority)
    }

    /// The SMS of `compartment` (the default for one not seen yet).
    fn compartment_sms(&self, compartment: CompartmentId) -> u32 {
        self.compartments.get(&compartment).map_or(self.default_sms, |c| c.sms)
    }

    /// For a *model* of a peer's state memory (a compressor's, which never
    /// reads some items again): frees the bytes of item `id` but keeps the
    /// item, its identifier and its cost in every compartment, so retention
    /// and eviction go on exactly as at the peer. Accessing the item
    /// afterwards yields an empty value. Never for a real decompressor.
    /// Returns whether the item exists.
    pub fn forget_value(&mut self, id: &StateId) -> bool {
        match self.items.get_mut(id) {
            Some(stored) if !stored.local => {
                stored.state.value = Arc::from(&[][..]);
                true
            }
            _ => false,
        }
    }

    /// As [`StateHandler::create`], for an item already built (its
    /// identifier hashed, its value shared, not copied): a caller that
    /// built the [`State`] for its own use saves the second SHA-1.
    pub fn create_state(&mut self, compartment: CompartmentId, state: State, priority: u16) -> CreateOutcome {
        let default_sms = self.default_sms;
        let c = self
            .compartments
            .entry(compartment)
            .or_insert_with(|| Compartment { sms: default_sms, ..Compartment::default() });
        // Step 1: no state memory, no state.
        if c.sms == 0 {
            return CreateOutcome::Rejected;
        }
        // Step 2: truncate an item larger than the whole SMS.
        let max_len = c.sms.saturating_sub(64) as usize;
        let state = if state.len() > max_len {
            State::new(state.address, state.instruction, state.min_access_len, &state.value[..max_len])
        } else {
            state
        };
        let id = state.id;
        let cost = state.len() as u32 + 64;
        // Step 3: an existing identifier must be the identical item.
        if let Some(existing) = self.items.get_mut(&id) {
            if existing.state.value.is_empty() && !state.value.is_empty() {
                // A model's forgotten item made again: the same identifier,
                // so its bytes come back ([`StateHandler::forget_value`]).
                existing.state.value = state.value.clone();
            }
            if !existing.state.same_item(&state) {
                return CreateOutcome::Rejected;
            }
        }
        let order = self.next_order;
        self.next_order += 1;
        // RFC 4896 §5.2 and §6: re-creating an item in the same compartment
        // updates its priority and age; it counts once against the SMS.
        if let Some(e) = c.entries.iter_mut().find(|e| e.id == id) {
            e.priority = priority;
            e.order = order;
            return CreateOutcome::Refreshed(id);
        }
        // Steps 4–5: free in retention order until the item fits.
        let mut victims = Vec::new();
        while c.used + cost > c.sms {
            let Some(v) = c.eviction_victim() else { break };
            let e = c.entries.remove(v);
            c.used -= e.cost;
            victims.push(e.id);
        }
        c.entries.push(Entry { id, priority, order, cost });
        c.used += cost;
        self.items
            .entry(id)
            .and_modify(|s| s.holders += 1)
            .or_insert(Stored { state, holders: 1, local: false });
        for v in victims {
            self.release(&v);
        }
        CreateOutcome::Created(id)
    }

    /// A state free request (RFC 3320 §9.4.9, RFC 4896 §3.3): frees the
    /// unique item of this compartment matching `partial`; otherwise ignored.
    pub fn free(&mut self, compartment: CompartmentId, partial: &[u8]) -> Option<StateId> {
        let c = self.compartments.get_mut(&compartment)?;
        let mut matches = c.entries.iter().enumerate().filter(|(_, e)| e.id.0.starts_with(partial));
        let (idx, _) = matches.next()?;
        if matches.next().is_some() {
            return None;
        }
        let e = c.entries.remove(idx);
        c.used -= e.cost;
        self.release(&e.id);
        Some(e.id)
    }
}

fn prefix_range(partial: &[u8]) -> (StateId, StateId) {
    let n = partial.len().min(20);
    let mut lo = [0u8; 20];
    let mut hi = [0xFFu8; 20];
    lo[..n].copy_from_slice(&partial[..n]);
    hi[..n].copy_from_slice(&partial[..n]);
    (StateId(lo), StateId(hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: CompartmentId = CompartmentId(1);
    const B: CompartmentId = CompartmentId(2);

    #[test]
    fn a_forgotten_value_keeps_the_accounting_and_comes_back_when_recreated() {
        let mut h = StateHandler::new(2048);
        let (v1, v2, v3) = (vec![1u8; 700], vec![2u8; 700], vec![3u8; 700]);
        let CreateOutcome::Created(id1) = h.create(A, 0, 0, 6, &v1, 1) else { panic!() };
        let CreateOutcome::Created(id2) = h.create(A, 0, 0, 6, &v2, 1) else { panic!() };
        let used = h.compartment(A).unwrap().used;
        assert!(h.forget_value(&id1));
        assert!(h.get(&id1).unwrap().value.is_empty());
        assert_eq!(h.compartment(A).unwrap().used, used, "the cost stays");
        // Eviction goes on as before: a third item evicts the oldest.
        let CreateOutcome::Created(_) = h.create(A, 0, 0, 6, &v3, 1) else { panic!() };
        assert!(h.get(&id1).is_none() && h.get(&id2).is_some());
        // Forgotten, then made again (same identifier): the bytes return.
        assert!(h.forget_value(&id2));
        assert_eq!(h.create(A, 0, 0, 6, &v2, 1), CreateOutcome::Refreshed(id2));
        assert_eq!(&h.get(&id2).unwrap().value[..], &v2[..]);
        // Local items (dictionaries) are never forgotten.
        let dict = crate::dict::sip_sdp_state();
        h.add_local(dict.clone());
        assert!(!h.forget_value(&dict.id));
        assert_eq!(h.get(&dict.id).unwrap().len(), dict.len());
    }

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
    fn sms_zero_rejects() {
        let mut h = StateHandler::new(0);
        assert_eq!(h.create(A, 0, 0, 6, b"x", 0), CreateOutcome::Rejected);
    }
}
