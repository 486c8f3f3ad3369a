//! Synthesised TCP/IPv4 or TCP/IPv6 flows with correct checksums, for tests, benches
//! and fuzz seeds: a bulk transfer whose congestion window grows (slow
//! start, then congestion avoidance) with losses upstream of the link,
//! duplicate ACKs with SACK and retransmissions; and SIP dialogs over one
//! TCP connection. Packets are tagged with their direction, since each
//! direction of a link has its own compressor.

use std::collections::BTreeSet;

use crate::packet::{RawOptions, TcpIpHeader, TcpOption, FLAG_ACK, FLAG_FIN, FLAG_PSH, FLAG_SYN, IP_DF};

/// Which way a packet crosses the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// From the connection's initiator (client).
    Forward,
    /// From the responder (server).
    Backward,
}

/// How a host numbers its IP-IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpIdStyle {
    /// One more per packet (a per-connection counter).
    Sequential,
    /// Always zero (DF set).
    Zero,
    /// Pseudo-random.
    Random,
}

/// What the synthesised packets carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowOptions {
    /// RFC 7323 timestamps on every segment.
    pub timestamps: bool,
    /// SACK-permitted on the SYNs and SACK blocks on duplicate ACKs.
    pub sack: bool,
    /// IPv4 only (IPv6 has no IP-ID).
    pub ip_id: IpIdStyle,
    /// Seed of the initial sequence numbers, IP-IDs, flow labels and
    /// payload bytes: the same options give the same packets.
    pub seed: u64,
    /// IPv6 (2001:db8::10 and 2001:db8:20::40, a flow label per direction)
    /// rather than IPv4 (192.168.1.10 and 10.20.30.40).
    pub ipv6: bool,
}

impl Default for FlowOptions {
    fn default() -> Self {
        FlowOptions { timestamps: true, sack: true, ip_id: IpIdStyle::Sequential, seed: 1, ipv6: false }
    }
}

/// The synthesised IPv6 client's address (RFC 3849 documentation prefix).
pub const CLIENT_V6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10];
/// The server's IPv6 address, beside [`CLIENT_V6`].
pub const SERVER_V6: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40];

struct Host {
    h: TcpIpHeader,
    /// Next sequence number to send.
    snd_nxt: u32,
    /// Next sequence number expected.
    rcv_nxt: u32,
    /// TS.Recent: the TSval we echo (our TSecr).
    ts_recent: u32,
    /// The ACK number of the last segment we sent (RFC 7323's
    /// Last.ACK.sent).
    last_ack_sent: u32,
}

/// Builds a flow packet by packet.
pub struct FlowBuilder {
    hosts: [Host; 2],
    opts: FlowOptions,
    rng: u64,
    /// Milliseconds: the timestamp clock.
    pub clock_ms: u32,
    /// The packets built so far, each with its direction, in order.
    pub packets: Vec<(Dir, Vec<u8>)>,
}

impl FlowBuilder {
    /// A flow between the client (Forward sender) and the server, no
    /// packets yet, the clock at 1,000,000 ms.
    pub fn new(opts: FlowOptions, client_port: u16, server_port: u16) -> FlowBuilder {
        let mut rng = opts.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut host = |addr: [u8; 4], port: u16, peer: [u8; 4], peer_port: u16, v6: ([u8; 16], [u8; 16])| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let isn = rng as u32;
            let h = if opts.ipv6 {
                // RFC 6437: a flow label per flow, from the 5-tuple's hash.
                TcpIpHeader::new_v6(v6.0, port, v6.1, peer_port, (rng >> 40) as u32 & 0xf_ffff)
            } else {
                let mut h = TcpIpHeader::new(addr, port, peer, peer_port);
                h.ip_id = (rng >> 32) as u16;
                h.flags_frag = IP_DF;
                h
            };
            Host { h, snd_nxt: isn, rcv_nxt: 0, ts_recent: 0, last_ack_sent: 0 }
        };
        let a = host([192, 168, 1, 10], client_port, [10, 20, 30, 40], server_port, (CLIENT_V6, SERVER_V6));
        let b = host([10, 20, 30, 40], server_port, [192, 168, 1, 10], client_port, (SERVER_V6, CLIENT_V6));
        FlowBuilder { hosts: [a, b], opts, rng, clock_ms: 1_000_000, packets: Vec::new() }
    }

    fn random(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Sends one segment from `dir` with `payload` and extra options; the
    /// peer's receive state follows in-order data. Returns its sequence
    /// number.
    pub fn send(&mut self, dir: Dir, flags: u8, payload: &[u8], extra: &[TcpOption]) -> u32 {
        let seq = self.hosts[dir as usize].snd_nxt;
        self.send_at(dir, seq, flags, payload, extra);
        seq
    }

    /// Sends a segment at an explicit sequence number (a retransmission).
    pub fn send_at(&mut self, dir: Dir, seq: u32, flags: u8, payload: &[u8], extra: &[TcpOption]) {
        let (me, peer) = (dir as usize, 1 - dir as usize);
        let id = match self.opts.ip_id {
            _ if self.opts.ipv6 => 0,
            IpIdStyle::Sequential => self.hosts[me].h.ip_id.wrapping_add(1),
            IpIdStyle::Zero => 0,
            IpIdStyle::Random => self.random() as u16,
        };
        let ts = (self.clock_ms, self.hosts[me].ts_recent);
        let host = &mut self.hosts[me];
        host.h.ip_id = id;
        let mut list = Vec::new();
        if flags & FLAG_SYN != 0 {
            list.push(TcpOption::Mss(if self.opts.ipv6 { 1440 } else { 1460 }));
            if self.opts.sack {
                list.push(TcpOption::SackPermitted);
            }
        }
        if self.opts.timestamps {
            list.extend([TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val: ts.0, ecr: ts.1 }]);
        }
        if flags & FLAG_SYN != 0 {
            list.extend([TcpOption::Nop, TcpOption::WindowScale(7)]);
        }
        for o in extra {
            if matches!(o, TcpOption::Sack(_)) {
                list.extend([TcpOption::Nop, TcpOption::Nop]);
            }
            list.push(o.clone());
        }
        let mut h = host.h;
        h.seq = seq;
        h.ack = if flags & FLAG_ACK != 0 { host.rcv_nxt } else { 0 };
        host.last_ack_sent = host.rcv_nxt;
        h.tcp_flags = flags;
        h.window = if flags & FLAG_SYN != 0 { 65535 } else { 502 };
        h.options = RawOptions::build(&list).expect("synthesised options fit");
        let mut bytes = Vec::with_capacity(h.len() + payload.len());
        h.emit_with_checksum(payload, &mut bytes).expect("synthesised packet fits");
        self.packets.push((dir, bytes));
        let len = payload.len() as u32 + (flags & (FLAG_SYN | FLAG_FIN) != 0) as u32;
        let end = seq.wrapping_add(len);
        if crate::wlsb::diff32(end, host.snd_nxt) > 0 {
            host.snd_nxt = end;
        }
        let peer = &mut self.hosts[peer];
        // RFC 7323 §4.3: TS.Recent takes the TSval of a segment at or
        // before the last ACK sent, so an ACK of several segments echoes
        // the first one's.
        if self.opts.timestamps && (flags & FLAG_SYN != 0 || crate::wlsb::diff32(seq, peer.last_ack_sent) <= 0) {
            peer.ts_recent = ts.0;
        }
        if flags & FLAG_SYN != 0 || seq == peer.rcv_nxt {
            peer.rcv_nxt = end;
        }
    }

    /// SYN, SYN-ACK, ACK.
    pub fn handshake(&mut self) {
        self.send(Dir::Forward, FLAG_SYN, &[], &[]);
        self.tick(1);
        self.send(Dir::Backward, FLAG_SYN | FLAG_ACK, &[], &[]);
        self.tick(1);
        self.send(Dir::Forward, FLAG_ACK, &[], &[]);
    }

    /// FIN exchange.
    pub fn close(&mut self) {
        self.send(Dir::Forward, FLAG_FIN | FLAG_ACK, &[], &[]);
        self.tick(1);
        self.send(Dir::Backward, FLAG_FIN | FLAG_ACK, &[], &[]);
        self.tick(1);
        self.send(Dir::Forward, FLAG_ACK, &[], &[]);
    }

    /// Advances the timestamp clock by `ms` milliseconds.
    pub fn tick(&mut self, ms: u32) {
        self.clock_ms = self.clock_ms.wrapping_add(ms);
    }

    fn payload(&mut self, len: usize) -> Vec<u8> {
        let r = self.random();
        (0..len).map(|i| b"abcdefghijklmnopqrstuvwxyz0123456789"[(i + r as usize) % 36]).collect()
    }

    fn force_rcv_nxt(&mut self, dir: Dir, v: u32) {
        self.hosts[dir as usize].rcv_nxt = v;
    }
}

/// A bulk transfer of `segments` full segments of `mss` bytes from the
/// client: slow start then congestion avoidance; every `loss_every`-th new
/// segment (0: none) is lost before the link, so the receiver sends
/// duplicate ACKs (with a SACK block if enabled) and the sender
/// retransmits and halves its window. The receiver ACKs every second
/// segment.
pub fn bulk_transfer(segments: usize, mss: usize, loss_every: usize, opts: FlowOptions) -> Vec<(Dir, Vec<u8>)> {
    let mut f = FlowBuilder::new(opts, 40000, 80);
    f.handshake();
    let (mut cwnd, mut ssthresh, max_cwnd) = (2usize, 64usize, 44usize);
    let mut sent = 0;
    while sent < segments {
        let mut lost: Option<(u32, Vec<u8>)> = None;
        let mut ooo: BTreeSet<u32> = BTreeSet::new();
        let mut unacked = 0;
        for _ in 0..cwnd.min(segments - sent) {
            sent += 1;
            let payload = f.payload(mss);
            let seq = f.hosts[0].snd_nxt;
            if loss_every > 0 && sent % loss_every == 0 && lost.is_none() {
                // Lost upstream: the sender advances, the link never sees it.
                f.hosts[0].snd_nxt = seq.wrapping_add(mss as u32);
                lost = Some((seq, payload));
                continue;
            }
            let rcv_before = f.hosts[1].rcv_nxt;
            f.send(Dir::Forward, FLAG_ACK | (FLAG_PSH * (sent % 5 == 0) as u8), &payload, &[]);
            f.tick(2);
            if lost.is_some() {
                // Out of order at the receiver: an immediate duplicate ACK.
                ooo.insert(seq);
                f.force_rcv_nxt(Dir::Backward, rcv_before);
                let (lo, hi) = (*ooo.first().unwrap_or(&seq), seq.wrapping_add(mss as u32));
                let sack = if opts.sack { vec![TcpOption::Sack(vec![(lo, hi)])] } else { vec![] };
                f.send(Dir::Backward, FLAG_ACK, &[], &sack);
            } else {
                unacked += 1;
                if unacked == 2 {
                    f.send(Dir::Backward, FLAG_ACK, &[], &[]);
                    unacked = 0;
                }
            }
        }
        f.tick(100);
        if let Some((seq, payload)) = lost {
            f.send_at(Dir::Forward, seq, FLAG_ACK, &payload, &[]);
            // The retransmission fills the hole: everything is acknowledged.
            let all = f.hosts[0].snd_nxt;
            f.force_rcv_nxt(Dir::Backward, all);
            f.send(Dir::Backward, FLAG_ACK, &[], &[]);
            ssthresh = (cwnd / 2).max(2);
            cwnd = ssthresh;
        } else {
            if unacked > 0 {
                f.send(Dir::Backward, FLAG_ACK, &[], &[]);
            }
            cwnd = if cwnd < ssthresh { cwnd * 2 } else { cwnd + 1 }.min(max_cwnd);
        }
    }
    f.close();
    f.packets
}

const SIP_SIZES: [(Dir, usize); 7] = [
    (Dir::Forward, 912),  // INVITE
    (Dir::Backward, 356), // 100 Trying
    (Dir::Backward, 447), // 180 Ringing
    (Dir::Backward, 871), // 200 OK
    (Dir::Forward, 391),  // ACK
    (Dir::Forward, 498),  // BYE
    (Dir::Backward, 402), // 200 OK
];

/// `dialogs` SIP dialogs (INVITE … BYE, seven messages each) over one TCP
/// connection, each message its own segment with PSH, and a delayed pure
/// ACK where no response follows soon.
pub fn sip_over_tcp(dialogs: usize, opts: FlowOptions) -> Vec<(Dir, Vec<u8>)> {
    let mut f = FlowBuilder::new(opts, 5060, 5060);
    f.handshake();
    for d in 0..dialogs {
        for (i, (dir, size)) in SIP_SIZES.iter().enumerate() {
            let size = size + (d * 7 + i * 3) % 40; // Call-IDs, branches, tags vary
            let mut payload = f.payload(size);
            payload[..4].copy_from_slice(b"SIP/");
            f.send(*dir, FLAG_ACK | FLAG_PSH, &payload, &[]);
            f.tick(20 + (i as u32 * 13) % 50);
            // The peer's delayed ACK when it has nothing to say at once.
            if i == 2 || i == 4 || i == 6 {
                let peer = if *dir == Dir::Forward { Dir::Backward } else { Dir::Forward };
                f.send(peer, FLAG_ACK, &[], &[]);
            }
        }
        f.tick(1000);
    }
    f.close();
    f.packets
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{checksums_ok, Packet};

    #[test]
    fn flows_are_valid_packets_with_retransmissions() {
        let bulk = bulk_transfer(300, 1460, 50, FlowOptions::default());
        assert!(bulk.iter().all(|(_, p)| checksums_ok(p)));
        let seqs: Vec<u32> = bulk
            .iter()
            .filter(|(d, _)| *d == Dir::Forward)
            .map(|(_, p)| Packet::parse(p).unwrap())
            .filter(|p| !p.payload.is_empty())
            .map(|p| p.header.seq)
            .collect();
        let back = seqs.windows(2).filter(|w| crate::wlsb::diff32(w[1], w[0]) < 0).count();
        assert!(back >= 5, "{back} retransmissions");
        let sip = sip_over_tcp(3, FlowOptions::default());
        assert!(sip.iter().all(|(_, p)| checksums_ok(p)));
        assert_eq!(sip.len(), 3 + 3 * 10 + 3);
    }
}
