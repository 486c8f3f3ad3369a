//! The throughput study's options that model ns-2's TCP as the TAROC
//! draft's Appendix A ran it. The retransmission timer (`RtoModel::Ns2`,
//! ns-2.1b8's `Agent/TCP`): RTTs in whole clock ticks, the backoff
//! multiplying the unrounded RTO before the 1 s floor, SRTT cleared past
//! a backoff of 8; and what it changes in the study: timeouts that grow
//! with the link's round trip, so the 9.6 kb/s link falls behind the
//! 384 kb/s one as in the draft. The delayed ACKs of ns-2's
//! `TCPSink/DelAck`: one ACK for two segments, a lone one held.

use taroc::throughput::{
    simulate, ErrorDirections, RtoModel, RunReport, SenderConfig, Summary, TcpSender, TcpVariant, ThroughputConfig,
    TimerModel, NS_PER_S,
};
use taroc::Scheme;

const MSS: u32 = 536;
const MS: u64 = 1_000_000;
const TICK: u64 = 100 * MS;

/// ns-2.1b8's defaults: `tcpTick_` 0.1 s, `rtxcur_init_` 6 s, `minrto_`
/// 1 s, `maxrto_` 100000 s; the clock's phase 0.
fn ns2_sender() -> TcpSender {
    TcpSender::new(SenderConfig {
        rto_model: RtoModel::Ns2 { tick_ns: TICK, phase_ns: 0 },
        initial_rto_ns: 6 * NS_PER_S,
        max_rto_ns: 100_000 * NS_PER_S,
        ..SenderConfig::new(TcpVariant::NewReno, MSS)
    })
}

/// Sends what the window allows at `now` and acknowledges all of it
/// `rtt` later; returns the time of the ACK.
fn round(s: &mut TcpSender, now: u64, rtt: u64) -> u64 {
    while s.poll_send(now).is_some() {}
    s.on_ack(now + rtt, s.snd_max());
    now + rtt
}

#[test]
fn before_a_sample_the_timeout_is_six_seconds() {
    let mut s = ns2_sender();
    assert!(s.poll_send(0).is_some());
    assert_eq!(s.timer_deadline(), Some(6 * NS_PER_S));
}

#[test]
fn the_first_sample_sets_three_round_trips_then_rttvar_decays_in_integers() {
    let mut s = ns2_sender();
    // 400 ms from a tick boundary: 4 ticks. SRTT 4, RTTVAR 2: 3 RTTs.
    let mut now = round(&mut s, 0, 400 * MS);
    assert_eq!(s.rto_ns(), 1200 * MS);
    // Equal samples: t_rttvar_ (4·RTTVAR) loses a quarter, rounded down,
    // each time, 8, 6, 5, 4, 3 and no further; RTO = 4 + 3 ticks, under
    // the 1 s floor.
    for _ in 0..6 {
        now = round(&mut s, now, 400 * MS);
    }
    assert_eq!(s.rto_ns(), NS_PER_S, "0.7 s raised to minrto_");
    assert_eq!(s.stats().rtt_samples, 7);
}

#[test]
fn the_backoff_multiplies_the_rto_before_the_floor() {
    let mut s = ns2_sender();
    let mut now = 0;
    for _ in 0..7 {
        now = round(&mut s, now, 400 * MS);
    }
    while s.poll_send(now).is_some() {}
    let deadline = s.timer_deadline().unwrap();
    assert_eq!(deadline, now + NS_PER_S);
    s.on_timer(deadline);
    // 0.7 s × 2, where RFC 6298 doubles the floored 1 s to 2 s.
    assert_eq!(s.rto_ns(), 1400 * MS);
    assert!(s.poll_send(deadline).is_some(), "the retransmission");
    let second = s.timer_deadline().unwrap();
    assert_eq!(second, deadline + 1400 * MS);
    s.on_timer(second);
    assert_eq!(s.rto_ns(), 2800 * MS);
    assert_eq!(s.stats().timeouts, 2);
    assert_eq!(s.stats().timeout_wait_ns, NS_PER_S + 1400 * MS);
}

#[test]
fn past_a_backoff_of_eight_the_next_sample_starts_afresh() {
    let mut s = ns2_sender();
    let mut now = 0;
    for _ in 0..7 {
        now = round(&mut s, now, 400 * MS);
    }
    // Four expiries: backoff 16, SRTT cleared (the RTO itself is kept
    // until a sample: 0.7 s × 16).
    for _ in 0..4 {
        while s.poll_send(now).is_some() {}
        now = s.timer_deadline().unwrap();
        s.on_timer(now);
    }
    assert_eq!(s.rto_ns(), 11_200 * MS);
    // Recovery: the retransmissions are acknowledged, then a new segment
    // is timed over 500 ms (5 ticks): SRTT 5, RTTVAR 2.5, RTO 1.5 s where
    // the old estimate would have given 0.8 s (floored to 1 s).
    now = round(&mut s, now, 500 * MS);
    let before = s.stats().rtt_samples;
    now = round(&mut s, now, 500 * MS);
    assert_eq!(s.stats().rtt_samples, before + 1);
    assert_eq!(s.rto_ns(), 1500 * MS);
    let _ = now;
}

#[test]
fn the_round_trip_is_counted_in_ticks_crossed() {
    // 350 ms sent 60 ms into a tick crosses 4 boundaries (ns-2's
    // int((tao + fmod(sendtime, tick)) / tick)); from a boundary, 3.
    let first = |phase_ns| {
        let mut s = TcpSender::new(SenderConfig {
            rto_model: RtoModel::Ns2 { tick_ns: TICK, phase_ns },
            initial_rto_ns: 6 * NS_PER_S,
            ..SenderConfig::new(TcpVariant::NewReno, MSS)
        });
        round(&mut s, 0, 350 * MS);
        s.rto_ns()
    };
    assert_eq!(first(60 * MS), 1200 * MS, "4 ticks: 3 × 0.4 s");
    assert_eq!(first(0), NS_PER_S, "3 ticks: 0.9 s, raised to 1 s");
}

fn runs(link_bps: u64, timer: TimerModel) -> Vec<RunReport> {
    (1..=12)
        .map(|seed| {
            let cfg = ThroughputConfig {
                seed,
                timer,
                error_directions: ErrorDirections::Forward,
                ..ThroughputConfig::draft(link_bps, 3e-4, 96, Scheme::None, TcpVariant::NewReno)
            };
            simulate(&cfg).expect("valid configuration")
        })
        .collect()
}

/// Mean goodput and mean wait per expired timer over the runs.
fn figures(r: &[RunReport]) -> (f64, f64) {
    let goodput = Summary::of(&r.iter().map(|r| r.goodput).collect::<Vec<_>>()).mean;
    let wait: u64 = r.iter().map(|r| r.sender.timeout_wait_ns).sum();
    let timeouts: u64 = r.iter().map(|r| r.sender.timeouts).sum();
    (goodput, wait as f64 / timeouts.max(1) as f64 / NS_PER_S as f64)
}

#[test]
fn with_ns2s_timer_timeouts_grow_with_the_round_trip_and_the_slow_link_falls_behind() {
    // BER 3e-4, MTU 96, no compression: most of each run waits on timers.
    // Round trips: 0.40 s at 384 kb/s, 0.51 s at 9.6 kb/s (80 ms of data
    // and 33 ms of ACK serialisation).
    let ns2 = TimerModel::Ns2 { tick_ns: TICK };
    let (fast_rfc, slow_rfc) =
        (figures(&runs(384_000, TimerModel::Rfc6298)), figures(&runs(9600, TimerModel::Rfc6298)));
    let (fast_ns2, slow_ns2) = (figures(&runs(384_000, ns2)), figures(&runs(9600, ns2)));
    // RFC 6298 doubles the 1 s floor, whatever the round trip: the same
    // wait per timeout on both links (12 seeds: 2.02 and 1.97 s).
    assert!((slow_rfc.1 / fast_rfc.1 - 1.0).abs() < 0.08, "{fast_rfc:?} {slow_rfc:?}");
    // ns-2 doubles SRTT + 4·RTTVAR: the slower link's timeouts are longer
    // (1.65 and 1.84 s).
    assert!(slow_ns2.1 > fast_ns2.1 * 1.08, "{fast_ns2:?} {slow_ns2:?}");
    // So the 9.6 kb/s link keeps less of the 384 kb/s link's goodput
    // (0.91 with RFC 6298's timer, 0.84 with ns-2's; the draft: 78 of 97
    // Byte/s, 0.80).
    let (ratio_rfc, ratio_ns2) = (slow_rfc.0 / fast_rfc.0, slow_ns2.0 / fast_ns2.0);
    assert!(ratio_ns2 < 0.88 && ratio_ns2 < ratio_rfc - 0.05, "{ratio_rfc} {ratio_ns2}");
}

fn bulk(delayed_ack_ns: Option<u64>) -> RunReport {
    let cfg = ThroughputConfig {
        seconds: 60.0,
        delayed_ack_ns,
        ..ThroughputConfig::draft(384_000, 0.0, 576, Scheme::None, TcpVariant::NewReno)
    };
    simulate(&cfg).expect("valid configuration")
}

#[test]
fn delayed_acks_acknowledge_every_second_segment_and_slow_a_window_limited_link() {
    let (at_once, delayed) = (bulk(None), bulk(Some(100 * MS)));
    // One ACK a segment; with delayed ACKs one for two (and a few held
    // ones, sent when their 100 ms run out).
    assert_eq!(at_once.backward.packets, at_once.forward.packets);
    let ratio = delayed.backward.packets as f64 / delayed.forward.packets as f64;
    assert!((0.5..0.6).contains(&ratio), "{ratio}");
    // At 384 kb/s the 20-segment window over a 0.4 s round trip is the
    // limit: held ACKs and a slower-growing window cost goodput (22.7
    // against 24.5 kB/s in this minute).
    assert!(delayed.goodput < 0.95 * at_once.goodput, "{} {}", delayed.goodput, at_once.goodput);
    assert_eq!(delayed.sender.timeouts, 0);
}

#[test]
fn a_delayed_ack_interval_of_zero_is_refused() {
    let cfg = ThroughputConfig {
        delayed_ack_ns: Some(0),
        ..ThroughputConfig::draft(9600, 0.0, 576, Scheme::None, TcpVariant::NewReno)
    };
    assert!(simulate(&cfg).is_err());
    let tick = ThroughputConfig { timer: TimerModel::Ns2 { tick_ns: 0 }, ..cfg };
    assert!(simulate(&ThroughputConfig { delayed_ack_ns: None, ..tick }).is_err());
}
