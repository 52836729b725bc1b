//! Run against run (`compare diff RUN_A RUN_B`, `compare --baseline RUN`): pairs the cells of
//! two stored runs, prompt by prompt and model by model, decides each cell
//! (`engine::evals::outcome`), and tests each model's pairs (`engine::evals::paired`). What
//! is shown is `diff_show.rs`'s.
//!
//! Prompts pair by their line's `id`; a prompt without one (its id a line number, which moves
//! when lines do) pairs by its text, system prompt and vars. Models pair by model and provider.

use crate::engine::evals::outcome::{self, Outcome, Sample};
use crate::engine::evals::paired::Paired;
use crate::store::runs::{PromptRow, RunModel, RunStore, RunSummary};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// When a diff fails the command (exit 3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    /// `--fail-on-regression`: a model significantly worse fails it.
    pub fail_on_regression: bool,
    /// `--critical ID,…`: any of these prompts passing in A and failing in B fails it,
    /// whatever the statistics.
    pub critical: Vec<String>,
}

/// What happened to one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    NewlyFails,
    NewlyPasses,
    /// Passes or fails as before, at another score.
    Score,
    Unchanged,
}

/// One prompt × model present in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellDiff {
    /// The prompt's id in run B.
    pub prompt: String,
    pub model: String,
    pub provider: String,
    pub critical: bool,
    pub a: Outcome,
    pub b: Outcome,
    /// Where its cells are: (prompt idx, model idx) in A, then in B.
    #[serde(skip)]
    pub at: [(u32, u32); 2],
}

impl CellDiff {
    #[must_use]
    pub fn change(&self) -> Change {
        match (self.a.pass, self.b.pass) {
            (Some(true), Some(false)) => Change::NewlyFails,
            (Some(false), Some(true)) => Change::NewlyPasses,
            _ if delta(self.a.score, self.b.score).is_some_and(|d| d.abs() > 1e-9) => Change::Score,
            _ => Change::Unchanged,
        }
    }
}

/// B − A, when both have a figure.
#[must_use]
pub fn delta(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(b? - a?)
}

/// One model present in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelDiff {
    pub model: String,
    pub provider: String,
    /// Prompts with a cell in both runs.
    pub pairs: u64,
    /// Prompts in both runs whose cell is missing from one (an interrupted run).
    pub unpaired: u64,
    #[serde(flatten)]
    pub test: Paired,
    /// Means over the pairs.
    pub score_a: Option<f64>,
    pub score_b: Option<f64>,
    /// Totals over the pairs.
    pub cost_a: Option<f64>,
    pub cost_b: Option<f64>,
    /// Means over the pairs, in milliseconds.
    pub latency_a_ms: Option<f64>,
    pub latency_b_ms: Option<f64>,
    /// `--critical` prompts that passed in A and fail in B.
    pub critical_broken: Vec<String>,
}

/// What only one run has.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Only {
    pub prompts: Vec<String>,
    pub models: Vec<String>,
}

/// Run B against run A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    pub run_a: String,
    pub run_b: String,
    pub models: Vec<ModelDiff>,
    /// Every pair, in B's prompt order then model order.
    pub cells: Vec<CellDiff>,
    pub only_in_a: Only,
    pub only_in_b: Only,
    /// `--judge`: each model's answers in A and B compared by a judge, in both orders.
    pub judged: Vec<Judged>,
    /// Cells of A and of B answered from the response cache: they repeat an earlier answer.
    pub cached: [u64; 2],
}

/// A judge's pairwise verdicts on one model's answers, A against B.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Judged {
    pub model: String,
    pub provider: String,
    pub judge: String,
    pub a_better: u64,
    pub b_better: u64,
    /// The pick flipped with the order: a tie.
    pub ties: u64,
    /// Pairs where no verdict could be read, or an answer is missing.
    pub unjudged: u64,
    /// Pairs judged in both orders with a readable verdict each, and those that agreed.
    pub both_orders: u64,
    pub consistent: u64,
    /// The sign test on B better against A better (the exact binomial McNemar's test uses).
    pub p: Option<f64>,
}

impl Diff {
    /// Whether the gate fails: a model significantly worse (with `--fail-on-regression`), or a
    /// critical prompt broken.
    #[must_use]
    pub fn regressed(&self, gate: &Gate) -> bool {
        self.models.iter().any(|m| (gate.fail_on_regression && m.test.worse()) || !m.critical_broken.is_empty())
    }
}

/// Checks that each `--critical` id names a prompt of the baseline `a`: a typo would
/// otherwise guard nothing, silently.
///
/// # Errors
/// The ids that name no prompt of `a`.
pub fn check_critical(store: &RunStore, a: &RunSummary, critical: &[String]) -> Result<(), String> {
    if critical.is_empty() {
        return Ok(());
    }
    let ids: HashSet<String> = store.prompts(&a.id).map_err(|e| e.to_string())?.into_iter().map(|p| p.id).collect();
    let unknown: Vec<&str> = critical.iter().filter(|c| !ids.contains(*c)).map(String::as_str).collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(format!("--critical: run {} has no prompt with the id {}", a.id, unknown.join(", ")))
    }
}

/// One run's prompts and its cells' samples, by (prompt idx, model idx).
struct Side {
    prompts: Vec<PromptRow>,
    samples: HashMap<(u32, u32), Vec<Sample>>,
    /// Cells answered from the response cache.
    cached: u64,
}

fn read(store: &RunStore, run: &RunSummary) -> Result<Side, String> {
    let prompts = store.prompts(&run.id).map_err(|e| format!("cannot read run {}: {e}", run.id))?;
    let checked: HashSet<u32> = prompts.iter().filter(|p| p.is_checked()).map(|p| p.idx).collect();
    let mut samples: HashMap<(u32, u32), Vec<Sample>> = HashMap::new();
    let mut cached = 0;
    store
        .each_figures(&run.id, |f| {
            cached += u64::from(f.cached);
            let s = Sample::of(checked.contains(&f.prompt_idx), f.checks.as_ref(), f.cost, f.total_ms);
            samples.entry((f.prompt_idx, f.model_idx)).or_default().push(s);
        })
        .map_err(|e| format!("cannot read run {}: {e}", run.id))?;
    Ok(Side { prompts, samples, cached })
}

/// How a prompt is found in the other run: its `id`, or (an id that is a line number) its
/// text, system prompt and vars; the n-th of equal keys pairs with the n-th.
fn keys(prompts: &[PromptRow]) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    prompts
        .iter()
        .map(|p| {
            let key = if p.id.chars().all(|c| c.is_ascii_digit() || c == '.') {
                let vars = p.vars.as_ref().map(ToString::to_string).unwrap_or_default();
                format!("text\0{}\0{}\0{vars}", p.prompt, p.system.as_deref().unwrap_or(""))
            } else {
                format!("id\0{}", p.id)
            };
            let n = seen.entry(key.clone()).or_default();
            *n += 1;
            format!("{key}\0{n}")
        })
        .collect()
}

fn model_key(m: &RunModel) -> (&str, &str) {
    (m.model.as_str(), m.provider.as_str())
}

/// Pairs run `b` against run `a` and tests each model.
///
/// # Errors
/// A run that cannot be read.
pub fn compute(store: &RunStore, a: &RunSummary, b: &RunSummary, gate: &Gate) -> Result<Diff, String> {
    let (sa, sb) = (read(store, a)?, read(store, b)?);
    let (ka, kb) = (keys(&sa.prompts), keys(&sb.prompts));
    let a_at: HashMap<&String, usize> = ka.iter().enumerate().map(|(i, k)| (k, i)).collect();
    let b_keys: HashSet<&String> = kb.iter().collect();
    // (B's prompt, A's prompt) for each prompt in both.
    let prompt_pairs: Vec<(&PromptRow, &PromptRow)> =
        kb.iter().zip(&sb.prompts).filter_map(|(k, pb)| Some((pb, &sa.prompts[*a_at.get(k)?]))).collect();
    let mut diff = Diff {
        cached: [sa.cached, sb.cached],
        run_a: a.id.clone(),
        run_b: b.id.clone(),
        models: Vec::new(),
        cells: Vec::new(),
        only_in_a: Only {
            prompts: ka
                .iter()
                .zip(&sa.prompts)
                .filter(|(k, _)| !b_keys.contains(k))
                .map(|(_, p)| p.id.clone())
                .collect(),
            models: a
                .models
                .iter()
                .filter(|m| !b.models.iter().any(|x| model_key(x) == model_key(m)))
                .map(|m| m.spec.clone())
                .collect(),
        },
        judged: Vec::new(),
        only_in_b: Only {
            prompts: kb
                .iter()
                .zip(&sb.prompts)
                .filter(|(k, _)| !a_at.contains_key(k))
                .map(|(_, p)| p.id.clone())
                .collect(),
            models: b
                .models
                .iter()
                .filter(|m| !a.models.iter().any(|x| model_key(x) == model_key(m)))
                .map(|m| m.spec.clone())
                .collect(),
        },
    };
    for (mb, model) in b.models.iter().enumerate() {
        let Some(ma) = a.models.iter().position(|x| model_key(x) == model_key(model)) else { continue };
        let (ma, mb) = (u32::try_from(ma).unwrap_or(u32::MAX), u32::try_from(mb).unwrap_or(u32::MAX));
        let mut cells = Vec::new();
        let mut unpaired = 0;
        for (pb, pa) in &prompt_pairs {
            let decided =
                |s: &Side, p: &PromptRow, m| s.samples.get(&(p.idx, m)).and_then(|v| outcome::decide(v, p.threshold));
            let (Some(oa), Some(ob)) = (decided(&sa, pa, ma), decided(&sb, pb, mb)) else {
                unpaired += 1;
                continue;
            };
            let critical = gate.critical.iter().any(|c| *c == pa.id || *c == pb.id);
            cells.push(CellDiff {
                prompt: pb.id.clone(),
                model: model.model.clone(),
                provider: model.provider.clone(),
                critical,
                a: oa,
                b: ob,
                at: [(pa.idx, ma), (pb.idx, mb)],
            });
        }
        diff.models.push(model_diff(model, &cells, unpaired));
        diff.cells.extend(cells);
    }
    Ok(diff)
}

/// One model's figures over its pairs.
fn model_diff(model: &RunModel, cells: &[CellDiff], unpaired: u64) -> ModelDiff {
    let pass_pairs = cells.iter().filter_map(|c| Some((c.a.pass?, c.b.pass?)));
    let score_diffs: Vec<f64> = cells.iter().filter_map(|c| delta(c.a.score, c.b.score)).collect();
    let mean = |f: &dyn Fn(&CellDiff) -> Option<f64>| {
        let v: Vec<f64> = cells.iter().filter_map(f).collect();
        #[allow(clippy::cast_precision_loss)]
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let total = |f: &dyn Fn(&CellDiff) -> Option<f64>| cells.iter().filter_map(f).reduce(|x, y| x + y);
    ModelDiff {
        model: model.model.clone(),
        provider: model.provider.clone(),
        pairs: cells.len() as u64,
        unpaired,
        test: Paired::test(pass_pairs, &score_diffs),
        score_a: mean(&|c| c.a.score),
        score_b: mean(&|c| c.b.score),
        cost_a: total(&|c| c.a.cost),
        cost_b: total(&|c| c.b.cost),
        latency_a_ms: mean(&|c| c.a.latency_ms),
        latency_b_ms: mean(&|c| c.b.latency_ms),
        critical_broken: cells
            .iter()
            .filter(|c| c.critical && c.change() == Change::NewlyFails)
            .map(|c| c.prompt.clone())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(idx: u32, id: &str, prompt: &str) -> PromptRow {
        PromptRow { idx, id: id.into(), prompt: prompt.into(), ..PromptRow::default() }
    }

    #[test]
    fn prompts_pair_by_id_else_by_text() {
        let a = keys(&[row(0, "capital", "Capital of France?"), row(1, "2", "hi"), row(2, "3.1", "hi")]);
        let b = keys(&[row(0, "5", "hi"), row(1, "capital", "Capital of Spain?"), row(2, "7", "hi")]);
        assert_eq!(a[0], b[1], "the same id pairs whatever the text");
        assert_eq!(a[1], b[0], "a line number pairs by text");
        assert_eq!(a[2], b[2], "the second equal prompt pairs with the second");
        let vars = PromptRow { vars: Some(serde_json::json!({"x": 1})), ..row(0, "4", "hi") };
        assert_ne!(keys(&[vars])[0], a[1], "vars are part of a prompt without id");
    }

    #[test]
    fn a_cell_names_its_change() {
        let o = |pass, score| Outcome { pass: Some(pass), score: Some(score), ..Outcome::default() };
        let cell = |a, b| CellDiff {
            prompt: "q".into(),
            model: "m".into(),
            provider: "p".into(),
            critical: false,
            a,
            b,
            at: [(0, 0); 2],
        };
        assert_eq!(cell(o(true, 1.0), o(false, 0.0)).change(), Change::NewlyFails);
        assert_eq!(cell(o(false, 0.0), o(true, 1.0)).change(), Change::NewlyPasses);
        assert_eq!(cell(o(false, 0.2), o(false, 0.6)).change(), Change::Score);
        assert_eq!(cell(o(true, 1.0), o(true, 1.0)).change(), Change::Unchanged);
        assert_eq!(cell(Outcome::default(), Outcome::default()).change(), Change::Unchanged);
    }

    #[test]
    fn a_broken_critical_prompt_fails_the_gate_alone() {
        let m = RunModel { spec: "m".into(), model: "m".into(), provider: "p".into() };
        let o = |pass: bool| Outcome { pass: Some(pass), score: Some(f64::from(u8::from(pass))), ..Outcome::default() };
        let mut cells: Vec<CellDiff> = (0..12)
            .map(|i| CellDiff {
                prompt: format!("q{i}"),
                model: "m".into(),
                provider: "p".into(),
                critical: i == 3,
                a: o(true),
                b: o(i != 3),
                at: [(0, 0); 2],
            })
            .collect();
        let d = |cells: &[CellDiff]| Diff {
            run_a: "a".into(),
            run_b: "b".into(),
            models: vec![model_diff(&m, cells, 0)],
            cells: cells.to_vec(),
            only_in_a: Only::default(),
            only_in_b: Only::default(),
            judged: Vec::new(),
            cached: [0, 0],
        };
        let gate = Gate { fail_on_regression: true, critical: vec!["q3".into()] };
        let one = d(&cells);
        assert_eq!(one.models[0].critical_broken, ["q3"]);
        assert!(!one.models[0].test.worse(), "one prompt of twelve is not significant");
        assert!(one.regressed(&gate) && one.regressed(&Gate { fail_on_regression: false, ..gate.clone() }));
        cells[3].critical = false;
        assert!(!d(&cells).regressed(&gate), "not critical, not significant: the gate holds");
    }
}
