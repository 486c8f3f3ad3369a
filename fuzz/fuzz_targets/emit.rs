#![no_main]
//! The SigComp header emitters (RFC 3320 §7): bytecode upload and state
//! access, with and without a returned feedback item; see
//! `sigcomp_fuzz::run_emit` for the input layout.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sigcomp_fuzz::run_emit(data);
});
