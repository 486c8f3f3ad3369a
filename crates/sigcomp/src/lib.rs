//! # sigcomp
//!
//! A sans-IO implementation of Signaling Compression: RFC 3320 as corrected
//! by RFC 4896, with the NACK mechanism of RFC 4077 and the static
//! dictionaries of RFC 3485 and RFC 5112. No sockets, threads or clocks:
//! bytes in, bytes out.
//!
//! ```
//! use sigcomp::{Decompressor, Params, Transport, CompartmentId};
//! let mut d = Decompressor::new(Params::default()).unwrap();
//! // Bytecode at 128: OUTPUT (140, 2), END-MESSAGE, then the bytes "hi" at 140.
//! let code = [0x22, 0xA0, 0x8C, 0x02, 0x23, 0, 0, 0, 0, 0, 0, 0, b'h', b'i'];
//! let msg = sigcomp::wire::emit_bytecode_message(None, &code, 128, &[]).unwrap();
//! let out = d.decompress(&msg, Transport::Message).unwrap();
//! assert_eq!(out.output, b"hi");
//! d.accept(out.pending, CompartmentId(1));
//! ```

#![forbid(unsafe_code)]

pub mod decompressor;
pub mod dict;
pub mod nack;
pub mod params;
pub mod state;
pub mod udvm;
pub mod wire;

pub use decompressor::{Accepted, Decompressed, Decompressor, Feedback, Metrics, Pending, Transport};
pub use nack::{Failure, Nack, NackReport, Reason, SentLog, SentRecord};
pub use params::Params;
pub use state::{CompartmentId, Limits, State, StateHandler, StateId, UnpackCache};
