//! The compressed packet formats (parse/emit pairs); the layout is
//! documented in the crate's top-level docs.

use crate::bits::{BitReader, BitWriter, Truncated, WordReader, SCRATCH};
use crate::packet::{Ipv6Part, OptionWalker, RawOptions, TcpIpHeader, FLAG_PSH};
use crate::wlsb::Lsb;

/// Why bytes are not a well-formed compressed or feedback packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("packet truncated")]
    Truncated,
    #[error("empty packet")]
    Empty,
    #[error("unknown packet type {0:#04x}")]
    UnknownType(u8),
    #[error("reserved value in field {0}")]
    Reserved(&'static str),
    #[error("TCP options of {0} bytes (at most 40, a multiple of 4)")]
    OptionsLength(usize),
}

impl From<Truncated> for FormatError {
    fn from(_: Truncated) -> Self {
        FormatError::Truncated
    }
}

/// IR: static and dynamic chains (RFC 3095's IR type with D = 1).
pub const TYPE_IR: u8 = 0xfd;
/// IR with an IPv6 static chain. RFC 3095 §5.2 leaves 0xF9–0xFB unused;
/// the IPv4 IR keeps 0xFD and its chain without a version field.
pub const TYPE_IR_V6: u8 = 0xf9;
/// IR-DYN: dynamic chain only (RFC 3095's IR-DYN type).
pub const TYPE_IR_DYN: u8 = 0xf8;
/// Feedback: 11110KKR.
pub const TYPE_FEEDBACK: u8 = 0xf0;
/// Add-CID octet: 1110CCCC, CID 1–15 (RFC 3095 §5.2.3 small CIDs).
pub const ADD_CID: u8 = 0xe0;
/// Contexts a link carries (small CIDs 0–15).
pub const MAX_CONTEXTS: usize = 16;

pub(crate) fn emit_cid(cid: u8, out: &mut Vec<u8>) {
    debug_assert!((cid as usize) < MAX_CONTEXTS);
    if cid != 0 {
        out.push(ADD_CID | cid);
    }
}

/// Splits the Add-CID octet off a packet.
pub fn split_cid(data: &[u8]) -> Result<(u8, &[u8]), FormatError> {
    match data.first() {
        None => Err(FormatError::Empty),
        Some(&b) if b & 0xf0 == ADD_CID => {
            if b == ADD_CID {
                return Err(FormatError::Reserved("Add-CID 0"));
            }
            Ok((b & 0x0f, &data[1..]))
        }
        Some(_) => Ok((0, data)),
    }
}

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
/// Add-CID or feedback). Then the MSN-scaled encodings, which the general
/// format does not carry: the short format's (index 8) and the compact
/// format's (index 9).
pub const SEQ_TABLE: [SeqEnc; 10] = [
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
];

/// The bits each [`SEQ_TABLE`] encoding sends, as a table: the formats'
/// writers and readers look a width up rather than match on the encoding.
const SEQ_BITS: [u32; 10] = {
    let mut b = [0; 10];
    let mut i = 0;
    while i < 10 {
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
const IPID_BITS: [u32; 6] = {
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
const TS_BITS: [u32; 5] = {
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
/// payload [`MSN_SCALED`] (full-sized segments, one per MSN), fixed
/// payload LSB(8,15) (a VSW of up to 240 strides that a retransmission
/// broke the MSN scaling of), LSB(20,1023) (a VSW of up to ~700 full-sized
/// segments after a short one broke the fixed payload). ACK: STATIC (a
/// sender's ACK number while the peer is quiet), MSN-scaled (an ACK per
/// the same number of full-sized segments), fixed payload LSB(8,15),
/// LSB(20,1023).
pub const SHORT_SEQ: [u8; 4] = [0, 8, 6, 3];
pub const SHORT_ACK: [u8; 4] = [0, 8, 6, 3];

/// MSN widths (the profile's MSN-LSB(4,-1), MSN-LSB(7,-1), MSN-IRREGULAR(16)).
pub const MSN_K: [u32; 3] = [4, 7, 16];
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
    pub skeleton: RawOptions,
    /// Offset of the timestamp option's TSval, if any.
    pub ts_at: Option<u8>,
    /// SACK blocks of the tail SACK option (0: none).
    pub sack_n: u8,
}

impl OptInfo {
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

    pub fn shape(&self) -> OptShape {
        OptShape { ts: self.ts_at.is_some(), ipv6: false }
    }

    #[inline]
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

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// What a compressed packet's layout depends on besides its own bits, from
/// the reference it is decoded against: whether the compact option list
/// carries a timestamp pair (the reference's skeleton), and whether the
/// context is IPv6, whose packets carry no IP-ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OptShape {
    pub ts: bool,
    pub ipv6: bool,
}

/// CRC-16/CCITT (polynomial 0x1021, initial 0xFFFF) table.
const CRC16_TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u16) << 8;
        let mut b = 0;
        while b < 8 {
            c = if c & 0x8000 != 0 { (c << 1) ^ 0x1021 } else { c << 1 };
            b += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// Two octets a step (the tests' CRC-16 of any octets, which
/// [`fold_checksum`]'s is checked against): from register (h, l) and octets b0, b1, the
/// register is `CRC16_TABLE[l ^ b1] ^ CRC16_PAIR[h ^ b0]`, where
/// `CRC16_PAIR[x]` is what octet x then a zero octet leave (the table is
/// linear), so the two look-ups do not wait for each other.
#[cfg(test)]
const CRC16_PAIR: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let c = CRC16_TABLE[i];
        t[i] = ((c & 0xff) << 8) ^ CRC16_TABLE[(c >> 8) as usize];
        i += 1;
    }
    t
};

#[cfg(test)]
fn crc16(data: &[u8]) -> u16 {
    let mut pairs = data.chunks_exact(2);
    let mut crc = 0xffffu16;
    for p in &mut pairs {
        crc = CRC16_TABLE[(crc as u8 ^ p[1]) as usize] ^ CRC16_PAIR[((crc >> 8) as u8 ^ p[0]) as usize];
    }
    for &b in pairs.remainder() {
        crc = (crc << 8) ^ CRC16_TABLE[((crc >> 8) as u8 ^ b) as usize];
    }
    crc
}

/// A reflected CRC table of RFC 3095 §5.9.2's CRC-3, CRC-7 and CRC-8
/// (register shifted right, polynomial bit-reversed).
const fn crc_table(poly: u8) -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u8;
        let mut b = 0;
        while b < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ poly } else { c >> 1 };
            b += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// Four octets a step ("slicing"): `t[k]` is the table followed by `k`
/// zero octets. The register fits in the first octet and the table is
/// linear (`t[x ^ y] = t[x] ^ t[y]`), so the CRC after octets `b0..b3` from
/// register `c` is `t[3][c ^ b0] ^ t[2][b1] ^ t[1][b2] ^ t[0][b3]`: four
/// independent look-ups in place of a chain of four.
const fn sliced(poly: u8) -> [[u8; 256]; 4] {
    let t0 = crc_table(poly);
    let mut t = [t0; 4];
    let mut k = 1;
    while k < 4 {
        let mut i = 0;
        while i < 256 {
            t[k][i] = t0[t[k - 1][i] as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// CRC-3: 1 + x + x^3; CRC-7: 1 + x + x^2 + x^3 + x^6 + x^7; CRC-8:
/// 1 + x + x^2 + x^8 (RFC 3095 §5.9.2).
const CRC3_TABLE: [[u8; 256]; 4] = sliced(0x6);
const CRC7_TABLE: [[u8; 256]; 4] = sliced(0x79);
const CRC8_TABLE: [[u8; 256]; 4] = sliced(0xe0);

fn crc_with(t: &[[u8; 256]; 4], init: u8, data: &[u8]) -> u8 {
    let mut words = data.chunks_exact(4);
    let mut c = init;
    for w in &mut words {
        c = t[3][(c ^ w[0]) as usize] ^ t[2][w[1] as usize] ^ t[1][w[2] as usize] ^ t[0][w[3] as usize];
    }
    words.remainder().iter().fold(c, |c, &b| t[0][(c ^ b) as usize])
}

/// What [`crc_folded`] looks up for a CRC whose polynomial divides
/// x^56 − 1 (x^56 ≡ 1 modulo it): CRC-3's (x^7 ≡ 1: 1 + x + x^3 is
/// primitive) and CRC-7's (x^14 ≡ 1).
struct FoldedCrc {
    /// The octet-at-a-time tables, for packets shorter than 8 octets.
    table: [[u8; 256]; 4],
    init: u8,
    /// The register after `j` zero octets from `init`, for `j` of 0 to 6.
    init_after: [u8; 7],
    /// The CRC (from a zero register) of 7 octets whose first is `b` and
    /// the rest zero, and of those whose second is `b`.
    first: [u8; 256],
    second: [u8; 256],
}

const fn folded_crc(table: [[u8; 256]; 4], init: u8) -> FoldedCrc {
    let t = &table[0];
    let mut init_after = [0u8; 7];
    let mut c = init;
    let mut j = 0;
    while j < 7 {
        init_after[j] = c;
        c = t[c as usize];
        j += 1;
    }
    let mut first = [0u8; 256];
    let mut second = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        // Octet b then six zero octets; a zero octet, octet b, five more.
        let (mut f, mut s) = (t[b], t[b]);
        let mut j = 0;
        while j < 6 {
            f = t[f as usize];
            if j < 5 {
                s = t[s as usize];
            }
            j += 1;
        }
        first[b] = f;
        second[b] = s;
        b += 1;
    }
    FoldedCrc { table, init, init_after, first, second }
}

const CRC3_FOLDED: FoldedCrc = folded_crc(CRC3_TABLE, 0x7);
const CRC7_FOLDED: FoldedCrc = folded_crc(CRC7_TABLE, 0x7f);

/// A CRC whose polynomial divides x^56 − 1 ([`FoldedCrc`]), by folding.
///
/// A bit's part in the CRC is x to the power of the bits after it, which
/// then only matters modulo 56 (CRC-3: 7; CRC-7: 14): an octet's bits take
/// the same parts as those of the octet 7 places on (56 bits later). So
/// the octets are XORed together 7 at a time (one 8-octet load shifted by
/// one octet) from the end; within those 7 octets, read as a
/// little-endian word (the CRC takes each octet's least significant bit
/// first), bit `P` has 55 − `P` bits after it, so the bits are XORed
/// together by `P` modulo 14 into the first 14, whose CRC is two look-ups.
/// The initial value's part is the register it leaves after the octets
/// (`init_after`; 7 zero octets leave it as it is).
#[inline]
fn crc_folded(crc: &FoldedCrc, data: &[u8]) -> u8 {
    let n = data.len();
    if n < 8 {
        return crc_with(&crc.table, crc.init, data);
    }
    let le64 = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[at..at + 8]);
        u64::from_le_bytes(b)
    };
    // Octets end − 7 .. end, for end = n, n − 7, … while the octet before
    // them exists, XORed together; two such runs a step.
    let mut folded = 0u64;
    let mut end = n;
    while end >= 15 {
        folded ^= (le64(end - 8) >> 8) ^ (le64(end - 15) >> 8);
        end -= 14;
    }
    if end >= 8 {
        folded ^= le64(end - 8) >> 8;
        end -= 7;
    }
    // The 1 to 7 octets before `end` to the last of the 7 places.
    folded ^= (le64(0) << (8 * (7 - end))) & 0x00ff_ffff_ffff_ffff;
    // 56 bits to 14 by bit position modulo 14 (28 and 14 are multiples).
    let mut bits = (folded & 0xfff_ffff) ^ (folded >> 28);
    bits = (bits & 0x3fff) ^ (bits >> 14);
    crc.init_after[n % 7] ^ crc.first[(bits & 0xff) as usize] ^ crc.second[(bits >> 8) as usize]
}

/// RFC 3095 §5.9.2 CRC-3 (initial value all ones).
pub fn crc3(data: &[u8]) -> u8 {
    crc_folded(&CRC3_FOLDED, data)
}

/// RFC 3095 §5.9.2 CRC-7.
pub fn crc7(data: &[u8]) -> u8 {
    crc_folded(&CRC7_FOLDED, data)
}

/// RFC 3095 §5.9.2 CRC-8.
pub fn crc8(data: &[u8]) -> u8 {
    crc_with(&CRC8_TABLE, 0xff, data)
}

/// Octets of the values [`fold_checksum`] takes the CRC-16 of.
const FOLDED_LEN: usize = 12;

/// `CRC16_AT[i][b]`: what octet `b` at offset `i` of [`FOLDED_LEN`] octets
/// adds to their CRC-16 (the CRC is linear: its register from 0 after
/// octet `b` and the zero octets after it).
const CRC16_AT: [[u16; 256]; FOLDED_LEN] = {
    let mut t = [[0u16; 256]; FOLDED_LEN];
    let mut b = 0;
    while b < 256 {
        let mut c = CRC16_TABLE[b];
        let mut i = FOLDED_LEN;
        while i > 0 {
            i -= 1;
            t[i][b] = c;
            c = (c << 8) ^ CRC16_TABLE[(c >> 8) as usize];
        }
        b += 1;
    }
    t
};

/// The CRC-16 of [`FOLDED_LEN`] zero octets: what the initial value adds.
const CRC16_OF_ZEROS: u16 = {
    let mut c = 0xffffu16;
    let mut i = 0;
    while i < FOLDED_LEN {
        c = (c << 8) ^ CRC16_TABLE[(c >> 8) as usize];
        i += 1;
    }
    c
};

/// The transmitted checksum field: the TCP checksum XOR a CRC-16 of the
/// reconstructed values the TCP checksum does not cover (MSN, TOS, IP-ID,
/// IP flags and fragment offset, TTL, the two strides). A wrongly decoded
/// one of them changes the recovered TCP checksum, so the decompressor's
/// TCP-checksum verification (§5.4) covers every field it reconstructs, at
/// no extra bits.
pub fn fold_checksum(tcp_checksum: u16, h: &TcpIpHeader, msn: u16, strides: (u16, u16)) -> u16 {
    let [msn_hi, msn_lo] = msn.to_be_bytes();
    let [ip_id_hi, ip_id_lo] = h.ip_id.to_be_bytes();
    let [ff_hi, ff_lo] = h.flags_frag.to_be_bytes();
    let [seq_stride_hi, seq_stride_lo] = strides.0.to_be_bytes();
    let [ack_stride_hi, ack_stride_lo] = strides.1.to_be_bytes();
    let d: [u8; FOLDED_LEN] = [
        msn_hi,
        msn_lo,
        h.tos,
        ip_id_hi,
        ip_id_lo,
        ff_hi,
        ff_lo,
        h.ttl,
        seq_stride_hi,
        seq_stride_lo,
        ack_stride_hi,
        ack_stride_lo,
    ];
    // The CRC-16 of `d` as the sum of its octets' parts: twelve look-ups
    // that do not wait for each other, where the CRC octet by octet is a
    // chain of them.
    let mut crc = CRC16_OF_ZEROS;
    for (i, &b) in d.iter().enumerate() {
        crc ^= CRC16_AT[i][b as usize];
    }
    tcp_checksum ^ crc
}

/// The static chain: addresses and ports; for IPv6 also the flow label
/// (RFC 3095 §5.7.7.3's IPv6 static chain: version, flow label, next
/// header, addresses; the next header is always TCP here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StaticPart {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub src_port: u16,
    pub dst_port: u16,
    pub ipv6: Option<Ipv6Part>,
}

impl StaticPart {
    pub fn of(h: &TcpIpHeader) -> StaticPart {
        StaticPart { src: h.src, dst: h.dst, src_port: h.src_port, dst_port: h.dst_port, ipv6: h.ipv6 }
    }

    pub fn apply(&self, h: &mut TcpIpHeader) {
        h.src = self.src;
        h.dst = self.dst;
        h.src_port = self.src_port;
        h.dst_port = self.dst_port;
        h.ipv6 = self.ipv6;
    }
}

/// An IR or IR-DYN packet.
#[derive(Debug, Clone, Copy)]
pub struct IrPacket<'a> {
    pub cid: u8,
    /// Present in IR, absent in IR-DYN.
    pub static_part: Option<StaticPart>,
    pub msn: u16,
    /// The header with its true TCP checksum (unfolded); the static fields
    /// are zero in an IR-DYN.
    pub header: TcpIpHeader,
    pub strides: (u16, u16),
    /// CRC-8 of the original IP and TCP headers as they are on the wire.
    pub crc: u8,
    pub payload: &'a [u8],
}

impl<'a> IrPacket<'a> {
    /// Emits the packet. An IPv6 header's static chain (type
    /// [`TYPE_IR_V6`]) is `0110` · flow label 20 bits · next header 1 ·
    /// source address 16 · destination address 16 · ports 4 (RFC 3095
    /// §5.7.7.3); its dynamic chain has traffic class 1 and hop limit 1
    /// where IPv4's has TOS, IP-ID, flags+fragment offset and TTL (6).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let h = &self.header;
        emit_cid(self.cid, out);
        match self.static_part {
            Some(StaticPart { ipv6: Some(v6), src_port, dst_port, .. }) => {
                out.push(TYPE_IR_V6);
                out.extend_from_slice(&(6 << 28 | (v6.flow_label & 0xf_ffff) << 8 | 6).to_be_bytes());
                out.extend_from_slice(&v6.src);
                out.extend_from_slice(&v6.dst);
                out.extend_from_slice(&src_port.to_be_bytes());
                out.extend_from_slice(&dst_port.to_be_bytes());
            }
            Some(s) => {
                out.push(TYPE_IR);
                out.extend_from_slice(&s.src);
                out.extend_from_slice(&s.dst);
                out.extend_from_slice(&s.src_port.to_be_bytes());
                out.extend_from_slice(&s.dst_port.to_be_bytes());
            }
            None => out.push(TYPE_IR_DYN),
        }
        out.extend_from_slice(&self.msn.to_be_bytes());
        out.push(h.tos);
        if h.ipv6.is_none() {
            out.extend_from_slice(&h.ip_id.to_be_bytes());
            out.extend_from_slice(&h.flags_frag.to_be_bytes());
        }
        out.push(h.ttl);
        out.extend_from_slice(&h.seq.to_be_bytes());
        out.extend_from_slice(&h.ack.to_be_bytes());
        out.push(((h.tcp_len() / 4) as u8) << 4 | (h.tcp_res & 0x0f));
        out.push(h.tcp_flags);
        out.extend_from_slice(&h.window.to_be_bytes());
        out.extend_from_slice(&fold_checksum(h.checksum, h, self.msn, self.strides).to_be_bytes());
        out.extend_from_slice(&h.urgent.to_be_bytes());
        out.extend_from_slice(&self.strides.0.to_be_bytes());
        out.extend_from_slice(&self.strides.1.to_be_bytes());
        out.extend_from_slice(h.options.as_slice());
        out.push(self.crc);
        out.extend_from_slice(self.payload);
    }

    /// Parses an IR or IR-DYN (after the Add-CID octet); an IR-DYN's
    /// dynamic chain is IPv6's if `ipv6_context` (the context's static
    /// part, which the decompressor holds, is IPv6).
    pub fn parse(cid: u8, data: &'a [u8], ipv6_context: bool) -> Result<IrPacket<'a>, FormatError> {
        let ty = *data.first().ok_or(FormatError::Empty)?;
        let mut at = 1;
        let static_part = match ty {
            TYPE_IR => {
                let s = data.get(1..13).ok_or(FormatError::Truncated)?;
                at = 13;
                Some(StaticPart {
                    src: [s[0], s[1], s[2], s[3]],
                    dst: [s[4], s[5], s[6], s[7]],
                    src_port: u16::from_be_bytes([s[8], s[9]]),
                    dst_port: u16::from_be_bytes([s[10], s[11]]),
                    ipv6: None,
                })
            }
            TYPE_IR_V6 => {
                let s = data.get(1..41).ok_or(FormatError::Truncated)?;
                at = 41;
                let first = be32(s);
                if first >> 28 != 6 {
                    return Err(FormatError::Reserved("IPv6 static chain version"));
                }
                if first & 0xff != 6 {
                    return Err(FormatError::Reserved("IPv6 next header"));
                }
                let mut v6 = Ipv6Part { src: [0; 16], dst: [0; 16], flow_label: (first >> 8) & 0xf_ffff };
                v6.src.copy_from_slice(&s[4..20]);
                v6.dst.copy_from_slice(&s[20..36]);
                Some(StaticPart {
                    src: [0; 4],
                    dst: [0; 4],
                    src_port: u16::from_be_bytes([s[36], s[37]]),
                    dst_port: u16::from_be_bytes([s[38], s[39]]),
                    ipv6: Some(v6),
                })
            }
            TYPE_IR_DYN => None,
            t => return Err(FormatError::UnknownType(t)),
        };
        let v6 = static_part.map_or(ipv6_context, |s| s.ipv6.is_some());
        // The IP part of the dynamic chain: MSN, TOS, IP-ID, flags+fragment
        // offset, TTL (8 octets); IPv6: MSN, traffic class, hop limit (4).
        let (dyn_len, b) = if v6 { (24, 4) } else { (28, 8) };
        let d = data.get(at..at + dyn_len).ok_or(FormatError::Truncated)?;
        let u16_at = |i: usize| u16::from_be_bytes([d[i], d[i + 1]]);
        let doff = (d[b + 8] >> 4) as usize;
        if doff < 5 {
            return Err(FormatError::Reserved("data offset"));
        }
        let opt_len = doff * 4 - 20;
        let opts = data.get(at + dyn_len..at + dyn_len + opt_len).ok_or(FormatError::Truncated)?;
        let crc = *data.get(at + dyn_len + opt_len).ok_or(FormatError::Truncated)?;
        let (ip_id, flags_frag, ttl) = if v6 { (0, 0, d[3]) } else { (u16_at(3), u16_at(5), d[7]) };
        let mut h = TcpIpHeader {
            tos: d[2],
            ip_id,
            flags_frag,
            ttl,
            src: [0; 4],
            dst: [0; 4],
            // An IR-DYN's IPv6 addresses come from the context; marked IPv6
            // here so the folded checksum and lengths are IPv6's.
            ipv6: v6.then_some(Ipv6Part { src: [0; 16], dst: [0; 16], flow_label: 0 }),
            src_port: 0,
            dst_port: 0,
            seq: be32(&d[b..]),
            ack: be32(&d[b + 4..]),
            tcp_res: d[b + 8] & 0x0f,
            tcp_flags: d[b + 9],
            window: u16_at(b + 10),
            checksum: u16_at(b + 12),
            urgent: u16_at(b + 14),
            options: RawOptions::from_slice(opts).map_err(|_| FormatError::OptionsLength(opt_len))?,
        };
        let msn = u16_at(0);
        let strides = (u16_at(b + 16), u16_at(b + 18));
        if let Some(s) = static_part {
            s.apply(&mut h);
        }
        h.checksum = fold_checksum(h.checksum, &h, msn, strides);
        Ok(IrPacket { cid, static_part, msn, header: h, strides, crc, payload: &data[at + dyn_len + 1 + opt_len..] })
    }
}

/// The window field of a compressed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowField {
    Static,
    Lsb(u32),
    Irregular(u16),
    /// The short format's [`WINDOW_SHORT`] bits.
    Short(u32),
}

/// The options of a compressed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoOptions {
    /// The reference's skeleton, with these timestamps (selector, bits)
    /// and `sack_n` tail SACK blocks (left edge − ACK, right − left).
    Compact { ts: [(u8, u32); 2], sack_n: u8, sack: [(u32, u32); 4] },
    /// The whole list, verbatim.
    Raw(RawOptions),
}

/// A compressed (CO) packet's fields as sent, before decoding.
#[derive(Debug, Clone, Copy)]
pub struct CoPacket<'a> {
    pub cid: u8,
    /// MSN bits and their width (4, 7 or 16).
    pub msn: (u32, u32),
    pub ip_id: (u8, u32),
    pub seq: (u8, u32),
    pub ack: (u8, u32),
    pub window: WindowField,
    pub psh: bool,
    /// Reserved nibble and flags octet, when they differ from the references'.
    pub flags: Option<(u8, u8)>,
    /// TOS, TTL, IP flags and fragment offset.
    pub ip: Option<(u8, u8, u16)>,
    pub urgent: Option<u16>,
    pub strides: Option<(u16, u16)>,
    pub options: CoOptions,
    /// The folded checksum ([`fold_checksum`]).
    pub checksum: u16,
    /// As parsed: the CRC of the original IP and TCP headers as they are
    /// on the wire, and its width: CRC-3 in the short and compact formats,
    /// CRC-7 in the general one. [`CoPacket::emit`] computes it from the
    /// header.
    pub crc: (u8, u8),
    pub payload: &'a [u8],
}

impl<'a> CoPacket<'a> {
    /// The short format's second octet `SS AA I P W T`, if the packet fits
    /// it: nothing but SEQ, ACK, PSH, a small window change and small
    /// timestamp changes differs from every reference. Its MSN is always
    /// MSN-LSB(7,-1): the 4 bits above the first octet's 3 mostly fill
    /// what would be padding, and a VSW of more than 8 packets (a cwnd of
    /// full-sized segments) then stays in the short format.
    fn short_octet(&self, shape: OptShape) -> Option<u8> {
        // The tests that reject a general-format packet soonest first: its
        // MSN is rarely 7 bits wide, and an IPv4 one's IP-ID selector is
        // below 4.
        let plain = self.msn.1 == 7
            && self.flags.is_none()
            && self.ip.is_none()
            && self.urgent.is_none()
            && self.strides.is_none();
        if !plain {
            return None;
        }
        let i = match self.ip_id.0 {
            4 => 0,
            5 => 1,
            _ => return None,
        };
        let ss = SHORT_SEQ.iter().position(|&i| i == short_selector(self.seq.0))?;
        let aa = SHORT_ACK.iter().position(|&i| i == short_selector(self.ack.0))?;
        let w = match self.window {
            WindowField::Static => 0,
            WindowField::Short(_) => 1,
            _ => return None,
        };
        let t = match self.options {
            CoOptions::Compact { ts: [(0, _), (0, _)], sack_n: 0, .. } => 0,
            CoOptions::Compact { ts: [(4, _), (4, _)], sack_n: 0, .. } if shape.ts => 1,
            _ => return None,
        };
        Some((ss as u8) << 6 | (aa as u8) << 4 | i << 3 | (self.psh as u8) << 2 | w << 1 | t)
    }

    /// The compact format's data bit D, if the packet fits it: what fits
    /// the short format with the IP-ID's offset from the MSN unchanged
    /// (IPv4) or no IP-ID (IPv6), PSH clear, the window STATIC, and either
    /// SEQ in [`COMPACT_SCALED`] with the ACK number STATIC (D = 1, a bulk
    /// sender's full-sized segment) or SEQ STATIC with the ACK number in
    /// [`COMPACT_SCALED`] (D = 0, its receiver's ACK).
    fn compact_data_bit(&self, shape: OptShape) -> Option<bool> {
        let data = match (self.seq.0, self.ack.0) {
            (SEL_COMPACT_SCALED, 0) => true,
            (0, SEL_COMPACT_SCALED) => false,
            _ => return None,
        };
        let ip_id_unchanged = if shape.ipv6 { (5, 0) } else { (4, 0) };
        let fits = self.ip_id == ip_id_unchanged
            && !self.psh
            && self.window == WindowField::Static
            && self.short_octet(shape).is_some();
        fits.then_some(data)
    }

    /// Emits the packet, in the compact format if it fits, else in the
    /// short one if it fits, else in the general one. `shape` is the
    /// compact options' shape (the current skeleton's, equal to every
    /// reference's); `header` the original IP and TCP headers, which the
    /// CRC covers.
    pub fn emit(&self, shape: OptShape, header: &[u8], out: &mut Vec<u8>) -> Result<(), FormatError> {
        emit_cid(self.cid, out);
        if let Some(data) = self.compact_data_bit(shape) {
            let lag = if data { self.seq.1 } else { self.ack.1 };
            let mut w = BitWriter::new(out);
            w.put(0b01, 2);
            w.put(self.msn.0 & ((1 << COMPACT_MSN.k) - 1), COMPACT_MSN.k);
            w.put(crc3(header) as u32, 3);
            w.put(data as u32, 1);
            w.put(lag & ((1 << COMPACT_SCALED.k) - 1), COMPACT_SCALED.k);
            match self.options {
                CoOptions::Compact { ts: [(4, tsval), (4, tsecr)], .. } => {
                    w.put(1, 1);
                    w.put(tsval, TS_SHORT.k);
                    w.put(tsecr, TS_SHORT.k);
                }
                _ => w.put(0, 1),
            }
            w.put(self.checksum as u32, 16);
            w.finish();
            out.extend_from_slice(self.payload);
            return Ok(());
        }
        if let Some(second) = self.short_octet(shape) {
            // At most 98 bits: packed in one 128-bit word, appended at once.
            let (mut acc, mut n) = (0u128, 0u32);
            let mut put = |v: u32, width: u32| {
                acc = (acc << width) | (v as u128 & ((1u128 << width) - 1));
                n += width;
            };
            put(0b00, 2);
            put(self.msn.0 & 0x7, 3);
            put(crc3(header) as u32, 3);
            put(second as u32, 8);
            put(self.msn.0 >> 3, 4);
            put(self.seq.1, SEQ_BITS[short_selector(self.seq.0) as usize]);
            put(self.ack.1, SEQ_BITS[short_selector(self.ack.0) as usize]);
            if let WindowField::Short(b) = self.window {
                put(b, WINDOW_SHORT.k);
            }
            if second & 1 == 1 {
                if let CoOptions::Compact { ts, .. } = self.options {
                    put(ts[0].1, TS_SHORT.k);
                    put(ts[1].1, TS_SHORT.k);
                }
            }
            put(self.checksum as u32, 16);
            let octets = n.div_ceil(8);
            let padded = acc << (octets * 8 - n);
            out.extend_from_slice(&padded.to_be_bytes()[16 - octets as usize..]);
            out.extend_from_slice(self.payload);
            return Ok(());
        }
        if self.seq.0 >= 6 {
            return Err(FormatError::Reserved("SEQ selector 6 or above in the general format"));
        }
        if self.ack.0 >= SEL_MSN_SCALED {
            return Err(FormatError::Reserved("MSN-scaled ACK in the general format"));
        }
        // IPv6 has no IP-ID: its selector is 0 and no IP-ID bits follow.
        let (ipid_sel, ipid_k) = if shape.ipv6 {
            if self.ip_id != (5, 0) {
                return Err(FormatError::Reserved("IP-ID in an IPv6 context"));
            }
            (0, 0)
        } else {
            if self.ip_id.0 >= 4 {
                return Err(FormatError::Reserved("short-format IP-ID in the general format"));
            }
            (self.ip_id.0 as u32, IPID_BITS[self.ip_id.0 as usize])
        };
        let (m, h) = match self.msn.1 {
            4 => (0, 0),
            7 => (1, 0),
            16 => (0, 1),
            _ => return Err(FormatError::Reserved("MSN width")),
        };
        let raw = matches!(self.options, CoOptions::Raw(_));
        let ext = h << 7
            | (matches!(self.window, WindowField::Irregular(_)) as u32) << 6
            | (raw as u32) << 5
            | (self.flags.is_some() as u32) << 4
            | (self.ip.is_some() as u32) << 3
            | (self.urgent.is_some() as u32) << 2
            | (self.strides.is_some() as u32) << 1;
        // The first three octets (`1`, SEQ selector, X, m, MSN, IP-ID
        // selector, ACK selector, W, P, CRC-7) in one field.
        let head = 1 << 23
            | (self.seq.0 as u32) << 20
            | ((ext != 0) as u32) << 19
            | m << 18
            | (self.msn.0 & 0xf) << 14
            | ipid_sel << 12
            | (self.ack.0 as u32) << 9
            | (!matches!(self.window, WindowField::Static) as u32) << 8
            | (self.psh as u32) << 7
            | crc7(header) as u32;
        let mut w = BitWriter::new(out);
        if ext != 0 {
            w.put(head << 8 | ext, 32);
        } else {
            w.put(head, 24);
        }
        w.put(self.msn.0 >> 4, self.msn.1 - 4);
        w.put(self.ip_id.1, ipid_k);
        w.put(self.seq.1, SEQ_BITS[self.seq.0 as usize]);
        w.put(self.ack.1, SEQ_BITS[self.ack.0 as usize]);
        match self.window {
            WindowField::Static => {}
            WindowField::Lsb(b) => w.put(b, WINDOW_LSB.k),
            WindowField::Irregular(v) => w.put(v as u32, 16),
            WindowField::Short(_) => return Err(FormatError::Reserved("short window in the general format")),
        }
        if let Some((res, flags)) = self.flags {
            w.put(res as u32, 4);
            w.put(flags as u32, 8);
        }
        if let Some((tos, ttl, ff)) = self.ip {
            w.put(tos as u32, 8);
            w.put(ttl as u32, 8);
            // IPv6: traffic class and hop limit only.
            if !shape.ipv6 {
                w.put(ff as u32, 16);
            }
        }
        if let Some(u) = self.urgent {
            w.put(u as u32, 16);
        }
        if let Some((s, a)) = self.strides {
            w.put(s as u32, 16);
            w.put(a as u32, 16);
        }
        if let CoOptions::Compact { ts, sack_n, sack } = self.options {
            if shape.ts {
                for (sel, bits) in ts {
                    if sel >= 4 {
                        return Err(FormatError::Reserved("short timestamps in the general format"));
                    }
                    w.put(sel as u32, 2);
                    w.put(bits, TS_BITS[sel as usize]);
                }
            }
            if !(0..=4).contains(&sack_n) {
                return Err(FormatError::Reserved("SACK blocks"));
            }
            w.put((sack_n > 0) as u32, 1);
            if sack_n > 0 {
                w.put(sack_n as u32 - 1, 2);
            }
            for &(left, len) in sack.iter().take(sack_n as usize) {
                for v in [left, len] {
                    let wide = v > 0xffff;
                    w.put(wide as u32, 1);
                    w.put(v, if wide { 32 } else { 16 });
                }
            }
        }
        w.put(self.checksum as u32, 16);
        w.finish();
        if let CoOptions::Raw(o) = self.options {
            out.push(o.len);
            out.extend_from_slice(o.as_slice());
        }
        out.extend_from_slice(self.payload);
        Ok(())
    }

    /// The fields the short and compact formats leave to the reference
    /// (the rest is filled in by their parsers).
    fn short_family(cid: u8, ts: [(u8, u32); 2], checksum: u16, crc: u8, payload: &'a [u8]) -> CoPacket<'a> {
        CoPacket {
            cid,
            msn: (0, 0),
            ip_id: (0, 0),
            seq: (0, 0),
            ack: (0, 0),
            window: WindowField::Static,
            psh: false,
            flags: None,
            ip: None,
            urgent: None,
            strides: None,
            options: CoOptions::Compact { ts, sack_n: 0, sack: [(0, 0); 4] },
            checksum,
            crc: (crc, 3),
            payload,
        }
    }

    /// Parses the compact format.
    fn parse_compact(cid: u8, data: &'a [u8], shape: OptShape) -> Result<CoPacket<'a>, FormatError> {
        let mut r = WordReader::new(data);
        r.get(2);
        let msn = r.get(COMPACT_MSN.k);
        let crc = r.get(3) as u8;
        let data_bit = r.get(1) == 1;
        let lag = (SEL_COMPACT_SCALED, r.get(COMPACT_SCALED.k));
        let t = r.get(1) == 1;
        let ts = read_short_timestamps(&mut r, t, shape)?;
        let checksum = r.get(16) as u16;
        r.check()?;
        let at = r.octets_used();
        let (seq, ack) = if data_bit { (lag, (0, 0)) } else { ((0, 0), lag) };
        Ok(CoPacket {
            msn: (msn, COMPACT_MSN.k),
            ip_id: (if shape.ipv6 { 5 } else { 4 }, 0),
            seq,
            ack,
            ..CoPacket::short_family(cid, ts, checksum, crc, &data[at..])
        })
    }

    /// Parses the short format.
    fn parse_short(cid: u8, data: &'a [u8], shape: OptShape) -> Result<CoPacket<'a>, FormatError> {
        let mut r = WordReader::new(data);
        r.get(2);
        let msn = r.get(3);
        let crc = r.get(3) as u8;
        let second = r.get(8) as u8;
        let msn = r.get(4) << 3 | msn;
        if shape.ipv6 && second & 8 == 0 {
            r.check()?;
            // IPv6 has no IP-ID: only "unchanged" (zero) applies.
            return Err(FormatError::Reserved("IP-ID offset in an IPv6 context"));
        }
        let seq_sel = SHORT_SEQ[(second >> 6) as usize];
        let ack_sel = SHORT_ACK[((second >> 4) & 3) as usize];
        let seq = r.get(SEQ_BITS[seq_sel as usize]);
        let ack = r.get(SEQ_BITS[ack_sel as usize]);
        let window = if second & 2 != 0 { WindowField::Short(r.get(WINDOW_SHORT.k)) } else { WindowField::Static };
        let ts = read_short_timestamps(&mut r, second & 1 != 0, shape)?;
        let checksum = r.get(16) as u16;
        r.check()?;
        let at = r.octets_used();
        Ok(CoPacket {
            msn: (msn, 7),
            ip_id: (4 + ((second >> 3) & 1), 0),
            seq: (seq_sel, seq),
            ack: (ack_sel, ack),
            window,
            psh: second & 4 != 0,
            ..CoPacket::short_family(cid, ts, checksum, crc, &data[at..])
        })
    }

    /// Parses a CO packet (after the Add-CID octet); `shape` comes from
    /// the reference it will be decoded against.
    pub fn parse(cid: u8, data: &'a [u8], shape: OptShape) -> Result<CoPacket<'a>, FormatError> {
        let first = *data.first().ok_or(FormatError::Empty)?;
        if first >= 0xe0 {
            return Err(FormatError::UnknownType(first));
        }
        match first >> 6 {
            0b00 => return CoPacket::parse_short(cid, data, shape),
            0b01 => return CoPacket::parse_compact(cid, data, shape),
            _ => {}
        }
        let mut scratch = SCRATCH;
        let mut r = BitReader::new(data, &mut scratch);
        // The first three octets in one field (see `emit`).
        let head = r.get(24)?;
        let seq_sel = (head >> 20 & 7) as u8;
        let has_ext = head >> 19 & 1 == 1;
        let m = head >> 18 & 1 == 1;
        let msn_low = head >> 14 & 0xf;
        let ipid_sel = (head >> 12 & 3) as u8;
        let ack_sel = (head >> 9 & 7) as u8;
        let win = head >> 8 & 1 == 1;
        let psh = head >> 7 & 1 == 1;
        let crc = (head & 0x7f) as u8;
        let ext = if has_ext { r.get(8)? } else { 0 };
        if has_ext && ext == 0 || ext & 1 != 0 {
            return Err(FormatError::Reserved("extension"));
        }
        let msn_k = match (m, ext & 0x80 != 0) {
            (false, false) => 4,
            (true, false) => 7,
            (false, true) => 16,
            (true, true) => return Err(FormatError::Reserved("MSN width")),
        };
        let win_irr = ext & 0x40 != 0;
        if win_irr && !win {
            return Err(FormatError::Reserved("irregular window without W"));
        }
        let msn = (r.get(msn_k - 4)? << 4) | msn_low;
        let ip_id = if shape.ipv6 {
            if ipid_sel != 0 {
                return Err(FormatError::Reserved("IP-ID selector in an IPv6 context"));
            }
            (5, 0)
        } else {
            (ipid_sel, r.get(IPID_BITS[ipid_sel as usize])?)
        };
        let seq = r.get(SEQ_BITS[seq_sel as usize])?;
        let ack = r.get(SEQ_BITS[ack_sel as usize])?;
        let window = match (win, win_irr) {
            (false, _) => WindowField::Static,
            (true, false) => WindowField::Lsb(r.get(WINDOW_LSB.k)?),
            (true, true) => WindowField::Irregular(r.get(16)? as u16),
        };
        let flags = if ext & 0x10 != 0 { Some((r.get(4)? as u8, r.get(8)? as u8)) } else { None };
        if let Some((_, f)) = flags {
            if (f & FLAG_PSH != 0) != psh {
                return Err(FormatError::Reserved("PSH disagrees with the flags octet"));
            }
        }
        let ip = match (ext & 0x08 != 0, shape.ipv6) {
            (false, _) => None,
            (true, false) => Some((r.get(8)? as u8, r.get(8)? as u8, r.get(16)? as u16)),
            (true, true) => Some((r.get(8)? as u8, r.get(8)? as u8, 0)),
        };
        let urgent = if ext & 0x04 != 0 { Some(r.get(16)? as u16) } else { None };
        let strides = if ext & 0x02 != 0 { Some((r.get(16)? as u16, r.get(16)? as u16)) } else { None };
        let raw = ext & 0x20 != 0;
        let mut options = CoOptions::Compact { ts: [(0, 0); 2], sack_n: 0, sack: [(0, 0); 4] };
        if !raw {
            if let CoOptions::Compact { ts, sack_n, sack } = &mut options {
                if shape.ts {
                    for t in ts.iter_mut() {
                        let sel = r.get(2)? as u8;
                        *t = (sel, r.get(TS_BITS[sel as usize])?);
                    }
                }
                if r.get(1)? == 1 {
                    *sack_n = r.get(2)? as u8 + 1;
                }
                for s in sack.iter_mut().take(*sack_n as usize) {
                    let wide = r.get(1)? == 1;
                    s.0 = r.get(if wide { 32 } else { 16 })?;
                    let wide = r.get(1)? == 1;
                    s.1 = r.get(if wide { 32 } else { 16 })?;
                }
            }
        }
        let checksum = r.get(16)? as u16;
        let mut at = r.octets_used();
        if raw {
            let len = *data.get(at).ok_or(FormatError::Truncated)? as usize;
            let bytes = data.get(at + 1..at + 1 + len).ok_or(FormatError::Truncated)?;
            options = CoOptions::Raw(RawOptions::from_slice(bytes).map_err(|_| FormatError::OptionsLength(len))?);
            at += 1 + len;
        }
        Ok(CoPacket {
            cid,
            msn: (msn, msn_k),
            ip_id,
            seq: (seq_sel, seq),
            ack: (ack_sel, ack),
            window,
            psh,
            flags,
            ip,
            urgent,
            strides,
            options,
            checksum,
            crc: (crc, 7),
            payload: &data[at..],
        })
    }
}

/// The short and compact formats' timestamps: both LSB(8,15) if
/// `present`, else both STATIC.
fn read_short_timestamps(r: &mut WordReader, present: bool, shape: OptShape) -> Result<[(u8, u32); 2], FormatError> {
    if !present {
        return Ok([(0, 0), (0, 0)]);
    }
    if !shape.ts {
        // A packet that ended before this is truncated first.
        r.check()?;
        return Err(FormatError::Reserved("timestamps without a timestamp option"));
    }
    Ok([(4, r.get(TS_SHORT.k)), (4, r.get(TS_SHORT.k))])
}

/// The short format carries [`COMPACT_SCALED`] as [`MSN_SCALED`], whose
/// coverage contains it (the compressor keeps [`MSN_SCALED`]'s bits).
fn short_selector(sel: u8) -> u8 {
    if sel == SEL_COMPACT_SCALED {
        SEL_MSN_SCALED
    } else {
        sel
    }
}

/// What a feedback packet says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedbackKind {
    /// The packet `msn` decompressed and is the decompressor's reference.
    Ack,
    /// A packet failed verification.
    Nack,
    /// A packet arrived for a context without its static part: send IR.
    StaticNack,
}

/// A feedback packet (decompressor to compressor): `[Add-CID] 11110KKR MSN(16) CHECKSUM(16)`.
/// R is 1 for R-mode's ACK(R)/NACK(R), 0 for O-mode's. CHECKSUM is the TCP
/// checksum of the packet `msn` names, so the compressor can tell an ACK of
/// a packet it sent (§5.5.2.1: "an ACK(O) can only be valid if it refers to
/// a packet sent earlier") from one whose MSN was corrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feedback {
    pub cid: u8,
    pub kind: FeedbackKind,
    pub reliable: bool,
    pub msn: u16,
    pub checksum: u16,
}

impl Feedback {
    pub const LEN: usize = 5;

    pub fn emit(&self, out: &mut Vec<u8>) {
        emit_cid(self.cid, out);
        let k = match self.kind {
            FeedbackKind::Ack => 0,
            FeedbackKind::Nack => 1,
            FeedbackKind::StaticNack => 2,
        };
        out.push(TYPE_FEEDBACK | k << 1 | self.reliable as u8);
        out.extend_from_slice(&self.msn.to_be_bytes());
        out.extend_from_slice(&self.checksum.to_be_bytes());
    }

    pub fn parse(data: &[u8]) -> Result<Feedback, FormatError> {
        let (cid, data) = split_cid(data)?;
        let b = data.get(..5).ok_or(FormatError::Truncated)?;
        if b[0] & 0xf8 != TYPE_FEEDBACK {
            return Err(FormatError::UnknownType(b[0]));
        }
        let kind = match (b[0] >> 1) & 3 {
            0 => FeedbackKind::Ack,
            1 => FeedbackKind::Nack,
            2 => FeedbackKind::StaticNack,
            _ => return Err(FormatError::Reserved("feedback kind")),
        };
        Ok(Feedback {
            cid,
            kind,
            reliable: b[0] & 1 == 1,
            msn: u16::from_be_bytes([b[1], b[2]]),
            checksum: u16::from_be_bytes([b[3], b[4]]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::TcpOption;

    #[test]
    fn crc16_check_value() {
        // CRC-16/CCITT-FALSE of "123456789" (odd: the last octet alone),
        // and of an even length.
        assert_eq!(crc16(b"123456789"), 0x29b1);
        assert_eq!(crc16(b"12345678"), 0xa12b);
        // fold_checksum's octet by octet parts sum to the CRC-16 of the
        // values' octets.
        let mut h = crate::packet::TcpIpHeader::new([1, 2, 3, 4], 5, [6, 7, 8, 9], 10);
        let mut x = 0x9e37_79b9u32;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let (msn, strides) = (x as u16, ((x >> 3) as u16, (x >> 16) as u16));
            (h.tos, h.ip_id, h.flags_frag, h.ttl) =
                ((x >> 7) as u8, (x >> 11) as u16, (x >> 5) as u16, (x >> 24) as u8);
            let mut d = Vec::new();
            for v in [&msn.to_be_bytes()[..], &[h.tos], &h.ip_id.to_be_bytes(), &h.flags_frag.to_be_bytes(), &[h.ttl]] {
                d.extend_from_slice(v);
            }
            d.extend_from_slice(&strides.0.to_be_bytes());
            d.extend_from_slice(&strides.1.to_be_bytes());
            assert_eq!(fold_checksum(0x1234, &h, msn, strides), 0x1234 ^ crc16(&d));
        }
    }

    #[test]
    fn rohc_crc_check_values() {
        // RFC 3095 §5.9.2's CRCs, "123456789" (CRC-3/ROHC, CRC-7/ROHC, CRC-8/ROHC).
        assert_eq!((crc3(b"123456789"), crc7(b"123456789"), crc8(b"123456789")), (0x6, 0x53, 0xd0));
        // Four octets a step and one at a time agree at every length.
        let data: Vec<u8> = (0..64u32).map(|i| (i.wrapping_mul(2654435761) >> 11) as u8).collect();
        for (t, init) in [(&CRC3_TABLE, 0x7), (&CRC7_TABLE, 0x7f), (&CRC8_TABLE, 0xff)] {
            for len in 0..data.len() {
                let one_at_a_time = data[..len].iter().fold(init, |c, &b| t[0][(c ^ b) as usize]);
                assert_eq!(crc_with(t, init, &data[..len]), one_at_a_time, "{len} octets");
            }
        }
        // CRC-3's and CRC-7's folds by 7 octets agree with the octet at a
        // time at every length and alignment.
        let data: Vec<u8> = (0..300u32).map(|i| (i.wrapping_mul(2246822519) >> 9) as u8).collect();
        for (crc, t, init) in [(crc3 as fn(&[u8]) -> u8, &CRC3_TABLE, 0x7), (crc7, &CRC7_TABLE, 0x7f)] {
            for start in 0..8 {
                for len in 0..data.len() - start {
                    let part = &data[start..start + len];
                    let one_at_a_time = part.iter().fold(init, |c, &b| t[0][(c ^ b) as usize]);
                    assert_eq!(crc(part), one_at_a_time, "{len} octets from {start}");
                }
            }
        }
    }

    /// A bulk sender's segment: SEQ as `seq`, timestamps as `ts`, nothing
    /// else changing.
    fn bulk_segment(seq: (u8, u32), ts: [(u8, u32); 2]) -> CoPacket<'static> {
        CoPacket {
            msn: (0x59, 7),
            ip_id: (4, 0),
            seq,
            ..CoPacket::short_family(0, ts, 0xbeef, crc3(b"header"), b"data")
        }
    }

    #[test]
    fn short_format_round_trips_in_two_octets_and_the_checksum() {
        let co = bulk_segment((8, 0xa), [(4, 0x15), (4, 0x2a)]);
        let mut out = Vec::new();
        co.emit(OptShape { ts: true, ipv6: false }, b"header", &mut out).unwrap();
        // 16 bits of base, 4 of MSN, 4 of MSN-scaled SEQ, 16 of timestamps,
        // 16 of checksum.
        assert_eq!(out.len(), 7 + 4);
        assert_eq!(out[0] >> 6, 0b00);
        // The general format has no MSN-scaled ACK.
        let general = CoPacket { seq: (1, 0x1a), ack: (8, 1), ip: Some((0, 64, 0)), ..co };
        assert_eq!(
            general.emit(OptShape { ts: true, ipv6: false }, b"header", &mut Vec::new()),
            Err(FormatError::Reserved("MSN-scaled ACK in the general format"))
        );
        let back = CoPacket::parse(0, &out, OptShape { ts: true, ipv6: false }).unwrap();
        assert_eq!(format!("{back:?}"), format!("{co:?}"));
        assert_eq!(
            CoPacket::parse(0, &out, OptShape { ts: false, ipv6: false }).unwrap_err(),
            FormatError::Reserved("timestamps without a timestamp option")
        );
    }

    #[test]
    fn compact_format_carries_a_bulk_segment_in_two_octets_and_the_checksum() {
        let shape = OptShape { ts: true, ipv6: false };
        let segment = bulk_segment((SEL_COMPACT_SCALED, 0xd), [(0, 0), (0, 0)]);
        let with_ts = bulk_segment((SEL_COMPACT_SCALED, 0xd), [(4, 0x15), (4, 0x2a)]);
        let ack = CoPacket { seq: (0, 0), ack: (SEL_COMPACT_SCALED, 0x6), payload: b"", ..segment };
        for (co, len) in [(segment, 4 + 4), (with_ts, 6 + 4), (ack, 4)] {
            let mut out = Vec::new();
            co.emit(shape, b"header", &mut out).unwrap();
            assert_eq!(out.len(), len);
            assert_eq!(out[0] >> 6, 0b01);
            let back = CoPacket::parse(0, &out, shape).unwrap();
            // The compact format sends 6 bits of MSN and 3 of m − MSN.
            let mask = |(sel, bits): (u8, u32)| (sel, if sel == SEL_COMPACT_SCALED { bits & 7 } else { bits });
            let expected = CoPacket { msn: (0x59 & 0x3f, 6), seq: mask(co.seq), ack: mask(co.ack), ..co };
            assert_eq!(format!("{back:?}"), format!("{expected:?}"));
        }
        // PSH, a window change, or an IP-ID that is not the MSN's offset
        // leave it in the short format (which carries MSN_SCALED's bits).
        for co in [
            CoPacket { psh: true, ..segment },
            CoPacket { window: WindowField::Short(3), ..segment },
            CoPacket { ip_id: (5, 0), ..segment },
        ] {
            let mut out = Vec::new();
            co.emit(shape, b"header", &mut out).unwrap();
            assert_eq!(out[0] >> 6, 0b00, "{co:?}");
            let back = CoPacket::parse(0, &out, shape).unwrap();
            assert_eq!(back.seq, (SEL_MSN_SCALED, 0xd));
        }
    }

    #[test]
    fn feedback_round_trips() {
        for kind in [FeedbackKind::Ack, FeedbackKind::Nack, FeedbackKind::StaticNack] {
            let f = Feedback { cid: 7, kind, reliable: true, msn: 0xbeef, checksum: 0x1234 };
            let mut out = Vec::new();
            f.emit(&mut out);
            assert_eq!(out.len(), 1 + Feedback::LEN);
            assert_eq!(Feedback::parse(&out).unwrap(), f);
        }
        assert_eq!(Feedback::parse(&[0xf6, 0, 0, 0, 0]), Err(FormatError::Reserved("feedback kind")));
    }

    #[test]
    fn co_round_trips_with_every_optional_part() {
        let opts =
            RawOptions::build(&[TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val: 1, ecr: 2 }]).unwrap();
        for options in [
            CoOptions::Compact {
                ts: [(1, 0xab), (3, 0xdeadbeef)],
                sack_n: 2,
                sack: [(5, 70000), (1, 2), (0, 0), (0, 0)],
            },
            CoOptions::Raw(opts),
        ] {
            let co = CoPacket {
                cid: 3,
                msn: (0x5a, 7),
                ip_id: (3, 0xffff),
                seq: (5, 0xf),
                ack: (4, 0x89abcdef),
                window: WindowField::Irregular(0x1234),
                psh: true,
                flags: Some((0x1, 0x18)),
                ip: Some((0xb8, 63, 0x4000)),
                urgent: Some(9),
                strides: Some((1460, 2920)),
                options,
                checksum: 0xcafe,
                crc: (crc7(b"header"), 7),
                payload: b"payload",
            };
            let mut out = Vec::new();
            co.emit(OptShape { ts: true, ipv6: false }, b"header", &mut out).unwrap();
            let (cid, rest) = split_cid(&out).unwrap();
            let back = CoPacket::parse(cid, rest, OptShape { ts: true, ipv6: false }).unwrap();
            assert_eq!(format!("{back:?}"), format!("{co:?}"));
        }
    }

    #[test]
    fn opt_info_separates_skeleton_from_values() {
        let o = RawOptions::build(&[
            TcpOption::Nop,
            TcpOption::Nop,
            TcpOption::Timestamp { val: 10, ecr: 20 },
            TcpOption::Nop,
            TcpOption::Nop,
            TcpOption::Sack(vec![(100, 200), (300, 400)]),
        ])
        .unwrap();
        let info = OptInfo::of(&o);
        assert_eq!((info.shape(), info.sack_n), (OptShape { ts: true, ipv6: false }, 2));
        assert_eq!(info.ts(&o), (10, 20));
        assert_eq!(info.sack(&o, 1), (300, 400));
        assert_eq!(info.skeleton.as_slice(), &[1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(info.fill((10, 20), &[(100, 200), (300, 400)]), Some(o));
        let no_sack =
            RawOptions::build(&[TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val: 1, ecr: 2 }]).unwrap();
        assert_eq!(OptInfo::of(&no_sack).skeleton, info.skeleton);
        // A SACK option that is not the tail stays in the skeleton.
        let inner = RawOptions::build(&[TcpOption::Sack(vec![(1, 2)]), TcpOption::Nop, TcpOption::Nop]).unwrap();
        assert_eq!(OptInfo::of(&inner).skeleton, inner);
    }

    /// 40 option bytes hold up to 40 options (NOPs are one byte each).
    #[test]
    fn opt_info_takes_forty_one_byte_options() {
        let nops = RawOptions::build(&vec![TcpOption::Nop; 40]).unwrap();
        assert_eq!(OptInfo::of(&nops).skeleton, nops);
        let mut list = vec![TcpOption::Nop; 30];
        list.push(TcpOption::Timestamp { val: 7, ecr: 9 });
        let o = RawOptions::build(&list).unwrap();
        let info = OptInfo::of(&o);
        assert_eq!((info.ts_at, info.ts(&o)), (Some(32), (7, 9)));
    }
}
