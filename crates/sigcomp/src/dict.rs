//! Locally available state items every SIP endpoint offers.

use std::sync::OnceLock;

use crate::state::State;

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

/// RFC 3485 §5: address 0, instruction 0, minimum access length 6.
///
/// Built (copied and hashed) once per process: every endpoint's state
/// handler, and every compressor's model of a peer, then holds the same
/// bytes through the state's `Arc` rather than a copy of its own.
pub fn sip_sdp_state() -> State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| State::new(0, 0, 6, SIP_SDP)).clone()
}

/// RFC 5112: address 0, instruction 0, minimum access length 6 (built once
/// per process, like [`sip_sdp_state`]).
pub fn presence_state() -> State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| State::new(0, 0, 6, PRESENCE)).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_match_the_rfcs() {
        assert_eq!(SIP_SDP.len(), 0x12E4);
        assert_eq!(sip_sdp_state().id.0, SIP_SDP_ID);
        assert_eq!(PRESENCE.len(), 0x0D93);
        assert_eq!(presence_state().id.0, PRESENCE_ID);
    }

    #[test]
    fn dictionaries_are_stored_once_per_process() {
        // Two endpoints' copies point at the same bytes.
        assert!(std::sync::Arc::ptr_eq(&sip_sdp_state().shared_value(), &sip_sdp_state().shared_value()));
        assert!(std::sync::Arc::ptr_eq(&presence_state().shared_value(), &presence_state().shared_value()));
    }
}
