//! `compare diff A B --judge MODEL`: a judge compares each model's answer in A with its answer
//! in B, prompt by prompt, through `select_best` (labelled answers without names, asked in both
//! orders): a pick that flips with the order is a tie. Per model: how often each run's answer
//! was better, the ties, the judge's consistency, and a sign test.

use super::diff::{Diff, Judged};
use crate::cli::args::Global;
use crate::cli::headless::Printer;
use crate::config::Config;
use crate::engine::evals::expect::Expect;
use crate::engine::evals::paired::mcnemar_exact;
use crate::runs::judge::{Grading, select_best};
use crate::store::runs::{RunStore, RunSummary};

/// The criterion when `--rubric` gives none.
pub const DEFAULT_RUBRIC: &str = "Which answer answers the question better: correct, complete and clear?";

/// Judges every pair of `d` with `judge`; `Err` when the judge cannot be set up, or the user
/// stopped it.
///
/// # Errors
/// The judge model cannot be resolved, or the store cannot be read.
pub async fn run(
    g: &Global,
    cfg: &Config,
    store: &RunStore,
    runs: [&RunSummary; 2],
    d: &mut Diff,
    judge: &str,
    rubric: &str,
) -> Result<(), String> {
    let expect = Expect::compile(&serde_json::json!({"select_best": rubric, "model": judge}))?;
    let spec = expect.select_best().cloned().ok_or("the judge's criterion did not compile")?;
    let judges = super::judges::prepare(g, cfg, &[Some(expect)]).await?;
    let registry = crate::tools::Registry::builtins();
    crate::cli::interrupt::install();
    let stop = crate::cli::interrupt::stop();
    let questions: Vec<String> =
        store.prompts(&runs[1].id).map_err(|e| e.to_string())?.into_iter().map(|p| p.prompt).collect();
    let mut sink = Printer::quiet(false);
    let mut tallies: Vec<Judged> = Vec::new();
    for cell in &d.cells {
        if stop.is_set() {
            return Err("interrupted: the judge's verdicts so far are not kept".into());
        }
        let t = match tallies.iter().position(|t| t.model == cell.model && t.provider == cell.provider) {
            Some(i) => &mut tallies[i],
            None => {
                let judged = Judged {
                    model: cell.model.clone(),
                    provider: cell.provider.clone(),
                    judge: judge.to_owned(),
                    ..Judged::default()
                };
                tallies.push(judged);
                let last = tallies.len() - 1;
                &mut tallies[last]
            }
        };
        let [(pa, ma), (pb, mb)] = cell.at;
        let (Some(a), Some(b)) = (answer(store, runs[0], pa, ma)?, answer(store, runs[1], pb, mb)?) else {
            t.unjudged += 1;
            continue;
        };
        let grading = Grading {
            judges: &judges,
            cfg,
            registry: &registry,
            question: questions.get(pb as usize).map_or("", String::as_str),
            answer: "",
            stop: stop.clone(),
        };
        let seed = u64::from(pb) << 32 | u64::from(mb);
        let Some(sel) = select_best(&grading, &spec, &[&a, &b], seed, &mut sink).await else {
            return Err("interrupted: the judge's verdicts so far are not kept".into());
        };
        match sel.winners.as_slice() {
            [0] => t.a_better += 1,
            [1] => t.b_better += 1,
            [] => t.unjudged += 1,
            _ => t.ties += 1,
        }
        if let Some(agreed) = sel.consistent {
            t.both_orders += 1;
            t.consistent += u64::from(agreed);
        }
    }
    for t in &mut tallies {
        t.p = (t.a_better + t.b_better > 0).then(|| mcnemar_exact(t.a_better, t.b_better));
    }
    d.judged = tallies;
    Ok(())
}

/// The answer of a stored cell (its first sample), if it has one.
fn answer(store: &RunStore, run: &RunSummary, prompt: u32, model: u32) -> Result<Option<String>, String> {
    let cells = store.prompt_cells(&run.id, prompt).map_err(|e| format!("cannot read run {}: {e}", run.id))?;
    Ok(cells.into_iter().find(|c| c.model_idx == model && c.ok).map(|c| c.text))
}
