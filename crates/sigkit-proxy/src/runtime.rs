//! The proxy on tokio: sockets, TCP connections and their framing, the
//! timer, the metrics and admin endpoint (`http.rs`) and shutdown. All SIP and SigComp
//! behaviour is in [`crate::core::Proxy`]; this module moves bytes.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sigcomp::wire::{frame_for_stream, Deframer, Frame};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{mpsc, watch};

use crate::config::{ProxyConfig, SipTransport};
use crate::connections::{AcceptError, Activity, Closed, Connections, Queued};
use crate::core::{Encoding, LocalAddrs, Peer, Proxy, Shard, Side, Transmit};
use sigkit_sip::Message;

mod datagrams;
mod deadlines;
mod http;
mod tap;
use datagrams::BatchReceiver;
use deadlines::Deadlines;
use tap::Tap;

/// Longest SIP message or SigComp message the proxy takes (RFC 3320 §4.2.2
/// leaves the bound to the implementation; SIP messages are a few KiB).
const MAX_MESSAGE: usize = 1 << 16;

/// A running proxy: its bound addresses, and how to stop it.
pub struct Running {
    /// The sockets toward terminals, one per `listen` address, with the
    /// port the system gave where `listen` asked for port 0.
    pub terminal_addrs: Vec<(SipTransport, SocketAddr)>,
    /// The local address of the UDP socket toward the upstream, as bound
    /// from `upstream_local` (by default the upstream's IP address, with
    /// the port the system gave).
    pub upstream_local: SocketAddr,
    /// Where the Prometheus metrics and the admin interface are served
    /// (`metrics`, bound; [`crate::admin`]); `None` when `metrics` is
    /// unset.
    pub metrics_addr: Option<SocketAddr>,
    shutdown: watch::Sender<bool>,
    done: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
}

impl Running {
    /// Runs `f` on each shard's state (for inspection: metrics, states).
    pub fn inspect<R>(&self, mut f: impl FnMut(&Proxy) -> R) -> Vec<R> {
        self.shared.shards.iter().filter_map(|p| p.lock().ok().map(|p| f(&p))).collect()
    }

    /// Stops accepting, lets the tasks end, and waits for them.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        let _ = self.done.await;
    }

    /// How many times upstream messages were parsed as SIP: by the
    /// receiver to find their shard, and by the shards' cores themselves.
    /// Each is parsed once, by the receiver, and its parse goes on to the
    /// shard, so this equals the upstream datagrams received.
    pub fn upstream_parses(&self) -> u64 {
        let by_cores: u64 = self.inspect(|p| p.metrics().upstream_parses).iter().sum();
        self.shared.upstream_parses.load(Ordering::Relaxed) + by_cores
    }

    /// How many times the timer task woke to run due timers: once per
    /// deadline the shards reported (a few coalesced), not on a tick.
    pub fn timer_wakeups(&self) -> u64 {
        self.shared.deadlines.wakeups.load(Ordering::Relaxed)
    }

    /// Waits until the proxy stops (SIGTERM, SIGINT or [`Running::stop`]).
    pub async fn wait(self) {
        let _ = self.done.await;
    }
}

struct Shared {
    /// One proxy per worker thread, each owning its terminals' flows and
    /// compartments ([`Shard`]), so messages of different terminals are
    /// handled in parallel.
    shards: Vec<Mutex<Proxy>>,
    /// TCP connections to terminals: their writers and caps.
    conns: Connections,
    next_conn: AtomicU64,
    /// The terminal-side UDP sockets by local address.
    udp: HashMap<SocketAddr, Arc<UdpSocket>>,
    upstream: Arc<UdpSocket>,
    /// The instance written in every shard's flow tokens.
    instance: u64,
    /// Upstream datagrams parsed to find their shard
    /// ([`Running::upstream_parses`]).
    upstream_parses: AtomicU64,
    /// The shards' next deadlines, for the timer task.
    deadlines: Deadlines,
    /// What `GET /status` tells besides the shards' counts.
    info: Info,
    /// The capture tap (`hep`, `capture`), when configured.
    tap: Option<Tap>,
}

/// The facts of a running proxy that `GET /status` reports.
struct Info {
    started: Instant,
    stateful: bool,
    /// The sockets toward terminals, as bound.
    listen: Vec<(SipTransport, SocketAddr)>,
    /// The SIP server behind the proxy.
    upstream: SocketAddr,
}

/// Messages queued for one terminal's TCP connection before it counts as
/// stuck and is closed.
const CONN_QUEUE: usize = 256;

impl Shared {
    /// Queues what goes to terminals over TCP on their connections, and
    /// returns the rest (datagrams) for [`Shared::flush`]. The caller holds
    /// the lock of the shard that produced `out`: over a stream the
    /// compressor names a state as soon as the message creating it is sent
    /// (RFC 3320 §5.1), so messages must reach the connection in the order
    /// they were compressed, which another thread handling the next
    /// message of the same terminal would otherwise overtake.
    ///
    /// A connection whose queue is full is closed rather than waited on
    /// (waiting would stall every terminal behind the receiver that waits);
    /// the terminal connects again and a NACK (RFC 4077) recovers any state
    /// it missed.
    fn queue_streams(&self, proxy: &mut Proxy, out: Vec<Transmit>) -> Vec<Transmit> {
        let mut datagrams = Vec::with_capacity(out.len());
        for t in out {
            if (t.side, t.to.transport) != (Side::Terminal, SipTransport::Tcp) {
                datagrams.push(t);
                continue;
            }
            let Some(id) = t.to.conn else {
                tracing::debug!(to = %t.to.addr, "no TCP connection to the terminal");
                continue;
            };
            let mut bytes = t.bytes;
            if t.encoding == Encoding::SigComp {
                let mut framed = Vec::with_capacity(bytes.len() + 8);
                frame_for_stream(&bytes, &mut framed);
                bytes = framed;
            }
            match self.conns.queue(id, bytes) {
                Queued::Yes => {}
                Queued::Stuck => {
                    tracing::warn!(to = %t.to.addr, queued = CONN_QUEUE, "terminal not reading: closing its connection");
                    proxy.record_stuck_connection();
                }
                Queued::Gone => tracing::debug!(to = %t.to.addr, "the terminal's TCP connection is gone"),
            }
        }
        datagrams
    }

    /// Sends datagrams the proxy produced ([`Shared::queue_streams`] took
    /// the rest), in order: each run of datagrams leaving by one socket
    /// goes in batches ([`datagrams::send_all`]).
    async fn flush(&self, out: Vec<Transmit>) {
        let mut run: Vec<(SocketAddr, &[u8])> = Vec::with_capacity(out.len());
        let mut run_socket: Option<&UdpSocket> = None;
        for t in &out {
            let socket = match t.side {
                Side::Upstream => Some(&*self.upstream),
                Side::Terminal => {
                    t.to.local.and_then(|l| self.udp.get(&l)).or_else(|| self.udp.values().next()).map(|s| &**s)
                }
            };
            let Some(socket) = socket else { continue };
            if run_socket.is_some_and(|r| !std::ptr::eq(r, socket)) {
                if let Some(r) = run_socket {
                    datagrams::send_all(r, &run).await;
                }
                run.clear();
            }
            run_socket = Some(socket);
            run.push((t.to.addr, &t.bytes));
        }
        if let Some(r) = run_socket {
            datagrams::send_all(r, &run).await;
        }
    }

    fn shard_count(&self) -> u32 {
        self.shards.len() as u32
    }

    /// The proxy of the shard that holds `terminal`'s flows, locked.
    fn terminal_shard(&self, terminal: SocketAddr) -> Option<MutexGuard<'_, Proxy>> {
        self.shards.get(Shard::of_terminal(terminal, self.shard_count()) as usize)?.lock().ok()
    }

    /// Parses an upstream datagram once, to find its shard: what the proxy
    /// wrote into it ([`Shard::of_upstream`]); the parse goes on to that
    /// shard with the bytes. What is not SIP goes to shard 0 to be counted.
    fn route_upstream(&self, bytes: Vec<u8>) -> (u32, Payload) {
        self.upstream_parses.fetch_add(1, Ordering::Relaxed);
        match ParsedUpstream::try_new_or_recover(bytes, |b| Message::parse(b)) {
            Ok(parsed) => {
                let shard = Shard::of_upstream(parsed.borrow_dependent(), self.shard_count(), self.instance);
                (shard, Payload::Upstream(parsed))
            }
            Err((bytes, _)) => (0, Payload::UpstreamNotSip(bytes.len())),
        }
    }

    /// Hands one message from a terminal to its shard's proxy; returns the
    /// datagrams to send (what goes over TCP is queued on its connection
    /// already).
    fn handle_terminal(&self, from: Peer, bytes: &[u8], encoding: Encoding) -> Vec<Transmit> {
        let index = Shard::of_terminal(from.addr, self.shard_count());
        self.handle_on(index, |p, now| p.from_terminal(now, from, bytes, encoding))
    }

    /// A datagram its receiver routed to shard `index`, handled there.
    fn handle_datagram(&self, index: u32, d: &Datagram) -> Vec<Transmit> {
        self.handle_on(index, |p, now| match &d.payload {
            Payload::Terminal { bytes, encoding } => p.from_terminal(now, d.from, bytes, *encoding),
            Payload::Upstream(parsed) => p.upstream_message(now, parsed.borrow_dependent()),
            Payload::UpstreamNotSip(len) => p.upstream_not_sip(*len),
        })
    }

    /// Runs `feed` on shard `index`'s proxy with the time, and returns the
    /// datagrams it produced (what goes over TCP is queued on its
    /// connection, in order, before the lock is released).
    fn handle_on(&self, index: u32, feed: impl FnOnce(&mut Proxy, Instant)) -> Vec<Transmit> {
        let Some(mut p) = self.shards.get(index as usize).and_then(|m| m.lock().ok()) else {
            return Vec::new();
        };
        let now = Instant::now();
        feed(&mut p, now);
        if let Some(tap) = &self.tap {
            tap.take(&mut p);
        }
        self.deadlines.set(index as usize, p.poll_timeout());
        let out = std::iter::from_fn(|| p.poll_transmit()).collect();
        p.record_handling(now.elapsed());
        let datagrams = self.queue_streams(&mut p, out);
        drop(p);
        datagrams
    }
}

/// An error binding `addr` that names it, keeping the error's kind (a
/// caller may retry on `AddrInUse`).
fn bind_error(transport: &str, addr: SocketAddr, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("binding {transport}:{addr}: {e}"))
}

/// Asks for a receive buffer of `bytes` (0: the system's default). The
/// kernel may grant less (Linux: `net.core.rmem_max`); that is logged, not
/// refused, since the proxy works with any buffer, only losing more of a
/// burst.
fn set_receive_buffer(socket: &UdpSocket, bytes: usize) {
    if bytes == 0 {
        return;
    }
    let s = socket2::SockRef::from(socket);
    if let Err(e) = s.set_recv_buffer_size(bytes) {
        tracing::warn!(bytes, error = %e, "SO_RCVBUF not set");
        return;
    }
    // Linux reports twice the size asked for (the kernel's bookkeeping
    // share, socket(7)), so a grant below `bytes` means it was capped.
    match s.recv_buffer_size() {
        Ok(got) if got < bytes => {
            tracing::info!(asked = bytes, granted = got, "UDP receive buffer capped by the system (net.core.rmem_max)")
        }
        Ok(_) => {}
        Err(e) => tracing::debug!(error = %e, "SO_RCVBUF not readable"),
    }
}

/// Binds every socket and starts the proxy on the current tokio runtime.
pub async fn start(config: ProxyConfig) -> io::Result<Running> {
    config.validate().map_err(io::Error::other)?;
    let upstream = config.upstream.as_ref().ok_or_else(|| io::Error::other("no upstream"))?;
    let upstream = crate::locate::locate_upstream(upstream).await.map_err(io::Error::other)?;
    let upstream_local = config.upstream_local.unwrap_or_else(|| SocketAddr::new(upstream.addr.ip(), 0));
    let mut udp = HashMap::new();
    let mut tcp = Vec::new();
    let mut terminal_addrs = Vec::new();
    for l in &config.listen {
        match l.transport {
            SipTransport::Udp => {
                let s = Arc::new(UdpSocket::bind(l.addr).await.map_err(|e| bind_error("udp", l.addr, e))?);
                set_receive_buffer(&s, config.udp_receive_buffer);
                let a = s.local_addr()?;
                terminal_addrs.push((SipTransport::Udp, a));
                udp.insert(a, s);
            }
            SipTransport::Tcp => {
                let s = TcpListener::bind(l.addr).await.map_err(|e| bind_error("tcp", l.addr, e))?;
                terminal_addrs.push((SipTransport::Tcp, s.local_addr()?));
                tcp.push(s);
            }
        }
    }
    // After the listeners: an ephemeral port picked for the upstream side
    // must not take a port configured for terminals.
    let upstream_socket =
        Arc::new(UdpSocket::bind(upstream_local).await.map_err(|e| bind_error("udp", upstream_local, e))?);
    set_receive_buffer(&upstream_socket, config.udp_receive_buffer);
    let upstream_local = upstream_socket.local_addr()?;
    let metrics_listener = match config.metrics {
        Some(a) => Some(TcpListener::bind(a).await.map_err(|e| bind_error("tcp", a, e))?),
        None => None,
    };
    let metrics_addr = metrics_listener.as_ref().map(|l| l.local_addr()).transpose()?;
    let addrs = LocalAddrs { terminal: terminal_addrs.clone(), upstream: upstream_local, upstream_peer: upstream.addr };
    for (transport, addr) in &terminal_addrs {
        // What a terminal's outbound proxy should be (docs/deploy.md,
        // "Configuring terminals"): with the proxy's sigcomp-id, every
        // identifier the terminal has for the proxy is one (RFC 5049 §6.1).
        let at = config.route_terminal.unwrap_or(*addr);
        let tcp = (*transport == SipTransport::Tcp).then_some("tcp");
        let host = if at.ip().is_unspecified() { "HOST".to_string() } else { at.ip().to_string() };
        let uri = sigkit_sip::proxy::route_uri(&host, Some(at.port()), tcp, Some(&config.sigcomp_id));
        tracing::info!(%uri, "terminals: outbound proxy URI");
    }
    let workers = match config.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    } as u32;
    let count = match config.shards {
        0 => workers,
        n => u32::try_from(n).unwrap_or(u32::MAX),
    };
    let instance = crate::core::new_instance_id();
    let tap = Tap::start(&config)?;
    let shards = (0..count)
        .map(|index| {
            let mut p = Proxy::sharded(&config, addrs.clone(), Shard { index, count, instance })?;
            p.set_capture(tap.is_some());
            Ok(Mutex::new(p))
        })
        .collect::<Result<Vec<_>, crate::ConfigError>>()
        .map_err(io::Error::other)?;
    if !tcp.is_empty() {
        check_descriptor_limit(config.tcp.max_connections);
    }
    let shared = Arc::new(Shared {
        shards,
        conns: Connections::new(config.tcp.clone()),
        next_conn: AtomicU64::new(1),
        udp: udp.clone(),
        upstream: upstream_socket.clone(),
        instance,
        upstream_parses: AtomicU64::new(0),
        deadlines: Deadlines::new(count as usize),
        info: Info {
            started: Instant::now(),
            stateful: config.stateful,
            listen: terminal_addrs.clone(),
            upstream: upstream.addr,
        },
        tap,
    });
    let (shutdown, stop) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    // One receiver per socket hands each datagram to its shard's worker,
    // and each worker handles its shard's datagrams one at a time and sends
    // what they produce before taking the next. A terminal's messages are
    // so forwarded in the order they arrived (an ACK is not overtaken by
    // the re-INVITE sent after it), and what the proxy sends a terminal
    // leaves in the order it was compressed; different shards still run
    // on different threads.
    let mut queues = Vec::with_capacity(count as usize);
    for index in 0..count {
        let (tx, rx) = mpsc::channel(SHARD_QUEUE);
        queues.push(tx);
        tasks.spawn(shard_worker(shared.clone(), index, rx));
    }
    let queues: Arc<[mpsc::Sender<Datagram>]> = queues.into();
    for (local, socket) in &udp {
        tasks.spawn(udp_loop(shared.clone(), queues.clone(), socket.clone(), *local, Side::Terminal, stop.clone()));
    }
    tasks.spawn(udp_loop(
        shared.clone(),
        queues,
        upstream_socket.clone(),
        upstream_local,
        Side::Upstream,
        stop.clone(),
    ));
    for listener in tcp {
        tasks.spawn(tcp_accept(shared.clone(), listener, stop.clone()));
    }
    tasks.spawn(timer(shared.clone(), stop.clone()));
    if let Some(l) = metrics_listener {
        tasks.spawn(http::serve(shared.clone(), l, stop.clone()));
    }
    tasks.spawn(signals(shutdown.clone()));
    let inspected = shared.clone();
    let closed = shared.clone();
    let done = tokio::spawn(async move {
        let mut stop = stop;
        let _ = stop.wait_for(|s| *s).await;
        tasks.shutdown().await;
        // What the shards captured is sent and the capture file flushed
        // before the proxy counts as stopped.
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(tap) = &closed.tap {
                tap.close();
            }
        })
        .await;
        tracing::info!("stopped");
    });
    Ok(Running { terminal_addrs, upstream_local, metrics_addr, shutdown, done, shared: inspected })
}

async fn signals(shutdown: watch::Sender<bool>) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
        _ = int.recv() => tracing::info!("SIGINT: stopping"),
    }
    let _ = shutdown.send(true);
}

/// A datagram on its way to its shard's worker.
struct Datagram {
    from: Peer,
    payload: Payload,
}

/// What a datagram carries to its worker: what its receiver learned of it.
enum Payload {
    /// From a terminal: SigComp or plain SIP, parsed by the shard (after
    /// decompression, for SigComp).
    Terminal { bytes: Vec<u8>, encoding: Encoding },
    /// From the upstream, parsed by the receiver to find the shard.
    Upstream(ParsedUpstream),
    /// From the upstream, not SIP: its length, to count it.
    UpstreamNotSip(usize),
}

self_cell::self_cell!(
    /// An upstream datagram's bytes and their SIP parse, which borrows
    /// them: the receiver parses once to find the shard, and the shard's
    /// core takes the same parse.
    struct ParsedUpstream {
        owner: Vec<u8>,
        #[covariant]
        dependent: Message,
    }
);

/// Datagrams waiting for one shard's worker. When it is full the receiver
/// waits, the socket's buffer fills, and the kernel drops what comes next,
/// as it would for a proxy that reads no faster.
const SHARD_QUEUE: usize = 1024;

async fn udp_loop(
    shared: Arc<Shared>,
    queues: Arc<[mpsc::Sender<Datagram>]>,
    socket: Arc<UdpSocket>,
    local: SocketAddr,
    side: Side,
    mut stop: watch::Receiver<bool>,
) {
    let mut receiver = match BatchReceiver::new(&socket, MAX_MESSAGE) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(%local, error = %e, "UDP socket not readable in batches: not receiving");
            return;
        }
    };
    let mut batch = Vec::with_capacity(datagrams::RECV_BATCH);
    loop {
        tokio::select! {
            r = receiver.recv(&socket) => match r {
                Ok(received) => batch.extend(received.filter(|(d, _)| !d.is_empty()).map(|(d, from)| {
                    let from = Peer { transport: SipTransport::Udp, addr: from, local: Some(local), conn: None };
                    (from, d.to_vec())
                })),
                Err(e) => {
                    tracing::debug!(error = %e, "recv failed");
                    continue;
                }
            },
            _ = stop.changed() => return,
        }
        // In the order read: a source's datagrams reach its shard's queue
        // in the order they arrived.
        for (from, bytes) in batch.drain(..) {
            let (shard, payload) = match side {
                Side::Terminal => {
                    let encoding = Encoding::of_first_byte(bytes[0]);
                    (Shard::of_terminal(from.addr, shared.shard_count()), Payload::Terminal { bytes, encoding })
                }
                Side::Upstream => shared.route_upstream(bytes),
            };
            let Some(queue) = queues.get(shard as usize) else { continue };
            tokio::select! {
                r = queue.send(Datagram { from, payload }) => if r.is_err() { return },
                _ = stop.changed() => return,
            }
        }
    }
}

/// Handles one shard's datagrams in the order they came: those queued
/// together (up to a batch) one after the other, then what they produced
/// is sent, in the order produced, in as few system calls as it can.
async fn shard_worker(shared: Arc<Shared>, index: u32, mut queue: mpsc::Receiver<Datagram>) {
    let mut batch = Vec::with_capacity(datagrams::SEND_BATCH);
    while queue.recv_many(&mut batch, datagrams::SEND_BATCH).await > 0 {
        let mut out = Vec::new();
        for d in batch.drain(..) {
            out.extend(shared.handle_datagram(index, &d));
        }
        shared.flush(out).await;
    }
}

/// The wait before accepting again after a failure the next connection
/// does not cause (out of descriptors or memory): from 10 ms, doubling to
/// 1 s, so a loop that cannot accept sleeps instead of spinning on the
/// listener, which stays readable while connections wait in its backlog.
#[derive(Debug)]
struct AcceptBackoff(Duration);

const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

impl Default for AcceptBackoff {
    fn default() -> Self {
        AcceptBackoff(ACCEPT_BACKOFF_MIN)
    }
}

impl AcceptBackoff {
    fn next(&mut self) -> Duration {
        let wait = self.0;
        self.0 = (self.0 * 2).min(ACCEPT_BACKOFF_MAX);
        wait
    }

    fn reset(&mut self) {
        self.0 = ACCEPT_BACKOFF_MIN;
    }
}

/// Descriptors kept for what is not a terminal's connection: the UDP
/// sockets, listeners, metrics scrapes, the runtime's own.
const DESCRIPTOR_RESERVE: u64 = 64;

/// Raises the soft descriptor limit to the hard one (a connection is a
/// descriptor; the usual soft limit, 1024, is far below what a proxy
/// holds), and warns when `max_connections` does not fit under it: the
/// accept loop then meets EMFILE before the cap and frees a descriptor by
/// closing the least recently active connection.
fn check_descriptor_limit(max_connections: usize) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let raised = Rlimit { current: limit.maximum, maximum: limit.maximum };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => limit.current = limit.maximum,
            Err(e) => tracing::debug!(error = %e, "descriptor limit not raised"),
        }
    }
    let Some(current) = limit.current else { return };
    if max_connections as u64 + DESCRIPTOR_RESERVE > current {
        tracing::warn!(
            descriptors = current,
            max_connections,
            "tcp.max_connections does not fit under the descriptor limit (ulimit -n): at the limit a new \
             connection closes the least recently active one"
        );
    }
}

async fn tcp_accept(shared: Arc<Shared>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let local = listener.local_addr().ok();
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.changed() => return,
        };
        let (stream, from) = match accepted {
            Ok(x) => {
                backoff.reset();
                x
            }
            Err(e) => {
                let kind = AcceptError::of(&e);
                shared.conns.count_accept_error(kind);
                if !kind.persists() {
                    continue;
                }
                tracing::debug!(error = %e, "accept failed: backing off");
                // Out of descriptors: closing a connection frees one, and
                // the accept may go again as soon as its task has ended.
                let released = shared.conns.released.notified();
                tokio::pin!(released);
                released.as_mut().enable();
                let freed = matches!(kind, AcceptError::ProcessDescriptors | AcceptError::SystemDescriptors)
                    && shared.conns.close_least_recently_active(Closed::Descriptors);
                let wait = backoff.next();
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = released, if freed => {}
                    _ = stop.changed() => return,
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let id = shared.next_conn.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel::<Vec<u8>>(CONN_QUEUE);
        let close = Arc::new(tokio::sync::Notify::new());
        let Ok(activity) = shared.conns.admit(id, from, tx.clone(), close.clone()) else {
            tracing::debug!(%from, "source at tcp.max_connections_per_source: connection refused");
            continue;
        };
        let peer = Peer { transport: SipTransport::Tcp, addr: from, local, conn: Some(id) };
        let conn = Conn { peer, queue: tx, close, activity };
        tokio::spawn(tcp_conn(shared.clone(), stream, conn, rx, stop.clone()));
    }
}

/// One admitted connection, as its task holds it.
struct Conn {
    peer: Peer,
    /// Its writer's queue (keep-alive answers go there).
    queue: mpsc::Sender<Vec<u8>>,
    /// Ends the reader when another task closes the connection.
    close: Arc<tokio::sync::Notify>,
    activity: Arc<Activity>,
}

/// What a connection's bytes are read as: decided by its first byte for
/// the whole connection (RFC 5049 §4).
enum Framing {
    Unknown,
    /// Record marking (RFC 3320 §4.2.2).
    Sigcomp(Deframer),
    /// SIP messages delimited by their Content-Length (RFC 3261 §18.3):
    /// the bytes of the next one so far.
    Plain(Vec<u8>),
}

/// Bytes read from a connection at a time, into a buffer on the stack that
/// lives only while they are framed: an idle connection holds none.
const READ_CHUNK: usize = 16 * 1024;

/// A plain-SIP buffer emptied with more capacity than this gives it back,
/// so a connection holds a large message's room only while receiving one.
const KEEP_CAPACITY: usize = 4096;

/// One terminal's TCP connection: its bytes framed into messages handed to
/// the shards, until the terminal closes it, it stays silent for
/// `tcp.idle_timeout_s`, its partial message passes `tcp.max_buffered_bytes`,
/// its framing breaks, or another task closes it.
async fn tcp_conn(
    shared: Arc<Shared>,
    stream: TcpStream,
    conn: Conn,
    mut queue: mpsc::Receiver<Vec<u8>>,
    stop: watch::Receiver<bool>,
) {
    let id = conn.peer.conn.unwrap_or(0);
    let (rd, mut wr) = stream.into_split();
    let writer = tokio::spawn(async move {
        while let Some(bytes) = queue.recv().await {
            if wr.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    if let Some(why) = read_messages(&shared, &rd, &conn, stop).await {
        tracing::debug!(conn = id, reason = why.name(), "TCP connection closed");
        shared.conns.count_closed(why);
    }
    // The descriptor is free once both halves are dropped.
    drop(rd);
    writer.abort();
    let _ = writer.await;
    shared.conns.release(id);
    if let Some(mut p) = shared.terminal_shard(conn.peer.addr) {
        p.connection_closed(id);
    }
}

/// Reads and handles a connection's messages until it must close: why,
/// or `None` when another task closed it (and counted why) or the proxy
/// stops.
async fn read_messages(
    shared: &Shared,
    rd: &tokio::net::tcp::OwnedReadHalf,
    conn: &Conn,
    mut stop: watch::Receiver<bool>,
) -> Option<Closed> {
    let idle = shared.conns.idle_timeout();
    let mut framing = Framing::Unknown;
    loop {
        tokio::select! {
            r = tokio::time::timeout(idle, rd.readable()) => match r {
                Err(_) if still_registered(shared, conn) => continue,
                Err(_) => return Some(Closed::Idle),
                Ok(Err(_)) => return Some(Closed::Peer),
                Ok(Ok(())) => {}
            },
            _ = stop.changed() => return None,
            _ = conn.close.notified() => return None,
        }
        let (out, end) = {
            let mut buf = [0u8; READ_CHUNK];
            match rd.try_read(&mut buf) {
                Ok(0) => return Some(Closed::Peer),
                Ok(n) => {
                    conn.activity.touch();
                    take_bytes(shared, conn, &mut framing, &buf[..n])
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(_) => return Some(Closed::Peer),
            }
        };
        shared.flush(out).await;
        if end.is_some() {
            return end;
        }
    }
}

/// Whether a registration made over `conn` still lasts: an idle
/// connection is kept until it expires (and closed at the first idle
/// timeout after that).
fn still_registered(shared: &Shared, conn: &Conn) -> bool {
    let until = conn.peer.conn.and_then(|id| shared.terminal_shard(conn.peer.addr)?.connection_registered_until(id));
    until.is_some_and(|t| t > Instant::now())
}

/// Frames `data`, read from `conn`, and hands each whole message to its
/// shard: the datagrams they produced, and why the connection must close
/// if it must.
fn take_bytes(shared: &Shared, conn: &Conn, framing: &mut Framing, data: &[u8]) -> (Vec<Transmit>, Option<Closed>) {
    let cap = shared.conns.max_buffered_bytes();
    if matches!(framing, Framing::Unknown) {
        *framing = if Encoding::of_first_byte(data[0]) == Encoding::SigComp {
            // Unbounded here: the cap is checked below with its own reason.
            Framing::Sigcomp(Deframer::new(0))
        } else {
            Framing::Plain(Vec::new())
        };
    }
    let mut out = Vec::new();
    let handle = |out: &mut Vec<Transmit>, msg: &[u8], encoding: Encoding| {
        conn.activity.prove();
        out.extend(shared.handle_terminal(conn.peer, msg, encoding));
    };
    let (end, buffered) = match framing {
        Framing::Unknown => (None, 0),
        Framing::Sigcomp(deframer) => {
            let mut frames = Vec::new();
            deframer.push(data, &mut frames);
            let mut end = None;
            for f in frames {
                match f {
                    Frame::Message(m) => handle(&mut out, &m, Encoding::SigComp),
                    Frame::FramingError => end = Some(Closed::Framing),
                }
            }
            if end.is_none() && deframer.incomplete() > cap {
                end = Some(Closed::Buffer);
            }
            (end, deframer.incomplete())
        }
        Framing::Plain(plain) => {
            plain.extend_from_slice(data);
            let end = loop {
                answer_keep_alives(plain, &conn.queue);
                match sigkit_sip::Message::parse_stream_frame(plain) {
                    Ok(Some(len)) => {
                        let msg: Vec<u8> = plain.drain(..len).collect();
                        handle(&mut out, &msg, Encoding::Plain);
                    }
                    Ok(None) if plain.len() <= cap => break None,
                    Ok(None) => break Some(Closed::Buffer),
                    Err(_) => break Some(Closed::Framing),
                }
            };
            if plain.is_empty() && plain.capacity() > KEEP_CAPACITY {
                *plain = Vec::new();
            }
            (end, plain.len())
        }
    };
    conn.activity.set_buffered(buffered);
    (out, end)
}

/// Takes the CRLF keep-alives at the start of `plain` and answers each
/// double-CRLF ping with a CRLF pong (RFC 5626 §3.5.1, §4.4.1); a lone
/// CRLF before a message is an empty line the SIP parser skips (RFC 3261
/// §7.5).
fn answer_keep_alives(plain: &mut Vec<u8>, queue: &mpsc::Sender<Vec<u8>>) {
    let mut pings = 0;
    while plain[pings * 4..].starts_with(b"\r\n\r\n") {
        pings += 1;
    }
    if pings == 0 {
        return;
    }
    plain.drain(..pings * 4);
    for _ in 0..pings {
        // A terminal whose queue is full is not reading its pongs either.
        let _ = queue.try_send(b"\r\n".to_vec());
    }
}

/// The least time between two runs of the timers: a deadline the core
/// keeps reporting after it has passed cannot make the task spin, and
/// under load the many transactions' deadlines are run together. RFC 3261
/// timers so fire at most this late (0.2 % of T1 = 500 ms).
const TIMER_SLACK: Duration = Duration::from_millis(1);

/// Runs each shard's timers when its next deadline comes
/// ([`Proxy::poll_timeout`]), sleeping in between; a message that brings
/// an earlier deadline wakes it ([`Deadlines::set`]).
async fn timer(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    for (index, shard) in shared.shards.iter().enumerate() {
        let Ok(p) = shard.lock() else { return };
        shared.deadlines.set(index, p.poll_timeout());
    }
    loop {
        let ran = Instant::now();
        let next = shared.deadlines.earliest().map(|at| at.max(ran + TIMER_SLACK));
        tokio::select! {
            _ = sleep_until(next) => {}
            _ = shared.deadlines.moved_earlier() => continue,
            _ = stop.changed() => return,
        }
        shared.deadlines.wakeups.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let mut out = Vec::new();
        for index in shared.deadlines.due(now).collect::<Vec<_>>() {
            let Some(Ok(mut p)) = shared.shards.get(index).map(|m| m.lock()) else { return };
            p.handle_timeout(now);
            if let Some(tap) = &shared.tap {
                tap.take(&mut p);
            }
            let produced = std::iter::from_fn(|| p.poll_transmit()).collect();
            out.extend(shared.queue_streams(&mut p, produced));
            shared.deadlines.set(index, p.poll_timeout());
        }
        shared.flush(out).await;
    }
}

/// Sleeps until `at`, or for ever when there is no deadline.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
