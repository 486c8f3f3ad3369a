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
//!
//! Two endpoints, one round trip. The receiver decompresses first, learns
//! from the SIP message who sent it, and only then keeps its state:
//!
//! ```
//! use std::time::Instant;
//! use sigcomp::{CompartmentId, Params, Transport};
//! use sigcomp_compress::{Config, Endpoint, EndpointConfig, Received};
//!
//! let (now, config) = (Instant::now(), EndpointConfig::new(Params::default(), Params::default(), Config::default()));
//! let (mut ue, mut proxy) = (Endpoint::new(config)?, Endpoint::new(config)?);
//! let register = b"REGISTER sip:example.com SIP/2.0\r\nCall-ID: a84b4c76e66710\r\nContent-Length: 0\r\n\r\n";
//! let sent = ue.compress(now, CompartmentId(1), register)?;
//! let Received::Message(incoming) = proxy.receive(&sent.message, Transport::Message)? else { panic!("a NACK") };
//! assert_eq!(incoming.message(), register); // parse it, authenticate it, choose its compartment
//! let terminal = CompartmentId(42); // its sigcomp-id, or the flow it came on
//! assert!(!proxy.accept(now, incoming, terminal).created.is_empty()); // or proxy.discard(incoming)
//! let ok = b"SIP/2.0 200 OK\r\nCall-ID: a84b4c76e66710\r\nContent-Length: 0\r\n\r\n";
//! let reply = proxy.compress(now, terminal, ok)?;
//! let Received::Message(incoming) = ue.receive(&reply.message, Transport::Message)? else { panic!("a NACK") };
//! assert_eq!(ue.accept(now, incoming, CompartmentId(1)).message, ok);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod bits;
pub mod bytecode;
#[cfg(any(feature = "deflate", feature = "lz77"))]
pub mod chains;
pub mod compressor;
mod config;
pub mod dictionary;
pub mod endpoint;
mod finder;
mod history;
pub mod lzss;
mod peer_model;
mod sent_log;

pub use compressor::{
    Algorithm, AnnounceMessage, CompressError, Compressed, Compressor, Config, Level, LevelError, Mechanism,
    SnapshotExtent,
};
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
