//! One cell of a prompt set: one prompt to one model, through the headless turn (tool loop
//! included), folded into the row the store keeps. The reply itself is dropped once the row is
//! made: a run never holds more answers than it has cells in flight.

use super::judge::{Grading, Judges, grade};
use super::recorder::Recorder;
use super::sink::TurnSink;
use super::stop::Stop;
use super::turn::{Turn, TurnOutcome, run_turn};
use crate::config::Config;
use crate::engine::evals::expect::{Expect, Facts};
use crate::engine::message::Message;
use crate::engine::metrics::{ReplyMetrics, priced};
use crate::engine::structured::Structured;
use crate::engine::target::{Target, TurnSettings};
use crate::engine::turn_engine::TurnStop;
use crate::engine::usage::UsageView;
use crate::store::runs::{CellRow, PromptRow};
use crate::tools::Registry;
use serde_json::{Value, json};
use std::time::Instant;

/// How a check's `schema` is read into what the provider is asked for (the command line's
/// `--schema` reader); `None` when it cannot be.
pub type SchemaOf = fn(&str) -> Option<Structured>;

/// A cell that could not be sent (an attachment that cannot be read or that this provider
/// does not take): failed, with the reason, before any request.
fn failed(mut row: CellRow, message: String) -> CellRow {
    row.error = Some(json!({"kind": "usage", "message": message}));
    row.finish_reason = Some("error".into());
    row.finished_at = crate::store::ids::now_ms();
    row
}

/// What one cell needs.
pub struct CellJob<'a> {
    pub cfg: &'a Config,
    pub target: &'a Target,
    /// The run's turn settings for this model (a prompt's `system` and `schema` override them).
    pub settings: &'a TurnSettings,
    pub schema_of: SchemaOf,
    pub registry: &'a Registry,
    pub http: &'a reqwest::Client,
    pub prompt: &'a PromptRow,
    pub expect: Option<&'a Expect>,
    pub model_idx: u32,
    /// Where the turn reports (quiet: a cell prints nothing while it runs).
    pub sink: &'a mut (dyn TurnSink + Send),
    pub stop: Stop,
    /// The judge models and prompts of the run's judge checks.
    pub judges: &'a Judges,
    /// A multi-turn prompt (or one with recorded tool outputs): run by `super::conversation`.
    pub conversation: Option<&'a crate::engine::evals::turns::Conversation>,
}

/// Runs a cell. `None` when the user stopped it (Ctrl+C): it is left to `--resume`.
pub async fn run(mut job: CellJob<'_>) -> Option<CellRow> {
    let t = job.target;
    let started = Instant::now();
    let row = CellRow {
        prompt_idx: job.prompt.idx,
        model_idx: job.model_idx,
        model: t.model.clone(),
        provider: t.provider.clone(),
        ..CellRow::default()
    };
    // Attachments are read for each cell (the page cache makes the repeats cheap), off the
    // runtime thread (reading, hashing and encoding megabytes would stall every other cell),
    // and checked against this provider's policy: a provider refusing files fails only its cells.
    let mut user = Message::user(&job.prompt.prompt);
    if !job.prompt.attach.is_empty() {
        let (specs, policy, api) = (job.prompt.attach.clone(), t.attachments, t.api);
        let loaded =
            tokio::task::spawn_blocking(move || crate::engine::attach_load::load_all(&specs, |_| None, &policy, api))
                .await;
        match loaded {
            Ok(Ok(all)) => user.attachments = all,
            Ok(Err(e)) => return Some(failed(row, e)),
            Err(e) => return Some(failed(row, format!("reading the attachments failed: {e}"))),
        }
    }
    if let Some(conversation) = job.conversation {
        return super::conversation::run(job, conversation, row, user, started).await;
    }
    let settings = settings_for(job.settings, job.prompt, job.expect, job.schema_of);
    let mut history = vec![user];
    let mut rec = Recorder::off();
    let turn = Turn { target: t, settings, registry: job.registry, http: job.http, stop: job.stop.clone() };
    let out = run_turn(&turn, &mut history, &mut rec, &mut *job.sink).await;
    if out.account.stop == Some(TurnStop::Cancelled) {
        return None;
    }
    let mut row = fold(row, &out, &history, job.cfg, t, started);
    if let (Some(expect), true) = (job.expect, row.ok) {
        let question = job.prompt;
        let results = grade_answer(&mut job, expect, &question.prompt, &row, &out.msg).await?;
        row.checks = serde_json::to_value(results).ok();
    }
    row.finished_at = crate::store::ids::now_ms();
    Some(row)
}

/// Runs `expect` on an answer (`row`, folded from the reply `msg`) to `question`: its checks,
/// then its judges and scripts. `None` when the user stopped a judge (Ctrl+C).
pub(super) async fn grade_answer(
    job: &mut CellJob<'_>,
    expect: &Expect,
    question: &str,
    row: &CellRow,
    msg: &Message,
) -> Option<Vec<crate::engine::evals::expect::CheckResult>> {
    let facts = Facts {
        cost: row.cost,
        latency_ms: row.total_ms,
        finish_reason: row.finish_reason.as_deref(),
        refusal: !msg.main().refusal.is_empty(),
        perplexity: crate::engine::logprobs::stats_of(&msg.main().logprobs).map(|s| s.perplexity),
        tool_calls: row.tool_calls.as_ref(),
    };
    let mut results = expect.run_with(&row.text, facts);
    let grading = Grading {
        judges: job.judges,
        cfg: job.cfg,
        registry: job.registry,
        question,
        answer: &row.text,
        stop: job.stop.clone(),
    };
    for (spec, check) in expect.judge_checks() {
        results.push(check.counted(grade(&grading, spec, &mut *job.sink).await?));
    }
    if expect.scripts().next().is_some() {
        let input = super::script::input(question, row);
        for (spec, check) in expect.scripts() {
            results.push(check.counted(super::script::check(spec, &input).await));
        }
    }
    Some(results)
}

/// A cell's settings: the run's, with the prompt's system prompt and what its checks ask of the
/// request: a `schema` check (the line's `"schema"`, or `--schema`) asks the provider for that
/// format, and a `perplexity` check for token log probabilities.
pub fn settings_for(
    run: &TurnSettings,
    prompt: &PromptRow,
    expect: Option<&Expect>,
    schema_of: SchemaOf,
) -> TurnSettings {
    let mut settings = run.clone();
    if prompt.system.is_some() {
        settings.system.clone_from(&prompt.system);
    }
    if let Some(schema) = expect.and_then(|e| e.send.as_ref()) {
        settings.schema = schema_of(&schema.to_string());
    }
    if expect.is_some_and(Expect::wants_logprobs) && settings.logprobs.is_none() {
        settings.logprobs = Some(0);
    }
    settings
}

/// The row of a finished turn: its answer, usage, cost, timings and error.
pub(super) fn fold(
    mut row: CellRow,
    out: &TurnOutcome,
    history: &[Message],
    cfg: &Config,
    t: &Target,
    started: Instant,
) -> CellRow {
    let msg = &out.msg;
    let main = msg.main();
    let usage = if out.account.requests > 0 { out.account.usage() } else { msg.usage.clone() };
    let view = usage.as_ref().map(UsageView::from_raw).unwrap_or_default();
    let metrics = ReplyMetrics::of(msg, cfg, &t.model);
    row.ok = msg.error.is_none();
    row.text.clone_from(&main.content);
    if !main.refusal.is_empty() && row.text.is_empty() {
        row.text.clone_from(&main.refusal);
    }
    row.reasoning.clone_from(&main.reasoning);
    if !out.calls.is_empty() {
        row.tool_calls = Some(Value::Array(
            out.calls
                .iter()
                .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments, "output": c.output, "status": c.status}))
                .collect(),
        ));
    }
    row.prompt_tokens = view.prompt;
    row.completion_tokens = view.completion;
    // Priced from what the providers sent (the summed `usage` above has the result line's shape).
    let sent = if out.account.requests > 0 { out.account.usage_view().unwrap_or_default() } else { view.clone() };
    row.cost = priced(cfg, &t.model, msg.meta.model.as_deref(), &sent).map(|c| c.0);
    row.usage = usage;
    row.finish_reason = Some(main.finish_reason.clone().unwrap_or_else(|| "error".into()));
    row.prompt_filter.clone_from(&msg.prompt_filter);
    row.content_filter = main.content_filter.clone().map(Value::Object);
    row.safety_flag = metrics.safety_flag;
    // A tool loop's first token is its first reply's (the history holds every reply of the turn).
    let first_reply = history.iter().find(|m| m.role() == crate::engine::Role::Assistant);
    row.ttft_ms = first_reply.and_then(|m| m.timing.ttft_ms).or(metrics.ttft_ms);
    row.tokens_per_s = metrics.tokens_per_s;
    row.total_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
    if let Some(e) = &msg.error {
        row.error = Some(json!({"kind": e.kind, "status": e.status, "message": e.message}));
    }
    row
}
