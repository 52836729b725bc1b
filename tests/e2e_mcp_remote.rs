//! End to end: the real binary with a remote MCP server over streamable HTTP on 127.0.0.1 —
//! headless `--tools auto` against the scripted Python server, and the chat screen in tmux
//! against `@modelcontextprotocol/server-everything` (skipped, loudly, without node).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;
#[path = "mcp_server/everything.rs"]
mod everything;
mod scripted;

use common::tmux::{Tmux, tmux_available};
use scripted::{Reply, Server};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn chat_call(id: &str, name: &str, args: &str) -> String {
    let first = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]});
    let rest =
        serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":args}}]}}]});
    format!(
        "data: {first}\n\ndata: {rest}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

const CHAT_TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The remote tool answered.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

/// The tool message palaver sent back in request `i`.
/// palaver headless with `args`, on the scripted model `model`, in `home` (no stdin).
fn headless(home: &std::path::Path, model: &Server, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_palaver"));
    c.args(["--base-url", &model.base_url, "-m", "m"])
        .args(args)
        .env("PALAVER_HOME", home)
        .env("OPENAI_API_KEY", "sk-test-0123456789")
        .stdin(Stdio::null());
    c
}

fn tool_message(server: &Server, i: usize) -> Value {
    let body: Value = serde_json::from_str(&server.requests()[i].body).unwrap();
    body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").cloned().unwrap()
}

#[test]
fn headless_tools_auto_runs_a_remote_tool_in_a_scripted_turn() {
    let (mcp, url, log) = scripted_mcp("sse");

    let model = Server::start(vec![
        Reply::sse(&chat_call("call_r", "echo", r#"{"text":"from the model"}"#)),
        Reply::sse(CHAT_TEXT),
    ]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.remote]\nurl = \"{url}\"\ntrust_read_only = true\n"),
    )
    .unwrap();
    let out = headless(home.path(), &model, &["-p", "use the tool", "--json", "--tools", "auto"]).output().unwrap();
    drop(mcp);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("The remote tool answered."), "{stdout}");
    // The model was offered the remote tool, and its result went back to the model.
    let first: Value = serde_json::from_str(&model.requests()[0].body).unwrap();
    assert!(first["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "echo"), "{first}");
    let tool = tool_message(&model, 1);
    assert_eq!(tool["tool_call_id"], "call_r");
    assert_eq!(tool["content"], r#"{"text": "from the model"}"#);
    // The call went over HTTP, and the session was deleted when palaver exited.
    let seen = std::fs::read_to_string(log.path()).unwrap();
    assert!(seen.contains("POST tools/call"), "{seen}");
    assert!(seen.contains("DELETE /mcp"), "{seen}");
}

#[test]
fn the_chat_screen_runs_a_tool_of_server_everything_and_names_the_server_and_transport() {
    if !tmux_available() {
        return;
    }
    let Some(mcp) = everything::start() else { return };
    let model =
        Server::start(vec![Reply::sse(&chat_call("call_e", "get-sum", r#"{"a":19,"b":23}"#)), Reply::sse(CHAT_TEXT)]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.everything]\nurl = \"{}\"\ntrust_read_only = true\n", mcp.url),
    )
    .unwrap();
    let t = Tmux::launch(&format!("--base-url {} --model scripted --tools auto --yes", model.base_url))
        .home(home.path())
        .start();
    t.wait_for("the server's tools", |s| s.contains("tools ready"));
    t.send("add them up");
    let s = t.wait_for("the model's answer after the tool", |s| s.contains("The remote tool answered."));
    assert!(s.contains("⚙ get-sum · everything · streamable HTTP"), "{s}");
    assert!(s.contains("✓ done"), "{s}");
    assert!(s.contains("42"), "the result is on the card: {s}");
    let tool = tool_message(&model, 1);
    assert!(tool["content"].as_str().unwrap().contains("42"), "{tool}");
    // The inspector's step for the call names the server and the transport too.
    t.keys(&["F3"]);
    let s = t.wait_for("the inspector", |s| s.contains("Flow inspector"));
    assert!(s.contains("everything (HTTP) · "), "{s}");
}

#[test]
fn mcp_list_and_mcp_tools_say_what_each_server_offers_and_which_failed() {
    let (mcp, url, log) = scripted_mcp("json");
    let home = tempfile::tempdir().unwrap();
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}/mcp", l.local_addr().unwrap().port())
    };
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[mcp.servers.remote]\nurl = \"{url}\"\nbearer_token_env = \"PATH\"\ntrust_read_only = true\n[mcp.servers.gone]\nurl = \"{gone}\"\n"
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_palaver")).args(args).env("PALAVER_HOME", home.path()).output().unwrap()
    };
    let out = run(&["mcp", "list", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "one server failed: {rows}");
    let gone_row = &rows[0];
    assert_eq!(gone_row["name"], "gone");
    assert!(
        gone_row["state"].as_str().unwrap().starts_with(&format!("failed: could not connect to {gone}: ")),
        "{gone_row}"
    );
    let remote = &rows[1];
    assert_eq!(remote["transport"], "streamable HTTP");
    assert_eq!(remote["state"], "ready");
    assert_eq!(remote["tools"], 3);
    assert_eq!(remote["prompts"], Value::Null, "the scripted server offers no prompts");
    assert_eq!(remote["auth"], "bearer token from PATH");

    let out = run(&["mcp", "tools", "remote"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.starts_with(&format!("remote (streamable HTTP, {url}): 3 tools")), "{text}");
    assert!(text.contains("  echo  [read-only]  Echoes its arguments as JSON."), "{text}");
    let out = run(&["mcp", "tools", "remot"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `remote`?"));
    drop(mcp);
    // Each session palaver opened was closed with a DELETE.
    let seen = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(seen.matches("POST initialize").count(), seen.matches("DELETE /mcp").count(), "{seen}");
}

#[test]
fn quitting_the_chat_screen_deletes_the_remote_session() {
    if !tmux_available() {
        return;
    }
    let (mcp, url, log) = scripted_mcp("json");
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.remote]\nurl = \"{url}\"\ntrust_read_only = true\n"),
    )
    .unwrap();
    let t = Tmux::launch("--demo --tools auto").home(home.path()).start();
    t.wait_for("the server's tools", |s| s.contains("tools ready"));
    assert!(!std::fs::read_to_string(log.path()).unwrap().contains("DELETE"));
    t.quit();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read_to_string(log.path()).unwrap().contains("DELETE /mcp") {
        assert!(std::time::Instant::now() < deadline, "no DELETE after quitting");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(mcp);
}

/// A scripted MCP server's process, killed when dropped (so a failing test leaves none behind).
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The scripted HTTP MCP server in `mode`, its URL and its log.
fn scripted_mcp(mode: &str) -> (Killed, String, tempfile::NamedTempFile) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let script = format!("{}/tests/mcp_server/http_server.py", env!("CARGO_MANIFEST_DIR"));
    let mut mcp = Command::new("python3")
        .args([script.as_str(), mode, log.path().to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(mcp.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", line.trim().strip_prefix("port ").unwrap());
    (Killed(mcp), url, log)
}

#[test]
fn headless_json_prints_an_mcp_call_s_progress_as_event_lines() {
    let (mcp, url, _log) = scripted_mcp("slow");
    let model = Server::start(vec![Reply::sse(&chat_call("call_s", "slow", r#"{"steps":3}"#)), Reply::sse(CHAT_TEXT)]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.remote]\nurl = \"{url}\"\ntrust_read_only = true\n"),
    )
    .unwrap();
    let out = headless(home.path(), &model, &["-p", "go slowly", "--json", "--tools", "auto"]).output().unwrap();
    drop(mcp);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let progress: Vec<&Value> = lines.iter().filter(|l| l["type"] == "tool_progress").collect();
    assert_eq!(progress.len(), 3, "{stdout}");
    assert_eq!(
        progress[2],
        &serde_json::json!({"type":"tool_progress","id":"call_s","progress":3.0,"total":3.0,"message":"step 3"})
    );
    // They come before the call's result, and the result line stays the last line.
    let result_at = lines.iter().position(|l| l["type"] == "tool_result").unwrap();
    assert!(lines.iter().position(|l| l["type"] == "tool_progress").unwrap() < result_at, "{stdout}");
    assert_eq!(lines.last().unwrap()["type"], "result");
    assert_eq!(lines[result_at]["output"], "done after 3 steps");
}

#[test]
fn headless_ctrl_c_during_an_mcp_call_sends_notifications_cancelled() {
    let (mcp, url, log) = scripted_mcp("slow");
    let model =
        Server::start(vec![Reply::sse(&chat_call("call_s", "slow", r#"{"steps":100}"#)), Reply::sse(CHAT_TEXT)]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.remote]\nurl = \"{url}\"\ntrust_read_only = true\n"),
    )
    .unwrap();
    let mut palaver = headless(home.path(), &model, &["-p", "go slowly", "--json", "--tools", "auto"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(palaver.stdout.take().unwrap());
    let mut seen = String::new();
    // The call is running once its first progress line is out.
    while !seen.contains("tool_progress") {
        assert!(stdout.read_line(&mut seen).unwrap() > 0, "palaver ended first: {seen}");
    }
    let killed = Command::new("kill").args(["-INT", &palaver.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = palaver.wait().unwrap();
    drop(mcp);
    assert_eq!(status.code(), Some(130), "{seen}{rest}");
    let result: Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
    assert_eq!(result["finish_reason"], "cancelled", "{rest}");
    let log = std::fs::read_to_string(log.path()).unwrap();
    let called = log.lines().find_map(|l| l.strip_prefix("CALL ")).unwrap();
    assert!(log.contains(&format!("CANCELLED {called} palaver stopped the call")), "{log}");
}

#[test]
fn the_chat_screen_shows_server_everything_s_progress_and_ctrl_c_cancels_the_call() {
    if !tmux_available() {
        return;
    }
    let Some(mcp) = everything::start() else { return };
    let args = r#"{"duration":60,"steps":60}"#;
    let model = Server::start(vec![
        Reply::sse(&chat_call("call_l", "trigger-long-running-operation", args)),
        Reply::sse(CHAT_TEXT),
    ]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.everything]\nurl = \"{}\"\ntrust_read_only = true\n", mcp.url),
    )
    .unwrap();
    let t = Tmux::launch(&format!("--base-url {} --model scripted --tools auto --yes", model.base_url))
        .home(home.path())
        .start();
    t.wait_for("the server's tools", |s| s.contains("tools ready"));
    t.send("take your time");
    let step = |s: &str| {
        let at = s.find("/60")?;
        s[..at].rsplit(' ').next()?.parse::<u32>().ok()
    };
    let s = t.wait_for("the first progress report on the card", |s| step(s).is_some());
    assert!(s.contains("⚙ trigger-long-running-operation · everything · streamable HTTP"), "{s}");
    let first = step(&s).unwrap();
    let s = t.wait_for("the progress moving", |s| step(s).is_some_and(|n| n > first));
    assert!(s.contains("▱▱▱"), "a bar: {s}");
    t.keys(&["C-c"]);
    let s = t.wait_for("the card saying cancelled", |s| s.contains("■ cancelled"));
    assert!(step(&s).is_none(), "the progress is gone with the running call: {s}");
}

#[test]
fn the_chat_screen_offers_a_server_s_changed_tools_from_the_next_request_and_says_so() {
    if !tmux_available() {
        return;
    }
    let (mcp, url, _log) = scripted_mcp("slow");
    let model = Server::start(vec![
        Reply::sse(&chat_call("call_g", "grow", "{}")),
        Reply::sse(CHAT_TEXT),
        Reply::sse(CHAT_TEXT),
    ]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.remote]\nurl = \"{url}\"\ntrust_read_only = true\n"),
    )
    .unwrap();
    let t = Tmux::launch(&format!("--base-url {} --model scripted --tools auto --yes", model.base_url))
        .home(home.path())
        .start();
    t.wait_for("the server's tools", |s| s.contains("tools ready"));
    t.send("grow a tool");
    let s = t.wait_for("the notice of the change", |s| s.contains("changed its tools"));
    assert!(s.contains("MCP server `remote` changed its tools: 7 now, offered from the next request"), "{s}");
    t.wait_for("the answer", |s| s.contains("The remote tool answered."));
    t.send("and now?");
    t.wait_for("the third request", |_| model.requests().len() >= 3);
    drop(mcp);
    let offered = |i: usize| -> Vec<String> {
        let body: Value = serde_json::from_str(&model.requests()[i].body).unwrap();
        body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
    };
    assert!(!offered(0).contains(&"grown".to_owned()), "{:?}", offered(0));
    assert!(offered(2).contains(&"grown".to_owned()), "{:?}", offered(2));
}

#[test]
fn the_chat_screen_opens_server_everything_s_form_and_sends_the_answer_back() {
    if !tmux_available() {
        return;
    }
    let Some(mcp) = everything::start() else { return };
    let model = Server::start(vec![
        Reply::sse(&chat_call("call_f", "trigger-elicitation-request", "{}")),
        Reply::sse(CHAT_TEXT),
    ]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.everything]\nurl = \"{}\"\ntrust_read_only = true\n", mcp.url),
    )
    .unwrap();
    let t = Tmux::launch(&format!("--base-url {} --model scripted --tools auto --yes", model.base_url))
        .home(home.path())
        .start();
    t.wait_for("the server's tools", |s| s.contains("tools ready"));
    t.send("ask me");
    let s = t.wait_for("the form", |s| s.contains("MCP server everything asks"));
    assert!(s.contains("Please provide inputs for the following fields:"), "{s}");
    std::thread::sleep(std::time::Duration::from_millis(700));
    // Enter in a field moves on and answers nothing.
    t.keys(&["Enter", "Enter"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(t.screen().contains("MCP server everything asks"), "the form is still open");
    // Back past the first field to the buttons: Cancel, then Decline; Enter declines.
    t.keys(&["Up", "Up", "Up", "Up", "Enter"]);
    let s = t.wait_for("the model's answer after the tool", |s| s.contains("The remote tool answered."));
    assert!(!s.contains("MCP server everything asks"), "{s}");
    let tool = tool_message(&model, 1);
    assert!(tool["content"].as_str().unwrap().contains("User declined"), "{tool}");
}

#[test]
fn mcp_list_names_the_legacy_transport_a_server_answered_to() {
    let Some(mcp) = everything::start_in("sse") else { return };
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.old]\nurl = \"{}\"\ntrust_read_only = true\n", mcp.url),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["mcp", "list", "--json"])
        .env("PALAVER_HOME", home.path())
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(out.status.success(), "{rows}");
    assert_eq!(rows[0]["transport"], "HTTP+SSE (legacy)", "{rows}");
    assert_eq!(rows[0]["state"], "ready", "{rows}");
}

#[test]
fn headless_offers_a_server_s_changed_tools_from_the_next_request_and_says_so() {
    let (mcp, url, _log) = scripted_mcp("slow");
    let model = Server::start(vec![Reply::sse(&chat_call("call_g", "grow", "{}")), Reply::sse(CHAT_TEXT)]);
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.remote]\nurl = \"{url}\"\ntrust_read_only = true\n"),
    )
    .unwrap();
    let out = headless(home.path(), &model, &["-p", "grow", "--tools", "auto", "--yes"]).output().unwrap();
    drop(mcp);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("MCP server `remote` changed its tools: 7 now"), "{stderr}");
    let offered = |i: usize| -> Vec<String> {
        let body: Value = serde_json::from_str(&model.requests()[i].body).unwrap();
        body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
    };
    assert!(!offered(0).contains(&"grown".to_owned()), "{:?}", offered(0));
    assert!(offered(1).contains(&"grown".to_owned()), "{:?}", offered(1));
}

#[test]
fn headless_yes_runs_an_allowed_server_s_sampling_request_on_the_run_s_model() {
    let (mcp, url, log) = scripted_mcp("slow");
    let sampled = r#"{"id":"s1","object":"chat.completion","model":"m-served","choices":[{"index":0,"message":{"role":"assistant","content":"sampled words"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#;
    let model = Server::start(vec![
        Reply::sse(&chat_call("call_m", "sample", "{}")),
        Reply::json(200, sampled),
        Reply::sse(CHAT_TEXT),
    ]);
    let home = tempfile::tempdir().unwrap();
    let config = format!("[mcp.servers.remote]\nurl = \"{url}\"\nallow_sampling = true\n");
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let out = headless(home.path(), &model, &["-p", "sample", "--tools", "auto", "--yes"]).output().unwrap();
    drop(mcp);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("MCP server `remote` used m-served for a sampling request (7 tokens)"), "{stderr}");
    // The sampling request: not streamed, the server's message and its maxTokens, no tools.
    let asked: Value = serde_json::from_str(&model.requests()[1].body).unwrap();
    assert_eq!(asked["stream"], false, "{asked}");
    assert_eq!(asked["messages"], serde_json::json!([{"role": "user", "content": "hello?"}]), "{asked}");
    assert_eq!(asked["max_tokens"], 10, "{asked}");
    assert!(asked.get("tools").is_none(), "{asked}");
    // The server got the model's text, and its tool returned it to the conversation.
    let tool = tool_message(&model, 2);
    let answer: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(answer["result"]["content"]["text"], "sampled words", "{answer}");
    assert_eq!(answer["result"]["model"], "m-served");
    assert!(std::fs::read_to_string(log.path()).unwrap().contains("CAPS elicitation sampling"));
}

#[test]
fn the_chat_screen_asks_before_a_server_samples_and_enter_alone_approves_nothing() {
    if !tmux_available() {
        return;
    }
    let (mcp, url, _log) = scripted_mcp("slow");
    let sampled = r#"{"id":"s1","object":"chat.completion","model":"m-served","choices":[{"index":0,"message":{"role":"assistant","content":"sampled words"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#;
    let model = Server::start(vec![
        Reply::sse(&chat_call("call_m", "sample", "{}")),
        Reply::json(200, sampled),
        Reply::sse(CHAT_TEXT),
    ]);
    let home = tempfile::tempdir().unwrap();
    let config = format!("[mcp.servers.remote]\nurl = \"{url}\"\nallow_sampling = true\n");
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let t = Tmux::launch(&format!("--base-url {} --model scripted --tools auto --yes", model.base_url))
        .home(home.path())
        .start();
    t.wait_for("the server's tools", |s| s.contains("tools ready"));
    t.send("sample");
    let s = t.wait_for("the sampling modal", |s| s.contains("MCP server remote asks to use the model"));
    assert!(s.contains("user: hello?") && s.contains("max tokens 10"), "{s}");
    assert!(s.contains("It would run on") && s.contains("scripted"), "{s}");
    std::thread::sleep(std::time::Duration::from_millis(700));
    // Enter with no button focused approves nothing.
    t.keys(&["Enter"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(t.screen().contains("asks to use the model"), "the modal is still open");
    assert_eq!(model.requests().len(), 1, "nothing was sampled");
    t.keys(&["Tab", "Enter"]);
    let s = t.wait_for("the notice", |s| s.contains("for a sampling request"));
    assert!(s.contains("MCP server `remote` used m-served for a sampling request (7 tokens)"), "{s}");
    t.wait_for("the model's answer after the tool", |s| s.contains("The remote tool answered."));
    drop(mcp);
    let asked: Value = serde_json::from_str(&model.requests()[1].body).unwrap();
    assert_eq!(asked["stream"], false, "{asked}");
    assert_eq!(asked["model"], "scripted", "{asked}");
    let tool = tool_message(&model, 2);
    assert!(tool["content"].as_str().unwrap().contains("sampled words"), "{tool}");
}
