//! The latency probe: a terminal of its own on its own thread.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use sigkit_sip::Message;

use crate::load::latency_histogram;
use crate::terminal::{make_terminals, receive_one, register_all};

/// A terminal of its own on its own thread (blocked in `recv` between
/// messages, so its clock readings do not wait for the load generator's
/// work): registers, then sends an OPTIONS every 2 ms and waits for its
/// answer. Its round trips are the latency figures.
pub struct Probe {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<Histogram<u64>, String>>,
}

impl Probe {
    /// Starts the probe's thread, sending to `target` (in SigComp with
    /// `sigcomp`) OPTIONS for `ruri`; an error when the thread cannot be
    /// made.
    pub fn start(target: SocketAddr, sigcomp: bool, ruri: String) -> Result<Probe, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("probe".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("the probe's tokio runtime: {e}"))?;
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, round_trips(target, sigcomp, ruri, flag))
            })
            .map_err(|e| format!("the probe's thread: {e}"))?;
        Ok(Probe { stop, thread })
    }

    /// Stops the probe: its round trips (ns), or why it could not run. A
    /// panic of the probe's thread goes on in the caller.
    pub fn finish(self) -> Result<Histogram<u64>, String> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// The probe's loop until `stop`: its round trips (ns).
async fn round_trips(
    target: SocketAddr,
    sigcomp: bool,
    ruri: String,
    stop: Arc<AtomicBool>,
) -> Result<Histogram<u64>, String> {
    let mut h = latency_histogram();
    let terms = make_terminals(1, target, sigcomp).await?;
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
    Ok(h)
}
