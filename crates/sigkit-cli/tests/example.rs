//! Generates and checks `examples/hello.sigcomp`.
//!
//! The example is a SigComp message that uploads a 53-byte bytecode (a
//! tiny dictionary decompressor) followed by a SIP OPTIONS request
//! compressed against the SIP/SDP static dictionary of RFC 3485, which
//! every SIP endpoint holds as locally available state.
//!
//! To rewrite the file after changing anything here:
//! `SIGKIT_REGENERATE_EXAMPLES=1 cargo test -p sigkit-cli --test example up_to_date`
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::path::PathBuf;

use sigcomp::{dict, Decompressor, Params, Reason, Transport};

/// What the example decompresses to.
const HELLO_SIP: &str = "OPTIONS sip:bob@example.com SIP/2.0\r\n\
Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK74bf9\r\n\
Max-Forwards: 70\r\n\
To: <sip:bob@example.com>\r\n\
From: <sip:alice@example.com>;tag=9fxced76sl\r\n\
Call-ID: 3848276298220188511\r\n\
CSeq: 1 OPTIONS\r\n\
Content-Length: 0\r\n\r\n";

/// Where the bytecode loads the whole dictionary (4836 bytes, so the UDVM
/// needs at least 1024 + 4836 = 5860 bytes: the default DMS of 8192 over a
/// message transport).
const DICT_AT: u16 = 1024;
/// Where literal runs are read to before they are output (127 bytes).
const LITERALS_AT: u16 = 512;

/// The decompressor, uploaded to address 128. Its input is a sequence of
/// tokens: a byte t < 128 followed by t literal bytes, or a byte 128 + n
/// followed by a 2-byte UDVM address: output n bytes from there (the
/// dictionary sits at DICT_AT, so that is DICT_AT + offset).
///
/// ```text
///  at (32)   :tok  pad (2)     ; the token byte lands in the low byte
///            :addr pad (2)
///  at (128)
///  128 STATE-ACCESS (sip_sdp_id, 6, 0, 0, 1024, 0) ; dictionary at 1024
///  136 :loop  INPUT-BYTES (1, 33, end)
///  140        COMPARE ($tok, 128, literal, copy, copy)
///  146 :literal INPUT-BYTES ($tok, 512, end)
///  150        OUTPUT (512, $tok)
///  153        JUMP (loop)
///  155 :copy  SUBTRACT ($tok, 128)
///  158        INPUT-BYTES (2, 34, end)
///  162        OUTPUT ($addr, $tok)
///  165        JUMP (loop)
///  167 :end   END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
///  175 :sip_sdp_id  byte (0xfb, 0xe5, 0x07, 0xdf, 0xe5, 0xe6)
/// ```
fn hello_bytecode() -> Vec<u8> {
    let mut code = vec![
        0x1F, 0xA0, 0xAF, 0x06, 0x00, 0x00, 0x8A, 0x00, // STATE-ACCESS (175, 6, 0, 0, 1024, 0)
        0x1C, 0x01, 0x21, 0x1F, // 136 INPUT-BYTES (1, 33, @+31 = 167)
        0x17, 0x50, 0x87, 0x06, 0x0F, 0x0F, // 140 COMPARE (m[32], 128, @146, @155, @155)
        0x1C, 0x50, 0x89, 0x15, // 146 INPUT-BYTES (m[32], 512, @+21 = 167)
        0x22, 0x89, 0x50, // 150 OUTPUT (512, m[32])
        0x16, 0xEF, // 153 JUMP (@-17 = 136)
        0x07, 0x10, 0x87, // 155 SUBTRACT ($32, 128)
        0x1C, 0x02, 0x22, 0x09, // 158 INPUT-BYTES (2, 34, @+9 = 167)
        0x22, 0x51, 0x50, // 162 OUTPUT (m[34], m[32])
        0x16, 0xE3, // 165 JUMP (@-29 = 136)
        0x23, 0, 0, 0, 0, 0, 0, 0, // 167 END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
    ];
    assert_eq!(code.len(), 175 - 128);
    code.extend_from_slice(&dict::SIP_SDP_ID[..6]);
    // The operands above hard-code these two addresses (0x8A = 1024, 0x89 = 512).
    assert_eq!((DICT_AT, LITERALS_AT), (1024, 512));
    code
}

/// The shortest token sequence for `msg` (dynamic programming over every
/// literal run and every dictionary match).
fn compress(msg: &[u8]) -> Vec<u8> {
    let d = dict::SIP_SDP;
    let n = msg.len();
    // Longest dictionary match at each position, and where it is.
    let longest: Vec<(usize, usize)> = (0..n)
        .map(|i| {
            (0..d.len())
                .map(|p| {
                    let len = d[p..].iter().zip(&msg[i..]).take_while(|(a, b)| a == b).count();
                    (len.min(127), p)
                })
                .max()
                .unwrap()
        })
        .collect();
    #[derive(Clone, Copy)]
    enum Tok {
        Lit(usize),
        Copy(usize, usize),
    }
    let mut best = vec![usize::MAX; n + 1];
    let mut choice = vec![Tok::Lit(0); n + 1];
    best[n] = 0;
    for i in (0..n).rev() {
        for len in 1..=127.min(n - i) {
            let cost = 1 + len + best[i + len];
            if cost < best[i] {
                best[i] = cost;
                choice[i] = Tok::Lit(len);
            }
        }
        let (max, at) = longest[i];
        for len in 1..=max {
            let cost = 3 + best[i + len];
            if cost < best[i] {
                best[i] = cost;
                choice[i] = Tok::Copy(len, at);
            }
        }
    }
    let mut out = Vec::with_capacity(best[0]);
    let mut i = 0;
    while i < n {
        match choice[i] {
            Tok::Lit(len) => {
                out.push(len as u8);
                out.extend_from_slice(&msg[i..i + len]);
                i += len;
            }
            Tok::Copy(len, at) => {
                out.push(128 + len as u8);
                out.extend_from_slice(&(DICT_AT + at as u16).to_be_bytes());
                i += len;
            }
        }
    }
    assert_eq!(out.len(), best[0]);
    out
}

fn hello_message() -> Vec<u8> {
    sigcomp::wire::emit_bytecode_message(None, &hello_bytecode(), 128, &compress(HELLO_SIP.as_bytes())).unwrap()
}

fn example_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello.sigcomp")
}

#[test]
fn example_file_is_up_to_date() {
    let want = hello_message();
    let path = example_path();
    if std::env::var_os("SIGKIT_REGENERATE_EXAMPLES").is_some() {
        // Write then rename, so tests running beside this one never read half a file.
        let tmp = path.with_extension("sigcomp.tmp");
        std::fs::write(&tmp, &want).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }
    let have = std::fs::read(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} is stale; regenerate it with SIGKIT_REGENERATE_EXAMPLES=1 cargo test -p sigkit-cli --test example up_to_date",
        path.display()
    );
}

#[test]
fn example_decompresses_and_really_compresses() {
    let msg = std::fs::read(example_path()).unwrap();
    let mut d = Decompressor::new(Params::default()).unwrap();
    let out = d.decompress(&msg, Transport::Message).unwrap();
    assert_eq!(String::from_utf8(out.output).unwrap(), HELLO_SIP);
    // Bytecode included, the SigComp message is smaller than the SIP message.
    assert!(msg.len() < HELLO_SIP.len(), "{} >= {}", msg.len(), HELLO_SIP.len());
}

#[test]
fn example_depends_on_the_dictionary() {
    // An endpoint without the RFC 3485 dictionary cannot run it.
    let msg = std::fs::read(example_path()).unwrap();
    let mut d = Decompressor::bare(Params::default()).unwrap();
    let f = d.decompress(&msg, Transport::Message).unwrap_err();
    assert_eq!(f.reason, Reason::StateNotFound);
    assert_eq!(f.details, &dict::SIP_SDP_ID[..6]);
}

#[test]
fn cli_prints_the_example() {
    let path = example_path();
    let run = common::sigkit(&["decompress", path.to_str().unwrap()], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout_text(), HELLO_SIP);
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
}

#[test]
fn example_is_too_big_for_a_small_endpoint() {
    // With DMS 4096 the dictionary does not fit in UDVM memory: the CLI
    // reports the failure instead of printing something wrong.
    let path = example_path();
    let run = common::sigkit(&["decompress", "--dms", "4096", path.to_str().unwrap()], b"");
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("SEGFAULT"), "stderr: {}", run.stderr);
}
