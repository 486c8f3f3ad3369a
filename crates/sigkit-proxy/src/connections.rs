//! Terminals' TCP connections: which are open, where each one's messages
//! are queued, and the caps of [`TcpConfig`] on them (in total, per source
//! address), with the counts the metrics show ([`TcpSnapshot`]).
//!
//! The policy when the proxy is full (docs/deploy.md, "TCP limits"): a new
//! connection from a source at its cap is refused, so one address cannot
//! take the proxy; a new connection when the total cap is reached (or when
//! the process is out of descriptors) closes the least recently active one,
//! those that never carried a whole SIP or SigComp message first. A
//! terminal connects and sends its REGISTER at once, so connections held
//! open without a message are the cheapest to an attacker and the first to
//! go, and a terminal still gets in when idle connections fill the proxy.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, Notify};

use crate::config::TcpConfig;
use crate::metrics::TcpSnapshot;

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// The terminal closed it, or the socket failed.
    Peer,
    /// No byte for `idle_timeout_s`.
    Idle,
    /// More than `max_buffered_bytes` toward one message.
    Buffer,
    /// Bytes that are not SIP framing (RFC 3261 §18.3) or SigComp record
    /// marking (RFC 3320 §4.2.2).
    Framing,
    /// Closed to make room for a new connection at `max_connections`.
    Cap,
    /// Closed to free a descriptor when accepting failed for want of one.
    Descriptors,
    /// The terminal read nothing while its queue filled.
    Stuck,
}

impl Closed {
    /// Every reason, in the order the metrics list them.
    pub const ALL: [Closed; 7] =
        [Closed::Peer, Closed::Idle, Closed::Buffer, Closed::Framing, Closed::Cap, Closed::Descriptors, Closed::Stuck];

    /// The reason's `reason` label on `sigkit_proxy_tcp_connections_closed`.
    pub fn name(self) -> &'static str {
        match self {
            Closed::Peer => "peer",
            Closed::Idle => "idle",
            Closed::Buffer => "buffer",
            Closed::Framing => "framing",
            Closed::Cap => "cap",
            Closed::Descriptors => "descriptors",
            Closed::Stuck => "stuck",
        }
    }

    fn index(self) -> usize {
        Closed::ALL.iter().position(|&c| c == self).unwrap_or(0)
    }
}

/// Why accepting a connection failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcceptError {
    /// EMFILE: the process is at its descriptor limit.
    ProcessDescriptors,
    /// ENFILE: the system is.
    SystemDescriptors,
    /// ENOBUFS, ENOMEM.
    Memory,
    /// The connection was reset or aborted before it was accepted.
    Aborted,
    /// Any other error of `accept(2)`.
    Other,
}

impl AcceptError {
    /// Every kind, in the order the metrics list them.
    pub const ALL: [AcceptError; 5] = [
        AcceptError::ProcessDescriptors,
        AcceptError::SystemDescriptors,
        AcceptError::Memory,
        AcceptError::Aborted,
        AcceptError::Other,
    ];

    /// The kind of a failed accept, by errno where it has one (EMFILE,
    /// ENFILE, ENOBUFS, ENOMEM), else by the error's kind.
    pub fn of(e: &std::io::Error) -> AcceptError {
        use rustix::io::Errno;
        use std::io::ErrorKind;
        let code = e.raw_os_error();
        if code == Some(Errno::MFILE.raw_os_error()) {
            AcceptError::ProcessDescriptors
        } else if code == Some(Errno::NFILE.raw_os_error()) {
            AcceptError::SystemDescriptors
        } else if code == Some(Errno::NOBUFS.raw_os_error()) || code == Some(Errno::NOMEM.raw_os_error()) {
            AcceptError::Memory
        } else if matches!(
            e.kind(),
            ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted | ErrorKind::WouldBlock
        ) {
            AcceptError::Aborted
        } else {
            AcceptError::Other
        }
    }

    /// The kind's `kind` label on `sigkit_proxy_tcp_accept_errors`.
    pub fn name(self) -> &'static str {
        match self {
            AcceptError::ProcessDescriptors => "emfile",
            AcceptError::SystemDescriptors => "enfile",
            AcceptError::Memory => "memory",
            AcceptError::Aborted => "aborted",
            AcceptError::Other => "other",
        }
    }

    /// Whether accepting again at once would fail the same way: the
    /// listener's next connection is not the cause, so the loop must wait.
    pub fn persists(self) -> bool {
        !matches!(self, AcceptError::Aborted)
    }

    fn index(self) -> usize {
        AcceptError::ALL.iter().position(|&c| c == self).unwrap_or(0)
    }
}

/// Why a new connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Its source address has `max_connections_per_source` open.
    PerSource,
}

impl Refused {
    /// Every reason, in the order the metrics list them.
    pub const ALL: [Refused; 1] = [Refused::PerSource];

    /// The reason's `reason` label on `sigkit_proxy_tcp_connections_refused`.
    pub fn name(self) -> &'static str {
        match self {
            Refused::PerSource => "per_source",
        }
    }
}

/// What a connection's task and the table share: when it last received a
/// byte, whether it carried a whole message, and what it buffers.
#[derive(Debug)]
pub struct Activity {
    epoch: Instant,
    /// Milliseconds from `epoch`.
    last_ms: AtomicU64,
    proven: AtomicBool,
    buffered: AtomicUsize,
}

impl Activity {
    fn new(epoch: Instant) -> Activity {
        let a = Activity { epoch, last_ms: AtomicU64::new(0), proven: AtomicBool::new(false), buffered: 0.into() };
        a.touch();
        a
    }

    /// A byte arrived.
    pub fn touch(&self) {
        let ms = self.epoch.elapsed().as_millis().min(u128::from(u64::MAX)) as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// A whole message arrived.
    pub fn prove(&self) {
        self.proven.store(true, Ordering::Relaxed);
    }

    /// Bytes held toward the next message.
    pub fn set_buffered(&self, bytes: usize) {
        self.buffered.store(bytes, Ordering::Relaxed);
    }

    /// Eviction order: unproven before proven, then least recently active.
    fn eviction_key(&self) -> (bool, u64) {
        (self.proven.load(Ordering::Relaxed), self.last_ms.load(Ordering::Relaxed))
    }
}

/// One open connection.
struct Entry {
    /// Where messages for the terminal wait for its writer; `None` once the
    /// connection is being closed.
    queue: Option<mpsc::Sender<Vec<u8>>>,
    /// Ends the connection's reader (and so the connection).
    close: Arc<Notify>,
    source: SourceKey,
    activity: Arc<Activity>,
}

/// What a connection counts against: its IPv4 address, or its IPv6 /64
/// (one subscriber's prefix: a host has as many addresses in it as it
/// likes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SourceKey(IpAddr);

impl SourceKey {
    /// The key `addr` counts against: its IPv4 address (an IPv4-mapped
    /// IPv6 address counts as IPv4), or its IPv6 address with the low 64
    /// bits cleared.
    pub fn of(addr: SocketAddr) -> SourceKey {
        match addr.ip().to_canonical() {
            IpAddr::V6(v6) => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                SourceKey(IpAddr::V6(bits.into()))
            }
            v4 => SourceKey(v4),
        }
    }
}

#[derive(Default)]
struct Table {
    by_id: HashMap<u64, Entry>,
    per_source: HashMap<SourceKey, usize>,
    /// Entries not being closed.
    live: usize,
}

impl Table {
    /// Starts closing `id` (its task releases it when it ends).
    fn close(&mut self, id: u64) -> bool {
        let Some(e) = self.by_id.get_mut(&id) else { return false };
        if e.queue.take().is_none() {
            return false;
        }
        e.close.notify_one();
        self.live -= 1;
        true
    }

    /// The live connection to close first ([`Activity::eviction_key`]).
    fn least_recently_active(&self) -> Option<u64> {
        self.by_id
            .iter()
            .filter(|(_, e)| e.queue.is_some())
            .min_by_key(|(_, e)| e.activity.eviction_key())
            .map(|(&id, _)| id)
    }
}

/// What happened to a message queued for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    /// It waits in the connection's queue for its writer.
    Yes,
    /// The queue was full: the connection is being closed.
    Stuck,
    /// No such connection (any more).
    Gone,
}

/// Every terminal's TCP connection, with the caps and counts.
pub struct Connections {
    limits: TcpConfig,
    epoch: Instant,
    table: Mutex<Table>,
    closed: [AtomicU64; Closed::ALL.len()],
    refused: [AtomicU64; Refused::ALL.len()],
    accept_errors: [AtomicU64; AcceptError::ALL.len()],
    /// Signalled when a connection's task ended and its descriptor is free.
    pub released: Notify,
}

impl Connections {
    /// No connection yet, under the caps of `limits` (`[tcp]`).
    pub fn new(limits: TcpConfig) -> Connections {
        Connections {
            limits,
            epoch: Instant::now(),
            table: Mutex::new(Table::default()),
            closed: Default::default(),
            refused: Default::default(),
            accept_errors: Default::default(),
            released: Notify::new(),
        }
    }

    /// How long a connection may go without receiving a byte before it is
    /// closed, unless a registration made over it still lasts
    /// (`tcp.idle_timeout_s`, default 900 s; the CRLF keep-alives of RFC
    /// 5626 §3.5.1 are bytes received). Closes show as
    /// `sigkit_proxy_tcp_connections_closed{reason="idle"}`.
    pub fn idle_timeout(&self) -> Duration {
        self.limits.idle_timeout()
    }

    /// The most bytes a connection may hold toward one message
    /// (`tcp.max_buffered_bytes`, default 64 KiB, at least 1024); past it
    /// the connection is closed
    /// (`sigkit_proxy_tcp_connections_closed{reason="buffer"}`).
    pub fn max_buffered_bytes(&self) -> usize {
        self.limits.max_buffered_bytes
    }

    /// Admits a new connection `id` from `from` whose writer takes `queue`
    /// and whose reader ends on `close`: refused when its source is at its
    /// cap; at the total cap, the least recently active connection is
    /// closed to make room.
    pub fn admit(
        &self,
        id: u64,
        from: SocketAddr,
        queue: mpsc::Sender<Vec<u8>>,
        close: Arc<Notify>,
    ) -> Result<Arc<Activity>, Refused> {
        let source = SourceKey::of(from);
        let Ok(mut t) = self.table.lock() else { return Err(Refused::PerSource) };
        if t.per_source.get(&source).copied().unwrap_or(0) >= self.limits.max_connections_per_source {
            self.refused[0].fetch_add(1, Ordering::Relaxed);
            return Err(Refused::PerSource);
        }
        while t.live >= self.limits.max_connections {
            let Some(victim) = t.least_recently_active() else { break };
            if t.close(victim) {
                self.count_closed(Closed::Cap);
            }
        }
        let activity = Arc::new(Activity::new(self.epoch));
        *t.per_source.entry(source).or_default() += 1;
        t.live += 1;
        t.by_id.insert(id, Entry { queue: Some(queue), close, source, activity: activity.clone() });
        Ok(activity)
    }

    /// Closes the least recently active connection (`why`); false when
    /// none is open.
    pub fn close_least_recently_active(&self, why: Closed) -> bool {
        let Ok(mut t) = self.table.lock() else { return false };
        let Some(victim) = t.least_recently_active() else { return false };
        let closing = t.close(victim);
        if closing {
            self.count_closed(why);
        }
        closing
    }

    /// Queues `bytes` for connection `id` without waiting: a terminal that
    /// reads nothing must not stall the others (its connection is closed
    /// instead).
    pub fn queue(&self, id: u64, bytes: Vec<u8>) -> Queued {
        let Ok(mut t) = self.table.lock() else { return Queued::Gone };
        let Some(queue) = t.by_id.get(&id).and_then(|e| e.queue.as_ref()) else { return Queued::Gone };
        match queue.try_send(bytes) {
            Ok(()) => Queued::Yes,
            Err(mpsc::error::TrySendError::Full(_)) => {
                if t.close(id) {
                    self.count_closed(Closed::Stuck);
                }
                Queued::Stuck
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Queued::Gone,
        }
    }

    /// Connection `id` ended (its descriptor is closed).
    pub fn release(&self, id: u64) {
        if let Ok(mut t) = self.table.lock() {
            if let Some(e) = t.by_id.remove(&id) {
                if e.queue.is_some() {
                    t.live -= 1;
                }
                if let Some(n) = t.per_source.get_mut(&e.source) {
                    *n -= 1;
                    if *n == 0 {
                        t.per_source.remove(&e.source);
                    }
                }
            }
        }
        self.released.notify_waiters();
    }

    /// Counts a connection closed for `why` (the runtime counts those it
    /// closes itself: peer, idle, buffer, framing).
    pub fn count_closed(&self, why: Closed) {
        self.closed[why.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a failed accept of kind `e`.
    pub fn count_accept_error(&self, e: AcceptError) {
        self.accept_errors[e.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// What the metrics show.
    pub fn snapshot(&self) -> TcpSnapshot {
        let (connections, sources, buffered) = match self.table.lock() {
            Ok(t) => (
                t.by_id.len(),
                t.per_source.len(),
                t.by_id.values().map(|e| e.activity.buffered.load(Ordering::Relaxed)).sum(),
            ),
            Err(_) => (0, 0, 0),
        };
        let read = |a: &AtomicU64| a.load(Ordering::Relaxed);
        TcpSnapshot {
            connections,
            max_connections: self.limits.max_connections,
            sources,
            buffered_bytes: buffered,
            closed: Closed::ALL.iter().map(|c| (c.name(), read(&self.closed[c.index()]))).collect(),
            refused: Refused::ALL.iter().zip(&self.refused).map(|(r, n)| (r.name(), read(n))).collect(),
            accept_errors: AcceptError::ALL.iter().map(|e| (e.name(), read(&self.accept_errors[e.index()]))).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize, per_source: usize) -> TcpConfig {
        TcpConfig { max_connections: max, max_connections_per_source: per_source, ..TcpConfig::default() }
    }

    fn admit(c: &Connections, id: u64, from: &str) -> Result<(Arc<Activity>, Arc<Notify>), Refused> {
        let (tx, _rx) = mpsc::channel(1);
        let close = Arc::new(Notify::new());
        c.admit(id, from.parse().unwrap(), tx, close.clone()).map(|a| (a, close))
    }

    #[test]
    fn a_source_at_its_cap_is_refused_and_others_are_not() {
        let c = Connections::new(limits(10, 2));
        admit(&c, 1, "192.0.2.1:1000").unwrap();
        admit(&c, 2, "192.0.2.1:1001").unwrap();
        assert_eq!(admit(&c, 3, "192.0.2.1:1002").unwrap_err(), Refused::PerSource);
        admit(&c, 4, "192.0.2.2:1000").unwrap();
        // One /64 is one source.
        admit(&c, 5, "[2001:db8::1]:5060").unwrap();
        admit(&c, 6, "[2001:db8::2]:5060").unwrap();
        assert!(admit(&c, 7, "[2001:db8::3]:5060").is_err());
        admit(&c, 8, "[2001:db8:0:1::3]:5060").unwrap();
        c.release(1);
        admit(&c, 9, "192.0.2.1:1003").unwrap();
        let s = c.snapshot();
        assert_eq!((s.connections, s.sources), (6, 4));
        assert_eq!(s.refused, vec![("per_source", 2)]);
    }

    #[test]
    fn at_the_cap_the_unproven_then_least_recently_active_connection_is_closed() {
        let c = Connections::new(limits(3, 10));
        let (a, _) = admit(&c, 1, "192.0.2.1:1").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let (_, close2) = admit(&c, 2, "192.0.2.2:1").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        admit(&c, 3, "192.0.2.3:1").unwrap();
        // The oldest carried a message: the next oldest goes.
        a.prove();
        admit(&c, 4, "192.0.2.4:1").unwrap();
        assert_eq!(c.queue(2, vec![1]), Queued::Gone);
        let notified = close2.notified();
        tokio::pin!(notified);
        assert!(notified.as_mut().enable(), "the closed connection's reader is told");
        assert_eq!(c.snapshot().connections, 4, "until its task releases it");
        c.release(2);
        let s = c.snapshot();
        assert_eq!(s.connections, 3);
        assert_eq!(s.closed.iter().find(|(n, _)| *n == "cap").unwrap().1, 1);
        assert!(c.close_least_recently_active(Closed::Descriptors));
    }
}
