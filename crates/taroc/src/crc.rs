//! The CRCs of the header formats: 3-, 7- and 8-bit CRCs over headers
//! (RFC 3095 §5.9.2, table-driven and folded), and the 16-bit TCP
//! checksum folded incrementally.

use crate::packet::TcpIpHeader;

/// CRC-16/CCITT (polynomial 0x1021, initial 0xFFFF) table.
pub(crate) const CRC16_TABLE: [u16; 256] = {
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
pub(crate) const CRC16_PAIR: [u16; 256] = {
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
pub(crate) fn crc16(data: &[u8]) -> u16 {
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
pub(crate) const fn crc_table(poly: u8) -> [u8; 256] {
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
pub(crate) const fn sliced(poly: u8) -> [[u8; 256]; 4] {
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
pub(crate) const CRC3_TABLE: [[u8; 256]; 4] = sliced(0x6);

pub(crate) const CRC7_TABLE: [[u8; 256]; 4] = sliced(0x79);

pub(crate) const CRC8_TABLE: [[u8; 256]; 4] = sliced(0xe0);

pub(crate) fn crc_with(t: &[[u8; 256]; 4], init: u8, data: &[u8]) -> u8 {
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
pub(crate) struct FoldedCrc {
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

pub(crate) const fn folded_crc(table: [[u8; 256]; 4], init: u8) -> FoldedCrc {
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

pub(crate) const CRC3_FOLDED: FoldedCrc = folded_crc(CRC3_TABLE, 0x7);

pub(crate) const CRC7_FOLDED: FoldedCrc = folded_crc(CRC7_TABLE, 0x7f);

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
pub(crate) fn crc_folded(crc: &FoldedCrc, data: &[u8]) -> u8 {
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
pub(crate) const FOLDED_LEN: usize = 12;

/// `CRC16_AT[i][b]`: what octet `b` at offset `i` of [`FOLDED_LEN`] octets
/// adds to their CRC-16 (the CRC is linear: its register from 0 after
/// octet `b` and the zero octets after it).
pub(crate) const CRC16_AT: [[u16; 256]; FOLDED_LEN] = {
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
pub(crate) const CRC16_OF_ZEROS: u16 = {
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
