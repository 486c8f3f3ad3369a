//! `sigkit results`: what a results file (`sigkit eval`, `sigkit load
//! --db`) holds: its runs, or one table as CSV.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use sigkit_results::{RunId, Store};

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
    let fail = |m: String| {
        eprintln!("sigkit results: {m}");
        ExitCode::from(1)
    };
    if !args.db.exists() {
        return fail(format!("{}: no such file", args.db.display()));
    }
    let store = match Store::open(&args.db) {
        Ok(s) => s,
        Err(e) => return fail(format!("{}: {e}", args.db.display())),
    };
    match &args.csv {
        Some(table) => {
            let mut out = std::io::stdout().lock();
            match store.export_csv(table, args.run.map(RunId), &mut out) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => fail(e.to_string()),
            }
        }
        None => {
            let runs = match store.runs() {
                Ok(r) => r,
                Err(e) => return fail(e.to_string()),
            };
            for r in runs {
                println!("run {} {} {} (finished: {})", r.id, r.kind, r.command, r.finished_at.is_some());
            }
            match store.tables() {
                Ok(t) => println!("tables: {}", t.join(", ")),
                Err(e) => return fail(e.to_string()),
            }
            ExitCode::SUCCESS
        }
    }
}
