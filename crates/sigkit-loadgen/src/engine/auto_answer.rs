//! SIPp's `-aa`: "automatic 200 OK answer for INFO, NOTIFY, OPTIONS and
//! UPDATE". Such a request that arrives in a call and matches nothing the
//! call waits for is answered with SIPp's default 200 OK (the request's
//! Via, From, To, Call-ID and CSeq, a Contact, no body: RFC 3261 §8.2.6)
//! and counted in `AutoAnswered`, with a warning as SIPp writes one; the
//! call goes on where it was instead of failing on an unexpected message.

use super::*;

/// The methods `-aa` answers.
const METHODS: [&str; 4] = ["INFO", "NOTIFY", "OPTIONS", "UPDATE"];

/// Whether `-aa` answers `msg`: a request of one of [`METHODS`].
pub(super) fn answers(msg: &Message<'_>) -> bool {
    msg.method().is_some_and(|m| METHODS.iter().any(|a| m.eq_ignore_ascii_case(a)))
}

impl Engine {
    /// Answers `msg`, a request [`answers`] takes, of the call at `slot`,
    /// from `from`, with a 200 OK sent back where it came from; false
    /// when it cannot be answered (no To, From or CSeq to copy), and it
    /// stays unexpected.
    pub(super) fn auto_answer(&mut self, from: SocketAddr, msg: &Message<'_>) -> bool {
        let contact = format!("<sip:{};transport={}>", self.config.local, self.env.transport);
        let Ok(ok) = sigkit_sip::proxy::build_response(msg, 200, "OK", None, &[("Contact", &contact)]) else {
            return false;
        };
        self.outbox.push(from, &ok);
        self.recorder.auto_answered();
        self.warn(|_| "Processing auto_response for unexpected INFO, NOTIFY, OPTIONS or UPDATE\n".into());
        true
    }
}
