//! What an endpoint shares between its idle compartments: one pack
//! dictionary for the packed states of all of them (at its decompressor and
//! in its compressors' models of their peers), and frozen model state
//! handlers; and that none of it changes a byte sent or received.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use sigcomp::{CompartmentId, Transport};
use sigcomp_compress::{Config, Endpoint, Mechanism};

/// Calls carried by the P-CSCF, one terminal and compartment each.
const CALLS: u64 = 6;

/// `message` with the first characters of its Call-ID replaced by `n` in
/// decimal: each call's states are then its own, as a P-CSCF's terminals'
/// are (byte-identical calls would share every state item).
fn with_call_number(message: &[u8], n: u64) -> Vec<u8> {
    let mut out = message.to_vec();
    let Some(at) = out.windows(9).position(|w| w.eq_ignore_ascii_case(b"call-id: ")) else { return out };
    for (k, b) in format!("{n:04}").bytes().enumerate() {
        if let Some(slot) = out.get_mut(at + 9 + k) {
            *slot = b;
        }
    }
    out
}

/// Plays the video call in `CALLS` compartments of `pcscf`, one terminal
/// each, one call after the other, then one more message in the first
/// (idle) compartment; returns every message the P-CSCF sent.
fn carry_calls(pcscf: &mut Endpoint, cfg: Config) -> Vec<Vec<u8>> {
    let flow = read_flow("3gpp-video-call");
    let mut sent = Vec::new();
    let mut terminals: Vec<Endpoint> = Vec::new();
    for n in 0..CALLS {
        let compartment = CompartmentId(n);
        let mut ue = endpoint(params(8192), params(8192), cfg);
        for m in &flow {
            let bytes = with_call_number(&m.bytes, n);
            match m.from {
                Side::Ue => {
                    let out = ue.compress(now(), C, &bytes).unwrap();
                    match receive_in(pcscf, compartment, &out.message).unwrap() {
                        Got::Message(got) => assert_eq!(got, bytes, "call {n}: {}", m.name),
                        Got::Nack(nack) => panic!("call {n}: {}: {nack:?}", m.name),
                    }
                }
                Side::Pcscf => {
                    let out = pcscf.compress(now(), compartment, &bytes).unwrap();
                    match receive(&mut ue, &out.message).unwrap() {
                        Got::Message(got) => assert_eq!(got, bytes, "call {n}: {}", m.name),
                        Got::Nack(nack) => panic!("call {n}: {}: {nack:?}", m.name),
                    }
                    sent.push(out.message);
                }
            }
        }
        terminals.push(ue);
    }
    // The first call's compartment, idle since, sends again: its states
    // are unpacked and its model thawed first.
    let last = flow.iter().rev().find(|m| m.from == Side::Pcscf).expect("a P-CSCF message");
    let bytes = with_call_number(&last.bytes, 0);
    let out = pcscf.compress(now(), CompartmentId(0), &bytes).unwrap();
    match receive(&mut terminals[0], &out.message).unwrap() {
        Got::Message(got) => assert_eq!(got, bytes, "idle compartment woken"),
        Got::Nack(nack) => panic!("idle compartment woken: {nack:?}"),
    }
    sent.push(out.message);
    sent
}

#[test]
fn idle_compartments_pack_against_one_shared_dictionary_and_send_the_same_bytes() {
    for (mechanism, transport) in [(Mechanism::Shared, Transport::Message), (Mechanism::Dynamic, Transport::Stream)] {
        let cfg = Config { mechanism, transport, verify: true, ..Config::default() };
        let mut hot = endpoint(params(8192), params(8192), cfg);
        hot.set_scratch_compartments(CALLS as usize + 1);
        let mut idle = endpoint(params(8192), params(8192), cfg);
        idle.set_scratch_compartments(1);
        let kept_hot = carry_calls(&mut hot, cfg);
        let packed = carry_calls(&mut idle, cfg);
        assert_eq!(kept_hot, packed, "{mechanism:?} {transport:?}: packing changed what was sent");

        // Nothing was packed where every compartment stayed hot, and the
        // woken compartment's model is whole again.
        assert!((0..CALLS).all(|n| !hot.compressor(CompartmentId(n)).unwrap().states_packed()));
        assert!(!idle.compressor(CompartmentId(0)).unwrap().model_frozen());
        // Compartments 1 .. CALLS-2 went idle after their call and stayed
        // so (0 was woken, the last is the hot one): their states, at the
        // decompressor and in the model, are packed against one dictionary,
        // the same object for all of them, holding samples of another
        // compartment's states besides the RFC 3485 dictionary.
        let mut dictionaries = Vec::new();
        for n in 1..CALLS - 1 {
            let c = CompartmentId(n);
            let compressor = idle.compressor(c).unwrap();
            assert!(compressor.states_packed(), "{mechanism:?}: compartment {n} not packed");
            assert!(compressor.model_frozen(), "{mechanism:?}: compartment {n}'s model decompressor kept whole");
            dictionaries.extend(compressor.model_pack_dictionaries());
            dictionaries.extend(idle.decompressor().states().compartment_pack_dictionaries(c));
        }
        assert!(dictionaries.len() >= 2 * (CALLS as usize - 2), "{mechanism:?}: {} packs", dictionaries.len());
        let first = &dictionaries[0];
        assert!(dictionaries.iter().all(|d| d.same(first)), "{mechanism:?}: packs made against different dictionaries");
        assert!(first.bytes().len() > sigcomp::dict::SIP_SDP.len(), "{mechanism:?}: no samples in the dictionary");
        assert!(!first.same(&sigcomp::state::PackDictionary::sip_sdp()));
    }
}

#[test]
fn a_frozen_model_reports_what_the_thawed_one_did() {
    // The compressor's model of its peer, frozen while idle, still answers
    // what it holds: the same state memory, and the packed bytes as
    // resident, until the next message thaws it.
    let cfg = Config { mechanism: Mechanism::Shared, transport: Transport::Message, ..Config::default() };
    let mut pcscf = endpoint(params(8192), params(8192), cfg);
    pcscf.set_scratch_compartments(1);
    carry_calls(&mut pcscf, cfg);
    let c = CompartmentId(2);
    let compressor = pcscf.compressor(c).unwrap();
    assert!(compressor.states_packed());
    let resident = compressor.peer_state_bytes_resident();
    assert!(resident > 0 && resident < compressor.peer_state_memory() as usize, "{resident} resident");
    assert!(compressor.snapshot_bytes_held() > 0 || compressor.usable_snapshots().is_empty());
}
