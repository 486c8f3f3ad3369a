//! `sigkit_analyze::analyze` on the captures of tests/data (real `sigkit
//! load` runs captured with tshark, and a synthetic pcap) and on bad input.

mod common;

use common::{corpus_flow, read, synthetic_capture, CALLS};
use sigkit_analyze::{analyze, read_capture, Analysis, FlowReport, Options, Protocol};
use sigkit_sip::Message;

fn run(name: &str) -> Analysis {
    analyze(&read(name), &Options::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn only_flow(a: &Analysis) -> &FlowReport {
    assert_eq!(a.flows.len(), 1, "SIP flows");
    &a.flows[0]
}

/// What the corpus flow's messages are, as the report summarises them.
fn corpus_summaries() -> Vec<String> {
    corpus_flow()
        .iter()
        .map(|(_, sip)| {
            let m = Message::parse(sip).expect("corpus message");
            match (m.method(), m.status_code()) {
                (Some(method), _) => method.to_string(),
                (None, Some(code)) => format!("{code} {}", m.cseq().expect("CSeq").method),
                _ => unreachable!(),
            }
        })
        .collect()
}

/// The run sent the corpus flow CALLS times: the messages found are those,
/// call after call (a call's messages keep their order).
fn check_messages_are_the_runs(f: &FlowReport) {
    let per_call = corpus_summaries();
    assert_eq!(f.messages.len(), CALLS * per_call.len(), "messages");
    assert_eq!(f.calls, CALLS);
    for call in
        f.messages.iter().map(|m| m.call_id.clone().expect("Call-ID")).collect::<std::collections::BTreeSet<_>>()
    {
        let got: Vec<&str> =
            f.messages.iter().filter(|m| m.call_id.as_deref() == Some(&call)).map(|m| m.summary.as_str()).collect();
        assert_eq!(got, per_call, "call {call}");
    }
}

fn variant<'a>(f: &'a FlowReport, name: &str) -> &'a sigkit_analyze::VariantReport {
    f.variants.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no variant {name}"))
}

/// SigComp sends less than plain SIP, with every mechanism, and the
/// mechanisms that keep state beat the one that keeps none.
fn check_sigcomp_saves(f: &FlowReport) {
    let sip = variant(f, "sip").bytes;
    assert_eq!(sip, f.sip_bytes);
    for v in f.variants.iter().filter(|v| v.name.starts_with("sigcomp") && v.headers == "none") {
        assert_eq!(v.sent_plain, 0, "{}: {:?}", v.name, v.failure);
        assert!(v.bytes < sip, "{}: {} >= {sip}", v.name, v.bytes);
        assert_eq!(v.sizes.len(), f.messages.len());
        // Equation 2.1: a smaller flow is faster at every rate.
        assert!(v.ran.iter().all(|p| p.delay_s < p.baseline_delay_s && p.improvement_pct > 0.0), "{}", v.name);
    }
    let basic = variant(f, "sigcomp basic/lzss").bytes;
    let dynamic = variant(f, "sigcomp dynamic/lzss").bytes;
    assert!(dynamic < basic / 2, "dynamic {dynamic}, basic {basic}");
    // The improvement shrinks as the link gets faster (the thesis's Figure 53).
    let ran = &variant(f, "sigcomp dynamic/lzss").ran;
    assert!(ran.windows(2).all(|w| w[0].improvement_pct > w[1].improvement_pct));
}

#[test]
fn sip_over_udp_from_a_load_run() {
    let a = run("sip-udp.pcapng");
    assert_eq!(a.capture.format, "pcapng");
    let f = only_flow(&a);
    assert_eq!(f.protocol, Protocol::Udp);
    check_messages_are_the_runs(f);
    assert_eq!(f.sigcomp_in_capture.messages, 0);
    assert!(f.taroc.is_none());
    check_sigcomp_saves(f);
}

#[test]
fn sip_over_tcp_from_a_load_run() {
    let a = run("sip-tcp.pcapng");
    let f = only_flow(&a);
    assert_eq!(f.protocol, Protocol::Tcp);
    check_messages_are_the_runs(f);
    check_sigcomp_saves(f);
    let t = f.taroc.as_ref().expect("TAROC on a TCP flow");
    assert_eq!(t.packets, f.packets, "every TCP/IPv4 packet compressed");
    assert_eq!(t.mismatches, 0);
    assert!(t.header_bytes_after * 2 < t.header_bytes_before, "{} -> {}", t.header_bytes_before, t.header_bytes_after);
    // The per-packet run and taroc::replay agree.
    assert_eq!(t.header_bytes_after, t.replay_header_bytes_after);
    assert_eq!((t.replay_delivered, t.replay_undetected), (t.packets, 0));
    // Headers charged to messages: every data segment's once.
    let charged: usize = f.messages.iter().map(|m| m.tcp_ip_header_bytes.expect("TCP")).sum();
    assert!(charged > 0 && charged as u64 <= t.header_bytes_before);
    let with = variant(f, "sip + tcp/ip").bytes;
    assert_eq!(with, f.sip_bytes + charged);
    assert!(variant(f, "sip + taroc").bytes < with);
    assert!(variant(f, "sigcomp dynamic/lzss + taroc").bytes < variant(f, "sip + taroc").bytes);
}

#[test]
fn taroc_with_inference_on_the_real_sip_over_tcp_capture() {
    let plain = run("sip-tcp.pcapng");
    let options = Options { taroc_infer: true, ..Options::default() };
    let inferring = analyze(&read("sip-tcp.pcapng"), &options).unwrap();
    assert_eq!(inferring.settings.taroc_mode, "o-infer");
    let (t0, t) = (only_flow(&plain).taroc.as_ref().unwrap(), only_flow(&inferring).taroc.as_ref().unwrap());
    assert_eq!((t.packets, t.mismatches), (t0.packets, 0));
    // The per-packet run, whose ends tell each other what crossed, and
    // taroc::replay agree.
    assert_eq!(t.header_bytes_after, t.replay_header_bytes_after);
    assert_eq!((t.replay_delivered, t.replay_undetected), (t.packets, 0));
    assert!(
        t.header_bytes_after * 10 < t0.header_bytes_after * 6,
        "{} against {}",
        t.header_bytes_after,
        t0.header_bytes_after
    );
    let f = only_flow(&inferring);
    assert!(variant(f, "sip + taroc").bytes < variant(only_flow(&plain), "sip + taroc").bytes);
}

/// The SigComp a real run sent decodes, all of it, into the same call
/// flow the plain runs carry.
#[test]
fn sigcomp_in_real_captures_is_decoded() {
    for (name, protocol) in [("sigcomp-udp.pcapng", Protocol::Udp), ("sigcomp-tcp.pcapng", Protocol::Tcp)] {
        let a = run(name);
        let f = only_flow(&a);
        assert_eq!(f.protocol, protocol, "{name}");
        let d = &f.sigcomp_in_capture;
        assert_eq!((d.decoded, d.failed, d.nacks), (d.messages, 0, 0), "{name}: {d:?}");
        assert!(f.messages.iter().all(|m| m.came_as_sigcomp), "{name}");
        check_messages_are_the_runs(f);
        // What was sent is smaller than the SIP it carried.
        let captured = variant(f, "captured");
        assert_eq!(captured.bytes, f.captured_bytes);
        assert!(captured.bytes * 3 < f.sip_bytes, "{name}: {} of {}", captured.bytes, f.sip_bytes);
    }
}

#[test]
fn synthetic_capture_decodes_to_the_original_sip_and_reassembles_tcp() {
    let (pcap, flow) = synthetic_capture();
    let cap = read_capture(&pcap).expect("synthetic capture");
    assert_eq!(cap.format, "pcap");
    let a = analyze(&pcap, &Options::default()).expect("analysis");
    assert_eq!(a.flows.len(), 2);
    let (udp, tcp) = (&a.flows[0], &a.flows[1]);

    // UDP: SigComp decoded to exactly the messages compressed.
    assert_eq!(udp.protocol, Protocol::Udp);
    assert_eq!(udp.sigcomp_in_capture.decoded, flow.len());
    let udp_flow = sigkit_analyze::flows::take_apart(
        Protocol::Udp,
        udp.a.parse().expect("address"),
        udp.b.parse().expect("address"),
        cap.segments.iter().filter(|s| s.protocol == Protocol::Udp).cloned().collect(),
        Options::default().decoder_params,
    )
    .expect("flow");
    let decoded: Vec<(bool, Vec<u8>)> = udp_flow.messages.iter().map(|m| (m.direction == 0, m.sip.clone())).collect();
    assert_eq!(decoded, flow);

    // TCP: out-of-order and retransmitted segments give each message once.
    assert_eq!(tcp.protocol, Protocol::Tcp);
    let r = tcp.reassembly.expect("TCP");
    let out_of_order: usize = r.iter().map(|d| d.out_of_order).sum();
    let retransmitted: usize = r.iter().map(|d| d.retransmitted).sum();
    assert_eq!(out_of_order, flow.len() / 3);
    assert_eq!(retransmitted, (0..flow.len()).filter(|i| i % 3 != 2 && i % 4 == 3).count());
    assert_eq!(tcp.messages.len(), flow.len());
    let sizes: Vec<usize> = tcp.messages.iter().map(|m| m.sip_bytes).collect();
    assert_eq!(sizes, flow.iter().map(|(_, s)| s.len()).collect::<Vec<_>>());
    let tcp_flow = sigkit_analyze::flows::take_apart(
        Protocol::Tcp,
        tcp.a.parse().expect("address"),
        tcp.b.parse().expect("address"),
        cap.segments.iter().filter(|s| s.protocol == Protocol::Tcp).cloned().collect(),
        Options::default().decoder_params,
    )
    .expect("flow");
    let got: Vec<(bool, Vec<u8>)> = tcp_flow.messages.iter().map(|m| (m.direction == 0, m.sip.clone())).collect();
    assert_eq!(got, flow);
    // Both flows carry the same SIP, so SigComp's simulated UDP run matches
    // the endpoints that made the capture.
    assert_eq!(udp.sip_bytes, tcp.sip_bytes);
}

/// tests/data/synthetic.pcap is what [`synthetic_capture`] builds, but for
/// the SigComp messages' bytes, which depend on the compressor version:
/// same frames, same flows, same SIP.
#[test]
fn committed_synthetic_pcap_reads_like_a_fresh_one() {
    let path = common::data("synthetic.pcap");
    let fresh = synthetic_capture().0;
    if std::env::var_os("SIGKIT_REGENERATE").is_some() {
        std::fs::write(&path, &fresh).expect("write synthetic.pcap");
    }
    let committed = analyze(&read("synthetic.pcap"), &Options::default()).expect("committed");
    let now = analyze(&fresh, &Options::default()).expect("fresh");
    assert_eq!(committed.capture.frames, now.capture.frames);
    assert_eq!(committed.flows.len(), now.flows.len());
    for (c, n) in committed.flows.iter().zip(&now.flows) {
        assert_eq!((c.sip_bytes, c.messages.len()), (n.sip_bytes, n.messages.len()));
    }
}

#[test]
fn bad_captures_are_errors() {
    let real = read("sip-udp.pcapng");
    let synthetic = synthetic_capture().0;
    for (what, bytes) in [
        ("empty", Vec::new()),
        ("text", b"INVITE sip:bob@example.com SIP/2.0\r\n".to_vec()),
        ("pcap header cut", synthetic[..10].to_vec()),
        ("pcapng header cut", real[..20].to_vec()),
    ] {
        let err = analyze(&bytes, &Options::default()).expect_err(what);
        assert!(!err.to_string().is_empty());
    }
    // A damaged record length is an error, not a huge allocation nor a cut.
    let mut damaged = synthetic.clone();
    damaged[24 + 8..24 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(analyze(&damaged, &Options::default()).is_err());
}

/// A capture cut short inside a record is read as tshark reads it: the
/// records before the cut, the partial one dropped, and where it was cut.
#[test]
fn captures_cut_short_are_read_up_to_the_cut() {
    let real = read("sip-udp.pcapng");
    let synthetic = synthetic_capture().0;
    let whole = |b: &[u8]| analyze(b, &Options::default()).unwrap().capture.frames;
    for (what, file, cut) in
        [("pcap record cut", &synthetic, synthetic.len() - 7), ("pcapng block cut", &real, real.len() / 2)]
    {
        let a = analyze(&file[..cut], &Options::default()).expect(what);
        let t = a.capture.truncated.expect(what);
        assert_eq!(t.records, a.capture.frames, "{what}");
        assert!(a.capture.frames < whole(file) && a.capture.frames > 0, "{what}");
        assert!(t.offset < cut && t.offset + t.present == cut, "{what}: {t:?}");
    }
}

/// No prefix of a capture, and no damaged byte in it, makes the analysis
/// panic.
#[test]
fn damaged_captures_never_panic() {
    let synthetic = synthetic_capture().0;
    let options = Options { variants: vec![sigkit_analyze::Variant::all()[2]], ..Options::default() };
    for cut in (0..synthetic.len()).step_by(97) {
        let _ = analyze(&synthetic[..cut], &options);
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..300 {
        let mut damaged = synthetic.clone();
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % damaged.len() as u64) as usize;
            damaged[at] ^= (state >> 32) as u8 | 1;
        }
        let _ = analyze(&damaged, &options);
    }
}
