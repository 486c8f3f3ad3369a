//! `sigkit load`'s scenario screen and `-aa`, beside the real SIPp (3.6):
//! the `-trace_screen` table of a run, row for row as SIPp draws it for
//! the same calls, its counts those of the run's `-trace_stat` file; the
//! live screen in a terminal and no cursor codes anywhere else; and `-aa`
//! answering an INFO in a call as SIPp's does, the call succeeding, where
//! without it the INFO is an unexpected message for both.
#![allow(clippy::unwrap_used)] // a test fails by panicking

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::have;
use common::load::{finish, free_port, only_file, read, sigkit_load as sigkit, wait_bound};

/// A fresh folder for one test's files.
fn folder(name: &str) -> PathBuf {
    common::load::folder("load-screen", name)
}

/// The text of the one file of `dir` named `prefix*suffix`.
fn file(dir: &Path, prefix: &str, suffix: &str) -> String {
    read(&only_file(dir, prefix, suffix))
}

/// A sigkit UAS on `port` (`args`: the scenario and its flags), in `dir`, once it holds the port.
fn uas(dir: &Path, port: u16, args: &[&str]) -> Child {
    let p = port.to_string();
    let mut all = vec!["-i", "127.0.0.1", "-p", &p];
    all.extend_from_slice(args);
    let child = sigkit(dir, &all).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_bound(port);
    child
}

/// The rows of the first scenario screen in `text`: from the line after
/// the column titles to the blank line.
fn table(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.contains("Messages  Retrans   Timeout   Unexpected-Msg"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// A row's label (arrow and method or code) and its counts, blank columns left out.
fn cells(row: &str) -> (String, Vec<u64>) {
    let (label, counts) = row.split_at(33.min(row.len()));
    (label.trim_end().to_string(), counts.split_whitespace().filter_map(|c| c.parse().ok()).collect())
}

/// The last row of a `-trace_stat` file, by column name.
fn stat_last(text: &str) -> impl Fn(&str) -> u64 {
    let mut lines = text.lines();
    let head: Vec<String> = lines.next().unwrap().split(';').map(String::from).collect();
    let last: Vec<String> = lines.last().unwrap().split(';').map(String::from).collect();
    move |name: &str| {
        let i = head.iter().position(|h| h == name).unwrap_or_else(|| panic!("{name}"));
        last[i].parse().unwrap()
    }
}

/// sigkit's UAC and SIPp's, five calls each to the same sigkit UAS: their
/// `-trace_screen` tables have the same rows (arrows, methods and codes,
/// response-time marks, message counts); sigkit's counts are those of its
/// `-trace_stat` file and of the summary it printed.
#[test]
fn trace_screen_rows_are_sipps_and_count_the_run() {
    if !have("sipp") {
        return;
    }
    let dir = folder("rows");
    let port = free_port();
    let server = uas(&dir, port, &["-sn", "uas", "-m", "10", "-timeout", "60s", "-trace_screen"]);
    let target = format!("127.0.0.1:{port}");
    let ours = sigkit(
        &dir,
        &["-sn", "uac", "-r", "10", "-m", "5", "-trace_screen", "-trace_stat", "-timeout", "30s", &target],
    )
    .output()
    .unwrap();
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    // SIPp names its file as sigkit does (uac_<pid>_screen.log): it runs in a folder of its own.
    let sipp_dir = dir.join("sipp");
    std::fs::create_dir_all(&sipp_dir).unwrap();
    let theirs = Command::new("sipp")
        .args(["-sn", "uac", "-r", "10", "-m", "5", "-trace_screen", "-nostdin", "-timeout", "30s", &target])
        .current_dir(&sipp_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(theirs.status.success(), "{}", String::from_utf8_lossy(&theirs.stdout));
    assert!(finish(server).status.success());

    let screen = file(&dir, "uac_", "_screen.log");
    let sipp_screen = file(&sipp_dir, "uac_", "_screen.log");
    let (mine, sipps) = (table(&screen), table(&sipp_screen));
    assert_eq!(mine.len(), 9, "{screen}");
    let labels = |t: &[String]| t.iter().map(|r| cells(r).0).collect::<Vec<_>>();
    assert_eq!(labels(&mine), labels(&sipps), "ours:\n{screen}\nSIPp's:\n{sipp_screen}");
    let messages = |t: &[String]| t.iter().map(|r| cells(r).1.first().copied()).collect::<Vec<_>>();
    assert_eq!(messages(&mine), messages(&sipps));
    assert_eq!(messages(&mine), [5, 0, 5, 0, 5, 5, 5, 5, 5].map(Some));

    let stat = stat_last(&file(&dir, "uac_", "_.csv"));
    let row = |label: &str| mine.iter().map(|r| cells(r)).find(|(l, _)| l.trim_start() == label).unwrap().1;
    assert_eq!(row("INVITE ---------->")[0], stat("OutgoingCall(C)"));
    assert_eq!(cells(mine.last().unwrap()).1[0], stat("SuccessfulCall(C)"), "the 200 to the BYE ends each call");
    let sent_again: u64 = ["INVITE ---------->", "ACK ---------->", "BYE ---------->"].iter().map(|l| row(l)[1]).sum();
    assert_eq!(sent_again, stat("Retransmissions(C)"), "the Retrans column of sends is SIPp's Retransmissions");
    let stdout = String::from_utf8_lossy(&ours.stdout);
    assert!(stdout.starts_with(&format!("uac: {} successful, 0 failed", stat("SuccessfulCall(C)"))), "{stdout}");
    assert!(screen.contains("\n  Call limit 5 hit, "), "{screen}");
    assert!(screen.contains(" 5 successful, 0 failed calls\n"), "{screen}");

    // The statistics screen after it, SIPp's rows; the calls those of the run.
    let stats = |text: &str| -> Vec<(String, String)> {
        text.lines()
            .skip_while(|l| !l.contains("Statistics Screen"))
            .skip(1)
            .take_while(|l| !l.starts_with("-----") || l.contains('+'))
            .filter(|l| !l.contains('+'))
            .map(|l| {
                let mut f = l.split('|').map(|f| f.trim().to_string());
                (f.next().unwrap_or_default(), f.next_back().unwrap_or_default())
            })
            .collect()
    };
    let (ours_stats, sipps_stats) = (stats(&screen), stats(&sipp_screen));
    let names = |s: &[(String, String)]| s.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours_stats), names(&sipps_stats), "ours:\n{screen}\nSIPp's:\n{sipp_screen}");
    let total = |s: &[(String, String)], name: &str| s.iter().find(|(n, _)| n == name).unwrap().1.clone();
    for name in ["Successful call", "Failed call", "Total Calls created", "Outgoing calls created"] {
        assert_eq!(total(&ours_stats, name), total(&sipps_stats, name), "{name}");
    }
    assert_eq!(total(&ours_stats, "Successful call"), stat("SuccessfulCall(C)").to_string());

    // The UAS's screen: its arrows the other way, ten calls taken.
    let server_rows = table(&file(&dir, "uas_", "_screen.log"));
    assert_eq!(cells(&server_rows[0]), ("  ----------> INVITE".to_string(), vec![10, 0, 0, 0]));
    assert_eq!(cells(&server_rows[6]).0, "  [   4000ms] Pause");
}

/// A UAS that sends an INFO once the call is up, and waits for its 200.
const INFO_UAS: &str = r#"<?xml version="1.0" encoding="UTF-8" ?>
<scenario name="uas sending INFO">
  <recv request="INVITE"/>
  <send retrans="500"><![CDATA[
SIP/2.0 200 OK
[last_Via:]
[last_From:]
[last_To:];tag=[pid]SIPpTag01[call_number]
[last_Call-ID:]
[last_CSeq:]
Contact: <sip:[local_ip]:[local_port];transport=[transport]>
Content-Length: 0

]]></send>
  <recv request="ACK"/>
  <send retrans="500"><![CDATA[
INFO sip:sipp@[remote_ip]:[remote_port] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:[service]@[local_ip]:[local_port]>;tag=[pid]SIPpTag01[call_number]
To: <sip:sipp@[remote_ip]:[remote_port]>[peer_tag_param]
[last_Call-ID:]
CSeq: 1 INFO
Max-Forwards: 70
Content-Length: 0

]]></send>
  <recv response="200"/>
  <recv request="BYE"/>
  <send><![CDATA[
SIP/2.0 200 OK
[last_Via:]
[last_From:]
[last_To:]
[last_Call-ID:]
[last_CSeq:]
Content-Length: 0

]]></send>
</scenario>
"#;

/// An INFO in the call, while the UAC holds: with `-aa` sigkit's UAC, as
/// SIPp's, answers it with 200 OK (`AutoAnswered` 1) and the call
/// succeeds; without, for both it is an unexpected message that fails
/// the call (`FailedUnexpectedMessage` 1), shown at the pause's row.
#[test]
fn aa_answers_an_info_in_the_call_as_sipp_does() {
    let dir = folder("aa");
    std::fs::write(dir.join("info_uas.xml"), INFO_UAS).unwrap();
    let columns = ["SuccessfulCall(C)", "FailedCall(C)", "FailedUnexpectedMessage(C)", "AutoAnswered(C)"];
    let peers: &[&str] = if have("sipp") { &["sigkit", "sipp"] } else { &["sigkit"] };
    for &who in peers {
        for aa in [true, false] {
            let run = dir.join(format!("{who}-{aa}"));
            std::fs::create_dir_all(&run).unwrap();
            let port = free_port();
            let server = uas(&run, port, &["-sf", "../info_uas.xml", "-m", "1", "-timeout", "3s"]);
            let target = format!("127.0.0.1:{port}");
            let mut args =
                vec!["-sn", "uac", "-m", "1", "-d", "1000", "-trace_stat", "-trace_screen", "-timeout", "10s"];
            if aa {
                args.push("-aa");
            }
            args.push(&target);
            let out = if who == "sigkit" {
                sigkit(&run, &args).output().unwrap()
            } else {
                Command::new("sipp")
                    .args(&args)
                    .arg("-nostdin")
                    .current_dir(&run)
                    .stdin(Stdio::null())
                    .output()
                    .unwrap()
            };
            let server = finish(server);
            assert_eq!(out.status.success(), aa, "{who} -aa {aa}: {}", String::from_utf8_lossy(&out.stderr));
            let stat = stat_last(&file(&run, "uac_", "_.csv"));
            let got: Vec<u64> = columns.iter().map(|c| stat(c)).collect();
            let expected = if aa { [1, 0, 0, 1] } else { [0, 1, 1, 0] };
            assert_eq!(got, expected, "{who} -aa {aa}: {columns:?}");
            let server_out = String::from_utf8_lossy(&server.stdout);
            if aa {
                assert!(server_out.starts_with("uas: 1 successful, 0 failed"), "{who}: {server_out}");
            }
            if who == "sigkit" {
                let screen = file(&run, "uac_", "_screen.log");
                let pause = table(&screen).into_iter().find(|r| r.contains("Pause [")).unwrap();
                assert_eq!(cells(&pause).1, [1, u64::from(!aa)], "{screen}");
                assert_eq!(screen.contains("\n  1 auto-answered (-aa)\n"), aa, "{screen}");
            }
        }
    }
}

/// Off a terminal (stdout and stderr piped) a run writes no cursor code,
/// with or without `--bar`; in one (under `script`, a pseudo-terminal) the
/// screen is drawn on the alternate screen, redrawn in place, and printed
/// when the run ends, before the summary.
#[test]
fn the_screen_only_in_a_terminal() {
    let dir = folder("tty");
    let port = free_port();
    let server = uas(&dir, port, &["-sn", "uas", "-m", "10", "-timeout", "60s"]);
    let target = format!("127.0.0.1:{port}");
    for extra in [None, Some("--bar")] {
        let mut args = vec!["-sn", "uac", "-r", "20", "-m", "2", "-timeout", "30s", &target];
        args.extend(extra);
        let out = sigkit(&dir, &args).output().unwrap();
        assert!(out.status.success());
        for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(!bytes.contains(&0x1b), "{name} with {extra:?}: {:?}", String::from_utf8_lossy(bytes));
        }
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("uac: 2 successful"));
    }
    if have("script") {
        let bin = env!("CARGO_BIN_EXE_sigkit");
        let line = format!("{bin} load -sn uac -r 5 -m 6 -d 200 -f 200ms -timeout 30s {target}");
        let out = Command::new("script").args(["-q", "-e", "-c", &line, "/dev/null"]).stdin(Stdio::null()).output();
        let out = out.unwrap();
        let tty = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{tty}");
        let (live, after) = tty.split_once("\x1b[?1049l").unwrap_or_else(|| panic!("{tty:?}"));
        assert!(live.contains("\x1b[?1049h"), "the alternate screen: {live:?}");
        let frames = live.matches("\x1b[H------------------------------ Scenario Screen").count();
        assert!(frames >= 3, "redrawn every 200 ms over more than a second: {frames} frames");
        assert!(live.contains("      INVITE ---------->  "), "{live:?}");
        assert!(!after.contains('\x1b'), "the final screen in plain text: {after:?}");
        let end = after.find("Test Terminated").unwrap_or_else(|| panic!("{after:?}"));
        assert!(after.find("uac: 6 successful").is_some_and(|s| s > end), "{after:?}");
        assert!(after.contains("      INVITE ---------->         6  "), "{after:?}");
    }
    assert!(finish(server).status.success());
}
