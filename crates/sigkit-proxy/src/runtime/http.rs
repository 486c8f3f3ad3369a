//! The metrics listener: `GET /metrics` in the Prometheus text format,
//! and the read-only admin interface beside it ([`crate::admin`]):
//! `GET /status`, `GET /compartments`, `GET /registrations` as JSON. Each
//! answer is read from the shards one at a time, each under its lock, as
//! a metrics snapshot is; the lock is held while that shard's part is
//! copied out, never while the answer is written.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::{AcceptBackoff, Shared};
use crate::admin::{self, CompartmentList, Counts, RegistrationList, Route, Status};
use crate::connections::AcceptError;
use crate::core::Proxy;
use crate::metrics::Snapshot;

/// The longest request head read; a scrape or admin request is one line
/// and a few headers.
const MAX_REQUEST: usize = 8192;

/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Accepts connections on the metrics listener and answers one request on
/// each, until the proxy stops.
pub(super) async fn serve(shared: Arc<Shared>, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let mut backoff = AcceptBackoff::default();
    loop {
        let (stream, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => {
                    backoff.reset();
                    x
                }
                Err(e) => {
                    if AcceptError::of(&e).persists() {
                        tokio::select! {
                            _ = tokio::time::sleep(backoff.next()) => {}
                            _ = stop.changed() => return,
                        }
                    }
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        tokio::spawn(answer(shared.clone(), stream));
    }
}

/// Reads one request and writes its answer, then closes the connection.
async fn answer(shared: Arc<Shared>, mut stream: TcpStream) {
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    // The request line and headers end with an empty line.
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < MAX_REQUEST {
        match tokio::time::timeout(REQUEST_TIMEOUT, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => req.extend_from_slice(&buf[..n]),
            _ => return,
        }
    }
    let (status, content_type, body) = respond(&shared, Route::of_request(&req));
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The status line's code and reason, the content type and the body of
/// the answer to `route`.
fn respond(shared: &Shared, route: Route) -> (&'static str, &'static str, String) {
    match route {
        Route::Metrics => {
            let snapshots = each_shard(shared, Proxy::snapshot);
            let tap = shared.tap.as_ref().map(|t| t.snapshot()).unwrap_or_default();
            let text = crate::exposition::text_with_runtime(&snapshots, &shared.conns.snapshot(), tap);
            ("200 OK", crate::exposition::CONTENT_TYPE, text)
        }
        Route::Status => json(&status(shared)),
        Route::Compartments { limit } => {
            let (now, wall) = (Instant::now(), SystemTime::now());
            let mut list = CompartmentList::default();
            for (total, entries) in each_shard(shared, |p| p.list_compartments(now, wall, limit)) {
                list.total += total;
                list.compartments.extend(entries);
            }
            json(&list)
        }
        Route::Registrations { limit } => {
            let now = Instant::now();
            let mut list = RegistrationList::default();
            for (total, entries) in each_shard(shared, |p| p.list_registrations(now, limit)) {
                list.total += total;
                list.registrations.extend(entries);
            }
            json(&list)
        }
        Route::BadRequest => ("400 Bad Request", "text/plain", String::from("limit must be a number\n")),
        Route::NotFound => ("404 Not Found", "text/plain", String::from("not found\n")),
    }
}

/// `read` of each shard, in shard order, each under its lock in turn.
fn each_shard<R>(shared: &Shared, mut read: impl FnMut(&Proxy) -> R) -> Vec<R> {
    shared.shards.iter().filter_map(|m| Some(read(&*m.lock().ok()?))).collect()
}

fn json(value: &impl Serialize) -> (&'static str, &'static str, String) {
    match serde_json::to_string_pretty(value) {
        Ok(mut body) => {
            body.push('\n');
            ("200 OK", admin::CONTENT_TYPE, body)
        }
        Err(e) => ("500 Internal Server Error", "text/plain", format!("{e}\n")),
    }
}

/// `GET /status`: the runtime's facts and the shards' counts added up.
fn status(shared: &Shared) -> Status {
    let mut sum = Snapshot::default();
    for s in each_shard(shared, Proxy::snapshot) {
        sum += &s;
    }
    let info = &shared.info;
    Status {
        version: env!("CARGO_PKG_VERSION").to_string(),
        instance: format!("{:012x}", shared.instance),
        uptime_s: info.started.elapsed().as_secs(),
        shards: shared.shard_count(),
        stateful: info.stateful,
        listen: info.listen.iter().map(|(t, a)| format!("{}:{a}", t.name())).collect(),
        upstream: format!("udp:{}", info.upstream),
        counts: Counts::of(&sum, &shared.conns.snapshot()),
    }
}
