//! The processes the generator measures: `sigkit proxy`, configured for
//! the load, and Kamailio (started by `sigkit_eval::peers`); the proxy's
//! metrics endpoint; the CPUs of `--pin`.

use std::io::{Read, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sigkit_eval::peers::{self, Peer, ProcessGroup};

use crate::Args;

pub const LOCALHOST: [u8; 4] = [127, 0, 0, 1];

/// A UDP port of 127.0.0.1 free a moment ago (bound, read and closed).
pub fn free_port() -> Result<u16, String> {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("finding a free UDP port on 127.0.0.1: {e}"))
}

fn spawn(mut cmd: Command, log: &Path) -> Result<ProcessGroup, String> {
    use std::os::unix::process::CommandExt;
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| format!("{}: {e}", log.display()))?;
    cmd.stdin(Stdio::null()).stdout(file).stderr(err).process_group(0);
    Ok(ProcessGroup::new(cmd.spawn().map_err(|e| format!("{cmd:?}: {e}"))?))
}

/// A `sigkit proxy` process with limits high enough for the load: one
/// source address (127.0.0.1) carries every terminal, so the per-source
/// budgets are lifted, and so is the cap on the REGISTERs held from one
/// source (past it a registration's state would be declined, and each of
/// that terminal's later messages NACKed).
pub struct ProxyProcess {
    process: ProcessGroup,
    pub listen: SocketAddr,
    pub metrics: SocketAddr,
}

impl ProxyProcess {
    pub fn pid(&self) -> u32 {
        self.process.id()
    }
}

/// `hot`: `sigcomp.hot_compartments`, split among the proxy's shards; the
/// load runs keep every terminal's compartment hot (4,096 for 1,000
/// terminals leaves room for an uneven split over the shards), the memory
/// run the default (1,024) so that idle terminals are held packed.
pub fn start_proxy(
    args: &Args,
    dir: &Path,
    name: &str,
    upstream: SocketAddr,
    hot: usize,
) -> Result<ProxyProcess, String> {
    let listen = SocketAddr::from((LOCALHOST, free_port()?));
    let metrics = SocketAddr::from((LOCALHOST, free_port()?));
    let config = format!(
        "threads = {threads}\nshards = {shards}\nlisten = [\"udp:{listen}\"]\nupstream = \"udp:{upstream}\"\nupstream_local = \"127.0.0.1:0\"\n\
         metrics = \"{metrics}\"\nmax_pending_registers_per_source = 1000000\n[sigcomp]\n{level}max_compartments = 1000000\nmax_state_bytes = 8589934592\nhot_compartments = {hot}\n\
         [defence]\ncycles_per_source_per_s = 1000000000000\ncycles_burst = 1000000000000\n\
         messages_per_source_per_s = 1000000000\nmessages_burst = 1000000000\n\
         decompression_ms_per_s = 1000000\ndecompression_burst_ms = 1000000\nunknown_sources_percent = 100\n",
        threads = args.proxy_threads,
        shards = args.proxy_shards,
        level = match args.proxy_level {
            0 => String::new(),
            level => format!("level = {level}\n"),
        }
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut cmd = match pinned_cpus() {
        Some((_, proxy_cpu)) if args.pin => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(proxy_cpu.to_string()).arg(&args.sigkit);
            c
        }
        _ => Command::new(&args.sigkit),
    };
    cmd.arg("proxy").arg("--config").arg(&path).env("RUST_LOG", "warn");
    let log = dir.join(format!("{name}.log"));
    let process = spawn(cmd, &log)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(metrics).is_err() {
        if Instant::now() >= deadline {
            return Err(format!("sigkit proxy did not start (see {})", log.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(ProxyProcess { process, listen, metrics })
}

pub fn http_get(addr: SocketAddr, path: &str) -> String {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else { return String::new() };
    let _ = s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes());
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()
}

/// The value of one series in a Prometheus text exposition (0 if absent).
pub fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

/// The repository's Kamailio test configuration: registrar with digest
/// authentication (every password "secret"); an OPTIONS for an unknown
/// user of its own domain is answered 404 by its location lookup.
const KAMAILIO_CFG: &str = include_str!("../../../sigkit-proxy/tests/kamailio/kamailio.cfg");

/// `peers::kamailio_with` waits for a 200 to an OPTIONS to Kamailio itself
/// (a Request-URI without a user part); the load's OPTIONS name a user,
/// so they still go to the location lookup.
const READINESS_ROUTE: &str = "request_route {\n    if (is_method(\"OPTIONS\") && $rU == $null && uri == myself) {\n        sl_send_reply(\"200\", \"OK\");\n        exit;\n    }\n";

/// Kamailio with the test configuration and two UDP workers, its
/// configuration, PID file and log in `dir`, and the PIDs of its process
/// tree (the main process and its workers), whose CPU is measured.
pub fn start_kamailio(dir: &Path) -> Result<(Peer, Vec<u32>), String> {
    let template = KAMAILIO_CFG.replace("CHILDREN", "2").replace("debug=2", "debug=1").replacen(
        "request_route {\n",
        READINESS_ROUTE,
        1,
    );
    let peer = peers::kamailio_with(dir, &template).map_err(|e| e.to_string())?;
    // Kamailio runs in the foreground (`-DD`): the peer's process is its
    // main process.
    let pid = peer.pid();
    // Its other processes (timers, TCP workers) start about when the UDP
    // workers answer: let them all be there.
    std::thread::sleep(Duration::from_millis(300));
    Ok((peer, crate::usage::process_tree(pid)))
}

/// The CPUs for `--pin`: this program on the first, the proxy on the last
/// (none on a single CPU).
pub fn pinned_cpus() -> Option<(usize, usize)> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n >= 2).then_some((0, n - 1))
}

/// Puts every thread of this program (those started later inherit it) on
/// the CPUs `--pin` leaves it; `Ok(None)` on a single CPU.
pub fn pin_self() -> Result<Option<(String, usize)>, String> {
    let Some((own, proxy_cpu)) = pinned_cpus() else { return Ok(None) };
    let cpus = if proxy_cpu > own + 1 { format!("{own}-{}", proxy_cpu - 1) } else { own.to_string() };
    let ok = Command::new("taskset")
        .args(["-a", "-p", "-c", &cpus, &std::process::id().to_string()])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err("taskset failed: --pin needs util-linux's taskset".into());
    }
    Ok(Some((cpus, proxy_cpu)))
}
