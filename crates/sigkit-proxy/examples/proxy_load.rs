//! Load generator for `sigkit proxy`, all on 127.0.0.1.
//!
//! Many SIP terminals, each a UDP socket with its own SigComp endpoint
//! (dynamic mechanism, LZSS; one compartment: the proxy, RFC 5049 §6.1),
//! register through a `sigkit proxy` process and then send OPTIONS
//! requests (about 700 bytes) at a fixed offered rate (open loop). The
//! upstream answers each at once: a responder thread of this program
//! (200 OK built by `sigkit_sip::proxy::build_response`) or Kamailio
//! (a 404 from its location lookup). The rate steps up until 1 % or more
//! of the requests go unanswered; latency is taken at 50 % and 90 % of the
//! highest rate below that. The same terminals in plain SIP, straight to
//! the responder or to Kamailio, are the reference. Last, many idle
//! terminals register (each its own `sigcomp-id`, so its own compartment)
//! and the proxy's resident memory is divided by their number.
//!
//! ```sh
//! cargo build --release -p sigkit-cli
//! cargo run --release -p sigkit-proxy --example proxy_load -- --sigkit target/release/sigkit
//! ```
//!
//! Options: `--terminals N` (default 1000), `--rates R1,R2,...` (offered
//! requests per second, stepped up), `--step-ms MS` (default 2000),
//! `--idle N` (idle registered terminals, default 100000), `--no-kamailio`,
//! `--only proxy|replay|kamailio|memory`, `--record-rate R`,
//! `--replay-rates R1,R2,...`, `--proxy-threads N`, `--proxy-shards N`, `--pin` (the proxy
//! on the last CPU with `taskset`, this program on the others).
//!
//! Besides CPU and RSS, each step reports the proxy's own handling time
//! (p50 / p99 from its `sigkit_proxy_handling_seconds` histogram: the
//! bucket bound the quantile falls under) and how long the proxy's and the
//! generator's threads waited on the run queue for a CPU per time slice
//! (`/proc/PID/task/*/schedstat`), which tells the proxy's latency from the
//! machine's.

#[path = "support/responder.rs"]
mod responder;

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, UdpSocket as StdUdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use md5::{Digest, Md5};
use responder::start_responder;
use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Algorithm, Config, Endpoint, EndpointConfig, Mechanism, Received};
use sigkit_sip::Message;
use tokio::net::UdpSocket;

/// A terminal's one compartment: the proxy (RFC 5049 §6.1).
const PROXY: CompartmentId = CompartmentId(1);
const LOCALHOST: [u8; 4] = [127, 0, 0, 1];

struct Args {
    sigkit: PathBuf,
    terminals: usize,
    rates: Vec<u64>,
    step: Duration,
    idle: usize,
    kamailio: bool,
    only: Option<String>,
    /// The proxy's worker threads (0: one per core).
    proxy_threads: usize,
    proxy_shards: usize,
    /// The proxy on the last CPU, this program (generator, responder,
    /// probe) on the others, so that neither waits for the other's CPU.
    pin: bool,
    /// Replay: the rate the trace is recorded at, and the rates replayed.
    record_rate: u64,
    replay_rates: Vec<u64>,
}

fn parse_args() -> Args {
    let mut a = Args {
        sigkit: PathBuf::from("target/release/sigkit"),
        terminals: 1000,
        rates: vec![2000, 4000, 6000, 8000, 10000, 12000, 14000, 17000, 20000, 25000, 30000],
        step: Duration::from_millis(2000),
        idle: 100_000,
        kamailio: true,
        only: None,
        proxy_threads: 0,
        proxy_shards: 0,
        pin: false,
        record_rate: 3000,
        replay_rates: vec![6000, 8000, 10000, 12000, 14000, 16000, 18000, 20000, 22000, 24000],
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--sigkit" => a.sigkit = PathBuf::from(v()),
            "--terminals" => a.terminals = v().parse().expect("--terminals N"),
            "--rates" => a.rates = v().split(',').map(|r| r.parse().expect("--rates R1,R2")).collect(),
            "--step-ms" => a.step = Duration::from_millis(v().parse().expect("--step-ms MS")),
            "--idle" => a.idle = v().parse().expect("--idle N"),
            "--no-kamailio" => a.kamailio = false,
            "--only" => a.only = Some(v()),
            "--proxy-threads" => a.proxy_threads = v().parse().expect("--proxy-threads N"),
            "--proxy-shards" => a.proxy_shards = v().parse().expect("--proxy-shards N"),
            "--pin" => a.pin = true,
            "--record-rate" => a.record_rate = v().parse().expect("--record-rate R"),
            "--replay-rates" => {
                a.replay_rates = v().split(',').map(|r| r.parse().expect("--replay-rates R1,R2")).collect()
            }
            _ => panic!("unknown option {k}"),
        }
    }
    a
}

fn free_port() -> u16 {
    let s = StdUdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap().port()
}

fn md5_hex(s: &str) -> String {
    Md5::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn challenge_param<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    let at = header.find(&format!("{name}=\""))? + name.len() + 2;
    let end = header[at..].find('"')?;
    Some(&header[at..at + end])
}

// ---------------------------------------------------------------- processes

/// A child process (in its own process group), ended when dropped.
struct Process {
    child: Child,
}

impl Drop for Process {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", "--", &format!("-{pid}")]).status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(mut cmd: Command, log: &Path) -> Process {
    use std::os::unix::process::CommandExt;
    let file = std::fs::File::create(log).unwrap();
    cmd.stdin(Stdio::null()).stdout(file.try_clone().unwrap()).stderr(file).process_group(0);
    Process { child: cmd.spawn().unwrap_or_else(|e| panic!("{cmd:?}: {e}")) }
}

/// A `sigkit proxy` process with limits high enough for the load: one
/// source address (127.0.0.1) carries every terminal, so the per-source
/// budgets are lifted.
struct ProxyProcess {
    process: Process,
    listen: SocketAddr,
    metrics: SocketAddr,
}

/// `hot`: `sigcomp.hot_compartments`, split among the proxy's shards; the
/// load runs keep every terminal's compartment hot (4,096 for 1,000
/// terminals leaves room for an uneven split over the shards), the memory
/// run the default (1,024) so that idle terminals are held packed.
fn start_proxy(args: &Args, dir: &Path, name: &str, upstream: SocketAddr, hot: usize) -> ProxyProcess {
    let listen = SocketAddr::from((LOCALHOST, free_port()));
    let metrics = SocketAddr::from((LOCALHOST, free_port()));
    let config = format!(
        "threads = {threads}\nshards = {shards}\nlisten = [\"udp:{listen}\"]\nupstream = \"udp:{upstream}\"\nupstream_local = \"127.0.0.1:0\"\n\
         metrics = \"{metrics}\"\n[sigcomp]\nmax_compartments = 1000000\nmax_state_bytes = 8589934592\nhot_compartments = {hot}\n\
         [defence]\ncycles_per_source_per_s = 1000000000000\ncycles_burst = 1000000000000\n\
         messages_per_source_per_s = 1000000000\nmessages_burst = 1000000000\n\
         decompression_ms_per_s = 1000000\ndecompression_burst_ms = 1000000\nunknown_sources_percent = 100\n",
        threads = args.proxy_threads,
        shards = args.proxy_shards
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config).unwrap();
    let mut cmd = match pinned_cpus() {
        Some((_, proxy_cpu)) if args.pin => {
            let mut c = Command::new("taskset");
            c.arg("-c").arg(proxy_cpu.to_string()).arg(&args.sigkit);
            c
        }
        _ => Command::new(&args.sigkit),
    };
    cmd.arg("proxy").arg("--config").arg(&path).env("RUST_LOG", "warn");
    let process = spawn(cmd, &dir.join(format!("{name}.log")));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(metrics).is_err() {
        assert!(Instant::now() < deadline, "sigkit proxy did not start (see {})", dir.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    ProxyProcess { process, listen, metrics }
}

fn http_get(addr: SocketAddr, path: &str) -> String {
    let Ok(mut s) = std::net::TcpStream::connect(addr) else { return String::new() };
    let _ = s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes());
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()
}

fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')).and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

/// Kamailio with the repository's test configuration (registrar with
/// digest authentication; an OPTIONS for an unknown user of its own
/// domain is answered 404 by its location lookup), two UDP workers.
fn start_kamailio(dir: &Path, port: u16) -> Process {
    let cfg_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kamailio/kamailio.cfg");
    let cfg = std::fs::read_to_string(cfg_in)
        .unwrap()
        .replace("LISTEN_PORT", &port.to_string())
        .replace("CHILDREN", "2")
        .replace("debug=2", "debug=1");
    let path = dir.join("kamailio.cfg");
    std::fs::write(&path, cfg).unwrap();
    let mut cmd = Command::new("kamailio");
    cmd.arg("-f").arg(&path).args(["-DD", "-E", "-w"]).arg(dir).arg("-P").arg(dir.join("kamailio.pid"));
    let p = spawn(cmd, &dir.join("kamailio.log"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(SocketAddr::from((LOCALHOST, port))).is_err() {
        assert!(Instant::now() < deadline, "kamailio did not start (see {})", dir.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    p
}

// ---------------------------------------------------------------- CPU, RSS

/// User + system clock ticks of a process, or of this process's threads
/// named `thread` (`/proc/PID/stat` fields 14 and 15).
fn ticks_of(stat_path: &Path) -> u64 {
    let Ok(s) = std::fs::read_to_string(stat_path) else { return 0 };
    let Some(after) = s.rsplit_once(')').map(|(_, a)| a) else { return 0 };
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state is field 3, utime 14, stime 15.
    f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0) + f.get(12).and_then(|u| u.parse().ok()).unwrap_or(0)
}

fn process_ticks(pids: &[u32]) -> u64 {
    pids.iter().map(|p| ticks_of(Path::new(&format!("/proc/{p}/stat")))).sum()
}

fn thread_ticks(name: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return 0 };
    dir.flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .map(|t| ticks_of(&t.path().join("stat")))
        .sum()
}

/// Busy clock ticks of the whole machine (`/proc/stat`: user, nice,
/// system, irq, softirq, steal), summed over the CPUs.
fn machine_busy_ticks() -> u64 {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<u64> =
        s.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| f.get(i)).sum()
}

fn self_ticks() -> u64 {
    ticks_of(Path::new("/proc/self/stat"))
}

/// The process and every descendant (Kamailio's workers).
fn process_tree(root: u32) -> Vec<u32> {
    let mut all = vec![root];
    let mut i = 0;
    while i < all.len() {
        let parent = all[i];
        if let Ok(d) = std::fs::read_dir("/proc") {
            for e in d.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
                let Ok(s) = std::fs::read_to_string(e.path().join("stat")) else { continue };
                let ppid = s.rsplit_once(')').and_then(|(_, a)| a.split_whitespace().nth(1)?.parse::<u32>().ok());
                if ppid == Some(parent) && !all.contains(&pid) {
                    all.push(pid);
                }
            }
        }
        i += 1;
    }
    all
}

fn rss_kib(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
        .filter_map(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("VmRSS:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
        })
        .sum()
}

/// Nanoseconds spent waiting on a run queue for a CPU, and time slices
/// run, summed over the threads of the processes (`/proc/PID/task/TID/
/// schedstat`: time on the CPU, time waiting, time slices; needs
/// schedstats, which Linux keeps for every task since 2.6.9 unless
/// disabled).
fn run_queue_wait(pids: &[u32]) -> (u64, u64) {
    let mut total = (0, 0);
    for p in pids {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{p}/task")) else { continue };
        for t in dir.flatten() {
            let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) else { continue };
            let f: Vec<u64> = s.split_whitespace().filter_map(|v| v.parse().ok()).collect();
            if let [_, wait, slices] = f[..] {
                total.0 += wait;
                total.1 += slices;
            }
        }
    }
    total
}

/// The CPUs for `--pin`: this program on the first, the proxy on the last
/// (none on a single CPU).
fn pinned_cpus() -> Option<(usize, usize)> {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n >= 2).then_some((0, n - 1))
}

/// Cumulative counts of the proxy's handling-time histogram, in bucket
/// order (the last is +Inf).
fn handling_buckets(metrics: &str) -> Vec<(f64, u64)> {
    metrics
        .lines()
        .filter_map(|l| l.strip_prefix("sigkit_proxy_handling_seconds_bucket{le=\""))
        .filter_map(|l| {
            let (bound, count) = l.split_once("\"} ")?;
            let bound = if bound == "+Inf" { f64::INFINITY } else { bound.parse().ok()? };
            Some((bound, count.trim().parse().ok()?))
        })
        .collect()
}

/// The bucket bound (µs) under which quantile `q` of the observations
/// between two scrapes fell.
fn handling_quantile_us(before: &[(f64, u64)], after: &[(f64, u64)], q: f64) -> Option<f64> {
    let counts: Vec<(f64, u64)> =
        after.iter().map(|&(b, n)| (b, n - before.iter().find(|(bb, _)| *bb == b).map_or(0, |x| x.1))).collect();
    let total = counts.last()?.1;
    let want = (q * total as f64).ceil() as u64;
    (total > 0).then(|| counts.iter().find(|(_, n)| *n >= want).map_or(f64::INFINITY, |(b, _)| b * 1e6))
}

fn clock_ticks_per_s() -> f64 {
    // Linux's USER_HZ is 100 on every architecture it exports to user space.
    100.0
}

// ---------------------------------------------------------------- responder

// ---------------------------------------------------------------- terminals

fn terminal_endpoint() -> Endpoint {
    let params = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
    let config = Config {
        algorithm: Algorithm::Lzss,
        mechanism: Mechanism::Dynamic,
        transport: Transport::Message,
        ..Config::default()
    };
    Endpoint::new(EndpointConfig::new(params, params, config)).unwrap()
}

struct Terminal {
    index: usize,
    socket: Rc<UdpSocket>,
    port: u16,
    target: SocketAddr,
    endpoint: Option<Endpoint>,
    instance: String,
    cseq: u32,
    pending: HashMap<u32, Instant>,
    failures: u64,
    /// Every datagram sent, in order, while recording for a replay.
    log: Option<Vec<Vec<u8>>>,
}

impl Terminal {
    fn via(&self, branch: u32) -> String {
        let mut v = format!("SIP/2.0/UDP 127.0.0.1:{};branch=z9hG4bK{}x{branch};rport", self.port, self.port);
        if self.endpoint.is_some() {
            v.push_str(&format!(";comp=sigcomp;sigcomp-id=\"<{}>\"", self.instance));
        }
        v
    }

    fn contact(&self) -> String {
        let comp = if self.endpoint.is_some() { ";comp=sigcomp" } else { "" };
        format!("<sip:user{}@127.0.0.1:{}{comp}>;+sip.instance=\"<{}>\"", self.index, self.port, self.instance)
    }

    /// An OPTIONS of about 700 bytes, as an IMS terminal sends it.
    fn options(&mut self, ruri: &str) -> (u32, Vec<u8>) {
        self.cseq += 1;
        let n = self.cseq;
        let text = format!(
            "OPTIONS {ruri} SIP/2.0\r\nVia: {via}\r\nMax-Forwards: 70\r\n\
             From: \"User {i}\" <sip:user{i}@127.0.0.1>;tag={port}a{i}\r\nTo: <{ruri}>\r\n\
             Call-ID: {port}-{n}-load@127.0.0.1\r\nCSeq: {n} OPTIONS\r\nContact: {contact}\r\n\
             Accept: application/sdp, application/pidf+xml, message/sipfrag\r\nAccept-Encoding: identity\r\n\
             Accept-Language: en\r\nAllow: INVITE, ACK, CANCEL, BYE, OPTIONS, MESSAGE, NOTIFY, UPDATE, PRACK, REFER, INFO\r\n\
             Supported: path, gruu, outbound, 100rel, timer, replaces, sec-agree\r\n\
             User-Agent: sigkit-proxy-load/1.0 (IMS terminal simulation)\r\n\
             P-Preferred-Identity: <sip:user{i}@ims.example.net>\r\n\
             P-Access-Network-Info: 3GPP-UTRAN-TDD; utran-cell-id-3gpp=23456789ABCDE\r\nContent-Length: 0\r\n\r\n",
            via = self.via(n),
            i = self.index,
            port = self.port,
            contact = self.contact(),
        );
        (n, text.into_bytes())
    }

    fn register(&mut self, domain: &str, authorization: Option<&str>) -> Vec<u8> {
        self.cseq += 1;
        let n = self.cseq;
        let auth = authorization.map(|a| format!("Authorization: {a}\r\n")).unwrap_or_default();
        format!(
            "REGISTER sip:{domain} SIP/2.0\r\nVia: {via}\r\nMax-Forwards: 70\r\n\
             From: <sip:user{i}@127.0.0.1>;tag={port}r\r\nTo: <sip:user{i}@127.0.0.1>\r\n\
             Call-ID: {port}-reg@127.0.0.1\r\nCSeq: {n} REGISTER\r\nContact: {contact}\r\n{auth}Expires: 3600\r\n\
             Supported: path, gruu, outbound\r\nUser-Agent: sigkit-proxy-load/1.0\r\nContent-Length: 0\r\n\r\n",
            via = self.via(n),
            i = self.index,
            port = self.port,
            contact = self.contact(),
        )
        .into_bytes()
    }

    /// The bytes on the wire: compressed in the proxy's compartment where
    /// the terminal speaks SigComp.
    fn wire(&mut self, sip: &[u8]) -> Vec<u8> {
        let bytes = match &mut self.endpoint {
            Some(e) => e.compress(Instant::now(), PROXY, sip).expect("compress").message,
            None => sip.to_vec(),
        };
        if let Some(log) = &mut self.log {
            log.push(bytes.clone());
        }
        bytes
    }

    /// A received datagram as SIP (decompressed, its state accepted).
    fn unwrap(&mut self, bytes: &[u8]) -> Option<Vec<u8>> {
        if bytes.first().is_some_and(|b| b & 0xF8 == 0xF8) {
            let e = self.endpoint.as_mut()?;
            match e.receive(bytes, Transport::Message) {
                Ok(Received::Message(incoming)) => Some(e.accept(Instant::now(), incoming, PROXY).message),
                _ => {
                    self.failures += 1;
                    None
                }
            }
        } else {
            Some(bytes.to_vec())
        }
    }
}

async fn make_terminals(n: usize, target: SocketAddr, sigcomp: bool) -> Vec<Rc<RefCell<Terminal>>> {
    let mut out = Vec::with_capacity(n);
    for index in 0..n {
        let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let port = socket.local_addr().unwrap().port();
        out.push(Rc::new(RefCell::new(Terminal {
            index,
            socket: Rc::new(socket),
            port,
            target,
            endpoint: sigcomp.then(terminal_endpoint),
            instance: format!("urn:uuid:00000000-0000-4000-8000-{port:012x}"),
            cseq: 0,
            pending: HashMap::new(),
            failures: 0,
            log: None,
        })));
    }
    out
}

/// One SIP message from `t` within `wait`, decompressed.
async fn receive_one(t: &Rc<RefCell<Terminal>>, wait: Duration) -> Option<Vec<u8>> {
    let socket = t.borrow().socket.clone();
    let mut buf = vec![0u8; 65536];
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let (n, _) = tokio::time::timeout_at(deadline, socket.recv_from(&mut buf)).await.ok()?.ok()?;
        if let Some(sip) = t.borrow_mut().unwrap(&buf[..n]) {
            return Some(sip);
        }
    }
}

fn status_of(sip: &[u8]) -> Option<u16> {
    Message::parse(sip).ok()?.status_code()
}

/// Registers every terminal (digest credentials when challenged, as
/// Kamailio does), in batches so the sockets' buffers hold the burst.
async fn register_all(terms: &[Rc<RefCell<Terminal>>], domain: &str) -> usize {
    let mut ok = 0;
    for batch in terms.chunks(100) {
        let mut todo: Vec<(Rc<RefCell<Terminal>>, Option<String>)> = batch.iter().map(|t| (t.clone(), None)).collect();
        for _round in 0..4 {
            for (t, auth) in &todo {
                let (bytes, target, socket) = {
                    let mut tm = t.borrow_mut();
                    let sip = tm.register(domain, auth.as_deref());
                    (tm.wire(&sip), tm.target, tm.socket.clone())
                };
                let _ = socket.send_to(&bytes, target).await;
            }
            let mut next = Vec::new();
            for (t, _) in todo {
                let Some(sip) = receive_one(&t, Duration::from_millis(1000)).await else {
                    next.push((t, None));
                    continue;
                };
                match status_of(&sip) {
                    Some(200..=299) => ok += 1,
                    Some(401) => {
                        let msg = Message::parse(&sip).unwrap();
                        let header = msg
                            .headers()
                            .iter()
                            .find(|h| h.name.eq_ignore_ascii_case("WWW-Authenticate"))
                            .and_then(|h| h.value_str().ok())
                            .unwrap_or("")
                            .to_string();
                        let realm = challenge_param(&header, "realm").unwrap_or(domain).to_string();
                        let nonce = challenge_param(&header, "nonce").unwrap_or("").to_string();
                        let user = format!("user{}", t.borrow().index);
                        let uri = format!("sip:{domain}");
                        let ha1 = md5_hex(&format!("{user}:{realm}:secret"));
                        let ha2 = md5_hex(&format!("REGISTER:{uri}"));
                        let response = md5_hex(&format!("{ha1}:{nonce}:{ha2}"));
                        let auth = format!(
                            "Digest username=\"{user}\", realm=\"{realm}\", nonce=\"{nonce}\", uri=\"{uri}\", response=\"{response}\", algorithm=MD5"
                        );
                        next.push((t, Some(auth)));
                    }
                    _ => next.push((t, None)),
                }
            }
            todo = next;
            if todo.is_empty() {
                break;
            }
        }
    }
    ok
}

// ---------------------------------------------------------------- probe

/// A terminal of its own on its own thread (blocked in `recv` between
/// messages, so its clock readings do not wait for the load generator's
/// work): registers, then sends an OPTIONS every 2 ms and waits for its
/// answer. Its round trips are the latency figures.
struct Probe {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Histogram<u64>>,
}

impl Probe {
    fn start(target: SocketAddr, sigcomp: bool, ruri: String) -> Probe {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("probe".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let local = tokio::task::LocalSet::new();
                local.block_on(&runtime, async move {
                    let mut h = Histogram::new_with_bounds(1, 10_000_000_000, 3).unwrap();
                    let terms = make_terminals(1, target, sigcomp).await;
                    let t = &terms[0];
                    t.borrow_mut().index = 999_999;
                    register_all(&terms, "127.0.0.1").await;
                    let mut n = 0u64;
                    while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                        let (cseq, bytes, socket) = {
                            let mut tm = t.borrow_mut();
                            let (cseq, sip) = tm.options(&ruri);
                            (cseq, tm.wire(&sip), tm.socket.clone())
                        };
                        let sent = Instant::now();
                        let _ = socket.send_to(&bytes, target).await;
                        let deadline = sent + Duration::from_millis(200);
                        while let Some(sip) = receive_one(t, deadline.saturating_duration_since(Instant::now())).await {
                            let at = Instant::now();
                            if Message::parse(&sip).ok().and_then(|m| m.cseq().ok().map(|c| c.number)) == Some(cseq) {
                                n += 1;
                                // The first exchanges carry the bytecode and
                                // build the compartments' states.
                                if n > 20 {
                                    let _ = h.record((at.duration_since(sent).as_nanos() as u64).max(1));
                                }
                                break;
                            }
                        }
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    h
                })
            })
            .unwrap();
        Probe { stop, thread }
    }

    fn finish(self) -> Histogram<u64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

// ---------------------------------------------------------------- load steps

#[derive(Default)]
struct Tally {
    measuring: bool,
    received: u64,
    latency: Option<Histogram<u64>>,
}

struct Load {
    terms: Vec<Rc<RefCell<Terminal>>>,
    tally: Rc<RefCell<Tally>>,
    receivers: Vec<tokio::task::JoinHandle<()>>,
    ruri: String,
    /// Where the probe sends and whether it speaks SigComp.
    probe: Option<(SocketAddr, bool)>,
}

impl Load {
    fn new(terms: Vec<Rc<RefCell<Terminal>>>, ruri: String) -> Load {
        let tally = Rc::new(RefCell::new(Tally::default()));
        let receivers = terms
            .iter()
            .map(|t| {
                let (t, tally) = (t.clone(), tally.clone());
                tokio::task::spawn_local(async move {
                    let socket = t.borrow().socket.clone();
                    let mut buf = vec![0u8; 65536];
                    loop {
                        let Ok((n, _)) = socket.recv_from(&mut buf).await else { continue };
                        let at = Instant::now();
                        let Some(sip) = t.borrow_mut().unwrap(&buf[..n]) else { continue };
                        let Some(cseq) = Message::parse(&sip).ok().and_then(|m| m.cseq().ok().map(|c| c.number)) else {
                            continue;
                        };
                        let Some(sent) = t.borrow_mut().pending.remove(&cseq) else { continue };
                        let mut tally = tally.borrow_mut();
                        if tally.measuring {
                            tally.received += 1;
                            let ns = at.duration_since(sent).as_nanos() as u64;
                            if let Some(h) = &mut tally.latency {
                                let _ = h.record(ns.max(1));
                            }
                        }
                    }
                })
            })
            .collect();
        let probe = None;
        Load { terms, tally, receivers, ruri, probe }
    }

    /// Offers `rate` requests per second for `length`, round robin over
    /// the terminals; what is unanswered 500 ms after the end is lost.
    async fn step(&self, rate: u64, length: Duration, watch: &Watch) -> StepResult {
        for t in &self.terms {
            t.borrow_mut().pending.clear();
        }
        {
            let mut tally = self.tally.borrow_mut();
            tally.measuring = true;
            tally.received = 0;
            tally.latency = Some(Histogram::new_with_bounds(1, 10_000_000_000, 3).unwrap());
        }
        let probe = self.probe.map(|(target, sigcomp)| Probe::start(target, sigcomp, self.ruri.clone()));
        let before = watch.sample();
        let start = Instant::now();
        let total = (rate as f64 * length.as_secs_f64()) as u64;
        let mut sent = 0u64;
        let mut send_errors = 0u64;
        let mut next = 0usize;
        while sent < total {
            let due = ((start.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
            while sent < due {
                let t = &self.terms[next % self.terms.len()];
                next += 1;
                let (bytes, socket, target) = {
                    let mut tm = t.borrow_mut();
                    let (cseq, sip) = tm.options(&self.ruri);
                    let bytes = tm.wire(&sip);
                    tm.pending.insert(cseq, Instant::now());
                    (bytes, tm.socket.clone(), tm.target)
                };
                if socket.try_send_to(&bytes, target).is_err() {
                    send_errors += 1;
                }
                sent += 1;
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        let offered_for = start.elapsed();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = watch.sample();
        let probed = probe.map(Probe::finish);
        let mut tally = self.tally.borrow_mut();
        tally.measuring = false;
        let h = tally.latency.take().unwrap();
        let failures: u64 = self.terms.iter().map(|t| t.borrow().failures).sum();
        StepResult {
            offered: rate,
            sent_rate: sent as f64 / offered_for.as_secs_f64(),
            sent,
            received: tally.received,
            send_errors,
            decompression_failures: failures,
            p50_us: h.value_at_quantile(0.5) as f64 / 1000.0,
            p99_us: h.value_at_quantile(0.99) as f64 / 1000.0,
            probe: probed.map(|p| {
                (p.value_at_quantile(0.5) as f64 / 1000.0, p.value_at_quantile(0.99) as f64 / 1000.0, p.len())
            }),
            seconds: offered_for.as_secs_f64(),
            cpu: watch.cpu(&before, &after),
            rss_mib: watch.rss_mib(),
            handling: watch.handling(&before, &after),
            waits: watch.waits(&before, &after),
        }
    }

    fn stop(self) {
        for r in self.receivers {
            r.abort();
        }
    }
}

/// The processes whose CPU and memory are reported.
struct Watch {
    proxy: Vec<u32>,
    upstream: Upstream,
    /// The proxy's metrics endpoint, for its handling-time histogram.
    metrics: Option<SocketAddr>,
}

enum Upstream {
    Responder,
    Kamailio(Vec<u32>),
}

struct Sample {
    at: Instant,
    proxy: u64,
    generator: u64,
    upstream: u64,
    machine: u64,
    handling: Vec<(f64, u64)>,
    /// Run-queue waits (ns, time slices) of the proxy's and this program's threads.
    proxy_wait: (u64, u64),
    generator_wait: (u64, u64),
}

impl Watch {
    fn sample(&self) -> Sample {
        let responder = thread_ticks("responder");
        let upstream = match &self.upstream {
            Upstream::Responder => responder,
            Upstream::Kamailio(pids) => process_ticks(pids),
        };
        let machine = machine_busy_ticks();
        Sample {
            at: Instant::now(),
            proxy: process_ticks(&self.proxy),
            generator: self_ticks() - responder,
            upstream,
            machine,
            handling: self.metrics.map(|m| handling_buckets(&http_get(m, "/metrics"))).unwrap_or_default(),
            proxy_wait: run_queue_wait(&self.proxy),
            generator_wait: run_queue_wait(&[std::process::id()]),
        }
    }

    /// The proxy's handling time p50 / p99 (µs) between two samples.
    fn handling(&self, a: &Sample, b: &Sample) -> Option<(f64, f64)> {
        Some((
            handling_quantile_us(&a.handling, &b.handling, 0.5)?,
            handling_quantile_us(&a.handling, &b.handling, 0.99)?,
        ))
    }

    /// Mean wait for a CPU per time slice (µs): the proxy's threads, this
    /// program's.
    fn waits(&self, a: &Sample, b: &Sample) -> [f64; 2] {
        let per = |x: (u64, u64), y: (u64, u64)| {
            let slices = y.1.saturating_sub(x.1);
            if slices == 0 {
                0.0
            } else {
                y.0.saturating_sub(x.0) as f64 / slices as f64 / 1000.0
            }
        };
        [per(a.proxy_wait, b.proxy_wait), per(a.generator_wait, b.generator_wait)]
    }

    /// Percent of one core: proxy, generator, upstream, and everything
    /// else on the machine (other users of the two cores).
    fn cpu(&self, a: &Sample, b: &Sample) -> [f64; 4] {
        let secs = b.at.duration_since(a.at).as_secs_f64() * clock_ticks_per_s();
        let pct = |x: u64, y: u64| (y.saturating_sub(x)) as f64 * 100.0 / secs;
        let ours = pct(a.proxy, b.proxy) + pct(a.generator, b.generator) + pct(a.upstream, b.upstream);
        [
            pct(a.proxy, b.proxy),
            pct(a.generator, b.generator),
            pct(a.upstream, b.upstream),
            (pct(a.machine, b.machine) - ours).max(0.0),
        ]
    }

    fn rss_mib(&self) -> f64 {
        rss_kib(&self.proxy) as f64 / 1024.0
    }
}

struct StepResult {
    offered: u64,
    sent_rate: f64,
    sent: u64,
    received: u64,
    send_errors: u64,
    decompression_failures: u64,
    p50_us: f64,
    p99_us: f64,
    /// The probe's round trip p50 and p99 (µs), and its sample count.
    probe: Option<(f64, f64, u64)>,
    seconds: f64,
    cpu: [f64; 4],
    rss_mib: f64,
    /// The proxy's handling time p50 / p99 (µs, bucket bounds).
    handling: Option<(f64, f64)>,
    /// Mean run-queue wait per time slice (µs): proxy, generator.
    waits: [f64; 2],
}

impl StepResult {
    fn loss(&self) -> f64 {
        1.0 - self.received as f64 / self.sent.max(1) as f64
    }

    /// Messages through the proxy's terminal side per second: requests
    /// in and responses out.
    fn messages_per_s(&self) -> f64 {
        (self.sent + self.received) as f64 / self.seconds
    }

    /// The proxy's CPU time per request and its response (µs).
    fn proxy_us_per_request(&self) -> f64 {
        self.cpu[0] * 10_000.0 / self.sent_rate.max(1.0)
    }

    fn probe_text(&self) -> String {
        match self.probe {
            Some((p50, p99, n)) => format!("{p50:.0} / {p99:.0} ({n})"),
            None => "—".into(),
        }
    }

    fn row(&self, label: &str) -> String {
        format!(
            "| {label} | {} | {:.0} | {:.0} | {:.2} % | {:.0} / {:.0} | {} | {} | {:.0} / {:.0} | {:.0} % ({:.0} µs/req) | {:.0} % | {:.0} % | {:.0} % | {:.0} | {} / {} |",
            self.offered,
            self.sent_rate,
            self.messages_per_s(),
            self.loss() * 100.0,
            self.p50_us,
            self.p99_us,
            self.probe_text(),
            self.handling.map_or("—".into(), |(a, b)| format!("≤ {a:.0} / ≤ {b:.0}")),
            self.waits[0],
            self.waits[1],
            self.cpu[0],
            self.proxy_us_per_request(),
            self.cpu[1],
            self.cpu[2],
            self.cpu[3],
            self.rss_mib,
            self.send_errors,
            self.decompression_failures,
        )
    }
}

const HEADER: &str = "| run | offered req/s | sent req/s | msgs/s (req+resp) | loss | load p50 / p99 µs | probe p50 / p99 µs (n) | proxy handling p50 / p99 µs | run-queue wait per slice µs: proxy / generator | CPU proxy | CPU generator | CPU upstream | CPU others | proxy RSS MiB | send errors / decompression failures |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/// Steps the rate up until the loss reaches 1 %; the highest rate below
/// is the maximum.
async fn find_max(load: &Load, rates: &[u64], step: Duration, watch: &Watch, label: &str) -> (u64, Vec<StepResult>) {
    let mut best = 0;
    let mut rows = Vec::new();
    for &r in rates {
        let s = load.step(r, step, watch).await;
        println!("{}", s.row(label));
        let good = s.loss() < 0.01 && s.sent_rate >= 0.97 * r as f64;
        rows.push(s);
        if !good {
            break;
        }
        best = r;
    }
    (best, rows)
}

// ---------------------------------------------------------------- scenarios

struct Summary {
    lines: Vec<String>,
}

fn latency_line(what: &str, p: &StepResult, d: &StepResult) -> String {
    let (Some((pp50, pp99, _)), Some((dp50, dp99, _))) = (p.probe, d.probe) else { return String::new() };
    format!(
        "| added latency {what} ({} req/s offered): p50 / p99 | {:.0} / {:.0} µs (probe through the proxy {:.0} / {:.0}, straight {:.0} / {:.0}) | p99 ≤ 1 ms at 50 % |",
        p.offered,
        pp50 - dp50,
        pp99 - dp99,
        pp50,
        pp99,
        dp50,
        dp99
    )
}

async fn proxy_scenarios(args: &Args, dir: &Path, summary: &mut Summary) {
    // Pure proxy: the responder as upstream.
    let responder = start_responder();
    let proxy = start_proxy(args, dir, "proxy-responder", responder, 4096);
    let watch =
        Watch { proxy: vec![proxy.process.child.id()], upstream: Upstream::Responder, metrics: Some(proxy.metrics) };
    let terms = make_terminals(args.terminals, proxy.listen, true).await;
    let registered = register_all(&terms, "127.0.0.1").await;
    println!("\n{registered} of {} SigComp terminals registered through the proxy (responder upstream)", terms.len());
    let mut load = Load::new(terms, "sip:bob@127.0.0.1".into());
    println!("{HEADER}");
    let (max, _) = find_max(&load, &args.rates, args.step, &watch, "proxy → responder").await;
    load.probe = Some((proxy.listen, true));
    let half = load.step(max / 2, args.step, &watch).await;
    println!("{}", half.row("proxy → responder @50 %"));
    let ninety = load.step(max * 9 / 10, args.step, &watch).await;
    println!("{}", ninety.row("proxy → responder @90 %"));
    load.probe = None;
    let m = http_get(proxy.metrics, "/metrics");
    let ratio_in = metric(&m, "sigkit_proxy_compression_ratio_in");
    let ratio_out = metric(&m, "sigkit_proxy_compression_ratio_out");
    let accepted = metric(&m, "sigkit_proxy_state_decisions_total{decision=\"accepted\"}");
    let declined = metric(&m, "sigkit_proxy_state_decisions_total{decision=\"declined\"}");
    let cycles = metric(&m, "sigkit_proxy_udvm_cycles_total");
    let msgs = metric(&m, "sigkit_proxy_messages_received_total{side=\"terminal\"}");
    println!(
        "proxy metrics: SigComp/SIP bytes in {ratio_in:.3}, out {ratio_out:.3}; states accepted {accepted}, declined {declined}; {:.0} UDVM cycles per message in",
        cycles / msgs.max(1.0)
    );
    load.stop();

    // The same rate from 48 terminals: every compartment stays among the
    // endpoint's 64 hot ones (no packing and unpacking of states).
    let few = make_terminals(48, proxy.listen, true).await;
    register_all(&few, "127.0.0.1").await;
    let load = Load::new(few, "sip:bob@127.0.0.1".into());
    let hot = load.step(max * 9 / 10, args.step, &watch).await;
    println!("{}", hot.row("proxy → responder @90 %, 48 terminals"));
    load.stop();
    drop(proxy);

    // Reference: plain SIP straight to the responder.
    let plain = make_terminals(args.terminals, responder, false).await;
    let mut load = Load::new(plain, "sip:bob@127.0.0.1".into());
    load.probe = Some((responder, false));
    let watch_plain = Watch { proxy: Vec::new(), upstream: Upstream::Responder, metrics: None };
    let direct_half = load.step(max / 2, args.step, &watch_plain).await;
    println!("{}", direct_half.row("plain → responder @50 %"));
    let direct_ninety = load.step(max * 9 / 10, args.step, &watch_plain).await;
    println!("{}", direct_ninety.row("plain → responder @90 %"));
    load.stop();

    summary.lines.push(format!(
        "| proxy throughput, {} terminals, responder upstream (<1 % loss) | {} SigComp msgs/s ({} req/s); at 90 %: CPU proxy {:.0} % ({:.0} µs per request and response) / generator {:.0} % / responder {:.0} %, proxy RSS {:.0} MiB | ≥ 50,000 msgs/s |",
        args.terminals,
        2 * max,
        max,
        ninety.cpu[0],
        ninety.proxy_us_per_request(),
        ninety.cpu[1],
        ninety.cpu[2],
        ninety.rss_mib
    ));
    summary.lines.push(format!(
        "| the same rate ({} req/s) from 48 terminals (all compartments hot) | proxy CPU {:.0} % ({:.0} µs per request and response), loss {:.2} % | — |",
        hot.offered,
        hot.cpu[0],
        hot.proxy_us_per_request(),
        hot.loss() * 100.0
    ));
    summary.lines.push(latency_line("at 50 %", &half, &direct_half));
    summary.lines.push(latency_line("at 90 %", &ninety, &direct_ninety));
}

/// The proxy's own limit, with a generator that costs little: the
/// terminals' SigComp datagrams are recorded in a live run through one
/// proxy (their compression, and their decompression of the answers, is
/// the live generator's cost), then sent again, in the same order per
/// terminal and from the same sockets, to a fresh proxy, while only the
/// answers are counted. A terminal's compartment at the fresh proxy goes
/// through the same messages, so it holds the same states, and every
/// recorded message decompresses as it did the first time (RFC 3320
/// §6.2: states are created by the messages alone); a lost or refused
/// one shows as loss. Steps up until 1 % or more go unanswered.
async fn replay_scenario(args: &Args, dir: &Path, summary: &mut Summary) {
    let responder = start_responder();
    let first = start_proxy(args, dir, "proxy-record", responder, 4096);
    let terms = make_terminals(args.terminals, first.listen, true).await;
    for t in &terms {
        t.borrow_mut().log = Some(Vec::new());
    }
    let registered = register_all(&terms, "127.0.0.1").await;
    let registration: Vec<usize> = terms.iter().map(|t| t.borrow().log.as_ref().map_or(0, Vec::len)).collect();
    let needed: f64 = args.replay_rates.iter().map(|&r| r as f64 * args.step.as_secs_f64()).sum();
    let record_for = Duration::from_secs_f64(needed * 1.02 / args.record_rate as f64);
    println!(
        "\nreplay: {registered} of {} terminals registered; recording {:.0} requests at {} req/s ({:.0} s)",
        terms.len(),
        needed,
        args.record_rate,
        record_for.as_secs_f64()
    );
    let load = Load::new(terms.clone(), "sip:bob@127.0.0.1".into());
    let watch_first =
        Watch { proxy: vec![first.process.child.id()], upstream: Upstream::Responder, metrics: Some(first.metrics) };
    println!("{HEADER}");
    let recorded = load.step(args.record_rate, record_for, &watch_first).await;
    println!("{}", recorded.row("recording (live generator)"));
    if recorded.loss() > 0.001 {
        println!("replay: {:.2} % of the recording was lost; lower --record-rate", recorded.loss() * 100.0);
    }
    load.stop();
    drop(first);

    // Answers of the recording still queued in the sockets must not count.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut buf = vec![0u8; 65536];
    for t in &terms {
        let socket = t.borrow().socket.clone();
        while socket.try_recv_from(&mut buf).is_ok() {}
    }
    let proxy = start_proxy(args, dir, "proxy-replay", responder, 4096);
    let watch =
        Watch { proxy: vec![proxy.process.child.id()], upstream: Upstream::Responder, metrics: Some(proxy.metrics) };
    let answers = Rc::new(std::cell::Cell::new(0u64));
    let receivers: Vec<_> = terms
        .iter()
        .map(|t| {
            let (socket, answers) = (t.borrow().socket.clone(), answers.clone());
            tokio::task::spawn_local(async move {
                let mut buf = vec![0u8; 65536];
                loop {
                    if socket.recv_from(&mut buf).await.is_ok() {
                        answers.set(answers.get() + 1);
                    }
                }
            })
        })
        .collect();
    let logs: Vec<Vec<Vec<u8>>> = terms.iter().map(|t| t.borrow_mut().log.take().unwrap_or_default()).collect();
    let sockets: Vec<Rc<UdpSocket>> = terms.iter().map(|t| t.borrow().socket.clone()).collect();
    // The registrations first, a hundred terminals at a time.
    let mut cursor = registration.clone();
    for batch in (0..terms.len()).collect::<Vec<_>>().chunks(100) {
        for &i in batch {
            for m in &logs[i][..registration[i]] {
                let _ = sockets[i].send_to(m, proxy.listen).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!("replay: {} answers to the {} recorded registrations", answers.get(), registration.iter().sum::<usize>());
    let mut best = 0;
    let mut at_best = None;
    let mut next = 0usize;
    'steps: for &rate in &args.replay_rates {
        let before_answers = answers.get();
        let before = watch.sample();
        let start = Instant::now();
        let total = (rate as f64 * args.step.as_secs_f64()) as u64;
        let (mut sent, mut send_errors) = (0u64, 0u64);
        while sent < total {
            let due = ((start.elapsed().as_secs_f64() * rate as f64) as u64).min(total);
            while sent < due {
                let i = next % logs.len();
                next += 1;
                let Some(m) = logs[i].get(cursor[i]) else {
                    println!("replay: the recording is used up");
                    break 'steps;
                };
                cursor[i] += 1;
                if sockets[i].try_send_to(m, proxy.listen).is_err() {
                    send_errors += 1;
                }
                sent += 1;
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        let offered_for = start.elapsed();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = watch.sample();
        let received = answers.get() - before_answers;
        let step = StepResult {
            offered: rate,
            sent_rate: sent as f64 / offered_for.as_secs_f64(),
            sent,
            received,
            send_errors,
            decompression_failures: 0,
            p50_us: 0.0,
            p99_us: 0.0,
            probe: None,
            seconds: offered_for.as_secs_f64(),
            cpu: watch.cpu(&before, &after),
            rss_mib: watch.rss_mib(),
            handling: watch.handling(&before, &after),
            waits: watch.waits(&before, &after),
        };
        println!("{}", step.row("replay → proxy → responder"));
        let good = step.loss() < 0.01 && step.sent_rate >= 0.97 * rate as f64;
        if !good {
            break;
        }
        best = rate;
        at_best = Some(step);
    }
    for r in receivers {
        r.abort();
    }
    let m = http_get(proxy.metrics, "/metrics");
    let nacks = m
        .lines()
        .filter(|l| l.starts_with("sigkit_proxy_nacks_sent_total{"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum::<u64>();
    let accepted = metric(&m, "sigkit_proxy_state_decisions_total{decision=\"accepted\"}");
    println!("replay proxy metrics: NACKs sent {nacks}, states accepted {accepted}");
    drop(proxy);
    let Some(b) = at_best else { return };
    let per_core = b.messages_per_s() / (b.cpu[0] / 100.0).max(0.01);
    summary.lines.push(format!(
        "| proxy throughput with a replaying generator ({} terminals, recorded SigComp datagrams, responder upstream; <1 % loss) | {:.0} SigComp msgs/s ({best} req/s); CPU proxy {:.0} % ({:.0} µs per request and response), generator {:.0} %, responder {:.0} %, others {:.0} %: {:.0} msgs/s per proxy core-second; NACKs {nacks} | ≥ 50,000 msgs/s on 2 cores |",
        args.terminals,
        b.messages_per_s(),
        b.cpu[0],
        b.proxy_us_per_request(),
        b.cpu[1],
        b.cpu[2],
        b.cpu[3],
        per_core,
    ));
}

async fn kamailio_scenarios(args: &Args, dir: &Path, summary: &mut Summary) {
    let kport = free_port();
    let kamailio = start_kamailio(dir, kport);
    std::thread::sleep(Duration::from_millis(300));
    let kpids = process_tree(kamailio.child.id());
    let kaddr = SocketAddr::from((LOCALHOST, kport));
    let ruri = format!("sip:nobody@127.0.0.1:{kport}");
    let proxy = start_proxy(args, dir, "proxy-kamailio", kaddr, 4096);
    let watch = Watch {
        proxy: vec![proxy.process.child.id()],
        upstream: Upstream::Kamailio(kpids.clone()),
        metrics: Some(proxy.metrics),
    };
    let terms = make_terminals(args.terminals, proxy.listen, true).await;
    let registered = register_all(&terms, "127.0.0.1").await;
    println!("\n{registered} of {} SigComp terminals registered with Kamailio through the proxy", terms.len());
    let mut load = Load::new(terms, ruri.clone());
    println!("{HEADER}");
    let (max, _) = find_max(&load, &args.rates, args.step, &watch, "proxy → Kamailio").await;
    load.probe = Some((proxy.listen, true));
    let half = load.step(max / 2, args.step, &watch).await;
    println!("{}", half.row("proxy → Kamailio @50 %"));
    load.stop();
    drop(proxy);

    let plain = make_terminals(args.terminals, kaddr, false).await;
    let mut load = Load::new(plain, ruri);
    let watch_plain = Watch { proxy: Vec::new(), upstream: Upstream::Kamailio(kpids), metrics: None };
    let (kmax, _) = find_max(&load, &args.rates, args.step, &watch_plain, "plain → Kamailio").await;
    load.probe = Some((kaddr, false));
    let direct_half = load.step(max / 2, args.step, &watch_plain).await;
    println!("{}", direct_half.row("plain → Kamailio @50 % of the proxy's"));
    load.stop();
    drop(kamailio);
    summary.lines.push(format!(
        "| proxy throughput, Kamailio upstream (<1 % loss) | {} SigComp msgs/s ({} req/s); at 50 %: CPU proxy {:.0} % / generator {:.0} % / Kamailio {:.0} % | ≥ 50,000 msgs/s |",
        2 * max, max, half.cpu[0], half.cpu[1], half.cpu[2]
    ));
    summary.lines.push(latency_line("with Kamailio at 50 %", &half, &direct_half));
    summary.lines.push(format!(
        "| reference: plain SIP straight to Kamailio (<1 % loss) | {} SIP msgs/s ({} req/s); at {} req/s CPU generator {:.0} % / Kamailio {:.0} % | — |",
        2 * kmax, kmax, direct_half.offered, direct_half.cpu[1], direct_half.cpu[2]
    ));
}

/// Registers `n` idle terminals, each its own compartment (a fresh
/// SigComp endpoint and `sigcomp-id` per terminal, sent from a pool of
/// sockets, one REGISTER in flight per socket), and divides the proxy's
/// RSS growth by them.
async fn memory_scenario(args: &Args, dir: &Path, summary: &mut Summary) {
    let responder = start_responder();
    let proxy = start_proxy(args, dir, "proxy-memory", responder, 1024);
    let pid = vec![proxy.process.child.id()];
    let rss_before = rss_kib(&pid);
    let sockets = 256usize;
    let n = args.idle;
    let start = Instant::now();
    let registered = Rc::new(RefCell::new(0usize));
    let mut tasks = Vec::new();
    for s in 0..sockets {
        let target = proxy.listen;
        let registered = registered.clone();
        tasks.push(tokio::task::spawn_local(async move {
            let socket = Rc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
            let port = socket.local_addr().unwrap().port();
            let mut index = s;
            while index < n {
                let term = Rc::new(RefCell::new(Terminal {
                    index,
                    socket: socket.clone(),
                    port,
                    target,
                    endpoint: Some(terminal_endpoint()),
                    instance: format!("urn:uuid:00000000-0000-4000-8000-{index:012x}"),
                    cseq: 0,
                    pending: HashMap::new(),
                    failures: 0,
                    log: None,
                }));
                for _attempt in 0..3 {
                    let bytes = {
                        let mut t = term.borrow_mut();
                        let sip = t.register("127.0.0.1", None);
                        t.wire(&sip)
                    };
                    let _ = socket.send_to(&bytes, target).await;
                    if let Some(sip) = receive_one(&term, Duration::from_millis(500)).await {
                        if matches!(status_of(&sip), Some(200..=299)) {
                            *registered.borrow_mut() += 1;
                            break;
                        }
                    }
                }
                index += sockets;
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let took = start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(1200));
    let rss_after = rss_kib(&pid);
    let m = http_get(proxy.metrics, "/metrics");
    let live = metric(&m, "sigkit_proxy_registered_terminals");
    let compartments = metric(&m, "sigkit_proxy_compartments");
    let state_bytes = metric(&m, "sigkit_proxy_state_bytes");
    let registered = *registered.borrow();
    let per = (rss_after.saturating_sub(rss_before)) as f64 * 1024.0 / live.max(1.0);
    println!(
        "\nidle terminals: {registered} of {n} registered in {took:.1} s ({:.0}/s); proxy: {live} registered, {compartments} compartments, {:.1} MiB of SigComp state; RSS {:.1} MiB before, {:.1} MiB after: {:.0} bytes per terminal",
        registered as f64 / took,
        state_bytes / 1048576.0,
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        per
    );
    summary.lines.push(format!(
        "| memory per idle registered terminal ({} registered, {:.0} compartments) | {:.1} KiB (RSS {:.0} → {:.0} MiB; SigComp state {:.1} KiB each); 100,000 would take {:.0} MiB | 100,000 in ≤ 1 GB |",
        live,
        compartments,
        per / 1024.0,
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        state_bytes / live.max(1.0) / 1024.0,
        (rss_before as f64 * 1024.0 + per * 100_000.0) / 1048576.0
    ));
    drop(proxy);
}

fn main() {
    let args = parse_args();
    assert!(args.sigkit.exists(), "{}: build it first (cargo build --release -p sigkit-cli)", args.sigkit.display());
    if let (true, Some((own, proxy_cpu))) = (args.pin, pinned_cpus()) {
        // Every thread of this program (those started later inherit it).
        let cpus = if proxy_cpu > own + 1 { format!("{own}-{}", proxy_cpu - 1) } else { own.to_string() };
        let ok = Command::new("taskset")
            .args(["-a", "-p", "-c", &cpus, &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "taskset failed: --pin needs util-linux's taskset");
        println!("pinned: this program on CPU {cpus}, the proxy on CPU {proxy_cpu}");
    }
    let dir = std::env::temp_dir().join(format!("sigkit-proxy-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    let mut summary = Summary { lines: Vec::new() };
    let only = args.only.clone();
    let run = |what: &str| only.as_deref().is_none_or(|o| o == what);
    local.block_on(&runtime, async {
        if run("proxy") {
            proxy_scenarios(&args, &dir, &mut summary).await;
        }
        if run("replay") {
            replay_scenario(&args, &dir, &mut summary).await;
        }
        if run("kamailio") && args.kamailio {
            kamailio_scenarios(&args, &dir, &mut summary).await;
        }
        if run("memory") {
            memory_scenario(&args, &dir, &mut summary).await;
        }
    });
    println!("\n| figure | value | goal |\n|---|---|---|");
    for l in &summary.lines {
        println!("{l}");
    }
    println!("\n(logs and configurations: {})", dir.display());
}
