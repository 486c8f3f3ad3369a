//! An emulated narrowband signalling link: the radio bearer between a
//! terminal and its P-CSCF that the SigComp performance thesis's RAN-delay
//! study (§2.1, equation 2.1; §9.10) reasons about.
//!
//! [`Link`] is one direction of it, sans-IO: a datagram offered at an
//! instant waits for the datagrams before it to leave (a FIFO queue),
//! takes `size × 8 / bit rate` to serialise, then `latency` to arrive, and
//! is lost with a fixed probability (Bernoulli, from a seeded generator so
//! that a run repeats). A lost datagram still occupies the link for its
//! serialisation time, as a corrupted radio block does.
//!
//! [`LinkRelay`] puts two of them (uplink and downlink) between real UDP
//! sockets, so that a terminal, a load generator or a measurement can talk
//! to a proxy over the emulated link.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// One direction of the link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    /// Bit rate, kbit/s (1 kbit = 1000 bits, as the thesis's link speeds).
    pub kbps: f64,
    /// Constant one-way latency added after serialisation (the thesis's
    /// RTT/2).
    pub latency: Duration,
    /// Probability that a datagram is lost, 0 to 1.
    pub loss: f64,
    /// Seed of the loss generator.
    pub seed: u64,
}

impl LinkConfig {
    /// A lossless link of `kbps` with one-way `latency`.
    pub fn new(kbps: f64, latency: Duration) -> LinkConfig {
        LinkConfig { kbps, latency, loss: 0.0, seed: 0 }
    }

    /// The same link with time running `factor` times faster: the bit rate
    /// multiplied and the latency divided by `factor`, so every delay is
    /// divided by it (a measurement at 9.6 kbps that would take 10 s takes
    /// 1 s at a factor of 10; multiply what it measures by the factor).
    pub fn scaled(&self, factor: f64) -> LinkConfig {
        LinkConfig { kbps: self.kbps * factor, latency: self.latency.div_f64(factor), ..*self }
    }

    /// Time to serialise `bytes` onto the link.
    pub fn serialization(&self, bytes: usize) -> Duration {
        Duration::from_secs_f64(bytes as f64 * 8.0 / (self.kbps * 1000.0))
    }
}

/// What became of a datagram offered to the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transit {
    /// It arrives at the far end at `arrives`; its last bit left at `sent`.
    Delivered {
        /// When its last bit left the link: serialisation done.
        sent: Instant,
        /// `sent` plus the link's latency.
        arrives: Instant,
    },
    /// It was lost; the link was busy with it until `sent`.
    Lost {
        /// When its serialisation ended.
        sent: Instant,
    },
}

impl Transit {
    /// When it arrives at the far end; `None` when it was lost.
    pub fn arrives(&self) -> Option<Instant> {
        match self {
            Transit::Delivered { arrives, .. } => Some(*arrives),
            Transit::Lost { .. } => None,
        }
    }
}

/// One direction of an emulated link (sans-IO): the caller offers each
/// datagram with the instant it reached the link and delivers it at the
/// instant the link answers.
#[derive(Debug, Clone)]
pub struct Link {
    config: LinkConfig,
    /// When the last datagram's serialisation ends.
    free_at: Option<Instant>,
    rng: SplitMix64,
    offered: u64,
    lost: u64,
}

impl Link {
    /// A link of `config`, idle, with its loss generator seeded from
    /// `config.seed`.
    pub fn new(config: LinkConfig) -> Link {
        Link { config, free_at: None, rng: SplitMix64(config.seed), offered: 0, lost: 0 }
    }

    /// The settings it was made with.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Offers a datagram of `bytes` at `now`: it starts serialising when
    /// the link is free (at `now`, or when the datagram before it has left).
    pub fn offer(&mut self, now: Instant, bytes: usize) -> Transit {
        let start = match self.free_at {
            Some(free) if free > now => free,
            _ => now,
        };
        let sent = start + self.config.serialization(bytes);
        self.free_at = Some(sent);
        self.offered += 1;
        if self.config.loss > 0.0 && self.rng.next_f64() < self.config.loss {
            self.lost += 1;
            return Transit::Lost { sent };
        }
        Transit::Delivered { sent, arrives: sent + self.config.latency }
    }

    /// Datagrams offered so far.
    pub fn offered(&self) -> u64 {
        self.offered
    }

    /// Datagrams lost so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", 2014): small, seedable and good enough for loss draws.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Datagrams a [`LinkRelay`] handled, per direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Datagrams from the terminal that crossed the uplink and were sent
    /// upstream.
    pub uplink_delivered: u64,
    /// Datagrams from the terminal the uplink lost (drawn with its `loss`).
    pub uplink_lost: u64,
    /// Datagrams from the upstream that crossed the downlink and were sent to the
    /// terminal.
    pub downlink_delivered: u64,
    /// Datagrams from the upstream the downlink lost.
    pub downlink_lost: u64,
    /// Downlink datagrams dropped because no terminal had sent anything
    /// yet (the relay learns the terminal's address from its first
    /// datagram).
    pub downlink_no_terminal: u64,
}

/// The emulated link between real UDP sockets (tokio): datagrams a terminal
/// sends to [`terminal_side`](LinkRelay::terminal_side) cross the uplink
/// and leave from [`network_side`](LinkRelay::network_side) toward the
/// upstream (a proxy); datagrams arriving at the network side cross the
/// downlink and leave from the terminal side toward the terminal that sent
/// last. One relay is one terminal's bearer; the upstream sees the network
/// side's address as the terminal's.
///
/// The relay's tasks end when it is dropped.
pub struct LinkRelay {
    terminal_side: SocketAddr,
    network_side: SocketAddr,
    stats: Arc<Mutex<RelayStats>>,
    tasks: Vec<JoinHandle<()>>,
}

impl LinkRelay {
    /// Binds the terminal side on `terminal_bind` and the network side on
    /// `network_bind` (port 0 for any) and relays to `upstream` over
    /// `uplink` and `downlink`. Must run inside a tokio runtime with time
    /// enabled.
    pub async fn start(
        terminal_bind: SocketAddr,
        network_bind: SocketAddr,
        upstream: SocketAddr,
        uplink: LinkConfig,
        downlink: LinkConfig,
    ) -> io::Result<LinkRelay> {
        let terminal = Arc::new(UdpSocket::bind(terminal_bind).await?);
        let network = Arc::new(UdpSocket::bind(network_bind).await?);
        let (terminal_side, network_side) = (terminal.local_addr()?, network.local_addr()?);
        let stats = Arc::new(Mutex::new(RelayStats::default()));
        let peer = Arc::new(Mutex::new(None::<SocketAddr>));
        let (up_tx, up_rx) = mpsc::unbounded_channel();
        let (down_tx, down_rx) = mpsc::unbounded_channel();
        let tasks = vec![
            tokio::spawn(forward(Direction::Up, terminal.clone(), Link::new(uplink), up_tx, stats.clone(), {
                let peer = peer.clone();
                move |from| {
                    *peer.lock().expect("peer lock") = Some(from);
                    Some(upstream)
                }
            })),
            tokio::spawn(deliver(network.clone(), up_rx)),
            tokio::spawn(forward(Direction::Down, network, Link::new(downlink), down_tx, stats.clone(), move |_| {
                *peer.lock().expect("peer lock")
            })),
            tokio::spawn(deliver(terminal, down_rx)),
        ];
        Ok(LinkRelay { terminal_side, network_side, stats, tasks })
    }

    /// Where a terminal sends to reach the upstream.
    pub fn terminal_side(&self) -> SocketAddr {
        self.terminal_side
    }

    /// Where the upstream's datagrams come from and where it answers to
    /// reach the terminal.
    pub fn network_side(&self) -> SocketAddr {
        self.network_side
    }

    /// What the relay has handled so far, per direction.
    pub fn stats(&self) -> RelayStats {
        *self.stats.lock().expect("stats lock")
    }
}

impl Drop for LinkRelay {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

#[derive(Clone, Copy)]
enum Direction {
    Up,
    Down,
}

/// A datagram in flight: when it arrives, where it goes, its bytes.
type InFlight = (Instant, SocketAddr, Vec<u8>);

/// Receives datagrams on `socket`, runs each through `link` at the
/// instant it was received and queues the delivered ones (their arrival
/// instants never decrease: the link is FIFO with a constant latency).
async fn forward(
    direction: Direction,
    socket: Arc<UdpSocket>,
    mut link: Link,
    queue: mpsc::UnboundedSender<InFlight>,
    stats: Arc<Mutex<RelayStats>>,
    mut destination: impl FnMut(SocketAddr) -> Option<SocketAddr> + Send,
) {
    let mut buf = vec![0u8; 65_536];
    loop {
        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
            // ICMP port unreachable from an earlier send surfaces here on
            // some systems; the socket is still good.
            continue;
        };
        let now = Instant::now();
        let transit = link.offer(now, n);
        let to = destination(from);
        let mut s = stats.lock().expect("stats lock");
        match (transit, to, direction) {
            (Transit::Lost { .. }, _, Direction::Up) => s.uplink_lost += 1,
            (Transit::Lost { .. }, _, Direction::Down) => s.downlink_lost += 1,
            (Transit::Delivered { .. }, None, _) => s.downlink_no_terminal += 1,
            (Transit::Delivered { arrives, .. }, Some(to), direction) => {
                match direction {
                    Direction::Up => s.uplink_delivered += 1,
                    Direction::Down => s.downlink_delivered += 1,
                }
                if queue.send((arrives, to, buf[..n].to_vec())).is_err() {
                    return;
                }
            }
        }
    }
}

/// Sends each queued datagram from `socket` at its arrival instant.
async fn deliver(socket: Arc<UdpSocket>, mut queue: mpsc::UnboundedReceiver<InFlight>) {
    while let Some((at, to, bytes)) = queue.recv().await {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
        // A full socket buffer or an unreachable peer drops the datagram,
        // as the network behind the bearer would.
        let _ = socket.send_to(&bytes, to).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialisation_is_size_over_bit_rate() {
        let c = LinkConfig::new(9.6, Duration::from_millis(35));
        assert_eq!(c.serialization(1200), Duration::from_secs(1));
        assert_eq!(c.scaled(10.0).serialization(1200), Duration::from_millis(100));
        assert_eq!(c.scaled(10.0).latency, Duration::from_micros(3500));
    }

    #[test]
    fn a_datagram_waits_for_the_one_before_it() {
        let t0 = Instant::now();
        let mut link = Link::new(LinkConfig::new(8.0, Duration::from_millis(50)));
        // 1000 bytes at 8 kbps: 1 s each.
        let a = link.offer(t0, 1000).arrives().unwrap();
        let b = link.offer(t0 + Duration::from_millis(100), 1000).arrives().unwrap();
        assert_eq!(a - t0, Duration::from_millis(1050));
        assert_eq!(b - t0, Duration::from_millis(2050));
        // After the queue drains, a datagram starts at once.
        let c = link.offer(t0 + Duration::from_secs(5), 1000).arrives().unwrap();
        assert_eq!(c - t0, Duration::from_millis(6050));
    }

    #[test]
    fn loss_follows_its_probability_and_repeats_with_the_seed() {
        let run = |seed| {
            let mut link = Link::new(LinkConfig { loss: 0.2, seed, ..LinkConfig::new(1000.0, Duration::ZERO) });
            let t0 = Instant::now();
            let pattern: Vec<bool> = (0..10_000).map(|_| link.offer(t0, 10).arrives().is_none()).collect();
            (link.lost(), pattern)
        };
        let (lost, pattern) = run(7);
        assert!((1800..2200).contains(&lost), "{lost} of 10000 lost at p = 0.2");
        assert_eq!(run(7).1, pattern);
        assert_ne!(run(8).1, pattern);
    }
}
