//! Cross-direction inference (`taroc::infer`): the chained format on
//! real captures and synthetic flows, its header sizes against TAROC's,
//! and what a lost, damaged or late packet costs it.

mod common;

use common::capture;

use taroc::replay::{replay, LinkConfig, Report};
use taroc::synth::{bulk_transfer, sip_over_tcp, Dir, FlowOptions, IpIdStyle};
use taroc::{
    Compressor, CompressorConfig, DecompressError, Decompressor, DecompressorConfig, FeedbackKind, Mode, PacketKind,
    Scheme,
};

fn packets(flow: Vec<(Dir, Vec<u8>)>) -> Vec<Vec<u8>> {
    flow.into_iter().map(|(_, p)| p).collect()
}

/// `packets` through `scheme` on a clean link, every packet back in
/// order, byte for byte.
fn clean(scheme: Scheme, packets: &[Vec<u8>]) -> Report {
    common::replay_exact(scheme, packets, &LinkConfig::default())
}

#[test]
fn every_capture_and_flow_round_trips_byte_identical() {
    let sources = [
        ("http-bulk-lo", capture("tests/data/http-bulk-lo.pcap")),
        ("http-ipv6-lo", capture("tests/data/http-ipv6-lo.pcap")),
        ("http-small-any", capture("tests/data/http-small-any.pcapng")),
        ("sip-tcp", capture("../sigkit-analyze/tests/data/sip-tcp.pcapng")),
        ("sip-tcp-12calls", capture("tests/data/sip-tcp-12calls.pcapng")),
        ("sip-kamailio-long", capture("tests/data/sip-kamailio-long.pcapng")),
        ("sip-kamailio-short", capture("tests/data/sip-kamailio-short.pcapng")),
        ("sip-kamailio-ipv6", capture("tests/data/sip-kamailio-ipv6.pcapng")),
        ("sigcomp-tcp", capture("../sigkit-analyze/tests/data/sigcomp-tcp.pcapng")),
        ("sip", packets(sip_over_tcp(60, FlowOptions::default()))),
        ("sip-nots", packets(sip_over_tcp(60, FlowOptions { timestamps: false, ..Default::default() }))),
        ("sip-zero-ipid", packets(sip_over_tcp(30, FlowOptions { ip_id: IpIdStyle::Zero, ..Default::default() }))),
        ("sip-ipv6", packets(sip_over_tcp(30, FlowOptions { ipv6: true, ..Default::default() }))),
        ("bulk", packets(bulk_transfer(600, 1460, 29, FlowOptions::default()))),
        ("bulk-nots", packets(bulk_transfer(600, 1460, 0, FlowOptions { timestamps: false, ..Default::default() }))),
    ];
    let schemes = [Scheme::TarocInfer, Scheme::Taroc(Mode::U), Scheme::Taroc(Mode::O), Scheme::Taroc(Mode::R)];
    for (name, packets) in &sources {
        for scheme in schemes {
            // In order, as sent, byte for byte (`clean` checks).
            let r = clean(scheme, packets);
            assert_eq!((r.delivered, r.undetected, r.context_damage), (r.packets, 0, 0), "{name} {scheme:?}");
        }
    }
}

#[test]
fn sip_over_tcp_headers_average_six_octets_or_fewer() {
    for (ts, at_most) in [(true, 6.0), (false, 4.5)] {
        let flow = packets(sip_over_tcp(200, FlowOptions { timestamps: ts, ..Default::default() }));
        let taroc = clean(Scheme::Taroc(Mode::O), &flow);
        let infer = clean(Scheme::TarocInfer, &flow);
        let (t, i) = (taroc.mean_header_after(), infer.mean_header_after());
        assert!(i <= at_most, "timestamps {ts}: {i:.2} B a header");
        assert!(i < t / 1.8, "timestamps {ts}: {i:.2} B against TAROC's {t:.2}");
    }
    // The real captures: 3 and 12 calls on one connection each, whose
    // start (IRs, the SYN's options) weighs on their 66 and 246 packets.
    for (path, ratio) in
        [("../sigkit-analyze/tests/data/sip-tcp.pcapng", 0.62), ("tests/data/sip-tcp-12calls.pcapng", 0.5)]
    {
        let real = capture(path);
        let taroc = clean(Scheme::Taroc(Mode::O), &real);
        let infer = clean(Scheme::TarocInfer, &real);
        assert!(infer.mean_header_after() < ratio * taroc.mean_header_after(), "{path}: {infer:?}");
    }
}

#[test]
fn a_bulk_transfer_gains_little_and_keeps_its_compact_packets() {
    // Chained packets only where they save two octets: a bulk sender's
    // full-sized segments stay in the compact format.
    let flow = packets(bulk_transfer(600, 1460, 0, FlowOptions { timestamps: false, ..Default::default() }));
    let taroc = clean(Scheme::Taroc(Mode::O), &flow);
    let infer = clean(Scheme::TarocInfer, &flow);
    assert!(infer.mean_header_after() <= taroc.mean_header_after());
    assert!(infer.mean_header_after() > taroc.mean_header_after() - 1.0);
}

#[test]
fn bit_errors_never_let_a_wrong_header_through() {
    let sip = packets(sip_over_tcp(100, FlowOptions::default()));
    let bulk = packets(bulk_transfer(400, 1460, 29, FlowOptions::default()));
    // Real SIPp ⇄ Kamailio connections, whose handshakes chain.
    let long = capture("tests/data/sip-kamailio-long.pcapng");
    let v6 = capture("tests/data/sip-kamailio-ipv6.pcapng");
    let mut damaged = 0;
    for flow in [&sip, &bulk, &long, &v6] {
        for seed in 1..=6 {
            for ber in [1e-3, 3e-4, 1e-4] {
                let (r, _) = replay(Scheme::TarocInfer, flow, &LinkConfig { ber, seed, ..Default::default() }, false);
                assert_eq!(r.undetected, 0, "BER {ber} seed {seed}: {r:?}");
                assert_eq!(r.context_recovery.beyond_window, 0, "BER {ber} seed {seed}: {r:?}");
                damaged += r.link_damaged;
            }
        }
    }
    assert!(damaged > 10_000, "{damaged} damaged packets");
}

#[test]
fn a_lost_packet_costs_few_packets_and_never_a_wrong_one() {
    let sip = packets(sip_over_tcp(200, FlowOptions::default()));
    for seed in 1..=4 {
        let link = LinkConfig { loss: 0.05, seed, ..Default::default() };
        let (r, _) = replay(Scheme::TarocInfer, &sip, &link, false);
        assert_eq!(r.undetected, 0);
        assert!(r.link_lost > 50);
        // The chained packet after a lost one is refused; the NACK it
        // draws stops the chaining until an ACK. (A chained packet's
        // window of references is the one packet before it, so an
        // episode may exceed the VSW, which the ACKs shrink: the bound is
        // the feedback's round trip, here immediate.)
        assert!(r.context_recovery.max <= 4, "{:?}", r.context_recovery);
        assert!(r.context_damage <= r.link_lost * 3 / 2, "{} for {} lost", r.context_damage, r.link_lost);
        assert!(r.mean_header_after() < 10.0, "{:.2}", r.mean_header_after());
    }
}

/// One end's compressor and decompressor per direction, telling each
/// other what crossed the link; `lose` drops that forward packet.
struct Link {
    ends: [(Compressor, Decompressor); 2],
}

impl Link {
    fn new() -> Link {
        let c = || CompressorConfig { infer: true, ..CompressorConfig::with_mode(Mode::O) };
        let d = || DecompressorConfig { infer: true, ..DecompressorConfig::with_mode(Mode::O) };
        Link { ends: [(Compressor::new(c()), Decompressor::new(d())), (Compressor::new(c()), Decompressor::new(d()))] }
    }

    /// Sends `packet` in direction `dir` (index 0 forward); returns the
    /// header length sent and the decompressor's result.
    fn send(&mut self, dir: usize, packet: &[u8], lose: bool) -> (usize, Result<Vec<u8>, DecompressError>) {
        let mut wire = Vec::new();
        let sent = self.ends[dir].0.compress(packet, &mut wire).expect("compresses");
        if let Some(x) = self.ends[dir].0.poll_crossed() {
            self.ends[1 - dir].1.note_reverse(&x);
        }
        if lose {
            return (sent.header_len, Err(DecompressError::Verification));
        }
        let mut out = Vec::new();
        let result = self.ends[dir].1.decompress(&wire, &mut out).map(|_| out);
        if let Some(x) = self.ends[dir].1.poll_crossed() {
            self.ends[1 - dir].0.note_reverse(&x);
        }
        while let Some(f) = self.ends[dir].1.poll_feedback() {
            let mut b = Vec::new();
            f.emit(&mut b);
            self.ends[dir].0.handle_feedback(&b).expect("applies");
        }
        (sent.header_len, result)
    }
}

#[test]
fn after_a_loss_the_next_chained_packet_is_refused_and_chaining_resumes() {
    let flow = sip_over_tcp(12, FlowOptions::default());
    let mut link = Link::new();
    let lost_at = flow.iter().enumerate().filter(|(_, (d, _))| *d == Dir::Forward).nth(25).map(|(i, _)| i).unwrap();
    let mut after = Vec::new();
    for (i, (dir, p)) in flow.iter().enumerate() {
        let d = (*dir == Dir::Backward) as usize;
        let (header, result) = link.send(d, p, i == lost_at);
        if i < lost_at {
            assert_eq!(result.as_deref().ok(), Some(&p[..]), "packet {i}");
        } else if i > lost_at && d == 0 {
            after.push((header, result.ok().as_deref() == Some(&p[..])));
        }
    }
    // The first forward packet after the loss is refused, then the rest
    // decode, and chained packets (4–6 octets) come back.
    assert!(!after[0].1, "{after:?}");
    assert!(after[1..].iter().all(|(_, ok)| *ok), "{after:?}");
    assert!(after[4..].iter().filter(|(h, _)| *h <= 6).count() > after.len() / 2, "{after:?}");
}

#[test]
fn a_decompressor_without_the_other_directions_packets_refuses_and_nacks() {
    // The forward decompressor never hears of the backward packets: every
    // chained packet naming one fails verification, none is emitted wrong,
    // and each failure sends a NACK.
    let flow = sip_over_tcp(10, FlowOptions::default());
    let mut link = Link::new();
    let mut refused = 0;
    for (dir, p) in &flow {
        let d = (*dir == Dir::Backward) as usize;
        let mut wire = Vec::new();
        link.ends[d].0.compress(p, &mut wire).unwrap();
        if d == 1 {
            // The backward compressor's packets are not told to the
            // forward decompressor (the end's wiring is missing).
            let _ = link.ends[d].0.poll_crossed();
        }
        let mut out = Vec::new();
        match link.ends[d].1.decompress(&wire, &mut out) {
            Ok(_) => assert_eq!(&out, p),
            Err(_) => {
                refused += 1;
                assert!(out.is_empty());
            }
        }
        if let Some(x) = link.ends[d].1.poll_crossed() {
            link.ends[1 - d].0.note_reverse(&x);
        }
        while let Some(f) = link.ends[d].1.poll_feedback() {
            if d == 0 && refused > 0 {
                assert!(matches!(f.kind, FeedbackKind::Nack | FeedbackKind::Ack));
            }
            let mut b = Vec::new();
            f.emit(&mut b);
            link.ends[d].0.handle_feedback(&b).unwrap();
        }
    }
    assert!(refused > 0, "no chained packet named a backward packet");
}

#[test]
fn reordering_costs_packets_but_never_a_wrong_one() {
    let sip = packets(sip_over_tcp(200, FlowOptions::default()));
    let link = LinkConfig { reorder_depth: 2, reorder_prob: 0.1, ..Default::default() };
    let (r, _) = replay(Scheme::TarocInfer, &sip, &link, false);
    assert_eq!(r.undetected, 0);
    assert!(r.delivered > r.packets * 4 / 5, "{r:?}");
}

#[test]
fn a_syn_ack_takes_its_addresses_from_the_syn_it_answers() {
    for ipv6 in [false, true] {
        let flow = sip_over_tcp(1, FlowOptions { ipv6, ..Default::default() });
        // The SYN-ACK's IR whole, from a compressor that holds nothing.
        let whole = Compressor::new(CompressorConfig::with_mode(Mode::O)).compress(&flow[1].1, &mut Vec::new());
        let whole = whole.unwrap().header_len;
        // Wired: the SYN-ACK goes as an IR-REV, ports and flow label
        // beside the dynamic chain, and comes back byte for byte.
        let mut link = Link::new();
        assert_eq!(link.send(0, &flow[0].1, false).1.unwrap(), flow[0].1);
        let mut wire = Vec::new();
        let sent = link.ends[1].0.compress(&flow[1].1, &mut wire).unwrap();
        assert_eq!((sent.kind, wire[0]), (PacketKind::Ir, taroc::format::TYPE_IR_REV), "IPv6 {ipv6}");
        assert!(sent.header_len <= whole - if ipv6 { 33 } else { 8 }, "IPv6 {ipv6}: {}", sent.header_len);
        let mut out = Vec::new();
        link.ends[1].1.decompress(&wire, &mut out).unwrap();
        assert_eq!(out, flow[1].1);

        // A decompressor that never heard of the SYN refuses it and asks
        // for the static chain, which the next packet brings whole.
        let mut link = Link::new();
        let mut wire = Vec::new();
        link.ends[0].0.compress(&flow[0].1, &mut wire).unwrap();
        // What the forward compressor sent is not told to the backward
        // decompressor.
        assert!(link.ends[0].0.poll_crossed().is_some());
        let mut out = Vec::new();
        link.ends[0].1.decompress(&wire, &mut out).unwrap();
        if let Some(x) = link.ends[0].1.poll_crossed() {
            link.ends[1].0.note_reverse(&x);
        }
        let mut wire = Vec::new();
        link.ends[1].0.compress(&flow[1].1, &mut wire).unwrap();
        assert_eq!(wire[0], taroc::format::TYPE_IR_REV);
        assert!(matches!(link.ends[1].1.decompress(&wire, &mut Vec::new()), Err(DecompressError::NoStaticContext(0))));
        let f = link.ends[1].1.poll_feedback().expect("a STATIC-NACK");
        assert_eq!(f.kind, FeedbackKind::StaticNack);
        let mut b = Vec::new();
        f.emit(&mut b);
        link.ends[1].0.handle_feedback(&b).unwrap();
        let (_, again) = link.send(1, &flow[1].1, false);
        assert_eq!(again.unwrap(), flow[1].1, "IPv6 {ipv6}: the SYN-ACK again, whole");
    }
}
