//! Compressed (CO) packets: the fields that changed, against the context.

use super::common::*;
use super::fields::*;
use crate::bits::{BitCount, BitReader, BitWriter, PutBits, Wide, WordReader, SCRATCH};
use crate::crc::*;
use crate::packet::{RawOptions, FLAG_PSH};

/// The window field of a compressed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowField {
    /// Not sent: the reference's.
    Static,
    /// The general format's [`WINDOW_LSB`] bits.
    Lsb(u32),
    /// All 16 bits (the general format with V set).
    Irregular(u16),
    /// The short format's [`WINDOW_SHORT`] bits.
    Short(u32),
}

/// The options of a compressed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoOptions {
    /// The reference's skeleton, with these timestamps (selector, bits)
    /// and `sack_n` tail SACK blocks (left edge − ACK, right − left).
    Compact {
        /// TSval and TSecr, each as its 2-bit selector and bits.
        ts: [(u8, u32); 2],
        /// Tail SACK blocks sent, 0..=4.
        sack_n: u8,
        /// The first `sack_n` hold each block's left edge − ACK and
        /// right − left edge.
        sack: [(u32, u32); 4],
    },
    /// The whole list, verbatim.
    Raw(RawOptions),
}

/// A compressed (CO) packet's fields as sent, before decoding.
#[derive(Debug, Clone, Copy)]
pub struct CoPacket<'a> {
    /// The context's CID, 0..=15.
    pub cid: u8,
    /// MSN bits and their width (4, 7 or 16).
    pub msn: (u32, u32),
    /// The IP-ID's selector ([`IPID_TABLE`]) and bits.
    pub ip_id: (u8, u32),
    /// SEQ's selector ([`SEQ_TABLE`]) and bits.
    pub seq: (u8, u32),
    /// ACK's selector ([`SEQ_TABLE`]) and bits.
    pub ack: (u8, u32),
    /// The window, if sent.
    pub window: WindowField,
    /// The TCP PSH flag.
    pub psh: bool,
    /// Reserved nibble and flags octet, when they differ from the references'.
    pub flags: Option<(u8, u8)>,
    /// TOS, TTL, IP flags and fragment offset.
    pub ip: Option<(u8, u8, u16)>,
    /// The urgent pointer, when it differs from the references'.
    pub urgent: Option<u16>,
    /// SEQ and ACK strides, when they differ from the references'.
    pub strides: Option<(u16, u16)>,
    /// The options, compact or verbatim.
    pub options: CoOptions,
    /// The folded checksum ([`fold_checksum`]).
    pub checksum: u16,
    /// As parsed: the CRC of the original IP and TCP headers as they are
    /// on the wire, and its width: CRC-3 in the short and compact formats,
    /// CRC-7 in the general one. [`CoPacket::emit`] computes it from the
    /// header.
    pub crc: (u8, u8),
    /// The TCP payload, after the header.
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
            let mut w = BitWriter::new(out);
            self.compact_fields(data, crc3(header), &mut w);
            w.finish();
        } else if let Some(second) = self.short_octet(shape) {
            let mut w = Wide::default();
            self.short_fields(second, crc3(header), &mut w);
            w.finish(out);
        } else {
            let mut w = BitWriter::new(out);
            self.general_fields(shape, crc7(header), &mut w)?;
            w.finish();
            if let CoOptions::Raw(o) = self.options {
                out.push(o.len);
                out.extend_from_slice(o.as_slice());
            }
        }
        out.extend_from_slice(self.payload);
        Ok(())
    }

    /// The octets of the header [`CoPacket::emit`] writes, without the
    /// Add-CID octet, or its error, without writing it or computing its
    /// CRC: what the chained format is measured against. The fields are
    /// those `emit` puts, counted.
    pub fn header_len(&self, shape: OptShape) -> Result<usize, FormatError> {
        let mut n = BitCount::default();
        let raw = if let Some(data) = self.compact_data_bit(shape) {
            self.compact_fields(data, 0, &mut n);
            0
        } else if let Some(second) = self.short_octet(shape) {
            self.short_fields(second, 0, &mut n);
            0
        } else {
            self.general_fields(shape, 0, &mut n)?;
            match self.options {
                CoOptions::Raw(o) => 1 + o.len as usize,
                CoOptions::Compact { .. } => 0,
            }
        };
        Ok(n.0.div_ceil(8) as usize + raw)
    }

    /// The compact format's fields: `data` says whether SEQ (a data
    /// segment) or the ACK number (its ACK) is sent; `crc` is the CRC-3.
    #[inline]
    fn compact_fields(&self, data: bool, crc: u8, w: &mut impl PutBits) {
        let lag = if data { self.seq.1 } else { self.ack.1 };
        w.put(0b01, 2);
        w.put(self.msn.0 & ((1 << COMPACT_MSN.k) - 1), COMPACT_MSN.k);
        w.put(crc as u32, 3);
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
    }

    /// The short format's fields (at most 98 bits), `second` its second
    /// octet and `crc` its CRC-3.
    #[inline]
    fn short_fields(&self, second: u8, crc: u8, w: &mut impl PutBits) {
        w.put(0b00, 2);
        w.put(self.msn.0 & 0x7, 3);
        w.put(crc as u32, 3);
        w.put(second as u32, 8);
        w.put(self.msn.0 >> 3, 4);
        w.put(self.seq.1, SEQ_BITS[short_selector(self.seq.0) as usize]);
        w.put(self.ack.1, SEQ_BITS[short_selector(self.ack.0) as usize]);
        if let WindowField::Short(b) = self.window {
            w.put(b, WINDOW_SHORT.k);
        }
        if second & 1 == 1 {
            if let CoOptions::Compact { ts, .. } = self.options {
                w.put(ts[0].1, TS_SHORT.k);
                w.put(ts[1].1, TS_SHORT.k);
            }
        }
        w.put(self.checksum as u32, 16);
    }

    /// The general format's fields (any field, each with its selector),
    /// `crc` its CRC-7; a verbatim option list follows them.
    fn general_fields(&self, shape: OptShape, crc: u8, w: &mut impl PutBits) -> Result<(), FormatError> {
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
            | crc as u32;
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
        Ok(())
    }

    /// The fields the short and compact formats leave to the reference
    /// (the rest is filled in by their parsers).
    pub(super) fn short_family(cid: u8, ts: [(u8, u32); 2], checksum: u16, crc: u8, payload: &'a [u8]) -> CoPacket<'a> {
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
