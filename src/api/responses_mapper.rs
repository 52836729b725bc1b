//! Responses API: routes each event by its JSON `type` (not the `event:` line, which relays
//! drop) into domain `StreamEvent`s. Unknown event types are kept raw, never fatal.

use super::event::{CallFragment, ItemUpdate, ResponseMeta, StreamEvent};
use super::timings::{self, UsageAndTimings};
use super::wire::{error_from_value, str_field};
use serde_json::{Map, Value};

/// Per-stream state: function calls by item id (their slot is the order they appeared in),
/// the last reasoning summary index, and whether any function call was seen.
#[derive(Debug, Default)]
pub struct ResponsesMapper {
    call_items: Vec<String>,
    reasoning_key: Option<(u64, u64)>,
    saw_reasoning: bool,
    errored: bool,
    partial_images: std::collections::HashMap<u32, u64>,
    last_item: u32,
}

impl ResponsesMapper {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps one SSE event (`event:` type and data payload).
    pub fn map_data(&mut self, event: &str, data: &str, out: &mut Vec<StreamEvent>) {
        // Responses streams have no `[DONE]`, but relays such as LiteLLM append one.
        if data.starts_with("[DONE]") {
            out.push(StreamEvent::End);
            return;
        }
        match super::json_bounded::from_str(data) {
            Ok(Value::Object(obj)) => self.map_event(&obj, event, out),
            Ok(other) => out.push(StreamEvent::Unknown { event: event.to_owned(), raw: other }),
            Err(e) => out.push(StreamEvent::Malformed { data: data.to_owned(), reason: e.to_string() }),
        }
    }

    /// Maps one event object.
    pub fn map_event(&mut self, obj: &Map<String, Value>, sse_event: &str, out: &mut Vec<StreamEvent>) {
        let kind = str_field(obj, "type").unwrap_or(sse_event);
        let delta = || str_field(obj, "delta").unwrap_or_default().to_owned();
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                if let Some(r) = obj.get("response") {
                    push_meta(r, out);
                }
            }
            "response.output_item.added" | "response.output_item.done" => {
                let done = kind.ends_with("done");
                let index = obj.get("output_index").and_then(Value::as_u64).unwrap_or(0) as u32;
                self.last_item = index;
                if let Some(item) = obj.get("item") {
                    self.map_item(item, done, out);
                    out.push(StreamEvent::Item { index, item: item.clone(), done });
                }
            }
            "response.output_text.delta" => {
                let d = delta();
                if !d.is_empty() {
                    out.push(StreamEvent::Text { choice: 0, delta: d.into() });
                }
                if let Some(lp) = obj.get("logprobs").filter(|v| v.as_array().is_some_and(|a| !a.is_empty())) {
                    out.push(StreamEvent::Logprobs { choice: 0, value: lp.clone() });
                }
            }
            "response.refusal.delta" => out.push(StreamEvent::Refusal { choice: 0, delta: delta().into() }),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let key = (
                    obj.get("output_index").and_then(Value::as_u64).unwrap_or(0),
                    obj.get("summary_index").or_else(|| obj.get("content_index")).and_then(Value::as_u64).unwrap_or(0),
                );
                let mut d = delta();
                // Several summary parts are separate paragraphs.
                if self.saw_reasoning && self.reasoning_key != Some(key) {
                    d.insert_str(0, "\n\n");
                }
                self.reasoning_key = Some(key);
                self.saw_reasoning = true;
                out.push(StreamEvent::Reasoning { choice: 0, delta: d.into() });
            }
            "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
                let item_id = str_field(obj, "item_id").unwrap_or_default();
                let slot = self.call_slot(item_id);
                if kind.ends_with("delta") {
                    let arguments = delta();
                    out.push(arguments_fragment(slot, arguments));
                } else if let Some(args) = str_field(obj, "arguments") {
                    out.push(StreamEvent::ToolCallArguments { choice: 0, slot, arguments: args.to_owned() });
                }
            }
            "response.output_text.annotation.added" => {
                if let Some(a) = obj.get("annotation") {
                    out.push(StreamEvent::Annotation { choice: 0, value: a.clone() });
                }
            }
            "response.completed" | "response.incomplete" | "response.failed" => self.map_terminal(obj, out),
            "error" => {
                self.errored = true;
                out.push(StreamEvent::Error(Box::new(error_from_value(None, &Value::Object(obj.clone())))));
            }
            "response.code_interpreter_call_code.delta" => self.append(obj, "code", out),
            "response.mcp_call_arguments.delta" => self.append(obj, "arguments", out),
            "response.shell_call_command.delta" => self.append(obj, "streaming_commands", out),
            "response.apply_patch_call_operation_diff.delta" => self.append(obj, "streaming_diff", out),
            "response.shell_call_command.added"
            | "response.shell_call_command.done"
            | "response.apply_patch_call_operation_diff.done" => {}
            "response.custom_tool_call_input.delta" => {
                self.append(obj, "input", out);
                let slot = self.call_slot(str_field(obj, "item_id").unwrap_or_default());
                let arguments = delta();
                out.push(arguments_fragment(slot, arguments));
            }
            "response.code_interpreter_call_code.done" => self.set(obj, "code", "code", out),
            "response.mcp_call_arguments.done" => self.set(obj, "arguments", "arguments", out),
            "response.custom_tool_call_input.done" => self.set(obj, "input", "input", out),
            "response.image_generation_call.partial_image" => {
                let index = output_index(obj);
                let n = self.partial_images.entry(index).or_insert(0);
                *n += 1;
                let update = ItemUpdate::Note { field: "partial_images".into(), value: Value::from(*n) };
                out.push(StreamEvent::ItemUpdate { index, update });
            }
            t if is_item_progress(t) && obj.contains_key("output_index") => {
                let status = t.rsplit('.').next().unwrap_or_default().to_owned();
                out.push(StreamEvent::ItemUpdate { index: output_index(obj), update: ItemUpdate::Status(status) });
            }
            // Bookkeeping events whose content arrives elsewhere too.
            "response.output_text.done"
            | "response.refusal.done"
            | "response.content_part.added"
            | "response.content_part.done"
            | "response.reasoning_summary_part.added"
            | "response.reasoning_summary_part.done"
            | "response.reasoning_summary_text.done"
            | "response.reasoning_text.done" => {}
            _ => out.push(StreamEvent::Unknown { event: kind.to_owned(), raw: Value::Object(obj.clone()) }),
        }
    }

    fn append(&self, obj: &Map<String, Value>, field: &str, out: &mut Vec<StreamEvent>) {
        let delta = str_field(obj, "delta").unwrap_or_default().to_owned();
        let update = ItemUpdate::Append { field: field.to_owned(), delta };
        // Some per-item events carry no output_index: they belong to the latest item.
        let index = obj.get("output_index").and_then(Value::as_u64).map_or(self.last_item, |i| i as u32);
        out.push(StreamEvent::ItemUpdate { index, update });
    }

    fn set(&self, obj: &Map<String, Value>, key: &str, field: &str, out: &mut Vec<StreamEvent>) {
        if let Some(value) = obj.get(key) {
            let update = ItemUpdate::Set { field: field.to_owned(), value: value.clone() };
            out.push(StreamEvent::ItemUpdate { index: output_index(obj), update });
        }
    }

    fn call_slot(&mut self, item_id: &str) -> u32 {
        if let Some(i) = self.call_items.iter().position(|k| k == item_id) {
            return i as u32;
        }
        self.call_items.push(item_id.to_owned());
        (self.call_items.len() - 1) as u32
    }

    /// Items palaver answers on the user's side become tool calls: function calls, custom tool
    /// calls, shell and local shell calls, patches and MCP approval requests.
    fn map_item(&mut self, item: &Value, done: bool, out: &mut Vec<StreamEvent>) {
        let Some(obj) = item.as_object() else { return };
        let Some(call) = user_side_call(obj) else { return };
        let item_id = str_field(obj, "id").unwrap_or_default().to_owned();
        let known = self.call_items.contains(&item_id);
        let slot = self.call_slot(&item_id);
        if !known {
            let UserSideCall { id, name, arguments, kind } = call;
            out.push(StreamEvent::ToolCall(Box::new(CallFragment {
                choice: 0,
                slot,
                id,
                name,
                arguments,
                extra: None,
                kind,
                index: None,
            })));
        } else if done {
            out.push(StreamEvent::ToolCallArguments { choice: 0, slot, arguments: call.arguments });
        }
    }

    fn map_terminal(&mut self, obj: &Map<String, Value>, out: &mut Vec<StreamEvent>) {
        let response = obj.get("response").cloned().unwrap_or(Value::Null);
        push_meta(&response, out);
        // Items the stream never announced (a relay that only sends the terminal event) still count.
        if self.call_items.is_empty() {
            if let Some(items) = response.get("output").and_then(Value::as_array) {
                for item in items {
                    self.map_item(item, true, out);
                }
            }
        }
        // llama.cpp puts its `timings` on the terminal event itself, beside `response`.
        let timings = obj.get(timings::KEY).or_else(|| response.get(timings::KEY));
        UsageAndTimings::default().note(response.get("usage"), timings, out);
        let status = response
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or_else(|| str_field(obj, "type").and_then(|t| t.strip_prefix("response.")).unwrap_or("completed"));
        let reason = match status {
            "completed" if !self.call_items.is_empty() => "tool_calls".to_owned(),
            "completed" => "stop".to_owned(),
            "incomplete" => {
                let why = response.pointer("/incomplete_details/reason").and_then(Value::as_str);
                if why == Some("content_filter") { "content_filter" } else { "length" }.to_owned()
            }
            "failed" => {
                if !self.errored {
                    let err = response.get("error").cloned().unwrap_or(Value::Null);
                    out.push(StreamEvent::Error(Box::new(error_from_value(
                        None,
                        &serde_json::json!({ "error": err }),
                    ))));
                }
                "error".to_owned()
            }
            other => other.to_owned(),
        };
        out.push(StreamEvent::Finish { choice: 0, reason });
        out.push(StreamEvent::End);
    }
}

struct UserSideCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    kind: Option<String>,
}

fn user_side_call(obj: &Map<String, Value>) -> Option<UserSideCall> {
    // Answers name the call_id, not the item id (function_call_output must use call_id).
    let call_id = str_field(obj, "call_id").or_else(|| str_field(obj, "id")).map(str::to_owned);
    let text = |k: &str| str_field(obj, k).unwrap_or_default().to_owned();
    let json = |k: &str| obj.get(k).map(Value::to_string).unwrap_or_default();
    let (name, arguments, kind) = match str_field(obj, "type")? {
        "function_call" => (str_field(obj, "name").map(str::to_owned), text("arguments"), None),
        "custom_tool_call" => (str_field(obj, "name").map(str::to_owned), text("input"), Some("custom")),
        "shell_call" => (Some("shell".to_owned()), json("action"), Some("shell")),
        "local_shell_call" => (Some("local_shell".to_owned()), json("action"), Some("local_shell")),
        "apply_patch_call" => (Some("apply_patch".to_owned()), json("operation"), Some("apply_patch")),
        "mcp_approval_request" => {
            let name = format!("{}.{}", text("server_label"), text("name"));
            let id = str_field(obj, "id").map(str::to_owned);
            return Some(UserSideCall {
                id,
                name: Some(name),
                arguments: text("arguments"),
                kind: Some("mcp_approval".into()),
            });
        }
        _ => return None,
    };
    Some(UserSideCall { id: call_id, name, arguments, kind: kind.map(str::to_owned) })
}

/// A piece of a known call's arguments (or a custom call's input).
fn arguments_fragment(slot: u32, arguments: String) -> StreamEvent {
    StreamEvent::ToolCall(Box::new(CallFragment {
        choice: 0,
        slot,
        id: None,
        name: None,
        arguments,
        extra: None,
        kind: None,
        index: None,
    }))
}

fn output_index(obj: &Map<String, Value>) -> u32 {
    obj.get("output_index").and_then(Value::as_u64).unwrap_or(0) as u32
}

/// `response.web_search_call.searching`, `response.mcp_list_tools.completed` and the like: the
/// progress of a hosted tool item, named by its last segment.
fn is_item_progress(t: &str) -> bool {
    const STATES: [&str; 9] = [
        "in_progress",
        "searching",
        "interpreting",
        "generating",
        "completed",
        "failed",
        "incomplete",
        "calling",
        "compacting",
    ];
    t.starts_with("response.") && t.matches('.').count() == 2 && STATES.iter().any(|s| t.ends_with(&format!(".{s}")))
}

fn push_meta(r: &Value, out: &mut Vec<StreamEvent>) {
    let s = |k: &str| r.get(k).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_owned);
    out.push(StreamEvent::Meta(Box::new(ResponseMeta {
        id: s("id"),
        model: s("model"),
        created: r.get("created_at").and_then(Value::as_i64),
        system_fingerprint: None,
        service_tier: s("service_tier"),
    })));
}

/// Maps a complete non-streaming Response object into the events a stream would give.
#[must_use]
pub fn map_full_response(body: &Value) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    let mut mapper = ResponsesMapper::new();
    push_meta(body, &mut out);
    for (i, item) in body.get("output").and_then(Value::as_array).into_iter().flatten().enumerate() {
        mapper.map_item(item, false, &mut out);
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    let text = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => {
                            out.push(StreamEvent::Text { choice: 0, delta: text("text").into() });
                            if let Some(lp) =
                                part.get("logprobs").filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
                            {
                                out.push(StreamEvent::Logprobs { choice: 0, value: lp.clone() });
                            }
                            for a in part.get("annotations").and_then(Value::as_array).into_iter().flatten() {
                                out.push(StreamEvent::Annotation { choice: 0, value: a.clone() });
                            }
                        }
                        Some("refusal") => out.push(StreamEvent::Refusal { choice: 0, delta: text("refusal").into() }),
                        _ => {}
                    }
                }
            }
            Some("reasoning") => {
                let parts = ["summary", "content"]
                    .into_iter()
                    .flat_map(|k| item.get(k).and_then(Value::as_array).into_iter().flatten());
                for part in parts {
                    if let Some(t) = part.get("text").and_then(Value::as_str) {
                        let mut d = t.to_owned();
                        if mapper.saw_reasoning {
                            d.insert_str(0, "\n\n");
                        }
                        mapper.saw_reasoning = true;
                        out.push(StreamEvent::Reasoning { choice: 0, delta: d.into() });
                    }
                }
            }
            _ => {}
        }
        out.push(StreamEvent::Item { index: i as u32, item: item.clone(), done: true });
    }
    let mut terminal = Map::new();
    terminal.insert("type".into(), Value::from("response.completed"));
    terminal.insert("response".into(), body.clone());
    if body.get("error").is_some_and(|e| !e.is_null()) && body.get("status").is_none() {
        out.push(StreamEvent::Error(Box::new(error_from_value(None, body))));
        out.push(StreamEvent::Finish { choice: 0, reason: "error".into() });
        out.push(StreamEvent::End);
        return out;
    }
    mapper.map_terminal(&terminal, &mut out);
    out
}
