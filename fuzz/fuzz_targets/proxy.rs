#![no_main]
//! sigkit-proxy: the input as a run of datagrams from terminals and from
//! the upstream, each `[from, len_hi, len_lo, bytes…]` (`from`: bit 7 set
//! for the upstream; else the low bits pick one of 16 terminal addresses
//! and ports), with the clock moving on between them, fed to the sans-IO
//! `Proxy` with small caps. Nothing may panic, and every cap holds after
//! every datagram: flows, held REGISTERs (overall, per source, state
//! bytes), registrations and compartments.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use sigkit_proxy::config::{ProxyConfig, SipTransport, TransportAddr};
use sigkit_proxy::core::{Encoding, LocalAddrs};
use sigkit_proxy::{Peer, Proxy};

fn config() -> ProxyConfig {
    let mut c = ProxyConfig::default();
    c.listen = vec![TransportAddr { transport: SipTransport::Udp, addr: SocketAddr::from(([127, 0, 0, 1], 5060)) }];
    c.upstream =
        Some(TransportAddr { transport: SipTransport::Udp, addr: SocketAddr::from(([127, 0, 0, 1], 5070)) }.into());
    c.max_flows = 8;
    c.max_pending_registers = 4;
    c.max_pending_registers_per_source = 2;
    c.max_pending_state_bytes = 60_000;
    c.max_registrations = 4;
    c.sigcomp.max_compartments = 4;
    c.sigcomp.max_state_bytes = 64 * 1024;
    c
}

fuzz_target!(|data: &[u8]| {
    let c = config();
    let addrs = LocalAddrs {
        terminal: vec![(SipTransport::Udp, SocketAddr::from(([127, 0, 0, 1], 5060)))],
        upstream: SocketAddr::from(([127, 0, 0, 1], 5061)),
        upstream_peer: SocketAddr::from(([127, 0, 0, 1], 5070)),
    };
    let Ok(mut proxy) = Proxy::new(&c, addrs.clone()) else { return };
    let mut now = Instant::now();
    let mut rest = data;
    while let [from, hi, lo, tail @ ..] = rest {
        let len = (usize::from(*hi) << 8 | usize::from(*lo)).min(tail.len());
        let (bytes, next) = tail.split_at(len);
        rest = next;
        now += Duration::from_millis(u64::from(*lo) * 40);
        if bytes.is_empty() {
            continue;
        }
        if from & 0x80 != 0 {
            let peer = Peer {
                transport: SipTransport::Udp,
                addr: addrs.upstream_peer,
                local: Some(addrs.upstream),
                conn: None,
            };
            proxy.from_upstream(now, peer, bytes);
        } else {
            let n = from & 0x0f;
            let addr = SocketAddr::from(([127, 0, 0, 1 + (n & 3)], 40_000 + u16::from(n)));
            let peer = Peer { transport: SipTransport::Udp, addr, local: Some(addrs.terminal[0].1), conn: None };
            proxy.from_terminal(now, peer, bytes, Encoding::of_first_byte(bytes[0]));
        }
        proxy.handle_timeout(now);
        while proxy.poll_transmit().is_some() {}
        let s = proxy.snapshot();
        assert!(s.flows <= c.max_flows, "{} flows", s.flows);
        assert!(s.flow_identifiers <= s.flows);
        assert!(s.pending_registers <= c.max_pending_registers);
        assert!(s.pending_state_bytes <= c.max_pending_state_bytes);
        assert!(s.registered <= c.max_registrations);
        assert!(s.endpoint.compartments <= c.sigcomp.max_compartments);
    }
});
