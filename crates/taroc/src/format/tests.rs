use super::*;
use crate::crc::*;
use crate::packet::RawOptions;
use crate::packet::TcpOption;

#[test]
fn crc16_check_value() {
    // CRC-16/CCITT-FALSE of "123456789" (odd: the last octet alone),
    // and of an even length.
    assert_eq!(crc16(b"123456789"), 0x29b1);
    assert_eq!(crc16(b"12345678"), 0xa12b);
    // fold_checksum's octet by octet parts sum to the CRC-16 of the
    // values' octets.
    let mut h = crate::packet::TcpIpHeader::new([1, 2, 3, 4], 5, [6, 7, 8, 9], 10);
    let mut x = 0x9e37_79b9u32;
    for _ in 0..2000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let (msn, strides) = (x as u16, ((x >> 3) as u16, (x >> 16) as u16));
        (h.tos, h.ip_id, h.flags_frag, h.ttl) = ((x >> 7) as u8, (x >> 11) as u16, (x >> 5) as u16, (x >> 24) as u8);
        let mut d = Vec::new();
        for v in [&msn.to_be_bytes()[..], &[h.tos], &h.ip_id.to_be_bytes(), &h.flags_frag.to_be_bytes(), &[h.ttl]] {
            d.extend_from_slice(v);
        }
        d.extend_from_slice(&strides.0.to_be_bytes());
        d.extend_from_slice(&strides.1.to_be_bytes());
        assert_eq!(fold_checksum(0x1234, &h, msn, strides), 0x1234 ^ crc16(&d));
    }
}

#[test]
fn rohc_crc_check_values() {
    // RFC 3095 §5.9.2's CRCs, "123456789" (CRC-3/ROHC, CRC-7/ROHC, CRC-8/ROHC).
    assert_eq!((crc3(b"123456789"), crc7(b"123456789"), crc8(b"123456789")), (0x6, 0x53, 0xd0));
    // Four octets a step and one at a time agree at every length.
    let data: Vec<u8> = (0..64u32).map(|i| (i.wrapping_mul(2654435761) >> 11) as u8).collect();
    for (t, init) in [(&CRC3_TABLE, 0x7), (&CRC7_TABLE, 0x7f), (&CRC8_TABLE, 0xff)] {
        for len in 0..data.len() {
            let one_at_a_time = data[..len].iter().fold(init, |c, &b| t[0][(c ^ b) as usize]);
            assert_eq!(crc_with(t, init, &data[..len]), one_at_a_time, "{len} octets");
        }
    }
    // CRC-3's and CRC-7's folds by 7 octets agree with the octet at a
    // time at every length and alignment.
    let data: Vec<u8> = (0..300u32).map(|i| (i.wrapping_mul(2246822519) >> 9) as u8).collect();
    for (crc, t, init) in [(crc3 as fn(&[u8]) -> u8, &CRC3_TABLE, 0x7), (crc7, &CRC7_TABLE, 0x7f)] {
        for start in 0..8 {
            for len in 0..data.len() - start {
                let part = &data[start..start + len];
                let one_at_a_time = part.iter().fold(init, |c, &b| t[0][(c ^ b) as usize]);
                assert_eq!(crc(part), one_at_a_time, "{len} octets from {start}");
            }
        }
    }
}

/// A bulk sender's segment: SEQ as `seq`, timestamps as `ts`, nothing
/// else changing.
fn bulk_segment(seq: (u8, u32), ts: [(u8, u32); 2]) -> CoPacket<'static> {
    CoPacket { msn: (0x59, 7), ip_id: (4, 0), seq, ..CoPacket::short_family(0, ts, 0xbeef, crc3(b"header"), b"data") }
}

#[test]
fn short_format_round_trips_in_two_octets_and_the_checksum() {
    let co = bulk_segment((8, 0xa), [(4, 0x15), (4, 0x2a)]);
    let mut out = Vec::new();
    co.emit(OptShape { ts: true, ipv6: false }, b"header", &mut out).unwrap();
    // 16 bits of base, 4 of MSN, 4 of MSN-scaled SEQ, 16 of timestamps,
    // 16 of checksum.
    assert_eq!(out.len(), 7 + 4);
    assert_eq!(co.header_len(OptShape { ts: true, ipv6: false }), Ok(7));
    assert_eq!(out[0] >> 6, 0b00);
    // The general format has no MSN-scaled ACK.
    let general = CoPacket { seq: (1, 0x1a), ack: (8, 1), ip: Some((0, 64, 0)), ..co };
    assert_eq!(
        general.emit(OptShape { ts: true, ipv6: false }, b"header", &mut Vec::new()),
        Err(FormatError::Reserved("MSN-scaled ACK in the general format"))
    );
    assert_eq!(
        general.header_len(OptShape { ts: true, ipv6: false }),
        Err(FormatError::Reserved("MSN-scaled ACK in the general format"))
    );
    let back = CoPacket::parse(0, &out, OptShape { ts: true, ipv6: false }).unwrap();
    assert_eq!(format!("{back:?}"), format!("{co:?}"));
    assert_eq!(
        CoPacket::parse(0, &out, OptShape { ts: false, ipv6: false }).unwrap_err(),
        FormatError::Reserved("timestamps without a timestamp option")
    );
}

#[test]
fn compact_format_carries_a_bulk_segment_in_two_octets_and_the_checksum() {
    let shape = OptShape { ts: true, ipv6: false };
    let segment = bulk_segment((SEL_COMPACT_SCALED, 0xd), [(0, 0), (0, 0)]);
    let with_ts = bulk_segment((SEL_COMPACT_SCALED, 0xd), [(4, 0x15), (4, 0x2a)]);
    let ack = CoPacket { seq: (0, 0), ack: (SEL_COMPACT_SCALED, 0x6), payload: b"", ..segment };
    for (co, len) in [(segment, 4 + 4), (with_ts, 6 + 4), (ack, 4)] {
        let mut out = Vec::new();
        co.emit(shape, b"header", &mut out).unwrap();
        assert_eq!(out.len(), len);
        assert_eq!(co.header_len(shape), Ok(len - co.payload.len()));
        assert_eq!(out[0] >> 6, 0b01);
        let back = CoPacket::parse(0, &out, shape).unwrap();
        // The compact format sends 6 bits of MSN and 3 of m − MSN.
        let mask = |(sel, bits): (u8, u32)| (sel, if sel == SEL_COMPACT_SCALED { bits & 7 } else { bits });
        let expected = CoPacket { msn: (0x59 & 0x3f, 6), seq: mask(co.seq), ack: mask(co.ack), ..co };
        assert_eq!(format!("{back:?}"), format!("{expected:?}"));
    }
    // PSH, a window change, or an IP-ID that is not the MSN's offset
    // leave it in the short format (which carries MSN_SCALED's bits).
    for co in [
        CoPacket { psh: true, ..segment },
        CoPacket { window: WindowField::Short(3), ..segment },
        CoPacket { ip_id: (5, 0), ..segment },
    ] {
        let mut out = Vec::new();
        co.emit(shape, b"header", &mut out).unwrap();
        assert_eq!(out[0] >> 6, 0b00, "{co:?}");
        let back = CoPacket::parse(0, &out, shape).unwrap();
        assert_eq!(back.seq, (SEL_MSN_SCALED, 0xd));
    }
}

#[test]
fn feedback_round_trips() {
    for kind in [FeedbackKind::Ack, FeedbackKind::Nack, FeedbackKind::StaticNack] {
        let f = Feedback { cid: 7, kind, reliable: true, msn: 0xbeef, checksum: 0x1234 };
        let mut out = Vec::new();
        f.emit(&mut out);
        assert_eq!(out.len(), 1 + Feedback::LEN);
        assert_eq!(Feedback::parse(&out).unwrap(), f);
    }
    assert_eq!(Feedback::parse(&[0xf6, 0, 0, 0, 0]), Err(FormatError::Reserved("feedback kind")));
}

#[test]
fn co_round_trips_with_every_optional_part() {
    let opts = RawOptions::build(&[TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val: 1, ecr: 2 }]).unwrap();
    for options in [
        CoOptions::Compact { ts: [(1, 0xab), (3, 0xdeadbeef)], sack_n: 2, sack: [(5, 70000), (1, 2), (0, 0), (0, 0)] },
        CoOptions::Raw(opts),
    ] {
        let co = CoPacket {
            cid: 3,
            msn: (0x5a, 7),
            ip_id: (3, 0xffff),
            seq: (5, 0xf),
            ack: (4, 0x89abcdef),
            window: WindowField::Irregular(0x1234),
            psh: true,
            flags: Some((0x1, 0x18)),
            ip: Some((0xb8, 63, 0x4000)),
            urgent: Some(9),
            strides: Some((1460, 2920)),
            options,
            checksum: 0xcafe,
            crc: (crc7(b"header"), 7),
            payload: b"payload",
        };
        let mut out = Vec::new();
        co.emit(OptShape { ts: true, ipv6: false }, b"header", &mut out).unwrap();
        let (cid, rest) = split_cid(&out).unwrap();
        assert_eq!(co.header_len(OptShape { ts: true, ipv6: false }), Ok(rest.len() - co.payload.len()));
        let back = CoPacket::parse(cid, rest, OptShape { ts: true, ipv6: false }).unwrap();
        assert_eq!(format!("{back:?}"), format!("{co:?}"));
    }
}

/// `header_len` is the length `emit` writes (without the Add-CID octet
/// and the payload), or its error, in every format and with every
/// optional part and size of field.
#[test]
fn header_len_is_what_emit_writes() {
    let opts = RawOptions::build(&[TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val: 1, ecr: 2 }]).unwrap();
    // Short timestamps (the short and compact formats) and the general
    // format's.
    let short_ts = bulk_segment((8, 0xa), [(4, 0x15), (4, 0x2a)]);
    let base = CoPacket { ip_id: (1, 7), ..bulk_segment((8, 0xa), [(1, 0x3f), (3, 0xdead_beef)]) };
    let mut variants = vec![];
    for base in [short_ts, base] {
        for seq in 0..9 {
            for ack in [0, 1, 3, 4, 5, 8, SEL_COMPACT_SCALED] {
                variants.push(CoPacket { seq: (seq, 0x1234_5678), ack: (ack, 0x9abc_def0), ..base });
            }
        }
        for msn in [(3, 4), (0x5a, 7), (0xbeef, 16), (1, 5)] {
            for ip_id in [(0, 0), (1, 7), (3, 0xffff), (4, 0), (5, 0)] {
                variants.push(CoPacket { msn, ip_id, ..base });
            }
        }
    }
    let extras = [
        CoPacket { window: WindowField::Short(3), ..base },
        CoPacket { window: WindowField::Lsb(0x1ff), seq: (1, 3), ..base },
        CoPacket { window: WindowField::Irregular(0xffff), ..base },
        CoPacket { psh: true, flags: Some((1, 0x18)), ..base },
        CoPacket { ip: Some((0xb8, 63, 0x4000)), ..base },
        CoPacket { urgent: Some(9), strides: Some((1460, 2920)), ..base },
        CoPacket { options: CoOptions::Raw(opts), msn: (0x5a, 16), ..base },
        CoPacket { options: CoOptions::Raw(RawOptions::EMPTY), msn: (0x5a, 16), ..base },
        CoPacket {
            options: CoOptions::Compact {
                ts: [(2, 0xabc), (0, 0)],
                sack_n: 3,
                sack: [(5, 70000), (1, 2), (1 << 20, 9), (0, 0)],
            },
            msn: (0x5a, 16),
            ..base
        },
        CoPacket { options: CoOptions::Compact { ts: [(1, 1), (1, 1)], sack_n: 5, sack: [(0, 0); 4] }, ..base },
        CoPacket { seq: (SEL_COMPACT_SCALED, 3), ack: (0, 0), ip_id: (4, 0), ..base },
        CoPacket { seq: (0, 0), ack: (SEL_COMPACT_SCALED, 3), ip_id: (4, 0), payload: b"", ..base },
    ];
    variants.extend(extras);
    let mut emitted = 0;
    for co in variants {
        for cid in [0, 5] {
            let co = CoPacket { cid, ..co };
            for shape in [true, false]
                .map(|ts| OptShape { ts, ipv6: false })
                .into_iter()
                .chain([OptShape { ts: true, ipv6: true }])
            {
                let mut out = Vec::new();
                let written =
                    co.emit(shape, b"header", &mut out).map(|()| out.len() - (cid != 0) as usize - co.payload.len());
                emitted += written.is_ok() as usize;
                assert_eq!(co.header_len(shape), written, "{co:?} {shape:?}");
            }
        }
    }
    // Many are packets, the rest errors.
    assert!(emitted > 150, "{emitted}");
}

#[test]
fn opt_info_separates_skeleton_from_values() {
    let o = RawOptions::build(&[
        TcpOption::Nop,
        TcpOption::Nop,
        TcpOption::Timestamp { val: 10, ecr: 20 },
        TcpOption::Nop,
        TcpOption::Nop,
        TcpOption::Sack(vec![(100, 200), (300, 400)]),
    ])
    .unwrap();
    let info = OptInfo::of(&o);
    assert_eq!((info.shape(), info.sack_n), (OptShape { ts: true, ipv6: false }, 2));
    assert_eq!(info.ts(&o), (10, 20));
    assert_eq!(info.sack(&o, 1), (300, 400));
    assert_eq!(info.skeleton.as_slice(), &[1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(info.fill((10, 20), &[(100, 200), (300, 400)]), Some(o));
    let no_sack =
        RawOptions::build(&[TcpOption::Nop, TcpOption::Nop, TcpOption::Timestamp { val: 1, ecr: 2 }]).unwrap();
    assert_eq!(OptInfo::of(&no_sack).skeleton, info.skeleton);
    // A SACK option that is not the tail stays in the skeleton.
    let inner = RawOptions::build(&[TcpOption::Sack(vec![(1, 2)]), TcpOption::Nop, TcpOption::Nop]).unwrap();
    assert_eq!(OptInfo::of(&inner).skeleton, inner);
}

/// 40 option bytes hold up to 40 options (NOPs are one byte each).
#[test]
fn opt_info_takes_forty_one_byte_options() {
    let nops = RawOptions::build(&vec![TcpOption::Nop; 40]).unwrap();
    assert_eq!(OptInfo::of(&nops).skeleton, nops);
    let mut list = vec![TcpOption::Nop; 30];
    list.push(TcpOption::Timestamp { val: 7, ecr: 9 });
    let o = RawOptions::build(&list).unwrap();
    let info = OptInfo::of(&o);
    assert_eq!((info.ts_at, info.ts(&o)), (Some(32), (7, 9)));
}

/// The SYN and SYN-ACK of two synthesised connections between the same
/// hosts (ports differ), IPv4 or IPv6.
fn two_handshakes(ipv6: bool) -> [crate::packet::TcpIpHeader; 4] {
    use crate::synth::{sip_over_tcp, FlowOptions};
    let first = |seed| {
        let flow = sip_over_tcp(1, FlowOptions { ipv6, seed, ..Default::default() });
        [0, 1].map(|i| crate::Packet::parse(&flow[i].1).unwrap().header)
    };
    let ([syn, syn_ack], [mut syn2, mut syn_ack2]) = (first(1), first(2));
    // The same hosts, a new source port.
    (syn2.src, syn2.dst, syn2.ipv6, syn2.dst_port) = (syn.src, syn.dst, syn.ipv6, syn.dst_port);
    (syn_ack2.src, syn_ack2.dst, syn_ack2.ipv6, syn_ack2.src_port) = (syn.dst, syn.src, syn_ack.ipv6, syn.dst_port);
    syn2.src_port = syn.src_port.wrapping_add(1);
    syn_ack2.dst_port = syn2.src_port;
    [syn, syn_ack, syn2, syn_ack2]
}

fn ir_bytes(ir: &IrPacket<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    ir.emit(&mut out);
    out
}

/// An IR of `h` on CID 5 that replicates `base`.
fn ir_cr(h: crate::packet::TcpIpHeader, base: Base) -> IrPacket<'static> {
    let static_part = Some(StaticPart::of(&h));
    IrPacket { cid: 5, static_part, base: Some(base), msn: 9, header: h, strides: (0, 0), crc: 0x5a, payload: b"" }
}

#[test]
fn an_ir_cr_takes_the_base_contexts_addresses_and_syn_and_round_trips() {
    for ipv6 in [false, true] {
        let [syn, syn_ack, syn2, syn_ack2] = two_handshakes(ipv6);
        let base_of =
            |h| Base { cid: 2, reverse: false, static_part: StaticPart::of(&h), template: Some(Template::of(&h)) };
        let base = base_of(syn);
        // A SYN from the last SYN, with and without its template; a
        // SYN-ACK from the last SYN-ACK.
        for (h, b, with_template) in [(syn2, syn, true), (syn2, syn, false), (syn_ack2, syn_ack, true)] {
            let base = Base { template: base_of(b).template.filter(|_| with_template), ..base_of(b) };
            let ir = ir_cr(h, base);
            let out = ir_bytes(&ir);
            let full = ir_bytes(&IrPacket { base: None, ..ir });
            assert_eq!((out[1], IrPacket::base_cid(&out[1..])), (TYPE_IR_CR, Some(2)));
            let back = IrPacket::parse(5, &out[1..], false, Some(base)).unwrap();
            assert_eq!((back.header, back.static_part, back.msn, back.crc), (h, ir.static_part, 9, 0x5a));
            // The addresses stay behind (and, from the template, the
            // window, TOS, TTL and options but the timestamps).
            let saved = if ipv6 { 32 - 1 - 3 } else { 8 - 1 } + if with_template { 4 + 12 } else { 0 };
            assert!(
                out.len() + saved <= full.len(),
                "IPv6 {ipv6}, template {with_template}: {} {}",
                out.len(),
                full.len()
            );
        }
        // Without the base, or without the template its flags need, it is
        // refused; a base of other addresses makes the IR whole.
        let ir = ir_cr(syn2, base);
        let out = ir_bytes(&ir);
        assert!(matches!(IrPacket::parse(5, &out[1..], false, None), Err(FormatError::Reserved(_))));
        let bare = Base { template: None, ..base };
        assert!(matches!(IrPacket::parse(5, &out[1..], false, Some(bare)), Err(FormatError::Reserved(_))));
        let wrong_cid = Base { cid: 3, ..base };
        assert!(matches!(IrPacket::parse(5, &out[1..], false, Some(wrong_cid)), Err(FormatError::Reserved(_))));
        for n in 1..out.len() - 1 {
            assert!(IrPacket::parse(5, &out[1..n], false, Some(base)).is_err(), "{n}");
        }
        let mut elsewhere = base;
        elsewhere.static_part.src[0] ^= 1;
        if let Some(v6) = elsewhere.static_part.ipv6.as_mut() {
            v6.src[0] ^= 1;
        }
        let whole = ir_bytes(&IrPacket { base: Some(elsewhere), ..ir });
        assert_eq!(whole[1], if ipv6 { TYPE_IR_V6 } else { TYPE_IR });
    }
}

#[test]
fn an_ir_leaves_out_an_ack_number_of_zero() {
    let [syn, syn_ack, ..] = two_handshakes(false);
    assert_eq!(syn.ack, 0);
    let ir = |h| IrPacket {
        cid: 0,
        static_part: Some(StaticPart::of(&h)),
        base: None,
        msn: 1,
        header: h,
        strides: (0, 0),
        crc: 0,
        payload: b"",
    };
    let (a, b) = (ir_bytes(&ir(syn)), ir_bytes(&ir(syn_ack)));
    assert_eq!(a.len() + 4, b.len() + (syn_ack.options.len as usize).abs_diff(syn.options.len as usize));
    assert_eq!(IrPacket::parse(0, &a, false, None).unwrap().header, syn);
    assert_eq!(IrPacket::parse(0, &b, false, None).unwrap().header, syn_ack);
}
