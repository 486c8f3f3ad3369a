//! `sigkit proxy`: the SigComp edge proxy in front of a SIP server, and
//! `sigkit proxy ctl`, which asks a running one what it holds.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use sigkit_proxy::config::{TransportAddr, TransportAddrError};
use sigkit_proxy::locate::{host_port, HostPortError, Upstream};
use sigkit_proxy::{ConfigError, ProxyConfig};

use crate::exit::CliError;

use crate::proxy_ctl::{self, CtlArgs};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ProxyArgs {
    #[command(subcommand)]
    command: Option<ProxyCommand>,
    /// Where terminals reach the proxy, udp:HOST:PORT or tcp:HOST:PORT (a
    /// host name is resolved); repeatable. Replaces the file's `listen`.
    #[arg(long = "listen", value_name = "ADDR")]
    listen: Vec<String>,
    /// The SIP server behind the proxy: udp:HOST:PORT, or a SIP URI
    /// (sip:example.com, sip:example.com;transport=udp) or host name
    /// located by RFC 3263 at start-up (NAPTR, SRV, A/AAAA; the DNS server
    /// of SIGKIT_DNS_SERVER=IP:PORT, else the system's). Replaces the
    /// file's `upstream`.
    #[arg(long, value_name = "ADDR")]
    upstream: Option<String>,
    /// The local address for the upstream side (default: any port).
    #[arg(long, value_name = "HOST:PORT")]
    upstream_local: Option<String>,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics, and the
    /// read-only admin interface (/status, /compartments, /registrations)
    /// beside them.
    #[arg(long, value_name = "HOST:PORT")]
    metrics: Option<String>,
    /// A TOML configuration file (every key is documented in
    /// crates/sigkit-proxy/sigkit.example.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Send every SIP message the proxy handles, both sides as plain SIP
    /// (a terminal's decompressed), to a Homer/heplify collector as HEPv3
    /// over UDP. Replaces the file's `hep`.
    #[arg(long, value_name = "HOST:PORT")]
    hep: Option<String>,
    /// The capture agent id of the HEP packets (default 1). Replaces the
    /// file's `hep_id`.
    #[arg(long, value_name = "N")]
    hep_id: Option<u32>,
    /// Write the same messages to a pcap file (replaced if it exists) for
    /// sngrep or Wireshark, flushed every second and at SIGINT/SIGTERM.
    /// Replaces the file's `capture`.
    #[arg(long, value_name = "FILE")]
    capture: Option<PathBuf>,
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

/// The configuration file at `path`, or why it cannot be read or is
/// refused, as the failure it is ([`config_failure`]).
pub fn read_config(path: &Path) -> Result<ProxyConfig, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::input(format!("{}: {e}", path.display())))?;
    ProxyConfig::from_toml(&path.display().to_string(), &text).map_err(config_failure)
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

/// A flag's `udp:HOST:PORT` or `tcp:HOST:PORT`, its name resolved.
fn transport_addr(flag: &str, s: &str) -> Result<TransportAddr, CliError> {
    s.parse::<TransportAddr>().map_err(|e: TransportAddrError| {
        let message = format!("--{flag}: {e}");
        if e.is_resolution() {
            CliError::network(message)
        } else {
            CliError::usage(message)
        }
    })
}

/// A flag's `HOST:PORT`, its name resolved.
fn socket_addr(flag: &str, s: &str) -> Result<SocketAddr, CliError> {
    host_port(s).map_err(|e: HostPortError| {
        let message = format!("--{flag}: {e}");
        if e.is_resolution() {
            CliError::network(message)
        } else {
            CliError::usage(message)
        }
    })
}

/// What a refused configuration is: a name that did not resolve is the
/// network's failure, a value from the file the file's, one from the
/// command line (or a missing one) the arguments'.
fn config_failure(e: ConfigError) -> CliError {
    if e.is_resolution() {
        return CliError::network(e);
    }
    match &e {
        ConfigError::File(_) | ConfigError::Value { at: Some(_), .. } => CliError::input(e),
        _ => CliError::usage(e),
    }
}

/// The configuration: the file's, with the flags' values over it.
fn configuration(args: &ProxyArgs) -> Result<ProxyConfig, CliError> {
    let mut config = match &args.config {
        Some(path) => read_config(path)?,
        None => ProxyConfig::default(),
    };
    if !args.listen.is_empty() {
        config.listen = args.listen.iter().map(|l| transport_addr("listen", l)).collect::<Result<_, _>>()?;
        config.overridden("listen");
    }
    if let Some(u) = &args.upstream {
        config.upstream = Some(u.parse::<Upstream>().map_err(|e| CliError::usage(format!("--upstream: {e}")))?);
        config.overridden("upstream");
    }
    if let Some(u) = &args.upstream_local {
        config.upstream_local = Some(socket_addr("upstream-local", u)?);
        config.overridden("upstream_local");
    }
    if let Some(m) = &args.metrics {
        config.metrics = Some(socket_addr("metrics", m)?);
        config.overridden("metrics");
    }
    if let Some(t) = args.threads {
        config.threads = t;
        config.overridden("threads");
    }
    if let Some(h) = &args.hep {
        config.hep = Some(socket_addr("hep", h)?);
        config.overridden("hep");
    }
    if let Some(id) = args.hep_id {
        config.hep_id = id;
        config.overridden("hep_id");
    }
    if let Some(c) = &args.capture {
        config.capture = Some(c.clone());
        config.overridden("capture");
    }
    config.validate().map_err(config_failure)?;
    Ok(config)
}

pub fn proxy(args: ProxyArgs) -> ExitCode {
    if let Some(ProxyCommand::Ctl(ctl)) = args.command {
        return proxy_ctl::ctl(ctl);
    }
    let config = match configuration(&args) {
        Ok(c) => c,
        Err(e) => return e.report("sigkit proxy"),
    };
    if let Err(e) = init_logging(args.log_level.as_deref(), args.log_format) {
        return CliError::usage(e).report("sigkit proxy");
    }
    // An output that cannot be written is the run's failure (1), told
    // apart from an address that cannot be bound (4).
    if let Some(path) = &config.capture {
        if let Err(e) = std::fs::File::create(path) {
            return CliError::run(format!("{}: {e}", path.display())).report("sigkit proxy");
        }
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if config.threads > 0 {
        builder.worker_threads(config.threads);
    }
    let runtime = match builder.build() {
        Ok(r) => r,
        Err(e) => return CliError::run(format!("the async runtime: {e}")).report("sigkit proxy"),
    };
    runtime.block_on(async move {
        // The configuration is valid: what can fail now is locating the
        // upstream and binding the addresses.
        let running = match sigkit_proxy::runtime::start(config).await {
            Ok(r) => r,
            Err(e) => return CliError::network(e).report("sigkit proxy"),
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
