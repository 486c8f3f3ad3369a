//! # sigcomp-compress
//!
//! The sending side of SigComp: compressors whose output any RFC 3320
//! decompressor decodes (their decompression algorithms are UDVM bytecode
//! written in the assembly language of RFC 4464, under `asm/`), the
//! mechanisms that make SigComp pay off — static, dynamic and shared
//! compression (RFC 3321; the 2005 SigComp performance thesis §3.4) — and a
//! sans-IO [`Endpoint`] that pairs a compressor per compartment with the
//! core's decompressor so feedback, shared states and NACKs flow between
//! them, for any number of peers.

#![forbid(unsafe_code)]

pub mod bits;
pub mod bytecode;
#[cfg(any(feature = "deflate", feature = "lz77"))]
pub mod chains;
pub mod compressor;
pub mod dictionary;
pub mod endpoint;
pub mod lzss;

pub use compressor::{Algorithm, CompressError, Compressed, Compressor, Config, Mechanism};
pub use dictionary::Priorities;
pub use endpoint::{
    Accepted, Endpoint, EndpointConfig, EndpointError, EndpointMetrics, Incoming, ReceiveError, Received, ReceivedNack,
    DEFAULT_SCRATCH_COMPARTMENTS,
};
pub use lzss::Effort;
#[cfg(feature = "deflate")]
pub mod deflate;
#[cfg(feature = "lz77")]
pub mod lz77;
