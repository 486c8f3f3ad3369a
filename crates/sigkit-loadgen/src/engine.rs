//! The call engine, sans-IO: every call of a run goes through the steps of
//! one [`Scenario`], many calls multiplexed on one transport. Messages and
//! the time go in ([`Engine::on_message`], [`Engine::start_call`],
//! [`Engine::handle_timeout`]); datagrams to send ([`Engine::take_outbox`])
//! and the next deadline ([`Engine::poll_timeout`]) come out.
//!
//! A received message belongs to the call its Call-ID names. It advances
//! the call when it matches the step the call waits at, or an optional
//! step after it (SIPp's rule); a message matching an earlier step is a
//! retransmission or a late message (a 180 after the 200, RFC 3261
//! §13.2.2.4) and changes nothing, except that a retransmission of the
//! last message received is answered again with the last message sent
//! (the UAS's final response, the UAC's ACK of a 2xx). Anything else is
//! unexpected and fails the call.
//!
//! Over UDP, requests are retransmitted as RFC 3261 §17.1 says (Timer A
//! doubling from T1 for an INVITE until a response, Timer E doubling up to
//! T2 for others), 2xx responses to an INVITE as §13.3.1.4 says (doubling
//! up to T2 until the next request of the call). A request without a final
//! response after 64·T1 (Timer B, Timer F), or a 2xx never acknowledged,
//! fails its call, as a timeout. A scenario's `retrans` sets the first
//! interval of its message.
//!
//! Every client transaction is timed (RFC 3261 §17.1): from its request's
//! first sending to the first provisional and the first final response
//! that match it by top Via branch and CSeq method (§17.1.3), recorded
//! per method. A retransmission does not restart the clock, and a
//! retransmitted response is not counted again.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sigkit_sip::transaction::Timers;
use sigkit_sip::{HeaderName, Message};

mod auto_answer;
mod call;
mod linger;
mod outbox;
mod template;
mod timers;
mod trace;

use crate::auth;
use crate::inject::Injection;
use crate::metrics::Recorder;
use crate::scenario::{Expect, Keyword, Pause, Scenario, Sent, StepKind};

use call::{ip_text, Call, Env, Lingering, Retrans, RetransKind, Txn, ENGINES, MAX_TXNS};
use template::{format_message, top_via_branch, Ctx};

pub use crate::transport::Transport;
pub use outbox::Outbox;
pub use trace::{EngineTrace, RttSample};

/// What the engine needs to know besides the scenario; a load run's
/// ([`crate::LoadConfig::engine`]) too.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The address written into messages (`[local_ip]`, `[local_port]`).
    pub local: SocketAddr,
    /// The peer (`[remote_ip]`, `[remote_port]`), where a client's calls go.
    pub remote: Option<SocketAddr>,
    /// An outbound proxy a client's messages go through instead of
    /// straight to `remote` (SIPp's `-rsa`).
    pub next_hop: Option<SocketAddr>,
    /// `[service]`, the user part of the request URI (SIPp's `-s`).
    pub service: String,
    /// UDP or TCP (SIPp's `-t u1`, `-t t1`).
    pub transport: Transport,
    /// The length of a `<pause/>` without its own: the call's hold time
    /// (SIPp's `-d`).
    pub hold: Duration,
    /// T1, T2 and T4, which set the retransmission intervals and
    /// transaction timeouts (RFC 3261 §17.1.1.1, Table 4).
    pub timers: Timers,
    /// The first `[cseq]` of each call (SIPp's `-base_cseq`).
    pub base_cseq: u32,
    /// `[media_port]` (SIPp's `-mp`).
    pub media_port: u16,
    /// A recv without its own `timeout` fails after this long (SIPp's
    /// `-recv_timeout`).
    pub recv_timeout: Option<Duration>,
    /// A call not over after this long fails.
    pub call_timeout: Option<Duration>,
    /// Digest user (SIPp's `-au`); None: the service.
    pub auth_user: Option<String>,
    /// Digest password (SIPp's `-ap`).
    pub auth_password: String,
    /// `[pid]`, and part of each Call-ID and branch.
    pub pid: u32,
    /// Seed of the random numbers: random pauses and random injection
    /// lines (and a load run's Poisson arrivals and service times).
    pub seed: u64,
    /// SIPp's `-aa`: an INFO, NOTIFY, OPTIONS or UPDATE that arrives in a
    /// call and matches nothing the call expects (or for no call) is
    /// answered with SIPp's default 200 OK, counted in `AutoAnswered`,
    /// instead of failing the call (or being discarded).
    pub auto_answer: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            local: SocketAddr::from(([127, 0, 0, 1], 5060)),
            remote: None,
            next_hop: None,
            service: "service".into(),
            transport: Transport::Udp,
            hold: Duration::ZERO,
            timers: Timers::default(),
            base_cseq: 1,
            media_port: 6000,
            recv_timeout: None,
            call_timeout: None,
            auth_user: None,
            auth_password: "password".into(),
            pid: std::process::id(),
            seed: 0x5eed,
            auto_answer: false,
        }
    }
}

/// The engine: every call of one scenario.
pub struct Engine {
    scenario: Arc<Scenario>,
    config: EngineConfig,
    env: Env,
    injection: Option<Arc<Injection>>,
    calls: Vec<Call>,
    free: Vec<u32>,
    by_id: HashMap<Vec<u8>, u32, foldhash::fast::RandomState>,
    /// Server calls that have ended, by Call-ID: their last response, kept
    /// for 64·T1 to answer a retransmission of the request it answered
    /// ([`Lingering`]).
    lingering: HashMap<Vec<u8>, Lingering, foldhash::fast::RandomState>,
    /// Call-IDs of `lingering` in the order they end (every one is kept
    /// equally long, so this is the order they expire in).
    lingering_order: VecDeque<(Instant, Vec<u8>)>,
    timers: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    outbox: Outbox,
    body: Vec<u8>,
    scratch: Vec<u8>,
    next_number: u64,
    active: usize,
    live: usize,
    rng: u64,
    client: bool,
    /// Whether a template reads `[last_Via_of_METHOD:]`.
    vias_of: bool,
    /// The methods of the requests the scenario sends (ACK aside, which
    /// is no transaction): the recorder's transaction histograms.
    methods: Vec<String>,
    /// The run's counts and delays, updated as calls progress.
    pub recorder: Recorder,
    /// Warning texts, response times and `<log>` messages for the trace files, when asked for.
    pub trace: EngineTrace,
    /// The time of the event being handled, for what ends without being given one (a call's length).
    clock: Instant,
    /// The most calls in progress at once, and when that was first reached.
    peak: (usize, Instant),
}

fn lower(s: &str) -> String {
    s.to_ascii_lowercase()
}

impl Engine {
    /// An engine for `scenario` with `config` (`injection` gives `[fieldN]` values); `now` is the run's start, from
    /// which `[clock_tick]` counts. No call is placed until [`Engine::start_call`] (or a request arrives, for a UAS).
    pub fn new(
        scenario: Arc<Scenario>,
        config: EngineConfig,
        injection: Option<Arc<Injection>>,
        now: Instant,
    ) -> Engine {
        let (local_ip, local_ip_type) = ip_text(config.local);
        let remote = config.remote.unwrap_or(config.local);
        let (remote_ip, remote_ip_type) = ip_text(remote);
        let env = Env {
            local_ip,
            local_ip_type,
            local_port: config.local.port().to_string(),
            remote_ip,
            remote_ip_type,
            remote_port: remote.port().to_string(),
            service: config.service.clone(),
            transport: config.transport.name(),
            pid: config.pid.to_string(),
            run_id: match ENGINES.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
                0 => config.pid.to_string(),
                n => format!("{}.{n}", config.pid),
            },
            media_port: config.media_port,
            auth_user: config.auth_user.clone().unwrap_or_else(|| config.service.clone()),
            auth_password: config.auth_password.clone(),
            started: now,
        };
        let mut methods: Vec<String> = Vec::new();
        for step in &scenario.steps {
            if let StepKind::Send(send) = &step.kind {
                if let Sent::Request(m) = &send.what {
                    if m != "ACK" && !methods.contains(m) {
                        methods.push(m.clone());
                    }
                }
            }
        }
        let mut recorder = Recorder::with_methods(scenario.rtds.clone(), methods.clone());
        recorder.set_repartitions(
            &scenario.response_time_repartition,
            scenario.repartition_rtds,
            &scenario.call_length_repartition,
        );
        recorder.set_scenario_steps(scenario.steps.len());
        let client = scenario.is_client();
        let vias_of = scenario.steps.iter().any(|s| match &s.kind {
            StepKind::Send(send) => send.template.keywords().any(|k| matches!(k, Keyword::ViaOf(_))),
            _ => false,
        });
        Engine {
            vias_of,
            methods,
            rng: config.seed | 1,
            scenario,
            config,
            env,
            injection,
            calls: Vec::new(),
            free: Vec::new(),
            by_id: HashMap::default(),
            lingering: HashMap::default(),
            lingering_order: VecDeque::new(),
            timers: BinaryHeap::new(),
            outbox: Outbox::default(),
            body: Vec::new(),
            scratch: Vec::new(),
            next_number: 1,
            active: 0,
            live: 0,
            client,
            recorder,
            trace: EngineTrace::default(),
            clock: now,
            peak: (0, now),
        }
    }

    /// The scenario every call follows.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Whether calls start here (a UAC) rather than at the peer.
    pub fn is_client(&self) -> bool {
        self.client
    }

    /// Calls in progress (those lingering after their end to answer
    /// retransmissions, `timewait`, not counted).
    pub fn active(&self) -> usize {
        self.active
    }

    /// The most calls in progress at once so far, and when that many
    /// were first in progress (SIPp's "Peak was N calls, after T s").
    pub fn peak(&self) -> (usize, Instant) {
        self.peak
    }

    /// Calls held in memory, lingering ones included.
    pub fn live(&self) -> usize {
        self.live
    }

    /// The messages to send; give the box back with
    /// [`Engine::return_outbox`] so its memory is reused.
    pub fn take_outbox(&mut self) -> Outbox {
        std::mem::take(&mut self.outbox)
    }

    /// Gives back a box taken with [`Engine::take_outbox`], emptied, so its memory is reused.
    pub fn return_outbox(&mut self, mut outbox: Outbox) {
        outbox.clear();
        if self.outbox.is_empty() {
            self.outbox = outbox;
        }
    }

    /// The messages waiting to be sent, without taking them.
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    fn random(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> f64 {
        (self.random() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn alloc(&mut self) -> usize {
        let slot = match self.free.pop() {
            Some(s) => s as usize,
            None => {
                self.calls.push(Call::default());
                self.calls.len() - 1
            }
        };
        let rtds = self.scenario.rtds.len();
        let c = &mut self.calls[slot];
        c.live = true;
        c.scheduled = None;
        c.index = 0;
        c.invite_sent = None;
        c.ringing_seen = false;
        c.answered_seen = false;
        c.last_recv_step = None;
        c.last_recv_invite = false;
        c.sent_since_recv = false;
        c.last_msg.clear();
        c.last_index.clear();
        c.last_sent.clear();
        c.last_sent_what = None;
        c.pending_branch.clear();
        c.txns.clear();
        c.peer_tag.clear();
        c.vias_of.clear();
        c.routes.clear();
        c.next_url.clear();
        c.challenge = None;
        c.rtd_start.clear();
        c.rtd_start.resize(rtds, self.env.started);
        c.retrans = None;
        c.pause_until = None;
        c.recv_deadline = None;
        c.call_deadline = None;
        c.timewait = false;
        c.call_id.clear();
        self.live += 1;
        self.active += 1;
        if self.active > self.peak.0 {
            self.peak = (self.active, self.clock);
        }
        slot
    }

    fn release(&mut self, slot: usize) {
        let c = &mut self.calls[slot];
        if !c.live {
            return;
        }
        c.live = false;
        c.gen = c.gen.wrapping_add(1);
        c.scheduled = None;
        if let Some(started) = c.started {
            self.recorder.call_ended(self.clock.saturating_duration_since(started));
        }
        let c = &mut self.calls[slot];
        let id = std::mem::take(&mut c.call_id);
        let timewait = c.timewait;
        if let Some((mut key, _)) = self.by_id.remove_entry(&id[..]) {
            // Keep one of the two buffers for the next call's Call-ID.
            key.clear();
            self.calls[slot].call_id = key;
        }
        self.free.push(slot as u32);
        self.live -= 1;
        if !timewait {
            self.active -= 1;
        }
    }

    fn new_call(&mut self, now: Instant, load_step: usize) -> usize {
        let slot = self.alloc();
        let number = self.next_number;
        self.next_number += 1;
        let r = self.random();
        let line = self.injection.as_ref().map_or(0, |inj| inj.line_index(number, r));
        let deadline = self.config.call_timeout.map(|d| now + d);
        let c = &mut self.calls[slot];
        c.number = number;
        c.load_step = load_step;
        c.started = Some(now);
        c.cseq = self.config.base_cseq.wrapping_sub(1);
        c.field_line = line;
        c.call_deadline = deadline;
        for t in &mut c.rtd_start {
            *t = now;
        }
        slot
    }

    /// Counts a call the load pattern asked for but a limit held back.
    pub fn call_offered(&mut self, load_step: usize) {
        self.recorder.call_offered(load_step);
    }

    /// Places a new call now (a client scenario); `load_step` is the
    /// load pattern's step it counts in.
    pub fn start_call(&mut self, now: Instant, load_step: usize) {
        self.clock = now;
        let slot = self.new_call(now, load_step);
        let c = &mut self.calls[slot];
        let _ = write!(c.call_id, "{}-{}@{}", c.number, self.env.run_id, self.env.local_ip);
        self.by_id.insert(c.call_id.clone(), slot as u32);
        self.recorder.call_offered(load_step);
        self.recorder.call_attempted(load_step);
        self.advance(slot, now);
    }

    /// A message from the network (`from` is where it came from: a
    /// server call answers there).
    pub fn on_message(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) {
        self.clock = now;
        self.recorder.message_received();
        let Ok(msg) = Message::parse(bytes) else {
            self.recorder.unexpected();
            self.warn(|_| {
                format!("non SIP message discarded: \"{}\" ({})", String::from_utf8_lossy(bytes), bytes.len())
            });
            return;
        };
        let Ok(call_id) = msg.call_id() else {
            self.recorder.unexpected();
            self.warn(|_| "SIP message without Call-ID discarded".into());
            return;
        };
        let slot = match self.by_id.get(call_id.as_bytes()) {
            Some(&s) => s as usize,
            None => {
                let opens = !self.client
                    && msg.method().is_some_and(|m| m != "ACK" && Some(m) == self.scenario.first_request());
                if !opens {
                    if self.answer_lingering(now, from, &msg, call_id.as_bytes()) {
                        return;
                    }
                    if self.config.auto_answer && self.auto_answer_out_of_call(from, &msg, call_id) {
                        return;
                    }
                    self.recorder.out_of_call();
                    self.warn(|_| {
                        format!(
                            "Discarding message which can't be mapped to a known SIPp call:\n{}",
                            String::from_utf8_lossy(bytes)
                        )
                    });
                    return;
                }
                let slot = self.new_call(now, 0);
                self.recorder.call_offered(0);
                self.recorder.call_attempted(0);
                let c = &mut self.calls[slot];
                c.call_id.extend_from_slice(call_id.as_bytes());
                c.peer = Some(from);
                self.by_id.insert(c.call_id.clone(), slot as u32);
                // Steps before the first recv (nop, label) run first.
                self.advance(slot, now);
                if !self.calls[slot].live {
                    return;
                }
                slot
            }
        };
        self.dispatch(slot, now, from, &msg, bytes);
    }

    fn matches(expect: &Expect, cseq_methods: &[String], msg: &Message<'_>) -> bool {
        match expect {
            Expect::Response(code) => {
                msg.status_code() == Some(*code)
                    && (cseq_methods.is_empty()
                        || msg.cseq().is_ok_and(|c| cseq_methods.iter().any(|m| c.method.eq_ignore_ascii_case(m))))
            }
            Expect::Request(m) => msg.method().is_some_and(|x| x.eq_ignore_ascii_case(m)),
        }
    }

    fn recv_matches(&self, step: usize, msg: &Message<'_>) -> Option<bool> {
        match &self.scenario.steps[step].kind {
            StepKind::Recv(r) => Some(Self::matches(&r.expect, &r.cseq_methods, msg)),
            _ => None,
        }
    }

    fn dispatch(&mut self, slot: usize, now: Instant, from: SocketAddr, msg: &Message<'_>, bytes: &[u8]) {
        let scenario = Arc::clone(&self.scenario);
        let steps = &scenario.steps;
        if !self.client && self.calls[slot].peer.is_none() {
            self.calls[slot].peer = Some(from);
        }
        // Set-up delays: INVITE→first 18x, INVITE→first 2xx.
        if let (Some(code), Some(sent)) = (msg.status_code(), self.calls[slot].invite_sent) {
            if msg.cseq().is_ok_and(|c| c.method == "INVITE") {
                let step = self.calls[slot].load_step;
                let c = &mut self.calls[slot];
                if (180..190).contains(&code) && !c.ringing_seen {
                    c.ringing_seen = true;
                    self.recorder.ringing(step, now - sent);
                } else if (200..300).contains(&code) && !c.answered_seen {
                    c.answered_seen = true;
                    self.recorder.answered(step, now - sent);
                }
            }
        }
        if let (Some(code), false) = (msg.status_code(), self.calls[slot].txns.is_empty()) {
            self.time_transaction(slot, now, code, msg);
        }
        let at = self.calls[slot].index;
        let mut j = at;
        let mut found = None;
        while j < steps.len() {
            match (&steps[j].kind, self.recv_matches(j, msg)) {
                (_, Some(true)) => {
                    found = Some(j);
                    break;
                }
                (StepKind::Recv(r), Some(false)) if r.optional => j += 1,
                _ => break,
            }
        }
        if let Some(j) = found {
            self.on_matched(slot, j, now, msg, bytes);
            return;
        }
        // An earlier step: a retransmission, or a late message; not a
        // final response of the transaction in progress (a second 401 to
        // the REGISTER with credentials is an answer, not a
        // retransmission). A provisional one again is (a UAS answers a
        // retransmitted INVITE with its last provisional, RFC 3261
        // §17.2.1), and the UAC's core ignores it.
        let current = msg.status_code().is_some_and(|code| code >= 200)
            && !self.calls[slot].pending_branch.is_empty()
            && msg.top_via().ok().and_then(|v| v.branch()).map(str::as_bytes)
                == Some(&self.calls[slot].pending_branch[..]);
        let earlier = if current {
            None
        } else {
            (0..at.min(steps.len())).rev().find(|&k| self.recv_matches(k, msg) == Some(true))
        };
        if let Some(k) = earlier {
            self.recorder.retransmission_received();
            self.recorder.at_step(k, |m| m.recv_retrans += 1);
            let c = &self.calls[slot];
            if c.last_recv_step == Some(k) && c.sent_since_recv {
                // Answer again what answered it: a final response, or the
                // ACK of a 2xx. A request the call retransmits itself is
                // left to its timer.
                let again = match c.last_sent_what.map(|s| &steps[s].kind) {
                    Some(StepKind::Send(s)) => match &s.what {
                        Sent::Response(_) => true,
                        Sent::Request(m) => m == "ACK",
                    },
                    _ => false,
                };
                if again && !c.last_sent.is_empty() {
                    let to = self.destination(slot);
                    let c = &self.calls[slot];
                    self.outbox.push(to, &c.last_sent);
                    self.recorder.retransmitted(c.load_step);
                    if let Some(s) = c.last_sent_what {
                        self.recorder.at_step(s, |m| m.sent_retrans += 1);
                    }
                }
            }
            return;
        }
        if self.config.auto_answer && auto_answer::answers(msg) && self.auto_answer(from, msg) {
            self.warn(|_| "Processing auto_response for unexpected INFO, NOTIFY, OPTIONS or UPDATE\n".into());
            return;
        }
        if self.calls[slot].timewait {
            self.recorder.out_of_call();
            return;
        }
        self.recorder.unexpected_in(self.calls[slot].load_step);
        self.recorder.at_step(self.calls[slot].index, |m| m.unexpected += 1);
        self.warn_unexpected(slot, bytes);
        let cause = match (msg.status_code(), msg.cseq()) {
            (Some(code), Ok(cseq)) if code >= 300 => {
                if cseq.method == "INVITE" {
                    self.ack_error(slot, msg);
                }
                format!("{}_{code}", lower(cseq.method))
            }
            _ => "unexpected_message".to_string(),
        };
        self.fail(slot, &cause, false);
    }

    /// A response to one of the call's client transactions: its first
    /// provisional and its first final response are timed; the final one
    /// ends the transaction.
    fn time_transaction(&mut self, slot: usize, now: Instant, code: u16, msg: &Message<'_>) {
        let Some(branch) = msg.top_via().ok().and_then(|v| v.branch()) else { return };
        let Ok(cseq) = msg.cseq() else { return };
        let c = &mut self.calls[slot];
        let methods = &self.methods;
        let Some(i) = c
            .txns
            .iter()
            .position(|t| t.branch == branch.as_bytes() && methods[t.method].eq_ignore_ascii_case(cseq.method))
        else {
            return;
        };
        let step = c.load_step;
        let t = &mut c.txns[i];
        if code >= 200 {
            let (method, d) = (t.method, now - t.sent);
            c.txns.remove(i);
            self.recorder.transaction_final(step, method, d);
        } else if !t.provisional_seen {
            t.provisional_seen = true;
            let (method, d) = (t.method, now - t.sent);
            self.recorder.transaction_provisional(step, method, d);
        }
    }

    /// The ACK of a non-2xx final response to the INVITE just sent (RFC
    /// 3261 §17.1.1.3), so the peer stops retransmitting it.
    fn ack_error(&mut self, slot: usize, response: &Message<'_>) {
        let c = &self.calls[slot];
        let invite_last = c.retrans.is_some_and(|r| r.kind == RetransKind::Invite);
        if !invite_last {
            return;
        }
        let ack = Message::parse(&c.last_sent)
            .ok()
            .and_then(|invite| sigkit_sip::transaction::ack_for(&invite, response).ok());
        if let Some(ack) = ack {
            let to = self.destination(slot);
            self.outbox.push(to, &ack);
            self.recorder.message_sent(false);
        }
    }

    fn on_matched(&mut self, slot: usize, j: usize, now: Instant, msg: &Message<'_>, bytes: &[u8]) {
        let scenario = Arc::clone(&self.scenario);
        let step = &scenario.steps[j];
        let StepKind::Recv(r) = &step.kind else { return };
        self.recorder.at_step(j, |m| m.recv += 1);
        let needs_last = scenario.needs_last_message;
        let c = &mut self.calls[slot];
        // What was being sent again is answered.
        if let Some(rt) = &mut c.retrans {
            match (rt.kind, msg.status_code()) {
                (RetransKind::Invite, Some(code)) if code < 200 => {
                    rt.next = None;
                    rt.deadline = None;
                }
                (RetransKind::NonInvite, Some(code)) if code < 200 => rt.next = None,
                (RetransKind::Invite | RetransKind::NonInvite, Some(_)) => c.retrans = None,
                (RetransKind::Response, None) => c.retrans = None,
                _ => {}
            }
        }
        c.last_recv_step = Some(j);
        c.sent_since_recv = false;
        c.recv_deadline = None;
        if let Some(m) = msg.method() {
            c.last_recv_invite = m == "INVITE";
        }
        if needs_last {
            c.last_msg.clear();
            c.last_msg.extend_from_slice(bytes);
            c.last_index.clear();
            for h in msg.headers() {
                let mut end = h.line.end;
                while end > h.line.start && matches!(bytes[end - 1], b'\r' | b'\n') {
                    end -= 1;
                }
                let name = h.line.start as u32..(h.line.start + h.name.len()) as u32;
                c.last_index.push((h.kind, name, h.line.start as u32..end as u32));
            }
            if let (true, Some(method)) = (self.vias_of, msg.method()) {
                let mut lines = Vec::new();
                for (kind, _, line) in &c.last_index {
                    if *kind == HeaderName::Via {
                        if !lines.is_empty() {
                            lines.extend_from_slice(b"\r\n");
                        }
                        lines.extend_from_slice(&c.last_msg[line.start as usize..line.end as usize]);
                    }
                }
                match c.vias_of.iter_mut().find(|(m, _)| m == method) {
                    Some((_, v)) => *v = lines,
                    None => c.vias_of.push((method.to_string(), lines)),
                }
            }
        }
        let tag = if msg.is_request() { msg.from().ok() } else { msg.to().ok() }.and_then(|n| n.tag());
        if let Some(tag) = tag {
            c.peer_tag.clear();
            c.peer_tag.extend_from_slice(tag.as_bytes());
        }
        if r.rrs {
            c.routes.clear();
            if let Ok(mut rr) = msg.record_routes() {
                // A UAC's route set is the Record-Route in reverse
                // (RFC 3261 §12.1.2); a UAS's in order (§12.1.1).
                if !msg.is_request() {
                    rr.reverse();
                }
                for (i, r) in rr.iter().enumerate() {
                    if i > 0 {
                        c.routes.extend_from_slice(b", ");
                    }
                    c.routes.extend_from_slice(r.text.as_bytes());
                }
            }
            if let Ok(sigkit_sip::Contacts::List(list)) = msg.contacts() {
                if let Some(first) = list.first() {
                    c.next_url.clear();
                    c.next_url.extend_from_slice(first.uri.as_bytes());
                }
            }
        }
        if r.auth {
            let proxy = msg.status_code() == Some(407);
            let name = if proxy { "Proxy-Authenticate" } else { "WWW-Authenticate" };
            c.challenge = msg
                .headers_named(name)
                .find_map(|h| h.value_str().ok().and_then(auth::parse_digest))
                .map(|p| (proxy, p));
        }
        if r.verify_auth {
            let method = msg.method().unwrap_or("");
            let ok = msg
                .headers_named("Authorization")
                .chain(msg.headers_named("Proxy-Authorization"))
                .filter_map(|h| h.value_str().ok())
                .any(|v| auth::verify(v, &self.env.auth_password, method, None));
            if !ok {
                self.warn_failed(slot, "auth_failed");
                self.fail(slot, "auth_failed", false);
                return;
            }
        }
        self.apply_rtd(slot, j, now);
        self.run_logs(slot, j, now);
        self.calls[slot].index = step.next.unwrap_or(j + 1);
        self.advance(slot, now);
    }

    fn apply_rtd(&mut self, slot: usize, j: usize, now: Instant) {
        let step = &self.scenario.steps[j];
        let c = &mut self.calls[slot];
        if let Some(i) = step.start_rtd {
            c.rtd_start[i] = now;
        }
        if let Some(i) = step.rtd {
            let d = now - c.rtd_start[i];
            let ls = c.load_step;
            self.recorder.rtd(ls, i, d);
            self.trace_rtt(i, d, now);
        }
    }

    fn destination(&self, slot: usize) -> SocketAddr {
        if self.client {
            self.config.next_hop.or(self.config.remote).unwrap_or(self.config.local)
        } else {
            self.calls[slot].peer.unwrap_or(self.config.local)
        }
    }

    fn pause_length(&mut self, p: Pause) -> Duration {
        match p {
            Pause::Default => self.config.hold,
            Pause::Fixed(d) => d,
            Pause::Uniform(a, b) => a + (b - a).mul_f64(self.unit()),
            Pause::Exponential(mean) => mean.mul_f64(-(1.0 - self.unit()).ln()),
        }
    }

    /// Runs the call's steps from where it is until it must wait.
    fn advance(&mut self, slot: usize, now: Instant) {
        let scenario = Arc::clone(&self.scenario);
        let steps = &scenario.steps;
        // A scenario whose `next` loops over steps that never wait would
        // run forever; a call gets this many steps per event.
        let mut budget = steps.len() * 4 + 16;
        loop {
            if !self.calls[slot].live {
                return;
            }
            budget -= 1;
            if budget == 0 {
                self.warn_failed(slot, "scenario_loop");
                self.fail(slot, "scenario_loop", false);
                return;
            }
            let i = self.calls[slot].index;
            let Some(step) = steps.get(i) else {
                self.finish(slot, now);
                return;
            };
            match &step.kind {
                StepKind::Send(_) => {
                    self.send_step(slot, i, now);
                    self.apply_rtd(slot, i, now);
                    self.run_logs(slot, i, now);
                }
                StepKind::Recv(r) => {
                    let c = &mut self.calls[slot];
                    if c.recv_deadline.is_none() {
                        if let Some(t) = r.timeout.or(self.config.recv_timeout) {
                            c.recv_deadline = Some(now + t);
                        }
                    }
                    self.reschedule(slot);
                    return;
                }
                StepKind::Pause(p) => {
                    if self.calls[slot].pause_until.is_none() {
                        self.recorder.at_step(i, |m| m.sessions += 1);
                        let d = self.pause_length(*p);
                        if !d.is_zero() {
                            self.calls[slot].pause_until = Some(now + d);
                            self.reschedule(slot);
                            return;
                        }
                    } else {
                        self.reschedule(slot);
                        return;
                    }
                    self.apply_rtd(slot, i, now);
                }
                StepKind::Timewait(d) => {
                    let c = &mut self.calls[slot];
                    if !c.timewait {
                        self.recorder.at_step(i, |m| m.sessions += 1);
                        let c = &mut self.calls[slot];
                        c.timewait = true;
                        c.pause_until = Some(now + *d);
                        c.call_deadline = None;
                        c.recv_deadline = None;
                        let ls = c.load_step;
                        self.active -= 1;
                        self.recorder.call_succeeded(ls, now);
                        self.apply_rtd(slot, i, now);
                    }
                    self.reschedule(slot);
                    return;
                }
                StepKind::Nop | StepKind::Label => {
                    self.apply_rtd(slot, i, now);
                    self.run_logs(slot, i, now);
                }
            }
            if !self.calls[slot].live {
                return;
            }
            self.calls[slot].index = step.next.unwrap_or(i + 1);
        }
    }

    fn finish(&mut self, slot: usize, now: Instant) {
        let c = &self.calls[slot];
        if !c.timewait {
            let ls = c.load_step;
            self.recorder.call_succeeded(ls, now);
        }
        self.linger(slot, now);
        self.release(slot);
    }

    fn fail(&mut self, slot: usize, cause: &str, timeout: bool) {
        let c = &self.calls[slot];
        if !c.live {
            return;
        }
        if !c.timewait {
            let ls = c.load_step;
            self.recorder.call_failed(ls, cause, timeout);
        }
        self.release(slot);
    }

    fn send_step(&mut self, slot: usize, i: usize, now: Instant) {
        let scenario = Arc::clone(&self.scenario);
        let StepKind::Send(send) = &scenario.steps[i].kind else { return };
        if let Sent::Request(m) = &send.what {
            if m != "ACK" && m != "CANCEL" {
                let c = &mut self.calls[slot];
                c.cseq = c.cseq.wrapping_add(1);
            }
        }
        let mut out = std::mem::take(&mut self.calls[slot].last_sent);
        out.clear();
        {
            let ctx = Ctx {
                env: &self.env,
                call: &self.calls[slot],
                step: i,
                fields: self
                    .injection
                    .as_deref()
                    .and_then(|inj| inj.lines.get(self.calls[slot].field_line))
                    .map(|l| l.as_slice()),
                now,
            };
            format_message(&ctx, &send.template, &mut self.body, &mut self.scratch, &mut out);
        }
        let to = self.destination(slot);
        self.outbox.push(to, &out);
        self.recorder.message_sent(false);
        self.recorder.at_step(i, |m| m.sent += 1);
        let udp = self.config.transport == Transport::Udp;
        let timers = self.config.timers;
        let c = &mut self.calls[slot];
        if let Sent::Request(m) = &send.what {
            let branch = top_via_branch(&out);
            c.pending_branch.clear();
            c.pending_branch.extend_from_slice(branch);
            if let Some(method) = self.methods.iter().position(|x| x == m) {
                if c.txns.len() >= MAX_TXNS {
                    c.txns.remove(0);
                }
                c.txns.push(Txn { branch: branch.to_vec(), method, sent: now, provisional_seen: false });
            }
        }
        c.last_sent = out;
        c.last_sent_what = Some(i);
        c.sent_since_recv = true;
        c.retrans = match &send.what {
            Sent::Request(m) if m == "ACK" => None,
            Sent::Request(m) => {
                let invite = m == "INVITE";
                if invite && c.invite_sent.is_none() {
                    c.invite_sent = Some(now);
                }
                let interval = send.retrans.unwrap_or(timers.t1).max(Duration::from_millis(1));
                Some(Retrans {
                    next: udp.then(|| now + interval),
                    interval,
                    deadline: Some(now + timers.timeout()),
                    kind: if invite { RetransKind::Invite } else { RetransKind::NonInvite },
                    step: i,
                    fails: true,
                })
            }
            Sent::Response(code) => {
                let two_xx = (200..300).contains(code) && c.last_recv_invite;
                if udp && (two_xx || send.retrans.is_some()) {
                    let interval = send.retrans.unwrap_or(timers.t1).max(Duration::from_millis(1));
                    Some(Retrans {
                        next: Some(now + interval),
                        interval,
                        deadline: Some(now + timers.timeout()),
                        kind: RetransKind::Response,
                        step: i,
                        fails: two_xx,
                    })
                } else if two_xx {
                    // Over TCP the 2xx is not sent again, but its ACK is
                    // still awaited for 64·T1.
                    Some(Retrans {
                        next: None,
                        interval: timers.t1,
                        deadline: Some(now + timers.timeout()),
                        kind: RetransKind::Response,
                        step: i,
                        fails: true,
                    })
                } else {
                    None
                }
            }
        };
    }

    /// Ends every call still in progress (the run is over): they are
    /// counted as neither successful nor failed; returns how many.
    pub fn abandon_all(&mut self) -> usize {
        let n = self.active;
        for slot in 0..self.calls.len() {
            self.release(slot);
        }
        self.timers.clear();
        n
    }
}

#[cfg(test)]
mod tests;
