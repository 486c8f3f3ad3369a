//! HEPv3, the Homer encapsulation protocol (third version, also called
//! EEP): how a SIP server hands a copy of each SIP message it handles to a
//! capture server (Homer, heplify-server) over UDP.
//!
//! A packet is the ASCII magic `HEP3`, its total length (two octets,
//! network order, counting the magic and itself), then chunks. A chunk is
//! a vendor id, a type id and a length (two octets each, network order;
//! the length counts these six octets and the payload), then its payload.
//! Vendor 0 holds the generic chunk types of the "HEP3 Network Protocol
//! Specification" (sipcapture.org, rev. 10 and later): IP family (1, one
//! octet: 2 IPv4, 10 IPv6), IP protocol (2, one octet: 17 UDP, 6 TCP),
//! source and destination IPv4 (3, 4) or IPv6 (5, 6) addresses, source and
//! destination ports (7, 8, two octets), the time in seconds and
//! microseconds (9, 10, four octets each), the protocol type (11, one
//! octet: 1 SIP), the capture agent id (12, four octets), the
//! authentication key (14), the captured payload (15) and the correlation
//! id (17, a SIP message's Call-ID). [`Packet::emit`] writes the chunks in
//! the order Kamailio's siptrace module sends them; [`Packet::parse`]
//! takes them in any order, skips other vendors' and unknown types (the
//! specification's rule), and refuses what is malformed with a
//! [`HepError`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The four octets every HEPv3 packet starts with.
pub const MAGIC: &[u8; 4] = b"HEP3";

/// The header's size: the magic and the total length.
const HEADER: usize = 6;

/// A chunk's header: vendor id, type id, length.
const CHUNK_HEADER: usize = 6;

/// IP protocol numbers (IANA) of the transports the proxy speaks.
pub const IPPROTO_UDP: u8 = 17;
/// TCP's IP protocol number.
pub const IPPROTO_TCP: u8 = 6;

/// The protocol type (chunk 11) of SIP.
pub const PROTO_SIP: u8 = 1;

/// The address families of chunk 1, as BSD sockets number them.
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

/// The generic chunk types (vendor 0) the proxy writes or reads.
mod chunk {
    pub const IP_FAMILY: u16 = 0x0001;
    pub const IP_PROTOCOL: u16 = 0x0002;
    pub const SRC_IPV4: u16 = 0x0003;
    pub const DST_IPV4: u16 = 0x0004;
    pub const SRC_IPV6: u16 = 0x0005;
    pub const DST_IPV6: u16 = 0x0006;
    pub const SRC_PORT: u16 = 0x0007;
    pub const DST_PORT: u16 = 0x0008;
    pub const TIME_S: u16 = 0x0009;
    pub const TIME_US: u16 = 0x000a;
    pub const PROTO_TYPE: u16 = 0x000b;
    pub const CAPTURE_ID: u16 = 0x000c;
    pub const AUTH_KEY: u16 = 0x000e;
    pub const PAYLOAD: u16 = 0x000f;
    pub const CORRELATION_ID: u16 = 0x0011;
}

/// One captured message as a HEPv3 packet carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// IP protocol of the message's transport ([`IPPROTO_UDP`],
    /// [`IPPROTO_TCP`]).
    pub ip_protocol: u8,
    /// Where the message came from. Source and destination are of one
    /// family (chunk 1 names one); [`Packet::emit`] writes an IPv4 one as
    /// IPv4-mapped IPv6 when the other is IPv6.
    pub src: SocketAddr,
    /// Where it went.
    pub dst: SocketAddr,
    /// When it was captured, to the microsecond.
    pub time: SystemTime,
    /// What it carries ([`PROTO_SIP`]).
    pub proto_type: u8,
    /// The capture agent's id (`hep_id`), which tells a collector's users
    /// which node captured the message.
    pub capture_id: u32,
    /// The collector's password, when it wants one.
    pub auth_key: Option<Vec<u8>>,
    /// The correlation id: a SIP message's Call-ID, so the collector
    /// groups both sides of a call.
    pub correlation_id: Option<Vec<u8>>,
    /// The captured message.
    pub payload: Vec<u8>,
}

/// Why bytes are not a HEPv3 packet, or a packet cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HepError {
    /// Fewer bytes than the header, or than a chunk's header.
    #[error("HEP3: cut short at {0} bytes")]
    Short(usize),
    /// The first four octets are not `HEP3`.
    #[error("HEP3: no HEP3 magic")]
    Magic,
    /// The header's total length is below the header or differs from the
    /// bytes given (one packet per datagram).
    #[error("HEP3: total length {stated}, {actual} bytes given")]
    Length {
        /// What the header says.
        stated: usize,
        /// How many bytes there are.
        actual: usize,
    },
    /// A chunk's length is below its header or runs past the packet.
    #[error("HEP3: chunk type {type_id:#06x} of length {length} at offset {offset}")]
    ChunkLength {
        /// The chunk's type id.
        type_id: u16,
        /// Its stated length.
        length: usize,
        /// Where it starts.
        offset: usize,
    },
    /// A generic chunk whose payload is not the size its type has.
    #[error("HEP3: chunk type {type_id:#06x} has {length} payload bytes, not {expected}")]
    ChunkSize {
        /// The chunk's type id.
        type_id: u16,
        /// Its payload's size.
        length: usize,
        /// The size its type has.
        expected: usize,
    },
    /// A chunk the proxy needs is absent.
    #[error("HEP3: no chunk of type {0:#06x}")]
    Missing(u16),
    /// The IP family chunk names neither IPv4 nor IPv6, or the address
    /// chunks are not of its family.
    #[error("HEP3: IP family {0} without its address chunks")]
    Family(u8),
    /// The packet would be longer than its two-octet length can say.
    #[error("HEP3: a packet of {0} bytes is over 65535")]
    TooLong(usize),
}

impl Packet {
    /// The packet's bytes. Fails only when they would exceed 65535 (a SIP
    /// message near 64 KiB).
    pub fn emit(&self) -> Result<Vec<u8>, HepError> {
        let (src, dst) = same_family(self.src.ip(), self.dst.ip());
        let optional = |v: &Option<Vec<u8>>| v.as_ref().map_or(0, |b| CHUNK_HEADER + b.len());
        let addr_len = match src {
            IpAddr::V4(_) => 4,
            IpAddr::V6(_) => 16,
        };
        let len = HEADER
            + 2 * (CHUNK_HEADER + 1)
            + 2 * (CHUNK_HEADER + addr_len)
            + 2 * (CHUNK_HEADER + 2)
            + 2 * (CHUNK_HEADER + 4)
            + (CHUNK_HEADER + 1)
            + (CHUNK_HEADER + 4)
            + optional(&self.correlation_id)
            + optional(&self.auth_key)
            + CHUNK_HEADER
            + self.payload.len();
        let total = u16::try_from(len).map_err(|_| HepError::TooLong(len))?;
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&total.to_be_bytes());
        let mut put = |type_id: u16, payload: &[u8]| {
            // Each chunk is under the total, which fits two octets.
            let length = (CHUNK_HEADER + payload.len()) as u16;
            out.extend_from_slice(&0u16.to_be_bytes());
            out.extend_from_slice(&type_id.to_be_bytes());
            out.extend_from_slice(&length.to_be_bytes());
            out.extend_from_slice(payload);
        };
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                put(chunk::IP_FAMILY, &[AF_INET]);
                put(chunk::IP_PROTOCOL, &[self.ip_protocol]);
                put(chunk::SRC_IPV4, &s.octets());
                put(chunk::DST_IPV4, &d.octets());
            }
            (s, d) => {
                put(chunk::IP_FAMILY, &[AF_INET6]);
                put(chunk::IP_PROTOCOL, &[self.ip_protocol]);
                put(chunk::SRC_IPV6, &v6(s).octets());
                put(chunk::DST_IPV6, &v6(d).octets());
            }
        }
        put(chunk::SRC_PORT, &self.src.port().to_be_bytes());
        put(chunk::DST_PORT, &self.dst.port().to_be_bytes());
        let since = self.time.duration_since(UNIX_EPOCH).unwrap_or_default();
        // Seconds as four octets: good until 2106.
        put(chunk::TIME_S, &(since.as_secs() as u32).to_be_bytes());
        put(chunk::TIME_US, &since.subsec_micros().to_be_bytes());
        put(chunk::PROTO_TYPE, &[self.proto_type]);
        put(chunk::CAPTURE_ID, &self.capture_id.to_be_bytes());
        if let Some(c) = &self.correlation_id {
            put(chunk::CORRELATION_ID, c);
        }
        if let Some(k) = &self.auth_key {
            put(chunk::AUTH_KEY, k);
        }
        put(chunk::PAYLOAD, &self.payload);
        Ok(out)
    }

    /// The packet `bytes` hold (one whole packet, as one UDP datagram
    /// carries it). Chunks of other vendors and of types the proxy does
    /// not know are skipped; the IP family, addresses, ports and payload
    /// must be there, the rest default (time 0, protocol type 0, capture id
    /// 0). A chunk given twice counts by its last copy.
    pub fn parse(bytes: &[u8]) -> Result<Packet, HepError> {
        if bytes.len() < HEADER {
            return Err(HepError::Short(bytes.len()));
        }
        if &bytes[..4] != MAGIC {
            return Err(HepError::Magic);
        }
        let stated = usize::from(u16::from_be_bytes([bytes[4], bytes[5]]));
        if stated < HEADER || stated != bytes.len() {
            return Err(HepError::Length { stated, actual: bytes.len() });
        }
        let mut f = Fields::default();
        let mut at = HEADER;
        while at < bytes.len() {
            let Some(head) = bytes.get(at..at + CHUNK_HEADER) else { return Err(HepError::Short(bytes.len())) };
            let vendor = u16::from_be_bytes([head[0], head[1]]);
            let type_id = u16::from_be_bytes([head[2], head[3]]);
            let length = usize::from(u16::from_be_bytes([head[4], head[5]]));
            let body = (length >= CHUNK_HEADER).then(|| bytes.get(at + CHUNK_HEADER..at + length)).flatten();
            let Some(body) = body else { return Err(HepError::ChunkLength { type_id, length, offset: at }) };
            if vendor == 0 {
                f.take(type_id, body)?;
            }
            at += length;
        }
        f.packet()
    }
}

/// The chunks of a packet being parsed.
#[derive(Default)]
struct Fields {
    family: Option<u8>,
    protocol: Option<u8>,
    src4: Option<Ipv4Addr>,
    dst4: Option<Ipv4Addr>,
    src6: Option<Ipv6Addr>,
    dst6: Option<Ipv6Addr>,
    src_port: Option<u16>,
    dst_port: Option<u16>,
    secs: u32,
    micros: u32,
    proto_type: u8,
    capture_id: u32,
    auth_key: Option<Vec<u8>>,
    correlation_id: Option<Vec<u8>>,
    payload: Option<Vec<u8>>,
}

/// `body` as the `N` octets of chunk `type_id`.
fn fixed<const N: usize>(type_id: u16, body: &[u8]) -> Result<[u8; N], HepError> {
    body.try_into().map_err(|_| HepError::ChunkSize { type_id, length: body.len(), expected: N })
}

impl Fields {
    fn take(&mut self, type_id: u16, body: &[u8]) -> Result<(), HepError> {
        match type_id {
            chunk::IP_FAMILY => self.family = Some(fixed::<1>(type_id, body)?[0]),
            chunk::IP_PROTOCOL => self.protocol = Some(fixed::<1>(type_id, body)?[0]),
            chunk::SRC_IPV4 => self.src4 = Some(Ipv4Addr::from(fixed::<4>(type_id, body)?)),
            chunk::DST_IPV4 => self.dst4 = Some(Ipv4Addr::from(fixed::<4>(type_id, body)?)),
            chunk::SRC_IPV6 => self.src6 = Some(Ipv6Addr::from(fixed::<16>(type_id, body)?)),
            chunk::DST_IPV6 => self.dst6 = Some(Ipv6Addr::from(fixed::<16>(type_id, body)?)),
            chunk::SRC_PORT => self.src_port = Some(u16::from_be_bytes(fixed(type_id, body)?)),
            chunk::DST_PORT => self.dst_port = Some(u16::from_be_bytes(fixed(type_id, body)?)),
            chunk::TIME_S => self.secs = u32::from_be_bytes(fixed(type_id, body)?),
            chunk::TIME_US => self.micros = u32::from_be_bytes(fixed(type_id, body)?),
            chunk::PROTO_TYPE => self.proto_type = fixed::<1>(type_id, body)?[0],
            chunk::CAPTURE_ID => self.capture_id = u32::from_be_bytes(fixed(type_id, body)?),
            chunk::AUTH_KEY => self.auth_key = Some(body.to_vec()),
            chunk::CORRELATION_ID => self.correlation_id = Some(body.to_vec()),
            chunk::PAYLOAD => self.payload = Some(body.to_vec()),
            // Chunks the proxy does not use (MOS, VLAN, node name, ...).
            _ => {}
        }
        Ok(())
    }

    fn packet(self) -> Result<Packet, HepError> {
        let family = self.family.ok_or(HepError::Missing(chunk::IP_FAMILY))?;
        let (src, dst): (IpAddr, IpAddr) = match (family, self.src4, self.dst4, self.src6, self.dst6) {
            (AF_INET, Some(s), Some(d), _, _) => (s.into(), d.into()),
            (AF_INET6, _, _, Some(s), Some(d)) => (s.into(), d.into()),
            _ => return Err(HepError::Family(family)),
        };
        let src_port = self.src_port.ok_or(HepError::Missing(chunk::SRC_PORT))?;
        let dst_port = self.dst_port.ok_or(HepError::Missing(chunk::DST_PORT))?;
        let micros = Duration::from_micros(u64::from(self.micros));
        Ok(Packet {
            ip_protocol: self.protocol.ok_or(HepError::Missing(chunk::IP_PROTOCOL))?,
            src: SocketAddr::new(src, src_port),
            dst: SocketAddr::new(dst, dst_port),
            time: UNIX_EPOCH + Duration::from_secs(u64::from(self.secs)) + micros,
            proto_type: self.proto_type,
            capture_id: self.capture_id,
            auth_key: self.auth_key,
            correlation_id: self.correlation_id,
            payload: self.payload.ok_or(HepError::Missing(chunk::PAYLOAD))?,
        })
    }
}

/// `a` and `b` in one family: both IPv4, or both IPv6 with an IPv4 one
/// mapped (a dual-stack socket sees IPv4 peers so).
pub fn same_family(a: IpAddr, b: IpAddr) -> (IpAddr, IpAddr) {
    match (a, b) {
        (IpAddr::V4(_), IpAddr::V4(_)) | (IpAddr::V6(_), IpAddr::V6(_)) => (a, b),
        _ => (IpAddr::V6(v6(a)), IpAddr::V6(v6(b))),
    }
}

fn v6(a: IpAddr) -> Ipv6Addr {
    match a {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(src: &str, dst: &str) -> Packet {
        Packet {
            ip_protocol: IPPROTO_UDP,
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            time: UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456),
            proto_type: PROTO_SIP,
            capture_id: 2001,
            auth_key: None,
            correlation_id: Some(b"call-1@x".to_vec()),
            payload: b"OPTIONS sip:x SIP/2.0\r\n\r\n".to_vec(),
        }
    }

    /// The bytes Kamailio's siptrace writes for such a message: the
    /// header, then each chunk in its order, every field in network order.
    #[test]
    fn an_ipv4_packet_is_laid_out_as_the_specification_says() {
        let p = packet("10.0.0.1:5060", "10.0.0.2:5070");
        let b = p.emit().unwrap();
        assert_eq!(&b[..4], b"HEP3");
        assert_eq!(usize::from(u16::from_be_bytes([b[4], b[5]])), b.len());
        // IP family: vendor 0, type 1, length 7, AF_INET.
        assert_eq!(&b[6..13], &[0, 0, 0, 1, 0, 7, 2]);
        assert_eq!(&b[13..20], &[0, 0, 0, 2, 0, 7, 17]);
        assert_eq!(&b[20..30], &[0, 0, 0, 3, 0, 10, 10, 0, 0, 1]);
        assert_eq!(&b[30..40], &[0, 0, 0, 4, 0, 10, 10, 0, 0, 2]);
        assert_eq!(&b[40..48], &[0, 0, 0, 7, 0, 8, 0x13, 0xc4]);
        assert_eq!(&b[48..56], &[0, 0, 0, 8, 0, 8, 0x13, 0xce]);
        assert_eq!(&b[56..66], &[0, 0, 0, 9, 0, 10, 0x65, 0x53, 0xf1, 0x00]);
        assert_eq!(&b[66..76], &[0, 0, 0, 0x0a, 0, 10, 0, 1, 0xe2, 0x40]);
        assert_eq!(&b[76..83], &[0, 0, 0, 0x0b, 0, 7, 1]);
        assert_eq!(&b[83..93], &[0, 0, 0, 0x0c, 0, 10, 0, 0, 0x07, 0xd1]);
        assert_eq!(&b[93..99], &[0, 0, 0, 0x11, 0, 14]);
        assert_eq!(&b[99..107], b"call-1@x");
        assert_eq!(&b[107..113], &[0, 0, 0, 0x0f, 0, 6 + p.payload.len() as u8]);
        assert_eq!(&b[113..], p.payload.as_slice());
        assert_eq!(Packet::parse(&b).unwrap(), p);
    }

    #[test]
    fn ipv6_and_mixed_families_round_trip() {
        let p = Packet {
            ip_protocol: IPPROTO_TCP,
            auth_key: Some(b"secret".to_vec()),
            ..packet("[::1]:5060", "[2001:db8::7]:5080")
        };
        assert_eq!(Packet::parse(&p.emit().unwrap()).unwrap(), p);
        // An IPv4 peer of a dual-stack socket: both written as IPv6.
        let p = packet("10.0.0.1:5060", "[2001:db8::7]:5080");
        let back = Packet::parse(&p.emit().unwrap()).unwrap();
        assert_eq!(back.src, "[::ffff:10.0.0.1]:5060".parse().unwrap());
        assert_eq!(back.dst, p.dst);
    }

    /// Unknown chunks and other vendors' are skipped; order does not
    /// matter.
    #[test]
    fn unknown_chunks_are_skipped() {
        let mut b = packet("10.0.0.1:5060", "10.0.0.2:5070").emit().unwrap();
        b.extend_from_slice(&[0x00, 0x00, 0x00, 0x13, 0x00, 0x08, 0xAB, 0xCD]);
        b.extend_from_slice(&[0x00, 0x21, 0x00, 0x01, 0x00, 0x07, 0x09]);
        let len = b.len() as u16;
        b[4..6].copy_from_slice(&len.to_be_bytes());
        assert_eq!(Packet::parse(&b).unwrap(), packet("10.0.0.1:5060", "10.0.0.2:5070"));
    }

    #[test]
    fn malformed_packets_are_refused_with_their_fault() {
        let good = packet("10.0.0.1:5060", "10.0.0.2:5070").emit().unwrap();
        assert_eq!(Packet::parse(b"HEP"), Err(HepError::Short(3)));
        assert_eq!(Packet::parse(b"HEP2\x00\x06"), Err(HepError::Magic));
        assert_eq!(
            Packet::parse(&good[..good.len() - 1]),
            Err(HepError::Length { stated: good.len(), actual: good.len() - 1 })
        );
        // A chunk running past the end.
        let mut b = good.clone();
        b[6 + 5] = 200;
        assert!(matches!(Packet::parse(&b), Err(HepError::ChunkLength { type_id: 1, length: 200, offset: 6 })));
        // A chunk shorter than its header.
        b[6 + 5] = 3;
        assert!(matches!(Packet::parse(&b), Err(HepError::ChunkLength { length: 3, .. })));
        // A port chunk of three octets.
        let mut b = good.clone();
        b[40 + 5] = 9;
        b.insert(48, 0);
        let len = b.len() as u16;
        b[4..6].copy_from_slice(&len.to_be_bytes());
        assert_eq!(Packet::parse(&b), Err(HepError::ChunkSize { type_id: 7, length: 3, expected: 2 }));
        // IPv6 family with IPv4 addresses.
        let mut b = good.clone();
        b[12] = AF_INET6;
        assert_eq!(Packet::parse(&b), Err(HepError::Family(AF_INET6)));
        let huge = Packet { payload: vec![b'x'; 65_500], ..packet("10.0.0.1:5060", "10.0.0.2:5070") };
        assert!(matches!(huge.emit(), Err(HepError::TooLong(_))));
    }
}
