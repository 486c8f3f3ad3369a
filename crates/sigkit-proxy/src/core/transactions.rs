//! Stateful mode (RFC 3261 §16.6 step 9, §17): a server transaction per
//! request from a terminal, paired with a client transaction toward the
//! upstream; retransmissions absorbed or sent again; CANCEL (§16.10) and
//! the timers (Timer C, §16.8's 408).

use super::*;

impl Proxy {
    /// Stateful mode: whether `msg` from a terminal belongs to a
    /// transaction the proxy has (RFC 3261 §17.2.3), and is absorbed
    /// there: a retransmitted request, answered with the last response
    /// sent (§17.2.1, §17.2.2), or the ACK of a non-2xx final response,
    /// which ends at the proxy (§16.7: the proxy's client transaction
    /// acknowledged the upstream itself).
    pub(super) fn absorbed(&mut self, now: Instant, msg: &Message<'_>, method: &str) -> bool {
        if method == "CANCEL" {
            return false;
        }
        let branch = self.branch_for(msg);
        let Some(t) = self.transactions.get_mut(&branch) else { return false };
        let resend = if method == "ACK" {
            // The ACK of a 2xx is a request of its own (another branch,
            // §17.1.1.3), so only a non-2xx one should find the INVITE
            // here; one that reuses the INVITE's branch anyway goes on.
            if t.method != "INVITE" || !matches!(t.server.state(), State::Completed | State::Confirmed) {
                return false;
            }
            t.server.on_request(now, true);
            false
        } else if t.method == method {
            self.metrics.absorbed_requests += 1;
            t.server.on_request(now, false).retransmit
        } else {
            return false;
        };
        let at = t.next_timeout();
        let again = resend.then(|| (t.last_response.clone(), t.to, t.app.clone(), t.sigcomp));
        self.transaction_due_at(at);
        if let Some((Some(r), to, app, sigcomp)) = again {
            self.deliver_to_terminal(now, to, &app, sigcomp, r);
        }
        true
    }

    /// The timers of a new client transaction toward the upstream, which
    /// is reached over UDP: its T1 is overload control's (H1 raises it for
    /// new transactions).
    pub(super) fn upstream_timers(&self, now: Instant) -> Timers {
        let t1 = self.overload.t1(now);
        Timers { t1, t2: Timers::default().t2.max(t1), ..Timers::default() }
    }

    /// Makes the stateful mode's timers run no later than `at`.
    pub(super) fn transaction_due_at(&mut self, at: Instant) {
        self.transactions_due = Some(self.transactions_due.map_or(at, |d| d.min(at)));
    }

    /// Stateful mode: a terminal's CANCEL of the INVITE transaction
    /// `branch` (RFC 3261 §16.10). The proxy answers it 200 itself, and
    /// cancels its client transaction toward the upstream: at once if that
    /// has a provisional response, else when one comes (§9.1). The 487 the
    /// upstream then sends ends the INVITE as any final response does. A
    /// retransmitted CANCEL gets the 200 again and nothing more.
    pub(super) fn cancel_invite(&mut self, now: Instant, from: Peer, app: &App, msg: &Message<'_>, branch: &str) {
        if let Ok(ok) = build_response(msg, 200, "OK", Some(&self.to_tag(msg)), &[]) {
            self.reply_to_terminal(now, from, app, ok);
        }
        let Some(t) = self.transactions.get_mut(branch) else { return };
        // Already cancelled, or answered finally: nothing left to cancel
        // (§9.1: a CANCEL after the final response has no effect).
        if t.cancel.is_some() || t.server.last_code().is_some_and(|c| c >= 200) {
            return;
        }
        let Ok(request) = Message::parse(&t.forwarded).and_then(|invite| cancel_for(&invite)) else { return };
        t.cancel = Some(Cancel { request, client: None });
        self.metrics.cancelled_invites += 1;
        if t.client.state() == State::Proceeding {
            self.start_cancel(now, branch);
        }
    }

    /// Sends the CANCEL of transaction `branch` upstream in a non-INVITE
    /// client transaction of its own (§9.1), with the T1 the INVITE's has.
    pub(super) fn start_cancel(&mut self, now: Instant, branch: &str) {
        let timers = self.upstream_timers(now);
        let Some(c) = self.transactions.get_mut(branch).and_then(|t| t.cancel.as_mut()) else { return };
        if c.client.is_some() {
            return;
        }
        let client = ClientTransaction::new(false, Reliability::Unreliable, timers, now);
        let at = client.poll_timeout();
        c.client = Some(client);
        let request = c.request.clone();
        if let Some(at) = at {
            self.transaction_due_at(at);
        }
        let up = self.upstream_peer();
        self.send(Side::Upstream, up, request, false);
    }

    /// Stateful mode: the server and client transactions of a new request
    /// forwarded as `forwarded`; an INVITE is answered 100 Trying at once
    /// (RFC 3261 §16.2: a stateful proxy that will not answer within
    /// 200 ms; §17.2.1, so the terminal stops retransmitting).
    pub(super) fn start_transaction(
        &mut self,
        now: Instant,
        msg: &Message<'_>,
        from: Peer,
        app: App,
        branch: String,
        forwarded: &[u8],
    ) {
        let method = msg.method().unwrap_or("").to_string();
        let invite = method == "INVITE";
        let reliability = match from.transport {
            SipTransport::Udp => Reliability::Unreliable,
            SipTransport::Tcp => Reliability::Reliable,
        };
        let mut server = ServerTransaction::new(invite, reliability, Timers::default());
        let timers = self.upstream_timers(now);
        let client = ClientTransaction::new(invite, Reliability::Unreliable, timers, now);
        let sigcomp = self.flows.get(&app.token).is_some_and(|f| f.sigcomp);
        let mut last_response = None;
        if invite {
            if let Ok(trying) = build_response(msg, 100, "Trying", None, &[]) {
                server.send_response(now, 100);
                last_response = Some(trying.clone());
                self.deliver_to_terminal(now, from, &app, sigcomp, trying);
            }
        }
        let t = Transaction {
            method,
            server,
            client,
            forwarded: forwarded.to_vec(),
            received: msg.input().to_vec(),
            to: from,
            app,
            sigcomp,
            last_response,
            timer_c: now + TIMER_C,
            cancel: None,
        };
        let at = t.next_timeout();
        self.transaction_due_at(at);
        self.metrics.transactions += 1;
        self.transactions.insert(branch, t);
    }

    /// Stateful mode: what a response from the upstream does to its
    /// transaction. False when it ends there: a retransmission of a final
    /// response (acknowledged again if it is a non-2xx one to INVITE), or
    /// a 100 Trying (RFC 3261 §16.7 step 3: not forwarded). True when it
    /// goes on to the terminal.
    pub(super) fn response_in_transaction(&mut self, now: Instant, branch: &str, msg: &Message<'_>, code: u16) -> bool {
        let Some(t) = self.transactions.get_mut(branch) else { return true };
        if msg.cseq().is_ok_and(|c| c.method == "CANCEL") {
            // A response to the proxy's own CANCEL ends at its client
            // transaction: the terminal had the proxy's 200 (§16.10).
            let Some(client) = t.cancel.as_mut().and_then(|c| c.client.as_mut()) else { return true };
            client.on_response(now, code);
            let at = t.next_timeout();
            self.transaction_due_at(at);
            self.metrics.absorbed_responses += 1;
            return false;
        }
        if !msg.cseq().is_ok_and(|c| c.method == t.method) {
            return true;
        }
        let o = t.client.on_response(now, code);
        // §9.1: a CANCEL waiting for the INVITE's first provisional response.
        let cancel_now = (100..200).contains(&code) && t.cancel.as_ref().is_some_and(|c| c.client.is_none());
        let ack =
            if o.send_ack { Message::parse(&t.forwarded).ok().and_then(|req| ack_for(&req, msg).ok()) } else { None };
        // §16.7 step 10: every 2xx to INVITE is forwarded (the UAS
        // retransmits it end to end); anything else goes once, through
        // the server transaction.
        let two_xx_invite = t.method == "INVITE" && (200..300).contains(&code);
        let forward = o.deliver && code > 100 && (t.server.send_response(now, code) || two_xx_invite);
        let at = t.next_timeout();
        self.transaction_due_at(at);
        if let Some(ack) = ack {
            let up = self.upstream_peer();
            self.send(Side::Upstream, up, ack, false);
        }
        if cancel_now {
            self.start_cancel(now, branch);
        }
        if !o.deliver {
            self.metrics.absorbed_responses += 1;
        }
        forward
    }

    /// Stateful mode: the transactions' timers (RFC 3261 §17.1.1.2,
    /// §17.1.2.2, §17.2.1, §17.2.2): the request sent again to the
    /// upstream, the last response again to the terminal, 408 when the
    /// upstream never answered (§16.8: Timer B or F is a 408 from the
    /// client transaction; §16.7 step 6 then forwards it, the only
    /// response there is), and ended transactions dropped.
    pub(super) fn run_transactions(&mut self, now: Instant) {
        if self.transactions_due.is_none_or(|d| now < d) {
            return;
        }
        let due: Vec<String> =
            self.transactions.iter().filter(|(_, t)| t.next_timeout() <= now).map(|(b, _)| b.clone()).collect();
        for branch in due {
            let Some(mut t) = self.transactions.remove(&branch) else { continue };
            let c = t.client.handle_timeout(now);
            if c.retransmit {
                self.metrics.upstream_retransmissions += 1;
                let up = self.upstream_peer();
                self.send(Side::Upstream, up, t.forwarded.clone(), false);
            }
            if let Some(cancel) = t.cancel.as_mut() {
                if cancel.client.as_mut().is_some_and(|c| c.handle_timeout(now).retransmit) {
                    self.metrics.upstream_retransmissions += 1;
                    let up = self.upstream_peer();
                    self.send(Side::Upstream, up, cancel.request.clone(), false);
                }
            }
            let unanswered = t.server.last_code().is_none_or(|c| c < 200);
            let timer_c = now >= t.timer_c;
            // §16.8: Timer C on an INVITE with a provisional response
            // cancels it upstream (once: the transaction ends here).
            if timer_c && t.client.state() == State::Proceeding && t.cancel.is_none() {
                if let Ok(cancel) = Message::parse(&t.forwarded).and_then(|invite| cancel_for(&invite)) {
                    let up = self.upstream_peer();
                    self.send(Side::Upstream, up, cancel, false);
                }
            }
            if (c.timed_out || timer_c) && unanswered {
                self.metrics.transaction_timeouts += 1;
                let reply = Message::parse(&t.received)
                    .ok()
                    .and_then(|m| build_response(&m, 408, "Request Timeout", Some(&self.to_tag(&m)), &[]).ok());
                if let Some(reply) = reply.filter(|_| t.server.send_response(now, 408)) {
                    t.last_response = Some(reply.clone());
                    self.deliver_to_terminal(now, t.to, &t.app, t.sigcomp, reply);
                }
            }
            if t.server.handle_timeout(now).retransmit {
                if let Some(r) = t.last_response.clone() {
                    self.deliver_to_terminal(now, t.to, &t.app, t.sigcomp, r);
                }
            }
            let over = timer_c || (t.client.is_terminated() && t.server.is_terminated());
            // A server transaction still in Trying or Proceeding whose
            // client transaction has ended without a final response: the
            // 408 above moved it on; one that cannot move is dropped.
            let stuck = t.client.is_terminated() && matches!(t.server.state(), State::Trying | State::Proceeding);
            if !over && !stuck {
                self.transactions.insert(branch, t);
            }
        }
        self.transactions_due = self.transactions.values().map(Transaction::next_timeout).min();
    }

    /// Transactions the stateful mode holds.
    pub fn transaction_count(&self) -> usize {
        self.transactions.len()
    }

    /// Whether the proxy is transaction stateful (`stateful`).
    pub fn is_stateful(&self) -> bool {
        self.stateful
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
}
