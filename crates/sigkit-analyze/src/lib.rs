//! What SigComp and TAROC header compression would have done to the SIP
//! traffic of a capture.
//!
//! [`analyze`] reads a pcap or pcapng capture ([`capture`]), groups its UDP
//! and TCP packets into flows and takes the SIP messages out of them
//! ([`flows`]: one per UDP datagram; TCP streams reassembled and split by
//! Content-Length, RFC 3261 §18.3). SigComp messages already in the
//! capture are decompressed as their receivers did ([`decode`]), and the
//! SIP they carried is used. Then, per flow:
//!
//! - for each SigComp mechanism and algorithm, the bytes two endpoints
//!   would have sent for the same messages in the same order, feedback
//!   going back with the next message the other way ([`simulate`]);
//! - for TCP flows, the TCP/IP header bytes TAROC would have sent
//!   ([`taroc`]) against the captured headers;
//! - the one-way RAN delay of each message and of the flow at each link
//!   rate, by the 2005 SigComp performance thesis's equation 2.1 (size /
//!   rate + RTT/2 per message; `sigkit_eval::ran`), uncompressed and for
//!   each variant. Like the thesis, the plain variants count the SIP (or
//!   SigComp) bytes only; the "+ tcp/ip" and "+ taroc" variants of TCP
//!   flows add the header bytes of the segments that carried each message.
//!
//! Only SIP counts as SIP: a flow is a SIP flow when its payloads parse as
//! SIP messages (a start line per RFC 3261 §7.1 or §7.2), or as SigComp
//! messages (RFC 3320 §7) that decompress to SIP; other UDP and TCP
//! traffic (HTTP, DNS, RTP, ...) is counted apart
//! ([`Analysis::other_flows`], [`Analysis::other_bytes`]).
//!
//! A [`Filter`] keeps the messages of some calls (Call-ID) or methods, and
//! [`ladder`] draws each call's messages as a call flow across the
//! addresses it went between, as sngrep does ([`Analysis::calls`]).
//!
//! The crate does no I/O beyond the bytes it is given and never panics on
//! a bad capture: a file that is not one is a [`capture::CaptureError`].
//!
//! What a capture costs is bounded, since each SIP message reported takes
//! about 1.5 KB (its size and RAN delay under every variant at every
//! rate, some 27 × 7 numbers): at most [`Options::max_flows`] SIP flows
//! and [`Options::max_messages`] SIP messages over all of them are
//! reported, in order of first packet. A flow's messages past the message
//! bound are counted ([`FlowReport::messages_not_analysed`]); flows after
//! either bound is reached are not taken apart, only counted
//! ([`Analysis::flows_not_analysed`]). A file of 100,000 one-packet SIP
//! flows would otherwise take gigabytes.

#![forbid(unsafe_code)]

pub mod capture;
pub mod decode;
pub mod filter;
pub mod flows;
pub mod ladder;
pub mod reassembly;
pub mod simulate;
pub mod taroc;

use std::collections::HashSet;
use std::time::Duration;

use serde::Serialize;
use sigcomp::{Params, Transport};
use sigcomp_compress::Config;
use sigkit_eval::ran::{one_way_delay, per_message_delays};
use sigkit_sip::Message;

pub use ::taroc::Mode as TarocMode;
pub use capture::{read_capture, Capture, CaptureError, Protocol, Segment, Truncation};
pub use filter::Filter;
pub use ladder::{CallLadder, LadderMessage};
pub use simulate::Variant;

/// The link rates of the report, kbit/s: the low end of a UMTS signalling
/// bearer up to 256 kbit/s, as the 2005 SigComp performance thesis's
/// Figure 53 spans them.
pub const DEFAULT_RATES_KBPS: [f64; 6] = [9.6, 19.2, 32.0, 64.0, 128.0, 256.0];

/// SIP flows reported by default ([`Options::max_flows`]).
pub const MAX_FLOWS: usize = 1_000;

/// SIP messages reported by default, over every flow
/// ([`Options::max_messages`]): some 75 MB of report, 200 MB as JSON.
pub const MAX_MESSAGES: usize = 50_000;

/// How to analyse.
#[derive(Debug, Clone)]
pub struct Options {
    /// The RAN link rates to report, kbit/s ([`DEFAULT_RATES_KBPS`]).
    pub rates_kbps: Vec<f64>,
    /// The signalling link's round-trip time (equation 2.1).
    pub rtt: Duration,
    /// The SigComp configurations to try.
    pub variants: Vec<Variant>,
    /// What both simulated endpoints offer.
    pub params: Params,
    /// The compressor settings besides mechanism, algorithm and transport.
    pub compressor: Config,
    /// What the decompressors decoding the capture's own SigComp offer.
    pub decoder_params: Params,
    /// TAROC's mode of operation, U, O or R (the TAROC draft §5.5).
    pub taroc_mode: TarocMode,
    /// TAROC with cross-direction inference (taroc's O-mode extension).
    pub taroc_infer: bool,
    /// SIP flows reported at most; later flows are counted, not analysed.
    pub max_flows: usize,
    /// SIP messages reported at most, over every flow; a flow's messages
    /// past it are counted, not analysed.
    pub max_messages: usize,
    /// Which SIP messages to analyse (all by default).
    pub filter: Filter,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rates_kbps: DEFAULT_RATES_KBPS.to_vec(),
            rtt: sigkit_eval::ran::THESIS_RTT,
            variants: Variant::all(),
            // The thesis's settings (§8, §9.10): DMS 8192, SMS 131072, 32
            // cycles per bit, the whole static dictionary.
            params: Params { dms: 8192, sms: 131_072, cpb: 32, ..Params::default() },
            compressor: Config::default(),
            // RFC 5049 §3's 8192 bytes of decompression memory, which a SIP
            // compressor may assume of its peer; the most state memory and
            // cycles, so nothing the sender relied on is missing.
            decoder_params: Params { dms: 8192, sms: 131_072, cpb: 128, ..Params::default() },
            taroc_mode: TarocMode::O,
            taroc_infer: false,
            max_flows: MAX_FLOWS,
            max_messages: MAX_MESSAGES,
            filter: Filter::default(),
        }
    }
}

/// The whole analysis of a capture.
#[derive(Debug, Clone, Serialize)]
pub struct Analysis {
    /// What the capture held.
    pub capture: CaptureSummary,
    /// The options the analysis ran with.
    pub settings: Settings,
    /// The SIP flows, in order of their first packet.
    pub flows: Vec<FlowReport>,
    /// UDP and TCP flows with no SIP in them (HTTP, DNS, RTP, ...).
    pub other_flows: usize,
    /// Their UDP datagrams and TCP segments.
    pub other_packets: usize,
    /// Their UDP and TCP payload bytes as captured (retransmissions
    /// included).
    pub other_bytes: usize,
    /// Flows not taken apart because [`Options::max_flows`] SIP flows or
    /// [`Options::max_messages`] SIP messages were reported before them.
    pub flows_not_analysed: usize,
    /// SIP flows none of whose messages passed [`Options::filter`].
    pub flows_filtered_out: usize,
    /// SIP messages [`Options::filter`] left out, over every flow.
    pub messages_filtered_out: usize,
    /// Each call (Call-ID) of the reported messages as a call flow, in
    /// order of its first message.
    pub calls: Vec<CallLadder>,
}

/// What the capture held, as read.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureSummary {
    /// "pcap" or "pcapng".
    pub format: &'static str,
    /// Link types seen, in order of first appearance.
    pub link_types: Vec<String>,
    /// Frames in the file.
    pub frames: usize,
    /// UDP datagrams and TCP segments read.
    pub udp_tcp_packets: usize,
    /// Frames not used, by why.
    pub skipped: capture::Skipped,
    /// TCP/IPv4 packets whose checksums were repaired
    /// ([`Capture::checksums_fixed`]).
    pub checksums_fixed: usize,
    /// Set when the file was cut short inside a record
    /// ([`Capture::truncated`]); in JSON an object with the same fields
    /// and the warning's text, or null.
    #[serde(serialize_with = "serialize_truncation")]
    pub truncated: Option<Truncation>,
}

/// [`CaptureSummary::truncated`] in JSON.
fn serialize_truncation<S: serde::Serializer>(t: &Option<Truncation>, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct CutShort {
        records: usize,
        offset: usize,
        present: usize,
        declared: Option<usize>,
        partial_record: &'static str,
        warning: String,
    }
    t.map(|t| CutShort {
        records: t.records,
        offset: t.offset,
        present: t.present,
        declared: t.declared,
        partial_record: "dropped",
        warning: t.to_string(),
    })
    .serialize(s)
}

/// The options an analysis ran with, as the report shows them.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// The RAN link rates, kbit/s.
    pub rates_kbps: Vec<f64>,
    /// The round-trip time of equation 2.1, ms.
    pub rtt_ms: f64,
    /// Decompression memory size of the simulated endpoints, bytes
    /// (RFC 3320 §3.3.1).
    pub dms: u32,
    /// State memory size of the simulated endpoints, bytes.
    pub sms: u32,
    /// Cycles per bit of the simulated endpoints.
    pub cpb: u16,
    /// TAROC's mode: "u", "o", "r", or "o-infer" with inference.
    pub taroc_mode: String,
    /// The SigComp variants' names ([`Variant::name`]).
    pub variants: Vec<String>,
    /// SIP flows reported at most ([`Options::max_flows`]).
    pub max_flows: usize,
    /// SIP messages reported at most, over every flow
    /// ([`Options::max_messages`]).
    pub max_messages: usize,
    /// The Call-IDs kept ([`Filter::calls`]); empty: every call.
    pub calls: Vec<String>,
    /// The methods kept ([`Filter::methods`]); empty: every method.
    pub methods: Vec<String>,
}

/// One SIP flow.
#[derive(Debug, Clone, Serialize)]
pub struct FlowReport {
    /// 1, 2, ... in order of first packet.
    pub id: usize,
    /// UDP or TCP.
    pub protocol: Protocol,
    /// The first sender (direction "a->b").
    pub a: String,
    /// The other end, address and port.
    pub b: String,
    /// Its UDP datagrams or TCP segments.
    pub packets: usize,
    /// Its SIP messages, at most [`Options::max_messages`] over all flows.
    pub messages: Vec<MessageReport>,
    /// Distinct Call-IDs.
    pub calls: usize,
    /// Bytes of its SIP messages (as decoded, for those sent as SigComp).
    pub sip_bytes: usize,
    /// Bytes the messages took above UDP/TCP in the capture.
    pub captured_bytes: usize,
    /// The SigComp messages already in the capture.
    pub sigcomp_in_capture: decode::DecodeCounts,
    /// What could not be read as SIP.
    pub unusable: flows::Unusable,
    /// Per direction, for TCP.
    pub reassembly: Option<[reassembly::ReassemblyCounts; 2]>,
    /// For TCP flows.
    pub taroc: Option<taroc::TarocRun>,
    /// "sip" first; each variant's bytes and RAN delays.
    pub variants: Vec<VariantReport>,
    /// SIP messages of the flow after [`Options::max_messages`] was
    /// reached: not in `messages`, sizes or delays.
    pub messages_not_analysed: usize,
}

/// One message of a flow.
#[derive(Debug, Clone, Serialize)]
pub struct MessageReport {
    /// 1, 2, ... within its flow.
    pub index: usize,
    /// "a->b" or "b->a".
    pub direction: &'static str,
    /// The capture's frame (from 1) that completed the message.
    pub frame: usize,
    /// Seconds since the capture's first packet.
    pub time_s: f64,
    /// The method of a request; the status code and CSeq method of a
    /// response ("200 INVITE").
    pub summary: String,
    /// Its Call-ID, if its headers parse and hold one.
    pub call_id: Option<String>,
    /// Its size as SIP, bytes.
    pub sip_bytes: usize,
    /// Bytes it took above UDP/TCP in the capture (the SigComp message, if
    /// it came as one).
    pub captured_bytes: usize,
    /// It came as SigComp and was decoded.
    pub came_as_sigcomp: bool,
    /// TCP: the captured TCP/IP header bytes of the segments that carried it.
    pub tcp_ip_header_bytes: Option<usize>,
    /// TCP: what TAROC would have sent for those headers.
    pub taroc_header_bytes: Option<usize>,
}

/// One way of sending a flow's messages.
#[derive(Debug, Clone, Serialize)]
pub struct VariantReport {
    /// "sip", "captured", "sigcomp dynamic/lzss", "sip + tcp/ip",
    /// "sigcomp dynamic/lzss + taroc", ...
    pub name: String,
    /// Lower-layer headers counted: "none", "tcp/ip" or "taroc".
    pub headers: &'static str,
    /// The variant it is compared with: "sip", or "sip + tcp/ip".
    pub baseline: String,
    /// Bytes per message.
    pub sizes: Vec<usize>,
    /// Bytes of every message together.
    pub bytes: usize,
    /// bytes / the baseline's bytes.
    pub ratio: f64,
    /// Messages sent plain because SigComp failed on them.
    pub sent_plain: usize,
    /// The first SigComp failure, "message N: why"; None if none.
    pub failure: Option<String>,
    /// Equation 2.1 at each rate of [`Settings::rates_kbps`].
    pub ran: Vec<RanPoint>,
}

/// A variant's RAN delay at one link rate (equation 2.1).
#[derive(Debug, Clone, Serialize)]
pub struct RanPoint {
    /// The link rate, kbit/s.
    pub kbps: f64,
    /// The flow's one-way RAN delay, seconds.
    pub delay_s: f64,
    /// The baseline variant's one-way delay, seconds.
    pub baseline_delay_s: f64,
    /// Baseline delay − this delay, seconds.
    pub improvement_s: f64,
    /// The improvement as a percentage of the baseline delay (0 when
    /// that is 0).
    pub improvement_pct: f64,
    /// Each message's delay, seconds.
    pub message_delays_s: Vec<f64>,
}

/// Why a capture could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// The bytes are not a readable capture.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A SigComp endpoint could not be set up with the options' parameters.
    #[error("SigComp endpoint set-up: {0}")]
    Endpoint(#[from] sigcomp_compress::EndpointError),
}

/// Analyses the capture held in `data`.
pub fn analyze(data: &[u8], options: &Options) -> Result<Analysis, AnalyzeError> {
    let cap = read_capture(data)?;
    let start = cap.segments.first().map_or(Duration::ZERO, |s| s.timestamp);
    let summary = CaptureSummary {
        format: cap.format,
        link_types: cap.link_types.clone(),
        frames: cap.frames,
        udp_tcp_packets: cap.segments.len(),
        skipped: cap.skipped,
        checksums_fixed: cap.checksums_fixed,
        truncated: cap.truncated,
    };
    let mut reports: Vec<FlowReport> = Vec::new();
    let (mut other_flows, mut other_packets, mut other_bytes) = (0, 0, 0);
    let (mut flows_filtered_out, mut messages_filtered_out) = (0, 0);
    let mut flows_not_analysed = 0;
    let mut messages_left = options.max_messages;
    for (protocol, a, b, segments) in flows::group(cap.segments) {
        if reports.len() >= options.max_flows || messages_left == 0 {
            flows_not_analysed += 1;
            continue;
        }
        let mut flow = flows::take_apart(protocol, a, b, segments, options.decoder_params)?;
        if !flow.is_sip() {
            other_flows += 1;
            other_packets += flow.segments.len();
            other_bytes += flow.payload_bytes();
            continue;
        }
        if !options.filter.is_empty() {
            let before = flow.messages.len();
            flow.messages.retain(|m| options.filter.keeps(&m.sip));
            messages_filtered_out += before - flow.messages.len();
            if flow.messages.is_empty() {
                flows_filtered_out += 1;
                continue;
            }
        }
        let beyond = flow.messages.len().saturating_sub(messages_left);
        flow.messages.truncate(messages_left);
        messages_left -= flow.messages.len();
        let mut report = report_flow(reports.len() + 1, &flow, start, options)?;
        report.messages_not_analysed = beyond;
        reports.push(report);
    }
    let settings = Settings {
        rates_kbps: options.rates_kbps.clone(),
        rtt_ms: options.rtt.as_secs_f64() * 1000.0,
        dms: options.params.dms,
        sms: options.params.sms,
        cpb: options.params.cpb,
        taroc_mode: match (options.taroc_mode, options.taroc_infer) {
            (TarocMode::O, true) => "o-infer".to_string(),
            (mode, _) => format!("{mode:?}").to_lowercase(),
        },
        variants: options.variants.iter().map(Variant::name).collect(),
        max_flows: options.max_flows,
        max_messages: options.max_messages,
        calls: options.filter.calls.clone(),
        methods: options.filter.methods.clone(),
    };
    let calls = ladder::calls(&reports);
    Ok(Analysis {
        capture: summary,
        settings,
        flows: reports,
        other_flows,
        other_packets,
        other_bytes,
        flows_not_analysed,
        flows_filtered_out,
        messages_filtered_out,
        calls,
    })
}

/// "INVITE", or "200 INVITE" for a response.
fn summarize(sip: &[u8]) -> (String, Option<String>) {
    let Ok(m) = Message::parse_headers(sip) else { return ("(unparsed)".into(), None) };
    let call_id = m.call_id().ok().map(str::to_string);
    let summary = match (m.method(), m.status_code()) {
        (Some(method), _) => method.to_string(),
        (None, Some(code)) => match m.cseq() {
            Ok(c) => format!("{code} {}", c.method),
            Err(_) => code.to_string(),
        },
        _ => "?".into(),
    };
    (summary, call_id)
}

/// The one-way delay of messages of `sizes` at each of the RAN rates, and
/// the improvement over the baseline's `base_sizes`.
fn ran_points(sizes: &[usize], base_sizes: &[usize], options: &Options) -> Vec<RanPoint> {
    options
        .rates_kbps
        .iter()
        .map(|&kbps| {
            let delay_s = one_way_delay(sizes, kbps, options.rtt);
            let baseline_delay_s = one_way_delay(base_sizes, kbps, options.rtt);
            let improvement_s = baseline_delay_s - delay_s;
            RanPoint {
                kbps,
                delay_s,
                baseline_delay_s,
                improvement_s,
                improvement_pct: if baseline_delay_s > 0.0 { improvement_s / baseline_delay_s * 100.0 } else { 0.0 },
                message_delays_s: per_message_delays(sizes, kbps, options.rtt),
            }
        })
        .collect()
}

/// A variant before its RAN delays: name, headers counted, baseline name,
/// bytes per message, messages sent plain, first SigComp failure.
type PlannedVariant = (String, &'static str, &'static str, Vec<usize>, usize, Option<String>);

fn report_flow(id: usize, flow: &flows::Flow, start: Duration, options: &Options) -> Result<FlowReport, AnalyzeError> {
    let tcp = flow.protocol == Protocol::Tcp;
    let taroc = tcp.then(|| {
        let packets: Vec<Option<&[u8]>> = flow.segments.iter().map(|s| s.ipv4_packet.as_deref()).collect();
        taroc::run(&packets, options.taroc_mode, options.taroc_infer)
    });
    let mut messages = Vec::with_capacity(flow.messages.len());
    let mut call_ids = HashSet::new();
    for (i, m) in flow.messages.iter().enumerate() {
        let (summary, call_id) = summarize(&m.sip);
        if let Some(c) = &call_id {
            call_ids.insert(c.clone());
        }
        let header_bytes = tcp.then(|| m.segments.iter().map(|&s| flow.segments[s].header_len).sum());
        let taroc_bytes = taroc.as_ref().map(|t| {
            m.segments
                .iter()
                .map(|&s| match t.per_segment.get(s).copied().flatten() {
                    Some((_, after)) => after,
                    None => flow.segments[s].header_len,
                })
                .sum()
        });
        messages.push(MessageReport {
            index: i + 1,
            direction: if m.direction == 0 { "a->b" } else { "b->a" },
            frame: m.frame,
            time_s: flow.segments[m.segment].timestamp.saturating_sub(start).as_secs_f64(),
            summary,
            call_id,
            sip_bytes: m.sip.len(),
            captured_bytes: m.wire_len,
            came_as_sigcomp: m.was_sigcomp,
            tcp_ip_header_bytes: header_bytes,
            taroc_header_bytes: taroc_bytes,
        });
    }

    // The variants: (name, headers, baseline, sizes, sent_plain, failure).
    let sip_sizes: Vec<usize> = messages.iter().map(|m| m.sip_bytes).collect();
    let mut variants: Vec<PlannedVariant> = vec![("sip".into(), "none", "sip", sip_sizes.clone(), 0, None)];
    if flow.messages.iter().any(|m| m.was_sigcomp) {
        let captured = messages.iter().map(|m| m.captured_bytes).collect();
        variants.push(("captured".into(), "none", "sip", captured, 0, None));
    }
    let transport = if tcp { Transport::Stream } else { Transport::Message };
    let inputs: Vec<(usize, &[u8])> = flow.messages.iter().map(|m| (m.direction, m.sip.as_slice())).collect();
    let mut simulated = Vec::new();
    for v in &options.variants {
        let s = simulate::simulate(&inputs, *v, transport, options.params, options.compressor)?;
        variants.push((v.name(), "none", "sip", s.sizes.clone(), s.sent_plain, s.first_failure.clone()));
        simulated.push((v.name(), s));
    }
    if tcp {
        let headers: Vec<usize> = messages.iter().map(|m| m.tcp_ip_header_bytes.unwrap_or(0)).collect();
        let taroc_headers: Vec<usize> = messages.iter().map(|m| m.taroc_header_bytes.unwrap_or(0)).collect();
        let plus = |a: &[usize], b: &[usize]| a.iter().zip(b).map(|(x, y)| x + y).collect::<Vec<usize>>();
        variants.push(("sip + tcp/ip".into(), "tcp/ip", "sip + tcp/ip", plus(&sip_sizes, &headers), 0, None));
        variants.push(("sip + taroc".into(), "taroc", "sip + tcp/ip", plus(&sip_sizes, &taroc_headers), 0, None));
        for (name, s) in &simulated {
            // The SigComp message in the segments the SIP message took, each
            // with TAROC's header: SigComp's smaller messages would need no
            // more segments than the originals did.
            variants.push((
                format!("{name} + taroc"),
                "taroc",
                "sip + tcp/ip",
                plus(&s.sizes, &taroc_headers),
                s.sent_plain,
                s.first_failure.clone(),
            ));
        }
    }
    let by_name: Vec<(String, Vec<usize>)> = variants.iter().map(|v| (v.0.clone(), v.3.clone())).collect();
    let variant_reports = variants
        .into_iter()
        .map(|(name, headers, baseline, sizes, sent_plain, failure)| {
            let base_sizes = by_name.iter().find(|(n, _)| n == baseline).map_or(&sip_sizes, |(_, s)| s);
            let bytes: usize = sizes.iter().sum();
            let base_bytes: usize = base_sizes.iter().sum();
            let ran = ran_points(&sizes, base_sizes, options);
            VariantReport {
                name,
                headers,
                baseline: baseline.to_string(),
                bytes,
                ratio: if base_bytes > 0 { bytes as f64 / base_bytes as f64 } else { 1.0 },
                sizes,
                sent_plain,
                failure,
                ran,
            }
        })
        .collect();
    Ok(FlowReport {
        id,
        protocol: flow.protocol,
        a: flow.a.to_string(),
        b: flow.b.to_string(),
        packets: flow.segments.len(),
        calls: call_ids.len(),
        sip_bytes: messages.iter().map(|m| m.sip_bytes).sum(),
        captured_bytes: messages.iter().map(|m| m.captured_bytes).sum(),
        messages,
        sigcomp_in_capture: flow.decoder.counts.clone(),
        unusable: flow.unusable.clone(),
        reassembly: tcp.then_some(flow.reassembly),
        taroc,
        variants: variant_reports,
        messages_not_analysed: 0,
    })
}
