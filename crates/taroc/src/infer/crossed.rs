//! The packets of the other direction one end holds: its decompressor's
//! delivered packets for its compressor, its compressor's sent packets for
//! its decompressor. A chained packet names one of them by 4 bits of MSN
//! (the ACK number it acknowledges) and echoes its TSval.
//!
//! Both ends note a packet per packet that crosses the link, and look one
//! up per chained packet, so the layout is for that: per flow a ring of the
//! 16 newest packets, 16 octets each, and the flow noted and the flow
//! looked up last kept by index, since consecutive packets mostly belong
//! to one connection.

use std::cell::Cell;

use super::{CrossedPacket, REVERSE_MSN_BITS};
use crate::format::StaticPart;

/// Packets of the other direction kept per flow: as many as the reverse
/// MSN can tell apart.
const KEPT: usize = 1 << REVERSE_MSN_BITS;
/// Flows whose packets are kept (twice the contexts of a link).
const FLOWS: usize = 32;

/// A packet of the other direction as kept: what naming it and echoing its
/// timestamp take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Kept {
    /// Its MSN in its own context.
    pub msn: u16,
    /// Its SEQ.
    pub seq: u32,
    /// The ACK number that acknowledges it whole.
    pub next_seq: u32,
    /// Its TSval (0 without a timestamp option).
    pub tsval: u32,
}

/// Whether `a` and `b` are one direction's endpoints: addresses and
/// ports, not the IPv6 flow label (each direction picks its own, and may
/// change it).
fn same_endpoints(a: &StaticPart, b: &StaticPart) -> bool {
    (a.src_port, a.dst_port) == (b.src_port, b.dst_port) && a.same_addresses(b)
}

/// One flow's newest packets: a ring, `next` the slot the next one takes.
struct Flow {
    /// The flow's static part, from its newest packet.
    static_part: StaticPart,
    ring: [Kept; KEPT],
    next: usize,
    len: usize,
}

impl Flow {
    fn push(&mut self, p: &CrossedPacket) {
        self.static_part = p.flow;
        self.ring[self.next] = Kept { msn: p.msn, seq: p.seq, next_seq: p.next_seq, tsval: p.tsval };
        self.next = (self.next + 1) % KEPT;
        self.len = (self.len + 1).min(KEPT);
    }

    /// The packets, newest first.
    fn newest_first(&self) -> impl Iterator<Item = &Kept> {
        (1..=self.len).map(move |i| &self.ring[(self.next + KEPT - i) % KEPT])
    }

    /// The TSval an ACK of `named` echoes when the acknowledged data starts
    /// at `acked_from` (the reference's ACK number): RFC 7323 §4.3 updates
    /// TS.Recent from the segment at the last ACK sent, so an ACK of two
    /// segments at once (a delayed ACK) echoes the first one's. That is
    /// the newest packet starting there that moves SEQ, if this end holds
    /// it, else `named` itself.
    fn echoed(&self, named: &Kept, acked_from: u32) -> u32 {
        self.newest_first().find(|p| p.seq == acked_from && p.next_seq != p.seq).map_or(named.tsval, |p| p.tsval)
    }
}

/// The newest packets of each flow of the other direction.
#[derive(Default)]
pub(crate) struct CrossedPackets {
    /// Oldest flow first; past [`FLOWS`] the oldest leaves.
    flows: Vec<Flow>,
    /// The index of the flow noted last.
    noted: usize,
    /// The index of the flow looked up last.
    looked_up: Cell<usize>,
}

impl CrossedPackets {
    pub fn note(&mut self, p: CrossedPacket) {
        let at = match self.flows.get(self.noted).filter(|f| same_endpoints(&f.static_part, &p.flow)) {
            Some(_) => self.noted,
            None => match self.flows.iter().position(|f| same_endpoints(&f.static_part, &p.flow)) {
                Some(at) => at,
                None => {
                    if self.flows.len() >= FLOWS {
                        self.flows.remove(0);
                    }
                    let empty = Flow { static_part: p.flow, ring: [Kept::default(); KEPT], next: 0, len: 0 };
                    self.flows.push(empty);
                    self.flows.len() - 1
                }
            },
        };
        self.noted = at;
        self.flows[at].push(&p);
    }

    /// The flow of the direction opposite to `flow`.
    fn opposite(&self, flow: &StaticPart) -> Option<&Flow> {
        let last = self.looked_up.get();
        if let Some(f) = self.flows.get(last).filter(|f| f.static_part.is_reverse_of(flow)) {
            return Some(f);
        }
        let at = self.flows.iter().position(|f| f.static_part.is_reverse_of(flow))?;
        self.looked_up.set(at);
        Some(&self.flows[at])
    }

    /// Compressor: the newest packet of the other direction that `ack`
    /// acknowledges whole, if `tsecr` is what `Flow::echoed`
    /// makes of it.
    pub fn named_by(&self, flow: &StaticPart, ack: u32, acked_from: u32, tsecr: Option<u32>) -> Option<Kept> {
        let f = self.opposite(flow)?;
        let named = *f.newest_first().find(|p| p.next_seq == ack)?;
        tsecr.is_none_or(|t| t == f.echoed(&named, acked_from)).then_some(named)
    }

    /// This direction's static part (flow label 0) of a flow with ports
    /// `src_port` and `dst_port`, from the one flow of the other direction
    /// with those ports reversed; `None` if none or several are held.
    pub fn reversed_flow(&self, src_port: u16, dst_port: u16) -> Option<StaticPart> {
        let mut matching =
            self.flows.iter().filter(|f| (f.static_part.src_port, f.static_part.dst_port) == (dst_port, src_port));
        let f = matching.next()?.static_part;
        if matching.next().is_some() {
            return None;
        }
        Some(f.reversed())
    }

    /// Decompressor: the newest packet of the other direction whose MSN
    /// has the LSBs `bits`, and the TSval an ACK of it echoes when the
    /// acknowledged data starts at `acked_from` (`Flow::echoed`).
    pub fn find(&self, flow: &StaticPart, bits: u8, acked_from: u32) -> Option<(Kept, u32)> {
        let mask = (1u16 << REVERSE_MSN_BITS) - 1;
        let f = self.opposite(flow)?;
        let named = *f.newest_first().find(|p| p.msn & mask == bits as u16)?;
        Some((named, f.echoed(&named, acked_from)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_packet_with_the_lsbs_is_found() {
        let flow = StaticPart { src: [10, 0, 0, 1], dst: [10, 0, 0, 2], src_port: 5060, dst_port: 40000, ipv6: None };
        let back =
            StaticPart { src: flow.dst, dst: flow.src, src_port: flow.dst_port, dst_port: flow.src_port, ipv6: None };
        let mut kept = CrossedPackets::default();
        for msn in 0..40u16 {
            // One octet each: packet `msn` takes SEQ 999 + msn.
            let seq = 999 + msn as u32;
            kept.note(CrossedPacket { flow: back, msn, seq, next_seq: seq + 1, tsval: msn as u32 });
        }
        assert_eq!(kept.find(&flow, 3, 0).map(|p| p.0.msn), Some(35));
        // An ACK of packet 35 alone echoes its TSval.
        assert_eq!(kept.named_by(&flow, 1035, 1034, Some(35)).map(|p| p.msn), Some(35));
        assert_eq!(kept.named_by(&flow, 1035, 1034, Some(34)), None);
        // An ACK of packets 34 and 35 at once echoes 34's (RFC 7323 §4.3).
        assert_eq!(kept.named_by(&flow, 1035, 1033, Some(34)).map(|p| p.msn), Some(35));
        assert_eq!(kept.named_by(&flow, 1035, 1033, Some(35)), None);
        assert_eq!(kept.named_by(&flow, 1010, 1009, None), None, "older than the 16 kept");
        assert_eq!(kept.find(&back, 3, 0), None, "the packets of its own direction are not the other's");
    }

    #[test]
    fn flows_past_the_bound_leave_oldest_first_and_lookups_follow_them() {
        let flow = |port: u16| StaticPart {
            src: [10, 0, 0, 2],
            dst: [10, 0, 0, 1],
            src_port: port,
            dst_port: 5060,
            ipv6: None,
        };
        let mut kept = CrossedPackets::default();
        for port in 0..FLOWS as u16 + 3 {
            kept.note(CrossedPacket { flow: flow(port), msn: port, seq: 1, next_seq: 2, tsval: 7 });
        }
        let reply = |port: u16| StaticPart {
            src: [10, 0, 0, 1],
            dst: [10, 0, 0, 2],
            src_port: 5060,
            dst_port: port,
            ipv6: None,
        };
        assert_eq!(kept.find(&reply(2), 2, 0), None, "the third flow left");
        assert_eq!(kept.find(&reply(3), 3, 0).map(|p| p.0.msn), Some(3));
        assert_eq!(kept.find(&reply(FLOWS as u16 + 2), 2, 0).map(|p| p.0.msn), Some(FLOWS as u16 + 2));
        // The cached lookup does not answer for another flow.
        assert_eq!(kept.find(&reply(3), 3, 0).map(|p| p.0.msn), Some(3));
        assert_eq!(kept.find(&reply(1), 1, 0), None);
        assert_eq!(
            kept.reversed_flow(5060, 3).map(|s| (s.src_port, s.dst_port, s.src)),
            Some((5060, 3, [10, 0, 0, 1]))
        );
    }
}
