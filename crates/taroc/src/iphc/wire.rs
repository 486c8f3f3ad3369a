//! The packets of RFC 2507 TCP header compression as bytes: parsing and
//! emitting only, no context (that is `iphc.rs`).
//!
//! RFC 2507 leaves the packet type to the link layer (§3.1; RFC 2509
//! gives PPP one protocol number per type). Here, as `vj.rs` does with
//! RFC 1144's SLIP framing, one leading octet stands for it:
//!
//! | first octet | packet |
//! |---|---|
//! | `0x4X`, `0x6X` | REGULAR_HEADER: an IP packet as it is |
//! | [`TYPE_FULL_HEADER`] | FULL_HEADER: the whole packet, its first length field carrying the CID (§5.3) |
//! | [`TYPE_COMPRESSED_TCP`] | COMPRESSED_TCP: deltas from the context (§6) |
//! | [`TYPE_COMPRESSED_TCP_NODELTA`] | COMPRESSED_TCP_NODELTA: the changing fields as they are (§6) |
//! | [`TYPE_CONTEXT_STATE`] | CONTEXT_STATE: header requests for TCP CIDs (§10.2), decompressor to compressor |
//!
//! COMPRESSED_TCP and COMPRESSED_TCP_NODELTA (§6) are, after the type:
//! the 8-bit CID (TCP CIDs are 8 bits, §5.1), the flag octet `R O I P S A
//! W U`, the TCP checksum (2 octets), then the fields the flags name in
//! this order: the R-octet (R: the TCP reserved bits and CWR/ECE changed;
//! here `CWR ECE 0 0 res3 res2 res1 NS`), the urgent pointer (U), the
//! window (W), the acknowledgment number (A), the sequence number (S), the
//! IPv4 identification (I), the TCP options (O: a length octet and the
//! options, sent whole when they changed). In COMPRESSED_TCP the W, A, S
//! and I fields are deltas in RFC 1144's encoding (1–255 in one octet,
//! otherwise 0 and two octets), the urgent pointer a value in that
//! encoding, and `S A W U` = `1 0 1 1` / `1 1 1 1` are RFC 1144's special
//! cases SPECIAL_I / SPECIAL_D; without I the identification grows by
//! one. In COMPRESSED_TCP_NODELTA they are the fields themselves: window
//! and urgent 2 octets, the numbers 4, the identification 2.

/// FULL_HEADER.
pub const TYPE_FULL_HEADER: u8 = 0x20;
/// COMPRESSED_TCP.
pub const TYPE_COMPRESSED_TCP: u8 = 0x21;
/// COMPRESSED_TCP_NODELTA.
pub const TYPE_COMPRESSED_TCP_NODELTA: u8 = 0x22;
/// CONTEXT_STATE.
pub const TYPE_CONTEXT_STATE: u8 = 0x23;
/// The CONTEXT_STATE subtype for 8-bit TCP CIDs (§10.2).
pub const CONTEXT_STATE_TCP: u8 = 1;

/// Flag R: the R-octet follows.
pub const FLAG_R: u8 = 0x80;
/// Flag O: the TCP options follow.
pub const FLAG_O: u8 = 0x40;
/// Flag I: the IPv4 identification (delta) follows.
pub const FLAG_I: u8 = 0x20;
/// Flag P: the TCP PSH bit.
pub const FLAG_P: u8 = 0x10;
/// Flag S: the sequence number (delta) follows.
pub const FLAG_S: u8 = 0x08;
/// Flag A: the acknowledgment number (delta) follows.
pub const FLAG_A: u8 = 0x04;
/// Flag W: the window (delta) follows.
pub const FLAG_W: u8 = 0x02;
/// Flag U: the urgent pointer follows (and URG is set).
pub const FLAG_U: u8 = 0x01;
/// RFC 1144's SPECIAL_I: echoed interactive traffic.
pub const SPECIAL_I: u8 = FLAG_S | FLAG_W | FLAG_U;
/// RFC 1144's SPECIAL_D: unidirectional data.
pub const SPECIAL_D: u8 = FLAG_S | FLAG_A | FLAG_W | FLAG_U;
const SWAU: u8 = FLAG_S | FLAG_A | FLAG_W | FLAG_U;

/// Why bytes are not a well-formed RFC 2507 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IphcFormatError {
    /// No bytes at all.
    #[error("empty packet")]
    Empty,
    /// The packet ends inside a field.
    #[error("packet truncated")]
    Truncated,
    /// A first octet that begins no packet type; holds it.
    #[error("unknown packet type {0:#04x}")]
    UnknownType(u8),
    /// A CONTEXT_STATE subtype other than 8-bit TCP CIDs; holds it.
    #[error("CONTEXT_STATE of unknown type {0}")]
    ContextStateType(u8),
    /// TCP options of a length TCP cannot carry; holds it.
    #[error("TCP options of {0} bytes (at most 40, a multiple of 4)")]
    OptionsLength(usize),
    /// A FULL_HEADER whose first length field holds no 8-bit TCP CID.
    #[error("FULL_HEADER length field holds no TCP CID")]
    FullHeaderCid,
}

impl From<IphcFormatError> for crate::format::FormatError {
    fn from(e: IphcFormatError) -> Self {
        use crate::format::FormatError as F;
        match e {
            IphcFormatError::Empty => F::Empty,
            IphcFormatError::Truncated => F::Truncated,
            IphcFormatError::UnknownType(b) => F::UnknownType(b),
            IphcFormatError::ContextStateType(_) => F::Reserved("RFC 2507 CONTEXT_STATE type"),
            IphcFormatError::OptionsLength(n) => F::OptionsLength(n),
            IphcFormatError::FullHeaderCid => F::Reserved("RFC 2507 FULL_HEADER CID"),
        }
    }
}

/// RFC 1144's encoding of a delta (RFC 2507 §6 uses it too).
pub fn encode_delta(n: u16, out: &mut Vec<u8>) {
    if n == 0 || n >= 256 {
        out.push(0);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(n as u8);
    }
}

/// Reads one delta at `at`, advancing it.
pub fn decode_delta(data: &[u8], at: &mut usize) -> Result<u16, IphcFormatError> {
    let b = *data.get(*at).ok_or(IphcFormatError::Truncated)?;
    if b != 0 {
        *at += 1;
        return Ok(b as u16);
    }
    let v = data.get(*at + 1..*at + 3).ok_or(IphcFormatError::Truncated)?;
    *at += 3;
    Ok(u16::from_be_bytes([v[0], v[1]]))
}

fn take<'a>(data: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8], IphcFormatError> {
    let s = data.get(*at..*at + n).ok_or(IphcFormatError::Truncated)?;
    *at += n;
    Ok(s)
}

/// The changing fields of a COMPRESSED_TCP or COMPRESSED_TCP_NODELTA
/// header; a field is `Some` when its flag is set. In COMPRESSED_TCP the
/// numbers are deltas (truncated to 16 bits) and `special` may be set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpFields {
    /// The TCP checksum.
    pub checksum: u16,
    /// PSH.
    pub push: bool,
    /// The R-octet.
    pub r_octet: Option<u8>,
    /// The urgent pointer (a value in both formats).
    pub urgent: Option<u16>,
    /// The window or its delta.
    pub window: Option<u16>,
    /// The acknowledgment number or its delta.
    pub ack: Option<u32>,
    /// The sequence number or its delta.
    pub seq: Option<u32>,
    /// The IPv4 identification or its delta.
    pub ip_id: Option<u16>,
    /// The TCP options, whole.
    pub options: Option<crate::packet::RawOptions>,
    /// COMPRESSED_TCP only: [`SPECIAL_I`] or [`SPECIAL_D`] in place of the
    /// S A W U fields.
    pub special: Option<u8>,
}

/// A compressed TCP header: its CID, whether it is NODELTA, its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedTcp {
    /// The 8-bit TCP CID.
    pub cid: u8,
    /// COMPRESSED_TCP_NODELTA rather than COMPRESSED_TCP.
    pub nodelta: bool,
    /// The fields.
    pub fields: TcpFields,
}

impl CompressedTcp {
    /// Emits the packet type and the compressed header.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let f = &self.fields;
        out.push(if self.nodelta { TYPE_COMPRESSED_TCP_NODELTA } else { TYPE_COMPRESSED_TCP });
        out.push(self.cid);
        let mut flags = 0u8;
        flags |= if f.r_octet.is_some() { FLAG_R } else { 0 };
        flags |= if f.options.is_some() { FLAG_O } else { 0 };
        flags |= if f.ip_id.is_some() { FLAG_I } else { 0 };
        flags |= if f.push { FLAG_P } else { 0 };
        match f.special.filter(|_| !self.nodelta) {
            Some(s) => flags |= s & SWAU,
            None => {
                flags |= if f.seq.is_some() { FLAG_S } else { 0 };
                flags |= if f.ack.is_some() { FLAG_A } else { 0 };
                flags |= if f.window.is_some() { FLAG_W } else { 0 };
                flags |= if f.urgent.is_some() { FLAG_U } else { 0 };
            }
        }
        out.push(flags);
        out.extend_from_slice(&f.checksum.to_be_bytes());
        if let Some(r) = f.r_octet {
            out.push(r);
        }
        let special = f.special.is_some() && !self.nodelta;
        if !special {
            if self.nodelta {
                f.urgent.inspect(|u| out.extend_from_slice(&u.to_be_bytes()));
                f.window.inspect(|w| out.extend_from_slice(&w.to_be_bytes()));
                f.ack.inspect(|a| out.extend_from_slice(&a.to_be_bytes()));
                f.seq.inspect(|s| out.extend_from_slice(&s.to_be_bytes()));
            } else {
                f.urgent.inspect(|&u| encode_delta(u, out));
                f.window.inspect(|&w| encode_delta(w, out));
                f.ack.inspect(|&a| encode_delta(a as u16, out));
                f.seq.inspect(|&s| encode_delta(s as u16, out));
            }
        }
        if let Some(i) = f.ip_id {
            if self.nodelta {
                out.extend_from_slice(&i.to_be_bytes());
            } else {
                encode_delta(i, out);
            }
        }
        if let Some(o) = &f.options {
            out.push(o.len);
            out.extend_from_slice(o.as_slice());
        }
    }

    /// Parses a compressed header after its type octet `kind`; returns it
    /// and the offset of the payload in `data` (which includes the type).
    pub fn parse(data: &[u8]) -> Result<(CompressedTcp, usize), IphcFormatError> {
        let kind = *data.first().ok_or(IphcFormatError::Empty)?;
        let nodelta = match kind {
            TYPE_COMPRESSED_TCP => false,
            TYPE_COMPRESSED_TCP_NODELTA => true,
            other => return Err(IphcFormatError::UnknownType(other)),
        };
        let mut at = 1;
        let head = take(data, &mut at, 4)?;
        let (cid, flags) = (head[0], head[1]);
        let mut f = TcpFields { checksum: u16::from_be_bytes([head[2], head[3]]), ..TcpFields::default() };
        f.push = flags & FLAG_P != 0;
        if flags & FLAG_R != 0 {
            f.r_octet = Some(take(data, &mut at, 1)?[0]);
        }
        let swau = flags & SWAU;
        if !nodelta && (swau == SPECIAL_I || swau == SPECIAL_D) {
            f.special = Some(swau);
        } else {
            let u16_field = |at: &mut usize| -> Result<u16, IphcFormatError> {
                if nodelta {
                    let b = take(data, at, 2)?;
                    Ok(u16::from_be_bytes([b[0], b[1]]))
                } else {
                    decode_delta(data, at)
                }
            };
            let u32_field = |at: &mut usize| -> Result<u32, IphcFormatError> {
                if nodelta {
                    let b = take(data, at, 4)?;
                    Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                } else {
                    decode_delta(data, at).map(u32::from)
                }
            };
            if flags & FLAG_U != 0 {
                f.urgent = Some(u16_field(&mut at)?);
            }
            if flags & FLAG_W != 0 {
                f.window = Some(u16_field(&mut at)?);
            }
            if flags & FLAG_A != 0 {
                f.ack = Some(u32_field(&mut at)?);
            }
            if flags & FLAG_S != 0 {
                f.seq = Some(u32_field(&mut at)?);
            }
        }
        if flags & FLAG_I != 0 {
            f.ip_id = Some(if nodelta {
                let b = take(data, &mut at, 2)?;
                u16::from_be_bytes([b[0], b[1]])
            } else {
                decode_delta(data, &mut at)?
            });
        }
        if flags & FLAG_O != 0 {
            let n = take(data, &mut at, 1)?[0] as usize;
            let bytes = take(data, &mut at, n)?;
            f.options =
                Some(crate::packet::RawOptions::from_slice(bytes).map_err(|_| IphcFormatError::OptionsLength(n))?);
        }
        Ok((CompressedTcp { cid, nodelta, fields: f }, at))
    }
}

/// Offset of the first length field (IPv4 total length, IPv6 payload
/// length) in an IP header whose first octet is `first`.
fn length_field(first: u8) -> usize {
    if first >> 4 == 6 {
        4
    } else {
        2
    }
}

/// Emits a FULL_HEADER: the type, then `packet` with its first length
/// field carrying the CID (`0x00`, CID), as §5.3 puts a TCP CID in the
/// length field the link layer's framing makes redundant.
pub fn emit_full_header(cid: u8, packet: &[u8], out: &mut Vec<u8>) {
    out.push(TYPE_FULL_HEADER);
    let start = out.len();
    out.extend_from_slice(packet);
    let at = start + length_field(packet.first().copied().unwrap_or(0x45));
    if out.len() >= at + 2 {
        out[at] = 0;
        out[at + 1] = cid;
    }
}

/// Parses a FULL_HEADER: returns its CID and the packet with its length
/// field restored from the frame's length (the packet is not otherwise
/// checked).
pub fn parse_full_header(data: &[u8]) -> Result<(u8, Vec<u8>), IphcFormatError> {
    match data.first() {
        None => return Err(IphcFormatError::Empty),
        Some(&TYPE_FULL_HEADER) => {}
        Some(&b) => return Err(IphcFormatError::UnknownType(b)),
    }
    let mut packet = data[1..].to_vec();
    let first = *packet.first().ok_or(IphcFormatError::Truncated)?;
    let at = length_field(first);
    let min = if first >> 4 == 6 { 40 } else { 20 };
    if packet.len() < min {
        return Err(IphcFormatError::Truncated);
    }
    if packet[at] != 0 {
        return Err(IphcFormatError::FullHeaderCid);
    }
    let cid = packet[at + 1];
    let len = if first >> 4 == 6 { packet.len() - 40 } else { packet.len() };
    let len = u16::try_from(len).map_err(|_| IphcFormatError::Truncated)?;
    packet[at..at + 2].copy_from_slice(&len.to_be_bytes());
    Ok((cid, packet))
}

/// Emits a CONTEXT_STATE asking for full headers of `cids` (at most 255).
pub fn emit_context_state(cids: &[u8], out: &mut Vec<u8>) {
    out.push(TYPE_CONTEXT_STATE);
    out.push(CONTEXT_STATE_TCP);
    let n = cids.len().min(255);
    out.push(n as u8);
    out.extend_from_slice(&cids[..n]);
}

/// Parses a CONTEXT_STATE: the CIDs it asks full headers for.
pub fn parse_context_state(data: &[u8]) -> Result<&[u8], IphcFormatError> {
    match data.first() {
        None => return Err(IphcFormatError::Empty),
        Some(&TYPE_CONTEXT_STATE) => {}
        Some(&b) => return Err(IphcFormatError::UnknownType(b)),
    }
    let head = data.get(1..3).ok_or(IphcFormatError::Truncated)?;
    if head[0] != CONTEXT_STATE_TCP {
        return Err(IphcFormatError::ContextStateType(head[0]));
    }
    data.get(3..3 + head[1] as usize).ok_or(IphcFormatError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_round_trip_in_one_or_three_octets() {
        for (n, len) in [(1u16, 1), (255, 1), (0, 3), (256, 3), (65535, 3)] {
            let mut out = Vec::new();
            encode_delta(n, &mut out);
            assert_eq!(out.len(), len);
            let mut at = 0;
            assert_eq!(decode_delta(&out, &mut at), Ok(n));
            assert_eq!(at, len);
        }
        assert_eq!(decode_delta(&[0, 1], &mut 0), Err(IphcFormatError::Truncated));
    }

    #[test]
    fn compressed_headers_round_trip() {
        let fields = [
            TcpFields { checksum: 0xbeef, special: Some(SPECIAL_D), ..TcpFields::default() },
            TcpFields { checksum: 2, urgent: Some(7), seq: Some(3), ..TcpFields::default() },
            TcpFields {
                checksum: 1,
                push: true,
                r_octet: Some(0x41),
                // S A W U all present would read as SPECIAL_D: the
                // compressor sends such a header as NODELTA.
                urgent: None,
                window: Some(300),
                ack: Some(56),
                seq: Some(1000),
                ip_id: Some(2),
                options: Some(crate::packet::RawOptions::from_slice(&[1, 1, 1, 0]).unwrap()),
                special: None,
            },
        ];
        for nodelta in [false, true] {
            for f in fields {
                if nodelta && f.special.is_some() {
                    continue;
                }
                let c = CompressedTcp { cid: 9, nodelta, fields: f };
                let mut out = Vec::new();
                c.emit(&mut out);
                out.extend_from_slice(b"payload");
                let (back, at) = CompressedTcp::parse(&out).unwrap();
                assert_eq!(back, c);
                assert_eq!(&out[at..], b"payload");
                for cut in 0..at {
                    assert!(CompressedTcp::parse(&out[..cut]).is_err(), "cut at {cut}");
                }
            }
        }
    }

    #[test]
    fn full_headers_carry_the_cid_in_the_length_field() {
        let mut h = crate::packet::TcpIpHeader::new([10, 0, 0, 1], 1, [10, 0, 0, 2], 2);
        let mut p = Vec::new();
        h.emit_with_checksum(b"abc", &mut p).unwrap();
        let mut out = Vec::new();
        emit_full_header(77, &p, &mut out);
        assert_eq!(out.len(), p.len() + 1);
        assert_eq!(parse_full_header(&out), Ok((77, p)));
        assert_eq!(parse_full_header(&out[..10]), Err(IphcFormatError::Truncated));
    }

    #[test]
    fn context_states_list_cids() {
        let mut out = Vec::new();
        emit_context_state(&[3, 4], &mut out);
        assert_eq!(parse_context_state(&out), Ok(&[3u8, 4][..]));
        assert!(parse_context_state(&out[..4]).is_err());
        assert_eq!(parse_context_state(&[TYPE_CONTEXT_STATE, 2, 0]), Err(IphcFormatError::ContextStateType(2)));
    }
}
