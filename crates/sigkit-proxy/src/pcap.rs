//! The capture file (`capture`): the SIP messages of both sides of the
//! proxy as plain SIP in a pcap file that sngrep, Wireshark and tshark
//! read. Each message is one IP packet (link type RAW: IPv4 or IPv6 by
//! the version nibble, no link layer to invent) carrying UDP, or over TCP
//! one segment of the connection's stream, its sequence numbers following
//! on from the connection's earlier segments so the dissectors reassemble
//! it (no handshake: they take up a stream in the middle).
//!
//! Packets are built into memory and reach the file whole at each
//! [`PcapSink::flush`], so a proxy killed between two flushes leaves a
//! file that ends on a whole packet.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use etherparse::PacketBuilder;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;

use crate::config::SipTransport;
use crate::hep::same_family;

/// The hop limit written in every packet.
const TTL: u8 = 64;
/// The TCP window written in every segment.
const TCP_WINDOW: u16 = 65_535;
/// The largest snapshot the file's header announces: a whole SIP message.
const SNAPLEN: u32 = 65_535;
/// TCP streams whose next sequence number is remembered; past it they all
/// start again from 1 (a dissector then sees a gap, not wrong data).
const MAX_STREAMS: usize = 65_536;

/// Why a message was not written.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The message does not fit one IP packet (a SIP message over UDP of
    /// almost 64 KiB).
    #[error("capture: a packet of {0} bytes of SIP does not fit")]
    TooLong(usize),
    /// Writing the file failed.
    #[error("capture: {0}")]
    Io(#[from] io::Error),
}

/// Bytes the pcap writer has encoded and the file has not yet received.
#[derive(Clone, Default)]
struct Pending(Arc<Mutex<Vec<u8>>>);

impl Write for Pending {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A pcap file being written.
pub struct PcapSink<W: Write> {
    writer: PcapWriter<Pending>,
    pending: Pending,
    file: W,
    /// Each TCP stream's next sequence number, by (source, destination).
    next_seq: HashMap<(SocketAddr, SocketAddr), u32>,
}

impl<W: Write> PcapSink<W> {
    /// A capture into `file`, whose header is written at once.
    pub fn new(file: W) -> Result<PcapSink<W>, PcapError> {
        let pending = Pending::default();
        let header = PcapHeader { datalink: DataLink::RAW, snaplen: SNAPLEN, ..PcapHeader::default() };
        let writer = PcapWriter::with_header(pending.clone(), header).map_err(pcap_io)?;
        let mut sink = PcapSink { writer, pending, file, next_seq: HashMap::new() };
        sink.flush()?;
        Ok(sink)
    }

    /// Adds `sip`, sent from `src` to `dst` over `transport` at `time`.
    pub fn write(
        &mut self,
        transport: SipTransport,
        src: SocketAddr,
        dst: SocketAddr,
        time: SystemTime,
        sip: &[u8],
    ) -> Result<(), PcapError> {
        let packet = self.packet(transport, src, dst, sip)?;
        let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
        let record = PcapPacket::new(since, packet.len() as u32, &packet);
        self.writer.write_packet(&record).map_err(pcap_io)?;
        Ok(())
    }

    /// Bytes added since the last [`PcapSink::flush`].
    pub fn pending_bytes(&self) -> usize {
        self.pending.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Writes what has been added to the file, whole packets only, and
    /// flushes it.
    pub fn flush(&mut self) -> Result<(), PcapError> {
        let bytes = std::mem::take(&mut *self.pending.0.lock().unwrap_or_else(PoisonError::into_inner));
        if !bytes.is_empty() {
            self.file.write_all(&bytes)?;
        }
        self.file.flush()?;
        Ok(())
    }

    /// The file, flushed.
    pub fn into_inner(mut self) -> Result<W, PcapError> {
        self.flush()?;
        Ok(self.file)
    }

    /// One IP packet carrying `sip`.
    fn packet(
        &mut self,
        transport: SipTransport,
        src: SocketAddr,
        dst: SocketAddr,
        sip: &[u8],
    ) -> Result<Vec<u8>, PcapError> {
        let ip = match same_family(src.ip(), dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => PacketBuilder::ipv4(s.octets(), d.octets(), TTL),
            (s, d) => PacketBuilder::ipv6(v6_octets(s), v6_octets(d), TTL),
        };
        let mut out = Vec::with_capacity(sip.len() + 60);
        let written = match transport {
            SipTransport::Udp => ip.udp(src.port(), dst.port()).write(&mut out, sip),
            SipTransport::Tcp => {
                if self.next_seq.len() >= MAX_STREAMS {
                    self.next_seq.clear();
                }
                let seq = self.next_seq.entry((src, dst)).or_insert(1);
                let this = *seq;
                *seq = seq.wrapping_add(sip.len() as u32);
                ip.tcp(src.port(), dst.port(), this, TCP_WINDOW).psh().write(&mut out, sip)
            }
        };
        written.map_err(|_| PcapError::TooLong(sip.len()))?;
        Ok(out)
    }
}

fn v6_octets(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

fn pcap_io(e: pcap_file::PcapError) -> PcapError {
    PcapError::Io(io::Error::other(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    const SIP: &[u8] = b"OPTIONS sip:x SIP/2.0\r\nContent-Length: 0\r\n\r\n";

    fn read(bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut r = PcapReader::new(bytes).unwrap();
        assert_eq!(r.header().datalink, DataLink::RAW);
        let mut out = Vec::new();
        while let Some(p) = r.next_packet() {
            out.push(p.unwrap().data.to_vec());
        }
        out
    }

    /// UDP over IPv4 and IPv6, TCP with its sequence numbers following on;
    /// each packet's payload is the SIP message, its ports the ends'.
    #[test]
    fn packets_carry_the_sip_and_the_ends() {
        let mut sink = PcapSink::new(Vec::new()).unwrap();
        let (a, b) = ("10.0.0.1:5060".parse().unwrap(), "10.0.0.2:5070".parse().unwrap());
        let (c, d) = ("[::1]:5060".parse().unwrap(), "[::2]:5080".parse().unwrap());
        let now = SystemTime::now();
        sink.write(SipTransport::Udp, a, b, now, SIP).unwrap();
        sink.write(SipTransport::Udp, c, d, now, SIP).unwrap();
        sink.write(SipTransport::Tcp, a, b, now, SIP).unwrap();
        sink.write(SipTransport::Tcp, a, b, now, SIP).unwrap();
        let file = sink.into_inner().unwrap();
        let packets = read(&file);
        assert_eq!(packets.len(), 4);
        let sliced: Vec<_> =
            packets.iter().map(|p| etherparse::SlicedPacket::from_ip(p).expect("an IP packet")).collect();
        for s in &sliced {
            let payload = match &s.transport {
                Some(etherparse::TransportSlice::Udp(u)) => u.payload(),
                Some(etherparse::TransportSlice::Tcp(t)) => t.payload(),
                _ => panic!("UDP or TCP"),
            };
            assert_eq!(payload, SIP);
        }
        let Some(etherparse::TransportSlice::Udp(u)) = &sliced[0].transport else { panic!("UDP") };
        assert_eq!((u.source_port(), u.destination_port()), (5060, 5070));
        assert!(matches!(sliced[1].net, Some(etherparse::NetSlice::Ipv6(_))));
        let seqs: Vec<u32> = sliced[2..]
            .iter()
            .map(|s| match &s.transport {
                Some(etherparse::TransportSlice::Tcp(t)) => t.sequence_number(),
                _ => panic!("TCP"),
            })
            .collect();
        assert_eq!(seqs, [1, 1 + SIP.len() as u32]);
    }

    /// Until a flush the file has only what was flushed before: whole
    /// packets.
    #[test]
    fn the_file_gets_whole_packets_at_each_flush() {
        let mut sink = PcapSink::new(Vec::new()).unwrap();
        assert_eq!(sink.file.len(), 24, "the header at once");
        let (a, b) = ("10.0.0.1:5060".parse().unwrap(), "10.0.0.2:5070".parse().unwrap());
        sink.write(SipTransport::Udp, a, b, SystemTime::now(), SIP).unwrap();
        assert_eq!(sink.file.len(), 24);
        assert_eq!(sink.pending_bytes(), 16 + 28 + SIP.len(), "a record header, IPv4 and UDP headers, the SIP");
        sink.flush().unwrap();
        assert_eq!(sink.pending_bytes(), 0);
        assert_eq!(read(&sink.file).len(), 1);
        let big = vec![b'x'; 70_000];
        assert!(matches!(sink.write(SipTransport::Udp, a, b, SystemTime::now(), &big), Err(PcapError::TooLong(_))));
    }
}
