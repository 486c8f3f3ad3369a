//! Writes a flow's SigComp messages as a packet capture (pcap, Ethernet
//! link type, IPv4) that Wireshark and tshark open: one UDP datagram per
//! message, or one TCP connection (three-way handshake, then one segment
//! per record-marked message) when the flow ran over a stream.
//!
//! The addresses exist only inside the file: the UE is 10.0.0.1, the
//! P-CSCF 10.0.0.2, both on port 5060 (RFC 3261 §18, the port SIP uses
//! whether or not it is compressed — RFC 3486 §3).

use std::io::Write;
use std::time::Duration;

use etherparse::PacketBuilder;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;

use crate::corpus::Side;

/// The UE's IPv4 address inside the capture (private, RFC 1918).
pub const UE_IP: [u8; 4] = [10, 0, 0, 1];
/// The P-CSCF's IPv4 address inside the capture.
pub const PCSCF_IP: [u8; 4] = [10, 0, 0, 2];
/// Both ends' UDP or TCP port: SIP's (RFC 3261 §18), compressed or not (RFC 3486
/// §3).
pub const SIP_PORT: u16 = 5060;
/// Locally administered unicast MAC addresses (IEEE 802 bit 1 of byte 0).
const UE_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const PCSCF_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
/// Initial sequence numbers of the two TCP ends (any value is valid,
/// RFC 9293 §3.4.1; fixed so captures are reproducible).
const UE_ISN: u32 = 1_000;
const PCSCF_ISN: u32 = 500_000;
const TTL: u8 = 64;
const TCP_WINDOW: u16 = 65_535;
/// Capture timestamps: a fixed start and 1 ms between packets, so the
/// file is the same on every run.
const START: Duration = Duration::from_secs(1_700_000_000);
const GAP: Duration = Duration::from_millis(1);

/// The capture transport: UDP datagrams or one TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PcapTransport {
    /// One UDP datagram per SigComp message.
    Udp,
    /// One TCP connection: the three-way handshake, then one segment per record-
    /// marked SigComp message (RFC 3320 §4.2.2).
    Tcp,
}

/// One end's link-layer and IPv4 address.
type Host = ([u8; 6], [u8; 4]);

/// (source, destination) of a packet that `sender` sends.
fn endpoints(sender: Side) -> (Host, Host) {
    match sender {
        Side::Ue => ((UE_MAC, UE_IP), (PCSCF_MAC, PCSCF_IP)),
        Side::Pcscf => ((PCSCF_MAC, PCSCF_IP), (UE_MAC, UE_IP)),
    }
}

/// One TCP segment's flags.
#[derive(Clone, Copy)]
struct TcpFlags {
    syn: bool,
    ack: bool,
    psh: bool,
}

/// Builds the Ethernet frames of a capture. For TCP, `messages` must be
/// the bytes as they travel in the stream (record-marked, RFC 3320 §4.2.2).
pub fn frames(messages: &[(Side, Vec<u8>)], transport: PcapTransport) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    match transport {
        PcapTransport::Udp => {
            for (sender, payload) in messages {
                let ((smac, sip), (dmac, dip)) = endpoints(*sender);
                // etherparse fills in the IPv4 header checksum and the UDP
                // checksum over the pseudo header (RFC 768).
                let b = PacketBuilder::ethernet2(smac, dmac).ipv4(sip, dip, TTL).udp(SIP_PORT, SIP_PORT);
                let mut frame = Vec::with_capacity(b.size(payload.len()));
                b.write(&mut frame, payload).expect("writing to a Vec cannot fail");
                out.push(frame);
            }
        }
        PcapTransport::Tcp => {
            // next_seq[0] is the UE's next sequence number, [1] the P-CSCF's.
            let mut next_seq = [UE_ISN, PCSCF_ISN];
            let mut seg = |sender: Side, seq: u32, ack: u32, flags: TcpFlags, payload: &[u8]| {
                let ((smac, sip), (dmac, dip)) = endpoints(sender);
                let mut b =
                    PacketBuilder::ethernet2(smac, dmac).ipv4(sip, dip, TTL).tcp(SIP_PORT, SIP_PORT, seq, TCP_WINDOW);
                if flags.syn {
                    b = b.syn();
                }
                if flags.ack {
                    b = b.ack(ack);
                }
                if flags.psh {
                    b = b.psh();
                }
                let mut frame = Vec::with_capacity(b.size(payload.len()));
                b.write(&mut frame, payload).expect("writing to a Vec cannot fail");
                out.push(frame);
            };
            // RFC 9293 §3.5: SYN, SYN-ACK, ACK; a SYN takes one sequence number.
            seg(Side::Ue, next_seq[0], 0, TcpFlags { syn: true, ack: false, psh: false }, &[]);
            next_seq[0] += 1;
            seg(Side::Pcscf, next_seq[1], next_seq[0], TcpFlags { syn: true, ack: true, psh: false }, &[]);
            next_seq[1] += 1;
            seg(Side::Ue, next_seq[0], next_seq[1], TcpFlags { syn: false, ack: true, psh: false }, &[]);
            for (sender, payload) in messages {
                let (me, peer) = match sender {
                    Side::Ue => (0, 1),
                    Side::Pcscf => (1, 0),
                };
                // Each segment acknowledges everything the peer has sent.
                seg(*sender, next_seq[me], next_seq[peer], TcpFlags { syn: false, ack: true, psh: true }, payload);
                next_seq[me] = next_seq[me].wrapping_add(payload.len() as u32);
            }
            // A final pure ACK from whoever did not send last, so every
            // byte of the capture is acknowledged.
            if let Some((last, _)) = messages.last() {
                let other = match last {
                    Side::Ue => Side::Pcscf,
                    Side::Pcscf => Side::Ue,
                };
                let (me, peer) = match other {
                    Side::Ue => (0, 1),
                    Side::Pcscf => (1, 0),
                };
                seg(other, next_seq[me], next_seq[peer], TcpFlags { syn: false, ack: true, psh: false }, &[]);
            }
        }
    }
    out
}

/// Writes `messages` as a pcap file to `w`.
pub fn write_pcap<W: Write>(w: W, messages: &[(Side, Vec<u8>)], transport: PcapTransport) -> std::io::Result<()> {
    let header = PcapHeader { datalink: DataLink::ETHERNET, snaplen: 65_535, ..PcapHeader::default() };
    let mut pw = PcapWriter::with_header(w, header).map_err(std::io::Error::other)?;
    let mut t = START;
    for frame in frames(messages, transport) {
        pw.write_packet(&PcapPacket::new(t, frame.len() as u32, &frame)).map_err(std::io::Error::other)?;
        t += GAP;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};

    fn msgs() -> Vec<(Side, Vec<u8>)> {
        vec![(Side::Ue, b"\xf8abc".to_vec()), (Side::Pcscf, b"\xf9hello".to_vec()), (Side::Ue, b"\xf8z".to_vec())]
    }

    #[test]
    fn udp_frames_carry_payloads_with_valid_checksums() {
        let fr = frames(&msgs(), PcapTransport::Udp);
        assert_eq!(fr.len(), 3);
        for (f, (side, payload)) in fr.iter().zip(msgs()) {
            let p = SlicedPacket::from_ethernet(f).unwrap();
            let Some(NetSlice::Ipv4(ip)) = &p.net else { panic!("not IPv4") };
            let h = ip.header().to_header();
            assert_eq!(h.header_checksum, h.calc_header_checksum());
            let want_src = if side == Side::Ue { UE_IP } else { PCSCF_IP };
            assert_eq!(h.source, want_src);
            let Some(TransportSlice::Udp(u)) = &p.transport else { panic!("not UDP") };
            assert_eq!(u.payload(), &payload[..]);
            assert_eq!((u.source_port(), u.destination_port()), (5060, 5060));
            let uh = u.to_header();
            assert_eq!(uh.checksum, uh.calc_checksum_ipv4(&h, u.payload()).unwrap());
        }
    }

    #[test]
    fn tcp_handshake_and_sequence_numbers() {
        let fr = frames(&msgs(), PcapTransport::Tcp);
        // SYN, SYN-ACK, ACK, 3 data segments, final ACK.
        assert_eq!(fr.len(), 7);
        let tcp: Vec<_> = fr
            .iter()
            .map(|f| {
                let p = SlicedPacket::from_ethernet(f).unwrap();
                let Some(NetSlice::Ipv4(ip)) = &p.net else { panic!("not IPv4") };
                let iph = ip.header().to_header();
                let Some(TransportSlice::Tcp(t)) = &p.transport else { panic!("not TCP") };
                let th = t.to_header();
                assert_eq!(th.checksum, th.calc_checksum_ipv4(&iph, t.payload()).unwrap());
                (th, t.payload().to_vec())
            })
            .collect();
        assert!(tcp[0].0.syn && !tcp[0].0.ack && tcp[0].0.sequence_number == UE_ISN);
        assert!(tcp[1].0.syn && tcp[1].0.ack && tcp[1].0.acknowledgment_number == UE_ISN + 1);
        assert!(!tcp[2].0.syn && tcp[2].0.ack && tcp[2].0.acknowledgment_number == PCSCF_ISN + 1);
        assert_eq!(tcp[3].0.sequence_number, UE_ISN + 1);
        assert_eq!(tcp[3].1, b"\xf8abc");
        assert_eq!(tcp[4].0.sequence_number, PCSCF_ISN + 1);
        assert_eq!(tcp[4].0.acknowledgment_number, UE_ISN + 1 + 4);
        assert_eq!(tcp[5].0.sequence_number, UE_ISN + 1 + 4);
        assert_eq!(tcp[5].0.acknowledgment_number, PCSCF_ISN + 1 + 6);
        assert_eq!(tcp[6].0.acknowledgment_number, UE_ISN + 1 + 4 + 2);
    }
}
