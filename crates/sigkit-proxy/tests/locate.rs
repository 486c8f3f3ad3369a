//! Locating the upstream by RFC 3263 §4 against a DNS server of the
//! test's own (tests/dns_responder), the resolver pointed at it: NAPTR,
//! then SRV, then A; each step skipped where the URI says so; and a name
//! the DNS does not know reported as that. The names are under `.test`,
//! kept for testing (RFC 6761 §6.2).
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod dns_responder;

use std::net::{Ipv4Addr, SocketAddr};

use dns_responder::{a, naptr, srv, DnsResponder};
use hickory_proto::rr::RecordType;
use sigkit_proxy::config::TransportAddr;
use sigkit_proxy::locate::{Locator, Upstream};
use sigkit_proxy::SipTransport;

const LOCAL: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// The zone: `sbc` has NAPTR records (a TCP one preferred, which the
/// proxy cannot use, and a UDP one) pointing to a pool's SRV records;
/// `srv-only` has SRV records and no NAPTR; `plain` an address only;
/// `dead`'s first SRV target has no address.
fn zone() -> Vec<dns_responder::Record> {
    vec![
        naptr("sbc.sigkit.test.", 5, 10, "SIP+D2T", "_sip._tcp.pool.sigkit.test."),
        naptr("sbc.sigkit.test.", 10, 10, "SIP+D2U", "_sip._udp.pool.sigkit.test."),
        srv("_sip._udp.pool.sigkit.test.", 20, 0, 5999, "b.sigkit.test."),
        srv("_sip._udp.pool.sigkit.test.", 10, 0, 5071, "a.sigkit.test."),
        srv("_sip._udp.srv-only.sigkit.test.", 0, 0, 5072, "a.sigkit.test."),
        srv("_sip._udp.dead.sigkit.test.", 0, 0, 5073, "gone.sigkit.test."),
        srv("_sip._udp.dead.sigkit.test.", 1, 0, 5074, "a.sigkit.test."),
        a("a.sigkit.test.", LOCAL),
        a("b.sigkit.test.", Ipv4Addr::new(127, 0, 0, 2)),
        a("plain.sigkit.test.", LOCAL),
    ]
}

fn udp(port: u16) -> TransportAddr {
    TransportAddr { transport: SipTransport::Udp, addr: SocketAddr::from((LOCAL, port)) }
}

async fn locate(dns: &DnsResponder, text: &str) -> Result<TransportAddr, String> {
    let upstream: Upstream = text.parse().unwrap();
    Locator::new(Some(dns.addr)).unwrap().locate(&upstream).await.map_err(|e| e.to_string())
}

#[tokio::test]
async fn naptr_then_srv_then_a() {
    let dns = DnsResponder::start(zone());
    assert_eq!(locate(&dns, "sip:sbc.sigkit.test").await, Ok(udp(5071)));
    let asked = dns.queries();
    assert_eq!(asked[0], ("sbc.sigkit.test".into(), RecordType::NAPTR), "{asked:?}");
    assert!(asked.contains(&("_sip._udp.pool.sigkit.test".into(), RecordType::SRV)), "{asked:?}");
    assert!(!asked.iter().any(|(n, _)| n.contains("_tcp")), "the TCP record is not followed: {asked:?}");
    assert!(asked.contains(&("a.sigkit.test".into(), RecordType::A)), "{asked:?}");
    assert!(!asked.iter().any(|(n, _)| n == "b.sigkit.test"), "the lower priority is not needed: {asked:?}");
}

#[tokio::test]
async fn without_naptr_the_udp_srv_records_are_looked_up() {
    let dns = DnsResponder::start(zone());
    // A bare host name is the SIP URI of that host.
    assert_eq!(locate(&dns, "srv-only.sigkit.test").await, Ok(udp(5072)));
    let asked = dns.queries();
    assert_eq!(asked[0], ("srv-only.sigkit.test".into(), RecordType::NAPTR), "{asked:?}");
    assert_eq!(asked[1], ("_sip._udp.srv-only.sigkit.test".into(), RecordType::SRV), "{asked:?}");
}

/// §4.1: a URI that names its transport needs no NAPTR record.
#[tokio::test]
async fn a_transport_parameter_skips_naptr() {
    let dns = DnsResponder::start(zone());
    assert_eq!(locate(&dns, "sip:srv-only.sigkit.test;transport=udp").await, Ok(udp(5072)));
    assert!(!dns.asked(RecordType::NAPTR), "{:?}", dns.queries());
}

/// §4.2: a port in the URI: the host's address, no NAPTR and no SRV.
#[tokio::test]
async fn a_port_skips_naptr_and_srv() {
    let dns = DnsResponder::start(zone());
    assert_eq!(locate(&dns, "sip:a.sigkit.test:5080").await, Ok(udp(5080)));
    assert_eq!(locate(&dns, "udp:a.sigkit.test:5081").await, Ok(udp(5081)));
    assert!(!dns.asked(RecordType::NAPTR) && !dns.asked(RecordType::SRV), "{:?}", dns.queries());
}

/// §4.2: no SRV record: the host's address on port 5060.
#[tokio::test]
async fn without_srv_records_the_address_on_5060() {
    let dns = DnsResponder::start(zone());
    assert_eq!(locate(&dns, "sip:plain.sigkit.test").await, Ok(udp(5060)));
    assert!(dns.asked(RecordType::SRV), "{:?}", dns.queries());
}

/// §4.3: a target without an address is passed over for the next.
#[tokio::test]
async fn an_srv_target_without_an_address_gives_way_to_the_next() {
    let dns = DnsResponder::start(zone());
    assert_eq!(locate(&dns, "sip:dead.sigkit.test").await, Ok(udp(5074)));
}

#[tokio::test]
async fn an_unknown_name_is_a_resolution_failure() {
    let dns = DnsResponder::start(zone());
    let e = locate(&dns, "sip:missing.sigkit.test").await.unwrap_err();
    assert!(e.starts_with("cannot resolve missing.sigkit.test: "), "{e}");
    // RFC 6761 §6.4: a name under .invalid is refused without a query.
    let e = locate(&dns, "sip:upstream.invalid").await.unwrap_err();
    assert!(e.starts_with("cannot resolve upstream.invalid: no such name"), "{e}");
    assert!(!dns.queries().iter().any(|(n, _)| n.ends_with(".invalid")), "{:?}", dns.queries());
}

/// A numeric host needs no lookup at all.
#[tokio::test]
async fn an_address_is_used_as_it_is() {
    let dns = DnsResponder::start(zone());
    assert_eq!(locate(&dns, "sip:127.0.0.1").await, Ok(udp(5060)));
    assert_eq!(locate(&dns, "sip:127.0.0.1:5075;transport=udp").await, Ok(udp(5075)));
    assert_eq!(locate(&dns, "udp:127.0.0.1:5076").await, Ok(udp(5076)));
    assert!(dns.queries().is_empty(), "{:?}", dns.queries());
}
