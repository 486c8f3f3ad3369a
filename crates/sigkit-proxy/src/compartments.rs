//! Which compartment a message exchanged with a terminal belongs to, so
//! that the proxy and the terminal always agree (RFC 5049 §6.1).
//!
//! A terminal keeps one compartment per *remote application identifier*,
//! and for its outgoing requests that identifier is the `sigcomp-id` of the
//! URI it sends the request to, else that URI's host (§6.1, "Outgoing
//! requests"). One terminal may therefore know the proxy by several
//! identifiers: the host of an outbound proxy URI configured without a
//! `sigcomp-id`, and the proxy's `sigcomp-id` once it has read it in a
//! Record-Route or in the proxy's Via. Each identifier is a compartment of
//! its own at the terminal, with its own state memory, and the terminal's
//! compressor in each believes it owns that memory at the proxy.
//!
//! The proxy therefore keys a compartment by the pair (terminal, name the
//! terminal uses for the proxy), read from each message as the terminal's
//! own rules of §6.1 give it:
//! - a request from the terminal: the name of the URI it was sent to (its
//!   first Route, else its Request-URI);
//! - the proxy's response to it: the same name, carried in the proxy's own
//!   Via toward the upstream (`sk-n`), so a stateless proxy finds it again;
//! - a request to the terminal, and the terminal's response to it: the
//!   proxy's `sigcomp-id`, which the proxy's Via carries (the terminal's
//!   "Incoming requests" rule).
//!
//! Two spellings of one identifier (the quoted Via form and the escaped URI
//! form of the proxy's `sigcomp-id`) give one name (§6.2,
//! [`sigkit_sip::compartment::identifier_key`]). A terminal configured with
//! the proxy's `sigcomp-id` in its outbound proxy URI uses one name
//! throughout, and has one compartment at each end.

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use sha1::{Digest, Sha1};
use sigcomp::CompartmentId;
use sigkit_sip::compartment::{identifier_key, next_hop_id};
use sigkit_sip::{Message, Via};

/// At most this many names per terminal, each a compartment. An RFC 5049
/// terminal uses one or two for its proxy (the outbound proxy URI's host,
/// the proxy's `sigcomp-id`), three if it also sends requests outside a
/// Route to a domain by name. Past the cap, the name used longest ago loses
/// its compartment: that terminal's compressor then learns of it by a NACK
/// (RFC 4077) and starts over, and no other terminal is touched.
pub const NAMES_PER_TERMINAL: usize = 4;

/// The longest SigComp identifier the proxy keys a terminal by. A UUID URN
/// (RFC 5049 §6.1: SHOULD) is 45 bytes; a longer identifier is ignored,
/// and its terminal is known by its flow, so that a hostile one costs no
/// more memory than a flow.
pub const MAX_IDENTIFIER_LEN: usize = 256;

/// The longest address of record a registration keeps for the admin
/// interface ([`crate::admin`]); a longer one is kept empty, so that a
/// registration costs a bounded amount whatever its To header holds.
pub const MAX_AOR_LEN: usize = 256;

/// The Via parameter that carries a request's [`ProxyName`] to its
/// responses.
const NAME_PARAM: &str = "sk-n";

/// Which terminal: its SigComp identifier (RFC 5049 §6.1: the Via's
/// `sigcomp-id`, the Contact's `+sip.instance`, or the Request-URI's
/// `sigcomp-id`), in [`identifier_key`] form; or, for a legacy terminal
/// without one, its flow.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Terminal {
    /// Its SigComp identifier, at most [`MAX_IDENTIFIER_LEN`] bytes.
    Id(String),
    /// The token of its flow (RFC 5626 §3.1: a transport address and, over
    /// TCP, a connection): it lasts as long as the flow.
    Flow(u64),
}

/// The name a terminal uses for the proxy (a hash of its
/// [`sigkit_sip::compartment::NextHopId::key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProxyName(u64);

impl ProxyName {
    fn of_key(key: &str) -> ProxyName {
        let d = Sha1::digest(key.as_bytes());
        ProxyName(u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]))
    }

    /// The proxy's `sigcomp-id` as a name: what a terminal uses for requests
    /// the proxy sends it (its Via) and for requests that follow the
    /// proxy's Record-Route.
    pub fn ours(sigcomp_id: &str) -> ProxyName {
        ProxyName::of_key(&format!("id:{}", identifier_key(sigcomp_id)))
    }

    /// The name a request's sender used for the proxy; `None` when neither
    /// its first Route nor its Request-URI is a SIP URI.
    pub fn of_request(msg: &Message<'_>) -> Option<ProxyName> {
        next_hop_id(msg).map(|n| ProxyName::of_key(&n.key()))
    }

    /// The Via parameter that carries this name (`;sk-n=<16 hex digits>`).
    pub fn via_param(self) -> String {
        format!(";{NAME_PARAM}={:016x}", self.0)
    }

    /// The name the proxy's own Via carries.
    pub fn from_via(via: &Via<'_>) -> Option<ProxyName> {
        let v = via.param(NAME_PARAM).flatten()?;
        (v.len() == 16).then(|| u64::from_str_radix(v, 16).ok().map(ProxyName)).flatten()
    }
}

/// How often a terminal's bytecode, or the proxy's, was uploaded into
/// compartments (RFC 3320 §7: a message that carries its bytecode rather
/// than naming a state): before the sender first named a state there
/// (initial), and the first upload after (again; the uploads that follow
/// it until the sender names a state again are initial ones, so each start
/// over counts once). A sender that uploads again has lost its
/// model of what the receiver holds (a NACK told it, or it restarted): the sign of a
/// disagreement about compartments, or of state lost to the limits or a
/// restart. (A compressor also starts over once when it learns the other
/// end's parameters from its first message in the compartment (RFC 3320
/// §9.4.9); an upload after that first message, before the sender names a
/// state again, counts as initial.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Uploads {
    /// Terminals' uploads before they named a state in the compartment
    /// (`sigkit_proxy_bytecode_uploads{direction="from_terminal",kind="initial"}`).
    pub from_terminals_initial: u64,
    /// Terminals' first uploads after naming one: their starts over
    /// (`sigkit_proxy_bytecode_uploads{direction="from_terminal",kind="again"}`).
    pub from_terminals_again: u64,
    /// The proxy's uploads before it named a state in the compartment
    /// (`sigkit_proxy_bytecode_uploads{direction="to_terminal",kind="initial"}`).
    pub to_terminals_initial: u64,
    /// The proxy's first uploads after naming one: its starts over
    /// (`sigkit_proxy_bytecode_uploads{direction="to_terminal",kind="again"}`).
    pub to_terminals_again: u64,
}

impl Uploads {
    /// Adds another shard's counts to these.
    pub fn add(&mut self, o: &Uploads) {
        self.from_terminals_initial += o.from_terminals_initial;
        self.from_terminals_again += o.from_terminals_again;
        self.to_terminals_initial += o.to_terminals_initial;
        self.to_terminals_again += o.to_terminals_again;
    }
}

struct Owner {
    terminal: Terminal,
    name: ProxyName,
    terminal_sends: Sender,
    proxy_sends: Sender,
    /// Either end uploaded again here ([`Compartments::reuploading`]).
    started_over: bool,
}

/// What one end sent into a compartment.
#[derive(Default)]
struct Sender {
    /// It sent a message here.
    sent: bool,
    /// It named a state here since its last start over (and since the
    /// other end's first message).
    named_state: bool,
}

/// One message of `sender` into a compartment whose other end is
/// `receiver`: an upload of its bytecode counts in `initial`, or in `again`
/// when the sender had named a state (the return value). Each start over
/// counts once: until the sender names a state again its uploads are
/// initial ones. A first message carries the sender's parameters, and the
/// receiver's compressor may start over on learning them (RFC 3320
/// §9.4.9): that is not counted as again either.
fn count_upload(sender: &mut Sender, receiver: &mut Sender, uploaded: bool, counts: (&mut u64, &mut u64)) -> bool {
    if !sender.sent {
        sender.sent = true;
        receiver.named_state = false;
    }
    match (uploaded, sender.named_state) {
        (false, _) => {
            sender.named_state = true;
            false
        }
        (true, false) => {
            *counts.0 += 1;
            false
        }
        (true, true) => {
            *counts.1 += 1;
            sender.named_state = false;
            true
        }
    }
}

/// A registration the proxy remembers: it keeps its terminal's state
/// (RFC 5049 §6.5) until it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// When it expires.
    pub until: Instant,
    /// The address of record (the 2xx's To URI), at most [`MAX_AOR_LEN`]
    /// bytes; empty when longer.
    pub aor: Box<str>,
    /// The token of the flow the REGISTER came by.
    pub flow: u64,
}

impl Registered {
    /// A registration of `aor` through flow `flow` until `until`; `aor`
    /// kept only up to [`MAX_AOR_LEN`].
    pub fn new(until: Instant, aor: &str, flow: u64) -> Registered {
        let aor = if aor.len() <= MAX_AOR_LEN { aor } else { "" };
        Registered { until, aor: aor.into(), flow }
    }
}

/// The compartments of terminals, by (terminal, name), and the
/// registrations that keep their state (RFC 5049 §6.5).
#[derive(Default)]
pub struct Compartments {
    by_key: HashMap<(Terminal, ProxyName), CompartmentId>,
    owners: HashMap<CompartmentId, Owner>,
    /// Each terminal's compartments, the one used last at the end.
    of_terminal: HashMap<Terminal, Vec<CompartmentId>>,
    registered: HashMap<Terminal, Registered>,
    /// `registered` by expiry: the next one is found without a scan (the
    /// runtime asks after every message, [`crate::Proxy::poll_timeout`]).
    expiries: BTreeSet<(Instant, Terminal)>,
    next: u64,
    uploads: Uploads,
}

impl Compartments {
    /// The compartment of `terminal` under `name`, opened if new; and one
    /// of the terminal's to close if that took it past
    /// [`NAMES_PER_TERMINAL`].
    pub fn get(&mut self, terminal: &Terminal, name: ProxyName) -> (CompartmentId, Option<CompartmentId>) {
        if let Some(&c) = self.by_key.get(&(terminal.clone(), name)) {
            if let Some(list) = self.of_terminal.get_mut(terminal) {
                if list.last() != Some(&c) {
                    list.retain(|&x| x != c);
                    list.push(c);
                }
            }
            return (c, None);
        }
        self.next += 1;
        let c = CompartmentId(self.next);
        self.by_key.insert((terminal.clone(), name), c);
        let owner = Owner {
            terminal: terminal.clone(),
            name,
            terminal_sends: Sender::default(),
            proxy_sends: Sender::default(),
            started_over: false,
        };
        self.owners.insert(c, owner);
        let list = self.of_terminal.entry(terminal.clone()).or_default();
        list.push(c);
        let over = (list.len() > NAMES_PER_TERMINAL).then(|| list[0]);
        (c, over)
    }

    /// Forgets `c` (the endpoint has closed it).
    pub fn forget(&mut self, c: CompartmentId) {
        let Some(o) = self.owners.remove(&c) else { return };
        self.by_key.remove(&(o.terminal.clone(), o.name));
        if let Some(list) = self.of_terminal.get_mut(&o.terminal) {
            list.retain(|&x| x != c);
            if list.is_empty() {
                self.of_terminal.remove(&o.terminal);
            }
        }
    }

    /// The compartments of `terminal`.
    pub fn of(&self, terminal: &Terminal) -> Vec<CompartmentId> {
        self.of_terminal.get(terminal).cloned().unwrap_or_default()
    }

    /// How many compartments `terminal` has.
    pub fn count_of(&self, terminal: &Terminal) -> usize {
        self.of_terminal.get(terminal).map_or(0, Vec::len)
    }

    /// The terminal whose compartment `c` is.
    pub fn terminal_of(&self, c: CompartmentId) -> Option<&Terminal> {
        self.owners.get(&c).map(|o| &o.terminal)
    }

    /// `terminal` registered as `registration` says; false (and nothing
    /// noted) when it is a new registration and `max` are noted already.
    pub fn register(&mut self, terminal: Terminal, registration: Registered, max: usize) -> bool {
        if self.registered.len() >= max && !self.registered.contains_key(&terminal) {
            return false;
        }
        let until = registration.until;
        if let Some(before) = self.registered.insert(terminal.clone(), registration) {
            self.expiries.remove(&(before.until, terminal.clone()));
        }
        self.expiries.insert((until, terminal));
        true
    }

    /// `terminal`'s registration ended; whether it had one.
    pub fn unregister(&mut self, terminal: &Terminal) -> bool {
        let Some(r) = self.registered.remove(terminal) else { return false };
        self.expiries.remove(&(r.until, terminal.clone()));
        true
    }

    /// The registrations remembered, in no particular order.
    pub fn registrations(&self) -> impl Iterator<Item = (&Terminal, &Registered)> {
        self.registered.iter()
    }

    /// The compartments and their terminals, in no particular order.
    pub fn owners(&self) -> impl Iterator<Item = (CompartmentId, &Terminal)> {
        self.owners.iter().map(|(c, o)| (*c, &o.terminal))
    }

    /// Compartments held.
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    /// Whether `terminal` has a registration the proxy remembers (until it
    /// expires, is removed, or its terminal is forgotten).
    pub fn is_registered(&self, terminal: &Terminal) -> bool {
        self.registered.contains_key(terminal)
    }

    /// Terminals with a live registration.
    pub fn registered_count(&self) -> usize {
        self.registered.len()
    }

    /// When the next registration runs out.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.expiries.first().map(|(at, _)| *at)
    }

    /// The terminals whose registration has run out at `now`, unregistered.
    pub fn expire(&mut self, now: Instant) -> Vec<Terminal> {
        let mut gone = Vec::new();
        while self.expiries.first().is_some_and(|(at, _)| *at <= now) {
            let Some((_, t)) = self.expiries.pop_first() else { break };
            self.registered.remove(&t);
            gone.push(t);
        }
        gone
    }

    /// A message from the terminal into `c`: whether it uploaded its
    /// bytecode.
    pub fn from_terminal(&mut self, c: CompartmentId, uploaded_bytecode: bool) {
        let Compartments { owners, uploads, .. } = self;
        let Some(o) = owners.get_mut(&c) else { return };
        let counts = (&mut uploads.from_terminals_initial, &mut uploads.from_terminals_again);
        if count_upload(&mut o.terminal_sends, &mut o.proxy_sends, uploaded_bytecode, counts) {
            o.started_over = true;
        }
    }

    /// A message of the proxy's compressed in `c`: whether it uploaded the
    /// proxy's bytecode.
    pub fn to_terminal(&mut self, c: CompartmentId, uploaded_bytecode: bool) {
        let Compartments { owners, uploads, .. } = self;
        let Some(o) = owners.get_mut(&c) else { return };
        let counts = (&mut uploads.to_terminals_initial, &mut uploads.to_terminals_again);
        if count_upload(&mut o.proxy_sends, &mut o.terminal_sends, uploaded_bytecode, counts) {
            o.started_over = true;
        }
    }

    /// The upload counts of every compartment this table has held, open
    /// or closed since.
    pub fn uploads(&self) -> Uploads {
        self.uploads
    }

    /// Open compartments with an upload again, either way.
    pub fn reuploading(&self) -> usize {
        self.owners.values().filter(|o| o.started_over).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Registrations run out in the order of their expiry; a terminal
    /// registering again moves its expiry, and one unregistered has none.
    #[test]
    fn registrations_expire_in_order_of_their_expiry() {
        let now = Instant::now();
        let s = std::time::Duration::from_secs;
        let mut c = Compartments::default();
        let (a, b, d) = (Terminal::Id("a".into()), Terminal::Flow(2), Terminal::Flow(3));
        let until = |at| Registered::new(at, "sip:u@x", 1);
        assert!(c.register(a.clone(), until(now + s(30)), 10));
        assert!(c.register(b.clone(), until(now + s(10)), 10));
        assert!(c.register(d.clone(), until(now + s(20)), 10));
        assert_eq!(c.next_expiry(), Some(now + s(10)));
        // b registers again for longer: d is next.
        assert!(c.register(b.clone(), Registered::new(now + s(40), "sip:b@x", 9), 10));
        assert_eq!(c.registrations().find(|(t, _)| **t == b).map(|(_, r)| (&*r.aor, r.flow)), Some(("sip:b@x", 9)));
        assert_eq!(c.next_expiry(), Some(now + s(20)));
        assert!(c.unregister(&d) && !c.unregister(&d));
        assert_eq!(c.next_expiry(), Some(now + s(30)));
        assert_eq!(c.expire(now + s(35)), vec![a.clone()]);
        assert!(!c.is_registered(&a) && c.is_registered(&b));
        assert_eq!(c.next_expiry(), Some(now + s(40)));
        assert_eq!(c.expire(now + s(40)), vec![b]);
        assert_eq!((c.next_expiry(), c.registered_count()), (None, 0));
    }

    /// An address of record past [`MAX_AOR_LEN`] is not kept.
    #[test]
    fn a_registration_keeps_its_aor_up_to_the_cap() {
        let now = Instant::now();
        assert_eq!(&*Registered::new(now, "sip:alice@example.net", 1).aor, "sip:alice@example.net");
        let long = format!("sip:{}@x", "a".repeat(MAX_AOR_LEN));
        assert_eq!(&*Registered::new(now, &long, 1).aor, "");
    }

    #[test]
    fn the_quoted_via_and_the_escaped_uri_spelling_of_our_id_are_one_name() {
        let id = "urn:uuid:5d5c1f3e-6b7a-4c2e-9f1d-5349474b4954";
        let req = format!(
            "BYE sip:bob@10.0.0.2 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1;branch=z9hG4bK1\r\n\
             Route: <sip:t.1.2@10.0.0.9:5062;lr;comp=sigcomp;sigcomp-id={}>\r\n\
             From: <sip:a@x>;tag=1\r\nTo: <sip:b@x>;tag=2\r\nCall-ID: c\r\nCSeq: 2 BYE\r\nContent-Length: 0\r\n\r\n",
            id.replace(':', "%3A").to_uppercase().replace("URN%3AUUID", "urn%3auuid")
        );
        let m = Message::parse(req.as_bytes()).unwrap();
        assert_eq!(ProxyName::of_request(&m), Some(ProxyName::ours(&format!("\"<{id}>\""))));
        let via = format!("SIP/2.0/UDP 10.0.0.9:5062;branch=z9hG4bKsk0.1{}", ProxyName::ours(id).via_param());
        assert_eq!(ProxyName::from_via(&Via::parse(&via).unwrap()), Some(ProxyName::ours(id)));
    }

    #[test]
    fn a_terminal_gets_a_compartment_per_name_up_to_the_cap() {
        let mut c = Compartments::default();
        let t = Terminal::Id("urn:uuid:1".into());
        let names: Vec<ProxyName> = (0..=NAMES_PER_TERMINAL).map(|i| ProxyName::of_key(&format!("host:{i}"))).collect();
        let (first, none) = c.get(&t, names[0]);
        assert_eq!(none, None);
        assert_eq!(c.get(&t, names[0]), (first, None), "one name, one compartment");
        for &n in &names[1..NAMES_PER_TERMINAL] {
            assert_eq!(c.get(&t, n).1, None);
        }
        // The first name is the one used longest ago once the others are
        // used after it; the name past the cap closes it.
        let (_, over) = c.get(&t, names[NAMES_PER_TERMINAL]);
        assert_eq!(over, Some(first));
        c.forget(first);
        assert_eq!(c.of(&t).len(), NAMES_PER_TERMINAL);
        let other = Terminal::Flow(7);
        assert_ne!(c.get(&other, names[1]).0, c.get(&t, names[1]).0, "terminals never share a compartment");
    }

    #[test]
    fn an_upload_after_the_sender_named_a_state_counts_again() {
        let mut c = Compartments::default();
        let (k, _) = c.get(&Terminal::Flow(1), ProxyName::ours("urn:x:y"));
        c.to_terminal(k, true);
        c.from_terminal(k, true);
        c.from_terminal(k, true);
        assert_eq!(c.uploads().from_terminals_initial, 2, "no state named yet (unacknowledged over UDP)");
        c.from_terminal(k, false);
        c.from_terminal(k, true);
        c.to_terminal(k, false);
        c.to_terminal(k, true);
        let u = c.uploads();
        assert_eq!((u.from_terminals_again, u.to_terminals_initial, u.to_terminals_again), (1, 1, 1));
        assert_eq!(c.reuploading(), 1);
        // A terminal that names a state before the proxy's first message
        // there, and uploads after it (it learned the proxy's parameters),
        // uploads initially.
        let (k, _) = c.get(&Terminal::Flow(2), ProxyName::ours("urn:x:y"));
        c.from_terminal(k, false);
        c.to_terminal(k, true);
        c.from_terminal(k, true);
        assert_eq!(c.uploads().from_terminals_again, 1);
    }
}
