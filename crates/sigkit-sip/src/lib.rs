//! SIP for a SigComp edge proxy (the P-CSCF compression function): what
//! RFC 3261, RFC 3486 (`comp=sigcomp`), RFC 3581 (`rport`), RFC 3327 (Path)
//! and RFC 5049 (SigComp identifiers and compartments) ask of it. Sans-IO and
//! zero-copy: the proxy hands in bytes and gets typed views and rewritten bytes.
//!
//! # Why a parser of our own
//!
//! The existing SIP crates were evaluated: `rsip` allocates a `String` per
//! header and is not zero-copy; `parsip` (2017) and `sipmsg` (2021) are
//! unmaintained and cover part of the grammar. The proxy's target is 50,000
//! messages/s on 2 cores, and every parser it runs on untrusted input must be
//! fuzzed, so this crate is a lean hand-written parser (fuzz target
//! `fuzz/fuzz_targets/sip.rs`).
//!
//! # Layout
//!
//! The wire format is kept apart from behaviour:
//!
//! * [`Message`] (`message`): start line, header lines in order as slices of
//!   the input (with their byte ranges), body; [`Message::parse`] for a UDP
//!   datagram or a frame, [`Message::parse_stream_frame`] to cut frames out of
//!   a TCP byte stream (RFC 3261 §18.3). Lookups are case-insensitive and know
//!   the compact forms ([`HeaderName`]); list headers are split on commas
//!   outside quotes and angle brackets ([`Message::values`]).
//! * Typed views, each checked when built so their accessors cannot fail:
//!   [`Via`], [`Uri`], [`NameAddr`] (From, To, Contact, Route, Record-Route,
//!   Path), [`CSeq`]; Call-ID, Content-Length, Max-Forwards and Expires on
//!   [`Message`].
//! * [`Editor`] (`edit`): the proxy's rewrites (Via, `received`/`rport`,
//!   Record-Route, Path, Route, Request-URI, Max-Forwards) recorded as byte
//!   ranges and emitted with one copy per unchanged stretch.
//! * [`proxy`]: the proxy's own Via, Route URIs, branches and responses.
//! * [`compartment`]: the remote application identifier and compartment
//!   lifetime of RFC 5049 §6.
//!
//! Bad input gives a [`ParseError`] (or an [`EditError`]), never a panic.
//!
//! # Example
//!
//! ```
//! use sigkit_sip::{Editor, Message};
//!
//! let bytes = b"INVITE sip:bob@example.com SIP/2.0\r\n\
//!     v: SIP/2.0/UDP [2001:db8::1]:5060;branch=z9hG4bK1;rport;comp=sigcomp\r\n\
//!     Max-Forwards: 70\r\n\
//!     f: <sip:alice@example.com>;tag=1\r\nt: <sip:bob@example.com>\r\n\
//!     i: abc\r\nCSeq: 1 INVITE\r\nl: 0\r\n\r\n";
//! let msg = Message::parse(bytes).unwrap();
//! assert_eq!(msg.top_via().unwrap().rport(), Some(None));
//! let mut edit = Editor::new(&msg);
//! edit.fill_top_via("[2001:db8::1]:4000".parse().unwrap()).unwrap();
//! edit.decrement_max_forwards().unwrap();
//! edit.prepend_via("SIP/2.0/UDP p.example.net;branch=z9hG4bK2").unwrap();
//! let out = edit.emit();
//! let fwd = Message::parse(&out).unwrap();
//! assert_eq!(fwd.vias().nth(1).unwrap().unwrap().rport(), Some(Some(4000)));
//! assert_eq!(fwd.max_forwards().unwrap(), Some(69));
//! ```

#![forbid(unsafe_code)]

pub mod compartment;
mod edit;
mod error;
mod message;
mod name_addr;
pub mod proxy;
mod syntax;
pub mod transaction;
mod uri;
mod via;

pub use edit::Editor;
pub use error::{EditError, ParseError};
pub use message::{Header, HeaderName, ListValue, Message, StartLine, MAX_HEADERS, MAX_HEADER_BYTES};
pub use name_addr::{CSeq, Contacts, NameAddr};
pub use syntax::{unquote, Param, Params};
pub use uri::{Scheme, Uri};
pub use via::Via;
