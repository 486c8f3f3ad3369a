//! Packing an idle compartment's items ([`StateHandler::pack_compartment`]):
//! their values kept LZ4-compressed against a [`PackDictionary`] until a
//! message reads or wakes them.

use std::sync::Arc;

use super::item::{Pack, Value};
use super::store::Stored;
use super::{CompartmentId, PackDictionary, State, StateHandler, StateId, UnpackCache};

impl StateHandler {
    /// Keeps the values of `compartment`'s items packed (LZ4 against the
    /// SIP/SDP dictionary, all of them together so that what consecutive
    /// snapshots share is stored once), for a compartment that has gone
    /// idle. Only items no other compartment holds and no local owner
    /// keeps are packed. Identifiers, lengths, priorities and accounting
    /// are unchanged: a packed item is found and read as before (slower:
    /// reading unpacks), and [`StateHandler::unpack_compartment`] undoes
    /// it. Returns the bytes saved.
    pub fn pack_compartment(&mut self, compartment: CompartmentId) -> usize {
        let (ids, plain) = self.packable(compartment);
        if ids.is_empty() {
            return 0;
        }
        let dictionary = self.pack_dictionary();
        let Some(mut pack) = Pack::new(&plain, &dictionary) else { return 0 };
        pack.ids = ids.clone().into_boxed_slice();
        let saved = plain.len() - pack.lz4.len();
        let pack = Arc::new(pack);
        let mut offset = 0u32;
        for id in ids {
            if let Some(stored) = self.items.get_mut(&id) {
                let len = stored.state.len() as u32;
                stored.state.value = Value::Packed { pack: pack.clone(), offset, len };
                offset += len;
            }
        }
        saved
    }

    /// The items [`StateHandler::pack_compartment`] would pack (plain, held
    /// by `compartment` alone and by no local owner) and their values
    /// concatenated.
    fn packable(&self, compartment: CompartmentId) -> (Vec<StateId>, Vec<u8>) {
        let Some(c) = self.compartments.get(&compartment) else { return (Vec::new(), Vec::new()) };
        let mut ids: Vec<StateId> = Vec::new();
        let mut values: Vec<&[u8]> = Vec::new();
        for e in &c.entries {
            if let Some(Stored { state: State { value: Value::Plain(v), .. }, holders: 1, local: false }) =
                self.items.get(&e.id)
            {
                if !v.is_empty() && !ids.contains(&e.id) {
                    ids.push(e.id);
                    values.push(v);
                }
            }
        }
        (ids, values.concat())
    }

    /// The values [`StateHandler::pack_compartment`] would pack now, one
    /// after another: samples for a [`PackDictionary`].
    pub fn packable_values(&self, compartment: CompartmentId) -> Vec<u8> {
        self.packable(compartment).1
    }

    /// Makes the packs made from now on against `dictionary` (packs made
    /// before keep theirs). Only how small packs are depends on it.
    pub fn set_pack_dictionary(&mut self, dictionary: PackDictionary) {
        self.pack_dictionary = Some(dictionary);
    }

    /// What packs are made against now.
    pub fn pack_dictionary(&self) -> PackDictionary {
        self.pack_dictionary.clone().unwrap_or_else(PackDictionary::sip_sdp)
    }

    /// The dictionaries the packs of `compartment`'s items were made
    /// against, one per pack.
    pub fn compartment_pack_dictionaries(&self, compartment: CompartmentId) -> Vec<PackDictionary> {
        let Some(c) = self.compartments.get(&compartment) else { return Vec::new() };
        let mut out: Vec<PackDictionary> = Vec::new();
        for e in &c.entries {
            if let Some(Stored { state: State { value: Value::Packed { pack, .. }, .. }, .. }) = self.items.get(&e.id) {
                if !out.iter().any(|d| d.same(pack.dictionary())) {
                    out.push(pack.dictionary().clone());
                }
            }
        }
        out
    }

    /// Undoes [`StateHandler::pack_compartment`] for the packed items of
    /// `compartment` (each pack unpacked once). Returns the items unpacked.
    pub fn unpack_compartment(&mut self, compartment: CompartmentId) -> usize {
        let Some(c) = self.compartments.get(&compartment) else { return 0 };
        let mut cache = UnpackCache::default();
        let mut n = 0;
        for e in &c.entries {
            let Some(stored) = self.items.get_mut(&e.id) else { continue };
            if !stored.state.is_packed() {
                continue;
            }
            let (buffer, at) = stored.state.bytes_in(&mut cache);
            let bytes: Arc<[u8]> = buffer.get(at..at + stored.state.len()).unwrap_or_default().into();
            stored.state.value = Value::Plain(bytes);
            n += 1;
        }
        n
    }

    /// Keeps plain the items of every pack `cache` unpacked (the bytes are
    /// at hand): a pack is unpacked at most once after it is made, by the
    /// first message that reads it, not once per message reading it
    /// (RFC 3320 §9.4.5 charges a STATE-ACCESS 1 + length cycles, however
    /// large the pack). Memory stays within what the items are accounted
    /// for (RFC 3320 §6.2), as for any plain item.
    pub fn keep_unpacked(&mut self, cache: UnpackCache) {
        for (pack, bytes) in cache.packs.into_values() {
            for id in pack.ids.iter() {
                let Some(stored) = self.items.get_mut(id) else { continue };
                let Value::Packed { pack: p, offset, len } = &stored.state.value else { continue };
                if !Arc::ptr_eq(p, &pack) {
                    continue;
                }
                let (at, n) = (*offset as usize, *len as usize);
                let Some(value) = bytes.get(at..at + n) else { continue };
                stored.state.value = Value::Plain(value.into());
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{CreateOutcome, StateHandler};
    use super::*;

    const A: CompartmentId = CompartmentId(1);
    const B: CompartmentId = CompartmentId(2);

    #[test]
    fn an_idle_compartments_items_are_packed_and_read_back_unchanged() {
        let mut h = StateHandler::new(8192);
        let dict = State::sip_sdp_dictionary();
        h.add_local(dict.clone());
        let sip = |n: usize| -> Vec<u8> {
            (0..n)
                .flat_map(|i| format!("Via: SIP/2.0/UDP pc{i}.example.com;branch=z9hG4bK{i}\r\n").into_bytes())
                .collect()
        };
        let (v1, v2, v3) = (sip(40), sip(41), sip(5));
        let CreateOutcome::Created(id1) = h.create(A, 64, 64, 6, &v1, 1) else { panic!() };
        let CreateOutcome::Created(id2) = h.create(A, 64, 64, 6, &v2, 1) else { panic!() };
        // Held by two compartments: not A's alone, never packed.
        let CreateOutcome::Created(id3) = h.create(A, 0, 0, 6, &v3, 1) else { panic!() };
        assert_eq!(h.create(B, 0, 0, 6, &v3, 1), CreateOutcome::Created(id3));
        let (used, resident) = (h.compartment(A).unwrap().used, h.resident_bytes());
        let saved = h.pack_compartment(A);
        assert!(saved > v1.len(), "saved {saved} of {} bytes", v1.len() + v2.len());
        assert_eq!(h.resident_bytes(), resident - saved);
        assert!(h.get(&id1).unwrap().is_packed() && h.get(&id2).unwrap().is_packed());
        assert!(!h.get(&id3).unwrap().is_packed() && !h.get(&dict.id).unwrap().is_packed());
        // Identifiers, lengths, lookups and accounting are those of before.
        assert_eq!(h.compartment(A).unwrap().used, used);
        assert_eq!(h.get(&id1).unwrap().len(), v1.len());
        assert_eq!(&h.lookup(&id2.0[..6]).unwrap().value()[..], &v2[..]);
        assert_eq!(&h.get(&id1).unwrap().value()[..], &v1[..]);
        assert_eq!(&h.get(&id1).unwrap().shared_value()[..], &v1[..]);
        // The same item made in another compartment while packed is the
        // identical item (RFC 3320 §6.2 step 3), not a collision.
        assert_eq!(h.create(B, 64, 64, 6, &v1, 1), CreateOutcome::Created(id1));
        // Comparing read the pack: all of its items are plain from now on.
        assert!(!h.get(&id1).unwrap().is_packed() && !h.get(&id2).unwrap().is_packed());
        assert_eq!(h.unpack_compartment(A), 0);
        assert!(!h.get(&id1).unwrap().is_packed() && !h.get(&id2).unwrap().is_packed());
        assert_eq!(&h.get(&id2).unwrap().value()[..], &v2[..]);
        assert_eq!(h.resident_bytes(), resident);
        // Packed again, then closed: B's items keep their bytes.
        assert!(h.pack_compartment(A) > 0);
        h.close_compartment(A);
        assert!(h.get(&id2).is_none());
        assert_eq!(&h.get(&id1).unwrap().value()[..], &v1[..]);
        assert_eq!(&h.get(&id3).unwrap().value()[..], &v3[..]);
    }

    /// SIP-like header lines, `tag` making one call's differ from another's.
    /// Each line carries a branch of 16 pseudo-random hexadecimal digits,
    /// the same for every `tag`, which repeats nowhere else.
    pub(in crate::state) fn call_lines(n: usize, tag: &str) -> Vec<u8> {
        (0..n as u64)
            .flat_map(|i| {
                let branch = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
                format!("Via: SIP/2.0/UDP pc{i}.example.com;branch=z9hG4bK{branch:016x}{tag}\r\n").into_bytes()
            })
            .collect()
    }

    #[test]
    fn packs_against_another_compartments_samples_are_smaller_and_read_back_unchanged() {
        let mut h = StateHandler::new(8192);
        let (a, b) = (call_lines(60, "a"), call_lines(60, "b"));
        let CreateOutcome::Created(ida) = h.create(A, 64, 64, 6, &a, 1) else { panic!() };
        let CreateOutcome::Created(idb) = h.create(B, 64, 64, 6, &b, 1) else { panic!() };
        assert_eq!(h.packable_values(A), a);
        let alone = h.pack_compartment(A);
        assert!(alone > 0);
        // B is packed against A's values as samples: much smaller than A's
        // pack against the RFC 3485 dictionary alone, since the calls
        // differ only in a letter of each line.
        let samples = PackDictionary::with_samples(&[&a]);
        h.set_pack_dictionary(samples.clone());
        let with_samples = h.pack_compartment(B);
        let (packed_alone, packed_with_samples) = (a.len() - alone, b.len() - with_samples);
        assert!(packed_with_samples * 5 < packed_alone * 3, "{packed_with_samples} B packed against {packed_alone}");
        assert!(h.compartment_pack_dictionaries(B).iter().all(|d| d.same(&samples)));
        assert!(h.compartment_pack_dictionaries(A).iter().all(|d| d.same(&PackDictionary::sip_sdp())));
        // Each pack keeps its own dictionary: a new one changes neither.
        h.set_pack_dictionary(PackDictionary::with_samples(&[b"unrelated"]));
        assert_eq!(&h.get(&ida).unwrap().value()[..], &a[..]);
        assert_eq!(&h.get(&idb).unwrap().value()[..], &b[..]);
        assert_eq!(h.unpack_compartment(B), 1);
        assert_eq!(&h.lookup(&idb.0[..6]).unwrap().value()[..], &b[..]);
    }

    #[test]
    fn a_packed_item_read_again_and_again_is_unpacked_once_per_cache() {
        let mut h = StateHandler::new(8192);
        let v1: Vec<u8> = b"Via: SIP/2.0/UDP pc33.example.com;branch=z9hG4bK776asdhds\r\n".repeat(30);
        let v2: Vec<u8> = b"Contact: <sip:alice@pc33.example.com>\r\n".repeat(20);
        let CreateOutcome::Created(id1) = h.create(A, 0, 0, 6, &v1, 1) else { panic!() };
        let CreateOutcome::Created(id2) = h.create(A, 0, 0, 6, &v2, 1) else { panic!() };
        assert!(h.pack_compartment(A) > 0);
        let mut cache = UnpackCache::default();
        for _ in 0..1000 {
            for (id, v) in [(id1, &v1), (id2, &v2)] {
                let s = h.get(&id).unwrap();
                let (buffer, at) = s.bytes_in(&mut cache);
                assert_eq!(&buffer[at..at + s.len()], &v[..]);
            }
        }
        // Both items are in the compartment's one pack.
        assert_eq!(cache.unpacks(), 1);
        // Plain items are read in place.
        h.unpack_compartment(A);
        let mut cache = UnpackCache::default();
        let (buffer, at) = h.get(&id2).unwrap().bytes_in(&mut cache);
        assert_eq!((&buffer[at..], cache.unpacks()), (&v2[..], 0));
    }

    #[test]
    fn values_that_do_not_compress_stay_plain() {
        let mut h = StateHandler::new(8192);
        // A maximal-period byte sequence: nothing for LZ4 to find.
        let mut x = 1u32;
        let noise: Vec<u8> = (0..3000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let CreateOutcome::Created(id) = h.create(A, 0, 0, 6, &noise, 1) else { panic!() };
        assert_eq!(h.pack_compartment(A), 0);
        assert!(!h.get(&id).unwrap().is_packed());
    }
}
