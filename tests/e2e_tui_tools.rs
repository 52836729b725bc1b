//! End to end in tmux: the tool loop and the Responses items as a user meets them. The real
//! binary runs in its own tmux server (own socket, own `PALAVER_HOME`, its own working
//! directory), driven with `send-keys` and read with `capture-pane`. Skips when tmux is missing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;
mod scripted;

use common::tmux::{Tmux, tmux_available};
use scripted::{Reply, Server};

/// Longer than the approval modal's guard (half a second from its first tick): keys sent
/// after this are the modal's to take.
fn past_the_guard() {
    std::thread::sleep(std::time::Duration::from_millis(900));
}

/// The sentence typed the moment a modal shows.
const SENTENCE: &str = "yes and also tell me more about everything";

/// palaver in tmux in a scratch working directory holding `hello.txt`.
fn start(args: &str) -> Tmux {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("hello.txt"), "hello from the scratch directory\n").unwrap();
    Tmux::launch(args).keep_cwd(cwd).start()
}

#[test]
fn demo_tools_run_read_only_tools_and_answer() {
    if !tmux_available() {
        return;
    }
    let t = start("");
    t.wait_ready();
    t.send("/model demo-tools");
    t.wait_for("the model switch", |s| s.contains("model: demo-tools"));
    t.send("what is in this folder?");
    let s = t.wait_for("the answer after the tools", |s| s.contains("I called 3 tools") && s.contains("✓ done"));
    assert!(s.contains("⚙ list_directory"), "{s}");
    assert!(s.contains("⚙ current_time"), "{s}");
    assert!(s.contains("hello.txt"), "the directory listing reached the card: {s}");
    assert!(!s.contains("Approve tool call?"), "read-only tools run without asking: {s}");
    // The inspector shows both round trips of the turn.
    t.keys(&["F3"]);
    let s = t.wait_for("the inspector", |s| s.contains("Flow inspector"));
    assert!(s.contains("2 round trips"), "{s}");
    assert!(s.contains("→ POST /chat/completions"), "{s}");
    t.keys(&["Escape"]);
    t.wait_for("the inspector closed", |s| !s.contains("Flow inspector"));
}

fn chat_call(id: &str, name: &str, args: &str) -> String {
    let first = serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":id,"type":"function","function":{"name":name,"arguments":""}}]}}]});
    let rest =
        serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":args}}]}}]});
    format!(
        "data: {first}\n\ndata: {rest}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: [DONE]\n\n"
    )
}

const CHAT_TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Understood, I left the file alone.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";

#[test]
fn a_side_effecting_call_asks_and_a_denial_reaches_the_model() {
    if !tmux_available() {
        return;
    }
    let args = r#"{"path":"notes.txt","content":"written by the model"}"#;
    let server = Server::start(vec![Reply::sse(&chat_call("call_w", "write_file", args)), Reply::sse(CHAT_TEXT)]);
    let t = start(&format!("--base-url {} --model scripted --tools auto", server.base_url));
    t.wait_ready();
    t.send("please write my notes");
    let s = t.wait_for("the approval modal", |s| s.contains("Approve tool call?") && s.contains("a new file"));
    assert!(s.contains("notes.txt"), "{s}");
    assert!(s.contains("+written by the model"), "the new content is shown as a diff: {s}");
    assert!(s.contains("y  approve once"), "{s}");
    past_the_guard();
    t.keys(&["n", "Enter"]);
    let s = t.wait_for("the model's answer", |s| s.contains("Understood, I left the file alone."));
    assert!(s.contains("⊘ denied"), "{s}");
    assert!(!s.contains("Approve tool call?"), "{s}");
    assert!(!t.cwd().join("notes.txt").exists(), "a denied call must not write the file");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "one request for the call, one with its answer");
    let body: serde_json::Value = serde_json::from_str(&reqs[1].body).unwrap();
    let tool = body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").cloned().unwrap();
    assert_eq!(tool["tool_call_id"], "call_w");
    assert!(tool["content"].as_str().unwrap().starts_with("The user did not run this tool"), "{tool}");
    // The first request offered the tools.
    let first: serde_json::Value = serde_json::from_str(&reqs[0].body).unwrap();
    assert!(first["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "write_file")));
}

#[test]
fn an_approved_call_runs_and_its_output_goes_back() {
    if !tmux_available() {
        return;
    }
    let args = r#"{"path":"notes.txt","content":"approved text"}"#;
    let server = Server::start(vec![Reply::sse(&chat_call("call_w", "write_file", args)), Reply::sse(CHAT_TEXT)]);
    let t = start(&format!("--base-url {} --model scripted --tools auto", server.base_url));
    t.wait_ready();
    t.send("write it");
    t.wait_for("the approval modal", |s| s.contains("Approve tool call?"));
    past_the_guard();
    t.keys(&["y", "Enter"]);
    let s = t.wait_for("the answer", |s| s.contains("Understood"));
    assert!(s.contains("✓ done"), "{s}");
    assert_eq!(std::fs::read_to_string(t.cwd().join("notes.txt")).unwrap(), "approved text");
    let body: serde_json::Value = serde_json::from_str(&server.requests()[1].body).unwrap();
    let tool = body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").cloned().unwrap();
    assert!(tool["content"].as_str().unwrap().contains("notes.txt"), "{tool}");
}

#[test]
fn demo_hosted_shows_item_cards_and_the_mcp_approval_round_trip() {
    if !tmux_available() {
        return;
    }
    let t = start("--api responses -m demo-hosted");
    t.wait_ready();
    t.send("tell me about hosted tools");
    let s = t.wait_for("the MCP approval modal", |s| s.contains("Approve tool call?") && s.contains("Will allow"));
    assert!(s.contains("MCP server demo_wiki"), "{s}");
    assert!(s.contains("create_note"), "{s}");
    assert!(!s.contains("for this session"), "session approval is not offered for MCP requests: {s}");
    past_the_guard();
    t.keys(&["y", "Enter"]);
    let s = t.wait_for("the approved call", |s| s.contains("You approved request"));
    assert!(s.contains("◆ MCP call"), "{s}");
    assert!(s.contains("approved"), "{s}");
    // Every item of the first reply has its card.
    t.keys(&["C-Home"]);
    let s = t.wait_for("the top of the transcript", |s| s.contains("◆ web search"));
    assert!(s.contains("sources"), "{s}");
    t.keys(&["PageDown"]);
    let s = t.wait_for("the code interpreter card", |s| s.contains("◆ code interpreter"));
    assert!(s.contains("statistics"), "{s}");
    t.keys(&["PageDown"]);
    t.wait_for("the MCP call card", |s| s.contains("◆ MCP call"));
}

#[test]
fn denying_the_mcp_request_tells_the_provider() {
    if !tmux_available() {
        return;
    }
    let t = start("--api responses -m demo-hosted");
    t.wait_ready();
    t.send("hosted tools please");
    t.wait_for("the MCP approval modal", |s| s.contains("Approve tool call?"));
    past_the_guard();
    t.keys(&["r", "Enter"]);
    t.type_text("not today");
    t.keys(&["Enter"]);
    let s = t.wait_for("the denial answer", |s| s.contains("You denied request"));
    assert!(s.contains("not today"), "the reason reached the provider: {s}");
}

/// A real provider starts with tools off, and the status bar says so; F4 and `/tools` turn them
/// on, and the next request carries the definitions.
#[test]
fn tools_are_off_until_turned_on_and_the_status_bar_says_so() {
    if !tmux_available() {
        return;
    }
    let server = Server::start(vec![Reply::sse(CHAT_TEXT)]);
    let t = start(&format!("--base-url {} --model scripted", server.base_url));
    t.wait_ready();
    t.wait_for("tools off in the status bar", |s| s.contains("tools off"));
    t.send("hello");
    t.wait_for("the answer", |s| s.contains("Understood") && s.contains("✓ done"));
    let first: serde_json::Value = serde_json::from_str(&server.requests()[0].body).unwrap();
    assert!(first.get("tools").is_none(), "no tool may be offered before the user turns them on");
    t.keys(&["F4"]);
    t.wait_for("tools asked for", |s| s.contains("tools 6 ask"));
    t.send("/tools auto");
    t.wait_for("tools on", |s| s.contains("tools 6 auto"));
    t.send("again");
    t.wait_for("the second request", |_| server.requests().len() >= 2);
    let second: serde_json::Value = serde_json::from_str(&server.requests()[1].body).unwrap();
    assert_eq!(second["tools"].as_array().map(Vec::len), Some(6));
}

/// The moment the modal asks (--tools ask on the demo's three read-only calls), a whole
/// sentence and Enter are typed: nothing is approved, the sentence waits in the composer. Then
/// the deliberate choices: `y` then Enter approves one call, ↓↓ Enter grants a tool for the
/// session, and the answer comes.
#[test]
fn a_sentence_typed_as_the_modal_opens_approves_nothing() {
    if !tmux_available() {
        return;
    }
    let t = start("--demo -m demo-tools --tools ask");
    t.wait_ready();
    t.send("what is in this folder?");
    t.wait_for("the approval modal", |s| s.contains("Approve tool call?") && s.contains("1 of 3 waiting"));
    t.send(SENTENCE);
    // Well past the guard and the moment after typing: still nothing decided.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let s = t.screen();
    assert!(s.contains("Approve tool call?") && s.contains("1 of 3 waiting"), "nothing was approved: {s}");
    assert!(s.contains("? 3 waiting for approval"), "{s}");
    assert!(!s.contains("✓ done"), "{s}");
    assert!(s.contains(SENTENCE), "the sentence is in the composer: {s}");
    assert!(s.contains("you can keep typing"), "the composer says typing goes there: {s}");
    // A letter then Enter: list_directory runs.
    t.keys(&["y", "Enter"]);
    let s = t.wait_for("the second call asking", |s| s.contains("1 of 2 waiting"));
    assert!(s.contains("read_file"), "{s}");
    // The grant for the session has no letter: ↓ ↓ Enter.
    past_the_guard();
    t.keys(&["Down", "Down"]);
    t.wait_for("the session grant highlighted", |s| s.contains("▸    approve read_file for this session"));
    t.keys(&["Enter"]);
    t.wait_for("the third call asking", |s| s.contains("current_time") && !s.contains("waiting ┐"));
    past_the_guard();
    t.keys(&["y", "Enter"]);
    let s = t.wait_for("the answer after the tools", |s| s.contains("I called 3 tools") && s.contains("✓ done"));
    assert!(s.contains("read_file approved for this session") || s.contains("hello.txt"), "{s}");
    assert!(s.contains(SENTENCE), "the sentence is still the user's: {s}");
}

/// A read outside the workspace: `y` then Enter grants nothing (no option has a letter); ↓
/// then Enter does, and the file is read.
#[test]
fn a_read_outside_the_workspace_takes_the_arrows() {
    if !tmux_available() {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("outside.txt");
    std::fs::write(&secret, "the secret outside\n").unwrap();
    let args = serde_json::json!({"path": secret.display().to_string()}).to_string();
    let server = Server::start(vec![Reply::sse(&chat_call("call_r", "read_file", &args)), Reply::sse(CHAT_TEXT)]);
    let t = start(&format!("--base-url {} --model scripted --tools auto", server.base_url));
    t.wait_ready();
    t.send("read that file");
    let s = t.wait_for("the approval modal", |s| s.contains("Approve tool call?") && s.contains("outside the"));
    assert!(s.contains("a moment… keys typed now go to your message"), "{s}");
    t.send(SENTENCE);
    t.wait_for("the guard's end", |s| s.contains("no letter decides here"));
    past_the_guard();
    t.keys(&["y", "Enter"]);
    std::thread::sleep(std::time::Duration::from_millis(600));
    let s = t.screen();
    assert!(s.contains("Approve tool call?"), "y Enter grants nothing here: {s}");
    assert_eq!(server.requests().len(), 1, "nothing went back to the model");
    assert!(s.contains(&format!("{SENTENCE}y")), "both went to the composer: {s}");
    t.keys(&["Down"]);
    t.wait_for("approve once highlighted", |s| s.contains("▸ approve once"));
    t.keys(&["Enter"]);
    t.wait_for("the answer", |s| s.contains("Understood"));
    let body: serde_json::Value = serde_json::from_str(&server.requests()[1].body).unwrap();
    let tool = body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").cloned().unwrap();
    assert!(tool["content"].as_str().unwrap().contains("the secret outside"), "{tool}");
}

/// A directory outside the temporary directory (which the sandbox lets commands write), even
/// when the checkout itself lies under it (a CI clone in /tmp).
fn outside_tmp() -> tempfile::TempDir {
    let tmp = std::env::temp_dir().canonicalize().unwrap_or_else(|_| std::env::temp_dir());
    let target = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let candidates = [Some(target), std::env::var_os("HOME").map(Into::into), Some("/var/tmp".into())];
    candidates
        .into_iter()
        .flatten()
        .filter(|d: &std::path::PathBuf| !d.canonicalize().unwrap_or_else(|_| d.clone()).starts_with(&tmp))
        .find_map(|d| tempfile::tempdir_in(d).ok())
        .expect("a writable directory outside the temporary directory")
}

#[test]
fn a_command_runs_in_the_sandbox_the_modal_names() {
    if !tmux_available() || !palaver::tools::sandbox::support().available() {
        return;
    }
    // Outside the workspace and the temp dir: the sandbox lets neither write reach it.
    let outside = outside_tmp();
    let target = outside.path().join("outside-file");
    // And a connection to a local port: closed with the network.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "echo x > {}; bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo connected; echo x > ./inside && echo inside-ok",
        target.display()
    );
    let args = serde_json::json!({ "command": command }).to_string();
    let server = Server::start(vec![Reply::sse(&chat_call("call_s", "run_command", &args)), Reply::sse(CHAT_TEXT)]);
    let t = start(&format!("--base-url {} --model scripted --tools auto", server.base_url));
    t.wait_ready();
    t.send("write two files");
    let s = t.wait_for("the approval modal", |s| s.contains("Approve tool call?") && s.contains("Will run"));
    assert!(s.contains("sandbox workspace-write (Landlock"), "the modal names the sandbox: {s}");
    assert!(s.contains("writes: workspace, temp dir"), "{s}");
    assert!(s.contains("network: closed"), "{s}");
    past_the_guard();
    t.keys(&["y", "Enter"]);
    t.wait_for("the model's answer", |s| s.contains("Understood, I left the file alone."));
    assert!(!target.exists(), "the write outside the workspace got through");
    assert_eq!(std::fs::read_to_string(t.cwd().join("inside")).unwrap(), "x\n");
    // The model got the sandbox's refusal as the result.
    let follow: serde_json::Value = serde_json::from_str(&server.requests()[1].body).unwrap();
    let result = follow["messages"][2]["content"].as_str().unwrap_or_default();
    assert!(result.contains("inside-ok") && result.contains("Permission denied"), "{result}");
    assert!(!result.contains("connected") && result.contains("/dev/tcp/127.0.0.1/"), "{result}");
}

#[test]
fn a_read_of_a_file_holding_a_private_key_asks_before_sending() {
    if !tmux_available() {
        return;
    }
    let cwd = tempfile::tempdir().unwrap();
    let key = format!("-----BEGIN {}-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END {0}-----\n", "OPENSSH PRIVATE KEY");
    std::fs::write(cwd.path().join("notes.txt"), key).unwrap();
    let read = chat_call("call_r", "read_file", r#"{"path":"notes.txt"}"#);
    let done = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Thanks, I will not use it.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let server = Server::start(vec![Reply::sse(&read), Reply::sse(done)]);
    let t =
        Tmux::launch(&format!("--base-url {} --model scripted --tools auto", server.base_url)).keep_cwd(cwd).start();
    t.wait_ready();
    t.send("read my notes");
    // read_file is read-only and runs at once; what it found is what asks.
    let s = t.wait_for("the approval modal", |s| s.contains("Approve tool call?"));
    assert!(s.contains("sends to the provider") && s.contains("notes.txt"), "{s}");
    assert!(s.contains("holds a private key (PEM block)"), "{s}");
    assert!(!s.contains("b3BlbnNzaC1rZXktdjEAAAAA"), "{s}");
    assert_eq!(server.requests().len(), 1, "nothing went back before the answer");
    past_the_guard();
    t.keys(&["Down", "Down", "Enter"]);
    t.wait_for("the model's answer", |s| s.contains("Thanks, I will not use it."));
    let follow = &server.requests()[1].body;
    assert!(!follow.contains("b3BlbnNzaC1rZXktdjEAAAAA"), "{follow}");
    assert!(follow.contains("did not send its output"), "{follow}");
}

/// A reply whose usage counts a prompt far smaller than the six tool definitions alone.
fn tiny_prompt(text: &str) -> String {
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":\"stop\"}}]}}\n\n\
         data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":12,\"completion_tokens\":1,\"total_tokens\":13}}}}\n\n\
         data: [DONE]\n\n"
    )
}

#[test]
fn a_server_that_ignored_the_tools_is_said_once_and_the_status_bar_shows_it() {
    if !tmux_available() {
        return;
    }
    let server =
        Server::start(vec![Reply::sse(&tiny_prompt("first answer")), Reply::sse(&tiny_prompt("second answer"))]);
    let t = start(&format!("--base-url {} --model scripted --tools ask", server.base_url));
    t.wait_ready();
    let s = t.wait_for("the status bar", |s| s.contains("tools 6 ask"));
    assert!(!s.contains("ignored"), "{s}");
    t.send("hi");
    let s = t.wait_for("the notice", |s| s.contains("first answer") && s.contains("seems to have ignored"));
    assert!(s.contains("tools 6 ignored?"), "{s}");
    assert!(s.contains("the 6 tools it was sent"), "{s}");
    t.send("again");
    let s = t.wait_for("the second answer", |s| s.contains("second answer"));
    assert_eq!(s.matches("seems to have ignored").count(), 1, "said once: {s}");
    assert!(s.contains("tools 6 ignored?"), "{s}");
}
