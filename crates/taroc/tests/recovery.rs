//! Context recovery after a loss burst, measured apart from the link's own
//! damage: the goal of TAROC (draft-ietf-rohc-tcp-taroc-04 §5.3.1 b, §6.1)
//! that the decompressor's last good reference stays within the
//! compressor's window W = K·cwnd while TCP reacts, so the context recovers
//! within it. The replay ([`taroc::replay`]) with an exact burst of
//! lost packets on one flow, and the throughput simulator's episode counts
//! against its context damage.

use taroc::replay::{replay, LinkConfig, Report};
use taroc::synth::{bulk_transfer, Dir, FlowOptions};
use taroc::throughput::{simulate, DamagedFrames, LinkCounts, TcpVariant, ThroughputConfig};
use taroc::{Mode, Scheme};

const LOSS: f64 = 0.3;
const SEED: u64 = 11;

/// The data segments of one bulk transfer (one direction, one context).
fn data_segments(n: usize) -> Vec<Vec<u8>> {
    data_segments_with(n, FlowOptions::default())
}

fn data_segments_with(n: usize, opts: FlowOptions) -> Vec<Vec<u8>> {
    bulk_transfer(n, 1000, 0, opts).into_iter().filter(|(d, _)| *d == Dir::Forward).map(|(_, p)| p).collect()
}

/// Which positions of a replayed list the link of `LinkConfig { loss:
/// LOSS, seed: SEED }` loses: the faults depend on the seed and the
/// position only, so a fault-free scheme's output shows them.
fn lost_positions(n: usize) -> Vec<bool> {
    let probe = vec![data_segments(1)[0].clone(); n];
    let link = LinkConfig { loss: LOSS, seed: SEED, ..LinkConfig::default() };
    let (_, out) = replay(Scheme::None, &probe, &link, true);
    let mut lost = vec![true; n];
    for (i, _) in out {
        lost[i] = false;
    }
    lost
}

/// Replays `flow` with exactly packets `burst_at..burst_at + burst` of it
/// lost: its packets go to positions the link loses or spares as needed,
/// and the other positions hold bytes no scheme compresses (refused before
/// the link, they belong to no flow).
fn replay_with_burst(scheme: Scheme, flow: &[Vec<u8>], burst_at: usize, burst: usize) -> Report {
    let lost = lost_positions(flow.len() * 6);
    let mut list = Vec::new();
    for (k, p) in flow.iter().enumerate() {
        let want_lost = (burst_at..burst_at + burst).contains(&k);
        while lost.get(list.len()).copied().expect("enough positions") != want_lost {
            list.push(vec![0u8; 8]);
        }
        list.push(p.clone());
    }
    let link = LinkConfig { loss: LOSS, seed: SEED, ..LinkConfig::default() };
    let r = replay(scheme, &list, &link, false).0;
    assert_eq!(r.link_lost, burst, "the burst and nothing else is lost");
    assert_eq!(r.sent(), flow.len());
    r
}

#[test]
fn a_burst_longer_than_the_window_in_u_mode_is_context_damage_beyond_it() {
    let flow = data_segments(700);
    // Longer than the VSW can ever be (its cap is 128 packets).
    let r = replay_with_burst(Scheme::Taroc(Mode::U), &flow, 100, 200);
    assert_eq!(r.loss_events, 1);
    assert!(r.context_damage > 0, "{r:?}");
    // Every refused packet belongs to the one episode.
    assert_eq!(r.context_recovery.total, r.context_damage as u64);
    assert_eq!(r.context_recovery.max, r.context_damage as u64);
    assert_eq!(r.context_damage_outside_episodes, 0);
    assert_eq!(r.context_recovery.beyond_window, 1, "{r:?}");
    // The window it exceeded: the VSW, between its floor and its cap.
    let window = r.context_recovery.max - r.context_recovery.beyond_window_max;
    assert!((8..=128).contains(&window), "{r:?}");
    // The packets sent until recovery count the burst (after its first
    // packet) as well; the context figure does not.
    assert_eq!(r.recovery_max, 199 + r.context_recovery.max, "{r:?}");
}

#[test]
fn a_burst_within_the_window_costs_no_context() {
    let flow = data_segments(300);
    // The VSW holds at least 8 packets (min_vsw).
    let r = replay_with_burst(Scheme::Taroc(Mode::U), &flow, 100, 3);
    assert_eq!(r.loss_events, 1);
    assert_eq!((r.context_damage, r.context_recovery.max, r.context_recovery.beyond_window), (0, 0, 0), "{r:?}");
    assert_eq!(r.delivered, flow.len() - 3);
}

#[test]
fn feedback_recovers_a_long_burst_within_the_window() {
    let flow = data_segments(700);
    for mode in [Mode::O, Mode::R] {
        let r = replay_with_burst(Scheme::Taroc(mode), &flow, 100, 200);
        assert_eq!(r.loss_events, 1, "{mode:?}");
        assert_eq!(r.context_recovery.beyond_window, 0, "{mode:?} {r:?}");
        assert_eq!(r.context_recovery.total, r.context_damage as u64, "{mode:?}");
        // A NACK and the refresh it buys cross the link in a few packets.
        assert!(r.context_recovery.max < 8, "{mode:?} {r:?}");
    }
}

#[test]
fn schemes_without_a_window_never_count_an_episode_beyond_it() {
    let flow = data_segments(700);
    for scheme in [Scheme::Vj, Scheme::None, Scheme::Ideal] {
        let r = replay_with_burst(scheme, &flow, 100, 200);
        assert_eq!(r.loss_events, 1, "{scheme:?}");
        assert_eq!((r.context_recovery.beyond_window, r.context_recovery.beyond_window_max), (0, 0), "{scheme:?}");
        assert_eq!(r.context_recovery.total, r.context_damage as u64, "{scheme:?}");
    }
    // VJ (RFC 1144) loses its deltas' base with the burst: the packets
    // after it are context damage (without timestamps, which VJ does not
    // compress, it sends deltas).
    let plain = data_segments_with(700, FlowOptions { timestamps: false, ..FlowOptions::default() });
    let vj = replay_with_burst(Scheme::Vj, &plain, 100, 200);
    assert!(vj.context_recovery.max > 0, "{vj:?}");
    assert_eq!((vj.context_recovery.beyond_window, vj.context_recovery.beyond_window_max), (0, 0));
}

fn both(f: impl Fn(&LinkCounts) -> u64, r: &taroc::throughput::RunReport) -> u64 {
    f(&r.forward) + f(&r.backward)
}

#[test]
fn throughput_episodes_account_for_every_context_damaged_packet() {
    for damaged in [DamagedFrames::Discard, DamagedFrames::Deliver] {
        for scheme in [Scheme::Taroc(Mode::U), Scheme::Taroc(Mode::O), Scheme::Vj, Scheme::Ideal] {
            for seed in 1..=2 {
                let cfg = ThroughputConfig {
                    seconds: 60.0,
                    seed,
                    damaged_frames: damaged,
                    ..ThroughputConfig::draft(64_000, 1e-4, 168, scheme, TcpVariant::Reno)
                };
                let r = simulate(&cfg).unwrap();
                let at = format!("{damaged:?} {scheme:?} seed {seed}");
                let episodes = both(|c| c.loss_episodes, &r);
                assert!(episodes > 0, "{at}");
                // An episode begins at a damaged packet lost to the receiver.
                assert!(episodes <= both(|c| c.damaged_dropped + c.undetected + c.payload_undetected, &r), "{at}");
                assert_eq!(
                    both(|c| c.context_recovery.total + c.context_damage_outside_episodes, &r),
                    r.context_damage(),
                    "{at}"
                );
                for c in [&r.forward, &r.backward] {
                    assert!(c.context_recovery.max <= c.context_recovery.total, "{at}");
                    assert!(c.context_recovery.beyond_window <= c.loss_episodes, "{at}");
                    assert_eq!(c.context_recovery.beyond_window_max > 0, c.context_recovery.beyond_window > 0, "{at}");
                }
                if !matches!(scheme, Scheme::Taroc(_)) {
                    assert_eq!(both(|c| c.context_recovery.beyond_window, &r), 0, "{at}");
                }
                if scheme == Scheme::Ideal {
                    assert_eq!(both(|c| c.context_recovery.total, &r), 0, "{at}");
                }
            }
        }
    }
}

#[test]
fn throughput_without_errors_has_no_episode() {
    let cfg = ThroughputConfig {
        seconds: 30.0,
        ..ThroughputConfig::draft(64_000, 0.0, 576, Scheme::Taroc(Mode::U), TcpVariant::Reno)
    };
    let r = simulate(&cfg).unwrap();
    assert_eq!(both(|c| c.loss_episodes + c.context_recovery.total, &r), 0);
}
