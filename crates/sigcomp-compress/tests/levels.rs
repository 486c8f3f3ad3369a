//! Compression levels: every level round-trips every message, the default
//! is level 6, and the fast levels change the parse.

#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use common::*;
use sigcomp::Transport;
use sigcomp_compress::{Algorithm, Config, Level, Mechanism, SnapshotExtent};

#[test]
fn levels_are_one_to_nine_and_six_is_the_default() {
    assert!(Level::new(0).is_none());
    assert!(Level::new(10).is_none());
    assert_eq!(Config::default().level, Level::DEFAULT);
    assert_eq!(Level::DEFAULT.get(), 6);
    let (d, six) = (sigcomp_compress::Effort::default(), Level::DEFAULT.effort());
    assert_eq!((six.max_chain, six.lazy, six.nice_len), (d.max_chain, d.lazy, d.nice_len));
    for n in 1..=3 {
        assert!(!Level::new(n).unwrap().effort().lazy, "level {n} is greedy");
    }
}

#[test]
fn every_level_round_trips_the_corpus_flows() {
    let flow = read_flow("3gpp-video-call");
    for &algorithm in Algorithm::ALL {
        let mut totals = Vec::new();
        for n in 1..=9 {
            let config = Config { algorithm, level: Level::new(n).unwrap(), ..Config::default() };
            // `play` checks every message decompresses to its bytes.
            totals.push(play(&flow, params(8192), config).compressed);
        }
        // The fastest level parses differently from the default, and no
        // level is smaller than the default by more than the longer chains
        // can find (the default parse is exact over 512 links).
        assert_ne!(totals[0], totals[5], "{algorithm:?}: {totals:?}");
        assert!(totals[0] >= totals[5], "{algorithm:?}: {totals:?}");
    }
}

#[test]
fn short_snapshots_are_computed_as_the_peer_runs_them() {
    // Levels 1–3 upload the programs with short snapshots; verify mode runs
    // every message through the peer's decompressor too and checks the
    // states and cycles the compressor computed (`play` fails on a
    // mismatch), for every algorithm, both mechanisms that save snapshots
    // and both transports.
    let flow = read_flow("3gpp-video-call");
    for &algorithm in Algorithm::ALL {
        for mechanism in [Mechanism::Dynamic, Mechanism::Shared] {
            for transport in [Transport::Message, Transport::Stream] {
                for dms in [4096, 16384] {
                    let config = Config {
                        algorithm,
                        mechanism,
                        transport,
                        level: Level::FASTEST,
                        verify: true,
                        ..Config::default()
                    };
                    assert_eq!(config.level.snapshot_extent(), SnapshotExtent::Short);
                    // `play` panics when a message does not come back whole
                    // or the compressor's computation differs from the run.
                    play(&flow, params(dms), config);
                }
            }
        }
    }
}
