//! `sigkit proxy` with its upstream given as a SIP URI, located by RFC
//! 3263 (NAPTR, SRV, A) at start-up with the DNS server that
//! SIGKIT_DNS_SERVER names: a DNS server of the test's own
//! (crates/sigkit-proxy/tests/dns_responder). A request then reaches the
//! upstream the records name; a name the DNS does not know stops the
//! proxy at start with the DNS error and the network's exit code (4).
#![allow(clippy::unwrap_used)] // a test fails by panicking

#[path = "../../sigkit-proxy/tests/dns_responder/mod.rs"]
mod dns_responder;

use std::net::{Ipv4Addr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dns_responder::{a, naptr, srv, DnsResponder};

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `sigkit proxy` listening on `port`, its resolver `dns`, with `args`.
fn proxy(dns: &DnsResponder, port: u16, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sigkit"));
    c.args(["proxy", "--listen", &format!("udp:127.0.0.1:{port}")])
        .args(args)
        .env("SIGKIT_DNS_SERVER", dns.addr.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// Sends an OPTIONS to the proxy at `port` until `upstream` receives it.
fn forwarded_to(upstream: &UdpSocket, port: u16) -> Option<String> {
    upstream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let terminal = UdpSocket::bind("127.0.0.1:0").unwrap();
    let t = terminal.local_addr().unwrap();
    let options = format!(
        "OPTIONS sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP {t};branch=z9hG4bK1;rport\r\nMax-Forwards: 70\r\n\
         From: <sip:a@127.0.0.1>;tag=1\r\nTo: <sip:127.0.0.1>\r\nCall-ID: dns-1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        terminal.send_to(options.as_bytes(), ("127.0.0.1", port)).unwrap();
        if let Ok(n) = upstream.recv(&mut buf) {
            return Some(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    None
}

#[test]
fn the_upstream_uri_is_located_by_naptr_srv_and_a() {
    let upstream = UdpSocket::bind("127.0.0.1:0").unwrap();
    let upstream_port = upstream.local_addr().unwrap().port();
    let dns = DnsResponder::start(vec![
        naptr("sbc.sigkit.test.", 10, 10, "SIP+D2U", "_sip._udp.sbc.sigkit.test."),
        srv("_sip._udp.sbc.sigkit.test.", 10, 0, upstream_port, "host.sigkit.test."),
        a("host.sigkit.test.", Ipv4Addr::LOCALHOST),
    ]);
    // From the configuration file's key, as from the flag.
    let dir = std::env::temp_dir().join(format!("sigkit-upstream-dns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("sigkit.toml");
    std::fs::write(&config, "upstream = \"sip:sbc.sigkit.test\"\n").unwrap();
    for args in [vec!["--upstream", "sip:sbc.sigkit.test"], vec!["--config", config.to_str().unwrap()]] {
        let port = free_port();
        let mut child = proxy(&dns, port, &args).spawn().unwrap();
        let forwarded = forwarded_to(&upstream, port);
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let forwarded = forwarded.unwrap_or_else(|| panic!("{args:?}: nothing reached the upstream: {stderr}"));
        assert!(forwarded.starts_with("OPTIONS sip:127.0.0.1 SIP/2.0\r\n"), "{forwarded}");
        assert!(stderr.contains("upstream located (RFC 3263)"), "{stderr}");
        assert!(stderr.contains(&format!("127.0.0.1:{upstream_port}")), "{stderr}");
    }
    let asked = dns.queries();
    assert!(asked.iter().any(|q| q.0 == "sbc.sigkit.test" && q.1.to_string() == "NAPTR"), "{asked:?}");
    assert!(asked.iter().any(|q| q.0 == "_sip._udp.sbc.sigkit.test" && q.1.to_string() == "SRV"), "{asked:?}");
}

#[test]
fn an_upstream_the_dns_does_not_know_stops_the_proxy_with_code_4() {
    let dns = DnsResponder::start(vec![a("host.sigkit.test.", Ipv4Addr::LOCALHOST)]);
    let started = Instant::now();
    let out = proxy(&dns, free_port(), &["--upstream", "sip:missing.sigkit.test"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("sigkit proxy: cannot resolve missing.sigkit.test: no such name"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}
