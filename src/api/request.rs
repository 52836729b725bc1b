//! Builds request bodies for both APIs from a conversation and the turn's options.

use super::Api;
use crate::engine::message::{Message, Role};
use serde_json::{Map, Value, json};

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
}

/// The JSON body for `api`.
#[must_use]
pub fn build_body(api: Api, messages: &[Message], opts: &RequestOptions) -> Value {
    let mut body = match api {
        Api::Chat => chat_body(messages, opts),
        Api::Responses => responses_body(messages, opts),
    };
    if let Some(obj) = body.as_object_mut() {
        for (k, v) in &opts.extra {
            obj.insert(k.clone(), v.clone());
        }
    }
    body
}

fn chat_body(messages: &[Message], opts: &RequestOptions) -> Value {
    let mut msgs = Vec::new();
    if let Some(sys) = opts.system.as_deref().filter(|s| !s.is_empty()) {
        msgs.push(json!({"role": "system", "content": sys}));
    }
    msgs.extend(messages.iter().filter_map(chat_message));
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
    Value::Object(b)
}

/// Tool-call arguments as a strict server wants them back: a JSON string, `{}` when empty.
fn wire_arguments(args: &str) -> &str {
    if args.trim().is_empty() { "{}" } else { args }
}

fn chat_message(m: &Message) -> Option<Value> {
    let main = m.main();
    match m.role() {
        Role::System => Some(json!({"role": "system", "content": main.content})),
        Role::User => Some(json!({"role": "user", "content": main.content})),
        Role::Tool => Some(json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": main.content})),
        Role::Assistant => {
            let mut o = Map::new();
            o.insert("role".into(), json!("assistant"));
            let content =
                if main.content.is_empty() && !main.tool_calls.is_empty() { Value::Null } else { json!(main.content) };
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

fn responses_body(messages: &[Message], opts: &RequestOptions) -> Value {
    let mut input = Vec::new();
    for m in messages {
        let main = m.main();
        match m.role() {
            Role::System => input.push(json!({"role": "system", "content": main.content})),
            Role::User => input.push(json!({"role": "user", "content": main.content})),
            Role::Tool => input.push(json!({"type": "function_call_output",
                "call_id": m.tool_call_id, "output": main.content})),
            Role::Assistant if !m.items.is_empty() => {
                // Stateless multi-turn: send the previous output items back verbatim.
                input.extend(m.items.iter().filter(|i| !i.is_null()).cloned());
            }
            Role::Assistant => {
                if !main.content.is_empty() {
                    input.push(json!({"role": "assistant", "content": main.content}));
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
    if let Some(e) = &opts.reasoning_effort {
        b.insert("reasoning".into(), json!({"effort": e}));
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
    Value::Object(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::message::ToolCall;

    #[test]
    fn chat_and_responses_carry_tool_results() {
        let mut a = Message::assistant_pending();
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
