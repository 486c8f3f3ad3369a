//! `sigkit analyze CAPTURE`: for every SIP flow of a pcap or pcapng
//! capture, what SigComp (each mechanism and algorithm) and, over TCP,
//! TAROC header compression would have sent, in bytes and as one-way RAN
//! delay (the SigComp performance thesis's equation 2.1); SigComp already
//! in the capture is decoded. Traffic that is not SIP is counted apart;
//! --call and --method keep some calls or methods, and --ladder draws each
//! call's flow as sngrep does. See docs/analyze.md.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use sigcomp_compress::Mechanism;
use sigkit_analyze::{
    analyze as run_analysis, ladder, Analysis, Filter, FlowReport, Options, TarocMode, Variant, MAX_FLOWS, MAX_MESSAGES,
};
use sigkit_eval::flow::parse_algorithm;

use crate::exit::{finish, CliError};

#[derive(Clone, Copy, ValueEnum)]
pub enum TarocModeArg {
    U,
    O,
    R,
}

#[derive(Args)]
pub struct AnalyzeArgs {
    /// A pcap or pcapng capture (Ethernet, Linux cooked, raw IP or BSD
    /// loopback; IPv4 and IPv6; SIP over UDP and TCP, plain or SigComp).
    pub capture: PathBuf,
    /// Print the analysis as JSON (the input `sigkit report` takes).
    #[arg(long)]
    pub json: bool,
    /// Link rates for the RAN delay, kbit/s, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "9.6,19.2,32,64,128,256")]
    pub rates: Vec<f64>,
    /// SigComp mechanisms to try (basic, static, dynamic, shared;
    /// comma-separated or repeated). Default: all.
    #[arg(long, value_delimiter = ',')]
    pub mechanism: Vec<String>,
    /// SigComp algorithms to try (lzss, deflate, lz77). Default: all this
    /// build has.
    #[arg(long = "algo", value_delimiter = ',')]
    pub algorithm: Vec<String>,
    /// The signalling link's round-trip time, ms (equation 2.1 adds half
    /// of it per message; the thesis uses 70).
    #[arg(long, default_value_t = 70.0)]
    pub rtt_ms: f64,
    /// TAROC's mode for TCP flows.
    #[arg(long, value_enum, default_value = "o")]
    pub taroc_mode: TarocModeArg,
    /// TAROC with cross-direction inference (sigkit's extension; needs
    /// --taroc-mode o).
    #[arg(long)]
    pub taroc_infer: bool,
    /// Also print each flow's messages.
    #[arg(long)]
    pub messages: bool,
    /// Keep only the messages of this call (its Call-ID, compared byte for
    /// byte); repeat or comma-separate for several. Prints the call's
    /// ladder as --ladder does. The SigComp what-if then sends the kept
    /// messages only.
    #[arg(long = "call", value_name = "CALL-ID", value_delimiter = ',')]
    pub calls: Vec<String>,
    /// Keep only the messages of this method: requests of it and the
    /// responses to them (by CSeq method), so INVITE keeps INVITE, 100, 180
    /// and 200 but not the ACK; ASCII case ignored. Repeat or
    /// comma-separate for several.
    #[arg(long = "method", value_name = "METHOD", value_delimiter = ',')]
    pub methods: Vec<String>,
    /// Print each call's flow after the tables, sngrep-style: a column per
    /// address, an arrow per message with its method or status, its time
    /// since the call's first message, and its bytes as SIP and as SigComp
    /// (as captured, or as sigcomp dynamic/lzss would have sent it).
    #[arg(long)]
    pub ladder: bool,
    /// SIP flows reported at most, in order of first packet; later flows
    /// are counted ("not analysed"), not taken apart.
    #[arg(long, value_name = "N", default_value_t = MAX_FLOWS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_flows: usize,
    /// SIP messages reported at most over every flow (each takes some
    /// 1.5 KB of report); later messages and flows are counted, not
    /// analysed.
    #[arg(long, value_name = "N", default_value_t = MAX_MESSAGES,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_messages: usize,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    CliError::usage(msg).report("sigkit analyze")
}

fn options(args: &AnalyzeArgs) -> Result<Options, String> {
    let mut o = Options::default();
    if args.rates.is_empty() || args.rates.iter().any(|r| !r.is_finite() || *r <= 0.0) {
        return Err("--rates: positive kbit/s values, comma-separated".into());
    }
    o.rates_kbps = args.rates.clone();
    if !args.rtt_ms.is_finite() || args.rtt_ms < 0.0 || args.rtt_ms > 1e6 {
        return Err("--rtt-ms: a round-trip time in ms, 0 or more".into());
    }
    o.rtt = Duration::from_secs_f64(args.rtt_ms / 1000.0);
    let mechanisms = if args.mechanism.is_empty() {
        Mechanism::ALL.to_vec()
    } else {
        args.mechanism
            .iter()
            .map(|m| {
                Mechanism::parse(m).ok_or_else(|| format!("unknown mechanism {m:?} (basic, static, dynamic, shared)"))
            })
            .collect::<Result<_, _>>()?
    };
    let algorithms = if args.algorithm.is_empty() {
        sigcomp_compress::Algorithm::ALL.to_vec()
    } else {
        args.algorithm.iter().map(|a| parse_algorithm(a)).collect::<Result<_, _>>().map_err(|e| e.to_string())?
    };
    o.variants = algorithms
        .iter()
        .flat_map(|&algorithm| mechanisms.iter().map(move |&mechanism| Variant { mechanism, algorithm }))
        .collect();
    o.taroc_mode = match args.taroc_mode {
        TarocModeArg::U => TarocMode::U,
        TarocModeArg::O => TarocMode::O,
        TarocModeArg::R => TarocMode::R,
    };
    if args.taroc_infer && o.taroc_mode != TarocMode::O {
        return Err("--taroc-infer needs --taroc-mode o".to_string());
    }
    o.taroc_infer = args.taroc_infer;
    o.max_flows = args.max_flows;
    o.max_messages = args.max_messages;
    // Call-IDs hold no spaces or commas (RFC 3261 §25.1's `word`), methods
    // are tokens (§7.1): an empty or spaced value is a typing slip.
    let blank = |v: &String| v.is_empty() || v.contains(char::is_whitespace);
    if args.calls.iter().any(blank) {
        return Err("--call: a Call-ID, without spaces".to_string());
    }
    if args.methods.iter().any(blank) {
        return Err("--method: a SIP method such as INVITE, without spaces".to_string());
    }
    o.filter = Filter { calls: args.calls.clone(), methods: args.methods.clone() };
    Ok(o)
}

pub fn analyze(args: AnalyzeArgs) -> ExitCode {
    let options = match options(&args) {
        Ok(o) => o,
        Err(e) => return usage(e),
    };
    let data = match std::fs::read(&args.capture) {
        Ok(d) => d,
        Err(e) => return CliError::input(format!("{}: {e}", args.capture.display())).report("sigkit analyze"),
    };
    let analysis = match run_analysis(&data, &options) {
        Ok(a) => a,
        Err(e) => return CliError::input(format!("{}: {e}", args.capture.display())).report("sigkit analyze"),
    };
    if let Some(t) = &analysis.capture.truncated {
        // A cut-short capture is read as tshark reads it: a warning, not a
        // failure.
        eprintln!("sigkit analyze: warning: {}: {t}", args.capture.display());
    }
    let printed = if args.json {
        // Written as it is serialised: the text of a large analysis is
        // never held whole.
        let mut out = io::BufWriter::new(io::stdout().lock());
        serde_json::to_writer(&mut out, &analysis)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out))
            .and_then(|()| out.flush())
    } else {
        print_tables(&analysis, args.messages, args.ladder || !args.calls.is_empty())
    };
    finish("sigkit analyze", printed)
}

fn print_tables(a: &Analysis, with_messages: bool, with_ladders: bool) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let c = &a.capture;
    writeln!(
        out,
        "{} capture: {} frames, {} UDP/TCP packets ({} frames skipped), {} SIP flows; other: {} flows, {} bytes",
        c.format,
        c.frames,
        c.udp_tcp_packets,
        c.skipped.total(),
        a.flows.len(),
        a.other_flows,
        a.other_bytes
    )?;
    writeln!(
        out,
        "RAN delay: equation 2.1 (size/rate + RTT/2 per message), RTT {} ms; SigComp endpoints DMS {}, SMS {}, {} cycles/bit",
        a.settings.rtt_ms, a.settings.dms, a.settings.sms, a.settings.cpb
    )?;
    let messages_not_analysed: usize = a.flows.iter().map(|f| f.messages_not_analysed).sum();
    if a.flows_not_analysed > 0 || messages_not_analysed > 0 {
        writeln!(
            out,
            "not analysed: {} flows and {} SIP messages past --max-flows {} or --max-messages {}",
            a.flows_not_analysed, messages_not_analysed, a.settings.max_flows, a.settings.max_messages
        )?;
    }
    let s = &a.settings;
    if !s.calls.is_empty() || !s.methods.is_empty() {
        let mut kept = Vec::new();
        if !s.calls.is_empty() {
            kept.push(format!("call {}", s.calls.join(", ")));
        }
        if !s.methods.is_empty() {
            kept.push(format!("method {}", s.methods.join(", ")));
        }
        writeln!(
            out,
            "filter: {}; left out {} SIP messages, and {} SIP flows with none kept",
            kept.join("; "),
            a.messages_filtered_out,
            a.flows_filtered_out
        )?;
        if a.flows.is_empty() {
            writeln!(out, "no SIP message passed the filter")?;
        }
    }
    for f in &a.flows {
        print_flow(&mut out, f, &a.settings.rates_kbps, &a.settings.taroc_mode, with_messages)?;
    }
    if with_ladders {
        for call in &a.calls {
            writeln!(out)?;
            write!(out, "{}", ladder::text(call))?;
        }
    }
    Ok(())
}

fn print_flow(
    out: &mut impl Write,
    f: &FlowReport,
    rates: &[f64],
    taroc_mode: &str,
    with_messages: bool,
) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "flow {}: {} {} <-> {}: {} packets, {} SIP messages in {} calls, {} bytes of SIP",
        f.id,
        f.protocol.name(),
        f.a,
        f.b,
        f.packets,
        f.messages.len(),
        f.calls,
        f.sip_bytes
    )?;
    let d = &f.sigcomp_in_capture;
    if d.messages > 0 {
        let failures: Vec<String> = d.failures.iter().map(|(r, n)| format!("{n} {r}")).collect();
        writeln!(
            out,
            "  SigComp in the capture: {} messages, {} decoded, {} NACKs, {} failed{}",
            d.messages,
            d.decoded,
            d.nacks,
            d.failed,
            if failures.is_empty() { String::new() } else { format!(" ({})", failures.join(", ")) }
        )?;
    }
    if let Some(t) = &f.taroc {
        writeln!(
            out,
            "  TAROC ({}): {} packets, TCP/IP headers {} -> {} bytes (mean {:.1} -> {:.1}){}",
            match taroc_mode {
                "o-infer" => "O-mode, inference".to_string(),
                m => format!("{}-mode", m.to_uppercase()),
            },
            t.packets,
            t.header_bytes_before,
            t.header_bytes_after,
            t.header_bytes_before as f64 / t.packets.max(1) as f64,
            t.header_bytes_after as f64 / t.packets.max(1) as f64,
            if t.mismatches > 0 { format!(", {} NOT RESTORED", t.mismatches) } else { String::new() }
        )?;
    }
    if with_messages {
        writeln!(
            out,
            "  {:>4} {:>8} {:<5} {:<22} {:>6} {:>8} {:>6} {:>6}",
            "#", "time_s", "dir", "message", "sip", "captured", "tcp/ip", "taroc"
        )?;
        for m in &f.messages {
            let opt = |v: Option<usize>| v.map_or("-".to_string(), |v| v.to_string());
            writeln!(
                out,
                "  {:>4} {:>8.3} {:<5} {:<22} {:>6} {:>8} {:>6} {:>6}",
                m.index,
                m.time_s,
                m.direction,
                format!("{}{}", m.summary, if m.came_as_sigcomp { " (sc)" } else { "" }),
                m.sip_bytes,
                m.captured_bytes,
                opt(m.tcp_ip_header_bytes),
                opt(m.taroc_header_bytes)
            )?;
        }
    }
    write!(out, "  {:<32} {:>8} {:>6}", "variant", "bytes", "ratio")?;
    for r in rates {
        write!(out, " {:>13}", format!("{r} kbit/s"))?;
    }
    writeln!(out)?;
    for v in &f.variants {
        write!(out, "  {:<32} {:>8} {:>6.3}", v.name, v.bytes, v.ratio)?;
        for p in &v.ran {
            if v.name == v.baseline {
                write!(out, " {:>13}", format!("{:.2}s", p.delay_s))?;
            } else {
                write!(out, " {:>13}", format!("{:.2}s {:+.0}%", p.delay_s, -p.improvement_pct))?;
            }
        }
        if v.sent_plain > 0 {
            write!(out, "  ({} sent plain: {})", v.sent_plain, v.failure.as_deref().unwrap_or(""))?;
        }
        writeln!(out)?;
    }
    Ok(())
}
