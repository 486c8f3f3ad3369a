//! `sigkit proxy ctl`: asks a running `sigkit proxy` what it holds, on its
//! metrics address (its read-only admin interface, `sigkit_proxy::admin`:
//! `GET /status`, `/compartments`, `/registrations`), and prints the
//! answer as a table, or as the proxy's JSON.
//!
//! Exit codes: 0 answered; 1 the proxy could not be reached or did not
//! answer 200 with what it should; 2 bad arguments (no address given, a
//! configuration file that cannot be read or names none).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::de::DeserializeOwned;
use sigkit_proxy::admin::{CompartmentList, RegistrationList, Status, DEFAULT_LIMIT};

use crate::exit::CliError;

#[derive(Args)]
pub struct CtlArgs {
    /// What to ask: status, compartments or registrations.
    #[arg(value_enum)]
    what: Query,
    /// The proxy's metrics address (its --metrics, or `metrics` in its
    /// configuration file).
    #[arg(long, value_name = "HOST:PORT")]
    metrics: Option<SocketAddr>,
    /// The proxy's configuration file, to read its metrics address from.
    #[arg(long, value_name = "FILE", conflicts_with = "metrics")]
    config: Option<PathBuf>,
    /// Compartments or registrations listed from each shard at most.
    #[arg(long, default_value_t = DEFAULT_LIMIT)]
    limit: usize,
    /// Print the proxy's JSON answer instead of a table.
    #[arg(long)]
    json: bool,
}

/// What `sigkit proxy ctl` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Query {
    /// Version, uptime, shards and counts (`GET /status`).
    Status,
    /// The terminals' compartments (`GET /compartments`).
    Compartments,
    /// The registrations the proxy remembers (`GET /registrations`).
    Registrations,
}

/// Exit code of bad arguments.
const EXIT_USAGE: u8 = 2;

/// How long connecting, and then each read or write, may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer read (a listing of 1,000 entries per shard is a few
/// hundred kilobytes per shard).
const MAX_ANSWER: u64 = 256 << 20;

pub fn ctl(args: CtlArgs) -> ExitCode {
    let addr = match (args.metrics, &args.config) {
        (Some(a), _) => a,
        (None, Some(path)) => match crate::proxy_cmd::read_config(path) {
            Ok(c) => match c.metrics {
                Some(a) => a,
                None => {
                    eprintln!("sigkit proxy ctl: {}: no `metrics` address", path.display());
                    return ExitCode::from(EXIT_USAGE);
                }
            },
            Err(e) => return e.report("sigkit proxy ctl"),
        },
        (None, None) => {
            eprintln!("sigkit proxy ctl: give the proxy's metrics address (--metrics HOST:PORT or --config FILE)");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let path = match args.what {
        Query::Status => "/status".to_string(),
        Query::Compartments => format!("/compartments?limit={}", args.limit),
        Query::Registrations => format!("/registrations?limit={}", args.limit),
    };
    let out = get(addr, &path).and_then(|body| {
        match args.what {
            Query::Status => render(&body, args.json, status_text),
            Query::Compartments => render(&body, args.json, compartments_table),
            Query::Registrations => render(&body, args.json, registrations_table),
        }
        .map_err(CliError::run)
    });
    match out {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        // Nobody at the address is the network's failure (4), an answer
        // other than 200 or one that does not read the run's (1).
        Err(e) => e.report("sigkit proxy ctl"),
    }
}

/// The body of `GET path` from the proxy's admin interface at `addr`,
/// which answers one request per connection and closes it.
fn get(addr: SocketAddr, path: &str) -> Result<String, CliError> {
    let at = |e: std::io::Error| CliError::network(format!("{addr}: {e}"));
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(at)?;
    s.set_read_timeout(Some(TIMEOUT)).map_err(at)?;
    s.set_write_timeout(Some(TIMEOUT)).map_err(at)?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").map_err(at)?;
    let mut raw = Vec::new();
    s.take(MAX_ANSWER).read_to_end(&mut raw).map_err(at)?;
    let text = String::from_utf8(raw).map_err(|_| CliError::run(format!("{addr}: the answer is not UTF-8")))?;
    let (head, body) =
        text.split_once("\r\n\r\n").ok_or_else(|| CliError::run(format!("{addr}: not an HTTP answer")))?;
    let status = head.lines().next().unwrap_or_default();
    if status.split(' ').nth(1) != Some("200") {
        return Err(CliError::run(format!("{addr}{path}: {status}: {}", body.trim())));
    }
    Ok(body.to_string())
}

/// `body` read as `T` and written by `table`, or pretty JSON.
fn render<T: DeserializeOwned + serde::Serialize>(
    body: &str,
    json: bool,
    table: fn(&T) -> String,
) -> Result<String, String> {
    let value: T = serde_json::from_str(body).map_err(|e| format!("the proxy's answer does not read: {e}"))?;
    if json {
        let mut text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        text.push('\n');
        return Ok(text);
    }
    Ok(table(&value))
}

/// `rows` under `header`, each column as wide as its widest cell.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let padded: Vec<String> = cells.zip(widths.iter().copied()).map(|(c, w)| format!("{c:<w$}")).collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(&mut header.iter().copied());
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    out
}

fn or_dash(v: Option<&str>) -> String {
    v.unwrap_or("-").to_string()
}

fn status_text(s: &Status) -> String {
    let c = &s.counts;
    let rows: Vec<(&str, String)> = vec![
        ("version", s.version.clone()),
        ("instance", s.instance.clone()),
        ("uptime", format!("{} s", s.uptime_s)),
        ("shards", s.shards.to_string()),
        ("stateful", s.stateful.to_string()),
        ("listen", s.listen.join(", ")),
        ("upstream", s.upstream.clone()),
        ("compartments", c.compartments.to_string()),
        ("state bytes", c.state_bytes.to_string()),
        ("registrations", c.registrations.to_string()),
        ("flows", c.flows.to_string()),
        ("transactions", c.transactions.to_string()),
        ("pending registers", c.pending_registers.to_string()),
        ("tcp connections", c.tcp_connections.to_string()),
        (
            "messages received",
            format!("terminal {}, upstream {}", c.messages_received.terminal, c.messages_received.upstream),
        ),
        ("messages sent", format!("terminal {}, upstream {}", c.messages_sent.terminal, c.messages_sent.upstream)),
        ("nacks sent", c.nacks_sent.to_string()),
        ("nacks received", c.nacks_received.to_string()),
    ];
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    rows.iter().map(|(k, v)| format!("{k:<width$}  {v}\n")).collect()
}

fn compartments_table(list: &CompartmentList) -> String {
    let rows: Vec<Vec<String>> = list
        .compartments
        .iter()
        .map(|c| {
            vec![
                c.shard.to_string(),
                c.id.to_string(),
                or_dash(c.terminal.as_deref()),
                or_dash(c.peer.as_deref()),
                if c.registered { "yes" } else { "no" }.to_string(),
                c.state_bytes.to_string(),
                c.idle_ms.map_or_else(|| "-".to_string(), |ms| format!("{:.1}", ms as f64 / 1000.0)),
            ]
        })
        .collect();
    let header = ["SHARD", "ID", "TERMINAL", "PEER", "REGISTERED", "STATE_BYTES", "IDLE_S"];
    format!("{}{} of {} compartments\n", table(&header, &rows), rows.len(), list.total)
}

fn registrations_table(list: &RegistrationList) -> String {
    let rows: Vec<Vec<String>> = list
        .registrations
        .iter()
        .map(|r| {
            vec![
                r.shard.to_string(),
                if r.aor.is_empty() { "-".to_string() } else { r.aor.clone() },
                or_dash(r.terminal.as_deref()),
                or_dash(r.flow.as_deref()),
                r.expires_s.to_string(),
                r.compartments.to_string(),
            ]
        })
        .collect();
    let header = ["SHARD", "AOR", "TERMINAL", "FLOW", "EXPIRES_S", "COMPARTMENTS"];
    format!("{}{} of {} registrations\n", table(&header, &rows), rows.len(), list.total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns are as wide as their widest cell, two spaces apart, and
    /// lines carry no trailing blanks.
    #[test]
    fn a_table_aligns_its_columns() {
        let rows = vec![vec!["1".to_string(), "urn:x".to_string()], vec!["12".to_string(), "-".to_string()]];
        assert_eq!(table(&["ID", "TERMINAL"], &rows), "ID  TERMINAL\n1   urn:x\n12  -\n");
    }
}
