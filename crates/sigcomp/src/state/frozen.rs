//! A state handler frozen for an idle owner ([`StateHandler::freeze`]):
//! its contents without the indexes that make its operations flat in cost.

use std::collections::VecDeque;

use super::item::{held_bytes, Value};
use super::store::{Items, Stored};
use super::{Compartment, CompartmentId, Limits, PackDictionary, State, StateHandler, StateId};

/// A [`StateHandler`] held in as little memory as its contents allow, for
/// an owner that has gone idle ([`StateHandler::freeze`]): its items and
/// compartments in two exact-size lists instead of the index, tables and
/// least-recently-used order that make its operations flat in cost. A
/// compressor's model of its peer is such a handler, with a handful of
/// items; the structures around them cost more than the items' packed
/// values. Nothing in it can be changed; [`FrozenStates::thaw`] gives the
/// handler back.
#[derive(Debug)]
pub struct FrozenStates {
    items: Box<[Stored]>,
    compartments: Box<[(CompartmentId, Compartment)]>,
    next_order: u64,
    default_sms: u32,
    limits: Limits,
    next_use: u64,
    total_used: usize,
    entry_count: usize,
    evicted: VecDeque<CompartmentId>,
    evictions: u64,
    pack_dictionary: Option<PackDictionary>,
}

impl StateHandler {
    /// The handler as a [`FrozenStates`]: the same items (packed ones stay
    /// packed), compartments, accounting, order and limits.
    pub fn freeze(self) -> FrozenStates {
        let StateHandler {
            items,
            compartments,
            next_order,
            default_sms,
            limits,
            lru: _,
            next_use,
            total_used,
            entry_count,
            evicted,
            evictions,
            pack_dictionary,
        } = self;
        FrozenStates {
            items: items.into_stored().collect(),
            compartments: compartments.into_iter().collect(),
            next_order,
            default_sms,
            limits,
            next_use,
            total_used,
            entry_count,
            evicted,
            evictions,
            pack_dictionary,
        }
    }
}

impl FrozenStates {
    /// The handler again, as it was frozen (its indexes rebuilt).
    pub fn thaw(self) -> StateHandler {
        let mut items = Items::default();
        for stored in self.items.into_vec() {
            items.insert(stored);
        }
        let lru = self.compartments.iter().map(|(id, c)| (c.last_used, *id)).collect();
        StateHandler {
            items,
            compartments: self.compartments.into_vec().into_iter().collect(),
            next_order: self.next_order,
            default_sms: self.default_sms,
            limits: self.limits,
            lru,
            next_use: self.next_use,
            total_used: self.total_used,
            entry_count: self.entry_count,
            evicted: self.evicted,
            evictions: self.evictions,
            pack_dictionary: self.pack_dictionary,
        }
    }

    /// As [`StateHandler::set_pack_dictionary`], for the handler thawed.
    pub fn set_pack_dictionary(&mut self, dictionary: PackDictionary) {
        self.pack_dictionary = Some(dictionary);
    }

    /// The item with this full identifier, as [`StateHandler::get`].
    pub fn get(&self, id: &StateId) -> Option<&State> {
        self.items.iter().find(|s| s.state.id == *id).map(|s| &s.state)
    }

    /// As [`StateHandler::compartment_resident_bytes`].
    pub fn compartment_resident_bytes(&self, compartment: CompartmentId) -> usize {
        let Some((_, c)) = self.compartments.iter().find(|(id, _)| *id == compartment) else { return 0 };
        held_bytes(c.entries.iter().filter_map(|e| self.get(&e.id)).map(|s| &s.value))
    }

    /// As [`StateHandler::compartment_pack_dictionaries`].
    pub fn compartment_pack_dictionaries(&self, compartment: CompartmentId) -> Vec<PackDictionary> {
        let Some((_, c)) = self.compartments.iter().find(|(id, _)| *id == compartment) else { return Vec::new() };
        let mut out: Vec<PackDictionary> = Vec::new();
        for state in c.entries.iter().filter_map(|e| self.get(&e.id)) {
            if let Value::Packed { pack, .. } = &state.value {
                if !out.iter().any(|d| d.same(pack.dictionary())) {
                    out.push(pack.dictionary().clone());
                }
            }
        }
        out
    }
}
