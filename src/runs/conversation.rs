//! A multi-turn cell: one conversation with one model, each turn a user message answered by the
//! headless turn (its tool loop included) on the whole history so far, and checked by its own
//! `expect`. Where the line records tool outputs, each turn's registry answers every call from
//! them and nothing runs; each turn's `tool_outputs` check passes when every call it made had
//! a recording, else it fails naming the calls, and the conversation ends there. The cell passes when every turn does: its row has the last answer,
//! every turn's checks (each with its `turn`), and each turn's answer and calls in `turns`.

use super::cell::{Asked, CellJob, fold, sample_settings};
use super::recorder::Recorder;
use super::turn::{Turn, TurnOutcome, run_turn};
use crate::engine::evals::expect::CheckResult;
use crate::engine::evals::turns::Conversation;
use crate::engine::message::{Message, ToolCall};
use crate::engine::tool_loop::ToolMode;
use crate::engine::turn_engine::{TurnAccount, TurnStop};
use crate::store::runs::CellRow;
use serde_json::{Value, json};
use std::time::Instant;

/// What the turns so far add up to.
#[derive(Default)]
struct Sum {
    history: Vec<Message>,
    account: TurnAccount,
    calls: Vec<ToolCall>,
    /// Every call of the conversation as stored, each with its turn.
    stored_calls: Vec<Value>,
    checks: Vec<Value>,
    turns: Vec<Value>,
}

/// Runs the conversation of a cell whose first user message (attachments read) is `first`.
/// `None` when the user stopped it (Ctrl+C): it is left to `--resume`.
pub(super) async fn run(
    mut job: CellJob<'_>,
    conv: &Conversation,
    base: CellRow,
    first: Message,
    started: Instant,
) -> Option<CellRow> {
    let mut sum = Sum::default();
    let mut first = Some(first);
    let mut last = None;
    for (i, case) in conv.turns.iter().enumerate() {
        let n = i + 1;
        sum.history.push(first.take().unwrap_or_else(|| Message::user(&case.prompt)));
        let from = sum.history.len() - 1;
        let turn_started = Instant::now();
        let out = one_turn(&mut job, conv, i, &mut sum.history).await;
        if out.account.stop == Some(TurnStop::Cancelled) {
            return None;
        }
        let row = fold(base.clone(), &out, &sum.history[from..], job.cfg, job.target, turn_started);
        let mut results = match (&case.expect, row.ok) {
            (Some(expect), true) => {
                job.grader(&case.prompt).checks(expect, &row, Asked::of(&out.msg), &mut *job.sink).await?
            }
            _ => Vec::new(),
        };
        // Recorded tools: a check of its own, that every call of the turn had a recording.
        let unrecorded = unrecorded(conv, i, &out.calls);
        if conv.tools.is_some() {
            let detail = (!unrecorded.is_empty()).then(|| unrecorded.join("; "));
            results.push(CheckResult::new("tool_outputs", unrecorded.is_empty(), detail));
        }
        let results: Vec<Value> = results.into_iter().map(|r| tagged(r, n)).collect();
        let pass = (!results.is_empty()).then(|| crate::engine::evals::expect::cell_passes(&results));
        sum.turns.push(json!({
            "turn": n, "prompt": case.prompt, "text": row.text, "finish_reason": row.finish_reason,
            "tool_calls": row.tool_calls.clone().unwrap_or_else(|| json!([])), "pass": pass, "error": row.error,
        }));
        for mut call in
            row.tool_calls.and_then(|c| if let Value::Array(a) = c { Some(a) } else { None }).unwrap_or_default()
        {
            call["turn"] = json!(n);
            sum.stored_calls.push(call);
        }
        sum.checks.extend(results);
        sum.account.requests += out.account.requests;
        sum.account.usages.extend(out.account.usages.iter().cloned());
        sum.calls.extend(out.calls.iter().cloned());
        // A turn that failed to answer, or made a call nothing recorded, ends the conversation.
        let ended = !row.ok || !unrecorded.is_empty();
        last = Some(out);
        if ended {
            break;
        }
    }
    let last = last?;
    Some(finish(job, base, last, sum, started))
}

/// Runs turn `i` on `history` (which ends with its user message), with the recorded registry
/// when the line has one: its tools offered and answered without asking, since nothing runs.
async fn one_turn(job: &mut CellJob<'_>, conv: &Conversation, i: usize, history: &mut Vec<Message>) -> TurnOutcome {
    let case = &conv.turns[i];
    let mut settings = sample_settings(job, case.expect.as_ref());
    let own = conv.registry(i);
    if own.is_some() {
        settings.tools = ToolMode::Auto;
    }
    let registry = own.as_ref().unwrap_or(job.registry);
    let turn = Turn { target: job.target, settings, registry, http: job.http, stop: job.stop.clone() };
    let out = run_turn(&turn, history, &mut Recorder::off(), &mut *job.sink).await;
    // The turn's last reply ends the history the next turn is sent with (its calls, if it
    // stopped with some unrun, answered as they were settled).
    history.push(out.msg.clone());
    history.extend(crate::engine::turn_engine::answers(&out.msg));
    out
}

/// Why each call of turn `i` had no recording (none when the line records nothing).
fn unrecorded(conv: &Conversation, i: usize, calls: &[ToolCall]) -> Vec<String> {
    if conv.tools.is_none() {
        return Vec::new();
    }
    let recorded = &conv.turns[i].recorded;
    calls
        .iter()
        .filter(|c| recorded.find(&c.name, &c.arguments).is_none())
        .map(|c| crate::tools::recorded::unrecorded(&c.name, &c.arguments))
        .collect()
}

/// A turn's check as stored: with its `turn`, which its detail also names for the reports.
fn tagged(r: CheckResult, n: usize) -> Value {
    let detail = r.detail.as_deref().map_or_else(|| format!("turn {n}"), |d| format!("turn {n}: {d}"));
    let mut v = serde_json::to_value(CheckResult { detail: Some(detail), ..r }).unwrap_or(Value::Null);
    if let Value::Object(o) = &mut v {
        o.insert("turn".into(), json!(n));
    }
    v
}

/// The cell's row: the conversation's usage, cost and time added up, its last answer, every
/// turn's checks, and an error naming the turn it happened in.
fn finish(job: CellJob<'_>, base: CellRow, last: TurnOutcome, sum: Sum, started: Instant) -> CellRow {
    let n = sum.turns.len();
    let whole = TurnOutcome { msg: last.msg, calls: sum.calls, account: sum.account, ..last };
    let mut row = fold(base, &whole, &sum.history, job.cfg, job.target, started);
    row.tool_calls = (!sum.stored_calls.is_empty()).then_some(Value::Array(sum.stored_calls));
    row.checks = (!sum.checks.is_empty()).then_some(Value::Array(sum.checks));
    if let Some(Value::Object(e)) = &mut row.error {
        let message = e.get("message").and_then(Value::as_str).unwrap_or("the request failed");
        let message = format!("turn {n}: {message}");
        e.insert("message".into(), json!(message));
    }
    row.turns = Some(Value::Array(sum.turns));
    row.finished_at = crate::store::ids::now_ms();
    row
}
