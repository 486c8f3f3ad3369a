//! TCP/IPv6, where the TAROC draft's method extends cleanly:
//! byte-identical round trips in every mode, IPv4 and IPv6 flows sharing
//! a link, bit errors never emitted as a wrong header, VJ passing IPv6
//! uncompressed, and a real capture over ::1.

mod common;

use common::{run_scheme, run_taroc, run_taroc_with_single_bit_errors, Queue, Rng};
use taroc::capture::read_capture;
use taroc::replay::{replay, LinkConfig};
use taroc::synth::{bulk_transfer, sip_over_tcp, Dir, FlowOptions};
use taroc::{checksums_ok, Compressor, CompressorConfig, Mode, Packet, PacketKind, Scheme};

const MODES: [Mode; 3] = [Mode::U, Mode::O, Mode::R];

fn v6(seed: u64) -> FlowOptions {
    FlowOptions { ipv6: true, seed, ..FlowOptions::default() }
}

fn no_faults() -> impl FnMut(Dir, &mut Queue) {
    |_, _| {}
}

#[test]
fn synthesised_ipv6_packets_parse_with_correct_checksums() {
    let flow = bulk_transfer(50, 1440, 17, v6(1));
    for (_, p) in &flow {
        assert_eq!(p[0] >> 4, 6);
        assert!(checksums_ok(p));
        let parsed = Packet::parse(p).unwrap();
        assert!(parsed.header.is_ipv6());
        let mut back = Vec::new();
        parsed.header.emit(parsed.payload.len(), &mut back).unwrap();
        back.extend_from_slice(parsed.payload);
        assert_eq!(&back, p);
    }
}

#[test]
fn ipv6_bulk_transfer_round_trips_in_every_mode() {
    let flow = bulk_transfer(1500, 1440, 61, v6(3));
    for mode in MODES {
        let o = run_taroc(mode, &flow, 1, &mut no_faults());
        assert_eq!((o.delivered, o.dropped, o.corrupted), (flow.len(), 0, 0), "{mode:?}: {o:?}");
        // As IPv4's (no IP-ID to send): about 10 bytes from 72.
        assert!(o.mean_header() < 11.0, "{mode:?}: mean header {:.2} of {o:?}", o.mean_header());
        assert!(o.ir_dyn + o.ir < flow.len() / 20, "{mode:?}: {o:?}");
    }
}

#[test]
fn ipv6_sip_over_tcp_round_trips_in_every_mode() {
    for (timestamps, sack) in [(true, true), (false, false)] {
        let flow = sip_over_tcp(40, FlowOptions { timestamps, sack, ..v6(5) });
        for mode in MODES {
            let o = run_taroc(mode, &flow, 1, &mut no_faults());
            assert_eq!((o.delivered, o.dropped, o.corrupted), (flow.len(), 0, 0), "{mode:?}: {o:?}");
            assert!(o.mean_header() < 19.0, "{mode:?}: mean header {:.2}", o.mean_header());
        }
    }
}

#[test]
fn ipv4_and_ipv6_flows_share_a_link() {
    let a = bulk_transfer(300, 1000, 37, FlowOptions::default());
    let b = bulk_transfer(300, 1000, 41, v6(7));
    let c = sip_over_tcp(10, v6(9));
    let d = sip_over_tcp(10, FlowOptions { seed: 11, ..FlowOptions::default() });
    let mut packets = Vec::new();
    let longest = [&a, &b, &c, &d].iter().map(|f| f.len()).max().unwrap();
    for i in 0..longest {
        for f in [&a, &b, &c, &d] {
            if let Some(p) = f.get(i) {
                packets.push(p.clone());
            }
        }
    }
    for mode in MODES {
        let o = run_taroc(mode, &packets, 1, &mut no_faults());
        assert_eq!((o.delivered, o.corrupted, o.dropped), (packets.len(), 0, 0), "{mode:?}: {o:?}");
        // The IPv4 and IPv6 flows share ports: they are told apart by
        // version and address. With feedback, one IR per flow and
        // direction (U-mode's refreshes are IRs too).
        if mode != Mode::U {
            assert_eq!(o.ir, 8, "{mode:?}: {o:?}");
        }
    }
    let raw: Vec<Vec<u8>> = packets.iter().map(|(_, p)| p.clone()).collect();
    for s in [Scheme::Taroc(Mode::O), Scheme::Vj, Scheme::None, Scheme::Ideal] {
        let (r, _) = replay(s, &raw, &LinkConfig::default(), false);
        assert_eq!((r.delivered, r.undetected, r.flows), (raw.len(), 0, 4), "{s:?}: {r:?}");
        assert_eq!(r.ipv6_packets, b.len() + c.len());
    }
}

#[test]
fn vj_sends_ipv6_uncompressed_and_none_and_ideal_pass_it() {
    let flow = bulk_transfer(200, 1440, 0, v6(13));
    let before: usize = flow.iter().map(|(_, p)| Packet::parse(p).unwrap().header.len()).sum();
    let vj = run_scheme(Scheme::Vj, &flow);
    assert_eq!((vj.delivered, vj.corrupted, vj.dropped), (flow.len(), 0, 0));
    assert_eq!(vj.header_bytes_after, before, "VJ compresses nothing of IPv6");
    for s in [Scheme::None, Scheme::Ideal] {
        let o = run_scheme(s, &flow);
        assert_eq!((o.delivered, o.corrupted, o.dropped), (flow.len(), 0, 0), "{s:?}");
    }
}

#[test]
fn an_ipv6_context_carries_no_ip_id_and_its_ir_holds_the_ipv6_static_chain() {
    let flow = bulk_transfer(100, 1440, 0, v6(15));
    let v4 = bulk_transfer(100, 1440, 0, FlowOptions { seed: 15, ..FlowOptions::default() });
    let mut c6 = Compressor::new(CompressorConfig::with_mode(Mode::O));
    let mut c4 = Compressor::new(CompressorConfig::with_mode(Mode::O));
    let fwd = |f: &[(Dir, Vec<u8>)]| f.iter().filter(|(d, _)| *d == Dir::Forward).map(|(_, p)| p.clone()).collect();
    let (f6, f4): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (fwd(&flow), fwd(&v4));
    let mut wire = Vec::new();
    let r = c6.compress(&f6[0], &mut wire).unwrap();
    assert_eq!((r.kind, wire[0]), (PacketKind::Ir, taroc::format::TYPE_IR_V6));
    // Static chain 40 octets; dynamic 15 + options (MSN, presence bits,
    // traffic class, hop limit, SEQ, offset, flags, window, checksum; a
    // SYN's ACK number, urgent pointer and strides are zero, so absent);
    // CRC: 57 + options.
    assert_eq!(Packet::parse(&f6[0]).unwrap().header.ack, 0);
    assert_eq!(r.header_len, 1 + 40 + 15 + Packet::parse(&f6[0]).unwrap().header.options.len as usize + 1);
    let (mut h6, mut h4) = (0, 0);
    let mut six = 0;
    for (p6, p4) in f6.iter().zip(&f4).skip(1) {
        wire.clear();
        let n = c6.compress(p6, &mut wire).unwrap().header_len;
        h6 += n;
        six += (n == 6) as usize;
        wire.clear();
        h4 += c4.compress(p4, &mut wire).unwrap().header_len;
    }
    // The same TCP traffic costs no more over IPv6 after the IR; a
    // full-sized segment with timestamps (and PSH clear) is 6 octets in the
    // compact format, as over IPv4.
    assert!(h6 <= h4, "IPv6 {h6} bytes, IPv4 {h4} bytes");
    assert!(six * 2 > f6.len(), "{six} of {} in 6 octets", f6.len());
}

/// As tests/robustness.rs for IPv4: at BER 1e-3 nearly every damaged
/// packet is refused, and a single bit error per packet always is.
#[test]
fn damaged_ipv6_packets_are_never_emitted_with_a_wrong_header() {
    let mut flow = bulk_transfer(2000, 56, 71, v6(17));
    flow.extend(sip_over_tcp(20, v6(19)));
    for mode in MODES {
        let mut rng = Rng(0x6eed + mode as u64);
        let mut damaged = 0;
        let mut link = |_: Dir, q: &mut Queue| {
            for (_, wire) in q.iter_mut() {
                let mut hit = false;
                for b in 0..wire.len() * 8 {
                    if rng.chance(1e-3) {
                        wire[b / 8] ^= 1 << (b % 8);
                        hit = true;
                    }
                }
                damaged += hit as usize;
            }
        };
        let o = run_taroc(mode, &flow, 1, &mut link);
        assert!(damaged > 500, "{damaged}");
        assert_eq!(o.corrupted, 0, "{mode:?}: {o:?}");
        assert!(o.payload_undetected * 100 <= damaged, "{mode:?}: {o:?}");
        let intact = o.sent - damaged;
        assert!(o.delivered * 2 >= intact, "{mode:?}: {o:?}, {damaged} damaged");

        let (o, damaged) = run_taroc_with_single_bit_errors(mode, &flow, 91 + mode as u64);
        assert!(damaged > 50);
        assert_eq!((o.corrupted, o.payload_undetected), (0, 0), "{mode:?}: {o:?}");
    }
}

#[test]
fn extension_headers_and_fragments_are_refused_with_their_reason() {
    let (_, p) = &bulk_transfer(3, 100, 0, v6(21))[3];
    let mut hbh = p[..40].to_vec();
    hbh[6] = 0; // Hop-by-Hop options, then TCP
    let ext = [6u8, 0, 1, 4, 0, 0, 0, 0];
    hbh.extend_from_slice(&ext);
    hbh.extend_from_slice(&p[40..]);
    let len = (hbh.len() - 40) as u16;
    hbh[4..6].copy_from_slice(&len.to_be_bytes());
    assert_eq!(Packet::parse(&hbh).unwrap_err(), taroc::ParseError::Ipv6ExtensionHeader { next_header: 0 });
    let mut frag = hbh.clone();
    frag[6] = 44;
    assert_eq!(Packet::parse(&frag).unwrap_err(), taroc::ParseError::Ipv6Fragment);
    let mut udp = p.clone();
    udp[6] = 17;
    assert_eq!(Packet::parse(&udp).unwrap_err(), taroc::ParseError::Ipv6NotTcp(17));
    let short = &p[..p.len() - 1];
    assert!(matches!(Packet::parse(short), Err(taroc::ParseError::Ipv6Length { .. })));
    let mut c = Compressor::new(CompressorConfig::default());
    assert!(c.compress(&hbh, &mut Vec::new()).is_err());
}

/// A real TCP transfer over ::1 (tests/data/README.md): every packet
/// replays byte-identically through every scheme.
#[test]
fn the_ipv6_loopback_capture_replays_without_faults() {
    let data = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/http-ipv6-lo.pcap")).unwrap();
    let cap = read_capture(&data).unwrap();
    assert!(cap.packets.len() >= 30, "{} packets", cap.packets.len());
    assert!(cap.packets.iter().all(|p| p.ip[0] >> 4 == 6));
    let packets: Vec<Vec<u8>> = cap.packets.iter().map(|p| p.ip.clone()).collect();
    for s in [Scheme::Taroc(Mode::U), Scheme::Taroc(Mode::O), Scheme::Taroc(Mode::R), Scheme::Vj, Scheme::None] {
        let (r, out) = replay(s, &packets, &LinkConfig::default(), true);
        assert_eq!((r.delivered, r.undetected, r.context_damage, r.compress_errors), (packets.len(), 0, 0, 0), "{s:?}");
        assert_eq!(r.ipv6_packets, packets.len());
        assert!(out.iter().all(|(i, p)| packets[*i] == *p));
        if let Scheme::Taroc(_) = s {
            assert!(r.mean_header_after() < 20.0, "{s:?}: {:.2}", r.mean_header_after());
        }
    }
}
