//! What the processes use, read from Linux's /proc: CPU clock ticks of
//! processes, of this program's named threads and of the whole machine,
//! resident memory, run-queue waits; and the proxy's handling-time
//! histogram from its metrics.

use std::path::Path;

/// Linux's USER_HZ, the unit of /proc's tick counts: 100 on every
/// architecture it exports to user space.
pub const CLOCK_TICKS_PER_S: f64 = 100.0;

/// User + system clock ticks of a process, or of this process's threads
/// named `thread` (`/proc/PID/stat` fields 14 and 15).
fn ticks_of(stat_path: &Path) -> u64 {
    let Ok(s) = std::fs::read_to_string(stat_path) else { return 0 };
    let Some(after) = s.rsplit_once(')').map(|(_, a)| a) else { return 0 };
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state is field 3, utime 14, stime 15.
    f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0) + f.get(12).and_then(|u| u.parse().ok()).unwrap_or(0)
}

pub fn process_ticks(pids: &[u32]) -> u64 {
    pids.iter().map(|p| ticks_of(Path::new(&format!("/proc/{p}/stat")))).sum()
}

/// The ticks of this program's threads named `name`.
pub fn thread_ticks(name: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return 0 };
    dir.flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .map(|t| ticks_of(&t.path().join("stat")))
        .sum()
}

/// Busy clock ticks of the whole machine (`/proc/stat`: user, nice,
/// system, irq, softirq, steal), summed over the CPUs.
pub fn machine_busy_ticks() -> u64 {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> =
        s.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| f.get(i)).sum()
}

pub fn self_ticks() -> u64 {
    ticks_of(Path::new("/proc/self/stat"))
}

/// The process and every descendant (Kamailio's workers).
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut all = vec![root];
    let mut i = 0;
    while i < all.len() {
        let parent = all[i];
        if let Ok(d) = std::fs::read_dir("/proc") {
            for e in d.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
                let Ok(s) = std::fs::read_to_string(e.path().join("stat")) else { continue };
                let ppid = s.rsplit_once(')').and_then(|(_, a)| a.split_whitespace().nth(1)?.parse::<u32>().ok());
                if ppid == Some(parent) && !all.contains(&pid) {
                    all.push(pid);
                }
            }
        }
        i += 1;
    }
    all
}

pub fn rss_kib(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
        .filter_map(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("VmRSS:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
        })
        .sum()
}

/// Nanoseconds spent waiting on a run queue for a CPU, and time slices
/// run, summed over the threads of the processes (`/proc/PID/task/TID/
/// schedstat`: time on the CPU, time waiting, time slices; needs
/// schedstats, which Linux keeps for every task since 2.6.9 unless
/// disabled).
pub fn run_queue_wait(pids: &[u32]) -> (u64, u64) {
    let mut total = (0, 0);
    for p in pids {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{p}/task")) else { continue };
        for t in dir.flatten() {
            let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) else { continue };
            let f: Vec<u64> = s.split_whitespace().filter_map(|v| v.parse().ok()).collect();
            if let [_, wait, slices] = f[..] {
                total.0 += wait;
                total.1 += slices;
            }
        }
    }
    total
}

/// Cumulative counts of the proxy's handling-time histogram, in bucket
/// order (the last is +Inf).
pub fn handling_buckets(metrics: &str) -> Vec<(f64, u64)> {
    metrics
        .lines()
        .filter_map(|l| l.strip_prefix("sigkit_proxy_handling_seconds_bucket{le=\""))
        .filter_map(|l| {
            let (bound, count) = l.split_once("\"} ")?;
            let bound = if bound == "+Inf" { f64::INFINITY } else { bound.parse().ok()? };
            Some((bound, count.trim().parse().ok()?))
        })
        .collect()
}

/// The bucket bound (µs) under which quantile `q` of the observations
/// between two scrapes fell.
pub fn handling_quantile_us(before: &[(f64, u64)], after: &[(f64, u64)], q: f64) -> Option<f64> {
    let counts: Vec<(f64, u64)> =
        after.iter().map(|&(b, n)| (b, n - before.iter().find(|(bb, _)| *bb == b).map_or(0, |x| x.1))).collect();
    let total = counts.last()?.1;
    let want = (q * total as f64).ceil() as u64;
    (total > 0).then(|| counts.iter().find(|(_, n)| *n >= want).map_or(f64::INFINITY, |(b, _)| b * 1e6))
}
