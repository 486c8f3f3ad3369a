//! `sigkit proxy`'s capture tap, observed as a SIP server operator's
//! tools observe it, on real sockets on 127.0.0.1: a SigComp terminal
//! played by the test registers and makes a call (INVITE, 200, ACK, BYE,
//! 200) through the proxy to a stand-in upstream that answers 200.
//!
//! - `--hep`: a stand-in Homer collector (a UDP socket) gets every message
//!   of both sides as HEPv3, the terminal's as the plain SIP it compressed,
//!   each with the addresses and ports it crossed, SIP as its protocol
//!   type, `--hep-id` as its capture agent and the Call-ID as its
//!   correlation id. Each packet is checked twice: by the proxy's own
//!   parser and by the magic and length alone. Kamailio's sipcapture
//!   module, a real HEP receiver, reads the same packets back to each
//!   message's SIP, source and Call-ID.
//! - `--capture`: tshark reads the pcap file and finds each request and
//!   response of the call on both sides; the file is readable while the
//!   proxy runs (flushed every second) and whole after SIGTERM.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::io::Read;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Config, Endpoint, EndpointConfig, Mechanism};
use sigkit_proxy::hep::{self, Packet};
use sigkit_sip::Message;

/// Datagrams received, each with its source.
type Received = Arc<Mutex<Vec<(SocketAddr, Vec<u8>)>>>;

/// A UDP socket read by a thread of its own until dropped: each datagram
/// and its source.
struct Listener {
    addr: SocketAddr,
    got: Received,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    /// `answer` may reply to each datagram (the stand-in upstream).
    fn start(answer: fn(&[u8]) -> Option<Vec<u8>>) -> Listener {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let addr = socket.local_addr().unwrap();
        let (got, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let (kept, stopped) = (got.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !stopped.load(Ordering::Relaxed) {
                let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
                kept.lock().unwrap().push((from, buf[..n].to_vec()));
                if let Some(reply) = answer(&buf[..n]) {
                    socket.send_to(&reply, from).unwrap();
                }
            }
        });
        Listener { addr, got, stop, thread: Some(thread) }
    }

    fn datagrams(&self) -> Vec<(SocketAddr, Vec<u8>)> {
        self.got.lock().unwrap().clone()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The stand-in upstream: every request but ACK is answered 200 OK, a
/// REGISTER's with its binding, an INVITE's with a Contact.
fn upstream_answer(bytes: &[u8]) -> Option<Vec<u8>> {
    let msg = Message::parse(bytes).ok()?;
    if !msg.is_request() || msg.method() == Some("ACK") {
        return None;
    }
    let text = String::from_utf8_lossy(bytes).to_string();
    let contact = text.lines().find_map(|l| l.strip_prefix("Contact: ")).unwrap_or_default();
    let binding = format!("{contact};expires=300");
    let extra: Vec<(&str, &str)> = match msg.method() {
        Some("REGISTER") => vec![("Contact", binding.as_str())],
        Some("INVITE") => vec![("Contact", "<sip:bob@127.0.0.1:5999>")],
        _ => Vec::new(),
    };
    Some(sigkit_sip::proxy::build_response(&msg, 200, "OK", Some("up"), &extra).unwrap())
}

/// `sigkit proxy` as a process with two worker threads (two shards, whose
/// captures meet in one tap), its standard error kept.
struct Proxy {
    child: Child,
    sip: SocketAddr,
    metrics: SocketAddr,
    stderr: Option<JoinHandle<String>>,
}

impl Proxy {
    fn start(upstream: SocketAddr, extra: &[&str]) -> Proxy {
        let free = || UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (port, metrics) = (free(), free());
        let mut child = Command::new(env!("CARGO_BIN_EXE_sigkit"))
            .args(["proxy", "--listen", &format!("udp:127.0.0.1:{port}"), "--listen", &format!("tcp:127.0.0.1:{port}")])
            .args(["--threads", "2"])
            .args(["--upstream", &format!("udp:{upstream}"), "--metrics", &format!("127.0.0.1:{metrics}")])
            .args(extra)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut out = String::new();
            let _ = pipe.read_to_string(&mut out);
            out
        });
        let sip = SocketAddr::from(([127, 0, 0, 1], port));
        let proxy = Proxy { child, sip, metrics: SocketAddr::from(([127, 0, 0, 1], metrics)), stderr: Some(stderr) };
        // Ready once its metrics listener, bound after the SIP sockets,
        // accepts.
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", metrics)).is_err() {
            assert!(Instant::now() < deadline, "the proxy did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        proxy
    }

    /// A counter's value from /metrics.
    fn metric(&self, series: &str) -> f64 {
        let text = common::scrape_metrics(self.metrics).expect("the metrics page");
        common::series_value(&text, series).unwrap_or_else(|| panic!("no {series} in {text}"))
    }

    /// Stops it with SIGTERM; its log.
    fn stop(mut self) -> String {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = self.child.wait().unwrap();
        let log = self.stderr.take().unwrap().join().unwrap();
        assert!(status.success(), "{status:?}\n{log}");
        log
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const COMPARTMENT: CompartmentId = CompartmentId(1);

/// A SigComp terminal over UDP (RFC 5049).
struct Terminal {
    socket: UdpSocket,
    endpoint: Endpoint,
    proxy: SocketAddr,
}

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

    /// A request of the call `call_id` (or its REGISTER), to the proxy as
    /// the outbound proxy.
    fn request(&self, method: &str, call_id: &str, cseq: u32, to_tag: &str) -> Vec<u8> {
        let (me, proxy) = (self.addr(), self.proxy);
        let id = format!("urn:uuid:00000000-0000-4000-8000-{:012x}", me.port());
        let ruri = if method == "REGISTER" { "sip:127.0.0.1".to_string() } else { "sip:bob@127.0.0.1".to_string() };
        let to = if method == "REGISTER" { "sip:alice@127.0.0.1" } else { "sip:bob@127.0.0.1" };
        format!(
            "{method} {ruri} SIP/2.0\r\n\
             Via: SIP/2.0/UDP {me};branch=z9hG4bK-{call_id}-{method};rport;comp=sigcomp;sigcomp-id=\"<{id}>\"\r\n\
             Max-Forwards: 70\r\nRoute: <sip:{proxy};lr;comp=sigcomp>\r\n\
             From: <sip:alice@127.0.0.1>;tag=a1\r\nTo: <{to}>{to_tag}\r\nCall-ID: {call_id}\r\n\
             CSeq: {cseq} {method}\r\nContact: <sip:alice@{me};comp=sigcomp>;+sip.instance=\"<{id}>\"\r\n\
             Content-Length: 0\r\n\r\n"
        )
        .into_bytes()
    }

    fn send(&mut self, sip: &[u8]) {
        let out = self.endpoint.compress(Instant::now(), COMPARTMENT, sip).unwrap();
        self.socket.send_to(&out.message, self.proxy).unwrap();
    }

    /// The next SIP message from the proxy, decompressed.
    fn receive(&mut self) -> Vec<u8> {
        let mut buf = vec![0u8; 65536];
        let (n, _) = self.socket.recv_from(&mut buf).expect("a datagram from the proxy");
        let sigcomp_compress::Received::Message(incoming) =
            self.endpoint.receive(&buf[..n], Transport::Message).unwrap()
        else {
            panic!("a NACK from the proxy")
        };
        self.endpoint.accept(Instant::now(), incoming, COMPARTMENT).message
    }

    /// Sends `request` and, unless it is an ACK, takes its 200 OK.
    fn exchange(&mut self, request: &[u8]) -> Option<Vec<u8>> {
        self.send(request);
        if request.starts_with(b"ACK ") {
            return None;
        }
        let ok = self.receive();
        assert!(ok.starts_with(b"SIP/2.0 200 OK\r\n"), "{}", String::from_utf8_lossy(&ok));
        Some(ok)
    }
}

/// What the terminal sent (plain) and received (decompressed) in a
/// registration and a call.
struct Call {
    call_id: String,
    sent: Vec<Vec<u8>>,
    received: Vec<Vec<u8>>,
}

/// Registers, then calls: INVITE, ACK, BYE.
fn register_and_call(t: &mut Terminal, call_id: &str) -> Call {
    let mut call = Call { call_id: call_id.to_string(), sent: Vec::new(), received: Vec::new() };
    let requests = [
        t.request("REGISTER", &format!("{call_id}-reg"), 1, ""),
        t.request("INVITE", call_id, 1, ""),
        t.request("ACK", call_id, 1, ";tag=up"),
        t.request("BYE", call_id, 2, ";tag=up"),
    ];
    for r in requests {
        if let Some(ok) = t.exchange(&r) {
            call.received.push(ok);
        }
        call.sent.push(r);
    }
    call
}

/// A request's method or a response's status, as `INVITE` or `200`.
fn kind(sip: &[u8]) -> String {
    let msg = Message::parse(sip).unwrap_or_else(|e| panic!("not SIP ({e:?}): {}", String::from_utf8_lossy(sip)));
    msg.method().map_or_else(|| msg.status_code().unwrap().to_string(), str::to_string)
}

#[test]
fn a_hep_collector_gets_both_sides_of_a_sigcomp_call_as_plain_sip() {
    let collector = Listener::start(|_| None);
    let upstream = Listener::start(upstream_answer);
    let started = SystemTime::now() - Duration::from_secs(1);
    let proxy = Proxy::start(upstream.addr, &["--hep", &collector.addr.to_string(), "--hep-id", "4242"]);
    let mut t = Terminal::new(proxy.sip);
    let call = register_and_call(&mut t, "hep-call-1");
    // The upstream's datagrams came from the proxy's upstream socket.
    let from_proxy: Vec<SocketAddr> = upstream.datagrams().iter().map(|(from, _)| *from).collect();
    assert_eq!(from_proxy.len(), 4, "REGISTER, INVITE, ACK, BYE reached the upstream");
    let upstream_side = from_proxy[0];
    assert!(from_proxy.iter().all(|a| *a == upstream_side));
    let deadline = Instant::now() + Duration::from_secs(10);
    // 4 requests and 3 responses, each on both sides.
    while collector.datagrams().len() < 14 {
        assert!(Instant::now() < deadline, "{} HEP packets", collector.datagrams().len());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(proxy.metric("sigkit_proxy_capture_messages_total"), 14.0);
    assert_eq!(proxy.metric("sigkit_proxy_capture_dropped_total"), 0.0);
    assert_eq!(proxy.metric("sigkit_proxy_capture_errors_total{sink=\"hep\"}"), 0.0);
    proxy.stop();

    let packets: Vec<Packet> = collector
        .datagrams()
        .iter()
        .map(|(_, d)| {
            // Independently of the parser: the magic, and the total
            // length in network order equal to the datagram's.
            assert_eq!(&d[..4], b"HEP3");
            assert_eq!(usize::from(u16::from_be_bytes([d[4], d[5]])), d.len());
            Packet::parse(d).unwrap()
        })
        .collect();
    assert_eq!(packets.len(), 14);
    for p in &packets {
        assert_eq!((p.proto_type, p.ip_protocol, p.capture_id), (hep::PROTO_SIP, hep::IPPROTO_UDP, 4242));
        assert!(p.time >= started && p.time <= SystemTime::now(), "{:?}", p.time);
        let sip = Message::parse(&p.payload).expect("the payload is SIP");
        assert_eq!(p.correlation_id.as_deref(), Some(sip.call_id().unwrap().as_bytes()), "Call-ID correlation");
    }
    let (me, proxy_addr, up) = (t.addr(), t.proxy, upstream.addr);
    let of_call: Vec<&Packet> =
        packets.iter().filter(|p| p.correlation_id.as_deref() == Some(call.call_id.as_bytes())).collect();
    let leg = |src: SocketAddr, dst: SocketAddr| -> Vec<String> {
        of_call.iter().filter(|p| (p.src, p.dst) == (src, dst)).map(|p| kind(&p.payload)).collect()
    };
    // Terminal side: plain SIP with the terminal's address and the
    // proxy's listen address; upstream side: the proxy's upstream socket
    // and the upstream's address.
    assert_eq!(leg(me, proxy_addr), ["INVITE", "ACK", "BYE"]);
    assert_eq!(leg(upstream_side, up), ["INVITE", "ACK", "BYE"]);
    assert_eq!(leg(up, upstream_side), ["200", "200"]);
    assert_eq!(leg(proxy_addr, me), ["200", "200"]);
    assert_eq!(of_call.len(), 10);
    // The terminal side is what the terminal compressed and what it
    // decompressed, byte for byte.
    let terminal_sent: Vec<&[u8]> =
        packets.iter().filter(|p| (p.src, p.dst) == (me, proxy_addr)).map(|p| p.payload.as_slice()).collect();
    let sent: Vec<&[u8]> = call.sent.iter().map(Vec::as_slice).collect();
    assert_eq!(terminal_sent, sent);
    let terminal_got: Vec<&[u8]> =
        packets.iter().filter(|p| (p.src, p.dst) == (proxy_addr, me)).map(|p| p.payload.as_slice()).collect();
    let received: Vec<&[u8]> = call.received.iter().map(Vec::as_slice).collect();
    assert_eq!(terminal_got, received);
    // The upstream side is what the upstream received, byte for byte.
    let upstream_got: Vec<Vec<u8>> = upstream.datagrams().into_iter().map(|(_, d)| d).collect();
    let upstream_seen: Vec<Vec<u8>> = packets.iter().filter(|p| p.dst == up).map(|p| p.payload.clone()).collect();
    assert_eq!(upstream_seen, upstream_got);
}

/// Kamailio as the HEP collector (its sipcapture module, as a Homer
/// capture node runs it), logging each message it decapsulated: a real
/// HEPv3 receiver reads the proxy's packets, finding in them the SIP, the
/// source address and port, and the Call-ID.
struct KamailioCollector {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
}

impl KamailioCollector {
    fn start() -> KamailioCollector {
        use std::os::unix::process::CommandExt;
        let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("hep-kamailio-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // sipcapture decapsulates HEP and hands the SIP to the routing
        // script with the HEP source as the message's; db_text only
        // satisfies the module's database binding (nothing is stored).
        let cfg = format!(
            "#!KAMAILIO\ndebug=2\nlog_stderror=yes\nchildren=1\nauto_aliases=no\n\
             listen=udp:127.0.0.1:{port}\nlisten=tcp:127.0.0.1:{port}\n\
             loadmodule \"db_text.so\"\nloadmodule \"pv.so\"\nloadmodule \"xlog.so\"\nloadmodule \"sipcapture.so\"\n\
             modparam(\"sipcapture\", \"db_url\", \"text://{dir}\")\nmodparam(\"sipcapture\", \"hep_capture_on\", 1)\n\
             request_route {{ xlog(\"L_NOTICE\", \"HEPSEEN $rm $si:$sp $ci\\n\"); drop; }}\n\
             reply_route {{ xlog(\"L_NOTICE\", \"HEPSEEN $rs $si:$sp $ci\\n\"); drop; }}\n",
            dir = dir.display()
        );
        let path = dir.join("kamailio.cfg");
        std::fs::write(&path, cfg).unwrap();
        let log = dir.join("kamailio.log");
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new("kamailio")
            .arg("-f")
            .arg(&path)
            .args(["-DD", "-E", "-w"])
            .arg(&dir)
            .arg("-P")
            .arg(dir.join("kamailio.pid"))
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .process_group(0)
            .spawn()
            .unwrap();
        let k = KamailioCollector { child, addr: SocketAddr::from(([127, 0, 0, 1], port)), log };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(k.addr).is_err() {
            assert!(Instant::now() < deadline, "kamailio did not start:\n{}", k.seen().join("\n"));
            std::thread::sleep(Duration::from_millis(50));
        }
        k
    }

    /// What the script logged of each message: `METHOD-or-STATUS
    /// SOURCE CALL-ID`.
    fn seen(&self) -> Vec<String> {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.lines().filter_map(|l| Some(l.split_once("HEPSEEN ")?.1.to_string())).collect()
    }
}

impl Drop for KamailioCollector {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let _ = self.child.wait();
    }
}

#[test]
fn kamailio_as_the_hep_collector_reads_both_sides_of_the_call() {
    if !common::have("kamailio") {
        return;
    }
    let kamailio = KamailioCollector::start();
    let upstream = Listener::start(upstream_answer);
    let proxy = Proxy::start(upstream.addr, &["--hep", &kamailio.addr.to_string()]);
    let mut t = Terminal::new(proxy.sip);
    register_and_call(&mut t, "kam-call-1");
    let deadline = Instant::now() + Duration::from_secs(10);
    while kamailio.seen().len() < 14 {
        assert!(Instant::now() < deadline, "{:#?}", kamailio.seen());
        std::thread::sleep(Duration::from_millis(50));
    }
    proxy.stop();
    let (me, listen, up, side) = (t.addr(), t.proxy, upstream.addr, upstream.datagrams()[0].0);
    let line = |what: &str, from: SocketAddr, call: &str| format!("{what} {from} {call}");
    let mut want = Vec::new();
    for (request, call) in [("REGISTER", "kam-call-1-reg"), ("INVITE", "kam-call-1"), ("BYE", "kam-call-1")] {
        want.extend([
            line(request, me, call),
            line(request, side, call),
            line("200", up, call),
            line("200", listen, call),
        ]);
    }
    want.extend([line("ACK", me, "kam-call-1"), line("ACK", side, "kam-call-1")]);
    let mut seen = kamailio.seen();
    seen.sort();
    want.sort();
    assert_eq!(seen, want);
}

/// Over TCP the terminal side is captured as TCP (IP protocol 6) with the
/// proxy's TCP listener as its end; the upstream side stays UDP.
#[test]
fn a_tcp_terminal_is_captured_as_tcp() {
    use std::io::Write;
    let collector = Listener::start(|_| None);
    let upstream = Listener::start(upstream_answer);
    let proxy = Proxy::start(upstream.addr, &["--hep", &collector.addr.to_string()]);
    let mut conn = TcpStream::connect(proxy.sip).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let me = conn.local_addr().unwrap();
    let options = format!(
        "OPTIONS sip:bob@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/TCP {me};branch=z9hG4bK-tcp-1\r\nMax-Forwards: 70\r\n\
         From: <sip:alice@127.0.0.1>;tag=a1\r\nTo: <sip:bob@127.0.0.1>\r\nCall-ID: hep-tcp-1\r\n\
         CSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
    );
    conn.write_all(options.as_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = conn.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"SIP/2.0 200 OK\r\n"), "{}", String::from_utf8_lossy(&buf[..n]));
    let deadline = Instant::now() + Duration::from_secs(10);
    while collector.datagrams().len() < 4 {
        assert!(Instant::now() < deadline, "{} HEP packets", collector.datagrams().len());
        std::thread::sleep(Duration::from_millis(20));
    }
    let listener = proxy.sip;
    proxy.stop();
    let packets: Vec<Packet> = collector.datagrams().iter().map(|(_, d)| Packet::parse(d).unwrap()).collect();
    let ends: Vec<(u8, SocketAddr, SocketAddr, String)> =
        packets.iter().map(|p| (p.ip_protocol, p.src, p.dst, kind(&p.payload))).collect();
    let side = upstream.datagrams()[0].0;
    let (tcp, udp, up) = (hep::IPPROTO_TCP, hep::IPPROTO_UDP, upstream.addr);
    assert_eq!(
        ends,
        [
            (tcp, me, listener, "OPTIONS".to_string()),
            (udp, side, up, "OPTIONS".to_string()),
            (udp, up, side, "200".to_string()),
            (tcp, listener, me, "200".to_string()),
        ]
    );
    assert_eq!(packets[0].payload, options.as_bytes());
}

/// tshark's method and status code of each SIP packet of `file`, with
/// its source and destination `IP:PORT`.
fn tshark_sip(file: &Path) -> Vec<(String, String, String)> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-Y", "sip", "-T", "fields", "-E", "separator=|"])
        .args(["-e", "sip.Method", "-e", "sip.Status-Code", "-e", "ip.src", "-e", "udp.srcport"])
        .args(["-e", "ip.dst", "-e", "udp.dstport"])
        .output()
        .unwrap();
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let what = if f[0].is_empty() { f[1].to_string() } else { f[0].to_string() };
            (what, format!("{}:{}", f[2], f[3]), format!("{}:{}", f[4], f[5]))
        })
        .collect()
}

fn pcap_packets(file: &Path) -> usize {
    let Ok(bytes) = std::fs::read(file) else { return 0 };
    let Ok(mut r) = pcap_file::pcap::PcapReader::new(bytes.as_slice()) else { return 0 };
    let mut n = 0;
    while let Some(Ok(_)) = r.next_packet() {
        n += 1;
    }
    n
}

#[test]
fn a_capture_file_shows_both_sides_of_a_sigcomp_call_in_tshark() {
    if !common::have("tshark") {
        return;
    }
    let upstream = Listener::start(upstream_answer);
    let file: PathBuf = common::temp_file("capture.pcap", b"");
    let proxy = Proxy::start(upstream.addr, &["--capture", file.to_str().unwrap()]);
    let mut t = Terminal::new(proxy.sip);
    register_and_call(&mut t, "pcap-call-1");
    let upstream_side = upstream.datagrams()[0].0;
    // Readable while the proxy runs: flushed within a second or so.
    let deadline = Instant::now() + Duration::from_secs(5);
    while pcap_packets(&file) < 14 {
        assert!(Instant::now() < deadline, "{} packets in the running proxy's file", pcap_packets(&file));
        std::thread::sleep(Duration::from_millis(100));
    }
    proxy.stop();

    let rows = tshark_sip(&file);
    let (me, proxy_addr, up) = (t.addr().to_string(), t.proxy.to_string(), upstream.addr.to_string());
    let upstream_side = upstream_side.to_string();
    let leg = |src: &str, dst: &str| -> Vec<String> {
        rows.iter().filter(|(_, s, d)| (s.as_str(), d.as_str()) == (src, dst)).map(|(w, _, _)| w.clone()).collect()
    };
    assert_eq!(leg(&me, &proxy_addr), ["REGISTER", "INVITE", "ACK", "BYE"], "{rows:#?}");
    assert_eq!(leg(&upstream_side, &up), ["REGISTER", "INVITE", "ACK", "BYE"], "{rows:#?}");
    assert_eq!(leg(&up, &upstream_side), ["200", "200", "200"], "{rows:#?}");
    assert_eq!(leg(&proxy_addr, &me), ["200", "200", "200"], "{rows:#?}");
    assert_eq!(rows.len(), 14, "{rows:#?}");
}

/// A capture file that cannot be created is the run's failure (exit 1),
/// named; a HEP collector that is not a host:port is a usage error (2),
/// one whose name does not resolve the network's (4) (docs/cli.md).
#[test]
fn a_capture_file_that_cannot_be_written_or_a_bad_collector_is_refused() {
    let upstream = "udp:127.0.0.1:9";
    let run = common::sigkit(
        &["proxy", "--listen", "udp:127.0.0.1:0", "--upstream", upstream, "--capture", "/nonexistent/dir/x.pcap"],
        b"",
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.starts_with("sigkit proxy: /nonexistent/dir/x.pcap: "), "{}", run.stderr);
    let run = common::sigkit(&["proxy", "--listen", "udp:127.0.0.1:0", "--upstream", upstream, "--hep", "nope"], b"");
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.starts_with("sigkit proxy: --hep: "), "{}", run.stderr);
    // A collector's name that does not resolve: the network's failure (4).
    let hep = ["--hep", "sigkit-test.invalid:9060"];
    let run =
        common::sigkit(&[&["proxy", "--listen", "udp:127.0.0.1:0", "--upstream", upstream][..], &hep].concat(), b"");
    assert_eq!(run.code, Some(4), "{}", run.stderr);
    assert!(run.stderr.contains("cannot resolve sigkit-test.invalid"), "{}", run.stderr);
}
