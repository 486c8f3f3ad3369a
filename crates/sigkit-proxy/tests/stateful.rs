//! The transaction-stateful mode and the SIP overload thesis's detectors
//! and handlers in it, over real UDP on 127.0.0.1: a plain-SIP terminal
//! played by the test, `sigkit proxy` with `stateful = true`, and an
//! upstream played by the test that records what reaches it and answers
//! as each test tells it (not at all, late, or with a Via signal).

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sigkit_proxy::overload::{Detector, Handler, OverloadConfig};
use sigkit_sip::Message;
use support::*;
use tokio::net::UdpSocket;

/// How the test upstream answers a new request (by its proxy branch; a
/// retransmission is recorded but never answered again).
#[derive(Clone, Debug)]
enum Mode {
    Silent,
    /// 200 OK (or `code` for INVITE) after this long.
    Answer {
        delay: Duration,
        invite_code: u16,
        via_params: &'static str,
    },
}

struct Upstream {
    port: u16,
    mode: Arc<Mutex<Mode>>,
    /// Every request that arrived: when, its Call-ID, its method.
    seen: Arc<Mutex<Vec<(Instant, String, String)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Upstream {
    async fn start(mode: Mode) -> Upstream {
        let socket = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let port = socket.local_addr().unwrap().port();
        let mode = Arc::new(Mutex::new(mode));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (m, s) = (mode.clone(), seen.clone());
        let task = tokio::spawn(async move {
            let mut buf = vec![0u8; 65536];
            let mut answered = std::collections::HashSet::new();
            while let Ok((n, from)) = socket.recv_from(&mut buf).await {
                let bytes = buf[..n].to_vec();
                let Ok(msg) = Message::parse(&bytes) else { continue };
                if !msg.is_request() {
                    continue;
                }
                let method = msg.method().unwrap_or("").to_string();
                s.lock().unwrap().push((Instant::now(), msg.call_id().unwrap_or("").to_string(), method.clone()));
                let branch = msg.top_via().ok().and_then(|v| v.branch()).unwrap_or("").to_string();
                let mode = m.lock().unwrap().clone();
                let Mode::Answer { delay, invite_code, via_params } = mode else { continue };
                if method == "ACK" || !answered.insert(branch) {
                    continue;
                }
                let code = if method == "INVITE" { invite_code } else { 200 };
                let socket = socket.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let msg = Message::parse(&bytes).unwrap();
                    let reply = sigkit_sip::proxy::build_response(&msg, code, "Answer", Some("up"), &[]).unwrap();
                    let mut text = String::from_utf8(reply).unwrap();
                    if !via_params.is_empty() {
                        // The signal goes in the proxy's Via, the topmost
                        // (thesis Listing 4.3).
                        let top = msg.top_via().unwrap().text;
                        text = text.replacen(top, &format!("{top}{via_params}"), 1);
                    }
                    let _ = socket.send_to(text.as_bytes(), from).await;
                });
            }
        });
        Upstream { port, mode, seen, task }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// When requests of `call_id` arrived, relative to the first.
    fn arrivals(&self, call_id: &str, method: &str) -> Vec<f64> {
        let seen = self.seen.lock().unwrap();
        let times: Vec<Instant> =
            seen.iter().filter(|(_, c, m)| c == call_id && m == method).map(|(t, _, _)| *t).collect();
        times.iter().map(|t| t.duration_since(times[0]).as_secs_f64()).collect()
    }
}

/// Every datagram `socket` receives until it is quiet for `quiet`.
async fn drain(socket: &UdpSocket, quiet: Duration) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 65536];
    let mut got = Vec::new();
    while let Ok(Ok((n, _))) = tokio::time::timeout(quiet, socket.recv_from(&mut buf)).await {
        got.push(buf[..n].to_vec());
    }
    got
}

/// (status, Call-ID) of each response.
fn responses(got: &[Vec<u8>]) -> Vec<(u16, String)> {
    got.iter()
        .filter_map(|b| {
            let m = Message::parse(b).ok()?;
            Some((m.status_code()?, m.call_id().ok()?.to_string()))
        })
        .collect()
}

async fn stateful_proxy(upstream: u16, overload: OverloadConfig) -> sigkit_proxy::runtime::Running {
    start_proxy(|port| {
        let mut c = proxy_config(port, upstream);
        c.threads = 1;
        c.stateful = true;
        c.overload = overload.clone();
        c
    })
    .await
}

fn assert_schedule(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: transmissions at {got:?}, want {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 0.12, "{what}: transmissions at {got:?}, want {want:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateful_mode_absorbs_retransmissions_and_retransmits_to_a_silent_upstream_on_the_rfc_3261_schedule() {
    let upstream = Upstream::start(Mode::Silent).await;
    let proxy = stateful_proxy(upstream.port, OverloadConfig::default()).await;
    let terminal = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = terminal.local_addr().unwrap().port();
    let to = proxy.terminal_addrs[0].1;
    let options = request("OPTIONS", "st-options", port, "o1");
    let invite = request("INVITE", "st-invite", port, "i1");
    terminal.send_to(&options, to).await.unwrap();
    terminal.send_to(&invite, to).await.unwrap();
    // The terminal's own retransmissions (its Timer E and A) end at the
    // proxy's server transactions.
    tokio::time::sleep(Duration::from_millis(250)).await;
    terminal.send_to(&options, to).await.unwrap();
    terminal.send_to(&invite, to).await.unwrap();
    let early = drain(&terminal, Duration::from_millis(3950)).await;
    // RFC 3261 §17.1.2.2 Timer E: T1, 2·T1, 4·T1 (capped at T2 = 4 s);
    // §17.1.1.2 Timer A: T1, doubling; both from T1 = 500 ms.
    assert_schedule(&upstream.arrivals("st-options", "OPTIONS"), &[0.0, 0.5, 1.5, 3.5], "OPTIONS (Timer E)");
    assert_schedule(&upstream.arrivals("st-invite", "INVITE"), &[0.0, 0.5, 1.5, 3.5], "INVITE (Timer A)");
    // §17.2.1: the INVITE is answered 100 Trying at once, and again on
    // the terminal's retransmission; a non-INVITE gets nothing yet.
    let r = responses(&early);
    assert_eq!(r.iter().filter(|(c, id)| *c == 100 && id == "st-invite").count(), 2, "{r:?}");
    assert!(!r.iter().any(|(_, id)| id == "st-options"), "{r:?}");

    // The upstream now answers: 200 to OPTIONS, 486 to INVITE.
    // They come with the next retransmissions, at 7.5 s.
    upstream.set(Mode::Answer { delay: Duration::ZERO, invite_code: 486, via_params: "" });
    let mut r = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(6);
    while Instant::now() < deadline && !(r.iter().any(|(c, _)| *c == 200) && r.iter().any(|(c, _)| *c == 486)) {
        r.extend(responses(&drain(&terminal, Duration::from_millis(50)).await));
    }
    // The terminal acknowledges the 486; the ACK ends at the proxy.
    terminal.send_to(&request("ACK", "st-invite", port, "i1"), to).await.unwrap();
    r.extend(responses(&drain(&terminal, Duration::from_millis(1000)).await));
    assert_eq!(r.iter().filter(|(c, id)| *c == 200 && id == "st-options").count(), 1, "{r:?}");
    assert_eq!(r.iter().filter(|(c, id)| *c == 486 && id == "st-invite").count(), 1, "{r:?}");
    // §17.1.1.3: the proxy acknowledged the 486 itself.
    assert_eq!(upstream.arrivals("st-invite", "ACK").len(), 1);
    // A retransmission of the answered OPTIONS gets the 200 again from
    // the proxy (§17.2.2, Completed), and nothing more reaches the upstream.
    let before = upstream.arrivals("st-options", "OPTIONS").len();
    terminal.send_to(&options, to).await.unwrap();
    let again = responses(&drain(&terminal, Duration::from_millis(400)).await);
    assert_eq!(again, vec![(200, "st-options".to_string())]);
    assert_eq!(upstream.arrivals("st-options", "OPTIONS").len(), before);

    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    assert_eq!(metric(&metrics, "sigkit_proxy_transactions_total"), Some(2.0), "{metrics}");
    assert_eq!(
        metric(&metrics, r#"sigkit_proxy_retransmissions_absorbed_total{side="terminal"}"#),
        Some(3.0),
        "{metrics}"
    );
    assert!(metric(&metrics, "sigkit_proxy_upstream_retransmissions_total").unwrap() >= 6.0, "{metrics}");
    proxy.stop().await;
    upstream.task.abort();
}

/// Sends a new OPTIONS every `every` for `total` from `terminal`, and
/// returns the responses that came meanwhile.
async fn offer(terminal: &UdpSocket, to: SocketAddr, prefix: &str, every: Duration, total: Duration) -> Vec<Vec<u8>> {
    let port = terminal.local_addr().unwrap().port();
    let end = Instant::now() + total;
    let mut got = Vec::new();
    let mut n = 0;
    while Instant::now() < end {
        n += 1;
        terminal
            .send_to(&request("OPTIONS", &format!("{prefix}-{n}"), port, &format!("{prefix}{n}")), to)
            .await
            .unwrap();
        got.extend(drain(terminal, every).await);
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d1_and_h1_raise_t1_toward_a_slow_upstream_and_the_metric_shows_it() {
    let upstream =
        Upstream::start(Mode::Answer { delay: Duration::from_millis(800), invite_code: 200, via_params: "" }).await;
    let overload = OverloadConfig { handler: Handler::RaiseT1, detector: Detector::D1, ..OverloadConfig::default() };
    let proxy = stateful_proxy(upstream.port, overload).await;
    let terminal = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let to = proxy.terminal_addrs[0].1;
    let before = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    assert_eq!(metric(&before, "sigkit_proxy_overload_t1_seconds"), Some(0.5), "{before}");
    let got = offer(&terminal, to, "slow", Duration::from_millis(100), Duration::from_secs(3)).await;
    assert!(responses(&got).iter().any(|(c, _)| *c == 200), "the slow upstream's answers come through");
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    assert_eq!(metric(&metrics, "sigkit_proxy_overload_delay_alarm"), Some(1.0), "{metrics}");
    assert!(metric(&metrics, "sigkit_proxy_overload_delay_p95_seconds").unwrap() > 0.7, "{metrics}");
    assert_eq!(metric(&metrics, "sigkit_proxy_overload_t1_seconds"), Some(1.0), "{metrics}");
    // A new transaction toward the upstream, now silent, is sent again
    // after the raised T1, 1 s, not 0.5 s.
    upstream.set(Mode::Silent);
    let port = terminal.local_addr().unwrap().port();
    terminal.send_to(&request("OPTIONS", "probe", port, "probe"), to).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_schedule(&upstream.arrivals("probe", "OPTIONS"), &[0.0, 1.0], "OPTIONS after H1");
    proxy.stop().await;
    upstream.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstreams_oc_t1_in_the_via_sets_t1_toward_it() {
    let via_params = ";oc_t1=2000;oc_t1_validity=60000";
    let upstream = Upstream::start(Mode::Answer { delay: Duration::ZERO, invite_code: 200, via_params }).await;
    let overload = OverloadConfig { handler: Handler::RaiseT1, detector: Detector::Via, ..OverloadConfig::default() };
    let proxy = stateful_proxy(upstream.port, overload).await;
    let terminal = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let to = proxy.terminal_addrs[0].1;
    let got = offer(&terminal, to, "sig", Duration::from_millis(200), Duration::from_millis(400)).await;
    assert!(responses(&got).iter().any(|(c, _)| *c == 200));
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    assert_eq!(metric(&metrics, "sigkit_proxy_overload_t1_seconds"), Some(2.0), "{metrics}");
    upstream.set(Mode::Silent);
    let port = terminal.local_addr().unwrap().port();
    terminal.send_to(&request("OPTIONS", "probe", port, "probe"), to).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2400)).await;
    assert_schedule(&upstream.arrivals("probe", "OPTIONS"), &[0.0, 2.0], "OPTIONS after oc_t1=2000");
    proxy.stop().await;
    upstream.task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d2_alarms_under_a_surge_of_pending_transactions_and_h2_then_sheds() {
    let upstream = Upstream::start(Mode::Answer { delay: Duration::ZERO, invite_code: 200, via_params: "" }).await;
    let overload = OverloadConfig {
        handler: Handler::PendingCap,
        detector: Detector::D2,
        max_pending: 100_000,
        ..OverloadConfig::default()
    };
    let proxy = stateful_proxy(upstream.port, overload).await;
    let terminal = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let to = proxy.terminal_addrs[0].1;
    // 20 requests/s answered at once: nothing stays pending, κ stays near 0.
    let calm = offer(&terminal, to, "calm", Duration::from_millis(50), Duration::from_secs(4)).await;
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    let alarms = r#"sigkit_proxy_overload_d2_alarms_total{test="variance"}"#;
    assert_eq!(metric(&metrics, "sigkit_proxy_overload_d2_alarm"), Some(0.0), "{metrics}");
    assert_eq!(metric(&metrics, alarms), Some(0.0), "{metrics}");
    assert!(!responses(&calm).iter().any(|(c, _)| *c == 503));
    // The upstream stops answering while 50 requests/s arrive: the
    // pending transactions rise by 50 a second at a steady rate, κ jumps.
    upstream.set(Mode::Silent);
    let surge = offer(&terminal, to, "surge", Duration::from_millis(20), Duration::from_secs(4)).await;
    let metrics = http_get(proxy.metrics_addr.unwrap(), "/metrics").await;
    // The alarm flips back once the 503s have cut the rate of new
    // requests (κ of a falling rate at a flat P is 0), so the count of
    // alarms is what shows it fired.
    assert!(metric(&metrics, alarms).unwrap() >= 1.0, "{metrics}");
    let shed = responses(&surge).iter().filter(|(c, _)| *c == 503).count();
    assert!(shed > 0, "H2 driven by D2 answers 503 once it alarms");
    assert!(metric(&metrics, "sigkit_proxy_overload_pending").unwrap() > 50.0, "{metrics}");
    proxy.stop().await;
    upstream.task.abort();
}
