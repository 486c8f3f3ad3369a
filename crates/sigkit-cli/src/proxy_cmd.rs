//! `sigkit proxy`: the SigComp edge proxy in front of a SIP server, and
//! `sigkit proxy ctl`, which asks a running one what it holds.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use sigkit_proxy::config::TransportAddr;
use sigkit_proxy::ProxyConfig;

use crate::proxy_ctl::{self, CtlArgs};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProxyArgs {
    #[command(subcommand)]
    command: Option<ProxyCommand>,
    /// Where terminals reach the proxy, udp:HOST:PORT or tcp:HOST:PORT;
    /// repeatable. Replaces the file's `listen`.
    #[arg(long = "listen", value_name = "ADDR")]
    listen: Vec<TransportAddr>,
    /// The SIP server behind the proxy, udp:HOST:PORT. Replaces the file's
    /// `upstream`.
    #[arg(long, value_name = "ADDR")]
    upstream: Option<TransportAddr>,
    /// The local address for the upstream side (default: any port).
    #[arg(long, value_name = "HOST:PORT")]
    upstream_local: Option<SocketAddr>,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics, and the
    /// read-only admin interface (/status, /compartments, /registrations)
    /// beside them.
    #[arg(long, value_name = "HOST:PORT")]
    metrics: Option<SocketAddr>,
    /// A TOML configuration file (every key is documented in
    /// crates/sigkit-proxy/sigkit.example.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// What to log: a level (error, warn, info, debug, trace) or
    /// RUST_LOG-style directives such as
    /// `info,sigkit_proxy::messages=debug`. `debug` logs one event per SIP
    /// message handled (target `sigkit_proxy::messages`). Default: the
    /// RUST_LOG environment variable, else info.
    #[arg(long, value_name = "FILTER")]
    log_level: Option<String>,
    /// How log lines are written to standard error: text, or json (one
    /// JSON object per line). Text is coloured only on a terminal.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Subcommand)]
enum ProxyCommand {
    /// Ask a running proxy what it holds, on its metrics address:
    /// `status`, `compartments` or `registrations` (read-only; see
    /// docs/deploy.md, "Admin interface").
    Ctl(CtlArgs),
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (tracing-subscriber's JSON format).
    Json,
}

/// The configuration file at `path`; the message to print when it cannot
/// be read or is refused.
pub fn read_config(path: &Path) -> Result<ProxyConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    ProxyConfig::from_toml(&path.display().to_string(), &text).map_err(|e| e.to_string())
}

/// Installs the log subscriber: `level` (else RUST_LOG, else info) in
/// `format` on standard error, with ANSI colours only when standard error
/// is a terminal (and NO_COLOR is unset), so that a log file or a pipe
/// gets no escape codes.
fn init_logging(level: Option<&str>, format: LogFormat) -> Result<(), String> {
    use tracing_subscriber::EnvFilter;
    let filter = match level {
        Some(l) => EnvFilter::try_new(l).map_err(|e| format!("--log-level {l}: {e}"))?,
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    };
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let ansi = std::io::stderr().is_terminal() && !no_color;
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    Ok(())
}

pub fn proxy(args: ProxyArgs) -> ExitCode {
    if let Some(ProxyCommand::Ctl(ctl)) = args.command {
        return proxy_ctl::ctl(ctl);
    }
    let mut config = match &args.config {
        Some(path) => match read_config(path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("sigkit proxy: {e}");
                return ExitCode::from(2);
            }
        },
        None => ProxyConfig::default(),
    };
    if !args.listen.is_empty() {
        config.listen = args.listen;
        config.overridden("listen");
    }
    if let Some(u) = args.upstream {
        config.upstream = Some(u);
        config.overridden("upstream");
    }
    if let Some(u) = args.upstream_local {
        config.upstream_local = Some(u);
        config.overridden("upstream_local");
    }
    if let Some(m) = args.metrics {
        config.metrics = Some(m);
        config.overridden("metrics");
    }
    if let Some(t) = args.threads {
        config.threads = t;
        config.overridden("threads");
    }
    if let Err(e) = config.validate() {
        eprintln!("sigkit proxy: {e}");
        return ExitCode::from(2);
    }
    if let Err(e) = init_logging(args.log_level.as_deref(), args.log_format) {
        eprintln!("sigkit proxy: {e}");
        return ExitCode::from(2);
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if config.threads > 0 {
        builder.worker_threads(config.threads);
    }
    let runtime = match builder.build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sigkit proxy: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(async move {
        let running = match sigkit_proxy::runtime::start(config).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("sigkit proxy: {e}");
                return ExitCode::from(1);
            }
        };
        for (t, a) in &running.terminal_addrs {
            tracing::info!(transport = ?t, addr = %a, "listening for terminals");
        }
        tracing::info!(addr = %running.upstream_local, "upstream side");
        if let Some(m) = running.metrics_addr {
            tracing::info!(addr = %m, "metrics at /metrics; admin at /status, /compartments, /registrations");
        }
        running.wait().await;
        ExitCode::SUCCESS
    })
}
