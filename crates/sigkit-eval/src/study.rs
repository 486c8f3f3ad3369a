//! The compression study of `sigkit eval`: every corpus flow under every
//! algorithm and mechanism, between two in-process endpoints
//! ([`crate::flow::run`]), as plain rows for the results store and the
//! report — the per-message measurements of the SigComp performance
//! thesis (Appendix H), for all its flows at once.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sigcomp::Params;
use sigcomp_compress::{Algorithm, Config, Mechanism};

use crate::corpus::{CorpusError, FlowSource};
use crate::flow::{run, FlowError, ALGORITHMS};

/// One message of one flow under one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageRow {
    /// The flow's name: its directory in the corpus ("3gpp-video-call").
    pub flow: String,
    /// The compression algorithm's name (`Algorithm::name`: "lzss", ...).
    pub algorithm: &'static str,
    /// The mechanism's name (`Mechanism::name`): "basic", "static", "dynamic" or
    /// "shared", the SigComp mechanisms of the SigComp performance thesis §9.6 and Appendix H.
    pub mechanism: &'static str,
    /// Position in the flow, from 1.
    pub index: usize,
    /// The message's name as the flow gives it ("INVITE").
    pub message: String,
    /// "ue->pcscf" or "pcscf->ue".
    pub direction: &'static str,
    /// Its size as SIP, bytes.
    pub uncompressed: usize,
    /// Its SigComp message as sent, bytes (framing included on a stream).
    pub sigcomp: usize,
    /// `sigcomp / uncompressed`: below 1 the message shrank.
    pub ratio: f64,
    /// Whether it carried the decompressor's bytecode (RFC 3320 §7.3).
    pub uploaded_bytecode: bool,
    /// UDVM cycles the receiver spent on it (RFC 3320 §8.6).
    pub cycles: u64,
}

/// One flow's totals under one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowRow {
    /// The flow's name: its directory in the corpus.
    pub flow: String,
    /// The compression algorithm's name.
    pub algorithm: &'static str,
    /// The mechanism's name: "basic", "static", "dynamic" or "shared".
    pub mechanism: &'static str,
    /// Messages in the flow.
    pub messages: usize,
    /// Bytes of every message as SIP.
    pub uncompressed: usize,
    /// Bytes of every SigComp message as sent.
    pub sigcomp: usize,
    /// `sigcomp / uncompressed` over the flow.
    pub ratio: f64,
}

/// What the study measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CompressionStudy {
    /// Each flow's totals, one row per flow × algorithm × mechanism.
    pub flows: Vec<FlowRow>,
    /// Each message, in flow order within each flow × algorithm × mechanism.
    pub messages: Vec<MessageRow>,
}

/// Why the study stopped.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// The corpus could not be read.
    #[error("reading the corpus: {0}")]
    Corpus(#[from] CorpusError),
    /// The corpus directory could not be listed.
    #[error("{dir}: not readable: {source}")]
    Dir {
        /// The corpus directory.
        dir: PathBuf,
        /// Why listing it failed.
        source: std::io::Error,
    },
    /// A flow failed under one configuration.
    #[error("{flow} ({algorithm}, {mechanism}): {error}")]
    Flow {
        /// The flow's name.
        flow: String,
        /// The algorithm's name.
        algorithm: &'static str,
        /// The mechanism's name.
        mechanism: &'static str,
        /// What went wrong in the run.
        error: Box<FlowError>,
    },
}

/// The flow directories of a corpus (each holds one call flow), by name.
pub fn flow_dirs(corpus: &Path) -> Result<Vec<PathBuf>, StudyError> {
    let rd = std::fs::read_dir(corpus).map_err(|source| StudyError::Dir { dir: corpus.to_path_buf(), source })?;
    let mut dirs: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    Ok(dirs)
}

/// Runs every flow directory of `flows` under each of `algorithms` ×
/// `mechanisms`, with `base`'s other settings and `params` at both
/// endpoints.
pub fn compression(
    flows: &[PathBuf],
    algorithms: &[Algorithm],
    mechanisms: &[Mechanism],
    base: Config,
    params: Params,
) -> Result<CompressionStudy, StudyError> {
    let sources: Vec<FlowSource> = flows.iter().cloned().map(FlowSource::Dir).collect();
    compression_of(&sources, algorithms, mechanisms, base, params)
}

/// [`compression`] of flows from anywhere (the built-in corpus, say).
pub fn compression_of(
    flows: &[FlowSource],
    algorithms: &[Algorithm],
    mechanisms: &[Mechanism],
    base: Config,
    params: Params,
) -> Result<CompressionStudy, StudyError> {
    let mut study = CompressionStudy::default();
    for source in flows {
        let flow = source.name();
        let messages = source.load()?;
        for &algorithm in algorithms {
            for &mechanism in mechanisms {
                let config = Config { algorithm, mechanism, ..base };
                let (a, m) = (algorithm.name(), mechanism.name());
                let report = run(&messages, params, config).map_err(|error| StudyError::Flow {
                    flow: flow.clone(),
                    algorithm: a,
                    mechanism: m,
                    error: Box::new(error),
                })?;
                study.flows.push(FlowRow {
                    flow: flow.clone(),
                    algorithm: a,
                    mechanism: m,
                    messages: report.messages.len(),
                    uncompressed: report.uncompressed,
                    sigcomp: report.sigcomp,
                    ratio: report.ratio,
                });
                study.messages.extend(report.messages.iter().enumerate().map(|(i, r)| MessageRow {
                    flow: flow.clone(),
                    algorithm: a,
                    mechanism: m,
                    index: i + 1,
                    message: r.name.clone(),
                    direction: r.direction,
                    uncompressed: r.uncompressed,
                    sigcomp: r.sigcomp,
                    ratio: r.ratio,
                    uploaded_bytecode: r.uploaded_bytecode,
                    cycles: r.cycles,
                }));
            }
        }
    }
    Ok(study)
}

/// Every algorithm of this build.
pub fn all_algorithms() -> &'static [Algorithm] {
    ALGORITHMS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
    }

    #[test]
    fn every_flow_under_every_mechanism_compresses_and_state_pays() {
        let flows = flow_dirs(&corpus()).unwrap();
        assert!(flows.len() >= 8, "{flows:?}");
        let study =
            compression(&flows, &[Algorithm::Lzss], &Mechanism::ALL, Config::default(), Params::default()).unwrap();
        assert_eq!(study.flows.len(), flows.len() * Mechanism::ALL.len());
        for f in &study.flows {
            assert!(f.sigcomp < f.uncompressed, "{f:?}");
            let msgs: Vec<&MessageRow> = study
                .messages
                .iter()
                .filter(|m| m.flow == f.flow && m.mechanism == f.mechanism && m.algorithm == f.algorithm)
                .collect();
            assert_eq!(msgs.len(), f.messages);
            assert_eq!(msgs.iter().map(|m| m.sigcomp).sum::<usize>(), f.sigcomp);
        }
        // Saving the bytecode as state (static) beats uploading it in every
        // message (basic), and so does keeping history (dynamic), on every
        // multi-message flow. (Shared mode is not always better than
        // dynamic: a flow's own history can match better than the peer's.)
        for flow in &flows {
            let name = flow.file_name().unwrap().to_string_lossy();
            let total =
                |m: &str| study.flows.iter().find(|f| f.flow == name && f.mechanism == m).map(|f| f.sigcomp).unwrap();
            assert!(total("dynamic") < total("basic"), "{name}");
            assert!(total("static") < total("basic"), "{name}");
        }
    }

    #[test]
    fn a_missing_corpus_is_an_error_naming_it() {
        let e = flow_dirs(Path::new("/nonexistent/corpus")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/corpus"));
    }
}
