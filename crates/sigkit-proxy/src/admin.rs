//! The read-only admin interface on the metrics listener, in the spirit
//! of Kamailio's `kamcmd`: beside `GET /metrics`, `GET /status` (version,
//! uptime, shards, counts), `GET /compartments` (each terminal's
//! compartment: its terminal, flow, state bytes and when it was last used)
//! and `GET /registrations` (each registration the proxy remembers: the
//! address of record, the terminal, its flow and when it expires), as
//! JSON. `sigkit proxy ctl` reads them.
//!
//! The runtime gathers each shard's part under that shard's lock, as it
//! does a metrics snapshot ([`crate::core::Proxy::list_compartments`],
//! [`crate::core::Proxy::list_registrations`]); a listing takes at most
//! `limit` entries from each shard (`?limit=N`, default
//! [`DEFAULT_LIMIT`]), so that a large table holds no shard for long.

use serde::{Deserialize, Serialize};

use crate::metrics::{Snapshot, TcpSnapshot};

/// The content type of the admin answers.
pub const CONTENT_TYPE: &str = "application/json";

/// Entries a listing shows from each shard when the request names no
/// `limit`.
pub const DEFAULT_LIMIT: usize = 1000;

/// What a request on the metrics listener asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /metrics`: the Prometheus text ([`crate::exposition`]).
    Metrics,
    /// `GET /status`: [`Status`].
    Status,
    /// `GET /compartments[?limit=N]`: [`CompartmentList`].
    Compartments {
        /// Entries taken from each shard at most.
        limit: usize,
    },
    /// `GET /registrations[?limit=N]`: [`RegistrationList`].
    Registrations {
        /// Entries taken from each shard at most.
        limit: usize,
    },
    /// Anything else: 404.
    NotFound,
    /// A path above with a query it does not take (`limit` not a
    /// number): 400.
    BadRequest,
}

impl Route {
    /// The route of an HTTP request, from its request line (`GET PATH
    /// HTTP/1.1`); only GET is served.
    pub fn of_request(head: &[u8]) -> Route {
        let line = head.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or_default();
        let Ok(line) = std::str::from_utf8(line) else { return Route::NotFound };
        let mut words = line.split(' ');
        let (Some("GET"), Some(target)) = (words.next(), words.next()) else { return Route::NotFound };
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let limit = match query_limit(query) {
            Ok(l) => l.unwrap_or(DEFAULT_LIMIT),
            Err(()) => return Route::BadRequest,
        };
        match path {
            "/metrics" => Route::Metrics,
            "/status" => Route::Status,
            "/compartments" => Route::Compartments { limit },
            "/registrations" => Route::Registrations { limit },
            _ => Route::NotFound,
        }
    }
}

/// The `limit` of a query string, if it names one; `Err` when it is not
/// a number.
fn query_limit(query: &str) -> Result<Option<usize>, ()> {
    for pair in query.split('&') {
        if let Some(v) = pair.strip_prefix("limit=") {
            return v.parse().map(Some).map_err(|_| ());
        }
    }
    Ok(None)
}

/// `GET /status`: what the proxy is and what it holds now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The sigkit version.
    pub version: String,
    /// The instance written in this process's flow tokens (12 hex digits;
    /// new at each start, docs/deploy.md "Outgrowing one machine").
    pub instance: String,
    /// Seconds since the proxy started.
    pub uptime_s: u64,
    /// Shards the terminals are split among (`shards`).
    pub shards: u32,
    /// Whether the proxy is transaction stateful (`stateful`).
    pub stateful: bool,
    /// The sockets toward terminals, as `udp:ADDR` or `tcp:ADDR`.
    pub listen: Vec<String>,
    /// The SIP server behind the proxy, `udp:ADDR`.
    pub upstream: String,
    /// What the shards hold and have counted, added up.
    pub counts: Counts,
}

/// The counts of [`Status`], the shards' added up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Compartments open (`sigkit_proxy_compartments`).
    pub compartments: usize,
    /// State memory of all compartments (RFC 3320 §6.2).
    pub state_bytes: usize,
    /// Terminals with a live registration.
    pub registrations: usize,
    /// Terminal flows remembered.
    pub flows: usize,
    /// Stateful mode: transactions held.
    pub transactions: usize,
    /// REGISTERs held for the registrar's answer.
    pub pending_registers: usize,
    /// Terminals' TCP connections open.
    pub tcp_connections: usize,
    /// Messages received, by side.
    pub messages_received: Sides,
    /// Messages sent, by side.
    pub messages_sent: Sides,
    /// RFC 4077 NACKs sent to terminals.
    pub nacks_sent: u64,
    /// RFC 4077 NACKs received from terminals.
    pub nacks_received: u64,
}

/// A count for each side of the proxy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sides {
    /// Toward the terminals.
    pub terminal: u64,
    /// Toward the SIP server.
    pub upstream: u64,
}

impl Sides {
    fn of(counts: [u64; 2]) -> Sides {
        Sides { terminal: counts[0], upstream: counts[1] }
    }
}

impl Counts {
    /// The counts of the shards' snapshots added up, and the runtime's
    /// TCP connections.
    pub fn of(sum: &Snapshot, tcp: &TcpSnapshot) -> Counts {
        let (p, e) = (&sum.proxy, &sum.endpoint);
        Counts {
            compartments: e.compartments,
            state_bytes: e.state_bytes,
            registrations: sum.registered,
            flows: sum.flows,
            transactions: sum.transactions,
            pending_registers: sum.pending_registers,
            tcp_connections: tcp.connections,
            messages_received: Sides::of(p.messages_in),
            messages_sent: Sides::of(p.messages_out),
            nacks_sent: e.nacks_sent,
            nacks_received: e.nacks_received,
        }
    }
}

/// `GET /compartments`: the terminals' compartments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompartmentList {
    /// Compartments open in all shards; more than listed when a shard
    /// holds more than the limit.
    pub total: usize,
    /// The compartments listed, by shard and id.
    pub compartments: Vec<CompartmentEntry>,
}

/// One compartment: the state the proxy keeps for one terminal under one
/// name the terminal uses for the proxy (RFC 5049 §6.1,
/// [`crate::compartments`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompartmentEntry {
    /// The shard that holds it.
    pub shard: u32,
    /// Its number in that shard.
    pub id: u64,
    /// The terminal's SigComp identifier (RFC 5049 §6.1); `None` for a
    /// terminal known only by its flow.
    pub terminal: Option<String>,
    /// The terminal's flow, `udp:ADDR` or `tcp:ADDR` (the flow last used
    /// by a terminal known by its identifier); `None` once forgotten.
    pub peer: Option<String>,
    /// Whether the terminal has a live registration (which keeps the
    /// compartment, RFC 5049 §6.5).
    pub registered: bool,
    /// State memory the terminal's states take at the proxy (RFC 3320
    /// §6.2: each state's length + 64).
    pub state_bytes: u64,
    /// Milliseconds since a message was last compressed or accepted in it;
    /// `None` before the first.
    pub idle_ms: Option<u64>,
    /// When that was, in milliseconds since the Unix epoch.
    pub last_used_unix_ms: Option<u64>,
}

/// `GET /registrations`: the registrations the proxy remembers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RegistrationList {
    /// Registrations in all shards; more than listed when a shard holds
    /// more than the limit.
    pub total: usize,
    /// The registrations listed, by shard and address of record.
    pub registrations: Vec<RegistrationEntry>,
}

/// One registration: a terminal the registrar answered 2xx, whose state the
/// proxy keeps until the binding expires (RFC 5049 §6.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegistrationEntry {
    /// The shard that holds it.
    pub shard: u32,
    /// The address of record: the To URI of the REGISTER's 2xx (RFC 3261
    /// §10.2); empty when longer than the proxy keeps.
    pub aor: String,
    /// The terminal's SigComp identifier; `None` for a terminal known only
    /// by its flow.
    pub terminal: Option<String>,
    /// The flow the REGISTER came by, `udp:ADDR` or `tcp:ADDR`; `None` once
    /// forgotten.
    pub flow: Option<String>,
    /// Seconds until the binding expires.
    pub expires_s: u64,
    /// The terminal's compartments open.
    pub compartments: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_routed_by_their_path_and_limit() {
        assert_eq!(Route::of_request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), Route::Metrics);
        assert_eq!(Route::of_request(b"GET /metrics?x=1 HTTP/1.1\r\n\r\n"), Route::Metrics);
        assert_eq!(Route::of_request(b"GET /status HTTP/1.1\r\n\r\n"), Route::Status);
        assert_eq!(
            Route::of_request(b"GET /compartments HTTP/1.1\r\n\r\n"),
            Route::Compartments { limit: DEFAULT_LIMIT }
        );
        assert_eq!(
            Route::of_request(b"GET /registrations?limit=5 HTTP/1.1\r\n\r\n"),
            Route::Registrations { limit: 5 }
        );
        assert_eq!(Route::of_request(b"GET /compartments?limit=many HTTP/1.1\r\n\r\n"), Route::BadRequest);
        assert_eq!(Route::of_request(b"POST /status HTTP/1.1\r\n\r\n"), Route::NotFound);
        assert_eq!(Route::of_request(b"GET /statusx HTTP/1.1\r\n\r\n"), Route::NotFound);
        assert_eq!(Route::of_request(b"\xff\xfe"), Route::NotFound);
    }

    /// The counts are the shards' added up, and a status reads back from
    /// its JSON as it was.
    #[test]
    fn status_counts_add_the_shards_and_read_back_from_json() {
        let mut a = Snapshot::default();
        a.proxy.messages_in = [3, 2];
        a.endpoint.compartments = 4;
        a.registered = 1;
        let mut sum = Snapshot::default();
        sum += &a;
        sum += &a;
        let tcp = TcpSnapshot { connections: 7, ..TcpSnapshot::default() };
        let counts = Counts::of(&sum, &tcp);
        assert_eq!(counts.messages_received, Sides { terminal: 6, upstream: 4 });
        assert_eq!((counts.compartments, counts.registrations, counts.tcp_connections), (8, 2, 7));
        let status = Status {
            version: "0.1.0".into(),
            instance: "00000000abcd".into(),
            uptime_s: 5,
            shards: 2,
            stateful: false,
            listen: vec!["udp:127.0.0.1:5060".into()],
            upstream: "udp:127.0.0.1:5070".into(),
            counts,
        };
        let json = serde_json::to_string(&status).unwrap();
        assert!(json.contains("\"messages_received\":{\"terminal\":6,\"upstream\":4}"), "{json}");
        assert_eq!(serde_json::from_str::<Status>(&json).unwrap(), status);
    }
}
