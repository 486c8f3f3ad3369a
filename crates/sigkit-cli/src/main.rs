//! `sigkit`: command-line tools for SigComp (RFC 3320).

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use sigcomp::wire::{Deframer, Frame};
use sigcomp::{CompartmentId, Decompressor, Failure, Limits, Params, Transport};

mod alloc_tuning;
mod analyze_cmd;
mod asm_cmd;
mod bench_cmd;
mod capacity_cmd;
mod endpoint_args;
mod eval_cmd;
mod exit;
mod flow_cmd;
mod hexin;
mod jsonl;
mod line_reader;
mod load_cmd;
mod proxy_cmd;
mod proxy_ctl;
mod ran_cmd;
mod report_cmd;
mod results_cmd;
mod rohc_cmd;
mod rohc_throughput_cmd;
mod sim_cmd;

/// Exit code of a message that failed to decompress.
const EXIT_FAILED: u8 = exit::Failure::Run.code();
/// Exit code of bad arguments.
const EXIT_USAGE: u8 = exit::Failure::Usage.code();
/// Exit code of an input that cannot be read or is not what it should be
/// (bad hex).
const EXIT_INPUT: u8 = exit::Failure::Input.code();

/// Longest message a stream may carry (after unescaping); anything longer
/// is a framing error rather than unbounded buffering. A single message
/// (`sigkit decompress FILE`) is bounded by it too: it is far above any
/// decompression memory an endpoint offers (131072 bytes at most), which
/// a message must fit (RFC 3320 §7).
pub const MAX_STREAM_MESSAGE: usize = 1 << 20;

#[derive(Parser)]
#[command(name = "sigkit", version, about = "SigComp (RFC 3320) tools for SIP signalling")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decompress SigComp messages with one receiving endpoint.
    ///
    /// With FILE: decompress one message (or, with --stream, every message
    /// of a TCP stream) and write the decompressed bytes to stdout. On a
    /// decompression failure the RFC 4077 reason goes to stderr and the exit
    /// code is 1.
    ///
    /// With --jsonl: read JSON requests from stdin, one per line, and answer
    /// each with one JSON line on stdout (see docs/decompress.md). A request is
    /// {"message_hex": HEX, "compartment": NAME|null, "stream": BOOL},
    /// {"close": NAME} or {"metrics": true}; a line over 2 MiB + 64 KiB is
    /// answered with an error and skipped.
    Decompress(DecompressArgs),
    /// Run a SIP call flow between two in-process SigComp endpoints.
    ///
    /// Each message of FLOW_DIR is compressed by its sender (UE or P-CSCF)
    /// and decompressed by the receiver's own UDVM, feedback going back;
    /// prints the per-message table of the SigComp performance thesis Appendix H (see docs/flow.md).
    Flow(flow_cmd::FlowArgs),
    /// Assemble RFC 4464 UDVM assembly into SigComp bytecode.
    ///
    /// Writes the bytecode from the first instruction on (binary, or hex
    /// with --hex); with --message a complete SigComp message that uploads
    /// it. Assembly errors go to stderr as FILE:LINE:COLUMN: message, exit
    /// code 1 (see docs/asm.md).
    Asm(asm_cmd::AsmArgs),
    /// Disassemble UDVM bytecode (or the bytecode a SigComp message
    /// uploads, with --message) into RFC 4464 assembly that `sigkit asm`
    /// turns back into the same bytes.
    Disasm(asm_cmd::DisasmArgs),
    /// Measure speed (round trips/s, µs per message, ratio), memory per
    /// compartment (--compartments N) and multi-core scaling (--threads N)
    /// of compress + decompress between two in-process endpoints.
    Bench(bench_cmd::BenchArgs),
    /// Run the SigComp edge proxy (the P-CSCF compression function):
    /// SigComp toward terminals, plain SIP toward the SIP server behind it;
    /// `sigkit proxy ctl` asks a running one what it holds.
    Proxy(proxy_cmd::ProxyArgs),
    /// The main job, on embedded defaults: every corpus flow under each
    /// mechanism, the RAN-delay study, a load run through `sigkit proxy`
    /// and a capacity search, into results.sqlite, summary.json and an
    /// HTML report (see README.md).
    Eval(eval_cmd::EvalArgs),
    /// The SIP load generator: SIPp's flags and XML scenarios, built-in calls,
    /// REGISTER and corpus flows, over UDP or TCP, with or without SigComp:
    /// sigkit load -sn uac -r 100 -m 1000 HOST:PORT (see docs/load.md).
    Load(Box<load_cmd::LoadArgs>),
    /// Find the highest call rate a SIP system serves within a service
    /// level (default: at most 10 % failed calls, p95 set-up delay of at
    /// most 250 ms), by stepped `sigkit load` runs, repeated.
    Capacity(capacity_cmd::CapacityArgs),
    /// List the runs and tables of a results file (sigkit eval, sigkit load
    /// --db), or write one table as CSV.
    Results(results_cmd::ResultsArgs),
    /// The RAN-delay study (the SigComp performance thesis §2.1, §9.10):
    /// a call's one-way delay on a 9.6 to 256 kbit/s signalling link,
    /// uncompressed and with SigComp, by equation 2.1 and (--measure) over
    /// an emulated link, beside the thesis's values.
    Ran(ran_cmd::RanArgs),
    /// Write a self-contained HTML report (plots and tables, PNGs beside
    /// it) from report-input JSON files, --flows CORPUS and --ran.
    Report(report_cmd::ReportArgs),
    /// Simulate SIP overload (the SIP overload thesis's model): a scenario
    /// over N seeds in parallel, each seed's collapse verdict and the count.
    Sim(sim_cmd::SimArgs),
    /// TCP/IP header compression (TAROC, draft-ietf-rohc-tcp-taroc-04) of a
    /// capture's TCP/IP packets (IPv4, IPv6) over an emulated link with loss, bit
    /// errors and reordering, beside VJ, IPHC, none and IDEAL (see docs/rohc.md).
    Rohc(rohc_cmd::RohcArgs),
    /// TCP throughput over a lossy narrowband link with each header
    /// compression scheme (the TAROC draft's Appendix A), beside the
    /// draft's figures.
    RohcThroughput(rohc_throughput_cmd::RohcThroughputArgs),
    /// What SigComp and TAROC would do to the SIP flows of a capture:
    /// bytes per mechanism and RAN delay at 9.6 to 256 kbit/s; each call's
    /// call flow (--ladder, --call), sngrep-style.
    Analyze(analyze_cmd::AnalyzeArgs),
}

#[derive(Args)]
struct DecompressArgs {
    /// SigComp message file, or - for standard input.
    #[arg(required_unless_present = "jsonl", conflicts_with = "jsonl")]
    file: Option<PathBuf>,
    /// FILE is a TCP stream with record marking (RFC 3320 §4.2.2) that may
    /// hold many messages; it is read in chunks, and each message's output
    /// is written as soon as the message is complete.
    #[arg(long)]
    stream: bool,
    /// FILE is hex text (whitespace, commas and 0x prefixes ignored).
    #[arg(long)]
    hex: bool,
    /// Read JSON-lines requests from stdin and answer on stdout: messages
    /// ({"message_hex": ..., "compartment": ...}), compartment closes
    /// ({"close": NAME}) and the endpoint's metrics ({"metrics": true}).
    #[arg(long, conflicts_with_all = ["stream", "hex"])]
    jsonl: bool,
    /// Compartments the endpoint keeps open at once (at least 1); past it
    /// the least recently used compartment is closed, its state released
    /// (--jsonl answers list it under "evicted").
    #[arg(long, default_value_t = Limits::default().max_compartments as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_compartments: u64,
    /// Bytes of state memory of all compartments together, as RFC 3320
    /// §6.2 accounts it (each item's length + 64); past it the least
    /// recently used compartments are closed.
    #[arg(long, default_value_t = Limits::default().max_state_bytes as u64)]
    max_state_bytes: u64,
    /// decompression_memory_size in bytes (2048, 4096, ..., 131072).
    #[arg(long, default_value_t = 8192)]
    dms: u32,
    /// state_memory_size per compartment in bytes (0, 2048, ..., 131072).
    #[arg(long, default_value_t = 8192)]
    sms: u32,
    /// cycles_per_bit (16, 32, 64 or 128).
    #[arg(long, default_value_t = 16)]
    cpb: u16,
}

fn main() -> ExitCode {
    alloc_tuning::keep_heap_top();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = if args.iter().any(|a| a == "load") {
        Cli::parse_from(load_cmd::sipp_style(args.iter().map(|a| a.to_string_lossy().into_owned()).collect()))
    } else {
        Cli::parse_from(args)
    };
    match cli.command {
        Command::Decompress(args) => decompress(args),
        Command::Flow(args) => flow_cmd::flow(args),
        Command::Asm(args) => asm_cmd::asm(args),
        Command::Disasm(args) => asm_cmd::disasm(args),
        Command::Bench(args) => bench_cmd::bench(args),
        Command::Proxy(args) => proxy_cmd::proxy(args),
        Command::Eval(args) => eval_cmd::eval(args),
        Command::Load(args) => load_cmd::load(*args),
        Command::Capacity(args) => capacity_cmd::capacity(args),
        Command::Results(args) => results_cmd::results(args),
        Command::Ran(args) => ran_cmd::ran(args),
        Command::Report(args) => report_cmd::report(args),
        Command::Sim(args) => sim_cmd::sim(args),
        Command::Rohc(args) => rohc_cmd::rohc(args),
        Command::RohcThroughput(args) => rohc_throughput_cmd::rohc_throughput(args),
        Command::Analyze(args) => analyze_cmd::analyze(args),
    }
}

fn decompress(args: DecompressArgs) -> ExitCode {
    let params = Params { dms: args.dms, sms: args.sms, cpb: args.cpb, ..Params::default() };
    if let Err(e) = params.validate() {
        eprintln!("sigkit: invalid endpoint parameters: {e}");
        return ExitCode::from(EXIT_USAGE);
    }
    let mut decompressor = match Decompressor::new(params) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("sigkit: invalid endpoint parameters: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // On a 32-bit target a bound past usize::MAX is no bound.
    let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    decompressor.set_limits(Limits {
        max_compartments: as_usize(args.max_compartments),
        max_state_bytes: as_usize(args.max_state_bytes),
    });
    if args.jsonl {
        let stdin = io::stdin();
        let stdout = io::stdout();
        return match jsonl::run(decompressor, stdin.lock(), stdout.lock()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            // Reading stdin or writing stdout failed: the session did.
            Err(e) => {
                eprintln!("sigkit: {e}");
                ExitCode::from(EXIT_FAILED)
            }
        };
    }
    let Some(file) = args.file else {
        eprintln!("sigkit: a FILE (or -) is needed without --jsonl");
        return ExitCode::from(EXIT_USAGE);
    };
    let result = if args.stream {
        let input: Box<dyn Read> = if file.as_os_str() == "-" {
            Box::new(io::stdin().lock())
        } else {
            match std::fs::File::open(&file) {
                Ok(f) => Box::new(f),
                Err(e) => {
                    eprintln!("sigkit: {}: {e}", file.display());
                    return ExitCode::from(EXIT_INPUT);
                }
            }
        };
        decompress_stream(decompressor, input, args.hex, &file)
    } else {
        match read_input(&file, args.hex) {
            Ok(Some(input)) => decompress_one(decompressor, &input),
            Ok(None) => {
                eprintln!(
                    "sigkit: decompression failed: the message is over {MAX_STREAM_MESSAGE} bytes, more than \
                     any decompression memory (RFC 3320 §7); the rest of the input was not read"
                );
                return ExitCode::from(EXIT_FAILED);
            }
            Err(e) => {
                eprintln!("sigkit: {}: {e}", file.display());
                return ExitCode::from(EXIT_INPUT);
            }
        }
    };
    match result {
        Ok(code) => code,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sigkit: writing output: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// The message in `file` (`-` is stdin), hex-decoded with `hex`, or None
/// for a message over [`MAX_STREAM_MESSAGE`] bytes: no decompression
/// memory holds one, so the input is read in chunks and no further than
/// that.
fn read_input(file: &PathBuf, hex: bool) -> Result<Option<Vec<u8>>, String> {
    let mut input: Box<dyn Read> = if file.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(file).map_err(|e| e.to_string())?)
    };
    let mut hex_decoder = hex.then(hexin::HexDecoder::default);
    let mut chunk = vec![0u8; STREAM_CHUNK];
    let mut message = Vec::new();
    loop {
        let n = match input.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        };
        match &mut hex_decoder {
            None => message.extend_from_slice(&chunk[..n]),
            Some(decoder) if n == 0 => decoder.finish(&mut message).map_err(|e| format!("bad hex: {e}"))?,
            Some(decoder) => decoder.push(&chunk[..n], &mut message).map_err(|e| format!("bad hex: {e}"))?,
        }
        if message.len() > MAX_STREAM_MESSAGE {
            return Ok(None);
        }
        if n == 0 {
            return Ok(Some(message));
        }
    }
}

/// One line describing a failure: reason name, where, and the details.
fn describe(f: &Failure) -> String {
    let details = if f.details.is_empty() { "none".to_string() } else { hexin::encode(&f.details) };
    format!("{} (pc {}, opcode {}, {} cycles), details: {}", f.reason.name(), f.pc, f.opcode, f.cycles, details)
}

fn decompress_one(mut d: Decompressor, msg: &[u8]) -> io::Result<ExitCode> {
    match d.decompress(msg, Transport::Message) {
        Ok(out) => {
            let mut stdout = io::stdout().lock();
            stdout.write_all(&out.output)?;
            stdout.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(f) => {
            eprintln!("sigkit: decompression failed: {}", describe(&f));
            Ok(ExitCode::from(EXIT_FAILED))
        }
    }
}

/// Bytes read from a stream at a time.
const STREAM_CHUNK: usize = 64 * 1024;

/// Every message of a record-marked stream, in order, each decompressed
/// and written as soon as the framing completes it: the input is read in
/// chunks, so memory stays bounded by the largest message
/// ([`MAX_STREAM_MESSAGE`]) whatever the stream's length. The stream is one
/// compartment: state a message creates is committed, so later messages of
/// the same stream can use it. A message that fails is reported and
/// skipped; a framing error ends the stream. With `hex` the stream is hex
/// text, decoded as it is read.
fn decompress_stream(mut d: Decompressor, mut input: impl Read, hex: bool, file: &Path) -> io::Result<ExitCode> {
    let mut deframer = Deframer::new(MAX_STREAM_MESSAGE);
    let mut hex_decoder = hex.then(hexin::HexDecoder::default);
    let mut chunk = vec![0u8; STREAM_CHUNK];
    let mut decoded = Vec::new();
    let mut frames = Vec::new();
    let mut stdout = io::stdout().lock();
    let mut messages = 0usize;
    let mut failed = false;
    loop {
        let n = match input.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                stdout.flush()?;
                eprintln!("sigkit: {}: {e}", file.display());
                return Ok(ExitCode::from(EXIT_INPUT));
            }
        };
        // Bad hex ends the stream after the messages the text before it
        // completes.
        let mut bad_hex = None;
        let bytes = match &mut hex_decoder {
            None => &chunk[..n],
            Some(decoder) => {
                decoded.clear();
                let result =
                    if n == 0 { decoder.finish(&mut decoded) } else { decoder.push(&chunk[..n], &mut decoded) };
                bad_hex = result.err();
                &decoded[..]
            }
        };
        deframer.push(bytes, &mut frames);
        for frame in frames.drain(..) {
            match frame {
                Frame::Message(msg) => {
                    messages += 1;
                    match d.decompress(&msg, Transport::Stream) {
                        Ok(out) => {
                            stdout.write_all(&out.output)?;
                            d.accept(out.pending, CompartmentId(0));
                        }
                        Err(f) => {
                            stdout.flush()?;
                            eprintln!("sigkit: message {messages} of the stream failed: {}", describe(&f));
                            failed = true;
                        }
                    }
                }
                Frame::FramingError => {
                    stdout.flush()?;
                    eprintln!(
                        "sigkit: FRAMING_ERROR in the stream after {messages} message(s): an unquoted \
                         0xFF 0x80..0xFE, or a message over {MAX_STREAM_MESSAGE} bytes; the rest \
                         of the stream is ignored"
                    );
                    return Ok(ExitCode::from(EXIT_FAILED));
                }
            }
        }
        stdout.flush()?;
        if let Some(e) = bad_hex {
            eprintln!("sigkit: {}: bad hex: {e}", file.display());
            return Ok(ExitCode::from(EXIT_INPUT));
        }
        if n == 0 {
            break;
        }
    }
    if deframer.incomplete() > 0 {
        eprintln!(
            "sigkit: the stream ends inside a message: {} byte(s) after the last 0xFF 0xFF \
             delimiter",
            deframer.incomplete()
        );
        failed = true;
    }
    Ok(if failed { ExitCode::from(EXIT_FAILED) } else { ExitCode::SUCCESS })
}
