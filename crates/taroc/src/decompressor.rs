//! The TAROC decompressor (draft-ietf-rohc-tcp-taroc-04 §5.2.2, §5.4,
//! §5.5): a sans-IO state machine. Compressed packets go in, IPv4/TCP or
//! IPv6/TCP packets come out, each verified by its checksums (IPv4 and TCP,
//! or TCP over IPv6) before it is emitted; feedback for the compressor is
//! polled with [`Decompressor::poll_feedback`].

use std::collections::VecDeque;

use crate::format::{
    crc3, crc7, crc8, fold_checksum, split_cid, Base, CoOptions, CoPacket, Feedback, FeedbackKind, FormatError,
    IpIdEnc, IrPacket, OptInfo, SeqEnc, StaticPart, Template, WindowField, IPID_TABLE, MSN_P, SEQ_TABLE, TS_TABLE,
    TYPE_IR, TYPE_IR_CR, TYPE_IR_DYN, TYPE_IR_REV, TYPE_IR_V6, WINDOW_LSB, WINDOW_SHORT,
};
use crate::infer::{self, ChainedPacket, CrossedPacket, CrossedPackets, CHAINED_PREFIX};
use crate::packet::{emitted_checksums_ok, EmitError, FLAG_PSH, FLAG_SYN};
use crate::wlsb::{decode, diff16, Lsb};
use crate::{Mode, PacketKind, Record};

/// Decompressor parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecompressorConfig {
    /// The mode of operation, U, O or R (§5.5); the compressor's must
    /// match.
    pub mode: Mode,
    /// N: consecutive failures that send the context back to No Context
    /// (§5.4.2 c; §5.6.2: "a practical range of N is around 8~10").
    pub max_failures: u32,
    /// R-mode: an ACK(R) every this many context updates (§5.6.3: "every
    /// 4~8 successfully decompressed packets").
    pub ack_every: u32,
    /// O-mode: an optional ACK(O) every this many context updates by
    /// compressed packets (0: only IR/IR-DYN are acknowledged, §5.5.2.2).
    pub optional_ack_every: u32,
    /// O-mode only: cross-direction inference ([`crate::infer`]), as the
    /// compressor's `infer`. The caller passes each packet this end's
    /// compressor sends to [`Decompressor::note_reverse`], and each
    /// [`Decompressor::poll_crossed`] to this end's compressor.
    pub infer: bool,
}

impl Default for DecompressorConfig {
    fn default() -> Self {
        DecompressorConfig { mode: Mode::U, max_failures: 8, ack_every: 4, optional_ack_every: 0, infer: false }
    }
}

impl DecompressorConfig {
    /// The defaults with `mode`.
    pub fn with_mode(mode: Mode) -> Self {
        DecompressorConfig { mode, ..Default::default() }
    }

    /// Whether the chained format is in use ([`crate::infer`]).
    pub fn chains(&self) -> bool {
        self.infer && self.mode == Mode::O
    }
}

/// The decompressor states (§5.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecompressorState {
    /// No (dynamic) context: only IR or IR-DYN can be decompressed.
    NoContext,
    /// A verified reference: compressed packets are decompressed.
    FullContext,
}

/// Why no packet was emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecompressError {
    /// The bytes are not a well-formed compressed packet.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// A compressed packet for a context in No Context (§5.2.2); holds
    /// the CID.
    #[error("compressed packet for context {0}, which is in No Context")]
    NoContext(u8),
    /// An IR-DYN for a context that never received an IR; holds the CID.
    #[error("IR-DYN for context {0}, whose static part is unknown")]
    NoStaticContext(u8),
    /// The header decoded fails its CRC (§5.4): the packet is dropped and
    /// counts as a failure.
    #[error("the reconstructed header fails its CRC; dropped")]
    Verification,
    /// The header passed its CRC, so the context decoded it, but the
    /// packet fails its checksums: the link damaged the payload.
    #[error("the header passes its CRC but the packet fails its checksum (payload damaged); dropped")]
    PayloadDamaged,
    /// The decoded header cannot be written as a packet.
    #[error(transparent)]
    Emit(#[from] EmitError),
}

/// What one compressed packet became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decompressed {
    /// The context's CID, 0..=15.
    pub cid: u8,
    /// IR, IR-DYN or compressed.
    pub kind: PacketKind,
    /// Bytes of the compressed packet that were header.
    pub header_len: usize,
    /// Bytes appended to the output (the whole IP packet).
    pub len: usize,
}

/// The reference and the one before it (a packet overtaken by a newer one
/// was compressed against a VSW that lacked the newer one), in two slots
/// that swap roles: a new reference is written once, not moved twice.
#[derive(Default)]
struct References {
    slots: [Option<Record>; 2],
    current: usize,
}

impl References {
    fn reference(&self) -> Option<&Record> {
        self.slots[self.current].as_ref()
    }

    fn previous(&self) -> Option<&Record> {
        self.slots[1 - self.current].as_ref()
    }

    /// `rec` becomes the reference, the reference the previous one.
    fn push(&mut self, rec: Record) {
        self.current = 1 - self.current;
        self.slots[self.current] = Some(rec);
    }

    fn clear(&mut self) {
        self.slots = [None, None];
    }
}

#[derive(Default)]
struct Context {
    full: bool,
    static_part: Option<StaticPart>,
    refs: References,
    /// With inference: a packet newer than the reference whose header
    /// passed its CRC but whose payload failed the TCP checksum. The
    /// chained packet after it names it as its reference: its SEQ, length
    /// and timestamps are known, and what a chained packet decodes against
    /// it is verified as any other.
    unverified: Option<Record>,
    /// With inference: a chained packet failed, so the next packet decoded
    /// is acknowledged, which tells the compressor to chain again.
    ack_next: bool,
    failures: u32,
    updates: u32,
    /// The last SYN or SYN-ACK decoded: what an IR-CR naming this context
    /// takes from it.
    template: Option<Template>,
}

/// The TAROC decompressor for every context of one link direction.
pub struct Decompressor {
    config: DecompressorConfig,
    /// Contexts by CID, up to the highest CID seen: a link (or a replayed
    /// connection) that uses CID 0 only holds one, not all 16 small CIDs'.
    contexts: Vec<Context>,
    feedback: VecDeque<Feedback>,
    /// With inference: the other direction's packets this end sent.
    crossed: CrossedPackets,
    /// With inference: the packet that last became a reference, for this
    /// end's compressor.
    delivered: Option<CrossedPacket>,
}

impl Decompressor {
    /// A decompressor with every context in No Context.
    pub fn new(config: DecompressorConfig) -> Decompressor {
        Decompressor {
            config,
            contexts: Vec::new(),
            feedback: VecDeque::new(),
            crossed: CrossedPackets::default(),
            delivered: None,
        }
    }

    /// With inference: a packet of the other direction that this end's
    /// compressor sent ([`Compressor::poll_crossed`](crate::Compressor::poll_crossed)).
    pub fn note_reverse(&mut self, p: &CrossedPacket) {
        if self.config.chains() {
            self.crossed.note(*p);
        }
    }

    /// With inference: the packet that last became the reference of its
    /// context, for this end's compressor
    /// ([`Compressor::note_reverse`](crate::Compressor::note_reverse)).
    pub fn poll_crossed(&mut self) -> Option<CrossedPacket> {
        self.delivered.take()
    }

    /// The state of context `cid` (No Context for a CID never seen).
    pub fn state(&self, cid: u8) -> DecompressorState {
        match self.contexts.get(cid as usize) {
            Some(c) if c.full => DecompressorState::FullContext,
            _ => DecompressorState::NoContext,
        }
    }

    /// The next feedback packet for the compressor (O- and R-mode).
    pub fn poll_feedback(&mut self) -> Option<Feedback> {
        self.feedback.pop_front()
    }

    fn send(&mut self, cid: u8, kind: FeedbackKind, reference: Option<&Record>) {
        if self.config.mode == Mode::U {
            return;
        }
        let (msn, checksum) = reference.map_or((0, 0), |r| (r.msn, r.h.checksum));
        // Keep the queue bounded if nobody polls it.
        if self.feedback.len() >= 64 {
            self.feedback.pop_front();
        }
        self.feedback.push_back(Feedback { cid, kind, reliable: self.config.mode == Mode::R, msn, checksum });
    }

    /// Decompresses one packet, appending the IP/TCP packet to `out` only
    /// if it passes its checksums.
    pub fn decompress(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<Decompressed, DecompressError> {
        let (cid, rest) = split_cid(data)?;
        // A small CID is 0 to 15 (split_cid reads 4 bits).
        if self.contexts.len() <= cid as usize {
            self.contexts.resize_with(cid as usize + 1, Context::default);
        }
        let start = out.len();
        let first = *rest.first().ok_or(FormatError::Empty)?;
        let is_ir = matches!(first, TYPE_IR | TYPE_IR_V6 | TYPE_IR_DYN | TYPE_IR_CR | TYPE_IR_REV);
        let chains = self.config.chains();
        let reference_before = if chains { self.reference_id(cid) } else { None };
        let result = match first {
            _ if is_ir => self.decompress_ir(cid, rest, out),
            b if chains && b >> 4 == CHAINED_PREFIX => self.decompress_chained(cid, rest, out),
            b if b < 0xe0 => self.decompress_co(cid, rest, out),
            b => Err(DecompressError::Format(FormatError::UnknownType(b))),
        };
        match result {
            Ok((kind, payload_len)) => {
                if chains && self.reference_id(cid) != reference_before {
                    let ctx = &self.contexts[cid as usize];
                    if let (Some(r), Some(s)) = (ctx.refs.reference(), ctx.static_part) {
                        self.delivered = Some(CrossedPacket::of(r, s));
                    }
                }
                Ok(Decompressed { cid, kind, header_len: data.len() - payload_len, len: out.len() - start })
            }
            Err(e) => {
                out.truncate(start);
                // An IPv6 IR that fails on a context that is not IPv6 counts
                // no failure: it is a new flow's (the context is replaced
                // once one passes), or damage to an IPv4 packet's type octet,
                // which counted none before IPv6 gave 0xF9 a meaning.
                let foreign =
                    first == TYPE_IR_V6 && self.contexts[cid as usize].static_part.is_none_or(|s| s.ipv6.is_none());
                // A packet whose header passed its CRC was decoded by the
                // context, so only its payload was hit: it asks for no
                // refresh (a NACK would only buy an IR-DYN, and the TCP
                // sender resends the segment anyway). It still counts
                // towards N (§5.4.2 c): the reference does not move while
                // such packets arrive, and N bounds how far behind the
                // compressor's window it may fall. Decoding against a
                // reference the window has left is off by a power of two
                // in an LSB-encoded field, which a single flipped bit of
                // the checksum can hide from the TCP checksum, leaving only
                // the CRC-3 between it and the network. An IR or IR-DYN
                // whose payload alone is damaged has just moved the
                // reference and reset the count, so it counts none.
                match e {
                    DecompressError::Verification if !foreign => self.fail(cid, true),
                    DecompressError::PayloadDamaged if !is_ir => self.fail(cid, false),
                    _ => {}
                }
                Err(e)
            }
        }
    }

    /// Counts a failure; NACKs it if `header_failed`, or if it sends the
    /// context to No Context.
    fn fail(&mut self, cid: u8, header_failed: bool) {
        let max = self.config.max_failures.max(1);
        let ctx = &mut self.contexts[cid as usize];
        ctx.failures += 1;
        let lost = ctx.failures >= max;
        if lost {
            // §5.4.2 c; the static part stays, so an IR-DYN re-enters.
            ctx.full = false;
            ctx.refs.clear();
            ctx.unverified = None;
        }
        let reference = ctx.refs.reference().copied();
        if header_failed || lost {
            // §5.5.2.2 NACK(O); §5.5.3.2 NACK(R).
            self.send(cid, FeedbackKind::Nack, reference.as_ref());
        }
    }

    fn decompress_ir(
        &mut self,
        cid: u8,
        rest: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(PacketKind, usize), DecompressError> {
        // An IR-CR's base context: its static part and template; an
        // IR-REV's flow of the other direction.
        let base = match rest.first() {
            Some(&TYPE_IR_REV) => IrPacket::reverse_ports(rest)
                .filter(|_| self.config.chains())
                .and_then(|(src, dst)| self.crossed.reversed_flow(src, dst))
                .map(|static_part| Base { cid: 0, reverse: true, static_part, template: None }),
            _ => IrPacket::base_cid(rest).and_then(|b| {
                let c = self.contexts.get(b as usize)?;
                Some(Base { cid: b, reverse: false, static_part: c.static_part?, template: c.template })
            }),
        };
        let replica = matches!(rest.first(), Some(&(TYPE_IR_CR | TYPE_IR_REV)));
        let ctx = &self.contexts[cid as usize];
        // An IR-DYN's dynamic chain is the IP version's of the static part
        // held (without one, the IR-DYN is refused below).
        let ir = match IrPacket::parse(cid, rest, ctx.static_part.is_some_and(|s| s.ipv6.is_some()), base) {
            // An IR-CR whose base (or template) this end lacks, an IR-REV
            // whose flow it does not hold: the compressor sends the static
            // chain whole after a STATIC-NACK.
            Err(FormatError::Reserved(_)) if replica => {
                self.send(cid, FeedbackKind::StaticNack, None);
                return Err(DecompressError::NoStaticContext(cid));
            }
            r => r?,
        };
        let kind = if ir.static_part.is_some() { PacketKind::Ir } else { PacketKind::IrDyn };
        let Some(static_part) = ir.static_part.or(ctx.static_part) else {
            self.send(cid, FeedbackKind::StaticNack, None);
            return Err(DecompressError::NoStaticContext(cid));
        };
        let mut h = ir.header;
        static_part.apply(&mut h);
        let start = out.len();
        h.emit(ir.payload.len(), out)?;
        out.extend_from_slice(ir.payload);
        // RFC 3095 §5.9.1's CRC-8 over the header, then the checksums.
        // §5.4.1 verifies an IR by the TCP checksum alone; here the CRC-8
        // verifies its header, which is all the context takes from it
        // (RFC 3095's IR CRC covers the header, not the payload), so an IR
        // whose payload the link damaged still repairs the context, though
        // the packet itself is dropped. A refresh rides on whatever segment
        // is next, often a full-sized one that a noisy link rarely
        // delivers whole.
        if crc8(&out[start..start + h.len()]) != ir.crc {
            return Err(DecompressError::Verification);
        }
        let payload_intact = emitted_checksums_ok(&out[start..]);
        // An IR-CR takes fields from another context: the TCP checksum
        // verifies them as well (it covers the addresses, ports, window
        // and options), so one whose payload was hit sets up nothing.
        if replica && !payload_intact {
            return Err(DecompressError::Verification);
        }
        let rec = Record {
            msn: ir.msn,
            h,
            opt: OptInfo::of(&h.options),
            ts: (0, 0),
            strides: ir.strides,
            payload_len: ir.payload.len() as u16,
            sent_as_ir: true,
            fp: [(0, 0); 2],
        };
        let rec = Record { ts: rec.opt.ts(&h.options), ..rec };
        let ctx = &mut self.contexts[cid as usize];
        if ir.static_part.is_some() && ctx.static_part != ir.static_part {
            *ctx = Context::default(); // a new flow on this CID
        }
        ctx.static_part = Some(static_part);
        ctx.full = true;
        ctx.failures = 0;
        if h.tcp_flags & FLAG_SYN != 0 {
            ctx.template = Some(Template::of(&h));
        }
        // §6.1: an uncompressed value whose header passed its CRC-8 is a
        // reference.
        ctx.refs.push(rec);
        ctx.updates = 0;
        // §5.5.2.2: ACK(O) for an IR that passes; §5.5.3.2 ACK(R) for every
        // context update.
        self.send(cid, FeedbackKind::Ack, Some(&rec));
        if !payload_intact {
            return Err(DecompressError::PayloadDamaged);
        }
        Ok((kind, ir.payload.len()))
    }

    fn decompress_co(
        &mut self,
        cid: u8,
        rest: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(PacketKind, usize), DecompressError> {
        let ctx = &self.contexts[cid as usize];
        let Some(reference) = ctx.refs.reference().filter(|_| ctx.full) else {
            return Err(self.no_context(cid));
        };
        let static_part = ctx.static_part.unwrap_or_else(|| StaticPart::of(&reference.h));
        let reference_msn = reference.msn;
        let start = out.len();
        let mut header_passed = None;
        for r in std::iter::once(reference).chain(ctx.refs.previous()) {
            let co = CoPacket::parse(cid, rest, r.shape())?;
            // The previous reference serves only a packet older than the
            // current one (overtaken on the link), compressed before the
            // current reference joined the VSW. A newer packet was
            // compressed with the current reference in its VSW, or with
            // neither: decoded against the older one it can only come out
            // wrong, and a damaged packet then gets a second draw at the
            // CRC-3 and the checksum.
            let Some(rec) = reconstruct(&co, r, static_part) else { continue };
            // Tested in place: `Option::filter` would move the record.
            let overtaken = r.msn == reference_msn || diff16(rec.msn, reference_msn) < 0;
            if overtaken {
                out.truncate(start);
                rec.h.emit(co.payload.len(), out)?;
                out.extend_from_slice(co.payload);
                // The CRC over the reconstructed header (RFC 3095 §5.9.2),
                // then the TCP checksum over the whole packet (§5.4): a
                // damaged packet must pass both to be emitted.
                let header = &out[start..start + rec.h.len()];
                let crc = if co.crc.1 == 3 { crc3(header) } else { crc7(header) };
                if crc == co.crc.0 {
                    // Not a reference without its checksum: a CRC-3 passes
                    // one damaged header in eight.
                    if emitted_checksums_ok(&out[start..]) {
                        // Accepted here, not carried out of the loop: the
                        // record is some hundred octets, each move a copy.
                        let new_options = matches!(co.options, CoOptions::Raw(_)) || co.strides.is_some();
                        self.accept(cid, rec, reference_msn, new_options);
                        return Ok((PacketKind::Co, co.payload.len()));
                    }
                    header_passed = header_passed.or(Some(rec));
                }
            }
        }
        let Some(rec) = header_passed else { return Err(DecompressError::Verification) };
        self.note_unverified(cid, rec);
        Err(DecompressError::PayloadDamaged)
    }

    /// The context's reference, by its MSN and TCP checksum: whether a
    /// packet moved it.
    fn reference_id(&self, cid: u8) -> Option<(u16, u16)> {
        self.contexts[cid as usize].refs.reference().map(|r| (r.msn, r.h.checksum))
    }

    /// §5.4.1: only IR/IR-DYN decompress in No Context; a compressed
    /// packet there draws a NACK, or a STATIC-NACK without the static part.
    fn no_context(&mut self, cid: u8) -> DecompressError {
        let kind = if self.contexts[cid as usize].static_part.is_some() {
            FeedbackKind::Nack
        } else {
            FeedbackKind::StaticNack
        };
        self.send(cid, kind, None);
        DecompressError::NoContext(cid)
    }

    /// A chained packet ([`crate::infer`]): decoded against the reference
    /// alone, which must be the previous packet.
    fn decompress_chained(
        &mut self,
        cid: u8,
        rest: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(PacketKind, usize), DecompressError> {
        let ctx = &self.contexts[cid as usize];
        let Some(reference) = ctx.refs.reference().filter(|_| ctx.full) else {
            return Err(self.no_context(cid));
        };
        let static_part = ctx.static_part.unwrap_or_else(|| StaticPart::of(&reference.h));
        let reference_msn = reference.msn;
        // The newest packet first: the unverified one, if newer.
        let unverified = ctx.unverified.as_ref().filter(|u| diff16(u.msn, reference_msn) > 0);
        let start = out.len();
        let mut header_passed = None;
        for r in unverified.into_iter().chain(std::iter::once(reference)) {
            let c = ChainedPacket::parse(cid, rest, r.opt.ts_at.is_some(), infer::sends_whole_ip_id(r))?;
            let Some(mut rec) = infer::reconstruct(&c, r, &static_part, &self.crossed) else { continue };
            rec.h.checksum = fold_checksum(c.checksum, &rec.h, rec.msn, rec.strides);
            out.truncate(start);
            rec.h.emit(c.payload.len(), out)?;
            out.extend_from_slice(c.payload);
            // As the other formats: the CRC-3, then the TCP checksum.
            if crc3(&out[start..start + rec.h.len()]) != c.crc {
                continue;
            }
            if !emitted_checksums_ok(&out[start..]) {
                header_passed = header_passed.or(Some(rec));
                continue;
            }
            self.accept(cid, rec, reference_msn, false);
            return Ok((PacketKind::Co, c.payload.len()));
        }
        match header_passed {
            Some(rec) => {
                self.note_unverified(cid, rec);
                Err(DecompressError::PayloadDamaged)
            }
            None => {
                // A packet before this one is missing (or this one is
                // damaged): the NACK that follows stops the chaining, and
                // the next packet decoded is acknowledged to restart it.
                self.contexts[cid as usize].ack_next = true;
                Err(DecompressError::Verification)
            }
        }
    }

    /// With inference: keeps a packet whose header passed its CRC but whose
    /// payload failed, if newer than the reference, for the chained packet
    /// after it.
    fn note_unverified(&mut self, cid: u8, rec: Record) {
        let ctx = &mut self.contexts[cid as usize];
        if self.config.chains() && ctx.refs.reference().is_some_and(|r| diff16(rec.msn, r.msn) > 0) {
            ctx.unverified = Some(rec);
        }
    }

    /// A compressed packet decoded and verified: it resets the failures
    /// and, if newer than the reference, becomes it.
    fn accept(&mut self, cid: u8, rec: Record, reference_msn: u16, new_options: bool) {
        let ctx = &mut self.contexts[cid as usize];
        ctx.failures = 0;
        let ack_now = std::mem::take(&mut ctx.ack_next);
        // §6.1 reference selection: the last received value that passed
        // the checksum; §5.4.2 b: not older than the current reference.
        // §6.1 also skips retransmitted values, which suits a VSW that
        // drops values by sequence number wherever they are. This VSW is
        // always the newest MSNs (entries leave from its front only: W's
        // test on the oldest entry, §5.3.1 b, and the ACKs of §5.5), and
        // every packet sent joins it, retransmissions included; so the
        // newest packet decoded stays in it at least as long as any older
        // one. Skipping retransmissions kept the decompressor on an older
        // reference the compressor dropped first: after a timeout, the
        // sender's go-back-N resends a whole window of retransmissions,
        // the VSW slides over them, and the packets after failed.
        if diff16(rec.msn, reference_msn) > 0 {
            if rec.h.tcp_flags & FLAG_SYN != 0 {
                ctx.template = Some(Template::of(&rec.h));
            }
            ctx.refs.push(rec);
            ctx.updates += 1;
            let every = match self.config.mode {
                Mode::R => self.config.ack_every.max(1),
                Mode::O => self.config.optional_ack_every,
                Mode::U => 0,
            };
            // A packet carrying its whole option list or new fixed-payload
            // strides changes the context as an IR-DYN does: acknowledged as
            // §5.5.2.2 acknowledges IR-DYN, so the compressor drops the older
            // skeletons (the SYN's) and strides from its VSW and sends
            // compactly again at once.
            if every > 0 && ctx.updates.is_multiple_of(every) || new_options || ack_now {
                self.send(cid, FeedbackKind::Ack, Some(&rec));
            }
        }
    }
}

/// A SEQ or ACK number from its field, against `v_ref` of the reference
/// whose MSN is `msn_ref`; `msn` is the packet's decoded MSN.
#[inline]
fn decode_number(field: (u8, u32), v_ref: u32, stride: u16, msn: u16, msn_ref: u16) -> Option<u32> {
    Some(match SEQ_TABLE[field.0 as usize] {
        SeqEnc::Lsb(l) => decode(field.1, l, v_ref, 32),
        SeqEnc::Irregular => field.1,
        SeqEnc::FixedPayload(l) => {
            let s = stride as u32;
            if s == 0 {
                return None;
            }
            decode(field.1, l, v_ref / s, 32).wrapping_mul(s).wrapping_add(v_ref % s)
        }
        SeqEnc::MsnScaled(l) => {
            let s = stride as u32;
            if s == 0 {
                return None;
            }
            let m_ref = v_ref / s;
            let lag = decode(field.1, l, m_ref.wrapping_sub(msn_ref as u32), 32);
            let msn = (msn_ref as u32).wrapping_add(diff16(msn, msn_ref) as u32);
            lag.wrapping_add(msn).wrapping_mul(s).wrapping_add(v_ref % s)
        }
    })
}

/// Decodes a CO packet against reference `r` (W-LSB decoding, RFC 3095
/// §4.5.2) into the packet's record with its TCP checksum unfolded.
fn reconstruct(co: &CoPacket<'_>, r: &Record, static_part: StaticPart) -> Option<Record> {
    let msn = decode(co.msn.0, Lsb::new(co.msn.1, MSN_P), r.msn as u32, 16) as u16;
    let mut h = r.h;
    static_part.apply(&mut h);
    h.ip_id = match IPID_TABLE[co.ip_id.0 as usize] {
        IpIdEnc::Offset(l) => {
            (decode(co.ip_id.1, l, r.h.ip_id.wrapping_sub(r.msn) as u32, 16) as u16).wrapping_add(msn)
        }
        IpIdEnc::Raw(l) => decode(co.ip_id.1, l, r.h.ip_id as u32, 16) as u16,
        IpIdEnc::Irregular => co.ip_id.1 as u16,
    };
    let strides = co.strides.unwrap_or(r.strides);
    h.seq = decode_number(co.seq, r.h.seq, r.strides.0, msn, r.msn)?;
    h.ack = decode_number(co.ack, r.h.ack, r.strides.1, msn, r.msn)?;
    h.window = match co.window {
        WindowField::Static => r.h.window,
        WindowField::Lsb(b) => decode(b, WINDOW_LSB, r.h.window as u32, 16) as u16,
        WindowField::Irregular(v) => v,
        WindowField::Short(b) => decode(b, WINDOW_SHORT, r.h.window as u32, 16) as u16,
    };
    (h.tcp_res, h.tcp_flags) =
        co.flags.unwrap_or((r.h.tcp_res, (r.h.tcp_flags & !FLAG_PSH) | (co.psh as u8 * FLAG_PSH)));
    if let Some((tos, ttl, ff)) = co.ip {
        (h.tos, h.ttl, h.flags_frag) = (tos, ttl, ff);
    }
    h.urgent = co.urgent.unwrap_or(r.h.urgent);
    let opt;
    (h.options, opt) = match co.options {
        CoOptions::Raw(o) => (o, OptInfo::of(&o)),
        CoOptions::Compact { ts, sack_n, sack } => {
            let mut vals = [0u32; 2];
            for (i, (sel, bits)) in ts.iter().enumerate() {
                let v_ref = if i == 0 { r.ts.0 } else { r.ts.1 };
                vals[i] = match TS_TABLE[*sel as usize] {
                    Some(l) => decode(*bits, l, v_ref, 32),
                    None => *bits,
                };
            }
            let blocks = sack.map(|(left, len)| {
                let l = h.ack.wrapping_add(left);
                (l, l.wrapping_add(len))
            });
            // The skeleton and the positions in it are the reference's.
            let o = r.opt.fill((vals[0], vals[1]), &blocks[..sack_n.min(4) as usize])?;
            (o, OptInfo { sack_n, ..r.opt })
        }
    };
    h.checksum = fold_checksum(co.checksum, &h, msn, strides);
    Some(Record {
        msn,
        h,
        opt,
        ts: opt.ts(&h.options),
        strides,
        payload_len: co.payload.len().min(u16::MAX as usize) as u16,
        sent_as_ir: false,
        fp: [(0, 0); 2],
    })
}
