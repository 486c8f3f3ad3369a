//! `sigkit bench`: speed, memory and multi-core scaling of the SigComp
//! stack, measured with round trips between in-process endpoints
//! (see `sigkit_eval::bench`).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::json;
use sigcomp::Params;
use sigcomp_compress::Config;
use sigkit_eval::bench::{
    run_memory, run_speed, sequence, CompartmentPolicy, Latency, Limit, MemoryOptions, MemoryReport, SpeedOptions,
    SpeedReport,
};
use sigkit_eval::corpus::{self, FlowSource};

use crate::endpoint_args::EndpointArgs;
use crate::exit::CliError;

/// Round trips a run makes when neither --messages nor --duration is given:
/// Open SigComp's speed test ran 100,000 messages (the Open SigComp characterisation §2.1.1).
const DEFAULT_MESSAGES: u64 = 100_000;

/// The flow every compartment of the memory bench carries: the SigComp performance thesis's 3GPP
/// video call (Appendix C).
const MEMORY_FLOW: &str = "3gpp-video-call";

#[derive(Args)]
pub struct BenchArgs {
    /// One flow directory to repeat (NN-<ue|pcscf>-<name>.sip files).
    #[arg(long, value_name = "DIR", conflicts_with = "corpus")]
    pub flow: Option<PathBuf>,
    /// Corpus directory: every flow directory in it, in name order
    /// [default: the corpus built into sigkit].
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
    /// Only the first N messages of the sequence (e.g. --first 2 of
    /// open-sigcomp-startup alternates its REGISTER and 200 OK).
    #[arg(long, value_name = "N")]
    pub first: Option<usize>,
    #[command(flatten)]
    pub endpoint: EndpointArgs,
    /// Workers (std threads), each on its own compartments; the report is
    /// the aggregate.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Start a fresh compartment pair every N messages; `flow` (default):
    /// at the start of every flow pass; `never`: one pair for the run.
    #[arg(long, value_name = "N|flow|never", default_value = "flow")]
    pub compartment_every: String,
    /// Stop after this many round trips in total [default: 100000].
    #[arg(long, value_name = "N", conflicts_with = "duration")]
    pub messages: Option<u64>,
    /// Stop after this many seconds (each worker).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Also report each message's median compress and decompress times.
    #[arg(long)]
    pub per_message: bool,
    /// Memory bench: one server endpoint carries the flow (default: the
    /// corpus's 3gpp-video-call) in N compartments; reports resident memory.
    #[arg(long, value_name = "N", conflicts_with_all = ["threads", "messages", "duration", "per_message", "first"])]
    pub compartments: Option<u64>,
    /// Memory bench: every compartment carries the byte-identical call
    /// (default: each call gets its own Call-ID).
    #[arg(long, requires = "compartments")]
    pub same_calls: bool,
    /// Memory bench: compartments the server keeps hot (states unpacked,
    /// compressor scratch kept); the others are idle and kept packed.
    #[arg(long, value_name = "N", requires = "compartments", default_value_t = sigcomp_compress::DEFAULT_SCRATCH_COMPARTMENTS)]
    pub hot: usize,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    CliError::usage(msg).report("sigkit")
}

/// A flow directory or corpus that cannot be read.
fn bad_input(msg: impl std::fmt::Display) -> ExitCode {
    CliError::input(msg).report("sigkit")
}

pub fn bench(args: BenchArgs) -> ExitCode {
    let (config, params) = match args.endpoint.resolve() {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    let policy = match CompartmentPolicy::parse(&args.compartment_every) {
        Ok(p) => p,
        Err(e) => return usage(e),
    };
    if args.threads == 0 {
        return usage("--threads must be at least 1");
    }
    if args.first == Some(0) {
        return usage("--first must be at least 1");
    }
    if let Some(n) = args.compartments {
        if n == 0 {
            return usage("--compartments must be at least 1");
        }
        return memory(&args, params, config, n);
    }
    let limit = match (args.messages, args.duration) {
        (Some(0), _) => return usage("--messages must be at least 1"),
        (Some(n), _) => Limit::Messages(n),
        (None, Some(s)) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Limit::Duration(Duration::from_secs_f64(s)),
        (None, Some(s)) => return usage(format!("--duration {s} is not a number of seconds in (0, 86400]")),
        (None, None) => Limit::Messages(DEFAULT_MESSAGES),
    };
    let sources = match &args.flow {
        Some(d) => vec![FlowSource::Dir(d.clone())],
        None => match corpus::flows(args.corpus.as_deref()) {
            Ok(d) => d,
            Err(e) => return bad_input(e),
        },
    };
    let mut flows = Vec::new();
    for source in &sources {
        match source.load() {
            Ok(m) => flows.push((source.name(), m)),
            Err(e) => return bad_input(e),
        }
    }
    let mut seq = sequence(flows);
    if let Some(n) = args.first {
        seq.truncate(n);
    }
    let opts = SpeedOptions {
        params,
        config,
        threads: args.threads,
        compartments: policy,
        limit,
        per_message: args.per_message,
    };
    let report = match run_speed(&seq, &opts) {
        Ok(r) => r,
        Err(e) => return CliError::run(e).report("sigkit"),
    };
    let source = match &args.flow {
        Some(d) => d.display().to_string(),
        None => format!("{} flows", sources.len()),
    };
    let printed = if args.json {
        print_speed_json(&report, &args, seq.len())
    } else {
        print_speed(&report, &args, &source, seq.len())
    };
    finish(printed)
}

fn finish(printed: io::Result<()>) -> ExitCode {
    crate::exit::finish("sigkit", printed)
}

fn settings_json(args: &BenchArgs) -> serde_json::Value {
    json!({
        "algo": args.endpoint.algo,
        "mechanism": args.endpoint.mechanism,
        "dms": args.endpoint.dms,
        "sms": args.endpoint.sms,
        "cpb": args.endpoint.cpb,
        "transport": args.endpoint.transport().name(),
        "lookahead": args.endpoint.lookahead,
        "dict_priority": args.endpoint.dict_priority,
        "level": args.endpoint.level.get(),
        "compartment_every": args.compartment_every,
        "verify": args.endpoint.verify,
    })
}

fn latency_json(l: &Latency) -> serde_json::Value {
    json!({"p50": l.p50_us, "p99": l.p99_us, "mean": l.mean_us, "max": l.max_us})
}

fn print_speed_json(r: &SpeedReport, args: &BenchArgs, sequence_len: usize) -> io::Result<()> {
    let per_message: Vec<_> = r
        .per_message
        .iter()
        .map(|m| {
            json!({
                "flow": m.flow, "index": m.index, "name": m.name, "direction": m.direction,
                "uncompressed": m.uncompressed, "samples": m.samples,
                "compress_us_p50": m.compress_us_p50, "decompress_us_p50": m.decompress_us_p50,
                "compress_us_max": m.compress_us_max, "decompress_us_max": m.decompress_us_max,
            })
        })
        .collect();
    let mut doc = json!({
        "mode": "speed",
        "settings": settings_json(args),
        "sequence_messages": sequence_len,
        "threads": r.threads,
        "messages": r.messages,
        "worker_messages": r.worker_messages,
        "compartment_pairs": r.compartment_pairs,
        "compartments_held_at_end": r.compartments_held_at_end,
        "round_trips_per_s": r.round_trips_per_s,
        "round_trips_per_s_per_thread": r.round_trips_per_s_per_thread,
        "round_trips_per_s_wall": r.round_trips_per_s_wall,
        "round_trips_per_cpu_s": r.round_trips_per_cpu_s,
        "compress_us_p50": r.compress.p50_us,
        "compress_us_p99": r.compress.p99_us,
        "decompress_us_p50": r.decompress.p50_us,
        "decompress_us_p99": r.decompress.p99_us,
        "compress_us": latency_json(&r.compress),
        "decompress_us": latency_json(&r.decompress),
        "uncompressed_bytes": r.uncompressed_bytes,
        "sigcomp_bytes": r.sigcomp_bytes,
        "ratio": r.ratio,
        "wall_s": r.wall_s,
        "setup_s": r.setup_s,
    });
    if args.per_message {
        doc["per_message"] = serde_json::Value::Array(per_message);
    }
    writeln!(io::stdout().lock(), "{doc}")
}

fn print_speed(r: &SpeedReport, args: &BenchArgs, source: &str, sequence_len: usize) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "sigkit bench: {source} ({sequence_len} messages in the sequence), {} {}, DMS {} SMS {} CPB {}, {}, new compartments: {}",
        args.endpoint.algo,
        args.endpoint.mechanism,
        args.endpoint.dms,
        args.endpoint.sms,
        args.endpoint.cpb,
        args.endpoint.transport().name().to_uppercase(),
        args.compartment_every
    )?;
    writeln!(
        out,
        "round trips      {} on {} thread(s), {} compartment pairs, {:.2} s wall",
        r.messages, r.threads, r.compartment_pairs, r.wall_s
    )?;
    writeln!(
        out,
        "round trips/s    {:.0} aggregate, {:.0} per thread ({:.0}/s wall clock incl. {:.3} s endpoint setup)",
        r.round_trips_per_s, r.round_trips_per_s_per_thread, r.round_trips_per_s_wall, r.setup_s
    )?;
    if let Some(cpu) = r.round_trips_per_cpu_s {
        writeln!(out, "per CPU-second   {cpu:.0} round trips (on-CPU time of the workers, setup included)")?;
    }
    writeln!(out, "{:<16} {:>9} {:>9} {:>9} {:>9}", "µs per message", "p50", "p99", "mean", "max")?;
    for (name, l) in [("compress", &r.compress), ("decompress", &r.decompress)] {
        writeln!(out, "{name:<16} {:>9.2} {:>9.2} {:>9.2} {:>9.1}", l.p50_us, l.p99_us, l.mean_us, l.max_us)?;
    }
    writeln!(
        out,
        "ratio            {:.3} ({} SigComp bytes / {} SIP bytes)",
        r.ratio, r.sigcomp_bytes, r.uncompressed_bytes
    )?;
    if !r.per_message.is_empty() {
        writeln!(
            out,
            "\n{:<36} {:<26} {:>7} {:>8} {:>10} {:>10} {:>10}",
            "flow", "message", "bytes", "samples", "comp_p50", "decomp_p50", "sum_p50"
        )?;
        for m in &r.per_message {
            writeln!(
                out,
                "{:<36} {:<26} {:>7} {:>8} {:>10.2} {:>10.2} {:>10.2}",
                m.flow,
                format!("{:02}-{}", m.index, m.name),
                m.uncompressed,
                m.samples,
                m.compress_us_p50,
                m.decompress_us_p50,
                m.compress_us_p50 + m.decompress_us_p50
            )?;
        }
    }
    Ok(())
}

fn memory(args: &BenchArgs, params: Params, config: Config, compartments: u64) -> ExitCode {
    let source = match (&args.flow, &args.corpus) {
        (Some(d), _) => FlowSource::Dir(d.clone()),
        (None, Some(c)) => FlowSource::Dir(c.join(MEMORY_FLOW)),
        (None, None) => FlowSource::Embedded(MEMORY_FLOW.into()),
    };
    let flow = match source.load() {
        Ok(m) => m,
        Err(e) => return bad_input(e),
    };
    let opts = MemoryOptions { params, config, compartments, distinct_calls: !args.same_calls, hot: args.hot };
    let report = match run_memory(&flow, &opts) {
        Ok(r) => r,
        Err(e) => return CliError::run(e).report("sigkit"),
    };
    let printed =
        if args.json { print_memory_json(&report, args, &source) } else { print_memory(&report, args, &source) };
    finish(printed)
}

fn print_memory_json(r: &MemoryReport, args: &BenchArgs, flow: &FlowSource) -> io::Result<()> {
    let doc = json!({
        "mode": "memory",
        "settings": settings_json(args),
        "flow": flow.to_string(),
        "distinct_calls": !args.same_calls,
        "compartments": r.compartments,
        "messages_per_compartment": r.messages_per_compartment,
        "rss_before_bytes": r.rss_before,
        "rss_after_bytes": r.rss_after,
        "rss_per_compartment_bytes": r.rss_per_compartment,
        "state_bytes_per_compartment": r.state_bytes_per_compartment,
        "distinct_state_items": r.distinct_state_items,
        "state_entries": r.state_entries,
        "stored_state_bytes": r.stored_state_bytes,
        "resident_state_bytes": r.resident_state_bytes,
        "hot_compartments": args.hot,
        "model_state_bytes_per_compartment": r.model_state_bytes_per_compartment,
        "model_resident_bytes_per_compartment": r.model_resident_bytes_per_compartment,
        "elapsed_s": r.elapsed_s,
    });
    writeln!(io::stdout().lock(), "{doc}")
}

fn mib(b: Option<u64>) -> String {
    b.map_or_else(|| "n/a".to_string(), |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64))
}

fn print_memory(r: &MemoryReport, args: &BenchArgs, flow: &FlowSource) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "sigkit bench (memory): {} compartments, each carried {} ({} messages{}), {} {}, DMS {} SMS {} CPB {}",
        r.compartments,
        flow,
        r.messages_per_compartment,
        if args.same_calls { ", identical calls" } else { ", one Call-ID per call" },
        args.endpoint.algo,
        args.endpoint.mechanism,
        args.endpoint.dms,
        args.endpoint.sms,
        args.endpoint.cpb
    )?;
    writeln!(out, "resident (VmRSS)   before {}, after {}", mib(r.rss_before), mib(r.rss_after))?;
    if let Some(per) = r.rss_per_compartment {
        writeln!(out, "per compartment    {per:.0} bytes resident")?;
    }
    writeln!(
        out,
        "state memory       {:.0} bytes per compartment at the server decompressor (RFC 3320 §6.2: length + 64 each)",
        r.state_bytes_per_compartment
    )?;
    writeln!(
        out,
        "state items        {} stored once ({} bytes of values, {} in memory: all but {} hot compartments packed), {} compartment entries point to them",
        r.distinct_state_items, r.stored_state_bytes, r.resident_state_bytes, args.hot, r.state_entries
    )?;
    writeln!(
        out,
        "compressor models  {:.0} bytes of peer state per compartment ({:.0} in memory)",
        r.model_state_bytes_per_compartment, r.model_resident_bytes_per_compartment
    )?;
    writeln!(out, "elapsed            {:.2} s", r.elapsed_s)
}
