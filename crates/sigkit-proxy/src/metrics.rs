//! The proxy's metrics: the counters each shard keeps ([`ProxyMetrics`]),
//! what a shard's metrics read at a scrape ([`Snapshot`]), and the shards'
//! added up. Their Prometheus text is [`crate::exposition`]'s.

use std::ops::AddAssign;
use std::time::Duration;

use sigcomp_compress::EndpointMetrics;

use crate::compartments::Uploads;
use crate::defence::Refusal;
use crate::overload::OverloadMetrics;
use crate::pending::Cap;

/// Counters, exported as Prometheus metrics.
#[derive(Debug, Clone, Default)]
pub struct ProxyMetrics {
    /// Messages received, indexed by side: `[0]` from terminals (SigComp
    /// or plain), `[1]` from the upstream
    /// (`sigkit_proxy_messages_received{side}`).
    pub messages_in: [u64; 2],
    /// Bytes of those messages as they arrived (SigComp bytes for
    /// compressed ones), indexed as `messages_in`
    /// (`sigkit_proxy_bytes_received{side}`).
    pub bytes_in: [u64; 2],
    /// Messages sent, `[0]` to terminals, `[1]` to the upstream
    /// (`sigkit_proxy_messages_sent{side}`).
    pub messages_out: [u64; 2],
    /// Bytes of those messages as sent, indexed as `messages_out`
    /// (`sigkit_proxy_bytes_sent{side}`).
    pub bytes_out: [u64; 2],
    /// SIP bytes the SigComp messages received from terminals carried,
    /// after decompression: the denominator of
    /// `sigkit_proxy_compression_ratio_in`.
    pub sigcomp_sip_bytes_in: u64,
    /// Bytes of the SigComp messages received from terminals that
    /// decompressed to SIP (`sigkit_proxy_sigcomp_bytes{direction="in",layer="sigcomp"}`).
    pub sigcomp_bytes_in: u64,
    /// SIP bytes the proxy compressed toward terminals: the denominator of
    /// `sigkit_proxy_compression_ratio_out`.
    pub sigcomp_sip_bytes_out: u64,
    /// Bytes of the SigComp messages sent to terminals
    /// (`sigkit_proxy_sigcomp_bytes{direction="out",layer="sigcomp"}`).
    pub sigcomp_bytes_out: u64,
    /// SigComp messages refused unread, by [`Refusal::index`].
    pub refused: [u64; Refusal::ALL.len()],
    /// Messages from either side that are not SIP the proxy can forward
    /// (after decompression, for SigComp ones): unparsable, without a Via
    /// from a terminal, or refused by the header editor
    /// (`sigkit_proxy_bad_sip`).
    pub bad_sip: u64,
    /// Messages from the upstream the core parsed itself
    /// ([`crate::Proxy::from_upstream`]); those the runtime parsed to find
    /// their shard come in parsed ([`crate::Proxy::upstream_message`]) and
    /// are not counted here.
    pub upstream_parses: u64,
    /// SigComp messages from terminals whose state and feedback were kept
    /// in their compartment (RFC 5049 §6: a REGISTER's once the registrar
    /// answered 2xx) (`sigkit_proxy_state_decisions{decision="accepted"}`).
    pub states_accepted: u64,
    /// SigComp messages from terminals whose state was dropped (RFC 5049
    /// §6): the terminal was not registered and the message was no
    /// REGISTER the registrar answered 2xx, or a cap of [`crate::pending`]
    /// was met (`sigkit_proxy_state_decisions{decision="declined"}`).
    pub states_declined: u64,
    /// Messages toward terminals whose compression failed and that went
    /// as plain SIP instead (RFC 5049 §4: plain SIP is always understood).
    pub compress_failures: u64,
    /// Messages with nowhere to go (`sigkit_proxy_undeliverable`): a
    /// response without the proxy's Via on top or without a Via below it
    /// to return to, a response or request for a terminal the proxy has no
    /// flow to (such a request is answered 430 or 404, RFC 5626 §5.3).
    pub undeliverable: u64,
    /// Messages compressed anew and sent again over TCP after the
    /// terminal NACKed them (RFC 4077).
    pub nack_resends: u64,
    /// TCP connections closed because their terminal read nothing while
    /// the proxy's queue for it filled (the runtime counts them).
    pub stuck_connections_closed: u64,
    /// Stateful mode: transactions started toward the upstream
    /// (`sigkit_proxy_transactions`).
    pub transactions: u64,
    /// Stateful mode: requests from terminals that matched a transaction
    /// held (RFC 3261 §17.2.3) and ended at the proxy as retransmissions,
    /// answered with the last response sent (an ACK absorbed is not
    /// counted) (`sigkit_proxy_retransmissions_absorbed{side="terminal"}`).
    pub absorbed_requests: u64,
    /// Stateful mode: responses from the upstream that ended at the proxy:
    /// retransmissions of a response the proxy's client transaction had
    /// already received, and the answers to the proxy's own CANCELs
    /// (`sigkit_proxy_retransmissions_absorbed{side="upstream"}`).
    pub absorbed_responses: u64,
    /// Stateful mode: requests sent again to the upstream over UDP (RFC
    /// 3261 §17.1.1.2 Timer A, §17.1.2.2 Timer E)
    /// (`sigkit_proxy_upstream_retransmissions`).
    pub upstream_retransmissions: u64,
    /// Stateful mode: transactions the upstream never answered, for which
    /// the proxy sent the terminal a 408 (RFC 3261 §16.8)
    /// (`sigkit_proxy_transaction_timeouts`).
    pub transaction_timeouts: u64,
    /// Stateful mode: INVITE transactions a terminal's CANCEL ended
    /// (RFC 3261 §16.10).
    pub cancelled_invites: u64,
    /// Registrations not remembered: `max_registrations` were.
    pub registrations_not_kept: u64,
    /// How long the proxy took over each message it received.
    pub handling: HandlingTimes,
}

/// Upper bounds, in microseconds, of the handling-time histogram's buckets
/// (the last bucket, +Inf, is implicit).
pub const HANDLING_BUCKETS_US: [u64; 15] =
    [10, 25, 50, 75, 100, 150, 250, 500, 750, 1_000, 2_500, 5_000, 10_000, 25_000, 100_000];

/// A histogram of handling times: from a message read from its socket (or
/// framed from its TCP stream) to the messages it caused being ready to
/// send. The time a datagram waited in the socket's buffer, or for a CPU
/// before the proxy read it, is not in it.
#[derive(Debug, Clone, Default)]
pub struct HandlingTimes {
    /// Messages per bucket (not cumulative); the last counts those over the
    /// last bound.
    pub counts: [u64; HANDLING_BUCKETS_US.len() + 1],
    /// The handling times recorded, added up, in nanoseconds (saturating
    /// at `u64::MAX`); the histogram's `_sum`.
    pub sum_ns: u64,
}

impl HandlingTimes {
    /// Counts `took` in the first bucket whose bound (in whole
    /// microseconds, [`HANDLING_BUCKETS_US`]) it does not exceed, else in
    /// the last, and adds it to [`HandlingTimes::sum_ns`].
    pub fn record(&mut self, took: Duration) {
        let us = took.as_micros().min(u128::from(u64::MAX)) as u64;
        let i = HANDLING_BUCKETS_US.iter().position(|&b| us <= b).unwrap_or(HANDLING_BUCKETS_US.len());
        self.counts[i] += 1;
        self.sum_ns = self.sum_ns.saturating_add(took.as_nanos().min(u128::from(u64::MAX)) as u64);
    }

    /// Messages recorded, over all buckets (the histogram's `_count`).
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Another shard's handling times.
impl AddAssign<&HandlingTimes> for HandlingTimes {
    fn add_assign(&mut self, o: &HandlingTimes) {
        add_arrays(&mut self.counts, &o.counts);
        self.sum_ns = self.sum_ns.saturating_add(o.sum_ns);
    }
}

/// Another shard's counts.
impl AddAssign<&ProxyMetrics> for ProxyMetrics {
    fn add_assign(&mut self, o: &ProxyMetrics) {
        add_arrays(&mut self.messages_in, &o.messages_in);
        add_arrays(&mut self.bytes_in, &o.bytes_in);
        add_arrays(&mut self.messages_out, &o.messages_out);
        add_arrays(&mut self.bytes_out, &o.bytes_out);
        self.sigcomp_sip_bytes_in += o.sigcomp_sip_bytes_in;
        self.sigcomp_bytes_in += o.sigcomp_bytes_in;
        self.sigcomp_sip_bytes_out += o.sigcomp_sip_bytes_out;
        self.sigcomp_bytes_out += o.sigcomp_bytes_out;
        add_arrays(&mut self.refused, &o.refused);
        self.bad_sip += o.bad_sip;
        self.upstream_parses += o.upstream_parses;
        self.states_accepted += o.states_accepted;
        self.states_declined += o.states_declined;
        self.compress_failures += o.compress_failures;
        self.undeliverable += o.undeliverable;
        self.nack_resends += o.nack_resends;
        self.stuck_connections_closed += o.stuck_connections_closed;
        self.transactions += o.transactions;
        self.absorbed_requests += o.absorbed_requests;
        self.absorbed_responses += o.absorbed_responses;
        self.upstream_retransmissions += o.upstream_retransmissions;
        self.transaction_timeouts += o.transaction_timeouts;
        self.cancelled_invites += o.cancelled_invites;
        self.registrations_not_kept += o.registrations_not_kept;
        self.handling += &o.handling;
    }
}

/// What one proxy's (or shard's) metrics read at a scrape.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The proxy's own counters.
    pub proxy: ProxyMetrics,
    /// The SigComp endpoint's: compartments open and closed, state bytes,
    /// UDVM cycles, NACKs (RFC 4077) sent and received by reason.
    pub endpoint: EndpointMetrics,
    /// Terminals with a live registration.
    pub registered: usize,
    /// SigComp messages that carried their bytecode, each way, first and
    /// again (`sigkit_proxy_bytecode_uploads`).
    pub uploads: Uploads,
    /// Open compartments into which bytecode was uploaded again.
    pub reuploading: usize,
    /// The overload detectors' and handlers' readings (the SIP overload
    /// thesis's D1 and D2, RFC 7339 Via signals).
    pub overload: OverloadMetrics,
    /// Stateful mode: transactions held.
    pub transactions: usize,
    /// REGISTERs held for the registrar's answer ([`crate::pending`]),
    /// under `max_pending_registers` (`sigkit_proxy_pending_registers`).
    pub pending_registers: usize,
    /// Bytes those REGISTERs take (`sigkit_proxy_pending_register_bytes`).
    pub pending_register_bytes: usize,
    /// Bytes of SigComp state waiting with them, under
    /// `max_pending_state_bytes` (`sigkit_proxy_pending_state_bytes`).
    pub pending_state_bytes: usize,
    /// REGISTERs that met each cap, by [`Cap::index`]
    /// (`sigkit_proxy_pending_registers_refused{cap}`).
    pub pending_refused: [u64; Cap::ALL.len()],
    /// Terminal flows remembered: UDP source addresses and TCP connections
    /// (RFC 5626 flows; `sigkit_proxy_flows`).
    pub flows: usize,
    /// Flows that learned their terminal's SigComp identifier (RFC 5049
    /// §6.1; `sigkit_proxy_flow_identifiers`).
    pub flow_identifiers: usize,
    /// Bytes of those identifiers (`sigkit_proxy_flow_identifier_bytes`).
    pub flow_identifier_bytes: usize,
    /// Decompression time spent on known and on unknown sources
    /// ([`crate::defence::Standing`]).
    pub decompression: [Duration; 2],
    /// Source addresses whose budgets are tracked (`defence.max_sources`).
    pub budgeted_sources: usize,
}

fn add_arrays<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// Another shard's snapshot: counts add up; of the overload detectors'
/// readings, the most alarming is kept ([`OverloadMetrics::add_shard`]).
impl AddAssign<&Snapshot> for Snapshot {
    fn add_assign(&mut self, o: &Snapshot) {
        self.proxy += &o.proxy;
        self.endpoint += &o.endpoint;
        self.registered += o.registered;
        self.uploads.add(&o.uploads);
        self.reuploading += o.reuploading;
        self.overload.add_shard(&o.overload);
        self.transactions += o.transactions;
        self.pending_registers += o.pending_registers;
        self.pending_register_bytes += o.pending_register_bytes;
        self.pending_state_bytes += o.pending_state_bytes;
        add_arrays(&mut self.pending_refused, &o.pending_refused);
        self.flows += o.flows;
        self.flow_identifiers += o.flow_identifiers;
        self.flow_identifier_bytes += o.flow_identifier_bytes;
        self.budgeted_sources += o.budgeted_sources;
        for (a, b) in self.decompression.iter_mut().zip(o.decompression) {
            *a += b;
        }
    }
}

/// What the capture tap (`hep`, `capture`) reads at a scrape: the
/// runtime's, not a shard's; all zero when no tap is configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TapSnapshot {
    /// Messages handed to the tap's writer
    /// (`sigkit_proxy_capture_messages_total`).
    pub captured: u64,
    /// Messages dropped because the writer's queue was full
    /// (`sigkit_proxy_capture_dropped_total`).
    pub dropped: u64,
    /// HEP packets that could not be built or sent
    /// (`sigkit_proxy_capture_errors_total{sink="hep"}`).
    pub hep_errors: u64,
    /// Messages the capture file did not take
    /// (`sigkit_proxy_capture_errors_total{sink="pcap"}`).
    pub pcap_errors: u64,
}

/// What the terminals' TCP connections read at a scrape
/// ([`crate::connections`]): the proxy's, not a shard's.
#[derive(Debug, Clone, Default)]
pub struct TcpSnapshot {
    /// Connections open, those being closed included: they still hold a
    /// descriptor (`sigkit_proxy_tcp_connections`).
    pub connections: usize,
    /// The cap on them, `tcp.max_connections`
    /// (`sigkit_proxy_tcp_max_connections`).
    pub max_connections: usize,
    /// Source addresses (IPv6: /64 prefixes) with a connection open.
    pub sources: usize,
    /// Bytes the connections hold toward their next message.
    pub buffered_bytes: usize,
    /// Connections closed, by reason (`peer`, `idle`, `buffer`,
    /// `framing`, `cap`, `descriptors`, `stuck`), every reason listed
    /// (`sigkit_proxy_tcp_connections_closed{reason}`).
    pub closed: Vec<(&'static str, u64)>,
    /// New connections refused, by reason, every reason listed
    /// (`sigkit_proxy_tcp_connections_refused{reason}`).
    pub refused: Vec<(&'static str, u64)>,
    /// Failed accepts on the listeners, by kind (`emfile`, `enfile`,
    /// `memory`, `aborted`, `other`),
    /// every kind listed (`sigkit_proxy_tcp_accept_errors{kind}`).
    pub accept_errors: Vec<(&'static str, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handling_times_fall_in_their_buckets_and_export_cumulatively() {
        let mut h = HandlingTimes::default();
        for us in [5, 10, 11, 400, 2_000_000] {
            h.record(Duration::from_micros(us));
        }
        // At or below 10 µs, then 25, then 500, then beyond 100 ms.
        assert_eq!(h.counts[0], 2);
        assert_eq!(h.counts[1], 1);
        assert_eq!(h.counts[7], 1);
        assert_eq!(h.counts[HANDLING_BUCKETS_US.len()], 1);
        assert_eq!(h.count(), 5);
        let mut m = ProxyMetrics::default();
        m += &ProxyMetrics { handling: h.clone(), ..ProxyMetrics::default() };
        m += &ProxyMetrics { handling: h, ..ProxyMetrics::default() };
        assert_eq!(m.handling.count(), 10);
        assert_eq!(m.handling.sum_ns, 2 * 2_000_426_000);
    }

    /// Shards' snapshots add up, and the endpoint's counters with them;
    /// an overload alarm of any shard is the sum's.
    #[test]
    fn snapshots_add_up_across_shards() {
        let mut a = Snapshot { flows: 2, ..Snapshot::default() };
        a.proxy.refused[1] = 3;
        a.endpoint.cycles = 10;
        a.endpoint.nacks_sent_by_reason[4] = 1;
        a.overload.t1_ms = 500;
        let mut b = a.clone();
        b.overload.delay_alarm = true;
        b.overload.t1_ms = 2000;
        a += &b;
        assert_eq!((a.flows, a.proxy.refused[1], a.endpoint.cycles, a.endpoint.nacks_sent_by_reason[4]), (4, 6, 20, 2));
        assert!(a.overload.delay_alarm);
        assert_eq!(a.overload.t1_ms, 2000);
    }
}
