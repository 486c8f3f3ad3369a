//! The flows and the compress + decompress pass that the round_trip bench
//! and the round_trip_rate example both time.

use taroc::synth::{bulk_transfer, sip_over_tcp, Dir, FlowOptions};
use taroc::{HeaderCompressor, HeaderDecompressor, Mode, Scheme};

/// SIP over TCP in both directions, for the schemes that infer across
/// directions ([`pass_both`]).
#[allow(dead_code)]
pub fn sip_both() -> Vec<(Dir, Vec<u8>)> {
    sip_over_tcp(100, FlowOptions::default())
}

/// Compresses and decompresses a two-direction flow, each direction with
/// its own pair and each end's compressor and decompressor telling each
/// other what crossed the link, as `taroc::replay` does; returns the
/// header octets sent.
#[allow(dead_code)]
pub fn pass_both(scheme: Scheme, flow: &[(Dir, Vec<u8>)]) -> usize {
    let mut dirs = [scheme.pair(), scheme.pair()];
    let (mut wire, mut back, mut fb) = (Vec::with_capacity(2048), Vec::with_capacity(2048), Vec::new());
    let mut headers = 0;
    for (dir, p) in flow {
        let d = (*dir == Dir::Backward) as usize;
        wire.clear();
        back.clear();
        headers += dirs[d].0.compress_packet(p, &mut wire).expect("compresses");
        if let Some(x) = dirs[d].0.poll_crossed() {
            dirs[1 - d].1.note_reverse(&x);
        }
        dirs[d].1.decompress_packet(&wire, &mut back).expect("decompresses");
        if let Some(x) = dirs[d].1.poll_crossed() {
            dirs[1 - d].0.note_reverse(&x);
        }
        fb.clear();
        while dirs[d].1.poll_feedback(&mut fb) {
            dirs[d].0.feedback(&fb).expect("feedback");
            fb.clear();
        }
    }
    headers
}

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
