//! Responses API output items of every type, from the hand-written `responses_hosted_*`
//! fixtures (`tests/fixtures/sse/`, provenance in its SOURCES.md): the reconstructed message
//! keeps every item in order with its type, status and fields, streams the per-item events into
//! them live, and comes out identical whatever the read size.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use common::{chunks, reconstruct};
use palaver::api::sse::SseDecoder;
use palaver::api::{Api, Mapper};
use palaver::engine::message::Message;
use palaver::engine::reducer;
use serde_json::Value;
use std::path::{Path, PathBuf};

const FIXTURES: &[&str] = &[
    "responses_hosted_web_search",
    "responses_hosted_file_search",
    "responses_hosted_code_interpreter",
    "responses_hosted_image_generation",
    "responses_hosted_mcp_call",
    "responses_hosted_mcp_approval",
    "responses_hosted_custom_tool_call",
    "responses_hosted_computer_call",
    "responses_hosted_shell_call",
    "responses_hosted_apply_patch_call",
    "responses_hosted_compaction",
    "responses_hosted_reasoning_encrypted",
    "responses_hosted_unknown_item",
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sse")
}

fn body(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(format!("{name}.sse"))).unwrap()
}

fn expected(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join(format!("{name}.expect.json"))).unwrap()).unwrap()
}

/// Reconstructs a fixture at every read size and checks they all agree; returns one of them.
fn items_at_every_read_size(name: &str) -> Message {
    let body = body(name);
    let whole = reconstruct(Api::Responses, &[&body]);
    for n in [1, 3, 7] {
        let split = reconstruct(Api::Responses, &chunks(&body, n));
        assert_eq!(split.items, whole.items, "{name}: items differ at {n}-byte reads");
        assert_eq!(split.main().annotations, whole.main().annotations, "{name}: annotations differ at {n}-byte reads");
        assert_eq!(split.main().content, whole.main().content, "{name}: text differs at {n}-byte reads");
        assert_eq!(split.unknown, whole.unknown, "{name}: unknown events differ at {n}-byte reads");
    }
    whole
}

/// Whether every field of `want` is in `got` with the same value (objects recursively; arrays
/// element by element and of the same length; everything else equal).
fn contains(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => w.iter().all(|(k, v)| g.get(k).is_some_and(|gv| contains(gv, v))),
        (Value::Array(g), Value::Array(w)) => g.len() == w.len() && g.iter().zip(w).all(|(a, b)| contains(a, b)),
        _ => got == want,
    }
}

fn types(msg: &Message) -> Vec<&str> {
    msg.items.iter().map(|i| i["type"].as_str().unwrap_or("<none>")).collect()
}

fn item<'a>(msg: &'a Message, index: usize, kind: &str) -> &'a Value {
    let item = &msg.items[index];
    assert_eq!(item["type"], kind, "item {index}: {item}");
    item
}

/// Every item of the terminal response's `output` is kept, in order, with every field.
#[test]
fn every_output_item_is_kept_in_order_with_its_fields() {
    for name in FIXTURES {
        let msg = items_at_every_read_size(name);
        let exp = expected(name);
        let want = exp["items"].as_array().unwrap();
        assert_eq!(msg.items.len(), want.len(), "{name}: {:?}", types(&msg));
        for (i, (got, want)) in msg.items.iter().zip(want).enumerate() {
            assert!(contains(got, want), "{name}: item {i}\n got {got}\nwant {want}");
        }
        assert_eq!(Value::Array(msg.main().annotations.clone()), exp["annotations"], "{name}: annotations");
        assert!(msg.error.is_none(), "{name}: {:?}", msg.error);
    }
}

/// The `response.completed` output is the same list the item events built.
#[test]
fn fixtures_agree_with_their_terminal_output() {
    for name in FIXTURES {
        let text = String::from_utf8(body(name)).unwrap();
        let last = text.lines().filter_map(|l| l.strip_prefix("data: ")).next_back().unwrap();
        let terminal: Value = serde_json::from_str(last).unwrap();
        assert_eq!(terminal["type"], "response.completed", "{name}");
        assert_eq!(terminal["response"]["output"], expected(name)["items"], "{name}");
    }
}

#[test]
fn web_search_calls_and_url_citations() {
    let msg = items_at_every_read_size("responses_hosted_web_search");
    assert_eq!(types(&msg), ["web_search_call", "web_search_call", "web_search_call", "message"]);
    let search = item(&msg, 0, "web_search_call");
    assert_eq!(search["status"], "completed");
    assert_eq!(search["action"]["type"], "search");
    assert_eq!(search["action"]["query"], "Lisbon weather forecast this weekend");
    assert_eq!(search["action"]["sources"].as_array().unwrap().len(), 2);
    assert_eq!(item(&msg, 1, "web_search_call")["action"]["type"], "open_page");
    let find = item(&msg, 2, "web_search_call");
    assert_eq!((find["action"]["type"].as_str(), find["action"]["pattern"].as_str()), (Some("find"), Some("Saturday")));
    let annotations = &msg.main().annotations;
    assert_eq!(annotations.len(), 2);
    // Indices count characters (the text has `—` and `°`), and cover the inline link.
    let text: Vec<char> = msg.main().content.chars().collect();
    for a in annotations {
        assert_eq!(a["type"], "url_citation");
        let (start, end) = (a["start_index"].as_u64().unwrap() as usize, a["end_index"].as_u64().unwrap() as usize);
        let covered: String = text[start..end].iter().collect();
        assert!(covered.contains(a["url"].as_str().unwrap()), "{covered:?} does not link {a}");
        assert!(!a["title"].as_str().unwrap_or_default().is_empty());
    }
    let content_annotations = &item(&msg, 3, "message")["content"][0]["annotations"];
    assert_eq!(content_annotations, &Value::Array(annotations.clone()));
}

#[test]
fn file_search_results_and_file_citations() {
    let msg = items_at_every_read_size("responses_hosted_file_search");
    assert_eq!(types(&msg), ["file_search_call", "message"]);
    let call = item(&msg, 0, "file_search_call");
    assert_eq!(call["status"], "completed");
    assert_eq!(call["queries"].as_array().unwrap().len(), 2);
    let first = &call["results"][0];
    assert_eq!(first["filename"], "refund-policy-2025.pdf");
    assert_eq!(first["score"].as_f64(), Some(0.9134));
    assert!(first["text"].as_str().unwrap().starts_with("Annual plans may be cancelled"));
    let kinds: Vec<&str> = msg.main().annotations.iter().map(|a| a["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["file_citation", "file_citation"]);
    assert_eq!(msg.main().annotations[1]["filename"], "billing-faq.md");
}

#[test]
fn code_interpreter_code_logs_and_image() {
    let msg = items_at_every_read_size("responses_hosted_code_interpreter");
    assert_eq!(types(&msg), ["code_interpreter_call", "message"]);
    let call = item(&msg, 0, "code_interpreter_call");
    assert_eq!(call["status"], "completed");
    assert!(call["container_id"].as_str().unwrap().starts_with("cntr_"));
    let code = call["code"].as_str().unwrap();
    assert!(code.starts_with("import numpy as np\nimport matplotlib.pyplot as plt\n\n"), "{code:?}");
    assert!(code.ends_with("print(\"saved /mnt/data/sine.png\")"), "{code:?}");
    let outputs = call["outputs"].as_array().unwrap();
    assert_eq!(outputs[0]["type"], "logs");
    assert_eq!(outputs[0]["logs"], "max = 1.0000\nsaved /mnt/data/sine.png\n");
    assert_eq!(outputs[1]["type"], "image");
    assert!(outputs[1]["url"].as_str().unwrap().starts_with("data:image/png;base64,"));
    assert_eq!(msg.main().annotations[0]["type"], "container_file_citation");
    assert_eq!(msg.main().annotations[0]["filename"], "sine.png");
}

#[test]
fn image_generation_result() {
    let msg = items_at_every_read_size("responses_hosted_image_generation");
    assert_eq!(types(&msg), ["image_generation_call", "message"]);
    let call = item(&msg, 0, "image_generation_call");
    assert_eq!(call["status"], "completed");
    assert!(call["result"].as_str().unwrap().starts_with("iVBORw0KGgo"), "a base64 PNG");
    assert!(call["revised_prompt"].as_str().unwrap().contains("cat"));
    assert_eq!(call["size"], "1024x1024");
}

/// The partial-image count is palaver's own note: it survives `response.output_item.done` and is
/// never part of the item sent back to the provider.
#[test]
fn partial_image_count_survives_output_item_done() {
    let msg = items_at_every_read_size("responses_hosted_image_generation");
    assert_eq!(msg.item_notes[&0]["partial_images"], 2);
    assert!(msg.items[0].get("partial_images").is_none());
}

#[test]
fn mcp_list_tools_and_call() {
    let msg = items_at_every_read_size("responses_hosted_mcp_call");
    assert_eq!(types(&msg), ["mcp_list_tools", "mcp_call", "message"]);
    let list = item(&msg, 0, "mcp_list_tools");
    assert_eq!(list["server_label"], "deepwiki");
    let names: Vec<&str> = list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["read_wiki_structure", "ask_question"]);
    assert!(list["tools"][1]["input_schema"]["properties"]["question"].is_object());
    let call = item(&msg, 1, "mcp_call");
    assert_eq!(call["status"], "completed");
    assert_eq!((call["server_label"].as_str(), call["name"].as_str()), (Some("deepwiki"), Some("ask_question")));
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["repoName"], "modelcontextprotocol/modelcontextprotocol");
    assert!(call["output"].as_str().unwrap().contains("Streamable HTTP"));
    assert!(call["error"].is_null());
    // Provider-run: nothing for the client to answer.
    assert!(msg.main().tool_calls.is_empty());
}

#[test]
fn mcp_approval_request() {
    let msg = items_at_every_read_size("responses_hosted_mcp_approval");
    assert_eq!(types(&msg), ["mcp_list_tools", "mcp_approval_request"]);
    let ask = item(&msg, 1, "mcp_approval_request");
    assert_eq!(ask["id"], "mcpr_68c64f55d9e08190a1b2c3d4e5f6a7b80c9d0e1f2a3b4c5d");
    assert_eq!((ask["server_label"].as_str(), ask["name"].as_str()), (Some("deepwiki"), Some("ask_question")));
    let args: Value = serde_json::from_str(ask["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["repoName"], "openai/codex");
}

#[test]
fn custom_tool_call_input() {
    let msg = items_at_every_read_size("responses_hosted_custom_tool_call");
    assert_eq!(types(&msg), ["reasoning", "custom_tool_call"]);
    let call = item(&msg, 1, "custom_tool_call");
    assert_eq!(call["status"], "completed");
    assert_eq!(call["call_id"], "call_Xk3v9QpL2mTz7RbW4nYs8HdC");
    assert_eq!(call["name"], "code_exec");
    assert_eq!(call["input"], "import math\n\nprint(math.factorial(20))\nprint(sum(i * i for i in range(10)))");
}

#[test]
fn computer_call_with_pending_safety_checks() {
    let msg = items_at_every_read_size("responses_hosted_computer_call");
    assert_eq!(types(&msg), ["reasoning", "computer_call"]);
    let call = item(&msg, 1, "computer_call");
    assert_eq!(call["status"], "completed");
    assert_eq!(call["action"]["type"], "click");
    assert_eq!((call["action"]["x"].as_u64(), call["action"]["y"].as_u64()), (Some(612), Some(438)));
    let checks = call["pending_safety_checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0]["code"], "malicious_instructions");
    assert!(checks[0]["message"].as_str().unwrap().contains("acknowledge"));
    assert_eq!(msg.main().reasoning, "Clicking the Submit button to send the form.");
    // Shown, never executed.
    assert!(msg.main().tool_calls.is_empty());
}

#[test]
fn shell_and_local_shell_calls() {
    let msg = items_at_every_read_size("responses_hosted_shell_call");
    assert_eq!(types(&msg), ["shell_call", "local_shell_call"]);
    let shell = item(&msg, 0, "shell_call");
    assert_eq!(shell["status"], "completed");
    assert_eq!(shell["action"]["commands"], serde_json::json!(["ls -la", "cat Cargo.toml | head -n 20"]));
    assert_eq!(shell["action"]["timeout_ms"], 120000);
    let local = item(&msg, 1, "local_shell_call");
    assert_eq!(local["action"]["type"], "exec");
    assert_eq!(local["action"]["command"], serde_json::json!(["bash", "-lc", "git status --short"]));
    assert_eq!(local["action"]["working_directory"], "/home/dev/palaver");
    assert_eq!(local["call_id"], "call_Gh2kT6vN9wQx3Lm8Pz5Rb7Yc");
}

#[test]
fn apply_patch_calls() {
    let msg = items_at_every_read_size("responses_hosted_apply_patch_call");
    assert_eq!(types(&msg), ["apply_patch_call", "apply_patch_call"]);
    let update = item(&msg, 0, "apply_patch_call");
    assert_eq!(update["status"], "completed");
    assert_eq!(
        (update["operation"]["type"].as_str(), update["operation"]["path"].as_str()),
        (Some("update_file"), Some("src/greet.rs"))
    );
    assert!(update["operation"]["diff"].as_str().unwrap().contains("+    format!(\"Hello, {name}!\")\n"));
    let create = item(&msg, 1, "apply_patch_call");
    assert_eq!(create["operation"]["type"], "create_file");
    assert!(create["operation"]["diff"].as_str().unwrap().ends_with("+}\n"));
}

#[test]
fn compaction_item_is_kept_verbatim() {
    let msg = items_at_every_read_size("responses_hosted_compaction");
    assert_eq!(types(&msg), ["compaction", "message"]);
    let compaction = item(&msg, 0, "compaction");
    let encrypted = compaction["encrypted_content"].as_str().unwrap();
    assert!(encrypted.starts_with("gAAAAA") && encrypted.len() > 300, "{encrypted}");
    assert_eq!(compaction, &expected("responses_hosted_compaction")["items"][0]);
}

#[test]
fn reasoning_summary_and_final_encrypted_content() {
    let msg = items_at_every_read_size("responses_hosted_reasoning_encrypted");
    assert_eq!(types(&msg), ["reasoning", "message"]);
    let reasoning = item(&msg, 0, "reasoning");
    let summary = reasoning["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 2);
    assert!(summary[1]["text"].as_str().unwrap().starts_with("**Confirming the crossover**"));
    // The copy in output_item.added is incomplete; the kept one is the final one.
    let encrypted = reasoning["encrypted_content"].as_str().unwrap();
    assert_eq!(encrypted, expected("responses_hosted_reasoning_encrypted")["items"][0]["encrypted_content"]);
    let paragraphs: Vec<&str> = msg.main().reasoning.split("\n\n**").collect();
    assert_eq!(paragraphs.len(), 2, "{:?}", msg.main().reasoning);
    assert_eq!(msg.main().content, "The smallest n > 1 with 2^n > n^10 is **59**.");
}

#[test]
fn unknown_item_type_and_events_are_kept() {
    let msg = items_at_every_read_size("responses_hosted_unknown_item");
    assert_eq!(types(&msg), ["future_widget_call", "message"]);
    let widget = item(&msg, 0, "future_widget_call");
    assert_eq!(widget["status"], "completed");
    assert_eq!(widget["widget"]["series"][1]["value"], 1.7);
    assert_eq!(widget["render"]["format"], "svg");
    let unknown: Vec<&str> = msg.unknown.iter().filter_map(|u| u["event"].as_str()).collect();
    for event in expected("responses_hosted_unknown_item")["unknown_events"].as_array().unwrap() {
        assert!(unknown.contains(&event.as_str().unwrap()), "{event} not kept: {unknown:?}");
    }
    assert_eq!(msg.main().content, "Revenue grew about 42% from Q1 to Q2.");
    assert_eq!(msg.main().finish_reason.as_deref(), Some("stop"));
}

/// Applies a fixture's events one at a time and records item `index` just before its
/// `response.output_item.done` replaced it, and the statuses it went through.
fn live_item(name: &str, index: usize) -> (Value, Vec<String>) {
    let body = body(name);
    let mut dec = SseDecoder::new();
    let mut mapper = Mapper::new(Api::Responses);
    let mut events = Vec::new();
    dec.push(&body, &mut |e| mapper.map(e.event, e.data, &mut events));
    dec.finish(&mut |e| mapper.map(e.event, e.data, &mut events));
    let mut msg = Message::assistant_pending();
    let mut statuses: Vec<String> = Vec::new();
    let mut before_done = Value::Null;
    for e in events {
        let done_of_index =
            matches!(&e, palaver::api::event::StreamEvent::Item { index: i, done: true, .. } if *i as usize == index);
        if done_of_index {
            before_done = msg.items[index].clone();
        }
        reducer::apply(&mut msg, e, 1);
        if let Some(s) = msg.items.get(index).and_then(|i| i["status"].as_str()) {
            if statuses.last().map(String::as_str) != Some(s) {
                statuses.push(s.to_owned());
            }
        }
    }
    (before_done, statuses)
}

/// Between `added` and `done`, the per-item events grow and update the item.
#[test]
fn per_item_events_update_the_item_live() {
    let (search, statuses) = live_item("responses_hosted_web_search", 0);
    assert_eq!(search["type"], "web_search_call");
    assert_eq!(statuses, ["in_progress", "searching", "completed"]);

    let (code, statuses) = live_item("responses_hosted_code_interpreter", 0);
    let want = &expected("responses_hosted_code_interpreter")["items"][0]["code"];
    assert_eq!(&code["code"], want, "code assembled from the deltas before the item is done");
    assert_eq!(statuses, ["in_progress", "interpreting", "completed"]);

    let (_, statuses) = live_item("responses_hosted_image_generation", 0);
    assert_eq!(statuses, ["in_progress", "generating", "completed"]);

    let (call, statuses) = live_item("responses_hosted_mcp_call", 1);
    let args =
        r#"{"repoName":"modelcontextprotocol/modelcontextprotocol","question":"Which transports does MCP support?"}"#;
    assert_eq!(call["arguments"], args);
    assert_eq!(statuses, ["in_progress", "completed"]);

    let (list, statuses) = live_item("responses_hosted_mcp_call", 0);
    assert_eq!(list["type"], "mcp_list_tools");
    assert_eq!(statuses, ["in_progress", "completed"]);

    let (custom, _) = live_item("responses_hosted_custom_tool_call", 1);
    assert_eq!(custom["input"], expected("responses_hosted_custom_tool_call")["items"][1]["input"]);

    let (search, statuses) = live_item("responses_hosted_file_search", 0);
    assert_eq!(search["type"], "file_search_call");
    assert_eq!(statuses, ["in_progress", "searching", "completed"]);

    // An unknown item type still gets the generic `response.<type>.<state>` progress.
    let (widget, statuses) = live_item("responses_hosted_unknown_item", 0);
    assert_eq!(widget["type"], "future_widget_call");
    assert_eq!(statuses, ["in_progress", "completed"]);
}
