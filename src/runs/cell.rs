//! One cell of a prompt set: one prompt to one model, through the headless turn (tool loop
//! included), folded into the row the store keeps. The reply itself is dropped once the row is
//! made: a run never holds more answers than it has cells in flight.

use super::judge::{Grading, Judges, grade};
use super::recorder::Recorder;
use super::sink::TurnSink;
use super::stop::Stop;
use super::turn::{Turn, TurnOutcome, run_turn};
use crate::config::Config;
use crate::engine::evals::expect::{CheckResult, Expect, Facts};
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
    /// Which repeated sample of the cell this is (0 without `--repeat`); it adds to the run's
    /// `seed`, so samples differ and each is reproducible.
    pub sample: u32,
    /// Where the turn reports (quiet: a cell prints nothing while it runs).
    pub sink: &'a mut (dyn TurnSink + Send),
    pub stop: Stop,
    /// The judge models and prompts of the run's judge checks.
    pub judges: &'a Judges,
    /// A multi-turn prompt (or one with recorded tool outputs): run by `super::conversation`.
    pub conversation: Option<&'a crate::engine::evals::turns::Conversation>,
}

/// Runs a cell. `None` when the user stopped it (Ctrl+C): it is left to `--resume`.
pub async fn run(job: CellJob<'_>) -> Option<CellRow> {
    let t = job.target;
    let started = Instant::now();
    let row = CellRow {
        prompt_idx: job.prompt.idx,
        model_idx: job.model_idx,
        sample: job.sample,
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
    let settings = sample_settings(&job, job.expect);
    let mut history = vec![user];
    let mut rec = Recorder::off();
    let turn = Turn { target: t, settings, registry: job.registry, http: job.http, stop: job.stop.clone() };
    let out = run_turn(&turn, &mut history, &mut rec, &mut *job.sink).await;
    if out.account.stop == Some(TurnStop::Cancelled) {
        return None;
    }
    let mut row = fold(row, &out, &history, job.cfg, t, started);
    if let (Some(expect), true) = (job.expect, row.ok) {
        let question: &str = &job.prompt.prompt;
        let results = job.grader(question).checks(expect, &row, Asked::of(&out.msg), &mut *job.sink).await?;
        row.checks = serde_json::to_value(results).ok();
    }
    // Checks saw what the answer cost when it was first asked; replayed, it costs nothing.
    if row.cached {
        row.cost = row.cost.map(|_| 0.0);
    }
    row.finished_at = crate::store::ids::now_ms();
    Some(row)
}

/// What a reply told of itself that the stored row does not keep.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked {
    /// The API's own refusal field held text.
    pub refusal: bool,
    /// Over the answer's tokens, when log probabilities came back.
    pub perplexity: Option<f64>,
}

impl Asked {
    /// What `msg` told of itself.
    #[must_use]
    pub fn of(msg: &Message) -> Self {
        let main = msg.main();
        Self {
            refusal: !main.refusal.is_empty(),
            perplexity: crate::engine::logprobs::stats_of(&main.logprobs).map(|s| s.perplexity),
        }
    }
}

/// What grading a cell's answer needs: a live cell's, or a stored one's (`compare rescore`).
pub struct Grader<'a> {
    pub cfg: &'a Config,
    pub registry: &'a Registry,
    pub judges: &'a Judges,
    /// The prompt the answer answers (a conversation's: its turn's).
    pub question: &'a str,
    pub stop: Stop,
}

impl Grader<'_> {
    /// The results of `expect` on an answered `row`: its checks on the text and figures, then
    /// its judges and scripts. `None` when the user stopped a judge.
    pub async fn checks(
        &self,
        expect: &Expect,
        row: &CellRow,
        asked: Asked,
        sink: &mut (dyn TurnSink + Send),
    ) -> Option<Vec<CheckResult>> {
        let facts = Facts {
            cost: row.cost,
            latency_ms: row.total_ms,
            finish_reason: row.finish_reason.as_deref(),
            refusal: asked.refusal,
            perplexity: asked.perplexity,
            tool_calls: row.tool_calls.as_ref(),
        };
        let mut results = expect.run_with(&row.text, facts);
        let grading = Grading {
            judges: self.judges,
            cfg: self.cfg,
            registry: self.registry,
            question: self.question,
            answer: &row.text,
            stop: self.stop.clone(),
        };
        for (spec, check) in expect.judge_checks() {
            results.push(check.counted(grade(&grading, spec, &mut *sink).await?));
        }
        if expect.scripts().next().is_some() {
            let input = super::script::input(self.question, row);
            for (spec, check) in expect.scripts() {
                results.push(check.counted(super::script::check(spec, &input).await));
            }
        }
        Some(results)
    }
}

impl<'a> CellJob<'a> {
    /// The grader of this cell's answers to `question`.
    pub(super) fn grader<'q>(&self, question: &'q str) -> Grader<'q>
    where
        'a: 'q,
    {
        Grader { cfg: self.cfg, registry: self.registry, judges: self.judges, question, stop: self.stop.clone() }
    }
}

/// A sample's settings: the cell's (`settings_for`, with `expect` the checks of the request
/// being sent), its `seed` the run's base plus the sample's index so samples differ.
pub(super) fn sample_settings(job: &CellJob<'_>, expect: Option<&Expect>) -> TurnSettings {
    let mut settings = settings_for(job.settings, job.prompt, expect, job.schema_of);
    settings.seed = settings.seed.map(|base| base.wrapping_add(u64::from(job.sample)));
    settings
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
    row.cached = out.from_cache(history);
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
