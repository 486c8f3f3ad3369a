//! `sigkit proxy` as a process: a bad configuration is refused at start
//! with its line and reason; a running proxy logs the outbound proxy URI
//! for its terminals, serves /metrics and stops cleanly on SIGTERM.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::io::Read;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::sigkit;

#[test]
fn a_bad_configuration_is_refused_with_its_line() {
    let dir = std::env::temp_dir().join(format!("sigkit-proxy-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sigkit.toml");
    std::fs::write(
        &path,
        "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"udp:127.0.0.1:5070\"\n\n[sigcomp]\ncpb = 17\n",
    )
    .unwrap();
    let run = sigkit(&["proxy", "--config", path.to_str().unwrap()], b"");
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(run.stderr.contains("sigkit.toml:5: sigcomp.cpb: ") && run.stderr.contains("17"), "{}", run.stderr);
    std::fs::write(&path, "listen = [\"udp:127.0.0.1:5060\"]\n\n[sigcomp]\nalgorithm = \"zstd\"\n").unwrap();
    let run = sigkit(&["proxy", "--config", path.to_str().unwrap(), "--upstream", "udp:127.0.0.1:5070"], b"");
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(run.stderr.contains("sigkit.toml:4: sigcomp.algorithm: ") && run.stderr.contains("zstd"), "{}", run.stderr);
    // The proxy speaks UDP to its upstream: a TCP one is refused, from
    // the file with its line, or from the command line.
    std::fs::write(&path, "listen = [\"udp:127.0.0.1:5060\"]\nupstream = \"tcp:127.0.0.1:5070\"\n").unwrap();
    let run = sigkit(&["proxy", "--config", path.to_str().unwrap()], b"");
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(run.stderr.contains("sigkit.toml:2: upstream: ") && run.stderr.contains("not supported"), "{}", run.stderr);
    let run = sigkit(&["proxy", "--config", path.to_str().unwrap(), "--upstream", "tcp:127.0.0.1:5071"], b"");
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("sigkit proxy: upstream: tcp:127.0.0.1:5071") && run.stderr.contains("UDP"),
        "{}",
        run.stderr
    );
    std::fs::write(&path, "listen = [\"udp:127.0.0.1:5060\"]\n[sigcomp]\nmechanism = \"shared\"\neffort = 3\n")
        .unwrap();
    let run = sigkit(&["proxy", "--config", path.to_str().unwrap()], b"");
    assert_eq!(run.code, Some(3));
    assert!(run.stderr.contains("sigkit.toml:4:") && run.stderr.contains("effort"), "{}", run.stderr);
    let run = sigkit(&["proxy", "--listen", "udp:127.0.0.1:5060"], b"");
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("upstream"), "{}", run.stderr);
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn the_proxy_serves_metrics_and_stops_on_sigterm() {
    let (port, metrics) = (free_port(), free_port());
    let upstream = UdpSocket::bind("127.0.0.1:0").unwrap();
    upstream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["proxy", "--listen", &format!("udp:127.0.0.1:{port}")])
        .args(["--upstream", &format!("udp:{}", upstream.local_addr().unwrap())])
        .args(["--metrics", &format!("127.0.0.1:{metrics}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let scrape = || common::scrape_metrics(SocketAddr::from(([127, 0, 0, 1], metrics)));
    let mut first = None;
    while first.is_none() && Instant::now() < deadline {
        first = scrape();
        std::thread::sleep(Duration::from_millis(50));
    }
    let first = first.expect("metrics served");
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    assert!(first.contains("sigkit_proxy_messages_received_total{side=\"terminal\"} 0"), "{first}");

    // A plain SIP request from a terminal reaches the upstream, counted.
    let terminal = UdpSocket::bind("127.0.0.1:0").unwrap();
    let t = terminal.local_addr().unwrap();
    let options = format!(
        "OPTIONS sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP {t};branch=z9hG4bK1;rport\r\nMax-Forwards: 70\r\n\
         From: <sip:a@127.0.0.1>;tag=1\r\nTo: <sip:127.0.0.1>\r\nCall-ID: cli-1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
    );
    terminal.send_to(options.as_bytes(), ("127.0.0.1", port)).unwrap();
    let mut buf = [0u8; 4096];
    let (n, _) = upstream.recv_from(&mut buf).expect("the request reaches the upstream");
    let forwarded = String::from_utf8_lossy(&buf[..n]);
    assert!(forwarded.starts_with("OPTIONS sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:"), "{forwarded}");
    assert!(forwarded.contains("received=127.0.0.1") && forwarded.contains("Max-Forwards: 69"), "{forwarded}");
    let after = scrape().unwrap();
    assert!(after.contains("sigkit_proxy_messages_received_total{side=\"terminal\"} 1"), "{after}");
    assert!(after.contains("sigkit_proxy_messages_sent_total{side=\"upstream\"} 1"), "{after}");
    // Its handling time is in the histogram: one observation, in every
    // bucket from the one it fell in up to +Inf.
    assert!(after.contains("sigkit_proxy_handling_seconds_count 1\n"), "{after}");
    assert!(after.contains("sigkit_proxy_handling_seconds_bucket{le=\"+Inf\"} 1\n"), "{after}");
    assert!(after.contains("sigkit_proxy_handling_seconds_bucket{le=\"0.1\"} 1\n"), "{after}");

    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("SIGTERM"), "{err}");
    // It told how to configure terminals: its outbound proxy URI, with its
    // sigcomp-id (docs/deploy.md, "Configuring terminals").
    let uri = format!("sip:127.0.0.1:{port};lr;comp=sigcomp;sigcomp-id=urn%3auuid%3a");
    assert!(err.contains(&uri), "{err}");
}
