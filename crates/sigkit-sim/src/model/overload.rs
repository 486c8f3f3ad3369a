//! Overload control in the simulated proxies: the detectors' evaluations
//! and what a detection does (rejecting new work, raising T1), and the
//! signals a response's Via carries upstream (the SIP overload thesis
//! §3.3).

use super::*;

impl Network<'_> {
    /// The upstream proxy offers RFC 7339 overload control to its next hop.
    pub(super) fn offers_oc(&self, p: usize) -> bool {
        self.upstream == Some(p) && self.sc.handler.kind == HandlerKind::OcLoss
    }

    /// T1 of new client transactions of proxy `p` toward its next hop.
    pub(super) fn t1_toward(&self, now: Nanos, p: usize) -> Nanos {
        match self.handler.t1_raise {
            Some((t1, until)) if self.upstream == Some(p) && now < until => t1,
            _ => self.t1,
        }
    }

    /// Sets T1 toward the next hop of the upstream proxy to `t1` until
    /// `until` (the "T1 per destination, at run time" of H1).
    pub(super) fn raise_t1(&mut self, t1: Nanos, until: Nanos) {
        self.handler.t1_raise = Some((t1, until));
    }

    /// The handler's verdict on a new request at the upstream proxy.
    pub(super) fn rejects(&mut self, now: Nanos, p: usize) -> bool {
        let h = &self.sc.handler;
        match h.kind {
            HandlerKind::Cap503 => self.triggered() && self.proxies[p].pending >= h.cap,
            HandlerKind::OcLoss => match self.handler.oc {
                // RFC 7339 §5.10.1: reject a random `oc` percent.
                Some((oc, until, _)) if now < until && oc > 0 => self.dropper.uniform() * 100.0 <= f64::from(oc),
                _ => false,
            },
            HandlerKind::None | HandlerKind::T1 => false,
        }
    }

    /// Whether the handler's trigger holds now.
    pub(super) fn triggered(&self) -> bool {
        match self.sc.handler.trigger {
            Trigger::Always => true,
            Trigger::D1 => self.d1.congested,
            Trigger::D2 => self.d2.congested,
            Trigger::D2Mean => self.d2_mean.congested,
            Trigger::Via => false,
            Trigger::At => self.handler.at_reached,
        }
    }

    /// The overload signals proxy `p` puts in the Via of the responses it
    /// sends upstream: only the overloaded proxy (the last) signals.
    pub(super) fn signals(&self, p: usize, upstream_oc: bool) -> ViaSignals {
        let mut via = ViaSignals::default();
        if p + 1 != self.proxies.len() || self.upstream.is_none() {
            return via;
        }
        let h = &self.sc.handler;
        let recent = &self.signal.utilisation;
        let busy =
            recent.len() == SIGNAL_WINDOW && recent.iter().sum::<f64>() / recent.len() as f64 >= h.signal_utilisation;
        if h.kind == HandlerKind::T1 && h.trigger == Trigger::Via && busy {
            via.t1 = Some(T1Signal {
                t1_ms: (h.t1 * 1000.0).round() as u32,
                validity_ms: (h.validity * 1000.0).round() as u32,
            });
        }
        if h.kind == HandlerKind::OcLoss && upstream_oc {
            via.oc = Some(OcSignal {
                oc: (100.0 * (1.0 - self.signal.admit)).round().clamp(0.0, 100.0) as u8,
                validity_ms: (2000.0 * h.oc_interval).round() as u32,
                seq: self.signal.oc_seq,
            });
        }
        via
    }

    /// The upstream proxy reads its next hop's Via signals.
    pub(super) fn apply_signals(&mut self, now: Nanos, via: ViaSignals) {
        let h = &self.sc.handler;
        if let (HandlerKind::T1, Trigger::Via, Some(s)) = (h.kind, h.trigger, via.t1) {
            self.raise_t1(from_secs(f64::from(s.t1_ms) / 1000.0), now + from_secs(f64::from(s.validity_ms) / 1000.0));
        }
        if let (HandlerKind::OcLoss, Some(s)) = (h.kind, via.oc) {
            // RFC 7339 §5.10.1: a newer sequence number replaces the value.
            if self.handler.oc.is_none_or(|(_, _, seq)| s.seq >= seq) {
                self.handler.oc = Some((s.oc, now + from_secs(f64::from(s.validity_ms) / 1000.0), s.seq));
            }
        }
    }

    pub(super) fn d1_evaluate(&mut self, now: Nanos) {
        let Some(p) = self.upstream else { return };
        // The age of the oldest pending transaction matters only when no
        // response came in the window; the scan is skipped otherwise.
        let oldest = if self.d1.has_samples(to_secs(now)) {
            None
        } else {
            self.proxies[p].clients.iter().filter(|c| c.state == State::Trying).map(|c| c.started).min()
        }
        .map(|s| to_secs(now - s));
        let congested = self.d1.evaluate(to_secs(now), oldest);
        self.rec.d1_verdict(now, congested);
        self.act_on_detection(now, Trigger::D1, congested);
        self.events.after(from_secs(self.sc.detectors.d1.interval), Event::D1Evaluate);
    }

    pub(super) fn d2_evaluate(&mut self, now: Nanos) {
        let Some(p) = self.upstream else { return };
        let interval = self.sc.detectors.d2.interval;
        let proxy = &mut self.proxies[p];
        let rate = proxy.new_requests as f64 / interval;
        proxy.new_requests = 0;
        if let Some(kappa) = self.kappa.observe(proxy.pending as f64, rate, interval) {
            self.last_kappa = Some(kappa);
            self.d2.observe(kappa);
            self.d2_mean.observe(kappa);
            self.rec.d2_verdict(now, self.d2.congested, self.d2_mean.congested);
            self.act_on_detection(now, Trigger::D2, self.d2.congested);
            self.act_on_detection(now, Trigger::D2Mean, self.d2_mean.congested);
        }
        self.events.after(from_secs(interval), Event::D2Evaluate);
    }

    /// H1 driven by a detector (or by `always`): while congested, T1 toward
    /// the next hop is raised for `validity` seconds from now.
    pub(super) fn act_on_detection(&mut self, now: Nanos, detector: Trigger, congested: bool) {
        let h = &self.sc.handler;
        if h.kind != HandlerKind::T1 {
            return;
        }
        if h.trigger == detector && congested {
            self.raise_t1(from_secs(h.t1), now + from_secs(h.validity));
        }
    }

    /// The overloaded proxy's RFC 7339 occupancy update: the admitted share
    /// follows target/utilisation (the occupancy algorithm of Hilt and
    /// Widjaja's SIP overload study), bounded to [min_admit, 1].
    pub(super) fn oc_update(&mut self, now: Nanos) {
        let h = &self.sc.handler;
        let last = self.proxies.last_mut().expect("a proxy");
        let mut busy = last.busy_total;
        if last.current.is_some() {
            busy += now - last.busy_since;
        }
        let utilisation = to_secs(busy - self.signal.busy_at_last_update) / h.oc_interval;
        self.signal.busy_at_last_update = busy;
        self.signal.admit = (self.signal.admit * h.oc_target / utilisation.max(1e-3)).clamp(h.oc_min_admit, 1.0);
        self.signal.oc_seq += 1;
        self.events.after(from_secs(h.oc_interval), Event::OcUpdate);
    }
}
