//! The TAROC compressor (draft-ietf-rohc-tcp-taroc-04 §5.2.1, §5.3, §5.5):
//! a sans-IO state machine. IPv4/TCP and IPv6/TCP packets go in,
//! compressed packets come out; feedback packets from the decompressor go
//! in through [`Compressor::handle_feedback`].
//!
//! Per flow (addresses and ports, one direction) a context holds the state
//! (IR, FO, SO), the sliding window of sent values (VSW), the compression
//! slow-start period F_PERIOD, and the Algorithm SEQ and Algorithm ACK
//! trackers whose W bounds the VSW.

use std::collections::HashMap;

use crate::cwnd::{vsw_bound, AckTracker, SeqTracker, TrackerParams};
use crate::format::{
    crc3, crc8, fold_checksum, CoOptions, CoPacket, Feedback, FeedbackKind, FormatError, IpIdEnc, IrPacket, OptInfo,
    SeqEnc, StaticPart, WindowField, COMPACT_MSN, IPID_TABLE, MAX_CONTEXTS, MSN_K, MSN_P, SEL_COMPACT_SCALED,
    SEL_MSN_SCALED, SEQ_TABLE, SHORT_ACK, SHORT_SEQ, TS_SHORT, TS_TABLE, WINDOW_LSB, WINDOW_SHORT,
};
use crate::infer::{self, ChainedPacket, CrossedPacket, CrossedPackets};
use crate::packet::{Packet, ParseError, TcpIpHeader, FLAG_ACK, FLAG_PSH, FLAG_SYN};
use crate::vsw::{Analysis, Vsw};
use crate::wlsb::{diff32, Lsb, Spread};
use crate::{Mode, PacketKind, Record};

/// Compressor parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompressorConfig {
    pub mode: Mode,
    /// K of W = K·MAX(…) (§5.6.1: "a practical range of K is around 1~2",
    /// "K=1 is good enough for most cases"), in eighths: 8 is K = 1.
    pub k_eighths: u32,
    /// Link MTU; the trackers' MSS estimate is MTU − 40 (§5.1.2).
    pub mtu: u32,
    /// §5.1.4 MAX boundary on cwnd and ssthresh, in bytes.
    pub max_window: u32,
    /// ISSTHRESH (§5.1.2), bounded by `max_window`. The draft allows it
    /// "arbitrarily high", but W ≥ 2·ssthresh, and the trackers' slow start
    /// counts every byte sent as growth, so a high ISSTHRESH keeps every
    /// packet of a short flow (SIP) in the VSW, SYN included, and every
    /// field of it un-STATIC. 0, the default, is 4·MSS of the link's MTU:
    /// slow start ends at IW. It also bounds W while a tracker idles (a
    /// bulk sender's ACK numbers, its receiver's sequence numbers), since
    /// W takes the larger of the two trackers' estimates.
    pub issthresh: u32,
    /// Floor on the VSW's length, in packets: W never shrinks it below
    /// this many, so a burst of fewer losses (§5.6.2 expects bursts under
    /// 8~10 packets) cannot leave the decompressor's reference outside it.
    pub min_vsw: usize,
    /// Hard cap on the VSW's length, in packets (memory bound; with
    /// feedback lost in R-mode nothing else shrinks it).
    pub max_vsw: usize,
    /// Contexts (flows) kept, at most 16 (small CIDs); the least recently
    /// used is reused for a new flow.
    pub max_contexts: usize,
    /// U-mode only: an IR after this many packets in FO/SO (0: never).
    /// Not in the draft, whose U-mode otherwise never refreshes a
    /// decompressor that fell back to No Context; RFC 3095 §5.3.1.1.1's
    /// periodic refresh.
    pub refresh_period: u32,
    /// O-mode only: cross-direction inference ([`crate::infer`]), an
    /// extension beyond the draft that the decompressor must enable too.
    /// The caller passes each packet this end's decompressor delivers to
    /// [`Compressor::note_reverse`], and each [`Compressor::poll_crossed`]
    /// to this end's decompressor.
    pub infer: bool,
}

impl Default for CompressorConfig {
    fn default() -> Self {
        CompressorConfig {
            mode: Mode::U,
            k_eighths: 8,
            mtu: 1500,
            max_window: 65535,
            issthresh: 0,
            min_vsw: 8,
            max_vsw: 128,
            max_contexts: MAX_CONTEXTS,
            refresh_period: 256,
            infer: false,
        }
    }
}

impl CompressorConfig {
    pub fn with_mode(mode: Mode) -> Self {
        CompressorConfig { mode, ..Default::default() }
    }

    /// Whether the chained format is in use ([`crate::infer`]).
    pub fn chains(&self) -> bool {
        self.infer && self.mode == Mode::O
    }

    /// The trackers' parameters for a flow; the MSS estimate is the MTU
    /// less the IP and TCP headers (§5.1.2's MTU − 40 for IPv4, MTU − 60
    /// for IPv6's 40-octet header).
    fn tracker_params(&self, ipv6: bool) -> TrackerParams {
        let headers = if ipv6 { 60 } else { 40 };
        let mss = self.mtu.saturating_sub(headers).max(1);
        let issthresh = if self.issthresh == 0 { 4 * mss } else { self.issthresh };
        TrackerParams { mss, issthresh, max_window: self.max_window }
    }
}

/// The compressor states (§5.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressorState {
    /// Initialization and Refresh: IR/IR-DYN with compression slow-start.
    Ir,
    /// First Order: W-LSB-encoded differences.
    Fo,
    /// Second Order: fixed-payload encoding of the sequence number.
    So,
}

/// Why a packet was not compressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompressError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Format(#[from] FormatError),
}

/// Why feedback was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FeedbackError {
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error("feedback for context {0}, which does not exist")]
    UnknownContext(u8),
}

/// What was sent for one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compressed {
    pub cid: u8,
    pub kind: PacketKind,
    /// Bytes of the output that are header (the rest is the payload).
    pub header_len: usize,
    /// The context's state after the packet.
    pub state: CompressorState,
}

type FlowKey = StaticPart;

struct Context {
    key: FlowKey,
    state: CompressorState,
    vsw: Vsw,
    msn: u16,
    f_period: u32,
    /// Compressed packets sent since the last IR/IR-DYN (slow start).
    since_refresh: u32,
    /// Packets sent in FO/SO since the last IR/IR-DYN (periodic refresh).
    since_ir: u32,
    seq_tracker: SeqTracker,
    ack_tracker: AckTracker,
    /// The context was created by a SYN (§5.2.1.1's fast exit).
    from_syn: bool,
    need_static: bool,
    /// U-mode: the context has left the IR state once, so the static chain
    /// went out in every refresh of a whole slow start and the decompressor
    /// is taken to hold it. Until then a U-mode refresh is an IR, not an
    /// IR-DYN: without feedback nothing tells the compressor that the first
    /// IR was lost, and a decompressor without the static chain refuses
    /// IR-DYN (RFC 3095 §5.3.1.1.1, the optimistic approach: the static
    /// part is repeated until the compressor is confident).
    left_ir: bool,
    /// A NACK asked for an IR-DYN with the next packet.
    refresh_now: bool,
    /// O- and R-mode: feedback acknowledged a packet of this context, so
    /// the decompressor holds the static chain.
    static_acked: bool,
    /// IRs sent since the static chain last went out unacknowledged.
    unacked_irs: u32,
    seq_stride: u16,
    ack_stride: u16,
    last_payload_len: usize,
    last_ack: Option<u32>,
    last_ack_delta: u32,
    last_used: u64,
    /// With inference: the packet sent last, the chained format's
    /// reference.
    last: Option<Record>,
    /// With inference: a NACK came and no ACK since, so the decompressor
    /// may lack the reference a chained packet needs.
    chain_paused: bool,
}

impl Context {
    fn new(key: FlowKey, config: &CompressorConfig, now: u64) -> Context {
        let p = config.tracker_params(key.ipv6.is_some());
        Context {
            key,
            state: CompressorState::Ir,
            vsw: Vsw::with_capacity(32),
            msn: 0,
            f_period: 1,
            since_refresh: 0,
            since_ir: 0,
            seq_tracker: SeqTracker::new(p),
            ack_tracker: AckTracker::new(p),
            from_syn: false,
            need_static: true,
            left_ir: false,
            refresh_now: false,
            static_acked: false,
            unacked_irs: 0,
            seq_stride: 0,
            ack_stride: 0,
            last_payload_len: 0,
            last_ack: None,
            last_ack_delta: 0,
            last_used: now,
            last: None,
            chain_paused: false,
        }
    }

    /// W in bytes (§5.3.1 b).
    fn w(&self, config: &CompressorConfig) -> u64 {
        vsw_bound(&self.seq_tracker, &self.ack_tracker, config.k_eighths)
    }

    fn restart_slow_start(&mut self) {
        self.state = CompressorState::Ir;
        self.f_period = 1;
        self.since_refresh = 0;
    }

    /// Chooses the strides of fixed-payload encoding (§6.1). They change
    /// only when a constant size shows twice, since every change is sent
    /// until the whole VSW carries it.
    fn update_strides(&mut self, h: &TcpIpHeader, payload_len: usize) {
        if payload_len > 0 && payload_len == self.last_payload_len && payload_len <= 0xffff {
            self.seq_stride = payload_len as u16;
        }
        self.last_payload_len = payload_len;
        if h.tcp_flags & FLAG_ACK != 0 {
            if let Some(last) = self.last_ack {
                let delta = h.ack.wrapping_sub(last);
                if delta > 0 && delta <= 0xffff {
                    let s = self.ack_stride as u32;
                    if s == 0 || (delta % s != 0 && delta == self.last_ack_delta) {
                        self.ack_stride = delta as u16;
                    } else if delta % s != 0 && s.is_multiple_of(delta) && delta >= 256 {
                        self.ack_stride = delta as u16; // 2·MSS then MSS: the divisor
                    }
                    self.last_ack_delta = delta;
                }
            }
            self.last_ack = Some(h.ack);
        }
    }
}

/// A SEQ or ACK number's spreads over the VSW: of the number, of its
/// fixed-payload m and of m − MSN (`None` where the strides or remainders
/// differ), and whether fixed-payload encodings may be used.
#[derive(Clone, Copy)]
struct NumberSpreads<'a> {
    value: &'a Spread,
    fp: Option<&'a Spread>,
    scaled: Option<&'a Spread>,
    allow_fp: bool,
}

impl NumberSpreads<'_> {
    #[inline(always)]
    fn covered_by(&self, enc: &SeqEnc) -> bool {
        match enc {
            SeqEnc::Lsb(l) => l.covers(self.value),
            SeqEnc::Irregular => true,
            SeqEnc::FixedPayload(l) => self.allow_fp && self.fp.is_some_and(|s| l.covers(s)),
            SeqEnc::MsnScaled(l) => self.allow_fp && self.scaled.is_some_and(|s| l.covers(s)),
        }
    }
}

/// The indices of `SEQ_TABLE`'s general-format encodings (0–7) from the
/// cheapest (fewest bits, then lowest index): the first that covers is
/// the cheapest that does.
const SEQ_BY_COST: [u8; 8] = [0, 5, 1, 6, 7, 2, 3, 4];

/// The cheapest encoding of `SEQ_TABLE[..selectors]` that covers the VSW
/// (IRREGULAR, index 4, always does). Inlined so that the loop unrolls
/// over the constant table and each test is two comparisons.
#[inline(always)]
fn pick_seq(n: NumberSpreads, selectors: usize) -> (u8, SeqEnc) {
    for &i in &SEQ_BY_COST {
        let enc = SEQ_TABLE[i as usize];
        if (i as usize) < selectors && n.covered_by(&enc) {
            return (i, enc);
        }
    }
    (4, SeqEnc::Irregular)
}

/// The cheapest of the `SEQ_TABLE` encodings `among` that covers the VSW;
/// `among` is in increasing order of bits (the short format's tables), so
/// the first that covers is.
#[inline]
fn pick_among(among: &[u8; 4], n: NumberSpreads) -> Option<(u8, SeqEnc)> {
    among.iter().map(|&i| (i, SEQ_TABLE[i as usize])).find(|(_, enc)| n.covered_by(enc))
}

/// The bits `enc` sends of number `v` of a packet with MSN `msn`; `m` is
/// v / stride ([`Record::fp`]: fixed-payload encodings only cover the VSW
/// with a stride).
fn lsb_bits(v: u32, enc: &SeqEnc, m: u32, msn: u16) -> u32 {
    match enc {
        SeqEnc::Lsb(l) => v & ((1u64 << l.k) - 1) as u32,
        SeqEnc::Irregular => v,
        SeqEnc::FixedPayload(l) => m & ((1u32 << l.k) - 1),
        SeqEnc::MsnScaled(l) => m.wrapping_sub(msn as u32) & ((1u32 << l.k) - 1),
    }
}

/// The TAROC compressor for every flow of one link direction.
pub struct Compressor {
    config: CompressorConfig,
    /// Contexts by CID, boxed: a free CID costs a pointer, not a context
    /// (a replayed connection uses one CID of [`MAX_CONTEXTS`]).
    contexts: Vec<Option<Box<Context>>>,
    by_flow: HashMap<FlowKey, u8>,
    /// The context of the previous packet.
    last_cid: u8,
    clock: u64,
    /// With inference: the other direction's packets this end delivered.
    crossed: CrossedPackets,
    /// With inference: the packet sent last, for this end's decompressor.
    sent: Option<CrossedPacket>,
}

impl Compressor {
    pub fn new(config: CompressorConfig) -> Compressor {
        let n = config.max_contexts.clamp(1, MAX_CONTEXTS);
        Compressor {
            config,
            contexts: (0..n).map(|_| None).collect(),
            by_flow: HashMap::new(),
            last_cid: 0,
            clock: 0,
            crossed: CrossedPackets::default(),
            sent: None,
        }
    }

    /// With inference: a packet of the other direction that this end's
    /// decompressor delivered ([`Decompressor::poll_crossed`](crate::Decompressor::poll_crossed)).
    pub fn note_reverse(&mut self, p: &CrossedPacket) {
        if self.config.chains() {
            self.crossed.note(*p);
        }
    }

    /// With inference: the packet compressed last, for this end's
    /// decompressor ([`Decompressor::note_reverse`](crate::Decompressor::note_reverse)).
    pub fn poll_crossed(&mut self) -> Option<CrossedPacket> {
        self.sent.take()
    }

    pub fn config(&self) -> &CompressorConfig {
        &self.config
    }

    /// The state of context `cid`, if it exists.
    pub fn state(&self, cid: u8) -> Option<CompressorState> {
        self.contexts.get(cid as usize)?.as_ref().map(|c| c.state)
    }

    /// The context of the packet compressed last, if any.
    pub fn last_context(&self) -> Option<u8> {
        self.state(self.last_cid).map(|_| self.last_cid)
    }

    /// The VSW's length of context `cid`.
    pub fn vsw_len(&self, cid: u8) -> usize {
        self.contexts.get(cid as usize).and_then(|c| c.as_ref()).map_or(0, |c| c.vsw.len())
    }

    /// The estimated (cwnd, ssthresh) of Algorithm SEQ and of Algorithm ACK.
    pub fn windows(&self, cid: u8) -> Option<[(u32, u32); 2]> {
        let c = self.contexts.get(cid as usize)?.as_ref()?;
        Some([(c.seq_tracker.cwnd, c.seq_tracker.ssthresh), (c.ack_tracker.cwnd, c.ack_tracker.ssthresh)])
    }

    fn context_for(&mut self, key: FlowKey) -> u8 {
        self.clock += 1;
        // Consecutive packets mostly belong to one flow: no hashing then.
        let last = self.last_cid as usize;
        if self.contexts.get(last).and_then(|c| c.as_ref()).is_some_and(|c| c.key == key) {
            return last as u8;
        }
        if let Some(&cid) = self.by_flow.get(&key) {
            self.last_cid = cid;
            return cid;
        }
        let cid = match self.contexts.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                let lru = (0..self.contexts.len())
                    .min_by_key(|&i| self.contexts[i].as_ref().map_or(0, |c| c.last_used))
                    .unwrap_or(0);
                if let Some(old) = &self.contexts[lru] {
                    self.by_flow.remove(&old.key);
                }
                lru
            }
        };
        self.contexts[cid] = Some(Box::new(Context::new(key, &self.config, self.clock)));
        self.by_flow.insert(key, cid as u8);
        self.last_cid = cid as u8;
        cid as u8
    }

    /// Compresses one IPv4/TCP or IPv6/TCP packet, appending the compressed
    /// packet (header and payload) to `out`.
    pub fn compress(&mut self, frame: &[u8], out: &mut Vec<u8>) -> Result<Compressed, CompressError> {
        let packet = Packet::parse(frame)?;
        let key = StaticPart::of(&packet.header);
        let cid = self.context_for(key);
        let config = self.config;
        let clock = self.clock;
        let Some(ctx) = self.contexts[cid as usize].as_mut() else { unreachable!("context_for fills the slot") };
        ctx.last_used = clock;
        let payload_len = packet.payload.len();
        if ctx.vsw.is_empty() && packet.header.tcp_flags & FLAG_SYN != 0 {
            ctx.from_syn = true;
        }
        ctx.update_strides(&packet.header, payload_len);
        ctx.msn = ctx.msn.wrapping_add(1);
        let opt = OptInfo::of(&packet.header.options);
        // The header goes into the record once; what is read of it below
        // is copied out (the header is some hundred octets).
        let mut rec = Record {
            msn: ctx.msn,
            h: packet.header,
            opt,
            ts: opt.ts(&packet.header.options),
            strides: (ctx.seq_stride, ctx.ack_stride),
            payload_len: payload_len as u16,
            sent_as_ir: false,
            fp: [(0, 0); 2],
        };
        rec.set_fp();
        let (seq, ack, tcp_flags, header_len, ipv6) =
            (rec.h.seq, rec.h.ack, rec.h.tcp_flags, rec.h.len(), rec.h.is_ipv6());
        let long_jump =
            ctx.seq_tracker.is_long_jump(seq) || (tcp_flags & FLAG_ACK != 0 && ctx.ack_tracker.is_long_jump(ack));
        let a = ctx.vsw.analyse(&rec);

        let kind = if ctx.need_static || ctx.vsw.is_empty() {
            ctx.restart_slow_start();
            PacketKind::Ir
        } else if ctx.refresh_now {
            PacketKind::IrDyn
        } else if long_jump {
            // §5.3.2 c / §5.3.3 c: a long jump re-enters IR and
            // re-initialises the trackers (below).
            ctx.restart_slow_start();
            PacketKind::IrDyn
        } else {
            match ctx.state {
                CompressorState::Ir => {
                    if ctx.vsw.retransmits_ir(&rec) {
                        PacketKind::IrDyn // §5.3.1 a 2
                    } else if ctx.from_syn && payload_len > 0 && config.mode != Mode::R {
                        // §5.2.1.1: the first data segment after the SYN
                        // shows the handshake crossed the link.
                        ctx.state = CompressorState::Fo;
                        PacketKind::Co
                    } else if ctx.since_refresh >= ctx.f_period {
                        // §5.3.1 c: F_PERIOD doubles after F_PERIOD
                        // compressed packets; past W, leave IR (in R-mode
                        // only an ACK(R) does, §5.5.3.1).
                        ctx.f_period = ctx.f_period.saturating_mul(2);
                        let w_packets = ctx.w(&config) / config.tracker_params(ipv6).mss as u64;
                        if config.mode != Mode::R && ctx.f_period as u64 > w_packets {
                            ctx.state = CompressorState::Fo;
                            PacketKind::Co
                        } else {
                            PacketKind::IrDyn
                        }
                    } else {
                        PacketKind::Co
                    }
                }
                CompressorState::Fo | CompressorState::So => {
                    if a.falls_behind {
                        ctx.restart_slow_start(); // §5.3.2 a, §5.3.3 a
                        PacketKind::IrDyn
                    } else if config.mode == Mode::U
                        && config.refresh_period > 0
                        && ctx.since_ir >= config.refresh_period
                    {
                        // With the static chain: without feedback nothing
                        // else repairs a decompressor that lost the IR.
                        PacketKind::Ir
                    } else {
                        PacketKind::Co
                    }
                }
            }
        };

        // IR rather than IR-DYN or a compressed packet while the
        // decompressor may lack the static chain, which both need
        // (§5.4.1; without it they are refused and cost a STATIC-NACK's
        // round trip). U-mode: an IR-DYN until the context first leaves
        // IR, as nothing says the chain arrived. O- and R-mode: until
        // feedback shows it arrived, every IR-DYN, and the packets TCP may
        // send before any feedback can come back (its initial window,
        // RFC 3390, which §5.1.4's MIN follows): losing those to a lost
        // first IR, TCP would wait for its timeout where a single loss
        // costs a fast retransmit. The draft's slow-start (§5.3.1)
        // assumes the static chain arrived.
        let kind = match config.mode {
            Mode::U if kind == PacketKind::IrDyn && !ctx.left_ir => PacketKind::Ir,
            Mode::O | Mode::R
                if !ctx.static_acked
                    && (kind == PacketKind::IrDyn || ctx.unacked_irs < initial_window_packets(&config, ipv6)) =>
            {
                PacketKind::Ir
            }
            _ => kind,
        };

        // §5.3.2 d, §5.3.3 d: SO while fixed-payload encoding applies.
        if kind == PacketKind::Co && ctx.state != CompressorState::Ir {
            ctx.left_ir = true;
            ctx.state = if a.seq_fp.is_some() && rec.strides.0 != 0 && payload_len == rec.strides.0 as usize {
                CompressorState::So
            } else {
                CompressorState::Fo
            };
        }

        let start = out.len();
        match kind {
            PacketKind::Ir | PacketKind::IrDyn => {
                let ir = IrPacket {
                    cid,
                    static_part: (kind == PacketKind::Ir).then_some(key),
                    msn: rec.msn,
                    header: rec.h,
                    strides: rec.strides,
                    crc: crc8(&frame[..header_len]),
                    payload: packet.payload,
                };
                ir.emit(out);
                rec.sent_as_ir = true;
                ctx.need_static &= kind != PacketKind::Ir;
                ctx.unacked_irs += (kind == PacketKind::Ir) as u32;
                ctx.refresh_now = false;
                ctx.since_refresh = 0;
                ctx.since_ir = 0;
            }
            PacketKind::Co => {
                let chains = config.chains();
                let co = encode_co(cid, &rec, &a, ctx.state == CompressorState::So, chains, packet.payload);
                co.emit(rec.shape(), &frame[..header_len], out)?;
                if let Some(prev) = ctx.last.as_ref().filter(|_| chains && ctx.static_acked && !ctx.chain_paused) {
                    let regular = out.len() - start - payload_len - (cid != 0) as usize;
                    let chained = infer::encode(&rec, prev, &self.crossed, &key);
                    if let Some(c) = chained.filter(|c| c.header_len() + infer::MIN_SAVING <= regular) {
                        let crc = crc3(&frame[..header_len]);
                        let c = ChainedPacket { cid, crc, checksum: co.checksum, payload: packet.payload, ..c };
                        out.truncate(start);
                        c.emit(out)?;
                    }
                }
                ctx.since_refresh += 1;
                ctx.since_ir += 1;
            }
        }
        let header_len = out.len() - start - payload_len;
        if config.chains() {
            ctx.last = Some(rec);
            self.sent = Some(CrossedPacket::of(&rec, key));
        }

        // §5.3.1 b, §5.3.2 b: the packet joins the VSW; the trackers run;
        // the VSW shrinks to W.
        ctx.vsw.push_analysed(&rec, &a);
        if long_jump {
            let p = config.tracker_params(ipv6);
            ctx.seq_tracker = SeqTracker::new(p);
            ctx.ack_tracker = AckTracker::new(p);
        }
        ctx.seq_tracker.on_segment(seq);
        if tcp_flags & FLAG_ACK != 0 {
            ctx.ack_tracker.on_segment(ack, payload_len == 0);
        }
        if config.mode != Mode::R {
            // In R-mode only ACK(R)s shrink the VSW (§5.5.3.1).
            let w = ctx.w(&config) as i64;
            let (max_seq, max_ack) = (ctx.seq_tracker.cmaxsn, ctx.ack_tracker.cmaxack);
            let ack_started = ctx.ack_tracker.started;
            let acked_past_w = |e: &crate::vsw::Entry| ack_started && e.has_ack && diff32(max_ack, e.ack) > w;
            while ctx.vsw.len() > config.min_vsw.max(1) {
                // A packet without the ACK flag (a SYN) has no ACK number
                // to test: it is older than every ACK after it, so it
                // leaves with the first of them that W passes. Its ACK
                // field, 0 or anything, must not decide: 0 lies more than
                // 2^31 behind half of all ACK numbers, and a SYN that
                // never left would hold its options and every packet
                // behind it in the VSW.
                let leaves = {
                    let mut entries = ctx.vsw.iter();
                    let Some(f) = entries.next() else { break };
                    diff32(max_seq, f.seq) > w
                        || acked_past_w(f)
                        || (!f.has_ack && entries.next().is_some_and(acked_past_w))
                };
                if leaves {
                    ctx.vsw.drop_front(1);
                } else {
                    break;
                }
            }
        }
        if ctx.vsw.len() > config.max_vsw.max(1) {
            ctx.vsw.drop_front(ctx.vsw.len() - config.max_vsw.max(1));
        }
        Ok(Compressed { cid, kind, header_len, state: ctx.state })
    }

    /// Applies a feedback packet from the decompressor (§5.5.2.1, §5.5.3.1).
    pub fn handle_feedback(&mut self, data: &[u8]) -> Result<FeedbackKind, FeedbackError> {
        let fb = Feedback::parse(data)?;
        let mode = self.config.mode;
        let ctx = self
            .contexts
            .get_mut(fb.cid as usize)
            .and_then(|c| c.as_mut())
            .ok_or(FeedbackError::UnknownContext(fb.cid))?;
        match fb.kind {
            FeedbackKind::Ack => {
                // Valid only for a packet sent earlier and still in the
                // VSW; the checksum guards against a corrupted MSN.
                if let Some((pos, acked_ir)) = ctx.vsw.find(fb.msn, fb.checksum).map(|(pos, e)| (pos, e.sent_as_ir)) {
                    ctx.vsw.drop_front(pos);
                    ctx.static_acked = true;
                    ctx.chain_paused = false;
                    // The IR state ends with an ACK of an IR/IR-DYN: ACK(O)
                    // in O-mode (§5.5.2.1), ACK(R) in R-mode (§5.5.3.1).
                    if ctx.state == CompressorState::Ir && acked_ir && fb.reliable == (mode == Mode::R) {
                        ctx.state = CompressorState::Fo;
                    }
                }
            }
            // The draft's R-mode section (§5.5.3.1) says "Upon receiving an
            // NACK(O)"; in R-mode the decompressor sends NACK(R)
            // (§5.5.3.2), which is what is meant: either returns to IR.
            // With inference, a NACK whose reference the VSW still holds
            // is mostly a chained packet that lost the packet before it:
            // the context is in step for the other formats (§6.1), so one
            // IR-DYN, whose ACK(O) restarts the chaining, without a
            // compression slow start.
            FeedbackKind::Nack if self.config.chains() && ctx.vsw.find(fb.msn, fb.checksum).is_some() => {
                ctx.refresh_now = true;
                ctx.chain_paused = true;
            }
            FeedbackKind::Nack => {
                ctx.restart_slow_start();
                ctx.refresh_now = true;
                ctx.chain_paused = true;
            }
            FeedbackKind::StaticNack => {
                ctx.restart_slow_start();
                ctx.chain_paused = true;
                ctx.need_static = true;
                ctx.static_acked = false;
                ctx.unacked_irs = 0;
            }
        }
        Ok(fb.kind)
    }
}

/// SEQ's spreads; fixed-payload encodings only in SO (§5.3.2 d).
fn seq_spreads(a: &Analysis, so: bool) -> NumberSpreads<'_> {
    NumberSpreads { value: &a.seq, fp: a.seq_fp.as_ref(), scaled: a.seq_scaled.as_ref(), allow_fp: so }
}

/// ACK's spreads: fixed-payload encoding of the ACK number (§6.1 names both
/// numbers) needs no state, its stride travels with the packets.
fn ack_spreads(a: &Analysis) -> NumberSpreads<'_> {
    NumberSpreads { value: &a.ack, fp: a.ack_fp.as_ref(), scaled: a.ack_scaled.as_ref(), allow_fp: true }
}

/// The packets of TCP's initial window on this context's link (RFC 3390,
/// §5.1.4's MIN).
fn initial_window_packets(config: &CompressorConfig, ipv6: bool) -> u32 {
    let p = config.tracker_params(ipv6);
    p.iw().div_ceil(p.mss).max(1)
}

/// `chains`: the chained format is in use, and takes the general format's
/// SEQ selector 5 ([`crate::infer`]).
fn encode_co<'a>(cid: u8, rec: &Record, a: &Analysis, so: bool, chains: bool, payload: &'a [u8]) -> CoPacket<'a> {
    let short = encode_short(cid, rec, a, so, payload);
    #[cfg(any(test, debug_assertions))]
    {
        // The short format's shortcut decides as the general encoding
        // shortened does.
        let general = encode_general(cid, rec, a, so, chains, payload);
        let long = shorten(general, rec, a, so);
        match short {
            Some(co) => assert_eq!(format!("{co:?}"), format!("{long:?}")),
            None => assert_eq!(format!("{general:?}"), format!("{long:?}")),
        }
    }
    match short {
        Some(co) => co,
        None => encode_general(cid, rec, a, so, chains, payload),
    }
}

/// The packet in the short format if it fits: what [`shorten`] makes of
/// the general encoding when it fits, without the general encoding's
/// choices (SEQ, ACK, IP-ID, timestamp selectors) that it replaces.
fn encode_short<'a>(cid: u8, rec: &Record, a: &Analysis, so: bool, payload: &'a [u8]) -> Option<CoPacket<'a>> {
    let h = &rec.h;
    let static_lsb = Lsb::new(0, 0);
    // shorten's `fits`: MSN in 7 bits, nothing but what the short format
    // carries changed, compact options without SACK blocks.
    let msn_fits = Lsb::new(4, MSN_P).covers(&a.msn) || Lsb::new(7, MSN_P).covers(&a.msn);
    if !(msn_fits
        && a.flags_static
        && a.ip_static
        && a.urgent_static
        && a.strides_static
        && a.skeleton_static
        && rec.opt.sack_n == 0)
    {
        return None;
    }
    let ip_id = short_ip_id(rec, a)?;
    let window = if static_lsb.covers(&a.win) {
        WindowField::Static
    } else if WINDOW_SHORT.covers(&a.win) {
        WindowField::Short(h.window as u32 & ((1 << WINDOW_SHORT.k) - 1))
    } else {
        return None;
    };
    // The general encoding's timestamps are both STATIC (or absent): kept;
    // else both in TS_SHORT.
    let ts = if rec.opt.ts_at.is_none() || (static_lsb.covers(&a.ts[0]) && static_lsb.covers(&a.ts[1])) {
        [(0, 0), (0, 0)]
    } else if a.ts.iter().all(|s| TS_SHORT.covers(s)) {
        let mask = (1u32 << TS_SHORT.k) - 1;
        [(4, rec.ts.0 & mask), (4, rec.ts.1 & mask)]
    } else {
        return None;
    };
    let (seq_sel, seq_enc) = pick_among(&SHORT_SEQ, seq_spreads(a, so))?;
    let (ack_sel, ack_enc) = pick_among(&SHORT_ACK, ack_spreads(a))?;
    Some(CoPacket {
        cid,
        msn: (rec.msn as u32 & 0x7f, 7),
        ip_id,
        seq: (compact_selector(seq_sel, seq_spreads(a, so), a), lsb_bits(h.seq, &seq_enc, rec.fp[0].0, rec.msn)),
        ack: (compact_selector(ack_sel, ack_spreads(a), a), lsb_bits(h.ack, &ack_enc, rec.fp[1].0, rec.msn)),
        window,
        psh: h.tcp_flags & FLAG_PSH != 0,
        flags: None,
        ip: None,
        urgent: None,
        strides: None,
        options: CoOptions::Compact { ts, sack_n: 0, sack: [(0, 0); 4] },
        checksum: fold_checksum(h.checksum, h, rec.msn, rec.strides),
        crc: (0, 0),
        payload,
    })
}

/// The short format's IP-ID: STATIC as an offset from the MSN (4) or as
/// a value (5, also IPv6's absent IP-ID), if either covers the VSW.
fn short_ip_id(rec: &Record, a: &Analysis) -> Option<(u8, u32)> {
    let static_lsb = Lsb::new(0, 0);
    if rec.h.ipv6.is_some() {
        Some((5, 0))
    } else if static_lsb.covers(&a.ipid_off) {
        Some((4, 0))
    } else if static_lsb.covers(&a.ipid_raw) {
        Some((5, 0))
    } else {
        None
    }
}

/// The short format's selector `sel` for a number, or
/// [`SEL_COMPACT_SCALED`] where it is MSN-scaled and its m − MSN, and the
/// MSN, spread little enough over the VSW for the compact format (the
/// short format still sends [`MSN_SCALED`](crate::format::MSN_SCALED)'s
/// bits if the compact one does not fit).
fn compact_selector(sel: u8, n: NumberSpreads, a: &Analysis) -> u8 {
    if sel == SEL_MSN_SCALED && COMPACT_MSN.covers(&a.msn) && n.covered_by(&SEQ_TABLE[SEL_COMPACT_SCALED as usize]) {
        SEL_COMPACT_SCALED
    } else {
        sel
    }
}

/// The general format's encoding.
fn encode_general<'a>(cid: u8, rec: &Record, a: &Analysis, so: bool, chains: bool, payload: &'a [u8]) -> CoPacket<'a> {
    let h = &rec.h;
    let ipv6 = h.ipv6.is_some();
    // Each table below is tried in order, the first encoding that covers
    // the VSW taken; the tests are spelled out per index so that each is
    // two comparisons with constants.
    let msn_fits = |k: u32| Lsb::new(k, MSN_P).covers(&a.msn);
    let msn_k = if msn_fits(MSN_K[0]) {
        MSN_K[0]
    } else if msn_fits(MSN_K[1]) {
        MSN_K[1]
    } else {
        MSN_K[2]
    };
    // IPv6 has no IP-ID (held as 0): "unchanged", which sends no bits.
    let (ipid_sel, ipid_enc) = if ipv6 {
        (5, IPID_TABLE[5])
    } else {
        let fits = |i: usize| match IPID_TABLE[i] {
            IpIdEnc::Offset(l) => l.covers(&a.ipid_off),
            IpIdEnc::Raw(l) => l.covers(&a.ipid_raw),
            IpIdEnc::Irregular => true,
        };
        let i = if fits(0) {
            0
        } else if fits(1) {
            1
        } else if fits(2) {
            2
        } else {
            3
        };
        (i as u8, IPID_TABLE[i])
    };
    let ipid_bits = match ipid_enc {
        IpIdEnc::Offset(l) => h.ip_id.wrapping_sub(rec.msn) as u32 & ((1u32 << l.k) - 1),
        IpIdEnc::Raw(l) => h.ip_id as u32 & ((1u32 << l.k) - 1),
        IpIdEnc::Irregular => h.ip_id as u32,
    };
    // The general format's SEQ selector is 0–5: its first octet is then
    // below 0xE0 (IR, IR-DYN, Add-CID and feedback); 0–4 where the
    // chained format takes 5's first nibble.
    let (seq_sel, seq_enc) = pick_seq(seq_spreads(a, so), if chains { 5 } else { 6 });
    // Fixed-payload encoding of the ACK number (§6.1 names both numbers)
    // needs no state: its stride travels with the packets.
    let (ack_sel, ack_enc) = pick_seq(ack_spreads(a), 8);
    let window = if Lsb::new(0, 0).covers(&a.win) {
        WindowField::Static
    } else if WINDOW_LSB.covers(&a.win) {
        WindowField::Lsb(h.window as u32 & 0xfff)
    } else {
        WindowField::Irregular(h.window)
    };
    let options = if a.skeleton_static {
        let mut ts = [(0u8, 0u32); 2];
        if rec.opt.ts_at.is_some() {
            for (i, v) in [rec.ts.0, rec.ts.1].into_iter().enumerate() {
                let fits = |j: usize| TS_TABLE[j].is_none_or(|l| l.covers(&a.ts[i]));
                let sel = if fits(0) {
                    0
                } else if fits(1) {
                    1
                } else if fits(2) {
                    2
                } else {
                    3
                };
                let bits = TS_TABLE[sel].map_or(v, |l| v & ((1u64 << l.k) - 1) as u32);
                ts[i] = (sel as u8, bits);
            }
        }
        let mut sack = [(0u32, 0u32); 4];
        for (i, s) in sack.iter_mut().enumerate().take(rec.opt.sack_n.min(4) as usize) {
            let (l, r) = rec.opt.sack(&h.options, i);
            *s = (l.wrapping_sub(h.ack), r.wrapping_sub(l));
        }
        CoOptions::Compact { ts, sack_n: rec.opt.sack_n, sack }
    } else {
        CoOptions::Raw(h.options)
    };
    CoPacket {
        cid,
        msn: (rec.msn as u32 & ((1u32 << msn_k) - 1), msn_k),
        ip_id: (ipid_sel, ipid_bits),
        seq: (seq_sel, lsb_bits(h.seq, &seq_enc, rec.fp[0].0, rec.msn)),
        ack: (ack_sel, lsb_bits(h.ack, &ack_enc, rec.fp[1].0, rec.msn)),
        window,
        psh: h.tcp_flags & FLAG_PSH != 0,
        flags: (!a.flags_static).then_some((h.tcp_res, h.tcp_flags)),
        ip: (!a.ip_static).then_some((h.tos, h.ttl, h.flags_frag)),
        urgent: (!a.urgent_static).then_some(h.urgent),
        strides: (!a.strides_static).then_some(rec.strides),
        options,
        checksum: fold_checksum(h.checksum, h, rec.msn, rec.strides),
        crc: (0, 0),
        payload,
    }
}

/// The packet with the short format's encodings where they cover the VSW
/// (STATIC IP-ID, [`WINDOW_SHORT`], [`TS_SHORT`]), so that it fits the
/// short format if nothing else keeps it out: the definition
/// [`encode_short`] is checked against in tests and debug builds.
#[cfg(any(test, debug_assertions))]
fn shorten<'a>(co: CoPacket<'a>, rec: &Record, a: &Analysis, so: bool) -> CoPacket<'a> {
    let fits = co.msn.1 <= 7
        && co.flags.is_none()
        && co.ip.is_none()
        && co.urgent.is_none()
        && co.strides.is_none()
        && matches!(co.options, CoOptions::Compact { sack_n: 0, .. });
    if !fits {
        return co;
    }
    let h = &rec.h;
    let Some((seq_sel, seq_enc)) = pick_among(&SHORT_SEQ, seq_spreads(a, so)) else { return co };
    let Some((ack_sel, ack_enc)) = pick_among(&SHORT_ACK, ack_spreads(a)) else { return co };
    let seq = (compact_selector(seq_sel, seq_spreads(a, so), a), lsb_bits(h.seq, &seq_enc, rec.fp[0].0, rec.msn));
    let ack = (compact_selector(ack_sel, ack_spreads(a), a), lsb_bits(h.ack, &ack_enc, rec.fp[1].0, rec.msn));
    let Some(ip_id) = short_ip_id(rec, a) else { return co };
    let window = match co.window {
        WindowField::Static => WindowField::Static,
        _ if WINDOW_SHORT.covers(&a.win) => WindowField::Short(rec.h.window as u32 & ((1 << WINDOW_SHORT.k) - 1)),
        _ => return co,
    };
    let options = match co.options {
        CoOptions::Compact { ts: [(0, _), (0, _)], .. } => co.options,
        CoOptions::Compact { sack, .. } if rec.opt.ts_at.is_some() && a.ts.iter().all(|s| TS_SHORT.covers(s)) => {
            let mask = (1u32 << TS_SHORT.k) - 1;
            CoOptions::Compact { ts: [(4, rec.ts.0 & mask), (4, rec.ts.1 & mask)], sack_n: 0, sack }
        }
        _ => return co,
    };
    let msn = (rec.msn as u32 & 0x7f, 7);
    CoPacket { msn, ip_id, seq, ack, window, options, ..co }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compresses flows of every kind in every mode: `encode_co` checks
    /// its short-format shortcut against the general encoding shortened.
    #[test]
    fn the_short_format_shortcut_agrees_with_shortening() {
        use crate::synth::{bulk_transfer, sip_over_tcp, FlowOptions, IpIdStyle};
        let flows = [
            bulk_transfer(300, 1460, 29, FlowOptions::default()),
            bulk_transfer(
                200,
                536,
                0,
                FlowOptions { ip_id: IpIdStyle::Random, timestamps: false, ..Default::default() },
            ),
            sip_over_tcp(20, FlowOptions::default()),
            sip_over_tcp(20, FlowOptions { ip_id: IpIdStyle::Zero, ..Default::default() }),
        ];
        for mode in [Mode::U, Mode::O, Mode::R] {
            for flow in &flows {
                let mut c = Compressor::new(CompressorConfig::with_mode(mode));
                let mut out = Vec::new();
                for (_, p) in flow {
                    out.clear();
                    c.compress(p, &mut out).unwrap();
                }
            }
        }
    }

    /// `encode_general` takes the last encoding of its MSN, IP-ID and
    /// timestamp tables without a test: it must cover any VSW.
    #[test]
    fn the_last_encodings_tried_cover_everything() {
        assert_eq!(MSN_K[2], 16);
        assert_eq!(IPID_TABLE[3], IpIdEnc::Irregular);
        assert_eq!(TS_TABLE[3], None);
    }

    #[test]
    fn encodings_are_tried_cheapest_first() {
        let mut by_cost: Vec<u8> = (0..8).collect();
        by_cost.sort_by_key(|&i| (SEQ_TABLE[i as usize].bits(), i));
        assert_eq!(by_cost, SEQ_BY_COST);
        for table in [SHORT_SEQ, SHORT_ACK] {
            assert!(table.windows(2).all(|w| SEQ_TABLE[w[0] as usize].bits() < SEQ_TABLE[w[1] as usize].bits()));
        }
    }
}
