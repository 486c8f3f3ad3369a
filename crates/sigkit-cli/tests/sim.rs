//! `sigkit sim` end to end: tables, JSON, the results file, CSV and the
//! SVG plot, and a bad scenario's error.
#![allow(clippy::unwrap_used)] // a test fails by panicking

use std::path::PathBuf;
use std::process::Command;

fn sigkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sigkit"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sigkit-sim-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const SURGE: &str = r#"
name = "tiny-surge"
duration = 120.0
collapse_window = [100.0, 120.0]
[[proxies]]
capacity_tps = 1000.0
[[proxies]]
capacity_tps = 100.0
[[sources]]
rate = 80.0
[[sources]]
rate = 40.0
start = 30.0
end = 40.0
"#;

#[test]
fn sim_prints_the_collapse_count_and_records_every_second() {
    let dir = scratch("surge");
    let scenario = dir.join("surge.toml");
    std::fs::write(&scenario, SURGE).unwrap();
    let db = dir.join("results.sqlite");
    let out = sigkit()
        .args(["sim", scenario.to_str().unwrap(), "--seeds", "2", "--db", db.to_str().unwrap(), "--csv"])
        .arg(dir.join("csv"))
        .arg("--svg")
        .arg(dir.join("seed.svg"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("tiny-surge"), "{stdout}");

    // The first seed's plot: its title, a panel per quantity, each with
    // its line and the time axis.
    let svg = std::fs::read_to_string(dir.join("seed.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    for text in [
        "tiny-surge: seed 1",
        "success rate (by transaction start)",
        "request transmissions per transaction",
        "utilisation of the overloaded proxy",
        "pending transactions at the UAC",
        "simulated time, s",
    ] {
        assert!(svg.contains(&format!(">\n{text}\n</text>")), "{text} missing");
    }
    let lines = svg.lines().filter(|l| l.starts_with("<polyline") && l.contains("stroke=\"#C0392B\"")).count();
    assert!(lines >= 4, "{lines} lines");
    let line = stdout.lines().find(|l| l.starts_with("collapsed")).expect("a collapse line");
    assert!(line.ends_with("/ 2"), "{line}");

    let seconds = std::fs::read_to_string(dir.join("csv/sim_seconds.csv")).unwrap();
    let header: Vec<&str> = seconds.lines().next().unwrap().split(',').collect();
    for column in ["seed", "t", "success_ratio", "frpd_p95", "utilisation", "uac_pending", "goodput", "d1_congested"] {
        assert!(header.contains(&column), "{column} missing from {header:?}");
    }
    assert_eq!(seconds.lines().count(), 1 + 2 * 120, "one row per seed and second");
    let seeds = std::fs::read_to_string(dir.join("csv/sim_seeds.csv")).unwrap();
    assert_eq!(seeds.lines().count(), 3);

    let listing = sigkit().args(["results", db.to_str().unwrap()]).output().unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout);
    assert!(listing.contains("sim_seconds") && listing.contains("sim_seeds"), "{listing}");
}

#[test]
fn sim_json_agrees_with_itself_and_is_deterministic() {
    let dir = scratch("json");
    let scenario = dir.join("surge.toml");
    std::fs::write(&scenario, SURGE).unwrap();
    let run = || {
        let out = sigkit().args(["sim", scenario.to_str().unwrap(), "--seeds", "2", "--json"]).output().unwrap();
        assert!(out.status.success());
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (mut a, mut b) = (run(), run());
    // The speed is measured, not simulated: it differs between runs.
    let speed = a.as_object_mut().unwrap().remove("speed").unwrap();
    b.as_object_mut().unwrap().remove("speed");
    assert_eq!(a, b, "the same seeds give the same results");
    let events = speed["events"].as_u64().unwrap();
    assert_eq!(Some(events), a["study"]["events"].as_u64());
    assert!(events > 100_000 && speed["events_per_second_wall"].as_f64().unwrap() > 0.0, "{speed}");
    let seeds = a["seeds"].as_array().unwrap();
    assert_eq!(seeds.len(), 2);
    let collapsed = seeds.iter().filter(|s| s["collapsed"].as_bool().unwrap()).count() as u64;
    assert_eq!(a["study"]["collapsed"].as_u64(), Some(collapsed));
}

#[test]
fn set_overrides_a_scenario_key() {
    let dir = scratch("set");
    let scenario = dir.join("surge.toml");
    std::fs::write(&scenario, SURGE).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["sim", scenario.to_str().unwrap(), "--seeds", "1", "--json"];
        args.extend_from_slice(extra);
        let out = sigkit().args(&args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let plain = run(&[]);
    let t1 = run(&["--set", "handler.kind=t1", "--set", "handler.t1=1.0"]);
    assert_eq!(plain["study"]["collapsed"].as_u64(), Some(1));
    assert_eq!(t1["study"]["collapsed"].as_u64(), Some(0));
    let out = sigkit().args(["sim", scenario.to_str().unwrap(), "--set", "nonsense"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_bad_scenario_is_refused_with_its_reason() {
    let dir = scratch("bad");
    let scenario = dir.join("bad.toml");
    std::fs::write(&scenario, "[[proxies]]\ncapacity_tps = 100\n[[sources]]\nrate = 80\n[handler]\nkind = \"t1\"\n")
        .unwrap();
    let out = sigkit().args(["sim", scenario.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("handler.kind") && stderr.contains("two proxies"), "{stderr}");
    std::fs::write(&scenario, "duration = \"long\"").unwrap();
    let out = sigkit().args(["sim", scenario.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("duration"));
}
