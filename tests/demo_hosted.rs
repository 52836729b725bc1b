//! The `demo-hosted` model of the embedded demo provider: over HTTP (event order and shapes,
//! the approval round trip, Chat Completions) and through the real binary, headless.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use palaver::demo::{self, DemoServer, MODELS};
use serde_json::{Value, json};
use std::process::{Command, Output};

/// The first reply's output items, in order: only types OpenAI defines (the item from the
/// future is demo-future's).
const FIRST_TURN: [&str; 5] =
    ["web_search_call", "message", "code_interpreter_call", "mcp_call", "mcp_approval_request"];

/// The reply after the client approved the MCP request.
const APPROVED_TURN: [&str; 2] = ["mcp_call", "message"];

fn item_types(items: &Value) -> Vec<String> {
    items.as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap_or_default().to_owned()).collect()
}

// ---------------------------------------------------------------------------------------------
// Over HTTP

async fn post(server: &DemoServer, path: &str, body: &Value) -> reqwest::Response {
    let url = format!("{}/{path}", server.base_url);
    reqwest::Client::new().post(url).json(body).send().await.unwrap()
}

/// Every event of a Responses stream, checking framing and sequence numbers.
async fn events(server: &DemoServer, body: &Value) -> Vec<Value> {
    let resp = post(server, "responses", body).await;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    let mut out = Vec::new();
    for (i, frame) in text.split("\n\n").filter(|f| !f.is_empty()).enumerate() {
        let (event, data) = frame.split_once('\n').unwrap();
        let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(Some(data["type"].as_str().unwrap()), event.strip_prefix("event: "));
        assert_eq!(data["sequence_number"], i, "sequence numbers count up from 0");
        out.push(data);
    }
    out
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn first_request(stream: bool) -> Value {
    json!({ "model": "demo-hosted", "stream": stream, "input": [{ "role": "user", "content": "search the web" }] })
}

#[tokio::test]
async fn the_model_is_listed() {
    assert!(MODELS.iter().any(|(id, _)| *id == "demo-hosted"));
    let server = demo::spawn_local().await.unwrap();
    let resp = reqwest::get(format!("{}/models/demo-hosted", server.base_url)).await.unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn first_reply_streams_every_hosted_item_with_its_events() {
    let server = demo::spawn_local().await.unwrap();
    let events = events(&server, &first_request(true)).await;
    let kinds = kinds(&events);
    assert_eq!(kinds.first(), Some(&"response.created"));
    assert_eq!(kinds.last(), Some(&"response.completed"));

    let done: Vec<&Value> =
        events.iter().filter(|e| e["type"] == "response.output_item.done").map(|e| &e["item"]).collect();
    let done_types: Vec<&str> = done.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(done_types, FIRST_TURN);

    // Each item's own events sit between its added and done, naming its index and id.
    let item_events = |prefix: &str| -> Vec<&str> { kinds.iter().copied().filter(|k| k.starts_with(prefix)).collect() };
    assert_eq!(
        item_events("response.web_search_call."),
        [
            "response.web_search_call.in_progress",
            "response.web_search_call.searching",
            "response.web_search_call.completed"
        ]
    );
    let code: Vec<&str> = item_events("response.code_interpreter_call");
    assert_eq!(code.first(), Some(&"response.code_interpreter_call.in_progress"));
    assert!(code.iter().filter(|k| **k == "response.code_interpreter_call_code.delta").count() > 5);
    assert_eq!(
        &code[code.len() - 3..],
        [
            "response.code_interpreter_call_code.done",
            "response.code_interpreter_call.interpreting",
            "response.code_interpreter_call.completed"
        ]
    );
    let mcp = item_events("response.mcp_call");
    assert_eq!(mcp.first(), Some(&"response.mcp_call.in_progress"));
    assert_eq!(&mcp[mcp.len() - 2..], ["response.mcp_call_arguments.done", "response.mcp_call.completed"]);
    assert!(item_events("response.demo_future_item.").is_empty(), "demo-hosted sends only what OpenAI sends");
    let mut open: Option<(u64, String)> = None;
    for e in &events {
        match e["type"].as_str().unwrap() {
            "response.output_item.added" => {
                open = Some((e["output_index"].as_u64().unwrap(), e["item"]["id"].as_str().unwrap().to_owned()))
            }
            "response.output_item.done" => open = None,
            _ if e.get("output_index").is_some() => {
                let (index, id) = open.clone().expect("an item event outside its item");
                assert_eq!(e["output_index"], index, "{e}");
                assert_eq!(e["item_id"], id.as_str(), "{e}");
            }
            _ => {}
        }
    }

    // The search: a 2025-style action with query and sources.
    let search = done[0];
    assert_eq!(search["status"], "completed");
    assert_eq!(search["action"]["type"], "search");
    assert!(search["action"]["query"].as_str().unwrap().contains("search the web"));
    assert!(search["action"]["sources"][0]["url"].as_str().unwrap().starts_with("https://"));

    // The message cites it: annotation events, and the same annotations on the final part.
    let announced: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.annotation.added")
        .map(|e| &e["annotation"])
        .collect();
    assert!(announced.len() >= 2);
    let part = &done[1]["content"][0];
    assert_eq!(part["annotations"].as_array().unwrap().iter().collect::<Vec<_>>(), announced);
    let text: Vec<char> = part["text"].as_str().unwrap().chars().collect();
    for a in &announced {
        assert_eq!(a["type"], "url_citation");
        let covered: String = text
            [a["start_index"].as_u64().unwrap() as usize..a["end_index"].as_u64().unwrap() as usize]
            .iter()
            .collect();
        assert!(covered.contains(a["url"].as_str().unwrap()), "{covered:?}");
        assert!(a["title"].is_string());
    }
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, part["text"].as_str().unwrap());

    // Code interpreter: the deltas make the code; logs in the outputs.
    let code_item = done[2];
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "response.code_interpreter_call_code.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, code_item["code"].as_str().unwrap());
    assert!(code_item["container_id"].as_str().unwrap().starts_with("cntr_"));
    assert_eq!(code_item["outputs"][0]["type"], "logs");
    assert!(code_item["outputs"][0]["logs"].as_str().unwrap().contains("mean"));

    // MCP call, streamed arguments, an output.
    let call = done[3];
    let args: String = events
        .iter()
        .filter(|e| e["type"] == "response.mcp_call_arguments.delta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(args, call["arguments"].as_str().unwrap());
    assert!(serde_json::from_str::<Value>(&args).is_ok());
    assert!(call["server_label"].is_string() && call["name"].is_string() && call["output"].is_string());

    // The approval request.
    let ask = done[4];
    assert!(ask["id"].as_str().unwrap().starts_with("mcpr_"));
    assert!(ask["server_label"].is_string() && ask["name"].is_string());
    assert!(serde_json::from_str::<Value>(ask["arguments"].as_str().unwrap()).is_ok());

    // Full usage on the terminal event, whose output is the same list.
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"].as_array().unwrap().iter().collect::<Vec<_>>(), done);
    let usage = &completed["usage"];
    for key in ["input_tokens", "output_tokens", "total_tokens"] {
        assert!(usage[key].as_u64().unwrap() > 0, "{key}: {usage}");
    }
    assert!(usage["input_tokens_details"]["cached_tokens"].is_u64());
    assert!(usage["output_tokens_details"]["reasoning_tokens"].is_u64());
}

#[tokio::test]
async fn non_streaming_reply_is_the_same_response_object() {
    let streamed = events(&demo::spawn_local().await.unwrap(), &first_request(true)).await;
    let streamed = &streamed.last().unwrap()["response"];
    let server = demo::spawn_local().await.unwrap();
    let resp = post(&server, "responses", &first_request(false)).await;
    assert_eq!(resp.status(), 200);
    let object: Value = resp.json().await.unwrap();
    assert_eq!(object["object"], "response");
    assert_eq!(object["status"], "completed");
    // Fresh servers number their replies alike, so ids match too.
    assert_eq!(object["output"], streamed["output"]);
    assert_eq!(object["usage"], streamed["usage"]);
    assert_eq!(item_types(&object["output"]), FIRST_TURN);
}

/// The second request of a stateless client: the first turn's items replayed, then the answer.
fn answer_request(first_output: &Value, answer: Value) -> Value {
    let mut input = vec![json!({ "role": "user", "content": "search the web" })];
    input.extend(first_output.as_array().unwrap().iter().cloned());
    input.push(answer);
    json!({ "model": "demo-hosted", "stream": true, "input": input })
}

#[tokio::test]
async fn approving_the_request_runs_the_call() {
    let server = demo::spawn_local().await.unwrap();
    let first = events(&server, &first_request(true)).await;
    let output = first.last().unwrap()["response"]["output"].clone();
    let ask = output[4].clone();
    let answer = json!({ "type": "mcp_approval_response", "approval_request_id": ask["id"], "approve": true });
    let second = events(&server, &answer_request(&output, answer)).await;
    let output = &second.last().unwrap()["response"]["output"];
    assert_eq!(item_types(output), APPROVED_TURN);
    let call = &output[0];
    assert_eq!(call["approval_request_id"], ask["id"]);
    assert_eq!(
        (&call["server_label"], &call["name"], &call["arguments"]),
        (&ask["server_label"], &ask["name"], &ask["arguments"])
    );
    assert_eq!(call["status"], "completed");
    assert!(call["output"].as_str().unwrap().contains("Created note"));
    assert!(kinds(&second).contains(&"response.mcp_call.completed"));
    assert!(second.last().unwrap()["response"]["usage"]["total_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn denying_the_request_says_the_call_was_not_made() {
    let server = demo::spawn_local().await.unwrap();
    let first = events(&server, &first_request(true)).await;
    let output = first.last().unwrap()["response"]["output"].clone();
    let answer = json!({ "type": "mcp_approval_response", "approval_request_id": output[4]["id"], "approve": false,
        "reason": "not today" });
    let second = events(&server, &answer_request(&output, answer)).await;
    let output = &second.last().unwrap()["response"]["output"];
    assert_eq!(item_types(output), ["message"]);
    let text = output[0]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("not made") && text.contains("not today"), "{text}");
    assert!(!kinds(&second).iter().any(|k| k.starts_with("response.mcp_call")));
}

#[tokio::test]
async fn chat_completions_explains_it_is_a_responses_model() {
    let server = demo::spawn_local().await.unwrap();
    let body = json!({ "model": "demo-hosted", "messages": [{ "role": "user", "content": "search the web" }] });
    let resp = post(&server, "chat/completions", &body).await;
    assert_eq!(resp.status(), 200);
    let completion: Value = resp.json().await.unwrap();
    let text = completion["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(text.contains("Responses API"), "{text}");
    assert_eq!(completion["choices"][0]["finish_reason"], "stop");
}

// ---------------------------------------------------------------------------------------------
// The real binary, headless

fn palaver(extra: &[&str]) -> (Vec<Value>, String) {
    let home = tempfile::tempdir().unwrap();
    let mut args = vec!["--demo", "--api", "responses", "-m", "demo-hosted", "-p", "search the web", "--json"];
    args.extend_from_slice(extra);
    let out: Output = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(&args)
        .env("PALAVER_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "exit {:?}\n{stdout}\n{stderr}", out.status);
    let lines: Vec<Value> =
        stdout.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.last().map(|l| l["type"].clone()), Some(json!("result")), "no result line:\n{stdout}\n{stderr}");
    (lines, stderr)
}

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

/// The `item` lines of finished items, as (index, type), in the order they were printed.
fn done_items(lines: &[Value]) -> Vec<String> {
    of_type(lines, "item")
        .into_iter()
        .filter(|l| l["done"] == true)
        .map(|l| l["item_type"].as_str().unwrap().to_owned())
        .collect()
}

/// The result line lists the items of the last reply: the first one, or, when the client answered
/// the approval request (`--yes` approves it), the approved call and its message.
fn check_result_items(result: &Value) {
    let types = item_types(&result["items"]);
    assert!(types == FIRST_TURN || types == APPROVED_TURN, "result items {types:?}");
    for item in result["items"].as_array().unwrap() {
        assert!(item["type"].is_string());
        if item["type"] != "mcp_approval_request" {
            assert!(item["status"].is_string(), "{item}");
        }
    }
    if types == APPROVED_TURN {
        assert_eq!(result["items"][0]["approval_request_id"], "mcpr_demo_1");
        assert!(result["items"][0]["output"].as_str().unwrap().contains("Created note"));
    }
}

#[test]
fn headless_json_streams_items_and_their_updates() {
    let (lines, stderr) = palaver(&["--yes"]);
    let done = done_items(&lines);
    assert!(done.len() >= FIRST_TURN.len(), "{done:?}\n{stderr}");
    assert_eq!(&done[..FIRST_TURN.len()], FIRST_TURN);
    // Items arrive as added, then done.
    let first = of_type(&lines, "item")[0];
    assert_eq!(
        (first["item_type"].as_str(), first["done"].as_bool(), first["status"].as_str()),
        (Some("web_search_call"), Some(false), Some("in_progress"))
    );

    let updates = of_type(&lines, "item_update");
    let statuses: Vec<&str> = updates.iter().filter_map(|u| u["status"].as_str()).collect();
    for s in ["in_progress", "searching", "interpreting", "completed"] {
        assert!(statuses.contains(&s), "no `{s}` update: {statuses:?}");
    }
    let grown: Vec<&str> =
        updates.iter().filter(|u| u["delta"].is_string()).filter_map(|u| u["field"].as_str()).collect();
    assert!(grown.contains(&"code") && grown.contains(&"arguments"), "{grown:?}");
    assert!(of_type(&lines, "annotation").len() >= 2);
    assert!(of_type(&lines, "unknown_event").is_empty(), "demo-hosted sends only event types OpenAI defines");

    let result = lines.last().unwrap();
    assert_eq!(result["api"], "responses");
    assert_eq!(result["provider"], "demo");
    assert!(result["usage"].is_object());
    check_result_items(result);
}

#[test]
fn headless_json_without_streaming() {
    let (lines, stderr) = palaver(&["--yes", "--no-stream"]);
    let done = done_items(&lines);
    assert!(done.len() >= FIRST_TURN.len(), "{done:?}\n{stderr}");
    assert_eq!(&done[..FIRST_TURN.len()], FIRST_TURN);
    assert!(of_type(&lines, "item_update").is_empty(), "a whole response object has no live updates");
    check_result_items(lines.last().unwrap());
}

/// With tools off the turn ends at the approval request: the result line is the first reply.
#[test]
fn headless_json_result_lists_every_item_of_the_first_reply() {
    let (lines, _) = palaver(&["--tools", "none"]);
    let result = lines.last().unwrap();
    assert_eq!(item_types(&result["items"]), FIRST_TURN);
    assert_eq!(result["items"][0]["action"]["type"], "search");
    assert!(result["text"].as_str().unwrap().contains("I searched the web"));
    assert!(result["annotations"].as_array().unwrap().len() >= 2);
}

#[tokio::test]
async fn demo_future_sends_an_item_and_an_event_no_api_defines() {
    let server = demo::spawn_local().await.unwrap();
    let body = json!({ "model": "demo-future", "stream": true, "input": "hello" });
    let events = events(&server, &body).await;
    let done: Vec<&Value> =
        events.iter().filter(|e| e["type"] == "response.output_item.done").map(|e| &e["item"]).collect();
    let types: Vec<&str> = done.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["message", "demo_future_item"]);
    assert_eq!(done[1]["status"], "completed");
    assert!(done[1]["payload"].is_object());
    assert!(kinds(&events).contains(&"response.demo_future_item.pinged"));
    let resp = post(
        &server,
        "chat/completions",
        &json!({ "model": "demo-future", "messages": [{"role": "user", "content": "hi"}] }),
    )
    .await;
    let chat: Value = resp.json().await.unwrap();
    assert!(chat["choices"][0]["message"]["content"].as_str().unwrap().contains("Responses API"));
}

#[test]
fn demo_future_headless_keeps_the_unknown_event_and_item() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["--demo", "--api", "responses", "-m", "demo-future", "-p", "hi", "--json"])
        .env("PALAVER_HOME", home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let unknown: Vec<&str> = of_type(&lines, "unknown_event").iter().filter_map(|u| u["event"].as_str()).collect();
    assert!(unknown.contains(&"response.demo_future_item.pinged"), "{unknown:?}");
    let result = lines.last().unwrap();
    assert_eq!(item_types(&result["items"]), ["message", "demo_future_item"]);
    assert_eq!(result["items"][1]["payload"]["version"], 2);
}
