//! The compressor's sliding window of sent values (VSW, §6.1) and the
//! spread of every field over it, kept incrementally.
//!
//! W-LSB (RFC 3095 §4.5.2) sends `k` bits of a value when it lies in the
//! interpretation interval of every reference in the window. For an LSB
//! range that is one interval of the value's circle, that only depends on
//! the least and the greatest reference: the window covers `v` with `(k, p)`
//! exactly when `v - max ≥ -p` and `v - min ≤ 2^k - 1 - p`. So the window
//! keeps, per field, its minimum and maximum in amortised O(1) per packet
//! (monotonic queues), and per field that must be STATIC the position of
//! its last change, rather than comparing each packet with every entry.
//!
//! Wrap-around: 16- and 32-bit fields are unwrapped along the window
//! (each entry is its predecessor plus their signed difference). When
//! every difference `v - v_ref` lies in an interval shorter than half the
//! field's range, which every LSB encoding here is, the unwrapped
//! differences equal the signed ones, so the window's answer is the one a
//! comparison with each entry gives.

use std::collections::VecDeque;

use crate::packet::{RawOptions, FLAG_PSH};
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
}

/// A queue of (position, value) that grows at the back and shrinks at
/// both ends: a vector whose consumed front is cut off once it is half of
/// it, so each operation is a vector push, pop or index.
#[derive(Debug, Clone, Default)]
struct MonoQueue {
    items: Vec<(u64, i64)>,
    head: usize,
}

impl MonoQueue {
    #[inline]
    fn front(&self) -> Option<&(u64, i64)> {
        self.items.get(self.head)
    }

    #[inline]
    fn back(&self) -> Option<&(u64, i64)> {
        self.items.last().filter(|_| self.items.len() > self.head)
    }

    #[inline]
    fn pop_back(&mut self) {
        self.items.pop();
    }

    #[inline]
    fn push_back(&mut self, item: (u64, i64)) {
        self.items.push(item);
    }

    #[inline]
    fn pop_front(&mut self) {
        self.head += 1;
        if self.head >= self.items.len() {
            self.items.clear();
            self.head = 0;
        } else if self.head >= 32 && self.head * 2 >= self.items.len() {
            self.items.drain(..self.head);
            self.head = 0;
        }
    }
}

/// Minimum and maximum of one numeric field over the window.
#[derive(Debug, Clone)]
struct RangeKey {
    /// 16 or 32 for a wrapping field, 0 for a plain one.
    width: u32,
    min: MonoQueue,
    max: MonoQueue,
    last: Option<(u32, i64)>,
}

impl RangeKey {
    fn new(width: u32) -> RangeKey {
        RangeKey { width, min: MonoQueue::default(), max: MonoQueue::default(), last: None }
    }

    /// `raw` placed on the line of the window's values.
    #[inline]
    fn unwrap(&self, raw: u32) -> i64 {
        match (self.width, self.last) {
            (0, _) | (_, None) => raw as i64,
            (16, Some((r, u))) => u + (raw as u16).wrapping_sub(r as u16) as i16 as i64,
            (_, Some((r, u))) => u + raw.wrapping_sub(r) as i32 as i64,
        }
    }

    #[inline]
    fn push(&mut self, at: u64, raw: u32) {
        let u = self.unwrap(raw);
        self.push_value(at, u);
        self.last = Some((raw, u));
    }

    /// Pushes a value already on the line (a plain field).
    #[inline]
    fn push_value(&mut self, at: u64, u: i64) {
        while self.min.back().is_some_and(|&(_, v)| v >= u) {
            self.min.pop_back();
        }
        self.min.push_back((at, u));
        while self.max.back().is_some_and(|&(_, v)| v <= u) {
            self.max.pop_back();
        }
        self.max.push_back((at, u));
    }

    #[inline]
    fn expire(&mut self, front: u64) {
        while self.min.front().is_some_and(|&(i, _)| i < front) {
            self.min.pop_front();
        }
        while self.max.front().is_some_and(|&(i, _)| i < front) {
            self.max.pop_front();
        }
    }

    /// `cur - v_ref` over the window.
    #[inline]
    fn spread(&self, cur: u32) -> Spread {
        self.spread_value(self.unwrap(cur))
    }

    /// `u - v_ref` over the window, for `u` on the line.
    #[inline]
    fn spread_value(&self, u: i64) -> Spread {
        match (self.min.front(), self.max.front()) {
            (Some(&(_, lo)), Some(&(_, hi))) => Spread { min: u - hi, max: u - lo },
            _ => Spread::EMPTY,
        }
    }
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

/// The VSW: the records of the packets sent, oldest first, and their
/// fields' ranges.
pub(crate) struct Vsw {
    entries: VecDeque<Record>,
    /// Position of the next entry pushed.
    next: u64,
    msn: RangeKey,
    ipid_off: RangeKey,
    ipid_raw: RangeKey,
    seq: RangeKey,
    ack: RangeKey,
    win: RangeKey,
    ts: [RangeKey; 2],
    seq_m: RangeKey,
    ack_m: RangeKey,
    /// m − MSN (the MSN unwrapped along the window).
    seq_lag: RangeKey,
    ack_lag: RangeKey,
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
            msn: RangeKey::new(16),
            ipid_off: RangeKey::new(16),
            ipid_raw: RangeKey::new(16),
            seq: RangeKey::new(32),
            ack: RangeKey::new(32),
            win: RangeKey::new(16),
            ts: [RangeKey::new(32), RangeKey::new(32)],
            seq_m: RangeKey::new(0),
            ack_m: RangeKey::new(0),
            seq_lag: RangeKey::new(0),
            ack_lag: RangeKey::new(0),
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

    pub fn front(&self) -> Option<&Record> {
        self.entries.front()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Record> {
        self.entries.iter()
    }

    /// Position of the oldest entry.
    fn front_at(&self) -> u64 {
        self.next - self.entries.len() as u64
    }

    pub fn push_back(&mut self, r: Record) {
        let at = self.next;
        self.next += 1;
        let msn = self.msn.unwrap(r.msn as u32);
        self.seq_lag.push_value(at, r.fp[0].0 as i64 - msn);
        self.ack_lag.push_value(at, r.fp[1].0 as i64 - msn);
        self.msn.push(at, r.msn as u32);
        self.ipid_off.push(at, r.h.ip_id.wrapping_sub(r.msn) as u32);
        self.ipid_raw.push(at, r.h.ip_id as u32);
        self.seq.push(at, r.h.seq);
        self.ack.push(at, r.h.ack);
        self.win.push(at, r.h.window as u32);
        self.ts[0].push(at, r.ts.0);
        self.ts[1].push(at, r.ts.1);
        self.seq_m.push(at, r.fp[0].0);
        self.ack_m.push(at, r.fp[1].0);
        self.seq_fp.push(at, (r.strides.0, r.fp[0].1));
        self.ack_fp.push(at, (r.strides.1, r.fp[1].1));
        self.ip.push(at, ip_of(&r));
        self.flags.push(at, flags_of(&r));
        self.urgent.push(at, r.h.urgent);
        self.strides.push(at, r.strides);
        self.skeleton.push(at, r.opt.skeleton);
        self.entries.push_back(r);
    }

    /// Drops the `n` oldest entries.
    pub fn drop_front(&mut self, n: usize) {
        let n = n.min(self.entries.len());
        self.entries.drain(..n);
        let front = self.front_at();
        for k in [
            &mut self.msn,
            &mut self.ipid_off,
            &mut self.ipid_raw,
            &mut self.seq,
            &mut self.ack,
            &mut self.win,
            &mut self.seq_m,
            &mut self.ack_m,
            &mut self.seq_lag,
            &mut self.ack_lag,
        ] {
            k.expire(front);
        }
        for k in &mut self.ts {
            k.expire(front);
        }
    }

    /// The spread of `cur`'s fields over the window.
    pub fn analyse(&self, cur: &Record) -> Analysis {
        let h = &cur.h;
        let front = self.front_at();
        let any = !self.entries.is_empty();
        let same =
            |key: &EqKey<(u16, u32)>, stride: u16, n: u32| stride != 0 && (!any || key.all_equal(front, (stride, n)));
        let (seq_same, ack_same) =
            (same(&self.seq_fp, cur.strides.0, cur.fp[0].1), same(&self.ack_fp, cur.strides.1, cur.fp[1].1));
        let msn = self.msn.unwrap(cur.msn as u32);
        let seq = self.seq.spread(h.seq);
        Analysis {
            msn: self.msn.spread(cur.msn as u32),
            ipid_off: self.ipid_off.spread(h.ip_id.wrapping_sub(cur.msn) as u32),
            ipid_raw: self.ipid_raw.spread(h.ip_id as u32),
            seq,
            ack: self.ack.spread(h.ack),
            win: self.win.spread(h.window as u32),
            ts: [self.ts[0].spread(cur.ts.0), self.ts[1].spread(cur.ts.1)],
            seq_fp: seq_same.then(|| self.seq_m.spread(cur.fp[0].0)),
            ack_fp: ack_same.then(|| self.ack_m.spread(cur.fp[1].0)),
            seq_scaled: seq_same.then(|| self.seq_lag.spread_value(cur.fp[0].0 as i64 - msn)),
            ack_scaled: ack_same.then(|| self.ack_lag.spread_value(cur.fp[1].0 as i64 - msn)),
            ip_static: !any || self.ip.all_equal(front, ip_of(cur)),
            flags_static: !any || self.flags.all_equal(front, flags_of(cur)),
            urgent_static: !any || self.urgent.all_equal(front, h.urgent),
            strides_static: !any || self.strides.all_equal(front, cur.strides),
            skeleton_static: !any || self.skeleton.all_equal(front, cur.opt.skeleton),
            falls_behind: cur.payload_len > 0 && any && seq.max < 0,
        }
    }

    /// A retransmission of a VSW packet that was sent as IR/IR-DYN
    /// (§5.3.1 a 2).
    pub fn retransmits_ir(&self, cur: &Record) -> bool {
        cur.payload_len > 0 && self.entries.iter().any(|e| e.sent_as_ir && e.payload_len > 0 && e.h.seq == cur.h.seq)
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
                assert_eq!(statics(&got), statics(&want), "packet {i}");
                vsw.push_back(cur);
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
    fn static_fields_notice_a_value_that_left_and_came_back() {
        let flow = bulk_transfer(10, 1460, 0, FlowOptions::default());
        let frames: Vec<&Vec<u8>> = flow.iter().map(|(_, f)| f).collect();
        let mut vsw = Vsw::with_capacity(4);
        let mut a = record(frames[4], 1, (0, 0));
        let mut b = a;
        b.h.urgent = 7;
        b.msn = 2;
        vsw.push_back(a);
        vsw.push_back(b);
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
