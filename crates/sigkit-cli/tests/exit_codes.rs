//! The same kind of failure exits with the same code from every command
//! (docs/cli.md): for each kind, two or more commands that meet it agree.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::net::UdpSocket;
use std::path::PathBuf;

use common::{sigkit, Run};

/// A scratch folder of its own for `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sigkit-exit-codes-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// Every run exited with `code` and said its `needle` on stderr.
fn all_exit(code: i32, runs: &[(Run, &str)]) {
    for (run, needle) in runs {
        assert_eq!(run.code, Some(code), "{needle}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "{needle:?} not in: {}", run.stderr);
    }
}

/// 1: the run failed. An output that cannot be written is the run's
/// failure, from `asm` as from `rohc`; a message that does not decompress
/// is one too.
#[test]
fn a_failed_run_is_1_for_every_command() {
    let dir = scratch("run");
    let nowhere = dir.join("missing-folder").join("out");
    let capture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../taroc/tests/data/http-bulk-lo.pcap");
    all_exit(
        1,
        &[
            (sigkit(&["asm", "-o", path(&nowhere), "-"], b"at (128)\nRETURN\n"), "missing-folder"),
            (sigkit(&["rohc", path(&capture), "--pcap", path(&nowhere)], b""), "missing-folder"),
            // 0xf8 and a too-short header: MESSAGE_TOO_SHORT.
            (sigkit(&["decompress", "--hex", "-"], b"f8\n"), "MESSAGE_TOO_SHORT"),
        ],
    );
}

/// 2: bad arguments, checked by each command (not only clap's own).
#[test]
fn a_bad_argument_is_2_for_every_command() {
    all_exit(
        2,
        &[
            (sigkit(&["analyze", "any.pcap", "--rtt-ms=-1"], b""), "--rtt-ms"),
            (sigkit(&["rohc", "any.pcap", "--loss", "2"], b""), "--loss"),
            (sigkit(&["capacity", "--step-s", "0"], b""), "--step-s"),
            (sigkit(&["load", "-sn", "uac", "-t", "x9", "127.0.0.1:5060"], b""), "-t x9"),
            (sigkit(&["proxy", "--listen", "sctp:127.0.0.1:5060", "--upstream", "udp:127.0.0.1:5070"], b""), "sctp"),
        ],
    );
}

/// 3: an input file that is not what the command takes. A file that is
/// not a capture is the same failure for `analyze` and `rohc`; a bad
/// TOML, XML or hex file for `proxy`, `sim`, `load` and `decompress`.
#[test]
fn an_invalid_input_file_is_3_for_every_command() {
    let dir = scratch("input");
    let text = dir.join("notes.pcap");
    std::fs::write(&text, "INVITE sip:bob@example.com SIP/2.0\r\n").unwrap();
    let toml = dir.join("bad.toml");
    std::fs::write(&toml, "listen = [\n").unwrap();
    let xml = dir.join("bad.xml");
    std::fs::write(&xml, "<scenario><send>").unwrap();
    all_exit(
        3,
        &[
            (sigkit(&["analyze", path(&text)], b""), "not a pcap or pcapng capture"),
            (sigkit(&["rohc", path(&text)], b""), "not a pcap or pcapng capture"),
            (sigkit(&["proxy", "--config", path(&toml)], b""), "bad.toml"),
            (sigkit(&["sim", path(&toml)], b""), "bad.toml"),
            (sigkit(&["load", "-sf", path(&xml), "127.0.0.1:5060"], b""), "bad.xml"),
            (sigkit(&["decompress", "--hex", "-"], b"f8 0"), "bad hex"),
            (sigkit(&["analyze", path(&dir.join("missing.pcap"))], b""), "missing.pcap"),
            (sigkit(&["results", path(&dir.join("missing.sqlite"))], b""), "missing.sqlite"),
        ],
    );
}

/// 4: the network. An address already taken cannot be bound, by `load`
/// as by `proxy`; a name that does not resolve is the same failure
/// (tests/host_names.rs has every command's).
#[test]
fn a_network_failure_is_4_for_every_command() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let at = taken.local_addr().unwrap();
    let port = at.port().to_string();
    all_exit(
        4,
        &[
            (sigkit(&["load", "-sn", "uas", "-i", "127.0.0.1", "-p", &port, "-m", "1"], b""), "binding"),
            (sigkit(&["proxy", "--listen", &format!("udp:{at}"), "--upstream", "udp:127.0.0.1:5070"], b""), &port),
            (sigkit(&["load", "-sn", "uac", "-m", "1", "sigkit-test.invalid:5060"], b""), "cannot resolve"),
            (sigkit(&["capacity", "--target", "sigkit-test.invalid:5060"], b""), "cannot resolve"),
        ],
    );
    drop(taken);
}
