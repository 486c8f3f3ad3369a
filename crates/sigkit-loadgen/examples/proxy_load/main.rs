//! Load generator for `sigkit proxy`, all on 127.0.0.1.
//!
//! Many SIP terminals, each a UDP socket with its own SigComp endpoint
//! (dynamic mechanism, LZSS; one compartment: the proxy, RFC 5049 §6.1),
//! register through a `sigkit proxy` process and then send OPTIONS
//! requests (about 700 bytes) at a fixed offered rate (open loop). The
//! upstream answers each at once: a responder thread of this program
//! (200 OK built by `sigkit_sip::proxy::build_response`) or Kamailio
//! (a 404 from its location lookup). The rate steps up until 1 % or more
//! of the requests go unanswered; latency is taken at 50 % and 90 % of the
//! highest rate below that. The same terminals in plain SIP, straight to
//! the responder or to Kamailio, are the reference. Last, many idle
//! terminals register (each its own `sigcomp-id`, so its own compartment)
//! and the proxy's resident memory is divided by their number.
//!
//! ```sh
//! cargo build --release -p sigkit-cli
//! cargo run --release -p sigkit-loadgen --example proxy_load -- --sigkit target/release/sigkit
//! ```
//!
//! `--help` lists the options. Besides CPU and RSS, each step reports the
//! proxy's own handling time (p50 / p99 from its
//! `sigkit_proxy_handling_seconds` histogram: the bucket bound the
//! quantile falls under) and how long the proxy's and the generator's
//! threads waited on the run queue for a CPU per time slice
//! (`/proc/PID/task/*/schedstat`), which tells the proxy's latency from the
//! machine's.
//!
//! Exit status: 0 when every run was made, 1 when one could not start (no
//! `sigkit` binary, a proxy or Kamailio that did not come up, `--pin`
//! without `taskset`), 2 for bad arguments.

mod load;
mod memory;
mod probe;
mod processes;
mod replay;
// sigkit-proxy's example support, shared by path.
#[path = "../../../sigkit-proxy/examples/support/responder.rs"]
mod responder;
mod scenarios;
mod step;
mod terminal;
mod usage;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::builder::RangedU64ValueParser;
use clap::{ArgAction, Parser, ValueEnum};

use scenarios::Summary;

/// Throughput, added latency and memory of `sigkit proxy` on 127.0.0.1,
/// printed as one table.
#[derive(Parser, Debug)]
// A later occurrence of an option replaces an earlier one, so a script's
// defaults can be overridden by the arguments appended after them.
#[command(name = "proxy_load", args_override_self = true)]
pub struct Args {
    /// The `sigkit` binary (cargo build --release -p sigkit-cli).
    #[arg(long, default_value = "target/release/sigkit")]
    pub sigkit: PathBuf,
    /// Terminals of the load runs.
    #[arg(long, default_value_t = 1000, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    pub terminals: usize,
    /// Offered requests per second, stepped up until 1 % or more go
    /// unanswered.
    #[arg(long, value_name = "R1,R2,...", value_delimiter = ',', action = ArgAction::Set,
          default_values_t = [2000u64, 4000, 6000, 8000, 10000, 12000, 14000, 17000, 20000, 25000, 30000])]
    pub rates: Vec<u64>,
    /// Length of each step (ms).
    #[arg(long = "step-ms", value_name = "MS", default_value_t = 2000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub step_ms: u64,
    /// Idle registered terminals of the memory run.
    #[arg(long, default_value_t = 100_000)]
    pub idle: usize,
    /// Leave out the runs with Kamailio.
    #[arg(long = "no-kamailio")]
    pub no_kamailio: bool,
    /// Only this run.
    #[arg(long, value_enum)]
    pub only: Option<Run>,
    /// The rate the replay's trace is recorded at (requests per second).
    #[arg(long = "record-rate", value_name = "R", default_value_t = 3000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub record_rate: u64,
    /// The rates the trace is replayed at, stepped up.
    #[arg(long = "replay-rates", value_name = "R1,R2,...", value_delimiter = ',', action = ArgAction::Set,
          default_values_t = [6000u64, 8000, 10000, 12000, 14000, 16000, 18000, 20000, 22000, 24000])]
    pub replay_rates: Vec<u64>,
    /// The proxy's worker threads (0: one per core).
    #[arg(long = "proxy-threads", value_name = "N", default_value_t = 0)]
    pub proxy_threads: usize,
    /// The proxy's shards (0: its default).
    #[arg(long = "proxy-shards", value_name = "N", default_value_t = 0)]
    pub proxy_shards: usize,
    /// The proxy's compression level, `sigcomp.level` (1 fastest to 9;
    /// 0: its default).
    #[arg(long = "proxy-level", value_name = "L", default_value_t = 0,
          value_parser = clap::value_parser!(u8).range(0..=9))]
    pub proxy_level: u8,
    /// The proxy on the last CPU, this program (generator, responder,
    /// probe) on the others (taskset), so that neither waits for the
    /// other's CPU.
    #[arg(long)]
    pub pin: bool,
}

impl Args {
    /// `--step-ms` as a duration: how long each rate step of a load run lasts.
    pub fn step(&self) -> Duration {
        Duration::from_millis(self.step_ms)
    }
}

/// The runs, in the order they are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Run {
    /// The proxy with this program's responder upstream, then the same rate from fewer terminals and plain SIP
    /// straight to the responder.
    Proxy,
    /// The terminals' SigComp datagrams recorded through one proxy, then replayed to a fresh one.
    Replay,
    /// Kamailio upstream (digest REGISTER, OPTIONS answered 404), and plain SIP straight to it.
    Kamailio,
    /// `--idle` terminals registered, each its own compartment; the proxy's RSS growth per terminal.
    Memory,
}

async fn run_all(args: &Args, dir: &std::path::Path, summary: &mut Summary) -> Result<(), String> {
    let wanted = |run: Run| args.only.is_none_or(|o| o == run);
    if wanted(Run::Proxy) {
        scenarios::proxy_scenarios(args, dir, summary).await?;
    }
    if wanted(Run::Replay) {
        replay::replay_scenario(args, dir, summary).await?;
    }
    if wanted(Run::Kamailio) && !args.no_kamailio {
        scenarios::kamailio_scenarios(args, dir, summary).await?;
    }
    if wanted(Run::Memory) {
        memory::memory_scenario(args, dir, summary).await?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !args.sigkit.exists() {
        eprintln!("{}: build it first (cargo build --release -p sigkit-cli)", args.sigkit.display());
        return ExitCode::from(1);
    }
    if args.pin {
        match processes::pin_self() {
            Ok(Some((cpus, proxy_cpu))) => println!("pinned: this program on CPU {cpus}, the proxy on CPU {proxy_cpu}"),
            Ok(None) => {}
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(1);
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("sigkit-proxy-load-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        return ExitCode::from(1);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("starting the tokio runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let local = tokio::task::LocalSet::new();
    let mut summary = Summary { lines: Vec::new() };
    let outcome = local.block_on(&runtime, run_all(&args, &dir, &mut summary));
    println!("\n| figure | value | goal |\n|---|---|---|");
    for l in &summary.lines {
        println!("{l}");
    }
    println!("\n(logs and configurations: {})", dir.display());
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_and_a_later_one_replaces_an_earlier_one() {
        let args = Args::try_parse_from(["proxy_load"]).unwrap();
        assert_eq!(args.rates.len(), 11);
        assert_eq!(
            (args.terminals, args.step(), args.only, args.no_kamailio),
            (1000, Duration::from_secs(2), None, false)
        );
        let args = Args::try_parse_from([
            "proxy_load",
            "--rates",
            "1000,2000",
            "--rates",
            "3000,4000,5000",
            "--only",
            "replay",
            "--replay-rates",
            "7",
            "--no-kamailio",
        ])
        .unwrap();
        assert_eq!(args.rates, [3000, 4000, 5000]);
        assert_eq!(args.replay_rates, [7]);
        assert_eq!((args.only, args.no_kamailio), (Some(Run::Replay), true));
    }

    #[test]
    fn bad_options_are_refused() {
        for bad in
            [&["--terminals", "0"][..], &["--only", "all"], &["--rates", "1,x"], &["--step-ms", "0"], &["--bogus"]]
        {
            let argv = std::iter::once("proxy_load").chain(bad.iter().copied());
            let e = Args::try_parse_from(argv).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
    }
}
