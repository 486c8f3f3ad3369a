//! The long run of the `native` differential target without libFuzzer:
//! RUNS inputs, each a random change of one input from the given corpus
//! directories (the checked-in seeds and a libFuzzer corpus), run through
//! `sigcomp_fuzz::native::run` in an optimised build without coverage
//! instrumentation. A difference between the native decoders and the UDVM
//! panics with the input in hex.
//!
//! `cargo run --release --manifest-path fuzz/Cargo.toml --example native_long -- RUNS SEED DIR...`

use std::time::Instant;

/// xorshift64*: reproducible from the seed, nothing to install.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One to four random changes: a byte rewritten or flipped, bytes
/// inserted or removed, random bytes appended.
fn mutate(input: &mut Vec<u8>, rng: &mut Rng) {
    for _ in 0..1 + rng.below(4) {
        let len = input.len();
        match rng.below(6) {
            0 if len > 0 => input[rng.below(len)] = rng.next() as u8,
            1 if len > 0 => input[rng.below(len)] ^= 1 << rng.below(8),
            2 => {
                let at = rng.below(len + 1);
                input.insert(at, rng.next() as u8);
            }
            3 if len > 2 => {
                input.remove(2 + rng.below(len - 2));
            }
            4 => input.extend((0..1 + rng.below(32)).map(|_| rng.next() as u8)),
            _ if len > 0 => input[rng.below(len.min(2))] = rng.next() as u8,
            _ => input.push(rng.next() as u8),
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: native_long RUNS SEED DIR...";
    let runs: u64 = args.next().expect(usage).parse().expect(usage);
    let seed: u64 = args.next().expect(usage).parse().expect(usage);
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    for dir in args {
        for entry in std::fs::read_dir(&dir).expect("corpus directory") {
            corpus.push(std::fs::read(entry.expect("entry").path()).expect("read"));
        }
    }
    assert!(!corpus.is_empty(), "{usage}: no inputs");
    let mut rng = Rng(seed | 1);
    let start = Instant::now();
    let mut input = Vec::new();
    for i in 0..runs {
        input.clear();
        input.extend_from_slice(&corpus[rng.below(corpus.len())]);
        mutate(&mut input, &mut rng);
        let hex: String;
        if std::panic::catch_unwind(|| sigcomp_fuzz::native::run(&input)).is_err() {
            hex = input.iter().map(|b| format!("{b:02x}")).collect();
            eprintln!("difference at run {i}: input {hex}");
            std::process::exit(1);
        }
        if (i + 1) % 10_000_000 == 0 {
            eprintln!("{} runs, {:.0} s", i + 1, start.elapsed().as_secs_f64());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{runs} runs, 0 differences, {secs:.0} s ({:.0} runs/s), seed {seed}, corpus {}",
        runs as f64 / secs,
        corpus.len()
    );
}
