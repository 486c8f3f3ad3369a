//! `sigkit decompress --jsonl`: one endpoint driven by JSON lines.
//!
//! Each input line is one request:
//! `{"message_hex": "...", "compartment": "<id>" | null, "stream": false}`
//! (`stream` may be left out). Each gets exactly one output line, flushed
//! at once, in input order; see README.md for the answer's fields.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use serde::{Deserialize, Serialize};
use sigcomp::wire::{Deframer, Frame};
use sigcomp::{CompartmentId, Decompressor, Failure, Reason, Transport};

use crate::{hexin, MAX_STREAM_MESSAGE};

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
    deframer: Deframer,
}

impl Endpoint {
    fn compartment(&mut self, name: &str) -> CompartmentId {
        let next = CompartmentId(self.compartments.len() as u64);
        *self.compartments.entry(name.to_string()).or_insert(next)
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

    fn handle(&mut self, line: &[u8]) -> Result<Answer, String> {
        let value: serde_json::Value = serde_json::from_slice(line).map_err(|e| format!("bad request: {e}"))?;
        // Serde would also take a JSON array for a struct; only objects are requests.
        if !value.is_object() {
            return Err("bad request: expected a JSON object".into());
        }
        let req = Request::deserialize(value).map_err(|e| format!("bad request: {e}"))?;
        let bytes = hexin::decode(&req.message_hex).map_err(|e| format!("bad message_hex: {e}"))?;
        let compartment = req.compartment.as_deref();
        if !req.stream {
            let first = self.message(&bytes, Transport::Message, compartment);
            return Ok(Answer { first, messages: None });
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
        Ok(Answer { first, messages: Some(messages) })
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
    let mut ep = Endpoint { d, compartments: HashMap::new(), deframer: Deframer::new(MAX_STREAM_MESSAGE) };
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        number += 1;
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let json = match ep.handle(text) {
            Ok(answer) => serde_json::to_string(&answer),
            Err(error) => serde_json::to_string(&ErrorLine { error: format!("line {number}: {error}") }),
        }
        .map_err(io::Error::other)?;
        output.write_all(json.as_bytes())?;
        output.write_all(b"\n")?;
        output.flush()?;
    }
}
