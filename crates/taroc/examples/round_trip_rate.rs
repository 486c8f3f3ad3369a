//! Compress + decompress rate of the round_trip bench's flows, without
//! criterion: `cargo run --release -p taroc --example round_trip_rate --
//! [ROUNDS]` prints headers/s of CPU time per scheme and flow (best of the
//! rounds, so a busy shared machine shows less). With `REPS=N` (and `ONLY=label/flow`)
//! each scheme runs N times through its flow, a fixed amount of work for
//! `perf stat -e instructions`.

use std::time::Instant;

#[path = "../benches/common/mod.rs"]
mod common;

/// Nanoseconds this thread has run on a CPU (Linux schedstat), so that
/// the other loads of a shared machine do not count; wall-clock time
/// elsewhere.
fn cpu_ns(wall: &Instant) -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| wall.elapsed().as_nanos() as u64)
}

/// The CPU seconds per header of `run` (one pass over `packets` packets),
/// the best of `rounds` rounds of 0.3 s each, or of `REPS` passes each.
fn best_seconds_per_header(rounds: usize, packets: usize, mut run: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let wall = Instant::now();
        let start = cpu_ns(&wall);
        let mut reps = 0;
        // REPS fixes the work (for counting instructions) instead of the
        // time.
        let fixed: Option<usize> = std::env::var("REPS").ok().and_then(|r| r.parse().ok());
        while fixed.map_or(cpu_ns(&wall) - start < 300_000_000, |n| reps < n) {
            run();
            reps += 1;
        }
        best = best.min((cpu_ns(&wall) - start) as f64 * 1e-9 / (reps * packets) as f64);
    }
    best
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let flows = common::flows();
    for (name, packets) in &flows {
        for (scheme, label) in common::TAROC_MODES {
            if std::env::var("ONLY").is_ok_and(|o| o != format!("{label}/{name}")) {
                continue;
            }
            let best = best_seconds_per_header(rounds, packets.len(), || {
                let (mut comp, mut decomp) = scheme.pair();
                common::pass(comp.as_mut(), decomp.as_mut(), packets);
            });
            println!("{label}/{name}: {:.3} M headers/s ({} packets)", 1e-6 / best, packets.len());
        }
    }
    // SIP over TCP both ways, with and without cross-direction inference.
    let sip = common::sip_both();
    for (scheme, label) in
        [(taroc::Scheme::Taroc(taroc::Mode::O), "taroc-o"), (taroc::Scheme::TarocInfer, "taroc-o-infer")]
    {
        if std::env::var("ONLY").is_ok_and(|o| o != format!("{label}/sip-both")) {
            continue;
        }
        let mut headers = 0;
        let best = best_seconds_per_header(rounds, sip.len(), || headers = common::pass_both(scheme, &sip));
        println!(
            "{label}/sip-both: {:.3} M headers/s ({} packets, {:.2} B a header)",
            1e-6 / best,
            sip.len(),
            headers as f64 / sip.len() as f64
        );
    }
}
