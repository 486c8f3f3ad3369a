#![no_main]
//! taroc's TAROC decompressor on arbitrary input. Byte 0: mode (U, O,
//! R, O with cross-direction inference) in bits 0-1; bit 2: first prime
//! the context with a synthesised flow (both directions, so that with
//! inference the decompressor holds the other direction's packets).
//! The rest: packets, each a 2-byte big-endian length and its bytes (the
//! last one takes what is left). Invariants: no panic; every emitted packet
//! passes its IPv4 and TCP checksums; a refused packet leaves no output;
//! every feedback packet parses back to itself. Input that parses as an
//! IPv4/TCP packet is also compressed and must decompress to itself.

use libfuzzer_sys::fuzz_target;
use taroc::synth::{sip_over_tcp, Dir, FlowOptions};
use taroc::{checksums_ok, Compressor, CompressorConfig, Decompressor, DecompressorConfig, Feedback, Mode};

fuzz_target!(|data: &[u8]| {
    let Some((&head, mut rest)) = data.split_first() else { return };
    let (mode, infer) = [(Mode::U, false), (Mode::O, false), (Mode::R, false), (Mode::O, true)][(head & 3) as usize];
    let config = || {
        (
            CompressorConfig { infer, ..CompressorConfig::with_mode(mode) },
            DecompressorConfig { infer, ..DecompressorConfig::with_mode(mode) },
        )
    };
    let mut d = Decompressor::new(config().1);
    let mut c = Compressor::new(config().0);
    // The other direction's compressor, at the decompressor's end.
    let mut back = Compressor::new(config().0);
    let mut out = Vec::new();
    if head & 4 != 0 {
        for (dir, p) in sip_over_tcp(1, FlowOptions::default()).iter() {
            let mut wire = Vec::new();
            if *dir == Dir::Backward {
                back.compress(p, &mut wire).expect("a synthesised packet compresses");
                if let Some(x) = back.poll_crossed() {
                    d.note_reverse(&x);
                    c.note_reverse(&x);
                }
                continue;
            }
            c.compress(p, &mut wire).expect("a synthesised packet compresses");
            out.clear();
            d.decompress(&wire, &mut out).expect("a clean flow decompresses");
            assert_eq!(&out, p);
            while let Some(f) = d.poll_feedback() {
                let mut b = Vec::new();
                f.emit(&mut b);
                c.handle_feedback(&b).expect("feedback of a clean flow applies");
            }
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
        let (mut c2, mut d2) = (Compressor::new(config().0), Decompressor::new(config().1));
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
