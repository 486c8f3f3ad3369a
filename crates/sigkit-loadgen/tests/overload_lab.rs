//! The SIP overload thesis's lab experiment in small (C. Egger, SIP
//! overload control thesis, TU Wien 2012, §5.2: a peak load through two
//! proxies), over real UDP on 127.0.0.1: `sigkit load` offers MESSAGE
//! transactions at 70 % of the upstream's capacity, 150 % for 5 s, then
//! 70 % again, through a transaction-stateful `sigkit proxy` to a
//! `sigkit load` UAS behind a server of limited capacity (200 new
//! transactions/s, a queue of 1000 datagrams, retransmissions of known
//! transactions at a fifth of the cost). Unprotected, the requests the
//! surge delayed past T1 are retransmitted by the proxy (Timer E) and keep
//! the server behind after the surge has gone (thesis §5.2.1, Figures
//! 5.6–5.8); with H2 (a cap of pending transactions at the proxy, 503
//! beyond it, §4.3.3) the server's queue never holds more than it serves
//! within T1, so nothing is retransmitted and the delay is back under
//! 0.5 s as soon as the surge ends. Both run at once (about 15 s).

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sigkit_loadgen::{
    scenario, EngineConfig, Interval, LoadConfig, Pattern, Prepared, Role, ServiceCounts, ServiceModel,
};
use sigkit_proxy::config::TransportAddr;
use sigkit_proxy::overload::{Handler, OverloadConfig};
use sigkit_proxy::{ProxyConfig, SipTransport};

const CAPACITY: f64 = 200.0;
const BASE: f64 = 140.0;
const PEAK: f64 = 300.0;
const SURGE_AT: f64 = 2.0;
const SURGE_FOR: f64 = 5.0;
const RUN: f64 = 14.0;

fn localhost(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

struct Lab {
    intervals: Vec<Interval>,
    /// (seconds since the UAC started, requests the proxy has sent again
    /// to the upstream so far), every 250 ms.
    retransmitted: Vec<(f64, u64)>,
    rejected: u64,
    server: ServiceCounts,
}

impl Lab {
    /// Retransmissions toward the upstream between `from` and `to` s.
    fn retransmitted_between(&self, from: f64, to: f64) -> u64 {
        let at = |t: f64| self.retransmitted.iter().take_while(|(s, _)| *s <= t).last().map_or(0, |(_, n)| *n);
        at(to) - at(from)
    }

    /// The per-second rows whose end falls in (from, to].
    fn window(&self, from: f64, to: f64) -> Vec<&Interval> {
        self.intervals.iter().filter(|i| i.t_s > from && i.t_s <= to).collect()
    }
}

fn final_p95(i: &Interval) -> f64 {
    i.transactions_ms.get("MESSAGE").map_or(0.0, |t| t.final_ms.p95)
}

async fn lab(overload: OverloadConfig) -> Lab {
    let uas = Prepared::bind(LoadConfig {
        role: Role::Uas,
        scenario: Some(Arc::new(scenario::built_in("message-uas").unwrap())),
        service_model: Some(ServiceModel { capacity_tps: CAPACITY, queue: 1000, ..ServiceModel::default() }),
        duration: Some(Duration::from_secs_f64(RUN + 10.0)),
        ..LoadConfig::default()
    })
    .await
    .unwrap();
    let uas_addr = uas.local_addr();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let uas = tokio::spawn(uas.run(Some(stopped)));
    let proxy = sigkit_proxy::runtime::start(ProxyConfig {
        listen: vec![TransportAddr { transport: SipTransport::Udp, addr: localhost(0) }],
        upstream: Some(TransportAddr { transport: SipTransport::Udp, addr: uas_addr }.into()),
        upstream_local: Some(localhost(0)),
        threads: 1,
        stateful: true,
        overload,
        ..ProxyConfig::default()
    })
    .await
    .unwrap();
    let uac = LoadConfig {
        role: Role::Uac,
        scenario: Some(Arc::new(scenario::built_in("message").unwrap())),
        engine: EngineConfig {
            remote: Some(uas_addr),
            next_hop: Some(proxy.terminal_addrs[0].1),
            ..LoadConfig::default().engine
        },
        rate: BASE,
        pattern: Pattern::Surge {
            base: BASE,
            peak: PEAK,
            at: Duration::from_secs_f64(SURGE_AT),
            length: Duration::from_secs_f64(SURGE_FOR),
        },
        duration: Some(Duration::from_secs_f64(RUN)),
        ..LoadConfig::default()
    };
    let t0 = Instant::now();
    let uac = tokio::spawn(sigkit_loadgen::run(uac, None));
    let mut retransmitted = Vec::new();
    while !uac.is_finished() {
        let n: u64 = proxy.inspect(|p| p.metrics().upstream_retransmissions).iter().sum();
        retransmitted.push((t0.elapsed().as_secs_f64(), n));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let report = uac.await.unwrap().unwrap();
    let rejected = proxy.inspect(|p| p.overload().rejected).iter().sum();
    proxy.stop().await;
    let _ = stop.send(true);
    let server = uas.await.unwrap().unwrap().summary.service.unwrap();
    Lab { intervals: report.intervals, retransmitted, rejected, server }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_surge_h2_recovers_at_once_while_the_unprotected_proxy_keeps_retransmitting() {
    let cap = OverloadConfig {
        handler: Handler::PendingCap,
        // What the server completes in a quarter of a second: an admitted
        // request is answered well within T1.
        max_pending: (CAPACITY * 0.25) as usize,
        delay_detector: false,
        ..OverloadConfig::default()
    };
    let (none, h2) = tokio::join!(lab(OverloadConfig::default()), lab(cap));
    let end = SURGE_AT + SURGE_FOR;
    // From 2 s to 6 s after the surge.
    let (from, to) = (end + 2.0, end + 6.0);
    let describe = |l: &Lab| {
        let rows: Vec<String> = l
            .intervals
            .iter()
            .map(|i| format!("{:.0}s {} ok {} failed p95 {:.0} ms", i.t_s, i.successful, i.failed, final_p95(i)))
            .collect();
        format!("{rows:?}; retransmitted {:?}; server {:?}; rejected {}", l.retransmitted, l.server, l.rejected)
    };
    let (none_rt, h2_rt) = (none.retransmitted_between(from, to), h2.retransmitted_between(from, to));
    eprintln!("unprotected: {}\nH2: {}", describe(&none), describe(&h2));

    // Unprotected: the surge's backlog is still being retransmitted, and
    // what is answered has waited longer than T1.
    assert!(none_rt >= 100, "unprotected: {none_rt} retransmissions after the surge: {}", describe(&none));
    let worst = none.window(from, to).iter().map(|i| final_p95(i)).fold(0.0, f64::max);
    assert!(worst > 1000.0, "unprotected: p95 {worst} ms after the surge: {}", describe(&none));
    assert!(none.server.served_repeat > 0 && none.rejected == 0, "{}", describe(&none));

    // H2: it shed during the surge, kept the server busy, and nothing
    // waits past T1 after it.
    assert!(h2.rejected > 0, "H2 shed nothing: {}", describe(&h2));
    assert!(h2_rt * 10 < none_rt.max(10), "H2: {h2_rt} retransmissions against {none_rt}: {}", describe(&h2));
    for i in h2.window(from, to) {
        assert!(i.failed == 0 && final_p95(i) < 500.0, "H2 after the surge: {}", describe(&h2));
    }
    let during = h2.window(SURGE_AT + 1.0, end);
    let goodput = during.iter().map(|i| i.successful).sum::<u64>() as f64 / during.len().max(1) as f64;
    assert!(goodput >= 0.85 * CAPACITY, "H2 goodput during the surge {goodput}/s: {}", describe(&h2));
    let after = h2.window(from, to);
    let goodput = after.iter().map(|i| i.successful).sum::<u64>() as f64 / after.len().max(1) as f64;
    assert!(goodput >= 0.9 * BASE, "H2 goodput after the surge {goodput}/s: {}", describe(&h2));
}
