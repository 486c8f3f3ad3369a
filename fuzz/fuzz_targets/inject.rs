#![no_main]
//! sigkit-loadgen: the input as a SIPp CSV injection file (`-inf`). Parsing
//! never panics; a file that parses has lines, and every call number
//! picks one of them.

use libfuzzer_sys::fuzz_target;
use sigkit_loadgen::{scenario, Injection};

fuzz_target!(|data: &[u8]| {
    let Ok(inj) = Injection::parse(&scenario::decode_text(data)) else { return };
    assert!(!inj.lines.is_empty());
    for call in [0, 1, 2, u64::MAX] {
        assert!(inj.line_index(call, call.wrapping_mul(0x9e37_79b9_7f4a_7c15)) < inj.lines.len());
    }
});
