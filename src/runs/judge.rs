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
    CheckResult { judge: usage, ..CheckResult::new("judge", false, Some(detail)) }
}

/// The judge's answer to `text` (its content, or why it failed) and its call's usage.
/// `None` when the user stopped it.
async fn ask<S: TurnSink + ?Sized>(
    g: &Grading<'_>,
    spec: &JudgeSpec,
    text: String,
    schema: serde_json::Value,
    sink: &mut S,
) -> Option<(Result<String, String>, Option<serde_json::Value>)> {
    let key = spec.model.clone().unwrap_or_default();
    let Some((target, http)) = g.judges.models.get(&key) else {
        return Some((Err(format!("the judge model {key} was not set up")), None));
    };
    let settings = TurnSettings {
        stream: true,
        schema: Structured::new(schema, Some("judge_grade")).ok(),
        ..TurnSettings::default()
    };
    let turn = Turn { target, settings, registry: g.registry, http, stop: g.stop.clone() };
    let mut history = vec![Message::user(&text)];
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
    let answer = match &out.msg.error {
        Some(e) => Err(format!("the judge failed: {}", e.message)),
        None => Ok(out.msg.main().content.clone()),
    };
    Some((answer, Some(usage)))
}

/// The prompt template a check names, else the run's default `fallback`.
fn template<'a>(g: &'a Grading<'_>, spec: &JudgeSpec, fallback: &'a str) -> &'a str {
    match &spec.prompt {
        Some(path) => g.judges.prompts.get(path).map_or(fallback, String::as_str),
        None => fallback,
    }
}

/// Grades one answer with `spec`. `None` when the user stopped it (the cell is left to
/// `--resume`).
pub async fn grade<S: TurnSink + ?Sized>(g: &Grading<'_>, spec: &JudgeSpec, sink: &mut S) -> Option<CheckResult> {
    let template = template(g, spec, &g.judges.default_prompt);
    let text = judge::rubric_prompt(template, spec.scale, &spec.rubric, g.question, g.answer);
    let (answer, usage) = ask(g, spec, text, judge::scaled_schema(spec.scale), sink).await?;
    let answer = match answer {
        Ok(a) => a,
        Err(why) => return Some(failed(why, usage)),
    };
    Some(match judge::parse_on(&answer, spec.scale) {
        Ok(grade) => CheckResult {
            score: Some(grade.score),
            judge: usage,
            ..CheckResult::new(
                "judge",
                grade.score + 1e-9 >= spec.threshold,
                Some(match spec.scale {
                    Some(s) => format!(
                        "score {:.2} of {}–{} ({:.2}): {}",
                        s.raw(grade.score),
                        s.low,
                        s.high,
                        grade.score,
                        grade.reason
                    ),
                    None => format!("score {:.2}: {}", grade.score, grade.reason),
                }),
            )
        },
        Err(why) => failed(why, usage),
    })
}

/// What `select_best` decided over a prompt's answers: the winner (its index in the answers
/// given), the reason or why there is none, and the judge call's usage.
pub struct Selection {
    pub winner: Option<usize>,
    pub detail: String,
    pub usage: Option<serde_json::Value>,
}

/// Asks the judge which of `answers` best meets `spec`'s criterion, shown under letters in an
/// order shuffled by `seed`, without the models' names. `None` when the user stopped it.
pub async fn select_best<S: TurnSink + ?Sized>(
    g: &Grading<'_>,
    spec: &JudgeSpec,
    answers: &[&str],
    seed: u64,
    sink: &mut S,
) -> Option<Selection> {
    let order = judge::shuffle(answers.len(), seed);
    let shown: Vec<&str> = order.iter().map(|&i| answers[i]).collect();
    let template = template(g, spec, judge::SELECT_BEST_PROMPT);
    let text = judge::select_prompt(template, &spec.rubric, g.question, &shown);
    let (answer, usage) = ask(g, spec, text, judge::select_schema(shown.len()), sink).await?;
    let picked = answer.and_then(|a| judge::parse_best(&a, shown.len()));
    Some(match picked {
        Ok((i, reason)) => {
            Selection { winner: Some(order[i]), detail: format!("best: answer {}: {reason}", judge::label(i)), usage }
        }
        Err(why) => Selection { winner: None, detail: why, usage },
    })
}
