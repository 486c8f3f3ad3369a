//! Bad inputs in the spirit of the RFC 4475 torture tests (§3.1.2, invalid
//! messages): each gives a typed error, never a panic.

use sigkit_sip::{Contacts, Editor, Message, ParseError};

const HEAD: &str = "Via: SIP/2.0/UDP host1.example.com;branch=z9hG4bK1\r\n\
To: <sip:j.user@example.com>\r\nFrom: <sip:caller@example.net>;tag=1\r\n\
Call-ID: torture@host\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\n";

fn request(extra: &str) -> Vec<u8> {
    format!("OPTIONS sip:user@example.com SIP/2.0\r\n{HEAD}{extra}\r\n").into_bytes()
}

#[test]
fn message_level_errors() {
    let cases: &[(&[u8], ParseError)] = &[
        (b"", ParseError::Empty),
        (b"\r\n\r\n", ParseError::Empty),
        (b"OPTIONS sip:a@b SIP/2.0\r\nVia: x", ParseError::Incomplete),
        (b"OPTIONS sip:a@b SIP/2.0\r\nVia: x\r\n", ParseError::Incomplete),
        // RFC 4475 §3.1.2.11 (mismatch of spacing in the Request-Line).
        (b"OPTIONS  sip:a@b SIP/2.0\r\n\r\n", ParseError::StartLine),
        (b"OPTIONS sip:a@b  SIP/2.0\r\n\r\n", ParseError::StartLine),
        (b"OPTIONS sip:a@b\r\n\r\n", ParseError::StartLine),
        (b"OPTIONS sip:a@b SIP/2.0 extra\r\n\r\n", ParseError::StartLine),
        // RFC 4475 §3.1.2.5 (<> enclosing the Request-URI).
        (b"OPTIONS <sip:a@b> SIP/2.0\r\n\r\n", ParseError::StartLine),
        (b"OPT<IONS sip:a@b SIP/2.0\r\n\r\n", ParseError::Method),
        (b"OPTIONS sip:a@b HTTP/1.1\r\n\r\n", ParseError::Version),
        (b"OPTIONS sip:a@b SIP/2\r\n\r\n", ParseError::Version),
        // RFC 4475 §3.1.2.16 (unknown, huge status code).
        (b"SIP/2.0 4294967301 better not break the receiver\r\n\r\n", ParseError::StatusCode),
        (b"SIP/2.0 099 Low\r\n\r\n", ParseError::StatusCode),
        (b"SIP/2.0 2x0 OK\r\n\r\n", ParseError::StatusCode),
        (b"SIP/2.0\r\n\r\n", ParseError::StartLine),
        (b"OPTIONS sip:a@b SIP/2.0\r\nNoColonHere\r\n\r\n", ParseError::HeaderLine { offset: 25 }),
        (b"OPTIONS sip:a@b SIP/2.0\r\nBad Name: x\r\n\r\n", ParseError::HeaderLine { offset: 25 }),
        (b"OPTIONS sip:a@b SIP/2.0\r\n: x\r\n\r\n", ParseError::HeaderLine { offset: 25 }),
        (b"OPTIONS sip:a@b SIP/2.0\r\n folded: x\r\n\r\n", ParseError::Continuation { offset: 25 }),
        // RFC 4475 §3.1.2.2 (negative Content-Length) and a value over 32 bits.
        (b"OPTIONS sip:a@b SIP/2.0\r\nContent-Length: -999\r\n\r\n", ParseError::ContentLength),
        (b"OPTIONS sip:a@b SIP/2.0\r\nl: 99999999999999999999\r\n\r\n", ParseError::ContentLength),
        (b"OPTIONS sip:a@b SIP/2.0\r\nl: 4294967296\r\n\r\n", ParseError::ContentLength),
        (b"OPTIONS sip:a@b SIP/2.0\r\nl: 1\r\nContent-Length: 2\r\n\r\nab", ParseError::ConflictingContentLength),
        // RFC 4475 §3.1.2.1 (Content-Length larger than the message).
        (
            b"OPTIONS sip:a@b SIP/2.0\r\nl: 9999\r\n\r\nshort",
            ParseError::BodyTruncated { declared: 9999, available: 5 },
        ),
        (b"\xff\xfe\r\n\r\n", ParseError::StartLine),
    ];
    for (input, want) in cases {
        assert_eq!(Message::parse(input).unwrap_err(), *want, "{:?}", String::from_utf8_lossy(input));
    }
}

#[test]
fn header_level_errors() {
    type View = fn(&Message) -> Result<(), ParseError>;
    let cases: &[(&str, View, ParseError)] = &[
        // RFC 4475 §3.1.2.3 (unterminated quoted string in a display name).
        ("Contact: \"Joe <sip:joe@example.org>\r\n", |m| m.contacts().map(drop), ParseError::NameAddr),
        ("Route: <sip:a@b;lr\r\n", |m| m.routes().map(drop), ParseError::NameAddr),
        // RFC 4475 §3.1.2.6 (unquoted display name with a non-token character).
        ("Record-Route: Joe@Home <sip:a@b>\r\n", |m| m.record_routes().map(drop), ParseError::NameAddr),
        ("Contact: *, <sip:a@b>\r\n", |m| m.contacts().map(drop), ParseError::NameAddr),
        ("Expires: soon\r\n", |m| m.expires().map(drop), ParseError::Number),
        ("Path: <sip:[::1>\r\n", |m| m.paths()?[0].sip_uri().map(drop), ParseError::Host),
        ("Route: <sip:a@b:123456>\r\n", |m| m.routes()?[0].sip_uri().map(drop), ParseError::Port),
    ];
    for (extra, view, want) in cases {
        let bytes = request(extra);
        let msg = Message::parse(&bytes).unwrap();
        assert_eq!(view(&msg), Err(*want), "{extra}");
    }
    // Non-UTF-8 bytes in a value: the raw bytes are there, the text view errs.
    let mut bytes = b"OPTIONS sip:a@b SIP/2.0\r\nCall-ID: \xff\xff\r\n\r\n".to_vec();
    let msg = Message::parse(&bytes).unwrap();
    assert_eq!(msg.call_id(), Err(ParseError::Utf8));
    let spaced = b"OPTIONS sip:a@b SIP/2.0\r\nCall-ID: a b\r\n\r\n";
    assert_eq!(Message::parse(spaced).unwrap().call_id(), Err(ParseError::CallId));
    bytes.truncate(0);
    // RFC 4475 §3.1.2.7 (CSeq number over 2**31) and §3.1.2.12 (Max-Forwards overflow).
    let msg_bytes = b"OPTIONS sip:user@example.com SIP/2.0\r\nMax-Forwards: 300000000000\r\n\r\n";
    let msg = Message::parse(msg_bytes).unwrap();
    assert_eq!(msg.max_forwards(), Err(ParseError::Number));
    assert_eq!(Editor::new(&msg).decrement_max_forwards(), Err(sigkit_sip::EditError::Parse(ParseError::Number)));
    let msg_bytes =
        b"OPTIONS sip:u@e SIP/2.0\r\nCSeq: 36893488147419103232 OPTIONS\r\nVia: SIP/2.0/UDP h:99999\r\n\r\n";
    let msg = Message::parse(msg_bytes).unwrap();
    assert_eq!(msg.cseq(), Err(ParseError::CSeq));
    assert_eq!(msg.top_via(), Err(ParseError::Port));
    assert!(matches!(msg.contacts(), Ok(Contacts::List(l)) if l.is_empty()));
}

#[test]
fn too_many_headers_and_too_large() {
    let mut m = b"OPTIONS sip:a@b SIP/2.0\r\n".to_vec();
    for _ in 0..=sigkit_sip::MAX_HEADERS {
        m.extend_from_slice(b"X: y\r\n");
    }
    m.extend_from_slice(b"\r\n");
    assert_eq!(Message::parse(&m).unwrap_err(), ParseError::TooManyHeaders);
    let mut m = b"OPTIONS sip:a@b SIP/2.0\r\nX: ".to_vec();
    m.extend(std::iter::repeat_n(b'y', sigkit_sip::MAX_HEADER_BYTES));
    m.extend_from_slice(b"\r\nZ: z\r\n\r\n");
    assert_eq!(Message::parse(&m).unwrap_err(), ParseError::HeadersTooLarge);
}

#[test]
fn tolerated_oddities() {
    // Leading empty lines (RFC 3261 §7.5), bare LF line ends, space before the colon.
    let m = b"\r\n\nSIP/2.0 200\nVia : SIP/2.0/UDP a;branch=z9hG4bK1\nContent-Length: 2\n\nok";
    let msg = Message::parse(m).unwrap();
    assert_eq!((msg.status_code(), msg.body()), (Some(200), &b"ok"[..]));
    assert_eq!(msg.top_via().unwrap().branch(), Some("z9hG4bK1"));
    // The same Content-Length twice is not a conflict.
    let m = b"SIP/2.0 200 OK\r\nl: 2\r\nContent-Length: 2\r\n\r\nok";
    assert_eq!(Message::parse(m).unwrap().content_length(), Some(2));
}
