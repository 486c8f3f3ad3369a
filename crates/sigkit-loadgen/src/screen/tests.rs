use super::*;
use crate::metrics::StepMessages;

fn info(scenario: &Scenario, client: bool, port: u16) -> ScreenInfo {
    ScreenInfo {
        client,
        local_port: port,
        remote: client.then(|| SocketAddr::from(([127, 0, 0, 1], 15060))),
        transport: "UDP",
        rate_period: Duration::from_secs(1),
        hold: Duration::ZERO,
        limit: None,
        max_calls: Some(5),
        rows: rows_of(scenario, Duration::ZERO),
        rtd_names: scenario.rtds.clone(),
    }
}

/// Counts per step, in the scenario's order: (sent or received, retransmissions, timeouts, unexpected, sessions).
fn steps(counts: &[(u64, u64, u64, u64, u64)], scenario: &Scenario) -> Vec<StepMessages> {
    scenario
        .steps
        .iter()
        .zip(counts)
        .map(|(s, &(n, re, timeouts, unexpected, sessions))| match s.kind {
            StepKind::Send(_) => StepMessages { sent: n, sent_retrans: re, timeouts, ..StepMessages::default() },
            _ => StepMessages { recv: n, recv_retrans: re, timeouts, unexpected, sessions, ..StepMessages::default() },
        })
        .collect()
}

/// The built-in uac after five calls: the lines SIPp 3.6.1 wrote to its
/// -trace_screen file for the same run of its own uac, character for
/// character (its scheduler and socket lines aside, which sigkit has not).
#[test]
fn the_uac_screen_has_sipps_header_and_rows() {
    let scenario = crate::scenario::built_in("uac").unwrap();
    let info = info(&scenario, true, 15061);
    let p = Progress {
        elapsed_s: 0.512,
        rate: 10.0,
        attempted: 5,
        successful: 5,
        peak_active: 1,
        client: true,
        max_calls: Some(5),
        finished: true,
        period_s: 0.0,
        scenario_steps: steps(
            &[(5, 0, 0, 0, 0), (0, 0, 0, 0, 0), (5, 0, 0, 0, 0), (0, 0, 0, 0, 0), (5, 0, 0, 0, 0), (5, 0, 0, 0, 0)]
                .into_iter()
                .chain([(0, 0, 0, 0, 5), (5, 0, 0, 0, 0), (5, 0, 0, 0, 0)])
                .collect::<Vec<_>>(),
            &scenario,
        ),
        ..Progress::default()
    };
    let lines = scenario_screen(&info, &p);
    let expected = [
        "------------------------------ Scenario Screen -------- [1-9]: Change Screen --",
        "  Call rate (length)   Port   Total-time  Total-calls  Remote-host",
        "  10.0(0 ms)/1.000s   15061      0.51 s            5  127.0.0.1:15060(UDP)",
        "",
        "  Call limit 5 hit, 0.0 s period          5 successful, 0 failed calls",
        "  0 calls                                 Peak was 1 calls, after 0 s",
        "  0 dead call msg (discarded)             0 out-of-call msg (discarded)",
        "  0 retransmissions                       Call rate 0.0 cps (9.8 overall)",
        "",
        "                                 Messages  Retrans   Timeout   Unexpected-Msg",
        "      INVITE ---------->         5         0         0                         ",
        "         100 <----------         0         0         0         0               ",
        "         180 <----------         5         0         0         0               ",
        "         183 <----------         0         0         0         0               ",
        "         200 <----------  E-RTD1 5         0         0         0               ",
        "         ACK ---------->         5         0                                   ",
        "       Pause [      0ms]         5                             0        ",
        "         BYE ---------->         5         0         0                         ",
        "         200 <----------         5         0         0         0               ",
        "",
        "------------------------------ Test Terminated --------------------------------",
    ];
    assert_eq!(lines, expected);
    // A longer rate pushes the columns right, as SIPp's does ("10.0(500 ms)/1.000s   15061").
    let held = ScreenInfo { hold: Duration::from_millis(500), ..info };
    assert_eq!(
        scenario_screen(&held, &p)[2],
        "  10.0(500 ms)/1.000s   15061      0.51 s            5  127.0.0.1:15060(UDP)"
    );
}

/// The built-in uas, arrows the other way, SIPp's rows (its `crlf` blank
/// lines aside); retransmissions, a timeout and an unexpected message
/// land in their columns, and the bottom line says the run goes on.
#[test]
fn the_uas_screen_turns_the_arrows_and_fills_every_column() {
    let scenario = crate::scenario::built_in("uas").unwrap();
    let mut info = info(&scenario, false, 15060);
    info.max_calls = None;
    let p = Progress {
        elapsed_s: 5.019,
        attempted: 5,
        successful: 3,
        failed: 2,
        active: 0,
        peak_active: 5,
        peak_at_s: 1.2,
        dead_call: 1,
        retransmissions: 3,
        period_s: 1.0,
        period_created: 2,
        scenario_steps: steps(
            &[(5, 1, 0, 0, 0), (5, 0, 0, 0, 0), (5, 2, 1, 0, 0), (4, 0, 0, 1, 0), (3, 0, 0, 0, 0), (3, 0, 0, 0, 0)]
                .into_iter()
                .chain([(0, 0, 0, 0, 3)])
                .collect::<Vec<_>>(),
            &scenario,
        ),
        ..Progress::default()
    };
    let lines = scenario_screen(&info, &p);
    assert_eq!(
        lines[1..5],
        [
            "  Port   Total-time  Total-calls  Transport",
            "  15060      5.01 s            5  UDP",
            "",
            "  2 new calls during 1.000 s period       3 successful, 2 failed calls"
        ]
    );
    assert_eq!(lines[5], "  0 calls                                 Peak was 5 calls, after 1 s");
    assert_eq!(lines[6], "  1 dead call msg (discarded)           ");
    assert_eq!(lines[7], "  3 retransmissions                       Call rate 2.0 cps (1.0 overall)");
    let table = &lines[lines.iter().position(|l| l.contains("Unexpected-Msg")).unwrap() + 1..];
    assert_eq!(
        table,
        [
            "  ----------> INVITE             5         1         0         0               ",
            "  <---------- 180                5         0                                   ",
            "  <---------- 200                5         2         1                         ",
            "  ----------> ACK         E-RTD1 4         0         0         1               ",
            "  ----------> BYE                3         0         0         0               ",
            "  <---------- 200                3         0                                   ",
            "  [   4000ms] Pause              3                             0        ",
            "",
            "------------------------------ Sipp Server Mode -------------------------------",
        ]
    );
}

#[test]
fn the_bottom_line_follows_the_run() {
    let scenario = crate::scenario::built_in("uac").unwrap();
    let info = info(&scenario, true, 5061);
    let last = |p: &Progress| scenario_screen(&info, p).last().cloned().unwrap();
    let p = Progress { client: true, ..Progress::default() };
    assert_eq!(last(&p), "------ [+|-|*|/]: Adjust rate ---- [q]: Soft exit ---- [p]: Pause traffic -----");
    assert!(last(&Progress { paused: true, ..p.clone() }).contains("Traffic Paused"));
    assert!(last(&Progress { quitting: true, paused: true, ..p.clone() }).contains("Waiting for active calls"));
    assert!(last(&Progress { finished: true, quitting: true, ..p.clone() }).contains("Test Terminated"));
    for l in scenario_screen(&info, &p) {
        assert!(l.len() <= 80, "{l:?} is wider than SIPp's 80 columns");
    }
}

#[test]
fn lengths_as_sipp_writes_them() {
    let ms = Duration::from_millis;
    assert_eq!(time_string(ms(0)), "0ms");
    assert_eq!(time_string(ms(4000)), "4000ms");
    assert_eq!(time_string(Duration::from_micros(1500)), "1.50ms");
    assert_eq!(time_string(ms(12_345)), "12.3s");
    assert_eq!(time_string(ms(125_000)), "2:05");
    assert_eq!(time_string(ms(3_725_000)), "1:02:05");
    let xml = r#"<scenario><send><![CDATA[OPTIONS sip:x SIP/2.0
Call-ID: [call_id]

]]></send><pause min="10" max="20"/><pause distribution="exponential" mean="500"/><nop/><label id="a"/><recv response="200" timeout="1000"/></scenario>"#;
    let scenario = crate::scenario::parse(xml).unwrap();
    let rows = rows_of(&scenario, Duration::ZERO);
    assert_eq!(rows.len(), 5, "the label has no row");
    assert_eq!(rows[1].kind, RowKind::Pause { desc: "10ms/20ms".into() });
    assert_eq!(rows[2].kind, RowKind::Pause { desc: "Exp(500ms)".into() });
    assert_eq!(rows[3].kind, RowKind::Nop);
    assert_eq!((rows[4].step, &rows[4].kind), (5, &RowKind::Recv { label: "200".into() }));
    let info = ScreenInfo { rows, ..info(&scenario, true, 5061) };
    let lines = scenario_screen(&info, &Progress::default());
    assert!(lines.contains(&"       Pause [10ms/20ms]         0                             0        ".to_string()));
    assert!(lines.contains(&"              [ NOP ]              ".to_string()));
}

/// The statistics screen of the same five calls: SIPp 3.6.1's lines for
/// them, character for character (times aside, which are the clock's).
#[test]
fn the_statistics_screen_has_sipps_rows() {
    use crate::metrics::Moments;
    let scenario = crate::scenario::built_in("uac").unwrap();
    let info = info(&scenario, true, 15061);
    let p = Progress {
        elapsed_s: 0.51,
        attempted: 5,
        successful: 5,
        client: true,
        finished: true,
        rtd: vec![Moments { count: 5, sum: 0, sum_sq: 0 }],
        period_rtd: vec![Moments::default()],
        call_length: Moments { count: 5, sum: 12, sum_sq: 40 },
        ..Progress::default()
    };
    let start = std::time::UNIX_EPOCH + Duration::from_secs(1_795_982_167);
    let lines = statistics_screen(&info, &p, start);
    assert_eq!(lines[0], "----------------------------- Statistics Screen ------- [1-9]: Change Screen --");
    let at = |name: &str| lines.iter().find(|l| l.starts_with(&format!("  {name} "))).unwrap().clone();
    assert!(at("Start Time").ends_with("\t1795982167.000000         "), "{lines:#?}");
    assert!(at("Current Time").ends_with("\t1795982167.510000         "), "{lines:#?}");
    assert_eq!(at("Last Reset Time"), at("Current Time").replacen("Current Time   ", "Last Reset Time", 1));
    let expected = [
        "-------------------------+---------------------------+--------------------------",
        "  Counter Name           | Periodic value            | Cumulative value",
        "-------------------------+---------------------------+--------------------------",
        "  Elapsed Time           | 00:00:00:000000           | 00:00:00:510000          ",
        "  Call Rate              |    0.000 cps              |    9.804 cps             ",
        "-------------------------+---------------------------+--------------------------",
        "  Incoming calls created |        0                  |        0                 ",
        "  Outgoing calls created |        0                  |        5                 ",
        "  Total Calls created    |                           |        5                 ",
        "  Current Calls          |        0                  |                          ",
        "-------------------------+---------------------------+--------------------------",
        "  Successful call        |        0                  |        5                 ",
        "  Failed call            |        0                  |        0                 ",
        "-------------------------+---------------------------+--------------------------",
        "  Response Time 1        | 00:00:00:000000           | 00:00:00:000000          ",
        "  Call Length            | 00:00:00:000000           | 00:00:00:002000          ",
        "------------------------------ Test Terminated --------------------------------",
    ];
    assert_eq!(lines[4..], expected);
}
