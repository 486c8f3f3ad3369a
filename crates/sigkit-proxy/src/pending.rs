//! REGISTERs forwarded to the registrar and held until its final answer.
//!
//! RFC 5049 §6 lets the proxy keep the state a SigComp REGISTER creates
//! only once the registrar has accepted the registration, so a SigComp
//! REGISTER waits here with its pending state (up to four new states of up
//! to the decompression memory each, RFC 3320 §9.4.9) until the 2xx, or
//! until the transaction would have timed out (64·T1). A registrar that
//! never answers would otherwise let every source make the proxy hold that
//! much for 32 s per message; so the held REGISTERs are capped in number
//! overall and per source address, and their bytes are counted against a
//! cap of their own. Past a cap a REGISTER is still forwarded, but its
//! state is declined at once (the terminal's next message after the
//! registration creates it again) or, past the count caps, it is not held.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::Instant;

use sigcomp::CompartmentId;
use sigcomp_compress::Incoming;

use crate::compartments::Terminal;

/// At most this many Contact bindings of a REGISTER are kept to match its
/// 2xx against (RFC 3261 §10.3 step 8); a terminal registers one or two.
pub const MAX_CONTACTS: usize = 16;

/// A REGISTER forwarded to the registrar, until its final answer.
pub struct HeldRegister {
    /// Its SigComp state (RFC 5049 §6: kept only on a 2xx).
    pub incoming: Option<Incoming>,
    /// The compartment the state goes into on a 2xx (RFC 5049 §6.1); `None`
    /// for a plain-SIP REGISTER.
    pub compartment: Option<CompartmentId>,
    /// The terminal registering: a 2xx registers it, keeping its
    /// compartments' state (RFC 5049 §6.5).
    pub terminal: Terminal,
    /// The flow token of the flow it came over: a 2xx marks that flow
    /// registered until the binding expires (RFC 5626 §5.2).
    pub token: u64,
    /// The request's Contact: `None` for `*` (every binding removed), an
    /// empty list for a query (RFC 3261 §10.2.3), else the bindings'
    /// (user, host, port), the first [`MAX_CONTACTS`].
    pub contacts: Option<Vec<(String, String, Option<u16>)>>,
    /// When it stops being held: 64·T1 (32 s, RFC 3261 §17.1.2.2 Timer
    /// F) after it was forwarded, when no final answer will come; its
    /// state is then declined.
    pub deadline: Instant,
    /// Where it came from, for the per-source cap.
    pub source: IpAddr,
}

impl HeldRegister {
    /// The bytes it holds.
    fn bytes(&self) -> usize {
        let contacts: usize = self
            .contacts
            .iter()
            .flatten()
            .map(|(user, host, _)| std::mem::size_of::<(String, String, Option<u16>)>() + user.len() + host.len())
            .sum();
        let terminal = match &self.terminal {
            Terminal::Id(id) => id.len(),
            Terminal::Flow(_) => 0,
        };
        std::mem::size_of::<HeldRegister>()
            + self.incoming.as_ref().map_or(0, Incoming::held_bytes)
            + contacts
            + terminal
    }
}

/// The caps, for one proxy (or one shard's part).
#[derive(Debug, Clone, Copy)]
pub struct PendingLimits {
    /// REGISTERs held at most (`max_pending_registers`, default 100,000,
    /// this shard's share of it); past it [`Cap::Registers`].
    pub max_registers: usize,
    /// REGISTERs held at most from one source IP address
    /// (`max_pending_registers_per_source`, default 32, per shard); past
    /// it [`Cap::PerSource`].
    pub max_per_source: usize,
    /// Bytes of SigComp state held at most (`max_pending_state_bytes`,
    /// default 64 MiB, this shard's share of it); past it [`Cap::Bytes`].
    /// Each cap met shows as `sigkit_proxy_pending_registers_refused{cap}`.
    pub max_bytes: usize,
}

/// Which cap a REGISTER met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// Too many held overall: not held.
    Registers,
    /// Too many held from its source address: not held.
    PerSource,
    /// Its state would take the held bytes over their cap: held without
    /// its state.
    Bytes,
}

impl Cap {
    /// Every cap, in the order of [`Cap::index`].
    pub const ALL: [Cap; 3] = [Cap::Registers, Cap::PerSource, Cap::Bytes];

    /// Its index in the counts by cap
    /// ([`crate::metrics::Snapshot::pending_refused`]).
    pub fn index(self) -> usize {
        self as usize
    }

    /// Its metric label.
    pub fn name(self) -> &'static str {
        match self {
            Cap::Registers => "registers",
            Cap::PerSource => "per_source",
            Cap::Bytes => "bytes",
        }
    }
}

/// The held REGISTERs by the branch of the proxy's Via.
pub struct PendingRegisters {
    limits: PendingLimits,
    /// Each with its bytes and its state's.
    held: HashMap<String, (HeldRegister, usize, usize)>,
    /// Branches in deadline order: every REGISTER is held for the same
    /// time, so the order they came in is the order they time out. Entries
    /// of REGISTERs answered already are stale; the first entry is always
    /// a live one ([`PendingRegisters::drop_stale_front`]).
    order: VecDeque<(Instant, String)>,
    per_source: HashMap<IpAddr, usize>,
    /// Bytes of the held REGISTERs' SigComp state, under the byte cap.
    state_bytes: usize,
    /// Bytes of everything held (the count caps bound the rest).
    bytes: usize,
    refused: [u64; Cap::ALL.len()],
}

impl PendingRegisters {
    /// None held yet, under `limits`.
    pub fn new(limits: PendingLimits) -> PendingRegisters {
        PendingRegisters {
            limits,
            held: HashMap::new(),
            order: VecDeque::new(),
            per_source: HashMap::new(),
            state_bytes: 0,
            bytes: 0,
            refused: [0; Cap::ALL.len()],
        }
    }

    /// Whether a REGISTER from `source` may be held (the count caps).
    pub fn admits(&mut self, source: IpAddr) -> Result<(), Cap> {
        let cap = if self.held.len() >= self.limits.max_registers {
            Cap::Registers
        } else if self.per_source.get(&source).copied().unwrap_or(0) >= self.limits.max_per_source {
            Cap::PerSource
        } else {
            return Ok(());
        };
        self.refused[cap.index()] += 1;
        Err(cap)
    }

    /// Whether `incoming` fits the byte cap beside what is held; counts a
    /// refusal when it does not.
    pub fn fits(&mut self, incoming: &Incoming) -> bool {
        let fits = self.state_bytes + incoming.held_bytes() <= self.limits.max_bytes;
        if !fits {
            self.refused[Cap::Bytes.index()] += 1;
        }
        fits
    }

    /// Holds `held` under `branch` (after [`PendingRegisters::admits`]);
    /// returns what the branch held before (a retransmission's first copy).
    pub fn insert(&mut self, branch: String, held: HeldRegister) -> Option<HeldRegister> {
        let old = self.remove(&branch);
        let bytes = held.bytes();
        let state = held.incoming.as_ref().map_or(0, Incoming::held_bytes);
        self.bytes += bytes;
        self.state_bytes += state;
        *self.per_source.entry(held.source).or_default() += 1;
        self.order.push_back((held.deadline, branch.clone()));
        self.held.insert(branch, (held, bytes, state));
        old
    }

    /// The REGISTER held under `branch`, no longer held.
    pub fn remove(&mut self, branch: &str) -> Option<HeldRegister> {
        let (held, bytes, state) = self.held.remove(branch)?;
        self.bytes -= bytes;
        self.state_bytes -= state;
        if let Some(n) = self.per_source.get_mut(&held.source) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&held.source);
            }
        }
        self.drop_stale_front();
        Some(held)
    }

    /// Whether the `order` entry (`at`, `branch`) is the one of a REGISTER
    /// still held (not answered, not replaced by a retransmission's).
    fn is_live(&self, at: Instant, branch: &str) -> bool {
        self.held.get(branch).is_some_and(|(h, ..)| h.deadline == at)
    }

    /// Pops the stale entries before the first live one, so that finding
    /// the next deadline does not walk past the answered REGISTERs.
    fn drop_stale_front(&mut self) {
        while let Some((at, branch)) = self.order.front() {
            if self.is_live(*at, branch) {
                break;
            }
            self.order.pop_front();
        }
    }

    /// When the next held REGISTER times out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.order.front().map(|(at, _)| *at)
    }

    /// The REGISTERs whose time is up, no longer held.
    pub fn expire(&mut self, now: Instant) -> Vec<HeldRegister> {
        let mut late = Vec::new();
        // The first entry is live (drop_stale_front after every removal).
        while let Some((at, _)) = self.order.front() {
            if *at > now {
                break;
            }
            let Some((_, branch)) = self.order.pop_front() else { break };
            late.extend(self.remove(&branch));
        }
        late
    }

    /// REGISTERs held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Bytes of SigComp state held.
    pub fn state_bytes(&self) -> usize {
        self.state_bytes
    }

    /// REGISTERs that met each cap, by [`Cap::index`].
    pub fn refused(&self) -> [u64; Cap::ALL.len()] {
        self.refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn held(source: [u8; 4], deadline: Instant, contacts: usize) -> HeldRegister {
        HeldRegister {
            incoming: None,
            compartment: None,
            terminal: Terminal::Flow(1),
            token: 1,
            contacts: Some(vec![("alice".into(), "10.0.0.1".into(), None); contacts]),
            deadline,
            source: IpAddr::from(source),
        }
    }

    #[test]
    fn registers_are_capped_overall_and_per_source() {
        let t = Instant::now();
        let limits = PendingLimits { max_registers: 3, max_per_source: 2, max_bytes: 1 << 20 };
        let mut p = PendingRegisters::new(limits);
        let a = [10, 0, 0, 1];
        for i in 0..2 {
            p.admits(IpAddr::from(a)).unwrap();
            p.insert(format!("a{i}"), held(a, t, 1));
        }
        assert_eq!(p.admits(IpAddr::from(a)), Err(Cap::PerSource));
        p.admits(IpAddr::from([10, 0, 0, 2])).unwrap();
        p.insert("b".into(), held([10, 0, 0, 2], t, 1));
        assert_eq!(p.admits(IpAddr::from([10, 0, 0, 3])), Err(Cap::Registers));
        assert_eq!(p.refused(), [1, 1, 0]);
        // An answer frees its source's place.
        assert!(p.remove("a0").is_some());
        p.admits(IpAddr::from(a)).unwrap();
    }

    #[test]
    fn bytes_are_counted_in_and_out() {
        let t = Instant::now();
        let limits = PendingLimits { max_registers: 10, max_per_source: 10, max_bytes: 1 << 20 };
        let mut p = PendingRegisters::new(limits);
        p.insert("x".into(), held([10, 0, 0, 1], t, 4));
        let four = p.bytes();
        assert!(four > 4 * "alice10.0.0.1".len(), "{four}");
        assert!(p.insert("x".into(), held([10, 0, 0, 1], t, 1)).is_some(), "a retransmission replaces");
        assert!(p.bytes() < four);
        p.remove("x");
        assert_eq!((p.bytes(), p.len()), (0, 0));
    }

    #[test]
    fn registers_time_out_in_order_and_answered_ones_are_skipped() {
        let t = Instant::now();
        let limits = PendingLimits { max_registers: 10, max_per_source: 10, max_bytes: 1 << 20 };
        let mut p = PendingRegisters::new(limits);
        for (i, b) in ["a", "b", "c"].into_iter().enumerate() {
            p.insert(b.into(), held([10, 0, 0, 1], t + Duration::from_secs(i as u64), 1));
        }
        p.remove("a");
        assert_eq!(p.next_deadline(), Some(t + Duration::from_secs(1)));
        let late = p.expire(t + Duration::from_secs(1));
        assert_eq!(late.len(), 1);
        assert_eq!(p.len(), 1);
        assert_eq!(p.next_deadline(), Some(t + Duration::from_secs(2)));
    }
}
