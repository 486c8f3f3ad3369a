//! Real SIP peers on 127.0.0.1 for `sigkit eval` and the tests: Kamailio
//! as a record-routing stateful proxy (the framework thesis's system under
//! test) and SIPp's built-in UAS, each started in a scratch directory with
//! its log there, and ended (its whole process group) when dropped.
//!
//! Kamailio's configuration is embedded ([`KAMAILIO_CFG`]), so nothing
//! outside sigkit is needed but the two programs on `PATH`.

use std::net::{SocketAddr, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A minimal Kamailio proxy: stateful (tm), record-routing, one UDP
/// listener on 127.0.0.1:`LISTEN_PORT`; it answers OPTIONS to itself (the
/// readiness probe) and relays everything else to its Request-URI, within
/// a dialog by its route set. One worker: with several, a 180 can overtake
/// the 200 that follows it.
pub const KAMAILIO_CFG: &str = include_str!("kamailio.cfg");

/// Where `tool` is on `PATH`, if it is.
pub fn find(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(tool)).find(|p| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// A UDP port on 127.0.0.1 that was free a moment ago.
pub fn free_udp_port() -> std::io::Result<u16> {
    Ok(UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A child process that leads its own process group (spawned with
/// `process_group(0)`), the whole group ended when dropped: SIGTERM, then
/// SIGKILL after 3 s for what is left (Kamailio's workers are in it).
#[derive(Debug)]
pub struct ProcessGroup {
    child: Child,
}

impl ProcessGroup {
    /// Takes over `child`, which leads its own process group.
    pub fn new(child: Child) -> ProcessGroup {
        ProcessGroup { child }
    }

    /// The leader's process ID (the group's ID too).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The leader's exit status if it has exited, without waiting.
    pub fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        self.child.try_wait()
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).stderr(Stdio::null()).status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &group]).stderr(Stdio::null()).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A peer: its process group, ended when dropped, where it listens and
/// its log.
#[derive(Debug)]
pub struct Peer {
    group: ProcessGroup,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its standard output and error.
    pub log: PathBuf,
}

impl Peer {
    /// The peer's process ID (its process group's leader).
    pub fn pid(&self) -> u32 {
        self.group.id()
    }
}

/// Why a peer did not start.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// A file could not be made or the peer's program could not be started: what
    /// (a path, or the command), and why.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// The peer did not answer on its address within its readiness deadline.
    #[error("{what} did not become ready in {secs} s; its log:\n{log}")]
    NotReady {
        /// The peer: "Kamailio", "SIPp", "SIPp's UAC".
        what: &'static str,
        /// The deadline it was given, seconds.
        secs: u64,
        /// Its log (stdout and stderr) so far.
        log: String,
    },
    /// The peer exited before it became ready (a configuration it refused, say).
    #[error("{what} exited at start ({status}); its log:\n{log}")]
    Exited {
        /// The peer: "Kamailio" or "SIPp".
        what: &'static str,
        /// How it exited.
        status: std::process::ExitStatus,
        /// Its log (stdout and stderr).
        log: String,
    },
}

fn spawn(mut cmd: Command, dir: &Path, log: &str, addr: SocketAddr) -> Result<Peer, PeerError> {
    let path = dir.join(log);
    let io = |e| PeerError::Io(path.display().to_string(), e);
    let file = std::fs::File::create(&path).map_err(io)?;
    let err = file.try_clone().map_err(io)?;
    cmd.stdin(Stdio::null()).stdout(file).stderr(err).current_dir(dir).process_group(0);
    let child = cmd.spawn().map_err(|e| PeerError::Io(format!("{cmd:?}"), e))?;
    Ok(Peer { group: ProcessGroup::new(child), addr, log: path })
}

fn not_ready(what: &'static str, peer: &Peer, secs: u64) -> PeerError {
    PeerError::NotReady { what, secs, log: std::fs::read_to_string(&peer.log).unwrap_or_default() }
}

/// The error of a peer that has already exited (a configuration it
/// refused, say), so that nobody waits out the readiness deadline.
fn exited(what: &'static str, peer: &mut Peer) -> Option<PeerError> {
    let status = peer.group.try_wait().ok().flatten()?;
    Some(PeerError::Exited { what, status, log: std::fs::read_to_string(&peer.log).unwrap_or_default() })
}

/// `dir` made, as an absolute path: a peer runs in it, and the paths it is
/// given must not be resolved a second time from there.
fn scratch_dir(dir: &Path) -> Result<PathBuf, PeerError> {
    std::fs::create_dir_all(dir).map_err(|e| PeerError::Io(dir.display().to_string(), e))?;
    std::path::absolute(dir).map_err(|e| PeerError::Io(dir.display().to_string(), e))
}

/// Kamailio with [`KAMAILIO_CFG`] on a free UDP port of 127.0.0.1, its
/// configuration, PID file and log in `dir`; returned once it answers an
/// OPTIONS.
pub fn kamailio(dir: &Path) -> Result<Peer, PeerError> {
    kamailio_with(dir, KAMAILIO_CFG)
}

/// [`kamailio`] with another configuration: `template`, in which every
/// `LISTEN_PORT` becomes the UDP port chosen. It must listen on
/// 127.0.0.1 at that port and answer an OPTIONS to itself with 200.
pub fn kamailio_with(dir: &Path, template: &str) -> Result<Peer, PeerError> {
    let dir = &scratch_dir(dir)?;
    let port = free_udp_port().map_err(|e| PeerError::Io("a free port".into(), e))?;
    let cfg = dir.join("kamailio.cfg");
    std::fs::write(&cfg, template.replace("LISTEN_PORT", &port.to_string()))
        .map_err(|e| PeerError::Io(cfg.display().to_string(), e))?;
    let mut cmd = Command::new("kamailio");
    // 256 MB of shared memory (`-m`, default 64): tm keeps each finished
    // transaction for its wait timer (5 s), and at 1,000 calls/s the
    // default pool runs out ("out of mem: new_t failed"), so Kamailio drops
    // INVITEs and the load steps measure its memory, not its capacity.
    cmd.arg("-f").arg(&cfg).args(["-m", "256", "-DD", "-E", "-w"]).arg(dir).arg("-P").arg(dir.join("kamailio.pid"));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut peer = spawn(cmd, dir, "kamailio.log", addr)?;
    let probe = UdpSocket::bind("127.0.0.1:0").map_err(|e| PeerError::Io("a probe socket".into(), e))?;
    let _ = probe.set_read_timeout(Some(Duration::from_millis(200)));
    let local = probe.local_addr().map_err(|e| PeerError::Io("a probe socket".into(), e))?;
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut buf = [0u8; 2048];
    let mut n = 0;
    while Instant::now() < deadline {
        if let Some(e) = exited("Kamailio", &mut peer) {
            return Err(e);
        }
        n += 1;
        let options = format!(
            "OPTIONS sip:127.0.0.1:{port} SIP/2.0\r\nVia: SIP/2.0/UDP {local};branch=z9hG4bK-probe{n}\r\n\
             Max-Forwards: 70\r\nFrom: <sip:probe@127.0.0.1>;tag=probe\r\nTo: <sip:127.0.0.1:{port}>\r\n\
             Call-ID: probe-{n}@127.0.0.1\r\nCSeq: {n} OPTIONS\r\nContent-Length: 0\r\n\r\n"
        );
        let _ = probe.send_to(options.as_bytes(), addr);
        if let Ok((len, _)) = probe.recv_from(&mut buf) {
            if buf[..len].starts_with(b"SIP/2.0 200") {
                return Ok(peer);
            }
        }
    }
    Err(not_ready("Kamailio", &peer, 15))
}

/// SIPp's built-in UAS (`-sn uas`) on a free UDP port of 127.0.0.1, its
/// log in `dir`; returned once its port is bound.
pub fn sipp_uas(dir: &Path) -> Result<Peer, PeerError> {
    let dir = &scratch_dir(dir)?;
    let port = free_udp_port().map_err(|e| PeerError::Io("a free port".into(), e))?;
    let mut cmd = Command::new("sipp");
    cmd.args(["-sn", "uas", "-i", "127.0.0.1", "-p", &port.to_string(), "-nostdin", "-trace_err"]);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut peer = spawn(cmd, dir, "sipp-uas.log", addr)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    // SIPp holds the port once it is listening: binding it fails then.
    while UdpSocket::bind(addr).is_ok() {
        if let Some(e) = exited("SIPp", &mut peer) {
            return Err(e);
        }
        if Instant::now() > deadline {
            return Err(not_ready("SIPp", &peer, 10));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(peer)
}

/// The first line of `program --version` style output (`-v` for Kamailio
/// and SIPp), for the report.
pub fn version(program: &str) -> String {
    Command::new(program)
        .arg("-v")
        .stdin(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
            text.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_string)
        })
        .unwrap_or_default()
}

/// What a run of SIPp's built-in UAC did, from its final screen. Its own
/// response times are not kept: SIPp's clock ticks in whole milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SippCalls {
    /// Calls SIPp counted as successful.
    pub successful: u64,
    /// Calls SIPp counted as failed.
    pub failed: u64,
    /// Calls still open when the run was ended at its limit: a transaction
    /// SIPp was still sending again (a lost BYE's 200, say), which could
    /// have run on for 64·T1 (RFC 3261 §17.1.2.2).
    pub unfinished: u64,
}

/// Runs SIPp's built-in UAC (`-sn uac`, no hold) from a free UDP port of
/// 127.0.0.1 to `target` through the outbound proxy `via`, `calls` calls
/// at `rate` calls/s, in `dir` (its log and traces). At `limit` the calls
/// still open are ended and counted as [`SippCalls::unfinished`].
pub fn sipp_uac(
    dir: &Path,
    target: SocketAddr,
    via: SocketAddr,
    rate: f64,
    calls: u64,
    limit: Duration,
) -> Result<SippCalls, PeerError> {
    let dir = &scratch_dir(dir)?;
    let port = free_udp_port().map_err(|e| PeerError::Io("a free port".into(), e))?;
    // A folder of its own per run keeps the runs' logs apart.
    let run_dir = dir.join(format!("sipp-uac-{port}"));
    std::fs::create_dir_all(&run_dir).map_err(|e| PeerError::Io(run_dir.display().to_string(), e))?;
    let mut cmd = Command::new("sipp");
    // No `-timeout`: SIPp 3.6 lets it wait for the calls still open (up to
    // 32 s each), where 3.7 aborts them; the limit is kept here instead.
    cmd.args(["-sn", "uac", "-i", "127.0.0.1", "-p", &port.to_string()])
        .args(["-r", &format!("{rate}"), "-m", &calls.to_string(), "-d", "0"])
        .args(["-rsa", &via.to_string(), "-nostdin", "-trace_err", &target.to_string()]);
    let mut peer = spawn(cmd, &run_dir, "sipp-uac.log", via)?;
    let deadline = Instant::now() + limit;
    let mut ended = false;
    loop {
        if let Ok(Some(_)) = peer.group.try_wait() {
            break;
        }
        let now = Instant::now();
        if now > deadline + Duration::from_secs(5) {
            return Err(not_ready("SIPp's UAC", &peer, limit.as_secs() + 5));
        }
        if now > deadline && !ended {
            // SIGTERM makes SIPp print its final screen, with the calls
            // still open as its current calls, and exit.
            let _ = Command::new("kill").args(["-TERM", &peer.group.id().to_string()]).status();
            ended = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let screen = std::fs::read_to_string(&peer.log).map_err(|e| PeerError::Io(peer.log.display().to_string(), e))?;
    Ok(sipp_totals(&screen))
}

/// SIPp's totals from its final screen: the last "Successful call" and
/// "Failed call" rows' cumulative column, and the last "Current Calls"
/// row's periodic one (the calls open when it ended).
fn sipp_totals(screen: &str) -> SippCalls {
    let last = |label: &str, column: usize| {
        screen
            .lines()
            .filter(|l| l.contains(label))
            .filter_map(|l| l.split('|').nth(column).and_then(|c| c.trim().parse().ok()))
            .next_back()
            .unwrap_or(0)
    };
    SippCalls {
        successful: last("Successful call", 2),
        failed: last("Failed call", 2),
        unfinished: last("Current Calls", 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sipps_final_screen_is_read() {
        let screen = "  Successful call    |        0                  |        12  \n\
                      Failed call        |        0                  |        0   \n\
                      ------ [+] Final statistics\n\
                      Current Calls      |        3                  |            \n\
                      Successful call    |        3                  |        30  \n\
                      Failed call        |        1                  |        2   \n";
        let totals = sipp_totals(screen);
        assert_eq!((totals.successful, totals.failed, totals.unfinished), (30, 2, 3));
    }
}
