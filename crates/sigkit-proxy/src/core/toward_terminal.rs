//! Messages toward terminals: responses back along the Via path,
//! requests along the flow their Route or Request-URI names, compressed
//! in the terminal's compartment; and the registrar's 2xx, which starts or
//! ends a registration (RFC 5049 §6).

use super::*;

impl Proxy {
    /// A response of the proxy's own to a terminal's request.
    pub(super) fn reply_to_terminal(&mut self, now: Instant, to: Peer, app: &App, reply: Vec<u8>) {
        let encoding = self.flows.encoding(app.token);
        self.deliver_to_terminal(now, to, app, encoding, reply);
    }

    pub(super) fn response_toward_terminal(&mut self, now: Instant, msg: &Message<'_>) {
        let mut vias = msg.values(HeaderName::Via);
        let Some(ours) = vias.next() else { return };
        let our_via = ours.value_str().ok().and_then(|t| sigkit_sip::Via::parse(t).ok());
        let Some(branch) =
            our_via.as_ref().and_then(|v| v.branch().filter(|b| b.starts_with(BRANCH_PREFIX)).map(str::to_string))
        else {
            self.metrics.undeliverable += 1;
            return;
        };
        let code = msg.status_code().unwrap_or(0);
        self.overload.response(now, &branch, code, our_via.as_ref());
        if self.transactions.is_stateful() && !self.response_in_transaction(now, &branch, msg, code) {
            return;
        }
        // A removed registration's compartments close once this response,
        // compressed in one of them, is on its way.
        let mut deregistered = None;
        if code >= 200 {
            if let Some(held) = self.registrar.held.remove(&branch) {
                let ok = (200..300).contains(&code);
                if ok && self.register_ok(now, msg, &held) {
                    deregistered = Some(held.terminal.clone());
                }
                self.decide(now, held.incoming, held.compartment, ok);
            }
        }
        let Some(next) = vias.next().and_then(|v| v.value_str().ok()).and_then(|t| sigkit_sip::Via::parse(t).ok())
        else {
            self.metrics.undeliverable += 1;
            return;
        };
        let (host, port) = next.response_target();
        let Some(addr) = socket_addr(host, port.or(next.port).unwrap_or(5060)) else {
            self.metrics.undeliverable += 1;
            return;
        };
        let transport = if next.transport.eq_ignore_ascii_case("TCP") { SipTransport::Tcp } else { SipTransport::Udp };
        let encoding = if next.is_sigcomp() { Encoding::SigComp } else { Encoding::Plain };
        let known = self.flows.by_addr(transport, addr);
        let Some((token, to)) = known.or_else(|| self.udp_flow_for_response(now, transport, addr, encoding)) else {
            self.metrics.undeliverable += 1;
            return;
        };
        // RFC 5049 §6.1: a response goes to the application that sent the
        // request (named by the sigcomp-id of its Via), in the compartment
        // of the name it sent the request to (carried in the proxy's Via).
        let terminal = self.flows.terminal(next.sigcomp_id(), token);
        let name = our_via.as_ref().and_then(ProxyName::from_via).unwrap_or(self.identity.our_name);
        let app = App { token, terminal, name };
        let mut e = Editor::new(msg);
        if e.remove_top_via().is_err() {
            self.metrics.undeliverable += 1;
            return;
        }
        let out = e.emit();
        self.transactions.remember_response(&branch, &out);
        self.deliver_to_terminal(now, to, &app, encoding, out);
        if let Some(terminal) = deregistered {
            for c in self.registrar.drop_compartments(&terminal) {
                self.compression.endpoint.close_compartment(c);
            }
        }
    }

    /// A 2xx to a REGISTER: the terminal's compartment and flow live until
    /// its bindings expire (RFC 5049 §6.5, [`registrar::binding_expiry`]).
    /// True when its registration has ended; a query (no Contact) changes
    /// nothing.
    fn register_ok(&mut self, now: Instant, msg: &Message<'_>, held: &HeldRegister) -> bool {
        let Some(expires) = registrar::binding_expiry(msg, &held.contacts) else { return false };
        let until = (expires > 0).then(|| now + Duration::from_secs(u64::from(expires)));
        self.flows.set_registered_until(held.token, until);
        // RFC 3261 §10.2: the To header of a REGISTER, and of its 2xx,
        // holds the address of record.
        let aor = msg.to().map(|to| to.uri).unwrap_or_default();
        match self.registrar.register(&held.terminal, until, aor, held.token) {
            Registration::Kept => false,
            Registration::NotKept => {
                self.metrics.registrations_not_kept += 1;
                false
            }
            Registration::Ended => true,
        }
    }

    pub(super) fn request_toward_terminal(&mut self, now: Instant, msg: &Message<'_>) {
        let routed = self.identity.our_route_token(msg);
        // Without a live flow of ours in the token, the Request-URI names
        // the terminal's address (its registered Contact).
        let live = match routed {
            RouteToken::Own(t) => self.flows.get(t).map(|f| (t, f.peer)),
            RouteToken::Absent | RouteToken::Foreign => None,
        };
        let target = live.or_else(|| {
            let uri = msg.request_uri().ok()?;
            let t = if uri.transport().is_some_and(|t| t.eq_ignore_ascii_case("tcp")) {
                SipTransport::Tcp
            } else {
                SipTransport::Udp
            };
            let addr = socket_addr(uri.host, uri.port.unwrap_or(5060))?;
            self.flows.by_addr(t, addr)
        });
        let Some((token, to)) = target else {
            self.metrics.undeliverable += 1;
            // RFC 5626 §5.3: a request for a flow that no longer exists
            // here (another instance's, or one forgotten) is answered 430
            // Flow Failed; one that names no flow, 404.
            let (code, reason) = match routed {
                RouteToken::Absent => (404, "Not Found"),
                RouteToken::Own(_) | RouteToken::Foreign => (430, "Flow Failed"),
            };
            if msg.method() != Some("ACK") {
                if let Ok(reply) = build_response(msg, code, reason, Some(&self.identity.to_tag(msg)), &[]) {
                    self.send_upstream(reply);
                }
            }
            return;
        };
        let encoding = self.flows.encoding(token);
        match self.edit_toward_terminal(msg, token, &to, encoding) {
            Ok(out) => {
                // RFC 5049 §6.1: the terminal is named by the Request-URI's
                // sigcomp-id, else as its flow knows it; it files this
                // request under the sigcomp-id of the proxy's Via.
                let id = msg.request_uri().ok().and_then(|u| u.sigcomp_id());
                let terminal = self.flows.terminal(id, token);
                let app = App { token, terminal, name: self.identity.our_name };
                self.deliver_to_terminal(now, to, &app, encoding, out);
            }
            Err(err) => {
                self.metrics.bad_sip += 1;
                let reply = matches!(err, EditError::TooManyHops).then(|| self.identity.too_many_hops(msg)).flatten();
                if let Some(reply) = reply {
                    self.send_upstream(reply);
                }
            }
        }
    }

    /// A request from the upstream as it goes to the terminal on flow
    /// `token` at `to`: the Route entries naming the proxy consumed, the
    /// proxy's Via, a double Record-Route on a dialog-forming request, and
    /// Max-Forwards decremented (RFC 3261 §16.6).
    fn edit_toward_terminal(
        &self,
        msg: &Message<'_>,
        token: u64,
        to: &Peer,
        encoding: Encoding,
    ) -> Result<Vec<u8>, EditError> {
        let method = msg.method().unwrap_or("");
        let via = self.identity.terminal_via(to, &self.identity.branch_for(msg), encoding);
        let mut e = Editor::new(msg);
        e.remove_leading_routes_if(|na| na.sip_uri().is_ok_and(|u| self.identity.is_ours(u.host, u.port)))?;
        e.prepend_via(&via)?;
        if is_dialog_forming(method) && !msg.to().is_ok_and(|t| t.tag().is_some()) {
            // The terminal is the UAS: its route set is the
            // Record-Route in order, so the terminal's side on top.
            e.prepend_record_route(&self.terminal_uri(token))?;
            e.prepend_record_route(&self.identity.upstream_uri(token))?;
        }
        e.decrement_max_forwards()?;
        Ok(e.emit())
    }

    /// Sends `sip` to a terminal, compressed in the compartment of `app`
    /// where it speaks SigComp.
    pub(super) fn deliver_to_terminal(&mut self, now: Instant, to: Peer, app: &App, encoding: Encoding, sip: Vec<u8>) {
        self.flows.sent_to(app.token, now);
        if self.capturing() {
            self.capture(Direction::ToTerminal, &to, &sip);
        }
        // Read before `sip` moves into the compressor.
        let summary = trace::enabled().then(|| Summary::parse(&sip));
        if encoding == Encoding::Plain {
            if let Some(summary) = summary {
                trace::message(
                    Direction::ToTerminal,
                    self.identity.shard.index,
                    &to,
                    &summary,
                    trace::SigComp::default(),
                );
            }
            self.send(Side::Terminal, to, sip, Encoding::Plain);
            return;
        }
        let compartment = self.compartment_for(&app.terminal, app.name);
        let sip_len = sip.len() as u64;
        let compressed = self.compression.compress(now, compartment, to, sip);
        if let Some(summary) = summary {
            let bytes = compressed.as_ref().ok().map(|c| c.message.len());
            let sigcomp = trace::SigComp { compartment: Some(compartment), bytes, ..Default::default() };
            trace::message(Direction::ToTerminal, self.identity.shard.index, &to, &summary, sigcomp);
        }
        match compressed {
            Ok(c) => {
                self.registrar.compartments.to_terminal(compartment, c.uploaded_bytecode);
                self.metrics.sigcomp_sip_bytes_out += sip_len;
                self.metrics.sigcomp_bytes_out += c.message.len() as u64;
                self.send(Side::Terminal, to, c.message, Encoding::SigComp);
            }
            Err((e, sip)) => {
                // RFC 5049 §4: plain SIP is always understood.
                tracing::warn!(error = %e, "compression failed; sending plain SIP");
                self.metrics.compress_failures += 1;
                self.send(Side::Terminal, to, sip, Encoding::Plain);
            }
        }
    }
}
