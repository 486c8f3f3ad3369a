#![no_main]
//! rohc-tcp's TAROC decompressor on arbitrary input. Byte 0: mode (U, O,
//! R) in bits 0-1; bit 2: first prime the context with a synthesised flow.
//! The rest: packets, each a 2-byte big-endian length and its bytes (the
//! last one takes what is left). Invariants: no panic; every emitted packet
//! passes its IPv4 and TCP checksums; a refused packet leaves no output;
//! every feedback packet parses back to itself. Input that parses as an
//! IPv4/TCP packet is also compressed and must decompress to itself.

use libfuzzer_sys::fuzz_target;
use rohc_tcp::synth::{sip_over_tcp, Dir, FlowOptions};
use rohc_tcp::{checksums_ok, Compressor, CompressorConfig, Decompressor, DecompressorConfig, Feedback, Mode};

fuzz_target!(|data: &[u8]| {
    let Some((&head, mut rest)) = data.split_first() else { return };
    let mode = [Mode::U, Mode::O, Mode::R, Mode::U][(head & 3) as usize];
    let mut d = Decompressor::new(DecompressorConfig::with_mode(mode));
    let mut c = Compressor::new(CompressorConfig::with_mode(mode));
    let mut out = Vec::new();
    if head & 4 != 0 {
        for (_, p) in sip_over_tcp(1, FlowOptions::default()).iter().filter(|(d, _)| *d == Dir::Forward) {
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
            Ok(r) => {
                assert!(checksums_ok(&out), "emitted a packet failing its checksums");
                assert_eq!(r.len, out.len());
            }
            Err(_) => assert!(out.is_empty(), "a refused packet left output"),
        }
        while let Some(f) = d.poll_feedback() {
            let mut b = Vec::new();
            f.emit(&mut b);
            assert_eq!(Feedback::parse(&b), Ok(f));
            let _ = c.handle_feedback(&b);
        }
        // Arbitrary input that is a valid IPv4/TCP packet round-trips
        // through a fresh pair.
        let (mut c2, mut d2) = (
            Compressor::new(CompressorConfig::with_mode(mode)),
            Decompressor::new(DecompressorConfig::with_mode(mode)),
        );
        let mut wire = Vec::new();
        if c2.compress(packet, &mut wire).is_ok() {
            let mut back = Vec::new();
            if checksums_ok(packet) {
                d2.decompress(&wire, &mut back).expect("an IR of a valid packet decompresses");
                assert_eq!(back, packet);
            } else {
                assert!(d2.decompress(&wire, &mut back).is_err());
            }
        }
    }
});
