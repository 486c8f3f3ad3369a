#![no_main]
//! taroc's capture reader (pcap and pcapng, the link layers it knows)
//! on arbitrary bytes. Invariants: no panic; a capture it returns counts
//! every frame as used or skipped, and every packet it returns passes its
//! IPv4 and TCP checksums (it repairs offloaded ones).

use libfuzzer_sys::fuzz_target;
use taroc::capture::read_capture;
use taroc::checksums_ok;

fuzz_target!(|data: &[u8]| {
    if let Ok(capture) = read_capture(data) {
        assert!(capture.packets.len() + capture.skipped.total() <= capture.frames);
        for p in &capture.packets {
            assert!(checksums_ok(&p.ip), "a returned packet fails its checksums");
        }
    }
});
