//! SIPp's trace files, in its names and formats, written as the run goes:
//!
//! | flag | file | what |
//! |---|---|---|
//! | `-trace_stat` | `<scenario>_<pid>_.csv` (or `-stf`) | statistics, a row at the start, every `-fd` and at the end ([`stat`]) |
//! | `-trace_msg` | `<scenario>_<pid>_messages.log` | every message sent and received |
//! | `-trace_err` | `<scenario>_<pid>_errors.log` | warnings: calls aborted, messages discarded (made at the first) |
//! | `-trace_rtt` | `<scenario>_<pid>_rtt.csv` | every response time, written `-rtt_freq` at a time |
//! | `-trace_logs` | `<scenario>_<pid>_logs.log` | the scenario's `<log>` actions |
//!
//! `<scenario>` is SIPp's: the `-sf` file's name without its directory and
//! `.xml`, or the `-sn` name. Files are written through buffers, flushed
//! every `-fd` and when the run ends, however it ends (its calls done,
//! `-timeout`, a quit command, or the caller's stop on SIGINT/SIGTERM).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::engine::{Engine, RttSample};
use crate::metrics::Recorder;
use crate::scenario::Scenario;

pub mod format;
pub mod stat;

use format::{cpp_float, format_time};
use stat::{RowInput, StatFile};

/// Which trace files a run writes, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceConfig {
    /// The scenario's part of the file names (see [`scenario_file_name`]).
    pub name: String,
    /// The process id in the file names.
    pub pid: u32,
    /// Where the files go (SIPp: the current directory).
    pub dir: PathBuf,
    /// `-trace_stat`.
    pub stat: bool,
    /// `-stf`: the statistics file, instead of `<scenario>_<pid>_.csv`.
    pub stat_file: Option<PathBuf>,
    /// `-stat_delimiter` (SIPp's default `;`), for the statistics and response-time files.
    pub stat_delimiter: String,
    /// `-trace_msg`.
    pub messages: bool,
    /// `-trace_err`.
    pub errors: bool,
    /// `-trace_rtt`.
    pub rtt: bool,
    /// `-rtt_freq`: response times written at a time (SIPp's default 200; the rest when the run ends).
    pub rtt_freq: usize,
    /// `-trace_logs`.
    pub logs: bool,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            name: "uac".into(),
            pid: std::process::id(),
            dir: PathBuf::from("."),
            stat: false,
            stat_file: None,
            stat_delimiter: ";".into(),
            messages: false,
            errors: false,
            rtt: false,
            rtt_freq: 200,
            logs: false,
        }
    }
}

impl TraceConfig {
    /// `<dir>/<name>_<pid>_<suffix>`: SIPp's name of a trace file (`suffix` `.csv`, `messages.log`, …).
    pub fn path(&self, suffix: &str) -> PathBuf {
        self.dir.join(format!("{}_{}_{suffix}", self.name, self.pid))
    }

    /// The statistics file's path: `-stf`, or `<scenario>_<pid>_.csv`.
    pub fn stat_path(&self) -> PathBuf {
        match &self.stat_file {
            Some(p) => self.dir.join(p),
            None => self.path(".csv"),
        }
    }

    /// Whether any file is asked for.
    pub fn any(&self) -> bool {
        self.stat || self.messages || self.errors || self.rtt || self.logs
    }
}

/// SIPp's scenario part of trace file names: a `-sf` file's name without
/// its directory and without `.xml` (another extension stays), or the
/// built-in's `-sn` name.
pub fn scenario_file_name(sf: Option<&Path>, sn: &str) -> String {
    match sf.and_then(Path::file_name) {
        Some(f) => {
            let f = f.to_string_lossy();
            f.strip_suffix(".xml").unwrap_or(&f).to_string()
        }
        None => sn.to_string(),
    }
}

/// Why a trace file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct TraceError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub source: io::Error,
}

struct Out {
    path: PathBuf,
    w: BufWriter<File>,
}

impl Out {
    fn create(path: PathBuf) -> Result<Out, TraceError> {
        match File::create(&path) {
            Ok(f) => Ok(Out { w: BufWriter::new(f), path }),
            Err(source) => Err(TraceError { path, source }),
        }
    }
}

/// The trace files of a run, open.
pub struct Tracer {
    config: TraceConfig,
    /// "UDP" or "TCP", as the message log names the transport.
    transport: &'static str,
    rtd_names: Vec<String>,
    stat: Option<(PathBuf, StatFile<BufWriter<File>>)>,
    messages: Option<Out>,
    /// Made at the first warning, as SIPp makes it.
    errors: Option<Out>,
    rtt: Option<Out>,
    rtt_pending: Vec<RttSample>,
    logs: Option<Out>,
    /// The first write that failed (the run goes on; later failures are not reported).
    failed: Option<TraceError>,
    written: Vec<PathBuf>,
}

impl Tracer {
    /// Opens the files `config` asks for (the error log and response-time
    /// file wait for their first line); `start` is the run's start.
    pub fn open(
        config: TraceConfig,
        scenario: &Scenario,
        transport: &'static str,
        start: Instant,
    ) -> Result<Tracer, TraceError> {
        let start_wall = SystemTime::now();
        let stat = if config.stat {
            let path = config.stat_path();
            let out = Out::create(path.clone())?;
            let file = StatFile::new(out.w, &config.stat_delimiter, scenario, start, start_wall)
                .map_err(|source| TraceError { path: path.clone(), source })?;
            Some((path, file))
        } else {
            None
        };
        let open = |on: bool, suffix: &str| on.then(|| Out::create(config.path(suffix))).transpose();
        let messages = open(config.messages, "messages.log")?;
        let logs = open(config.logs, "logs.log")?;
        let mut written: Vec<PathBuf> = stat.iter().map(|(p, _)| p.clone()).collect();
        written.extend(messages.iter().chain(&logs).map(|o| o.path.clone()));
        Ok(Tracer {
            rtd_names: scenario.rtds.clone(),
            config,
            transport,
            stat,
            messages,
            errors: None,
            rtt: None,
            rtt_pending: Vec::new(),
            logs,
            failed: None,
            written,
        })
    }

    /// The run starts at `start`: the statistics file's times count from it.
    pub fn begin(&mut self, start: Instant) {
        if let Some((_, f)) = &mut self.stat {
            f.begin(start, SystemTime::now());
        }
    }

    /// What the engine is to keep for these files.
    pub fn engine_trace(&self) -> crate::engine::EngineTrace {
        crate::engine::EngineTrace {
            keep_warnings: self.config.errors,
            keep_rtt: self.config.rtt,
            keep_logs: self.config.logs,
            ..Default::default()
        }
    }

    fn note(&mut self, path: &Path, r: io::Result<()>) {
        if let (Err(source), None) = (r, &self.failed) {
            self.failed = Some(TraceError { path: path.to_path_buf(), source });
        }
    }

    /// A message sent (before SigComp compression), for `-trace_msg`.
    pub fn sent(&mut self, bytes: &[u8]) {
        self.message(bytes, true);
    }

    /// A message received (after SigComp decompression), for `-trace_msg`.
    pub fn received(&mut self, bytes: &[u8]) {
        self.message(bytes, false);
    }

    /// SIPp's message log entry: a line of dashes with the time, the
    /// transport and the length, an empty line, the message, a newline.
    fn message(&mut self, bytes: &[u8], sent: bool) {
        let Some(out) = &mut self.messages else { return };
        let time = format_time(SystemTime::now(), true);
        let head = if sent {
            format!(
                "----------------------------------------------- {time}\n{} message sent ({} bytes):\n\n",
                self.transport,
                bytes.len()
            )
        } else {
            format!(
                "----------------------------------------------- {time}\n{} message received [{}] bytes :\n\n",
                self.transport,
                bytes.len()
            )
        };
        let r =
            out.w.write_all(head.as_bytes()).and_then(|_| out.w.write_all(bytes)).and_then(|_| out.w.write_all(b"\n"));
        let path = out.path.clone();
        self.note(&path, r);
    }

    /// Writes what the engine kept since the last call: warnings,
    /// response times (each `-rtt_freq`) and `<log>` messages.
    pub fn take(&mut self, engine: &mut Engine) {
        let t = &mut engine.trace;
        if t.warnings.is_empty() && t.rtt.is_empty() && t.logs.is_empty() {
            return;
        }
        let warnings = std::mem::take(&mut t.warnings);
        let logs = std::mem::take(&mut t.logs);
        self.rtt_pending.append(&mut t.rtt);
        if !warnings.is_empty() {
            self.warnings(&warnings);
        }
        if let Some(out) = &mut self.logs {
            let mut r = Ok(());
            for l in &logs {
                r = r.and_then(|_| writeln!(out.w, "{l}"));
            }
            let path = out.path.clone();
            self.note(&path, r);
        }
        if self.rtt_pending.len() >= self.config.rtt_freq.max(1) {
            self.write_rtt();
        }
    }

    /// SIPp's error log: "The following events occurred:" at its top,
    /// then each warning after its time stamp, as SIPp 3.6 writes them
    /// (no line end of its own: a message quoted in it brings its own).
    fn warnings(&mut self, texts: &[String]) {
        if self.errors.is_none() {
            match Out::create(self.config.path("errors.log")) {
                Ok(mut out) => {
                    let r = out.w.write_all(b"The following events occurred:\n");
                    self.written.push(out.path.clone());
                    let path = out.path.clone();
                    self.errors = Some(out);
                    self.note(&path, r);
                }
                Err(e) => {
                    self.failed.get_or_insert(e);
                    return;
                }
            }
        }
        let Some(out) = &mut self.errors else { return };
        let time = format_time(SystemTime::now(), false);
        let mut r = Ok(());
        for t in texts {
            r = r.and_then(|_| write!(out.w, "{time}: {t}"));
        }
        let path = out.path.clone();
        self.note(&path, r);
    }

    /// SIPp's `-trace_rtt` lines: `Date_ms;response_time_ms;rtd_no`, the
    /// end time in ms since the start, the time in ms, the name.
    fn write_rtt(&mut self) {
        if self.rtt_pending.is_empty() {
            return;
        }
        let d = self.config.stat_delimiter.clone();
        if self.rtt.is_none() {
            match Out::create(self.config.path("rtt.csv")) {
                Ok(mut out) => {
                    let r = writeln!(out.w, "Date_ms{d}response_time_ms{d}rtd_no");
                    self.written.push(out.path.clone());
                    let path = out.path.clone();
                    self.rtt = Some(out);
                    self.note(&path, r);
                }
                Err(e) => {
                    self.failed.get_or_insert(e);
                    self.rtt_pending.clear();
                    return;
                }
            }
        }
        let Some(out) = &mut self.rtt else { return };
        let ms = |d: Duration| cpp_float(d.as_secs_f64() * 1000.0);
        let mut r = Ok(());
        for s in self.rtt_pending.drain(..) {
            let name = self.rtd_names.get(s.index).map_or("", String::as_str);
            r = r.and_then(|_| writeln!(out.w, "{}{d}{}{d}{name}", ms(s.at), ms(s.rtt)));
        }
        let path = out.path.clone();
        self.note(&path, r);
    }

    /// A row of the statistics file, at `now`.
    pub fn stat_row(&mut self, recorder: &Recorder, current_calls: u64, rate: f64, client: bool, now: Instant) {
        let Some((path, file)) = &mut self.stat else { return };
        let r = file.row(&RowInput { recorder, current_calls, rate, client, now });
        let path = path.clone();
        self.note(&path, r);
    }

    /// Flushes every file (each `-fd`, so `tail -f` follows them).
    pub fn flush(&mut self) {
        let mut results = Vec::new();
        if let Some((p, f)) = &mut self.stat {
            results.push((p.clone(), f.flush()));
        }
        for out in [&mut self.messages, &mut self.errors, &mut self.rtt, &mut self.logs].into_iter().flatten() {
            results.push((out.path.clone(), out.w.flush()));
        }
        for (p, r) in results {
            self.note(&p, r);
        }
    }

    /// The run is over: the engine's last warnings, response times and
    /// logs written, every file flushed. Returns the files written, or the
    /// first write that failed.
    pub fn finish(mut self, engine: &mut Engine) -> Result<Vec<PathBuf>, TraceError> {
        self.take(engine);
        self.write_rtt();
        self.flush();
        match self.failed {
            Some(e) => Err(e),
            None => Ok(self.written),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineConfig;
    use std::sync::Arc;

    /// Each file under SIPp's name and in its layout; the response times
    /// short of `-rtt_freq` written when the run ends.
    #[test]
    fn files_take_sipps_names_and_layouts() {
        let dir = std::env::temp_dir().join(format!("sigkit-trace-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = TraceConfig {
            name: "x".into(),
            pid: 7,
            dir: dir.clone(),
            messages: true,
            errors: true,
            rtt: true,
            rtt_freq: 2,
            logs: true,
            ..TraceConfig::default()
        };
        let scenario = crate::scenario::built_in("uac").unwrap();
        let mut t = Tracer::open(config, &scenario, "UDP", Instant::now()).unwrap();
        t.sent(b"OPTIONS sip:x SIP/2.0\r\n\r\n");
        t.received(b"SIP/2.0 200 OK\r\n\r\n");
        let mut engine = Engine::new(Arc::new(scenario), EngineConfig::default(), None, Instant::now());
        engine.trace.warnings.push("first".into());
        engine.trace.rtt.push(RttSample {
            at: Duration::from_millis(1500),
            rtt: Duration::from_micros(2500),
            index: 0,
        });
        engine.trace.logs.push("hello".into());
        t.take(&mut engine);
        assert!(engine.trace.warnings.is_empty() && engine.trace.logs.is_empty());
        let files = t.finish(&mut engine).unwrap();
        let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
        let names: Vec<String> = files.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["x_7_messages.log", "x_7_logs.log", "x_7_errors.log", "x_7_rtt.csv"]);
        let messages = read("x_7_messages.log");
        let lines: Vec<&str> = messages.split('\n').collect();
        assert!(lines[0].starts_with(&format!("{} ", "-".repeat(47))) && lines[0].len() == 48 + 26, "{messages:?}");
        assert_eq!(lines[1..4], ["UDP message sent (25 bytes):", "", "OPTIONS sip:x SIP/2.0\r"]);
        assert!(messages.contains("\nUDP message received [18] bytes :\n\nSIP/2.0 200 OK\r\n\r\n\n"), "{messages:?}");
        let errors = read("x_7_errors.log");
        let body = errors.strip_prefix("The following events occurred:\n").unwrap();
        assert!(body.ends_with(": first") && body.split('\t').count() == 3, "{errors:?}");
        assert_eq!(read("x_7_rtt.csv"), "Date_ms;response_time_ms;rtd_no\n1500;2.5;1\n");
        assert_eq!(read("x_7_logs.log"), "hello\n");
        assert!(!dir.join("x_7_.csv").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
