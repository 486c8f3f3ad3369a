//! The calls' timers: retransmissions (RFC 3261 §17.1.1.2, §17.1.2.2,
//! §13.3.1.4), receive and call timeouts, pauses, and the heap that
//! orders them.

use super::*;

impl Engine {
    pub(super) fn reschedule(&mut self, slot: usize) {
        let c = &mut self.calls[slot];
        if !c.live {
            return;
        }
        let next = [
            c.retrans.and_then(|r| r.next),
            c.retrans.and_then(|r| r.deadline),
            c.pause_until,
            c.recv_deadline,
            c.call_deadline,
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(at) = next else { return };
        if c.scheduled.is_some_and(|s| s <= at) {
            // An earlier wake-up is already due; it reschedules.
            return;
        }
        c.scheduled = Some(at);
        self.timers.push(Reverse((at, slot as u32, c.gen)));
    }

    /// When [`Engine::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((at, _, _))| *at)
    }

    /// Runs what is due at `now`: retransmissions, timeouts, pauses.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.clock = now;
        while let Some(&Reverse((at, slot, gen))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let slot = slot as usize;
            let c = &mut self.calls[slot];
            if !c.live || c.gen != gen || c.scheduled != Some(at) {
                continue;
            }
            c.scheduled = None;
            self.on_call_timer(slot, now);
            self.reschedule(slot);
        }
    }

    pub(super) fn on_call_timer(&mut self, slot: usize, now: Instant) {
        let due = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        let c = &mut self.calls[slot];
        if due(c.call_deadline) {
            self.warn_failed(slot, "call_timeout");
            self.fail(slot, "call_timeout", true);
            return;
        }
        if due(c.recv_deadline) {
            c.recv_deadline = None;
            let target = match &self.scenario.steps.get(c.index).map(|s| &s.kind) {
                Some(StepKind::Recv(r)) => r.ontimeout,
                _ => None,
            };
            self.warn_recv_timeout(slot, target);
            let at = self.calls[slot].index;
            self.recorder.at_step(at, |m| m.timeouts += 1);
            let c = &mut self.calls[slot];
            match target {
                Some(t) => {
                    c.index = t;
                    self.advance(slot, now);
                    if !self.calls[slot].live {
                        return;
                    }
                }
                None => {
                    self.fail(slot, "recv_timeout", true);
                    return;
                }
            }
        }
        let c = &mut self.calls[slot];
        if let Some(mut rt) = c.retrans {
            if due(rt.deadline) && !rt.fails {
                // A non-2xx response sent again on `retrans` stops after
                // 64·T1 without failing the call.
                c.retrans = None;
            } else if due(rt.deadline) {
                let cause = match (&self.scenario.steps[rt.step].kind, rt.kind) {
                    (_, RetransKind::Response) => "ack_timeout".to_string(),
                    (StepKind::Send(s), _) => match &s.what {
                        Sent::Request(m) => format!("{}_timeout", lower(m)),
                        Sent::Response(_) => "timeout".to_string(),
                    },
                    _ => "timeout".to_string(),
                };
                self.recorder.at_step(rt.step, |m| m.timeouts += 1);
                self.warn_failed(slot, &cause);
                self.fail(slot, &cause, true);
                return;
            }
            if due(rt.next) {
                rt.interval = match rt.kind {
                    // Timer A doubles without bound (§17.1.1.2); Timer E
                    // and 2xx retransmission stop doubling at T2.
                    RetransKind::Invite => rt.interval * 2,
                    RetransKind::NonInvite | RetransKind::Response => (rt.interval * 2).min(self.config.timers.t2),
                };
                rt.next = Some(now + rt.interval);
                c.retrans = Some(rt);
                let to = self.destination(slot);
                let c = &self.calls[slot];
                self.outbox.push(to, &c.last_sent);
                self.recorder.retransmitted(c.load_step);
                self.recorder.at_step(rt.step, |m| m.sent_retrans += 1);
            }
        }
        let c = &mut self.calls[slot];
        if due(c.pause_until) {
            c.pause_until = None;
            if c.timewait {
                self.linger(slot, now);
                self.release(slot);
                return;
            }
            let i = c.index;
            self.apply_rtd(slot, i, now);
            let next = self.scenario.steps.get(i).and_then(|s| s.next).unwrap_or(i + 1);
            self.calls[slot].index = next;
            self.advance(slot, now);
        }
    }
}
