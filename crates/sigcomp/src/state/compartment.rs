//! What the state handler remembers per compartment (RFC 3320 §6.2,
//! §6.3): its entries for the items it created, in retention order, and
//! its memory accounting.

use std::collections::{BTreeMap, HashMap};

use super::item::StateId;
use crate::feedback::Feedback;

/// One compartment's entry for a state item it created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The item's identifier in the store of all items.
    pub id: StateId,
    /// The state_retention_priority it was created (or last refreshed)
    /// with in this compartment (RFC 3320 §6.2 step 5).
    pub priority: u16,
    /// Creation order: lower was created earlier.
    pub order: u64,
    /// What it counts against the compartment's SMS: its length + 64
    /// bytes (RFC 3320 §6.2).
    pub cost: u32,
}

/// What is remembered per compartment (RFC 3320 §6.2, §6.3).
#[derive(Debug, Clone, Default)]
pub struct Compartment {
    /// state_memory_size: the bytes of state it may hold (RFC 3320
    /// §3.3.1).
    pub sms: u32,
    /// The bytes of state it holds, the sum of its entries' costs; at most
    /// `sms`.
    pub used: u32,
    /// Its entries, one per item it created, in no particular order (a
    /// removal moves the last into the gap).
    pub entries: Vec<Entry>,
    /// Feedback received under this compartment
    /// ([`crate::Decompressor::feedback`]): it goes with the compartment.
    /// Boxed: most compartments of a compressor's model of its peer never
    /// hold any, and a compartment is a slot of the handler's table.
    pub(crate) feedback: Option<Box<Feedback>>,
    /// When the compartment was last used: its key in
    /// [`super::StateHandler`]'s least-recently-used order.
    pub(super) last_used: u64,
    /// Indexes of the entries, kept only while there are more than
    /// [`SCAN_ENTRIES`]: below that a scan costs no more than a lookup,
    /// and an idle SIP compartment (a handful of entries) would otherwise
    /// carry a hash table and a B-tree node, more than half a kilobyte.
    index: Option<Box<EntryIndex>>,
}

/// Entries a compartment scans for an item or its eviction victim; past
/// this many it indexes them ([`EntryIndex`]), so that the cost of a
/// creation, refresh or free stays flat however many small items a peer
/// creates: RFC 3320 §9.4.6 and §9.4.7 charge such a request the same few
/// cycles whatever the compartment holds.
pub(super) const SCAN_ENTRIES: usize = 16;

/// A compartment's entries indexed.
#[derive(Debug, Clone, Default)]
struct EntryIndex {
    /// Position in `entries` of each item: a creation finds an item it
    /// refreshes, and a free request the items it names, without a scan.
    positions: HashMap<StateId, usize>,
    /// The entries in retention order ([`Compartment::eviction_victim`]):
    /// (priority + 1 mod 2^16, order), unique since orders are.
    retention: BTreeMap<(u16, u64), StateId>,
}

impl EntryIndex {
    fn of(entries: &[Entry]) -> EntryIndex {
        EntryIndex {
            positions: entries.iter().enumerate().map(|(i, e)| (e.id, i)).collect(),
            retention: entries.iter().map(|e| (Compartment::retention_key(e), e.id)).collect(),
        }
    }
}

impl Compartment {
    /// An empty compartment of `sms` bytes, last used at `last_used`.
    pub(super) fn new(sms: u32, last_used: u64) -> Compartment {
        Compartment { sms, last_used, ..Compartment::default() }
    }

    /// RFC 3320 §6.2 step 5 with RFC 4896 §5.1: 65535 < 0 < 1 < … < 65534,
    /// and among equals the oldest goes first. `spare` is never chosen.
    pub(super) fn eviction_victim(&self, spare: Option<StateId>) -> Option<usize> {
        match &self.index {
            Some(index) => {
                let id = index.retention.values().find(|id| Some(**id) != spare)?;
                index.positions.get(id).copied()
            }
            None => self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| Some(e.id) != spare)
                .min_by_key(|(_, e)| Compartment::retention_key(e))
                .map(|(i, _)| i),
        }
    }

    pub(super) fn retention_key(e: &Entry) -> (u16, u64) {
        (e.priority.wrapping_add(1), e.order)
    }

    pub(super) fn position(&self, id: &StateId) -> Option<usize> {
        match &self.index {
            Some(index) => index.positions.get(id).copied(),
            None => self.entries.iter().position(|e| e.id == *id),
        }
    }

    pub(super) fn push(&mut self, e: Entry) {
        if let Some(index) = &mut self.index {
            index.positions.insert(e.id, self.entries.len());
            index.retention.insert(Compartment::retention_key(&e), e.id);
        }
        self.entries.push(e);
        self.used += e.cost;
        if self.index.is_none() && self.entries.len() > SCAN_ENTRIES {
            self.index = Some(Box::new(EntryIndex::of(&self.entries)));
        }
    }

    /// Removes the entry at `i` (the last entry takes its place).
    pub(super) fn remove(&mut self, i: usize) -> Entry {
        let e = self.entries.swap_remove(i);
        self.used -= e.cost;
        let Some(index) = &mut self.index else { return e };
        // Dropped at half the threshold, not at it: a peer hovering around
        // the threshold cannot make every request rebuild the index.
        if self.entries.len() <= SCAN_ENTRIES / 2 {
            self.index = None;
            return e;
        }
        index.positions.remove(&e.id);
        if let Some(moved) = self.entries.get(i) {
            index.positions.insert(moved.id, i);
        }
        index.retention.remove(&Compartment::retention_key(&e));
        e
    }

    /// RFC 4896 §5.2 and §6: a new priority and age for the entry at `i`.
    pub(super) fn refresh(&mut self, i: usize, priority: u16, order: u64) {
        let Some(e) = self.entries.get_mut(i) else { return };
        let old = Compartment::retention_key(e);
        e.priority = priority;
        e.order = order;
        if let Some(index) = &mut self.index {
            index.retention.remove(&old);
            index.retention.insert(Compartment::retention_key(e), e.id);
        }
    }

    /// Whether the entries are indexed.
    #[cfg(test)]
    pub(super) fn is_indexed(&self) -> bool {
        self.index.is_some()
    }

    /// The indexes of a compartment agree with its entries, and the
    /// indexed retention order is RFC 3320 §6.2 step 5's.
    #[cfg(test)]
    pub(super) fn check_indexes(&self) {
        let c = self;
        match &c.index {
            None => assert!(c.entries.len() <= SCAN_ENTRIES),
            Some(index) => {
                assert!(c.entries.len() > SCAN_ENTRIES / 2);
                assert_eq!(index.positions.len(), c.entries.len());
                assert_eq!(index.retention.len(), c.entries.len());
                for (i, e) in c.entries.iter().enumerate() {
                    assert_eq!(index.positions.get(&e.id), Some(&i));
                    assert_eq!(index.retention.get(&Compartment::retention_key(e)), Some(&e.id));
                }
            }
        }
        assert_eq!(c.used, c.entries.iter().map(|e| e.cost).sum::<u32>());
        for (i, e) in c.entries.iter().enumerate() {
            assert_eq!(c.position(&e.id), Some(i));
        }
        let naive =
            c.entries.iter().enumerate().min_by_key(|(_, e)| (e.priority.wrapping_add(1), e.order)).map(|(i, _)| i);
        assert_eq!(c.eviction_victim(None), naive);
        if let Some(first) = naive.map(|i| c.entries[i].id) {
            let without = c
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.id != first)
                .min_by_key(|(_, e)| (e.priority.wrapping_add(1), e.order))
                .map(|(i, _)| i);
            assert_eq!(c.eviction_victim(Some(first)), without);
        }
    }
}
