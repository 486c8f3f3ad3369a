//! The load run of `sigkit eval`: which servers stand behind `sigkit
//! proxy`, started before the run is recorded so that the results name the
//! path the calls really took, and the stepped run through them.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use sigkit_eval::peers::{self, Peer};
use sigkit_loadgen::{EngineConfig, LoadConfig, Pattern, Prepared, Role};
use sigkit_proxy::config::TransportAddr;
use sigkit_proxy::{ProxyConfig, SipTransport};

use super::PeersArg;

/// The servers behind `sigkit proxy` in the load run.
pub enum LoadPath {
    /// The built-in UAS, why the real peers were not used, and whether the
    /// user asked for it (`--peers built-in`) rather than it standing in.
    BuiltIn { why: String, requested: bool },
    /// Kamailio, relaying to SIPp's UAS; both running until this is dropped.
    Kamailio { kamailio: String, sipp: String, uas: Peer, proxy: Peer },
}

impl LoadPath {
    /// Starts the servers `peers` asks for in `dir` (their configuration
    /// and logs), with Kamailio's configuration `kamailio_cfg`. Where a
    /// peer is missing (`auto`) or fails to start, the built-in UAS stands
    /// in and `why` says so; only `--peers kamailio` with a peer missing
    /// from PATH is an error.
    pub fn start(peers: PeersArg, dir: &Path, kamailio_cfg: &str) -> Result<LoadPath, String> {
        let missing: Vec<&str> = ["kamailio", "sipp"].into_iter().filter(|t| peers::find(t).is_none()).collect();
        match (peers, missing.is_empty()) {
            (PeersArg::BuiltIn, _) => return Ok(LoadPath::BuiltIn { why: "--peers built-in".into(), requested: true }),
            (PeersArg::Kamailio, false) => {
                return Err(format!("--peers kamailio: not on PATH: {}", missing.join(", ")))
            }
            (PeersArg::Auto, false) => {
                return Ok(LoadPath::BuiltIn {
                    why: format!("not installed: {}", missing.join(", ")),
                    requested: false,
                })
            }
            (_, true) => {}
        }
        let started = peers::sipp_uas(dir).map_err(|e| format!("SIPp's UAS did not start: {e}")).and_then(|uas| {
            let proxy = peers::kamailio_with(dir, kamailio_cfg).map_err(|e| format!("Kamailio did not start: {e}"))?;
            Ok((uas, proxy))
        });
        match started {
            Ok((uas, proxy)) => Ok(LoadPath::Kamailio {
                kamailio: peers::version("kamailio"),
                sipp: peers::version("sipp"),
                uas,
                proxy,
            }),
            Err(e) => {
                eprintln!("sigkit eval: {e}");
                eprintln!("sigkit eval: the load run falls back to the built-in UAS");
                Ok(LoadPath::BuiltIn { why: first_lines(&e, 6), requested: false })
            }
        }
    }

    /// The series name of its load steps.
    pub fn series(&self) -> &'static str {
        match self {
            LoadPath::BuiltIn { .. } => "UAC → sigkit proxy → built-in UAS",
            LoadPath::Kamailio { .. } => sigkit_report::series::THROUGH_PROXY,
        }
    }

    pub fn key(&self) -> &'static str {
        match self {
            LoadPath::BuiltIn { .. } => "built-in",
            LoadPath::Kamailio { .. } => "sipp-kamailio",
        }
    }

    /// The run's note on its servers.
    pub fn notes(&self) -> String {
        match self {
            LoadPath::BuiltIn { why, .. } => format!(
                "Load run: {}; Kamailio and SIPp were not used ({why}). Capacity search: the built-in UAC against \
                 the built-in UAS.",
                self.series()
            ),
            LoadPath::Kamailio { kamailio, sipp, .. } => format!(
                "Load run: {}, on 127.0.0.1 ({kamailio}; {sipp}; Kamailio as a record-routing stateful proxy with \
                 the configuration embedded in sigkit or given by --kamailio-cfg). Capacity search: the built-in \
                 UAC against the built-in UAS.",
                self.series()
            ),
        }
    }

    /// What the reader must know about the servers: the built-in UAS stood
    /// in for Kamailio and SIPp, unless the user asked for it.
    pub fn warning(&self) -> Option<String> {
        match self {
            LoadPath::BuiltIn { why, requested: false } => {
                Some(format!("The load run went to the built-in UAS, not through Kamailio to SIPp's UAS: {why}."))
            }
            _ => None,
        }
    }

    /// SIPp's UAS and Kamailio, where they run.
    pub fn servers(&self) -> Option<(SocketAddr, SocketAddr)> {
        match self {
            LoadPath::BuiltIn { .. } => None,
            LoadPath::Kamailio { uas, proxy, .. } => Some((uas.addr, proxy.addr)),
        }
    }
}

/// The first `n` lines of `text`, joined on one line: a peer's log can be
/// long, and the note goes into a table.
fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut out = lines.iter().take(n).copied().collect::<Vec<_>>().join(" / ");
    if lines.len() > n {
        out.push_str(" / …");
    }
    out
}

/// The load run's steps: start, end and step in calls/s, and each step's
/// length.
#[derive(Clone, Copy)]
pub struct Steps {
    pub start: f64,
    pub end: f64,
    pub step: f64,
    pub dwell: Duration,
}

impl Steps {
    pub fn new(quick: bool) -> Steps {
        if quick {
            Steps { start: 100.0, end: 300.0, step: 100.0, dwell: Duration::from_secs(1) }
        } else {
            Steps { start: 200.0, end: 1000.0, step: 200.0, dwell: Duration::from_secs(3) }
        }
    }
}

/// A stepped load run: UAC → `sigkit proxy` (plain SIP on the terminal
/// side) → the built-in UAS, or, with `servers` (SIPp's UAS, Kamailio),
/// → Kamailio → SIPp's UAS.
pub async fn proxy_load(
    servers: Option<(SocketAddr, SocketAddr)>,
    steps: Steps,
) -> Result<sigkit_loadgen::RunReport, String> {
    load(servers, true, steps).await
}

/// The series of the like-for-like runs beside the proxy's: the same
/// Kamailio and SIPp UAS without `sigkit proxy`, driven by sigkit's UAC
/// and by SIPp's.
pub const DIRECT_SERIES: &str = sigkit_report::series::DIRECT;
pub const SIPP_SERIES: &str = sigkit_report::series::SIPP_DIRECT;

/// [`proxy_load`]'s steps from sigkit's UAC straight to Kamailio: what
/// the proxy adds is the difference.
pub async fn direct_load(servers: (SocketAddr, SocketAddr), steps: Steps) -> Result<sigkit_loadgen::RunReport, String> {
    load(Some(servers), false, steps).await
}

/// [`direct_load`]'s steps with SIPp's UAC as the generator: one SIPp run
/// per step (`-r` the step's rate, `-m` its calls), in `dir`; the steps
/// as the load run records them (`load_steps` rows).
pub fn sipp_steps(
    dir: &Path,
    (uas, kamailio): (SocketAddr, SocketAddr),
    steps: Steps,
) -> Result<Vec<serde_json::Value>, String> {
    let mut rows = Vec::new();
    let mut rate = steps.start;
    let dwell = steps.dwell.as_secs_f64();
    while rate <= steps.end + 1e-9 {
        let calls = (rate * dwell).round() as u64;
        let limit = steps.dwell + Duration::from_secs(8);
        let run = peers::sipp_uac(dir, uas, kamailio, rate, calls, limit).map_err(|e| e.to_string())?;
        // SIPp's own response times are left out: its clock ticks in whole
        // milliseconds and read 0 ms for calls that sigkit's UAC measured
        // at about 2 ms on the same path, so they are not comparable.
        rows.push(serde_json::json!({
            "step": rows.len(),
            "offered_cps": rate,
            "duration_s": dwell,
            "attempted": calls,
            "successful": run.successful,
            // A call still open at the limit did not complete in time.
            "failed": run.failed + run.unfinished,
            "unfinished": run.unfinished,
            "calls_per_s": run.successful as f64 / dwell,
        }));
        rate += steps.step;
    }
    Ok(rows)
}

/// A stepped run of sigkit's UAC, through `sigkit proxy` or not.
async fn load(
    servers: Option<(SocketAddr, SocketAddr)>,
    through_proxy: bool,
    steps: Steps,
) -> Result<sigkit_loadgen::RunReport, String> {
    let Steps { start, end, step, dwell } = steps;
    let n_steps = ((end - start) / step).round() as u32 + 1;
    let secs = dwell.as_secs_f64() * f64::from(n_steps);
    let localhost = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let (uas_addr, upstream, built_in) = match servers {
        Some((uas, kamailio)) => (uas, kamailio, None),
        None => {
            let uas = Prepared::bind(LoadConfig {
                role: Role::Uas,
                duration: Some(Duration::from_secs_f64(secs + 40.0)),
                ..LoadConfig::default()
            })
            .await
            .map_err(|e| e.to_string())?;
            let addr = uas.local_addr();
            let (stop, stopped) = tokio::sync::watch::channel(false);
            (addr, addr, Some((tokio::spawn(uas.run(Some(stopped))), stop)))
        }
    };
    let config = ProxyConfig {
        listen: vec![TransportAddr { transport: SipTransport::Udp, addr: localhost(0) }],
        upstream: Some(TransportAddr { transport: SipTransport::Udp, addr: upstream }.into()),
        upstream_local: Some(localhost(0)),
        threads: 1,
        ..ProxyConfig::default()
    };
    let proxy =
        if through_proxy { Some(sigkit_proxy::runtime::start(config).await.map_err(|e| e.to_string())?) } else { None };
    let next_hop = proxy.as_ref().map_or(upstream, |p| p.terminal_addrs[0].1);
    let uac = LoadConfig {
        role: Role::Uac,
        engine: EngineConfig { remote: Some(uas_addr), next_hop: Some(next_hop), ..LoadConfig::default().engine },
        rate: start,
        pattern: Pattern::Steps { start, end, step, dwell, pause: Duration::ZERO },
        duration: Some(Duration::from_secs_f64(secs + 10.0)),
        ..LoadConfig::default()
    };
    let report = sigkit_loadgen::run(uac, None).await.map_err(|e| e.to_string());
    if let Some((task, stop)) = built_in {
        let _ = stop.send(true);
        let _ = task.await;
    }
    if let Some(proxy) = proxy {
        proxy.stop().await;
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_log_becomes_a_short_note() {
        let log = "Kamailio did not start\n\nERROR: loading config file(x): No such file\nb\nc\nd\ne\nf\ng";
        let note = first_lines(log, 3);
        assert_eq!(note, "Kamailio did not start / ERROR: loading config file(x): No such file / b / …");
        assert_eq!(first_lines("one", 3), "one");
    }
}
