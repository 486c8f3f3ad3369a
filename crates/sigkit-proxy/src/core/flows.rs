//! Terminals' flows: the token each message's entries carry, which
//! terminal and compartment a message belongs to, and when an idle flow
//! is forgotten (soft state; RFC 5626's flow tokens serve the same purpose).

use super::*;

impl Proxy {
    /// The flow token of `peer`, made on first sight.
    pub(super) fn token(&mut self, now: Instant, peer: Peer, sigcomp: bool) -> u64 {
        if let Some(&t) = self.flow_tokens.get(&peer) {
            if let Some(f) = self.flows.get_mut(&t) {
                f.sigcomp |= sigcomp;
                f.last_seen = now;
            }
            return t;
        }
        while self.flows.len() >= self.max_flows {
            if !self.evict_flow() {
                break;
            }
        }
        let t = self.next_token * u64::from(self.shard.count.max(1)) + u64::from(self.shard.index);
        self.next_token += 1;
        self.flow_tokens.insert(peer, t);
        self.by_addr.insert((peer.transport, peer.addr), t);
        if let Some(c) = peer.conn {
            self.by_conn.insert(c, peer);
        }
        let flow = Flow { peer, sigcomp, terminal_id: None, last_seen: now, registered_until: None, trusted: false };
        self.flow_deadlines.push(Reverse((self.flow_deadline(&flow), t)));
        self.flows.insert(t, flow);
        // Entries of flows gone (TCP connections closed) wait for their
        // time in the heap; rebuilt, it holds only live flows again.
        if self.flow_deadlines.len() > 2 * self.max_flows.max(self.flows.len()) + 64 {
            let live = self.flows.iter().map(|(t, f)| Reverse((self.flow_deadline(f), *t))).collect();
            self.flow_deadlines = live;
        }
        t
    }

    /// When `f` may be forgotten: idle long enough, and not registered.
    pub(super) fn flow_deadline(&self, f: &Flow) -> Instant {
        let idle = f.last_seen + self.flow_idle;
        f.registered_until.map_or(idle, |r| r.max(idle))
    }

    /// Forgets the flow whose deadline comes first; false if none is left.
    pub(super) fn evict_flow(&mut self) -> bool {
        while let Some(Reverse((at, t))) = self.flow_deadlines.pop() {
            let Some(f) = self.flows.get(&t) else { continue };
            let deadline = self.flow_deadline(f);
            if deadline > at {
                self.flow_deadlines.push(Reverse((deadline, t)));
                continue;
            }
            self.remove_flow(t);
            return true;
        }
        false
    }

    /// Forgets the flows past their deadline.
    pub(super) fn expire_flows(&mut self, now: Instant) {
        while let Some(&Reverse((at, t))) = self.flow_deadlines.peek() {
            if at > now {
                break;
            }
            self.flow_deadlines.pop();
            let Some(f) = self.flows.get(&t) else { continue };
            let deadline = self.flow_deadline(f);
            if deadline > now {
                self.flow_deadlines.push(Reverse((deadline, t)));
            } else {
                self.remove_flow(t);
            }
        }
    }

    /// Forgets flow `t`, and the compartments and registration of the
    /// terminal it named if nothing else can name that terminal (it has no
    /// `sigcomp-id`).
    pub(super) fn remove_flow(&mut self, t: u64) {
        let Some(f) = self.flows.remove(&t) else { return };
        let p = f.peer;
        if self.flow_tokens.get(&p) == Some(&t) {
            self.flow_tokens.remove(&p);
        }
        if self.by_addr.get(&(p.transport, p.addr)) == Some(&t) {
            self.by_addr.remove(&(p.transport, p.addr));
        }
        if let Some(conn) = p.conn {
            if self.by_conn.get(&conn) == Some(&p) {
                self.by_conn.remove(&conn);
            }
        }
        let legacy = Terminal::Flow(t);
        self.compartments.unregister(&legacy);
        for c in self.compartments.of(&legacy) {
            self.close_compartment(c);
        }
    }

    /// Whether the proxy knows where a SigComp message comes from: its
    /// flow had a message's state accepted, or carries a registration.
    pub(super) fn standing(&self, from: &Peer) -> Standing {
        let known = self
            .flow_tokens
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

    /// Terminal flows remembered.
    pub fn flow_count(&self) -> usize {
        self.flows.len()
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

    /// The compartment of `terminal` under `name` ([`crate::compartments`]);
    /// past the terminal's cap of names, the one it used longest ago
    /// closes.
    pub(super) fn compartment_for(&mut self, terminal: &Terminal, name: ProxyName) -> CompartmentId {
        let (c, over) = self.compartments.get(terminal, name);
        if let Some(old) = over {
            self.close_compartment(old);
        }
        c
    }

    pub(super) fn flow_by_addr(&self, transport: SipTransport, addr: SocketAddr) -> Option<(u64, Peer)> {
        let t = *self.by_addr.get(&(transport, addr))?;
        Some((t, self.flows.get(&t)?.peer))
    }

    /// A flow for a response to a UDP terminal the proxy has none for: one
    /// it forgot (idle, or lost in a restart). Over UDP a response goes to
    /// the address its Via names (RFC 3261 §18.2.2), flow or none; it
    /// leaves from the proxy's first UDP socket toward terminals.
    pub(super) fn udp_flow_for_response(
        &mut self,
        now: Instant,
        transport: SipTransport,
        addr: SocketAddr,
        sigcomp: bool,
    ) -> Option<(u64, Peer)> {
        if transport != SipTransport::Udp {
            return None;
        }
        let local = self.addrs.terminal.iter().find(|(t, _)| *t == SipTransport::Udp).map(|(_, a)| *a)?;
        let peer = Peer { transport, addr, local: Some(local), conn: None };
        Some((self.token(now, peer, sigcomp), peer))
    }

    /// A terminal's TCP connection closed: its flow is gone (RFC 5626
    /// §5.2: a flow that fails is not reused).
    /// Until when a registration made over TCP connection `conn` lasts,
    /// if one does: the connection is then how the registrar's requests
    /// reach the terminal (RFC 5626 §5.3, RFC 3261 §18.3), and idleness
    /// alone does not close it.
    pub fn connection_registered_until(&self, conn: u64) -> Option<Instant> {
        let peer = self.by_conn.get(&conn)?;
        self.flows.get(self.flow_tokens.get(peer)?)?.registered_until
    }

    pub fn connection_closed(&mut self, conn: u64) {
        self.sent_over_tcp.remove(&conn);
        let Some(p) = self.by_conn.get(&conn).copied() else { return };
        if let Some(&t) = self.flow_tokens.get(&p) {
            self.remove_flow(t);
        }
        self.by_conn.remove(&conn);
    }
}
