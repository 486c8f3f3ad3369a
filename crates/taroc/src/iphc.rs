//! IP Header Compression (RFC 2507) for TCP/IPv4 and TCP/IPv6: the
//! draft's IPHC baseline (Appendix A.2 of draft-ietf-rohc-tcp-taroc-04:
//! "RFC2507 on the wireless link, but without TWICE algorithm. The
//! characteristics of the feedback channel are the same as the forward
//! wireless link").
//!
//! * **Contexts** (§5.1): one per TCP connection and direction, 8-bit
//!   CIDs, the least recently used reused first.
//! * **FULL_HEADER** (§3.1, §5.3) starts a context and repairs it: the
//!   whole packet, the CID in its first length field.
//! * **COMPRESSED_TCP** (§6) carries RFC 1144-style deltas of the
//!   sequence and acknowledgment numbers, window and IPv4 identification,
//!   and the TCP checksum whole. The decompressor adds the deltas to its
//!   context and keeps the result only if the TCP checksum holds (§3.2,
//!   §10): a header rebuilt from a stale context is dropped, never
//!   delivered, and never becomes the context.
//! * **COMPRESSED_TCP_NODELTA** (§6) sends the changing fields as they
//!   are. The compressor uses it where a delta cannot be sent (no field
//!   changed, as in a retransmission or duplicate ACK; a delta over 16
//!   bits or backwards), so a retransmission after a TCP timeout repairs
//!   the context without a whole header.
//! * **The twice algorithm** (§10.1, [`IphcConfig::twice`]): when the
//!   checksum fails, apply the deltas once more, on the assumption that
//!   one packet with the same deltas was lost, and keep that if its
//!   checksum holds.
//! * **Header requests** (§10.2): a decompressor that cannot rebuild a
//!   header sends a CONTEXT_STATE naming the CID back across the link; the
//!   compressor answers with a FULL_HEADER for that CID. The request is
//!   repeated after [`IphcConfig::rerequest_after`] more failures (a
//!   sans-IO stand-in for a timer), since the feedback channel loses
//!   packets too.
//!
//! SYN, FIN and RST segments and segments without ACK go as they are
//! (REGULAR_HEADER) and leave the context alone, as RFC 1144 does with
//! them. Parsing and emitting the packets is [`wire`].

use std::collections::{HashMap, VecDeque};

use crate::compressor::{CompressError, FeedbackError};
use crate::decompressor::DecompressError;
use crate::format::StaticPart;
use crate::packet::{
    checksums_ok, fold, sum_words, EmitError, Packet, TcpIpHeader, FLAG_ACK, FLAG_FIN, FLAG_PSH, FLAG_RST, FLAG_SYN,
    FLAG_URG,
};

pub mod wire;

use wire::{CompressedTcp, IphcFormatError, TcpFields, SPECIAL_D, SPECIAL_I};

/// TCP CIDs are 8 bits (§5.1).
pub const IPHC_TCP_CIDS: usize = 256;

/// The TCP flags the R-octet carries: CWR and ECE.
const R_FLAGS: u8 = 0xc0;

/// An RFC 2507 compressor's and decompressor's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IphcConfig {
    /// Apply the twice algorithm (§10.1) when a header fails its checksum.
    pub twice: bool,
    /// Contexts in use at once, at most [`IPHC_TCP_CIDS`] (16: RFC 2507's
    /// default TCP_SPACE of 15, CIDs 0 to 15).
    pub max_cids: usize,
    /// Failures of one CID after which a header request is sent again
    /// while no FULL_HEADER has repaired it.
    pub rerequest_after: u32,
}

impl IphcConfig {
    /// RFC 2507 as the draft's Appendix A.2 ran it: header requests, no
    /// twice algorithm.
    pub const DRAFT: IphcConfig = IphcConfig { twice: false, max_cids: 16, rerequest_after: 4 };

    /// RFC 2507 with the twice algorithm as well.
    pub const TWICE: IphcConfig = IphcConfig { twice: true, ..IphcConfig::DRAFT };
}

impl Default for IphcConfig {
    fn default() -> Self {
        IphcConfig::TWICE
    }
}

/// Why a packet was not decompressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IphcError {
    /// The bytes are not a well-formed RFC 2507 packet.
    #[error(transparent)]
    Format(#[from] IphcFormatError),
    /// A compressed header for a CID with no context; holds the CID.
    #[error("compressed header for CID {0}, which has no context")]
    NoContext(u8),
    /// A FULL_HEADER whose packet is not TCP/IP this crate parses.
    #[error("FULL_HEADER does not hold a TCP/IP packet")]
    FullHeaderPacket,
    /// The rebuilt packet fails its IP or TCP checksum (§10): dropped.
    #[error("the rebuilt packet fails its checksum; dropped")]
    Checksum,
    /// The rebuilt header cannot be written as a packet.
    #[error(transparent)]
    Emit(#[from] EmitError),
}

impl From<IphcError> for DecompressError {
    fn from(e: IphcError) -> Self {
        match e {
            IphcError::Format(f) => DecompressError::Format(f.into()),
            IphcError::NoContext(cid) => DecompressError::NoContext(cid),
            IphcError::FullHeaderPacket => {
                DecompressError::Format(crate::format::FormatError::Reserved("RFC 2507 FULL_HEADER packet"))
            }
            IphcError::Checksum => DecompressError::Verification,
            IphcError::Emit(e) => DecompressError::Emit(e),
        }
    }
}

/// What the compressor sent, by packet type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IphcCompressorStats {
    /// REGULAR_HEADER packets (SYN, FIN, RST, no ACK).
    pub regular: u64,
    /// FULL_HEADER packets.
    pub full_headers: u64,
    /// FULL_HEADER packets sent to answer a header request.
    pub requested_full_headers: u64,
    /// COMPRESSED_TCP packets.
    pub compressed: u64,
    /// COMPRESSED_TCP_NODELTA packets.
    pub nodelta: u64,
}

#[derive(Clone)]
struct CompContext {
    key: StaticPart,
    h: TcpIpHeader,
    payload_len: usize,
    last_used: u64,
    /// A header request for this CID arrived: send a FULL_HEADER next.
    requested: bool,
    /// The headers sent before the last one, newest first, with their
    /// payload lengths (at most [`HISTORY`]). Were the packets after one
    /// of them lost, the decompressor would rebuild the next header from
    /// it; if that passes the TCP checksum, only the IPv4 identification,
    /// which no checksum covers, could be wrong.
    history: VecDeque<(TcpIpHeader, usize)>,
}

/// Headers of a context the compressor checks a compressed header
/// against (see `CompContext::history`): the losses in a row it covers.
pub const HISTORY: usize = 16;

/// The RFC 2507 compressor of one direction of a link.
#[derive(Default)]
pub struct IphcCompressor {
    cfg: IphcConfig,
    contexts: Vec<CompContext>,
    by_flow: HashMap<StaticPart, u8>,
    clock: u64,
    stats: IphcCompressorStats,
}

/// How the compressor sends one packet.
enum Send {
    Full,
    Compressed(CompressedTcp),
}

impl IphcCompressor {
    /// A compressor with no contexts.
    pub fn new(cfg: IphcConfig) -> IphcCompressor {
        let cfg = IphcConfig { max_cids: cfg.max_cids.clamp(1, IPHC_TCP_CIDS), ..cfg };
        IphcCompressor { cfg, ..IphcCompressor::default() }
    }

    /// The counters so far.
    pub fn stats(&self) -> IphcCompressorStats {
        self.stats
    }

    /// Compresses one packet into `out`; returns the header octets
    /// written (the packet type octet included).
    pub fn compress(&mut self, frame: &[u8], out: &mut Vec<u8>) -> Result<usize, CompressError> {
        let p = Packet::parse(frame)?;
        let h = p.header;
        if h.tcp_flags & (FLAG_SYN | FLAG_FIN | FLAG_RST | FLAG_ACK) != FLAG_ACK {
            self.stats.regular += 1;
            out.extend_from_slice(frame);
            return Ok(h.len());
        }
        self.clock += 1;
        let key = StaticPart::of(&h);
        let (cid, fresh) = self.context_for(key, &h);
        let ctx = &self.contexts[cid as usize];
        let requested = ctx.requested;
        let send = if fresh || requested { Send::Full } else { choose(ctx, &h, p.payload.len(), cid) };
        let start = out.len();
        let header_len = match send {
            Send::Full => {
                self.stats.full_headers += 1;
                self.stats.requested_full_headers += requested as u64;
                wire::emit_full_header(cid, frame, out);
                return Ok(self.sent(cid, key, h, p.payload.len(), 1 + h.len()));
            }
            Send::Compressed(c) => {
                if c.nodelta {
                    self.stats.nodelta += 1;
                } else {
                    self.stats.compressed += 1;
                }
                c.emit(out);
                out.len() - start
            }
        };
        out.extend_from_slice(p.payload);
        Ok(self.sent(cid, key, h, p.payload.len(), header_len))
    }

    fn sent(&mut self, cid: u8, key: StaticPart, h: TcpIpHeader, payload_len: usize, header_len: usize) -> usize {
        let ctx = &mut self.contexts[cid as usize];
        if ctx.last_used != self.clock {
            ctx.history.push_front((ctx.h, ctx.payload_len));
            ctx.history.truncate(HISTORY);
        }
        ctx.key = key;
        ctx.h = h;
        ctx.payload_len = payload_len;
        ctx.last_used = self.clock;
        ctx.requested = false;
        header_len
    }

    /// The CID of the flow of `h`, and whether its context is new.
    fn context_for(&mut self, key: StaticPart, h: &TcpIpHeader) -> (u8, bool) {
        if let Some(&cid) = self.by_flow.get(&key) {
            return (cid, false);
        }
        let fresh = CompContext {
            key,
            h: *h,
            payload_len: 0,
            last_used: self.clock,
            requested: false,
            history: VecDeque::new(),
        };
        let cid = if self.contexts.len() < self.cfg.max_cids {
            self.contexts.push(fresh);
            self.contexts.len() - 1
        } else {
            let lru = (0..self.contexts.len()).min_by_key(|&i| self.contexts[i].last_used).unwrap_or(0);
            self.by_flow.remove(&self.contexts[lru].key);
            self.contexts[lru] = fresh;
            lru
        } as u8;
        self.by_flow.insert(key, cid);
        (cid, true)
    }

    /// Applies a CONTEXT_STATE from the peer decompressor: each CID it
    /// names gets a FULL_HEADER next (§10.2).
    pub fn handle_feedback(&mut self, data: &[u8]) -> Result<(), FeedbackError> {
        let cids = wire::parse_context_state(data).map_err(|e| FeedbackError::Format(e.into()))?;
        let mut unknown = None;
        for &cid in cids {
            match self.contexts.get_mut(cid as usize) {
                Some(c) => c.requested = true,
                None => unknown = unknown.or(Some(cid)),
            }
        }
        // Every known CID is served; the first unknown one is reported.
        unknown.map_or(Ok(()), |cid| Err(FeedbackError::UnknownContext(cid)))
    }
}

/// COMPRESSED_TCP if the fields allow, else COMPRESSED_TCP_NODELTA, else
/// a FULL_HEADER (a field the compressed formats do not carry changed).
fn choose(ctx: &CompContext, h: &TcpIpHeader, payload_len: usize, cid: u8) -> Send {
    let o = &ctx.h;
    let urg = h.tcp_flags & FLAG_URG != 0;
    if o.tos != h.tos || o.flags_frag != h.flags_frag || o.ttl != h.ttl || (!urg && h.urgent != o.urgent) {
        return Send::Full;
    }
    let mut f = TcpFields { checksum: h.checksum, push: h.tcp_flags & FLAG_PSH != 0, ..TcpFields::default() };
    let r = (h.tcp_flags & R_FLAGS) | (h.tcp_res & 0x0f);
    if r != (o.tcp_flags & R_FLAGS) | (o.tcp_res & 0x0f) {
        f.r_octet = Some(r);
    }
    if h.options != o.options {
        f.options = Some(h.options);
    }
    let nodelta = |mut f: TcpFields| {
        f.r_octet = Some(r);
        f.options = (h.options.len > 0 || h.options != o.options).then_some(h.options);
        f.urgent = urg.then_some(h.urgent);
        f.window = Some(h.window);
        f.ack = Some(h.ack);
        f.seq = Some(h.seq);
        f.ip_id = h.ipv6.is_none().then_some(h.ip_id);
        Send::Compressed(CompressedTcp { cid, nodelta: true, fields: f })
    };
    f.urgent = urg.then_some(h.urgent);
    let dw = h.window.wrapping_sub(o.window);
    f.window = (dw != 0).then_some(dw);
    let da = h.ack.wrapping_sub(o.ack);
    let ds = h.seq.wrapping_sub(o.seq);
    if da > 0xffff || ds > 0xffff {
        return nodelta(f);
    }
    f.ack = (da != 0).then_some(da);
    f.seq = (ds != 0).then_some(ds);
    let flags = (f.seq.is_some() as u8) << 3
        | (f.ack.is_some() as u8) << 2
        | (f.window.is_some() as u8) << 1
        | f.urgent.is_some() as u8;
    // The first data after a pure ACK changes nothing but the payload and
    // still goes compressed, as in RFC 1144.
    let data_after_ack = payload_len != ctx.payload_len && ctx.payload_len == 0;
    if flags == 0 && f.r_octet.is_none() && f.options.is_none() && !data_after_ack {
        // A retransmission or duplicate ACK: nothing to send as a change.
        return nodelta(f);
    }
    if flags == SPECIAL_I || flags == SPECIAL_D {
        return nodelta(f);
    }
    if flags == wire::FLAG_S | wire::FLAG_A && ds == da && ds as usize == ctx.payload_len {
        f.special = Some(SPECIAL_I);
    } else if flags == wire::FLAG_S && ds as usize == ctx.payload_len {
        f.special = Some(SPECIAL_D);
    }
    if h.ipv6.is_none() {
        let di = h.ip_id.wrapping_sub(o.ip_id);
        f.ip_id = (di != 1).then_some(di);
    }
    let c = CompressedTcp { cid, nodelta: false, fields: f };
    // Were the packets after an earlier header lost, would this header
    // rebuilt from it pass the TCP checksum and still be wrong? Its IPv4
    // identification is covered by no checksum, and deltas that cancel in
    // the checksum's ones' complement sum go unseen too: a receiver whose
    // window shrinks by what it acknowledged (its right edge unmoved)
    // moves ACK by +d and the window by −d. Then send the fields whole.
    let passes_wrong = |(m, len): &(TcpIpHeader, usize)| {
        let r = apply(m, *len, &c);
        tcp_sum(&r) == tcp_sum(h) && (tcp_fields(&r) != tcp_fields(h) || (h.ipv6.is_none() && r.ip_id != h.ip_id))
    };
    if ctx.history.iter().any(passes_wrong) {
        return nodelta(f);
    }
    Send::Compressed(c)
}

/// The fields of a header the TCP checksum covers (beside the payload and
/// the pseudo-header, the same for every rebuild of one packet).
fn tcp_fields(h: &TcpIpHeader) -> (u32, u32, u16, u16, crate::packet::RawOptions, u8, u8) {
    (h.seq, h.ack, h.window, h.urgent, h.options, h.tcp_res, h.tcp_flags)
}

/// The ones' complement sum (RFC 1071) of those fields, with the data
/// offset and the header's part of the pseudo-header's TCP length (RFC
/// 9293 §3.1), which follow from the options' length: two rebuilds of one
/// packet (one payload) with equal sums pass the same TCP checksum.
fn tcp_sum(h: &TcpIpHeader) -> u16 {
    let words = [h.seq >> 16, h.seq & 0xffff, h.ack >> 16, h.ack & 0xffff];
    let offset = (h.tcp_len() as u32 / 4) << 12;
    let fields =
        [offset | (h.tcp_res as u32) << 8 | h.tcp_flags as u32, h.window as u32, h.urgent as u32, h.tcp_len() as u32];
    let acc = words.iter().chain(&fields).map(|&w| w as u64).sum();
    // 0 and 0xffff are the same number in ones' complement.
    match fold(sum_words(h.options.as_slice(), acc)) {
        0xffff => 0,
        s => s,
    }
}

/// The header `c` describes on top of `base`, whose packet carried
/// `base_payload` octets.
fn apply(base: &TcpIpHeader, base_payload: usize, c: &CompressedTcp) -> TcpIpHeader {
    let f = &c.fields;
    let mut h = *base;
    h.checksum = f.checksum;
    h.tcp_flags = if f.push { h.tcp_flags | FLAG_PSH } else { h.tcp_flags & !FLAG_PSH };
    if let Some(r) = f.r_octet {
        h.tcp_res = r & 0x0f;
        h.tcp_flags = (h.tcp_flags & !R_FLAGS) | (r & R_FLAGS);
    }
    match f.urgent {
        Some(u) => {
            h.tcp_flags |= FLAG_URG;
            h.urgent = u;
        }
        None => h.tcp_flags &= !FLAG_URG,
    }
    if c.nodelta {
        h.window = f.window.unwrap_or(h.window);
        h.ack = f.ack.unwrap_or(h.ack);
        h.seq = f.seq.unwrap_or(h.seq);
        h.ip_id = f.ip_id.unwrap_or(h.ip_id);
    } else {
        match f.special {
            Some(SPECIAL_I) => {
                h.ack = h.ack.wrapping_add(base_payload as u32);
                h.seq = h.seq.wrapping_add(base_payload as u32);
            }
            Some(_) => h.seq = h.seq.wrapping_add(base_payload as u32),
            None => {
                h.window = h.window.wrapping_add(f.window.unwrap_or(0));
                h.ack = h.ack.wrapping_add(f.ack.unwrap_or(0));
                h.seq = h.seq.wrapping_add(f.seq.unwrap_or(0));
            }
        }
        if h.ipv6.is_none() {
            h.ip_id = h.ip_id.wrapping_add(f.ip_id.unwrap_or(1));
        }
    }
    if let Some(o) = f.options {
        h.options = o;
    }
    h
}

/// What the decompressor did, beyond the packets it delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IphcDecompressorStats {
    /// Headers the twice algorithm repaired (§10.1).
    pub twice_repairs: u64,
    /// CIDs named in header requests sent (§10.2).
    pub header_requests: u64,
    /// Packets dropped for a failed checksum or a missing context.
    pub dropped: u64,
}

#[derive(Clone, Copy)]
struct DecContext {
    h: TcpIpHeader,
    payload_len: usize,
}

/// Header-request state of one CID.
#[derive(Clone, Copy, Default)]
struct Request {
    /// A request was sent and no FULL_HEADER or passing header came since.
    outstanding: bool,
    /// Failures since the last request.
    failures: u32,
}

/// The RFC 2507 decompressor of one direction of a link.
pub struct IphcDecompressor {
    cfg: IphcConfig,
    contexts: Vec<Option<DecContext>>,
    requests: Vec<Request>,
    pending: Vec<u8>,
    stats: IphcDecompressorStats,
}

impl IphcDecompressor {
    /// A decompressor with no contexts.
    pub fn new(cfg: IphcConfig) -> IphcDecompressor {
        IphcDecompressor {
            cfg,
            // Grown to the highest CID seen: a replayed connection uses
            // one CID of 256, and 256 empty contexts each way cost 77 KB.
            contexts: Vec::new(),
            requests: Vec::new(),
            pending: Vec::new(),
            stats: IphcDecompressorStats::default(),
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> IphcDecompressorStats {
        self.stats
    }

    /// Decompresses one packet, appending the IP/TCP packet to `out` only
    /// if its checksums hold; returns the packet's length.
    pub fn decompress(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, IphcError> {
        let r = self.decompress_inner(data, out);
        if r.is_err() {
            self.stats.dropped += 1;
        }
        r
    }

    fn decompress_inner(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, IphcError> {
        let first = *data.first().ok_or(IphcFormatError::Empty)?;
        match first {
            _ if matches!(first >> 4, 4 | 6) => {
                if !checksums_ok(data) {
                    return Err(IphcError::Checksum);
                }
                out.extend_from_slice(data);
                Ok(data.len())
            }
            wire::TYPE_FULL_HEADER => {
                let (cid, packet) = wire::parse_full_header(data)?;
                let p = Packet::parse(&packet).map_err(|_| IphcError::FullHeaderPacket)?;
                if !checksums_ok(&packet) {
                    return Err(IphcError::Checksum);
                }
                self.set_context(cid, DecContext { h: p.header, payload_len: p.payload.len() });
                out.extend_from_slice(&packet);
                Ok(packet.len())
            }
            wire::TYPE_COMPRESSED_TCP | wire::TYPE_COMPRESSED_TCP_NODELTA => {
                let (c, at) = CompressedTcp::parse(data)?;
                self.compressed(&c, &data[at..], out).inspect_err(|_| self.failed(c.cid))
            }
            other => Err(IphcFormatError::UnknownType(other).into()),
        }
    }

    fn compressed(&mut self, c: &CompressedTcp, payload: &[u8], out: &mut Vec<u8>) -> Result<usize, IphcError> {
        let ctx = self.contexts.get(c.cid as usize).copied().flatten().ok_or(IphcError::NoContext(c.cid))?;
        let start = out.len();
        let once = apply(&ctx.h, ctx.payload_len, c);
        let mut candidates = vec![once];
        if self.cfg.twice && !c.nodelta {
            // §10.1: one packet with the same deltas was lost.
            candidates.push(apply(&once, ctx.payload_len, c));
        }
        for (i, h) in candidates.into_iter().enumerate() {
            out.truncate(start);
            h.emit(payload.len(), out)?;
            out.extend_from_slice(payload);
            if checksums_ok(&out[start..]) {
                self.stats.twice_repairs += (i > 0) as u64;
                self.set_context(c.cid, DecContext { h, payload_len: payload.len() });
                return Ok(out.len() - start);
            }
        }
        out.truncate(start);
        Err(IphcError::Checksum)
    }

    /// Room for CID `cid` in the per-CID tables.
    fn grow(&mut self, cid: u8) {
        let n = cid as usize + 1;
        if self.contexts.len() < n {
            self.contexts.resize(n, None);
            self.requests.resize(n, Request::default());
        }
    }

    /// `ctx` is CID `cid`'s context now, and no request is outstanding.
    fn set_context(&mut self, cid: u8, ctx: DecContext) {
        self.grow(cid);
        self.contexts[cid as usize] = Some(ctx);
        self.requests[cid as usize] = Request::default();
    }

    /// A header of `cid` could not be rebuilt: ask for a full header
    /// (§10.2), again after every `rerequest_after` further failures.
    fn failed(&mut self, cid: u8) {
        let every = self.cfg.rerequest_after.max(1);
        self.grow(cid);
        let r = &mut self.requests[cid as usize];
        let send = !r.outstanding || r.failures + 1 >= every;
        if send {
            r.outstanding = true;
            r.failures = 0;
            if !self.pending.contains(&cid) {
                self.pending.push(cid);
                self.stats.header_requests += 1;
            }
        } else {
            r.failures += 1;
        }
    }

    /// The next CONTEXT_STATE to send back, if a header request waits.
    pub fn poll_feedback(&mut self, out: &mut Vec<u8>) -> bool {
        if self.pending.is_empty() {
            return false;
        }
        wire::emit_context_state(&self.pending, out);
        self.pending.clear();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packets(n: u32, payload: usize) -> Vec<Vec<u8>> {
        let mut h = TcpIpHeader::new([10, 0, 0, 1], 80, [10, 0, 0, 2], 4000);
        h.tcp_flags = FLAG_ACK;
        h.window = 1000;
        (0..n)
            .map(|i| {
                h.ip_id = i as u16;
                h.seq = 1000 + i * payload as u32;
                let mut out = Vec::new();
                h.emit_with_checksum(&vec![i as u8; payload], &mut out).unwrap();
                out
            })
            .collect()
    }

    #[test]
    fn equal_sums_are_equal_tcp_checksums_whatever_the_options_length() {
        use crate::packet::{tcp_checksum, RawOptions};
        // Headers that differ in the fields the TCP checksum covers, the
        // options' length among them, each with one payload: tcp_sum
        // tells their checksums apart exactly as the checksums do.
        let payload = [0x5au8; 37];
        let mut x = 0x2545_f491u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        let options = [&[][..], &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2][..], &[1, 1, 1, 0][..], &[2, 4, 5, 0xb4][..]];
        for base in [
            TcpIpHeader::new([10, 0, 0, 1], 80, [10, 0, 0, 2], 4000),
            TcpIpHeader::new_v6([1; 16], 80, [2; 16], 4000, 7),
        ] {
            let mut same = 0;
            for i in 0..4000 {
                let mut hs = [base, base];
                for h in &mut hs {
                    let r = next();
                    // Few values each, so that some pairs collide.
                    h.seq = r & 0x3;
                    h.ack = (r >> 2) & 0x3;
                    h.window = ((r >> 4) & 0x3) as u16 * 0x1000;
                    h.options = RawOptions::from_slice(options[(r >> 6) as usize % 4]).unwrap();
                    h.tcp_flags = ((r >> 8) & 0x18) as u8;
                }
                let checksum = |h: &TcpIpHeader| {
                    let mut out = Vec::new();
                    h.emit(payload.len(), &mut out).unwrap();
                    out.extend_from_slice(&payload);
                    tcp_checksum(&out)
                };
                if i % 2 == 0 {
                    // Half the pairs made to collide: the urgent pointer
                    // takes up the difference of the sums.
                    let (c0, c1) = (checksum(&hs[0]), checksum(&hs[1]));
                    hs[1].urgent = crate::packet::fold(!c0 as u64 + c1 as u64 + hs[1].urgent as u64);
                }
                let by_checksum = checksum(&hs[0]) == checksum(&hs[1]);
                assert_eq!(tcp_sum(&hs[0]) == tcp_sum(&hs[1]), by_checksum, "pair {i}: {hs:?}");
                same += (by_checksum && hs[0].options.len != hs[1].options.len) as usize;
            }
            assert!(same > 1000, "{same} pairs of unequal option lengths with equal checksums");
        }
    }

    #[test]
    fn a_bulk_flow_goes_in_five_octet_headers() {
        let mut c = IphcCompressor::new(IphcConfig::DRAFT);
        let mut d = IphcDecompressor::new(IphcConfig::DRAFT);
        for (i, p) in packets(20, 100).iter().enumerate() {
            let mut wire = Vec::new();
            let hl = c.compress(p, &mut wire).unwrap();
            assert_eq!(hl, if i == 0 { 41 } else { 5 }, "packet {i}");
            let mut out = Vec::new();
            d.decompress(&wire, &mut out).unwrap();
            assert_eq!(&out, p);
        }
    }

    #[test]
    fn twice_repairs_one_loss_and_a_header_request_repairs_without_it() {
        for cfg in [IphcConfig::TWICE, IphcConfig::DRAFT] {
            let mut c = IphcCompressor::new(cfg);
            let mut d = IphcDecompressor::new(cfg);
            let ps = packets(10, 100);
            let mut delivered = 0;
            for (i, p) in ps.iter().enumerate() {
                let mut wire = Vec::new();
                c.compress(p, &mut wire).unwrap();
                if i == 3 {
                    continue;
                }
                let mut out = Vec::new();
                if d.decompress(&wire, &mut out).is_ok() {
                    assert_eq!(&out, p);
                    delivered += 1;
                }
                let mut fb = Vec::new();
                if d.poll_feedback(&mut fb) {
                    c.handle_feedback(&fb).unwrap();
                }
            }
            if cfg.twice {
                assert_eq!(delivered, 9);
                assert_eq!(d.stats().twice_repairs, 1);
            } else {
                // Packet 4 fails and asks; packet 5 is the FULL_HEADER.
                assert_eq!(delivered, 8);
                assert_eq!(d.stats().header_requests, 1);
                assert_eq!(c.stats().requested_full_headers, 1);
            }
        }
    }

    #[test]
    fn every_field_change_round_trips() {
        use crate::packet::{RawOptions, FLAG_CWR, FLAG_ECE};
        let v4 = TcpIpHeader::new([10, 0, 0, 1], 80, [10, 0, 0, 2], 4000);
        let v6 = TcpIpHeader::new_v6([1; 16], 80, [2; 16], 4000, 7);
        for base in [v4, v6] {
            let mut c = IphcCompressor::new(IphcConfig::TWICE);
            let mut d = IphcDecompressor::new(IphcConfig::TWICE);
            let mut h = base;
            h.tcp_flags = FLAG_ACK;
            let steps: [&dyn Fn(&mut TcpIpHeader); 12] = [
                &|_| {},
                &|h| h.seq = h.seq.wrapping_add(100),
                &|h| h.ack = h.ack.wrapping_add(300),
                &|h| {
                    h.seq = h.seq.wrapping_add(100);
                    h.ack = h.ack.wrapping_add(100);
                },
                &|h| h.window = h.window.wrapping_sub(5),
                &|h| {
                    h.tcp_flags |= FLAG_URG;
                    h.urgent = 9;
                },
                &|h| h.tcp_flags &= !FLAG_URG,
                &|h| h.tcp_flags |= FLAG_ECE | FLAG_CWR | FLAG_PSH,
                &|h| h.tcp_res = 1,
                &|h| h.options = RawOptions::from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]).unwrap(),
                &|h| h.seq = h.seq.wrapping_add(1 << 20),
                &|h| h.seq = h.seq.wrapping_sub(1 << 10),
            ];
            for (i, step) in steps.iter().enumerate() {
                step(&mut h);
                h.ip_id = h.ip_id.wrapping_add(if i == 4 { 7 } else { 1 });
                let mut p = Vec::new();
                h.emit_with_checksum(&[i as u8; 100], &mut p).unwrap();
                let mut wire = Vec::new();
                c.compress(&p, &mut wire).unwrap();
                let mut out = Vec::new();
                d.decompress(&wire, &mut out).unwrap_or_else(|e| panic!("step {i}: {e}"));
                assert_eq!(out, p, "step {i}");
            }
            let s = c.stats();
            assert_eq!(s.full_headers, 1);
            // NODELTA: the first repeat, the two long jumps, and headers
            // whose predecessor's loss the TCP checksum would not show
            // (after a change of flags alone, the R-octet is absolute).
            assert!(s.compressed >= 5 && s.nodelta >= 3, "{s:?}");
        }
    }

    #[test]
    fn hostile_bytes_are_refused_not_panicked_on() {
        let mut d = IphcDecompressor::new(IphcConfig::TWICE);
        let mut out = Vec::new();
        for data in [&[][..], &[0x21], &[0x21, 0, 0xff, 0, 0], &[0x20, 0x45], &[0x99, 1], &[0x22, 5, 0x7f]] {
            assert!(d.decompress(data, &mut out).is_err());
        }
        assert!(out.is_empty());
        let mut c = IphcCompressor::new(IphcConfig::TWICE);
        assert!(c.handle_feedback(&[0x23, 1, 1, 200]).is_err());
        assert!(c.compress(&[0x45, 0, 0], &mut out).is_err());
    }
}
