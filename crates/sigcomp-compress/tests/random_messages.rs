//! Property test: random messages (any bytes, any length up to 3000)
//! round-trip between two endpoints under every mechanism and transport.

mod common;

use common::*;
use proptest::prelude::*;
use sigcomp::Transport;
use sigcomp_compress::{Config, Mechanism};

fn message() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Arbitrary bytes (0xFF included: stream record marking).
        proptest::collection::vec(any::<u8>(), 0..3000),
        // Text built from SIP-like words, so matches occur.
        proptest::collection::vec(
            prop_oneof![
                Just(&b"SIP/2.0 "[..]),
                Just(&b"Via: "[..]),
                Just(&b"\r\n"[..]),
                Just(&b"sip:alice@example.com"[..]),
                Just(&b";branch=z9hG4bK"[..]),
                Just(&b"\xff\xff"[..]),
                Just(&b"0123456789"[..]),
            ],
            0..200
        )
        .prop_map(|parts| parts.concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_messages_round_trip(
        messages in proptest::collection::vec((message(), any::<bool>()), 1..6),
        mechanism in 0usize..4,
        stream in any::<bool>(),
        dms_exp in 0u32..4,
    ) {
        let transport = if stream { Transport::Stream } else { Transport::Message };
        // verify: each message is also run by the peer's decompressor in the
        // compressor and compared with what the compressor computed.
        let config = Config { mechanism: Mechanism::ALL[mechanism], transport, verify: true, ..Config::default() };
        let dms = 2048 << dms_exp;
        let mut pair = Pair::new(params(dms), config);
        for (msg, from_ue) in &messages {
            let from = if *from_ue { Side::Ue } else { Side::Pcscf };
            match pair.sender(from).compress(now(), C, msg) {
                Ok(out) => {
                    let delivered = pair.carry(from, &out.message);
                    match receive(pair.receiver(from), &delivered) {
                        Ok(Got::Message(output)) => prop_assert_eq!(&output, msg),
                        other => prop_assert!(false, "receiver: {:?}", other.err()),
                    }
                }
                // Over UDP the UDVM memory is DMS minus the message (RFC 3320
                // §7): an incompressible message near the DMS cannot be sent
                // at all, and that is the only refusal allowed.
                Err(sigcomp_compress::CompressError::DoesNotFit(_)) => {
                    prop_assert!(!stream && msg.len() + 192 > dms as usize, "refused {} bytes at DMS {}", msg.len(), dms);
                }
                Err(e) => prop_assert!(false, "{}", e),
            }
        }
    }
}
