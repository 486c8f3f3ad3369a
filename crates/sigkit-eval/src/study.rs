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
    pub flow: String,
    pub algorithm: &'static str,
    pub mechanism: &'static str,
    /// Position in the flow, from 1.
    pub index: usize,
    pub message: String,
    pub direction: &'static str,
    pub uncompressed: usize,
    pub sigcomp: usize,
    pub ratio: f64,
    pub uploaded_bytecode: bool,
    pub cycles: u64,
}

/// One flow's totals under one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowRow {
    pub flow: String,
    pub algorithm: &'static str,
    pub mechanism: &'static str,
    pub messages: usize,
    pub uncompressed: usize,
    pub sigcomp: usize,
    pub ratio: f64,
}

/// What the study measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CompressionStudy {
    pub flows: Vec<FlowRow>,
    pub messages: Vec<MessageRow>,
}

/// Why the study stopped.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    #[error("reading the corpus: {0}")]
    Corpus(#[from] CorpusError),
    #[error("{dir}: not readable: {source}")]
    Dir { dir: PathBuf, source: std::io::Error },
    #[error("{flow} ({algorithm}, {mechanism}): {error}")]
    Flow { flow: String, algorithm: &'static str, mechanism: &'static str, error: Box<FlowError> },
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
