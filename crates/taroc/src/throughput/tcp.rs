//! The TCP ends of the study: a sender with the draft's variants of
//! congestion control and loss recovery, and a receiver of cumulative
//! ACKs and, for SACK, selective ones (RFC 2018).

use std::collections::BTreeMap;

use super::sack::{SackReport, Scoreboard};

/// Nanoseconds per second: simulated time is counted in integer
/// nanoseconds so runs are exact and reproducible.
pub const NS_PER_S: u64 = 1_000_000_000;

pub(super) const MS: u64 = 1_000_000;

/// The TCP congestion control of the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpVariant {
    /// Fast retransmit, then slow start from one segment.
    Tahoe,
    /// Fast retransmit and fast recovery (RFC 5681 §3.2).
    Reno,
    /// Reno with partial ACKs retransmitting within recovery (RFC 6582).
    NewReno,
    /// Selective acknowledgements (RFC 2018) and ns-2's `Sack1` loss
    /// recovery: the holes the SACK blocks show are retransmitted in
    /// fast recovery while a pipe estimate is under cwnd (see the `sack`
    /// module).
    Sack,
}

impl TcpVariant {
    /// The lower-case name: "tahoe", "reno", "newreno", "sack".
    pub fn name(self) -> &'static str {
        match self {
            TcpVariant::Tahoe => "tahoe",
            TcpVariant::Reno => "reno",
            TcpVariant::NewReno => "newreno",
            TcpVariant::Sack => "sack",
        }
    }
}

/// What the wireless link does with a frame that has bit errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DamagedFrames {
    /// A link-layer frame check discards it and signals the decompressor
    /// (RFC 1144 §4).
    Discard,
    /// It reaches the decompressor, whose checks must catch it.
    Deliver,
}

/// How the sender computes its retransmission timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RtoModel {
    /// RFC 6298: SRTT and RTTVAR of exact samples, RTO = SRTT + max(G,
    /// 4·RTTVAR) raised to the minimum, doubled on each expiry.
    Rfc6298,
    /// ns-2's `Agent/TCP` timer as released in ns-2.1b8 (June 2001, the
    /// draft's time; `tcp.cc`'s `rtt_update`, `rtt_timeout` and
    /// `rtt_backoff`): an RTT counts the clock ticks of `tick_ns`
    /// (`tcpTick_`, 0.1 s then) crossed between the send and the ACK;
    /// SRTT and RTTVAR are integers in ticks with 3 and 2 fraction bits;
    /// RTO = SRTT + 4·RTTVAR in whole ticks. The timeout is that RTO times
    /// the backoff (doubled on each expiry up to 64, back to 1 at the next
    /// RTT sample), then raised to the minimum (`minrto_`, 1 s in
    /// ns-2.1b8) and to two ticks. Past a backoff of 8 SRTT is cleared, so
    /// the next sample starts the estimate afresh (RTO = 3 RTT).
    Ns2 {
        /// `tcpTick_`, nanoseconds.
        tick_ns: u64,
        /// Where the sender's clock stands within a tick at time 0
        /// (ns-2's `boot_time_`, uniform in one tick), nanoseconds.
        phase_ns: u64,
    },
}

/// ns-2's timer state: its fixed-point estimates and backoff.
#[derive(Debug, Clone, Copy)]
struct Ns2Timer {
    tick_ns: u64,
    phase_ns: u64,
    /// `t_srtt_`: SRTT in ticks, times 8 (0: no estimate).
    srtt: i32,
    /// `t_rttvar_`: RTTVAR in ticks, times 4.
    rttvar: i32,
    /// `t_rtxcur_`: the RTO before backoff, nanoseconds.
    rtxcur_ns: u64,
    /// `t_backoff_`.
    backoff: u64,
}

impl Ns2Timer {
    /// `rtt_update`: a segment sent at `sent` was acknowledged at `now`.
    fn update(&mut self, sent: u64, now: u64) {
        let tick = self.tick_ns.max(1);
        // int((tao + fmod(sendtime, tick)) / tick): the ticks crossed.
        let ticks = ((now + self.phase_ns) / tick).saturating_sub((sent + self.phase_ns) / tick);
        let rtt = (ticks.min(i16::MAX as u64) as i32).max(1);
        if self.srtt != 0 {
            let mut delta = rtt - (self.srtt >> 3);
            self.srtt += delta;
            if self.srtt <= 0 {
                self.srtt = 1;
            }
            delta = delta.abs() - (self.rttvar >> 2);
            self.rttvar += delta;
            if self.rttvar <= 0 {
                self.rttvar = 1;
            }
        } else {
            self.srtt = rtt << 3;
            self.rttvar = rtt << 1;
        }
        self.rtxcur_ns = (((self.rttvar << 3) + self.srtt) >> 3) as u64 * tick;
        self.backoff = 1;
    }

    /// `rtt_backoff`.
    fn back_off(&mut self) {
        if self.backoff < 64 {
            self.backoff <<= 1;
        }
        if self.backoff > 8 {
            self.rttvar += self.srtt >> 3;
            self.srtt = 0;
        }
    }

    /// `rtt_timeout`, with the bounds of `cfg`.
    fn timeout(&self, cfg: &SenderConfig) -> u64 {
        let t = self.rtxcur_ns.saturating_mul(self.backoff).min(cfg.max_rto_ns);
        t.max(cfg.min_rto_ns).max(2 * self.tick_ns)
    }
}

/// The sender's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderConfig {
    /// Congestion control and loss recovery.
    pub variant: TcpVariant,
    /// Segment payload size in octets.
    pub mss: u32,
    /// The receiver's advertised window in octets.
    pub rwnd: u32,
    /// The RTO before any RTT sample, nanoseconds (RFC 6298 §2.1).
    pub initial_rto_ns: u64,
    /// The RTO's lower bound, nanoseconds (RFC 6298 §2.4).
    pub min_rto_ns: u64,
    /// The RTO's upper bound, nanoseconds, backoff included.
    pub max_rto_ns: u64,
    /// G of RFC 6298 §2.
    pub clock_granularity_ns: u64,
    /// The initial window in segments; None: RFC 5681 §3.1's
    /// min(4·MSS, max(2·MSS, 4380)) (ns-2's `windowInit_`: 1, and 2 from May 2001).
    pub initial_window: Option<u32>,
    /// How the retransmission timeout is computed.
    pub rto_model: RtoModel,
}

impl SenderConfig {
    /// RFC 6298's timer (1 s initial and minimum, 60 s maximum, 10 ms
    /// clock) and a window of 20 segments.
    pub fn new(variant: TcpVariant, mss: u32) -> SenderConfig {
        let mss = mss.max(1);
        SenderConfig {
            variant,
            mss,
            rwnd: mss.saturating_mul(20),
            initial_rto_ns: NS_PER_S,
            min_rto_ns: NS_PER_S,
            max_rto_ns: 60 * NS_PER_S,
            clock_granularity_ns: 10 * MS,
            initial_window: None,
            rto_model: RtoModel::Rfc6298,
        }
    }
}

/// A segment to send: `len` octets from stream offset `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Stream offset of its first octet.
    pub offset: u64,
    /// Payload octets, at most the MSS.
    pub len: u32,
    /// Whether these octets were sent before.
    pub retransmission: bool,
}

/// What the sender did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Segments sent again.
    pub retransmissions: u64,
    /// Losses detected by three duplicate ACKs.
    pub fast_retransmits: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// Round-trip times measured (RFC 6298 §3: never of a retransmission).
    pub rtt_samples: u64,
    /// The time the expired timers ran, from being set to expiring,
    /// nanoseconds: how long the sender sat waiting for its timeouts.
    pub timeout_wait_ns: u64,
}

/// A sans-IO TCP sender of an endless byte stream, in stream offsets
/// (the first byte is offset 0). The caller delivers ACKs with
/// [`on_ack`](TcpSender::on_ack), sends what
/// [`poll_send`](TcpSender::poll_send) returns, and calls
/// [`on_timer`](TcpSender::on_timer) at
/// [`timer_deadline`](TcpSender::timer_deadline).
#[derive(Debug, Clone)]
pub struct TcpSender {
    cfg: SenderConfig,
    snd_una: u64,
    snd_nxt: u64,
    /// One past the highest octet ever sent.
    snd_max: u64,
    cwnd: u64,
    ssthresh: u64,
    dupacks: u32,
    in_recovery: bool,
    /// NewReno: a partial ACK already reset the timer in this recovery.
    partial_acked: bool,
    /// `snd_max` at the last loss (RFC 6582 `recover`).
    recover: Option<u64>,
    /// Retransmit the segment at `snd_una` before anything else.
    retransmit_now: bool,
    srtt_ns: Option<f64>,
    rttvar_ns: f64,
    rto_ns: u64,
    /// Consecutive expiries without new data acknowledged.
    backoffs: u32,
    timer: Option<u64>,
    /// When the running timer was set.
    timer_set_at: u64,
    /// The timed segment: its end offset and when it was sent.
    timed: Option<(u64, u64)>,
    /// ns-2's timer, when the model is [`RtoModel::Ns2`].
    ns2: Option<Ns2Timer>,
    /// SACK: what the receiver SACKed and what recovery retransmitted.
    scoreboard: Scoreboard,
    /// SACK: ns-2's `pipe_`, the segments estimated in flight during
    /// recovery.
    pipe: i64,
    stats: SenderStats,
}

impl TcpSender {
    /// A sender at offset 0 with RFC 5681's initial window and no timer
    /// running; an MSS of 0 is taken as 1.
    pub fn new(cfg: SenderConfig) -> TcpSender {
        let mss = cfg.mss.max(1) as u64;
        let cfg = SenderConfig { mss: mss as u32, ..cfg };
        TcpSender {
            cfg,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            // RFC 5681 §3.1, equation (1).
            cwnd: cfg.initial_window.map_or((4 * mss).min((2 * mss).max(4380)), |w| w.max(1) as u64 * mss),
            // "Arbitrarily high": the receiver's window bounds it.
            ssthresh: u64::MAX / 4,
            dupacks: 0,
            in_recovery: false,
            partial_acked: false,
            recover: None,
            retransmit_now: false,
            srtt_ns: None,
            rttvar_ns: 0.0,
            rto_ns: cfg.initial_rto_ns.clamp(1, cfg.max_rto_ns.max(1)),
            backoffs: 0,
            timer: None,
            timer_set_at: 0,
            timed: None,
            ns2: match cfg.rto_model {
                RtoModel::Rfc6298 => None,
                RtoModel::Ns2 { tick_ns, phase_ns } => Some(Ns2Timer {
                    tick_ns,
                    phase_ns: phase_ns % tick_ns.max(1),
                    srtt: 0,
                    rttvar: 0,
                    rtxcur_ns: cfg.initial_rto_ns,
                    backoff: 1,
                }),
            },
            scoreboard: Scoreboard::default(),
            pipe: 0,
            stats: SenderStats::default(),
        }
    }

    /// The congestion window, octets.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// The slow-start threshold, octets.
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// The oldest unacknowledged offset.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// One past the highest offset ever sent.
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }

    /// Whether fast recovery is in progress.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// The current retransmission timeout, nanoseconds, backoff included.
    pub fn rto_ns(&self) -> u64 {
        match &self.ns2 {
            Some(t) => t.timeout(&self.cfg),
            None => self.rto_ns,
        }
    }

    /// The counters so far.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// When the retransmission timer expires, if it runs.
    pub fn timer_deadline(&self) -> Option<u64> {
        self.timer
    }

    pub(super) fn mss(&self) -> u64 {
        self.cfg.mss as u64
    }

    pub(super) fn flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    /// Octets the receiver SACKed above the cumulative ACK (0 but for
    /// [`TcpVariant::Sack`]).
    pub fn sacked_bytes(&self) -> u64 {
        self.scoreboard.sacked_bytes()
    }

    /// The next segment to send at `now`, if the window allows one.
    pub fn poll_send(&mut self, now: u64) -> Option<Segment> {
        let mss = self.mss();
        if self.retransmit_now {
            self.retransmit_now = false;
            if self.cfg.variant == TcpVariant::Sack {
                self.scoreboard.mark_retransmitted(self.snd_una);
            }
            return Some(self.emit(now, self.snd_una, true));
        }
        if self.in_recovery && self.cfg.variant == TcpVariant::Sack {
            return self.poll_sack_recovery(now);
        }
        let window = self.cwnd.min(self.cfg.rwnd as u64);
        if self.snd_nxt + mss > self.snd_una + window {
            return None;
        }
        let offset = self.snd_nxt;
        // Below snd_max: go-back-N after a timeout (or Tahoe's fast
        // retransmit) sends again what was sent before.
        let retransmission = offset < self.snd_max;
        self.snd_nxt += mss;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        Some(self.emit(now, offset, retransmission))
    }

    pub(super) fn emit(&mut self, now: u64, offset: u64, retransmission: bool) -> Segment {
        self.stats.segments_sent += 1;
        if retransmission {
            self.stats.retransmissions += 1;
            // Karn: no sample across a retransmission.
            self.timed = None;
        } else if self.timed.is_none() {
            self.timed = Some((offset + self.mss(), now));
        }
        // RFC 6298 §5.1.
        if self.timer.is_none() {
            self.arm_timer(now);
        }
        Segment { offset, len: self.cfg.mss, retransmission }
    }

    /// ns-2's `Sack1` `send_much` in fast recovery: while the pipe is
    /// under cwnd, the next hole, else new data within the receiver's
    /// window past the cumulative ACK (ns-2.35's `highest_ack_ + wnd_`;
    /// the 1997 `Sack1` let new data run to twice the window, which puts
    /// the 114 kb/s link's rows at BER 1e-8 to 1e-6 a further 2–3 % up).
    fn poll_sack_recovery(&mut self, now: u64) -> Option<Segment> {
        let mss = self.mss();
        if self.pipe >= (self.cwnd / mss) as i64 {
            return None;
        }
        let seg = if let Some(hole) = self.scoreboard.next_hole(self.snd_una, mss) {
            self.scoreboard.mark_retransmitted(hole);
            self.emit(now, hole, true)
        } else if self.snd_nxt + mss <= self.snd_una + self.cfg.rwnd as u64 {
            let offset = self.snd_nxt;
            let retransmission = offset < self.snd_max;
            self.snd_nxt += mss;
            self.snd_max = self.snd_max.max(self.snd_nxt);
            self.emit(now, offset, retransmission)
        } else {
            return None;
        };
        self.pipe += 1;
        Some(seg)
    }

    /// An ACK arrived acknowledging every octet before `ack`.
    pub fn on_ack(&mut self, now: u64, ack: u64) {
        self.on_ack_sack(now, ack, &[]);
    }

    /// An ACK arrived acknowledging every octet before `ack` and SACKing
    /// the octets of `blocks` (start, end), which only
    /// [`TcpVariant::Sack`] reads.
    pub fn on_ack_sack(&mut self, now: u64, ack: u64, blocks: &[(u64, u64)]) {
        if ack > self.snd_max {
            return;
        }
        if self.cfg.variant == TcpVariant::Sack {
            self.scoreboard.update(ack.max(self.snd_una), blocks);
            if self.in_recovery {
                self.sack_recovery_ack(now, ack);
                return;
            }
        }
        self.cumulative_ack(now, ack);
    }

    /// ns-2's `Sack1` `recv` in fast recovery: every ACK takes a segment
    /// from the pipe, a partial ACK a second one and restarts the timer;
    /// the ACK of `recover` ends recovery with cwnd at ssthresh.
    fn sack_recovery_ack(&mut self, now: u64, ack: u64) {
        self.pipe -= 1;
        if ack <= self.snd_una {
            return;
        }
        self.advance_una(now, ack);
        self.backoffs = 0;
        if self.recover.is_some_and(|r| ack >= r) {
            self.in_recovery = false;
            self.dupacks = 0;
            self.cwnd = self.ssthresh;
            self.scoreboard.clear();
        } else {
            self.pipe -= 1;
        }
        if self.snd_una >= self.snd_max {
            self.timer = None;
        } else {
            self.arm_timer(now);
        }
    }

    /// New data acknowledged up to `ack`: the timed segment's round trip
    /// sampled if `ack` covers it, and SND.UNA (SND.NXT with it) moved.
    fn advance_una(&mut self, now: u64, ack: u64) {
        if let Some((end, at)) = self.timed {
            if ack >= end {
                self.sample(at, now);
                self.timed = None;
            }
        }
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
    }

    /// An ACK outside SACK's recovery.
    fn cumulative_ack(&mut self, now: u64, ack: u64) {
        let mss = self.mss();
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            self.advance_una(now, ack);
            self.dupacks = 0;
            self.backoffs = 0;
            let mut restart_timer = true;
            if self.in_recovery {
                match self.cfg.variant {
                    TcpVariant::NewReno if self.recover.is_some_and(|r| ack < r) => {
                        // RFC 6582 §3.2 step 5: a partial ACK.
                        self.retransmit_now = true;
                        self.cwnd = self.cwnd.saturating_sub(acked);
                        if acked >= mss {
                            self.cwnd += mss;
                        }
                        self.cwnd = self.cwnd.max(mss);
                        restart_timer = !self.partial_acked;
                        self.partial_acked = true;
                    }
                    TcpVariant::NewReno => {
                        // Full ACK (step 3, option 1).
                        self.cwnd = self.ssthresh.min(self.flight() + mss);
                        self.in_recovery = false;
                    }
                    _ => {
                        // RFC 5681 §3.2 step 6.
                        self.cwnd = self.ssthresh;
                        self.in_recovery = false;
                    }
                }
            } else if self.cwnd < self.ssthresh {
                self.cwnd += acked.min(mss);
            } else {
                self.cwnd += (mss * mss / self.cwnd).max(1);
            }
            if self.snd_una >= self.snd_max {
                self.timer = None;
            } else if restart_timer {
                self.arm_timer(now);
            }
        } else if ack == self.snd_una && self.snd_max > self.snd_una {
            self.dupacks += 1;
            if self.in_recovery {
                // RFC 5681 §3.2 step 4: each further duplicate inflates.
                self.cwnd += mss;
                return;
            }
            if self.dupacks == 3 && self.recover.is_none_or(|r| ack > r) {
                self.stats.fast_retransmits += 1;
                self.ssthresh = (self.flight() / 2).max(2 * mss);
                self.recover = Some(self.snd_max);
                self.timed = None;
                match self.cfg.variant {
                    TcpVariant::Tahoe => {
                        self.cwnd = mss;
                        self.snd_nxt = self.snd_una;
                    }
                    TcpVariant::Reno | TcpVariant::NewReno => {
                        self.retransmit_now = true;
                        self.cwnd = self.ssthresh + 3 * mss;
                        self.in_recovery = true;
                        self.partial_acked = false;
                    }
                    TcpVariant::Sack => {
                        // ns-2's Sack1: the segments outstanding less the
                        // three the duplicates say left, cwnd halved and
                        // not inflated; the retransmission of snd_una is
                        // not counted in the pipe.
                        self.pipe = (self.flight() / mss) as i64 - 3;
                        self.retransmit_now = true;
                        self.cwnd = self.ssthresh;
                        self.in_recovery = true;
                    }
                }
                self.arm_timer(now);
            }
        }
    }

    /// The retransmission timer's expiry (RFC 6298 §5.4–5.6, RFC 5681
    /// §3.1): ignored before the deadline.
    pub fn on_timer(&mut self, now: u64) {
        let Some(deadline) = self.timer else { return };
        if now < deadline {
            return;
        }
        let mss = self.mss();
        self.stats.timeouts += 1;
        self.stats.timeout_wait_ns += now.saturating_sub(self.timer_set_at);
        if self.backoffs == 0 {
            self.ssthresh = (self.flight() / 2).max(2 * mss);
        }
        self.backoffs += 1;
        self.cwnd = mss;
        self.recover = Some(self.snd_max);
        self.in_recovery = false;
        self.dupacks = 0;
        self.retransmit_now = false;
        self.snd_nxt = self.snd_una;
        self.timed = None;
        self.scoreboard.clear();
        self.rto_ns = (self.rto_ns.saturating_mul(2)).min(self.cfg.max_rto_ns);
        if let Some(t) = &mut self.ns2 {
            t.back_off();
        }
        self.timer = None;
    }

    /// (Re)starts the retransmission timer at `now` for the current RTO.
    fn arm_timer(&mut self, now: u64) {
        self.timer = Some(now + self.rto_ns());
        self.timer_set_at = now;
    }

    /// An RTT sample: the timed segment, sent at `sent`, acknowledged at
    /// `now`.
    pub(super) fn sample(&mut self, sent: u64, now: u64) {
        let r = now.saturating_sub(sent) as f64;
        self.stats.rtt_samples += 1;
        if let Some(t) = &mut self.ns2 {
            t.update(sent, now);
        }
        let srtt = match self.srtt_ns {
            None => {
                self.rttvar_ns = r / 2.0;
                r
            }
            Some(s) => {
                self.rttvar_ns = 0.75 * self.rttvar_ns + 0.25 * (s - r).abs();
                0.875 * s + 0.125 * r
            }
        };
        self.srtt_ns = Some(srtt);
        let rto = srtt + (self.cfg.clock_granularity_ns as f64).max(4.0 * self.rttvar_ns);
        self.rto_ns = (rto as u64).clamp(self.cfg.min_rto_ns, self.cfg.max_rto_ns.max(self.cfg.min_rto_ns));
    }
}

/// A TCP receiver that acknowledges every segment at once, keeps
/// out-of-order segments, and delivers in order.
#[derive(Debug, Clone, Default)]
pub struct TcpReceiver {
    rcv_nxt: u64,
    /// Out-of-order data: start → end.
    ooo: BTreeMap<u64, u64>,
    /// Segments wholly below the next expected offset (already received).
    pub duplicate_segments: u64,
    /// Segments beyond the next expected offset (a gap before them).
    pub out_of_order_segments: u64,
    /// Out-of-order arrivals, for the SACK blocks.
    sack: SackReport,
}

impl TcpReceiver {
    /// A receiver expecting offset 0, nothing buffered.
    pub fn new() -> TcpReceiver {
        TcpReceiver::default()
    }

    /// Octets delivered in order to the application.
    pub fn delivered(&self) -> u64 {
        self.rcv_nxt
    }

    /// Whether out-of-order data waits above a gap.
    pub fn holds_out_of_order(&self) -> bool {
        !self.ooo.is_empty()
    }

    /// A segment of `len` octets at `offset` arrived; returns the ACK.
    pub fn on_segment(&mut self, offset: u64, len: u32) -> u64 {
        let end = offset + len as u64;
        if end <= self.rcv_nxt {
            self.duplicate_segments += 1;
        } else if offset > self.rcv_nxt {
            self.out_of_order_segments += 1;
            let e = self.ooo.entry(offset).or_insert(end);
            *e = (*e).max(end);
            self.sack.arrived(offset);
        } else {
            self.rcv_nxt = end;
            while let Some((&s, &e)) = self.ooo.first_key_value() {
                if s > self.rcv_nxt {
                    break;
                }
                self.ooo.pop_first();
                self.rcv_nxt = self.rcv_nxt.max(e);
            }
        }
        self.rcv_nxt
    }

    /// The SACK blocks (start, end) for an ACK now, at most `max`: the
    /// contiguous out-of-order data holding the latest out-of-order
    /// segment first, then the blocks of earlier ones, most recent first
    /// (RFC 2018 §4); none when nothing waits above a gap.
    pub fn sack_blocks(&mut self, max: usize) -> Vec<(u64, u64)> {
        self.sack.blocks(self.rcv_nxt, &self.ooo, max)
    }
}
