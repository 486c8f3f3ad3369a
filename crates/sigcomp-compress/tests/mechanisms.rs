//! Feedback, acknowledgement, NACK recovery, parameter announcement and
//! the user-specific dictionary between two endpoints.

mod common;

use std::collections::HashSet;

use common::*;
use sigcomp::wire::Header;
use sigcomp::{Params, StateId, Transport};
use sigcomp_compress::{Config, Endpoint, Level, Mechanism};

fn config(mechanism: Mechanism, transport: Transport) -> Config {
    // verify: each message is also run by the peer's decompressor in the
    // compressor and checked against what the compressor computed.
    Config { mechanism, transport, verify: true, ..Config::default() }
}

fn video_call() -> Vec<FlowMessage> {
    read_flow("3gpp-video-call")
}

fn deliver(to: &mut Endpoint, msg: &[u8]) -> Vec<u8> {
    match receive(to, msg) {
        Ok(Got::Message(output)) => output,
        other => panic!("expected a message, got {other:?}"),
    }
}

#[test]
fn feedback_makes_later_messages_smaller() {
    // The same message, sent first (bytecode uploaded) and again after the
    // peer's reply acknowledged the first: the second references state.
    let flow = video_call();
    let invite = &flow[0].bytes;
    for mechanism in [Mechanism::Static, Mechanism::Dynamic, Mechanism::Shared] {
        let mut ue = endpoint(params(8192), params(8192), config(mechanism, Transport::Message));
        let mut pcscf = endpoint(params(8192), params(8192), config(mechanism, Transport::Message));
        let first = ue.compress(now(), C, invite).unwrap();
        assert!(first.uploaded_bytecode);
        assert!(first.feedback_item.is_some(), "{mechanism:?}: no acknowledgement requested");
        assert_eq!(&deliver(&mut pcscf, &first.message), invite);
        let reply = pcscf.compress(now(), C, &flow[1].bytes).unwrap();
        // The reply echoes the item (RFC 3320 §7.1 returned feedback).
        let header = Header::parse(&reply.message).unwrap();
        assert_eq!(header.returned_feedback, Some(&[first.feedback_item.unwrap()][..]));
        assert_eq!(deliver(&mut ue, &reply.message), flow[1].bytes);
        let second = ue.compress(now(), C, invite).unwrap();
        assert!(!second.uploaded_bytecode, "{mechanism:?}");
        assert!(second.used_state.is_some(), "{mechanism:?}");
        // Static saves the bytecode only; dynamic and shared the history.
        let factor = if mechanism == Mechanism::Static { 1 } else { 2 };
        assert!(
            second.message.len() * factor < first.message.len(),
            "{mechanism:?}: {} then {}",
            second.message.len(),
            first.message.len()
        );
        assert_eq!(&deliver(&mut pcscf, &second.message), invite);
    }
}

#[test]
fn udp_never_references_a_state_before_its_ack() {
    // The P-CSCF's messages reach the UE only `delay` messages late; the UE
    // may reference only states whose acknowledgement it has received.
    let flow = video_call();
    for mechanism in [Mechanism::Static, Mechanism::Dynamic, Mechanism::Shared] {
        for delay in [0usize, 1, 3] {
            let mut ue = endpoint(params(8192), params(8192), config(mechanism, Transport::Message));
            let mut pcscf = endpoint(params(8192), params(8192), config(mechanism, Transport::Message));
            // UE feedback item → states that message requested.
            let mut requested_by_item: Vec<(u8, Vec<StateId>)> = Vec::new();
            let mut acked: HashSet<StateId> = HashSet::new();
            let mut in_flight: Vec<(Vec<u8>, Option<StateId>, Vec<u8>)> = Vec::new();
            let mut referenced = 0;
            let mut nacks = 0;
            for round in 0..3 {
                for m in &flow {
                    match m.from {
                        Side::Ue => {
                            let out = ue.compress(now(), C, &m.bytes).unwrap();
                            if let Some(id) = out.used_state {
                                assert!(
                                    acked.contains(&id)
                                        || out.used_state == Some(ue.compressor(C).unwrap().bytecode_state().id),
                                    "{mechanism:?} delay {delay} round {round} {}: state used before its ack",
                                    m.name
                                );
                                referenced += 1;
                            }
                            if let Some(item) = out.feedback_item {
                                requested_by_item.retain(|(i, _)| *i != item);
                                requested_by_item.push((item, out.requested.clone()));
                            }
                            match receive(&mut pcscf, &out.message) {
                                Ok(Got::Message(output)) => assert_eq!(output, m.bytes),
                                // The P-CSCF's own shared states are not
                                // acknowledged (the P-CSCF announces them);
                                // one the UE learnt late may have been freed
                                // meanwhile. That, and only that, is a
                                // NACK, after which the UE recovers.
                                Err(e) if out.used_shared.is_some_and(|id| id.0.starts_with(&e.failure.details)) => {
                                    assert_eq!(e.failure.reason, sigcomp::Reason::StateNotFound);
                                    assert!(matches!(receive(&mut ue, &e.nack.unwrap()), Ok(Got::Nack(_))));
                                    let retry = ue.compress(now(), C, &m.bytes).unwrap();
                                    assert!(
                                        retry.used_state.is_none()
                                            || retry.used_state == Some(ue.compressor(C).unwrap().bytecode_state().id)
                                    );
                                    if let Some(item) = retry.feedback_item {
                                        requested_by_item.retain(|(i, _)| *i != item);
                                        requested_by_item.push((item, retry.requested.clone()));
                                    }
                                    assert_eq!(deliver(&mut pcscf, &retry.message), m.bytes);
                                    nacks += 1;
                                }
                                other => panic!(
                                    "{mechanism:?} delay {delay} round {round} {} to the P-CSCF: {other:?}",
                                    m.name
                                ),
                            }
                        }
                        Side::Pcscf => {
                            let out = pcscf.compress(now(), C, &m.bytes).unwrap();
                            in_flight.push((out.message, out.used_shared, m.bytes.clone()));
                            while in_flight.len() > delay {
                                let (msg, used_shared, bytes) = in_flight.remove(0);
                                if let Some(item) = Header::parse(&msg).unwrap().returned_feedback {
                                    if let Some((_, ids)) = requested_by_item.iter().find(|(i, _)| [*i] == item) {
                                        acked.extend(ids.iter().copied());
                                    }
                                }
                                match receive(&mut ue, &msg) {
                                    Ok(_) => {}
                                    // As above, the other way round.
                                    Err(e) if used_shared.is_some_and(|id| id.0.starts_with(&e.failure.details)) => {
                                        assert!(matches!(receive(&mut pcscf, &e.nack.unwrap()), Ok(Got::Nack(_))));
                                        // Sent after what is in flight.
                                        let retry = pcscf.compress(now(), C, &bytes).unwrap();
                                        in_flight.push((retry.message, retry.used_shared, bytes));
                                        nacks += 1;
                                    }
                                    Err(e) => {
                                        panic!("{mechanism:?} delay {delay} round {round} {} to the UE: {e}", m.name)
                                    }
                                }
                            }
                        }
                    }
                }
            }
            assert!(referenced > 0, "{mechanism:?} delay {delay}: no state ever used");
            // Without delay the UE's view is exact: no NACK at all.
            if delay == 0 {
                assert_eq!(nacks, 0, "{mechanism:?}");
            }
        }
    }
}

#[test]
fn lost_messages_do_not_break_later_ones() {
    // Over UDP every third UE message is lost: no state is used before its
    // acknowledgement, so every delivered message still decompresses.
    let flow = video_call();
    for mechanism in Mechanism::ALL {
        let mut pair = Pair::new(params(8192), config(mechanism, Transport::Message));
        let mut k = 0;
        for m in &flow {
            if m.from == Side::Ue {
                k += 1;
                if k % 3 == 0 {
                    pair.ue.compress(now(), C, &m.bytes).unwrap();
                    continue;
                }
            }
            pair.send(m.from, &m.bytes);
        }
    }
}

#[test]
fn nack_recovery() {
    // The P-CSCF loses every state of the compartment (a restart): the
    // UE's next message names a lost state, the P-CSCF answers with an
    // RFC 4077 NACK, and the UE's next try decompresses.
    // (Static is left out: its only state, the bytecode, is the same as the
    // P-CSCF's own, which the P-CSCF holds as a local state that no
    // compartment loss removes.)
    let flow = video_call();
    for mechanism in [Mechanism::Dynamic, Mechanism::Shared] {
        for transport in [Transport::Message, Transport::Stream] {
            let mut pair = Pair::new(params(8192), config(mechanism, transport));
            for m in &flow[..6] {
                pair.send(m.from, &m.bytes);
            }
            pair.pcscf.decompressor_mut().close_compartment(C);
            let msg = &flow[8].bytes;
            let out = pair.ue.compress(now(), C, msg).unwrap();
            assert!(out.used_state.is_some(), "{mechanism:?} {transport:?}: the test needs a state reference");
            let err = match receive(&mut pair.pcscf, &out.message) {
                Err(e) => e,
                Ok(r) => panic!("{mechanism:?} {transport:?}: lost state not noticed: {r:?}"),
            };
            assert_eq!(err.failure.reason, sigcomp::Reason::StateNotFound);
            let nack = err.nack.expect("a NACK to send back");
            match receive(&mut pair.ue, &nack) {
                Ok(Got::Nack(nack)) => {
                    assert_eq!(nack.reason, sigcomp::Reason::StateNotFound);
                    assert_eq!(nack.compartment, Some(C), "the NACK is traced to the compartment");
                    assert!(nack.report.unwrap().record.is_some(), "the NACK names the message sent");
                }
                other => panic!("expected the NACK to be taken: {other:?}"),
            }
            let retry = pair.ue.compress(now(), C, msg).unwrap();
            assert_eq!(deliver(&mut pair.pcscf, &retry.message), *msg);
            // And the flow goes on with state again.
            for m in &flow[9..] {
                pair.send(m.from, &m.bytes);
            }
        }
    }
}

#[test]
fn announced_parameters_update_the_compressor() {
    // The UE starts assuming the minimum (DMS 2048, SMS 2048); the
    // P-CSCF's messages return its real parameters (RFC 3320 §9.4.9).
    let small = Params { dms: 2048, sms: 2048, cpb: 16, version: 2 };
    let big = Params { dms: 16384, sms: 16384, cpb: 32, version: 2 };
    let cfg = config(Mechanism::Dynamic, Transport::Message);
    let mut ue = endpoint(big, small, cfg);
    let mut pcscf = endpoint(big, big, cfg);
    let flow = video_call();
    let out = ue.compress(now(), C, &flow[0].bytes).unwrap();
    assert_eq!(ue.compressor(C).unwrap().peer().dms, 2048);
    deliver(&mut pcscf, &out.message);
    let reply = pcscf.compress(now(), C, &flow[1].bytes).unwrap();
    deliver(&mut ue, &reply.message);
    let peer = *ue.compressor(C).unwrap().peer();
    assert_eq!((peer.dms, peer.sms, peer.cpb), (16384, 16384, 32));
    // The larger memory gives a larger window.
    assert!(ue.compressor(C).unwrap().layout().buffer_size > 4096);
    for m in &flow[3..] {
        let (from, to) = match m.from {
            Side::Ue => (&mut ue, &mut pcscf),
            Side::Pcscf => (&mut pcscf, &mut ue),
        };
        let out = from.compress(now(), C, &m.bytes).unwrap();
        assert_eq!(deliver(to, &out.message), m.bytes);
    }
}

#[test]
fn user_specific_dictionary() {
    // RFC 3321 §3.3: a dictionary both sides hold (here the first messages
    // of the flow), loaded into the window instead of the SIP/SDP one.
    let flow = video_call();
    let dictionary: Vec<u8> = flow[..3].iter().flat_map(|m| m.bytes.clone()).take(3000).collect();
    let cfg = config(Mechanism::Basic, Transport::Message);
    let msg = &flow[5].bytes;
    let mut plain = endpoint(params(16384), params(16384), cfg);
    let plain_len = plain.compress(now(), C, msg).unwrap().message.len();
    let mut ue = endpoint(params(16384), params(16384), cfg);
    let mut pcscf = endpoint(params(16384), params(16384), cfg);
    ue.set_user_dictionary(&dictionary);
    pcscf.add_local_dictionary(&dictionary);
    let out = ue.compress(now(), C, msg).unwrap();
    assert_eq!(&deliver(&mut pcscf, &out.message), msg);
    assert!(out.message.len() < plain_len, "{} vs {plain_len}", out.message.len());
    // A peer without the dictionary cannot decompress it.
    let mut other = endpoint(params(16384), params(16384), cfg);
    assert!(receive(&mut other, &out.message).is_err());
}

#[test]
fn bytecode_is_not_uploaded_twice_between_like_endpoints() {
    // Each side announces its bytecode as a local state; the other side's
    // first message then references it instead of uploading its own copy.
    let flow = video_call();
    let mut pair = Pair::new(params(8192), config(Mechanism::Shared, Transport::Stream));
    let first = pair.ue.compress(now(), C, &flow[0].bytes).unwrap();
    assert!(first.uploaded_bytecode);
    deliver(&mut pair.pcscf, &first.message);
    let reply = pair.pcscf.compress(now(), C, &flow[1].bytes).unwrap();
    assert!(!reply.uploaded_bytecode);
    assert_eq!(deliver(&mut pair.ue, &reply.message), flow[1].bytes);
}

#[test]
fn hash_chains_are_kept_between_messages() {
    // The SigComp performance thesis §7.8.5: the match finder's chains survive from one message
    // to the next when the window is the previous one plus the last
    // message, so a whole window is hashed only when the compressor
    // starts over (first message, or an older snapshot as base).
    let flow = video_call();
    for mechanism in [Mechanism::Dynamic, Mechanism::Shared] {
        let mut pair = Pair::new(params(16384), config(mechanism, Transport::Stream));
        for m in &flow {
            pair.send(m.from, &m.bytes);
        }
        for ep in [&pair.ue, &pair.pcscf] {
            let c = ep.compressor(C).unwrap();
            assert_eq!(c.match_finder_rebuilds(), 1, "{mechanism:?}");
        }
    }
}

#[test]
fn closing_a_compartment_starts_it_over() {
    let flow = video_call();
    let mut pair = Pair::new(params(8192), config(Mechanism::Dynamic, Transport::Stream));
    for m in &flow[..4] {
        pair.send(m.from, &m.bytes);
    }
    pair.ue.close_compartment(C);
    pair.pcscf.close_compartment(C);
    assert!(pair.ue.compressor(C).is_none());
    assert!(pair.pcscf.decompressor().states().compartment(C).is_none_or(|c| c.entries.is_empty()));
    // Both sides start from nothing: the next message uploads the bytecode.
    let out = pair.ue.compress(now(), C, &flow[4].bytes).unwrap();
    assert!(out.uploaded_bytecode);
    assert_eq!(deliver(&mut pair.pcscf, &out.message), flow[4].bytes);
}

#[test]
fn idle_compartments_release_their_scratch_and_still_round_trip() {
    // Two calls interleaved message by message at the same two endpoints;
    // with room for one compartment's scratch, every message finds its
    // compressor released by the other call and rebuilds its chains.
    // Everything still decompresses, and the messages cost what they cost
    // with the chains kept (within a few bytes: stale chain links left in
    // a kept finder can use up a bounded search).
    let flow = video_call();
    let (a, b) = (sigcomp::CompartmentId(1), sigcomp::CompartmentId(2));
    let mut totals = Vec::new();
    for cap in [64usize, 1] {
        let cfg = config(Mechanism::Shared, Transport::Message);
        let mut ue = endpoint(params(8192), params(8192), cfg);
        let mut pcscf = endpoint(params(8192), params(8192), cfg);
        ue.set_scratch_compartments(cap);
        pcscf.set_scratch_compartments(cap);
        let mut total = 0usize;
        for m in &flow {
            for c in [a, b] {
                let (from, to) = match m.from {
                    Side::Ue => (&mut ue, &mut pcscf),
                    Side::Pcscf => (&mut pcscf, &mut ue),
                };
                let out = from.compress(now(), c, &m.bytes).unwrap();
                total += out.message.len();
                match receive_in(to, c, &out.message) {
                    Ok(Got::Message(output)) => assert_eq!(output, m.bytes, "{}", m.name),
                    other => panic!("{}: {other:?}", m.name),
                }
            }
            if cap == 1 {
                // Only the compartment that compressed last holds scratch.
                let sender = match m.from {
                    Side::Ue => &ue,
                    Side::Pcscf => &pcscf,
                };
                assert!(sender.compressor(b).unwrap().holds_scratch());
                assert!(!sender.compressor(a).unwrap().holds_scratch());
                // and only it has its states unpacked, at both endpoints
                // (the two calls being byte-identical, their states at the
                // decompressors are the same items, held by both, and stay
                // plain: only a compartment's own items are packed).
                assert!(sender.compressor(a).unwrap().states_packed());
                assert!(!sender.compressor(b).unwrap().states_packed());
                for e in [&ue, &pcscf] {
                    let states = e.decompressor().states();
                    let entries = states.compartment(b).map_or(&[][..], |c| &c.entries[..]);
                    assert!(entries.iter().all(|x| !states.get(&x.id).unwrap().is_packed()), "{}", m.name);
                }
            }
        }
        totals.push(total);
    }
    let (kept, released) = (totals[0] as f64, totals[1] as f64);
    assert!((released - kept).abs() <= kept * 0.01, "kept {kept} B, released {released} B");
}

#[test]
fn packed_states_change_nothing_sent_or_received() {
    // The same call twice, once with both endpoints packing the
    // compartment's states before every message (an idle compartment's
    // storage): every message is byte for byte the same, and decompresses.
    let flow = video_call();
    for (mechanism, transport) in [
        (Mechanism::Shared, Transport::Message),
        (Mechanism::Dynamic, Transport::Stream),
        (Mechanism::Shared, Transport::Stream),
    ] {
        let cfg = config(mechanism, transport);
        let mut sent: Vec<Vec<Vec<u8>>> = Vec::new();
        let mut packed_seen = 0;
        for pack in [false, true] {
            let mut ue = endpoint(params(8192), params(8192), cfg);
            let mut pcscf = endpoint(params(8192), params(8192), cfg);
            let mut messages = Vec::new();
            for m in flow.iter().chain(flow.iter()) {
                if pack {
                    ue.pack_compartment(C);
                    pcscf.pack_compartment(C);
                    for e in [&ue, &pcscf] {
                        let states = e.decompressor().states();
                        packed_seen += states
                            .compartment(C)
                            .map_or(0, |c| c.entries.iter().filter(|x| states.get(&x.id).unwrap().is_packed()).count());
                        packed_seen += usize::from(e.compressor(C).is_some_and(|c| c.states_packed()));
                    }
                }
                let (from, to) = match m.from {
                    Side::Ue => (&mut ue, &mut pcscf),
                    Side::Pcscf => (&mut pcscf, &mut ue),
                };
                let out = from.compress(now(), C, &m.bytes).unwrap();
                assert_eq!(deliver(to, &out.message), m.bytes, "{}", m.name);
                messages.push(out.message);
            }
            sent.push(messages);
        }
        assert_eq!(sent[0], sent[1], "{mechanism:?} {transport:?}");
        assert!(packed_seen >= flow.len(), "{mechanism:?} {transport:?}: {packed_seen} packed");
    }
}

#[test]
fn superseded_snapshots_are_kept_as_sizes_not_bytes() {
    // The thesis's SMS of 128 KiB keeps many snapshots at the peer; the
    // compressor holds the bytes of only those it may still continue from
    // (the newest usable one and any newer, unacknowledged ones), while its
    // model still counts every snapshot the peer holds.
    let flow = video_call();
    for transport in [Transport::Message, Transport::Stream] {
        let big = Params { dms: 8192, sms: 131072, cpb: 16, version: 2 };
        let cfg = config(Mechanism::Shared, transport);
        let mut ue = endpoint(big, big, cfg);
        let mut pcscf = endpoint(big, big, cfg);
        for _ in 0..3 {
            for m in &flow {
                let (from, to) = match m.from {
                    Side::Ue => (&mut ue, &mut pcscf),
                    Side::Pcscf => (&mut pcscf, &mut ue),
                };
                let out = from.compress(now(), C, &m.bytes).unwrap();
                assert_eq!(deliver(to, &out.message), m.bytes, "{}", m.name);
            }
        }
        for side in [&ue, &pcscf] {
            let c = side.compressor(C).unwrap();
            let snapshot = usize::from(c.layout().buffer_end) - 64;
            assert!(c.peer_state_memory() as usize > 6 * snapshot, "{transport:?}: the peer holds many snapshots");
            assert!(c.snapshot_bytes_held() <= 2 * snapshot, "{transport:?}: {} bytes held", c.snapshot_bytes_held());
        }
    }
}

#[test]
fn lzss_messages_are_computed_not_run_unless_verifying() {
    // Without verify, an LZSS compressor runs no message through its model
    // of the peer (the peer's memory and states are computed); with it,
    // every message is run and compared. Both send the same bytes.
    let flow = video_call();
    for mechanism in Mechanism::ALL {
        for transport in [Transport::Message, Transport::Stream] {
            let mut sent = Vec::new();
            for verify in [false, true] {
                let cfg = Config { verify, ..config(mechanism, transport) };
                let mut ue = endpoint(params(8192), params(8192), cfg);
                let mut pcscf = endpoint(params(8192), params(8192), cfg);
                let mut bytes = Vec::new();
                let mut count = [0usize; 2];
                for _ in 0..2 {
                    for m in &flow {
                        let (from, to, k) = match m.from {
                            Side::Ue => (&mut ue, &mut pcscf, 0),
                            Side::Pcscf => (&mut pcscf, &mut ue, 1),
                        };
                        let out = from.compress(now(), C, &m.bytes).unwrap();
                        assert_eq!(deliver(to, &out.message), m.bytes, "{mechanism:?} {transport:?} {}", m.name);
                        bytes.push(out.message);
                        count[k] += 1;
                    }
                }
                let runs = [ue.compressor(C).unwrap().model_runs(), pcscf.compressor(C).unwrap().model_runs()];
                if verify {
                    assert_eq!(runs, count, "{mechanism:?} {transport:?}");
                } else {
                    assert_eq!(runs, [0, 0], "{mechanism:?} {transport:?}");
                }
                sent.push(bytes);
            }
            assert_eq!(sent[0], sent[1], "{mechanism:?} {transport:?}: verify changed the messages");
        }
    }
}

#[test]
fn snapshots_end_at_the_history_until_it_wraps() {
    // The history starts at the circular buffer's start and the dictionary
    // part lies at its end: until the history first wraps, a snapshot ends
    // at decompressed_pointer (asm/mechanism.asm, flag 0x02), and the next
    // message loads the dictionary part it left out again. Verify mode
    // checks each computed snapshot against the peer's own run.
    let flow = video_call();
    for mechanism in [Mechanism::Dynamic, Mechanism::Shared] {
        for transport in [Transport::Message, Transport::Stream] {
            // Room for a few of the call's messages before the history
            // wraps; level 1 uploads the program with short snapshots.
            let p = params(16384);
            let cfg = Config { level: Level::FASTEST, ..config(mechanism, transport) };
            let mut ue = endpoint(p, p, cfg);
            let mut pcscf = endpoint(p, p, cfg);
            let mut short_ids = HashSet::new();
            let (mut whole, mut continued_from_short, mut first) = (0, 0, true);
            for _ in 0..5 {
                for m in &flow {
                    let ue_sends = m.from == Side::Ue;
                    let (from, to) = if ue_sends { (&mut ue, &mut pcscf) } else { (&mut pcscf, &mut ue) };
                    let out = from.compress(now(), C, &m.bytes).unwrap();
                    assert_eq!(deliver(to, &out.message), m.bytes, "{mechanism:?} {transport:?} {}", m.name);
                    if !ue_sends {
                        continue;
                    }
                    continued_from_short += usize::from(out.used_state.is_some_and(|id| short_ids.contains(&id)));
                    let layout = *ue.compressor(C).unwrap().layout();
                    let (cb, end) = (usize::from(layout.circular_buffer), usize::from(layout.buffer_end));
                    let states = pcscf.decompressor().states();
                    let Some((id, value)) = out
                        .requested
                        .iter()
                        .find_map(|id| states.get(id).filter(|s| s.address == 64).map(|s| (*id, s.value().to_vec())))
                    else {
                        continue;
                    };
                    // decompressed_pointer is the word at address 70.
                    let pointer = usize::from(u16::from_be_bytes([value[6], value[7]]));
                    if first {
                        assert_eq!(value.len(), cb - 64 + m.bytes.len(), "{mechanism:?} {transport:?}: the first");
                        first = false;
                    }
                    if value.len() == end - 64 {
                        whole += 1;
                    } else {
                        assert_eq!(value.len(), pointer - 64, "{mechanism:?} {transport:?} {}", m.name);
                        short_ids.insert(id);
                    }
                }
            }
            let short = short_ids.len();
            assert!(short >= 2 && whole >= 2, "{mechanism:?} {transport:?}: {short} short, {whole} whole");
            assert!(continued_from_short >= 1, "{mechanism:?} {transport:?}: none continued from a short one");
        }
    }
}

#[test]
fn the_default_level_saves_whole_snapshots() {
    // Short snapshots cost bytecode; the default level uploads the program
    // that saves memory 64..buffer_end at every message.
    let flow = video_call();
    let mut ue = endpoint(params(16384), params(16384), config(Mechanism::Dynamic, Transport::Message));
    let mut pcscf = endpoint(params(16384), params(16384), config(Mechanism::Dynamic, Transport::Message));
    let mut snapshots = 0;
    for m in flow.iter().take(6) {
        let (from, to) = if m.from == Side::Ue { (&mut ue, &mut pcscf) } else { (&mut pcscf, &mut ue) };
        let out = from.compress(now(), C, &m.bytes).unwrap();
        assert_eq!(deliver(to, &out.message), m.bytes);
        let end = usize::from(from.compressor(C).unwrap().layout().buffer_end);
        for id in &out.requested {
            if let Some(s) = to.decompressor().states().get(id).filter(|s| s.address == 64) {
                assert_eq!(s.len(), end - 64, "{}", m.name);
                snapshots += 1;
            }
        }
    }
    assert!(snapshots >= 3, "{snapshots} snapshots");
}
