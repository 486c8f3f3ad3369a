//! How each field of a compressed packet is encoded: the cheapest
//! selector whose bits cover the field's spread over the window of
//! references (§5.3.4), and the compact, short or general format that
//! holds them.

use crate::format::*;
use crate::packet::FLAG_PSH;
use crate::vsw::Analysis;
use crate::wlsb::{Lsb, Spread};
use crate::Record;

/// A SEQ or ACK number's spreads over the VSW: of the number, of its
/// fixed-payload m and of m − MSN (`None` where the strides or remainders
/// differ), and whether fixed-payload encodings may be used.
#[derive(Clone, Copy)]
pub(super) struct NumberSpreads<'a> {
    value: &'a Spread,
    fp: Option<&'a Spread>,
    scaled: Option<&'a Spread>,
    allow_fp: bool,
}

impl NumberSpreads<'_> {
    #[inline(always)]
    fn covered_by(&self, enc: &SeqEnc) -> bool {
        match enc {
            SeqEnc::Lsb(l) => l.covers(self.value),
            SeqEnc::Irregular => true,
            SeqEnc::FixedPayload(l) => self.allow_fp && self.fp.is_some_and(|s| l.covers(s)),
            SeqEnc::MsnScaled(l) => self.allow_fp && self.scaled.is_some_and(|s| l.covers(s)),
        }
    }
}

/// The indices of `SEQ_TABLE`'s general-format encodings (0–7) from the
/// cheapest (fewest bits, then lowest index): the first that covers is
/// the cheapest that does.
pub(super) const SEQ_BY_COST: [u8; 8] = [0, 5, 1, 6, 7, 2, 3, 4];

/// The cheapest encoding of `SEQ_TABLE[..selectors]` that covers the VSW
/// (IRREGULAR, index 4, always does). Inlined so that the loop unrolls
/// over the constant table and each test is two comparisons.
#[inline(always)]
pub(super) fn pick_seq(n: NumberSpreads, selectors: usize) -> (u8, SeqEnc) {
    for &i in &SEQ_BY_COST {
        let enc = SEQ_TABLE[i as usize];
        if (i as usize) < selectors && n.covered_by(&enc) {
            return (i, enc);
        }
    }
    (4, SeqEnc::Irregular)
}

/// The cheapest of the `SEQ_TABLE` encodings `among` that covers the VSW;
/// `among` is in increasing order of bits (the short format's tables), so
/// the first that covers is.
#[inline]
pub(super) fn pick_among(among: &[u8; 4], n: NumberSpreads) -> Option<(u8, SeqEnc)> {
    among.iter().map(|&i| (i, SEQ_TABLE[i as usize])).find(|(_, enc)| n.covered_by(enc))
}

/// The bits `enc` sends of number `v` of a packet with MSN `msn`; `m` is
/// v / stride ([`Record::fp`]: fixed-payload encodings only cover the VSW
/// with a stride).
pub(super) fn lsb_bits(v: u32, enc: &SeqEnc, m: u32, msn: u16) -> u32 {
    match enc {
        SeqEnc::Lsb(l) => v & ((1u64 << l.k) - 1) as u32,
        SeqEnc::Irregular => v,
        SeqEnc::FixedPayload(l) => m & ((1u32 << l.k) - 1),
        SeqEnc::MsnScaled(l) => m.wrapping_sub(msn as u32) & ((1u32 << l.k) - 1),
    }
}

/// SEQ's spreads; fixed-payload encodings only in SO (§5.3.2 d).
pub(super) fn seq_spreads(a: &Analysis, so: bool) -> NumberSpreads<'_> {
    NumberSpreads { value: &a.seq, fp: a.seq_fp.as_ref(), scaled: a.seq_scaled.as_ref(), allow_fp: so }
}

/// ACK's spreads: fixed-payload encoding of the ACK number (§6.1 names both
/// numbers) needs no state, its stride travels with the packets.
pub(super) fn ack_spreads(a: &Analysis) -> NumberSpreads<'_> {
    NumberSpreads { value: &a.ack, fp: a.ack_fp.as_ref(), scaled: a.ack_scaled.as_ref(), allow_fp: true }
}

/// `chains`: the chained format is in use, and takes the general format's
/// SEQ selector 5 ([`crate::infer`]).
pub(super) fn encode_co<'a>(
    cid: u8,
    rec: &Record,
    a: &Analysis,
    so: bool,
    chains: bool,
    payload: &'a [u8],
) -> CoPacket<'a> {
    let short = encode_short(cid, rec, a, so, payload);
    #[cfg(any(test, debug_assertions))]
    {
        // The short format's shortcut decides as the general encoding
        // shortened does.
        let general = encode_general(cid, rec, a, so, chains, payload);
        let long = shorten(general, rec, a, so);
        match short {
            Some(co) => assert_eq!(format!("{co:?}"), format!("{long:?}")),
            None => assert_eq!(format!("{general:?}"), format!("{long:?}")),
        }
    }
    match short {
        Some(co) => co,
        None => encode_general(cid, rec, a, so, chains, payload),
    }
}

/// The packet in the short format if it fits: what [`shorten`] makes of
/// the general encoding when it fits, without the general encoding's
/// choices (SEQ, ACK, IP-ID, timestamp selectors) that it replaces.
pub(super) fn encode_short<'a>(
    cid: u8,
    rec: &Record,
    a: &Analysis,
    so: bool,
    payload: &'a [u8],
) -> Option<CoPacket<'a>> {
    let h = &rec.h;
    let static_lsb = Lsb::new(0, 0);
    // shorten's `fits`: MSN in 7 bits, nothing but what the short format
    // carries changed, compact options without SACK blocks.
    let msn_fits = Lsb::new(4, MSN_P).covers(&a.msn) || Lsb::new(7, MSN_P).covers(&a.msn);
    if !(msn_fits
        && a.flags_static
        && a.ip_static
        && a.urgent_static
        && a.strides_static
        && a.skeleton_static
        && rec.opt.sack_n == 0)
    {
        return None;
    }
    let ip_id = short_ip_id(rec, a)?;
    let window = if static_lsb.covers(&a.win) {
        WindowField::Static
    } else if WINDOW_SHORT.covers(&a.win) {
        WindowField::Short(h.window as u32 & ((1 << WINDOW_SHORT.k) - 1))
    } else {
        return None;
    };
    // The general encoding's timestamps are both STATIC (or absent): kept;
    // else both in TS_SHORT.
    let ts = if rec.opt.ts_at.is_none() || (static_lsb.covers(&a.ts[0]) && static_lsb.covers(&a.ts[1])) {
        [(0, 0), (0, 0)]
    } else if a.ts.iter().all(|s| TS_SHORT.covers(s)) {
        let mask = (1u32 << TS_SHORT.k) - 1;
        [(4, rec.ts.0 & mask), (4, rec.ts.1 & mask)]
    } else {
        return None;
    };
    let (seq_sel, seq_enc) = pick_among(&SHORT_SEQ, seq_spreads(a, so))?;
    let (ack_sel, ack_enc) = pick_among(&SHORT_ACK, ack_spreads(a))?;
    Some(CoPacket {
        cid,
        msn: (rec.msn as u32 & 0x7f, 7),
        ip_id,
        seq: (compact_selector(seq_sel, seq_spreads(a, so), a), lsb_bits(h.seq, &seq_enc, rec.fp[0].0, rec.msn)),
        ack: (compact_selector(ack_sel, ack_spreads(a), a), lsb_bits(h.ack, &ack_enc, rec.fp[1].0, rec.msn)),
        window,
        psh: h.tcp_flags & FLAG_PSH != 0,
        flags: None,
        ip: None,
        urgent: None,
        strides: None,
        options: CoOptions::Compact { ts, sack_n: 0, sack: [(0, 0); 4] },
        checksum: fold_checksum(h.checksum, h, rec.msn, rec.strides),
        crc: (0, 0),
        payload,
    })
}

/// The short format's IP-ID: STATIC as an offset from the MSN (4) or as
/// a value (5, also IPv6's absent IP-ID), if either covers the VSW.
pub(super) fn short_ip_id(rec: &Record, a: &Analysis) -> Option<(u8, u32)> {
    let static_lsb = Lsb::new(0, 0);
    if rec.h.ipv6.is_some() {
        Some((5, 0))
    } else if static_lsb.covers(&a.ipid_off) {
        Some((4, 0))
    } else if static_lsb.covers(&a.ipid_raw) {
        Some((5, 0))
    } else {
        None
    }
}

/// The short format's selector `sel` for a number, or
/// [`SEL_COMPACT_SCALED`] where it is MSN-scaled and its m − MSN, and the
/// MSN, spread little enough over the VSW for the compact format (the
/// short format still sends [`MSN_SCALED`](crate::format::MSN_SCALED)'s
/// bits if the compact one does not fit).
pub(super) fn compact_selector(sel: u8, n: NumberSpreads, a: &Analysis) -> u8 {
    if sel == SEL_MSN_SCALED && COMPACT_MSN.covers(&a.msn) && n.covered_by(&SEQ_TABLE[SEL_COMPACT_SCALED as usize]) {
        SEL_COMPACT_SCALED
    } else {
        sel
    }
}

/// The general format's encoding.
pub(super) fn encode_general<'a>(
    cid: u8,
    rec: &Record,
    a: &Analysis,
    so: bool,
    chains: bool,
    payload: &'a [u8],
) -> CoPacket<'a> {
    let h = &rec.h;
    let ipv6 = h.ipv6.is_some();
    // Each table below is tried in order, the first encoding that covers
    // the VSW taken; the tests are spelled out per index so that each is
    // two comparisons with constants.
    let msn_fits = |k: u32| Lsb::new(k, MSN_P).covers(&a.msn);
    let msn_k = if msn_fits(MSN_K[0]) {
        MSN_K[0]
    } else if msn_fits(MSN_K[1]) {
        MSN_K[1]
    } else {
        MSN_K[2]
    };
    // IPv6 has no IP-ID (held as 0): "unchanged", which sends no bits.
    let (ipid_sel, ipid_enc) = if ipv6 {
        (5, IPID_TABLE[5])
    } else {
        let fits = |i: usize| match IPID_TABLE[i] {
            IpIdEnc::Offset(l) => l.covers(&a.ipid_off),
            IpIdEnc::Raw(l) => l.covers(&a.ipid_raw),
            IpIdEnc::Irregular => true,
        };
        let i = if fits(0) {
            0
        } else if fits(1) {
            1
        } else if fits(2) {
            2
        } else {
            3
        };
        (i as u8, IPID_TABLE[i])
    };
    let ipid_bits = match ipid_enc {
        IpIdEnc::Offset(l) => h.ip_id.wrapping_sub(rec.msn) as u32 & ((1u32 << l.k) - 1),
        IpIdEnc::Raw(l) => h.ip_id as u32 & ((1u32 << l.k) - 1),
        IpIdEnc::Irregular => h.ip_id as u32,
    };
    // The general format's SEQ selector is 0–5: its first octet is then
    // below 0xE0 (IR, IR-DYN, Add-CID and feedback); 0–4 where the
    // chained format takes 5's first nibble.
    let (seq_sel, seq_enc) = pick_seq(seq_spreads(a, so), if chains { 5 } else { 6 });
    // Fixed-payload encoding of the ACK number (§6.1 names both numbers)
    // needs no state: its stride travels with the packets.
    let (ack_sel, ack_enc) = pick_seq(ack_spreads(a), 8);
    let window = if Lsb::new(0, 0).covers(&a.win) {
        WindowField::Static
    } else if WINDOW_LSB.covers(&a.win) {
        WindowField::Lsb(h.window as u32 & 0xfff)
    } else {
        WindowField::Irregular(h.window)
    };
    let options = if a.skeleton_static {
        let mut ts = [(0u8, 0u32); 2];
        if rec.opt.ts_at.is_some() {
            for (i, v) in [rec.ts.0, rec.ts.1].into_iter().enumerate() {
                let fits = |j: usize| TS_TABLE[j].is_none_or(|l| l.covers(&a.ts[i]));
                let sel = if fits(0) {
                    0
                } else if fits(1) {
                    1
                } else if fits(2) {
                    2
                } else {
                    3
                };
                let bits = TS_TABLE[sel].map_or(v, |l| v & ((1u64 << l.k) - 1) as u32);
                ts[i] = (sel as u8, bits);
            }
        }
        let mut sack = [(0u32, 0u32); 4];
        for (i, s) in sack.iter_mut().enumerate().take(rec.opt.sack_n.min(4) as usize) {
            let (l, r) = rec.opt.sack(&h.options, i);
            *s = (l.wrapping_sub(h.ack), r.wrapping_sub(l));
        }
        CoOptions::Compact { ts, sack_n: rec.opt.sack_n, sack }
    } else {
        CoOptions::Raw(h.options)
    };
    CoPacket {
        cid,
        msn: (rec.msn as u32 & ((1u32 << msn_k) - 1), msn_k),
        ip_id: (ipid_sel, ipid_bits),
        seq: (seq_sel, lsb_bits(h.seq, &seq_enc, rec.fp[0].0, rec.msn)),
        ack: (ack_sel, lsb_bits(h.ack, &ack_enc, rec.fp[1].0, rec.msn)),
        window,
        psh: h.tcp_flags & FLAG_PSH != 0,
        flags: (!a.flags_static).then_some((h.tcp_res, h.tcp_flags)),
        ip: (!a.ip_static).then_some((h.tos, h.ttl, h.flags_frag)),
        urgent: (!a.urgent_static).then_some(h.urgent),
        strides: (!a.strides_static).then_some(rec.strides),
        options,
        checksum: fold_checksum(h.checksum, h, rec.msn, rec.strides),
        crc: (0, 0),
        payload,
    }
}

/// The packet with the short format's encodings where they cover the VSW
/// (STATIC IP-ID, [`WINDOW_SHORT`], [`TS_SHORT`]), so that it fits the
/// short format if nothing else keeps it out: the definition
/// [`encode_short`] is checked against in tests and debug builds.
#[cfg(any(test, debug_assertions))]
pub(super) fn shorten<'a>(co: CoPacket<'a>, rec: &Record, a: &Analysis, so: bool) -> CoPacket<'a> {
    let fits = co.msn.1 <= 7
        && co.flags.is_none()
        && co.ip.is_none()
        && co.urgent.is_none()
        && co.strides.is_none()
        && matches!(co.options, CoOptions::Compact { sack_n: 0, .. });
    if !fits {
        return co;
    }
    let h = &rec.h;
    let Some((seq_sel, seq_enc)) = pick_among(&SHORT_SEQ, seq_spreads(a, so)) else { return co };
    let Some((ack_sel, ack_enc)) = pick_among(&SHORT_ACK, ack_spreads(a)) else { return co };
    let seq = (compact_selector(seq_sel, seq_spreads(a, so), a), lsb_bits(h.seq, &seq_enc, rec.fp[0].0, rec.msn));
    let ack = (compact_selector(ack_sel, ack_spreads(a), a), lsb_bits(h.ack, &ack_enc, rec.fp[1].0, rec.msn));
    let Some(ip_id) = short_ip_id(rec, a) else { return co };
    let window = match co.window {
        WindowField::Static => WindowField::Static,
        _ if WINDOW_SHORT.covers(&a.win) => WindowField::Short(rec.h.window as u32 & ((1 << WINDOW_SHORT.k) - 1)),
        _ => return co,
    };
    let options = match co.options {
        CoOptions::Compact { ts: [(0, _), (0, _)], .. } => co.options,
        CoOptions::Compact { sack, .. } if rec.opt.ts_at.is_some() && a.ts.iter().all(|s| TS_SHORT.covers(s)) => {
            let mask = (1u32 << TS_SHORT.k) - 1;
            CoOptions::Compact { ts: [(4, rec.ts.0 & mask), (4, rec.ts.1 & mask)], sack_n: 0, sack }
        }
        _ => return co,
    };
    let msn = (rec.msn as u32 & 0x7f, 7);
    CoPacket { msn, ip_id, seq, ack, window, options, ..co }
}
