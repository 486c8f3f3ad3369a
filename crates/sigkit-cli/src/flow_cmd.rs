//! `sigkit flow FLOW_DIR`: runs a SIP call flow between two in-process
//! SigComp endpoints (a UE and a P-CSCF) and prints the SigComp performance thesis Appendix H's
//! per-message table, optionally writing the SigComp messages as a pcap.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use sigkit_eval::corpus::load_flow;
use sigkit_eval::flow::{run, FlowReport};
use sigkit_eval::pcap::{write_pcap, PcapTransport};

use crate::endpoint_args::{EndpointArgs, TransportArg};
use crate::exit::{finish, CliError};

#[derive(Args)]
pub struct FlowArgs {
    /// Directory of NN-<ue|pcscf>-<name>.sip files, one SIP message each,
    /// sent in file-number order (the corpus format, see corpus/README.md).
    pub dir: PathBuf,
    #[command(flatten)]
    pub endpoint: EndpointArgs,
    /// Run only the first N messages of the flow (the SigComp performance thesis's tables cover
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
    CliError::usage(msg).report("sigkit")
}

pub fn flow(args: FlowArgs) -> ExitCode {
    let (config, params) = match args.endpoint.resolve() {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    let pcap_transport = match args.endpoint.transport() {
        TransportArg::Udp => PcapTransport::Udp,
        TransportArg::Tcp => PcapTransport::Tcp,
    };
    let mut messages = match load_flow(&args.dir) {
        Ok(m) => m,
        Err(e) => return CliError::input(e).report("sigkit"),
    };
    match args.first {
        Some(0) => return usage("--first must be at least 1"),
        Some(n) => messages.truncate(n),
        None => {}
    }
    let report = match run(&messages, params, config) {
        Ok(r) => r,
        Err(e) => return CliError::run(e).report("sigkit"),
    };
    if let Some(path) = &args.pcap {
        let written =
            std::fs::File::create(path).and_then(|f| write_pcap(io::BufWriter::new(f), &report.wire, pcap_transport));
        if let Err(e) = written {
            return CliError::run(format!("{}: {e}", path.display())).report("sigkit");
        }
    }
    let printed = if args.json { print_json(&report) } else { print_table(&report) };
    finish("sigkit", printed)
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
    // The columns of the SigComp performance thesis Appendix H (ratio = SigComp / uncompressed).
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
