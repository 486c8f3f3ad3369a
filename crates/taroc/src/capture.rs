//! Reading the TCP/IPv4 and TCP/IPv6 packets of a capture (pcap or pcapng,
//! with `pcap-file`) and writing packets back as a pcap.
//!
//! Link types read: Ethernet (with 802.1Q/802.1ad tags), Linux cooked
//! capture v1 and v2 (`tcpdump -i any`), raw IP (DLT_RAW, LINKTYPE_IPV4,
//! LINKTYPE_IPV6) and BSD loopback (NULL, LOOP; AF_INET 2, and AF_INET6 as
//! BSDs number it: 24, 28 or 30). A frame that does not carry an IPv4 or
//! IPv6 packet with TCP that TAROC compresses (see [`Packet::parse`]) is
//! skipped and counted by why; a capture is refused only when it is not a
//! capture at all, is cut short inside its file header, or has a damaged
//! record. A capture cut short inside a later record (tcpdump killed, a
//! file copied while being written) is read as tshark reads it: the
//! records before the cut are used, the partial one is dropped, and the
//! result says so ([`Truncation`], in `cut.rs`).
//!
//! A capture taken on the sending host usually carries TCP checksums the
//! NIC would have filled in (checksum offload; always on the loopback
//! interface). Such packets are repaired ([`fix_checksums`]) and counted,
//! since every decompressor here verifies the TCP checksum (the draft's
//! §5.4) and would otherwise refuse the originals themselves.
//!
//! The whole file is parsed from memory with `pcap-file`'s slice parsers,
//! which check every record length against the bytes present, so a damaged
//! length field gives an error, not a huge allocation.

use std::borrow::Cow;
use std::io::Write;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapParser, PcapWriter};
use pcap_file::pcapng::{Block, PcapNgParser};
use pcap_file::{DataLink, PcapError};

use crate::packet::{checksums_ok, fix_checksums, is_ipv6_extension_header, Packet};

mod cut;

use cut::RecordEnd;

pub use cut::{Truncation, PCAPNG_MAX_BLOCK, PCAP_MAX_CAPTURED};

/// Why bytes are not a readable capture.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file has no bytes.
    #[error("empty file")]
    Empty,
    /// The first four bytes are neither a pcap nor a pcapng magic number;
    /// holds them.
    #[error("not a pcap or pcapng capture (magic number {0:02x?})")]
    NotACapture([u8; 4]),
    /// A header or record `pcap-file` refuses.
    #[error("bad {format} file: {source}")]
    Malformed {
        /// `"pcap"` or `"pcapng"`.
        format: &'static str,
        /// What `pcap-file` found wrong.
        source: PcapError,
    },
    /// The file ends inside its file header (pcap) or its first Section
    /// Header Block (pcapng), before any record. A file cut short later
    /// is read, with a [`Truncation`].
    #[error("{format} capture cut short inside its file header")]
    Truncated {
        /// `"pcap"` or `"pcapng"`.
        format: &'static str,
    },
    /// A record (pcapng: block) whose header declares more bytes than a
    /// capture record may hold and than the file has left: a damaged
    /// length, refused as tshark refuses it, not read as a cut.
    #[error("bad {format} file: the record at byte offset {offset} declares {length} bytes, more than the {max} a record may hold")]
    RecordTooLong {
        /// `"pcap"` or `"pcapng"`.
        format: &'static str,
        /// The record's byte offset in the file.
        offset: usize,
        /// The length its header declares (pcap: captured bytes; pcapng:
        /// the Block Total Length).
        length: usize,
        /// The most a record may hold ([`PCAP_MAX_CAPTURED`],
        /// [`PCAPNG_MAX_BLOCK`]).
        max: usize,
    },
    /// A pcapng packet (its number, from 1) names an interface (the
    /// second field) no Interface Description Block before it describes.
    #[error("packet {0} of the pcapng file names interface {1}, which the file does not describe")]
    UnknownInterface(usize, u32),
}

/// The file format of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureFormat {
    /// The classic libpcap format (microsecond or nanosecond timestamps).
    Pcap,
    /// pcapng (blocks, one link type per interface).
    PcapNg,
}

/// One TCP/IPv4 or TCP/IPv6 packet of a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedPacket {
    /// Since 1970-01-01 00:00:00 UTC, as the capture says.
    pub timestamp: Duration,
    /// The IP packet, link-layer header and padding removed, checksums
    /// correct.
    pub ip: Vec<u8>,
}

/// Frames that were not used, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Neither IPv4 nor IPv6, or not carrying TCP (for IPv6: after any
    /// extension headers).
    pub not_tcp_ipv4: usize,
    /// Captured shorter than they were on the wire (snap length).
    pub truncated: usize,
    /// On an interface whose link type is not read (see the module docs).
    pub unsupported_link: usize,
    /// TCP over IPv4 or IPv6 that TAROC does not compress: IPv4 options,
    /// IPv6 extension headers, fragments, lengths that disagree, malformed
    /// TCP headers.
    pub unsupported_tcp_ipv4: usize,
}

impl Skipped {
    /// Frames skipped for any reason.
    pub fn total(&self) -> usize {
        self.not_tcp_ipv4 + self.truncated + self.unsupported_link + self.unsupported_tcp_ipv4
    }
}

/// The TCP/IPv4 and TCP/IPv6 packets of a capture, in capture order.
#[derive(Debug, Clone)]
pub struct Capture {
    /// Whether the file is pcap or pcapng.
    pub format: CaptureFormat,
    /// Link types seen, in order of first appearance.
    pub link_types: Vec<DataLink>,
    /// Frames in the file.
    pub frames: usize,
    /// The TCP/IPv4 and TCP/IPv6 packets TAROC compresses, in capture
    /// order.
    pub packets: Vec<CapturedPacket>,
    /// The frames not among `packets`, by why.
    pub skipped: Skipped,
    /// Packets whose IPv4 or TCP checksum was wrong in the capture
    /// (checksum offload) and was repaired.
    pub checksums_fixed: usize,
    /// Set when the file ends inside a record: where, and that the
    /// partial record was dropped. A warning for the user, not an error.
    pub truncated: Option<Truncation>,
}

/// What [`read_frames`] found besides the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameWalk {
    /// Whether the file is pcap or pcapng.
    pub format: CaptureFormat,
    /// Set when the file ends inside a record (see [`Truncation`]).
    pub truncated: Option<Truncation>,
}

const PCAP_MAGICS: [[u8; 4]; 4] =
    [[0xd4, 0xc3, 0xb2, 0xa1], [0xa1, 0xb2, 0xc3, 0xd4], [0x4d, 0x3c, 0xb2, 0xa1], [0xa1, 0xb2, 0x3c, 0x4d]];
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// One link-layer frame of a capture, as the file holds it.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// The link type of the frame's interface.
    pub link: DataLink,
    /// Since 1970-01-01 00:00:00 UTC, as the capture says.
    pub timestamp: Duration,
    /// The bytes captured, at most the snap length.
    pub data: &'a [u8],
    /// The frame's length on the wire.
    pub orig_len: usize,
}

/// Hands every frame of a pcap or pcapng capture held in memory to
/// `each`, in file order, and tells which format the file is and whether
/// it was cut short inside a record (the frames before the cut are handed
/// over, the partial one is not). Record lengths are checked against the
/// bytes present (`pcap-file`'s slice parsers), so a damaged length is a
/// cut or an error, never a huge allocation.
pub fn read_frames(data: &[u8], mut each: impl FnMut(Frame<'_>)) -> Result<FrameWalk, CaptureError> {
    if data.is_empty() {
        return Err(CaptureError::Empty);
    }
    let mut magic = [0u8; 4];
    let n = data.len().min(4);
    magic[..n].copy_from_slice(&data[..n]);
    if PCAP_MAGICS.contains(&magic) {
        Ok(FrameWalk { format: CaptureFormat::Pcap, truncated: read_pcap(data, &mut each)? })
    } else if magic == PCAPNG_MAGIC {
        Ok(FrameWalk { format: CaptureFormat::PcapNg, truncated: read_pcapng(data, &mut each)? })
    } else {
        Err(CaptureError::NotACapture(magic))
    }
}

/// Reads a pcap or pcapng capture held in memory.
pub fn read_capture(data: &[u8]) -> Result<Capture, CaptureError> {
    let mut cap = Capture {
        format: CaptureFormat::Pcap,
        link_types: Vec::new(),
        frames: 0,
        packets: Vec::new(),
        skipped: Skipped::default(),
        checksums_fixed: 0,
        truncated: None,
    };
    let walk = read_frames(data, |f| {
        cap.frames += 1;
        cap.note_link(f.link);
        cap.take(f.link, f.timestamp, f.data, f.orig_len);
    })?;
    cap.format = walk.format;
    cap.truncated = walk.truncated;
    Ok(cap)
}

/// `pcap-file`'s error on the file header (the pcap global header, the
/// pcapng first Section Header Block): nothing is readable without it.
/// `whole`: the header does not run past the end of the file, so an
/// incomplete field inside it is damage, not a cut.
fn bad_header(format: &'static str, whole: bool, e: PcapError) -> CaptureError {
    match e {
        PcapError::IncompleteBuffer if !whole => CaptureError::Truncated { format },
        source => CaptureError::Malformed { format, source },
    }
}

/// `pcap-file`'s error on the record at `rest`: a cut if the record runs
/// past the end of the file (`end`, from the record's own length), a
/// damaged length if it declares more than a record may hold, any other
/// error (a field running past the end of a whole block included) as it
/// is.
fn bad_record(
    data: &[u8],
    rest: &[u8],
    records: usize,
    format: CaptureFormat,
    end: RecordEnd,
    e: PcapError,
) -> Result<Option<Truncation>, CaptureError> {
    let offset = data.len() - rest.len();
    let name = if format == CaptureFormat::Pcap { "pcap" } else { "pcapng" };
    match (e, end) {
        (_, RecordEnd::TooLong(length)) => {
            let max = if format == CaptureFormat::Pcap { PCAP_MAX_CAPTURED } else { PCAPNG_MAX_BLOCK };
            Err(CaptureError::RecordTooLong { format: name, offset, length, max })
        }
        (PcapError::IncompleteBuffer, RecordEnd::Cut(declared)) => {
            Ok(Some(Truncation { format, records, offset, present: rest.len(), declared }))
        }
        (source, _) => Err(CaptureError::Malformed { format: name, source }),
    }
}

fn read_pcap(data: &[u8], each: &mut impl FnMut(Frame<'_>)) -> Result<Option<Truncation>, CaptureError> {
    let (mut rest, parser) = PcapParser::new(data).map_err(|e| bad_header("pcap", data.len() >= 24, e))?;
    let link = parser.header().datalink;
    let mut frames = 0;
    while !rest.is_empty() {
        // The raw record: lengths are checked against the bytes present, and
        // a record longer than the header's snap length is still read.
        let (next, raw) = match parser.next_raw_packet(rest) {
            Ok(r) => r,
            Err(e) => {
                let end = cut::pcap_end(rest, parser.header().endianness);
                return bad_record(data, rest, frames, CaptureFormat::Pcap, end, e);
            }
        };
        rest = next;
        frames += 1;
        let frac = match parser.header().ts_resolution {
            pcap_file::TsResolution::MicroSecond => raw.ts_frac.saturating_mul(1000),
            pcap_file::TsResolution::NanoSecond => raw.ts_frac,
        };
        let timestamp = Duration::new(u64::from(raw.ts_sec), frac.min(999_999_999));
        each(Frame { link, timestamp, data: &raw.data, orig_len: raw.orig_len as usize });
    }
    Ok(None)
}

fn read_pcapng(data: &[u8], each: &mut impl FnMut(Frame<'_>)) -> Result<Option<Truncation>, CaptureError> {
    let (mut rest, mut parser) = PcapNgParser::new(data).map_err(|e| {
        // The Section Header Block carries its own byte order.
        let whole = !matches!(cut::pcapng_end(data, pcap_file::Endianness::Big), RecordEnd::Cut(_));
        bad_header("pcapng", whole, e)
    })?;
    let mut frames = 0;
    while !rest.is_empty() {
        let (next, block) = match parser.next_block(rest) {
            Ok(b) => b,
            Err(e) => {
                let end = cut::pcapng_end(rest, parser.section().endianness);
                return bad_record(data, rest, frames, CaptureFormat::PcapNg, end, e);
            }
        };
        rest = next;
        let (interface, timestamp, data, orig_len) = match &block {
            Block::EnhancedPacket(p) => (p.interface_id, p.timestamp, p.data.as_ref(), p.original_len),
            Block::SimplePacket(p) => (0, Duration::ZERO, p.data.as_ref(), p.original_len),
            // The obsolete Packet Block: microseconds, the default resolution.
            Block::Packet(p) => {
                (u32::from(p.interface_id), Duration::from_micros(p.timestamp), p.data.as_ref(), p.original_len)
            }
            _ => continue,
        };
        frames += 1;
        let link = parser
            .interfaces()
            .get(interface as usize)
            .map(|i| i.linktype)
            .ok_or(CaptureError::UnknownInterface(frames, interface))?;
        each(Frame { link, timestamp, data, orig_len: orig_len as usize });
    }
    Ok(None)
}

/// Ethertypes of IPv4 and IPv6.
fn is_ip_ethertype(ty: Option<u16>) -> bool {
    matches!(ty, Some(0x0800 | 0x86dd))
}

/// A link type [`ip_of`] does not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("link type not read")]
pub struct UnsupportedLink;

/// The IP packet inside a link-layer frame, if the frame carries IPv4 or
/// IPv6.
pub fn ip_of(link: DataLink, frame: &[u8]) -> Result<Option<&[u8]>, UnsupportedLink> {
    let be16 = |b: &[u8], at: usize| b.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]]));
    let ip = match link {
        DataLink::ETHERNET => {
            let mut at = 12;
            let mut ty = be16(frame, at);
            // 802.1Q and 802.1ad tags, possibly stacked.
            while matches!(ty, Some(0x8100 | 0x88a8)) {
                at += 4;
                ty = be16(frame, at);
            }
            is_ip_ethertype(ty).then(|| &frame[at + 2..])
        }
        DataLink::LINUX_SLL => is_ip_ethertype(be16(frame, 14)).then(|| &frame[16..]),
        DataLink::LINUX_SLL2 => (is_ip_ethertype(be16(frame, 0)) && frame.len() >= 20).then(|| &frame[20..]),
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => Some(frame),
        DataLink::NULL | DataLink::LOOP => {
            // The address family, in the capturing host's byte order for
            // NULL and network order for LOOP; AF_INET is 2 everywhere,
            // AF_INET6 24 (NetBSD, OpenBSD), 28 (FreeBSD) or 30 (macOS).
            let fam = frame.get(..4).map(|b| [b[0], b[1], b[2], b[3]]);
            let family = fam.map(|b| u32::from_le_bytes(b).min(u32::from_be_bytes(b)));
            matches!(family, Some(2 | 24 | 28 | 30)).then(|| &frame[4..])
        }
        _ => return Err(UnsupportedLink),
    };
    Ok(ip.filter(|p| p.first().is_some_and(|b| matches!(b >> 4, 4 | 6))))
}

/// The upper-layer protocol of an IPv6 packet after its extension headers
/// (RFC 8200 §4), and whether there were any; `None` if the chain is cut
/// short or holds ESP (whose payload is encrypted).
fn ipv6_upper_layer(ip: &[u8]) -> Option<(u8, bool)> {
    let (mut nh, mut at, mut ext) = (*ip.get(6)?, 40usize, false);
    while is_ipv6_extension_header(nh) {
        ext = true;
        let len = match nh {
            44 => 8,                                   // Fragment
            51 => (*ip.get(at + 1)? as usize + 2) * 4, // AH (RFC 4302)
            50 => return None,                         // ESP
            _ => (*ip.get(at + 1)? as usize + 1) * 8,
        };
        nh = *ip.get(at)?;
        at += len;
    }
    Some((nh, ext))
}

impl Capture {
    fn note_link(&mut self, link: DataLink) {
        if !self.link_types.contains(&link) {
            self.link_types.push(link);
        }
    }

    fn take(&mut self, link: DataLink, timestamp: Duration, frame: &[u8], orig_len: usize) {
        let ip = match ip_of(link, frame) {
            Err(UnsupportedLink) => {
                self.skipped.unsupported_link += 1;
                return;
            }
            Ok(None) => {
                self.skipped.not_tcp_ipv4 += 1;
                return;
            }
            Ok(Some(ip)) => ip,
        };
        let ipv6 = ip[0] >> 4 == 6;
        let total = if ipv6 {
            if ip.len() < 40 {
                self.skipped.truncated += (frame.len() < orig_len) as usize;
                self.skipped.not_tcp_ipv4 += (frame.len() >= orig_len) as usize;
                return;
            }
            match ipv6_upper_layer(ip) {
                Some((6, _)) => {}
                // A chain cut short by the snap length, or ESP: TCP or not
                // is unknown; a cut frame counts as truncated.
                None if frame.len() < orig_len => {
                    self.skipped.truncated += 1;
                    return;
                }
                _ => {
                    self.skipped.not_tcp_ipv4 += 1;
                    return;
                }
            }
            40 + u16::from_be_bytes([ip[4], ip[5]]) as usize
        } else {
            if ip.len() < 20 || ip[9] != 6 {
                self.skipped.not_tcp_ipv4 += 1;
                return;
            }
            u16::from_be_bytes([ip[2], ip[3]]) as usize
        };
        // Link-layer padding (Ethernet's 60-octet minimum) follows the
        // IP packet; a frame cut by the snap length lacks bytes of it.
        if frame.len() < orig_len || ip.len() < total {
            self.skipped.truncated += 1;
            return;
        }
        let mut ip = ip[..total].to_vec();
        let ip_len = if ipv6 { 40 } else { 20 };
        let plain = if ipv6 { ip.len() >= 60 && ip[6] == 6 } else { ip.len() >= 40 && ip[0] == 0x45 };
        if !checksums_ok(&ip) && plain {
            let data_offset = (ip[ip_len + 12] >> 4) as usize * 4;
            if data_offset >= 20 && ip_len + data_offset <= ip.len() && fix_checksums(&mut ip).is_ok() {
                self.checksums_fixed += 1;
            }
        }
        if Packet::parse(&ip).is_err() {
            self.skipped.unsupported_tcp_ipv4 += 1;
            return;
        }
        self.packets.push(CapturedPacket { timestamp, ip });
    }
}

/// Writes IP packets (IPv4 or IPv6) as a pcap of link type raw IP
/// (LINKTYPE_RAW, whose packets say their version), microsecond timestamps.
pub fn write_pcap<'a, W: Write>(
    out: W,
    packets: impl IntoIterator<Item = (Duration, &'a [u8])>,
) -> Result<W, PcapError> {
    let header = PcapHeader { datalink: DataLink::RAW, snaplen: 65535, ..PcapHeader::default() };
    let mut w = PcapWriter::with_header(out, header)?;
    for (ts, p) in packets {
        let ts = Duration::new(ts.as_secs(), ts.subsec_micros() * 1000);
        w.write_packet(&PcapPacket { timestamp: ts, orig_len: p.len() as u32, data: Cow::Borrowed(p) })?;
    }
    Ok(w.into_writer())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{bulk_transfer, FlowOptions};

    fn pcap_of(link: DataLink, frames: &[Vec<u8>]) -> Vec<u8> {
        let header = PcapHeader { datalink: link, ..PcapHeader::default() };
        let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
        for f in frames {
            w.write_packet(&PcapPacket::new(Duration::from_micros(5), f.len() as u32, f)).unwrap();
        }
        w.into_writer()
    }

    #[test]
    fn reads_every_link_type_and_skips_the_rest() {
        let flow: Vec<Vec<u8>> = bulk_transfer(5, 100, 0, FlowOptions::default()).into_iter().map(|(_, p)| p).collect();
        let eth = |p: &Vec<u8>| {
            let mut f = vec![0u8; 12];
            f.extend_from_slice(&[0x81, 0, 0, 5, 0x08, 0]); // one VLAN tag
            f.extend_from_slice(p);
            f.extend_from_slice(&[0; 6]); // padding
            f
        };
        let sll = |p: &Vec<u8>| {
            let mut f = vec![0u8; 14];
            f.extend_from_slice(&[0x08, 0]);
            f.extend_from_slice(p);
            f
        };
        for (link, frames) in [
            (DataLink::ETHERNET, flow.iter().map(eth).collect::<Vec<_>>()),
            (DataLink::LINUX_SLL, flow.iter().map(sll).collect()),
            (DataLink::RAW, flow.clone()),
        ] {
            let mut frames = frames;
            frames.push(vec![0xff; 30]); // not IPv4
            let cap = read_capture(&pcap_of(link, &frames)).unwrap();
            assert_eq!(cap.packets.iter().map(|p| p.ip.clone()).collect::<Vec<_>>(), flow, "{link:?}");
            assert_eq!(cap.skipped.total(), 1);
        }
        let cap = read_capture(&pcap_of(DataLink::IEEE802_11, &flow)).unwrap();
        assert_eq!((cap.packets.len(), cap.skipped.unsupported_link), (0, flow.len()));
    }

    #[test]
    fn reads_ipv6_on_every_link_type_and_skips_what_taroc_refuses() {
        let opts = FlowOptions { ipv6: true, ..FlowOptions::default() };
        let flow: Vec<Vec<u8>> = bulk_transfer(5, 100, 0, opts).into_iter().map(|(_, p)| p).collect();
        let with = |head: &[u8], p: &Vec<u8>| [head, p.as_slice()].concat();
        let mut eth_head = vec![0u8; 12];
        eth_head.extend_from_slice(&[0x86, 0xdd]);
        let mut sll_head = vec![0u8; 14];
        sll_head.extend_from_slice(&[0x86, 0xdd]);
        let mut sll2_head = vec![0x86, 0xdd];
        sll2_head.extend_from_slice(&[0; 18]);
        let mut cases = vec![
            (DataLink::ETHERNET, flow.iter().map(|p| with(&eth_head, p)).collect::<Vec<_>>()),
            (DataLink::LINUX_SLL, flow.iter().map(|p| with(&sll_head, p)).collect()),
            (DataLink::LINUX_SLL2, flow.iter().map(|p| with(&sll2_head, p)).collect()),
            (DataLink::RAW, flow.clone()),
            (DataLink::IPV6, flow.clone()),
        ];
        for fam in [24u32, 28, 30] {
            cases.push((DataLink::NULL, flow.iter().map(|p| with(&fam.to_le_bytes(), p)).collect()));
            cases.push((DataLink::LOOP, flow.iter().map(|p| with(&fam.to_be_bytes(), p)).collect()));
        }
        for (link, frames) in cases {
            let cap = read_capture(&pcap_of(link, &frames)).unwrap();
            assert_eq!(cap.packets.iter().map(|p| p.ip.clone()).collect::<Vec<_>>(), flow, "{link:?}");
            assert_eq!(cap.skipped.total(), 0, "{link:?}");
        }
        // A Hop-by-Hop header before TCP: TCP that TAROC does not compress;
        // before UDP: not TCP; cut by the snap length: truncated.
        let p = &flow[3];
        let mut hbh = p[..40].to_vec();
        hbh[6] = 0;
        hbh.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        hbh.extend_from_slice(&p[40..]);
        let len = (hbh.len() - 40) as u16;
        hbh[4..6].copy_from_slice(&len.to_be_bytes());
        let mut udp = hbh.clone();
        udp[40] = 17;
        let header = PcapHeader { datalink: DataLink::RAW, ..PcapHeader::default() };
        let mut w = PcapWriter::with_header(Vec::new(), header).unwrap();
        for f in [&hbh, &udp] {
            w.write_packet(&PcapPacket::new(Duration::ZERO, f.len() as u32, f)).unwrap();
        }
        w.write_packet(&PcapPacket::new(Duration::ZERO, p.len() as u32 + 10, &p[..])).unwrap();
        let cap = read_capture(&w.into_writer()).unwrap();
        assert_eq!(cap.packets.len(), 0);
        let s = cap.skipped;
        assert_eq!((s.unsupported_tcp_ipv4, s.not_tcp_ipv4, s.truncated), (1, 1, 1), "{s:?}");
    }

    #[test]
    fn offloaded_ipv6_checksums_are_repaired() {
        let opts = FlowOptions { ipv6: true, ..FlowOptions::default() };
        let flow: Vec<Vec<u8>> = bulk_transfer(3, 100, 0, opts).into_iter().map(|(_, p)| p).collect();
        let mut bad = flow.clone();
        for p in &mut bad {
            p[56] ^= 0x5a;
        }
        let cap = read_capture(&pcap_of(DataLink::RAW, &bad)).unwrap();
        assert_eq!(cap.checksums_fixed, flow.len());
        assert_eq!(cap.packets.iter().map(|p| p.ip.clone()).collect::<Vec<_>>(), flow);
    }

    #[test]
    fn offloaded_checksums_are_repaired_and_counted() {
        let flow: Vec<Vec<u8>> = bulk_transfer(3, 100, 0, FlowOptions::default()).into_iter().map(|(_, p)| p).collect();
        let mut bad = flow.clone();
        for p in &mut bad {
            p[36] ^= 0x5a;
        }
        let cap = read_capture(&pcap_of(DataLink::RAW, &bad)).unwrap();
        assert_eq!(cap.checksums_fixed, flow.len());
        assert_eq!(cap.packets.iter().map(|p| p.ip.clone()).collect::<Vec<_>>(), flow);
    }

    #[test]
    fn bad_files_are_errors_not_panics() {
        assert!(matches!(read_capture(b""), Err(CaptureError::Empty)));
        assert!(matches!(read_capture(b"GET / HTTP/1.1\r\n"), Err(CaptureError::NotACapture(_))));
        let flow: Vec<Vec<u8>> = bulk_transfer(3, 100, 0, FlowOptions::default()).into_iter().map(|(_, p)| p).collect();
        let good = pcap_of(DataLink::RAW, &flow);
        for cut in 1..good.len() {
            let _ = read_capture(&good[..cut]);
        }
        assert!(matches!(read_capture(&good[..10]), Err(CaptureError::Truncated { .. })));
        let cut = read_capture(&good[..good.len() - 3]).unwrap();
        assert_eq!((cut.frames, cut.packets.len()), (flow.len() - 1, flow.len() - 1));
        assert_eq!(cut.truncated.map(|t| t.records), Some(flow.len() - 1));
        let mut x = 0x1234_5678u32;
        for i in 0..2000 {
            let mut d = good.clone();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let at = 4 + (x as usize) % (d.len() - 4);
                d[at] ^= (x >> 24) as u8 | 1;
            }
            if i % 2 == 0 {
                d[..4].copy_from_slice(&PCAPNG_MAGIC);
            }
            let _ = read_capture(&d);
        }
    }

    #[test]
    fn written_pcap_reads_back() {
        let flow: Vec<Vec<u8>> = bulk_transfer(3, 100, 0, FlowOptions::default()).into_iter().map(|(_, p)| p).collect();
        let bytes = write_pcap(Vec::new(), flow.iter().map(|p| (Duration::from_millis(7), p.as_slice()))).unwrap();
        let cap = read_capture(&bytes).unwrap();
        assert_eq!(cap.link_types, vec![DataLink::RAW]);
        assert_eq!(cap.packets.len(), flow.len());
        assert_eq!(cap.packets[0].timestamp, Duration::from_millis(7));
    }
}
