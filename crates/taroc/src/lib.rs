//! # taroc
//!
//! TCP/IPv4 and TCP/IPv6 header compression after "TCP-Aware RObust Header
//! Compression (TAROC)", draft-ietf-rohc-tcp-taroc-04, with the baselines
//! its Appendix A compares it to: VJ (RFC 1144), IPHC (RFC 2507, [`iphc`]),
//! no compression, and IDEAL.
//! Sans-IO: [`Compressor`] and [`Decompressor`] take and return bytes; the
//! caller moves compressed packets one way and feedback the other.
//!
//! ```
//! use taroc::{synth, Compressor, CompressorConfig, Decompressor, DecompressorConfig, Mode};
//!
//! let flow = synth::bulk_transfer(100, 1460, 0, synth::FlowOptions::default());
//! let (mut c, mut d) = (Compressor::new(CompressorConfig::with_mode(Mode::O)), Decompressor::new(DecompressorConfig::with_mode(Mode::O)));
//! for (_, packet) in flow.iter().filter(|(dir, _)| *dir == synth::Dir::Forward) {
//!     let mut wire = Vec::new();
//!     c.compress(packet, &mut wire)?;
//!     let mut back = Vec::new();
//!     d.decompress(&wire, &mut back)?;
//!     assert_eq!(&back, packet);
//!     while let Some(feedback) = d.poll_feedback() {
//!         let mut fb = Vec::new();
//!         feedback.emit(&mut fb);
//!         c.handle_feedback(&fb)?;
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`throughput`] is the draft's Appendix A study: a discrete-event
//! simulation of a bulk TCP transfer (Tahoe, Reno, NewReno) across a lossy
//! narrowband link with each scheme on it, and the draft's throughput
//! tables ([`throughput::DRAFT_TABLES`]) to compare with. [`capture`] reads
//! and writes pcap and pcapng files. Both are features, on by default: the
//! header compressor alone builds with `default-features = false`.
//!
//! ## The TAROC control mechanism (TAROC-C, §5)
//!
//! * **Contexts** per flow (addresses and ports of one direction), at most
//!   16 per link (small CIDs: CID 0 costs nothing, 1–15 one Add-CID octet
//!   `1110CCCC`, RFC 3095 §5.2.3).
//! * **Compressor states** IR, FO, SO ([`CompressorState`]). IR sends IR
//!   (static and dynamic chains) or IR-DYN with compression slow-start:
//!   F_PERIOD compressed packets between refreshes, F_PERIOD doubling until
//!   it exceeds W (in packets of MSS), then FO (§5.3.1). The first data
//!   segment of a flow that began with a SYN leaves IR at once (§5.2.1.1).
//!   SO is FO while fixed-payload encoding applies (§5.3.2 d, §5.3.3 d).
//! * **VSW**: every packet sent joins it (§6.1); it shrinks to
//!   W = K·MAX(MAX(cwnd_seq, 2·ssthresh_seq), MAX(cwnd_ack, 2·ssthresh_ack))
//!   (§5.3.1 b): an entry leaves once its sequence number is more than W
//!   bytes behind CMAXSN, or its ACK number more than W behind CMAXACK.
//!   The draft leaves the unit of "the size of VSW" open; W is in bytes, so
//!   the VSW is measured in sequence space. In O/R-mode an ACK drops the
//!   entries older than the acknowledged one; R-mode shrinks by ACK only.
//! * **Algorithm SEQ and Algorithm ACK** ([`cwnd`]) estimate cwnd and
//!   ssthresh, bounded by MIN (RFC 3390's initial window) and MAX
//!   (`max_window`) of §5.1.4.
//! * **Long jumps**: a sequence or ACK number farther ahead of
//!   CMAXSN/CMAXACK than the estimated cwnd (§5.3.2 c) is sent as IR-DYN, the trackers
//!   restart and the context re-enters IR. A packet older than the whole
//!   VSW (§5.3.2 a), and in IR a retransmission of a packet first sent as
//!   IR/IR-DYN (§5.3.1 a 2), are sent as IR-DYN too.
//! * **Decompressor** ([`Decompressor`]): No Context / Full Context
//!   (§5.2.2); every reconstructed packet is verified by its TCP checksum
//!   and dropped if it fails (§5.4); the reference is the last received
//!   packet that passed, if not older than the current one (§5.4.2 b,
//!   §6.1; retransmissions too, see below); N consecutive failures return
//!   to No Context (§5.4.2 c), keeping the static part so an IR-DYN
//!   re-establishes it.
//! * **Modes** ([`Mode`]): U without feedback; O with ACK(O) for IR/IR-DYN
//!   and NACK(O) for failures; R with ACK(R) every `ack_every` context
//!   updates and NACK(R) (§5.5).
//!
//! ## Corrections to the draft
//!
//! | draft | says | here |
//! |---|---|---|
//! | §5.1.2 (SLOW-START and CONGESTION-AVOIDANCE) | `CMINSN = cwnd - CMAXSN` | `CMINSN = CMAXSN - cwnd` (operands reversed in the draft) |
//! | §5.5.3.1 (R-mode compressor) | "Upon receiving an NACK(O)" | NACK(R): the R-mode decompressor sends NACK(R) (§5.5.3.2) |
//! | §5.1.2, §5.1.3 FAST-RECOVERY exit | CMAXSN/CMAXACK not updated | updated, or the next new segment counts the whole recovery as growth |
//! | §5.1.3 duplicate ACKs | any segment with NEWACK = CMAXACK | only segments without data (RFC 5681 §2), or a bulk sender's data segments would halve cwnd_ack |
//! | §6.1 reference selection | "the last received non-retransmitted value" | the last received value: this VSW always holds the newest MSNs, retransmissions included, so the newest packet decoded stays in it at least as long as an older one (after a timeout's go-back-N the VSW slid past the older one) |
//! | §5.3.2 c long jump | \|NSN − CMAXSN\| > cwnd | NSN − CMAXSN > cwnd: the trigger is a VSW shrunk to one packet, which W (measured from CMAXSN) only does for a jump ahead; a retransmission behind is W-LSB-encoded, or IR-DYN if behind the whole VSW (§5.3.2 a) |
//! | §5.1.2 ISSTHRESH | "MAY be arbitrarily high" | bounded by the §5.1.4 MAX boundary (`max_window`), or W would never shrink the VSW |
//!
//! Additions the draft lacks: in O- and R-mode, until feedback shows that
//! the static chain arrived, the packets of TCP's initial window go as IR,
//! so a lost first IR does not take the rest of the window with it (a
//! compressed packet or IR-DYN needs the static chain, §5.4.1); in O- and
//! R-mode the decompressor also
//! acknowledges a compressed packet that carries its whole option list or
//! new fixed-payload strides (like an IR-DYN, §5.5.2.2), so the compressor
//! drops the SYN's options and the old strides from the VSW at once rather
//! than after W; a periodic IR in U-mode
//! (`refresh_period`, RFC 3095 §5.3.1.1.1), without which a decompressor
//! in No Context never recovers; retrying a packet that fails against the
//! reference with the previous reference, so one-packet reordering on the
//! link costs nothing; fixed-payload encoding of the ACK number with
//! its own stride (§6.1 names both numbers but only defines the payload
//! size for SEQ); an IR or IR-DYN whose CRC-8 verifies its header repairs
//! the context even when its payload fails the TCP checksum (§5.4.1
//! verifies it by the TCP checksum alone), since a refresh often rides on
//! a full-sized segment that a noisy link rarely delivers whole; and a
//! compressed packet whose header passes its CRC but whose payload fails
//! the TCP checksum sends no NACK (its header shows the context is in
//! step), though it counts towards N: the reference stands still while
//! such packets arrive, and N bounds how far behind the compressor's
//! window it can fall (not counting them, measured with `sigkit rohc`,
//! let 13 wrong headers through in 60 runs at BER 3e-4, each an
//! LSB-decoded field off by a power of two that one flipped checksum bit
//! hid from the TCP checksum); an IR or IR-DYN whose payload alone is
//! damaged counts no failure, since it has just moved the reference; and
//! a SYN, whose ACK field means nothing, leaves the VSW by the ACK-number
//! test (§5.3.1 b) with the first ACK after it that W passes, as the
//! oldest of them (its field, 0, lies 2^31 or more behind half of all ACK
//! numbers).
//!
//! **Cross-direction inference** ([`infer`]), an O-mode extension both
//! ends enable (`infer` in [`CompressorConfig`] and [`DecompressorConfig`]):
//! a chained format whose reference is the previous packet, so SEQ is not
//! sent, and whose ACK number and TSecr name the other direction's packet
//! they acknowledge. SIP over TCP then takes 4–6 octets a header where the
//! draft's formats take 10–16. It takes the general format's first nibble
//! `1101` (SEQ selector 5), which is not used while it is on.
//!
//! ## Packet format
//!
//! The draft leaves bit formats to EPIC-LITE; this crate defines one
//! concrete format from the widths and offsets of its TCP/IP profile
//! (§6.3), octet-aligned as the profile's `bit_alignment 8`. Fields are
//! packed most significant bit first. Every packet may start with an
//! Add-CID octet.
//!
//! **IR** `0xFD` · static chain (source address 4, destination address 4,
//! source port 2, destination port 2) · dynamic chain · CRC-8 · payload.
//! **IR-DYN** `0xF8` · dynamic chain · CRC-8 · payload.
//!
//! Dynamic chain (28 octets + TCP options): MSN 2, TOS 1, IP-ID 2, IP
//! flags+fragment offset 2, TTL 1, SEQ 4, ACK 4, data offset+reserved 1,
//! TCP flags 1, window 2, checksum 2, urgent pointer 2, SEQ stride 2, ACK
//! stride 2, TCP options as they are (data offset · 4 − 20 octets).
//!
//! **CRCs.** Every packet carries a CRC of RFC 3095 §5.9.2 over the
//! original IP and TCP headers as they are on the wire (CRC-8 in IR and
//! IR-DYN, CRC-7 in the general CO format, CRC-3 in the short and compact
//! ones), which the decompressor checks on the reconstructed header before
//! the TCP checksum (§5.4). The TCP checksum alone lets a damaged header through
//! when bit errors cancel in the ones' complement sum (two flips of
//! opposite sense in the same bit of two 16-bit words, or many errors
//! summing to zero), which at BER 1e-3, where nearly every 1500-octet packet
//! is damaged, let a wrong header out every few hundred damaged packets
//! (measured with `sigkit rohc`); with the CRC it must also match a CRC of
//! 3 to 8 bits, which no packet of the long runs in docs/results/rohc.md did.
//!
//! **CO compact** (a bulk transfer's steady state), first bits `01`:
//!
//! | bits | field | encoding |
//! |---|---|---|
//! | 2 | `01` | compact format |
//! | 6 | MSN | MSN-LSB(6,−1) |
//! | 3 | CRC-3 | over the original header |
//! | 1 | D | 1: SEQ MSN-scaled, ACK STATIC (a data segment); 0: SEQ STATIC, ACK MSN-scaled (a pure ACK) |
//! | 3 | m − MSN | of the MSN-scaled number: LSB(3,4) |
//! | 1 | T | TSval and TSecr LSB(8,15) follow (else STATIC) |
//! | 0/16 | TSval, TSecr | per T |
//! | 16 | checksum | as in the general format |
//!
//! It holds what the short format holds with PSH clear, the window
//! STATIC, and the IP-ID's offset from the MSN unchanged (IPv4) or no
//! IP-ID (IPv6): a bulk sender's full-sized segment, and its receiver's
//! ACK of a constant number of them, in 4 octets without timestamps and 6
//! with them, as long as the VSW spans at most 64 MSNs and m − MSN moves by
//! at most −4 to +3 over it.
//!
//! **CO short** (compressed, the common case), first bits `00`:
//!
//! | bits | field | encoding |
//! |---|---|---|
//! | 2 | `00` | short format |
//! | 3 | MSN | 3 LSBs |
//! | 3 | CRC-3 | over the original header |
//! | 2 | SS | SEQ: STATIC, MSN-scaled fixed payload LSB(4,8), fixed payload LSB(8,15), LSB(20,1023) |
//! | 2 | AA | ACK: as SEQ |
//! | 1 | I | IP-ID STATIC: 0 IP-ID − MSN unchanged, 1 IP-ID unchanged |
//! | 1 | P | TCP PSH flag |
//! | 1 | W | window LSB(6,31) follows (else STATIC) |
//! | 1 | T | TSval and TSecr LSB(8,15) follow (else STATIC) |
//! | 4 | MSN | the 4 bits above the 3: MSN-LSB(7,−1) |
//! | 0–20 | SEQ, then ACK | per SS, AA |
//! | 0/6 | window | per W |
//! | 0/16 | TSval, TSecr | per T |
//! | 16 | checksum | as in the general format |
//! | 0–7 | padding | to the octet |
//!
//! Everything else (flags but PSH, IP fields, urgent pointer, strides, the
//! options skeleton, SACK blocks) must be unchanged over the VSW; if not,
//! or a field needs more bits, the packet goes in the general format. A
//! bulk transfer's full-sized data segment with PSH set is 5 octets
//! without timestamps, 7 with them, whatever the VSW's length.
//!
//! **MSN-scaled fixed payload** (short and compact formats). With
//! fixed-payload encoding (§6.1) a number is m·stride + n; a bulk sender
//! advances m by one per packet, and so does its MSN, so m − MSN is
//! constant while m spreads over the whole VSW (tens of strides in a
//! congestion window: LSB(8,15) of m). The short format sends W-LSB(4,8)
//! of m − MSN, the compact one W-LSB(3,4); the decompressor takes
//! m = m_ref + (MSN − MSN_ref) + (lag − lag_ref), lag = m − MSN, and n and
//! the stride from its reference, so a decompressor holding any VSW entry
//! as its reference decodes it, as W-LSB requires. A segment lost upstream
//! moves m − MSN up by one, a duplicate ACK or a retransmission down by
//! one for the packets after it, which the bits cover (−8 to +7, or −4 to
//! +3, over the VSW); a retransmission itself falls back to LSB(8,15) of
//! m. Like fixed-payload SEQ, it is used for SEQ only in SO (§5.3.2 d).
//!
//! **CO general**, first bit 1:
//!
//! | bits | field | encoding |
//! |---|---|---|
//! | 1 | `1` | general format |
//! | 3 | SEQ selector | 0: STATIC; 1: LSB(8,63); 2: LSB(14,127); 3: LSB(20,1023); 4: IRREGULAR(32); 5: fixed payload LSB(4,1) of m (6 and 7 would start `111`, which IR, IR-DYN, Add-CID and feedback start with) |
//! | 1 | X | extension octet follows |
//! | 4 | MSN | 4 LSBs; MSN-LSB(4,−1) |
//! | 2 | IP-ID selector | 0: LSB(4,0) of IP-ID − MSN; 1: LSB(4,0) of IP-ID; 2: LSB(8,0) of IP-ID − MSN; 3: IRREGULAR(16) |
//! | 3 | ACK selector | as SEQ, and 6, 7: fixed payload LSB(8,15), LSB(12,63) of m |
//! | 1 | W | window present: LSB(12,63), or IRREGULAR(16) with V |
//! | 1 | P | TCP PSH flag |
//! | 7 | CRC-7 | over the original header |
//! | 8 | extension (if X) | `mm V O F T U R`: mm MSN width 4/7/16; V window irregular; O raw options; F flags; T IP fields; U urgent pointer; R strides |
//! | 0/3/12 | MSN | the bits above the 4 (MSN-LSB(7,−1), MSN-IRREGULAR(16)) |
//! | 4/8/16 | IP-ID | per selector |
//! | 0–32 | SEQ, then ACK | per selector |
//! | 0/12/16 | window | per W and V |
//! | 12 | if F: reserved nibble 4, flags 8 | else the references' flags with P |
//! | 32 | if T: TOS 8, TTL 8, IP flags+fragment 16 | else STATIC |
//! | 16 | if U: urgent pointer | else STATIC |
//! | 32 | if R: SEQ stride 16, ACK stride 16 | else STATIC |
//! | var | compact options (unless O): if the reference's options have a timestamp, TSval and TSecr each as a 2-bit selector (STATIC, LSB(10,63), LSB(18,4095), IRREGULAR(32)) and its bits; per SACK block of the reference's option, left edge − ACK and length, each a width bit (16/32) and its bits | the rest of the options (kinds, order, padding, MSS, window scale…) is the reference's |
//! | 16 | checksum | TCP checksum XOR CRC-16/CCITT of (MSN, TOS, IP-ID, IP flags+fragment, TTL, strides) |
//! | 0–7 | padding | to the octet |
//! | 8+8n | if O: options length n, options | the whole option list, verbatim |
//!
//! then the payload. Fixed-payload encoding (§6.1): a number is m·stride + n
//! where the stride is the payload size; if every VSW entry has the same
//! stride and the same n, only m's LSBs are sent. The IPv4 total length
//! (IPv6 payload length) and header checksum are inferred (the frame's
//! length, and computed),
//! and the TCP data offset follows from the options. A field encoded with
//! `k` LSBs and offset `p` is sent that way only if it lies within
//! `[v_ref − p, v_ref + 2^k − 1 − p]` for every `v_ref` in the VSW
//! ([`wlsb`]); STATIC (k = 0) means equal to every VSW entry.
//!
//! Deviations from the profile's field list, and why: `length` and
//! `ip_chksum` are inferred, not sent (the link delimits packets, and the
//! folded checksum covers the IP fields the TCP checksum does not, so the
//! decompressor's single verification covers every reconstructed field);
//! `ecn` travels with TOS (STATIC unless T) since ECN codepoints are
//! constant per flow outside congestion marks; `ackno` uses the seqno
//! offsets rather than −1, which would exclude duplicate ACKs; IP-ID's
//! LSB(6) is not used and LSB(4) may be an offset from the MSN (a
//! per-connection counter costs 4 bits whatever the VSW's length).
//!
//! **IPv6.** The draft's TCP/IP profile names IPv4 fields only; IPv6
//! (RFC 8200) without extension headers is compressed as RFC 3095 §5.7.7.3
//! and RFC 6846's IPv6 chains treat it. A context knows its IP version from its IR
//! (type `0xF9`, a value RFC 3095 §5.2 leaves unused, in place of `0xFD`),
//! whose static chain is `0110` · flow label 20 bits · next header 1 (6) ·
//! source address 16 · destination address 16 · source port 2 ·
//! destination port 2 (40 octets); the dynamic chain, in IR and IR-DYN, is
//! the IPv4 one with traffic class 1 and hop limit 1 in place of TOS, IP-ID,
//! IP flags+fragment offset and TTL (24 octets + TCP options). IPv6 has no
//! IP-ID, so the CO formats carry no IP-ID bits: in the short format the I
//! bit is 1 ("unchanged"; 0 is refused), in the general one the IP-ID
//! selector is 0 and no IP-ID field follows (other values are refused),
//! and the extension's T bit carries traffic class and hop limit (16 bits,
//! no flags+fragment). The payload length is inferred as IPv4's total
//! length is; the CRCs cover the IPv6 and TCP headers as they are on the
//! wire; the TCP checksum covers the RFC 8200 §8.1 pseudo-header. Contexts
//! are keyed by the static chain, so a new flow label is a new flow (RFC
//! 6437 labels are constant per flow). The trackers' MSS estimate is MTU −
//! 60. VJ is IPv4-only (RFC 1144): it sends IPv6 packets as they are
//! (TYPE_IP), headers uncompressed.
//!
//! **Feedback** (decompressor to compressor) `11110KKR` · MSN 16 · TCP
//! checksum 16 ([`format::Feedback`]): KK 0 ACK, 1 NACK, 2 STATIC-NACK; R
//! set for R-mode.

#![forbid(unsafe_code)]

mod bits;
#[cfg(feature = "capture")]
pub mod capture;
pub mod compressor;
mod crc;
pub mod cwnd;
pub mod decompressor;
pub mod format;
pub mod infer;
pub mod iphc;
pub mod packet;
pub mod replay;
pub mod scheme;
pub mod synth;
#[cfg(feature = "throughput")]
pub mod throughput;
pub mod vj;
mod vsw;
pub mod wlsb;

pub use compressor::{CompressError, Compressed, Compressor, CompressorConfig, CompressorState, FeedbackError};
pub use decompressor::{DecompressError, Decompressed, Decompressor, DecompressorConfig, DecompressorState};
pub use format::{Feedback, FeedbackKind, FormatError};
pub use infer::CrossedPacket;
pub use iphc::{IphcCompressor, IphcConfig, IphcDecompressor};
pub use packet::{checksums_ok, fix_checksums, Packet, ParseError, TcpIpHeader, TcpOption};
pub use scheme::{ContextRecovery, HeaderCompressor, HeaderDecompressor, Ideal, Scheme, Uncompressed};
pub use vj::{VjCompressor, VjDecompressor};

/// The mode of operation (§5.5), the same at both ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Unidirectional: no feedback.
    U,
    /// Bidirectional Optimistic: ACK(O) for IR/IR-DYN, NACK(O) on failure.
    O,
    /// Bidirectional Reliable: ACK(R) for context updates, NACK(R).
    R,
}

/// The kind of a compressed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketKind {
    /// IR: the static and dynamic chains (§5.2.1), the whole header.
    Ir,
    /// IR-DYN: the dynamic chain only, against the context's static part.
    IrDyn,
    /// A compressed packet (CO): fields encoded against the VSW.
    Co,
}

/// One packet's values as the VSW (compressor) or the reference
/// (decompressor) holds them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    pub msn: u16,
    /// The header, with the true TCP checksum.
    pub h: TcpIpHeader,
    pub opt: format::OptInfo,
    /// TSval and TSecr (0 without a timestamp option).
    pub ts: (u32, u32),
    /// Fixed-payload strides of SEQ and ACK (0: none).
    pub strides: (u16, u16),
    pub payload_len: u16,
    pub sent_as_ir: bool,
    /// Compressor only: SEQ and ACK as m·stride + n with the record's own
    /// strides, (m, n) each, so the VSW's fixed-payload analysis divides
    /// once per packet rather than once per packet and VSW entry (0 without
    /// a stride).
    pub fp: [(u32, u32); 2],
}

impl Record {
    /// The layout a compressed packet decoded against this record has.
    pub(crate) fn shape(&self) -> format::OptShape {
        format::OptShape { ipv6: self.h.ipv6.is_some(), ..self.opt.shape() }
    }

    /// Fills in [`Record::fp`] from the header and the strides.
    pub(crate) fn set_fp(&mut self) {
        let split = |v: u32, s: u16| if s == 0 { (0, 0) } else { (v / s as u32, v % s as u32) };
        self.fp = [split(self.h.seq, self.strides.0), split(self.h.ack, self.strides.1)];
    }

    #[cfg(test)]
    pub(crate) fn with_fp(mut self) -> Record {
        self.set_fp();
        self
    }
}
