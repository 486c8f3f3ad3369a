//! The match finder a compressor keeps between messages, of the kind its
//! algorithm encodes with, and the encoding of one message's tokens.

use crate::bits::BitWriter;
use crate::config::Algorithm;
use crate::lzss::{Effort, LzssFormat, MatchFinder};

/// A match finder over a bytecode's fresh window, hashed once and cloned
/// into each new compressor with that bytecode
/// ([`crate::Compressor::fresh_finder`], [`crate::Compressor::adopt_finder`]).
#[derive(Debug, Clone)]
pub struct FreshFinder(pub(crate) Finder);

/// The encoder's match finder, kept between messages.
#[derive(Debug, Clone)]
pub(crate) enum Finder {
    Lzss(MatchFinder),
    #[cfg(any(feature = "deflate", feature = "lz77"))]
    Chains(crate::chains::MatchFinder),
}

/// A point in a [`Finder`]'s history.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FinderMark {
    Lzss(crate::lzss::HistoryMark),
    #[cfg(any(feature = "deflate", feature = "lz77"))]
    Chains(crate::chains::HistoryMark),
}

impl Finder {
    pub(crate) fn for_algorithm(algorithm: Algorithm) -> Finder {
        match algorithm {
            Algorithm::Lzss => Finder::Lzss(MatchFinder::default()),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            _ => Finder::Chains(crate::chains::MatchFinder::default()),
        }
    }

    /// Whether this is the kind of finder `algorithm` encodes with.
    pub(crate) fn serves(&self, algorithm: Algorithm) -> bool {
        match self {
            Finder::Lzss(_) => algorithm == Algorithm::Lzss,
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(_) => algorithm != Algorithm::Lzss,
        }
    }

    pub(crate) fn rebuilds(&self) -> usize {
        match self {
            Finder::Lzss(f) => f.rebuilds(),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => f.rebuilds(),
        }
    }

    pub(crate) fn prepare(&mut self, window: &[u8]) {
        match self {
            Finder::Lzss(f) => f.prepare(window),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => f.prepare(window),
        }
    }

    pub(crate) fn append(&mut self, bytes: &[u8]) {
        match self {
            Finder::Lzss(f) => f.append(bytes),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => f.append(bytes),
        }
    }

    pub(crate) fn append_hashed(&mut self, bytes: &[u8]) {
        match self {
            Finder::Lzss(f) => f.append_hashed(bytes),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => f.append_hashed(bytes),
        }
    }

    pub(crate) fn mark(&mut self) -> FinderMark {
        match self {
            Finder::Lzss(f) => FinderMark::Lzss(f.mark()),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            Finder::Chains(f) => FinderMark::Chains(f.mark()),
        }
    }

    pub(crate) fn rollback(&mut self, mark: FinderMark) {
        match (self, mark) {
            (Finder::Lzss(f), FinderMark::Lzss(m)) => f.rollback(m),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            (Finder::Chains(f), FinderMark::Chains(m)) => f.rollback(m),
            #[cfg(any(feature = "deflate", feature = "lz77"))]
            _ => {}
        }
    }
}

/// The algorithm's tokens for `message`, written after `window` (the
/// circular buffer in chronological order) and `extra` (bytes the
/// mechanism adds to the buffer before the message).
pub(crate) fn encode_tokens(
    algorithm: Algorithm,
    finder: &mut Finder,
    window: &[u8],
    extra: &[u8],
    message: &[u8],
    format: LzssFormat,
    effort: Effort,
) -> Vec<u8> {
    let buffer_size = window.len();
    finder.prepare(window);
    finder.append(extra);
    // Room for the tokens of a message compressed to a quarter; more
    // grows the buffer.
    let room = message.len() / 4 + 32;
    match (algorithm, finder) {
        (Algorithm::Lzss, Finder::Lzss(f)) => {
            let mut bw = BitWriter::with_capacity(room);
            f.encode(message, buffer_size, format, effort, &mut bw);
            bw.finish()
        }
        #[cfg(feature = "deflate")]
        (Algorithm::Deflate, Finder::Chains(f)) => {
            let mut out = Vec::with_capacity(room);
            let params = crate::deflate::DeflateParams { max_chain: effort.max_chain };
            crate::deflate::encode_after(f, message, buffer_size, &params, &mut out);
            out
        }
        #[cfg(feature = "lz77")]
        (Algorithm::Lz77, Finder::Chains(f)) => {
            let mut out = Vec::with_capacity(room);
            let params = crate::lz77::Lz77Params { max_chain: effort.max_chain };
            crate::lz77::encode_after(f, message, buffer_size, &params, &mut out);
            out
        }
        #[cfg(any(feature = "deflate", feature = "lz77"))]
        (algorithm, finder) => {
            // A finder of the other kind (never kept: Compressor::finder
            // makes the algorithm's own); start one of the right kind.
            *finder = Finder::for_algorithm(algorithm);
            encode_tokens(algorithm, finder, window, extra, message, format, effort)
        }
    }
}
