//! A run's repeated samples (`--repeat N`) in its summary: each checked prompt × model's
//! samples decided into one verdict by the line's `threshold`, their pass rate with a Wilson
//! interval, pass@k and pass^k (k = N), each model's mean score with a bootstrap interval over
//! prompts, and the prompts that flicker. The figures are `engine::evals::rates`; this is
//! where a run's cells meet them, and the table every report prints.

use super::summary::{ModelSummary, Summary};
use crate::engine::evals::rates::{self, BOOTSTRAP_ROUNDS, DEFAULT_THRESHOLD, Estimate};
use crate::store::runs::{PromptRow, RunModel};
use crate::text::sanitize::sanitize;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The bootstrap's seed: the same run always prints the same intervals.
const SEED: u64 = 0x5EED_0F5A_3B1E;

/// One checked prompt × model over its samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellRates {
    pub prompt_index: u32,
    pub prompt_id: String,
    pub column: u32,
    pub model: String,
    pub samples: u64,
    pub passed: u64,
    /// The pass rate and its 95% Wilson interval.
    pub pass_rate: Estimate,
    /// k of pass@k and pass^k: the run's samples per cell.
    pub k: u32,
    /// `None` while the cell has fewer than k samples (an interrupted run).
    pub pass_at_k: Option<f64>,
    pub pass_hat_k: Option<f64>,
    pub threshold: f64,
    /// Whether the cell passed: its pass rate reached its threshold (`rates::decided`).
    pub decided: bool,
}

/// Each checked prompt × model's samples as (passed, score), gathered from the store.
#[derive(Default)]
pub struct Samples(BTreeMap<(u32, u32), Vec<(bool, f64)>>);

impl Samples {
    /// A sample of a checked prompt: whether it passed, and its checks (none: it failed to run).
    pub fn add(&mut self, prompt_idx: u32, model_idx: u32, pass: bool, checks: Option<&Vec<Value>>) {
        let score =
            checks.and_then(|c| crate::engine::evals::outcome::score(c)).unwrap_or(if pass { 1.0 } else { 0.0 });
        self.0.entry((prompt_idx, model_idx)).or_default().push((pass, score));
    }

    /// Decides every cell: counts the models' checked and passed cells, sets their mean score
    /// (with repeats), and returns each cell's rates in (prompt, model) order.
    pub fn decide(
        &self,
        prompts: &[PromptRow],
        models: &[RunModel],
        repeat: u32,
        out: &mut [ModelSummary],
    ) -> Vec<CellRates> {
        let by_idx: BTreeMap<u32, &PromptRow> = prompts.iter().map(|p| (p.idx, p)).collect();
        let mut means: Vec<Vec<f64>> = vec![Vec::new(); out.len()];
        let mut all = Vec::new();
        for (&(p, m), samples) in &self.0 {
            let (Some(model), Some(prompt)) = (out.get_mut(m as usize), by_idx.get(&p)) else { continue };
            let passes: Vec<bool> = samples.iter().map(|s| s.0).collect();
            let threshold = prompt.threshold.unwrap_or(DEFAULT_THRESHOLD);
            let decided = rates::decided(&passes, threshold);
            model.checked += 1;
            model.passed += u64::from(decided);
            let (n, c) = (passes.len() as u64, passes.iter().filter(|p| **p).count() as u64);
            #[allow(clippy::cast_precision_loss)]
            means[m as usize].push(samples.iter().map(|s| s.1).sum::<f64>() / n.max(1) as f64);
            let Some(pass_rate) = rates::wilson(c, n) else { continue };
            all.push(CellRates {
                prompt_index: p,
                prompt_id: prompt.id.clone(),
                column: m,
                model: models.get(m as usize).map_or_else(String::new, |r| r.model.clone()),
                samples: n,
                passed: c,
                pass_rate,
                k: repeat,
                pass_at_k: rates::pass_at_k(n, c, u64::from(repeat)),
                pass_hat_k: rates::pass_hat_k(n, c, u64::from(repeat)),
                threshold,
                decided,
            });
        }
        if repeat > 1 {
            for (i, (model, scores)) in out.iter_mut().zip(&means).enumerate() {
                model.mean_score = rates::bootstrap_mean(scores, BOOTSTRAP_ROUNDS, SEED ^ i as u64);
            }
        }
        all
    }
}

/// The prompts (by id, in the set's order) whose samples both passed and failed on a model.
#[must_use]
pub fn flaky(prompts: &[PromptRow], cells: &[CellRates]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in prompts {
        let flickers = cells.iter().any(|c| c.prompt_index == p.idx && c.passed > 0 && c.passed < c.samples);
        if flickers && !out.contains(&p.id) {
            out.push(p.id.clone());
        }
    }
    out
}

/// The columns of the rates table.
pub const HEAD: [&str; 8] = ["prompt", "model", "passed", "rate", "95% interval", "pass@k", "pass^k", "cell"];

fn pct(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// The rates table's rows, its text untrusted (sanitised here; each format escapes its own).
#[must_use]
pub fn rows(s: &Summary) -> Vec<[String; 8]> {
    let k = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    s.rates
        .iter()
        .map(|c| {
            #[allow(clippy::float_cmp)]
            let rule =
                if c.threshold == DEFAULT_THRESHOLD { String::new() } else { format!(" (≥ {})", pct(c.threshold)) };
            [
                sanitize(&c.prompt_id).into_owned(),
                sanitize(&c.model).into_owned(),
                format!("{}/{}", c.passed, c.samples),
                pct(c.pass_rate.value),
                format!("[{}, {}]", pct(c.pass_rate.low), pct(c.pass_rate.high)),
                k(c.pass_at_k),
                k(c.pass_hat_k),
                format!("{}{rule}", if c.decided { "pass" } else { "fail" }),
            ]
        })
        .collect()
}

/// The line under the rates table: what its figures are.
#[must_use]
pub fn legend(s: &Summary) -> String {
    format!(
        "{n} samples a cell · rate with its 95% Wilson interval · pass@{n}: one of {n} samples passes, pass^{n}: all \
         of them · a cell passes when its rate reaches its line's threshold (default: every sample)",
        n = s.repeat
    )
}

/// The flaky prompts' line, if any.
#[must_use]
pub fn flaky_line(s: &Summary) -> Option<String> {
    (!s.flaky.is_empty()).then(|| {
        let ids: Vec<String> = s.flaky.iter().map(|id| sanitize(id).into_owned()).collect();
        format!("flaky (samples both pass and fail): {}", ids.join(", "))
    })
}

/// A line of the terminal's rates table, its columns padded to `widths`.
fn line(cells: impl Iterator<Item = impl AsRef<str>>, widths: &[usize]) -> String {
    let parts: Vec<String> = cells.zip(widths).map(|(v, w)| format!("{:<w$}", v.as_ref())).collect();
    format!("{}\n", parts.join("  ").trim_end())
}

/// The terminal's rates table, after the summary's; empty without repeats.
#[must_use]
pub fn table(s: &Summary) -> String {
    if s.repeat <= 1 {
        return String::new();
    }
    let rows = rows(s);
    let mut widths: Vec<usize> = HEAD.iter().map(|h| h.chars().count()).collect();
    let clipped: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().enumerate().map(|(i, v)| if i < 2 { crate::tools::clip(v, 22) } else { v.clone() }).collect())
        .collect();
    for r in &clipped {
        for (w, v) in widths.iter_mut().zip(r) {
            *w = (*w).max(v.chars().count());
        }
    }
    let mut out = format!("\n{}", line(HEAD.iter(), &widths));
    for r in &clipped {
        out.push_str(&line(r.iter(), &widths));
    }
    out.push_str(&legend(s));
    out.push('\n');
    if let Some(f) = flaky_line(s) {
        out.push_str(&f);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prompt(idx: u32, id: &str, threshold: Option<f64>) -> PromptRow {
        PromptRow {
            idx,
            id: id.into(),
            prompt: "q".into(),
            expect: Some(json!({"contains": "x"})),
            threshold,
            ..PromptRow::default()
        }
    }

    #[test]
    fn samples_decide_cells_by_threshold_and_name_the_flaky_prompts() {
        let prompts = [prompt(0, "steady", None), prompt(1, "shaky", Some(0.6)), prompt(2, "strict", None)];
        let models = [RunModel { spec: "demo".into(), model: "demo".into(), provider: "demo".into() }];
        let mut samples = Samples::default();
        let pass = [json!({"kind": "contains", "pass": true})];
        let fail = [json!({"kind": "contains", "pass": false})];
        for i in 0..5 {
            samples.add(0, 0, true, Some(&pass.to_vec()));
            let flip = i % 2 == 0;
            samples.add(1, 0, flip, Some(&(if flip { pass.to_vec() } else { fail.to_vec() })));
            samples.add(2, 0, i > 0, Some(&(if i > 0 { pass.to_vec() } else { fail.to_vec() })));
        }
        let mut out = vec![ModelSummary::default()];
        let cells = samples.decide(&prompts, &models, 5, &mut out);
        let got: Vec<(&str, u64, bool)> = cells.iter().map(|c| (c.prompt_id.as_str(), c.passed, c.decided)).collect();
        // 3/5 reaches 0.6; 4/5 misses the default (every sample).
        assert_eq!(got, [("steady", 5, true), ("shaky", 3, true), ("strict", 4, false)]);
        assert_eq!((out[0].checked, out[0].passed), (3, 2));
        assert_eq!(flaky(&prompts, &cells), ["shaky", "strict"]);
        let shaky = &cells[1];
        assert_eq!((shaky.pass_at_k, shaky.pass_hat_k), (Some(1.0), Some(0.0)));
        let mean = out[0].mean_score.unwrap_or_else(|| panic!("a mean score"));
        // Prompt means 1.0, 0.6, 0.8.
        assert!((mean.value - 0.8).abs() < 1e-9 && mean.low <= 0.8 && mean.high >= 0.8, "{mean:?}");
    }
}
