//! The latency probe: a terminal of its own on its own thread.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use sigkit_sip::Message;

use crate::terminal::{make_terminals, receive_one, register_all};

/// A terminal of its own on its own thread (blocked in `recv` between
/// messages, so its clock readings do not wait for the load generator's
/// work): registers, then sends an OPTIONS every 2 ms and waits for its
/// answer. Its round trips are the latency figures.
pub struct Probe {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Histogram<u64>>,
}

impl Probe {
    pub fn start(target: SocketAddr, sigcomp: bool, ruri: String) -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("probe".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, round_trips(target, sigcomp, ruri, flag))
            })
            .unwrap();
        Probe { stop, thread }
    }

    pub fn finish(self) -> Histogram<u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// The probe's loop until `stop`: its round trips (ns).
async fn round_trips(target: SocketAddr, sigcomp: bool, ruri: String, stop: Arc<AtomicBool>) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 10_000_000_000, 3).unwrap();
    let terms = make_terminals(1, target, sigcomp).await;
    let t = &terms[0];
    t.borrow_mut().index = 999_999;
    register_all(&terms, "127.0.0.1").await;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let (cseq, bytes, socket) = {
            let mut tm = t.borrow_mut();
            let (cseq, sip) = tm.options(&ruri);
            (cseq, tm.wire(&sip), tm.socket.clone())
        };
        let sent = Instant::now();
        let _ = socket.send_to(&bytes, target).await;
        let deadline = sent + Duration::from_millis(200);
        while let Some(sip) = receive_one(t, deadline.saturating_duration_since(Instant::now())).await {
            let at = Instant::now();
            if Message::parse(&sip).ok().and_then(|m| m.cseq().ok().map(|c| c.number)) == Some(cseq) {
                n += 1;
                // The first exchanges carry the bytecode and build the
                // compartments' states.
                if n > 20 {
                    let _ = h.record((at.duration_since(sent).as_nanos() as u64).max(1));
                }
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    h
}
