//! Being written; replaced within this session.

use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct RohcThroughputArgs {}

pub fn rohc_throughput(_args: RohcThroughputArgs) -> ExitCode {
    eprintln!("sigkit: this command is not built yet");
    ExitCode::from(2)
}
