//! Which SIP messages an analysis keeps: those of some calls (Call-ID),
//! of some methods, or both.
//!
//! The filter applies after the capture's own SigComp is decoded (the
//! decoders need every message the endpoints exchanged, to hold the
//! states later messages name) and before the what-if runs, so the
//! simulated endpoints send the kept messages only, as if those were all
//! the flow carried.

use sigkit_sip::Message;

/// Which messages to keep; an empty list keeps every call or method.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Call-IDs to keep, compared byte for byte (RFC 3261 §8.1.1.4: "Call-IDs
    /// are case-sensitive and are simply compared byte-by-byte").
    pub calls: Vec<String>,
    /// Methods to keep: a request's method, or the CSeq method of a
    /// response (RFC 3261 §8.1.1.5 ties a response to its request's
    /// method), so `INVITE` keeps an INVITE and its 100, 180 and 200.
    /// Compared ignoring ASCII case: methods are case-sensitive (§7.1),
    /// but every registered one is upper case, so no two differ by case
    /// alone and `invite` means what it says.
    pub methods: Vec<String>,
}

impl Filter {
    /// A filter that keeps every message.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.methods.is_empty()
    }

    /// Whether the SIP message `sip` passes: its Call-ID is one of
    /// [`Filter::calls`] and its method one of [`Filter::methods`] (each
    /// when given). A message whose headers do not parse passes only an
    /// empty filter.
    pub fn keeps(&self, sip: &[u8]) -> bool {
        if self.is_empty() {
            return true;
        }
        let Ok(m) = Message::parse_headers(sip) else { return false };
        if !self.calls.is_empty() {
            match m.call_id() {
                Ok(id) if self.calls.iter().any(|c| c == id) => {}
                _ => return false,
            }
        }
        if !self.methods.is_empty() {
            let method = match m.method() {
                Some(method) => Some(method),
                None => m.cseq().ok().map(|c| c.method),
            };
            match method {
                Some(method) if self.methods.iter().any(|k| k.eq_ignore_ascii_case(method)) => {}
                _ => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INVITE: &[u8] =
        b"INVITE sip:b@example.com SIP/2.0\r\nCall-ID: abc@h\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n";
    const RINGING: &[u8] = b"SIP/2.0 180 Ringing\r\nCall-ID: abc@h\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n";
    const BYE: &[u8] = b"BYE sip:b@example.com SIP/2.0\r\nCall-ID: abc@h\r\nCSeq: 2 BYE\r\nContent-Length: 0\r\n\r\n";
    const OTHER_CALL: &[u8] =
        b"INVITE sip:b@example.com SIP/2.0\r\nCall-ID: ABC@h\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n";

    #[test]
    fn calls_compare_exactly_and_methods_match_responses_by_cseq() {
        let by_call = Filter { calls: vec!["abc@h".into()], ..Filter::default() };
        assert!(by_call.keeps(INVITE) && by_call.keeps(RINGING) && by_call.keeps(BYE));
        assert!(!by_call.keeps(OTHER_CALL), "Call-IDs are case-sensitive");
        let by_method = Filter { methods: vec!["invite".into()], ..Filter::default() };
        assert!(by_method.keeps(INVITE) && by_method.keeps(RINGING) && by_method.keeps(OTHER_CALL));
        assert!(!by_method.keeps(BYE));
        let both = Filter { calls: vec!["ABC@h".into()], methods: vec!["BYE".into(), "INVITE".into()] };
        assert!(both.keeps(OTHER_CALL) && !both.keeps(INVITE) && !both.keeps(BYE));
        assert!(Filter::default().keeps(b"not SIP"));
        assert!(!by_method.keeps(b"not SIP"));
    }
}
