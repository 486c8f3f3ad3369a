//! Ended server calls kept for Timer J, to answer their requests sent
//! again (RFC 3261 §17.2.2).

use std::net::SocketAddr;
use std::time::Instant;

use sigkit_sip::{HeaderName, Message};

use super::call::{Lingering, MAX_LINGERING};
use super::Engine;
use crate::scenario::{Sent, StepKind};

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
    ///
    /// The request may come back as a new transaction: when the proxy that
    /// relayed it is gone, the UAC's retransmission reaches us through
    /// another one, and the stateful proxy before us gives it a branch of
    /// its own. The answer then carries that request's Vias (RFC 3261
    /// §8.2.6.2), or the proxy would take it for a late copy of the first
    /// transaction's and end the new one with a 408.
    pub(super) fn answer_lingering(
        &mut self,
        now: Instant,
        from: SocketAddr,
        msg: &Message<'_>,
        call_id: &[u8],
    ) -> bool {
        let Some(l) = self.lingering.get(call_id).filter(|l| l.until > now) else { return false };
        let same = msg.is_request() && msg.cseq().is_ok_and(|c| c.number == l.cseq && c.method == l.method);
        if !same {
            return false;
        }
        match with_vias_of(&l.response, msg) {
            Some(response) => self.outbox.push(from, &response),
            None => self.outbox.push(l.to, &l.response),
        }
        self.recorder.retransmission_received();
        self.recorder.dead_call_message();
        true
    }
}

/// `response` with its Via lines replaced by `request`'s, in their order
/// (RFC 3261 §8.2.6.2); None if either has no Via or `response` does not
/// parse.
fn with_vias_of(response: &[u8], request: &Message<'_>) -> Option<Vec<u8>> {
    let old = Message::parse(response).ok()?;
    let is_via = |h: &&sigkit_sip::Header<'_>| h.kind == HeaderName::Via;
    let first = old.headers().iter().find(is_via)?.line.start;
    let vias: Vec<_> = request.headers().iter().filter(is_via).map(|h| &request.input()[h.line.clone()]).collect();
    if vias.is_empty() {
        return None;
    }
    let input = old.input();
    let mut out = Vec::with_capacity(response.len() + 128);
    out.extend_from_slice(&input[..first]);
    vias.iter().for_each(|v| out.extend_from_slice(v));
    let mut at = first;
    for h in old.headers().iter().filter(is_via) {
        out.extend_from_slice(&input[at..h.line.start]);
        at = h.line.end;
    }
    out.extend_from_slice(&input[at..]);
    Some(out)
}
