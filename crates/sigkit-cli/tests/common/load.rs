//! Helpers of the `sigkit load` tests that run it beside SIPp: a fresh
//! folder per run (SIPp and `sigkit load` write their trace files in the
//! current folder), the command, and the files a run leaves.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// A UDP port of 127.0.0.1 free a moment ago.
pub fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A fresh folder for one run's files, named after the test file (`kind`)
/// and the run (`name`).
pub fn folder(kind: &str, name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{kind}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `sigkit load ARGS` in `dir`, with no standard input.
pub fn sigkit_load(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sigkit"));
    c.arg("load").args(args).current_dir(dir).stdin(Stdio::null());
    c
}

/// Waits until something holds UDP `port` on 127.0.0.1.
pub fn wait_bound(port: u16) {
    for _ in 0..200 {
        if UdpSocket::bind(("127.0.0.1", port)).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing bound port {port}");
}

/// A run's output once it ends; it must not have panicked.
pub fn finish(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    out
}

/// The one file of `dir` whose name starts with `prefix` and ends with `suffix`.
pub fn only_file(dir: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with(prefix) && n.ends_with(suffix)
        })
        .collect();
    assert_eq!(found.len(), 1, "{prefix}*{suffix} in {}: {found:?}", dir.display());
    found.into_iter().next().unwrap()
}

/// A file's text (lossy UTF-8).
pub fn read(p: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned()
}
