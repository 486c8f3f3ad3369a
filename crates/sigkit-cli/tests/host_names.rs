//! Host names where a command takes HOST:PORT: `localhost` is resolved
//! (load's remote host, capacity's target, proxy's listen address), and a
//! name the DNS does not know is reported as that ("cannot resolve NAME:
//! ...", exit code 4, docs/cli.md), not as a text that is not HOST:PORT.
//! The unknown name is under `.invalid`, which never resolves (RFC 6761
//! §6.4).
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::sigkit;

const UNKNOWN: &str = "sigkit-test.invalid";

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn load_calls_a_uas_named_localhost() {
    let port = free_port();
    let uas = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["load", "-sn", "uas", "-i", "127.0.0.1", "-p", &port.to_string(), "-m", "5", "-timeout", "30s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let uac = sigkit(
        &["load", "-sn", "uac", "-r", "20", "-m", "5", "-timeout", "30s", "--json", &format!("localhost:{port}")],
        b"",
    );
    assert_eq!(uac.code, Some(0), "{}", uac.stderr);
    let report: serde_json::Value = serde_json::from_slice(&uac.stdout).unwrap();
    assert_eq!(report["summary"]["successful_calls"], 5, "{}", uac.stderr);
    let uas = uas.wait_with_output().unwrap();
    assert!(uas.status.success());
}

#[test]
fn capacity_resolves_its_target() {
    // Nothing listens there: the search stops at once, naming the address
    // the name resolved to.
    let port = free_port();
    let run = sigkit(&["capacity", "--target", &format!("localhost:{port}")], b"");
    assert_eq!(run.code, Some(4), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("no answer from 127.0.0.1:{port}: ")), "{}", run.stderr);
}

/// The proxy with its listen address and its upstream given by name: a
/// request sent to 127.0.0.1 reaches the upstream.
#[test]
fn the_proxy_listens_on_and_forwards_to_localhost() {
    let upstream = UdpSocket::bind("127.0.0.1:0").unwrap();
    upstream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["proxy", "--listen", &format!("udp:localhost:{port}"), "--upstream"])
        .arg(format!("udp:localhost:{}", upstream.local_addr().unwrap().port()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let terminal = UdpSocket::bind("127.0.0.1:0").unwrap();
    let t = terminal.local_addr().unwrap();
    let options = format!(
        "OPTIONS sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP {t};branch=z9hG4bK1;rport\r\nMax-Forwards: 70\r\n\
         From: <sip:a@127.0.0.1>;tag=1\r\nTo: <sip:127.0.0.1>\r\nCall-ID: names-1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
    );
    let mut buf = [0u8; 4096];
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let forwarded = loop {
        // Sent again until the proxy is up.
        terminal.send_to(options.as_bytes(), ("127.0.0.1", port)).unwrap();
        if let Ok(n) = upstream.recv(&mut buf) {
            break Some(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        if std::time::Instant::now() > deadline {
            break None;
        }
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let forwarded = forwarded.expect("the request reaches the upstream");
    assert!(forwarded.starts_with("OPTIONS sip:127.0.0.1 SIP/2.0\r\n"), "{forwarded}");
}

/// Each command that takes HOST:PORT reports an unknown name as a DNS
/// failure, with the network's exit code, the same for all.
#[test]
fn an_unknown_name_is_a_dns_failure_in_every_command() {
    let at = format!("{UNKNOWN}:5060");
    let listen = format!("udp:{at}");
    let runs = [
        vec!["load", "-sn", "uac", "-m", "1", at.as_str()],
        vec!["load", "-sn", "uac", "-m", "1", "-rsa", at.as_str(), "127.0.0.1:5060"],
        vec!["capacity", "--target", at.as_str()],
        vec!["capacity", "--through", at.as_str()],
        vec!["proxy", "--listen", "udp:127.0.0.1:0", "--upstream", "udp:127.0.0.1:5070", "--metrics", at.as_str()],
        vec!["proxy", "--listen", listen.as_str(), "--upstream", "udp:127.0.0.1:5070"],
    ];
    for args in runs {
        let run = sigkit(&args, b"");
        assert_eq!(run.code, Some(4), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(&format!("cannot resolve {UNKNOWN}: ")), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("not a host:port"), "{args:?}: {}", run.stderr);
    }
    // A text that is no HOST:PORT at all is still a usage error.
    for args in [vec!["load", "-sn", "uac", "nowhere"], vec!["capacity", "--target", "nowhere"]] {
        let run = sigkit(&args, b"");
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("not a host:port"), "{args:?}: {}", run.stderr);
    }
}
