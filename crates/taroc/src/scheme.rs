//! One API over every scheme the draft's Appendix A compares: TAROC, VJ
//! (RFC 1144), IPHC (RFC 2507), NONE and IDEAL, so the same traffic runs
//! through each.

use crate::compressor::{CompressError, Compressor, CompressorConfig, FeedbackError};
use crate::decompressor::{DecompressError, Decompressor, DecompressorConfig};
use crate::infer::CrossedPacket;
use crate::iphc::{IphcCompressor, IphcConfig, IphcDecompressor};
use crate::packet::{checksums_ok, Packet};
use crate::vj::{VjCompressor, VjDecompressor};
use crate::Mode;

/// The sending side of a header compression scheme.
pub trait HeaderCompressor {
    /// Compresses one IPv4/TCP or IPv6/TCP packet, appending the packet to
    /// send to `out`; returns how many of those bytes are header.
    fn compress_packet(&mut self, packet: &[u8], out: &mut Vec<u8>) -> Result<usize, CompressError>;

    /// Applies a feedback packet from the peer decompressor.
    fn feedback(&mut self, _data: &[u8]) -> Result<(), FeedbackError> {
        Ok(())
    }

    /// The packets held in the window of references of the flow of the
    /// packet compressed last: TAROC's VSW, which W = K·MAX(cwnd,
    /// 2·ssthresh) bounds in sequence space (§5.3.1 b), within the
    /// compressor's floor and cap. None for a scheme without one (none,
    /// VJ, IDEAL) and before the first packet.
    fn reference_window(&self) -> Option<usize> {
        None
    }

    /// The packet compressed last, for the decompressor of the other
    /// direction at the same end (schemes that infer across directions).
    fn poll_crossed(&mut self) -> Option<CrossedPacket> {
        None
    }

    /// A packet of the other direction that the decompressor at the same
    /// end delivered.
    fn note_reverse(&mut self, _p: &CrossedPacket) {}
}

/// Context recovery over loss episodes (a packet lost or damaged on the
/// link, until the next correct decompression), apart from the link's own
/// damage: the packets that arrived undamaged but were refused. TAROC's
/// goal is that they stay within the compressor's window of references,
/// W = K·cwnd (draft-ietf-rohc-tcp-taroc-04 §5.3.1 b, §6.1): the
/// decompressor's last good reference must not leave it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextRecovery {
    /// Context-damaged packets over every episode (one a run ends in
    /// counted until its end).
    pub total: u64,
    /// The most context-damaged packets in one episode.
    pub max: u64,
    /// Episodes whose context damage exceeded the compressor's window (in
    /// packets) as the packet that began them left it; only episodes that
    /// began with a window count, so 0 for schemes without one.
    pub beyond_window: u64,
    /// The largest excess of such an episode over its window, in packets.
    pub beyond_window_max: u64,
}

impl ContextRecovery {
    /// Counts an ended episode: its context-damaged packets and the window
    /// it began with (None: the scheme has none).
    pub fn close(&mut self, context_damaged: u64, window: Option<usize>) {
        self.total += context_damaged;
        self.max = self.max.max(context_damaged);
        if let Some(w) = window.map(|w| w as u64).filter(|&w| context_damaged > w) {
            self.beyond_window += 1;
            self.beyond_window_max = self.beyond_window_max.max(context_damaged - w);
        }
    }

    /// Adds another count's episodes.
    pub fn add(&mut self, other: &ContextRecovery) {
        self.total += other.total;
        self.max = self.max.max(other.max);
        self.beyond_window += other.beyond_window;
        self.beyond_window_max = self.beyond_window_max.max(other.beyond_window_max);
    }

    /// Context-damaged packets per episode, over `episodes`.
    pub fn mean(&self, episodes: u64) -> f64 {
        self.total as f64 / episodes.max(1) as f64
    }
}

/// The receiving side of a header compression scheme.
pub trait HeaderDecompressor {
    /// Decompresses one received packet, appending the IP/TCP packet to
    /// `out` only if it passes its checksums; returns its length.
    fn decompress_packet(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, DecompressError>;

    /// Appends the next feedback packet for the compressor to `out`.
    fn poll_feedback(&mut self, _out: &mut Vec<u8>) -> bool {
        false
    }

    /// The link layer dropped a damaged frame (only VJ reacts).
    fn link_error(&mut self) {}

    /// The packet that last became a reference, for the compressor of the
    /// other direction at the same end (schemes that infer across
    /// directions).
    fn poll_crossed(&mut self) -> Option<CrossedPacket> {
        None
    }

    /// A packet of the other direction that the compressor at the same end
    /// sent.
    fn note_reverse(&mut self, _p: &CrossedPacket) {}
}

/// The schemes of the draft's Appendix A.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// TAROC in the given mode.
    Taroc(Mode),
    /// TAROC in O-mode with cross-direction inference ([`crate::infer`]),
    /// an extension beyond the draft.
    TarocInfer,
    /// RFC 1144.
    Vj,
    /// RFC 2507 with header requests; `twice`: with the twice algorithm
    /// (§10.1) too. The draft's IPHC is `twice: false` (Appendix A.2).
    Iphc {
        /// Whether the decompressor applies the twice algorithm.
        twice: bool,
    },
    /// No compression: 40-byte (and longer, with options) headers.
    None,
    /// "Header compression \[that\] does not introduce additional errors",
    /// counted as 4-byte headers (the draft's Appendix A.2).
    Ideal,
}

impl Scheme {
    /// Whether its compressor keeps a window of references for a loss
    /// episode to exceed ([`HeaderCompressor::reference_window`]): only
    /// TAROC's, its VSW.
    pub fn keeps_reference_window(self) -> bool {
        matches!(self, Scheme::Taroc(_) | Scheme::TarocInfer)
    }

    /// TAROC's compressor and decompressor parameters for the scheme, if
    /// it is TAROC.
    pub fn taroc_configs(self) -> Option<(CompressorConfig, DecompressorConfig)> {
        match self {
            Scheme::Taroc(mode) => Some((CompressorConfig::with_mode(mode), DecompressorConfig::with_mode(mode))),
            Scheme::TarocInfer => Some((
                CompressorConfig { infer: true, ..CompressorConfig::with_mode(Mode::O) },
                DecompressorConfig { infer: true, ..DecompressorConfig::with_mode(Mode::O) },
            )),
            _ => None,
        }
    }

    /// A compressor/decompressor pair with default parameters.
    pub fn pair(self) -> (Box<dyn HeaderCompressor>, Box<dyn HeaderDecompressor>) {
        match self {
            Scheme::Taroc(_) | Scheme::TarocInfer => {
                let (c, d) = self.taroc_configs().expect("a TAROC scheme");
                (Box::new(Compressor::new(c)), Box::new(Decompressor::new(d)))
            }
            Scheme::Vj => (Box::new(VjCompressor::new()), Box::new(VjDecompressor::new())),
            Scheme::Iphc { twice } => {
                let cfg = if twice { IphcConfig::TWICE } else { IphcConfig::DRAFT };
                (Box::new(IphcCompressor::new(cfg)), Box::new(IphcDecompressor::new(cfg)))
            }
            Scheme::None => (Box::new(Uncompressed), Box::new(Uncompressed)),
            Scheme::Ideal => (Box::new(Ideal), Box::new(Ideal)),
        }
    }
}

impl HeaderCompressor for Compressor {
    fn compress_packet(&mut self, packet: &[u8], out: &mut Vec<u8>) -> Result<usize, CompressError> {
        Ok(self.compress(packet, out)?.header_len)
    }

    fn feedback(&mut self, data: &[u8]) -> Result<(), FeedbackError> {
        self.handle_feedback(data).map(|_| ())
    }

    fn reference_window(&self) -> Option<usize> {
        self.last_context().map(|cid| self.vsw_len(cid))
    }

    fn poll_crossed(&mut self) -> Option<CrossedPacket> {
        Compressor::poll_crossed(self)
    }

    fn note_reverse(&mut self, p: &CrossedPacket) {
        Compressor::note_reverse(self, p);
    }
}

impl HeaderDecompressor for Decompressor {
    fn decompress_packet(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, DecompressError> {
        Ok(self.decompress(data, out)?.len)
    }

    fn poll_feedback(&mut self, out: &mut Vec<u8>) -> bool {
        match Decompressor::poll_feedback(self) {
            Some(f) => {
                f.emit(out);
                true
            }
            None => false,
        }
    }

    fn poll_crossed(&mut self) -> Option<CrossedPacket> {
        Decompressor::poll_crossed(self)
    }

    fn note_reverse(&mut self, p: &CrossedPacket) {
        Decompressor::note_reverse(self, p);
    }
}

impl HeaderCompressor for VjCompressor {
    fn compress_packet(&mut self, packet: &[u8], out: &mut Vec<u8>) -> Result<usize, CompressError> {
        self.compress(packet, out)
    }
}

impl HeaderDecompressor for VjDecompressor {
    fn decompress_packet(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, DecompressError> {
        let start = out.len();
        self.decompress(data, out)?;
        Ok(out.len() - start)
    }

    fn link_error(&mut self) {
        VjDecompressor::link_error(self);
    }
}

impl HeaderCompressor for IphcCompressor {
    fn compress_packet(&mut self, packet: &[u8], out: &mut Vec<u8>) -> Result<usize, CompressError> {
        self.compress(packet, out)
    }

    fn feedback(&mut self, data: &[u8]) -> Result<(), FeedbackError> {
        self.handle_feedback(data)
    }
}

impl HeaderDecompressor for IphcDecompressor {
    fn decompress_packet(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, DecompressError> {
        Ok(self.decompress(data, out)?)
    }

    fn poll_feedback(&mut self, out: &mut Vec<u8>) -> bool {
        IphcDecompressor::poll_feedback(self, out)
    }
}

/// No compression: packets go as they are.
#[derive(Debug, Default, Clone, Copy)]
pub struct Uncompressed;

fn pass(data: &[u8], out: &mut Vec<u8>) -> Result<usize, DecompressError> {
    if !checksums_ok(data) {
        return Err(DecompressError::Verification);
    }
    out.extend_from_slice(data);
    Ok(data.len())
}

impl HeaderCompressor for Uncompressed {
    fn compress_packet(&mut self, packet: &[u8], out: &mut Vec<u8>) -> Result<usize, CompressError> {
        let p = Packet::parse(packet)?;
        out.extend_from_slice(packet);
        Ok(p.header.len())
    }
}

impl HeaderDecompressor for Uncompressed {
    fn decompress_packet(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, DecompressError> {
        pass(data, out)
    }
}

/// IDEAL (Appendix A.2): never loses or damages context and counts 4
/// header bytes per packet. It carries the real headers so the receiver
/// can rebuild the packet; a link model should expose only the counted
/// `4 + payload` bytes of each packet to errors.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ideal;

/// The header size IDEAL is counted as (as VJHC's, Appendix A.2).
pub const IDEAL_HEADER_LEN: usize = 4;

impl HeaderCompressor for Ideal {
    fn compress_packet(&mut self, packet: &[u8], out: &mut Vec<u8>) -> Result<usize, CompressError> {
        Packet::parse(packet)?;
        out.extend_from_slice(packet);
        Ok(IDEAL_HEADER_LEN)
    }
}

impl HeaderDecompressor for Ideal {
    fn decompress_packet(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<usize, DecompressError> {
        pass(data, out)
    }
}
