//! Van Jacobson TCP/IP header compression (RFC 1144), the draft's VJHC
//! baseline (Appendix A.2), with RFC 1144's SLIP framing of the packet
//! type in the first octet: `0x80 | changes` for COMPRESSED_TCP, `0x7X`
//! for UNCOMPRESSED_TCP (the IP protocol field carries the connection
//! number), `0x4X` for TYPE_IP.
//!
//! RFC 1144 is defined for IPv4 only: an IPv6 packet is sent as it is, as
//! TYPE_IP (its first octet `0x6X` is below `0x70`, which RFC 1144's
//! receiver reads as TYPE_IP), its whole header counted.
//!
//! As in RFC 1144 the decompressor applies deltas to its saved header
//! without any check of its own, so a lost packet corrupts the packets
//! after it until the next UNCOMPRESSED_TCP; the receiving TCP drops those
//! for their checksum. Here that drop happens in the decompressor (it never
//! emits a packet failing its checksum), and the context stays damaged, as
//! in RFC 1144.

use std::collections::HashMap;

use crate::compressor::CompressError;
use crate::decompressor::DecompressError;
use crate::format::{FormatError, StaticPart};
use crate::packet::{checksums_ok, Packet, TcpIpHeader, FLAG_ACK, FLAG_FIN, FLAG_PSH, FLAG_RST, FLAG_SYN, FLAG_URG};

const TYPE_UNCOMPRESSED_TCP: u8 = 0x70;
const TYPE_COMPRESSED_TCP: u8 = 0x80;
const NEW_C: u8 = 0x40;
const NEW_I: u8 = 0x20;
const TCP_PUSH_BIT: u8 = 0x10;
const NEW_S: u8 = 0x08;
const NEW_A: u8 = 0x04;
const NEW_W: u8 = 0x02;
const NEW_U: u8 = 0x01;
const SPECIAL_I: u8 = NEW_S | NEW_W | NEW_U;
const SPECIAL_D: u8 = NEW_S | NEW_A | NEW_W | NEW_U;
const SPECIALS_MASK: u8 = NEW_S | NEW_A | NEW_W | NEW_U;
/// RFC 1144 §3.2: 16 connection slots (MAX_STATES).
pub const VJ_SLOTS: usize = 16;

fn encode(n: u16, out: &mut Vec<u8>) {
    if n == 0 || n >= 256 {
        out.push(0);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(n as u8);
    }
}

fn decode(data: &[u8], at: &mut usize) -> Result<u16, FormatError> {
    let b = *data.get(*at).ok_or(FormatError::Truncated)?;
    if b != 0 {
        *at += 1;
        return Ok(b as u16);
    }
    let v = data.get(*at + 1..*at + 3).ok_or(FormatError::Truncated)?;
    *at += 3;
    Ok(u16::from_be_bytes([v[0], v[1]]))
}

#[derive(Clone, Copy)]
struct Slot {
    key: StaticPart,
    h: TcpIpHeader,
    payload_len: usize,
    last_used: u64,
}

/// RFC 1144 compressor (`sl_compress_tcp`).
#[derive(Default)]
pub struct VjCompressor {
    slots: Vec<Slot>,
    by_flow: HashMap<StaticPart, u8>,
    last_conn: Option<u8>,
    clock: u64,
}

impl VjCompressor {
    /// A compressor with no connection slots in use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Compresses one packet; returns the header bytes written.
    pub fn compress(&mut self, frame: &[u8], out: &mut Vec<u8>) -> Result<usize, CompressError> {
        let p = Packet::parse(frame)?;
        let h = p.header;
        // Connection set-up and tear-down go as TYPE_IP and leave the
        // connection state alone (RFC 1144 sl_compress_tcp); so does IPv6,
        // which RFC 1144 does not compress.
        if h.ipv6.is_some() || h.tcp_flags & (FLAG_SYN | FLAG_FIN | FLAG_RST | FLAG_ACK) != FLAG_ACK {
            out.extend_from_slice(frame);
            return Ok(h.len());
        }
        let key = StaticPart::of(&h);
        self.clock += 1;
        let hlen = h.len();
        let conn = match self.by_flow.get(&key) {
            Some(&c) => c,
            None => {
                let c = if self.slots.len() < VJ_SLOTS {
                    self.slots.push(Slot { key, h, payload_len: p.payload.len(), last_used: 0 });
                    self.slots.len() - 1
                } else {
                    let lru = (0..self.slots.len()).min_by_key(|&i| self.slots[i].last_used).unwrap_or(0);
                    self.by_flow.remove(&self.slots[lru].key);
                    lru
                } as u8;
                self.by_flow.insert(key, c);
                return Ok(self.uncompressed(c, &h, frame, out));
            }
        };
        let slot = self.slots[conn as usize];
        let o = slot.h;
        let flags = h.tcp_flags;
        // Everything but IP-ID, length, checksum and the TCP fields below
        // must be unchanged (RFC 1144 §3.2.3).
        if o.tos != h.tos
            || o.flags_frag != h.flags_frag
            || o.ttl != h.ttl
            || o.options != h.options
            || o.tcp_res != h.tcp_res
        {
            return Ok(self.uncompressed(conn, &h, frame, out));
        }
        let mut deltas = Vec::with_capacity(16);
        let mut changes = 0u8;
        if flags & FLAG_URG != 0 {
            encode(h.urgent, &mut deltas);
            changes |= NEW_U;
        } else if h.urgent != o.urgent {
            return Ok(self.uncompressed(conn, &h, frame, out));
        }
        let dw = h.window.wrapping_sub(o.window);
        if dw != 0 {
            encode(dw, &mut deltas);
            changes |= NEW_W;
        }
        let da = h.ack.wrapping_sub(o.ack);
        if da != 0 {
            if da > 0xffff {
                return Ok(self.uncompressed(conn, &h, frame, out));
            }
            encode(da as u16, &mut deltas);
            changes |= NEW_A;
        }
        let ds = h.seq.wrapping_sub(o.seq);
        if ds != 0 {
            if ds > 0xffff {
                return Ok(self.uncompressed(conn, &h, frame, out));
            }
            encode(ds as u16, &mut deltas);
            changes |= NEW_S;
        }
        match changes {
            // Nothing changed: only the first data segment after a pure ACK
            // is compressed; a duplicate ACK or retransmission is not.
            0 if !(p.payload.len() != slot.payload_len && slot.payload_len == 0) => {
                return Ok(self.uncompressed(conn, &h, frame, out));
            }
            SPECIAL_I | SPECIAL_D => return Ok(self.uncompressed(conn, &h, frame, out)),
            // Echoed interactive traffic.
            c if c == NEW_S | NEW_A && ds == da && ds as usize == slot.payload_len => {
                changes = SPECIAL_I;
                deltas.clear();
            }
            // Unidirectional data.
            NEW_S if ds as usize == slot.payload_len => {
                changes = SPECIAL_D;
                deltas.clear();
            }
            _ => {}
        }
        let di = h.ip_id.wrapping_sub(o.ip_id);
        if di != 1 {
            encode(di, &mut deltas);
            changes |= NEW_I;
        }
        if flags & FLAG_PSH != 0 {
            changes |= TCP_PUSH_BIT;
        }
        let start = out.len();
        if self.last_conn != Some(conn) {
            self.last_conn = Some(conn);
            out.push(TYPE_COMPRESSED_TCP | changes | NEW_C);
            out.push(conn);
        } else {
            out.push(TYPE_COMPRESSED_TCP | changes);
        }
        out.extend_from_slice(&h.checksum.to_be_bytes());
        out.extend_from_slice(&deltas);
        let header_len = out.len() - start;
        out.extend_from_slice(p.payload);
        self.slots[conn as usize] = Slot { key, h, payload_len: p.payload.len(), last_used: self.clock };
        debug_assert!(hlen >= 40);
        Ok(header_len)
    }

    fn uncompressed(&mut self, conn: u8, h: &TcpIpHeader, frame: &[u8], out: &mut Vec<u8>) -> usize {
        let payload_len = frame.len() - h.len();
        self.slots[conn as usize] = Slot { key: StaticPart::of(h), h: *h, payload_len, last_used: self.clock };
        self.last_conn = Some(conn);
        let start = out.len();
        out.extend_from_slice(frame);
        out[start] = TYPE_UNCOMPRESSED_TCP | (frame[0] & 0x0f);
        out[start + 9] = conn;
        h.len()
    }
}

/// RFC 1144 decompressor (`sl_uncompress_tcp`).
#[derive(Default)]
pub struct VjDecompressor {
    slots: Vec<Option<(TcpIpHeader, usize)>>,
    last_conn: Option<u8>,
    toss: bool,
}

impl VjDecompressor {
    /// A decompressor with every connection slot empty, not tossing.
    pub fn new() -> Self {
        VjDecompressor { slots: vec![None; VJ_SLOTS], last_conn: None, toss: false }
    }

    /// The link layer saw a damaged or lost frame: toss compressed packets
    /// until one names its connection (RFC 1144 §4.3, SLF_TOSS).
    pub fn link_error(&mut self) {
        self.toss = true;
    }

    /// Decompresses one packet, appending it to `out` if its checksums hold;
    /// returns the compressed header's length.
    pub fn decompress(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, DecompressError> {
        let first = *data.first().ok_or(FormatError::Empty)?;
        let start = out.len();
        if first & 0x80 != 0 {
            return self.compressed(data, out).inspect_err(|_| out.truncate(start));
        }
        match first & 0xf0 {
            0x40 | 0x60 => {
                out.extend_from_slice(data);
                if !checksums_ok(&out[start..]) {
                    out.truncate(start);
                    // A `0x6X` octet that is not an IPv6 packet is a damaged
                    // one, as an unknown type is: toss (RFC 1144 §4.3).
                    self.toss |= first & 0xf0 == 0x60;
                    return Err(DecompressError::Verification);
                }
                Ok(if first & 0xf0 == 0x60 { 40 } else { 20 })
            }
            TYPE_UNCOMPRESSED_TCP => {
                let conn = *data.get(9).ok_or(FormatError::Truncated)?;
                if conn as usize >= VJ_SLOTS {
                    self.toss = true;
                    return Err(FormatError::Reserved("VJ connection number").into());
                }
                let mut frame = data.to_vec();
                frame[0] = 0x40 | (first & 0x0f);
                frame[9] = 6;
                let p = Packet::parse(&frame).map_err(|_| {
                    self.toss = true;
                    DecompressError::Format(FormatError::Reserved("VJ uncompressed packet"))
                })?;
                if !checksums_ok(&frame) {
                    self.toss = true;
                    return Err(DecompressError::Verification);
                }
                self.slots[conn as usize] = Some((p.header, p.payload.len()));
                self.last_conn = Some(conn);
                self.toss = false;
                out.extend_from_slice(&frame);
                Ok(p.header.len())
            }
            _ => {
                self.toss = true;
                Err(FormatError::UnknownType(first).into())
            }
        }
    }

    fn compressed(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, DecompressError> {
        let changes = data[0] & 0x7f;
        let mut at = 1;
        if changes & NEW_C != 0 {
            let c = *data.get(1).ok_or(FormatError::Truncated)?;
            if c as usize >= VJ_SLOTS {
                self.toss = true;
                return Err(FormatError::Reserved("VJ connection number").into());
            }
            self.last_conn = Some(c);
            self.toss = false;
            at = 2;
        } else if self.toss {
            return Err(DecompressError::NoContext(self.last_conn.unwrap_or(0)));
        }
        let Some(conn) = self.last_conn else {
            return Err(DecompressError::NoContext(0));
        };
        let Some((mut h, last_payload)) = self.slots[conn as usize] else {
            self.toss = true;
            return Err(DecompressError::NoContext(conn));
        };
        let ck = data.get(at..at + 2).ok_or(FormatError::Truncated)?;
        h.checksum = u16::from_be_bytes([ck[0], ck[1]]);
        at += 2;
        h.tcp_flags = if changes & TCP_PUSH_BIT != 0 { h.tcp_flags | FLAG_PSH } else { h.tcp_flags & !FLAG_PSH };
        let parse = (|| -> Result<(), FormatError> {
            match changes & SPECIALS_MASK {
                SPECIAL_I => {
                    let i = last_payload as u32;
                    h.ack = h.ack.wrapping_add(i);
                    h.seq = h.seq.wrapping_add(i);
                }
                SPECIAL_D => h.seq = h.seq.wrapping_add(last_payload as u32),
                _ => {
                    if changes & NEW_U != 0 {
                        h.tcp_flags |= FLAG_URG;
                        h.urgent = decode(data, &mut at)?;
                    } else {
                        h.tcp_flags &= !FLAG_URG;
                    }
                    if changes & NEW_W != 0 {
                        h.window = h.window.wrapping_add(decode(data, &mut at)?);
                    }
                    if changes & NEW_A != 0 {
                        h.ack = h.ack.wrapping_add(decode(data, &mut at)? as u32);
                    }
                    if changes & NEW_S != 0 {
                        h.seq = h.seq.wrapping_add(decode(data, &mut at)? as u32);
                    }
                }
            }
            h.ip_id = h.ip_id.wrapping_add(if changes & NEW_I != 0 { decode(data, &mut at)? } else { 1 });
            Ok(())
        })();
        if let Err(e) = parse {
            self.toss = true;
            return Err(e.into());
        }
        let payload = &data[at..];
        // RFC 1144 updates the saved header whatever becomes of the packet.
        self.slots[conn as usize] = Some((h, payload.len()));
        let start = out.len();
        h.emit(payload.len(), out)?;
        out.extend_from_slice(payload);
        if !checksums_ok(&out[start..]) {
            return Err(DecompressError::Verification);
        }
        Ok(at)
    }
}
