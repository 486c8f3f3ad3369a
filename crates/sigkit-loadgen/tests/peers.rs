//! `sigkit load` against real SIPp and Kamailio on 127.0.0.1: our UAC
//! against SIPp's built-in UAS, SIPp's built-in UAC against our UAS, and
//! the framework thesis's chain UAC → Kamailio (record-routing) → UAS.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sigkit_loadgen::{EngineConfig, LoadConfig, Prepared, Role};

/// Whether the test may go on without `tool` (never in CI, where `.ci/run`
/// installs it).
fn have(tool: &str) -> bool {
    let found =
        Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success());
    assert!(found || std::env::var_os("CI").is_none(), "{tool} is required in CI (.ci/run installs it)");
    if !found {
        eprintln!("skipping: {tool} is not installed");
    }
    found
}

fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut given = GIVEN.lock().unwrap();
        if !given.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sigkit-loadgen-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A child process group, ended when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let pid = self.0.id().to_string();
        let _ = Command::new("kill").args(["-TERM", "--", &format!("-{pid}")]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(mut cmd: Command, dir: &Path, log: &str) -> Process {
    use std::os::unix::process::CommandExt;
    let file = std::fs::File::create(dir.join(log)).unwrap();
    cmd.stdin(Stdio::null()).stdout(file.try_clone().unwrap()).stderr(file).current_dir(dir).process_group(0);
    Process(cmd.spawn().unwrap())
}

/// SIPp's totals from its final screen.
fn sipp_totals(text: &str) -> (u64, u64) {
    let total = |label: &str| {
        text.lines()
            .filter(|l| l.contains(label))
            .filter_map(|l| l.split('|').nth(2).and_then(|c| c.trim().parse().ok()))
            .next_back()
            .unwrap_or(0)
    };
    (total("Successful call"), total("Failed call"))
}

const CALLS: u64 = 20;

fn uac(remote: SocketAddr, next_hop: Option<SocketAddr>) -> LoadConfig {
    LoadConfig {
        role: Role::Uac,
        engine: EngineConfig {
            remote: Some(remote),
            next_hop,
            hold: Duration::from_millis(50),
            ..LoadConfig::default().engine
        },
        rate: 20.0,
        max_calls: Some(CALLS),
        duration: Some(Duration::from_secs(60)),
        ..LoadConfig::default()
    }
}

fn uas() -> LoadConfig {
    LoadConfig {
        role: Role::Uas,
        max_calls: Some(CALLS),
        duration: Some(Duration::from_secs(60)),
        ..LoadConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_uac_completes_its_calls_with_sipps_uas() {
    if !have("sipp") {
        return;
    }
    let dir = scratch("uac-sipp");
    let port = free_port();
    let mut cmd = Command::new("sipp");
    cmd.args(["-sn", "uas", "-i", "127.0.0.1", "-p", &port.to_string(), "-m", &CALLS.to_string(), "-nostdin"]);
    let sipp = spawn(cmd, &dir, "sipp.log");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let report = sigkit_loadgen::run(uac(SocketAddr::from(([127, 0, 0, 1], port)), None), None).await.unwrap();
    let s = &report.summary;
    assert_eq!((s.successful_calls, s.failed_calls), (CALLS, 0), "{s:?}");
    assert_eq!(s.setup_ms.count, CALLS, "a set-up delay per call");
    assert!(s.setup_ms.p50 > 0.0 && s.setup_ms.p50 <= s.setup_ms.p99);
    assert_eq!(s.ringing_ms.count, CALLS, "SIPp's UAS rings first");
    drop(sipp);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sipps_uac_completes_its_calls_with_our_uas() {
    if !have("sipp") {
        return;
    }
    let dir = scratch("sipp-uas");
    let server = Prepared::bind(uas()).await.unwrap();
    let addr = server.local_addr();
    let ours = tokio::spawn(server.run(None));
    let out = tokio::task::spawn_blocking(move || {
        Command::new("timeout")
            .args(["60", "sipp", "-sn", "uac", "-i", "127.0.0.1", "-p", &free_port().to_string()])
            .args(["-r", "20", "-m", &CALLS.to_string(), "-nostdin", &addr.to_string()])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(sipp_totals(&text), (CALLS, 0), "SIPp:\n{text}");
    let report = ours.await.unwrap().unwrap();
    assert_eq!((report.summary.successful_calls, report.summary.failed_calls), (CALLS, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_cross_kamailio_as_in_seed_004s_chain() {
    if !(have("kamailio") && have("sipp")) {
        return;
    }
    let dir = scratch("chain");
    let kport = free_port();
    let cfg = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sigkit-proxy/tests/kamailio/kamailio.cfg"),
    )
    .unwrap()
    .replace("LISTEN_PORT", &kport.to_string())
    .replace("CHILDREN", "1");
    std::fs::write(dir.join("kamailio.cfg"), cfg).unwrap();
    let mut cmd = Command::new("kamailio");
    cmd.arg("-f").arg(dir.join("kamailio.cfg")).args(["-DD", "-E", "-w"]).arg(&dir).arg("-P").arg(dir.join("k.pid"));
    let _kamailio = spawn(cmd, &dir, "kamailio.log");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", kport)).is_err() {
        assert!(Instant::now() < deadline, "Kamailio did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let server = Prepared::bind(uas()).await.unwrap();
    let uas_addr = server.local_addr();
    let ours = tokio::spawn(server.run(None));
    let kamailio = SocketAddr::from(([127, 0, 0, 1], kport));
    let report = sigkit_loadgen::run(uac(uas_addr, Some(kamailio)), None).await.unwrap();
    let s = &report.summary;
    assert_eq!((s.successful_calls, s.failed_calls), (CALLS, 0), "{s:?}");
    let uas_report = ours.await.unwrap().unwrap();
    let u = &uas_report.summary;
    assert_eq!(u.successful_calls, CALLS);
    // The UAS received each call's INVITE, ACK and BYE: Kamailio relays
    // an ACK that has no route set (the UAS, as SIPp's built-in one, does
    // not copy Record-Route) by its Request-URI rather than dropping it.
    assert_eq!(u.messages_received - u.retransmissions_received, 3 * CALLS, "{u:?}");
    // Every request crossed Kamailio (its configuration logs each one),
    // the BYEs by the Record-Route route set.
    let log = std::fs::read_to_string(dir.join("kamailio.log")).unwrap();
    let seen = |m: &str| log.lines().filter(|l| l.contains(&format!("request {m} "))).count() as u64;
    assert_eq!(seen("INVITE"), CALLS, "{log}");
    assert_eq!(seen("BYE"), CALLS);
    assert_eq!(seen("ACK"), CALLS);
}
