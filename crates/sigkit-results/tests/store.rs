//! The results store on a real SQLite file.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use serde::Serialize;
use sigkit_results::{Machine, RunId, Store, StoreError};

#[derive(Serialize)]
struct Interval {
    t_s: f64,
    successful: u64,
    failed: u64,
    failures_by_cause: std::collections::BTreeMap<String, u64>,
}

#[derive(Serialize)]
struct WiderInterval {
    t_s: f64,
    successful: u64,
    retransmissions: u64,
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sigkit-results-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d.join("results.sqlite")
}

#[test]
fn a_run_survives_reopening_with_its_config_machine_rows_and_summary() {
    let path = scratch("reopen");
    let run = {
        let mut store = Store::open(&path).unwrap();
        let run = store
            .begin_run("load", "sigkit load -sn uac -r 10 127.0.0.1:5060", &serde_json::json!({"rate": 10}))
            .unwrap();
        let causes = [("timeout".to_string(), 2)].into_iter().collect();
        store
            .record_rows(
                run,
                "intervals",
                &[
                    Interval { t_s: 1.0, successful: 9, failed: 0, failures_by_cause: Default::default() },
                    Interval { t_s: 2.0, successful: 8, failed: 2, failures_by_cause: causes },
                ],
            )
            .unwrap();
        store.finish_run(run, &serde_json::json!({"successful_calls": 17, "failed_calls": 2})).unwrap();
        run
    };
    let store = Store::open(&path).unwrap();
    let info = store.run(run).unwrap();
    assert_eq!(info.kind, "load");
    assert_eq!(info.config["rate"], 10);
    assert_eq!(info.summary.unwrap()["failed_calls"], 2);
    assert!(info.finished_at.unwrap() >= info.started_at);
    let machine: Machine = serde_json::from_value(info.machine).unwrap();
    assert_eq!(machine, Machine::detect());
    let rows = store.rows("intervals", Some(run)).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["failed"], 2);
    assert_eq!(rows[1]["t_s"], 2.0);
    let causes: serde_json::Value = serde_json::from_str(rows[1]["failures_by_cause"].as_str().unwrap()).unwrap();
    assert_eq!(causes["timeout"], 2);
    assert_eq!(store.tables().unwrap(), vec!["intervals".to_string()]);
    assert_eq!(store.latest_run("load").unwrap(), Some(run));
    assert_eq!(store.latest_run("capacity").unwrap(), None);
}

#[test]
fn a_later_row_type_with_new_fields_widens_the_table() {
    let mut store = Store::in_memory().unwrap();
    let a = store.begin_run("load", "a", &()).unwrap();
    let b = store.begin_run("load", "b", &()).unwrap();
    store
        .record_rows(
            a,
            "intervals",
            &[Interval { t_s: 1.0, successful: 1, failed: 0, failures_by_cause: Default::default() }],
        )
        .unwrap();
    store.record_rows(b, "intervals", &[WiderInterval { t_s: 1.0, successful: 5, retransmissions: 3 }]).unwrap();
    let all = store.rows("intervals", None).unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["retransmissions"], serde_json::Value::Null);
    assert_eq!(all[1]["retransmissions"], 3);
    assert_eq!(store.rows("intervals", Some(b)).unwrap().len(), 1);
    let mut csv = Vec::new();
    assert_eq!(store.export_csv("intervals", None, &mut csv).unwrap(), 2);
    let csv = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "run_id,t_s,successful,failed,failures_by_cause,retransmissions");
    assert_eq!(lines[1], format!("{a},1,1,0,{{}},"));
    assert_eq!(lines[2], format!("{b},1,5,,,3"));
}

#[test]
fn names_that_are_not_plain_identifiers_are_refused() {
    let mut store = Store::in_memory().unwrap();
    let run = store.begin_run("load", "x", &()).unwrap();
    for bad in ["runs", "x; DROP TABLE runs", "1abc", "", "a-b"] {
        assert!(
            matches!(store.record_rows(run, bad, &[serde_json::json!({"a": 1})]), Err(StoreError::BadName(_))),
            "{bad}"
        );
    }
    store.record_rows(run, "order", &[serde_json::json!({"index": 1, "select": 2})]).unwrap();
    assert_eq!(store.rows("order", Some(run)).unwrap()[0]["select"], 2, "SQL keywords are names too");
    let bad_column = serde_json::json!({"ok": 1, "bad column": 2});
    assert!(matches!(store.record_rows(run, "t", &[bad_column]), Err(StoreError::BadName(_))));
    assert!(matches!(store.record_rows(run, "t", &[5]), Err(StoreError::NotARow(_))));
    assert!(matches!(store.record_rows(RunId(999), "t", &[serde_json::json!({"a": 1})]), Err(StoreError::NoRun(999))));
    assert!(matches!(store.finish_run(RunId(999), &()), Err(StoreError::NoRun(999))));
    assert!(matches!(store.rows("missing", None), Err(StoreError::NoTable(_))));
    assert_eq!(store.runs().unwrap().len(), 1, "the runs table is intact");
}

fn parse_csv_line(line: &str) -> Vec<String> {
    let (mut out, mut field, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    out.push(field);
    out
}

proptest! {
    #[test]
    fn text_round_trips_through_the_store_and_csv(text in "[ -~]{0,40}") {
        let mut store = Store::in_memory().unwrap();
        let run = store.begin_run("t", "t", &()).unwrap();
        store.record_rows(run, "t", &[serde_json::json!({"label": text, "n": 1})]).unwrap();
        let rows = store.rows("t", Some(run)).unwrap();
        prop_assert_eq!(rows[0]["label"].as_str().unwrap(), text.as_str());
        let mut csv = Vec::new();
        store.export_csv("t", Some(run), &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let line = csv.lines().nth(1).unwrap();
        prop_assert_eq!(parse_csv_line(line), vec![run.to_string(), text.clone(), "1".to_string()]);
    }
}
