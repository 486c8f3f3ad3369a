//! The keyed hash of the crate's own hash tables.
//!
//! The keys these tables hash are chosen by a peer: state identifiers are
//! digests of state the peer created, and the partial identifiers a
//! message reads are bytes it sent. With a fixed hash a peer could grind
//! keys into one probe sequence and make every lookup walk it; a random
//! key per table, which the peer never sees, prevents that.

/// The high and low halves of a 128-bit product, folded (as wyhash and
/// foldhash mix): every bit of either factor reaches the low and the high
/// bits of the result.
#[inline]
pub(crate) fn fold_multiply(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Two random words for one table, drawn from the standard library's
/// per-process random keys.
pub(crate) fn random_seed() -> [u64; 2] {
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new();
    [random.hash_one(0u64), random.hash_one(1u64) | 1]
}
