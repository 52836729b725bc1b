//! `palaver compare --prompts FILE` and `--resume RUN`: every prompt of a set against every
//! model, kept in the store as a run whose cells are saved as they finish, resumable after a
//! Ctrl+C or a crash; then the summary, `--report` files and `--json` lines. `compare runs`,
//! `compare show RUN` and `compare stats` are in `actions.rs`.
//!
//! Exit status: 130 interrupted (resume it), 1 when a cell failed (provider/API error), 3 when
//! a model passed fewer `expect` checks than `--min-pass` (or, with `--baseline`, regressed:
//! `diff.rs`), else 0; usage errors are 2.

pub mod actions;
mod attach_rules;
mod batch_judges;
pub mod cache;
pub mod diff;
pub mod diff_judge;
pub mod diff_show;
pub mod json;
pub mod judges;
mod observer;
pub mod output;
pub mod progress;
pub mod promptfoo;
pub mod rates;
pub mod ratings;
pub mod report;
pub mod report_filter;
pub mod report_html;
pub mod rescore;
mod select;
pub mod settings;
pub mod summary;

use super::args::{CompareArgs, Global};
use super::exit::{EXIT_CHECKS, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use super::target::resolve_columns;
use crate::config::{Config, Paths};
use crate::engine::evals::expect::Expect;
use crate::engine::evals::prompts;
use crate::engine::evals::turns::Conversation;
use crate::runs::{batch, scheduler};
use crate::store::runs::{PromptRow, RunModel, RunStore, RunSummary};
use crate::tools::Registry;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

/// Requests in flight per provider when `--concurrency` is not given.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Most models a set runs against.
pub const MAX_MODELS: usize = 8;

fn usage(msg: &str) -> u8 {
    say!("{msg}");
    EXIT_USAGE
}

/// Opens the run store (a run without one could not be resumed: that is an error).
pub(crate) fn open_store(paths: &Paths) -> Result<Arc<RunStore>, u8> {
    let path = paths.database();
    RunStore::open(&path)
        .map(Arc::new)
        .map_err(|e| usage(&format!("cannot open the run store {}: {e}", path.display())))
}

/// Opens the run store to read it (`compare runs|show|stats`): read-only when it cannot be
/// written (a read-only mount, a full disk), so the runs and votes can still be looked at.
pub(crate) fn open_store_to_read(paths: &Paths) -> Result<Arc<RunStore>, u8> {
    let path = paths.database();
    RunStore::open(&path)
        .or_else(|e| RunStore::open_read_only(&path).map_err(|_| e))
        .map(Arc::new)
        .map_err(|e| usage(&format!("cannot open the run store {}: {e}", path.display())))
}

/// Reads the prompt set named by `--prompts` (`-`: stdin).
fn read_set(path: &std::path::Path) -> Result<(String, String), u8> {
    use crate::sys::read::{INPUT_FILE, capped_string, file_string};
    if path.as_os_str() == "-" {
        return match capped_string(std::io::stdin().lock(), INPUT_FILE) {
            Ok(s) => Ok((s, "-".into())),
            Err(e) => Err(usage(&e.about("cannot read the prompt set from stdin"))),
        };
    }
    match file_string(path, INPUT_FILE) {
        Ok(s) => Ok((s, path.display().to_string())),
        Err(e) => Err(usage(&e.about(&format!("cannot read the prompt set {}", path.display())))),
    }
}

/// Runs a new prompt set (`--prompts`) or the missing cells of a stored run (`--resume`).
pub async fn run(g: &Global, cfg: &Config, paths: &Paths, registry: &Registry, ca: &CompareArgs) -> u8 {
    let concurrency = match flags(g, ca) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // A promptfoo config's providers are profiles of this run only: `cfg` and `-m` are its own.
    let (mut cfg, mut g) = (cfg.clone(), g.clone());
    let loaded = match (&ca.promptfoo, &g.resume) {
        (Some(_), Some(_)) => return usage("--resume RUN finishes a stored run: leave out --promptfoo"),
        (Some(path), None) => {
            match promptfoo::load(path, ca).and_then(|l| promptfoo::apply(&mut g, &mut cfg, &l).map(|()| l)) {
                Ok(l) => Some(l),
                Err(e) => return usage(&e),
            }
        }
        (None, _) => None,
    };
    // Opened before the run is stored: a `cache_ttl` that cannot be read leaves nothing behind.
    let cache = match cache::open(&cfg, paths, ca.no_cache) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    let store = match open_store(paths) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let baseline = match baseline_of(&store, ca) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let (g, run, prompt_rows, ready) = match &g.resume {
        Some(id) => match resume(&g, &store, id) {
            Ok((g, run, rows)) => (g, run, rows, None),
            Err(code) => return code,
        },
        None => match start(&g, &cfg, &store, ca, loaded).await {
            Ok(v) => v,
            Err(code) => return code,
        },
    };
    promptfoo::restore(&run.settings, &mut cfg);
    let cfg = &cfg;
    // One process per run: a second `--resume` of a run in progress would send its cells twice.
    let _lock = match crate::store::lock::try_lock(&paths.database(), &run.id) {
        Ok(Some(l)) => Some(l),
        Ok(None) => return usage(&format!("run {} is being run by another palaver; wait for it, or stop it", run.id)),
        Err(_) => None,
    };
    let mut targets = match resolve_columns(&g, cfg, &g.model).await {
        Ok(t) => t,
        Err(e) => return usage(&e.0),
    };
    if let Some(note) = targets.iter().find_map(super::target::fallback_note) {
        errln!("{note}");
    }
    let (expects, conversations) = match checks_of(&prompt_rows, ca, &run.id) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let every = with_turns(&expects, conversations.iter().flatten());
    let mut judges = match ready {
        Some(j) => j,
        None => match judges::prepare(&g, cfg, &every).await {
            Ok(j) => j,
            Err(e) => return usage(&e),
        },
    };
    if let Some(c) = &cache {
        cache::attach(c, &mut targets, &mut judges);
    }
    let done = match store.done_cells(&run.id, ca.retry_failed) {
        Ok(d) => d,
        Err(e) => return usage(&format!("cannot read run {}: {e}", run.id)),
    };
    let repeat = settings::repeat(&run.settings);
    let models = targets.len();
    let todo: Vec<scheduler::Todo> = (0..prompt_rows.len())
        .flat_map(|p| (0..models).flat_map(move |m| (0..repeat).map(move |s| (p, m, s))))
        .filter(|&(p, m, s)| !done.contains(&(prompt_rows[p].idx, u32::try_from(m).unwrap_or(u32::MAX), s)))
        .collect();
    let total = (prompt_rows.len() * targets.len()) as u64 * u64::from(repeat);
    super::interrupt::install();
    let progress = Arc::new(progress::Progress::new(total, done.len() as u64));
    store.set_status(&run.id, "running");
    let seed = settings::seed(&run.settings);
    let settings = targets
        .iter()
        .map(|t| crate::engine::target::TurnSettings { seed, ..super::headless::settings(&g, t) })
        .collect();
    let shared = Arc::new(scheduler::Shared {
        cfg: cfg.clone(),
        targets,
        settings,
        schema_of: |s| super::schema_arg::resolve(s).ok(),
        registry: registry.clone(),
        prompts: prompt_rows,
        expects,
        conversations,
        store: store.clone(),
        run: run.id.clone(),
        observer: Arc::new(observer::Observer { progress: progress.clone(), json: g.json }),
        stop: super::interrupt::stop(),
        judges,
    });
    let is_batch = run.settings.get("batch").is_some_and(|b| !b.is_null());
    if let Err(code) = run_cells(&shared, todo, concurrency, &progress, is_batch, &run.id).await {
        return code;
    }
    let interrupted = super::interrupt::stop().is_set();
    // The answers kept are on disk before the process ends.
    if let Some(c) = &cache {
        c.close();
    }
    if let Err(e) = store.flush() {
        say!("{e}");
    }
    let ends = Ends { reports: &ca.report, min_pass: ca.min_pass.unwrap_or(1.0), baseline: baseline.as_ref() };
    finish(&store, &run.id, interrupted, g.json, &ends, cfg)
}

/// Runs the cells to do (the progress bar drawn on a terminal), then what grades a run once
/// its answers are in: a batch's judges, and `select_best`.
async fn run_cells(
    shared: &Arc<scheduler::Shared>,
    todo: Vec<scheduler::Todo>,
    concurrency: usize,
    progress: &Arc<progress::Progress>,
    is_batch: bool,
    run_id: &str,
) -> Result<(), u8> {
    if is_batch {
        batch_api_check(&shared.targets)?;
    }
    let work = {
        let shared = shared.clone();
        async move {
            if is_batch {
                // A batch run has one sample a cell (`--repeat` is refused with `--batch`).
                let todo: Vec<(usize, usize)> = todo.iter().map(|&(p, m, _)| (p, m)).collect();
                Some(batch::run(shared, &todo).await)
            } else {
                scheduler::run(shared, todo, concurrency).await;
                None
            }
        }
    };
    let ended = if std::io::stderr().is_terminal() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let bar = progress.clone();
        let drawer = tokio::spawn(async move { bar.draw_until(async { drop(rx.await) }).await });
        let ended = work.await;
        let _ = tx.send(());
        let _ = drawer.await;
        ended
    } else {
        work.await
    };
    if ended == Some(batch::Ended::Interrupted) {
        say!("the batches keep running at the provider; gather them with: palaver compare --resume {run_id}");
    }
    // The checks decided after the answers read the stored cells: every cell written first.
    let _ = shared.store.flush();
    if is_batch {
        // A batch line makes no judge call: the judges grade the gathered answers now.
        batch_judges::run(shared).await;
    }
    // `select_best` needs every model's answer to a prompt: it runs once they are in.
    select::run(shared).await;
    Ok(())
}

/// The flags checked before anything is read or sent; the workers per provider.
fn flags(g: &Global, ca: &CompareArgs) -> Result<usize, u8> {
    for r in &ca.report {
        if let Err(e) = report::format_of(r) {
            return Err(usage(&e));
        }
    }
    if ca.min_pass.is_some_and(|m| !(0.0..=1.0).contains(&m)) {
        return Err(usage("--min-pass takes a share between 0 and 1, e.g. 0.9"));
    }
    if ca.retry_failed && g.resume.is_none() {
        return Err(usage("--retry-failed goes with --resume RUN"));
    }
    if g.resume.is_some() && (ca.repeat.is_some() || ca.seed.is_some()) {
        return Err(usage("a resumed run keeps its --repeat and --seed (leave them out)"));
    }
    let concurrency = ca.concurrency.unwrap_or(DEFAULT_CONCURRENCY);
    if concurrency == 0 {
        return Err(usage("--concurrency takes 1 or more"));
    }
    if (ca.fail_on_regression || !ca.critical.is_empty()) && ca.baseline.is_none() {
        return Err(usage("--fail-on-regression and --critical go with --baseline RUN (or compare diff RUN_A RUN_B)"));
    }
    Ok(concurrency)
}

/// `--baseline RUN`, checked before anything is sent: a typo must not cost a whole run.
fn baseline_of(store: &RunStore, ca: &CompareArgs) -> Result<Option<(RunSummary, diff::Gate)>, u8> {
    let Some(id) = &ca.baseline else { return Ok(None) };
    let b = actions::find_run(store, id)?;
    let gate = diff::Gate { fail_on_regression: ca.fail_on_regression, critical: ca.critical.clone() };
    diff::check_critical(store, &b, &gate.critical).map_err(|e| usage(&e))?;
    Ok(Some((b, gate)))
}

/// The stored prompts' checks and conversations, compiled again from what the store kept (a
/// resumed run has no file to read); their scripts run only when this command allows them too.
#[allow(clippy::type_complexity)]
fn checks_of(
    prompt_rows: &[PromptRow],
    ca: &CompareArgs,
    run: &str,
) -> Result<(Vec<Option<Expect>>, Vec<Option<Conversation>>), u8> {
    let expects: Vec<Option<Expect>> =
        prompt_rows.iter().map(|p| p.expect.as_ref().and_then(|v| Expect::compile(v).ok())).collect();
    let conversations: Vec<Option<Conversation>> =
        prompt_rows.iter().map(|p| p.conversation.as_ref().and_then(|v| Conversation::compile(v).ok())).collect();
    if !ca.allow_scripts {
        let every = with_turns(&expects, conversations.iter().flatten());
        every
            .iter()
            .flatten()
            .try_for_each(attach_rules::refuse_scripts)
            .map_err(|e| usage(&format!("run {run}: {e}")))?;
    }
    Ok((expects, conversations))
}

/// What a finished run is held to and written into.
pub(super) struct Ends<'a> {
    pub(super) reports: &'a [std::path::PathBuf],
    pub(super) min_pass: f64,
    /// `--baseline`: the run to diff against, and when the diff fails the run.
    pub(super) baseline: Option<&'a (RunSummary, diff::Gate)>,
}

/// Marks the run, prints the summary (or the JSON summary line), writes the reports, and
/// returns the exit status.
pub(super) fn finish(store: &RunStore, id: &str, interrupted: bool, json: bool, ends: &Ends<'_>, cfg: &Config) -> u8 {
    let Ok(Some(mut run)) = store.run(id) else { return usage(&format!("run {id} vanished from the store")) };
    let cells = u64::from(run.prompts) * run.models.len() as u64 * u64::from(settings::repeat(&run.settings));
    let complete = run.cells_ok + run.cells_failed >= cells;
    run.status = if complete { "finished" } else { "interrupted" }.to_owned();
    store.set_status(id, &run.status);
    let _ = store.flush();
    let summary = match summary::compute(store, &run, cfg) {
        Ok(s) => s,
        Err(e) => return usage(&format!("cannot read run {id}: {e}")),
    };
    let mut status = exit_status(&summary, interrupted && !complete, ends.min_pass);
    let diffed = match ends.baseline.map(|(b, gate)| diff::compute(store, b, &run, gate).map(|d| (d, gate))) {
        Some(Ok((d, gate))) => Some((d.regressed(gate), d)),
        Some(Err(e)) => {
            say!("{e}");
            None
        }
        None => None,
    };
    if status == EXIT_OK && diffed.as_ref().is_some_and(|(regressed, _)| *regressed) {
        status = EXIT_CHECKS;
    }
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", json::summary_line(&run, &summary, status));
    } else {
        let _ = writeln!(out, "run {}", run.id);
        let _ = write!(out, "{}", summary::table(&summary));
        if let Some(note) = batch_note(&run.settings) {
            let _ = writeln!(out, "{note}");
        }
    }
    drop(out);
    if let Some((regressed, d)) = &diffed {
        diff_show::print(d, json, *regressed, status);
    }
    for r in ends.reports {
        match report::write_with(r, store, &run, &summary, diffed.as_ref().map(|(_, d)| d)) {
            Ok(()) if !json => {
                outln!("report: {}", r.display());
            }
            Ok(()) => {}
            Err(e) => {
                say!("{e}");
                if status == EXIT_OK {
                    status = EXIT_USAGE;
                }
            }
        }
    }
    if let Some(page) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        if let Err(e) = report::append_step_summary(std::path::Path::new(&page), store, &run, &summary) {
            say!("{e}");
        }
    }
    if interrupted && !complete {
        say!("interrupted; finished cells are kept: palaver compare --resume {}", run.id);
    } else if !complete {
        say!("{} cells were not stored; run them with: palaver compare --resume {}", summary.missing, run.id);
    }
    status
}

/// Refuses (exit 2, before anything is sent) a batch run with a model whose provider has no
/// batch API, naming each.
fn batch_api_check(targets: &[crate::engine::target::Target]) -> Result<(), u8> {
    let missing = batch::without_batch_api(targets);
    if missing.is_empty() {
        return Ok(());
    }
    Err(usage(&format!(
        "--batch: no batch API for {} (a provider's profile says `batch = true` when it has one)",
        missing.join(", ")
    )))
}

/// The prompts' checks and every conversation's turns' (their judges are set up, their
/// scripts allowed or refused, alike).
fn with_turns<'a>(expects: &[Option<Expect>], convs: impl Iterator<Item = &'a Conversation>) -> Vec<Option<Expect>> {
    expects.iter().cloned().chain(convs.flat_map(|c| c.expects().cloned().map(Some))).collect()
}

/// The checks a batch run cannot keep: `max_latency_ms` (a batch line has no duration) and
/// `script` (a batch's answers are graded as they are gathered, where no program runs).
/// Refused before anything is sent, naming the line, rather than stored as a failure the run
/// never checked. (`judge` checks grade the answers once the batches are gathered.)
fn batch_checks(items: &[prompts::PromptItem]) -> Result<(), String> {
    use crate::engine::evals::expect::Test;
    for item in items {
        if item.conversation.is_some() {
            return Err(format!(
                "line {}: a multi-turn line (`turns`, `tool_outputs`) is not run on --batch runs (a batch line is one request; drop --batch)",
                item.line
            ));
        }
        let Some(e) = &item.expect else { continue };
        if e.has(|t| matches!(t, Test::MaxLatencyMs(_))) {
            return Err(format!(
                "line {}: a `max_latency_ms` check is not run on --batch runs (a batch line has no duration; drop --batch, or the check)",
                item.line
            ));
        }
        if e.scripts().next().is_some() {
            return Err(format!(
                "line {}: a `script` check is not run on --batch runs (drop --batch, or the check)",
                item.line
            ));
        }
    }
    Ok(())
}

/// The summary's note on a batch run's prices: `costs at the batch price (batch −50%)`.
fn batch_note(settings: &serde_json::Value) -> Option<String> {
    let discounts = settings.pointer("/batch/discounts")?.as_array()?;
    let mut shown: Vec<String> = Vec::new();
    for d in discounts.iter().filter_map(serde_json::Value::as_f64) {
        let label = format!("batch −{}%", (d * 100.0).round());
        if !shown.contains(&label) {
            shown.push(label);
        }
    }
    (!shown.is_empty()).then(|| format!("costs at the batch price ({})", shown.join(", ")))
}

/// The exit status for a summary: 130 interrupted, 1 a cell failed or missing, 3 checks below
/// `min_pass`, else 0.
#[must_use]
pub fn exit_status(s: &summary::Summary, interrupted: bool, min_pass: f64) -> u8 {
    if interrupted {
        EXIT_INTERRUPTED
    } else if s.models.iter().any(|m| m.failed > 0) || s.missing > 0 {
        // Cells that are neither answered nor failed were lost (a store that could not write
        // them, a provider whose client could not start): the run did not do its job.
        EXIT_PROVIDER
    } else if s.models.iter().any(|m| m.pass_rate.is_some_and(|r| r + 1e-9 < min_pass)) {
        EXIT_CHECKS
    } else {
        EXIT_OK
    }
}

/// A new run: reads and checks the set, resolves the models, stores the run with its prompts.
async fn start(
    g: &Global,
    cfg: &Config,
    store: &RunStore,
    ca: &CompareArgs,
    loaded: Option<promptfoo::Loaded>,
) -> Result<(Global, RunSummary, Vec<PromptRow>, Option<crate::runs::judge::Judges>), u8> {
    let Some(path) = ca.prompts.as_ref().or(ca.promptfoo.as_ref()) else {
        return Err(usage("give --prompts FILE or --promptfoo CONFIG (or --resume RUN)"));
    };
    if g.model.is_empty() || g.model.len() > MAX_MODELS {
        return Err(usage(&format!(
            "a prompt set takes 1 to {MAX_MODELS} models (-m A -m B …), got {}",
            g.model.len()
        )));
    }
    // `attach` paths, `vars`, judge prompt and schema files are the set's: read from its own
    // folder (a set on stdin: the current one), by one rule.
    let folder = match path.parent() {
        Some(p) if path.as_os_str() != "-" && !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let source = path.display().to_string();
    let shown = crate::text::sanitize::sanitize(&source).into_owned();
    let ws = attach_rules::folder(&folder).map_err(|e| usage(&format!("{shown}: {e}")))?;
    let set_file = |name: &str| attach_rules::set_file(&ws, name, ca.allow_outside);
    let kept_providers = loaded.as_ref().map(promptfoo::kept);
    let mut items = match loaded {
        Some(l) => l.items,
        None => {
            let (text, _) = read_set(path)?;
            prompts::parse_with(&text, &set_file).map_err(|e| usage(&format!("{shown}: {e}")))?
        }
    };
    attach_rules::check(&mut items, &ws, ca.allow_outside, ca.allow_scripts)
        .map_err(|e| usage(&format!("{shown}: {e}")))?;
    let targets = resolve_columns(g, cfg, &g.model).await.map_err(|e| usage(&e.0))?;
    if ca.batch && ca.repeat.is_some_and(|n| n > 1) {
        return Err(usage("--repeat takes one sample a cell with --batch: drop one of them"));
    }
    if ca.batch {
        batch_api_check(&targets)?;
        batch_checks(&items).map_err(|e| usage(&format!("{}: {e}", crate::text::sanitize::sanitize(&source))))?;
    }
    // Judges are set up before the run is stored: one that cannot be is a usage error that
    // leaves nothing behind.
    let expects: Vec<Option<Expect>> = items.iter().map(|i| i.expect.clone()).collect();
    let conversations: Vec<Conversation> =
        items.iter().filter_map(|i| i.conversation.as_ref().and_then(|v| Conversation::compile(v).ok())).collect();
    let judges = judges::prepare(g, cfg, &with_turns(&expects, conversations.iter())).await.map_err(|e| usage(&e))?;
    let schema = match g.schema.as_deref().map(crate::cli::schema_arg::resolve) {
        Some(Ok(s)) => Some(s.schema),
        Some(Err(e)) => return Err(usage(&e)),
        None => None,
    };
    let models: Vec<RunModel> = g
        .model
        .iter()
        .zip(&targets)
        .map(|(spec, t)| RunModel { spec: spec.clone(), model: t.model.clone(), provider: t.provider.clone() })
        .collect();
    let rows: Vec<PromptRow> = items
        .into_iter()
        .enumerate()
        .map(|(i, p)| PromptRow {
            idx: u32::try_from(i).unwrap_or(u32::MAX),
            id: p.id,
            prompt: p.prompt,
            system: p.system,
            attach: p.attach,
            vars: p.vars,
            threshold: p.threshold,
            // `--schema` is every prompt's schema (every turn's): sent, and a check of the report.
            expect: match (&schema, &p.conversation) {
                (Some(s), None) => Some(crate::engine::evals::prompts::with_schema(p.expect_raw, s.clone())),
                _ => p.expect_raw,
            },
            conversation: match &schema {
                Some(s) => p.conversation.map(|c| crate::engine::evals::turns::with_schema(c, s)),
                None => p.conversation,
            },
        })
        .collect();
    let mut kept = settings::of(g);
    if let Some(p) = kept_providers {
        kept["promptfoo"] = p;
    }
    if ca.batch {
        // A batch run resumes as one: its cells wait in the provider's batches.
        let discounts: Vec<f64> = targets.iter().map(|t| t.batch.map_or(0.0, |b| b.discount)).collect();
        kept["batch"] = serde_json::json!({ "discounts": discounts });
    }
    // Kept only when asked for, so a run without them reads as before.
    if ca.repeat.is_some() || ca.seed.is_some() {
        kept["repeat"] = serde_json::json!(ca.repeat.unwrap_or(1));
        kept["seed"] = serde_json::json!(ca.seed.unwrap_or(0));
    }
    let id = store
        .create_run(&models, &kept, &source, rows.clone())
        .map_err(|e| usage(&format!("cannot store the run: {e}")))?;
    let run = store.run(&id).ok().flatten().ok_or_else(|| usage("the new run is not in the store"))?;
    if !g.json && std::io::stderr().is_terminal() {
        say!("run {id}: {} prompts × {} models", run.prompts, run.models.len());
    }
    Ok((g.clone(), run, rows, Some(judges)))
}

/// A stored run to finish: its models, settings and prompts come from the store.
fn resume(g: &Global, store: &RunStore, id: &str) -> Result<(Global, RunSummary, Vec<PromptRow>), u8> {
    let run = match store.run(id) {
        Ok(Some(r)) => r,
        Ok(None) => return Err(usage(&format!("no compare run `{id}` (palaver compare runs lists them)"))),
        Err(e) => return Err(usage(&e.to_string())),
    };
    let specs: Vec<String> = run.models.iter().map(|m| m.spec.clone()).collect();
    if !g.model.is_empty() && g.model != specs {
        return Err(usage(&format!(
            "run {} compares {}; a resumed run keeps its models (leave out -m)",
            run.id,
            specs.join(", ")
        )));
    }
    let mut g = settings::apply(g, &run.settings);
    g.model = specs;
    g.resume = None;
    let prompts = store.prompts(&run.id).map_err(|e| usage(&e.to_string()))?;
    Ok((g, run, prompts))
}
