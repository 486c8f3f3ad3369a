//! What the proxy calls itself and where: its sockets, the addresses it
//! writes into Route entries, its `sigcomp-id`, and the flow tokens and
//! branches of its shard.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use sha1::{Digest, Sha1};
use sigkit_sip::proxy::{format_via, route_uri};
use sigkit_sip::Message;

use super::peer::{Encoding, LocalAddrs, Peer};
use super::shard::{host_matches, parse_flow_token, Shard, BRANCH_PREFIX};
use crate::compartments::ProxyName;
use crate::config::{ProxyConfig, SipTransport};

/// A flow token of the first Route entry naming the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RouteToken {
    /// None there.
    Absent,
    /// One this instance wrote.
    Own(u64),
    /// One another instance wrote (or this one before a restart).
    Foreign,
}

pub(super) struct Identity {
    /// This proxy's part of a sharded runtime ([`Shard`]).
    pub(super) shard: Shard,
    addrs: LocalAddrs,
    route_terminal: Option<SocketAddr>,
    route_upstream: Option<SocketAddr>,
    sigcomp_id: String,
    /// The proxy's `sigcomp-id` as a name ([`ProxyName::ours`]).
    pub(super) our_name: ProxyName,
}

/// `addr`'s host as a URI writes it (RFC 3261 §25.1: an IPv6 reference
/// in brackets).
pub(super) fn host_of(addr: SocketAddr) -> String {
    match addr.ip() {
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    }
}

impl Identity {
    pub(super) fn new(config: &ProxyConfig, addrs: LocalAddrs, shard: Shard) -> Identity {
        Identity {
            shard,
            addrs,
            route_terminal: config.route_terminal,
            route_upstream: config.route_upstream,
            sigcomp_id: config.sigcomp_id.clone(),
            our_name: ProxyName::ours(&config.sigcomp_id),
        }
    }

    /// The upstream server, as a message to it is addressed.
    pub(super) fn upstream_peer(&self) -> Peer {
        Peer {
            transport: SipTransport::Udp,
            addr: self.addrs.upstream_peer,
            local: Some(self.addrs.upstream),
            conn: None,
        }
    }

    /// The proxy's socket toward terminals over `transport`: `local` if it
    /// is one, else the first.
    pub(super) fn terminal_addr(&self, transport: SipTransport, local: Option<SocketAddr>) -> SocketAddr {
        local
            .filter(|l| self.addrs.terminal.iter().any(|(t, a)| *t == transport && a == l))
            .or_else(|| self.addrs.terminal.iter().find(|(t, _)| *t == transport).map(|(_, a)| *a))
            .unwrap_or(self.addrs.upstream)
    }

    /// The proxy's first UDP socket toward terminals.
    pub(super) fn first_udp_terminal_socket(&self) -> Option<SocketAddr> {
        self.addrs.terminal.iter().find(|(t, _)| *t == SipTransport::Udp).map(|(_, a)| *a)
    }

    /// The proxy's `sigcomp-id` where the terminal speaks SigComp (RFC 5049
    /// §6.1).
    pub(super) fn sigcomp_id_for(&self, encoding: Encoding) -> Option<&str> {
        encoding.is_sigcomp().then_some(self.sigcomp_id.as_str())
    }

    /// A URI of the proxy on the terminal side of flow `token` over `peer`
    /// (with `comp=sigcomp` and the proxy's `sigcomp-id` where the terminal
    /// speaks SigComp, RFC 3486 §5, RFC 5049 §6.1), naming the flow.
    pub(super) fn terminal_uri(&self, token: u64, peer: Option<&Peer>, encoding: Encoding) -> String {
        let transport = peer.map_or(SipTransport::Udp, |p| p.transport);
        let local = self.route_terminal.unwrap_or_else(|| self.terminal_addr(transport, peer.and_then(|p| p.local)));
        let tcp = (transport == SipTransport::Tcp).then_some("tcp");
        let id = self.sigcomp_id_for(encoding);
        self.with_flow_token(token, &route_uri(&host_of(local), Some(local.port()), tcp, id))
    }

    /// A URI of the proxy on the upstream's side, naming flow `token`.
    pub(super) fn upstream_uri(&self, token: u64) -> String {
        let a = self.route_upstream.unwrap_or(self.addrs.upstream);
        self.with_flow_token(token, &route_uri(&host_of(a), Some(a.port()), None, None))
    }

    /// `uri` (`sip:host...`) with the flow token as its user part.
    fn with_flow_token(&self, token: u64, uri: &str) -> String {
        format!("sip:t.{:012x}.{token}@{}", self.shard.instance, uri.strip_prefix("sip:").unwrap_or(uri))
    }

    /// The proxy's Via toward the upstream, with `branch`.
    pub(super) fn upstream_via(&self, branch: &str) -> String {
        let up = self.addrs.upstream;
        format_via("UDP", &host_of(up), Some(up.port()), branch, None, false)
    }

    /// The proxy's Via toward a terminal at `to`, with `branch` (and the
    /// proxy's `sigcomp-id` where the terminal speaks SigComp).
    pub(super) fn terminal_via(&self, to: &Peer, branch: &str, encoding: Encoding) -> String {
        let local = self.terminal_addr(to.transport, to.local);
        let id = self.sigcomp_id_for(encoding);
        format_via(to.transport.via_token(), &host_of(local), Some(local.port()), branch, id, false)
    }

    /// Whether `uri` (a Route entry) names this proxy.
    pub(super) fn is_ours(&self, host: &str, port: Option<u16>) -> bool {
        let port = port.unwrap_or(5060);
        let ours = |a: SocketAddr| a.port() == port && host_matches(host, a.ip());
        ours(self.addrs.upstream)
            || self.addrs.terminal.iter().any(|(_, a)| ours(*a))
            || self.route_terminal.is_some_and(ours)
            || self.route_upstream.is_some_and(ours)
    }

    /// The flow token of the leading Route entries that name the proxy
    /// (RFC 3261 §16.4): one this instance wrote, or another's.
    pub(super) fn our_route_token(&self, msg: &Message<'_>) -> RouteToken {
        let Ok(routes) = msg.routes() else { return RouteToken::Absent };
        let ours = routes.iter().filter_map(|na| na.sip_uri().ok()).take_while(|u| self.is_ours(u.host, u.port));
        match ours.filter_map(|u| u.user.filter(|u| u.starts_with("t."))).next() {
            None => RouteToken::Absent,
            Some(user) => match parse_flow_token(user) {
                Some((instance, t)) if instance == self.shard.instance => RouteToken::Own(t),
                _ => RouteToken::Foreign,
            },
        }
    }

    /// The branch of the proxy's Via for `msg`: the same for a
    /// retransmission, another for another request (RFC 3261 §16.11).
    pub(super) fn branch_for(&self, msg: &Message<'_>) -> String {
        let mut h = Sha1::new();
        if let Ok(v) = msg.top_via() {
            h.update(v.branch().unwrap_or(v.text).as_bytes());
            h.update(v.host.as_bytes());
        }
        h.update(msg.call_id().unwrap_or("").as_bytes());
        if let Ok(c) = msg.cseq() {
            h.update(c.number.to_be_bytes());
            // A CANCEL, and the ACK of a non-2xx final response, must
            // carry the branch the INVITE got (§16.11, §9.1); an ACK of
            // a 2xx has a new branch of its own at the terminal, so it
            // gets a new one here too.
            let method = if matches!(c.method, "ACK" | "CANCEL") { "INVITE" } else { c.method };
            h.update(method.as_bytes());
        }
        let d = h.finalize();
        let mut b = format!("{BRANCH_PREFIX}{}.", self.shard.index);
        for x in &d[..10] {
            let _ = write!(b, "{x:02x}");
        }
        b
    }

    /// A To tag for a response the proxy makes itself (RFC 3261 §8.2.6.2):
    /// the same for a retransmission of the request.
    pub(super) fn to_tag(&self, msg: &Message<'_>) -> String {
        self.branch_for(msg).rsplit('.').next().unwrap_or("").to_string()
    }

    /// 483 Too Many Hops (RFC 3261 §16.3 item 2).
    pub(super) fn too_many_hops(&self, msg: &Message<'_>) -> Option<Vec<u8>> {
        sigkit_sip::proxy::too_many_hops(msg, &self.to_tag(msg)).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(instance: u64, index: u32) -> Identity {
        let addrs = LocalAddrs {
            terminal: vec![(SipTransport::Udp, "127.0.0.1:5060".parse().unwrap())],
            upstream: "127.0.0.1:5062".parse().unwrap(),
            upstream_peer: "127.0.0.1:5070".parse().unwrap(),
        };
        Identity::new(&ProxyConfig::default(), addrs, Shard { index, count: 4, instance })
    }

    fn request(route: &str, cseq: &str) -> String {
        format!(
            "INVITE sip:alice@10.0.0.9:5080 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.8:5070;branch=z9hG4bKx\r\n\
             {route}Call-ID: c\r\nCSeq: {cseq}\r\nFrom: <sip:b@y>;tag=2\r\nTo: <sip:alice@x>\r\nContent-Length: 0\r\n\r\n"
        )
    }

    /// A flow token the proxy writes is one it reads back as its own; a
    /// token of another instance is foreign, and an entry that names
    /// another host is not the proxy's at all.
    #[test]
    fn the_proxy_reads_back_the_flow_tokens_it_writes() {
        let me = identity(0xa1b2_c3d4_e5f6, 1);
        let uri = me.upstream_uri(41);
        assert_eq!(uri, "sip:t.a1b2c3d4e5f6.41@127.0.0.1:5062;lr");
        let ours = request(&format!("Route: <{uri}>\r\n"), "1 INVITE");
        assert_eq!(me.our_route_token(&Message::parse(ours.as_bytes()).unwrap()), RouteToken::Own(41));
        let restarted = identity(0x1111, 1);
        assert_eq!(restarted.our_route_token(&Message::parse(ours.as_bytes()).unwrap()), RouteToken::Foreign);
        let elsewhere = request("Route: <sip:t.a1b2c3d4e5f6.41@10.1.1.1:5062;lr>\r\n", "1 INVITE");
        assert_eq!(me.our_route_token(&Message::parse(elsewhere.as_bytes()).unwrap()), RouteToken::Absent);
    }

    /// RFC 3261 §16.11, §9.1: a retransmission, its CANCEL and the ACK of
    /// a non-2xx response get the INVITE's branch; another request gets
    /// another; the branch names the shard.
    #[test]
    fn branches_repeat_for_the_transaction_only() {
        let me = identity(7, 3);
        let branch = |cseq: &str| me.branch_for(&Message::parse(request("", cseq).as_bytes()).unwrap());
        let invite = branch("1 INVITE");
        assert!(invite.starts_with(&format!("{BRANCH_PREFIX}3.")), "{invite}");
        assert_eq!(branch("1 INVITE"), invite);
        assert_eq!(branch("1 CANCEL"), invite);
        assert_eq!(branch("1 ACK"), invite);
        assert_ne!(branch("2 INVITE"), invite);
        assert_ne!(branch("1 OPTIONS"), invite);
        let invite_text = request("", "1 INVITE");
        let msg = Message::parse(invite_text.as_bytes()).unwrap();
        assert_eq!(me.to_tag(&msg), invite.rsplit('.').next().unwrap());
    }
}
