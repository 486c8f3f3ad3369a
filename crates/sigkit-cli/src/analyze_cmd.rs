//! Being written; replaced within this session.

use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct AnalyzeArgs {}

pub fn analyze(_args: AnalyzeArgs) -> ExitCode {
    eprintln!("sigkit: this command is not built yet");
    ExitCode::from(2)
}
