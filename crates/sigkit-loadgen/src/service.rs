//! A server of limited capacity in front of a UAS, sans-IO: the lab's
//! bottleneck (C. Egger, SIP overload control thesis, TU Wien 2012, §5.1:
//! proxy 2, the entity that is overloaded and that proxy 1 must detect
//! and protect). Without it a `sigkit load` UAS answers whatever reaches
//! it at once, so nothing behind `sigkit proxy` is ever overloaded.
//!
//! The model, an overloaded UDP server:
//!
//! * one processor serves the datagrams one at a time, first come first
//!   served; each costs a service time drawn from a mean of 1/`capacity_tps`
//!   (constant, or exponential);
//! * at most `queue` datagrams wait; one arriving at a full queue is
//!   dropped, as a full socket receive buffer drops it, unseen by the UAS;
//! * the server is transaction stateful (RFC 3261 §17.2.2): it remembers
//!   each transaction (top Via branch and CSeq method) for `memory` (Timer
//!   J, 64·T1 = 32 s). A datagram of a transaction it knows (a
//!   retransmission, answered again from the transaction's stored response
//!   by the UAS, or absorbed) costs `repeat_cost` of a new one: it is
//!   parsed and matched, not processed again. That cost is what turns Timer
//!   E's retransmissions into load (thesis §4.1.1, §5.2.1: "these
//!   re-transmissions need additional processing time"); the thesis gives
//!   no figure for it, and the default, 0.2, is its parse share of a
//!   transaction's work (§4.1.1, §4.4.1).
//!
//! What has been served comes out ([`ServiceQueue::take_done`]) for the
//! UAS's engine, which answers it. Service is in virtual time: a job
//! starts when the previous one ended (or when it arrived), not when the
//! event loop happens to wake, so the capacity does not depend on timer
//! granularity.
//!
//! With `oc_target` the server also takes part in RFC 7339 overload
//! control: a request whose top Via carries a bare `oc` (the client
//! supports it, §5.1) has that parameter replaced, before the UAS copies
//! the Via into its response, by the server's `oc`, `oc-validity`,
//! `oc-seq` and `oc-algo="loss"` (§4, §5.2). The reduction is computed
//! once a second by the occupancy algorithm of Hilt and Widjaja's SIP
//! overload study, as sigkit-sim's proxy 2 does: the admitted share f
//! becomes f·ρtarget/ρ, ρ the processor's busy share over the last
//! second, bounded to [0.05, 1]; `oc` = 100·(1 − f).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::Serialize;
use sigkit_sip::Message;

/// The server's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceModel {
    /// New transactions per second the server completes when busy: one
    /// costs 1/capacity on average.
    pub capacity_tps: f64,
    /// Datagrams that wait at most (besides the one in service).
    pub queue: usize,
    /// What a datagram of a known transaction costs, as a share of a new
    /// one.
    pub repeat_cost: f64,
    /// Exponential service times (else constant).
    pub exponential: bool,
    /// How long a transaction is remembered (Timer J, 64·T1).
    pub memory: Duration,
    /// RFC 7339: the target busy share of the occupancy algorithm; None
    /// leaves Vias alone.
    pub oc_target: Option<f64>,
}

impl Default for ServiceModel {
    fn default() -> Self {
        ServiceModel {
            capacity_tps: 500.0,
            queue: 1000,
            repeat_cost: 0.2,
            exponential: false,
            memory: Duration::from_secs(32),
            oc_target: None,
        }
    }
}

impl ServiceModel {
    /// The first field out of range, if any.
    pub fn check(&self) -> Result<(), ServiceModelError> {
        if !(self.capacity_tps.is_finite() && self.capacity_tps > 0.0) {
            return Err(ServiceModelError::Capacity(self.capacity_tps));
        }
        if !(0.0..=1.0).contains(&self.repeat_cost) {
            return Err(ServiceModelError::RepeatCost(self.repeat_cost));
        }
        match self.oc_target {
            Some(t) if !(t > 0.0 && t <= 1.0) => Err(ServiceModelError::OcTarget(t)),
            _ => Ok(()),
        }
    }
}

/// A [`ServiceModel`] field out of range.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ServiceModelError {
    /// `capacity_tps` is not a positive finite number (the value given).
    #[error("capacity {0}: a positive number of transactions/s")]
    Capacity(f64),
    /// `repeat_cost` is outside 0 to 1 (the value given).
    #[error("repeat cost {0}: a share of a new transaction's, 0 to 1")]
    RepeatCost(f64),
    /// `oc_target` is not above 0 and at most 1 (the value given).
    #[error("oc target {0}: a busy share, above 0 and at most 1")]
    OcTarget(f64),
}

/// What the server did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ServiceCounts {
    /// Datagrams that reached the server (queued, served or dropped).
    pub arrived: u64,
    /// Found the queue full.
    pub dropped: u64,
    /// Served as a new transaction.
    pub served_new: u64,
    /// Served as a datagram of a transaction already known.
    pub served_repeat: u64,
    /// Seconds the processor was busy.
    pub busy_s: f64,
    /// The RFC 7339 reduction in force at the end, percent.
    pub oc: u8,
}

struct Job {
    arrived: Instant,
    from: SocketAddr,
    bytes: Vec<u8>,
    /// Top Via branch and CSeq method; empty when unreadable.
    key: Vec<u8>,
}

/// RFC 7339 §5.10.1 lets the client shed at most 100 %; the occupancy
/// algorithm keeps admitting a twentieth so the server still sees load to
/// measure.
const OC_MIN_ADMIT: f64 = 0.05;
/// How long a reduction holds (RFC 7339 §5.2), twice the update interval.
const OC_VALIDITY_MS: u32 = 2000;

/// The queue and the processor.
pub struct ServiceQueue {
    model: ServiceModel,
    /// Mean cost of a new transaction.
    unit: f64,
    waiting: VecDeque<Job>,
    current: Option<(Instant, Job)>,
    done: Vec<(SocketAddr, Vec<u8>)>,
    known: HashMap<Vec<u8>, Instant>,
    expiry: VecDeque<(Instant, Vec<u8>)>,
    rng: u64,
    counts: ServiceCounts,
    /// Busy seconds at the last RFC 7339 update, and when it was.
    oc_busy_at: f64,
    oc_next: Instant,
    admit: f64,
    oc_seq: u64,
}

impl ServiceQueue {
    /// A server with `model`'s parameters, idle at `now`; `seed` draws its exponential service times.
    pub fn new(model: ServiceModel, seed: u64, now: Instant) -> ServiceQueue {
        let unit = 1.0 / model.capacity_tps.max(1e-9);
        ServiceQueue {
            model,
            unit,
            waiting: VecDeque::new(),
            current: None,
            done: Vec::new(),
            known: HashMap::new(),
            expiry: VecDeque::new(),
            rng: seed | 1,
            counts: ServiceCounts::default(),
            oc_busy_at: 0.0,
            oc_next: now + Duration::from_secs(1),
            admit: 1.0,
            oc_seq: 0,
        }
    }

    /// What the server did so far, with the RFC 7339 reduction (`oc`) in force now.
    pub fn counts(&self) -> ServiceCounts {
        ServiceCounts { oc: self.oc_percent(), ..self.counts }
    }

    /// Datagrams waiting, and whether one is in service.
    pub fn backlog(&self) -> usize {
        self.waiting.len() + usize::from(self.current.is_some())
    }

    fn oc_percent(&self) -> u8 {
        (100.0 * (1.0 - self.admit)).round().clamp(0.0, 100.0) as u8
    }

    fn unit_random(&mut self) -> f64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        ((self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A datagram arrives at `now`; false when the queue was full and it
    /// is dropped.
    pub fn offer(&mut self, now: Instant, from: SocketAddr, bytes: &[u8]) -> bool {
        self.advance(now);
        self.counts.arrived += 1;
        let job = Job { arrived: now, from, bytes: bytes.to_vec(), key: key(bytes) };
        if self.current.is_none() {
            self.start(job, now);
            self.advance(now);
            return true;
        }
        if self.waiting.len() >= self.model.queue {
            self.counts.dropped += 1;
            return false;
        }
        self.waiting.push_back(job);
        true
    }

    /// When the datagram in service is done.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.current.as_ref().map(|(done, _)| *done)
    }

    /// Everything served by `now`, in order, for the UAS.
    pub fn take_done(&mut self, now: Instant, out: &mut Vec<(SocketAddr, Vec<u8>)>) {
        self.advance(now);
        out.append(&mut self.done);
    }

    fn start(&mut self, mut job: Job, at: Instant) {
        while self.expiry.front().is_some_and(|(t, _)| *t <= at) {
            let (t, k) = self.expiry.pop_front().expect("front");
            if self.known.get(&k) == Some(&t) {
                self.known.remove(&k);
            }
        }
        let repeat = !job.key.is_empty() && self.known.contains_key(&job.key);
        let share = if repeat {
            self.counts.served_repeat += 1;
            self.model.repeat_cost
        } else {
            self.counts.served_new += 1;
            if !job.key.is_empty() {
                let until = at + self.model.memory;
                self.known.insert(job.key.clone(), until);
                self.expiry.push_back((until, std::mem::take(&mut job.key)));
            }
            1.0
        };
        let mean = self.unit * share;
        let cost = if self.model.exponential { -mean * self.unit_random().ln() } else { mean };
        self.counts.busy_s += cost;
        self.current = Some((at + Duration::from_secs_f64(cost), job));
    }

    /// Completes the jobs due by `now`, each next one starting when the
    /// previous ended; updates the RFC 7339 reduction on its seconds.
    fn advance(&mut self, now: Instant) {
        while let Some((done, _)) = &self.current {
            let done = *done;
            if done > now {
                break;
            }
            self.oc_update(done);
            let (_, mut job) = self.current.take().expect("current");
            self.rewrite_oc(&mut job.bytes);
            self.done.push((job.from, job.bytes));
            if let Some(next) = self.waiting.pop_front() {
                let at = done.max(next.arrived);
                self.start(next, at);
            }
        }
        self.oc_update(now);
    }

    fn oc_update(&mut self, now: Instant) {
        let Some(target) = self.model.oc_target else { return };
        while now >= self.oc_next {
            // Work started counts whole at its start; over a second of
            // millisecond jobs the difference is one job's.
            let busy = self.counts.busy_s - self.oc_busy_at;
            self.oc_busy_at = self.counts.busy_s;
            let rho = busy.max(1e-3);
            self.admit = (self.admit * target / rho).clamp(OC_MIN_ADMIT, 1.0);
            self.oc_seq += 1;
            self.oc_next += Duration::from_secs(1);
        }
    }

    /// RFC 7339 §5.2: the server's reduction goes in the top Via of its
    /// response, when the client offered `oc` there (§5.1).
    fn rewrite_oc(&self, bytes: &mut Vec<u8>) {
        if self.model.oc_target.is_none() {
            return;
        }
        let Some(new) = with_oc(bytes, self.oc_percent(), OC_VALIDITY_MS, self.oc_seq) else { return };
        *bytes = new;
    }
}

/// The transaction key of a datagram: its top Via branch and CSeq method
/// (RFC 3261 §17.2.3); empty when it has none.
fn key(bytes: &[u8]) -> Vec<u8> {
    let Ok(msg) = Message::parse(bytes) else { return Vec::new() };
    let (Some(branch), Ok(cseq)) = (msg.top_via().ok().and_then(|v| v.branch()), msg.cseq()) else {
        return Vec::new();
    };
    let mut k = Vec::with_capacity(branch.len() + cseq.method.len() + 1);
    k.extend_from_slice(branch.as_bytes());
    k.push(b' ');
    k.extend_from_slice(cseq.method.as_bytes());
    k
}

/// `bytes` with a bare `oc` parameter of the top Via replaced by the
/// server's values; None when the message is not a request whose top Via
/// has one.
fn with_oc(bytes: &[u8], oc: u8, validity_ms: u32, seq: u64) -> Option<Vec<u8>> {
    let msg = Message::parse(bytes).ok()?;
    if !msg.is_request() {
        return None;
    }
    let via = msg.top_via().ok()?.text;
    // The Via's text borrows from `bytes`: its offset locates it.
    let start = (via.as_ptr() as usize).checked_sub(bytes.as_ptr() as usize)?;
    if start + via.len() > bytes.len() {
        return None;
    }
    let mut out_via = String::with_capacity(via.len() + 48);
    let mut found = false;
    for (i, part) in via.split(';').enumerate() {
        if i > 0 {
            out_via.push(';');
        }
        if i > 0 && part.trim().eq_ignore_ascii_case("oc") && !found {
            found = true;
            out_via.push_str(&format!("oc={oc};oc-validity={validity_ms};oc-seq={seq};oc-algo=\"loss\""));
        } else {
            out_via.push_str(part);
        }
    }
    if !found {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() + 48);
    out.extend_from_slice(&bytes[..start]);
    out.extend_from_slice(out_via.as_bytes());
    out.extend_from_slice(&bytes[start + via.len()..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(branch: &str, via_params: &str) -> Vec<u8> {
        format!(
            "MESSAGE sip:s@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK{branch}{via_params}\r\n\
             Via: SIP/2.0/UDP 127.0.0.1:5080;branch=z9hG4bKuac\r\nFrom: <sip:a@h>;tag=1\r\nTo: <sip:s@h>\r\n\
             Call-ID: {branch}\r\nCSeq: 1 MESSAGE\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
        )
        .into_bytes()
    }

    fn peer() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 5070))
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn serves_one_at_a_time_at_the_capacity() {
        let t0 = Instant::now();
        let model = ServiceModel { capacity_tps: 100.0, queue: 1000, ..ServiceModel::default() };
        let mut q = ServiceQueue::new(model, 1, t0);
        // 50 new requests at once: the last is done after 50 × 10 ms.
        for i in 0..50 {
            assert!(q.offer(t0, peer(), &request(&format!("n{i}"), "")));
        }
        let mut out = Vec::new();
        q.take_done(t0 + ms(95), &mut out);
        assert_eq!(out.len(), 9, "9 done by 95 ms at 10 ms each");
        assert_eq!(q.poll_timeout(), Some(t0 + ms(100)));
        q.take_done(t0 + ms(499), &mut out);
        assert_eq!(out.len(), 49);
        q.take_done(t0 + ms(500), &mut out);
        assert_eq!(out.len(), 50);
        // In order of arrival.
        let first = Message::parse(&out[0].1).unwrap().call_id().unwrap().to_string();
        assert_eq!(first, "n0");
        assert_eq!(q.poll_timeout(), None);
        let c = q.counts();
        assert_eq!((c.arrived, c.served_new, c.dropped), (50, 50, 0));
        assert!((c.busy_s - 0.5).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn an_idle_server_starts_a_job_when_it_arrives_not_when_polled() {
        let t0 = Instant::now();
        let mut q = ServiceQueue::new(ServiceModel { capacity_tps: 100.0, ..ServiceModel::default() }, 1, t0);
        q.offer(t0, peer(), &request("a", ""));
        q.offer(t0 + ms(500), peer(), &request("b", ""));
        // The first ended at 10 ms, idle until 500 ms: the second ends at 510.
        assert_eq!(q.poll_timeout(), Some(t0 + ms(510)));
    }

    #[test]
    fn a_full_queue_drops_and_a_retransmission_costs_the_repeat_share() {
        let t0 = Instant::now();
        let model = ServiceModel { capacity_tps: 100.0, queue: 3, repeat_cost: 0.2, ..ServiceModel::default() };
        let mut q = ServiceQueue::new(model, 1, t0);
        let accepted: Vec<bool> = (0..6).map(|i| q.offer(t0, peer(), &request(&format!("d{i}"), ""))).collect();
        // One in service, three waiting, two dropped.
        assert_eq!(accepted, [true, true, true, true, false, false]);
        let mut out = Vec::new();
        q.take_done(t0 + ms(40), &mut out);
        assert_eq!(out.len(), 4);
        // The second's retransmission is known: 2 ms of work, not 10.
        q.offer(t0 + ms(100), peer(), &request("d1", ""));
        assert_eq!(q.poll_timeout(), Some(t0 + ms(102)));
        // A dropped one's retransmission is new to the server.
        q.take_done(t0 + ms(102), &mut out);
        q.offer(t0 + ms(200), peer(), &request("d4", ""));
        assert_eq!(q.poll_timeout(), Some(t0 + ms(210)));
        let c = q.counts();
        assert_eq!((c.arrived, c.dropped, c.served_new, c.served_repeat), (8, 2, 5, 1));
    }

    #[test]
    fn transactions_are_forgotten_after_the_memory() {
        let t0 = Instant::now();
        let model = ServiceModel { capacity_tps: 100.0, memory: Duration::from_secs(1), ..ServiceModel::default() };
        let mut q = ServiceQueue::new(model, 1, t0);
        q.offer(t0, peer(), &request("m", ""));
        q.offer(t0 + ms(900), peer(), &request("m", ""));
        assert_eq!(q.poll_timeout(), Some(t0 + ms(902)), "remembered within the memory");
        q.offer(t0 + ms(1500), peer(), &request("m", ""));
        assert_eq!(q.poll_timeout(), Some(t0 + ms(1510)), "new again after it");
    }

    #[test]
    fn exponential_service_times_keep_the_mean() {
        let t0 = Instant::now();
        let model = ServiceModel { capacity_tps: 1000.0, queue: 100_000, exponential: true, ..ServiceModel::default() };
        let mut q = ServiceQueue::new(model, 7, t0);
        for i in 0..20_000 {
            q.offer(t0, peer(), &request(&format!("e{i}"), ""));
        }
        let mut out = Vec::new();
        q.take_done(t0 + Duration::from_secs(10), &mut out);
        assert!((9_500..10_500).contains(&out.len()), "{} done in 10 s", out.len());
        q.take_done(t0 + Duration::from_secs(100), &mut out);
        let busy = q.counts().busy_s;
        assert!(out.len() == 20_000 && (19.5..20.5).contains(&busy), "20,000 jobs of 1 ms on average took {busy} s");
    }

    #[test]
    fn overload_queues_then_drops_so_goodput_stays_at_capacity() {
        // 150 % of capacity for 10 s, evenly spaced, no retransmissions:
        // the server completes its capacity and drops the rest.
        let t0 = Instant::now();
        let model = ServiceModel { capacity_tps: 200.0, queue: 100, ..ServiceModel::default() };
        let mut q = ServiceQueue::new(model, 1, t0);
        let mut out = Vec::new();
        for i in 0..3000u64 {
            let at = t0 + Duration::from_micros(i * 3333);
            q.offer(at, peer(), &request(&format!("o{i}"), ""));
            q.take_done(at, &mut out);
        }
        let end = t0 + Duration::from_secs(10);
        q.take_done(end, &mut out);
        assert!((1_990..=2_001).contains(&out.len()), "{} served in 10 s at 200/s", out.len());
        // Full at the last arrival (100 waiting, one in service); one
        // more done since.
        assert_eq!(q.backlog(), 100);
        assert_eq!(q.counts().dropped, 3000 - out.len() as u64 - 100);
    }

    #[test]
    fn rfc7339_the_bare_oc_of_the_top_via_gets_the_servers_reduction() {
        let t0 = Instant::now();
        let model =
            ServiceModel { capacity_tps: 100.0, queue: 10_000, oc_target: Some(0.9), ..ServiceModel::default() };
        let mut q = ServiceQueue::new(model, 1, t0);
        let mut out = Vec::new();
        // Idle: oc=0 in the top Via only; the UAC's Via is left alone.
        q.offer(t0, peer(), &request("i", ";oc;rport"));
        q.take_done(t0 + ms(10), &mut out);
        let text = String::from_utf8(out.pop().unwrap().1).unwrap();
        assert!(text.contains("branch=z9hG4bKi;oc=0;oc-validity=2000;oc-seq=0;oc-algo=\"loss\";rport\r\n"), "{text}");
        assert!(text.contains("Via: SIP/2.0/UDP 127.0.0.1:5080;branch=z9hG4bKuac\r\n"));
        // 300 % of capacity for 3 s: busy throughout, so the admitted
        // share falls by ρtarget each second: 0.9, 0.81, 0.729.
        for i in 0..900u64 {
            let at = t0 + ms(10) + Duration::from_micros(i * 3333);
            q.offer(at, peer(), &request(&format!("b{i}"), ";oc"));
            q.take_done(at, &mut out);
        }
        q.take_done(t0 + ms(3005), &mut out);
        assert_eq!(q.counts().oc, 27, "{:?}", q.counts());
        let last = String::from_utf8(out.last().unwrap().1.clone()).unwrap();
        assert!(last.contains(";oc=27;oc-validity=2000;oc-seq=3;"), "{last}");
        // Without a bare oc (the client does not support it) nothing
        // changes, nor in a Via that already has a value.
        assert!(with_oc(&request("x", ""), 10, 2000, 1).is_none());
        assert!(with_oc(&request("x", ";oc=5"), 10, 2000, 1).is_none());
    }

    #[test]
    fn the_model_is_checked() {
        assert!(ServiceModel::default().check().is_ok());
        assert!(ServiceModel { capacity_tps: 0.0, ..ServiceModel::default() }.check().is_err());
        assert!(ServiceModel { repeat_cost: 1.5, ..ServiceModel::default() }.check().is_err());
        assert!(ServiceModel { oc_target: Some(0.0), ..ServiceModel::default() }.check().is_err());
    }
}
