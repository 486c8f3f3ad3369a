#![no_main]
//! Two sigcomp_compress endpoints: every message one compresses, the other
//! decompresses to the same bytes.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sigcomp_fuzz::run_compress(data);
});
