//! The real parts of the integration tests, on 127.0.0.1: Kamailio as
//! registrar and proxy, SIPp as the far end, and `sigkit proxy` itself,
//! each started and stopped by the test.
#![allow(dead_code)]
// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

pub mod ua;

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sigkit_proxy::config::TransportAddr;
use sigkit_proxy::{ProxyConfig, SipTransport};

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Whether the test may go on without `tool` (never in CI, where a
/// missing tool is a failure: `.ci/run` installs them).
pub fn have(tool: &str) -> bool {
    let found =
        Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success());
    assert!(found || std::env::var_os("CI").is_none(), "{tool} is required in CI (.ci/run installs it)");
    if !found {
        eprintln!("skipping: {tool} is not installed");
    }
    found
}

/// A port free for both UDP and TCP on 127.0.0.1, never handed out twice
/// in this process (tests run in parallel threads).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = u.local_addr().unwrap().port();
        let mut given = GIVEN.lock().unwrap();
        if !given.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
}

/// A child process killed (with its process group) when dropped.
pub struct Process {
    child: Child,
    pub name: &'static str,
    pub log: PathBuf,
}

impl Drop for Process {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", "--", &format!("-{pid}")]).status();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{pid}")]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(name: &'static str, mut cmd: Command, dir: &Path) -> Process {
    use std::os::unix::process::CommandExt;
    let log = dir.join(format!("{name}.log"));
    let file = std::fs::File::create(&log).unwrap();
    cmd.stdin(Stdio::null()).stdout(file.try_clone().unwrap()).stderr(file).current_dir(dir).process_group(0);
    let child = cmd.spawn().unwrap_or_else(|e| panic!("{name}: {e}"));
    Process { child, name, log }
}

/// A scratch directory for one test's configuration and logs.
pub fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sigkit-proxy-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Kamailio on 127.0.0.1:`port` (UDP and TCP) with the repository's
/// configuration, ready when it accepts TCP connections.
pub fn kamailio(dir: &Path, port: u16) -> Process {
    let cfg = std::fs::read_to_string(tests_dir().join("kamailio/kamailio.cfg"))
        .unwrap()
        .replace("LISTEN_PORT", &port.to_string())
        .replace("CHILDREN", "1");
    let path = dir.join("kamailio.cfg");
    std::fs::write(&path, cfg).unwrap();
    let mut cmd = Command::new("kamailio");
    cmd.arg("-f").arg(&path).args(["-DD", "-E", "-w"]).arg(dir).arg("-P").arg(dir.join("kamailio.pid"));
    let p = spawn("kamailio", cmd, dir);
    wait_tcp(SocketAddr::from(([127, 0, 0, 1], port)), &p);
    p
}

fn wait_tcp(addr: SocketAddr, p: &Process) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "{} did not start; log:\n{}",
            p.name,
            std::fs::read_to_string(&p.log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A SIPp run in the background (a UAS).
pub fn sipp_background(dir: &Path, args: &[&str]) -> Process {
    let mut cmd = Command::new("sipp");
    cmd.args(args).args(["-nostdin", "-trace_err"]);
    spawn("sipp-uas", cmd, dir)
}

/// What a finished SIPp run reported.
#[derive(Debug)]
pub struct SippResult {
    pub successful: u64,
    pub failed: u64,
    pub output: String,
}

/// Runs SIPp to completion (at most `limit`) and reads its totals.
pub fn sipp(dir: &Path, args: &[&str], limit: Duration) -> SippResult {
    let mut cmd = Command::new("timeout");
    cmd.arg(format!("{}", limit.as_secs())).arg("sipp").args(args).args(["-nostdin", "-trace_err"]);
    let out = cmd.current_dir(dir).stdin(Stdio::null()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let total = |label: &str| {
        text.lines()
            .filter(|l| l.contains(label))
            .filter_map(|l| l.split('|').nth(2).and_then(|c| c.trim().parse().ok()))
            .next_back()
            .unwrap_or(0)
    };
    SippResult { successful: total("Successful call"), failed: total("Failed call"), output: text }
}

/// Kamailio started in a fresh scratch directory named after `test`:
/// the directory, its port, and the process.
pub fn scratch_with_kamailio(test: &str) -> (PathBuf, u16, Process) {
    assert!(have("kamailio") && have("sipp"));
    let dir = scratch(test);
    let port = free_port();
    let k = kamailio(&dir, port);
    (dir, port, k)
}

/// The far-end UAS of `uas_reinvite.xml` on `port`, answering one call
/// (re-INVITE and BYE included), run to its end in the background.
pub fn sipp_uas_one_call(dir: &Path, port: u16) -> tokio::task::JoinHandle<SippResult> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let sf = sipp_scenario("uas_reinvite.xml");
        sipp(&dir, &["-sf", &sf, "-i", "127.0.0.1", "-p", &port.to_string(), "-m", "1"], Duration::from_secs(40))
    })
}

/// SIPp as a UAC on a port of its own: `scenario` (`-sn uac` or `-sf
/// FILE`) placing `calls` calls at `rate` a second to `target` (its
/// Request-URI) through `rsa` (the next hop), run to its end.
pub fn sipp_uac_via(dir: &Path, scenario: [&str; 2], rsa: &str, target: &str, calls: u32, rate: u32) -> SippResult {
    let (port, calls, rate) = (free_port().to_string(), calls.to_string(), rate.to_string());
    let args = [
        scenario[0],
        scenario[1],
        "-s",
        "service",
        "-i",
        "127.0.0.1",
        "-p",
        &port,
        "-rsa",
        rsa,
        "-m",
        &calls,
        "-r",
        &rate,
        target,
    ];
    sipp(dir, &args, Duration::from_secs(40))
}

/// A request from a plain-SIP terminal on 127.0.0.1:`port` to
/// sip:service@127.0.0.1, outside any dialog (CSeq 1).
pub fn request(method: &str, call_id: &str, port: u16, branch: &str) -> Vec<u8> {
    format!(
        "{method} sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bK{branch};rport\r\n\
         Max-Forwards: 70\r\nFrom: <sip:alice@127.0.0.1>;tag=a\r\nTo: <sip:service@127.0.0.1>\r\n\
         Call-ID: {call_id}\r\nCSeq: 1 {method}\r\nContact: <sip:alice@127.0.0.1:{port}>\r\nContent-Length: 0\r\n\r\n"
    )
    .into_bytes()
}

pub fn sipp_scenario(name: &str) -> String {
    tests_dir().join("sipp").join(name).display().to_string()
}

/// A proxy configuration in front of `upstream_port`, listening on
/// `port` over both transports.
pub fn proxy_config(port: u16, upstream_port: u16) -> ProxyConfig {
    ProxyConfig {
        listen: vec![
            TransportAddr { transport: SipTransport::Udp, addr: SocketAddr::from(([127, 0, 0, 1], port)) },
            TransportAddr { transport: SipTransport::Tcp, addr: SocketAddr::from(([127, 0, 0, 1], port)) },
        ],
        upstream: Some(
            TransportAddr { transport: SipTransport::Udp, addr: SocketAddr::from(([127, 0, 0, 1], upstream_port)) }
                .into(),
        ),
        upstream_local: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        metrics: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        ..ProxyConfig::default()
    }
}

/// One instance of a farm (docs/deploy.md) listening on `port`, sending
/// upstream from `upstream_local`; the Path and Record-Route it writes name
/// `service` (the farm's terminal and upstream addresses: the first
/// instance's), or else its own addresses.
pub fn farm_config(
    port: u16,
    upstream_port: u16,
    upstream_local: u16,
    service: Option<(SocketAddr, SocketAddr)>,
) -> ProxyConfig {
    let mut c = proxy_config(port, upstream_port);
    c.upstream_local = Some(SocketAddr::from(([127, 0, 0, 1], upstream_local)));
    let (terminal, upstream) = service
        .unwrap_or((SocketAddr::from(([127, 0, 0, 1], port)), SocketAddr::from(([127, 0, 0, 1], upstream_local))));
    c.route_terminal = Some(terminal);
    c.route_upstream = Some(upstream);
    c
}

/// The body of an HTTP GET on 127.0.0.1.
pub async fn http_get(addr: SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()
}

/// A metric's value from the Prometheus text, by full series name.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.parse().ok()))
}

/// The sum of a metric's series, whatever their labels (0 when it has
/// none, as a labelled counter before its first count).
pub fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter_map(|l| l.strip_prefix(name))
        .filter(|rest| rest.starts_with('{') || rest.starts_with(' '))
        .filter_map(|rest| rest.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// `sigkit proxy` started with the configuration `make` builds for a free
/// port, trying another port when one was taken between `free_port`'s
/// probe and the bind (a resolver's or another test's ephemeral socket).
pub async fn start_proxy(make: impl Fn(u16) -> ProxyConfig) -> sigkit_proxy::runtime::Running {
    let mut last = None;
    for _ in 0..10 {
        match sigkit_proxy::runtime::start(make(free_port())).await {
            Ok(running) => return running,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => last = Some(e),
            Err(e) => panic!("sigkit proxy did not start: {e}"),
        }
    }
    panic!("sigkit proxy found no free port: {last:?}")
}

/// What the real parts logged in `dir`, for a failing test's message: the
/// requests Kamailio saw (its config logs one line each) and SIPp's
/// error logs.
pub fn diagnostics(dir: &Path) -> String {
    let mut out = String::new();
    let kamailio = std::fs::read_to_string(dir.join("kamailio.log")).unwrap_or_default();
    let requests: Vec<&str> = kamailio.lines().filter(|l| l.contains("request ")).collect();
    out.push_str(&format!("Kamailio saw {} requests, the last:\n", requests.len()));
    for l in &requests[requests.len().saturating_sub(30)..] {
        out.push_str(l);
        out.push('\n');
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.ends_with("_errors.log") {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            out.push_str(&format!("{name}:\n{}\n", &text[..text.len().min(4000)]));
        }
    }
    out
}

/// `r`'s value, or a panic with `r`'s error and [`diagnostics`] of `dir`.
pub fn or_explain<T>(r: Result<T, String>, dir: &Path) -> T {
    r.unwrap_or_else(|e| panic!("{e}\n{}", diagnostics(dir)))
}

/// An upstream played by the test on `socket`: every request it receives
/// but ACK goes to `answer`, and what that returns is sent back to the
/// request's sender, in order, until the task is aborted.
pub fn scripted_upstream(
    socket: tokio::net::UdpSocket,
    mut answer: impl FnMut(&sigkit_sip::Message<'_>) -> Vec<Vec<u8>> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok((n, from)) = socket.recv_from(&mut buf).await {
            let Ok(msg) = sigkit_sip::Message::parse(&buf[..n]) else { continue };
            if !msg.is_request() || msg.method() == Some("ACK") {
                continue;
            }
            for reply in answer(&msg) {
                let _ = socket.send_to(&reply, from).await;
            }
        }
    })
}

/// [`scripted_upstream`] on a fresh port of 127.0.0.1, and that port.
pub async fn scripted_upstream_on_any_port(
    answer: impl FnMut(&sigkit_sip::Message<'_>) -> Vec<Vec<u8>> + Send + 'static,
) -> (u16, tokio::task::JoinHandle<()>) {
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = socket.local_addr().unwrap().port();
    (port, scripted_upstream(socket, answer))
}
