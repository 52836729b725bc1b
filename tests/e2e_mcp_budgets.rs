//! End to end: the real binary against a scripted streamable-HTTP MCP server that asks palaver
//! more than its budgets allow during one tool call (pings, sampling requests), and a scripted
//! model on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;
mod scripted;

use common::tmux::{Tmux, tmux_available};
use scripted::{Reply, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn chat_call(name: &str, args: &str) -> String {
    let call = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":name,"arguments":args}}]}}]});
    format!(
        "data: {call}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

const CHAT_TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scripted_mcp() -> (Killed, String, tempfile::NamedTempFile) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let script = format!("{}/tests/mcp_server/http_server.py", env!("CARGO_MANIFEST_DIR"));
    let mut mcp = Command::new("python3")
        .args([script.as_str(), "asks", log.path().to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(mcp.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", line.trim().strip_prefix("port ").unwrap());
    (Killed(mcp), url, log)
}

fn run(model: &Server, config: &str, prompt: &str) -> (std::process::Output, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--base-url", &model.base_url, "-m", "m", "-p", prompt, "--tools", "auto", "--yes"])
        .env("PALAVER_HOME", home.path())
        .env("OPENAI_API_KEY", "sk-test-0123456789")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out, home)
}

/// The tool result palaver sent the model in its last request.
fn tool_result(model: &Server) -> String {
    let last = model.requests().last().cloned().unwrap();
    let body: Value = serde_json::from_str(&last.body).unwrap();
    let tool = body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").cloned().unwrap();
    tool["content"].as_str().unwrap().to_owned()
}

#[test]
fn pings_past_the_call_budget_are_answered_with_an_error_naming_it() {
    let (mcp, url, _log) = scripted_mcp();
    let model =
        Server::start(vec![Reply::sse(&chat_call("asks", r#"{"method":"ping","count":150}"#)), Reply::sse(CHAT_TEXT)]);
    let (out, _home) = run(&model, &format!("[mcp.servers.remote]\nurl = \"{url}\"\n"), "ping");
    drop(mcp);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = tool_result(&model);
    assert!(said.starts_with("answered 100, refused 50, last error: palaver refused this request"), "{said}");
    assert!(said.contains("more than 100 requests during one tool call (MCP_SERVER_REQUESTS_PER_CALL)"), "{said}");
}

#[test]
fn sampling_past_the_call_budget_is_refused_and_max_tokens_is_clamped_and_said() {
    let (mcp, url, _log) = scripted_mcp();
    let sampled = r#"{"id":"s1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#;
    let mut replies = vec![Reply::sse(&chat_call("asks", r#"{"method":"sampling/createMessage","count":12}"#))];
    replies.extend((0..10).map(|_| Reply::json(200, sampled)));
    replies.push(Reply::sse(CHAT_TEXT));
    let model = Server::start(replies);
    let config = format!("[mcp.servers.remote]\nurl = \"{url}\"\nallow_sampling = true\n");
    let (out, _home) = run(&model, &config, "sample");
    drop(mcp);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Ten went to the model, each asking at most the default for a model of unknown limit.
    assert_eq!(model.requests().len(), 12, "the call, ten samples, the answer");
    for r in &model.requests()[1..11] {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(body["max_tokens"], 4096, "{body}");
    }
    assert!(
        stderr.contains("asked for 100000000 tokens; palaver asks for 4096 (SAMPLE_MAX_TOKENS_UNKNOWN = 4096"),
        "{stderr}"
    );
    let said = tool_result(&model);
    assert!(said.starts_with("answered 10, refused 2, last error:"), "{said}");
    assert!(said.contains("(MCP_SAMPLES_PER_CALL)"), "{said}");
}

#[test]
fn sigterm_during_an_mcp_call_on_the_chat_screen_sends_notifications_cancelled() {
    if !tmux_available() {
        return;
    }
    let (mcp, url, log) = scripted_mcp();
    let model = Server::start(vec![Reply::sse(&chat_call("slow", r#"{"steps":100}"#)), Reply::sse(CHAT_TEXT)]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.remote]\nurl = \"{url}\"\ntrust_read_only = true\n"),
    )
    .unwrap();
    let t =
        Tmux::launch(&format!("--base-url {} --model scripted --tools auto", model.base_url)).home(home.path()).start();
    t.wait_for("the server's tools", |s| s.contains("tools ready"));
    t.send("go slowly");
    t.wait_for("the call's progress", |s| s.contains("/100"));
    let pid = t.palaver_pid();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let cancelled = loop {
        let text = std::fs::read_to_string(log.path()).unwrap();
        if text.contains("CANCELLED") || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    drop(mcp);
    let called = cancelled.lines().find_map(|l| l.strip_prefix("CALL ")).unwrap().to_owned();
    assert!(cancelled.contains(&format!("CANCELLED {called} palaver stopped the call")), "{cancelled}");
}
