//! `sigkit proxy` observed as an operator observes a SIP server, on real
//! sockets on 127.0.0.1: a SigComp terminal played by the test registers
//! through the proxy with a stand-in registrar that answers 200.
//!
//! - At debug level with `--log-format json`, standard error is JSON lines
//!   with one event per SIP message each way (Call-ID, method or status,
//!   direction, shard and compartment, SIP and SigComp bytes, UDVM cycles) and per
//!   NACK sent or received (RFC 4077).
//! - A log written to a pipe carries no ANSI escape codes.
//! - `sigkit proxy ctl` prints the proxy's status, the compartment and the
//!   registration the REGISTER left.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::io::Read;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::sigkit;
use serde_json::Value;
use sha1::{Digest, Sha1};
use sigcomp::{CompartmentId, Nack, Params, Reason, Transport};
use sigcomp_compress::{Config, Endpoint, EndpointConfig, Mechanism, Received};

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A stand-in registrar on a thread of its own, until dropped: every
/// request but ACK is answered 200 OK, a REGISTER's with its Contact and
/// the REGISTER's Expires (RFC 3261 §10.3 step 8).
struct Registrar {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Registrar {
    fn start() -> Registrar {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let addr = socket.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !stopped.load(Ordering::Relaxed) {
                let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
                let Ok(msg) = sigkit_sip::Message::parse(&buf[..n]) else { continue };
                if !msg.is_request() || msg.method() == Some("ACK") {
                    continue;
                }
                let text = String::from_utf8_lossy(&buf[..n]).to_string();
                let contact = text.lines().find_map(|l| l.strip_prefix("Contact: ")).unwrap_or_default();
                let binding = format!("{contact};expires={}", msg.expires().ok().flatten().unwrap_or(3600));
                let extra: Vec<(&str, &str)> =
                    if msg.method() == Some("REGISTER") { vec![("Contact", binding.as_str())] } else { Vec::new() };
                let ok = sigkit_sip::proxy::build_response(&msg, 200, "OK", Some("up"), &extra).unwrap();
                socket.send_to(&ok, from).unwrap();
            }
        });
        Registrar { addr, stop, thread: Some(thread) }
    }
}

impl Drop for Registrar {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `sigkit proxy` as a process, its standard error a pipe read to the end
/// by a thread.
struct Proxy {
    child: Child,
    stderr: Option<JoinHandle<Vec<u8>>>,
    sip: SocketAddr,
    metrics: SocketAddr,
}

impl Proxy {
    /// Started in front of `upstream` with `extra` arguments and
    /// `env` variables, ready once its metrics listener accepts.
    fn start(upstream: SocketAddr, extra: &[&str], env: &[(&str, &str)]) -> Proxy {
        let (port, metrics) = (free_port(), free_port());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sigkit"));
        cmd.args(["proxy", "--listen", &format!("udp:127.0.0.1:{port}"), "--threads", "1"])
            .args(["--upstream", &format!("udp:{upstream}"), "--metrics", &format!("127.0.0.1:{metrics}")])
            .args(extra)
            .env_remove("RUST_LOG")
            .env_remove("NO_COLOR")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = pipe.read_to_end(&mut out);
            out
        });
        let proxy = Proxy {
            child,
            stderr: Some(stderr),
            sip: SocketAddr::from(([127, 0, 0, 1], port)),
            metrics: SocketAddr::from(([127, 0, 0, 1], metrics)),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(proxy.metrics).is_err() {
            assert!(Instant::now() < deadline, "the proxy did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        proxy
    }

    /// A counter's value from /metrics.
    fn metric(&self, series: &str) -> f64 {
        let text = common::scrape_metrics(self.metrics).expect("the metrics page");
        common::series_value(&text, series).unwrap_or(0.0)
    }

    /// Stops it with SIGTERM: everything it wrote to standard error.
    fn stop(mut self) -> String {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status:?}");
        let err = self.stderr.take().unwrap().join().unwrap();
        String::from_utf8(err).unwrap()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A SigComp terminal over UDP (RFC 5049): one compartment for the proxy,
/// its messages compressed and the proxy's decompressed and accepted.
struct Terminal {
    socket: UdpSocket,
    endpoint: Endpoint,
    proxy: SocketAddr,
}

const COMPARTMENT: CompartmentId = CompartmentId(1);

impl Terminal {
    fn new(proxy: SocketAddr) -> Terminal {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let params = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
        let config = Config { mechanism: Mechanism::Dynamic, transport: Transport::Message, ..Config::default() };
        let endpoint = Endpoint::new(EndpointConfig::new(params, params, config)).unwrap();
        Terminal { socket, endpoint, proxy }
    }

    fn addr(&self) -> SocketAddr {
        self.socket.local_addr().unwrap()
    }

    /// Its SigComp identifier (RFC 5049 §6.1), a UUID URN.
    fn instance(&self) -> String {
        format!("urn:uuid:00000000-0000-4000-8000-{:012x}", self.addr().port())
    }

    /// A REGISTER of sip:alice@127.0.0.1 for `expires` seconds, to the
    /// proxy as its outbound proxy.
    fn register(&self, call_id: &str, expires: u32) -> Vec<u8> {
        let (me, proxy, id) = (self.addr(), self.proxy, self.instance());
        format!(
            "REGISTER sip:127.0.0.1 SIP/2.0\r\n\
             Via: SIP/2.0/UDP {me};branch=z9hG4bK-{call_id};rport;comp=sigcomp;sigcomp-id=\"<{id}>\"\r\n\
             Max-Forwards: 70\r\nRoute: <sip:{proxy};lr;comp=sigcomp>\r\n\
             From: <sip:alice@127.0.0.1>;tag=r1\r\nTo: <sip:alice@127.0.0.1>\r\nCall-ID: {call_id}\r\n\
             CSeq: 1 REGISTER\r\nContact: <sip:alice@{me};comp=sigcomp>;+sip.instance=\"<{id}>\"\r\n\
             Expires: {expires}\r\nContent-Length: 0\r\n\r\n"
        )
        .into_bytes()
    }

    /// Sends `sip` compressed: the SigComp message.
    fn send(&mut self, sip: &[u8]) -> Vec<u8> {
        let out = self.endpoint.compress(Instant::now(), COMPARTMENT, sip).unwrap();
        self.socket.send_to(&out.message, self.proxy).unwrap();
        out.message
    }

    /// The next datagram from the proxy, as it came.
    fn recv(&self) -> Vec<u8> {
        let mut buf = vec![0u8; 65536];
        let (n, _) = self.socket.recv_from(&mut buf).expect("a datagram from the proxy");
        buf[..n].to_vec()
    }

    /// The next SigComp message from the proxy, as it came and
    /// decompressed.
    fn receive(&mut self) -> (Vec<u8>, String) {
        let raw = self.recv();
        let Received::Message(incoming) = self.endpoint.receive(&raw, Transport::Message).unwrap() else {
            panic!("a NACK from the proxy")
        };
        let sip = self.endpoint.accept(Instant::now(), incoming, COMPARTMENT).message;
        (raw, String::from_utf8(sip).unwrap())
    }

    /// Registers (REGISTER, its 200 OK): the SigComp messages each way
    /// and the SIP ones.
    fn registered(&mut self, call_id: &str) -> Exchange {
        let register = self.register(call_id, 300);
        let sent = self.send(&register);
        let (received, ok) = self.receive();
        assert!(ok.starts_with("SIP/2.0 200 OK\r\n"), "{ok}");
        Exchange { register, sent, received, ok }
    }
}

/// A REGISTER and its 200 OK, as SIP and as SigComp.
struct Exchange {
    register: Vec<u8>,
    sent: Vec<u8>,
    received: Vec<u8>,
    ok: String,
}

/// The message events (target `sigkit_proxy::messages`) of a JSON-lines
/// log, every line of which must be a JSON object.
fn message_events(log: &str) -> Vec<Value> {
    log.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not a JSON line: {l:?}: {e}")))
        .filter(|e| e["target"] == "sigkit_proxy::messages")
        .collect()
}

/// The position and fields of the first event of `events` whose fields
/// have every `(key, value)` of `want`.
fn event<'a>(events: &'a [Value], want: &[(&str, Value)]) -> (usize, &'a Value) {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| (i, &e["fields"]))
        .find(|(_, f)| want.iter().all(|(k, v)| f[*k] == *v))
        .unwrap_or_else(|| panic!("no event with {want:?} in {events:#?}"))
}

#[test]
fn debug_json_logs_have_an_event_per_sip_message_and_nack() {
    let registrar = Registrar::start();
    let proxy = Proxy::start(registrar.addr, &["--log-format", "json", "--log-level", "debug"], &[]);
    let mut t = Terminal::new(proxy.sip);
    let x = t.registered("obs-json-1");

    // A message naming a state the proxy does not hold is NACKed
    // STATE_NOT_FOUND (RFC 4077 §3.2).
    let unknown_state = [0xF9, 1, 2, 3, 4, 5, 6, 0, 0];
    t.socket.send_to(&unknown_state, proxy.sip).unwrap();
    let nack = Nack::parse(&t.recv()).expect("a NACK");
    assert_eq!(nack.reason, Reason::StateNotFound);
    // The terminal NACKs the proxy's 200 OK, naming it by its SHA-1.
    let sha1: [u8; 20] = Sha1::digest(&x.received).as_slice().try_into().unwrap();
    let ours = Nack {
        reason: Reason::UserRequested,
        opcode: 0,
        pc: 0,
        message_sha1: sha1,
        details: Vec::new(),
        returned_feedback: None,
    };
    t.socket.send_to(&ours.emit(), proxy.sip).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while proxy.metric("sigkit_proxy_nacks_received_total{reason=\"USER_REQUESTED\"}") < 1.0 {
        assert!(Instant::now() < deadline, "the proxy did not receive the NACK");
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = proxy.stop();
    assert!(!log.contains('\x1b'), "escape codes in a log to a pipe:\n{log}");
    let events = message_events(&log);
    for e in &events {
        assert_eq!(e["level"], "DEBUG");
        assert_eq!(e["fields"]["message"], "SIP message");
    }

    let call =
        |direction: &str| -> [(&str, Value); 2] { [("direction", direction.into()), ("call_id", "obs-json-1".into())] };
    let me = t.addr().to_string();
    let (arrived, from_terminal) = event(&events, &call("from_terminal"));
    assert_eq!(from_terminal["method"], "REGISTER");
    assert_eq!((&from_terminal["peer"], &from_terminal["transport"]), (&Value::from(me.as_str()), &Value::from("udp")));
    assert_eq!(from_terminal["sip_bytes"], x.register.len());
    assert_eq!(from_terminal["sigcomp_bytes"], x.sent.len());
    assert!(from_terminal["cycles"].as_u64().unwrap() > 0, "{from_terminal}");
    let compartment = from_terminal["compartment"].as_u64().expect("the terminal's compartment");
    assert_eq!(from_terminal["shard"], 0, "one worker thread, one shard");

    let (forwarded, to_upstream) = event(&events, &call("to_upstream"));
    assert_eq!(to_upstream["method"], "REGISTER");
    assert_eq!(to_upstream["peer"], registrar.addr.to_string());
    // The proxy's Via and Path were added; plain SIP toward the upstream.
    assert!(to_upstream["sip_bytes"].as_u64().unwrap() > x.register.len() as u64, "{to_upstream}");
    assert!(to_upstream.get("sigcomp_bytes").is_none() && to_upstream.get("compartment").is_none());

    let (answered, from_upstream) = event(&events, &call("from_upstream"));
    assert_eq!(from_upstream["status"], 200);
    assert!(from_upstream.get("method").is_none());

    let (returned, to_terminal) = event(&events, &call("to_terminal"));
    assert_eq!(to_terminal["status"], 200);
    assert_eq!(to_terminal["compartment"], compartment);
    assert_eq!(to_terminal["sip_bytes"], x.ok.len());
    assert_eq!(to_terminal["sigcomp_bytes"], x.received.len());
    assert_eq!(to_terminal["peer"], me);
    assert!(arrived < forwarded && forwarded < answered && answered < returned, "{events:#?}");

    let (_, nack_sent) = event(&events, &[("nack_sent", "STATE_NOT_FOUND".into())]);
    assert_eq!((&nack_sent["direction"], &nack_sent["sigcomp_bytes"]), (&"from_terminal".into(), &9.into()));
    assert!(nack_sent.get("call_id").is_none(), "{nack_sent}");
    let (_, nack_received) = event(&events, &[("nack_received", "USER_REQUESTED".into())]);
    assert_eq!(nack_received["direction"], "from_terminal");
    assert_eq!(nack_received["compartment"], compartment, "the NACK names the 200 OK's compartment");
}

/// Without a terminal to write to, the text log has no colours: RUST_LOG
/// turns the message events on as --log-level does.
#[test]
fn a_text_log_to_a_pipe_has_no_escape_codes() {
    let registrar = Registrar::start();
    let proxy = Proxy::start(registrar.addr, &[], &[("RUST_LOG", "sigkit_proxy=debug")]);
    let mut t = Terminal::new(proxy.sip);
    t.registered("obs-text-1");
    let log = proxy.stop();
    assert!(!log.contains("\x1b["), "escape codes in a log to a pipe:\n{log}");
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("sigkit_proxy::messages")).collect();
    assert_eq!(lines.len(), 4, "{log}");
    assert!(lines[0].contains("DEBUG") && lines[0].contains("from_terminal"), "{log}");
    assert!(lines.iter().all(|l| l.contains("obs-text-1")), "{log}");
}

#[test]
fn proxy_ctl_prints_status_compartments_and_registrations() {
    let registrar = Registrar::start();
    let proxy = Proxy::start(registrar.addr, &[], &[]);
    let mut t = Terminal::new(proxy.sip);
    t.registered("obs-ctl-1");
    let metrics = proxy.metrics.to_string();
    let ctl = |args: &[&str]| sigkit(&[&["proxy", "ctl"][..], args].concat(), b"");

    let run = ctl(&["status", "--metrics", &metrics]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let status = run.stdout_text();
    let value = |key: &str| {
        status.lines().find_map(|l| l.strip_prefix(key)).map(str::trim).unwrap_or_else(|| panic!("{key}: {status}"))
    };
    assert_eq!((value("shards"), value("compartments"), value("registrations")), ("1", "1", "1"), "{status}");
    assert_eq!(value("upstream"), format!("udp:{}", registrar.addr));
    assert_eq!(value("version"), env!("CARGO_PKG_VERSION"));

    let run = ctl(&["compartments", "--metrics", &metrics]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let table = run.stdout_text();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["SHARD", "ID", "TERMINAL", "PEER", "REGISTERED", "STATE_BYTES", "IDLE_S"]);
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    let (instance, flow) = (t.instance(), format!("udp:{}", t.addr()));
    assert_eq!(&row[..5], ["0", "1", instance.as_str(), flow.as_str(), "yes"], "{table}");
    assert!(row[5].parse::<u64>().unwrap() > 0, "{table}");
    assert_eq!(lines[2], "1 of 1 compartments");

    // From the configuration file's `metrics`, as JSON.
    let config = common::temp_file("ctl.toml", format!("metrics = \"{metrics}\"\n").as_bytes());
    let run = ctl(&["registrations", "--config", config.to_str().unwrap(), "--json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let json: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(json["total"], 1);
    let r = &json["registrations"][0];
    assert_eq!((&r["aor"], &r["terminal"]), (&"sip:alice@127.0.0.1".into(), &t.instance().into()), "{json}");
    assert_eq!(r["flow"], format!("udp:{}", t.addr()));
    assert!((290..=300).contains(&r["expires_s"].as_u64().unwrap()), "{json}");

    // Without an address: usage, 2; nobody at the address: the network's
    // failure, 4 (docs/cli.md).
    let run = ctl(&["status"]);
    assert_eq!(run.code, Some(2));
    assert!(run.stderr.contains("--metrics"), "{}", run.stderr);
    drop(proxy);
    let run = ctl(&["status", "--metrics", &metrics]);
    assert_eq!(run.code, Some(4), "{}", run.stdout_text());
    assert!(run.stderr.starts_with(&format!("sigkit proxy ctl: {metrics}: ")), "{}", run.stderr);
}
