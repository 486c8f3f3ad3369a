//! Results of sigkit's measurement runs, kept in one SQLite file.
//!
//! A run (`sigkit load`, `sigkit capacity`, `sigkit eval` …) is recorded
//! with its command line, its configuration and the machine it ran on, so
//! that a number read later can be traced to how it was made, as the SIP
//! performance-evaluation framework thesis keeps its test
//! configurations beside its results. Its series (per-interval and per-step
//! rows, summaries) go into tables named after them, one column per field
//! of the row type, created and widened on demand. Any table exports as
//! CSV.
//!
//! ```
//! # fn main() -> Result<(), sigkit_results::StoreError> {
//! #[derive(serde::Serialize)]
//! struct Step { offered_cps: f64, successful: u64, failed: u64 }
//!
//! let mut store = sigkit_results::Store::in_memory()?;
//! let run = store.begin_run("load", "sigkit load -sn uac 127.0.0.1:5060", &serde_json::json!({"rate": 100}))?;
//! store.record_rows(run, "steps", &[Step { offered_cps: 100.0, successful: 998, failed: 2 }])?;
//! store.finish_run(run, &serde_json::json!({"successful_calls": 998}))?;
//! let mut csv = Vec::new();
//! store.export_csv("steps", Some(run), &mut csv)?;
//! assert!(String::from_utf8(csv).unwrap().starts_with("run_id,offered_cps,successful,failed\n"));
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

use std::io::Write;
use std::path::Path;

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use serde::Serialize;
use serde_json::{Map, Value};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed (opening, a statement, a limit).
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A table or column name that is not a plain identifier (at most 64
    /// characters), or `runs` as a series table.
    #[error("{0} is not a table or column name (letters, digits and '_', starting with a letter)")]
    BadName(String),
    /// A row that serializes to something other than a map; holds what it
    /// was.
    #[error("a row must serialize to a map of fields, not {0}")]
    NotARow(&'static str),
    /// A row, configuration or summary JSON could not be serialized, or a
    /// run's stored JSON could not be read.
    #[error("serializing: {0}")]
    Serialize(#[from] serde_json::Error),
    /// No run with this id is recorded.
    #[error("no run {0}")]
    NoRun(i64),
    /// The table named does not exist (for a file opened to read: not a
    /// results file, without `runs`).
    #[error("no table {0}")]
    NoTable(String),
    /// Writing the CSV (or a caller's callback) failed.
    #[error("writing: {0}")]
    Io(#[from] std::io::Error),
    /// A table holds more than [`MAX_ROWS_READ`] rows to read.
    #[error("table {table} has more than {max} rows to read")]
    TooManyRows {
        /// The table read.
        table: String,
        /// The bound, [`MAX_ROWS_READ`].
        max: usize,
    },
}

/// Rows [`Store::rows`] reads of one table at most: what a report can
/// draw, far above what `sigkit eval` writes, and a bound on the memory a
/// crafted file can make a reader take.
pub const MAX_ROWS_READ: usize = 1_000_000;

/// Bytes of one string or blob a file opened to read may hold (SQLite's
/// own default is a billion).
pub const MAX_VALUE_BYTES: i32 = 16 << 20;

/// A run's key in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct RunId(pub i64);

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// One recorded run, as listed by [`Store::runs`].
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// The run's key, in the order runs began.
    pub id: RunId,
    /// What ran: the subcommand (`load`, `eval`, `sim` …).
    pub kind: String,
    /// The command line, as given to [`Store::begin_run`].
    pub command: String,
    /// Seconds since the Unix epoch.
    pub started_at: f64,
    /// Seconds since the Unix epoch; None while the run has not finished
    /// (or never did).
    pub finished_at: Option<f64>,
    /// The run's configuration, as JSON.
    pub config: Value,
    /// The [`Machine`] it ran on, as JSON.
    pub machine: Value,
    /// The summary given to [`Store::finish_run`]; None before then.
    pub summary: Option<Value>,
}

/// The machine a run was made on: what a reader needs to compare numbers
/// from two runs.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Machine {
    /// The host's name (`/proc/sys/kernel/hostname`); empty if unreadable.
    pub hostname: String,
    /// The first CPU's "model name" in `/proc/cpuinfo`; empty if unreadable.
    pub cpu_model: String,
    /// The CPUs this process may use (at least 1).
    pub cores: usize,
    /// Total memory in KiB (`MemTotal` of `/proc/meminfo`); None if
    /// unreadable.
    pub memory_kib: Option<u64>,
    /// The kernel release (`/proc/sys/kernel/osrelease`); empty if
    /// unreadable.
    pub kernel: String,
    /// The version of the sigkit-results crate the run was recorded with.
    pub sigkit_version: String,
}

impl Machine {
    /// Reads this machine's description (from /proc on Linux; fields it
    /// cannot read are left empty, never guessed).
    pub fn detect() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim()))
            .unwrap_or("")
            .to_string();
        let memory_kib = read("/proc/meminfo").lines().find_map(|l| {
            l.strip_prefix("MemTotal:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        });
        Machine {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            cpu_model,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_kib,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            sigkit_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// The SQLite file of results.
pub struct Store {
    conn: Connection,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    command TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    config TEXT NOT NULL,
    machine TEXT NOT NULL,
    summary TEXT
);";

fn now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Table and column names come from row types and callers; they are
/// spliced into SQL (quoted, so a keyword such as `index` is a name too),
/// so only plain identifiers pass (and `runs` is ours).
fn check_name(name: &str) -> Result<&str, StoreError> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64;
    if ok {
        Ok(name)
    } else {
        Err(StoreError::BadName(name.to_string()))
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a map",
    }
}

fn to_sql(v: &Value) -> SqlValue {
    match v {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => SqlValue::Text(s.clone()),
        // Nested values (a histogram's percentiles, failures by cause) are
        // kept whole, as JSON text.
        other => SqlValue::Text(other.to_string()),
    }
}

fn from_sql(v: SqlValue) -> Value {
    match v {
        SqlValue::Null => Value::Null,
        SqlValue::Integer(i) => Value::from(i),
        SqlValue::Real(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        SqlValue::Text(s) => Value::String(s),
        SqlValue::Blob(b) => Value::String(b.iter().map(|x| format!("{x:02x}")).collect()),
    }
}

impl Store {
    /// Opens (creating if needed) the results file at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::with(Connection::open(path)?)
    }

    /// Opens an existing results file to read it, changing nothing: a file
    /// that is not one (not SQLite, or without the runs table) is an error,
    /// not a file given a schema.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)?;
        // Reads the schema: a file that is not SQLite fails here.
        let has_runs: bool = conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs')",
            [],
            |r| r.get(0),
        )?;
        if !has_runs {
            return Err(StoreError::NoTable("runs".into()));
        }
        Ok(Store { conn })
    }

    /// A store that lives only as long as the value (tests, dry runs).
    pub fn in_memory() -> Result<Store, StoreError> {
        Store::with(Connection::open_in_memory()?)
    }

    fn with(conn: Connection) -> Result<Store, StoreError> {
        conn.execute_batch(SCHEMA)?;
        Ok(Store { conn })
    }

    /// Records the start of a run of `kind` made by `command` with
    /// `config`, on this machine.
    pub fn begin_run(&mut self, kind: &str, command: &str, config: &impl Serialize) -> Result<RunId, StoreError> {
        self.begin_run_on(kind, command, config, &Machine::detect())
    }

    /// [`Store::begin_run`] with the machine given.
    pub fn begin_run_on(
        &mut self,
        kind: &str,
        command: &str,
        config: &impl Serialize,
        machine: &Machine,
    ) -> Result<RunId, StoreError> {
        let config = serde_json::to_string(config)?;
        let machine = serde_json::to_string(machine)?;
        self.conn.execute(
            "INSERT INTO runs (kind, command, started_at, config, machine) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![kind, command, now(), config, machine],
        )?;
        Ok(RunId(self.conn.last_insert_rowid()))
    }

    /// Records the end of `run` with its summary.
    pub fn finish_run(&mut self, run: RunId, summary: &impl Serialize) -> Result<(), StoreError> {
        let summary = serde_json::to_string(summary)?;
        let n = self
            .conn
            .execute("UPDATE runs SET finished_at = ?1, summary = ?2 WHERE id = ?3", params![now(), summary, run.0])?;
        if n == 0 {
            return Err(StoreError::NoRun(run.0));
        }
        Ok(())
    }

    fn columns(&self, table: &str) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
        let names = stmt.query_map([], |r| r.get::<_, String>(1))?.collect::<Result<Vec<_>, _>>()?;
        Ok(names)
    }

    /// Appends `rows` of `run` to `table`. Each row serializes to a map;
    /// its fields become columns (added when a later row has new ones),
    /// after the `run_id` column.
    pub fn record_rows<T: Serialize>(&mut self, run: RunId, table: &str, rows: &[T]) -> Result<(), StoreError> {
        let table = check_name(table)?;
        if table == "runs" {
            return Err(StoreError::BadName(table.to_string()));
        }
        let exists: bool =
            self.conn.query_row("SELECT EXISTS(SELECT 1 FROM runs WHERE id = ?1)", [run.0], |r| r.get(0))?;
        if !exists {
            return Err(StoreError::NoRun(run.0));
        }
        let rows: Vec<Map<String, Value>> = rows
            .iter()
            .map(|r| match serde_json::to_value(r)? {
                Value::Object(m) => Ok(m),
                other => Err(StoreError::NotARow(kind_of(&other))),
            })
            .collect::<Result<_, _>>()?;
        let tx = self.conn.transaction()?;
        tx.execute_batch(&format!(
            "CREATE TABLE IF NOT EXISTS \"{table}\" (run_id INTEGER NOT NULL REFERENCES runs(id))"
        ))?;
        let mut columns: Vec<String> = {
            let mut stmt = tx.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
            let names = stmt.query_map([], |r| r.get::<_, String>(1))?.collect::<Result<Vec<_>, _>>()?;
            names
        };
        for row in &rows {
            for key in row.keys() {
                if !columns.iter().any(|c| c == key) {
                    check_name(key)?;
                    tx.execute_batch(&format!("ALTER TABLE \"{table}\" ADD COLUMN \"{key}\""))?;
                    columns.push(key.clone());
                }
            }
        }
        for row in &rows {
            let names: Vec<&str> = row.keys().map(String::as_str).collect();
            let sql = format!(
                "INSERT INTO \"{table}\" (run_id{}) VALUES (?1{})",
                names.iter().map(|n| format!(", \"{n}\"")).collect::<String>(),
                (0..names.len()).map(|i| format!(", ?{}", i + 2)).collect::<String>()
            );
            let mut values = vec![SqlValue::Integer(run.0)];
            values.extend(row.values().map(to_sql));
            tx.prepare_cached(&sql)?.execute(rusqlite::params_from_iter(values))?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Every run, oldest first.
    pub fn runs(&self) -> Result<Vec<RunInfo>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, kind, command, started_at, finished_at, config, machine, summary FROM runs ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, f64>(3)?,
                r.get::<_, Option<f64>>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, Option<String>>(7)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            if out.len() == MAX_ROWS_READ {
                return Err(StoreError::TooManyRows { table: "runs".into(), max: MAX_ROWS_READ });
            }
            let (id, kind, command, started_at, finished_at, config, machine, summary) = row?;
            out.push(RunInfo {
                id: RunId(id),
                kind,
                command,
                started_at,
                finished_at,
                config: serde_json::from_str(&config)?,
                machine: serde_json::from_str(&machine)?,
                summary: summary.map(|s| serde_json::from_str(&s)).transpose()?,
            });
        }
        Ok(out)
    }

    /// Every run's number, kind, command and whether it finished, oldest
    /// first, each handed to `each` as it is read: the runs' JSON (config,
    /// machine, summary) is neither read nor held.
    pub fn each_run_header(
        &self,
        mut each: impl FnMut(RunId, &str, &str, bool) -> std::io::Result<()>,
    ) -> Result<usize, StoreError> {
        let mut stmt = self.conn.prepare("SELECT id, kind, command, finished_at IS NOT NULL FROM runs ORDER BY id")?;
        let mut rows = stmt.query([])?;
        let mut n = 0;
        while let Some(r) = rows.next()? {
            // Shown as they are, whatever a damaged file holds in them.
            let text = |i| -> Result<String, StoreError> {
                Ok(match r.get::<_, SqlValue>(i)? {
                    SqlValue::Text(s) => s,
                    SqlValue::Null => String::new(),
                    other => from_sql(other).to_string(),
                })
            };
            each(RunId(r.get(0)?), &text(1)?, &text(2)?, r.get(3)?)?;
            n += 1;
        }
        Ok(n)
    }

    /// One run, if recorded.
    pub fn run(&self, run: RunId) -> Result<RunInfo, StoreError> {
        self.runs()?.into_iter().find(|r| r.id == run).ok_or(StoreError::NoRun(run.0))
    }

    /// The tables of series (every table but `runs`).
    pub fn tables(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('runs', 'sqlite_sequence') ORDER BY name")?;
        let names = stmt.query_map([], |r| r.get::<_, String>(0))?.collect::<Result<Vec<_>, _>>()?;
        Ok(names)
    }

    fn select(&self, table: &str, run: Option<RunId>) -> Result<(Vec<String>, Vec<Vec<SqlValue>>), StoreError> {
        let table = check_name(table)?;
        let columns = self.columns(table)?;
        if columns.is_empty() {
            return Err(StoreError::NoTable(table.to_string()));
        }
        let sql = match run {
            Some(_) => format!("SELECT * FROM \"{table}\" WHERE run_id = ?1 ORDER BY rowid"),
            None => format!("SELECT * FROM \"{table}\" ORDER BY rowid"),
        };
        let mut stmt = self.conn.prepare(&sql)?;
        let n = columns.len();
        let map = |r: &rusqlite::Row<'_>| (0..n).map(|i| r.get::<_, SqlValue>(i)).collect::<Result<Vec<_>, _>>();
        let rows = match run {
            Some(run) => stmt.query_map([run.0], map)?.take(MAX_ROWS_READ + 1).collect::<Result<Vec<_>, _>>()?,
            None => stmt.query_map([], map)?.take(MAX_ROWS_READ + 1).collect::<Result<Vec<_>, _>>()?,
        };
        if rows.len() > MAX_ROWS_READ {
            return Err(StoreError::TooManyRows { table: table.to_string(), max: MAX_ROWS_READ });
        }
        Ok((columns, rows))
    }

    /// The rows of `table` (of one run, or of all), as JSON maps.
    pub fn rows(&self, table: &str, run: Option<RunId>) -> Result<Vec<Map<String, Value>>, StoreError> {
        let (columns, rows) = self.select(table, run)?;
        Ok(rows.into_iter().map(|r| columns.iter().cloned().zip(r.into_iter().map(from_sql)).collect()).collect())
    }

    /// Writes `table` (of one run, or of all) as CSV (RFC 4180), with a
    /// header line of column names; each row is written as it is read, so
    /// a table of any size takes the memory of one row.
    pub fn export_csv(&self, table: &str, run: Option<RunId>, out: &mut impl Write) -> Result<usize, StoreError> {
        let table = check_name(table)?;
        let columns = self.columns(table)?;
        if columns.is_empty() {
            return Err(StoreError::NoTable(table.to_string()));
        }
        writeln!(out, "{}", columns.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(","))?;
        let sql = match run {
            Some(_) => format!("SELECT * FROM \"{table}\" WHERE run_id = ?1 ORDER BY rowid"),
            None => format!("SELECT * FROM \"{table}\" ORDER BY rowid"),
        };
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = match run {
            Some(run) => stmt.query([run.0])?,
            None => stmt.query([])?,
        };
        let mut n = 0;
        while let Some(row) = rows.next()? {
            let fields = (0..columns.len())
                .map(|i| {
                    Ok(match row.get::<_, SqlValue>(i)? {
                        SqlValue::Null => String::new(),
                        SqlValue::Integer(i) => i.to_string(),
                        SqlValue::Real(f) => f.to_string(),
                        SqlValue::Text(s) => csv_field(&s),
                        SqlValue::Blob(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
                    })
                })
                .collect::<Result<Vec<String>, StoreError>>()?;
            writeln!(out, "{}", fields.join(","))?;
            n += 1;
        }
        Ok(n)
    }

    /// The newest run of `kind`, if any.
    pub fn latest_run(&self, kind: &str) -> Result<Option<RunId>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT MAX(id) FROM runs WHERE kind = ?1", [kind], |r| r.get::<_, Option<i64>>(0))
            .optional()?
            .flatten()
            .map(RunId))
    }
}

/// A CSV field, quoted when it holds a comma, a quote or a line break
/// (RFC 4180 §2).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
