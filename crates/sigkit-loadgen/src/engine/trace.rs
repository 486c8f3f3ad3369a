//! What the engine reports besides its counts, as SIPp's trace files have
//! it: warnings (calls aborted on an unexpected message or a timeout,
//! messages discarded; SIPp's `-trace_err`), each response time
//! (`-trace_rtt`) and the scenario's `<log>` actions (`-trace_logs`).
//! Warnings are always counted (the `-trace_stat` `Warnings` columns);
//! texts and samples are kept only when asked for, and the run takes them
//! away as it writes them ([`EngineTrace`]).

use super::*;

/// One response time as SIPp's `-trace_rtt` file lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttSample {
    /// When it ended, since the run started.
    pub at: Duration,
    /// How long it took.
    pub rtt: Duration,
    /// Its index in the scenario's `rtds` (the name is the file's `rtd_no`).
    pub index: usize,
}

/// What the engine keeps for the trace files, and whether it keeps it.
#[derive(Debug, Default)]
pub struct EngineTrace {
    /// Keep warning texts (`-trace_err`).
    pub keep_warnings: bool,
    /// Keep each response time (`-trace_rtt`).
    pub keep_rtt: bool,
    /// Keep the expanded `<log>` messages (`-trace_logs`).
    pub keep_logs: bool,
    /// Warning texts, SIPp's wording, without time stamps.
    pub warnings: Vec<String>,
    /// Response times since the run last took them.
    pub rtt: Vec<RttSample>,
    /// `<log>` messages, expanded, one line each.
    pub logs: Vec<String>,
}

/// What a step waits for or does, in SIPp's words for an unexpected
/// message: "while expecting '180' ", "while sending ", ...
fn doing(kind: Option<&StepKind>) -> String {
    match kind {
        Some(StepKind::Recv(r)) => match &r.expect {
            Expect::Response(code) => format!("while expecting '{code}' "),
            Expect::Request(m) => format!("while expecting '{m}' "),
        },
        Some(StepKind::Send(_)) => "while sending ".into(),
        Some(StepKind::Pause(_) | StepKind::Timewait(_)) => "while pausing ".into(),
        _ => "while in message type nop ".into(),
    }
}

impl Engine {
    /// Counts a warning; keeps its text (made only then) with `-trace_err`.
    pub(super) fn warn(&mut self, text: impl FnOnce(&Engine) -> String) {
        self.recorder.warning();
        if self.trace.keep_warnings {
            let t = text(self);
            self.trace.warnings.push(t);
        }
    }

    fn call_id_text(&self, slot: usize) -> String {
        String::from_utf8_lossy(&self.calls[slot].call_id).into_owned()
    }

    /// SIPp's warning for a call aborted on `msg`, unexpected at its step.
    pub(super) fn warn_unexpected(&mut self, slot: usize, msg: &[u8]) {
        self.warn(|e| {
            let at = e.calls[slot].index;
            format!(
                "Aborting call on unexpected message for Call-Id '{}': {}(index {at}), received '{}'",
                e.call_id_text(slot),
                doing(e.scenario.steps.get(at).map(|s| &s.kind)),
                String::from_utf8_lossy(msg)
            )
        });
    }

    /// SIPp's warning for a call whose receive timed out at its step,
    /// going to `label` or, without one, aborted.
    pub(super) fn warn_recv_timeout(&mut self, slot: usize, label: Option<usize>) {
        self.warn(|e| {
            let at = e.calls[slot].index;
            let desc = doing(e.scenario.steps.get(at).map(|s| &s.kind));
            let desc = desc.trim_start_matches("while expecting ").trim().trim_matches('\'');
            let id = e.call_id_text(slot);
            match label {
                Some(l) => format!("Call-Id: {id}, receive timeout on message {desc}:{at}, jumping to label {l}"),
                None => format!(
                    "Call-Id: {id}, receive timeout on message {desc}:{at} without label to jump to (ontimeout \
                     attribute): aborting call"
                ),
            }
        });
    }

    /// The warning for a call ended for `cause` other than an unexpected
    /// message or a receive timeout: SIPp's for a retransmission timeout,
    /// and the like for sigkit's own causes.
    pub(super) fn warn_failed(&mut self, slot: usize, cause: &str) {
        self.warn(|e| {
            let id = e.call_id_text(slot);
            match cause {
                "call_timeout" => format!("Call-Id: {id}, call timeout (--call-timeout): aborting call"),
                "auth_failed" => format!("Call-Id: {id}, digest credentials that do not verify: aborting call"),
                "scenario_loop" => format!("Call-Id: {id}, steps that loop without waiting: aborting call"),
                _ => format!("Aborting call on UDP retransmission timeout for Call-ID '{id}'"),
            }
        });
    }

    /// Response time `index` ended at `now` after `rtt`: kept for `-trace_rtt`.
    pub(super) fn trace_rtt(&mut self, index: usize, rtt: Duration, now: Instant) {
        if self.trace.keep_rtt {
            let at = now.saturating_duration_since(self.env.started);
            self.trace.rtt.push(RttSample { at, rtt, index });
        }
    }

    /// Runs the `<log>` actions of step `step` for the call at `slot`:
    /// each message, keywords expanded, kept for `-trace_logs`.
    pub(super) fn run_logs(&mut self, slot: usize, step: usize, now: Instant) {
        if !self.trace.keep_logs {
            return;
        }
        let scenario = Arc::clone(&self.scenario);
        let Some(s) = scenario.steps.get(step) else { return };
        for segs in &s.logs {
            let ctx = Ctx {
                env: &self.env,
                call: &self.calls[slot],
                step,
                fields: self
                    .injection
                    .as_deref()
                    .and_then(|inj| inj.lines.get(self.calls[slot].field_line))
                    .map(|l| l.as_slice()),
                now,
            };
            let mut out = Vec::new();
            template::write_line(&ctx, segs, 0, &mut out, &mut self.scratch);
            self.trace.logs.push(String::from_utf8_lossy(&out).into_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(xml: &str, trace: EngineTrace) -> Engine {
        let scenario = Arc::new(crate::scenario::parse(xml).unwrap());
        let config = EngineConfig {
            remote: Some(SocketAddr::from(([127, 0, 0, 1], 5060))),
            local: SocketAddr::from(([127, 0, 0, 1], 5070)),
            ..EngineConfig::default()
        };
        let mut e = Engine::new(scenario, config, None, Instant::now());
        e.trace = trace;
        e
    }

    const OPTIONS: &str = "<scenario><send start_rtd=\"t\"><![CDATA[OPTIONS sip:x SIP/2.0\r\nCall-ID: [call_id]\r\n\
        CSeq: 1 OPTIONS\r\nVia: SIP/2.0/UDP h;branch=[branch]\r\n\r\n]]><action><log message=\"sent [call_number] \
        to [remote_port]\"/></action></send><recv response=\"200\" rtd=\"t\"/></scenario>";

    /// A `<log>` message expands its keywords per call; an unexpected
    /// response aborts the call with SIPp's warning.
    #[test]
    fn logs_expand_and_an_unexpected_message_is_warned_in_sipps_words() {
        let trace = EngineTrace { keep_warnings: true, keep_logs: true, ..EngineTrace::default() };
        let mut e = engine(OPTIONS, trace);
        let t0 = Instant::now();
        e.start_call(t0, 0);
        assert_eq!(e.trace.logs, ["sent 1 to 5060"]);
        let sent = e.take_outbox();
        let (_, invite) = sent.iter().next().unwrap();
        let text = String::from_utf8_lossy(invite).into_owned();
        let call_id = text.lines().find_map(|l| l.strip_prefix("Call-ID: ")).unwrap().to_string();
        let busy = format!("SIP/2.0 486 Busy\r\nCall-ID: {call_id}\r\nCSeq: 1 OPTIONS\r\nVia: SIP/2.0/UDP h\r\n\r\n");
        e.on_message(t0, SocketAddr::from(([127, 0, 0, 1], 5060)), busy.as_bytes());
        assert_eq!(e.recorder.total.failed, 1);
        assert_eq!(e.recorder.sipp.warnings, 1);
        assert_eq!(
            e.trace.warnings,
            [format!(
                "Aborting call on unexpected message for Call-Id '{call_id}': while expecting '200' (index 1), \
                 received '{busy}'"
            )]
        );
        assert_eq!(e.recorder.sipp.call_length.count, 1, "the call's length is counted when it ends");
    }

    /// Response times are kept with the time they ended, only when asked
    /// for; warnings are counted even when their texts are not kept.
    #[test]
    fn response_times_are_kept_for_trace_rtt_only_when_asked() {
        let mut e = engine(OPTIONS, EngineTrace { keep_rtt: true, ..EngineTrace::default() });
        let t0 = e.env.started;
        e.start_call(t0, 0);
        let sent = e.take_outbox();
        let (_, req) = sent.iter().next().unwrap();
        let text = String::from_utf8_lossy(req).into_owned();
        let ok = text.replacen("OPTIONS sip:x SIP/2.0", "SIP/2.0 200 OK", 1);
        let at = t0 + Duration::from_millis(1500);
        e.on_message(at, SocketAddr::from(([127, 0, 0, 1], 5060)), ok.as_bytes());
        assert_eq!(e.recorder.total.successful, 1);
        assert_eq!(
            e.trace.rtt,
            [RttSample { at: Duration::from_millis(1500), rtt: Duration::from_millis(1500), index: 0 }]
        );
        assert!(e.trace.logs.is_empty() && e.trace.warnings.is_empty());
        e.on_message(at, SocketAddr::from(([127, 0, 0, 1], 5060)), b"garbage");
        assert_eq!((e.recorder.sipp.warnings, e.trace.warnings.len()), (1, 0));
    }
}
