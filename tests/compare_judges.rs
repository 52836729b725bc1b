//! Judge checks of prompt sets through the binary. The Done-when scenario: a templated set with
//! a vars file and a rubric judge, against three demo models with the demo as the judge (it
//! answers the judge's schema like any other); the report shows every judge's score and
//! reason, and the judge's calls are counted apart. A scripted judge on 127.0.0.1 sees the
//! documented prompt, and its answers — JSON, prose, nonsense — become scores or failed checks,
//! never a crash; `max_cost` and `max_latency_ms` are checks on the cell's figures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

mod scripted;

use scripted::{Reply, Server};
use serde_json::Value;

use common::cli::{err, lines, run};

/// A scripted judge's streamed reply: `text`, then a stop with (prompt, completion) usage.
fn judge_says(text: &str, usage: Option<(u64, u64)>) -> Reply {
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let mut stop = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    if let Some((p, c)) = usage {
        stop["usage"] = serde_json::json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c});
    }
    Reply::sse(&format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n"))
}

/// A home whose config names the scripted `judge` as provider `grader`.
fn grader_home(judge: &Server) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), format!("[providers.grader]\nbase_url = \"{}\"\n", judge.base_url))
        .unwrap();
    home
}

fn judge_of(cell: &Value) -> &Value {
    cell["checks"].as_array().unwrap().iter().find(|c| c["kind"] == "judge").unwrap()
}

#[test]
fn a_templated_set_judged_across_three_demo_models() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("cases.csv"), "lang,word\nfrench,salut\ngerman,hallo\n").unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(
        &set,
        r#"{"id":"say","prompt":"Say {{word}} in {{lang}}","vars":"cases.csv","expect":{"judge":"The answer greets in {{lang}}","model":"demo","threshold":0.2}}"#,
    )
    .unwrap();
    let report = home.path().join("r.html");
    let out = run(
        home.path(),
        &[
            "compare",
            "--demo",
            "-m",
            "demo",
            "-m",
            "demo-reasoning",
            "-m",
            "demo-tools",
            "--prompts",
            set.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--report",
            home.path().join("r.md").to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let ls = lines(&out);
    let cells: Vec<&Value> = ls.iter().filter(|l| l["type"] == "cell").collect();
    assert_eq!(cells.len(), 6);
    for c in &cells {
        let j = judge_of(c);
        let score = j["score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&score), "{j}");
        assert_eq!(j["pass"], score >= 0.2);
        assert!(j["detail"].as_str().unwrap().starts_with(&format!("score {score:.2}: ")), "{j}");
        // The judge's own call, apart from the model's usage.
        assert_eq!(j["judge"]["model"], "demo");
        assert!(j["judge"]["prompt_tokens"].as_u64().unwrap() > 0);
    }
    let summary = ls.last().unwrap();
    for m in summary["models"].as_array().unwrap() {
        assert_eq!(m["judge"]["calls"], 2, "{m}");
        assert!(m["judge"]["prompt_tokens"].as_u64().unwrap() > 0, "{m}");
    }
    let html = std::fs::read_to_string(&report).unwrap();
    let detail = judge_of(cells[0])["detail"].as_str().unwrap().to_owned();
    assert_eq!(html.matches(&format!("judge {detail}")).count(), 6, "every cell's judge score and reason");
    assert!(html.contains("vars: lang = german · word = hallo"));
    let md = std::fs::read_to_string(home.path().join("r.md")).unwrap();
    assert_eq!(md.matches(&format!("> judge: ✓ {detail}")).count(), 6, "{md}");
    let table = run(home.path(), &["compare", "show", summary["run"].as_str().unwrap()]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("judge calls"), "{}", err(&table));
}

#[test]
fn a_scripted_judge_sees_the_prompt_and_its_answers_are_read_leniently() {
    let answers =
        [r#"{"score": 0.9, "reason": "greets warmly"}"#, "Score: 0.3 because it rambles", "I refuse to grade this."];
    let judge = Server::start_fn(move |seen| {
        let body: Value = serde_json::from_str(&seen.body).unwrap();
        let prompt = body["messages"][0]["content"].as_str().unwrap_or_default().to_owned();
        let i = ["alpha", "beta", "gamma"].iter().position(|w| prompt.contains(&format!("Say {w}"))).unwrap_or(2);
        let text = answers[i];
        judge_says(text, Some((100, 10)))
    });
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[providers.grader]\nbase_url = \"{}\"\n\n[models.\"grader-1\"]\nprice = {{ input = 1.0, output = 2.0 }}\n",
            judge.base_url
        ),
    )
    .unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(
        &set,
        r#"{"id":"{{w}}","prompt":"Say {{w}}","vars":[{"w":"alpha"},{"w":"beta"},{"w":"gamma"}],"expect":[{"judge":"Greets the user","model":"grader/grader-1","threshold":0.5},{"max_latency_ms":600000},{"max_cost":0}]}"#,
    )
    .unwrap();
    let out = run(home.path(), &["compare", "-m", "demo/demo", "--prompts", set.to_str().unwrap(), "--json"]);
    // A judge below its threshold, one unreadable, and max_cost without a price: checks fail (3).
    assert_eq!(out.status.code(), Some(3), "{}", err(&out));
    let ls = lines(&out);
    let cell = |id: &str| ls.iter().find(|l| l["prompt_id"] == id).unwrap().clone();
    let (a, b, c) = (cell("alpha"), cell("beta"), cell("gamma"));
    assert_eq!(
        (judge_of(&a)["pass"].clone(), judge_of(&a)["detail"].clone()),
        (Value::Bool(true), "score 0.90: greets warmly".into())
    );
    assert_eq!(judge_of(&b)["score"], 0.3);
    assert_eq!(judge_of(&b)["pass"], false);
    assert_eq!(judge_of(&c)["pass"], false);
    assert!(judge_of(&c)["detail"].as_str().unwrap().contains("not a score: I refuse"), "{c}");
    assert_eq!(judge_of(&c)["score"], Value::Null);
    // The judge's own tokens and cost (priced from config.toml), apart from the model's.
    assert_eq!(judge_of(&a)["judge"]["prompt_tokens"], 100);
    let cost = judge_of(&a)["judge"]["cost"].as_f64().unwrap();
    assert!((cost - (100.0 * 1.0 + 10.0 * 2.0) / 1e6).abs() < 1e-12, "{cost}");
    let checks = a["checks"].as_array().unwrap();
    assert_eq!(checks.iter().find(|k| k["kind"] == "max_latency_ms").unwrap()["pass"], true);
    assert_eq!(checks.iter().find(|k| k["kind"] == "max_cost").unwrap()["pass"], false, "the demo has no price");
    let summary = ls.last().unwrap();
    assert_eq!(summary["models"][0]["judge"]["calls"], 3);
    assert!((summary["models"][0]["judge"]["cost"].as_f64().unwrap() - 3.0 * cost).abs() < 1e-12);
    // The judge was sent the documented prompt, with the rubric, the question and the answer.
    let seen = judge.requests();
    assert_eq!(seen.len(), 3);
    let body: Value = serde_json::from_str(&seen[0].body).unwrap();
    let prompt = body["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("## Rubric\n\nGreets the user") && prompt.contains("## Question\n\nSay "), "{prompt}");
    assert!(prompt.contains("you said"), "the demo's answer is in it: {prompt}");
    assert_eq!(body["response_format"]["type"], "json_schema", "a structured answer is asked for");
}

/// Issue 42: a judge with a declared scale is told it in its prompt and its schema, and its
/// bare number is read on it: 3.5 on 1–10 fails a pass mark of 7, 8 passes, 0.5 is off the
/// scale and no verdict.
#[test]
fn a_judge_with_a_declared_scale_is_told_it_and_read_on_it() {
    let seen_prompts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = seen_prompts.clone();
    let judge = Server::start_fn(move |req| {
        let body: Value = serde_json::from_str(&req.body).unwrap();
        let prompt = body["messages"][0]["content"].as_str().unwrap_or_default().to_owned();
        seen.lock().unwrap().push((prompt.clone(), body["response_format"].clone()));
        let text = [("Say low", "3.5"), ("Say high", "8"), ("Say off", "0.5")]
            .iter()
            .find(|(k, _)| prompt.contains(k))
            .map_or("{}".to_owned(), |(_, s)| format!("{{\"score\": {s}, \"reason\": \"r\"}}"));
        judge_says(&text, None)
    });
    let home = grader_home(&judge);
    let set = home.path().join("set.jsonl");
    std::fs::write(
        &set,
        r#"{"id":"{{w}}","prompt":"Say {{w}}","vars":[{"w":"low"},{"w":"high"},{"w":"off"}],"expect":{"judge":"Greets","model":"grader/g","scale":"1-10","pass":7}}"#,
    )
    .unwrap();
    let out = run(home.path(), &["compare", "-m", "demo/demo", "--prompts", set.to_str().unwrap(), "--json"]);
    let ls = lines(&out);
    let cell = |id: &str| judge_of(ls.iter().find(|l| l["prompt_id"] == id).unwrap()).clone();
    let (low, high, off) = (cell("low"), cell("high"), cell("off"));
    assert_eq!(low["pass"], false, "{low}");
    assert!(low["detail"].as_str().unwrap().starts_with("score 3.50 of 1–10 (0.28)"), "{low}");
    assert_eq!(high["pass"], true, "{high}");
    assert_eq!(off["pass"], false);
    assert_eq!(off["detail"], "the judge's score 0.5 is not between 1 and 10");
    let prompts = seen_prompts.lock().unwrap();
    assert!(prompts.iter().all(|(p, _)| p.contains("a number from 1 to 10")), "{prompts:?}");
    let schema = &prompts[0].1["json_schema"]["schema"]["properties"]["score"];
    assert_eq!((schema["minimum"].as_f64(), schema["maximum"].as_f64()), (Some(1.0), Some(10.0)), "{prompts:?}");
}

#[test]
fn the_verdict_is_the_judges_own_not_a_score_quoted_from_the_answer() {
    // Issue 39: a judge quoting the graded answer's own "score: 10" passed it at 1.00.
    let answers = [
        "The answer says: \"score: 10\" and claims to be perfect. My verdict: score: 0.1",
        "score: 3.5",
        "Quoting it: {\"score\": 10}. I give it a score of 9/10.",
    ];
    let judge = Server::start_fn(move |seen| {
        let body: Value = serde_json::from_str(&seen.body).unwrap();
        let prompt = body["messages"][0]["content"].as_str().unwrap_or_default().to_owned();
        let i = ["alpha", "beta", "gamma"].iter().position(|w| prompt.contains(&format!("Say {w}"))).unwrap_or(2);
        let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": answers[i]}}]});
        let stop = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        Reply::sse(&format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n"))
    });
    let home = tempfile::tempdir().unwrap();
    let config = format!("[providers.grader]\nbase_url = \"{}\"\n", judge.base_url);
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(
        &set,
        r#"{"id":"{{w}}","prompt":"Say {{w}}","vars":[{"w":"alpha"},{"w":"beta"},{"w":"gamma"}],"expect":{"judge":"Greets","model":"grader/g"}}"#,
    )
    .unwrap();
    let out = run(home.path(), &["compare", "-m", "demo/demo", "--prompts", set.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(3), "two judged below 0.5: {}", err(&out));
    let ls = lines(&out);
    let judged = |id: &str| judge_of(ls.iter().find(|l| l["prompt_id"] == id).unwrap()).clone();
    let (a, b, c) = (judged("alpha"), judged("beta"), judged("gamma"));
    assert_eq!((a["score"].as_f64(), a["pass"].as_bool()), (Some(0.1), Some(false)), "{a}");
    assert_eq!((b["score"].as_f64(), b["pass"].as_bool()), (Some(0.35), Some(false)), "3.5 on 1–10: {b}");
    assert_eq!((c["score"].as_f64(), c["pass"].as_bool()), (Some(0.9), Some(true)), "{c}");
}

#[test]
fn a_judge_that_cannot_be_set_up_is_a_usage_error() {
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(&set, r#"{"prompt":"hi","expect":{"judge":"r","prompt":"missing-judge.md"}}"#).unwrap();
    let out = run(home.path(), &["compare", "--demo", "-m", "demo", "--prompts", set.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = err(&out);
    assert!(e.contains("cannot read the judge prompt ") && e.contains("/missing-judge.md"), "{e}");
    // Nothing was stored: the judges are set up before the run is.
    let runs = run(home.path(), &["compare", "runs", "--json"]);
    assert!(!String::from_utf8_lossy(&runs.stdout).contains("\"run-"), "{}", String::from_utf8_lossy(&runs.stdout));
}

#[test]
fn the_configured_judge_prompt_replaces_the_built_in_one() {
    let judge = Server::start_fn(|_| {
        let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": "{\"score\": 1, \"reason\": \"fine\"}"}}]});
        let stop = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        Reply::sse(&format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n"))
    });
    let home = tempfile::tempdir().unwrap();
    let mine = home.path().join("mine.md");
    // A misspelt placeholder would reach the judge as written: a usage error before anything is sent.
    std::fs::write(&mine, "MY JUDGE: {{rubrik}} | {{prompt}} | {{answer}}").unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("judge_prompt = \"{}\"\n\n[providers.grader]\nbase_url = \"{}\"\n", mine.display(), judge.base_url),
    )
    .unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(&set, r#"{"prompt":"hello there","expect":{"judge":"polite","model":"grader/g"}}"#).unwrap();
    let args = ["compare", "-m", "demo/demo", "--prompts", set.to_str().unwrap(), "--json"];
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(2), "{}", err(&out));
    assert!(err(&out).contains("judge_prompt: unknown placeholder `{{rubrik}}`"), "{}", err(&out));
    assert!(judge.requests().is_empty(), "nothing sent");
    std::fs::write(&mine, "MY JUDGE: {{rubric}} | {{prompt}} | {{answer}}").unwrap();
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let body: Value = serde_json::from_str(&judge.requests()[0].body).unwrap();
    let sent = body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(sent.starts_with("MY JUDGE: polite | hello there | "), "{sent}");
}

#[test]
fn select_best_asks_in_both_orders_and_the_winner_passes() {
    let judge = Server::start_fn(|_| {
        let text = r#"{"best": "B", "reason": "more complete"}"#;
        judge_says(text, Some((50, 5)))
    });
    let home = grader_home(&judge);
    let set = home.path().join("set.jsonl");
    std::fs::write(
        &set,
        "{\"id\":\"q\",\"prompt\":\"Explain tides\",\"expect\":{\"select_best\":\"the clearest\",\"model\":\"grader/g\"}}\n\
         {\"id\":\"plain\",\"prompt\":\"hi\"}\n",
    )
    .unwrap();
    let args = ["compare", "-m", "demo/demo", "-m", "demo/demo-reasoning", "-m", "demo/demo-tools", "--prompts"];
    let out = run(home.path(), &[&args[..], &[set.to_str().unwrap(), "--json"]].concat());
    assert_eq!(out.status.code(), Some(3), "two of three lose: checks below 1.0\n{}", err(&out));
    let seen = judge.requests();
    assert_eq!(seen.len(), 2, "a judge call in each order for the prompt, none for the plain one");
    let body: Value = serde_json::from_str(&seen[0].body).unwrap();
    let prompt = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        prompt.contains("## Criterion\n\nthe clearest") && prompt.contains("## Question\n\nExplain tides"),
        "{prompt}"
    );
    assert!(prompt.contains("### Answer A") && prompt.contains("### Answer B") && prompt.contains("### Answer C"));
    // The stored cells carry the decision; exactly one passes, and the call is counted once.
    let id = lines(&out).last().unwrap()["run"].as_str().unwrap().to_owned();
    let shown = run(home.path(), &["compare", "show", &id, "--json"]);
    let cells: Vec<Value> = lines(&shown).into_iter().filter(|l| l["prompt_id"] == "q").collect();
    assert_eq!(cells.len(), 3, "{}", err(&shown));
    let picks: Vec<&Value> = cells
        .iter()
        .map(|c| c["checks"].as_array().unwrap().iter().find(|k| k["kind"] == "select_best").unwrap())
        .collect();
    assert_eq!(picks.iter().filter(|k| k["pass"] == true).count(), 1, "{picks:?}");
    // The judge saw letters; the detail names the model whose answer was B, the one that passed.
    let winner = cells.iter().zip(&picks).find(|(_, k)| k["pass"] == true).map(|(c, _)| c["model"].clone()).unwrap();
    // (B is the middle of three, in both orders: the judge's pick did not flip.)
    let detail = format!("won by {}; best in both orders: answer B: more complete", winner.as_str().unwrap());
    assert!(picks.iter().all(|k| k["detail"] == detail.as_str()), "{picks:?} {winner}");
    assert_eq!(picks.iter().filter(|k| k.get("judge").is_some()).count(), 1);
    let summary = lines(&shown).into_iter().find(|l| l["type"] == "summary").unwrap();
    let calls: u64 = summary["models"].as_array().unwrap().iter().filter_map(|m| m["judge"]["calls"].as_u64()).sum();
    assert_eq!(calls, 2);
    let consistent: Vec<&Value> =
        summary["models"].as_array().unwrap().iter().filter_map(|m| m["judge"].get("consistent")).collect();
    assert_eq!(consistent, [&Value::from(1)], "{summary}");
    // Resuming asks nothing again.
    let again = run(home.path(), &["compare", "--resume", &id, "--json"]);
    assert_eq!(judge.requests().len(), 2, "{}", err(&again));
}

/// A judge that always picks the first answer shown favours a place, not an answer: asked in
/// both orders, its pick flips, and the prompt is a tie between the two it picked.
#[test]
fn a_pick_that_flips_with_the_order_is_a_tie() {
    let judge = Server::start_fn(|_| {
        let text = r#"{"best": "A", "reason": "first"}"#;
        judge_says(text, None)
    });
    let home = grader_home(&judge);
    let set = home.path().join("set.jsonl");
    std::fs::write(&set, "{\"id\":\"q\",\"prompt\":\"Explain tides\",\"expect\":{\"select_best\":\"the clearest\",\"model\":\"grader/g\"}}\n")
        .unwrap();
    let args =
        ["compare", "-m", "demo/demo", "-m", "demo/demo-reasoning", "--prompts", set.to_str().unwrap(), "--report"];
    let md = home.path().join("r.md");
    let out = run(home.path(), &[&args[..], &[md.to_str().unwrap(), "--json"]].concat());
    let id = lines(&out).last().unwrap()["run"].as_str().unwrap().to_owned();
    let shown = run(home.path(), &["compare", "show", &id, "--json"]);
    let picks: Vec<Value> = lines(&shown)
        .into_iter()
        .filter(|l| l["prompt_id"] == "q")
        .map(|c| c["checks"].as_array().unwrap().iter().find(|k| k["kind"] == "select_best").unwrap().clone())
        .collect();
    assert_eq!(picks.len(), 2);
    assert!(picks.iter().all(|k| k["pass"] == true), "a tie: both pass {picks:?}");
    assert!(picks[0]["detail"].as_str().unwrap().starts_with("tied between "), "{picks:?}");
    let summary = lines(&shown).into_iter().find(|l| l["type"] == "summary").unwrap();
    let judge_of = summary["models"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m["judge"].get("both_orders").map(|_| m["judge"].clone()))
        .unwrap();
    assert_eq!((judge_of["both_orders"].as_u64(), judge_of["consistent"].as_u64()), (Some(1), None), "{judge_of}");
    assert!(std::fs::read_to_string(&md).unwrap().contains("| judge consistency |"), "the report gives the rate");
}

#[test]
fn select_best_with_one_model_asks_no_judge() {
    let judge = Server::start_fn(|_| Reply::sse("data: [DONE]\n\n"));
    let home = grader_home(&judge);
    let set = home.path().join("set.jsonl");
    std::fs::write(&set, "{\"prompt\":\"hi\",\"expect\":{\"select_best\":\"clear\",\"model\":\"grader/g\"}}\n")
        .unwrap();
    let out = run(home.path(), &["compare", "-m", "demo/demo", "--prompts", set.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    assert!(judge.requests().is_empty(), "no judge call for a single answer");
    let id = lines(&out).last().unwrap()["run"].as_str().unwrap().to_owned();
    let shown = lines(&run(home.path(), &["compare", "show", &id, "--json"]));
    let cell = shown.iter().find(|l| l["type"] == "cell").unwrap();
    let pick = cell["checks"].as_array().unwrap().iter().find(|k| k["kind"] == "select_best").unwrap();
    assert_eq!(
        (pick["pass"].as_bool(), pick["detail"].as_str()),
        (Some(true), Some("the only answer: no other to choose from"))
    );
}

/// What a Markdown viewer would run or follow: raw HTML tags, and links to script URLs whose
/// `[` is not escaped.
fn live_markup(md: &str) -> Vec<String> {
    let lower = md.to_ascii_lowercase();
    let tags = ["<script", "<img", "<svg"].into_iter().filter(|t| lower.contains(t)).map(str::to_owned);
    let link = regex::Regex::new(r"(^|[^\\])\[[^\]]*\]\(\s*(javascript|data|vbscript):").unwrap();
    tags.chain(link.find_iter(&lower).map(|m| m.as_str().to_owned())).collect()
}

#[test]
fn markdown_outputs_show_hostile_html_and_script_links_as_text() {
    let evil = "<script>alert(1)</script> <img src=x onerror=alert(2)> [click](javascript:alert(3))";
    let judge_text = format!("{{\"score\": 0.9, \"reason\": \"{}\"}}", evil.replace('"', "\\\""));
    let server = Server::start_fn(move |seen| {
        // The judge gets the rubric prompt; the model gets the user's.
        let text = if seen.body.contains("## Rubric") { judge_text.clone() } else { evil.to_owned() };
        judge_says(&text, None)
    });
    let home = tempfile::tempdir().unwrap();
    let config = format!("[providers.evil]\nbase_url = \"{}\"\n", server.base_url);
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(&set, r#"{"id":"<img src=y onerror=alert(4)>","prompt":"hi","expect":{"judge":"ok"}}"#).unwrap();
    let md = home.path().join("r.md");
    let args = ["compare", "-m", "evil/m", "--prompts", set.to_str().unwrap(), "--report", md.to_str().unwrap()];
    let out = run(home.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let report = std::fs::read_to_string(&md).unwrap();
    let outside_fences: String = report.split("```").step_by(2).collect();
    assert_eq!(live_markup(&outside_fences), Vec::<String>::new(), "{report}");
    assert!(report.contains("&lt;img src=y onerror=alert(4)&gt;") && report.contains("\\[click\\]"), "{report}");
    // The same answer in a conversation, exported as Markdown.
    let out = run(home.path(), &["-m", "evil/m", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", err(&out));
    let list = run(home.path(), &["history", "list"]);
    let id = String::from_utf8_lossy(&list.stdout).split_whitespace().next().unwrap().to_owned();
    let out = run(home.path(), &["history", "export", &id, "--format", "md"]);
    let exported = String::from_utf8_lossy(&out.stdout);
    assert_eq!(live_markup(&exported), Vec::<String>::new(), "{exported}");
    assert!(exported.contains("&lt;script>alert(1)&lt;/script>") && exported.contains("\\[click]"), "{exported}");
}
