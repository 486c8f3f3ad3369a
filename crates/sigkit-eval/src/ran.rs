//! The RAN-delay study of the SigComp performance thesis (§2.1
//! and §9.10): how long a call's session-establishment messages take over
//! the radio access network's signalling link, uncompressed and with
//! SigComp, at the bit rates a UMTS network may give signalling.
//!
//! The thesis's model (its equation 2.1), per message:
//!
//! ```text
//! one-way RAN delay = size [bits] / link speed [bits/s] + RTT / 2
//! ```
//!
//! summed over the messages, with an RTT of 70 ms and no lower-layer
//! overhead. Its Figure 53 gives SigComp's improvement as 6.9 s at 9.6
//! kbps (about 70 %), 1.0 s at 64 kbps and 0.26 s at 256 kbps (about
//! 20 %), for the 3GPP release 5 session establishment it compressed
//! over a reliable transport with DMS 8192, the whole static dictionary
//! and shared states of at most 1500 bytes.

use std::time::Duration;

use serde::Serialize;

/// The signalling link bit rates of the thesis's Figures 2 and 53, kbps.
pub const THESIS_RATES_KBPS: [f64; 7] = [9.6, 12.2, 16.0, 32.0, 64.0, 128.0, 256.0];

/// The signalling link's round-trip time the thesis assumes (RFC 3322).
pub const THESIS_RTT: Duration = Duration::from_millis(70);

/// The thesis's published improvements (Figure 53 and §9.10's text):
/// (kbps, improvement in seconds, improvement in percent where it gives
/// one).
pub const THESIS_IMPROVEMENT: [(f64, f64, Option<f64>); 3] =
    [(9.6, 6.9, Some(70.0)), (64.0, 1.0, None), (256.0, 0.26, Some(20.0))];

/// The thesis's uncompressed one-way RAN delay at 9.6 kbps (§2.1).
pub const THESIS_UNCOMPRESSED_9K6_S: f64 = 9.7;

/// The one-way RAN delay of messages of `sizes` bytes over a link of
/// `kbps` with `rtt` (equation 2.1, summed), seconds.
pub fn one_way_delay(sizes: &[usize], kbps: f64, rtt: Duration) -> f64 {
    let bits: usize = sizes.iter().map(|s| s * 8).sum();
    bits as f64 / (kbps * 1000.0) + sizes.len() as f64 * rtt.as_secs_f64() / 2.0
}

/// One bit rate of the study.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RanRow {
    pub kbps: f64,
    pub messages: usize,
    pub sip_bytes: usize,
    pub sigcomp_bytes: usize,
    pub sip_delay_s: f64,
    pub sigcomp_delay_s: f64,
    pub improvement_s: f64,
    pub improvement_pct: f64,
    /// The thesis's improvement at this rate, where it gives one.
    pub thesis_improvement_s: Option<f64>,
    pub thesis_improvement_pct: Option<f64>,
}

/// The study for messages of `sip` bytes that SigComp sent as `sigcomp`
/// bytes (the same messages, in order), at each of `rates`.
pub fn study(sip: &[usize], sigcomp: &[usize], rates: &[f64], rtt: Duration) -> Vec<RanRow> {
    rates
        .iter()
        .map(|&kbps| {
            let (u, c) = (one_way_delay(sip, kbps, rtt), one_way_delay(sigcomp, kbps, rtt));
            let thesis = THESIS_IMPROVEMENT.iter().find(|t| (t.0 - kbps).abs() < 1e-9);
            RanRow {
                kbps,
                messages: sip.len(),
                sip_bytes: sip.iter().sum(),
                sigcomp_bytes: sigcomp.iter().sum(),
                sip_delay_s: u,
                sigcomp_delay_s: c,
                improvement_s: u - c,
                improvement_pct: if u > 0.0 { (u - c) / u * 100.0 } else { 0.0 },
                thesis_improvement_s: thesis.map(|t| t.1),
                thesis_improvement_pct: thesis.and_then(|t| t.2),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equation_2_1_adds_serialisation_and_half_the_rtt_per_message() {
        // 1200 bytes at 9.6 kbps: 1 s, plus 35 ms.
        let d = one_way_delay(&[1200], 9.6, THESIS_RTT);
        assert!((d - 1.035).abs() < 1e-9, "{d}");
        // The thesis's 10,640 bytes of Table 3 in 12 messages at 9.6 kbps:
        // 8.87 s + 0.42 s, near its 9.7 s.
        let sizes = vec![10_640 / 12; 12];
        let d = one_way_delay(&sizes, 9.6, THESIS_RTT);
        assert!((d - THESIS_UNCOMPRESSED_9K6_S).abs() < 0.5, "{d}");
    }

    #[test]
    fn compression_helps_most_on_the_slowest_link() {
        let sip = vec![900; 12];
        let sigcomp = vec![250; 12];
        let rows = study(&sip, &sigcomp, &THESIS_RATES_KBPS, THESIS_RTT);
        for w in rows.windows(2) {
            assert!(w[0].improvement_pct > w[1].improvement_pct);
            assert!(w[0].sip_delay_s > w[1].sip_delay_s);
        }
        assert_eq!(rows[0].thesis_improvement_s, Some(6.9));
        assert_eq!(rows[1].thesis_improvement_s, None);
    }
}
