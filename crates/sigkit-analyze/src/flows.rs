//! A capture's segments grouped into flows and taken apart into SIP
//! messages.
//!
//! A flow is the traffic between two transport addresses over one
//! protocol: a UDP 5-tuple and its reverse, or a TCP connection. Its
//! direction 0 is from the address that sent first.
//!
//! - UDP: each datagram is one message (RFC 3261 §18.3 keeps a message in
//!   one datagram): SigComp if its first byte is 11111xxx (RFC 3320 §4.1;
//!   no SIP message starts so), otherwise SIP if it parses as a SIP
//!   message; bare CRLFs are keep-alives (RFC 5626 §3.5.1) and are skipped.
//! - TCP: each direction's stream is reassembled ([`crate::reassembly`]).
//!   A stream whose first byte (after keep-alive CRLFs) is a SigComp byte
//!   carries SigComp for the whole connection (RFC 5049 §4), its messages
//!   record-marked (RFC 3320 §4.2.2); otherwise SIP messages follow one
//!   another, each opening with a Request-Line or Status-Line (RFC 3261
//!   §7.1, §7.2) and ending where its Content-Length says (§18.3). A
//!   stream that opens with anything else (HTTP's `GET / HTTP/1.1` or
//!   `HTTP/1.1 200 OK`, TLS, ...) is not SIP, and is not read further.
//!
//! A SigComp message counts as SIP only when what it decompresses to
//! parses as a SIP message. A flow with no SIP message in it (HTTP, DNS,
//! RTP, SigComp that never decompressed) is not a SIP flow and is only
//! counted, with its packets and payload bytes.

use std::collections::HashMap;
use std::net::SocketAddr;

use sigcomp::wire::{frame_for_stream, Deframer, Frame};
use sigcomp::Transport;
use sigkit_sip::{Message, ParseError};

use crate::capture::{Protocol, Segment};
use crate::decode::{Decoded, FlowDecoder};
use crate::reassembly::{Reassembler, ReassemblyCounts};

/// Whether `b` starts a SigComp message: its first five bits are 11111
/// (RFC 3320 §7), which no SIP message starts with (RFC 3320 §4.1).
pub fn is_sigcomp_first_byte(b: u8) -> bool {
    b & 0xF8 == 0xF8
}

/// One SIP message of a flow, as the capture carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowMessage {
    /// 0: from the flow's first sender; 1: back.
    pub direction: usize,
    /// The frame that completed it.
    pub frame: usize,
    /// Index of that frame's segment in the flow's segments.
    pub segment: usize,
    /// The SIP message (decompressed, if it came as SigComp).
    pub sip: Vec<u8>,
    /// Bytes it took on the wire above TCP/UDP: the SIP message, or the
    /// SigComp message (with its record marking over TCP).
    pub wire_len: usize,
    /// It came as SigComp.
    pub was_sigcomp: bool,
    /// Segments whose header bytes it is charged with (TCP: those that
    /// delivered its bytes; UDP: its datagram).
    pub segments: Vec<usize>,
}

/// Whether `b` (empty lines already skipped) opens with a SIP start line:
/// a Request-Line, `Method SP Request-URI SP SIP-Version` (RFC 3261 §7.1),
/// or a Status-Line, `SIP-Version SP Status-Code SP Reason-Phrase` (§7.2).
/// `None` while the line has no end yet.
fn opens_with_sip_start_line(b: &[u8]) -> Option<bool> {
    let end = b.iter().position(|&c| c == b'\n')?;
    // The line alone, closed by an empty line: a header section holding
    // nothing but the start line, which `parse_headers` checks as SIP's.
    let mut line = Vec::with_capacity(end + 3);
    line.extend_from_slice(&b[..=end]);
    line.extend_from_slice(b"\r\n");
    Some(!matches!(
        Message::parse_headers(&line),
        Err(ParseError::StartLine
            | ParseError::Version
            | ParseError::Method
            | ParseError::StatusCode
            | ParseError::Utf8)
    ))
}

/// Whether a datagram, or what a SigComp message decompressed to, is a SIP
/// message: a start line and header section that parse (RFC 3261 §7).
fn is_sip_message(b: &[u8]) -> bool {
    Message::parse_headers(b).is_ok()
}

/// A message that could not be used, by why.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Unusable {
    /// UDP datagrams neither SIP nor SigComp nor keep-alives, SigComp
    /// messages that decompressed to something other than SIP, and TCP
    /// streams that do not open with a SIP start line (RFC 3261 §7.1,
    /// §7.2).
    pub not_sip: usize,
    /// SigComp messages that did not decompress, or NACKs.
    pub sigcomp_not_decoded: usize,
    /// TCP streams where SIP framing failed (no Content-Length, a header
    /// section too large); the rest of such a stream is not read.
    pub stream_errors: usize,
    /// Bytes at the end of a TCP stream that end no message.
    pub trailing_bytes: usize,
}

/// A flow and its messages.
pub struct Flow {
    /// UDP or TCP.
    pub protocol: Protocol,
    /// The first sender.
    pub a: SocketAddr,
    /// The other end.
    pub b: SocketAddr,
    /// Its datagrams or segments, in capture order.
    pub segments: Vec<Segment>,
    /// The SIP messages taken out of them, in the order they completed.
    pub messages: Vec<FlowMessage>,
    /// What could not be read as SIP.
    pub unusable: Unusable,
    /// The decompressors of the SigComp messages in the flow.
    pub decoder: FlowDecoder,
    /// Per direction (TCP).
    pub reassembly: [ReassemblyCounts; 2],
}

impl Flow {
    /// 0 for a segment from `a`, 1 for one from `b`.
    pub fn direction_of(&self, s: &Segment) -> usize {
        usize::from(s.src != self.a)
    }

    /// A SIP flow: one SIP message at least, sent plain or as SigComp
    /// that decompressed to SIP.
    pub fn is_sip(&self) -> bool {
        !self.messages.is_empty()
    }

    /// Bytes of its UDP and TCP payloads as captured (retransmissions
    /// included).
    pub fn payload_bytes(&self) -> usize {
        self.segments.iter().map(|s| s.payload.len()).sum()
    }
}

/// Groups `segments` into flows, in order of their first packet.
pub fn group(segments: Vec<Segment>) -> Vec<(Protocol, SocketAddr, SocketAddr, Vec<Segment>)> {
    let mut index: HashMap<(Protocol, SocketAddr, SocketAddr), usize> = HashMap::new();
    let mut flows: Vec<(Protocol, SocketAddr, SocketAddr, Vec<Segment>)> = Vec::new();
    for s in segments {
        let key = if s.src <= s.dst { (s.protocol, s.src, s.dst) } else { (s.protocol, s.dst, s.src) };
        let i = *index.entry(key).or_insert_with(|| {
            flows.push((s.protocol, s.src, s.dst, Vec::new()));
            flows.len() - 1
        });
        flows[i].3.push(s);
    }
    flows
}

fn is_keepalive(b: &[u8]) -> bool {
    b.iter().all(|c| matches!(c, b'\r' | b'\n'))
}

/// Takes a flow's messages out of its segments, decoding SigComp with
/// decompressors offering `decoder_params`.
pub fn take_apart(
    protocol: Protocol,
    a: SocketAddr,
    b: SocketAddr,
    segments: Vec<Segment>,
    decoder_params: sigcomp::Params,
) -> Result<Flow, sigcomp_compress::EndpointError> {
    let transport = match protocol {
        Protocol::Udp => Transport::Message,
        Protocol::Tcp => Transport::Stream,
    };
    let decoder = FlowDecoder::new(decoder_params, transport)?;
    let mut flow = Flow {
        protocol,
        a,
        b,
        segments,
        messages: Vec::new(),
        unusable: Unusable::default(),
        decoder,
        reassembly: Default::default(),
    };
    match protocol {
        Protocol::Udp => udp_messages(&mut flow),
        Protocol::Tcp => tcp_messages(&mut flow),
    }
    Ok(flow)
}

fn udp_messages(flow: &mut Flow) {
    for i in 0..flow.segments.len() {
        let direction = flow.direction_of(&flow.segments[i]);
        let s = &flow.segments[i];
        let (frame, payload) = (s.frame, s.payload.clone());
        if payload.is_empty() || is_keepalive(&payload) {
            continue;
        }
        let (sip, was_sigcomp) = if is_sigcomp_first_byte(payload[0]) {
            match flow.decoder.decode(direction, &payload) {
                Decoded::Message(m) if is_sip_message(&m) => (m, true),
                Decoded::Message(_) => {
                    flow.unusable.not_sip += 1;
                    continue;
                }
                Decoded::Nack { .. } | Decoded::Failed { .. } => {
                    flow.unusable.sigcomp_not_decoded += 1;
                    continue;
                }
            }
        } else if is_sip_message(&payload) {
            (payload.clone(), false)
        } else {
            flow.unusable.not_sip += 1;
            continue;
        };
        flow.decoder.sent(direction, &sip);
        flow.messages.push(FlowMessage {
            direction,
            frame,
            segment: i,
            sip,
            wire_len: payload.len(),
            was_sigcomp,
            segments: vec![i],
        });
    }
}

/// A message found in one direction's stream: where it ends (the index
/// of the delivery that completed it), and what it is.
struct StreamMessage {
    completed_by: usize,
    sip: Vec<u8>,
    wire_len: usize,
    was_sigcomp: bool,
}

fn tcp_messages(flow: &mut Flow) {
    let mut streams = [Reassembler::new(), Reassembler::new()];
    for (i, s) in flow.segments.iter().enumerate() {
        let d = flow.direction_of(s);
        if let Some(t) = s.tcp {
            streams[d].push(i, t.seq, t.syn, &s.payload);
        }
    }
    // Each direction's messages, then merged in the order of the segments
    // that completed them, so the SigComp decoders and the simulated
    // endpoints see the call as it happened.
    let mut found: Vec<(usize, usize, StreamMessage)> = Vec::new();
    for (d, stream) in streams.iter_mut().enumerate() {
        stream.finish();
        flow.reassembly[d] = stream.counts;
        let start = stream.data.iter().position(|&c| !matches!(c, b'\r' | b'\n'));
        let Some(start) = start else { continue };
        let messages = if is_sigcomp_first_byte(stream.data[start]) {
            sigcomp_records(stream, start, &mut flow.unusable)
        } else {
            sip_messages(stream, &mut flow.unusable)
        };
        found.extend(messages.into_iter().map(|m| (stream.deliveries[m.completed_by].segment, d, m)));
    }
    found.sort_by_key(|(segment, _, _)| *segment);
    // Segments charged to each message: the deliveries after the previous
    // message's completing one, up to its own.
    let mut charged_upto = [0usize; 2];
    for (segment, d, m) in found {
        let deliveries = &streams[d].deliveries;
        let segments: Vec<usize> = deliveries[charged_upto[d]..=m.completed_by].iter().map(|del| del.segment).collect();
        charged_upto[d] = m.completed_by + 1;
        let sip = if m.was_sigcomp {
            // Decoded here, in capture order across both directions.
            match flow.decoder.decode(d, &m.sip) {
                Decoded::Message(sip) if is_sip_message(&sip) => sip,
                Decoded::Message(_) => {
                    flow.unusable.not_sip += 1;
                    continue;
                }
                Decoded::Nack { .. } | Decoded::Failed { .. } => {
                    flow.unusable.sigcomp_not_decoded += 1;
                    continue;
                }
            }
        } else {
            m.sip
        };
        flow.decoder.sent(d, &sip);
        flow.messages.push(FlowMessage {
            direction: d,
            frame: flow.segments[segment].frame,
            segment,
            sip,
            wire_len: m.wire_len,
            was_sigcomp: m.was_sigcomp,
            segments,
        });
    }
}

/// The index of the first delivery whose end reaches `offset`.
fn delivery_reaching(stream: &Reassembler, offset: u64) -> usize {
    stream.deliveries.partition_point(|d| d.end < offset).min(stream.deliveries.len().saturating_sub(1))
}

/// SIP messages one after another, each opening with a SIP start line and
/// `Content-Length` long past its header section (RFC 3261 §18.3). Bytes
/// that open with another line end the stream's SIP: the framing of what
/// follows cannot be known.
fn sip_messages(stream: &Reassembler, unusable: &mut Unusable) -> Vec<StreamMessage> {
    let data = &stream.data;
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        while pos < data.len() && matches!(data[pos], b'\r' | b'\n') {
            pos += 1;
        }
        if pos >= data.len() {
            break;
        }
        match opens_with_sip_start_line(&data[pos..]) {
            Some(true) => {}
            Some(false) => {
                unusable.not_sip += 1;
                break;
            }
            None => {
                unusable.trailing_bytes += data.len() - pos;
                break;
            }
        }
        match Message::parse_stream_frame(&data[pos..]) {
            Ok(Some(n)) => {
                let end = pos + n;
                out.push(StreamMessage {
                    completed_by: delivery_reaching(stream, end as u64),
                    sip: data[pos..end].to_vec(),
                    wire_len: n,
                    was_sigcomp: false,
                });
                pos = end;
            }
            Ok(None) => {
                unusable.trailing_bytes += data.len() - pos;
                break;
            }
            Err(_) => {
                unusable.stream_errors += 1;
                break;
            }
        }
    }
    out
}

/// SigComp messages, record-marked (RFC 3320 §4.2.2). Each delivery is
/// fed to the deframer in turn, so a message is known to be complete at
/// the delivery that brought its delimiter. Its wire size is its
/// re-escaped length: the escaping is deterministic for the quoting this
/// toolkit's sender uses, and another sender's can differ by a few bytes.
fn sigcomp_records(stream: &Reassembler, start: usize, unusable: &mut Unusable) -> Vec<StreamMessage> {
    let mut deframer = Deframer::new(1 << 20);
    let mut out = Vec::new();
    let mut from = start as u64;
    let mut frames = Vec::new();
    for (k, d) in stream.deliveries.iter().enumerate() {
        if d.end <= from {
            continue;
        }
        deframer.push(&stream.data[from as usize..d.end as usize], &mut frames);
        from = d.end;
        for f in frames.drain(..) {
            match f {
                Frame::Message(m) => {
                    let mut framed = Vec::with_capacity(m.len() + 8);
                    frame_for_stream(&m, &mut framed);
                    out.push(StreamMessage { completed_by: k, wire_len: framed.len(), sip: m, was_sigcomp: true });
                }
                Frame::FramingError => {
                    unusable.stream_errors += 1;
                }
            }
        }
        if deframer.is_broken() {
            break;
        }
    }
    unusable.trailing_bytes += deframer.incomplete();
    out
}
