//! One message's state lookups, remembered for the rest of the message.
//!
//! A STATE-ACCESS of an empty state is charged one cycle (RFC 3320
//! §9.4.5), so its lookup is nearly all that cycle's cost. The store's
//! index ([`StateHandler::lookup_padded`]) is constant-time, but with
//! millions of states stored it spans hundreds of megabytes: a message
//! reading thousands of distinct states in turn misses the caches and the
//! TLB on every lookup (112–147 ns a cycle were measured). A message can
//! only name the states whose identifiers lie in its 64 KiB of memory (new
//! ones cost charged cycles to write or input), so the lookups it repeats
//! are a few thousand at most: kept here, in a table sized by what the
//! message reads rather than by the store, each is found again in the
//! caches. The store cannot change while a message runs (the UDVM holds
//! it shared), so a remembered answer stays right.

use std::collections::HashMap;

use crate::state::{id_prefix_key, LookupError, PrefixHash, State, StateHandler};

/// Lookups remembered per message, at most: the distinct 6-byte
/// identifiers 64 KiB of memory holds (10,922), rounded up. Past this a
/// lookup goes to the store each time (about 72 bytes an entry: at most
/// about 1 MiB a message).
const MAX_REMEMBERED: usize = 16_384;

/// A partial identifier of 6 to 20 bytes, zero-padded, and its length.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    words: [u64; 2],
    tail: u32,
    len: u8,
}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // The first 6 bytes, as the store's index hashes them (with a
        // random key: a peer cannot grind identifiers into one bucket).
        h.write_u64(self.words[0] >> 16);
    }
}

impl Key {
    fn new(id: &[u8; 20], len: usize) -> Key {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&id[i..i + 8]);
            u64::from_be_bytes(w)
        };
        let mut tail = [0u8; 4];
        tail.copy_from_slice(&id[16..]);
        Key { words: [word(0), word(8)], tail: u32::from_be_bytes(tail), len: len as u8 }
    }
}

/// What a STATE-ACCESS needs of the state it found, copied so that using
/// it again reads nothing of the store.
#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    pub state: &'a State,
    pub len: usize,
    pub address: u16,
    pub instruction: u16,
    /// The value's bytes if kept plain (a packed one is read through the
    /// message's [`crate::state::UnpackCache`]).
    pub plain: Option<&'a [u8]>,
}

/// The lookups of one message.
#[derive(Default)]
pub struct LookupMemo<'a> {
    found: HashMap<Key, Result<Found<'a>, LookupError>, PrefixHash>,
}

impl<'a> LookupMemo<'a> {
    /// [`StateHandler::lookup_padded`] of the first `len` bytes of `id`
    /// (6 to 20, the rest zero), remembered.
    #[inline]
    pub fn lookup(&mut self, states: &'a StateHandler, id: &[u8; 20], len: usize) -> Result<Found<'a>, LookupError> {
        let key = Key::new(id, len);
        debug_assert_eq!(key.words[0] >> 16, id_prefix_key(id));
        if let Some(found) = self.found.get(&key) {
            return *found;
        }
        let found = states.lookup_padded(id, len).map(|state| Found {
            state,
            len: state.len(),
            address: state.address,
            instruction: state.instruction,
            plain: state.plain_value(),
        });
        if self.found.len() < MAX_REMEMBERED {
            self.found.insert(key, found);
        }
        found
    }

    /// Lookups remembered.
    pub fn len(&self) -> usize {
        self.found.len()
    }

    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
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

    #[test]
    fn a_remembered_lookup_answers_as_the_store_does() {
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
        for round in 0..2 {
            for id in &ids {
                for len in [6usize, 9, 12, 20] {
                    let p = padded(&id.0[..len]);
                    let want = states.lookup_padded(&p, len);
                    let got = memo.lookup(&states, &p, len);
                    match (want, got) {
                        (Ok(w), Ok(g)) => {
                            assert!(std::ptr::eq(w, g.state));
                            assert_eq!((g.len, g.address, g.instruction), (w.len(), w.address, w.instruction));
                            assert_eq!(g.plain, Some(&w.value()[..]));
                        }
                        (Err(w), Err(g)) => assert_eq!(w, g),
                        (w, g) => panic!("round {round}: store {w:?}, memo {:?}", g.map(|f| f.state)),
                    }
                }
            }
            // A partial identifier no state has is remembered as not found.
            let p = padded(&[0xEE; 6]);
            assert_eq!(memo.lookup(&states, &p, 6).map(|f| f.len), Err(LookupError::NotFound));
        }
        assert_eq!(memo.len(), ids.len() * 4 + 1);
    }
}
