//! Where to send: a `HOST:PORT` whose host may be a name, resolved to its
//! address (A/AAAA by the system's resolver), and the proxy's upstream, a
//! SIP URI or host located by RFC 3263 (NAPTR, SRV, then A/AAAA, with
//! hickory-resolver); each failure said as what it is, a text that is not
//! an address or a name the DNS does not know.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::str::FromStr;

use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::proto::rr::{RData, RecordType};
use hickory_resolver::proto::xfer::Protocol;
use hickory_resolver::{ResolveError, TokioResolver};

use crate::config::{SipTransport, TransportAddr, TransportAddrError};

/// The words a resolution failure's message starts with.
pub const CANNOT_RESOLVE: &str = "cannot resolve ";

/// Why a `HOST:PORT` gave no address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostPortError {
    /// The text (held here) is not `HOST:PORT`: no port, a port that is
    /// not a number up to 65535, an empty host or one that is neither an
    /// IP address (IPv6 in brackets) nor a host name.
    #[error("{0:?}: not a host:port")]
    Form(String),
    /// The host is a name and resolving it failed.
    #[error("{}{name}: {reason}", CANNOT_RESOLVE)]
    Resolve {
        /// The name.
        name: String,
        /// What the resolver said.
        reason: String,
    },
}

impl HostPortError {
    /// Whether this is a DNS failure rather than a malformed text.
    pub fn is_resolution(&self) -> bool {
        matches!(self, HostPortError::Resolve { .. })
    }
}

/// The host and port of `HOST:PORT` (`[V6]:PORT` for an IPv6 address),
/// unresolved.
pub fn split_host_port(s: &str) -> Result<(&str, u16), HostPortError> {
    let form = || HostPortError::Form(s.to_string());
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (host, port) = rest.split_once("]:").ok_or_else(form)?;
        host.parse::<std::net::Ipv6Addr>().map_err(|_| form())?;
        (host, port)
    } else {
        let (host, port) = s.rsplit_once(':').ok_or_else(form)?;
        // An IPv6 address needs its brackets to be told from the port.
        if host.contains(':') {
            return Err(form());
        }
        (host, port)
    };
    let port = port.parse::<u16>().map_err(|_| form())?;
    if !(host.parse::<IpAddr>().is_ok() || is_host_name(host)) {
        return Err(form());
    }
    Ok((host, port))
}

/// Whether `s` has the form of a host name (RFC 1123 §2.1: labels of
/// letters, digits and hyphens, dot-separated, a trailing dot allowed).
/// Underscores are let through: SRV owner names (RFC 2782) have them.
pub fn is_host_name(s: &str) -> bool {
    let s = s.strip_suffix('.').unwrap_or(s);
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The address of `HOST:PORT`: an IP address as written, a name resolved
/// by the system's resolver (its A and AAAA records, /etc/hosts first).
/// Of a name's addresses the first IPv4 one is taken, else the first: the
/// sockets these addresses are used with bind 0.0.0.0 unless told
/// otherwise.
pub fn host_port(s: &str) -> Result<SocketAddr, HostPortError> {
    let (host, port) = split_host_port(s)?;
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let resolve = |reason: String| HostPortError::Resolve { name: host.to_string(), reason };
    if is_invalid_name(host) {
        return Err(resolve(INVALID_NAME.to_string()));
    }
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs().map_err(|e| resolve(e.to_string()))?.collect();
    addrs.iter().find(|a| a.is_ipv4()).or(addrs.first()).copied().ok_or_else(|| resolve("no address".to_string()))
}

/// Why a name under `.invalid` has no address.
pub const INVALID_NAME: &str = "no such name (names under .invalid never resolve, RFC 6761 §6.4)";

/// Whether `name` is `invalid.` or under it. RFC 6761 §6.4: resolver
/// libraries should answer such a name with "no such name" at once,
/// without asking any server.
pub fn is_invalid_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    let last = name.rsplit('.').next().unwrap_or(name);
    last.eq_ignore_ascii_case("invalid")
}

/// The environment variable that names the DNS server the upstream is
/// located with (`IP:PORT`), instead of the system's (/etc/resolv.conf).
pub const DNS_SERVER_ENV: &str = "SIGKIT_DNS_SERVER";

/// The SIP port when a URI has none and no SRV record gives one (RFC 3261
/// §19.1.2, RFC 3263 §4.2).
pub const SIP_PORT: u16 = 5060;

/// The proxy's upstream as configured: an address, or a SIP URI or host
/// name to locate by RFC 3263 when the proxy starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// `udp:IP:PORT`: no lookup.
    Addr(TransportAddr),
    /// `sip:HOST[:PORT][;transport=udp]`, `HOST[:PORT]` or `udp:HOST:PORT`
    /// with a host name: located at start-up.
    Locate(SipTarget),
}

/// What RFC 3263 §4 starts from: the host, port and transport of a SIP URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SipTarget {
    /// The text as configured, for messages.
    pub text: String,
    /// A host name (an IP address makes an [`Upstream::Addr`]).
    pub host: String,
    /// The URI's port: with it, no NAPTR or SRV lookup (§4.2).
    pub port: Option<u16>,
    /// The URI's `transport` parameter: with it, no NAPTR lookup (§4.1).
    pub transport: Option<SipTransport>,
}

/// Why an upstream's text is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// `udp:HOST:PORT` or `tcp:HOST:PORT` that is not.
    #[error(transparent)]
    Addr(#[from] TransportAddrError),
    /// Not a SIP URI, nor a host with an optional port.
    #[error("{0:?}: not a SIP URI (sip:HOST[:PORT][;transport=udp]), a host name or udp:HOST:PORT")]
    Form(String),
    /// A `sips:` URI, or a transport other than UDP and TCP.
    #[error("{text:?}: {reason}")]
    Unsupported {
        /// The text.
        text: String,
        /// What is not supported.
        reason: String,
    },
}

impl Upstream {
    /// The transport the text fixes, if it fixes one.
    pub fn transport(&self) -> Option<SipTransport> {
        match self {
            Upstream::Addr(a) => Some(a.transport),
            Upstream::Locate(t) => t.transport,
        }
    }
}

impl From<TransportAddr> for Upstream {
    fn from(addr: TransportAddr) -> Upstream {
        Upstream::Addr(addr)
    }
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Upstream::Addr(a) => a.fmt(f),
            Upstream::Locate(t) => f.write_str(&t.text),
        }
    }
}

impl FromStr for Upstream {
    type Err = UpstreamError;

    fn from_str(s: &str) -> Result<Upstream, UpstreamError> {
        // udp:HOST:PORT and tcp:HOST:PORT, the address form.
        for (prefix, transport) in [("udp:", SipTransport::Udp), ("tcp:", SipTransport::Tcp)] {
            let Some(hostport) = s.strip_prefix(prefix) else { continue };
            let (host, port) =
                split_host_port(hostport).map_err(|source| TransportAddrError::Addr { text: s.to_string(), source })?;
            return Ok(match host.parse::<IpAddr>() {
                Ok(ip) => Upstream::Addr(TransportAddr { transport, addr: SocketAddr::new(ip, port) }),
                Err(_) => Upstream::Locate(SipTarget {
                    text: s.to_string(),
                    host: host.to_string(),
                    port: Some(port),
                    transport: Some(transport),
                }),
            });
        }
        let form = || UpstreamError::Form(s.to_string());
        // A URI has a scheme before its first colon; HOST:PORT has digits
        // after it. A bare host is read as the SIP URI of that host.
        let has_scheme = s.split_once(':').is_some_and(|(scheme, rest)| {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                && !rest.bytes().all(|b| b.is_ascii_digit())
        });
        let uri_text = if has_scheme { s.to_string() } else { format!("sip:{s}") };
        let uri = sigkit_sip::Uri::parse(&uri_text).map_err(|_| form())?;
        if uri.scheme == sigkit_sip::Scheme::Sips {
            return Err(UpstreamError::Unsupported {
                text: s.to_string(),
                reason: "a sips: URI needs TLS, which the proxy does not speak to its upstream".into(),
            });
        }
        let transport = match uri.transport() {
            None => None,
            Some(t) if t.eq_ignore_ascii_case("udp") => Some(SipTransport::Udp),
            Some(t) if t.eq_ignore_ascii_case("tcp") => Some(SipTransport::Tcp),
            Some(t) => {
                return Err(UpstreamError::Unsupported {
                    text: s.to_string(),
                    reason: format!("transport {t:?} is not udp or tcp"),
                })
            }
        };
        let host = uri.host_addr();
        if let Ok(ip) = host.parse::<IpAddr>() {
            // RFC 3263 §4.1 and §4.2: a numeric host is used as it is, over
            // UDP unless the URI says otherwise, on the URI's port or 5060.
            let transport = transport.unwrap_or(SipTransport::Udp);
            return Ok(Upstream::Addr(TransportAddr {
                transport,
                addr: SocketAddr::new(ip, uri.port.unwrap_or(SIP_PORT)),
            }));
        }
        if !is_host_name(host) {
            return Err(form());
        }
        Ok(Upstream::Locate(SipTarget { text: s.to_string(), host: host.to_string(), port: uri.port, transport }))
    }
}

/// Why an upstream could not be located: the name and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{name}: {reason}", CANNOT_RESOLVE)]
pub struct LocateError {
    /// The name that gave no address (the URI's host, an SRV target).
    pub name: String,
    /// Why, as the resolver said it.
    pub reason: String,
}

/// A DNS resolver for RFC 3263 lookups: the system's, or the server
/// [`DNS_SERVER_ENV`] names.
pub struct Locator {
    resolver: TokioResolver,
}

impl Locator {
    /// The resolver of the system's configuration, or of `server` alone.
    pub fn new(server: Option<SocketAddr>) -> Result<Locator, LocateError> {
        let resolver = match server {
            Some(addr) => {
                let mut config = ResolverConfig::new();
                config.add_name_server(NameServerConfig::new(addr, Protocol::Udp));
                TokioResolver::builder_with_config(config, TokioConnectionProvider::default()).build()
            }
            None => TokioResolver::builder_tokio()
                .map_err(|e| LocateError { name: "the system's DNS configuration".into(), reason: e.to_string() })?
                .build(),
        };
        Ok(Locator { resolver })
    }

    /// The resolver [`DNS_SERVER_ENV`] names, else the system's.
    pub fn from_env() -> Result<Locator, LocateError> {
        match std::env::var(DNS_SERVER_ENV) {
            Ok(text) => {
                let addr = text.parse::<SocketAddr>().map_err(|_| LocateError {
                    name: format!("the upstream ({DNS_SERVER_ENV}={text})"),
                    reason: "the DNS server must be IP:PORT".into(),
                })?;
                Locator::new(Some(addr))
            }
            Err(_) => Locator::new(None),
        }
    }

    /// Where `upstream` is: the address itself, or the target located by
    /// RFC 3263 §4.
    pub async fn locate(&self, upstream: &Upstream) -> Result<TransportAddr, LocateError> {
        let target = match upstream {
            Upstream::Addr(a) => return Ok(*a),
            Upstream::Locate(t) => t,
        };
        let fail = |reason: String| LocateError { name: target.host.clone(), reason };
        if is_invalid_name(&target.host) {
            return Err(fail(INVALID_NAME.to_string()));
        }
        // The proxy speaks UDP to its upstream (`ProxyConfig::validate`).
        let transport = SipTransport::Udp;
        // §4.2: a port in the URI: A/AAAA of the host, nothing else.
        if let Some(port) = target.port {
            let ip = self.address(&target.host).await?;
            return Ok(TransportAddr { transport, addr: SocketAddr::new(ip, port) });
        }
        // §4.1: NAPTR first, unless the URI names its transport; its
        // SIP+D2U record names the SRV records to look up. Records for
        // other transports only (the proxy has no TCP upstream) are as
        // good as none: the SRV records of SIP over UDP come next.
        let naptr = match target.transport {
            Some(_) => None,
            None => self.naptr_udp(&target.host).await?,
        };
        let (srv_name, from_naptr) = match naptr {
            Some(name) => (name, true),
            None => (format!("_sip._udp.{}", absolute(&target.host)), false),
        };
        // §4.2: the SRV records of that name, by priority, then weight
        // (RFC 2782), the first whose target has an address.
        let targets = self.srv(&srv_name).await?;
        if targets.is_empty() {
            if from_naptr {
                return Err(fail(format!("the NAPTR record points to {srv_name}, which has no SRV record")));
            }
            // No SRV records: the host's A/AAAA, port 5060.
            let ip = self.address(&target.host).await?;
            return Ok(TransportAddr { transport, addr: SocketAddr::new(ip, SIP_PORT) });
        }
        let mut last = None;
        for (host, port) in targets {
            match self.address(&host).await {
                Ok(ip) => return Ok(TransportAddr { transport, addr: SocketAddr::new(ip, port) }),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| fail("no SRV target".into())))
    }

    /// The replacement of the most preferred NAPTR record of `host` for SIP
    /// over UDP (service `SIP+D2U`, flag `s`; RFC 3263 §4.1), or `None`
    /// when `host` has no such record.
    async fn naptr_udp(&self, host: &str) -> Result<Option<String>, LocateError> {
        let lookup = match self.resolver.lookup(absolute(host), RecordType::NAPTR).await {
            Ok(l) => l,
            Err(e) if no_records(&e) => return Ok(None),
            Err(e) => return Err(LocateError { name: host.to_string(), reason: e.to_string() }),
        };
        let mut records: Vec<_> = lookup
            .record_iter()
            .filter_map(|r| match r.data() {
                RData::NAPTR(n) => Some(n),
                _ => None,
            })
            .filter(|n| n.services().eq_ignore_ascii_case(b"SIP+D2U") && n.flags().eq_ignore_ascii_case(b"s"))
            .map(|n| (n.order(), n.preference(), n.replacement().to_ascii()))
            .collect();
        records.sort();
        Ok(records.into_iter().next().map(|(_, _, name)| name))
    }

    /// The SRV records of `name` as (target, port), by priority, the
    /// heavier first at equal priority; none when `name` has none.
    async fn srv(&self, name: &str) -> Result<Vec<(String, u16)>, LocateError> {
        let lookup = match self.resolver.srv_lookup(name).await {
            Ok(l) => l,
            Err(e) if no_records(&e) => return Ok(Vec::new()),
            Err(e) => return Err(LocateError { name: name.to_string(), reason: e.to_string() }),
        };
        let mut records: Vec<_> =
            lookup.iter().map(|s| (s.priority(), u16::MAX - s.weight(), s.target().to_ascii(), s.port())).collect();
        records.sort();
        // RFC 2782: a target of "." means the service is not offered there.
        Ok(records.into_iter().filter(|(_, _, t, _)| t != ".").map(|(_, _, t, p)| (t, p)).collect())
    }

    /// The first IPv4 address of `host`, else its first IPv6 one.
    async fn address(&self, host: &str) -> Result<IpAddr, LocateError> {
        let fail = |reason: String| LocateError { name: host.trim_end_matches('.').to_string(), reason };
        if is_invalid_name(host) {
            return Err(fail(INVALID_NAME.to_string()));
        }
        let lookup = self.resolver.lookup_ip(absolute(host)).await.map_err(|e| fail(reason(&e)))?;
        let ips: Vec<IpAddr> = lookup.iter().collect();
        ips.iter().find(|ip| ip.is_ipv4()).or(ips.first()).copied().ok_or_else(|| fail("no address".into()))
    }
}

/// Where `upstream` is, located with the resolver [`DNS_SERVER_ENV`]
/// names (else the system's) when it is a name; logged when it was one.
pub async fn locate_upstream(upstream: &Upstream) -> Result<TransportAddr, LocateError> {
    let target = match upstream {
        Upstream::Addr(a) => return Ok(*a),
        Upstream::Locate(t) => t,
    };
    let located = Locator::from_env()?.locate(upstream).await?;
    tracing::info!(upstream = %target.text, addr = %located, "upstream located (RFC 3263)");
    Ok(located)
}

/// What went wrong, in words: no such name and no address are said so,
/// other failures (a timeout, a server failure) as the resolver says them.
fn reason(e: &ResolveError) -> String {
    if e.is_nx_domain() {
        "no such name (NXDOMAIN)".to_string()
    } else if e.is_no_records_found() {
        "no A or AAAA record".to_string()
    } else {
        e.to_string()
    }
}

/// Whether the lookup found the name without records of the type, or no
/// such name: the next step of RFC 3263 applies rather than a failure.
fn no_records(e: &ResolveError) -> bool {
    e.is_no_records_found() || e.is_nx_domain()
}

/// `name` fully qualified (with its trailing dot), so that no search
/// domain of the system's configuration is appended to it.
fn absolute(name: &str) -> String {
    if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_need_no_resolver() {
        assert_eq!(host_port("127.0.0.1:5060"), Ok(SocketAddr::from(([127, 0, 0, 1], 5060))));
        assert_eq!(host_port("[::1]:5060"), Ok("[::1]:5060".parse().unwrap()));
    }

    #[test]
    fn a_text_that_is_not_host_port_says_so() {
        for bad in ["127.0.0.1", "127.0.0.1:", "host:65536", ":5060", "::1:5060", "[::1]5060", "a b:5060", "[x]:1"] {
            assert_eq!(host_port(bad), Err(HostPortError::Form(bad.to_string())), "{bad}");
        }
        assert_eq!(HostPortError::Form("x".into()).to_string(), "\"x\": not a host:port");
    }

    #[test]
    fn localhost_resolves_to_a_loopback_address() {
        let a = host_port("localhost:5060").unwrap();
        assert!(a.ip().is_loopback() && a.port() == 5060, "{a}");
    }

    /// RFC 6761 §6.4: no name under `.invalid` resolves, anywhere.
    #[test]
    fn a_name_under_invalid_is_a_resolution_failure() {
        let e = host_port("sigkit-test.invalid:5060").unwrap_err();
        assert!(e.is_resolution(), "{e:?}");
        assert_eq!(e.to_string(), format!("cannot resolve sigkit-test.invalid: {INVALID_NAME}"));
        assert!(is_invalid_name("INVALID.") && is_invalid_name("a.b.invalid") && !is_invalid_name("invalid.example"));
    }

    fn target(host: &str, port: Option<u16>, transport: Option<SipTransport>, text: &str) -> Upstream {
        Upstream::Locate(SipTarget { text: text.into(), host: host.into(), port, transport })
    }

    #[test]
    fn upstreams_are_addresses_sip_uris_or_host_names() {
        let udp = |a: &str| Upstream::Addr(TransportAddr { transport: SipTransport::Udp, addr: a.parse().unwrap() });
        let parse = |s: &str| s.parse::<Upstream>();
        assert_eq!(parse("udp:127.0.0.1:5070"), Ok(udp("127.0.0.1:5070")));
        assert_eq!(parse("sip:127.0.0.1"), Ok(udp("127.0.0.1:5060")));
        assert_eq!(parse("sip:[::1]:5070"), Ok(udp("[::1]:5070")));
        assert_eq!(parse("127.0.0.1:5070"), Ok(udp("127.0.0.1:5070")));
        assert_eq!(parse("sip:example.test"), Ok(target("example.test", None, None, "sip:example.test")));
        let t = "sip:example.test;transport=udp";
        assert_eq!(parse(t), Ok(target("example.test", None, Some(SipTransport::Udp), t)));
        let t = "sip:proxy@example.test:5080;lr";
        assert_eq!(parse(t), Ok(target("example.test", Some(5080), None, t)));
        assert_eq!(parse("example.test"), Ok(target("example.test", None, None, "example.test")));
        assert_eq!(parse("localhost:5080"), Ok(target("localhost", Some(5080), None, "localhost:5080")));
        let t = "udp:example.test:5070";
        assert_eq!(parse(t), Ok(target("example.test", Some(5070), Some(SipTransport::Udp), t)));
        assert_eq!(parse("sip:example.test;transport=tcp").unwrap().transport(), Some(SipTransport::Tcp));
        assert_eq!(parse("sip:example.test").unwrap().to_string(), "sip:example.test");
    }

    #[test]
    fn what_is_no_upstream_says_why() {
        for bad in ["tel:+12125550100", "sip:", "sip:a b", "::1", "sip:example.test:99999"] {
            assert_eq!(bad.parse::<Upstream>(), Err(UpstreamError::Form(bad.into())), "{bad}");
        }
        let e = "sips:example.test".parse::<Upstream>().unwrap_err().to_string();
        assert!(e.contains("TLS"), "{e}");
        let e = "sip:example.test;transport=sctp".parse::<Upstream>().unwrap_err().to_string();
        assert!(e.contains("\"sctp\" is not udp or tcp"), "{e}");
        let e = "udp:example.test".parse::<Upstream>().unwrap_err();
        assert!(matches!(e, UpstreamError::Addr(_)), "{e:?}");
    }
}
