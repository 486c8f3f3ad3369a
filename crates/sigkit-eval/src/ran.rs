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
//! overhead (no IP, transport or radio framing, no bearer set-up: §2.1
//! leaves them out). [`measure`] checks the sum over an emulated link
//! ([`crate::link`]) with real UDP sockets. Its Figure 53 gives SigComp's improvement as 6.9 s at 9.6
//! kbps (about 70 %), 1.0 s at 64 kbps and 0.26 s at 256 kbps (about
//! 20 %), for the 3GPP release 5 session establishment it compressed
//! over a reliable transport with DMS 8192, the whole static dictionary
//! and shared states of at most 1500 bytes.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::Serialize;
use sigcomp::{Params, Transport};
use sigcomp_compress::Config;
use tokio::net::UdpSocket;

use crate::corpus::{FlowMessage, Side};
use crate::flow::{self, FlowError};
use crate::link::{LinkConfig, LinkRelay};

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

/// The thesis's Table 3 ("SIP messages"): the mobile-originated session
/// establishment of a release 5 network (3GPP TS 24.228), message and
/// uncompressed size in bytes, 10,640 bytes in all. Its Figure 2 is
/// equation 2.1 over these sizes.
pub const THESIS_TABLE3: [(&str, usize); 12] = [
    ("INVITE", 1437),
    ("100 Trying", 254),
    ("183 Session Progress", 1440),
    ("PRACK", 1318),
    ("200 OK", 904),
    ("UPDATE", 1291),
    ("200 OK", 865),
    ("180 Ringing", 563),
    ("PRACK", 717),
    ("200 OK", 260),
    ("200 OK", 1133),
    ("ACK", 458),
];

/// The thesis's Figure 2 at `kbps`: equation 2.1 over its Table 3 with
/// `rtt`, seconds. The figure's plotted values are not in the text; this
/// recomputes them from the figure's own inputs.
pub fn thesis_figure2(kbps: f64, rtt: Duration) -> f64 {
    let sizes: Vec<usize> = THESIS_TABLE3.iter().map(|m| m.1).collect();
    one_way_delay(&sizes, kbps, rtt)
}

/// Equation 2.1 per message: each message's one-way RAN delay, seconds.
pub fn per_message_delays(sizes: &[usize], kbps: f64, rtt: Duration) -> Vec<f64> {
    sizes.iter().map(|&s| one_way_delay(&[s], kbps, rtt)).collect()
}

/// The one-way RAN delay of messages of `sizes` bytes over a link of
/// `kbps` with `rtt` (equation 2.1, summed), seconds.
pub fn one_way_delay(sizes: &[usize], kbps: f64, rtt: Duration) -> f64 {
    let bits: usize = sizes.iter().map(|s| s * 8).sum();
    bits as f64 / (kbps * 1000.0) + sizes.len() as f64 * rtt.as_secs_f64() / 2.0
}

/// One bit rate of the study.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RanRow {
    /// The signalling link's bit rate, kbit/s (the thesis's Figures 2 and 53
    /// use [`THESIS_RATES_KBPS`]).
    pub kbps: f64,
    /// Messages in the call (12 for the thesis's Table 3 session establishment).
    pub messages: usize,
    /// Bytes of every message uncompressed, as SIP.
    pub sip_bytes: usize,
    /// Bytes of every message as the SigComp messages that carried them (RFC 3320
    /// §7 headers and any bytecode included).
    pub sigcomp_bytes: usize,
    /// The call's one-way RAN delay uncompressed by equation 2.1, summed over its
    /// messages, seconds.
    pub sip_delay_s: f64,
    /// The call's one-way RAN delay with SigComp by equation 2.1, seconds.
    pub sigcomp_delay_s: f64,
    /// `sip_delay_s - sigcomp_delay_s`: the delay SigComp saves, seconds.
    pub improvement_s: f64,
    /// `improvement_s` as a percentage of `sip_delay_s` (0 when that is 0); the
    /// thesis's Figure 53 gives about 70 % at 9.6 kbps.
    pub improvement_pct: f64,
    /// The thesis's improvement at this rate, where it gives one.
    pub thesis_improvement_s: Option<f64>,
    /// The thesis's improvement at this rate as a percentage, where §9.10's text
    /// gives one (9.6 and 256 kbps).
    pub thesis_improvement_pct: Option<f64>,
    /// The thesis's uncompressed delay at this rate (Figure 2, recomputed
    /// from its Table 3 with the same RTT).
    pub thesis_sip_delay_s: f64,
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
                thesis_sip_delay_s: thesis_figure2(kbps, rtt),
            }
        })
        .collect()
}

/// A call as the study sends it: each message's sender, name, SIP bytes
/// and the SigComp message that carried it.
#[derive(Debug, Clone, PartialEq)]
pub struct RanCall {
    /// The call's messages in the order they were sent.
    pub messages: Vec<RanMessage>,
}

/// One message of a [`RanCall`].
#[derive(Debug, Clone, PartialEq)]
pub struct RanMessage {
    /// Its name as the corpus flow gives it ("INVITE", "183 Session Progress").
    pub name: String,
    /// The endpoint that sent it: the terminal (UE) or the P-CSCF.
    pub sender: Side,
    /// The SIP message, uncompressed.
    pub sip: Vec<u8>,
    /// The SigComp message that carried it, as it went on the wire.
    pub sigcomp: Vec<u8>,
}

impl RanCall {
    /// Runs `messages` between two in-process endpoints ([`flow::run`]) over
    /// a reliable transport, as the thesis's §9.10 compressed them (its
    /// other settings, DMS 8192, the whole static dictionary and shared
    /// states, are `params` and `config`'s defaults).
    pub fn compress(messages: &[FlowMessage], params: Params, config: Config) -> Result<RanCall, FlowError> {
        let reliable = Config { transport: Transport::Stream, ..config };
        let report = flow::run(messages, params, reliable)?;
        Ok(RanCall {
            messages: messages
                .iter()
                .zip(report.wire)
                .map(|(m, (sender, wire))| RanMessage {
                    name: m.name.clone(),
                    sender,
                    sip: m.bytes.clone(),
                    sigcomp: wire,
                })
                .collect(),
        })
    }

    /// Each message's size uncompressed, bytes, in call order.
    pub fn sip_sizes(&self) -> Vec<usize> {
        self.messages.iter().map(|m| m.sip.len()).collect()
    }

    /// Each message's size as SigComp sent it, bytes, in call order.
    pub fn sigcomp_sizes(&self) -> Vec<usize> {
        self.messages.iter().map(|m| m.sigcomp.len()).collect()
    }

    /// The study at each of `rates` (equation 2.1).
    pub fn study(&self, rates: &[f64], rtt: Duration) -> Vec<RanRow> {
        study(&self.sip_sizes(), &self.sigcomp_sizes(), rates, rtt)
    }

    /// Each message's delay at `kbps` (equation 2.1).
    pub fn per_message(&self, kbps: f64, rtt: Duration) -> Vec<MessageDelay> {
        self.messages
            .iter()
            .map(|m| MessageDelay {
                name: m.name.clone(),
                direction: m.sender.direction(),
                sip_bytes: m.sip.len(),
                sigcomp_bytes: m.sigcomp.len(),
                sip_delay_s: one_way_delay(&[m.sip.len()], kbps, rtt),
                sigcomp_delay_s: one_way_delay(&[m.sigcomp.len()], kbps, rtt),
            })
            .collect()
    }
}

/// One message of the call at one bit rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageDelay {
    /// The message's name as the corpus flow gives it.
    pub name: String,
    /// "ue->pcscf" or "pcscf->ue" (`Side::direction`).
    pub direction: &'static str,
    /// Its size uncompressed, bytes.
    pub sip_bytes: usize,
    /// Its size as SigComp sent it, bytes.
    pub sigcomp_bytes: usize,
    /// Equation 2.1 for it uncompressed at this rate: serialisation plus RTT/2,
    /// seconds.
    pub sip_delay_s: f64,
    /// Equation 2.1 for its SigComp message at this rate, seconds.
    pub sigcomp_delay_s: f64,
}

/// How [`measure`] runs the emulated link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasureSettings {
    /// The signalling link's RTT; each direction's latency is RTT/2, as
    /// in equation 2.1.
    pub rtt: Duration,
    /// Time runs this many times faster on the link (see
    /// [`LinkConfig::scaled`]); measured times are scaled back. 1 is real
    /// time.
    pub time_scale: f64,
    /// Loss probability of each direction; a lost message is sent again
    /// (see [`measure_call`]).
    pub loss: f64,
    /// Seed of the link's loss draws (the downlink's is derived from it), so a
    /// lossy run repeats.
    pub seed: u64,
}

impl Default for MeasureSettings {
    fn default() -> Self {
        MeasureSettings { rtt: THESIS_RTT, time_scale: 1.0, loss: 0.0, seed: 1 }
    }
}

/// One message's measured crossing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredMessage {
    /// From the first send to the arrival, seconds (scaled back).
    pub delay_s: f64,
    /// Times it was sent again after a loss.
    pub retransmissions: u32,
}

/// One bit rate measured: the call uncompressed and with SigComp over the
/// emulated link, beside equation 2.1.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredRow {
    /// The signalling link's bit rate, kbit/s.
    pub kbps: f64,
    /// The call uncompressed over the emulated link: the sum of its messages'
    /// measured delays, seconds (scaled back to real time).
    pub sip_delay_s: f64,
    /// The call with SigComp over the emulated link, summed likewise, seconds.
    pub sigcomp_delay_s: f64,
    /// `(sip_delay_s - sigcomp_delay_s) / sip_delay_s` in percent (0 when the SIP
    /// delay is 0).
    pub improvement_pct: f64,
    /// Equation 2.1 for the same messages.
    pub sip_calculated_s: f64,
    /// Equation 2.1 for the SigComp messages, seconds.
    pub sigcomp_calculated_s: f64,
    /// Each uncompressed message's measured crossing, in call order.
    pub sip_messages: Vec<MeasuredMessage>,
    /// Each SigComp message's measured crossing, in call order.
    pub sigcomp_messages: Vec<MeasuredMessage>,
}

/// Sends `messages` (sender, bytes) in order over a [`LinkRelay`] of
/// `kbps` between two UDP sockets on 127.0.0.1, the terminal's and the
/// P-CSCF's, each message once the one before it has arrived (the order
/// in which the thesis sums the messages' delays), and returns the real
/// arrival delays. A message not arrived after twice its expected crossing
/// time (plus 50 ms of slack) is taken as lost and sent again.
pub async fn measure_call(
    messages: &[(Side, Vec<u8>)],
    kbps: f64,
    settings: &MeasureSettings,
) -> io::Result<Vec<MeasuredMessage>> {
    let localhost = SocketAddr::from(([127, 0, 0, 1], 0));
    let link = LinkConfig {
        loss: settings.loss,
        seed: settings.seed,
        ..LinkConfig::new(kbps, settings.rtt / 2).scaled(settings.time_scale)
    };
    let downlink = LinkConfig { seed: settings.seed ^ 0x5eed, ..link };
    let ue = UdpSocket::bind(localhost).await?;
    let pcscf = UdpSocket::bind(localhost).await?;
    let relay = LinkRelay::start(localhost, localhost, pcscf.local_addr()?, link, downlink).await?;
    let mut out = Vec::with_capacity(messages.len());
    let mut buf = vec![0u8; 65_536];
    for (sender, bytes) in messages {
        let (tx, rx, to) = match sender {
            Side::Ue => (&ue, &pcscf, relay.terminal_side()),
            Side::Pcscf => (&pcscf, &ue, relay.network_side()),
        };
        let expected = link.serialization(bytes.len()) + link.latency;
        let wait = expected * 2 + Duration::from_millis(50);
        let started = Instant::now();
        let mut retransmissions = 0u32;
        tx.send_to(bytes, to).await?;
        let arrived = loop {
            match tokio::time::timeout(wait, rx.recv_from(&mut buf)).await {
                Ok(Ok((n, _))) if buf[..n] == bytes[..] => break Instant::now(),
                // A late copy of an earlier message.
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) if retransmissions < 10 => {
                    retransmissions += 1;
                    tx.send_to(bytes, to).await?;
                }
                Err(_) => return Err(io::Error::new(io::ErrorKind::TimedOut, "a message was lost 11 times")),
            }
        };
        let delay_s = (arrived - started).as_secs_f64() * settings.time_scale;
        out.push(MeasuredMessage { delay_s, retransmissions });
    }
    Ok(out)
}

/// Measures `call` uncompressed and with SigComp at each of `rates`.
pub async fn measure(call: &RanCall, rates: &[f64], settings: &MeasureSettings) -> io::Result<Vec<MeasuredRow>> {
    let sip: Vec<(Side, Vec<u8>)> = call.messages.iter().map(|m| (m.sender, m.sip.clone())).collect();
    let sigcomp: Vec<(Side, Vec<u8>)> = call.messages.iter().map(|m| (m.sender, m.sigcomp.clone())).collect();
    let mut rows = Vec::with_capacity(rates.len());
    for &kbps in rates {
        let sip_messages = measure_call(&sip, kbps, settings).await?;
        let sigcomp_messages = measure_call(&sigcomp, kbps, settings).await?;
        let total = |m: &[MeasuredMessage]| m.iter().map(|m| m.delay_s).sum::<f64>();
        let (u, c) = (total(&sip_messages), total(&sigcomp_messages));
        rows.push(MeasuredRow {
            kbps,
            sip_delay_s: u,
            sigcomp_delay_s: c,
            improvement_pct: if u > 0.0 { (u - c) / u * 100.0 } else { 0.0 },
            sip_calculated_s: one_way_delay(&call.sip_sizes(), kbps, settings.rtt),
            sigcomp_calculated_s: one_way_delay(&call.sigcomp_sizes(), kbps, settings.rtt),
            sip_messages,
            sigcomp_messages,
        });
    }
    Ok(rows)
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
