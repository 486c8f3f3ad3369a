//! The TAROC compressor (draft-ietf-rohc-tcp-taroc-04 §5.2.1, §5.3, §5.5):
//! a sans-IO state machine. IPv4/TCP and IPv6/TCP packets go in,
//! compressed packets come out; feedback packets from the decompressor go
//! in through [`Compressor::handle_feedback`].
//!
//! Per flow (addresses and ports, one direction) a context holds the state
//! (IR, FO, SO), the sliding window of sent values (VSW), the compression
//! slow-start period F_PERIOD, and the Algorithm SEQ and Algorithm ACK
//! trackers whose W bounds the VSW.

mod encode;

use std::collections::HashMap;

use crate::cwnd::{vsw_bound, AckTracker, SeqTracker, TrackerParams};
use crate::format::{
    crc3, crc8, Base, Feedback, FeedbackKind, FormatError, IrPacket, OptInfo, StaticPart, Template, MAX_CONTEXTS,
};
use crate::infer::{self, ChainedPacket, CrossedPacket, CrossedPackets};
use crate::packet::{Packet, ParseError, TcpIpHeader, FLAG_ACK, FLAG_SYN};
use crate::vsw::{Analysis, Vsw};
use crate::wlsb::diff32;
use crate::{Mode, PacketKind, Record};
use encode::encode_co;

/// Compressor parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompressorConfig {
    /// The mode of operation, U, O or R (§5.5); the decompressor's must
    /// match.
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
    /// U- and O-mode: the VSW holds at most this many packets, the last
    /// sent (the optimistic approach, RFC 3095 §5.3.1.1.1). A burst of
    /// that many losses may leave the decompressor's reference behind it:
    /// the CRC then refuses the packets until a refresh (U-mode) or the
    /// NACK's IR-DYN (O-mode). The draft's W alone, sized for TCP's
    /// window, holds every packet of a short flow, and fields must be
    /// covered over all of them.
    pub optimistic_window: usize,
    /// U- and O-mode: a change of a field the compressed formats need
    /// STATIC (options, flags, IP fields, strides) is taken to have
    /// arrived once this many packets carried it, and the references
    /// before it leave the VSW.
    pub optimistic_settle: usize,
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
            optimistic_window: 8,
            optimistic_settle: 4,
            max_contexts: MAX_CONTEXTS,
            refresh_period: 256,
            infer: false,
        }
    }
}

impl CompressorConfig {
    /// The defaults with `mode`.
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
    /// The packet is not a TCP/IP packet TAROC compresses.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A field does not fit the compressed format.
    #[error(transparent)]
    Format(#[from] FormatError),
}

/// Why feedback was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FeedbackError {
    /// The bytes are not a feedback packet (§5.5).
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Feedback for a CID with no context here; holds the CID.
    #[error("feedback for context {0}, which does not exist")]
    UnknownContext(u8),
}

/// What was sent for one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compressed {
    /// The context's CID, 0..=15.
    pub cid: u8,
    /// IR, IR-DYN or compressed.
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
    /// How many segments in a row had the size of the one before them and
    /// followed it.
    payload_len_repeats: u32,
    last_seq: Option<u32>,
    last_ack: Option<u32>,
    last_ack_delta: u32,
    last_used: u64,
    /// With inference: the packet sent last, the chained format's
    /// reference.
    last: Option<Record>,
    /// With inference: a NACK came and no ACK since, so the decompressor
    /// may lack the reference a chained packet needs.
    chain_paused: bool,
    /// The last SYN or SYN-ACK sent, by its MSN: what an IR-CR of a later
    /// connection can take from this context.
    template: Option<(u16, Template)>,
    /// Feedback acknowledged the packet `template` came from, so the
    /// decompressor holds it.
    template_acked: bool,
    /// A STATIC-NACK came: the decompressor may lack what an IR-CR or
    /// IR-REV takes from elsewhere, so IRs go whole until an ACK.
    whole_irs: bool,
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
            payload_len_repeats: 0,
            last_seq: None,
            last_ack: None,
            last_ack_delta: 0,
            last_used: now,
            last: None,
            chain_paused: false,
            template: None,
            template_acked: false,
            whole_irs: false,
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

    /// Chooses the strides of fixed-payload encoding (§6.1). The SEQ
    /// stride changes only when three segments in a row have one size,
    /// each following the one before, since every change is sent until
    /// the whole VSW carries it.
    fn update_strides(&mut self, h: &TcpIpHeader, payload_len: usize) {
        // Three segments of one size in a row, each following the one
        // before: two equal sizes are as often a retransmission or two
        // messages of one size (SIP), and a stride change costs the
        // general format and 4 octets.
        let runs = payload_len == self.last_payload_len
            && self.last_seq.is_some_and(|s| h.seq.wrapping_sub(s) == self.last_payload_len as u32);
        if payload_len > 0 && runs && self.payload_len_repeats >= 1 && payload_len <= 0xffff {
            self.seq_stride = payload_len as u16;
        }
        self.payload_len_repeats = if runs { self.payload_len_repeats.saturating_add(1) } else { 0 };
        self.last_seq = Some(h.seq);
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

    /// The kind of packet the next one goes as (§5.3): IR, IR-DYN or
    /// compressed, by the compressor's state, the window's analysis `a` of
    /// `rec`, and whether a sequence or acknowledgment number jumped far.
    fn choose_kind(&mut self, config: &CompressorConfig, rec: &Record, a: &Analysis, long_jump: bool) -> PacketKind {
        let payload_len = usize::from(rec.payload_len);
        let ipv6 = rec.h.is_ipv6();
        let kind = if self.need_static || self.vsw.is_empty() {
            self.restart_slow_start();
            PacketKind::Ir
        } else if self.refresh_now {
            PacketKind::IrDyn
        } else if long_jump {
            // §5.3.2 c / §5.3.3 c: a long jump re-enters IR and
            // re-initialises the trackers (below).
            self.restart_slow_start();
            PacketKind::IrDyn
        } else {
            match self.state {
                CompressorState::Ir => {
                    if self.vsw.retransmits_ir(rec) {
                        PacketKind::IrDyn // §5.3.1 a 2
                    } else if self.from_syn && payload_len > 0 && config.mode != Mode::R {
                        // §5.2.1.1: the first data segment after the SYN
                        // shows the handshake crossed the link.
                        self.state = CompressorState::Fo;
                        PacketKind::Co
                    } else if self.since_refresh >= self.f_period {
                        // §5.3.1 c: F_PERIOD doubles after F_PERIOD
                        // compressed packets; past W, leave IR (in R-mode
                        // only an ACK(R) does, §5.5.3.1).
                        self.f_period = self.f_period.saturating_mul(2);
                        let w_packets = self.w(config) / config.tracker_params(ipv6).mss as u64;
                        if config.mode != Mode::R && self.f_period as u64 > w_packets {
                            self.state = CompressorState::Fo;
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
                        self.restart_slow_start(); // §5.3.2 a, §5.3.3 a
                        PacketKind::IrDyn
                    } else if config.mode == Mode::U
                        && config.refresh_period > 0
                        && self.since_ir >= config.refresh_period
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
        match config.mode {
            Mode::U if kind == PacketKind::IrDyn && !self.left_ir => PacketKind::Ir,
            Mode::O | Mode::R
                if !self.static_acked
                    && (kind == PacketKind::IrDyn || self.unacked_irs < initial_window_packets(config, ipv6)) =>
            {
                PacketKind::Ir
            }
            _ => kind,
        }
    }

    /// After a packet went (§5.3.1 b, §5.3.2 b): it joins the VSW, the
    /// trackers run, and the VSW shrinks to W.
    fn after_sent(&mut self, config: &CompressorConfig, rec: &Record, a: &Analysis, long_jump: bool) {
        let (seq, ack, tcp_flags, ipv6) = (rec.h.seq, rec.h.ack, rec.h.tcp_flags, rec.h.is_ipv6());
        let payload_len = usize::from(rec.payload_len);
        // §5.3.1 b, §5.3.2 b: the packet joins the VSW; the trackers run;
        // the VSW shrinks to W.
        self.vsw.push_analysed(rec, a);
        if long_jump {
            let p = config.tracker_params(ipv6);
            self.seq_tracker = SeqTracker::new(p);
            self.ack_tracker = AckTracker::new(p);
        }
        self.seq_tracker.on_segment(seq);
        if tcp_flags & FLAG_ACK != 0 {
            self.ack_tracker.on_segment(ack, payload_len == 0);
        }
        if config.mode != Mode::R {
            // In R-mode only ACK(R)s shrink the VSW (§5.5.3.1).
            let w = self.w(config) as i64;
            let (max_seq, max_ack) = (self.seq_tracker.cmaxsn, self.ack_tracker.cmaxack);
            let ack_started = self.ack_tracker.started;
            let acked_past_w = |e: &crate::vsw::Entry| ack_started && e.has_ack && diff32(max_ack, e.ack) > w;
            while self.vsw.len() > config.min_vsw.max(1) {
                // A packet without the ACK flag (a SYN) has no ACK number
                // to test: it is older than every ACK after it, so it
                // leaves with the first of them that W passes. Its ACK
                // field, 0 or anything, must not decide: 0 lies more than
                // 2^31 behind half of all ACK numbers, and a SYN that
                // never left would hold its options and every packet
                // behind it in the VSW.
                let leaves = {
                    let mut entries = self.vsw.iter();
                    let Some(f) = entries.next() else { break };
                    diff32(max_seq, f.seq) > w
                        || acked_past_w(f)
                        || (!f.has_ack && entries.next().is_some_and(acked_past_w))
                };
                if leaves {
                    self.vsw.drop_front(1);
                } else {
                    break;
                }
            }
        }
        // U- and O-mode: the draft's W keeps every packet of a short flow
        // (a SIP connection's SYN among them) as a reference, and in
        // O-mode only the rare ACK(O) shrinks it further. The optimistic
        // approach (RFC 3095 §5.3.1.1.1; RFC 6846 sizes its W-LSB windows
        // so) takes a change sent in `optimistic_settle` packets as
        // arrived, and the decompressor to hold one of the last
        // `optimistic_window` packets. In O-mode a longer burst of losses
        // costs a NACK's round trip; R-mode decodes against acknowledged
        // references only (§5.5.3), so it keeps its VSW.
        let cap = if config.mode != Mode::R {
            let unsettled = self.vsw.unsettled_front(config.optimistic_settle);
            self.vsw.drop_front(unsettled);
            config.optimistic_window.min(config.max_vsw)
        } else {
            config.max_vsw
        };
        if self.vsw.len() > cap.max(1) {
            self.vsw.drop_front(self.vsw.len() - cap.max(1));
        }
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
    /// A compressor with no contexts; `max_contexts` is held to 1..=16.
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

    /// The parameters it was made with.
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

    /// The context an IR of flow `key` on CID `cid` replicates, as an IR-CR
    /// (O- and R-mode, where feedback shows which contexts the
    /// decompressor holds): one whose static part feedback acknowledged,
    /// with the same addresses; of those, one whose template the
    /// decompressor holds, then one that shares more ports, then the most
    /// recently used. U-mode sends IRs whole: nothing tells it that the
    /// base arrived.
    fn replication_base(&self, cid: u8, key: &StaticPart) -> Option<Base> {
        if self.config.mode == Mode::U {
            return None;
        }
        self.contexts
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != cid as usize)
            .filter_map(|(i, c)| Some((i, c.as_ref()?)))
            .filter(|(_, c)| c.static_acked && c.key.same_addresses(key))
            .max_by_key(|(_, c)| {
                let ports = (c.key.src_port == key.src_port) as u8 + (c.key.dst_port == key.dst_port) as u8;
                (c.template_acked, ports, c.last_used)
            })
            .map(|(i, c)| Base {
                cid: i as u8,
                reverse: false,
                static_part: c.key,
                template: c.template.filter(|_| c.template_acked).map(|(_, t)| t),
            })
    }

    /// With inference, the other direction's flow an IR of flow `key` can
    /// take its addresses from (an IR-REV): the one flow of the other
    /// direction this end delivered whose ports are `key`'s reversed, if
    /// its addresses are `key`'s reversed too.
    fn reverse_base(&self, key: &StaticPart) -> Option<Base> {
        if !self.config.chains() {
            return None;
        }
        let s = self.crossed.reversed_flow(key.src_port, key.dst_port)?;
        s.same_addresses(key).then_some(Base { cid: 0, reverse: true, static_part: *key, template: None })
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
        let (seq, ack, tcp_flags, header_len, _ipv6) =
            (rec.h.seq, rec.h.ack, rec.h.tcp_flags, rec.h.len(), rec.h.is_ipv6());
        let long_jump =
            ctx.seq_tracker.is_long_jump(seq) || (tcp_flags & FLAG_ACK != 0 && ctx.ack_tracker.is_long_jump(ack));
        let a = ctx.vsw.analyse(&rec);

        let kind = ctx.choose_kind(&config, &rec, &a, long_jump);
        let base = match kind {
            PacketKind::Ir if !ctx.whole_irs => self.replication_base(cid, &key).or_else(|| self.reverse_base(&key)),
            _ => None,
        };
        let Some(ctx) = self.contexts[cid as usize].as_mut() else { unreachable!("context_for fills the slot") };

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
                    base,
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
                let shape = rec.shape();
                // The chained format goes when it saves enough on the
                // header the other formats would send, which is measured,
                // not written (nor its CRC computed); a format error is
                // left for `emit` to return.
                let chained = ctx
                    .last
                    .as_ref()
                    .filter(|_| chains && ctx.static_acked && !ctx.chain_paused)
                    .and_then(|prev| infer::encode(&rec, prev, &self.crossed, &key))
                    .filter(|c| {
                        co.header_len(shape).is_ok_and(|regular| c.header_len() + infer::MIN_SAVING <= regular)
                    });
                match chained {
                    Some(c) => {
                        let crc = crc3(&frame[..header_len]);
                        ChainedPacket { cid, crc, checksum: co.checksum, payload: packet.payload, ..c }.emit(out)?;
                    }
                    None => co.emit(shape, &frame[..header_len], out)?,
                }
                ctx.since_refresh += 1;
                ctx.since_ir += 1;
            }
        }
        let header_len = out.len() - start - payload_len;
        if tcp_flags & FLAG_SYN != 0 {
            ctx.template = Some((rec.msn, Template::of(&rec.h)));
            ctx.template_acked = false;
        }
        if config.chains() {
            ctx.last = Some(rec);
            self.sent = Some(CrossedPacket::of(&rec, key));
        }

        ctx.after_sent(&config, &rec, &a, long_jump);
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
                    ctx.whole_irs = false;
                    ctx.template_acked |= ctx.template.is_some_and(|(msn, _)| msn == fb.msn);
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
                ctx.whole_irs = true;
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

/// The packets of TCP's initial window on this context's link (RFC 3390,
/// §5.1.4's MIN).
fn initial_window_packets(config: &CompressorConfig, ipv6: bool) -> u32 {
    let p = config.tracker_params(ipv6);
    p.iw().div_ceil(p.mss).max(1)
}

#[cfg(test)]
mod tests {
    use super::encode::*;
    use super::*;
    use crate::format::{IpIdEnc, IPID_TABLE, MSN_K, SEQ_TABLE, SHORT_ACK, SHORT_SEQ, TS_TABLE};

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
