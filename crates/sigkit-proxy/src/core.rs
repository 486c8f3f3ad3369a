//! The proxy's behaviour, sans-IO: datagrams and stream messages go in
//! with the time, and [`Transmit`]s come out.
//!
//! Toward terminals the proxy speaks SigComp where they do (RFC 3486,
//! RFC 5049), toward the upstream SIP server plain SIP. It is a stateless
//! RFC 3261 proxy at the edge (§16.11), with these duties:
//! - on requests from terminals it stamps `received`/`rport` on their Via
//!   (RFC 3261 §18.2.1, RFC 3581 §4), adds its own Via, adds Path on
//!   REGISTER (RFC 3327) and a double Record-Route on dialog-forming
//!   requests (one entry per side, the terminal side's with
//!   `comp=sigcomp`, RFC 3486 §5), so that terminating and in-dialog
//!   requests come back through it;
//! - it consumes Route entries that name it, and sends responses back
//!   along the Via path;
//! - each message to or from a terminal belongs to a compartment keyed by
//!   the terminal (its `sigcomp-id`, RFC 5049 §6.1, or else its flow) and
//!   by the name the terminal uses for the proxy in that message, so the
//!   two ends always agree ([`crate::compartments`]);
//! - state is created only for messages the proxy accepts (RFC 5049 §6):
//!   a registered terminal's at once, an unregistered terminal's REGISTER
//!   once the registrar has answered 2xx, anything else's never.
//!
//! Every entry the proxy writes carries a flow token (`t.I.N` as the
//! URI's user part) naming the terminal's flow, so a message from the
//! upstream finds its terminal without a lookup by address (RFC 5626's
//! flow tokens serve the same purpose). `I` is the proxy instance, random
//! at each start: in a farm (docs/deploy.md) every instance writes the same
//! service address, and a restarted instance has lost its flows, so a
//! token is only trusted by the instance that wrote it.
//!
//! With `stateful = true` the proxy is transaction stateful toward the
//! upstream (RFC 3261 §16.6 step 9, §17): each new request from a terminal
//! gets a server transaction, paired with a client transaction toward the
//! upstream. The proxy absorbs the terminal's retransmissions (answering
//! them with its last response), retransmits toward the upstream itself
//! over UDP (Timers A and E, from the T1 overload control sets), answers
//! 100 Trying to an INVITE at once (§16.2, §17.2.1: within 200 ms unless
//! the TU answers), acknowledges non-2xx final responses to INVITE itself
//! (§17.1.1.3), and answers 408 when the upstream never does (§16.8).
//!
//! Flows are soft state: one unused either way for `flow_idle_timeout_s`
//! and without a live registration is forgotten, and at most `max_flows`
//! are kept (the one idle longest goes first).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};
use sigcomp::{CompartmentId, Transport};
use sigcomp_compress::{Endpoint, EndpointConfig, Incoming, Received, ReceivedNack};
use sigkit_sip::proxy::{build_response, format_via, is_dialog_forming, route_uri};
use sigkit_sip::transaction::{ack_for, cancel_for, ClientTransaction, Reliability, ServerTransaction, State, Timers};
use sigkit_sip::{EditError, Editor, HeaderName, Message};

mod flows;
mod shard;
mod toward_terminal;
mod transactions;

use shard::{host_matches, parse_flow_token, socket_addr, BRANCH_PREFIX};
pub use shard::{new_instance_id, Shard};

use crate::compartments::{Compartments, ProxyName, Terminal, MAX_IDENTIFIER_LEN};
use crate::config::{ConfigError, ProxyConfig, SipTransport};
use crate::defence::{Budgets, Standing};
use crate::metrics::{ProxyMetrics, Snapshot};
use crate::overload::{Admission, Overload, OverloadMetrics};
use crate::pending::{HeldRegister, PendingLimits, PendingRegisters, MAX_CONTACTS};

/// Whether a datagram or a TCP stream starting with `b` is SigComp
/// (RFC 5049 §4: the five most significant bits are 11111).
pub fn is_sigcomp_first_byte(b: u8) -> bool {
    b & 0xF8 == 0xF8
}

/// Which side of the proxy a message crosses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    Terminal,
    Upstream,
}

/// The other end of a message: transport, address, the local socket it
/// arrived on, and for TCP the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer {
    pub transport: SipTransport,
    pub addr: SocketAddr,
    pub local: Option<SocketAddr>,
    pub conn: Option<u64>,
}

/// Bytes to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub side: Side,
    pub to: Peer,
    pub bytes: Vec<u8>,
    /// A SigComp message (over TCP the runtime adds record marking,
    /// RFC 3320 §4.2.2).
    pub sigcomp: bool,
}

/// The proxy's sockets, as bound.
#[derive(Debug, Clone)]
pub struct LocalAddrs {
    pub terminal: Vec<(SipTransport, SocketAddr)>,
    /// Where the proxy sends to and receives from the upstream.
    pub upstream: SocketAddr,
    /// The upstream server.
    pub upstream_peer: SocketAddr,
}

/// What a flow token names.
#[derive(Debug, Clone)]
struct Flow {
    peer: Peer,
    sigcomp: bool,
    /// The terminal's SigComp identifier, once a request on this flow
    /// named it ([`Terminal::Id`]).
    terminal_id: Option<String>,
    /// The last message from or to the terminal on this flow.
    last_seen: Instant,
    /// The end of the registration made through this flow: a registered
    /// terminal's flow is kept for terminating requests however quiet it is.
    registered_until: Option<Instant>,
    /// A registered terminal's message came on this flow: its source is a
    /// terminal the proxy knows ([`Standing`]).
    trusted: bool,
}

/// A SIP message sent compressed over a TCP flow, kept until the flow's
/// next few messages push it out, in case the terminal NACKs it.
struct SentOverTcp {
    /// SHA-1 of the SigComp message, as the NACK names it (RFC 4077 §3.1).
    sha1: [u8; 20],
    compartment: CompartmentId,
    to: Peer,
    sip: Vec<u8>,
}

/// A transaction of the stateful mode: the server transaction toward the
/// terminal and the client transaction toward the upstream (RFC 3261
/// §16.6 step 9), keyed by the proxy's branch, which is the same for a
/// retransmission of the request ([`Proxy::branch_for`]).
struct Transaction {
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
    /// Where responses go: the terminal's flow and compartment, and
    /// whether it speaks SigComp.
    to: Peer,
    app: App,
    sigcomp: bool,
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

impl Transaction {
    fn next_timeout(&self) -> Instant {
        let cancel = self.cancel.as_ref().and_then(|c| c.client.as_ref()).and_then(ClientTransaction::poll_timeout);
        [self.client.poll_timeout(), self.server.poll_timeout(), cancel]
            .into_iter()
            .flatten()
            .fold(self.timer_c, Instant::min)
    }
}

/// Timer C of a stateful proxy's INVITE transaction (RFC 3261 §16.6 step
/// 11: greater than 3 minutes).
const TIMER_C: Duration = Duration::from_secs(181);

/// How many of a TCP flow's last compressed messages may be sent again
/// after a NACK. A NACK answers the message that failed, and over TCP it
/// comes back within a round trip, behind at most the few messages the
/// proxy sent meanwhile (a provisional and a final response, a request).
const RESEND_PER_FLOW: usize = 4;

/// A flow token of the first Route entry naming the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RouteToken {
    /// None there.
    Absent,
    /// One this instance wrote.
    Own(u64),
    /// One another instance wrote (or this one before a restart).
    Foreign,
}

/// The terminal end of a message toward a terminal: its flow token, and
/// the compartment key (the terminal, the name it used for the proxy).
#[derive(Debug, Clone)]
struct App {
    token: u64,
    terminal: Terminal,
    name: ProxyName,
}

/// Timer F (64 × T1, RFC 3261 §17.1.2.2): no final response by then, none
/// comes.
const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(32);

pub struct Proxy {
    endpoint: Endpoint,
    cpb: u64,
    sigcomp_id: String,
    addrs: LocalAddrs,
    route_terminal: Option<SocketAddr>,
    route_upstream: Option<SocketAddr>,
    /// Terminals' compartments and registrations.
    compartments: Compartments,
    /// The proxy's `sigcomp-id` as a name ([`ProxyName::ours`]).
    our_name: ProxyName,
    flows: HashMap<u64, Flow>,
    flow_tokens: HashMap<Peer, u64>,
    /// The newest flow from each transport address, and each TCP
    /// connection's flow: found without a scan.
    by_addr: HashMap<(SipTransport, SocketAddr), u64>,
    by_conn: HashMap<u64, Peer>,
    next_token: u64,
    /// Flows by when they may be forgotten (entries are checked against
    /// the flow when they come up: a flow used since is pushed again).
    flow_deadlines: BinaryHeap<Reverse<(Instant, u64)>>,
    flow_idle: Duration,
    max_flows: usize,
    max_registrations: usize,
    /// This proxy's part of a sharded runtime ([`Shard`]).
    shard: Shard,
    /// REGISTERs awaiting the registrar's answer ([`crate::pending`]).
    held: PendingRegisters,
    budgets: Budgets,
    overload: Overload,
    /// Each TCP connection's last compressed messages, by connection.
    sent_over_tcp: HashMap<u64, VecDeque<SentOverTcp>>,
    /// Transaction stateful toward the upstream (`stateful`).
    stateful: bool,
    transactions: HashMap<String, Transaction>,
    /// No transaction timer is due before this.
    transactions_due: Option<Instant>,
    out: VecDeque<Transmit>,
    metrics: ProxyMetrics,
}

fn side_index(side: Side) -> usize {
    match side {
        Side::Terminal => 0,
        Side::Upstream => 1,
    }
}

impl Proxy {
    pub fn new(config: &ProxyConfig, addrs: LocalAddrs) -> Result<Proxy, ConfigError> {
        Proxy::sharded(config, addrs, Shard { index: 0, count: 1, instance: new_instance_id() })
    }

    /// One of `shard.count` proxies that share the sockets, each owning
    /// the terminals [`Shard::of_terminal`] gives it; the limits are
    /// split between them.
    pub fn sharded(config: &ProxyConfig, addrs: LocalAddrs, shard: Shard) -> Result<Proxy, ConfigError> {
        config.validate()?;
        let n = shard.count.max(1) as usize;
        let limits = config.limits();
        let endpoint_config = EndpointConfig {
            idle_timeout: Some(config.idle_timeout()),
            limits: sigcomp::Limits {
                max_compartments: limits.max_compartments.div_ceil(n),
                max_state_bytes: limits.max_state_bytes.div_ceil(n),
            },
            hot_compartments: config.sigcomp.hot_compartments.div_ceil(n),
            ..EndpointConfig::new(config.local_params(), config.assumed_peer(), config.compressor())
        };
        let endpoint = Endpoint::new(endpoint_config)?;
        Ok(Proxy {
            endpoint,
            cpb: u64::from(config.sigcomp.cpb),
            sigcomp_id: config.sigcomp_id.clone(),
            addrs,
            route_terminal: config.route_terminal,
            route_upstream: config.route_upstream,
            compartments: Compartments::default(),
            our_name: ProxyName::ours(&config.sigcomp_id),
            flows: HashMap::new(),
            flow_tokens: HashMap::new(),
            by_addr: HashMap::new(),
            by_conn: HashMap::new(),
            next_token: 1,
            flow_deadlines: BinaryHeap::new(),
            flow_idle: config.flow_idle_timeout(),
            max_flows: config.max_flows.div_ceil(n),
            max_registrations: config.max_registrations.div_ceil(n),
            shard,
            held: PendingRegisters::new(PendingLimits {
                max_registers: config.max_pending_registers.div_ceil(n),
                max_per_source: config.max_pending_registers_per_source,
                max_bytes: config.max_pending_state_bytes.div_ceil(n),
            }),
            budgets: Budgets::new(config.defence.clone(), 1.0 / n as f64, Instant::now()),
            overload: Overload::new(
                config.overload.clone(),
                0x9e37_79b9_7f4a_7c15 ^ u64::from(shard.index),
                config.stateful,
            ),
            sent_over_tcp: HashMap::new(),
            stateful: config.stateful,
            transactions: HashMap::new(),
            transactions_due: None,
            out: VecDeque::new(),
            metrics: ProxyMetrics::default(),
        })
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// Counts a TCP connection the runtime closed because its terminal
    /// read nothing while the queue for it filled.
    pub fn record_stuck_connection(&mut self) {
        self.metrics.stuck_connections_closed += 1;
    }

    /// Counts one message's handling time (measured by the runtime, which
    /// owns the clock; see [`HandlingTimes`]).
    pub fn record_handling(&mut self, took: Duration) {
        self.metrics.handling.record(took);
    }

    pub fn metrics(&self) -> &ProxyMetrics {
        &self.metrics
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn send(&mut self, side: Side, to: Peer, bytes: Vec<u8>, sigcomp: bool) {
        let i = side_index(side);
        self.metrics.messages_out[i] += 1;
        self.metrics.bytes_out[i] += bytes.len() as u64;
        self.out.push_back(Transmit { side, to, bytes, sigcomp });
    }

    fn upstream_peer(&self) -> Peer {
        Peer {
            transport: SipTransport::Udp,
            addr: self.addrs.upstream_peer,
            local: Some(self.addrs.upstream),
            conn: None,
        }
    }

    /// Terminals with a live registration.
    pub fn registered_count(&self) -> usize {
        self.compartments.registered_count()
    }

    fn terminal_addr(&self, transport: SipTransport, local: Option<SocketAddr>) -> SocketAddr {
        local
            .filter(|l| self.addrs.terminal.iter().any(|(t, a)| *t == transport && a == l))
            .or_else(|| self.addrs.terminal.iter().find(|(t, _)| *t == transport).map(|(_, a)| *a))
            .unwrap_or(self.addrs.upstream)
    }

    fn host_of(&self, addr: SocketAddr) -> String {
        match addr.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        }
    }

    /// A URI of the proxy on the terminal side of `flow` (with
    /// `comp=sigcomp` and the proxy's `sigcomp-id` where the terminal
    /// speaks SigComp, RFC 3486 §5, RFC 5049 §6.1), naming the flow.
    fn terminal_uri(&self, token: u64) -> String {
        let f = self.flows.get(&token);
        let transport = f.map_or(SipTransport::Udp, |f| f.peer.transport);
        let local = self.route_terminal.unwrap_or_else(|| self.terminal_addr(transport, f.and_then(|f| f.peer.local)));
        let tcp = (transport == SipTransport::Tcp).then_some("tcp");
        let id = f.is_some_and(|f| f.sigcomp).then_some(self.sigcomp_id.as_str());
        self.with_flow_token(token, &route_uri(&self.host_of(local), Some(local.port()), tcp, id))
    }

    fn upstream_uri(&self, token: u64) -> String {
        let a = self.route_upstream.unwrap_or(self.addrs.upstream);
        self.with_flow_token(token, &route_uri(&self.host_of(a), Some(a.port()), None, None))
    }

    /// `uri` (`sip:host...`) with the flow token as its user part.
    fn with_flow_token(&self, token: u64, uri: &str) -> String {
        format!("sip:t.{:012x}.{token}@{}", self.shard.instance, uri.strip_prefix("sip:").unwrap_or(uri))
    }

    /// Whether `uri` (a Route entry) names this proxy.
    fn is_ours(&self, host: &str, port: Option<u16>) -> bool {
        let port = port.unwrap_or(5060);
        let ours = |a: SocketAddr| a.port() == port && host_matches(host, a.ip());
        ours(self.addrs.upstream)
            || self.addrs.terminal.iter().any(|(_, a)| ours(*a))
            || self.route_terminal.is_some_and(ours)
            || self.route_upstream.is_some_and(ours)
    }

    /// A message from a terminal: one datagram, or one message of a TCP
    /// connection (SigComp with its record marking removed, or plain SIP).
    pub fn from_terminal(&mut self, now: Instant, from: Peer, bytes: &[u8], sigcomp: bool) {
        self.metrics.messages_in[0] += 1;
        self.metrics.bytes_in[0] += bytes.len() as u64;
        if !sigcomp {
            self.sip_from_terminal(now, from, bytes, None);
            return;
        }
        // Charged the worst case before it runs (RFC 3320 §8.6), and its
        // cycles or measured time after ([`crate::defence`]).
        let worst = (8 * bytes.len() as u64 + 1000) * self.cpb;
        let admitted = match self.budgets.admit(now, from.addr.ip(), self.standing(&from), worst) {
            Ok(a) => a,
            Err(r) => {
                self.metrics.refused[r.index()] += 1;
                return;
            }
        };
        let transport = match from.transport {
            SipTransport::Udp => Transport::Message,
            SipTransport::Tcp => Transport::Stream,
        };
        let started = Instant::now();
        let received = self.endpoint.receive(bytes, transport);
        let took = started.elapsed();
        let cycles = match &received {
            Ok(Received::Message(incoming)) => incoming.cycles(),
            Ok(Received::Nack(_)) => 0,
            Err(e) => e.failure.cycles,
        };
        self.budgets.settle(admitted, cycles, took);
        match received {
            Ok(Received::Message(incoming)) => {
                self.metrics.sigcomp_bytes_in += bytes.len() as u64;
                self.metrics.sigcomp_sip_bytes_in += incoming.message().len() as u64;
                let sip = incoming.message().to_vec();
                self.sip_from_terminal(now, from, &sip, Some(incoming));
            }
            // The endpoint has acted on it (its compressor fell back to
            // what the terminal still has) and counted it.
            Ok(Received::Nack(nack)) => self.nacked(now, from, nack),
            Err(e) => {
                if let Some(nack) = e.nack {
                    self.send(Side::Terminal, from, nack, true);
                }
                tracing::debug!(from = %from.addr, reason = e.failure.reason.name(), "decompression failed");
            }
        }
    }

    /// A terminal NACKed a message of ours. Over UDP the SIP layer
    /// recovers: the request or response that was lost is retransmitted
    /// (RFC 3261 §17.1.1.2 Timer A, §17.1.2.2 Timer E) and compressed
    /// anew then. Over TCP nothing is retransmitted (those timers run only
    /// on unreliable transports), so the proxy compresses the message anew
    /// in the compartment, after the endpoint's fallback, and sends it
    /// again, once: the copy sent again is not kept, so a second NACK ends
    /// it (RFC 4077 §2.1 leaves recovery to the compressor).
    fn nacked(&mut self, now: Instant, from: Peer, nack: ReceivedNack) {
        if from.transport != SipTransport::Tcp {
            return;
        }
        let (Some(c), Some(report), Some(conn)) = (nack.compartment, nack.report, from.conn) else { return };
        let Some(sent) = self.sent_over_tcp.get_mut(&conn) else { return };
        let sha1 = report.nack.message_sha1;
        let Some(i) = sent.iter().position(|s| s.sha1 == sha1 && s.compartment == c) else { return };
        let Some(s) = sent.remove(i) else { return };
        self.metrics.nack_resends += 1;
        match self.endpoint.compress(now, c, &s.sip) {
            Ok(out) => {
                self.compartments.to_terminal(c, out.uploaded_bytecode);
                self.metrics.sigcomp_sip_bytes_out += s.sip.len() as u64;
                self.metrics.sigcomp_bytes_out += out.message.len() as u64;
                self.send(Side::Terminal, s.to, out.message, true);
            }
            Err(e) => {
                // RFC 5049 §4: plain SIP is always understood.
                tracing::warn!(error = %e, "compression after a NACK failed; sending plain SIP");
                self.metrics.compress_failures += 1;
                self.send(Side::Terminal, s.to, s.sip, false);
            }
        }
    }

    /// Keeps the state and feedback of a SigComp message from a terminal
    /// in `compartment` when `accept`, else drops them (RFC 5049 §6).
    fn decide(&mut self, now: Instant, incoming: Option<Incoming>, compartment: Option<CompartmentId>, accept: bool) {
        let Some(incoming) = incoming else { return };
        let uploaded = incoming.uploaded_bytecode();
        match compartment.filter(|_| accept) {
            Some(c) => {
                self.metrics.states_accepted += 1;
                self.endpoint.accept(now, incoming, c);
            }
            None => {
                self.metrics.states_declined += 1;
                self.endpoint.discard(incoming);
            }
        }
        if let Some(c) = compartment {
            self.compartments.from_terminal(c, uploaded);
        }
    }

    fn sip_from_terminal(&mut self, now: Instant, from: Peer, bytes: &[u8], incoming: Option<Incoming>) {
        let sigcomp = incoming.is_some();
        let Ok(msg) = Message::parse(bytes) else {
            self.metrics.bad_sip += 1;
            self.decide(now, incoming, None, false);
            return;
        };
        let token = self.token(now, from, sigcomp);
        if msg.is_request() {
            self.request_from_terminal(now, from, &msg, token, incoming);
        } else {
            // A response of the terminal's (it is the UAS) to a request of
            // the proxy's, whose Via named the proxy by its sigcomp-id: the
            // terminal filed the request, and so its response, under that
            // name (RFC 5049 §6.1, "Incoming requests", "Outgoing
            // responses").
            let terminal = self.terminal(None, token);
            let c = sigcomp.then(|| self.compartment_for(&terminal, self.our_name));
            let accept = self.compartments.is_registered(&terminal);
            if accept {
                self.trust(token);
            }
            self.decide(now, incoming, c, accept);
            self.response_toward_upstream(&msg);
        }
    }

    fn request_from_terminal(
        &mut self,
        now: Instant,
        from: Peer,
        msg: &Message<'_>,
        token: u64,
        incoming: Option<Incoming>,
    ) {
        if msg.top_via().is_err() {
            self.metrics.bad_sip += 1;
            self.decide(now, incoming, None, false);
            return;
        }
        // RFC 5049 §6.1: the terminal is named by the Via's sigcomp-id,
        // else the Contact's +sip.instance, else its flow; it filed this
        // request under the name of the URI it sent it to.
        let terminal = self.terminal(sigkit_sip::compartment::sigcomp_id(msg), token);
        let name = ProxyName::of_request(msg).unwrap_or(self.our_name);
        let compartment = incoming.is_some().then(|| self.compartment_for(&terminal, name));
        let registered = self.compartments.is_registered(&terminal);
        if registered {
            self.trust(token);
        }
        let app = App { token, terminal, name };
        let method = msg.method().unwrap_or("");
        if self.stateful && self.absorbed(now, msg, method) {
            self.decide(now, incoming, compartment, registered);
            return;
        }
        // §16.10: a CANCEL of an INVITE the proxy holds a transaction for
        // is answered here and cancels the proxy's own client transaction;
        // one that matches nothing is forwarded statelessly, below.
        if self.stateful && method == "CANCEL" {
            let branch = self.branch_for(msg);
            if self.transactions.get(&branch).is_some_and(|t| t.method == "INVITE") {
                self.decide(now, incoming, compartment, registered);
                self.cancel_invite(now, from, &app, msg, &branch);
                return;
            }
        }
        // Overload control sheds only requests that start something new
        // (out of dialog, not ACK or CANCEL).
        let sheddable = !matches!(method, "ACK" | "CANCEL") && !msg.to().is_ok_and(|t| t.tag().is_some());
        if self.overload.admit(now, sheddable) == Admission::Reject {
            let retry = self.overload.retry_after_s().to_string();
            let reply =
                build_response(msg, 503, "Service Unavailable", Some(&self.to_tag(msg)), &[("Retry-After", &retry)]);
            self.decide(now, incoming, compartment, false);
            if let Ok(reply) = reply {
                self.reply_to_terminal(now, from, &app, reply);
            }
            return;
        }
        let branch = self.branch_for(msg);
        let out = match self.edit_toward_upstream(msg, from, token, name, &branch) {
            Ok(out) => out,
            Err(err) => {
                self.metrics.bad_sip += 1;
                let reply = matches!(err, EditError::TooManyHops).then(|| self.too_many_hops(msg)).flatten();
                self.decide(now, incoming, compartment, false);
                if let Some(reply) = reply {
                    self.reply_to_terminal(now, from, &app, reply);
                }
                return;
            }
        };
        // RFC 5049 §6: a registered terminal's state is kept; an
        // unregistered terminal's REGISTER's waits for the registrar's 2xx;
        // nobody else's is kept. Every REGISTER is held for its answer,
        // which may end or renew the registration.
        if method == "REGISTER" {
            self.hold_register(now, from, msg, &app, &branch, incoming, compartment, registered);
        } else {
            self.decide(now, incoming, compartment, registered);
        }
        if method != "ACK" {
            self.overload.forwarded(now, &branch);
        }
        if self.stateful && !matches!(method, "ACK" | "CANCEL") {
            self.start_transaction(now, msg, from, app, branch, &out);
        }
        let to = self.upstream_peer();
        self.send(Side::Upstream, to, out, false);
    }

    /// `msg` as it goes to the upstream (RFC 3261 §16.6): `received` and
    /// `rport` on the terminal's Via (§18.2.1, RFC 3581 §4), the Route
    /// entries naming the proxy consumed, the proxy's Via (with overload
    /// control's parameter and, so that the response comes back in the
    /// compartment of this name, the name's), Path on a REGISTER (RFC 3327)
    /// or a double Record-Route on a dialog-forming request, and
    /// Max-Forwards decremented.
    fn edit_toward_upstream(
        &self,
        msg: &Message<'_>,
        from: Peer,
        token: u64,
        name: ProxyName,
        branch: &str,
    ) -> Result<Vec<u8>, EditError> {
        let method = msg.method().unwrap_or("");
        let up = self.addrs.upstream;
        let mut via = format_via("UDP", &self.host_of(up), Some(up.port()), branch, None, false);
        via.push_str(self.overload.via_param());
        via.push_str(&name.via_param());
        let mut e = Editor::new(msg);
        e.fill_top_via(from.addr)?;
        e.remove_leading_routes_if(|na| na.sip_uri().is_ok_and(|u| self.is_ours(u.host, u.port)))?;
        e.prepend_via(&via)?;
        if method == "REGISTER" {
            e.prepend_path(&self.upstream_uri(token))?;
        } else if is_dialog_forming(method) && !msg.to().is_ok_and(|t| t.tag().is_some()) {
            // Double Record-Route: the upstream's side on top, the
            // terminal's below (the terminal, as UAC, uses the reverse
            // order).
            e.prepend_record_route(&self.upstream_uri(token))?;
            e.prepend_record_route(&self.terminal_uri(token))?;
        }
        e.decrement_max_forwards()?;
        Ok(e.emit())
    }

    /// A REGISTER from a terminal, forwarded: held for its final answer,
    /// which may start, renew or end the registration. RFC 5049 §6: a
    /// registered terminal's state is kept at once; an unregistered
    /// terminal's waits for the registrar's 2xx; past the caps of
    /// [`crate::pending`] the REGISTER goes on and its state is declined.
    #[allow(clippy::too_many_arguments)]
    fn hold_register(
        &mut self,
        now: Instant,
        from: Peer,
        msg: &Message<'_>,
        app: &App,
        branch: &str,
        incoming: Option<Incoming>,
        compartment: Option<CompartmentId>,
        registered: bool,
    ) {
        if let Some(old) = self.held.remove(branch) {
            self.decide(now, old.incoming, old.compartment, false);
        }
        let contacts = match msg.contacts() {
            Ok(sigkit_sip::Contacts::List(list)) => Some(
                list.iter()
                    .take(MAX_CONTACTS)
                    .filter_map(|c| c.sip_uri().ok())
                    .map(|u| (u.user.unwrap_or("").to_string(), u.host.to_ascii_lowercase(), u.port))
                    .collect(),
            ),
            Ok(sigkit_sip::Contacts::Star) => None,
            // Unreadable: the registrar judges it; nothing changes here.
            Err(_) => Some(Vec::new()),
        };
        let source = from.addr.ip();
        if self.held.admits(source).is_err() {
            self.decide(now, incoming, compartment, registered);
            return;
        }
        let incoming = match incoming {
            Some(i) if registered => {
                self.decide(now, Some(i), compartment, true);
                None
            }
            Some(i) if !self.held.fits(&i) => {
                self.decide(now, Some(i), compartment, false);
                None
            }
            other => other,
        };
        let deadline = now + TRANSACTION_TIMEOUT;
        let token = app.token;
        let terminal = app.terminal.clone();
        let held = HeldRegister { incoming, compartment, terminal, token, contacts, deadline, source };
        if let Some(old) = self.held.insert(branch.to_string(), held) {
            self.decide(now, old.incoming, old.compartment, false);
        }
    }

    /// The flow token of the leading Route entries that name the proxy
    /// (RFC 3261 §16.4): one this instance wrote, or another's.
    fn our_route_token(&self, msg: &Message<'_>) -> RouteToken {
        let Ok(routes) = msg.routes() else { return RouteToken::Absent };
        let ours = routes.iter().filter_map(|na| na.sip_uri().ok()).take_while(|u| self.is_ours(u.host, u.port));
        match ours.filter_map(|u| u.user.filter(|u| u.starts_with("t."))).next() {
            None => RouteToken::Absent,
            Some(user) => match parse_flow_token(user) {
                Some((instance, t)) if instance == self.shard.instance => RouteToken::Own(t),
                _ => RouteToken::Foreign,
            },
        }
    }

    /// A response going to the upstream: the proxy's Via off, the rest as is.
    fn response_toward_upstream(&mut self, msg: &Message<'_>) {
        let mut vias = msg.values(HeaderName::Via);
        // Ours on top, and below it the Via the response goes back to.
        let (Some(ours), Some(_)) = (vias.next(), vias.next()) else {
            self.metrics.undeliverable += 1;
            return;
        };
        if !ours.value_str().is_ok_and(|v| v.contains(BRANCH_PREFIX)) {
            self.metrics.undeliverable += 1;
            return;
        }
        let mut e = Editor::new(msg);
        if e.remove_top_via().is_err() {
            self.metrics.undeliverable += 1;
            return;
        }
        let out = e.emit();
        let to = self.upstream_peer();
        self.send(Side::Upstream, to, out, false);
    }

    /// A message from the upstream server (plain SIP).
    /// (`_from` is the configured upstream: where a message goes next is
    /// read from the message itself.)
    pub fn from_upstream(&mut self, now: Instant, _from: Peer, bytes: &[u8]) {
        match Message::parse(bytes) {
            Ok(msg) => self.upstream_message(now, &msg),
            Err(_) => {
                self.metrics.messages_in[1] += 1;
                self.metrics.bytes_in[1] += bytes.len() as u64;
                self.metrics.bad_sip += 1;
            }
        }
    }

    /// [`Proxy::from_upstream`] of a message already parsed (the runtime
    /// parses it once, to find its shard).
    pub fn upstream_message(&mut self, now: Instant, msg: &Message<'_>) {
        self.metrics.messages_in[1] += 1;
        self.metrics.bytes_in[1] += msg.input().len() as u64;
        if msg.is_request() {
            self.request_toward_terminal(now, msg);
        } else {
            self.response_toward_terminal(now, msg);
        }
    }

    /// The next time [`Proxy::handle_timeout`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let held = self.held.next_deadline();
        let reg = self.compartments.next_expiry();
        let flow = self.flow_deadlines.peek().map(|Reverse((at, _))| *at);
        [held, reg, flow, self.endpoint.poll_timeout(), self.overload.poll_timeout(), self.transactions_due]
            .into_iter()
            .flatten()
            .min()
    }

    /// Ends what has timed out: held REGISTER states (no final answer),
    /// expired registrations' compartments, idle compartments.
    pub fn handle_timeout(&mut self, now: Instant) {
        for h in self.held.expire(now) {
            self.decide(now, h.incoming, h.compartment, false);
        }
        for terminal in self.compartments.expire(now) {
            for c in self.compartments.of(&terminal) {
                self.close_compartment(c);
            }
        }
        for c in self.endpoint.handle_timeout(now) {
            self.forget_compartment(c);
        }
        self.expire_flows(now);
        self.overload.handle_timeout(now);
        self.run_transactions(now);
    }

    /// Overload control's state (handler counters, detector).
    pub fn overload(&self) -> OverloadMetrics {
        self.overload.metrics()
    }

    fn close_compartment(&mut self, c: CompartmentId) {
        self.endpoint.close_compartment(c);
        self.forget_compartment(c);
    }

    fn forget_compartment(&mut self, c: CompartmentId) {
        self.compartments.forget(c);
    }

    /// The metrics in the Prometheus text exposition format.
    pub fn metrics_text(&self) -> String {
        metrics_text(&[self])
    }

    /// What the metrics of this proxy (or shard) read now.
    pub fn snapshot(&self) -> Snapshot {
        let identifiers: Vec<usize> =
            self.flows.values().filter_map(|f| f.terminal_id.as_ref().map(String::len)).collect();
        Snapshot {
            proxy: self.metrics.clone(),
            endpoint: self.endpoint.metrics(),
            registered: self.compartments.registered_count(),
            uploads: self.compartments.uploads(),
            reuploading: self.compartments.reuploading(),
            overload: self.overload.metrics(),
            transactions: self.transactions.len(),
            pending_registers: self.held.len(),
            pending_register_bytes: self.held.bytes(),
            pending_state_bytes: self.held.state_bytes(),
            pending_refused: self.held.refused(),
            flows: self.flows.len(),
            flow_identifiers: identifiers.len(),
            flow_identifier_bytes: identifiers.iter().sum(),
            budgeted_sources: self.budgets.sources(),
            decompression: <[Duration; 2]>::from(self.budgets.spent()),
        }
    }
}

/// The metrics of several shards, added up, in the Prometheus text
/// exposition format ([`crate::metrics`]).
pub fn metrics_text(shards: &[&Proxy]) -> String {
    let snapshots: Vec<Snapshot> = shards.iter().map(|p| p.snapshot()).collect();
    crate::metrics::text(&snapshots)
}

#[cfg(test)]
mod tests;
