//! Stateful mode's transactions (RFC 3261 §16.6 step 9, §17): a server
//! transaction per request from a terminal, paired with a client
//! transaction toward the upstream, keyed by the proxy's branch; what a
//! retransmission, a response, a CANCEL (§16.10) or a timer (Timer C,
//! §16.8's 408) does to them. What goes out is returned to the proxy,
//! which sends it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sigkit_sip::proxy::build_response;
use sigkit_sip::transaction::{ack_for, cancel_for, ClientTransaction, Reliability, ServerTransaction, State, Timers};
use sigkit_sip::Message;

use super::peer::{App, Encoding, Peer};
use crate::config::SipTransport;

/// Timer C of a stateful proxy's INVITE transaction (RFC 3261 §16.6 step
/// 11: greater than 3 minutes).
const TIMER_C: Duration = Duration::from_secs(181);

/// A transaction of the stateful mode: the server transaction toward the
/// terminal and the client transaction toward the upstream (RFC 3261
/// §16.6 step 9), keyed by the proxy's branch, which is the same for a
/// retransmission of the request.
pub(super) struct Transaction {
    /// The CSeq method.
    method: String,
    server: ServerTransaction,
    client: ClientTransaction,
    /// The request as forwarded: sent again on Timer A or E, and the base
    /// of the ACK of a non-2xx final response.
    forwarded: Vec<u8>,
    /// The request as the terminal sent it (decompressed): the base of a
    /// 408 of the proxy's own.
    received: Vec<u8>,
    /// Where responses go: the terminal's flow and compartment, and how
    /// they are encoded.
    to: Peer,
    app: App,
    encoding: Encoding,
    /// The last response sent to the terminal (plain SIP): sent again
    /// when the terminal retransmits the request, or on Timer G.
    last_response: Option<Vec<u8>>,
    /// Timer C (§16.6 step 11): an INVITE answered only provisionally is
    /// given up after it.
    timer_c: Instant,
    /// The CANCEL of this INVITE toward the upstream, once the terminal
    /// cancelled it (§16.10).
    cancel: Option<Cancel>,
}

/// The proxy's own CANCEL of an INVITE it forwarded (RFC 3261 §16.10).
struct Cancel {
    /// The CANCEL (§9.1: built from the INVITE as forwarded, so it carries
    /// the proxy's branch).
    request: Vec<u8>,
    /// Its client transaction, started once the INVITE's has a provisional
    /// response: §9.1 forbids a CANCEL before one.
    client: Option<ClientTransaction>,
}

/// A response to send a terminal again.
pub(super) struct Reply {
    pub(super) to: Peer,
    pub(super) app: App,
    pub(super) encoding: Encoding,
    pub(super) bytes: Vec<u8>,
}

/// What a request from a terminal is to the transactions held.
pub(super) enum Absorbed {
    /// Nothing held: it goes on.
    No,
    /// The ACK of a non-2xx final response to INVITE, which ends at the
    /// proxy (§16.7: the proxy's client transaction acknowledged the
    /// upstream itself).
    Ack,
    /// A retransmission of the request (§17.2.1, §17.2.2), answered with
    /// the last response sent, if one is due again.
    Retransmission(Option<Reply>),
}

/// What a response from the upstream does in its transaction.
#[derive(Debug, Default)]
pub(super) struct InTransaction {
    /// It goes on to the terminal.
    pub(super) forward: bool,
    /// It ends here as a retransmission, or answers the proxy's CANCEL.
    pub(super) absorbed: bool,
    /// The ACK of a non-2xx final response to INVITE, for the upstream
    /// (§17.1.1.3).
    pub(super) ack: Option<Vec<u8>>,
    /// The CANCEL waiting for this provisional response may go now (§9.1).
    pub(super) cancel_now: bool,
}

/// Whether a terminal's CANCEL cancels the INVITE transaction upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cancelling {
    /// No: none held, cancelled already, or answered finally (§9.1: a
    /// CANCEL after the final response has no effect).
    Nothing,
    /// Yes, once the INVITE has a provisional response (§9.1).
    Deferred,
    /// Yes, now.
    Now,
}

/// What a transaction's timers did.
pub(super) struct Fired {
    pub(super) to: Peer,
    pub(super) app: App,
    pub(super) encoding: Encoding,
    /// Requests for the upstream, in order: the request again (Timer A or
    /// E), its CANCEL again, Timer C's CANCEL.
    pub(super) upstream: Vec<Vec<u8>>,
    /// How many of them are retransmissions.
    pub(super) retransmissions: u64,
    /// The upstream never answered (§16.8: a 408 is due).
    pub(super) unanswered: bool,
    /// Responses for the terminal, in order: the 408, the last response
    /// again (Timer G).
    pub(super) terminal: Vec<Vec<u8>>,
}

impl Transaction {
    /// The transactions of `msg` from a terminal at `from`, forwarded as
    /// `forwarded`; and for an INVITE the 100 Trying to send at once (RFC
    /// 3261 §16.2: a stateful proxy that will not answer within 200 ms;
    /// §17.2.1, so the terminal stops retransmitting).
    pub(super) fn start(
        now: Instant,
        msg: &Message<'_>,
        from: Peer,
        app: App,
        encoding: Encoding,
        forwarded: &[u8],
        upstream_timers: Timers,
    ) -> (Transaction, Option<Vec<u8>>) {
        let method = msg.method().unwrap_or("").to_string();
        let invite = method == "INVITE";
        let reliability = match from.transport {
            SipTransport::Udp => Reliability::Unreliable,
            SipTransport::Tcp => Reliability::Reliable,
        };
        let mut server = ServerTransaction::new(invite, reliability, Timers::default());
        let client = ClientTransaction::new(invite, Reliability::Unreliable, upstream_timers, now);
        let trying = if invite { build_response(msg, 100, "Trying", None, &[]).ok() } else { None };
        if trying.is_some() {
            server.send_response(now, 100);
        }
        let t = Transaction {
            method,
            server,
            client,
            forwarded: forwarded.to_vec(),
            received: msg.input().to_vec(),
            to: from,
            app,
            encoding,
            last_response: trying.clone(),
            timer_c: now + TIMER_C,
            cancel: None,
        };
        (t, trying)
    }

    pub(super) fn app(&self) -> &App {
        &self.app
    }

    fn next_timeout(&self) -> Instant {
        let cancel = self.cancel.as_ref().and_then(|c| c.client.as_ref()).and_then(ClientTransaction::poll_timeout);
        [self.client.poll_timeout(), self.server.poll_timeout(), cancel]
            .into_iter()
            .flatten()
            .fold(self.timer_c, Instant::min)
    }

    /// Fires the timers due at `now` (RFC 3261 §17.1.1.2, §17.1.2.2,
    /// §17.2.1, §17.2.2): the request again to the upstream, the last
    /// response again to the terminal, 408 when the upstream never
    /// answered (§16.8: Timer B or F is a 408 from the client transaction;
    /// §16.7 step 6 then forwards it, the only response there is).
    /// `to_tag` gives the proxy's To tag for a response to a request. True
    /// in the second place when the transaction is over.
    fn handle_timeout(&mut self, now: Instant, to_tag: &dyn Fn(&Message<'_>) -> String) -> (Fired, bool) {
        let mut fired = Fired {
            to: self.to,
            app: self.app.clone(),
            encoding: self.encoding,
            upstream: Vec::new(),
            retransmissions: 0,
            unanswered: false,
            terminal: Vec::new(),
        };
        let c = self.client.handle_timeout(now);
        if c.retransmit {
            fired.retransmissions += 1;
            fired.upstream.push(self.forwarded.clone());
        }
        if let Some(cancel) = self.cancel.as_mut() {
            if cancel.client.as_mut().is_some_and(|c| c.handle_timeout(now).retransmit) {
                fired.retransmissions += 1;
                fired.upstream.push(cancel.request.clone());
            }
        }
        let unanswered = self.server.last_code().is_none_or(|c| c < 200);
        let timer_c = now >= self.timer_c;
        // §16.8: Timer C on an INVITE with a provisional response cancels
        // it upstream (once: the transaction ends here).
        if timer_c && self.client.state() == State::Proceeding && self.cancel.is_none() {
            if let Ok(cancel) = Message::parse(&self.forwarded).and_then(|invite| cancel_for(&invite)) {
                fired.upstream.push(cancel);
            }
        }
        if (c.timed_out || timer_c) && unanswered {
            fired.unanswered = true;
            let reply = Message::parse(&self.received)
                .ok()
                .and_then(|m| build_response(&m, 408, "Request Timeout", Some(&to_tag(&m)), &[]).ok());
            if let Some(reply) = reply.filter(|_| self.server.send_response(now, 408)) {
                self.last_response = Some(reply.clone());
                fired.terminal.push(reply);
            }
        }
        if self.server.handle_timeout(now).retransmit {
            if let Some(r) = self.last_response.clone() {
                fired.terminal.push(r);
            }
        }
        let over = timer_c || (self.client.is_terminated() && self.server.is_terminated());
        // A server transaction still in Trying or Proceeding whose client
        // transaction has ended without a final response: the 408 above
        // moved it on; one that cannot move is dropped.
        let stuck = self.client.is_terminated() && matches!(self.server.state(), State::Trying | State::Proceeding);
        (fired, over || stuck)
    }
}

/// The stateful mode's transactions, by the proxy's branch.
pub(super) struct Transactions {
    /// Transaction stateful toward the upstream (`stateful`).
    stateful: bool,
    table: HashMap<String, Transaction>,
    /// No transaction timer is due before this.
    due: Option<Instant>,
}

impl Transactions {
    pub(super) fn new(stateful: bool) -> Transactions {
        Transactions { stateful, table: HashMap::new(), due: None }
    }

    pub(super) fn is_stateful(&self) -> bool {
        self.stateful
    }

    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// When the timers next have work.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.due
    }

    /// Makes the timers run no later than `at`.
    fn due_at(&mut self, at: Instant) {
        self.due = Some(self.due.map_or(at, |d| d.min(at)));
    }

    pub(super) fn insert(&mut self, branch: String, t: Transaction) {
        self.due_at(t.next_timeout());
        self.table.insert(branch, t);
    }

    /// Whether `branch` is an INVITE transaction held.
    pub(super) fn holds_invite(&self, branch: &str) -> bool {
        self.table.get(branch).is_some_and(|t| t.method == "INVITE")
    }

    /// `response` went to the terminal in transaction `branch`: it is sent
    /// again when the terminal retransmits the request.
    pub(super) fn remember_response(&mut self, branch: &str, response: &[u8]) {
        if let Some(t) = self.table.get_mut(branch) {
            t.last_response = Some(response.to_vec());
        }
    }

    /// Whether a `method` request from a terminal, of transaction
    /// `branch`, belongs to a transaction held and ends there (RFC 3261
    /// §17.2.3). A CANCEL never does.
    pub(super) fn absorb(&mut self, now: Instant, branch: &str, method: &str) -> Absorbed {
        if method == "CANCEL" {
            return Absorbed::No;
        }
        let Some(t) = self.table.get_mut(branch) else { return Absorbed::No };
        let resend = if method == "ACK" {
            // The ACK of a 2xx is a request of its own (another branch,
            // §17.1.1.3), so only a non-2xx one should find the INVITE
            // here; one that reuses the INVITE's branch anyway goes on.
            if t.method != "INVITE" || !matches!(t.server.state(), State::Completed | State::Confirmed) {
                return Absorbed::No;
            }
            t.server.on_request(now, true);
            false
        } else if t.method == method {
            t.server.on_request(now, false).retransmit
        } else {
            return Absorbed::No;
        };
        let at = t.next_timeout();
        let again = resend.then(|| t.last_response.clone()).flatten();
        let reply = again.map(|bytes| Reply { to: t.to, app: t.app.clone(), encoding: t.encoding, bytes });
        self.due_at(at);
        if method == "ACK" {
            Absorbed::Ack
        } else {
            Absorbed::Retransmission(reply)
        }
    }

    /// A terminal's CANCEL of transaction `branch`: its CANCEL toward the
    /// upstream is made, to go now or at the INVITE's first provisional
    /// response.
    pub(super) fn cancel(&mut self, branch: &str) -> Cancelling {
        let Some(t) = self.table.get_mut(branch) else { return Cancelling::Nothing };
        if t.cancel.is_some() || t.server.last_code().is_some_and(|c| c >= 200) {
            return Cancelling::Nothing;
        }
        let Ok(request) = Message::parse(&t.forwarded).and_then(|invite| cancel_for(&invite)) else {
            return Cancelling::Nothing;
        };
        t.cancel = Some(Cancel { request, client: None });
        if t.client.state() == State::Proceeding {
            Cancelling::Now
        } else {
            Cancelling::Deferred
        }
    }

    /// Starts the CANCEL of transaction `branch` in a non-INVITE client
    /// transaction of its own (§9.1), with `timers` (the INVITE's T1);
    /// the CANCEL to send, unless there is none or it went already.
    pub(super) fn start_cancel(&mut self, now: Instant, branch: &str, timers: Timers) -> Option<Vec<u8>> {
        let c = self.table.get_mut(branch).and_then(|t| t.cancel.as_mut())?;
        if c.client.is_some() {
            return None;
        }
        let client = ClientTransaction::new(false, Reliability::Unreliable, timers, now);
        let at = client.poll_timeout();
        c.client = Some(client);
        let request = c.request.clone();
        if let Some(at) = at {
            self.due_at(at);
        }
        Some(request)
    }

    /// What response `msg` (status `code`) from the upstream does to
    /// transaction `branch`. It ends there when it is a retransmission of
    /// a final response (acknowledged again if it is a non-2xx one to
    /// INVITE), a 100 Trying (RFC 3261 §16.7 step 3: not forwarded), or
    /// the answer to the proxy's CANCEL; else it goes on to the terminal.
    pub(super) fn on_response(&mut self, now: Instant, branch: &str, msg: &Message<'_>, code: u16) -> InTransaction {
        let goes_on = InTransaction { forward: true, ..InTransaction::default() };
        let Some(t) = self.table.get_mut(branch) else { return goes_on };
        if msg.cseq().is_ok_and(|c| c.method == "CANCEL") {
            // A response to the proxy's own CANCEL ends at its client
            // transaction: the terminal had the proxy's 200 (§16.10).
            let Some(client) = t.cancel.as_mut().and_then(|c| c.client.as_mut()) else { return goes_on };
            client.on_response(now, code);
            let at = t.next_timeout();
            self.due_at(at);
            return InTransaction { absorbed: true, ..InTransaction::default() };
        }
        if !msg.cseq().is_ok_and(|c| c.method == t.method) {
            return goes_on;
        }
        let o = t.client.on_response(now, code);
        // §9.1: a CANCEL waiting for the INVITE's first provisional response.
        let cancel_now = (100..200).contains(&code) && t.cancel.as_ref().is_some_and(|c| c.client.is_none());
        let ack =
            if o.send_ack { Message::parse(&t.forwarded).ok().and_then(|req| ack_for(&req, msg).ok()) } else { None };
        // §16.7 step 10: every 2xx to INVITE is forwarded (the UAS
        // retransmits it end to end); anything else goes once, through
        // the server transaction.
        let two_xx_invite = t.method == "INVITE" && (200..300).contains(&code);
        let forward = o.deliver && code > 100 && (t.server.send_response(now, code) || two_xx_invite);
        let at = t.next_timeout();
        self.due_at(at);
        InTransaction { forward, absorbed: !o.deliver, ack, cancel_now }
    }

    /// Fires the timers due at `now` ([`Transaction::handle_timeout`]),
    /// and drops the transactions that ended.
    pub(super) fn handle_timeout(&mut self, now: Instant, to_tag: &dyn Fn(&Message<'_>) -> String) -> Vec<Fired> {
        if self.due.is_none_or(|d| now < d) {
            return Vec::new();
        }
        let due: Vec<String> =
            self.table.iter().filter(|(_, t)| t.next_timeout() <= now).map(|(b, _)| b.clone()).collect();
        let mut fired = Vec::with_capacity(due.len());
        for branch in due {
            let Some(mut t) = self.table.remove(&branch) else { continue };
            let (f, over) = t.handle_timeout(now, to_tag);
            if !over {
                self.table.insert(branch, t);
            }
            fired.push(f);
        }
        self.due = self.table.values().map(Transaction::next_timeout).min();
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compartments::{ProxyName, Terminal};

    fn request(method: &str) -> Vec<u8> {
        format!(
            "{method} sip:bob@10.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.9:5080;branch=z9hG4bK1\r\n\
             Max-Forwards: 70\r\nFrom: <sip:a@x>;tag=1\r\nTo: <sip:bob@x>\r\nCall-ID: c\r\nCSeq: 1 {method}\r\n\
             Content-Length: 0\r\n\r\n"
        )
        .into_bytes()
    }

    /// A held transaction of `method` from a UDP terminal, as branch "b".
    fn held(now: Instant, method: &str) -> (Transactions, Option<Vec<u8>>) {
        let bytes = request(method);
        let msg = Message::parse(&bytes).unwrap();
        let from =
            Peer { transport: SipTransport::Udp, addr: "10.0.0.9:5080".parse().unwrap(), local: None, conn: None };
        let app = App { token: 1, terminal: Terminal::Flow(1), name: ProxyName::ours("urn:x") };
        let (t, trying) = Transaction::start(now, &msg, from, app, Encoding::SigComp, &bytes, Timers::default());
        let mut ts = Transactions::new(true);
        ts.insert("b".into(), t);
        (ts, trying)
    }

    fn response(code: u16, reason: &str, method: &str) -> Vec<u8> {
        build_response(&Message::parse(&request(method)).unwrap(), code, reason, Some("up"), &[]).unwrap()
    }

    /// An INVITE is answered 100 Trying at once; its retransmission gets
    /// the Trying again, another method's request with the branch is not
    /// the transaction's, and a CANCEL never ends here.
    #[test]
    fn retransmissions_are_answered_with_the_last_response() {
        let now = Instant::now();
        let (mut ts, trying) = held(now, "INVITE");
        let trying = trying.expect("100 Trying");
        assert!(trying.starts_with(b"SIP/2.0 100 Trying"));
        assert!(ts.holds_invite("b") && ts.next_due().is_some());
        match ts.absorb(now, "b", "INVITE") {
            Absorbed::Retransmission(Some(r)) => assert_eq!(r.bytes, trying),
            _ => panic!("a retransmission answered"),
        }
        assert!(matches!(ts.absorb(now, "b", "OPTIONS"), Absorbed::No));
        assert!(matches!(ts.absorb(now, "b", "CANCEL"), Absorbed::No));
        assert!(matches!(ts.absorb(now, "other", "INVITE"), Absorbed::No));
        // Not answered finally: an ACK with the INVITE's branch goes on.
        assert!(matches!(ts.absorb(now, "b", "ACK"), Absorbed::No));
    }

    /// RFC 3261 §16.7: a 100 is not forwarded, a final response once; the
    /// upstream's retransmission of a non-2xx final response ends here,
    /// acknowledged again, and then the terminal's ACK ends here too.
    #[test]
    fn final_responses_go_once_and_are_acknowledged() {
        let now = Instant::now();
        let (mut ts, _) = held(now, "INVITE");
        let on = |ts: &mut Transactions, code, reason| {
            let bytes = response(code, reason, "INVITE");
            ts.on_response(now, "b", &Message::parse(&bytes).unwrap(), code)
        };
        let trying = on(&mut ts, 100, "Trying");
        assert!(!trying.forward && trying.ack.is_none());
        assert!(on(&mut ts, 180, "Ringing").forward);
        let busy = on(&mut ts, 486, "Busy Here");
        assert!(busy.forward && !busy.absorbed);
        assert!(busy.ack.as_ref().is_some_and(|a| a.starts_with(b"ACK ")), "{busy:?}");
        let again = on(&mut ts, 486, "Busy Here");
        assert!(!again.forward && again.absorbed && again.ack.is_some(), "{again:?}");
        assert!(matches!(ts.absorb(now, "b", "ACK"), Absorbed::Ack));
        // A response of a transaction not held goes on as it is.
        let other = response(200, "OK", "OPTIONS");
        assert!(ts.on_response(now, "none", &Message::parse(&other).unwrap(), 200).forward);
    }

    /// §9.1: a CANCEL waits for the INVITE's provisional response; one
    /// after the final response has no effect.
    #[test]
    fn a_cancel_waits_for_a_provisional_response() {
        let now = Instant::now();
        let (mut ts, _) = held(now, "INVITE");
        assert_eq!(ts.cancel("b"), Cancelling::Deferred);
        assert_eq!(ts.cancel("b"), Cancelling::Nothing, "cancelled already");
        let ringing = response(180, "Ringing", "INVITE");
        let r = ts.on_response(now, "b", &Message::parse(&ringing).unwrap(), 180);
        assert!(r.forward && r.cancel_now);
        let cancel = ts.start_cancel(now, "b", Timers::default()).expect("the CANCEL");
        assert!(cancel.starts_with(b"CANCEL "));
        assert!(ts.start_cancel(now, "b", Timers::default()).is_none(), "sent once");
        let ok = response(200, "OK", "CANCEL");
        let r = ts.on_response(now, "b", &Message::parse(&ok).unwrap(), 200);
        assert!(!r.forward && r.absorbed);
        let (mut answered, _) = held(now, "INVITE");
        let busy = response(486, "Busy Here", "INVITE");
        answered.on_response(now, "b", &Message::parse(&busy).unwrap(), 486);
        assert_eq!(answered.cancel("b"), Cancelling::Nothing);
    }

    /// Over UDP the request goes again on Timer E, and an upstream that
    /// never answers gets the terminal a 408 (§16.8) with the proxy's tag.
    #[test]
    fn timers_retransmit_and_time_out_with_a_408() {
        let now = Instant::now();
        let (mut ts, trying) = held(now, "OPTIONS");
        assert!(trying.is_none());
        let tag = |_: &Message<'_>| "tagged".to_string();
        assert!(ts.handle_timeout(now, &tag).is_empty());
        let at = ts.next_due().unwrap();
        let fired = ts.handle_timeout(at, &tag);
        assert_eq!(fired.len(), 1);
        assert_eq!((fired[0].retransmissions, fired[0].upstream.len()), (1, 1));
        assert_eq!(fired[0].upstream[0], request("OPTIONS"));
        assert!(!fired[0].unanswered && fired[0].terminal.is_empty());
        let fired = ts.handle_timeout(now + Duration::from_secs(33), &tag);
        assert!(fired[0].unanswered);
        let timeout = String::from_utf8(fired[0].terminal[0].clone()).unwrap();
        assert!(timeout.starts_with("SIP/2.0 408") && timeout.contains("tag=tagged"), "{timeout}");
    }
}
