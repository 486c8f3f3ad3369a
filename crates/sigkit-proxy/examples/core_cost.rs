//! The proxy core's own CPU per SigComp message, without sockets, threads
//! or another process on the CPU: what `scripts/bench-proxy.sh --only
//! replay` measures less the runtime (the socket calls, the hand-off to a
//! shard's worker, the timer) and less the host's noise.
//!
//! It is the replay scenario in one thread. Terminals (LZSS, dynamic, DMS
//! and SMS 8192, each its own `sigcomp-id` and address), the same OPTIONS
//! of about 700 bytes as the load generator's, register and send through a
//! first [`Proxy`] while an upstream function answers every request 200 OK;
//! their SigComp datagrams are recorded. A fresh proxy then takes the
//! recorded registrations, and the recorded requests are timed through it:
//! `from_terminal` (decompress, parse, rewrite, forward) and `from_upstream`
//! (parse, rewrite, compress toward the terminal) with their
//! `poll_transmit`s. The upstream's answers are built outside the timed
//! calls. Every recorded message must decompress at the fresh proxy (its
//! compartments go through the same messages, RFC 3320 §6.2), so a NACK
//! fails the run.
//!
//! Deterministic in what it executes, so it also serves callgrind:
//! `valgrind --tool=callgrind target/release/examples/core_cost --terminals 100 --rounds 20`.
//!
//! `cargo run --release -p sigkit-proxy --example core_cost -- [--level L]`

// An example measuring the core: a setup step that fails leaves nothing to
// measure, and the panic names it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

// The proxy examples' responder; only its answers are used here.
#[path = "support/responder.rs"]
#[allow(dead_code)]
mod responder;

use clap::Parser;
use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Algorithm, Config, Endpoint, EndpointConfig, Mechanism, Received};
use sigkit_proxy::core::{Encoding, LocalAddrs};
use sigkit_proxy::{Peer, Proxy, ProxyConfig, Side, SipTransport};

/// The proxy core's CPU per SigComp message, in one thread.
#[derive(Parser, Debug)]
struct Args {
    /// SigComp terminals, each its own compartment.
    #[arg(long, default_value_t = 1000)]
    terminals: usize,
    /// OPTIONS per terminal after its REGISTER (the timed messages).
    #[arg(long, default_value_t = 30)]
    rounds: usize,
    /// The proxy's `sigcomp.level` (1 fastest to 9; 0: its default).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=9))]
    level: u8,
    /// Timed passes over the recording, each through a fresh proxy; the
    /// median is reported.
    #[arg(long, default_value_t = 5)]
    passes: usize,
}

/// The proxy's listen address, its upstream socket and the upstream.
const LISTEN: &str = "127.0.0.1:5060";
const UPSTREAM_LOCAL: &str = "127.0.0.1:5062";
const UPSTREAM: &str = "127.0.0.1:5070";

/// The configuration `scripts/bench-proxy.sh` gives its proxy: one shard
/// here, every compartment hot, budgets lifted.
fn proxy(level: u8) -> Proxy {
    let level = if level == 0 { String::new() } else { format!("level = {level}\n") };
    let text = format!(
        "listen = [\"udp:{LISTEN}\"]\nupstream = \"udp:{UPSTREAM}\"\nmax_pending_registers_per_source = 1000000\n\
         [sigcomp]\n{level}max_compartments = 1000000\nmax_state_bytes = 8589934592\nhot_compartments = 1000000\n\
         [defence]\ncycles_per_source_per_s = 1000000000000\ncycles_burst = 1000000000000\n\
         messages_per_source_per_s = 1000000000\nmessages_burst = 1000000000\n\
         decompression_ms_per_s = 1000000\ndecompression_burst_ms = 1000000\nunknown_sources_percent = 100\n"
    );
    let config = ProxyConfig::from_toml("core_cost.toml", &text).unwrap();
    let addr = |s: &str| s.parse::<SocketAddr>().unwrap();
    let addrs = LocalAddrs {
        terminal: vec![(SipTransport::Udp, addr(LISTEN))],
        upstream: addr(UPSTREAM_LOCAL),
        upstream_peer: addr(UPSTREAM),
    };
    Proxy::new(&config, addrs).unwrap()
}

/// A terminal: its address, its SigComp endpoint, its CSeq.
struct Terminal {
    index: usize,
    addr: SocketAddr,
    endpoint: Endpoint,
    cseq: u32,
}

/// The proxy's compartment at the terminal.
const PROXY: CompartmentId = CompartmentId(1);

impl Terminal {
    fn new(index: usize) -> Terminal {
        let params = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
        let config = Config {
            algorithm: Algorithm::Lzss,
            mechanism: Mechanism::Dynamic,
            transport: Transport::Message,
            ..Config::default()
        };
        let addr = SocketAddr::from(([10, (index >> 16) as u8, (index >> 8) as u8, index as u8], 5080));
        Terminal { index, addr, endpoint: Endpoint::new(EndpointConfig::new(params, params, config)).unwrap(), cseq: 0 }
    }

    fn peer(&self) -> Peer {
        Peer { transport: SipTransport::Udp, addr: self.addr, local: None, conn: None }
    }

    /// The load generator's REGISTER (first) and OPTIONS (then) of about
    /// 700 bytes, as SIP.
    fn next_request(&mut self) -> Vec<u8> {
        self.cseq += 1;
        let (n, i, port) = (self.cseq, self.index, self.addr.port());
        let host = self.addr.ip();
        let instance = format!("urn:uuid:00000000-0000-4000-8000-{i:012x}");
        let via =
            format!("SIP/2.0/UDP {host}:{port};branch=z9hG4bK{i}x{n};rport;comp=sigcomp;sigcomp-id=\"<{instance}>\"");
        let contact = format!("<sip:user{i}@{host}:{port};comp=sigcomp>;+sip.instance=\"<{instance}>\"");
        if n == 1 {
            return format!(
                "REGISTER sip:127.0.0.1 SIP/2.0\r\nVia: {via}\r\nMax-Forwards: 70\r\n\
                 From: <sip:user{i}@127.0.0.1>;tag={i}r\r\nTo: <sip:user{i}@127.0.0.1>\r\n\
                 Call-ID: {i}-reg@{host}\r\nCSeq: {n} REGISTER\r\nContact: {contact}\r\nExpires: 3600\r\n\
                 Supported: path, gruu, outbound\r\nUser-Agent: sigkit-proxy-load/1.0\r\nContent-Length: 0\r\n\r\n"
            )
            .into_bytes();
        }
        format!(
            "OPTIONS sip:bob@127.0.0.1 SIP/2.0\r\nVia: {via}\r\nMax-Forwards: 70\r\n\
             From: \"User {i}\" <sip:user{i}@127.0.0.1>;tag={i}a{i}\r\nTo: <sip:bob@127.0.0.1>\r\n\
             Call-ID: {i}-{n}-load@{host}\r\nCSeq: {n} OPTIONS\r\nContact: {contact}\r\n\
             Accept: application/sdp, application/pidf+xml, message/sipfrag\r\nAccept-Encoding: identity\r\n\
             Accept-Language: en\r\nAllow: INVITE, ACK, CANCEL, BYE, OPTIONS, MESSAGE, NOTIFY, UPDATE, PRACK, REFER, INFO\r\n\
             Supported: path, gruu, outbound, 100rel, timer, replaces, sec-agree\r\n\
             User-Agent: sigkit-proxy-load/1.0 (IMS terminal simulation)\r\n\
             P-Preferred-Identity: <sip:user{i}@ims.example.net>\r\n\
             P-Access-Network-Info: 3GPP-UTRAN-TDD; utran-cell-id-3gpp=23456789ABCDE\r\nContent-Length: 0\r\n\r\n"
        )
        .into_bytes()
    }
}

/// The upstream's side of the proxy's socket pair.
fn upstream_peer() -> Peer {
    Peer { transport: SipTransport::Udp, addr: UPSTREAM.parse().unwrap(), local: None, conn: None }
}

/// What one pass through a proxy took: the time inside the proxy's calls
/// for the requests and for their answers, and how many of each.
#[derive(Default, Clone, Copy)]
struct Pass {
    requests: Duration,
    answers: Duration,
    exchanges: u64,
    /// The answers' bytes toward the terminals, compressed.
    answer_bytes: u64,
}

/// One request through `proxy` and its answer back, the proxy's calls
/// timed; the datagram toward the terminal.
fn exchange(proxy: &mut Proxy, now: Instant, from: Peer, datagram: &[u8], pass: &mut Pass) -> Vec<u8> {
    let t0 = Instant::now();
    proxy.from_terminal(now, from, datagram, Encoding::SigComp);
    let forwarded = proxy.poll_transmit().expect("the request forwarded upstream");
    pass.requests += t0.elapsed();
    assert_eq!(forwarded.side, Side::Upstream, "a request forwarded upstream");
    let reply = responder::answer(&forwarded.bytes).expect("the upstream answers the request");
    let t1 = Instant::now();
    proxy.from_upstream(now, upstream_peer(), &reply);
    let back = proxy.poll_transmit().expect("the answer sent to the terminal");
    pass.answers += t1.elapsed();
    assert!(back.encoding == Encoding::SigComp && back.to == from, "the answer compressed toward its terminal");
    pass.exchanges += 1;
    pass.answer_bytes += back.bytes.len() as u64;
    back.bytes
}

/// The live run: every terminal registers, then sends `rounds` OPTIONS,
/// a round at a time, decompressing each answer. Each terminal's datagrams
/// in order.
fn record(args: &Args, now: Instant) -> Vec<(Peer, Vec<Vec<u8>>)> {
    let mut proxy = proxy(args.level);
    let mut terminals: Vec<Terminal> = (0..args.terminals).map(Terminal::new).collect();
    let mut logs: Vec<Vec<Vec<u8>>> = vec![Vec::new(); terminals.len()];
    let mut pass = Pass::default();
    for _ in 0..=args.rounds {
        for (t, log) in terminals.iter_mut().zip(&mut logs) {
            let sip = t.next_request();
            let datagram = t.endpoint.compress(now, PROXY, &sip).unwrap().message;
            let back = exchange(&mut proxy, now, t.peer(), &datagram, &mut pass);
            match t.endpoint.receive(&back, Transport::Message) {
                Ok(Received::Message(incoming)) => {
                    let answer = t.endpoint.accept(now, incoming, PROXY).message;
                    assert!(answer.starts_with(b"SIP/2.0 200 OK"), "the terminal reads its 200 OK");
                }
                other => panic!("terminal {}: the answer did not decompress: {other:?}", t.index),
            }
            log.push(datagram);
        }
    }
    terminals.iter().map(|t| t.peer()).zip(logs).collect()
}

/// The recording through a fresh proxy: the registrations untimed, then
/// every OPTIONS timed.
fn replay(args: &Args, now: Instant, recording: &[(Peer, Vec<Vec<u8>>)]) -> Pass {
    let mut proxy = proxy(args.level);
    let mut untimed = Pass::default();
    for (peer, log) in recording {
        exchange(&mut proxy, now, *peer, &log[0], &mut untimed);
    }
    let mut pass = Pass::default();
    for round in 1..=args.rounds {
        for (peer, log) in recording {
            exchange(&mut proxy, now, *peer, &log[round], &mut pass);
        }
    }
    let nacks: u64 = proxy.snapshot().endpoint.nacks_sent_by_reason.iter().sum();
    assert_eq!(nacks, 0, "every recorded message decompresses at a fresh proxy");
    pass
}

fn main() {
    let args = Args::parse();
    let now = Instant::now();
    let recording = record(&args, now);
    eprintln!("recorded in {:.1} s", now.elapsed().as_secs_f64());
    let mut passes: Vec<Pass> = (0..args.passes.max(1)).map(|_| replay(&args, now, &recording)).collect();
    passes.sort_by_key(|p| p.requests + p.answers);
    let median = passes[passes.len() / 2];
    let us = |d: Duration| d.as_secs_f64() * 1e6 / median.exchanges as f64;
    let level = if args.level == 0 { "default".to_string() } else { args.level.to_string() };
    println!(
        "proxy core, {} terminals × {} OPTIONS, level {level}, median of {} passes: \
         {:.1} µs per request and its answer ({:.1} µs per SigComp message): request {:.1} µs, answer {:.1} µs; \
         answers {:.1} bytes compressed",
        args.terminals,
        args.rounds,
        passes.len(),
        us(median.requests + median.answers),
        us(median.requests + median.answers) / 2.0,
        us(median.requests),
        us(median.answers),
        median.answer_bytes as f64 / median.exchanges as f64,
    );
}
