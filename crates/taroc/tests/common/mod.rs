//! A two-direction link: each direction has its own compressor and
//! decompressor; feedback goes back to the compressor of the same
//! direction at once.

#![allow(dead_code)]

use taroc::synth::Dir;
use taroc::{
    checksums_ok, Compressor, CompressorConfig, Decompressor, DecompressorConfig, HeaderCompressor, HeaderDecompressor,
    Mode, PacketKind, Scheme,
};

/// The IP packets of a capture, `path` relative to the crate.
pub fn capture(path: &str) -> Vec<Vec<u8>> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path);
    let cap = taroc::capture::read_capture(&std::fs::read(&path).expect("reads")).expect("a capture");
    cap.packets.into_iter().map(|p| p.ip).collect()
}

/// `packets` replayed through `scheme` over `link`; every packet must come
/// out of the decompressors in order, byte for byte.
pub fn replay_exact(scheme: Scheme, packets: &[Vec<u8>], link: &taroc::replay::LinkConfig) -> taroc::replay::Report {
    let (r, emitted) = taroc::replay::replay(scheme, packets, link, true);
    assert_eq!(emitted.len(), packets.len(), "{scheme:?}: every packet delivered");
    for (i, ((_, got), sent)) in emitted.iter().zip(packets).enumerate() {
        assert_eq!(got, sent, "{scheme:?}: packet {i} in order, byte for byte");
    }
    r
}

/// What crossed the link.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub sent: usize,
    pub header_bytes_before: usize,
    pub header_bytes_after: usize,
    /// Packets emitted equal to their original.
    pub delivered: usize,
    /// Packets emitted whose headers differ from their original's (must
    /// stay 0).
    pub corrupted: usize,
    /// Packets emitted with the original headers but a payload whose bit
    /// errors cancel in the TCP checksum (no header compression's doing).
    pub payload_undetected: usize,
    /// Packets the decompressor refused.
    pub dropped: usize,
    pub ir: usize,
    pub ir_dyn: usize,
    pub feedback: usize,
}

impl Outcome {
    pub fn mean_header(&self) -> f64 {
        self.header_bytes_after as f64 / self.sent.max(1) as f64
    }
}

/// Compressed packets in flight, by which the test's link may drop,
/// reorder or damage packets: it gets each direction's queue of
/// (original, compressed) before delivery.
pub type Link<'a> = &'a mut dyn FnMut(Dir, &mut Queue);

/// (original, compressed) packets awaiting delivery.
pub type Queue = Vec<(Vec<u8>, Vec<u8>)>;

fn header_len(p: &[u8]) -> usize {
    taroc::Packet::parse(p).map_or(40, |p| p.header.len())
}

/// Runs TAROC over `packets`, delivering each packet at once unless
/// `batch` > 1, in which case `batch` packets are queued per direction and
/// handed to `link` before delivery.
pub fn run_taroc(mode: Mode, packets: &[(Dir, Vec<u8>)], batch: usize, link: Link<'_>) -> Outcome {
    run_taroc_with(CompressorConfig::with_mode(mode), DecompressorConfig::with_mode(mode), packets, batch, link)
}

pub fn run_taroc_with(
    cc: CompressorConfig,
    dc: DecompressorConfig,
    packets: &[(Dir, Vec<u8>)],
    batch: usize,
    link: Link<'_>,
) -> Outcome {
    let mut ends = [(Compressor::new(cc), Decompressor::new(dc)), (Compressor::new(cc), Decompressor::new(dc))];
    let mut queues: [Vec<(Vec<u8>, Vec<u8>)>; 2] = [Vec::new(), Vec::new()];
    let mut o = Outcome::default();
    let mut deliver =
        |dir: Dir, q: &mut Vec<(Vec<u8>, Vec<u8>)>, ends: &mut [(Compressor, Decompressor); 2], o: &mut Outcome| {
            link(dir, q);
            let (c, d) = &mut ends[dir as usize];
            for (orig, wire) in q.drain(..) {
                let mut back = Vec::new();
                match d.decompress(&wire, &mut back) {
                    Ok(_) => {
                        assert!(checksums_ok(&back), "an emitted packet fails its checksum");
                        if back == orig {
                            o.delivered += 1;
                        } else if back.len() == orig.len() && back[..header_len(&orig)] == orig[..header_len(&orig)] {
                            // Bit errors in the payload that cancel in the TCP
                            // checksum: the link's, passed without compression too.
                            o.payload_undetected += 1;
                        } else {
                            o.corrupted += 1;
                        }
                    }
                    Err(_) => o.dropped += 1,
                }
                while let Some(f) = d.poll_feedback() {
                    let mut fb = Vec::new();
                    f.emit(&mut fb);
                    // Feedback for a context the compressor never had (a
                    // damaged CID) is refused; the rest applies.
                    o.feedback += c.handle_feedback(&fb).is_ok() as usize;
                }
            }
        };
    for (dir, p) in packets {
        let (c, _) = &mut ends[*dir as usize];
        let mut wire = Vec::new();
        let r = c.compress(p, &mut wire).expect("compresses");
        o.sent += 1;
        o.header_bytes_before += header_len(p);
        o.header_bytes_after += r.header_len;
        match r.kind {
            PacketKind::Ir => o.ir += 1,
            PacketKind::IrDyn => o.ir_dyn += 1,
            PacketKind::Co => {}
        }
        let q = &mut queues[*dir as usize];
        q.push((p.clone(), wire));
        if q.len() >= batch.max(1) {
            deliver(*dir, q, &mut ends, &mut o);
        }
    }
    for dir in [Dir::Forward, Dir::Backward] {
        let mut q = std::mem::take(&mut queues[dir as usize]);
        deliver(dir, &mut q, &mut ends, &mut o);
    }
    o
}

/// Runs any scheme over `packets` without faults.
pub fn run_scheme(scheme: Scheme, packets: &[(Dir, Vec<u8>)]) -> Outcome {
    let mut ends: Vec<(Box<dyn HeaderCompressor>, Box<dyn HeaderDecompressor>)> = vec![scheme.pair(), scheme.pair()];
    let mut o = Outcome::default();
    for (dir, p) in packets {
        let (c, d) = &mut ends[*dir as usize];
        let mut wire = Vec::new();
        o.header_bytes_after += c.compress_packet(p, &mut wire).expect("compresses");
        o.header_bytes_before += header_len(p);
        o.sent += 1;
        let mut back = Vec::new();
        match d.decompress_packet(&wire, &mut back) {
            Ok(_) if back == *p => o.delivered += 1,
            Ok(_) => o.corrupted += 1,
            Err(_) => o.dropped += 1,
        }
        let mut fb = Vec::new();
        while d.poll_feedback(&mut fb) {
            c.feedback(&fb).expect("feedback applies");
            fb.clear();
        }
    }
    o
}

/// Deterministic pseudo-random numbers for link faults.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 < p
    }
}

/// Runs TAROC in `mode` over a link that flips one random bit in each
/// compressed packet with probability 5 %; returns the outcome and how many
/// packets were damaged.
pub fn run_taroc_with_single_bit_errors(mode: Mode, flow: &[(Dir, Vec<u8>)], seed: u64) -> (Outcome, usize) {
    let mut rng = Rng(seed);
    let mut damaged = 0;
    let mut link = |_: Dir, q: &mut Queue| {
        for (_, wire) in q.iter_mut() {
            if rng.chance(0.05) {
                let b = (rng.next() as usize) % (wire.len() * 8);
                wire[b / 8] ^= 1 << (b % 8);
                damaged += 1;
            }
        }
    };
    let o = run_taroc(mode, flow, 1, &mut link);
    (o, damaged)
}
