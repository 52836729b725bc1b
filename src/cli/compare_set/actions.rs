//! `palaver compare runs | show RUN | diff RUN_A RUN_B | stats`: the stored runs, one run's
//! report again, one run against another (`diff.rs`), and the arena's standings from the
//! stored votes.

use super::super::args::{CompareAction, CompareArgs, Global};
use super::super::exit::{EXIT_OK, EXIT_USAGE};
use super::{json, open_store_to_read, ratings, report, summary};
use crate::config::Paths;
use crate::engine::evals::rating::{Game, Outcome, standings_by_battle};
use crate::store::runs::{BattleRow, RunStore};
use std::io::Write;

/// Bootstrap resamples behind each rating's interval.
const BOOTSTRAP_ROUNDS: usize = 1000;

/// Runs a `compare` subcommand.
pub async fn run(
    action: &CompareAction,
    g: &Global,
    ca: &CompareArgs,
    paths: &Paths,
    cfg: &crate::config::Config,
) -> u8 {
    if let CompareAction::Cache { action } = action {
        return super::cache::run(*action, cfg, paths, g.json);
    }
    let store = match open_store_to_read(paths) {
        Ok(s) => s,
        Err(code) => return code,
    };
    match action {
        CompareAction::Runs => runs(&store, g.json),
        CompareAction::Show { run } => show(&store, run, g.json, ca, cfg),
        CompareAction::Diff { run_a, run_b, judge, rubric } => {
            let judge = judge.as_deref().map(|j| (j, rubric.as_deref().unwrap_or(super::diff_judge::DEFAULT_RUBRIC)));
            diff(&store, [run_a, run_b], g, ca, cfg, judge).await
        }
        CompareAction::Stats => stats(&store, g.json),
        // Handled above; `rescore` runs in `compare_set::rescore` (it is async).
        CompareAction::Cache { .. } | CompareAction::Rescore { .. } => EXIT_USAGE,
    }
}

/// A stored run by its ID or a unique prefix; a usage error naming it otherwise.
pub(super) fn find_run(store: &RunStore, id: &str) -> Result<crate::store::runs::RunSummary, u8> {
    match store.run(id) {
        Ok(Some(r)) => Ok(r),
        Ok(None) => {
            say!("no compare run `{}` (palaver compare runs lists them)", crate::text::sanitize::sanitize(id));
            Err(EXIT_USAGE)
        }
        Err(e) => {
            say!("{e}");
            Err(EXIT_USAGE)
        }
    }
}

/// `compare diff RUN_A RUN_B`: B against the baseline A; with `--report`, B's report with the
/// diff after its summary.
async fn diff(
    store: &RunStore,
    ids: [&str; 2],
    g: &Global,
    ca: &CompareArgs,
    cfg: &crate::config::Config,
    judge: Option<(&str, &str)>,
) -> u8 {
    let json_out = g.json;
    for r in &ca.report {
        if let Err(e) = report::format_of(r) {
            say!("{e}");
            return EXIT_USAGE;
        }
    }
    let (a, b) = match (find_run(store, ids[0]), find_run(store, ids[1])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let gate = super::diff::Gate { fail_on_regression: ca.fail_on_regression, critical: ca.critical.clone() };
    let mut d = match super::diff::check_critical(store, &a, &gate.critical)
        .and_then(|()| super::diff::compute(store, &a, &b, &gate))
    {
        Ok(d) => d,
        Err(e) => {
            say!("{e}");
            return EXIT_USAGE;
        }
    };
    if let Some((model, rubric)) = judge {
        if let Err(e) = super::diff_judge::run(g, cfg, store, [&a, &b], &mut d, model, rubric).await {
            say!("--judge: {e}");
            let stopped = crate::cli::interrupt::stop().is_set();
            return if stopped { super::super::exit::EXIT_INTERRUPTED } else { EXIT_USAGE };
        }
    }
    let regression = d.regressed(&gate);
    let mut status = if regression { super::super::exit::EXIT_CHECKS } else { EXIT_OK };
    super::diff_show::print(&d, json_out, regression, status);
    if !ca.report.is_empty() {
        let summary = match summary::compute(store, &b, cfg) {
            Ok(s) => s,
            Err(e) => {
                say!("cannot read run {}: {e}", b.id);
                return EXIT_USAGE;
            }
        };
        for r in &ca.report {
            match report::write_with(r, store, &b, &summary, Some(&d)) {
                Ok(()) if !json_out => outln!("report: {}", r.display()),
                Ok(()) => {}
                Err(e) => {
                    say!("{e}");
                    if status == EXIT_OK {
                        status = EXIT_USAGE;
                    }
                }
            }
        }
    }
    status
}

fn runs(store: &RunStore, json_out: bool) -> u8 {
    let list = match store.runs(usize::MAX) {
        Ok(l) => l,
        Err(e) => {
            say!("cannot read the runs: {e}");
            return EXIT_USAGE;
        }
    };
    let mut out = std::io::stdout().lock();
    for r in &list {
        let models: Vec<&str> = r.models.iter().map(|m| m.spec.as_str()).collect();
        if json_out {
            let mut line = serde_json::json!({"id": r.id, "created_at": crate::store::ids::rfc3339(r.created_at),
                "status": r.status, "prompts": r.prompts, "models": models, "cells_ok": r.cells_ok,
                "cells_failed": r.cells_failed, "source": r.source});
            if let Ok(b) = store.batches(&r.id).map(|b| serde_json::to_value(b).unwrap_or_default()) {
                if b.as_array().is_some_and(|a| !a.is_empty()) {
                    line["batches"] = b;
                }
            }
            let _ = writeln!(out, "{line}");
        } else {
            let total = u64::from(r.prompts) * r.models.len() as u64 * u64::from(super::settings::repeat(&r.settings));
            // A batch run ends its line with its batches as the provider last reported them.
            let batches = store.batch_state(&r.id).map(|b| format!("  {b}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "{}  {}  {:<11} {}/{} cells ({} failed)  {}  {}{}",
                r.id,
                crate::store::ids::short_date(r.created_at),
                r.status,
                r.cells_ok + r.cells_failed,
                total,
                r.cells_failed,
                crate::text::sanitize::sanitize(&models.join(" · ")),
                crate::text::sanitize::sanitize(&r.source),
                crate::text::sanitize::sanitize(&batches)
            );
        }
    }
    EXIT_OK
}

fn show(store: &RunStore, id: &str, json_out: bool, ca: &CompareArgs, cfg: &crate::config::Config) -> u8 {
    for r in &ca.report {
        if let Err(e) = report::format_of(r) {
            say!("{e}");
            return EXIT_USAGE;
        }
    }
    let run = match find_run(store, id) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let summary = match summary::compute(store, &run, cfg) {
        Ok(s) => s,
        Err(e) => {
            say!("cannot read run {}: {e}", run.id);
            return EXIT_USAGE;
        }
    };
    let status = super::exit_status(&summary, false, ca.min_pass.unwrap_or(1.0));
    let mut out = std::io::stdout().lock();
    if json_out {
        let prompts = store.prompts(&run.id).unwrap_or_default();
        for p in &prompts {
            for c in store.prompt_cells(&run.id, p.idx).unwrap_or_default() {
                let _ = writeln!(out, "{}", json::cell_line(&run.id, p, &c));
            }
        }
        let _ = writeln!(out, "{}", json::summary_line(&run, &summary, status));
    } else {
        let _ = writeln!(out, "run {} · {} · {}", run.id, crate::store::ids::short_date(run.created_at), run.status);
        let _ = write!(out, "{}", summary::table(&summary));
    }
    drop(out);
    for r in &ca.report {
        if let Err(e) = report::write(r, store, &run, &summary) {
            say!("{e}");
            return EXIT_USAGE;
        }
        if !json_out {
            outln!("report: {}", r.display());
        }
    }
    status
}

/// The arena's models (as `provider/model`) and each battle as the games its vote decided
/// between them: the best one beat each of the others; a tie or "all bad" ties every pair.
#[must_use]
pub fn games(battles: &[BattleRow]) -> (Vec<String>, Vec<Vec<Game>>) {
    let mut names: Vec<String> = Vec::new();
    let mut index = |n: String| match names.iter().position(|x| *x == n) {
        Some(i) => i,
        None => {
            names.push(n);
            names.len() - 1
        }
    };
    let mut out = Vec::new();
    for b in battles {
        let ids: Vec<usize> = b.models.iter().map(|m| index(format!("{}/{}", m.provider, m.model))).collect();
        let mut games = Vec::new();
        for i in 0..ids.len() {
            for j in i + 1..ids.len() {
                let outcome = match (b.vote.as_str(), b.best()) {
                    ("tie", _) => Outcome::Tie,
                    (_, Some(w)) if w == i => Outcome::AWins,
                    (_, Some(w)) if w == j => Outcome::BWins,
                    // A third column was best: this vote says nothing of the pair.
                    (_, Some(_)) => continue,
                    _ => Outcome::BothBad,
                };
                games.push(Game { a: ids[i], b: ids[j], outcome });
            }
        }
        out.push(games);
    }
    (names, out)
}

fn stats(store: &RunStore, json_out: bool) -> u8 {
    let battles = match store.battles() {
        Ok(v) => v,
        Err(e) => {
            say!("cannot read the votes: {e}");
            return EXIT_USAGE;
        }
    };
    let (names, g) = games(&battles);
    let s = standings_by_battle(names.len(), &g, BOOTSTRAP_ROUNDS);
    let styled_votes = ratings::styled_games(&names, &battles, &g);
    let styled = ratings::style_control(names.len(), &styled_votes);
    let mut out = std::io::stdout().lock();
    if json_out {
        let coefs = styled.as_ref().ok().map(|st| {
            let pairs = crate::engine::evals::style::FEATURES.iter().enumerate().map(|(k, f)| {
                (
                    (*f).to_owned(),
                    serde_json::json!({"coef": st.fit.coefs[k], "low": st.coef_low[k], "high": st.coef_high[k]}),
                )
            });
            serde_json::Value::Object(pairs.collect())
        });
        for (i, (n, x)) in names.iter().zip(&s).enumerate() {
            let mut line = serde_json::json!({"model": n, "votes": x.games, "wins": x.wins, "losses": x.losses,
                "ties": x.ties, "both_bad": x.both_bad, "win_rate": x.win_rate, "rating": x.rating,
                "rating_low": x.low, "rating_high": x.high, "enough_votes": x.games >= ratings::MIN_VOTES,
                "styled_votes": styled_votes.len()});
            if let (Ok(st), Some(obj)) = (&styled, line.as_object_mut()) {
                obj.insert("styled_rating".into(), st.fit.ratings[i].into());
                obj.insert("styled_low".into(), st.low[i].into());
                obj.insert("styled_high".into(), st.high[i].into());
                obj.insert("style_coefficients".into(), coefs.clone().unwrap_or_default());
            }
            let _ = writeln!(out, "{line}");
        }
    } else if battles.is_empty() {
        let _ = writeln!(
            out,
            "no arena votes yet: palaver compare --arena -m A -m B, then Tab to the vote bar and Enter on your choice after each battle"
        );
    } else {
        let _ = write!(out, "{}", ratings::table(&names, &s, styled.as_ref().map_err(String::as_str)));
        let _ = writeln!(
            out,
            "{} battle{} · Bradley–Terry rating on the Elo scale (mean 1000), 95% bootstrap interval over battles; ties and both-bad count half",
            battles.len(),
            if battles.len() == 1 { "" } else { "s" }
        );
        if styled.is_ok() {
            let _ = writeln!(
                out,
                "styled: the same fitted with answer length and markdown (headers, lists, bold) held equal, as LMArena's \
                 style control ({} rounds of bootstrap, seeded)",
                ratings::STYLED_ROUNDS
            );
        }
    }
    EXIT_OK
}
