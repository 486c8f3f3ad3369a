//! `sigkit results`: what a results file (`sigkit eval`, `sigkit load
//! --db`) holds: its runs, or one table as CSV.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use sigkit_results::{RunId, Store, StoreError};

use crate::exit::{CliError, Failure};

#[derive(Args)]
pub struct ResultsArgs {
    /// The SQLite results file.
    db: PathBuf,
    /// Write this table as CSV to stdout (without it: list the runs and
    /// tables).
    #[arg(long, value_name = "TABLE")]
    csv: Option<String>,
    /// Only this run's rows.
    #[arg(long)]
    run: Option<i64>,
}

pub fn results(args: ResultsArgs) -> ExitCode {
    let fail = |e: CliError| e.report("sigkit results");
    if !args.db.exists() {
        return fail(CliError::input(format!("{}: no such file", args.db.display())));
    }
    let store = match Store::open_read_only(&args.db) {
        Ok(s) => s,
        Err(e) => return fail(CliError::input(format!("{}: not a results file: {e}", args.db.display()))),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = match &args.csv {
        Some(table) => store.export_csv(table, args.run.map(RunId), &mut out).map(|_| ()),
        None => store
            .each_run_header(|id, kind, command, finished| {
                writeln!(out, "run {} {kind} {command} (finished: {finished})", id.0)
            })
            .and_then(|_| store.tables())
            .and_then(|t| writeln!(out, "tables: {}", t.join(", ")).map_err(Into::into)),
    };
    match written.and_then(|()| out.flush().map_err(Into::into)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(sigkit_results::StoreError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(CliError { kind: failure_of(&e), message: e.to_string() }),
    }
}

/// What a failure to list or export is: writing the output is the run's;
/// a table name or run that is not there is the arguments' (`--csv`,
/// `--run`); anything else (no `runs` table, a damaged database, a table
/// past the bounds) the file's.
fn failure_of(e: &StoreError) -> Failure {
    match e {
        StoreError::Io(_) => Failure::Run,
        StoreError::BadName(_) | StoreError::NoRun(_) => Failure::Usage,
        StoreError::NoTable(t) if t != "runs" => Failure::Usage,
        _ => Failure::Input,
    }
}
