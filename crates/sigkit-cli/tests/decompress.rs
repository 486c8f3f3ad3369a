//! `sigkit decompress FILE`: one message, `--hex`, `--stream`, failures and
//! bad arguments, through the real binary.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use common::*;

fn path_str(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn one_message_to_stdout() {
    let file = temp_file("hello.bin", &output_message(b"hello, SigComp"));
    let run = sigkit(&["decompress", path_str(&file)], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, b"hello, SigComp");
}

#[test]
fn dash_reads_stdin() {
    let run = sigkit(&["decompress", "-"], &output_message(b"from stdin"));
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, b"from stdin");
}

#[test]
fn user_requested_failure_exits_1_with_reason() {
    let file = temp_file("fail.bin", &user_requested_failure());
    let run = sigkit(&["decompress", path_str(&file)], b"");
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("USER_REQUESTED"), "stderr: {}", run.stderr);
    // The failing instruction is DECOMPRESSION-FAILURE at 128; no details.
    assert!(run.stderr.contains("pc 128"), "stderr: {}", run.stderr);
    assert!(run.stderr.contains("details: none"), "stderr: {}", run.stderr);
}

#[test]
fn too_short_message() {
    let file = temp_file("short.bin", &[0xf8]);
    let run = sigkit(&["decompress", path_str(&file)], b"");
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("MESSAGE_TOO_SHORT"), "stderr: {}", run.stderr);
    // The same as hex text on stdin.
    let run = sigkit(&["decompress", "--hex", "-"], b"f8\n");
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("MESSAGE_TOO_SHORT"), "stderr: {}", run.stderr);
}

#[test]
fn cycles_exhausted_details_are_the_cycles_per_bit() {
    let file = temp_file("loop.bin", &endless_loop());
    let run = sigkit(&["decompress", path_str(&file)], b"");
    assert_eq!(run.code, Some(1));
    // RFC 4077: CYCLES_EXHAUSTED carries cycles_per_bit (16 = 0x10).
    assert!(run.stderr.contains("CYCLES_EXHAUSTED"), "stderr: {}", run.stderr);
    assert!(run.stderr.contains("details: 10"), "stderr: {}", run.stderr);
    let run = sigkit(&["decompress", "--cpb", "128", path_str(&file)], b"");
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("details: 80"), "stderr: {}", run.stderr);
}

#[test]
fn hex_reads_an_rfc4465_dump() {
    // RFC 4465 Appendix A.1.1 (bit manipulation), as printed in the RFC.
    let dump = "\
   0xf80a 7116 a07f 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
   0x0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
   0x0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
   0x0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
   0x0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000 0000
   0x01c0 00ff 8055 5502 202a 0321 0420 0305 21ff 2286 0401 20c0 ff02
   0x2060 0320 0421 6005 2061 2286 0423
";
    let file = temp_file("a11.hex", dump.as_bytes());
    let run = sigkit(&["decompress", "--hex", path_str(&file)], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, [0x01, 0x50, 0x00, 0x00, 0xfe, 0xbf, 0x00, 0x00]);
}

#[test]
fn hex_reads_the_rfc4896_uncompressed_bytecode() {
    // RFC 4896 §11: bytecode that outputs its input as is; "hi!" follows.
    let text = "0xf8, 0x00, 0xa1, 0x1c, 0x01, 0x86, 0x09, 0x22, 0x86, 0x01, 0x16,\n\
                0xf9, 0x23\n68 69 21\n";
    let run = sigkit(&["decompress", "--hex", "-"], text.as_bytes());
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, b"hi!");
}

#[test]
fn bad_hex_is_an_input_error() {
    for text in ["f8 0", "f8 zz", "0xf8 0x"] {
        let run = sigkit(&["decompress", "--hex", "-"], text.as_bytes());
        // "0xf8 0x" is fine hex (an empty token); the others are not.
        if text == "0xf8 0x" {
            assert_eq!(run.code, Some(1), "{text}: {}", run.stderr);
            assert!(run.stderr.contains("MESSAGE_TOO_SHORT"));
        } else {
            assert_eq!(run.code, Some(3), "{text}: {}", run.stderr);
            assert!(run.stderr.contains("bad hex"), "{text}: {}", run.stderr);
        }
    }
}

#[test]
fn stream_outputs_every_message_in_order() {
    // Messages full of 0xFF bytes exercise the escaping of record marking.
    let msgs = vec![
        output_message(b"first;"),
        output_message(&[0xFF, 0xFF, 0x80, 0xFF, b';']),
        output_message(&[0xFF; 300]),
        output_message(b"last"),
    ];
    let mut want = Vec::new();
    want.extend_from_slice(b"first;");
    want.extend_from_slice(&[0xFF, 0xFF, 0x80, 0xFF, b';']);
    want.extend_from_slice(&[0xFF; 300]);
    want.extend_from_slice(b"last");
    let stream = stream_of(&msgs);
    let file = temp_file("stream.bin", &stream);
    let run = sigkit(&["decompress", "--stream", path_str(&file)], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, want);
    // The same from stdin.
    let run = sigkit(&["decompress", "--stream", "-"], &stream);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, want);
}

#[test]
fn stream_state_carries_over_between_messages() {
    let (maker, id) = state_maker(b"made state;", 64);
    let stream = stream_of(&[maker, access_message(&id.0[..6]), access_message(&id.0[..12])]);
    let file = temp_file("stateful.bin", &stream);
    let run = sigkit(&["decompress", "--stream", path_str(&file)], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout_text(), "made state;made state;made state;");
}

#[test]
fn stream_reports_a_failed_message_and_goes_on() {
    let stream = stream_of(&[output_message(b"one "), user_requested_failure(), output_message(b"three")]);
    let run = sigkit(&["decompress", "--stream", "-"], &stream);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stdout_text(), "one three");
    assert!(run.stderr.contains("message 2"), "stderr: {}", run.stderr);
    assert!(run.stderr.contains("USER_REQUESTED"), "stderr: {}", run.stderr);
}

#[test]
fn stream_framing_error_ends_the_stream() {
    let mut stream = stream_of(&[output_message(b"before")]);
    stream.extend_from_slice(&[0xF8, 0xFF, 0x90]); // reserved escape 0xFF90
    stream.extend(stream_of(&[output_message(b"after")]));
    let run = sigkit(&["decompress", "--stream", "-"], &stream);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stdout_text(), "before");
    assert!(run.stderr.contains("FRAMING_ERROR"), "stderr: {}", run.stderr);
}

#[test]
fn stream_cut_inside_a_message() {
    let mut stream = stream_of(&[output_message(b"whole")]);
    let second = output_message(b"cut");
    stream.extend_from_slice(&second[..5]);
    let run = sigkit(&["decompress", "--stream", "-"], &stream);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stdout_text(), "whole");
    assert!(run.stderr.contains("ends inside a message: 5 byte"), "stderr: {}", run.stderr);
}

#[test]
fn bad_parameters_exit_2() {
    let file = temp_file("p.bin", &output_message(b"x"));
    let f = path_str(&file);
    for (args, needle) in [
        (vec!["decompress", "--dms", "1000", f], "decompression memory size 1000"),
        (vec!["decompress", "--sms", "3000", f], "state memory size 3000"),
        (vec!["decompress", "--cpb", "17", f], "cycles per bit 17"),
        (vec!["decompress", "--jsonl", "--dms", "0"], "decompression memory size 0"),
    ] {
        let run = sigkit(&args, b"");
        assert_eq!(run.code, Some(2), "{args:?}");
        assert!(run.stdout.is_empty());
        assert!(run.stderr.contains("invalid endpoint parameters"), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    // Valid non-default values work.
    let run = sigkit(&["decompress", "--dms", "65536", "--sms", "0", "--cpb", "128", f], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, b"x");
}

#[test]
fn usage_errors_exit_2() {
    let run = sigkit(&["decompress", "/nonexistent/sigkit-test-file"], b"");
    assert_eq!(run.code, Some(3), "an unreadable file is an input error: {}", run.stderr);
    for args in [
        vec!["decompress"],
        vec!["decompress", "--jsonl", "somefile"],
        vec!["decompress", "--dms", "lots", "-"],
        vec!["frobnicate"],
    ] {
        let run = sigkit(&args, b"");
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}");
        assert!(!run.stderr.is_empty(), "{args:?}");
    }
}

/// A small deterministic generator for hostile input.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = (self.next() as usize) % (max + 1);
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn hostile_input_never_panics() {
    let mut rng = XorShift(0x5EED_5EED_1234_5678);
    // Many random messages (most with a SigComp first byte) in one stream.
    let msgs: Vec<Vec<u8>> = (0..400)
        .map(|i| {
            let mut m = rng.bytes(300);
            if i % 4 != 0 && !m.is_empty() {
                m[0] |= 0xF8;
                if i % 2 == 0 {
                    m[0] &= !0x03; // bytecode upload
                }
            }
            m.push(0); // never empty, so every message is framed
            m
        })
        .collect();
    let run = sigkit(&["decompress", "--stream", "-"], &stream_of(&msgs));
    assert!(matches!(run.code, Some(0) | Some(1)), "code {:?}: {}", run.code, run.stderr);
    // Raw random bytes as a stream and as single messages.
    for _ in 0..10 {
        let junk = rng.bytes(2000);
        let run = sigkit(&["decompress", "--stream", "-"], &junk);
        assert!(matches!(run.code, Some(0) | Some(1)), "code {:?}: {}", run.code, run.stderr);
        let run = sigkit(&["decompress", "-"], &junk);
        assert_eq!(run.code, Some(1), "random bytes decompressed: {}", run.stderr);
    }
}

#[test]
fn stream_ending_with_a_lone_escape_byte_exits_1() {
    // A 0xFF after the last delimiter starts an escape (RFC 3320 §4.2.2):
    // the stream ends inside a message.
    let mut stream = stream_of(&[output_message(b"whole")]);
    stream.push(0xFF);
    let run = sigkit(&["decompress", "--stream", "-"], &stream);
    assert_eq!(run.code, Some(1), "stderr: {}", run.stderr);
    assert_eq!(run.stdout_text(), "whole");
    assert!(run.stderr.contains("ends inside a message: 1 byte"), "stderr: {}", run.stderr);
}

/// Reads the child's stdout in a thread, passing on what each read returns.
fn read_chunks(mut stdout: std::process::ChildStdout) -> std::sync::mpsc::Receiver<Vec<u8>> {
    use std::io::Read;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    rx
}

/// Collects output until it holds `want` bytes, waiting at most 20 s.
fn expect_output(rx: &std::sync::mpsc::Receiver<Vec<u8>>, want: &[u8]) {
    let mut got = Vec::new();
    while got.len() < want.len() {
        match rx.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(bytes) => got.extend(bytes),
            Err(e) => panic!("{e}: output {:?} so far, {:?} expected", String::from_utf8_lossy(&got), want),
        }
    }
    assert_eq!(got, want);
}

#[test]
fn stream_messages_are_written_as_they_arrive() {
    // Each message's output must come out while stdin is still open: the
    // stream is decompressed as it is read, not after its end. The second
    // message arrives in two writes, cut inside its 0xFF escapes.
    use std::io::Write;
    use std::process::{Command, Stdio};
    for hex in [false, true] {
        let mut args = vec!["decompress", "--stream", "-"];
        if hex {
            args.insert(2, "--hex");
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_sigkit"))
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let rx = read_chunks(child.stdout.take().unwrap());
        let encode = |bytes: &[u8]| if hex { format!("{} ", hex::encode(bytes)).into_bytes() } else { bytes.to_vec() };
        stdin.write_all(&encode(&stream_of(&[output_message(b"first")]))).unwrap();
        stdin.flush().unwrap();
        expect_output(&rx, b"first");
        let second = stream_of(&[output_message(&[0xFF, 0xFF, 0x01, 0xFF, b'2'])]);
        let cut = second.iter().position(|&b| b == 0xFF).unwrap() + 1;
        stdin.write_all(&encode(&second[..cut])).unwrap();
        stdin.flush().unwrap();
        stdin.write_all(&encode(&second[cut..])).unwrap();
        stdin.flush().unwrap();
        expect_output(&rx, &[0xFF, 0xFF, 0x01, 0xFF, b'2']);
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "hex {hex}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn stream_hex_is_decoded_as_read() {
    // A hex stream cut anywhere (the binary reads it in chunks): the same
    // output as the binary stream; bad hex is a usage error after the
    // messages before it.
    let msgs: Vec<Vec<u8>> = (0..2000).map(|i| output_message(format!("{i};").as_bytes())).collect();
    let want: String = (0..2000).map(|i| format!("{i};")).collect();
    let text = hex::encode(stream_of(&msgs)).into_bytes();
    let text: Vec<u8> = text.chunks(7).flat_map(|c| c.iter().copied().chain(*b", 0x")).collect();
    let run = sigkit(&["decompress", "--stream", "--hex", "-"], &text);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout_text(), want);
    let mut text = hex::encode(stream_of(&[output_message(b"before")])).into_bytes();
    text.extend_from_slice(b" zz");
    let run = sigkit(&["decompress", "--stream", "--hex", "-"], &text);
    assert_eq!(run.code, Some(3), "stderr: {}", run.stderr);
    assert_eq!(run.stdout_text(), "before");
    assert!(run.stderr.contains("bad hex"), "stderr: {}", run.stderr);
}

#[test]
fn a_single_message_over_1_mib_is_refused_unread() {
    // No decompression memory holds it; the input is not read past the
    // bound (nor held), binary or hex, file or stdin.
    let mut big = output_message(b"big");
    big.resize((1 << 20) + 1, 0);
    let file = temp_file("big.bin", &big);
    for (args, input) in [
        (vec!["decompress", path_str(&file)], Vec::new()),
        (vec!["decompress", "-"], big.clone()),
        (vec!["decompress", "--hex", "-"], hex::encode(&big).into_bytes()),
    ] {
        let run = sigkit(&args, &input);
        assert_eq!(run.code, Some(1), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("over 1048576 bytes"), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    // Exactly 1 MiB is read, and fails as the decompressor decides.
    big.truncate(1 << 20);
    let run = sigkit(&["decompress", "-"], &big);
    assert_eq!(run.code, Some(1));
    assert!(!run.stderr.contains("over 1048576"), "{}", run.stderr);
}
