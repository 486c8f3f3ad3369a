//! The captures' section (`sigkit analyze --json`): per SIP flow of a
//! capture, the one-way RAN delay of its messages against the link's bit
//! rate, sent as SIP and as each SigComp mechanism would have sent them
//! (the SigComp performance thesis's equation 2.1), and a table of every
//! way of sending them, TCP/IP and TAROC headers included for TCP flows.
//! Then each call's flow as a ladder (sngrep's call flow), a capture's
//! first [`MAX_LADDERS`] calls.

use crate::charts::{Chart, Series, Style};
use crate::ladder::{Ladder, Row};
use crate::page::{num, strings, Figure, Section, Table};
use crate::{CaptureCall, CaptureFlow};

/// Calls drawn per capture: a trunk's capture holds thousands, and the
/// page is for reading; `sigkit analyze --ladder` prints them all.
const MAX_LADDERS: usize = 12;

/// Messages drawn per call, and addresses (columns) per ladder: past
/// them a ladder is too tall to read or its columns too narrow for their
/// addresses.
const MAX_LADDER_ROWS: usize = 200;
const MAX_LADDER_COLUMNS: usize = 8;

/// Lines on one plot at most: past it only the LZSS variants are drawn
/// (the table has them all).
const MAX_LINES: usize = crate::charts::MAX_SERIES;

fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

/// The ladders of the calls of each capture, in input order, at most
/// [`MAX_LADDERS`] a capture.
fn ladder_figures(calls: &[CaptureCall]) -> Vec<Figure> {
    let mut captures: Vec<&str> = Vec::new();
    for c in calls {
        if !captures.contains(&c.capture.as_str()) {
            captures.push(&c.capture);
        }
    }
    let mut figures = Vec::new();
    for (k, capture) in captures.iter().enumerate() {
        let of_capture: Vec<&CaptureCall> = calls.iter().filter(|c| c.capture == *capture).collect();
        for (i, call) in of_capture.iter().take(MAX_LADDERS).enumerate() {
            let rows: Vec<Row> = call
                .messages
                .iter()
                .take(MAX_LADDER_ROWS)
                .map(|m| Row {
                    time_s: m.time_s,
                    from: m.from,
                    to: m.to,
                    label: m.label.clone(),
                    bytes: format!(
                        "{} → {}{}",
                        m.sip_bytes,
                        m.sigcomp_bytes.map_or_else(|| "–".to_string(), |b| b.to_string()),
                        if m.sigcomp_captured { " captured" } else { "" }
                    ),
                })
                .collect();
            let ladder = Ladder {
                id: format!("ladder-{}-{}-{}", k + 1, i + 1, slug(capture)),
                title: format!("call {}", call.call_id),
                endpoints: call.endpoints.iter().take(MAX_LADDER_COLUMNS).cloned().collect(),
                rows,
            };
            let duration = call.messages.last().map_or(0.0, |m| m.time_s);
            let mut text = format!(
                "{capture}, call {}: {} messages between {} addresses in {} s. Bytes: as SIP → as SigComp, as the capture carried it (\"captured\"){}.",
                call.call_id,
                call.messages.len(),
                call.endpoints.len(),
                num(duration, 6),
                call.sigcomp_variant.as_ref().map_or(String::new(), |v| format!(" or as {v} would have sent it"))
            );
            if call.messages.len() > MAX_LADDER_ROWS || call.endpoints.len() > MAX_LADDER_COLUMNS {
                text.push_str(&format!(
                    " Drawn: the first {MAX_LADDER_ROWS} messages between the first {MAX_LADDER_COLUMNS} addresses."
                ));
            }
            figures.push(Figure::ladder(ladder, text));
        }
        if of_capture.len() > MAX_LADDERS {
            let rest = of_capture.len() - MAX_LADDERS;
            let text =
                format!("{capture}: {rest} more calls not drawn here (sigkit analyze --ladder prints them all).");
            figures.push(Figure { chart: None, ladder: None, text, table: None });
        }
    }
    figures
}

pub(crate) fn capture_section(flows: &[CaptureFlow], calls: &[CaptureCall]) -> Section {
    let mut figures = Vec::new();
    for (i, flow) in flows.iter().enumerate() {
        let payload_only: Vec<_> = flow.variants.iter().filter(|v| v.headers == "none").collect();
        let drawn: Vec<_> = if payload_only.len() > MAX_LINES {
            payload_only.into_iter().filter(|v| !v.name.starts_with("sigcomp") || v.name.ends_with("/lzss")).collect()
        } else {
            payload_only
        };
        let series = drawn
            .iter()
            .map(|v| Series::new(v.name.clone(), Style::Line, v.ran.iter().map(|p| (p.0, p.1)).collect()))
            .collect();
        let rates: Vec<f64> = flow.variants.first().map(|v| v.ran.iter().map(|p| p.0).collect()).unwrap_or_default();
        let mut head = strings(["sent as", "bytes", "ratio"]);
        head.extend(rates.iter().map(|r| format!("{r} kbit/s: s (saved)")));
        let rows = flow
            .variants
            .iter()
            .map(|v| {
                let mut row = vec![
                    if v.sent_plain > 0 { format!("{} ({} sent plain)", v.name, v.sent_plain) } else { v.name.clone() },
                    v.bytes.to_string(),
                    num(v.ratio, 3),
                ];
                row.extend(v.ran.iter().map(|p| {
                    if v.name == v.baseline {
                        num(p.1, 2)
                    } else {
                        format!("{} ({} %)", num(p.1, 2), num(p.2, 0))
                    }
                }));
                row
            })
            .collect();
        let mut text = format!(
            "{}, {}: {} SIP messages in {} calls, {} bytes of SIP.",
            flow.capture, flow.flow, flow.messages, flow.calls, flow.sip_bytes
        );
        if flow.sigcomp_messages > 0 {
            text.push_str(&format!(
                " {} SigComp messages in the capture, {} decoded (\"captured\": as they were sent).",
                flow.sigcomp_messages, flow.sigcomp_decoded
            ));
        }
        if let (Some(n), Some(b), Some(a)) = (flow.taroc_packets, flow.header_bytes_before, flow.header_bytes_after) {
            let inference = if flow.taroc_mode == "o-infer" { " (O-mode, cross-direction inference)" } else { "" };
            text.push_str(&format!(
                " TAROC{inference}: {n} TCP/IP headers, {b} bytes as captured, {a} compressed (mean {} → {} bytes).",
                num(b as f64 / n.max(1) as f64, 1),
                num(a as f64 / n.max(1) as f64, 1)
            ));
        }
        figures.push(Figure {
            ladder: None,
            chart: Some(Chart {
                log_x: true,
                ..Chart::new(
                    format!("capture-{}-{}", i + 1, slug(&flow.capture)),
                    format!("{}, {}: one-way RAN delay", flow.capture, flow.flow),
                    "signalling link bit rate, kbit/s (log scale)",
                    "one-way RAN delay of the flow, s",
                    series,
                )
            }),
            text,
            table: Some(Table::new(format!("{}: every way of sending it", flow.flow), head, rows)),
        });
    }
    figures.extend(ladder_figures(calls));
    let rtt = flows.first().map_or(70.0, |f| f.rtt_ms);
    Section {
        id: "captures",
        title: "Captures: what SigComp and TAROC would have sent".into(),
        text: format!(
            "Each SIP flow of a capture (sigkit analyze), its messages in capture order sent as plain SIP, as captured, and as two SigComp endpoints would have sent them with each mechanism, feedback carried by the next message the other way. Delay: equation 2.1 of the SigComp performance thesis, size / rate + RTT/2 per message, RTT {} ms; the plain rows count SIP or SigComp bytes only, as the thesis does; the + tcp/ip and + taroc rows of TCP flows add the header bytes of the segments that carried each message, as captured or as TAROC compresses them. Saved: against sip, or against sip + tcp/ip for rows with headers. Then each call's flow, as sngrep draws it: a lifeline per address, an arrow per message from sender to receiver (requests blue, responses vermillion), its time since the call's first message and its bytes as SIP and as SigComp.",
            num(rtt, 0)
        ),
        figures,
    }
}
