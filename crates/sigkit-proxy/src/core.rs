//! The proxy's behaviour, sans-IO: datagrams and stream messages go in
//! with the time, and [`Transmit`]s come out.
//!
//! Toward terminals the proxy speaks SigComp where they do (RFC 3486,
//! RFC 5049), toward the upstream SIP server plain SIP. It is a stateless
//! RFC 3261 proxy at the edge (§16.11), with these duties:
//! - on requests from terminals it stamps `received`/`rport` on their Via
//!   (RFC 3261 §18.2.1, RFC 3581 §4), adds its own Via, adds Path on
//!   REGISTER (RFC 3327) and a double Record-Route on dialog-forming
//!   requests (one entry per side, the terminal side's with
//!   `comp=sigcomp`, RFC 3486 §5), so that terminating and in-dialog
//!   requests come back through it;
//! - it consumes Route entries that name it, and sends responses back
//!   along the Via path;
//! - each message to or from a terminal belongs to a compartment keyed by
//!   the terminal (its `sigcomp-id`, RFC 5049 §6.1, or else its flow) and
//!   by the name the terminal uses for the proxy in that message, so the
//!   two ends always agree ([`crate::compartments`]);
//! - state is created only for messages the proxy accepts (RFC 5049 §6):
//!   a registered terminal's at once, an unregistered terminal's REGISTER
//!   once the registrar has answered 2xx, anything else's never.
//!
//! Every entry the proxy writes carries a flow token (`t.I.N` as the
//! URI's user part) naming the terminal's flow, so a message from the
//! upstream finds its terminal without a lookup by address (RFC 5626's
//! flow tokens serve the same purpose). `I` is the proxy instance, random
//! at each start: in a farm (docs/deploy.md) every instance writes the same
//! service address, and a restarted instance has lost its flows, so a
//! token is only trusted by the instance that wrote it.
//!
//! With `stateful = true` the proxy is transaction stateful toward the
//! upstream (RFC 3261 §16.6 step 9, §17): each new request from a terminal
//! gets a server transaction, paired with a client transaction toward the
//! upstream. The proxy absorbs the terminal's retransmissions (answering
//! them with its last response), retransmits toward the upstream itself
//! over UDP (Timers A and E, from the T1 overload control sets), answers
//! 100 Trying to an INVITE at once (§16.2, §17.2.1: within 200 ms unless
//! the TU answers), acknowledges non-2xx final responses to INVITE itself
//! (§17.1.1.3), and answers 408 when the upstream never does (§16.8).
//!
//! Flows are soft state: one unused either way for `flow_idle_timeout_s`
//! and without a live registration is forgotten, and at most `max_flows`
//! are kept (the one idle longest goes first).
//!
//! `Proxy` composes one part per concern, each in its own file in `core/`
//! that uses none of the others (only the message ends of `peer.rs` and
//! the shard's tokens of `shard.rs`): `identity.rs` (what the proxy calls
//! itself: addresses, `sigcomp-id`, flow tokens and branches), `flows.rs`,
//! `registrar.rs` (compartments, registrations and held REGISTERs),
//! `transactions.rs` (stateful mode), `compression.rs` (the SigComp
//! endpoint and its budgets), besides overload control and the metrics.
//! The steps that join them are `impl Proxy` blocks: here,
//! `from_terminal.rs`, `toward_terminal.rs` and `stateful.rs`; `trace.rs`
//! writes the debug event of each message they handle, `tap.rs` keeps a
//! copy of each as plain SIP when the capture tap is on, and `listing.rs`
//! reads the compartments and registrations for the admin interface.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sigcomp::CompartmentId;
use sigcomp_compress::{Endpoint, EndpointConfig, Incoming, Received, ReceivedNack};
use sigkit_sip::proxy::{build_response, is_dialog_forming};
use sigkit_sip::transaction::Timers;
use sigkit_sip::{EditError, Editor, HeaderName, Message};

mod compression;
mod flows;
mod from_terminal;
mod identity;
mod listing;
mod peer;
mod registrar;
mod shard;
mod stateful;
mod tap;
mod toward_terminal;
pub mod trace;
mod transactions;

use compression::Compression;
use flows::Flows;
use identity::{Identity, RouteToken};
use peer::App;
pub use peer::{is_sigcomp_first_byte, Encoding, LocalAddrs, Peer, Side, Transmit};
use registrar::{Registrar, Registration};
pub use shard::{new_instance_id, Shard};
use shard::{socket_addr, BRANCH_PREFIX};
pub use tap::Captured;
pub use trace::Direction;
use trace::Summary;
use transactions::Transactions;

use crate::compartments::{ProxyName, Terminal};
use crate::config::{ConfigError, ProxyConfig, SipTransport};
use crate::defence::Budgets;
use crate::metrics::{ProxyMetrics, Snapshot};
use crate::overload::{Admission, Overload, OverloadMetrics};
use crate::pending::{HeldRegister, PendingLimits};

/// Timer F (64 × T1, RFC 3261 §17.1.2.2): no final response by then, none
/// comes.
const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(32);

/// One SigComp edge proxy (or one shard of one), sans-IO: messages go in
/// with [`Proxy::from_terminal`] and [`Proxy::from_upstream`], timers
/// with [`Proxy::handle_timeout`], and what to send comes out of
/// [`Proxy::poll_transmit`].
pub struct Proxy {
    /// Its addresses, `sigcomp-id`, flow tokens and branches.
    identity: Identity,
    /// Terminals' flows.
    flows: Flows,
    /// Compartments, registrations and held REGISTERs.
    registrar: Registrar,
    /// Stateful mode's transactions.
    transactions: Transactions,
    /// The SigComp endpoint toward terminals and its budgets.
    compression: Compression,
    /// Overload control toward the upstream.
    overload: Overload,
    /// What is ready to send ([`Proxy::poll_transmit`]).
    out: VecDeque<Transmit>,
    /// The capture tap's records ([`Proxy::poll_captured`]); `None` when
    /// it is off.
    captured: Option<VecDeque<Captured>>,
    metrics: ProxyMetrics,
}

impl Proxy {
    /// A proxy alone on its sockets (one shard), with the whole of each
    /// limit and a fresh instance id; fails when `config` does not
    /// validate ([`ProxyConfig::validate`]) or the SigComp endpoint
    /// refuses its `sigcomp` table.
    pub fn new(config: &ProxyConfig, addrs: LocalAddrs) -> Result<Proxy, ConfigError> {
        Proxy::sharded(config, addrs, Shard { index: 0, count: 1, instance: new_instance_id() })
    }

    /// One of `shard.count` proxies that share the sockets, each owning
    /// the terminals [`Shard::of_terminal`] gives it; the limits are
    /// split between them.
    pub fn sharded(config: &ProxyConfig, addrs: LocalAddrs, shard: Shard) -> Result<Proxy, ConfigError> {
        config.validate()?;
        let n = shard.count.max(1) as usize;
        let limits = config.limits();
        let endpoint_config = EndpointConfig {
            idle_timeout: Some(config.idle_timeout()),
            limits: sigcomp::Limits {
                max_compartments: limits.max_compartments.div_ceil(n),
                max_state_bytes: limits.max_state_bytes.div_ceil(n),
            },
            hot_compartments: config.sigcomp.hot_compartments.div_ceil(n),
            ..EndpointConfig::new(config.local_params(), config.assumed_peer(), config.compressor())
        };
        let endpoint = Endpoint::new(endpoint_config)?;
        let budgets = Budgets::new(config.defence.clone(), 1.0 / n as f64, Instant::now());
        let held = PendingLimits {
            max_registers: config.max_pending_registers.div_ceil(n),
            max_per_source: config.max_pending_registers_per_source,
            max_bytes: config.max_pending_state_bytes.div_ceil(n),
        };
        Ok(Proxy {
            identity: Identity::new(config, addrs, shard),
            flows: Flows::new(config.flow_idle_timeout(), config.max_flows.div_ceil(n), shard),
            registrar: Registrar::new(held, config.max_registrations.div_ceil(n)),
            transactions: Transactions::new(config.stateful),
            compression: Compression::new(endpoint, config.sigcomp.cpb, budgets),
            overload: Overload::new(
                config.overload.clone(),
                0x9e37_79b9_7f4a_7c15 ^ u64::from(shard.index),
                config.stateful,
            ),
            out: VecDeque::new(),
            captured: None,
            metrics: ProxyMetrics::default(),
        })
    }

    /// The next message to send, in the order the proxy produced them;
    /// `None` when there is none.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// Counts a TCP connection the runtime closed because its terminal
    /// read nothing while the queue for it filled.
    pub fn record_stuck_connection(&mut self) {
        self.metrics.stuck_connections_closed += 1;
    }

    /// Counts one message's handling time (measured by the runtime, which
    /// owns the clock; see [`crate::metrics::HandlingTimes`]).
    pub fn record_handling(&mut self, took: Duration) {
        self.metrics.handling.record(took);
    }

    /// This proxy's counters (one shard's; [`Proxy::snapshot`] adds the
    /// gauges).
    pub fn metrics(&self) -> &ProxyMetrics {
        &self.metrics
    }

    /// The SigComp endpoint toward terminals: its compartments, states
    /// and counters.
    pub fn endpoint(&self) -> &Endpoint {
        &self.compression.endpoint
    }

    fn send(&mut self, side: Side, to: Peer, bytes: Vec<u8>, encoding: Encoding) {
        let i = side.index();
        self.metrics.messages_out[i] += 1;
        self.metrics.bytes_out[i] += bytes.len() as u64;
        self.out.push_back(Transmit { side, to, bytes, encoding });
    }

    /// Sends plain SIP to the upstream.
    fn send_upstream(&mut self, bytes: Vec<u8>) {
        let to = self.identity.upstream_peer();
        if trace::enabled() {
            trace::message(
                Direction::ToUpstream,
                self.identity.shard.index,
                &to,
                &Summary::parse(&bytes),
                trace::SigComp::default(),
            );
        }
        if self.capturing() {
            self.capture(Direction::ToUpstream, &to, &bytes);
        }
        self.send(Side::Upstream, to, bytes, Encoding::Plain);
    }

    /// Terminals with a live registration.
    pub fn registered_count(&self) -> usize {
        self.registrar.compartments.registered_count()
    }

    /// Terminal flows remembered.
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// Transactions the stateful mode holds.
    pub fn transaction_count(&self) -> usize {
        self.transactions.len()
    }

    /// Whether the proxy is transaction stateful (`stateful`).
    pub fn is_stateful(&self) -> bool {
        self.transactions.is_stateful()
    }

    /// The flow token of `peer`, made on first sight (room made first by
    /// forgetting the flow idle longest).
    fn token(&mut self, now: Instant, peer: Peer, encoding: Encoding) -> u64 {
        if let Some(t) = self.flows.touch(now, &peer, encoding) {
            return t;
        }
        while self.flows.is_full() {
            let Some(gone) = self.flows.evict() else { break };
            self.flow_gone(gone);
        }
        self.flows.insert(now, peer, encoding)
    }

    /// Flow `t` was forgotten: so are the compartments and registration of
    /// the terminal it named if nothing else can name that terminal (it
    /// has no `sigcomp-id`).
    fn flow_gone(&mut self, t: u64) {
        for c in self.registrar.forget(&Terminal::Flow(t)) {
            self.compression.endpoint.close_compartment(c);
        }
    }

    /// The compartment of `terminal` under `name`; past the terminal's cap
    /// of names, the one it used longest ago closes.
    fn compartment_for(&mut self, terminal: &Terminal, name: ProxyName) -> CompartmentId {
        let (c, over) = self.registrar.compartment(terminal, name);
        if let Some(old) = over {
            self.compression.endpoint.close_compartment(old);
        }
        c
    }

    /// A flow for a response to a UDP terminal the proxy has none for: one
    /// it forgot (idle, or lost in a restart). Over UDP a response goes to
    /// the address its Via names (RFC 3261 §18.2.2), flow or none; it
    /// leaves from the proxy's first UDP socket toward terminals.
    fn udp_flow_for_response(
        &mut self,
        now: Instant,
        transport: SipTransport,
        addr: SocketAddr,
        encoding: Encoding,
    ) -> Option<(u64, Peer)> {
        if transport != SipTransport::Udp {
            return None;
        }
        let local = self.identity.first_udp_terminal_socket()?;
        let peer = Peer { transport, addr, local: Some(local), conn: None };
        Some((self.token(now, peer, encoding), peer))
    }

    /// Until when a registration made over TCP connection `conn` lasts,
    /// if one does: the connection is then how the registrar's requests
    /// reach the terminal (RFC 5626 §5.3, RFC 3261 §18.3), and idleness
    /// alone does not close it.
    pub fn connection_registered_until(&self, conn: u64) -> Option<Instant> {
        self.flows.connection_registered_until(conn)
    }

    /// A terminal's TCP connection closed: its flow is gone (RFC 5626
    /// §5.2: a flow that fails is not reused).
    pub fn connection_closed(&mut self, conn: u64) {
        self.compression.connection_closed(conn);
        if let Some(t) = self.flows.close_connection(conn) {
            self.flow_gone(t);
        }
    }

    /// A message from a terminal: one datagram, or one message of a TCP
    /// connection (SigComp with its record marking removed, or plain SIP).
    pub fn from_terminal(&mut self, now: Instant, from: Peer, bytes: &[u8], encoding: Encoding) {
        self.metrics.messages_in[0] += 1;
        self.metrics.bytes_in[0] += bytes.len() as u64;
        if encoding == Encoding::Plain {
            self.sip_from_terminal(now, from, bytes, None, bytes.len());
            return;
        }
        // Charged the worst case before it runs (RFC 3320 §8.6), and its
        // cycles or measured time after ([`crate::defence`]).
        let standing = self.flows.standing(&from);
        let received = match self.compression.decompress(now, &from, standing, bytes) {
            Ok(r) => r,
            Err(r) => {
                self.metrics.refused[r.index()] += 1;
                if trace::enabled() {
                    let s = trace::SigComp { bytes: Some(bytes.len()), refused: Some(r.name()), ..Default::default() };
                    trace::message(Direction::FromTerminal, self.identity.shard.index, &from, &Summary::default(), s);
                }
                return;
            }
        };
        match received {
            Ok(Received::Message(incoming)) => {
                self.metrics.sigcomp_bytes_in += bytes.len() as u64;
                self.metrics.sigcomp_sip_bytes_in += incoming.message().len() as u64;
                let sip = incoming.message().to_vec();
                self.sip_from_terminal(now, from, &sip, Some(incoming), bytes.len());
            }
            // The endpoint has acted on it (its compressor fell back to
            // what the terminal still has) and counted it.
            Ok(Received::Nack(nack)) => {
                if trace::enabled() {
                    let s = trace::SigComp {
                        compartment: nack.compartment,
                        bytes: Some(bytes.len()),
                        nack_received: Some(nack.reason),
                        ..Default::default()
                    };
                    trace::message(Direction::FromTerminal, self.identity.shard.index, &from, &Summary::default(), s);
                }
                self.nacked(now, from, nack)
            }
            Err(e) => {
                if trace::enabled() {
                    let s = trace::SigComp {
                        bytes: Some(bytes.len()),
                        cycles: Some(e.failure.cycles),
                        nack_sent: e.nack.is_some().then_some(e.failure.reason),
                        ..Default::default()
                    };
                    trace::message(Direction::FromTerminal, self.identity.shard.index, &from, &Summary::default(), s);
                }
                if let Some(nack) = e.nack {
                    self.send(Side::Terminal, from, nack, Encoding::SigComp);
                }
                tracing::debug!(from = %from.addr, reason = e.failure.reason.name(), "decompression failed");
            }
        }
    }

    /// A terminal NACKed a message of ours. Over UDP the SIP layer
    /// recovers: the request or response that was lost is retransmitted
    /// (RFC 3261 §17.1.1.2 Timer A, §17.1.2.2 Timer E) and compressed
    /// anew then. Over TCP nothing is retransmitted (those timers run only
    /// on unreliable transports), so the proxy compresses the message anew
    /// in the compartment, after the endpoint's fallback, and sends it
    /// again, once: the copy sent again is not kept, so a second NACK ends
    /// it (RFC 4077 §2.1 leaves recovery to the compressor).
    fn nacked(&mut self, now: Instant, from: Peer, nack: ReceivedNack) {
        if from.transport != SipTransport::Tcp {
            return;
        }
        let (Some(c), Some(report), Some(conn)) = (nack.compartment, nack.report, from.conn) else { return };
        let Some(s) = self.compression.nacked(conn, &report.nack.message_sha1, c) else { return };
        self.metrics.nack_resends += 1;
        if self.capturing() {
            self.capture(Direction::ToTerminal, &s.to, &s.sip);
        }
        let compressed = self.compression.endpoint.compress(now, c, &s.sip);
        if trace::enabled() {
            let sigcomp = trace::SigComp {
                compartment: Some(c),
                bytes: compressed.as_ref().ok().map(|out| out.message.len()),
                nack_received: Some(nack.reason),
                ..Default::default()
            };
            trace::message(Direction::ToTerminal, self.identity.shard.index, &s.to, &Summary::parse(&s.sip), sigcomp);
        }
        match compressed {
            Ok(out) => {
                self.registrar.compartments.to_terminal(c, out.uploaded_bytecode);
                self.metrics.sigcomp_sip_bytes_out += s.sip.len() as u64;
                self.metrics.sigcomp_bytes_out += out.message.len() as u64;
                self.send(Side::Terminal, s.to, out.message, Encoding::SigComp);
            }
            Err(e) => {
                // RFC 5049 §4: plain SIP is always understood.
                tracing::warn!(error = %e, "compression after a NACK failed; sending plain SIP");
                self.metrics.compress_failures += 1;
                self.send(Side::Terminal, s.to, s.sip, Encoding::Plain);
            }
        }
    }

    /// Keeps the state and feedback of a SigComp message from a terminal
    /// in `compartment` when `accept`, else drops them (RFC 5049 §6).
    fn decide(&mut self, now: Instant, incoming: Option<Incoming>, compartment: Option<CompartmentId>, accept: bool) {
        let Some(incoming) = incoming else { return };
        let uploaded = incoming.uploaded_bytecode();
        match compartment.filter(|_| accept) {
            Some(c) => {
                self.metrics.states_accepted += 1;
                self.compression.endpoint.accept(now, incoming, c);
            }
            None => {
                self.metrics.states_declined += 1;
                self.compression.endpoint.discard(incoming);
            }
        }
        if let Some(c) = compartment {
            self.registrar.compartments.from_terminal(c, uploaded);
        }
    }

    /// A message from the upstream server (plain SIP).
    /// (`_from` is the configured upstream: where a message goes next is
    /// read from the message itself.)
    pub fn from_upstream(&mut self, now: Instant, _from: Peer, bytes: &[u8]) {
        self.metrics.upstream_parses += 1;
        match Message::parse(bytes) {
            Ok(msg) => self.upstream_message(now, &msg),
            Err(_) => self.upstream_not_sip(bytes.len()),
        }
    }

    /// Counts a message from the upstream of `len` bytes that does not
    /// parse as SIP (the runtime found so while looking for its shard).
    pub fn upstream_not_sip(&mut self, len: usize) {
        self.trace_from_upstream(|| Summary::unparsed(len));
        self.metrics.messages_in[1] += 1;
        self.metrics.bytes_in[1] += len as u64;
        self.metrics.bad_sip += 1;
    }

    /// The event of a message from the upstream (`sigkit_proxy::messages`
    /// at debug); `summary` is read only when the event is enabled.
    fn trace_from_upstream(&self, summary: impl FnOnce() -> Summary) {
        if trace::enabled() {
            let from = self.identity.upstream_peer();
            let s = summary();
            trace::message(Direction::FromUpstream, self.identity.shard.index, &from, &s, trace::SigComp::default());
        }
    }

    /// [`Proxy::from_upstream`] of a message already parsed: the runtime
    /// parses each once, to find its shard ([`Shard::of_upstream`]), and
    /// hands that parse here.
    pub fn upstream_message(&mut self, now: Instant, msg: &Message<'_>) {
        self.trace_from_upstream(|| Summary::of(msg));
        if self.capturing() {
            self.capture(Direction::FromUpstream, &self.identity.upstream_peer(), msg.input());
        }
        self.metrics.messages_in[1] += 1;
        self.metrics.bytes_in[1] += msg.input().len() as u64;
        if msg.is_request() {
            self.request_toward_terminal(now, msg);
        } else {
            self.response_toward_terminal(now, msg);
        }
    }

    /// The next time [`Proxy::handle_timeout`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.registrar.next_deadline(),
            self.flows.next_deadline(),
            self.compression.endpoint.poll_timeout(),
            self.overload.poll_timeout(),
            self.transactions.next_due(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Ends what has timed out: held REGISTER states (no final answer),
    /// expired registrations' compartments, idle compartments and flows,
    /// and the stateful mode's timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        for h in self.registrar.held.expire(now) {
            self.decide(now, h.incoming, h.compartment, false);
        }
        for c in self.registrar.expire(now) {
            self.compression.endpoint.close_compartment(c);
        }
        for c in self.compression.endpoint.handle_timeout(now) {
            self.registrar.compartments.forget(c);
        }
        while let Some(t) = self.flows.expire_next(now) {
            self.flow_gone(t);
        }
        self.overload.handle_timeout(now);
        self.run_transactions(now);
    }

    /// Overload control's state (handler counters, detector).
    pub fn overload(&self) -> OverloadMetrics {
        self.overload.metrics()
    }

    /// The metrics in the Prometheus text exposition format.
    pub fn metrics_text(&self) -> String {
        metrics_text(&[self])
    }

    /// What the metrics of this proxy (or shard) read now.
    pub fn snapshot(&self) -> Snapshot {
        let (flow_identifiers, flow_identifier_bytes) = self.flows.identifiers();
        let compartments = &self.registrar.compartments;
        let held = &self.registrar.held;
        Snapshot {
            proxy: self.metrics.clone(),
            endpoint: self.compression.endpoint.metrics(),
            registered: compartments.registered_count(),
            uploads: compartments.uploads(),
            reuploading: compartments.reuploading(),
            overload: self.overload.metrics(),
            transactions: self.transactions.len(),
            pending_registers: held.len(),
            pending_register_bytes: held.bytes(),
            pending_state_bytes: held.state_bytes(),
            pending_refused: held.refused(),
            flows: self.flows.len(),
            flow_identifiers,
            flow_identifier_bytes,
            budgeted_sources: self.compression.budgeted_sources(),
            decompression: self.compression.spent(),
        }
    }
}

/// The metrics of several shards, added up, in the Prometheus text
/// exposition format ([`crate::exposition`]).
pub fn metrics_text(shards: &[&Proxy]) -> String {
    let snapshots: Vec<Snapshot> = shards.iter().map(|p| p.snapshot()).collect();
    crate::exposition::text(&snapshots)
}

#[cfg(test)]
pub(crate) mod tests;
