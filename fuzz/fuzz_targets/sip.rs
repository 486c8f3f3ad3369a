#![no_main]
//! sigkit-sip: the input as one SIP message (and as a TCP byte stream):
//! parse, every typed view, the proxy's edits, emit, and parse again. Nothing
//! may panic; what the editor emits must parse, with the same body.

use libfuzzer_sys::fuzz_target;
use sigkit_sip::{compartment, proxy, Editor, HeaderName, Message, NameAddr};

fuzz_target!(|data: &[u8]| {
    // Stream framing: a frame it cuts lies within the input.
    if let Ok(Some(n)) = Message::parse_stream_frame(data) {
        assert!(n <= data.len());
    }
    let _ = Message::parse_headers(data);
    let Ok(msg) = Message::parse(data) else { return };
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
                let _ = (
                    u.lr(),
                    u.is_sigcomp(),
                    u.transport(),
                    u.maddr(),
                    u.sigcomp_id(),
                    u.host_addr(),
                    u.params().count(),
                );
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
    let _ = (
        compartment::sigcomp_id(&msg),
        compartment::remote_application_id(&msg),
        compartment::compartment_lifetime(&msg),
    );
    // The identifier a request's sender used for its next hop, and the
    // comparable form of the identifier the message carries.
    let _ = compartment::next_hop_id(&msg).map(|n| n.key());
    let _ = compartment::sigcomp_id(&msg).map(compartment::identifier_key);
    if let Ok(r) = proxy::service_unavailable(&msg, "fuzz", 5) {
        Message::parse(&r).expect("a built response parses");
    }
    let mut edit = Editor::new(&msg);
    // No edits: the message itself, with a Content-Length if it had none.
    if msg.content_length().is_some() {
        assert_eq!(edit.emit(), msg.as_bytes());
    }
    let _ = edit.fill_top_via("[2001:db8::1]:5060".parse().unwrap());
    let _ = edit.decrement_max_forwards();
    let _ = edit.remove_first_route_if(|_: &NameAddr| true);
    let _ = edit.set_request_uri("sip:next.example.net");
    let _ = edit.prepend_via("SIP/2.0/UDP p.example.net;branch=z9hG4bK1;comp=sigcomp");
    let _ = edit.prepend_record_route("sip:p.example.net;lr;comp=sigcomp");
    let _ = edit.prepend_path("sip:p.example.net;lr");
    if !msg.is_request() {
        let _ = edit.remove_top_via();
    }
    let out = edit.emit();
    assert_eq!(out.len(), edit.emitted_len());
    let again = Message::parse(&out).expect("the edited message parses");
    assert_eq!(again.body(), msg.body());
    assert_eq!(again.content_length(), Some(msg.body().len()));
});
