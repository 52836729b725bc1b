//! Compare runs (a prompt set against several models) and arena votes: their tables, and a
//! handle that writes them from a thread of its own so a run of thousands of cells never waits
//! on the disk. A cell is written the moment it finishes, so a crash or Ctrl+C loses none that
//! finished; `--resume` reads back which ones exist. Reads are in `runs_read.rs`.
//!
//! Separate from the conversation store (`StoreHandle`): a run's cells are not conversations
//! and must not fill the history list. Both share the one database file and its migrations.

use super::StoreError;
use super::ids::{new_id, now_ms};
use crate::engine::evals::style::Style;
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The tables of compare runs and arena votes (a migration of its own, appended to the list).
pub const MIGRATION_RUNS: &str = r"
CREATE TABLE compare_runs (
    id         TEXT PRIMARY KEY NOT NULL,
    created_at INTEGER NOT NULL,              -- unix ms
    updated_at INTEGER NOT NULL,
    models     TEXT NOT NULL,                 -- JSON [{spec, model, provider}] in column order
    settings   TEXT NOT NULL,                 -- JSON: the flags that shape requests
    source     TEXT NOT NULL DEFAULT '',      -- where the prompts came from (a path, or -)
    prompts    INTEGER NOT NULL,
    status     TEXT NOT NULL                  -- running|finished|interrupted
);
CREATE INDEX compare_runs_by_time ON compare_runs(created_at DESC);

CREATE TABLE compare_prompts (
    run_id  TEXT NOT NULL REFERENCES compare_runs(id) ON DELETE CASCADE,
    idx     INTEGER NOT NULL,
    pid     TEXT NOT NULL,                    -- the line's `id`, else its line number
    prompt  TEXT NOT NULL,
    system  TEXT,
    attach  TEXT,                             -- JSON array of paths or URLs
    expect  TEXT,                             -- JSON, as the line gave it
    PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;

CREATE TABLE compare_cells (
    run_id         TEXT NOT NULL REFERENCES compare_runs(id) ON DELETE CASCADE,
    prompt_idx     INTEGER NOT NULL,
    model_idx      INTEGER NOT NULL,
    model          TEXT NOT NULL,
    provider       TEXT NOT NULL,
    ok             INTEGER NOT NULL,          -- 1: an answer; 0: an error
    text           TEXT NOT NULL DEFAULT '',
    reasoning      TEXT NOT NULL DEFAULT '',
    tool_calls     TEXT,                      -- JSON [{id, name, arguments, output, status}]
    usage          TEXT,                      -- JSON as the provider sent it (the turn's sum)
    prompt_tokens  INTEGER,
    completion_tokens INTEGER,
    cost           REAL,
    finish_reason  TEXT,
    prompt_filter  TEXT,
    content_filter TEXT,
    safety_flag    INTEGER NOT NULL DEFAULT 0,
    ttft_ms        INTEGER,
    total_ms       INTEGER,
    tokens_per_s   REAL,
    error          TEXT,                      -- JSON {status, message}
    checks         TEXT,                      -- JSON [{kind, pass, detail}] of the prompt's expect
    finished_at    INTEGER NOT NULL,
    PRIMARY KEY (run_id, prompt_idx, model_idx)
) WITHOUT ROWID;

CREATE TABLE arena_votes (
    id         INTEGER PRIMARY KEY,
    created_at INTEGER NOT NULL,
    model_a    TEXT NOT NULL,
    provider_a TEXT NOT NULL,
    model_b    TEXT NOT NULL,
    provider_b TEXT NOT NULL,
    winner     TEXT NOT NULL,                 -- a|b|tie|bad
    prompt     TEXT NOT NULL DEFAULT ''
);
";

/// The style of both answers of an arena vote (JSON of `engine::evals::style::Style`), so
/// `compare stats` can control ratings for length and markdown. Older votes have none.
pub const MIGRATION_VOTE_STYLE: &str = r"
ALTER TABLE arena_votes ADD COLUMN style_a TEXT;
ALTER TABLE arena_votes ADD COLUMN style_b TEXT;
";

/// A templated prompt's row of variables, kept with the prompt it made (JSON object).
pub const MIGRATION_RUN_VARS: &str = r"
ALTER TABLE compare_prompts ADD COLUMN vars TEXT;
";

/// A multi-turn prompt (`turns`, recorded `tool_outputs`) as kept (JSON), and each turn of its
/// cells: `[{turn, prompt, text, tool_calls, finish_reason, pass}]` (JSON).
pub const MIGRATION_TURNS: &str = r"
ALTER TABLE compare_prompts ADD COLUMN turns TEXT;
ALTER TABLE compare_cells ADD COLUMN turns TEXT;
";

/// An arena battle as one row: its id, the hidden models in their columns' order, the vote and
/// the ranking it makes. Votes stored before it (one `arena_votes` row per pair of models)
/// stay where they are and are read as battles of two (`RunStore::battles`).
pub const MIGRATION_BATTLES: &str = r"
CREATE TABLE arena_battles (
    id         TEXT PRIMARY KEY NOT NULL,     -- the compare group and the battle's number
    created_at INTEGER NOT NULL,
    prompt     TEXT NOT NULL DEFAULT '',
    models     TEXT NOT NULL,                 -- JSON [{model, provider, style}] in column order A, B, …
    vote       TEXT NOT NULL,                 -- a|b|c|d (that column best), tie, bad (all bad)
    ranking    TEXT NOT NULL                  -- JSON: each column's place, 1 best
);
";

/// Repeated samples (`compare --repeat N`): a cell is one sample of a prompt × model, `sample`
/// 0 to N − 1, part of the key; cells stored before it are sample 0. SQLite cannot change a
/// primary key, so the table is built anew and its rows copied. A line's `threshold` (the
/// pass rate that decides its cell) is kept with its prompt.
pub const MIGRATION_CELL_SAMPLES: &str = r"
CREATE TABLE compare_cells_samples (
    run_id         TEXT NOT NULL REFERENCES compare_runs(id) ON DELETE CASCADE,
    prompt_idx     INTEGER NOT NULL,
    model_idx      INTEGER NOT NULL,
    sample         INTEGER NOT NULL DEFAULT 0,
    model          TEXT NOT NULL,
    provider       TEXT NOT NULL,
    ok             INTEGER NOT NULL,
    text           TEXT NOT NULL DEFAULT '',
    reasoning      TEXT NOT NULL DEFAULT '',
    tool_calls     TEXT,
    usage          TEXT,
    prompt_tokens  INTEGER,
    completion_tokens INTEGER,
    cost           REAL,
    finish_reason  TEXT,
    prompt_filter  TEXT,
    content_filter TEXT,
    safety_flag    INTEGER NOT NULL DEFAULT 0,
    ttft_ms        INTEGER,
    total_ms       INTEGER,
    tokens_per_s   REAL,
    error          TEXT,
    checks         TEXT,
    finished_at    INTEGER NOT NULL,
    PRIMARY KEY (run_id, prompt_idx, model_idx, sample)
) WITHOUT ROWID;
INSERT INTO compare_cells_samples (run_id, prompt_idx, model_idx, sample, model, provider, ok, text, reasoning,
    tool_calls, usage, prompt_tokens, completion_tokens, cost, finish_reason, prompt_filter, content_filter,
    safety_flag, ttft_ms, total_ms, tokens_per_s, error, checks, finished_at)
SELECT run_id, prompt_idx, model_idx, 0, model, provider, ok, text, reasoning, tool_calls, usage, prompt_tokens,
    completion_tokens, cost, finish_reason, prompt_filter, content_filter, safety_flag, ttft_ms, total_ms,
    tokens_per_s, error, checks, finished_at FROM compare_cells;
DROP TABLE compare_cells;
ALTER TABLE compare_cells_samples RENAME TO compare_cells;
ALTER TABLE compare_prompts ADD COLUMN threshold REAL;
";

/// Whether a cell was answered from the response cache (it then cost nothing).
pub const MIGRATION_CELL_CACHED: &str = r"
ALTER TABLE compare_cells ADD COLUMN cached INTEGER NOT NULL DEFAULT 0;
";

/// One hidden model of a battle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BattleModel {
    pub model: String,
    pub provider: String,
    /// The style of its answers (`None` on votes stored before it was kept).
    #[serde(default)]
    pub style: Option<Style>,
}

/// An arena battle and its vote: one row however many models it had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BattleRow {
    /// `GROUP/N`: the compare it was fought in (`history show GROUP`) and its number there; a
    /// vote stored before battles were is read as `vote-ROWID`.
    pub id: String,
    pub created_at: i64,
    pub prompt: String,
    /// In column order: A, B, …
    pub models: Vec<BattleModel>,
    /// `a`…`d` (that column was best), `tie`, or `bad` (all bad).
    pub vote: String,
}

impl BattleRow {
    /// The column the vote named best, if any.
    #[must_use]
    pub fn best(&self) -> Option<usize> {
        match self.vote.as_str() {
            "a" => Some(0),
            "b" => Some(1),
            "c" => Some(2),
            "d" => Some(3),
            _ => None,
        }
    }

    /// Each column's place, 1 best: the one named best first and the others after it; a tie
    /// or "all bad" puts them all first.
    #[must_use]
    pub fn ranking(&self) -> Vec<u8> {
        (0..self.models.len()).map(|i| if self.best().is_none_or(|b| b == i) { 1 } else { 2 }).collect()
    }
}

/// One model of a run, in column order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunModel {
    /// As given on the command line (`provider/model` or `model`).
    pub spec: String,
    pub model: String,
    pub provider: String,
}

/// One prompt of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptRow {
    pub idx: u32,
    pub id: String,
    pub prompt: String,
    pub system: Option<String>,
    pub attach: Vec<String>,
    pub expect: Option<Value>,
    /// The variables of a templated prompt's row (a JSON object).
    pub vars: Option<Value>,
    /// The pass rate of its samples that decides its cells (`None`: every sample must pass).
    pub threshold: Option<f64>,
    /// A multi-turn prompt, as `engine::evals::turns` keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Value>,
}

impl PromptRow {
    /// Whether its cells are graded: it has checks, or is a conversation with checks in a turn
    /// or recorded tool outputs (a call with no recording fails it).
    #[must_use]
    pub fn is_checked(&self) -> bool {
        self.expect.is_some() || self.conversation.as_ref().is_some_and(crate::engine::evals::turns::is_checked)
    }
}

/// One finished cell: a prompt answered (or failed) by a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CellRow {
    pub prompt_idx: u32,
    pub model_idx: u32,
    /// Which of the cell's repeated samples (0 without `--repeat`).
    pub sample: u32,
    pub model: String,
    pub provider: String,
    pub ok: bool,
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Option<Value>,
    pub usage: Option<Value>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cost: Option<f64>,
    pub finish_reason: Option<String>,
    pub prompt_filter: Option<Value>,
    pub content_filter: Option<Value>,
    pub safety_flag: bool,
    pub ttft_ms: Option<u64>,
    pub total_ms: Option<u64>,
    pub tokens_per_s: Option<f64>,
    pub error: Option<Value>,
    pub checks: Option<Value>,
    pub finished_at: u64,
    /// Every request of the cell was answered from the response cache: it cost nothing.
    pub cached: bool,
    /// A multi-turn cell's turns: `[{turn, prompt, text, tool_calls, finish_reason, pass}]`.
    pub turns: Option<Value>,
}

/// A run as `compare runs` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub id: String,
    pub created_at: u64,
    pub updated_at: u64,
    pub models: Vec<RunModel>,
    pub settings: Value,
    pub source: String,
    pub prompts: u32,
    pub status: String,
    pub cells_ok: u64,
    pub cells_failed: u64,
}

enum Cmd {
    CreateRun {
        id: String,
        models: String,
        settings: String,
        source: String,
        prompts: Vec<PromptRow>,
    },
    Cell(String, Box<CellRow>),
    Status(String, String),
    /// A batch of the run (`compare --batch`), inserted or updated.
    Batch(String, super::runs_batches::BatchRow),
    /// A battle and its vote, answered once committed (or with why it failed).
    Battle(Box<BattleRow>, Sender<Result<(), String>>),
    Flush(Sender<Result<(), String>>),
}

/// The handle: writes go to a thread of its own (in batches, one transaction each); reads use a
/// second connection and block the caller (call them from `spawn_blocking` in async code).
pub struct RunStore {
    tx: Option<Sender<Cmd>>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub(super) reader: Mutex<Connection>,
    path: PathBuf,
}

impl Drop for RunStore {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How long a write waits for a lock held by another palaver before failing.
const BUSY: Duration = Duration::from_secs(10);

impl RunStore {
    /// Opens (creating and migrating as needed) the database at `path`.
    ///
    /// # Errors
    /// The file cannot be created or opened, is not a database, or is from a newer palaver.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
        }
        let mut conn = Connection::open(path)?;
        super::schema::configure(&conn, BUSY)?;
        super::schema::migrate(&mut conn)?;
        super::runs_batches::ensure(&conn)?;
        let reader = Connection::open(path)?;
        super::schema::configure(&reader, BUSY)?;
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("palaver-runs".into())
            .spawn(move || write_loop(&conn, &rx))
            .map_err(|source| StoreError::Io { path: path.to_path_buf(), source })?;
        Ok(Self { tx: Some(tx), thread: Some(thread), reader: Mutex::new(reader), path: path.to_path_buf() })
    }

    /// Opens the database for reading only: no migration, no writer thread, nothing created.
    /// For `compare runs|show|stats` when the file or its directory cannot be written (a
    /// read-only mount, another user's store); writes through this handle are dropped and
    /// `flush` says the store is closed.
    ///
    /// # Errors
    /// The file cannot be opened or is not a database.
    pub fn open_read_only(path: &Path) -> Result<Self, StoreError> {
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        // As the history's read-only handle: a WAL database in a directory that cannot be
        // written opens only as immutable (no -shm can be made).
        let reader = Connection::open_with_flags(path, flags)
            .and_then(|c| c.query_row("SELECT count(*) FROM compare_runs", [], |r| r.get::<_, i64>(0)).map(|_| c))
            .or_else(|_| Connection::open_with_flags(super::read_only::immutable_uri(path), flags))?;
        reader.busy_timeout(BUSY)?;
        // A database without the runs' tables (from before them) is no store of runs.
        reader
            .query_row("SELECT count(*) FROM compare_runs", [], |r| r.get::<_, i64>(0))
            .map_err(|_| StoreError::Format("no compare runs in this database (an older palaver wrote it)".into()))?;
        Ok(Self { tx: None, thread: None, reader: Mutex::new(reader), path: path.to_path_buf() })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn send(&self, cmd: Cmd) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(cmd).is_ok())
    }

    /// Creates a run with its prompts and waits until it is on disk; returns its id.
    ///
    /// # Errors
    /// The write failed (full disk, read-only file…).
    pub fn create_run(
        &self,
        models: &[RunModel],
        settings: &Value,
        source: &str,
        prompts: Vec<PromptRow>,
    ) -> Result<String, StoreError> {
        let id = format!("run-{}", new_id(now_ms()));
        let models = serde_json::to_string(models).unwrap_or_else(|_| "[]".into());
        self.send(Cmd::CreateRun {
            id: id.clone(),
            models,
            settings: settings.to_string(),
            source: source.into(),
            prompts,
        });
        self.flush()?;
        Ok(id)
    }

    /// Queues a finished cell (written within moments, in a batch with its neighbours).
    pub fn save_cell(&self, run: &str, cell: CellRow) {
        if !self.send(Cmd::Cell(run.to_owned(), Box::new(cell))) {
            eprintln!("palaver: the run store stopped; a finished cell was not saved");
        }
    }

    /// Stores a batch of the run (new, or its new state) and waits until it is on disk: a
    /// batch id the provider handed out must survive a crash the next moment.
    ///
    /// # Errors
    /// The write failed, or the writer stopped.
    pub fn save_batch(&self, run: &str, batch: &super::runs_batches::BatchRow) -> Result<(), StoreError> {
        self.send(Cmd::Batch(run.to_owned(), batch.clone()));
        self.flush()
    }

    /// Sets a run's status (`running`, `finished`, `interrupted`).
    pub fn set_status(&self, run: &str, status: &str) {
        self.send(Cmd::Status(run.to_owned(), status.to_owned()));
    }

    /// Stores a battle and its vote, and waits until it is on disk. A vote is final: a battle
    /// stored again keeps its first vote.
    ///
    /// # Errors
    /// The write failed, or the writer stopped.
    pub fn write_battle(&self, b: BattleRow) -> Result<(), StoreError> {
        let (reply, rx) = mpsc::channel();
        if !self.send(Cmd::Battle(Box::new(b), reply)) {
            return Err(StoreError::Closed);
        }
        match rx.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(StoreError::Io { path: self.path.clone(), source: std::io::Error::other(e) }),
            Err(_) => Err(StoreError::Closed),
        }
    }

    /// Blocks until everything queued is on disk.
    ///
    /// # Errors
    /// The last batch failed, or the writer stopped.
    pub fn flush(&self) -> Result<(), StoreError> {
        let (reply, rx) = mpsc::channel();
        if !self.send(Cmd::Flush(reply)) {
            return Err(StoreError::Closed);
        }
        match rx.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(StoreError::Io { path: self.path.clone(), source: std::io::Error::other(e) }),
            Err(_) => Err(StoreError::Closed),
        }
    }

    pub(super) fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let conn = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(f(&conn)?)
    }
}

/// Most commands one transaction takes: a batch is bounded so a flush waits little.
const BATCH: usize = 512;

fn write_loop(conn: &Connection, rx: &Receiver<Cmd>) {
    let mut last_error: Option<String> = None;
    while let Some(batch) = super::next_batch(rx, BATCH) {
        let mut flushes = Vec::new();
        let writes: Vec<Cmd> = batch
            .into_iter()
            .filter_map(|c| match c {
                Cmd::Flush(r) => {
                    flushes.push(r);
                    None
                }
                other => Some(other),
            })
            .collect();
        if !writes.is_empty() {
            let mut tries = 0;
            loop {
                match write_batch(conn, &writes) {
                    Ok(()) => break,
                    Err(e) if tries < 20 && super::writer::is_transient(&e) => {
                        tries += 1;
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    Err(_) => {
                        // One bad row must not take the batch's other finished cells with it:
                        // each is written on its own, and only those that fail are lost.
                        for w in &writes {
                            if let Err(e) = write_batch(conn, std::slice::from_ref(w)) {
                                let msg = super::describe(&e);
                                if let Cmd::Battle(_, reply) = w {
                                    // The one waiting for it hears why.
                                    let _ = reply.send(Err(msg));
                                    continue;
                                }
                                eprintln!("palaver: could not save compare results: {msg}");
                                last_error = Some(msg);
                            }
                        }
                        break;
                    }
                }
            }
        }
        // An error stays until a flush has reported it, whatever succeeded after it.
        if !flushes.is_empty() {
            for r in flushes {
                let _ = r.send(last_error.clone().map_or(Ok(()), Err));
            }
            last_error = None;
        }
    }
}

fn write_batch(conn: &Connection, cmds: &[Cmd]) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
    // Vote writers hear back only once the batch is committed.
    let mut replies = Vec::new();
    for c in cmds {
        match c {
            Cmd::CreateRun { id, models, settings, source, prompts } => {
                tx.execute(
                    "INSERT INTO compare_runs (id, created_at, updated_at, models, settings, source, prompts, status)
                     VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, 'running')",
                    params![id, now, models, settings, source, i64::try_from(prompts.len()).unwrap_or(i64::MAX)],
                )?;
                let mut st = tx.prepare_cached(
                    "INSERT INTO compare_prompts (run_id, idx, pid, prompt, system, attach, expect, vars, threshold, turns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?;
                for p in prompts {
                    let attach = (!p.attach.is_empty()).then(|| serde_json::to_string(&p.attach).unwrap_or_default());
                    let expect = p.expect.as_ref().map(Value::to_string);
                    let vars = p.vars.as_ref().map(Value::to_string);
                    let turns = p.conversation.as_ref().map(Value::to_string);
                    st.execute(params![id, p.idx, p.id, p.prompt, p.system, attach, expect, vars, p.threshold, turns])?;
                }
            }
            Cmd::Cell(run, c) => {
                // A cell's answer and calls go through the one redactor, as messages do.
                let js =
                    |v: &Option<Value>| v.as_ref().map(|v| crate::sys::secrets::redact(&v.to_string()).into_owned());
                let clean = |s: &str| crate::sys::secrets::redact(s).into_owned();
                let n = |v: Option<u64>| v.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO compare_cells (run_id, prompt_idx, model_idx, model, provider, ok, text,
                     reasoning, tool_calls, usage, prompt_tokens, completion_tokens, cost, finish_reason,
                     prompt_filter, content_filter, safety_flag, ttft_ms, total_ms, tokens_per_s, error, checks,
                     finished_at, sample, cached, turns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
                     ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
                )?
                .execute(params![
                    run,
                    c.prompt_idx,
                    c.model_idx,
                    c.model,
                    c.provider,
                    c.ok,
                    clean(&c.text),
                    clean(&c.reasoning),
                    js(&c.tool_calls),
                    js(&c.usage),
                    n(c.prompt_tokens),
                    n(c.completion_tokens),
                    c.cost,
                    c.finish_reason,
                    js(&c.prompt_filter),
                    js(&c.content_filter),
                    c.safety_flag,
                    n(c.ttft_ms),
                    n(c.total_ms),
                    c.tokens_per_s,
                    js(&c.error),
                    js(&c.checks),
                    n(Some(c.finished_at)),
                    c.sample,
                    c.cached,
                    js(&c.turns),
                ])?;
                tx.prepare_cached("UPDATE compare_runs SET updated_at = ?2 WHERE id = ?1")?
                    .execute(params![run, now])?;
            }
            Cmd::Status(run, status) => {
                tx.execute(
                    "UPDATE compare_runs SET status = ?2, updated_at = ?3 WHERE id = ?1",
                    params![run, status, now],
                )?;
            }
            Cmd::Batch(run, b) => super::runs_batches::write(&tx, run, b, now)?,
            Cmd::Battle(b, reply) => {
                write_battle(&tx, b, now)?;
                replies.push(reply);
            }
            Cmd::Flush(_) => {}
        }
    }
    tx.commit()?;
    for reply in replies {
        let _ = reply.send(Ok(()));
    }
    Ok(())
}

/// One battle; a battle already stored keeps its vote (votes are final).
fn write_battle(tx: &rusqlite::Transaction<'_>, b: &BattleRow, now: i64) -> rusqlite::Result<()> {
    let models = serde_json::to_string(&b.models).unwrap_or_else(|_| "[]".into());
    let ranking = serde_json::to_string(&b.ranking()).unwrap_or_else(|_| "[]".into());
    tx.execute(
        "INSERT OR IGNORE INTO arena_battles (id, created_at, prompt, models, vote, ranking)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![b.id, now, b.prompt, models, b.vote, ranking],
    )?;
    Ok(())
}

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;
