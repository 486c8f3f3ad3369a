//! Which remote application a message belongs to, for the choice of SigComp
//! compartment (RFC 5049 §6.1), and how long such a compartment lives (§6.4-6.6).

use crate::message::{HeaderName, Message};
use crate::name_addr::Contacts;
use crate::proxy::is_dialog_forming;

/// The SigComp identifier of the sender of an incoming request (RFC 5049 §6.1,
/// "Incoming requests"): the `sigcomp-id` parameter of the top Via, without its
/// quotes and angle brackets; failing that, the `+sip.instance` parameter of
/// the first Contact (§6.1: a device with a globally unique instance identifier
/// SHOULD use it as its SigComp identifier, and a URI associated with an
/// instance identifier carries no `sigcomp-id`). `None` when neither is
/// present: a legacy application, identified by its sent-by
/// ([`remote_application_id`]).
///
/// For responses the identifier is the one of the request that started the
/// transaction (§6.1, "Incoming responses"); the proxy keeps it with the transaction.
pub fn sigcomp_id<'a>(msg: &Message<'a>) -> Option<&'a str> {
    if let Some(id) = msg.top_via().ok().and_then(|v| v.sigcomp_id()) {
        return Some(id);
    }
    match msg.contacts() {
        Ok(Contacts::List(list)) => list.first().and_then(|c| c.instance()),
        _ => None,
    }
}

/// The remote application of an incoming request (RFC 5049 §6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RemoteId<'a> {
    /// A SigComp identifier or instance identifier (URN), from [`sigcomp_id`].
    Urn(&'a str),
    /// A legacy application: the top Via's sent-by.
    SentBy {
        /// sent-by host (IPv6 without brackets).
        host: &'a str,
        /// sent-by port, if given.
        port: Option<u16>,
    },
}

/// [`sigcomp_id`], else the top Via's sent-by (RFC 5049 §6.1: "to support legacy
/// SIP/SigComp applications"); `None` without a parsable Via.
pub fn remote_application_id<'a>(msg: &Message<'a>) -> Option<RemoteId<'a>> {
    if let Some(id) = sigcomp_id(msg) {
        return Some(RemoteId::Urn(id));
    }
    let via = msg.top_via().ok()?;
    Some(RemoteId::SentBy { host: via.host_addr(), port: via.port })
}

/// How long the compartment opened for a message should live (RFC 5049 §6.3-6.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Until the transaction ends (§6.4): every compressed request.
    Transaction,
    /// Until the registration ends (§6.5): a 2xx to REGISTER (Path / Service-Route).
    Registration,
    /// Until the dialog ends (§6.6): a 1xx (with To tag) or 2xx to a dialog-forming request.
    Dialog,
}

/// The lifetime §6.4-6.6 give the compartment of a message's remote application.
/// (§6.3: a compartment already open for the same identifier is reused, and
/// closed only when its longest use ends; that bookkeeping is the proxy's.)
pub fn compartment_lifetime(msg: &Message<'_>) -> Lifetime {
    let Some(code) = msg.status_code() else { return Lifetime::Transaction };
    let Ok(cseq) = msg.cseq() else { return Lifetime::Transaction };
    if (200..300).contains(&code) && cseq.method == "REGISTER" {
        return Lifetime::Registration;
    }
    let has_to_tag = msg.to().is_ok_and(|t| t.tag().is_some());
    let dialog_response = (200..300).contains(&code) || (101..200).contains(&code) && has_to_tag;
    if dialog_response && is_dialog_forming(cseq.method) && msg.header(HeaderName::To).is_some() {
        return Lifetime::Dialog;
    }
    Lifetime::Transaction
}

/// The identifier the sender of a request used for the element it sent the
/// request to (RFC 5049 §6.1, "Outgoing requests", read at that element):
/// the first Route entry's URI when there is a Route (the request goes to
/// it, RFC 3261 §16.12), else the Request-URI; its `sigcomp-id` when it has
/// one, else its host. A SigComp sender keeps one compartment per such
/// identifier, so the element that receives the request must file its state
/// under the same one ([`identifier_key`] makes two spellings comparable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NextHopId<'a> {
    /// A `sigcomp-id` URI parameter, escaped as on the wire.
    SigcompId(&'a str),
    /// The URI's host (IPv6 without brackets).
    Host(&'a str),
}

impl<'a> NextHopId<'a> {
    /// The identifier of a URI (§6.1: its `sigcomp-id`, else its host).
    pub fn of_uri(uri: &crate::Uri<'a>) -> NextHopId<'a> {
        match uri.sigcomp_id() {
            Some(id) if !id.is_empty() => NextHopId::SigcompId(id),
            _ => NextHopId::Host(uri.host_addr()),
        }
    }

    /// A comparable form: `id:` and [`identifier_key`] of a `sigcomp-id`,
    /// `host:` and the lower-cased host.
    pub fn key(&self) -> String {
        match self {
            NextHopId::SigcompId(id) => format!("id:{}", identifier_key(id)),
            NextHopId::Host(h) => format!("host:{}", h.to_ascii_lowercase()),
        }
    }
}

/// [`NextHopId`] of a request; `None` for a response or a request whose
/// first Route (or Request-URI, without a Route) is not a SIP URI.
pub fn next_hop_id<'a>(msg: &Message<'a>) -> Option<NextHopId<'a>> {
    if !msg.is_request() {
        return None;
    }
    let routes = msg.routes().ok()?;
    let uri = match routes.first() {
        Some(route) => route.sip_uri().ok()?,
        None => msg.request_uri().ok()?,
    };
    Some(NextHopId::of_uri(&uri))
}

/// A SigComp identifier in a form two spellings of the same identifier share
/// (RFC 5049 §6.2): quotes and angle brackets off (the Via form, §6.1),
/// `%xx` escapes decoded (the URI-parameter form), and the letters that URN
/// equality ignores lower-cased: `urn` and the namespace identifier (RFC 2141
/// §5), and a whole UUID URN (RFC 4122 §3: its hex digits are
/// case-insensitive).
pub fn identifier_key(raw: &str) -> String {
    let v = raw.trim();
    let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
    let v = v.strip_prefix('<').and_then(|v| v.strip_suffix('>')).unwrap_or(v);
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    let mut s = String::from_utf8_lossy(&out).into_owned();
    if s.get(..9).is_some_and(|p| p.eq_ignore_ascii_case("urn:uuid:")) {
        s.make_ascii_lowercase();
    } else if s.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("urn:")) {
        let nid_end = s[4..].find(':').map_or(s.len(), |i| i + 4);
        s[..nid_end].make_ascii_lowercase();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_via_and_a_uri_spelling_of_one_identifier_have_one_key() {
        let via = "\"<urn:uuid:0C67446E-F1A1-11D9-94D3-000A95A0E128>\"";
        let uri = "urn%3auuid%3a0c67446e-f1a1-11d9-94d3-000a95a0e128";
        assert_eq!(identifier_key(via), identifier_key(uri));
        assert_eq!(identifier_key("URN:Example:AbC"), "urn:example:AbC");
        assert_ne!(identifier_key("urn:example:abc"), identifier_key("urn:example:ABC"));
        // A stray `%` is kept as it is.
        assert_eq!(identifier_key("urn:x:%zz%4"), "urn:x:%zz%4");
    }

    #[test]
    fn the_next_hop_is_the_first_route_else_the_request_uri() {
        let req = |route: &str| {
            format!(
                "MESSAGE sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1;branch=z9hG4bK1\r\n{route}\
                 From: <sip:a@example.com>;tag=1\r\nTo: <sip:bob@example.com>\r\nCall-ID: c\r\nCSeq: 1 MESSAGE\r\n\
                 Content-Length: 0\r\n\r\n"
            )
        };
        let plain = req("");
        let m = Message::parse(plain.as_bytes()).unwrap();
        assert_eq!(next_hop_id(&m), Some(NextHopId::Host("example.com")));
        let by_host = req("Route: <sip:P.Example.com:5062;lr;comp=sigcomp>\r\n");
        let m = Message::parse(by_host.as_bytes()).unwrap();
        assert_eq!(next_hop_id(&m).map(|n| n.key()), Some("host:p.example.com".to_string()));
        let by_id =
            req("Route: <sip:[::1]:5062;lr;comp=sigcomp;sigcomp-id=urn%3auuid%3aAB>, <sip:x.example.com;lr>\r\n");
        let m = Message::parse(by_id.as_bytes()).unwrap();
        assert_eq!(next_hop_id(&m), Some(NextHopId::SigcompId("urn%3auuid%3aAB")));
        assert_eq!(next_hop_id(&m).map(|n| n.key()), Some("id:urn:uuid:ab".to_string()));
        let v6 = req("Route: <sip:[::1]:5062;lr>\r\n");
        let m = Message::parse(v6.as_bytes()).unwrap();
        assert_eq!(next_hop_id(&m), Some(NextHopId::Host("::1")));
    }
}
