//! The ends of a message: which side of the proxy it crosses, the peer it
//! comes from or goes to, how it is encoded, and the bytes that go out.

use std::net::SocketAddr;

use crate::compartments::{ProxyName, Terminal};
use crate::config::SipTransport;

/// Whether a datagram or a TCP stream starting with `b` is SigComp
/// (RFC 5049 §4: the five most significant bits are 11111).
pub fn is_sigcomp_first_byte(b: u8) -> bool {
    b & 0xF8 == 0xF8
}

/// How a message between the proxy and a terminal is encoded. A terminal
/// may send either on one socket (RFC 5049 §4); toward the upstream every
/// message is plain SIP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// A SigComp message (RFC 3320); over TCP the runtime adds and removes
    /// its record marking (RFC 3320 §4.2.2).
    SigComp,
    /// Plain SIP.
    Plain,
}

impl Encoding {
    /// The encoding of a datagram or a TCP stream starting with `b`.
    pub fn of_first_byte(b: u8) -> Encoding {
        if is_sigcomp_first_byte(b) {
            Encoding::SigComp
        } else {
            Encoding::Plain
        }
    }

    /// Whether this is [`Encoding::SigComp`].
    pub fn is_sigcomp(self) -> bool {
        self == Encoding::SigComp
    }
}

/// Which side of the proxy a message crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Toward the terminals: SigComp or plain SIP, over UDP or TCP, on the
    /// `listen` sockets.
    Terminal,
    /// Toward the SIP server behind the proxy: plain SIP over UDP, on the
    /// `upstream_local` socket.
    Upstream,
}

impl Side {
    /// The index of the side in the two-sided counters of
    /// [`crate::ProxyMetrics`].
    pub fn index(self) -> usize {
        match self {
            Side::Terminal => 0,
            Side::Upstream => 1,
        }
    }
}

/// The other end of a message: transport, address, the local socket it
/// arrived on, and for TCP the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The transport the message crosses.
    pub transport: SipTransport,
    /// The other end's transport address (for a terminal, the source
    /// address its messages arrive from, which may be a NAT's).
    pub addr: SocketAddr,
    /// The proxy's socket the message arrived on or leaves from (for a
    /// TCP connection, its local address); `None` where the runtime does
    /// not know it.
    pub local: Option<SocketAddr>,
    /// The runtime's number of the TCP connection; `None` over UDP.
    pub conn: Option<u64>,
}

/// Bytes to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// The side it goes to.
    pub side: Side,
    /// Where it goes, and over TCP by which connection.
    pub to: Peer,
    /// The message: SIP, or a SigComp message without its TCP record
    /// marking (RFC 3320 §4.2.2; the runtime adds it).
    pub bytes: Vec<u8>,
    /// How `bytes` are encoded (always [`Encoding::Plain`] toward the
    /// upstream).
    pub encoding: Encoding,
}

/// The proxy's sockets, as bound.
#[derive(Debug, Clone)]
pub struct LocalAddrs {
    /// The sockets toward terminals, one per `listen` address, with the
    /// port the system gave where `listen` asked for port 0.
    pub terminal: Vec<(SipTransport, SocketAddr)>,
    /// Where the proxy sends to and receives from the upstream.
    pub upstream: SocketAddr,
    /// The upstream server.
    pub upstream_peer: SocketAddr,
}

/// The terminal end of a message toward a terminal: its flow token, and
/// the compartment key (the terminal, the name it used for the proxy).
#[derive(Debug, Clone)]
pub(super) struct App {
    pub(super) token: u64,
    pub(super) terminal: Terminal,
    pub(super) name: ProxyName,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 5049 §4: 11111 in the first byte's top bits is SigComp, and
    /// SIP's first byte (a method's or "SIP/2.0"'s letter) never is.
    #[test]
    fn the_first_byte_tells_the_encoding() {
        assert_eq!(Encoding::of_first_byte(0xF8), Encoding::SigComp);
        assert_eq!(Encoding::of_first_byte(0xFF), Encoding::SigComp);
        assert_eq!(Encoding::of_first_byte(0xF7), Encoding::Plain);
        for b in b"SIP/2.0 INVITE REGISTER" {
            assert_eq!(Encoding::of_first_byte(*b), Encoding::Plain);
        }
    }
}
