//! The simulator against the SIP overload thesis's model and results, on
//! short runs: the collapse after a +40 tps surge and its avoidance by each
//! handler (chapter 4), the RFC 3261 timers, and determinism per seed.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

use sigkit_sim::{run_seed, run_seeds, HandlerKind, Scenario, SeedRun, Trigger};

/// The thesis's two-proxy chain (§4.3.1): 80 tps, +40 tps for 10 s at 50 s;
/// 200 s simulated, collapse judged on the transactions started in 150-200 s.
fn surge(extra: &str) -> Scenario {
    let text = format!(
        r#"
        name = "surge"
        duration = 200.0
        collapse_window = [150.0, 200.0]
        [[proxies]]
        capacity_tps = 1000.0
        [[proxies]]
        capacity_tps = 100.0
        [[sources]]
        rate = 80.0
        [[sources]]
        rate = 40.0
        start = 50.0
        end = 60.0
        {extra}
        "#
    );
    Scenario::from_toml_str(&text).unwrap()
}

fn collapsed(runs: &[SeedRun]) -> usize {
    runs.iter().filter(|r| r.summary.collapsed).count()
}

const SEEDS: [u64; 4] = [1, 2, 3, 4];

#[test]
fn a_short_surge_collapses_the_unprotected_chain_in_most_seeds() {
    let sc = surge("");
    let runs = run_seeds(&sc, &SEEDS);
    assert!(collapsed(&runs) >= 3, "the thesis: 500 of 500 collapse; here {} of 4", collapsed(&runs));
    for r in runs.iter().filter(|r| r.summary.collapsed) {
        // The thesis's collapsed runs end at a success rate of 0 to 0.35
        // (Figure 4.36), with requests sent many times (Figure 4.4).
        assert!(r.summary.window_success_ratio <= 0.35, "{:?}", r.summary);
        let late = &r.seconds[160];
        assert!(late.transmissions_mean.unwrap() > 5.0, "{late:?}");
        assert!(late.utilisation > 0.98, "the bottleneck stays saturated: {late:?}");
    }
    // Before the surge the chain is at ~80 % utilisation with single transmissions.
    let before = &runs[0].seconds[20..50];
    let util = before.iter().map(|r| r.utilisation).sum::<f64>() / before.len() as f64;
    assert!((0.72..0.88).contains(&util), "utilisation before the surge {util}");
    assert!(before.iter().all(|r| r.transmissions_mean == Some(1.0) || r.started == 0), "{before:?}");
}

#[test]
fn t1_of_one_second_toward_the_bottleneck_avoids_the_collapse() {
    let sc = surge("[handler]\nkind = \"t1\"\ntrigger = \"always\"\nt1 = 1.0");
    let runs = run_seeds(&sc, &SEEDS);
    assert_eq!(collapsed(&runs), 0, "the thesis: 0 of 500 collapse at T1 = 1 s");
    for r in &runs {
        assert_eq!(r.summary.window_success_ratio, 1.0, "{:?}", r.summary);
        assert!(r.seconds.iter().all(|s| s.t1_next == Some(1.0)));
    }
}

#[test]
fn t1_raised_by_d1_or_by_the_via_signal_avoids_the_collapse() {
    for trigger in ["d1", "via"] {
        let sc = surge(&format!("[handler]\nkind = \"t1\"\ntrigger = \"{trigger}\"\nt1 = 1.0\nvalidity = 60.0"));
        let runs = run_seeds(&sc, &SEEDS);
        assert!(collapsed(&runs) <= 1, "{trigger}: {} of 4 collapsed", collapsed(&runs));
        for r in &runs {
            // Default T1 before the surge, raised during it, back after the validity.
            assert!(r.seconds[..45].iter().all(|s| s.t1_next == Some(0.5)), "{trigger} raised T1 before the surge");
            assert!(r.seconds[55..70].iter().any(|s| s.t1_next == Some(1.0)), "{trigger} never raised T1");
        }
    }
}

#[test]
fn the_503_cap_avoids_the_collapse_and_rejects_only_around_the_surge() {
    for trigger in ["d1", "d2"] {
        let sc = surge(&format!("[handler]\nkind = \"cap503\"\ntrigger = \"{trigger}\"\ncap = 50"));
        let runs = run_seeds(&sc, &SEEDS);
        assert_eq!(collapsed(&runs), 0, "{trigger}");
        for r in &runs {
            let s = &r.summary;
            assert!(s.rejected > 0, "{trigger}: the surge exceeds capacity, something must be rejected: {s:?}");
            assert!(s.rejected < s.transactions / 20, "{trigger}: {s:?}");
            let late: u64 = r.seconds[150..].iter().map(|x| x.rejections).sum();
            assert_eq!(late, 0, "{trigger}: still rejecting long after the surge");
            assert!(r.seconds[150..].iter().all(|x| x.transmissions_mean.unwrap_or(1.0) < 1.1));
        }
    }
}

#[test]
fn rfc7339_loss_based_oc_avoids_the_collapse() {
    let sc = surge("[handler]\nkind = \"oc_loss\"");
    let runs = run_seeds(&sc, &SEEDS);
    assert_eq!(collapsed(&runs), 0);
    for r in &runs {
        assert!(r.seconds[52..65].iter().any(|s| s.oc.is_some_and(|oc| oc > 0)), "no oc during the surge");
        assert!(r.summary.rejected > 0);
        assert!(r.summary.window_ok_ratio > 0.95, "{:?}", r.summary);
    }
}

#[test]
fn sip_offload_avoids_the_collapse_and_frees_the_processor() {
    for share in [0.128, 0.072] {
        let sc = surge("").clone();
        let mut sc = sc;
        sc.proxies[1].parse_share = share;
        let runs = run_seeds(&sc, &SEEDS);
        assert_eq!(collapsed(&runs), 0, "parse share {share}");
        // Utilisation at 80 tps falls with the parse share: 80 · (share + 0.8) · 10 ms.
        let before = &runs[0].seconds[10..50];
        let util = before.iter().map(|r| r.utilisation).sum::<f64>() / before.len() as f64;
        let expected = 80.0 * (share + 0.8) * 0.01;
        assert!((util - expected).abs() < 0.06, "parse share {share}: {util} vs {expected}");
    }
}

#[test]
fn the_same_seed_gives_the_same_run_and_others_differ() {
    let sc = surge("[handler]\nkind = \"oc_loss\"");
    let a = run_seed(&sc, 7);
    let b = run_seeds(&sc, &[8, 7]);
    assert_eq!(a, b[1]);
    assert_ne!(a.seconds, b[0].seconds);
}

#[test]
fn a_silent_next_hop_gets_eleven_transmissions_and_timer_f() {
    // Every message lost: each UAC transaction sends 11 times in 31.5 s and
    // times out at Timer F = 64·T1 = 32 s (RFC 3261 §17.1.2.2).
    let sc = Scenario::from_toml_str(
        r#"
        duration = 40.0
        drain = 40.0
        collapse_window = [0.0, 40.0]
        [links]
        loss = 1.0
        [[proxies]]
        capacity_tps = 100.0
        [[sources]]
        rate = 5.0
        "#,
    )
    .unwrap();
    let run = run_seed(&sc, 3);
    let started: u64 = run.seconds.iter().map(|s| s.started).sum();
    assert!(started > 100);
    assert_eq!(run.summary.timed_out, started);
    assert_eq!(run.summary.transmissions_mean, 11.0);
    // T1 = 1 s stops at the 11-transmission cap too (after 35 s).
    let mut sc = sc;
    sc.timers.t1 = 1.0;
    sc.drain = 70.0;
    assert_eq!(run_seed(&sc, 3).summary.transmissions_mean, 11.0);
    // Timer E's schedule: retransmissions at 0.5, 1.5, 3.5, 7.5 s... so with
    // T1 = 0.5 s the UAC's retransmissions of one transaction fall in the
    // seconds 0, 1, 3, 7, 11, ..., 31 after it started.
    let one = Scenario::from_toml_str(
        r#"
        duration = 40.0
        collapse_window = [0.0, 40.0]
        [links]
        loss = 1.0
        [[proxies]]
        capacity_tps = 100.0
        [[sources]]
        rate = 0.001
        start = 0.0
        end = 0.002
        [[sources]]
        rate = 1000.0
        start = 0.0
        end = 0.0011
        "#,
    )
    .unwrap();
    let run = run_seed(&one, 1);
    let n: u64 = run.seconds.iter().map(|s| s.started).sum();
    assert!(n >= 1);
    let with_retransmissions: Vec<u64> =
        run.seconds.iter().filter(|s| s.uac_retransmissions > 0).map(|s| s.t).collect();
    assert_eq!(with_retransmissions, [0, 1, 3, 7, 11, 15, 19, 23, 27, 31]);
}

#[test]
fn lossy_links_are_repaired_by_retransmission() {
    let sc = Scenario::from_toml_str(
        r#"
        duration = 100.0
        collapse_window = [20.0, 100.0]
        [links]
        loss = 0.05
        [[proxies]]
        capacity_tps = 1000.0
        [[proxies]]
        capacity_tps = 100.0
        [[sources]]
        rate = 30.0
        "#,
    )
    .unwrap();
    let run = run_seed(&sc, 5);
    let s = &run.summary;
    assert!(!s.collapsed);
    assert!(s.timed_out == 0, "{s:?}");
    // Each try crosses 6 link hops; P(no loss) = 0.95^6 ≈ 0.735, yet
    // retransmissions within 32 s repair it. Hop-by-hop repair by the
    // stateful proxies keeps the mean well under 1/0.735 ≈ 1.36.
    assert!(s.transmissions_mean > 1.02 && s.transmissions_mean < 1.36, "{s:?}");
    // A lost message costs at least T1: the p95 fRpD exceeds 0.5 s.
    assert!(s.frpd_p95.unwrap() > 0.5, "{s:?}");
}

#[test]
fn light_load_runs_at_the_service_time() {
    let sc = Scenario::from_toml_str(
        r#"
        duration = 100.0
        collapse_window = [10.0, 100.0]
        [[proxies]]
        capacity_tps = 100.0
        [[sources]]
        rate = 10.0
        "#,
    )
    .unwrap();
    let run = run_seed(&sc, 2);
    let s = &run.summary;
    assert_eq!(s.window_success_ratio, 1.0);
    assert_eq!(s.transmissions_mean, 1.0);
    // Thesis §4.1.2 (idle system): fRpD mostly about one transaction's work
    // (10 ms) plus links, tail to some 40 ms; never near T1.
    let p95 = s.frpd_p95.unwrap();
    assert!((0.01..0.1).contains(&p95), "{p95}");
    let util = run.seconds.iter().map(|r| r.utilisation).sum::<f64>() / run.seconds.len() as f64;
    assert!((util - 0.1).abs() < 0.02, "{util}");
    assert_eq!(sc.handler.kind, HandlerKind::None);
    assert_eq!(sc.handler.trigger, Trigger::Always);
}

#[test]
fn d1_and_d2_detect_the_surge() {
    let runs = run_seeds(&surge(""), &SEEDS);
    for r in &runs {
        let d1 = r.summary.d1_first_detection.expect("D1 detects the surge");
        assert!((50.0..65.0).contains(&d1), "D1 at {d1}");
        assert!(r.seconds[..48].iter().all(|s| !s.d1_congested), "D1 fired before the surge");
        // D2 has false alarms at about α; during the build-up of the
        // collapse it is congested more often than before the surge.
        let share =
            |rows: &[sigkit_sim::SecondRow]| rows.iter().filter(|s| s.d2_congested).count() as f64 / rows.len() as f64;
        let (quiet, surge) = (share(&r.seconds[10..50]), share(&r.seconds[52..100]));
        assert!(quiet <= 0.2, "{quiet}");
        assert!(surge > quiet, "D2 congested {surge} in the surge vs {quiet} before");
    }
}

/// Thesis §4.5.2 on a shorter clock: 200 clients register in 10 s beside
/// 80 tps, Expires 60 s.
fn registrations(handler: &str, extra: &str) -> Scenario {
    let text = format!(
        r#"
        duration = 200.0
        collapse_window = [150.0, 200.0]
        [[proxies]]
        capacity_tps = 1000.0
        [[proxies]]
        capacity_tps = 100.0
        [[sources]]
        rate = 80.0
        {handler}
        [registration]
        clients = 200
        start = 30.0
        spread = 10.0
        expires = 60.0
        {extra}
        "#
    );
    Scenario::from_toml_str(&text).unwrap()
}

#[test]
fn a_registration_burst_collapses_the_chain_unless_d1_caps_it() {
    // The thesis: registrations collapse the unprotected system, randomised
    // expiry does not help (Figures 4.62, 4.63); with D1 all stay
    // registered (Figure 4.64).
    for extra in ["", "random_expiry = true"] {
        let runs = run_seeds(&registrations("", extra), &[1, 2]);
        for r in &runs {
            assert!(r.summary.collapsed, "{extra}: {:?}", r.summary);
            let peak = r.seconds.iter().filter_map(|s| s.registrations_active).max().unwrap();
            assert!(peak >= 150, "{extra}: most clients register first ({peak})");
            assert!(r.summary.registrations_active_end.unwrap() < 20, "{extra}: {:?}", r.summary);
        }
    }
    let runs = run_seeds(&registrations("[handler]\nkind = \"cap503\"\ntrigger = \"d1\"\ncap = 50", ""), &[1, 2]);
    for r in &runs {
        assert!(!r.summary.collapsed, "{:?}", r.summary);
        assert_eq!(r.summary.registrations_active_end, Some(200));
        // Every transaction is answered (a 401 counts as answered as asked);
        // the re-registration bursts every 60 s cost a few 503s.
        assert_eq!((r.summary.window_success_ratio, r.summary.timed_out), (1.0, 0), "{:?}", r.summary);
        assert!(r.summary.window_ok_ratio > 0.95, "{:?}", r.summary);
    }
    // Without registrations the rows carry none.
    assert!(run_seed(&surge(""), 1).seconds.iter().all(|s| s.registrations_active.is_none()));
}

/// Thesis §4.5.1 on a shorter clock: 50 watchers re-subscribe to 4
/// presentities each in 10 s beside 80 tps; the presentities notify again
/// after 100 s instead of 250 s.
fn presence(handler: &str) -> Scenario {
    let text = format!(
        r#"
        duration = 250.0
        collapse_window = [30.0, 250.0]
        [[proxies]]
        capacity_tps = 1000.0
        [[proxies]]
        capacity_tps = 100.0
        [[sources]]
        rate = 80.0
        [presence]
        watchers = 50
        presentities = 4
        state_change = 100.0
        {handler}
        "#
    );
    Scenario::from_toml_str(&text).unwrap()
}

#[test]
fn a_presence_burst_collapses_the_chain_unless_d1_or_d2_caps_it() {
    // The thesis: 33.3 % of the requests after 30 s get a 200 without
    // protection, 99.1 % with D1, 97.8 % with D2 (§4.5.1).
    for r in &run_seeds(&presence(""), &[1, 2]) {
        assert!(r.summary.collapsed && r.summary.window_ok_ratio < 0.6, "{:?}", r.summary);
    }
    for trigger in ["d1", "d2"] {
        let handler = format!("[handler]\nkind = \"cap503\"\ntrigger = \"{trigger}\"\ncap = 50");
        for r in &run_seeds(&presence(&handler), &[1, 2]) {
            assert!(r.summary.window_ok_ratio > 0.95, "{trigger}: {:?}", r.summary);
            assert!(r.summary.rejected > 0, "{trigger}: the burst costs some 503s");
            assert_eq!(r.summary.subscriptions_active_end, Some(200), "{trigger}: every subscription ends active");
        }
    }
    assert!(run_seed(&surge(""), 1).seconds.iter().all(|s| s.subscriptions_active.is_none()));
}

#[test]
fn the_later_t1_is_raised_the_larger_it_must_be() {
    // The thesis (§4.3.2, Figures 4.38, 4.39): 660 ms from the start
    // suffices, at 50 s it takes 900 ms, at 100 s 1200 ms. Here (match
    // share 3 %) 660 ms from the start does not suffice in most seeds, but
    // the shape holds: the same 900 ms that protects from the start or from
    // 50 s fails from 100 s, and a larger T1 never does worse.
    let at = |when: f64, t1: f64| {
        let mut sc = surge(&format!("[handler]\nkind = \"t1\"\ntrigger = \"at\"\nat = {when}\nt1 = {t1}"));
        sc.duration = 300.0;
        sc.collapse_window = [250.0, 300.0];
        collapsed(&run_seeds(&sc, &SEEDS))
    };
    assert_eq!(at(0.0, 0.9), 0, "900 ms from the start");
    assert_eq!(at(50.0, 0.9), 0, "900 ms from 50 s");
    assert!(at(100.0, 0.9) >= 3, "900 ms from 100 s");
    assert!(at(0.0, 0.66) >= at(0.0, 0.9));
}

#[test]
fn steady_load_crosses_d1s_threshold_near_capacity_and_the_cap_keeps_goodput() {
    // The thesis: the fRpD's 95th percentile passes 0.5 s at 95 tps on a
    // 100 tps proxy (Figure 4.17); without handling the goodput collapses
    // from 85 msg/s, with the D1-triggered cap it stays at capacity (4.42).
    let steady = |rate: f64, handler: &str| {
        let text = format!(
            "duration = 200.0\ncollapse_window = [150.0, 200.0]\n[[proxies]]\ncapacity_tps = 1000.0\n\
             [[proxies]]\ncapacity_tps = 100.0\n[[sources]]\nrate = {rate}\n{handler}"
        );
        run_seeds(&Scenario::from_toml_str(&text).unwrap(), &[1, 2])
    };
    for r in &steady(80.0, "") {
        assert!(r.summary.frpd_p95.unwrap() < 0.5 && !r.summary.collapsed, "{:?}", r.summary);
    }
    for r in &steady(110.0, "") {
        assert!(r.summary.frpd_p95.unwrap() > 0.5 && r.summary.window_goodput < 50.0, "{:?}", r.summary);
    }
    for r in &steady(110.0, "[handler]\nkind = \"cap503\"\ntrigger = \"d1\"\ncap = 50") {
        assert!(r.summary.window_goodput > 85.0, "{:?}", r.summary);
    }
}

#[test]
fn the_503_cap_cuts_the_frpd_percentile_from_tens_of_seconds_to_under_one() {
    // The thesis (§4.3.3, Figure 4.41): 28.7 s without detection, 0.355 s
    // with it.
    let plain = run_seeds(&surge(""), &[1, 2]);
    let capped = run_seeds(&surge("[handler]\nkind = \"cap503\"\ntrigger = \"d1\"\ncap = 50"), &[1, 2]);
    for (p, c) in plain.iter().zip(&capped) {
        let (p, c) = (p.summary.frpd_p95.unwrap(), c.summary.frpd_p95.unwrap());
        assert!(p > 5.0 && c < 0.5, "without {p} s, with {c} s");
    }
}

#[test]
fn offload_does_not_survive_a_longer_higher_peak() {
    // The thesis (§4.4.2, Figure 4.47): 90 tps, 150 tps for 100 s collapses
    // even with the offload engine.
    let sc = Scenario::from_toml_str(
        r#"
        duration = 300.0
        collapse_window = [250.0, 300.0]
        [[proxies]]
        capacity_tps = 1000.0
        [[proxies]]
        capacity_tps = 100.0
        parse_share = 0.128
        [[sources]]
        rate = 90.0
        [[sources]]
        rate = 60.0
        start = 50.0
        end = 150.0
        "#,
    )
    .unwrap();
    assert_eq!(collapsed(&run_seeds(&sc, &[1, 2])), 2);
}

#[test]
fn every_scenario_file_loads_and_events_are_counted() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            Scenario::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
    }
    assert!(n >= 20, "{n} scenario files");
    let r = run_seed(&surge(""), 1);
    assert!(r.summary.events > 10 * r.summary.transactions, "{:?}", r.summary.events);
}
