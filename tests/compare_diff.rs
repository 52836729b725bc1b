//! Run against run through the binary: a scripted server on 127.0.0.1 answers a 12-prompt set
//! for two models, first well, then with a planted regression (eight prompts broken on one
//! model), then well again, then with one prompt broken. `compare diff` and `--baseline` must
//! name the broken prompts with a p-value under 0.05 and exit 3 under `--fail-on-regression`
//! (0 without it); an unchanged pair says "no significant change" and exits 0; a `--critical`
//! prompt breaking alone exits 3.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

mod scripted;

use common::cli::{err, lines, run};
use scripted::{Reply, Server};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the server breaks: nothing, prompts 1–8 on m1, or prompt 3 on m1.
const WELL: usize = 0;
const PLANTED: usize = 1;
const ONE: usize = 2;

fn answer(text: &str) -> String {
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let stop = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}});
    format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n")
}

/// A server that says the word each prompt asks for, unless `mode` breaks that prompt.
fn server(mode: Arc<AtomicUsize>) -> Server {
    Server::start_fn(move |seen| {
        let v: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
        if v["model"] == "judge" {
            return Reply::sse(&answer(&judge_pick(&v)));
        }
        let prompt = v["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
        let n: usize = prompt.trim_start_matches("Say w").trim_end_matches('x').parse().unwrap_or(0);
        let broken = v["model"] == "m1"
            && match mode.load(Ordering::SeqCst) {
                PLANTED => (1..=8).contains(&n),
                ONE => n == 3,
                _ => false,
            };
        Reply::sse(&answer(&if broken { "Sorry, I cannot.".to_owned() } else { format!("Here: w{n}x") }))
    })
}

/// A scripted judge: the answer that says its word, else always the first shown (a judge that
/// favours a place, whose pick then flips with the order).
fn judge_pick(body: &Value) -> String {
    let text: String =
        body["messages"].as_array().into_iter().flatten().filter_map(|m| m["content"].as_str()).collect();
    let b_says = text.split("### Answer B").nth(1).is_some_and(|b| b.contains("Here:"));
    let a_says = text
        .split("### Answer B")
        .next()
        .and_then(|a| a.split("### Answer A").nth(1))
        .is_some_and(|a| a.contains("Here:"));
    let best = if b_says && !a_says { "B" } else { "A" };
    serde_json::json!({"best": best, "reason": "scripted"}).to_string()
}

fn newest_run(home: &Path) -> String {
    let ls = lines(&run(home, &["compare", "runs", "--json"]));
    ls[0]["id"].as_str().unwrap().to_owned()
}

struct Bench {
    home: tempfile::TempDir,
    mode: Arc<AtomicUsize>,
    server: Server,
}

impl Bench {
    fn new() -> Self {
        let home = tempfile::tempdir().unwrap();
        let set: String = (1..=12)
            .map(|i| format!("{{\"id\":\"q{i}\",\"prompt\":\"Say w{i}x\",\"expect\":{{\"contains\":\"w{i}x\"}}}}\n"))
            .collect();
        std::fs::write(home.path().join("set.jsonl"), set).unwrap();
        let mode = Arc::new(AtomicUsize::new(WELL));
        let server = server(mode.clone());
        Self { home, mode, server }
    }

    /// Runs the set in `mode` with `more` flags; its output and the new run's id.
    fn run_set(&self, mode: usize, more: &[&str]) -> (std::process::Output, String) {
        self.mode.store(mode, Ordering::SeqCst);
        let set = self.home.path().join("set.jsonl");
        let mut args = vec!["--base-url", &self.server.base_url, "compare", "-m", "m1", "-m", "m2"];
        // The server answers the same request differently from run to run: the cache would
        // hand back the first run's answers.
        args.extend(["--prompts", set.to_str().unwrap(), "--no-cache"]);
        args.extend(more);
        let out = run(self.home.path(), &args);
        (out, newest_run(self.home.path()))
    }

    fn palaver(&self, args: &[&str]) -> std::process::Output {
        run(self.home.path(), args)
    }
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_planted_regression_is_named_tested_and_gated() {
    let b = Bench::new();
    let (first, a) = b.run_set(WELL, &[]);
    assert_eq!(first.status.code(), Some(0), "{}", err(&first));

    // The new run against the baseline: the diff after its summary, and the gate.
    let report = b.home.path().join("r.md");
    let (broke, planted) = b.run_set(
        PLANTED,
        &["--baseline", &a, "--fail-on-regression", "--min-pass", "0", "--report", report.to_str().unwrap()],
    );
    assert_eq!(broke.status.code(), Some(3), "regressed: {}{}", stdout(&broke), err(&broke));
    let printed = stdout(&broke);
    let m1 = "m1: 8 prompts newly fail, 0 newly pass; worse, p = 0.008 (McNemar)";
    assert!(printed.contains(m1), "{printed}");
    assert!(printed.find("expect passed").unwrap() < printed.find(m1).unwrap(), "after the summary: {printed}");
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.contains(&format!("## Against {a} (baseline)")) && md.contains(m1), "{md}");

    // `compare diff` says the same, and gates only when asked.
    let diff = b.palaver(&["compare", "diff", &a, &planted]);
    assert_eq!(diff.status.code(), Some(0), "{}", err(&diff));
    let text = stdout(&diff);
    for i in 1..=8 {
        assert!(text.lines().any(|l| l.contains("newly fails") && l.contains(&format!(" q{i} "))), "q{i}: {text}");
    }
    assert!(!text.contains(" q9 "), "q9 did not change: {text}");
    assert!(text.contains("m2: 0 prompts newly fail, 0 newly pass; no significant change (p = 1)"), "{text}");
    let gated = b.palaver(&["compare", "diff", &a, &planted, "--fail-on-regression"]);
    assert_eq!(gated.status.code(), Some(3), "{}", err(&gated));
    assert!(printed.contains(&stdout(&gated)), "--baseline printed the same diff:\n{printed}\n---\n{}", stdout(&gated));

    let json = lines(&b.palaver(&["compare", "diff", &a, &planted, "--json"]));
    let model = json.iter().find(|l| l["type"] == "diff_model" && l["model"] == "m1").unwrap();
    assert!(model["mcnemar_p"].as_f64().unwrap() < 0.05, "{model}");
    assert_eq!((model["newly_fail"].as_u64(), model["verdict"].as_str()), (Some(8), Some("worse")));
    assert!(model["score"]["high"].as_f64().unwrap() < 0.0, "{model}");
    let cells: Vec<&Value> = json.iter().filter(|l| l["type"] == "diff_cell").collect();
    assert_eq!(cells.len(), 8, "{json:?}");
    assert!(cells.iter().all(|c| c["change"] == "newly_fails" && c["model"] == "m1" && c["delta"]["score"] == -1.0));
    assert_eq!(json.last().unwrap()["regression"], false);
}

#[test]
fn unchanged_runs_pass_the_gate_and_a_critical_prompt_breaks_it_alone() {
    let b = Bench::new();
    let (_, a) = b.run_set(WELL, &[]);
    let (same, again) = b.run_set(WELL, &["--baseline", &a, "--fail-on-regression"]);
    assert_eq!(same.status.code(), Some(0), "{}{}", stdout(&same), err(&same));
    assert!(stdout(&same).contains("m1: 0 prompts newly fail, 0 newly pass; no significant change (p = 1)"));
    let diff = b.palaver(&["compare", "diff", &a, &again, "--fail-on-regression"]);
    assert_eq!(diff.status.code(), Some(0), "{}", err(&diff));
    assert!(stdout(&diff).contains("no cell changed pass/fail or score"), "{}", stdout(&diff));

    // One prompt of twelve broke: not significant, unless it was named critical.
    let (_, one) = b.run_set(ONE, &[]);
    let loose = b.palaver(&["compare", "diff", &a, &one, "--fail-on-regression"]);
    assert_eq!(loose.status.code(), Some(0), "{}", stdout(&loose));
    assert!(
        stdout(&loose).contains("m1: 1 prompt newly fails, 0 newly pass; no significant change"),
        "{}",
        stdout(&loose)
    );
    let critical = b.palaver(&["compare", "diff", &a, &one, "--critical", "q9,q3"]);
    assert_eq!(critical.status.code(), Some(3), "{}", stdout(&critical));
    assert!(stdout(&critical).contains("critical prompt broke: q3"), "{}", stdout(&critical));
    let other = b.palaver(&["compare", "diff", &a, &one, "--critical", "q4"]);
    assert_eq!(other.status.code(), Some(0), "q4 did not break: {}", stdout(&other));

    // Mistakes are usage errors, before anything is sent.
    let typo = b.palaver(&["compare", "diff", &a, &one, "--critical", "q99"]);
    assert_eq!(typo.status.code(), Some(2));
    assert!(err(&typo).contains("q99"), "{}", err(&typo));
    let requests = b.server.requests().len();
    let set = b.home.path().join("set.jsonl");
    let lone = b.palaver(&[
        "--base-url",
        &b.server.base_url,
        "compare",
        "-m",
        "m1",
        "--prompts",
        set.to_str().unwrap(),
        "--fail-on-regression",
    ]);
    assert_eq!(lone.status.code(), Some(2), "{}", err(&lone));
    let nobase = b.palaver(&[
        "--base-url",
        &b.server.base_url,
        "compare",
        "-m",
        "m1",
        "--prompts",
        set.to_str().unwrap(),
        "--baseline",
        "run-nope",
    ]);
    assert_eq!(nobase.status.code(), Some(2), "{}", err(&nobase));
    assert_eq!(b.server.requests().len(), requests, "nothing was sent");
}

#[test]
fn a_judge_compares_the_answers_in_both_orders_and_a_flip_is_a_tie() {
    let b = Bench::new();
    let (_, a) = b.run_set(WELL, &[]);
    let (_, planted) = b.run_set(PLANTED, &["--min-pass", "0"]);
    let before = b.server.requests().len();
    let out = b.palaver(&["--base-url", &b.server.base_url, "compare", "diff", &a, &planted, "--judge", "judge"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let text = stdout(&out);
    // m1: eight answers broke, A's is better in both orders; four equal ones flip (ties).
    assert!(
        text.contains("judge judge: B better 0, A better 8, 4 ties (the pick flipped with the order); consistent in both orders 8/12; sign test p = 0.008"),
        "{text}"
    );
    assert!(text.contains("B better 0, A better 0, 12 ties"), "m2's answers are all equal: {text}");
    assert_eq!(b.server.requests().len() - before, 48, "two judge calls per pair: 2 models × 12 prompts × 2 orders");
    let json = lines(&b.palaver(&[
        "--base-url",
        &b.server.base_url,
        "compare",
        "diff",
        &a,
        &planted,
        "--judge",
        "judge",
        "--json",
    ]));
    let m1 = json.iter().find(|l| l["type"] == "diff_judge" && l["model"] == "m1").unwrap();
    assert_eq!((m1["a_better"].as_u64(), m1["ties"].as_u64(), m1["consistent"].as_u64()), (Some(8), Some(4), Some(8)));
}
