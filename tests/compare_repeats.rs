//! `compare --repeat N` end to end through the binary, against a scripted server whose answer
//! depends on the request's `seed`: every sample is stored with its own seed (base + sample),
//! each prompt × model gets a pass rate with a Wilson interval, a line's `threshold` decides
//! its cell, `--min-pass` and JUnit go by the decided cells, prompts that flicker are named
//! flaky, and a run stopped with Ctrl+C resumes only its missing samples.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

mod scripted;

use common::cli::{err, lines, palaver, run, run_env};
use scripted::{Reply, Seen, Server};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn body(seen: &Seen) -> Value {
    serde_json::from_str(&seen.body).unwrap_or(Value::Null)
}

/// The last user message of a chat request, and its seed.
fn prompt_and_seed(seen: &Seen) -> (String, Option<u64>) {
    let v = body(seen);
    let prompt = v["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
    (prompt.to_owned(), v["seed"].as_u64())
}

fn answer(text: &str) -> String {
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let stop = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}});
    format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n")
}

/// `steady` always says yes; `flaky` says yes on even seeds; `rare` only on seeds that are a
/// multiple of 5.
fn seeded_server() -> Server {
    Server::start_fn(|seen| {
        let (prompt, seed) = prompt_and_seed(seen);
        let seed = seed.unwrap_or(u64::MAX);
        let yes = match prompt.as_str() {
            "steady" => true,
            "flaky" => seed % 2 == 0,
            _ => seed % 5 == 0,
        };
        Reply::sse(&answer(if yes { "yes, it is" } else { "no, it is not" }))
    })
}

const SET: &str = r#"{"id": "steady", "prompt": "steady", "expect": {"contains": "yes"}}
{"id": "flaky", "prompt": "flaky", "expect": {"contains": "yes"}, "threshold": 0.6}
{"id": "rare", "prompt": "rare", "expect": {"contains": "yes"}}
"#;

fn rate<'a>(summary: &'a Value, id: &str) -> &'a Value {
    summary["rates"].as_array().unwrap().iter().find(|r| r["prompt_id"] == id).unwrap()
}

#[test]
fn repeats_store_every_sample_with_its_seed_and_report_rates() {
    let server = seeded_server();
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(&set, SET).unwrap();
    let (xml, csv) = (home.path().join("out.xml"), home.path().join("out.csv"));
    let base = ["--base-url", &server.base_url, "compare", "-m", "m1", "--prompts", set.to_str().unwrap()];
    let zero = run(home.path(), &[&base[..], &["--repeat", "0"]].concat());
    assert_eq!(zero.status.code(), Some(2), "{}", err(&zero));

    let args = [&base[..], &["--repeat", "5", "--json", "--output", xml.to_str().unwrap()]].concat();
    let (md, html, step) = (home.path().join("r.md"), home.path().join("r.html"), home.path().join("step.md"));
    let more =
        ["--output", csv.to_str().unwrap(), "--output", md.to_str().unwrap(), "--output", html.to_str().unwrap()];
    let args = [&args[..], &more[..]].concat();
    let out = run_env(home.path(), &args, &[("GITHUB_STEP_SUMMARY", step.to_str().unwrap())]);
    // `rare` passes 1 sample of 5: its cell fails, so the model's decided cells are 2/3.
    assert_eq!(out.status.code(), Some(3), "{}", err(&out));

    // Every sample sent its own seed: base 0 + the sample index.
    let mut seeds: Vec<(String, u64)> = server
        .requests()
        .iter()
        .map(prompt_and_seed)
        .map(|(p, s)| (p, s.expect("every sample sends a seed")))
        .collect();
    seeds.sort();
    let want: Vec<(String, u64)> =
        ["flaky", "rare", "steady"].iter().flat_map(|p| (0..5).map(move |s| ((*p).to_owned(), s))).collect();
    assert_eq!(seeds, want);

    let ls = lines(&out);
    let cells: Vec<&Value> = ls.iter().filter(|l| l["type"] == "cell").collect();
    assert_eq!(cells.len(), 15);
    let samples: BTreeSet<u64> = cells.iter().map(|c| c["sample"].as_u64().unwrap()).collect();
    assert_eq!(samples, (0..5).collect());

    let summary = ls.iter().find(|l| l["type"] == "summary").unwrap();
    assert_eq!((summary["repeat"].as_u64(), summary["cells"].as_u64()), (Some(5), Some(15)));
    let model = &summary["models"][0];
    assert_eq!((model["checked"].as_u64(), model["passed"].as_u64()), (Some(3), Some(2)), "{model}");
    let mean = &model["mean_score"];
    // Prompt means 1.0, 0.6 and 0.2.
    assert!((mean["value"].as_f64().unwrap() - 0.6).abs() < 1e-9, "{mean}");
    assert!(mean["low"].as_f64().unwrap() < 0.6 && mean["high"].as_f64().unwrap() > 0.6, "{mean}");
    let flaky = rate(summary, "flaky");
    assert_eq!(
        (flaky["passed"].as_u64(), flaky["samples"].as_u64(), flaky["decided"].as_bool()),
        (Some(3), Some(5), Some(true))
    );
    let low = flaky["pass_rate"]["low"].as_f64().unwrap();
    let high = flaky["pass_rate"]["high"].as_f64().unwrap();
    assert!((low - 0.2307).abs() < 1e-3 && (high - 0.8824).abs() < 1e-3, "Wilson 3/5: {flaky}");
    assert_eq!((flaky["pass_at_k"].as_f64(), flaky["pass_hat_k"].as_f64()), (Some(1.0), Some(0.0)));
    assert_eq!(rate(summary, "rare")["decided"], false);
    assert_eq!(rate(summary, "steady")["pass_hat_k"].as_f64(), Some(1.0));
    assert_eq!(summary["flaky"], serde_json::json!(["flaky", "rare"]));

    // --min-pass goes by the decided cells: 2 of 3 reach 0.6.
    let id = summary["run"].as_str().unwrap();
    let shown = run(home.path(), &["compare", "show", id, "--min-pass", "0.6"]);
    assert_eq!(shown.status.code(), Some(0), "{}", err(&shown));
    let text = String::from_utf8_lossy(&shown.stdout);
    for want in [
        "× 5 samples",
        "3/5",
        "[23%, 88%]",
        "pass (≥ 60%)",
        "1/5",
        "fail",
        "flaky (samples both pass and fail): flaky, rare",
        "mean score",
    ] {
        assert!(text.contains(want), "{want} in:\n{text}");
    }
    assert_eq!(run(home.path(), &["compare", "show", id, "--min-pass", "0.7"]).status.code(), Some(3));

    // JUnit: a test case per prompt, decided; the failure says how many samples passed.
    let junit = std::fs::read_to_string(&xml).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), 3, "{junit}");
    assert!(junit.contains(r#"tests="3" failures="1" errors="0""#), "{junit}");
    assert!(junit.contains(r#"<failure message="1/5 passed (needs 100%)""#), "{junit}");
    // The reports and the CI job's page give the rates and name the flaky prompts.
    for page in [&md, &step] {
        let text = std::fs::read_to_string(page).unwrap();
        for want in
            ["## Pass rates", "| flaky | m1 | 3/5 | 60% | \\[23%, 88%\\] | 1.00 | 0.00 | pass (≥ 60%) |", "flaky, rare"]
        {
            assert!(text.contains(want), "{want} in {}:\n{text}", page.display());
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Pass rates")
            && page.contains("<td>[23%, 88%]</td>")
            && page.contains("flaky, rare")
            && page.contains("samples 3/5 passed (answer of sample 0)"),
        "{page}"
    );
    // CSV: a row per sample.
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.starts_with("run,prompt_index,prompt_id,sample,"), "{csv}");
    assert_eq!(csv.lines().count(), 16, "{csv}");

    // Another base seed: samples send it plus their index.
    let before = server.requests().len();
    let again = run(home.path(), &[&base[..], &["--repeat", "2", "--seed", "40"]].concat());
    assert_eq!(again.status.code(), Some(3), "{}", err(&again));
    let seeds: BTreeSet<u64> = server.requests()[before..].iter().map(|s| prompt_and_seed(s).1.unwrap()).collect();
    assert_eq!(seeds, [40, 41].into_iter().collect());
}

#[test]
fn a_run_without_repeat_sends_no_seed() {
    let server = seeded_server();
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("set.jsonl");
    std::fs::write(&set, SET).unwrap();
    let out = run(
        home.path(),
        &["--base-url", &server.base_url, "compare", "-m", "m1", "--prompts", set.to_str().unwrap(), "--json"],
    );
    assert!(server.requests().iter().all(|s| body(s).get("seed").is_none()));
    let ls = lines(&out);
    let summary = ls.iter().find(|l| l["type"] == "summary").unwrap();
    assert!(summary.get("rates").is_none() && summary.get("repeat").is_none(), "{summary}");
    assert!(ls.iter().filter(|l| l["type"] == "cell").all(|c| c["sample"] == 0));
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(60), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The stored (prompt, sample) pairs of a run.
fn stored(home: &Path, id: &str) -> BTreeSet<(String, u64)> {
    let out = run(home, &["compare", "show", id, "--json"]);
    lines(&out)
        .iter()
        .filter(|l| l["type"] == "cell")
        .map(|l| (l["prompt_id"].as_str().unwrap().to_owned(), l["sample"].as_u64().unwrap()))
        .collect()
}

#[test]
fn ctrl_c_then_resume_runs_only_the_missing_samples() {
    let server = Server::start_fn(|_| Reply::sse(&answer("yes")).pause_first(Duration::from_millis(150)));
    let home = tempfile::tempdir().unwrap();
    let set = home.path().join("p.txt");
    std::fs::write(&set, "q1\nq2\nq3\nq4\n").unwrap();
    let args = ["--base-url", &server.base_url, "compare", "-m", "m1", "--prompts", set.to_str().unwrap()];
    let args = [&args[..], &["--repeat", "5", "--concurrency", "2"]].concat();
    let child = palaver(home.path(), &args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_for("some requests", || server.requests().len() >= 6);
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", err(&out));
    let id = lines(&run(home.path(), &["compare", "runs", "--json"]))[0]["id"].as_str().unwrap().to_owned();
    let kept = stored(home.path(), &id);
    assert!((3..20).contains(&kept.len()), "{kept:?}");

    let before = server.requests().len();
    let again = run(home.path(), &["--base-url", &server.base_url, "compare", "--resume", &id]);
    assert_eq!(again.status.code(), Some(0), "{}", err(&again));
    // Exactly the missing samples were sent, each with its own sample's seed.
    let sent: BTreeSet<(String, u64)> = server.requests()[before..]
        .iter()
        .map(|s| {
            let (p, seed) = prompt_and_seed(s);
            let line = ["q1", "q2", "q3", "q4"].iter().position(|q| *q == p).unwrap() + 1;
            (line.to_string(), seed.unwrap())
        })
        .collect();
    assert_eq!(server.requests().len() - before, 20 - kept.len());
    let all: BTreeSet<(String, u64)> = (1..=4).flat_map(|p| (0..5).map(move |s| (p.to_string(), s))).collect();
    assert_eq!(sent, all.difference(&kept).cloned().collect());
    assert_eq!(stored(home.path(), &id), all);
    let resumed = run(home.path(), &["compare", "--resume", &id]);
    assert_eq!(resumed.status.code(), Some(0), "a finished run resumes with nothing to send: {}", err(&resumed));
    assert_eq!(run(home.path(), &["compare", "--resume", &id, "--repeat", "3"]).status.code(), Some(2));
}
