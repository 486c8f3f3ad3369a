//! Cross-direction inference: an extension of this crate beyond the
//! draft, which both ends enable together (`CompressorConfig::infer`,
//! `DecompressorConfig::infer`), in O-mode only.
//!
//! TAROC's formats decode against any packet of the VSW, so each field
//! that moves between packets is sent as enough LSBs to cover the whole
//! window (§6.1). SIP over TCP moves every such field by a different
//! amount each time: a segment's SEQ by the length of the message before
//! it, its ACK number by the other side's message, TSval by the time
//! between messages and TSecr by the other side's. Covering them across a
//! window costs 14–20 bits each, 16 octets a header. Yet most of them
//! follow from packets both ends already hold:
//!
//! * SEQ is the previous packet's SEQ plus its payload length (plus one
//!   for SYN or FIN): nothing to send, if the reference is the previous
//!   packet of the direction.
//! * The ACK number acknowledges, whole, a recent packet of the other
//!   direction, and TSecr echoes that packet's TSval (RFC 7323 §4.3):
//!   each end's decompressor of one direction sits beside its compressor
//!   of the other, so the packet is named by its MSN's 4 LSBs.
//!
//! **The chained format** (first bits `1101`; with inference on, the
//! general format's SEQ selector 5, fixed payload LSB(4,1), is not used,
//! so its first nibble is free):
//!
//! | bits | field | meaning |
//! |---|---|---|
//! | 4 | `1101` | chained format |
//! | 1 | MSN | its LSB; the MSN is the reference's plus one |
//! | 3 | CRC-3 | over the original header |
//! | 1 | P | TCP PSH flag |
//! | 1 | I | 0: IP-ID − MSN as the reference's; 1: IP-ID as the reference's (IPv6: 1) |
//! | 1 | N | 1: the ACK number acknowledges the named packet of the other direction whole, and TSecr is the TSval of the packet that starts at the reference's ACK number (RFC 7323 §4.3), else the named one's; 0: both as the reference's |
//! | 1 | W | the window field follows (else the window and FIN are the reference's) |
//! | 0/4 | reverse MSN | if N: the named packet's MSN, 4 LSBs, against the newest packet of that direction this end holds |
//! | 0/16 | IP-ID | if I = 0 after an IPv4 SYN or SYN-ACK with IP-ID 0: the IP-ID whole |
//! | 0/8/16/24 | window | if W: E, L, then a change in 6 (L = 0) or 14 (L = 1) bits, two's complement: of the window (E = 0) or of the receive window's right edge, window + ACK number (E = 1); L = 0 and −32 stand for "FIN toggled", with E = 0 "window unchanged", with E = 1 "a window field follows" |
//! | 0/8/12/22 | TSval | if the reference has a timestamp option: TSval − TSval_ref as `0` and 7 bits, `10` and 10 bits, or `11` and 20 bits |
//! | 16 | checksum | the folded TCP checksum of the general format |
//! | 0–7 | padding | to the octet |
//!
//! Everything else is the reference's: SEQ follows from it; flags but
//! PSH and FIN, IP fields, urgent pointer, strides and the options (the
//! timestamps aside) are equal to it. A SIP message's segment is then 4
//! octets without timestamps and 5–6 with them, against 10–16 in TAROC's
//! formats.
//!
//! **The handshake.** After a SYN or SYN-ACK the reference is what the
//! connection's next segment keeps of it (`chain_reference`): ACK for
//! SYN, the window scaled by the shift the SYN advertised, of the options
//! the timestamps alone. So the handshake's ACK and each side's first
//! segment chain at 5–8 octets, where the other formats sent the new
//! option list whole (26–31 octets). An ACK stride that was none may
//! become the ACK number's advance, as the compressor's stride rule sets
//! it; no other stride change chains. After an IPv4 SYN or SYN-ACK whose
//! IP-ID is 0, I = 0 sends the IP-ID whole, in 16 bits after the reverse
//! MSN (`sends_whole_ip_id`).
//!
//! **Robustness.** The reference must be the previous packet: the
//! decompressor refuses a chained packet whose MSN bit shows a gap, and
//! the CRC-3 and the TCP checksum verify every reconstructed header as
//! they do the other formats' (the checksum is folded with the MSN and
//! IP-ID, so a gap the MSN bit misses still fails it). A lost packet thus
//! costs the chained packets after it until the NACK it draws comes back.
//! That NACK names the decompressor's reference; while the VSW holds it,
//! the context is in step for the other formats (§6.1), so the compressor
//! sends one IR-DYN and the other formats, without the compression slow
//! start a NACK otherwise brings (§5.5.2.1), until an ACK restarts the
//! chaining: the IR-DYN's ACK(O), or the ACK the decompressor sends for
//! the first packet it decodes after a chained packet failed. A
//! packet whose header passed its CRC but whose payload was damaged is the
//! reference of the chained packet after it: its SEQ, length and
//! timestamps are known, and the result is verified as any other. U-mode
//! has no feedback to end a broken chain, and R-mode takes only
//! acknowledged references (§5.5.3), so inference is O-mode only. A
//! chained packet is sent only when it is at least four octets shorter
//! than the packet the other formats would send ([`MIN_SAVING`]).
//!
//! The chained format assumes a link that keeps the order of packets, as
//! RFC 3095's profiles do (RFC 4224 discusses links that do not): a packet
//! that arrives after its successor breaks the chain as a lost one does.

mod crossed;

use std::borrow::Cow;

pub(crate) use crossed::CrossedPackets;

use crate::bits::{BitWriter, WordReader};
use crate::format::{emit_cid, FormatError, OptInfo, StaticPart};
use crate::packet::{
    OptionWalker, RawOptions, TcpIpHeader, TcpOption, FLAG_ACK, FLAG_CWR, FLAG_ECE, FLAG_FIN, FLAG_PSH, FLAG_SYN,
};
use crate::Record;

/// The chained format's first four bits.
pub const CHAINED_PREFIX: u8 = 0b1101;
/// The MSN LSBs a chained packet carries.
const MSN_BITS: u32 = 1;
/// The reverse MSN LSBs: the named packet must be among the 16 newest.
const REVERSE_MSN_BITS: u32 = 4;

/// A packet that crossed the link, as one end holds it: what its
/// decompressor delivered or its compressor sent. The compressor and
/// decompressor of one end pass these to each other
/// ([`Compressor::poll_crossed`](crate::Compressor::poll_crossed) to
/// [`Decompressor::note_reverse`](crate::Decompressor::note_reverse), and
/// back), so that either can name or find a packet of the other direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrossedPacket {
    /// The packet's own direction.
    pub flow: StaticPart,
    /// Its master sequence number in its own context.
    pub msn: u16,
    /// Its SEQ.
    pub seq: u32,
    /// The ACK number that acknowledges it whole: SEQ plus the payload
    /// length, plus one each for SYN and FIN.
    pub next_seq: u32,
    /// Its TSval (0 without a timestamp option).
    pub tsval: u32,
}

impl CrossedPacket {
    pub(crate) fn of(rec: &Record, flow: StaticPart) -> CrossedPacket {
        CrossedPacket {
            flow,
            msn: rec.msn,
            seq: rec.h.seq,
            next_seq: next_seq(&rec.h, rec.payload_len),
            tsval: rec.ts.0,
        }
    }
}

/// SEQ plus the sequence space the segment takes.
pub(crate) fn next_seq(h: &TcpIpHeader, payload_len: u16) -> u32 {
    let flags = (h.tcp_flags & FLAG_SYN != 0) as u32 + (h.tcp_flags & FLAG_FIN != 0) as u32;
    h.seq.wrapping_add(payload_len as u32).wrapping_add(flags)
}

/// A chained packet's fields as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainedPacket<'a> {
    /// The context's CID, 0..=15 (an Add-CID octet unless 0).
    pub cid: u8,
    /// The MSN's LSB.
    pub msn: u8,
    /// The CRC-3 over the original header.
    pub crc: u8,
    /// The TCP PSH flag.
    pub psh: bool,
    /// IP-ID equal to the reference's (else IP-ID − MSN is, or the IP-ID
    /// is sent whole).
    pub ip_id_unchanged: bool,
    /// The IP-ID sent whole: I = 0 after an IPv4 SYN or SYN-ACK whose
    /// IP-ID is 0 (`sends_whole_ip_id`).
    pub ip_id: Option<u16>,
    /// The named packet's MSN LSBs (N = 1).
    pub reverse_msn: Option<u8>,
    /// The window, if not the reference's (W = 1).
    pub window: Option<ChainedWindow>,
    /// The FIN flag differs from the reference's (a connection's close):
    /// W = 1 with the short window field's −32, which stands for it; with
    /// E = 1 the window field follows it, else the window is the
    /// reference's.
    pub fin_toggled: bool,
    /// TSval − TSval_ref, if the reference has a timestamp option.
    pub tsval_delta: Option<u32>,
    /// The folded checksum ([`fold_checksum`](crate::format::fold_checksum)).
    pub checksum: u16,
    /// The TCP payload, sent after the header.
    pub payload: &'a [u8],
}

/// The octets a chained packet must save over the other formats to be
/// sent: a chained packet fails when the one before it is lost, and so
/// does every chained packet sent until the NACK comes back, so it is
/// worth that risk only where it saves much: SIP's 8–16 octets become
/// 4–6, while a bulk transfer's 4–7 stay in the other formats. With a
/// threshold of 2–3, the draft's throughput study lost up to 6 % of its
/// goodput at BER 1e-6 to 3e-5 (64 and 9.6 kb/s) to the chained packets
/// lost after each lost one; with 4 its goodput is 0.993–0.999 of
/// TAROC's (8 seeds), and SIP's short-format packets of 8 octets still
/// chain.
pub const MIN_SAVING: usize = 4;

/// The largest TSval change a chained packet carries.
pub const MAX_TSVAL_DELTA: u32 = (1 << 20) - 1;

/// A chained packet's window: a signed change from the reference's
/// window, or from the reference's right edge of the receive window
/// (window + ACK number, unscaled): a receiver whose application has not
/// read what it acknowledged yet advertises that much less window, and
/// its right edge stays. 6 bits of change (−32 to 31), or 14 (−8,192 to
/// 8,191).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainedWindow {
    /// The change is from the right edge (E = 1), else from the window.
    pub right_edge: bool,
    /// The change.
    pub delta: i16,
}

/// The short window field's change of −32 stands for "FIN toggled"
/// (L = 0, `100000`): with E = 0 the window is unchanged, with E = 1 the
/// window field follows. A change of −32 takes the long form instead.
const FIN_TOGGLED: i16 = -32;

impl ChainedWindow {
    fn long(&self) -> bool {
        !(-32..32).contains(&self.delta) || self.delta == FIN_TOGGLED
    }

    fn bits(&self) -> u32 {
        if self.long() {
            16
        } else {
            8
        }
    }

    /// Reads a field: the window and whether it took the long form.
    fn get(r: &mut WordReader) -> (ChainedWindow, bool) {
        let right_edge = r.get(1) == 1;
        let long = r.get(1) == 1;
        let k = if long { 14 } else { 6 };
        // Sign-extend the k-bit change.
        let delta = ((r.get(k) << (32 - k)) as i32 >> (32 - k)) as i16;
        (ChainedWindow { right_edge, delta }, long)
    }

    /// Writes the field: E, L, the change in 6 (L = 0) or 14 bits.
    fn put(&self, w: &mut BitWriter, long: bool) {
        let k = if long { 14 } else { 6 };
        w.put(self.right_edge as u32, 1);
        w.put(long as u32, 1);
        w.put(self.delta as u16 as u32 & ((1 << k) - 1), k);
    }

    /// The smallest encoding of `window` against the reference's window
    /// `w_ref` and ACK number `ack_ref`, for ACK number `ack`.
    fn encode(window: u16, w_ref: u16, ack: u32, ack_ref: u32) -> Option<ChainedWindow> {
        let plain = window as i64 - w_ref as i64;
        let edge = window as i64 - right_edge_base(w_ref, ack, ack_ref);
        [ChainedWindow::fit(false, plain), ChainedWindow::fit(true, edge)]
            .into_iter()
            .flatten()
            .min_by_key(|w| w.bits())
    }

    fn fit(right_edge: bool, delta: i64) -> Option<ChainedWindow> {
        (-8192..8192).contains(&delta).then_some(ChainedWindow { right_edge, delta: delta as i16 })
    }

    /// The window it stands for; None if outside 0..=65535.
    fn decode(&self, w_ref: u16, ack: u32, ack_ref: u32) -> Option<u16> {
        let base = if self.right_edge { right_edge_base(w_ref, ack, ack_ref) } else { w_ref as i64 };
        u16::try_from(base + self.delta as i64).ok()
    }
}

/// The window that keeps the reference's right edge at ACK number `ack`.
fn right_edge_base(w_ref: u16, ack: u32, ack_ref: u32) -> i64 {
    w_ref as i64 - ack.wrapping_sub(ack_ref) as i32 as i64
}

/// TSval's change: `0` and 7 bits (0–127), `10` and 10 bits (0–1,023),
/// `11` and 20 bits.
fn tsval_bits(d: u32) -> u32 {
    match d {
        0..128 => 8,
        128..1024 => 12,
        _ => 22,
    }
}

impl<'a> ChainedPacket<'a> {
    /// The header's length in octets, without the Add-CID octet.
    pub fn header_len(&self) -> usize {
        let ts = self.tsval_delta.map_or(0, tsval_bits);
        let window = self.window.map_or(0, |w| w.bits()) + if self.fin_toggled { 8 } else { 0 };
        let ip_id = self.ip_id.map_or(0, |_| 16);
        let bits = 12 + self.reverse_msn.map_or(0, |_| REVERSE_MSN_BITS) + ip_id + window + ts + 16;
        bits.div_ceil(8) as usize
    }

    /// Appends the packet (Add-CID octet, header, payload) to `out`; fails
    /// for a TSval change above [`MAX_TSVAL_DELTA`].
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<(), FormatError> {
        if self.tsval_delta.is_some_and(|d| d > MAX_TSVAL_DELTA) {
            return Err(FormatError::Reserved("TSval change"));
        }
        if self.window.is_some_and(|w| !(-8192..8192).contains(&w.delta)) {
            return Err(FormatError::Reserved("window change"));
        }
        if self.ip_id_unchanged && self.ip_id.is_some() {
            return Err(FormatError::Reserved("IP-ID unchanged and sent whole"));
        }
        emit_cid(self.cid, out);
        let mut w = BitWriter::new(out);
        w.put(CHAINED_PREFIX as u32, 4);
        w.put(self.msn as u32, MSN_BITS);
        w.put(self.crc as u32, 3);
        w.put(self.psh as u32, 1);
        w.put(self.ip_id_unchanged as u32, 1);
        w.put(self.reverse_msn.is_some() as u32, 1);
        w.put((self.window.is_some() || self.fin_toggled) as u32, 1);
        if let Some(m) = self.reverse_msn {
            w.put(m as u32, REVERSE_MSN_BITS);
        }
        if let Some(id) = self.ip_id {
            w.put(id as u32, 16);
        }
        if self.fin_toggled {
            ChainedWindow { right_edge: self.window.is_some(), delta: FIN_TOGGLED }.put(&mut w, false);
        }
        if let Some(win) = self.window {
            win.put(&mut w, win.long());
        }
        match self.tsval_delta.map(|d| (d, tsval_bits(d))) {
            None => {}
            Some((d, 8)) => w.put(d, 8),
            Some((d, 12)) => w.put(0b10 << 10 | d, 12),
            Some((d, _)) => w.put(0b11 << 20 | d, 22),
        }
        w.put(self.checksum as u32, 16);
        w.finish();
        out.extend_from_slice(self.payload);
        Ok(())
    }

    /// Parses a chained packet (after the Add-CID octet); `ts`: the
    /// reference has a timestamp option; `whole_ip_id`: I = 0 sends the
    /// IP-ID whole (`sends_whole_ip_id` of the reference).
    pub fn parse(cid: u8, data: &'a [u8], ts: bool, whole_ip_id: bool) -> Result<ChainedPacket<'a>, FormatError> {
        let mut r = WordReader::new(data);
        if r.get(4) != CHAINED_PREFIX as u32 {
            r.check()?;
            return Err(FormatError::UnknownType(data[0]));
        }
        let msn = r.get(MSN_BITS) as u8;
        let crc = r.get(3) as u8;
        let psh = r.get(1) == 1;
        let ip_id_unchanged = r.get(1) == 1;
        let n = r.get(1) == 1;
        let w = r.get(1) == 1;
        let reverse_msn = n.then(|| r.get(REVERSE_MSN_BITS) as u8);
        let ip_id = (whole_ip_id && !ip_id_unchanged).then(|| r.get(16) as u16);
        let mut fin_toggled = false;
        let mut window = None;
        if w {
            let (win, long) = ChainedWindow::get(&mut r);
            fin_toggled = !long && win.delta == FIN_TOGGLED;
            window = match (fin_toggled, win.right_edge) {
                (false, _) => Some(win),
                (true, true) => Some(ChainedWindow::get(&mut r).0),
                (true, false) => None,
            };
        }
        let tsval_delta = ts.then(|| match (r.get(1), r.get(1)) {
            (0, b) => b << 6 | r.get(6),
            (_, 0) => r.get(10),
            _ => r.get(20),
        });
        let checksum = r.get(16) as u16;
        r.check()?;
        let at = r.octets_used();
        Ok(ChainedPacket {
            cid,
            msn,
            crc,
            psh,
            ip_id_unchanged,
            ip_id,
            reverse_msn,
            window,
            fin_toggled,
            tsval_delta,
            checksum,
            payload: &data[at..],
        })
    }
}

/// The chained packet for `rec` if one carries it: its reference `prev`
/// (the previous packet of the context) and `crossed`, the other
/// direction's packets, give every field it leaves out. The caller fills
/// in the CID, the CRC-3, the folded checksum and the payload.
pub(crate) fn encode(
    rec: &Record,
    prev: &Record,
    crossed: &CrossedPackets,
    flow: &StaticPart,
) -> Option<ChainedPacket<'static>> {
    let strides = chained_strides(prev, &rec.h);
    let whole_ip_id = sends_whole_ip_id(prev);
    let reference = chain_reference(prev);
    let prev = reference.as_ref();
    let (h, p) = (&rec.h, &prev.h);
    let same = h.seq == next_seq(p, prev.payload_len)
        && rec.msn == prev.msn.wrapping_add(1)
        && (h.tcp_flags ^ p.tcp_flags) & !(FLAG_PSH | FLAG_FIN) == 0
        && h.tcp_res == p.tcp_res
        && (h.tos, h.ttl, h.flags_frag) == (p.tos, p.ttl, p.flags_frag)
        && h.urgent == p.urgent
        && rec.strides == strides
        && rec.opt.ts_at == prev.opt.ts_at
        && rec.opt.sack_n == 0
        && prev.opt.sack_n == 0;
    if !same {
        return None;
    }
    let ts = rec.opt.ts_at.is_some();
    let (ip_id_unchanged, ip_id) = if h.ipv6.is_some() || h.ip_id == p.ip_id {
        (true, None)
    } else if whole_ip_id {
        (false, Some(h.ip_id))
    } else if h.ip_id.wrapping_sub(rec.msn) == p.ip_id.wrapping_sub(prev.msn) {
        (false, None)
    } else {
        return None;
    };
    let reverse_msn = if h.ack == p.ack && (!ts || rec.ts.1 == prev.ts.1) {
        None
    } else {
        let named = crossed.named_by(flow, h.ack, p.ack, ts.then_some(rec.ts.1))?;
        Some((named.msn & ((1 << REVERSE_MSN_BITS) - 1)) as u8)
    };
    let fin_toggled = (h.tcp_flags ^ p.tcp_flags) & FLAG_FIN != 0;
    let window = match h.window == p.window {
        true => None,
        false => Some(ChainedWindow::encode(h.window, p.window, h.ack, p.ack)?),
    };
    let tsval_delta = if ts {
        let d = rec.ts.0.wrapping_sub(prev.ts.0);
        if d > MAX_TSVAL_DELTA {
            return None;
        }
        Some(d)
    } else {
        None
    };
    // The options but the timestamps must be the reference's.
    if prev.opt.fill(rec.ts, &[])? != h.options {
        return None;
    }
    Some(ChainedPacket {
        cid: 0,
        msn: (rec.msn & ((1 << MSN_BITS) - 1)) as u8,
        crc: 0,
        psh: h.tcp_flags & FLAG_PSH != 0,
        ip_id_unchanged,
        ip_id,
        reverse_msn,
        window,
        fin_toggled,
        tsval_delta,
        checksum: 0,
        payload: &[],
    })
}

/// The packet a chained packet carries, from its reference `previous`
/// (the previous packet) and `crossed`, the other direction's packets as
/// this end sent them; `None` if the MSN shows packets missing between
/// them or the named packet is not held. The TCP checksum is left folded:
/// the caller unfolds it with the record's MSN and strides.
pub(crate) fn reconstruct(
    c: &ChainedPacket<'_>,
    previous: &Record,
    static_part: &StaticPart,
    crossed: &CrossedPackets,
) -> Option<Record> {
    let reference = chain_reference(previous);
    let r = reference.as_ref();
    let msn = r.msn.wrapping_add(1);
    if (msn & ((1 << MSN_BITS) - 1)) as u8 != c.msn {
        return None;
    }
    let mut h = r.h;
    static_part.apply(&mut h);
    h.seq = next_seq(&r.h, r.payload_len);
    if !c.ip_id_unchanged {
        if h.ipv6.is_some() {
            return None;
        }
        h.ip_id = c.ip_id.unwrap_or_else(|| r.h.ip_id.wrapping_sub(r.msn).wrapping_add(msn));
    }
    h.tcp_flags = (r.h.tcp_flags & !FLAG_PSH) | (c.psh as u8 * FLAG_PSH);
    if c.fin_toggled {
        h.tcp_flags ^= FLAG_FIN;
    }
    let mut tsecr = r.ts.1;
    if let Some(bits) = c.reverse_msn {
        let (named, echoed) = crossed.find(static_part, bits, r.h.ack)?;
        h.ack = named.next_seq;
        tsecr = echoed;
    }
    if let Some(w) = c.window {
        h.window = w.decode(r.h.window, h.ack, r.h.ack)?;
    }
    let tsval = r.ts.0.wrapping_add(c.tsval_delta.unwrap_or(0));
    if r.opt.sack_n != 0 {
        return None;
    }
    h.options = r.opt.fill((tsval, tsecr), &[])?;
    h.checksum = c.checksum;
    Some(Record {
        msn,
        h,
        opt: r.opt,
        ts: (tsval, tsecr),
        strides: chained_strides(previous, &h),
        payload_len: c.payload.len().min(u16::MAX as usize) as u16,
        sent_as_ir: false,
        fp: [(0, 0); 2],
    })
}

/// What a chained packet is encoded and decoded against: the previous
/// packet `prev`, or after a SYN or SYN-ACK what the connection's next
/// segment keeps of it. That segment has the ACK flag where the SYN had
/// SYN (and drops ECN's set-up flags, RFC 3168 §6.1.1); its window is
/// scaled by the shift the SYN advertised (RFC 7323 §2.2: a SYN's window is
/// never scaled, a later segment's is); and of the SYN's options it keeps
/// the timestamps alone, after two NOPs (RFC 7323 Appendix A's layout, as
/// Linux, the BSDs and Windows send them). A segment that differs from
/// this does not chain, and goes in the other formats.
#[inline]
pub(crate) fn chain_reference(prev: &Record) -> Cow<'_, Record> {
    match prev.h.tcp_flags & FLAG_SYN {
        // Every packet but the handshake's: no copy of the record.
        0 => Cow::Borrowed(prev),
        _ => Cow::Owned(after_syn(prev)),
    }
}

/// [`chain_reference`] of a SYN or SYN-ACK.
#[cold]
fn after_syn(prev: &Record) -> Record {
    let mut r = *prev;
    r.h.seq = next_seq(&prev.h, prev.payload_len);
    r.payload_len = 0;
    r.h.tcp_flags = FLAG_ACK | prev.h.tcp_flags & !(FLAG_SYN | FLAG_ECE | FLAG_CWR);
    r.h.window = prev.h.window >> window_shift(&prev.h.options).min(14);
    let (val, ecr) = prev.ts;
    let layout: &[TcpOption] = match prev.opt.ts_at {
        Some(_) => &[TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val, ecr }],
        None => &[],
    };
    r.h.options = RawOptions::build(layout).unwrap_or(RawOptions::EMPTY);
    r.opt = OptInfo::of(&r.h.options);
    r
}

/// Whether a chained packet after `prev` with I = 0 sends its IP-ID whole:
/// after an IPv4 SYN or SYN-ACK whose IP-ID is 0. Linux sends its SYN-ACKs
/// so (with DF set) and starts the connection's own IP-ID counter at a
/// random value, where IP-ID − MSN as the SYN-ACK's would say 1.
#[inline]
pub(crate) fn sends_whole_ip_id(prev: &Record) -> bool {
    prev.h.tcp_flags & FLAG_SYN != 0 && prev.h.ipv6.is_none() && prev.h.ip_id == 0
}

/// The window scale shift of a SYN's options (RFC 7323 §2.3), 0 without
/// one.
fn window_shift(options: &RawOptions) -> u8 {
    let bytes = options.as_slice();
    OptionWalker::new(bytes).find(|&(kind, _, len)| kind == 3 && len == 3).map_or(0, |(_, start, _)| bytes[start + 2])
}

/// The strides after `h` when it chains to `prev`: `prev`'s, but an ACK
/// stride that was none becomes the ACK number's advance over `prev`'s,
/// as the compressor's stride rule sets it (the decompressor holds
/// `prev`, so it sets it alike). Any other stride change does not chain.
#[inline]
pub(crate) fn chained_strides(prev: &Record, h: &TcpIpHeader) -> (u16, u16) {
    let (seq, ack) = prev.strides;
    let both_ack = prev.h.tcp_flags & h.tcp_flags & FLAG_ACK != 0;
    let advance = h.ack.wrapping_sub(prev.h.ack);
    match ack == 0 && both_ack && (1..=0xffff).contains(&advance) {
        true => (seq, advance as u16),
        false => (seq, ack),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(reverse_msn: Option<u8>, tsval_delta: Option<u32>) -> ChainedPacket<'static> {
        ChainedPacket {
            cid: 3,
            msn: 1,
            window: None,
            fin_toggled: false,
            crc: 5,
            psh: true,
            ip_id_unchanged: false,
            ip_id: None,
            reverse_msn,
            tsval_delta,
            checksum: 0xbeef,
            payload: b"INVITE",
        }
    }

    #[test]
    fn parse_reads_what_emit_writes() {
        for rev in [None, Some(0), Some(15)] {
            for ts in [None, Some(0), Some(127), Some(128), Some(1023), Some(1024), Some(MAX_TSVAL_DELTA)] {
                let windows = [
                    None,
                    Some((false, 0)),
                    Some((true, -32)),
                    // The short form's −32 stands for FIN toggled: this
                    // change goes long.
                    Some((false, -32)),
                    Some((false, 31)),
                    Some((true, 32)),
                    Some((false, -8192)),
                    Some((true, 8191)),
                ];
                let windows = windows.map(|w| w.map(|(right_edge, delta)| ChainedWindow { right_edge, delta }));
                for (window, fin_toggled) in windows.map(|w| (w, false)).into_iter().chain([(None, true)]) {
                    for ip_id in [None, Some(0x9c8b)] {
                        let p = ChainedPacket { window, fin_toggled, ip_id, ..packet(rev, ts) };
                        let mut out = Vec::new();
                        p.emit(&mut out).unwrap();
                        assert_eq!(out[0], 0xe3, "Add-CID");
                        assert_eq!(out[1] >> 4, CHAINED_PREFIX);
                        assert_eq!(out.len(), 1 + p.header_len() + p.payload.len());
                        assert_eq!(ChainedPacket::parse(3, &out[1..], ts.is_some(), ip_id.is_some()).unwrap(), p);
                    }
                }
            }
        }
    }

    #[test]
    fn a_sip_segment_takes_four_to_six_octets() {
        assert_eq!(packet(Some(1), None).header_len(), 4);
        assert_eq!(packet(Some(1), Some(40)).header_len(), 5);
        assert_eq!(packet(Some(1), Some(1000)).header_len(), 6);
        assert_eq!(packet(Some(1), Some(5000)).header_len(), 7);
        assert_eq!(packet(None, None).header_len(), 4);
        assert_eq!(packet(None, Some(1000)).header_len(), 5);
        assert_eq!(ChainedPacket { ip_id: Some(7), ..packet(Some(1), Some(40)) }.header_len(), 7, "IP-ID whole");
        let window = Some(ChainedWindow { right_edge: true, delta: 1 });
        assert_eq!(ChainedPacket { window, ..packet(Some(1), Some(40)) }.header_len(), 6);
    }

    #[test]
    fn a_window_change_of_minus_32_is_not_read_as_a_fin() {
        let window = Some(ChainedWindow { right_edge: false, delta: -32 });
        let p = ChainedPacket { window, ..packet(Some(1), Some(40)) };
        assert_eq!(p.header_len(), 7, "the long form");
        let mut out = Vec::new();
        p.emit(&mut out).unwrap();
        let back = ChainedPacket::parse(3, &out[1..], true, false).unwrap();
        assert_eq!((back.window, back.fin_toggled), (window, false));
        let fin = ChainedPacket { fin_toggled: true, ..packet(Some(1), Some(40)) };
        assert_eq!(fin.header_len(), 6);
        // FIN toggled and a window change: the FIN's field, then the
        // window's.
        for delta in [-32, 5, 700] {
            let both = ChainedPacket { window: Some(ChainedWindow { right_edge: true, delta }), ..fin };
            let mut out = Vec::new();
            both.emit(&mut out).unwrap();
            assert_eq!(out.len(), 1 + both.header_len() + both.payload.len());
            assert_eq!(ChainedPacket::parse(3, &out[1..], true, false).unwrap(), both);
        }
    }

    #[test]
    fn a_window_that_keeps_its_right_edge_costs_one_octet() {
        // 890 octets acknowledged and not yet read: the window is 890 less.
        let w = ChainedWindow::encode(64_000 - 890, 64_000, 10_890, 10_000).unwrap();
        assert_eq!(w, ChainedWindow { right_edge: true, delta: 0 });
        assert_eq!(w.bits(), 8);
        assert_eq!(w.decode(64_000, 10_890, 10_000), Some(64_000 - 890));
        // A scaled window's small change stays a change of the window.
        let w = ChainedWindow::encode(67, 64, 10_890, 10_000).unwrap();
        assert_eq!((w.right_edge, w.delta), (false, 3));
        // Beyond 14 bits either way: no chained packet.
        assert_eq!(ChainedWindow::encode(60_000, 1_000, 5, 5), None);
    }

    #[test]
    fn truncated_packets_are_refused() {
        let mut out = Vec::new();
        packet(Some(1), Some(1000)).emit(&mut out).unwrap();
        let header = &out[1..1 + packet(Some(1), Some(1000)).header_len()];
        for n in 0..header.len() {
            assert_eq!(ChainedPacket::parse(3, &header[..n], true, false), Err(FormatError::Truncated), "{n}");
        }
        assert!(ChainedPacket::parse(3, &[0x80, 0, 0, 0], false, false).is_err());
    }

    fn record(frame: &[u8], msn: u16, strides: (u16, u16)) -> Record {
        let p = crate::Packet::parse(frame).unwrap();
        let opt = OptInfo::of(&p.header.options);
        let ts = opt.ts(&p.header.options);
        let payload_len = p.payload.len() as u16;
        Record { msn, h: p.header, opt, ts, strides, payload_len, sent_as_ir: false, fp: [(0, 0); 2] }
    }

    #[test]
    fn after_a_syn_the_reference_is_what_the_next_segment_keeps_of_it() {
        use crate::synth::{sip_over_tcp, FlowOptions};
        let flow = sip_over_tcp(1, FlowOptions::default());
        let (syn, syn_ack, ack) = (record(&flow[0].1, 1, (0, 0)), record(&flow[1].1, 1, (0, 0)), &flow[2].1);
        let ack = record(ack, 2, (0, 0));
        assert_eq!(syn.h.tcp_flags, FLAG_SYN);
        let r = chain_reference(&syn);
        assert_eq!(r.h.seq, ack.h.seq, "SEQ past the SYN");
        assert_eq!(r.h.tcp_flags, FLAG_ACK);
        assert_eq!(r.h.options.as_slice()[..4], [1, 1, 8, 10], "the timestamps alone, after two NOPs");
        assert_eq!((r.opt.ts_at, r.ts), (ack.opt.ts_at, syn.ts));
        // The SYN's 65,535 scaled by its shift of 7; the ACK advertises 502.
        assert_eq!((syn.h.window, r.h.window, ack.h.window), (65_535, 511, 502));
        assert_eq!(r.opt.fill(ack.ts, &[]), Some(ack.h.options));
        // The SYN-ACK's flags lose SYN and keep ACK.
        assert_eq!(chain_reference(&syn_ack).h.tcp_flags, FLAG_ACK);
        // A packet other than a SYN is its own reference.
        assert_eq!(chain_reference(&ack).h, ack.h);
    }

    #[test]
    fn a_first_ack_stride_is_the_ack_numbers_advance_and_no_other_stride_changes() {
        let mut prev = record(&crate::synth::sip_over_tcp(1, Default::default())[2].1, 2, (0, 0));
        let mut h = prev.h;
        h.ack = prev.h.ack.wrapping_add(298);
        assert_eq!(chained_strides(&prev, &h), (0, 298));
        prev.strides = (0, 100);
        assert_eq!(chained_strides(&prev, &h), (0, 100), "a stride set stays");
        prev.strides = (0, 0);
        h.ack = prev.h.ack.wrapping_add(70_000);
        assert_eq!(chained_strides(&prev, &h), (0, 0), "beyond 16 bits: none");
        prev.h.tcp_flags = FLAG_SYN;
        h.ack = prev.h.ack.wrapping_add(1);
        assert_eq!(chained_strides(&prev, &h), (0, 0), "a SYN has no ACK number to advance from");
    }
}
