//! `sigkit flow`: the table, the JSON report, the pcap output and the
//! errors, checked on the real binary.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::path::{Path, PathBuf};

use common::sigkit;
use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use serde_json::Value;

fn corpus(flow: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus").join(flow)
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The .sip files of a flow directory, in order.
fn flow_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sip"))
        .map(|p| (p.file_name().unwrap().to_str().unwrap().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    v.sort();
    v
}

/// A fresh empty directory under Cargo's per-test temporary folder.
fn temp_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("sigkit-flow-tests")
        .join(format!("{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn json_run(args: &[&str]) -> Value {
    let r = sigkit(args, b"");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    serde_json::from_slice(&r.stdout).expect("one JSON document")
}

#[test]
fn json_report_matches_the_flow_for_every_mechanism() {
    let dir = corpus("3gpp-video-call");
    let files = flow_files(&dir);
    for mech in ["basic", "static", "dynamic", "shared"] {
        let v = json_run(&["flow", path_str(&dir), "--mechanism", mech, "--json"]);
        let msgs = v["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), files.len(), "{mech}");
        let mut sigcomp_sum = 0;
        for (m, (file, bytes)) in msgs.iter().zip(&files) {
            assert_eq!(m["uncompressed"].as_u64().unwrap() as usize, bytes.len(), "{mech} {file}");
            // The file name says who sends: NN-<ue|pcscf>-<name>.sip.
            let want_dir = if file[3..].starts_with("ue-") { "ue->pcscf" } else { "pcscf->ue" };
            assert_eq!(m["direction"], want_dir, "{mech} {file}");
            assert!(file.ends_with(&format!("{}.sip", m["name"].as_str().unwrap())), "{file}");
            let sig = m["sigcomp"].as_u64().unwrap();
            let ratio = m["ratio"].as_f64().unwrap();
            assert!((ratio - sig as f64 / bytes.len() as f64).abs() < 1e-9, "{mech} {file}");
            assert!(m["compress_us"].as_f64().unwrap() > 0.0);
            assert!(m["decompress_us"].as_f64().unwrap() > 0.0);
            assert!(m["state_memory"].is_u64());
            sigcomp_sum += sig;
        }
        let total = &v["total"];
        let uncompressed: usize = files.iter().map(|(_, b)| b.len()).sum();
        assert_eq!(total["uncompressed"].as_u64().unwrap() as usize, uncompressed);
        assert_eq!(total["sigcomp"].as_u64().unwrap(), sigcomp_sum);
        // Stateful mechanisms must beat sending the flow uncompressed.
        if mech != "basic" {
            assert!(sigcomp_sum < uncompressed as u64, "{mech}: {sigcomp_sum} >= {uncompressed}");
        }
        if mech == "basic" || mech == "static" {
            // Nothing but (at most) the bytecode is saved: no snapshots grow.
            let max_state = msgs.iter().map(|m| m["state_memory"].as_u64().unwrap()).max().unwrap();
            assert!(max_state < 1024, "{mech}: state memory {max_state}");
        }
    }
}

#[test]
fn verify_runs_the_peer_and_changes_no_byte() {
    // --verify makes each compressor also run its messages through the
    // peer's decompressor and compare; the messages are the same.
    let dir = corpus("3gpp-video-call");
    for mech in ["static", "shared"] {
        let plain = json_run(&["flow", path_str(&dir), "--mechanism", mech, "--json"]);
        let verified = json_run(&["flow", path_str(&dir), "--mechanism", mech, "--json", "--verify"]);
        let sizes = |v: &Value| {
            v["messages"].as_array().unwrap().iter().map(|m| m["sigcomp"].as_u64().unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(sizes(&plain), sizes(&verified), "{mech}");
        assert_eq!(plain["total"], verified["total"], "{mech}");
    }
}

#[test]
fn table_lists_every_message_and_the_totals() {
    let dir = corpus("3gpp-registration");
    let files = flow_files(&dir);
    let r = sigkit(&["flow", path_str(&dir), "--mechanism", "dynamic"], b"");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let text = r.stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    // Header, one row per message, TOTAL.
    assert_eq!(lines.len(), files.len() + 2, "{text}");
    assert!(lines[0].contains("uncompr") && lines[0].contains("sigcomp") && lines[0].contains("state_mem"));
    for (line, (_, bytes)) in lines[1..].iter().zip(&files) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[3], bytes.len().to_string(), "{line}");
    }
    let total: usize = files.iter().map(|(_, b)| b.len()).sum();
    let last: Vec<&str> = lines.last().unwrap().split_whitespace().collect();
    assert_eq!(last[0], "TOTAL");
    assert_eq!(last[1], total.to_string());
}

/// The UDP/TCP payloads of a pcap, with the IPv4 source of each packet,
/// after checking the link type and every checksum.
fn pcap_payloads(path: &Path) -> Vec<([u8; 4], Vec<u8>, Option<etherparse::TcpHeader>)> {
    let f = std::fs::File::open(path).unwrap();
    let mut reader = pcap_file::pcap::PcapReader::new(f).unwrap();
    assert_eq!(reader.header().datalink, pcap_file::DataLink::ETHERNET);
    let mut out = Vec::new();
    while let Some(pkt) = reader.next_packet() {
        let pkt = pkt.unwrap();
        let p = SlicedPacket::from_ethernet(&pkt.data).unwrap();
        let Some(NetSlice::Ipv4(ip)) = &p.net else { panic!("not IPv4") };
        let iph = ip.header().to_header();
        assert_eq!(iph.header_checksum, iph.calc_header_checksum());
        match &p.transport {
            Some(TransportSlice::Udp(u)) => {
                let uh = u.to_header();
                assert_eq!(uh.checksum, uh.calc_checksum_ipv4(&iph, u.payload()).unwrap());
                assert_eq!((uh.source_port, uh.destination_port), (5060, 5060));
                out.push((iph.source, u.payload().to_vec(), None));
            }
            Some(TransportSlice::Tcp(t)) => {
                let th = t.to_header();
                assert_eq!(th.checksum, th.calc_checksum_ipv4(&iph, t.payload()).unwrap());
                out.push((iph.source, t.payload().to_vec(), Some(th)));
            }
            _ => panic!("neither UDP nor TCP"),
        }
    }
    out
}

#[test]
fn pcap_over_udp_holds_one_datagram_per_message() {
    let dir = corpus("basic-voice-call");
    let out = temp_dir("udp").join("flow.pcap");
    let v = json_run(&["flow", path_str(&dir), "--json", "--pcap", path_str(&out)]);
    let msgs = v["messages"].as_array().unwrap();
    let pkts = pcap_payloads(&out);
    assert_eq!(pkts.len(), msgs.len());
    for (m, (src, payload, tcp)) in msgs.iter().zip(&pkts) {
        assert!(tcp.is_none());
        assert_eq!(payload.len() as u64, m["sigcomp"].as_u64().unwrap());
        // RFC 3320 §7: every SigComp message starts 11111xxx.
        assert_eq!(payload[0] & 0xF8, 0xF8);
        let want = if m["direction"] == "ue->pcscf" { [10, 0, 0, 1] } else { [10, 0, 0, 2] };
        assert_eq!(*src, want);
    }
}

#[test]
fn pcap_over_tcp_has_a_handshake_and_consistent_sequence_numbers() {
    let dir = corpus("3gpp-registration");
    let out = temp_dir("tcp").join("flow.pcap");
    let v = json_run(&["flow", path_str(&dir), "--json", "--transport", "tcp", "--pcap", path_str(&out)]);
    let msgs = v["messages"].as_array().unwrap();
    let pkts = pcap_payloads(&out);
    let tcp: Vec<_> = pkts.iter().map(|(s, p, t)| (*s, p, t.clone().expect("TCP"))).collect();
    // SYN, SYN-ACK, ACK (RFC 9293 §3.5).
    assert!(tcp[0].2.syn && !tcp[0].2.ack && tcp[0].0 == [10, 0, 0, 1]);
    assert!(tcp[1].2.syn && tcp[1].2.ack && tcp[1].2.acknowledgment_number == tcp[0].2.sequence_number + 1);
    assert!(!tcp[2].2.syn && tcp[2].2.ack && tcp[2].2.acknowledgment_number == tcp[1].2.sequence_number + 1);
    let data: Vec<_> = tcp.iter().filter(|t| !t.1.is_empty()).collect();
    assert_eq!(data.len(), msgs.len());
    // Each side's sequence numbers advance by exactly what it sent, and
    // each segment acknowledges everything the other side sent.
    let mut next = [tcp[0].2.sequence_number + 1, tcp[1].2.sequence_number + 1];
    for (t, m) in data.iter().zip(msgs) {
        let me = usize::from(t.0 == [10, 0, 0, 2]);
        assert_eq!(t.2.sequence_number, next[me]);
        assert_eq!(t.2.acknowledgment_number, next[1 - me]);
        next[me] += t.1.len() as u32;
        assert_eq!(t.1.len() as u64, m["sigcomp"].as_u64().unwrap());
        // RFC 3320 §4.2.2: a record-marked message ends 0xFF 0xFF.
        assert!(t.1.ends_with(&[0xFF, 0xFF]));
    }
}

fn expect_error(args: &[&str], needle: &str) -> String {
    let r = sigkit(args, b"");
    assert_ne!(r.code, Some(0), "{args:?} succeeded");
    assert!(r.code.is_some(), "{args:?} was killed");
    assert!(r.stderr.contains(needle), "{args:?}: stderr {:?} lacks {needle:?}", r.stderr);
    r.stderr
}

#[test]
fn malformed_flows_are_clear_errors_naming_the_file() {
    // Not SIP.
    let d = temp_dir("not-sip");
    std::fs::write(d.join("01-ue-INVITE.sip"), b"hello\r\n\r\n").unwrap();
    expect_error(&["flow", path_str(&d)], "01-ue-INVITE.sip");
    // Bare LF line ends.
    let d = temp_dir("bare-lf");
    std::fs::copy(corpus("3gpp-registration").join("01-ue-REGISTER.sip"), d.join("01-ue-REGISTER.sip")).unwrap();
    std::fs::write(d.join("02-pcscf-200-OK.sip"), b"SIP/2.0 200 OK\nVia: x\n\n").unwrap();
    expect_error(&["flow", path_str(&d)], "02-pcscf-200-OK.sip");
    // Content-Length that disagrees with the body.
    let d = temp_dir("bad-cl");
    std::fs::write(d.join("01-ue-MESSAGE.sip"), b"MESSAGE sip:a@b SIP/2.0\r\nContent-Length: 9\r\n\r\nhi").unwrap();
    expect_error(&["flow", path_str(&d)], "01-ue-MESSAGE.sip");
    // Bad file name.
    let d = temp_dir("bad-name");
    std::fs::write(d.join("first-INVITE.sip"), b"OPTIONS sip:a@b SIP/2.0\r\n\r\n").unwrap();
    expect_error(&["flow", path_str(&d)], "first-INVITE.sip");
    // Two files with the same number.
    let d = temp_dir("dup");
    std::fs::write(d.join("01-ue-OPTIONS.sip"), b"OPTIONS sip:a@b SIP/2.0\r\n\r\n").unwrap();
    std::fs::write(d.join("01-ue-INFO.sip"), b"INFO sip:a@b SIP/2.0\r\n\r\n").unwrap();
    expect_error(&["flow", path_str(&d)], "is also used by");
    // Empty directory, missing directory.
    let d = temp_dir("empty");
    expect_error(&["flow", path_str(&d)], "no .sip messages");
    expect_error(&["flow", path_str(&d.join("missing"))], "missing");
}

#[test]
fn bad_options_are_clear_errors() {
    let dir = corpus("3gpp-registration");
    let p = path_str(&dir);
    expect_error(&["flow", p, "--algo", "zip"], "unknown algorithm");
    for planned in ["deflate", "lz77"] {
        let available = sigkit_eval::flow::ALGORITHMS.iter().any(|a| a.name() == planned);
        if available {
            let r = sigkit(&["flow", p, "--algo", planned, "--json"], b"");
            assert_eq!(r.code, Some(0), "{planned}: {}", r.stderr);
        } else {
            expect_error(&["flow", p, "--algo", planned], "not available yet");
        }
    }
    expect_error(&["flow", p, "--mechanism", "magic"], "unknown mechanism");
    expect_error(&["flow", p, "--first", "0"], "--first");
    expect_error(&["flow", p, "--dict-priority", "3-1"], "--dict-priority");
    expect_error(&["flow", p, "--dms", "1000"], "bad endpoint parameters");
    expect_error(&["flow", p, "--lookahead", "17"], "look-ahead 17");
    expect_error(&["flow", p, "--pcap", "/nonexistent-dir/x.pcap"], "/nonexistent-dir/x.pcap");
}

#[test]
fn first_n_runs_a_prefix_of_the_flow() {
    let dir = corpus("3gpp-video-call");
    let files = flow_files(&dir);
    let full = json_run(&["flow", path_str(&dir), "--json", "--mechanism", "dynamic"]);
    let first = json_run(&["flow", path_str(&dir), "--json", "--mechanism", "dynamic", "--first", "12"]);
    let msgs = first["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 12);
    let want: usize = files[..12].iter().map(|(_, b)| b.len()).sum();
    assert_eq!(first["total"]["uncompressed"].as_u64().unwrap() as usize, want);
    // The same compressor state evolution: the prefix compresses identically.
    for (a, b) in msgs.iter().zip(full["messages"].as_array().unwrap()) {
        assert_eq!(a["sigcomp"], b["sigcomp"]);
    }
}

#[test]
fn users_can_bring_their_own_flow() {
    let d = temp_dir("own");
    let req = b"OPTIONS sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nContent-Length: 0\r\n\r\n";
    let resp = b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nContent-Length: 0\r\n\r\n";
    std::fs::write(d.join("01-ue-OPTIONS.sip"), req).unwrap();
    std::fs::write(d.join("02-pcscf-200-OK.sip"), resp).unwrap();
    let v = json_run(&["flow", path_str(&d), "--json", "--mechanism", "static", "--dict-priority", "none"]);
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["uncompressed"].as_u64().unwrap() as usize, req.len());
    assert_eq!(msgs[1]["direction"], "pcscf->ue");
}

/// README's quick start: `sigkit flow corpus/3gpp-video-call` on the
/// embedded defaults runs every message and compresses the call well below
/// the thesis's shared-compression ratio on the same flow (0.27–0.28,
/// the SigComp performance thesis Appendix H), as README says.
#[test]
fn readme_quick_start_flow_runs_on_the_defaults() {
    let dir = corpus("3gpp-video-call");
    let files = flow_files(&dir);
    let r = sigkit(&["flow", path_str(&dir)], b"");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let text = r.stdout_text();
    assert_eq!(text.lines().count(), files.len() + 2, "{text}");
    let v = json_run(&["flow", path_str(&dir), "--json"]);
    let uncompressed: usize = files.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(uncompressed, 11878);
    let ratio = v["total"]["ratio"].as_f64().unwrap();
    assert!(ratio < 0.2, "default flow ratio {ratio}");
}
