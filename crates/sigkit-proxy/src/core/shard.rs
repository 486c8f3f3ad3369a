//! Which of several proxies sharing the sockets owns a message, and the
//! flow tokens and branches that say so.

use std::net::{IpAddr, SocketAddr};

use sigkit_sip::Message;

/// A random 48-bit identifier of this proxy instance for its flow tokens
/// (the standard library's per-process random hash keys, mixed with the
/// time and the process id).
pub fn new_instance_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    h.write_u128(since.as_nanos());
    h.write_u32(std::process::id());
    h.finish() & 0xFFFF_FFFF_FFFF
}

/// A flow token's instance and number: `t.I.N`, `I` 12 hex digits.
pub(crate) fn parse_flow_token(user: &str) -> Option<(u64, u64)> {
    let (instance, n) = user.strip_prefix("t.")?.split_once('.')?;
    Some((u64::from_str_radix(instance, 16).ok()?, n.parse().ok()?))
}

/// Prefix of the branches the proxy writes (RFC 3261 §8.1.1.7 cookie).
pub(crate) const BRANCH_PREFIX: &str = "z9hG4bKsk";

/// Which of several proxies sharing the sockets this one is. Each owns
/// the terminals whose address hashes to it; what comes from the upstream
/// finds its shard in the proxy's own Via branch (responses) or flow token
/// (requests), which carry the shard's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard's index, below `count`; written in its Via branches and
    /// flow tokens.
    pub index: u32,
    /// How many shards share the sockets (`shards`, or one per worker
    /// thread; at most [`crate::config::MAX_SHARDS`]).
    pub count: u32,
    /// The instance all shards of one process share ([`new_instance_id`]),
    /// written in their flow tokens.
    pub instance: u64,
}

impl Shard {
    /// The shard of a terminal at `addr` (its transport address: every
    /// message of a flow lands on one shard).
    pub fn of_terminal(addr: SocketAddr, count: u32) -> u32 {
        let ip = match addr.ip() {
            IpAddr::V4(a) => u64::from(u32::from(a)),
            IpAddr::V6(a) => {
                let o = a.octets();
                u64::from_be_bytes([o[8], o[9], o[10], o[11], o[12], o[13], o[14], o[15]])
            }
        };
        let h = (ip << 16 | u64::from(addr.port())).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> 32) % u64::from(count.max(1))) as u32
    }

    /// The shard a message from the upstream belongs to: the index in the
    /// proxy's Via branch of a response, or in the flow token of the first
    /// Route entry of a request if instance `instance` wrote it; else the
    /// shard of the Request-URI's address (a registered contact); `None`
    /// for what is not SIP.
    pub fn of_upstream_message(bytes: &[u8], count: u32, instance: u64) -> Option<u32> {
        Some(Shard::of_upstream(&Message::parse(bytes).ok()?, count, instance))
    }

    /// [`Shard::of_upstream_message`] of a parsed message; shard 0 when
    /// the message names none.
    pub fn of_upstream(msg: &Message<'_>, count: u32, instance: u64) -> u32 {
        Shard::named_by_upstream(msg, count.max(1), instance).unwrap_or(0)
    }

    fn named_by_upstream(msg: &Message<'_>, count: u32, instance: u64) -> Option<u32> {
        if !msg.is_request() {
            let via = msg.top_via().ok()?;
            let rest = via.branch()?.strip_prefix(BRANCH_PREFIX)?;
            let index: u32 = rest.split('.').next()?.parse().ok()?;
            return Some(index % count);
        }
        let routed = msg.routes().ok().and_then(|r| {
            let uri = r.first()?.sip_uri().ok()?;
            let (written_by, token) = parse_flow_token(uri.user?)?;
            (written_by == instance).then_some((token % u64::from(count)) as u32)
        });
        routed.or_else(|| {
            let uri = msg.request_uri().ok()?;
            Some(Shard::of_terminal(socket_addr(uri.host, uri.port.unwrap_or(5060))?, count))
        })
    }
}

pub(crate) fn host_matches(host: &str, ip: IpAddr) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.parse::<IpAddr>().is_ok_and(|h| h == ip || (ip.is_unspecified() && h.is_loopback()))
}

pub(crate) fn socket_addr(host: &str, port: u16) -> Option<SocketAddr> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    Some(SocketAddr::new(h.parse().ok()?, port))
}
