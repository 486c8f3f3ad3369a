//! IPv4 + TCP and IPv6 + TCP headers: parse (IPv4 with `etherparse`) and
//! emit, checksums, and the TCP options TAROC compresses (RFC 793 MSS,
//! RFC 7323 window scale and timestamps, RFC 2018 SACK and SACK-permitted).
//!
//! A [`TcpIpHeader`] keeps every header bit of the original packet except
//! those that are functions of the rest: the IPv4 total length or IPv6
//! payload length (the frame's length), and the IPv4 header checksum.
//! [`TcpIpHeader::emit`] recomputes them, so a parsed packet emits
//! byte-identical, and [`TcpIpHeader::emit_with_checksum`] also computes
//! the TCP checksum (for packets built from scratch).
//!
//! IPv6 (RFC 8200) is taken without extension headers: the TCP header must
//! follow the fixed 40-octet header (next header 6). A packet with
//! extension headers, a fragment among them, is refused with its own
//! [`ParseError`], as an IPv4 header with options is. An IPv6 header's
//! traffic class is held in [`TcpIpHeader::tos`] and its hop limit in
//! [`TcpIpHeader::ttl`] (RFC 8200 §3 gives them the IPv4 fields' roles),
//! its addresses and flow label in [`TcpIpHeader::ipv6`]; it has no IP-ID
//! nor fragment field, which stay 0.

use etherparse::{Ipv4HeaderSlice, TcpHeaderSlice};

/// Why bytes are not a compressible IPv4/TCP or IPv6/TCP packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The bytes are not an IPv4 header (`etherparse`'s reason), or, for
    /// [`fix_checksums`], not a 20-byte IPv4 header carrying TCP.
    #[error("not an IPv4 header: {0}")]
    Ipv4(String),
    /// An IPv4 header longer than 20 bytes.
    #[error("IPv4 header with options (IHL {ihl}); only 20-byte IPv4 headers are compressed")]
    Ipv4Options {
        /// The IHL field, in 32-bit words (above 5).
        ihl: u8,
    },
    /// IPv4 carrying another protocol; holds its number.
    #[error("IPv4 protocol {0} is not TCP")]
    NotTcp(u8),
    /// An IPv4 fragment: MF set or a non-zero offset.
    #[error("IPv4 fragment (MF set or offset non-zero)")]
    Fragment,
    /// The IPv4 total length is not the frame's length.
    #[error("IPv4 total length {total} disagrees with the {frame}-byte frame")]
    Length {
        /// The header's total length field.
        total: u16,
        /// The frame's length in bytes.
        frame: usize,
    },
    /// The IPv4 header checksum does not verify.
    #[error("IPv4 header checksum is wrong")]
    Ipv4Checksum,
    /// The bytes after the IP header are not a TCP header.
    #[error("not a TCP header: {0}")]
    Tcp(String),
    /// The bytes are shorter than an IPv6 header, or, for
    /// [`fix_checksums`], not a 40-byte IPv6 header carrying TCP.
    #[error("not an IPv6 header: {0}")]
    Ipv6(String),
    /// An IPv6 extension header (other than Fragment) before TCP.
    #[error("IPv6 extension header {next_header}; only TCP directly after the IPv6 header is compressed")]
    Ipv6ExtensionHeader {
        /// The extension header's type ([`is_ipv6_extension_header`]).
        next_header: u8,
    },
    /// An IPv6 Fragment header (next header 44).
    #[error("IPv6 fragment (fragment header)")]
    Ipv6Fragment,
    /// IPv6 carrying another protocol; holds its next header.
    #[error("IPv6 next header {0} is not TCP")]
    Ipv6NotTcp(u8),
    /// The IPv6 payload length is not the frame's length less 40.
    #[error("IPv6 payload length {payload} disagrees with the {frame}-byte frame")]
    Ipv6Length {
        /// The header's payload length field.
        payload: u16,
        /// The frame's length in bytes.
        frame: usize,
    },
}

/// IPv6 extension headers (RFC 8200 §4; IANA's "IPv6 Extension Header
/// Types"): Hop-by-Hop 0, Routing 43, Fragment 44, ESP 50, AH 51,
/// Destination Options 60, Mobility 135, HIP 139, Shim6 140, experiments
/// 253 and 254.
pub fn is_ipv6_extension_header(next_header: u8) -> bool {
    matches!(next_header, 0 | 43 | 44 | 50 | 51 | 60 | 135 | 139 | 140 | 253 | 254)
}

/// Why a header cannot be emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// TCP options longer than 40 bytes or not a multiple of 4; holds
    /// the length.
    #[error("TCP options of {0} bytes: at most 40, a multiple of 4")]
    OptionsLength(usize),
    /// The packet would not fit the 16-bit length field; holds its
    /// length in bytes.
    #[error("packet of {0} bytes exceeds the IPv4 total length (or IPv6 payload length) field")]
    TooLong(usize),
}

/// Raw TCP options (at most 40 bytes, a multiple of 4), kept byte for byte.
#[derive(Clone, Copy)]
pub struct RawOptions {
    /// The options in the first `len` bytes; zeros after them.
    pub bytes: [u8; 40],
    /// Their length in bytes: 0 to 40, a multiple of 4.
    pub len: u8,
}

impl RawOptions {
    /// No options.
    pub const EMPTY: RawOptions = RawOptions { bytes: [0; 40], len: 0 };

    /// The options `s`, byte for byte; fails unless `s` is at most 40
    /// bytes, a multiple of 4.
    pub fn from_slice(s: &[u8]) -> Result<RawOptions, EmitError> {
        if s.len() > 40 || !s.len().is_multiple_of(4) {
            return Err(EmitError::OptionsLength(s.len()));
        }
        let mut o = RawOptions::EMPTY;
        o.bytes[..s.len()].copy_from_slice(s);
        o.len = s.len() as u8;
        Ok(o)
    }

    /// The options' `len` bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Builds options from a list, padded with zero octets (EOL) to a
    /// multiple of 4, as stacks do.
    pub fn build(list: &[TcpOption]) -> Result<RawOptions, EmitError> {
        let mut v = Vec::with_capacity(40);
        for o in list {
            o.emit(&mut v);
        }
        while v.len() % 4 != 0 {
            v.push(0);
        }
        RawOptions::from_slice(&v)
    }

    /// The options as a list; `None` if they are malformed (a length
    /// below 2 or past the end), which TAROC then carries opaquely.
    pub fn parse(&self) -> Option<Vec<TcpOption>> {
        let mut out = Vec::new();
        let mut it = OptionWalker::new(self.as_slice());
        for item in &mut it {
            let (kind, start, len) = item;
            let body = if len >= 2 { &self.bytes[start + 2..start + len] } else { &[][..] };
            out.push(match (kind, len) {
                (0, _) => TcpOption::Eol,
                (1, _) => TcpOption::Nop,
                (2, 4) => TcpOption::Mss(u16::from_be_bytes([body[0], body[1]])),
                (3, 3) => TcpOption::WindowScale(body[0]),
                (4, 2) => TcpOption::SackPermitted,
                (5, l) if l >= 2 && (l - 2) % 8 == 0 => {
                    TcpOption::Sack(body.chunks_exact(8).map(|c| (be32(&c[..4]), be32(&c[4..]))).collect())
                }
                (8, 10) => TcpOption::Timestamp { val: be32(&body[..4]), ecr: be32(&body[4..]) },
                _ => TcpOption::Other { kind, data: body.to_vec() },
            });
        }
        if it.malformed {
            None
        } else {
            Some(out)
        }
    }
}

/// All 40 octets and the length compared, as a derived comparison would,
/// but as five 8-octet words inline: the derived one calls `memcmp`, and
/// the VSW compares every packet's option skeleton with its references'.
impl PartialEq for RawOptions {
    #[inline]
    fn eq(&self, other: &RawOptions) -> bool {
        #[inline(always)]
        fn words(b: &[u8; 40]) -> [u64; 5] {
            let w = |i: usize| {
                u64::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]])
            };
            [w(0), w(8), w(16), w(24), w(32)]
        }
        let (a, b) = (words(&self.bytes), words(&other.bytes));
        let differ = (a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4]);
        self.len == other.len && differ == 0
    }
}

impl Eq for RawOptions {}

impl std::fmt::Debug for RawOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawOptions({:02x?})", self.as_slice())
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Walks TCP options: yields (kind, offset, length) with EOL and NOP of
/// length 1; stops at the first EOL (the rest is padding) or at a malformed
/// option, setting `malformed`.
pub(crate) struct OptionWalker<'a> {
    bytes: &'a [u8],
    pos: usize,
    pub malformed: bool,
}

impl<'a> OptionWalker<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        OptionWalker { bytes, pos: 0, malformed: false }
    }
}

impl Iterator for OptionWalker<'_> {
    type Item = (u8, usize, usize);
    fn next(&mut self) -> Option<Self::Item> {
        let b = self.bytes;
        if self.pos >= b.len() {
            return None;
        }
        let (kind, start) = (b[self.pos], self.pos);
        match kind {
            0 => {
                self.pos = b.len();
                Some((0, start, 1))
            }
            1 => {
                self.pos += 1;
                Some((1, start, 1))
            }
            _ => {
                let len = b.get(start + 1).copied().unwrap_or(0) as usize;
                if len < 2 || start + len > b.len() {
                    self.malformed = true;
                    self.pos = b.len();
                    return None;
                }
                self.pos += len;
                Some((kind, start, len))
            }
        }
    }
}

/// One TCP option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpOption {
    /// End of option list (kind 0); what follows is padding.
    Eol,
    /// No-operation (kind 1).
    Nop,
    /// Maximum segment size (kind 2, RFC 793).
    Mss(u16),
    /// Window scale shift (kind 3, RFC 7323).
    WindowScale(u8),
    /// SACK permitted (kind 4, RFC 2018).
    SackPermitted,
    /// SACK blocks (kind 5, RFC 2018): (left edge, right edge).
    Sack(Vec<(u32, u32)>),
    /// Timestamps (kind 8, RFC 7323).
    Timestamp {
        /// TSval: the sender's timestamp clock.
        val: u32,
        /// TSecr: the TSval echoed back.
        ecr: u32,
    },
    /// Any other option, kept verbatim.
    Other {
        /// The option's kind.
        kind: u8,
        /// Its bytes after the kind and length octets.
        data: Vec<u8>,
    },
}

impl TcpOption {
    /// Appends the option's bytes (kind, length, value) to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        match self {
            TcpOption::Eol => out.push(0),
            TcpOption::Nop => out.push(1),
            TcpOption::Mss(m) => out.extend_from_slice(&[2, 4, (m >> 8) as u8, *m as u8]),
            TcpOption::WindowScale(s) => out.extend_from_slice(&[3, 3, *s]),
            TcpOption::SackPermitted => out.extend_from_slice(&[4, 2]),
            TcpOption::Sack(blocks) => {
                out.extend_from_slice(&[5, 2 + 8 * blocks.len() as u8]);
                for (l, r) in blocks {
                    out.extend_from_slice(&l.to_be_bytes());
                    out.extend_from_slice(&r.to_be_bytes());
                }
            }
            TcpOption::Timestamp { val, ecr } => {
                out.extend_from_slice(&[8, 10]);
                out.extend_from_slice(&val.to_be_bytes());
                out.extend_from_slice(&ecr.to_be_bytes());
            }
            TcpOption::Other { kind, data } => {
                out.extend_from_slice(&[*kind, 2 + data.len() as u8]);
                out.extend_from_slice(data);
            }
        }
    }
}

/// What an IPv6 header (RFC 8200 §3) holds that an IPv4 one does not: the
/// 128-bit addresses and the flow label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ipv6Part {
    /// The source address.
    pub src: [u8; 16],
    /// The destination address.
    pub dst: [u8; 16],
    /// 20 bits.
    pub flow_label: u32,
}

/// Every field of an IPv4 header without options, or an IPv6 header
/// without extension headers, and a TCP header with options, except the
/// IPv4 total length and header checksum or the IPv6 payload length
/// (derived).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpIpHeader {
    /// DSCP and ECN: IPv4's second octet, IPv6's traffic class.
    pub tos: u8,
    /// IPv4 only (0 for IPv6).
    pub ip_id: u16,
    /// Reserved bit, DF, MF and fragment offset (IPv4 octets 6–7; 0 for
    /// IPv6).
    pub flags_frag: u16,
    /// IPv4 TTL or IPv6 hop limit.
    pub ttl: u8,
    /// IPv4 addresses (zero for IPv6).
    pub src: [u8; 4],
    /// IPv4 destination address (zero for IPv6).
    pub dst: [u8; 4],
    /// `Some` for an IPv6 header: its addresses and flow label.
    pub ipv6: Option<Ipv6Part>,
    /// TCP source port.
    pub src_port: u16,
    /// TCP destination port.
    pub dst_port: u16,
    /// TCP sequence number.
    pub seq: u32,
    /// TCP acknowledgment number (meaningful with ACK set).
    pub ack: u32,
    /// The low nibble of TCP octet 12: three reserved bits and NS.
    pub tcp_res: u8,
    /// TCP octet 13: CWR ECE URG ACK PSH RST SYN FIN.
    pub tcp_flags: u8,
    /// TCP receive window, unscaled.
    pub window: u16,
    /// TCP checksum, as held (computed by
    /// [`TcpIpHeader::emit_with_checksum`]).
    pub checksum: u16,
    /// TCP urgent pointer.
    pub urgent: u16,
    /// TCP options, byte for byte.
    pub options: RawOptions,
}

/// TCP flag FIN: no more data from the sender.
pub const FLAG_FIN: u8 = 0x01;
/// TCP flag SYN: synchronize sequence numbers.
pub const FLAG_SYN: u8 = 0x02;
/// TCP flag RST: reset the connection.
pub const FLAG_RST: u8 = 0x04;
/// TCP flag PSH: push the data to the application.
pub const FLAG_PSH: u8 = 0x08;
/// TCP flag ACK: the acknowledgment number is valid.
pub const FLAG_ACK: u8 = 0x10;
/// TCP flag URG: the urgent pointer is valid.
pub const FLAG_URG: u8 = 0x20;
/// TCP flag ECE: ECN-Echo (RFC 3168).
pub const FLAG_ECE: u8 = 0x40;
/// TCP flag CWR: congestion window reduced (RFC 3168).
pub const FLAG_CWR: u8 = 0x80;

/// IPv4 DF bit within [`TcpIpHeader::flags_frag`].
pub const IP_DF: u16 = 0x4000;

impl TcpIpHeader {
    /// A header with zeroed dynamic fields, for building flows.
    pub fn new(src: [u8; 4], src_port: u16, dst: [u8; 4], dst_port: u16) -> TcpIpHeader {
        TcpIpHeader {
            tos: 0,
            ip_id: 0,
            flags_frag: IP_DF,
            ttl: 64,
            src,
            dst,
            ipv6: None,
            src_port,
            dst_port,
            seq: 0,
            ack: 0,
            tcp_res: 0,
            tcp_flags: FLAG_ACK,
            window: 65535,
            checksum: 0,
            urgent: 0,
            options: RawOptions::EMPTY,
        }
    }

    /// An IPv6 header (traffic class 0, hop limit 64) with zeroed dynamic
    /// fields, for building flows.
    pub fn new_v6(src: [u8; 16], src_port: u16, dst: [u8; 16], dst_port: u16, flow_label: u32) -> TcpIpHeader {
        let mut h = TcpIpHeader::new([0; 4], src_port, [0; 4], dst_port);
        h.flags_frag = 0;
        h.ipv6 = Some(Ipv6Part { src, dst, flow_label: flow_label & 0xf_ffff });
        h
    }

    /// Whether this is an IPv6 header.
    pub fn is_ipv6(&self) -> bool {
        self.ipv6.is_some()
    }

    /// The IP header's length: 20 (IPv4 without options) or 40 (IPv6).
    pub fn ip_len(&self) -> usize {
        if self.ipv6.is_some() {
            40
        } else {
            20
        }
    }

    /// TCP header length in bytes (20 + options).
    pub fn tcp_len(&self) -> usize {
        20 + self.options.len as usize
    }

    /// Total header length (IP + TCP).
    pub fn len(&self) -> usize {
        self.ip_len() + self.tcp_len()
    }

    /// Never: a header has at least the IP and TCP fixed parts.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Emits the headers for a payload of `payload_len` bytes with the
    /// total length (IPv6: payload length) and IPv4 checksum computed and
    /// the TCP checksum as held.
    pub fn emit(&self, payload_len: usize, out: &mut Vec<u8>) -> Result<(), EmitError> {
        // The header goes out as 64- and 32-bit words made of the fields,
        // and the IPv4 checksum is summed from the same words: octets
        // written one by one and read back at once (to sum or to copy)
        // would stall on store forwarding.
        let tcp_len = self.tcp_len();
        let start = out.len();
        out.reserve(100);
        if let Some(v6) = &self.ipv6 {
            // RFC 8200 §3: the payload length counts what follows the
            // 40-octet header (no jumbograms: they need a Hop-by-Hop option).
            let payload = tcp_len + payload_len;
            if payload > 65535 {
                return Err(EmitError::TooLong(40 + payload));
            }
            let first = 6 << 28 | (self.tos as u32) << 20 | (v6.flow_label & 0xf_ffff);
            let w0 = (first as u64) << 32 | (payload as u64) << 16 | 6 << 8 | self.ttl as u64;
            out.extend_from_slice(&w0.to_be_bytes());
            out.extend_from_slice(&v6.src);
            out.extend_from_slice(&v6.dst);
        } else {
            let total = 20 + tcp_len + payload_len;
            if total > 65535 {
                return Err(EmitError::TooLong(total));
            }
            let w0 = 0x45 << 24 | (self.tos as u32) << 16 | total as u32;
            let w1 = (self.ip_id as u32) << 16 | self.flags_frag as u32;
            let w2 = (self.ttl as u32) << 24 | 6 << 16;
            let (src, dst) = (u32::from_be_bytes(self.src), u32::from_be_bytes(self.dst));
            // ipv4_checksum's five words, the checksum's half zero.
            let c = !fold(w0 as u64 + w1 as u64 + w2 as u64 + src as u64 + dst as u64);
            out.extend_from_slice(&((w0 as u64) << 32 | w1 as u64).to_be_bytes());
            out.extend_from_slice(&(((w2 | c as u32) as u64) << 32 | src as u64).to_be_bytes());
            out.extend_from_slice(&self.dst);
        }
        let doff = (tcp_len / 4) as u64;
        let t0 = (self.src_port as u64) << 48 | (self.dst_port as u64) << 32 | self.seq as u64;
        let t1 = (self.ack as u64) << 32
            | ((doff << 4) | (self.tcp_res & 0x0f) as u64) << 24
            | (self.tcp_flags as u64) << 16
            | self.window as u64;
        let t2 = (self.checksum as u32) << 16 | self.urgent as u32;
        out.extend_from_slice(&t0.to_be_bytes());
        out.extend_from_slice(&t1.to_be_bytes());
        out.extend_from_slice(&t2.to_be_bytes());
        // All 40 option octets as one fixed-size copy, then cut to the
        // header's length: cheaper than a copy of variable length.
        out.extend_from_slice(&self.options.bytes);
        out.truncate(start + self.ip_len() + tcp_len);
        debug_assert!(
            self.ipv6.is_some()
                || ipv4_checksum(&out[start..start + 20]) == u16::from_be_bytes([out[start + 10], out[start + 11]])
        );
        Ok(())
    }

    /// Emits headers and payload with the TCP checksum computed (stored
    /// back into `self.checksum`).
    pub fn emit_with_checksum(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), EmitError> {
        let start = out.len();
        self.checksum = 0;
        self.emit(payload.len(), out)?;
        out.extend_from_slice(payload);
        self.checksum = tcp_checksum(&out[start..]);
        let at = start + self.ip_len() + 16;
        out[at..at + 2].copy_from_slice(&self.checksum.to_be_bytes());
        Ok(())
    }
}

/// A parsed packet: its headers and its payload.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// The IP and TCP headers.
    pub header: TcpIpHeader,
    /// The TCP payload: the rest of the frame.
    pub payload: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Parses an IPv4 or IPv6 packet carrying TCP. The IPv4 header must
    /// have no options, must not be a fragment, must have a correct
    /// checksum and a total length equal to the frame's length (TAROC
    /// infers both); the IPv6 header must be followed by TCP directly and
    /// have a payload length equal to the frame's length less 40.
    #[inline]
    pub fn parse(frame: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        if frame.first().is_some_and(|b| b >> 4 == 6) {
            return Packet::parse_v6(frame);
        }
        // The common case read directly: a 20-octet IPv4 header carrying
        // TCP, not a fragment, of the frame's length and a right checksum.
        // Anything else takes the checks below, which name what is wrong.
        if frame.len() >= 20
            && frame[0] == 0x45
            && frame[9] == 6
            && u16::from_be_bytes([frame[6], frame[7]]) & 0x3fff == 0
            && u16::from_be_bytes([frame[2], frame[3]]) as usize == frame.len()
            && ipv4_checksum(&frame[..20]) == u16::from_be_bytes([frame[10], frame[11]])
        {
            if let Some((tcp, payload)) = Packet::tcp_direct(frame, 20) {
                return Ok(Packet { header: with_ipv4_fields(frame, tcp), payload });
            }
        }
        Packet::parse_v4_checked(frame)
    }

    /// The IPv4 packets [`Packet::parse`] does not read directly: each
    /// check in turn, naming what is wrong. Kept out of line so that the
    /// direct reading inlines into its callers.
    #[inline(never)]
    fn parse_v4_checked(frame: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        let ip = Ipv4HeaderSlice::from_slice(frame).map_err(|e| ParseError::Ipv4(e.to_string()))?;
        if ip.ihl() != 5 {
            return Err(ParseError::Ipv4Options { ihl: ip.ihl() });
        }
        if ip.protocol().0 != 6 {
            return Err(ParseError::NotTcp(ip.protocol().0));
        }
        if ip.more_fragments() || ip.fragments_offset().value() != 0 {
            return Err(ParseError::Fragment);
        }
        if ip.total_len() as usize != frame.len() {
            return Err(ParseError::Length { total: ip.total_len(), frame: frame.len() });
        }
        if ipv4_checksum(&frame[..20]) != ip.header_checksum() {
            return Err(ParseError::Ipv4Checksum);
        }
        let (tcp, payload) = Packet::parse_tcp(frame, 20)?;
        Ok(Packet { header: with_ipv4_fields(frame, tcp), payload })
    }

    fn parse_v6(frame: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        let Some(ip) = frame.get(..40) else {
            return Err(ParseError::Ipv6(format!("{} bytes, shorter than the 40-byte header", frame.len())));
        };
        let first = u32::from_be_bytes([ip[0], ip[1], ip[2], ip[3]]);
        let payload = u16::from_be_bytes([ip[4], ip[5]]);
        match ip[6] {
            6 => {}
            44 => return Err(ParseError::Ipv6Fragment),
            nh if is_ipv6_extension_header(nh) => return Err(ParseError::Ipv6ExtensionHeader { next_header: nh }),
            nh => return Err(ParseError::Ipv6NotTcp(nh)),
        }
        if payload as usize + 40 != frame.len() {
            return Err(ParseError::Ipv6Length { payload, frame: frame.len() });
        }
        let (tcp, payload) = match Packet::tcp_direct(frame, 40) {
            Some(tcp) => tcp,
            None => Packet::parse_tcp(frame, 40)?,
        };
        let mut src = [0u8; 16];
        let mut dst = [0u8; 16];
        src.copy_from_slice(&ip[8..24]);
        dst.copy_from_slice(&ip[24..40]);
        let header = TcpIpHeader {
            tos: (first >> 20) as u8,
            ttl: ip[7],
            ipv6: Some(Ipv6Part { src, dst, flow_label: first & 0xf_ffff }),
            ..tcp
        };
        Ok(Packet { header, payload })
    }

    /// [`Packet::parse_tcp`] for a well-formed TCP header (at least 20
    /// octets, a data offset of 5 or more, within the frame), read
    /// directly; `None` otherwise.
    #[inline]
    fn tcp_direct(frame: &'a [u8], ip_len: usize) -> Option<(TcpIpHeader, &'a [u8])> {
        let t = frame.get(ip_len..)?;
        let hl = ((*t.get(12)? >> 4) as usize) * 4;
        if hl < 20 || t.len() < hl {
            return None;
        }
        let be16 = |i: usize| u16::from_be_bytes([t[i], t[i + 1]]);
        let be32 = |i: usize| u32::from_be_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
        let mut options = RawOptions::EMPTY;
        // 4-octet words (the data offset counts words), where a copy of
        // variable length would call `memcpy`.
        for (to, from) in options.bytes.chunks_exact_mut(4).zip(t[20..hl].chunks_exact(4)) {
            to.copy_from_slice(from);
        }
        options.len = (hl - 20) as u8;
        let header = TcpIpHeader {
            tos: 0,
            ip_id: 0,
            flags_frag: 0,
            ttl: 0,
            src: [0; 4],
            dst: [0; 4],
            ipv6: None,
            src_port: be16(0),
            dst_port: be16(2),
            seq: be32(4),
            ack: be32(8),
            tcp_res: t[12] & 0x0f,
            tcp_flags: t[13],
            window: be16(14),
            checksum: be16(16),
            urgent: be16(18),
            options,
        };
        Some((header, &t[hl..]))
    }

    /// The TCP header after `ip_len` bytes of IP header, in a header whose
    /// IP fields are zero (IPv4 without addresses), and the payload after it.
    fn parse_tcp(frame: &'a [u8], ip_len: usize) -> Result<(TcpIpHeader, &'a [u8]), ParseError> {
        // etherparse names what is wrong with a TCP header; one it accepts
        // is well formed, and is read as every other is.
        TcpHeaderSlice::from_slice(&frame[ip_len..]).map_err(|e| ParseError::Tcp(e.to_string()))?;
        Packet::tcp_direct(frame, ip_len).ok_or_else(|| ParseError::Tcp("TCP header outside the frame".to_string()))
    }
}

/// Folds a 32-bit-word ones' complement accumulator to 16 bits.
pub(crate) fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// `tcp` with the IP fields of `frame`'s 20-octet IPv4 header.
#[inline]
fn with_ipv4_fields(frame: &[u8], tcp: TcpIpHeader) -> TcpIpHeader {
    TcpIpHeader {
        tos: frame[1],
        ip_id: u16::from_be_bytes([frame[4], frame[5]]),
        flags_frag: u16::from_be_bytes([frame[6], frame[7]]),
        ttl: frame[8],
        src: [frame[12], frame[13], frame[14], frame[15]],
        dst: [frame[16], frame[17], frame[18], frame[19]],
        ..tcp
    }
}

/// Ones' complement sum of `data` (RFC 1071) added to the accumulator
/// `acc` of big-endian words. RFC 1071 §2 (B): the sum does not depend on
/// the byte order, so the octets are summed as little-endian 64-bit loads
/// (no byte swaps), and the folded 16-bit sum is swapped to big-endian at
/// the end; RFC 1071 §2 (C): 2^64 ≡ 1 modulo 2^16 − 1, so 64-bit words
/// summed in a 128-bit accumulator (an add and an add-with-carry each)
/// and folded give the sum of their 16-bit words. A trailing odd octet is
/// padded with zero, as RFC 1071 §4.1 pads.
pub(crate) fn sum_words(data: &[u8], acc: u64) -> u64 {
    #[inline(always)]
    fn le64(c: &[u8]) -> u64 {
        u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
    }
    // Two accumulators: each 128-bit add is an add and an add-with-carry
    // that wait for the previous one's carry, so two chains of them run
    // side by side. Their sum is the same integer as one chain's.
    let (mut even, mut odd) = (0u128, 0u128);
    let mut quads = data.chunks_exact(32);
    for c in &mut quads {
        even += le64(&c[..8]) as u128;
        odd += le64(&c[8..16]) as u128;
        even += le64(&c[16..24]) as u128;
        odd += le64(&c[24..32]) as u128;
    }
    let mut sum = even + odd;
    let mut wide = quads.remainder().chunks_exact(8);
    for c in &mut wide {
        sum += le64(c) as u128;
    }
    // The last 0 to 7 octets, little-endian, zero-padded: octet by octet,
    // where a copy of variable length would call `memcpy`.
    let tail = wide.remainder().iter().rev().fold(0u64, |t, &b| t << 8 | b as u64);
    sum += tail as u128;
    // Fold 128 to 64 bits (the high part is a small count of carries).
    let (lo, carry) = (sum as u64).overflowing_add((sum >> 64) as u64);
    let s = lo + carry as u64;
    acc + fold((s >> 32) + (s & 0xffff_ffff)).swap_bytes() as u64
}

/// The IPv4 header checksum of a 20-byte header (its checksum field is
/// skipped).
pub fn ipv4_checksum(h: &[u8]) -> u16 {
    // Five big-endian 32-bit words, the checksum's half of the third
    // masked: 2^16 = 1 modulo 2^16 - 1, so their sum folds to the sum of
    // the 16-bit words (and is zero only if they all are).
    let h = &h[..20];
    let w = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]) as u64;
    !fold(w(0) + w(4) + (w(8) & 0xffff_0000) + w(12) + w(16))
}

/// The IP header's length of a packet whose IP header is IPv4 without
/// options (20) or IPv6 without extension headers (40), by its version.
fn ip_header_len(packet: &[u8]) -> usize {
    if packet.first().is_some_and(|b| b >> 4 == 6) {
        40
    } else {
        20
    }
}

/// The ones' complement sum over the TCP pseudo-header and segment of an
/// IPv4 packet with a 20-byte IP header (RFC 793 §3.1) or an IPv6 packet
/// without extension headers (RFC 8200 §8.1: both addresses, the 32-bit
/// upper-layer length and the next header 6), with the checksum field
/// included.
fn tcp_sum(packet: &[u8]) -> u16 {
    let ip_len = ip_header_len(packet);
    let seg = &packet[ip_len..];
    // Both pseudo-headers sum the addresses, the protocol and the length;
    // IPv6's 32-bit length and 24 zero bits sum the same as IPv4's 16-bit one.
    let addrs = if ip_len == 40 { &packet[8..40] } else { &packet[12..20] };
    let mut acc = sum_words(addrs, 0);
    acc += 6 + seg.len() as u64;
    fold(sum_words(seg, acc))
}

/// The TCP checksum a sender would put in the packet (RFC 793 §3.1;
/// RFC 8200 §8.1 for IPv6).
pub fn tcp_checksum(packet: &[u8]) -> u16 {
    let at = ip_header_len(packet) + 16;
    let field = u16::from_be_bytes([packet[at], packet[at + 1]]) as u64;
    // Remove the field's contribution: sum + ~field == sum - field in ones'
    // complement.
    !fold(tcp_sum(packet) as u64 + (!field & 0xffff))
}

/// Whether a packet's IPv4 header checksum and TCP checksum are both right
/// (the check every decompressor here applies before emitting); for IPv6,
/// its TCP checksum (over the RFC 8200 §8.1 pseudo-header) and payload
/// length.
pub fn checksums_ok(packet: &[u8]) -> bool {
    if packet.first().is_some_and(|b| b >> 4 == 6) {
        return packet.len() >= 60
            && packet[6] == 6
            && u16::from_be_bytes([packet[4], packet[5]]) as usize + 40 == packet.len()
            && tcp_sum(packet) == 0xffff;
    }
    if packet.len() < 40 || packet[0] != 0x45 || packet[9] != 6 {
        return false;
    }
    let ip_ok = ipv4_checksum(&packet[..20]) == u16::from_be_bytes([packet[10], packet[11]]);
    let tcp_ok = tcp_sum(packet) == 0xffff;
    ip_ok && tcp_ok && u16::from_be_bytes([packet[2], packet[3]]) as usize == packet.len()
}

/// [`checksums_ok`] for a packet whose IP header [`TcpIpHeader::emit`]
/// wrote: that header's version, protocol, length fields and IPv4 header
/// checksum are right by construction, so only the TCP checksum is left
/// to verify.
pub(crate) fn emitted_checksums_ok(packet: &[u8]) -> bool {
    debug_assert_eq!(checksums_ok(packet), packet.len() >= ip_header_len(packet) + 20 && tcp_sum(packet) == 0xffff);
    tcp_sum(packet) == 0xffff
}

/// Rewrites the IPv4 and TCP checksums of an IPv4/TCP packet, or the TCP
/// checksum of an IPv6/TCP packet without extension headers, in place
/// (captures taken with checksum offload carry wrong TCP checksums, which
/// TAROC's verification would reject).
pub fn fix_checksums(packet: &mut [u8]) -> Result<(), ParseError> {
    if packet.first().is_some_and(|b| b >> 4 == 6) {
        if packet.len() < 60 || packet[6] != 6 {
            return Err(ParseError::Ipv6("not a 40-byte IPv6 header carrying TCP".into()));
        }
        let t = tcp_checksum(packet);
        packet[56..58].copy_from_slice(&t.to_be_bytes());
        return Ok(());
    }
    if packet.len() < 40 || packet[0] != 0x45 || packet[9] != 6 {
        return Err(ParseError::Ipv4("not a 20-byte IPv4 header carrying TCP".into()));
    }
    let c = ipv4_checksum(&packet[..20]);
    packet[10..12].copy_from_slice(&c.to_be_bytes());
    let t = tcp_checksum(packet);
    packet[36..38].copy_from_slice(&t.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut h = TcpIpHeader::new([10, 0, 0, 1], 5060, [10, 0, 0, 2], 40000);
        h.seq = 0x01020304;
        h.ack = 0xa0b0c0d0;
        h.ip_id = 7;
        h.tcp_flags = FLAG_ACK | FLAG_PSH;
        h.options = RawOptions::build(&[
            TcpOption::Nop,
            TcpOption::Nop,
            TcpOption::Timestamp { val: 1000, ecr: 999 },
            TcpOption::Sack(vec![(5, 9)]),
        ])
        .unwrap();
        let mut out = Vec::new();
        h.emit_with_checksum(b"INVITE sip:bob@example.com SIP/2.0\r\n", &mut out).unwrap();
        out
    }

    #[test]
    fn parse_emit_round_trip_keeps_every_byte() {
        let bytes = sample();
        assert!(checksums_ok(&bytes));
        let p = Packet::parse(&bytes).unwrap();
        let mut out = Vec::new();
        p.header.emit(p.payload.len(), &mut out).unwrap();
        out.extend_from_slice(p.payload);
        assert_eq!(out, bytes);
        assert_eq!(
            p.header.options.parse().unwrap()[2..],
            [TcpOption::Timestamp { val: 1000, ecr: 999 }, TcpOption::Sack(vec![(5, 9)]), TcpOption::Eol]
        );
    }

    #[test]
    fn raw_options_are_equal_only_in_every_octet_and_the_length() {
        let a = RawOptions::from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]).unwrap();
        assert_eq!(a, a);
        for i in 0..40 {
            let mut b = a;
            b.bytes[i] ^= 0x80;
            assert_ne!(a, b, "octet {i}");
        }
        assert_ne!(a, RawOptions { len: 8, ..a });
        assert_ne!(RawOptions::EMPTY, RawOptions { len: 4, ..RawOptions::EMPTY });
    }

    #[test]
    fn checksums_agree_with_etherparse() {
        let bytes = sample();
        let ip = etherparse::Ipv4HeaderSlice::from_slice(&bytes).unwrap();
        let tcp = etherparse::TcpHeaderSlice::from_slice(&bytes[20..]).unwrap();
        let payload = &bytes[20 + tcp.slice().len()..];
        assert_eq!(tcp.calc_checksum_ipv4(&ip, payload).unwrap(), tcp_checksum(&bytes));
        assert_eq!(ip.to_header().calc_header_checksum(), ipv4_checksum(&bytes));
    }

    #[test]
    fn the_sum_of_little_endian_loads_is_the_rfc_1071_sum() {
        // The definition: big-endian 16-bit words, an odd octet padded.
        let by_words = |d: &[u8]| {
            let mut acc = 0u64;
            for w in d.chunks(2) {
                acc += u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u64;
            }
            fold(acc)
        };
        let data: Vec<u8> = (0..1500u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        for len in (0..40).chain([1459, 1460, 1461, 1500]) {
            assert_eq!(fold(sum_words(&data[..len], 0)), by_words(&data[..len]), "{len} octets");
            assert_eq!(fold(sum_words(&data[..len], 0x1_2345)), fold(by_words(&data[..len]) as u64 + 0x1_2345));
        }
        assert_eq!(fold(sum_words(&[0xff; 64], 0)), 0xffff);
    }

    #[test]
    fn a_flipped_bit_fails_the_checksums() {
        let bytes = sample();
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(!checksums_ok(&b), "bit {bit}");
        }
    }

    fn sample_v6() -> Vec<u8> {
        let src = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 1];
        let dst = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 0xff, 2];
        let mut h = TcpIpHeader::new_v6(src, 5060, dst, 40000, 0xabcde);
        h.tos = 0xb9;
        h.ttl = 3;
        h.seq = 0xfffffff0;
        h.tcp_flags = FLAG_ACK | FLAG_PSH;
        h.options =
            RawOptions::build(&[TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val: 1, ecr: 2 }]).unwrap();
        let mut out = Vec::new();
        h.emit_with_checksum(b"REGISTER sip:example.com SIP/2.0\r\n", &mut out).unwrap();
        out
    }

    #[test]
    fn ipv6_parse_emit_round_trip_and_rfc_8200_checksum() {
        let bytes = sample_v6();
        assert_eq!(&bytes[..4], &[0x6b, 0x9a, 0xbc, 0xde]);
        assert!(checksums_ok(&bytes));
        let p = Packet::parse(&bytes).unwrap();
        assert_eq!((p.header.tos, p.header.ttl, p.header.ipv6.unwrap().flow_label), (0xb9, 3, 0xabcde));
        assert_eq!(p.header.len(), 72);
        let mut out = Vec::new();
        p.header.emit(p.payload.len(), &mut out).unwrap();
        out.extend_from_slice(p.payload);
        assert_eq!(out, bytes);
        let ip = etherparse::Ipv6HeaderSlice::from_slice(&bytes).unwrap();
        let tcp = etherparse::TcpHeaderSlice::from_slice(&bytes[40..]).unwrap();
        let payload = &bytes[40 + tcp.slice().len()..];
        assert_eq!(tcp.to_header().calc_checksum_ipv6(&ip.to_header(), payload).unwrap(), tcp_checksum(&bytes));
        for bit in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            // Traffic class, flow label and hop limit are not in the
            // pseudo-header (RFC 8200 §8.1): TAROC's CRCs cover those. Bit
            // b flips `1 << (b % 8)` of octet b / 8: the version is 4..8.
            if (0..4).contains(&bit) || (8..32).contains(&bit) || (56..64).contains(&bit) {
                continue;
            }
            assert!(!checksums_ok(&b), "bit {bit}");
        }
        let mut b = bytes.clone();
        b[57] ^= 0x33;
        fix_checksums(&mut b).unwrap();
        assert_eq!(b, bytes);
    }

    #[test]
    fn rejects_what_taroc_does_not_compress() {
        let mut b = sample();
        b[9] = 17;
        fix_checksums(&mut b).unwrap_err();
        b[9] = 6;
        b[6] |= 0x20; // MF
        let c = ipv4_checksum(&b);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(Packet::parse(&b).unwrap_err(), ParseError::Fragment);
        let mut b = sample();
        b[8] ^= 1; // TTL without fixing the checksum
        assert_eq!(Packet::parse(&b).unwrap_err(), ParseError::Ipv4Checksum);
        let b = sample();
        assert!(matches!(Packet::parse(&b[..b.len() - 1]), Err(ParseError::Length { .. }) | Err(ParseError::Ipv4(_))));
    }
}
