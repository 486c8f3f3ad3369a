//! The proxy's own limit, with a generator that costs little: the
//! terminals' SigComp datagrams are recorded in a live run through one
//! proxy (their compression, and their decompression of the answers, is
//! the live generator's cost), then sent again, in the same order per
//! terminal and from the same sockets, to a fresh proxy, while only the
//! answers are counted. A terminal's compartment at the fresh proxy goes
//! through the same messages, so it holds the same states, and every
//! recorded message decompresses as it did the first time (RFC 3320
//! §6.2: states are created by the messages alone); a lost or refused
//! one shows as loss. Steps up until 1 % or more go unanswered.

use std::cell::Cell;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::net::UdpSocket;

use crate::load::Load;
use crate::processes::{http_get, metric, start_proxy, ProxyProcess};
use crate::responder::start_responder;
use crate::scenarios::Summary;
use crate::step::{StepResult, HEADER};
use crate::terminal::{make_terminals, register_all, SharedTerminal};
use crate::watch::{Upstream, Watch};
use crate::Args;

/// What each terminal sent through the recording proxy.
struct Recording {
    sockets: Vec<Rc<UdpSocket>>,
    /// Each terminal's datagrams in the order sent.
    logs: Vec<Vec<Vec<u8>>>,
    /// How many of each terminal's datagrams are its registration.
    registration: Vec<usize>,
}

pub async fn replay_scenario(args: &Args, dir: &Path, summary: &mut Summary) -> Result<(), String> {
    let responder = start_responder();
    let recording = record(args, dir, responder).await?;
    let proxy = start_proxy(args, dir, "proxy-replay", responder, 4096)?;
    let watch = Watch { proxy: vec![proxy.pid()], upstream: Upstream::Responder, metrics: Some(proxy.metrics) };
    let answers = Rc::new(Cell::new(0u64));
    let per_terminal: Vec<Rc<Cell<u64>>> = recording.sockets.iter().map(|_| Rc::new(Cell::new(0))).collect();
    let receivers: Vec<_> = recording
        .sockets
        .iter()
        .zip(&per_terminal)
        .map(|(socket, mine)| tokio::task::spawn_local(count_answers(socket.clone(), answers.clone(), mine.clone())))
        .collect();
    let unanswered = resend_registrations(&recording, proxy.listen, &per_terminal).await;
    println!(
        "replay: {} answers to the {} recorded registrations; {unanswered} terminals unanswered",
        answers.get(),
        recording.registration.iter().sum::<usize>()
    );
    if unanswered > 0 {
        println!("replay: NOT CLEAN: those terminals' later messages will be NACKed (STATE_NOT_FOUND)");
    }
    let (best, at_best) = replay_steps(args, &recording, &proxy, &watch, &answers).await;
    for r in receivers {
        r.abort();
    }
    let m = http_get(proxy.metrics, "/metrics");
    let nacks = nacks_sent(&m);
    let accepted = metric(&m, "sigkit_proxy_state_decisions_total{decision=\"accepted\"}");
    println!("replay proxy metrics: NACKs sent {nacks}, states accepted {accepted}");
    if nacks > 0 {
        println!("replay: NOT CLEAN: {nacks} recorded messages did not decompress at the fresh proxy");
    }
    drop(proxy);
    if let Some(b) = at_best {
        summary.lines.push(summary_line(args, best, &b, nacks));
    }
    Ok(())
}

/// The live run through a first proxy, long enough to record the
/// datagrams every replay step needs (2 % spare).
async fn record(args: &Args, dir: &Path, responder: SocketAddr) -> Result<Recording, String> {
    let first = start_proxy(args, dir, "proxy-record", responder, 4096)?;
    let terms = make_terminals(args.terminals, first.listen, true).await?;
    for t in &terms {
        t.borrow_mut().log = Some(Vec::new());
    }
    let registered = register_all(&terms, "127.0.0.1").await;
    let registration: Vec<usize> = terms.iter().map(|t| t.borrow().log.as_ref().map_or(0, Vec::len)).collect();
    let needed: f64 = args.replay_rates.iter().map(|&r| r as f64 * args.step().as_secs_f64()).sum();
    let record_for = Duration::from_secs_f64(needed * 1.02 / args.record_rate as f64);
    println!(
        "\nreplay: {registered} of {} terminals registered; recording {:.0} requests at {} req/s ({:.0} s)",
        terms.len(),
        needed,
        args.record_rate,
        record_for.as_secs_f64()
    );
    let load = Load::new(terms.clone(), "sip:bob@127.0.0.1".into());
    let watch_first = Watch { proxy: vec![first.pid()], upstream: Upstream::Responder, metrics: Some(first.metrics) };
    println!("{HEADER}");
    let recorded = load.step(args.record_rate, record_for, &watch_first).await;
    println!("{}", recorded.row("recording (live generator)"));
    if recorded.loss() > 0.001 {
        println!("replay: {:.2} % of the recording was lost; lower --record-rate", recorded.loss() * 100.0);
    }
    load.stop();
    drop(first);
    drain(&terms).await;
    let logs = terms.iter().map(|t| t.borrow_mut().log.take().unwrap_or_default()).collect();
    let sockets = terms.iter().map(|t| t.borrow().socket.clone()).collect();
    Ok(Recording { sockets, logs, registration })
}

/// Answers of the recording still queued in the sockets must not count.
async fn drain(terms: &[SharedTerminal]) {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut buf = vec![0u8; 65536];
    for t in terms {
        let socket = t.borrow().socket.clone();
        while socket.try_recv_from(&mut buf).is_ok() {}
    }
}

/// The NACKs the proxy sent, every reason added up.
fn nacks_sent(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("sigkit_proxy_nacks_sent_total{"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum()
}

async fn count_answers(socket: Rc<UdpSocket>, answers: Rc<Cell<u64>>, mine: Rc<Cell<u64>>) {
    let mut buf = vec![0u8; 65536];
    loop {
        if socket.recv_from(&mut buf).await.is_ok() {
            answers.set(answers.get() + 1);
            mine.set(mine.get() + 1);
        }
    }
}

/// The registrations first, a hundred terminals at a time; a terminal
/// whose registration got no answer (a datagram lost on a busy host) sends
/// it again, as its SIP transaction would (RFC 3261 §17.1.2.2), up to three
/// more times. The proxy absorbs a retransmission of a REGISTER it has
/// forwarded. Returns how many terminals stayed unanswered.
async fn resend_registrations(recording: &Recording, proxy: SocketAddr, per_terminal: &[Rc<Cell<u64>>]) -> usize {
    let mut todo: Vec<usize> = (0..recording.logs.len()).collect();
    for round in 0..4 {
        for batch in todo.chunks(100) {
            for &i in batch {
                for m in &recording.logs[i][..recording.registration[i]] {
                    let _ = recording.sockets[i].send_to(m, proxy).await;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        todo.retain(|&i| per_terminal[i].get() == 0);
        if todo.is_empty() {
            break;
        }
        println!("replay: {} registrations unanswered after round {}, sent again", todo.len(), round + 1);
    }
    todo.len()
}

/// The replay's steps up the rates, round robin over the terminals, each
/// sending its recorded datagrams in order; the highest good rate and its
/// step.
async fn replay_steps(
    args: &Args,
    recording: &Recording,
    proxy: &ProxyProcess,
    watch: &Watch,
    answers: &Cell<u64>,
) -> (u64, Option<StepResult>) {
    let (logs, sockets) = (&recording.logs, &recording.sockets);
    let mut cursor = recording.registration.clone();
    let mut best = 0;
    let mut at_best = None;
    let mut next = 0usize;
    'steps: for &rate in &args.replay_rates {
        let before_answers = answers.get();
        let before = watch.sample();
        let start = Instant::now();
        let total = (rate as f64 * args.step().as_secs_f64()) as u64;
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
        let step = StepResult {
            offered: rate,
            sent_rate: sent as f64 / offered_for.as_secs_f64(),
            sent,
            received: answers.get() - before_answers,
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
        if !step.good() {
            break;
        }
        best = rate;
        at_best = Some(step);
    }
    (best, at_best)
}

fn summary_line(args: &Args, best: u64, b: &StepResult, nacks: u64) -> String {
    let per_core = b.messages_per_s() / (b.cpu[0] / 100.0).max(0.01);
    format!(
        "| proxy throughput with a replaying generator ({} terminals, recorded SigComp datagrams, responder upstream; <1 % loss) | {:.0} SigComp msgs/s ({best} req/s); CPU proxy {:.0} % ({:.0} µs per request and response), generator {:.0} %, responder {:.0} %, others {:.0} %: {:.0} msgs/s per proxy core-second; NACKs {nacks} | ≥ 50,000 msgs/s on 2 cores |",
        args.terminals,
        b.messages_per_s(),
        b.cpu[0],
        b.proxy_us_per_request(),
        b.cpu[1],
        b.cpu[2],
        b.cpu[3],
        per_core,
    )
}
