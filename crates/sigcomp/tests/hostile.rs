//! What a hostile peer can make an endpoint hold or spend: each test here
//! is a message (or a series of them) that made the decompressor keep
//! memory outside its bounds or spend time outside its cycle budget.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

use sigcomp::udvm::{op, MAX_ANNOUNCED_STATES};
use sigcomp::wire::emit_bytecode_message;
use sigcomp::{CompartmentId, Decompressor, Limits, Params, Transport};

/// Where the bytecode is uploaded.
const CODE: u16 = 128;

/// Multitype operand (RFC 3320 §8.5), 3-byte form for any value.
fn m(v: u16) -> [u8; 3] {
    [0x80, (v >> 8) as u8, v as u8]
}

fn instr(opcode: u8, operands: &[[u8; 3]]) -> Vec<u8> {
    let mut v = vec![opcode];
    for o in operands {
        v.extend_from_slice(o);
    }
    v
}

fn msg(code: &[u8]) -> Vec<u8> {
    emit_bytecode_message(None, code, CODE, &[]).unwrap()
}

/// END-MESSAGE returning parameters at `rpl` (RFC 3320 §9.4.9).
fn end_message(rpl: u16) -> Vec<u8> {
    instr(op::END_MESSAGE, &[m(0), m(rpl), m(0), m(0), m(0), m(0), m(0)])
}

/// Fills memory from 258 to 65534 with 6s (6-byte identifiers of six 6s,
/// 9,325 of them, and those the memory then holds) and returns them as the peer's locally available states.
fn announcing_code() -> Vec<u8> {
    let rpl = 256;
    let mut code = instr(op::MEMSET, &[m(rpl + 2), m(65535 - (rpl + 2)), m(6), m(0)]);
    code.extend(end_message(rpl));
    code
}

fn big_endpoint(sms: u32) -> Decompressor {
    Decompressor::new(Params { dms: 131072, sms, cpb: 128, version: 2 }).unwrap()
}

#[test]
fn announced_state_identifiers_are_bounded_per_compartment() {
    let mut d = big_endpoint(0);
    let out = d.decompress(&msg(&announcing_code()), Transport::Message).unwrap();
    let rp = out.pending.returned_parameters.clone().unwrap();
    assert_eq!(rp.local_states.len(), MAX_ANNOUNCED_STATES);
    // 9,325 whole entries of 6s, and more read from the wrapped memory.
    assert!(rp.local_states_dropped >= (65535 - 258) / 7 - MAX_ANNOUNCED_STATES, "{}", rp.local_states_dropped);
    assert!(rp.local_states.iter().all(|id| id == &[6u8; 6]));
    for c in 0..3 {
        d.accept(out.pending.clone(), CompartmentId(c));
        let kept = d.feedback(CompartmentId(c)).unwrap().peer_parameters.as_ref().unwrap();
        assert_eq!(kept.local_states.len(), MAX_ANNOUNCED_STATES);
    }
}

#[test]
fn a_dropped_announced_identifier_outside_memory_still_fails() {
    // 20 identifiers of 6 bytes, the last one running past the end of
    // UDVM memory (DMS 8192 over UDP: 8192 minus the message).
    let mut d = Decompressor::new(Params::default()).unwrap();
    let message_len = msg(&announcing_code()).len();
    let mem = 8192 - message_len as u16;
    let rpl = mem - 2 - 7 * 20 + 3;
    let mut code = instr(op::MEMSET, &[m(rpl + 2), m(mem - (rpl + 2)), m(6), m(0)]);
    code.extend(end_message(rpl));
    let f = d.decompress(&msg(&code), Transport::Message).unwrap_err();
    assert_eq!(f.reason, sigcomp::Reason::Segfault);
}

/// A message that saves `len` bytes of its own memory from CODE as a state
/// (END-MESSAGE's state creation, RFC 3320 §9.4.9); `tag` makes the state
/// differ from other tags'.
fn saving_msg(tag: u8, len: u16) -> Vec<u8> {
    let mut code = instr(op::END_MESSAGE, &[m(0), m(0), m(len), m(CODE), m(0), m(6), m(1)]);
    code.push(tag);
    msg(&code)
}

/// Decompresses and accepts `msg` under `c`.
fn deliver(d: &mut Decompressor, msg: &[u8], c: u64) -> sigcomp::Accepted {
    let out = d.decompress(msg, Transport::Message).unwrap();
    d.accept(out.pending, CompartmentId(c))
}

fn reachable(d: &Decompressor, id: &sigcomp::StateId) -> bool {
    d.states().lookup(&id.0[..6]).is_ok()
}

#[test]
fn the_least_recently_used_compartment_goes_past_max_compartments() {
    let mut d = big_endpoint(8192);
    assert_eq!(d.limits(), Limits::default());
    d.set_limits(Limits { max_compartments: 3, ..Limits::default() });
    let mut ids = Vec::new();
    for c in 1..=3 {
        let a = deliver(&mut d, &saving_msg(c as u8, 100), c);
        assert!(a.evicted.is_empty());
        ids.push(a.created[0]);
    }
    // Compartment 1 sends (the application touches it): 2 is now the
    // least recently used.
    d.touch(CompartmentId(1));
    let a = deliver(&mut d, &saving_msg(4, 100), 4);
    assert_eq!(a.evicted, vec![CompartmentId(2)]);
    assert!(!reachable(&d, &ids[1]));
    assert!(d.states().compartment(CompartmentId(2)).is_none() && d.feedback(CompartmentId(2)).is_none());
    assert!(reachable(&d, &ids[0]) && reachable(&d, &ids[2]) && reachable(&d, &a.created[0]));
    assert!(d.feedback(CompartmentId(1)).is_some());
    assert_eq!(d.take_evicted(), vec![CompartmentId(2)]);
    assert!(d.take_evicted().is_empty());
    let metrics = d.metrics();
    assert_eq!((metrics.compartments, metrics.evicted_compartments), (3, 1));
    // Accepting under an open compartment evicts nothing.
    assert!(deliver(&mut d, &saving_msg(5, 100), 3).evicted.is_empty());
}

#[test]
fn state_created_directly_opens_a_tracked_compartment() {
    let mut d = big_endpoint(8192);
    d.set_limits(Limits { max_compartments: 2, ..Limits::default() });
    deliver(&mut d, &saving_msg(1, 100), 1);
    deliver(&mut d, &saving_msg(2, 100), 2);
    // The application's own state (as an endpoint's shared state) under a
    // third compartment: the least recently used one, 1, goes.
    let own = sigcomp::State::new(0, 0, 6, b"our own shared state");
    d.states_mut().create_state(CompartmentId(3), own.clone(), 65535);
    assert_eq!(d.take_evicted(), vec![CompartmentId(1)]);
    assert_eq!(d.metrics().compartments, 2);
    assert!(reachable(&d, &own.id));
    // Touching a new compartment opens it too.
    d.touch(CompartmentId(4));
    assert_eq!(d.take_evicted(), vec![CompartmentId(2)]);
    // Lowering the limits evicts at once.
    d.set_limits(Limits { max_compartments: 1, ..Limits::default() });
    assert_eq!(d.take_evicted(), vec![CompartmentId(3)]);
    assert!(!reachable(&d, &own.id));
}

#[test]
fn the_least_recently_used_compartments_go_past_max_state_bytes() {
    let mut d = big_endpoint(131072);
    // Room for three 1000-byte states (1064 accounted bytes each by
    // RFC 3320 §6.2; the limit counts the real bytes they take).
    let real = 1000 + sigcomp::state::STATE_OVERHEAD_BYTES;
    let limit = 3 * real + 500;
    d.set_limits(Limits { max_compartments: 100, max_state_bytes: limit });
    let ids: Vec<_> = (1..=3).map(|c| deliver(&mut d, &saving_msg(c as u8, 1000), c).created[0]).collect();
    assert_eq!(d.metrics().state_bytes, 3 * 1064);
    let a = deliver(&mut d, &saving_msg(4, 1000), 4);
    assert_eq!(a.evicted, vec![CompartmentId(1)]);
    assert!(!reachable(&d, &ids[0]) && reachable(&d, &ids[1]) && reachable(&d, &ids[2]));
    assert_eq!(d.metrics().state_bytes, 3 * 1064);
    // One compartment filling the whole budget pushes out all others, then
    // its own oldest items (as a smaller SMS would), never the new one.
    let created: Vec<_> = (10..14).map(|t| deliver(&mut d, &saving_msg(t, 1000), 4).created[0]).collect();
    assert_eq!(d.metrics().compartments, 1);
    assert!(d.states().real_state_bytes() <= limit);
    assert_eq!(d.metrics().state_bytes, 3 * 1064);
    assert!(reachable(&d, &created[3]) && !reachable(&d, &created[0]));
    assert_eq!(d.take_evicted(), vec![CompartmentId(1), CompartmentId(2), CompartmentId(3)]);
    // An item larger than the whole budget is refused.
    d.set_limits(Limits { max_compartments: 100, max_state_bytes: 1000 });
    let a = deliver(&mut d, &saving_msg(20, 2000), 5);
    assert_eq!((a.created.len(), a.rejected), (0, 1));
}

#[test]
fn metrics_count_states_evictions_and_dropped_identifiers() {
    let mut d = big_endpoint(8192);
    assert_eq!(d.metrics().compartments, 0);
    let stored = d.metrics().resident_bytes; // the two dictionaries
    deliver(&mut d, &saving_msg(1, 200), 1);
    deliver(&mut d, &saving_msg(2, 300), 2);
    let m = d.metrics();
    assert_eq!((m.compartments, m.state_bytes, m.evicted_compartments), (2, 200 + 64 + 300 + 64, 0));
    // The values and each entry's measured overhead.
    assert_eq!(m.resident_bytes, stored + 500 + 2 * sigcomp::state::STATE_OVERHEAD_BYTES);
    let out = d.decompress(&msg(&announcing_code()), Transport::Message).unwrap();
    let dropped = out.pending.returned_parameters.as_ref().unwrap().local_states_dropped as u64;
    assert_eq!(d.metrics().announced_ids_dropped, dropped);
    d.close_compartment(CompartmentId(1));
    let m = d.metrics();
    assert_eq!((m.compartments, m.state_bytes, m.evicted_compartments), (1, 364, 0));
    assert!(Limits::unlimited().max_compartments == usize::MAX && Limits::unlimited().max_state_bytes == usize::MAX);
}

#[test]
fn a_packed_state_read_by_a_message_is_unpacked_once_and_kept_plain() {
    let mut d = big_endpoint(8192);
    let value: Vec<u8> = b"Via: SIP/2.0/UDP pc33.example.com;branch=z9hG4bK776asdhds\r\n".repeat(40);
    let sigcomp::state::CreateOutcome::Created(id) = d.states_mut().create(CompartmentId(1), 0, 0, 6, &value, 1) else {
        panic!("not created")
    };
    assert!(d.states_mut().pack_compartment(CompartmentId(1)) > 0);
    let resident = d.metrics().resident_bytes;
    // STATE-ACCESS 10 bytes of it from offset 5 to 2000, OUTPUT them.
    let access = |ids_at: u16| {
        let mut code = instr(op::STATE_ACCESS, &[m(ids_at), m(6), m(5), m(10), m(2000), m(0)]);
        code.extend(instr(op::OUTPUT, &[m(2000), m(10)]));
        code.extend(end_message(0));
        code
    };
    let mut code = access(CODE + access(0).len() as u16);
    code.extend_from_slice(&id.0[..6]);
    for _ in 0..2 {
        let out = d.decompress(&msg(&code), Transport::Message).unwrap();
        assert_eq!(out.output, &value[5..15]);
        // Read once: kept plain, not unpacked by every message reading it.
        assert!(!d.states().get(&id).unwrap().is_packed());
        assert_eq!(&d.states().get(&id).unwrap().value()[..], &value[..]);
    }
    assert!(d.metrics().resident_bytes > resident);
    // Accounting is unchanged.
    assert_eq!(d.metrics().state_bytes, value.len() + 64);
}

#[test]
fn creating_a_packed_item_again_unpacks_its_pack_once() {
    let mut d = big_endpoint(131072);
    let values: Vec<Vec<u8>> = (0..20)
        .map(|i| format!("Via: SIP/2.0/UDP pc{i}.example.com;branch=z9hG4bK{i}\r\n").repeat(20).into())
        .collect();
    let ids: Vec<_> = values
        .iter()
        .map(|v| match d.states_mut().create(CompartmentId(1), 0, 0, 6, v, 1) {
            sigcomp::state::CreateOutcome::Created(id) => id,
            o => panic!("{o:?}"),
        })
        .collect();
    assert!(d.states_mut().pack_compartment(CompartmentId(1)) > 0);
    assert!(ids.iter().all(|id| d.states().get(id).unwrap().is_packed()));
    // Another compartment creates the first item (RFC 3320 §6.2 step 3
    // compares it with the stored one): the pack is read once, and all of
    // its items are kept plain, so creating the others costs no unpacking.
    assert_eq!(
        d.states_mut().create(CompartmentId(2), 0, 0, 6, &values[0], 1),
        sigcomp::state::CreateOutcome::Created(ids[0])
    );
    assert!(ids.iter().all(|id| !d.states().get(id).unwrap().is_packed()));
    for (id, v) in ids.iter().zip(&values) {
        assert_eq!(&d.states().get(id).unwrap().value()[..], &v[..]);
    }
}

#[test]
fn zero_length_states_are_bounded_by_the_real_bytes_they_take() {
    use sigcomp::state::STATE_OVERHEAD_BYTES;
    let mut d = Decompressor::new(Params { dms: 131072, sms: 131072, cpb: 128, version: 2 }).unwrap();
    // Room for 1000 zero-length items; counting 64 bytes each (RFC 3320
    // §6.2) would have let 7000 in.
    let limit = 1000 * STATE_OVERHEAD_BYTES;
    d.set_limits(Limits { max_compartments: 100_000, max_state_bytes: limit });
    let dictionaries = d.metrics().resident_bytes;
    for i in 0..20_000u32 {
        let before = d.metrics().resident_bytes;
        let created = d.states_mut().create(CompartmentId(u64::from(i / 64)), i as u16, (i >> 16) as u16, 6, &[], 1);
        assert!(matches!(created, sigcomp::state::CreateOutcome::Created(_)), "{created:?}");
        let real = d.states().real_state_bytes();
        assert!(real <= limit, "{i}: {real} bytes");
        let after = d.metrics().resident_bytes;
        assert_eq!(after, dictionaries + real, "{i}");
        if i < 1000 {
            assert_eq!(after, before + STATE_OVERHEAD_BYTES, "{i}");
        }
    }
    // Whole compartments (64 items) go, least recently used first.
    let entries = d.states().entry_count();
    assert!((1000 - 64..=1000).contains(&entries), "{entries}");
    assert!(d.metrics().evicted_compartments > 250);
    // Closing the last compartment (32 items) gives their bytes back.
    let last = CompartmentId(19_999 / 64);
    let held = d.states().compartment(last).unwrap().entries.len();
    assert_eq!(held, 32);
    d.close_compartment(last);
    assert_eq!(d.metrics().resident_bytes, dictionaries + (entries - held) * STATE_OVERHEAD_BYTES);
    assert_eq!(d.states().real_state_bytes(), (entries - held) * STATE_OVERHEAD_BYTES);
}
