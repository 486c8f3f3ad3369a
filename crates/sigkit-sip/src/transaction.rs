//! RFC 3261 §17 transactions as sans-IO state machines: the four kinds
//! (INVITE and non-INVITE, client and server), with RFC 6026's Accepted
//! state for 2xx responses to INVITE. The owner hands in messages and the
//! time, asks [`ClientTransaction::poll_timeout`] (or the server's) when to
//! call back, and acts on the [`Outcome`] each call returns: send again,
//! pass up, acknowledge, or report a timeout. The transaction never holds
//! a message's bytes; the owner keeps what it would send again.

use std::time::{Duration, Instant};

use crate::message::{HeaderName, Message};
use crate::ParseError;

/// The timer values of RFC 3261 §17.1.1.1 and Table 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timers {
    /// Round-trip estimate; the first retransmission interval.
    pub t1: Duration,
    /// Longest retransmission interval of non-INVITE requests and INVITE
    /// responses.
    pub t2: Duration,
    /// Longest time a message stays in the network.
    pub t4: Duration,
}

impl Default for Timers {
    fn default() -> Self {
        Timers { t1: Duration::from_millis(500), t2: Duration::from_secs(4), t4: Duration::from_secs(5) }
    }
}

impl Timers {
    /// 64·T1: Timers B, F, H, J (and RFC 6026's L and M).
    pub fn timeout(&self) -> Duration {
        self.t1 * 64
    }
}

/// Whether the transport retransmits by itself (TCP) or not (UDP): only
/// over an unreliable one do transactions retransmit and linger (§17.1.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    /// UDP: the transaction retransmits.
    Unreliable,
    /// TCP (or SCTP, TLS): the transport does.
    Reliable,
}

/// A transaction's state (§17.1.1.2 Figure 5, §17.1.2.2 Figure 6, §17.2.1
/// Figure 7, §17.2.2 Figure 8; Accepted from RFC 6026 §7.1-7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Client INVITE: sent, nothing heard.
    Calling,
    /// Non-INVITE: sent (client) or received (server), nothing answered.
    Trying,
    /// A provisional response came (client) or went (server).
    Proceeding,
    /// A final response came or went; retransmissions are absorbed.
    Completed,
    /// Server INVITE: the ACK of its non-2xx final response came.
    Confirmed,
    /// INVITE answered 2xx (RFC 6026): the TU owns the 2xx and its ACK.
    Accepted,
    /// Over; the owner drops the transaction.
    Terminated,
}

/// What the owner must do after a call into a transaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Send the request (client) or the last response (server) again.
    pub retransmit: bool,
    /// Pass the response up to the transaction user (client).
    pub deliver: bool,
    /// Send an ACK for the non-2xx final response just received (client
    /// INVITE, §17.1.1.3); [`ack_for`] builds it.
    pub send_ack: bool,
    /// Timer B, F or H fired: the transaction failed (§8.1.3.1 treats it
    /// as a 408 from the client's view).
    pub timed_out: bool,
}

impl Outcome {
    fn retransmit() -> Outcome {
        Outcome { retransmit: true, ..Outcome::default() }
    }
    fn deliver() -> Outcome {
        Outcome { deliver: true, ..Outcome::default() }
    }
    fn timed_out() -> Outcome {
        Outcome { timed_out: true, ..Outcome::default() }
    }
}

/// A client transaction (§17.1): it sent a request and waits for its
/// final response.
#[derive(Debug, Clone)]
pub struct ClientTransaction {
    invite: bool,
    reliability: Reliability,
    timers: Timers,
    state: State,
    /// Timers A or E (retransmit), B or F (give up), D, K or M (end).
    due: Deadlines,
    interval: Duration,
    transmissions: u32,
}

impl ClientTransaction {
    /// A transaction whose request the owner sends now (the first
    /// transmission is the owner's; it is counted here).
    pub fn new(invite: bool, reliability: Reliability, timers: Timers, now: Instant) -> ClientTransaction {
        let unreliable = reliability == Reliability::Unreliable;
        ClientTransaction {
            invite,
            reliability,
            timers,
            state: if invite { State::Calling } else { State::Trying },
            due: Deadlines {
                retransmit_at: unreliable.then(|| now + timers.t1),
                give_up_at: Some(now + timers.timeout()),
                end_at: None,
            },
            interval: timers.t1,
            transmissions: 1,
        }
    }

    /// Where the transaction is.
    pub fn state(&self) -> State {
        self.state
    }

    /// How many times the request went out, the first included.
    pub fn transmissions(&self) -> u32 {
        self.transmissions
    }

    /// Whether the owner may drop it.
    pub fn is_terminated(&self) -> bool {
        self.state == State::Terminated
    }

    /// When [`ClientTransaction::handle_timeout`] is due next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.due.next()
    }

    fn linger(&self) -> Duration {
        match (self.reliability, self.invite) {
            (Reliability::Reliable, _) => Duration::ZERO,
            // Timer D: at least 32 s for unreliable transports.
            (Reliability::Unreliable, true) => Duration::from_secs(32).max(self.timers.timeout() / 2),
            // Timer K: T4.
            (Reliability::Unreliable, false) => self.timers.t4,
        }
    }

    fn complete(&mut self, now: Instant, linger: Duration) {
        self.due.retransmit_at = None;
        self.due.give_up_at = None;
        if linger.is_zero() {
            self.state = State::Terminated;
            self.due.end_at = None;
        } else {
            self.state = State::Completed;
            self.due.end_at = Some(now + linger);
        }
    }

    /// A response matching this transaction (§17.1.3) with status `code`.
    pub fn on_response(&mut self, now: Instant, code: u16) -> Outcome {
        let provisional = code < 200;
        match (self.invite, self.state) {
            (_, State::Terminated) => Outcome::default(),
            (true, State::Calling | State::Proceeding) if provisional => {
                self.state = State::Proceeding;
                self.due.retransmit_at = None;
                // Timer B only runs in Calling (§17.1.1.2).
                self.due.give_up_at = None;
                Outcome::deliver()
            }
            (true, State::Calling | State::Proceeding) if code < 300 => {
                // RFC 6026 §7.2: Accepted, so 2xx retransmissions still
                // reach the TU (which acknowledges them) until Timer M.
                self.state = State::Accepted;
                self.due.retransmit_at = None;
                self.due.give_up_at = None;
                self.due.end_at = Some(now + self.timers.timeout());
                Outcome::deliver()
            }
            (true, State::Calling | State::Proceeding) => {
                let linger = self.linger();
                self.complete(now, linger);
                Outcome { deliver: true, send_ack: true, ..Outcome::default() }
            }
            (true, State::Accepted) if (200..300).contains(&code) => Outcome::deliver(),
            // A retransmitted final response: acknowledged again, not
            // passed up (§17.1.1.2).
            (true, State::Completed) if code >= 300 => Outcome { send_ack: true, ..Outcome::default() },
            (false, State::Trying | State::Proceeding) if provisional => {
                self.state = State::Proceeding;
                Outcome::deliver()
            }
            (false, State::Trying | State::Proceeding) => {
                let linger = self.linger();
                self.complete(now, linger);
                Outcome::deliver()
            }
            _ => Outcome::default(),
        }
    }

    /// Fires whatever timers are due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) -> Outcome {
        match self.due.fire(now) {
            Fired::End => {
                self.state = State::Terminated;
                Outcome::default()
            }
            Fired::GiveUp => {
                self.state = State::Terminated;
                Outcome::timed_out()
            }
            Fired::Retransmit => {
                // Timer A doubles without bound (§17.1.1.2); Timer E up to
                // T2, and at T2 once a provisional came (§17.1.2.2).
                self.interval = if self.invite {
                    self.interval * 2
                } else if self.state == State::Proceeding {
                    self.timers.t2
                } else {
                    (self.interval * 2).min(self.timers.t2)
                };
                self.due.retransmit_at = Some(now + self.interval);
                self.transmissions += 1;
                Outcome::retransmit()
            }
            Fired::Nothing => Outcome::default(),
        }
    }

    /// Changes the timer values for what is scheduled from now on (seed
    /// 002's handler H1 raises T1 toward an overloaded next hop): the
    /// next retransmission interval doubles from the new T1 at the
    /// latest, capped by the new T2.
    pub fn set_timers(&mut self, timers: Timers) {
        self.timers = timers;
        self.interval = self.interval.max(timers.t1 / 2);
    }
}

/// A server transaction (§17.2): it received a request, and the owner
/// answers through it.
#[derive(Debug, Clone)]
pub struct ServerTransaction {
    invite: bool,
    reliability: Reliability,
    timers: Timers,
    state: State,
    /// Timers G (retransmit), H (give up), I, J or L (end).
    due: Deadlines,
    interval: Duration,
    last_code: Option<u16>,
}

impl ServerTransaction {
    /// A transaction for a request just received.
    pub fn new(invite: bool, reliability: Reliability, timers: Timers) -> ServerTransaction {
        ServerTransaction {
            invite,
            reliability,
            timers,
            state: if invite { State::Proceeding } else { State::Trying },
            due: Deadlines::default(),
            interval: timers.t1,
            last_code: None,
        }
    }

    /// Where the transaction is.
    pub fn state(&self) -> State {
        self.state
    }

    /// Whether the owner may drop it.
    pub fn is_terminated(&self) -> bool {
        self.state == State::Terminated
    }

    /// The status code of the last response sent, if any.
    pub fn last_code(&self) -> Option<u16> {
        self.last_code
    }

    /// When [`ServerTransaction::handle_timeout`] is due next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.due.next()
    }

    fn unreliable(&self) -> bool {
        self.reliability == Reliability::Unreliable
    }

    /// The owner sends a response with status `code` through this
    /// transaction. Returns false if the state does not allow it (a
    /// response after a final one), and the owner must not send it.
    pub fn send_response(&mut self, now: Instant, code: u16) -> bool {
        let open = matches!(self.state, State::Trying | State::Proceeding);
        if !open {
            return false;
        }
        self.last_code = Some(code);
        if code < 200 {
            self.state = State::Proceeding;
        } else if self.invite && code < 300 {
            // RFC 6026 §7.1: Accepted; the TU retransmits the 2xx itself
            // and the transaction absorbs INVITE retransmissions until L.
            self.state = State::Accepted;
            self.due.end_at = Some(now + self.timers.timeout());
        } else if self.invite {
            self.state = State::Completed;
            if self.unreliable() {
                self.due.retransmit_at = Some(now + self.timers.t1);
            }
            self.due.give_up_at = Some(now + self.timers.timeout());
        } else if self.unreliable() {
            self.state = State::Completed;
            self.due.end_at = Some(now + self.timers.timeout());
        } else {
            self.state = State::Terminated;
        }
        true
    }

    /// The request again (a retransmission, §17.2.3 matched), or, for an
    /// INVITE transaction, its ACK (`ack`).
    pub fn on_request(&mut self, now: Instant, ack: bool) -> Outcome {
        if ack {
            if self.invite && self.state == State::Completed {
                self.due.retransmit_at = None;
                self.due.give_up_at = None;
                if self.unreliable() {
                    self.state = State::Confirmed;
                    self.due.end_at = Some(now + self.timers.t4);
                } else {
                    self.state = State::Terminated;
                }
            }
            return Outcome::default();
        }
        match self.state {
            // The last response goes again (§17.2.1, §17.2.2); in Trying
            // there is none yet, in Accepted the TU answers.
            State::Proceeding | State::Completed if self.last_code.is_some() => Outcome::retransmit(),
            _ => Outcome::default(),
        }
    }

    /// Fires whatever timers are due at `now` (G, H, I, J, L).
    pub fn handle_timeout(&mut self, now: Instant) -> Outcome {
        match self.due.fire(now) {
            Fired::End => {
                self.state = State::Terminated;
                Outcome::default()
            }
            Fired::GiveUp => {
                self.state = State::Terminated;
                Outcome::timed_out()
            }
            Fired::Retransmit => {
                self.interval = (self.interval * 2).min(self.timers.t2);
                self.due.retransmit_at = Some(now + self.interval);
                Outcome::retransmit()
            }
            Fired::Nothing => Outcome::default(),
        }
    }
}

/// A transaction's three kinds of timer: retransmit, give up, end.
#[derive(Debug, Clone, Copy, Default)]
struct Deadlines {
    retransmit_at: Option<Instant>,
    give_up_at: Option<Instant>,
    end_at: Option<Instant>,
}

/// Which timer fired.
enum Fired {
    End,
    GiveUp,
    Retransmit,
    Nothing,
}

impl Deadlines {
    fn next(&self) -> Option<Instant> {
        [self.retransmit_at, self.give_up_at, self.end_at].into_iter().flatten().min()
    }

    /// The timer due at `now`, the end first, then giving up; the ones it
    /// ends are cleared (a retransmission's next time is the caller's).
    fn fire(&mut self, now: Instant) -> Fired {
        if self.end_at.is_some_and(|t| now >= t) {
            self.end_at = None;
            return Fired::End;
        }
        if self.give_up_at.is_some_and(|t| now >= t) {
            *self = Deadlines::default();
            return Fired::GiveUp;
        }
        if self.retransmit_at.is_some_and(|t| now >= t) {
            self.retransmit_at = None;
            return Fired::Retransmit;
        }
        Fired::Nothing
    }
}

/// What identifies a transaction (§17.1.3 for responses, §17.2.3 for
/// requests): the top Via's branch and sent-by, and the CSeq method, with
/// ACK taken as INVITE so that the ACK of a non-2xx final response finds
/// its INVITE server transaction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TransactionKey {
    /// The top Via's branch.
    pub branch: String,
    /// The top Via's sent-by, host lower-cased, with the port if given.
    pub sent_by: String,
    /// The CSeq method, ACK as INVITE.
    pub method: String,
}

impl TransactionKey {
    /// The key of `msg` (request or response), or `None` when its top Via
    /// has no RFC 3261 branch (the magic cookie, §8.1.1.7): such a message
    /// belongs to an RFC 2543 peer, matched otherwise.
    pub fn of(msg: &Message<'_>) -> Option<TransactionKey> {
        let via = msg.top_via().ok()?;
        let branch = via.branch().filter(|b| b.starts_with(crate::proxy::BRANCH_COOKIE))?;
        let cseq = msg.cseq().ok()?;
        let method = if cseq.method == "ACK" { "INVITE" } else { cseq.method };
        let sent_by = match via.port {
            Some(p) => format!("{}:{p}", via.host.to_ascii_lowercase()),
            None => via.host.to_ascii_lowercase(),
        };
        Some(TransactionKey { branch: branch.to_string(), sent_by, method: method.to_string() })
    }
}

/// The ACK for a non-2xx final response to `invite` (§17.1.1.3): the
/// INVITE's Request-URI, top Via, Call-ID, From, Route set and CSeq number,
/// the response's To (with its tag), CSeq method ACK.
pub fn ack_for(invite: &Message<'_>, response: &Message<'_>) -> Result<Vec<u8>, ParseError> {
    let to = response.header(HeaderName::To).ok_or(ParseError::MissingHeader("To"))?;
    request_for_invite(invite, "ACK", to.value)
}

/// The CANCEL of `invite` (§9.1): the INVITE's Request-URI, top Via (so its
/// branch), Call-ID, From, To, Route set and CSeq number, CSeq method
/// CANCEL, no body.
pub fn cancel_for(invite: &Message<'_>) -> Result<Vec<u8>, ParseError> {
    let to = invite.header(HeaderName::To).ok_or(ParseError::MissingHeader("To"))?;
    request_for_invite(invite, "CANCEL", to.value)
}

/// A request that belongs to the INVITE's transaction (ACK of a non-2xx,
/// CANCEL): everything but the To and the method from the INVITE.
fn request_for_invite(invite: &Message<'_>, method: &str, to: &[u8]) -> Result<Vec<u8>, ParseError> {
    let uri = invite.request_uri()?;
    let via = invite.top_via()?;
    let cseq = invite.cseq()?;
    let header = |kind: HeaderName, name: &'static str| -> Result<&[u8], ParseError> {
        invite.header(kind).map(|h| h.value).ok_or(ParseError::MissingHeader(name))
    };
    let (from, call_id) = (header(HeaderName::From, "From")?, header(HeaderName::CallId, "Call-ID")?);
    let mut out = Vec::with_capacity(320);
    for part in [method.as_bytes(), b" ", uri.text.as_bytes(), b" SIP/2.0\r\nVia: ", via.text.as_bytes(), b"\r\n"] {
        out.extend_from_slice(part);
    }
    for (name, value) in [("From", from), ("To", to), ("Call-ID", call_id)] {
        for part in [name.as_bytes(), b": ", value, b"\r\n"] {
            out.extend_from_slice(part);
        }
    }
    for route in invite.values(HeaderName::Route) {
        for part in [b"Route: ".as_slice(), route.value, b"\r\n"] {
            out.extend_from_slice(part);
        }
    }
    out.extend_from_slice(
        format!("CSeq: {} {method}\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n", cseq.number).as_bytes(),
    );
    Ok(out)
}
