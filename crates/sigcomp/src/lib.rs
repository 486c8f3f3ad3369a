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
//!
//! ## Against a hostile peer
//!
//! What a peer's messages can make an endpoint hold or spend is bounded:
//!
//! * time: every instruction is charged its RFC 3320 §8.6 cycles before
//!   it acts, and no cycle costs much more than another (state is found
//!   by an index, not a search, whatever the number of states; the
//!   `worst_cycles` bench measures the dearest loops);
//! * memory per message: the UDVM memory (at most 65536 bytes), at most
//!   65536 bytes of output, four state creations and four frees, and at
//!   most [`udvm::MAX_ANNOUNCED_STATES`] announced state identifiers;
//! * memory per compartment: its state memory size (RFC 3320 §6.2) and
//!   its feedback;
//! * memory of all compartments: [`Limits`] (by default 65,536
//!   compartments and 1 GiB of state, counted as the real memory it
//!   takes), enforced by closing the least
//!   recently used compartments ([`Decompressor::take_evicted`] names
//!   them), and watched through [`Decompressor::metrics`].
//!
//! ## Native decoders beside the UDVM
//!
//! The token loops of the bytecodes most messages carry (sigkit's LZSS,
//! LZ77 and Deflate, Open SigComp's Deflate and RFC 4464 §4.1.4's) are
//! recognised by their bytes when the UDVM reaches them, and decoded
//! natively a whole token at a time, with exactly the UDVM's results:
//! output, memory, state requests, feedback, cycles, and the failure and
//! its NACK reason (the UDVM itself runs any token that would end the
//! loop or fail). The UDVM stays the reference
//! ([`Decompressor::set_native_decoders`] turns the native decoders off);
//! the `native` fuzz target compares the two.

#![forbid(unsafe_code)]

pub mod decompressor;
pub mod dict;
pub mod error;
pub mod feedback;
mod keyed_hash;
pub mod lookup_memo;
pub mod nack;
pub mod params;
pub mod state;
pub mod udvm;
pub mod wire;

pub use decompressor::{Accepted, Decompressed, Decompressor, Feedback, Metrics, Pending, Transport};
pub use nack::{Failure, Nack, NackReport, Reason, SentLog, SentRecord};
pub use params::Params;
pub use state::{CompartmentId, Limits, State, StateHandler, StateId, UnpackCache};
