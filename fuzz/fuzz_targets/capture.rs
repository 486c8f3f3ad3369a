#![no_main]
//! taroc's capture reader (pcap and pcapng, the link layers it knows)
//! on arbitrary bytes. Invariants: no panic; a capture it returns counts
//! every frame as used or skipped, every packet it returns passes its
//! IPv4 and TCP checksums (it repairs offloaded ones), and a file cut
//! short inside a record says where, after all the frames it read.

use libfuzzer_sys::fuzz_target;
use taroc::capture::read_capture;
use taroc::checksums_ok;

fuzz_target!(|data: &[u8]| {
    if let Ok(capture) = read_capture(data) {
        assert!(capture.packets.len() + capture.skipped.total() <= capture.frames);
        // A capture cut short inside a record: every frame before the cut
        // was read, and the partial record runs to the end of the bytes.
        if let Some(t) = capture.truncated {
            assert_eq!(t.records, capture.frames);
            assert_eq!(t.offset + t.present, data.len());
            assert!(t.declared.is_none_or(|d| d > t.present));
        }
        for p in &capture.packets {
            assert!(checksums_ok(&p.ip), "a returned packet fails its checksums");
        }
    }
});
