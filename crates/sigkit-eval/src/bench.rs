//! Speed, memory and multi-core scaling of sigkit's SigComp stack.
//!
//! A *round trip* is what Open SigComp's speed test (the Open SigComp characterisation §2.1.1)
//! counts as one message: one endpoint compresses a SIP message, the other
//! decompresses it with its own UDVM and accepts its state, and the
//! feedback that message asked for travels back inside the next message in
//! the other direction (RFC 3320 §3.2), exactly as [`crate::flow::run`]
//! exchanges messages between a UE and a P-CSCF.
//!
//! [`run_speed`] repeats a message sequence on `threads` workers (std
//! threads, each with its own endpoints, so no compartment is shared) and
//! records every compress and decompress time in HDR histograms.
//! [`run_memory`] makes one server endpoint carry a call flow in each of N
//! compartments and reports its resident memory.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use sigcomp::wire::{frame_for_stream, Deframer, Frame};
use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Config, Endpoint, EndpointConfig, Received};

use crate::corpus::{FlowMessage, Side};
use crate::flow::PEER;

/// One message of the bench's sequence, with the flow it came from.
#[derive(Debug, Clone)]
pub struct BenchMessage {
    /// The flow directory's name, e.g. `3gpp-video-call`.
    pub flow: String,
    /// Position of the flow in the sequence (flows are numbered from 0).
    pub flow_index: usize,
    /// The message itself: its number, sender, name and bytes.
    pub message: FlowMessage,
}

/// Builds the bench sequence from flows, in order: every flow's messages in
/// file order, the flows one after the other.
pub fn sequence(flows: Vec<(String, Vec<FlowMessage>)>) -> Vec<BenchMessage> {
    let mut out = Vec::new();
    for (flow_index, (flow, messages)) in flows.into_iter().enumerate() {
        for message in messages {
            out.push(BenchMessage { flow: flow.clone(), flow_index, message });
        }
    }
    out
}

/// When a worker drops its compartment pair and starts a fresh one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompartmentPolicy {
    /// At the start of every flow pass: each call is carried by a new UE
    /// and P-CSCF compartment, as `sigkit flow` and the SigComp performance thesis run a flow.
    PerFlow,
    /// Every N messages regardless of flow boundaries (Open SigComp's speed
    /// test switches every 10), so bytecode upload and state creation are
    /// part of the measured cost.
    Every(u64),
    /// One pair for the whole run: steady-state compression only.
    Never,
}

impl CompartmentPolicy {
    /// Parses `flow`, `never` or a positive message count.
    pub fn parse(s: &str) -> Result<CompartmentPolicy, CompartmentPolicyError> {
        match s {
            "flow" => Ok(CompartmentPolicy::PerFlow),
            "never" => Ok(CompartmentPolicy::Never),
            _ => match s.parse::<u64>() {
                Ok(0) | Err(_) => Err(CompartmentPolicyError(s.to_string())),
                Ok(n) => Ok(CompartmentPolicy::Every(n)),
            },
        }
    }
}

/// A `--compartment-every` value that is neither `flow`, `never` nor a
/// positive message count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--compartment-every {0:?} is not a positive number of messages, `flow` or `never`")]
pub struct CompartmentPolicyError(pub String);

/// How long a speed run lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Exactly this many round trips in total, split evenly over workers.
    Messages(u64),
    /// Each worker runs for this long.
    Duration(Duration),
}

/// How [`run_speed`] runs.
#[derive(Debug, Clone, Copy)]
pub struct SpeedOptions {
    /// Both endpoints' parameters (DMS, SMS, CPB).
    pub params: Params,
    /// The compressor's algorithm, mechanism, transport and dictionary, the same
    /// at both ends.
    pub config: Config,
    /// Worker threads, each with its own UE and P-CSCF endpoints (at least 1).
    pub threads: usize,
    /// When a worker starts a fresh compartment pair.
    pub compartments: CompartmentPolicy,
    /// How long the run lasts.
    pub limit: Limit,
    /// Keep every sample per sequence position, for per-message medians.
    pub per_message: bool,
}

/// Percentiles of one kind of operation, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// Median, microseconds.
    pub p50_us: f64,
    /// 99th percentile, microseconds.
    pub p99_us: f64,
    /// Mean, microseconds.
    pub mean_us: f64,
    /// Largest, microseconds.
    pub max_us: f64,
}

/// Median times of one position of the sequence (with `per_message`).
#[derive(Debug, Clone, PartialEq)]
pub struct MessageTiming {
    /// The flow the message belongs to.
    pub flow: String,
    /// The message's number in its flow.
    pub index: u32,
    /// The message's name as its flow gives it.
    pub name: String,
    /// "ue->pcscf" or "pcscf->ue".
    pub direction: &'static str,
    /// Its size as SIP, bytes.
    pub uncompressed: usize,
    /// Times this position was run.
    pub samples: usize,
    /// Median time to compress it (framing included over TCP), microseconds.
    pub compress_us_p50: f64,
    /// Median time to unframe, decompress and accept it, microseconds.
    pub decompress_us_p50: f64,
    /// Longest time to compress it, microseconds.
    pub compress_us_max: f64,
    /// Longest time to unframe, decompress and accept it, microseconds.
    pub decompress_us_max: f64,
}

/// What [`run_speed`] measured.
#[derive(Debug, Clone)]
pub struct SpeedReport {
    /// Worker threads run.
    pub threads: usize,
    /// Round trips run in total.
    pub messages: u64,
    /// Round trips each worker ran, by worker.
    pub worker_messages: Vec<u64>,
    /// Compartment pairs started (each uploads bytecode and creates state).
    pub compartment_pairs: u64,
    /// Compartments still held by the workers' decompressors at the end:
    /// closed ones are gone, so at most two per worker.
    pub compartments_held_at_end: usize,
    /// SIP bytes of every message run.
    pub uncompressed_bytes: u64,
    /// SigComp bytes sent for them (record marking included over TCP).
    pub sigcomp_bytes: u64,
    /// SigComp bytes sent / SIP bytes, over the whole run.
    pub ratio: f64,
    /// Sum over workers of messages / (the worker's time less the time spent
    /// creating its two endpoints at the start): the aggregate rate.
    pub round_trips_per_s: f64,
    /// The same rate divided by the number of workers.
    pub round_trips_per_s_per_thread: f64,
    /// Messages / wall-clock time of the whole run (thread start and
    /// endpoint creation included).
    pub round_trips_per_s_wall: f64,
    /// Messages / on-CPU time of the workers (endpoint creation included;
    /// time spent waiting for a core while other processes ran is not
    /// counted): round trips per CPU-second, Open SigComp's measure (Open SigComp
    /// §2.1.1 gives CPU seconds). None without /proc.
    pub round_trips_per_cpu_s: Option<f64>,
    /// Wall-clock time of the whole run, seconds.
    pub wall_s: f64,
    /// Time the workers spent creating their endpoints at the start
    /// (summed), not counted in `round_trips_per_s`.
    pub setup_s: f64,
    /// Compression times of every message: the sender's compress and, over TCP,
    /// its framing (RFC 3320 §4.2.2).
    pub compress: Latency,
    /// Decompression times of every message: the receiver's unframing, UDVM run
    /// and state acceptance.
    pub decompress: Latency,
    /// Per sequence position, with [`SpeedOptions::per_message`]; empty
    /// otherwise.
    pub per_message: Vec<MessageTiming>,
}

/// Why a bench run stopped.
#[derive(Debug)]
pub enum BenchError {
    /// The run could not start or a worker failed outside SigComp: no messages,
    /// no threads, an endpoint that could not be built, a histogram that could
    /// not be merged.
    Setup(String),
    /// The sender could not compress a message.
    Compress {
        /// The message: `flow/NN-sender-name`, or `compartment N: NN-sender-name`.
        message: String,
        /// Why compression failed.
        error: sigcomp_compress::CompressError,
    },
    /// The receiver's UDVM failed on a message (RFC 3320 §8.7).
    Decompress {
        /// The message, named as for `Compress`.
        message: String,
        /// The decompression failure the receiver reported.
        failure: sigcomp::Failure,
    },
    /// A message decompressed to other bytes than were sent, or a NACK or
    /// stream frame came where a message was expected.
    Mismatch {
        /// The message, named as for `Compress`.
        message: String,
    },
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BenchError::Setup(why) => write!(f, "bench setup failed: {why}"),
            BenchError::Compress { message, error } => write!(f, "{message}: compression failed: {error}"),
            BenchError::Decompress { message, failure } => {
                write!(f, "{message}: the receiver could not decompress it: {failure}")
            }
            BenchError::Mismatch { message } => write!(f, "{message}: decompressed bytes differ from the original"),
        }
    }
}

impl std::error::Error for BenchError {}

fn label(m: &BenchMessage) -> String {
    format!("{}/{:02}-{}-{}", m.flow, m.message.index, m.message.sender.name(), m.message.name)
}

/// Nanosecond histogram from 1 ns to 10 s at 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("static bounds are valid")
}

fn latency(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency { p50_us: 0.0, p99_us: 0.0, mean_us: 0.0, max_us: 0.0 };
    }
    Latency {
        p50_us: h.value_at_quantile(0.5) as f64 / 1e3,
        p99_us: h.value_at_quantile(0.99) as f64 / 1e3,
        mean_us: h.mean() / 1e3,
        max_us: h.max() as f64 / 1e3,
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
}

/// A UE and a P-CSCF, both offering `params`.
fn endpoint_pair(params: Params, config: Config) -> Result<(Endpoint, Endpoint), BenchError> {
    let mk =
        || Endpoint::new(EndpointConfig::new(params, params, config)).map_err(|e| BenchError::Setup(e.to_string()));
    Ok((mk()?, mk()?))
}

/// What one worker measured.
struct WorkerResult {
    messages: u64,
    pairs: u64,
    uncompressed: u64,
    sigcomp: u64,
    busy: Duration,
    setup: Duration,
    /// On-CPU time of the worker thread, setup included (Linux only).
    cpu: Option<Duration>,
    compress: Histogram<u64>,
    decompress: Histogram<u64>,
    /// Per sequence position: (compress ns, decompress ns) samples.
    samples: Vec<Vec<(u64, u64)>>,
    /// Compartments the two endpoints' decompressors still hold at the end.
    held: usize,
}

/// One worker: its own endpoints, its own compartments.
///
/// The two endpoints live for the whole run, as a UE and a P-CSCF process
/// do; a fresh compartment pair is the next compartment identifier at both
/// ends, the old compartments being closed (RFC 3320 §4.1: the application
/// ends a compartment). Closing, the new compartment's compressor, its
/// bytecode upload and its state creation are all measured; only the
/// endpoints' creation at the start is not (`setup`).
fn worker(seq: &[BenchMessage], opts: &SpeedOptions, quota: Option<u64>) -> Result<WorkerResult, BenchError> {
    let stream = opts.config.transport == Transport::Stream;
    let mut r = WorkerResult {
        messages: 0,
        pairs: 0,
        uncompressed: 0,
        sigcomp: 0,
        busy: Duration::ZERO,
        setup: Duration::ZERO,
        cpu: None,
        compress: histogram(),
        decompress: histogram(),
        samples: if opts.per_message { vec![Vec::new(); seq.len()] } else { Vec::new() },
        held: 0,
    };
    let cpu_start = thread_cpu_time();
    let start = Instant::now();
    let deadline = match opts.limit {
        Limit::Duration(d) => Some(start + d),
        Limit::Messages(_) => None,
    };
    let t = Instant::now();
    let (mut ue, mut pcscf) = endpoint_pair(opts.params, opts.config)?;
    r.pairs = 1;
    r.setup += t.elapsed();
    let mut deframers = [Deframer::new(1 << 20), Deframer::new(1 << 20)];
    let mut frames = Vec::new();
    let mut framed = Vec::new();
    let mut in_pair = 0u64;
    let mut pos = 0usize;
    let mut compartment = PEER;
    loop {
        if quota.is_some_and(|q| r.messages >= q) {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let m = &seq[pos];
        // The first message of a flow pass (the sequence wraps, or the next
        // flow begins).
        let flow_starts = pos == 0 || seq[pos - 1].flow_index != m.flow_index;
        let fresh = in_pair > 0
            && match opts.compartments {
                CompartmentPolicy::PerFlow => flow_starts,
                CompartmentPolicy::Every(n) => in_pair == n,
                CompartmentPolicy::Never => false,
            };
        if fresh {
            ue.close_compartment(compartment);
            pcscf.close_compartment(compartment);
            compartment = CompartmentId(compartment.0 + 1);
            // A new compartment over TCP is a new connection.
            deframers = [Deframer::new(1 << 20), Deframer::new(1 << 20)];
            r.pairs += 1;
            in_pair = 0;
        }
        let (tx, rx, rx_idx) = match m.message.sender {
            Side::Ue => (&mut ue, &mut pcscf, 1),
            Side::Pcscf => (&mut pcscf, &mut ue, 0),
        };
        let bytes = &m.message.bytes;
        let t0 = Instant::now();
        let c =
            tx.compress(t0, compartment, bytes).map_err(|error| BenchError::Compress { message: label(m), error })?;
        // Over TCP the sender frames (RFC 3320 §4.2.2) and the receiver
        // unframes: both are part of the cost.
        let wire: &[u8] = if stream {
            framed.clear();
            frame_for_stream(&c.message, &mut framed);
            &framed
        } else {
            &c.message
        };
        let t1 = Instant::now();
        let got = if stream {
            frames.clear();
            deframers[rx_idx].push(wire, &mut frames);
            match frames.pop() {
                Some(Frame::Message(b)) => rx.receive(&b, opts.config.transport),
                _ => return Err(BenchError::Mismatch { message: label(m) }),
            }
        } else {
            rx.receive(wire, opts.config.transport)
        }
        .map_err(|e| BenchError::Decompress { message: label(m), failure: e.failure })?;
        let accepted = match got {
            Received::Message(incoming) => rx.accept(t1, incoming, compartment),
            Received::Nack(_) => return Err(BenchError::Mismatch { message: label(m) }),
        };
        let t2 = Instant::now();
        if accepted.message != *bytes {
            return Err(BenchError::Mismatch { message: label(m) });
        }
        let (cns, dns) = (ns(t1 - t0), ns(t2 - t1));
        r.compress.saturating_record(cns);
        r.decompress.saturating_record(dns);
        if opts.per_message {
            r.samples[pos].push((cns, dns));
        }
        r.uncompressed += bytes.len() as u64;
        r.sigcomp += wire.len() as u64;
        r.messages += 1;
        in_pair += 1;
        pos = (pos + 1) % seq.len();
    }
    r.busy = start.elapsed().saturating_sub(r.setup);
    r.held =
        ue.decompressor().states().compartment_ids().count() + pcscf.decompressor().states().compartment_ids().count();
    r.cpu = cpu_start.zip(thread_cpu_time()).map(|(a, b)| b.saturating_sub(a));
    Ok(r)
}

/// On-CPU time of the calling thread so far, from the scheduler's
/// statistics (`/proc/thread-self/schedstat`, first field, ns): unlike the
/// wall clock it does not count time the thread waited for a core while
/// other processes ran. None where that file does not exist.
pub fn thread_cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// Runs the speed bench: `opts.threads` workers, each repeating `seq` on
/// its own endpoints (disjoint compartments), every message checked to
/// decompress to its original bytes.
pub fn run_speed(seq: &[BenchMessage], opts: &SpeedOptions) -> Result<SpeedReport, BenchError> {
    if seq.is_empty() {
        return Err(BenchError::Setup("no messages to run".into()));
    }
    if opts.threads == 0 {
        return Err(BenchError::Setup("at least one thread is needed".into()));
    }
    let threads = opts.threads;
    let quotas: Vec<Option<u64>> = (0..threads as u64)
        .map(|w| match opts.limit {
            Limit::Messages(n) => Some(n / threads as u64 + u64::from(w < n % threads as u64)),
            Limit::Duration(_) => None,
        })
        .collect();
    let start = Instant::now();
    let results: Vec<Result<WorkerResult, BenchError>> = std::thread::scope(|s| {
        let handles: Vec<_> = quotas.iter().map(|q| s.spawn(move || worker(seq, opts, *q))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(BenchError::Setup("a worker thread panicked".into()))))
            .collect()
    });
    let wall = start.elapsed();
    let mut workers = Vec::with_capacity(threads);
    for r in results {
        workers.push(r?);
    }
    let mut compress = histogram();
    let mut decompress = histogram();
    let mut rate = 0.0;
    let (mut messages, mut pairs, mut unc, mut sig) = (0u64, 0u64, 0u64, 0u64);
    let mut setup = Duration::ZERO;
    let mut cpu = Some(Duration::ZERO);
    for w in &workers {
        cpu = cpu.zip(w.cpu).map(|(a, b)| a + b);
        compress.add(&w.compress).map_err(|e| BenchError::Setup(format!("histogram: {e}")))?;
        decompress.add(&w.decompress).map_err(|e| BenchError::Setup(format!("histogram: {e}")))?;
        if w.messages > 0 {
            rate += w.messages as f64 / w.busy.as_secs_f64().max(1e-9);
        }
        messages += w.messages;
        pairs += w.pairs;
        unc += w.uncompressed;
        sig += w.sigcomp;
        setup += w.setup;
    }
    let mut per_message = Vec::new();
    if opts.per_message {
        for (pos, m) in seq.iter().enumerate() {
            let mut c: Vec<u64> = workers.iter().flat_map(|w| w.samples[pos].iter().map(|s| s.0)).collect();
            let mut d: Vec<u64> = workers.iter().flat_map(|w| w.samples[pos].iter().map(|s| s.1)).collect();
            if c.is_empty() {
                continue;
            }
            per_message.push(MessageTiming {
                flow: m.flow.clone(),
                index: m.message.index,
                name: m.message.name.clone(),
                direction: m.message.sender.direction(),
                uncompressed: m.message.bytes.len(),
                samples: c.len(),
                compress_us_max: c.iter().copied().max().unwrap_or(0) as f64 / 1e3,
                decompress_us_max: d.iter().copied().max().unwrap_or(0) as f64 / 1e3,
                compress_us_p50: median(&mut c) as f64 / 1e3,
                decompress_us_p50: median(&mut d) as f64 / 1e3,
            });
        }
    }
    Ok(SpeedReport {
        threads,
        messages,
        worker_messages: workers.iter().map(|w| w.messages).collect(),
        compartment_pairs: pairs,
        compartments_held_at_end: workers.iter().map(|w| w.held).sum(),
        uncompressed_bytes: unc,
        sigcomp_bytes: sig,
        ratio: sig as f64 / unc.max(1) as f64,
        round_trips_per_s: rate,
        round_trips_per_s_per_thread: rate / threads as f64,
        round_trips_per_s_wall: messages as f64 / wall.as_secs_f64().max(1e-9),
        round_trips_per_cpu_s: cpu.filter(|c| !c.is_zero()).map(|c| messages as f64 / c.as_secs_f64()),
        wall_s: wall.as_secs_f64(),
        setup_s: setup.as_secs_f64(),
        compress: latency(&compress),
        decompress: latency(&decompress),
        per_message,
    })
}

/// Resident memory of this process (VmRSS in /proc/self/status), bytes;
/// None where /proc is not available.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// Makes a message specific to compartment `n`: the first characters of
/// its Call-ID value (RFC 3261 §8.1.1.4; compact form `i`) are replaced,
/// length kept, by `n` in base 36, so every terminal's call is a different
/// call and no two compartments' states are byte-identical by accident.
/// A message without a Call-ID is returned unchanged.
pub fn personalize(bytes: &[u8], n: u64) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let head_end = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(out.len());
    let mut line_start = 0;
    while line_start < head_end {
        let line_end =
            out[line_start..head_end].windows(2).position(|w| w == b"\r\n").map_or(head_end, |p| line_start + p);
        let line = &out[line_start..line_end];
        if let Some(colon) = line.iter().position(|&b| b == b':') {
            let name = std::str::from_utf8(&line[..colon]).unwrap_or("").trim();
            if name.eq_ignore_ascii_case("call-id") || name.eq_ignore_ascii_case("i") {
                let mut v = line_start + colon + 1;
                while v < line_end && (out[v] == b' ' || out[v] == b'\t') {
                    v += 1;
                }
                // Up to 8 alphanumeric characters are rewritten, right to left.
                let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
                let run = out[v..line_end].iter().take(8).take_while(|b| b.is_ascii_alphanumeric()).count();
                let mut k = n;
                for i in (v..v + run).rev() {
                    out[i] = digits[(k % 36) as usize];
                    k /= 36;
                }
                return out;
            }
        }
        line_start = line_end + 2;
    }
    out
}

/// How [`run_memory`] runs.
#[derive(Debug, Clone, Copy)]
pub struct MemoryOptions {
    /// Both endpoints' parameters (DMS, SMS, CPB; RFC 3320 §3.3).
    pub params: Params,
    /// The compressor's algorithm, mechanism, transport and dictionary.
    pub config: Config,
    /// Compartments the server carries a call in: one terminal each.
    pub compartments: u64,
    /// Make each compartment's call distinct ([`personalize`]); false runs
    /// byte-identical calls, whose states the handler stores once.
    pub distinct_calls: bool,
    /// Compartments the server keeps hot (unpacked states, compressor
    /// scratch): [`Endpoint::set_scratch_compartments`].
    pub hot: usize,
}

/// What [`run_memory`] measured at the server endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryReport {
    /// Compartments carried.
    pub compartments: u64,
    /// Messages of the flow each compartment carried.
    pub messages_per_compartment: usize,
    /// VmRSS once the corpus is loaded and the server endpoint exists.
    pub rss_before: Option<u64>,
    /// VmRSS with every compartment held.
    pub rss_after: Option<u64>,
    /// (after − before) / compartments.
    pub rss_per_compartment: Option<f64>,
    /// The server decompressor's state memory per compartment (the RFC 3320
    /// §6.2 accounting: each state's length + 64), averaged.
    pub state_bytes_per_compartment: f64,
    /// State items the server's handler stores (each once, shared by the
    /// compartments holding it).
    pub distinct_state_items: usize,
    /// Compartment entries in the server's state store that point to the stored
    /// items.
    pub state_entries: usize,
    /// Bytes of state values the handler stores, locally available
    /// dictionaries included: what the sharing actually costs.
    pub stored_state_bytes: usize,
    /// Bytes the server's decompressor holds its state values in: idle
    /// compartments' items packed, each stored item counted once.
    pub resident_state_bytes: usize,
    /// The server compressors' model of each peer's state memory, averaged.
    pub model_state_bytes_per_compartment: f64,
    /// Bytes the models' values take in memory (packed when idle), averaged.
    pub model_resident_bytes_per_compartment: f64,
    /// Wall-clock time of the whole run, seconds.
    pub elapsed_s: f64,
}

/// One server (P-CSCF) endpoint carries `flow` with a new terminal (UE
/// endpoint) in each of `opts.compartments` compartments, then reports its
/// memory. The terminals are dropped after their call; the server keeps
/// every compartment's decompressor state and compressor, as a P-CSCF
/// serving that many terminals does.
pub fn run_memory(flow: &[FlowMessage], opts: &MemoryOptions) -> Result<MemoryReport, BenchError> {
    if flow.is_empty() {
        return Err(BenchError::Setup("no messages to run".into()));
    }
    let start = Instant::now();
    // Every compartment is kept: the figure is what they cost, not what a
    // cap would leave.
    let server_config = EndpointConfig {
        limits: sigcomp::Limits::unlimited(),
        ..EndpointConfig::new(opts.params, opts.params, opts.config)
    };
    let mut server = Endpoint::new(server_config).map_err(|e| BenchError::Setup(e.to_string()))?;
    server.set_scratch_compartments(opts.hot);
    let rss_before = resident_bytes();
    for n in 0..opts.compartments {
        let compartment = CompartmentId(n);
        let mut ue = Endpoint::new(EndpointConfig::new(opts.params, opts.params, opts.config))
            .map_err(|e| BenchError::Setup(e.to_string()))?;
        for m in flow {
            let personal;
            let bytes: &[u8] = if opts.distinct_calls {
                personal = personalize(&m.bytes, n);
                &personal
            } else {
                &m.bytes
            };
            let what = || format!("compartment {n}: {:02}-{}-{}", m.index, m.sender.name(), m.name);
            let now = Instant::now();
            let transport = opts.config.transport;
            let (rx, rx_compartment, sent) = match m.sender {
                Side::Ue => {
                    let c = ue
                        .compress(now, PEER, bytes)
                        .map_err(|error| BenchError::Compress { message: what(), error })?;
                    (&mut server, compartment, c.message)
                }
                Side::Pcscf => {
                    let c = server
                        .compress(now, compartment, bytes)
                        .map_err(|error| BenchError::Compress { message: what(), error })?;
                    (&mut ue, PEER, c.message)
                }
            };
            let got = rx
                .receive(&sent, transport)
                .map_err(|e| BenchError::Decompress { message: what(), failure: e.failure })?;
            match got {
                Received::Message(incoming) if incoming.message() == bytes => {
                    rx.accept(now, incoming, rx_compartment);
                }
                _ => return Err(BenchError::Mismatch { message: what() }),
            }
        }
    }
    let rss_after = resident_bytes();
    let states = server.decompressor().states();
    let mut used = 0u64;
    let mut entries = 0usize;
    let mut model = 0u64;
    let mut model_resident = 0u64;
    for n in 0..opts.compartments {
        if let Some(c) = states.compartment(CompartmentId(n)) {
            used += u64::from(c.used);
            entries += c.entries.len();
        }
        if let Some(c) = server.compressor(CompartmentId(n)) {
            model += u64::from(c.peer_state_memory());
            model_resident += c.peer_state_bytes_resident() as u64;
        }
    }
    let count = opts.compartments.max(1) as f64;
    Ok(MemoryReport {
        compartments: opts.compartments,
        messages_per_compartment: flow.len(),
        rss_before,
        rss_after,
        rss_per_compartment: rss_before.zip(rss_after).map(|(b, a)| a.saturating_sub(b) as f64 / count),
        state_bytes_per_compartment: used as f64 / count,
        distinct_state_items: states.item_count(),
        state_entries: entries,
        stored_state_bytes: states.stored_bytes(),
        resident_state_bytes: states.resident_bytes(),
        model_state_bytes_per_compartment: model as f64 / count,
        model_resident_bytes_per_compartment: model_resident as f64 / count,
        elapsed_s: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn personalize_keeps_length_and_changes_only_the_call_id() {
        let msg = b"INVITE sip:b@x SIP/2.0\r\nCall-ID: abcdefghij@host\r\nContent-Length: 0\r\n\r\n";
        let a = personalize(msg, 0);
        let b = personalize(msg, 1);
        let c = personalize(msg, 36 * 36);
        assert_eq!(a.len(), msg.len());
        assert_ne!(a, b);
        assert_ne!(b, c);
        assert!(a.starts_with(b"INVITE sip:b@x SIP/2.0\r\nCall-ID: 00000000ij@host\r\n"));
        assert!(c.starts_with(b"INVITE sip:b@x SIP/2.0\r\nCall-ID: 00000100ij@host\r\n"));
        // The compact form (RFC 3261 §20.8) is found too.
        let compact = b"BYE sip:b@x SIP/2.0\r\ni: xy@h\r\n\r\n";
        assert_eq!(personalize(compact, 35), b"BYE sip:b@x SIP/2.0\r\ni: 0z@h\r\n\r\n");
        let none = b"BYE sip:b@x SIP/2.0\r\nVia: x\r\n\r\n";
        assert_eq!(personalize(none, 5), none.to_vec());
    }

    #[test]
    fn compartment_policy_parsing() {
        assert_eq!(CompartmentPolicy::parse("10"), Ok(CompartmentPolicy::Every(10)));
        assert_eq!(CompartmentPolicy::parse("flow"), Ok(CompartmentPolicy::PerFlow));
        assert_eq!(CompartmentPolicy::parse("never"), Ok(CompartmentPolicy::Never));
        assert_eq!(CompartmentPolicy::parse("0"), Err(CompartmentPolicyError("0".into())));
        assert!(CompartmentPolicy::parse("-3").is_err());
        assert!(CompartmentPolicy::parse("ten").is_err());
    }

    #[test]
    fn resident_memory_and_cpu_time_are_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(resident_bytes().is_some_and(|b| b > 0));
            let a = thread_cpu_time().expect("schedstat");
            // Burn some CPU so the scheduler's counter must move.
            let mut x = 0u64;
            for i in 0..20_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            assert!(thread_cpu_time().expect("schedstat") > a, "{x}");
        }
    }
}
