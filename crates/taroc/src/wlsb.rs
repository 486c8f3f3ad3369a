//! Window-based LSB encoding (RFC 3095 §4.5.2) with TAROC's two changes
//! (draft-ietf-rohc-tcp-taroc-04 §6.1):
//!
//! 1. the decompressor's reference is the last received non-retransmitted
//!    or uncompressed value that passed the TCP checksum (see
//!    [`crate::decompressor`]);
//! 2. the compressor adds every value it sends to the sliding window (VSW),
//!    compressed or not, because every segment is protected by the TCP
//!    checksum (see [`crate::compressor`]).
//!
//! A value `v` is sent as its `k` least significant bits when it lies in
//! the interpretation interval `f(v_ref, k, p) = [v_ref - p, v_ref + 2^k - 1 - p]`
//! of **every** value `v_ref` in the VSW, so whichever of them the
//! decompressor holds decodes it. The compressor tracks, over the VSW, the
//! least and greatest signed difference `v - v_ref` ([`Spread`]) and picks
//! the first encoding of a field's table that covers both.

/// An LSB encoding: `k` bits with interpretation offset `p`. `k = 0` is the
/// profile's STATIC (the value equals every reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lsb {
    /// Bits sent, 0..=32.
    pub k: u32,
    /// Interpretation offset: the interval starts `p` below the reference.
    pub p: i64,
}

impl Lsb {
    /// `k` bits with offset `p`.
    pub const fn new(k: u32, p: i64) -> Lsb {
        Lsb { k, p }
    }

    /// Whether every difference in `spread` lies in the interval.
    #[inline(always)]
    pub fn covers(&self, spread: &Spread) -> bool {
        !spread.is_empty() && spread.min >= -self.p && spread.max <= ((1i64 << self.k) - 1 - self.p)
    }
}

/// The least and greatest signed difference `v - v_ref` over the VSW.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    /// The least difference seen.
    pub min: i64,
    /// The greatest difference seen.
    pub max: i64,
}

impl Spread {
    /// No difference seen: `min` above `max`, covered by no encoding.
    pub const EMPTY: Spread = Spread { min: i64::MAX, max: i64::MIN };

    /// Takes difference `d` into the spread.
    #[inline]
    pub fn add(&mut self, d: i64) {
        self.min = self.min.min(d);
        self.max = self.max.max(d);
    }

    /// Whether no difference has been added.
    pub fn is_empty(&self) -> bool {
        self.min > self.max
    }
}

impl Default for Spread {
    fn default() -> Self {
        Spread::EMPTY
    }
}

/// `v - r` of 32-bit sequence-space values as a signed distance.
#[inline]
pub fn diff32(v: u32, r: u32) -> i64 {
    v.wrapping_sub(r) as i32 as i64
}

/// `v - r` of 16-bit values as a signed distance.
#[inline]
pub fn diff16(v: u16, r: u16) -> i64 {
    v.wrapping_sub(r) as i16 as i64
}

/// Decodes `k` received bits against `v_ref` in a field of `width` bits
/// (16 or 32): the value of the interval `f(v_ref, k, p)` whose `k` low
/// bits are `bits`. `k >= width` is the value itself.
pub fn decode(bits: u32, lsb: Lsb, v_ref: u32, width: u32) -> u32 {
    let field_mask = if width >= 32 { u32::MAX } else { (1u32 << width) - 1 };
    if lsb.k >= width {
        return bits & field_mask;
    }
    let mask = (1u32 << lsb.k) - 1;
    let lower = v_ref.wrapping_sub(lsb.p as u32) & field_mask;
    lower.wrapping_add(bits.wrapping_sub(lower) & mask) & field_mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_in_the_window_decodes_the_value() {
        // seqno = C(LSB(14,127)) of the profile: refs behind and one ahead.
        let lsb = Lsb::new(14, 127);
        let v = 0xffff_ff00u32; // near the wrap
        let refs = [v.wrapping_sub(16000), v.wrapping_sub(1), v.wrapping_add(100), v.wrapping_sub(5000)];
        let mut s = Spread::EMPTY;
        for r in refs {
            s.add(diff32(v, r));
        }
        assert!(lsb.covers(&s));
        for r in refs {
            assert_eq!(decode(v & 0x3fff, lsb, r, 32), v);
        }
        s.add(diff32(v, v.wrapping_add(128))); // 128 ahead: outside p = 127
        assert!(!lsb.covers(&s));
    }

    #[test]
    fn static_is_k_zero() {
        let mut s = Spread::EMPTY;
        s.add(0);
        assert!(Lsb::new(0, 0).covers(&s));
        assert_eq!(decode(0, Lsb::new(0, 0), 1234, 16), 1234);
        s.add(1);
        assert!(!Lsb::new(0, 0).covers(&s));
        assert!(!Lsb::new(4, 0).covers(&Spread::EMPTY));
    }

    #[test]
    fn sixteen_bit_fields_wrap() {
        let lsb = Lsb::new(4, -1); // the profile's MSN-LSB(4,-1): [ref+1, ref+16]
        assert_eq!(decode(0x3, lsb, 0xfffe, 16), 0x0003);
        assert_eq!(decode(0xf, lsb, 0xfffe, 16), 0xffff);
    }
}
