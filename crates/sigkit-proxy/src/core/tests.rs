use sigcomp::Transport;

use super::*;

#[test]
fn upstream_messages_find_the_shard_that_wrote_their_branch_or_token() {
    let response = format!(
        "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 127.0.0.1:5062;branch={BRANCH_PREFIX}3.0a0b\r\n\
         Via: SIP/2.0/UDP 127.0.0.1:5080;branch=z9hG4bK1\r\nCall-ID: a\r\nCSeq: 1 OPTIONS\r\n\
         From: <sip:a@x>;tag=1\r\nTo: <sip:b@y>\r\nContent-Length: 0\r\n\r\n"
    );
    let me = 0xa1b2_c3d4_e5f6;
    assert_eq!(Shard::of_upstream_message(response.as_bytes(), 4, me), Some(3));
    // Token 4 * 7 + 5: written by shard 5 of 7.
    let request = "INVITE sip:alice@127.0.0.1:5080 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK2\r\n\
                   Route: <sip:t.a1b2c3d4e5f6.33@127.0.0.1:5062;lr>\r\nCall-ID: b\r\nCSeq: 1 INVITE\r\n\
                   From: <sip:b@y>;tag=2\r\nTo: <sip:alice@x>\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(Shard::of_upstream_message(request.as_bytes(), 7, me), Some(5));
    // No token, or another instance's: the Request-URI's address, as
    // its terminal's messages.
    let contact: SocketAddr = "127.0.0.1:5080".parse().unwrap();
    let by_contact = Some(Shard::of_terminal(contact, 7));
    assert_ne!(by_contact, Some(5));
    assert_eq!(Shard::of_upstream_message(request.as_bytes(), 7, me + 1), by_contact);
    let plain = request.replace("Route: <sip:t.a1b2c3d4e5f6.33@127.0.0.1:5062;lr>\r\n", "");
    assert_eq!(Shard::of_upstream_message(plain.as_bytes(), 7, me), by_contact);
    assert_eq!(Shard::of_upstream_message(b"not sip", 7, me), None);
}

/// A proxy on the default configuration, terminals on UDP
/// 127.0.0.1:5060, the upstream at 127.0.0.1:5070 (the runtime's tests
/// use it too).
pub(crate) fn udp_proxy() -> Proxy {
    let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
    let config = ProxyConfig {
        listen: vec!["udp:127.0.0.1:5060".parse().unwrap()],
        upstream: Some("udp:127.0.0.1:5070".parse().unwrap()),
        ..ProxyConfig::default()
    };
    let addrs = LocalAddrs {
        terminal: vec![(SipTransport::Udp, addr("127.0.0.1:5060"))],
        upstream: addr("127.0.0.1:5062"),
        upstream_peer: addr("127.0.0.1:5070"),
    };
    Proxy::new(&config, addrs).unwrap()
}

/// Two terminals behind one address (one flow), each with its own
/// `sigcomp-id`: two compartments, and with both requests in flight
/// each response is compressed in its own terminal's compartment
/// (RFC 5049 §6.1), which only that terminal can decompress.
#[test]
fn responses_go_to_the_compartment_their_via_names() {
    use sigcomp::Params;
    use sigcomp_compress::{Config, Mechanism};
    let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
    let mut proxy = udp_proxy();
    let from = Peer { transport: SipTransport::Udp, addr: addr("10.0.0.9:5080"), local: None, conn: None };
    let p = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
    let c = Config { mechanism: Mechanism::Dynamic, verify: true, ..Config::default() };
    let mut terminals: Vec<Endpoint> = (0..2).map(|_| Endpoint::new(EndpointConfig::new(p, p, c)).unwrap()).collect();
    let now = Instant::now();
    let me = CompartmentId(1);
    let request = |n: usize, k: usize, method: &str| {
        format!(
            "{method} sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.9:5080;branch=z9hG4bK{n}x{k};rport;comp=sigcomp;\
             sigcomp-id=\"<urn:uuid:0000000{n}-0000-4000-8000-000000000000>\"\r\nMax-Forwards: 70\r\n\
             From: <sip:u{n}@127.0.0.1>;tag={n}\r\nTo: <sip:u{n}@127.0.0.1>\r\nCall-ID: c{n}-{k}\r\nCSeq: {k} {method}\r\n\
             Contact: <sip:u{n}@10.0.0.9:5080;comp=sigcomp>\r\nContent-Length: 0\r\n\r\n"
        )
    };
    // Each terminal's request reaches the upstream; the upstream's 2xx
    // answers are held back until both are in flight.
    let round = |proxy: &mut Proxy, terminals: &mut [Endpoint], k: usize, method: &str| {
        let mut upstream = Vec::new();
        for (n, t) in terminals.iter_mut().enumerate() {
            let out = t.compress(now, me, request(n, k, method).as_bytes()).unwrap();
            proxy.from_terminal(now, from, &out.message, Encoding::SigComp);
            let tx = proxy.poll_transmit().expect("forwarded");
            assert_eq!(tx.side, Side::Upstream);
            upstream.push(tx.bytes);
        }
        for (n, req) in upstream.iter().enumerate() {
            let msg = Message::parse(req).unwrap();
            let contact = format!("<sip:u{n}@10.0.0.9:5080;comp=sigcomp>;expires=3600");
            let ok = build_response(&msg, 200, "OK", Some("up"), &[("Contact", &contact)]).unwrap();
            proxy.from_upstream(now, proxy.identity.upstream_peer(), &ok);
            let tx = proxy.poll_transmit().expect("answer to the terminal");
            assert!(tx.encoding == Encoding::SigComp && tx.to == from);
            let got = match terminals[n].receive(&tx.bytes, Transport::Message) {
                Ok(Received::Message(incoming)) => terminals[n].accept(now, incoming, me).message,
                other => panic!("terminal {n}, {method} {k}: {other:?}"),
            };
            assert!(got.starts_with(b"SIP/2.0 200 OK"));
        }
    };
    round(&mut proxy, &mut terminals, 1, "REGISTER");
    for k in 2..8 {
        round(&mut proxy, &mut terminals, k, "OPTIONS");
    }
    assert_eq!(proxy.endpoint().compartment_ids().count(), 2);
    assert_eq!(proxy.registered_count(), 2);
    assert!(proxy.metrics().states_accepted >= 12);
}

/// RFC 5049 §6.1: a terminal without a `sigcomp-id` is known by the
/// `+sip.instance` of its Contact, whatever flow it comes from; one
/// with neither, by its flow. Each gets its responses compressed in its
/// own compartment, which it can decompress.
#[test]
fn compartments_are_keyed_by_instance_or_else_by_flow() {
    use sigcomp::Params;
    use sigcomp_compress::{Config, Mechanism};
    let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
    let mut proxy = udp_proxy();
    let p = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
    let c = Config { mechanism: Mechanism::Dynamic, verify: true, ..Config::default() };
    let now = Instant::now();
    let me = CompartmentId(1);
    let mut k = 0;
    // One request from `from` (no sigcomp-id in its Via; a Contact
    // with `instance` when given), answered 2xx by the upstream; the
    // answer must reach `from` in a SigComp message it decompresses.
    let mut exchange = |proxy: &mut Proxy, t: &mut Endpoint, from: &str, method: &str, instance: Option<&str>| {
        k += 1;
        let from = Peer { transport: SipTransport::Udp, addr: addr(from), local: None, conn: None };
        let contact = match instance {
            Some(i) => format!("Contact: <sip:u@{};comp=sigcomp>;+sip.instance=\"<{i}>\"\r\n", from.addr),
            None => format!("Contact: <sip:u@{};comp=sigcomp>\r\n", from.addr),
        };
        let request = format!(
            "{method} sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP {};branch=z9hG4bKk{k};rport;comp=sigcomp\r\n\
             Max-Forwards: 70\r\nFrom: <sip:u@127.0.0.1>;tag={k}\r\nTo: <sip:u@127.0.0.1>\r\nCall-ID: c{k}\r\n\
             CSeq: {k} {method}\r\n{contact}Content-Length: 0\r\n\r\n",
            from.addr
        );
        let out = t.compress(now, me, request.as_bytes()).unwrap();
        proxy.from_terminal(now, from, &out.message, Encoding::SigComp);
        let up = proxy.poll_transmit().expect("forwarded");
        let msg = Message::parse(&up.bytes).unwrap();
        let binding = format!("<sip:u@{};comp=sigcomp>;expires=3600", from.addr);
        let extra: &[(&str, &str)] = if method == "REGISTER" { &[("Contact", &binding)] } else { &[] };
        let ok = build_response(&msg, 200, "OK", Some("up"), extra).unwrap();
        proxy.from_upstream(now, proxy.identity.upstream_peer(), &ok);
        let tx = proxy.poll_transmit().expect("answer to the terminal");
        assert!(tx.encoding == Encoding::SigComp && tx.to == from, "{method} {k}: {tx:?}");
        match t.receive(&tx.bytes, Transport::Message) {
            Ok(Received::Message(incoming)) => {
                assert!(t.accept(now, incoming, me).message.starts_with(b"SIP/2.0 200"))
            }
            other => panic!("{method} {k}: {other:?}"),
        }
    };
    let terminal = || Endpoint::new(EndpointConfig::new(p, p, c)).unwrap();
    let compartments = |proxy: &Proxy| proxy.endpoint().compartment_ids().count();
    // By instance: the terminal moves to another port (a NAT
    // rebinding) and keeps its compartment, with the states built in it.
    let urn = "urn:uuid:00000000-0000-4000-8000-0000000000aa";
    let mut a = terminal();
    exchange(&mut proxy, &mut a, "10.0.0.9:5080", "REGISTER", Some(urn));
    exchange(&mut proxy, &mut a, "10.0.0.9:5080", "OPTIONS", None);
    exchange(&mut proxy, &mut a, "10.0.0.9:6000", "REGISTER", Some(urn));
    exchange(&mut proxy, &mut a, "10.0.0.9:6000", "OPTIONS", None);
    assert_eq!(compartments(&proxy), 1);
    assert_eq!(proxy.registrar.compartments.of(&Terminal::Id(urn.into())).len(), 1);
    // By flow: two terminals without identifiers, two compartments.
    let (mut b, mut d) = (terminal(), terminal());
    for _ in 0..3 {
        exchange(&mut proxy, &mut b, "10.0.0.7:5080", "OPTIONS", None);
        exchange(&mut proxy, &mut d, "10.0.0.7:5090", "OPTIONS", None);
    }
    assert_eq!(compartments(&proxy), 3);
    assert_eq!(proxy.registered_count(), 1);
}

#[test]
fn terminals_spread_over_the_shards() {
    let mut seen = [0usize; 4];
    for port in 10_000..10_400u16 {
        seen[Shard::of_terminal(SocketAddr::from(([127, 0, 0, 1], port)), 4) as usize] += 1;
    }
    assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
}

/// Stateful mode under a mocked clock, driven as the runtime drives it:
/// sleep until [`Proxy::poll_timeout`], then [`Proxy::handle_timeout`]
/// there. An upstream that never answers a non-INVITE request gets it
/// again on Timer E: T1 after it was sent, then doubling up to T2
/// (RFC 3261 §17.1.2.2, T1 = 500 ms, T2 = 4 s), each exactly at its time
/// (never before: a call just before the deadline sends nothing), and a
/// 408 goes to the terminal at Timer F, 64·T1 (§17.1.2.2, §16.8).
#[test]
fn stateful_retransmissions_fire_at_the_deadlines_poll_timeout_reports() {
    let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
    let config = ProxyConfig {
        listen: vec!["udp:127.0.0.1:5060".parse().unwrap()],
        upstream: Some("udp:127.0.0.1:5070".parse().unwrap()),
        stateful: true,
        ..ProxyConfig::default()
    };
    let addrs = LocalAddrs {
        terminal: vec![(SipTransport::Udp, addr("127.0.0.1:5060"))],
        upstream: addr("127.0.0.1:5062"),
        upstream_peer: addr("127.0.0.1:5070"),
    };
    let mut proxy = Proxy::new(&config, addrs).unwrap();
    let from = Peer { transport: SipTransport::Udp, addr: addr("10.0.0.9:5080"), local: None, conn: None };
    let options = "OPTIONS sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.9:5080;branch=z9hG4bKt1;rport\r\n\
                   Max-Forwards: 70\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:service@x>\r\nCall-ID: timed\r\n\
                   CSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n";
    let start = Instant::now();
    proxy.from_terminal(start, from, options.as_bytes(), Encoding::Plain);
    let sent: Vec<Transmit> = std::iter::from_fn(|| proxy.poll_transmit()).collect();
    assert!(sent.iter().any(|t| t.side == Side::Upstream), "forwarded at once");
    let ms = Duration::from_millis;
    let mut upstream_at = Vec::new();
    let mut timeout_at = None;
    let end = start + Duration::from_secs(40);
    while let Some(at) = proxy.poll_timeout().filter(|&at| at <= end) {
        assert!(at > start, "a deadline after the request");
        // Just before the deadline nothing is due.
        proxy.handle_timeout(at - ms(1));
        assert_eq!(proxy.poll_transmit(), None, "nothing sent before the deadline at {:?}", at - start);
        proxy.handle_timeout(at);
        for t in std::iter::from_fn(|| proxy.poll_transmit()) {
            match t.side {
                Side::Upstream => upstream_at.push(at - start),
                Side::Terminal if t.bytes.starts_with(b"SIP/2.0 408") => timeout_at = Some(at - start),
                Side::Terminal => {}
            }
        }
    }
    // Timer E: 0.5, 1, 2, 4, 4, ... s apart, until Timer F at 32 s.
    let mut want = Vec::new();
    let (mut at, mut interval) = (ms(0), ms(500));
    while at + interval < ms(32_000) {
        at += interval;
        want.push(at);
        interval = (interval * 2).min(ms(4000));
    }
    assert_eq!(upstream_at, want, "retransmissions at T1, then doubling to T2");
    assert_eq!(timeout_at, Some(ms(32_000)), "408 at Timer F");
    assert_eq!(proxy.metrics().upstream_retransmissions, want.len() as u64);
}

/// With the tap on, a terminal's request and the upstream's answer leave
/// four records, plain SIP with the ends each crossed; with it off, none.
#[test]
fn the_tap_captures_both_sides_only_when_on() {
    let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
    let terminal = addr("10.0.0.9:5080");
    let local = addr("127.0.0.1:5060");
    let from = Peer { transport: SipTransport::Udp, addr: terminal, local: Some(local), conn: None };
    let request = "OPTIONS sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.9:5080;branch=z9hG4bKtap;rport\r\n\
                   Max-Forwards: 70\r\nFrom: <sip:u@127.0.0.1>;tag=1\r\nTo: <sip:u@127.0.0.1>\r\nCall-ID: tap-1\r\n\
                   CSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n";
    let now = Instant::now();
    let mut proxy = udp_proxy();
    proxy.from_terminal(now, from, request.as_bytes(), Encoding::Plain);
    assert!(proxy.poll_transmit().is_some());
    assert_eq!(proxy.poll_captured(), None, "off by default");

    proxy.set_capture(true);
    proxy.from_terminal(now, from, request.as_bytes(), Encoding::Plain);
    let forwarded = proxy.poll_transmit().expect("forwarded").bytes;
    let ok = Message::parse(&forwarded).unwrap();
    let ok = build_response(&ok, 200, "OK", Some("t"), &[]).unwrap();
    proxy.from_upstream(now, proxy.identity.upstream_peer(), &ok);
    let back = proxy.poll_transmit().expect("the 200 to the terminal").bytes;
    let records: Vec<Captured> = std::iter::from_fn(|| proxy.poll_captured()).collect();
    let (upstream_local, upstream) = (addr("127.0.0.1:5062"), addr("127.0.0.1:5070"));
    let ends: Vec<_> = records.iter().map(|r| (r.direction, r.src, r.dst)).collect();
    assert_eq!(
        ends,
        [
            (Direction::FromTerminal, terminal, local),
            (Direction::ToUpstream, upstream_local, upstream),
            (Direction::FromUpstream, upstream, upstream_local),
            (Direction::ToTerminal, local, terminal),
        ]
    );
    assert_eq!(records[0].sip, request.as_bytes());
    assert_eq!(records[1].sip, forwarded);
    assert_eq!(records[2].sip, ok);
    assert_eq!(records[3].sip, back, "plain toward a plain terminal");
    assert!(records.iter().all(|r| r.transport == SipTransport::Udp));
}
