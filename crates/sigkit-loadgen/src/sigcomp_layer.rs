//! SigComp between the generator and its peer (RFC 3320, RFC 3486,
//! RFC 5049), as a terminal does it: outgoing messages say
//! `comp=sigcomp` in their top Via (requests) and Contact, and are
//! compressed in one compartment per peer address; incoming SigComp
//! messages are decompressed and their state accepted in the sender's
//! compartment; plain SIP passes through. A message that fails to
//! decompress is answered with its NACK (RFC 4077). Retransmissions are
//! compressed anew, so a NACKed message recovers on the next one.
//!
//! Over TCP (RFC 3320 §4.2.2, RFC 5049): each SigComp message goes on the
//! stream escaped and closed by the 0xFFFF delimiter
//! ([`sigcomp::wire::frame_for_stream`]; the runtime's reader takes them
//! apart with [`sigcomp::wire::Deframer`]); the UDVM gets DMS/2 of memory
//! (RFC 3320 §7) and, the transport being reliable, the compressor uses a
//! state as soon as it has sent it rather than after the peer
//! acknowledges it (RFC 3321 §5.1 asks for the acknowledgement only where
//! messages can be lost; RFC 5049's rules for SigComp over TCP). A
//! connection the peer opened with plain SIP stays plain: its first byte
//! tells the two apart for the whole connection (RFC 5049 §4), so the
//! answers on it are not compressed.

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::time::Instant;

use sha1::{Digest, Sha1};
use sigcomp::wire::frame_for_stream;
use sigcomp::{CompartmentId, Params, Transport as SigTransport};
use sigcomp_compress::{CompressError, Config, Endpoint, EndpointConfig, Mechanism, Received};

use crate::transport::Transport;

/// Counts of what the layer did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SigcompCounts {
    /// SIP messages compressed and sent (retransmissions included).
    pub compressed: u64,
    /// SigComp messages received and decompressed (RFC 3320 §8).
    pub decompressed: u64,
    /// Plain SIP messages received (not SigComp; RFC 3486 lets a peer send either).
    pub plain_received: u64,
    /// SigComp messages that failed to decompress (each answered with a NACK, RFC 4077).
    pub failures: u64,
    /// NACKs received from the peer (RFC 4077 §3).
    pub nacks_received: u64,
    /// Messages compressed and sent again after a NACK (TCP).
    pub resent: u64,
    /// Bytes of the SIP messages compressed, before compression.
    pub bytes_before: u64,
    /// Bytes sent for them after compression (TCP framing of RFC 3320 §4.2.2 included).
    pub bytes_after: u64,
}

/// A message the layer could not compress for `to`, with the compressor's
/// reason (such as a peer's memory too small for it, RFC 3320 §7).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("compressing a message for {to}: {source}")]
pub struct CompressFailed {
    /// The peer the message was for.
    pub to: SocketAddr,
    /// Why the compressor refused it.
    pub source: CompressError,
}

/// The SigComp endpoint of a run.
pub struct SigcompLayer {
    endpoint: Endpoint,
    transport: SigTransport,
    /// Peers whose stream carries plain SIP (TCP only).
    plain_peers: HashSet<SocketAddr>,
    pending_raw: Vec<(SocketAddr, Vec<u8>)>,
    /// Over TCP, the messages lately sent, by the SHA-1 of their SigComp
    /// message (what a NACK names, RFC 4077 §3.1), for sending again.
    recent: VecDeque<Sent>,
    edited: Vec<u8>,
    /// What the layer did so far.
    pub counts: SigcompCounts,
}

/// A message sent over TCP, kept until [`RECENT`] newer ones are.
struct Sent {
    sha1: [u8; 20],
    to: SocketAddr,
    /// The SIP message, `comp=sigcomp` added.
    sip: Vec<u8>,
    /// Whether it is itself sent again after a NACK (then not again).
    resent: bool,
}

/// Messages kept for sending again: more than a run has in flight toward
/// one peer between a send and its NACK.
const RECENT: usize = 1024;

/// Whether `b` starts a SigComp message: its first five bits are 11111
/// (RFC 3320 §7), which no SIP message starts with.
pub fn is_sigcomp_first_byte(b: u8) -> bool {
    b & 0xF8 == 0xF8
}

fn compartment(a: SocketAddr) -> CompartmentId {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in a.to_string().bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    CompartmentId(h)
}

impl SigcompLayer {
    /// The layer of a run over `transport`.
    pub fn new(transport: Transport) -> Result<SigcompLayer, sigcomp_compress::EndpointError> {
        let transport = match transport {
            Transport::Udp => SigTransport::Message,
            Transport::Tcp => SigTransport::Stream,
        };
        // RFC 5049 §3: SIP's minimum decompression memory is 8192 bytes
        // and state memory 2048; 8192 of each, as the proxy's terminals.
        let params = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
        let config = Config { mechanism: Mechanism::Dynamic, transport, ..Config::default() };
        let endpoint = Endpoint::new(EndpointConfig::new(params, params, config))?;
        Ok(SigcompLayer {
            endpoint,
            transport,
            plain_peers: HashSet::new(),
            pending_raw: Vec::new(),
            recent: VecDeque::new(),
            edited: Vec::new(),
            counts: SigcompCounts::default(),
        })
    }

    fn stream(&self) -> bool {
        self.transport == SigTransport::Stream
    }

    /// Decompresses `bytes` from `from` into `plain`; false when there is
    /// no SIP message in it (a NACK, a failure). Over TCP `bytes` is one
    /// message with its record marking removed.
    pub fn receive(&mut self, now: Instant, from: SocketAddr, bytes: &[u8], plain: &mut Vec<u8>) -> bool {
        if bytes.first().is_none_or(|&b| !is_sigcomp_first_byte(b)) {
            if self.stream() {
                self.plain_peers.insert(from);
            }
            self.counts.plain_received += 1;
            plain.clear();
            plain.extend_from_slice(bytes);
            return true;
        }
        match self.endpoint.receive(bytes, self.transport) {
            Ok(Received::Message(incoming)) => {
                let accepted = self.endpoint.accept(now, incoming, compartment(from));
                self.counts.decompressed += 1;
                plain.clear();
                plain.extend_from_slice(&accepted.message);
                true
            }
            Ok(Received::Nack(n)) => {
                self.counts.nacks_received += 1;
                if let Some(report) = n.report {
                    self.resend(now, &report.nack.message_sha1);
                }
                false
            }
            Err(e) => {
                self.counts.failures += 1;
                if let Some(nack) = e.nack {
                    let nack = self.wire(nack);
                    self.pending_raw.push((from, nack));
                }
                false
            }
        }
    }

    /// `message` for `to`, with `comp=sigcomp` added and compressed, as
    /// it goes on the wire (over TCP escaped and delimited, RFC 3320
    /// §4.2.2); over a TCP connection the peer opened with plain SIP,
    /// `message` unchanged.
    pub fn compress(&mut self, now: Instant, to: SocketAddr, message: &[u8]) -> Result<Vec<u8>, CompressFailed> {
        if self.stream() && self.plain_peers.contains(&to) {
            return Ok(message.to_vec());
        }
        add_comp_sigcomp(message, &mut self.edited);
        let sip = std::mem::take(&mut self.edited);
        let out = self.compress_edited(now, to, &sip, false);
        self.edited = sip;
        out
    }

    fn compress_edited(
        &mut self,
        now: Instant,
        to: SocketAddr,
        sip: &[u8],
        resent: bool,
    ) -> Result<Vec<u8>, CompressFailed> {
        let out = self.endpoint.compress(now, compartment(to), sip).map_err(|source| CompressFailed { to, source })?;
        if self.stream() {
            if self.recent.len() >= RECENT {
                self.recent.pop_front();
            }
            let sha1 = Sha1::digest(&out.message).into();
            self.recent.push_back(Sent { sha1, to, sip: sip.to_vec(), resent });
        }
        let out = self.wire(out.message);
        self.counts.compressed += 1;
        self.counts.bytes_before += sip.len() as u64;
        self.counts.bytes_after += out.len() as u64;
        Ok(out)
    }

    /// Over TCP, SIP sends nothing again (RFC 3261 §17.1.1.2: Timer A runs
    /// over unreliable transports only), so a message the peer could not
    /// decompress would be lost: compressed anew, now that the endpoint
    /// knows from the NACK which states the peer lacks (RFC 4077 §2.3), it
    /// goes once more. Over UDP the SIP retransmission does this.
    fn resend(&mut self, now: Instant, sha1: &[u8; 20]) {
        if !self.stream() {
            return;
        }
        let Some(at) = self.recent.iter().position(|s| &s.sha1 == sha1 && !s.resent) else { return };
        let Some(sent) = self.recent.remove(at) else { return };
        if let Ok(out) = self.compress_edited(now, sent.to, &sent.sip, true) {
            self.counts.resent += 1;
            self.pending_raw.push((sent.to, out));
        }
    }

    /// A SigComp message as the transport carries it.
    fn wire(&self, message: Vec<u8>) -> Vec<u8> {
        if !self.stream() {
            return message;
        }
        let mut framed = Vec::with_capacity(message.len() + message.len() / 64 + 2);
        frame_for_stream(&message, &mut framed);
        framed
    }

    /// Whether NACKs or messages to send again are waiting ([`SigcompLayer::take_replies`]).
    pub fn has_replies(&self) -> bool {
        !self.pending_raw.is_empty()
    }

    /// Messages to send as they are (NACKs, messages sent again).
    pub fn take_replies(&mut self) -> Vec<(SocketAddr, Vec<u8>)> {
        std::mem::take(&mut self.pending_raw)
    }
}

/// Copies `msg` into `out` with `;comp=sigcomp` on the top Via of a
/// request (RFC 3486 §4.1) and on the first Contact's URI (§4.2), where
/// not already there.
pub fn add_comp_sigcomp(msg: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let request = !msg.starts_with(b"SIP/2.0 ");
    let head_end = msg.windows(4).position(|w| w == b"\r\n\r\n").map_or(msg.len(), |p| p + 2);
    let mut via_done = !request;
    let mut contact_done = false;
    let mut pos = 0;
    while pos < head_end {
        let end = msg[pos..head_end].windows(2).position(|w| w == b"\r\n").map_or(head_end, |p| pos + p);
        let line = &msg[pos..end];
        let name_end = line.iter().position(|&b| b == b':').unwrap_or(0);
        let name = std::str::from_utf8(&line[..name_end]).unwrap_or("").trim();
        let has =
            line.windows(13).any(|w| w.eq_ignore_ascii_case(b"comp=sigcomp"[..].as_ref()) || w == b";comp=sigcomp");
        if !via_done && (name.eq_ignore_ascii_case("via") || name == "v") {
            out.extend_from_slice(line);
            if !has {
                // Before a second Via value on the same line, if any.
                match line.iter().position(|&b| b == b',') {
                    Some(comma) => {
                        out.truncate(out.len() - (line.len() - comma));
                        out.extend_from_slice(b";comp=sigcomp");
                        out.extend_from_slice(&line[comma..]);
                    }
                    None => out.extend_from_slice(b";comp=sigcomp"),
                }
            }
            via_done = true;
        } else if !contact_done && (name.eq_ignore_ascii_case("contact") || name == "m") && !has {
            contact_done = true;
            let value = &line[name_end + 1..];
            match value.iter().position(|&b| b == b'>') {
                Some(gt) => {
                    out.extend_from_slice(&line[..name_end + 1 + gt]);
                    out.extend_from_slice(b";comp=sigcomp");
                    out.extend_from_slice(&value[gt..]);
                }
                None if value.iter().any(|b| !b.is_ascii_whitespace()) && !value.contains(&b'*') => {
                    // A bare URI: in angle brackets, so the parameter is
                    // the URI's and not the header's.
                    let v = std::str::from_utf8(value).unwrap_or("").trim();
                    let (uri, params) = v.split_once(';').map_or((v, ""), |(u, p)| (u, p));
                    out.extend_from_slice(&line[..name_end + 1]);
                    out.extend_from_slice(b" <");
                    out.extend_from_slice(uri.as_bytes());
                    out.extend_from_slice(b";comp=sigcomp>");
                    if !params.is_empty() {
                        out.push(b';');
                        out.extend_from_slice(params.as_bytes());
                    }
                }
                None => out.extend_from_slice(line),
            }
        } else {
            out.extend_from_slice(line);
        }
        out.extend_from_slice(b"\r\n");
        pos = end + 2;
    }
    if head_end < msg.len() {
        out.extend_from_slice(&msg[head_end.min(msg.len())..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn via_and_contact_get_comp_sigcomp() {
        let msg = b"INVITE sip:s@h SIP/2.0\r\nVia: SIP/2.0/UDP 1.2.3.4:5;branch=z9hG4bK1\r\nContact: sip:a@1.2.3.4:5\r\nContent-Length: 2\r\n\r\nab";
        let mut out = Vec::new();
        add_comp_sigcomp(msg, &mut out);
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.contains("branch=z9hG4bK1;comp=sigcomp\r\n"), "{text}");
        assert!(text.contains("Contact: <sip:a@1.2.3.4:5;comp=sigcomp>\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nab"), "{text}");
        let again = out.clone();
        add_comp_sigcomp(&again, &mut out);
        assert_eq!(out, again, "idempotent");
        let resp = b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP x;branch=1\r\nContact: <sip:b@h>\r\n\r\n";
        add_comp_sigcomp(resp, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Via: SIP/2.0/UDP x;branch=1\r\n") && text.contains("<sip:b@h;comp=sigcomp>"));
    }

    #[test]
    fn two_layers_round_trip() {
        let a: SocketAddr = "127.0.0.1:1000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2000".parse().unwrap();
        let mut x = SigcompLayer::new(Transport::Udp).unwrap();
        let mut y = SigcompLayer::new(Transport::Udp).unwrap();
        let msg = b"OPTIONS sip:s@h SIP/2.0\r\nVia: SIP/2.0/UDP 1.2.3.4:5;branch=z9hG4bK1\r\nCall-ID: 1\r\nContent-Length: 0\r\n\r\n";
        let now = Instant::now();
        let mut plain = Vec::new();
        for _ in 0..3 {
            let c = x.compress(now, b, msg).unwrap();
            assert!(c[0] & 0xF8 == 0xF8);
            assert!(y.receive(now, a, &c, &mut plain));
            assert!(plain.starts_with(b"OPTIONS sip:s@h SIP/2.0\r\n"));
        }
        assert!(!y.receive(now, a, &[0xF8, 0, 1, 2, 3], &mut plain));
        assert_eq!(y.take_replies().len(), 1, "a NACK for the broken message");
        assert!(y.receive(now, a, msg, &mut plain) && plain == msg, "plain SIP passes");
    }

    #[test]
    fn over_tcp_messages_are_framed_and_states_are_used_at_once() {
        use sigcomp::wire::{Deframer, Frame};
        let a: SocketAddr = "127.0.0.1:1000".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:2000".parse().unwrap();
        let mut x = SigcompLayer::new(Transport::Tcp).unwrap();
        let mut y = SigcompLayer::new(Transport::Tcp).unwrap();
        let msg = b"OPTIONS sip:s@h SIP/2.0\r\nVia: SIP/2.0/TCP 1.2.3.4:5;branch=z9hG4bK1\r\nCall-ID: 1\r\nContent-Length: 0\r\n\r\n";
        let now = Instant::now();
        let mut plain = Vec::new();
        // One stream carrying three messages, read back in 7-byte pieces.
        let mut stream = Vec::new();
        let mut sizes = Vec::new();
        for _ in 0..3 {
            let c = x.compress(now, b, msg).unwrap();
            assert!(is_sigcomp_first_byte(c[0]) && c.ends_with(&[0xFF, 0xFF]), "record marking");
            sizes.push(c.len());
            stream.extend_from_slice(&c);
        }
        // Without waiting for the peer's acknowledgement, the second
        // message already refers to the state the first created.
        assert!(sizes[1] * 2 < sizes[0], "{sizes:?}");
        let mut deframer = Deframer::new(1 << 16);
        let mut frames = Vec::new();
        for piece in stream.chunks(7) {
            deframer.push(piece, &mut frames);
        }
        assert_eq!(frames.len(), 3);
        for f in frames {
            let Frame::Message(m) = f else { panic!("{f:?}") };
            assert!(y.receive(now, a, &m, &mut plain), "{:?}", y.counts);
            assert!(plain.starts_with(b"OPTIONS sip:s@h SIP/2.0\r\n"));
        }
        assert_eq!(y.counts.decompressed, 3);
        // A broken message is NACKed, the NACK framed for the stream.
        assert!(!y.receive(now, a, &[0xF8, 0, 1, 2, 3], &mut plain));
        let nacks = y.take_replies();
        assert!(nacks.len() == 1 && nacks[0].1.ends_with(&[0xFF, 0xFF]), "{nacks:?}");
        // A peer whose connection carries plain SIP is answered plainly.
        let c: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        assert!(y.receive(now, c, msg, &mut plain) && plain == msg);
        assert_eq!(y.compress(now, c, msg).unwrap(), msg);
    }
}
