//! `select_best` over a run: once every model has answered a prompt, one judge call sees all
//! its answers (labelled by letter, shuffled, without the models' names) and picks the best.
//! The result joins each answered cell's checks — the winner's passes — and the call's usage
//! goes with the first answered cell's entry, so it is counted once. A prompt already decided
//! (a resumed run) is not asked again; one still missing answers waits for `--resume`. With
//! `--repeat`, each sample is its own contest: sample i of every model, judged together.

use crate::cli::headless::Printer;
use crate::engine::evals::expect::{CheckResult, Expect};
use crate::runs::judge::{Grading, Selection, select_best};
use crate::runs::scheduler::Shared;
use crate::store::runs::CellRow;

fn decided(c: &CellRow) -> bool {
    c.checks.as_ref().and_then(|v| v.as_array()).is_some_and(|a| a.iter().any(|r| r["kind"] == "select_best"))
}

/// A seed for the order a prompt's answers are shown in: the same on every resume.
fn seed(run: &str, idx: u32) -> u64 {
    run.bytes()
        .chain(idx.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Runs the `select_best` checks of every prompt (and sample) every model has answered;
/// stops at Ctrl+C.
pub async fn run(shared: &Shared) {
    for (p, expect) in shared.prompts.iter().zip(&shared.expects) {
        let Some(spec) = expect.as_ref().and_then(Expect::select_best) else { continue };
        let Ok(all) = shared.store.prompt_cells(&shared.run, p.idx) else { continue };
        let samples: std::collections::BTreeSet<u32> = all.iter().map(|c| c.sample).collect();
        for sample in samples {
            if shared.stop.is_set() {
                return;
            }
            let cells: Vec<CellRow> = all.iter().filter(|c| c.sample == sample).cloned().collect();
            if !contest(shared, p, spec, &cells).await {
                return;
            }
        }
    }
}

/// One prompt's (one sample's) contest between its models' answers; `false` when stopped.
async fn contest(
    shared: &Shared,
    p: &crate::store::runs::PromptRow,
    spec: &crate::engine::evals::expect::JudgeSpec,
    cells: &[CellRow],
) -> bool {
    if cells.len() < shared.targets.len() || cells.iter().any(decided) {
        return true;
    }
    let answered: Vec<usize> = (0..cells.len()).filter(|&i| cells[i].ok).collect();
    if answered.is_empty() {
        return true;
    }
    let answers: Vec<&str> = answered.iter().map(|&i| cells[i].text.as_str()).collect();
    let grading = Grading {
        judges: &shared.judges,
        cfg: &shared.cfg,
        registry: &shared.registry,
        question: &p.prompt,
        answer: "",
        stop: shared.stop.clone(),
    };
    let sel = if answers.len() == 1 {
        // One answer is the best of one: no judge is asked.
        Selection {
            winners: vec![0],
            detail: "the only answer: no other to choose from".into(),
            usage: None,
            consistent: None,
        }
    } else {
        let mut sink = Printer::quiet(false);
        // Sample 0 keeps the order a run without repeats had.
        let order = seed(&shared.run, p.idx).wrapping_add(u64::from(cells[0].sample));
        let Some(sel) = select_best(&grading, spec, &answers, order, &mut sink).await else {
            return false;
        };
        sel
    };
    // The judge saw letters only; the report names the model that won.
    let model_of = |k: &usize| {
        answered
            .get(*k)
            .and_then(|&w| shared.targets.get(cells[w].model_idx as usize))
            .map_or("?", |t| t.model.as_str())
    };
    let detail = match sel.winners.as_slice() {
        [w] if answers.len() > 1 => format!("won by {}; {}", model_of(w), sel.detail),
        [a, b] => format!("tied between {} and {}; {}", model_of(a), model_of(b), sel.detail),
        _ => sel.detail.clone(),
    };
    let mut usage = sel.usage.clone();
    if let (Some(serde_json::Value::Object(u)), Some(c)) = (&mut usage, sel.consistent) {
        u.insert("consistent".into(), serde_json::Value::Bool(c));
    }
    for (k, &i) in answered.iter().enumerate() {
        let mut result = CheckResult::new("select_best", sel.winners.contains(&k), Some(detail.clone()));
        result.judge = if k == 0 { usage.clone() } else { None };
        add_checks(shared, cells[i].clone(), [result]);
    }
    true
}

/// Stores `cell` with `results` after the checks it already has (the checks decided after
/// its answer: `select_best`, and a batch run's judges).
pub(super) fn add_checks(shared: &Shared, mut cell: CellRow, results: impl IntoIterator<Item = CheckResult>) {
    let mut checks = cell.checks.take().and_then(|v| v.as_array().cloned()).unwrap_or_default();
    checks.extend(results.into_iter().filter_map(|r| serde_json::to_value(r).ok()));
    cell.checks = Some(serde_json::Value::Array(checks));
    shared.store.save_cell(&shared.run, cell);
}
