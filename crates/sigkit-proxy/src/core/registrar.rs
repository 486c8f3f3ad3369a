//! What the proxy knows of registrations: terminals' compartments and the
//! registrations that keep their state (RFC 5049 §6.5), the REGISTERs held
//! for the registrar's answer, and what a REGISTER and its 2xx say about
//! the terminal's bindings (RFC 3261 §10.3).

use std::time::Instant;

use sigcomp::CompartmentId;
use sigkit_sip::Message;

use crate::compartments::{Compartments, ProxyName, Registered, Terminal};
use crate::pending::{PendingLimits, PendingRegisters, MAX_CONTACTS};

/// A REGISTER's Contact bindings: (user, host in lower case, port).
pub(super) type Bindings = Vec<(String, String, Option<u16>)>;

/// What a registrar's 2xx did to a terminal's registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Registration {
    /// It lasts: the terminal's state is kept.
    Kept,
    /// It lasts, but `max_registrations` are remembered already: the
    /// proxy does not know of it.
    NotKept,
    /// It ended: no binding of the terminal's is left.
    Ended,
}

pub(super) struct Registrar {
    /// Terminals' compartments and registrations.
    pub(super) compartments: Compartments,
    /// REGISTERs awaiting the registrar's answer ([`crate::pending`]).
    pub(super) held: PendingRegisters,
    max_registrations: usize,
}

impl Registrar {
    pub(super) fn new(held: PendingLimits, max_registrations: usize) -> Registrar {
        Registrar { compartments: Compartments::default(), held: PendingRegisters::new(held), max_registrations }
    }

    /// The compartment of `terminal` under `name` ([`crate::compartments`]);
    /// and past the terminal's cap of names the one it used longest ago,
    /// forgotten here, for the endpoint to close.
    pub(super) fn compartment(
        &mut self,
        terminal: &Terminal,
        name: ProxyName,
    ) -> (CompartmentId, Option<CompartmentId>) {
        let (c, over) = self.compartments.get(terminal, name);
        if let Some(old) = over {
            self.compartments.forget(old);
        }
        (c, over)
    }

    /// Records the registrar's 2xx to `terminal`'s REGISTER of `aor`, which
    /// came by flow `flow`: its registration lasts until `until`, or has
    /// ended (`None`).
    pub(super) fn register(
        &mut self,
        terminal: &Terminal,
        until: Option<Instant>,
        aor: &str,
        flow: u64,
    ) -> Registration {
        match until {
            Some(t)
                if self.compartments.register(
                    terminal.clone(),
                    Registered::new(t, aor, flow),
                    self.max_registrations,
                ) =>
            {
                Registration::Kept
            }
            Some(_) => Registration::NotKept,
            None => {
                self.compartments.unregister(terminal);
                Registration::Ended
            }
        }
    }

    /// Forgets `terminal`'s compartments; they are returned for the
    /// endpoint to close.
    pub(super) fn drop_compartments(&mut self, terminal: &Terminal) -> Vec<CompartmentId> {
        let gone = self.compartments.of(terminal);
        for &c in &gone {
            self.compartments.forget(c);
        }
        gone
    }

    /// Forgets `terminal`, registration and compartments (its flow is gone
    /// and nothing else can name it); the compartments are returned for the
    /// endpoint to close.
    pub(super) fn forget(&mut self, terminal: &Terminal) -> Vec<CompartmentId> {
        self.compartments.unregister(terminal);
        self.drop_compartments(terminal)
    }

    /// Ends the registrations run out at `now`; their terminals'
    /// compartments are returned for the endpoint to close.
    pub(super) fn expire(&mut self, now: Instant) -> Vec<CompartmentId> {
        let mut gone = Vec::new();
        for terminal in self.compartments.expire(now) {
            gone.extend(self.drop_compartments(&terminal));
        }
        gone
    }

    /// When a held REGISTER or a registration next runs out.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        [self.held.next_deadline(), self.compartments.next_expiry()].into_iter().flatten().min()
    }
}

/// The Contact bindings of a REGISTER, matched against its 2xx
/// ([`binding_expiry`]): `None` for `*` (every binding removed), an empty
/// list for a query or an unreadable Contact (RFC 3261 §10.2.3; the
/// registrar judges it, and nothing changes here), else the first
/// [`MAX_CONTACTS`].
pub(super) fn register_bindings(msg: &Message<'_>) -> Option<Bindings> {
    match msg.contacts() {
        Ok(sigkit_sip::Contacts::List(list)) => Some(
            list.iter()
                .take(MAX_CONTACTS)
                .filter_map(|c| c.sip_uri().ok())
                .map(|u| (u.user.unwrap_or("").to_string(), u.host.to_ascii_lowercase(), u.port))
                .collect(),
        ),
        Ok(sigkit_sip::Contacts::Star) => None,
        Err(_) => Some(Vec::new()),
    }
}

/// Seconds the terminal's registration lasts after the registrar's 2xx
/// `ok` to a REGISTER with `bindings` ([`register_bindings`]), 0 when it
/// has ended; `None` for a query, which changes nothing. The 2xx lists
/// every binding of the address of record (RFC 3261 §10.3 step 8); the
/// terminal's are those its request named, and the one that lasts longest
/// counts.
pub(super) fn binding_expiry(ok: &Message<'_>, bindings: &Option<Bindings>) -> Option<u32> {
    let default = ok.expires().ok().flatten().unwrap_or(3600);
    let expires = match (bindings, ok.contacts()) {
        (Some(mine), _) if mine.is_empty() => return None,
        (Some(mine), Ok(sigkit_sip::Contacts::List(list))) => list
            .iter()
            .filter(|c| {
                c.sip_uri().is_ok_and(|u| {
                    mine.iter().any(|(user, host, port)| {
                        u.user.unwrap_or("") == user && u.host.eq_ignore_ascii_case(host) && u.port == *port
                    })
                })
            })
            .map(|c| c.expires().unwrap_or(default))
            .max()
            .unwrap_or(0),
        _ => 0,
    };
    Some(expires)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(first_line: &str, headers: &str) -> Vec<u8> {
        format!(
            "{first_line}\r\nVia: SIP/2.0/UDP 10.0.0.9:5080;branch=z9hG4bK1\r\nFrom: <sip:u@x>;tag=1\r\n\
             To: <sip:u@x>\r\nCall-ID: c\r\nCSeq: 1 REGISTER\r\n{headers}Content-Length: 0\r\n\r\n"
        )
        .into_bytes()
    }

    fn bindings(headers: &str) -> Option<Bindings> {
        register_bindings(&Message::parse(&message("REGISTER sip:x SIP/2.0", headers)).unwrap())
    }

    fn expiry(mine: &Option<Bindings>, headers: &str) -> Option<u32> {
        binding_expiry(&Message::parse(&message("SIP/2.0 200 OK", headers)).unwrap(), mine)
    }

    /// RFC 3261 §10.3 step 8: the 2xx lists the address of record's every
    /// binding; only the terminal's own count, the longest-lasting one
    /// wins, and a binding without its own expires takes the Expires
    /// header's (else an hour).
    #[test]
    fn the_terminals_own_bindings_give_the_expiry() {
        let mine = bindings("Contact: <sip:u@10.0.0.9:5080>\r\nContact: <sip:u@10.0.0.9:5090>\r\n");
        assert_eq!(mine.as_ref().map(Vec::len), Some(2));
        let others = "Contact: <sip:u@10.9.9.9:5080>;expires=9000\r\n";
        let ok = format!(
            "{others}Contact: <sip:u@10.0.0.9:5080>;expires=300\r\nContact: <sip:u@10.0.0.9:5090>;expires=600\r\n"
        );
        assert_eq!(expiry(&mine, &ok), Some(600));
        assert_eq!(expiry(&mine, "Expires: 120\r\nContact: <sip:u@10.0.0.9:5080>\r\n"), Some(120));
        assert_eq!(expiry(&mine, "Contact: <sip:U@10.0.0.9:5080>\r\n"), Some(0), "another user");
        assert_eq!(expiry(&mine, "Contact: <sip:u@10.0.0.9:5080>\r\n"), Some(3600));
        // Every binding of the terminal's removed, or `*`: ended.
        assert_eq!(expiry(&mine, others), Some(0));
        assert_eq!(expiry(&bindings("Contact: *\r\nExpires: 0\r\n"), others), Some(0));
        // A query changes nothing.
        assert_eq!(bindings(""), Some(Vec::new()));
        assert_eq!(expiry(&bindings(""), others), None);
    }

    /// A registration is kept up to `max_registrations`; its end forgets
    /// it, and an expired one gives back its terminal's compartments.
    #[test]
    fn registrations_are_capped_and_give_back_their_compartments() {
        let limits = PendingLimits { max_registers: 4, max_per_source: 4, max_bytes: 1 << 20 };
        let mut r = Registrar::new(limits, 1);
        let now = Instant::now();
        let (a, b) = (Terminal::Id("urn:a".into()), Terminal::Id("urn:b".into()));
        let name = ProxyName::ours("urn:proxy");
        let (ca, over) = r.compartment(&a, name);
        assert_eq!(over, None);
        assert_eq!(r.register(&a, Some(now + std::time::Duration::from_secs(60)), "sip:a@x", 1), Registration::Kept);
        assert_eq!(r.register(&b, Some(now), "sip:b@x", 2), Registration::NotKept);
        assert_eq!(r.next_deadline(), Some(now + std::time::Duration::from_secs(60)));
        assert_eq!(r.expire(now), Vec::<CompartmentId>::new());
        assert_eq!(r.expire(now + std::time::Duration::from_secs(60)), vec![ca]);
        assert!(r.compartments.of(&a).is_empty() && !r.compartments.is_registered(&a));
        r.compartment(&b, name);
        assert_eq!(r.register(&b, None, "sip:b@x", 2), Registration::Ended);
        assert_eq!(r.forget(&b).len(), 1);
    }
}
