//! `palaver compare rescore RUN [--prompts FILE]`: a stored run's answers graded again, with
//! the checks of FILE (matched to the stored prompts by line id, else by position) or the
//! stored ones (after palaver's checks changed). No model is called: the stored text, tool
//! calls, finish reason, cost and latency are the facts. Judges are the exception; they go
//! through the response cache. The result is a new run ("rescore of RUN"), so the old one
//! loses nothing and `compare diff OLD NEW` shows what the checks changed.

use super::super::args::{CompareArgs, Global};
use super::{attach_rules, cache, json, judges, read_set, select, usage};
use crate::cli::headless::Printer;
use crate::config::{Config, Paths};
use crate::engine::evals::expect::{CheckResult, Expect};
use crate::engine::evals::prompts::{self, PromptItem};
use crate::runs::cell::{Asked, Grader};
use crate::runs::scheduler;
use crate::store::runs::PromptRow;
use crate::tools::Registry;
use std::path::Path;
use std::sync::Arc;

/// What `rescore` was asked.
pub struct Rescore<'a> {
    pub run: &'a str,
    pub prompts: Option<&'a Path>,
    pub allow_scripts: bool,
    pub allow_outside: bool,
}

/// Grades run `r.run` again as a new run; the exit status is a run's.
pub async fn run(
    g: &Global,
    cfg: &Config,
    paths: &Paths,
    registry: &Registry,
    ca: &CompareArgs,
    r: &Rescore<'_>,
) -> u8 {
    for path in &ca.report {
        if let Err(e) = super::report::format_of(path) {
            return usage(&e);
        }
    }
    let cache = match cache::open(cfg, paths, ca.no_cache) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    let store = match super::open_store(paths) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (g, old, mut prompt_rows) = match super::resume(g, &store, r.run) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let expects = match checks(&mut prompt_rows, r) {
        Ok(e) => e,
        Err(code) => return code,
    };
    let mut targets = match super::resolve_columns(&g, cfg, &g.model).await {
        Ok(t) => t,
        Err(e) => return usage(&e.0),
    };
    let mut judges = match judges::prepare(&g, cfg, &expects).await {
        Ok(j) => j,
        Err(e) => return usage(&e),
    };
    if let Some(c) = &cache {
        cache::attach(c, &mut targets, &mut judges);
    }
    let mut settings = old.settings.clone();
    settings["rescore_of"] = serde_json::json!(old.id);
    let source = match r.prompts {
        Some(p) => format!("rescore of {} with {}", old.id, p.display()),
        None => format!("rescore of {}", old.id),
    };
    let id = match store.create_run(&old.models, &settings, &source, prompt_rows.clone()) {
        Ok(id) => id,
        Err(e) => return usage(&format!("cannot store the run: {e}")),
    };
    if !g.json {
        say!("run {id}: {source}");
    }
    super::super::interrupt::install();
    let prompt_count = prompt_rows.len();
    let shared = scheduler::Shared {
        cfg: cfg.clone(),
        settings: targets.iter().map(|t| super::super::headless::settings(&g, t)).collect(),
        targets,
        schema_of: |s| super::super::schema_arg::resolve(s).ok(),
        registry: registry.clone(),
        prompts: prompt_rows,
        expects,
        store: store.clone(),
        run: id.clone(),
        observer: Arc::new(NoObserver),
        stop: super::super::interrupt::stop(),
        judges,
        // Nothing is sent: no conversation runs again (their cells keep their checks).
        conversations: std::iter::repeat_with(|| None).take(prompt_count).collect(),
    };
    if let Err(e) = regrade(&shared, &old.id, g.json).await {
        return usage(&e);
    }
    // `select_best` needs every model's answer to a prompt: graded once they are all in.
    let _ = store.flush();
    select::run(&shared).await;
    if let Some(c) = &cache {
        c.close();
    }
    let interrupted = shared.stop.is_set();
    if let Err(e) = store.flush() {
        say!("{e}");
    }
    let ends = super::Ends { reports: &ca.report, min_pass: ca.min_pass.unwrap_or(1.0), baseline: None };
    super::finish(&store, &id, interrupted, g.json, &ends, cfg)
}

/// The checks each prompt is graded with: FILE's put on `rows` (when given), compiled; a
/// `script` check is refused without `--allow-scripts`.
fn checks(rows: &mut [PromptRow], r: &Rescore<'_>) -> Result<Vec<Option<Expect>>, u8> {
    if let Some(path) = r.prompts {
        replace_checks(rows, &new_checks(path, r)?);
    }
    let expects: Vec<Option<Expect>> =
        rows.iter().map(|p| p.expect.as_ref().and_then(|v| Expect::compile(v).ok())).collect();
    if !r.allow_scripts {
        expects.iter().flatten().try_for_each(attach_rules::refuse_scripts).map_err(|e| usage(&e))?;
    }
    Ok(expects)
}

/// A cell observer that hears nothing: a rescore prints its cells itself.
struct NoObserver;

impl scheduler::CellObserver for NoObserver {
    fn sink(&self, _: crate::runs::sink::RetryHook) -> Box<dyn crate::runs::sink::TurnSink + Send> {
        Box::new(Printer::quiet(false))
    }
    fn retried(&self) {}
    fn finished(&self, _: &str, _: &PromptRow, _: &crate::store::runs::CellRow) {}
    fn notice(&self, text: &str) {
        say!("{}", crate::text::sanitize::sanitize(text));
    }
}

/// Grades every stored cell of run `old` with the shared checks, storing each in the new run.
async fn regrade(shared: &scheduler::Shared, old: &str, json_out: bool) -> Result<(), String> {
    let mut sink = Printer::quiet(false);
    if shared.prompts.iter().any(|p| p.conversation.is_some()) {
        say!("multi-turn prompts keep their stored checks: rescore does not grade turns again");
    }
    for (p, expect) in shared.prompts.iter().zip(&shared.expects) {
        let cells = shared.store.prompt_cells(old, p.idx).map_err(|e| format!("cannot read run {old}: {e}"))?;
        for mut row in cells {
            if shared.stop.is_set() {
                return Ok(());
            }
            if p.conversation.is_some() {
                // Kept as they were: `turns` holds each turn's answer, not its checks' facts.
            } else if let (Some(expect), true) = (expect, row.ok) {
                let grader = Grader {
                    cfg: &shared.cfg,
                    registry: &shared.registry,
                    judges: &shared.judges,
                    question: &p.prompt,
                    stop: shared.stop.clone(),
                };
                let Some(results) = grader.checks(expect, &row, Asked::default(), &mut sink).await else {
                    return Ok(());
                };
                row.checks = serde_json::to_value(not_stored(results)).ok();
            } else {
                row.checks = None;
            }
            row.finished_at = crate::store::ids::now_ms();
            if json_out {
                outln!("{}", json::cell_line(&shared.run, p, &row));
            }
            shared.store.save_cell(&shared.run, row);
        }
    }
    Ok(())
}

/// A check whose fact a run does not store fails saying so, not as if the answer had failed
/// it: token log probabilities (`perplexity`) are not kept with a cell.
fn not_stored(mut results: Vec<CheckResult>) -> Vec<CheckResult> {
    for r in results.iter_mut().filter(|r| r.kind == "perplexity" && !r.pass) {
        if r.detail.as_deref().is_some_and(|d| d.starts_with("no token log probabilities")) {
            r.detail = Some("a stored run keeps no token log probabilities: rescore cannot check perplexity".into());
        }
    }
    results
}

/// The prompts of FILE, read and checked as `compare --prompts` reads them.
fn new_checks(path: &Path, r: &Rescore<'_>) -> Result<Vec<PromptItem>, u8> {
    let (text, source) = read_set(path)?;
    let shown = crate::text::sanitize::sanitize(&source).into_owned();
    let folder = match path.parent() {
        Some(p) if path.as_os_str() != "-" && !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let ws = attach_rules::folder(&folder).map_err(|e| usage(&format!("{shown}: {e}")))?;
    let set_file = |name: &str| attach_rules::set_file(&ws, name, r.allow_outside);
    let mut items = prompts::parse_with(&text, &set_file).map_err(|e| usage(&format!("{shown}: {e}")))?;
    attach_rules::check(&mut items, &ws, r.allow_outside, r.allow_scripts)
        .map_err(|e| usage(&format!("{shown}: {e}")))?;
    if items.is_empty() {
        return Err(usage(&format!("{shown}: no prompts")));
    }
    Ok(items)
}

/// Puts the checks of `items` on the stored prompts: each takes the line with its id, else the
/// line at its position. A stored prompt no line matches keeps its stored checks, and a line
/// that matches no prompt is unused; both are named.
fn replace_checks(rows: &mut [PromptRow], items: &[PromptItem]) {
    let mut used = vec![false; items.len()];
    let mut unmatched = Vec::new();
    for (pos, row) in rows.iter_mut().enumerate() {
        let by_id = items.iter().position(|i| i.id == row.id);
        let found = by_id.or_else(|| (pos < items.len() && !used[pos]).then_some(pos));
        match found {
            Some(i) => {
                used[i] = true;
                row.expect.clone_from(&items[i].expect_raw);
            }
            None => unmatched.push(row.id.clone()),
        }
    }
    if !unmatched.is_empty() {
        say!(
            "no line of the new set matches stored prompt{} {}: their stored checks are kept",
            plural(unmatched.len()),
            unmatched.join(", ")
        );
    }
    let unused: Vec<String> = items.iter().zip(&used).filter(|(_, u)| !**u).map(|(i, _)| i.id.clone()).collect();
    if !unused.is_empty() {
        say!(
            "line{} {} of the new set match{} no stored prompt: not used",
            plural(unused.len()),
            unused.join(", "),
            if unused.len() == 1 { "es" } else { "" }
        );
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Whether `action` is a rescore (it runs here, async, not with the other actions).
#[must_use]
pub fn of(action: Option<&super::super::args::CompareAction>) -> Option<Rescore<'_>> {
    match action {
        Some(super::super::args::CompareAction::Rescore { run, prompts, allow_scripts, allow_outside }) => {
            Some(Rescore {
                run,
                prompts: prompts.as_deref(),
                allow_scripts: *allow_scripts,
                allow_outside: *allow_outside,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, check: &str) -> PromptItem {
        PromptItem {
            line: 1,
            id: id.into(),
            prompt: String::new(),
            system: None,
            attach: Vec::new(),
            expect_raw: Some(serde_json::json!(check)),
            expect: None,
            vars: None,
            threshold: None,
            conversation: None,
        }
    }

    fn row(idx: u32, id: &str) -> PromptRow {
        PromptRow { idx, id: id.into(), expect: Some(serde_json::json!("old")), ..PromptRow::default() }
    }

    #[test]
    fn checks_go_to_the_prompt_with_their_id_else_to_the_one_at_their_place() {
        let mut rows = vec![row(0, "hello"), row(1, "key"), row(2, "3")];
        replace_checks(&mut rows, &[item("key", "k"), item("hello", "h"), item("9", "third")]);
        let got: Vec<_> = rows.iter().map(|r| r.expect.clone().unwrap()).collect();
        assert_eq!(got, [serde_json::json!("h"), serde_json::json!("k"), serde_json::json!("third")]);
        // A prompt whose place is taken by a line matched by id keeps its stored checks.
        let mut rows = vec![row(0, "a"), row(1, "b")];
        replace_checks(&mut rows, &[item("x", "new"), item("a", "for a")]);
        assert_eq!(rows[0].expect, Some(serde_json::json!("for a")));
        assert_eq!(rows[1].expect, Some(serde_json::json!("old")));
    }
}
