//! Reading the UDP and TCP packets of a capture (pcap or pcapng), over
//! IPv4 or IPv6.
//!
//! `taroc::capture::read_capture` keeps TCP packets only (what TAROC
//! compresses); SIP also runs over UDP, so this reader keeps every UDP and
//! TCP packet and, for TCP/IPv4 ones, the whole IPv4 packet for TAROC. The
//! file walk and the link layers are shared with it
//! (`taroc::capture::read_frames` and `ip_of`).
//!
//! Link types read: Ethernet (with 802.1Q/802.1ad tags), Linux cooked
//! capture v1 and v2 (`tshark -i any`), raw IP (DLT_RAW, LINKTYPE_IPV4,
//! LINKTYPE_IPV6) and BSD loopback (NULL, LOOP). Frames that carry
//! nothing usable are counted by why ([`Skipped`]); a file is refused only
//! when it is not a capture or its records are damaged
//! ([`CaptureError`]). A file cut short inside a record is read as far as
//! it goes, as tshark reads it ([`Capture::truncated`]).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pcap_file::DataLink;
use serde::Serialize;
use taroc::capture::{ip_of, read_frames, CaptureFormat, UnsupportedLink};

/// Why bytes are not a readable capture, and where a capture was cut
/// short: the container walk is `taroc::capture`'s, which both readers
/// share.
pub use taroc::capture::{CaptureError, Truncation};

/// UDP or TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// UDP (RFC 3261 §18: one message per datagram).
    Udp,
    /// TCP (RFC 3261 §18.3: a byte stream framed by Content-Length).
    Tcp,
}

impl Protocol {
    /// "udp" or "tcp", as the report writes it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Udp => "udp",
            Protocol::Tcp => "tcp",
        }
    }
}

/// The TCP fields reassembly needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpFields {
    /// The sequence number.
    pub seq: u32,
    /// SYN set: the stream starts after this sequence number.
    pub syn: bool,
    /// FIN set.
    pub fin: bool,
    /// RST set.
    pub rst: bool,
}

/// One UDP datagram or TCP segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Its frame's number in the capture, from 1 (as Wireshark numbers them).
    pub frame: usize,
    /// Since 1970-01-01 00:00:00 UTC, as the capture says.
    pub timestamp: Duration,
    /// UDP or TCP.
    pub protocol: Protocol,
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port.
    pub dst: SocketAddr,
    /// IP header (with extension headers or options) plus UDP or TCP header.
    pub header_len: usize,
    /// For TCP: the fields reassembly needs.
    pub tcp: Option<TcpFields>,
    /// The UDP or TCP payload.
    pub payload: Vec<u8>,
    /// For TCP over IPv4: the IPv4 packet, link layer and padding removed,
    /// checksums repaired (see [`Capture::checksums_fixed`]), for TAROC.
    pub ipv4_packet: Option<Vec<u8>>,
}

/// Frames that were not used, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Neither IPv4 nor IPv6 (ARP, ...).
    pub not_ip: usize,
    /// IP carrying neither UDP nor TCP (ICMP, ...).
    pub not_udp_tcp: usize,
    /// IP fragments: SIP over UDP larger than the path MTU (RFC 3261
    /// §18.1.1 moves such requests to TCP); not reassembled.
    pub ip_fragments: usize,
    /// Captured shorter than they were on the wire (snap length).
    pub truncated: usize,
    /// On an interface whose link type is not read.
    pub unsupported_link: usize,
    /// Headers that do not parse.
    pub malformed: usize,
}

impl Skipped {
    /// Frames skipped for any reason.
    pub fn total(&self) -> usize {
        self.not_ip + self.not_udp_tcp + self.ip_fragments + self.truncated + self.unsupported_link + self.malformed
    }
}

/// The UDP and TCP packets of a capture, in capture order.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    /// "pcap" or "pcapng".
    pub format: &'static str,
    /// Link types seen, in order of first appearance.
    pub link_types: Vec<String>,
    /// Frames in the file.
    pub frames: usize,
    /// The UDP datagrams and TCP segments, in capture order.
    pub segments: Vec<Segment>,
    /// Frames not among `segments`, by why.
    pub skipped: Skipped,
    /// TCP/IPv4 packets whose checksums were wrong in the capture and were
    /// repaired: a capture on the sending host (always on loopback) holds
    /// checksums the NIC would have filled in, and TAROC's decompressor
    /// verifies the TCP checksum (the TAROC draft's §5.4).
    pub checksums_fixed: usize,
    /// Set when the file ends inside a record: the records before it are
    /// read, the partial one is dropped (as tshark does). A warning for
    /// the user, not an error.
    pub truncated: Option<Truncation>,
}

/// Reads a pcap or pcapng capture held in memory.
pub fn read_capture(data: &[u8]) -> Result<Capture, CaptureError> {
    let mut cap = Capture::default();
    let walk = read_frames(data, |f| {
        cap.frames += 1;
        cap.note_link(f.link);
        cap.take(f.link, f.timestamp, f.data, f.orig_len);
    })?;
    cap.truncated = walk.truncated;
    cap.format = match walk.format {
        CaptureFormat::Pcap => "pcap",
        CaptureFormat::PcapNg => "pcapng",
    };
    Ok(cap)
}

impl Capture {
    fn note_link(&mut self, link: DataLink) {
        let name = format!("{link:?}");
        if !self.link_types.contains(&name) {
            self.link_types.push(name);
        }
    }

    fn take(&mut self, link: DataLink, timestamp: Duration, frame: &[u8], orig_len: usize) {
        let frame_no = self.frames;
        let ip = match ip_of(link, frame) {
            Err(UnsupportedLink) => {
                self.skipped.unsupported_link += 1;
                return;
            }
            Ok(None) => {
                self.skipped.not_ip += 1;
                return;
            }
            Ok(Some(ip)) => ip,
        };
        if frame.len() < orig_len {
            self.skipped.truncated += 1;
            return;
        }
        let Ok(sliced) = SlicedPacket::from_ip(ip) else {
            self.skipped.malformed += 1;
            return;
        };
        let (src_ip, dst_ip, ip_header_len, ip_total, fragmented) = match &sliced.net {
            Some(NetSlice::Ipv4(v4)) => {
                let h = v4.header();
                (
                    IpAddr::V4(h.source_addr()),
                    IpAddr::V4(h.destination_addr()),
                    h.slice().len(),
                    usize::from(h.total_len()),
                    v4.payload().fragmented,
                )
            }
            Some(NetSlice::Ipv6(v6)) => {
                let h = v6.header();
                let payload = v6.payload();
                let ext = ip.len().saturating_sub(h.slice().len() + payload.payload.len());
                (
                    IpAddr::V6(h.source_addr()),
                    IpAddr::V6(h.destination_addr()),
                    h.slice().len() + ext,
                    h.slice().len() + usize::from(h.payload_length()),
                    payload.fragmented,
                )
            }
            None => {
                self.skipped.malformed += 1;
                return;
            }
        };
        if fragmented {
            self.skipped.ip_fragments += 1;
            return;
        }
        let (protocol, src_port, dst_port, transport_header, payload, tcp) = match &sliced.transport {
            Some(TransportSlice::Udp(u)) => {
                (Protocol::Udp, u.source_port(), u.destination_port(), u.header_slice().len(), u.payload(), None)
            }
            Some(TransportSlice::Tcp(t)) => (
                Protocol::Tcp,
                t.source_port(),
                t.destination_port(),
                t.header_slice().len(),
                t.payload(),
                Some(TcpFields { seq: t.sequence_number(), syn: t.syn(), fin: t.fin(), rst: t.rst() }),
            ),
            _ => {
                self.skipped.not_udp_tcp += 1;
                return;
            }
        };
        let ipv4_packet = match (&src_ip, protocol) {
            (IpAddr::V4(_), Protocol::Tcp) if ip.len() >= ip_total => {
                // Ethernet's 60-octet minimum pads short frames: cut at the
                // IPv4 total length.
                let mut packet = ip[..ip_total].to_vec();
                if !taroc::checksums_ok(&packet) && taroc::fix_checksums(&mut packet).is_ok() {
                    self.checksums_fixed += 1;
                }
                Some(packet)
            }
            _ => None,
        };
        self.segments.push(Segment {
            frame: frame_no,
            timestamp,
            protocol,
            src: SocketAddr::new(src_ip, src_port),
            dst: SocketAddr::new(dst_ip, dst_port),
            header_len: ip_header_len + transport_header,
            tcp,
            payload: payload.to_vec(),
            ipv4_packet,
        });
    }
}
