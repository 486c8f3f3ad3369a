//! Compress + decompress rate of the round_trip bench's flows, without
//! criterion: `cargo run --release -p rohc-tcp --example round_trip_rate --
//! [ROUNDS]` prints headers/s of CPU time per scheme and flow (best of the
//! rounds, so a busy shared machine shows less). With `REPS=N` (and `ONLY=label/flow`)
//! each scheme runs N times through its flow, a fixed amount of work for
//! `perf stat -e instructions`.

use std::time::Instant;

use rohc_tcp::synth::{bulk_transfer, sip_over_tcp, Dir, FlowOptions};
use rohc_tcp::{Mode, Scheme};

/// Nanoseconds this thread has run on a CPU (Linux schedstat), so that
/// the other loads of a shared machine do not count; wall-clock time
/// elsewhere.
fn cpu_ns(wall: &Instant) -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| wall.elapsed().as_nanos() as u64)
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let bulk = bulk_transfer(2000, 1460, 97, FlowOptions::default());
    let sip = sip_over_tcp(100, FlowOptions::default());
    let pick = |f: &[(Dir, Vec<u8>)], d: Dir| -> Vec<Vec<u8>> {
        f.iter().filter(|(x, _)| *x == d).map(|(_, p)| p.clone()).collect()
    };
    let flows = [
        ("bulk-data", pick(&bulk, Dir::Forward)),
        ("bulk-acks", pick(&bulk, Dir::Backward)),
        ("sip-client", pick(&sip, Dir::Forward)),
    ];
    for (name, packets) in &flows {
        for (scheme, label) in [
            (Scheme::Taroc(Mode::U), "taroc-u"),
            (Scheme::Taroc(Mode::O), "taroc-o"),
            (Scheme::Taroc(Mode::R), "taroc-r"),
        ] {
            if std::env::var("ONLY").is_ok_and(|o| o != format!("{label}/{name}")) {
                continue;
            }
            let mut best = f64::MAX;
            for _ in 0..rounds {
                let wall = Instant::now();
                let start = cpu_ns(&wall);
                let mut reps = 0;
                // REPS fixes the work (for counting instructions) instead
                // of the time.
                let fixed: Option<usize> = std::env::var("REPS").ok().and_then(|r| r.parse().ok());
                while fixed.map_or(cpu_ns(&wall) - start < 300_000_000, |n| reps < n) {
                    let (mut comp, mut decomp) = scheme.pair();
                    let (mut wire, mut back, mut fb) = (Vec::with_capacity(2048), Vec::with_capacity(2048), Vec::new());
                    for p in packets {
                        wire.clear();
                        back.clear();
                        comp.compress_packet(p, &mut wire).expect("compresses");
                        decomp.decompress_packet(&wire, &mut back).expect("decompresses");
                        fb.clear();
                        while decomp.poll_feedback(&mut fb) {
                            comp.feedback(&fb).expect("feedback");
                            fb.clear();
                        }
                    }
                    reps += 1;
                }
                best = best.min((cpu_ns(&wall) - start) as f64 * 1e-9 / (reps * packets.len()) as f64);
            }
            println!("{label}/{name}: {:.3} M headers/s ({} packets)", 1e-6 / best, packets.len());
        }
    }
}
