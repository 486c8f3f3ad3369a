//! The compressor's sliding window of sent values (VSW, §6.1) and the
//! spread of every field over it, kept incrementally.
//!
//! W-LSB (RFC 3095 §4.5.2) sends `k` bits of a value when it lies in the
//! interpretation interval of every reference in the window. For an LSB
//! range that is one interval of the value's circle, that only depends on
//! the least and the greatest reference: the window covers `v` with `(k, p)`
//! exactly when `v - max ≥ -p` and `v - min ≤ 2^k - 1 - p`. So the window
//! keeps, per field, its minimum and maximum and where they are, and per
//! field that must be STATIC the position of its last change, rather than
//! comparing each packet with every entry.
//!
//! A new value that reaches past the minimum (maximum) becomes it. When
//! the entry holding the minimum leaves the window, the new one is the
//! front entry's value if the window's values never decrease (the run of
//! non-decreasing values at the back covers it), the last one if they
//! never increase, and otherwise the least value of a scan of the window.
//! Fields that grow (MSN, SEQ, timestamps), stay (IP-ID offset, window,
//! strides' n) or fall (m − MSN of a quiet ACK) thus cost O(1) a packet;
//! a retransmission only moves SEQ's minimum to itself until it leaves;
//! a field whose extreme leaves the window in a non-monotonic stretch
//! costs a scan of the window (at most `max_vsw` entries), which for
//! values in random order happens with probability about 2/length a
//! packet: O(1) on average.
//!
//! Wrap-around: 16- and 32-bit fields are unwrapped along the window
//! (each entry is its predecessor plus their signed difference). When
//! every difference `v - v_ref` lies in an interval shorter than half the
//! field's range, which every LSB encoding here is, the unwrapped
//! differences equal the signed ones, so the window's answer is the one a
//! comparison with each entry gives.

use std::collections::VecDeque;

use crate::packet::{RawOptions, FLAG_ACK, FLAG_PSH};
use crate::wlsb::Spread;
use crate::Record;

/// The spread of every field over the VSW, and which fields are static.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Analysis {
    pub msn: Spread,
    pub ipid_off: Spread,
    pub ipid_raw: Spread,
    pub seq: Spread,
    pub ack: Spread,
    pub win: Spread,
    pub ts: [Spread; 2],
    /// Fixed-payload m of SEQ and ACK, when every entry has the current
    /// packet's stride and remainder n (§6.1).
    pub seq_fp: Option<Spread>,
    pub ack_fp: Option<Spread>,
    /// m − MSN of SEQ and ACK, under the same condition.
    pub seq_scaled: Option<Spread>,
    pub ack_scaled: Option<Spread>,
    pub ip_static: bool,
    pub flags_static: bool,
    pub urgent_static: bool,
    pub strides_static: bool,
    pub skeleton_static: bool,
    /// Older than every packet in the VSW (§5.3.2 a).
    pub falls_behind: bool,
    /// The packet's fields on the window's lines, which
    /// [`Vsw::push_analysed`] takes rather than computing them again.
    pub line: Line,
}

/// A packet's numeric fields on the window's lines, and the raw values of
/// the wrapping ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line {
    u: [i64; FIELDS],
    raw: [u32; WRAPPING],
}

/// The numeric fields the VSW keeps spreads of, as indices of
/// [`Entry::u`]; the first eight wrap (16 or 32 bits, see [`WIDTH`]).
const MSN: usize = 0;
const IPID_OFF: usize = 1;
const IPID_RAW: usize = 2;
const SEQ: usize = 3;
const ACK: usize = 4;
const WIN: usize = 5;
const TS0: usize = 6;
const TS1: usize = 7;
const SEQ_M: usize = 8;
const ACK_M: usize = 9;
/// m − MSN (the MSN unwrapped along the window).
const SEQ_LAG: usize = 10;
const ACK_LAG: usize = 11;
const FIELDS: usize = 12;
const WRAPPING: usize = 8;
const WIDTH: [u32; WRAPPING] = [16, 16, 16, 32, 32, 16, 32, 32];

/// The least and greatest value of one field over the window (on the
/// field's unwrapped line), the positions holding them, and the runs of
/// monotonic values at the back.
#[derive(Debug, Clone, Copy, Default)]
struct Extremes {
    /// At most every value of the window (and equal to the value at
    /// `lo_at` while that is in the window; the newest such position).
    lo: i64,
    lo_at: u64,
    hi: i64,
    hi_at: u64,
    /// First position of the run of non-decreasing (non-increasing)
    /// values that ends at the back.
    up_from: u64,
    down_from: u64,
    /// The value of the newest entry.
    last: i64,
}

impl Extremes {
    #[inline]
    fn push(&mut self, at: u64, u: i64, empty: bool) {
        if empty {
            *self = Extremes { lo: u, lo_at: at, hi: u, hi_at: at, up_from: at, down_from: at, last: u };
            return;
        }
        if u < self.last {
            self.up_from = at;
        }
        if u > self.last {
            self.down_from = at;
        }
        // `lo` is at most every value of the window even when its entry
        // has left: then a value at most `lo` is the least.
        if u <= self.lo {
            (self.lo, self.lo_at) = (u, at);
        }
        if u >= self.hi {
            (self.hi, self.hi_at) = (u, at);
        }
        self.last = u;
    }

    /// Finds the extremes again if their entries left the window, whose
    /// entries from position `front` on are `entries` (not empty).
    #[inline]
    fn refresh(&mut self, f: usize, front: u64, entries: &VecDeque<Entry>) {
        if self.lo_at < front {
            (self.lo, self.lo_at) = if self.up_from <= front {
                (entries[0].u[f], front)
            } else if self.down_from <= front {
                (self.last, front + entries.len() as u64 - 1)
            } else {
                scan(entries, f, front, |v, best| v <= best)
            };
        }
        if self.hi_at < front {
            (self.hi, self.hi_at) = if self.down_from <= front {
                (entries[0].u[f], front)
            } else if self.up_from <= front {
                (self.last, front + entries.len() as u64 - 1)
            } else {
                scan(entries, f, front, |v, best| v >= best)
            };
        }
    }

    /// `u - v_ref` over the window (not empty), for `u` on the line.
    #[inline]
    fn spread(&self, u: i64) -> Spread {
        Spread { min: u - self.hi, max: u - self.lo }
    }
}

/// The newest extreme value of field `f` over `entries` (from position
/// `front`), by `better(v, best)`.
#[cold]
fn scan(entries: &VecDeque<Entry>, f: usize, front: u64, better: impl Fn(i64, i64) -> bool) -> (i64, u64) {
    let mut best = (entries[0].u[f], front);
    for (i, e) in entries.iter().enumerate().skip(1) {
        if better(e.u[f], best.0) {
            best = (e.u[f], front + i as u64);
        }
    }
    best
}

/// Whether every entry of the window holds one value.
#[derive(Debug, Clone, Copy)]
struct EqKey<T> {
    last: Option<T>,
    /// Position of the first entry of the run of equal values at the back.
    run_from: u64,
}

impl<T: PartialEq + Copy> EqKey<T> {
    fn new() -> Self {
        EqKey { last: None, run_from: 0 }
    }

    #[inline]
    fn push(&mut self, at: u64, v: T) {
        if self.last != Some(v) {
            self.run_from = at;
            self.last = Some(v);
        }
    }

    /// Every entry from position `front` on equals `v` (and there is one).
    #[inline]
    fn all_equal(&self, front: u64, v: T) -> bool {
        self.last == Some(v) && self.run_from <= front
    }
}

/// One packet of the VSW: what the compressor's shrinking by W, its ACK
/// lookup and its retransmission test read, and the numeric fields on
/// their unwrapped lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub msn: u16,
    /// The true TCP checksum.
    pub checksum: u16,
    pub seq: u32,
    pub ack: u32,
    pub payload_len: u16,
    pub sent_as_ir: bool,
    /// The ACK flag was set: the ACK number means something.
    pub has_ack: bool,
    u: [i64; FIELDS],
}

/// The VSW: the packets sent, oldest first, and their fields' ranges.
pub(crate) struct Vsw {
    entries: VecDeque<Entry>,
    /// Position of the next entry pushed.
    next: u64,
    /// Per numeric field: the extremes over the window.
    ext: [Extremes; FIELDS],
    /// The raw value of the newest entry of each wrapping field.
    raw_last: [u32; WRAPPING],
    seq_fp: EqKey<(u16, u32)>,
    ack_fp: EqKey<(u16, u32)>,
    ip: EqKey<(u8, u8, u16)>,
    flags: EqKey<(u8, u8)>,
    urgent: EqKey<u16>,
    strides: EqKey<(u16, u16)>,
    skeleton: EqKey<RawOptions>,
}

fn ip_of(r: &Record) -> (u8, u8, u16) {
    (r.h.tos, r.h.ttl, r.h.flags_frag)
}

fn flags_of(r: &Record) -> (u8, u8) {
    (r.h.tcp_res, r.h.tcp_flags | FLAG_PSH)
}

impl Vsw {
    pub fn with_capacity(n: usize) -> Vsw {
        Vsw {
            entries: VecDeque::with_capacity(n),
            next: 0,
            ext: [Extremes::default(); FIELDS],
            raw_last: [0; WRAPPING],
            seq_fp: EqKey::new(),
            ack_fp: EqKey::new(),
            ip: EqKey::new(),
            flags: EqKey::new(),
            urgent: EqKey::new(),
            strides: EqKey::new(),
            skeleton: EqKey::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    /// The position and entry of the packet feedback names by its MSN and
    /// TCP checksum (the checksum guards against a corrupted MSN).
    pub fn find(&self, msn: u16, checksum: u16) -> Option<(usize, &Entry)> {
        self.entries.iter().enumerate().find(|(_, e)| e.msn == msn && e.checksum == checksum)
    }

    /// Position of the oldest entry.
    fn front_at(&self) -> u64 {
        self.next - self.entries.len() as u64
    }

    /// Raw value `raw` of wrapping field `f` placed on the line of the
    /// window's values: the newest entry's value plus their signed
    /// difference.
    #[inline]
    fn unwrap(&self, f: usize, raw: u32) -> i64 {
        let r = self.raw_last[f];
        let d = if WIDTH[f] == 16 {
            (raw as u16).wrapping_sub(r as u16) as i16 as i64
        } else {
            raw.wrapping_sub(r) as i32 as i64
        };
        self.ext[f].last + d
    }

    /// The raw values of the wrapping fields of `r`.
    #[inline]
    fn raw(r: &Record) -> [u32; WRAPPING] {
        let h = &r.h;
        [
            r.msn as u32,
            h.ip_id.wrapping_sub(r.msn) as u32,
            h.ip_id as u32,
            h.seq,
            h.ack,
            h.window as u32,
            r.ts.0,
            r.ts.1,
        ]
    }

    /// Every numeric field of `r` on its line.
    #[inline]
    fn line(&self, r: &Record) -> Line {
        let raw = Vsw::raw(r);
        let mut u = [0i64; FIELDS];
        for f in 0..WRAPPING {
            u[f] = self.unwrap(f, raw[f]);
        }
        u[SEQ_M] = r.fp[0].0 as i64;
        u[ACK_M] = r.fp[1].0 as i64;
        u[SEQ_LAG] = r.fp[0].0 as i64 - u[MSN];
        u[ACK_LAG] = r.fp[1].0 as i64 - u[MSN];
        Line { u, raw }
    }

    #[cfg(test)]
    pub fn push_back(&mut self, r: &Record) {
        let line = self.line(r);
        self.push_line(r, line);
    }

    /// Pushes `r`, which `a` is [`Vsw::analyse`]'s answer for, with the
    /// window unchanged since but for [`Vsw::drop_front`] (which leaves
    /// the lines' newest values, and so `r`'s line, as they are).
    pub fn push_analysed(&mut self, r: &Record, a: &Analysis) {
        debug_assert_eq!(a.line, self.line(r));
        self.push_line(r, a.line);
    }

    #[inline]
    fn push_line(&mut self, r: &Record, Line { u, raw }: Line) {
        let at = self.next;
        self.next += 1;
        let empty = self.entries.is_empty();
        for (e, &v) in self.ext.iter_mut().zip(&u) {
            e.push(at, v, empty);
        }
        self.raw_last = raw;
        self.seq_fp.push(at, (r.strides.0, r.fp[0].1));
        self.ack_fp.push(at, (r.strides.1, r.fp[1].1));
        self.ip.push(at, ip_of(r));
        self.flags.push(at, flags_of(r));
        self.urgent.push(at, r.h.urgent);
        self.strides.push(at, r.strides);
        self.skeleton.push(at, r.opt.skeleton);
        self.entries.push_back(Entry {
            msn: r.msn,
            checksum: r.h.checksum,
            seq: r.h.seq,
            ack: r.h.ack,
            payload_len: r.payload_len,
            sent_as_ir: r.sent_as_ir,
            has_ack: r.h.tcp_flags & FLAG_ACK != 0,
            u,
        });
    }

    /// Drops the `n` oldest entries. The fields' extremes are found again
    /// when [`Vsw::analyse`] next reads them.
    pub fn drop_front(&mut self, n: usize) {
        let n = n.min(self.entries.len());
        if n == 1 {
            self.entries.pop_front();
        } else {
            self.entries.drain(..n);
        }
    }

    /// The entries older than a change of a field compressed
    /// packets need STATIC (IP, flags, urgent pointer, strides, option
    /// skeleton) that has since gone out in `settle` packets or more: a
    /// change sent that many times is taken to have arrived (RFC 3095
    /// §5.3.1.1.1, the optimistic approach), so the references before it
    /// need not be covered any more.
    pub fn unsettled_front(&self, settle: usize) -> usize {
        let front = self.front_at();
        let settled = |run_from: u64| run_from > front && self.next - run_from >= settle as u64;
        [self.ip.run_from, self.flags.run_from, self.urgent.run_from, self.strides.run_from, self.skeleton.run_from]
            .into_iter()
            .filter(|&r| settled(r))
            .max()
            .map_or(0, |r| (r - front) as usize)
    }

    /// The spread of `cur`'s fields over the window.
    pub fn analyse(&mut self, cur: &Record) -> Analysis {
        let h = &cur.h;
        let front = self.front_at();
        let any = !self.entries.is_empty();
        if any {
            for (f, e) in self.ext.iter_mut().enumerate() {
                e.refresh(f, front, &self.entries);
            }
        }
        let line = self.line(cur);
        let u = line.u;
        let spread = |f: usize| if any { self.ext[f].spread(u[f]) } else { Spread::EMPTY };
        let same =
            |key: &EqKey<(u16, u32)>, stride: u16, n: u32| stride != 0 && (!any || key.all_equal(front, (stride, n)));
        let (seq_same, ack_same) =
            (same(&self.seq_fp, cur.strides.0, cur.fp[0].1), same(&self.ack_fp, cur.strides.1, cur.fp[1].1));
        let seq = spread(SEQ);
        Analysis {
            msn: spread(MSN),
            ipid_off: spread(IPID_OFF),
            ipid_raw: spread(IPID_RAW),
            seq,
            ack: spread(ACK),
            win: spread(WIN),
            ts: [spread(TS0), spread(TS1)],
            seq_fp: seq_same.then(|| spread(SEQ_M)),
            ack_fp: ack_same.then(|| spread(ACK_M)),
            seq_scaled: seq_same.then(|| spread(SEQ_LAG)),
            ack_scaled: ack_same.then(|| spread(ACK_LAG)),
            ip_static: !any || self.ip.all_equal(front, ip_of(cur)),
            flags_static: !any || self.flags.all_equal(front, flags_of(cur)),
            urgent_static: !any || self.urgent.all_equal(front, h.urgent),
            strides_static: !any || self.strides.all_equal(front, cur.strides),
            skeleton_static: !any || self.skeleton.all_equal(front, cur.opt.skeleton),
            falls_behind: cur.payload_len > 0 && any && seq.max < 0,
            line,
        }
    }

    /// A retransmission of a VSW packet that was sent as IR/IR-DYN
    /// (§5.3.1 a 2).
    pub fn retransmits_ir(&self, cur: &Record) -> bool {
        cur.payload_len > 0 && self.entries.iter().any(|e| e.sent_as_ir && e.payload_len > 0 && e.seq == cur.h.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::OptInfo;
    use crate::packet::Packet;
    use crate::synth::{bulk_transfer, sip_over_tcp, FlowOptions, IpIdStyle};
    use crate::wlsb::{diff16, diff32};

    /// The definition: `cur` against every entry.
    fn analyse_by_scan(vsw: &[Record], cur: &Record) -> Analysis {
        let h = &cur.h;
        let off = h.ip_id.wrapping_sub(cur.msn);
        let mut a = Analysis {
            msn: Spread::EMPTY,
            ipid_off: Spread::EMPTY,
            ipid_raw: Spread::EMPTY,
            seq: Spread::EMPTY,
            ack: Spread::EMPTY,
            win: Spread::EMPTY,
            ts: [Spread::EMPTY; 2],
            seq_fp: (cur.strides.0 != 0).then_some(Spread::EMPTY),
            ack_fp: (cur.strides.1 != 0).then_some(Spread::EMPTY),
            seq_scaled: (cur.strides.0 != 0).then_some(Spread::EMPTY),
            ack_scaled: (cur.strides.1 != 0).then_some(Spread::EMPTY),
            ip_static: true,
            flags_static: true,
            urgent_static: true,
            strides_static: true,
            skeleton_static: true,
            falls_behind: cur.payload_len > 0 && !vsw.is_empty(),
            line: Line { u: [0; FIELDS], raw: [0; WRAPPING] },
        };
        for e in vsw {
            let eh = &e.h;
            a.msn.add(diff16(cur.msn, e.msn));
            a.ipid_off.add(diff16(off, eh.ip_id.wrapping_sub(e.msn)));
            a.ipid_raw.add(diff16(h.ip_id, eh.ip_id));
            let ds = diff32(h.seq, eh.seq);
            a.seq.add(ds);
            a.ack.add(diff32(h.ack, eh.ack));
            a.win.add(diff16(h.window, eh.window));
            a.ts[0].add(diff32(cur.ts.0, e.ts.0));
            a.ts[1].add(diff32(cur.ts.1, e.ts.1));
            let dm = diff16(cur.msn, e.msn);
            for (i, (fp, scaled)) in
                [(&mut a.seq_fp, &mut a.seq_scaled), (&mut a.ack_fp, &mut a.ack_scaled)].into_iter().enumerate()
            {
                let (es, cs) = if i == 0 { (e.strides.0, cur.strides.0) } else { (e.strides.1, cur.strides.1) };
                if let (Some(s), Some(l)) = (fp.as_mut(), scaled.as_mut()) {
                    if es == cs && e.fp[i].1 == cur.fp[i].1 {
                        s.add(cur.fp[i].0 as i64 - e.fp[i].0 as i64);
                        l.add(cur.fp[i].0 as i64 - e.fp[i].0 as i64 - dm);
                    } else {
                        (*fp, *scaled) = (None, None);
                    }
                }
            }
            a.ip_static &= ip_of(e) == ip_of(cur);
            a.flags_static &= flags_of(e) == flags_of(cur);
            a.urgent_static &= eh.urgent == h.urgent;
            a.strides_static &= e.strides == cur.strides;
            a.skeleton_static &= e.opt.skeleton == cur.opt.skeleton;
            a.falls_behind &= ds < 0;
        }
        a
    }

    /// Every LSB encoding of the formats that fits in half the field's
    /// range decides alike on both spreads, and spreads shorter than half
    /// the field's range are equal.
    fn same_decisions(got: Spread, want: Spread, width: u32, what: &str) {
        if want.is_empty() || want.max - want.min < 1 << (width - 1) {
            assert_eq!(got, want, "{what}");
        }
        for (k, p) in [(0, 0), (4, 0), (8, 0), (4, -1), (7, -1), (6, 31), (8, 15), (8, 63), (10, 63), (12, 63)]
            .into_iter()
            .chain([(14, 127), (18, 4095), (20, 1023)])
            .filter(|&(k, _)| k < width - 1)
        {
            let lsb = crate::wlsb::Lsb::new(k, p);
            assert_eq!(lsb.covers(&got), lsb.covers(&want), "{what}: LSB({k},{p})");
        }
    }

    /// The window's analysis decides as the comparison with every entry.
    fn agree(got: &Analysis, want: &Analysis, i: usize) {
        let pairs = [
            (got.msn, want.msn, 16),
            (got.ipid_off, want.ipid_off, 16),
            (got.ipid_raw, want.ipid_raw, 16),
            (got.seq, want.seq, 32),
            (got.ack, want.ack, 32),
            (got.win, want.win, 16),
            (got.ts[0], want.ts[0], 32),
            (got.ts[1], want.ts[1], 32),
        ];
        for (n, (g, w, width)) in pairs.into_iter().enumerate() {
            same_decisions(g, w, width, &format!("packet {i} field {n}"));
        }
        assert_eq!(got.seq_fp, want.seq_fp, "packet {i}");
        assert_eq!(got.ack_fp, want.ack_fp, "packet {i}");
        assert_eq!(got.seq_scaled, want.seq_scaled, "packet {i}");
        assert_eq!(got.ack_scaled, want.ack_scaled, "packet {i}");
        let statics = |a: &Analysis| {
            [a.ip_static, a.flags_static, a.urgent_static, a.strides_static, a.skeleton_static, a.falls_behind]
        };
        assert_eq!(statics(got), statics(want), "packet {i}");
    }

    fn record(frame: &[u8], msn: u16, strides: (u16, u16)) -> Record {
        let p = Packet::parse(frame).unwrap();
        let opt = OptInfo::of(&p.header.options);
        Record {
            msn,
            h: p.header,
            opt,
            ts: opt.ts(&p.header.options),
            strides,
            payload_len: p.payload.len() as u16,
            sent_as_ir: false,
            fp: [(0, 0); 2],
        }
        .with_fp()
    }

    #[test]
    fn the_window_answers_as_a_comparison_with_every_entry() {
        let flows = [
            bulk_transfer(400, 1460, 37, FlowOptions::default()),
            bulk_transfer(
                300,
                536,
                0,
                FlowOptions { ip_id: IpIdStyle::Random, timestamps: false, ..Default::default() },
            ),
            sip_over_tcp(30, FlowOptions { ip_id: IpIdStyle::Zero, ..Default::default() }),
        ];
        let mut checked = 0;
        for flow in flows {
            let mut vsw = Vsw::with_capacity(8);
            let mut shadow: Vec<Record> = Vec::new();
            // MSNs near the 16-bit wrap, strides that change, and a window
            // that grows and shrinks from the front.
            for (i, (_, frame)) in flow.iter().enumerate() {
                let strides = (if i % 50 < 25 { 1460 } else { 536 }, if i % 70 < 60 { 2920 } else { 0 });
                let cur = record(frame, 0xfff0u16.wrapping_add(i as u16), strides);
                let (got, want) = (vsw.analyse(&cur), analyse_by_scan(&shadow, &cur));
                agree(&got, &want, i);
                vsw.push_back(&cur);
                shadow.push(cur);
                let keep = 1 + (i * 7) % 40;
                if shadow.len() > keep {
                    let n = shadow.len() - keep;
                    vsw.drop_front(n);
                    shadow.drain(..n);
                }
                checked += 1;
            }
        }
        assert!(checked > 1000);
    }

    #[test]
    fn extremes_survive_non_monotonic_fields() {
        // Values that rise and fall at random, in sawtooth and in steps,
        // near the wrap, with a window that grows and shrinks at random:
        // the extremes' scans and their monotonic shortcuts.
        let flow = bulk_transfer(20, 1460, 0, FlowOptions::default());
        let base = record(&flow[5].1, 0, (1460, 0));
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut vsw = Vsw::with_capacity(4);
        let mut shadow: Vec<Record> = Vec::new();
        for i in 0..5000u32 {
            let mut cur = base;
            cur.msn = 0xfff0u16.wrapping_add(i as u16);
            let r = next();
            cur.h.seq = match (i / 300) % 3 {
                0 => 0xffff_0000u32.wrapping_add(1460 * i).wrapping_sub((r % 4) as u32 * 1460 * (i % 7)),
                1 => (r as u32) % 100_000,
                _ => 0xffff_f000u32.wrapping_add(1460 * (i % 13)),
            };
            cur.h.window = (i % 9 * 100) as u16 ^ (r >> 20) as u16 & 0x3;
            cur.h.ip_id = if i % 500 < 250 { (r >> 8) as u16 } else { cur.msn.wrapping_add(3) };
            cur.ts = (i / 3 + (r >> 40) as u32 % 3, 7);
            cur.h.ack = 0xffff_fff0u32.wrapping_add(i / 10);
            let cur = cur.with_fp();
            let (got, want) = (vsw.analyse(&cur), analyse_by_scan(&shadow, &cur));
            agree(&got, &want, i as usize);
            vsw.push_back(&cur);
            shadow.push(cur);
            let keep = 1 + (next() % 60) as usize;
            if shadow.len() > keep && next() % 3 != 0 {
                let n = shadow.len() - keep;
                vsw.drop_front(n);
                shadow.drain(..n);
            }
        }
    }

    #[test]
    fn static_fields_notice_a_value_that_left_and_came_back() {
        let flow = bulk_transfer(10, 1460, 0, FlowOptions::default());
        let frames: Vec<&Vec<u8>> = flow.iter().map(|(_, f)| f).collect();
        let mut vsw = Vsw::with_capacity(4);
        let mut a = record(frames[4], 1, (0, 0));
        let mut b = a;
        b.h.urgent = 7;
        b.msn = 2;
        vsw.push_back(&a);
        vsw.push_back(&b);
        a.msn = 3;
        assert!(!vsw.analyse(&a).urgent_static);
        vsw.drop_front(1);
        assert!(!vsw.analyse(&a).urgent_static);
        assert!(vsw.analyse(&b).urgent_static);
        vsw.drop_front(1);
        assert!(vsw.is_empty());
        assert!(vsw.analyse(&a).urgent_static);
        assert_eq!(vsw.analyse(&a).seq, Spread::EMPTY);
    }
}
