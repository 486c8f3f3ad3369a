//! Terminals' flows: the token each message's entries carry, the terminal
//! a flow learned, and when an idle flow is forgotten (soft state; RFC
//! 5626's flow tokens serve the same purpose).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::peer::{Encoding, Peer};
use super::shard::Shard;
use crate::compartments::{Terminal, MAX_IDENTIFIER_LEN};
use crate::config::SipTransport;
use crate::defence::Standing;

/// What a flow token names.
#[derive(Debug, Clone)]
pub(super) struct Flow {
    pub(super) peer: Peer,
    /// SigComp once a SigComp message came on the flow.
    pub(super) encoding: Encoding,
    /// The terminal's SigComp identifier, once a request on this flow
    /// named it ([`Terminal::Id`]).
    pub(super) terminal_id: Option<String>,
    /// The last message from or to the terminal on this flow.
    last_seen: Instant,
    /// The end of the registration made through this flow: a registered
    /// terminal's flow is kept for terminating requests however quiet it is.
    registered_until: Option<Instant>,
    /// A registered terminal's message came on this flow: its source is a
    /// terminal the proxy knows ([`Standing`]).
    trusted: bool,
}

/// The flows, by token, by peer, by transport address and by TCP
/// connection, and when each may be forgotten.
pub(super) struct Flows {
    flows: HashMap<u64, Flow>,
    tokens: HashMap<Peer, u64>,
    /// The newest flow from each transport address, and each TCP
    /// connection's flow: found without a scan.
    by_addr: HashMap<(SipTransport, SocketAddr), u64>,
    by_conn: HashMap<u64, Peer>,
    next: u64,
    /// Flows by when they may be forgotten (entries are checked against
    /// the flow when they come up: a flow used since is pushed again).
    deadlines: BinaryHeap<Reverse<(Instant, u64)>>,
    idle: Duration,
    max: usize,
    /// Tokens carry the shard's index (token mod count), so that a request
    /// from the upstream finds its shard ([`Shard::of_upstream`]).
    shard: Shard,
}

impl Flows {
    pub(super) fn new(idle: Duration, max: usize, shard: Shard) -> Flows {
        Flows {
            flows: HashMap::new(),
            tokens: HashMap::new(),
            by_addr: HashMap::new(),
            by_conn: HashMap::new(),
            next: 1,
            deadlines: BinaryHeap::new(),
            idle,
            max,
            shard,
        }
    }

    /// The token of `peer`'s flow, if it has one, which a message with
    /// `encoding` used at `now`.
    pub(super) fn touch(&mut self, now: Instant, peer: &Peer, encoding: Encoding) -> Option<u64> {
        let t = *self.tokens.get(peer)?;
        if let Some(f) = self.flows.get_mut(&t) {
            if encoding.is_sigcomp() {
                f.encoding = Encoding::SigComp;
            }
            f.last_seen = now;
        }
        Some(t)
    }

    /// Whether a new flow needs room made first ([`Flows::evict`]).
    pub(super) fn is_full(&self) -> bool {
        self.flows.len() >= self.max
    }

    /// A new flow for `peer` (which has none: [`Flows::touch`]); its token.
    pub(super) fn insert(&mut self, now: Instant, peer: Peer, encoding: Encoding) -> u64 {
        let t = self.next * u64::from(self.shard.count.max(1)) + u64::from(self.shard.index);
        self.next += 1;
        self.tokens.insert(peer, t);
        self.by_addr.insert((peer.transport, peer.addr), t);
        if let Some(c) = peer.conn {
            self.by_conn.insert(c, peer);
        }
        let flow = Flow { peer, encoding, terminal_id: None, last_seen: now, registered_until: None, trusted: false };
        self.deadlines.push(Reverse((self.deadline(&flow), t)));
        self.flows.insert(t, flow);
        // Entries of flows gone (TCP connections closed) wait for their
        // time in the heap; rebuilt, it holds only live flows again.
        if self.deadlines.len() > 2 * self.max.max(self.flows.len()) + 64 {
            let live = self.flows.iter().map(|(t, f)| Reverse((self.deadline(f), *t))).collect();
            self.deadlines = live;
        }
        t
    }

    /// When `f` may be forgotten: idle long enough, and not registered.
    fn deadline(&self, f: &Flow) -> Instant {
        let idle = f.last_seen + self.idle;
        f.registered_until.map_or(idle, |r| r.max(idle))
    }

    /// Forgets the flow whose deadline comes first; its token, or `None`
    /// if no flow is left.
    pub(super) fn evict(&mut self) -> Option<u64> {
        while let Some(Reverse((at, t))) = self.deadlines.pop() {
            let Some(f) = self.flows.get(&t) else { continue };
            let deadline = self.deadline(f);
            if deadline > at {
                self.deadlines.push(Reverse((deadline, t)));
                continue;
            }
            self.remove(t);
            return Some(t);
        }
        None
    }

    /// Forgets the next flow past its deadline at `now`; its token, or
    /// `None` when none is.
    pub(super) fn expire_next(&mut self, now: Instant) -> Option<u64> {
        while let Some(&Reverse((at, t))) = self.deadlines.peek() {
            if at > now {
                return None;
            }
            self.deadlines.pop();
            let Some(f) = self.flows.get(&t) else { continue };
            let deadline = self.deadline(f);
            if deadline > now {
                self.deadlines.push(Reverse((deadline, t)));
            } else {
                self.remove(t);
                return Some(t);
            }
        }
        None
    }

    /// When the next flow may be forgotten (perhaps later: see
    /// [`Flows::expire_next`]).
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.peek().map(|Reverse((at, _))| *at)
    }

    /// Forgets flow `t`; false if there was none.
    pub(super) fn remove(&mut self, t: u64) -> bool {
        let Some(f) = self.flows.remove(&t) else { return false };
        let p = f.peer;
        if self.tokens.get(&p) == Some(&t) {
            self.tokens.remove(&p);
        }
        if self.by_addr.get(&(p.transport, p.addr)) == Some(&t) {
            self.by_addr.remove(&(p.transport, p.addr));
        }
        if let Some(conn) = p.conn {
            if self.by_conn.get(&conn) == Some(&p) {
                self.by_conn.remove(&conn);
            }
        }
        true
    }

    /// A terminal's TCP connection closed: its flow is gone (RFC 5626
    /// §5.2: a flow that fails is not reused). The token of the flow
    /// forgotten, if there was one.
    pub(super) fn close_connection(&mut self, conn: u64) -> Option<u64> {
        let p = self.by_conn.get(&conn).copied()?;
        let removed = self.tokens.get(&p).copied().filter(|&t| self.remove(t));
        self.by_conn.remove(&conn);
        removed
    }

    /// Whether the proxy knows where a SigComp message comes from: its
    /// flow had a message's state accepted, or carries a registration.
    pub(super) fn standing(&self, from: &Peer) -> Standing {
        let known = self
            .tokens
            .get(from)
            .and_then(|t| self.flows.get(t))
            .is_some_and(|f| f.trusted || f.registered_until.is_some());
        if known {
            Standing::Known
        } else {
            Standing::Unknown
        }
    }

    /// Marks flow `token` as a registered terminal's: its SigComp messages
    /// come first when decompression time is short ([`Standing`]).
    pub(super) fn trust(&mut self, token: u64) {
        if let Some(f) = self.flows.get_mut(&token) {
            f.trusted = true;
        }
    }

    /// A message went to the terminal on flow `token` at `now`.
    pub(super) fn sent_to(&mut self, token: u64, now: Instant) {
        if let Some(f) = self.flows.get_mut(&token) {
            f.last_seen = now;
        }
    }

    /// The registration made through flow `token` lasts until `until`
    /// (`None`: it ended).
    pub(super) fn set_registered_until(&mut self, token: u64, until: Option<Instant>) {
        if let Some(f) = self.flows.get_mut(&token) {
            f.registered_until = until;
        }
    }

    /// Until when a registration made over TCP connection `conn` lasts,
    /// if one does.
    pub(super) fn connection_registered_until(&self, conn: u64) -> Option<Instant> {
        let peer = self.by_conn.get(&conn)?;
        self.flows.get(self.tokens.get(peer)?)?.registered_until
    }

    pub(super) fn len(&self) -> usize {
        self.flows.len()
    }

    pub(super) fn get(&self, token: u64) -> Option<&Flow> {
        self.flows.get(&token)
    }

    /// How messages on flow `token` are encoded toward its terminal (plain
    /// SIP for a flow forgotten).
    pub(super) fn encoding(&self, token: u64) -> Encoding {
        self.flows.get(&token).map_or(Encoding::Plain, |f| f.encoding)
    }

    /// The newest flow from `addr` over `transport`, and its peer.
    pub(super) fn by_addr(&self, transport: SipTransport, addr: SocketAddr) -> Option<(u64, Peer)> {
        let t = *self.by_addr.get(&(transport, addr))?;
        Some((t, self.flows.get(&t)?.peer))
    }

    /// Flows that learned their terminal's identifier, and its bytes.
    pub(super) fn identifiers(&self) -> (usize, usize) {
        self.flows
            .values()
            .filter_map(|f| f.terminal_id.as_ref().map(String::len))
            .fold((0, 0), |(n, bytes), len| (n + 1, bytes + len))
    }

    /// For each identifier `wanted` accepts that a flow learned, the peer of
    /// the flow last used by its terminal. Scans every flow.
    pub(super) fn newest_by_identifier(&self, wanted: impl Fn(&str) -> bool) -> HashMap<&str, Peer> {
        let mut newest: HashMap<&str, &Flow> = HashMap::new();
        for f in self.flows.values() {
            let Some(id) = f.terminal_id.as_deref().filter(|id| wanted(id)) else { continue };
            let slot = newest.entry(id).or_insert(f);
            if slot.last_seen < f.last_seen {
                *slot = f;
            }
        }
        newest.into_iter().map(|(id, f)| (id, f.peer)).collect()
    }

    /// The terminal a message on flow `token` comes from or goes to: the
    /// SigComp identifier the message names (RFC 5049 §6.1), which the
    /// flow then remembers; else the one the flow learned; else the flow.
    pub(super) fn terminal(&mut self, sigcomp_id: Option<&str>, token: u64) -> Terminal {
        let sigcomp_id = sigcomp_id.filter(|id| id.len() <= MAX_IDENTIFIER_LEN);
        let learned = self.flows.get_mut(&token).map(|f| &mut f.terminal_id);
        match (sigcomp_id, learned) {
            (Some(id), learned) => {
                let key = sigkit_sip::compartment::identifier_key(id);
                if let Some(l) = learned {
                    if l.as_deref() != Some(key.as_str()) {
                        *l = Some(key.clone());
                    }
                }
                Terminal::Id(key)
            }
            (None, Some(Some(id))) => Terminal::Id(id.clone()),
            (None, _) => Terminal::Flow(token),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(60);

    fn peer(port: u16, conn: Option<u64>) -> Peer {
        let transport = if conn.is_some() { SipTransport::Tcp } else { SipTransport::Udp };
        Peer { transport, addr: SocketAddr::from(([10, 0, 0, 9], port)), local: None, conn }
    }

    fn flows(max: usize) -> Flows {
        Flows::new(IDLE, max, Shard { index: 2, count: 3, instance: 1 })
    }

    /// A token carries its shard's index; a flow once SigComp stays so.
    #[test]
    fn tokens_name_the_shard_and_a_flow_keeps_its_encoding() {
        let now = Instant::now();
        let mut f = flows(10);
        let a = f.insert(now, peer(5080, None), Encoding::Plain);
        let b = f.insert(now, peer(5081, None), Encoding::Plain);
        assert_ne!(a, b);
        assert!([a, b].iter().all(|t| t % 3 == 2), "{a} {b}");
        assert_eq!(f.touch(now, &peer(5080, None), Encoding::SigComp), Some(a));
        assert_eq!(f.touch(now, &peer(5080, None), Encoding::Plain), Some(a));
        assert_eq!(f.encoding(a), Encoding::SigComp);
        assert_eq!(f.encoding(b), Encoding::Plain);
        assert_eq!(f.by_addr(SipTransport::Udp, peer(5081, None).addr), Some((b, peer(5081, None))));
        assert_eq!(f.touch(now, &peer(5082, None), Encoding::Plain), None);
    }

    /// Full, the flow idle longest goes first: one used since it came is
    /// kept, and so is one with a registration until its end.
    #[test]
    fn eviction_takes_the_flow_idle_longest_and_spares_registrations() {
        let t0 = Instant::now();
        let mut f = flows(3);
        let a = f.insert(t0, peer(1, None), Encoding::Plain);
        let b = f.insert(t0 + Duration::from_secs(1), peer(2, None), Encoding::Plain);
        let c = f.insert(t0 + Duration::from_secs(2), peer(3, None), Encoding::Plain);
        assert!(f.is_full());
        f.touch(t0 + Duration::from_secs(3), &peer(1, None), Encoding::Plain);
        f.set_registered_until(b, Some(t0 + Duration::from_secs(3600)));
        assert_eq!(f.evict(), Some(c));
        assert_eq!(f.evict(), Some(a));
        assert_eq!(f.evict(), Some(b));
        assert_eq!(f.evict(), None);
        assert_eq!(f.len(), 0);
    }

    /// Idle past the timeout, a flow expires; a registered one not before
    /// its registration ends.
    #[test]
    fn flows_expire_when_idle_unless_registered() {
        let t0 = Instant::now();
        let mut f = flows(10);
        let a = f.insert(t0, peer(1, None), Encoding::Plain);
        let b = f.insert(t0, peer(2, None), Encoding::Plain);
        f.set_registered_until(b, Some(t0 + 2 * IDLE));
        assert_eq!(f.next_deadline(), Some(t0 + IDLE));
        assert_eq!(f.expire_next(t0 + IDLE - Duration::from_secs(1)), None);
        assert_eq!(f.expire_next(t0 + IDLE), Some(a));
        assert_eq!(f.expire_next(t0 + IDLE), None);
        assert_eq!(f.standing(&peer(2, None)), Standing::Known);
        assert_eq!(f.expire_next(t0 + 2 * IDLE), Some(b));
        assert_eq!(f.standing(&peer(2, None)), Standing::Unknown);
    }

    /// A closed TCP connection takes its flow with it.
    #[test]
    fn a_closed_connection_forgets_its_flow() {
        let now = Instant::now();
        let mut f = flows(10);
        let t = f.insert(now, peer(5080, Some(7)), Encoding::SigComp);
        f.set_registered_until(t, Some(now + IDLE));
        assert_eq!(f.connection_registered_until(7), Some(now + IDLE));
        assert_eq!(f.close_connection(7), Some(t));
        assert_eq!(f.close_connection(7), None);
        assert_eq!(f.connection_registered_until(7), None);
        assert!(f.get(t).is_none() && f.by_addr(SipTransport::Tcp, peer(5080, None).addr).is_none());
    }

    /// An identifier longer than any URN a terminal needs is ignored: the
    /// terminal is known by its flow, and nothing of the identifier is
    /// kept. A flow remembers the identifier a message named.
    #[test]
    fn an_overlong_sigcomp_id_costs_no_more_than_a_flow() {
        let mut f = flows(10);
        let token = f.insert(Instant::now(), peer(5080, None), Encoding::SigComp);
        let long = format!("urn:x:{}", "a".repeat(20_000));
        assert_eq!(f.terminal(Some(&long), token), Terminal::Flow(token));
        assert_eq!(f.get(token).unwrap().terminal_id, None);
        let urn = "urn:uuid:00000000-0000-4000-8000-0000000000aa";
        assert_eq!(f.terminal(Some(urn), token), Terminal::Id(urn.into()));
        assert_eq!(f.terminal(Some(&long), token), Terminal::Id(urn.into()), "the flow's own identifier");
        assert_eq!(f.terminal(None, token), Terminal::Id(urn.into()));
        assert_eq!(f.identifiers(), (1, urn.len()));
    }

    /// A terminal's identifier learned by two flows names the one it used
    /// last; identifiers not asked for are left out.
    #[test]
    fn the_newest_flow_of_an_identifier_is_the_one_used_last() {
        let t0 = Instant::now();
        let mut f = flows(10);
        let (a, b, c) = (peer(5080, None), peer(5081, None), peer(5082, None));
        let (ta, tb, tc) =
            (f.insert(t0, a, Encoding::SigComp), f.insert(t0, b, Encoding::SigComp), f.insert(t0, c, Encoding::Plain));
        f.terminal(Some("urn:x:1"), ta);
        f.terminal(Some("urn:x:1"), tb);
        f.terminal(Some("urn:x:2"), tc);
        f.touch(t0 + Duration::from_secs(1), &a, Encoding::SigComp);
        let newest = f.newest_by_identifier(|id| id == "urn:x:1");
        assert_eq!(newest.len(), 1);
        assert_eq!(newest.get("urn:x:1"), Some(&a));
        f.touch(t0 + Duration::from_secs(2), &b, Encoding::SigComp);
        assert_eq!(f.newest_by_identifier(|_| true).get("urn:x:1"), Some(&b));
    }
}
