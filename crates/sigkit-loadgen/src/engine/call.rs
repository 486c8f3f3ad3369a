//! What the engine keeps per call: its dialog, its client transactions
//! and what it is sending again; and the run's strings that messages use.

use std::net::SocketAddr;
use std::ops::Range;
use std::time::{Duration, Instant};

use sigkit_sip::HeaderName;

use crate::auth;

/// What is being sent again, and until when.
#[derive(Debug, Clone, Copy)]
pub(super) struct Retrans {
    /// The next retransmission (None over TCP, or after a provisional).
    pub(super) next: Option<Instant>,
    pub(super) interval: Duration,
    /// Timer B/F (a request), or the end of 2xx retransmission.
    pub(super) deadline: Option<Instant>,
    pub(super) kind: RetransKind,
    /// The send step.
    pub(super) step: usize,
    /// Whether reaching the deadline fails the call.
    pub(super) fails: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RetransKind {
    Invite,
    NonInvite,
    Response,
}

/// A client transaction in progress (RFC 3261 §17.1): the request went at
/// `sent`; no final response yet.
#[derive(Debug, Clone)]
pub(super) struct Txn {
    pub(super) branch: Vec<u8>,
    /// Index into [`Engine`]'s `methods`.
    pub(super) method: usize,
    pub(super) sent: Instant,
    pub(super) provisional_seen: bool,
}

/// Client transactions a call times at once (an INVITE's with the PRACKs
/// and UPDATEs inside it); beyond it the oldest is no longer timed.
pub(super) const MAX_TXNS: usize = 8;

#[derive(Debug, Default)]
pub(super) struct Call {
    pub(super) live: bool,
    pub(super) gen: u32,
    /// The deadline the heap holds for this call (with `gen`).
    pub(super) scheduled: Option<Instant>,
    pub(super) number: u64,
    pub(super) call_id: Vec<u8>,
    pub(super) peer: Option<SocketAddr>,
    pub(super) index: usize,
    pub(super) load_step: usize,
    pub(super) started: Option<Instant>,
    pub(super) invite_sent: Option<Instant>,
    pub(super) ringing_seen: bool,
    pub(super) answered_seen: bool,
    pub(super) cseq: u32,
    pub(super) last_recv_step: Option<usize>,
    pub(super) last_recv_invite: bool,
    pub(super) sent_since_recv: bool,
    pub(super) last_msg: Vec<u8>,
    /// The header lines of `last_msg`: kind, name and line (without CRLF).
    pub(super) last_index: Vec<(HeaderName, Range<u32>, Range<u32>)>,
    pub(super) last_sent: Vec<u8>,
    pub(super) last_sent_what: Option<usize>,
    /// The top Via branch of the last request sent: a response in its
    /// transaction is never a retransmission of an earlier one.
    pub(super) pending_branch: Vec<u8>,
    /// Client transactions awaiting their final response.
    pub(super) txns: Vec<Txn>,
    pub(super) peer_tag: Vec<u8>,
    /// The Via lines of the last request of each method received
    /// (`[last_Via_of_METHOD:]`).
    pub(super) vias_of: Vec<(String, Vec<u8>)>,
    pub(super) routes: Vec<u8>,
    pub(super) next_url: Vec<u8>,
    pub(super) challenge: Option<(bool, auth::DigestParams)>,
    pub(super) rtd_start: Vec<Instant>,
    pub(super) field_line: usize,
    pub(super) retrans: Option<Retrans>,
    pub(super) pause_until: Option<Instant>,
    pub(super) recv_deadline: Option<Instant>,
    pub(super) call_deadline: Option<Instant>,
    pub(super) timewait: bool,
}

/// Strings of the run that messages use.
#[derive(Debug)]
pub(super) struct Env {
    pub(super) local_ip: String,
    pub(super) local_ip_type: &'static str,
    pub(super) local_port: String,
    pub(super) remote_ip: String,
    pub(super) remote_ip_type: &'static str,
    pub(super) remote_port: String,
    pub(super) service: String,
    pub(super) transport: &'static str,
    pub(super) pid: String,
    /// `pid`, then `.N` for the process's N-th engine after its first, in
    /// Call-IDs and branches: SIPp's `[call_id]` is call number, pid and
    /// address, unique for one run per process, but `sigkit capacity`
    /// runs many in one process, and a stateful proxy would take a new
    /// run's calls for retransmissions of an earlier run's (RFC 3261
    /// §17.2.3 matches by branch, §12 dialogs by Call-ID and tags).
    pub(super) run_id: String,
    pub(super) media_port: u16,
    pub(super) auth_user: String,
    pub(super) auth_password: String,
    pub(super) started: Instant,
}

/// Engines made by this process so far (see `Env::run_id`).
pub(super) static ENGINES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

pub(super) fn ip_text(a: SocketAddr) -> (String, &'static str) {
    match a {
        SocketAddr::V4(v) => (v.ip().to_string(), "4"),
        SocketAddr::V6(v) => (format!("[{}]", v.ip()), "6"),
    }
}

/// The last response of a server call that has ended, and the request it
/// answered (RFC 3261 §17.2.2: kept for Timer J).
#[derive(Debug)]
pub(super) struct Lingering {
    pub(super) cseq: u32,
    pub(super) method: String,
    pub(super) response: Vec<u8>,
    pub(super) to: SocketAddr,
    pub(super) until: Instant,
}

/// Ended calls kept to answer retransmissions, at most: 64·T1 of calls at
/// 3,000 calls/s.
pub(super) const MAX_LINGERING: usize = 100_000;
