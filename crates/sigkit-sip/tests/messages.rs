//! Parsing and typed views on real SIP messages (the corpus) and hand-written
//! ones: compact forms, folded lines, IPv6, quoted display names with commas,
//! several Vias in one line.

mod common;

use sigkit_sip::{
    compartment, proxy, CSeq, Contacts, HeaderName, Message, NameAddr, ParseError, Scheme, StartLine, Uri, Via,
};

#[test]
fn every_corpus_message_parses_with_its_views() {
    for (name, bytes) in common::corpus() {
        let msg = Message::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(msg.as_bytes(), &bytes[..], "{name}");
        assert_eq!(msg.content_length(), Some(msg.body().len()), "{name}");
        assert!(msg.trailing().is_empty());
        let via = msg.top_via().unwrap_or_else(|e| panic!("{name}: {e}"));
        // Some traces of the thesis predate RFC 3261 branches (no `branch` at all).
        assert!(via.branch().is_none_or(|b| b.starts_with("z9hG4bK")), "{name}");
        msg.call_id().unwrap();
        let cseq = msg.cseq().unwrap();
        if let Some(m) = msg.method() {
            assert_eq!(m, cseq.method, "{name}");
        }
        msg.from().unwrap_or_else(|e| panic!("{name}: {e}")).tag().unwrap();
        msg.to().unwrap();
        msg.routes().unwrap();
        // The Open SigComp trace has `Record-Route: 131.160.31.19;comp=sigcomp`:
        // no scheme, not a name-addr (RFC 3261 §20.30).
        let rr = msg.record_routes();
        if msg.headers().iter().any(|h| h.value.starts_with(b"131.160.31.19")) {
            assert_eq!(rr, Err(ParseError::NameAddr), "{name}");
        } else {
            rr.unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        msg.paths().unwrap();
        msg.contacts().unwrap();
        assert_eq!(Message::parse_stream_frame(&bytes), Ok(Some(bytes.len())), "{name}");
        let sender_is_ue = name.contains("-ue-");
        assert_eq!(msg.is_request(), sender_is_ue, "{name}");
    }
}

#[test]
fn corpus_invite_views() {
    let bytes = common::corpus_file("3gpp-video-call/01-ue-INVITE.sip");
    let msg = Message::parse(&bytes).unwrap();
    assert_eq!(
        msg.start_line(),
        &StartLine::Request { method: "INVITE", uri: "tel:+1-212-555-2222", version: "SIP/2.0" }
    );
    assert_eq!(msg.request_uri(), Err(ParseError::UnsupportedScheme));
    let via = msg.top_via().unwrap();
    assert_eq!((via.protocol_name, via.protocol_version, via.transport), ("SIP", "2.0", "UDP"));
    assert_eq!(via.host, "[5555::aaa:bbb:ccc:ddd]");
    assert_eq!(via.host_addr(), "5555::aaa:bbb:ccc:ddd");
    assert_eq!(via.port, Some(1357));
    assert!(via.is_sigcomp());
    assert_eq!(via.branch(), Some("z9hG4bKnashds7"));
    assert_eq!(via.rport(), None);
    assert_eq!(msg.max_forwards(), Ok(Some(70)));
    assert_eq!(msg.cseq(), Ok(CSeq { number: 127, method: "INVITE" }));
    assert_eq!(msg.content_length(), Some(567));
    let routes = msg.routes().unwrap();
    assert_eq!(routes.len(), 2);
    let r0 = routes[0].sip_uri().unwrap();
    assert_eq!((r0.host, r0.port, r0.lr(), r0.is_sigcomp()), ("pcscf1.visited1.net", Some(7531), true, true));
    assert_eq!(routes[1].sip_uri().unwrap().host, "scscf1.home1.net");
    let Contacts::List(contacts) = msg.contacts().unwrap() else { panic!("star") };
    let c = contacts[0].sip_uri().unwrap();
    assert_eq!((c.host_addr(), c.port, c.comp()), ("5555::aaa:bbb:ccc:ddd", Some(1357), Some("sigcomp")));
    // `Cseq` is written in another case than RFC 3261's `CSeq`.
    assert_eq!(msg.headers_named("CSEQ").count(), 1);
    let supported: Vec<_> = msg.values(HeaderName::Require).map(|v| v.value).collect();
    assert_eq!(supported, [&b"precondition"[..], b"sec-agree"]);
    assert_eq!(compartment::sigcomp_id(&msg), None);
    assert_eq!(
        compartment::remote_application_id(&msg),
        Some(compartment::RemoteId::SentBy { host: "5555::aaa:bbb:ccc:ddd", port: Some(1357) })
    );
}

#[test]
fn corpus_register_200_path_and_lifetime() {
    let bytes = common::corpus_file("3gpp-registration/04-pcscf-200-OK.sip");
    let msg = Message::parse(&bytes).unwrap();
    assert_eq!(msg.status_code(), Some(200));
    let path = msg.paths().unwrap();
    assert_eq!(path[0].sip_uri().unwrap().user, Some("term"));
    let Contacts::List(c) = msg.contacts().unwrap() else { panic!() };
    assert_eq!(c[0].expires(), Some(600000));
    let assoc: Vec<_> =
        msg.values(HeaderName::Other).filter(|v| msg.headers()[v.header].name == "P-Associated-URI").collect();
    assert_eq!(assoc.len(), 3);
    assert_eq!(compartment::compartment_lifetime(&msg), compartment::Lifetime::Registration);
}

const COMPACT: &[u8] = b"\r\n\r\nINVITE sip:bob@biloxi.example.com;transport=tcp SIP/2.0\r\n\
v: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKa, SIP/2.0/TCP [2001:db8::9]:5061 ;received=2001:db8::8;rport=4000,\r\n\
\x20SIP / 2.0 / SCTP host.example.com;branch=z9hG4bKc\r\n\
Via: SIP/2.0/UDP last.example.com;branch=z9hG4bKd;ttl=16;maddr=224.2.0.1\r\n\
max-forwards: 69\r\n\
f: \"Smith, Alice \\\"Al\\\"\" <sip:alice@atlanta.example.com>;tag=9fx\r\n\
t: Bob\r\n   Biloxi <sip:bob@biloxi.example.com:5070;user=phone?subject=x>\r\n\
i: a84b4c76e66710@pc33.atlanta.example.com\r\n\
CSeq  :   314159   INVITE\r\n\
m: \"A, B\" <sip:alice@[2001:db8::1]:5062;comp=sigcomp>;+sip.instance=\"<urn:uuid:00000000-0000-1000-8000-000A95A0E128>\";q=0.7;expires=3600, sip:alt@192.0.2.7;expires=60\r\n\
k: 100rel,path\r\n\
Record-Route: <sip:p1.example.com;lr>,<sip:p2.example.com;lr>\r\n\
Record-Route: <sip:p3.example.com;lr>\r\n\
c: application/sdp\r\n\
Expires: 99999999999\r\n\
l: 4\r\n\r\nv=0\r\ntrailing junk";

#[test]
fn compact_folded_ipv6_quoted_multi_via() {
    let msg = Message::parse(COMPACT).unwrap();
    assert_eq!(msg.body(), b"v=0\r");
    assert_eq!(msg.trailing(), b"\ntrailing junk");
    assert!(msg.as_bytes().starts_with(b"INVITE "));
    let uri = msg.request_uri().unwrap();
    assert_eq!(
        (uri.scheme, uri.user, uri.host, uri.transport()),
        (Scheme::Sip, Some("bob"), "biloxi.example.com", Some("tcp"))
    );
    let vias: Vec<Via> = msg.vias().collect::<Result<_, _>>().unwrap();
    assert_eq!(vias.len(), 4);
    assert_eq!((vias[0].host, vias[0].port, vias[0].branch()), ("192.0.2.1", Some(5060), Some("z9hG4bKa")));
    assert_eq!((vias[1].transport, vias[1].host_addr(), vias[1].port), ("TCP", "2001:db8::9", Some(5061)));
    assert_eq!((vias[1].received(), vias[1].rport()), (Some("2001:db8::8"), Some(Some(4000))));
    assert_eq!(vias[1].response_target(), ("2001:db8::8", Some(4000)));
    assert_eq!((vias[2].transport, vias[2].host), ("SCTP", "host.example.com"));
    assert_eq!((vias[3].ttl(), vias[3].maddr()), (Some(16), Some("224.2.0.1")));
    assert_eq!(msg.max_forwards(), Ok(Some(69)));
    let from = msg.from().unwrap();
    assert_eq!(from.display_name(), Some("Smith, Alice \\\"Al\\\""));
    assert_eq!((from.uri, from.tag()), ("sip:alice@atlanta.example.com", Some("9fx")));
    let to = msg.to().unwrap();
    assert_eq!(to.display, Some("Bob\r\n   Biloxi"));
    let to_uri = to.sip_uri().unwrap();
    assert_eq!(
        (to_uri.port, to_uri.param("user"), to_uri.headers),
        (Some(5070), Some(Some("phone")), Some("subject=x"))
    );
    assert_eq!(msg.call_id(), Ok("a84b4c76e66710@pc33.atlanta.example.com"));
    assert_eq!(msg.cseq(), Ok(CSeq { number: 314159, method: "INVITE" }));
    let Contacts::List(contacts) = msg.contacts().unwrap() else { panic!() };
    assert_eq!(contacts.len(), 2);
    assert_eq!(contacts[0].display_name(), Some("A, B"));
    assert_eq!(contacts[0].instance(), Some("urn:uuid:00000000-0000-1000-8000-000A95A0E128"));
    assert_eq!((contacts[0].q(), contacts[0].expires()), (Some("0.7"), Some(3600)));
    assert_eq!(contacts[0].sip_uri().unwrap().host, "[2001:db8::1]");
    // addr-spec form: `;expires` is a header parameter, not a URI parameter (RFC 3261 §20.10).
    assert_eq!((contacts[1].uri, contacts[1].bracketed, contacts[1].expires()), ("sip:alt@192.0.2.7", false, Some(60)));
    let supported: Vec<_> = msg.values(HeaderName::Supported).map(|v| v.value).collect();
    assert_eq!(supported, [&b"100rel"[..], b"path"]);
    assert_eq!(msg.record_routes().unwrap().len(), 3);
    assert_eq!(msg.headers_named("Content-Type").count(), 1);
    assert_eq!(msg.headers_named("v").count(), 2);
    assert_eq!(msg.expires(), Ok(Some(u32::MAX)));
    // No Via sigcomp-id: the Contact's +sip.instance (RFC 5049 §6.1).
    assert_eq!(compartment::sigcomp_id(&msg), Some("urn:uuid:00000000-0000-1000-8000-000A95A0E128"));
    // The frame ends at Content-Length, leading empty lines counted.
    let framed = Message::parse_stream_frame(COMPACT).unwrap().unwrap();
    assert_eq!(&COMPACT[framed - 4..framed], b"v=0\r");
}

#[test]
fn via_sigcomp_id_takes_precedence() {
    let m = b"OPTIONS sip:p.example.net SIP/2.0\r\n\
Via: SIP/2.0/UDP server1.example.com:5060\r\n   ;branch=z9hG4bK87a7\r\n   ;comp=sigcomp\r\n   ;sigcomp-id=\"<urn:uuid:0C67446E-F1A1-11D9-94D3-000A95A0E128>\"\r\n\
Contact: <sip:a@b>;+sip.instance=\"<urn:uuid:other>\"\r\nContent-Length: 0\r\n\r\n";
    let msg = Message::parse(m).unwrap();
    let via = msg.top_via().unwrap();
    assert_eq!(via.sigcomp_id(), Some("urn:uuid:0C67446E-F1A1-11D9-94D3-000A95A0E128"));
    assert_eq!(via.branch(), Some("z9hG4bK87a7"));
    assert_eq!(compartment::sigcomp_id(&msg), Some("urn:uuid:0C67446E-F1A1-11D9-94D3-000A95A0E128"));
    assert_eq!(
        compartment::remote_application_id(&msg),
        Some(compartment::RemoteId::Urn("urn:uuid:0C67446E-F1A1-11D9-94D3-000A95A0E128"))
    );
}

#[test]
fn contact_star_and_missing_headers() {
    let m = b"REGISTER sip:r.example.com SIP/2.0\r\nContact: *\r\nExpires: 0\r\n\r\n";
    let msg = Message::parse(m).unwrap();
    assert_eq!(msg.contacts(), Ok(Contacts::Star));
    assert_eq!(msg.expires(), Ok(Some(0)));
    assert_eq!(msg.top_via(), Err(ParseError::MissingHeader("Via")));
    assert_eq!(msg.call_id(), Err(ParseError::MissingHeader("Call-ID")));
    assert_eq!(msg.content_length(), None);
    assert_eq!(msg.body(), b"");
    // Over a stream transport Content-Length is mandatory (RFC 3261 §18.3).
    assert_eq!(Message::parse_stream_frame(m), Err(ParseError::MissingContentLength));
}

#[test]
fn stream_framing() {
    let one = b"SIP/2.0 200 OK\r\nl: 5\r\n\r\nhello";
    let mut stream = one.to_vec();
    stream.extend_from_slice(b"\r\n\r\nSIP/2.0 180 Ringing\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(Message::parse_stream_frame(&stream), Ok(Some(one.len())));
    let rest = &stream[one.len()..];
    let n = Message::parse_stream_frame(rest).unwrap().unwrap();
    assert_eq!(n, rest.len());
    assert_eq!(Message::parse(&rest[..n]).unwrap().status_code(), Some(180));
    for cut in 0..one.len() {
        assert_eq!(Message::parse_stream_frame(&one[..cut]), Ok(None), "cut {cut}");
    }
    let huge = vec![b'a'; sigkit_sip::MAX_HEADER_BYTES + 10];
    assert_eq!(Message::parse_stream_frame(&huge), Err(ParseError::HeadersTooLarge));
}

#[test]
fn content_length_larger_than_body() {
    let m = b"SIP/2.0 200 OK\r\nContent-Length: 10\r\n\r\nabc";
    assert_eq!(Message::parse(m).unwrap_err(), ParseError::BodyTruncated { declared: 10, available: 3 });
    let lenient = Message::parse_headers(m).unwrap();
    assert_eq!((lenient.content_length(), lenient.body()), (Some(10), &b"abc"[..]));
}

#[test]
fn uri_views() {
    let u = Uri::parse("sips:alice:secret@[2001:db8::1]:5061;transport=tls;maddr=239.255.255.1;lr;comp=sigcomp;sigcomp-id=urn%3auuid%3a1?h=v").unwrap();
    assert_eq!(u.scheme, Scheme::Sips);
    assert_eq!((u.user, u.password), (Some("alice"), Some("secret")));
    assert_eq!((u.host, u.host_addr(), u.port), ("[2001:db8::1]", "2001:db8::1", Some(5061)));
    assert_eq!((u.transport(), u.maddr(), u.lr(), u.is_sigcomp()), (Some("tls"), Some("239.255.255.1"), true, true));
    assert_eq!(u.sigcomp_id(), Some("urn%3auuid%3a1"));
    assert_eq!(u.headers, Some("h=v"));
    let tel_user = Uri::parse("sip:+1-212-555-1111;phone-context=home1.net@home1.net;user=phone").unwrap();
    assert_eq!(tel_user.user, Some("+1-212-555-1111;phone-context=home1.net"));
    assert_eq!(tel_user.param("user"), Some(Some("phone")));
    for bad in
        ["sip:", "sip:@host", "sip:host:99999", "sip:host:", "sip:[::1", "sip:a b", "sip:host;=x", "sip:a@b@c", "sipx"]
    {
        assert!(Uri::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(Uri::parse("tel:+1234"), Err(ParseError::UnsupportedScheme));
}

#[test]
fn name_addr_and_cseq_errors() {
    for bad in ["\"unterminated <sip:a@b>", "<sip:a@b", "Bad@Name <sip:a@b>", "<>", "<sip:a@b>;=1", "plain"] {
        assert!(NameAddr::parse(bad).is_err(), "{bad}");
    }
    for bad in ["", "1", "INVITE", "2147483648 INVITE", "-1 INVITE", "1 INV;ITE"] {
        assert_eq!(CSeq::parse(bad), Err(ParseError::CSeq), "{bad}");
    }
    assert_eq!(CSeq::parse("2147483647 ACK").unwrap().number, 2147483647);
}

#[test]
fn via_errors() {
    for bad in [
        "SIP/2.0 host",
        "SIP/2.0/UDP",
        "SIP/2.0/UDP ;branch=x",
        "SIP/2.0/UDP h:70000",
        "SIP/2.0/UDP h;rport=x",
        "SIP/2.0/UDP h;ttl=300",
        "SIP/2.0/UDP h;branch=",
        "SIP/2.0/UDP h junk",
    ] {
        assert!(Via::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn header_name_forms() {
    for (name, kind) in [
        ("v", HeaderName::Via),
        ("VIA", HeaderName::Via),
        ("i", HeaderName::CallId),
        ("call-id", HeaderName::CallId),
        ("m", HeaderName::Contact),
        ("l", HeaderName::ContentLength),
        ("f", HeaderName::From),
        ("t", HeaderName::To),
        ("k", HeaderName::Supported),
        ("Path", HeaderName::Path),
        ("X-Foo", HeaderName::Other),
        ("z", HeaderName::Other),
    ] {
        assert_eq!(HeaderName::from_name(name.as_bytes()), kind, "{name}");
    }
    assert_eq!(HeaderName::RecordRoute.as_str(), "Record-Route");
}

#[test]
fn branch_and_dialog_helpers() {
    assert_eq!(proxy::branch(&[0, 0xab, 0x10]), "z9hG4bK00ab10");
    assert!(proxy::is_dialog_forming("INVITE"));
    assert!(proxy::is_dialog_forming("SUBSCRIBE"));
    assert!(!proxy::is_dialog_forming("BYE"));
    assert!(!proxy::is_dialog_forming("invite"));
}

#[test]
fn compartment_lifetimes() {
    use compartment::{compartment_lifetime, Lifetime};
    let lifetime = |name: &str| compartment_lifetime(&Message::parse(&common::corpus_file(name)).unwrap());
    // RFC 5049 §6.6: a 1xx with To tag and a 200 to INVITE establish the dialog.
    assert_eq!(lifetime("3gpp-video-call/03-pcscf-183-Session-Progress.sip"), Lifetime::Dialog);
    // This flow's 180 carries `CSeq: 129 UPDATE`: not dialog-forming.
    assert_eq!(lifetime("3gpp-video-call/08-pcscf-180-Ringing.sip"), Lifetime::Transaction);
    assert_eq!(lifetime("3gpp-video-call/11-pcscf-200-OK.sip"), Lifetime::Dialog);
    // §6.4: a 100 Trying, a 200 to PRACK, a request: the transaction only.
    assert_eq!(lifetime("3gpp-video-call/02-pcscf-100-Trying.sip"), Lifetime::Transaction);
    assert_eq!(lifetime("3gpp-video-call/05-pcscf-200-OK.sip"), Lifetime::Transaction);
    assert_eq!(lifetime("3gpp-video-call/01-ue-INVITE.sip"), Lifetime::Transaction);
    // §6.5: a 200 to REGISTER.
    assert_eq!(lifetime("3gpp-registration/04-pcscf-200-OK.sip"), Lifetime::Registration);
    assert_eq!(lifetime("3gpp-registration/02-pcscf-401-Unauthorized.sip"), Lifetime::Transaction);
}
