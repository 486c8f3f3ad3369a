//! `sigkit asm` and `sigkit disasm` through the real binary: outputs, the
//! SigComp message they make and read, errors and exit codes.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use common::*;

fn path_str(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// The RFC 4464 examples live with the assembler's tests.
fn rfc4464(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sigcomp-asm/tests/rfc4464").join(name)
}

/// Hex text of an RFC test file, without its '#' comment lines.
fn hex_of(path: &std::path::Path) -> Vec<u8> {
    let text: String = std::fs::read_to_string(path).unwrap().lines().filter(|l| !l.starts_with('#')).collect();
    hex::decode(text.trim()).unwrap()
}

const HI: &str = "at (128)\nOUTPUT (text, 2)\nEND-MESSAGE (0, 0, 0, 0, 0, 0, 0)\n:text byte (0x68, 0x69)\n";
/// `HI` assembled: OUTPUT (140, 2), END-MESSAGE with seven zeros, "hi".
const HI_CODE: [u8; 14] = [0x22, 0xa0, 0x8c, 0x02, 0x23, 0, 0, 0, 0, 0, 0, 0, 0x68, 0x69];

#[test]
fn raw_bytecode_to_stdout() {
    let src = temp_file("hi.asm", HI.as_bytes());
    let run = sigkit(&["asm", path_str(&src)], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, HI_CODE);
}

#[test]
fn hex_output_and_output_file() {
    let src = temp_file("hi-hex.asm", HI.as_bytes());
    let out = temp_file("hi-hex.out", b"");
    let run = sigkit(&["asm", path_str(&src), "--hex", "-o", path_str(&out)], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(run.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), format!("{}\n", hex::encode(HI_CODE)));
}

/// `--message` prefixes the RFC 3320 §7 header (0xf8, code_len 14,
/// destination 128 = bits 0001), and `sigkit decompress` runs it.
#[test]
fn message_runs_in_sigkit_decompress() {
    let run = sigkit(&["asm", "--message", "-"], HI.as_bytes());
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let mut want = vec![0xf8, 0x00, 0xe1];
    want.extend(HI_CODE);
    assert_eq!(run.stdout, want);
    let msg = temp_file("hi.sigcomp", &run.stdout);
    let run = sigkit(&["decompress", path_str(&msg)], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, b"hi");
}

/// RFC 4464 §4.1.3: the LZW source, assembled into a message with the
/// RFC's example compressed data, decompresses to the RFC's text.
#[test]
fn rfc4464_lzw_example_end_to_end() {
    let data = temp_file("lzw.data", &hex_of(&rfc4464("4.1.3-lzw.msg")));
    let run =
        sigkit(&["asm", path_str(&rfc4464("4.1.3-lzw.asm")), "--message", "--input", path_str(&data), "--hex"], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    // an 8 KiB UDVM (udvm_memory_size = 8192 in the source) over UDP needs
    // DMS 8192 + the message size: the next valid DMS is 16384
    let run = sigkit(&["decompress", "--hex", "--dms", "16384", "-"], &run.stdout);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, b"So long and thanks for all the fish!\n");
}

#[test]
fn assembly_error_is_file_line_column_and_exit_3() {
    let src = temp_file("bad.asm", b"at (128)\n\nJUMP (nowhere)\n");
    let run = sigkit(&["asm", path_str(&src)], b"");
    assert_eq!(run.code, Some(3));
    assert!(run.stdout.is_empty());
    assert_eq!(run.stderr.trim_end(), format!("{}:3:7: undefined name 'nowhere'", path_str(&src)));
    // standard input is named <stdin>
    let run = sigkit(&["asm", "-"], b"at (128)\nADD (5, 1)\n");
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.starts_with("<stdin>:2:6: "), "stderr: {}", run.stderr);
}

#[test]
fn bytecode_a_message_cannot_upload_is_exit_3() {
    // the SigComp header can only load bytecode at 128, 192, ..., 1024
    let run = sigkit(&["asm", "--message", "-"], b"at (130)\nRETURN\n");
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.contains("multiple of 64"), "stderr: {}", run.stderr);
    // raw bytecode has no such limit
    let run = sigkit(&["asm", "-"], b"at (130)\nRETURN\n");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, [0x19]);
    // but nothing non-zero may lie below the first instruction
    let run = sigkit(&["asm", "-"], b"at (100)\nbyte (1)\nat (128)\nRETURN\n");
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.contains("address 100"), "stderr: {}", run.stderr);
}

#[test]
fn bad_usage_is_exit_2_and_unreadable_input_exit_3() {
    let run = sigkit(&["asm", "/nonexistent/x.asm"], b"");
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.contains("/nonexistent/x.asm"), "stderr: {}", run.stderr);
    let run = sigkit(&["asm", "-"], &[0xff, 0xfe]);
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.contains("UTF-8"), "stderr: {}", run.stderr);
    let run = sigkit(&["asm", "--input", "x", "-"], b"");
    assert_eq!(run.code, Some(2), "--input needs --message");
    let run = sigkit(&["disasm", "--address", "70000", "-"], b"");
    assert_eq!(run.code, Some(2));
    let run = sigkit(&["disasm", "--address", "256", "--message", "-"], b"");
    assert_eq!(run.code, Some(2), "--address conflicts with --message");
    let run = sigkit(&["disasm", "--hex", "-"], b"f80");
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.contains("bad hex"), "stderr: {}", run.stderr);
}

#[test]
fn disasm_raw_default_address_128() {
    let code = temp_file("hi.bin", &HI_CODE);
    let run = sigkit(&["disasm", path_str(&code)], b"");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
    let text = run.stdout_text();
    assert!(text.contains("\nat (128)\n"), "{text}");
    assert!(text.contains("\nOUTPUT (140, 2) "), "{text}");
    assert!(text.contains("\nEND-MESSAGE (0, 0, 0, 0, 0, 0, 0) "), "{text}");
    // and it assembles back to the same bytes
    let run = sigkit(&["asm", "-"], text.as_bytes());
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(run.stdout, HI_CODE);
}

#[test]
fn disasm_at_another_address() {
    let run = sigkit(&["disasm", "--hex", "--address", "960", "-"], b"0x1600");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let text = run.stdout_text();
    // JUMP (. + 0) to itself: a label at 960
    assert!(text.contains("at (960)\n:l_960\nJUMP (l_960)"), "{text}");
}

/// Every RFC 4464 example: asm → disasm → asm gives the same bytes, and
/// the bytes are the ones RFC 4464 Appendix A prints (for LZW and LZJH after
/// the codebook edit the sigcomp-asm tests document).
#[test]
fn rfc4464_examples_round_trip_through_the_cli() {
    for stem in ["4.1.1-lz77", "4.1.2-lzss", "4.1.4-deflate", "4.2.1-modified-deflate"] {
        let asm = sigkit(&["asm", path_str(&rfc4464(&format!("{stem}.asm")))], b"");
        assert_eq!(asm.code, Some(0), "{stem}: {}", asm.stderr);
        assert_eq!(asm.stdout, hex_of(&rfc4464(&format!("{stem}.hex"))), "{stem}");
        let dest = if stem == "4.1.4-deflate" { "320" } else { "128" };
        let dis = sigkit(&["disasm", "--address", dest, "-"], &asm.stdout);
        assert_eq!(dis.code, Some(0), "{stem}: {}", dis.stderr);
        let again = sigkit(&["asm", "-"], &dis.stdout);
        assert_eq!(again.code, Some(0), "{stem}: {}", again.stderr);
        assert_eq!(again.stdout, asm.stdout, "{stem}");
    }
}

#[test]
fn disasm_message_uses_its_destination() {
    // RFC 4465 A.2.4's second message loads its bytecode at 960 (bits 1110)
    let run = sigkit(&["asm", "--message", "-"], b"at (960)\nOUTPUT (960, 1)\nEND-MESSAGE (0, 0, 0, 0, 0, 0, 0)\n");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert_eq!(&run.stdout[..3], [0xf8, 0x00, 0x5e]);
    let message = run.stdout.clone();
    // without --message the bytes are disassembled as they are, with a hint
    let raw = sigkit(&["disasm", "-"], &message);
    assert_eq!(raw.code, Some(0), "stderr: {}", raw.stderr);
    assert!(raw.stderr.contains("looks like a SigComp message; --message"), "stderr: {}", raw.stderr);
    assert!(raw.stdout_text().contains("byte (0xf8"), "{}", raw.stdout_text());
    let run = sigkit(&["disasm", "--message", "-"], &message);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let text = run.stdout_text();
    assert!(text.starts_with("; SigComp message of 8 bytes: 3-byte header, 5 bytes of bytecode for address 960, 0 bytes of compressed data\n"), "{text}");
    assert!(text.contains("\nat (960)\nOUTPUT (960, 1) "), "{text}");
    // END-MESSAGE's zero operands are not sent; the disassembly completes it
    assert!(text.contains("\nEND-MESSAGE (0, 0, 0, 0, 0, 0, 0) "), "{text}");

    // with a returned feedback item (T bit, RFC 3320 §7.1) before code_len
    let run = sigkit(&["disasm", "--message", "--hex", "-"], b"fc 05 00 11 19 aa");
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    let text = run.stdout_text();
    assert!(text.starts_with("; SigComp message of 6 bytes: 4-byte header, 1 byte of bytecode for address 128, 1 byte of compressed data\n"), "{text}");
    assert!(text.contains("; returned feedback item: 05\n"), "{text}");
    assert!(text.contains("\nRETURN "), "{text}");
}

#[test]
fn disasm_message_without_bytecode_is_exit_3() {
    // a state-access message (6-byte partial state identifier)
    let run = sigkit(&["disasm", "--message", "--hex", "-"], b"f9 0102030405 06 aa");
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.contains("partial identifier 010203040506"), "stderr: {}", run.stderr);
    let run = sigkit(&["disasm", "--message", "--hex", "-"], b"f8");
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.contains("MESSAGE_TOO_SHORT"), "stderr: {}", run.stderr);
}
