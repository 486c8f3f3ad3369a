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
//! * a run naming states gives the same result with the states packed.

#![forbid(unsafe_code)]

use sigcomp::nack::Nack;
use sigcomp::udvm::MAX_OUTPUT;
use sigcomp::wire::{emit_state_message, Deframer, Frame, Header};
use sigcomp::udvm::StateRequest;
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

fn deframe(stream: &[u8], chunk: usize, max: usize) -> Vec<Frame> {
    let mut d = Deframer::new(max);
    let mut frames = Vec::new();
    for c in stream.chunks(chunk.max(1)) {
        d.push(c, &mut frames);
        assert!(max == 0 || d.buffered() <= max, "deframer buffers {} > {max}", d.buffered());
    }
    frames
}

/// The stream target: `data[0]` = parameters, `data[1]` = chunk size
/// (0 = whole; bit 7 set = no message size limit), the rest = a TCP byte
/// stream. Frames are decompressed in order, successes accepted.
pub fn run_stream(data: &[u8]) {
    let [b, c, stream @ ..] = data else { return };
    let params = params_from_byte(*b);
    let max = if c & 0x80 != 0 { 0 } else { params.dms as usize };
    let chunk = usize::from(c & 0x7F);
    let whole = deframe(stream, stream.len(), max);
    if chunk != 0 {
        assert_eq!(deframe(stream, chunk, max), whole, "chunking changed the frames");
    }
    if let Some(i) = whole.iter().position(|f| *f == Frame::FramingError) {
        assert_eq!(i, whole.len() - 1, "frames after a framing error");
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
