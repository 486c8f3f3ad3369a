//! Helpers shared by the integration tests.
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
    unhex(
        &read(sub, name)
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<String>(),
    )
}

pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(s.len() % 2 == 0, "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
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
