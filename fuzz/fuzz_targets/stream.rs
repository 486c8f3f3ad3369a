#![no_main]
//! A TCP byte stream -> Deframer (whole and chunked, which must agree) ->
//! decompress of every frame. Byte 0 picks the parameters, byte 1 the
//! chunking, the rest is the stream.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sigcomp_fuzz::run_stream(data);
});
