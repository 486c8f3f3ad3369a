//! The capture tap's writer (`hep`, `capture`): the shards' captured
//! messages ([`crate::core::Captured`]) go through a bounded queue to one
//! thread that sends them to the HEP collector ([`crate::hep`]) and
//! writes them to the capture file ([`crate::pcap`]). A shard never waits
//! for it: when the queue is full a message is dropped and counted. The
//! file is flushed every [`FLUSH_EVERY`] and when the proxy stops.

use std::fs::File;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::config::{ProxyConfig, SipTransport};
use crate::core::{Captured, Proxy};
use crate::hep::{self, Packet};
use crate::metrics::TapSnapshot;
use crate::pcap::PcapSink;

/// How often the capture file is flushed: a proxy killed outright loses
/// at most this much of it.
pub(super) const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Bytes of packets the capture file is flushed at sooner, so a busy
/// proxy holds no more than this waiting for the next second.
const FLUSH_BYTES: usize = 1 << 20;

/// What the writer thread is given.
enum Item {
    /// A captured message and when it was taken from its shard.
    Message(Captured, SystemTime),
    /// Flush and end.
    Stop,
}

#[derive(Default)]
struct Counters {
    captured: AtomicU64,
    dropped: AtomicU64,
    hep_errors: AtomicU64,
    pcap_errors: AtomicU64,
}

/// The tap as the runtime holds it.
pub(super) struct Tap {
    queue: SyncSender<Item>,
    counters: Arc<Counters>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Tap {
    /// The tap `config` asks for (`hep`, `capture`), its socket bound and
    /// its file created; `None` when it asks for neither.
    pub(super) fn start(config: &ProxyConfig) -> io::Result<Option<Tap>> {
        if config.hep.is_none() && config.capture.is_none() {
            return Ok(None);
        }
        let hep = config.hep.map(|to| HepSink::new(to, config)).transpose()?;
        let pcap = match &config.capture {
            Some(path) => {
                let file =
                    File::create(path).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
                Some(PcapSink::new(file).map_err(io::Error::other)?)
            }
            None => None,
        };
        let (queue, rx) = sync_channel(config.capture_queue);
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        let thread =
            std::thread::Builder::new().name("sigkit-capture".into()).spawn(move || write_all(&rx, hep, pcap, &c))?;
        Ok(Some(Tap { queue, counters, thread: Mutex::new(Some(thread)) }))
    }

    /// Hands `proxy`'s captured messages to the writer, stamped with the
    /// time now; those the queue has no room for are dropped and counted.
    pub(super) fn take(&self, proxy: &mut Proxy) {
        let mut now = None;
        while let Some(c) = proxy.poll_captured() {
            let at = *now.get_or_insert_with(SystemTime::now);
            match self.queue.try_send(Item::Message(c, at)) {
                Ok(()) => self.counters.captured.fetch_add(1, Ordering::Relaxed),
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                    self.counters.dropped.fetch_add(1, Ordering::Relaxed)
                }
            };
        }
    }

    /// The counters, for the metrics.
    pub(super) fn snapshot(&self) -> TapSnapshot {
        let read = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let c = &self.counters;
        TapSnapshot {
            captured: read(&c.captured),
            dropped: read(&c.dropped),
            hep_errors: read(&c.hep_errors),
            pcap_errors: read(&c.pcap_errors),
        }
    }

    /// Lets the writer finish what is queued, flush the file and end;
    /// blocks until it has.
    pub(super) fn close(&self) {
        let Some(thread) = self.thread.lock().ok().and_then(|mut t| t.take()) else { return };
        let _ = self.queue.send(Item::Stop);
        let _ = thread.join();
    }
}

/// The writer thread: each message to each sink, the file flushed every
/// [`FLUSH_EVERY`], until told to stop or the tap is dropped.
fn write_all(rx: &Receiver<Item>, mut hep: Option<HepSink>, mut pcap: Option<PcapSink<File>>, c: &Counters) {
    let mut flushed = Instant::now();
    loop {
        match rx.recv_timeout(FLUSH_EVERY) {
            Ok(Item::Message(m, at)) => {
                if let Some(p) = pcap.as_mut() {
                    if let Err(e) = p.write(m.transport, m.src, m.dst, at, &m.sip) {
                        // Logged at the first failures, then ever more rarely.
                        let n = c.pcap_errors.fetch_add(1, Ordering::Relaxed) + 1;
                        if n.is_power_of_two() {
                            tracing::warn!(error = %e, failures = n, "capture file: message not written");
                        }
                    }
                }
                if let Some(h) = hep.as_mut() {
                    if let Err(e) = h.send(m, at) {
                        let n = c.hep_errors.fetch_add(1, Ordering::Relaxed) + 1;
                        if n.is_power_of_two() {
                            tracing::warn!(to = %h.to, error = %e, failures = n, "HEP packet not sent");
                        }
                    }
                }
            }
            Ok(Item::Stop) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let full = pcap.as_ref().is_some_and(|p| p.pending_bytes() >= FLUSH_BYTES);
        if full || flushed.elapsed() >= FLUSH_EVERY {
            flush(&mut pcap);
            flushed = Instant::now();
        }
    }
    flush(&mut pcap);
}

fn flush(pcap: &mut Option<PcapSink<File>>) {
    if let Some(p) = pcap.as_mut() {
        if let Err(e) = p.flush() {
            tracing::warn!(error = %e, "capture file not flushed");
        }
    }
}

/// The HEP collector and how to reach it.
struct HepSink {
    socket: UdpSocket,
    to: SocketAddr,
    capture_id: u32,
    auth_key: Option<Vec<u8>>,
}

impl HepSink {
    fn new(to: SocketAddr, config: &ProxyConfig) -> io::Result<HepSink> {
        let any: SocketAddr = if to.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { ([0u16; 8], 0).into() };
        let socket = UdpSocket::bind(any).map_err(|e| io::Error::new(e.kind(), format!("hep: binding {any}: {e}")))?;
        let auth_key = config.hep_auth_key.as_ref().map(|k| k.as_bytes().to_vec());
        Ok(HepSink { socket, to, capture_id: config.hep_id, auth_key })
    }

    /// `m` as one HEPv3 packet, its Call-ID as the correlation id.
    fn send(&self, m: Captured, at: SystemTime) -> io::Result<()> {
        let call_id =
            sigkit_sip::Message::parse(&m.sip).ok().and_then(|msg| Some(msg.call_id().ok()?.as_bytes().to_vec()));
        let packet = Packet {
            ip_protocol: match m.transport {
                SipTransport::Udp => hep::IPPROTO_UDP,
                SipTransport::Tcp => hep::IPPROTO_TCP,
            },
            src: m.src,
            dst: m.dst,
            time: at,
            proto_type: hep::PROTO_SIP,
            capture_id: self.capture_id,
            auth_key: self.auth_key.clone(),
            correlation_id: call_id,
            payload: m.sip,
        };
        let bytes = packet.emit().map_err(io::Error::other)?;
        self.socket.send_to(&bytes, self.to)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Encoding, Peer};

    /// A proxy with the tap on that has handled `n` OPTIONS from a plain
    /// terminal: 2 × `n` captured messages waiting.
    fn proxy_with_captures(n: usize) -> Proxy {
        let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
        let mut p = crate::core::tests::udp_proxy();
        p.set_capture(true);
        let from = Peer { transport: SipTransport::Udp, addr: addr("10.0.0.9:5080"), local: None, conn: None };
        for i in 0..n {
            let options = format!(
                "OPTIONS sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.9:5080;branch=z9hG4bK{i}\r\n\
                 Max-Forwards: 70\r\nFrom: <sip:u@x>;tag=1\r\nTo: <sip:u@x>\r\nCall-ID: q{i}\r\n\
                 CSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
            );
            p.from_terminal(Instant::now(), from, options.as_bytes(), Encoding::Plain);
            while p.poll_transmit().is_some() {}
        }
        p
    }

    /// A queue of one: what does not fit is dropped and counted, never
    /// waited for, and the file holds exactly what was counted captured.
    #[test]
    fn a_full_queue_drops_and_counts_and_the_file_has_the_rest() {
        let path = std::env::temp_dir().join(format!("sigkit-tap-{}.pcap", std::process::id()));
        let config = ProxyConfig { capture: Some(path.clone()), capture_queue: 1, ..ProxyConfig::default() };
        let tap = Tap::start(&config).unwrap().expect("a tap");
        let mut proxy = proxy_with_captures(2000);
        tap.take(&mut proxy);
        assert_eq!(proxy.poll_captured(), None, "all taken");
        tap.close();
        let s = tap.snapshot();
        assert_eq!(s.captured + s.dropped, 4000);
        assert!(s.dropped > 0, "{s:?}");
        assert_eq!((s.hep_errors, s.pcap_errors), (0, 0));
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let mut r = pcap_file::pcap::PcapReader::new(bytes.as_slice()).unwrap();
        let mut n = 0;
        while let Some(p) = r.next_packet() {
            p.unwrap();
            n += 1;
        }
        assert_eq!(n, s.captured);
    }

    /// No `hep` and no `capture`: no tap, no thread.
    #[test]
    fn no_sink_no_tap() {
        assert!(Tap::start(&ProxyConfig::default()).unwrap().is_none());
    }
}
