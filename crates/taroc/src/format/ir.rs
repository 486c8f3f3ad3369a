//! IR and IR-DYN packets: a context's static and dynamic chains in full;
//! and IR-CR, an IR that takes the addresses (and the SYN's options,
//! window, TOS and TTL) from another context of the link.

use super::common::*;
use super::fields::*;
use crate::crc::*;
use crate::packet::{Ipv6Part, RawOptions, TcpIpHeader};

/// The static chain: addresses and ports; for IPv6 also the flow label
/// (RFC 3095 §5.7.7.3's IPv6 static chain: version, flow label, next
/// header, addresses; the next header is always TCP here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StaticPart {
    /// IPv4 source address (zero for IPv6).
    pub src: [u8; 4],
    /// IPv4 destination address (zero for IPv6).
    pub dst: [u8; 4],
    /// TCP source port.
    pub src_port: u16,
    /// TCP destination port.
    pub dst_port: u16,
    /// For IPv6: the addresses and flow label.
    pub ipv6: Option<Ipv6Part>,
}

impl StaticPart {
    /// The static fields of `h`.
    pub fn of(h: &TcpIpHeader) -> StaticPart {
        StaticPart { src: h.src, dst: h.dst, src_port: h.src_port, dst_port: h.dst_port, ipv6: h.ipv6 }
    }

    /// Sets the static fields of `h` to these.
    pub fn apply(&self, h: &mut TcpIpHeader) {
        h.src = self.src;
        h.dst = self.dst;
        h.src_port = self.src_port;
        h.dst_port = self.dst_port;
        h.ipv6 = self.ipv6;
    }

    /// Whether `other` has these source and destination addresses (and IP
    /// version), whatever its ports and flow label.
    pub fn same_addresses(&self, other: &StaticPart) -> bool {
        match (&self.ipv6, &other.ipv6) {
            (Some(a), Some(b)) => a.src == b.src && a.dst == b.dst,
            (None, None) => (self.src, self.dst) == (other.src, other.dst),
            _ => false,
        }
    }

    /// Whether `other` is the opposite direction of these endpoints
    /// (addresses and ports swapped), whatever its flow label.
    pub fn is_reverse_of(&self, other: &StaticPart) -> bool {
        (self.src_port, self.dst_port) == (other.dst_port, other.src_port)
            && match (&self.ipv6, &other.ipv6) {
                (Some(a), Some(b)) => a.src == b.dst && a.dst == b.src,
                (None, None) => (self.src, self.dst) == (other.dst, other.src),
                _ => false,
            }
    }

    /// The opposite direction's static part: addresses and ports swapped,
    /// the flow label 0 (each direction picks its own).
    pub fn reversed(&self) -> StaticPart {
        StaticPart {
            src: self.dst,
            dst: self.src,
            src_port: self.dst_port,
            dst_port: self.src_port,
            ipv6: self.ipv6.map(|v6| Ipv6Part { src: v6.dst, dst: v6.src, flow_label: 0 }),
        }
    }
}

/// What an IR-CR can take from its base context's last SYN or SYN-ACK:
/// a host opens its connections with the same options, window, TOS and
/// TTL, so the next connection's SYN repeats them (its timestamps aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Template {
    /// IPv4 TOS or IPv6 traffic class.
    pub tos: u8,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// The TCP window.
    pub window: u16,
    /// The TCP options, timestamps aside.
    pub opt: OptInfo,
}

impl Template {
    /// The template of a SYN or SYN-ACK's header.
    pub fn of(h: &TcpIpHeader) -> Template {
        Template { tos: h.tos, ttl: h.ttl, window: h.window, opt: OptInfo::of(&h.options) }
    }

    /// The options of `h` if this template's, timestamps filled in, make
    /// them: sent as the timestamps alone.
    fn options_of(&self, h: &TcpIpHeader) -> Option<(u32, u32)> {
        let ts = self.opt.ts(&h.options);
        (self.opt.sack_n == 0 && self.opt.fill(ts, &[]) == Some(h.options)).then_some(ts)
    }
}

/// The context an IR-CR replicates (RFC 6846 §6.3's context replication,
/// after RFC 4164): its CID, its static part and, if the decompressor
/// holds it, the template of its last SYN or SYN-ACK. Or, for an IR-REV,
/// the other direction's flow, reversed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Base {
    /// The base context's CID (none for an IR-REV).
    pub cid: u8,
    /// IR-REV (with cross-direction inference): not a context of this
    /// direction but the other direction's flow with the reversed ports,
    /// whose addresses, swapped, are this flow's.
    pub reverse: bool,
    /// Its static part.
    pub static_part: StaticPart,
    /// Its last SYN's or SYN-ACK's template, if both ends hold it.
    pub template: Option<Template>,
}

/// An IR, IR-DYN or IR-CR packet.
#[derive(Debug, Clone, Copy)]
pub struct IrPacket<'a> {
    /// The context's CID, 0..=15.
    pub cid: u8,
    /// Present in IR and IR-CR, absent in IR-DYN.
    pub static_part: Option<StaticPart>,
    /// IR-CR: the context whose addresses (and template) it takes.
    pub base: Option<Base>,
    /// The packet's master sequence number in its context.
    pub msn: u16,
    /// The header with its true TCP checksum (unfolded); the static fields
    /// are zero in an IR-DYN.
    pub header: TcpIpHeader,
    /// Fixed-payload strides of SEQ and ACK (§6.1; 0: none).
    pub strides: (u16, u16),
    /// CRC-8 of the original IP and TCP headers as they are on the wire.
    pub crc: u8,
    /// The TCP payload, after the header.
    pub payload: &'a [u8],
}

impl<'a> IrPacket<'a> {
    /// Emits the packet. An IPv6 header's static chain (type
    /// [`TYPE_IR_V6`]) is `0110` · flow label 20 bits · next header 1 ·
    /// source address 16 · destination address 16 · ports 4 (RFC 3095
    /// §5.7.7.3); its dynamic chain has traffic class 1 and hop limit 1
    /// where IPv4's has TOS, IP-ID, flags+fragment offset and TTL (6).
    ///
    /// With a [`Base`] of the same addresses (and IP version) it is an
    /// IR-CR ([`TYPE_IR_CR`]): its first octet after the type is the base
    /// CID (4 bits) and the flags S, D (the source, the destination port
    /// follows; else it is the base's), W (TOS, TTL and window are the
    /// template's) and O (the options are the template's: only TSval, and
    /// TSecr unless presence bit E says it is 0, are sent); then the ports
    /// sent, an IPv6 flow label in 3 octets, and the dynamic chain.
    ///
    /// With a reverse base it is an IR-REV ([`TYPE_IR_REV`]): both ports,
    /// an IPv6 flow label in 3 octets, and the dynamic chain; the
    /// addresses are the other direction's flow's with those ports
    /// reversed.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let h = &self.header;
        emit_cid(self.cid, out);
        let replica = self.replica();
        match (self.static_part, replica) {
            (Some(s), Some((base, _))) if base.reverse => {
                out.push(TYPE_IR_REV);
                out.extend_from_slice(&s.src_port.to_be_bytes());
                out.extend_from_slice(&s.dst_port.to_be_bytes());
                emit_flow_label(&s, out);
            }
            (Some(s), Some((base, flags))) => {
                out.push(TYPE_IR_CR);
                out.push(base.cid << 4 | flags);
                if flags & CR_S != 0 {
                    out.extend_from_slice(&s.src_port.to_be_bytes());
                }
                if flags & CR_D != 0 {
                    out.extend_from_slice(&s.dst_port.to_be_bytes());
                }
                emit_flow_label(&s, out);
            }
            (Some(StaticPart { ipv6: Some(v6), src_port, dst_port, .. }), None) => {
                out.push(TYPE_IR_V6);
                out.extend_from_slice(&(6 << 28 | (v6.flow_label & 0xf_ffff) << 8 | 6).to_be_bytes());
                out.extend_from_slice(&v6.src);
                out.extend_from_slice(&v6.dst);
                out.extend_from_slice(&src_port.to_be_bytes());
                out.extend_from_slice(&dst_port.to_be_bytes());
            }
            (Some(s), None) => {
                out.push(TYPE_IR);
                out.extend_from_slice(&s.src);
                out.extend_from_slice(&s.dst);
                out.extend_from_slice(&s.src_port.to_be_bytes());
                out.extend_from_slice(&s.dst_port.to_be_bytes());
            }
            (None, _) => out.push(TYPE_IR_DYN),
        }
        let flags = replica.map_or(0, |(_, f)| f);
        let template = replica.and_then(|(b, _)| b.template);
        out.extend_from_slice(&self.msn.to_be_bytes());
        // Which of the fields most packets have at a default follow
        // (RFC 6846 §6.3.1 sends such fields by presence bits too): the
        // IPv4 flags and fragment offset other than DF alone or nothing,
        // a non-zero urgent pointer, strides.
        let ff = match h.flags_frag {
            _ if h.ipv6.is_some() => 0,
            IR_DF => IR_D,
            0 => 0,
            _ => IR_F,
        };
        let urgent = if h.urgent != 0 { IR_U } else { 0 };
        let strides = if self.strides != (0, 0) { IR_S } else { 0 };
        // A SYN's ACK number is 0 (RFC 9293 §3.10.7.2 sends none).
        let ack_zero = if h.ack == 0 { IR_Z } else { 0 };
        // The options as the template's: its timestamps, if it has them.
        let ts = template.filter(|_| flags & CR_O != 0).and_then(|t| Some((t.options_of(h)?, t.opt.ts_at.is_some())));
        let tsecr_zero = if ts.is_some_and(|((_, ecr), has_ts)| has_ts && ecr == 0) { IR_E } else { 0 };
        out.push(ff | urgent | strides | ack_zero | tsecr_zero);
        if flags & CR_W == 0 {
            out.push(h.tos);
        }
        if h.ipv6.is_none() {
            out.extend_from_slice(&h.ip_id.to_be_bytes());
            if ff == IR_F {
                out.extend_from_slice(&h.flags_frag.to_be_bytes());
            }
        }
        if flags & CR_W == 0 {
            out.push(h.ttl);
        }
        out.extend_from_slice(&h.seq.to_be_bytes());
        if ack_zero == 0 {
            out.extend_from_slice(&h.ack.to_be_bytes());
        }
        out.push(((h.tcp_len() / 4) as u8) << 4 | (h.tcp_res & 0x0f));
        out.push(h.tcp_flags);
        if flags & CR_W == 0 {
            out.extend_from_slice(&h.window.to_be_bytes());
        }
        out.extend_from_slice(&fold_checksum(h.checksum, h, self.msn, self.strides).to_be_bytes());
        if urgent != 0 {
            out.extend_from_slice(&h.urgent.to_be_bytes());
        }
        if strides != 0 {
            out.extend_from_slice(&self.strides.0.to_be_bytes());
            out.extend_from_slice(&self.strides.1.to_be_bytes());
        }
        match ts {
            Some(((tsval, tsecr), true)) => {
                out.extend_from_slice(&tsval.to_be_bytes());
                if tsecr_zero == 0 {
                    out.extend_from_slice(&tsecr.to_be_bytes());
                }
            }
            Some((_, false)) => {}
            None => out.extend_from_slice(h.options.as_slice()),
        }
        out.push(self.crc);
        out.extend_from_slice(self.payload);
    }

    /// IR-CR: the base and the flags, if the base can serve (its addresses
    /// are the packet's).
    fn replica(&self) -> Option<(Base, u8)> {
        let (s, base) = (self.static_part?, self.base?);
        let b = base.static_part;
        if !s.same_addresses(&b) || base.cid as usize >= MAX_CONTEXTS {
            return None;
        }
        if base.reverse {
            let ports_match = (s.src_port, s.dst_port) == (b.src_port, b.dst_port);
            return ports_match.then_some((Base { template: None, ..base }, 0));
        }
        let h = &self.header;
        let mut flags = 0;
        if s.src_port != b.src_port {
            flags |= CR_S;
        }
        if s.dst_port != b.dst_port {
            flags |= CR_D;
        }
        if let Some(t) = base.template {
            if (t.tos, t.ttl, t.window) == (h.tos, h.ttl, h.window) {
                flags |= CR_W;
            }
            if t.options_of(h).is_some() {
                flags |= CR_O;
            }
        }
        Some((base, flags))
    }

    /// The base CID an IR-CR names (after the Add-CID octet), for the
    /// decompressor to look up before [`IrPacket::parse`].
    pub fn base_cid(data: &[u8]) -> Option<u8> {
        match data {
            [TYPE_IR_CR, b, ..] => Some(b >> 4),
            _ => None,
        }
    }

    /// The source and destination ports an IR-REV carries (after the
    /// Add-CID octet), for the decompressor to find the other direction's
    /// flow before [`IrPacket::parse`].
    pub fn reverse_ports(data: &[u8]) -> Option<(u16, u16)> {
        match data {
            [TYPE_IR_REV, a, b, c, d, ..] => Some((u16::from_be_bytes([*a, *b]), u16::from_be_bytes([*c, *d]))),
            _ => None,
        }
    }

    /// Parses an IR, IR-DYN or IR-CR (after the Add-CID octet); an
    /// IR-DYN's dynamic chain is IPv6's if `ipv6_context` (the context's
    /// static part, which the decompressor holds, is IPv6); an IR-CR needs
    /// `base`, the context its [`IrPacket::base_cid`] names, and its
    /// template if its flags W or O take from it.
    pub fn parse(cid: u8, data: &'a [u8], ipv6_context: bool, base: Option<Base>) -> Result<IrPacket<'a>, FormatError> {
        let ty = *data.first().ok_or(FormatError::Empty)?;
        let mut at = 1;
        let mut flags = 0;
        let mut template = None;
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
            TYPE_IR_REV => {
                let mut r = Cursor { data, at };
                let ports = (r.u16()?, r.u16()?);
                let b = base.filter(|b| b.reverse).ok_or(FormatError::Reserved("IR-REV flow"))?;
                let mut s = b.static_part;
                if (s.src_port, s.dst_port) != ports {
                    return Err(FormatError::Reserved("IR-REV flow"));
                }
                if let Some(v6) = s.ipv6.as_mut() {
                    v6.flow_label = r.flow_label()?;
                }
                at = r.at;
                Some(s)
            }
            TYPE_IR_CR => {
                let mut r = Cursor { data, at };
                let octet = r.u8()?;
                flags = octet & 0x0f;
                let b = base
                    .filter(|b| !b.reverse && b.cid == octet >> 4)
                    .ok_or(FormatError::Reserved("IR-CR base context"))?;
                if flags & (CR_W | CR_O) != 0 {
                    template = Some(b.template.ok_or(FormatError::Reserved("IR-CR template"))?);
                }
                let mut s = b.static_part;
                if flags & CR_S != 0 {
                    s.src_port = r.u16()?;
                }
                if flags & CR_D != 0 {
                    s.dst_port = r.u16()?;
                }
                if let Some(v6) = s.ipv6.as_mut() {
                    v6.flow_label = r.flow_label()?;
                }
                at = r.at;
                Some(s)
            }
            t => return Err(FormatError::UnknownType(t)),
        };
        let v6 = static_part.map_or(ipv6_context, |s| s.ipv6.is_some());
        let mut r = Cursor { data, at };
        let msn = r.u16()?;
        let present = r.u8()?;
        if present & !(IR_F | IR_D | IR_U | IR_S | IR_Z | IR_E) != 0 || present & IR_F != 0 && present & IR_D != 0 {
            return Err(FormatError::Reserved("IR presence bits"));
        }
        let ts_template = template.filter(|t| flags & CR_O != 0 && t.opt.ts_at.is_some());
        if present & IR_E != 0 && ts_template.is_none() {
            return Err(FormatError::Reserved("IR presence bit E without the template's timestamps"));
        }
        let from_template = template.filter(|_| flags & CR_W != 0);
        let tos = match from_template {
            Some(t) => t.tos,
            None => r.u8()?,
        };
        if v6 && present & (IR_F | IR_D) != 0 {
            return Err(FormatError::Reserved("IPv4 flags in an IPv6 context"));
        }
        let (ip_id, flags_frag) = match (v6, present & (IR_F | IR_D)) {
            (true, _) => (0, 0),
            (false, IR_F) => (r.u16()?, r.u16()?),
            (false, IR_D) => (r.u16()?, IR_DF),
            (false, _) => (r.u16()?, 0),
        };
        let ttl = match from_template {
            Some(t) => t.ttl,
            None => r.u8()?,
        };
        let seq = r.u32()?;
        let ack = if present & IR_Z != 0 { 0 } else { r.u32()? };
        let (off_res, tcp_flags) = (r.u8()?, r.u8()?);
        let window = match from_template {
            Some(t) => t.window,
            None => r.u16()?,
        };
        let checksum = r.u16()?;
        let urgent = if present & IR_U != 0 { r.u16()? } else { 0 };
        let strides = if present & IR_S != 0 { (r.u16()?, r.u16()?) } else { (0, 0) };
        let doff = (off_res >> 4) as usize;
        if doff < 5 {
            return Err(FormatError::Reserved("data offset"));
        }
        let opt_len = doff * 4 - 20;
        let options = match template.filter(|_| flags & CR_O != 0) {
            Some(t) => {
                let ts = match ts_template {
                    Some(_) => (r.u32()?, if present & IR_E != 0 { 0 } else { r.u32()? }),
                    None => (0, 0),
                };
                let o = t.opt.fill(ts, &[]).ok_or(FormatError::Reserved("IR-CR template options"))?;
                if o.len as usize != opt_len {
                    return Err(FormatError::Reserved("data offset"));
                }
                o
            }
            None => RawOptions::from_slice(r.take(opt_len)?).map_err(|_| FormatError::OptionsLength(opt_len))?,
        };
        let crc = r.u8()?;
        let mut h = TcpIpHeader {
            tos,
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
            seq,
            ack,
            tcp_res: off_res & 0x0f,
            tcp_flags,
            window,
            checksum,
            urgent,
            options,
        };
        if let Some(s) = static_part {
            s.apply(&mut h);
        }
        h.checksum = fold_checksum(h.checksum, &h, msn, strides);
        let base = base.filter(|_| matches!(ty, TYPE_IR_CR | TYPE_IR_REV));
        Ok(IrPacket { cid, static_part, base, msn, header: h, strides, crc, payload: &data[r.at..] })
    }
}

/// The IR's presence bits: flags and fragment offset sent (F), or DF
/// alone (D), else both zero; urgent pointer sent (U); strides sent (S);
/// ACK number 0, not sent (Z); in an IR-CR whose options are the
/// template's, TSecr 0, not sent (E).
const IR_F: u8 = 0x80;
const IR_D: u8 = 0x40;
const IR_U: u8 = 0x20;
const IR_S: u8 = 0x10;
const IR_Z: u8 = 0x08;
const IR_E: u8 = 0x04;
/// The IR-CR's flags: source port sent (S), destination port sent (D),
/// TOS, TTL and window the template's (W), options the template's (O).
const CR_S: u8 = 0x08;
const CR_D: u8 = 0x04;
const CR_W: u8 = 0x02;
const CR_O: u8 = 0x01;
/// IPv4 flags and fragment offset with DF alone (RFC 791).
const IR_DF: u16 = 0x4000;

/// Writes an IPv6 flow label in 3 octets (as [`Cursor::flow_label`] reads
/// it); nothing for IPv4.
fn emit_flow_label(s: &StaticPart, out: &mut Vec<u8>) {
    if let Some(v6) = s.ipv6 {
        out.extend_from_slice(&(v6.flow_label & 0xf_ffff).to_be_bytes()[1..]);
    }
}

/// Reads an IR's fields in order; running out is [`FormatError::Truncated`].
struct Cursor<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let b = self.data.get(self.at..self.at + n).ok_or(FormatError::Truncated)?;
        self.at += n;
        Ok(b)
    }

    fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, FormatError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(be32(self.take(4)?))
    }

    /// An IPv6 flow label in 3 octets, its first 4 bits zero.
    fn flow_label(&mut self) -> Result<u32, FormatError> {
        let l = self.take(3)?;
        if l[0] & 0xf0 != 0 {
            return Err(FormatError::Reserved("flow label"));
        }
        Ok(u32::from_be_bytes([0, l[0], l[1], l[2]]))
    }
}
