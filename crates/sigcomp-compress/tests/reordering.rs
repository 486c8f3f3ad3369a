//! Messages over UDP that the network reorders (RFC 3320 §5.1 leaves the
//! compressor to make sure the state it names is there; RFC 4077 NACKs
//! recover when it is not). One in three messages is held back and
//! delivered after the next; the peer answers each delivery, echoing the
//! feedback it last received.
//!
//! The peer evicts by the order in which it created states (RFC 3320
//! §6.2), and a late message changes that order from the one the
//! compressor's model assumes, so a message may name a state the peer has
//! evicted. What must hold: no message decompresses to anything but what
//! was sent, a failure is STATE_NOT_FOUND with its NACK, and after the
//! NACK reaches the compressor the next message decompresses.

mod common;

use common::*;
use sigcomp::{Reason, Transport};
use sigcomp_compress::{Config, Mechanism};

#[test]
fn reordered_messages_decompress_or_fail_with_a_nack_that_recovers() {
    for mechanism in [Mechanism::Dynamic, Mechanism::Shared] {
        let (mut failures, mut reply_failures, mut delivered) = (0, 0, 0);
        for (fi, name) in flows().iter().enumerate() {
            let flow = read_flow(name);
            let config = Config { mechanism, transport: Transport::Message, verify: true, ..Config::default() };
            let mut ue = endpoint(params(8192), params(8192), config);
            let mut pcscf = endpoint(params(8192), params(8192), config);
            let mut rng: u64 = 0x9E37_79B9_7F4A_7C15 ^ fi as u64;
            let mut held: Option<(usize, Vec<u8>)> = None;
            let mut recovering = false;
            for round in 0..4 {
                for (i, m) in flow.iter().enumerate() {
                    let out = ue.compress(now(), C, &m.bytes).unwrap();
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let mut batch = Vec::new();
                    if held.is_none() && rng.is_multiple_of(3) {
                        held = Some((i, out.message));
                    } else {
                        batch.push((i, out.message));
                        batch.extend(held.take());
                    }
                    for (k, message) in batch {
                        delivered += 1;
                        let what = format!("{mechanism:?} {name} round {round} message {k}");
                        match receive(&mut pcscf, &message) {
                            Ok(Got::Message(output)) => {
                                assert_eq!(output, flow[k].bytes, "{what}");
                                recovering = false;
                            }
                            Ok(Got::Nack(_)) => panic!("{what}: taken for a NACK"),
                            Err(e) => {
                                assert_eq!(e.reason(), Reason::StateNotFound, "{what}");
                                assert!(!recovering || k != i, "{what}: the first message after a NACK failed");
                                failures += 1;
                                let nack = e.nack.expect("a NACK for the failure");
                                assert!(matches!(receive(&mut ue, &nack), Ok(Got::Nack(_))), "{what}");
                                recovering = true;
                            }
                        }
                        // The reply is not reordered, yet in the shared mechanism
                        // it may name a shared state of the terminal's that the
                        // terminal freed (RFC 3321 §4.2) when the pcscf took an
                        // announcement out of order: its NACK recovers too.
                        let reply = pcscf.compress(now(), C, &flow[(k + 1) % flow.len()].bytes).unwrap();
                        match receive(&mut ue, &reply.message) {
                            Ok(Got::Message(output)) => assert_eq!(output, flow[(k + 1) % flow.len()].bytes, "{what}"),
                            Ok(Got::Nack(_)) => panic!("{what}: reply taken for a NACK"),
                            Err(e) => {
                                assert_eq!(e.reason(), Reason::StateNotFound, "{what}: reply");
                                reply_failures += 1;
                                let nack = e.nack.expect("a NACK for the failure");
                                assert!(matches!(receive(&mut pcscf, &nack), Ok(Got::Nack(_))), "{what}");
                            }
                        }
                    }
                }
            }
        }
        eprintln!("{mechanism:?}: {failures} of {delivered} reordered deliveries and {reply_failures} replies failed and were NACKed");
        if mechanism == Mechanism::Dynamic {
            // Its model follows the order in which the peer acknowledged.
            assert_eq!((failures, reply_failures), (0, 0), "{mechanism:?} of {delivered}");
        } else {
            // The shared mechanism also names the peer's own shared state,
            // which the peer frees as it announces newer ones (RFC 3321
            // §4.2): a message held back past an announcement names one
            // that is gone.
            assert!(
                failures + reply_failures < delivered / 4,
                "{mechanism:?}: {failures} + {reply_failures} of {delivered}"
            );
        }
    }
}
