//! Stateful mode's steps on the proxy (RFC 3261 §16.6 step 9, §17): the
//! transactions ([`super::transactions`]) decide, and what they return is
//! sent to the terminal or the upstream and counted here.

use super::transactions::{Absorbed, Cancelling, Transaction};
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
        let branch = self.identity.branch_for(msg);
        match self.transactions.absorb(now, &branch, method) {
            Absorbed::No => false,
            Absorbed::Ack => true,
            Absorbed::Retransmission(reply) => {
                self.metrics.absorbed_requests += 1;
                if let Some(r) = reply {
                    self.deliver_to_terminal(now, r.to, &r.app, r.encoding, r.bytes);
                }
                true
            }
        }
    }

    /// The timers of a new client transaction toward the upstream, which
    /// is reached over UDP: its T1 is overload control's (H1 raises it for
    /// new transactions).
    fn upstream_timers(&self, now: Instant) -> Timers {
        let t1 = self.overload.t1(now);
        Timers { t1, t2: Timers::default().t2.max(t1), ..Timers::default() }
    }

    /// Stateful mode: a terminal's CANCEL of the INVITE transaction
    /// `branch` (RFC 3261 §16.10). The proxy answers it 200 itself, and
    /// cancels its client transaction toward the upstream: at once if that
    /// has a provisional response, else when one comes (§9.1). The 487 the
    /// upstream then sends ends the INVITE as any final response does. A
    /// retransmitted CANCEL gets the 200 again and nothing more.
    pub(super) fn cancel_invite(&mut self, now: Instant, from: Peer, app: &App, msg: &Message<'_>, branch: &str) {
        if let Ok(ok) = build_response(msg, 200, "OK", Some(&self.identity.to_tag(msg)), &[]) {
            self.reply_to_terminal(now, from, app, ok);
        }
        match self.transactions.cancel(branch) {
            Cancelling::Nothing => {}
            Cancelling::Deferred => self.metrics.cancelled_invites += 1,
            Cancelling::Now => {
                self.metrics.cancelled_invites += 1;
                self.start_cancel(now, branch);
            }
        }
    }

    /// Sends the CANCEL of transaction `branch` upstream in a non-INVITE
    /// client transaction of its own (§9.1), with the T1 the INVITE's has.
    fn start_cancel(&mut self, now: Instant, branch: &str) {
        let timers = self.upstream_timers(now);
        if let Some(cancel) = self.transactions.start_cancel(now, branch, timers) {
            self.send_upstream(cancel);
        }
    }

    /// Stateful mode: the server and client transactions of a new request
    /// forwarded as `forwarded`; an INVITE is answered 100 Trying at once
    /// ([`Transaction::start`]).
    pub(super) fn start_transaction(
        &mut self,
        now: Instant,
        msg: &Message<'_>,
        from: Peer,
        app: App,
        branch: String,
        forwarded: &[u8],
    ) {
        let timers = self.upstream_timers(now);
        let encoding = self.flows.encoding(app.token);
        let (t, trying) = Transaction::start(now, msg, from, app, encoding, forwarded, timers);
        if let Some(trying) = trying {
            self.deliver_to_terminal(now, from, t.app(), encoding, trying);
        }
        self.metrics.transactions += 1;
        self.transactions.insert(branch, t);
    }

    /// Stateful mode: what a response from the upstream does to its
    /// transaction ([`Transactions::on_response`]); true when it goes on
    /// to the terminal.
    pub(super) fn response_in_transaction(&mut self, now: Instant, branch: &str, msg: &Message<'_>, code: u16) -> bool {
        let r = self.transactions.on_response(now, branch, msg, code);
        if let Some(ack) = r.ack {
            self.send_upstream(ack);
        }
        if r.cancel_now {
            self.start_cancel(now, branch);
        }
        if r.absorbed {
            self.metrics.absorbed_responses += 1;
        }
        r.forward
    }

    /// Stateful mode: the transactions' timers; what they send goes out
    /// and is counted.
    pub(super) fn run_transactions(&mut self, now: Instant) {
        let identity = &self.identity;
        let fired = self.transactions.handle_timeout(now, &|m| identity.to_tag(m));
        for f in fired {
            self.metrics.upstream_retransmissions += f.retransmissions;
            if f.unanswered {
                self.metrics.transaction_timeouts += 1;
            }
            for request in f.upstream {
                self.send_upstream(request);
            }
            for response in f.terminal {
                self.deliver_to_terminal(now, f.to, &f.app, f.encoding, response);
            }
        }
    }
}
