//! Seed 004's simple call (INVITE, 100/180, 200, ACK, hold, BYE, 200) as
//! sans-IO user agents: [`Uac`] places calls, [`Uas`] answers them. Both
//! take datagrams and the time in and give datagrams and deadlines out;
//! retransmission and timeouts follow RFC 3261 §17 (the transactions of
//! `sigkit_sip::transaction`) and §13.3.1.4 (the UAS's 2xx until ACK).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sigkit_sip::transaction::{ClientTransaction, Reliability, Timers};
use sigkit_sip::{HeaderName, Message};

use crate::metrics::{Failure, Recorder};

/// Where the calls go and how they look.
#[derive(Debug, Clone)]
pub struct CallConfig {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// Where requests are sent when not to `remote` itself: an outbound
    /// proxy (SIPp's `-rsa`); `remote` stays in the Request-URI.
    pub next_hop: Option<SocketAddr>,
    /// The user part of the Request-URI (SIPp's `-s`).
    pub service: String,
    /// How long an answered call is held before BYE (SIPp's `-d`).
    pub hold: Duration,
    pub timers: Timers,
    /// A call not over after this long fails (SIPp's `-timeout` per call
    /// is global; this is per call, 0 for none beyond the transactions').
    pub call_timeout: Option<Duration>,
}

/// A datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    pub to: SocketAddr,
    pub bytes: Vec<u8>,
}

#[derive(Debug)]
enum Phase {
    /// INVITE sent; provisional or not.
    Inviting { tx: ClientTransaction, ringing: bool },
    /// Answered; BYE at `bye_at`.
    Holding { bye_at: Instant },
    /// BYE sent.
    Closing { tx: ClientTransaction },
}

#[derive(Debug)]
struct UacCall {
    phase: Phase,
    started: Instant,
    /// The INVITE (sent again on Timer A), then the BYE (Timer E).
    request: Vec<u8>,
    /// The callee's To tag, from the 2xx.
    remote_tag: String,
    /// The dialog's remote target (the 2xx's Contact) and route set (its
    /// Record-Route, reversed: RFC 3261 §12.1.2), for ACK and BYE.
    target: String,
    routes: String,
}

/// The calling side.
#[derive(Debug)]
pub struct Uac {
    config: CallConfig,
    calls: HashMap<u64, UacCall>,
    timers: BinaryHeap<Reverse<(Instant, u64)>>,
    next_call: u64,
    tag: String,
    out: Vec<Datagram>,
    pub recorder: Recorder,
}

fn local_host(a: SocketAddr) -> String {
    match a {
        SocketAddr::V4(v) => format!("{}:{}", v.ip(), v.port()),
        SocketAddr::V6(v) => format!("[{}]:{}", v.ip(), v.port()),
    }
}

const SDP: &str = "v=0\r\no=user1 53655765 2353687637 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\
m=audio 6000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n";

impl Uac {
    pub fn new(config: CallConfig, recorder: Recorder) -> Uac {
        let tag = format!("{}", std::process::id());
        Uac { config, calls: HashMap::new(), timers: BinaryHeap::new(), next_call: 1, tag, out: Vec::new(), recorder }
    }

    /// Calls in progress.
    pub fn active(&self) -> usize {
        self.calls.len()
    }

    /// Datagrams to send now.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Datagram> {
        self.out.drain(..)
    }

    fn request(&self, id: u64, method: &str, cseq: u32, branch: u64, to_tag: &str, body: &str) -> Vec<u8> {
        self.in_dialog(id, method, cseq, branch, to_tag, body, None)
    }

    #[allow(clippy::too_many_arguments)]
    fn in_dialog(
        &self,
        id: u64,
        method: &str,
        cseq: u32,
        branch: u64,
        to_tag: &str,
        body: &str,
        dialog: Option<(&str, &str)>,
    ) -> Vec<u8> {
        let local = local_host(self.config.local);
        let remote = local_host(self.config.remote);
        let service = &self.config.service;
        let mut s = String::with_capacity(600);
        match dialog {
            Some((target, _)) if !target.is_empty() => {
                let _ = write!(s, "{method} {target} SIP/2.0\r\n");
            }
            _ => {
                let _ = write!(s, "{method} sip:{service}@{remote} SIP/2.0\r\n");
            }
        }
        if let Some((_, routes)) = dialog {
            s.push_str(routes);
        }
        let _ = write!(
            s,
            "Via: SIP/2.0/UDP {local};branch=z9hG4bK-{tag}-{id}-{branch}\r\n\
             From: sigkit <sip:sigkit@{local}>;tag={tag}-{id}\r\nTo: {service} <sip:{service}@{remote}>{to_tag}\r\n\
             Call-ID: {id}-{tag}@{local}\r\nCSeq: {cseq} {method}\r\nContact: <sip:sigkit@{local}>\r\n\
             Max-Forwards: 70\r\nSubject: Performance Test\r\n",
            tag = self.tag,
        );
        if body.is_empty() {
            s.push_str("Content-Length: 0\r\n\r\n");
        } else {
            let _ = write!(s, "Content-Type: application/sdp\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        }
        s.into_bytes()
    }

    fn send(&mut self, bytes: Vec<u8>) {
        self.recorder.message_sent(false);
        self.out.push(Datagram { to: self.next_hop(), bytes });
    }

    fn next_hop(&self) -> SocketAddr {
        self.config.next_hop.unwrap_or(self.config.remote)
    }

    fn schedule(&mut self, at: Option<Instant>, id: u64) {
        if let Some(at) = at {
            self.timers.push(Reverse((at, id)));
        }
    }

    /// Places a new call now.
    pub fn start_call(&mut self, now: Instant) {
        let id = self.next_call;
        self.next_call += 1;
        let invite = self.request(id, "INVITE", 1, 1, "", SDP);
        let tx = ClientTransaction::new(true, Reliability::Unreliable, self.config.timers, now);
        self.schedule(tx.poll_timeout(), id);
        if let Some(limit) = self.config.call_timeout {
            self.schedule(Some(now + limit), id);
        }
        self.recorder.call_attempted();
        self.send(invite.clone());
        self.calls.insert(
            id,
            UacCall {
                phase: Phase::Inviting { tx, ringing: false },
                started: now,
                request: invite,
                remote_tag: String::new(),
                target: String::new(),
                routes: String::new(),
            },
        );
    }

    fn fail(&mut self, id: u64, cause: Failure) {
        if self.calls.remove(&id).is_some() {
            self.recorder.call_failed(cause);
        }
    }

    /// A datagram from the network.
    pub fn on_datagram(&mut self, now: Instant, bytes: &[u8]) {
        self.recorder.message_received();
        let Ok(msg) = Message::parse(bytes) else {
            self.recorder.unexpected();
            return;
        };
        let Some(id) = msg.call_id().ok().and_then(|c| c.split('-').next()).and_then(|n| n.parse::<u64>().ok()) else {
            self.recorder.unexpected();
            return;
        };
        let (Some(code), Ok(cseq)) = (msg.status_code(), msg.cseq()) else {
            self.recorder.unexpected();
            return;
        };
        let Some(call) = self.calls.get_mut(&id) else {
            // A response to a finished call: a late retransmission, or a
            // late 1xx after the 2xx (RFC 3261 §13.2.2.4: ignored).
            self.recorder.late();
            return;
        };
        match (&mut call.phase, cseq.method) {
            (Phase::Inviting { tx, ringing }, "INVITE") => {
                let outcome = tx.on_response(now, code);
                if !outcome.deliver {
                    return;
                }
                if code < 200 {
                    if code >= 180 && !*ringing {
                        *ringing = true;
                        self.recorder.ringing(now - call.started);
                    }
                    let at = tx.poll_timeout();
                    self.schedule(at, id);
                } else if code < 300 {
                    let setup = now - call.started;
                    call.remote_tag = msg.to().ok().and_then(|t| t.tag()).unwrap_or("").to_string();
                    call.target = match msg.contacts() {
                        Ok(sigkit_sip::Contacts::List(list)) => {
                            list.first().and_then(|c| c.sip_uri().ok()).map(|u| u.text.to_string()).unwrap_or_default()
                        }
                        _ => String::new(),
                    };
                    call.routes = msg
                        .record_routes()
                        .map(|rr| rr.iter().rev().map(|r| format!("Route: {}\r\n", r.text)).collect())
                        .unwrap_or_default();
                    let to_tag = format!(";tag={}", call.remote_tag);
                    let bye_at = now + self.config.hold;
                    call.phase = Phase::Holding { bye_at };
                    self.recorder.answered(setup);
                    let dialog = (call.target.clone(), call.routes.clone());
                    let dialog = Some((dialog.0.as_str(), dialog.1.as_str()));
                    let ack = self.in_dialog(id, "ACK", 1, 2, &to_tag, "", dialog);
                    let bye = self.in_dialog(id, "BYE", 2, 3, &to_tag, "", dialog);
                    if let Some(call) = self.calls.get_mut(&id) {
                        call.request = bye;
                    }
                    self.send(ack);
                    self.schedule(Some(bye_at), id);
                } else {
                    // The transaction acknowledges the error (§17.1.1.3).
                    if let Ok(ack) = invite_ack(&call.request, &msg) {
                        self.send(ack);
                    }
                    self.fail(id, Failure::Refused(code));
                }
            }
            (Phase::Holding { .. } | Phase::Closing { .. }, "INVITE") if (200..300).contains(&code) => {
                // A retransmitted 2xx: the ACK went missing (§13.2.2.4).
                let to_tag = format!(";tag={}", call.remote_tag);
                let dialog = (call.target.clone(), call.routes.clone());
                let ack = self.in_dialog(id, "ACK", 1, 2, &to_tag, "", Some((&dialog.0, &dialog.1)));
                self.recorder.retransmission();
                self.send(ack);
            }
            (Phase::Closing { tx }, "BYE") => {
                if tx.on_response(now, code).deliver && code >= 200 {
                    self.calls.remove(&id);
                    if (200..300).contains(&code) {
                        self.recorder.call_succeeded(now);
                    } else {
                        self.recorder.call_failed(Failure::ByeRefused(code));
                    }
                }
            }
            _ => self.recorder.late(),
        }
    }

    /// When [`Uac::handle_timeout`] is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((at, _))| *at)
    }

    /// Runs what is due at `now`: retransmissions, timeouts, BYEs.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&Reverse((at, id))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let Some(call) = self.calls.get_mut(&id) else { continue };
            if self.config.call_timeout.is_some_and(|limit| now >= call.started + limit) {
                self.fail(id, Failure::CallTimeout);
                continue;
            }
            match &mut call.phase {
                Phase::Inviting { tx, .. } | Phase::Closing { tx } => {
                    if tx.poll_timeout().is_none_or(|t| t > now) {
                        continue; // a stale heap entry
                    }
                    let outcome = tx.handle_timeout(now);
                    let next = tx.poll_timeout();
                    let inviting = matches!(call.phase, Phase::Inviting { .. });
                    if outcome.timed_out {
                        self.fail(id, if inviting { Failure::InviteTimeout } else { Failure::ByeTimeout });
                    } else if outcome.retransmit {
                        let bytes = call.request.clone();
                        self.recorder.retransmission();
                        self.recorder.message_sent(true);
                        let to = self.next_hop();
                        self.out.push(Datagram { to, bytes });
                        self.schedule(next, id);
                    } else {
                        self.schedule(next, id);
                    }
                }
                Phase::Holding { bye_at } => {
                    if *bye_at > now {
                        continue;
                    }
                    let tx = ClientTransaction::new(false, Reliability::Unreliable, self.config.timers, now);
                    let next = tx.poll_timeout();
                    call.phase = Phase::Closing { tx };
                    let bye = call.request.clone();
                    self.send(bye);
                    self.schedule(next, id);
                }
            }
        }
    }
}

/// The ACK of a non-2xx final response to the INVITE in `invite_bytes`.
fn invite_ack(invite_bytes: &[u8], response: &Message<'_>) -> Result<Vec<u8>, sigkit_sip::ParseError> {
    let invite = Message::parse(invite_bytes)?;
    sigkit_sip::transaction::ack_for(&invite, response)
}

#[derive(Debug)]
struct UasCall {
    /// The last response sent (sent again on a retransmitted request).
    last: Vec<u8>,
    to: SocketAddr,
    /// 2xx retransmission (§13.3.1.4): next time, interval, give-up time.
    retransmit_at: Option<Instant>,
    interval: Duration,
    give_up_at: Instant,
    acked: bool,
}

/// The answering side: 180 and 200 to each INVITE, 200 to its BYE, as
/// SIPp's built-in `uas` does.
#[derive(Debug)]
pub struct Uas {
    timers_config: Timers,
    calls: HashMap<String, UasCall>,
    timers: BinaryHeap<Reverse<(Instant, String)>>,
    out: Vec<Datagram>,
    local: SocketAddr,
    pub recorder: Recorder,
}

impl Uas {
    pub fn new(local: SocketAddr, timers: Timers, recorder: Recorder) -> Uas {
        Uas {
            timers_config: timers,
            calls: HashMap::new(),
            timers: BinaryHeap::new(),
            out: Vec::new(),
            local,
            recorder,
        }
    }

    pub fn drain(&mut self) -> std::vec::Drain<'_, Datagram> {
        self.out.drain(..)
    }

    pub fn active(&self) -> usize {
        self.calls.len()
    }

    fn response(&self, msg: &Message<'_>, code: u16, reason: &str, tag: &str, contact: bool) -> Vec<u8> {
        let mut extra: Vec<(&str, &str)> = Vec::new();
        let contact_value = format!("<sip:sigkit@{}>", local_host(self.local));
        if contact {
            extra.push(("Contact", &contact_value));
        }
        let has_tag = msg.to().ok().and_then(|t| t.tag()).is_some();
        sigkit_sip::proxy::build_response(msg, code, reason, (!has_tag).then_some(tag), &extra).unwrap_or_default()
    }

    pub fn on_datagram(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) {
        self.recorder.message_received();
        let Ok(msg) = Message::parse(bytes) else {
            self.recorder.unexpected();
            return;
        };
        let (Some(method), Ok(call_id)) = (msg.method(), msg.call_id()) else {
            self.recorder.unexpected();
            return;
        };
        // The response goes where the request came from (RFC 3581 style),
        // as SIPp's UAS does.
        let tag = format!("sk{:x}", fxhash(call_id));
        match method {
            "INVITE" => {
                if let Some(call) = self.calls.get(call_id) {
                    let bytes = call.last.clone();
                    self.recorder.retransmission();
                    self.recorder.message_sent(true);
                    self.out.push(Datagram { to: from, bytes });
                    return;
                }
                let ringing = self.response(&msg, 180, "Ringing", &tag, true);
                let ok = self.response(&msg, 200, "OK", &tag, true);
                if ringing.is_empty() || ok.is_empty() {
                    // Not answerable (no Via, From, To or CSeq).
                    self.recorder.unexpected();
                    return;
                }
                self.recorder.call_attempted();
                self.recorder.message_sent(false);
                self.out.push(Datagram { to: from, bytes: ringing });
                self.recorder.message_sent(false);
                self.out.push(Datagram { to: from, bytes: ok.clone() });
                let t1 = self.timers_config.t1;
                self.timers.push(Reverse((now + t1, call_id.to_string())));
                self.calls.insert(
                    call_id.to_string(),
                    UasCall {
                        last: ok,
                        to: from,
                        retransmit_at: Some(now + t1),
                        interval: t1,
                        give_up_at: now + self.timers_config.timeout(),
                        acked: false,
                    },
                );
            }
            "ACK" => {
                if let Some(call) = self.calls.get_mut(call_id) {
                    call.acked = true;
                    call.retransmit_at = None;
                }
            }
            "BYE" => {
                let ok = self.response(&msg, 200, "OK", &tag, false);
                self.recorder.message_sent(false);
                self.out.push(Datagram { to: from, bytes: ok });
                if self.calls.remove(call_id).is_some() {
                    self.recorder.call_succeeded(now);
                }
            }
            _ => {
                let reply = self.response(&msg, 405, "Method Not Allowed", &tag, false);
                self.recorder.unexpected();
                self.out.push(Datagram { to: from, bytes: reply });
            }
        }
        let _ = msg.header(HeaderName::Via);
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((at, _))| *at)
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(Reverse((at, _))) = self.timers.peek() {
            if *at > now {
                break;
            }
            let Some(Reverse((_, id))) = self.timers.pop() else { break };
            let Some(call) = self.calls.get_mut(&id) else { continue };
            if call.acked {
                continue;
            }
            if now >= call.give_up_at {
                // §13.3.1.4: no ACK within 64·T1 ends the dialog.
                self.calls.remove(&id);
                self.recorder.call_failed(Failure::AckTimeout);
                continue;
            }
            if call.retransmit_at.is_some_and(|t| t <= now) {
                call.interval = (call.interval * 2).min(self.timers_config.t2);
                let next = (now + call.interval).min(call.give_up_at);
                call.retransmit_at = Some(next);
                let d = Datagram { to: call.to, bytes: call.last.clone() };
                self.timers.push(Reverse((next, id)));
                self.recorder.retransmission();
                self.recorder.message_sent(true);
                self.out.push(d);
            }
        }
    }
}

/// A short, stable hash for To tags (FNV-1a).
fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    fn uac() -> Uac {
        let config = CallConfig {
            local: addr(5061),
            remote: addr(5060),
            next_hop: None,
            service: "service".into(),
            hold: Duration::ZERO,
            timers: Timers::default(),
            call_timeout: None,
        };
        Uac::new(config, Recorder::default())
    }

    /// Runs every timer of the UAC until none is left (or `until`).
    fn run_out(u: &mut Uac, until: Instant) -> Vec<Datagram> {
        let mut sent = Vec::new();
        while let Some(at) = u.poll_timeout().filter(|t| *t <= until) {
            u.handle_timeout(at);
            sent.extend(u.drain());
        }
        sent
    }

    #[test]
    fn a_silent_peer_gets_the_invite_seven_times_then_the_call_fails_on_timer_b() {
        let t0 = Instant::now();
        let mut u = uac();
        u.start_call(t0);
        let first = u.drain().count();
        let again = run_out(&mut u, t0 + Duration::from_secs(100));
        assert_eq!(first + again.len(), 7, "Timer A: 0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s");
        assert_eq!(u.recorder.failures.get(&Failure::InviteTimeout), Some(&1));
        assert_eq!(u.active(), 0);
    }

    #[test]
    fn a_uas_answers_and_a_uac_completes_with_a_late_ringing_ignored() {
        let t0 = Instant::now();
        let mut u = uac();
        let mut s = Uas::new(addr(5060), Timers::default(), Recorder::default());
        u.start_call(t0);
        let invite = u.drain().next().unwrap();
        s.on_datagram(t0, addr(5061), &invite.bytes);
        let answers: Vec<Datagram> = s.drain().collect();
        assert_eq!(answers.len(), 2, "180 and 200");
        // The 200 overtakes the 180 (a proxy with several workers): the
        // late 180 is ignored (RFC 3261 §13.2.2.4), not a failure.
        u.on_datagram(t0 + Duration::from_millis(1), &answers[1].bytes);
        u.on_datagram(t0 + Duration::from_millis(2), &answers[0].bytes);
        let to_uas: Vec<Datagram> = u.drain().collect();
        assert_eq!(to_uas.len(), 1, "the ACK");
        // Without the ACK the UAS sends its 200 again at T1.
        s.handle_timeout(t0 + Duration::from_millis(500));
        assert_eq!(s.drain().count(), 1);
        s.on_datagram(t0 + Duration::from_millis(600), addr(5061), &to_uas[0].bytes);
        s.handle_timeout(t0 + Duration::from_millis(1500));
        assert_eq!(s.drain().count(), 0, "acknowledged: no more 200s");
        // Hold 0: the BYE goes at the next timer.
        let bye = run_out(&mut u, t0 + Duration::from_millis(10));
        assert!(bye.iter().any(|d| d.bytes.starts_with(b"BYE ")));
        s.on_datagram(t0 + Duration::from_millis(20), addr(5061), &bye.last().unwrap().bytes);
        let ok = s.drain().next().unwrap();
        u.on_datagram(t0 + Duration::from_millis(21), &ok.bytes);
        assert_eq!((u.recorder.successful, u.recorder.failed), (1, 0));
        assert_eq!((s.recorder.successful, s.recorder.failed), (1, 0));
        assert_eq!(u.recorder.answer_us.len(), 1);
        assert_eq!(u.active() + s.active(), 0);
    }

    #[test]
    fn an_error_to_the_invite_is_acknowledged_and_counted_by_its_code() {
        let t0 = Instant::now();
        let mut u = uac();
        u.start_call(t0);
        let invite = u.drain().next().unwrap();
        let msg = Message::parse(&invite.bytes).unwrap();
        let busy = sigkit_sip::proxy::build_response(&msg, 486, "Busy Here", Some("b"), &[]).unwrap();
        u.on_datagram(t0, &busy);
        let ack: Vec<Datagram> = u.drain().collect();
        assert!(ack.len() == 1 && ack[0].bytes.starts_with(b"ACK "));
        assert_eq!(u.recorder.failures.get(&Failure::Refused(486)), Some(&1));
    }

    #[test]
    fn garbage_is_counted_never_a_panic() {
        let t0 = Instant::now();
        let mut u = uac();
        let mut s = Uas::new(addr(5060), Timers::default(), Recorder::default());
        for junk in [&b""[..], b"\xff\xfe", b"SIP/2.0 200 OK\r\n\r\n", b"INVITE x SIP/2.0\r\nCall-ID: 1\r\n\r\n"] {
            u.on_datagram(t0, junk);
            s.on_datagram(t0, addr(1), junk);
        }
        assert!(u.recorder.unexpected >= 3);
        assert_eq!(u.recorder.failed + s.recorder.failed, 0);
    }
}
