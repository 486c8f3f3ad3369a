//! Messages from terminals, decompressed: which terminal and compartment
//! each belongs to, whether its state is kept (RFC 5049 §6), and the
//! request or response as it goes on to the upstream.

use super::*;

impl Proxy {
    /// A SIP message from a terminal: plain, or decompressed from a SigComp
    /// message of `wire_len` bytes (`incoming`).
    pub(super) fn sip_from_terminal(
        &mut self,
        now: Instant,
        from: Peer,
        bytes: &[u8],
        incoming: Option<Incoming>,
        wire_len: usize,
    ) {
        let encoding = if incoming.is_some() { Encoding::SigComp } else { Encoding::Plain };
        if self.capturing() {
            self.capture(trace::Direction::FromTerminal, &from, bytes);
        }
        let Ok(msg) = Message::parse(bytes) else {
            self.trace_arrival(&from, None, bytes.len(), incoming.as_ref(), wire_len, None);
            self.metrics.bad_sip += 1;
            self.decide(now, incoming, None, false);
            return;
        };
        let token = self.token(now, from, encoding);
        if msg.is_request() {
            self.request_from_terminal(now, from, &msg, token, incoming, wire_len);
        } else {
            // A response of the terminal's (it is the UAS) to a request of
            // the proxy's, whose Via named the proxy by its sigcomp-id: the
            // terminal filed the request, and so its response, under that
            // name (RFC 5049 §6.1, "Incoming requests", "Outgoing
            // responses").
            let terminal = self.flows.terminal(None, token);
            let c = encoding.is_sigcomp().then(|| self.compartment_for(&terminal, self.identity.our_name));
            self.trace_arrival(&from, Some(&msg), bytes.len(), incoming.as_ref(), wire_len, c);
            let accept = self.registrar.compartments.is_registered(&terminal);
            if accept {
                self.flows.trust(token);
            }
            self.decide(now, incoming, c, accept);
            self.response_toward_upstream(&msg);
        }
    }

    fn request_from_terminal(
        &mut self,
        now: Instant,
        from: Peer,
        msg: &Message<'_>,
        token: u64,
        incoming: Option<Incoming>,
        wire_len: usize,
    ) {
        if msg.top_via().is_err() {
            self.trace_arrival(&from, Some(msg), msg.input().len(), incoming.as_ref(), wire_len, None);
            self.metrics.bad_sip += 1;
            self.decide(now, incoming, None, false);
            return;
        }
        // RFC 5049 §6.1: the terminal is named by the Via's sigcomp-id,
        // else the Contact's +sip.instance, else its flow; it filed this
        // request under the name of the URI it sent it to.
        let terminal = self.flows.terminal(sigkit_sip::compartment::sigcomp_id(msg), token);
        let name = ProxyName::of_request(msg).unwrap_or(self.identity.our_name);
        let compartment = incoming.is_some().then(|| self.compartment_for(&terminal, name));
        self.trace_arrival(&from, Some(msg), msg.input().len(), incoming.as_ref(), wire_len, compartment);
        let registered = self.registrar.compartments.is_registered(&terminal);
        if registered {
            self.flows.trust(token);
        }
        let app = App { token, terminal, name };
        let method = msg.method().unwrap_or("");
        let stateful = self.transactions.is_stateful();
        if stateful && self.absorbed(now, msg, method) {
            self.decide(now, incoming, compartment, registered);
            return;
        }
        // §16.10: a CANCEL of an INVITE the proxy holds a transaction for
        // is answered here and cancels the proxy's own client transaction;
        // one that matches nothing is forwarded statelessly, below.
        if stateful && method == "CANCEL" {
            let branch = self.identity.branch_for(msg);
            if self.transactions.holds_invite(&branch) {
                self.decide(now, incoming, compartment, registered);
                self.cancel_invite(now, from, &app, msg, &branch);
                return;
            }
        }
        if self.overload.admit(now, sheddable(msg, method)) == Admission::Reject {
            let reply = self.service_unavailable(msg);
            self.decide(now, incoming, compartment, false);
            if let Some(reply) = reply {
                self.reply_to_terminal(now, from, &app, reply);
            }
            return;
        }
        let branch = self.identity.branch_for(msg);
        let out = match self.edit_toward_upstream(msg, from, token, name, &branch) {
            Ok(out) => out,
            Err(err) => {
                self.metrics.bad_sip += 1;
                let reply = matches!(err, EditError::TooManyHops).then(|| self.identity.too_many_hops(msg)).flatten();
                self.decide(now, incoming, compartment, false);
                if let Some(reply) = reply {
                    self.reply_to_terminal(now, from, &app, reply);
                }
                return;
            }
        };
        // RFC 5049 §6: a registered terminal's state is kept; an
        // unregistered terminal's REGISTER's waits for the registrar's 2xx;
        // nobody else's is kept. Every REGISTER is held for its answer,
        // which may end or renew the registration.
        if method == "REGISTER" {
            self.hold_register(now, from, msg, &app, &branch, incoming, compartment, registered);
        } else {
            self.decide(now, incoming, compartment, registered);
        }
        if method != "ACK" {
            self.overload.forwarded(now, &branch);
        }
        if stateful && !matches!(method, "ACK" | "CANCEL") {
            self.start_transaction(now, msg, from, app, branch, &out);
        }
        self.send_upstream(out);
    }

    /// Overload control's answer to a request it sheds: 503 with
    /// Retry-After (RFC 3261 §21.5.4).
    fn service_unavailable(&self, msg: &Message<'_>) -> Option<Vec<u8>> {
        let retry = self.overload.retry_after_s().to_string();
        let tag = self.identity.to_tag(msg);
        build_response(msg, 503, "Service Unavailable", Some(&tag), &[("Retry-After", &retry)]).ok()
    }

    /// `msg` as it goes to the upstream (RFC 3261 §16.6): `received` and
    /// `rport` on the terminal's Via (§18.2.1, RFC 3581 §4), the Route
    /// entries naming the proxy consumed, the proxy's Via (with overload
    /// control's parameter and, so that the response comes back in the
    /// compartment of this name, the name's), Path on a REGISTER (RFC 3327)
    /// or a double Record-Route on a dialog-forming request, and
    /// Max-Forwards decremented.
    fn edit_toward_upstream(
        &self,
        msg: &Message<'_>,
        from: Peer,
        token: u64,
        name: ProxyName,
        branch: &str,
    ) -> Result<Vec<u8>, EditError> {
        let method = msg.method().unwrap_or("");
        let mut via = self.identity.upstream_via(branch);
        via.push_str(self.overload.via_param());
        via.push_str(&name.via_param());
        let mut e = Editor::new(msg);
        e.fill_top_via(from.addr)?;
        e.remove_leading_routes_if(|na| na.sip_uri().is_ok_and(|u| self.identity.is_ours(u.host, u.port)))?;
        e.prepend_via(&via)?;
        if method == "REGISTER" {
            e.prepend_path(&self.identity.upstream_uri(token))?;
        } else if is_dialog_forming(method) && !msg.to().is_ok_and(|t| t.tag().is_some()) {
            // Double Record-Route: the upstream's side on top, the
            // terminal's below (the terminal, as UAC, uses the reverse
            // order).
            e.prepend_record_route(&self.identity.upstream_uri(token))?;
            e.prepend_record_route(&self.terminal_uri(token))?;
        }
        e.decrement_max_forwards()?;
        Ok(e.emit())
    }

    /// A URI of the proxy on the terminal side of flow `token`
    /// ([`Identity::terminal_uri`]).
    pub(super) fn terminal_uri(&self, token: u64) -> String {
        let peer = self.flows.get(token).map(|f| &f.peer);
        self.identity.terminal_uri(token, peer, self.flows.encoding(token))
    }

    /// A REGISTER from a terminal, forwarded: held for its final answer,
    /// which may start, renew or end the registration. RFC 5049 §6: a
    /// registered terminal's state is kept at once; an unregistered
    /// terminal's waits for the registrar's 2xx; past the caps of
    /// [`crate::pending`] the REGISTER goes on and its state is declined.
    #[allow(clippy::too_many_arguments)]
    fn hold_register(
        &mut self,
        now: Instant,
        from: Peer,
        msg: &Message<'_>,
        app: &App,
        branch: &str,
        incoming: Option<Incoming>,
        compartment: Option<CompartmentId>,
        registered: bool,
    ) {
        if let Some(old) = self.registrar.held.remove(branch) {
            self.decide(now, old.incoming, old.compartment, false);
        }
        let contacts = registrar::register_bindings(msg);
        let source = from.addr.ip();
        if self.registrar.held.admits(source).is_err() {
            self.decide(now, incoming, compartment, registered);
            return;
        }
        let incoming = match incoming {
            Some(i) if registered => {
                self.decide(now, Some(i), compartment, true);
                None
            }
            Some(i) if !self.registrar.held.fits(&i) => {
                self.decide(now, Some(i), compartment, false);
                None
            }
            other => other,
        };
        let deadline = now + TRANSACTION_TIMEOUT;
        let token = app.token;
        let terminal = app.terminal.clone();
        let held = HeldRegister { incoming, compartment, terminal, token, contacts, deadline, source };
        if let Some(old) = self.registrar.held.insert(branch.to_string(), held) {
            self.decide(now, old.incoming, old.compartment, false);
        }
    }

    /// A response going to the upstream: the proxy's Via off, the rest as is.
    fn response_toward_upstream(&mut self, msg: &Message<'_>) {
        let mut vias = msg.values(HeaderName::Via);
        // Ours on top, and below it the Via the response goes back to.
        let (Some(ours), Some(_)) = (vias.next(), vias.next()) else {
            self.metrics.undeliverable += 1;
            return;
        };
        if !ours.value_str().is_ok_and(|v| v.contains(BRANCH_PREFIX)) {
            self.metrics.undeliverable += 1;
            return;
        }
        let mut e = Editor::new(msg);
        if e.remove_top_via().is_err() {
            self.metrics.undeliverable += 1;
            return;
        }
        self.send_upstream(e.emit());
    }

    /// The event of a message from a terminal ([`trace`]), written once its
    /// compartment is known and before anything it causes is sent: the SIP
    /// message (`None` when it does not parse) of `sip_len` bytes, and for
    /// a SigComp one its `wire_len` bytes and the cycles its decompression
    /// took.
    #[inline]
    fn trace_arrival(
        &self,
        from: &Peer,
        msg: Option<&Message<'_>>,
        sip_len: usize,
        incoming: Option<&Incoming>,
        wire_len: usize,
        compartment: Option<CompartmentId>,
    ) {
        if !trace::enabled() {
            return;
        }
        let sip = msg.map_or_else(|| trace::Summary::unparsed(sip_len), trace::Summary::of);
        let sigcomp = trace::SigComp {
            compartment,
            bytes: incoming.is_some().then_some(wire_len),
            cycles: incoming.map(Incoming::cycles),
            ..Default::default()
        };
        trace::message(trace::Direction::FromTerminal, self.identity.shard.index, from, &sip, sigcomp);
    }
}

/// Whether overload control may shed `msg`: only requests that start
/// something new (out of dialog, not ACK or CANCEL).
fn sheddable(msg: &Message<'_>, method: &str) -> bool {
    !matches!(method, "ACK" | "CANCEL") && !msg.to().is_ok_and(|t| t.tag().is_some())
}
