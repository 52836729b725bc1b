//! End to end: `--schema` headless, against a scripted server on 127.0.0.1 (what is sent, an
//! answer that breaks the schema: its path named, exit 3) and against the embedded demo (an
//! answer that follows it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scripted;

use scripted::{Reply, Server};
use serde_json::{Value, json};
use std::process::{Command, Output};

fn palaver_in(home: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home)
        .env("OPENAI_API_KEY", "sk-test")
        .env_remove("OPENAI_BASE_URL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn palaver(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    palaver_in(home.path(), args)
}

fn result_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let v: Value = serde_json::from_str(last).unwrap_or(Value::Null);
    assert_eq!(v["type"], "result", "no result line: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    v
}

/// A chat stream whose whole answer is `text`.
fn chat_answer(text: &str) -> String {
    let delta = json!({"id": "c", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!(
        "data: {delta}\n\ndata: {{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

fn responses_answer(text: &str) -> String {
    let delta = json!({"type": "response.output_text.delta", "delta": text});
    format!(
        "event: response.output_text.delta\ndata: {delta}\n\nevent: response.completed\ndata: {{\"type\":\"response.completed\",\"response\":{{\"status\":\"completed\"}}}}\n\n"
    )
}

#[test]
fn an_answer_that_breaks_the_schema_names_the_path_and_exits_3() {
    let s = Server::start(vec![Reply::sse(&chat_answer(r#"{"name": "Ada", "age": "old"}"#))]);
    let out = palaver(&["--base-url", &s.base_url, "-m", "m", "-p", "a person", "--schema", "name, age int", "--json"]);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let r = result_of(&out);
    assert_eq!(r["schema"]["valid"], false);
    assert_eq!(r["schema"]["errors"][0]["path"], "/age");
    assert_eq!(r["output_json"], json!({"name": "Ada", "age": "old"}));
    assert_eq!(r["finish_reason"], "stop", "the contract's fields stay as they were");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("does not follow the schema at /age"), "{stderr}");
    // What was asked: strict json_schema with every field required.
    let body: Value = serde_json::from_str(&s.requests()[0].body).unwrap();
    let rf = &body["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["strict"], true);
    assert_eq!(rf["json_schema"]["schema"]["required"], json!(["name", "age"]));
    assert_eq!(rf["json_schema"]["schema"]["properties"]["age"]["type"], "integer");
}

#[test]
fn prose_instead_of_json_is_invalid_at_the_root() {
    let s = Server::start(vec![Reply::sse(&chat_answer("Ada is a person."))]);
    let out = palaver(&["--base-url", &s.base_url, "-m", "m", "-p", "a person", "--schema", "name"]);
    assert_eq!(out.status.code(), Some(3));
    // Stdout still says what came, so nothing is lost.
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Ada is a person.");
    assert!(String::from_utf8_lossy(&out.stderr).contains("at (root): the answer is not JSON"));
}

#[test]
fn a_valid_answer_prints_the_json_alone_on_responses_too() {
    let s = Server::start(vec![Reply::sse(&responses_answer(r#"{"city":"Lisbon","tags":["sea"]}"#))]);
    let out = palaver(&[
        "--base-url",
        &s.base_url,
        "--api",
        "responses",
        "-m",
        "m",
        "-p",
        "a city",
        "--schema",
        r#"{"type":"object","properties":{"city":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["city","tags"],"additionalProperties":false}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"city\":\"Lisbon\",\"tags\":[\"sea\"]}\n");
    let body: Value = serde_json::from_str(&s.requests()[0].body).unwrap();
    let f = &body["text"]["format"];
    assert_eq!((&f["type"], &f["name"], &f["strict"]), (&json!("json_schema"), &json!("answer"), &json!(true)));
    assert_eq!(f["schema"]["required"], json!(["city", "tags"]));
}

#[test]
fn a_json_object_only_profile_gets_json_object_and_the_schema_in_the_prompt() {
    let s = Server::start(vec![Reply::sse(&chat_answer(r#"{"name":"Ada"}"#))]);
    let home = tempfile::tempdir().unwrap();
    let cfg = format!(
        "default_provider = \"p\"\n[providers.p]\nbase_url = \"{}\"\nstructured_outputs = \"json_object\"\nmodels = [\"m\"]\n",
        s.base_url
    );
    std::fs::write(home.path().join("config.toml"), cfg).unwrap();
    let out = palaver_in(home.path(), &["-p", "a person", "--schema", "name", "--json"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(result_of(&out)["schema"], json!({"valid": true, "errors": []}));
    let body: Value = serde_json::from_str(&s.requests()[0].body).unwrap();
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("JSON schema") && system.contains("\"required\":[\"name\"]"), "{system}");
}

#[test]
fn a_schema_that_does_not_compile_is_a_usage_error_before_sending() {
    let out = palaver(&["--base-url", "http://127.0.0.1:9/v1", "-p", "x", "--schema", r#"{"type": 12}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not compile"));
}

#[test]
fn the_demo_answers_a_schema_on_both_apis_streaming_and_not() {
    for extra in [
        &["--api", "chat"][..],
        &["--api", "responses"],
        &["--api", "chat", "--no-stream"],
        &["--api", "responses", "--no-stream"],
    ] {
        let mut args = vec!["--demo", "-p", "a person", "--schema", "name, age int"];
        args.extend_from_slice(extra);
        let out = palaver(&args);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v, json!({"name": "Ada Lovelace", "age": 36}), "{extra:?}");
        args.push("--json");
        let r = result_of(&palaver(&args));
        assert_eq!(r["schema"], json!({"valid": true, "errors": []}), "{extra:?}");
        assert_eq!(r["output_json"]["age"], 36);
    }
}

#[test]
fn logprobs_are_asked_for_and_the_result_line_carries_them() {
    for api in ["chat", "responses"] {
        let r = result_of(&palaver(&["--demo", "--api", api, "-p", "hi", "--logprobs", "3", "--json"]));
        let tokens = r["logprobs"].as_array().unwrap();
        let joined: String = tokens.iter().map(|t| t["token"].as_str().unwrap()).collect();
        assert_eq!(joined, r["text"].as_str().unwrap(), "{api}: the tokens make the text");
        assert!(
            tokens.iter().all(|t| t["top"].as_array().unwrap().len() == 3 && t["logprob"].as_f64().unwrap() <= 0.0)
        );
        let stats = &r["logprob_stats"];
        assert_eq!(stats["tokens"].as_u64(), Some(tokens.len() as u64));
        let mean = stats["mean_logprob"].as_f64().unwrap();
        assert!((stats["perplexity"].as_f64().unwrap() - (-mean).exp()).abs() < 1e-9);
    }
    // Not asked for, not there: the result line is the §2 one.
    let r = result_of(&palaver(&["--demo", "-p", "hi", "--json"]));
    assert!(r.get("logprobs").is_none() && r.get("logprob_stats").is_none() && r.get("schema").is_none());
    // What goes on the wire.
    let s = Server::start(vec![Reply::sse(&chat_answer("Hi")), Reply::sse(&responses_answer("Hi"))]);
    palaver(&["--base-url", &s.base_url, "-m", "m", "-p", "x", "--logprobs", "4"]);
    palaver(&["--base-url", &s.base_url, "--api", "responses", "-m", "m", "-p", "x", "--logprobs"]);
    let bodies: Vec<Value> = s.requests().iter().map(|r| serde_json::from_str(&r.body).unwrap()).collect();
    assert_eq!((&bodies[0]["logprobs"], &bodies[0]["top_logprobs"]), (&json!(true), &json!(4)));
    assert_eq!(bodies[1]["include"], json!(["message.output_text.logprobs"]));
    assert!(bodies[1].get("top_logprobs").is_none());
}

#[test]
fn saved_schemas_are_listed_shown_and_used_by_name() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| palaver_in(home.path(), args);
    assert!(String::from_utf8_lossy(&run(&["schemas"]).stdout).contains("no saved schemas yet"));
    let out = run(&["schemas", "save", "person", "name, age int, tags [str]"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&run(&["schemas"]).stdout).contains("person  age (integer), name, tags (array)"));
    let shown: Value = serde_json::from_slice(&run(&["schemas", "show", "person"]).stdout).unwrap();
    assert_eq!(shown["required"], json!(["name", "age", "tags"]));
    let out = run(&["--demo", "-p", "a person", "--schema", "person", "--json"]);
    let r = result_of(&out);
    assert_eq!(r["schema"]["valid"], true);
    assert_eq!(r["output_json"]["tags"].as_array().map(Vec::len), Some(2));
    assert_eq!(run(&["schemas", "save", "bad name", "x"]).status.code(), Some(2));
    assert_eq!(run(&["schemas", "save", "broken", "{\"type\": 3}"]).status.code(), Some(2));
    assert_eq!(run(&["schemas", "rm", "person"]).status.code(), Some(0));
    assert_eq!(run(&["schemas", "show", "person"]).status.code(), Some(2));
}

#[test]
fn compare_checks_every_column_and_a_failing_one_exits_3() {
    let out = palaver(&[
        "--demo",
        "compare",
        "-m",
        "demo",
        "-m",
        "demo-reasoning",
        "-p",
        "a person",
        "--schema",
        "name, age int",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).matches("[✓ follows the schema]").count(), 2);
    // A server whose answer breaks the schema: that column says where, the run exits 3.
    let s = Server::start_fn(|_| Reply::sse(&chat_answer(r#"{"name": 7, "age": 1}"#)));
    let out = palaver(&[
        "--base-url",
        &s.base_url,
        "compare",
        "-m",
        "a",
        "-m",
        "b",
        "-p",
        "x",
        "--schema",
        "name, age int",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "result").collect();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["schema"]["valid"] == false && r["schema"]["errors"][0]["path"] == "/name"));
}

#[test]
fn a_prompt_sets_schema_is_sent_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.jsonl");
    std::fs::write(
        &set,
        "{\"prompt\":\"a person\",\"id\":\"p\",\"schema\":\"name, age int\"}\n{\"prompt\":\"free\",\"id\":\"f\"}\n",
    )
    .unwrap();
    let s = Server::start_fn(|seen| {
        let body: Value = serde_json::from_str(&seen.body).unwrap_or_default();
        // Only the line with a schema asks for one; it gets an answer that breaks it.
        match body.get("response_format") {
            Some(_) => Reply::sse(&chat_answer(r#"{"name": "Ada"}"#)),
            None => Reply::sse(&chat_answer("free text")),
        }
    });
    let out = palaver(&["--base-url", &s.base_url, "compare", "-m", "m", "--prompts", set.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(3), "a failed check: {}", String::from_utf8_lossy(&out.stderr));
    let bodies: Vec<Value> = s.requests().iter().map(|r| serde_json::from_str(&r.body).unwrap()).collect();
    assert_eq!(bodies.iter().filter(|b| b.get("response_format").is_some()).count(), 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let kinds: Vec<&Value> =
        lines.iter().filter_map(|l| l["checks"].as_array()).flatten().map(|c| &c["kind"]).collect();
    assert_eq!(kinds, [&json!("schema")], "the check is in the cells, named `schema`: {stdout}");
    let summary = lines.iter().find(|l| l["type"] == "summary").expect("a summary line");
    let m = &summary["models"][0];
    assert_eq!((&m["schema_checked"], &m["schema_valid"]), (&json!(1), &json!(0)), "{summary}");
}

#[test]
fn history_export_keeps_the_token_probabilities() {
    let home = tempfile::tempdir().unwrap();
    let out = palaver_in(home.path(), &["--demo", "-p", "hi", "--logprobs", "2", "--json"]);
    let id = result_of(&out)["conversation_id"].as_str().unwrap().to_owned();
    let export = palaver_in(home.path(), &["history", "export", &id, "--format", "json"]);
    let text = String::from_utf8_lossy(&export.stdout);
    assert!(text.contains("\"top_logprobs\""), "{}", &text[..text.len().min(2000)]);
}

#[test]
fn a_schema_file_that_is_not_json_or_a_name_that_is_two_things_is_refused_before_sending() {
    let s = Server::start(vec![Reply::sse(&chat_answer("{}"))]);
    let dir = tempfile::tempdir().unwrap();
    let passwd = dir.path().join("passwd");
    let rows: String = (0..25).map(|i| format!("user{i}:x:{i}:{i}::/home/u{i}:/bin/sh\n")).collect();
    std::fs::write(&passwd, rows).unwrap();
    std::fs::write(dir.path().join("person"), r#"{"type":"object","properties":{"n":{"type":"string"}}}"#).unwrap();
    let home = tempfile::tempdir().unwrap();
    let go = |schema: &str| {
        Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(["--base-url", &s.base_url, "-m", "m", "-p", "hi", "--schema", schema, "--json"])
            .env("PALAVER_HOME", home.path())
            .env("OPENAI_API_KEY", "sk-test")
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = go(passwd.to_str().unwrap());
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("passwd: the file is not JSON"), "{e}");
    let out = go("person");
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("./person") && e.contains("person,"), "says how to pick each: {e}");
    assert!(s.requests().is_empty(), "nothing was sent");
    // Each way of picking one works.
    let out = go("./person");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let body: Value = serde_json::from_str(&s.requests()[0].body).unwrap();
    assert_eq!(body["response_format"]["json_schema"]["schema"]["properties"]["n"]["type"], "string");
}
