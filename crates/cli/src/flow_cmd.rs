//! `sigkit flow FLOW_DIR`: runs a SIP call flow between two in-process
//! SigComp endpoints (a UE and a P-CSCF) and prints seed 000 Appendix H's
//! per-message table, optionally writing the SigComp messages as a pcap.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::json;
use sigcomp::{Params, Transport};
use sigcomp_compress::{Config, Mechanism, Priorities};
use sigkit_eval::corpus::load_flow;
use sigkit_eval::flow::{parse_algorithm, run, FlowReport};
use sigkit_eval::pcap::{write_pcap, PcapTransport};

/// Exit code of a flow whose message failed to compress or decompress.
const EXIT_FAILED: u8 = 1;
/// Exit code of bad arguments or a bad flow directory.
const EXIT_USAGE: u8 = 2;

#[derive(Clone, Copy, ValueEnum)]
pub enum TransportArg {
    /// Message-based: each SigComp message is one datagram (RFC 3320 §4.2.1).
    Udp,
    /// Stream-based: record-marked messages on one connection (RFC 3320 §4.2.2).
    Tcp,
}

#[derive(Args)]
pub struct FlowArgs {
    /// Directory of NN-<ue|pcscf>-<name>.sip files, one SIP message each,
    /// sent in file-number order (the corpus format, see corpus/README.md).
    pub dir: PathBuf,
    /// Compression algorithm: lzss, deflate or lz77 (those this build of
    /// sigcomp-compress has; any other name is an error listing them).
    #[arg(long, default_value = "lzss")]
    pub algo: String,
    /// SigComp mechanism: basic, static, dynamic or shared (seed 000 §9.6).
    #[arg(long, default_value = "shared")]
    pub mechanism: String,
    /// decompression_memory_size of both endpoints (2048, 4096, ..., 131072).
    #[arg(long, default_value_t = 8192)]
    pub dms: u32,
    /// state_memory_size per compartment; seed 000 §8 uses the maximum, 131072.
    #[arg(long, default_value_t = 131072)]
    pub sms: u32,
    /// cycles_per_bit (16, 32, 64, 128); seed 000 §8 uses 32.
    #[arg(long, default_value_t = 32)]
    pub cpb: u16,
    /// Transport between the endpoints.
    #[arg(long, value_enum, default_value = "udp")]
    pub transport: TransportArg,
    /// Longest match of the compressor: 18, 66 or 258 bytes.
    #[arg(long, default_value_t = 258)]
    pub lookahead: usize,
    /// Priorities of the RFC 3485 SIP/SDP dictionary in the window, "A-B"
    /// with 1 <= A <= B <= 5, or "none".
    #[arg(long, default_value = "1-3")]
    pub dict_priority: String,
    /// Run only the first N messages of the flow (seed 000's tables cover
    /// session establishment, without the closing BYE).
    #[arg(long, value_name = "N")]
    pub first: Option<usize>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write the SigComp messages as a pcap file (Ethernet, IPv4; UE
    /// 10.0.0.1, P-CSCF 10.0.0.2, port 5060).
    #[arg(long, value_name = "OUT")]
    pub pcap: Option<PathBuf>,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("sigkit: {msg}");
    ExitCode::from(EXIT_USAGE)
}

pub fn flow(args: FlowArgs) -> ExitCode {
    let algorithm = match parse_algorithm(&args.algo) {
        Ok(a) => a,
        Err(e) => return usage(e),
    };
    let Some(mechanism) = Mechanism::parse(&args.mechanism) else {
        return usage(format!(
            "unknown mechanism {:?} (basic, static, dynamic or shared)",
            args.mechanism
        ));
    };
    let dictionary = if args.dict_priority == "none" {
        None
    } else {
        match Priorities::parse(&args.dict_priority) {
            Some(p) => Some(p),
            None => {
                return usage(format!(
                    "--dict-priority {:?} is not A-B with 1 <= A <= B <= 5, nor none",
                    args.dict_priority
                ))
            }
        }
    };
    let params = Params { dms: args.dms, sms: args.sms, cpb: args.cpb, ..Params::default() };
    if let Err(e) = params.validate() {
        return usage(format!("bad endpoint parameters: {}", e.0));
    }
    let (transport, pcap_transport) = match args.transport {
        TransportArg::Udp => (Transport::Message, PcapTransport::Udp),
        TransportArg::Tcp => (Transport::Stream, PcapTransport::Tcp),
    };
    let config = Config {
        algorithm,
        mechanism,
        transport,
        lookahead: args.lookahead,
        dictionary,
        ..Config::default()
    };
    let mut messages = match load_flow(&args.dir) {
        Ok(m) => m,
        Err(e) => return usage(e),
    };
    match args.first {
        Some(0) => return usage("--first must be at least 1"),
        Some(n) => messages.truncate(n),
        None => {}
    }
    let report = match run(&messages, params, config) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sigkit: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    if let Some(path) = &args.pcap {
        let written = std::fs::File::create(path)
            .and_then(|f| write_pcap(io::BufWriter::new(f), &report.wire, pcap_transport));
        if let Err(e) = written {
            return usage(format!("{}: {e}", path.display()));
        }
    }
    let printed = if args.json { print_json(&report) } else { print_table(&report) };
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => usage(format!("writing the report: {e}")),
    }
}

fn print_json(r: &FlowReport) -> io::Result<()> {
    let messages: Vec<_> = r
        .messages
        .iter()
        .map(|m| {
            json!({
                "name": m.name,
                "direction": m.direction,
                "uncompressed": m.uncompressed,
                "payload": m.payload,
                "sigcomp": m.sigcomp,
                "uploaded_bytecode": m.uploaded_bytecode,
                "state_memory": m.state_memory,
                "ratio": m.ratio,
                "compress_us": m.compress_us,
                "decompress_us": m.decompress_us,
                "cycles": m.cycles,
            })
        })
        .collect();
    let payload: usize = r.messages.iter().map(|m| m.payload).sum();
    let doc = json!({
        "messages": messages,
        "total": {
            "uncompressed": r.uncompressed,
            "payload": payload,
            "sigcomp": r.sigcomp,
            "ratio": r.ratio,
        }
    });
    let mut out = io::stdout().lock();
    writeln!(out, "{doc}")
}

fn print_table(r: &FlowReport) -> io::Result<()> {
    let mut out = io::stdout().lock();
    // The columns of seed 000 Appendix H (ratio = SigComp / uncompressed).
    writeln!(
        out,
        "{:<3} {:<24} {:<10} {:>8} {:>8} {:>8} {:>9} {:>6} {:>10} {:>10}",
        "#", "message", "direction", "uncompr", "payload", "sigcomp", "state_mem", "ratio", "comp_us", "decomp_us"
    )?;
    let (mut cus, mut dus, mut payload) = (0.0, 0.0, 0usize);
    for (i, m) in r.messages.iter().enumerate() {
        writeln!(
            out,
            "{:<3} {:<24} {:<10} {:>8} {:>8} {:>8} {:>9} {:>6.3} {:>10.1} {:>10.1}",
            i + 1,
            m.name,
            m.direction,
            m.uncompressed,
            m.payload,
            m.sigcomp,
            m.state_memory,
            m.ratio,
            m.compress_us,
            m.decompress_us
        )?;
        cus += m.compress_us;
        dus += m.decompress_us;
        payload += m.payload;
    }
    writeln!(
        out,
        "{:<3} {:<24} {:<10} {:>8} {:>8} {:>8} {:>9} {:>6.3} {:>10.1} {:>10.1}",
        "", "TOTAL", "", r.uncompressed, payload, r.sigcomp, "", r.ratio, cus, dus
    )
}
