#![no_main]
//! Nack::parse, and where it parses, emit -> the same bytes -> parse again.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sigcomp_fuzz::run_nack(data);
});
