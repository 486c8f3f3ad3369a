//! TAROC's mean compressed header on the stored captures, held below the
//! ROHC library's RFC 6846 TCP profile on the same packets in every mode,
//! and SIP over TCP between SIPp and Kamailio at the 6-octet goal.
//!
//! The library's means are what `scripts/bench-vs-rohc.sh` measured on
//! these files (the library at commit 70589cc2b865, its configure.ac's
//! version 2.4.0; docs/results/rohc.md, "Side by side with the ROHC
//! library"): the library is not built in the tests, and its output on a
//! stored file does not change. TAROC's side is run here, so a change
//! that costs TAROC bytes on any capture fails.

mod common;

use common::capture;

use taroc::replay::{LinkConfig, Report};
use taroc::{Mode, Packet, Scheme};

/// `packets` through `scheme` on a clean link: every packet back byte for
/// byte, no undetected corruption.
fn clean(scheme: Scheme, packets: &[Vec<u8>]) -> Report {
    let r = common::replay_exact(scheme, packets, &LinkConfig::default());
    assert_eq!((r.delivered, r.undetected), (r.packets, 0), "{scheme:?}: {r:?}");
    r
}

/// (capture, the library's mean with feedback, without feedback), octets.
const LIBRARY: [(&str, f64, f64); 10] = [
    ("tests/data/http-bulk-lo.pcap", 13.25, 13.91),
    ("tests/data/http-ipv6-lo.pcap", 20.69, 20.69),
    ("tests/data/http-small-any.pcapng", 19.45, 22.43),
    ("tests/data/sip-kamailio-ipv6.pcapng", 14.65, 14.67),
    ("tests/data/sip-kamailio-long.pcapng", 14.27, 14.81),
    ("tests/data/sip-kamailio-short.pcapng", 22.03, 26.30),
    ("tests/data/sip-tcp-12calls.pcapng", 16.09, 16.60),
    ("../sigkit-analyze/tests/data/synthetic.pcap", 9.64, 12.17),
    ("../sigkit-analyze/tests/data/sigcomp-tcp.pcapng", 16.44, 18.20),
    ("../sigkit-analyze/tests/data/sip-tcp.pcapng", 18.26, 20.00),
];

#[test]
fn every_mode_sends_smaller_headers_than_rfc_6846s_library_on_every_capture() {
    for (path, with_feedback, without) in LIBRARY {
        let packets = capture(path);
        let u = clean(Scheme::Taroc(Mode::U), &packets).mean_header_after();
        assert!(u < without, "{path}: U-mode {u:.2} B against the library's {without} B without feedback");
        for scheme in [Scheme::Taroc(Mode::O), Scheme::Taroc(Mode::R), Scheme::TarocInfer] {
            let m = clean(scheme, &packets).mean_header_after();
            assert!(m < with_feedback, "{path}: {scheme:?} {m:.2} B against the library's {with_feedback} B");
        }
        // With inference, O-mode is at most 0.6 times the library's on SIP
        // over TCP (the HTTP downloads and the synthetic capture aside).
        if path.contains("sip-") || path.contains("sigcomp-") {
            let i = clean(Scheme::TarocInfer, &packets).mean_header_after();
            assert!(i <= 0.6 * with_feedback, "{path}: with inference {i:.2} B against {with_feedback} B");
        }
    }
}

/// The packets of the capture to or from TCP port `port`: one connection
/// of the SIPp ⇄ Kamailio captures.
fn connection(packets: &[Vec<u8>], port: u16) -> Vec<Vec<u8>> {
    packets
        .iter()
        .filter(|p| Packet::parse(p).is_ok_and(|p| p.header.src_port == port || p.header.dst_port == port))
        .cloned()
        .collect()
}

#[test]
fn sip_between_sipp_and_kamailio_averages_six_octets_on_a_long_connection() {
    // Every connection of at least 100 packets over IPv4, its handshake
    // and close included (a SYN IR of 51 octets, the SYN-ACK's IR-REV of
    // 47): the UAC's to
    // Kamailio (20 calls, 246 packets) and Kamailio's to the UAS (204),
    // and Kamailio's to the UAS in the capture of short connections.
    let long = capture("tests/data/sip-kamailio-long.pcapng");
    let short = capture("tests/data/sip-kamailio-short.pcapng");
    for (name, packets, port) in [("long", &long, 5060), ("long", &long, 5070), ("short", &short, 5070)] {
        let c = connection(packets, port);
        assert!(c.len() >= 200, "{name} {port}: {}", c.len());
        let r = clean(Scheme::TarocInfer, &c);
        assert!(r.mean_header_after() <= 6.0, "{name} port {port}: {r:?}");
    }
    // Over IPv6, where the SYN's IR carries 40 octets of addresses (77
    // octets); the SYN-ACK's IR-REV takes them from the SYN (48), and the
    // handshake's ACK and each side's next segment chain to the SYN and
    // SYN-ACK.
    let v6 = capture("tests/data/sip-kamailio-ipv6.pcapng");
    for port in [5060, 5070] {
        let c = connection(&v6, port);
        assert!(c.len() >= 200, "IPv6 {port}: {}", c.len());
        let m = clean(Scheme::TarocInfer, &c).mean_header_after();
        assert!(m <= 6.0, "IPv6 port {port}: {m:.2} B");
    }
}
