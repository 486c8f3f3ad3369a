//! Assembles the decompressor bytecode under asm/ with sigcomp-asm, so the
//! UDVM programs stay readable RFC 4464 assembly in the repository.
//!
//! `asm/mechanism.asm` is the mechanism program; each algorithm's fragment
//! `asm/<algo>.asm` is spliced into it at the placeholders `; @@VARS@@`,
//! `; @@INIT@@` and `; @@TOKENS@@` (/work/notes/fragment-contract.md).
//! LZSS is always built; Deflate and LZ77 when both their fragment and
//! their encoder module exist (the cfg `sigkit_<algo>` is then set).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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

const MECHANISMS: [&str; 4] = ["basic", "static", "dynamic", "shared"];

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo::rustc-check-cfg=cfg(sigkit_deflate)");
    println!("cargo::rustc-check-cfg=cfg(sigkit_lz77)");
    println!("cargo:rerun-if-changed=asm");
    println!("cargo:rerun-if-changed=src");
    let mechanism_path = "asm/mechanism.asm";
    let mechanism = std::fs::read_to_string(mechanism_path).unwrap_or_else(|e| panic!("{mechanism_path}: {e}"));
    let mut images = String::new();
    for name in ["lzss", "deflate", "lz77"] {
        let path = format!("asm/{name}.asm");
        if name != "lzss" {
            if !Path::new(&path).exists() || !Path::new(&format!("src/{name}.rs")).exists() {
                continue;
            }
            println!("cargo:rustc-cfg=sigkit_{name}");
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
            let mut consts = String::new();
            let mut labels: Vec<_> = asm.labels.iter().collect();
            labels.sort();
            for (l, a) in labels {
                let a = u16::try_from(*a).unwrap_or_else(|_| panic!("{path}: label {l} at {a}"));
                writeln!(consts, "pub const {}: u16 = {a};", l.to_uppercase()).unwrap();
            }
            std::fs::write(out.join(format!("{stem}_labels.rs")), &consts).expect("write labels");
            let table: String = asm
                .labels
                .iter()
                .filter(|(l, _)| l.starts_with(&format!("{name}_")))
                .map(|(l, a)| format!("({l:?}, {a}), "))
                .collect();
            let upper = stem.to_uppercase();
            writeln!(
                images,
                "/// `asm/{name}.asm` spliced into `asm/mechanism.asm` for {mech}.\npub const {upper}: Image = Image {{ code: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{stem}.bin\")), init: {init}, circular_buffer: {end}, buffer_end: {}, buffer_size: {}, dict_begin: {}, dict_length: {}, dict_end: {}, code_length: {}, announce_params: {}, snapshot_length: {}, dictionary_id: {}, decompress: {}, labels: &[{table}] }};",
                label("buffer_end"),
                label("buffer_size"),
                label("dict_begin"),
                label("dict_length"),
                label("dict_end"),
                label("code_length"),
                label("announce_params"),
                label("snapshot_length"),
                label("dictionary_id"),
                label("decompress"),
            )
            .unwrap();
            if mech == "shared" {
                // The contract's `<algo>_labels.rs`: the full program's labels.
                std::fs::write(out.join(format!("{name}_labels.rs")), &consts).expect("write labels");
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
