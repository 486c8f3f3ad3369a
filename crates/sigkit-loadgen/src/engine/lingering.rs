//! Server calls after their end: the last response kept for Timer J
//! (RFC 3261 §17.2.2) to answer a retransmitted request again.

use super::*;

impl Engine {
    /// A server call ending with a response: the response is kept for
    /// Timer J, 64·T1 (RFC 3261 §17.2.2: a non-INVITE server transaction
    /// answers retransmissions of its request that long after its final
    /// response), so that a BYE sent again because its 200 OK was lost is
    /// answered after the call, and its timewait, are over.
    pub(super) fn linger(&mut self, slot: usize, now: Instant) {
        let c = &self.calls[slot];
        let answered = c.last_sent_what.is_some_and(
            |k| matches!(&self.scenario.steps[k].kind, StepKind::Send(s) if matches!(s.what, Sent::Response(_))),
        );
        if self.client || !answered || c.last_sent.is_empty() {
            return;
        }
        let Some(cseq) = Message::parse(&c.last_msg).ok().and_then(|m| m.cseq().ok()) else { return };
        let until = now + self.config.timers.t1 * 64;
        let entry = Lingering {
            cseq: cseq.number,
            method: cseq.method.to_string(),
            response: c.last_sent.clone(),
            to: self.destination(slot),
            until,
        };
        // The expired ones, and past the cap the oldest.
        while self.lingering_order.front().is_some_and(|(t, _)| *t <= now)
            || self.lingering_order.len() >= MAX_LINGERING
        {
            let Some((_, id)) = self.lingering_order.pop_front() else { break };
            self.lingering.remove(&id);
        }
        let id = c.call_id.clone();
        self.lingering_order.push_back((until, id.clone()));
        self.lingering.insert(id, entry);
    }

    /// Answers, from [`Engine::linger`]'s keep, a request of a call that
    /// has ended; whether it was one.
    pub(super) fn answer_lingering(&mut self, now: Instant, msg: &Message<'_>, call_id: &[u8]) -> bool {
        let Some(l) = self.lingering.get(call_id).filter(|l| l.until > now) else { return false };
        let same = msg.is_request() && msg.cseq().is_ok_and(|c| c.number == l.cseq && c.method == l.method);
        if same {
            self.outbox.push(l.to, &l.response);
            self.recorder.retransmission_received();
            self.recorder.dead_call_message();
        }
        same
    }
}
