//! TAROC (draft-ietf-rohc-tcp-taroc-04, the `taroc` crate) over a TCP
//! flow's packets, without link faults: the header bytes each packet
//! would have taken.
//!
//! `taroc::replay::replay` gives a flow's totals; the per-message RAN
//! delay needs each packet's compressed header size, so the packets also
//! run here through the same scheme pair one by one, each direction with
//! its own compressor and decompressor and the decompressor's feedback
//! applied at once (a faultless link, as replay does it), and with
//! cross-direction inference each end's compressor and decompressor
//! telling each other what crossed. The two totals agree (a test checks
//! it).

use serde::Serialize;
use taroc::replay::{replay, LinkConfig};
use taroc::{Mode, Packet, Scheme};

/// TAROC on one flow.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TarocRun {
    /// Per packet of the flow (index as in the flow's segments): its
    /// TCP/IP header bytes as captured and as TAROC sends them; `None` for
    /// a packet TAROC does not take (IPv6, IPv4 options, fragments).
    #[serde(skip)]
    pub per_segment: Vec<Option<(usize, usize)>>,
    /// Packets TAROC compressed.
    pub packets: usize,
    /// Their TCP/IP header bytes as captured.
    pub header_bytes_before: u64,
    /// Their header bytes as TAROC sent them.
    pub header_bytes_after: u64,
    /// Packets TAROC does not take.
    pub not_compressed: usize,
    /// Packets the decompressor did not give back identical: must be 0.
    pub mismatches: usize,
    /// `taroc::replay`'s totals for the same packets.
    pub replay_header_bytes_after: u64,
    /// Packets `taroc::replay` delivered identical.
    pub replay_delivered: usize,
    /// Packets `taroc::replay` delivered with a wrong header: must be 0.
    pub replay_undetected: usize,
}

/// Runs TAROC in `mode` over `packets` (one per flow segment, `None`
/// where the segment has no IPv4 packet), with cross-direction inference
/// if `infer` (O-mode only).
pub fn run(packets: &[Option<&[u8]>], mode: Mode, infer: bool) -> TarocRun {
    let scheme = if infer && mode == Mode::O { Scheme::TarocInfer } else { Scheme::Taroc(mode) };
    let mut out = TarocRun { per_segment: Vec::with_capacity(packets.len()), ..TarocRun::default() };
    // Directions by source address and port: [first seen, other].
    let mut first_src: Option<([u8; 4], u16)> = None;
    let mut dirs = [scheme.pair(), scheme.pair()];
    let mut taken: Vec<Vec<u8>> = Vec::new();
    let (mut wire, mut back, mut feedback) = (Vec::new(), Vec::new(), Vec::new());
    for p in packets {
        let Some(p) = p else {
            out.per_segment.push(None);
            out.not_compressed += 1;
            continue;
        };
        let Ok(parsed) = Packet::parse(p) else {
            out.per_segment.push(None);
            out.not_compressed += 1;
            continue;
        };
        let src = (parsed.header.src, parsed.header.src_port);
        let d = usize::from(*first_src.get_or_insert(src) != src);
        wire.clear();
        let Ok(after) = dirs[d].0.compress_packet(p, &mut wire) else {
            out.per_segment.push(None);
            out.not_compressed += 1;
            continue;
        };
        if let Some(x) = dirs[d].0.poll_crossed() {
            dirs[1 - d].1.note_reverse(&x);
        }
        back.clear();
        if dirs[d].1.decompress_packet(&wire, &mut back).is_err() || back != *p {
            out.mismatches += 1;
        }
        if let Some(x) = dirs[d].1.poll_crossed() {
            dirs[1 - d].0.note_reverse(&x);
        }
        let (comp, decomp) = &mut dirs[d];
        while decomp.poll_feedback(&mut feedback) {
            // Feedback a compressor cannot use is ignored, as replay does.
            let _ = comp.feedback(&feedback);
            feedback.clear();
        }
        let before = parsed.header.len();
        out.packets += 1;
        out.header_bytes_before += before as u64;
        out.header_bytes_after += after as u64;
        out.per_segment.push(Some((before, after)));
        taken.push(p.to_vec());
    }
    let (report, _) = replay(scheme, &taken, &LinkConfig::default(), false);
    out.replay_header_bytes_after = report.header_bytes_after;
    out.replay_delivered = report.delivered;
    out.replay_undetected = report.undetected;
    out
}
