//! A state item and its identifier (RFC 3320 §3.3.3, §9.4.9), and how
//! its bytes are kept: plain, or packed with an idle compartment's other
//! items ([`super::super::StateHandler::pack_compartment`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use sha1::{Digest, Sha1};

/// A 20-byte state identifier (RFC 3320 §9.4.9).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StateId(pub [u8; 20]);

impl StateId {
    /// The identifier's 20 bytes.
    pub fn as_bytes(&self) -> &[u8; 20] {
        &self.0
    }

    /// The identifier as 40 lower-case hexadecimal digits.
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(40);
        for b in self.0 {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    /// The identifier written as 40 hexadecimal digits (either case);
    /// None for anything else.
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
#[derive(Debug, Clone)]
pub struct State {
    /// state_identifier: the SHA-1 of the other fields ([`StateId::compute`]).
    pub id: StateId,
    /// state_address: where STATE-ACCESS copies the value by default
    /// (RFC 3320 §9.4.5).
    pub address: u16,
    /// state_instruction: where execution continues after STATE-ACCESS;
    /// 0 to continue after the instruction (RFC 3320 §9.4.5).
    pub instruction: u16,
    /// minimum_access_length: the fewest identifier bytes that select the
    /// item, 6..=20 (RFC 3320 §3.3.3).
    pub min_access_len: u16,
    pub(super) value: Value,
}

/// A state item's bytes. RFC 3320 says what a state holds, not how it is
/// kept: an idle compartment's items are kept packed
/// ([`super::StateHandler::pack_compartment`]) and read back on access.
#[derive(Debug, Clone)]
pub(super) enum Value {
    /// Shared between every compartment that holds the item.
    Plain(Arc<[u8]>),
    /// Bytes `offset..offset + len` of a pack's unpacked contents.
    Packed { pack: Arc<Pack>, offset: u32, len: u32 },
}

/// Several items' values, concatenated and LZ4-compressed against a
/// [`PackDictionary`]: the SIP/SDP dictionary (RFC 3485), which every
/// SigComp endpoint for SIP holds and whose strings the values of SIP
/// states are made of, and what other compartments' states had in common.
#[derive(Debug)]
pub(super) struct Pack {
    pub(super) lz4: Box<[u8]>,
    len: u32,
    /// The dictionary the pack was made against, held for as long as the
    /// pack is: packs made later may use another.
    dictionary: PackDictionary,
    /// The items packed, in order ([`super::StateHandler::keep_unpacked`]).
    pub(super) ids: Box<[StateId]>,
}

impl Pack {
    /// `None` if packing would not save at least an eighth, or (never seen;
    /// a guard, so that [`Pack::unpack`] cannot fail later) if the packed
    /// bytes do not unpack to `plain`.
    pub(super) fn new(plain: &[u8], dictionary: &PackDictionary) -> Option<Pack> {
        let dict = dictionary.bytes();
        // Compressed into a scratch buffer of the worst case and then
        // copied to one of its own exact size: shrinking the worst-case
        // buffer in place would leave a hole beside every long-lived pack.
        let mut scratch = vec![0u8; lz4_flex::block::get_maximum_output_size(plain.len())];
        let n = lz4_flex::block::compress_into_with_dict(plain, &mut scratch, dict).ok()?;
        if n > plain.len() - plain.len() / 8 {
            return None;
        }
        let pack = Pack {
            lz4: scratch[..n].into(),
            len: u32::try_from(plain.len()).ok()?,
            dictionary: dictionary.clone(),
            ids: Box::new([]),
        };
        drop(scratch);
        (pack.unpack() == plain).then_some(pack)
    }

    fn unpack(&self) -> Vec<u8> {
        // Checked against the plain bytes when packed (Pack::new), and
        // neither the packed bytes nor the dictionary ever change
        // afterwards: this cannot fail.
        lz4_flex::block::decompress_with_dict(&self.lz4, self.len as usize, self.dictionary.bytes()).unwrap_or_default()
    }

    /// The dictionary the pack was made against.
    pub(super) fn dictionary(&self) -> &PackDictionary {
        &self.dictionary
    }
}

/// What packs ([`super::StateHandler::pack_compartment`]) are compressed
/// against: the SIP/SDP dictionary of RFC 3485, optionally followed by
/// sample state values of one compartment. The compartments of one
/// endpoint carry much the same SIP (its own Via and Record-Route, the
/// domain, the SDP of the same codecs), so an idle compartment's states
/// are mostly matches into another's; each pack holds the dictionary it
/// was made against, so an endpoint may take new samples at any time.
///
/// Samples affect only how small packs are, never what a state reads: a
/// pack is checked to unpack to its input when made, and one that saves
/// less than an eighth is not kept (the items stay plain), so samples
/// chosen by a hostile peer cost other compartments no more than their
/// plain values, which RFC 3320 §6.2 accounting already bounds.
#[derive(Debug, Clone)]
pub struct PackDictionary(Arc<[u8]>);

/// LZ4 reaches back at most 65,535 bytes: samples beyond that, with the
/// RFC 3485 dictionary, would never be matched.
const PACK_DICTIONARY_MAX: usize = 65_535;

impl PackDictionary {
    /// The RFC 3485 SIP/SDP dictionary alone (one copy per process).
    pub fn sip_sdp() -> PackDictionary {
        static DICT: OnceLock<PackDictionary> = OnceLock::new();
        DICT.get_or_init(|| PackDictionary(Arc::from(crate::dict::SIP_SDP))).clone()
    }

    /// The RFC 3485 SIP/SDP dictionary followed by `samples` (typically
    /// one idle compartment's state values, at the decompressor and in
    /// the compressor's model of its peer); of samples longer than LZ4
    /// reaches, the last bytes.
    pub fn with_samples(samples: &[&[u8]]) -> PackDictionary {
        let mut bytes: Vec<u8> = Vec::with_capacity(PACK_DICTIONARY_MAX);
        bytes.extend_from_slice(crate::dict::SIP_SDP);
        for s in samples {
            bytes.extend_from_slice(s);
        }
        let from = bytes.len().saturating_sub(PACK_DICTIONARY_MAX);
        PackDictionary(Arc::from(&bytes[from..]))
    }

    /// The dictionary's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// Whether `self` and `other` are the same dictionary (one copy).
    pub fn same(&self, other: &PackDictionary) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The packs one decompression has unpacked ([`State::bytes_in`]). A
/// STATE-ACCESS costs the UDVM 1 + length cycles (RFC 3320 §9.4.5), however
/// large the state: without this, a message reading a byte of a packed item
/// in a loop would cost an unpacking per cycle or two. Every pack read is
/// unpacked once per message and kept until the message ends: at most the
/// bytes those compartments' items took before they were packed.
#[derive(Debug, Default)]
pub struct UnpackCache {
    /// By the pack's address (the `Arc<Pack>` kept beside, so it stays
    /// valid while the cache lives).
    pub(super) packs: HashMap<usize, (Arc<Pack>, Arc<[u8]>)>,
    unpacks: usize,
}

impl UnpackCache {
    fn unpacked(&mut self, pack: &Arc<Pack>) -> Arc<[u8]> {
        let key = Arc::as_ptr(pack) as usize;
        if let Some((_, bytes)) = self.packs.get(&key) {
            return bytes.clone();
        }
        let bytes: Arc<[u8]> = pack.unpack().into();
        self.unpacks += 1;
        self.packs.insert(key, (pack.clone(), bytes.clone()));
        bytes
    }

    /// Packs unpacked so far.
    pub fn unpacks(&self) -> usize {
        self.unpacks
    }
}

impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        self.id == other.id && self.same_item(other)
    }
}

impl Eq for State {}

impl State {
    /// The SIP/SDP static dictionary of RFC 3485 as a state item: address
    /// 0, instruction 0, minimum access length 6 (RFC 3485 §5).
    ///
    /// Built (copied and hashed) once per process: every endpoint's state
    /// handler, and every compressor's model of a peer, then holds the same
    /// bytes through the state's `Arc` rather than a copy of its own.
    pub fn sip_sdp_dictionary() -> State {
        static STATE: OnceLock<State> = OnceLock::new();
        STATE.get_or_init(|| State::new(0, 0, 6, crate::dict::SIP_SDP)).clone()
    }

    /// The presence dictionary of RFC 5112 as a state item: address 0,
    /// instruction 0, minimum access length 6 (built once per process,
    /// like [`State::sip_sdp_dictionary`]).
    pub fn presence_dictionary() -> State {
        static STATE: OnceLock<State> = OnceLock::new();
        STATE.get_or_init(|| State::new(0, 0, 6, crate::dict::PRESENCE)).clone()
    }

    /// An item of `value` (a copy, kept plain) with its identifier
    /// computed (RFC 3320 §9.4.9).
    pub fn new(address: u16, instruction: u16, min_access_len: u16, value: &[u8]) -> State {
        State {
            id: StateId::compute(address, instruction, min_access_len, value),
            address,
            instruction,
            min_access_len,
            value: Value::Plain(value.into()),
        }
    }

    /// As [`State::new`], keeping `value` as the item's bytes instead of
    /// a copy of them.
    pub fn from_shared(address: u16, instruction: u16, min_access_len: u16, value: Arc<[u8]>) -> State {
        State {
            id: StateId::compute(address, instruction, min_access_len, &value),
            address,
            instruction,
            min_access_len,
            value: Value::Plain(value),
        }
    }

    /// state_length: the value's length in bytes, packed or not.
    pub fn len(&self) -> usize {
        match &self.value {
            Value::Plain(v) => v.len(),
            Value::Packed { len, .. } => *len as usize,
        }
    }

    /// Whether the value has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The item's bytes: borrowed, or unpacked if the item is packed.
    pub fn value(&self) -> Cow<'_, [u8]> {
        match &self.value {
            Value::Plain(v) => Cow::Borrowed(v),
            Value::Packed { pack, offset, len } => {
                let all = pack.unpack();
                let (at, n) = (*offset as usize, *len as usize);
                Cow::Owned(all.get(at..at + n).unwrap_or_default().to_vec())
            }
        }
    }

    /// The item's bytes as a shared buffer (the item's own, if not packed).
    pub fn shared_value(&self) -> Arc<[u8]> {
        match &self.value {
            Value::Plain(v) => v.clone(),
            Value::Packed { .. } => self.value().into(),
        }
    }

    /// The item's bytes for a reader that may read packed items again and
    /// again: the buffer holding them and the offset they start at (the
    /// item's own buffer at 0 if plain; the unpacked pack, unpacked once
    /// per `cache`, if packed). The buffer may hold more after the item:
    /// read at most [`State::len`] bytes from the offset.
    pub fn bytes_in(&self, cache: &mut UnpackCache) -> (Arc<[u8]>, usize) {
        match &self.value {
            Value::Plain(v) => (v.clone(), 0),
            Value::Packed { pack, offset, .. } => (cache.unpacked(pack), *offset as usize),
        }
    }

    /// Whether the item is kept packed ([`super::StateHandler::pack_compartment`]).
    pub fn is_packed(&self) -> bool {
        matches!(self.value, Value::Packed { .. })
    }

    /// The item's bytes if kept plain, borrowed.
    pub fn plain_value(&self) -> Option<&[u8]> {
        match &self.value {
            Value::Plain(v) => Some(v),
            Value::Packed { .. } => None,
        }
    }

    pub(super) fn same_item(&self, other: &State) -> bool {
        self.address == other.address
            && self.instruction == other.instruction
            && self.min_access_len == other.min_access_len
            && self.value() == other.value()
    }
}

/// Bytes `values` take in memory: plain ones at their length, each pack
/// once at its packed length.
pub(super) fn held_bytes<'a>(values: impl Iterator<Item = &'a Value>) -> usize {
    let mut packs: std::collections::HashSet<*const Pack> = std::collections::HashSet::new();
    let mut total = 0;
    for v in values {
        match v {
            Value::Plain(v) => total += v.len(),
            Value::Packed { pack, .. } => {
                if packs.insert(Arc::as_ptr(pack)) {
                    total += pack.lz4.len();
                }
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dict::{PRESENCE, PRESENCE_ID, SIP_SDP, SIP_SDP_ID};

    #[test]
    fn dictionary_identifiers_match_the_rfcs() {
        assert_eq!(SIP_SDP.len(), 0x12E4);
        assert_eq!(State::sip_sdp_dictionary().id.0, SIP_SDP_ID);
        assert_eq!(PRESENCE.len(), 0x0D93);
        assert_eq!(State::presence_dictionary().id.0, PRESENCE_ID);
    }

    #[test]
    fn dictionaries_are_stored_once_per_process() {
        // Two endpoints' copies point at the same bytes.
        let (a, b) = (State::sip_sdp_dictionary(), State::sip_sdp_dictionary());
        assert!(Arc::ptr_eq(&a.shared_value(), &b.shared_value()));
        let (a, b) = (State::presence_dictionary(), State::presence_dictionary());
        assert!(Arc::ptr_eq(&a.shared_value(), &b.shared_value()));
    }
}
