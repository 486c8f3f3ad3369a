//! The links of the study's path: queues, serialisation and delay, the
//! frames they carry, the bit-error draws, and the packets put on them.

use std::collections::VecDeque;

use super::tcp::NS_PER_S;
use crate::packet::TcpIpHeader;

/// splitmix64: the bit-error draws of one direction of the link.
pub(super) struct SplitMix(u64);

impl SplitMix {
    pub(super) fn new(seed: u64, stream: u64) -> SplitMix {
        let mut s = SplitMix(seed ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03));
        s.next();
        s
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    pub(super) fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Flips each bit of `data[from..]` with probability `ber`, drawing
    /// the gaps between errors (geometric); returns how many it flipped.
    /// The draw continues across frames: the link is one bit stream.
    pub(super) fn flip_bits(&mut self, data: &mut [u8], from: usize, ber: f64) -> u64 {
        if ber <= 0.0 || from >= data.len() {
            return 0;
        }
        let bits = ((data.len() - from) * 8) as u64;
        let log_q = (1.0 - ber.min(0.5)).ln();
        let mut at = 0u64;
        let mut n = 0;
        loop {
            let gap = (self.unit().ln() / log_q).floor();
            if !gap.is_finite() || gap >= (bits - at) as f64 {
                return n;
            }
            at += gap as u64;
            data[from + (at / 8) as usize] ^= 0x80 >> (at % 8);
            n += 1;
            at += 1;
            if at >= bits {
                return n;
            }
        }
    }
}

/// A frame in a queue or on a link.
pub(super) enum Frame {
    /// An uncompressed TCP/IPv4 packet.
    Packet(Vec<u8>),
    /// Header compression feedback waiting for the wireless link.
    Feedback(Vec<u8>),
    /// What a scheme put on the wireless link.
    Wire(WireFrame),
}

pub(super) struct WireFrame {
    pub(super) bytes: Vec<u8>,
    /// The packet before compression (None: feedback).
    pub(super) original: Option<Vec<u8>>,
    pub(super) damaged: bool,
    /// IDEAL's counted header was hit: dropped whatever the link does.
    pub(super) ideal_header_hit: bool,
    /// The compressor's window of references as the packet left it.
    pub(super) window: Option<usize>,
}

pub(super) struct Link {
    pub(super) bps: u64,
    pub(super) delay_ns: u64,
    pub(super) limit: usize,
    pub(super) queue: VecDeque<Frame>,
    pub(super) in_service: Option<Frame>,
    pub(super) in_flight: VecDeque<Frame>,
}

impl Link {
    pub(super) fn new(bps: u64, delay_ns: u64, limit: usize) -> Link {
        Link { bps, delay_ns, limit, queue: VecDeque::new(), in_service: None, in_flight: VecDeque::new() }
    }

    pub(super) fn tx_ns(&self, bytes: usize) -> u64 {
        ((bytes as u128 * 8 * NS_PER_S as u128).div_ceil(self.bps as u128)) as u64
    }
}

/// The links, by index.
pub(super) const WIRED_FWD: usize = 0;

pub(super) const WIRELESS_FWD: usize = 1;

pub(super) const WIRELESS_BACK: usize = 2;

pub(super) const WIRED_BACK: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    TxDone(usize),
    Arrive(usize),
    Timer(u64),
    /// The receiver's delayed-ACK timer set for this time.
    DelayedAck(u64),
}

/// Builds one direction's packets: fixed addresses, a counting IP-ID.
pub(super) struct PacketMaker {
    pub(super) h: TcpIpHeader,
}

impl PacketMaker {
    pub(super) fn packet(&mut self, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
        self.h.ip_id = self.h.ip_id.wrapping_add(1);
        self.h.seq = seq;
        self.h.ack = ack;
        let mut out = Vec::with_capacity(40 + payload.len());
        // 40 octets plus at most 1460: emit cannot fail.
        let _ = self.h.emit_with_checksum(payload, &mut out);
        out
    }
}

/// The payload bytes at every stream offset repeat with this period, so a
/// retransmission carries the same bytes and the receiver can check them.
pub(super) const PATTERN_PERIOD: usize = 251;
