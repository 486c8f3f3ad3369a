//! What `sigkit load` shows while it runs, on stderr: in a terminal
//! SIPp's scenario screen, redrawn in place every `-f` (or, with `--bar`,
//! a one-line progress bar); elsewhere, with keys read from a terminal, a
//! line per interval; otherwise nothing, so a pipe or a log file gets no
//! cursor codes.
//!
//! The screen's text is `sigkit_loadgen::screen`'s, made from the run's
//! progress snapshots; it is drawn by a thread of its own, so a slow
//! terminal never holds up the run's loop.

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use sigkit_loadgen::screen::{scenario_screen, statistics_screen, ScreenInfo};
use sigkit_loadgen::Progress;
use tokio::sync::watch;

/// How the run's progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// SIPp's scenario screen, redrawn in place (a terminal).
    Screen,
    /// The one-line bar (a terminal, `--bar`).
    Bar,
    /// A line per interval (keys from a terminal, stderr elsewhere).
    Lines,
    /// Nothing.
    Quiet,
}

impl Mode {
    /// The mode for a run: `terminal` whether stderr is one, `keyboard`
    /// whether keys are read; `--json` and `--quiet` keep the screen and
    /// the bar away, `--quiet` the lines too.
    pub(super) fn choose(terminal: bool, keyboard: bool, json: bool, quiet: bool, bar: bool) -> Mode {
        match (quiet, terminal && !json, bar) {
            (true, _, _) => Mode::Quiet,
            (false, true, false) => Mode::Screen,
            (false, true, true) => Mode::Bar,
            (false, false, _) if keyboard => Mode::Lines,
            _ => Mode::Quiet,
        }
    }
}

/// The display of a running load, until [`Live::finish`].
pub(super) struct Live {
    task: tokio::task::JoinHandle<()>,
    bar: Option<indicatif::ProgressBar>,
    writer: Option<std::thread::JoinHandle<()>>,
}

/// Starts showing `progress` as `mode` says (None for [`Mode::Quiet`]);
/// `info` describes the run for the screen, redrawn at most every `every`
/// (`-f`), `started` when it starts on the clock.
pub(super) fn start(
    mode: Mode,
    mut progress: watch::Receiver<Progress>,
    info: ScreenInfo,
    every: Duration,
    started: SystemTime,
) -> Option<Live> {
    match mode {
        Mode::Quiet => None,
        Mode::Screen => {
            let (tx, rx) = mpsc::channel::<Progress>();
            let writer = std::thread::spawn(move || draw_screens(&info, &rx, every, started));
            let task = tokio::spawn(async move {
                while progress.changed().await.is_ok() {
                    let p = progress.borrow_and_update().clone();
                    let finished = p.finished;
                    if tx.send(p).is_err() || finished {
                        break;
                    }
                }
            });
            Some(Live { task, bar: None, writer: Some(writer) })
        }
        Mode::Bar | Mode::Lines => {
            let bar = (mode == Mode::Bar).then(progress_bar);
            let shown = bar.clone();
            let task = tokio::spawn(async move {
                let mut intervals = 0;
                while progress.changed().await.is_ok() {
                    let p = progress.borrow_and_update().clone();
                    match &shown {
                        Some(bar) => {
                            if let Some(m) = p.max_calls.filter(|_| p.client) {
                                bar.set_length(m);
                            }
                            bar.set_position(p.successful + p.failed);
                            bar.set_message(progress_message(&p));
                        }
                        // A line per interval row, as before the screen's updates.
                        None if p.intervals != intervals => {
                            intervals = p.intervals;
                            eprintln!("{}", progress_line(&p));
                        }
                        None => {}
                    }
                    if p.finished {
                        break;
                    }
                }
            });
            Some(Live { task, bar, writer: None })
        }
    }
}

impl Live {
    /// The run is over: the screen's last frame drawn (the terminal left
    /// as it was, the final screen printed below what was there), the
    /// bar cleared.
    pub(super) async fn finish(self) {
        if self.writer.is_some() {
            // The last update was sent before the run returned: the task
            // forwards it and ends (or ends when the run failed).
            let _ = self.task.await;
        } else {
            self.task.abort();
        }
        if let Some(w) = self.writer {
            let _ = w.join();
        }
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

/// Leaves the terminal's alternate screen (a no-op if it is not in it);
/// for an exit that does not go through [`Live::finish`].
pub(super) fn leave_alternate_screen() {
    let _ = std::io::stderr().write_all(b"\x1b[?1049l");
}

/// The writer thread: each snapshot's screen drawn over the previous one
/// on the terminal's alternate screen (as SIPp draws with curses); at the
/// end the terminal's own screen back, and the last frame printed on it.
fn draw_screens(info: &ScreenInfo, rx: &mpsc::Receiver<Progress>, every: Duration, started: SystemTime) {
    let mut err = std::io::stderr();
    let mut last: Option<Progress> = None;
    let mut drawn: Option<std::time::Instant> = None;
    let _ = err.write_all(b"\x1b[?1049h\x1b[2J");
    while let Ok(mut p) = rx.recv() {
        // Only the newest of what waits is worth drawing.
        while let Ok(newer) = rx.try_recv() {
            p = newer;
        }
        // Updates come at each interval too (`-fd`): the screen keeps to `-f`, and 1% of slack.
        if drawn.is_some_and(|t| t.elapsed() < every.mul_f64(0.99)) && !p.finished {
            last = Some(p);
            continue;
        }
        drawn = Some(std::time::Instant::now());
        let mut frame = String::from("\x1b[H");
        let lines = scenario_screen(info, &p);
        // A terminal of unknown size gets the whole screen.
        let lines = match console::Term::stderr().size_checked() {
            Some((rows, _)) => fit(lines, usize::from(rows)),
            None => lines,
        };
        for line in lines {
            frame.push_str(&line);
            frame.push_str("\x1b[K\r\n");
        }
        frame.push_str("\x1b[J");
        let _ = err.write_all(frame.as_bytes());
        let _ = err.flush();
        last = Some(p);
    }
    leave_alternate_screen();
    if let Some(p) = last.filter(|p| p.finished) {
        let _ = err.write_all(screen_text(info, &p, started).as_bytes());
    }
    let _ = err.flush();
}

/// The screen's `lines` cut to a terminal of `rows` rows (one left for
/// the cursor), so that redrawing in place never scrolls: the rows past
/// the height give way to a line that says how many there are, the
/// bottom line stays. The final screen, printed below, has them all.
fn fit(mut lines: Vec<String>, rows: usize) -> Vec<String> {
    let room = rows.saturating_sub(1).max(12);
    if lines.len() > room {
        let bottom = lines.pop().unwrap_or_default();
        let hidden = lines.len() + 2 - room;
        lines.truncate(room - 2);
        lines.push(format!("  ... {hidden} more lines (a taller terminal shows them)"));
        lines.push(bottom);
    }
    lines
}

/// The scenario screen and the statistics screen as plain text, a line
/// end after each line: what is printed at the end of the run and written
/// by `-trace_screen` (as SIPp writes its screens there); `started` is
/// when the run started on the clock.
pub(super) fn screen_text(info: &ScreenInfo, p: &Progress, started: SystemTime) -> String {
    let mut out = String::new();
    for line in scenario_screen(info, p).into_iter().chain(statistics_screen(info, p, started)) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The line per interval: time, rate, step, calls.
fn progress_line(p: &Progress) -> String {
    format!(
        "{:7.1} s  rate {:.1}/s{}  step {}  {} attempted  {} ok  {} failed  {} active  {:.1} calls/s",
        p.elapsed_s,
        p.cps,
        if p.paused { " (paused)" } else { "" },
        p.step,
        p.attempted,
        p.successful,
        p.failed,
        p.active,
        p.calls_per_s
    )
}

/// The live progress of a long run, on stderr: a bar toward `-m` calls
/// (empty without it), redrawn in place; the message is cut to the
/// terminal's width rather than wrapped, so the most wanted comes first.
fn progress_bar() -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    let style = indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} [{bar:16}] {pos}/{len} {wide_msg}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The bar's text: calls completed per second, successes, failures and
/// p95 set-up delay over the last interval; then the rate a UAC asks for
/// and the calls in progress.
fn progress_message(p: &Progress) -> String {
    let mut m = format!("{:.1} calls/s  {} ok  {} failed  set-up p95 ", p.calls_per_s, p.successful, p.failed);
    if p.setup_p95_ms > 0.0 {
        m.push_str(&format!("{:.2} ms", p.setup_p95_ms));
    } else {
        m.push('-');
    }
    if p.client {
        m.push_str(&format!("  asked {:.1}/s{}", p.cps, if p.paused { " (paused)" } else { "" }));
    }
    m.push_str(&format!("  {} active", p.active));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_screen_only_in_a_terminal_and_never_with_json_or_quiet() {
        // (terminal, keyboard, json, quiet, bar)
        assert_eq!(Mode::choose(true, true, false, false, false), Mode::Screen);
        assert_eq!(Mode::choose(true, false, false, false, true), Mode::Bar);
        assert_eq!(Mode::choose(false, false, false, false, false), Mode::Quiet);
        assert_eq!(Mode::choose(false, true, false, false, false), Mode::Lines);
        assert_eq!(Mode::choose(true, true, true, false, false), Mode::Lines);
        assert_eq!(Mode::choose(true, true, false, true, false), Mode::Quiet);
        assert_eq!(Mode::choose(false, false, false, false, true), Mode::Quiet, "no bar off a terminal");
    }

    #[test]
    fn a_screen_taller_than_the_terminal_is_cut_above_its_bottom_line() {
        let lines: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
        assert_eq!(fit(lines.clone(), 40), lines, "it fits");
        let cut = fit(lines.clone(), 25);
        assert_eq!(cut.len(), 24);
        assert_eq!(cut[21], "line 21");
        assert_eq!(cut[22], "  ... 7 more lines (a taller terminal shows them)", "lines 22 to 28");
        assert_eq!(cut[23], "line 29");
        assert_eq!(fit(lines, 0).len(), 12, "a terminal of unknown height still shows the top");
    }

    #[test]
    fn the_progress_message_has_rate_successes_failures_and_p95() {
        let p = Progress {
            client: true,
            cps: 100.0,
            calls_per_s: 98.5,
            successful: 1200,
            failed: 3,
            active: 41,
            setup_p95_ms: 12.345,
            ..Progress::default()
        };
        assert_eq!(
            progress_message(&p),
            "98.5 calls/s  1200 ok  3 failed  set-up p95 12.35 ms  asked 100.0/s  41 active"
        );
        let paused = Progress { paused: true, setup_p95_ms: 0.0, ..p.clone() };
        assert_eq!(
            progress_message(&paused),
            "98.5 calls/s  1200 ok  3 failed  set-up p95 -  asked 100.0/s (paused)  41 active"
        );
        // A UAS asks for no rate.
        let uas = Progress { client: false, ..p };
        assert_eq!(progress_message(&uas), "98.5 calls/s  1200 ok  3 failed  set-up p95 12.35 ms  41 active");
    }
}
