//! `sigkit proxy` at its descriptor limit (docs/deploy.md, "TCP limits"):
//! run with `ulimit -n 64` and a connection cap above it, it is sent more
//! idle connections than it has descriptors. Accepting then fails with
//! EMFILE while connections wait in the listener's backlog; the accept
//! loop must back off rather than spin on it, count it, and still let a
//! terminal in (by closing the least recently active connection), and the
//! idle timeout must give the descriptors back.
#![allow(clippy::unwrap_used)] // a test fails by panicking

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The proxy process, killed when dropped.
struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An upstream answering every request but ACK with 200, on a thread.
fn answering_upstream() -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            let request = String::from_utf8_lossy(&buf[..n]);
            if request.starts_with("SIP/2.0 ") || request.starts_with("ACK ") {
                continue;
            }
            // RFC 3261 §8.2.6.2: the response copies these headers.
            let copied: String = request
                .lines()
                .filter(|l| ["Via:", "From:", "To:", "Call-ID:", "CSeq:"].iter().any(|h| l.starts_with(h)))
                .map(|l| format!("{l}\r\n"))
                .collect();
            let ok = format!("SIP/2.0 200 OK\r\n{copied}Content-Length: 0\r\n\r\n");
            let _ = socket.send_to(ok.as_bytes(), from);
        }
    });
    addr
}

/// The process's user and system CPU time, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name in parentheses: utime and stime are
    // the 14th and 15th of the line (proc(5)).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn clock_ticks_per_second() -> u64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// The metrics page, or `None` while the proxy cannot accept the scrape.
fn scrape(metrics: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", metrics)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.starts_with("HTTP/1.1 200").then_some(out)
}

fn metric(text: &str, series: &str) -> f64 {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok()).unwrap_or(0.0)
}

/// A terminal's OPTIONS over a new connection: the response's status.
fn options_over_new_connection(proxy: SocketAddr, call_id: &str) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&proxy, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    let local = s.local_addr().ok()?;
    let req = format!(
        "OPTIONS sip:service@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP {local};branch=z9hG4bK{call_id}\r\n\
         Max-Forwards: 70\r\nFrom: <sip:t@127.0.0.1>;tag=t1\r\nTo: <sip:service@127.0.0.1>\r\n\
         Call-ID: {call_id}\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
    );
    s.write_all(req.as_bytes()).ok()?;
    // The response has no body: it ends with its header section.
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return None,
        }
    }
    let text = String::from_utf8_lossy(&got);
    text.strip_prefix("SIP/2.0 ")?.get(..3)?.parse().ok()
}

#[test]
fn at_its_descriptor_limit_the_proxy_backs_off_counts_and_still_lets_a_terminal_in() {
    let (port, metrics) = (free_port(), free_port());
    let upstream = answering_upstream();
    let dir = std::env::temp_dir().join(format!("sigkit-proxy-descriptors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("sigkit.toml");
    std::fs::write(
        &config,
        format!(
            "listen = [\"tcp:127.0.0.1:{port}\"]\nupstream = \"udp:{upstream}\"\nmetrics = \"127.0.0.1:{metrics}\"\n\
             threads = 2\n[tcp]\nmax_connections = 1000\nmax_connections_per_source = 1000\nidle_timeout_s = 4\n"
        ),
    )
    .unwrap();
    let child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" proxy --config \"$1\"")
        .arg(env!("CARGO_BIN_EXE_sigkit"))
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let proxy = Proxy(child);
    let pid = proxy.0.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while scrape(metrics).is_none() {
        assert!(Instant::now() < deadline, "the proxy did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    // Twice as many idle connections as the proxy has descriptors: the
    // kernel completes them all, the proxy can accept only some.
    let idle: Vec<TcpStream> = (0..128).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(500));
    let ticks = clock_ticks_per_second();
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let cpu = (cpu_ticks(pid) - before) as f64 / ticks as f64;
    assert!(cpu < 0.15, "the proxy used {cpu:.2} s of CPU in 2 s at its descriptor limit");

    // A terminal still gets in while the idle connections are held.
    assert_eq!(options_over_new_connection(addr, "at-limit"), Some(200), "no terminal got in at the limit");

    // The idle timeout gives the descriptors back: the metrics can be
    // scraped again and tell what happened.
    let deadline = Instant::now() + Duration::from_secs(15);
    let text = loop {
        if let Some(t) = scrape(metrics).filter(|t| metric(t, "sigkit_proxy_tcp_connections") < 8.0) {
            break t;
        }
        assert!(Instant::now() < deadline, "the idle connections were not closed");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(metric(&text, r#"sigkit_proxy_tcp_accept_errors_total{kind="emfile"}"#) >= 1.0, "{text}");
    assert!(metric(&text, r#"sigkit_proxy_tcp_connections_closed_total{reason="descriptors"}"#) >= 1.0, "{text}");
    assert!(metric(&text, r#"sigkit_proxy_tcp_connections_closed_total{reason="idle"}"#) >= 1.0, "{text}");
    assert_eq!(options_over_new_connection(addr, "after-idle"), Some(200), "no terminal got in after the timeout");
    drop(idle);
}
