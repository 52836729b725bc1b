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
    // A verdict from the response cache cost nothing this time.
    let cached = out.from_cache(&history);
    let cost =
        priced(g.cfg, &target.model, out.msg.meta.model.as_deref(), &view).map(|c| if cached { 0.0 } else { c.0 });
    let usage = json!({"model": target.model, "provider": target.provider, "prompt_tokens": view.prompt,
        "completion_tokens": view.completion, "cost": cost, "cached": cached});
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

/// What `select_best` decided over a prompt's answers: the winners (their indexes in the
/// answers given: one, two when the judge's pick flipped with the order, none when it could
/// not be read), the reason or why there is none, the judge calls' usage, and whether the two
/// orders agreed (`None`: not asked in both, or one could not be read).
pub struct Selection {
    pub winners: Vec<usize>,
    pub detail: String,
    pub usage: Option<serde_json::Value>,
    pub consistent: Option<bool>,
}

/// Asks the judge which of `answers` best meets `spec`'s criterion, shown under letters
/// without the models' names, twice: in an order shuffled by `seed`, then in the reverse one,
/// so a judge that favours a place is caught. A pick that flips with the order is a tie
/// between the two. `None` when the user stopped it.
pub async fn select_best<S: TurnSink + ?Sized>(
    g: &Grading<'_>,
    spec: &JudgeSpec,
    answers: &[&str],
    seed: u64,
    sink: &mut S,
) -> Option<Selection> {
    let order = judge::shuffle(answers.len(), seed);
    let reversed: Vec<usize> = order.iter().rev().copied().collect();
    let (first, usage_a) = pick(g, spec, answers, &order, sink).await?;
    let (second, usage_b) = pick(g, spec, answers, &reversed, sink).await?;
    let usage = sum_usage(usage_a, usage_b);
    Some(match (first, second) {
        (Ok((a, why)), Ok((b, _))) if a == b => {
            Selection { winners: vec![a], detail: format!("best in both orders: {why}"), usage, consistent: Some(true) }
        }
        (Ok((a, why_a)), Ok((b, why_b))) => Selection {
            winners: vec![a, b],
            detail: format!("a tie: the judge's pick flipped with the order ({why_a} / {why_b})"),
            usage,
            consistent: Some(false),
        },
        (Ok((a, why)), Err(_)) | (Err(_), Ok((a, why))) => Selection {
            winners: vec![a],
            detail: format!("best in one order (the other was unreadable): {why}"),
            usage,
            consistent: None,
        },
        (Err(why), Err(_)) => Selection { winners: Vec::new(), detail: why, usage, consistent: None },
    })
}

/// One `select_best` call with the answers shown in `order`: the pick (its index in `answers`)
/// and its reason, or why none was read; and the call's usage.
async fn pick<S: TurnSink + ?Sized>(
    g: &Grading<'_>,
    spec: &JudgeSpec,
    answers: &[&str],
    order: &[usize],
    sink: &mut S,
) -> Option<(Result<(usize, String), String>, Option<serde_json::Value>)> {
    let shown: Vec<&str> = order.iter().map(|&i| answers[i]).collect();
    let template = template(g, spec, judge::SELECT_BEST_PROMPT);
    let text = judge::select_prompt(template, &spec.rubric, g.question, &shown);
    let (answer, usage) = ask(g, spec, text, judge::select_schema(shown.len()), sink).await?;
    let picked = answer.and_then(|a| judge::parse_best(&a, shown.len()));
    Some((picked.map(|(i, reason)| (order[i], format!("answer {}: {reason}", judge::label(i)))), usage))
}

/// Two judge calls' usage as one entry (`calls`: 2).
fn sum_usage(a: Option<serde_json::Value>, b: Option<serde_json::Value>) -> Option<serde_json::Value> {
    let (Some(a), Some(b)) = (a.clone(), b.clone()) else { return a.or(b) };
    let add = |k: &str| match (a[k].as_u64(), b[k].as_u64()) {
        (None, None) => serde_json::Value::Null,
        (x, y) => json!(x.unwrap_or(0) + y.unwrap_or(0)),
    };
    let cost = match (a["cost"].as_f64(), b["cost"].as_f64()) {
        (Some(x), Some(y)) => json!(x + y),
        _ => serde_json::Value::Null,
    };
    Some(json!({"model": a["model"], "provider": a["provider"], "prompt_tokens": add("prompt_tokens"),
        "completion_tokens": add("completion_tokens"), "cost": cost, "calls": 2}))
}
