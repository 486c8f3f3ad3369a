//! Shared by the tests: the captures of tests/data and a builder of
//! synthetic classic-pcap captures.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use etherparse::PacketBuilder;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;

pub fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

pub fn read(name: &str) -> Vec<u8> {
    std::fs::read(data(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The corpus flow the real captures replay, one message per file, in
/// order: (sent by the UE, bytes).
pub fn corpus_flow() -> Vec<(bool, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/3gpp-video-call");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus/3gpp-video-call")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sip"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
            (name.contains("-ue-"), std::fs::read(p).expect("message"))
        })
        .collect()
}

/// Calls each real capture holds (tests/data/make-captures.sh's CALLS).
pub const CALLS: usize = 3;

/// A classic pcap (Ethernet, microsecond timestamps) of `frames`.
pub fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let header = PcapHeader { datalink: DataLink::ETHERNET, ..PcapHeader::default() };
    let mut w = PcapWriter::with_header(Vec::new(), header).expect("pcap header");
    for (i, f) in frames.iter().enumerate() {
        let ts = Duration::from_millis(1_700_000_000_000 + 10 * i as u64);
        w.write_packet(&PcapPacket::new(ts, f.len() as u32, f)).expect("pcap packet");
    }
    w.into_writer()
}

pub const UE: [u8; 4] = [10, 0, 0, 1];
pub const PCSCF: [u8; 4] = [10, 0, 0, 2];

pub fn udp_frame(from_ue: bool, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = if from_ue { (UE, PCSCF) } else { (PCSCF, UE) };
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).ipv4(src, dst, 64).udp(5060, 5060);
    let mut out = Vec::new();
    b.write(&mut out, payload).expect("udp frame");
    out
}

/// A TCP segment between the UE (port 40000) and the P-CSCF (5060).
pub fn tcp_frame(from_ue: bool, seq: u32, ack: u32, syn: bool, payload: &[u8]) -> Vec<u8> {
    let (src, dst, sp, dp) = if from_ue { (UE, PCSCF, 40000, 5060) } else { (PCSCF, UE, 5060, 40000) };
    let mut b =
        PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).ipv4(src, dst, 64).tcp(sp, dp, seq, 65535);
    if syn {
        b = b.syn();
    }
    if ack != 0 {
        b = b.ack(ack);
    }
    let mut out = Vec::new();
    b.write(&mut out, payload).expect("tcp frame");
    out
}

/// The synthetic capture of tests/data/synthetic.pcap: a 3GPP session
/// set-up (the corpus flow) twice, between a UE and a P-CSCF:
///
/// 1. over UDP, compressed by two SigComp endpoints (dynamic mechanism,
///    LZSS), each message decompressed and its state accepted by the other
///    as it goes, so feedback flows as in a real call;
/// 2. over TCP, plain, each message in two segments; every third message's
///    segments are sent second half first (out of order) and every fourth
///    message's first segment is sent twice (a retransmission).
///
/// Returns the capture and, per flow, the SIP messages as sent.
pub fn synthetic_capture() -> (Vec<u8>, Vec<(bool, Vec<u8>)>) {
    use sigcomp::{CompartmentId, Params, Transport};
    use sigcomp_compress::{Config, Endpoint, EndpointConfig, Mechanism, Received};
    let flow = corpus_flow();
    let mut frames = Vec::new();

    let params = Params { dms: 8192, sms: 8192, cpb: 16, ..Params::default() };
    let config = Config { mechanism: Mechanism::Dynamic, transport: Transport::Message, ..Config::default() };
    let mk = || Endpoint::new(EndpointConfig::new(params, params, config)).expect("endpoint");
    let (mut ue, mut pcscf) = (mk(), mk());
    let now = std::time::Instant::now();
    let peer = CompartmentId(7);
    for (from_ue, sip) in &flow {
        let (tx, rx) = if *from_ue { (&mut ue, &mut pcscf) } else { (&mut pcscf, &mut ue) };
        let c = tx.compress(now, peer, sip).expect("compress");
        match rx.receive(&c.message, Transport::Message).expect("decompress") {
            Received::Message(m) => {
                let a = rx.accept(now, m, peer);
                assert_eq!(&a.message, sip);
            }
            Received::Nack(_) => panic!("a NACK"),
        }
        frames.push(udp_frame(*from_ue, &c.message));
    }

    // seq[0]: the UE's next sequence number, seq[1]: the P-CSCF's.
    let mut seq = [1000u32, 5000u32];
    frames.push(tcp_frame(true, seq[0] - 1, 0, true, b""));
    frames.push(tcp_frame(false, seq[1] - 1, seq[0], true, b""));
    frames.push(tcp_frame(true, seq[0], seq[1], false, b""));
    for (i, (from_ue, sip)) in flow.iter().enumerate() {
        let (me, other) = if *from_ue { (0, 1) } else { (1, 0) };
        let half = sip.len() / 2;
        let first = tcp_frame(*from_ue, seq[me], seq[other], false, &sip[..half]);
        let second = tcp_frame(*from_ue, seq[me] + half as u32, seq[other], false, &sip[half..]);
        if i % 3 == 2 {
            frames.push(second);
            frames.push(first);
        } else if i % 4 == 3 {
            frames.push(first.clone());
            frames.push(first);
            frames.push(second);
        } else {
            frames.push(first);
            frames.push(second);
        }
        seq[me] += sip.len() as u32;
        frames.push(tcp_frame(!*from_ue, seq[other], seq[me], false, b""));
    }
    (pcap(&frames), flow)
}
