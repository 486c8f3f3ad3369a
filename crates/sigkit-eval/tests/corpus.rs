//! The corpus invariants (corpus/README.md), checked on every `cargo test`:
//! CRLF line ends, well-formed SIP with Content-Length equal to the body,
//! file lengths as lengths.tsv records them, message counts as flows.tsv
//! records them, and every unmatched length listed in corpus/README.md.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::PathBuf;

use sigkit_eval::corpus::{load_flow, Side};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

/// Rows of a TSV file as maps from column name to value.
fn tsv(name: &str) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(corpus_dir().join(name)).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let cells: Vec<&str> = l.split('\t').collect();
            assert_eq!(cells.len(), header.len(), "{name}: row {l:?} has the wrong column count");
            header.iter().zip(cells).map(|(h, c)| (h.to_string(), c.to_string())).collect()
        })
        .collect()
}

#[test]
fn every_flow_loads_with_crlf_lines_and_correct_content_length() {
    let flows = tsv("flows.tsv");
    assert_eq!(
        flows.len(),
        8,
        "the seven flows of the 2005 SigComp performance thesis plus the Open SigComp characterisation's"
    );
    for f in &flows {
        let dir = corpus_dir().join(&f["flow"]);
        // load_flow checks the SIP structure and Content-Length (RFC 3261 §7, §20.14).
        let msgs = load_flow(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(msgs.len(), f["messages"].parse::<usize>().unwrap(), "{}", f["flow"]);
        for (i, m) in msgs.iter().enumerate() {
            assert_eq!(m.index as usize, i + 1, "{}: numbering has a gap", m.file.display());
            // RFC 3261 §7: CRLF ends every line; no bare CR or LF anywhere,
            // the body included.
            for (j, &b) in m.bytes.iter().enumerate() {
                if b == b'\n' {
                    assert!(j > 0 && m.bytes[j - 1] == b'\r', "{}: bare LF at {j}", m.file.display());
                }
                if b == b'\r' {
                    assert_eq!(m.bytes.get(j + 1), Some(&b'\n'), "{}: bare CR at {j}", m.file.display());
                }
            }
            // Requests come from the UE, responses from the P-CSCF.
            let is_response = m.bytes.starts_with(b"SIP/2.0 ");
            assert_eq!(m.sender == Side::Pcscf, is_response, "{}", m.file.display());
        }
    }
}

#[test]
fn lengths_agree_with_lengths_tsv_and_unmatched_ones_are_documented() {
    let readme = std::fs::read_to_string(corpus_dir().join("README.md")).unwrap();
    let rows = tsv("lengths.tsv");
    let total: usize = tsv("flows.tsv").iter().map(|f| f["messages"].parse::<usize>().unwrap()).sum();
    assert_eq!(rows.len(), total, "one lengths.tsv row per message");
    let mut matched = 0;
    for r in &rows {
        let key = format!("{}/{}", r["flow"], r["file"]);
        let bytes = std::fs::read(corpus_dir().join(&key)).unwrap();
        let ours: usize = r["our_length"].parse().unwrap();
        assert_eq!(bytes.len(), ours, "{key}");
        let pad: i64 = r["pad"].parse().unwrap();
        assert_eq!(r["faithful_length"].parse::<i64>().unwrap(), ours as i64 - pad, "{key}");
        let expected = match r["thesis_length"].as_str() {
            "-" => "n/a",
            t if t.parse::<usize>().unwrap() == ours => "yes",
            _ => "no",
        };
        assert_eq!(r["match"], expected, "{key}: match column");
        if expected == "yes" {
            matched += 1;
        } else {
            assert!(readme.contains(&key), "{key}: unmatched length not listed in corpus/README.md");
        }
    }
    // Spot checks against the thesis tables themselves (the thesis
    // Appendix H §14.8 and Appendix L §14.12.4), so a regenerated
    // lengths.tsv cannot drift from the source unnoticed.
    let len = |flow: &str, file: &str| std::fs::read(corpus_dir().join(flow).join(file)).unwrap().len();
    assert_eq!(len("3gpp-video-call", "01-ue-INVITE.sip"), 1437);
    assert_eq!(len("3gpp-video-call", "03-pcscf-183-Session-Progress.sip"), 1440);
    assert_eq!(len("3gpp-video-call", "12-ue-ACK.sip"), 458);
    assert_eq!(len("3gpp-registration", "03-ue-REGISTER.sip"), 963);
    assert_eq!(len("open-sigcomp-startup", "06-ue-INVITE.sip"), 1360);
    assert_eq!(matched, 55, "messages whose length matches the source");
}
