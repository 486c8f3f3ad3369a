//! How each field of the compressed headers is encoded: the sequence,
//! acknowledgment, IP-ID, timestamp and window encodings and their
//! selectors, and the TCP option list.

use crate::packet::{OptionWalker, RawOptions};
use crate::wlsb::Lsb;

/// How a sequence or acknowledgment number is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqEnc {
    /// W-LSB of the number.
    Lsb(Lsb),
    /// All 32 bits.
    Irregular,
    /// Fixed-payload encoding (§6.1): number = m·stride + n; W-LSB of m.
    FixedPayload(Lsb),
    /// Fixed-payload encoding scaled by the MSN: W-LSB of m − MSN. A
    /// sender of full-sized segments (or a receiver acknowledging a
    /// constant number of them per ACK) advances m by one per packet, as
    /// the MSN advances, so m − MSN is the same over the whole VSW however
    /// long it is, where m alone spreads over the VSW's length; it changes
    /// by one at a segment lost upstream or a duplicate ACK. The decoded
    /// number is (m_ref + (MSN − MSN_ref) + (lag − lag_ref))·stride + n_ref.
    MsnScaled(Lsb),
}

impl SeqEnc {
    /// The bits the encoding sends: k of its W-LSB, or 32.
    pub const fn bits(&self) -> u32 {
        match self {
            SeqEnc::Lsb(l) | SeqEnc::FixedPayload(l) | SeqEnc::MsnScaled(l) => l.k,
            SeqEnc::Irregular => 32,
        }
    }
}

/// The 3-bit selector of SEQ and ACK: the profile's seqno widths and
/// offsets (§6.3), STATIC, and fixed-payload widths. SEQ's selector opens
/// a CO packet, so it never takes 7 (`111` would read as IR, IR-DYN,
/// Add-CID or feedback). Then the encodings the general format does not
/// carry: the MSN-scaled ones of the short format (index 8) and of the
/// compact format (index 9), and the short format's LSB(14,1023) (index
/// 10).
pub const SEQ_TABLE: [SeqEnc; 11] = [
    SeqEnc::Lsb(Lsb::new(0, 0)),
    SeqEnc::Lsb(Lsb::new(8, 63)),
    SeqEnc::Lsb(Lsb::new(14, 127)),
    SeqEnc::Lsb(Lsb::new(20, 1023)),
    SeqEnc::Irregular,
    SeqEnc::FixedPayload(Lsb::new(4, 1)),
    SeqEnc::FixedPayload(Lsb::new(8, 15)),
    SeqEnc::FixedPayload(Lsb::new(12, 63)),
    SeqEnc::MsnScaled(MSN_SCALED),
    SeqEnc::MsnScaled(COMPACT_SCALED),
    SeqEnc::Lsb(Lsb::new(14, 1023)),
];

/// The bits each [`SEQ_TABLE`] encoding sends, as a table: the formats'
/// writers and readers look a width up rather than match on the encoding.
pub(crate) const SEQ_BITS: [u32; 11] = {
    let mut b = [0; 11];
    let mut i = 0;
    while i < 11 {
        b[i] = SEQ_TABLE[i].bits();
        i += 1;
    }
    b
};

/// m − MSN in the short format: 4 bits, which a full-sized segment's short
/// packet has room for before its padding (16 bits of base, 4 of MSN, 16
/// of checksum: 36 of 40), over a spread of −8 to +7 (segments lost
/// upstream, duplicate ACKs, retransmissions).
pub const MSN_SCALED: Lsb = Lsb::new(4, 8);
/// m − MSN in the compact format: 3 bits over a spread of −4 to +3 (a
/// retransmission on the link moves it down by one for the segments after
/// it, a segment lost upstream up by one). Its coverage lies within
/// [`MSN_SCALED`]'s, so a packet picked for it fits the short format too.
pub const COMPACT_SCALED: Lsb = Lsb::new(3, 4);
/// The compact format's MSN: MSN-LSB(6,−1), a VSW of up to 64 packets.
pub const COMPACT_MSN: Lsb = Lsb::new(6, MSN_P);
/// [`SEQ_TABLE`]'s index of [`COMPACT_SCALED`].
pub const SEL_COMPACT_SCALED: u8 = 9;
/// [`SEQ_TABLE`]'s index of [`MSN_SCALED`].
pub const SEL_MSN_SCALED: u8 = 8;

/// How the IP-ID is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpIdEnc {
    /// W-LSB of IP-ID − MSN (constant for a per-flow counter).
    Offset(Lsb),
    /// W-LSB of the IP-ID itself (constant for zero IP-IDs).
    Raw(Lsb),
    /// All 16 bits.
    Irregular,
}

impl IpIdEnc {
    /// The bits the encoding sends: k of its W-LSB, or 16.
    pub const fn bits(&self) -> u32 {
        match self {
            IpIdEnc::Offset(l) | IpIdEnc::Raw(l) => l.k,
            IpIdEnc::Irregular => 16,
        }
    }
}

/// The 2-bit IP-ID selector of the general format (the profile's
/// LSB(4)/LSB(8)/IRREGULAR(16)), then the short format's two STATIC
/// encodings (its I bit): 4, IP-ID − MSN unchanged (a per-connection
/// counter); 5, IP-ID unchanged (zero IP-IDs).
pub const IPID_TABLE: [IpIdEnc; 6] = [
    IpIdEnc::Offset(Lsb::new(4, 0)),
    IpIdEnc::Raw(Lsb::new(4, 0)),
    IpIdEnc::Offset(Lsb::new(8, 0)),
    IpIdEnc::Irregular,
    IpIdEnc::Offset(Lsb::new(0, 0)),
    IpIdEnc::Raw(Lsb::new(0, 0)),
];

/// The bits each [`IPID_TABLE`] encoding sends (see [`SEQ_BITS`]).
pub(crate) const IPID_BITS: [u32; 6] = {
    let mut b = [0; 6];
    let mut i = 0;
    while i < 6 {
        b[i] = IPID_TABLE[i].bits();
        i += 1;
    }
    b
};

/// The 2-bit selector of TSval and TSecr in the general format: STATIC,
/// LSB(10,63), LSB(18,4095), IRREGULAR(32) (`None`); millisecond clocks
/// advance by the VSW's duration, some hundreds of ticks. Then the short
/// format's [`TS_SHORT`] (index 4).
pub const TS_TABLE: [Option<Lsb>; 5] =
    [Some(Lsb::new(0, 0)), Some(Lsb::new(10, 63)), Some(Lsb::new(18, 4095)), None, Some(TS_SHORT)];
/// The bits each [`TS_TABLE`] encoding sends (IRREGULAR: 32; see
/// [`SEQ_BITS`]).
pub(crate) const TS_BITS: [u32; 5] = {
    let mut b = [32; 5];
    let mut i = 0;
    while i < 5 {
        if let Some(l) = TS_TABLE[i] {
            b[i] = l.k;
        }
        i += 1;
    }
    b
};
/// The short format's timestamps: both STATIC, or both LSB(8,15) (a VSW
/// spanning up to 240 ticks: an RTT of ~100 ms and its burst on a
/// millisecond clock).
pub const TS_SHORT: Lsb = Lsb::new(8, 15);
/// The short format's window: STATIC or LSB(6,31) (receive-window
/// autotuning moves a scaled window by a few units per ACK).
pub const WINDOW_SHORT: Lsb = Lsb::new(6, 31);
/// The short format's SEQ and ACK selectors (2 bits each), as indices of
/// [`SEQ_TABLE`]. SEQ: STATIC (ACK-only segments), MSN-scaled fixed
/// payload [`MSN_SCALED`] (full-sized segments, one per MSN), LSB(14,1023)
/// (SIP: each segment moves SEQ by its predecessor's length, a few hundred
/// octets, so a window of them spans up to ~15 KB, as RFC 6846's `rnd` and
/// `seq` formats send 14 bits), LSB(20,1023) (a VSW of up to ~700
/// full-sized segments after a short one broke the fixed payload). ACK:
/// STATIC (a sender's ACK number while the peer is quiet), MSN-scaled (an
/// ACK per the same number of full-sized segments), LSB(14,1023) (SIP: the
/// other side's messages), LSB(20,1023).
pub const SHORT_SEQ: [u8; 4] = [0, 8, 10, 3];
/// The short format's ACK selectors (its AA bits), as for
/// [`SHORT_SEQ`].
pub const SHORT_ACK: [u8; 4] = [0, 8, 10, 3];

/// MSN widths (the profile's MSN-LSB(4,-1), MSN-LSB(7,-1), MSN-IRREGULAR(16)).
pub const MSN_K: [u32; 3] = [4, 7, 16];
/// The MSN's W-LSB offset: −1, so the interval is MSN_ref + 1 to
/// MSN_ref + 2^k (the MSN only moves ahead).
pub const MSN_P: i64 = -1;
/// window = C(LSB(12,63)) (profile §6.3).
pub const WINDOW_LSB: Lsb = Lsb::new(12, 63);

/// Where the varying parts of TCP options sit, and the options without
/// them (the skeleton a compressed packet takes from its reference).
///
/// Timestamp values are zeroed in the skeleton. A SACK option that ends
/// the list behind two NOPs (where stacks put it) is cut off the skeleton
/// altogether, so SACK blocks coming and going leave the skeleton STATIC;
/// a SACK option anywhere else stays in the skeleton, values and all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptInfo {
    /// The options with TSval and TSecr zeroed and a tail SACK option
    /// (and its two NOPs) cut off.
    pub skeleton: RawOptions,
    /// Offset of the timestamp option's TSval, if any.
    pub ts_at: Option<u8>,
    /// SACK blocks of the tail SACK option (0: none).
    pub sack_n: u8,
}

impl OptInfo {
    /// The skeleton and varying parts of `o` (malformed options are all
    /// skeleton).
    pub fn of(o: &RawOptions) -> OptInfo {
        let mut info = OptInfo { skeleton: *o, ts_at: None, sack_n: 0 };
        let bytes = o.as_slice();
        // What stacks send on an established connection: nothing, or NOP,
        // NOP, timestamps (what the walk below finds for them).
        match bytes {
            [] => return info,
            [1, 1, 8, 10, ..] if bytes.len() == 12 => {
                info.ts_at = Some(4);
                info.skeleton.bytes[4..12].fill(0);
                return info;
            }
            _ => {}
        }
        let mut walk = OptionWalker::new(bytes);
        // At most 40 option bytes (data offset 15), so at most 40 options
        // (NOP and EOL are one byte each).
        let mut found = [(0u8, 0usize, 0usize); 40];
        let mut n = 0;
        for item in &mut walk {
            found[n] = item;
            n += 1;
        }
        if walk.malformed {
            return info; // carried opaquely: the whole list is skeleton
        }
        for &(kind, start, len) in &found[..n] {
            if kind == 8 && len == 10 && info.ts_at.is_none() {
                info.ts_at = Some(start as u8 + 2);
                info.skeleton.bytes[start + 2..start + 10].fill(0);
            }
        }
        if let Some(&(5, start, len)) = found[..n].last() {
            let blocks = (len - 2) / 8;
            if start >= 2
                && bytes[start - 2..start] == [1, 1]
                && start + len == bytes.len()
                && (len - 2) % 8 == 0
                && (1..=4).contains(&blocks)
            {
                info.sack_n = blocks as u8;
                info.skeleton.bytes[start - 2..].fill(0);
                info.skeleton.len = (start - 2) as u8;
            }
        }
        info
    }

    /// The layout these options give a compressed packet (IPv4: the caller
    /// sets `ipv6`).
    pub fn shape(&self) -> OptShape {
        OptShape { ts: self.ts_at.is_some(), ipv6: false }
    }

    #[inline]
    /// TSval and TSecr of `o` (whose info this is); (0, 0) without a
    /// timestamp option.
    pub fn ts(&self, o: &RawOptions) -> (u32, u32) {
        match self.ts_at {
            Some(at) => {
                let t = &o.bytes[at as usize..at as usize + 8];
                (u32::from_be_bytes([t[0], t[1], t[2], t[3]]), u32::from_be_bytes([t[4], t[5], t[6], t[7]]))
            }
            None => (0, 0),
        }
    }

    /// SACK block `i` of the tail SACK option of `o` (whose info this is).
    pub fn sack(&self, o: &RawOptions, i: usize) -> (u32, u32) {
        let at = self.skeleton.len as usize + 4 + 8 * i;
        (be32(&o.bytes[at..]), be32(&o.bytes[at + 4..]))
    }

    /// The skeleton with timestamps filled in and `sack` appended as a tail
    /// SACK option; `None` if that exceeds 40 octets.
    pub fn fill(&self, ts: (u32, u32), sack: &[(u32, u32)]) -> Option<RawOptions> {
        let mut o = self.skeleton;
        if let Some(at) = self.ts_at {
            let at = at as usize;
            o.bytes[at..at + 4].copy_from_slice(&ts.0.to_be_bytes());
            o.bytes[at + 4..at + 8].copy_from_slice(&ts.1.to_be_bytes());
        }
        if !sack.is_empty() {
            let at = o.len as usize;
            let len = 4 + 8 * sack.len();
            if at + len > 40 {
                return None;
            }
            o.bytes[at..at + 4].copy_from_slice(&[1, 1, 5, (len - 2) as u8]);
            for (i, (l, r)) in sack.iter().enumerate() {
                o.bytes[at + 4 + 8 * i..at + 8 + 8 * i].copy_from_slice(&l.to_be_bytes());
                o.bytes[at + 8 + 8 * i..at + 12 + 8 * i].copy_from_slice(&r.to_be_bytes());
            }
            o.len += len as u8;
        }
        Some(o)
    }
}

pub(crate) fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// What a compressed packet's layout depends on besides its own bits, from
/// the reference it is decoded against: whether the compact option list
/// carries a timestamp pair (the reference's skeleton), and whether the
/// context is IPv6, whose packets carry no IP-ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OptShape {
    /// The reference's options have a timestamp option.
    pub ts: bool,
    /// The context is IPv6 (no IP-ID field).
    pub ipv6: bool,
}
