//! `sigkit ran [FLOW_DIR]`: the RAN-delay study of the SigComp performance
//! thesis (§2.1, §9.10): the one-way delay a call's session-establishment
//! messages add on a narrowband signalling link, uncompressed and with
//! SigComp, by the thesis's equation 2.1 and (with --measure) over an
//! emulated link between UDP sockets on 127.0.0.1.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use sigkit_eval::corpus::FlowSource;
use sigkit_eval::ran::{measure, MeasureSettings, MeasuredRow, RanCall, THESIS_RATES_KBPS};
use sigkit_report::{RanMethod, ReportInput};

use crate::endpoint_args::EndpointArgs;
use crate::exit::{finish, CliError};

#[derive(Args)]
pub struct RanArgs {
    /// The call: a flow directory in the corpus format (see
    /// corpus/README.md) [default: the built-in 3gpp-video-call, the
    /// thesis's call].
    #[arg(value_name = "CALL_DIR")]
    pub dir: Option<PathBuf>,
    /// Signalling link bit rates, kbit/s, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = THESIS_RATES_KBPS.to_vec())]
    pub rates: Vec<f64>,
    /// The first N messages of the flow are the session establishment
    /// (the thesis's Table 3: 12 messages, without the closing BYE).
    #[arg(long, value_name = "N", default_value_t = 12)]
    pub first: usize,
    /// Round-trip time of the signalling link, ms; equation 2.1 adds RTT/2
    /// per message (the thesis: 70 ms, after RFC 3322).
    #[arg(long, value_name = "MS", default_value_t = 70.0)]
    pub rtt: f64,
    /// Also measure each rate over the emulated link (real UDP sockets on
    /// 127.0.0.1 and a relay applying the link model): about 13 s of
    /// real time at 9.6 kbps, less with --time-scale.
    #[arg(long)]
    pub measure: bool,
    /// Run the emulated link this many times faster than real time and
    /// scale the measured delays back (timer granularity then weighs more).
    #[arg(long, value_name = "FACTOR", default_value_t = 1.0)]
    pub time_scale: f64,
    /// Loss probability of each link direction for --measure; a lost
    /// message is sent again after twice its expected crossing time.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub loss: f64,
    /// Seed of the loss draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the study as a report input (JSON) for `sigkit report`
    /// instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The compressor and endpoints. The transport is the thesis's reliable
    /// one (§9.10), so --transport is refused (exit 2).
    #[command(flatten)]
    pub endpoint: EndpointArgs,
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    CliError::usage(msg).report("sigkit ran")
}

/// The call `dir`, or the thesis's call of the built-in corpus.
pub fn call_source(dir: Option<&std::path::Path>) -> FlowSource {
    dir.map_or_else(|| FlowSource::Embedded("3gpp-video-call".into()), |d| FlowSource::Dir(d.to_path_buf()))
}

/// The call of `args`, compressed: a bad option, a call directory that
/// cannot be read, or a message that fails to compress is the error.
pub fn compressed_call(source: &FlowSource, first: usize, endpoint: &EndpointArgs) -> Result<RanCall, CliError> {
    let (config, params) = endpoint.resolve()?;
    let mut messages = source.load().map_err(CliError::input)?;
    if first == 0 {
        return Err("--first must be at least 1".into());
    }
    messages.truncate(first);
    RanCall::compress(&messages, params, config).map_err(|e| CliError::run(format!("{source}: {e}")))
}

/// Measures `call` at `rates` on a runtime of its own.
pub fn measure_rates(call: &RanCall, rates: &[f64], settings: &MeasureSettings) -> Result<Vec<MeasuredRow>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(measure(call, rates, settings)).map_err(|e| format!("measuring over the emulated link: {e}"))
}

pub fn ran(args: RanArgs) -> ExitCode {
    if args.rates.is_empty() || args.rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return usage("--rates must be positive bit rates in kbit/s");
    }
    if !(args.rtt.is_finite() && args.rtt >= 0.0) {
        return usage("--rtt must be a duration in ms");
    }
    if !(args.time_scale.is_finite() && args.time_scale > 0.0 && (0.0..1.0).contains(&args.loss)) {
        return usage("--time-scale must be positive and --loss in [0, 1)");
    }
    if let Some(transport) = args.endpoint.transport {
        return usage(format!(
            "--transport {} is not an option of the RAN study: the SigComp performance thesis compresses \
             the call over a reliable transport (§9.10), and so does sigkit ran",
            transport.name()
        ));
    }
    let call = match compressed_call(&call_source(args.dir.as_deref()), args.first, &args.endpoint) {
        Ok(c) => c,
        Err(e) => return e.report("sigkit ran"),
    };
    let rtt = Duration::from_secs_f64(args.rtt / 1000.0);
    let measured = if args.measure {
        let settings = MeasureSettings { rtt, time_scale: args.time_scale, loss: args.loss, seed: args.seed };
        match measure_rates(&call, &args.rates, &settings) {
            Ok(m) => m,
            Err(e) => return CliError::run(e).report("sigkit ran"),
        }
    } else {
        Vec::new()
    };
    let mut input = sigkit_report::sources::ran(&call, &args.rates, rtt, &measured);
    let command: Vec<String> = std::env::args().collect();
    input.runs.push(sigkit_report::sources::run_meta(&command.join(" ")));
    let printed = if args.json {
        serde_json::to_string_pretty(&input)
            .map_err(io::Error::other)
            .and_then(|s| writeln!(io::stdout().lock(), "{s}"))
    } else {
        print_table(&input, &measured)
    };
    finish("sigkit ran", printed)
}

fn print_table(input: &ReportInput, measured: &[MeasuredRow]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let rows: Vec<_> = input.ran.iter().filter(|r| r.method == RanMethod::Calculated).collect();
    if let Some(r) = rows.first() {
        writeln!(
            out,
            "{} messages: {} bytes of SIP, {} bytes of SigComp; equation 2.1 with RTT {} ms",
            r.messages, r.sip_bytes, r.sigcomp_bytes, r.rtt_ms
        )?;
    }
    // The thesis's value for `chart` at `kbps`: an exact one before one
    // read off a figure (at 9.6 kbps Figure 2 has both, Table 3 by
    // equation 2.1 and the 9.7 s its text reads off).
    let seed = |chart, kbps: f64| {
        let at_rate = |p: &&sigkit_report::SeedPoint| p.chart == chart && (p.x - kbps).abs() < 1e-9;
        let exact = input.seed_points.iter().filter(at_rate).find(|p| !p.approximate);
        exact.or_else(|| input.seed_points.iter().find(at_rate)).map_or(String::new(), |p| {
            let d = if chart == sigkit_report::SeedChart::RanReduction { 0 } else { 2 };
            format!("{}{:.d$}", if p.approximate { "~" } else { "" }, p.y)
        })
    };
    writeln!(
        out,
        "{:>7} {:>8} {:>10} {:>8} {:>8} | {:>11} {:>11} {:>11}{}",
        "kbit/s",
        "SIP s",
        "SigComp s",
        "saved s",
        "saved %",
        "thesis SIP",
        "thesis sav.",
        "thesis %",
        if measured.is_empty() { "" } else { " | measured SIP s  SigComp s  saved %" }
    )?;
    for r in rows {
        let mut line = format!(
            "{:>7} {:>8.3} {:>10.3} {:>8.3} {:>8.1} | {:>11} {:>11} {:>11}",
            r.kbps,
            r.sip_delay_s,
            r.sigcomp_delay_s,
            r.improvement_s,
            r.improvement_pct,
            seed(sigkit_report::SeedChart::RanDelay, r.kbps),
            seed(sigkit_report::SeedChart::RanSaved, r.kbps),
            seed(sigkit_report::SeedChart::RanReduction, r.kbps),
        );
        if let Some(m) = measured.iter().find(|m| m.kbps == r.kbps) {
            line += &format!(" | {:>14.3} {:>10.3} {:>8.1}", m.sip_delay_s, m.sigcomp_delay_s, m.improvement_pct);
        }
        // Rates the thesis gives no value for end in blank columns.
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(
        out,
        "thesis SIP: its Table 3 by equation 2.1 (its Figure 2; the text reads 9.7 s at 9.6 kbps off the figure); \
         thesis saved: Figure 53 as its text gives it (§9.10), % from its conclusions (§11); ~ = approximate"
    )
}
