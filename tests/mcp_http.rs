//! The MCP client against remote servers over streamable HTTP: a scripted Python server
//! (`tests/mcp_server/http_server.py`) with faults (an expired session, a cut stream, results
//! of 10 and 20 MB, a token required), and `@modelcontextprotocol/server-everything` from npm
//! when Node is installed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use palaver::config::McpServer;
use palaver::config::mcp_server::Transport;
use palaver::tools::mcp::McpClient;
use serde_json::{Map, Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running scripted server; killed when dropped.
struct Scripted {
    child: Child,
    url: String,
    log: tempfile::NamedTempFile,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Scripted {
    fn start(mode: &str) -> Self {
        Self::start_with(mode, &[])
    }

    fn start_with(mode: &str, env: &[(&str, &str)]) -> Self {
        let log = tempfile::NamedTempFile::new().unwrap();
        let script = format!("{}/tests/mcp_server/http_server.py", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new("python3")
            .args([script.as_str(), mode, log.path().to_str().unwrap()])
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("port ").unwrap().to_owned();
        Self { child, url: format!("http://127.0.0.1:{port}/mcp"), log }
    }

    fn config(&self) -> McpServer {
        McpServer { url: Some(self.url.clone()), ..McpServer::default() }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap()
    }
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..100 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn json_responses_list_and_call_tools_and_the_session_is_deleted_on_close() {
    let server = Scripted::start("json");
    let mut cfg = server.config();
    cfg.headers.insert("X-Team".into(), "platform".into());
    let (client, specs) = McpClient::start("remote", &cfg).await.unwrap();
    assert_eq!(client.transport(), Transport::Http);
    assert_eq!(client.target(), server.url);
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["echo", "big", "leak"]);
    let out = client.call("echo", args(json!({"text": "hi"}))).await;
    assert_eq!(out.text, r#"{"text": "hi"}"#, "{out:?}");
    // The session id rides on every request after initialize, with the static header.
    let log = server.log();
    let call = log.lines().find(|l| l.starts_with("POST tools/call")).unwrap();
    let session = call.split(' ').nth(2).unwrap();
    assert!(session.len() == 32, "{log}");
    assert!(call.ends_with(" - platform"), "{call}");
    drop(client);
    wait_for("the DELETE of the session", || server.log().contains(&format!("DELETE /mcp {session}"))).await;
}

#[tokio::test]
async fn sse_responses_carry_the_result() {
    let server = Scripted::start("sse");
    let (client, _) = McpClient::start("remote", &server.config()).await.unwrap();
    let out = client.call("echo", args(json!({"text": "streamed"}))).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.text, r#"{"text": "streamed"}"#);
}

#[tokio::test]
async fn an_expired_session_is_started_again_and_the_call_sent_again() {
    let server = Scripted::start("expire");
    let (client, _) = McpClient::start("remote", &server.config()).await.unwrap();
    let out = client.call("echo", args(json!({"text": "again"}))).await;
    assert_eq!(out.text, r#"{"text": "again"}"#, "{out:?}");
    let log = server.log();
    assert_eq!(log.matches("POST initialize").count(), 2, "a second session: {log}");
}

#[tokio::test]
async fn a_stream_cut_mid_response_is_an_error_output_not_a_hang() {
    let server = Scripted::start("cut");
    let (client, _) = McpClient::start("remote", &server.config()).await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(20), client.call("echo", Map::new())).await;
    let out = out.expect("the call ends");
    assert!(out.is_error, "{out:?}");
    assert!(out.text.contains("MCP server `remote`"), "{}", out.text);
    assert!(!out.text.contains("rmcp::"), "no Rust type names: {}", out.text);
}

#[tokio::test]
async fn a_10_mb_result_arrives_and_a_20_mb_one_is_refused() {
    let server = Scripted::start("big");
    let (client, _) = McpClient::start("remote", &server.config()).await.unwrap();
    let out = client.call("big", Map::new()).await;
    assert!(!out.is_error, "{}", &out.text[..out.text.len().min(300)]);
    assert_eq!(out.text.len(), 10 * 1024 * 1024);

    let server = Scripted::start("huge");
    let (client, _) = McpClient::start("remote", &server.config()).await.unwrap();
    let out = tokio::time::timeout(Duration::from_secs(20), client.call("big", Map::new())).await.unwrap();
    assert!(out.is_error, "{}", &out.text[..out.text.len().min(300)]);
    assert!(out.text.len() < 2000 && out.text.contains("exceeded the maximum size"), "{}", out.text);
}

#[tokio::test]
async fn the_bearer_token_comes_from_its_variable_and_is_redacted_from_results() {
    // A variable every test process has (setting one would need `unsafe`): PATH, long enough
    // to count as a secret.
    let token = std::env::var("PATH").unwrap();
    assert!(token.len() >= 8);
    let server = Scripted::start_with("token", &[("MCP_TEST_TOKEN", token.as_str())]);
    let denied = McpClient::start("remote", &server.config()).await.unwrap_err();
    assert!(denied.contains(&server.url) && denied.contains("401") && denied.contains("bearer_token_env"), "{denied}");

    let cfg = McpServer { bearer_token_env: Some("PATH".into()), ..server.config() };
    let (client, _) = McpClient::start("remote", &cfg).await.unwrap();
    let out = client.call("leak", Map::new()).await;
    assert_eq!(out.text, "you sent: Bearer [redacted]");
    assert!(server.log().contains(&format!("Bearer {token}")), "the server got it");
}

#[tokio::test]
async fn a_server_that_is_not_there_is_a_quick_error_in_plain_words_naming_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().unwrap().port());
    drop(listener);
    let cfg = McpServer { url: Some(url.clone()), ..McpServer::default() };
    let started = std::time::Instant::now();
    let err = McpClient::start("gone", &cfg).await.unwrap_err();
    // Worded as a provider's would be (api::errors), not as rmcp's nested transport error.
    assert!(err.starts_with(&format!("could not connect to {url}: Connection refused")), "{err}");
    assert!(!err.contains("rmcp::") && !err.contains("Send message error"), "no Rust type names: {err}");
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    // A host that does not resolve reads the same way.
    let cfg = McpServer { url: Some("http://no-such-host.invalid/mcp".into()), ..McpServer::default() };
    let err = McpClient::start("nowhere", &cfg).await.unwrap_err();
    assert!(err.starts_with("could not connect to http://no-such-host.invalid/mcp: "), "{err}");
    assert!(!err.contains("handshake") && !err.contains("legacy"), "{err}");
}

#[path = "mcp_server/everything.rs"]
mod everything;

#[tokio::test]
async fn server_everything_over_streamable_http_lists_and_runs_its_tools() {
    let Some(server) = everything::start() else { return };
    let cfg = McpServer { url: Some(server.url.clone()), ..McpServer::default() };
    let (client, specs) = McpClient::start("everything", &cfg).await.unwrap();
    assert_eq!(client.transport(), Transport::Http);
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"echo") && names.contains(&"get-sum"), "{names:?}");
    let out = client.call("echo", args(json!({"message": "over the wire"}))).await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.text.contains("over the wire"), "{}", out.text);
    let out = client.call("get-sum", args(json!({"a": 2, "b": 40}))).await;
    assert!(out.text.contains("42"), "{}", out.text);
    // A refusal by the server is an error output, and the session goes on.
    let out = client.call("get-sum", args(json!({"a": "x"}))).await;
    assert!(out.is_error, "{out:?}");
    assert!(!client.call("echo", args(json!({"message": "still here"}))).await.is_error);
}

/// A progress sink that keeps every report.
fn collector() -> (
    palaver::tools::mcp::live::ProgressSink,
    std::sync::Arc<std::sync::Mutex<Vec<palaver::tools::mcp::live::McpProgress>>>,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = seen.clone();
    (std::sync::Arc::new(move |p| keep.lock().unwrap().push(p)), seen)
}

#[tokio::test]
async fn progress_reports_reach_the_call_s_sink_in_order() {
    let server = Scripted::start("slow");
    let (client, _) = McpClient::start("remote", &server.config()).await.unwrap();
    let (sink, seen) = collector();
    let call = client.call("slow", args(json!({"steps": 3})));
    let out =
        palaver::tools::mcp::live::with_progress(sink, palaver::tools::mcp::live::for_call("call_7".into(), call))
            .await;
    assert_eq!(out.text, "done after 3 steps", "{out:?}");
    let seen = seen.lock().unwrap().clone();
    let got: Vec<(String, f64, Option<f64>, String)> =
        seen.iter().map(|p| (p.call.clone(), p.progress, p.total, p.label())).collect();
    assert_eq!(
        got,
        [
            ("call_7".to_owned(), 1.0, Some(3.0), "1/3 step 1".to_owned()),
            ("call_7".to_owned(), 2.0, Some(3.0), "2/3 step 2".to_owned()),
            ("call_7".to_owned(), 3.0, Some(3.0), "3/3 step 3".to_owned()),
        ]
    );
}

#[tokio::test]
async fn dropping_a_running_call_sends_notifications_cancelled_with_its_request_id() {
    let server = Scripted::start("slow");
    let (client, _) = McpClient::start("remote", &server.config()).await.unwrap();
    let (sink, seen) = collector();
    let call = palaver::tools::mcp::live::with_progress(sink, client.call("slow", args(json!({"steps": 50}))));
    // Stopped after the first report: what Ctrl+C (which aborts the call's task) does.
    let stopped = tokio::time::timeout(Duration::from_millis(700), call).await;
    assert!(stopped.is_err(), "the call was still running");
    assert!(!seen.lock().unwrap().is_empty(), "progress arrived before the cancel");
    wait_for("the server to hear notifications/cancelled", || server.log().contains("CANCELLED")).await;
    let log = server.log();
    let called = log.lines().find_map(|l| l.strip_prefix("CALL ")).unwrap().to_owned();
    let cancelled = log.lines().find_map(|l| l.strip_prefix("CANCELLED ")).unwrap();
    assert!(cancelled.starts_with(&format!("{called} palaver stopped the call")), "{log}");
    // The server stopped its work, and the session goes on.
    wait_for("the server to stop the call", || server.log().contains(&format!("STOPPED {called}"))).await;
    assert_eq!(client.call("echo", args(json!({"text": "next"}))).await.text, r#"{"text": "next"}"#);
}

#[tokio::test]
async fn a_server_that_dies_mid_call_fails_the_call_at_once_naming_it() {
    let Some(mut server) = everything::start() else { return };
    let cfg = McpServer { url: Some(server.url.clone()), ..McpServer::default() };
    let (client, _) = McpClient::start("remote", &cfg).await.unwrap();
    let (sink, seen) = collector();
    let call = client.call("trigger-long-running-operation", args(json!({"duration": 50, "steps": 50})));
    let call = palaver::tools::mcp::live::with_progress(sink, call);
    let mut call = std::pin::pin!(call);
    // Running (a progress report arrived), then the server is killed.
    let mut waited = 0;
    while seen.lock().unwrap().is_empty() && waited < 100 {
        let _ = tokio::time::timeout(Duration::from_millis(50), &mut call).await;
        waited += 1;
    }
    assert!(!seen.lock().unwrap().is_empty(), "the call was running");
    server.kill();
    // Far sooner than the 60 s tool timeout (the operation would take 50 s).
    let out = tokio::time::timeout(Duration::from_secs(20), call).await.expect("the call ended when its server died");
    assert!(out.is_error, "{out:?}");
    assert!(out.text.contains("MCP server `remote`"), "{}", out.text);
}

#[tokio::test]
async fn server_everything_s_long_running_operation_reports_progress() {
    let Some(server) = everything::start() else { return };
    let cfg = McpServer { url: Some(server.url.clone()), ..McpServer::default() };
    let (client, _) = McpClient::start("everything", &cfg).await.unwrap();
    let (sink, seen) = collector();
    let call = client.call("trigger-long-running-operation", args(json!({"duration": 1, "steps": 4})));
    let out = palaver::tools::mcp::live::with_progress(sink, call).await;
    assert!(out.text.contains("Long running operation completed"), "{out:?}");
    let steps: Vec<(f64, Option<f64>)> = seen.lock().unwrap().iter().map(|p| (p.progress, p.total)).collect();
    assert_eq!(steps, [(1.0, Some(4.0)), (2.0, Some(4.0)), (3.0, Some(4.0)), (4.0, Some(4.0))]);
}

#[tokio::test]
async fn a_tools_list_changed_notification_is_told_and_the_tools_listed_again() {
    use palaver::tools::mcp::live::ListKind;
    let server = Scripted::start("slow");
    let cfg = palaver::config::McpConfig { servers: [("remote".to_owned(), server.config())].into() };
    let mut registry = palaver::tools::Registry::default();
    assert!(registry.add_mcp_servers(&cfg).await.is_empty());
    assert!(registry.get("grown").is_none());
    let client = registry.mcp_clients()[0].clone();
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = heard.clone();
    client.on_list_changed(std::sync::Arc::new(move |kind| keep.lock().unwrap().push(kind)));
    assert_eq!(client.call("grow", Map::new()).await.text, "grown");
    wait_for("the change to be told", || !heard.lock().unwrap().is_empty()).await;
    assert_eq!(*heard.lock().unwrap(), [ListKind::Tools]);
    let listed = client.relist(ListKind::Tools).await.unwrap();
    assert_eq!(listed.count, 7);
    registry.replace_mcp_tools("remote", listed.tools.unwrap());
    let names: Vec<&str> = registry.specs().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["echo", "big", "leak", "slow", "grow", "sample", "grown"]);
    // The new tool is routed to the server (which has no code behind it).
    let out = registry.execute("grown", "{}", Duration::from_secs(5)).await;
    assert!(out.text.starts_with("MCP server `remote` refused `grown`"), "{out:?}");
}

#[tokio::test]
async fn server_everything_s_form_is_declined_with_a_reason_when_no_one_can_answer() {
    let Some(server) = everything::start() else { return };
    let cfg = McpServer { url: Some(server.url.clone()), ..McpServer::default() };
    let (client, _) = McpClient::start("everything", &cfg).await.unwrap();
    // palaver says it answers forms, so the server offers its elicitation tool (perhaps only
    // after the handshake, with a list_changed).
    let listed = client.relist(palaver::tools::mcp::live::ListKind::Tools).await.unwrap();
    let names: Vec<String> = listed.tools.unwrap().into_iter().map(|s| s.name).collect();
    assert!(names.iter().any(|n| n == "trigger-elicitation-request"), "{names:?}");
    let out = client.call("trigger-elicitation-request", Map::new()).await;
    assert!(out.text.to_lowercase().contains("decline"), "{out:?}");
}

#[tokio::test]
async fn a_form_goes_to_the_asker_and_its_answer_back_to_the_server() {
    use palaver::tools::mcp::elicit::{Answer, FieldKind};
    let Some(server) = everything::start() else { return };
    let cfg = McpServer { url: Some(server.url.clone()), ..McpServer::default() };
    let (client, _) = McpClient::start("everything", &cfg).await.unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = seen.clone();
    client.on_elicit(std::sync::Arc::new(move |form, reply| {
        *keep.lock().unwrap() = Some(form);
        let mut v = Map::new();
        v.insert("name".into(), json!("Ada Lovelace"));
        v.insert("check".into(), json!(true));
        reply.send(Answer::Accept(v));
    }));
    let out = client.call("trigger-elicitation-request", Map::new()).await;
    let form = seen.lock().unwrap().clone().expect("the asker got the form");
    assert!(form.message.contains("Please provide inputs"), "{form:?}");
    let check = form.fields.iter().find(|f| f.name == "check").unwrap();
    assert_eq!(check.kind, FieldKind::Bool);
    assert!(out.text.contains("Ada Lovelace"), "the server got the answer: {out:?}");
}

#[tokio::test]
async fn a_sampling_request_is_refused_with_a_reason_the_server_can_show() {
    let server = Scripted::start("slow");
    let (client, _) = McpClient::start("remote", &server.config()).await.unwrap();
    let out = client.call("sample", Map::new()).await;
    let answer: Value = serde_json::from_str(&out.text).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(answer["id"], "sample-2", "{answer}");
    assert_eq!(answer["error"]["code"], -1);
    assert_eq!(answer["error"]["message"], palaver::tools::mcp::live::SAMPLING_REFUSED);
    assert!(answer.get("result").is_none());
    // Not allowed by its config: sampling was not offered to it.
    assert!(server.log().contains("CAPS elicitation\n"), "{}", server.log());
}

#[tokio::test]
async fn an_allowed_server_is_offered_sampling_and_its_request_reaches_the_sampler() {
    use palaver::tools::mcp::sample::{NO_SAMPLER_REASON, SampleRequest, Sampled};
    let server = Scripted::start("slow");
    let cfg = McpServer { allow_sampling: true, ..server.config() };
    let (client, _) = McpClient::start("remote", &cfg).await.unwrap();
    assert!(server.log().contains("CAPS elicitation sampling\n"), "{}", server.log());
    // No one to approve it (headless without --yes): refused with that reason.
    let out = client.call("sample", Map::new()).await;
    let answer: Value = serde_json::from_str(&out.text).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(answer["error"]["message"], NO_SAMPLER_REASON, "{answer}");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = seen.clone();
    client.on_sample(std::sync::Arc::new(move |req: SampleRequest| {
        *keep.lock().unwrap() = Some(req);
        Box::pin(async {
            Ok(Sampled { text: "hi there".into(), model: "m-1".into(), finish_reason: Some("stop".into()) })
        })
    }));
    let out = client.call("sample", Map::new()).await;
    let answer: Value = serde_json::from_str(&out.text).unwrap_or_else(|_| panic!("{out:?}"));
    assert_eq!(
        answer["result"],
        json!({"model": "m-1", "stopReason": "endTurn", "role": "assistant", "content": {"type": "text", "text": "hi there"}}),
        "{answer}"
    );
    let req = seen.lock().unwrap().clone().unwrap();
    assert_eq!((req.server.as_str(), req.messages[0].1.as_str(), req.max_tokens), ("remote", "hello?", 10));
}

#[tokio::test]
async fn a_server_speaking_only_the_legacy_http_sse_transport_is_reached_through_it() {
    let Some(server) = everything::start_in("sse") else { return };
    let cfg = McpServer { url: Some(server.url.clone()), ..McpServer::default() };
    let (client, specs) = McpClient::start("old", &cfg).await.unwrap();
    assert_eq!(client.transport(), Transport::Sse);
    assert_eq!(client.transport().label(), "HTTP+SSE (legacy)");
    assert!(specs.iter().any(|s| s.name == "get-sum"), "{specs:?}");
    assert_eq!(specs[0].source, palaver::tools::ToolSource::Mcp("old".into(), Transport::Sse));
    let out = client.call("get-sum", args(json!({"a": 2, "b": 40}))).await;
    assert!(out.text.contains("42"), "{out:?}");
    // Progress comes over the event stream too.
    let (sink, seen) = collector();
    let call = client.call("trigger-long-running-operation", args(json!({"duration": 0.4, "steps": 2})));
    let out = palaver::tools::mcp::live::with_progress(sink, call).await;
    assert!(out.text.contains("completed"), "{out:?}");
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// The tools `client`'s server lists now.
async fn names(client: &McpClient) -> Vec<String> {
    let listed = client.relist(palaver::tools::mcp::live::ListKind::Tools).await.unwrap();
    listed.tools.unwrap().into_iter().map(|s| s.name).collect()
}

#[tokio::test]
async fn server_everything_offers_its_sampling_tool_only_to_an_allowed_client_and_gets_the_answer() {
    use palaver::tools::mcp::sample::{SampleRequest, Sampled};
    let Some(server) = everything::start() else { return };
    let cfg = McpServer { url: Some(server.url.clone()), ..McpServer::default() };
    let (plain, _) = McpClient::start("everything", &cfg).await.unwrap();
    assert!(!names(&plain).await.iter().any(|n| n == "trigger-sampling-request"), "not offered sampling");
    let cfg = McpServer { allow_sampling: true, ..cfg };
    let (client, _) = McpClient::start("everything", &cfg).await.unwrap();
    assert!(names(&client).await.iter().any(|n| n == "trigger-sampling-request"));
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = seen.clone();
    client.on_sample(std::sync::Arc::new(move |req: SampleRequest| {
        *keep.lock().unwrap() = Some(req);
        Box::pin(async {
            Ok(Sampled { text: "four".into(), model: "demo".into(), finish_reason: Some("stop".into()) })
        })
    }));
    let out = client.call("trigger-sampling-request", args(json!({"prompt": "2+2?", "maxTokens": 20}))).await;
    assert!(out.text.contains("\"four\"") && out.text.contains("endTurn"), "{out:?}");
    let req = seen.lock().unwrap().clone().unwrap();
    assert_eq!(req.system.as_deref(), Some("You are a helpful test server."));
    assert_eq!(req.max_tokens, 20);
    assert!(req.messages[0].1.ends_with("2+2?"), "{req:?}");
}
