#![no_main]
//! `sigkit analyze`'s library on arbitrary bytes as a capture (pcap or
//! pcapng; UDP and TCP over IPv4 and IPv6; TCP reassembly; SigComp in the
//! capture decoded; one SigComp variant simulated so an input runs fast).
//! Invariants: no panic; every way of sending a flow has a size for each
//! of its messages, adding up to its total; TAROC gives back every packet
//! it takes identical.

use libfuzzer_sys::fuzz_target;
use sigcomp_compress::{Algorithm, Mechanism};
use sigkit_analyze::{analyze, Options, Variant};

fuzz_target!(|data: &[u8]| {
    let options = Options {
        variants: vec![Variant { mechanism: Mechanism::Dynamic, algorithm: Algorithm::Lzss }],
        ..Options::default()
    };
    if let Ok(analysis) = analyze(data, &options) {
        for flow in &analysis.flows {
            for v in &flow.variants {
                assert_eq!(v.sizes.len(), flow.messages.len(), "{}", v.name);
                assert_eq!(v.bytes, v.sizes.iter().sum::<usize>(), "{}", v.name);
            }
            if let Some(t) = &flow.taroc {
                assert_eq!(t.mismatches, 0, "TAROC gave back a packet changed");
            }
        }
    }
});
