//! Overload-control parameters of the topmost Via of a response: the SIP
//! overload thesis's `oc_t1` / `oc_t1_validity` (§4.3.2, Listings 4.2 and
//! 4.3) and RFC 7339's `oc`, `oc-validity`, `oc-seq`, `oc-algo`.
//!
//! Times are in milliseconds, as `oc-validity` is (RFC 7339 §4) and as
//! Listing 4.3 writes `oc-t1=1000`. The thesis spells the names both with
//! underscores (Listing 4.2) and with hyphens (Listing 4.3); these are
//! written with underscores and read in either spelling.

/// H1's signal: "use T1 = `t1_ms` toward me for `validity_ms`".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct T1Signal {
    /// The retransmission timer T1 (RFC 3261 §17.1.1.1) to use toward the
    /// sender, in ms (`oc_t1`, above 0).
    pub t1_ms: u32,
    /// How long the raised T1 holds, in ms (`oc_t1_validity`).
    pub validity_ms: u32,
}

impl T1Signal {
    /// The Via parameters, each with its leading `;`.
    pub fn to_params(&self) -> String {
        format!(";oc_t1={};oc_t1_validity={}", self.t1_ms, self.validity_ms)
    }

    /// Reads the signal from a Via's parameters (name, value). Without
    /// `oc_t1` there is none; without a validity the raise is not applied
    /// (the thesis resets T1 when the validity ends, so one must be given);
    /// `oc_t1` of 0 is no signal.
    pub fn from_params<'a>(params: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Option<T1Signal> {
        let (mut t1, mut validity) = (None, None);
        for (name, value) in params {
            let value = value.and_then(|v| v.parse::<u32>().ok());
            match name.to_ascii_lowercase().replace('-', "_").as_str() {
                "oc_t1" => t1 = value,
                "oc_t1_validity" => validity = value,
                _ => {}
            }
        }
        let t1_ms = t1.filter(|&t| t > 0)?;
        Some(T1Signal { t1_ms, validity_ms: validity? })
    }
}

/// RFC 7339 loss-based overload control: reject `oc` percent of new
/// requests for `validity_ms` (RFC 7339 §5.10.1, §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OcSignal {
    /// Percentage of new requests to reject, 0..=100 (`oc`, RFC 7339 §5.10.1).
    pub oc: u8,
    /// How long `oc` holds, in ms (`oc-validity`, RFC 7339 §4).
    pub validity_ms: u32,
    /// The sequence number that orders the sender's signals (`oc-seq`, its
    /// integer part; RFC 7339 §4).
    pub seq: u64,
}

impl OcSignal {
    /// The Via parameters, each with its leading `;` (RFC 7339 §4).
    pub fn to_params(&self) -> String {
        format!(";oc={};oc-validity={};oc-seq={};oc-algo=\"loss\"", self.oc, self.validity_ms, self.seq)
    }

    /// Reads the signal; None without a valid `oc` (0..=100) or when
    /// `oc-algo` names an algorithm other than loss. A missing
    /// `oc-validity` takes RFC 7339's default of 2000 ms (§5.2).
    pub fn from_params<'a>(params: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> Option<OcSignal> {
        let (mut oc, mut validity, mut seq, mut algo) = (None, None, None, None);
        for (name, value) in params {
            match name.to_ascii_lowercase().as_str() {
                "oc" => oc = value.and_then(|v| v.parse::<u8>().ok()),
                "oc-validity" => validity = value.and_then(|v| v.parse::<u32>().ok()),
                "oc-seq" => seq = value.and_then(|v| v.split('.').next()?.parse::<u64>().ok()),
                "oc-algo" => algo = value.map(|v| v.trim_matches('"').to_ascii_lowercase()),
                _ => {}
            }
        }
        if algo.as_deref().is_some_and(|a| !a.split(',').any(|a| a.trim() == "loss")) {
            return None;
        }
        let oc = oc.filter(|&oc| oc <= 100)?;
        Some(OcSignal { oc, validity_ms: validity.unwrap_or(2000), seq: seq.unwrap_or(0) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(&str, Option<&str>)> {
        text.split(';')
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (p, None),
            })
            .collect()
    }

    #[test]
    fn t1_signal_round_trips_and_reads_the_hyphenated_spelling() {
        let s = T1Signal { t1_ms: 1000, validity_ms: 60000 };
        assert_eq!(s.to_params(), ";oc_t1=1000;oc_t1_validity=60000");
        assert_eq!(T1Signal::from_params(pairs(&s.to_params())), Some(s));
        // Listing 4.3's spelling.
        assert_eq!(T1Signal::from_params(pairs(";branch=z9hG4bKnvzhgd4;oc-t1=1000;oc-t1-validity=60000")), Some(s));
        assert_eq!(T1Signal::from_params(pairs(";oc_t1=1000")), None);
        assert_eq!(T1Signal::from_params(pairs(";oc_t1=0;oc_t1_validity=5")), None);
        assert_eq!(T1Signal::from_params(pairs(";oc_t1=x;oc_t1_validity=5")), None);
    }

    #[test]
    fn oc_signal_round_trips() {
        let s = OcSignal { oc: 40, validity_ms: 2000, seq: 17 };
        assert_eq!(s.to_params(), ";oc=40;oc-validity=2000;oc-seq=17;oc-algo=\"loss\"");
        assert_eq!(OcSignal::from_params(pairs(&s.to_params())), Some(s));
        assert_eq!(OcSignal::from_params(pairs(";oc=101")), None);
        assert_eq!(OcSignal::from_params(pairs(";oc=10;oc-algo=\"rate\"")), None);
        assert_eq!(OcSignal::from_params(pairs(";oc=10")), Some(OcSignal { oc: 10, validity_ms: 2000, seq: 0 }));
        assert_eq!(OcSignal::from_params(pairs(";oc=10;oc-seq=1282321615.782")).map(|s| s.seq), Some(1282321615));
    }
}
