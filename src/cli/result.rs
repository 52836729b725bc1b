//! The `--json` contract (DESIGN.md §2): event lines while streaming and the one result line.

use crate::api::event::{ItemUpdate, StreamEvent};
use crate::engine::message::Message;
use crate::engine::usage::UsageView;
use serde_json::{Map, Value, json};

/// The JSON event line for a domain event, or `None` for events not worth a line.
#[must_use]
pub fn event_line(ev: &StreamEvent) -> Option<Value> {
    Some(match ev {
        StreamEvent::Text { choice, delta } => json!({"type": "text", "choice": choice, "delta": delta}),
        StreamEvent::Reasoning { choice, delta } => json!({"type": "reasoning", "choice": choice, "delta": delta}),
        StreamEvent::Refusal { choice, delta } => json!({"type": "refusal", "choice": choice, "delta": delta}),
        StreamEvent::ToolCall(c) => json!({"type": "tool_call_delta",
            "choice": c.choice, "index": c.slot, "id": c.id, "name": c.name, "arguments": c.arguments}),
        StreamEvent::Usage(u) => json!({"type": "usage", "usage": UsageView::result_json(u)}),
        StreamEvent::PromptFilter(pf) => json!({"type": "prompt_filter", "prompt_filter": pf}),
        StreamEvent::ContentFilter { choice, results } => {
            json!({"type": "content_filter", "choice": choice, "results": results})
        }
        StreamEvent::Finish { choice, reason } => json!({"type": "finish", "choice": choice, "finish_reason": reason}),
        StreamEvent::Item { index, item, done } => json!({"type": "item", "index": index, "done": done,
            "item_type": item.get("type"), "status": item.get("status"), "item": item}),
        StreamEvent::ItemUpdate { index, update } => match update {
            ItemUpdate::Status(s) => json!({"type": "item_update", "index": index, "status": s}),
            ItemUpdate::Append { field, delta } => {
                json!({"type": "item_update", "index": index, "field": field, "delta": delta})
            }
            ItemUpdate::Set { field, value } | ItemUpdate::Note { field, value } => {
                json!({"type": "item_update", "index": index, "field": field, "value": value})
            }
        },
        StreamEvent::Annotation { choice, value } => {
            json!({"type": "annotation", "choice": choice, "annotation": value})
        }
        StreamEvent::Error(e) => json!({"type": "stream_error", "message": e.message, "code": e.code, "body": e.body}),
        StreamEvent::Malformed { reason, .. } => json!({"type": "malformed_frame", "reason": reason}),
        StreamEvent::Unknown { event, .. } if !event.starts_with("chunk.") => {
            json!({"type": "unknown_event", "event": event})
        }
        _ => return None,
    })
}

/// The result line for a finished reply.
#[must_use]
pub fn result_line(
    api: &str,
    provider: &str,
    model: &str,
    msg: &Message,
    tool_calls: &[crate::engine::ToolCall],
) -> Value {
    let main = msg.main();
    let opt = |s: &str| if s.is_empty() { Value::Null } else { json!(s) };
    let calls: Vec<Value> = tool_calls
        .iter()
        .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments, "output": c.output, "status": c.status}))
        .collect();
    let mut r = Map::new();
    r.insert("type".into(), json!("result"));
    r.insert("api".into(), json!(api));
    r.insert("provider".into(), json!(provider));
    r.insert("model".into(), json!(msg.meta.model.as_deref().unwrap_or(model)));
    // Both names, always: a router or Azure answers with a dated id (gpt-4o-mini →
    // gpt-4o-mini-2024-07-18), a misrouted request with another model altogether.
    r.insert("requested_model".into(), json!(model));
    r.insert("served_model".into(), json!(msg.meta.model));
    r.insert("text".into(), json!(main.content));
    r.insert("reasoning".into(), opt(&main.reasoning));
    r.insert("refusal".into(), opt(&main.refusal));
    r.insert("tool_calls".into(), Value::Array(calls));
    r.insert("finish_reason".into(), json!(main.finish_reason.as_deref().unwrap_or("error")));
    r.insert("usage".into(), msg.usage.as_ref().map_or(Value::Null, UsageView::result_json));
    r.insert("prompt_filter".into(), msg.prompt_filter.clone().unwrap_or(Value::Null));
    r.insert("content_filter".into(), main.content_filter.clone().map_or(Value::Null, Value::Object));
    r.insert("ttft_ms".into(), json!(msg.timing.ttft_ms));
    r.insert("total_ms".into(), json!(msg.timing.total_ms));
    if api == "responses" {
        let items: Vec<Value> = msg.items.iter().filter(|i| !i.is_null()).cloned().collect();
        r.insert("items".into(), Value::Array(items));
    }
    if !main.annotations.is_empty() {
        r.insert("annotations".into(), Value::Array(main.annotations.clone()));
    }
    if msg.choices.len() > 1 {
        let choices: Vec<Value> = msg
            .choices
            .iter()
            .map(|c| json!({"index": c.index, "text": c.content, "finish_reason": c.finish_reason,
                "tool_calls": c.tool_calls.iter().map(|t| json!({"id": t.id, "name": t.name, "arguments": t.arguments})).collect::<Vec<_>>()}))
            .collect();
        r.insert("choices".into(), Value::Array(choices));
    }
    r.insert("response_id".into(), json!(msg.meta.id));
    if let Some(fp) = &msg.meta.system_fingerprint {
        r.insert("system_fingerprint".into(), json!(fp));
    }
    if let Some(e) = &msg.error {
        r.insert("error".into(), json!({"status": e.status, "message": e.message, "kind": e.kind, "body": e.body}));
    }
    // The one redactor has the last word: a secret a reply spelled across two stream events
    // is whole only here.
    let mut r = Value::Object(r);
    crate::sys::secrets::redact_json(&mut r);
    r
}
