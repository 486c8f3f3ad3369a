//! The native decoders against the UDVM (the `native` target).
//!
//! Each run takes one recognised bytecode (sigkit's LZSS, Deflate and LZ77
//! under each mechanism, RFC 4464 §4.1.4's Deflate and Open SigComp's form
//! of it) and a message for it, and changes what the fuzzer chooses: the
//! compressed data replaced, its bits flipped, the message cut short, or a
//! snapshot state with any of its bytes rewritten (the registers, the
//! patched words, the tables, the history) named by a message with any
//! tokens. Two decompressors with the same states run it, one with the
//! native decoders and one without; everything they return must be equal:
//! the output, the cycles, the state requests with their bytes, the
//! feedback, the failure with its reason, pc and details, the NACK, and
//! what accepting the message does.

use std::sync::OnceLock;

use sigcomp::wire::{emit_state_message, Body, Header};
use sigcomp::{CompartmentId, Decompressor, Params, State, Transport};

/// A recognised bytecode and what a run starts from.
struct Base {
    /// A message that uploads the bytecode, with compressed data.
    upload: Vec<u8>,
    /// Where its compressed data starts.
    data_at: usize,
    /// The state the upload's END-MESSAGE saves (the snapshot), if any.
    snapshot: Option<State>,
    /// The decompression memory size the bytecode was made for.
    dms: u32,
}

const TEXT: &[u8] = b"INVITE sip:bob@biloxi.example.com SIP/2.0\r\n\
Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds\r\n\
Max-Forwards: 70\r\nTo: Bob <sip:bob@biloxi.example.com>\r\n\
From: Alice <sip:alice@atlanta.example.com>;tag=1928301774\r\n\
Call-ID: a84b4c76e66710@pc33.atlanta.example.com\r\nCSeq: 314159 INVITE\r\n\
Contact: <sip:alice@pc33.atlanta.example.com>\r\nContent-Length: 0\r\n\r\n";

/// sigkit's bytecode for a 4 KiB peer, whose snapshots are small enough
/// for many runs a second; RFC 4464's wants 8 KiB of UDVM memory.
const SIGKIT_DMS: u32 = 4096;
const RFC4464_DMS: u32 = 16384;

fn params(dms: u32, cpb: u16) -> Params {
    Params { dms, sms: dms, cpb, version: 2 }
}

fn bases() -> &'static [Base] {
    static BASES: OnceLock<Vec<Base>> = OnceLock::new();
    BASES.get_or_init(|| {
        let mut bases: Vec<Base> = sigkit_uploads().into_iter().map(|m| base(m, SIGKIT_DMS)).collect();
        bases.extend(rfc4464_uploads().into_iter().map(|m| base(m, RFC4464_DMS)));
        bases
    })
}

/// The first message of sigkit's compressor for each algorithm and
/// mechanism.
fn sigkit_uploads() -> Vec<Vec<u8>> {
    use sigcomp_compress::{Algorithm, Config, Endpoint, EndpointConfig, Mechanism};
    let mut out = Vec::new();
    for &algorithm in Algorithm::ALL {
        for mechanism in Mechanism::ALL {
            let config = Config { algorithm, mechanism, transport: Transport::Message, ..Config::default() };
            let p = params(SIGKIT_DMS, 16);
            let mut end = Endpoint::new(EndpointConfig::new(p, p, config)).expect("endpoint");
            let sent = end.compress(std::time::Instant::now(), CompartmentId(1), TEXT).expect("compress");
            out.push(sent.message);
        }
    }
    out
}

/// RFC 4464 §4.1.4's Deflate bytecode and Open SigComp's form of its
/// loop, each with the RFC's example message.
fn rfc4464_uploads() -> Vec<Vec<u8>> {
    let source = include_str!("../../crates/sigcomp-asm/tests/rfc4464/4.1.4-deflate.asm");
    let open_sigcomp = source.replace(
        "INPUT-HUFFMAN (index, !, 1, 5, 0, 31, distance_table_start)",
        "INPUT-BITS (5, index, !)\n   ADD ($index, distance_table_start)",
    );
    let hex = include_str!("../../crates/sigcomp-asm/tests/rfc4464/4.1.4-deflate.msg");
    let digits: Vec<u8> =
        hex.lines().filter(|l| !l.starts_with('#')).flat_map(|l| l.bytes().filter(u8::is_ascii_hexdigit)).collect();
    let input: Vec<u8> =
        digits.chunks_exact(2).filter_map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok()).collect();
    [source.to_string(), open_sigcomp]
        .iter()
        .map(|s| {
            sigcomp_asm::assemble(s).expect("assemble").upload().expect("upload").message(&input).expect("message")
        })
        .collect()
}

fn base(upload: Vec<u8>, dms: u32) -> Base {
    let header = Header::parse(&upload).expect("header");
    assert!(matches!(header.body, Body::Bytecode { .. }));
    let data_at = upload.len() - header.remaining.len();
    let mut d = Decompressor::new(params(dms, 16)).expect("decompressor");
    let out = d.decompress(&upload, Transport::Message).expect("the base message decompresses");
    let accepted = d.accept(out.pending, CompartmentId(1));
    // The snapshot is the created state that holds memory from 64.
    let snapshot = accepted.created.iter().filter_map(|id| d.states().get(id)).find(|s| s.address == 64).cloned();
    Base { upload, data_at, snapshot, dms }
}

/// The two decompressors, with and without the native decoders.
fn pair(params: Params, extra: Option<&State>) -> [Decompressor; 2] {
    [true, false].map(|native| {
        let mut d = Decompressor::new(params).expect("decompressor");
        d.set_native_decoders(native);
        if let Some(s) = extra {
            d.states_mut().add_local(s.clone());
        }
        d
    })
}

pub fn run(data: &[u8]) {
    let [which, settings, ref rest @ ..] = *data else { return };
    let bases = bases();
    let base = &bases[usize::from(which) % bases.len()];
    // At 16 cycles per bit, long matches run the cycles out inside the
    // loop (RFC 3320 §8.6).
    let cpb = [16, 32, 64, 128][usize::from(settings & 3)];
    let transport = if settings & 4 != 0 { Transport::Stream } else { Transport::Message };
    let mut extra = None;
    let message = match settings >> 3 & 3 {
        // Any compressed data after the bytecode.
        0 => [&base.upload[..base.data_at], rest].concat(),
        // The base's data with bits flipped: (position, mask) pairs.
        1 => {
            let mut m = base.upload.clone();
            let data_len = m.len() - base.data_at;
            for pair in rest.chunks_exact(3) {
                let at = usize::from(u16::from_be_bytes([pair[0], pair[1]])) % data_len.max(1);
                if let Some(b) = m.get_mut(base.data_at + at) {
                    *b ^= pair[2];
                }
            }
            m
        }
        // The base cut short.
        2 => {
            let cut = rest.first().map_or(0, |&n| usize::from(n)) * base.upload.len() / 256;
            base.upload[..base.data_at.max(cut).min(base.upload.len())].to_vec()
        }
        // The snapshot with bytes rewritten, then any tokens.
        _ => {
            let Some(snapshot) = &base.snapshot else { return };
            let [n, ref more @ ..] = *rest else { return };
            let n = usize::from(n % 16).min(more.len() / 3);
            let (writes, tokens) = more.split_at(3 * n);
            let mut value = snapshot.value().into_owned();
            for w in writes.chunks_exact(3) {
                let at = usize::from(u16::from_be_bytes([w[0], w[1]])) % value.len();
                value[at] = w[2];
            }
            let state = State::new(snapshot.address, snapshot.instruction, 6, &value);
            let message = emit_state_message(None, &state.id.0[..6], tokens).expect("state message");
            extra = Some(state);
            message
        }
    };
    let [mut native, mut udvm] = pair(params(base.dms, cpb), extra.as_ref());
    let a = native.decompress(&message, transport);
    let b = udvm.decompress(&message, transport);
    assert_eq!(a, b, "native and UDVM differ");
    assert_eq!(udvm.metrics().native_tokens, 0);
    match (a, b) {
        // The requests with their bytes are compared above; carrying them
        // out (hashing each state) is compared in one run of eight.
        (Ok(a), Ok(b)) if settings & 0xE0 == 0 => {
            let c = CompartmentId(7);
            assert_eq!(native.accept(a.pending, c), udvm.accept(b.pending, c));
            assert_eq!(native.metrics().state_bytes, udvm.metrics().state_bytes);
        }
        (Err(fa), Err(fb)) => assert_eq!(native.nack_for(&message, &fa), udvm.nack_for(&message, &fb)),
        _ => {}
    }
}
