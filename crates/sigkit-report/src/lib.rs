//! # sigkit-report
//!
//! A self-contained HTML report of sigkit's measurements: `index.html`
//! with every plot inline (SVG, drawn by plotters) and a table of the
//! numbers under each, and each plot also as a PNG file beside it.
//!
//! The input is plain data ([`ReportInput`]), readable from JSON files
//! that merge section by section ([`ReportInput::merge`]), so a load
//! run's results, a compression study and the RAN-delay study can come
//! from different commands. [`runs`] reads the runs' own output (`sigkit
//! load --json`, `sigkit capacity --json`, results files) as input;
//! [`sources`] builds the compression and RAN sections from the corpus;
//! [`seeds`] holds the published values drawn beside ours.
//!
//! The page opens with a summary of findings (each headline finding in a
//! sentence, ours beside the published figure, with a verdict) and ends
//! with the reproduction section: every published figure sigkit
//! reproduces, one row each, ours from the input where it has the figure
//! (`sigkit_eval::published` for the compression figures).

#![forbid(unsafe_code)]

mod capacity;
mod capture;
mod charts;
mod compression;
mod findings;
mod glossary;
mod html;
mod ladder;
mod load;
mod page;
mod published;
mod ran;
mod reproduction;
pub mod runs;
pub mod seeds;
mod sim;
pub mod sources;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use charts::{DrawError, FONT_FAMILY};
pub use sigkit_eval::published::MeasuredCompression;

/// The series names of `sigkit eval`'s load runs through Kamailio, by
/// which the summary compares them like for like.
pub mod series {
    /// sigkit's UAC through `sigkit proxy` to Kamailio and SIPp's UAS.
    pub const THROUGH_PROXY: &str = "UAC → sigkit proxy → Kamailio → SIPp UAS";
    /// The same steps straight to Kamailio.
    pub const DIRECT: &str = "UAC → Kamailio → SIPp UAS";
    /// The same steps from SIPp's UAC straight to Kamailio.
    pub const SIPP_DIRECT: &str = "SIPp UAC → Kamailio → SIPp UAS";
}

/// Everything a report shows; every section is optional (empty). Unknown
/// fields are refused: another JSON file (a summary, a configuration) is
/// not mistaken for an empty report input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportInput {
    /// The page's title (the first input's that has one).
    pub title: Option<String>,
    /// The runs the numbers come from.
    pub runs: Vec<RunMeta>,
    /// A load run's steps, one per offered rate (several runs: told apart
    /// by [`LoadStep::series`]).
    pub load_steps: Vec<LoadStep>,
    /// The capacity found by a search.
    pub capacity: Option<Capacity>,
    /// Per-message sizes of flows under each mechanism.
    pub compression: Vec<FlowCompression>,
    /// The RAN-delay study, one row per bit rate and method.
    pub ran: Vec<RanRow>,
    /// The RAN-delay study per message, at the bit rates given.
    pub ran_messages: Vec<RanMessageRow>,
    /// Published values drawn beside ours.
    pub seed_points: Vec<SeedPoint>,
    /// SIP overload simulations (`sigkit sim`), one per scenario.
    pub sim: Vec<SimStudy>,
    /// The SIP flows of captures as `sigkit analyze` saw them.
    pub captures: Vec<CaptureFlow>,
    /// The calls of captures (`sigkit analyze --json`'s `calls`), each
    /// drawn as its call flow.
    pub capture_calls: Vec<CaptureCall>,
    /// Published compression figures re-measured at their own settings
    /// (`sigkit_eval::published`), by key.
    pub published_compression: Vec<MeasuredCompression>,
}

/// One SIP flow of a capture (`sigkit analyze --json`): what each way of
/// sending its messages costs, in bytes and in one-way RAN delay.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CaptureFlow {
    /// The capture (its file name).
    pub capture: String,
    /// "flow 1: tcp 127.0.0.1:5060 <-> ...".
    pub flow: String,
    /// "udp" or "tcp".
    pub protocol: String,
    /// SIP messages in the flow that the analysis kept (at most its message bound
    /// over all flows).
    pub messages: u64,
    /// Distinct Call-IDs among its messages.
    pub calls: u64,
    /// Bytes of its SIP messages (as decoded, for those sent as SigComp).
    pub sip_bytes: u64,
    /// SigComp messages found in the capture.
    pub sigcomp_messages: u64,
    /// How many of `sigcomp_messages` sigkit's decompressor decoded.
    pub sigcomp_decoded: u64,
    /// TCP flows: the segments sigkit's TAROC compressor (the TAROC draft)
    /// compressed; `None` for UDP.
    pub taroc_packets: Option<u64>,
    /// TCP/IP header bytes of those packets as captured.
    pub header_bytes_before: Option<u64>,
    /// TCP/IP header bytes of those segments as the TAROC compressor sent
    /// them.
    pub header_bytes_after: Option<u64>,
    /// TAROC's mode: "u", "o", "r", or "o-infer" (O-mode with
    /// cross-direction inference).
    pub taroc_mode: String,
    /// The signalling link's round-trip time the RAN delays were calculated with
    /// (equation 2.1 of the SigComp performance thesis), ms.
    pub rtt_ms: f64,
    /// Each way of sending its messages, the baseline first.
    pub variants: Vec<CaptureVariant>,
}

/// One call (Call-ID) of a capture as `sigkit analyze` saw it: its
/// messages between the addresses it went through, drawn as a ladder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CaptureCall {
    /// The capture (its file name).
    pub capture: String,
    /// The Call-ID.
    pub call_id: String,
    /// The addresses (address:port) of the ladder's columns.
    pub endpoints: Vec<String>,
    /// The SigComp variant whose simulated sizes messages that came plain
    /// are shown with ("sigcomp dynamic/lzss").
    pub sigcomp_variant: Option<String>,
    /// Its messages, in capture order.
    pub messages: Vec<CallMessage>,
}

/// One message of a [`CaptureCall`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallMessage {
    /// Seconds since the call's first message.
    pub time_s: f64,
    /// The sender's index in [`CaptureCall::endpoints`].
    pub from: usize,
    /// The receiver's index.
    pub to: usize,
    /// The method of a request; the status code and CSeq method of a
    /// response ("200 INVITE").
    pub label: String,
    /// Its size as SIP, bytes.
    pub sip_bytes: u64,
    /// Its size as SigComp: as captured if `sigcomp_captured`, else as the
    /// call's `sigcomp_variant` would have sent it.
    pub sigcomp_bytes: Option<u64>,
    /// It came as SigComp in the capture.
    pub sigcomp_captured: bool,
}

/// One way of sending a capture flow's messages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CaptureVariant {
    /// "sip", "captured", "sigcomp dynamic/lzss", "sip + taroc", ...
    pub name: String,
    /// Lower-layer headers counted: "none", "tcp/ip" or "taroc".
    pub headers: String,
    /// The variant this one is compared with: "sip", or "sip + tcp/ip".
    pub baseline: String,
    /// Bytes of every message together, sent this way.
    pub bytes: u64,
    /// `bytes` over the baseline's bytes.
    pub ratio: f64,
    /// Messages SigComp failed on and sent plain.
    pub sent_plain: u64,
    /// (kbit/s, one-way RAN delay s, improvement over the baseline %).
    pub ran: Vec<(f64, f64, f64)>,
}

/// A `sigkit sim` study: one scenario over many seeds, with the SIP
/// overload thesis's result for it where the thesis has one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimStudy {
    /// The scenario's short name, as tables show it.
    pub scenario: String,
    /// What the scenario reproduces (from its configuration).
    pub description: String,
    /// Seeds (independent runs) the study averages over.
    pub seeds: u64,
    /// Seeds whose window's 200 share fell under the collapse threshold.
    pub collapsed: u64,
    /// The window's share of transactions answered 200, mean over seeds.
    pub window_ok_ratio: f64,
    /// 200s per second in the window, mean over seeds.
    pub window_goodput: f64,
    /// 95th percentile of fRpD over the run, mean over seeds (s).
    pub frpd_p95_s: f64,
    /// Per simulated second, means over the seeds.
    pub seconds: Vec<SimSecond>,
}

/// One simulated second, averaged over a study's seeds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimSecond {
    /// The second, from the run's start (0, 1, ...).
    pub t: f64,
    /// Transactions the UACs started (offered load, requests/s).
    pub started: f64,
    /// 200s the UACs received.
    pub goodput: f64,
    /// UAC transactions pending at the second's end.
    pub uac_pending: f64,
}

/// Where and how a run was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunMeta {
    /// What the run was ("eval", "sim", "load", ...), as its results file
    /// names it.
    pub kind: String,
    /// The machine it ran on: host name, CPU model and count.
    pub machine: String,
    /// UTC, as the run recorded it.
    pub date: String,
    /// The command line that made it.
    pub command: String,
    /// Its configuration in short ("scenario no-handling, 2 seeds").
    pub config: String,
    /// Free text: the run's own notes, or for a JSON output read without a run
    /// record, the file it came from.
    pub notes: String,
    /// What the reader must know before reading its numbers: a part that
    /// failed or was not run, or a real peer that did not start and what
    /// stood in for it. Shown at the top of the page.
    pub warnings: Vec<String>,
}

/// One step of a load run: the calls of one offered rate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadStep {
    /// Which run (system under test) the step belongs to; steps of the
    /// same series are drawn as one line.
    pub series: String,
    /// Offered call rate, calls/s.
    pub offered_cps: f64,
    /// Calls placed.
    pub attempted: u64,
    /// Calls that succeeded.
    pub successful: u64,
    /// Calls that failed: an error final response, a timer, or an
    /// unexpected message.
    pub failed: u64,
    /// Successful calls per second.
    pub calls_per_s: f64,
    /// `failed` as a percentage of `attempted` (0 with none attempted).
    pub failed_pct: f64,
    /// Calls attempted that neither succeeded nor failed by the end of the
    /// run: no final answer yet (an overloaded system holds calls in
    /// retransmission), so a step with 0 % failed can still have lost calls.
    pub unfinished: u64,
    /// `unfinished` as a percentage of `attempted` (0 with none attempted).
    pub unfinished_pct: f64,
    /// Median call set-up delay (INVITE to 200), ms; NaN (null in JSON)
    /// where the run did not measure one (a capacity search keeps only the
    /// 95th).
    #[serde(deserialize_with = "nan_if_null")]
    pub setup_p50_ms: f64,
    /// 95th percentile of the call set-up delay (INVITE to 200), ms; NaN where
    /// not measured.
    #[serde(deserialize_with = "nan_if_null")]
    pub setup_p95_ms: f64,
    /// 99th percentile of the call set-up delay, ms; NaN where not measured.
    #[serde(deserialize_with = "nan_if_null")]
    pub setup_p99_ms: f64,
    /// How long the step offered calls, s (0: not recorded).
    pub duration_s: f64,
    /// What went wrong in the step's calls, where the run counted it per
    /// step (None: not recorded). Here: messages sent again (RFC 3261 §17
    /// timers, or a retransmitted request answered again).
    pub retransmissions: Option<u64>,
    /// Calls failed on a timer (RFC 3261 §17 Timer B or F, no ACK, a
    /// receive timeout); None: not recorded.
    pub timeouts: Option<u64>,
    /// Messages that matched no step of their call (the call fails) or
    /// could not be parsed; None: not recorded.
    pub unexpected: Option<u64>,
    /// Failed calls whose cause was a 5xx final response (503 from an
    /// overloaded server, say); None: not recorded.
    pub failed_5xx: Option<u64>,
    /// The last step of a run: the run's tail after it.
    pub tail: Option<LoadTail>,
}

/// The time after a load run's last step, when it placed no call and
/// waited for the calls in progress.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoadTail {
    /// When the tail began: the run's time at its last step's end, s.
    pub start_s: f64,
    /// When the run ended, s from its start.
    pub end_s: f64,
    /// Calls that succeeded in the tail.
    pub successful: u64,
    /// Calls that failed in the tail.
    pub failed: u64,
    /// Calls still without a final answer when the run ended.
    pub unfinished: u64,
}

/// JSON has no NaN: serde_json writes it as null, and this reads null back
/// as NaN.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// The result of a capacity search.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capacity {
    /// The system whose capacity it is ("the built-in UAS", an address).
    pub target: String,
    /// The service level the rate was found within, in words.
    pub service_level: String,
    /// The capacity: mean over the searches of the highest rate served within the
    /// service level, calls/s.
    pub calls_per_s: f64,
    /// Half-width of the 95 % confidence interval across searches.
    pub ci95_calls_per_s: Option<f64>,
    /// Searches the capacity was averaged over.
    pub searches: u32,
    /// Largest distance of one search's capacity from the mean, % of it.
    pub max_deviation_pct: Option<f64>,
}

/// One flow under one mechanism: each message's size before and after.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlowCompression {
    /// The flow's name: its corpus directory.
    pub flow: String,
    /// The compression algorithm's name ("lzss").
    pub algorithm: String,
    /// The SigComp mechanism's name: "basic", "static", "dynamic" or "shared"
    /// (the SigComp performance thesis §9.6).
    pub mechanism: String,
    /// (message label, original bytes, compressed bytes), in flow order.
    pub messages: Vec<(String, u64, u64)>,
}

/// How a RAN-delay row was obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RanMethod {
    /// Equation 2.1 of the SigComp performance thesis.
    #[default]
    Calculated,
    /// Over the emulated link with real UDP sockets.
    Measured,
}

impl RanMethod {
    /// The method as the report's tables write it: "calculated" or "measured".
    pub fn name(self) -> &'static str {
        match self {
            RanMethod::Calculated => "calculated",
            RanMethod::Measured => "measured",
        }
    }
}

/// The call's one-way RAN delay at one bit rate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RanRow {
    /// The signalling link's bit rate, kbit/s.
    pub kbps: f64,
    /// Whether equation 2.1 gave the row or the emulated link measured it.
    pub method: RanMethod,
    /// The signalling link's round-trip time, ms (70 in the SigComp performance
    /// thesis).
    pub rtt_ms: f64,
    /// Messages in the call.
    pub messages: u32,
    /// Bytes of the call's messages as SIP.
    pub sip_bytes: u64,
    /// Bytes of the call's messages as SigComp sent them.
    pub sigcomp_bytes: u64,
    /// The call's one-way RAN delay uncompressed, s.
    pub sip_delay_s: f64,
    /// The call's one-way RAN delay with SigComp, s.
    pub sigcomp_delay_s: f64,
    /// `sip_delay_s - sigcomp_delay_s`, s.
    pub improvement_s: f64,
    /// `improvement_s` as a percentage of `sip_delay_s`.
    pub improvement_pct: f64,
}

/// One message of the call at one bit rate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RanMessageRow {
    /// The signalling link's bit rate, kbit/s.
    pub kbps: f64,
    /// The message's name as the corpus flow gives it.
    pub name: String,
    /// "ue->pcscf" or "pcscf->ue".
    pub direction: String,
    /// Its size as SIP, bytes.
    pub sip_bytes: u64,
    /// Its size as SigComp sent it, bytes.
    pub sigcomp_bytes: u64,
    /// Its one-way RAN delay uncompressed by equation 2.1, s.
    pub sip_delay_s: f64,
    /// Its one-way RAN delay with SigComp by equation 2.1, s.
    pub sigcomp_delay_s: f64,
}

/// Which plot a published value belongs beside.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeedChart {
    /// One-way RAN delay (s) against bit rate (kbps).
    #[default]
    RanDelay,
    /// RAN delay saved by SigComp (s) against bit rate.
    RanSaved,
    /// RAN delay saved by SigComp (%) against bit rate.
    RanReduction,
    /// Cumulative SigComp bytes of a flow against the message number
    /// (the published total drawn at the flow's last message).
    CompressionTotal,
    /// Successful calls/s against offered calls/s.
    LoadThroughput,
    /// Failed calls (%) against offered calls/s.
    LoadFailed,
    /// Call set-up time (ms) against offered calls/s.
    LoadSetup,
}

/// A value a source document published.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SeedPoint {
    /// The document, by title.
    pub seed: String,
    /// Where in it (table, figure, section).
    pub source: String,
    /// The plot it is drawn on, which also gives the units of `x` and `y`.
    pub chart: SeedChart,
    /// The line it belongs to (e.g. a machine, or "SIP").
    pub series: String,
    /// Abscissa, in the chart's unit (kbps, message number or offered calls/s).
    pub x: f64,
    /// Ordinate, in the chart's unit.
    pub y: f64,
    /// Read from prose ("about 70 %") rather than a table.
    pub approximate: bool,
    /// A remark on how the value was obtained or what differs from ours ("UDP,
    /// DMS 8192, dictionary priorities 1–5"); shown beside it.
    pub note: String,
}

impl ReportInput {
    /// Adds `other`'s sections to this one's: lists are appended, the
    /// title and capacity kept from the first input that has them.
    pub fn merge(&mut self, other: ReportInput) {
        if self.title.is_none() {
            self.title = other.title;
        }
        if self.capacity.is_none() {
            self.capacity = other.capacity;
        }
        self.runs.extend(other.runs);
        self.load_steps.extend(other.load_steps);
        self.compression.extend(other.compression);
        self.ran.extend(other.ran);
        self.ran_messages.extend(other.ran_messages);
        self.sim.extend(other.sim);
        self.captures.extend(other.captures);
        self.capture_calls.extend(other.capture_calls);
        self.published_compression.extend(other.published_compression);
        for p in other.seed_points {
            if !self.seed_points.contains(&p) {
                self.seed_points.push(p);
            }
        }
    }

    /// Reads and merges, in order, files of any kind [`runs::read_run`]
    /// reads: a run's own output (load, capacity, results file) or
    /// report-input JSON. A file with nothing to plot is an error.
    pub fn read_files(paths: &[PathBuf]) -> Result<ReportInput, ReportError> {
        let mut input = ReportInput::default();
        for path in paths {
            input.merge(runs::read_run(path)?.0);
        }
        Ok(input)
    }

    /// Whether no section has anything to show.
    pub fn is_empty(&self) -> bool {
        self.load_steps.is_empty()
            && self.capacity.is_none()
            && self.compression.is_empty()
            && self.ran.is_empty()
            && self.sim.is_empty()
            && self.captures.is_empty()
            && self.capture_calls.is_empty()
            && self.published_compression.is_empty()
    }
}

/// What [`write_report`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportFiles {
    /// The page: `index.html` in the report's directory.
    pub index: PathBuf,
    /// One PNG per plot, beside the page.
    pub pngs: Vec<PathBuf>,
    /// The plots' ids (each also the PNG's file stem and the id of its
    /// `<figure>` in the page).
    pub plots: Vec<String>,
}

/// Why a report could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read, or written, or the directory made.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// A file is neither JSON report input nor a run's output it reads.
    #[error("{0}: not a report input: {1}")]
    Json(PathBuf, String),
    /// The chart of this id could not be drawn.
    #[error("drawing {0}: {1}")]
    Draw(String, #[source] DrawError),
    /// A file holds nothing to plot: the file and what kind of output it was
    /// taken for.
    #[error("{0}: {1} with nothing to plot (no load steps, capacity, compression, RAN-delay or capture rows)")]
    NothingToPlot(PathBuf, &'static str),
}

/// Writes `dir/index.html` and one PNG per plot beside it (the directory
/// is created). The page is self-contained: its plots are inline SVG, its
/// style inline, and its one script only checks, once loaded, that every
/// plot rendered (it writes the result into `#render-check`).
pub fn write_report(input: &ReportInput, dir: &Path) -> Result<ReportFiles, ReportError> {
    std::fs::create_dir_all(dir).map_err(|e| ReportError::Io(dir.to_path_buf(), e))?;
    let sections = html::sections(input);
    let mut pngs = Vec::new();
    let mut plots = Vec::new();
    let mut svgs = Vec::new();
    // In page order: each figure's chart, then its ladder.
    for figure in sections.iter().flat_map(|s| &s.figures) {
        if let Some(chart) = &figure.chart {
            let png = dir.join(format!("{}.png", chart.id));
            charts::write_png(chart, &png).map_err(|e| ReportError::Draw(chart.id.clone(), e))?;
            svgs.push(charts::svg(chart).map_err(|e| ReportError::Draw(chart.id.clone(), e))?);
            pngs.push(png);
            plots.push(chart.id.clone());
        }
        if let Some(l) = &figure.ladder {
            let png = dir.join(format!("{}.png", l.id));
            ladder::write_png(l, &png).map_err(|e| ReportError::Draw(l.id.clone(), e))?;
            svgs.push(ladder::svg(l).map_err(|e| ReportError::Draw(l.id.clone(), e))?);
            pngs.push(png);
            plots.push(l.id.clone());
        }
    }
    let page = html::page(input, &sections, &svgs);
    let index = dir.join("index.html");
    std::fs::write(&index, page).map_err(|e| ReportError::Io(index.clone(), e))?;
    Ok(ReportFiles { index, pngs, plots })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_merge_section_by_section() {
        let mut a = ReportInput {
            title: Some("a".into()),
            load_steps: vec![LoadStep { offered_cps: 10.0, ..LoadStep::default() }],
            ..ReportInput::default()
        };
        let b: ReportInput = serde_json::from_str(
            r#"{"title": "b", "load_steps": [{"offered_cps": 20}],
                "compression": [{"flow": "f", "mechanism": "basic", "messages": [["INVITE", 900, 300]]}],
                "capacity": {"calls_per_s": 7.5}}"#,
        )
        .unwrap();
        a.merge(b);
        assert_eq!(a.title.as_deref(), Some("a"));
        assert_eq!(a.load_steps.iter().map(|s| s.offered_cps).collect::<Vec<_>>(), [10.0, 20.0]);
        assert_eq!(a.compression[0].messages, [("INVITE".to_string(), 900, 300)]);
        assert_eq!(a.capacity.as_ref().map(|c| c.calls_per_s), Some(7.5));
        assert!(!a.is_empty());
        assert!(ReportInput::default().is_empty());
    }

    #[test]
    fn an_input_survives_json() {
        let input = ReportInput {
            ran: vec![RanRow { kbps: 9.6, method: RanMethod::Measured, ..RanRow::default() }],
            seed_points: vec![SeedPoint { chart: SeedChart::LoadSetup, ..SeedPoint::default() }],
            ..ReportInput::default()
        };
        let json = serde_json::to_string(&input).unwrap();
        assert!(json.contains(r#""method":"measured""#) && json.contains(r#""chart":"load_setup""#));
        assert_eq!(serde_json::from_str::<ReportInput>(&json).unwrap(), input);
    }
}
