//! Every `console` example of README.md and docs/*.md runs against the
//! built binary, and its output must be what the document shows (trycmd:
//! `$ sigkit ...` lines, then the expected stdout and stderr; `...` stands
//! for lines and `[..]` for part of a line that vary, such as timings).
//! Synopses and commands that need a server are ```text or ```sh blocks,
//! which trycmd does not run.

use std::path::PathBuf;
use std::time::Duration;

#[test]
fn documented_commands_print_what_the_documents_show() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    // trycmd runs a .md case's commands in the test process's working
    // directory (no `.in` directory beside the document): the repository
    // root, so the examples' relative paths (corpus/3gpp-video-call) are
    // the ones a user types there.
    std::env::set_current_dir(&root).unwrap();
    let docs = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"));
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("sigkit", PathBuf::from(env!("CARGO_BIN_EXE_sigkit")))
        .env("NO_COLOR", "1")
        .timeout(Duration::from_secs(120))
        .case(root.join("README.md"));
    for doc in docs {
        cases.case(doc);
    }
    cases.run();
}

fn repo_file(path: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The lines of the fenced block of `doc` whose first line is `first`,
/// from `first` on, without the closing fence.
fn block_from<'a>(doc: &'a str, first: &str) -> Vec<&'a str> {
    let mut lines = doc.lines().skip_while(|l| *l != first).peekable();
    assert!(lines.peek().is_some(), "no block starts with {first:?}");
    lines.take_while(|l| !l.starts_with("```")).collect()
}

/// docs/decompress.md's `--jsonl` session: its request lines go to
/// standard input, and the answers must be the lines between them.
#[test]
fn decompress_jsonl_session_answers_as_the_manual_shows() {
    let doc = repo_file("docs/decompress.md");
    let session = block_from(&doc, "$ sigkit decompress --jsonl");
    // After the command line, requests and answers alternate.
    let exchange = &session[1..];
    assert!(exchange.len() >= 10 && exchange.len().is_multiple_of(2), "{session:?}");
    let lines = |first: usize| exchange.iter().skip(first).step_by(2).map(|l| format!("{l}\n")).collect::<String>();
    let (requests, answers) = (lines(0), lines(1));
    snapbox::cmd::Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["decompress", "--jsonl"])
        .stdin(requests)
        .assert()
        .success()
        .stdout_eq(answers);
}

/// docs/asm.md's assembly error, read from standard input:
/// `$ printf 'SOURCE' | sigkit asm -`, then the error line.
#[test]
fn asm_error_from_stdin_reads_as_the_manual_shows() {
    let doc = repo_file("docs/asm.md");
    let first =
        doc.lines().find(|l| l.starts_with("$ printf '") && l.ends_with("' | sigkit asm -")).expect("the example");
    let source =
        first.strip_prefix("$ printf '").unwrap().strip_suffix("' | sigkit asm -").unwrap().replace("\\n", "\n");
    let expected: String = block_from(&doc, first)[1..].iter().map(|l| format!("{l}\n")).collect();
    snapbox::cmd::Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["asm", "-"])
        .stdin(source)
        .assert()
        .code(3)
        .stdout_eq("")
        .stderr_eq(expected);
}

/// docs/asm.md assembles RFC 4464 §4.1.3's message from
/// examples/rfc4464-lzw.data: the compressed bytes the RFC gives in hex.
#[test]
fn lzw_example_data_is_the_rfcs_compressed_message() {
    let hex_text = repo_file("crates/sigcomp-asm/tests/rfc4464/4.1.3-lzw.msg");
    let digits: String = hex_text.lines().filter(|l| !l.starts_with('#')).flat_map(|l| l.split_whitespace()).collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let data = std::fs::read(root.join("examples/rfc4464-lzw.data")).unwrap();
    assert_eq!(data, hex::decode(digits).unwrap());
}

/// A number as docs/reproduction.md writes it ("10,640").
fn count(text: &str) -> u64 {
    text.trim().replace(',', "").parse().unwrap_or_else(|_| panic!("not a count: {text:?}"))
}

/// docs/reproduction.md's compression rows: each `sigkit flow` command of
/// its last column, run as written from the repository root, gives the
/// row's own figure ("0.210 (2,236 of 10,640)": the SigComp bytes, or the
/// tokens alone for the thesis's Tables 11 and 13, of the flow's SIP
/// bytes).
#[test]
fn reproduction_rows_are_what_their_commands_measure() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = repo_file("docs/reproduction.md");
    let mut checked = 0;
    for row in doc.lines().filter(|l| l.starts_with('|') && l.contains("`sigkit flow corpus/")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let command = cells[cells.len() - 2].trim_matches('`');
        let ours = cells[4];
        let (of, total) = ours.split_once('(').unwrap().1.trim_end_matches(')').split_once(" of ").unwrap();
        let (of, total) = (count(of), count(total));
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(words[..2], ["sigkit", "flow"], "{row}");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sigkit"))
            .args(&words[1..])
            .current_dir(&root)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        // TOTAL  <SIP bytes>  <tokens>  <SigComp bytes>  ...
        let totals: Vec<u64> = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("TOTAL"))
            .unwrap_or_else(|| panic!("{command}: no TOTAL line"))
            .split_whitespace()
            .skip(1)
            .take(3)
            .map(count)
            .collect();
        assert_eq!(totals[0], total, "{command}: the flow's SIP bytes");
        let tokens_alone = cells[2].starts_with("Table 11") || cells[2].starts_with("Table 13");
        let measured = if tokens_alone { totals[1] } else { totals[2] };
        assert_eq!(measured, of, "{command}: the document says {ours}");
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} rows with a sigkit flow command");
}
