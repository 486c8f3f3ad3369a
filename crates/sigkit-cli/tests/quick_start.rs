//! README.md's first command, run as a new user runs it: `cargo run`
//! from the repository root with the default output folder, and the real
//! peers where they are installed (CI installs them). It is a test binary
//! of its own with one test: cargo runs test binaries one after another, so
//! the `cargo run` here rebuilds the binary while no other test uses it.

use std::path::Path;
use std::process::Command;

fn have(tool: &str) -> bool {
    let found =
        Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success());
    assert!(found || std::env::var_os("CI").is_none(), "{tool} is required in CI (.ci/run installs it)");
    found
}

/// The first command of README.md's Quick start, split into words.
fn quick_start_command(readme: &str) -> Vec<String> {
    let start = readme.find("## Quick start").expect("README has a Quick start");
    let block = readme[start..].split("```sh\n").nth(1).expect("a sh block in the Quick start");
    let line = block.lines().next().expect("a command in it");
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn the_readme_first_command_writes_the_report_from_the_repository_root() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut words = quick_start_command(&readme);
    assert_eq!(words.join(" "), "cargo run --release -p sigkit-cli -- eval", "README's first command changed");
    // The short run the Quick start names for CI.
    words.push("--quick".into());
    let peers = have("kamailio") && have("sipp");
    let out = root.join("report");
    let _ = std::fs::remove_dir_all(&out);
    // Cargo tells its tests which cargo runs them; the build settings
    // (CARGO_PROFILE_*, CARGO_TARGET_DIR) come through the environment.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let run = Command::new(cargo).args(&words[1..]).current_dir(&root).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["status"], "complete", "{stderr}");
    assert_eq!(summary["load_path"], if peers { "sipp-kamailio" } else { "built-in" }, "{stderr}");
    let load = &summary["proxy_load"];
    assert!(load["successful_calls"].as_u64().unwrap() >= 500, "{load}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("ran-delay") && html.contains("sim-goodput") && html.contains("load-throughput"));
    assert!(out.join("results.sqlite").exists());
}
