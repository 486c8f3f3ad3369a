//! What the admin interface lists of one proxy or shard
//! ([`crate::admin`]): its terminals' compartments and the registrations
//! it remembers, read where the caller holds the shard (the runtime under
//! its lock, as for a metrics snapshot). Each listing takes at most
//! `limit` entries, so that a large table holds the shard no longer than
//! that many entries take (and, for compartments of terminals known by
//! their SigComp identifier, one pass over the shard's flows to find
//! each one's newest flow).

use std::collections::{HashMap, HashSet};
use std::time::{SystemTime, UNIX_EPOCH};

use super::*;
use crate::admin::{CompartmentEntry, RegistrationEntry};

/// A flow as the admin interface names it: `udp:ADDR` or `tcp:ADDR`.
fn flow_name(peer: &Peer) -> String {
    format!("{}:{}", peer.transport.name(), peer.addr)
}

/// The SigComp identifier of a terminal known by one.
fn identifier(terminal: &Terminal) -> Option<&str> {
    match terminal {
        Terminal::Id(id) => Some(id.as_str()),
        Terminal::Flow(_) => None,
    }
}

impl Proxy {
    /// Up to `limit` of the terminals' compartments this proxy holds,
    /// by id, and how many it holds: each one's terminal and flow, the
    /// state its terminal keeps here, and when it was last used (`now` on
    /// the monotonic clock, `wall` on the wall clock).
    pub fn list_compartments(&self, now: Instant, wall: SystemTime, limit: usize) -> (usize, Vec<CompartmentEntry>) {
        let table = &self.registrar.compartments;
        let mut chosen: Vec<(CompartmentId, &Terminal)> = table.owners().take(limit).collect();
        chosen.sort_by_key(|(c, _)| c.0);
        let wanted: HashSet<&str> = chosen.iter().filter_map(|(_, t)| identifier(t)).collect();
        let newest =
            if wanted.is_empty() { HashMap::new() } else { self.flows.newest_by_identifier(|id| wanted.contains(id)) };
        let endpoint = &self.compression.endpoint;
        let states = endpoint.decompressor().states();
        let entries = chosen
            .into_iter()
            .map(|(c, terminal)| {
                let peer = match terminal {
                    Terminal::Id(id) => newest.get(id.as_str()).copied(),
                    Terminal::Flow(t) => self.flows.get(*t).map(|f| f.peer),
                };
                let idle = endpoint.last_active(c).map(|at| now.saturating_duration_since(at));
                let last_used = idle.and_then(|d| wall.checked_sub(d)?.duration_since(UNIX_EPOCH).ok());
                CompartmentEntry {
                    shard: self.identity.shard.index,
                    id: c.0,
                    terminal: identifier(terminal).map(str::to_string),
                    peer: peer.as_ref().map(flow_name),
                    registered: table.is_registered(terminal),
                    state_bytes: states.compartment(c).map_or(0, |s| u64::from(s.used)),
                    idle_ms: idle.map(|d| d.as_millis() as u64),
                    last_used_unix_ms: last_used.map(|d| d.as_millis() as u64),
                }
            })
            .collect();
        (table.len(), entries)
    }

    /// Up to `limit` of the registrations this proxy remembers, by
    /// address of record, and how many it remembers: each one's terminal,
    /// the flow it came by, and the seconds left at `now`.
    pub fn list_registrations(&self, now: Instant, limit: usize) -> (usize, Vec<RegistrationEntry>) {
        let table = &self.registrar.compartments;
        let mut entries: Vec<RegistrationEntry> = table
            .registrations()
            .take(limit)
            .map(|(terminal, r)| RegistrationEntry {
                shard: self.identity.shard.index,
                aor: r.aor.to_string(),
                terminal: identifier(terminal).map(str::to_string),
                flow: self.flows.get(r.flow).map(|f| flow_name(&f.peer)),
                expires_s: r.until.saturating_duration_since(now).as_secs(),
                compartments: table.count_of(terminal),
            })
            .collect();
        entries.sort_by(|a, b| (&a.aor, &a.terminal).cmp(&(&b.aor, &b.terminal)));
        (table.registered_count(), entries)
    }
}
