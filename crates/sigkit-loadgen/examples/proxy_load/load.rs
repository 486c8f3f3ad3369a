//! The open-loop load: OPTIONS round robin over the terminals at a fixed
//! offered rate per step, their answers counted and timed.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use sigkit_sip::Message;

use crate::probe::Probe;
use crate::step::StepResult;
use crate::terminal::SharedTerminal;
use crate::watch::Watch;

/// An empty histogram of delays from 1 ns to 10 s, 3 significant digits.
#[allow(clippy::unwrap_used)] // Within HdrHistogram's bounds: low 1 ≥ 1, high 10^10 ≥ 2·low, 3 significant digits ≤ 5.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000, 3).unwrap()
}

#[derive(Default)]
struct Tally {
    measuring: bool,
    received: u64,
    latency: Option<Histogram<u64>>,
}

pub struct Load {
    terms: Vec<SharedTerminal>,
    tally: Rc<RefCell<Tally>>,
    receivers: Vec<tokio::task::JoinHandle<()>>,
    ruri: String,
    /// Where the probe sends and whether it speaks SigComp.
    pub probe: Option<(SocketAddr, bool)>,
}

/// Receives `t`'s answers: each matched to its request by CSeq, counted
/// and timed while a step measures.
async fn receive_answers(t: SharedTerminal, tally: Rc<RefCell<Tally>>) {
    let socket = t.borrow().socket.clone();
    let mut buf = vec![0u8; 65536];
    loop {
        let Ok((n, _)) = socket.recv_from(&mut buf).await else { continue };
        let at = Instant::now();
        let Some(sip) = t.borrow_mut().unwrap(&buf[..n]) else { continue };
        let Some(cseq) = Message::parse(&sip).ok().and_then(|m| m.cseq().ok().map(|c| c.number)) else {
            continue;
        };
        let Some(sent) = t.borrow_mut().pending.remove(&cseq) else { continue };
        let mut tally = tally.borrow_mut();
        if tally.measuring {
            tally.received += 1;
            let ns = at.duration_since(sent).as_nanos() as u64;
            if let Some(h) = &mut tally.latency {
                let _ = h.record(ns.max(1));
            }
        }
    }
}

impl Load {
    pub fn new(terms: Vec<SharedTerminal>, ruri: String) -> Load {
        let tally = Rc::new(RefCell::new(Tally::default()));
        let receivers =
            terms.iter().map(|t| tokio::task::spawn_local(receive_answers(t.clone(), tally.clone()))).collect();
        Load { terms, tally, receivers, ruri, probe: None }
    }

    /// Offers `rate` requests per second for `length`, round robin over
    /// the terminals; what is unanswered 500 ms after the end is lost.
    pub async fn step(&self, rate: u64, length: Duration, watch: &Watch) -> StepResult {
        for t in &self.terms {
            t.borrow_mut().pending.clear();
        }
        {
            let mut tally = self.tally.borrow_mut();
            tally.measuring = true;
            tally.received = 0;
            tally.latency = Some(latency_histogram());
        }
        // Without a probe the step has no probe figures: the loss is told
        // on stderr, and the step's own figures still count.
        let probe = self.probe.and_then(|(target, sigcomp)| {
            Probe::start(target, sigcomp, self.ruri.clone()).map_err(|e| eprintln!("probe: {e}")).ok()
        });
        let before = watch.sample();
        let start = Instant::now();
        let (sent, send_errors) = self.offer(rate, length, start).await;
        let offered_for = start.elapsed();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = watch.sample();
        let probed = probe.and_then(|p| p.finish().map_err(|e| eprintln!("probe: {e}")).ok());
        let mut tally = self.tally.borrow_mut();
        tally.measuring = false;
        // Set above, at the step's start; taken nowhere else.
        let h = tally.latency.take().unwrap_or_else(latency_histogram);
        let failures: u64 = self.terms.iter().map(|t| t.borrow().failures).sum();
        StepResult {
            offered: rate,
            sent_rate: sent as f64 / offered_for.as_secs_f64(),
            sent,
            received: tally.received,
            send_errors,
            decompression_failures: failures,
            p50_us: h.value_at_quantile(0.5) as f64 / 1000.0,
            p99_us: h.value_at_quantile(0.99) as f64 / 1000.0,
            probe: probed.map(|p| {
                (p.value_at_quantile(0.5) as f64 / 1000.0, p.value_at_quantile(0.99) as f64 / 1000.0, p.len())
            }),
            seconds: offered_for.as_secs_f64(),
            cpu: watch.cpu(&before, &after),
            rss_mib: watch.rss_mib(),
            handling: watch.handling(&before, &after),
            waits: watch.waits(&before, &after),
        }
    }

    /// Sends `rate × length` OPTIONS from `start` on, each when it falls
    /// due (checked every 0.5 ms); the requests sent and the sends that
    /// failed.
    async fn offer(&self, rate: u64, length: Duration, start: Instant) -> (u64, u64) {
        let total = (rate as f64 * length.as_secs_f64()) as u64;
        let mut sent = 0u64;
        let mut send_errors = 0u64;
        let mut next = 0usize;
        while sent < total {
            let due = ((start.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
            while sent < due {
                let t = &self.terms[next % self.terms.len()];
                next += 1;
                let (bytes, socket, target) = {
                    let mut tm = t.borrow_mut();
                    let (cseq, sip) = tm.options(&self.ruri);
                    let bytes = tm.wire(&sip);
                    tm.pending.insert(cseq, Instant::now());
                    (bytes, tm.socket.clone(), tm.target)
                };
                if socket.try_send_to(&bytes, target).is_err() {
                    send_errors += 1;
                }
                sent += 1;
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        (sent, send_errors)
    }

    pub fn stop(self) {
        for r in self.receivers {
            r.abort();
        }
    }
}

/// Steps the rate up until the loss reaches 1 %; the highest rate below
/// is the maximum.
pub async fn find_max(load: &Load, rates: &[u64], step: Duration, watch: &Watch, label: &str) -> u64 {
    let mut best = 0;
    for &r in rates {
        let s = load.step(r, step, watch).await;
        println!("{}", s.row(label));
        if !s.good() {
            break;
        }
        best = r;
    }
    best
}
