//! Only SIP counts as SIP: an HTTP transfer (a real one captured with
//! dumpcap, and one written here), binary UDP, bytes that look like
//! SigComp but do not decompress, and SigComp that decompresses to
//! something other than SIP are counted apart as other traffic, whatever
//! their ports; the SIP beside them is found as before.

mod common;

use std::path::PathBuf;

use common::{corpus_flow, pcap, read, tcp_frame, udp_frame};
use etherparse::PacketBuilder;
use sigkit_analyze::{analyze, read_capture, Options, Protocol};

/// An IPv4 address and port.
type Address = ([u8; 4], u16);

/// A UDP datagram between two hosts of their own.
fn udp_between(src: Address, dst: Address, payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 3], [2, 0, 0, 0, 0, 4]).ipv4(src.0, dst.0, 64).udp(src.1, dst.1);
    let mut out = Vec::new();
    b.write(&mut out, payload).expect("udp frame");
    out
}

/// A SigComp message (dynamic mechanism, LZSS) that decompresses to
/// `payload`.
fn sigcomp_of(payload: &[u8]) -> Vec<u8> {
    use sigcomp::{CompartmentId, Params, Transport};
    use sigcomp_compress::{Config, Endpoint, EndpointConfig, Received};
    let params = Params { dms: 8192, sms: 8192, cpb: 16, ..Params::default() };
    let config = Config { transport: Transport::Message, ..Config::default() };
    let mk = || Endpoint::new(EndpointConfig::new(params, params, config)).expect("endpoint");
    let (mut tx, mut rx) = (mk(), mk());
    let now = std::time::Instant::now();
    let c = tx.compress(now, CompartmentId(1), payload).expect("compress");
    // It does decompress, to exactly `payload`.
    match rx.receive(&c.message, Transport::Message).expect("decompress") {
        Received::Message(m) => assert_eq!(rx.accept(now, m, CompartmentId(1)).message, payload),
        Received::Nack(_) => panic!("a NACK"),
    }
    c.message
}

/// The HTTP capture of crates/taroc/tests/data: `curl` fetching a
/// 204,800-byte file from `python3 -m http.server` over one TCP
/// connection. The response's Content-Length framed it as one "SIP
/// message" of 205,004 bytes before; now the flow is not SIP.
#[test]
fn a_real_http_transfer_is_other_traffic() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../taroc/tests/data/http-bulk-lo.pcap");
    let bytes = std::fs::read(&path).expect("http-bulk-lo.pcap");
    let a = analyze(&bytes, &Options::default()).expect("analysis");
    assert_eq!(a.flows.len(), 0, "SIP flows");
    assert!(a.calls.is_empty());
    assert_eq!((a.other_flows, a.other_packets), (1, a.capture.udp_tcp_packets));
    let payload: usize = read_capture(&bytes).expect("capture").segments.iter().map(|s| s.payload.len()).sum();
    assert_eq!(a.other_bytes, payload);
    // The file and the response's headers, and the request.
    assert!(payload > 204_800 + 200, "{payload}");
}

/// HTTP over TCP on port 5060 and over UDP, a binary datagram, a datagram
/// whose first byte is SigComp's but which is none, and a SigComp message
/// of text that is not SIP, beside a SIP call over UDP: one SIP flow, the
/// call's messages, and the rest other traffic.
#[test]
fn http_and_other_traffic_on_any_port_are_not_sip() {
    let call = corpus_flow();
    let mut frames: Vec<Vec<u8>> = call.iter().map(|(from_ue, sip)| udp_frame(*from_ue, sip)).collect();
    // HTTP over TCP between 10.0.0.1:40000 and 10.0.0.2:5060, the response
    // framed by a Content-Length as a SIP message would be.
    let request = b"GET /index.html HTTP/1.1\r\nHost: 10.0.0.2:5060\r\nAccept: */*\r\n\r\n".to_vec();
    let body = vec![b'x'; 3000];
    let mut response =
        format!("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    response.extend_from_slice(&body);
    let (mut ue, mut server) = (1000u32, 5000u32);
    frames.push(tcp_frame(true, ue - 1, 0, true, b""));
    frames.push(tcp_frame(false, server - 1, ue, true, b""));
    frames.push(tcp_frame(true, ue, server, false, &request));
    ue += request.len() as u32;
    for chunk in response.chunks(1400) {
        frames.push(tcp_frame(false, server, ue, false, chunk));
        server += chunk.len() as u32;
    }
    let (c, s) = (([10, 0, 0, 5], 33000), ([10, 0, 0, 6], 5060));
    let not_sip = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let datagrams: [(Address, Address, Vec<u8>); 5] = [
        (c, s, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        (s, c, not_sip.to_vec()),
        (([10, 0, 0, 7], 53), ([10, 0, 0, 8], 5060), vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1]),
        (([10, 0, 0, 9], 5060), ([10, 0, 0, 10], 5060), vec![0xF8, 0x00, 0x01, 0x02, 0x03]),
        (([10, 0, 0, 11], 5060), ([10, 0, 0, 12], 5060), sigcomp_of(not_sip)),
    ];
    for (src, dst, payload) in &datagrams {
        frames.push(udp_between(*src, *dst, payload));
    }
    let capture = pcap(&frames);

    let a = analyze(&capture, &Options::default()).expect("analysis");
    assert_eq!(a.flows.len(), 1, "SIP flows: {:?}", a.flows.iter().map(|f| (&f.a, &f.b)).collect::<Vec<_>>());
    let f = &a.flows[0];
    assert_eq!(f.protocol, Protocol::Udp);
    assert_eq!(f.messages.len(), call.len());
    assert_eq!(f.sip_bytes, call.iter().map(|(_, s)| s.len()).sum::<usize>());
    assert_eq!(a.calls.len(), 1);
    // The TCP connection, the UDP HTTP exchange, the binary datagram, the
    // false SigComp and the SigComp of HTTP.
    assert_eq!(a.other_flows, 5);
    let tcp_payload = request.len() + response.len();
    let udp_payload: usize = datagrams.iter().map(|d| d.2.len()).sum();
    assert_eq!(a.other_bytes, tcp_payload + udp_payload);
    assert_eq!(a.other_packets, frames.len() - call.len());
}

/// The SIP captures are unchanged: one SIP flow each, nothing else.
#[test]
fn sip_captures_have_no_other_traffic() {
    for name in ["sip-udp.pcapng", "sip-tcp.pcapng", "sigcomp-udp.pcapng", "sigcomp-tcp.pcapng"] {
        let a = analyze(&read(name), &Options::default()).expect(name);
        assert_eq!((a.flows.len(), a.other_flows, a.other_bytes), (1, 0, 0), "{name}");
        assert_eq!(a.flows[0].unusable.not_sip, 0, "{name}");
        assert_eq!(a.calls.len(), common::CALLS, "{name}");
    }
}
