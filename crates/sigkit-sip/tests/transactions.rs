//! RFC 3261 §17 transaction timelines, driven by a simulated clock.

use std::time::{Duration, Instant};

use sigkit_sip::transaction::{
    ack_for, cancel_for, ClientTransaction, Outcome, Reliability, ServerTransaction, State, Timers, TransactionKey,
};
use sigkit_sip::Message;

const UDP: Reliability = Reliability::Unreliable;
const TCP: Reliability = Reliability::Reliable;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs the client's timers until it ends; the offsets (from `t0`) of its
/// retransmissions, and of its timeout if it timed out.
fn run_client(t: &mut ClientTransaction, t0: Instant) -> (Vec<Duration>, Option<Duration>) {
    let (mut sent, mut timeout) = (Vec::new(), None);
    while let Some(at) = t.poll_timeout() {
        let out = t.handle_timeout(at);
        if out.retransmit {
            sent.push(at - t0);
        }
        if out.timed_out {
            timeout = Some(at - t0);
        }
        assert!(at - t0 < Duration::from_secs(100), "the transaction ends");
    }
    (sent, timeout)
}

#[test]
fn a_non_invite_request_over_udp_goes_out_eleven_times_then_times_out_at_64_t1() {
    let t0 = Instant::now();
    let mut t = ClientTransaction::new(false, UDP, Timers::default(), t0);
    let (sent, timeout) = run_client(&mut t, t0);
    // Timer E: T1, doubling up to T2 (§17.1.2.2).
    let expected: Vec<Duration> = [500, 1500, 3500, 7500, 11500, 15500, 19500, 23500, 27500, 31500].map(ms).to_vec();
    assert_eq!(sent, expected);
    assert_eq!(t.transmissions(), 11);
    assert_eq!(timeout, Some(ms(32_000)));
    assert!(t.is_terminated());
}

#[test]
fn a_provisional_response_sets_timer_e_to_t2() {
    let t0 = Instant::now();
    let mut t = ClientTransaction::new(false, UDP, Timers::default(), t0);
    assert_eq!(t.handle_timeout(t0 + ms(500)), Outcome { retransmit: true, ..Outcome::default() });
    assert!(t.on_response(t0 + ms(600), 100).deliver);
    assert_eq!(t.state(), State::Proceeding);
    // The retransmission already scheduled (at 1.5 s) stands; after it the
    // interval is T2.
    assert!(t.handle_timeout(t0 + ms(1500)).retransmit);
    assert_eq!(t.poll_timeout(), Some(t0 + ms(5500)));
    let done = t.on_response(t0 + ms(2000), 200);
    assert!(done.deliver && !done.send_ack);
    assert_eq!(t.state(), State::Completed);
    // A retransmitted final response is absorbed (Timer K, T4).
    assert_eq!(t.on_response(t0 + ms(2100), 200), Outcome::default());
    assert_eq!(t.poll_timeout(), Some(t0 + ms(7000)));
    t.handle_timeout(t0 + ms(7000));
    assert!(t.is_terminated());
}

#[test]
fn an_invite_over_udp_doubles_timer_a_without_bound_and_times_out_with_timer_b() {
    let t0 = Instant::now();
    let mut t = ClientTransaction::new(true, UDP, Timers::default(), t0);
    let (sent, timeout) = run_client(&mut t, t0);
    assert_eq!(sent, [500, 1500, 3500, 7500, 15500, 31500].map(ms).to_vec());
    assert_eq!(timeout, Some(ms(32_000)));
}

#[test]
fn an_invite_answered_with_an_error_is_acknowledged_and_lingers_in_completed() {
    let t0 = Instant::now();
    let mut t = ClientTransaction::new(true, UDP, Timers::default(), t0);
    assert!(t.on_response(t0 + ms(100), 180).deliver);
    assert_eq!(t.handle_timeout(t0 + ms(40_000)), Outcome::default(), "no Timer B in Proceeding");
    let out = t.on_response(t0 + ms(200), 486);
    assert!(out.deliver && out.send_ack);
    assert_eq!(t.on_response(t0 + ms(700), 486), Outcome { send_ack: true, ..Outcome::default() });
    assert_eq!(t.poll_timeout(), Some(t0 + ms(32_200)), "Timer D");
    t.handle_timeout(t0 + ms(32_200));
    assert!(t.is_terminated());
}

#[test]
fn an_invite_answered_2xx_passes_retransmitted_2xx_up_until_timer_m() {
    let t0 = Instant::now();
    let mut t = ClientTransaction::new(true, UDP, Timers::default(), t0);
    assert!(t.on_response(t0 + ms(100), 200).deliver);
    assert_eq!(t.state(), State::Accepted);
    assert!(t.on_response(t0 + ms(600), 200).deliver, "RFC 6026: the TU acknowledges each 2xx");
    assert_eq!(t.poll_timeout(), Some(t0 + ms(32_100)));
    t.handle_timeout(t0 + ms(32_100));
    assert!(t.is_terminated());
}

#[test]
fn over_tcp_nothing_is_retransmitted_and_completion_ends_at_once() {
    let t0 = Instant::now();
    let mut t = ClientTransaction::new(false, TCP, Timers::default(), t0);
    assert_eq!(t.poll_timeout(), Some(t0 + ms(32_000)), "only Timer F");
    assert!(t.on_response(t0 + ms(10), 200).deliver);
    assert!(t.is_terminated(), "Timer K is zero over TCP");
    let mut t = ClientTransaction::new(false, TCP, Timers::default(), t0);
    let (sent, timeout) = run_client(&mut t, t0);
    assert!(sent.is_empty());
    assert_eq!(timeout, Some(ms(32_000)));
}

#[test]
fn a_raised_t1_stretches_retransmissions_and_the_timeout() {
    let t0 = Instant::now();
    let long = Timers { t1: ms(1000), ..Timers::default() };
    let mut t = ClientTransaction::new(false, UDP, long, t0);
    let (sent, timeout) = run_client(&mut t, t0);
    assert_eq!(&sent[..4], &[ms(1000), ms(3000), ms(7000), ms(11_000)]);
    assert_eq!(timeout, Some(ms(64_000)));
    assert_eq!(t.transmissions() as usize, sent.len() + 1);
}

#[test]
fn a_non_invite_server_answers_retransmissions_with_its_last_response_until_timer_j() {
    let t0 = Instant::now();
    let mut s = ServerTransaction::new(false, UDP, Timers::default());
    assert_eq!(s.on_request(t0, false), Outcome::default(), "nothing to resend in Trying");
    assert!(s.send_response(t0 + ms(10), 200));
    assert_eq!(s.state(), State::Completed);
    assert!(s.on_request(t0 + ms(500), false).retransmit);
    assert!(!s.send_response(t0 + ms(600), 500), "no second final response");
    assert_eq!(s.last_code(), Some(200));
    assert_eq!(s.poll_timeout(), Some(t0 + ms(32_010)));
    s.handle_timeout(t0 + ms(32_010));
    assert!(s.is_terminated());
}

#[test]
fn an_invite_server_retransmits_its_error_until_the_ack_then_waits_t4() {
    let t0 = Instant::now();
    let mut s = ServerTransaction::new(true, UDP, Timers::default());
    assert!(s.send_response(t0, 100));
    assert!(s.on_request(t0 + ms(50), false).retransmit, "the 100 again");
    assert!(s.send_response(t0 + ms(100), 486));
    let mut resent = Vec::new();
    while let Some(at) = s.poll_timeout() {
        if at > t0 + ms(10_000) {
            break;
        }
        assert!(s.handle_timeout(at).retransmit);
        resent.push(at - t0);
    }
    // Timer G: T1 doubling up to T2 (§17.2.1).
    assert_eq!(resent, [600, 1600, 3600, 7600].map(ms).to_vec());
    s.on_request(t0 + ms(8000), true);
    assert_eq!(s.state(), State::Confirmed);
    assert_eq!(s.poll_timeout(), Some(t0 + ms(13_000)), "Timer I = T4");
    s.handle_timeout(t0 + ms(13_000));
    assert!(s.is_terminated());
}

#[test]
fn an_invite_server_without_an_ack_times_out_with_timer_h() {
    let t0 = Instant::now();
    let mut s = ServerTransaction::new(true, UDP, Timers::default());
    s.send_response(t0, 503);
    let mut timed_out = None;
    while let Some(at) = s.poll_timeout() {
        if s.handle_timeout(at).timed_out {
            timed_out = Some(at - t0);
        }
    }
    assert_eq!(timed_out, Some(ms(32_000)));
    let mut s = ServerTransaction::new(true, UDP, Timers::default());
    s.send_response(t0, 200);
    assert_eq!(s.state(), State::Accepted);
    assert_eq!(s.on_request(t0 + ms(500), false), Outcome::default(), "the TU resends its 2xx");
}

const INVITE: &[u8] = b"INVITE sip:bob@example.com SIP/2.0\r\n\
Via: SIP/2.0/UDP pc33.example.com:5060;branch=z9hG4bK776asdhds\r\n\
Max-Forwards: 70\r\n\
Route: <sip:p1.example.com;lr>\r\n\
Route: <sip:p2.example.com;lr>\r\n\
To: Bob <sip:bob@example.com>\r\n\
From: Alice <sip:alice@example.com>;tag=1928301774\r\n\
Call-ID: a84b4c76e66710@pc33.example.com\r\n\
CSeq: 314159 INVITE\r\n\
Content-Length: 0\r\n\r\n";

const BUSY: &[u8] = b"SIP/2.0 486 Busy Here\r\n\
Via: SIP/2.0/UDP PC33.example.com:5060;branch=z9hG4bK776asdhds\r\n\
To: Bob <sip:bob@example.com>;tag=a6c85cf\r\n\
From: Alice <sip:alice@example.com>;tag=1928301774\r\n\
Call-ID: a84b4c76e66710@pc33.example.com\r\n\
CSeq: 314159 INVITE\r\n\
Content-Length: 0\r\n\r\n";

#[test]
fn a_request_its_response_and_its_ack_share_a_key() {
    let invite = Message::parse(INVITE).unwrap();
    let busy = Message::parse(BUSY).unwrap();
    let key = TransactionKey::of(&invite).unwrap();
    assert_eq!(TransactionKey::of(&busy), Some(key.clone()), "sent-by compares without case");
    let ack_bytes = ack_for(&invite, &busy).unwrap();
    let ack = Message::parse(&ack_bytes).unwrap();
    assert_eq!(TransactionKey::of(&ack), Some(key.clone()));
    assert_eq!(ack.method(), Some("ACK"));
    assert_eq!(ack.request_uri().unwrap().text, "sip:bob@example.com");
    assert_eq!(ack.to().unwrap().tag(), Some("a6c85cf"));
    assert_eq!(ack.cseq().unwrap().number, 314159);
    assert_eq!(ack.cseq().unwrap().method, "ACK");
    assert_eq!(ack.routes().unwrap().len(), 2);
    let other = String::from_utf8(INVITE.to_vec()).unwrap().replace("z9hG4bK776asdhds", "z9hG4bK776other");
    assert_ne!(TransactionKey::of(&Message::parse(other.as_bytes()).unwrap()), Some(key));
    let old = String::from_utf8(INVITE.to_vec()).unwrap().replace("z9hG4bK776asdhds", "776asdhds");
    assert_eq!(TransactionKey::of(&Message::parse(old.as_bytes()).unwrap()), None, "RFC 2543 branch");
}

#[test]
fn a_cancel_names_the_invites_branch_uri_routes_and_cseq_number() {
    let invite = Message::parse(INVITE).unwrap();
    let cancel_bytes = cancel_for(&invite).unwrap();
    let cancel = Message::parse(&cancel_bytes).unwrap();
    // RFC 3261 §9.1: the same Request-URI, Call-ID, To, From, CSeq number
    // and top Via (so branch) as the INVITE, and the same Route set.
    assert_eq!(cancel.method(), Some("CANCEL"));
    assert_eq!(cancel.request_uri().unwrap().text, invite.request_uri().unwrap().text);
    assert_eq!(cancel.top_via().unwrap().branch(), invite.top_via().unwrap().branch());
    assert_eq!(cancel.vias().count(), 1);
    assert_eq!(cancel.call_id(), invite.call_id());
    assert_eq!(cancel.to().unwrap().tag(), None);
    assert_eq!(cancel.from().unwrap().tag(), Some("1928301774"));
    assert_eq!(cancel.cseq().unwrap().number, 314159);
    assert_eq!(cancel.cseq().unwrap().method, "CANCEL");
    assert_eq!(cancel.routes().unwrap().len(), 2);
    assert!(cancel.body().is_empty());
    // A CANCEL is a transaction of its own (§17.2.3: the method is part
    // of the key, ACK aside).
    assert_ne!(TransactionKey::of(&cancel), TransactionKey::of(&invite));
}
