#![no_main]
//! sigkit_proxy::hep::Packet::parse, and where it parses, emit -> parse
//! -> the same fields -> emit -> the same bytes.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sigcomp_fuzz::run_hep(data);
});
