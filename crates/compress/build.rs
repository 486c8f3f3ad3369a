//! Assembles the decompressor bytecode under asm/ with sigcomp-asm, so the
//! UDVM programs stay readable RFC 4464 assembly in the repository.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    for name in ["lzss"] {
        let path = format!("asm/{name}.asm");
        println!("cargo:rerun-if-changed={path}");
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let asm = sigcomp_asm::assemble(&src).unwrap_or_else(|e| panic!("{path}: {e}"));
        let label = |l: &str| -> u16 {
            let a = *asm.labels.get(l).unwrap_or_else(|| panic!("{path}: no label {l}"));
            u16::try_from(a).unwrap_or_else(|_| panic!("{path}: label {l} at {a}"))
        };
        let init = label("init");
        assert_eq!(init, 128, "{path}: code must start at 128");
        let end = label("circular_buffer");
        // Memory from `init` up to the circular buffer, padding as zeros.
        let image: Vec<u8> = (init..end).map(|a| asm.byte_at(a).unwrap_or(0)).collect();
        std::fs::write(out.join(format!("{name}.bin")), image).expect("write image");
        let mut consts = String::new();
        let mut labels: Vec<_> = asm.labels.iter().collect();
        labels.sort();
        for (l, a) in labels {
            let a = u16::try_from(*a).unwrap_or_else(|_| panic!("{path}: label {l} at {a}"));
            writeln!(consts, "pub const {}: u16 = {a};", l.to_uppercase()).unwrap();
        }
        std::fs::write(out.join(format!("{name}_labels.rs")), consts).expect("write labels");
    }
}
