//! Calls in the real captures of tests/data: the --call and --method
//! filters.

mod common;

use common::{corpus_flow, read, CALLS};
use sigkit_analyze::{analyze, Analysis, Filter, Options};
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
    assert_eq!(a.settings.calls, [wanted.clone()]);
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
