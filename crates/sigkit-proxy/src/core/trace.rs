//! One debug event per message the proxy handles, as a SIP server's
//! message log has it, under the target [`TARGET`]: which way it crossed
//! the proxy, its Call-ID, method or status code, the peer, the shard and
//! the terminal's compartment in it, its bytes as SIP and as SigComp, the UDVM cycles its
//! decompression took, and a NACK sent or received (RFC 4077).
//!
//! The core emits the events itself (a `tracing` event is no I/O: the
//! subscriber the binary installs writes them). What an event says is
//! gathered only when the event is enabled: every site asks [`enabled`]
//! first, so with the level off a message costs one branch per site, and
//! nothing is parsed, formatted or allocated for it.

use sigcomp::{CompartmentId, Reason};
use sigkit_sip::Message;

use super::peer::Peer;

/// The target of the message events: `RUST_LOG=sigkit_proxy::messages=debug`
/// (or `sigkit_proxy=debug`, which takes in the rest of the proxy's debug
/// events too) turns them on.
pub const TARGET: &str = "sigkit_proxy::messages";

/// Whether message events are written: asked before gathering one.
#[inline]
pub(super) fn enabled() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::DEBUG)
}

/// Which way a message crossed the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From a terminal (SigComp or plain) to the proxy.
    FromTerminal,
    /// From the proxy to the upstream (plain SIP).
    ToUpstream,
    /// From the upstream to the proxy (plain SIP).
    FromUpstream,
    /// From the proxy to a terminal (SigComp or plain).
    ToTerminal,
}

impl Direction {
    /// The direction as the message events name it (`from_terminal`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Direction::FromTerminal => "from_terminal",
            Direction::ToUpstream => "to_upstream",
            Direction::FromUpstream => "from_upstream",
            Direction::ToTerminal => "to_terminal",
        }
    }
}

/// A SIP message's Call-ID, method or status code, and size, owned: a
/// message toward a terminal is read before it is moved into the
/// compressor, and its event is written after.
#[derive(Debug, Clone, Default)]
pub(super) struct Summary {
    call_id: Option<String>,
    method: Option<String>,
    status: Option<u16>,
    sip_bytes: Option<usize>,
}

impl Summary {
    pub(super) fn of(msg: &Message<'_>) -> Summary {
        Summary {
            call_id: msg.call_id().ok().map(str::to_string),
            method: msg.method().map(str::to_string),
            status: msg.status_code(),
            sip_bytes: Some(msg.input().len()),
        }
    }

    /// The summary of `bytes`; only their size when they are not SIP.
    pub(super) fn parse(bytes: &[u8]) -> Summary {
        match Message::parse(bytes) {
            Ok(msg) => Summary::of(&msg),
            Err(_) => Summary::unparsed(bytes.len()),
        }
    }

    /// `len` bytes that are not SIP.
    pub(super) fn unparsed(len: usize) -> Summary {
        Summary { sip_bytes: Some(len), ..Summary::default() }
    }
}

/// What an event says besides the SIP message: the SigComp side of it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SigComp {
    /// The terminal's compartment the message was filed in or compressed in.
    pub(super) compartment: Option<CompartmentId>,
    /// The SigComp message's bytes (without TCP record marking).
    pub(super) bytes: Option<usize>,
    /// UDVM cycles its decompression took (RFC 3320 §8.6).
    pub(super) cycles: Option<u64>,
    /// The reason of the NACK the proxy sent for it (RFC 4077).
    pub(super) nack_sent: Option<Reason>,
    /// The reason of a NACK the terminal sent.
    pub(super) nack_received: Option<Reason>,
    /// The budget that refused it unread ([`crate::defence`]).
    pub(super) refused: Option<&'static str>,
}

/// Writes one message event of shard `shard` (call only when
/// [`enabled`]).
pub(super) fn message(direction: Direction, shard: u32, peer: &Peer, sip: &Summary, s: SigComp) {
    tracing::debug!(
        target: TARGET,
        direction = direction.name(),
        shard,
        call_id = sip.call_id.as_deref(),
        method = sip.method.as_deref(),
        status = sip.status,
        transport = peer.transport.name(),
        peer = %peer.addr,
        compartment = s.compartment.map(|c| c.0),
        sip_bytes = sip.sip_bytes,
        sigcomp_bytes = s.bytes,
        cycles = s.cycles,
        nack_sent = s.nack_sent.map(Reason::name),
        nack_received = s.nack_received.map(Reason::name),
        refused = s.refused,
        "SIP message"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's summary has its method, a response's its status code;
    /// what is not SIP has only its size.
    #[test]
    fn a_summary_has_the_call_id_and_the_method_or_the_status() {
        let request = b"OPTIONS sip:x SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1;branch=z9hG4bK1\r\nCall-ID: abc@x\r\n\
                        CSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n";
        let s = Summary::parse(request);
        assert_eq!((s.call_id.as_deref(), s.method.as_deref(), s.status), (Some("abc@x"), Some("OPTIONS"), None));
        assert_eq!(s.sip_bytes, Some(request.len()));
        let response = b"SIP/2.0 486 Busy Here\r\nCall-ID: def\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n";
        let s = Summary::parse(response);
        assert_eq!((s.call_id.as_deref(), s.method.as_deref(), s.status), (Some("def"), None, Some(486)));
        let s = Summary::parse(b"\xf8\x00garbage");
        assert_eq!((s.call_id, s.method, s.status, s.sip_bytes), (None, None, None, Some(9)));
    }
}
