//! Shared harness code for the fuzz targets: input decoding and the
//! invariants every run checks (a violated invariant panics, which
//! libFuzzer reports as a crash):
//!
//! * cycles ≤ (8 × n + 1000) × cycles_per_bit for an n-byte message, on
//!   success and on failure (RFC 3320 §8.6);
//! * output ≤ 65536 bytes (RFC 3320 §9.4.8);
//! * after accept, each compartment's `used` ≤ its SMS and equals the sum
//!   of its entries' costs, and every entry's item is stored;
//! * a failure's NACK parses back to the same reason, opcode, pc, details;
//! * the deframer gives the same frames however the stream is chunked;
//! * a run naming states gives the same result with the states packed;
//! * the deframer's count of bytes inside an unfinished message does not
//!   depend on the chunking;
//! * the header emitters (`sigcomp::wire`) accept exactly what RFC 3320 §7
//!   can say, and what they emit parses back to the same fields;
//! * `sigkit decompress --jsonl`'s bounded line reader splits any input as
//!   `split(b'\n')` does, keeping no line over its bound;
//! * what one `sigcomp_compress::Endpoint` compresses, the other
//!   decompresses to the same bytes, whatever the message, algorithm,
//!   mechanism, transport and parameters;
//! * a HEPv3 packet that parses emits again, and what it emits parses
//!   back to the same fields and emits the same bytes.

#![forbid(unsafe_code)]

pub mod native;

use sigcomp::nack::Nack;
use sigcomp::udvm::StateRequest;
use sigcomp::udvm::MAX_OUTPUT;
use sigcomp::wire::{
    emit_bytecode_message, emit_state_message, returned_feedback_item_len, Body, Deframer, EmitError, Frame, Header,
};
use sigcomp::{CompartmentId, Decompressor, Params, Pending, State, StateId, Transport};

/// Parameters from one byte laid out as RFC 3320 Figure 13's
/// cycles_per_bit / decompression_memory_size / state_memory_size byte
/// (so `params_from_byte(p.encode_byte()) == p` for version 2); the one
/// invalid DMS code, 0, means 2048.
pub fn params_from_byte(b: u8) -> Params {
    let cpb = sigcomp::params::decode_cpb(b >> 6);
    let dms = sigcomp::params::decode_memory_size((b >> 3) & 7).max(2048);
    let sms = sigcomp::params::decode_memory_size(b & 7);
    Params { dms, sms, cpb, version: 2 }
}

/// Decompresses with the bounds checked; returns the pending state.
pub fn checked(d: &mut Decompressor, msg: &[u8], t: Transport) -> Option<Pending> {
    let cpb = u64::from(d.params().cpb);
    let bound = (8 * msg.len() as u64 + 1000) * cpb;
    match d.decompress(msg, t) {
        Ok(out) => {
            assert!(out.cycles <= bound, "cycle bound: {} > {bound} ({t:?})", out.cycles);
            assert!(out.output.len() <= MAX_OUTPUT, "output of {} bytes", out.output.len());
            Some(out.pending)
        }
        Err(f) => {
            assert!(f.cycles <= bound, "cycle bound: {f}: {} > {bound} ({t:?})", f.cycles);
            if let Some(nack) = d.nack_for(msg, &f) {
                let n = Nack::parse(&nack).expect("our own NACK parses");
                assert_eq!((n.reason, n.opcode, n.pc), (f.reason, f.opcode, f.pc));
                assert_eq!(n.details, f.details);
                assert_eq!(n.emit(), nack);
            }
            None
        }
    }
}

/// State handler accounting after accept.
pub fn check_states(d: &Decompressor) {
    let h = d.states();
    for id in h.compartment_ids() {
        let c = h.compartment(id).expect("listed compartment exists");
        assert!(c.used <= c.sms, "compartment {id:?}: used {} > sms {}", c.used, c.sms);
        let sum: u64 = c.entries.iter().map(|e| u64::from(e.cost)).sum();
        assert_eq!(sum, u64::from(c.used), "compartment {id:?}: used != sum of costs");
        for e in &c.entries {
            let s = h.get(&e.id).expect("an entry's item is stored");
            assert_eq!(u64::from(e.cost), s.len() as u64 + 64);
        }
    }
}

/// The item the last creation request of `p` makes in compartment `c`,
/// worked out here independently of the state handler: RFC 3320 §6.2 step 2
/// truncates a value longer than SMS − 64 bytes; step 1 creates nothing
/// when SMS is 0.
fn last_created(d: &Decompressor, p: &Pending, c: CompartmentId) -> Option<StateId> {
    let sms = d.states().compartment(c).map_or(d.params().sms, |c| c.sms);
    if sms == 0 {
        return None;
    }
    p.requests.iter().rev().find_map(|r| match r {
        StateRequest::Create(r) => {
            let value = &r.value[..r.value.len().min(sms as usize - 64)];
            Some(State::new(r.address, r.instruction, r.min_access_len, value).id)
        }
        StateRequest::Free(_) => None,
    })
}

fn accept(d: &mut Decompressor, p: Pending, c: CompartmentId) -> Vec<StateId> {
    let last = last_created(d, &p, c);
    let acc = d.accept(p, c);
    // Earlier items of the message may be evicted by later ones, and any
    // may be freed by a later STATE-FREE; but nothing evicts the item of
    // the last creation request, so unless freed it is stored. (Not simply
    // `acc.created.last()`: that list names each item once, at its first
    // request, so an item evicted and then re-created is not last in it.)
    if let Some(id) = last.filter(|id| !acc.freed.contains(id)) {
        assert!(acc.created.contains(&id), "created {id} is not reported");
        assert!(d.states().get(&id).is_some(), "created {id} is not stored");
    }
    for id in &acc.created {
        let stored = d.states().get(id).is_some();
        let held = d.states().compartment(c).is_some_and(|c| c.entries.iter().any(|e| e.id == *id));
        assert!(!held || stored, "compartment holds {id}, which is not stored");
    }
    check_states(d);
    acc.created
}

/// Packing a compartment's states (what an endpoint does to an idle one,
/// `StateHandler::pack_compartment`) changes nothing a message naming them
/// does: the same output, cycles, or failure.
fn same_when_packed(d: &mut Decompressor, msg: &[u8], t: Transport, c: CompartmentId) {
    let run = |d: &mut Decompressor| match d.decompress(msg, t) {
        Ok(o) => Ok((o.output, o.cycles)),
        Err(f) => Err((f.reason, f.pc, f.cycles, f.details)),
    };
    let plain = run(d);
    d.states_mut().pack_compartment(c);
    let packed = run(d);
    d.states_mut().unpack_compartment(c);
    assert_eq!(plain, packed, "packing the states changed the run");
}

/// The decompress target: `data[0]` = parameters, the rest = one message,
/// decompressed as a UDP then as a TCP message; successful runs are
/// accepted and the states they created are run again by identifier, with
/// the original message's compressed data as input.
pub fn run_decompress(data: &[u8]) {
    let Some((&b, msg)) = data.split_first() else { return };
    let mut d = Decompressor::new(params_from_byte(b)).expect("valid parameters");
    let input = Header::parse(msg).map(|h| h.remaining).unwrap_or(&[]);
    for (i, t) in [Transport::Message, Transport::Stream].into_iter().enumerate() {
        let Some(p) = checked(&mut d, msg, t) else { continue };
        let created = accept(&mut d, p, CompartmentId(i as u64));
        for id in created.iter().take(2) {
            let again = emit_state_message(None, &id.0[..12], input).unwrap();
            same_when_packed(&mut d, &again, t, CompartmentId(i as u64));
            if let Some(p) = checked(&mut d, &again, t) {
                accept(&mut d, p, CompartmentId(7));
            }
        }
    }
}

/// The frames of `stream` fed in chunks, and the bytes left inside an
/// unfinished message.
fn deframe(stream: &[u8], chunk: usize, max: usize) -> (Vec<Frame>, usize) {
    let mut d = Deframer::new(max);
    let mut frames = Vec::new();
    for c in stream.chunks(chunk.max(1)) {
        d.push(c, &mut frames);
        assert!(max == 0 || d.buffered() <= max, "deframer buffers {} > {max}", d.buffered());
    }
    (frames, if d.is_broken() { 0 } else { d.incomplete() })
}

/// The stream target: `data[0]` = parameters, `data[1]` = chunk size
/// (0 = whole; bit 7 set = no message size limit), the rest = a TCP byte
/// stream. Frames are decompressed in order, successes accepted.
pub fn run_stream(data: &[u8]) {
    let [b, c, stream @ ..] = data else { return };
    let params = params_from_byte(*b);
    let max = if c & 0x80 != 0 { 0 } else { params.dms as usize };
    let chunk = usize::from(c & 0x7F);
    let (whole, incomplete) = deframe(stream, stream.len(), max);
    if chunk != 0 {
        assert_eq!(deframe(stream, chunk, max), (whole.clone(), incomplete), "chunking changed the frames");
    }
    let mut d = Decompressor::new(params).expect("valid parameters");
    for (i, f) in whole.iter().enumerate() {
        let Frame::Message(m) = f else { break };
        assert!(!m.is_empty() && (max == 0 || m.len() <= max));
        if let Some(p) = checked(&mut d, m, Transport::Stream) {
            accept(&mut d, p, CompartmentId(i as u64 % 2));
        }
    }
}

/// `sigkit_proxy::hep::Packet::parse`; a packet that parses is emitted,
/// parsed back (every field the same but the time, whose microseconds
/// chunk may carry over a second) and emitted again to the same bytes.
/// Emitting may only fail for length, the emitter writing chunks the
/// input may lack.
pub fn run_hep(data: &[u8]) {
    use sigkit_proxy::hep::{HepError, Packet};
    let Ok(p) = Packet::parse(data) else { return };
    let bytes = match p.emit() {
        Ok(b) => b,
        Err(HepError::TooLong(_)) => return,
        Err(e) => panic!("a parsed packet does not emit: {e}"),
    };
    let back = Packet::parse(&bytes).expect("an emitted packet parses");
    assert_eq!(Packet { time: p.time, ..back.clone() }, p, "parse(emit(p)) != p");
    assert_eq!(back.emit().as_ref(), Ok(&bytes), "emit is not stable");
}

/// The NACK target: parse; where it parses, emit must give back the input
/// exactly and parse to the same NACK; the decompressor must never NACK a
/// NACK, and must fail it without running bytecode.
pub fn run_nack(data: &[u8]) {
    if let Ok(n) = Nack::parse(data) {
        let bytes = n.emit();
        assert_eq!(bytes, data, "emit(parse(x)) != x");
        assert_eq!(Nack::parse(&bytes).as_ref(), Ok(&n));
        let mut d = Decompressor::new(Params::default()).expect("default parameters");
        let f = d.decompress(data, Transport::Message).expect_err("a NACK does not decompress");
        assert_eq!(f.cycles, 0);
        assert!(d.nack_for(data, &f).is_none(), "NACKed a NACK");
    } else {
        // Not a NACK: the NACK for its failure, if it fails, round-trips.
        let mut d = Decompressor::new(Params::default()).expect("default parameters");
        if let Err(f) = d.decompress(data, Transport::Message) {
            if let Some(nack) = d.nack_for(data, &f) {
                let n = Nack::parse(&nack).expect("our own NACK parses");
                assert_eq!(n.emit(), nack);
                assert_eq!(n.reason, f.reason);
            }
        }
    }
}

/// Takes `n` bytes from the front of `data` (fewer at its end).
fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let (head, tail) = data.split_at(n.min(data.len()));
    *data = tail;
    head
}

/// The emit target: `data[0]` bit 0 = state-access (else bytecode upload)
/// message, bit 1 = with a returned feedback item of `data[1]` bytes; then
/// the partial identifier's length (byte, mod 16) or the bytecode's length
/// (2 bytes, mod 4200) and destination (2 bytes); then the item, the
/// identifier or bytecode, and the compressed data, as far as the input
/// goes. The emitters must refuse exactly the fields RFC 3320 §7 cannot
/// carry, and what they emit must parse back to the same fields.
pub fn run_emit(data: &[u8]) {
    let mut data = data;
    let Some(&flags) = take(&mut data, 1).first() else { return };
    let feedback_len = if flags & 2 != 0 { take(&mut data, 1).first().map(|&b| usize::from(b)) } else { None };
    let is_state = flags & 1 != 0;
    let word = |d: &mut &[u8]| take(d, 2).iter().fold(0usize, |a, &b| (a << 8) | usize::from(b));
    let (body_len, destination) = if is_state {
        (take(&mut data, 1).first().map_or(0, |&b| usize::from(b % 16)), 0)
    } else {
        (word(&mut data) % 4200, word(&mut data) as u16)
    };
    let feedback = feedback_len.map(|n| take(&mut data, n));
    let body = take(&mut data, body_len);
    let input = data;

    // What RFC 3320 §7 allows, decided here independently of wire.rs.
    let mut faults = Vec::new();
    if let Some(item) = feedback {
        match item.first() {
            None => faults.push(EmitError::EmptyReturnedFeedback),
            Some(&first) => {
                let expected = if first < 0x80 { 1 } else { 1 + usize::from(first - 0x80) };
                assert_eq!(returned_feedback_item_len(first), expected);
                if item.len() != expected {
                    faults.push(EmitError::ReturnedFeedbackLength { expected, actual: item.len() });
                }
            }
        }
    }
    let result = if is_state {
        if ![6, 9, 12].contains(&body.len()) {
            faults.push(EmitError::BadPartialIdLength { len: body.len() });
        }
        emit_state_message(feedback, body, input)
    } else {
        if body.is_empty() {
            faults.push(EmitError::EmptyCode);
        }
        if body.len() > 4095 {
            faults.push(EmitError::CodeTooLong { len: body.len() });
        }
        if !(128..=1024).contains(&destination) || destination & 63 != 0 {
            faults.push(EmitError::BadDestination { destination });
        }
        emit_bytecode_message(feedback, body, destination, input)
    };
    let msg = match result {
        Err(e) => {
            assert!(faults.contains(&e), "{e:?} is none of the faults {faults:?}");
            return;
        }
        Ok(msg) => {
            assert!(faults.is_empty(), "emitted despite {faults:?}");
            msg
        }
    };
    let h = Header::parse(&msg).expect("an emitted message parses");
    assert_eq!(h.returned_feedback, feedback);
    assert_eq!(h.remaining, input);
    match h.body {
        Body::StateId(id) => assert!(is_state && id == body),
        Body::Bytecode { code, destination_bits } => {
            assert!(!is_state && code == body);
            assert_eq!(sigcomp::wire::destination_address(destination_bits), destination);
        }
    }
}

/// The line reader of `sigkit decompress --jsonl`, compiled from its
/// source file (the CLI is a binary crate, so it cannot be a dependency).
#[path = "../../crates/sigkit-cli/src/line_reader.rs"]
pub mod line_reader;

/// The lines target: `data[0]` = the line bound, `data[1]` = the reader's
/// buffer size - 1, the rest = the input. Every line comes back as
/// `split(b'\n')` gives it (no line after a final `\n`), or as too long
/// with its length, and no more than the bound is ever kept.
pub fn run_lines(data: &[u8]) {
    use line_reader::{read_line, Line};
    let [max, capacity, input @ ..] = data else { return };
    let max = usize::from(*max);
    let mut reader = std::io::BufReader::with_capacity(usize::from(*capacity) + 1, input);
    let mut want: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if input.is_empty() || input.last() == Some(&b'\n') {
        want.pop();
    }
    let mut line = Vec::new();
    for expected in want {
        let got = read_line(&mut reader, &mut line, max).expect("reading a slice");
        assert!(line.len() <= max && line.capacity() <= 4 * max.max(16), "line buffer over the bound");
        if expected.len() <= max {
            assert_eq!((got, &line[..]), (Line::Complete, expected));
        } else {
            assert_eq!(got, Line::TooLong { len: expected.len() as u64 });
            assert!(line.is_empty());
        }
    }
    assert_eq!(read_line(&mut reader, &mut line, max).expect("reading a slice"), Line::End);
}

/// The compress target: `data[0]` = algorithm (bits 0–1: LZSS, Deflate,
/// LZ77, LZSS), mechanism (bits 2–3), TCP (bit 4), the SIP/SDP dictionary
/// (bit 5) and LZSS's lookahead (bits 6–7: 18, 66, 258, 258); `data[1]` =
/// both endpoints' parameters; the rest = messages, each a 2-byte word and
/// its bytes. The word's low 14 bits are the length; bit 14 sends the
/// message from the endpoint that sent the last one (else they take turns,
/// each carrying the other's acknowledgements); bit 15, over UDP, holds it
/// back until after the next message, as a network that reorders would.
/// The compressor checks its model of the peer's run on every message
/// (`verify`); every message it sends must decompress at the peer, over
/// the transport, to its bytes, except that after a reordering one may
/// fail with STATE_NOT_FOUND, whose NACK the sender must take.
pub fn run_compress(data: &[u8]) {
    use sigcomp_compress::{
        Algorithm, CompressError, Config, Endpoint, EndpointConfig, EndpointError, Mechanism, Priorities, Received,
    };
    let [settings, p, messages @ ..] = data else { return };
    let mut rest = messages;
    let algorithm = match settings & 3 {
        1 => Algorithm::Deflate,
        2 => Algorithm::Lz77,
        _ => Algorithm::Lzss,
    };
    let transport = if settings & 0x10 != 0 { Transport::Stream } else { Transport::Message };
    let config = Config {
        algorithm,
        mechanism: Mechanism::ALL[usize::from(settings >> 2 & 3)],
        transport,
        lookahead: [18, 66, 258, 258][usize::from(settings >> 6)],
        dictionary: if settings & 0x20 != 0 { Priorities::new(1, 5) } else { None },
        verify: true,
        ..Config::default()
    };
    let params = params_from_byte(*p);
    let config = EndpointConfig::new(params, params, config);
    let open = || match Endpoint::new(config) {
        Ok(end) => Some(end),
        // A bytecode that does not fit the peer's memory (2048 bytes over
        // TCP leave the UDVM 1024) is refused when the endpoint is made.
        Err(EndpointError::Compressor(CompressError::PeerTooSmall { .. })) => None,
        Err(e) => panic!("{e}"),
    };
    let (Some(first), Some(second)) = (open(), open()) else { return };
    let mut ends = [first, second];
    let mut streams = [Deframer::new(1 << 20), Deframer::new(1 << 20)];
    let now = std::time::Instant::now();
    let compartment = CompartmentId(1);
    let mut from = 1;
    // A message held back over UDP, with its sender: it is delivered after
    // the next message, as a network that reorders would.
    let mut held: Option<(usize, Vec<u8>, Vec<u8>)> = None;
    let mut reordered = false;
    let mut turn = 0;
    while let &[a, b, ref more @ ..] = rest {
        // The length's top bit holds the message back (UDP only), the next
        // sends it from the same side as the last one.
        let word = u16::from_be_bytes([a, b]);
        let len = usize::from(word & 0x3FFF).min(more.len());
        let (message, after) = more.split_at(len);
        rest = after;
        if word & 0x4000 == 0 {
            from = 1 - from;
        }
        turn += 1;
        let sent = match ends[from].compress(now, compartment, message) {
            Ok(sent) => sent,
            // A message the peer's memory or cycles cannot take is refused.
            Err(CompressError::DoesNotFit(_) | CompressError::PeerTooSmall { .. }) => continue,
            Err(e) => panic!("message {turn}: {e:?}"),
        };
        let carried = match transport {
            Transport::Message => sent.message,
            Transport::Stream => {
                let mut bytes = Vec::new();
                sigcomp::wire::frame_for_stream(&sent.message, &mut bytes);
                let mut frames = Vec::new();
                streams[from].push(&bytes, &mut frames);
                match frames.pop() {
                    Some(Frame::Message(m)) if frames.is_empty() => m,
                    other => panic!("the stream delivered {other:?} and {frames:?}"),
                }
            }
        };
        let mut deliveries = vec![(from, carried, message.to_vec())];
        if transport == Transport::Message && word & 0x8000 != 0 && held.is_none() {
            held = deliveries.pop();
            reordered = true;
        } else {
            deliveries.extend(held.take());
        }
        for (sender, carried, message) in deliveries {
            let to = 1 - sender;
            match ends[to].receive(&carried, transport) {
                Ok(Received::Message(incoming)) => {
                    let accepted = ends[to].accept(now, incoming, compartment);
                    assert_eq!(accepted.message, message, "message {turn} decompressed to other bytes");
                }
                Ok(Received::Nack(_)) => panic!("message {turn} read as a NACK"),
                // Once messages were reordered, one may name a state its
                // peer has evicted or freed: a STATE_NOT_FOUND NACK goes
                // back (RFC 4077) and the sender acts on it.
                Err(e) if reordered && e.reason() == sigcomp::Reason::StateNotFound => {
                    let nack = e.nack.expect("a NACK for a failed message");
                    assert!(
                        matches!(ends[sender].receive(&nack, transport), Ok(Received::Nack(_))),
                        "message {turn}: its NACK was not taken as one"
                    );
                }
                Err(e) => panic!("message {turn} failed at the peer: {e}"),
            }
        }
    }
}
