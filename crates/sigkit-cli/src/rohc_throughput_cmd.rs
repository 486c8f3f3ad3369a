//! `sigkit rohc-throughput`: bulk TCP throughput over a lossy narrowband
//! link with each header compression scheme, the study of Appendix A of
//! "TCP-Aware RObust Header Compression (TAROC)",
//! draft-ietf-rohc-tcp-taroc-04, printed beside the draft's figures. The
//! work is `taroc::throughput`; this command parses arguments, runs
//! the grid on every core and prints.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use taroc::replay::scheme_name;
use taroc::throughput::{
    draft_mtu, draft_table, simulate, DamagedFrames, ErrorDirections, LinkCounts, RunReport, Summary, TcpVariant,
    ThroughputConfig, TimerModel, DRAFT_BERS, NS_PER_S,
};
use taroc::{ContextRecovery, Mode, Scheme};

use crate::exit::{finish, CliError};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VariantArg {
    Tahoe,
    Reno,
    Newreno,
    Sack,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    U,
    O,
    R,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DamagedArg {
    /// A link-layer frame check discards damaged frames (RFC 1144 §4).
    Discard,
    /// Residual errors reach the decompressor (as `sigkit rohc --ber`).
    Deliver,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ErrorsArg {
    /// Bit errors in both directions of the wireless link.
    Both,
    /// Bit errors toward the mobile host only (the ACKs cross clean).
    Forward,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TimerArg {
    /// RFC 6298: exact RTT samples, RTO doubled from the minimum.
    Rfc6298,
    /// ns-2.1b8's Agent/TCP: RTTs in clock ticks (--tcp-tick), the
    /// backoff multiplying the unrounded RTO, 6 s before the first sample.
    Ns2,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemeArg {
    None,
    Vj,
    /// RFC 2507 with header requests, without the twice algorithm (the draft's IPHC).
    Iphc,
    /// RFC 2507 with header requests and the twice algorithm.
    IphcTwice,
    Taroc,
    /// TAROC in O-mode with cross-direction inference (sigkit's extension).
    TarocInfer,
    Ideal,
}

#[derive(Args)]
pub struct RohcThroughputArgs {
    /// Wireless link bandwidths in bit/s, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "384000,114000,64000,9600")]
    pub link: Vec<u64>,
    /// Bit error rates, comma-separated (default: the draft's ten, 1e-8 to 3e-4).
    #[arg(long, value_delimiter = ',')]
    pub ber: Vec<f64>,
    /// IP MTU for every point (default: the draft's per BER: 576, 296, 168, 96).
    #[arg(long)]
    pub mtu: Option<u16>,
    /// TCP variant (default: the draft's per link, NewReno for its Sack
    /// tables and for links it has no table for; `sack`: RFC 2018 SACK
    /// blocks on the ACKs and ns-2's Sack1 loss recovery).
    #[arg(long, value_enum)]
    pub variant: Option<VariantArg>,
    /// TAROC's mode (§5.5); O-mode's feedback crosses the reverse link.
    #[arg(long, value_enum, default_value = "o")]
    pub mode: ModeArg,
    /// Schemes, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "none,vj,iphc,taroc,ideal")]
    pub schemes: Vec<SchemeArg>,
    /// What a frame with bit errors becomes.
    #[arg(long, value_enum, default_value = "discard")]
    pub damaged: DamagedArg,
    /// Which directions of the wireless link have bit errors.
    #[arg(long, value_enum, default_value = "forward")]
    pub errors: ErrorsArg,
    /// The sender's initial window in segments (default: RFC 5681's; ns-2's: 1, and 2 from May 2001).
    #[arg(long, value_name = "N")]
    pub initial_window: Option<u32>,
    /// Simulated seconds per run.
    #[arg(long, value_name = "T", default_value_t = 300.0)]
    pub seconds: f64,
    /// Runs (seeds 1..=N) per point; the table shows their mean and spread.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub seeds: u64,
    /// Minimum retransmission timeout in seconds (RFC 6298: 1; ns-2: 0.2).
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub min_rto: f64,
    /// The sender's retransmission timer.
    #[arg(long, value_enum, default_value = "rfc6298")]
    pub timer: TimerArg,
    /// ns-2's TCP clock tick in seconds (tcpTick_; with --timer ns2 only).
    #[arg(long, value_name = "S", default_value_t = 0.1)]
    pub tcp_tick: f64,
    /// Delay the receiver's ACKs up to S seconds, acknowledging every
    /// second segment at once (ns-2's TCPSink/DelAck: 0.1; default: none).
    #[arg(long, value_name = "S")]
    pub delayed_ack: Option<f64>,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    CliError::usage(msg).report("sigkit rohc-throughput")
}

/// One point of the grid: every seed of one (link, BER, scheme).
struct Point {
    cfg: ThroughputConfig,
    runs: Vec<RunReport>,
}

impl Point {
    fn summary(&self, f: impl Fn(&RunReport) -> f64) -> Summary {
        Summary::of(&self.runs.iter().map(f).collect::<Vec<_>>())
    }

    /// A count of both directions of the wireless link, summed over the seeds.
    fn total(&self, f: impl Fn(&LinkCounts) -> u64) -> u64 {
        self.runs.iter().map(|r| f(&r.forward) + f(&r.backward)).sum()
    }

    /// Context recovery over both directions and the seeds.
    fn context_recovery(&self) -> ContextRecovery {
        let mut all = ContextRecovery::default();
        for r in &self.runs {
            all.add(&r.forward.context_recovery);
            all.add(&r.backward.context_recovery);
        }
        all
    }
}

fn variant_for(link_bps: u64, arg: Option<VariantArg>) -> TcpVariant {
    match arg {
        Some(VariantArg::Tahoe) => TcpVariant::Tahoe,
        Some(VariantArg::Reno) => TcpVariant::Reno,
        Some(VariantArg::Newreno) => TcpVariant::NewReno,
        Some(VariantArg::Sack) => TcpVariant::Sack,
        None => draft_table(link_bps).map_or(TcpVariant::NewReno, |t| t.tcp.model_variant()),
    }
}

pub fn rohc_throughput(args: RohcThroughputArgs) -> ExitCode {
    let bers: Vec<f64> = if args.ber.is_empty() { DRAFT_BERS.to_vec() } else { args.ber.clone() };
    if args.link.is_empty() || args.schemes.is_empty() {
        return usage("--link and --schemes need at least one value");
    }
    if args.seeds == 0 || args.seeds > 10_000 {
        return usage("--seeds must be between 1 and 10000");
    }
    if args.initial_window.is_some_and(|w| w == 0 || w > 64) {
        return usage("--initial-window must be between 1 and 64 segments");
    }
    if !(args.min_rto.is_finite() && args.min_rto > 0.0 && args.min_rto <= 60.0) {
        return usage("--min-rto must be in (0, 60] seconds");
    }
    if !(args.tcp_tick.is_finite() && (0.001..=10.0).contains(&args.tcp_tick)) {
        return usage("--tcp-tick must be in [0.001, 10] seconds");
    }
    if args.delayed_ack.is_some_and(|d| !(d.is_finite() && d > 0.0 && d <= 10.0)) {
        return usage("--delayed-ack must be in (0, 10] seconds");
    }
    let timer = match args.timer {
        TimerArg::Rfc6298 => TimerModel::Rfc6298,
        TimerArg::Ns2 => TimerModel::Ns2 { tick_ns: (args.tcp_tick * NS_PER_S as f64).round() as u64 },
    };
    let mode = match args.mode {
        ModeArg::U => Mode::U,
        ModeArg::O => Mode::O,
        ModeArg::R => Mode::R,
    };
    let schemes: Vec<Scheme> = args
        .schemes
        .iter()
        .map(|s| match s {
            SchemeArg::None => Scheme::None,
            SchemeArg::Vj => Scheme::Vj,
            SchemeArg::Iphc => Scheme::Iphc { twice: false },
            SchemeArg::IphcTwice => Scheme::Iphc { twice: true },
            SchemeArg::Taroc => Scheme::Taroc(mode),
            SchemeArg::TarocInfer => Scheme::TarocInfer,
            SchemeArg::Ideal => Scheme::Ideal,
        })
        .collect();
    let damaged = match args.damaged {
        DamagedArg::Discard => DamagedFrames::Discard,
        DamagedArg::Deliver => DamagedFrames::Deliver,
    };
    let mut points = Vec::new();
    for &link in &args.link {
        for &ber in &bers {
            for &scheme in &schemes {
                let cfg = ThroughputConfig {
                    seconds: args.seconds,
                    damaged_frames: damaged,
                    min_rto_ns: (args.min_rto * NS_PER_S as f64) as u64,
                    error_directions: match args.errors {
                        ErrorsArg::Both => ErrorDirections::Both,
                        ErrorsArg::Forward => ErrorDirections::Forward,
                    },
                    initial_window: args.initial_window,
                    timer,
                    delayed_ack_ns: args.delayed_ack.map(|d| (d * NS_PER_S as f64).round().max(1.0) as u64),
                    ..ThroughputConfig::draft(
                        link,
                        ber,
                        args.mtu.unwrap_or_else(|| draft_mtu(ber)),
                        scheme,
                        variant_for(link, args.variant),
                    )
                };
                if let Err(e) = cfg.validate() {
                    return usage(e);
                }
                points.push(Point { cfg, runs: Vec::new() });
            }
        }
    }
    run_all(&mut points, args.seeds, args.threads);
    let printed = if args.json { print_json(&args, &points) } else { print_tables(&args, &bers, &schemes, &points) };
    finish("sigkit rohc-throughput", printed)
}

/// Runs every (point, seed) on a pool of threads, the longest jobs first.
fn run_all(points: &mut [Point], seeds: u64, threads: Option<usize>) {
    let mut jobs: Vec<(usize, u64)> = (0..points.len()).flat_map(|p| (1..=seeds).map(move |s| (p, s))).collect();
    // A rough cost: packets per second on the link times seconds.
    let cost = |p: &Point| p.cfg.link_bps as f64 / p.cfg.mtu as f64;
    jobs.sort_by(|a, b| cost(&points[b.0]).total_cmp(&cost(&points[a.0])));
    let threads = threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, jobs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let cfgs: Vec<ThroughputConfig> = points.iter().map(|p| p.cfg).collect();
    let results = std::sync::Mutex::new(Vec::with_capacity(jobs.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(p, seed)) = jobs.get(i) else { break };
                // Validated above: simulate cannot refuse it.
                if let Ok(r) = simulate(&ThroughputConfig { seed, ..cfgs[p] }) {
                    if let Ok(mut v) = results.lock() {
                        v.push((p, seed, r));
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|(p, s, _)| (*p, *s));
    for (p, _, r) in results {
        points[p].runs.push(r);
    }
}

fn scheme_label(s: Scheme) -> &'static str {
    match s {
        Scheme::Taroc(_) => "TAROC",
        Scheme::TarocInfer => "TAROC+INFER",
        Scheme::Vj => "VJ",
        Scheme::Iphc { twice: false } => "IPHC",
        Scheme::Iphc { twice: true } => "IPHC+TWICE",
        Scheme::None => "NONE",
        Scheme::Ideal => "IDEAL",
    }
}

fn find(points: &[Point], link: u64, ber: f64, scheme: Scheme) -> Option<&Point> {
    points.iter().find(|p| p.cfg.link_bps == link && p.cfg.ber == ber && p.cfg.scheme == scheme)
}

fn draft_value(p: &Point) -> Option<u32> {
    let table = draft_table(p.cfg.link_bps)?;
    let row = table.rows.iter().find(|r| r.ber == p.cfg.ber && r.mtu == p.cfg.mtu)?;
    Some(row.value(p.cfg.scheme))
}

fn print_tables(args: &RohcThroughputArgs, bers: &[f64], schemes: &[Scheme], points: &[Point]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let damaged = match args.damaged {
        DamagedArg::Discard => "damaged frames discarded by the link",
        DamagedArg::Deliver => "damaged frames delivered to the decompressor",
    };
    for &link in &args.link {
        let variant = variant_for(link, args.variant);
        let draft = draft_table(link);
        writeln!(out)?;
        writeln!(
            out,
            "{} b/s wireless link, TCP {}{}{}; {} s x {} seeds; {damaged}; goodput in Byte/s, ours (draft's)",
            link,
            variant.name(),
            draft.map_or(String::new(), |t| format!(" (draft {} {})", t.section, t.tcp.name())),
            match args.timer {
                TimerArg::Rfc6298 => String::new(),
                TimerArg::Ns2 => format!(", ns-2.1b8 timer (tick {} s)", args.tcp_tick),
            },
            args.seconds,
            args.seeds,
        )?;
        let mut head = format!("{:>7} {:>4}", "BER", "MTU");
        for &s in schemes {
            head += &format!(" {:>16}", scheme_label(s));
        }
        head += &format!(" {:>15} {:>7} {:>9} {:>8}", "TAROC/IDEAL", "spread", "ctx dmg", "RTOs");
        head += &format!(" {:>9} {:>9} {:>8}", "episodes", "ctxrec.mx", "beyond W");
        writeln!(out, "{head}")?;
        for &ber in bers {
            let mtu = args.mtu.unwrap_or_else(|| draft_mtu(ber));
            let mut line = format!("{:>7} {:>4}", format!("{ber:e}"), mtu);
            let mut spread: f64 = 0.0;
            let mut ctx = Vec::new();
            let mut rtos = Vec::new();
            for &s in schemes {
                let Some(p) = find(points, link, ber, s) else { continue };
                let g = p.summary(|r| r.goodput);
                spread = spread.max(g.relative_error());
                let d = draft_value(p).map_or("-".to_string(), |v| v.to_string());
                line += &format!(" {:>16}", format!("{:.0} ({d})", g.mean));
                if matches!(s, Scheme::Vj | Scheme::Iphc { .. } | Scheme::Taroc(_)) {
                    ctx.push(format!("{:.0}", p.summary(|r| r.context_damage() as f64).mean));
                }
                rtos.push(format!("{:.0}", p.summary(|r| r.sender.timeouts as f64).mean));
            }
            let ratio = |s: Scheme| find(points, link, ber, s);
            let taroc = schemes.iter().find(|s| matches!(s, Scheme::Taroc(_))).and_then(|&s| ratio(s));
            let ideal = ratio(Scheme::Ideal);
            let r = match (taroc, ideal) {
                (Some(t), Some(i)) => {
                    let ours = t.summary(|r| r.goodput).mean / i.summary(|r| r.goodput).mean.max(f64::MIN_POSITIVE);
                    let theirs = match (draft_value(t), draft_value(i)) {
                        (Some(a), Some(b)) if b > 0 => format!("{:.3}", a as f64 / b as f64),
                        _ => "-".into(),
                    };
                    format!("{ours:.3} ({theirs})")
                }
                _ => "-".into(),
            };
            line += &format!(" {r:>15} {:>6.1}% {:>9} {:>8}", spread * 100.0, ctx.join("/"), rtos.join("/"));
            let (episodes, ctxrec, beyond) = taroc.map_or(("-".into(), "-".into(), "-".into()), |t| {
                let recovery = t.context_recovery();
                (t.total(|c| c.loss_episodes).to_string(), recovery.max.to_string(), recovery.beyond_window.to_string())
            });
            line += &format!(" {episodes:>9} {ctxrec:>9} {beyond:>8}");
            writeln!(out, "{line}")?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "spread: the largest standard error of the mean over the row's schemes, in % of the mean; ctx dmg: packets lost to context damage per run (VJ/IPHC/TAROC); RTOs: timeouts per run, per scheme"
    )?;
    writeln!(
        out,
        "episodes: TAROC's loss episodes over all seeds, both directions (a damaged packet until the next correct decompression); ctxrec.mx: the most packets one lost to context damage (arrived intact, refused); beyond W: episodes that lost more than TAROC's VSW held, in packets, as the loss left the compressor"
    )?;
    writeln!(
        out,
        "draft: \"TCP-Aware RObust Header Compression (TAROC)\", draft-ietf-rohc-tcp-taroc-04, Appendix A.3 (ns-2)"
    )
}

fn summary_json(s: Summary) -> serde_json::Value {
    serde_json::json!({ "n": s.n, "mean": s.mean, "std_dev": s.std_dev, "min": s.min, "max": s.max, "median": s.median })
}

fn print_json(args: &RohcThroughputArgs, points: &[Point]) -> io::Result<()> {
    let rows: Vec<_> = points
        .iter()
        .map(|p| {
            let mean = |f: &dyn Fn(&RunReport) -> f64| p.summary(f).mean;
            let windowed = p.cfg.scheme.keeps_reference_window();
            let episodes = p.total(|c| c.loss_episodes);
            let recovery = p.context_recovery();
            serde_json::json!({
                "link_bps": p.cfg.link_bps,
                "ber": p.cfg.ber,
                "mtu": p.cfg.mtu,
                "variant": p.cfg.variant.name(),
                "scheme": scheme_name(p.cfg.scheme),
                "goodput": summary_json(p.summary(|r| r.goodput)),
                "draft_goodput": draft_value(p),
                "context_damage": mean(&|r| r.context_damage() as f64),
                "timeouts": mean(&|r| r.sender.timeouts as f64),
                "timeout_wait_s": mean(&|r| r.sender.timeout_wait_ns as f64 / NS_PER_S as f64),
                "fast_retransmits": mean(&|r| r.sender.fast_retransmits as f64),
                "retransmissions": mean(&|r| r.sender.retransmissions as f64),
                "segments_sent": mean(&|r| r.sender.segments_sent as f64),
                "queue_drops": mean(&|r| r.forward.queue_drops as f64),
                "damaged_forward": mean(&|r| r.forward.damaged as f64),
                "damaged_backward": mean(&|r| r.backward.damaged as f64),
                "mean_header_forward": mean(&|r| r.forward.mean_header()),
                "mean_header_backward": mean(&|r| r.backward.mean_header()),
                "feedback_frames": mean(&|r| (r.forward.feedback_frames + r.backward.feedback_frames) as f64),
                "undetected": p.total(|c| c.undetected),
                "payload_undetected": p.total(|c| c.payload_undetected),
                "loss_episodes": episodes,
                "context_recovery_mean": recovery.mean(episodes),
                "context_recovery_max": recovery.max,
                "episodes_beyond_window": windowed.then_some(recovery.beyond_window),
                "beyond_window_max": windowed.then_some(recovery.beyond_window_max),
                "context_damage_outside_episodes": p.total(|c| c.context_damage_outside_episodes),
            })
        })
        .collect();
    let out = serde_json::json!({
        "seconds": args.seconds,
        "seeds": args.seeds,
        "mode": format!("{:?}", match args.mode { ModeArg::U => Mode::U, ModeArg::O => Mode::O, ModeArg::R => Mode::R }).to_lowercase(),
        "damaged_frames": match args.damaged { DamagedArg::Discard => "discard", DamagedArg::Deliver => "deliver" },
        "min_rto": args.min_rto,
        "errors": match args.errors { ErrorsArg::Both => "both", ErrorsArg::Forward => "forward" },
        "initial_window": args.initial_window,
        "timer": match args.timer { TimerArg::Rfc6298 => "rfc6298", TimerArg::Ns2 => "ns2" },
        "delayed_ack": args.delayed_ack,
        "tcp_tick": (args.timer == TimerArg::Ns2).then_some(args.tcp_tick),
        "draft": "TCP-Aware RObust Header Compression (TAROC), draft-ietf-rohc-tcp-taroc-04, Appendix A.3",
        "points": rows,
    });
    let s = serde_json::to_string_pretty(&out).map_err(io::Error::other)?;
    writeln!(io::stdout().lock(), "{s}")
}
