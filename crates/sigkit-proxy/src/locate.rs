//! Where to send: a `HOST:PORT` whose host may be a name, resolved to its
//! address (A/AAAA by the system's resolver), each failure said as what
//! it is, a text that is not `HOST:PORT` or a name the DNS does not know.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

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
}
