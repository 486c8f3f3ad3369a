//! Captures cut short inside their last record (tcpdump killed, a file
//! copied while being written), through `sigkit rohc` and `sigkit
//! analyze`: read as tshark reads them. Real captures (pcap and pcapng)
//! are cut inside the last packet record's header, inside its data, one
//! byte before its end and right at its start (a record boundary, no cut);
//! each time the records before are all read, the partial one is dropped,
//! one warning says so on stderr, the exit code is 0, and tshark counts
//! the same packets in the same file. A file header cut short stays a bad
//! input file (exit 3).
//!
//! tshark must be installed; in CI (`CI` set) a missing tshark fails the
//! test (`common::have`).
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{sigkit, temp_file};

fn data(crate_dir: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(crate_dir).join("tests/data").join(name)
}

/// The byte offsets of a capture's packet records (pcap records; pcapng
/// Enhanced, Simple and obsolete Packet Blocks) and the end of the last
/// one, read independently of sigkit's reader. One pcapng section.
fn packet_records(file: &[u8]) -> (Vec<usize>, usize) {
    let u32_at = |at: usize, big: bool| {
        let b: [u8; 4] = file[at..at + 4].try_into().unwrap();
        (if big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) }) as usize
    };
    let (mut records, mut end) = (Vec::new(), 0);
    if file[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
        let big = file[8..12] == [0x1a, 0x2b, 0x3c, 0x4d];
        let mut at = 0;
        while at < file.len() {
            let len = u32_at(at + 4, big);
            if matches!(u32_at(at, big), 2 | 3 | 6) {
                records.push(at);
                end = at + len;
            }
            at += len;
        }
    } else {
        let big = file[..4] == [0xa1, 0xb2, 0xc3, 0xd4] || file[..4] == [0xa1, 0xb2, 0x3c, 0x4d];
        let mut at = 24;
        while at < file.len() {
            records.push(at);
            at += 16 + u32_at(at + 8, big);
            end = at;
        }
    }
    (records, end)
}

/// Packets tshark reads from `path` (`-T fields -e frame.number`, one line
/// each), or `None` when tshark is not installed outside CI.
fn tshark_count(path: &Path) -> Option<usize> {
    if !common::have("tshark") {
        return None;
    }
    let out = Command::new("tshark").arg("-r").arg(path).args(["-T", "fields", "-e", "frame.number"]).output().unwrap();
    Some(String::from_utf8_lossy(&out.stdout).lines().count())
}

/// What one command said of one cut file: its JSON capture summary, and
/// the lines of its stderr that report the cut.
fn run(command: &str, path: &Path) -> (serde_json::Value, Vec<String>) {
    let p = path.to_str().unwrap();
    let args: &[&str] = if command == "rohc" { &["rohc", "--infer", "--json", p] } else { &["analyze", "--json", p] };
    let r = sigkit(args, b"");
    assert_eq!(r.code, Some(0), "sigkit {command} {p}: {}", r.stderr);
    let json: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let warnings = r.stderr.lines().filter(|l| l.contains("cut short")).map(str::to_string).collect();
    (json["capture"].clone(), warnings)
}

fn check_cuts(file_path: &Path) {
    let file = std::fs::read(file_path).unwrap();
    let name = file_path.file_name().unwrap().to_str().unwrap().to_string();
    let (records, end) = packet_records(&file);
    let last = *records.last().unwrap();
    let n = records.len();
    assert!(n > 5, "{name}: a capture with some packets");
    if let Some(count) = tshark_count(file_path) {
        assert_eq!(count, n, "{name}: tshark and this test's parser agree on the whole file");
    }
    let header = if name.ends_with(".pcapng") { 12 } else { 16 };
    for (what, cut) in [
        ("at the record boundary", last),
        ("in the header", last + 7),
        ("in the data", last + header + 10),
        ("a byte short", end - 1),
    ] {
        let path = temp_file(&format!("cut-{name}-{cut}"), &file[..cut]);
        let cut_short = cut != last;
        for command in ["rohc", "analyze"] {
            let (capture, warnings) = run(command, &path);
            assert_eq!(capture["frames"], n - 1, "{name} cut {what}: sigkit {command} reads every record before");
            assert_eq!(warnings.len(), usize::from(cut_short), "{name} cut {what}: sigkit {command}: {warnings:?}");
            let t = &capture["truncated"];
            if cut_short {
                assert_eq!(t["offset"], last, "{name} cut {what}: {t}");
                assert_eq!(t["present"], cut - last, "{name} cut {what}: {t}");
                assert_eq!(t["records"], n - 1);
                assert_eq!(t["partial_record"], "dropped");
                let w = &warnings[0];
                assert!(w.contains(&format!("byte offset {last}")) && w.contains("dropped"), "{w}");
            } else {
                assert!(t.is_null(), "{name} cut {what}: {t}");
            }
        }
        // `sigkit analyze FILE`, its tables: exit 0, the same warning.
        let r = sigkit(&["analyze", path.to_str().unwrap()], b"");
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(r.stderr.matches("cut short").count(), usize::from(cut_short), "{}", r.stderr);
        if let Some(count) = tshark_count(&path) {
            assert_eq!(count, n - 1, "{name} cut {what}: tshark reads as many packets as sigkit");
        }
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn a_pcap_cut_short_is_read_as_tshark_reads_it() {
    check_cuts(&data("taroc", "http-bulk-lo.pcap"));
    check_cuts(&data("sigkit-analyze", "synthetic.pcap"));
}

#[test]
fn a_pcapng_cut_short_is_read_as_tshark_reads_it() {
    check_cuts(&data("taroc", "http-small-any.pcapng"));
    check_cuts(&data("sigkit-analyze", "sip-tcp.pcapng"));
}

/// A length past the end of the file that no record may have (the first
/// record's captured length set to 2^32 - 1) is a damaged file, as tshark
/// says ("bigger than maximum of 262144"), not one cut short.
#[test]
fn a_damaged_record_length_is_a_bad_input_file() {
    let mut file = std::fs::read(data("taroc", "http-bulk-lo.pcap")).unwrap();
    file[24 + 8..24 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let path = temp_file("damaged-length.pcap", &file);
    for command in ["rohc", "analyze"] {
        let r = sigkit(&[command, path.to_str().unwrap()], b"");
        assert_eq!(r.code, Some(3), "sigkit {command}: {}", r.stderr);
        assert!(r.stderr.contains("more than the 262144"), "{}", r.stderr);
    }
}

#[test]
fn a_file_header_cut_short_is_a_bad_input_file() {
    for (crate_dir, name, cut) in [("taroc", "http-bulk-lo.pcap", 20), ("taroc", "http-small-any.pcapng", 20)] {
        let file = std::fs::read(data(crate_dir, name)).unwrap();
        let path = temp_file(&format!("head-{name}"), &file[..cut]);
        for command in ["rohc", "analyze"] {
            let r = sigkit(&[command, path.to_str().unwrap()], b"");
            assert_eq!(r.code, Some(3), "sigkit {command} {name}[..{cut}]: {}", r.stderr);
            assert!(r.stderr.contains("file header"), "{}", r.stderr);
        }
    }
}
