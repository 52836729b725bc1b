//! Responses API rendering: a `Script` as typed, sequence-numbered events or one `response` object.

use std::time::Duration;

use serde_json::{Value, json};

use super::Ctx;
use super::errors::SERVER_ERROR_MESSAGE;
use super::request::Request;
use super::script::{Ending, Script, ToolCall, split_arguments};
use super::sse::Frame;

/// Collects events, stamping each with its type and the next sequence number. Used with
/// `silent` for non-streaming replies so both paths build the output items the same way.
pub(super) struct Events {
    sequence: u64,
    pub(super) frames: Vec<Frame>,
    pace: Duration,
}

impl Events {
    pub(super) fn new(pace: Duration) -> Events {
        Events { sequence: 0, frames: Vec::new(), pace }
    }

    pub(super) fn push(&mut self, paced: bool, kind: &str, fields: Value) {
        self.push_after(u32::from(paced), kind, fields);
    }

    /// Pushes an event that waits `paces` times the script's pace (hosted tools "work" longer
    /// than a token takes to stream).
    pub(super) fn push_after(&mut self, paces: u32, kind: &str, mut fields: Value) {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        self.frames.push(Frame::event(self.pace * paces, kind, &fields));
    }
}

pub fn stream(ctx: &Ctx, req: &Request, script: &Script) -> Vec<Frame> {
    let mut events = Events::new(script.pace);
    let start = json!({ "response": envelope(ctx, req, "in_progress", Vec::new(), Value::Null) });
    events.push(false, "response.created", start.clone());
    events.push(false, "response.in_progress", start);
    if let Some(output) = emit_output(&mut events, ctx, req, script) {
        let kind = if script.ending == Ending::ContentFilter { "response.incomplete" } else { "response.completed" };
        events.push(false, kind, json!({ "response": finished(ctx, req, script, output) }));
    }
    events.frames
}

pub fn object(ctx: &Ctx, req: &Request, script: &Script) -> Value {
    let mut silent = Events::new(Duration::ZERO);
    let output = emit_output(&mut silent, ctx, req, script).unwrap_or_default();
    finished(ctx, req, script, output)
}

/// Emits every output item's events and returns the finished items, or `None` when the
/// script breaks off with a server error (the failure events are already emitted then).
fn emit_output(events: &mut Events, ctx: &Ctx, req: &Request, script: &Script) -> Option<Vec<Value>> {
    let mut output = Vec::new();
    if !script.reasoning.is_empty() {
        output.push(reasoning_item(events, ctx, script, output.len()));
    }
    for item in &script.items {
        let index = output.len();
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        if let Some(o) = added.as_object_mut() {
            o.remove("result");
        }
        events.push(false, "response.output_item.added", json!({ "output_index": index, "item": added }));
        events.push(false, "response.output_item.done", json!({ "output_index": index, "item": item }));
        output.push(item.clone());
    }
    if !script.text.is_empty() {
        let index = output.len();
        let item_id = format!("msg_demo_{}", ctx.n);
        events.push(false, "response.output_item.added", json!({
            "output_index": index,
            "item": { "id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": [] },
        }));
        let logprobs: Vec<Value> = match req.logprobs {
            Some(top) => super::logprobs::entries(script.text.iter().map(|p| p.text.as_str()), top),
            None => Vec::new(),
        };
        let part = |text: &str, logprobs: &[Value]| json!({ "type": "output_text", "text": text, "annotations": [], "logprobs": logprobs });
        let at = json!({ "item_id": item_id, "output_index": index, "content_index": 0 });
        events.push(false, "response.content_part.added", with(&at, "part", part("", &[])));
        for (i, piece) in script.text.iter().enumerate() {
            let mut delta = with(&at, "delta", json!(piece.text));
            delta["logprobs"] = json!(logprobs.get(i).map_or_else(Vec::new, |e| vec![e.clone()]));
            events.push(true, "response.output_text.delta", delta);
        }
        if script.ending == Ending::ServerError {
            fail(events, ctx, req);
            return None;
        }
        let text = script.text();
        let mut done = with(&at, "text", json!(text));
        done["logprobs"] = json!(logprobs);
        events.push(false, "response.output_text.done", done);
        events.push(false, "response.content_part.done", with(&at, "part", part(&text, &logprobs)));
        let status = if script.ending == Ending::ContentFilter { "incomplete" } else { "completed" };
        let item = json!({
            "id": item_id, "type": "message", "role": "assistant", "status": status,
            "content": [part(&text, &logprobs)],
        });
        events.push(false, "response.output_item.done", json!({ "output_index": index, "item": item }));
        output.push(item);
    }
    for (k, call) in script.tool_calls.iter().enumerate() {
        output.push(function_call_item(events, ctx, k, call, output.len()));
    }
    Some(output)
}

fn reasoning_item(events: &mut Events, ctx: &Ctx, script: &Script, index: usize) -> Value {
    let item_id = format!("rs_demo_{}", ctx.n);
    events.push(
        false,
        "response.output_item.added",
        json!({
            "output_index": index,
            "item": { "id": item_id, "type": "reasoning", "summary": [] },
        }),
    );
    let at = json!({ "item_id": item_id, "output_index": index, "summary_index": 0 });
    let part = |text: &str| json!({ "type": "summary_text", "text": text });
    events.push(false, "response.reasoning_summary_part.added", with(&at, "part", part("")));
    for piece in &script.reasoning {
        events.push(true, "response.reasoning_summary_text.delta", with(&at, "delta", json!(piece)));
    }
    let text = script.reasoning_text();
    events.push(false, "response.reasoning_summary_text.done", with(&at, "text", json!(text)));
    events.push(false, "response.reasoning_summary_part.done", with(&at, "part", part(&text)));
    let item = json!({
        "id": item_id, "type": "reasoning", "summary": [part(&text)],
        "encrypted_content": encrypted(&text),
    });
    events.push(false, "response.output_item.done", json!({ "output_index": index, "item": item }));
    item
}

fn function_call_item(events: &mut Events, ctx: &Ctx, k: usize, call: &ToolCall, index: usize) -> Value {
    let item_id = format!("fc_demo_{}_{k}", ctx.n);
    let item = |arguments: &str, status: &str| {
        json!({
            "id": item_id, "type": "function_call", "call_id": ctx.call_id(k),
            "name": call.name, "arguments": arguments, "status": status,
        })
    };
    events.push(false, "response.output_item.added", json!({ "output_index": index, "item": item("", "in_progress") }));
    let at = json!({ "item_id": item_id, "output_index": index });
    for piece in split_arguments(&call.arguments) {
        events.push(true, "response.function_call_arguments.delta", with(&at, "delta", json!(piece)));
    }
    let mut done = with(&at, "arguments", json!(call.arguments));
    done["name"] = json!(call.name);
    events.push(false, "response.function_call_arguments.done", done);
    let finished = item(&call.arguments, "completed");
    events.push(false, "response.output_item.done", json!({ "output_index": index, "item": finished }));
    finished
}

fn fail(events: &mut Events, ctx: &Ctx, req: &Request) {
    events.push(true, "error", json!({ "code": "server_error", "message": SERVER_ERROR_MESSAGE, "param": null }));
    let mut response = envelope(ctx, req, "failed", Vec::new(), Value::Null);
    response["error"] = json!({ "code": "server_error", "message": SERVER_ERROR_MESSAGE });
    events.push(false, "response.failed", json!({ "response": response }));
}

fn finished(ctx: &Ctx, req: &Request, script: &Script, output: Vec<Value>) -> Value {
    let usage = script.usage.responses_json();
    if script.ending == Ending::ContentFilter {
        let mut response = envelope(ctx, req, "incomplete", output, usage);
        response["incomplete_details"] = json!({ "reason": "content_filter" });
        response
    } else {
        envelope(ctx, req, "completed", output, usage)
    }
}

pub(super) fn envelope(ctx: &Ctx, req: &Request, status: &str, output: Vec<Value>, usage: Value) -> Value {
    json!({
        "id": format!("resp_demo_{}", ctx.n),
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "background": false,
        "error": null,
        "incomplete_details": null,
        "instructions": req.instructions,
        "max_output_tokens": null,
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "reasoning": { "effort": null, "summary": null },
        "store": false,
        "temperature": 1.0,
        "text": req.text,
        "tool_choice": "auto",
        "tools": req.tools,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": null,
        "metadata": {},
    })
}

pub(super) fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut fields = base.clone();
    fields[key] = value;
    fields
}

/// An opaque stand-in for OpenAI's encrypted reasoning: deterministic, base64, Fernet-like
/// prefix, and meaningless to the client, which must only echo it back.
pub(super) fn encrypted(text: &str) -> String {
    let scrambled: Vec<u8> = text.bytes().enumerate().map(|(i, b)| b ^ (0x5a_u8.wrapping_add(i as u8))).collect();
    format!("gAAAAAB{}", base64(&scrambled))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::base64;

    #[test]
    fn base64_matches_the_standard_alphabet() {
        assert_eq!(base64(b"Man"), "TWFu");
        assert_eq!(base64(b"Ma"), "TWE=");
        assert_eq!(base64(b"M"), "TQ==");
    }
}
