//! Decompresses hex messages given on the command line (developer aid).

// Neither unwrap can fail: the parameters are the defaults (valid) with
// version 1, and only pairs of hex digits are parsed.
#![allow(clippy::unwrap_used)]

use sigcomp::{Decompressor, Params, Transport};
fn main() {
    let mut d = Decompressor::new(Params { version: 1, ..Params::default() }).unwrap();
    for a in std::env::args().skip(1) {
        let clean: String = a.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        let m: Vec<u8> =
            (0..clean.len() / 2).map(|i| u8::from_str_radix(&clean[2 * i..2 * i + 2], 16).unwrap()).collect();
        match d.decompress(&m, Transport::Message) {
            Ok(o) => println!(
                "ok output={} cycles={}",
                o.output.iter().map(|b| format!("{b:02x}")).collect::<String>(),
                o.cycles
            ),
            Err(f) => println!("fail {f} cycles={}", f.cycles),
        }
    }
}
