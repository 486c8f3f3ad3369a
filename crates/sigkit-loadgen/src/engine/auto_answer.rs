//! SIPp's `-aa`: "automatic 200 OK answer for INFO, NOTIFY, OPTIONS and
//! UPDATE". Such a request that arrives in a call and matches nothing the
//! call waits for is answered with SIPp's default 200 OK (the request's
//! Via, From, To, Call-ID and CSeq, a Contact, no body: RFC 3261 §8.2.6)
//! and counted in `AutoAnswered`, with a warning as SIPp writes one; the
//! call goes on where it was instead of failing on an unexpected message.
//! One for no call is answered too, as SIPp 3.6 answers it, instead of
//! being discarded as out of call (SIPp counts that one twice in
//! `AutoAnswered`; sigkit once).

use super::*;

/// The methods `-aa` answers.
const METHODS: [&str; 4] = ["INFO", "NOTIFY", "OPTIONS", "UPDATE"];

/// Whether `-aa` answers `msg`: a request of one of [`METHODS`].
pub(super) fn answers(msg: &Message<'_>) -> bool {
    msg.method().is_some_and(|m| METHODS.iter().any(|a| m.eq_ignore_ascii_case(a)))
}

impl Engine {
    /// Answers `msg`, a request [`answers`] takes, from `from`, with a
    /// 200 OK sent back where it came from (the caller writes the warning
    /// for one out of call); false
    /// when it cannot be answered (no To, From or CSeq to copy), and it
    /// stays unexpected.
    pub(super) fn auto_answer(&mut self, from: SocketAddr, msg: &Message<'_>) -> bool {
        let contact = format!("<sip:{};transport={}>", self.config.local, self.env.transport);
        let Ok(ok) = sigkit_sip::proxy::build_response(msg, 200, "OK", None, &[("Contact", &contact)]) else {
            return false;
        };
        self.outbox.push(from, &ok);
        self.recorder.auto_answered();
        true
    }

    /// Answers `msg`, for no call (its Call-ID `call_id`), if [`answers`]
    /// takes it, with SIPp's warning; whether it did.
    pub(super) fn auto_answer_out_of_call(&mut self, from: SocketAddr, msg: &Message<'_>, call_id: &str) -> bool {
        if !answers(msg) || !self.auto_answer(from, msg) {
            return false;
        }
        self.warn(|_| {
            format!("Automatic response mode for an unexpected INFO, NOTIFY, OPTIONS or UPDATE for call: {call_id}")
        });
        true
    }
}
