//! What a compressor is configured with: the algorithm, the RFC 3321
//! mechanism, the transport and the effort; and how compressing fails.

use sigcomp::Transport;

use crate::bytecode::{self, Image};
use crate::dictionary::Priorities;
use crate::lzss::Effort;

/// Compression algorithm (its bytecode fragment and encoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// The modified LZSS of the 2005 SigComp performance thesis §7.8.4.
    Lzss,
    /// Deflate (RFC 1951) tokens, fixed Huffman codes.
    #[cfg(feature = "deflate")]
    Deflate,
    /// LZ77 tokens.
    #[cfg(feature = "lz77")]
    Lz77,
}

impl Algorithm {
    /// Every algorithm this build has.
    pub const ALL: &'static [Algorithm] = &[
        Algorithm::Lzss,
        #[cfg(feature = "deflate")]
        Algorithm::Deflate,
        #[cfg(feature = "lz77")]
        Algorithm::Lz77,
    ];

    /// The algorithm's name as the command line and reports spell it
    /// (`lzss`, `deflate`, `lz77`); [`Algorithm::parse`] reads it back.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Lzss => "lzss",
            #[cfg(feature = "deflate")]
            Algorithm::Deflate => "deflate",
            #[cfg(feature = "lz77")]
            Algorithm::Lz77 => "lz77",
        }
    }

    /// The algorithm named `s` ([`Algorithm::name`]); `None` for an
    /// unknown name or one whose Cargo feature this build lacks.
    pub fn parse(s: &str) -> Option<Algorithm> {
        Algorithm::ALL.iter().copied().find(|a| a.name() == s)
    }

    /// The assembled bytecode (mechanism program for `mechanism` + this
    /// algorithm's fragment); `extent` chooses between the dynamic and
    /// shared programs' two forms and is ignored by the others.
    pub fn image(self, mechanism: Mechanism, extent: SnapshotExtent) -> &'static Image {
        use bytecode::images as i;
        use Mechanism::*;
        use SnapshotExtent::{Short, Whole};
        match (self, mechanism, extent) {
            (Algorithm::Lzss, Basic, _) => &i::LZSS_BASIC,
            (Algorithm::Lzss, Static, _) => &i::LZSS_STATIC,
            (Algorithm::Lzss, Dynamic, Whole) => &i::LZSS_DYNAMIC,
            (Algorithm::Lzss, Dynamic, Short) => &i::LZSS_DYNAMIC_SHORT,
            (Algorithm::Lzss, Shared, Whole) => &i::LZSS_SHARED,
            (Algorithm::Lzss, Shared, Short) => &i::LZSS_SHARED_SHORT,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Basic, _) => &i::DEFLATE_BASIC,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Static, _) => &i::DEFLATE_STATIC,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Dynamic, Whole) => &i::DEFLATE_DYNAMIC,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Dynamic, Short) => &i::DEFLATE_DYNAMIC_SHORT,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Shared, Whole) => &i::DEFLATE_SHARED,
            #[cfg(feature = "deflate")]
            (Algorithm::Deflate, Shared, Short) => &i::DEFLATE_SHARED_SHORT,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Basic, _) => &i::LZ77_BASIC,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Static, _) => &i::LZ77_STATIC,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Dynamic, Whole) => &i::LZ77_DYNAMIC,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Dynamic, Short) => &i::LZ77_DYNAMIC_SHORT,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Shared, Whole) => &i::LZ77_SHARED,
            #[cfg(feature = "lz77")]
            (Algorithm::Lz77, Shared, Short) => &i::LZ77_SHARED_SHORT,
        }
    }
}

/// What a dynamic or shared snapshot saves of the peer's UDVM memory
/// (asm/mechanism.asm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SnapshotExtent {
    /// Memory from address 64 to the circular buffer's end, at every
    /// message.
    #[default]
    Whole,
    /// Memory from address 64 to the history's end until the history first
    /// wraps around the circular buffer (the dictionary part it has not
    /// overwritten is read again from its state): fewer bytes hashed and
    /// stored per message, for about 80 more bytes of bytecode uploaded
    /// once per compartment.
    Short,
}

/// How much state the compressor builds at the peer (the 2005 SigComp performance thesis §9.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    /// Bytecode uploaded in every message; nothing saved.
    Basic,
    /// The bytecode is saved as state and named in later headers.
    Static,
    /// Each message saves the decompressor's memory (bytecode, dictionary
    /// part, history); later messages continue from the newest one the
    /// peer has acknowledged.
    Dynamic,
    /// Dynamic, plus messages received from the peer are used as history
    /// (RFC 3321 shared mode): each side saves what it sends.
    Shared,
}

impl Mechanism {
    /// The four mechanisms, from the least state at the peer to the most.
    pub const ALL: [Mechanism; 4] = [Mechanism::Basic, Mechanism::Static, Mechanism::Dynamic, Mechanism::Shared];

    /// The mechanism's name as the command line and reports spell it
    /// (`basic`, `static`, `dynamic`, `shared`); [`Mechanism::parse`] reads
    /// it back.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Basic => "basic",
            Mechanism::Static => "static",
            Mechanism::Dynamic => "dynamic",
            Mechanism::Shared => "shared",
        }
    }

    /// The mechanism named `s` ([`Mechanism::name`]); `None` for an
    /// unknown name.
    pub fn parse(s: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == s)
    }

    pub(crate) fn saves_snapshots(self) -> bool {
        matches!(self, Mechanism::Dynamic | Mechanism::Shared)
    }
}

/// How hard the compressor searches for matches, 1 (fastest) to 9
/// (smallest output), as zlib's levels. The default, 6, is the exact
/// shortest-path parse over 512 chain links ([`Effort::default`]); 1–3
/// take the longest match at each position (greedy) over short chains, and
/// save short snapshots ([`SnapshotExtent::Short`]), for a proxy whose CPU
/// is short; 7–9 follow longer chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Level(u8);

impl Level {
    /// Greedy over 4 chain links.
    pub const FASTEST: Level = Level(1);
    /// [`Effort::default`].
    pub const DEFAULT: Level = Level(6);
    /// The longest matches within 4,096 chain links, parsed exactly.
    pub const SMALLEST: Level = Level(9);

    /// Level `n`, if 1 ≤ `n` ≤ 9.
    pub fn new(n: u8) -> Option<Level> {
        (1..=9).contains(&n).then_some(Level(n))
    }

    /// The level's number, 1–9.
    pub fn get(self) -> u8 {
        self.0
    }

    /// What the dynamic and shared mechanisms' snapshots save at this
    /// level: short ones at 1–3.
    pub fn snapshot_extent(self) -> SnapshotExtent {
        if self.0 <= 3 {
            SnapshotExtent::Short
        } else {
            SnapshotExtent::Whole
        }
    }

    /// What the encoder does at this level.
    pub fn effort(self) -> Effort {
        let (max_chain, lazy, nice_len) = match self.0 {
            1 => (4, false, 16),
            2 => (8, false, 32),
            3 => (32, false, 32),
            4 => (16, true, 32),
            5 => (64, true, 32),
            6 => return Effort::default(),
            7 => (1024, true, 64),
            8 => (4096, true, 128),
            _ => return Effort::exhaustive(4096, true),
        };
        Effort { max_chain, lazy, nice_len }
    }
}

impl Default for Level {
    fn default() -> Self {
        Level::DEFAULT
    }
}

/// A level number outside 1–9.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelError(pub u8);

impl std::fmt::Display for LevelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is not a level from 1 to 9", self.0)
    }
}

impl std::error::Error for LevelError {}

impl TryFrom<u8> for Level {
    type Error = LevelError;

    fn try_from(n: u8) -> Result<Level, LevelError> {
        Level::new(n).ok_or(LevelError(n))
    }
}

/// Compressor settings.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// The encoder and bytecode fragment messages are compressed with
    /// (default LZSS).
    pub algorithm: Algorithm,
    /// How much state the compressor builds at the peer (default shared).
    pub mechanism: Mechanism,
    /// Message-based (UDP): states are used only once acknowledged.
    /// Stream-based (TCP): states are usable once sent.
    pub transport: Transport,
    /// Longest match: 18, 66 or 258 bytes (LZSS; the 2005 SigComp performance thesis §9.2,
    /// which found 258 best; the default). Deflate and LZ77 keep their own
    /// formats' limits (`deflate::MAX_MATCH`, `lz77::MAX_MATCH`).
    pub lookahead: usize,
    /// Part of the SIP/SDP dictionary in the window; None for none. With a
    /// user dictionary ([`crate::Compressor::with_user_dictionary`],
    /// [`crate::Endpoint::set_user_dictionary`]) that one is loaded instead.
    pub dictionary: Option<Priorities>,
    /// How hard the encoder searches ([`Level::effort`]): LZSS uses all of
    /// it, Deflate and LZ77 only its chain length.
    pub level: Level,
    /// Also run the peer's decompressor on every message (RFC 3320 §5.1)
    /// and check it against what the compressor computes: the output, the
    /// states it creates, the cycles within the bound. Off, an LZSS
    /// message is not run at all (the other algorithms always are); the
    /// tests turn it on.
    pub verify: bool,
}

impl Config {
    /// The bytecode this configuration uploads: the algorithm's program for
    /// the mechanism, with the level's snapshot extent.
    pub fn image(&self) -> &'static Image {
        self.algorithm.image(self.mechanism, self.level.snapshot_extent())
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            algorithm: Algorithm::Lzss,
            mechanism: Mechanism::Shared,
            transport: Transport::Message,
            lookahead: 258,
            dictionary: Priorities::new(1, 5),
            level: Level::DEFAULT,
            verify: false,
        }
    }
}

/// Why a message could not be compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompressError {
    /// The lookahead is not 18, 66 or 258 (or another 2^k + 2).
    BadLookahead(usize),
    /// The peer's parameters are not ones RFC 3320 §3.3 allows (from a
    /// caller; announcements and NACKs are validated before they are used).
    PeerParams(sigcomp::params::ParamError),
    /// The peer's memory is too small for this bytecode.
    PeerTooSmall {
        /// The peer's decompression memory size in bytes (RFC 3320 §3.3).
        dms: u32,
    },
    /// The message, compressed, does not fit the peer's memory or cycles:
    /// the model decompressor failed.
    DoesNotFit(sigcomp::Failure),
    /// The model decompressed something else (a bug; never sent).
    Mismatch,
    /// The SigComp header cannot be written (RFC 3320 §7): a malformed
    /// returned feedback item, or bytecode over 4095 bytes.
    Emit(sigcomp::wire::EmitError),
}

impl std::fmt::Display for CompressError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompressError::BadLookahead(n) => write!(f, "look-ahead {n} is not 18, 66 or 258"),
            CompressError::PeerParams(e) => write!(f, "the peer's parameters: {e}"),
            CompressError::PeerTooSmall { dms } => {
                write!(f, "a decompression memory of {dms} bytes is too small for the bytecode")
            }
            CompressError::DoesNotFit(fl) => {
                write!(f, "the compressed message would fail at the peer: {fl}")
            }
            CompressError::Mismatch => f.write_str("model decompression differs from the input"),
            CompressError::Emit(e) => write!(f, "the SigComp header cannot be written: {e}"),
        }
    }
}

impl std::error::Error for CompressError {}

impl From<sigcomp::wire::EmitError> for CompressError {
    fn from(e: sigcomp::wire::EmitError) -> CompressError {
        CompressError::Emit(e)
    }
}
