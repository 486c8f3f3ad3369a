//! A run's live [`Progress`]: snapshots of its counts, made every
//! `progress_every` (SIPp's `-f`) and at each interval row, copied so the
//! run goes on while they are shown (SIPp's screens,
//! [`crate::screen`]).

use std::time::{Duration, Instant};

use super::{LoadConfig, Reports, Run};
use crate::metrics::{Moments, StepMessages};

/// Live progress of a run (a watch channel: [`Prepared::progress`]).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Progress {
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// The rate asked for now, calls per rate period (SIPp's `-r` unit).
    pub rate: f64,
    /// The rate asked for now, calls/s.
    pub cps: f64,
    /// The load step in progress, from 0.
    pub step: usize,
    /// Whether starting calls is paused (SIPp's `p` key).
    pub paused: bool,
    /// Calls the load pattern asked for so far.
    pub offered: u64,
    /// Calls started so far.
    pub attempted: u64,
    /// Calls that reached the end of their scenario so far.
    pub successful: u64,
    /// Calls that failed so far.
    pub failed: u64,
    /// Calls in progress now (`-trace_stat` `CurrentCall`).
    pub active: u64,
    /// Successful calls per second over the last interval.
    pub calls_per_s: f64,
    /// p95 set-up delay (INVITE→200) over the last interval, ms; 0 with
    /// no call set up in it.
    pub setup_p95_ms: f64,
    /// Messages sent again so far (RFC 3261 §17 timers).
    pub retransmissions: u64,
    /// Whether the run places calls (a UAC) rather than answers them.
    pub client: bool,
    /// Calls the run places in all (`max_calls`), when bounded.
    pub max_calls: Option<u64>,
    /// Whether the run is over (the last update).
    pub finished: bool,
    /// Whether the run starts no more calls and waits for those in
    /// progress to end: told to quit, or (a UAC) its calls all placed.
    pub quitting: bool,
    /// Interval rows made so far (one every `report_every`).
    pub intervals: usize,
    /// Seconds since the previous update.
    pub period_s: f64,
    /// Calls started since the previous update.
    pub period_created: u64,
    /// The most calls in progress at once so far.
    pub peak_active: u64,
    /// When that many were first in progress, seconds since the run started.
    pub peak_at_s: f64,
    /// Messages for calls already over, answered again (SIPp's dead call messages).
    pub dead_call: u64,
    /// Messages for no call in progress (SIPp's out-of-call messages).
    pub out_of_call: u64,
    /// Requests answered by `-aa`.
    pub auto_answered: u64,
    /// Per step of the scenario, over the run: messages, retransmissions,
    /// timeouts and unexpected messages (SIPp's scenario screen).
    pub scenario_steps: Vec<StepMessages>,
    /// Calls successful since the previous update.
    pub period_successful: u64,
    /// Calls failed since the previous update.
    pub period_failed: u64,
    /// Each response time of the scenario (its `rtds`, in order), over the run, ms.
    pub rtd: Vec<Moments>,
    /// Each response time since the previous update, ms.
    pub period_rtd: Vec<Moments>,
    /// Calls' lengths over the run, ms.
    pub call_length: Moments,
    /// Calls' lengths since the previous update, ms.
    pub period_call_length: Moments,
}

/// What an update counted, for the next one's periods.
#[derive(Debug, Clone)]
struct Prior {
    at: Instant,
    created: u64,
    successful: u64,
    failed: u64,
    rtd: Vec<Moments>,
    call_length: Moments,
}

/// The run's [`Progress`] updates, every `progress_every`.
pub(super) struct Updates {
    every: Duration,
    /// When the next is due.
    pub(super) next: Instant,
    /// The previous one.
    last: Prior,
}

impl Updates {
    pub(super) fn new(config: &LoadConfig, start: Instant) -> Updates {
        let every = config.progress_every.max(Duration::from_millis(10));
        let last =
            Prior { at: start, created: 0, successful: 0, failed: 0, rtd: Vec::new(), call_length: Moments::default() };
        Updates { every, next: start + every, last }
    }

    /// The update at `now`: a snapshot of the counts, copied so the run
    /// goes on while it is shown.
    pub(super) fn progress(
        &mut self,
        run: &Run,
        start: Instant,
        now: Instant,
        reports: &Reports,
        finished: bool,
    ) -> Progress {
        let r = &run.engine.recorder;
        let t = &r.total;
        let cps = run.rate.current_cps(now);
        let last = reports.intervals.last();
        let (peak, peak_at) = run.engine.peak();
        let now_prior = Prior {
            at: now,
            created: t.attempted,
            successful: t.successful,
            failed: t.failed,
            rtd: r.sipp.rtd.clone(),
            call_length: r.sipp.call_length,
        };
        let before = std::mem::replace(&mut self.last, now_prior);
        self.next = now + self.every;
        Progress {
            elapsed_s: (now - start).as_secs_f64(),
            rate: cps * run.period.as_secs_f64(),
            cps,
            step: run.rate.current_step(now),
            paused: run.rate.paused(),
            offered: t.offered,
            attempted: t.attempted,
            successful: t.successful,
            failed: t.failed,
            active: run.engine.active() as u64,
            calls_per_s: last.map_or(0.0, |i| i.calls_per_s),
            setup_p95_ms: last.map_or(0.0, |i| i.setup_p95_ms),
            retransmissions: t.retransmissions,
            client: run.engine.is_client(),
            max_calls: run.max_calls,
            finished,
            quitting: run.quitting || run.engine.is_client() && run.placed_all(),
            intervals: reports.intervals.len(),
            period_s: now.saturating_duration_since(before.at).as_secs_f64(),
            period_created: t.attempted.saturating_sub(before.created),
            peak_active: peak as u64,
            peak_at_s: peak_at.saturating_duration_since(start).as_secs_f64(),
            dead_call: r.sipp.dead_call,
            out_of_call: t.out_of_call,
            auto_answered: r.sipp.auto_answered,
            scenario_steps: r.scenario_steps.clone(),
            period_successful: t.successful.saturating_sub(before.successful),
            period_failed: t.failed.saturating_sub(before.failed),
            period_rtd: r
                .sipp
                .rtd
                .iter()
                .enumerate()
                .map(|(i, m)| m.since(before.rtd.get(i).unwrap_or(&Moments::default())))
                .collect(),
            rtd: r.sipp.rtd.clone(),
            call_length: r.sipp.call_length,
            period_call_length: r.sipp.call_length.since(&before.call_length),
        }
    }
}
