//! The per-model summary of a run, computed from the store (figures only, no text), and its
//! two faces: the terminal table (metrics down, models across, the best figure of each row
//! marked `*`) and the `{"type":"summary"}` JSON line. With `--repeat`, a cell's samples are
//! decided into one verdict (`rates::decided`), and each prompt × model gets its pass rate
//! with a Wilson interval, pass@k and pass^k, and each model its mean score with a bootstrap
//! interval over prompts (`rates.rs` in this folder).

use crate::engine::evals::expect;
use crate::engine::evals::stats::percentile;
use crate::engine::metrics::best_all;
use crate::store::StoreError;
use crate::store::runs::{RunStore, RunSummary};
use crate::text::sanitize::sanitize;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

/// One model's figures over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelSummary {
    pub model: String,
    pub provider: String,
    pub ok: u64,
    pub failed: u64,
    /// Cells answered from the response cache (their cost counts 0).
    pub cached: u64,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p95_ms: Option<f64>,
    pub tokens_per_s_p50: Option<f64>,
    pub tokens_per_s_p95: Option<f64>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost: Option<f64>,
    /// The cost is from the catalogue's prices (no price in config.toml): an estimate.
    pub cost_estimated: bool,
    pub finish_reasons: BTreeMap<String, u64>,
    pub safety_hits: u64,
    pub answer_chars_p50: Option<f64>,
    pub answer_chars_mean: Option<f64>,
    /// Cells whose prompt has `expect`, and those that passed: with `--repeat`, a cell is its
    /// samples decided by the line's `threshold` (`rates::decided`).
    pub checked: u64,
    pub passed: u64,
    pub pass_rate: Option<f64>,
    /// For each kind of check (`contains`, `not_judge`…): how many passed, of how many run.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub checks_by_kind: BTreeMap<String, KindCount>,
    /// Cells checked against a schema, and those whose answer followed it.
    pub schema_checked: u64,
    pub schema_valid: u64,
    /// The judge calls of its cells' checks (their tokens and cost are not in the above).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<super::judges::JudgeTotals>,
    /// With `--repeat`: the mean score of its samples (per prompt, then over prompts) with a
    /// 95% bootstrap interval resampling prompts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_score: Option<crate::engine::evals::rates::Estimate>,
}

/// How many checks of a kind passed, of how many run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KindCount {
    pub passed: u64,
    pub run: u64,
}

/// A run's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub run: String,
    pub prompts: u32,
    pub cells: u64,
    /// Cells not stored yet (an interrupted run).
    pub missing: u64,
    pub models: Vec<ModelSummary>,
    /// Samples per cell (`--repeat`; 1 without).
    #[serde(skip)]
    pub repeat: u32,
    /// With `--repeat`: each checked prompt × model's samples and what they decide.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<super::rates::CellRates>,
    /// Prompts whose samples both passed and failed (on any model), by id.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flaky: Vec<String>,
}

#[derive(Default)]
struct Acc {
    ttft: Vec<f64>,
    tps: Vec<f64>,
    chars: Vec<f64>,
}

/// Reads a run's figures back and sums them up per model.
///
/// # Errors
/// A database error.
pub fn compute(store: &RunStore, run: &RunSummary, cfg: &crate::config::Config) -> Result<Summary, StoreError> {
    let prompts = store.prompts(&run.id)?;
    let checked: HashSet<u32> = prompts.iter().filter(|p| p.is_checked()).map(|p| p.idx).collect();
    let mut samples = super::rates::Samples::default();
    let n = run.models.len();
    let mut models: Vec<ModelSummary> = run
        .models
        .iter()
        .map(|m| ModelSummary { model: m.model.clone(), provider: m.provider.clone(), ..ModelSummary::default() })
        .collect();
    let mut acc: Vec<Acc> = (0..n).map(|_| Acc::default()).collect();
    let mut cells = 0u64;
    store.each_figures(&run.id, |f| {
        let i = f.model_idx as usize;
        let (Some(m), Some(a)) = (models.get_mut(i), acc.get_mut(i)) else { return };
        cells += 1;
        m.cached += u64::from(f.cached);
        if f.ok {
            m.ok += 1;
        } else {
            m.failed += 1;
        }
        #[allow(clippy::cast_precision_loss)]
        if let Some(v) = f.ttft_ms {
            a.ttft.push(v as f64);
        }
        if let Some(v) = f.tokens_per_s {
            a.tps.push(v);
        }
        if f.ok {
            #[allow(clippy::cast_precision_loss)]
            a.chars.push(f.answer_chars as f64);
        }
        m.prompt_tokens += f.prompt_tokens.unwrap_or(0);
        m.completion_tokens += f.completion_tokens.unwrap_or(0);
        if let Some(c) = f.cost {
            m.cost = Some(m.cost.unwrap_or(0.0) + c);
            m.cost_estimated = cfg.model_facts(&m.model).is_some_and(|facts| facts.price_estimated);
        }
        *m.finish_reasons.entry(f.finish_reason.unwrap_or_else(|| "none".into())).or_default() += 1;
        m.safety_hits += u64::from(f.safety_flag);
        if checked.contains(&f.prompt_idx) {
            let checks = f.checks.as_ref().and_then(|c| c.as_array());
            samples.add(f.prompt_idx, f.model_idx, checks.is_some_and(|a| expect::cell_passes(a)), checks);
            for r in f.checks.as_ref().and_then(|c| c.as_array()).into_iter().flatten() {
                let Some(kind) = r.get("kind").and_then(serde_json::Value::as_str) else { continue };
                let count = m.checks_by_kind.entry(kind.to_owned()).or_default();
                count.passed += u64::from(r.get("pass").and_then(serde_json::Value::as_bool) == Some(true));
                count.run += 1;
            }
        }
        super::judges::add(&mut m.judge, f.checks.as_ref());
        if let Some(valid) = schema_verdict(f.checks.as_ref()) {
            m.schema_checked += 1;
            m.schema_valid += u64::from(valid);
        }
    })?;
    let repeat = super::settings::repeat(&run.settings);
    let rates = samples.decide(&prompts, &run.models, repeat, &mut models);
    let flaky = super::rates::flaky(&prompts, &rates);
    for (m, a) in models.iter_mut().zip(&mut acc) {
        m.ttft_p50_ms = percentile(&mut a.ttft, 50.0);
        m.ttft_p95_ms = percentile(&mut a.ttft, 95.0);
        m.tokens_per_s_p50 = percentile(&mut a.tps, 50.0);
        m.tokens_per_s_p95 = percentile(&mut a.tps, 95.0);
        m.answer_chars_p50 = percentile(&mut a.chars, 50.0);
        #[allow(clippy::cast_precision_loss)]
        if !a.chars.is_empty() {
            m.answer_chars_mean = Some(a.chars.iter().sum::<f64>() / a.chars.len() as f64);
        }
        #[allow(clippy::cast_precision_loss)]
        if m.checked > 0 {
            m.pass_rate = Some(m.passed as f64 / m.checked as f64);
        }
    }
    let total = u64::from(run.prompts) * n as u64 * u64::from(repeat);
    // Without repeats each cell is its own verdict: nothing more to show.
    let rates = if repeat > 1 { rates } else { Vec::new() };
    Ok(Summary {
        run: run.id.clone(),
        prompts: run.prompts,
        cells,
        missing: total.saturating_sub(cells),
        models,
        repeat,
        rates,
        flaky,
    })
}

/// Whether a cell's answer followed its schema; `None` when it had no schema check. Runs
/// stored before the check was named `schema` call it `json_schema`.
#[must_use]
pub fn schema_verdict(checks: Option<&serde_json::Value>) -> Option<bool> {
    let found = checks?
        .as_array()?
        .iter()
        .filter(|r| matches!(r.get("kind").and_then(serde_json::Value::as_str), Some("schema" | "json_schema")));
    found.fold(None, |acc, r| {
        let pass = r.get("pass").and_then(serde_json::Value::as_bool) == Some(true);
        Some(acc.unwrap_or(true) && pass)
    })
}

/// A row of the table: its label, each model's figure, and which way is better (`None`: not
/// a contest).
struct Row {
    label: Cow<'static, str>,
    values: Vec<Option<f64>>,
    shown: Vec<String>,
    lower_is_better: Option<bool>,
}

#[allow(clippy::cast_precision_loss)]
fn rows(s: &Summary) -> Vec<Row> {
    let ms = &s.models;
    let num = |f: &dyn Fn(&ModelSummary) -> Option<f64>, fmt: &dyn Fn(f64) -> String, lower: Option<bool>, label| Row {
        label: Cow::Borrowed(label),
        values: ms.iter().map(f).collect(),
        shown: ms.iter().map(|m| f(m).map_or_else(|| "-".to_owned(), fmt)).collect(),
        lower_is_better: lower,
    };
    let int = |v: f64| format!("{v:.0}");
    let ms_fmt = |v: f64| format!("{v:.0} ms");
    let rate = |v: f64| format!("{v:.1}");
    let mut out = vec![
        num(&|m| Some(m.ok as f64), &int, Some(false), "cells ok"),
        num(&|m| Some(m.failed as f64), &int, Some(true), "cells failed"),
        num(&|m| m.ttft_p50_ms, &ms_fmt, Some(true), "ttft p50"),
        num(&|m| m.ttft_p95_ms, &ms_fmt, Some(true), "ttft p95"),
        num(&|m| m.tokens_per_s_p50, &rate, Some(false), "tok/s p50"),
        num(&|m| m.tokens_per_s_p95, &rate, Some(false), "tok/s p95"),
        num(&|m| Some(m.prompt_tokens as f64), &int, None, "prompt tokens"),
        num(&|m| Some(m.completion_tokens as f64), &int, None, "completion tokens"),
        Row {
            label: Cow::Borrowed("cost"),
            values: ms.iter().map(|m| m.cost).collect(),
            shown: ms
                .iter()
                .map(|m| {
                    m.cost.map_or_else(|| "-".into(), |c| crate::engine::metrics::money_label(c, m.cost_estimated))
                })
                .collect(),
            lower_is_better: Some(true),
        },
        num(&|m| Some(m.safety_hits as f64), &int, Some(true), "safety hits"),
        num(&|m| m.answer_chars_p50, &|v| format!("{v:.0} ch"), None, "answer p50"),
    ];
    // Said only when the cache answered: a run that sent everything keeps its table.
    if ms.iter().any(|m| m.cached > 0) {
        out.insert(2, num(&|m| Some(m.cached as f64), &int, None, "cells cached"));
    }
    if ms.iter().any(|m| m.judge.is_some()) {
        let judge = |m: &ModelSummary| m.judge.as_ref().and_then(|j| j.cost);
        out.push(num(&|m| m.judge.as_ref().map(|j| j.calls as f64), &int, None, "judge calls"));
        out.push(num(&judge, &|c| crate::engine::metrics::money_label(c, false), None, "judge cost"));
    }
    // How often a judgment asked in both orders kept its pick: a judge that favours a place
    // flips, and its verdicts are worth less.
    if ms.iter().any(|m| m.judge.as_ref().is_some_and(|j| j.both_orders > 0)) {
        out.push(Row {
            label: Cow::Borrowed("judge consistency"),
            values: ms
                .iter()
                .map(|m| {
                    m.judge.as_ref().filter(|j| j.both_orders > 0).map(|j| j.consistent as f64 / j.both_orders as f64)
                })
                .collect(),
            shown: ms
                .iter()
                .map(|m| match m.judge.as_ref().filter(|j| j.both_orders > 0) {
                    Some(j) => format!("{}/{}", j.consistent, j.both_orders),
                    None => "-".to_owned(),
                })
                .collect(),
            lower_is_better: None,
        });
    }
    if ms.iter().any(|m| m.checked > 0) {
        out.push(Row {
            label: Cow::Borrowed("expect passed"),
            values: ms.iter().map(|m| m.pass_rate).collect(),
            shown: ms
                .iter()
                .map(|m| {
                    m.pass_rate.map_or_else(|| "-".into(), |r| format!("{}/{} {:.0}%", m.passed, m.checked, r * 100.0))
                })
                .collect(),
            lower_is_better: Some(false),
        });
    }
    if ms.iter().any(|m| m.mean_score.is_some()) {
        out.push(Row {
            label: Cow::Borrowed("mean score"),
            values: ms.iter().map(|m| m.mean_score.map(|e| e.value)).collect(),
            shown: ms
                .iter()
                .map(|m| {
                    m.mean_score.map_or_else(|| "-".into(), |e| format!("{:.2} [{:.2}, {:.2}]", e.value, e.low, e.high))
                })
                .collect(),
            lower_is_better: Some(false),
        });
    }
    // Schema validity is its own row: a model can follow the schema and still fail a
    // `contains`, and that is a different finding.
    if ms.iter().any(|m| m.schema_checked > 0) {
        out.push(Row {
            label: Cow::Borrowed("schema valid"),
            values: ms
                .iter()
                .map(|m| (m.schema_checked > 0).then(|| m.schema_valid as f64 / m.schema_checked as f64))
                .collect(),
            shown: ms
                .iter()
                .map(|m| match m.schema_checked {
                    0 => "-".to_owned(),
                    n => format!("{}/{n}", m.schema_valid),
                })
                .collect(),
            lower_is_better: Some(false),
        });
    }
    out.push(Row {
        label: Cow::Borrowed("finish"),
        values: vec![None; ms.len()],
        shown: ms
            .iter()
            // Finish reasons are the server's words: stripped of terminal controls.
            .map(|m| {
                m.finish_reasons.iter().map(|(k, v)| format!("{} {v}", sanitize(k))).collect::<Vec<_>>().join(", ")
            })
            .collect(),
        lower_is_better: None,
    });
    out
}

/// The terminal table: a row per figure, a column per model, `*` after each row's best.
#[must_use]
pub fn table(s: &Summary) -> String {
    let rows = rows(s);
    let names: Vec<String> = s.models.iter().map(|m| crate::tools::clip(&sanitize(&m.model), 22)).collect();
    let mut widths: Vec<usize> = names.iter().map(|n| n.chars().count().max(10)).collect();
    for r in &rows {
        for (i, v) in r.shown.iter().enumerate() {
            widths[i] = widths[i].max(v.chars().count() + 1);
        }
    }
    let mut out = format!("{:<18}", "");
    for (n, w) in names.iter().zip(&widths) {
        out.push_str(&format!("  {n:>w$}"));
    }
    out.push('\n');
    for r in &rows {
        let best = match r.lower_is_better {
            Some(lower) => best_all(&r.values, lower),
            None => Vec::new(),
        };
        // A row where every model ties has no winner worth marking.
        let mark = best.len() < r.values.iter().filter(|v| v.is_some()).count();
        out.push_str(&format!("{:<18}", r.label));
        for (i, (v, w)) in r.shown.iter().zip(&widths).enumerate() {
            let star = if mark && best.contains(&i) { "*" } else { " " };
            out.push_str(&format!("  {:>w$}", format!("{v}{star}"), w = *w));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "{} prompts × {} models{} · {} cells stored{} · * best",
        s.prompts,
        s.models.len(),
        if s.repeat > 1 { format!(" × {} samples", s.repeat) } else { String::new() },
        s.cells,
        if s.missing > 0 {
            format!(" · {} missing (palaver compare --resume {})", s.missing, s.run)
        } else {
            String::new()
        }
    ));
    out.push('\n');
    out.push_str(&super::rates::table(s));
    out
}

/// A row per kind of check, for the reports: each model's passes of that kind.
fn kind_rows(s: &Summary) -> Vec<Row> {
    let kinds: std::collections::BTreeSet<&String> = s.models.iter().flat_map(|m| m.checks_by_kind.keys()).collect();
    kinds
        .into_iter()
        .map(|kind| {
            let counts: Vec<Option<KindCount>> = s.models.iter().map(|m| m.checks_by_kind.get(kind).copied()).collect();
            #[allow(clippy::cast_precision_loss)]
            Row {
                label: Cow::Owned(format!("check {}", sanitize(kind))),
                values: counts.iter().map(|c| c.map(|c| c.passed as f64 / c.run.max(1) as f64)).collect(),
                shown: counts
                    .iter()
                    .map(|c| c.map_or_else(|| "-".to_owned(), |c| format!("{}/{}", c.passed, c.run)))
                    .collect(),
                lower_is_better: Some(false),
            }
        })
        .collect()
}

/// The rows as (label, values shown, best columns) for the reports.
#[must_use]
pub fn report_rows(s: &Summary) -> Vec<(Cow<'static, str>, Vec<String>, Vec<usize>)> {
    rows(s)
        .into_iter()
        .chain(kind_rows(s))
        .map(|r| {
            let best = r.lower_is_better.map(|l| best_all(&r.values, l)).unwrap_or_default();
            let all = r.values.iter().filter(|v| v.is_some()).count();
            (r.label, r.shown, if best.len() < all { best } else { Vec::new() })
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn sample() -> Summary {
        let m = |model: &str, ok, failed, ttft, cost, pass: Option<f64>| ModelSummary {
            model: model.into(),
            provider: "demo".into(),
            ok,
            failed,
            cached: 0,
            ttft_p50_ms: ttft,
            ttft_p95_ms: ttft.map(|v| v * 2.0),
            tokens_per_s_p50: Some(100.0),
            tokens_per_s_p95: Some(150.0),
            prompt_tokens: 120,
            completion_tokens: 300,
            cost,
            cost_estimated: false,
            finish_reasons: BTreeMap::from([("stop".into(), ok)]),
            safety_hits: 0,
            answer_chars_p50: Some(420.0),
            answer_chars_mean: Some(430.0),
            checked: 4,
            passed: pass.map_or(0, |p| (p * 4.0) as u64),
            pass_rate: pass,
            checks_by_kind: BTreeMap::from([(
                "contains".into(),
                KindCount { passed: pass.map_or(0, |p| (p * 4.0) as u64), run: 4 },
            )]),
            schema_checked: 0,
            schema_valid: 0,
            judge: None,
            mean_score: None,
        };
        Summary {
            run: "run-x".into(),
            prompts: 4,
            cells: 8,
            missing: 0,
            models: vec![
                m("demo", 4, 0, Some(12.0), Some(0.01), Some(1.0)),
                m("demo-reasoning", 3, 1, Some(30.0), None, Some(0.5)),
            ],
            repeat: 1,
            rates: Vec::new(),
            flaky: Vec::new(),
        }
    }

    #[test]
    fn the_table_marks_the_best_and_not_ties() {
        let t = table(&sample());
        insta::assert_snapshot!(t);
        let tps = t.lines().find(|l| l.starts_with("tok/s p50")).unwrap();
        assert!(!tps.contains('*'), "a tie is not marked: {tps}");
    }

    #[test]
    fn schema_validity_is_a_row_of_its_own() {
        assert!(!table(&sample()).contains("schema valid"), "no schema, no row");
        let mut s = sample();
        (s.models[0].schema_checked, s.models[0].schema_valid) = (3, 3);
        (s.models[1].schema_checked, s.models[1].schema_valid) = (3, 1);
        let t = table(&s);
        let row = t.lines().find(|l| l.starts_with("schema valid")).unwrap();
        assert!(row.contains("3/3*") && row.contains("1/3 "), "{row}");
        let rows = report_rows(&s);
        let (_, shown, best) = rows.iter().find(|r| r.0 == "schema valid").unwrap();
        assert_eq!((shown.clone(), best.clone()), (vec!["3/3".to_owned(), "1/3".to_owned()], vec![0]));
    }

    #[test]
    fn a_cells_schema_verdict_reads_either_name() {
        let v = |j: serde_json::Value| schema_verdict(Some(&j));
        assert_eq!(v(serde_json::json!([{"kind": "contains", "pass": false}])), None);
        assert_eq!(
            v(serde_json::json!([{"kind": "contains", "pass": false}, {"kind": "schema", "pass": true}])),
            Some(true)
        );
        assert_eq!(v(serde_json::json!([{"kind": "json_schema", "pass": false}])), Some(false));
        assert_eq!(schema_verdict(None), None);
    }

    #[test]
    fn costs_round_as_the_screen_rounds_them() {
        let mut s = sample();
        for (m, usd) in s.models.iter_mut().zip([0.000_123_456, 1.234_567_8]) {
            m.cost = Some(usd);
        }
        let t = table(&s);
        let row = t.lines().find(|l| l.starts_with("cost")).unwrap();
        for usd in [0.000_123_456, 1.234_567_8] {
            assert!(row.contains(&crate::text::fmt::money(usd)), "{row}");
        }
    }
}
