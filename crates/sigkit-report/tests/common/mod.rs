//! Helpers shared by the report's integration tests.
#![allow(dead_code)]
// These helpers unwrap: a panic fails the test that called them.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's corpus of call flows.
pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

/// Whether the test may go on without `tool` (never in CI, where a
/// missing tool is a failure: `.ci/run` installs it).
pub fn have(tool: &str) -> bool {
    let found =
        Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success());
    assert!(found || std::env::var_os("CI").is_none(), "{tool} is required in CI (.ci/run installs it)");
    if !found {
        eprintln!("skipping: {tool} is not installed");
    }
    found
}

/// A fresh, empty folder for the test named `name`.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sigkit-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
