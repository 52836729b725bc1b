//! `judge` checks of a batch run: a batch line is one request, so the judges are asked once
//! the batches are gathered, for each answered cell not yet graded. Their results join the
//! cell's checks as in a streamed run (a resumed run grades only what is left).

use crate::cli::headless::Printer;
use crate::engine::evals::expect::Expect;
use crate::runs::judge::{Grading, grade};
use crate::runs::scheduler::Shared;

fn graded(checks: Option<&serde_json::Value>) -> bool {
    checks.and_then(|v| v.as_array()).is_some_and(|a| a.iter().any(|r| r["kind"] == "judge"))
}

/// Grades every answered cell of the run whose prompt has `judge` checks; stops at Ctrl+C.
pub async fn run(shared: &Shared) {
    for (p, expect) in shared.prompts.iter().zip(&shared.expects) {
        let Some(expect) = expect.as_ref() else { continue };
        let specs: Vec<_> = Expect::judges(expect).collect();
        if specs.is_empty() {
            continue;
        }
        let Ok(cells) = shared.store.prompt_cells(&shared.run, p.idx) else { continue };
        for cell in cells.into_iter().filter(|c| c.ok && !graded(c.checks.as_ref())) {
            let grading = Grading {
                judges: &shared.judges,
                cfg: &shared.cfg,
                registry: &shared.registry,
                question: &p.prompt,
                answer: &cell.text,
                stop: shared.stop.clone(),
            };
            let mut results = Vec::new();
            for spec in &specs {
                let Some(result) = grade(&grading, spec, &mut Printer::quiet(false)).await else { return };
                results.push(result);
            }
            super::select::add_checks(shared, cell, results);
        }
    }
}
