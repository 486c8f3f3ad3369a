//! The static dictionaries every SIP endpoint offers as locally available
//! state (RFC 3485, RFC 5112): their bytes and identifiers. The state items
//! made of them are [`crate::State::sip_sdp_dictionary`] and
//! [`crate::State::presence_dictionary`].

/// The SIP/SDP static dictionary of RFC 3485 (its Section 5 table), 4836 bytes.
pub static SIP_SDP: &[u8] = include_bytes!("dict/rfc3485-sip-sdp.bin");

/// State identifier RFC 3485 gives for [`SIP_SDP`].
pub const SIP_SDP_ID: [u8; 20] = [
    0xfb, 0xe5, 0x07, 0xdf, 0xe5, 0xe6, 0xaa, 0x5a, 0xf2, 0xab, 0xb9, 0x14, 0xce, 0xaa, 0x05, 0xf9, 0x9c, 0xe6, 0x1b,
    0xa5,
];

/// The presence-specific static dictionary of RFC 5112, 3475 bytes.
pub static PRESENCE: &[u8] = include_bytes!("dict/rfc5112-presence.bin");

/// State identifier of [`PRESENCE`] (RFC 5112).
pub const PRESENCE_ID: [u8; 20] = [
    0xd9, 0x42, 0x29, 0x7d, 0x0b, 0xb3, 0x8f, 0xc0, 0x1d, 0x67, 0x41, 0xd6, 0xb3, 0xb4, 0x81, 0x57, 0xac, 0x8e, 0x1b,
    0xe0,
];
