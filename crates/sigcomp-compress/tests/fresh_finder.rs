//! A new compressor may start from a match finder prepared over the fresh
//! window by an earlier one with the same bytecode (what an endpoint does
//! for each new compartment): for every algorithm the finder is offered,
//! taken, and gives the same messages as hashing the window itself.

mod common;

use common::*;
use sigcomp::{Params, Transport};
use sigcomp_compress::{Algorithm, AnnounceMessage, Compressor, Config, Mechanism};

#[test]
fn every_algorithm_adopts_a_prepared_finder_and_compresses_the_same() {
    let peer = Params { dms: 8192, sms: 8192, cpb: 64, version: 2 };
    let flow = read_flow("3gpp-video-call");
    for &algorithm in Algorithm::ALL {
        for mechanism in Mechanism::ALL {
            let config = Config { algorithm, mechanism, transport: Transport::Stream, ..Config::default() };
            let template = Compressor::new(config, peer, peer).unwrap();
            let finder = template.fresh_finder().unwrap_or_else(|| panic!("{algorithm:?}: no prepared finder"));
            let mut adopted = Compressor::new(config, peer, peer).unwrap();
            assert!(!adopted.holds_scratch());
            adopted.adopt_finder(finder.clone());
            assert!(adopted.holds_scratch(), "{algorithm:?} {mechanism:?}: finder not adopted");
            let mut own = Compressor::new(config, peer, peer).unwrap();
            for (k, m) in flow.iter().enumerate() {
                let a = adopted.compress(&m.bytes, None, AnnounceMessage::No).unwrap();
                let b = own.compress(&m.bytes, None, AnnounceMessage::No).unwrap();
                assert_eq!(a.message, b.message, "{algorithm:?} {mechanism:?} message {k}");
            }
            // A finder of another algorithm's kind is not taken.
            for &other in Algorithm::ALL {
                let mut c = Compressor::new(Config { algorithm: other, ..config }, peer, peer).unwrap();
                c.adopt_finder(finder.clone());
                let same_kind = (other == Algorithm::Lzss) == (algorithm == Algorithm::Lzss);
                assert_eq!(c.holds_scratch(), same_kind, "{algorithm:?} finder offered to {other:?}");
            }
        }
    }
}
