//! The provider batches of a compare run (`compare --batch`): each batch's id is stored the
//! moment the provider created it, with its last known state, so `--resume` polls the same
//! batch after a restart (never sending its cells again) and `compare runs` can show it.

use super::StoreError;
use super::runs::RunStore;
use rusqlite::{Transaction, params};
use serde::Serialize;

/// The table. Made when the run store opens rather than by a numbered migration: it only
/// adds, an older palaver ignores it, and several branches adding migrations at once would
/// number theirs alike.
const TABLE: &str = r"
CREATE TABLE IF NOT EXISTS compare_batches (
    run_id     TEXT NOT NULL REFERENCES compare_runs(id) ON DELETE CASCADE,
    batch_id   TEXT NOT NULL,                 -- the provider's id
    model_idx  INTEGER NOT NULL,
    cells      INTEGER NOT NULL,              -- lines sent
    status     TEXT NOT NULL,                 -- the provider's last reported status
    completed  INTEGER NOT NULL DEFAULT 0,
    failed     INTEGER NOT NULL DEFAULT 0,
    gathered   INTEGER NOT NULL DEFAULT 0,    -- 1: its results are stored (or it is gone)
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, batch_id)
) WITHOUT ROWID;
";

/// Makes the table when the database has none.
pub(super) fn ensure(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.execute_batch(TABLE)
}

/// One batch of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BatchRow {
    pub batch_id: String,
    pub model_idx: u32,
    pub cells: u64,
    pub status: String,
    pub completed: u64,
    pub failed: u64,
    pub gathered: bool,
}

impl BatchRow {
    /// `in_progress 1200/10000`, and `, 3 failed` when lines failed (the provider's
    /// `request_counts`: done is completed and failed together).
    #[must_use]
    pub fn progress(&self) -> String {
        let failed = if self.failed > 0 { format!(", {} failed", self.failed) } else { String::new() };
        format!("{} {}/{}{failed}", self.status, self.completed + self.failed, self.cells)
    }
}

/// Writes (inserts or updates) a batch's row.
pub(super) fn write(tx: &Transaction<'_>, run: &str, b: &BatchRow, now: i64) -> rusqlite::Result<()> {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    tx.prepare_cached(
        "INSERT INTO compare_batches (run_id, batch_id, model_idx, cells, status, completed, failed, gathered,
         created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
         ON CONFLICT (run_id, batch_id) DO UPDATE SET status = ?5, completed = ?6, failed = ?7, gathered = ?8,
         updated_at = ?9",
    )?
    .execute(params![
        run,
        b.batch_id,
        b.model_idx,
        n(b.cells),
        b.status,
        n(b.completed),
        n(b.failed),
        b.gathered,
        now
    ])?;
    Ok(())
}

impl RunStore {
    /// A run's batches, oldest first.
    ///
    /// # Errors
    /// The database cannot be read.
    pub fn batches(&self, run: &str) -> Result<Vec<BatchRow>, StoreError> {
        self.read(|c| {
            // A database from before batches has no such table: no batches.
            let exists: i64 = c.query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'compare_batches'",
                [],
                |r| r.get(0),
            )?;
            if exists == 0 {
                return Ok(Vec::new());
            }
            let mut st = c.prepare_cached(
                "SELECT batch_id, model_idx, cells, status, completed, failed, gathered FROM compare_batches
                 WHERE run_id = ?1 ORDER BY created_at, batch_id",
            )?;
            let rows = st.query_map(params![run], |r| {
                Ok(BatchRow {
                    batch_id: r.get(0)?,
                    model_idx: r.get(1)?,
                    cells: r.get::<_, i64>(2)?.try_into().unwrap_or(0),
                    status: r.get(3)?,
                    completed: r.get::<_, i64>(4)?.try_into().unwrap_or(0),
                    failed: r.get::<_, i64>(5)?.try_into().unwrap_or(0),
                    gathered: r.get(6)?,
                })
            })?;
            rows.collect()
        })
    }

    /// A one-line state of the run's batches for `compare runs` (`batch: in_progress
    /// 1200/10000`), or `None` for a run without batches.
    #[must_use]
    pub fn batch_state(&self, run: &str) -> Option<String> {
        let batches = self.batches(run).ok()?;
        if batches.is_empty() {
            return None;
        }
        let states: Vec<String> = batches.iter().map(BatchRow::progress).collect();
        Some(format!("batch: {}", states.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use crate::store::runs::{PromptRow, RunModel, RunStore};

    #[test]
    fn a_batch_is_kept_at_once_and_updated_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::open(&dir.path().join("p.db")).unwrap();
        let models = [RunModel { spec: "demo".into(), model: "demo".into(), provider: "demo".into() }];
        let prompt = PromptRow { prompt: "hi".into(), ..PromptRow::default() };
        let run = store.create_run(&models, &serde_json::json!({}), "-", vec![prompt]).unwrap();
        assert_eq!(store.batch_state(&run), None);
        let mut b = super::BatchRow {
            batch_id: "batch_1".into(),
            model_idx: 0,
            cells: 10,
            status: "validating".into(),
            ..Default::default()
        };
        store.save_batch(&run, &b).unwrap();
        b.status = "in_progress".into();
        b.completed = 3;
        b.failed = 1;
        store.save_batch(&run, &b).unwrap();
        assert_eq!(store.batches(&run).unwrap(), [b.clone()]);
        assert_eq!(store.batch_state(&run).as_deref(), Some("batch: in_progress 4/10, 1 failed"));
    }
}
