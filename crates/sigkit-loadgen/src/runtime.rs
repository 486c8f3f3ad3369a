//! The load run on tokio: one UDP socket and one task per role (SIPp's
//! `-t u1`), calls started at the offered rate, the sans-IO agents of
//! [`crate::call`] driven by datagrams and their own deadlines.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sigkit_sip::transaction::Timers;
use tokio::net::UdpSocket;
use tokio::sync::watch;

use crate::call::{CallConfig, Datagram, Uac, Uas};
use crate::metrics::{Interval, Percentiles, Recorder, Summary};

/// Which side of the call this run plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Uac,
    Uas,
}

/// A load run's settings (the library's names for SIPp's flags).
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub role: Role,
    pub local: SocketAddr,
    /// Where the UAC sends its calls.
    pub remote: Option<SocketAddr>,
    /// An outbound proxy the UAC sends through (SIPp's `-rsa`).
    pub next_hop: Option<SocketAddr>,
    pub service: String,
    /// Calls started per `rate_period` (SIPp's `-r` and `-rp`).
    pub rate: f64,
    pub rate_period: Duration,
    /// Calls in all (UAC: placed; UAS: answered to the end), then stop.
    pub max_calls: Option<u64>,
    /// Calls in progress at most (UAC).
    pub max_concurrent: Option<usize>,
    /// Hold time of an answered call before BYE.
    pub hold: Duration,
    /// The whole run stops after this long (SIPp's global `-timeout`).
    pub duration: Option<Duration>,
    pub timers: Timers,
    /// An [`Interval`] row every this long (SIPp's `-fd`).
    pub report_every: Duration,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            role: Role::Uac,
            local: SocketAddr::from(([127, 0, 0, 1], 0)),
            remote: None,
            next_hop: None,
            service: "service".into(),
            rate: 10.0,
            rate_period: Duration::from_secs(1),
            max_calls: None,
            max_concurrent: None,
            hold: Duration::ZERO,
            duration: None,
            timers: Timers::default(),
            report_every: Duration::from_secs(1),
        }
    }
}

impl LoadConfig {
    /// Offered calls per second.
    pub fn offered_cps(&self) -> f64 {
        self.rate / self.rate_period.as_secs_f64().max(1e-9)
    }
}

/// Why a run could not go.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("binding {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("a UAC needs the remote address")]
    NoRemote,
    #[error("the rate must be positive")]
    BadRate,
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
}

/// What a run gives back.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunReport {
    pub summary: Summary,
    pub intervals: Vec<Interval>,
    /// The socket's address (useful with port 0).
    #[serde(skip)]
    pub local: Option<SocketAddr>,
}

/// A bound socket, ready to run: lets a caller learn the local address
/// (port 0) before the run starts.
pub struct Prepared {
    config: LoadConfig,
    socket: UdpSocket,
}

impl Prepared {
    pub async fn bind(config: LoadConfig) -> Result<Prepared, LoadError> {
        if config.role == Role::Uac && (config.rate.is_nan() || config.rate <= 0.0) {
            return Err(LoadError::BadRate);
        }
        if config.role == Role::Uac && config.remote.is_none() {
            return Err(LoadError::NoRemote);
        }
        let socket =
            UdpSocket::bind(config.local).await.map_err(|source| LoadError::Bind { addr: config.local, source })?;
        Ok(Prepared { config, socket })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.socket.local_addr().unwrap_or(self.config.local)
    }

    /// Runs to the end (calls, duration, or `stop` turning true).
    pub async fn run(self, stop: Option<watch::Receiver<bool>>) -> Result<RunReport, LoadError> {
        let local = self.local_addr();
        match self.config.role {
            Role::Uac => run_uac(self.config, self.socket, local, stop).await,
            Role::Uas => run_uas(self.config, self.socket, local, stop).await,
        }
    }
}

/// Binds and runs.
pub async fn run(config: LoadConfig, stop: Option<watch::Receiver<bool>>) -> Result<RunReport, LoadError> {
    Prepared::bind(config).await?.run(stop).await
}

async fn send_all(socket: &UdpSocket, out: Vec<Datagram>) {
    for d in out {
        // A full send buffer waits for room rather than dropping: losses
        // are the system under test's, not the generator's.
        match socket.try_send_to(&d.bytes, d.to) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let _ = socket.send_to(&d.bytes, d.to).await;
            }
            _ => {}
        }
    }
}

struct IntervalClock {
    start: Instant,
    every: Duration,
    next: Instant,
    last: (u64, u64, u64, u64),
    last_at: Instant,
    rows: Vec<Interval>,
}

impl IntervalClock {
    fn new(start: Instant, every: Duration) -> IntervalClock {
        let every = every.max(Duration::from_millis(100));
        IntervalClock { start, every, next: start + every, last: (0, 0, 0, 0), last_at: start, rows: Vec::new() }
    }

    /// The last, partial interval at the run's end, if anything happened
    /// since the last row.
    fn finish(&mut self, now: Instant, r: &Recorder, offered_cps: f64, active: usize) {
        if (r.attempted, r.successful, r.failed) != (self.last.0, self.last.1, self.last.2) {
            self.next = now;
            self.tick(now, r, offered_cps, active);
        }
    }

    fn tick(&mut self, now: Instant, r: &Recorder, offered_cps: f64, active: usize) {
        if now < self.next {
            return;
        }
        let span = (now - self.last_at).as_secs_f64().max(1e-9);
        self.last_at = now;
        self.next = now + self.every;
        let (a, s, f, x) = (r.attempted, r.successful, r.failed, r.retransmissions);
        let p = Percentiles::of(&r.answer_us);
        self.rows.push(Interval {
            t_s: (now - self.start).as_secs_f64(),
            offered_cps,
            attempted: a - self.last.0,
            successful: s - self.last.1,
            failed: f - self.last.2,
            calls_per_s: (s - self.last.1) as f64 / span,
            retransmissions: x - self.last.3,
            setup_p50_ms: p.p50,
            setup_p95_ms: p.p95,
            setup_p99_ms: p.p99,
            active_calls: active as u64,
        });
        self.last = (a, s, f, x);
    }
}

async fn run_uac(
    config: LoadConfig,
    socket: UdpSocket,
    local: SocketAddr,
    mut stop: Option<watch::Receiver<bool>>,
) -> Result<RunReport, LoadError> {
    let remote = config.remote.ok_or(LoadError::NoRemote)?;
    let call = CallConfig {
        local,
        remote,
        next_hop: config.next_hop,
        service: config.service.clone(),
        hold: config.hold,
        timers: config.timers,
        call_timeout: None,
    };
    let mut uac = Uac::new(call, Recorder::default());
    let start = Instant::now();
    let period = Duration::from_secs_f64(config.rate_period.as_secs_f64() / config.rate);
    let mut next_start = start;
    let mut started: u64 = 0;
    let mut buf = vec![0u8; 65536];
    let end = config.duration.map(|d| start + d);
    let mut clock = IntervalClock::new(start, config.report_every);
    loop {
        let now = Instant::now();
        let more = config.max_calls.is_none_or(|m| started < m) && end.is_none_or(|e| now < e);
        while more && next_start <= now && config.max_calls.is_none_or(|m| started < m) {
            if config.max_concurrent.is_some_and(|l| uac.active() >= l) {
                // SIPp's -l: the call waits for room; the schedule does
                // not run ahead meanwhile.
                next_start = now + period;
                break;
            }
            uac.start_call(now);
            started += 1;
            next_start += period;
        }
        uac.handle_timeout(now);
        send_all(&socket, uac.drain().collect()).await;
        clock.tick(now, &uac.recorder, config.offered_cps(), uac.active());
        let finished = config.max_calls.is_some_and(|m| started >= m) && uac.active() == 0;
        if finished || end.is_some_and(|e| now >= e) || stop.as_ref().is_some_and(|s| *s.borrow()) {
            break;
        }
        let starting = more.then_some(next_start);
        let wake = [starting, uac.poll_timeout(), Some(clock.next)].into_iter().flatten().min().unwrap_or(now);
        let wake = end.map_or(wake, |e| wake.min(e));
        tokio::select! {
            r = socket.recv_from(&mut buf) => {
                if let Ok((n, _)) = r {
                    let now = Instant::now();
                    uac.on_datagram(now, &buf[..n]);
                    // Whatever else has arrived, without going back to the
                    // scheduler.
                    while let Ok((n, _)) = socket.try_recv_from(&mut buf) {
                        uac.on_datagram(now, &buf[..n]);
                    }
                    send_all(&socket, uac.drain().collect()).await;
                }
            }
            _ = tokio::time::sleep_until(wake.into()) => {}
            _ = wait_stop(&mut stop) => {}
        }
    }
    clock.finish(Instant::now(), &uac.recorder, config.offered_cps(), uac.active());
    let elapsed =
        uac.recorder.last_success.map_or_else(|| start.elapsed(), |t| t - start).max(Duration::from_millis(1));
    Ok(RunReport {
        summary: Summary::of("uac", &uac.recorder, elapsed, config.offered_cps()),
        intervals: clock.rows,
        local: Some(local),
    })
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

async fn run_uas(
    config: LoadConfig,
    socket: UdpSocket,
    local: SocketAddr,
    mut stop: Option<watch::Receiver<bool>>,
) -> Result<RunReport, LoadError> {
    let mut uas = Uas::new(local, config.timers, Recorder::default());
    let start = Instant::now();
    let end = config.duration.map(|d| start + d);
    let mut buf = vec![0u8; 65536];
    let mut first: Option<Instant> = None;
    let mut clock = IntervalClock::new(start, config.report_every);
    loop {
        let now = Instant::now();
        uas.handle_timeout(now);
        send_all(&socket, uas.drain().collect()).await;
        clock.tick(now, &uas.recorder, 0.0, uas.active());
        let done = config.max_calls.is_some_and(|m| uas.recorder.successful + uas.recorder.failed >= m);
        if done || end.is_some_and(|e| now >= e) || stop.as_ref().is_some_and(|s| *s.borrow()) {
            break;
        }
        let wake = [uas.poll_timeout(), Some(clock.next), end].into_iter().flatten().min().unwrap_or(now);
        tokio::select! {
            r = socket.recv_from(&mut buf) => {
                if let Ok((n, from)) = r {
                    let now = Instant::now();
                    first.get_or_insert(now);
                    uas.on_datagram(now, from, &buf[..n]);
                    while let Ok((n, from)) = socket.try_recv_from(&mut buf) {
                        uas.on_datagram(now, from, &buf[..n]);
                    }
                    send_all(&socket, uas.drain().collect()).await;
                }
            }
            _ = tokio::time::sleep_until(wake.into()) => {}
            _ = wait_stop(&mut stop) => {}
        }
    }
    clock.finish(Instant::now(), &uas.recorder, 0.0, uas.active());
    let from = first.unwrap_or(start);
    let elapsed = uas.recorder.last_success.map_or_else(|| from.elapsed(), |t| t - from).max(Duration::from_millis(1));
    Ok(RunReport {
        summary: Summary::of("uas", &uas.recorder, elapsed, 0.0),
        intervals: clock.rows,
        local: Some(local),
    })
}
