//! Properties: no input makes the parser, the views or the editor panic, and
//! every corpus message survives parse -> edit -> emit -> parse.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use proptest::prelude::*;
use sigkit_sip::{compartment, proxy, Contacts, Editor, HeaderName, Message, NameAddr};
use std::net::SocketAddr;

/// Every view and edit on whatever parses; nothing may panic, and whatever the
/// editor emits parses again.
fn exercise(bytes: &[u8]) {
    let _ = Message::parse_stream_frame(bytes);
    let _ = Message::parse_headers(bytes);
    let Ok(msg) = Message::parse(bytes) else { return };
    let _ = msg.request_uri();
    for v in msg.vias().flatten() {
        let _ =
            (v.branch(), v.received(), v.rport(), v.comp(), v.maddr(), v.ttl(), v.sigcomp_id(), v.response_target());
        let _ = v.params().count();
    }
    let _ = (msg.call_id(), msg.cseq(), msg.max_forwards(), msg.expires(), msg.content_length());
    for kind in [HeaderName::From, HeaderName::To, HeaderName::Route, HeaderName::RecordRoute, HeaderName::Path] {
        for na in msg.name_addrs(kind).flatten() {
            let _ = (na.display_name(), na.tag(), na.expires(), na.q(), na.instance());
            if let Ok(u) = na.sip_uri() {
                let _ = (u.lr(), u.is_sigcomp(), u.transport(), u.maddr(), u.sigcomp_id(), u.host_addr());
            }
        }
    }
    let _ = msg.contacts();
    let _ = sigkit_sip::transaction::TransactionKey::of(&msg);
    // The ACK built from a request and a response (here the same message)
    // parses and keeps the request's transaction.
    if let Ok(ack) = sigkit_sip::transaction::ack_for(&msg, &msg) {
        let parsed = Message::parse(&ack).expect("an ACK built from a parsed message parses");
        assert_eq!(parsed.method(), Some("ACK"));
    }
    if let Ok(cancel) = sigkit_sip::transaction::cancel_for(&msg) {
        let parsed = Message::parse(&cancel).expect("a CANCEL built from a parsed message parses");
        assert_eq!(parsed.method(), Some("CANCEL"));
    }
    let _ = (
        compartment::sigcomp_id(&msg),
        compartment::remote_application_id(&msg),
        compartment::compartment_lifetime(&msg),
    );
    let _ = proxy::trying(&msg);
    let _ = proxy::service_unavailable(&msg, "x", 5);
    let mut edit = Editor::new(&msg);
    let _ = edit.fill_top_via("[2001:db8::1]:5060".parse::<SocketAddr>().unwrap());
    let _ = edit.decrement_max_forwards();
    let _ = edit.remove_first_route_if(|_: &NameAddr| true);
    let _ = edit.prepend_via("SIP/2.0/UDP p.example.net;branch=z9hG4bK1;comp=sigcomp");
    let _ = edit.prepend_record_route("sip:p.example.net;lr;comp=sigcomp");
    if !msg.is_request() {
        let _ = edit.remove_top_via();
    }
    let out = edit.emit();
    assert_eq!(out.len(), edit.emitted_len());
    let again = Message::parse(&out).expect("emitted message parses");
    assert_eq!(again.body(), msg.body());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        exercise(&bytes);
    }

    #[test]
    fn mutated_corpus_never_panics(index in any::<prop::sample::Index>(), edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8)) {
        let corpus = common::corpus();
        let mut bytes = corpus[index.index(corpus.len())].1.clone();
        for (at, byte, op) in edits {
            if bytes.is_empty() { break; }
            let i = at.index(bytes.len());
            match op {
                0 => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ => { bytes.truncate(i); }
            }
        }
        exercise(&bytes);
    }

    #[test]
    fn corpus_round_trips_through_the_editor(index in any::<prop::sample::Index>(), port in 1u16.., v4 in any::<[u8; 4]>(), ops in any::<u8>()) {
        let corpus = common::corpus();
        let (name, bytes) = &corpus[index.index(corpus.len())];
        let msg = Message::parse(bytes).unwrap();
        let source = SocketAddr::from((v4, port));
        let mut edit = Editor::new(&msg);
        prop_assert_eq!(edit.emit(), bytes.clone(), "no edits: {}", name);
        let mut via_delta = 0i32;
        let mut rr_delta = 0usize;
        if msg.is_request() {
            if ops & 1 != 0 { edit.fill_top_via(source).unwrap(); }
            if ops & 2 != 0 { edit.decrement_max_forwards().unwrap(); }
            if ops & 4 != 0 { edit.prepend_via(&proxy::format_via("UDP", "p.example.net", Some(5060), &proxy::branch(&v4), Some("urn:uuid:1"), false)).unwrap(); via_delta += 1; }
            if ops & 8 != 0 { edit.prepend_record_route(&proxy::route_uri("p.example.net", Some(5060), None, Some("urn:uuid:1"))).unwrap(); rr_delta += 1; }
            if ops & 16 != 0 { edit.remove_first_route_if(|_| true).unwrap(); }
        } else if ops & 1 != 0 {
            edit.remove_top_via().unwrap();
            via_delta -= 1;
        }
        let out = edit.emit();
        let fwd = Message::parse(&out).unwrap();
        prop_assert_eq!(fwd.body(), msg.body());
        prop_assert_eq!(fwd.content_length(), Some(fwd.body().len()));
        prop_assert_eq!(fwd.vias().count() as i32, msg.vias().count() as i32 + via_delta);
        prop_assert_eq!(fwd.values(HeaderName::RecordRoute).count(), msg.values(HeaderName::RecordRoute).count() + rr_delta);
        prop_assert_eq!(fwd.call_id(), msg.call_id());
        prop_assert_eq!(fwd.cseq(), msg.cseq());
        prop_assert_eq!(fwd.from(), msg.from());
        prop_assert_eq!(fwd.to(), msg.to());
        if msg.is_request() && ops & 1 != 0 {
            let via = fwd.vias().nth(via_delta as usize).unwrap().unwrap();
            let same = via.host_addr().parse::<std::net::IpAddr>().is_ok_and(|ip| ip == source.ip());
            prop_assert_eq!(via.received().is_some(), !same);
        }
        if let Ok(Contacts::List(a)) = msg.contacts() {
            prop_assert_eq!(fwd.contacts().unwrap(), Contacts::List(a));
        }
        exercise(&out);
    }
}
