//! End-to-end tests of the embedded demo provider over real HTTP.

#![allow(clippy::disallowed_methods)] // tests read what they wrote

use std::error::Error;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use palaver::demo::{self, DemoServer, MODELS};
use serde_json::{Value, json};

type TestResult<T = ()> = Result<T, Box<dyn Error>>;

const TOOLS_CHAT: &str = r#"[
    {"type":"function","function":{"name":"list_directory","parameters":{"type":"object"}}},
    {"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}},
    {"type":"function","function":{"name":"current_time","parameters":{"type":"object"}}}]"#;

const TOOLS_RESPONSES: &str = r#"[
    {"type":"function","name":"list_directory","parameters":{"type":"object"}},
    {"type":"function","name":"read_file","parameters":{"type":"object"}},
    {"type":"function","name":"current_time","parameters":{"type":"object"}}]"#;

async fn post(server: &DemoServer, path: &str, body: &Value) -> TestResult<reqwest::Response> {
    let url = format!("{}/{path}", server.base_url);
    Ok(reqwest::Client::new().post(url).json(body).send().await?)
}

fn chat(model: &str, stream: bool, user: &str) -> Value {
    json!({ "model": model, "stream": stream, "messages": [{ "role": "user", "content": user }] })
}

/// The body's SSE frames, split on blank lines.
async fn frames(resp: reqwest::Response) -> TestResult<Vec<String>> {
    assert_eq!(resp.status(), 200);
    let content_type = resp.headers().get("content-type").ok_or("no content-type")?;
    assert_eq!(content_type.to_str()?, "text/event-stream");
    let text = resp.text().await?;
    assert!(text.ends_with("\n\n"), "stream must end on a frame boundary");
    Ok(text.split("\n\n").filter(|f| !f.is_empty()).map(str::to_string).collect())
}

/// The JSON of every chat `data:` frame, and whether `[DONE]` was the last frame.
fn chat_chunks(frames: &[String]) -> TestResult<(Vec<Value>, bool)> {
    let mut chunks = Vec::new();
    let mut done = false;
    for (i, frame) in frames.iter().enumerate() {
        let data = frame.strip_prefix("data: ").ok_or("frame without `data: `")?;
        if data == "[DONE]" {
            assert_eq!(i, frames.len() - 1, "[DONE] must be last");
            done = true;
        } else {
            chunks.push(serde_json::from_str(data)?);
        }
    }
    Ok((chunks, done))
}

async fn chat_stream(server: &DemoServer, body: &Value) -> TestResult<(Vec<Value>, bool)> {
    chat_chunks(&frames(post(server, "chat/completions", body).await?).await?)
}

fn finish_reasons(chunks: &[Value]) -> Vec<String> {
    chunks.iter().filter_map(|c| c["choices"][0]["finish_reason"].as_str().map(str::to_string)).collect()
}

fn content(chunks: &[Value]) -> String {
    chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect()
}

/// Responses events, checking the `event:` line names the data's type and that sequence
/// numbers increase by one from zero.
async fn response_events(server: &DemoServer, body: &Value) -> TestResult<Vec<Value>> {
    let mut events = Vec::new();
    for (i, frame) in frames(post(server, "responses", body).await?).await?.iter().enumerate() {
        let (event_line, data_line) = frame.split_once('\n').ok_or("frame without two lines")?;
        let kind = event_line.strip_prefix("event: ").ok_or("no event line")?;
        let data: Value = serde_json::from_str(data_line.strip_prefix("data: ").ok_or("no data line")?)?;
        assert_eq!(data["type"], kind);
        assert_eq!(data["sequence_number"], i);
        events.push(data);
    }
    Ok(events)
}

/// Event types with runs of the same delta type collapsed into one `…×` entry.
fn shape(events: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for event in events {
        let kind = event["type"].as_str().unwrap_or_default().to_string();
        let run = format!("{kind}×");
        if kind.ends_with(".delta") {
            if out.last() != Some(&run) {
                out.push(run);
            }
        } else {
            out.push(kind);
        }
    }
    out
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn models_lists_the_nine_models() -> TestResult {
    let server = demo::spawn_local().await?;
    let body: Value = reqwest::get(format!("{}/models", server.base_url)).await?.json().await?;
    let ids: Vec<&str> = body["data"].as_array().ok_or("no data")?.iter().filter_map(|m| m["id"].as_str()).collect();
    let expected: Vec<&str> = MODELS.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, expected);
    assert_eq!(ids.len(), 9);
    Ok(())
}

#[tokio::test]
async fn chat_demo_streams_markdown_with_safe_filters_and_usage() -> TestResult {
    let server = demo::spawn_local().await?;
    let mut body = chat("demo", true, "Show me   what you can do");
    body["stream_options"] = json!({ "include_usage": true });
    let started = Instant::now();
    let (chunks, done) = chat_stream(&server, &body).await?;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(done);
    let first = &chunks[0];
    assert_eq!(first["choices"], json!([]));
    let prompt = &first["prompt_filter_results"][0];
    assert_eq!(prompt["prompt_index"], 0);
    assert_eq!(prompt["content_filter_results"]["jailbreak"], json!({ "filtered": false, "detected": false }));
    assert_eq!(chunks[1]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(chunks[1]["id"], "chatcmpl-demo-1");
    assert_eq!(chunks[1]["object"], "chat.completion.chunk");
    let text = content(&chunks);
    assert!(text.starts_with("> Turn 1"));
    assert!(text.contains("Show me what you can do"));
    for needle in ["## ", "- ", "**", "|---|", "```rust"] {
        assert!(text.contains(needle), "missing {needle}");
    }
    let with_content: Vec<&Value> =
        chunks.iter().filter(|c| c["choices"][0]["delta"]["content"].as_str().is_some_and(|s| !s.is_empty())).collect();
    assert!(with_content.len() > 20, "text should arrive in small pieces");
    for chunk in with_content {
        let filter = &chunk["choices"][0]["content_filter_results"];
        assert_eq!(filter["violence"], json!({ "filtered": false, "severity": "safe" }));
        assert_eq!(filter["protected_material_code"], json!({ "filtered": false, "detected": false }));
    }
    assert_eq!(finish_reasons(&chunks), ["stop"]);
    let last = chunks.last().ok_or("no chunks")?;
    assert_eq!(last["choices"], json!([]));
    let usage = &last["usage"];
    assert!(usage["prompt_tokens"].as_u64() > Some(0));
    assert!(usage["prompt_tokens_details"]["cached_tokens"].as_u64() > Some(0));
    assert!(usage["completion_tokens_details"]["reasoning_tokens"].as_u64() > Some(0));
    assert!(usage["completion_tokens_details"]["accepted_prediction_tokens"].is_u64());
    assert!(usage["completion_tokens_details"]["rejected_prediction_tokens"].is_u64());
    assert!(usage["completion_tokens_details"]["audio_tokens"].is_u64());
    Ok(())
}

#[tokio::test]
async fn chat_tools_streams_parallel_calls_in_fragments() -> TestResult {
    let server = demo::spawn_local().await?;
    let mut body = chat("demo-tools", true, "What is in this project?");
    body["tools"] = serde_json::from_str(TOOLS_CHAT)?;
    let (chunks, done) = chat_stream(&server, &body).await?;
    assert!(done);
    assert!(chunks.iter().all(|c| c.get("usage").is_none()), "no usage without include_usage");
    assert_eq!(chunks[0]["choices"][0]["delta"]["content"], Value::Null);
    let mut calls: Vec<(String, String, String, usize)> = Vec::new();
    for chunk in &chunks {
        let Some(fragments) = chunk["choices"][0]["delta"]["tool_calls"].as_array() else {
            continue;
        };
        for fragment in fragments {
            let index = fragment["index"].as_u64().ok_or("no index")? as usize;
            if index == calls.len() {
                assert_eq!(fragment["type"], "function");
                assert_eq!(fragment["function"]["arguments"], "");
                let id = fragment["id"].as_str().ok_or("no id")?.to_string();
                let name = fragment["function"]["name"].as_str().ok_or("no name")?.to_string();
                calls.push((id, name, String::new(), 0));
            } else {
                assert!(fragment.get("id").is_none() && fragment["function"].get("name").is_none());
                let call = calls.get_mut(index).ok_or("fragment for an unknown index")?;
                call.2.push_str(fragment["function"]["arguments"].as_str().ok_or("no arguments")?);
                call.3 += 1;
            }
        }
    }
    let names: Vec<&str> = calls.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(names, ["list_directory", "read_file", "current_time"]);
    for (_, _, arguments, _) in &calls {
        serde_json::from_str::<Value>(arguments)?;
    }
    assert!(calls[0].3 > 1, "arguments should stream in several pieces");
    assert_eq!(finish_reasons(&chunks), ["tool_calls"]);
    Ok(())
}

#[tokio::test]
async fn chat_tools_follow_up_answers_from_results() -> TestResult {
    let server = demo::spawn_local().await?;
    let body = json!({ "model": "demo-tools", "stream": true, "tools": serde_json::from_str::<Value>(TOOLS_CHAT)?,
        "messages": [
            { "role": "user", "content": "hello" },
            { "role": "assistant", "content": "hi" },
            { "role": "user", "content": [{ "type": "text", "text": "look around" }] },
            { "role": "assistant", "content": null, "tool_calls": [
                { "id": "call_a", "type": "function", "function": { "name": "list_directory", "arguments": "{}" } },
                { "id": "call_b", "type": "function", "function": { "name": "read_file", "arguments": "{}" } } ] },
            { "role": "tool", "tool_call_id": "call_a", "content": "Cargo.toml\nsrc\ntests" },
            { "role": "tool", "tool_call_id": "call_b", "content": "[package]\nname = \"palaver\"" } ] });
    let (chunks, done) = chat_stream(&server, &body).await?;
    assert!(done);
    let text = content(&chunks);
    assert!(text.contains("Turn 2") && text.contains("look around"));
    assert!(text.contains("`list_directory` returned 3 lines"));
    assert!(text.contains("first line: `[package]`"));
    assert_eq!(finish_reasons(&chunks), ["stop"]);
    Ok(())
}

#[tokio::test]
async fn chat_tools_calls_only_offered_tools() -> TestResult {
    let server = demo::spawn_local().await?;
    let mut body = chat("demo-tools", false, "read it");
    body["tools"] = json!([{ "type": "function", "function": { "name": "read_file" } }]);
    let reply: Value = post(&server, "chat/completions", &body).await?.json().await?;
    let calls = reply["choices"][0]["message"]["tool_calls"].as_array().ok_or("no tool calls")?;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["function"]["name"], "read_file");
    assert_eq!(reply["choices"][0]["finish_reason"], "tool_calls");

    let (chunks, _) = chat_stream(&server, &chat("demo-tools", true, "read it")).await?;
    assert!(content(&chunks).contains("No tools were offered"));
    assert_eq!(finish_reasons(&chunks), ["stop"]);
    Ok(())
}

#[tokio::test]
async fn chat_safety_stops_on_content_filter() -> TestResult {
    let server = demo::spawn_local().await?;
    let (chunks, done) = chat_stream(&server, &chat("demo-safety", true, "tell me a story")).await?;
    assert!(done);
    let jailbreak = &chunks[0]["prompt_filter_results"][0]["content_filter_results"]["jailbreak"];
    assert_eq!(jailbreak["detected"], true);
    let filters: Vec<&Value> = chunks.iter().map(|c| &c["choices"][0]["content_filter_results"]).collect();
    let severities: Vec<&str> = filters.iter().filter_map(|f| f["violence"]["severity"].as_str()).collect();
    assert!(severities.contains(&"medium"));
    assert_eq!(severities.last(), Some(&"high"));
    assert!(filters.iter().any(|f| f["protected_material_code"]["citation"]["license"] == "MIT"));
    let finish = chunks.iter().find(|c| c["choices"][0]["finish_reason"].is_string()).ok_or("no finish")?;
    assert_eq!(finish["choices"][0]["finish_reason"], "content_filter");
    assert_eq!(finish["choices"][0]["content_filter_results"]["violence"]["filtered"], true);
    Ok(())
}

#[tokio::test]
async fn chat_reasoning_streams_before_content() -> TestResult {
    let server = demo::spawn_local().await?;
    let mut body = chat("demo-reasoning", true, "why?");
    body["stream_options"] = json!({ "include_usage": true });
    let (chunks, done) = chat_stream(&server, &body).await?;
    assert!(done);
    let deltas: Vec<&Value> = chunks.iter().map(|c| &c["choices"][0]["delta"]).collect();
    let first_reasoning = deltas.iter().position(|d| d["reasoning_content"].is_string()).ok_or("no reasoning")?;
    let last_reasoning = deltas.iter().rposition(|d| d["reasoning_content"].is_string()).ok_or("no reasoning")?;
    let first_text =
        deltas.iter().position(|d| d["content"].as_str().is_some_and(|s| !s.is_empty())).ok_or("no text")?;
    assert!(first_reasoning < last_reasoning && last_reasoning < first_text);
    assert!(deltas[first_reasoning]["content"].is_null());
    let usage = &chunks.last().ok_or("no chunks")?["usage"];
    assert!(usage["completion_tokens_details"]["reasoning_tokens"].as_u64() > Some(0));
    Ok(())
}

#[tokio::test]
async fn chat_slow_streams_slowly_and_can_be_dropped() -> TestResult {
    let server = demo::spawn_local().await?;
    let resp = post(&server, "chat/completions", &chat("demo-slow", true, "go slow")).await?;
    let started = Instant::now();
    let mut stream = resp.bytes_stream();
    let mut seen = String::new();
    while seen.matches("\n\n").count() < 4 {
        seen.push_str(std::str::from_utf8(&stream.next().await.ok_or("stream ended")??)?);
    }
    assert!(started.elapsed() >= Duration::from_millis(200), "demo-slow should be slow");
    drop(stream);
    // The server must keep serving after a client hangs up mid-stream.
    let (chunks, done) = chat_stream(&server, &chat("demo-tools", true, "still there?")).await?;
    assert!(done && !chunks.is_empty());
    Ok(())
}

#[tokio::test]
async fn chat_non_streaming_replies() -> TestResult {
    let server = demo::spawn_local().await?;
    let reply: Value = post(&server, "chat/completions", &chat("demo", false, "hi")).await?.json().await?;
    assert_eq!(reply["object"], "chat.completion");
    let choice = &reply["choices"][0];
    assert_eq!(choice["finish_reason"], "stop");
    assert!(choice["message"]["content"].as_str().is_some_and(|t| t.contains("```rust")));
    assert_eq!(choice["content_filter_results"]["hate"]["severity"], "safe");
    assert_eq!(reply["prompt_filter_results"][0]["prompt_index"], 0);
    assert!(reply["usage"]["total_tokens"].as_u64() > Some(0));

    let mut body = chat("demo-tools", false, "hi");
    body["tools"] = serde_json::from_str(TOOLS_CHAT)?;
    let reply: Value = post(&server, "chat/completions", &body).await?.json().await?;
    assert_eq!(reply["choices"][0]["message"]["content"], Value::Null);
    assert_eq!(reply["choices"][0]["message"]["tool_calls"].as_array().map(Vec::len), Some(3));
    assert!(reply.get("prompt_filter_results").is_none());
    Ok(())
}

#[tokio::test]
async fn responses_demo_stream_has_the_documented_sequence() -> TestResult {
    let server = demo::spawn_local().await?;
    let body = json!({ "model": "demo", "stream": true, "input": "hello responses" });
    let events = response_events(&server, &body).await?;
    let expected = strings(&[
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta×",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(shape(&events), expected);
    assert_eq!(events[0]["response"]["status"], "in_progress");
    let deltas: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    let done = events.iter().find(|e| e["type"] == "response.output_text.done").ok_or("no done")?;
    assert_eq!(done["text"], deltas.as_str());
    assert!(deltas.contains("hello responses"));
    let completed = &events.last().ok_or("no events")?["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"][0]["content"][0]["text"], deltas.as_str());
    assert!(completed["usage"]["input_tokens"].as_u64() > Some(0));
    assert!(completed["usage"]["output_tokens_details"]["reasoning_tokens"].is_u64());
    Ok(())
}

#[tokio::test]
async fn responses_tools_stream_calls_and_answer_follow_up() -> TestResult {
    let server = demo::spawn_local().await?;
    let tools: Value = serde_json::from_str(TOOLS_RESPONSES)?;
    let body = json!({ "model": "demo-tools", "stream": true, "input": "look", "tools": tools });
    let events = response_events(&server, &body).await?;
    let call = [
        "response.output_item.added",
        "response.function_call_arguments.delta×",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ];
    let mut expected = strings(&["response.created", "response.in_progress"]);
    for _ in 0..3 {
        expected.extend(strings(&call));
    }
    expected.push("response.completed".to_string());
    assert_eq!(shape(&events), expected);
    let output = events.last().ok_or("no events")?["response"]["output"].as_array().ok_or("no output")?.clone();
    assert_eq!(output[0]["type"], "function_call");
    assert_eq!(output[0]["name"], "list_directory");
    serde_json::from_str::<Value>(output[1]["arguments"].as_str().ok_or("no arguments")?)?;

    let mut input = vec![json!({ "role": "user", "content": [{ "type": "input_text", "text": "look" }] })];
    input.extend(output.iter().cloned());
    for item in &output {
        input.push(json!({ "type": "function_call_output", "call_id": item["call_id"], "output": "one\ntwo" }));
    }
    let body = json!({ "model": "demo-tools", "stream": true, "input": input, "tools": tools });
    let events = response_events(&server, &body).await?;
    let text: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert!(text.contains("`read_file` returned 2 lines") && text.contains("`current_time`"));
    assert_eq!(events.last().ok_or("no events")?["type"], "response.completed");
    Ok(())
}

#[tokio::test]
async fn responses_reasoning_and_safety_streams() -> TestResult {
    let server = demo::spawn_local().await?;
    let events =
        response_events(&server, &json!({ "model": "demo-reasoning", "stream": true, "input": "think" })).await?;
    let kinds = shape(&events);
    for kind in [
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta×",
        "response.reasoning_summary_text.done",
    ] {
        assert!(kinds.contains(&kind.to_string()), "missing {kind}");
    }
    let reasoning_done =
        events.iter().find(|e| e["item"]["type"] == "reasoning" && e["type"] == "response.output_item.done");
    assert!(
        reasoning_done.ok_or("no reasoning item")?["item"]["encrypted_content"].as_str().is_some_and(|s| s.len() > 20)
    );
    let completed = &events.last().ok_or("no events")?["response"];
    assert_eq!(completed["output"][1]["type"], "message");

    let events = response_events(&server, &json!({ "model": "demo-safety", "stream": true, "input": "fight" })).await?;
    let last = events.last().ok_or("no events")?;
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(last["response"]["incomplete_details"]["reason"], "content_filter");
    Ok(())
}

#[tokio::test]
async fn responses_non_streaming_replies() -> TestResult {
    let server = demo::spawn_local().await?;
    let body = json!({ "model": "demo", "input": [{ "role": "user", "content": "hi there" }] });
    let reply: Value = post(&server, "responses", &body).await?.json().await?;
    assert_eq!(reply["object"], "response");
    assert_eq!(reply["status"], "completed");
    assert!(reply["output"][0]["content"][0]["text"].as_str().is_some_and(|t| t.contains("hi there")));
    let tools: Value = serde_json::from_str(TOOLS_RESPONSES)?;
    let body = json!({ "model": "demo-tools", "input": "look", "tools": tools });
    let reply: Value = post(&server, "responses", &body).await?.json().await?;
    let output = reply["output"].as_array().ok_or("no output")?;
    assert_eq!(output.len(), 3);
    assert!(output.iter().all(|item| item["type"] == "function_call" && item["status"] == "completed"));
    Ok(())
}

#[tokio::test]
async fn demo_error_alternates_rate_limits_and_broken_streams() -> TestResult {
    let server = demo::spawn_local().await?;
    let body = chat("demo-error", true, "hi");
    let limited = post(&server, "chat/completions", &body).await?;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers().get("retry-after").ok_or("no retry-after")?.to_str()?, "1");
    let error: Value = limited.json().await?;
    assert_eq!(error["error"]["code"], "rate_limit_exceeded");

    let (chunks, done) = chat_stream(&server, &body).await?;
    assert!(!done, "a failed stream ends without [DONE]");
    assert!(!content(&chunks).is_empty());
    assert_eq!(chunks.last().ok_or("no chunks")?["error"]["type"], "server_error");

    assert_eq!(post(&server, "chat/completions", &body).await?.status(), 429);
    let body = json!({ "model": "demo-error", "stream": true, "input": "hi" });
    let events = response_events(&server, &body).await?;
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds[kinds.len() - 2..], ["error", "response.failed"]);

    let body = chat("demo-error", false, "hi");
    assert_eq!(post(&server, "chat/completions", &body).await?.status(), 429);
    let failed = post(&server, "chat/completions", &body).await?;
    assert_eq!(failed.status(), 500);
    assert_eq!(failed.json::<Value>().await?["error"]["type"], "server_error");
    Ok(())
}

#[tokio::test]
async fn bad_requests_get_openai_error_bodies() -> TestResult {
    let server = demo::spawn_local().await?;
    let missing = post(&server, "chat/completions", &chat("gpt-x", true, "hi")).await?;
    assert_eq!(missing.status(), 404);
    let error: Value = missing.json().await?;
    assert_eq!(error["error"]["code"], "model_not_found");
    assert_eq!(error["error"]["message"], "The model `gpt-x` does not exist");

    let url = format!("{}/responses", server.base_url);
    let malformed = reqwest::Client::new().post(url).body("{not json").send().await?;
    assert_eq!(malformed.status(), 400);
    assert_eq!(malformed.json::<Value>().await?["error"]["type"], "invalid_request_error");

    let body = json!({ "messages": [{ "role": "user", "content": "no model" }] });
    let reply: Value = post(&server, "chat/completions", &body).await?.json().await?;
    assert_eq!(reply["model"], "demo");
    Ok(())
}
