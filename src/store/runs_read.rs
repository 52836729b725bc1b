//! Reading compare runs back: the list, one run, its prompts, which cells exist (for
//! `--resume`), the cells of one prompt (for the report, one prompt at a time so memory does
//! not grow with the run), the figures of every cell (for the summary, text left out), and the
//! arena's votes.

use super::StoreError;
use super::runs::{BattleModel, BattleRow, CellRow, PromptRow, RunModel, RunStore, RunSummary};
use crate::engine::evals::style::Style;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;
use std::collections::HashSet;

fn json(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<Value>> {
    Ok(r.get::<_, Option<String>>(i)?.and_then(|s| serde_json::from_str(&s).ok()))
}

fn uint(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<u64>> {
    Ok(r.get::<_, Option<i64>>(i)?.and_then(|v| u64::try_from(v).ok()))
}

const RUN: &str = "SELECT r.id, r.created_at, r.updated_at, r.models, r.settings, r.source, r.prompts, r.status,
    (SELECT count(*) FROM compare_cells c WHERE c.run_id = r.id AND c.ok = 1),
    (SELECT count(*) FROM compare_cells c WHERE c.run_id = r.id AND c.ok = 0)
    FROM compare_runs r";

fn run_row(r: &Row<'_>) -> rusqlite::Result<RunSummary> {
    let models: Vec<RunModel> = serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default();
    Ok(RunSummary {
        id: r.get(0)?,
        created_at: uint(r, 1)?.unwrap_or(0),
        updated_at: uint(r, 2)?.unwrap_or(0),
        models,
        settings: serde_json::from_str(&r.get::<_, String>(4)?).unwrap_or(Value::Null),
        source: r.get(5)?,
        prompts: r.get(6)?,
        status: r.get(7)?,
        cells_ok: uint(r, 8)?.unwrap_or(0),
        cells_failed: uint(r, 9)?.unwrap_or(0),
    })
}

/// The figures of a cell the summary needs (no text: a summary of 4,000 cells reads little).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellFigures {
    pub prompt_idx: u32,
    pub model_idx: u32,
    pub sample: u32,
    pub ok: bool,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cost: Option<f64>,
    pub finish_reason: Option<String>,
    pub safety_flag: bool,
    pub ttft_ms: Option<u64>,
    pub total_ms: Option<u64>,
    pub tokens_per_s: Option<f64>,
    /// Characters of the answer.
    pub answer_chars: u64,
    pub checks: Option<Value>,
    pub cached: bool,
}

const CELL: &str = "SELECT prompt_idx, model_idx, model, provider, ok, text, reasoning, tool_calls, usage,
    prompt_tokens, completion_tokens, cost, finish_reason, prompt_filter, content_filter, safety_flag, ttft_ms,
    total_ms, tokens_per_s, error, checks, finished_at, SAMPLE, CACHED, TURNS FROM compare_cells";

/// Column `name` of `table` to select, or `missing` (a literal) in a file opened read-only from
/// before the column was added (it could not be migrated).
fn column_or(c: &Connection, table: &str, name: &'static str, missing: &'static str) -> &'static str {
    if c.prepare(&format!("SELECT {name} FROM {table} LIMIT 0")).is_ok() { name } else { missing }
}

/// A cell's sample (to select, and to order by): 0, and no order, before samples were.
fn sample_column(c: &Connection) -> (&'static str, &'static str) {
    match column_or(c, "compare_cells", "sample", "0") {
        "0" => ("0", ""),
        col => (col, ", sample"),
    }
}

fn cell_row(r: &Row<'_>) -> rusqlite::Result<CellRow> {
    Ok(CellRow {
        prompt_idx: r.get(0)?,
        model_idx: r.get(1)?,
        model: r.get(2)?,
        provider: r.get(3)?,
        ok: r.get(4)?,
        text: r.get(5)?,
        reasoning: r.get(6)?,
        tool_calls: json(r, 7)?,
        usage: json(r, 8)?,
        prompt_tokens: uint(r, 9)?,
        completion_tokens: uint(r, 10)?,
        cost: r.get(11)?,
        finish_reason: r.get(12)?,
        prompt_filter: json(r, 13)?,
        content_filter: json(r, 14)?,
        safety_flag: r.get(15)?,
        ttft_ms: uint(r, 16)?,
        total_ms: uint(r, 17)?,
        tokens_per_s: r.get(18)?,
        error: json(r, 19)?,
        checks: json(r, 20)?,
        finished_at: uint(r, 21)?.unwrap_or(0),
        sample: r.get(22)?,
        cached: r.get(23)?,
        turns: json(r, 24)?,
    })
}

impl RunStore {
    /// Runs, newest first.
    ///
    /// # Errors
    /// A database error.
    pub fn runs(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        self.read(|c| {
            let sql = format!("{RUN} ORDER BY r.created_at DESC, r.id DESC LIMIT ?1");
            c.prepare(&sql)?.query_map(params![i64::try_from(limit).unwrap_or(-1)], run_row)?.collect()
        })
        .map(|runs: Vec<RunSummary>| runs.into_iter().map(|r| self.alive(r)).collect())
    }

    /// A run stored as `running` whose process has ended without saying so (killed, crashed,
    /// the machine went down) is `stopped`: the process running it holds its lock (see
    /// `compare_set`), which the kernel lets go however the process ends. Without a lock file
    /// (the few milliseconds between a run's creation and its lock, or a data directory where
    /// none could be made) it stays `running` while cells keep arriving, and is `stopped` once
    /// none has for 10 s.
    fn alive(&self, mut r: RunSummary) -> RunSummary {
        if r.status == "running" {
            let held = super::lock::held(self.path(), &r.id);
            let fresh = super::ids::now_ms().saturating_sub(r.updated_at) < 10_000;
            if held == Some(false) || (held.is_none() && !fresh) {
                r.status = "stopped".to_owned();
            }
        }
        r
    }

    /// A run by exact id or unique prefix (`run-` may be left out).
    ///
    /// # Errors
    /// A prefix matching several runs, or a database error.
    pub fn run(&self, prefix: &str) -> Result<Option<RunSummary>, StoreError> {
        let prefix = if prefix.starts_with("run-") { prefix.to_owned() } else { format!("run-{prefix}") };
        let found: Vec<RunSummary> = self.read(|c| {
            let sql = format!("{RUN} WHERE r.id >= ?1 AND r.id < ?1 || char(127) ORDER BY r.id LIMIT 5");
            c.prepare(&sql)?.query_map(params![prefix], run_row)?.collect()
        })?;
        if let Some(exact) = found.iter().find(|r| r.id == prefix) {
            return Ok(Some(self.alive(exact.clone())));
        }
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.into_iter().next().map(|r| self.alive(r))),
            _ => Err(StoreError::Ambiguous { prefix, matches: found.into_iter().map(|r| r.id).collect() }),
        }
    }

    /// A run's prompts in order.
    ///
    /// # Errors
    /// A database error.
    pub fn prompts(&self, run: &str) -> Result<Vec<PromptRow>, StoreError> {
        self.read(|c| {
            // A file opened read-only may predate the `vars` column (it could not be migrated).
            let vars = column_or(c, "compare_prompts", "vars", "NULL");
            let threshold = column_or(c, "compare_prompts", "threshold", "NULL");
            let turns = column_or(c, "compare_prompts", "turns", "NULL");
            c.prepare(&format!(
                "SELECT idx, pid, prompt, system, attach, expect, {vars}, {threshold}, {turns} FROM compare_prompts WHERE run_id = ?1 ORDER BY idx"
            ))?
            .query_map(params![run], |r| {
                let attach: Option<String> = r.get(4)?;
                Ok(PromptRow {
                    idx: r.get(0)?,
                    id: r.get(1)?,
                    prompt: r.get(2)?,
                    system: r.get(3)?,
                    attach: attach.and_then(|a| serde_json::from_str(&a).ok()).unwrap_or_default(),
                    expect: json(r, 5)?,
                    vars: json(r, 6)?,
                    threshold: r.get(7)?,
                    conversation: json(r, 8)?,
                })
            })?
            .collect()
        })
    }

    /// The (prompt, model, sample) triples that have a stored cell (with `ok_only`, an
    /// answered one).
    ///
    /// # Errors
    /// A database error.
    pub fn done_cells(&self, run: &str, ok_only: bool) -> Result<HashSet<(u32, u32, u32)>, StoreError> {
        self.read(|c| {
            let sql = format!(
                "SELECT prompt_idx, model_idx, {} FROM compare_cells WHERE run_id = ?1 AND (ok = 1 OR ?2 = 0)",
                sample_column(c).0
            );
            c.prepare(&sql)?.query_map(params![run, ok_only], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect()
        })
    }

    /// The stored cells of one prompt, in model order, each model's samples in order.
    ///
    /// # Errors
    /// A database error.
    pub fn prompt_cells(&self, run: &str, prompt_idx: u32) -> Result<Vec<CellRow>, StoreError> {
        self.read(|c| {
            let (sample, order) = sample_column(c);
            let sql = format!("{CELL} WHERE run_id = ?1 AND prompt_idx = ?2 ORDER BY model_idx{order}")
                .replace("SAMPLE", sample)
                .replace("CACHED", column_or(c, "compare_cells", "cached", "0"))
                .replace("TURNS", column_or(c, "compare_cells", "turns", "NULL"));
            c.prepare_cached(&sql)?.query_map(params![run, prompt_idx], cell_row)?.collect()
        })
    }

    /// Calls `f` with the figures of every cell of a run, in (prompt, model, sample) order.
    ///
    /// # Errors
    /// A database error.
    pub fn each_figures(&self, run: &str, mut f: impl FnMut(CellFigures)) -> Result<(), StoreError> {
        self.read(|c| {
            let (sample, order) = sample_column(c);
            let mut st = c.prepare(&format!(
                "SELECT prompt_idx, model_idx, ok, prompt_tokens, completion_tokens, cost, finish_reason, safety_flag,
                 ttft_ms, total_ms, tokens_per_s, length(text), checks, {sample}, {} FROM compare_cells WHERE run_id = ?1
                 ORDER BY prompt_idx, model_idx{order}",
                column_or(c, "compare_cells", "cached", "0")
            ))?;
            let mut rows = st.query(params![run])?;
            while let Some(r) = rows.next()? {
                f(CellFigures {
                    prompt_idx: r.get(0)?,
                    model_idx: r.get(1)?,
                    ok: r.get(2)?,
                    prompt_tokens: uint(r, 3)?,
                    completion_tokens: uint(r, 4)?,
                    cost: r.get(5)?,
                    finish_reason: r.get(6)?,
                    safety_flag: r.get(7)?,
                    ttft_ms: uint(r, 8)?,
                    total_ms: uint(r, 9)?,
                    tokens_per_s: r.get(10)?,
                    answer_chars: uint(r, 11)?.unwrap_or(0),
                    checks: json(r, 12)?,
                    sample: r.get(13)?,
                    cached: r.get(14)?,
                });
            }
            Ok(())
        })
    }

    /// Every arena battle, oldest first: the battles stored whole, and each vote stored before
    /// them (one row per pair of models) as a battle of its two.
    ///
    /// # Errors
    /// A database error.
    pub fn battles(&self) -> Result<Vec<BattleRow>, StoreError> {
        let mut out = self.read(|c| {
            // A file from before battles were stored, opened read-only, has no such table.
            let table = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'arena_battles'";
            if c.query_row(table, [], |_| Ok(())).optional()?.is_none() {
                return Ok(Vec::new());
            }
            c.prepare("SELECT id, created_at, prompt, models, vote FROM arena_battles ORDER BY created_at, rowid")?
                .query_map([], |r| {
                    let models: String = r.get(3)?;
                    Ok(BattleRow {
                        id: r.get(0)?,
                        created_at: r.get(1)?,
                        prompt: r.get(2)?,
                        // Models that do not parse make a battle of none: it counts for nobody.
                        models: serde_json::from_str(&models).unwrap_or_default(),
                        vote: r.get(4)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        out.extend(self.old_votes()?);
        out.sort_by_key(|b| b.created_at);
        Ok(out)
    }

    /// The votes stored a pair at a time, before battles were stored whole.
    fn old_votes(&self) -> Result<Vec<BattleRow>, StoreError> {
        self.read(|c| {
            c.prepare(
                "SELECT id, created_at, model_a, provider_a, model_b, provider_b, winner, prompt, style_a, style_b
                 FROM arena_votes ORDER BY id",
            )?
            .query_map([], |r| {
                // A style that does not parse is as good as none: the vote still counts raw.
                let style = |i: usize| -> rusqlite::Result<Option<Style>> {
                    Ok(r.get::<_, Option<String>>(i)?.and_then(|s| serde_json::from_str(&s).ok()))
                };
                let model = |m: usize, p: usize, s: usize| -> rusqlite::Result<BattleModel> {
                    Ok(BattleModel { model: r.get(m)?, provider: r.get(p)?, style: style(s)? })
                };
                Ok(BattleRow {
                    id: format!("vote-{}", r.get::<_, i64>(0)?),
                    created_at: r.get(1)?,
                    prompt: r.get(7)?,
                    models: vec![model(2, 3, 8)?, model(4, 5, 9)?],
                    vote: r.get(6)?,
                })
            })?
            .collect()
        })
    }

    /// Whether a run exists with this exact id.
    ///
    /// # Errors
    /// A database error.
    pub fn has_run(&self, id: &str) -> Result<bool, StoreError> {
        self.read(|c| {
            c.query_row("SELECT 1 FROM compare_runs WHERE id = ?1", params![id], |_| Ok(()))
                .optional()
                .map(|o| o.is_some())
        })
    }
}
