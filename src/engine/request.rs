//! Builds request bodies for both APIs from a conversation and the turn's options.

use super::attach_wire::user_content;
use super::message::{Message, Role};
use super::sendback::{missing_answers, wire_arguments, wire_item, wire_text, with_answers};
use crate::api::Api;
use serde_json::{Map, Value, json};
use std::borrow::Borrow;

/// Everything about a request that is not the conversation itself.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    pub model: String,
    pub stream: bool,
    pub system: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    pub reasoning_effort: Option<String>,
    /// Tool definitions as `{name, description, parameters}`.
    pub tools: Vec<Value>,
    pub tool_choice: Option<Value>,
    pub response_format: Option<Value>,
    /// Chat: `stream_options.include_usage` (some providers reject it).
    pub include_usage: bool,
    /// Extra top-level fields from the profile or `/set`, merged last.
    pub extra: Map<String, Value>,
    /// Responses: chain turns with `previous_response_id` instead of re-sending output items
    /// (only for providers that store responses; off by default).
    pub chain_responses: bool,
    /// `detail` of attached images (`auto` when unset).
    pub detail: Option<String>,
    /// Whether image bytes may be sent: a tool's images go back to the model only then (a
    /// profile with `images = "no"` or `"url-only"` gets the tool's text alone).
    pub send_image_data: bool,
    /// `--logprobs [N]`: token log probabilities, with N alternatives per token (0: none).
    pub logprobs: Option<u8>,
    /// Chat Completions' `seed` (a repeated sample's: the run's base plus the sample index).
    /// The Responses API has no such field: it is not sent there.
    pub seed: Option<u64>,
}

/// Sets a request option by dotted key (`reasoning.summary`, `text.verbosity`, `metadata.run`):
/// the value is read as JSON when it parses (numbers, booleans, objects), else as a string.
pub fn set_option(extra: &mut Map<String, Value>, dotted: &str, value: &str) {
    let value = serde_json::from_str::<Value>(value).unwrap_or_else(|_| Value::String(value.to_owned()));
    let mut parts: Vec<&str> = dotted.split('.').filter(|p| !p.is_empty()).collect();
    let Some(last) = parts.pop() else { return };
    let mut cur = extra;
    for p in parts {
        let entry = cur.entry(p.to_owned()).or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        let Some(next) = entry.as_object_mut() else { return };
        cur = next;
    }
    cur.insert(last.to_owned(), value);
}

/// The JSON body for `api`.
#[must_use]
pub fn build_body<M: Borrow<Message>>(api: Api, messages: &[M], opts: &RequestOptions) -> Value {
    // Every call answered, whatever the history went through (cut, refused, stored by an older
    // palaver): strict servers reject a call without its answer. A finished compaction stands
    // for every turn before it; a failed turn is never re-sent (`compact::sendable`).
    let (sendable, _) = super::compact::sendable::<Message>(messages.iter().map(Borrow::borrow));
    let (summary, rest) = super::compact::in_context(&sendable);
    let sent: Vec<&Message> = summary.iter().chain(rest.iter().map(Borrow::borrow)).collect();
    let answers = missing_answers(&sent);
    let messages = with_answers(&sent, &answers);
    let mut body = match api {
        Api::Chat => chat_body(&messages, opts),
        Api::Responses => responses_body(&messages, opts),
    };
    if let Some(obj) = body.as_object_mut() {
        for (k, v) in &opts.extra {
            obj.insert(k.clone(), v.clone());
        }
    }
    body
}

fn chat_body(messages: &[&Message], opts: &RequestOptions) -> Value {
    let mut msgs = Vec::new();
    if let Some(sys) = opts.system.as_deref().filter(|s| !s.is_empty()) {
        msgs.push(json!({"role": "system", "content": sys}));
    }
    msgs.extend(messages.iter().filter_map(|m| chat_message(m, opts.detail.as_deref())));
    let mut b = Map::new();
    b.insert("model".into(), json!(opts.model));
    b.insert("messages".into(), Value::Array(msgs));
    b.insert("stream".into(), json!(opts.stream));
    if opts.stream && opts.include_usage {
        b.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if let Some(t) = opts.temperature {
        b.insert("temperature".into(), json!(t));
    }
    if let Some(n) = opts.max_tokens {
        b.insert("max_tokens".into(), json!(n));
    }
    if let Some(e) = &opts.reasoning_effort {
        b.insert("reasoning_effort".into(), json!(e));
    }
    if let Some(seed) = opts.seed {
        b.insert("seed".into(), json!(seed));
    }
    if !opts.tools.is_empty() {
        let tools: Vec<Value> = opts.tools.iter().map(|t| json!({"type": "function", "function": t})).collect();
        b.insert("tools".into(), Value::Array(tools));
        if let Some(tc) = &opts.tool_choice {
            b.insert("tool_choice".into(), tc.clone());
        }
    }
    if let Some(rf) = &opts.response_format {
        b.insert("response_format".into(), rf.clone());
    }
    if let Some(n) = opts.logprobs {
        b.insert("logprobs".into(), json!(true));
        if n > 0 {
            b.insert("top_logprobs".into(), json!(n));
        }
    }
    Value::Object(b)
}

fn chat_message(m: &Message, detail: Option<&str>) -> Option<Value> {
    let main = m.main();
    match m.role() {
        Role::System => Some(json!({"role": "system", "content": main.content})),
        Role::User => {
            Some(json!({"role": "user", "content": user_content(Api::Chat, &main.content, &m.attachments, detail)}))
        }
        Role::Tool => {
            Some(json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": wire_text(&main.content)}))
        }
        Role::Assistant => {
            let mut o = Map::new();
            o.insert("role".into(), json!("assistant"));
            let content = if main.content.is_empty() && !main.tool_calls.is_empty() {
                Value::Null
            } else {
                json!(wire_text(&main.content))
            };
            o.insert("content".into(), content);
            if !main.tool_calls.is_empty() {
                let calls: Vec<Value> = main
                    .tool_calls
                    .iter()
                    .map(|c| {
                        let mut call = json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": wire_arguments(&c.arguments)}});
                        if let (Some(extra), Some(obj)) = (&c.extra, call.as_object_mut()) {
                            obj.insert("extra_content".into(), extra.clone());
                        }
                        call
                    })
                    .collect();
                o.insert("tool_calls".into(), Value::Array(calls));
            }
            Some(Value::Object(o))
        }
    }
}

/// The tool-result text of an approved MCP approval request; anything else is the reason for a denial.
pub const MCP_APPROVE: &str = "approve";

/// The input item answering a call, by the kind of call it answers.
fn tool_output_item(m: &Message, opts: &RequestOptions) -> Value {
    let out = wire_text(&m.main().content);
    let out: &str = &out;
    let id = &m.tool_call_id;
    match m.tool_kind.as_deref().unwrap_or_default() {
        "custom" => json!({"type": "custom_tool_call_output", "call_id": id, "output": out}),
        "shell" => {
            let output = serde_json::from_str::<Value>(out).unwrap_or_else(|_| json!([{"stdout": "", "stderr": out}]));
            json!({"type": "shell_call_output", "call_id": id, "output": output})
        }
        "local_shell" => {
            let text = serde_json::from_str::<Value>(out).ok().and_then(|v| v.get(0).cloned()).map_or_else(
                || out.to_owned(),
                |r| format!("{}{}", r["stdout"].as_str().unwrap_or(""), r["stderr"].as_str().unwrap_or("")),
            );
            json!({"type": "local_shell_call_output", "id": id, "output": text})
        }
        "apply_patch" => {
            let ok = ["created ", "updated ", "deleted "].iter().any(|p| out.starts_with(p));
            json!({"type": "apply_patch_call_output", "call_id": id, "status": if ok { "completed" } else { "failed" }, "output": out})
        }
        "mcp_approval" => {
            let approve = out == MCP_APPROVE;
            let mut item = json!({"type": "mcp_approval_response", "approval_request_id": id, "approve": approve});
            if !approve {
                item["reason"] = json!(out);
            }
            item
        }
        _ if !m.attachments.is_empty() && opts.send_image_data => {
            // A tool's images go back as a list of parts, as the Responses API allows.
            let mut parts = vec![json!({"type": "input_text", "text": out})];
            parts.extend(
                m.attachments
                    .iter()
                    .map(|a| super::attach_wire::part(Api::Responses, a, super::attach_wire::DEFAULT_DETAIL)),
            );
            json!({"type": "function_call_output", "call_id": id, "output": parts})
        }
        _ => json!({"type": "function_call_output", "call_id": id, "output": out}),
    }
}

fn responses_body(messages: &[&Message], opts: &RequestOptions) -> Value {
    let mut input = Vec::new();
    // Chaining sends only what follows the last stored response; stateless (the default) re-sends
    // everything, output items included, so providers without `store` work.
    let chained = opts
        .chain_responses
        .then(|| messages.iter().rposition(|m| m.role() == Role::Assistant && m.meta.id.is_some()))
        .flatten();
    let from = chained.map_or(0, |i| i + 1);
    for m in &messages[from..] {
        let main = m.main();
        match m.role() {
            Role::System => input.push(json!({"role": "system", "content": main.content})),
            Role::User => input.push(json!({"role": "user",
                "content": user_content(Api::Responses, &main.content, &m.attachments, opts.detail.as_deref())})),
            Role::Tool => input.push(tool_output_item(m, opts)),
            Role::Assistant if !m.items.is_empty() => {
                // Stateless multi-turn: send the previous output items back verbatim.
                input.extend(m.items.iter().filter(|i| !i.is_null()).map(|i| wire_item(i).into_owned()));
            }
            Role::Assistant => {
                if !main.content.is_empty() {
                    input.push(json!({"role": "assistant", "content": wire_text(&main.content)}));
                }
                for c in &main.tool_calls {
                    input.push(json!({"type": "function_call", "call_id": c.id, "name": c.name,
                        "arguments": wire_arguments(&c.arguments)}));
                }
            }
        }
    }
    let mut b = Map::new();
    b.insert("model".into(), json!(opts.model));
    b.insert("input".into(), Value::Array(input));
    b.insert("stream".into(), json!(opts.stream));
    if let Some(sys) = opts.system.as_deref().filter(|s| !s.is_empty()) {
        b.insert("instructions".into(), json!(sys));
    }
    if let Some(t) = opts.temperature {
        b.insert("temperature".into(), json!(t));
    }
    if let Some(n) = opts.max_tokens {
        b.insert("max_output_tokens".into(), json!(n));
    }
    if let Some(i) = chained {
        b.insert("previous_response_id".into(), json!(messages[i].meta.id));
    }
    if let Some(e) = &opts.reasoning_effort {
        b.insert("reasoning".into(), json!({"effort": e}));
        if chained.is_none() {
            // Reasoning items can only be re-sent with their encrypted content.
            b.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }
    if !opts.tools.is_empty() {
        let tools: Vec<Value> = opts
            .tools
            .iter()
            .map(|t| {
                let mut o = t.as_object().cloned().unwrap_or_default();
                o.insert("type".into(), json!("function"));
                Value::Object(o)
            })
            .collect();
        b.insert("tools".into(), Value::Array(tools));
        if let Some(tc) = &opts.tool_choice {
            b.insert("tool_choice".into(), tc.clone());
        }
    }
    if let Some(rf) = &opts.response_format {
        b.insert("text".into(), json!({"format": rf}));
    }
    if let Some(n) = opts.logprobs {
        // Responses sends them only when `include` names them.
        let include = b.entry("include").or_insert_with(|| json!([]));
        if let Some(list) = include.as_array_mut() {
            list.push(json!("message.output_text.logprobs"));
        }
        if n > 0 {
            b.insert("top_logprobs".into(), json!(n));
        }
    }
    Value::Object(b)
}

/// Removes a request option by dotted key; returns whether it was there.
pub fn unset_option(extra: &mut Map<String, Value>, dotted: &str) -> bool {
    match dotted.split_once('.') {
        None => extra.remove(dotted).is_some(),
        Some((head, rest)) => match extra.get_mut(head).and_then(Value::as_object_mut) {
            Some(inner) => {
                let removed = unset_option(inner, rest);
                if inner.is_empty() {
                    extra.remove(head);
                }
                removed
            }
            None => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply that has ended (a reply in flight is never sent).
    fn answered() -> Message {
        Message { status: crate::engine::message::MessageStatus::Complete, ..Message::assistant_pending() }
    }

    #[test]
    fn dotted_options_nest() {
        let mut m = Map::new();
        set_option(&mut m, "reasoning.summary", "auto");
        set_option(&mut m, "reasoning.effort", "high");
        set_option(&mut m, "max_tool_calls", "3");
        set_option(&mut m, "parallel_tool_calls", "false");
        assert_eq!(
            Value::Object(m.clone()),
            json!({"reasoning": {"summary": "auto", "effort": "high"}, "max_tool_calls": 3, "parallel_tool_calls": false})
        );
        assert!(unset_option(&mut m, "reasoning.summary"));
        assert!(unset_option(&mut m, "reasoning.effort"));
        assert!(!unset_option(&mut m, "reasoning.effort"));
        assert!(m.get("reasoning").is_none());
    }

    #[test]
    fn chaining_sends_only_the_new_turn() {
        let mut a = answered();
        a.meta.id = Some("resp_1".into());
        a.items = vec![json!({"type": "message", "id": "m1"})];
        a.main_mut().content = "hello".into();
        let msgs = vec![Message::user("one"), a, Message::user("two")];
        let mut opts = RequestOptions { model: "m".into(), ..Default::default() };
        let stateless = build_body(Api::Responses, &msgs, &opts);
        assert_eq!(stateless["input"].as_array().map(Vec::len), Some(3));
        assert!(stateless.get("previous_response_id").is_none());
        opts.chain_responses = true;
        let chained = build_body(Api::Responses, &msgs, &opts);
        assert_eq!(chained["previous_response_id"], "resp_1");
        assert_eq!(chained["input"], json!([{"role": "user", "content": "two"}]));
    }
    use crate::engine::message::ToolCall;

    #[test]
    fn a_tools_images_go_back_as_parts_on_responses() {
        let mut png = Vec::new();
        image::RgbImage::new(2, 2).write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).unwrap();
        let images = vec![crate::tools::ToolImage { media_type: "image/png".into(), bytes: png }];
        let mut call = ToolCall {
            id: "call_1".into(),
            name: "shot".into(),
            output: Some("[image]".into()),
            ..ToolCall::default()
        };
        call.images = crate::engine::attachment::from_tool_images("shot", images);
        assert_eq!(call.images[0].name, "shot-1.png");
        let mut a = answered();
        a.main_mut().tool_calls.push(call.clone());
        let msgs = vec![Message::user("look"), a, Message::answer_to(&call)];
        let opts = RequestOptions { model: "m".into(), send_image_data: true, ..Default::default() };
        let r = build_body(Api::Responses, &msgs, &opts);
        let out = &r["input"][2]["output"];
        assert_eq!(out[0], json!({"type": "input_text", "text": "[image]"}));
        assert_eq!(out[1]["type"], "input_image");
        assert!(out[1]["image_url"].as_str().unwrap().starts_with("data:image/png;base64,"));
        // A provider that takes no image data gets the tool's text alone.
        let text_only = RequestOptions { send_image_data: false, ..opts.clone() };
        let r = build_body(Api::Responses, &msgs, &text_only);
        assert_eq!(r["input"][2]["output"], "[image]");
        // Chat tool messages take text only.
        let c = build_body(Api::Chat, &msgs, &opts);
        assert_eq!(c["messages"][2]["content"], "[image]");
    }

    #[test]
    fn logprobs_are_asked_for_each_apis_way() {
        let msgs = vec![Message::user("hi")];
        let opts = RequestOptions {
            model: "m".into(),
            logprobs: Some(5),
            reasoning_effort: Some("low".into()),
            ..Default::default()
        };
        let c = build_body(Api::Chat, &msgs, &opts);
        assert_eq!((&c["logprobs"], &c["top_logprobs"]), (&json!(true), &json!(5)));
        let r = build_body(Api::Responses, &msgs, &opts);
        assert_eq!(r["include"], json!(["reasoning.encrypted_content", "message.output_text.logprobs"]));
        assert_eq!(r["top_logprobs"], 5);
        let none = build_body(Api::Chat, &msgs, &RequestOptions { logprobs: Some(0), ..opts });
        assert!(none.get("top_logprobs").is_none() && none["logprobs"] == true);
    }

    #[test]
    fn a_seed_goes_to_chat_only() {
        let msgs = vec![Message::user("hi")];
        let opts = RequestOptions { model: "m".into(), seed: Some(42), ..Default::default() };
        assert_eq!(build_body(Api::Chat, &msgs, &opts)["seed"], 42);
        assert!(build_body(Api::Responses, &msgs, &opts).get("seed").is_none());
        assert!(build_body(Api::Chat, &msgs, &RequestOptions::default()).get("seed").is_none());
    }

    #[test]
    fn chat_and_responses_carry_tool_results() {
        let mut a = answered();
        a.main_mut().tool_calls.push(ToolCall { id: "call_1".into(), name: "f".into(), ..ToolCall::default() });
        let msgs = vec![Message::user("hi"), a, Message::tool_result("call_1", "out")];
        let opts = RequestOptions {
            model: "m".into(),
            stream: true,
            include_usage: true,
            system: Some("s".into()),
            ..Default::default()
        };
        let c = build_body(Api::Chat, &msgs, &opts);
        assert_eq!(c["messages"][0]["role"], "system");
        assert_eq!(c["messages"][2]["tool_calls"][0]["function"]["arguments"], "{}");
        assert_eq!(c["messages"][3]["tool_call_id"], "call_1");
        assert_eq!(c["stream_options"]["include_usage"], true);
        let r = build_body(Api::Responses, &msgs, &opts);
        assert_eq!(r["instructions"], "s");
        assert_eq!(r["input"][1]["type"], "function_call");
        assert_eq!(r["input"][2]["type"], "function_call_output");
        assert_eq!(r["input"][2]["call_id"], "call_1");
    }
}
