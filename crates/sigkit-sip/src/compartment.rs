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
