//! `palaver compare -m A -m B [-m C -m D] -p TEXT`: the same prompt to 2–4 models at once, each
//! through its own tool loop; one failing never stops the others. Prints each answer under its
//! model's name and a metrics table, or with `--json` one result line per model (with its
//! `column`) and a `{"type":"compare"}` summary line. What stopped a column short (the token
//! limit, the content filter) is said on stderr as `-p` says it; a filtered column exits 4.

use super::args::Global;
use super::exit::{EXIT_FILTERED, EXIT_OK, EXIT_PROVIDER, EXIT_USAGE};
use super::headless::Printer;
use super::result::result_line;
use super::stopped::Stopped;
use super::target::{Target, resolve_columns};
use crate::api::client::endpoint_client;
use crate::config::Config;
use crate::engine::metrics::{ReplyMetrics, best};
use crate::engine::turn_engine::TurnStop;
use crate::runs::recorder::Recorder;
use crate::runs::turn::{Turn, TurnOutcome, run_turn};
use crate::tools::Registry;
use serde_json::{Value, json};
use std::io::Write;

/// Runs a headless compare; returns the exit status (1 when any column failed).
pub async fn run(g: &Global, cfg: &Config, registry: &Registry, prompt: &str) -> u8 {
    if !(2..=4).contains(&g.model.len()) {
        say!("compare takes 2 to 4 models (-m A -m B …), got {}", g.model.len());
        return EXIT_USAGE;
    }
    let targets = match resolve_columns(g, cfg, &g.model).await {
        Ok(t) => t,
        Err(e) => {
            say!("{}", e.0);
            return EXIT_USAGE;
        }
    };
    if let Some(note) = targets.iter().find_map(super::target::fallback_note) {
        errln!("{note}");
    }
    // Each column's window, from its server where config.toml gives none (as a `-p` run does).
    let mut cfg = cfg.clone();
    for t in &targets {
        super::target::learn_window(&mut cfg, t).await;
    }
    let cfg = &cfg;
    // Ctrl+C stops every column (each keeps and stores what arrived); a second one exits.
    super::interrupt::install();
    let store = Recorder::open_store(&super::headless::notice);
    let group = crate::store::StoreHandle::new_compare_group();
    let columns = targets.iter().enumerate().map(|(i, t)| {
        let store = store.clone();
        let group = group.clone();
        async move {
            let (mut rec, mut history) = Recorder::column(store, t, prompt, &group, i as u32);
            let mut printer = Printer::quiet(g.json);
            let out = match endpoint_client(&t.endpoint) {
                Ok(http) => {
                    let settings = super::headless::settings(g, t);
                    let turn = Turn { target: t, settings, registry, http: &http, stop: super::interrupt::stop() };
                    Some(run_turn(&turn, &mut history, &mut rec, &mut printer).await)
                }
                Err(e) => {
                    say!("{}: cannot start the HTTP client: {e}", t.model);
                    None
                }
            };
            rec.sync();
            out
        }
    });
    let outcomes = futures_util::future::join_all(columns).await;
    let metrics: Vec<Option<ReplyMetrics>> = outcomes
        .iter()
        .zip(&targets)
        .map(|(o, t)| o.as_ref().map(|o| ReplyMetrics::of(&o.msg, cfg, &t.model)))
        .collect();
    // The model each server named, where it is not the one asked for.
    let served: Vec<Option<String>> = outcomes
        .iter()
        .zip(&targets)
        .map(|(o, t)| o.as_ref().and_then(|o| o.msg.meta.model.clone()).filter(|m| *m != t.model))
        .collect();
    // `--schema`: each column's answer checked against it (`None` for a column that failed).
    let schema = targets.first().and_then(|t| super::headless::settings(g, t).schema);
    let verdicts: Vec<Option<crate::engine::structured::Verdict>> = outcomes
        .iter()
        .map(|o| {
            o.as_ref()
                .filter(|o| o.msg.error.is_none())
                .zip(schema.as_ref())
                .map(|(o, s)| s.check(&o.msg.main().content))
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if g.json {
        for (i, (o, t)) in outcomes.iter().zip(&targets).enumerate() {
            if let Some(o) = o {
                let mut r = result_line(t.api.name(), &t.provider, &t.model, &o.msg, &o.calls);
                if let Some(obj) = r.as_object_mut() {
                    obj.insert("column".into(), json!(i));
                    let window = cfg.model_facts(&t.model).and_then(|f| f.context_window).filter(|w| *w > 0);
                    let asked = [crate::engine::Message::user(prompt)];
                    let context = super::compacting::context_json(&asked, &o.msg, g.system.as_deref(), window);
                    obj.insert("context".into(), context);
                    if let Some(v) = &verdicts[i] {
                        obj.insert("output_json".into(), v.value.clone().unwrap_or_default());
                        obj.insert("schema".into(), json!(v));
                    }
                    if let Some(n) = o.notice.clone().or_else(|| stop_notice(o)) {
                        obj.insert("notice".into(), json!(n));
                    }
                }
                let _ = writeln!(out, "{r}");
            }
        }
        let _ = writeln!(out, "{}", summary(&targets, &metrics, &group));
    } else {
        for ((o, t), v) in outcomes.iter().zip(&targets).zip(&verdicts) {
            let served = o.as_ref().and_then(|o| o.msg.meta.model.as_deref());
            let label = crate::engine::target::model_label(Some(&t.model), served);
            let head = crate::text::sanitize::sanitize(&format!("── {label} ({}) ──", t.provider)).into_owned();
            let _ = writeln!(out, "{head}");
            match o {
                Some(o) => {
                    let _ = writeln!(out, "{}", o.msg.main().content);
                    if let Some(e) = &o.msg.error {
                        let _ = writeln!(out, "[error: {}]", e.message);
                    } else if let Some(s) = Stopped::of(&o.msg) {
                        let _ = writeln!(out, "[{}]", s.short());
                    }
                    match v.as_ref().map(|v| (v.valid, v.first_error())) {
                        Some((true, _)) => {
                            let _ = writeln!(out, "[✓ follows the schema]");
                        }
                        Some((false, why)) => {
                            let why = crate::text::sanitize::sanitize(&why.unwrap_or_default()).into_owned();
                            let _ = writeln!(out, "[✗ does not follow the schema {why}]");
                        }
                        None => {}
                    }
                }
                None => {
                    let _ = writeln!(out, "[did not run]");
                }
            }
            let _ = writeln!(out);
        }
        let _ = write!(out, "{}", table(&targets, &metrics, &served));
    }
    let _ = out.flush();
    drop(out);
    for (o, t) in outcomes.iter().zip(&targets) {
        if let Some(n) = o.as_ref().and_then(|o| o.notice.clone().or_else(|| stop_notice(o))) {
            say!("{}: {}", crate::text::sanitize::sanitize(&t.model), crate::text::sanitize::sanitize(&n));
        }
    }
    match exit_status(&outcomes) {
        EXIT_OK if verdicts.iter().flatten().any(|v| !v.valid) => super::exit::EXIT_CHECKS,
        code => code,
    }
}

/// What stopped a column's reply short, when its turn has no notice of its own.
fn stop_notice(o: &TurnOutcome) -> Option<String> {
    Stopped::of(&o.msg).filter(|_| o.account.stop != Some(TurnStop::CutCall)).map(|s| s.notice(&o.msg))
}

/// The run's exit status: interrupted, else 1 when any column failed (or could not run), else
/// 4 when the content filter stopped any column's reply (as `-p` does for one), else 0.
fn exit_status(outcomes: &[Option<TurnOutcome>]) -> u8 {
    let cancelled = outcomes.iter().flatten().any(|o| o.account.stop == Some(TurnStop::Cancelled));
    let failed = outcomes.iter().any(|o| o.as_ref().is_none_or(|o: &TurnOutcome| o.msg.error.is_some()));
    let filtered = outcomes.iter().flatten().any(|o| Stopped::of(&o.msg) == Some(Stopped::ContentFilter));
    if cancelled {
        super::exit::EXIT_INTERRUPTED
    } else if failed {
        EXIT_PROVIDER
    } else if filtered {
        EXIT_FILTERED
    } else {
        EXIT_OK
    }
}

fn summary(targets: &[Target], metrics: &[Option<ReplyMetrics>], group: &str) -> Value {
    let col = |f: &dyn Fn(&ReplyMetrics) -> Option<f64>| -> Vec<Option<f64>> {
        metrics.iter().map(|m| m.as_ref().and_then(f)).collect()
    };
    #[allow(clippy::cast_precision_loss)]
    let ttft = col(&|m| m.ttft_ms.map(|v| v as f64));
    let tps = col(&|m| m.tokens_per_s);
    let cost = col(&|m| m.cost);
    let name = |i: Option<usize>| i.map(|i| targets[i].model.clone());
    let columns: Vec<Value> = targets
        .iter()
        .zip(metrics)
        .enumerate()
        .map(|(i, (t, m))| {
            let m = m.clone().unwrap_or_default();
            json!({"column": i, "model": t.model, "provider": t.provider, "ttft_ms": m.ttft_ms, "tokens_per_s": m.tokens_per_s,
                "tokens_per_s_estimated": m.tps_estimated, "total_ms": m.total_ms, "prompt_tokens": m.usage.prompt,
                "completion_tokens": m.usage.completion, "cached_tokens": m.usage.cached, "reasoning_tokens": m.usage.reasoning,
                "cost": m.cost, "cost_estimated": m.cost_estimated, "finish_reason": m.finish_reason, "safety_flag": m.safety_flag})
        })
        .collect();
    json!({"type": "compare", "compare_group": group, "models": targets.iter().map(|t| &t.model).collect::<Vec<_>>(),
        "fastest_ttft": name(best(&ttft, true)), "fastest_tokens_per_s": name(best(&tps, false)),
        "cheapest": name(best(&cost, true)), "columns": columns})
}

fn table(targets: &[Target], metrics: &[Option<ReplyMetrics>], served: &[Option<String>]) -> String {
    let mut s = format!(
        "{:<24} {:>9} {:>9} {:>9} {:>8} {:>10} {:>9} {:>10} {}\n",
        "model", "ttft", "tok/s", "total", "prompt", "completion", "reasoning", "cost", "finish"
    );
    let dash = || "-".to_owned();
    for ((t, m), served) in targets.iter().zip(metrics).zip(served) {
        let m = m.clone().unwrap_or_default();
        let served =
            served.as_deref().map(|s| format!(" (served {})", crate::text::sanitize::sanitize(s))).unwrap_or_default();
        let tps = m.tokens_per_s.map_or_else(dash, |v| format!("{v:.1}{}", if m.tps_estimated { "~" } else { "" }));
        s.push_str(&format!(
            "{:<24} {:>9} {:>9} {:>9} {:>8} {:>10} {:>9} {:>10} {}{}{}\n",
            crate::tools::clip(&t.model, 24),
            m.ttft_ms.map_or_else(dash, |v| format!("{v} ms")),
            tps,
            m.total_ms.map_or_else(dash, |v| format!("{:.2} s", v as f64 / 1000.0)),
            m.usage.prompt.map_or_else(dash, |v| v.to_string()),
            m.usage.completion.map_or_else(dash, |v| v.to_string()),
            m.usage.reasoning.map_or_else(dash, |v| v.to_string()),
            m.cost.map_or_else(dash, |c| crate::engine::metrics::money_label(c, m.cost_estimated)),
            m.finish_reason.as_deref().unwrap_or("-"),
            if m.safety_flag { " ⚑ safety" } else { "" },
            served
        ));
    }
    s
}
