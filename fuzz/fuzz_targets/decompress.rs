#![no_main]
//! Arbitrary bytes -> decompress over both transports. The first byte picks
//! the parameters (see `params_from_byte`), the rest is the message.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sigcomp_fuzz::run_decompress(data);
});
