//! SigComp toward terminals: the endpoint, the budgets its decompression
//! runs within ([`crate::defence`]), and each TCP connection's last
//! compressed messages, kept in case the terminal NACKs one (RFC 4077).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use sigcomp::{CompartmentId, Transport};
use sigcomp_compress::{CompressError, Compressed, Endpoint, ReceiveError, Received};

use super::peer::Peer;
use crate::config::SipTransport;
use crate::defence::{Budgets, Refusal, Standing};

/// How many of a TCP flow's last compressed messages may be sent again
/// after a NACK. A NACK answers the message that failed, and over TCP it
/// comes back within a round trip, behind at most the few messages the
/// proxy sent meanwhile (a provisional and a final response, a request).
const RESEND_PER_FLOW: usize = 4;

/// A SIP message sent compressed over a TCP flow, kept until the flow's
/// next few messages push it out, in case the terminal NACKs it.
pub(super) struct SentOverTcp {
    /// SHA-1 of the SigComp message, as the NACK names it (RFC 4077 §3.1).
    sha1: [u8; 20],
    compartment: CompartmentId,
    pub(super) to: Peer,
    pub(super) sip: Vec<u8>,
}

pub(super) struct Compression {
    pub(super) endpoint: Endpoint,
    /// cycles_per_bit: a message is charged its worst case before it runs
    /// (RFC 3320 §8.6).
    cpb: u64,
    budgets: Budgets,
    /// Each TCP connection's last compressed messages, by connection.
    sent_over_tcp: HashMap<u64, VecDeque<SentOverTcp>>,
}

/// The UDVM's transport for a terminal's (RFC 3320 §4.2: a stream's
/// states are usable once sent).
fn transport_of(peer: &Peer) -> Transport {
    match peer.transport {
        SipTransport::Udp => Transport::Message,
        SipTransport::Tcp => Transport::Stream,
    }
}

impl Compression {
    pub(super) fn new(endpoint: Endpoint, cpb: u16, budgets: Budgets) -> Compression {
        Compression { endpoint, cpb: u64::from(cpb), budgets, sent_over_tcp: HashMap::new() }
    }

    /// Decompresses `bytes` from `from`, whose source has `standing`,
    /// within the budgets: charged the worst case before it runs, and its
    /// cycles or measured time after. `Err` when a budget refuses it
    /// unread.
    pub(super) fn decompress(
        &mut self,
        now: Instant,
        from: &Peer,
        standing: Standing,
        bytes: &[u8],
    ) -> Result<Result<Received, ReceiveError>, Refusal> {
        let worst = (8 * bytes.len() as u64 + 1000) * self.cpb;
        let admitted = self.budgets.admit(now, from.addr.ip(), standing, worst)?;
        let started = Instant::now();
        let received = self.endpoint.receive(bytes, transport_of(from));
        let took = started.elapsed();
        let cycles = match &received {
            Ok(Received::Message(incoming)) => incoming.cycles(),
            Ok(Received::Nack(_)) => 0,
            Err(e) => e.failure.cycles,
        };
        self.budgets.settle(admitted, cycles, took);
        Ok(received)
    }

    /// `sip` compressed in `compartment` for `to` (the compartment opened
    /// on first use); over TCP kept for a NACK ([`Compression::nacked`]).
    /// On failure `sip` comes back.
    pub(super) fn compress(
        &mut self,
        now: Instant,
        compartment: CompartmentId,
        to: Peer,
        sip: Vec<u8>,
    ) -> Result<Compressed, (CompressError, Vec<u8>)> {
        if self.endpoint.peer(compartment).is_none() {
            self.endpoint.open_compartment(now, compartment, transport_of(&to));
        }
        let c = match self.endpoint.compress(now, compartment, &sip) {
            Ok(c) => c,
            Err(e) => return Err((e, sip)),
        };
        if let (SipTransport::Tcp, Some(conn)) = (to.transport, to.conn) {
            let sent = self.sent_over_tcp.entry(conn).or_default();
            if sent.len() >= RESEND_PER_FLOW {
                sent.pop_front();
            }
            sent.push_back(SentOverTcp { sha1: c.sha1, compartment, to, sip });
        }
        Ok(c)
    }

    /// The message a NACK names, by its SHA-1 in `compartment`, sent over
    /// TCP connection `conn` and still kept; taken, so a second NACK of
    /// it finds nothing (RFC 4077 §2.1 leaves recovery to the compressor).
    pub(super) fn nacked(&mut self, conn: u64, sha1: &[u8; 20], compartment: CompartmentId) -> Option<SentOverTcp> {
        let sent = self.sent_over_tcp.get_mut(&conn)?;
        let i = sent.iter().position(|s| s.sha1 == *sha1 && s.compartment == compartment)?;
        sent.remove(i)
    }

    /// TCP connection `conn` closed: nothing sent over it is kept.
    pub(super) fn connection_closed(&mut self, conn: u64) {
        self.sent_over_tcp.remove(&conn);
    }

    /// Source addresses whose budgets are tracked.
    pub(super) fn budgeted_sources(&self) -> usize {
        self.budgets.sources()
    }

    /// Decompression time spent on known and on unknown sources.
    pub(super) fn spent(&self) -> [Duration; 2] {
        <[Duration; 2]>::from(self.budgets.spent())
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use sha1::{Digest, Sha1};
    use sigcomp::Params;
    use sigcomp_compress::{Config, EndpointConfig};

    use super::*;
    use crate::config::DefenceConfig;

    fn compression(defence: DefenceConfig) -> Compression {
        let p = Params { dms: 16384, sms: 16384, cpb: 16, version: 2 };
        let endpoint = Endpoint::new(EndpointConfig::new(p, p, Config::default())).unwrap();
        Compression::new(endpoint, 16, Budgets::new(defence, 1.0, Instant::now()))
    }

    fn tcp_peer(conn: u64) -> Peer {
        let addr: SocketAddr = "10.0.0.9:5080".parse().unwrap();
        Peer { transport: SipTransport::Tcp, addr, local: None, conn: Some(conn) }
    }

    /// Over TCP the last few messages are kept, each found once by the
    /// SHA-1 of what was sent, until the connection closes.
    #[test]
    fn a_tcp_connection_keeps_its_last_messages_for_a_nack() {
        let mut c = compression(DefenceConfig::default());
        let now = Instant::now();
        let k = CompartmentId(1);
        let mut sent = Vec::new();
        for n in 0..RESEND_PER_FLOW + 1 {
            let sip = format!("OPTIONS sip:u@x SIP/2.0\r\nCSeq: {n} OPTIONS\r\nContent-Length: 0\r\n\r\n");
            let out = c.compress(now, k, tcp_peer(7), sip.clone().into_bytes()).unwrap();
            let sha1: [u8; 20] = Sha1::digest(&out.message).as_slice().try_into().unwrap();
            sent.push((sha1, sip));
        }
        assert!(c.nacked(7, &sent[0].0, k).is_none(), "pushed out by the later ones");
        assert!(c.nacked(7, &sent[2].0, CompartmentId(2)).is_none(), "another compartment's");
        let again = c.nacked(7, &sent[2].0, k).expect("kept");
        assert_eq!(again.sip, sent[2].1.as_bytes());
        assert_eq!(again.to, tcp_peer(7));
        assert!(c.nacked(7, &sent[2].0, k).is_none(), "once");
        c.connection_closed(7);
        assert!(c.nacked(7, &sent[3].0, k).is_none());
    }

    /// A message whose worst case exceeds its source's cycles is refused
    /// unread (RFC 3320 §8.6: (8 × length + 1000) × cycles_per_bit).
    #[test]
    fn a_message_over_its_sources_budget_is_refused_unread() {
        let worst = (8 * 100 + 1000) * 16;
        let defence = DefenceConfig { cycles_burst: worst, cycles_per_source_per_s: 1, ..DefenceConfig::default() };
        let mut c = compression(defence);
        let from = tcp_peer(1);
        let now = Instant::now();
        assert!(c.decompress(now, &from, Standing::Known, &[0xF8; 101]).is_err_and(|r| r == Refusal::Cycles));
        assert!(c.decompress(now, &from, Standing::Known, &[0xF8; 100]).is_ok());
        assert_eq!(c.budgeted_sources(), 1);
    }
}
