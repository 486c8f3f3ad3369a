//! The Deflate and LZ77 fragments (`asm/deflate.asm`, `asm/lz77.asm`) run
//! in the real UDVM against their encoders (`deflate::encode`,
//! `lz77::encode`).
//!
//! Each fragment is wrapped in a minimal stand-alone decompressor (no
//! mechanism: the variables of the fragment contract, a circular buffer of
//! a chosen size, the fragment's @init, optionally the window read raw from
//! the message, the fragment's @tokens, END-MESSAGE), assembled with
//! sigcomp-asm and uploaded in a SigComp message to `sigcomp::Decompressor`
//! (RFC 3320 §7: bytecode in the message, message-based transport).

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use proptest::prelude::*;
use sigcomp::{Decompressor, Params, Reason, Transport};
use sigcomp_compress::{deflate, lz77};

const DEFLATE_ASM: &str = include_str!("../asm/deflate.asm");
const LZ77_ASM: &str = include_str!("../asm/lz77.asm");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algo {
    Deflate,
    Lz77,
}

impl Algo {
    fn fragment(self) -> &'static str {
        match self {
            Algo::Deflate => DEFLATE_ASM,
            Algo::Lz77 => LZ77_ASM,
        }
    }

    fn encode(self, window: &[u8], message: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Algo::Deflate => deflate::encode(window, message, &deflate::DeflateParams::default(), &mut out),
            Algo::Lz77 => lz77::encode(window, message, &lz77::Lz77Params::default(), &mut out),
        }
        out
    }
}

/// The text of the `; @vars`, `; @init` and `; @tokens` sections.
fn sections(fragment: &str) -> [String; 3] {
    let markers = ["; @vars", "; @init", "; @tokens"];
    let lines: Vec<&str> = fragment.lines().collect();
    let starts: Vec<usize> =
        markers.iter().map(|m| lines.iter().position(|l| l.trim() == *m).unwrap_or_else(|| panic!("no {m}"))).collect();
    assert!(starts[0] < starts[1] && starts[1] < starts[2], "sections out of order");
    let part = |k: usize| {
        let end = starts.get(k + 1).copied().unwrap_or(lines.len());
        lines[starts[k] + 1..end].join("\n")
    };
    [part(0), part(1), part(2)]
}

/// A stand-alone decompressor around `algo`'s fragment with a circular
/// buffer of `buffer_size` bytes. With `window_in_message`, the first
/// `buffer_size` bytes of the compressed data are the window (oldest byte
/// first), read straight into the buffer before the tokens.
fn standalone(algo: Algo, buffer_size: u16, window_in_message: bool) -> sigcomp_asm::Upload {
    let window =
        if window_in_message { format!("INPUT-BYTES ({buffer_size}, circular_buffer, fail)") } else { String::new() };
    standalone_with(algo, buffer_size, &window)
}

/// [`standalone`] with `before_tokens` (assembly) run between the
/// fragment's @init and its @tokens.
fn standalone_with(algo: Algo, buffer_size: u16, before_tokens: &str) -> sigcomp_asm::Upload {
    let [vars, init, tokens] = sections(algo.fragment());
    let window = before_tokens;
    let src = format!(
        "at (32)
:index                pad (2)
:length_value         pad (2)
:old_pointer          pad (2)
at (64)
:byte_copy_left       pad (2)
:byte_copy_right      pad (2)
:input_bit_order      pad (2)
:decompressed_pointer pad (2)
{vars}
align (64)
:init
MULTILOAD (64, 4, circular_buffer, (circular_buffer + {buffer_size}), 0, circular_buffer)
{init}
{window}
{tokens}
:end_of_message
END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
:fail
DECOMPRESSION-FAILURE
:circular_buffer
"
    );
    let asm = sigcomp_asm::assemble(&src).unwrap_or_else(|e| panic!("{algo:?}: {e}\n{src}"));
    asm.upload().expect("uploadable")
}

fn params() -> Params {
    Params { dms: 65536, sms: 0, cpb: 16, version: 1 }
}

/// RFC 3320 §8.6: cycles available for a message of `len` bytes.
fn budget(len: usize, cpb: u64) -> u64 {
    (8 * len as u64 + 1000) * cpb
}

struct Run {
    output: Vec<u8>,
    cycles: u64,
    message_len: usize,
}

/// Encodes `message` after `window` and runs it through the stand-alone
/// decompressor. An all-zero window is the fresh buffer and is not sent.
fn run(algo: Algo, window: &[u8], message: &[u8]) -> Result<Run, sigcomp::Failure> {
    let size = u16::try_from(window.len()).unwrap();
    let fresh = window.iter().all(|&b| b == 0);
    let upload = standalone(algo, size, !fresh);
    let mut data = if fresh { Vec::new() } else { window.to_vec() };
    data.extend_from_slice(&algo.encode(window, message));
    let msg = upload.message(&data).unwrap();
    let mut d = Decompressor::new(params()).unwrap();
    let out = d.decompress(&msg, Transport::Message)?;
    Ok(Run { output: out.output, cycles: out.cycles, message_len: msg.len() })
}

fn corpus() -> Vec<(String, Vec<Vec<u8>>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let mut flows = Vec::new();
    for entry in std::fs::read_dir(&root).expect("corpus") {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "sip"))
            .collect();
        files.sort();
        let msgs = files.iter().map(|p| std::fs::read(p).unwrap()).collect::<Vec<_>>();
        if !msgs.is_empty() {
            flows.push((dir.file_name().unwrap().to_string_lossy().into_owned(), msgs));
        }
    }
    flows.sort();
    assert!(flows.len() >= 8, "corpus has {} flows", flows.len());
    flows
}

/// The window the messages before `k` of a flow leave in a buffer of
/// `size` bytes (zeros where nothing was written yet).
fn history(msgs: &[Vec<u8>], k: usize, size: usize) -> Vec<u8> {
    let mut w = vec![0u8; size];
    for m in &msgs[..k] {
        w.extend_from_slice(m);
    }
    w.split_off(w.len() - size)
}

/// Every corpus message through the UDVM: fresh buffer, and buffer holding
/// the flow so far, at several buffer sizes; the cycles stay within what
/// RFC 3320 §8.6 gives at 16 cycles per bit.
fn corpus_round_trips(algo: Algo) {
    let mut worst_fresh = 0.0f64;
    let mut checked = 0;
    for (flow, msgs) in corpus() {
        for size in [1024usize, 2048, 4096, 8192, 16384] {
            for (k, m) in msgs.iter().enumerate() {
                let fresh =
                    run(algo, &vec![0u8; size], m).unwrap_or_else(|f| panic!("{algo:?} {flow} #{k} size {size}: {f}"));
                assert_eq!(fresh.output, *m, "{algo:?} {flow} #{k} size {size}, fresh buffer");
                let allowed = budget(fresh.message_len, 16);
                assert!(fresh.cycles <= allowed, "{algo:?} {flow} #{k}: {} cycles > {allowed}", fresh.cycles);
                worst_fresh = worst_fresh.max(fresh.cycles as f64 / allowed as f64);

                let window = history(&msgs, k, size);
                if window.iter().all(|&b| b == 0) {
                    continue;
                }
                let filled = run(algo, &window, m).unwrap_or_else(|f| panic!("{algo:?} {flow} #{k} size {size}: {f}"));
                assert_eq!(filled.output, *m, "{algo:?} {flow} #{k} size {size}, filled buffer");
                // The window travels in the message here: take its bytes and
                // the INPUT-BYTES that reads them (1 + size cycles) out.
                let tokens_len = filled.message_len - size;
                let cycles = filled.cycles - (1 + size as u64);
                assert!(cycles <= budget(tokens_len, 16), "{algo:?} {flow} #{k}: {cycles} cycles");
                checked += 2;
            }
        }
    }
    assert!(checked > 300, "{checked} runs");
    // Far inside the budget: decoding costs a few cycles per output byte.
    assert!(worst_fresh < 0.5, "{algo:?}: worst cycles/budget {worst_fresh}");
}

#[test]
fn deflate_corpus_round_trips_in_the_udvm() {
    corpus_round_trips(Algo::Deflate);
}

#[test]
fn lz77_corpus_round_trips_in_the_udvm() {
    corpus_round_trips(Algo::Lz77);
}

/// Copies from exactly a buffer size back (the oldest byte, which the copy
/// overwrites as it goes) and matches running into the bytes being written.
#[test]
fn copies_reach_the_oldest_byte_and_overlap() {
    for algo in [Algo::Deflate, Algo::Lz77] {
        for size in [1024usize, 1500, 4096] {
            let text = b"Call-ID: a84b4c76e66710@pc33.atlanta.example.com\r\n";
            let mut window = text.to_vec();
            window.extend((0..size - text.len()).map(|i| b'A' + (i % 23) as u8));
            let mut msg = text.to_vec();
            msg.extend_from_slice(&[b'x'; 600]);
            msg.extend_from_slice(text);
            let r = run(algo, &window, &msg).unwrap();
            assert_eq!(r.output, msg, "{algo:?} size {size}");
        }
    }
}

/// A message longer than the buffer wraps the decompressed pointer
/// several times.
#[test]
fn messages_longer_than_the_buffer_wrap() {
    let flows = corpus();
    let msgs = &flows.iter().max_by_key(|(_, m)| m.iter().map(Vec::len).sum::<usize>()).unwrap().1;
    let long: Vec<u8> = msgs.iter().flatten().copied().collect();
    assert!(long.len() > 3000);
    for algo in [Algo::Deflate, Algo::Lz77] {
        let r = run(algo, &vec![0u8; 1024], &long).unwrap();
        assert_eq!(r.output, long, "{algo:?}");
        let mut window = long[..1024].to_vec();
        window.reverse();
        let r = run(algo, &window, &long).unwrap();
        assert_eq!(r.output, long, "{algo:?}");
    }
}

#[test]
fn empty_message_outputs_nothing() {
    for algo in [Algo::Deflate, Algo::Lz77] {
        assert!(algo.encode(&[0; 1024], b"").is_empty());
        let r = run(algo, &[0; 1024], b"").unwrap();
        assert!(r.output.is_empty());
    }
}

/// Decodes raw token bytes (after a fresh 1024-byte buffer).
fn decode_raw(algo: Algo, tokens: &[u8]) -> Result<Vec<u8>, sigcomp::Failure> {
    let msg = standalone(algo, 1024, false).message(tokens).unwrap();
    let mut d = Decompressor::new(params()).unwrap();
    d.decompress(&msg, Transport::Message).map(|o| o.output)
}

/// Bits least significant first, Huffman codes reversed, as RFC 1951
/// §3.1.1 packs them: `(value, bits, is_huffman_code)`.
fn pack_lsb(items: &[(u32, u32, bool)]) -> Vec<u8> {
    let mut bits = Vec::new();
    for &(v, n, huffman) in items {
        for k in 0..n {
            let shift = if huffman { n - 1 - k } else { k };
            bits.push((v >> shift) & 1);
        }
    }
    bits.chunks(8).map(|c| c.iter().enumerate().fold(0u8, |b, (i, &x)| b | (x as u8) << i)).collect()
}

#[test]
fn deflate_hand_made_symbols() {
    // 'h' (0x68 → 8-bit code 0x30 + 0x68), 'i', a length-3 copy (257: 7-bit
    // code 1) from distance 2 (code 1), then end-of-block (0000000) and a
    // byte of garbage after it that must not be read.
    let body = pack_lsb(&[(0x30 + 0x68, 8, true), (0x30 + 0x69, 8, true), (1, 7, true), (1, 5, true), (0, 7, true)]);
    let mut with_garbage = body.clone();
    with_garbage.push(0xFF);
    assert_eq!(decode_raw(Algo::Deflate, &body).unwrap(), b"hihih");
    assert_eq!(decode_raw(Algo::Deflate, &with_garbage).unwrap(), b"hihih");
    assert_eq!(deflate::decode(&[0; 1024], &body).unwrap(), b"hihih");
    // Literal 255 (9 bits, 0x190 + 111), length 258 (285: 8-bit 0xC5) at
    // distance 1: 259 bytes of 0xFF.
    let body = pack_lsb(&[(0x190 + 111, 9, true), (0xC5, 8, true), (0, 5, true)]);
    assert_eq!(decode_raw(Algo::Deflate, &body).unwrap(), vec![0xFF; 259]);
    // Length 284 with extra 30 (= 257) from distance code 29 with extra 0
    // (24577 > buffer: wraps in the 1024-byte buffer of zeros): zeros.
    let body =
        pack_lsb(&[(0x30 + b'z' as u32, 8, true), (0xC4, 8, true), (30, 5, false), (29, 5, true), (0, 13, false)]);
    let out = decode_raw(Algo::Deflate, &body).unwrap();
    assert_eq!(out.len(), 1 + 257);
}

#[test]
fn deflate_undefined_codes_fail() {
    // Literal/length symbols 286 and 287 (8-bit codes 0xC6, 0xC7).
    for code in [0xC6, 0xC7] {
        let body = pack_lsb(&[(code, 8, true), (0, 16, false)]);
        let f = decode_raw(Algo::Deflate, &body).unwrap_err();
        assert_eq!(f.reason, Reason::HuffmanNoMatch, "code {code:#x}");
    }
    // Distance codes 30 and 31.
    for code in [30, 31] {
        let body = pack_lsb(&[(0x30 + b'a' as u32, 8, true), (1, 7, true), (code, 5, true), (0, 16, false)]);
        let f = decode_raw(Algo::Deflate, &body).unwrap_err();
        assert_eq!(f.reason, Reason::HuffmanNoMatch, "distance code {code}");
    }
    // A length whose distance is cut off by the end of the message.
    let body = pack_lsb(&[(0x30 + b'a' as u32, 8, true), (20, 7, true)]);
    assert!(decode_raw(Algo::Deflate, &body).is_err());
}

#[test]
fn lz77_hand_made_tokens() {
    // Run "abc", copy 5 from offset 3: "abcabcab".
    assert_eq!(decode_raw(Algo::Lz77, &[2, b'a', b'b', b'c', 0x81, 0, 3]).unwrap(), b"abcabcab");
    // Truncated run and truncated offset fail.
    assert!(decode_raw(Algo::Lz77, &[5, b'a', b'b']).is_err());
    assert!(decode_raw(Algo::Lz77, &[0, b'a', 0x80, 0]).is_err());
    // A run of 128 bytes (control 0x7F).
    let mut t = vec![0x7F];
    t.extend(0..128u8);
    assert_eq!(decode_raw(Algo::Lz77, &t).unwrap(), (0..128u8).collect::<Vec<_>>());
}

/// RFC 4464 example files (sigcomp-asm's copies): hex, '#' lines are
/// comments.
fn rfc4464_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../sigcomp-asm/tests/rfc4464").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn unhex(text: &str) -> Vec<u8> {
    let digits: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    (0..digits.len()).step_by(2).map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap()).collect()
}

/// The compressed data of RFC 4464 §4.1.4's example (a fixed-Huffman RFC
/// 1951 block by the RFC's authors) decodes with our fragment once its
/// 3-bit block header is skipped.
#[test]
fn rfc4464_deflate_example_decodes_with_our_fragment() {
    let data = unhex(&rfc4464_file("4.1.4-deflate.msg"));
    let upload = standalone_with(Algo::Deflate, 4096, "INPUT-BITS (3, index, fail)");
    let mut d = Decompressor::new(params()).unwrap();
    let out = d.decompress(&upload.message(&data).unwrap(), Transport::Message).unwrap();
    assert_eq!(out.output, b"Life, the Universe and Everything\n");
}

/// Our encoder's symbols, wrapped as complete RFC 1951 blocks, decode with
/// the RFC 4464 §4.1.4 example bytecode (its authors' Deflate decoder, with
/// its own length and distance tables) to every corpus message.
#[test]
fn our_blocks_decode_with_the_rfc4464_deflate_bytecode() {
    let asm = sigcomp_asm::assemble(&rfc4464_file("4.1.4-deflate.asm")).unwrap();
    let upload = asm.upload().unwrap();
    // Its circular buffer runs from :circular_buffer to udvm_memory_size 8192.
    let buffer = 8192 - asm.labels["circular_buffer"] as usize;
    let mut checked = 0;
    for (flow, msgs) in corpus() {
        for (k, m) in msgs.iter().enumerate() {
            let block = deflate::rfc1951_block(&vec![0u8; buffer], m, &deflate::DeflateParams::default());
            let params = Params { dms: 16384, sms: 0, cpb: 16, version: 1 };
            let mut d = Decompressor::new(params).unwrap();
            let out = d
                .decompress(&upload.message(&block).unwrap(), Transport::Message)
                .unwrap_or_else(|f| panic!("{flow} #{k}: {f}"));
            assert_eq!(out.output, *m, "{flow} #{k}");
            checked += 1;
        }
    }
    assert!(checked >= 60);
}

/// Spliced into the mechanism program (build.rs) and driven by the
/// compressor: the start-up flow of the Open SigComp 0.9 characterisation
/// (corpus/open-sigcomp-startup) between two endpoints, each message
/// decompressed by the receiver's own UDVM within the cycles RFC 3320 §8.6
/// allows at 16 cycles per bit, and
/// the dynamic mechanism cheaper than the basic one.
#[test]
fn endpoint_round_trips_with_the_mechanism() {
    use sigcomp::CompartmentId;
    use sigcomp_compress::{Algorithm, Config, Endpoint, EndpointConfig, Mechanism, Received};
    let flows = corpus();
    let msgs = &flows.iter().find(|(name, _)| name == "open-sigcomp-startup").expect("start-up flow").1;
    let params = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
    let compartment = CompartmentId(1);
    for algorithm in [Algorithm::Deflate, Algorithm::Lz77] {
        let mut totals = Vec::new();
        for mechanism in [Mechanism::Basic, Mechanism::Dynamic] {
            let config = Config { algorithm, mechanism, transport: Transport::Message, ..Config::default() };
            let mut a = Endpoint::new(EndpointConfig::new(params, params, config)).unwrap();
            let mut b = Endpoint::new(EndpointConfig::new(params, params, config)).unwrap();
            let mut total = 0;
            for (k, m) in msgs.iter().enumerate() {
                // Requests and responses alternate between the two sides.
                let (sender, receiver) = if k % 2 == 0 { (&mut a, &mut b) } else { (&mut b, &mut a) };
                let now = std::time::Instant::now();
                let sent = sender.compress(now, compartment, m).unwrap_or_else(|e| panic!("{algorithm:?} #{k}: {e}"));
                match receiver.receive(&sent.message, Transport::Message) {
                    Ok(Received::Message(incoming)) => {
                        let cycles = incoming.cycles();
                        let output = receiver.accept(now, incoming, compartment).message;
                        assert_eq!(output, *m, "{algorithm:?} {mechanism:?} #{k}");
                        assert!(cycles <= budget(sent.message.len(), 16), "{algorithm:?} #{k}: {cycles} cycles");
                    }
                    other => panic!("{algorithm:?} {mechanism:?} #{k}: {other:?}"),
                }
                total += sent.message.len();
            }
            totals.push(total);
        }
        assert!(totals[1] < totals[0], "{algorithm:?}: dynamic {} >= basic {}", totals[1], totals[0]);
    }
}

fn sip_like() -> impl Strategy<Value = Vec<u8>> {
    let words = prop::sample::select(vec![
        &b"INVITE "[..],
        b"sip:",
        b"bob@",
        b"example.com",
        b"SIP/2.0",
        b"\r\n",
        b"Via: ",
        b";branch=z9hG4bK",
        b"Contact: ",
        b"<",
        b">",
        b"200 OK",
        b"Content-Length: ",
        b"0",
        b"1",
        b"7",
        b"a=rtpmap:",
    ]);
    prop::collection::vec(prop_oneof![words.prop_map(|w| w.to_vec()), prop::collection::vec(any::<u8>(), 1..6)], 0..200)
        .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_messages_round_trip(
        msg in sip_like(),
        prefix in sip_like(),
        size in 1024usize..16384,
        deflate_first in any::<bool>(),
    ) {
        let algo = if deflate_first { Algo::Deflate } else { Algo::Lz77 };
        // Fresh buffer.
        let r = run(algo, &vec![0u8; size], &msg).unwrap();
        prop_assert_eq!(&r.output, &msg);
        // Buffer holding `prefix` and random-ish filler before it.
        let mut window: Vec<u8> = (0..size).map(|i| (i * 31 % 7) as u8 + b'0').collect();
        let keep = prefix.len().min(size);
        window[size - keep..].copy_from_slice(&prefix[prefix.len() - keep..]);
        let r = run(algo, &window, &msg).unwrap();
        prop_assert_eq!(&r.output, &msg);
        // The Rust reference decoders agree with the bytecode.
        let tokens = algo.encode(&window, &msg);
        let reference = match algo {
            Algo::Deflate => deflate::decode(&window, &tokens),
            Algo::Lz77 => lz77::decode(&window, &tokens),
        };
        prop_assert_eq!(reference.as_deref(), Some(&msg[..]));
        // The parse is never worse than all literals: 9 bits a byte (fixed
        // codes), or one byte a byte plus a control byte per 128.
        let all_literals = match algo {
            Algo::Deflate => (9 * msg.len()).div_ceil(8),
            Algo::Lz77 => msg.len() + msg.len().div_ceil(128),
        };
        prop_assert!(tokens.len() <= all_literals, "{} > {}", tokens.len(), all_literals);
    }

    #[test]
    fn random_token_bytes_decode_alike(tokens in prop::collection::vec(any::<u8>(), 0..64)) {
        // Whatever the Rust reference decoder accepts, the bytecode decodes
        // to the same bytes; the rest ends in an output or a decompression
        // failure, never a panic.
        let window = [0u8; 1024];
        for algo in [Algo::Deflate, Algo::Lz77] {
            let udvm = decode_raw(algo, &tokens);
            let reference = match algo {
                Algo::Deflate => deflate::decode(&window, &tokens),
                Algo::Lz77 => lz77::decode(&window, &tokens),
            };
            if let Some(out) = reference {
                prop_assert_eq!(udvm.as_ref().ok(), Some(&out), "{:?}", algo);
            }
        }
    }
}
