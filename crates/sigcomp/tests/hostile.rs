//! What a hostile peer can make an endpoint hold or spend: each test here
//! is a message (or a series of them) that made the decompressor keep
//! memory outside its bounds or spend time outside its cycle budget.

use sigcomp::udvm::{op, MAX_ANNOUNCED_STATES};
use sigcomp::wire::emit_bytecode_message;
use sigcomp::{CompartmentId, Decompressor, Params, Transport};

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
    emit_bytecode_message(None, code, CODE, &[])
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
