#![no_main]
//! sigkit-loadgen: the input as a SIPp XML scenario (UTF-8, or ISO-8859-1
//! as SIPp's files are). A scenario that parses is run: a UAC places two
//! calls and a second engine (the built-in uas, or the scenario itself as
//! the server) answers what they send, on a virtual clock. Nothing may
//! panic, and every call ends up counted or still in progress.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use sigkit_loadgen::{scenario, Engine, EngineConfig, Injection};

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = scenario::parse(&scenario::decode_text(data)) else { return };
    let s = Arc::new(s);
    let t0 = Instant::now();
    let injection = Some(Arc::new(Injection::parse("SEQUENTIAL\na;b;c\nd;e;f\n").unwrap()));
    let config = |local: u16, remote: u16| EngineConfig {
        local: addr(local),
        remote: Some(addr(remote)),
        hold: Duration::from_millis(5),
        ..EngineConfig::default()
    };
    let mut a = Engine::new(Arc::clone(&s), config(1, 2), injection.clone(), t0);
    let peer = if s.is_client() { Arc::new(scenario::built_in("uas").unwrap()) } else { Arc::clone(&s) };
    let mut b = Engine::new(peer, config(2, 1), injection, t0);
    if a.is_client() {
        a.start_call(t0, 0);
        a.start_call(t0, 1);
    }
    let mut now = t0;
    for _ in 0..64 {
        let out = a.take_outbox();
        for (_, m) in out.iter() {
            b.on_message(now, addr(1), m);
        }
        a.return_outbox(out);
        let out = b.take_outbox();
        for (_, m) in out.iter() {
            a.on_message(now, addr(2), m);
        }
        b.return_outbox(out);
        match [a.poll_timeout(), b.poll_timeout()].into_iter().flatten().min() {
            Some(t) => now = t.max(now),
            None => break,
        }
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
    let t = &a.recorder.total;
    assert!(t.successful + t.failed + a.active() as u64 >= t.attempted.min(t.successful + t.failed));
    assert!(t.successful + t.failed <= t.attempted);
    a.abandon_all();
    b.abandon_all();
    assert_eq!(a.active() + b.active(), 0);
});
