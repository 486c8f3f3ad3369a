#![no_main]
//! taroc's RFC 2507 (IPHC) decompressor and compressor on arbitrary
//! input. Byte 0: bit 0 the twice algorithm (RFC 2507 §10.1); bit 1:
//! first prime a context with a synthesised SIP flow. The rest: packets,
//! each a 2-byte big-endian length and its bytes (the last one takes what
//! is left), fed to `IphcDecompressor`, and to the compressor as feedback.
//! Invariants: no panic; every emitted packet passes its IPv4 and TCP
//! checksums; a refused packet leaves no output; every CONTEXT_STATE the
//! decompressor sends applies to a compressor holding its CIDs. Input that
//! parses as a TCP/IP packet is also compressed by a fresh pair and must
//! decompress to itself.

use libfuzzer_sys::fuzz_target;
use taroc::iphc::wire::parse_context_state;
use taroc::synth::{sip_over_tcp, Dir, FlowOptions};
use taroc::{checksums_ok, IphcCompressor, IphcConfig, IphcDecompressor, Packet};

fuzz_target!(|data: &[u8]| {
    let Some((&head, mut rest)) = data.split_first() else { return };
    let cfg = if head & 1 != 0 { IphcConfig::TWICE } else { IphcConfig::DRAFT };
    let mut c = IphcCompressor::new(cfg);
    let mut d = IphcDecompressor::new(cfg);
    let mut out = Vec::new();
    if head & 2 != 0 {
        for (dir, p) in sip_over_tcp(1, FlowOptions::default()).iter() {
            if *dir == Dir::Backward {
                continue;
            }
            let mut wire = Vec::new();
            c.compress(p, &mut wire).expect("a synthesised packet compresses");
            out.clear();
            d.decompress(&wire, &mut out).expect("a clean flow decompresses");
            assert_eq!(&out, p);
        }
    }
    while !rest.is_empty() {
        let (packet, tail) = match rest {
            [a, b, tail @ ..] => {
                let n = (u16::from_be_bytes([*a, *b]) as usize).min(tail.len());
                tail.split_at(n)
            }
            _ => (rest, &[][..]),
        };
        rest = tail;
        out.clear();
        match d.decompress(packet, &mut out) {
            Ok(n) => {
                assert!(checksums_ok(&out), "emitted a packet failing its checksums");
                assert_eq!(n, out.len());
            }
            Err(_) => assert!(out.is_empty(), "a refused packet left output"),
        }
        let mut fb = Vec::new();
        while d.poll_feedback(&mut fb) {
            assert!(parse_context_state(&fb).is_ok(), "a CONTEXT_STATE that does not parse");
            fb.clear();
        }
        let _ = c.handle_feedback(packet);
        // Arbitrary input that is a TCP/IP packet round-trips through a
        // fresh pair.
        let (mut c2, mut d2) = (IphcCompressor::new(cfg), IphcDecompressor::new(cfg));
        let mut wire = Vec::new();
        if c2.compress(packet, &mut wire).is_ok() {
            let mut back = Vec::new();
            if checksums_ok(packet) && Packet::parse(packet).is_ok() {
                d2.decompress(&wire, &mut back).expect("a full header of a valid packet decompresses");
                assert_eq!(back, packet);
            } else {
                assert!(d2.decompress(&wire, &mut back).is_err());
            }
        }
    }
});
