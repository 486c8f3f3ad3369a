//! Messages toward terminals: responses back along the Via path,
//! requests along the flow their Route or Request-URI names, compressed
//! in the terminal's compartment; and the registrar's 2xx, which starts or
//! ends a registration (RFC 5049 §6).

use super::*;

impl Proxy {
    /// A response of the proxy's own to a terminal's request.
    pub(super) fn reply_to_terminal(&mut self, now: Instant, to: Peer, app: &App, reply: Vec<u8>) {
        let sigcomp = self.flows.get(&app.token).is_some_and(|f| f.sigcomp);
        self.deliver_to_terminal(now, to, app, sigcomp, reply);
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
        if self.stateful && !self.response_in_transaction(now, &branch, msg, code) {
            return;
        }
        // A removed registration's compartments close once this response,
        // compressed in one of them, is on its way.
        let mut deregistered = None;
        if code >= 200 {
            if let Some(held) = self.held.remove(&branch) {
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
        let sigcomp = next.is_sigcomp();
        let known = self.flow_by_addr(transport, addr);
        let Some((token, to)) = known.or_else(|| self.udp_flow_for_response(now, transport, addr, sigcomp)) else {
            self.metrics.undeliverable += 1;
            return;
        };
        // RFC 5049 §6.1: a response goes to the application that sent the
        // request (named by the sigcomp-id of its Via), in the compartment
        // of the name it sent the request to (carried in the proxy's Via).
        let terminal = self.terminal(next.sigcomp_id(), token);
        let name = our_via.as_ref().and_then(ProxyName::from_via).unwrap_or(self.our_name);
        let app = App { token, terminal, name };
        let mut e = Editor::new(msg);
        if e.remove_top_via().is_err() {
            self.metrics.undeliverable += 1;
            return;
        }
        let out = e.emit();
        if let Some(t) = self.transactions.get_mut(&branch) {
            t.last_response = Some(out.clone());
        }
        self.deliver_to_terminal(now, to, &app, sigcomp, out);
        if let Some(terminal) = deregistered {
            for c in self.compartments.of(&terminal) {
                self.close_compartment(c);
            }
        }
    }

    /// A 2xx to a REGISTER: the terminal's compartment and flow live until
    /// its bindings expire (RFC 5049 §6.5). The 2xx lists every binding of
    /// the address of record (RFC 3261 §10.3 step 8); the terminal's are
    /// those its request named, and when none is left its registration has
    /// ended. True when it has; a query (no Contact) changes nothing.
    pub(super) fn register_ok(&mut self, now: Instant, msg: &Message<'_>, held: &HeldRegister) -> bool {
        let default = msg.expires().ok().flatten().unwrap_or(3600);
        let expires = match (&held.contacts, msg.contacts()) {
            (Some(mine), _) if mine.is_empty() => return false,
            (Some(mine), Ok(sigkit_sip::Contacts::List(list))) => list
                .iter()
                .filter(|c| {
                    c.sip_uri().is_ok_and(|u| {
                        mine.iter().any(|(user, host, port)| {
                            u.user.unwrap_or("") == user && u.host.eq_ignore_ascii_case(host) && u.port == *port
                        })
                    })
                })
                .map(|c| c.expires().unwrap_or(default))
                .max()
                .unwrap_or(0),
            _ => 0,
        };
        let until = (expires > 0).then(|| now + Duration::from_secs(u64::from(expires)));
        if let Some(f) = self.flows.get_mut(&held.token) {
            f.registered_until = until;
        }
        match until {
            Some(t) => {
                if !self.compartments.register(held.terminal.clone(), t, self.max_registrations) {
                    self.metrics.registrations_not_kept += 1;
                }
                false
            }
            None => {
                self.compartments.unregister(&held.terminal);
                true
            }
        }
    }

    pub(super) fn request_toward_terminal(&mut self, now: Instant, msg: &Message<'_>) {
        let routed = self.our_route_token(msg);
        // Without a live flow of ours in the token, the Request-URI names
        // the terminal's address (its registered Contact).
        let live = match routed {
            RouteToken::Own(t) => self.flows.get(&t).map(|f| (t, f.peer)),
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
            self.flow_by_addr(t, addr)
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
                if let Ok(reply) = build_response(msg, code, reason, Some(&self.to_tag(msg)), &[]) {
                    let up = self.upstream_peer();
                    self.send(Side::Upstream, up, reply, false);
                }
            }
            return;
        };
        let sigcomp = self.flows.get(&token).is_some_and(|f| f.sigcomp);
        let method = msg.method().unwrap_or("");
        let local = self.terminal_addr(to.transport, to.local);
        let id = sigcomp.then_some(self.sigcomp_id.as_str());
        let via = format_via(
            to.transport.via_token(),
            &self.host_of(local),
            Some(local.port()),
            &self.branch_for(msg),
            id,
            false,
        );
        let mut e = Editor::new(msg);
        let edited = (|| -> Result<(), EditError> {
            e.remove_leading_routes_if(|na| na.sip_uri().is_ok_and(|u| self.is_ours(u.host, u.port)))?;
            e.prepend_via(&via)?;
            if is_dialog_forming(method) && !msg.to().is_ok_and(|t| t.tag().is_some()) {
                // The terminal is the UAS: its route set is the
                // Record-Route in order, so the terminal's side on top.
                e.prepend_record_route(&self.terminal_uri(token))?;
                e.prepend_record_route(&self.upstream_uri(token))?;
            }
            e.decrement_max_forwards()?;
            Ok(())
        })();
        match edited {
            Ok(()) => {
                let out = e.emit();
                // RFC 5049 §6.1: the terminal is named by the Request-URI's
                // sigcomp-id, else as its flow knows it; it files this
                // request under the sigcomp-id of the proxy's Via.
                let id = msg.request_uri().ok().and_then(|u| u.sigcomp_id());
                let terminal = self.terminal(id, token);
                let app = App { token, terminal, name: self.our_name };
                self.deliver_to_terminal(now, to, &app, sigcomp, out);
            }
            Err(err) => {
                self.metrics.bad_sip += 1;
                if let Some(reply) = matches!(err, EditError::TooManyHops).then(|| self.too_many_hops(msg)).flatten() {
                    let up = self.upstream_peer();
                    self.send(Side::Upstream, up, reply, false);
                }
            }
        }
    }

    /// 483 Too Many Hops (RFC 3261 §16.3 item 2).
    pub(super) fn too_many_hops(&self, msg: &Message<'_>) -> Option<Vec<u8>> {
        sigkit_sip::proxy::too_many_hops(msg, &self.to_tag(msg)).ok()
    }

    /// A To tag for a response the proxy makes itself (RFC 3261 §8.2.6.2):
    /// the same for a retransmission of the request.
    pub(super) fn to_tag(&self, msg: &Message<'_>) -> String {
        self.branch_for(msg).rsplit('.').next().unwrap_or("").to_string()
    }

    /// Sends `sip` to a terminal, compressed in the compartment of `app`
    /// where it speaks SigComp.
    pub(super) fn deliver_to_terminal(&mut self, now: Instant, to: Peer, app: &App, sigcomp: bool, sip: Vec<u8>) {
        if let Some(f) = self.flows.get_mut(&app.token) {
            f.last_seen = now;
        }
        if !sigcomp {
            self.send(Side::Terminal, to, sip, false);
            return;
        }
        let compartment = self.compartment_for(&app.terminal, app.name);
        if self.endpoint.peer(compartment).is_none() {
            let transport = match to.transport {
                SipTransport::Udp => Transport::Message,
                SipTransport::Tcp => Transport::Stream,
            };
            self.endpoint.open_compartment(now, compartment, transport);
        }
        match self.endpoint.compress(now, compartment, &sip) {
            Ok(c) => {
                self.compartments.to_terminal(compartment, c.uploaded_bytecode);
                self.metrics.sigcomp_sip_bytes_out += sip.len() as u64;
                self.metrics.sigcomp_bytes_out += c.message.len() as u64;
                self.send(Side::Terminal, to, c.message, true);
                if let (SipTransport::Tcp, Some(conn)) = (to.transport, to.conn) {
                    let sent = self.sent_over_tcp.entry(conn).or_default();
                    if sent.len() >= RESEND_PER_FLOW {
                        sent.pop_front();
                    }
                    sent.push_back(SentOverTcp { sha1: c.sha1, compartment, to, sip });
                }
            }
            Err(e) => {
                // RFC 5049 §4: plain SIP is always understood.
                tracing::warn!(error = %e, "compression failed; sending plain SIP");
                self.metrics.compress_failures += 1;
                self.send(Side::Terminal, to, sip, false);
            }
        }
    }
}
