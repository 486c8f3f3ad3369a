//! Helpers shared by the integration tests.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]
#![allow(dead_code)]

use std::path::PathBuf;

pub fn dir(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join(sub)
}

pub fn read(sub: &str, name: &str) -> String {
    let p = dir(sub).join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Hex from a .hex/.msg file: '#' lines are comments, whitespace ignored.
pub fn hex_file(sub: &str, name: &str) -> Vec<u8> {
    unhex(&read(sub, name).lines().filter(|l| !l.trim_start().starts_with('#')).collect::<String>())
}

pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The destination recorded in a .hex file header comment.
pub fn hex_destination(sub: &str, name: &str) -> u16 {
    let text = read(sub, name);
    let line = text.lines().find(|l| l.starts_with("# destination ")).expect("destination line");
    line["# destination ".len()..].split(',').next().unwrap().trim().parse().unwrap()
}

/// All stems (file names without extension) with a given extension.
pub fn stems(sub: &str, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir(sub))
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == ext).then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    v.sort();
    v
}

/// First differing offset, for readable assertion messages.
pub fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))
}

/// A place where an RFC's printed source does not produce its printed bytes.
pub struct Discrepancy {
    pub sub: &'static str,
    pub stem: &'static str,
    /// (text in the printed source, replacement that yields the printed bytes)
    pub edits: &'static [(&'static str, &'static str)],
}

/// The RFC's source/bytes disagreements found while checking the assembler.
///
/// - RFC 4465 §4.5 (bytecode state creation): Appendix A.3.5 has one more
///   byte than the printed source: a 0x00 (DECOMPRESSION-FAILURE) right after
///   `JUMP (modify)`, and `INPUT-BYTES (1, after_output_minus1,
///   decompression_failure)` branches to that byte (operand 0xfc = -4),
///   whereas the printed source puts `:decompression_failure` after the last
///   byte.  Both branch to a zero byte (memory past the bytecode is 0
///   too), but every address after the JUMP differs by one, and with it the
///   identifier of the state END-MESSAGE creates, which the test's later
///   messages access (see `torture_runs.rs`).
/// - RFC 4464 §4.1.3 (LZW): the source says `at (4492)` before `:codebook`,
///   but Appendix A.1.3 encodes `codebook` as 4495 (0xb18f in MULTILOAD and
///   in `ADD ($index, codebook)`).
/// - RFC 4464 §4.1.5 (LZJH): likewise `set (codebook_start, 4492)`, while
///   Appendix A.1.5 encodes 4495 (0xb18f) and `first_codeword` =
///   codebook_start - 12 as 4483 (0xb183).
///
/// Both codebook placements are self-consistent, so either bytecode
/// decompresses the RFC's example messages (checked below).
pub const RFC_DISCREPANCIES: &[Discrepancy] = &[
    Discrepancy {
        sub: "rfc4465",
        stem: "4.5-bytecode-state-creation",
        edits: &[
            ("JUMP (modify)\n", "JUMP (modify)\n:decompression_failure\nDECOMPRESSION-FAILURE\n"),
            (":end_saved\n:decompression_failure\n", ":end_saved\n"),
        ],
    },
    Discrepancy { sub: "rfc4464", stem: "4.1.3-lzw", edits: &[("at (4492)", "at (4495)")] },
    Discrepancy {
        sub: "rfc4464",
        stem: "4.1.5-lzjh",
        edits: &[("set (codebook_start, 4492)", "set (codebook_start, 4495)")],
    },
];

/// The source of `stem` with the edits that make it match the RFC's bytes.
pub fn source_matching_rfc_bytes(sub: &str, stem: &str) -> String {
    let mut src = read(sub, &format!("{stem}.asm"));
    for d in RFC_DISCREPANCIES.iter().filter(|d| d.sub == sub && d.stem == stem) {
        for (from, to) in d.edits {
            assert_eq!(src.matches(from).count(), 1, "{stem}: edit target {from:?} must occur once");
            src = src.replacen(from, to, 1);
        }
    }
    src
}
