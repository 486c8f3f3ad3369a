#![no_main]
//! The bounded line reader of `sigkit decompress --jsonl`. Byte 0 is the
//! line bound, byte 1 the reader's buffer size, the rest the input.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sigcomp_fuzz::run_lines(data);
});
