//! `sigkit load`'s SIPp trace files beside the real SIPp's (3.6), each
//! written for the same scenario in the same run: the statistics file's
//! header and fields per row, the message, error, response-time and log
//! files' layouts; the end of a run on SIGTERM with its summary and
//! files; and the warning for each SIPp flag that changes nothing.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use common::have;
use common::load::{finish, free_port, only_file as file, read, sigkit_load as sigkit, wait_bound};

/// A fresh folder for one run's files.
fn folder(name: &str) -> PathBuf {
    common::load::folder("sipp-trace", name)
}

/// A UAS of sigkit's on `port` answering `calls` calls (with `extra` flags), in `dir`.
fn sigkit_uas(dir: &Path, port: u16, calls: u32, extra: &[&str]) -> Child {
    let (p, m) = (port.to_string(), calls.to_string());
    let mut args = vec!["-sn", "uas", "-i", "127.0.0.1", "-p", &p, "-m", &m, "-timeout", "30s"];
    args.extend_from_slice(extra);
    let child = sigkit(dir, &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_bound(port);
    child
}

/// SIPp with `args` in `dir`, to its end (its own -timeout bounds it).
fn sipp(dir: &Path, args: &[&str]) -> Output {
    Command::new("sipp")
        .args(args)
        .args(["-nostdin", "-timeout", "30s"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `<prefix><pid>_<suffix>` with `pid` the process's: SIPp's file name.
fn named(dir: &Path, prefix: &str, pid: u32, suffix: &str) -> PathBuf {
    let p = dir.join(format!("{prefix}_{pid}_{suffix}"));
    assert!(p.exists(), "{} is missing; {:?}", p.display(), std::fs::read_dir(dir).unwrap().collect::<Vec<_>>());
    p
}

/// Whether `s` has the layout of `pattern`, where `d` stands for a digit
/// and any other character for itself.
fn layout(s: &str, pattern: &str) -> bool {
    s.len() == pattern.len()
        && s.chars().zip(pattern.chars()).all(|(c, p)| if p == 'd' { c.is_ascii_digit() } else { c == p })
}

/// A statistics file's header and rows, split at `;`.
fn stat_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = read(path);
    let mut lines = text.lines();
    let split = |l: &str| l.split(';').map(String::from).collect::<Vec<_>>();
    let head = split(lines.next().unwrap());
    (head, lines.map(split).collect())
}

/// The header of SIPp's statistics file and of sigkit's for the same
/// built-in scenario are the same, column for column; every row has as
/// many fields as the header; the counts are the run's.
#[test]
fn trace_stat_writes_sipps_columns_for_the_same_scenario() {
    if !have("sipp") {
        return;
    }
    // SIPp's UAC against sigkit's UAS, and sigkit's UAC against SIPp's
    // UAS, both pairs at once (SIPp's UAS waits out its 4 s timewait).
    let (a, b) = (folder("stat-a"), folder("stat-b"));
    let (port_a, port_b) = (free_port(), free_port());
    let uas = sigkit_uas(&a, port_a, 3, &["-trace_stat", "-fd", "1"]);
    let b2 = b.clone();
    let sipp_uas = std::thread::spawn(move || {
        let p = port_b.to_string();
        sipp(&b2, &["-sn", "uas", "-i", "127.0.0.1", "-p", &p, "-m", "3", "-trace_stat", "-fd", "1"])
    });
    wait_bound(port_b);
    let (pa, pb) = (free_port().to_string(), format!("127.0.0.1:{port_b}"));
    let target_a = format!("127.0.0.1:{port_a}");
    let sipp_uac = sipp(
        &a,
        &["-sn", "uac", "-i", "127.0.0.1", "-p", &pa, "-r", "10", "-m", "3", "-trace_stat", "-fd", "1", &target_a],
    );
    assert!(sipp_uac.status.success(), "{}", String::from_utf8_lossy(&sipp_uac.stdout));
    let uac = sigkit(&b, &["-sn", "uac", "-r", "10", "-m", "3", "-trace_stat", "-fd", "1", "-timeout", "30s", &pb])
        .output()
        .unwrap();
    assert!(uac.status.success(), "{}", String::from_utf8_lossy(&uac.stderr));
    let uas = finish(uas);
    assert!(uas.status.success(), "{}", String::from_utf8_lossy(&uas.stderr));
    sipp_uas.join().unwrap();

    for (role, dir) in [("uac", &b), ("uas", &a)] {
        let ours = file(dir, &format!("{role}_"), "_.csv");
        let theirs = file(if role == "uac" { &a } else { &b }, &format!("{role}_"), "_.csv");
        let (our_head, our_rows) = stat_rows(&ours);
        let (their_head, their_rows) = stat_rows(&theirs);
        assert_eq!(our_head, their_head, "{role}: the header of {} and {}", ours.display(), theirs.display());
        // 18 columns, 25 pairs of counters, 4 for the response time, 4 for
        // the call length, 10 and 9 buckets; each ends with the delimiter.
        assert_eq!(our_head.len(), 18 + 50 + 4 + 4 + 10 + 9 + 1, "{our_head:?}");
        assert!(our_head.last().unwrap().is_empty());
        for (who, rows) in [("sigkit", &our_rows), ("SIPp", &their_rows)] {
            assert!(rows.len() >= 2, "{who} {role}: a row at the start and one at the end: {rows:?}");
            for r in rows {
                assert_eq!(r.len(), our_head.len(), "{who} {role}: {r:?}");
                assert!(layout(&r[3], "dd:dd:dd") && r[0].split('\t').count() == 3, "{who} {role}: {r:?}");
            }
        }
        let col = |name: &str| our_head.iter().position(|h| h == name).unwrap();
        let last = our_rows.last().unwrap();
        assert_eq!(last[col("SuccessfulCall(C)")], "3", "{role}: {last:?}");
        assert_eq!(last[col("FailedCall(C)")], "0", "{role}: {last:?}");
        let created = if role == "uac" { "OutgoingCall(C)" } else { "IncomingCall(C)" };
        assert_eq!(last[col(created)], "3", "{role}: {last:?}");
        let buckets: u64 = our_head
            .iter()
            .zip(last)
            .filter(|(h, _)| h.starts_with("ResponseTimeRepartition1_"))
            .map(|(_, v)| v.parse::<u64>().unwrap())
            .sum();
        assert_eq!(buckets, 3, "{role}: one response time per call: {last:?}");
        assert_eq!(our_rows[0][col("SuccessfulCall(C)")], "0", "the first row is the start's");
    }
}

/// SIGTERM, as `timeout` and CI send it, ends a run as `-timeout` does:
/// the summary printed and the statistics file complete; SIGINT likewise.
#[test]
fn sigterm_ends_the_run_with_its_summary_and_files() {
    let dir = folder("sigterm");
    let port = free_port();
    let uas = sigkit(&dir, &["-sn", "uas", "-i", "127.0.0.1", "-p", &port.to_string(), "-timeout", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_bound(port);
    let target = format!("127.0.0.1:{port}");
    let uac = sigkit(
        &dir,
        &["-sn", "uac", "-r", "20", "-d", "50", "-trace_stat", "-fd", "500ms", "-timeout", "60s", &target],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let kill = |child: &Child, signal: &str| {
        assert!(Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap().success());
    };
    kill(&uac, "-TERM");
    let pid = uac.id();
    let uac = finish(uac);
    let stdout = String::from_utf8_lossy(&uac.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&uac.stderr);
    assert_eq!(uac.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("SIGTERM: ending the run"), "{stderr}");
    let successful: u64 = stdout
        .strip_prefix("uac: ")
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no summary: {stdout}"));
    assert!(successful >= 10, "about 40 calls in 2 s: {stdout}");
    let (head, rows) = stat_rows(&named(&dir, "uac", pid, ".csv"));
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    assert!(rows.len() >= 4, "a row every 500 ms and the last: {rows:?}");
    assert_eq!(rows.last().unwrap()[col("SuccessfulCall(C)")], successful.to_string());
    kill(&uas, "-INT");
    let uas = finish(uas);
    let stdout = String::from_utf8_lossy(&uas.stdout);
    assert!(stdout.starts_with("uas: ") && stdout.contains(" successful, "), "{stdout}");
    assert!(String::from_utf8_lossy(&uas.stderr).contains("SIGINT: ending the run"));
}

/// One entry of a message log: whether sent, the length its line gives,
/// the message.
type Entry = (bool, usize, String);

/// A message log split into its entries as SIPp writes them: a line of 47
/// dashes and the time, "UDP message sent (N bytes):" or "UDP message
/// received [N] bytes :", an empty line, the N bytes, a newline.
fn message_entries(text: &str) -> Vec<Entry> {
    let mut rest = text;
    let mut entries = Vec::new();
    let dashes = "-".repeat(47);
    while !rest.is_empty() {
        let (first, after) = rest.split_once('\n').unwrap();
        let time = first.strip_prefix(&format!("{dashes} ")).unwrap_or_else(|| panic!("{first:?}"));
        assert!(layout(time, "dddd-dd-dd dd:dd:dd.dddddd"), "{first:?}");
        let (second, after) = after.split_once("\n\n").unwrap();
        let (sent, len) = if let Some(n) = second.strip_prefix("UDP message sent (") {
            (true, n.strip_suffix(" bytes):").unwrap())
        } else {
            let n = second.strip_prefix("UDP message received [").unwrap_or_else(|| panic!("{second:?}"));
            (false, n.strip_suffix("] bytes :").unwrap())
        };
        let len: usize = len.parse().unwrap();
        let body = &after[..len];
        assert_eq!(&after[len..len + 1], "\n", "{second}: the message then a newline");
        entries.push((sent, len, body.to_string()));
        rest = &after[len + 1..];
    }
    entries
}

/// `-trace_msg`: the same layout as SIPp's messages file, every message
/// of the run in it, in each direction.
#[test]
fn trace_msg_writes_each_message_as_sipp_does() {
    if !have("sipp") {
        return;
    }
    let dir = folder("msg");
    let port = free_port();
    let uas = sigkit_uas(&dir, port, 2, &["-trace_msg"]);
    let target = format!("127.0.0.1:{port}");
    let sipp_out = sipp(
        &dir,
        &[
            "-sn",
            "uac",
            "-i",
            "127.0.0.1",
            "-p",
            &free_port().to_string(),
            "-r",
            "10",
            "-m",
            "2",
            "-trace_msg",
            &target,
        ],
    );
    assert!(sipp_out.status.success(), "{}", String::from_utf8_lossy(&sipp_out.stdout));
    let pid = uas.id();
    assert!(finish(uas).status.success());
    let ours = message_entries(&read(&named(&dir, "uas", pid, "messages.log")));
    let theirs = message_entries(&read(&file(&dir, "uac_", "_messages.log")));
    // What one sent, the other received: INVITE, ACK, BYE; 180, 200, 200.
    let count = |e: &[Entry], sent: bool| e.iter().filter(|x| x.0 == sent).count();
    assert_eq!((count(&ours, true), count(&ours, false)), (6, 6), "{ours:?}");
    assert_eq!((count(&theirs, true), count(&theirs, false)), (6, 6));
    let mut got: Vec<&str> = ours.iter().filter(|e| !e.0).map(|e| e.2.as_str()).collect();
    let mut sent: Vec<&str> = theirs.iter().filter(|e| e.0).map(|e| e.2.as_str()).collect();
    got.sort_unstable();
    sent.sort_unstable();
    assert_eq!(got, sent, "the messages SIPp sent, as sigkit logged them received");
    assert!(ours.iter().any(|e| e.0 && e.2.starts_with("SIP/2.0 180 Ringing\r\n")));
}

/// A UAS scenario that turns every call down with 486.
const BUSY_UAS: &str = r#"<?xml version="1.0" encoding="UTF-8" ?>
<scenario name="busy">
  <recv request="INVITE"/>
  <send>
    <![CDATA[
      SIP/2.0 486 Busy Here
      [last_Via:]
      [last_From:]
      [last_To:];tag=[pid]busy[call_number]
      [last_Call-ID:]
      [last_CSeq:]
      Content-Length: 0
    ]]>
  </send>
</scenario>
"#;

/// `-trace_err`: SIPp's first line, time stamps and words for a call
/// aborted on an unexpected 486, from SIPp and from sigkit calling the
/// same UAS.
#[test]
fn trace_err_writes_sipps_error_log() {
    if !have("sipp") {
        return;
    }
    let dir = folder("err");
    std::fs::write(dir.join("busy.xml"), BUSY_UAS).unwrap();
    let port = free_port();
    let p = port.to_string();
    let uas = sigkit(&dir, &["-sf", "busy.xml", "-i", "127.0.0.1", "-p", &p, "-timeout", "30s", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_bound(port);
    let target = format!("127.0.0.1:{port}");
    let (a, b) = (folder("err-sipp"), folder("err-sigkit"));
    let _ = sipp(
        &a,
        &[
            "-sn",
            "uac",
            "-i",
            "127.0.0.1",
            "-p",
            &free_port().to_string(),
            "-r",
            "10",
            "-m",
            "2",
            "-trace_err",
            &target,
        ],
    );
    let ours =
        sigkit(&b, &["-sn", "uac", "-r", "10", "-m", "2", "-trace_err", "-timeout", "30s", &target]).output().unwrap();
    assert_eq!(ours.status.code(), Some(1), "two calls failed");
    let mut uas = uas;
    let _ = uas.kill();
    let _ = uas.wait();
    for (who, path) in
        [("SIPp", file(&a, "uac_", "_errors.log")), ("sigkit", named(&b, "uac", ours_pid(&b), "errors.log"))]
    {
        let text = read(&path);
        let body = text.strip_prefix("The following events occurred:\n").unwrap_or_else(|| panic!("{who}: {text:?}"));
        let stamp = &body[..body.find(": ").unwrap()];
        assert!(layout(stamp, "dddd-dd-dd\tdd:dd:dd.dddddd\tdddddddddd.dddddd"), "{who}: {stamp:?}");
        let entry = &body[stamp.len() + 2..];
        assert!(entry.starts_with("Aborting call on unexpected message for Call-Id '"), "{who}: {entry:?}");
        assert!(
            entry.contains("': while expecting '100' (index 1), received 'SIP/2.0 486 Busy Here\r\n"),
            "{who}: {entry:?}"
        );
    }
}

/// The pid in the one `uac_<pid>_*` file name of `dir`.
fn ours_pid(dir: &Path) -> u32 {
    let name = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("uac_"))
        .unwrap();
    name.split('_').nth(1).unwrap().parse().unwrap()
}

/// `-trace_rtt` with `-rtt_freq 1`: SIPp's header, and a row per response
/// time with its end time, its length and its name.
#[test]
fn trace_rtt_writes_sipps_response_time_file() {
    if !have("sipp") {
        return;
    }
    let (a, b) = (folder("rtt-sipp"), folder("rtt-sigkit"));
    let port = free_port();
    let uas = sigkit_uas(&a, port, 6, &[]);
    let target = format!("127.0.0.1:{port}");
    let _ = sipp(
        &a,
        &[
            "-sn",
            "uac",
            "-i",
            "127.0.0.1",
            "-p",
            &free_port().to_string(),
            "-r",
            "10",
            "-m",
            "3",
            "-trace_rtt",
            "-rtt_freq",
            "1",
            &target,
        ],
    );
    let ours =
        sigkit(&b, &["-sn", "uac", "-r", "10", "-m", "3", "-trace_rtt", "-rtt_freq", "1", "-timeout", "30s", &target])
            .output()
            .unwrap();
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    assert!(finish(uas).status.success());
    for (who, path) in [("SIPp", file(&a, "uac_", "_rtt.csv")), ("sigkit", file(&b, "uac_", "_rtt.csv"))] {
        let text = read(&path);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("Date_ms;response_time_ms;rtd_no"), "{who}");
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(';').collect()).collect();
        assert_eq!(rows.len(), 3, "{who}: {text}");
        for r in &rows {
            let (at, rtt) = (r[0].parse::<f64>().unwrap(), r[1].parse::<f64>().unwrap());
            // SIPp's clock (CLOCK_MONOTONIC_COARSE) can make a response time 0.
            assert!(r.len() == 3 && at >= rtt && (0.0..1000.0).contains(&rtt) && r[2] == "1", "{who}: {r:?}");
        }
    }
}

/// `-trace_logs`: the scenario's `<log>` actions, the same lines from SIPp
/// and from sigkit for the same scenario file.
#[test]
fn trace_logs_writes_the_same_lines_as_sipp() {
    if !have("sipp") {
        return;
    }
    let (a, b) = (folder("logs-sipp"), folder("logs-sigkit"));
    let dump = Command::new(env!("CARGO_BIN_EXE_sigkit")).args(["load", "-sd", "uac"]).output().unwrap();
    let xml = String::from_utf8(dump.stdout).unwrap().replace(
        "</scenario>",
        "  <nop><action><log message=\"call [call_number] of [service] to [remote_port]\"/></action></nop>\n</scenario>",
    );
    for d in [&a, &b] {
        std::fs::write(d.join("logged.xml"), &xml).unwrap();
    }
    let port = free_port();
    let uas = sigkit_uas(&a, port, 6, &[]);
    let target = format!("127.0.0.1:{port}");
    // SIPp 3.6 opens the log file only if -trace_logs comes before -sf.
    let _ = sipp(
        &a,
        &[
            "-trace_logs",
            "-sf",
            "logged.xml",
            "-i",
            "127.0.0.1",
            "-p",
            &free_port().to_string(),
            "-r",
            "10",
            "-m",
            "3",
            &target,
        ],
    );
    let ours = sigkit(&b, &["-sf", "logged.xml", "-trace_logs", "-r", "10", "-m", "3", "-timeout", "30s", &target])
        .output()
        .unwrap();
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    assert!(finish(uas).status.success());
    let lines = |p: PathBuf| {
        let mut l: Vec<String> = read(&p).lines().map(String::from).collect();
        l.sort();
        l
    };
    let theirs = lines(file(&a, "logged_", "_logs.log"));
    let expected: Vec<String> = (1..=3).map(|n| format!("call {n} of service to {port}")).collect();
    assert_eq!(theirs, expected);
    assert_eq!(lines(file(&b, "logged_", "_logs.log")), expected);
}

/// Every SIPp flag given that changes nothing here says so on stderr, one
/// line each (`-aa`, implemented, does not); `-trace_screen` writes the
/// scenario screen and the summary printed; `-key` and `-set` fill
/// `[NAME]` and `[$NAME]`.
#[test]
fn ignored_flags_are_named_and_keys_fill_the_scenario() {
    let dir = folder("flags");
    let port = free_port();
    let uas = sigkit_uas(&dir, port, 2, &["-trace_msg"]);
    let target = format!("127.0.0.1:{port}");
    let dump = Command::new(env!("CARGO_BIN_EXE_sigkit")).args(["load", "-sd", "uac"]).output().unwrap();
    let xml = String::from_utf8(dump.stdout).unwrap().replacen(
        "Subject: Performance Test",
        "Subject: [subject]\n      X-Run: [$run]",
        1,
    );
    std::fs::write(dir.join("keyed.xml"), xml).unwrap();
    let out = sigkit(
        &dir,
        &[
            "-sf",
            "keyed.xml",
            "-key",
            "subject",
            "load test",
            "-set",
            "run",
            "42",
            "-r",
            "10",
            "-m",
            "2",
            "-bg",
            "-aa",
            "-rate_max",
            "50",
            "-trace_screen",
            "-timeout",
            "30s",
            &target,
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.lines().any(|l| l == "sigkit load: -bg is accepted but not implemented; ignored"), "{stderr}");
    assert!(!stderr.contains("-aa"), "{stderr}");
    assert!(stderr.contains("sigkit load: -rate_max does nothing without -rate_increase; ignored"), "{stderr}");
    let screen = read(&file(&dir, "keyed_", "_screen.log"));
    let end = "------------------------------ Test Terminated --------------------------------\n\n";
    let (table, summary) = screen.split_once(end).unwrap_or_else(|| panic!("{screen}"));
    assert!(table.starts_with("------------------------------ Scenario Screen"), "{screen}");
    assert!(table.contains("\n      INVITE ---------->         2         "), "{screen}");
    assert_eq!(summary, String::from_utf8_lossy(&out.stdout), "the summary printed");
    assert!(summary.starts_with("uac: 2 successful, 0 failed"), "{screen}");
    let pid = uas.id();
    assert!(finish(uas).status.success());
    let log = read(&named(&dir, "uas", pid, "messages.log"));
    assert!(log.contains("\r\nSubject: load test\r\nX-Run: 42\r\n"), "{log}");
}
