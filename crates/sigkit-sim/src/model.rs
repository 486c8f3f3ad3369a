//! The simulated network: an aggregated UAC, a chain of transaction-stateful
//! proxies, an aggregated UAS, and the links between them (SIP overload
//! thesis §3.3, Figures 4.1 and 4.31). Non-INVITE transactions over UDP as
//! RFC 3261 §17.1.2 and §17.2.2 specify them, without 1xx (RFC 4320).

mod overload;

use std::collections::VecDeque;

use sigkit_overload::detect::{AnomalyIndicator, DelayDetector, MeanTest, VarianceTest};
use sigkit_overload::via::{OcSignal, T1Signal};

use crate::kernel::{from_secs, to_secs, EventList, Nanos, SECOND};
use crate::metrics::{Recorder, TestCounts, TxnRecord};
use crate::rng::{Stream, StreamId};
use crate::scenario::{HandlerKind, ProxyConfig, Scenario, Trigger};

/// Node numbers: 0 is the UAC, 1..=P the proxies, P+1 the UAS; link `i`
/// joins node `i` and node `i + 1`.
type Node = usize;

/// What a response's topmost Via carries for overload control.
#[derive(Debug, Clone, Copy, Default)]
struct ViaSignals {
    t1: Option<T1Signal>,
    oc: Option<OcSignal>,
}

#[derive(Debug, Clone, Copy)]
enum Body {
    /// A request; `oc` is RFC 7339's bare `oc` parameter in its Via: the
    /// sender supports loss-based overload control.
    Request { oc: bool },
    /// A final response; `expires` is the registrar's Expires in ms (0
    /// when there is none).
    Response { code: u16, via: ViaSignals, expires: u32 },
}

/// What a transaction's request is: background traffic (MESSAGE, thesis
/// §3.3.5), or the first or second REGISTER of a registration (§4.5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Kind {
    #[default]
    Message,
    Register,
    RegisterWithCredentials,
    /// A watcher's SUBSCRIBE (§4.5.1).
    Subscribe,
    /// A presentity's NOTIFY.
    Notify,
}

/// A message of transaction `txn` (one branch per hop, the same number on
/// every hop: nothing forks).
#[derive(Debug, Clone, Copy)]
struct Msg {
    txn: u32,
    kind: Kind,
    body: Body,
}

#[derive(Debug)]
enum Event {
    NewTransaction {
        source: usize,
    },
    Arrive {
        node: Node,
        msg: Msg,
    },
    ServiceDone {
        proxy: usize,
    },
    /// Client transaction timers carry the transaction's start so that a
    /// timer of an earlier transaction of the same number (a request that
    /// came back after Timer J) does not act on a later one.
    TimerE {
        node: Node,
        txn: u32,
        started: Nanos,
    },
    TimerF {
        node: Node,
        txn: u32,
        started: Nanos,
    },
    TimerK {
        node: Node,
        txn: u32,
        started: Nanos,
    },
    TimerJ {
        node: Node,
        txn: u32,
    },
    /// Registration client `client` sends its first REGISTER.
    Register {
        client: u32,
    },
    /// Subscription `sub` is sent (again).
    Subscribe {
        sub: u32,
    },
    /// The watcher of `sub` checks that a NOTIFY came after its SUBSCRIBE
    /// of `sent`.
    SubscribeCheck {
        sub: u32,
        sent: Nanos,
    },
    /// The presentity of `sub` changes its state and notifies.
    StateChange {
        sub: u32,
    },
    /// The end of a one-second logging period (thesis §3.2.4).
    Log,
    D1Evaluate,
    D2Evaluate,
    OcUpdate,
    /// The handler's trigger `at` fires.
    HandlerAt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    None,
    Trying,
    Completed,
    Terminated,
}

/// A non-INVITE client transaction (RFC 3261 Figure 6).
#[derive(Debug, Clone, Copy, Default)]
struct ClientTxn {
    state: State,
    kind: Kind,
    started: Nanos,
    t1: Nanos,
    /// Timer E's next interval.
    interval: Nanos,
    transmissions: u32,
}

/// A non-INVITE server transaction (RFC 3261 Figure 8).
#[derive(Debug, Clone, Copy, Default)]
struct ServerTxn {
    state: State,
    kind: Kind,
    code: u16,
    expires: u32,
    via: ViaSignals,
    /// The request's Via offered RFC 7339 overload control.
    upstream_oc: bool,
}

/// Bytes one transaction holds to the end of a run with `proxies`
/// proxies: its record and client transaction at the UAC and its
/// registration client, a server and a client transaction at each proxy
/// and a server transaction at the UAS (vectors indexed by the
/// transaction's number), twice over for the vectors' growth by doubling.
pub(crate) fn bytes_per_transaction(proxies: usize) -> usize {
    use std::mem::size_of;
    let uac = size_of::<crate::metrics::TxnRecord>() + size_of::<ClientTxn>() + size_of::<u32>();
    let per_proxy = size_of::<ServerTxn>() + size_of::<ClientTxn>();
    2 * (uac + proxies * per_proxy + size_of::<ServerTxn>())
}

/// Bytes of the timers a transaction has pending while it lives: E, F
/// and K at the UAC and at each proxy, J at each proxy and the UAS, each
/// an event and its heap entry.
pub(crate) fn timer_bytes_per_live_transaction(proxies: usize) -> usize {
    (3 + 4 * proxies + 1) * (std::mem::size_of::<Event>() + 24)
}

fn slot<T: Default + Copy>(v: &mut Vec<T>, txn: u32) -> &mut T {
    let i = txn as usize;
    if i >= v.len() {
        v.resize(i + 1, T::default());
    }
    &mut v[i]
}

/// Work the processor does; each kind has its queue (Figure 3.7). The
/// first pass parses a message and lets the transaction manager match it
/// (Figure 3.8): a repeated request or response ends there, or comes back
/// as a retransmission of the stored response; a new message comes back as
/// a parsed request or response for the second pass, routing.
#[derive(Debug, Clone, Copy)]
enum Job {
    /// Queue 1: a message from the network, not parsed yet.
    Parse(Msg),
    /// Queue 2: one of the proxy's own retransmissions of a request (Timer
    /// E) or of a response (a repeated request in Completed).
    Retransmit { txn: u32, response: bool },
    /// Queue 3: a parsed response.
    Response(Msg),
    /// Queue 4: a parsed request.
    Request(Msg),
}

impl Job {
    fn queue(&self) -> usize {
        match self {
            Job::Parse(_) => 0,
            Job::Retransmit { .. } => 1,
            Job::Response(_) => 2,
            Job::Request(_) => 3,
        }
    }
}

/// The handler's state at the upstream proxy.
#[derive(Default)]
struct HandlerState {
    /// H1: raised T1 toward the next hop and until when it holds.
    t1_raise: Option<(Nanos, Nanos)>,
    /// RFC 7339: the `oc` in force, until when, and its sequence number.
    oc: Option<(u8, Nanos, u64)>,
    /// The trigger `at` has fired.
    at_reached: bool,
}

/// Seconds of utilisation the overloaded proxy averages before it signals
/// `oc_t1`: a single second at 95 % busy is common at 80 % load (Poisson
/// arrivals), five in a row are not; the same m = 5 s as D1's window.
const SIGNAL_WINDOW: usize = 5;

/// The overloaded proxy's own signalling.
struct SignalState {
    /// Busy shares of the processor in the last full seconds, newest last.
    utilisation: VecDeque<f64>,
    /// RFC 7339 occupancy algorithm: the share of new requests admitted.
    admit: f64,
    oc_seq: u64,
    busy_at_last_update: Nanos,
}

struct Proxy {
    /// The first pass: parse and match.
    parse_mean: f64,
    route_request_mean: f64,
    route_response_mean: f64,
    retransmit_mean: f64,
    caps: [usize; 4],
    queues: [VecDeque<Job>; 4],
    current: Option<Job>,
    busy_since: Nanos,
    /// Busy time in the current logging period.
    busy_period: Nanos,
    /// Busy time since the start.
    busy_total: Nanos,
    service: Stream,
    servers: Vec<ServerTxn>,
    clients: Vec<ClientTxn>,
    /// Client transactions in Trying (pending), with their start times.
    pending: usize,
    /// New requests forwarded in the current D2 interval.
    new_requests: u64,
}

impl Proxy {
    fn new(c: &ProxyConfig, service: Stream) -> Proxy {
        let work = 1.0 / c.capacity_tps;
        let route = work * (c.route_share - c.match_share);
        Proxy {
            parse_mean: work * (c.parse_share + c.match_share) / 2.0,
            route_request_mean: route * c.request_route_part,
            route_response_mean: route * (1.0 - c.request_route_part),
            retransmit_mean: work * c.retransmit_share,
            caps: [c.buffers.unparsed, c.buffers.retransmissions, c.buffers.responses, c.buffers.requests],
            queues: Default::default(),
            current: None,
            busy_since: 0,
            busy_period: 0,
            busy_total: 0,
            service,
            servers: Vec::new(),
            clients: Vec::new(),
            pending: 0,
            new_requests: 0,
        }
    }

    fn mean(&self, job: &Job) -> f64 {
        match job {
            Job::Parse(_) => self.parse_mean,
            Job::Retransmit { .. } => self.retransmit_mean,
            Job::Response(_) => self.route_response_mean,
            Job::Request(_) => self.route_request_mean,
        }
    }
}

/// One run of a scenario with one seed.
pub(crate) struct Network<'a> {
    sc: &'a Scenario,
    events: EventList<Event>,
    t1: Nanos,
    t2: Nanos,
    t4: Nanos,
    max_transmissions: u32,
    link_delay: Nanos,
    link_loss: f64,
    sources: Vec<(Stream, f64, Nanos)>,
    links: Vec<Stream>,
    proxies: Vec<Proxy>,
    /// The UAC's transactions, which are also its records.
    uac: Vec<TxnRecord>,
    uac_clients: Vec<ClientTxn>,
    uac_pending: usize,
    /// The registration client of each UAC transaction (u32::MAX: none).
    uac_register_client: Vec<u32>,
    /// Until when each registration client is registered.
    registered_until: Vec<Nanos>,
    /// Per subscription: when its watcher last got a NOTIFY (0: never),
    /// when it last sent a SUBSCRIBE, and whether its presentity has it.
    notified_at: Vec<Nanos>,
    subscribed_at: Vec<Nanos>,
    presentity_has: Vec<bool>,
    registrar: Stream,
    uas: Vec<ServerTxn>,
    /// The upstream proxy (detects and handles), if there are two proxies.
    upstream: Option<usize>,
    d1: DelayDetector,
    kappa: AnomalyIndicator,
    d2: VarianceTest,
    d2_mean: MeanTest,
    last_kappa: Option<f64>,
    handler: HandlerState,
    signal: SignalState,
    dropper: Stream,
    pub(crate) rec: Recorder,
    end_of_sources: Nanos,
}

impl<'a> Network<'a> {
    pub(crate) fn new(sc: &'a Scenario, seed: u64) -> Network<'a> {
        // The sources go on through the drain so that the window's end is
        // not followed by a quiet spell the window's transactions profit from.
        let end_of_sources = from_secs(sc.duration + sc.drain);
        let sources = sc
            .sources
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let end = s.end.map_or(end_of_sources, |e| from_secs(e).min(end_of_sources));
                (Stream::new(seed, StreamId::Source(i as u32)), s.rate, end)
            })
            .collect();
        let links = (0..=sc.proxies.len() as u32 * 2 + 1).map(|i| Stream::new(seed, StreamId::Link(i))).collect();
        let proxies = sc
            .proxies
            .iter()
            .enumerate()
            .map(|(i, c)| Proxy::new(c, Stream::new(seed, StreamId::Service(i as u32))))
            .collect();
        let upstream = (sc.proxies.len() >= 2).then(|| sc.proxies.len() - 2);
        let mut net = Network {
            sc,
            events: EventList::default(),
            t1: from_secs(sc.timers.t1),
            t2: from_secs(sc.timers.t2),
            t4: from_secs(sc.timers.t4),
            max_transmissions: sc.timers.max_transmissions,
            link_delay: from_secs(sc.links.delay),
            link_loss: sc.links.loss,
            sources,
            links,
            proxies,
            uac: Vec::new(),
            uac_clients: Vec::new(),
            uac_pending: 0,
            uac_register_client: Vec::new(),
            registered_until: vec![0; sc.registration.as_ref().map_or(0, |r| r.clients as usize)],
            notified_at: vec![0; Self::subscriptions(sc)],
            subscribed_at: vec![0; Self::subscriptions(sc)],
            presentity_has: vec![false; Self::subscriptions(sc)],
            registrar: Stream::new(seed, StreamId::Registrar),
            uas: Vec::new(),
            upstream,
            d1: DelayDetector::new(sc.detectors.d1.clone()),
            kappa: AnomalyIndicator::default(),
            d2: VarianceTest::new(&sc.detectors.d2),
            d2_mean: MeanTest::new(&sc.detectors.d2_mean),
            last_kappa: None,
            handler: HandlerState::default(),
            signal: SignalState { utilisation: VecDeque::new(), admit: 1.0, oc_seq: 0, busy_at_last_update: 0 },
            dropper: Stream::new(seed, StreamId::Dropper(0)),
            rec: Recorder::new(sc),
            end_of_sources,
        };
        for (i, s) in sc.sources.iter().enumerate() {
            let start = from_secs(s.start);
            if start < net.sources[i].2 {
                let gap = from_secs(net.sources[i].0.exponential(1.0 / s.rate));
                net.events.schedule(start + gap, Event::NewTransaction { source: i });
            }
        }
        if let Some(reg) = &sc.registration {
            // Thesis §4.5.2: the clients register within `spread` seconds
            // from `start`, at uniformly random instants.
            let mut starts = Stream::new(seed, StreamId::Registration);
            for client in 0..reg.clients {
                let at = from_secs(reg.start + starts.uniform() * reg.spread);
                net.events.schedule(at, Event::Register { client });
            }
        }
        if let Some(p) = &sc.presence {
            // Thesis §4.5.1: the SUBSCRIBEs fall within `spread` seconds.
            let mut starts = Stream::new(seed, StreamId::Presence);
            for sub in 0..Self::subscriptions(sc) as u32 {
                let at = from_secs(p.start + starts.uniform() * p.spread);
                net.events.schedule(at, Event::Subscribe { sub });
            }
        }
        if sc.handler.kind == HandlerKind::T1 && sc.handler.trigger == Trigger::Always {
            net.raise_t1(from_secs(sc.handler.t1), Nanos::MAX);
        }
        if sc.handler.trigger == Trigger::At {
            net.events.schedule(from_secs(sc.handler.at), Event::HandlerAt);
        }
        net.events.schedule(SECOND, Event::Log);
        if net.upstream.is_some() {
            net.events.schedule(from_secs(sc.detectors.d1.interval), Event::D1Evaluate);
            net.events.schedule(from_secs(sc.detectors.d2.interval), Event::D2Evaluate);
            if sc.handler.kind == HandlerKind::OcLoss {
                net.events.schedule(from_secs(sc.handler.oc_interval), Event::OcUpdate);
            }
        }
        net
    }

    /// Runs to the end of the sources plus the drain time.
    pub(crate) fn run(mut self) -> (Recorder, Vec<TxnRecord>, TestCounts) {
        let end = self.end_of_sources;
        let mut handled = 0u64;
        while let Some((now, event)) = self.events.pop() {
            if now > end {
                break;
            }
            self.handle(now, event);
            handled += 1;
        }
        let tests = TestCounts {
            d2_alarms: self.d2.alarms,
            d2_observations: self.d2.observations,
            d2_mean_alarms: self.d2_mean.alarms,
            events: handled,
        };
        (self.rec, self.uac, tests)
    }

    fn subscriptions(sc: &Scenario) -> usize {
        sc.presence.as_ref().map_or(0, |p| p.watchers as usize * p.presentities as usize)
    }

    fn client(&mut self, node: Node, txn: u32) -> &mut ClientTxn {
        if node == 0 {
            &mut self.uac_clients[txn as usize]
        } else {
            &mut self.proxies[node - 1].clients[txn as usize]
        }
    }

    fn uas_node(&self) -> Node {
        self.proxies.len() + 1
    }

    fn handle(&mut self, now: Nanos, event: Event) {
        match event {
            Event::NewTransaction { source } => self.new_transaction(now, source),
            Event::Arrive { node, msg } => self.arrive(now, node, msg),
            Event::ServiceDone { proxy } => self.service_done(now, proxy),
            Event::TimerE { node, txn, started } if self.client(node, txn).started == started => {
                self.timer_e(now, node, txn)
            }
            Event::TimerF { node, txn, started } if self.client(node, txn).started == started => {
                self.timer_f(now, node, txn)
            }
            Event::TimerK { node, txn, started } if self.client(node, txn).started == started => {
                self.client(node, txn).state = State::Terminated;
            }
            Event::TimerE { .. } | Event::TimerF { .. } | Event::TimerK { .. } => {}
            Event::TimerJ { node, txn } => {
                if node == self.uas_node() {
                    self.uas[txn as usize].state = State::Terminated;
                } else {
                    self.proxies[node - 1].servers[txn as usize].state = State::Terminated;
                }
            }
            Event::Register { client } => self.start_transaction(now, Kind::Register, Some(client)),
            Event::Subscribe { sub } => {
                self.subscribed_at[sub as usize] = now;
                self.start_transaction(now, Kind::Subscribe, Some(sub));
                let timeout = self.sc.presence.as_ref().map_or(90.0, |p| p.notify_timeout);
                self.events.after(from_secs(timeout), Event::SubscribeCheck { sub, sent: now });
            }
            Event::SubscribeCheck { sub, sent } => {
                // Only the latest SUBSCRIBE's check acts; a NOTIFY since it
                // sent means the subscription is active.
                let i = sub as usize;
                if self.subscribed_at[i] == sent && self.notified_at[i] < sent {
                    self.handle(now, Event::Subscribe { sub });
                }
            }
            Event::StateChange { sub } => self.start_transaction(now, Kind::Notify, Some(sub)),
            Event::Log => self.log(now),
            Event::D1Evaluate => self.d1_evaluate(now),
            Event::D2Evaluate => self.d2_evaluate(now),
            Event::OcUpdate => self.oc_update(now),
            Event::HandlerAt => {
                self.handler.at_reached = true;
                if self.sc.handler.kind == HandlerKind::T1 {
                    self.raise_t1(from_secs(self.sc.handler.t1), Nanos::MAX);
                }
            }
        }
    }

    /// Sends `msg` from `from` to the adjacent node `to` over their link.
    fn send(&mut self, from: Node, to: Node, msg: Msg) {
        let link = from.min(to) * 2 + usize::from(to < from);
        if self.links[link].bernoulli(self.link_loss) {
            return;
        }
        self.events.after(self.link_delay, Event::Arrive { node: to, msg });
    }

    // --- UAC ---

    fn new_transaction(&mut self, now: Nanos, source: usize) {
        let (stream, rate, end) = &mut self.sources[source];
        let next = now + from_secs(stream.exponential(1.0 / *rate));
        if next < *end {
            self.events.schedule(next, Event::NewTransaction { source });
        }
        self.start_transaction(now, Kind::Message, None);
    }

    /// Starts a UAC client transaction of `kind` (for registration client
    /// `client`).
    fn start_transaction(&mut self, now: Nanos, kind: Kind, client: Option<u32>) {
        let txn = self.uac.len() as u32;
        self.uac.push(TxnRecord {
            start: now,
            transmissions: 1,
            final_at: None,
            code: 0,
            background: kind == Kind::Message,
        });
        self.uac_register_client.push(client.unwrap_or(u32::MAX));
        *slot(&mut self.uac_clients, txn) =
            ClientTxn { state: State::Trying, kind, started: now, t1: self.t1, interval: self.t1, transmissions: 1 };
        self.uac_pending += 1;
        self.send(0, 1, Msg { txn, kind, body: Body::Request { oc: false } });
        self.events.after(self.t1, Event::TimerE { node: 0, txn, started: now });
        self.events.after(64 * self.t1, Event::TimerF { node: 0, txn, started: now });
    }

    fn uac_response(&mut self, now: Nanos, txn: u32, code: u16, expires: u32) {
        let ct = &mut self.uac_clients[txn as usize];
        if ct.state != State::Trying {
            return;
        }
        ct.state = State::Completed;
        let kind = ct.kind;
        self.uac_pending -= 1;
        let r = &mut self.uac[txn as usize];
        r.final_at = Some(now);
        r.code = code;
        if code == 200 {
            self.rec.goodput(now);
        }
        let started = self.uac_clients[txn as usize].started;
        self.events.after(self.t4, Event::TimerK { node: 0, txn, started });
        if matches!(kind, Kind::Register | Kind::RegisterWithCredentials) {
            self.registration_step(now, txn, kind, Some((code, expires)));
        }
    }

    /// A registration client's transaction ended with `outcome` (status
    /// and Expires in ms; None: Timer F). Thesis §4.5.2: the 401 of the
    /// first REGISTER is answered by a REGISTER with credentials; its 200
    /// holds for Expires, after which the client registers again; any
    /// failure is retried after `retry` seconds.
    fn registration_step(&mut self, now: Nanos, txn: u32, kind: Kind, outcome: Option<(u16, u32)>) {
        let Some(reg) = &self.sc.registration else { return };
        let client = self.uac_register_client[txn as usize];
        match (kind, outcome) {
            (Kind::Register, Some((401, _))) => {
                self.start_transaction(now, Kind::RegisterWithCredentials, Some(client));
            }
            (Kind::RegisterWithCredentials, Some((200, expires))) => {
                let until = now + from_secs(f64::from(expires) / 1000.0);
                self.registered_until[client as usize] = until;
                self.events.schedule(until, Event::Register { client });
            }
            _ => self.events.after(from_secs(reg.retry), Event::Register { client }),
        }
    }

    // --- timers of client transactions ---

    fn timer_e(&mut self, now: Nanos, node: Node, txn: u32) {
        let (t2, max) = (self.t2, self.max_transmissions);
        let ct = self.client(node, txn);
        if ct.state != State::Trying || ct.transmissions >= max {
            return;
        }
        ct.transmissions += 1;
        // RFC 3261 §17.1.2.2: in Trying, Timer E doubles up to T2.
        ct.interval = (ct.interval * 2).min(t2.max(ct.t1));
        let (interval, started, kind) = (ct.interval, ct.started, ct.kind);
        if ct.transmissions < max {
            self.events.after(interval, Event::TimerE { node, txn, started });
        }
        if node == 0 {
            self.uac[txn as usize].transmissions += 1;
            self.rec.retransmission(now, 0);
            self.send(0, 1, Msg { txn, kind, body: Body::Request { oc: false } });
        } else {
            // The proxy's own retransmission waits for its processor (queue 2).
            let _ = self.enqueue(now, node - 1, Job::Retransmit { txn, response: false });
        }
    }

    fn timer_f(&mut self, now: Nanos, node: Node, txn: u32) {
        if node == 0 {
            let ct = &mut self.uac_clients[txn as usize];
            if ct.state == State::Trying {
                ct.state = State::Terminated;
                let kind = ct.kind;
                self.uac_pending -= 1;
                if matches!(kind, Kind::Register | Kind::RegisterWithCredentials) {
                    self.registration_step(now, txn, kind, None);
                }
            }
            return;
        }
        let p = node - 1;
        let proxy = &mut self.proxies[p];
        let ct = &mut proxy.clients[txn as usize];
        if ct.state != State::Trying {
            return;
        }
        ct.state = State::Terminated;
        proxy.pending -= 1;
        // RFC 3261 §16.8: Timer F acts as a 408, which goes upstream when no
        // final response has (§16.7 step 6).
        if proxy.servers[txn as usize].state == State::Trying {
            self.complete_server(p, txn, 408, 0);
        }
    }

    // --- proxies ---

    fn arrive(&mut self, now: Nanos, node: Node, msg: Msg) {
        if node == 0 {
            if let Body::Response { code, expires, .. } = msg.body {
                self.uac_response(now, msg.txn, code, expires);
            }
        } else if node == self.uas_node() {
            self.uas_request(now, msg);
        } else {
            let _ = self.enqueue(now, node - 1, Job::Parse(msg));
        }
    }

    /// Queues `job` at proxy `p`; false when its queue is full and the
    /// message is lost.
    fn enqueue(&mut self, now: Nanos, p: usize, job: Job) -> bool {
        let proxy = &mut self.proxies[p];
        let q = job.queue();
        if proxy.queues[q].len() >= proxy.caps[q] {
            self.rec.drop(now, p);
            return false;
        }
        proxy.queues[q].push_back(job);
        if proxy.current.is_none() {
            self.start_service(now, p);
        }
        true
    }

    fn start_service(&mut self, now: Nanos, p: usize) {
        let proxy = &mut self.proxies[p];
        // Strict priority: the first non-empty queue (Figure 3.7).
        let Some(job) = proxy.queues.iter_mut().find_map(|q| q.pop_front()) else {
            return;
        };
        let service = from_secs(proxy.service.exponential(proxy.mean(&job)));
        proxy.current = Some(job);
        proxy.busy_since = now;
        // A random delay: through the heap, not a lane.
        self.events.schedule(now + service, Event::ServiceDone { proxy: p });
    }

    fn service_done(&mut self, now: Nanos, p: usize) {
        let proxy = &mut self.proxies[p];
        let busy = now - proxy.busy_since;
        proxy.busy_period += busy;
        proxy.busy_total += busy;
        let job = proxy.current.take().expect("a service ends only when one started");
        match job {
            Job::Parse(msg) => self.parse(now, p, msg),
            Job::Retransmit { txn, response: false } => {
                let ct = self.proxies[p].clients[txn as usize];
                if ct.state == State::Trying {
                    self.rec.retransmission(now, p + 1);
                    let oc = self.offers_oc(p);
                    self.send(p + 1, p + 2, Msg { txn, kind: ct.kind, body: Body::Request { oc } });
                }
            }
            Job::Retransmit { txn, response: true } => {
                let st = self.proxies[p].servers[txn as usize];
                if st.state == State::Completed {
                    let body = Body::Response { code: st.code, via: st.via, expires: st.expires };
                    self.send(p + 1, p, Msg { txn, kind: st.kind, body });
                }
            }
            Job::Request(msg) => self.route_request(now, p, msg),
            Job::Response(msg) => self.route_response(p, msg),
        }
        if self.proxies[p].current.is_none() {
            self.start_service(now, p);
        }
    }

    /// The first pass: parse, and match the message to its transaction.
    fn parse(&mut self, now: Nanos, p: usize, msg: Msg) {
        let txn = msg.txn;
        match msg.body {
            Body::Request { oc: upstream_oc } => {
                let st = *slot(&mut self.proxies[p].servers, txn);
                match st.state {
                    // A repeated request: absorbed in Trying (no 1xx, RFC
                    // 4320), answered again in Completed (RFC 3261 §17.2.2).
                    State::Trying => {}
                    State::Completed => {
                        let _ = self.enqueue(now, p, Job::Retransmit { txn, response: true });
                    }
                    State::None | State::Terminated => {
                        // The server transaction exists only once its request
                        // has room in queue 4; a lost request leaves none.
                        if self.enqueue(now, p, Job::Request(msg)) {
                            self.proxies[p].servers[txn as usize] =
                                ServerTxn { state: State::Trying, kind: msg.kind, upstream_oc, ..Default::default() };
                        }
                    }
                }
            }
            Body::Response { via, .. } => {
                let Some(ct) = self.proxies[p].clients.get(txn as usize) else { return };
                if ct.state != State::Trying {
                    return; // a repeated response, absorbed
                }
                let started = ct.started;
                if !self.enqueue(now, p, Job::Response(msg)) {
                    return;
                }
                let proxy = &mut self.proxies[p];
                proxy.clients[txn as usize].state = State::Completed;
                proxy.pending -= 1;
                self.events.after(self.t4, Event::TimerK { node: p + 1, txn, started });
                if self.upstream == Some(p) {
                    self.d1.record(to_secs(now), to_secs(now - started));
                    self.apply_signals(now, via);
                }
            }
        }
    }

    /// The second pass of a new request: admission at the upstream proxy,
    /// then a client transaction toward the next hop.
    fn route_request(&mut self, now: Nanos, p: usize, msg: Msg) {
        let txn = msg.txn;
        if self.upstream == Some(p) && self.rejects(now, p) {
            self.rec.rejection(now);
            self.complete_server(p, txn, 503, 0);
            return;
        }
        let t1 = self.t1_toward(now, p);
        let proxy = &mut self.proxies[p];
        *slot(&mut proxy.clients, txn) =
            ClientTxn { state: State::Trying, kind: msg.kind, started: now, t1, interval: t1, transmissions: 1 };
        proxy.pending += 1;
        proxy.new_requests += 1;
        let oc = self.offers_oc(p);
        self.send(p + 1, p + 2, Msg { txn, kind: msg.kind, body: Body::Request { oc } });
        self.events.after(t1, Event::TimerE { node: p + 1, txn, started: now });
        self.events.after(64 * t1, Event::TimerF { node: p + 1, txn, started: now });
    }

    /// The second pass of a response: forwarded upstream through the server
    /// transaction, unless Timer F has answered 408 already.
    fn route_response(&mut self, p: usize, msg: Msg) {
        let Body::Response { code, expires, .. } = msg.body else { return };
        if self.proxies[p].servers[msg.txn as usize].state == State::Trying {
            self.complete_server(p, msg.txn, code, expires);
        }
    }

    /// Sends final response `code` of proxy `p`'s server transaction `txn`.
    fn complete_server(&mut self, p: usize, txn: u32, code: u16, expires: u32) {
        let upstream_oc = self.proxies[p].servers[txn as usize].upstream_oc;
        let via = self.signals(p, upstream_oc);
        let st = &mut self.proxies[p].servers[txn as usize];
        st.state = State::Completed;
        st.code = code;
        st.expires = expires;
        st.via = via;
        let kind = st.kind;
        self.send(p + 1, p, Msg { txn, kind, body: Body::Response { code, via, expires } });
        self.events.after(64 * self.t1, Event::TimerJ { node: p + 1, txn });
    }

    // --- UAS ---

    /// The UAS, also the registrar (thesis §4.5.2): a first REGISTER is
    /// challenged with 401, one with credentials gets 200 and an Expires
    /// (fixed, or uniform between the minimum and the maximum when
    /// randomised), anything else 200.
    fn uas_request(&mut self, now: Nanos, msg: Msg) {
        let txn = msg.txn;
        let node = self.uas_node();
        let st = *slot(&mut self.uas, txn);
        let st = match st.state {
            State::None | State::Terminated => {
                let (code, expires) = match (msg.kind, &self.sc.registration) {
                    (Kind::Register, _) => (401, 0),
                    (Kind::RegisterWithCredentials, Some(reg)) => {
                        let expires = if reg.random_expiry {
                            reg.min_expires + self.registrar.uniform() * (reg.expires - reg.min_expires)
                        } else {
                            reg.expires
                        };
                        (200, (expires * 1000.0).round() as u32)
                    }
                    _ => (200, 0),
                };
                let st = ServerTxn { state: State::Completed, kind: msg.kind, code, expires, ..Default::default() };
                self.uas[txn as usize] = st;
                self.presence_request(now, txn, msg.kind);
                self.events.after(64 * self.t1, Event::TimerJ { node, txn });
                st
            }
            State::Completed | State::Trying => st,
        };
        let body = Body::Response { code: st.code, via: ViaSignals::default(), expires: st.expires };
        self.send(node, node - 1, Msg { txn, kind: st.kind, body });
    }

    /// A new SUBSCRIBE or NOTIFY at the far end (thesis §4.5.1): the
    /// presentity notifies at once and again after `state_change` (once per
    /// subscription); a NOTIFY makes its subscription active.
    fn presence_request(&mut self, now: Nanos, txn: u32, kind: Kind) {
        let Some(p) = &self.sc.presence else { return };
        let sub = self.uac_register_client[txn as usize];
        let Some(i) = (sub != u32::MAX).then_some(sub as usize) else { return };
        match kind {
            Kind::Subscribe => {
                if !self.presentity_has[i] {
                    self.presentity_has[i] = true;
                    self.events.after(from_secs(p.state_change), Event::StateChange { sub });
                }
                self.start_transaction(now, Kind::Notify, Some(sub));
            }
            Kind::Notify => self.notified_at[i] = now,
            _ => {}
        }
    }

    // --- periodic work ---

    fn log(&mut self, now: Nanos) {
        let utilisation: Vec<f64> = self
            .proxies
            .iter_mut()
            .map(|p| {
                if p.current.is_some() {
                    p.busy_period += now - p.busy_since;
                    p.busy_total += now - p.busy_since;
                    p.busy_since = now;
                }
                let u = to_secs(p.busy_period);
                p.busy_period = 0;
                u
            })
            .collect();
        if let Some(&u) = utilisation.last() {
            let recent = &mut self.signal.utilisation;
            recent.push_back(u);
            if recent.len() > SIGNAL_WINDOW {
                recent.pop_front();
            }
        }
        let upstream_pending = self.upstream.map(|p| self.proxies[p].pending);
        let t1_next = self.upstream.map(|p| to_secs(self.t1_toward(now, p)));
        let oc = match self.handler.oc {
            Some((oc, until, _)) if now < until => Some(oc),
            _ => self.upstream.and((self.sc.handler.kind == HandlerKind::OcLoss).then_some(0)),
        };
        let registrations =
            self.sc.registration.as_ref().map(|_| self.registered_until.iter().filter(|&&u| u > now).count());
        let subscriptions = self.sc.presence.as_ref().map(|_| self.notified_at.iter().filter(|&&t| t > 0).count());
        self.rec.log(
            now,
            &utilisation,
            self.uac_pending,
            upstream_pending,
            (registrations, subscriptions),
            crate::metrics::DetectorSnapshot {
                d1_p95: self.d1.last_p95,
                d1_congested: self.d1.congested,
                kappa: self.last_kappa,
                d2_congested: self.d2.congested,
                d2_mean_congested: self.d2_mean.congested,
                t1_next,
                oc,
            },
        );
        if now < self.end_of_sources {
            self.events.after(SECOND, Event::Log);
        }
    }
}
