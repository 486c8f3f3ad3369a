//! The load run on tokio: one task drives the [`Engine`] over one
//! transport (SIPp's `-t u1`: one UDP socket; `-t t1`: one TCP connection
//! for a UAC, the accepted connections for a UAS), starts calls as the
//! [`RateController`] says, and reports per interval. No task per call:
//! the engine's own deadlines wake the loop.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{mpsc, watch};

use crate::control::{self, ControlCommand};
use crate::engine::{Engine, EngineConfig, Outbox, Transport};
use crate::inject::Injection;
use crate::metrics::{Interval, StepReport, Summary, Tail};
use crate::pattern::{Arrivals, Pattern, RateController, StepSpan};
use crate::scenario::{self, Scenario, ScenarioError};
use crate::service::{ServiceModel, ServiceModelError, ServiceQueue};
use crate::sigcomp_layer::SigcompLayer;
use crate::sut::SutSampler;
use crate::trace::{TraceConfig, TraceError, Tracer};

mod net;
mod progress;

use net::{bind_udp, tcp_reader, Net, TcpEvent, TcpNet};
pub use progress::Progress;
use progress::Updates;

/// Which side of the call a run plays when no scenario is given: the
/// built-in `uac` or `uas`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Places calls: SIPp's built-in `-sn uac` (INVITE, ACK, BYE).
    Uac,
    /// Answers calls: SIPp's built-in `-sn uas`.
    Uas,
}

/// A load run's settings (the library's names for SIPp's flags).
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// Which built-in scenario runs when `scenario` is None.
    pub role: Role,
    /// The scenario; None for the built-in one of `role`.
    pub scenario: Option<Arc<Scenario>>,
    /// Values for `[fieldN]` (SIPp's `-inf`).
    pub injection: Option<Arc<Injection>>,
    /// What the engine writes into messages and how it times calls. Its
    /// `local` is where the run binds (port 0: a free one; the engine is
    /// given the address bound), and its `seed` draws the run's Poisson
    /// arrivals and service times too.
    pub engine: EngineConfig,
    /// Calls started per `rate_period` (SIPp's `-r` and `-rp`).
    pub rate: f64,
    /// The period `rate` counts over (SIPp's `-rp`; 1 s by default).
    pub rate_period: Duration,
    /// How the rate changes over the run: constant, stepped, a ramp, bursts or a peak ([`Pattern`]).
    pub pattern: Pattern,
    /// How calls are spaced within a rate: evenly (SIPp's way) or as a Poisson process.
    pub arrivals: Arrivals,
    /// Calls in all (UAC: placed; UAS: ended), then stop (SIPp's `-m`).
    pub max_calls: Option<u64>,
    /// Calls in progress at most (SIPp's `-l`).
    pub max_concurrent: Option<usize>,
    /// The whole run stops after this long (SIPp's `-timeout`).
    pub duration: Option<Duration>,
    /// An [`Interval`] row every this long (SIPp's `-fd`).
    pub report_every: Duration,
    /// A [`Progress`] update every this long (SIPp's `-f`, its screen's
    /// refresh period), besides one at each interval row and the last one at the end.
    pub progress_every: Duration,
    /// A UDP control socket on this port of the local address (SIPp's
    /// `-cp`); 0 picks a free port.
    pub control_port: Option<u16>,
    /// Processes of the system under test to sample per interval.
    pub sut_pids: Vec<u32>,
    /// Compress with SigComp toward the peer and decompress what comes.
    pub sigcomp: bool,
    /// A UAS behind a server of limited capacity: what arrives is queued
    /// and served at the model's rate before the UAS sees it (over UDP).
    pub service_model: Option<ServiceModel>,
    /// SIPp's trace files to write as the run goes (`-trace_stat`, `-trace_msg`, ...); None: none.
    pub trace: Option<TraceConfig>,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            role: Role::Uac,
            scenario: None,
            injection: None,
            engine: EngineConfig {
                // A run binds a socket: any free port unless asked.
                local: SocketAddr::from(([127, 0, 0, 1], 0)),
                seed: 0x5eed_1234,
                ..EngineConfig::default()
            },
            rate: 10.0,
            rate_period: Duration::from_secs(1),
            pattern: Pattern::Constant,
            arrivals: Arrivals::Uniform,
            max_calls: None,
            max_concurrent: None,
            duration: None,
            report_every: Duration::from_secs(1),
            progress_every: Duration::from_secs(1),
            control_port: None,
            sut_pids: Vec::new(),
            sigcomp: false,
            service_model: None,
            trace: None,
        }
    }
}

impl LoadConfig {
    /// Offered calls per second at the start.
    pub fn offered_cps(&self) -> f64 {
        self.rate / self.rate_period.as_secs_f64().max(1e-9)
    }
}

/// Why a run could not go.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A socket could not be bound (the transport's or the control socket).
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why binding failed.
        source: std::io::Error,
    },
    /// A UAC's TCP connection to its next hop could not be made.
    #[error("connecting to {addr}: {source}")]
    Connect {
        /// The next hop (or the remote address).
        addr: SocketAddr,
        /// Why connecting failed.
        source: std::io::Error,
    },
    /// A UAC scenario (or one connecting over TCP) without `remote`.
    #[error("a scenario that places calls needs the remote address")]
    NoRemote,
    /// A UAC's rate is not a positive finite number and the pattern is constant.
    #[error("the rate must be a positive number")]
    BadRate,
    /// The scenario (or its injection file) could not be used.
    #[error("scenario: {0}")]
    Scenario(#[from] ScenarioError),
    /// The scenario uses `[fieldN]` (this is the highest N) and no injection file is given.
    #[error("the scenario uses [field{0}] but has no injection file (-inf)")]
    NoInjection(usize),
    /// A `--sut-pid` process (this pid) whose /proc entries cannot be read.
    #[error("--sut-pid {0}: no such process readable in /proc")]
    NoSut(u32),
    /// The SigComp endpoint could not be set up.
    #[error("SigComp: {0}")]
    Sigcomp(#[from] sigcomp_compress::EndpointError),
    /// The service model's parameters are out of range.
    #[error("service model: {0}")]
    Service(#[from] ServiceModelError),
    /// The service model stands for the server's capacity.
    #[error("service model: it limits a server: a scenario that answers calls (a UAS)")]
    ServiceOnClient,
    /// Over TCP nothing is retransmitted (RFC 3261 §17.1.1.2), and the
    /// model reads plain SIP to know a transaction.
    #[error("service model: plain SIP over UDP only")]
    ServiceNotPlainUdp,
    /// Another socket call (local address, socket creation) failed.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
    /// A trace file could not be created.
    #[error("trace file {0}")]
    Trace(#[from] TraceError),
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndReason {
    /// Its calls were done (`-m` calls, the end of the load pattern, or a quit command once those in progress ended).
    #[default]
    Calls,
    /// Its duration was up (SIPp's `-timeout`).
    Duration,
    /// The `Q` command (quit now).
    QuitNow,
    /// The caller's stop channel turned true (SIGINT, SIGTERM).
    Stopped,
}

/// What a run gives back.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunReport {
    /// The run's totals.
    pub summary: Summary,
    /// One row per reporting interval (`-fd`), in time order.
    pub intervals: Vec<Interval>,
    /// One row per load step, in step order (the last with the run's tail).
    pub steps: Vec<StepReport>,
    /// The socket's address (useful with port 0).
    #[serde(skip)]
    pub local: Option<SocketAddr>,
    /// Why the run ended.
    #[serde(skip)]
    pub ended_by: EndReason,
    /// The trace files written (SIPp's `-trace_*`), flushed.
    #[serde(skip)]
    pub trace_files: Vec<std::path::PathBuf>,
    /// The first trace file write that failed (the run went on without that file).
    #[serde(skip)]
    pub trace_error: Option<String>,
}

/// Changes a running load (rate, pause, quit): cloneable, usable from any
/// task or thread.
#[derive(Debug, Clone)]
pub struct Control {
    tx: mpsc::UnboundedSender<ControlCommand>,
}

impl Control {
    /// Sends a command; false when the run is over.
    pub fn send(&self, c: ControlCommand) -> bool {
        self.tx.send(c).is_ok()
    }
    /// Calls per rate period from now on.
    pub fn set_rate(&self, rate: f64) -> bool {
        self.send(ControlCommand::SetRate(rate))
    }
    /// Stop starting calls; end when those in progress are over.
    pub fn quit(&self) -> bool {
        self.send(ControlCommand::Quit)
    }
}

/// A bound transport, ready to run: lets a caller learn the local address
/// (port 0), get a [`Control`] and watch [`Progress`] before the run
/// starts.
pub struct Prepared {
    config: LoadConfig,
    scenario: Arc<Scenario>,
    net: Net,
    local: SocketAddr,
    control_socket: Option<UdpSocket>,
    control_tx: mpsc::UnboundedSender<ControlCommand>,
    control_rx: mpsc::UnboundedReceiver<ControlCommand>,
    progress_tx: watch::Sender<Progress>,
    sigcomp: Option<SigcompLayer>,
    tracer: Option<Tracer>,
}

impl Prepared {
    /// Checks `config` and binds its transport: a UDP socket, a TCP connection to the next hop (a UAC) or a TCP listener
    /// (a UAS), and the control socket; then calls can be run with [`Prepared::run`]. An error names what is wrong
    /// with the settings or which bind or connect failed.
    pub async fn bind(config: LoadConfig) -> Result<Prepared, LoadError> {
        let scenario = match &config.scenario {
            Some(s) => Arc::clone(s),
            None => Arc::new(scenario::built_in(match config.role {
                Role::Uac => "uac",
                Role::Uas => "uas",
            })?),
        };
        if scenario.fields_used > 0 && config.injection.is_none() {
            return Err(LoadError::NoInjection(scenario.fields_used - 1));
        }
        let client = scenario.is_client();
        if client && !(config.rate.is_finite() && config.rate > 0.0 || config.pattern != Pattern::Constant) {
            return Err(LoadError::BadRate);
        }
        if client && config.engine.remote.is_none() {
            return Err(LoadError::NoRemote);
        }
        let sampler = SutSampler::new(config.sut_pids.clone());
        sampler.check().map_err(LoadError::NoSut)?;
        if let Some(model) = &config.service_model {
            model.check()?;
            if client {
                return Err(LoadError::ServiceOnClient);
            }
            if config.engine.transport != Transport::Udp || config.sigcomp {
                return Err(LoadError::ServiceNotPlainUdp);
            }
        }
        let (net, local) = match config.engine.transport {
            Transport::Udp => {
                let s = bind_udp(config.engine.local)
                    .map_err(|source| LoadError::Bind { addr: config.engine.local, source })?;
                let local = s.local_addr()?;
                (Net::Udp(s), local)
            }
            Transport::Tcp => {
                let (tx, rx) = mpsc::channel(4096);
                let mut net = TcpNet { rx, writers: HashMap::new(), only: None, closed: 0 };
                let local = if client {
                    let to = config.engine.next_hop.or(config.engine.remote).ok_or(LoadError::NoRemote)?;
                    let socket = if config.engine.local.is_ipv4() {
                        tokio::net::TcpSocket::new_v4()?
                    } else {
                        tokio::net::TcpSocket::new_v6()?
                    };
                    socket
                        .bind(config.engine.local)
                        .map_err(|source| LoadError::Bind { addr: config.engine.local, source })?;
                    let stream: TcpStream =
                        socket.connect(to).await.map_err(|source| LoadError::Connect { addr: to, source })?;
                    let local = stream.local_addr()?;
                    let (r, w) = stream.into_split();
                    net.event(TcpEvent::Connected(to, w));
                    net.only = Some(to);
                    tokio::spawn(tcp_reader(to, r, tx));
                    local
                } else {
                    let listener = TcpListener::bind(config.engine.local)
                        .await
                        .map_err(|source| LoadError::Bind { addr: config.engine.local, source })?;
                    let local = listener.local_addr()?;
                    tokio::spawn(async move {
                        while let Ok((stream, peer)) = listener.accept().await {
                            let (r, w) = stream.into_split();
                            if tx.send(TcpEvent::Connected(peer, w)).await.is_err() {
                                return;
                            }
                            tokio::spawn(tcp_reader(peer, r, tx.clone()));
                        }
                    });
                    local
                };
                (Net::Tcp(net), local)
            }
        };
        let control_socket = match config.control_port {
            Some(port) => {
                let addr = SocketAddr::new(config.engine.local.ip(), port);
                Some(UdpSocket::bind(addr).await.map_err(|source| LoadError::Bind { addr, source })?)
            }
            None => None,
        };
        let sigcomp = if config.sigcomp { Some(SigcompLayer::new(config.engine.transport)?) } else { None };
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        let (progress_tx, _) = watch::channel(Progress::default());
        let tracer = match &config.trace {
            Some(t) if t.any() => {
                let transport = match config.engine.transport {
                    Transport::Udp => "UDP",
                    Transport::Tcp => "TCP",
                };
                Some(Tracer::open(t.clone(), &scenario, transport, Instant::now())?)
            }
            _ => None,
        };
        Ok(Prepared {
            config,
            scenario,
            net,
            local,
            control_socket,
            control_tx,
            control_rx,
            progress_tx,
            sigcomp,
            tracer,
        })
    }

    /// The address the transport is bound to (the port picked, for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The control socket's address, with `control_port`.
    pub fn control_addr(&self) -> Option<SocketAddr> {
        self.control_socket.as_ref().and_then(|s| s.local_addr().ok())
    }

    /// A handle that changes the rate, pauses or stops the run.
    pub fn control(&self) -> Control {
        Control { tx: self.control_tx.clone() }
    }

    /// Live progress, updated every `progress_every`, at each interval row and at the end.
    pub fn progress(&self) -> watch::Receiver<Progress> {
        self.progress_tx.subscribe()
    }

    /// The scenario the run follows (the built-in one of `role` when none was given).
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Runs to the end (calls, duration, a quit command, or `stop`
    /// turning true).
    pub async fn run(self, stop: Option<watch::Receiver<bool>>) -> Result<RunReport, LoadError> {
        run_loop(self, stop).await
    }
}

/// Binds and runs.
pub async fn run(config: LoadConfig, stop: Option<watch::Receiver<bool>>) -> Result<RunReport, LoadError> {
    Prepared::bind(config).await?.run(stop).await
}

async fn wait_stop(stop: &mut Option<watch::Receiver<bool>>) {
    match stop {
        Some(s) => {
            if s.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending::<()>().await,
    }
}

async fn recv_control(socket: &Option<UdpSocket>, buf: &mut [u8]) -> Option<usize> {
    match socket {
        Some(s) => s.recv_from(buf).await.ok().map(|(n, _)| n),
        None => std::future::pending().await,
    }
}

/// Most calls started in one turn of the loop, so a rate far above what
/// the machine sustains still lets responses in.
const STARTS_PER_TURN: usize = 256;

struct Run {
    engine: Engine,
    rate: RateController,
    /// SIPp's rate unit: calls per `period`.
    period: Duration,
    limit: Option<usize>,
    max_calls: Option<u64>,
    started: u64,
    quitting: bool,
    quit_now: bool,
}

impl Run {
    fn apply(&mut self, c: ControlCommand, now: Instant) {
        let per = self.period.as_secs_f64().max(1e-9);
        match c {
            ControlCommand::SetRate(r) => self.rate.set_rate(r / per, now),
            ControlCommand::AddRate(d) => {
                let r = (self.rate.current_cps(now) * per + d).max(0.0);
                self.rate.set_rate(r / per, now);
            }
            ControlCommand::SetLimit(l) => self.limit = Some(l),
            ControlCommand::TogglePause => self.rate.toggle_pause(now),
            // SIPp's q: the first waits for the calls in progress, a
            // second ends the run at once.
            ControlCommand::Quit => {
                self.quit_now |= self.quitting;
                self.quitting = true;
            }
            ControlCommand::QuitNow => self.quit_now = true,
        }
    }

    /// Places the calls due at `now`, at most [`STARTS_PER_TURN`] (a
    /// client): SIPp's -l leaves a call unplaced while that many are
    /// active, and -m stops after that many.
    fn start_calls(&mut self, now: Instant) {
        let mut n = 0;
        while n < STARTS_PER_TURN && self.max_calls.is_none_or(|m| self.started < m) {
            let Some(step) = self.rate.poll(now) else { break };
            n += 1;
            if self.limit.is_some_and(|l| self.engine.active() >= l) {
                // SIPp's -l: the call is not placed.
                self.engine.call_offered(step);
                continue;
            }
            self.engine.start_call(now, step);
            self.started += 1;
        }
    }

    /// Whether a client has placed every call it will (`-m` of them, or its load pattern's end).
    fn placed_all(&self) -> bool {
        self.max_calls.is_some_and(|m| self.started >= m) || self.rate.finished()
    }

    /// Whether the run's calls are over: a client's once it has placed
    /// all it will and none is active; a server's once -m calls ended, or
    /// it was told to quit and none is active.
    fn calls_done(&mut self, client: bool, start: Instant, now: Instant) -> bool {
        if client {
            let placed_all = self.placed_all();
            if placed_all || self.quitting {
                let end = last_step_end(&self.rate, start).unwrap_or(now).min(now);
                self.engine.recorder.load_ended(end);
            }
            (placed_all || self.quitting) && self.engine.active() == 0
        } else {
            let ended = self.engine.recorder.total.successful + self.engine.recorder.total.failed;
            self.max_calls.is_some_and(|m| ended >= m) || self.quitting && self.engine.active() == 0
        }
    }
}

/// The run's rows every `-fd`, with the system under test's usage.
struct Reports {
    sampler: SutSampler,
    every: Duration,
    /// When the next row is due, and when the last one ended.
    next: Instant,
    last: Instant,
    intervals: Vec<Interval>,
}

impl Reports {
    fn new(config: &LoadConfig, start: Instant) -> Reports {
        let mut sampler = SutSampler::new(config.sut_pids.clone());
        sampler.sample(start);
        let every = config.report_every.max(Duration::from_millis(10));
        Reports { sampler, every, next: start + every, last: start, intervals: Vec::new() }
    }

    /// The row of the interval ending `now`.
    fn add(&mut self, run: &mut Run, start: Instant, now: Instant) {
        let sut = self.sampler.sample(now);
        self.intervals.push(interval_row(run, start, self.last, now, sut));
        self.last = now;
        self.next = now + self.every;
    }

    /// The last row, at the run's end: only if calls moved since the last
    /// one (or there is none).
    fn close(&mut self, run: &mut Run, start: Instant, now: Instant) {
        let i = &run.engine.recorder.interval;
        if now > self.last && (i.attempted + i.successful + i.failed > 0 || self.intervals.is_empty()) {
            self.add(run, start, now);
        }
    }
}

/// The run's summary: `from` is when it began for its calls (a server's
/// first message), `now` its end.
fn summary_of(
    config: &LoadConfig,
    scenario: &str,
    run: &Run,
    from: Instant,
    now: Instant,
    in_progress: u64,
    reports: &Reports,
) -> Summary {
    let client = run.engine.is_client();
    let elapsed =
        run.engine.recorder.last_success.map_or_else(|| now - from, |t| t - from).max(Duration::from_millis(1));
    Summary::of(
        if client { "uac" } else { "uas" },
        scenario,
        match config.engine.transport {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
        },
        &run.engine.recorder,
        elapsed,
        if client { config.offered_cps() } else { 0.0 },
        in_progress,
        reports.sampler.overall(),
    )
}

async fn run_loop(p: Prepared, mut stop: Option<watch::Receiver<bool>>) -> Result<RunReport, LoadError> {
    let Prepared {
        config,
        scenario,
        mut net,
        local,
        control_socket,
        control_tx,
        mut control_rx,
        progress_tx,
        mut sigcomp,
        mut tracer,
    } = p;
    drop(control_tx);
    let start = Instant::now();
    // The address bound, which with port 0 is not the one asked for.
    let engine_config = EngineConfig { local, ..config.engine.clone() };
    let engine = Engine::new(Arc::clone(&scenario), engine_config, config.injection.clone(), start);
    let client = engine.is_client();
    let rate =
        RateController::new(config.pattern.clone(), config.arrivals, config.offered_cps(), start, config.engine.seed);
    let mut run = Run {
        engine,
        rate,
        period: config.rate_period,
        limit: config.max_concurrent,
        max_calls: config.max_calls,
        started: 0,
        quitting: false,
        quit_now: false,
    };
    let mut reports = Reports::new(&config, start);
    if let Some(t) = &mut tracer {
        t.begin(start);
        run.engine.trace = t.engine_trace();
        stat_row(t, &run, &config, start);
    }
    let end = config.duration.map(|d| start + d);
    let mut updates = Updates::new(&config, start);
    let mut buf: Vec<u8> = vec![0; 65536];
    let mut plain: Vec<u8> = Vec::with_capacity(65536);
    let mut ctl_buf = vec![0u8; 2048];
    let mut first_message: Option<Instant> = None;
    let mut outbox = Outbox::default();
    let mut service = config.service_model.clone().map(|m| ServiceQueue::new(m, config.engine.seed, start));
    let mut served: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    let ended_by = loop {
        let now = Instant::now();
        if let Some(t) = &mut tracer {
            t.take(&mut run.engine);
        }
        while let Ok(c) = control_rx.try_recv() {
            run.apply(c, now);
        }
        if let Some(q) = &mut service {
            q.take_done(now, &mut served);
            for (from, bytes) in served.drain(..) {
                deliver(&mut run.engine, &mut sigcomp, &mut tracer, now, from, &bytes, &mut plain);
            }
        }
        if client && !run.quitting {
            run.start_calls(now);
        }
        run.engine.handle_timeout(now);
        flush(&mut run.engine, &mut net, &mut sigcomp, &mut tracer, &mut outbox).await;
        let mut update = now >= updates.next;
        if now >= reports.next {
            reports.add(&mut run, start, now);
            if let Some(t) = &mut tracer {
                stat_row(t, &run, &config, now);
                t.flush();
            }
            update = true;
        }
        if update {
            let _ = progress_tx.send(updates.progress(&run, start, now, &reports, false));
        }
        if run.calls_done(client, start, now) {
            break EndReason::Calls;
        }
        if run.quit_now {
            break EndReason::QuitNow;
        }
        if end.is_some_and(|e| now >= e) {
            break EndReason::Duration;
        }
        if stop.as_ref().is_some_and(|s| *s.borrow()) {
            break EndReason::Stopped;
        }
        let starting = if client && !run.quitting { run.rate.next_due() } else { None };
        let serving = service.as_ref().and_then(|q| q.poll_timeout());
        let wake = [starting, run.engine.poll_timeout(), serving, Some(reports.next), Some(updates.next), end]
            .into_iter()
            .flatten()
            .min();
        let wake = wake.unwrap_or(now + Duration::from_secs(1));
        tokio::select! {
            got = net.recv(&mut buf) => {
                if let Some((n, from)) = got {
                    let now = Instant::now();
                    first_message.get_or_insert(now);
                    // Whatever else has arrived too, without going back to
                    // the scheduler.
                    let mut got = Some((n, from));
                    for _ in 0..1024 {
                        let Some((n, from)) = got.take() else { break };
                        match &mut service {
                            Some(q) => {
                                q.offer(now, from, &buf[..n]);
                            }
                            None => {
                                deliver(&mut run.engine, &mut sigcomp, &mut tracer, now, from, &buf[..n], &mut plain)
                            }
                        }
                        got = net.try_recv(&mut buf);
                    }
                    flush(&mut run.engine, &mut net, &mut sigcomp, &mut tracer, &mut outbox).await;
                }
            }
            n = recv_control(&control_socket, &mut ctl_buf) => {
                if let Some(n) = n {
                    let (cmds, _) = control::parse(&String::from_utf8_lossy(&ctl_buf[..n]));
                    let now = Instant::now();
                    for c in cmds {
                        run.apply(c, now);
                    }
                }
            }
            c = control_rx.recv(), if !control_rx.is_closed() => {
                if let Some(c) = c {
                    run.apply(c, Instant::now());
                }
            }
            _ = tokio::time::sleep_until(wake.into()) => {}
            _ = wait_stop(&mut stop) => {}
        }
    };
    let now = Instant::now();
    reports.close(&mut run, start, now);
    let in_progress = run.engine.abandon_all() as u64;
    let (trace_files, trace_error) = match tracer {
        Some(mut t) => {
            stat_row(&mut t, &run, &config, now);
            match t.finish(&mut run.engine) {
                Ok(files) => (files, None),
                Err(e) => (Vec::new(), Some(e.to_string())),
            }
        }
        None => (Vec::new(), None),
    };
    let from = if client { start } else { first_message.unwrap_or(start) };
    let mut summary = summary_of(&config, &scenario.name, &run, from, now, in_progress, &reports);
    summary.sigcomp = sigcomp.as_ref().map(|l| l.counts);
    summary.service = service.as_ref().map(|q| q.counts());
    let steps = step_rows(&run, start, now, in_progress);
    let _ = progress_tx.send(updates.progress(&run, start, now, &reports, true));
    Ok(RunReport {
        summary,
        intervals: reports.intervals,
        steps,
        local: Some(local),
        ended_by,
        trace_files,
        trace_error,
    })
}

/// A row of the `-trace_stat` file at `now`: the rate asked for in SIPp's
/// unit (calls per `-rp`; a server's `-r`, as SIPp writes it).
fn stat_row(t: &mut Tracer, run: &Run, config: &LoadConfig, now: Instant) {
    let client = run.engine.is_client();
    let rate = if client { run.rate.current_cps(now) * run.period.as_secs_f64() } else { config.rate };
    t.stat_row(&run.engine.recorder, run.engine.active() as u64, rate, client, now);
}

fn deliver(
    engine: &mut Engine,
    sigcomp: &mut Option<SigcompLayer>,
    tracer: &mut Option<Tracer>,
    now: Instant,
    from: SocketAddr,
    bytes: &[u8],
    plain: &mut Vec<u8>,
) {
    match sigcomp {
        None => {
            if let Some(t) = tracer {
                t.received(bytes);
            }
            engine.on_message(now, from, bytes)
        }
        Some(layer) => {
            if layer.receive(now, from, bytes, plain) {
                if let Some(t) = tracer {
                    t.received(plain);
                }
                engine.on_message(now, from, plain);
            } else {
                engine.recorder.unexpected();
            }
        }
    }
}

async fn flush(
    engine: &mut Engine,
    net: &mut Net,
    sigcomp: &mut Option<SigcompLayer>,
    tracer: &mut Option<Tracer>,
    spare: &mut Outbox,
) {
    if engine.outbox().is_empty() && sigcomp.as_ref().is_none_or(|l| !l.has_replies()) {
        return;
    }
    let out = engine.take_outbox();
    if let Some(t) = tracer {
        for (_, bytes) in out.iter() {
            t.sent(bytes);
        }
    }
    match sigcomp {
        None => net.send_all(&out).await,
        Some(layer) => {
            spare.clear();
            for (to, bytes) in out.iter() {
                match layer.compress(Instant::now(), to, bytes) {
                    Ok(c) => spare.push(to, &c),
                    Err(_) => spare.push(to, bytes),
                }
            }
            for (to, nack) in layer.take_replies() {
                spare.push(to, &nack);
            }
            net.send_all(spare).await;
        }
    }
    engine.return_outbox(out);
}

fn interval_row(
    run: &mut Run,
    start: Instant,
    from: Instant,
    now: Instant,
    sut: Option<crate::metrics::SutUsage>,
) -> Interval {
    let r = &run.engine.recorder;
    let row = Interval::of(
        (now - start).as_secs_f64(),
        (now - from).as_secs_f64(),
        run.rate.current_step(now),
        if run.engine.is_client() { run.rate.current_cps(now) } else { 0.0 },
        r,
        &r.interval,
        run.engine.active(),
        sut,
    );
    run.engine.recorder.interval.reset();
    row
}

/// When the load's last step ended: one arrival gap after its last call
/// was placed (for evenly spaced arrivals, the step's nominal end).
fn last_step_end(rate: &RateController, start: Instant) -> Option<Instant> {
    let last = rate.spans().last()?;
    Some(start + Duration::from_secs_f64(step_end_s(last)))
}

/// A step's end, seconds since the run started: its last call placed and
/// one arrival gap (1/rate) after it.
fn step_end_s(span: &StepSpan) -> f64 {
    let gap = if span.cps > 0.0 { 1.0 / span.cps } else { 0.0 };
    span.end_s + gap
}

/// The load steps' rows, each over its own duration (from its first call
/// placed to its end, [`step_end_s`], and no later than the next step's
/// start or the run's end); the last one carries the run's tail, the time
/// after it in which the run waited for calls in progress.
fn step_rows(run: &Run, start: Instant, now: Instant, in_progress: u64) -> Vec<StepReport> {
    let r = &run.engine.recorder;
    let spans = run.rate.spans();
    let run_end_s = (now - start).as_secs_f64();
    let mut rows: Vec<StepReport> = r
        .steps
        .iter()
        .enumerate()
        .filter(|(_, c)| c.offered + c.attempted > 0)
        .map(|(i, c)| {
            let span = spans.iter().find(|s| s.index == i);
            let start_s = span.map_or(0.0, |s| s.start_s);
            let next_start = spans.iter().find(|s| s.index > i).map_or(run_end_s, |s| s.start_s);
            let stop_s = span.map_or(run_end_s, step_end_s).min(next_start).min(run_end_s).max(start_s);
            let cps = if run.engine.is_client() { run.rate.nominal_rate(i) } else { 0.0 };
            StepReport::of(i, cps, start_s, stop_s, r, c)
        })
        .collect();
    if let (Some(last), true) = (rows.last_mut(), run.engine.is_client()) {
        if last.end_s < run_end_s {
            last.tail = Some(Tail {
                start_s: last.end_s,
                end_s: run_end_s,
                successful: r.tail_successful,
                failed: r.tail_failed,
                unfinished: in_progress,
            });
        }
    }
    rows
}
