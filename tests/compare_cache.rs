//! The response cache of prompt sets and `compare rescore`, through the binary, against a
//! scripted server on 127.0.0.1 that counts what it is sent: a second identical run sends
//! nothing and its cells say they were cached; `--no-cache` and an expired TTL send again;
//! a rescore sends nothing but its judge's calls, once; the cache file holds no key; `compare
//! cache clear` empties it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

mod scripted;

use common::cli::{err, lines, run_env};
use scripted::{Reply, Seen, Server};
use serde_json::Value;
use std::path::Path;

/// The key the provider is configured with; the server puts it in one of its answers.
const KEY: &str = "sk-cache-test-secret-7f3a9c21";

fn prompt_of(seen: &Seen) -> String {
    let v: Value = serde_json::from_str(&seen.body).unwrap_or(Value::Null);
    v["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("").to_owned()
}

fn says(text: &str) -> Reply {
    let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": text}}]});
    let stop = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}});
    Reply::sse(&format!("data: {delta}\n\ndata: {stop}\n\ndata: [DONE]\n\n"))
}

/// A model that answers `answer to PROMPT` (one answer also repeats the key it was sent) and
/// a judge (a request asking for the `judge_grade` schema) that always gives 0.9.
fn server() -> Server {
    Server::start_fn(|seen| {
        if seen.body.contains("judge_grade") {
            return says(r#"{"score": 0.9, "reason": "greets"}"#);
        }
        let prompt = prompt_of(seen);
        let key = seen.headers.lines().find_map(|l| l.strip_prefix("authorization: Bearer ")).unwrap_or("");
        if prompt.contains("key") {
            says(&format!("answer to {prompt}: {}", key.trim()))
        } else {
            says(&format!("answer to {prompt}"))
        }
    })
}

/// A home whose provider `local` is the server, its key from `CACHE_TEST_KEY`.
fn home(server: &Server, extra: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[providers.local]\nbase_url = \"{}\"\napi_key_env = \"CACHE_TEST_KEY\"\nmodels = [\"m\"]\n{extra}",
            server.base_url
        ),
    )
    .unwrap();
    home
}

fn set(home: &Path, name: &str, text: &str) -> String {
    let path = home.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

const SET: &str = r#"{"id":"hello","prompt":"say hello","expect":"answer to"}
{"id":"key","prompt":"what is the key","expect":"answer to"}
"#;

fn palaver(home: &Path, args: &[&str]) -> std::process::Output {
    run_env(home, args, &[("CACHE_TEST_KEY", KEY)])
}

fn summary(out: &std::process::Output) -> Value {
    lines(out).into_iter().find(|l| l["type"] == "summary").unwrap_or_else(|| panic!("{}", err(out)))
}

fn cells(out: &std::process::Output) -> Vec<Value> {
    lines(out).into_iter().filter(|l| l["type"] == "cell").collect()
}

/// Every file of the cache's folder (the database, its WAL), as bytes.
fn cache_bytes(home: &Path) -> Vec<u8> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(home.join("cache")).unwrap() {
        all.extend(std::fs::read(e.unwrap().path()).unwrap());
    }
    all
}

#[test]
fn a_second_identical_run_sends_nothing_and_says_its_cells_were_cached() {
    let server = server();
    let home = home(&server, "");
    let h = home.path();
    let file = set(h, "set.jsonl", SET);
    let args = ["compare", "-m", "local/m", "--prompts", &file, "--json"];
    let first = palaver(h, &args);
    assert_eq!(first.status.code(), Some(0), "{}", err(&first));
    assert_eq!(server.requests().len(), 2);
    assert!(cells(&first).iter().all(|c| c["cached"] == false), "{:?}", cells(&first));
    // The key went out, and came back in an answer (redacted wherever palaver shows it).
    assert!(server.requests().iter().all(|r| r.headers.contains(KEY)));
    let echoed = cells(&first).into_iter().find(|c| c["prompt_id"] == "key").unwrap();
    assert!(echoed["text"].as_str().unwrap().ends_with("[redacted]"), "{echoed}");
    assert_eq!(summary(&first)["models"][0]["cached"], 0);

    let (out_json, junit, md) = (h.join("cells.json"), h.join("cells.xml"), h.join("r.md"));
    let second = palaver(
        h,
        &[
            "compare",
            "-m",
            "local/m",
            "--prompts",
            &file,
            "--json",
            "--output",
            out_json.to_str().unwrap(),
            "--output",
            junit.to_str().unwrap(),
            "--report",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(second.status.code(), Some(0), "{}", err(&second));
    assert_eq!(server.requests().len(), 2, "the second run asked the server again");
    let again = cells(&second);
    assert_eq!(again.len(), 2);
    let firsts = cells(&first);
    for c in &again {
        // Cells print as they finish: matched by prompt, not by order.
        let before = firsts.iter().find(|f| f["prompt_id"] == c["prompt_id"]).unwrap();
        assert_eq!(c["cached"], true, "{c}");
        // The same answer, the same checks: only the marks differ.
        assert_eq!(c["text"], before["text"]);
        assert_eq!(c["checks"], before["checks"]);
        assert_eq!(c["finish_reason"], before["finish_reason"]);
        assert_eq!(c["usage"], before["usage"]);
    }
    assert_eq!(summary(&second)["models"][0]["cached"], 2);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    assert!(written.as_array().unwrap().iter().all(|c| c["cached"] == true), "{written}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<system-out>answered from the response cache</system-out>").count(), 2, "{xml}");
    let report = std::fs::read_to_string(&md).unwrap();
    assert!(report.contains("| cells cached | 2 |"), "{report}");
    assert!(report.matches("ok · cached").count() >= 2, "{report}");

    // The terminal summary and `compare show` say it too.
    let shown = palaver(h, &["compare", "show", summary(&second)["run"].as_str().unwrap()]);
    let table = String::from_utf8_lossy(&shown.stdout);
    assert!(table.lines().any(|l| l.starts_with("cells cached") && l.trim_end().ends_with('2')), "{table}");

    // The key the server repeated, and the one it was sent, are nowhere in the cache.
    let bytes = cache_bytes(h);
    assert!(!bytes.is_empty());
    assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the cache holds the API key");

    // --no-cache sends every request again.
    let third = palaver(h, &["compare", "-m", "local/m", "--prompts", &file, "--json", "--no-cache"]);
    assert_eq!(third.status.code(), Some(0), "{}", err(&third));
    assert_eq!(server.requests().len(), 4);
    assert!(cells(&third).iter().all(|c| c["cached"] == false));

    // `compare cache` lists the two answers; `clear` empties it, and the next run asks again.
    let listed = palaver(h, &["compare", "cache", "--json"]);
    let info = lines(&listed).into_iter().find(|l| l["type"] == "cache").unwrap();
    assert_eq!(info["entries"], 2, "{info}");
    let cleared = palaver(h, &["compare", "cache", "clear"]);
    assert_eq!(cleared.status.code(), Some(0), "{}", err(&cleared));
    assert!(
        String::from_utf8_lossy(&cleared.stdout).contains("cleared 2"),
        "{}",
        String::from_utf8_lossy(&cleared.stdout)
    );
    let listed = palaver(h, &["compare", "cache", "--json"]);
    assert_eq!(lines(&listed).into_iter().find(|l| l["type"] == "cache").unwrap()["entries"], 0);
    let fourth = palaver(h, &args);
    assert_eq!(fourth.status.code(), Some(0), "{}", err(&fourth));
    assert_eq!(server.requests().len(), 6);
}

#[test]
fn an_answer_past_the_ttl_is_asked_again() {
    let server = server();
    let home = home(&server, "\n[compare]\ncache_ttl = \"0\"\n");
    let h = home.path();
    let file = set(h, "set.jsonl", SET);
    let args = ["compare", "-m", "local/m", "--prompts", &file, "--json"];
    assert_eq!(palaver(h, &args).status.code(), Some(0));
    let second = palaver(h, &args);
    assert_eq!(second.status.code(), Some(0), "{}", err(&second));
    assert_eq!(server.requests().len(), 4, "an expired answer was served");
    assert!(cells(&second).iter().all(|c| c["cached"] == false));

    // A TTL that cannot be read is a usage error before anything is sent.
    let bad = home_with(&server, "\n[compare]\ncache_ttl = \"soon\"\n");
    let file = set(bad.path(), "set.jsonl", SET);
    let out = palaver(bad.path(), &["compare", "-m", "local/m", "--prompts", &file]);
    assert_eq!(out.status.code(), Some(2));
    assert!(err(&out).contains("cache_ttl"), "{}", err(&out));
    assert_eq!(server.requests().len(), 4);
}

fn home_with(server: &Server, extra: &str) -> tempfile::TempDir {
    home(server, extra)
}

#[test]
fn rescore_grades_stored_answers_with_new_checks_and_calls_only_its_judge_once() {
    let server = server();
    let home = home(&server, "");
    let h = home.path();
    let file = set(h, "set.jsonl", SET);
    let first = palaver(h, &["compare", "-m", "local/m", "--prompts", &file, "--json"]);
    assert_eq!(first.status.code(), Some(0), "{}", err(&first));
    let old = summary(&first)["run"].as_str().unwrap().to_owned();
    assert_eq!(server.requests().len(), 2);

    // New checks, matched by id whatever their order; a line that matches nothing is named.
    let new = set(
        h,
        "new.jsonl",
        r#"{"id":"key","prompt":"x","expect":"nowhere in it"}
{"id":"hello","prompt":"x","expect":["hello",{"judge":"Greets","model":"local/m","threshold":0.5}]}
{"id":"extra","prompt":"x","expect":"x"}
"#,
    );
    let rescored = palaver(h, &["compare", "rescore", &old, "--prompts", &new, "--json"]);
    // `key`'s answer fails its new check: the run exits 3, as a run would.
    assert_eq!(rescored.status.code(), Some(3), "{}", err(&rescored));
    assert!(err(&rescored).contains("line extra of the new set matches no stored prompt"), "{}", err(&rescored));
    let judged = server.requests().len();
    assert_eq!(judged, 3, "a rescore asked the model (only the judge may be asked)");
    let s = summary(&rescored);
    assert_ne!(s["run"], old.as_str());
    let got = cells(&rescored);
    let hello = got.iter().find(|c| c["prompt_id"] == "hello").unwrap();
    assert!(hello["checks"].as_array().unwrap().iter().all(|c| c["pass"] == true), "{hello}");
    assert!(hello["checks"].as_array().unwrap().iter().any(|c| c["kind"] == "judge"), "{hello}");
    let key = got.iter().find(|c| c["prompt_id"] == "key").unwrap();
    assert_eq!(key["checks"][0]["pass"], false, "{key}");
    // The stored run keeps its own verdicts.
    let shown = palaver(h, &["compare", "show", &old, "--json"]);
    assert!(cells(&shown).iter().all(|c| c["checks"][0]["pass"] == true));

    // Again: the judge's verdict comes from the cache, and nothing is sent.
    let again = palaver(h, &["compare", "rescore", &old, "--prompts", &new, "--json"]);
    assert_eq!(again.status.code(), Some(3), "{}", err(&again));
    assert_eq!(server.requests().len(), judged);
    let hello = cells(&again).into_iter().find(|c| c["prompt_id"] == "hello").unwrap();
    let judge = hello["checks"].as_array().unwrap().iter().find(|c| c["kind"] == "judge").unwrap().clone();
    assert_eq!(judge["judge"]["cached"], true, "{judge}");

    // Without FILE, the stored checks: everything passes again.
    let stored = palaver(h, &["compare", "rescore", &old, "--json"]);
    assert_eq!(stored.status.code(), Some(0), "{}", err(&stored));
    assert_eq!(server.requests().len(), judged);
}
