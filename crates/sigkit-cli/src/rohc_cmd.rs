//! `sigkit rohc PCAP`: every TCP/IPv4 and TCP/IPv6 packet of a capture through TAROC
//! (draft-ietf-rohc-tcp-taroc-04, "TCP-Aware RObust Header Compression")
//! and its baselines VJ, none and IDEAL, over an emulated link with loss,
//! bit errors and reordering; prints what each scheme sent and what came
//! out. The work is `taroc::capture` and `taroc::replay`.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use taroc::capture::{read_capture, write_pcap, Capture, CaptureFormat};
use taroc::replay::{replay_bounded, LinkConfig, Report, MAX_CONNECTIONS};
use taroc::{Mode, Scheme};

use crate::exit::{finish, Failure};

#[derive(Clone, Copy, ValueEnum)]
pub enum ModeArg {
    U,
    O,
    R,
}

#[derive(Args)]
pub struct RohcArgs {
    /// The capture: pcap or pcapng; Ethernet, Linux cooked (v1, v2), raw IP
    /// or BSD loopback link types.
    pub pcap: PathBuf,
    /// TAROC's mode (§5.5): u unidirectional, o optimistic, r reliable.
    #[arg(long, value_enum, default_value = "o")]
    pub mode: ModeArg,
    /// Probability that the link loses a packet (feedback too).
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub loss: f64,
    /// Bit error rate of the link: each bit is flipped with this probability.
    #[arg(long, value_name = "E", default_value_t = 0.0)]
    pub ber: f64,
    /// Reordering depth: a reordered packet arrives after the next D
    /// packets of its direction (0: none).
    #[arg(long, value_name = "D", default_value_t = 0)]
    pub reorder: usize,
    /// Probability that a packet is reordered, with --reorder.
    #[arg(long, value_name = "P", default_value_t = 0.1)]
    pub reorder_prob: f64,
    /// Seed of the link's faults (the same seed gives the same faults).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Also run TAROC with cross-direction inference (sigkit's O-mode
    /// extension: SEQ from the previous packet, the ACK number and TSecr
    /// from the other direction's packet); needs --mode o.
    #[arg(long)]
    pub infer: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write the packets TAROC's decompressors emitted to this pcap (raw IP).
    #[arg(long = "pcap", value_name = "OUT")]
    pub pcap_out: Option<PathBuf>,
    /// Connections that hold contexts at once; past it the least recently
    /// used is closed and counted ("evicted"), and a later packet of it
    /// starts over with an IR.
    #[arg(long, value_name = "N", default_value_t = MAX_CONNECTIONS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_connections: usize,
    /// One link carries every connection, as a terminal's radio link does:
    /// each direction has one compressor, whose contexts (CIDs, up to 16)
    /// the connections share, so a new connection's IR can replicate an
    /// earlier one's context (IR-CR). A direction is from the end that
    /// opened the packet's connection. Without it, each connection has a
    /// link of its own.
    #[arg(long)]
    pub shared_link: bool,
}

fn fail(kind: Failure, msg: impl std::fmt::Display) -> ExitCode {
    crate::exit::CliError { kind, message: msg.to_string() }.report("sigkit rohc")
}

pub fn rohc(args: RohcArgs) -> ExitCode {
    let prob = |p: f64| p.is_finite() && (0.0..=1.0).contains(&p);
    let ber_ok = args.ber.is_finite() && (0.0..=0.5).contains(&args.ber);
    if !(prob(args.loss) && prob(args.reorder_prob) && ber_ok) {
        return fail(Failure::Usage, "--loss and --reorder-prob must be probabilities in [0, 1], --ber in [0, 0.5]");
    }
    let data = match std::fs::read(&args.pcap) {
        Ok(d) => d,
        Err(e) => return fail(Failure::Input, format!("{}: {e}", args.pcap.display())),
    };
    let mut cap = match read_capture(&data) {
        Ok(c) => c,
        Err(e) => return fail(Failure::Input, format!("{}: {e}", args.pcap.display())),
    };
    if let Some(t) = &cap.truncated {
        // A cut-short capture is read as tshark reads it: a warning, not a
        // failure.
        eprintln!("sigkit rohc: warning: {}: {t}", args.pcap.display());
    }
    let mode = match args.mode {
        ModeArg::U => Mode::U,
        ModeArg::O => Mode::O,
        ModeArg::R => Mode::R,
    };
    if args.infer && mode != Mode::O {
        return fail(Failure::Usage, "--infer needs --mode o (inference recovers from a loss by O-mode's NACK)");
    }
    let link = LinkConfig {
        loss: args.loss,
        ber: args.ber,
        reorder_depth: args.reorder,
        reorder_prob: args.reorder_prob,
        seed: args.seed,
        shared: args.shared_link,
    };
    let packets: Vec<Vec<u8>> = cap.packets.iter_mut().map(|p| std::mem::take(&mut p.ip)).collect();
    let mut reports = Vec::new();
    let inferring = args.infer.then_some(Scheme::TarocInfer);
    for scheme in [
        Some(Scheme::Taroc(mode)),
        inferring,
        Some(Scheme::Vj),
        Some(Scheme::Iphc { twice: false }),
        Some(Scheme::Iphc { twice: true }),
        Some(Scheme::None),
        Some(Scheme::Ideal),
    ]
    .into_iter()
    .flatten()
    {
        let keep = args.pcap_out.is_some() && matches!(scheme, Scheme::Taroc(_));
        let (report, emitted) = replay_bounded(scheme, &packets, &link, keep, args.max_connections);
        if let (true, Some(out)) = (keep, &args.pcap_out) {
            let written = std::fs::File::create(out).map_err(|e| e.to_string()).and_then(|f| {
                let items = emitted.iter().map(|(i, p)| (cap.packets[*i].timestamp, p.as_slice()));
                write_pcap(io::BufWriter::new(f), items)
                    .map_err(|e| e.to_string())
                    .and_then(|mut w| w.flush().map_err(|e| e.to_string()))
            });
            if let Err(e) = written {
                return fail(Failure::Run, format!("{}: {e}", out.display()));
            }
        }
        reports.push((scheme, report));
    }
    let ipv6 = ipv6_count(&packets);
    let printed =
        if args.json { print_json(&args, &cap, ipv6, &reports) } else { print_table(&args, &cap, ipv6, &reports) };
    finish("sigkit rohc", printed)
}

/// The capture's TCP/IPv6 packets (VJ sends them uncompressed: RFC 1144 is IPv4-only).
fn ipv6_count(packets: &[Vec<u8>]) -> usize {
    packets.iter().filter(|p| p.first().is_some_and(|b| b >> 4 == 6)).count()
}

fn print_json(args: &RohcArgs, cap: &Capture, ipv6: usize, reports: &[(Scheme, Report)]) -> io::Result<()> {
    let schemes: Vec<_> = reports
        .iter()
        .map(|(scheme, r)| {
            let windowed = scheme.keeps_reference_window();
            serde_json::json!({
                "scheme": r.scheme,
                "packets": r.sent(),
                "flows": r.flows,
                "connections_evicted": r.connections_evicted,
                "ipv6_packets": r.ipv6_packets,
                "header_bytes_before": r.header_bytes_before,
                "header_bytes_after": r.header_bytes_after,
                "mean_header_before": r.mean_header_before(),
                "mean_header_after": r.mean_header_after(),
                "payload_bytes": r.payload_bytes,
                "compress_errors": r.compress_errors,
                "link_lost": r.link_lost,
                "link_damaged": r.link_damaged,
                "damaged_refused": r.damaged_refused,
                "delivered": r.delivered,
                "context_damage": r.context_damage,
                "undetected": r.undetected,
                "payload_undetected": r.payload_undetected,
                "loss_events": r.loss_events,
                "recovered_events": r.recovered_events,
                "recovery_mean": r.recovery_mean(),
                "recovery_max": r.recovery_max,
                "context_recovery_mean": r.context_recovery_mean(),
                "context_recovery_max": r.context_recovery.max,
                "episodes_beyond_window": windowed.then_some(r.context_recovery.beyond_window),
                "beyond_window_max": windowed.then_some(r.context_recovery.beyond_window_max),
                "context_damage_outside_episodes": r.context_damage_outside_episodes,
                "feedback_packets": r.feedback_packets,
                "feedback_bytes": r.feedback_bytes,
            })
        })
        .collect();
    let out = serde_json::json!({
        "capture": {
            "file": args.pcap.display().to_string(),
            "format": match cap.format { CaptureFormat::Pcap => "pcap", CaptureFormat::PcapNg => "pcapng" },
            "link_types": cap.link_types.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>(),
            "frames": cap.frames,
            "tcp_ipv4_packets": cap.packets.len() - ipv6,
            "tcp_ipv6_packets": ipv6,
            "skipped": {
                "not_tcp_ipv4": cap.skipped.not_tcp_ipv4,
                "truncated": cap.skipped.truncated,
                "unsupported_link": cap.skipped.unsupported_link,
                "unsupported_tcp_ipv4": cap.skipped.unsupported_tcp_ipv4,
            },
            "checksums_fixed": cap.checksums_fixed,
            "truncated": cap.truncated.map(|t| serde_json::json!({
                "records": t.records,
                "offset": t.offset,
                "present": t.present,
                "declared": t.declared,
                "partial_record": "dropped",
                "warning": t.to_string(),
            })),
        },
        "link": {
            "mode": format!("{:?}", match args.mode { ModeArg::U => Mode::U, ModeArg::O => Mode::O, ModeArg::R => Mode::R }).to_lowercase(),
            "loss": args.loss,
            "ber": args.ber,
            "reorder": args.reorder,
            "reorder_prob": args.reorder_prob,
            "seed": args.seed,
            "max_connections": args.max_connections,
            "shared": args.shared_link,
        },
        "schemes": schemes,
    });
    let s = serde_json::to_string_pretty(&out).map_err(io::Error::other)?;
    writeln!(io::stdout().lock(), "{s}")
}

fn print_table(args: &RohcArgs, cap: &Capture, ipv6: usize, reports: &[(Scheme, Report)]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let flows = reports.first().map_or(0, |(_, r)| r.flows);
    writeln!(
        out,
        "{}: {} frames, {} TCP/IP packets in {} connections; {} skipped (not TCP/IP {}, truncated {}, link type {}, unsupported {}); {} checksums repaired (offload)",
        args.pcap.display(),
        cap.frames,
        cap.packets.len(),
        flows,
        cap.skipped.total(),
        cap.skipped.not_tcp_ipv4,
        cap.skipped.truncated,
        cap.skipped.unsupported_link,
        cap.skipped.unsupported_tcp_ipv4,
        cap.checksums_fixed
    )?;
    let evicted = reports.first().map_or(0, |(_, r)| r.connections_evicted);
    if evicted > 0 {
        writeln!(
            out,
            "{evicted} connections were closed to keep at most {} with contexts at once (--max-connections); \
             a later packet of one started over with an IR",
            args.max_connections
        )?;
    }
    if ipv6 > 0 {
        writeln!(
            out,
            "{ipv6} of the packets are TCP/IPv6 (TAROC compresses them; VJ sends them uncompressed: RFC 1144 is IPv4-only)"
        )?;
    }
    writeln!(
        out,
        "link: loss {}, BER {}, reorder depth {} (p {}), seed {}{}",
        args.loss,
        args.ber,
        args.reorder,
        args.reorder_prob,
        args.seed,
        if args.shared_link { "; every connection on this one link (--shared-link)" } else { "" }
    )?;
    let w = reports.iter().map(|(_, r)| r.scheme.len()).max().unwrap_or(0).max(8);
    writeln!(
        out,
        "{:<w$} {:>11} {:>11} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "scheme",
        "hdr before",
        "hdr after",
        "mean B",
        "lost",
        "damaged",
        "delivered",
        "ctx dmg",
        "undet.",
        "payload u.",
        "recov.avg",
        "recov.max",
        "ctxrec.av",
        "ctxrec.mx",
        "beyond W"
    )?;
    for (scheme, r) in reports {
        writeln!(
            out,
            "{:<w$} {:>11} {:>11} {:>8.2} {:>8} {:>9} {:>9} {:>8} {:>8} {:>10} {:>9.2} {:>9} {:>9.2} {:>9} {:>8}",
            r.scheme,
            r.header_bytes_before,
            r.header_bytes_after,
            r.mean_header_after(),
            r.link_lost,
            r.link_damaged,
            r.delivered,
            r.context_damage,
            r.undetected,
            r.payload_undetected,
            r.recovery_mean(),
            r.recovery_max,
            r.context_recovery_mean(),
            r.context_recovery.max,
            if scheme.keeps_reference_window() { r.context_recovery.beyond_window.to_string() } else { "-".into() }
        )?;
    }
    writeln!(
        out,
        "ctx dmg: packets that arrived intact but were refused (context damage); undet.: packets emitted with a wrong header (undetected corruption, must be 0); payload u.: damaged payloads the TCP checksum missed (the link's doing, not the scheme's); recov.: packets sent after a loss until the next correct decompression; ctxrec.: packets that arrived intact but were refused (context damage) per loss episode; beyond W: episodes whose context damage exceeded TAROC's VSW, in packets, as the loss left the compressor"
    )?;
    Ok(())
}
