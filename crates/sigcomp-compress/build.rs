//! Assembles the decompressor bytecode under asm/ with sigcomp-asm, so the
//! UDVM programs stay readable RFC 4464 assembly in the repository.
//!
//! `asm/mechanism.asm` is the mechanism program; each algorithm's fragment
//! `asm/<algo>.asm` is spliced into it at the placeholders `; @@VARS@@`,
//! `; @@INIT@@` and `; @@TOKENS@@` (the contract is in asm/README.md).
//! LZSS is always built; Deflate and LZ77 with their Cargo features.
//!
//! Output, in OUT_DIR:
//! * `images.rs`: one `Image` per algorithm and mechanism (the memory image
//!   from :init to :circular_buffer and the addresses the compressor
//!   patches);
//! * `<algo>_symbols.rs`: the labels (`pub const NAME: u16`, the address)
//!   and the `set` names (`pub const NAME: u16`, the value; `u8` for the
//!   flag bits, `flag_*`) of the full program (shared mechanism), so the
//!   compressor names what the assembly defines instead of restating it.
//!   Each constant carries a doc comment naming its label or `set` and the
//!   program it comes from, since the crate denies `missing_docs`.

// The unwraps are on `writeln!` into a String, whose `fmt::Write` never
// returns an error; and in a build script a panic is the error report, as
// the `expect`s and `panic!`s here are.
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::path::PathBuf;

/// The three sections of a fragment, in order.
const SECTIONS: [(&str, &str); 3] =
    [("; @vars", "; @@VARS@@"), ("; @init", "; @@INIT@@"), ("; @tokens", "; @@TOKENS@@")];

fn splice(mechanism: &str, fragment: &str, path: &str) -> String {
    let lines: Vec<&str> = fragment.lines().collect();
    let find = |marker: &str| {
        lines.iter().position(|l| l.trim() == marker).unwrap_or_else(|| panic!("{path}: no line '{marker}'"))
    };
    let starts: Vec<usize> = SECTIONS.iter().map(|(m, _)| find(m)).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{path}: sections must be @vars, @init, @tokens in order");
    let mut out = String::new();
    for line in mechanism.lines() {
        match SECTIONS.iter().position(|(_, p)| line.trim() == *p) {
            Some(k) => {
                let end = starts.get(k + 1).copied().unwrap_or(lines.len());
                writeln!(out, "; ---- {path}: {} ----", SECTIONS[k].0.trim_start_matches("; ")).unwrap();
                for l in &lines[starts[k] + 1..end] {
                    writeln!(out, "{l}").unwrap();
                }
                writeln!(out, "; ---- end of {path} section ----").unwrap();
            }
            None => writeln!(out, "{line}").unwrap(),
        }
    }
    out
}

/// Keeps the lines of `src` outside `; @@IF` blocks, and inside those
/// that name `mechanism`.
fn select(src: &str, mechanism: &str) -> String {
    let mut out = String::new();
    let mut keep = true;
    for line in src.lines() {
        let t = line.trim();
        if let Some(names) = t.strip_prefix("; @@IF ") {
            keep = names.split_whitespace().any(|n| n == mechanism);
        } else if t == "; @@ENDIF" {
            keep = true;
        } else if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The labels and `set` names of `asm` (the fragment `path` spliced into
/// the shared mechanism program) as documented Rust constants.
fn symbols(asm: &sigcomp_asm::Assembly, path: &str) -> String {
    let program = format!("`asm/mechanism.asm` (shared mechanism) with `{path}` spliced in");
    let mut out = String::new();
    for (l, a) in &asm.labels {
        let a = u16::try_from(*a).unwrap_or_else(|_| panic!("{path}: label {l} at {a}"));
        writeln!(out, "/// UDVM address of the label `:{l}` in {program}.").unwrap();
        writeln!(out, "pub const {}: u16 = {a};", l.to_uppercase()).unwrap();
    }
    for (n, v) in &asm.constants {
        let ty = if n.starts_with("flag_") { "u8" } else { "u16" };
        let ok = if ty == "u8" { u8::try_from(*v).is_ok() } else { u16::try_from(*v).is_ok() };
        assert!(ok, "{path}: set ({n}, {v}) does not fit {ty}");
        writeln!(out, "/// Value of `set ({n}, …)` in {program}.").unwrap();
        writeln!(out, "pub const {}: {ty} = {v};", n.to_uppercase()).unwrap();
    }
    out
}

/// The programs assembled per algorithm: one per mechanism, and the dynamic
/// and shared ones again with short snapshots.
const MECHANISMS: [&str; 6] = ["basic", "static", "dynamic", "shared", "dynamic_short", "shared_short"];

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=asm");
    let mechanism_path = "asm/mechanism.asm";
    let mechanism = std::fs::read_to_string(mechanism_path).unwrap_or_else(|e| panic!("{mechanism_path}: {e}"));
    let mut images = String::new();
    for name in ["lzss", "deflate", "lz77"] {
        let path = format!("asm/{name}.asm");
        // Cargo sets CARGO_FEATURE_<NAME> for each enabled feature.
        if name != "lzss" && std::env::var_os(format!("CARGO_FEATURE_{}", name.to_uppercase())).is_none() {
            continue;
        }
        let fragment = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for mech in MECHANISMS {
            let src = splice(&select(&mechanism, mech), &fragment, &path);
            let stem = format!("{name}_{mech}");
            std::fs::write(out.join(format!("{stem}.asm")), &src).expect("write spliced source");
            let asm = sigcomp_asm::assemble(&src)
                .unwrap_or_else(|e| panic!("{path} spliced into {mechanism_path} ({mech}): {e}"));
            let label = |l: &str| -> u16 {
                let a = *asm.labels.get(l).unwrap_or_else(|| panic!("{path}: no label {l}"));
                u16::try_from(a).unwrap_or_else(|_| panic!("{path}: label {l} at {a}"))
            };
            // RFC 3320 §7.3: the code destination is a multiple of 64 in 128..=1024.
            let init = label("init");
            assert!(init % 64 == 0 && (128..=1024).contains(&init), "{path}: code starts at {init}");
            let end = label("circular_buffer");
            // Memory from `init` up to the circular buffer, padding as zeros.
            let image: Vec<u8> = (init..end).map(|a| asm.byte_at(a).unwrap_or(0)).collect();
            std::fs::write(out.join(format!("{stem}.bin")), image).expect("write image");
            let table: String = asm
                .labels
                .iter()
                .filter(|(l, _)| l.starts_with(&format!("{name}_")))
                .map(|(l, a)| format!("({l:?}, {a}), "))
                .collect();
            let upper = stem.to_uppercase();
            writeln!(
                images,
                "/// `asm/{name}.asm` spliced into `asm/mechanism.asm` for {mech}.\npub const {upper}: Image = Image {{ code: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{stem}.bin\")), init: {init}, circular_buffer: {end}, buffer_end: {}, buffer_size: {}, dict_begin: {}, dict_length: {}, dict_end: {:?}, dict_at: {:?}, code_length: {}, announce_params: {}, snapshot_length: {}, dictionary_id: {}, decompress: {}, labels: &[{table}] }};",
                label("buffer_end"),
                label("buffer_size"),
                label("dict_begin"),
                label("dict_length"),
                asm.labels.get("dict_end").map(|&a| a as u16),
                asm.labels.get("dict_at").map(|&a| a as u16),
                label("code_length"),
                label("announce_params"),
                label("snapshot_length"),
                label("dictionary_id"),
                label("decompress"),
            )
            .unwrap();
            if mech == "shared" {
                std::fs::write(out.join(format!("{name}_symbols.rs")), symbols(&asm, &path)).expect("write symbols");
            }
        }
    }
    // The fallback that outputs its input (not spliced).
    let path = "asm/literal.asm";
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let asm = sigcomp_asm::assemble(&src).unwrap_or_else(|e| panic!("{path}: {e}"));
    let image: Vec<u8> = (128..asm.labels["circular_buffer"] as u16).map(|a| asm.byte_at(a).unwrap_or(0)).collect();
    std::fs::write(out.join("literal.bin"), image).expect("write literal image");
    std::fs::write(out.join("images.rs"), images).expect("write images.rs");
}
