//! The real peers of the tests on 127.0.0.1 (SIPp, Kamailio), started and
//! stopped by each test; after crates/sigkit-proxy/tests/support.
#![allow(dead_code)]
// Test support: a peer that cannot start, or a file that cannot be written, fails the test with a panic.
#![allow(clippy::unwrap_used)]

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sigkit_eval::peers::ProcessGroup;
use std::time::{Duration, Instant};

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

/// Fails the test when `tool` is missing, in CI or not: the tests that
/// call it cover what no other test does.
pub fn require(tool: &str) {
    let found =
        Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success());
    assert!(found, "{tool} is required by this test: apt-get install kamailio sip-tester (as .ci/run does)");
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

pub fn localhost(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sigkit-loadgen-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A child process group, ended when dropped, and its log.
pub struct Process {
    _group: ProcessGroup,
    pub log: PathBuf,
}

pub fn spawn(mut cmd: Command, dir: &Path, log: &str) -> Process {
    use std::os::unix::process::CommandExt;
    let path = dir.join(log);
    let file = std::fs::File::create(&path).unwrap();
    cmd.stdin(Stdio::null()).stdout(file.try_clone().unwrap()).stderr(file).current_dir(dir).process_group(0);
    Process { _group: ProcessGroup::new(cmd.spawn().unwrap()), log: path }
}

/// SIPp in the background (a UAS), with `args`.
pub fn sipp_background(dir: &Path, args: &[&str]) -> Process {
    let mut cmd = Command::new("sipp");
    cmd.args(args).args(["-nostdin", "-trace_err"]);
    let p = spawn(cmd, dir, "sipp-bg.log");
    // SIPp binds within a few ms; give it time on a busy machine.
    std::thread::sleep(Duration::from_millis(500));
    p
}

/// SIPp's totals from its final screen: (successful, failed).
pub fn sipp_totals(text: &str) -> (u64, u64) {
    let total = |label: &str| {
        text.lines()
            .filter(|l| l.contains(label))
            .filter_map(|l| l.split('|').nth(2).and_then(|c| c.trim().parse().ok()))
            .next_back()
            .unwrap_or(0)
    };
    (total("Successful call"), total("Failed call"))
}

/// Runs SIPp to its end (at most `limit`): its totals and output.
pub fn sipp_run(dir: &Path, args: &[String], limit: Duration) -> ((u64, u64), String) {
    let out = Command::new("timeout")
        .arg(limit.as_secs().to_string())
        .arg("sipp")
        .args(args)
        .args(["-nostdin"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (sipp_totals(&text), text)
}

/// Kamailio on 127.0.0.1:`port` (UDP and TCP) with the proxy tests'
/// configuration (record-routing proxy, registrar with digest
/// authentication, password "secret"), one worker: with several, a 180 can
/// overtake a 200.
pub fn kamailio(dir: &Path, port: u16) -> Process {
    let cfg = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sigkit-proxy/tests/kamailio/kamailio.cfg"),
    )
    .unwrap()
    .replace("LISTEN_PORT", &port.to_string())
    .replace("CHILDREN", "1");
    std::fs::write(dir.join("kamailio.cfg"), cfg).unwrap();
    let mut cmd = Command::new("kamailio");
    cmd.arg("-f").arg(dir.join("kamailio.cfg")).args(["-DD", "-E", "-w"]).arg(dir).arg("-P").arg(dir.join("k.pid"));
    let p = spawn(cmd, dir, "kamailio.log");
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "Kamailio did not start:\n{}",
            std::fs::read_to_string(&p.log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    p
}

/// How many requests of `method` Kamailio's log shows (its configuration
/// logs one line per request).
pub fn kamailio_saw(dir: &Path, method: &str) -> u64 {
    let log = std::fs::read_to_string(dir.join("kamailio.log")).unwrap_or_default();
    log.lines().filter(|l| l.contains(&format!("request {method} "))).count() as u64
}
