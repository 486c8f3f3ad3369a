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

#[cfg(test)]
mod tests {
    use super::super::packing::tests::call_lines;
    use super::super::CreateOutcome;
    use super::*;

    const A: CompartmentId = CompartmentId(1);
    const B: CompartmentId = CompartmentId(2);

    #[test]
    fn a_frozen_handler_thaws_to_the_same_items_accounting_and_order() {
        let mut h = StateHandler::new(4096);
        h.add_local(State::sip_sdp_dictionary());
        let mut ids = Vec::new();
        for (k, c) in [A, A, B, A].into_iter().enumerate() {
            let CreateOutcome::Created(id) = h.create(c, 64, 64, 6, &call_lines(10 + k, "f"), k as u16) else {
                panic!()
            };
            ids.push(id);
        }
        h.feedback_mut(B);
        h.pack_compartment(A);
        let (used, total, entries, resident) =
            (h.compartment(A).unwrap().used, h.state_bytes(), h.entry_count(), h.resident_bytes());
        let frozen = h.freeze();
        assert!(frozen.compartment_resident_bytes(A) > 0);
        assert!(frozen.get(&ids[0]).unwrap().is_packed());
        let mut h = frozen.thaw();
        assert_eq!((h.compartment(A).unwrap().used, h.state_bytes(), h.entry_count()), (used, total, entries));
        assert_eq!(h.resident_bytes(), resident);
        assert!(h.feedback(B).is_some());
        for (k, id) in ids.iter().enumerate() {
            assert_eq!(&h.lookup(&id.0[..6]).unwrap().value()[..], &call_lines(10 + k, "f")[..]);
        }
        assert!(h.get(&StateId(crate::dict::SIP_SDP_ID)).is_some());
        // The retention order survived: A's next creation past its SMS
        // evicts its lowest-priority item (priority 0, the first) first.
        let CreateOutcome::Created(_) = h.create(A, 64, 64, 6, &call_lines(45, "g"), 9) else { panic!() };
        assert!(h.get(&ids[0]).is_none());
        assert!(h.get(&ids[3]).is_some());
        // And the least recently used compartment is still B.
        h.set_limits(Limits { max_compartments: 1, max_state_bytes: usize::MAX });
        assert!(h.compartment(B).is_none() && h.compartment(A).is_some());
    }
}
