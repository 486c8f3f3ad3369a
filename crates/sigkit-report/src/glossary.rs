//! The terms the page uses: each explained at its first use (an
//! `<abbr title>` a reader can hover) and once more in a short glossary at
//! the end, which lists only the terms the page used.

use std::fmt::Write as _;

use crate::page::escape;

/// (term as it appears, what it means). Whole words only, case as given.
const TERMS: &[(&str, &str)] = &[
    ("SIP", "Session Initiation Protocol (RFC 3261): the signalling that sets up and releases calls"),
    ("SIPp", "an open-source SIP traffic generator, used here as the user agent that answers calls"),
    ("UAC", "user agent client: the side that places the calls (sigkit load)"),
    ("UAS", "user agent server: the side that answers them"),
    ("SigComp", "Signalling Compression (RFC 3320): compresses SIP messages between a terminal and its proxy"),
    ("basic", "SigComp mechanism: each message compressed on its own, no state kept between messages"),
    ("static", "SigComp mechanism: the static SIP/SDP dictionary of RFC 3485 primes the compressor"),
    ("dynamic", "SigComp mechanism: earlier messages of the same direction kept as state (RFC 3321) and referred to"),
    ("shared", "SigComp mechanism: dynamic, and the messages received the other way are shared as state too (RFC 3321 §5.2)"),
    ("lzss", "the LZSS compressor (Lempel-Ziv-Storer-Szymanski), sigkit's default"),
    ("DMS", "decompression memory size: the memory a SigComp decompressor offers the compressor, bytes"),
    ("RAN", "radio access network: here its signalling link between terminal and network, of a few kbit/s"),
    ("RTT", "round-trip time of the radio link (latency there and back)"),
    ("eq. 2.1", "equation 2.1 of the SigComp performance thesis: delay = message bytes × 8 / bit rate + RTT/2, per message, added up"),
    ("p50", "50th percentile (median): half the calls took at most this long"),
    ("p95", "95th percentile: 95 % of the calls took at most this long"),
    ("p99", "99th percentile: 99 % of the calls took at most this long"),
    ("set-up delay", "from the INVITE sent to its 200 OK received"),
    ("T1", "the SIP round-trip estimate (500 ms): a request unanswered after T1 is sent again, then after 2·T1, 4·T1, ... (RFC 3261 §17.1.1.2)"),
    ("retransmissions", "messages sent again because no answer came within the SIP timers (T1 doubling)"),
    ("timeouts", "calls given up on a SIP timer (Timer B or F: 64·T1 without a final response) or a scenario's receive timeout"),
    ("5xx", "a final response of class 5 (500-599): the server failed or refused for overload (503)"),
    ("unexpected", "messages that matched no step of their call's scenario; the call fails"),
    ("unfinished", "calls with no final answer when the run ended: lost, though not counted as failed"),
    ("95 % CI", "95 % confidence interval: half its width is given, across the repeated searches"),
    ("fRpD", "final response delay: from a request first sent to its first final response (the SIP overload thesis §2.1.3)"),
    ("goodput", "200 responses received per second: requests served successfully"),
    ("collapsed", "a seed whose share of transactions answered 200 fell under the collapse threshold in the measurement window"),
    ("TAROC", "TCP-Aware RObust Header Compression (draft-ietf-rohc-tcp-taroc-04): compresses TCP/IP headers"),
    ("tps", "transactions per second"),
    ("D1", "the SIP overload thesis's congestion detector on delay (§4.2.2): the 95th percentile of fRpD over the last seconds above a threshold"),
    ("D2", "the SIP overload thesis's congestion detector on pending transactions (§4.2.3): an anomaly indicator from how they grow against the load"),
    ("503", "503 Service Unavailable: the proxy refuses a request it has no capacity for"),
    ("Trying", "the client transaction's state before any response arrived (RFC 3261 §17.1.2)"),
];

/// The terms explained so far on the page.
#[derive(Debug, Default)]
pub(crate) struct Terms {
    seen: Vec<usize>,
}

/// Whether `c` continues a word: a term inside a hyphenated or slashed
/// name ("basic-video-call", "SIP-based") is not the term.
fn is_word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '/'))
}

/// Where `term` first stands as a whole word in `text`.
fn find_word(text: &str, term: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(term).map(|i| i + from) {
        let before = text[..i].chars().next_back();
        let after = text[i + term.len()..].chars().next();
        if !is_word(before) && !is_word(after) && before != Some('&') {
            return Some(i);
        }
        from = i + term.len();
    }
    None
}

impl Terms {
    /// `html` (escaped text, no tags) with the first use on the page of
    /// each term wrapped in an `<abbr>` that says what it means.
    pub fn mark(&mut self, html: &str) -> String {
        let mut hits: Vec<(usize, usize)> = TERMS
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.seen.contains(i))
            .filter_map(|(i, (term, _))| find_word(html, term).map(|at| (at, i)))
            .collect();
        hits.sort();
        let mut out = String::with_capacity(html.len());
        let mut at = 0;
        for (start, i) in hits {
            if start < at {
                continue;
            }
            let (term, meaning) = TERMS[i];
            out.push_str(&html[at..start]);
            let _ = write!(out, "<abbr title=\"{}\">{term}</abbr>", escape(meaning));
            at = start + term.len();
            self.seen.push(i);
        }
        out.push_str(&html[at..]);
        out
    }

    /// The glossary of the terms used, in the order they were met.
    pub fn glossary(&self) -> String {
        if self.seen.is_empty() {
            return String::new();
        }
        let mut out = String::from("<h2 id=\"glossary\">Terms</h2><dl class=\"glossary\">");
        for &i in &self.seen {
            let (term, meaning) = TERMS[i];
            let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", escape(term), escape(meaning));
        }
        out.push_str("</dl>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_term_is_explained_once_at_its_first_use() {
        let mut t = Terms::default();
        let a = t.mark("fRpD p95, s; SIPp is not SIP");
        assert!(a.starts_with("<abbr title=\"final response delay"), "{a}");
        assert!(a.contains("<abbr title=\"95th percentile"), "{a}");
        // SIPp and SIP are two terms; neither is found inside the other.
        assert!(a.contains(">SIPp</abbr> is not <abbr"), "{a}");
        assert_eq!(t.mark("basic-video-call, SIP-based"), "basic-video-call, SIP-based");
        let b = t.mark("fRpD again");
        assert_eq!(b, "fRpD again");
        let g = t.glossary();
        assert_eq!(g.matches("<dt>").count(), 4, "{g}");
        assert!(g.contains("<dt>fRpD</dt>"));
    }
}
