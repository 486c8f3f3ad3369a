//! Selective acknowledgements for the study's TCP (RFC 2018): the
//! receiver's choice of SACK blocks and the sender's scoreboard.
//!
//! The sender's loss recovery follows ns-2's `Agent/TCP/Sack1`, the TCP
//! the draft's 114 and 9.6 kb/s tables name ("Sack"), rather than RFC 6675
//! (whose first version, RFC 3517, came two years after the draft): a
//! scoreboard of the SACKed octets; fast recovery entered on the third
//! duplicate ACK with cwnd halved and a pipe estimate of the segments
//! outstanding less three (ns-2's `maxseq_ - highest_ack_ - numdupacks`;
//! its first `Sack1` took cwnd less three, the same while the window is
//! not held by the receiver's); each ACK in recovery takes one segment from the
//! pipe, a partial ACK two; while the pipe is under cwnd the sender
//! retransmits the first hole below the highest SACKed octet not yet
//! retransmitted in this recovery, or else sends new data. Unlike RFC
//! 6675's IsLost, a hole needs no three SACKed segments above it; unlike
//! RFC 6675 there is no rescue retransmission and a lost retransmission
//! waits for the timer. The scoreboard is cleared on a timeout and at the
//! end of recovery, as ns-2's `ClearScoreBoard`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The most SACK blocks an ACK carries: ns-2's `max_sack_blocks_`, and
/// RFC 2018 §3's limit when timestamps share the options (four fit in 40
/// octets without them).
pub const MAX_SACK_BLOCKS: usize = 3;

/// Receiver-side out-of-order arrivals, most recent first, to choose the
/// blocks of the next ACK (RFC 2018 §4).
#[derive(Debug, Clone, Default)]
pub(super) struct SackReport {
    /// Offsets of out-of-order segments as they arrived, most recent first.
    recent: VecDeque<u64>,
}

/// How many arrivals [`SackReport`] remembers: blocks older than this
/// many out-of-order segments are repeated no more.
const RECENT: usize = 64;

impl SackReport {
    /// An out-of-order segment starting at `offset` arrived.
    pub(super) fn arrived(&mut self, offset: u64) {
        self.recent.retain(|&o| o != offset);
        self.recent.push_front(offset);
        self.recent.truncate(RECENT);
    }

    /// The blocks of the next ACK, at most `max`: the block holding the
    /// latest out-of-order segment first, then the blocks of earlier
    /// arrivals, most recent first, each once (RFC 2018 §4). `ooo` is the
    /// receiver's out-of-order data above `rcv_nxt` (start → end).
    pub(super) fn blocks(&mut self, rcv_nxt: u64, ooo: &BTreeMap<u64, u64>, max: usize) -> Vec<(u64, u64)> {
        self.recent.retain(|&o| o >= rcv_nxt);
        let merged = merge(ooo);
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(max);
        for &o in &self.recent {
            if out.len() >= max {
                break;
            }
            let Some(&b) = merged.iter().find(|&&(s, e)| s <= o && o < e) else { continue };
            if !out.contains(&b) {
                out.push(b);
            }
        }
        out
    }
}

/// Contiguous blocks of `ranges` (start → end, possibly adjacent or
/// overlapping), in order.
fn merge(ranges: &BTreeMap<u64, u64>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (&s, &e) in ranges {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The sender's record of what the receiver SACKed and what it
/// retransmitted in the current recovery (ns-2's `ScoreBoard`).
#[derive(Debug, Clone, Default)]
pub(super) struct Scoreboard {
    /// SACKed octets above the cumulative ACK, merged: start → end.
    sacked: BTreeMap<u64, u64>,
    /// Offsets of the segments retransmitted in this recovery.
    retransmitted: BTreeSet<u64>,
}

impl Scoreboard {
    /// Takes an ACK's cumulative point and SACK blocks; blocks at or
    /// below `una`, and empty ones, are ignored (RFC 2018 §4's D-SACKs are
    /// not generated here).
    pub(super) fn update(&mut self, una: u64, blocks: &[(u64, u64)]) {
        for &(s, e) in blocks {
            let s = s.max(una);
            if e <= s {
                continue;
            }
            self.insert(s, e);
        }
        // A block straddling the cumulative point keeps its part above.
        let straddling = self.sacked.range(..una).next_back().map(|(_, &e)| e).filter(|&e| e > una);
        self.sacked = self.sacked.split_off(&una);
        if let Some(e) = straddling {
            self.insert(una, e);
        }
        self.retransmitted = self.retransmitted.split_off(&una);
    }

    fn insert(&mut self, mut s: u64, mut e: u64) {
        // Absorb every stored block that overlaps or touches [s, e).
        let touching: Vec<(u64, u64)> =
            self.sacked.range(..=e).filter(|&(&bs, &be)| be >= s && bs <= e).map(|(&a, &b)| (a, b)).collect();
        for (bs, be) in touching {
            self.sacked.remove(&bs);
            s = s.min(bs);
            e = e.max(be);
        }
        self.sacked.insert(s, e);
    }

    /// Whether every octet of [s, e) was SACKed.
    pub(super) fn is_sacked(&self, s: u64, e: u64) -> bool {
        self.sacked.range(..=s).next_back().is_some_and(|(_, &be)| be >= e)
    }

    /// One past the highest SACKed octet, if any was.
    pub(super) fn high_sacked(&self) -> Option<u64> {
        self.sacked.last_key_value().map(|(_, &e)| e)
    }

    /// Octets SACKed above the cumulative ACK.
    pub(super) fn sacked_bytes(&self) -> u64 {
        self.sacked.iter().map(|(s, e)| e - s).sum()
    }

    /// The first segment of `mss` octets from `una` up to the highest
    /// SACKed octet that is neither SACKed nor retransmitted in this
    /// recovery (ns-2's `GetNextRetran`).
    pub(super) fn next_hole(&self, una: u64, mss: u64) -> Option<u64> {
        let high = self.high_sacked()?;
        let mut o = una;
        while o + mss <= high {
            if !self.is_sacked(o, o + mss) && !self.retransmitted.contains(&o) {
                return Some(o);
            }
            o += mss;
        }
        None
    }

    /// The segment at `offset` was retransmitted.
    pub(super) fn mark_retransmitted(&mut self, offset: u64) {
        self.retransmitted.insert(offset);
    }

    /// Forgets everything (a timeout, the end of recovery).
    pub(super) fn clear(&mut self) {
        self.sacked.clear();
        self.retransmitted.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoreboard_merges_and_finds_holes() {
        let mut b = Scoreboard::default();
        b.update(0, &[(200, 300)]);
        b.update(0, &[(300, 400), (500, 600)]);
        assert!(b.is_sacked(200, 400));
        assert!(!b.is_sacked(200, 500));
        assert_eq!(b.high_sacked(), Some(600));
        assert_eq!(b.sacked_bytes(), 300);
        assert_eq!(b.next_hole(0, 100), Some(0));
        b.mark_retransmitted(0);
        assert_eq!(b.next_hole(0, 100), Some(100));
        b.mark_retransmitted(100);
        assert_eq!(b.next_hole(0, 100), Some(400));
        b.mark_retransmitted(400);
        assert_eq!(b.next_hole(0, 100), None);
        // The cumulative ACK passes the first block: it and the marks go.
        b.update(400, &[]);
        assert_eq!(b.sacked_bytes(), 100);
        assert_eq!(b.next_hole(400, 100), None, "400 was retransmitted");
        // A block the cumulative point cuts keeps its upper part.
        b.update(550, &[]);
        assert_eq!(b.sacked_bytes(), 50);
        assert!(b.is_sacked(550, 600));
        b.clear();
        assert_eq!(b.high_sacked(), None);
    }

    #[test]
    fn report_puts_the_latest_block_first_and_repeats_older_ones() {
        let mut r = SackReport::default();
        let mut ooo = BTreeMap::new();
        for (s, e) in [(100, 200), (300, 400), (500, 600), (700, 800)] {
            ooo.insert(s, e);
            r.arrived(s);
        }
        assert_eq!(r.blocks(0, &ooo, 3), vec![(700, 800), (500, 600), (300, 400)]);
        // 200..300 arrives: blocks 100..400 merge, and it is the latest.
        ooo.insert(200, 300);
        r.arrived(200);
        assert_eq!(r.blocks(0, &ooo, 3), vec![(100, 400), (700, 800), (500, 600)]);
        // The hole at 0 is filled: everything up to 400 is in order.
        ooo.retain(|&s, _| s >= 400);
        assert_eq!(r.blocks(400, &ooo, 4), vec![(700, 800), (500, 600)]);
    }
}
