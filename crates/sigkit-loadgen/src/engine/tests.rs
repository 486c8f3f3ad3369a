//! The engine without a network: two engines (or one and hand-written
//! peers) exchanging messages through their outboxes on a virtual clock.

use super::*;
use crate::scenario::{built_in, parse};

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

const UAC: u16 = 5061;
const UAS: u16 = 5060;

fn uac_with(scenario: Scenario, injection: Option<Injection>, hold: Duration, now: Instant) -> Engine {
    let config = EngineConfig { local: addr(UAC), remote: Some(addr(UAS)), hold, ..EngineConfig::default() };
    Engine::new(Arc::new(scenario), config, injection.map(Arc::new), now)
}

fn uac(now: Instant) -> Engine {
    uac_with(built_in("uac").unwrap(), None, Duration::ZERO, now)
}

fn uas_with(scenario: Scenario, now: Instant) -> Engine {
    let config = EngineConfig { local: addr(UAS), ..EngineConfig::default() };
    Engine::new(Arc::new(scenario), config, None, now)
}

fn uas(now: Instant) -> Engine {
    uas_with(built_in("uas").unwrap(), now)
}

fn drain(e: &mut Engine) -> Vec<(SocketAddr, Vec<u8>)> {
    let out = e.take_outbox();
    let v = out.iter().map(|(a, b)| (a, b.to_vec())).collect();
    e.return_outbox(out);
    v
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Delivers everything each engine sends to the other until both are
/// quiet, then advances the clock to the next deadline; up to `until`.
fn exchange(a: &mut Engine, b: &mut Engine, mut now: Instant, until: Instant) -> Instant {
    loop {
        let mut moved = false;
        for (_, m) in drain(a) {
            b.on_message(now, addr(UAC), &m);
            moved = true;
        }
        for (_, m) in drain(b) {
            a.on_message(now, addr(UAS), &m);
            moved = true;
        }
        if moved {
            continue;
        }
        let Some(next) = [a.poll_timeout(), b.poll_timeout()].into_iter().flatten().min() else { return now };
        if next > until {
            return now;
        }
        now = next.max(now);
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
}

#[test]
fn the_builtin_pair_completes_calls() {
    let t0 = Instant::now();
    let mut a = uac_with(built_in("uac").unwrap(), None, Duration::from_millis(100), t0);
    let mut b = uas(t0);
    for i in 0..5 {
        a.start_call(t0 + Duration::from_millis(i), 0);
    }
    exchange(&mut a, &mut b, t0, t0 + Duration::from_secs(10));
    let (x, y) = (&a.recorder.total, &b.recorder.total);
    assert_eq!((x.attempted, x.successful, x.failed), (5, 5, 0), "{:?}", x.failures);
    assert_eq!((y.attempted, y.successful, y.failed), (5, 5, 0), "{:?}", y.failures);
    assert_eq!(x.setup_us.len(), 5);
    assert_eq!(x.ringing_us.len(), 5);
    assert_eq!(x.rtd_us[0].len(), 5, "rtd at the 200");
    assert_eq!(y.rtd_us[0].len(), 5, "the UAS's rtd at the ACK");
    assert_eq!(x.retransmissions + y.retransmissions, 0);
    assert_eq!(a.active() + a.live(), 0);
    assert_eq!(b.active(), 0);
    // Each call: INVITE, ACK, BYE from the UAC; 180, 200, 200 from the UAS.
    assert_eq!((x.messages_sent, y.messages_sent), (15, 15));
}

#[test]
fn messages_carry_the_keywords() {
    let t0 = Instant::now();
    let mut a = uac(t0);
    let mut b = uas(t0);
    a.start_call(t0, 0);
    let invite = drain(&mut a).pop().unwrap();
    assert_eq!(invite.0, addr(UAS));
    let inv = text(&invite.1);
    let msg = Message::parse(&invite.1).unwrap();
    assert_eq!(msg.request_uri_text(), Some("sip:service@127.0.0.1:5060"));
    assert_eq!(msg.content_length(), Some(msg.body().len()));
    assert!(msg.body().starts_with(b"v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\n"), "{inv}");
    // SIPp's [call_id], call number-pid@address, with the engine's
    // number in this process after the pid (".N") for every engine but
    // the process's first.
    let call_id = msg.call_id().unwrap();
    let pid = std::process::id().to_string();
    let run = call_id.strip_prefix(&format!("1-{pid}")).and_then(|r| r.strip_suffix("@127.0.0.1")).expect(&inv);
    assert!(run.is_empty() || run.strip_prefix('.').is_some_and(|n| n.parse::<u32>().is_ok()), "{inv}");
    assert!(msg.top_via().unwrap().branch().unwrap().starts_with("z9hG4bK-"));
    b.on_message(t0, addr(UAC), &invite.1);
    let answers = drain(&mut b);
    assert_eq!(answers.len(), 2);
    let ok = Message::parse(&answers[1].1).unwrap();
    assert_eq!(ok.status_code(), Some(200));
    assert_eq!(ok.call_id().unwrap(), msg.call_id().unwrap());
    assert_eq!(ok.top_via().unwrap().branch(), msg.top_via().unwrap().branch());
    assert!(ok.to().unwrap().tag().unwrap().contains("SIPpTag01"));
    for (_, m) in &answers {
        a.on_message(t0, addr(UAS), m);
    }
    // Hold 0: the ACK, then the BYE at once.
    let sent = drain(&mut a);
    assert!(sent[1].1.starts_with(b"BYE "));
    let ack = Message::parse(&sent[0].1).unwrap();
    assert_eq!(ack.method(), Some("ACK"));
    // The UAS's Contact is the dialog's remote target (rrs).
    assert_eq!(ack.request_uri_text(), Some("sip:127.0.0.1:5060;transport=UDP"));
    assert_eq!(ack.to().unwrap().tag(), ok.to().unwrap().tag(), "[peer_tag_param]");
    assert!(ack.header(HeaderName::Route).is_none(), "no route set, no Route line");
}

#[test]
fn a_silent_peer_gets_the_invite_seven_times_then_timer_b_fails_the_call() {
    let t0 = Instant::now();
    let mut a = uac(t0);
    a.start_call(t0, 0);
    let mut sent = drain(&mut a).len();
    while let Some(t) = a.poll_timeout() {
        a.handle_timeout(t);
        sent += drain(&mut a).len();
    }
    // Timer A: 0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s; Timer B at 32 s.
    assert_eq!(sent, 7);
    assert_eq!(a.recorder.total.failures.get("invite_timeout"), Some(&1));
    assert_eq!((a.recorder.total.timeouts, a.recorder.total.retransmissions), (1, 6));
    assert_eq!(a.active(), 0);
}

#[test]
fn a_late_180_after_the_200_is_ignored_and_a_lost_ack_is_resent() {
    let t0 = Instant::now();
    let mut a = uac_with(built_in("uac").unwrap(), None, Duration::from_secs(1), t0);
    let mut b = uas(t0);
    a.start_call(t0, 0);
    let invite = drain(&mut a).pop().unwrap().1;
    b.on_message(t0, addr(UAC), &invite);
    let answers = drain(&mut b);
    // The 200 overtakes the 180 (a proxy with several workers).
    a.on_message(t0, addr(UAS), &answers[1].1);
    a.on_message(t0, addr(UAS), &answers[0].1);
    let ack = drain(&mut a);
    assert_eq!(ack.len(), 1, "the ACK only");
    // The ACK is lost: the UAS sends its 200 again at T1 (§13.3.1.4) and
    // the UAC answers it with the ACK again.
    let t1 = t0 + Duration::from_millis(500);
    b.handle_timeout(t1);
    let again = drain(&mut b);
    assert_eq!(again.len(), 1);
    a.on_message(t1, addr(UAS), &again[0].1);
    let ack2 = drain(&mut a);
    assert_eq!(ack2.len(), 1);
    assert_eq!(ack2[0].1, ack[0].1);
    b.on_message(t1, addr(UAC), &ack2[0].1);
    b.handle_timeout(t0 + Duration::from_secs(3));
    assert!(drain(&mut b).is_empty(), "acknowledged: no more 200s");
    exchange(&mut a, &mut b, t1, t0 + Duration::from_secs(20));
    assert_eq!((a.recorder.total.successful, a.recorder.total.failed), (1, 0));
    assert_eq!((b.recorder.total.successful, b.recorder.total.failed), (1, 0));
    assert_eq!(a.recorder.total.retransmissions_received, 2, "the late 180 and the second 200");
}

#[test]
fn a_repeated_180_of_the_invite_in_progress_is_ignored() {
    // A UAS answers a retransmitted INVITE with its last provisional
    // response (RFC 3261 §17.2.1): the UAC, waiting for the 200, takes
    // the second 180 as a retransmission, not as a reason to fail.
    let t0 = Instant::now();
    let mut a = uac(t0);
    let mut b = uas(t0);
    a.start_call(t0, 0);
    let invite = drain(&mut a).pop().unwrap().1;
    b.on_message(t0, addr(UAC), &invite);
    let answers = drain(&mut b);
    a.on_message(t0, addr(UAS), &answers[0].1);
    a.on_message(t0, addr(UAS), &answers[0].1);
    assert!(drain(&mut a).is_empty());
    a.on_message(t0, addr(UAS), &answers[1].1);
    exchange(&mut a, &mut b, t0, t0 + Duration::from_secs(20));
    assert_eq!((a.recorder.total.successful, a.recorder.total.failed), (1, 0), "{:?}", a.recorder.total.failures);
    assert_eq!(a.recorder.total.retransmissions_received, 1, "the second 180");
}

#[test]
fn a_2xx_never_acknowledged_fails_the_uas_call() {
    let t0 = Instant::now();
    let mut a = uac(t0);
    let mut b = uas(t0);
    a.start_call(t0, 0);
    b.on_message(t0, addr(UAC), &drain(&mut a).pop().unwrap().1);
    let mut sent = drain(&mut b).len();
    while let Some(t) = b.poll_timeout() {
        b.handle_timeout(t);
        sent += drain(&mut b).len();
    }
    assert!(sent > 8, "the 200 sent again until 64·T1: {sent}");
    assert_eq!(b.recorder.total.failures.get("ack_timeout"), Some(&1));
}

#[test]
fn an_error_response_is_acknowledged_and_counted_by_its_code() {
    let t0 = Instant::now();
    let mut a = uac(t0);
    a.start_call(t0, 0);
    let invite = drain(&mut a).pop().unwrap().1;
    let msg = Message::parse(&invite).unwrap();
    let busy = sigkit_sip::proxy::build_response(&msg, 486, "Busy Here", Some("b"), &[]).unwrap();
    a.on_message(t0, addr(UAS), &busy);
    let ack = drain(&mut a);
    assert_eq!(ack.len(), 1);
    assert!(ack[0].1.starts_with(b"ACK "));
    assert_eq!(a.recorder.total.failures.get("invite_486"), Some(&1));
    assert_eq!(a.active(), 0);
}

#[test]
fn garbage_and_strangers_are_counted_never_a_panic() {
    let t0 = Instant::now();
    let mut a = uac(t0);
    let mut b = uas(t0);
    for junk in [&b""[..], b"\xff\xfe", b"SIP/2.0 200 OK\r\n\r\n", b"INVITE x SIP/2.0\r\nCall-ID: 1\r\n\r\n"] {
        a.on_message(t0, addr(1), junk);
        b.on_message(t0, addr(1), junk);
    }
    let bye = b"BYE sip:x@y SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\nFrom: <sip:a@h>;tag=1\r\nTo: <sip:b@h>;tag=2\r\nCall-ID: nobody\r\nCSeq: 1 BYE\r\nContent-Length: 0\r\n\r\n";
    b.on_message(t0, addr(1), bye);
    assert!(a.recorder.total.unexpected + a.recorder.total.out_of_call >= 3);
    assert_eq!(b.recorder.total.out_of_call, 1, "a BYE for no call");
    assert_eq!(a.recorder.total.failed + b.recorder.total.failed, 0);
    assert_eq!(b.active(), 0);
}

#[test]
fn injection_fields_recv_timeouts_and_labels() {
    let xml = r#"<scenario name="t">
      <send><![CDATA[
        OPTIONS sip:[field0]@[remote_ip]:[remote_port] SIP/2.0
        Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
        From: <sip:[field1]@h>;tag=[call_number]
        To: <sip:[field0]@h>
        Call-ID: [call_id]
        CSeq: [cseq] OPTIONS
        Content-Length: [len]
      ]]></send>
      <recv response="200" timeout="1000" ontimeout="gone" next="done"/>
      <label id="gone"/>
      <nop start_rtd="x"/>
      <pause milliseconds="10"/>
      <nop rtd="x"/>
      <label id="done"/>
    </scenario>"#;
    let inj = Injection::parse("SEQUENTIAL\nalice;one\nbob;two\n").unwrap();
    let t0 = Instant::now();
    let mut a = uac_with(parse(xml).unwrap(), Some(inj), Duration::ZERO, t0);
    a.start_call(t0, 0);
    a.start_call(t0, 0);
    let sent = drain(&mut a);
    assert!(text(&sent[0].1).starts_with("OPTIONS sip:alice@127.0.0.1:5060 SIP/2.0\r\n"));
    assert!(text(&sent[1].1).contains("From: <sip:two@h>;tag=2\r\n"), "{}", text(&sent[1].1));
    assert!(text(&sent[0].1).contains("CSeq: 1 OPTIONS\r\n"));
    assert!(text(&sent[0].1).contains("Content-Length: 0\r\n\r\n"));
    // Answer the first; the second times out (recv timeout 1 s, before
    // Timer F) and goes to "gone": both succeed.
    let m = Message::parse(&sent[0].1).unwrap();
    let ok = sigkit_sip::proxy::build_response(&m, 200, "OK", Some("t"), &[]).unwrap();
    a.on_message(t0, addr(UAS), &ok);
    while let Some(t) = a.poll_timeout() {
        a.handle_timeout(t);
        drain(&mut a);
    }
    assert_eq!((a.recorder.total.successful, a.recorder.total.failed), (2, 0));
    assert_eq!(a.recorder.total.rtd_us[0].len(), 1, "rtd x of the timed-out call");
    assert!(a.recorder.total.rtd_us[0].max() >= 10_000);
}

#[test]
fn register_answers_the_digest_challenge_of_the_registrar() {
    let t0 = Instant::now();
    let mut a = uac_with(built_in("register").unwrap(), None, Duration::ZERO, t0);
    let mut b = uas_with(built_in("registrar").unwrap(), t0);
    for _ in 0..3 {
        a.start_call(t0, 0);
    }
    exchange(&mut a, &mut b, t0, t0 + Duration::from_secs(5));
    assert_eq!((a.recorder.total.successful, a.recorder.total.failed), (3, 0), "{:?}", a.recorder.total.failures);
    assert_eq!((b.recorder.total.successful, b.recorder.total.failed), (3, 0), "{:?}", b.recorder.total.failures);
    assert_eq!(a.recorder.total.rtd_us[0].len(), 3);
    // A client with the wrong password is refused by the registrar.
    let config = EngineConfig {
        local: addr(UAC),
        remote: Some(addr(UAS)),
        auth_password: "wrong".into(),
        ..EngineConfig::default()
    };
    let mut c = Engine::new(Arc::new(built_in("register").unwrap()), config, None, t0);
    let mut b = uas_with(built_in("registrar").unwrap(), t0);
    c.start_call(t0, 0);
    exchange(&mut c, &mut b, t0, t0 + Duration::from_secs(1));
    assert_eq!(b.recorder.total.failures.get("auth_failed"), Some(&1));
}

#[test]
fn every_corpus_flow_replays_between_its_two_sides_with_fresh_identifiers() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let mut flows: Vec<_> =
        std::fs::read_dir(&corpus).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    flows.sort();
    assert!(flows.len() >= 8);
    for dir in flows {
        let (ue, pcscf) = crate::corpus::flow_scenarios(&dir).unwrap();
        let n = ue.steps.len() as u64;
        let t0 = Instant::now();
        let mut a = uac_with(ue, None, Duration::ZERO, t0);
        let mut b = uas_with(pcscf, t0);
        a.start_call(t0, 0);
        a.start_call(t0, 0);
        // The first messages of the two calls differ in Call-ID, tag and branch.
        let first = drain(&mut a);
        let ids: Vec<Message> = first.iter().map(|(_, m)| Message::parse(m).unwrap()).collect();
        assert_ne!(ids[0].call_id().unwrap(), ids[1].call_id().unwrap());
        assert_ne!(ids[0].from().unwrap().tag(), ids[1].from().unwrap().tag());
        assert_ne!(ids[0].top_via().unwrap().branch(), ids[1].top_via().unwrap().branch());
        for (_, m) in &first {
            b.on_message(t0, addr(UAC), m);
        }
        exchange(&mut a, &mut b, t0, t0 + Duration::from_secs(60));
        let (x, y) = (&a.recorder.total, &b.recorder.total);
        assert_eq!(
            (x.successful, x.failed, y.successful, y.failed),
            (2, 0, 2, 0),
            "{}: {:?} {:?}",
            dir.display(),
            x.failures,
            y.failures
        );
        assert_eq!(x.messages_sent + y.messages_sent, 2 * n, "{}: every message once, none again", dir.display());
    }
}

#[test]
fn each_client_transaction_is_timed_per_method_on_the_virtual_clock() {
    let t0 = Instant::now();
    let at = |us: u64| t0 + Duration::from_micros(us);
    // SIPp's uac, its INVITE sent again after 1 ms.
    let xml = crate::scenario::UAC_XML.replacen("<send retrans=\"500\">", "<send retrans=\"1\">", 1);
    let mut a = uac_with(parse(&xml).unwrap(), None, Duration::ZERO, t0);
    let mut b = uas(t0);
    assert_eq!(a.recorder.methods, ["INVITE", "BYE"], "ACK is no transaction");
    a.start_call(t0, 0);
    let invite = drain(&mut a).pop().unwrap().1;
    // Timer A sends the INVITE again; the clock runs from the first.
    a.handle_timeout(at(1000));
    assert_eq!(drain(&mut a).len(), 1);
    b.on_message(at(1000), addr(UAC), &invite);
    let answers = drain(&mut b);
    let (ringing, ok) = (&answers[0].1, &answers[1].1);
    assert!(ringing.starts_with(b"SIP/2.0 180") && ok.starts_with(b"SIP/2.0 200"));
    a.on_message(at(1800), addr(UAS), ringing);
    a.on_message(at(2000), addr(UAS), ok);
    // Hold 0: the ACK and the BYE at once. The 200 again times nothing.
    let sent = drain(&mut a);
    a.on_message(at(2100), addr(UAS), ok);
    drain(&mut a);
    for (_, m) in &sent {
        b.on_message(at(2300), addr(UAC), m);
    }
    let bye_ok = drain(&mut b).pop().unwrap().1;
    assert!(bye_ok.starts_with(b"SIP/2.0 200"));
    a.on_message(at(2750), addr(UAS), &bye_ok);
    assert_eq!(a.recorder.total.successful, 1);
    let times = crate::metrics::transaction_map(&a.recorder.methods, &a.recorder.total);
    let invite = times["INVITE"];
    assert_eq!((invite.provisional_ms.count, invite.provisional_ms.max), (1, 1.8));
    assert_eq!((invite.final_ms.count, invite.final_ms.p50, invite.final_ms.max), (1, 2.0, 2.0));
    let bye = times["BYE"];
    assert_eq!((bye.final_ms.count, bye.final_ms.max, bye.provisional_ms.count), (1, 0.75, 0));
    // The interval and the step saw the same.
    assert_eq!(crate::metrics::transaction_map(&a.recorder.methods, &a.recorder.interval), times);
    assert_eq!(crate::metrics::transaction_map(&a.recorder.methods, &a.recorder.steps[0]), times);
    // The UAS sends no request: nothing to time.
    assert!(crate::metrics::transaction_map(&b.recorder.methods, &b.recorder.total).is_empty());
}

#[test]
fn only_the_responses_of_the_transaction_time_it() {
    let t0 = Instant::now();
    let respond = |invite: &[u8], branch: Option<&str>, method: &str| {
        let m = Message::parse(invite).unwrap();
        let own = m.top_via().unwrap().branch().unwrap().to_string();
        format!(
            "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 127.0.0.1:{UAC};branch={}\r\nFrom: <sip:a@h>;tag=1\r\n\
             To: <sip:b@h>;tag=2\r\nCall-ID: {}\r\nCSeq: 1 {method}\r\nContact: <sip:b@127.0.0.1:{UAS}>\r\n\
             Content-Length: 0\r\n\r\n",
            branch.unwrap_or(&own),
            m.call_id().unwrap()
        )
        .into_bytes()
    };
    let finals = |e: &Engine| e.recorder.total.txn_final_us[0].len();
    // Another branch (RFC 3261 §17.1.3), or the branch with another CSeq
    // method: not the INVITE's transaction.
    for (branch, method) in [(Some("z9hG4bK-other"), "INVITE"), (None, "OPTIONS")] {
        let mut a = uac(t0);
        a.start_call(t0, 0);
        let invite = drain(&mut a).pop().unwrap().1;
        a.on_message(t0 + Duration::from_millis(1), addr(UAS), &respond(&invite, branch, method));
        assert_eq!(finals(&a), 0, "{branch:?} {method}");
    }
    let mut a = uac(t0);
    a.start_call(t0, 0);
    let invite = drain(&mut a).pop().unwrap().1;
    a.on_message(t0 + Duration::from_millis(1), addr(UAS), &respond(&invite, None, "INVITE"));
    assert_eq!(finals(&a), 1, "the INVITE's own 200");
}

#[test]
fn two_runs_in_one_process_never_share_a_call_id_or_branch() {
    // A stateful proxy matches transactions by branch (RFC 3261 §17.2.3):
    // the calls of a second run (a capacity search's next step) must not
    // look like retransmissions of the first run's.
    let t0 = Instant::now();
    let (mut first, mut second) = (uac(t0), uac(t0));
    first.start_call(t0, 0);
    second.start_call(t0, 0);
    let a = Message::parse(&drain(&mut first).pop().unwrap().1).unwrap().call_id().unwrap().to_string();
    let invite = drain(&mut second).pop().unwrap().1;
    let b = Message::parse(&invite).unwrap();
    assert_ne!(a, b.call_id().unwrap());
    let mut again = uac(t0);
    again.start_call(t0, 0);
    let c =
        Message::parse(&drain(&mut again).pop().unwrap().1).unwrap().top_via().unwrap().branch().unwrap().to_string();
    assert_ne!(b.top_via().unwrap().branch().unwrap(), c);
}

#[test]
fn a_bye_sent_again_after_the_call_ended_is_answered_until_timer_j() {
    // The UAS's 200 to the BYE is lost: the BYE comes again after the
    // call, and its timewait, are over. RFC 3261 §17.2.2 keeps the server
    // transaction for 64·T1, answering with the same 200; after that the
    // request is out of any call.
    let t0 = Instant::now();
    let mut a = uac_with(built_in("uac").unwrap(), None, Duration::from_millis(100), t0);
    let mut b = uas(t0);
    a.start_call(t0, 0);
    let (mut bye, mut ok) = (None, None);
    let mut now = t0;
    loop {
        let mut moved = false;
        for (_, m) in drain(&mut a) {
            if m.starts_with(b"BYE ") {
                bye = Some(m.clone());
            }
            b.on_message(now, addr(UAC), &m);
            moved = true;
        }
        for (_, m) in drain(&mut b) {
            if text(&m).contains("CSeq: 2 BYE") || (text(&m).starts_with("SIP/2.0 200") && text(&m).contains(" BYE")) {
                ok = Some(m.clone());
            }
            a.on_message(now, addr(UAS), &m);
            moved = true;
        }
        if moved {
            continue;
        }
        let Some(next) = [a.poll_timeout(), b.poll_timeout()].into_iter().flatten().min() else { break };
        if next > t0 + Duration::from_secs(10) {
            break;
        }
        now = next.max(now);
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
    let (bye, ok) = (bye.expect("the UAC sent a BYE"), ok.expect("the UAS answered it"));
    let later = t0 + Duration::from_secs(10);
    b.handle_timeout(later);
    assert_eq!((b.recorder.total.successful, b.active(), b.live()), (1, 0, 0), "the call and its timewait are over");
    let out_of_call = b.recorder.total.out_of_call;
    b.on_message(later, addr(UAC), &bye);
    let again = drain(&mut b);
    assert_eq!(again.len(), 1, "the BYE is answered again");
    assert_eq!(again[0].1, ok, "with the same 200");
    // The same BYE as a new transaction: the UAC sent it again through
    // another proxy, which gave it a Via and branch of its own. The same
    // 200 answers it, with that request's Vias (RFC 3261 §8.2.6.2).
    let other = "Via: SIP/2.0/UDP 192.0.2.9:5070;branch=z9hG4bK-other\r\n";
    let relayed = text(&bye).replacen("Via: ", &format!("{other}Via: "), 1);
    assert_ne!(relayed, text(&bye));
    b.on_message(later, addr(UAC), relayed.as_bytes());
    let answer = drain(&mut b);
    assert_eq!(answer.len(), 1, "the relayed BYE is answered");
    let parsed = Message::parse(&answer[0].1).unwrap();
    assert_eq!(parsed.top_via().unwrap().branch(), Some("z9hG4bK-other"));
    assert_eq!(text(&answer[0].1).replacen(other, "", 1), text(&ok), "the same 200 under the new Via");
    assert_eq!(b.recorder.total.out_of_call, out_of_call);
    // Past 64·T1 (32 s) after the call ended, nothing answers it.
    let much_later = t0 + Duration::from_secs(60);
    b.handle_timeout(much_later);
    b.on_message(much_later, addr(UAC), &bye);
    assert!(drain(&mut b).is_empty());
    assert_eq!(b.recorder.total.out_of_call, out_of_call + 1);
}

/// The counts of each step of the scenario, as SIPp's scenario screen
/// shows them: messages per send and recv, calls per pause, and the peak
/// of calls in progress.
#[test]
fn each_step_counts_its_messages_and_pauses() {
    let t0 = Instant::now();
    let mut a = uac_with(built_in("uac").unwrap(), None, Duration::from_millis(100), t0);
    let mut b = uas(t0);
    for i in 0..5 {
        a.start_call(t0 + Duration::from_millis(i), 0);
    }
    exchange(&mut a, &mut b, t0, t0 + Duration::from_secs(10));
    let count = |e: &Engine| -> Vec<u64> {
        e.recorder.scenario_steps.iter().map(|m| m.sent + m.recv + m.sessions).collect::<Vec<_>>()
    };
    // INVITE, 100, 180, 183, 200, ACK, pause, BYE, 200.
    assert_eq!(count(&a), [5, 0, 5, 0, 5, 5, 5, 5, 5]);
    // INVITE, 180, 200, ACK, BYE, 200, timewait.
    assert_eq!(count(&b), [5, 5, 5, 5, 5, 5, 5]);
    assert!(a.recorder.scenario_steps.iter().all(|m| m.sent_retrans + m.timeouts + m.unexpected == 0));
    assert_eq!(a.peak().0, 5, "five calls were in progress at once");
    assert!(a.peak().1 >= t0 && a.peak().1 <= t0 + Duration::from_millis(4));
}

/// A request sent again counts at its step as a retransmission, and when
/// Timer B fires as a timeout there.
#[test]
fn retransmissions_and_timeouts_count_at_the_step_that_sent() {
    let t0 = Instant::now();
    let mut a = uac(t0);
    a.start_call(t0, 0);
    drain(&mut a);
    let mut now = t0;
    while let Some(t) = a.poll_timeout() {
        now = t;
        a.handle_timeout(now);
        drain(&mut a);
    }
    let invite = a.recorder.scenario_steps[0];
    assert_eq!((invite.sent, invite.sent_retrans, invite.timeouts), (1, 6, 1), "Timer A six times, then B");
    assert_eq!(a.recorder.total.retransmissions, 6);
    assert!(now >= t0 + Duration::from_secs(32));
}

/// An INFO for the call while the UAC holds (in its pause): unexpected,
/// counted at the pause, the call failed; with `-aa` answered with a 200
/// OK of the same transaction, the call going on to succeed. An OPTIONS
/// for no call: out of call, or with `-aa` answered.
#[test]
fn auto_answer_turns_an_unexpected_info_into_a_200_ok() {
    for aa in [false, true] {
        let t0 = Instant::now();
        let config = EngineConfig {
            local: addr(UAC),
            remote: Some(addr(UAS)),
            hold: Duration::from_millis(500),
            auto_answer: aa,
            ..EngineConfig::default()
        };
        let mut a = Engine::new(Arc::new(built_in("uac").unwrap()), config, None, t0);
        let mut b = uas(t0);
        a.start_call(t0, 0);
        let now = exchange(&mut a, &mut b, t0, t0 + Duration::from_millis(100));
        assert_eq!(a.calls.iter().filter(|c| c.live).map(|c| c.index).collect::<Vec<_>>(), [6], "in the pause");
        let call_id = text(&a.calls.iter().find(|c| c.live).unwrap().call_id);
        let info = format!(
            "INFO sip:x@127.0.0.1:5061 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bK-info\r\n\
             From: <sip:service@127.0.0.1:5060>;tag=b\r\nTo: <sip:x@127.0.0.1:5061>;tag=a\r\n\
             Call-ID: {call_id}\r\nCSeq: 7 INFO\r\nContent-Length: 0\r\n\r\n"
        );
        // An OPTIONS for no call: answered with -aa (as SIPp 3.6 does), else out of call.
        let stranger = info.replace(&call_id, "stranger").replace("INFO", "OPTIONS");
        a.on_message(now, addr(UAS), stranger.as_bytes());
        let answered = drain(&mut a);
        assert_eq!(answered.len(), usize::from(aa));
        assert_eq!((a.recorder.sipp.auto_answered, a.recorder.total.out_of_call), (u64::from(aa), u64::from(!aa)));
        if let Some((_, ok)) = answered.first() {
            let ok = Message::parse(ok).unwrap();
            assert_eq!((ok.status_code(), ok.call_id().unwrap()), (Some(200), "stranger"));
        }
        a.on_message(now, addr(UAS), info.as_bytes());
        let sent = drain(&mut a);
        let pause = a.recorder.scenario_steps[6];
        if aa {
            assert_eq!(sent.len(), 1);
            let (to, ok) = &sent[0];
            let ok = Message::parse(ok).unwrap();
            assert_eq!((*to, ok.status_code()), (addr(UAS), Some(200)));
            assert_eq!(ok.call_id().unwrap(), call_id);
            let cseq = ok.cseq().unwrap();
            assert_eq!((cseq.number, cseq.method), (7, "INFO"));
            assert_eq!(ok.top_via().unwrap().branch(), Some("z9hG4bK-info"));
            assert_eq!((a.recorder.sipp.auto_answered, pause.unexpected, a.recorder.total.unexpected), (2, 0, 0));
            exchange(&mut a, &mut b, now, now + Duration::from_secs(10));
            assert_eq!((a.recorder.total.successful, a.recorder.total.failed), (1, 0));
        } else {
            assert!(sent.is_empty(), "no answer without -aa");
            assert_eq!((a.recorder.sipp.auto_answered, pause.unexpected, a.recorder.total.unexpected), (0, 1, 1));
            assert_eq!(a.recorder.total.failures.get("unexpected_message"), Some(&1));
        }
    }
    // -aa answers those four methods only.
    for (m, yes) in [("INFO", true), ("notify", true), ("OPTIONS", true), ("UPDATE", true), ("MESSAGE", false)] {
        let req = format!("{m} sip:x SIP/2.0\r\nCall-ID: c\r\nCSeq: 1 {m}\r\n\r\n");
        assert_eq!(auto_answer::answers(&Message::parse(req.as_bytes()).unwrap()), yes, "{m}");
    }
}
