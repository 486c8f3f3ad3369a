//! Calls in the real captures of tests/data: the --call and --method
//! filters, and each call's ladder (sngrep's call flow) as data and as
//! text, line by line.

mod common;

use common::{corpus_flow, read, CALLS};
use sigkit_analyze::{analyze, ladder, Analysis, Filter, Options};
use sigkit_sip::Message;

fn run(name: &str, filter: Filter) -> Analysis {
    analyze(&read(name), &Options { filter, ..Options::default() }).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The Call-IDs of an analysis's messages, in order of first appearance.
fn call_ids(a: &Analysis) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for m in a.flows.iter().flat_map(|f| &f.messages) {
        let id = m.call_id.clone().expect("Call-ID");
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// The corpus call the captures replay: (sent by the UE, summary).
fn corpus_call() -> Vec<(bool, String)> {
    corpus_flow()
        .iter()
        .map(|(from_ue, sip)| {
            let m = Message::parse(sip).expect("corpus message");
            let summary = match (m.method(), m.status_code()) {
                (Some(method), _) => method.to_string(),
                (None, Some(code)) => format!("{code} {}", m.cseq().expect("CSeq").method),
                _ => unreachable!(),
            };
            (*from_ue, summary)
        })
        .collect()
}

#[test]
fn a_call_filter_keeps_that_call_only() {
    let all = run("sip-udp.pcapng", Filter::default());
    assert_eq!(call_ids(&all).len(), CALLS);
    let wanted = call_ids(&all)[1].clone();
    let per_call = corpus_call().len();
    let a = run("sip-udp.pcapng", Filter { calls: vec![wanted.clone()], ..Filter::default() });
    assert_eq!(a.flows.len(), 1);
    let f = &a.flows[0];
    assert_eq!(f.messages.len(), per_call);
    assert!(f.messages.iter().all(|m| m.call_id.as_deref() == Some(wanted.as_str())));
    assert_eq!(f.calls, 1);
    assert_eq!((a.messages_filtered_out, a.flows_filtered_out), ((CALLS - 1) * per_call, 0));
    assert_eq!(a.settings.calls, std::slice::from_ref(&wanted));
    // The what-if sends that call's messages only: as SIP, the bytes the
    // unfiltered analysis gave them.
    let full = &all.flows[0];
    let bytes: usize =
        full.messages.iter().filter(|m| m.call_id.as_deref() == Some(wanted.as_str())).map(|m| m.sip_bytes).sum();
    assert_eq!(f.sip_bytes, bytes);
    assert_eq!(f.variants[0].sizes.len(), per_call);

    // A Call-ID compares byte for byte, and one not in the capture keeps
    // nothing.
    for other in [wanted.to_uppercase(), "no-such-call@nowhere".to_string()] {
        if other == wanted {
            continue;
        }
        let none = run("sip-udp.pcapng", Filter { calls: vec![other], ..Filter::default() });
        assert!(none.flows.is_empty());
        assert_eq!((none.flows_filtered_out, none.messages_filtered_out), (1, CALLS * per_call));
        assert_eq!(none.other_flows, 0, "a SIP flow filtered out is no other traffic");
    }
}

#[test]
fn a_method_filter_keeps_its_requests_and_their_responses() {
    let call = corpus_call();
    for (name, method) in [("sip-udp.pcapng", "invite"), ("sip-tcp.pcapng", "BYE"), ("sigcomp-tcp.pcapng", "PRACK")] {
        let a = run(name, Filter { methods: vec![method.to_string()], ..Filter::default() });
        let upper = method.to_uppercase();
        let of_method = |s: &str| s == upper || s.split_once(' ').is_some_and(|(_, m)| m == upper);
        let expected = call.iter().filter(|(_, s)| of_method(s)).count();
        assert!(expected > 0, "{method} is in the corpus call");
        let f = &a.flows[0];
        assert_eq!(f.messages.len(), CALLS * expected, "{name}");
        assert!(f.messages.iter().all(|m| of_method(&m.summary)), "{name}");
        assert_eq!(f.calls, CALLS);
    }
    // Both filters: one call's INVITE transaction.
    let all = run("sip-udp.pcapng", Filter::default());
    let id = call_ids(&all)[2].clone();
    let a = run("sip-udp.pcapng", Filter { calls: vec![id], methods: vec!["INVITE".into()] });
    let got: Vec<&str> = a.flows[0].messages.iter().map(|m| m.summary.as_str()).collect();
    let want: Vec<&str> =
        call.iter().map(|(_, s)| s.as_str()).filter(|s| *s == "INVITE" || s.ends_with(" INVITE")).collect();
    assert_eq!(got, want);
}

/// The first call of the real SIP-over-UDP capture: its ladder has the
/// corpus call's messages in order, each from the side that sent it (the
/// UAC playing the UE sent first: column 0), and the text draws each as
/// sngrep does.
#[test]
fn the_ladder_of_a_real_call() {
    let a = run("sip-udp.pcapng", Filter::default());
    let f = &a.flows[0];
    assert_eq!(a.calls.iter().map(|c| c.call_id.clone()).collect::<Vec<_>>(), call_ids(&a));
    let l = &a.calls[0];
    assert_eq!(l.endpoints, [f.a.clone(), f.b.clone()]);
    assert_eq!(l.sigcomp_variant.as_deref(), Some(ladder::LADDER_VARIANT));
    let call = corpus_call();
    assert_eq!(l.messages.len(), call.len());
    let dynamic = f.variants.iter().find(|v| v.name == ladder::LADDER_VARIANT).expect("variant");
    let of_call: Vec<_> = f.messages.iter().filter(|m| m.call_id.as_deref() == Some(l.call_id.as_str())).collect();
    for ((m, (from_ue, summary)), report) in l.messages.iter().zip(&call).zip(&of_call) {
        assert_eq!(&m.label, summary);
        assert_eq!((m.from, m.to), if *from_ue { (0, 1) } else { (1, 0) }, "{summary}");
        assert_eq!(m.sip_bytes, report.sip_bytes);
        assert_eq!(m.sigcomp_bytes, Some(dynamic.sizes[report.index - 1]));
        assert!(!m.sigcomp_captured);
        assert!((m.time_s - (report.time_s - of_call[0].time_s)).abs() < 1e-9);
    }
    assert_eq!(l.messages[0].time_s, 0.0);
    assert!(l.messages.windows(2).all(|w| w[0].time_s <= w[1].time_s));

    let text = ladder::text(l);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5 + 2 * call.len(), "{text}");
    assert_eq!(
        lines[0],
        format!(
            "call {}: {} messages in {:.6} s between 2 endpoints",
            l.call_id,
            call.len(),
            l.messages.last().unwrap().time_s
        )
    );
    // The columns: each address centred over its lifeline.
    let lifelines: Vec<usize> = lines[4].chars().enumerate().filter(|(_, c)| *c == '│').map(|(i, _)| i).collect();
    assert_eq!(lifelines.len(), 2, "{}", lines[4]);
    for (k, e) in l.endpoints.iter().enumerate() {
        let at = lines[2].find(e.as_str()).unwrap_or_else(|| panic!("{e} in {}", lines[2]));
        let at = lines[2][..at].chars().count();
        assert!(at <= lifelines[k] && lifelines[k] < at + e.len(), "{e} over its lifeline");
    }
    for (i, m) in l.messages.iter().enumerate() {
        let (label, arrow) = (lines[5 + 2 * i], lines[6 + 2 * i]);
        let chars: Vec<char> = arrow.chars().collect();
        // The label between the lifelines.
        let at = label.find(m.label.as_str()).unwrap_or_else(|| panic!("{} in {label}", m.label));
        let at = label[..at].chars().count();
        assert!(lifelines[0] < at && at + m.label.len() < lifelines[1], "{label}");
        // The time on the left, the arrow from sender to receiver.
        assert_eq!(arrow[..10].to_string(), format!("{:>10.6}", m.time_s));
        assert_eq!((chars[lifelines[0]], chars[lifelines[1]]), ('│', '│'), "{arrow}");
        let shaft: String = chars[lifelines[0] + 1..lifelines[1]].iter().collect();
        let width = lifelines[1] - lifelines[0] - 3;
        let expected = if m.from == 0 {
            format!(" {}> ", "─".repeat(width - 1))
        } else {
            format!(" <{} ", "─".repeat(width - 1))
        };
        assert_eq!(shaft, expected, "{arrow}");
        // The bytes on the right.
        let bytes = format!("{:>6} -> {:>6}", m.sip_bytes, m.sigcomp_bytes.unwrap());
        assert!(arrow.ends_with(&bytes), "{arrow}");
    }
}

/// SigComp in the capture: the ladder gives the bytes as captured.
#[test]
fn a_sigcomp_call_shows_the_captured_bytes() {
    let a = run("sigcomp-udp.pcapng", Filter::default());
    let f = &a.flows[0];
    for l in &a.calls {
        for m in &l.messages {
            let report = &f.messages[m.index - 1];
            assert!(m.sigcomp_captured);
            assert_eq!((m.sip_bytes, m.sigcomp_bytes), (report.sip_bytes, Some(report.captured_bytes)));
        }
        let text = ladder::text(l);
        let arrows: Vec<&str> = text.lines().skip(6).step_by(2).collect();
        assert_eq!(arrows.len(), l.messages.len());
        assert!(arrows.iter().all(|line| line.ends_with(" captured")), "{text}");
    }
}
