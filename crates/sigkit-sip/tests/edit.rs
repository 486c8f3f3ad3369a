//! The proxy rewrites (Editor) and the responses the proxy builds itself.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use sigkit_sip::{proxy, EditError, Editor, HeaderName, Message, ParseError};
use std::net::SocketAddr;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn pcscf_rewrite_of_the_corpus_invite() {
    let bytes = common::corpus_file("3gpp-video-call/01-ue-INVITE.sip");
    let msg = Message::parse(&bytes).unwrap();
    let mut edit = Editor::new(&msg);
    edit.fill_top_via(addr("[5555::aaa:bbb:ccc:ddd]:1357")).unwrap();
    assert_eq!(edit.decrement_max_forwards(), Ok(69));
    assert_eq!(edit.remove_first_route_if(|r| r.sip_uri().is_ok_and(|u| u.host == "pcscf1.visited1.net")), Ok(true));
    let via = proxy::format_via("UDP", "pcscf1.visited1.net", Some(5060), &proxy::branch(&[7; 8]), None, false);
    edit.prepend_via(&via).unwrap();
    let rr = proxy::route_uri("pcscf1.visited1.net", Some(7531), None, Some("urn:uuid:0C67446E-F1A1-11D9"));
    edit.prepend_record_route(&rr).unwrap();
    let out = edit.emit();
    assert_eq!(out.len(), edit.emitted_len());
    let fwd = Message::parse(&out).unwrap();
    let vias: Vec<_> = fwd.vias().collect::<Result<_, _>>().unwrap();
    assert_eq!(vias.len(), 2);
    assert_eq!(vias[0].host, "pcscf1.visited1.net");
    assert_eq!(vias[0].branch(), Some("z9hG4bK0707070707070707"));
    // sent-by is the source address and there is no rport: no received (RFC 3261 §18.2.1).
    assert_eq!(vias[1].received(), None);
    assert_eq!(vias[1].text, msg.top_via().unwrap().text);
    assert_eq!(fwd.max_forwards(), Ok(Some(69)));
    let routes = fwd.routes().unwrap();
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0].uri, "sip:scscf1.home1.net;lr");
    let rr = fwd.record_routes().unwrap();
    let rr_uri = rr[0].sip_uri().unwrap();
    assert!(rr_uri.lr() && rr_uri.is_sigcomp());
    assert_eq!(rr_uri.sigcomp_id(), Some("urn%3auuid%3a0C67446E-F1A1-11D9"));
    assert_eq!(fwd.body(), msg.body());
    assert_eq!(fwd.content_length(), Some(567));
    // Everything else is unchanged, in order.
    let others = |m: &Message| -> Vec<(String, Vec<u8>)> {
        m.headers()
            .iter()
            .filter(|h| {
                !matches!(
                    h.kind,
                    HeaderName::Via | HeaderName::Route | HeaderName::RecordRoute | HeaderName::MaxForwards
                )
            })
            .map(|h| (h.name.to_string(), h.value.to_vec()))
            .collect()
    };
    assert_eq!(others(&fwd), others(&msg));
}

#[test]
fn received_and_rport() {
    let m = b"MESSAGE sip:b@example.com SIP/2.0\r\nVia: SIP/2.0/UDP ue.example.com;rport;branch=z9hG4bKx, SIP/2.0/UDP 10.0.0.1\r\nContent-Length: 0\r\n\r\n";
    let msg = Message::parse(m).unwrap();
    let mut edit = Editor::new(&msg);
    edit.fill_top_via(addr("192.0.2.4:61000")).unwrap();
    let out = edit.emit();
    let fwd = Message::parse(&out).unwrap();
    let top = fwd.top_via().unwrap();
    assert_eq!((top.rport(), top.received(), top.branch()), (Some(Some(61000)), Some("192.0.2.4"), Some("z9hG4bKx")));
    assert_eq!(fwd.vias().count(), 2);
    // An IP sent-by equal to the source, rport asked: received still added (RFC 3581 §4).
    let m =
        b"MESSAGE sip:b@example.com SIP/2.0\r\nVia: SIP/2.0/UDP [2001:db8::1]:5060;received=1.1.1.1;rport=9\r\n\r\n";
    let msg = Message::parse(m).unwrap();
    let mut edit = Editor::new(&msg);
    edit.fill_top_via(addr("[2001:db8::1]:5060")).unwrap();
    let out = edit.emit();
    let fwd = Message::parse(&out).unwrap();
    let top = fwd.top_via().unwrap();
    assert_eq!((top.rport(), top.received()), (Some(Some(5060)), Some("2001:db8::1")));
    // The message had no Content-Length: one is added.
    assert_eq!(fwd.content_length(), Some(0));
    // A name as sent-by, no rport: received added.
    let m = b"BYE sip:b@example.com SIP/2.0\r\nv: SIP/2.0/TCP ue.example.com:5060;branch=z9hG4bKy\r\nl: 0\r\n\r\n";
    let msg = Message::parse(m).unwrap();
    let mut edit = Editor::new(&msg);
    edit.fill_top_via(addr("192.0.2.4:5060")).unwrap();
    let fwd_bytes = edit.emit();
    let fwd = Message::parse(&fwd_bytes).unwrap();
    assert_eq!(fwd.top_via().unwrap().received(), Some("192.0.2.4"));
    assert_eq!(fwd.top_via().unwrap().rport(), None);
}

#[test]
fn remove_top_via_in_a_shared_line_and_alone() {
    let m = b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP p.example.net;branch=z9hG4bK1 , SIP/2.0/UDP ue.example.com;branch=z9hG4bK2\r\nVia: SIP/2.0/UDP x;branch=z9hG4bK3\r\nContent-Length: 0\r\n\r\n";
    let msg = Message::parse(m).unwrap();
    let mut edit = Editor::new(&msg);
    assert_eq!(edit.remove_top_via().unwrap().host, "p.example.net");
    assert_eq!(edit.remove_top_via(), Err(EditError::Overlap));
    let out = edit.emit();
    assert_eq!(&out[..], &b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP ue.example.com;branch=z9hG4bK2\r\nVia: SIP/2.0/UDP x;branch=z9hG4bK3\r\nContent-Length: 0\r\n\r\n"[..]);
    let msg2 = Message::parse(&out).unwrap();
    let mut edit2 = Editor::new(&msg2);
    edit2.remove_top_via().unwrap();
    let out2 = edit2.emit();
    assert_eq!(&out2[..], &b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP x;branch=z9hG4bK3\r\nContent-Length: 0\r\n\r\n"[..]);
}

#[test]
fn max_forwards() {
    let zero = b"OPTIONS sip:b@example.com SIP/2.0\r\nVia: SIP/2.0/UDP a;branch=z9hG4bK1\r\nMax-Forwards: 0\r\nFrom: <sip:a@example.com>;tag=1\r\nTo: <sip:b@example.com>\r\nCall-ID: c1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n";
    let msg = Message::parse(zero).unwrap();
    assert_eq!(Editor::new(&msg).decrement_max_forwards(), Err(EditError::TooManyHops));
    let resp = proxy::too_many_hops(&msg, "t1").unwrap();
    let r = Message::parse(&resp).unwrap();
    assert_eq!(r.status_code(), Some(483));
    assert_eq!(r.to().unwrap().tag(), Some("t1"));
    assert_eq!(r.top_via().unwrap().branch(), Some("z9hG4bK1"));
    assert_eq!((r.call_id(), r.cseq().unwrap().method), (Ok("c1"), "OPTIONS"));
    let none = b"OPTIONS sip:b@example.com SIP/2.0\r\nVia: SIP/2.0/UDP a\r\nContent-Length: 0\r\n\r\n";
    let msg = Message::parse(none).unwrap();
    let mut edit = Editor::new(&msg);
    assert_eq!(edit.decrement_max_forwards(), Ok(70));
    let out = edit.emit();
    assert_eq!(Message::parse(&out).unwrap().max_forwards(), Ok(Some(70)));
    let response = Message::parse(b"SIP/2.0 200 OK\r\n\r\n").unwrap();
    assert_eq!(Editor::new(&response).decrement_max_forwards(), Err(EditError::NotRequest));
}

#[test]
fn request_uri_route_and_path() {
    let m = b"REGISTER sip:registrar.home1.net SIP/2.0\r\nVia: SIP/2.0/UDP ue\r\nRoute: <sip:other.example.net;lr>\r\nContent-Length: 0\r\n\r\n";
    let msg = Message::parse(m).unwrap();
    let mut edit = Editor::new(&msg);
    assert_eq!(edit.remove_first_route_if(|r| r.uri.contains("pcscf")), Ok(false));
    edit.set_request_uri("sip:scscf.home1.net").unwrap();
    edit.prepend_path(&proxy::route_uri("pcscf1.visited1.net", None, Some("udp"), Some("urn:uuid:1"))).unwrap();
    let out = edit.emit();
    let fwd = Message::parse(&out).unwrap();
    assert_eq!(fwd.request_uri_text(), Some("sip:scscf.home1.net"));
    assert_eq!(fwd.routes().unwrap().len(), 1);
    let path = fwd.paths().unwrap();
    assert_eq!(path[0].uri, "sip:pcscf1.visited1.net;transport=udp;lr;comp=sigcomp;sigcomp-id=urn%3auuid%3a1");
}

#[test]
fn responses_built_by_the_proxy() {
    let bytes = common::corpus_file("3gpp-video-call/01-ue-INVITE.sip");
    let req = Message::parse(&bytes).unwrap();
    let trying = proxy::trying(&req).unwrap();
    let t = Message::parse(&trying).unwrap();
    assert_eq!(t.status_code(), Some(100));
    assert_eq!(t.top_via(), req.top_via());
    assert_eq!(t.to().unwrap().tag(), None);
    assert_eq!(t.from(), req.from());
    assert_eq!(t.cseq(), req.cseq());
    assert_eq!(t.content_length(), Some(0));
    let busy = proxy::service_unavailable(&req, "abc", 30).unwrap();
    let b = Message::parse(&busy).unwrap();
    assert_eq!(b.status_code(), Some(503));
    assert_eq!(b.headers_named("Retry-After").next().unwrap().value, b"30");
    assert_eq!(b.to().unwrap().tag(), Some("abc"));
    let resp = Message::parse(&trying).unwrap();
    assert_eq!(proxy::trying(&resp), Err(ParseError::StartLine));
}

#[test]
fn via_format() {
    let v = proxy::format_via("UDP", "2001:db8::5", Some(5060), "z9hG4bKab", Some("urn:uuid:1"), true);
    assert_eq!(v, "SIP/2.0/UDP [2001:db8::5]:5060;branch=z9hG4bKab;rport;comp=sigcomp;sigcomp-id=\"<urn:uuid:1>\"");
    let via = sigkit_sip::Via::parse(&v).unwrap();
    assert_eq!((via.sigcomp_id(), via.rport(), via.is_sigcomp()), (Some("urn:uuid:1"), Some(None), true));
}

#[test]
fn leading_routes_of_ours_go_across_lines_and_within_one() {
    let text = "BYE sip:ua@10.0.0.9 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1;branch=z9hG4bKa\r\n\
                Route: <sip:t.1@10.0.0.5;lr>, <sip:t.1@10.0.0.6;lr>, <sip:edge.example.org;lr>\r\n\
                Route: <sip:far.example.org;lr>\r\nCall-ID: r\r\nCSeq: 2 BYE\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:b@y>;tag=2\r\n\
                Content-Length: 0\r\n\r\n";
    let ours = |na: &sigkit_sip::NameAddr<'_>| na.sip_uri().is_ok_and(|u| u.host.starts_with("10.0.0."));
    let msg = Message::parse(text.as_bytes()).unwrap();
    let mut e = Editor::new(&msg);
    assert_eq!(e.remove_leading_routes_if(ours), Ok(2));
    let out = e.emit();
    let routes: Vec<String> =
        Message::parse(&out).unwrap().routes().unwrap().iter().map(|r| r.text.to_string()).collect();
    assert_eq!(routes, ["<sip:edge.example.org;lr>", "<sip:far.example.org;lr>"]);

    // All of a line, then part of the next.
    let text = text
        .replace("<sip:edge.example.org;lr>", "<sip:t.1@10.0.0.7;lr>")
        .replace("Route: <sip:far.example.org;lr>", "Route: <sip:t.2@10.0.0.8;lr>, <sip:far.example.org;lr>");
    let msg = Message::parse(text.as_bytes()).unwrap();
    let mut e = Editor::new(&msg);
    assert_eq!(e.remove_leading_routes_if(ours), Ok(4));
    let out = e.emit();
    let parsed = Message::parse(&out).unwrap();
    let routes: Vec<String> = parsed.routes().unwrap().iter().map(|r| r.text.to_string()).collect();
    assert_eq!(routes, ["<sip:far.example.org;lr>"]);
    assert_eq!(parsed.headers_named("Route").count(), 1);

    // None of ours: nothing changes.
    let mut e = Editor::new(&msg);
    assert_eq!(e.remove_leading_routes_if(|_| false), Ok(0));
    assert_eq!(e.emit(), msg.as_bytes());
}
