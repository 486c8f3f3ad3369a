//! The sans-IO endpoint as a SIP proxy drives it: compartments decided
//! after decompressing (RFC 3320 §4, RFC 5049 §4), state declined for a
//! message the application does not accept, many peers with their own
//! parameters and transports at one endpoint, idle timeouts and limits.

mod common;

use std::time::{Duration, Instant};

use common::*;
use sigcomp::wire::{self, Deframer, Frame};
use sigcomp::{CompartmentId, Limits, Params, Reason, Transport};
use sigcomp_compress::{Config, Endpoint, EndpointConfig, EndpointError, Incoming, Mechanism, ReceiveError, Received};

fn config(mechanism: Mechanism, transport: Transport) -> Config {
    Config { mechanism, transport, verify: true, ..Config::default() }
}

fn expect_message(r: Result<Received, ReceiveError>) -> Incoming {
    match r {
        Ok(Received::Message(incoming)) => incoming,
        other => panic!("expected a message, got {other:?}"),
    }
}

/// The compartment a proxy would pick for a SIP message: here the user
/// part of its From URI, as `sigcomp-id` or the flow would name it.
fn compartment_of(sip: &[u8]) -> CompartmentId {
    let text = String::from_utf8_lossy(sip);
    let from = text.lines().find(|l| l.starts_with("From:")).expect("a From header");
    let user = from.split("sip:").nth(1).and_then(|s| s.split('@').next()).expect("a SIP URI");
    CompartmentId(user.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))))
}

#[test]
fn the_compartment_is_chosen_after_decompressing() {
    let flow = read_flow("3gpp-video-call");
    let p = params(8192);
    let cfg = config(Mechanism::Dynamic, Transport::Message);
    let mut ue = endpoint(p, p, cfg);
    let mut proxy = endpoint(p, p, cfg);
    let now = Instant::now();
    let ue_side = CompartmentId(7);
    for m in &flow {
        match m.from {
            Side::Ue => {
                let out = ue.compress(now, ue_side, &m.bytes).unwrap();
                let incoming = expect_message(proxy.receive(&out.message, Transport::Message));
                // Nothing is stored before the application decides.
                let before = proxy.decompressor().states().item_count();
                let compartment = compartment_of(incoming.message());
                assert_eq!(proxy.decompressor().states().item_count(), before);
                let accepted = proxy.accept(now, incoming, compartment);
                assert_eq!(accepted.message, m.bytes);
                assert!(proxy.has_compartment(compartment));
            }
            Side::Pcscf => {
                let compartment = proxy.compartment_ids().next().expect("the UE's compartment");
                let out = proxy.compress(now, compartment, &m.bytes).unwrap();
                let incoming = expect_message(ue.receive(&out.message, Transport::Message));
                assert_eq!(ue.accept(now, incoming, ue_side).message, m.bytes);
            }
        }
    }
    assert_eq!(proxy.compartment_ids().count(), 1, "one UE, one compartment");
    let c = proxy.compartment_ids().next().unwrap();
    assert!(proxy.decompressor().states().compartment(c).is_some_and(|c| !c.entries.is_empty()));
    let metrics = proxy.metrics();
    let from_ue = flow.iter().filter(|m| m.from == Side::Ue).count() as u64;
    assert_eq!(metrics.messages_accepted, from_ue);
    assert_eq!(metrics.messages_received, from_ue);
    assert_eq!(metrics.messages_sent, flow.len() as u64 - from_ue);
}

#[test]
fn a_discarded_message_creates_no_state_and_the_peer_recovers() {
    // Over TCP a state is usable as soon as it is sent (RFC 3320 §5.2.3),
    // so the UE's second message names the state its first one asked
    // for. The proxy discarded the first (say, an unauthenticated
    // REGISTER, RFC 5049 §4): the state does not exist, the proxy NACKs
    // (RFC 4077), and the UE's retry decompresses.
    let flow = read_flow("3gpp-video-call");
    let p = params(8192);
    let cfg = config(Mechanism::Dynamic, Transport::Stream);
    let mut ue = endpoint(p, p, cfg);
    let mut proxy = endpoint(p, p, cfg);
    let now = Instant::now();
    let first = ue.compress(now, C, &flow[0].bytes).unwrap();
    assert!(!first.requested.is_empty(), "the first message asks for state");
    let incoming = expect_message(proxy.receive(&first.message, Transport::Stream));
    assert!(incoming.requests_state());
    assert_eq!(proxy.discard(incoming), flow[0].bytes);
    assert_eq!(proxy.decompressor().states().compartment_ids().count(), 0, "no compartment, no state");
    for id in &first.requested {
        assert!(proxy.decompressor().states().get(id).is_none(), "state created for a discarded message");
    }
    assert_eq!(proxy.metrics().messages_discarded, 1);

    let second = ue.compress(now, C, &flow[2].bytes).unwrap();
    assert!(second.used_state.is_some(), "the test needs a state reference");
    let err = match proxy.receive(&second.message, Transport::Stream) {
        Err(e) => e,
        Ok(r) => panic!("a state that was never created was found: {r:?}"),
    };
    assert_eq!(err.reason(), Reason::StateNotFound);
    let nack = err.nack.expect("a NACK to send back");
    assert_eq!(proxy.metrics().failures(Reason::StateNotFound), 1);
    match ue.receive(&nack, Transport::Stream) {
        Ok(Received::Nack(n)) => {
            assert_eq!(n.reason, Reason::StateNotFound);
            assert_eq!(n.compartment, Some(C));
        }
        other => panic!("expected the NACK to be taken: {other:?}"),
    }
    let retry = ue.compress(now, C, &flow[2].bytes).unwrap();
    let incoming = expect_message(proxy.receive(&retry.message, Transport::Stream));
    assert_eq!(proxy.accept(now, incoming, C).message, flow[2].bytes);
}

/// One terminal: its endpoint, its transport and its compartment at the
/// proxy.
struct Terminal {
    endpoint: Endpoint,
    transport: Transport,
    at_proxy: CompartmentId,
    /// The TCP byte streams, each way (RFC 3320 §4.2.2 record marking).
    to_proxy: Deframer,
    from_proxy: Deframer,
}

fn carry(deframer: &mut Deframer, transport: Transport, msg: &[u8]) -> Vec<u8> {
    match transport {
        Transport::Message => msg.to_vec(),
        Transport::Stream => {
            let mut bytes = Vec::new();
            wire::frame_for_stream(msg, &mut bytes);
            let mut frames = Vec::new();
            deframer.push(&bytes, &mut frames);
            match frames.as_slice() {
                [Frame::Message(m)] => m.clone(),
                other => panic!("stream delivered {other:?}"),
            }
        }
    }
}

#[test]
fn two_peers_with_their_own_parameters_over_udp_and_tcp_at_one_endpoint() {
    let flow = read_flow("3gpp-video-call");
    let proxy_params = Params { dms: 16384, sms: 16384, cpb: 16, version: 2 };
    // Until a peer says otherwise, the proxy assumes the RFC 3320 §3.3.1
    // minimum memory.
    let assumed = Params { dms: 2048, sms: 2048, cpb: 16, version: 2 };
    let mut proxy = endpoint(proxy_params, assumed, config(Mechanism::Shared, Transport::Message));
    let offers = [
        (Params { dms: 8192, sms: 8192, cpb: 16, version: 2 }, Transport::Message, CompartmentId(1)),
        (Params { dms: 16384, sms: 4096, cpb: 32, version: 2 }, Transport::Stream, CompartmentId(2)),
    ];
    let mut terminals: Vec<Terminal> = offers
        .iter()
        .map(|&(p, transport, at_proxy)| Terminal {
            endpoint: endpoint(p, proxy_params, config(Mechanism::Shared, transport)),
            transport,
            at_proxy,
            to_proxy: Deframer::new(1 << 20),
            from_proxy: Deframer::new(1 << 20),
        })
        .collect();
    let now = Instant::now();
    // The two calls interleaved, message by message.
    for round in 0..2 {
        for m in &flow {
            for t in terminals.iter_mut() {
                match m.from {
                    Side::Ue => {
                        let out = t.endpoint.compress(now, C, &m.bytes).unwrap();
                        let delivered = carry(&mut t.to_proxy, t.transport, &out.message);
                        let incoming = expect_message(proxy.receive(&delivered, t.transport));
                        assert_eq!(incoming.transport(), t.transport);
                        let accepted = proxy.accept(now, incoming, t.at_proxy);
                        assert_eq!(accepted.message, m.bytes, "round {round} {}", m.name);
                    }
                    Side::Pcscf => {
                        let out = proxy.compress(now, t.at_proxy, &m.bytes).unwrap();
                        let delivered = carry(&mut t.from_proxy, t.transport, &out.message);
                        let incoming = expect_message(t.endpoint.receive(&delivered, t.transport));
                        assert_eq!(t.endpoint.accept(now, incoming, C).message, m.bytes, "round {round} {}", m.name);
                    }
                }
            }
        }
    }
    // Each compartment learnt its own peer's announced parameters
    // (RFC 3320 §9.4.9) and keeps its own transport.
    for (p, transport, c) in offers {
        assert_eq!(proxy.peer(c), Some((transport, p)), "{c:?}");
        let compressor = proxy.compressor(c).unwrap();
        assert_eq!(*compressor.peer(), p);
        assert_eq!(compressor.config().transport, transport);
    }
    // Their states live in their own compartments at the proxy.
    for (_, _, c) in offers {
        assert!(proxy.decompressor().states().compartment(c).is_some_and(|c| !c.entries.is_empty()));
    }
}

#[test]
fn idle_compartments_time_out() {
    let flow = read_flow("3gpp-video-call");
    let p = params(8192);
    let cfg = config(Mechanism::Dynamic, Transport::Message);
    let mut proxy =
        Endpoint::new(EndpointConfig { idle_timeout: Some(Duration::from_secs(30)), ..EndpointConfig::new(p, p, cfg) })
            .unwrap();
    assert_eq!(proxy.poll_timeout(), None, "nothing to time out");
    let t0 = Instant::now();
    let (a, b) = (CompartmentId(1), CompartmentId(2));
    proxy.compress(t0, a, &flow[1].bytes).unwrap();
    proxy.compress(t0 + Duration::from_secs(10), b, &flow[1].bytes).unwrap();
    assert_eq!(proxy.poll_timeout(), Some(t0 + Duration::from_secs(30)));
    assert!(proxy.handle_timeout(t0 + Duration::from_secs(29)).is_empty());
    assert_eq!(proxy.handle_timeout(t0 + Duration::from_secs(31)), vec![a]);
    assert!(!proxy.has_compartment(a) && proxy.has_compartment(b));
    assert_eq!(proxy.poll_timeout(), Some(t0 + Duration::from_secs(40)));
    // Activity pushes the deadline on.
    proxy.compress(t0 + Duration::from_secs(35), b, &flow[3].bytes).unwrap();
    assert!(proxy.handle_timeout(t0 + Duration::from_secs(41)).is_empty());
    assert_eq!(proxy.handle_timeout(t0 + Duration::from_secs(66)), vec![b]);
    assert_eq!(proxy.metrics().compartments_timed_out, 2);
    assert_eq!(proxy.metrics().compartments, 0);
}

#[test]
fn the_least_recently_used_compartment_is_evicted_at_the_cap() {
    let flow = read_flow("3gpp-video-call");
    let p = params(8192);
    let cfg = config(Mechanism::Dynamic, Transport::Message);
    let limits = Limits { max_compartments: 2, ..Limits::default() };
    let mut proxy = Endpoint::new(EndpointConfig { limits, ..EndpointConfig::new(p, p, cfg) }).unwrap();
    let now = Instant::now();
    let mut ues: Vec<Endpoint> = (0..3).map(|_| endpoint(p, p, cfg)).collect();
    let ids = [CompartmentId(1), CompartmentId(2), CompartmentId(3)];
    let mut evicted = Vec::new();
    for (ue, &c) in ues.iter_mut().zip(&ids) {
        let out = ue.compress(now, C, &flow[0].bytes).unwrap();
        let incoming = expect_message(proxy.receive(&out.message, Transport::Message));
        let accepted = proxy.accept(now, incoming, c);
        assert_eq!(accepted.message, flow[0].bytes);
        evicted.extend(accepted.evicted);
    }
    assert_eq!(evicted, vec![ids[0]], "the least recently used goes");
    assert!(!proxy.has_compartment(ids[0]));
    assert!(proxy.compressor(ids[0]).is_none());
    assert!(proxy.decompressor().states().compartment(ids[0]).is_none_or(|c| c.entries.is_empty()));
    for c in &ids[1..] {
        assert!(proxy.decompressor().states().compartment(*c).is_some_and(|c| !c.entries.is_empty()), "{c:?}");
    }
    assert_eq!(proxy.metrics().compartments_evicted, 1);
    assert_eq!(proxy.metrics().compartments, 2);
}

#[test]
fn a_nack_for_a_message_never_sent_is_reported_unmatched() {
    let p = params(8192);
    let cfg = config(Mechanism::Dynamic, Transport::Message);
    let mut a = endpoint(p, p, cfg);
    let mut b = endpoint(p, p, cfg);
    // b fails a garbage message and NACKs it; a never sent it.
    let garbage = [0xF8u8, 0x00, 0x61, 0x00];
    let err = match b.receive(&garbage, Transport::Message) {
        Err(e) => e,
        Ok(r) => panic!("garbage decompressed: {r:?}"),
    };
    let reason = err.reason();
    match a.receive(&err.nack.expect("a NACK"), Transport::Message) {
        Ok(Received::Nack(n)) => {
            assert_eq!(n.reason, reason);
            assert_eq!(n.compartment, None);
            assert!(n.report.is_none());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(a.metrics().nacks_received, 1);
    assert_eq!(b.metrics().nacks_sent, 1);
}

#[test]
fn bad_parameters_are_typed_errors() {
    let good = params(8192);
    let bad = Params { dms: 3000, ..good };
    let cfg = Config::default();
    assert!(matches!(Endpoint::new(EndpointConfig::new(bad, good, cfg)), Err(EndpointError::LocalParams(_))));
    assert!(matches!(Endpoint::new(EndpointConfig::new(good, bad, cfg)), Err(EndpointError::AssumedPeerParams(_))));
    let tiny_lookahead = Config { lookahead: 17, ..cfg };
    assert!(matches!(
        Endpoint::new(EndpointConfig::new(good, good, tiny_lookahead)),
        Err(EndpointError::Compressor(_))
    ));
}

#[test]
fn a_nack_teaches_the_compartment_its_peers_real_cycles_and_memory() {
    // The sender assumes 128 cycles per bit and 32 KiB of decompression
    // memory; the peer offers 16 and 8 KiB. A NACK for CYCLES_EXHAUSTED
    // carries the peer's cycles_per_bit and one for BYTECODES_TOO_LARGE its
    // memory size (RFC 4077 §3.1): only the compartment whose message
    // failed learns them.
    let offers = params(8192);
    let assumed = Params { cpb: 128, dms: 32768, sms: 8192, ..offers };
    let cfg = config(Mechanism::Dynamic, Transport::Message);
    let mut sender = endpoint(offers, assumed, cfg);
    let now = Instant::now();
    let other = CompartmentId(2);
    sender.open_compartment(now, other, Transport::Message);
    let nack_for = |message: &[u8], reason: Reason, details: Vec<u8>| {
        use sha1::Digest;
        let message_sha1: [u8; 20] = sha1::Sha1::digest(message).into();
        sigcomp::Nack { reason, opcode: 0, pc: 0, message_sha1, details, returned_feedback: None }.emit()
    };
    let sip = b"OPTIONS sip:a@b SIP/2.0\r\nCSeq: 1 OPTIONS\r\n\r\n".to_vec();
    for (reason, details, learnt) in [
        (Reason::CyclesExhausted, vec![16], Params { cpb: 16, ..assumed }),
        (Reason::BytecodesTooLarge, 8192u16.to_be_bytes().to_vec(), Params { cpb: 16, dms: 8192, ..assumed }),
    ] {
        let out = sender.compress(now, C, &sip).unwrap();
        match sender.receive(&nack_for(&out.message, reason, details), Transport::Message) {
            Ok(Received::Nack(n)) => {
                assert_eq!((n.reason, n.compartment), (reason, Some(C)));
                assert!(n.report.is_some());
            }
            Ok(_) => panic!("the NACK was not taken as a NACK"),
            Err(e) => panic!("the NACK failed: {:?}", e.reason()),
        }
        assert_eq!(sender.peer(C), Some((Transport::Message, learnt)), "{reason:?}");
        assert_eq!(sender.peer(other), Some((Transport::Message, assumed)), "{reason:?}");
    }
    // What the compartment now sends decompresses at a peer of 16 cycles
    // per bit and 8 KiB.
    let mut peer = endpoint(offers, offers, cfg);
    let out = sender.compress(now, C, &sip).unwrap();
    let incoming = expect_message(peer.receive(&out.message, Transport::Message));
    assert_eq!(peer.accept(now, incoming, C).message, sip);
}

#[test]
fn invalid_peer_parameters_are_their_own_error() {
    let bad = Params { cpb: 17, ..params(8192) };
    assert!(matches!(
        sigcomp_compress::Compressor::new(Config::default(), bad, params(8192)),
        Err(sigcomp_compress::CompressError::PeerParams(sigcomp::params::ParamError::CyclesPerBit(17)))
    ));
}

#[test]
fn a_peer_without_the_sip_dictionary_gets_messages_it_can_decompress() {
    // RFC 5049 §3 makes the RFC 3485 dictionary the minimum locally
    // available state, but a peer that lacks it answers STATE_NOT_FOUND
    // naming it (RFC 4077): that compartment then compresses without it.
    let p = params(8192);
    let cfg = config(Mechanism::Dynamic, Transport::Message);
    let mut proxy = endpoint(p, p, cfg);
    let mut bare = sigcomp::Decompressor::bare(p).unwrap();
    let now = Instant::now();
    let ok = b"SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1\r\nContent-Length: 0\r\n\r\n".to_vec();
    let out = proxy.compress(now, C, &ok).unwrap();
    let failure = match bare.decompress(&out.message, Transport::Message) {
        Err(f) => f,
        Ok(_) => panic!("the test needs a message that reads the dictionary"),
    };
    assert_eq!(failure.reason, Reason::StateNotFound);
    assert!(sigcomp::dict::SIP_SDP_ID.starts_with(&failure.details), "the NACK names the dictionary");
    let nack = bare.nack_for(&out.message, &failure).expect("a NACK");
    assert!(matches!(proxy.receive(&nack, Transport::Message), Ok(Received::Nack(_))));
    for _ in 0..3 {
        let out = proxy.compress(now, C, &ok).unwrap();
        let d = bare.decompress(&out.message, Transport::Message).map_err(|f| f.reason);
        assert_eq!(d.map(|d| d.output.len()), Ok(ok.len()), "decompressed without the dictionary");
    }
    // Another compartment still uses the dictionary.
    let other = proxy.compress(now, CompartmentId(2), &ok).unwrap();
    assert_eq!(
        bare.decompress(&other.message, Transport::Message).err().map(|f| f.reason),
        Some(Reason::StateNotFound)
    );
}

#[test]
fn over_a_stream_declined_states_are_used_only_once_acknowledged() {
    // A proxy keeps no state for a terminal before it has registered
    // (RFC 5049 §4), yet over TCP a state is the peer's once sent
    // (RFC 3320 §5.2.3). After one STATE_NOT_FOUND NACK the terminal's
    // compressor waits for acknowledgements, so the next discarded
    // message costs no second NACK; once the proxy acknowledges a state,
    // states are used at once again.
    let flow = read_flow("3gpp-video-call");
    let ue_messages: Vec<&[u8]> = flow.iter().filter(|m| m.from == Side::Ue).map(|m| &m.bytes[..]).collect();
    let p = params(8192);
    let cfg = config(Mechanism::Dynamic, Transport::Stream);
    let mut ue = endpoint(p, p, cfg);
    let mut proxy = endpoint(p, p, cfg);
    let now = Instant::now();
    let first = ue.compress(now, C, ue_messages[0]).unwrap();
    let incoming = expect_message(proxy.receive(&first.message, Transport::Stream));
    proxy.discard(incoming);
    let second = ue.compress(now, C, ue_messages[1]).unwrap();
    let Err(err) = proxy.receive(&second.message, Transport::Stream) else { panic!("a state never created was found") };
    assert_eq!(err.reason(), Reason::StateNotFound);
    assert!(matches!(ue.receive(&err.nack.unwrap(), Transport::Stream), Ok(Received::Nack(_))));
    // Sent again and declined again (still unregistered).
    let retry = ue.compress(now, C, ue_messages[1]).unwrap();
    let incoming = expect_message(proxy.receive(&retry.message, Transport::Stream));
    proxy.discard(incoming);
    let third = ue.compress(now, C, ue_messages[2]).unwrap();
    let incoming = expect_message(proxy.receive(&third.message, Transport::Stream));
    // Registered now: the proxy keeps this message's state and answers.
    assert_eq!(proxy.accept(now, incoming, C).message, ue_messages[2]);
    assert_eq!(proxy.metrics().nacks_sent, 1, "one NACK, not one per declined message");
    let answer = flow.iter().find(|m| m.from == Side::Pcscf).unwrap();
    let reply = proxy.compress(now, C, &answer.bytes).unwrap();
    let incoming = expect_message(ue.receive(&reply.message, Transport::Stream));
    ue.accept(now, incoming, C);
    let fourth = ue.compress(now, C, ue_messages[3]).unwrap();
    assert!(fourth.used_state.is_some(), "the acknowledged state is used");
    let incoming = expect_message(proxy.receive(&fourth.message, Transport::Stream));
    assert_eq!(proxy.accept(now, incoming, C).message, ue_messages[3]);
    let fifth = ue.compress(now, C, ue_messages[4]).unwrap();
    let incoming = expect_message(proxy.receive(&fifth.message, Transport::Stream));
    assert_eq!(proxy.accept(now, incoming, C).message, ue_messages[4]);
    assert_eq!(proxy.metrics().nacks_sent, 1);
}

/// A new compartment's compressor reuses the bytecode built for the same
/// settings and peer parameters: the one building would give, shared; a
/// peer with other parameters gets its own.
#[test]
fn new_compartments_take_the_bytecode_built_for_the_same_peer() {
    use sigcomp_compress::{Algorithm, Compressor};
    let local = Params { dms: 8192, sms: 8192, cpb: 64, ..Params::default() };
    let other = Params { dms: 16384, ..local };
    let message = read_flow("3gpp-video-call")[0].bytes.clone();
    for &algorithm in Algorithm::ALL {
        for mechanism in Mechanism::ALL {
            let config = Config { algorithm, mechanism, transport: Transport::Message, ..Config::default() };
            let mut e = Endpoint::new(EndpointConfig::new(local, local, config)).unwrap();
            let now = Instant::now();
            e.set_peer_params(now, CompartmentId(3), other);
            for c in 1..=3 {
                e.compress(now, CompartmentId(c), &message).unwrap();
            }
            let bytecode = |c| e.compressor(CompartmentId(c)).unwrap().bytecode().clone();
            let built = Compressor::new(config, local, local).unwrap().bytecode().clone();
            assert_eq!(*bytecode(2), *built, "{algorithm:?} {mechanism:?}");
            assert!(std::sync::Arc::ptr_eq(&bytecode(1), &bytecode(2)), "{algorithm:?} {mechanism:?}");
            let built_other = Compressor::new(config, other, local).unwrap().bytecode().clone();
            assert_eq!(*bytecode(3), *built_other, "{algorithm:?} {mechanism:?}");
        }
    }
}

#[test]
fn endpoint_metrics_add_up_field_by_field() {
    use sigcomp_compress::EndpointMetrics;
    // Every field set (a field added later must be named here), each to
    // its own value.
    let mut failures = [0u64; 32];
    failures[4] = 17;
    let mut sent_by_reason = [0u64; 32];
    sent_by_reason[1] = 19;
    let mut received_by_reason = [0u64; 32];
    received_by_reason[2] = 23;
    let b = EndpointMetrics {
        compartments: 1,
        state_bytes: 2,
        messages_received: 3,
        bytes_received: 4,
        messages_accepted: 5,
        messages_discarded: 6,
        bytes_decompressed: 7,
        cycles: 8,
        failures,
        nacks_sent: 9,
        nacks_received: 10,
        nacks_sent_by_reason: sent_by_reason,
        nacks_received_by_reason: received_by_reason,
        messages_sent: 11,
        bytes_sent: 12,
        bytes_compressed_from: 13,
        compartments_evicted: 14,
        compartments_timed_out: 15,
    };
    let mut a = b.clone();
    a += &b;
    // The sum's every number is twice the one it was made from.
    let numbers = |m: &EndpointMetrics| -> Vec<u64> {
        format!("{m:?}").split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect()
    };
    let (once, twice) = (numbers(&b), numbers(&a));
    assert_eq!(once.len(), twice.len());
    assert!(once.iter().zip(&twice).all(|(x, y)| *y == 2 * x), "{once:?} doubled is not {twice:?}");
    assert_eq!(a.failures(Reason::from_code(4).unwrap()), 34);
}
