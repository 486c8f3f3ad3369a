#![no_main]
//! The native decoders of recognised bytecode against the UDVM, on changed
//! messages and states (see `sigcomp_fuzz::native`).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sigcomp_fuzz::native::run(data);
});
