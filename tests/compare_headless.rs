//! Headless compare against two scripted providers: every column runs concurrently, a failing
//! model shows in its own result line and never stops the other, and the summary line follows.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scripted;

use scripted::{Reply, Server};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const OK: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"from a\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\ndata: [DONE]\n\n";

#[test]
fn columns_run_concurrently_and_failures_stay_in_their_column() {
    let a = Server::start(vec![Reply::sse(OK).pause_first(Duration::from_millis(800))]);
    let b = Server::start(vec![Reply::json(
        400,
        r#"{"error":{"message":"model b is broken","type":"invalid_request_error"}}"#,
    )]);
    let home = tempfile::tempdir().unwrap();
    let cfg = format!(
        "[providers.a]\nbase_url = \"{}\"\napi_key_env = \"K\"\n[providers.b]\nbase_url = \"{}\"\napi_key_env = \"K\"\n[models.m1]\nprice = {{ input = 1.0, output = 2.0 }}\n",
        a.base_url, b.base_url
    );
    std::fs::write(home.path().join("config.toml"), cfg).unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["compare", "-m", "a/m1", "-m", "b/m2", "-p", "hi", "--json"])
        .env("PALAVER_HOME", home.path())
        .env("K", "sk-x")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status.code(), Some(1), "one column failed");
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["column"], 0);
    assert_eq!(lines[0]["text"], "from a");
    assert_eq!(lines[0]["model"], "m1");
    assert_eq!(lines[1]["column"], 1);
    assert_eq!(lines[1]["finish_reason"], "error");
    assert!(lines[1]["error"]["message"].as_str().unwrap().contains("model b is broken"));
    assert_eq!(lines[2]["type"], "compare");
    assert_eq!(lines[2]["cheapest"], "m1");
    assert!((lines[2]["columns"][0]["cost"].as_f64().unwrap() - 9e-6).abs() < 1e-12);
    let body: Value = serde_json::from_str(&a.requests()[0].body).unwrap();
    assert_eq!(body["model"], "m1");
    let body: Value = serde_json::from_str(&b.requests()[0].body).unwrap();
    assert_eq!(body["model"], "m2");
    // Both columns are stored as one compare group: one entry of the history, its columns inside.
    let list = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "list", "--json"])
        .env("PALAVER_HOME", home.path())
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert_eq!(list.lines().count(), 1, "{list}");
    let entry: Value = serde_json::from_str(list.trim()).unwrap();
    assert_eq!(entry["columns"].as_array().map(Vec::len), Some(2), "{list}");
}

#[test]
fn compare_needs_two_to_four_models() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["compare", "-m", "demo", "-p", "hi"])
        .env("PALAVER_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
