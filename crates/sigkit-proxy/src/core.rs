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

/// A random 48-bit identifier of this proxy instance for its flow tokens
/// (the standard library's per-process random hash keys, mixed with the
/// time and the process id).
pub fn new_instance_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    h.write_u128(since.as_nanos());
    h.write_u32(std::process::id());
    h.finish() & 0xFFFF_FFFF_FFFF
}

/// A flow token's instance and number: `t.I.N`, `I` 12 hex digits.
fn parse_flow_token(user: &str) -> Option<(u64, u64)> {
    let (instance, n) = user.strip_prefix("t.")?.split_once('.')?;
    Some((u64::from_str_radix(instance, 16).ok()?, n.parse().ok()?))
}

/// Timer F (64 × T1, RFC 3261 §17.1.2.2): no final response by then, none
/// comes.
const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(32);
/// Prefix of the branches the proxy writes (RFC 3261 §8.1.1.7 cookie).
const BRANCH_PREFIX: &str = "z9hG4bKsk";

/// Which of several proxies sharing the sockets this one is. Each owns
/// the terminals whose address hashes to it; what comes from the upstream
/// finds its shard in the proxy's own Via branch (responses) or flow token
/// (requests), which carry the shard's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
    /// The instance all shards of one process share ([`new_instance_id`]),
    /// written in their flow tokens.
    pub instance: u64,
}

impl Shard {
    /// The shard of a terminal at `addr` (its transport address: every
    /// message of a flow lands on one shard).
    pub fn of_terminal(addr: SocketAddr, count: u32) -> u32 {
        let ip = match addr.ip() {
            IpAddr::V4(a) => u64::from(u32::from(a)),
            IpAddr::V6(a) => {
                let o = a.octets();
                u64::from_be_bytes([o[8], o[9], o[10], o[11], o[12], o[13], o[14], o[15]])
            }
        };
        let h = (ip << 16 | u64::from(addr.port())).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> 32) % u64::from(count.max(1))) as u32
    }

    /// The shard a message from the upstream belongs to: the index in the
    /// proxy's Via branch of a response, or in the flow token of the first
    /// Route entry of a request if instance `instance` wrote it; else the
    /// shard of the Request-URI's address (a registered contact); `None`
    /// for what is not SIP.
    pub fn of_upstream_message(bytes: &[u8], count: u32, instance: u64) -> Option<u32> {
        Some(Shard::of_upstream(&Message::parse(bytes).ok()?, count, instance))
    }

    /// [`Shard::of_upstream_message`] of a parsed message; shard 0 when
    /// the message names none.
    pub fn of_upstream(msg: &Message<'_>, count: u32, instance: u64) -> u32 {
        Shard::named_by_upstream(msg, count.max(1), instance).unwrap_or(0)
    }

    fn named_by_upstream(msg: &Message<'_>, count: u32, instance: u64) -> Option<u32> {
        if !msg.is_request() {
            let via = msg.top_via().ok()?;
            let rest = via.branch()?.strip_prefix(BRANCH_PREFIX)?;
            let index: u32 = rest.split('.').next()?.parse().ok()?;
            return Some(index % count);
        }
        let routed = msg.routes().ok().and_then(|r| {
            let uri = r.first()?.sip_uri().ok()?;
            let (written_by, token) = parse_flow_token(uri.user?)?;
            (written_by == instance).then_some((token % u64::from(count)) as u32)
        });
        routed.or_else(|| {
            let uri = msg.request_uri().ok()?;
            Some(Shard::of_terminal(socket_addr(uri.host, uri.port.unwrap_or(5060))?, count))
        })
    }
}

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
        let endpoint = Endpoint::new(endpoint_config).map_err(|e| ConfigError::Invalid(format!("sigcomp: {e}")))?;
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

    /// The flow token of `peer`, made on first sight.
    fn token(&mut self, now: Instant, peer: Peer, sigcomp: bool) -> u64 {
        if let Some(&t) = self.flow_tokens.get(&peer) {
            if let Some(f) = self.flows.get_mut(&t) {
                f.sigcomp |= sigcomp;
                f.last_seen = now;
            }
            return t;
        }
        while self.flows.len() >= self.max_flows {
            if !self.evict_flow() {
                break;
            }
        }
        let t = self.next_token * u64::from(self.shard.count.max(1)) + u64::from(self.shard.index);
        self.next_token += 1;
        self.flow_tokens.insert(peer, t);
        self.by_addr.insert((peer.transport, peer.addr), t);
        if let Some(c) = peer.conn {
            self.by_conn.insert(c, peer);
        }
        let flow = Flow { peer, sigcomp, terminal_id: None, last_seen: now, registered_until: None, trusted: false };
        self.flow_deadlines.push(Reverse((self.flow_deadline(&flow), t)));
        self.flows.insert(t, flow);
        // Entries of flows gone (TCP connections closed) wait for their
        // time in the heap; rebuilt, it holds only live flows again.
        if self.flow_deadlines.len() > 2 * self.max_flows.max(self.flows.len()) + 64 {
            let live = self.flows.iter().map(|(t, f)| Reverse((self.flow_deadline(f), *t))).collect();
            self.flow_deadlines = live;
        }
        t
    }

    /// When `f` may be forgotten: idle long enough, and not registered.
    fn flow_deadline(&self, f: &Flow) -> Instant {
        let idle = f.last_seen + self.flow_idle;
        f.registered_until.map_or(idle, |r| r.max(idle))
    }

    /// Forgets the flow whose deadline comes first; false if none is left.
    fn evict_flow(&mut self) -> bool {
        while let Some(Reverse((at, t))) = self.flow_deadlines.pop() {
            let Some(f) = self.flows.get(&t) else { continue };
            let deadline = self.flow_deadline(f);
            if deadline > at {
                self.flow_deadlines.push(Reverse((deadline, t)));
                continue;
            }
            self.remove_flow(t);
            return true;
        }
        false
    }

    /// Forgets the flows past their deadline.
    fn expire_flows(&mut self, now: Instant) {
        while let Some(&Reverse((at, t))) = self.flow_deadlines.peek() {
            if at > now {
                break;
            }
            self.flow_deadlines.pop();
            let Some(f) = self.flows.get(&t) else { continue };
            let deadline = self.flow_deadline(f);
            if deadline > now {
                self.flow_deadlines.push(Reverse((deadline, t)));
            } else {
                self.remove_flow(t);
            }
        }
    }

    /// Forgets flow `t`, and the compartments and registration of the
    /// terminal it named if nothing else can name that terminal (it has no
    /// `sigcomp-id`).
    fn remove_flow(&mut self, t: u64) {
        let Some(f) = self.flows.remove(&t) else { return };
        let p = f.peer;
        if self.flow_tokens.get(&p) == Some(&t) {
            self.flow_tokens.remove(&p);
        }
        if self.by_addr.get(&(p.transport, p.addr)) == Some(&t) {
            self.by_addr.remove(&(p.transport, p.addr));
        }
        if let Some(conn) = p.conn {
            if self.by_conn.get(&conn) == Some(&p) {
                self.by_conn.remove(&conn);
            }
        }
        let legacy = Terminal::Flow(t);
        self.compartments.unregister(&legacy);
        for c in self.compartments.of(&legacy) {
            self.close_compartment(c);
        }
    }

    /// Whether the proxy knows where a SigComp message comes from: its
    /// flow had a message's state accepted, or carries a registration.
    fn standing(&self, from: &Peer) -> Standing {
        let known = self
            .flow_tokens
            .get(from)
            .and_then(|t| self.flows.get(t))
            .is_some_and(|f| f.trusted || f.registered_until.is_some());
        if known {
            Standing::Known
        } else {
            Standing::Unknown
        }
    }

    /// Marks flow `token` as a registered terminal's: its SigComp messages
    /// come first when decompression time is short ([`Standing`]).
    fn trust(&mut self, token: u64) {
        if let Some(f) = self.flows.get_mut(&token) {
            f.trusted = true;
        }
    }

    /// Terminal flows remembered.
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// Terminals with a live registration.
    pub fn registered_count(&self) -> usize {
        self.compartments.registered_count()
    }

    /// The terminal a message on flow `token` comes from or goes to: the
    /// SigComp identifier the message names (RFC 5049 §6.1), which the
    /// flow then remembers; else the one the flow learned; else the flow.
    fn terminal(&mut self, sigcomp_id: Option<&str>, token: u64) -> Terminal {
        let sigcomp_id = sigcomp_id.filter(|id| id.len() <= MAX_IDENTIFIER_LEN);
        let learned = self.flows.get_mut(&token).map(|f| &mut f.terminal_id);
        match (sigcomp_id, learned) {
            (Some(id), learned) => {
                let key = sigkit_sip::compartment::identifier_key(id);
                if let Some(l) = learned {
                    if l.as_deref() != Some(key.as_str()) {
                        *l = Some(key.clone());
                    }
                }
                Terminal::Id(key)
            }
            (None, Some(Some(id))) => Terminal::Id(id.clone()),
            (None, _) => Terminal::Flow(token),
        }
    }

    /// The compartment of `terminal` under `name` ([`crate::compartments`]);
    /// past the terminal's cap of names, the one it used longest ago
    /// closes.
    fn compartment_for(&mut self, terminal: &Terminal, name: ProxyName) -> CompartmentId {
        let (c, over) = self.compartments.get(terminal, name);
        if let Some(old) = over {
            self.close_compartment(old);
        }
        c
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
        let up = self.addrs.upstream;
        let mut via = format_via("UDP", &self.host_of(up), Some(up.port()), &branch, None, false);
        via.push_str(self.overload.via_param());
        // The response goes back in the compartment of this name.
        via.push_str(&name.via_param());
        let out = {
            let mut e = Editor::new(msg);
            let edited = (|| -> Result<(), EditError> {
                // RFC 3261 §18.2.1, RFC 3581 §4: where the request came from.
                e.fill_top_via(from.addr)?;
                e.remove_leading_routes_if(|na| na.sip_uri().is_ok_and(|u| self.is_ours(u.host, u.port)))?;
                e.prepend_via(&via)?;
                if method == "REGISTER" {
                    e.prepend_path(&self.upstream_uri(token))?;
                } else if is_dialog_forming(method) && !msg.to().is_ok_and(|t| t.tag().is_some()) {
                    // Double Record-Route: the upstream's side on top, the
                    // terminal's below (the terminal, as UAC, uses the
                    // reverse order).
                    e.prepend_record_route(&self.upstream_uri(token))?;
                    e.prepend_record_route(&self.terminal_uri(token))?;
                }
                e.decrement_max_forwards()?;
                Ok(())
            })();
            match edited {
                Ok(()) => e.emit(),
                Err(err) => {
                    self.metrics.bad_sip += 1;
                    let reply = matches!(err, EditError::TooManyHops).then(|| self.too_many_hops(msg)).flatten();
                    self.decide(now, incoming, compartment, false);
                    if let Some(reply) = reply {
                        self.reply_to_terminal(now, from, &app, reply);
                    }
                    return;
                }
            }
        };
        // RFC 5049 §6: a registered terminal's state is kept; an
        // unregistered terminal's REGISTER's waits for the registrar's 2xx;
        // nobody else's is kept. Every REGISTER is held for its answer,
        // which may end or renew the registration.
        if method == "REGISTER" {
            if let Some(old) = self.held.remove(&branch) {
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
            // Held within the caps ([`crate::pending`]); past them the
            // REGISTER goes on and its state is declined.
            let source = from.addr.ip();
            if self.held.admits(source).is_ok() {
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
                let terminal = app.terminal.clone();
                let held = HeldRegister { incoming, compartment, terminal, token, contacts, deadline, source };
                if let Some(old) = self.held.insert(branch.clone(), held) {
                    self.decide(now, old.incoming, old.compartment, false);
                }
            } else {
                self.decide(now, incoming, compartment, registered);
            }
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

    /// Stateful mode: whether `msg` from a terminal belongs to a
    /// transaction the proxy has (RFC 3261 §17.2.3), and is absorbed
    /// there: a retransmitted request, answered with the last response
    /// sent (§17.2.1, §17.2.2), or the ACK of a non-2xx final response,
    /// which ends at the proxy (§16.7: the proxy's client transaction
    /// acknowledged the upstream itself).
    fn absorbed(&mut self, now: Instant, msg: &Message<'_>, method: &str) -> bool {
        if method == "CANCEL" {
            return false;
        }
        let branch = self.branch_for(msg);
        let Some(t) = self.transactions.get_mut(&branch) else { return false };
        let resend = if method == "ACK" {
            // The ACK of a 2xx is a request of its own (another branch,
            // §17.1.1.3), so only a non-2xx one should find the INVITE
            // here; one that reuses the INVITE's branch anyway goes on.
            if t.method != "INVITE" || !matches!(t.server.state(), State::Completed | State::Confirmed) {
                return false;
            }
            t.server.on_request(now, true);
            false
        } else if t.method == method {
            self.metrics.absorbed_requests += 1;
            t.server.on_request(now, false).retransmit
        } else {
            return false;
        };
        let at = t.next_timeout();
        let again = resend.then(|| (t.last_response.clone(), t.to, t.app.clone(), t.sigcomp));
        self.transaction_due_at(at);
        if let Some((Some(r), to, app, sigcomp)) = again {
            self.deliver_to_terminal(now, to, &app, sigcomp, r);
        }
        true
    }

    /// The timers of a new client transaction toward the upstream, which
    /// is reached over UDP: its T1 is overload control's (H1 raises it for
    /// new transactions).
    fn upstream_timers(&self, now: Instant) -> Timers {
        let t1 = self.overload.t1(now);
        Timers { t1, t2: Timers::default().t2.max(t1), ..Timers::default() }
    }

    /// Makes the stateful mode's timers run no later than `at`.
    fn transaction_due_at(&mut self, at: Instant) {
        self.transactions_due = Some(self.transactions_due.map_or(at, |d| d.min(at)));
    }

    /// Stateful mode: a terminal's CANCEL of the INVITE transaction
    /// `branch` (RFC 3261 §16.10). The proxy answers it 200 itself, and
    /// cancels its client transaction toward the upstream: at once if that
    /// has a provisional response, else when one comes (§9.1). The 487 the
    /// upstream then sends ends the INVITE as any final response does. A
    /// retransmitted CANCEL gets the 200 again and nothing more.
    fn cancel_invite(&mut self, now: Instant, from: Peer, app: &App, msg: &Message<'_>, branch: &str) {
        if let Ok(ok) = build_response(msg, 200, "OK", Some(&self.to_tag(msg)), &[]) {
            self.reply_to_terminal(now, from, app, ok);
        }
        let Some(t) = self.transactions.get_mut(branch) else { return };
        // Already cancelled, or answered finally: nothing left to cancel
        // (§9.1: a CANCEL after the final response has no effect).
        if t.cancel.is_some() || t.server.last_code().is_some_and(|c| c >= 200) {
            return;
        }
        let Ok(request) = Message::parse(&t.forwarded).and_then(|invite| cancel_for(&invite)) else { return };
        t.cancel = Some(Cancel { request, client: None });
        self.metrics.cancelled_invites += 1;
        if t.client.state() == State::Proceeding {
            self.start_cancel(now, branch);
        }
    }

    /// Sends the CANCEL of transaction `branch` upstream in a non-INVITE
    /// client transaction of its own (§9.1), with the T1 the INVITE's has.
    fn start_cancel(&mut self, now: Instant, branch: &str) {
        let timers = self.upstream_timers(now);
        let Some(c) = self.transactions.get_mut(branch).and_then(|t| t.cancel.as_mut()) else { return };
        if c.client.is_some() {
            return;
        }
        let client = ClientTransaction::new(false, Reliability::Unreliable, timers, now);
        let at = client.poll_timeout();
        c.client = Some(client);
        let request = c.request.clone();
        if let Some(at) = at {
            self.transaction_due_at(at);
        }
        let up = self.upstream_peer();
        self.send(Side::Upstream, up, request, false);
    }

    /// Stateful mode: the server and client transactions of a new request
    /// forwarded as `forwarded`; an INVITE is answered 100 Trying at once
    /// (RFC 3261 §16.2: a stateful proxy that will not answer within
    /// 200 ms; §17.2.1, so the terminal stops retransmitting).
    fn start_transaction(
        &mut self,
        now: Instant,
        msg: &Message<'_>,
        from: Peer,
        app: App,
        branch: String,
        forwarded: &[u8],
    ) {
        let method = msg.method().unwrap_or("").to_string();
        let invite = method == "INVITE";
        let reliability = match from.transport {
            SipTransport::Udp => Reliability::Unreliable,
            SipTransport::Tcp => Reliability::Reliable,
        };
        let mut server = ServerTransaction::new(invite, reliability, Timers::default());
        let timers = self.upstream_timers(now);
        let client = ClientTransaction::new(invite, Reliability::Unreliable, timers, now);
        let sigcomp = self.flows.get(&app.token).is_some_and(|f| f.sigcomp);
        let mut last_response = None;
        if invite {
            if let Ok(trying) = build_response(msg, 100, "Trying", None, &[]) {
                server.send_response(now, 100);
                last_response = Some(trying.clone());
                self.deliver_to_terminal(now, from, &app, sigcomp, trying);
            }
        }
        let t = Transaction {
            method,
            server,
            client,
            forwarded: forwarded.to_vec(),
            received: msg.input().to_vec(),
            to: from,
            app,
            sigcomp,
            last_response,
            timer_c: now + TIMER_C,
            cancel: None,
        };
        let at = t.next_timeout();
        self.transaction_due_at(at);
        self.metrics.transactions += 1;
        self.transactions.insert(branch, t);
    }

    /// Stateful mode: what a response from the upstream does to its
    /// transaction. False when it ends there: a retransmission of a final
    /// response (acknowledged again if it is a non-2xx one to INVITE), or
    /// a 100 Trying (RFC 3261 §16.7 step 3: not forwarded). True when it
    /// goes on to the terminal.
    fn response_in_transaction(&mut self, now: Instant, branch: &str, msg: &Message<'_>, code: u16) -> bool {
        let Some(t) = self.transactions.get_mut(branch) else { return true };
        if msg.cseq().is_ok_and(|c| c.method == "CANCEL") {
            // A response to the proxy's own CANCEL ends at its client
            // transaction: the terminal had the proxy's 200 (§16.10).
            let Some(client) = t.cancel.as_mut().and_then(|c| c.client.as_mut()) else { return true };
            client.on_response(now, code);
            let at = t.next_timeout();
            self.transaction_due_at(at);
            self.metrics.absorbed_responses += 1;
            return false;
        }
        if !msg.cseq().is_ok_and(|c| c.method == t.method) {
            return true;
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
        self.transaction_due_at(at);
        if let Some(ack) = ack {
            let up = self.upstream_peer();
            self.send(Side::Upstream, up, ack, false);
        }
        if cancel_now {
            self.start_cancel(now, branch);
        }
        if !o.deliver {
            self.metrics.absorbed_responses += 1;
        }
        forward
    }

    /// Stateful mode: the transactions' timers (RFC 3261 §17.1.1.2,
    /// §17.1.2.2, §17.2.1, §17.2.2): the request sent again to the
    /// upstream, the last response again to the terminal, 408 when the
    /// upstream never answered (§16.8: Timer B or F is a 408 from the
    /// client transaction; §16.7 step 6 then forwards it, the only
    /// response there is), and ended transactions dropped.
    fn run_transactions(&mut self, now: Instant) {
        if self.transactions_due.is_none_or(|d| now < d) {
            return;
        }
        let due: Vec<String> =
            self.transactions.iter().filter(|(_, t)| t.next_timeout() <= now).map(|(b, _)| b.clone()).collect();
        for branch in due {
            let Some(mut t) = self.transactions.remove(&branch) else { continue };
            let c = t.client.handle_timeout(now);
            if c.retransmit {
                self.metrics.upstream_retransmissions += 1;
                let up = self.upstream_peer();
                self.send(Side::Upstream, up, t.forwarded.clone(), false);
            }
            if let Some(cancel) = t.cancel.as_mut() {
                if cancel.client.as_mut().is_some_and(|c| c.handle_timeout(now).retransmit) {
                    self.metrics.upstream_retransmissions += 1;
                    let up = self.upstream_peer();
                    self.send(Side::Upstream, up, cancel.request.clone(), false);
                }
            }
            let unanswered = t.server.last_code().is_none_or(|c| c < 200);
            let timer_c = now >= t.timer_c;
            // §16.8: Timer C on an INVITE with a provisional response
            // cancels it upstream (once: the transaction ends here).
            if timer_c && t.client.state() == State::Proceeding && t.cancel.is_none() {
                if let Ok(cancel) = Message::parse(&t.forwarded).and_then(|invite| cancel_for(&invite)) {
                    let up = self.upstream_peer();
                    self.send(Side::Upstream, up, cancel, false);
                }
            }
            if (c.timed_out || timer_c) && unanswered {
                self.metrics.transaction_timeouts += 1;
                let reply = Message::parse(&t.received)
                    .ok()
                    .and_then(|m| build_response(&m, 408, "Request Timeout", Some(&self.to_tag(&m)), &[]).ok());
                if let Some(reply) = reply.filter(|_| t.server.send_response(now, 408)) {
                    t.last_response = Some(reply.clone());
                    self.deliver_to_terminal(now, t.to, &t.app, t.sigcomp, reply);
                }
            }
            if t.server.handle_timeout(now).retransmit {
                if let Some(r) = t.last_response.clone() {
                    self.deliver_to_terminal(now, t.to, &t.app, t.sigcomp, r);
                }
            }
            let over = timer_c || (t.client.is_terminated() && t.server.is_terminated());
            // A server transaction still in Trying or Proceeding whose
            // client transaction has ended without a final response: the
            // 408 above moved it on; one that cannot move is dropped.
            let stuck = t.client.is_terminated() && matches!(t.server.state(), State::Trying | State::Proceeding);
            if !over && !stuck {
                self.transactions.insert(branch, t);
            }
        }
        self.transactions_due = self.transactions.values().map(Transaction::next_timeout).min();
    }

    /// Transactions the stateful mode holds.
    pub fn transaction_count(&self) -> usize {
        self.transactions.len()
    }

    /// Whether the proxy is transaction stateful (`stateful`).
    pub fn is_stateful(&self) -> bool {
        self.stateful
    }

    /// The branch of the proxy's Via for `msg`: the same for a
    /// retransmission, another for another request (RFC 3261 §16.11).
    fn branch_for(&self, msg: &Message<'_>) -> String {
        let mut h = Sha1::new();
        if let Ok(v) = msg.top_via() {
            h.update(v.branch().unwrap_or(v.text).as_bytes());
            h.update(v.host.as_bytes());
        }
        h.update(msg.call_id().unwrap_or("").as_bytes());
        if let Ok(c) = msg.cseq() {
            h.update(c.number.to_be_bytes());
            // A CANCEL, and the ACK of a non-2xx final response, must
            // carry the branch the INVITE got (§16.11, §9.1); an ACK of
            // a 2xx has a new branch of its own at the terminal, so it
            // gets a new one here too.
            let method = if matches!(c.method, "ACK" | "CANCEL") { "INVITE" } else { c.method };
            h.update(method.as_bytes());
        }
        let d = h.finalize();
        let mut b = format!("{BRANCH_PREFIX}{}.", self.shard.index);
        for x in &d[..10] {
            let _ = write!(b, "{x:02x}");
        }
        b
    }

    /// A response of the proxy's own to a terminal's request.
    fn reply_to_terminal(&mut self, now: Instant, to: Peer, app: &App, reply: Vec<u8>) {
        let sigcomp = self.flows.get(&app.token).is_some_and(|f| f.sigcomp);
        self.deliver_to_terminal(now, to, app, sigcomp, reply);
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

    fn response_toward_terminal(&mut self, now: Instant, msg: &Message<'_>) {
        let mut vias = msg.values(HeaderName::Via);
        let Some(ours) = vias.next() else { return };
        let our_via = ours.value_str().ok().and_then(|t| sigkit_sip::Via::parse(t).ok());
        let Some(branch) =
            our_via.as_ref().and_then(|v| v.branch().filter(|b| b.starts_with(BRANCH_PREFIX)).map(str::to_string))
        else {
            self.metrics.undeliverable += 1;
            return;
        };
        let code = msg.status_code().unwrap_or(0);
        self.overload.response(now, &branch, code, our_via.as_ref());
        if self.stateful && !self.response_in_transaction(now, &branch, msg, code) {
            return;
        }
        // A removed registration's compartments close once this response,
        // compressed in one of them, is on its way.
        let mut deregistered = None;
        if code >= 200 {
            if let Some(held) = self.held.remove(&branch) {
                let ok = (200..300).contains(&code);
                if ok && self.register_ok(now, msg, &held) {
                    deregistered = Some(held.terminal.clone());
                }
                self.decide(now, held.incoming, held.compartment, ok);
            }
        }
        let Some(next) = vias.next().and_then(|v| v.value_str().ok()).and_then(|t| sigkit_sip::Via::parse(t).ok())
        else {
            self.metrics.undeliverable += 1;
            return;
        };
        let (host, port) = next.response_target();
        let Some(addr) = socket_addr(host, port.or(next.port).unwrap_or(5060)) else {
            self.metrics.undeliverable += 1;
            return;
        };
        let transport = if next.transport.eq_ignore_ascii_case("TCP") { SipTransport::Tcp } else { SipTransport::Udp };
        let sigcomp = next.is_sigcomp();
        let known = self.flow_by_addr(transport, addr);
        let Some((token, to)) = known.or_else(|| self.udp_flow_for_response(now, transport, addr, sigcomp)) else {
            self.metrics.undeliverable += 1;
            return;
        };
        // RFC 5049 §6.1: a response goes to the application that sent the
        // request (named by the sigcomp-id of its Via), in the compartment
        // of the name it sent the request to (carried in the proxy's Via).
        let terminal = self.terminal(next.sigcomp_id(), token);
        let name = our_via.as_ref().and_then(ProxyName::from_via).unwrap_or(self.our_name);
        let app = App { token, terminal, name };
        let mut e = Editor::new(msg);
        if e.remove_top_via().is_err() {
            self.metrics.undeliverable += 1;
            return;
        }
        let out = e.emit();
        if let Some(t) = self.transactions.get_mut(&branch) {
            t.last_response = Some(out.clone());
        }
        self.deliver_to_terminal(now, to, &app, sigcomp, out);
        if let Some(terminal) = deregistered {
            for c in self.compartments.of(&terminal) {
                self.close_compartment(c);
            }
        }
    }

    /// A flow for a response to a UDP terminal the proxy has none for: one
    /// it forgot (idle, or lost in a restart). Over UDP a response goes to
    /// the address its Via names (RFC 3261 §18.2.2), flow or none; it
    /// leaves from the proxy's first UDP socket toward terminals.
    fn udp_flow_for_response(
        &mut self,
        now: Instant,
        transport: SipTransport,
        addr: SocketAddr,
        sigcomp: bool,
    ) -> Option<(u64, Peer)> {
        if transport != SipTransport::Udp {
            return None;
        }
        let local = self.addrs.terminal.iter().find(|(t, _)| *t == SipTransport::Udp).map(|(_, a)| *a)?;
        let peer = Peer { transport, addr, local: Some(local), conn: None };
        Some((self.token(now, peer, sigcomp), peer))
    }

    /// A 2xx to a REGISTER: the terminal's compartment and flow live until
    /// its bindings expire (RFC 5049 §6.5). The 2xx lists every binding of
    /// the address of record (RFC 3261 §10.3 step 8); the terminal's are
    /// those its request named, and when none is left its registration has
    /// ended. True when it has; a query (no Contact) changes nothing.
    fn register_ok(&mut self, now: Instant, msg: &Message<'_>, held: &HeldRegister) -> bool {
        let default = msg.expires().ok().flatten().unwrap_or(3600);
        let expires = match (&held.contacts, msg.contacts()) {
            (Some(mine), _) if mine.is_empty() => return false,
            (Some(mine), Ok(sigkit_sip::Contacts::List(list))) => list
                .iter()
                .filter(|c| {
                    c.sip_uri().is_ok_and(|u| {
                        mine.iter().any(|(user, host, port)| {
                            u.user.unwrap_or("") == user && u.host.eq_ignore_ascii_case(host) && u.port == *port
                        })
                    })
                })
                .map(|c| c.expires().unwrap_or(default))
                .max()
                .unwrap_or(0),
            _ => 0,
        };
        let until = (expires > 0).then(|| now + Duration::from_secs(u64::from(expires)));
        if let Some(f) = self.flows.get_mut(&held.token) {
            f.registered_until = until;
        }
        match until {
            Some(t) => {
                if !self.compartments.register(held.terminal.clone(), t, self.max_registrations) {
                    self.metrics.registrations_not_kept += 1;
                }
                false
            }
            None => {
                self.compartments.unregister(&held.terminal);
                true
            }
        }
    }

    fn flow_by_addr(&self, transport: SipTransport, addr: SocketAddr) -> Option<(u64, Peer)> {
        let t = *self.by_addr.get(&(transport, addr))?;
        Some((t, self.flows.get(&t)?.peer))
    }

    fn request_toward_terminal(&mut self, now: Instant, msg: &Message<'_>) {
        let routed = self.our_route_token(msg);
        // Without a live flow of ours in the token, the Request-URI names
        // the terminal's address (its registered Contact).
        let live = match routed {
            RouteToken::Own(t) => self.flows.get(&t).map(|f| (t, f.peer)),
            RouteToken::Absent | RouteToken::Foreign => None,
        };
        let target = live.or_else(|| {
            let uri = msg.request_uri().ok()?;
            let t = if uri.transport().is_some_and(|t| t.eq_ignore_ascii_case("tcp")) {
                SipTransport::Tcp
            } else {
                SipTransport::Udp
            };
            let addr = socket_addr(uri.host, uri.port.unwrap_or(5060))?;
            self.flow_by_addr(t, addr)
        });
        let Some((token, to)) = target else {
            self.metrics.undeliverable += 1;
            // RFC 5626 §5.3: a request for a flow that no longer exists
            // here (another instance's, or one forgotten) is answered 430
            // Flow Failed; one that names no flow, 404.
            let (code, reason) = match routed {
                RouteToken::Absent => (404, "Not Found"),
                RouteToken::Own(_) | RouteToken::Foreign => (430, "Flow Failed"),
            };
            if msg.method() != Some("ACK") {
                if let Ok(reply) = build_response(msg, code, reason, Some(&self.to_tag(msg)), &[]) {
                    let up = self.upstream_peer();
                    self.send(Side::Upstream, up, reply, false);
                }
            }
            return;
        };
        let sigcomp = self.flows.get(&token).is_some_and(|f| f.sigcomp);
        let method = msg.method().unwrap_or("");
        let local = self.terminal_addr(to.transport, to.local);
        let id = sigcomp.then_some(self.sigcomp_id.as_str());
        let via = format_via(
            to.transport.via_token(),
            &self.host_of(local),
            Some(local.port()),
            &self.branch_for(msg),
            id,
            false,
        );
        let mut e = Editor::new(msg);
        let edited = (|| -> Result<(), EditError> {
            e.remove_leading_routes_if(|na| na.sip_uri().is_ok_and(|u| self.is_ours(u.host, u.port)))?;
            e.prepend_via(&via)?;
            if is_dialog_forming(method) && !msg.to().is_ok_and(|t| t.tag().is_some()) {
                // The terminal is the UAS: its route set is the
                // Record-Route in order, so the terminal's side on top.
                e.prepend_record_route(&self.terminal_uri(token))?;
                e.prepend_record_route(&self.upstream_uri(token))?;
            }
            e.decrement_max_forwards()?;
            Ok(())
        })();
        match edited {
            Ok(()) => {
                let out = e.emit();
                // RFC 5049 §6.1: the terminal is named by the Request-URI's
                // sigcomp-id, else as its flow knows it; it files this
                // request under the sigcomp-id of the proxy's Via.
                let id = msg.request_uri().ok().and_then(|u| u.sigcomp_id());
                let terminal = self.terminal(id, token);
                let app = App { token, terminal, name: self.our_name };
                self.deliver_to_terminal(now, to, &app, sigcomp, out);
            }
            Err(err) => {
                self.metrics.bad_sip += 1;
                if let Some(reply) = matches!(err, EditError::TooManyHops).then(|| self.too_many_hops(msg)).flatten() {
                    let up = self.upstream_peer();
                    self.send(Side::Upstream, up, reply, false);
                }
            }
        }
    }

    /// 483 Too Many Hops (RFC 3261 §16.3 item 2).
    fn too_many_hops(&self, msg: &Message<'_>) -> Option<Vec<u8>> {
        sigkit_sip::proxy::too_many_hops(msg, &self.to_tag(msg)).ok()
    }

    /// A To tag for a response the proxy makes itself (RFC 3261 §8.2.6.2):
    /// the same for a retransmission of the request.
    fn to_tag(&self, msg: &Message<'_>) -> String {
        self.branch_for(msg).rsplit('.').next().unwrap_or("").to_string()
    }

    /// Sends `sip` to a terminal, compressed in the compartment of `app`
    /// where it speaks SigComp.
    fn deliver_to_terminal(&mut self, now: Instant, to: Peer, app: &App, sigcomp: bool, sip: Vec<u8>) {
        if let Some(f) = self.flows.get_mut(&app.token) {
            f.last_seen = now;
        }
        if !sigcomp {
            self.send(Side::Terminal, to, sip, false);
            return;
        }
        let compartment = self.compartment_for(&app.terminal, app.name);
        if self.endpoint.peer(compartment).is_none() {
            let transport = match to.transport {
                SipTransport::Udp => Transport::Message,
                SipTransport::Tcp => Transport::Stream,
            };
            self.endpoint.open_compartment(now, compartment, transport);
        }
        match self.endpoint.compress(now, compartment, &sip) {
            Ok(c) => {
                self.compartments.to_terminal(compartment, c.uploaded_bytecode);
                self.metrics.sigcomp_sip_bytes_out += sip.len() as u64;
                self.metrics.sigcomp_bytes_out += c.message.len() as u64;
                self.send(Side::Terminal, to, c.message, true);
                if let (SipTransport::Tcp, Some(conn)) = (to.transport, to.conn) {
                    let sent = self.sent_over_tcp.entry(conn).or_default();
                    if sent.len() >= RESEND_PER_FLOW {
                        sent.pop_front();
                    }
                    sent.push_back(SentOverTcp { sha1: c.sha1, compartment, to, sip });
                }
            }
            Err(e) => {
                // RFC 5049 §4: plain SIP is always understood.
                tracing::warn!(error = %e, "compression failed; sending plain SIP");
                self.metrics.compress_failures += 1;
                self.send(Side::Terminal, to, sip, false);
            }
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

    /// A terminal's TCP connection closed: its flow is gone (RFC 5626
    /// §5.2: a flow that fails is not reused).
    /// Until when a registration made over TCP connection `conn` lasts,
    /// if one does: the connection is then how the registrar's requests
    /// reach the terminal (RFC 5626 §5.3, RFC 3261 §18.3), and idleness
    /// alone does not close it.
    pub fn connection_registered_until(&self, conn: u64) -> Option<Instant> {
        let peer = self.by_conn.get(&conn)?;
        self.flows.get(self.flow_tokens.get(peer)?)?.registered_until
    }

    pub fn connection_closed(&mut self, conn: u64) {
        self.sent_over_tcp.remove(&conn);
        let Some(p) = self.by_conn.get(&conn).copied() else { return };
        if let Some(&t) = self.flow_tokens.get(&p) {
            self.remove_flow(t);
        }
        self.by_conn.remove(&conn);
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

fn host_matches(host: &str, ip: IpAddr) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.parse::<IpAddr>().is_ok_and(|h| h == ip || (ip.is_unspecified() && h.is_loopback()))
}

fn socket_addr(host: &str, port: u16) -> Option<SocketAddr> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    Some(SocketAddr::new(h.parse().ok()?, port))
}

#[cfg(test)]
mod tests {
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
    /// 127.0.0.1:5060, the upstream at 127.0.0.1:5070.
    fn udp_proxy() -> Proxy {
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
        let mut terminals: Vec<Endpoint> =
            (0..2).map(|_| Endpoint::new(EndpointConfig::new(p, p, c)).unwrap()).collect();
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
                proxy.from_terminal(now, from, &out.message, true);
                let tx = proxy.poll_transmit().expect("forwarded");
                assert_eq!(tx.side, Side::Upstream);
                upstream.push(tx.bytes);
            }
            for (n, req) in upstream.iter().enumerate() {
                let msg = Message::parse(req).unwrap();
                let contact = format!("<sip:u{n}@10.0.0.9:5080;comp=sigcomp>;expires=3600");
                let ok = build_response(&msg, 200, "OK", Some("up"), &[("Contact", &contact)]).unwrap();
                proxy.from_upstream(now, proxy.upstream_peer(), &ok);
                let tx = proxy.poll_transmit().expect("answer to the terminal");
                assert!(tx.sigcomp && tx.to == from);
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
            proxy.from_terminal(now, from, &out.message, true);
            let up = proxy.poll_transmit().expect("forwarded");
            let msg = Message::parse(&up.bytes).unwrap();
            let binding = format!("<sip:u@{};comp=sigcomp>;expires=3600", from.addr);
            let extra: &[(&str, &str)] = if method == "REGISTER" { &[("Contact", &binding)] } else { &[] };
            let ok = build_response(&msg, 200, "OK", Some("up"), extra).unwrap();
            proxy.from_upstream(now, proxy.upstream_peer(), &ok);
            let tx = proxy.poll_transmit().expect("answer to the terminal");
            assert!(tx.sigcomp && tx.to == from, "{method} {k}: {tx:?}");
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
        assert_eq!(proxy.compartments.of(&Terminal::Id(urn.into())).len(), 1);
        // By flow: two terminals without identifiers, two compartments.
        let (mut b, mut d) = (terminal(), terminal());
        for _ in 0..3 {
            exchange(&mut proxy, &mut b, "10.0.0.7:5080", "OPTIONS", None);
            exchange(&mut proxy, &mut d, "10.0.0.7:5090", "OPTIONS", None);
        }
        assert_eq!(compartments(&proxy), 3);
        assert_eq!(proxy.registered_count(), 1);
    }

    /// An identifier longer than any URN a terminal needs is ignored: the
    /// terminal is known by its flow, and nothing of the identifier is kept.
    #[test]
    fn an_overlong_sigcomp_id_costs_no_more_than_a_flow() {
        let mut proxy = udp_proxy();
        let now = Instant::now();
        let from =
            Peer { transport: SipTransport::Udp, addr: "10.0.0.9:5080".parse().unwrap(), local: None, conn: None };
        let token = proxy.token(now, from, true);
        let long = format!("urn:x:{}", "a".repeat(20_000));
        assert_eq!(proxy.terminal(Some(&long), token), Terminal::Flow(token));
        assert_eq!(proxy.flows[&token].terminal_id, None);
        let urn = "urn:uuid:00000000-0000-4000-8000-0000000000aa";
        assert_eq!(proxy.terminal(Some(urn), token), Terminal::Id(urn.into()));
        assert_eq!(proxy.terminal(Some(&long), token), Terminal::Id(urn.into()), "the flow's own identifier");
    }

    #[test]
    fn terminals_spread_over_the_shards() {
        let mut seen = [0usize; 4];
        for port in 10_000..10_400u16 {
            seen[Shard::of_terminal(SocketAddr::from(([127, 0, 0, 1], port)), 4) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }
}
