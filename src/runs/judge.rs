//! A cell's judge checks: the judge model is sent the rubric prompt (no tools, a structured
//! answer asked for), its answer read as a score and a reason; the check passes at the
//! threshold. The judge's own tokens and cost go with the check, apart from the model's.

use super::recorder::Recorder;
use super::sink::TurnSink;
use super::stop::Stop;
use super::turn::{Turn, run_turn};
use crate::config::Config;
use crate::engine::evals::expect::{CheckResult, JudgeSpec};
use crate::engine::evals::judge;
use crate::engine::message::Message;
use crate::engine::metrics::priced;
use crate::engine::structured::Structured;
use crate::engine::target::{Target, TurnSettings};
use crate::engine::turn_engine::TurnStop;
use crate::tools::Registry;
use serde_json::json;
use std::collections::HashMap;

/// The judges of a run, made ready before it starts.
#[derive(Default)]
pub struct Judges {
    /// Each judge model by its spec as a check names it (`""`: the run's first model), with
    /// its HTTP client.
    pub models: HashMap<String, (Target, reqwest::Client)>,
    /// The prompt of a check that names none (the configuration's, else the built-in one).
    pub default_prompt: String,
    /// The prompt files checks name, read before the run.
    pub prompts: HashMap<String, String>,
}

/// What grading needs besides the check.
pub struct Grading<'a> {
    pub judges: &'a Judges,
    pub cfg: &'a Config,
    pub registry: &'a Registry,
    pub question: &'a str,
    pub answer: &'a str,
    pub stop: Stop,
}

fn failed(detail: String, usage: Option<serde_json::Value>) -> CheckResult {
    CheckResult { kind: "judge".into(), pass: false, detail: Some(detail), score: None, judge: usage }
}

/// Grades one answer with `spec`. `None` when the user stopped it (the cell is left to
/// `--resume`).
pub async fn grade<S: TurnSink + ?Sized>(g: &Grading<'_>, spec: &JudgeSpec, sink: &mut S) -> Option<CheckResult> {
    let key = spec.model.clone().unwrap_or_default();
    let Some((target, http)) = g.judges.models.get(&key) else {
        return Some(failed(format!("the judge model {key} was not set up"), None));
    };
    let template = match &spec.prompt {
        Some(path) => g.judges.prompts.get(path).map_or(judge::RUBRIC_PROMPT, String::as_str),
        None => g.judges.default_prompt.as_str(),
    };
    let settings = TurnSettings {
        stream: true,
        schema: Structured::new(judge::schema(), Some("judge_grade")).ok(),
        ..TurnSettings::default()
    };
    let turn = Turn { target, settings, registry: g.registry, http, stop: g.stop.clone() };
    let mut history = vec![Message::user(&judge::prompt(template, &spec.rubric, g.question, g.answer))];
    let out = run_turn(&turn, &mut history, &mut Recorder::off(), sink).await;
    if out.account.stop == Some(TurnStop::Cancelled) {
        return None;
    }
    let view = if out.account.requests > 0 {
        out.account.usage_view().unwrap_or_default()
    } else {
        out.msg.usage.as_ref().map(crate::engine::usage::UsageView::from_raw).unwrap_or_default()
    };
    let cost = priced(g.cfg, &target.model, out.msg.meta.model.as_deref(), &view).map(|c| c.0);
    let usage = json!({"model": target.model, "provider": target.provider, "prompt_tokens": view.prompt,
        "completion_tokens": view.completion, "cost": cost});
    if let Some(e) = &out.msg.error {
        return Some(failed(format!("the judge failed: {}", e.message), Some(usage)));
    }
    Some(match judge::parse(&out.msg.main().content) {
        Ok(grade) => CheckResult {
            kind: "judge".into(),
            pass: grade.score + 1e-9 >= spec.threshold,
            detail: Some(format!("score {:.2}: {}", grade.score, grade.reason)),
            score: Some(grade.score),
            judge: Some(usage),
        },
        Err(why) => failed(why, Some(usage)),
    })
}
