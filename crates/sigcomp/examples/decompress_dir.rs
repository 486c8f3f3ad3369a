//! Decompresses a directory of SigComp messages as their receivers did, and times it.
//!
//! The directory is the one `scripts/anchors/opensigcomp_messages.cpp generate` writes (the messages Open
//! SigComp's Deflate compressor sent): `messages.tsv` (a `# … sip_dictionary=yes|no` line, then one row per
//! message: index, sender `ue` or `pcscf`, compartment, SigComp file, SIP file) beside the files it names.
//!
//! ```text
//! cargo run --release -p sigcomp --example decompress_dir -- DIR K native|udvm
//! ```
//!
//! One untimed pass checks every output against its SIP file (where the row names one) and counts the tokens
//! the native decoders took; then K timed passes, each with a fresh receiving [`Decompressor`] per direction
//! (DMS 8192, SMS 8192, CPB 64, version 2: Open SigComp's speed test's StateHandler(8192, 64, 8192, 2); the
//! SIP/SDP dictionary only if the directory says it was used), so that every pass creates the states exactly as
//! the first did. Each message is decompressed and accepted under its compartment, as Open SigComp's receiver
//! provides its compartment identifier; only that is timed. The thread's CPU time over the K passes is measured
//! too (the receivers' creation included; read from /proc/thread-self/schedstat, immune to other processes
//! taking the CPU). `native` runs recognised token loops natively, `udvm` runs every instruction in the UDVM.
//! Prints one line:
//!
//! ```text
//! sigkit-native messages=M passes=K seconds=S messages_per_s=R cpu_seconds=C messages_per_cpu_s=Q
//!   native_tokens=T native_tokens_per_message=P native_tokens_fewest_in_a_message=F
//! ```
//!
//! (on one line), T and F counted in the checking pass: F is 0 if some message took no token natively.
//!
//! Exit codes: 0 done; 1 a message failed to decompress or an output differs; 2 bad usage or input.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use sigcomp::{CompartmentId, Decompressor, Params, Transport};

/// Open SigComp's speed test's parameters (its StateHandler(8192, 64, 8192, 2)).
const PARAMS: Params = Params { dms: 8192, sms: 8192, cpb: 64, version: 2 };

/// Which endpoint sent a message; the other one receives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sender {
    Ue,
    Pcscf,
}

struct Message {
    name: String,
    sender: Sender,
    compartment: CompartmentId,
    sigcomp: Vec<u8>,
    sip: Option<Vec<u8>>,
}

/// Why the run stopped: the message and the exit code.
struct Stop(String, u8);

fn bad_input(what: impl Into<String>) -> Stop {
    Stop(what.into(), 2)
}

fn read(path: &Path) -> Result<Vec<u8>, Stop> {
    std::fs::read(path).map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())))
}

/// The messages of `dir/messages.tsv` and whether their receivers held the SIP/SDP dictionary.
fn read_dir(dir: &Path) -> Result<(Vec<Message>, bool), Stop> {
    let manifest = dir.join("messages.tsv");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| bad_input(format!("cannot read {}: {e}", manifest.display())))?;
    let mut sip_dictionary = false;
    let mut messages = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(comment) = line.strip_prefix('#') {
            sip_dictionary |= comment.split_whitespace().any(|w| w == "sip_dictionary=yes");
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let bad_row = || bad_input(format!("bad row in {}: {line}", manifest.display()));
        if fields.len() < 4 {
            return Err(bad_row());
        }
        let sender = match fields[1] {
            "ue" => Sender::Ue,
            "pcscf" => Sender::Pcscf,
            _ => return Err(bad_row()),
        };
        let compartment = CompartmentId(fields[2].parse().map_err(|_| bad_row())?);
        let sip = match fields.get(4).filter(|f| !f.is_empty()) {
            Some(name) => Some(read(&dir.join(name))?),
            None => None,
        };
        messages.push(Message {
            name: fields[3].to_string(),
            sender,
            compartment,
            sigcomp: read(&dir.join(fields[3]))?,
            sip,
        });
    }
    if messages.is_empty() {
        return Err(bad_input(format!("no messages in {}", manifest.display())));
    }
    Ok((messages, sip_dictionary))
}

/// A receiving endpoint as Open SigComp's receiver is configured.
fn receiver(sip_dictionary: bool, native: bool) -> Decompressor {
    let made = if sip_dictionary { Decompressor::new(PARAMS) } else { Decompressor::bare(PARAMS) };
    // PARAMS are among the values RFC 3320 §3.3.1 allows.
    #[allow(clippy::expect_used)]
    let mut d = made.expect("valid parameters");
    d.set_native_decoders(native);
    d
}

/// One pass with fresh receivers: the time decompressing and accepting took, and, when checking, the tokens the
/// native decoders took in each message (counted outside the timing).
fn pass(messages: &[Message], sip_dictionary: bool, native: bool, check: bool) -> Result<(Duration, Vec<u64>), Stop> {
    let mut ue_receiver = receiver(sip_dictionary, native);
    let mut pcscf_receiver = receiver(sip_dictionary, native);
    let mut tokens = Vec::new();
    let start = Instant::now();
    for m in messages {
        // A message the UE sent is received by the P-CSCF, and the other way round.
        let d = match m.sender {
            Sender::Ue => &mut pcscf_receiver,
            Sender::Pcscf => &mut ue_receiver,
        };
        let before = if check { d.metrics().native_tokens } else { 0 };
        let out = d
            .decompress(&m.sigcomp, Transport::Message)
            .map_err(|f| Stop(format!("{} failed to decompress: {f}", m.name), 1))?;
        if check {
            if m.sip.as_ref().is_some_and(|sip| *sip != out.output) {
                return Err(Stop(format!("the output of {} differs from its SIP message", m.name), 1));
            }
            tokens.push(d.metrics().native_tokens - before);
        }
        d.accept(out.pending, m.compartment);
    }
    Ok((start.elapsed(), tokens))
}

/// The time this thread has spent on a CPU, in seconds: the first field of /proc/thread-self/schedstat, which
/// scripts/anchors/opensigcomp_messages.cpp reads too, so that both programs' CPU times come from the same clock.
fn cpu_seconds() -> Result<f64, Stop> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat")
        .map_err(|e| bad_input(format!("cannot read /proc/thread-self/schedstat: {e}")))?;
    let ns: u64 = text
        .split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| bad_input("/proc/thread-self/schedstat has no CPU time"))?;
    Ok(ns as f64 * 1e-9)
}

fn run(args: &[String]) -> Result<(), Stop> {
    let [dir, passes, mode] = args else {
        return Err(bad_input("usage: decompress_dir DIR K native|udvm"));
    };
    let passes: u32 =
        passes.parse().ok().filter(|&k| k > 0).ok_or_else(|| bad_input("K must be a positive integer"))?;
    let native = match mode.as_str() {
        "native" => true,
        "udvm" => false,
        _ => return Err(bad_input("the mode is native or udvm")),
    };
    let (messages, sip_dictionary) = read_dir(&PathBuf::from(dir))?;
    let (_, tokens) = pass(&messages, sip_dictionary, native, true)?;
    let native_tokens: u64 = tokens.iter().sum();
    let fewest = tokens.iter().min().copied().unwrap_or(0);
    let mut seconds = 0.0;
    let cpu0 = cpu_seconds()?;
    for _ in 0..passes {
        seconds += pass(&messages, sip_dictionary, native, false)?.0.as_secs_f64();
    }
    let cpu = cpu_seconds()? - cpu0;
    let total = messages.len() as f64 * f64::from(passes);
    println!(
        "sigkit-{mode} messages={} passes={passes} seconds={seconds:.6} messages_per_s={:.1} cpu_seconds={cpu:.6} messages_per_cpu_s={:.1} native_tokens={native_tokens} native_tokens_per_message={:.1} native_tokens_fewest_in_a_message={fewest}",
        messages.len(),
        total / seconds,
        total / cpu,
        native_tokens as f64 / messages.len() as f64,
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Stop(what, code)) => {
            eprintln!("decompress_dir: {what}");
            ExitCode::from(code)
        }
    }
}
