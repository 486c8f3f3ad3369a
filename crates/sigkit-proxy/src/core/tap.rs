//! The capture tap: a copy of each SIP message the proxy handles, as
//! plain SIP on both sides (a terminal's decompressed, a message toward a
//! terminal before it is compressed), with the addresses it crossed, for
//! the runtime to send to a HEP collector or write to a pcap file
//! (`hep`, `capture`). Tools that read SIP (Homer, sngrep, Wireshark) so
//! show the calls whose SigComp side they cannot decompress.
//!
//! Off unless the runtime turns it on ([`Proxy::set_capture`]): then each
//! site costs one branch and nothing is copied. On, a record is the
//! message's bytes and its ends; the runtime stamps the time as it takes
//! the records and does everything else (the Call-ID, the encoding, the
//! I/O) away from the shard.

use std::net::SocketAddr;

use super::trace::Direction;
use super::*;

/// One SIP message the proxy handled, as captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// Which way it crossed the proxy.
    pub direction: Direction,
    /// The transport it crossed on (toward the upstream, UDP).
    pub transport: SipTransport,
    /// Where it came from: the terminal or the upstream for a message the
    /// proxy received, the proxy's socket for one it sent.
    pub src: SocketAddr,
    /// Where it went.
    pub dst: SocketAddr,
    /// The SIP message, plain.
    pub sip: Vec<u8>,
}

impl Proxy {
    /// Turns the capture tap on or off: on, every SIP message handled
    /// leaves a [`Captured`] for [`Proxy::poll_captured`].
    pub fn set_capture(&mut self, on: bool) {
        self.captured = on.then(VecDeque::new);
    }

    /// The next captured message, in the order handled.
    pub fn poll_captured(&mut self) -> Option<Captured> {
        self.captured.as_mut()?.pop_front()
    }

    /// Whether the tap is on: the one branch a site costs when it is not.
    #[inline]
    pub(super) fn capturing(&self) -> bool {
        self.captured.is_some()
    }

    /// Captures `sip`, exchanged with `peer` (a terminal, or the
    /// upstream) in `direction`; the proxy's end is the socket the peer
    /// knows it by.
    pub(super) fn capture(&mut self, direction: Direction, peer: &Peer, sip: &[u8]) {
        let Some(captured) = self.captured.as_mut() else { return };
        let ours = match direction {
            Direction::FromUpstream | Direction::ToUpstream => self.identity.upstream_peer().local,
            Direction::FromTerminal | Direction::ToTerminal => peer.local,
        };
        let ours = ours.unwrap_or_else(|| self.identity.terminal_addr(peer.transport, None));
        let (src, dst) = match direction {
            Direction::FromTerminal | Direction::FromUpstream => (peer.addr, ours),
            Direction::ToTerminal | Direction::ToUpstream => (ours, peer.addr),
        };
        captured.push_back(Captured { direction, transport: peer.transport, src, dst, sip: sip.to_vec() });
    }
}
