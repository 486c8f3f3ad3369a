//! The exit status of every `sigkit` command: one code per kind of
//! failure, the same for the same kind whatever the command, so a script
//! can tell "fix the arguments" from "fix the file" from "the network is
//! not there" from "it ran and the result is a failure". The table is in
//! docs/cli.md.

use std::fmt;
use std::process::ExitCode;

/// The kinds of failure, each with its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 1: the command ran and its result is a failure or incomplete (a
    /// message that does not decompress, failed calls, a part of `eval`
    /// that failed), or its output could not be written.
    Run,
    /// 2: bad arguments or option values (clap's own errors exit 2 too).
    Usage,
    /// 3: an input file is missing, unreadable or not what the command
    /// takes (not a capture, bad TOML, XML, JSON, hex or assembly, a bad
    /// flow directory, not a results file).
    Input,
    /// 4: the network: a name that does not resolve, an address that
    /// cannot be bound, a peer that does not answer.
    Network,
    /// 130: stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report
    /// it).
    Interrupted,
}

impl Failure {
    /// The process exit code.
    pub const fn code(self) -> u8 {
        match self {
            Failure::Run => 1,
            Failure::Usage => 2,
            Failure::Input => 3,
            Failure::Network => 4,
            Failure::Interrupted => 130,
        }
    }

    /// The exit status.
    pub fn exit(self) -> ExitCode {
        ExitCode::from(self.code())
    }
}

/// A failure and the message that says what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// What kind of failure, hence the exit code.
    pub kind: Failure,
    /// The message for stderr, without the command's name.
    pub message: String,
}

impl CliError {
    /// A bad argument.
    pub fn usage(message: impl fmt::Display) -> CliError {
        CliError { kind: Failure::Usage, message: message.to_string() }
    }

    /// An input file that cannot be used.
    pub fn input(message: impl fmt::Display) -> CliError {
        CliError { kind: Failure::Input, message: message.to_string() }
    }

    /// A name, an address or a peer the network does not give.
    pub fn network(message: impl fmt::Display) -> CliError {
        CliError { kind: Failure::Network, message: message.to_string() }
    }

    /// A run that failed.
    pub fn run(message: impl fmt::Display) -> CliError {
        CliError { kind: Failure::Run, message: message.to_string() }
    }

    /// Prints `PREFIX: MESSAGE` on stderr and gives the exit status.
    pub fn report(&self, prefix: &str) -> ExitCode {
        eprintln!("{prefix}: {}", self.message);
        self.kind.exit()
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Most checks of the arguments give their message as a `String`: a usage
/// error unless said otherwise.
impl From<String> for CliError {
    fn from(message: String) -> CliError {
        CliError::usage(message)
    }
}

impl From<&str> for CliError {
    fn from(message: &str) -> CliError {
        CliError::usage(message)
    }
}

/// The end of a command that wrote its report to stdout: a reader that
/// went away (a closed pipe, `| head`) is no failure; any other write
/// error fails the run.
pub fn finish(prefix: &str, printed: std::io::Result<()>) -> ExitCode {
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => CliError::run(format!("writing the report: {e}")).report(prefix),
    }
}
