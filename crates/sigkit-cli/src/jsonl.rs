//! `sigkit decompress --jsonl`: one endpoint driven by JSON lines.
//!
//! Each input line is one request, and gets exactly one output line,
//! flushed at once, in input order:
//!
//! - `{"message_hex": "...", "compartment": "<name>" | null, "stream": false}`
//!   decompresses a message (`stream` may be left out); see docs/decompress.md for
//!   the answer's fields.
//! - `{"close": "<name>"}` closes the compartment of that name (RFC 3320
//!   §6.2: its state is released, and its feedback forgotten). The answer
//!   is `{"closed": "<name>", "known": true}`, `known` being false when no
//!   message was accepted under that name since it was last closed. A
//!   later message under the same name starts a fresh compartment.
//! - `{"metrics": true}` reports the endpoint: `{"metrics": {"compartments",
//!   "state_bytes", "resident_bytes", "evicted_compartments",
//!   "announced_ids_dropped", "max_compartments", "max_state_bytes"}}`
//!   (`sigcomp::Metrics` and `sigcomp::Limits`).
//!
//! The endpoint keeps at most `--max-compartments` compartments and
//! `--max-state-bytes` of state (`sigcomp::Limits`): accepting a message
//! may close the least recently used other compartments. A message answer
//! then carries `"evicted": ["<name>", …]`, the names closed (the field is
//! left out when none was); those names start fresh compartments if used
//! again, as after a close.
//!
//! A compartment name is at most [`MAX_NAME`] bytes (a longer one is
//! answered `{"error": …}`), and a name is remembered only while the
//! decompressor holds its compartment: the names never outnumber
//! `--max-compartments`, so they take at most that many times
//! [`MAX_NAME`] bytes, whatever the input.
//!
//! A line is at most [`MAX_LINE`] bytes (2 MiB + 64 KiB): room for the
//! largest message a stream carries, 1 MiB, as plain hex (2 MiB), with the
//! rest of the request around it. A longer line is read through and
//! dropped without being held in memory, and answered
//! `{"error": "line N: line too long: …"}`; the next line is read as usual.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use serde::{Deserialize, Serialize};
use sigcomp::wire::{Deframer, Frame};
use sigcomp::{CompartmentId, Decompressor, Failure, Reason, Transport};

use crate::line_reader::{self, Line};
use crate::{hexin, MAX_STREAM_MESSAGE};

/// Longest request line, in bytes without the line end: a 1 MiB message
/// (the most a stream message may hold) in plain hex, plus 64 KiB for the
/// JSON around it.
pub const MAX_LINE: usize = 2 * MAX_STREAM_MESSAGE + 64 * 1024;

/// Longest compartment name, in bytes: an application names a compartment
/// after its peer (RFC 5049 §6.1: a URN is about 45 bytes).
pub const MAX_NAME: usize = 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    message_hex: String,
    /// Must be present; null means "not accepted". (`deserialize_with`
    /// keeps serde from treating a missing Option as null.)
    #[serde(deserialize_with = "Option::deserialize")]
    compartment: Option<String>,
    #[serde(default)]
    stream: bool,
}

/// The answer for one message.
#[derive(Serialize, Debug, Default, Clone)]
struct MessageResult {
    /// Null when the message failed.
    output_hex: Option<String>,
    cycles: u64,
    /// RFC 4077 reason name, null on success.
    nack: Option<&'static str>,
    /// The RFC 4077 NACK to send back; null on success (and for a message
    /// that is itself a NACK).
    nack_hex: Option<String>,
    states_created: Vec<String>,
}

/// The answer line for one request.
#[derive(Serialize)]
struct Answer {
    #[serde(flatten)]
    first: MessageResult,
    /// Stream requests only: every message the chunk completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    messages: Option<Vec<MessageResult>>,
    /// Compartments closed to keep within the limits while answering.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    evicted: Vec<String>,
}

/// `{"close": "<name>"}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CloseRequest {
    close: String,
}

/// The answer to a close request.
#[derive(Serialize)]
struct Closed {
    closed: String,
    /// Whether the name had a compartment to close.
    known: bool,
}

/// `{"metrics": true}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricsRequest {
    metrics: bool,
}

/// The endpoint's metrics and limits.
#[derive(Serialize)]
struct MetricsAnswer {
    compartments: usize,
    state_bytes: usize,
    resident_bytes: usize,
    evicted_compartments: u64,
    announced_ids_dropped: u64,
    max_compartments: usize,
    max_state_bytes: usize,
}

/// One answer line.
#[derive(Serialize)]
#[serde(untagged)]
enum Reply {
    Message(Answer),
    Closed(Closed),
    Metrics { metrics: MetricsAnswer },
}

#[derive(Serialize)]
struct ErrorLine {
    error: String,
}

/// One receiving endpoint: the decompressor, the application's
/// compartment names, and the TCP stream shared by all stream requests.
struct Endpoint {
    d: Decompressor,
    compartments: HashMap<String, CompartmentId>,
    /// The name of each identifier in `compartments`.
    names: HashMap<CompartmentId, String>,
    /// The identifier the next new name gets: identifiers are never
    /// reused, so a closed compartment's name and a new name cannot meet.
    next_compartment: u64,
    deframer: Deframer,
}

impl Endpoint {
    fn compartment(&mut self, name: &str) -> CompartmentId {
        if let Some(&id) = self.compartments.get(name) {
            return id;
        }
        let id = CompartmentId(self.next_compartment);
        self.next_compartment += 1;
        self.compartments.insert(name.to_string(), id);
        self.names.insert(id, name.to_string());
        id
    }

    fn close(&mut self, name: String) -> Closed {
        let id = self.compartments.remove(&name);
        if let Some(id) = id {
            self.names.remove(&id);
            self.d.close_compartment(id);
        }
        Closed { closed: name, known: id.is_some() }
    }

    /// The names of the compartments the decompressor closed to keep
    /// within its limits since the last call; they are forgotten.
    fn evicted(&mut self) -> Vec<String> {
        let mut evicted = Vec::new();
        for id in self.d.take_evicted() {
            if let Some(name) = self.names.remove(&id) {
                self.compartments.remove(&name);
                evicted.push(name);
            }
        }
        evicted
    }

    fn metrics(&self) -> MetricsAnswer {
        let m = self.d.metrics();
        let limits = self.d.limits();
        MetricsAnswer {
            compartments: m.compartments,
            state_bytes: m.state_bytes,
            resident_bytes: m.resident_bytes,
            evicted_compartments: m.evicted_compartments,
            announced_ids_dropped: m.announced_ids_dropped,
            max_compartments: limits.max_compartments,
            max_state_bytes: limits.max_state_bytes,
        }
    }

    fn message(&mut self, msg: &[u8], transport: Transport, compartment: Option<&str>) -> MessageResult {
        match self.d.decompress(msg, transport) {
            Ok(out) => {
                let states_created = match compartment {
                    Some(name) => {
                        let id = self.compartment(name);
                        self.d.accept(out.pending, id).created.iter().map(|s| s.to_hex()).collect()
                    }
                    // Dropping the pending part discards the state requests.
                    None => Vec::new(),
                };
                MessageResult {
                    output_hex: Some(hexin::encode(&out.output)),
                    cycles: out.cycles,
                    nack: None,
                    nack_hex: None,
                    states_created,
                }
            }
            Err(f) => MessageResult {
                output_hex: None,
                cycles: f.cycles,
                nack: Some(f.reason.name()),
                nack_hex: self.d.nack_for(msg, &f).map(|n| hexin::encode(&n)),
                states_created: Vec::new(),
            },
        }
    }

    fn handle(&mut self, line: &[u8]) -> Result<Reply, String> {
        let value: serde_json::Value = serde_json::from_slice(line).map_err(|e| format!("bad request: {e}"))?;
        // Serde would also take a JSON array for a struct; only objects are requests.
        let Some(object) = value.as_object() else {
            return Err("bad request: expected a JSON object".into());
        };
        if object.contains_key("close") {
            let req = CloseRequest::deserialize(value).map_err(|e| format!("bad close request: {e}"))?;
            return Ok(Reply::Closed(self.close(req.close)));
        }
        if object.contains_key("metrics") {
            let req = MetricsRequest::deserialize(value).map_err(|e| format!("bad metrics request: {e}"))?;
            if !req.metrics {
                return Err("bad metrics request: `metrics` must be true".into());
            }
            return Ok(Reply::Metrics { metrics: self.metrics() });
        }
        let mut answer = self.message_request(value)?;
        answer.evicted = self.evicted();
        Ok(Reply::Message(answer))
    }

    fn message_request(&mut self, value: serde_json::Value) -> Result<Answer, String> {
        let req = Request::deserialize(value).map_err(|e| format!("bad request: {e}"))?;
        let bytes = hexin::decode(&req.message_hex).map_err(|e| format!("bad message_hex: {e}"))?;
        let compartment = req.compartment.as_deref();
        if compartment.is_some_and(|c| c.len() > MAX_NAME) {
            return Err(format!("bad request: compartment name over {MAX_NAME} bytes"));
        }
        if !req.stream {
            let first = self.message(&bytes, Transport::Message, compartment);
            return Ok(Answer { first, messages: None, evicted: Vec::new() });
        }
        let mut frames = Vec::new();
        self.deframer.push(&bytes, &mut frames);
        let messages: Vec<MessageResult> = frames
            .into_iter()
            .map(|frame| match frame {
                Frame::Message(msg) => self.message(&msg, Transport::Stream, compartment),
                Frame::FramingError => self.framing_error(),
            })
            .collect();
        let first = messages.first().cloned().unwrap_or_default();
        Ok(Answer { first, messages: Some(messages), evicted: Vec::new() })
    }

    fn framing_error(&self) -> MessageResult {
        let failure = Failure { reason: Reason::FramingError, opcode: 0, pc: 0, details: Vec::new(), cycles: 0 };
        // RFC 4077 §3.2: the hash of a FRAMING_ERROR NACK is all zeros, so
        // the bytes hashed do not matter.
        let nack = self.d.nack_for(&[], &failure).map(|n| hexin::encode(&n));
        MessageResult { nack: Some(Reason::FramingError.name()), nack_hex: nack, ..Default::default() }
    }
}

/// Answers every line of `input` on `output` until end of input.
pub fn run(d: Decompressor, mut input: impl BufRead, mut output: impl Write) -> io::Result<()> {
    let mut ep = Endpoint {
        d,
        compartments: HashMap::new(),
        names: HashMap::new(),
        next_compartment: 0,
        deframer: Deframer::new(MAX_STREAM_MESSAGE),
    };
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        let result = match line_reader::read_line(&mut input, &mut line, MAX_LINE)? {
            Line::End => return Ok(()),
            Line::Complete => {
                let text = line.strip_suffix(b"\r").unwrap_or(&line);
                ep.handle(text)
            }
            Line::TooLong { len } => Err(format!("line too long: {len} bytes (at most {MAX_LINE})")),
        };
        number += 1;
        let json = match result {
            Ok(answer) => serde_json::to_string(&answer),
            Err(error) => serde_json::to_string(&ErrorLine { error: format!("line {number}: {error}") }),
        }
        .map_err(io::Error::other)?;
        output.write_all(json.as_bytes())?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
}
