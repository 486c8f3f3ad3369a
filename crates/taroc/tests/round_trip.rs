//! Byte-identical round trips of synthesised flows through TAROC in every
//! mode and through the baselines, and the state machine's reactions
//! (long jumps, NACKs, R-mode's VSW, several flows).

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use common::{run_scheme, run_taroc, run_taroc_with, Queue, Rng};
use taroc::synth::{bulk_transfer, sip_over_tcp, Dir, FlowBuilder, FlowOptions, IpIdStyle};
use taroc::{
    Compressor, CompressorConfig, CompressorState, Decompressor, DecompressorConfig, FeedbackKind, Mode, PacketKind,
    Scheme,
};

const MODES: [Mode; 3] = [Mode::U, Mode::O, Mode::R];

fn no_faults() -> impl FnMut(Dir, &mut Queue) {
    |_, _| {}
}

#[test]
fn bulk_transfer_with_growing_cwnd_and_retransmissions_round_trips_in_every_mode() {
    let flow = bulk_transfer(1500, 1460, 61, FlowOptions::default());
    for mode in MODES {
        let o = run_taroc(mode, &flow, 1, &mut no_faults());
        assert_eq!((o.delivered, o.dropped, o.corrupted), (flow.len(), 0, 0), "{mode:?}: {o:?}");
        // Measured 9.2–10.3 bytes (timestamps on every segment), from 52.8.
        assert!(o.mean_header() < 11.0, "{mode:?}: mean header {:.2} of {o:?}", o.mean_header());
        assert!(o.ir_dyn + o.ir < flow.len() / 20, "{mode:?}: {o:?}");
    }
}

#[test]
fn sip_over_tcp_round_trips_in_every_mode() {
    let flow = sip_over_tcp(40, FlowOptions::default());
    for mode in MODES {
        let o = run_taroc(mode, &flow, 1, &mut no_faults());
        assert_eq!((o.delivered, o.dropped, o.corrupted), (flow.len(), 0, 0), "{mode:?}: {o:?}");
        // Short SIP flows keep the handshake in the VSW for long: measured
        // 13.7–17.9 bytes.
        assert!(o.mean_header() < 19.0, "{mode:?}: mean header {:.2}", o.mean_header());
    }
}

#[test]
fn every_ip_id_style_and_no_options_round_trip() {
    for ip_id in [IpIdStyle::Sequential, IpIdStyle::Zero, IpIdStyle::Random] {
        for (timestamps, sack) in [(false, false), (true, true)] {
            let opts = FlowOptions { timestamps, sack, ip_id, seed: 7, ..Default::default() };
            let mut flow = bulk_transfer(300, 536, 41, opts);
            flow.extend(sip_over_tcp(5, opts));
            for mode in MODES {
                let o = run_taroc(mode, &flow, 1, &mut no_faults());
                assert_eq!((o.delivered, o.corrupted), (flow.len(), 0), "{ip_id:?} ts={timestamps} {mode:?}: {o:?}");
            }
        }
    }
}

#[test]
fn bulk_data_reaches_second_order_and_few_bytes() {
    let flow = bulk_transfer(400, 1460, 0, FlowOptions { timestamps: false, ..Default::default() });
    let mut c = Compressor::new(CompressorConfig::with_mode(Mode::U));
    let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::U));
    let (mut so, mut bytes, mut n) = (0, 0, 0);
    for (_, p) in flow.iter().filter(|(dir, _)| *dir == Dir::Forward).skip(50) {
        let mut wire = Vec::new();
        let r = c.compress(p, &mut wire).unwrap();
        let mut back = Vec::new();
        d.decompress(&wire, &mut back).unwrap();
        assert_eq!(&back, p);
        so += (r.state == CompressorState::So) as usize;
        bytes += r.header_len;
        n += 1;
    }
    assert!(so > n * 9 / 10, "{so} of {n} in SO");
    assert!((bytes as f64 / n as f64) <= 7.0, "mean {}", bytes as f64 / n as f64);
}

#[test]
fn msn_scaled_sequence_numbers_decode_against_any_reference_in_the_vsw() {
    // Full-sized segments without timestamps, a segment lost upstream every
    // 41: SEQ is sent as bits of m − MSN, which stays constant between
    // losses however long the VSW is: 3 bits in the compact format, 4 in
    // the short one (the segments with PSH).
    let flow = bulk_transfer(600, 1460, 41, FlowOptions { timestamps: false, ..Default::default() });
    let data: Vec<&Vec<u8>> = flow.iter().filter(|(d, _)| *d == Dir::Forward).map(|(_, p)| p).collect();
    let mut c = Compressor::new(CompressorConfig::with_mode(Mode::U));
    let wires: Vec<(Vec<u8>, usize)> = data
        .iter()
        .map(|p| {
            let mut wire = Vec::new();
            let r = c.compress(p, &mut wire).unwrap();
            (wire, r.header_len)
        })
        .collect();
    // Compact-format packets (01), and short-format ones (00) whose SS
    // selects the MSN-scaled encoding (01).
    let compact: Vec<usize> = (0..wires.len()).filter(|&i| wires[i].0[0] >> 6 == 0b01).collect();
    let short: Vec<usize> = (0..wires.len()).filter(|&i| wires[i].0[0] >> 6 == 0 && wires[i].0[1] >> 6 == 1).collect();
    assert!(compact.len() > data.len() * 3 / 5, "{} of {}", compact.len(), data.len());
    assert!(compact.len() + short.len() > data.len() * 3 / 4, "{} + {} of {}", compact.len(), short.len(), data.len());
    assert!(compact.iter().all(|&i| wires[i].1 == 4), "a full-sized segment is 4 octets");
    assert!(short.iter().all(|&i| wires[i].1 == 5), "one with PSH is 5 octets");
    // A decompressor that missed a run of packets decodes the rest.
    for skip in [1usize, 7, 25] {
        let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::U));
        let mut emitted = 0;
        for (i, (wire, _)) in wires.iter().enumerate() {
            if (300..300 + skip).contains(&i) {
                continue;
            }
            let mut back = Vec::new();
            d.decompress(wire, &mut back).unwrap_or_else(|e| panic!("packet {i} after skipping {skip}: {e}"));
            assert_eq!(&back, data[i]);
            emitted += 1;
        }
        assert_eq!(emitted, data.len() - skip);
    }
    // A damaged m − MSN field fails verification: nothing is emitted. The
    // compact format's 3 bits are bits 4..7 of octet 1 (after 2 of type, 6
    // of MSN, 3 of CRC and D); the short format's 4 are the low bits of
    // octet 2 (after 16 of base and 4 of MSN).
    for (indices, octet, masks) in [(&compact, 1, &[0x08, 0x04, 0x02][..]), (&short, 2, &[0x08, 0x04, 0x02, 0x01])] {
        let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::U));
        let at = *indices.iter().find(|&&i| i > 300).unwrap();
        for (wire, _) in &wires[..at] {
            d.decompress(wire, &mut Vec::new()).unwrap();
        }
        for mask in masks {
            let mut damaged = wires[at].0.clone();
            damaged[octet] ^= mask;
            let mut back = Vec::new();
            assert!(d.decompress(&damaged, &mut back).is_err(), "octet {octet} mask {mask:#x}");
            assert!(back.is_empty());
        }
        let mut back = Vec::new();
        d.decompress(&wires[at].0, &mut back).unwrap();
        assert_eq!(&back, data[at]);
    }
}

#[test]
fn one_packet_reordering_on_the_link_loses_nothing() {
    let flow = bulk_transfer(600, 1460, 0, FlowOptions::default());
    for mode in MODES {
        let mut swaps = 0;
        let mut link = |_: Dir, q: &mut Queue| {
            if q.len() == 4 {
                q.swap(1, 2);
                swaps += 1;
            }
        };
        let o = run_taroc(mode, &flow, 4, &mut link);
        assert!(swaps > 100);
        assert_eq!(o.corrupted, 0);
        // A swap of two IR/IR-DYN-era packets may cost one; nothing else.
        assert!(o.dropped <= 2, "{mode:?}: {o:?}");
    }
}

#[test]
fn losses_on_the_link_never_corrupt_and_the_context_recovers() {
    let flow = bulk_transfer(3000, 1460, 113, FlowOptions::default());
    for mode in MODES {
        let mut rng = Rng(42);
        let mut lost = 0;
        let mut link = |_: Dir, q: &mut Queue| {
            q.retain(|_| {
                let keep = !rng.chance(0.02);
                lost += (!keep) as usize;
                keep
            });
        };
        let o = run_taroc(mode, &flow, 1, &mut link);
        assert_eq!(o.corrupted, 0);
        assert!(lost > 30);
        // Context damage: packets that arrived but could not be decompressed.
        let damaged = o.dropped;
        assert!(damaged <= lost, "{mode:?}: {damaged} damaged by {lost} losses: {o:?}");
        assert_eq!(o.delivered + o.dropped + lost, flow.len());
    }
}

#[test]
fn baselines_round_trip() {
    let mut flow = bulk_transfer(500, 1460, 37, FlowOptions::default());
    flow.extend(sip_over_tcp(10, FlowOptions { seed: 3, ..Default::default() }));
    for scheme in [Scheme::Vj, Scheme::None, Scheme::Ideal] {
        let o = run_scheme(scheme, &flow);
        assert_eq!((o.delivered, o.dropped, o.corrupted), (flow.len(), 0, 0), "{scheme:?}: {o:?}");
    }
    let none = run_scheme(Scheme::None, &flow);
    // RFC 1144 sends a packet whose options changed uncompressed, so with
    // timestamps VJ compresses nothing; without options it does.
    let plain = bulk_transfer(500, 1460, 37, FlowOptions { timestamps: false, sack: false, ..Default::default() });
    let vj = run_scheme(Scheme::Vj, &plain);
    let ideal = run_scheme(Scheme::Ideal, &flow);
    assert_eq!(none.header_bytes_after, none.header_bytes_before);
    assert_eq!(ideal.header_bytes_after, 4 * flow.len());
    assert!(vj.mean_header() < none.mean_header() / 3.0, "VJ {:.2}", vj.mean_header());
}

#[test]
fn vj_without_options_compresses_to_a_few_bytes_and_loses_context_after_a_loss() {
    let opts = FlowOptions { timestamps: false, sack: false, ..Default::default() };
    let flow: Vec<_> = bulk_transfer(200, 1460, 0, opts).into_iter().filter(|(d, _)| *d == Dir::Forward).collect();
    let (mut c, mut d) = (taroc::VjCompressor::new(), taroc::VjDecompressor::new());
    let mut sizes = Vec::new();
    let mut after_loss = Vec::new();
    for (i, (_, p)) in flow.iter().enumerate() {
        let mut wire = Vec::new();
        sizes.push(c.compress(p, &mut wire).unwrap());
        if i == 100 {
            continue; // lost on the link, unnoticed
        }
        let mut back = Vec::new();
        let ok = d.decompress(&wire, &mut back).is_ok();
        if i > 100 {
            after_loss.push(ok);
        } else {
            assert!(ok && back == *p);
        }
    }
    // All but the handshake and the FIN: changes, checksum, one delta.
    assert!(sizes[2..sizes.len() - 2].iter().all(|&s| s <= 5), "{sizes:?}");
    // RFC 1144's weakness the draft measures: every later delta applies to
    // the wrong header; nothing passes until an UNCOMPRESSED_TCP packet.
    // Only the FIN, sent as TYPE_IP, gets through.
    let n = after_loss.len();
    assert!(after_loss[..n - 2].iter().all(|ok| !ok), "{after_loss:?}");
    assert_eq!(after_loss[n - 2..], [true, false]);
}

#[test]
fn a_long_jump_is_sent_as_ir_dyn_and_restarts_the_trackers() {
    let mut f = FlowBuilder::new(FlowOptions::default(), 1000, 2000);
    f.handshake();
    for _ in 0..30 {
        f.send(Dir::Forward, 0x10, &[b'x'; 500], &[]);
    }
    let jump_at = f.packets.len();
    // 2 MB further on (a sequence number the window cannot explain).
    let far = f.send(Dir::Forward, 0x10, &[], &[]).wrapping_add(2_000_000);
    f.packets.pop();
    f.send_at(Dir::Forward, far, 0x10, &[b'y'; 500], &[]);
    let mut c = Compressor::new(CompressorConfig::with_mode(Mode::U));
    let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::U));
    let mut kinds = Vec::new();
    for (_, p) in f.packets.iter().filter(|(dir, _)| *dir == Dir::Forward) {
        let mut wire = Vec::new();
        let r = c.compress(p, &mut wire).unwrap();
        kinds.push((r.kind, r.state));
        let mut back = Vec::new();
        d.decompress(&wire, &mut back).unwrap();
        assert_eq!(&back, p);
    }
    let forward_before = f.packets[..jump_at].iter().filter(|(d, _)| *d == Dir::Forward).count();
    assert_eq!(kinds[forward_before], (PacketKind::IrDyn, CompressorState::Ir), "{kinds:?}");
    assert_eq!(kinds[forward_before - 1].0, PacketKind::Co);
    assert_eq!(c.windows(0).unwrap()[0].0, 4 * 1460); // cwnd_seq back at IW
}

#[test]
fn o_mode_nack_returns_the_compressor_to_ir_and_r_mode_vsw_shrinks_only_by_ack() {
    let flow: Vec<_> =
        bulk_transfer(300, 1460, 0, FlowOptions::default()).into_iter().filter(|(d, _)| *d == Dir::Forward).collect();
    // O-mode: a packet whose header fails its CRC makes the decompressor
    // NACK; the next packet is an IR-DYN.
    let mut c = Compressor::new(CompressorConfig::with_mode(Mode::O));
    let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::O));
    let mut saw_nack = false;
    let mut kinds = Vec::new();
    for (i, (_, p)) in flow.iter().enumerate() {
        let mut wire = Vec::new();
        let sent = c.compress(p, &mut wire).unwrap();
        kinds.push(sent.kind);
        if i == 150 {
            // Header damage: the last octet of the compressed header is the
            // TCP checksum's, which the CRC covers.
            wire[sent.header_len - 1] ^= 0x01;
        }
        let mut back = Vec::new();
        let r = d.decompress(&wire, &mut back);
        assert_eq!(r.is_ok(), i != 150);
        while let Some(fb) = d.poll_feedback() {
            let mut b = Vec::new();
            fb.emit(&mut b);
            if c.handle_feedback(&b).unwrap() == FeedbackKind::Nack {
                saw_nack = true;
                assert_eq!(c.state(0), Some(CompressorState::Ir));
            }
        }
    }
    assert!(saw_nack);
    assert_eq!(kinds[151], PacketKind::IrDyn);

    // R-mode: without ACKs the VSW only grows (to its cap); with them it stays short.
    let cc = CompressorConfig { max_vsw: 1000, ..CompressorConfig::with_mode(Mode::R) };
    let mut c = Compressor::new(cc);
    let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::R));
    for (_, p) in &flow {
        let mut wire = Vec::new();
        c.compress(p, &mut wire).unwrap();
        d.decompress(&wire, &mut Vec::new()).unwrap();
    }
    assert_eq!(c.vsw_len(0), flow.len());
    let mut c = Compressor::new(cc);
    let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::R));
    let mut acks = 0;
    for (_, p) in &flow {
        let mut wire = Vec::new();
        c.compress(p, &mut wire).unwrap();
        d.decompress(&wire, &mut Vec::new()).unwrap();
        while let Some(fb) = d.poll_feedback() {
            let mut b = Vec::new();
            fb.emit(&mut b);
            acks += (c.handle_feedback(&b).unwrap() == FeedbackKind::Ack) as usize;
        }
    }
    assert!(acks > flow.len() / 5);
    assert!(c.vsw_len(0) <= 8, "VSW {}", c.vsw_len(0));
    assert_ne!(c.state(0), Some(CompressorState::Ir));
}

#[test]
fn several_flows_share_the_link_with_their_own_contexts() {
    let mut packets = Vec::new();
    let flows: Vec<_> =
        (0..20u64).map(|s| sip_over_tcp(3, FlowOptions { seed: s + 1, ..Default::default() })).collect();
    // Interleave them; 20 flows × 2 directions exceed 16 contexts, so
    // contexts are reused and IR re-sent.
    let longest = flows.iter().map(Vec::len).max().unwrap();
    for i in 0..longest {
        for (k, f) in flows.iter().enumerate() {
            if let Some((d, p)) = f.get(i) {
                let mut p = p.clone();
                // Distinct ports per flow.
                let port = 6000 + k as u16;
                let at = if *d == Dir::Forward { 20 } else { 22 };
                p[at..at + 2].copy_from_slice(&port.to_be_bytes());
                taroc::fix_checksums(&mut p).unwrap();
                packets.push((*d, p));
            }
        }
    }
    for mode in MODES {
        let o = run_taroc(mode, &packets, 1, &mut no_faults());
        assert_eq!((o.delivered, o.corrupted, o.dropped), (packets.len(), 0, 0), "{mode:?}");
        assert!(o.ir >= 40, "{o:?}");
    }
    // With 16 flows or fewer, one IR per flow and direction.
    let few: Vec<_> = packets
        .iter()
        .filter(|(d, p)| {
            let at = if *d == Dir::Forward { 20 } else { 22 };
            u16::from_be_bytes([p[at], p[at + 1]]) < 6008
        })
        .cloned()
        .collect();
    let o = run_taroc_with(CompressorConfig::default(), DecompressorConfig::default(), &few, 1, &mut no_faults());
    assert_eq!(o.delivered, few.len());
    assert_eq!(o.ir, 16);
}

/// The data direction of a bulk transfer of `segments` segments of `mss`
/// octets, from the first packet after its SYN.
fn data_segments_without_syn(segments: usize, mss: usize) -> Vec<(Dir, Vec<u8>)> {
    use taroc::packet::FLAG_SYN;
    bulk_transfer(segments, mss, 0, FlowOptions::default())
        .into_iter()
        .filter(|(d, p)| *d == Dir::Forward && taroc::Packet::parse(p).unwrap().header.tcp_flags & FLAG_SYN == 0)
        .collect()
}

#[test]
fn u_mode_recovers_when_the_first_ir_is_lost() {
    // Without feedback the compressor cannot learn that its first IR was
    // lost; the decompressor, with no static chain, refuses IR-DYN, so
    // the slow start's refreshes must carry the static chain (IR). The
    // flow is taken from its first data segment: had the SYN crossed the
    // link, its arrival would be known (§5.2.1.1).
    let flow = data_segments_without_syn(200, 1460);
    let mut c = Compressor::new(CompressorConfig::with_mode(Mode::U));
    let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::U));
    let mut first_delivered = None;
    let mut delivered = 0;
    let mut kinds = Vec::new();
    for (i, (_, p)) in flow.iter().enumerate() {
        let mut wire = Vec::new();
        kinds.push(c.compress(p, &mut wire).unwrap().kind);
        if i == 0 {
            continue; // the first IR is lost on the link
        }
        let mut back = Vec::new();
        if d.decompress(&wire, &mut back).is_ok() {
            assert_eq!(&back, p);
            first_delivered.get_or_insert(i);
            delivered += 1;
        }
    }
    let at = first_delivered.expect("the decompressor never got a context");
    // The next refresh of the slow start (F_PERIOD 1, 2, 4, ...).
    assert!(at <= 3, "first packet delivered: {at}; kinds {kinds:?}");
    assert_eq!(kinds[at], PacketKind::Ir, "{kinds:?}");
    // From then on nothing is lost.
    assert_eq!(delivered, flow.len() - at);
}

#[test]
fn a_lost_first_ir_costs_no_more_packets_in_o_and_r_mode() {
    // The first IR is lost and the next packets leave before any feedback
    // can return (TCP's initial window): they carry the static chain, so
    // the decompressor takes them. Once feedback shows that the static
    // chain arrived, packets are compressed again.
    let flow: Vec<_> =
        bulk_transfer(40, 536, 0, FlowOptions::default()).into_iter().filter(|(d, _)| *d == Dir::Forward).collect();
    for mode in [Mode::O, Mode::R] {
        let config = CompressorConfig { mtu: 576, ..CompressorConfig::with_mode(mode) };
        let mut c = Compressor::new(config);
        let mut d = Decompressor::new(DecompressorConfig::with_mode(mode));
        let mut held = Vec::new();
        let mut kinds = Vec::new();
        for (i, (_, p)) in flow.iter().enumerate() {
            let mut wire = Vec::new();
            kinds.push(c.compress(p, &mut wire).unwrap().kind);
            if i == 0 {
                continue; // lost on the link
            }
            let mut back = Vec::new();
            d.decompress(&wire, &mut back).unwrap_or_else(|e| panic!("{mode:?} packet {i}: {e}"));
            assert_eq!(&back, p);
            while let Some(f) = d.poll_feedback() {
                let mut b = Vec::new();
                f.emit(&mut b);
                held.push(b);
            }
            // The feedback of the first four arrives after the fourth.
            if i >= 3 {
                for b in held.drain(..) {
                    c.handle_feedback(&b).unwrap();
                }
            }
        }
        // MSS 536: an initial window of 4 packets, all IR.
        assert!(kinds[..4].iter().all(|&k| k == PacketKind::Ir), "{mode:?} {kinds:?}");
        assert_ne!(kinds[4], PacketKind::Ir, "{mode:?} {kinds:?}");
        assert!(kinds[20..].iter().all(|&k| k == PacketKind::Co), "{mode:?} {kinds:?}");
    }
}

#[test]
fn o_and_r_mode_refreshes_carry_the_static_chain_until_it_is_acknowledged() {
    // The initial window's IRs are all lost and no feedback comes back
    // (a lossy return link): the compression slow-start's refreshes must
    // carry the static chain, or the decompressor refuses every one of
    // them (§5.4.1) and nothing repairs it. The flow is taken from its
    // first data segment: had the SYN crossed the link, its arrival would
    // be known (§5.2.1.1).
    let flow = data_segments_without_syn(60, 536);
    for mode in [Mode::O, Mode::R] {
        let config = CompressorConfig { mtu: 576, ..CompressorConfig::with_mode(mode) };
        let mut c = Compressor::new(config);
        let mut d = Decompressor::new(DecompressorConfig::with_mode(mode));
        let mut kinds = Vec::new();
        let mut first_delivered = None;
        for (i, (_, p)) in flow.iter().enumerate() {
            let mut wire = Vec::new();
            let kind = c.compress(p, &mut wire).unwrap().kind;
            kinds.push(kind);
            if i < 4 {
                continue; // the initial window's IRs, lost on the link
            }
            let mut back = Vec::new();
            if d.decompress(&wire, &mut back).is_ok() {
                assert_eq!(&back, p);
                first_delivered.get_or_insert(i);
            }
            while d.poll_feedback().is_some() {} // lost on the way back
        }
        assert!(!kinds.contains(&PacketKind::IrDyn), "{mode:?} {kinds:?}");
        let at = first_delivered.unwrap_or_else(|| panic!("{mode:?}: no context ever; {kinds:?}"));
        assert_eq!(kinds[at], PacketKind::Ir, "{mode:?} {kinds:?}");
    }
}

/// Flips one bit of the last payload octet: the compressed header is
/// intact, only the TCP checksum can see the damage.
fn damage_payload(wire: &mut [u8]) {
    if let Some(last) = wire.last_mut() {
        *last ^= 0x10;
    }
}

#[test]
fn damaged_payloads_ask_for_no_refresh_until_n_of_them_stop_the_context() {
    // A packet whose header passes its CRC but whose payload fails the TCP
    // checksum is dropped without a NACK: its header shows the context is
    // in step, and the TCP sender resends the segment. Such packets still
    // count towards N (§5.4.2 c), since the reference stands still while
    // they arrive: the N-th in a row sends the context to No Context with
    // one NACK (O- and R-mode), and the compressor's refresh restores it.
    let flow: Vec<_> =
        bulk_transfer(160, 1460, 0, FlowOptions::default()).into_iter().filter(|(d, _)| *d == Dir::Forward).collect();
    for mode in MODES {
        let dconfig = DecompressorConfig::with_mode(mode);
        let n = dconfig.max_failures as usize;
        let mut c = Compressor::new(CompressorConfig::with_mode(mode));
        let mut d = Decompressor::new(dconfig);
        // A run one short of N, then a run of N.
        let short = 40..40 + n - 1;
        let long = 100..100 + n;
        let mut nacks = Vec::new();
        for (i, (_, p)) in flow.iter().enumerate() {
            let mut wire = Vec::new();
            c.compress(p, &mut wire).unwrap();
            let mut back = Vec::new();
            let r = if short.contains(&i) || long.contains(&i) {
                damage_payload(&mut wire);
                let e = d.decompress(&wire, &mut back).unwrap_err();
                assert_eq!(e, taroc::DecompressError::PayloadDamaged, "{mode:?} packet {i}");
                assert!(back.is_empty());
                None
            } else {
                Some(d.decompress(&wire, &mut back))
            };
            if i == short.end {
                // The context stayed Full through the short run.
                r.unwrap().unwrap_or_else(|e| panic!("{mode:?} packet {i}: {e}"));
                assert_eq!(&back, p, "{mode:?} packet {i}");
            }
            if i == long.end - 1 {
                assert_eq!(d.state(0), taroc::DecompressorState::NoContext, "{mode:?}");
            }
            while let Some(f) = d.poll_feedback() {
                if f.kind == FeedbackKind::Nack {
                    nacks.push(i);
                }
                let mut b = Vec::new();
                f.emit(&mut b);
                c.handle_feedback(&b).unwrap();
            }
        }
        let expected = if mode == Mode::U { vec![] } else { vec![long.end - 1] };
        assert_eq!(nacks, expected, "{mode:?}");
    }
}

#[test]
fn an_ir_with_a_damaged_payload_counts_no_failure() {
    // The IR moved the reference and reset the failure count, so N - 1
    // payload-damaged packets after it leave the context Full. Here the
    // IR is U-mode's periodic refresh, well past the slow start.
    let flow: Vec<_> =
        bulk_transfer(700, 1460, 0, FlowOptions::default()).into_iter().filter(|(d, _)| *d == Dir::Forward).collect();
    let dconfig = DecompressorConfig::with_mode(Mode::U);
    let n = dconfig.max_failures as usize;
    let mut c = Compressor::new(CompressorConfig::with_mode(Mode::U));
    let mut d = Decompressor::new(dconfig);
    let mut damaged_from = None;
    let mut checked = false;
    for (i, (_, p)) in flow.iter().enumerate() {
        let mut wire = Vec::new();
        let kind = c.compress(p, &mut wire).unwrap().kind;
        if damaged_from.is_none() && i >= 100 && kind == PacketKind::Ir {
            damaged_from = Some(i);
        }
        let mut back = Vec::new();
        match damaged_from {
            Some(from) if i < from + n => {
                if i > from {
                    assert_eq!(kind, PacketKind::Co, "packet {i}: the N - 1 packets after the IR are compressed");
                }
                damage_payload(&mut wire);
                let e = d.decompress(&wire, &mut back).unwrap_err();
                assert_eq!(e, taroc::DecompressError::PayloadDamaged, "packet {i}");
                assert_eq!(d.state(0), taroc::DecompressorState::FullContext, "packet {i}");
            }
            _ => {
                d.decompress(&wire, &mut back).unwrap_or_else(|e| panic!("packet {i}: {e}"));
                assert_eq!(&back, p, "packet {i}");
                checked |= damaged_from.is_some();
            }
        }
    }
    assert!(damaged_from.is_some() && checked, "no periodic IR in the flow");
}

#[test]
fn an_ir_with_a_damaged_payload_still_repairs_the_context() {
    // The IR's CRC-8 covers its header, which is all the context takes
    // from it: a refresh repairs a decompressor even when the segment it
    // rode on is damaged. Here the first IR is lost and the refresh that
    // follows arrives with its payload damaged; the packets after it are
    // delivered at once.
    let flow = data_segments_without_syn(60, 1460);
    let mut c = Compressor::new(CompressorConfig::with_mode(Mode::U));
    let mut d = Decompressor::new(DecompressorConfig::with_mode(Mode::U));
    let mut kinds = Vec::new();
    let mut repaired_by = None;
    for (i, (_, p)) in flow.iter().enumerate() {
        let mut wire = Vec::new();
        let kind = c.compress(p, &mut wire).unwrap().kind;
        kinds.push(kind);
        if i == 0 {
            continue; // the first IR is lost on the link
        }
        let mut back = Vec::new();
        if kind == PacketKind::Ir && repaired_by.is_none() {
            damage_payload(&mut wire);
            let e = d.decompress(&wire, &mut back).unwrap_err();
            assert_eq!(e, taroc::DecompressError::PayloadDamaged, "packet {i}");
            repaired_by = Some(i);
            continue;
        }
        let r = d.decompress(&wire, &mut back);
        if repaired_by.is_some() {
            r.unwrap_or_else(|e| panic!("packet {i} after the damaged IR: {e}; kinds {kinds:?}"));
            assert_eq!(&back, p);
        } else {
            assert!(r.is_err(), "packet {i} before any IR arrived");
        }
    }
    // The slow start's next refresh (F_PERIOD 1, 2, ...).
    assert!(matches!(repaired_by, Some(1..=3)), "{repaired_by:?}: {kinds:?}");
}

/// A download's client side, compressed alone by a compressor of `config`
/// with no feedback: its SYN, the handshake's ACK, a request, then an
/// ACK of each of the server's `segments` segments of `len` octets.
/// Returns the header sizes and the VSW's length after each packet, and
/// whether the client's ACK numbers lie 2^31 or more from 0.
fn download_client_side(
    config: CompressorConfig,
    seed: u64,
    segments: usize,
    len: usize,
) -> (Vec<usize>, Vec<usize>, bool) {
    use taroc::packet::{FLAG_ACK, FLAG_SYN};
    let mut f = FlowBuilder::new(FlowOptions { seed, ..FlowOptions::default() }, 40000, 80);
    f.send(Dir::Forward, FLAG_SYN, &[], &[]);
    f.send(Dir::Backward, FLAG_SYN | FLAG_ACK, &[], &[]);
    f.send(Dir::Forward, FLAG_ACK, &[], &[]);
    f.send(Dir::Forward, FLAG_ACK, b"GET / HTTP/1.1\r\n\r\n", &[]);
    for _ in 0..segments {
        f.tick(1);
        f.send(Dir::Backward, FLAG_ACK, &vec![b'x'; len], &[]);
        f.send(Dir::Forward, FLAG_ACK, &[], &[]);
    }
    let mut c = Compressor::new(config);
    let (mut headers, mut vsw, mut high) = (Vec::new(), Vec::new(), false);
    for (d, p) in &f.packets {
        if *d == Dir::Forward {
            let mut wire = Vec::new();
            let out = c.compress(p, &mut wire).unwrap();
            headers.push(out.header_len);
            vsw.push(c.vsw_len(out.cid));
            high = taroc::Packet::parse(p).unwrap().header.ack >= 1 << 31;
        }
    }
    (headers, vsw, high)
}

/// O-mode with the draft's W alone bounding the VSW (no optimistic
/// approach), as without feedback.
fn draft_w_only() -> CompressorConfig {
    CompressorConfig {
        optimistic_window: usize::MAX,
        optimistic_settle: usize::MAX,
        ..CompressorConfig::with_mode(Mode::O)
    }
}

#[test]
fn a_syn_leaves_the_window_with_the_first_ack_that_w_passes() {
    // A SYN carries no ACK number (its field is 0 here): it is older than
    // every ACK after it, so it must leave the VSW with the first of them
    // that W passes, wherever 0 lies from the ACK numbers. Kept, it holds
    // its options and every packet behind it in the VSW, and the client's
    // ACKs go in the general format; dropped at once, a decompressor whose
    // only reference is the SYN could no longer decode.
    let (mut high, mut low) = (None, None);
    for seed in 1..64 {
        let (headers, vsw, is_high) = download_client_side(draft_w_only(), seed, 300, 1448);
        let slot = if is_high { &mut high } else { &mut low };
        slot.get_or_insert((headers, vsw));
        if high.is_some() && low.is_some() {
            break;
        }
    }
    for (name, run) in [("ACKs 2^31 or more from 0", high), ("ACKs under 2^31", low)] {
        let (headers, vsw) = run.unwrap_or_else(|| panic!("no seed gave {name}"));
        // Past the first W (8 segments here) and well before the VSW's
        // cap of 128 packets would drop the SYN anyway.
        let tail = &headers[40..140];
        assert!(tail.iter().all(|&h| h <= 8), "{name}: the ACKs' headers {tail:?}");
        assert!(vsw.last().is_some_and(|&n| n < 64), "{name}: VSW {vsw:?}");
    }
    // While the ACKs move by less than W, nothing leaves, the SYN
    // included, past the VSW's floor of 8 packets.
    for seed in 1..64 {
        let (_, vsw, _) = download_client_side(draft_w_only(), seed, 20, 10);
        assert_eq!(vsw, (1..=vsw.len()).collect::<Vec<_>>(), "seed {seed}");
    }
}

#[test]
fn u_mode_takes_a_change_sent_in_optimistic_settle_packets_as_arrived() {
    // Without feedback the SYN's options would stay a reference for as
    // long as W holds it. In U-mode the VSW holds the last
    // `optimistic_window` packets, and a change of the option skeleton
    // (the SYN's options to the timestamps alone) leaves the older
    // references behind once `optimistic_settle` packets carried it.
    let config = CompressorConfig::with_mode(Mode::U);
    for seed in 1..16 {
        let (headers, vsw, _) = download_client_side(config, seed, 20, 10);
        assert!(vsw.iter().all(|&n| n <= config.optimistic_window), "seed {seed}: VSW {vsw:?}");
        // SYN, then the handshake's ACK and the request: the SYN is still
        // a reference until optimistic_settle packets without its options went.
        assert_eq!(vsw[..config.optimistic_settle], (1..=config.optimistic_settle).collect::<Vec<_>>(), "seed {seed}");
        assert_eq!(vsw[config.optimistic_settle], config.optimistic_settle, "seed {seed}: the SYN left: {vsw:?}");
        // From then on no packet carries the SYN's options, where the
        // draft's W alone still covers them.
        let (o_headers, o_vsw, _) = download_client_side(draft_w_only(), seed, 20, 10);
        let (u_tail, o_tail): (usize, usize) = (headers[8..].iter().sum(), o_headers[8..].iter().sum());
        assert!(u_tail < o_tail, "seed {seed}: U {u_tail} B, the draft's W alone {o_tail} B (VSW {o_vsw:?})");
    }
}
