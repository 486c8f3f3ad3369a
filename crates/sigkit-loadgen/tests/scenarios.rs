//! SIPp XML scenarios and the other transports and controls, with real
//! peers on 127.0.0.1: SIPp's own `uac` file (`sipp -sd uac`) run
//! unchanged against SIPp's UAS, calls over TCP both ways, CSV injection,
//! REGISTER with digest authentication against Kamailio, the UDP control
//! socket changing the rate of a running load, stepped load, and SigComp
//! over UDP and TCP, between our own UAC and UAS and through `sigkit
//! proxy` and Kamailio; a service model where it cannot work is refused.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sigkit_loadgen::engine::Transport;
use sigkit_loadgen::{scenario, EngineConfig, Injection, LoadConfig, LoadError, Pattern, Prepared, Role, ServiceModel};
use support::*;

const CALLS: u64 = 10;

fn uac_to(port: u16) -> LoadConfig {
    LoadConfig {
        role: Role::Uac,
        engine: EngineConfig {
            remote: Some(localhost(port)),
            hold: Duration::from_millis(20),
            ..LoadConfig::default().engine
        },
        rate: 20.0,
        max_calls: Some(CALLS),
        duration: Some(Duration::from_secs(60)),
        ..LoadConfig::default()
    }
}

fn our_uas(transport: Transport, calls: u64) -> LoadConfig {
    LoadConfig {
        role: Role::Uas,
        engine: EngineConfig { transport, ..LoadConfig::default().engine },
        max_calls: Some(calls),
        duration: Some(Duration::from_secs(60)),
        ..LoadConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sipps_own_uac_file_runs_unchanged_against_sipps_uas() {
    if !have("sipp") {
        return;
    }
    let dir = scratch("sd-uac");
    let dump = std::process::Command::new("sipp").args(["-sd", "uac"]).output().unwrap();
    // SIPp exits with 99 after dumping; the scenario is on stdout.
    assert!(dump.stdout.starts_with(b"<?xml"), "{}", String::from_utf8_lossy(&dump.stderr));
    std::fs::write(dir.join("uac.xml"), &dump.stdout).unwrap();
    let port = free_port();
    let _sipp = sipp_background(&dir, &["-sn", "uas", "-i", "127.0.0.1", "-p", &port.to_string()]);
    let bytes = std::fs::read(dir.join("uac.xml")).unwrap();
    let parsed = scenario::parse(&scenario::decode_text(&bytes)).unwrap();
    assert_eq!(parsed.name, "Basic Sipstone UAC");
    let config = LoadConfig { scenario: Some(Arc::new(parsed)), ..uac_to(port) };
    let s = sigkit_loadgen::run(config, None).await.unwrap().summary;
    assert_eq!((s.successful_calls, s.failed_calls), (CALLS, 0), "{s:?}");
    assert_eq!(s.rtd_ms["1"].count, CALLS, "the file's rtd=\"true\" on the 200");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_over_tcp_with_sipp_both_ways() {
    if !have("sipp") {
        return;
    }
    let dir = scratch("tcp");
    // Our UAC over one TCP connection to SIPp's UAS.
    let port = free_port();
    let sipp = sipp_background(&dir, &["-sn", "uas", "-t", "t1", "-i", "127.0.0.1", "-p", &port.to_string()]);
    let mut config = uac_to(port);
    config.engine.transport = Transport::Tcp;
    let s = sigkit_loadgen::run(config, None).await.unwrap().summary;
    assert_eq!((s.successful_calls, s.failed_calls, s.transport), (CALLS, 0, "tcp"), "{s:?}");
    assert_eq!(s.retransmissions, 0, "no retransmission over TCP");
    drop(sipp);
    // SIPp's UAC over TCP to our UAS.
    let server = Prepared::bind(our_uas(Transport::Tcp, CALLS)).await.unwrap();
    let addr = server.local_addr();
    let ours = tokio::spawn(server.run(None));
    let args: Vec<String> = ["-sn", "uac", "-t", "t1", "-i", "127.0.0.1", "-r", "20", "-m", &CALLS.to_string()]
        .iter()
        .map(|s| s.to_string())
        .chain([addr.to_string()])
        .collect();
    let d = dir.clone();
    let (totals, text) =
        tokio::task::spawn_blocking(move || sipp_run(&d, &args, Duration::from_secs(60))).await.unwrap();
    assert_eq!(totals, (CALLS, 0), "SIPp:\n{text}");
    let r = ours.await.unwrap().unwrap().summary;
    assert_eq!((r.successful_calls, r.failed_calls), (CALLS, 0), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_fields_reach_sipps_uas() {
    if !have("sipp") {
        return;
    }
    let dir = scratch("inf");
    let port = free_port();
    let _sipp = sipp_background(&dir, &["-sn", "uas", "-i", "127.0.0.1", "-p", &port.to_string()]);
    // The built-in uac with the Request-URI's user from the CSV file.
    let xml = scenario::UAC_XML.replace("INVITE sip:[service]@", "INVITE sip:[field0]@");
    let injection = Injection::parse("SEQUENTIAL\nalice;x\nbob;y\n").unwrap();
    let config = LoadConfig {
        scenario: Some(Arc::new(scenario::parse(&xml).unwrap())),
        injection: Some(Arc::new(injection)),
        ..uac_to(port)
    };
    let s = sigkit_loadgen::run(config, None).await.unwrap().summary;
    assert_eq!((s.successful_calls, s.failed_calls), (CALLS, 0), "{s:?}");
    // Without the file, the scenario is refused before anything is sent.
    let config = LoadConfig { scenario: Some(Arc::new(scenario::parse(&xml).unwrap())), ..uac_to(port) };
    let e = sigkit_loadgen::run(config, None).await.unwrap_err();
    assert!(e.to_string().contains("[field0]"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_with_digest_authentication_against_kamailio() {
    if !have("kamailio") {
        return;
    }
    let dir = scratch("register");
    let kport = free_port();
    let _k = kamailio(&dir, kport);
    // Kamailio's processes, sampled as the system under test.
    let main_pid: u32 = std::fs::read_to_string(dir.join("k.pid")).unwrap().trim().parse().unwrap();
    let mut config = LoadConfig {
        scenario: Some(Arc::new(scenario::built_in("register").unwrap())),
        sut_pids: vec![main_pid],
        report_every: Duration::from_millis(100),
        ..uac_to(kport)
    };
    config.engine.service = "alice".into();
    config.engine.auth_password = "secret".into();
    let report = sigkit_loadgen::run(config, None).await.unwrap();
    let s = report.summary;
    assert_eq!((s.successful_calls, s.failed_calls), (CALLS, 0), "{s:?}");
    assert!(s.sut.is_some_and(|u| u.rss_kib > 0), "{:?}", s.sut);
    assert!(report.intervals.iter().any(|i| i.sut_rss_kib.is_some_and(|r| r > 0)));
    assert_eq!(s.rtd_ms["register"].count, CALLS);
    // Each registration: the challenged REGISTER and the one with
    // credentials.
    assert_eq!(kamailio_saw(&dir, "REGISTER"), 2 * CALLS);
    // The wrong password: Kamailio challenges again, which fails the call.
    let mut config = LoadConfig {
        scenario: Some(Arc::new(scenario::built_in("register").unwrap())),
        max_calls: Some(2),
        ..uac_to(kport)
    };
    config.engine.service = "bob".into();
    config.engine.auth_password = "wrong".into();
    let s = sigkit_loadgen::run(config, None).await.unwrap().summary;
    assert_eq!((s.successful_calls, s.failed_calls), (0, 2), "{s:?}");
    assert_eq!(s.failures.get("register_401"), Some(&2), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_control_socket_changes_the_rate_and_quits() {
    let server = Prepared::bind(our_uas(Transport::Udp, 1_000_000)).await.unwrap();
    let uas_addr = server.local_addr();
    let (stop_uas, stopped) = tokio::sync::watch::channel(false);
    let uas = tokio::spawn(server.run(Some(stopped)));
    let config = LoadConfig {
        rate: 1.0,
        max_calls: None,
        control_port: Some(0),
        duration: Some(Duration::from_secs(60)),
        ..uac_to(uas_addr.port())
    };
    let uac = Prepared::bind(config).await.unwrap();
    let control = uac.control_addr().unwrap();
    let progress = uac.progress();
    let started = Instant::now();
    let run = tokio::spawn(uac.run(None));
    let ctl = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SIPp's remote control: a command, then keys (+10 +1).
    ctl.send_to(b"cset rate 50", control).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    ctl.send_to(b"*+", control).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    ctl.send_to(b"q", control).await.unwrap();
    let report = tokio::time::timeout(Duration::from_secs(30), run).await.expect("q ends the run").unwrap().unwrap();
    let _ = stop_uas.send(true);
    let _ = uas.await;
    let s = &report.summary;
    // At 1 call/s about 2 calls in 2 s; at 50-61 calls/s dozens.
    assert!(s.attempted_calls > 30, "the new rate took effect: {s:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(s.failed_calls, 0);
    assert_eq!(s.successful_calls, s.attempted_calls, "q lets the calls in progress end");
    assert!((progress.borrow().rate - 61.0).abs() < 1e-6, "50, then * and + : {:?}", progress.borrow());
    assert!(progress.borrow().finished);
    // Each rate set by hand is a step of its own.
    assert!(report.steps.len() >= 2, "{:?}", report.steps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepped_load_reports_each_step() {
    let server = Prepared::bind(our_uas(Transport::Udp, 1_000_000)).await.unwrap();
    let uas_addr = server.local_addr();
    let (stop_uas, stopped) = tokio::sync::watch::channel(false);
    let uas = tokio::spawn(server.run(Some(stopped)));
    let config = LoadConfig {
        pattern: Pattern::Steps {
            start: 20.0,
            end: 40.0,
            step: 20.0,
            dwell: Duration::from_secs(1),
            pause: Duration::from_millis(300),
        },
        max_calls: None,
        report_every: Duration::from_millis(500),
        ..uac_to(uas_addr.port())
    };
    let report = sigkit_loadgen::run(config, None).await.unwrap();
    let _ = stop_uas.send(true);
    let _ = uas.await;
    let steps: Vec<(f64, u64, u64)> = report.steps.iter().map(|s| (s.offered_cps, s.attempted, s.successful)).collect();
    assert_eq!(steps, vec![(20.0, 20, 20), (40.0, 40, 40)], "{:?}", report.steps);
    assert_eq!(report.summary.successful_calls, 60);
    assert!(report.intervals.len() >= 4, "an interval every 0.5 s");
    let total: u64 = report.intervals.iter().map(|i| i.successful).sum();
    assert_eq!(total, 60, "the intervals add up to the run");
}

/// Each step's rate is over its own duration: the calls of the last step
/// end after the load stopped (each is held 1.5 s), and the time the run
/// waits for them is the tail, reported apart, not part of the last step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steps_rate_is_over_its_own_duration_and_the_tail_is_apart() {
    let server = Prepared::bind(our_uas(Transport::Udp, 1_000_000)).await.unwrap();
    let uas_addr = server.local_addr();
    let (stop_uas, stopped) = tokio::sync::watch::channel(false);
    let uas = tokio::spawn(server.run(Some(stopped)));
    let mut config = LoadConfig {
        pattern: Pattern::Steps {
            start: 50.0,
            end: 100.0,
            step: 50.0,
            dwell: Duration::from_secs(1),
            pause: Duration::ZERO,
        },
        max_calls: None,
        ..uac_to(uas_addr.port())
    };
    config.engine.hold = Duration::from_millis(1500);
    let report = sigkit_loadgen::run(config, None).await.unwrap();
    let _ = stop_uas.send(true);
    let _ = uas.await;
    let steps = &report.steps;
    assert_eq!(steps.iter().map(|s| (s.attempted, s.successful)).collect::<Vec<_>>(), [(50, 50), (100, 100)]);
    for (s, nominal_end) in steps.iter().zip([1.0, 2.0]) {
        assert!((s.end_s - nominal_end).abs() < 0.05, "step {} ends at {} s: {s:?}", s.step, s.end_s);
        assert!((s.duration_s - 1.0).abs() < 0.05, "{s:?}");
        // Every call of the step succeeded: its rate is the offered one
        // (the run's 1.5 s tail counted in, the last would be 40 calls/s).
        assert!((s.calls_per_s - s.offered_cps).abs() < s.offered_cps * 0.05, "{s:?}");
    }
    let tail = steps[1].tail.expect("the last step carries the run's tail");
    assert!(steps[0].tail.is_none());
    assert!((tail.start_s - steps[1].end_s).abs() < 1e-9);
    assert!(tail.end_s - tail.start_s > 1.0, "the run waited for the held calls: {tail:?}");
    // Held 1.5 s, every call of the last step and the second half of the
    // first one finished after the load ended.
    assert!(tail.successful >= 100 && tail.successful <= 150, "{tail:?}");
    assert_eq!((tail.failed, tail.unfinished), (0, 0));
}

/// A peer that never answers: every call fails on a timer after its
/// INVITE was sent again; each step counts its own calls' timeouts
/// and retransmissions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_step_counts_its_own_timeouts_and_retransmissions() {
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut config = LoadConfig {
        pattern: Pattern::Steps {
            start: 10.0,
            end: 20.0,
            step: 10.0,
            dwell: Duration::from_millis(500),
            pause: Duration::ZERO,
        },
        max_calls: None,
        ..uac_to(silent.local_addr().unwrap().port())
    };
    config.engine.timers = sigkit_loadgen::Timers {
        t1: Duration::from_millis(10),
        t2: Duration::from_millis(40),
        t4: Duration::from_millis(50),
    };
    let report = sigkit_loadgen::run(config, None).await.unwrap();
    drop(silent);
    let steps = &report.steps;
    assert_eq!(steps.iter().map(|s| s.attempted).collect::<Vec<_>>(), [5, 10], "{steps:?}");
    for s in steps {
        assert_eq!((s.successful, s.failed, s.timeouts), (0, s.attempted, s.attempted), "{s:?}");
        assert_eq!(s.failures.get("invite_timeout"), Some(&s.attempted), "{s:?}");
        // Each call's INVITE was sent again before Timer B ended it.
        assert!(s.retransmissions >= s.attempted, "{s:?}");
        assert_eq!((s.failed_5xx, s.unexpected), (0, 0));
    }
    let total: u64 = steps.iter().map(|s| s.retransmissions).sum();
    assert_eq!(total, report.summary.retransmissions, "the steps' retransmissions add up to the run's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigcomp_through_sigkit_proxy_and_kamailio() {
    sigcomp_through_proxy_and_kamailio("sigcomp", Transport::Udp).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigcomp_over_tcp_through_sigkit_proxy_and_kamailio() {
    sigcomp_through_proxy_and_kamailio("sigcomp-tcp", Transport::Tcp).await;
}

/// UAC (SigComp over `transport`) → sigkit proxy → Kamailio
/// (record-routing) → our UAS, the last two hops over UDP.
async fn sigcomp_through_proxy_and_kamailio(name: &str, transport: Transport) {
    require("kamailio");
    let dir = scratch(name);
    let kport = free_port();
    let _k = kamailio(&dir, kport);
    let server = Prepared::bind(our_uas(Transport::Udp, CALLS)).await.unwrap();
    let uas_addr = server.local_addr();
    let uas = tokio::spawn(server.run(None));
    let proxy_port = free_port();
    let proxy = sigkit_proxy::runtime::start(sigkit_proxy::ProxyConfig {
        listen: vec![sigkit_proxy::config::TransportAddr {
            transport: match transport {
                Transport::Udp => sigkit_proxy::SipTransport::Udp,
                Transport::Tcp => sigkit_proxy::SipTransport::Tcp,
            },
            addr: localhost(proxy_port),
        }],
        upstream: Some(
            sigkit_proxy::config::TransportAddr { transport: sigkit_proxy::SipTransport::Udp, addr: localhost(kport) }
                .into(),
        ),
        upstream_local: Some(localhost(0)),
        threads: 1,
        ..sigkit_proxy::ProxyConfig::default()
    })
    .await
    .unwrap();
    let mut config = LoadConfig { sigcomp: true, ..uac_to(uas_addr.port()) };
    config.engine.next_hop = Some(proxy.terminal_addrs[0].1);
    config.engine.transport = transport;
    let report = sigkit_loadgen::run(config, None).await;
    proxy.stop().await;
    let s = report.unwrap().summary;
    assert_eq!((s.successful_calls, s.failed_calls), (CALLS, 0), "{s:?}");
    let c = s.sigcomp.unwrap();
    assert_eq!(c.compressed, 3 * CALLS + s.retransmissions + c.resent, "INVITE, ACK, BYE compressed: {c:?}");
    assert!(c.decompressed >= 3 * CALLS, "the proxy compressed its answers: {c:?}");
    assert!(c.bytes_after < c.bytes_before, "{c:?}");
    assert_eq!(c.failures, 0, "{c:?}");
    match transport {
        Transport::Udp => assert_eq!((c.nacks_received, c.resent), (0, 0), "{c:?}"),
        // The proxy keeps no state of a terminal that has not registered
        // (RFC 5049 §6), and over TCP a state is used as soon as it is
        // sent: the proxy NACKs the message that uses it, and the
        // generator sends it again with none.
        Transport::Tcp => {
            assert_eq!(s.retransmissions, 0, "SIP sends nothing again over TCP");
            assert_eq!(c.resent, c.nacks_received, "{c:?}");
        }
    }
    assert_eq!(uas.await.unwrap().unwrap().summary.successful_calls, CALLS);
    assert_eq!(kamailio_saw(&dir, "BYE"), CALLS, "the BYEs followed the route set through Kamailio");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigcomp_over_tcp_between_our_uac_and_uas() {
    let server = Prepared::bind(LoadConfig { sigcomp: true, ..our_uas(Transport::Tcp, CALLS) }).await.unwrap();
    let addr = server.local_addr();
    let ours = tokio::spawn(server.run(None));
    let mut config = LoadConfig { sigcomp: true, ..uac_to(addr.port()) };
    config.engine.transport = Transport::Tcp;
    let s = sigkit_loadgen::run(config, None).await.unwrap().summary;
    assert_eq!((s.successful_calls, s.failed_calls, s.transport), (CALLS, 0, "tcp"), "{s:?}");
    assert_eq!(s.retransmissions, 0, "{s:?}");
    let u = ours.await.unwrap().unwrap().summary;
    assert_eq!((u.successful_calls, u.failed_calls), (CALLS, 0), "{u:?}");
    // INVITE, ACK, BYE one way; 180, 200, 200 the other; every one
    // compressed, framed, deframed and decompressed.
    let (c, d) = (s.sigcomp.unwrap(), u.sigcomp.unwrap());
    assert_eq!((c.compressed, d.decompressed, d.plain_received), (3 * CALLS, 3 * CALLS, 0), "{c:?} {d:?}");
    assert_eq!((d.compressed, c.decompressed, c.plain_received), (3 * CALLS, 3 * CALLS, 0), "{c:?} {d:?}");
    assert_eq!((c.failures, d.failures, c.nacks_received, d.nacks_received), (0, 0, 0, 0), "{c:?} {d:?}");
    // Dynamic compression over one reliable connection: states are used
    // as soon as they are sent, so the calls after the first cost a
    // fraction of their plain size.
    assert!(c.bytes_after * 4 < c.bytes_before, "{c:?}");
    assert!(d.bytes_after * 3 < d.bytes_before, "{d:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corpus_flow_replays_over_udp_with_sigcomp_on_both_sides() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/3gpp-video-call");
    let (ue, pcscf) = sigkit_loadgen::corpus::flow_scenarios(&dir).unwrap();
    let server =
        Prepared::bind(LoadConfig { scenario: Some(Arc::new(pcscf)), sigcomp: true, ..our_uas(Transport::Udp, CALLS) })
            .await
            .unwrap();
    let addr = server.local_addr();
    let pcscf = tokio::spawn(server.run(None));
    let config = LoadConfig { scenario: Some(Arc::new(ue)), sigcomp: true, ..uac_to(addr.port()) };
    let s = sigkit_loadgen::run(config, None).await.unwrap().summary;
    assert_eq!((s.successful_calls, s.failed_calls), (CALLS, 0), "{s:?}");
    let p = pcscf.await.unwrap().unwrap().summary;
    assert_eq!((p.successful_calls, p.failed_calls), (CALLS, 0), "{p:?}");
    // The flow's 6 UE messages and 8 P-CSCF messages per call, compressed
    // by one side and decompressed by the other.
    let (c, d) = (s.sigcomp.unwrap(), p.sigcomp.unwrap());
    assert_eq!((c.compressed, d.decompressed), (6 * CALLS, 6 * CALLS), "{c:?} {d:?}");
    assert_eq!((d.compressed, c.decompressed), (8 * CALLS, 8 * CALLS), "{c:?} {d:?}");
    assert!(c.bytes_after * 4 < c.bytes_before, "dynamic compression over the calls: {c:?}");
}

/// A server of limited capacity stands behind a UAS speaking plain SIP
/// over UDP; anywhere else it is refused before anything is bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_model_is_refused_where_it_cannot_work() {
    let model = Some(ServiceModel::default());
    let uac = LoadConfig { service_model: model.clone(), ..uac_to(5060) };
    let e = Prepared::bind(uac).await.err().expect("a UAC behind a service model is refused");
    assert!(matches!(e, LoadError::ServiceOnClient), "{e}");
    let uas = LoadConfig { service_model: model, ..our_uas(Transport::Tcp, CALLS) };
    let e = Prepared::bind(uas).await.err().expect("a TCP UAS behind a service model is refused");
    assert!(matches!(e, LoadError::ServiceNotPlainUdp), "{e}");
    assert_eq!(e.to_string(), "service model: plain SIP over UDP only");
}
