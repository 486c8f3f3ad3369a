//! Memory per idle registered terminal: many terminals, each its own
//! compartment, register and stay idle; the proxy's RSS growth divided by
//! them.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::processes::{http_get, metric, start_proxy};
use crate::responder::start_responder;
use crate::scenarios::Summary;
use crate::terminal::{bind_loopback, receive_one, status_of, Terminal};
use crate::usage::rss_kib;
use crate::Args;

/// Sockets the idle terminals are spread over, one REGISTER in flight on
/// each.
const SOCKETS: usize = 256;

/// Registers terminals `first`, `first + SOCKETS`, ... below `n` from one
/// socket, each a fresh endpoint, up to three tries each; how many
/// registered, or why the socket or an endpoint could not be made.
async fn register_idle(first: usize, n: usize, target: SocketAddr) -> Result<usize, String> {
    let socket = Rc::new(bind_loopback().await?);
    let mut registered = 0;
    for index in (first..n).step_by(SOCKETS) {
        let term = Rc::new(RefCell::new(Terminal::idle(index, socket.clone(), target)?));
        for _attempt in 0..3 {
            let bytes = {
                let mut t = term.borrow_mut();
                let sip = t.register("127.0.0.1", None);
                t.wire(&sip)
            };
            let _ = socket.send_to(&bytes, target).await;
            if let Some(sip) = receive_one(&term, Duration::from_millis(500)).await {
                if matches!(status_of(&sip), Some(200..=299)) {
                    registered += 1;
                    break;
                }
            }
        }
    }
    Ok(registered)
}

/// Registers `--idle` terminals, each its own compartment (a fresh
/// SigComp endpoint and `sigcomp-id` per terminal, sent from a pool of
/// sockets, one REGISTER in flight per socket), and divides the proxy's
/// RSS growth by them.
pub async fn memory_scenario(args: &Args, dir: &Path, summary: &mut Summary) -> Result<(), String> {
    let responder = start_responder();
    let proxy = start_proxy(args, dir, "proxy-memory", responder, 1024)?;
    let pid = vec![proxy.pid()];
    let rss_before = rss_kib(&pid);
    let n = args.idle;
    let start = Instant::now();
    let tasks: Vec<_> = (0..SOCKETS).map(|s| tokio::task::spawn_local(register_idle(s, n, proxy.listen))).collect();
    let mut registered = 0usize;
    for t in tasks {
        // A task that panicked registered none; a socket or endpoint that
        // could not be made ends the run.
        registered += t.await.unwrap_or(Ok(0))?;
    }
    let took = start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(1200));
    let rss_after = rss_kib(&pid);
    let m = http_get(proxy.metrics, "/metrics");
    let live = metric(&m, "sigkit_proxy_registered_terminals");
    let compartments = metric(&m, "sigkit_proxy_compartments");
    let state_bytes = metric(&m, "sigkit_proxy_state_bytes");
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
    Ok(())
}
