//! Replaying TCP/IPv4 and TCP/IPv6 packets (a capture's, or synthesised
//! ones) through
//! a header compression scheme and an emulated link that loses, damages
//! and reorders packets, and counting what came out: the measurement
//! behind `sigkit rohc`.
//!
//! Packets are split by connection (the pair of address/port endpoints)
//! and direction; each connection's two directions have a compressor and
//! a decompressor of their own, as the two ends of a link do, and a
//! decompressor's feedback crosses the opposite direction of the link
//! (so it is lost and damaged too) before the compressor applies it.
//! With [`LinkConfig::shared`] one link carries every connection: its
//! two directions' compressors hold a context (CID) per connection.
//!
//! The link's faults are a function of the seed and of the packet's
//! position in the capture only, so every scheme sees the same packets
//! lost and reordered, and the same bit-error draws: a packet's k-th
//! error falls at the same bit whatever the scheme, if the packet (as the
//! scheme sends it) is that long.
//!
//! Bit errors reach the decompressor (no link-layer check drops damaged
//! frames): the residual errors the draft's Appendix A's links leave,
//! which only the decompressor's own verification (§5.4) stands between
//! and the receiving TCP. IDEAL (Appendix A.2) exposes only its counted
//! 4 header octets and the payload to errors; an error in those 4 octets
//! drops the packet, as the draft's IDEAL "does not introduce additional
//! errors".
//!
//! VJ (RFC 1144) is IPv4-only: it sends IPv6 packets uncompressed, whole
//! headers counted ([`Report::ipv6_packets`] says how many there were).
//!
//! At most [`MAX_CONNECTIONS`] connections (or the bound given to
//! [`replay_bounded`]) hold contexts at once: a capture of many short
//! connections would otherwise keep every one's compressors and
//! decompressors to the end. Past the bound the least recently used
//! connection is closed (its reordered packets delivered, its loss episode
//! counted) and counted in [`Report::connections_evicted`]; a later packet
//! of it starts over with fresh contexts, an IR first, as after a
//! compressor reuses an idle flow's context.

use std::collections::{HashSet, VecDeque};

use hashlink::LruCache;

use crate::infer::CrossedPacket;
use crate::packet::{Packet, FLAG_ACK, FLAG_SYN};
use crate::scheme::{ContextRecovery, HeaderCompressor, HeaderDecompressor, Scheme, IDEAL_HEADER_LEN};

/// The emulated link's faults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    /// Probability that a packet (or feedback packet) is lost.
    pub loss: f64,
    /// Bit error rate: each bit of a packet is flipped with this probability.
    pub ber: f64,
    /// A reordered packet is delivered after this many later packets of its
    /// direction (0: no reordering).
    pub reorder_depth: usize,
    /// Probability that a packet is reordered, when `reorder_depth` > 0.
    pub reorder_prob: f64,
    /// Seed of the fault draws: the same seed gives every scheme the same
    /// faults.
    pub seed: u64,
    /// One link carries every connection: one compressor and decompressor
    /// per direction, whose contexts (CIDs) the connections share, as on a
    /// terminal's radio link. A direction is from the end that opened the
    /// packet's connection (sent its SYN; without one seen, the first
    /// packet's sender), or towards it. Else each connection has a link of
    /// its own.
    pub shared: bool,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig { loss: 0.0, ber: 0.0, reorder_depth: 0, reorder_prob: 0.1, seed: 1, shared: false }
    }
}

/// What one scheme did to the packets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// The scheme's name ([`scheme_name`]: `taroc-u`, `vj`, `ideal` …).
    pub scheme: String,
    /// Packets offered to the compressor.
    pub packets: usize,
    /// Connections (address/port pairs) the packets belong to.
    pub flows: usize,
    /// Connections closed to keep at most the bound of connections with
    /// contexts (see the module docs), the least recently used first.
    pub connections_evicted: usize,
    /// Of the packets compressed and sent, those over IPv6 (VJ sends them
    /// uncompressed: RFC 1144 is IPv4-only).
    pub ipv6_packets: usize,
    /// IP + TCP header octets of the original packets.
    pub header_bytes_before: u64,
    /// Header octets as sent.
    pub header_bytes_after: u64,
    /// Payload octets (the same for every scheme).
    pub payload_bytes: u64,
    /// Packets the compressor refused (not TCP/IPv4 or TCP/IPv6 it handles).
    pub compress_errors: usize,
    /// Packets the link lost.
    pub link_lost: usize,
    /// Packets the link delivered with bit errors.
    pub link_damaged: usize,
    /// Damaged packets the decompressor refused (the link's loss, detected).
    pub damaged_refused: usize,
    /// Packets emitted identical to the original.
    pub delivered: usize,
    /// Packets that arrived intact but were refused: lost to context damage.
    pub context_damage: usize,
    /// Packets emitted with a header differing from the original's:
    /// undetected corruption (must be 0).
    pub undetected: usize,
    /// Packets emitted with the original header but a damaged payload whose
    /// errors cancel in the TCP checksum: the link's and the TCP checksum's
    /// doing, which no header compression scheme adds or removes.
    pub payload_undetected: usize,
    /// Loss episodes: a link loss (lost or damaged packet) with no other
    /// loss in progress on its direction.
    pub loss_events: usize,
    /// Over the loss episodes that ended: packets sent after the loss until
    /// the next correct decompression (0: the very next packet decompressed).
    pub recovery_total: u64,
    /// The most packets one ended episode took to recover.
    pub recovery_max: u64,
    /// Loss episodes that ended (a correct decompression came).
    pub recovered_events: usize,
    /// Over the loss episodes: the packets that arrived undamaged but
    /// were refused (context damage), against the window they began with.
    pub context_recovery: ContextRecovery,
    /// Packets refused undamaged outside any loss episode (reordering's,
    /// or a compressor's own doing): context damage no loss explains.
    pub context_damage_outside_episodes: usize,
    /// Feedback packets the decompressors sent.
    pub feedback_packets: usize,
    /// Octets of those feedback packets.
    pub feedback_bytes: u64,
}

impl Report {
    /// Original IP + TCP header octets per packet sent.
    pub fn mean_header_before(&self) -> f64 {
        self.header_bytes_before as f64 / self.sent().max(1) as f64
    }

    /// Header octets as sent, per packet sent.
    pub fn mean_header_after(&self) -> f64 {
        self.header_bytes_after as f64 / self.sent().max(1) as f64
    }

    /// Packets compressed and sent.
    pub fn sent(&self) -> usize {
        self.packets - self.compress_errors
    }

    /// Packets per ended loss episode until the next correct
    /// decompression.
    pub fn recovery_mean(&self) -> f64 {
        self.recovery_total as f64 / self.recovered_events.max(1) as f64
    }

    /// Context-damaged packets per loss episode.
    pub fn context_recovery_mean(&self) -> f64 {
        self.context_recovery.mean(self.loss_events as u64)
    }
}

/// A packet emitted by a decompressor: the index of the original in the
/// replayed list, and the bytes.
pub type Emitted = (usize, Vec<u8>);

/// A splitmix64 stream: the fault draws of one packet.
struct Draws(u64);

impl Draws {
    fn for_packet(seed: u64, index: usize, salt: u64) -> Draws {
        let mut d =
            Draws(seed ^ (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt.wrapping_mul(0xd1b5_4a32_d192_ed03));
        d.next();
        d
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() <= p
    }

    /// Flips each bit of `data[from..]` with probability `ber` (geometric
    /// gaps between errors); returns the number flipped. The draws do not
    /// depend on `data`'s length, so the k-th error falls at the same bit
    /// for any packet long enough to hold it.
    fn flip_bits(&mut self, data: &mut [u8], from: usize, ber: f64) -> usize {
        if ber <= 0.0 {
            return 0;
        }
        let bits = (data.len().saturating_sub(from) * 8) as u64;
        let log_q = (1.0 - ber.min(0.5)).ln();
        let mut at = 0u64;
        let mut n = 0;
        loop {
            let gap = (self.unit().ln() / log_q).floor();
            if !gap.is_finite() || gap >= (bits - at.min(bits)) as f64 {
                return n;
            }
            at += gap as u64;
            let byte = from + (at / 8) as usize;
            data[byte] ^= 0x80 >> (at % 8);
            n += 1;
            at += 1;
        }
    }
}

/// A packet on its way across the link.
struct InFlight {
    index: usize,
    wire: Vec<u8>,
    damaged: bool,
    /// The compressor's window of references as this packet left it.
    window: Option<usize>,
}

struct Direction {
    comp: Box<dyn HeaderCompressor>,
    decomp: Box<dyn HeaderDecompressor>,
    /// Packets of this direction that have left the compressor.
    passed: u64,
    /// Reordered packets held back, in the order they were sent, each with
    /// the value of `passed` at which it is delivered (the reordering
    /// depth is one for all, so the front is always the next due).
    held: VecDeque<(u64, InFlight)>,
    /// A loss episode in progress.
    recovering: Option<Episode>,
    /// Packets the decompressor delivered, for the other direction's
    /// compressor (at the same end of the link) to name.
    delivered: Vec<CrossedPacket>,
}

/// What each end's compressor sent and decompressor delivered, passed to
/// the other direction's decompressor and compressor at the same end.
fn cross(dirs: &mut [Direction; 2]) {
    let [a, b] = dirs;
    cross_from(a, b);
    cross_from(b, a);
}

/// What `this` direction's compressor sent and decompressor delivered, to
/// `other`'s decompressor and compressor.
fn cross_from(this: &mut Direction, other: &mut Direction) {
    while let Some(p) = this.comp.poll_crossed() {
        other.decomp.note_reverse(&p);
    }
    for p in this.delivered.drain(..) {
        other.comp.note_reverse(&p);
    }
}

/// A loss episode: from a lost or damaged packet on a direction with no
/// episode in progress to the next correct decompression.
struct Episode {
    /// Packets sent since it began.
    sent: u64,
    /// Packets that arrived undamaged and were refused since it began.
    context_damaged: u64,
    /// The compressor's window of references, in packets, as the packet
    /// that began it left the compressor (None: the scheme has none).
    window: Option<usize>,
}

/// An endpoint: IPv4 address or IPv6 address (with the flow label in the
/// context's key, not here), port.
type Endpoint = (Option<[u8; 16]>, [u8; 4], u16);

/// A connection: its two endpoints, the lesser first.
type ConnKey = (Endpoint, Endpoint);

/// The connection a packet belongs to, and whether the packet goes from
/// the greater endpoint to the lesser.
fn connection_of(p: &Packet<'_>) -> (ConnKey, bool) {
    let h = &p.header;
    let a = (h.ipv6.map(|v6| v6.src), h.src, h.src_port);
    let b = (h.ipv6.map(|v6| v6.dst), h.dst, h.dst_port);
    if a <= b {
        ((a, b), false)
    } else {
        ((b, a), true)
    }
}

/// The key a shared link's packets all go under.
const SHARED_LINK: ConnKey = ((None, [0; 4], 0), (None, [0; 4], 0));

/// On a shared link: which end opened each connection.
#[derive(Default)]
struct Openers {
    by_connection: std::collections::HashMap<ConnKey, Endpoint>,
}

impl Openers {
    /// Whether `p`, of connection `key`, goes towards the end that opened
    /// it: the sender of its SYN, else of its first packet.
    fn towards_opener(&mut self, key: ConnKey, p: &Packet<'_>) -> bool {
        let h = &p.header;
        let src = (h.ipv6.map(|v6| v6.src), h.src, h.src_port);
        let syn = h.tcp_flags & (FLAG_SYN | FLAG_ACK) == FLAG_SYN;
        let opener = self.by_connection.entry(key).or_insert(src);
        if syn {
            *opener = src;
        }
        *opener != src
    }
}

/// Connections whose contexts [`replay`] keeps at once: 16,384 take some
/// 100 MB with TAROC's contexts (a few kilobytes each way), where a
/// capture's flows would otherwise all be kept to its end.
pub const MAX_CONNECTIONS: usize = 16_384;

/// Replays `packets` (IPv4/TCP or IPv6/TCP, in order) through `scheme` over a link
/// with `link`'s faults; returns the counts and, if `keep`, the packets
/// the decompressors emitted in the order they emitted them. At most
/// [`MAX_CONNECTIONS`] connections hold contexts at once.
pub fn replay(scheme: Scheme, packets: &[Vec<u8>], link: &LinkConfig, keep: bool) -> (Report, Vec<Emitted>) {
    replay_bounded(scheme, packets, link, keep, MAX_CONNECTIONS)
}

/// As [`replay`], with at most `max_connections` (at least 1) connections
/// holding contexts at once, the least recently used closed first.
pub fn replay_bounded(
    scheme: Scheme,
    packets: &[Vec<u8>],
    link: &LinkConfig,
    keep: bool,
    max_connections: usize,
) -> (Report, Vec<Emitted>) {
    let max_connections = max_connections.max(1);
    let mut r = Report { scheme: scheme_name(scheme), packets: packets.len(), ..Report::default() };
    let mut emitted = Vec::new();
    // Per connection: its two directions, and which way the first packet
    // went; the least recently used first.
    let mut conns: LruCache<ConnKey, ([Direction; 2], bool)> = LruCache::new_unbounded();
    // Every connection seen, for the count (a key, not its contexts), on
    // links of their own.
    let mut seen: HashSet<ConnKey> = HashSet::new();
    let mut opened = Openers::default();
    let new_dir = || {
        let (comp, decomp) = scheme.pair();
        Direction { comp, decomp, passed: 0, held: VecDeque::new(), recovering: None, delivered: Vec::new() }
    };
    let ideal = matches!(scheme, Scheme::Ideal);
    for (index, p) in packets.iter().enumerate() {
        let Ok(parsed) = Packet::parse(p) else {
            r.compress_errors += 1;
            continue;
        };
        let (key, flipped) = match link.shared {
            true => (SHARED_LINK, opened.towards_opener(connection_of(&parsed).0, &parsed)),
            false => connection_of(&parsed),
        };
        if !conns.contains_key(&key) {
            if conns.len() >= max_connections {
                if let Some((_, (mut dirs, _))) = conns.remove_lru() {
                    close(&mut dirs, &mut r, packets, link, keep, &mut emitted);
                    r.connections_evicted += 1;
                }
            }
            conns.insert(key, ([new_dir(), new_dir()], flipped));
            seen.insert(key);
        }
        let Some((dirs, first_flipped)) = conns.get_mut(&key) else { continue };
        let d = (flipped != *first_flipped) as usize;
        cross(dirs);
        let mut wire = Vec::with_capacity(p.len() + 8);
        let compressed = dirs[d].comp.compress_packet(p, &mut wire);
        cross(dirs);
        let this = &mut dirs[d];
        let header_len = match compressed {
            Ok(n) => n,
            Err(_) => {
                r.compress_errors += 1;
                continue;
            }
        };
        r.header_bytes_before += parsed.header.len() as u64;
        r.ipv6_packets += parsed.header.is_ipv6() as usize;
        r.header_bytes_after += header_len as u64;
        r.payload_bytes += parsed.payload.len() as u64;
        let window = this.comp.reference_window();
        this.passed += 1;

        let mut draws = Draws::for_packet(link.seed, index, 1);
        let lost = draws.chance(link.loss);
        let reorder = link.reorder_depth > 0 && draws.chance(link.reorder_prob);
        if let Some(e) = &mut this.recovering {
            e.sent += 1;
        }
        if lost {
            r.link_lost += 1;
            start_episode(this, &mut r, window);
            release_held(this, &mut r, packets, link, keep, &mut emitted);
            continue;
        }
        // IDEAL's real headers are not on the counted link: only its 4
        // counted octets and the payload are.
        let errors = if ideal {
            let counted_from = parsed.header.len() - IDEAL_HEADER_LEN;
            let mut shadow = wire.clone();
            let n = draws.flip_bits(&mut shadow, counted_from, link.ber);
            if shadow[counted_from..parsed.header.len()] != wire[counted_from..parsed.header.len()] {
                // IDEAL never accepts a damaged header: lost, detected.
                r.link_damaged += 1;
                r.damaged_refused += 1;
                start_episode(this, &mut r, window);
                release_held(this, &mut r, packets, link, keep, &mut emitted);
                continue;
            }
            wire = shadow;
            n
        } else {
            draws.flip_bits(&mut wire, 0, link.ber)
        };
        let flight = InFlight { index, wire, damaged: errors > 0, window };
        if flight.damaged {
            r.link_damaged += 1;
        }
        if reorder {
            // Due as the release that follows it and depth - 1 more pass.
            let due = this.passed.saturating_add(link.reorder_depth as u64 - 1);
            this.held.push_back((due, flight));
        } else {
            deliver(this, flight, &mut r, packets, link, keep, &mut emitted);
        }
        release_held(this, &mut r, packets, link, keep, &mut emitted);
    }
    while let Some((_, (mut dirs, _))) = conns.remove_lru() {
        close(&mut dirs, &mut r, packets, link, keep, &mut emitted);
    }
    // On a shared link the one key stands for every connection, each of
    // which the openers hold.
    r.flows = if link.shared { opened.by_connection.len() } else { seen.len() };
    (r, emitted)
}

/// Ends a connection's replay: its held packets are delivered and a loss
/// episode still open is counted.
fn close(
    dirs: &mut [Direction; 2],
    r: &mut Report,
    packets: &[Vec<u8>],
    link: &LinkConfig,
    keep: bool,
    emitted: &mut Vec<Emitted>,
) {
    for this in dirs.iter_mut() {
        while let Some((_, f)) = this.held.pop_front() {
            deliver(this, f, r, packets, link, keep, emitted);
        }
        if let Some(e) = this.recovering.take() {
            r.context_recovery.close(e.context_damaged, e.window);
        }
    }
}

fn start_episode(dir: &mut Direction, r: &mut Report, window: Option<usize>) {
    if dir.recovering.is_none() {
        r.loss_events += 1;
        dir.recovering = Some(Episode { sent: 0, context_damaged: 0, window });
    }
}

/// Delivers the held packets whose turn has come: those the reordering
/// depth's count of later packets has now passed.
fn release_held(
    this: &mut Direction,
    r: &mut Report,
    packets: &[Vec<u8>],
    link: &LinkConfig,
    keep: bool,
    emitted: &mut Vec<Emitted>,
) {
    while this.held.front().is_some_and(|(due, _)| *due <= this.passed) {
        if let Some((_, f)) = this.held.pop_front() {
            deliver(this, f, r, packets, link, keep, emitted);
        }
    }
}

fn deliver(
    this: &mut Direction,
    f: InFlight,
    r: &mut Report,
    packets: &[Vec<u8>],
    link: &LinkConfig,
    keep: bool,
    emitted: &mut Vec<Emitted>,
) {
    let orig = &packets[f.index];
    let mut back = Vec::with_capacity(orig.len());
    let result = this.decomp.decompress_packet(&f.wire, &mut back);
    while let Some(p) = this.decomp.poll_crossed() {
        this.delivered.push(p);
    }
    let ok = match result {
        Ok(_) => {
            if back == *orig {
                r.delivered += 1;
                true
            } else {
                let hl = Packet::parse(orig).map_or(40, |p| p.header.len());
                if back.len() == orig.len() && back[..hl] == orig[..hl] {
                    r.payload_undetected += 1;
                } else {
                    r.undetected += 1;
                }
                false
            }
        }
        Err(_) => {
            if f.damaged {
                r.damaged_refused += 1;
            } else {
                r.context_damage += 1;
                match &mut this.recovering {
                    Some(e) => e.context_damaged += 1,
                    None => r.context_damage_outside_episodes += 1,
                }
            }
            false
        }
    };
    if f.damaged && !ok {
        start_episode(this, r, f.window);
    } else if ok {
        if let Some(e) = this.recovering.take() {
            // The packets sent after the loss, this one excluded.
            let n = e.sent.saturating_sub(1);
            r.recovered_events += 1;
            r.recovery_total += n;
            r.recovery_max = r.recovery_max.max(n);
            r.context_recovery.close(e.context_damaged, e.window);
        }
    }
    if keep && !back.is_empty() {
        emitted.push((f.index, back));
    }
    // Feedback crosses the other direction of the link.
    let mut fb = Vec::new();
    let mut k = 0u64;
    while this.decomp.poll_feedback(&mut fb) {
        r.feedback_packets += 1;
        r.feedback_bytes += fb.len() as u64;
        let mut draws = Draws::for_packet(link.seed, f.index, 2 + k);
        k += 1;
        if !draws.chance(link.loss) {
            draws.flip_bits(&mut fb, 0, link.ber);
            // Damaged feedback the compressor cannot parse is ignored.
            let _ = this.comp.feedback(&fb);
        }
        fb.clear();
    }
}

/// The name a scheme is reported under.
pub fn scheme_name(s: Scheme) -> String {
    match s {
        Scheme::Taroc(m) => format!("taroc-{}", format!("{m:?}").to_lowercase()),
        Scheme::TarocInfer => "taroc-o-infer".into(),
        Scheme::Vj => "vj".into(),
        Scheme::Iphc { twice: false } => "iphc".into(),
        Scheme::Iphc { twice: true } => "iphc-twice".into(),
        Scheme::None => "none".into(),
        Scheme::Ideal => "ideal".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{bulk_transfer, FlowOptions};
    use crate::Mode;

    fn flow() -> Vec<Vec<u8>> {
        bulk_transfer(300, 1000, 0, FlowOptions::default()).into_iter().map(|(_, p)| p).collect()
    }

    #[test]
    fn without_faults_every_scheme_delivers_every_packet() {
        let packets = flow();
        for s in [
            Scheme::Taroc(Mode::U),
            Scheme::Taroc(Mode::O),
            Scheme::Taroc(Mode::R),
            Scheme::Vj,
            Scheme::Iphc { twice: false },
            Scheme::Iphc { twice: true },
            Scheme::None,
            Scheme::Ideal,
        ] {
            let (r, out) = replay(s, &packets, &LinkConfig::default(), true);
            assert_eq!((r.delivered, r.undetected, r.context_damage, r.flows), (packets.len(), 0, 0, 1), "{s:?}");
            assert_eq!(out.len(), packets.len());
            assert!(out.iter().all(|(i, p)| packets[*i] == *p));
        }
    }

    #[test]
    fn faults_depend_on_the_seed_only_and_are_the_same_for_every_scheme() {
        let packets = flow();
        let link = LinkConfig { loss: 0.05, seed: 7, ..LinkConfig::default() };
        let a = replay(Scheme::Taroc(Mode::O), &packets, &link, false).0;
        let b = replay(Scheme::Taroc(Mode::O), &packets, &link, false).0;
        assert_eq!(a, b);
        let none = replay(Scheme::None, &packets, &link, false).0;
        assert_eq!(a.link_lost, none.link_lost);
        assert!(a.link_lost > 0);
    }

    #[test]
    fn reordering_delivers_everything_late() {
        let packets = flow();
        let link = LinkConfig { reorder_depth: 2, reorder_prob: 0.2, ..LinkConfig::default() };
        let (r, out) = replay(Scheme::None, &packets, &link, true);
        assert_eq!(r.delivered, packets.len());
        assert!(out.windows(2).any(|w| w[0].0 > w[1].0));
    }

    /// Three connections taking turns, two packets each turn, under a
    /// bound of two: each turn's connection was the least recently used,
    /// so it is closed and starts over with fresh contexts, which TAROC's
    /// IR puts back in step; every packet still comes back, and the
    /// connections are counted once each.
    #[test]
    fn past_the_bound_the_least_recently_used_connection_starts_over() {
        use crate::synth::{Dir, FlowBuilder};
        let mut flows: Vec<FlowBuilder> =
            (0..3).map(|i| FlowBuilder::new(FlowOptions::default(), 4000 + i, 80)).collect();
        let mut packets = Vec::new();
        for round in 0..4 {
            for f in flows.iter_mut() {
                if round == 0 {
                    f.handshake();
                } else {
                    f.send(Dir::Forward, 0x18, b"GET / HTTP/1.1\r\n\r\n", &[]);
                    f.send(Dir::Backward, 0x18, b"HTTP/1.1 200 OK\r\n\r\n", &[]);
                }
                packets.extend(f.packets.drain(..).map(|(_, p)| p));
            }
        }
        let taroc = Scheme::Taroc(Mode::O);
        let (bounded, _) = replay_bounded(taroc, &packets, &LinkConfig::default(), false, 2);
        let (free, _) = replay(taroc, &packets, &LinkConfig::default(), false);
        assert_eq!((bounded.flows, bounded.delivered, bounded.undetected), (3, packets.len(), 0));
        // Every turn after the first two opens a connection past the bound.
        assert_eq!((bounded.connections_evicted, free.connections_evicted), (10, 0));
        // Starting over costs IRs: more header bytes than keeping contexts.
        assert!(bounded.header_bytes_after > free.header_bytes_after);
    }

    #[test]
    fn bit_errors_fall_at_the_rate() {
        let mut d = Draws::for_packet(3, 0, 0);
        let mut data = vec![0u8; 100_000];
        let n = d.flip_bits(&mut data, 0, 1e-3);
        assert!((700..900).contains(&n), "{n}");
        assert_eq!(data.iter().map(|b| b.count_ones() as usize).sum::<usize>(), n);
    }
}
