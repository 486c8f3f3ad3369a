//! One link carrying every connection (`LinkConfig::shared`): the
//! connections share each direction's contexts, and a new connection's IR
//! replicates an earlier connection's context (IR-CR).

mod common;

use common::{capture, replay_exact};
use taroc::packet::{FLAG_ACK, FLAG_PSH};
use taroc::replay::{replay, LinkConfig};
use taroc::synth::{Dir, FlowBuilder, FlowOptions};
use taroc::{Mode, Scheme};

const SCHEMES: [Scheme; 4] =
    [Scheme::Taroc(Mode::U), Scheme::Taroc(Mode::O), Scheme::Taroc(Mode::R), Scheme::TarocInfer];

fn shared(ber: f64, seed: u64) -> LinkConfig {
    LinkConfig { shared: true, ber, seed, ..LinkConfig::default() }
}

/// Short connections one after the other between the same two hosts, as
/// a SIP UA that opens one per transaction does: a request, its response
/// and the close, each from a client port of its own.
fn short_connections(ipv6: bool) -> Vec<Vec<u8>> {
    (0..12u16)
        .flat_map(|i| {
            let mut f = FlowBuilder::new(FlowOptions { ipv6, seed: i as u64, ..Default::default() }, 40_000 + i, 5060);
            f.handshake();
            f.tick(5);
            f.send(Dir::Forward, FLAG_ACK | FLAG_PSH, &[b'R'; 480], &[]);
            f.tick(20);
            f.send(Dir::Backward, FLAG_ACK | FLAG_PSH, &[b'S'; 320], &[]);
            f.tick(40);
            f.send(Dir::Forward, FLAG_ACK, &[], &[]);
            f.close();
            f.tick(500);
            f.packets.into_iter().map(|(_, p)| p)
        })
        .collect()
}

#[test]
fn every_capture_round_trips_on_a_shared_link() {
    let sources = [
        ("http-small-any", capture("tests/data/http-small-any.pcapng")),
        ("sip-kamailio-long", capture("tests/data/sip-kamailio-long.pcapng")),
        ("sip-kamailio-short", capture("tests/data/sip-kamailio-short.pcapng")),
        ("sip-kamailio-ipv6", capture("tests/data/sip-kamailio-ipv6.pcapng")),
        ("sip-tcp-12calls", capture("tests/data/sip-tcp-12calls.pcapng")),
        ("short-connections", short_connections(false)),
        ("short-connections-ipv6", short_connections(true)),
    ];
    for (name, packets) in &sources {
        for scheme in SCHEMES.into_iter().chain([Scheme::Vj, Scheme::Iphc { twice: false }]) {
            let r = replay_exact(scheme, packets, &shared(0.0, 1));
            assert_eq!((r.delivered, r.undetected, r.context_damage), (r.packets, 0, 0), "{name} {scheme:?}");
        }
    }
}

#[test]
fn a_new_connection_replicates_an_earlier_ones_context() {
    // Short connections: each one's SYN and SYN-ACK go as IR-CRs, the
    // addresses and the SYN's options left to the earlier connection's
    // context. U-mode has no feedback to tell it the base arrived and
    // sends its IRs whole.
    let sources = [
        ("synthetic", short_connections(false)),
        ("synthetic IPv6", short_connections(true)),
        ("kamailio", capture("tests/data/sip-kamailio-short.pcapng")),
    ];
    for (name, packets) in sources {
        for scheme in [Scheme::Taroc(Mode::O), Scheme::Taroc(Mode::R), Scheme::TarocInfer] {
            let own = replay_exact(scheme, &packets, &LinkConfig::default()).mean_header_after();
            let one = replay_exact(scheme, &packets, &shared(0.0, 1)).mean_header_after();
            assert!(one < own - 0.5, "{name} {scheme:?}: {one:.2} B shared against {own:.2} B a link each");
        }
    }
}

#[test]
fn bit_errors_never_let_a_replicated_header_through() {
    let packets = [short_connections(false), short_connections(true), capture("tests/data/sip-kamailio-short.pcapng")];
    let mut damaged = 0;
    for flow in &packets {
        for scheme in SCHEMES {
            for seed in 1..=4 {
                for ber in [1e-3, 1e-4] {
                    let (r, _) = replay(scheme, flow, &shared(ber, seed), false);
                    assert_eq!(r.undetected, 0, "{scheme:?} BER {ber} seed {seed}: {r:?}");
                    damaged += r.link_damaged;
                }
            }
        }
    }
    assert!(damaged > 5_000, "{damaged} damaged packets");
}

#[test]
fn an_ir_cr_whose_base_the_decompressor_lacks_draws_a_static_nack_then_goes_whole() {
    use taroc::{Compressor, CompressorConfig, Decompressor, DecompressorConfig, FeedbackKind};
    let packets = short_connections(false);
    let syns: Vec<&Vec<u8>> =
        packets.iter().filter(|p| taroc::Packet::parse(p).unwrap().header.tcp_flags == 0x02).take(2).collect();
    let mut c = Compressor::new(CompressorConfig::with_mode(Mode::O));
    let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::O));
    let feed = |c: &mut Compressor, d: &mut Decompressor| {
        while let Some(f) = d.poll_feedback() {
            let mut b = Vec::new();
            f.emit(&mut b);
            c.handle_feedback(&b).unwrap();
        }
    };
    let mut wire = Vec::new();
    c.compress(syns[0], &mut wire).unwrap();
    d.decompress(&wire, &mut Vec::new()).unwrap();
    feed(&mut c, &mut d);
    // The second connection's SYN replicates the first's context; a
    // decompressor that lost it (a fresh one here) refuses it.
    let mut wire = Vec::new();
    c.compress(syns[1], &mut wire).unwrap();
    assert_eq!(wire[1], taroc::format::TYPE_IR_CR);
    let mut fresh = Decompressor::new(DecompressorConfig::with_mode(Mode::O));
    assert!(fresh.decompress(&wire, &mut Vec::new()).is_err());
    let f = fresh.poll_feedback().expect("a STATIC-NACK");
    assert_eq!(f.kind, FeedbackKind::StaticNack);
    let mut b = Vec::new();
    f.emit(&mut b);
    c.handle_feedback(&b).unwrap();
    // The SYN again (TCP resends it): whole this time.
    let mut wire = Vec::new();
    c.compress(syns[1], &mut wire).unwrap();
    assert_eq!(wire[1], taroc::format::TYPE_IR);
    let mut out = Vec::new();
    fresh.decompress(&wire, &mut out).unwrap();
    assert_eq!(&out, syns[1]);
}
