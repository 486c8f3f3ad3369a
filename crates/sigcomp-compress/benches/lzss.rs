//! LZSS encoder benchmarks (criterion):
//! `cargo bench -p sigcomp-compress --bench lzss` (about a minute; a name
//! filter such as `-- history` goes after `--`).
//!
//! The timed routine is one `MatchFinder::encode` call: match search over
//! the hash chains, optimal parse and token output for one corpus message,
//! with the format the compressor uses for a 4096-byte circular buffer and
//! a 258-byte look-ahead (12 offset bits, length_bits 8) and the default
//! effort (512 chain links, optimal parse).
//!
//! * `no_history/<message>`: the window holds only the RFC 3485 SIP/SDP
//!   dictionary (its last 4096 bytes), not yet hashed, as for the first
//!   message of a compartment: the time includes hashing the window.
//! * `history/<flow>/<message>`: the window is the dictionary followed by
//!   the messages of the flow that come before it (every one hashed by the
//!   earlier `encode` calls, as in a running compartment). For
//!   `open-sigcomp-startup/01-ue-REGISTER` the history is a REGISTER and a
//!   200 OK, the steady state of the `sigkit bench` Open SigComp workload
//!   (the message's predecessor is in the window).
//!
//! The match finder is cloned outside the timing (`iter_batched`), since
//! `encode` appends the message to its history.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sigcomp_compress::bits::BitWriter;
use sigcomp_compress::lzss::{Effort, LzssFormat, MatchFinder};

const BUFFER: usize = 4096;

fn corpus_message(flow: &str, name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus").join(flow).join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn flow_messages(flow: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus").join(flow);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sip"))
        .collect();
    names.sort();
    names.into_iter().map(|n| (n.clone(), corpus_message(flow, &n))).collect()
}

fn dictionary_window() -> Vec<u8> {
    let d = sigcomp::dict::SIP_SDP;
    d[d.len().saturating_sub(BUFFER)..].to_vec()
}

fn bench_encode(c: &mut Criterion, name: &str, finder: &MatchFinder, message: &[u8]) {
    let format = LzssFormat::for_buffer(BUFFER, 258).expect("format");
    let mut g = c.benchmark_group("lzss_encode");
    g.throughput(Throughput::Bytes(message.len() as u64));
    g.bench_function(name, |b| {
        b.iter_batched(
            || finder.clone(),
            |mut f| {
                let mut out = BitWriter::default();
                f.encode(black_box(message), BUFFER, format, Effort::default(), &mut out);
                out.finish()
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let format = LzssFormat::for_buffer(BUFFER, 258).expect("format");
    let dict = dictionary_window();
    let startup = flow_messages("open-sigcomp-startup");
    let video = flow_messages("3gpp-video-call");
    let mut fresh = MatchFinder::default();
    fresh.prepare(&dict);
    for (name, msg) in startup.iter().take(2).chain(video.iter().take(1)) {
        bench_encode(c, &format!("no_history/{name}"), &fresh, msg);
    }
    // Window = dictionary + the flow's earlier messages, all hashed.
    let with_history = |flow: &str, messages: &[(String, Vec<u8>)], upto: usize, history: &[usize]| {
        let mut f = MatchFinder::default();
        f.prepare(&dict);
        for &k in history {
            let mut out = BitWriter::default();
            f.encode(&messages[k].1, BUFFER, format, Effort::default(), &mut out);
        }
        (format!("history/{flow}/{}", messages[upto].0), f)
    };
    // The Open SigComp workload alternates REGISTER and 200 OK.
    for (upto, history) in [(0usize, [0usize, 1]), (1, [1, 0])] {
        let (name, f) = with_history("open-sigcomp-startup", &startup, upto, &history);
        bench_encode(c, &name, &f, &startup[upto].1);
    }
    for upto in [5usize, 10] {
        let history: Vec<usize> = (0..upto).collect();
        let (name, f) = with_history("3gpp-video-call", &video, upto, &history);
        bench_encode(c, &name, &f, &video[upto].1);
    }
}

// criterion_group! makes `lzss` a `pub fn` and takes no doc comment:
// in a private module it is not public API.
mod group {
    use super::*;
    criterion_group! {
        name = lzss;
        config = Criterion::default().warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
        targets = benches
    }
}
criterion_main!(group::lzss);
