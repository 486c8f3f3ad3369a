//! The proxy's metrics in the Prometheus text exposition format
//! (OpenMetrics 1.0, which Prometheus reads), encoded by
//! `prometheus-client` from the shards' [`Snapshot`]s added up. The
//! metric names and labels are what docs/deploy.md lists and its alerting
//! rules use.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeCounterValue, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use sigcomp::Reason;

use crate::defence::Refusal;
use crate::metrics::{Snapshot, TapSnapshot, TcpSnapshot, HANDLING_BUCKETS_US};
use crate::pending::Cap;

/// The shards' snapshots, added up, in the Prometheus text exposition
/// format (OpenMetrics 1.0, which Prometheus reads; counters end in
/// `_total`).
pub fn text(shards: &[Snapshot]) -> String {
    exposition(shards, None)
}

/// [`text`] with the TCP connections' series.
pub fn text_with_tcp(shards: &[Snapshot], tcp: &TcpSnapshot) -> String {
    exposition(shards, Some((tcp.clone(), TapSnapshot::default())))
}

/// [`text`] with the runtime's series: the TCP connections' and the
/// capture tap's.
pub fn text_with_runtime(shards: &[Snapshot], tcp: &TcpSnapshot, tap: TapSnapshot) -> String {
    exposition(shards, Some((tcp.clone(), tap)))
}

fn exposition(shards: &[Snapshot], runtime: Option<(TcpSnapshot, TapSnapshot)>) -> String {
    let mut sum = Snapshot::default();
    for s in shards {
        sum += s;
    }
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Exposition(sum, runtime)));
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

/// The content type of [`text`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A series' labels.
type Labels = Vec<(&'static str, String)>;

fn label(key: &'static str, value: &str) -> Labels {
    vec![(key, value.to_string())]
}

/// One counter without labels.
fn counter<N: EncodeCounterValue + fmt::Debug + Send + Sync>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: N,
) -> fmt::Result {
    ConstCounter::new(value).encode(e.encode_descriptor(name, help, None, MetricType::Counter)?)
}

/// A counter's series, by their labels.
fn counters<N: EncodeCounterValue + fmt::Debug + Send + Sync + Copy>(
    e: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: &[(Labels, N)],
) -> fmt::Result {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in series {
        ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

fn gauge(e: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: f64) -> fmt::Result {
    ConstGauge::new(value).encode(e.encode_descriptor(name, help, None, MetricType::Gauge)?)
}

fn flag(on: bool) -> f64 {
    if on {
        1.0
    } else {
        0.0
    }
}

/// Counts by RFC 4077 reason, the reasons counted only.
fn by_reason(counts: &[u64; 32]) -> Vec<(Labels, u64)> {
    (0u8..32)
        .filter_map(|code| {
            let n = counts[usize::from(code)];
            let r = Reason::from_code(code)?;
            (n > 0).then(|| (label("reason", r.name()), n))
        })
        .collect()
}

/// The summed snapshot, and the TCP connections' and the capture tap's
/// when the runtime has them, encoded at each scrape.
#[derive(Debug)]
struct Exposition(Snapshot, Option<(TcpSnapshot, TapSnapshot)>);

impl Collector for Exposition {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> fmt::Result {
        traffic(&mut e, &self.0)?;
        sigcomp(&mut e, &self.0)?;
        defence_and_limits(&mut e, &self.0)?;
        transactions_and_overload(&mut e, &self.0)?;
        match &self.1 {
            Some((t, c)) => {
                tcp(&mut e, t)?;
                tap(&mut e, c)
            }
            None => Ok(()),
        }
    }
}

/// The capture tap (`hep`, `capture`): what its writer took, dropped and
/// failed to send or write.
fn tap(e: &mut DescriptorEncoder<'_>, t: &TapSnapshot) -> fmt::Result {
    counter(
        e,
        "sigkit_proxy_capture_messages",
        "SIP messages handed to the capture tap (HEP and/or pcap).",
        t.captured,
    )?;
    counter(
        e,
        "sigkit_proxy_capture_dropped",
        "SIP messages the capture tap dropped because its writer's queue was full.",
        t.dropped,
    )?;
    counters(
        e,
        "sigkit_proxy_capture_errors",
        "Captured messages a sink could not take: a HEP packet not built or sent, a pcap record not written.",
        &[(label("sink", "hep"), t.hep_errors), (label("sink", "pcap"), t.pcap_errors)],
    )
}

/// The terminals' TCP connections and their caps (`[tcp]`).
fn tcp(e: &mut DescriptorEncoder<'_>, t: &TcpSnapshot) -> fmt::Result {
    let series = |key: &'static str, counts: &[(&'static str, u64)]| -> Vec<(Labels, u64)> {
        counts.iter().map(|(name, n)| (label(key, name), *n)).collect()
    };
    gauge(e, "sigkit_proxy_tcp_connections", "Terminals' TCP connections open.", t.connections as f64)?;
    gauge(e, "sigkit_proxy_tcp_max_connections", "The cap on them (tcp.max_connections).", t.max_connections as f64)?;
    gauge(
        e,
        "sigkit_proxy_tcp_sources",
        "Source addresses (IPv6: /64 prefixes) with a TCP connection open.",
        t.sources as f64,
    )?;
    gauge(
        e,
        "sigkit_proxy_tcp_buffered_bytes",
        "Bytes the TCP connections hold toward their next message (each under tcp.max_buffered_bytes).",
        t.buffered_bytes as f64,
    )?;
    counters(
        e,
        "sigkit_proxy_tcp_connections_closed",
        "TCP connections closed, by reason: peer (the terminal closed it), idle (tcp.idle_timeout_s), buffer \
         (tcp.max_buffered_bytes), framing, cap (room for a new one at tcp.max_connections), descriptors (room \
         for a new one when accepting failed for want of a descriptor), stuck (the terminal read nothing).",
        &series("reason", &t.closed),
    )?;
    counters(
        e,
        "sigkit_proxy_tcp_connections_refused",
        "New TCP connections refused, by reason (per_source: tcp.max_connections_per_source).",
        &series("reason", &t.refused),
    )?;
    counters(
        e,
        "sigkit_proxy_tcp_accept_errors",
        "Failed accepts on the terminals' TCP listeners, by kind (emfile, enfile: out of descriptors; the loop \
         backs off).",
        &series("kind", &t.accept_errors),
    )
}

/// Messages and bytes each way, and the handling time.
fn traffic(e: &mut DescriptorEncoder<'_>, s: &Snapshot) -> fmt::Result {
    let m = &s.proxy;
    let sides = |a: [u64; 2]| [(label("side", "terminal"), a[0]), (label("side", "upstream"), a[1])];
    counters(e, "sigkit_proxy_messages_received", "Messages received, by side.", &sides(m.messages_in))?;
    counters(e, "sigkit_proxy_bytes_received", "Bytes received, by side.", &sides(m.bytes_in))?;
    counters(e, "sigkit_proxy_messages_sent", "Messages sent, by side.", &sides(m.messages_out))?;
    counters(e, "sigkit_proxy_bytes_sent", "Bytes sent, by side.", &sides(m.bytes_out))?;
    counter(e, "sigkit_proxy_bad_sip", "Messages that are not SIP.", m.bad_sip)?;
    counter(e, "sigkit_proxy_undeliverable", "Messages with nowhere to go.", m.undeliverable)?;
    // Each bucket's own count: the encoder adds them up, as Prometheus
    // histograms count cumulatively; the last bound is +Inf.
    let buckets: Vec<(f64, u64)> = HANDLING_BUCKETS_US
        .iter()
        .map(|&b| b as f64 / 1e6)
        .chain(std::iter::once(f64::MAX))
        .zip(m.handling.counts)
        .collect();
    e.encode_descriptor(
        "sigkit_proxy_handling_seconds",
        "Time from a message read from its socket or TCP stream to the messages it caused being ready to send \
         (waiting in the socket buffer or for a CPU is not counted).",
        None,
        MetricType::Histogram,
    )?
    .encode_histogram::<NoLabelSet>(m.handling.sum_ns as f64 / 1e9, m.handling.count(), &buckets, None)
}

/// Compression, NACKs, uploads and compartments.
fn sigcomp(e: &mut DescriptorEncoder<'_>, s: &Snapshot) -> fmt::Result {
    let (m, n, u) = (&s.proxy, &s.endpoint, &s.uploads);
    counters(
        e,
        "sigkit_proxy_sigcomp_bytes",
        "SigComp bytes and the SIP bytes they carried, by direction.",
        &[
            (vec![("direction", "in".into()), ("layer", "sigcomp".into())], m.sigcomp_bytes_in),
            (vec![("direction", "in".into()), ("layer", "sip".into())], m.sigcomp_sip_bytes_in),
            (vec![("direction", "out".into()), ("layer", "sigcomp".into())], m.sigcomp_bytes_out),
            (vec![("direction", "out".into()), ("layer", "sip".into())], m.sigcomp_sip_bytes_out),
        ],
    )?;
    counters(
        e,
        "sigkit_proxy_nacks_sent",
        "RFC 4077 NACKs sent to terminals, by reason (STATE_NOT_FOUND: a terminal named a state the proxy does not hold).",
        &by_reason(&n.nacks_sent_by_reason),
    )?;
    counters(
        e,
        "sigkit_proxy_nacks_received",
        "RFC 4077 NACKs received from terminals, by reason.",
        &by_reason(&n.nacks_received_by_reason),
    )?;
    let upload = |direction: &str, kind: &str| vec![("direction", direction.to_string()), ("kind", kind.to_string())];
    counters(
        e,
        "sigkit_proxy_bytecode_uploads",
        "SigComp messages that carried their bytecode, by direction: before the sender first named a state in \
         that compartment (initial), or the first after (again, once per start over: the sender lost its \
         model of the other end's state; the two ends disagree about compartments, or state was lost).",
        &[
            (upload("from_terminal", "initial"), u.from_terminals_initial),
            (upload("from_terminal", "again"), u.from_terminals_again),
            (upload("to_terminal", "initial"), u.to_terminals_initial),
            (upload("to_terminal", "again"), u.to_terminals_again),
        ],
    )?;
    counter(e, "sigkit_proxy_udvm_cycles", "UDVM cycles run.", n.cycles)?;
    counter(
        e,
        "sigkit_proxy_nack_resends",
        "Messages compressed anew and sent again over TCP after a terminal's NACK.",
        m.nack_resends,
    )?;
    counter(
        e,
        "sigkit_proxy_stuck_connections_closed",
        "TCP connections closed because their terminal read nothing while the proxy's queue for it filled.",
        m.stuck_connections_closed,
    )?;
    counters(
        e,
        "sigkit_proxy_state_decisions",
        "SigComp messages whose state was accepted or declined (RFC 5049).",
        &[(label("decision", "accepted"), m.states_accepted), (label("decision", "declined"), m.states_declined)],
    )?;
    counters(
        e,
        "sigkit_proxy_compartments_closed",
        "Compartments closed by the limits or the idle timeout.",
        &[(label("cause", "evicted"), n.compartments_evicted), (label("cause", "idle"), n.compartments_timed_out)],
    )?;
    gauge(e, "sigkit_proxy_compartments", "Compartments open.", n.compartments as f64)?;
    gauge(e, "sigkit_proxy_state_bytes", "State memory of all compartments (RFC 3320 §6.2).", n.state_bytes as f64)?;
    gauge(
        e,
        "sigkit_proxy_compartments_reuploaded",
        "Open compartments into which bytecode was uploaded again, either way.",
        s.reuploading as f64,
    )?;
    let ratio = |sig: u64, sip: u64| if sip == 0 { 0.0 } else { sig as f64 / sip as f64 };
    gauge(
        e,
        "sigkit_proxy_compression_ratio_out",
        "SigComp bytes sent / SIP bytes they carried.",
        ratio(m.sigcomp_bytes_out, m.sigcomp_sip_bytes_out),
    )?;
    gauge(
        e,
        "sigkit_proxy_compression_ratio_in",
        "SigComp bytes received / SIP bytes they carried.",
        ratio(m.sigcomp_bytes_in, m.sigcomp_sip_bytes_in),
    )
}

/// The decompression budgets ([`crate::defence`]) and the caps on what
/// the proxy remembers.
fn defence_and_limits(e: &mut DescriptorEncoder<'_>, s: &Snapshot) -> fmt::Result {
    let m = &s.proxy;
    let refused: Vec<(Labels, u64)> =
        Refusal::ALL.iter().map(|r| (label("budget", r.name()), m.refused[r.index()])).collect();
    counters(
        e,
        "sigkit_proxy_refused",
        "SigComp messages refused unread, by budget: a source's messages or cycles, the proxy's overall \
         decompression time, or the unknown sources' share of it.",
        &refused,
    )?;
    counters(
        e,
        "sigkit_proxy_decompression_seconds",
        "Time spent decompressing, by source: known (a registration, or a registered terminal's messages, on its \
         flow) or unknown.",
        &[
            (label("source", "known"), s.decompression[0].as_secs_f64()),
            (label("source", "unknown"), s.decompression[1].as_secs_f64()),
        ],
    )?;
    gauge(
        e,
        "sigkit_proxy_budgeted_sources",
        "Source addresses whose decompression budgets are tracked (under defence.max_sources, per shard).",
        s.budgeted_sources as f64,
    )?;
    let pending: Vec<(Labels, u64)> =
        Cap::ALL.iter().map(|c| (label("cap", c.name()), s.pending_refused[c.index()])).collect();
    counters(
        e,
        "sigkit_proxy_pending_registers_refused",
        "REGISTERs that met a cap of the held ones: not held (registers, per_source), or their SigComp state \
         declined at once (bytes).",
        &pending,
    )?;
    counter(
        e,
        "sigkit_proxy_registrations_not_kept",
        "Registrations the proxy did not remember: max_registrations were.",
        m.registrations_not_kept,
    )?;
    gauge(e, "sigkit_proxy_registered_terminals", "Terminals with a live registration.", s.registered as f64)?;
    gauge(
        e,
        "sigkit_proxy_pending_registers",
        "REGISTERs held for the registrar's answer.",
        s.pending_registers as f64,
    )?;
    gauge(e, "sigkit_proxy_pending_register_bytes", "Bytes the held REGISTERs take.", s.pending_register_bytes as f64)?;
    gauge(
        e,
        "sigkit_proxy_pending_state_bytes",
        "Bytes of SigComp state waiting with the held REGISTERs (under max_pending_state_bytes).",
        s.pending_state_bytes as f64,
    )?;
    gauge(
        e,
        "sigkit_proxy_flows",
        "Terminal flows remembered (UDP source addresses, TCP connections).",
        s.flows as f64,
    )?;
    gauge(
        e,
        "sigkit_proxy_flow_identifiers",
        "Flows that learned their terminal's SigComp identifier (RFC 5049 §6.1).",
        s.flow_identifiers as f64,
    )?;
    gauge(
        e,
        "sigkit_proxy_flow_identifier_bytes",
        "Bytes of the identifiers flows learned.",
        s.flow_identifier_bytes as f64,
    )
}

/// Stateful transactions and overload control.
fn transactions_and_overload(e: &mut DescriptorEncoder<'_>, s: &Snapshot) -> fmt::Result {
    let (m, o) = (&s.proxy, &s.overload);
    counter(
        e,
        "sigkit_proxy_transactions",
        "Stateful mode: transactions started toward the upstream.",
        m.transactions,
    )?;
    counters(
        e,
        "sigkit_proxy_retransmissions_absorbed",
        "Stateful mode: retransmissions that ended at the proxy, by side they came from.",
        &[(label("side", "terminal"), m.absorbed_requests), (label("side", "upstream"), m.absorbed_responses)],
    )?;
    counter(
        e,
        "sigkit_proxy_upstream_retransmissions",
        "Stateful mode: requests sent again to the upstream (RFC 3261 Timer A or E).",
        m.upstream_retransmissions,
    )?;
    counter(
        e,
        "sigkit_proxy_transaction_timeouts",
        "Stateful mode: transactions the upstream never answered (408 sent, RFC 3261 §16.8).",
        m.transaction_timeouts,
    )?;
    counter(
        e,
        "sigkit_proxy_cancelled_invites",
        "Stateful mode: INVITE transactions a terminal cancelled (RFC 3261 §16.10).",
        m.cancelled_invites,
    )?;
    gauge(e, "sigkit_proxy_transactions_held", "Stateful mode: transactions held.", s.transactions as f64)?;
    counter(
        e,
        "sigkit_proxy_overload_rejected",
        "Requests answered 503 by overload control instead of forwarded.",
        o.rejected,
    )?;
    counter(e, "sigkit_proxy_overload_timed_out", "Requests the upstream never answered within 64*T1.", o.timed_out)?;
    counters(
        e,
        "sigkit_proxy_overload_d2_alarms",
        "Decisions 'congested' of D2 (Wald's test of kappa's variance) and of its mean-shift variant.",
        &[(label("test", "variance"), o.d2_alarms), (label("test", "mean"), o.d2_mean_alarms)],
    )?;
    gauge(e, "sigkit_proxy_overload_pending", "Requests awaiting the upstream's final response.", o.pending as f64)?;
    gauge(
        e,
        "sigkit_proxy_overload_delay_alarm",
        "1 while the delay detector (p95 final response delay over its threshold) fires.",
        flag(o.delay_alarm),
    )?;
    gauge(
        e,
        "sigkit_proxy_overload_delay_p95_seconds",
        "95th percentile of the upstream's final response delay over the detector's window.",
        o.delay_p95_us as f64 / 1e6,
    )?;
    gauge(
        e,
        "sigkit_proxy_overload_oc_reduction_percent",
        "Share of new requests the upstream asks to shed (RFC 7339 loss).",
        f64::from(o.oc_reduction),
    )?;
    gauge(
        e,
        "sigkit_proxy_overload_d2_kappa",
        "D2's last anomaly indicator, kappa = change of pending / change of new-request rate.",
        o.d2_kappa,
    )?;
    gauge(
        e,
        "sigkit_proxy_overload_d2_alarm",
        "1 while D2 (Wald's test of kappa's variance) last decided congested.",
        flag(o.d2_alarm),
    )?;
    gauge(
        e,
        "sigkit_proxy_overload_d2_mean_alarm",
        "1 while D2's mean-shift variant last decided congested.",
        flag(o.d2_mean_alarm),
    )?;
    gauge(
        e,
        "sigkit_proxy_overload_t1_seconds",
        "T1 of new client transactions toward the upstream (raised by H1).",
        o.t1_ms as f64 / 1000.0,
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The text is Prometheus's: counters end in `_total`, a histogram's
    /// buckets are cumulative up to +Inf, and it ends with `# EOF`.
    #[test]
    fn the_exposition_is_the_prometheus_text_format() {
        let mut a = Snapshot::default();
        a.proxy.messages_in = [3, 1];
        a.proxy.handling.record(Duration::from_micros(20));
        a.proxy.handling.record(Duration::from_secs(1));
        let mut b = a.clone();
        b.flows = 7;
        let t = text(&[a, b]);
        assert!(t.contains("# TYPE sigkit_proxy_messages_received counter\n"), "{t}");
        assert!(t.contains("sigkit_proxy_messages_received_total{side=\"terminal\"} 6\n"), "{t}");
        assert!(
            t.contains("sigkit_proxy_handling_seconds_bucket{le=\"0.000025\"} 2\n") || t.contains("le=\"2.5e-5\"} 2\n"),
            "{t}"
        );
        assert!(t.contains("sigkit_proxy_handling_seconds_bucket{le=\"+Inf\"} 4\n"), "{t}");
        assert!(t.contains("sigkit_proxy_handling_seconds_count 4\n"), "{t}");
        assert!(t.contains("sigkit_proxy_flows 7"), "{t}");
        assert!(t.ends_with("# EOF\n"), "{t}");
    }

    /// The TCP connections' series come with the runtime's snapshot only.
    #[test]
    fn the_tcp_series_are_encoded_from_the_runtimes_snapshot() {
        let tcp = TcpSnapshot {
            connections: 3,
            max_connections: 8,
            closed: vec![("idle", 2), ("cap", 0)],
            refused: vec![("per_source", 1)],
            accept_errors: vec![("emfile", 5)],
            ..TcpSnapshot::default()
        };
        let t = text_with_tcp(&[Snapshot::default()], &tcp);
        for series in [
            "sigkit_proxy_tcp_connections 3.0\n",
            "sigkit_proxy_tcp_max_connections 8.0\n",
            "sigkit_proxy_tcp_connections_closed_total{reason=\"idle\"} 2\n",
            "sigkit_proxy_tcp_connections_closed_total{reason=\"cap\"} 0\n",
            "sigkit_proxy_tcp_connections_refused_total{reason=\"per_source\"} 1\n",
            "sigkit_proxy_tcp_accept_errors_total{kind=\"emfile\"} 5\n",
        ] {
            assert!(t.contains(series), "{series} missing from\n{t}");
        }
        assert!(t.ends_with("# EOF\n"), "{t}");
        assert!(!text(&[Snapshot::default()]).contains("sigkit_proxy_tcp_"));
    }
}
