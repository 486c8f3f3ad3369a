//! TCP congestion-window tracking (draft-ietf-rohc-tcp-taroc-04 §5.1):
//! Algorithm SEQ (§5.1.2) follows the sequence numbers of one direction,
//! Algorithm ACK (§5.1.3) its acknowledgment numbers. Both imitate TCP's
//! slow start, congestion avoidance and fast recovery and estimate `cwnd`
//! and `ssthresh` in bytes, bounded by §5.1.4's MIN and MAX.

use crate::wlsb::diff32;

/// The three states of both algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcState {
    /// SLOW-START: cwnd grows by what each new segment (or ACK) advances.
    SlowStart,
    /// CONGESTION-AVOIDANCE: cwnd grows by about one MSS per window.
    CongestionAvoidance,
    /// FAST-RECOVERY: cwnd halved after a loss (SEQ: a segment more than
    /// 3·MSS behind CMAXSN; ACK: a fourth duplicate ACK), until new data
    /// (SEQ) or a new ACK (ACK) ends it.
    FastRecovery,
}

/// Parameters shared by both trackers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrackerParams {
    /// Estimated maximum segment size (§5.1.2: "the implementation can use
    /// the MTU of the link as an approximation"; we use MTU − 40).
    pub mss: u32,
    /// Initial ssthresh (ISSTHRESH, "MAY be arbitrarily high"; bounded by
    /// `max_window`).
    pub issthresh: u32,
    /// §5.1.4 MAX boundary: a commonly used maximum socket buffer.
    pub max_window: u32,
}

impl TrackerParams {
    /// IW = 4·MSS (§5.1.2), within the bounds.
    pub fn iw(&self) -> u32 {
        self.clamp(4 * self.mss)
    }

    /// §5.1.4 MIN boundary, "determined according to \[18\]" (RFC 3390's
    /// initial window): min(4·MSS, max(2·MSS, 4380)).
    pub fn min_window(&self) -> u32 {
        (4 * self.mss).min((2 * self.mss).max(4380))
    }

    /// `w` held within §5.1.4's MIN and MAX boundaries (MIN wins when MAX
    /// is below it).
    pub fn clamp(&self, w: u32) -> u32 {
        w.clamp(self.min_window(), self.max_window.max(self.min_window()))
    }
}

/// How far from CMAXSN/CMAXACK a number may be before it is a long jump
/// (§5.3.2 c: the estimated window). In fast recovery the estimate was
/// just halved while the sender's window was not: the cumulative ACK that
/// ends recovery covers the whole window before the loss, so twice the
/// estimate is allowed there.
fn jump_limit(state: CcState, cwnd: u32) -> u64 {
    match state {
        CcState::FastRecovery => 2 * cwnd as u64,
        _ => cwnd as u64,
    }
}

/// Algorithm SEQ (§5.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqTracker {
    /// The congestion state the sequence numbers suggest.
    pub state: CcState,
    /// The estimated congestion window in bytes, within MIN and MAX.
    pub cwnd: u32,
    /// The estimated slow-start threshold in bytes, within MIN and MAX.
    pub ssthresh: u32,
    /// Current maximum sequence number (CMAXSN).
    pub cmaxsn: u32,
    /// Current minimum sequence number (CMINSN): CMAXSN − cwnd once the
    /// span exceeds cwnd.
    pub cminsn: u32,
    /// Whether a segment has been seen (CMAXSN holds a real number).
    pub started: bool,
    params: TrackerParams,
}

impl SeqTracker {
    /// Before any segment: slow start, cwnd IW, ssthresh ISSTHRESH (§5.1.2).
    pub fn new(params: TrackerParams) -> SeqTracker {
        SeqTracker {
            state: CcState::SlowStart,
            cwnd: params.iw(),
            ssthresh: params.clamp(params.issthresh),
            cmaxsn: 0,
            cminsn: 0,
            started: false,
            params,
        }
    }

    /// §5.3.2 c: a segment whose sequence number is farther ahead of
    /// CMAXSN than the estimated window is a long jump.
    ///
    /// The draft writes |NSN − CMAXSN|, but its trigger is that the VSW
    /// shrinks to that one packet, and W shrinks it from CMAXSN, which
    /// only a jump ahead moves. A retransmission behind CMAXSN leaves the
    /// VSW whole, and W-LSB encodes it against it; one behind every packet
    /// in it is §5.3.2 a's case. Counting retransmissions as long jumps
    /// sent every timeout's retransmission, and the slow-start after it,
    /// as IR-DYN: the longest frames, lost most often, where TCP has one
    /// segment in flight and a loss costs another, doubled, timeout.
    pub fn is_long_jump(&self, nsn: u32) -> bool {
        self.started && diff32(nsn, self.cmaxsn) > jump_limit(self.state, self.cwnd) as i64
    }

    /// Feeds one segment's sequence number (NSN).
    pub fn on_segment(&mut self, nsn: u32) {
        if !self.started {
            self.started = true;
            self.cmaxsn = nsn;
            self.cminsn = nsn;
            return;
        }
        let p = self.params;
        let ahead = diff32(nsn, self.cmaxsn);
        match self.state {
            CcState::SlowStart | CcState::CongestionAvoidance if ahead > 0 => {
                let grow = if self.state == CcState::SlowStart {
                    ahead as u64
                } else {
                    (ahead as u64 * p.mss as u64) / self.cwnd.max(1) as u64
                };
                self.cwnd = p.clamp((self.cwnd as u64 + grow).min(u32::MAX as u64) as u32);
                self.advance(nsn);
                if self.state == CcState::SlowStart && self.cwnd > self.ssthresh {
                    self.state = CcState::CongestionAvoidance;
                }
            }
            CcState::SlowStart | CcState::CongestionAvoidance => {
                // At or behind CMAXSN: a retransmission farther back than
                // 3·MSS means a loss (§5.1.2).
                if (-ahead) as u64 > 3 * p.mss as u64 {
                    self.cwnd = p.clamp(self.cwnd / 2);
                    self.ssthresh = p.clamp(self.cwnd.max(2 * p.mss));
                    self.state = CcState::FastRecovery;
                }
            }
            CcState::FastRecovery => {
                if ahead >= self.cwnd as i64 {
                    // Leaves fast recovery; the segment is then new data
                    // of congestion avoidance, which advances CMAXSN (the
                    // draft leaves CMAXSN stale, which would count this
                    // whole jump as growth on the next segment).
                    self.state = CcState::CongestionAvoidance;
                    self.on_segment(nsn);
                }
            }
        }
    }

    fn advance(&mut self, nsn: u32) {
        self.cmaxsn = nsn;
        // The draft (§5.1.2, both states) writes `CMINSN = cwnd - CMAXSN`:
        // the operands are reversed. The window's lower edge is
        // CMAXSN − cwnd.
        if diff32(self.cmaxsn, self.cminsn) > self.cwnd as i64 {
            self.cminsn = self.cmaxsn.wrapping_sub(self.cwnd);
        }
    }
}

/// Algorithm ACK (§5.1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckTracker {
    /// The congestion state the acknowledgment numbers suggest.
    pub state: CcState,
    /// The estimated congestion window in bytes, within MIN and MAX.
    pub cwnd: u32,
    /// The estimated slow-start threshold in bytes, within MIN and MAX.
    pub ssthresh: u32,
    /// Current maximum acknowledgment number (CMAXACK).
    pub cmaxack: u32,
    /// Duplicate ACKs seen (NDUPACKS).
    pub ndupacks: u32,
    /// Whether an ACK has been seen (CMAXACK holds a real number).
    pub started: bool,
    params: TrackerParams,
}

impl AckTracker {
    /// Before any ACK: slow start, cwnd IW, ssthresh ISSTHRESH (§5.1.3).
    pub fn new(params: TrackerParams) -> AckTracker {
        AckTracker {
            state: CcState::SlowStart,
            cwnd: params.iw(),
            ssthresh: params.clamp(params.issthresh),
            cmaxack: 0,
            ndupacks: 0,
            started: false,
            params,
        }
    }

    /// As [`SeqTracker::is_long_jump`]: an ACK number farther ahead of
    /// CMAXACK than the estimated window.
    pub fn is_long_jump(&self, newack: u32) -> bool {
        self.started && diff32(newack, self.cmaxack) > jump_limit(self.state, self.cwnd) as i64
    }

    /// Feeds one segment's acknowledgment number (NEWACK). `pure_ack` is
    /// whether the segment carries no data: only those count as duplicate
    /// ACKs (RFC 5681 §2's definition; otherwise every data segment of a
    /// bulk sender, whose ACK number stands still, would count as one).
    pub fn on_segment(&mut self, newack: u32, pure_ack: bool) {
        if !self.started {
            self.started = true;
            self.cmaxack = newack;
            return;
        }
        let p = self.params;
        let ahead = diff32(newack, self.cmaxack);
        match self.state {
            CcState::SlowStart | CcState::CongestionAvoidance => {
                if ahead > 0 {
                    let grow = if self.state == CcState::SlowStart {
                        ahead as u64
                    } else {
                        (ahead as u64 * p.mss as u64) / self.cwnd.max(1) as u64
                    };
                    self.cwnd = p.clamp((self.cwnd as u64 + grow).min(u32::MAX as u64) as u32);
                    self.ndupacks = 0;
                    self.cmaxack = newack;
                    if self.state == CcState::SlowStart && self.cwnd > self.ssthresh {
                        self.state = CcState::CongestionAvoidance;
                    }
                } else if ahead == 0 {
                    if pure_ack {
                        self.ndupacks += 1;
                        if self.ndupacks > 3 {
                            self.cwnd = p.clamp(self.cwnd / 2);
                            self.ssthresh = p.clamp(self.cwnd.max(2 * p.mss));
                            self.state = CcState::FastRecovery;
                        }
                    }
                } else {
                    self.ndupacks = 0;
                }
            }
            CcState::FastRecovery => {
                if ahead > 0 {
                    self.ndupacks = 0;
                    // As for SEQ: CMAXACK follows, so the next new ACK of
                    // congestion avoidance grows cwnd by its own advance.
                    self.cmaxack = newack;
                    self.state = CcState::CongestionAvoidance;
                }
            }
        }
    }
}

/// W(cwnd_seq, ssthresh_seq, cwnd_ack, ssthresh_ack) =
/// K·MAX(MAX(cwnd_seq, 2·ssthresh_seq), MAX(cwnd_ack, 2·ssthresh_ack))
/// (§5.3.1 b, §5.6.1), in bytes of sequence space. `k_eighths` is K·8.
pub fn vsw_bound(seq: &SeqTracker, ack: &AckTracker, k_eighths: u32) -> u64 {
    let m = (seq.cwnd as u64).max(2 * seq.ssthresh as u64).max(ack.cwnd as u64).max(2 * ack.ssthresh as u64);
    m * k_eighths as u64 / 8
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: TrackerParams = TrackerParams { mss: 1000, issthresh: 8000, max_window: 64000 };

    #[test]
    fn seq_slow_start_grows_by_distance_then_avoids_congestion() {
        let mut t = SeqTracker::new(P);
        t.on_segment(0);
        assert_eq!(t.cwnd, 4000);
        for i in 1..=5 {
            t.on_segment(i * 1000);
        }
        assert_eq!(t.cwnd, 9000);
        assert_eq!(t.state, CcState::CongestionAvoidance);
        // CMINSN = CMAXSN - cwnd (the corrected operand order).
        assert_eq!(t.cmaxsn, 5000);
        assert_eq!(t.cminsn, 0); // span 5000 <= cwnd
        t.on_segment(15000); // +10000 in CA: cwnd += 10000*1000/9000
        assert_eq!(t.cwnd, 9000 + 1111);
        assert_eq!(t.cminsn, 15000 - 10111);
    }

    #[test]
    fn seq_retransmission_far_back_halves_and_recovers() {
        let mut t = SeqTracker::new(P);
        for i in 0..=8 {
            t.on_segment(i * 1000);
        }
        let before = t.cwnd;
        t.on_segment(5000); // 3000 back: ignored
        assert_eq!(t.cwnd, before);
        t.on_segment(2000); // 6000 back: loss
        assert_eq!(t.state, CcState::FastRecovery);
        assert_eq!(t.cwnd, before / 2);
        assert_eq!(t.ssthresh, (before / 2).max(2000));
        t.on_segment(9000); // less than cwnd ahead: still recovering
        assert_eq!(t.state, CcState::FastRecovery);
        t.on_segment(8000 + t.cwnd);
        assert_eq!(t.state, CcState::CongestionAvoidance);
    }

    #[test]
    fn ack_dupacks_over_three_halve() {
        let mut t = AckTracker::new(P);
        t.on_segment(100, true);
        t.on_segment(2100, true);
        assert_eq!(t.cwnd, 6000);
        for _ in 0..3 {
            t.on_segment(2100, true);
        }
        assert_eq!(t.state, CcState::SlowStart);
        t.on_segment(2100, false); // data with a standing ACK is no dupack
        assert_eq!(t.state, CcState::SlowStart);
        t.on_segment(2100, true);
        assert_eq!(t.state, CcState::FastRecovery);
        assert_eq!(t.cwnd, 4000); // 3000 clamped up to MIN = min(4·MSS, max(2·MSS, 4380))
        t.on_segment(5100, true);
        assert_eq!(t.state, CcState::CongestionAvoidance);
        assert_eq!(t.cmaxack, 5100);
    }

    #[test]
    fn bounds_and_w() {
        let s = SeqTracker::new(P);
        let a = AckTracker::new(P);
        assert!(!s.is_long_jump(0));
        assert_eq!(vsw_bound(&s, &a, 8), 16000);
        assert_eq!(vsw_bound(&s, &a, 12), 24000); // K = 1.5
        let mut s = s;
        s.on_segment(0);
        assert!(s.is_long_jump(4001));
        assert!(!s.is_long_jump(4000));
        // Behind CMAXSN (a retransmission) is no long jump: the VSW stays.
        assert!(!s.is_long_jump(0u32.wrapping_sub(5000)));
        assert!(s.is_long_jump(0u32.wrapping_sub(5000).wrapping_add(1 << 31)));
    }
}
