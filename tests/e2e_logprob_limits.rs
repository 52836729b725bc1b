//! End to end: the real binary with `--logprobs 20 --json` against a scripted model that sends
//! far more token alternatives than any API does, streamed and not: the result keeps 20 a token
//! and the reply goes on.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod scripted;

use scripted::{Reply, Server};
use serde_json::{Value, json};
use std::process::{Command, Stdio};

fn entry(token: &str, alternatives: usize) -> Value {
    let top: Vec<Value> =
        (0..alternatives).map(|i| json!({"token": format!("alt{i}"), "logprob": -1.0, "bytes": [97]})).collect();
    json!({"token": token, "logprob": -0.5, "bytes": [97], "top_logprobs": top})
}

fn run(model: &Server, extra: &[&str]) -> Value {
    run_with_stderr(model, extra).0
}

fn run_with_stderr(model: &Server, extra: &[&str]) -> (Value, String) {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--base-url", &model.base_url, "-m", "m", "--logprobs", "20", "--json", "-p", "hi"])
        .args(extra)
        .env("PALAVER_HOME", home.path())
        .env("OPENAI_API_KEY", "sk-test-0123456789")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    (serde_json::from_str(stdout.lines().last().unwrap()).unwrap(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn check(result: &Value) {
    let tokens = result["logprobs"].as_array().unwrap();
    assert_eq!(tokens.len(), 2, "{result}");
    assert_eq!(tokens[0]["top"].as_array().unwrap().len(), 20, "cut to 20 alternatives");
    assert_eq!(tokens[1]["top"].as_array().unwrap().len(), 3);
    assert_eq!(result["logprob_stats"]["tokens"], 2);
}

#[test]
fn a_streamed_token_with_fifty_thousand_alternatives_keeps_twenty() {
    let frame = |token: &str, alts| {
        let c = json!({"choices": [{"index": 0, "delta": {"content": token}, "finish_reason": null,
                       "logprobs": {"content": [entry(token, alts)], "refusal": null}}]});
        format!("data: {c}\n\n")
    };
    let body = format!(
        "{}{}data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n",
        frame("He", 50_000),
        frame("llo", 3)
    );
    let model = Server::start(vec![Reply::sse(&body)]);
    check(&run(&model, &[]));
}

#[test]
fn a_whole_body_with_fifty_thousand_alternatives_keeps_twenty() {
    let body = json!({"id": "x", "object": "chat.completion", "model": "m", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop",
        "logprobs": {"content": [entry("He", 50_000), entry("llo", 3)]}}]});
    let model = Server::start(vec![Reply::json(200, &body.to_string())]);
    check(&run(&model, &["--no-stream"]));
}

#[test]
fn a_reply_past_logprob_bytes_keeps_what_fits_and_says_so() {
    let frame = |n: usize| {
        let list: Vec<Value> = (0..100).map(|i| entry(&format!("w{n}-{i} "), 20)).collect();
        let c = json!({"choices": [{"index": 0, "delta": {"content": "w ".repeat(100)}, "finish_reason": null,
                       "logprobs": {"content": list}}]});
        format!("data: {c}\n\n")
    };
    let mut body: String = (0..10).map(frame).collect();
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    let model = Server::start(vec![Reply::sse(&body)]);
    let (result, stderr) = run_with_stderr(&model, &[]);
    let kept = result["logprob_stats"]["tokens"].as_u64().unwrap();
    assert!(kept > 100 && kept < 1000, "{kept}");
    assert_eq!(result["finish_reason"], "stop", "the reply went on to its end: {result}");
    assert!(result["logprobs_cut"].as_str().unwrap().contains("logprob_bytes = 8388608"), "{result}");
    assert!(stderr.contains("token probabilities past the limit logprob_bytes"), "{stderr}");
}
