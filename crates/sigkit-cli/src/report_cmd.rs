//! `sigkit report RUN... [-o DIR]`: a self-contained HTML report (plots
//! and tables) from runs' own output (`sigkit load --json`, `sigkit
//! capacity --json`, a results file of `sigkit load --db` or `sigkit
//! eval`), report-input JSON (`sigkit ran --json`), and from the corpus
//! itself with --flows and --ran.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use sigcomp_compress::Mechanism;
use sigkit_eval::ran::{MeasureSettings, THESIS_RATES_KBPS};
use sigkit_eval::study::StudyError;
use sigkit_report::{runs, sources, write_report, ReportInput};

use crate::endpoint_args::EndpointArgs;
use crate::exit::{CliError, Failure};
use crate::ran_cmd::{call_source, compressed_call, measure_rates};

#[derive(Args)]
pub struct ReportArgs {
    /// Runs to report, merged in order: the output of `sigkit load --json`
    /// or `sigkit capacity --json`, a results file (SQLite) of `sigkit
    /// load --db` or `sigkit eval`, or report-input JSON (see
    /// crates/sigkit-report). A file with nothing to plot is an error.
    #[arg(value_name = "RUN")]
    pub inputs: Vec<PathBuf>,
    /// Where index.html and the PNG plots go.
    #[arg(long, short = 'o', default_value = "report")]
    pub out: PathBuf,
    /// Add the compression section: every flow under this corpus
    /// directory, under each mechanism (with --algo).
    #[arg(long, value_name = "CORPUS")]
    pub flows: Option<PathBuf>,
    /// Add the RAN-delay study of this call (by equation 2.1 at the
    /// thesis's bit rates, 9.6 to 256 kbit/s) [default CALL_DIR: the
    /// built-in 3gpp-video-call].
    #[arg(long, value_name = "CALL_DIR", num_args = 0..=1)]
    pub ran: Option<Option<PathBuf>>,
    /// With --ran: also measure it over the emulated link (UDP on
    /// 127.0.0.1), time running --time-scale times faster.
    #[arg(long, requires = "ran")]
    pub measure: bool,
    #[arg(long, value_name = "FACTOR", default_value_t = 1.0, requires = "measure")]
    pub time_scale: f64,
    /// Leave out the published values drawn beside ours.
    #[arg(long)]
    pub no_seeds: bool,
    /// The page's title.
    #[arg(long)]
    pub title: Option<String>,
    /// The compressor and endpoints of --flows and --ran (--ran always
    /// uses the thesis's reliable transport).
    #[command(flatten)]
    pub endpoint: EndpointArgs,
}

fn fail(kind: Failure, msg: impl std::fmt::Display) -> ExitCode {
    CliError { kind, message: msg.to_string() }.report("sigkit report")
}

pub fn report(args: ReportArgs) -> ExitCode {
    if args.inputs.is_empty() && args.flows.is_none() && args.ran.is_none() {
        return fail(Failure::Usage, "nothing to report: give RUN files, --flows CORPUS or --ran");
    }
    let mut input = match ReportInput::read_files(&args.inputs) {
        Ok(i) => i,
        Err(e) => return fail(Failure::Input, e),
    };
    let command: Vec<String> = std::env::args().collect();
    if args.flows.is_some() || args.ran.is_some() {
        input.runs.push(sources::run_meta(&command.join(" ")));
    }
    if let Some(corpus) = &args.flows {
        let (config, params) = match args.endpoint.resolve() {
            Ok(c) => c,
            Err(e) => return fail(Failure::Usage, e),
        };
        match sources::compression(corpus, &[config.algorithm], &Mechanism::ALL, config, params) {
            Ok(c) => input.compression.extend(c),
            Err(e @ (StudyError::Corpus(_) | StudyError::Dir { .. })) => return fail(Failure::Input, e),
            Err(e) => return fail(Failure::Run, e),
        }
    }
    if let Some(call_dir) = &args.ran {
        let call = match compressed_call(&call_source(call_dir.as_deref()), 12, &args.endpoint) {
            Ok(c) => c,
            Err(e) => return e.report("sigkit report"),
        };
        let rtt = Duration::from_millis(70);
        let measured = if args.measure {
            let settings = MeasureSettings { rtt, time_scale: args.time_scale, ..MeasureSettings::default() };
            match measure_rates(&call, &THESIS_RATES_KBPS, &settings) {
                Ok(m) => m,
                Err(e) => return fail(Failure::Run, e),
            }
        } else {
            Vec::new()
        };
        input.merge(sources::ran(&call, &THESIS_RATES_KBPS, rtt, &measured));
    }
    if !args.no_seeds {
        runs::add_seeds(&mut input);
    }
    if args.no_seeds {
        input.seed_points.clear();
    }
    if args.title.is_some() {
        input.title = args.title;
    }
    match write_report(&input, &args.out) {
        Ok(files) => {
            println!("{} ({} plots)", files.index.display(), files.plots.len());
            ExitCode::SUCCESS
        }
        Err(e) => fail(Failure::Run, e),
    }
}
