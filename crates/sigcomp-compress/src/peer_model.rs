//! The compressor's model of its peer's state memory for one compartment:
//! which state items the peer holds, by identifier, retention priority,
//! age and cost, kept by the peer's own rules (RFC 3320 §6.2 with
//! RFC 4896 §5.1, §5.2 and §6), so that a state the peer has evicted is
//! never referenced.
//!
//! It holds no bytes: the compressor keeps those of the states it may
//! still use (the snapshots it may continue from, its bytecode state, the
//! peer's shared state) in its model decompressor's state handler, and
//! drops the others (older snapshots the peer keeps until it evicts them).

use sigcomp::state::{CreateOutcome, Entry};
use sigcomp::StateId;

/// The peer's state memory of one compartment, without the values.
#[derive(Debug, Clone)]
pub struct PeerModel {
    sms: u32,
    used: u32,
    entries: Vec<Entry>,
    next_order: u64,
}

impl PeerModel {
    /// A compartment of `sms` bytes of state memory, empty.
    pub fn new(sms: u32) -> PeerModel {
        PeerModel { sms, used: 0, entries: Vec::new(), next_order: 0 }
    }

    /// The longest state value the compartment keeps whole (RFC 3320 §6.2
    /// step 2: a longer one is truncated to this, before its identifier is
    /// computed).
    pub fn max_value_len(&self) -> usize {
        self.sms.saturating_sub(64) as usize
    }

    /// A state creation request for an item of `len` bytes (already
    /// truncated to [`PeerModel::max_value_len`]): steps 1 and 3–5 of
    /// RFC 3320 §6.2. The items evicted to make room are appended to
    /// `evicted`.
    pub fn create(&mut self, id: StateId, len: usize, priority: u16, evicted: &mut Vec<StateId>) -> CreateOutcome {
        // Step 1: no state memory, no state.
        if self.sms == 0 {
            return CreateOutcome::Rejected;
        }
        let cost = len as u32 + 64;
        let order = self.next_order;
        self.next_order += 1;
        // RFC 4896 §5.2 and §6: re-creating an item updates its priority
        // and age; it counts once against the SMS.
        if let Some(e) = self.entries.iter_mut().find(|e| e.id == id) {
            e.priority = priority;
            e.order = order;
            return CreateOutcome::Refreshed(id);
        }
        // Steps 4–5: free in retention order until the item fits.
        while self.used + cost > self.sms {
            let Some(v) = self.eviction_victim() else { break };
            let e = self.entries.remove(v);
            self.used -= e.cost;
            evicted.push(e.id);
        }
        self.entries.push(Entry { id, priority, order, cost });
        self.used += cost;
        CreateOutcome::Created(id)
    }

    /// Whether a request to create a new item of `len` bytes would evict
    /// item `id` ([`PeerModel::create`]'s steps 4–5, asked without carrying
    /// them out; the new item's priority plays no part, as it is not in the
    /// memory while room is made for it).
    pub fn creating_would_evict(&self, len: usize, id: &StateId) -> bool {
        if self.sms == 0 || !self.holds(id) {
            return false;
        }
        let cost = len.min(self.max_value_len()) as u32 + 64;
        let mut victims: Vec<&Entry> = self.entries.iter().collect();
        victims.sort_by_key(|e| (e.priority.wrapping_add(1), e.order));
        let mut used = self.used;
        for e in victims {
            if used + cost <= self.sms {
                return false;
            }
            if e.id == *id {
                return true;
            }
            used -= e.cost;
        }
        false
    }

    /// RFC 3320 §6.2 step 5 with RFC 4896 §5.1: 65535 < 0 < 1 < … < 65534,
    /// and among equals the oldest goes first.
    fn eviction_victim(&self) -> Option<usize> {
        self.entries.iter().enumerate().min_by_key(|(_, e)| (e.priority.wrapping_add(1), e.order)).map(|(i, _)| i)
    }

    /// A state free request for item `id` (RFC 3320 §9.4.9); whether the
    /// peer held it.
    pub fn free(&mut self, id: &StateId) -> bool {
        let Some(k) = self.entries.iter().position(|e| e.id == *id) else { return false };
        let e = self.entries.remove(k);
        self.used -= e.cost;
        true
    }

    /// Whether the peer holds item `id` in this compartment.
    pub fn holds(&self, id: &StateId) -> bool {
        self.entries.iter().any(|e| e.id == *id)
    }

    /// Bytes of state memory the peer's items take (values + 64 each).
    pub fn used(&self) -> u32 {
        self.used
    }

    /// The peer created the items `moved` after the items `anchor`, not
    /// before them as the model assumed (the messages arrived out of
    /// order): those older than the youngest of `anchor` take the age just
    /// after it, and so are evicted after it (RFC 3320 §6.2 step 5: among
    /// equal priorities the oldest goes first). Nothing changes if the
    /// peer holds none of `anchor`.
    pub fn created_after(&mut self, moved: &[StateId], anchor: &[StateId]) {
        self.entries.sort_by_key(|e| e.order);
        if place_after_last_anchor(&mut self.entries, |e| moved.contains(&e.id), |e| anchor.contains(&e.id)) {
            for (order, e) in self.entries.iter_mut().enumerate() {
                e.order = order as u64;
            }
            self.next_order = self.entries.len() as u64;
        }
    }
}

/// Moves the items that `moved` picks and that stand before the last item
/// `anchor` picks to just after that one, each part keeping its order;
/// returns whether any moved (none where no item is an anchor). The model's
/// ages and the compressor's list of snapshots are both put in the peer's
/// order so.
pub(crate) fn place_after_last_anchor<T>(
    items: &mut Vec<T>,
    moved: impl Fn(&T) -> bool,
    anchor: impl Fn(&T) -> bool,
) -> bool {
    let Some(last) = items.iter().rposition(anchor) else { return false };
    let tail = items.split_off(last);
    let (shifted, kept): (Vec<T>, Vec<T>) = std::mem::take(items).into_iter().partition(|item| moved(item));
    let any = !shifted.is_empty();
    *items = kept;
    let mut tail = tail.into_iter();
    items.extend(tail.next());
    items.extend(shifted);
    items.extend(tail);
    any
}

#[cfg(test)]
mod tests {
    use super::*;
    use sigcomp::state::StateHandler;
    use sigcomp::{CompartmentId, State};

    /// The model keeps what the core's state handler keeps, request for
    /// request, without the values.
    #[test]
    fn follows_the_state_handler_without_the_values() {
        const C: CompartmentId = CompartmentId(1);
        let mut handler = StateHandler::new(2048);
        let mut model = PeerModel::new(2048);
        let priorities = [1u16, 1, 65535, 0, 2, 1, 65534, 1, 1, 3];
        let mut states = Vec::new();
        for (k, &p) in priorities.iter().enumerate() {
            let s = State::new(64, 64, 6, &vec![k as u8; 300 + 40 * k]);
            states.push(s.clone());
            let mut evicted = Vec::new();
            assert_eq!(model.create(s.id, s.len(), p, &mut evicted), handler.create_state(C, s.clone(), p), "#{k}");
            // Re-creating an earlier item refreshes it in both.
            let again = &states[k / 2];
            if handler.get(&again.id).is_some() {
                assert_eq!(
                    model.create(again.id, again.len(), 2, &mut evicted),
                    handler.create_state(C, again.clone(), 2)
                );
            }
            let held: Vec<StateId> = handler.compartment(C).unwrap().entries.iter().map(|e| e.id).collect();
            assert!(held.iter().all(|id| model.holds(id)) && model.entries.len() == held.len(), "#{k}");
            assert_eq!(model.used(), handler.compartment(C).unwrap().used, "#{k}");
            assert!(evicted.iter().all(|id| handler.get(id).is_none()), "#{k}: evicted from both");
        }
        // Asked beforehand, the model says which items a creation evicts.
        let mut answers = Vec::new();
        for (k, s) in states.iter().enumerate().filter(|(_, s)| model.holds(&s.id)) {
            let mut trial = model.clone();
            let mut evicted = Vec::new();
            trial.create(StateId([0xEE; 20]), 900, 1, &mut evicted);
            let answer = model.creating_would_evict(900, &s.id);
            assert_eq!(answer, evicted.contains(&s.id), "#{k}");
            answers.push(answer);
        }
        assert!(answers.contains(&true) && answers.contains(&false), "{answers:?}");
        assert!(model.free(&states[9].id));
        assert!(!model.free(&states[9].id));
        assert_eq!(PeerModel::new(0).create(states[0].id, 10, 1, &mut Vec::new()), CreateOutcome::Rejected);
    }

    /// Items the peer created after others than the model assumed are
    /// evicted after them, as the peer evicts them.
    #[test]
    fn items_created_out_of_order_are_evicted_in_the_peers_order() {
        let id = |k: u8| StateId([k; 20]);
        let mut model = PeerModel::new(3 * 564);
        for k in 1..=3 {
            model.create(id(k), 500, 1, &mut Vec::new());
        }
        // The peer created 1 just after 2: the ages are 2, 1, 3.
        model.created_after(&[id(1)], &[id(2)]);
        let mut evicted = Vec::new();
        model.create(id(4), 500, 1, &mut evicted);
        assert_eq!(evicted, [id(2)]);
        // An anchor the peer no longer holds moves nothing.
        model.created_after(&[id(3)], &[id(2)]);
        model.create(id(5), 500, 1, &mut evicted);
        model.create(id(6), 500, 1, &mut evicted);
        assert_eq!(evicted, [id(2), id(1), id(3)]);
    }
}
