//! Helpers shared by the CLI tests: running the real `sigkit` binary and
//! building small SigComp messages with `sigcomp::wire`.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)] // a test fails by panicking

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use sigcomp::StateId;

pub mod load;

/// Whether a real peer (Kamailio, nft, …) is installed, on the PATH or in
/// an sbin folder; in CI (`CI` set) a missing one fails the test, since
/// `.ci/run` installs it.
pub fn have(tool: &str) -> bool {
    let found = sigkit_eval::peers::find(tool).is_some()
        || ["/usr/sbin", "/sbin"].iter().any(|d| std::path::Path::new(d).join(tool).exists());
    assert!(found || std::env::var_os("CI").is_none(), "{tool} is required in CI (.ci/run installs it)");
    if !found {
        eprintln!("skipping: {tool} is not installed");
    }
    found
}

/// The metrics page a proxy serves on `addr` (`GET /metrics`, the whole
/// HTTP response), or None while it does not answer.
pub fn scrape_metrics(addr: std::net::SocketAddr) -> Option<String> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The value of a metrics page's `series` (its name and labels as written).
pub fn series_value(page: &str, series: &str) -> Option<f64> {
    page.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// What one run of the binary did.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Runs `sigkit ARGS` with `stdin` as standard input.
pub fn sigkit(args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sigkit");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    // Write from a thread so a large input cannot deadlock against output.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait for sigkit");
    writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "sigkit panicked: {stderr}");
    Run { code: out.status.code(), stdout: out.stdout, stderr }
}

/// Writes `bytes` to a fresh file under Cargo's per-test temporary folder.
pub fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sigkit-cli-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A multitype operand (RFC 3320 §8.5, Figure 10) holding the value `n`.
pub fn multitype(n: u16) -> Vec<u8> {
    match n {
        0..=63 => vec![n as u8],
        64..=8191 => vec![0xA0 | (n >> 8) as u8, n as u8],
        _ => vec![0x80, (n >> 8) as u8, n as u8],
    }
}

/// Bytecode, uploaded to 128, that outputs `text` (stored right after the
/// instructions) and ends without state: OUTPUT, END-MESSAGE, text.
pub fn output_code(text: &[u8]) -> Vec<u8> {
    let len = multitype(text.len() as u16);
    // OUTPUT (1) + %start (2: the address is >= 128) + %length + END-MESSAGE (8).
    let start = 128 + 3 + len.len() as u16 + 8;
    let mut code = vec![0x22];
    code.extend(multitype(start));
    code.extend(&len);
    code.extend([0x23, 0, 0, 0, 0, 0, 0, 0]);
    code.extend_from_slice(text);
    code
}

/// A SigComp message that decompresses to `text`.
pub fn output_message(text: &[u8]) -> Vec<u8> {
    sigcomp::wire::emit_bytecode_message(None, &output_code(text), 128, &[]).unwrap()
}

/// A message whose bytecode outputs `text` and whose END-MESSAGE asks to
/// save `state_len` bytes from address 128 (the bytecode itself, then
/// zeros) as state with instruction 128 and minimum access length 6. A
/// later message that names the state by partial identifier in its header
/// runs the same bytecode again, so it outputs `text` too.
///
/// Returns the message and the identifier the state will have.
pub fn state_maker(text: &[u8], state_len: u16) -> (Vec<u8>, StateId) {
    let n = multitype(text.len() as u16);
    let sl = multitype(state_len);
    // OUTPUT (1 + 2 + n) then END-MESSAGE (1 + 2 + sl + 4).
    let head = 1 + 2 + n.len() + 3 + sl.len() + 4;
    let mut code = vec![0x22];
    code.extend(multitype(128 + head as u16));
    code.extend(&n);
    // END-MESSAGE (0, 0, state_len, 128, 128, 6, 0); 0x87 is 128.
    code.extend([0x23, 0x00, 0x00]);
    code.extend(&sl);
    code.extend([0x87, 0x87, 0x06, 0x00]);
    assert_eq!(code.len(), head);
    code.extend_from_slice(text);
    assert!(usize::from(state_len) >= code.len(), "state must hold the whole bytecode");
    let mut value = code.clone();
    value.resize(usize::from(state_len), 0);
    let id = StateId::compute(128, 128, 6, &value);
    (sigcomp::wire::emit_bytecode_message(None, &code, 128, &[]).unwrap(), id)
}

/// A message that runs the state whose identifier starts with `partial`.
pub fn access_message(partial: &[u8]) -> Vec<u8> {
    sigcomp::wire::emit_state_message(None, partial, &[]).unwrap()
}

/// Record-marks `msgs` for a stream transport (RFC 3320 §4.2.2).
pub fn stream_of(msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        sigcomp::wire::frame_for_stream(m, &mut out);
    }
    out
}

/// A message whose bytecode is the single opcode DECOMPRESSION-FAILURE.
pub fn user_requested_failure() -> Vec<u8> {
    sigcomp::wire::emit_bytecode_message(None, &[0x00], 128, &[]).unwrap()
}

/// A message whose bytecode jumps to itself forever: JUMP (@0).
pub fn endless_loop() -> Vec<u8> {
    sigcomp::wire::emit_bytecode_message(None, &[0x16, 0x00], 128, &[]).unwrap()
}
