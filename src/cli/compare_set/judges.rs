//! The judges of a prompt set, made ready before anything is sent: each judge model a check
//! names resolved as `-m` resolves a model (a check without one: the run's first model), and
//! the judge prompts read (a check's `prompt` file, the configuration's `judge_prompt`, else
//! `assets/judges/rubric.md`). A judge that cannot be set up is a usage error.

use crate::api::client::endpoint_client;
use crate::cli::args::Global;
use crate::cli::target::resolve_columns;
use crate::config::Config;
use crate::engine::evals::expect::Expect;
use crate::engine::evals::judge::{ANY_PLACEHOLDERS, RUBRIC_PLACEHOLDERS, RUBRIC_PROMPT, check_placeholders};
use crate::runs::judge::Judges;
use std::collections::BTreeSet;

fn read(path: &std::path::Path, what: &str) -> Result<String, String> {
    super::attach_rules::read(path, super::attach_rules::JUDGE_PROMPT, what).map_err(|e| {
        format!("cannot read the {what} {}: {e}", crate::text::sanitize::sanitize(&path.display().to_string()))
    })
}

/// The judges of the checks in `expects`.
///
/// # Errors
/// A judge model that cannot be resolved, a prompt file that cannot be read.
pub async fn prepare(g: &Global, cfg: &Config, expects: &[Option<Expect>]) -> Result<Judges, String> {
    let specs: Vec<_> = expects.iter().flatten().flat_map(Expect::judged).collect();
    let mut judges = Judges::default();
    if specs.is_empty() {
        return Ok(judges);
    }
    judges.default_prompt = match &cfg.judge_prompt {
        // `~/` is the home directory, as config.toml's other paths take it.
        Some(path) => match (path.strip_prefix("~"), std::env::var_os("HOME")) {
            (Ok(rest), Some(home)) => read(&std::path::Path::new(&home).join(rest), "judge_prompt")?,
            _ => read(path, "judge_prompt")?,
        },
        None => RUBRIC_PROMPT.to_owned(),
    };
    check_placeholders(&judges.default_prompt, RUBRIC_PLACEHOLDERS).map_err(|e| format!("judge_prompt: {e}"))?;
    let keys: Vec<String> =
        specs.iter().map(|s| s.model.clone().unwrap_or_default()).collect::<BTreeSet<_>>().into_iter().collect();
    let first = g.model.first().cloned().unwrap_or_default();
    let models: Vec<String> = keys.iter().map(|k| if k.is_empty() { first.clone() } else { k.clone() }).collect();
    let targets = resolve_columns(g, cfg, &models).await.map_err(|e| format!("judge: {}", e.0))?;
    for (key, target) in keys.into_iter().zip(targets) {
        let http =
            endpoint_client(&target.endpoint).map_err(|e| format!("judge: cannot start the HTTP client: {e}"))?;
        judges.models.insert(key, (target, http));
    }
    for path in specs.iter().filter_map(|s| s.prompt.as_ref()) {
        if !judges.prompts.contains_key(path) {
            let text = read(std::path::Path::new(path), "judge prompt")?;
            check_placeholders(&text, ANY_PLACEHOLDERS).map_err(|e| format!("the judge prompt {path}: {e}"))?;
            judges.prompts.insert(path.clone(), text);
        }
    }
    Ok(judges)
}

/// The judges' verdicts among a cell's `checks` as (kind, "✓ detail" / "✗ detail"), for the
/// Markdown report (the HTML one shows every check).
#[must_use]
pub fn verdicts(checks: Option<&serde_json::Value>) -> Vec<(String, String)> {
    let all = checks.and_then(|c| c.as_array()).into_iter().flatten();
    all.filter(|r| r["kind"] == "judge" || r["kind"] == "select_best")
        .map(|r| {
            let mark = if r["pass"] == true { "✓" } else { "✗" };
            (
                r["kind"].as_str().unwrap_or_default().to_owned(),
                format!("{mark} {}", r["detail"].as_str().unwrap_or("")),
            )
        })
        .collect()
}

/// A model's judge calls over a run: counted apart from the model's own tokens and cost.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct JudgeTotals {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Dollars, when the judge model has a price.
    pub cost: Option<f64>,
    /// Judgments asked in both orders (`select_best`), and those whose pick did not flip.
    #[serde(skip_serializing_if = "is_zero")]
    pub both_orders: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub consistent: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Adds the judge calls of a cell's `checks` to `totals`.
pub fn add(totals: &mut Option<JudgeTotals>, checks: Option<&serde_json::Value>) {
    let calls = checks.and_then(|c| c.as_array()).into_iter().flatten().filter_map(|r| r.get("judge"));
    for j in calls {
        let t = totals.get_or_insert_with(JudgeTotals::default);
        t.calls += j["calls"].as_u64().unwrap_or(1);
        if let Some(agreed) = j["consistent"].as_bool() {
            t.both_orders += 1;
            t.consistent += u64::from(agreed);
        }
        t.prompt_tokens += j["prompt_tokens"].as_u64().unwrap_or(0);
        t.completion_tokens += j["completion_tokens"].as_u64().unwrap_or(0);
        if let Some(c) = j["cost"].as_f64() {
            t.cost = Some(t.cost.unwrap_or(0.0) + c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn judge_calls_add_up_apart() {
        let mut t = None;
        add(&mut t, Some(&json!([{"kind": "contains", "pass": true}])));
        assert_eq!(t, None, "no judge, no totals");
        let cell = json!([{"kind": "judge", "judge": {"prompt_tokens": 10, "completion_tokens": 3, "cost": 0.5}},
            {"kind": "judge", "judge": {"prompt_tokens": 5, "completion_tokens": 2, "cost": null}}]);
        add(&mut t, Some(&cell));
        assert_eq!(
            t,
            Some(JudgeTotals {
                calls: 2,
                prompt_tokens: 15,
                completion_tokens: 5,
                cost: Some(0.5),
                ..JudgeTotals::default()
            })
        );
        add(&mut t, Some(&json!([{"kind": "select_best", "judge": {"calls": 2, "consistent": false}}])));
        let t2 = t.clone().unwrap();
        assert_eq!((t2.calls, t2.both_orders, t2.consistent), (4, 1, 0));
        let shown = verdicts(Some(&json!([{"kind": "contains", "pass": true},
            {"kind": "judge", "pass": false, "detail": "score 0.20: vague"}])));
        assert_eq!(shown, vec![("judge".to_owned(), "✗ score 0.20: vague".to_owned())]);
    }
}
