//! CPU and memory of the system under test (`--sut-pid`), read from
//! Linux's /proc: utime + stime of /proc/PID/stat (fields 14 and 15, in
//! clock ticks) and VmRSS of /proc/PID/status, summed over the PIDs given.

use std::time::Instant;

use crate::metrics::SutUsage;

/// Clock ticks per second of /proc/PID/stat: USER_HZ, 100 on Linux
/// (the kernel reports in it whatever its own HZ).
const USER_HZ: f64 = 100.0;

/// Samples processes' CPU time and memory.
#[derive(Debug, Clone)]
pub struct SutSampler {
    pids: Vec<u32>,
    last: Option<(Instant, u64)>,
    first: Option<(Instant, u64)>,
    peak_rss: u64,
}

fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) is index 11.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl SutSampler {
    /// A sampler of `pids` (none: nothing is sampled); the first sample sets the start of the CPU-time averages.
    pub fn new(pids: Vec<u32>) -> SutSampler {
        SutSampler { pids, last: None, first: None, peak_rss: 0 }
    }

    /// Whether every PID can be read now.
    pub fn check(&self) -> Result<(), u32> {
        for &p in &self.pids {
            cpu_ticks(p).ok_or(p)?;
        }
        Ok(())
    }

    /// Usage since the previous sample (None at the first, or when no PID
    /// can be read).
    pub fn sample(&mut self, now: Instant) -> Option<SutUsage> {
        if self.pids.is_empty() {
            return None;
        }
        let ticks: u64 = self.pids.iter().filter_map(|&p| cpu_ticks(p)).sum();
        let rss: u64 = self.pids.iter().filter_map(|&p| rss_kib(p)).sum();
        self.peak_rss = self.peak_rss.max(rss);
        self.first.get_or_insert((now, ticks));
        let prev = self.last.replace((now, ticks))?;
        let secs = (now - prev.0).as_secs_f64().max(1e-9);
        Some(SutUsage { cpu_percent: ticks.saturating_sub(prev.1) as f64 / USER_HZ / secs * 100.0, rss_kib: rss })
    }

    /// Average CPU over all samples and the peak memory.
    pub fn overall(&self) -> Option<SutUsage> {
        let (t0, c0) = self.first?;
        let (t1, c1) = self.last?;
        let secs = (t1 - t0).as_secs_f64();
        (secs > 0.0).then(|| SutUsage {
            cpu_percent: c1.saturating_sub(c0) as f64 / USER_HZ / secs * 100.0,
            rss_kib: self.peak_rss,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        assert!(cpu_ticks(me).is_some() && rss_kib(me).unwrap() > 0);
        let mut s = SutSampler::new(vec![me]);
        assert!(s.check().is_ok());
        let t0 = Instant::now();
        assert!(s.sample(t0).is_none());
        // Burn some CPU so the second sample has something to show.
        let mut x = 0u64;
        while t0.elapsed().as_millis() < 300 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let u = s.sample(Instant::now()).unwrap();
        assert!(u.cpu_percent > 0.0 && u.rss_kib > 0, "{u:?} {x}");
        assert!(SutSampler::new(vec![u32::MAX]).check().is_err());
    }
}
