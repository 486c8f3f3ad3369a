//! Compress + decompress rate of TAROC on a capture's packets, measured as
//! `scripts/anchors/rohc_capture.c` measures the ROHC library's, so that
//! `scripts/bench-vs-rohc.sh` can set the two side by side:
//! `cargo run --release -p taroc --example capture_rate -- CAPTURE SECONDS [u|o|r]`.
//!
//! Each connection direction (IP version, addresses, ports) has its own
//! compressor and decompressor in the mode given (default o), and the
//! decompressor's feedback goes to its compressor at once. One checked pass
//! first (every packet must come back byte for byte; its mean compressed
//! header is `sigkit rohc`'s for the mode), then passes with fresh pairs
//! (their creation timed too) until the thread has run SECONDS of CPU time.
//! Prints one JSON line: packets, mean header, round-trip failures,
//! headers/s by the thread's CPU time and by wall clock. Exit codes: 0 done;
//! 1 a packet failed to round-trip; 2 bad usage or an unreadable capture.

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Instant;

use taroc::{Mode, Scheme};

/// Nanoseconds this thread has run on a CPU (Linux schedstat), so that
/// other loads of a shared machine do not count; wall-clock time elsewhere.
fn cpu_ns(wall: &Instant) -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| wall.elapsed().as_nanos() as u64)
}

/// The connection direction of an IPv4 or IPv6 TCP packet: version,
/// addresses and ports (the capture reader only hands over packets TAROC
/// parses, so the offsets are inside the packet).
fn direction(p: &[u8]) -> Vec<u8> {
    let (addrs, tcp) = if p[0] >> 4 == 6 { (&p[8..40], 40) } else { (&p[12..20], 20) };
    [&p[..1], addrs, &p[tcp..tcp + 4]].concat()
}

/// What one pass found.
#[derive(Default)]
struct Pass {
    header_bytes: usize,
    failures: usize,
}

/// Compresses and decompresses every packet in capture order with fresh
/// pairs, one per direction, and compares each output with its input (the
/// library's driver compares in every pass too).
fn pass(scheme: Scheme, packets: &[(usize, Vec<u8>)], directions: usize) -> Pass {
    let mut pairs: Vec<_> = (0..directions).map(|_| scheme.pair()).collect();
    let (mut wire, mut back, mut fb) = (Vec::with_capacity(2048), Vec::with_capacity(2048), Vec::new());
    let mut out = Pass::default();
    for (dir, p) in packets {
        let (comp, decomp) = &mut pairs[*dir];
        wire.clear();
        back.clear();
        match comp.compress_packet(p, &mut wire) {
            Ok(header) => out.header_bytes += header,
            Err(_) => {
                out.failures += 1;
                continue;
            }
        }
        let ok = decomp.decompress_packet(&wire, &mut back).is_ok();
        if !ok || back != *p {
            out.failures += 1;
        }
        fb.clear();
        while decomp.poll_feedback(&mut fb) {
            // A refused feedback packet leaves the compressor where it was,
            // as the library's driver treats it.
            let _ = comp.feedback(&fb);
            fb.clear();
        }
    }
    out
}

fn usage() -> ExitCode {
    eprintln!("usage: capture_rate CAPTURE SECONDS [u|o|r]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(seconds)) = (args.first(), args.get(1).and_then(|s| s.parse::<f64>().ok())) else {
        return usage();
    };
    let (mode, label) = match args.get(2).map(String::as_str) {
        None | Some("o") => (Mode::O, "taroc-o"),
        Some("u") => (Mode::U, "taroc-u"),
        Some("r") => (Mode::R, "taroc-r"),
        Some(_) => return usage(),
    };
    if args.len() > 3 || !(seconds > 0.0 && seconds < 3600.0) {
        return usage();
    }
    let cap = match std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|d| taroc::capture::read_capture(&d).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("capture_rate: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut keys: HashMap<Vec<u8>, usize> = HashMap::new();
    let packets: Vec<(usize, Vec<u8>)> = cap
        .packets
        .into_iter()
        .map(|p| {
            let next = keys.len();
            (*keys.entry(direction(&p.ip)).or_insert(next), p.ip)
        })
        .collect();
    let scheme = Scheme::Taroc(mode);
    let checked = pass(scheme, &packets, keys.len());
    let mut json = format!(
        "{{\"capture\": {path:?}, \"scheme\": \"{label}\", \"directions\": {}, \"packets\": {}, \
         \"header_bytes_after\": {}, \"mean_header_after\": {:.3}, \"round_trip_failures\": {}",
        keys.len(),
        packets.len(),
        checked.header_bytes,
        checked.header_bytes as f64 / packets.len().max(1) as f64,
        checked.failures
    );
    let mut failures = checked.failures;
    if !packets.is_empty() {
        let wall = Instant::now();
        let start = cpu_ns(&wall);
        let mut passes = 0usize;
        while passes == 0 || ((cpu_ns(&wall) - start) as f64) < seconds * 1e9 {
            failures += pass(scheme, &packets, keys.len()).failures;
            passes += 1;
        }
        let cpu = (cpu_ns(&wall) - start) as f64 * 1e-9;
        let elapsed = wall.elapsed().as_secs_f64();
        let headers = (passes * packets.len()) as f64;
        json += &format!(
            ", \"bench_passes\": {passes}, \"bench_cpu_s\": {cpu:.3}, \"bench_wall_s\": {elapsed:.3}, \
             \"bench_all_ok\": {}, \"headers_per_s\": {:.0}, \"headers_per_wall_s\": {:.0}",
            failures == checked.failures,
            headers / cpu,
            headers / elapsed
        );
    }
    println!("{json}}}");
    if failures > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
