//! SACK in the throughput study's TCP (`TcpVariant::Sack`): the
//! receiver's SACK blocks (RFC 2018 §4), the sender's recovery of several
//! losses of one window in one round trip (ns-2's `Sack1`), and ACKs with
//! SACK options through every scheme's compressor and decompressor.
#![allow(clippy::unwrap_used)] // a test fails by panicking

use taroc::packet::{RawOptions, TcpIpHeader, TcpOption, FLAG_ACK};
use taroc::throughput::{
    scheme_pair, simulate, SenderConfig, TcpReceiver, TcpSender, TcpVariant, ThroughputConfig, MAX_SACK_BLOCKS,
};
use taroc::{Mode, Scheme};

const MSS: u64 = 536;
const MS: u64 = 1_000_000;

fn seg(i: u64) -> u64 {
    i * MSS
}

#[test]
fn the_receiver_reports_the_latest_block_first_then_the_earlier_ones() {
    let mut r = TcpReceiver::new();
    assert_eq!(r.on_segment(seg(0), MSS as u32), seg(1));
    assert!(r.sack_blocks(MAX_SACK_BLOCKS).is_empty(), "nothing above a gap");
    // Segment 1 is lost; 2 and 3 arrive: one block.
    assert_eq!(r.on_segment(seg(2), MSS as u32), seg(1));
    assert_eq!(r.sack_blocks(3), vec![(seg(2), seg(3))]);
    r.on_segment(seg(3), MSS as u32);
    assert_eq!(r.sack_blocks(3), vec![(seg(2), seg(4))]);
    // 4 lost, 5 arrives, 6 lost, 7 arrives, 8 lost, 9 arrives.
    r.on_segment(seg(5), MSS as u32);
    assert_eq!(r.sack_blocks(3), vec![(seg(5), seg(6)), (seg(2), seg(4))]);
    r.on_segment(seg(7), MSS as u32);
    r.on_segment(seg(9), MSS as u32);
    assert_eq!(r.sack_blocks(3), vec![(seg(9), seg(10)), (seg(7), seg(8)), (seg(5), seg(6))]);
    assert_eq!(r.sack_blocks(4).len(), 4, "four blocks when asked");
    // 4 arrives late: its block (2..6 now) goes first.
    assert_eq!(r.on_segment(seg(4), MSS as u32), seg(1));
    assert_eq!(r.sack_blocks(3), vec![(seg(2), seg(6)), (seg(9), seg(10)), (seg(7), seg(8))]);
    // 1 arrives: in order up to 6, the blocks above remain.
    assert_eq!(r.on_segment(seg(1), MSS as u32), seg(6));
    assert_eq!(r.sack_blocks(3), vec![(seg(9), seg(10)), (seg(7), seg(8))]);
}

/// What one recovery did: the round trip in which `recover` was
/// acknowledged, the retransmitted offsets, the timeouts.
#[derive(Debug)]
struct Recovery {
    rounds: u32,
    retransmitted: Vec<u64>,
    timeouts: u64,
}

/// A window of 10 segments of which the 1st and the 5th are lost, over
/// a path that loses nothing else, one round trip of 100 ms per round;
/// the receiver acknowledges each segment with its SACK blocks.
fn recover_two_losses(variant: TcpVariant) -> Recovery {
    let cfg = SenderConfig { initial_window: Some(10), ..SenderConfig::new(variant, MSS as u32) };
    let mut s = TcpSender::new(cfg);
    let mut r = TcpReceiver::new();
    let mut flight: Vec<u64> = std::iter::from_fn(|| s.poll_send(0)).map(|g| g.offset).collect();
    assert_eq!(flight.len(), 10);
    let recover = s.snd_max();
    let lost = [seg(0), seg(4)];
    let mut retransmitted = Vec::new();
    let mut now = 0;
    for round in 1..=10 {
        now += 100 * MS;
        s.on_timer(now);
        let mut next = Vec::new();
        for (i, &off) in flight.iter().enumerate() {
            if round == 1 && lost.contains(&off) {
                continue;
            }
            let ack = r.on_segment(off, MSS as u32);
            let blocks = if variant == TcpVariant::Sack { r.sack_blocks(MAX_SACK_BLOCKS) } else { Vec::new() };
            s.on_ack_sack(now + i as u64, ack, &blocks);
            while let Some(g) = s.poll_send(now + i as u64) {
                if g.retransmission {
                    retransmitted.push(g.offset);
                }
                next.push(g.offset);
            }
        }
        if s.snd_una() >= recover {
            return Recovery { rounds: round, retransmitted, timeouts: s.stats().timeouts };
        }
        flight = next;
    }
    panic!("{variant:?} did not recover in 10 round trips: {:?}", s.stats());
}

#[test]
fn sack_retransmits_both_holes_in_one_round_trip_where_newreno_takes_two() {
    let sack = recover_two_losses(TcpVariant::Sack);
    let newreno = recover_two_losses(TcpVariant::NewReno);
    // Both losses retransmitted once each, nothing SACKed sent again.
    assert_eq!(sack.retransmitted, vec![seg(0), seg(4)], "{sack:?}");
    assert_eq!(newreno.retransmitted, vec![seg(0), seg(4)], "{newreno:?}");
    assert_eq!((sack.timeouts, newreno.timeouts), (0, 0));
    // SACK: the ACKs of round 1 show both holes, round 2 acknowledges
    // everything. NewReno learns of the second hole from the partial ACK
    // of round 2 and has it acknowledged in round 3.
    assert_eq!(sack.rounds, 2, "{sack:?}");
    assert_eq!(newreno.rounds, 3, "{newreno:?}");
}

#[test]
fn sack_recovery_halves_the_window_and_ends_at_ssthresh() {
    let cfg = SenderConfig { initial_window: Some(10), ..SenderConfig::new(TcpVariant::Sack, MSS as u32) };
    let mut s = TcpSender::new(cfg);
    let sent: Vec<u64> = std::iter::from_fn(|| s.poll_send(0)).map(|g| g.offset).collect();
    let mut r = TcpReceiver::new();
    // Segment 0 lost; 1..=3 arrive: three duplicates with SACK blocks.
    for &off in &sent[1..4] {
        let ack = r.on_segment(off, MSS as u32);
        s.on_ack_sack(10 * MS, ack, &r.sack_blocks(3));
    }
    assert!(s.in_recovery());
    assert_eq!(s.ssthresh(), 5 * MSS);
    assert_eq!(s.cwnd(), 5 * MSS, "not inflated (ns-2's Sack1)");
    assert_eq!(s.sacked_bytes(), 3 * MSS);
    let first = s.poll_send(10 * MS).expect("the fast retransmission");
    assert_eq!((first.offset, first.retransmission), (0, true));
    // pipe = 10 − 3 = 7 ≥ cwnd 5: nothing more yet.
    assert!(s.poll_send(10 * MS).is_none());
    // Three more duplicates bring the pipe to 4: one new segment.
    for &off in &sent[4..7] {
        let ack = r.on_segment(off, MSS as u32);
        s.on_ack_sack(11 * MS, ack, &r.sack_blocks(3));
    }
    let next = s.poll_send(11 * MS).expect("new data under the pipe");
    assert_eq!((next.offset, next.retransmission), (seg(10), false));
    assert!(s.poll_send(11 * MS).is_none());
    // The retransmission arrives: everything up to the new segment is in.
    for &off in &sent[7..] {
        r.on_segment(off, MSS as u32);
    }
    let ack = r.on_segment(0, MSS as u32);
    assert_eq!(ack, seg(10));
    s.on_ack_sack(20 * MS, ack, &r.sack_blocks(3));
    assert!(!s.in_recovery());
    assert_eq!(s.cwnd(), 5 * MSS);
    assert_eq!(s.sacked_bytes(), 0);
}

/// An ACK from the mobile host: ack `ack`, SACK blocks `blocks`.
fn ack_packet(h: &mut TcpIpHeader, ack: u32, blocks: &[(u32, u32)]) -> Vec<u8> {
    h.ip_id = h.ip_id.wrapping_add(1);
    h.ack = ack;
    h.options = if blocks.is_empty() {
        RawOptions::EMPTY
    } else {
        RawOptions::build(&[TcpOption::Nop, TcpOption::Nop, TcpOption::Sack(blocks.to_vec())]).unwrap()
    };
    let mut out = Vec::new();
    h.emit_with_checksum(&[], &mut out).unwrap();
    out
}

#[test]
fn acks_with_sack_options_round_trip_through_every_scheme() {
    let mut h = TcpIpHeader::new([10, 1, 0, 2], 40000, [10, 0, 0, 1], 20);
    h.tcp_flags = FLAG_ACK;
    h.window = 10720;
    h.seq = 0x1234_5678;
    let isn = 0xfff0_0000u32; // the blocks wrap past 2^32
    let m = MSS as u32;
    let e = |i: u32| isn.wrapping_add(i * m);
    // A recovery as the receiver reports it: losses at 1 and 4 and 8,
    // blocks growing, merging, the cumulative point moving, then none.
    let mut acks = vec![ack_packet(&mut h, e(1), &[])];
    for i in 2..4 {
        acks.push(ack_packet(&mut h, e(1), &[(e(2), e(i + 1))]));
    }
    for i in 5..8 {
        acks.push(ack_packet(&mut h, e(1), &[(e(5), e(i + 1)), (e(2), e(4))]));
    }
    for i in 9..12 {
        acks.push(ack_packet(&mut h, e(1), &[(e(9), e(i + 1)), (e(5), e(8)), (e(2), e(4))]));
    }
    acks.push(ack_packet(&mut h, e(1), &[(e(9), e(12)), (e(5), e(8)), (e(2), e(4)), (e(13), e(14))]));
    acks.push(ack_packet(&mut h, e(4), &[(e(5), e(8)), (e(9), e(12))]));
    acks.push(ack_packet(&mut h, e(8), &[(e(9), e(12))]));
    for i in 12..20 {
        acks.push(ack_packet(&mut h, e(i), &[]));
    }
    let schemes = [
        Scheme::None,
        Scheme::Vj,
        Scheme::Iphc { twice: false },
        Scheme::Iphc { twice: true },
        Scheme::Taroc(Mode::U),
        Scheme::Taroc(Mode::O),
        Scheme::Taroc(Mode::R),
        Scheme::TarocInfer,
        Scheme::Ideal,
    ];
    for scheme in schemes {
        let (mut comp, mut decomp) = scheme_pair(scheme, 576);
        let mut option_headers = 0;
        for (i, p) in acks.iter().enumerate() {
            let mut wire = Vec::new();
            let header = comp.compress_packet(p, &mut wire).unwrap_or_else(|e| panic!("{scheme:?} ACK {i}: {e}"));
            option_headers += (p.len() > 40) as usize;
            let mut out = Vec::new();
            decomp.decompress_packet(&wire, &mut out).unwrap_or_else(|e| panic!("{scheme:?} ACK {i}: {e}"));
            assert_eq!(&out, p, "{scheme:?} ACK {i} (header {header} octets)");
            let mut fb = Vec::new();
            while decomp.poll_feedback(&mut fb) {
                let _ = comp.feedback(&fb);
                fb.clear();
            }
        }
        assert_eq!(option_headers, 11);
    }
}

#[test]
fn a_sack_run_carries_sack_options_on_its_acks_and_every_scheme_delivers_them_intact() {
    for scheme in [Scheme::None, Scheme::Vj, Scheme::Iphc { twice: false }, Scheme::Taroc(Mode::O), Scheme::Ideal] {
        let cfg = ThroughputConfig {
            seconds: 60.0,
            seed: 3,
            ..ThroughputConfig::draft(114_000, 3e-6, 576, scheme, TcpVariant::Sack)
        };
        let run = simulate(&cfg).unwrap();
        let back = run.backward;
        assert!(run.forward.damaged_dropped > 0, "{scheme:?}: losses to recover from");
        assert_eq!(back.compress_errors, 0, "{scheme:?}");
        // The ACK direction is clean: every ACK, SACK options and all,
        // must come out of the decompressor as it went in.
        assert_eq!(back.context_damage + back.undetected + back.payload_undetected, 0, "{scheme:?} {back:?}");
        if scheme == Scheme::None {
            assert!(back.header_bytes > 40 * back.packets + 100, "SACK options on the ACKs: {back:?}");
        }
        assert!(run.sender.fast_retransmits > 0, "{scheme:?} {:?}", run.sender);
    }
}
