//! What a looping-bytecode flood from many addresses does to registered
//! SigComp terminals' round trips through `sigkit proxy`: the two floods an
//! adversarial test of the proxy used (the SigComp performance thesis's
//! denial of service), each against the proxy's default decompression
//! budgets and against the same proxy with the overall budgets lifted.
//!
//! ```text
//! cargo run --release -p sigkit-proxy --example flood_latency -- --sigkit target/release/sigkit
//! ```
//!
//! Flags (`--help`): `--sigkit PATH`, `--seconds N` (per run, default 10),
//! `--rate R` (the terminals' OPTIONS per second, default 200),
//! `--terminals N` (default 10), `--only sha1|jump`. Exit status 2 for
//! bad arguments, 1 when the `sigkit` binary is missing.
//!
//! - `sha1`: 10 addresses each send 60 messages a second of 135 bytes
//!   whose bytecode loops on SHA-1 of 0 and 1 bytes, the digest written
//!   across the end of a circular buffer (each SHA-1 is a whole SHA-1
//!   block for 1 or 2 cycles);
//! - `jump`: 100 addresses each send 100 messages a second of 117 bytes
//!   that loop on JUMP until their cycles run out.
//!
//! The terminals register through the proxy to a responder that answers
//! every request 200 at once, then send OPTIONS in turn at the rate; each
//! round trip is timed (a request unanswered within 2 s is lost). Printed
//! per run: round trips p50 / p95 / p99, answered share, the proxy's CPU
//! (utime + stime in /proc, percent of one core) and its refusals by
//! budget.

// A measurement harness on 127.0.0.1: a socket, file or assembly that
// fails to set up leaves nothing to measure, and the panic names it.
#![allow(clippy::unwrap_used)]

#[path = "support/responder.rs"]
mod responder;

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::builder::RangedU64ValueParser;
use clap::{Parser, ValueEnum};
use responder::start_responder;
use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Algorithm, Config, Endpoint, EndpointConfig, Mechanism, Received};
use sigkit_sip::Message;

/// The terminals' one compartment, the proxy's.
const PROXY: CompartmentId = CompartmentId(1);

/// Registered SigComp terminals' round trips through `sigkit proxy` under
/// a looping-bytecode flood, with the default and with lifted budgets.
#[derive(Parser, Debug)]
#[command(name = "flood_latency", args_override_self = true)]
struct Args {
    /// The `sigkit` binary (cargo build --release -p sigkit-cli).
    #[arg(long, default_value = "target/release/sigkit")]
    sigkit: PathBuf,
    /// Length of each run (s).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    seconds: u64,
    /// The terminals' OPTIONS per second.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    rate: u64,
    /// Terminals, sending in turn.
    #[arg(long, default_value_t = 10, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    terminals: usize,
    /// Only this flood.
    #[arg(long, value_enum)]
    only: Option<FloodName>,
}

/// The floods, by the bytecode they loop on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FloodName {
    Sha1,
    Jump,
}

impl FloodName {
    fn label(self) -> &'static str {
        match self {
            FloodName::Sha1 => "sha1",
            FloodName::Jump => "jump",
        }
    }
}

/// A flood: bytecode, sources, messages per second from each.
struct Flood {
    name: FloodName,
    message: Vec<u8>,
    sources: u8,
    per_source_per_s: u64,
}

fn floods() -> Vec<Flood> {
    // Padded to the size the adversarial test sent.
    let message = |src: &str, size: usize| {
        let upload = sigcomp_asm::assemble(src).unwrap().upload().unwrap();
        let bare = upload.message(&[]).unwrap().len();
        upload.message(&vec![0x55; size.saturating_sub(bare)]).unwrap()
    };
    let sha1 = "at (64)\n:byte_copy_left pad (2)\n:byte_copy_right pad (2)\nat (128)\n\
                MULTILOAD (64, 2, 1000, 1010)\n:loop\nSHA-1 (200, 1, 1005)\nSHA-1 (200, 0, 1005)\nJUMP (loop)\n";
    let jump = "at (128)\n:loop\nINPUT-BYTES (1, 64, done)\nCOPY (200, 120, 400)\nJUMP (loop)\n:done\nJUMP (done)\n";
    vec![
        Flood { name: FloodName::Sha1, message: message(sha1, 135), sources: 10, per_source_per_s: 60 },
        Flood { name: FloodName::Jump, message: message(jump, 117), sources: 100, per_source_per_s: 100 },
    ]
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Proxy {
    child: Child,
    terminals: SocketAddr,
    metrics: SocketAddr,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_proxy(sigkit: &Path, dir: &Path, upstream: SocketAddr, lifted: bool) -> Proxy {
    let terminals = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut config = format!(
        "listen = [\"udp:{terminals}\"]\nupstream = \"udp:{upstream}\"\nupstream_local = \"127.0.0.1:0\"\n\
         metrics = \"{metrics}\"\n"
    );
    if lifted {
        config.push_str("[defence]\ndecompression_ms_per_s = 1000000\ndecompression_burst_ms = 1000000\nunknown_sources_percent = 100\n");
    }
    let path = dir.join(if lifted { "lifted.toml" } else { "default.toml" });
    std::fs::write(&path, config).unwrap();
    let mut child = Command::new(sigkit)
        .args(["proxy", "--config"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sigkit proxy");
    for _ in 0..100 {
        if std::net::TcpStream::connect(metrics).is_ok() {
            return Proxy { child, terminals, metrics };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("sigkit proxy did not start");
}

fn metrics_text(addr: SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn metric(text: &str, series: &str) -> f64 {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok()).unwrap_or(0.0)
}

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
}

struct Terminal {
    socket: UdpSocket,
    port: u16,
    endpoint: Endpoint,
    cseq: u32,
}

impl Terminal {
    fn new(proxy: SocketAddr) -> Terminal {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(proxy).unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let port = socket.local_addr().unwrap().port();
        let params = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
        let config = Config {
            algorithm: Algorithm::Lzss,
            mechanism: Mechanism::Dynamic,
            transport: Transport::Message,
            ..Config::default()
        };
        let endpoint = Endpoint::new(EndpointConfig::new(params, params, config)).unwrap();
        Terminal { socket, port, endpoint, cseq: 0 }
    }

    fn request(&mut self, method: &str) -> Vec<u8> {
        self.cseq += 1;
        let (n, port) = (self.cseq, self.port);
        let id = format!("urn:uuid:00000000-0000-4000-8000-{port:012x}");
        let extra = if method == "REGISTER" { "Expires: 3600\r\n" } else { "" };
        let sip = format!(
            "{method} sip:127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:{port};branch=z9hG4bK{port}x{n};rport;\
             comp=sigcomp;sigcomp-id=\"<{id}>\"\r\nMax-Forwards: 70\r\nFrom: <sip:u{port}@127.0.0.1>;tag={port}\r\n\
             To: <sip:u{port}@127.0.0.1>\r\nCall-ID: {port}-{n}@127.0.0.1\r\nCSeq: {n} {method}\r\n\
             Contact: <sip:u{port}@127.0.0.1:{port};comp=sigcomp>;+sip.instance=\"<{id}>\"\r\n{extra}Content-Length: 0\r\n\r\n"
        );
        self.endpoint.compress(Instant::now(), PROXY, sip.as_bytes()).expect("compress").message
    }

    /// Sends `method` and waits up to 2 s for its final response; the
    /// round trip.
    fn round_trip(&mut self, method: &str) -> Option<Duration> {
        let wire = self.request(method);
        let cseq = self.cseq;
        let start = Instant::now();
        self.socket.send(&wire).ok()?;
        let mut buf = vec![0u8; 65536];
        while start.elapsed() < Duration::from_secs(2) {
            let Ok(n) = self.socket.recv(&mut buf) else { continue };
            let Ok(Received::Message(incoming)) = self.endpoint.receive(&buf[..n], Transport::Message) else {
                continue;
            };
            let sip = self.endpoint.accept(Instant::now(), incoming, PROXY).message;
            let answered = Message::parse(&sip)
                .is_ok_and(|m| m.status_code().is_some_and(|c| c >= 200) && m.cseq().is_ok_and(|c| c.number == cseq));
            if answered {
                return Some(start.elapsed());
            }
        }
        None
    }
}

fn percentile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

fn run(args: &Args, dir: &Path, upstream: SocketAddr, flood: &Flood, lifted: bool) {
    let proxy = start_proxy(&args.sigkit, dir, upstream, lifted);
    let mut terminals: Vec<Terminal> = (0..args.terminals).map(|_| Terminal::new(proxy.terminals)).collect();
    for t in &mut terminals {
        t.round_trip("REGISTER").expect("REGISTER answered");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let flooder = {
        let (stop, sent, target) = (stop.clone(), sent.clone(), proxy.terminals);
        let (message, sources, rate) = (flood.message.clone(), flood.sources, flood.per_source_per_s);
        std::thread::spawn(move || {
            let sockets: Vec<UdpSocket> =
                (0..sources).map(|i| UdpSocket::bind(format!("127.0.1.{}:0", 10 + i)).unwrap()).collect();
            // Every 10 ms, a tenth of each source's second.
            let per_tick = rate as f64 / 100.0;
            let mut owed = 0.0;
            let mut next = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                owed += per_tick;
                while owed >= 1.0 {
                    for s in &sockets {
                        let _ = s.send_to(&message, target);
                        sent.fetch_add(1, Ordering::Relaxed);
                    }
                    owed -= 1.0;
                }
                next += Duration::from_millis(10);
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
        })
    };
    let pid = proxy.child.id();
    let before = metrics_text(proxy.metrics);
    let ticks = cpu_ticks(pid);
    let started = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / args.rate as f64);
    let (mut times, mut lost) = (Vec::new(), 0u64);
    let mut next = Instant::now();
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(args.seconds) {
        let n = terminals.len();
        match terminals[i % n].round_trip("OPTIONS") {
            Some(d) => times.push(d),
            None => lost += 1,
        }
        i += 1;
        next += interval;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = (cpu_ticks(pid) - ticks) as f64 / 100.0 / elapsed * 100.0;
    stop.store(true, Ordering::Relaxed);
    let _ = flooder.join();
    let after = metrics_text(proxy.metrics);
    let refused = |b: &str| {
        let s = format!("sigkit_proxy_refused_total{{budget=\"{b}\"}}");
        metric(&after, &s) - metric(&before, &s)
    };
    times.sort();
    let answered = times.len() as f64 / (times.len() as f64 + lost as f64) * 100.0;
    println!(
        "{:5} flood, budgets {:7}: flood {:.0}/s; round trips p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms; \
         answered {answered:.1} % of {}; proxy CPU {cpu:.0} %; refused messages {:.0}, cycles {:.0}, overall {:.0}, \
         unknown sources {:.0}",
        flood.name.label(),
        if lifted { "lifted" } else { "default" },
        sent.load(Ordering::Relaxed) as f64 / elapsed,
        percentile(&times, 0.5),
        percentile(&times, 0.95),
        percentile(&times, 0.99),
        times.len() as u64 + lost,
        refused("messages"),
        refused("cycles"),
        refused("overall"),
        refused("unknown_sources"),
    );
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    if !args.sigkit.exists() {
        eprintln!("{}: build it first (cargo build --release -p sigkit-cli)", args.sigkit.display());
        return std::process::ExitCode::from(1);
    }
    let dir = std::env::temp_dir().join(format!("sigkit-flood-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let upstream = start_responder();
    for flood in floods() {
        if args.only.is_some_and(|o| o != flood.name) {
            continue;
        }
        // Interleaved: default, lifted, default.
        for lifted in [false, true, false] {
            run(&args, &dir, upstream, &flood, lifted);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::process::ExitCode::SUCCESS
}
