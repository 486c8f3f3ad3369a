//! The flows and the compress + decompress pass that the round_trip bench
//! and the round_trip_rate example both time.

use rohc_tcp::synth::{bulk_transfer, sip_over_tcp, Dir, FlowOptions};
use rohc_tcp::{HeaderCompressor, HeaderDecompressor, Mode, Scheme};

/// A bulk transfer's data and ACK directions and SIP over TCP's client
/// side, each as its packets.
pub fn flows() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let bulk = bulk_transfer(2000, 1460, 97, FlowOptions::default());
    let sip = sip_over_tcp(100, FlowOptions::default());
    let pick = |f: &[(Dir, Vec<u8>)], d: Dir| f.iter().filter(|(x, _)| *x == d).map(|(_, p)| p.clone()).collect();
    vec![
        ("bulk-data", pick(&bulk, Dir::Forward)),
        ("bulk-acks", pick(&bulk, Dir::Backward)),
        ("sip-client", pick(&sip, Dir::Forward)),
    ]
}

/// TAROC in each mode, with the label the results name it by.
pub const TAROC_MODES: [(Scheme, &str); 3] =
    [(Scheme::Taroc(Mode::U), "taroc-u"), (Scheme::Taroc(Mode::O), "taroc-o"), (Scheme::Taroc(Mode::R), "taroc-r")];

/// Compresses and decompresses every packet in turn, the decompressor's
/// feedback given back to the compressor after each; returns the length of
/// the last packet decompressed.
pub fn pass(comp: &mut dyn HeaderCompressor, decomp: &mut dyn HeaderDecompressor, packets: &[Vec<u8>]) -> usize {
    let (mut wire, mut back, mut fb) = (Vec::with_capacity(2048), Vec::with_capacity(2048), Vec::new());
    for p in packets {
        wire.clear();
        back.clear();
        comp.compress_packet(p, &mut wire).expect("compresses");
        decomp.decompress_packet(&wire, &mut back).expect("decompresses");
        fb.clear();
        while decomp.poll_feedback(&mut fb) {
            comp.feedback(&fb).expect("feedback");
            fb.clear();
        }
    }
    back.len()
}
