//! Reading the UDP and TCP packets of a capture (pcap or pcapng), over
//! IPv4 or IPv6.
//!
//! `rohc_tcp::capture` reads TCP/IPv4 only (what TAROC compresses); SIP
//! also runs over UDP and IPv6, so this walk keeps every UDP and TCP
//! packet and, for TCP/IPv4 ones, the whole IPv4 packet for TAROC.
//!
//! Link types read: Ethernet (with 802.1Q/802.1ad tags), Linux cooked
//! capture v1 and v2 (`tshark -i any`), raw IP (DLT_RAW, LINKTYPE_IPV4,
//! LINKTYPE_IPV6) and BSD loopback (NULL, LOOP). Frames that carry
//! nothing usable are counted by why ([`Skipped`]); a file is refused only
//! when it is not a capture or its records are damaged
//! ([`CaptureError`]). `pcap-file`'s slice parsers check every record
//! length against the bytes present, so a damaged length is an error, not
//! a huge allocation.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pcap_file::pcap::PcapParser;
use pcap_file::pcapng::{Block, PcapNgParser};
use pcap_file::{DataLink, PcapError};
use serde::Serialize;

/// Why bytes are not a readable capture.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("empty file")]
    Empty,
    #[error("not a pcap or pcapng capture (magic number {0:02x?})")]
    NotACapture([u8; 4]),
    #[error("bad {format} file: {source}")]
    Malformed { format: &'static str, source: PcapError },
    #[error("{format} capture cut short after {records} records")]
    Truncated { format: &'static str, records: usize },
    #[error("packet {0} of the pcapng file names interface {1}, which the file does not describe")]
    UnknownInterface(usize, u32),
}

/// UDP or TCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Udp,
    Tcp,
}

impl Protocol {
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
    pub seq: u32,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
}

/// One UDP datagram or TCP segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Its frame's number in the capture, from 1 (as Wireshark numbers them).
    pub frame: usize,
    /// Since 1970-01-01 00:00:00 UTC, as the capture says.
    pub timestamp: Duration,
    pub protocol: Protocol,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// IP header (with extension headers or options) plus UDP or TCP header.
    pub header_len: usize,
    pub tcp: Option<TcpFields>,
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
    pub segments: Vec<Segment>,
    pub skipped: Skipped,
    /// TCP/IPv4 packets whose checksums were wrong in the capture and were
    /// repaired: a capture on the sending host (always on loopback) holds
    /// checksums the NIC would have filled in, and TAROC's decompressor
    /// verifies the TCP checksum (the TAROC draft's §5.4).
    pub checksums_fixed: usize,
}

const PCAP_MAGICS: [[u8; 4]; 4] =
    [[0xd4, 0xc3, 0xb2, 0xa1], [0xa1, 0xb2, 0xc3, 0xd4], [0x4d, 0x3c, 0xb2, 0xa1], [0xa1, 0xb2, 0x3c, 0x4d]];
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// Reads a pcap or pcapng capture held in memory.
pub fn read_capture(data: &[u8]) -> Result<Capture, CaptureError> {
    if data.is_empty() {
        return Err(CaptureError::Empty);
    }
    let mut magic = [0u8; 4];
    let n = data.len().min(4);
    magic[..n].copy_from_slice(&data[..n]);
    let mut cap = Capture::default();
    if PCAP_MAGICS.contains(&magic) {
        cap.format = "pcap";
        read_pcap(data, &mut cap)?;
    } else if magic == PCAPNG_MAGIC {
        cap.format = "pcapng";
        read_pcapng(data, &mut cap)?;
    } else {
        return Err(CaptureError::NotACapture(magic));
    }
    Ok(cap)
}

fn malformed(format: &'static str, records: usize, e: PcapError) -> CaptureError {
    match e {
        PcapError::IncompleteBuffer => CaptureError::Truncated { format, records },
        source => CaptureError::Malformed { format, source },
    }
}

fn read_pcap(data: &[u8], cap: &mut Capture) -> Result<(), CaptureError> {
    let (mut rest, parser) = PcapParser::new(data).map_err(|e| malformed("pcap", 0, e))?;
    let link = parser.header().datalink;
    cap.note_link(link);
    while !rest.is_empty() {
        let (next, raw) = parser.next_raw_packet(rest).map_err(|e| malformed("pcap", cap.frames, e))?;
        rest = next;
        cap.frames += 1;
        let frac = match parser.header().ts_resolution {
            pcap_file::TsResolution::MicroSecond => raw.ts_frac.saturating_mul(1000),
            pcap_file::TsResolution::NanoSecond => raw.ts_frac,
        };
        let ts = Duration::new(u64::from(raw.ts_sec), frac.min(999_999_999));
        cap.take(link, ts, &raw.data, raw.orig_len as usize);
    }
    Ok(())
}

fn read_pcapng(data: &[u8], cap: &mut Capture) -> Result<(), CaptureError> {
    let (mut rest, mut parser) = PcapNgParser::new(data).map_err(|e| malformed("pcapng", 0, e))?;
    while !rest.is_empty() {
        let (next, block) = parser.next_block(rest).map_err(|e| malformed("pcapng", cap.frames, e))?;
        rest = next;
        match block {
            Block::EnhancedPacket(p) => {
                cap.frames += 1;
                let link = parser
                    .packet_interface(&p)
                    .map(|i| i.linktype)
                    .ok_or(CaptureError::UnknownInterface(cap.frames, p.interface_id))?;
                cap.note_link(link);
                cap.take(link, p.timestamp, &p.data, p.original_len as usize);
            }
            Block::SimplePacket(p) => {
                cap.frames += 1;
                let link = parser
                    .interfaces()
                    .first()
                    .map(|i| i.linktype)
                    .ok_or(CaptureError::UnknownInterface(cap.frames, 0))?;
                cap.note_link(link);
                cap.take(link, Duration::ZERO, &p.data, p.original_len as usize);
            }
            Block::Packet(p) => {
                cap.frames += 1;
                let link = parser
                    .interfaces()
                    .get(usize::from(p.interface_id))
                    .map(|i| i.linktype)
                    .ok_or(CaptureError::UnknownInterface(cap.frames, u32::from(p.interface_id)))?;
                cap.note_link(link);
                // The obsolete Packet Block: microseconds, the default resolution.
                cap.take(link, Duration::from_micros(p.timestamp), &p.data, p.original_len as usize);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The IP packet inside a link-layer frame: `Ok(None)` if the frame
/// carries something else, `Err(())` for a link type that is not read.
fn ip_of(link: DataLink, frame: &[u8]) -> Result<Option<&[u8]>, ()> {
    let be16 = |b: &[u8], at: usize| b.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]]));
    let is_ip = |ty: Option<u16>| matches!(ty, Some(0x0800 | 0x86dd));
    let ip = match link {
        DataLink::ETHERNET => {
            let mut at = 12;
            let mut ty = be16(frame, at);
            // 802.1Q and 802.1ad tags, possibly stacked.
            while matches!(ty, Some(0x8100 | 0x88a8)) {
                at += 4;
                ty = be16(frame, at);
            }
            is_ip(ty).then(|| &frame[at + 2..])
        }
        DataLink::LINUX_SLL => is_ip(be16(frame, 14)).then(|| &frame[16..]),
        DataLink::LINUX_SLL2 => (is_ip(be16(frame, 0)) && frame.len() >= 20).then(|| &frame[20..]),
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => Some(frame),
        DataLink::NULL | DataLink::LOOP => {
            // The address family, in the capturing host's byte order for
            // NULL and network order for LOOP: AF_INET is 2 everywhere,
            // AF_INET6 is 10 (Linux), 24 (NetBSD), 28 (FreeBSD) or 30 (macOS).
            let fam = frame.get(..4).map(|b| [b[0], b[1], b[2], b[3]]);
            let family = fam.map(|f| if f[0] != 0 { f[0] } else { f[3] });
            matches!(family, Some(2 | 10 | 24 | 28 | 30)).then(|| &frame[4..])
        }
        _ => return Err(()),
    };
    Ok(ip.filter(|p| p.first().is_some_and(|b| matches!(b >> 4, 4 | 6))))
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
            Err(()) => {
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
                if !rohc_tcp::checksums_ok(&packet) && rohc_tcp::fix_checksums(&mut packet).is_ok() {
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
