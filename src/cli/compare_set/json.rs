//! `--json` for prompt sets: one `{"type":"cell"}` line per cell (as it finishes, or from the
//! store for `compare show`), then one `{"type":"summary"}` line.

use super::summary::Summary;
use crate::store::runs::{CellRow, PromptRow, RunSummary};
use serde_json::{Value, json};

/// The line of one cell.
#[must_use]
pub fn cell_line(run: &str, prompt: &PromptRow, c: &CellRow) -> Value {
    let usage = c.usage.as_ref().map_or(Value::Null, crate::engine::usage::UsageView::result_json);
    let mut line = json!({
        "type": "cell", "run": run, "prompt_index": c.prompt_idx, "prompt_id": prompt.id,
        "column": c.model_idx, "sample": c.sample, "model": c.model, "provider": c.provider, "ok": c.ok,
        "text": c.text, "reasoning": if c.reasoning.is_empty() { Value::Null } else { json!(c.reasoning) },
        "tool_calls": c.tool_calls.clone().unwrap_or_else(|| json!([])), "finish_reason": c.finish_reason,
        "usage": usage, "cost": c.cost, "prompt_filter": c.prompt_filter, "content_filter": c.content_filter,
        "safety_flag": c.safety_flag, "ttft_ms": c.ttft_ms, "total_ms": c.total_ms, "tokens_per_s": c.tokens_per_s,
        "checks": c.checks, "error": c.error, "cached": c.cached,
    });
    // Only a templated prompt's cells carry their row: the other lines stay as they were.
    if let (Some(vars), Some(obj)) = (&prompt.vars, line.as_object_mut()) {
        obj.insert("vars".into(), vars.clone());
    }
    // Only a multi-turn cell carries its turns (each answer, its calls and whether it passed).
    if let (Some(turns), Some(obj)) = (&c.turns, line.as_object_mut()) {
        obj.insert("turns".into(), turns.clone());
    }
    line
}

/// The summary line.
#[must_use]
pub fn summary_line(run: &RunSummary, s: &Summary, status: u8) -> Value {
    let mut line = json!({
        "type": "summary", "run": run.id, "status": run.status, "prompts": s.prompts, "cells": s.cells,
        "missing": s.missing, "models": s.models, "exit_status": status,
    });
    // Only a run with repeats has rates to give: the other lines stay as they were.
    if let (true, Some(obj)) = (s.repeat > 1, line.as_object_mut()) {
        obj.insert("repeat".into(), json!(s.repeat));
        obj.insert("rates".into(), json!(s.rates));
        obj.insert("flaky".into(), json!(s.flaky));
    }
    line
}
