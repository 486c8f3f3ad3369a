//! The Deflate decoders of other implementations are recognised by their
//! bytes and decoded natively, with what the UDVM gives: RFC 4464 §4.1.4's
//! example bytecode and the form Open SigComp's Deflate bytecode takes
//! (the distance code read with INPUT-BITS and an ADD rather than
//! INPUT-HUFFMAN, its tables in memory the same).

#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use common::*;
use sigcomp::{Decompressor, Params, Transport};

/// RFC 1951 §3.2.5's length and distance codes: (base, extra bits).
const LENGTHS: [(u16, u32); 29] = [
    (3, 0),
    (4, 0),
    (5, 0),
    (6, 0),
    (7, 0),
    (8, 0),
    (9, 0),
    (10, 0),
    (11, 1),
    (13, 1),
    (15, 1),
    (17, 1),
    (19, 2),
    (23, 2),
    (27, 2),
    (31, 2),
    (35, 3),
    (43, 3),
    (51, 3),
    (59, 3),
    (67, 4),
    (83, 4),
    (99, 4),
    (115, 4),
    (131, 5),
    (163, 5),
    (195, 5),
    (227, 5),
    (258, 0),
];

fn distance_code(d: u16) -> (u16, u16, u32) {
    let mut base = 1u16;
    for code in 0..30u16 {
        let extra = if code < 4 { 0 } else { u32::from(code / 2 - 1) };
        if d < base + (1 << extra) {
            return (code, d - base, extra);
        }
        base += 1 << extra;
    }
    panic!("distance {d}")
}

/// Bits packed as RFC 1951 §3.1.1 says (the UDVM's P-bit 1).
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    n: usize,
}

impl Bits {
    /// `v`'s `k` low bits, least significant first (INPUT-BITS, F-bit 1).
    fn lsb(&mut self, v: u32, k: u32) {
        for i in 0..k {
            if self.n.is_multiple_of(8) {
                self.out.push(0);
            }
            let last = self.out.len() - 1;
            self.out[last] |= (((v >> i) & 1) as u8) << (self.n % 8);
            self.n += 1;
        }
    }

    /// A Huffman code, most significant bit first (INPUT-HUFFMAN, H-bit 0).
    fn code(&mut self, v: u32, k: u32) {
        for i in (0..k).rev() {
            self.lsb((v >> i) & 1, 1);
        }
    }

    /// A literal/length symbol in the fixed code (RFC 1951 §3.2.6).
    fn symbol(&mut self, s: u32) {
        match s {
            0..=143 => self.code(0x30 + s, 8),
            144..=255 => self.code(0x190 + s - 144, 9),
            256..=279 => self.code(s - 256, 7),
            _ => self.code(0xC0 + s - 280, 8),
        }
    }
}

/// `text` as one fixed-Huffman block after the 3 bits the bytecode skips,
/// greedy matches of at least 3 bytes; the distance code in the order
/// `msb_distance` says (Huffman) or least significant bit first.
fn deflate(text: &[u8], msb_distance: bool) -> Vec<u8> {
    let mut b = Bits::default();
    b.lsb(0b011, 3);
    let mut i = 0;
    while i < text.len() {
        let mut best = (0, 0);
        for start in i.saturating_sub(4096)..i {
            let len = (0..258.min(text.len() - i)).take_while(|&k| text[start + k] == text[i + k]).count();
            if len > best.0 {
                best = (len, i - start);
            }
        }
        if best.0 < 3 {
            b.symbol(u32::from(text[i]));
            i += 1;
            continue;
        }
        let (len, dist) = (best.0 as u16, best.1 as u16);
        let l = LENGTHS.iter().rposition(|&(base, _)| base <= len).unwrap();
        let (base, extra) = LENGTHS[l];
        b.symbol(257 + l as u32);
        b.lsb(u32::from(len - base), extra);
        let (code, value, extra) = distance_code(dist);
        if msb_distance {
            b.code(u32::from(code), 5);
        } else {
            b.lsb(u32::from(code), 5);
        }
        b.lsb(u32::from(value), extra);
        i += usize::from(len);
    }
    b.symbol(256);
    b.out
}

/// Decompresses `msg` with the native decoders and without: the results
/// must be equal; returns the output and the tokens decoded natively.
fn both(msg: &[u8]) -> (Vec<u8>, u64) {
    let params = Params { dms: 16384, cpb: 16, sms: 8192, version: 1 };
    let mut native = Decompressor::new(params).unwrap();
    let mut udvm = Decompressor::new(params).unwrap();
    udvm.set_native_decoders(false);
    let a = native.decompress(msg, Transport::Message);
    let b = udvm.decompress(msg, Transport::Message);
    assert_eq!(a, b);
    assert_eq!(udvm.metrics().native_tokens, 0);
    (a.unwrap().output, native.metrics().native_tokens)
}

fn message(source: &str, input: &[u8]) -> Vec<u8> {
    sigcomp_asm::assemble(source).unwrap().upload().unwrap().message(input).unwrap()
}

#[test]
fn rfc4464_deflate_example_decodes_natively() {
    let source = read("rfc4464", "4.1.4-deflate.asm");
    let (output, tokens) = both(&message(&source, &hex_file("rfc4464", "4.1.4-deflate.msg")));
    assert_eq!(output, b"Life, the Universe and Everything\n");
    assert!(tokens > 10, "{tokens}");
    // Text with matches, encoded here.
    let text = b"INVITE sip:bob@example.com SIP/2.0\r\nTo: <sip:bob@example.com>\r\nFrom: <sip:alice@example.com>\r\n";
    let (output, tokens) = both(&message(&source, &deflate(text, true)));
    assert_eq!(output, text);
    assert!(tokens > 10, "{tokens}");
}

#[test]
fn open_sigcomp_form_of_the_deflate_loop_decodes_natively() {
    let rfc = read("rfc4464", "4.1.4-deflate.asm");
    let huffman = "INPUT-HUFFMAN (index, !, 1, 5, 0, 31, distance_table_start)";
    assert!(rfc.contains(huffman));
    let source = rfc.replace(huffman, "INPUT-BITS (5, index, !)\n   ADD ($index, distance_table_start)");
    let text =
        b"REGISTER sip:ims.example.com SIP/2.0\r\nVia: SIP/2.0/UDP [::1]:5060\r\nVia: SIP/2.0/UDP [::2]:5060\r\n";
    let (output, tokens) = both(&message(&source, &deflate(text, false)));
    assert_eq!(output, text);
    assert!(tokens > 10, "{tokens}");
    // The same message read with the RFC's form decodes other distances:
    // whatever it gives, both paths give it.
    both(&message(&rfc, &deflate(text, false)));
}

#[test]
fn a_loop_changed_at_the_same_address_is_not_taken_for_the_one_seen_before() {
    // The decompressor remembers the loops it recognised, by their bytes:
    // the same bytecode with one interval of the literal code changed has
    // its loop at the same address and is not recognised.
    let source = read("rfc4464", "4.1.4-deflate.asm");
    let changed = source.replace("1, 400, 511, 144)", "1, 400, 511, 145)");
    assert_ne!(source, changed);
    let input = hex_file("rfc4464", "4.1.4-deflate.msg");
    let params = Params { dms: 16384, cpb: 16, sms: 8192, version: 1 };
    let mut native = Decompressor::new(params).unwrap();
    let mut udvm = Decompressor::new(params).unwrap();
    udvm.set_native_decoders(false);
    for (source, native_runs) in [(&source, true), (&changed, false), (&source, true)] {
        let msg = message(source, &input);
        let before = native.metrics().native_tokens;
        assert_eq!(native.decompress(&msg, Transport::Message), udvm.decompress(&msg, Transport::Message));
        assert_eq!(native.metrics().native_tokens > before, native_runs);
    }
}
