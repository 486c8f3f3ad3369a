//! Wire formats: the SigComp message header (RFC 3320 §7) and the record
//! marking of stream transports (RFC 3320 §4.2.2). Parsing and emitting
//! only; no behaviour.

use crate::error::{Failure, Reason};

/// The variable part of a SigComp header after the returned feedback item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body<'a> {
    /// len = 01/10/11: a partial state identifier of 6, 9 or 12 bytes.
    StateId(&'a [u8]),
    /// len = 00: uploaded bytecode and its 4-bit destination field.
    Bytecode {
        /// The bytecode, code_len bytes (0 for a NACK, RFC 4077 §3.1).
        code: &'a [u8],
        /// The destination field: the bytecode goes to (field + 1) · 64
        /// ([`destination_address`]); a NACK's version.
        destination_bits: u8,
    },
}

/// A parsed SigComp message (RFC 3320 Figure 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// The returned feedback item including its length byte (Figure 4).
    pub returned_feedback: Option<&'a [u8]>,
    /// The partial state identifier or the uploaded bytecode.
    pub body: Body<'a>,
    /// The "remaining SigComp message": the compressed data.
    pub remaining: &'a [u8],
    /// Length of the SigComp header in bytes (everything before `remaining`).
    pub header_len: usize,
}

impl<'a> Header<'a> {
    /// Parses a complete SigComp message.
    ///
    /// Fails with MESSAGE_TOO_SHORT when a field is cut off and
    /// INVALID_CODE_LOCATION for destination 0000 (RFC 3320 §7.3).
    pub fn parse(msg: &'a [u8]) -> Result<Header<'a>, Failure> {
        let short = || Failure::new(Reason::MessageTooShort);
        let first = *msg.first().ok_or_else(short)?;
        if first & 0xF8 != 0xF8 {
            // Not a SigComp message at all: RFC 3320 §7 requires 11111xxx.
            // RFC 4077 has no better code than INTERNAL_ERROR for this; the
            // application normally never hands such bytes to SigComp.
            return Err(Failure::new(Reason::InternalError));
        }
        let mut pos = 1;
        let returned_feedback = if first & 0x04 != 0 {
            let b = *msg.get(pos).ok_or_else(short)?;
            let len = returned_feedback_item_len(b);
            let item = msg.get(pos..pos + len).ok_or_else(short)?;
            pos += len;
            Some(item)
        } else {
            None
        };
        let body = match first & 0x03 {
            0 => {
                let b = msg.get(pos..pos + 2).ok_or_else(short)?;
                let code_len = (usize::from(b[0]) << 4) | usize::from(b[1] >> 4);
                let destination_bits = b[1] & 0x0F;
                pos += 2;
                // RFC 4077 reserves code_len = 0 for NACKs, whose destination
                // field is the NACK version; it is validated by the caller.
                // The destination is checked before the length: RFC 4465
                // §3.4 expects INVALID_CODE_LOCATION for a message that is
                // both.
                if destination_bits == 0 && code_len != 0 {
                    return Err(Failure::new(Reason::InvalidCodeLocation));
                }
                let code = msg.get(pos..pos + code_len).ok_or_else(short)?;
                pos += code_len;
                Body::Bytecode { code, destination_bits }
            }
            n => {
                let len = 3 + 3 * usize::from(n);
                let id = msg.get(pos..pos + len).ok_or_else(short)?;
                pos += len;
                Body::StateId(id)
            }
        };
        Ok(Header { returned_feedback, body, remaining: &msg[pos..], header_len: pos })
    }
}

/// Destination address of uploaded bytecode: (bits + 1) * 64 (RFC 3320 §7.3).
pub fn destination_address(bits: u8) -> u16 {
    (u16::from(bits) + 1) * 64
}

/// Longest bytecode the 12-bit code_len field can carry (RFC 3320 §7.3).
pub const MAX_CODE_LEN: usize = 4095;

/// Why a SigComp header cannot be written (RFC 3320 §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmitError {
    /// Bytecode longer than the 12-bit code_len field can say: at most
    /// [`MAX_CODE_LEN`] bytes (RFC 3320 §7.3).
    CodeTooLong {
        /// The bytecode's length in bytes.
        len: usize,
    },
    /// No bytecode: a code_len of 0 marks a NACK (RFC 4077 §3.1), not an
    /// upload.
    EmptyCode,
    /// A destination the 4-bit field cannot encode: 128 to 1024 in steps of
    /// 64 (RFC 3320 §7.3; the encoding 0000 is reserved).
    BadDestination {
        /// The address asked for.
        destination: u16,
    },
    /// A partial state identifier of other than 6, 9 or 12 bytes (the len
    /// field, RFC 3320 §7.2).
    BadPartialIdLength {
        /// The identifier's length in bytes.
        len: usize,
    },
    /// An empty returned feedback item: it holds at least its first byte
    /// (RFC 3320 §7.1).
    EmptyReturnedFeedback,
    /// A returned feedback item whose size is not what its first byte says:
    /// 1 byte when the first bit is 0, else 1 + returned_feedback_length
    /// (the low 7 bits), so 1 to 128 bytes (RFC 3320 §7.1, Figure 4).
    ReturnedFeedbackLength {
        /// The size its first byte gives, in bytes.
        expected: usize,
        /// The item's size as given, in bytes.
        actual: usize,
    },
}

impl std::fmt::Display for EmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmitError::CodeTooLong { len } => {
                write!(f, "{len} bytes of bytecode do not fit the 12-bit code_len field (at most {MAX_CODE_LEN})")
            }
            EmitError::EmptyCode => f.write_str("no bytecode to upload (code_len 0 marks a NACK)"),
            EmitError::BadDestination { destination } => write!(
                f,
                "bytecode cannot be uploaded to {destination}: the destination is a multiple of 64 from 128 to 1024"
            ),
            EmitError::BadPartialIdLength { len } => {
                write!(f, "a partial state identifier has 6, 9 or 12 bytes, not {len}")
            }
            EmitError::EmptyReturnedFeedback => f.write_str("the returned feedback item is empty"),
            EmitError::ReturnedFeedbackLength { expected, actual } => {
                write!(f, "the returned feedback item has {actual} bytes, but its first byte says {expected}")
            }
        }
    }
}

impl std::error::Error for EmitError {}

/// The size of a returned feedback item whose first byte is `first`
/// (RFC 3320 §7.1, Figure 4).
pub fn returned_feedback_item_len(first: u8) -> usize {
    if first & 0x80 == 0 {
        1
    } else {
        1 + usize::from(first & 0x7F)
    }
}

/// Checks a returned feedback item, length byte included, against
/// RFC 3320 §7.1.
fn check_returned_feedback(item: &[u8]) -> Result<(), EmitError> {
    let first = *item.first().ok_or(EmitError::EmptyReturnedFeedback)?;
    let expected = returned_feedback_item_len(first);
    if item.len() != expected {
        return Err(EmitError::ReturnedFeedbackLength { expected, actual: item.len() });
    }
    Ok(())
}

/// The first header byte, `11111 T len` (RFC 3320 Figure 3), and the
/// returned feedback item after it.
fn start_header(returned_feedback: Option<&[u8]>, len_bits: u8, capacity: usize) -> Result<Vec<u8>, EmitError> {
    if let Some(item) = returned_feedback {
        check_returned_feedback(item)?;
    }
    let feedback = returned_feedback.unwrap_or_default();
    let mut out = Vec::with_capacity(1 + feedback.len() + capacity);
    out.push(0xF8 | if returned_feedback.is_some() { 0x04 } else { 0 } | len_bits);
    out.extend_from_slice(feedback);
    Ok(out)
}

/// Emits a SigComp message that uploads `code` to `destination` (128..=1024,
/// a multiple of 64) followed by `input` (RFC 3320 §7.3).
/// `returned_feedback` is a whole returned feedback item, its first byte
/// included (RFC 3320 §7.1).
pub fn emit_bytecode_message(
    returned_feedback: Option<&[u8]>,
    code: &[u8],
    destination: u16,
    input: &[u8],
) -> Result<Vec<u8>, EmitError> {
    if code.is_empty() {
        return Err(EmitError::EmptyCode);
    }
    if code.len() > MAX_CODE_LEN {
        return Err(EmitError::CodeTooLong { len: code.len() });
    }
    if destination & 63 != 0 || !(128..=1024).contains(&destination) {
        return Err(EmitError::BadDestination { destination });
    }
    let mut out = start_header(returned_feedback, 0, 2 + code.len() + input.len())?;
    let destination_bits = (destination / 64 - 1) as u8;
    out.push((code.len() >> 4) as u8);
    out.push((((code.len() & 0x0F) as u8) << 4) | destination_bits);
    out.extend_from_slice(code);
    out.extend_from_slice(input);
    Ok(out)
}

/// Emits a SigComp message that accesses state by a 6, 9 or 12-byte partial
/// identifier, followed by `input` (RFC 3320 §7.2). `returned_feedback` is
/// as for [`emit_bytecode_message`].
pub fn emit_state_message(
    returned_feedback: Option<&[u8]>,
    partial_id: &[u8],
    input: &[u8],
) -> Result<Vec<u8>, EmitError> {
    let len_bits = match partial_id.len() {
        6 => 1,
        9 => 2,
        12 => 3,
        len => return Err(EmitError::BadPartialIdLength { len }),
    };
    let mut out = start_header(returned_feedback, len_bits, partial_id.len() + input.len())?;
    out.extend_from_slice(partial_id);
    out.extend_from_slice(input);
    Ok(out)
}

/// Escapes one message for a stream transport and appends the 0xFFFF
/// delimiter (RFC 3320 §4.2.2). Runs of bytes after an 0xFF are quoted with
/// 0xFF nn so the worst-case expansion stays bounded.
pub fn frame_for_stream(msg: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < msg.len() {
        if msg[i] == 0xFF {
            // Quote up to 127 following bytes so further 0xFFs cost nothing.
            let quoted = (msg.len() - i - 1).min(127);
            // Quoting only pays when the quoted run holds another 0xFF.
            let worth = msg[i + 1..i + 1 + quoted].contains(&0xFF);
            if worth {
                // 0xFF nn means "one 0xFF, then nn bytes copied literally".
                out.push(0xFF);
                out.push(quoted as u8);
                out.extend_from_slice(&msg[i + 1..i + 1 + quoted]);
                i += 1 + quoted;
            } else {
                out.push(0xFF);
                out.push(0x00);
                i += 1;
            }
        } else {
            out.push(msg[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&[0xFF, 0xFF]);
}

/// What the stream deframer found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete SigComp message, unescaped.
    Message(Vec<u8>),
    /// An unquoted 0xFF80..0xFFFE: the stream is broken (RFC 3320 §4.2.2);
    /// the dispatcher should close it. Everything after is ignored.
    FramingError,
}

/// Incremental record-marking decoder for stream transports
/// (RFC 3320 §4.2.2). Feed it bytes as they arrive; it yields each
/// complete message. Messages may span reads; a read may hold many.
#[derive(Debug, Default, Clone)]
pub struct Deframer {
    buf: Vec<u8>,
    /// Saw an 0xFF whose following byte has not arrived yet.
    pending_ff: bool,
    /// Bytes still to copy literally after an 0xFF nn quote.
    quoted_left: u8,
    broken: bool,
    /// Bytes of the current message before unescaping (for limits).
    max_message: usize,
}

impl Deframer {
    /// `max_message` bounds a message's unescaped size; a longer one is a
    /// framing error rather than unbounded buffering.
    pub fn new(max_message: usize) -> Deframer {
        Deframer { max_message, ..Deframer::default() }
    }

    /// Whether a framing error (or a message over `max_message`) has
    /// broken the stream: no further message is returned from it.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Bytes buffered towards the next message.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Bytes received since the last delimiter that no completed message
    /// holds: the unescaped bytes buffered, plus an 0xFF whose escape byte
    /// has not arrived (RFC 3320 §4.2.2: an 0xFF always starts a two-byte
    /// sequence, so it belongs to a message or delimiter still open).
    /// Non-zero at the end of a stream means the stream ended inside a
    /// message.
    pub fn incomplete(&self) -> usize {
        self.buf.len() + usize::from(self.pending_ff)
    }

    /// Feeds `data`, appending every completed frame to `frames`.
    pub fn push(&mut self, data: &[u8], frames: &mut Vec<Frame>) {
        if self.broken {
            return;
        }
        let limit = if self.max_message == 0 { usize::MAX } else { self.max_message };
        let mut i = 0;
        while i < data.len() {
            if self.quoted_left > 0 {
                let n = usize::from(self.quoted_left).min(data.len() - i);
                self.buf.extend_from_slice(&data[i..i + n]);
                self.quoted_left -= n as u8;
                i += n;
            } else if self.pending_ff {
                self.pending_ff = false;
                let b = data[i];
                i += 1;
                match b {
                    0x00..=0x7F => {
                        self.buf.push(0xFF);
                        self.quoted_left = b;
                    }
                    0xFF => {
                        // End of message; repeated delimiters delimit nothing.
                        if !self.buf.is_empty() {
                            frames.push(Frame::Message(std::mem::take(&mut self.buf)));
                        }
                    }
                    _ => {
                        self.broken = true;
                        self.buf.clear();
                        frames.push(Frame::FramingError);
                        return;
                    }
                }
            } else {
                // Copy the run up to the next 0xFF in one go.
                let run = data[i..].iter().position(|&b| b == 0xFF).unwrap_or(data.len() - i);
                self.buf.extend_from_slice(&data[i..i + run]);
                i += run;
                if i < data.len() {
                    self.pending_ff = true;
                    i += 1;
                }
            }
            if self.buf.len() > limit {
                self.broken = true;
                self.buf.clear();
                frames.push(Frame::FramingError);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bytecode_message() {
        let m = [0xF8, 0x00, 0xE1, 0x06, 0x00, 0x11, 0x22, 0x00, 0x02, 0x23, 0, 0, 0, 0, 0, 0, 0, 1];
        let h = Header::parse(&m).unwrap();
        match h.body {
            Body::Bytecode { code, destination_bits } => {
                assert_eq!(code.len(), 14);
                assert_eq!(destination_address(destination_bits), 128);
            }
            _ => panic!("expected bytecode"),
        }
        assert_eq!(h.header_len, 17);
        assert_eq!(h.remaining, &[1]);
    }

    #[test]
    fn short_messages_fail() {
        assert_eq!(Header::parse(&[0xF8]).unwrap_err().reason, Reason::MessageTooShort);
        assert_eq!(Header::parse(&[0xF8, 0x00]).unwrap_err().reason, Reason::MessageTooShort);
        assert_eq!(Header::parse(&[0xF9, 1, 2, 3]).unwrap_err().reason, Reason::MessageTooShort);
        assert_eq!(Header::parse(&[0xFC, 0x85, 1]).unwrap_err().reason, Reason::MessageTooShort);
    }

    #[test]
    fn feedback_and_state_id() {
        let m = emit_state_message(Some(&[0x82, 9, 9]), &[1, 2, 3, 4, 5, 6, 7, 8, 9], b"xy").unwrap();
        let h = Header::parse(&m).unwrap();
        assert_eq!(h.returned_feedback, Some(&[0x82, 9, 9][..]));
        assert_eq!(h.body, Body::StateId(&[1, 2, 3, 4, 5, 6, 7, 8, 9]));
        assert_eq!(h.remaining, b"xy");
    }

    #[test]
    fn emitted_headers_parse_back() {
        let code = vec![0x5A; MAX_CODE_LEN];
        for destination in (128..=1024).step_by(64) {
            for feedback in [None, Some(&[0x05][..]), Some(&[0x80][..]), Some(&[0x81, 0xFF][..])] {
                let m = emit_bytecode_message(feedback, &code, destination, b"in").unwrap();
                let h = Header::parse(&m).unwrap();
                assert_eq!(h.returned_feedback, feedback);
                let Body::Bytecode { code: got, destination_bits } = h.body else { panic!("{h:?}") };
                assert_eq!((got, destination_address(destination_bits)), (&code[..], destination));
                assert_eq!(h.remaining, b"in");
            }
        }
        let item: Vec<u8> = std::iter::once(0xFF).chain(0..127).collect();
        for len in [6, 9, 12] {
            let id: Vec<u8> = (1..=len).collect();
            let m = emit_state_message(Some(&item), &id, b"").unwrap();
            let h = Header::parse(&m).unwrap();
            assert_eq!(h.returned_feedback, Some(&item[..]));
            assert_eq!(h.body, Body::StateId(&id));
        }
    }

    #[test]
    fn emitters_refuse_what_the_header_cannot_say() {
        let code = [0x00];
        assert_eq!(emit_bytecode_message(None, &[0; 4096], 128, b""), Err(EmitError::CodeTooLong { len: 4096 }));
        assert_eq!(emit_bytecode_message(None, &[], 128, b""), Err(EmitError::EmptyCode));
        for destination in [0, 64, 100, 129, 1088, u16::MAX] {
            assert_eq!(
                emit_bytecode_message(None, &code, destination, b""),
                Err(EmitError::BadDestination { destination })
            );
        }
        for len in [0, 5, 7, 13, 20] {
            assert_eq!(emit_state_message(None, &vec![1; len], b""), Err(EmitError::BadPartialIdLength { len }));
        }
        let bad_items: [(&[u8], EmitError); 5] = [
            (&[], EmitError::EmptyReturnedFeedback),
            (&[0x05, 0x00], EmitError::ReturnedFeedbackLength { expected: 1, actual: 2 }),
            (&[0x82, 1], EmitError::ReturnedFeedbackLength { expected: 3, actual: 2 }),
            (&[0x80, 1], EmitError::ReturnedFeedbackLength { expected: 1, actual: 2 }),
            (&[0xFF; 129], EmitError::ReturnedFeedbackLength { expected: 128, actual: 129 }),
        ];
        for (item, error) in bad_items {
            assert_eq!(emit_bytecode_message(Some(item), &code, 128, b""), Err(error), "{item:?}");
            assert_eq!(emit_state_message(Some(item), &[1; 6], b""), Err(error), "{item:?}");
            assert!(!error.to_string().is_empty());
        }
    }

    #[test]
    fn framing_round_trips_in_any_chunking() {
        let msgs: Vec<Vec<u8>> =
            vec![vec![0xF8, 0xFF, 0xFF, 0x01, 0xFF], vec![0xFF; 300], (0..=255u8).collect(), vec![0xF8]];
        let mut stream = vec![0xFF, 0xFF];
        for m in &msgs {
            frame_for_stream(m, &mut stream);
            stream.extend_from_slice(&[0xFF, 0xFF]);
        }
        for chunk in [1, 2, 3, 7, 64, stream.len()] {
            let mut d = Deframer::new(0);
            let mut frames = Vec::new();
            for c in stream.chunks(chunk) {
                d.push(c, &mut frames);
            }
            let got: Vec<Vec<u8>> = frames
                .into_iter()
                .map(|f| match f {
                    Frame::Message(m) => m,
                    Frame::FramingError => panic!("framing error"),
                })
                .collect();
            assert_eq!(got, msgs, "chunk size {chunk}");
        }
    }

    #[test]
    fn pending_escape_byte_is_an_incomplete_message() {
        let mut d = Deframer::new(0);
        let mut frames = Vec::new();
        d.push(&[0xF8, 0x01, 0xFF, 0xFF, 0xFF], &mut frames);
        assert_eq!(frames, vec![Frame::Message(vec![0xF8, 0x01])]);
        assert_eq!(d.buffered(), 0);
        assert_eq!(d.incomplete(), 1);
        d.push(&[0x00], &mut frames);
        assert_eq!(d.incomplete(), 1, "the escaped 0xFF is buffered");
        d.push(&[0xFF, 0xFF], &mut frames);
        assert_eq!(d.incomplete(), 0);
        assert_eq!(frames[1], Frame::Message(vec![0xFF]));
    }

    #[test]
    fn reserved_escape_breaks_stream() {
        let mut d = Deframer::new(0);
        let mut frames = Vec::new();
        d.push(&[0xF8, 0x01, 0xFF, 0x80, 0xFF, 0xFF], &mut frames);
        assert_eq!(frames, vec![Frame::FramingError]);
        assert!(d.is_broken());
    }
}
