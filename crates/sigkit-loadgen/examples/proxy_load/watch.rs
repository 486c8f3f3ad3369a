//! The processes whose CPU and memory each step reports, sampled before
//! and after it.

use std::net::SocketAddr;
use std::time::Instant;

use crate::processes::http_get;
use crate::usage::{
    handling_buckets, handling_quantile_us, machine_busy_ticks, process_ticks, rss_kib, run_queue_wait, self_ticks,
    thread_ticks, CLOCK_TICKS_PER_S,
};

/// The processes whose CPU and memory are reported.
pub struct Watch {
    pub proxy: Vec<u32>,
    pub upstream: Upstream,
    /// The proxy's metrics endpoint, for its handling-time histogram.
    pub metrics: Option<SocketAddr>,
}

pub enum Upstream {
    /// The responder thread of this program.
    Responder,
    /// Kamailio's processes.
    Kamailio(Vec<u32>),
}

pub struct Sample {
    at: Instant,
    proxy: u64,
    generator: u64,
    upstream: u64,
    machine: u64,
    handling: Vec<(f64, u64)>,
    /// Run-queue waits (ns, time slices) of the proxy's and this program's threads.
    proxy_wait: (u64, u64),
    generator_wait: (u64, u64),
}

impl Watch {
    pub fn sample(&self) -> Sample {
        let responder = thread_ticks("responder");
        let upstream = match &self.upstream {
            Upstream::Responder => responder,
            Upstream::Kamailio(pids) => process_ticks(pids),
        };
        let machine = machine_busy_ticks();
        Sample {
            at: Instant::now(),
            proxy: process_ticks(&self.proxy),
            generator: self_ticks() - responder,
            upstream,
            machine,
            handling: self.metrics.map(|m| handling_buckets(&http_get(m, "/metrics"))).unwrap_or_default(),
            proxy_wait: run_queue_wait(&self.proxy),
            generator_wait: run_queue_wait(&[std::process::id()]),
        }
    }

    /// The proxy's handling time p50 / p99 (µs) between two samples.
    pub fn handling(&self, a: &Sample, b: &Sample) -> Option<(f64, f64)> {
        Some((
            handling_quantile_us(&a.handling, &b.handling, 0.5)?,
            handling_quantile_us(&a.handling, &b.handling, 0.99)?,
        ))
    }

    /// Mean wait for a CPU per time slice (µs): the proxy's threads, this
    /// program's.
    pub fn waits(&self, a: &Sample, b: &Sample) -> [f64; 2] {
        let per = |x: (u64, u64), y: (u64, u64)| {
            let slices = y.1.saturating_sub(x.1);
            if slices == 0 {
                0.0
            } else {
                y.0.saturating_sub(x.0) as f64 / slices as f64 / 1000.0
            }
        };
        [per(a.proxy_wait, b.proxy_wait), per(a.generator_wait, b.generator_wait)]
    }

    /// Percent of one core: proxy, generator, upstream, and everything
    /// else on the machine (other users of the two cores).
    pub fn cpu(&self, a: &Sample, b: &Sample) -> [f64; 4] {
        let secs = b.at.duration_since(a.at).as_secs_f64() * CLOCK_TICKS_PER_S;
        let pct = |x: u64, y: u64| (y.saturating_sub(x)) as f64 * 100.0 / secs;
        let ours = pct(a.proxy, b.proxy) + pct(a.generator, b.generator) + pct(a.upstream, b.upstream);
        [
            pct(a.proxy, b.proxy),
            pct(a.generator, b.generator),
            pct(a.upstream, b.upstream),
            (pct(a.machine, b.machine) - ours).max(0.0),
        ]
    }

    pub fn rss_mib(&self) -> f64 {
        rss_kib(&self.proxy) as f64 / 1024.0
    }
}
