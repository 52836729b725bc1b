//! Chat Completions rendering: a `Script` as `chat.completion.chunk` frames or one `chat.completion`.

use std::time::Duration;

use serde_json::{Value, json};

use super::Ctx;
use super::errors;
use super::request::Request;
use super::script::{Ending, Script, split_arguments};
use super::sse::Frame;

/// Builds chunks that share the envelope fields of one streamed completion.
struct Chunks<'a> {
    ctx: &'a Ctx,
    include_usage: bool,
    azure: bool,
}

impl Chunks<'_> {
    fn envelope(&self, choices: Value) -> Value {
        let mut chunk = json!({
            "id": self.ctx.chat_id(),
            "object": "chat.completion.chunk",
            "created": self.ctx.created,
            "model": self.ctx.model,
            "system_fingerprint": "fp_demo",
            "choices": choices,
        });
        // With include_usage OpenAI puts `usage: null` on every chunk but the last.
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }

    fn choice(&self, delta: Value, filter: Option<&Value>, finish: Option<&str>) -> Value {
        let mut choice = json!({ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish });
        if self.azure {
            choice["content_filter_results"] = filter.cloned().unwrap_or_else(|| json!({}));
        }
        self.envelope(json!([choice]))
    }
}

pub fn stream(ctx: &Ctx, req: &Request, script: &Script) -> Vec<Frame> {
    let chunks = Chunks { ctx, include_usage: req.include_usage, azure: script.azure() };
    let pace = script.pace;
    let mut frames = Vec::new();
    if let Some(prompt_filter) = &script.prompt_filter {
        // Azure announces the prompt verdict first, in a chunk with no choices. Azure leaves its
        // envelope fields empty; the demo fills them, so the SDKs' strict chunk type takes it.
        let mut first = chunks.envelope(json!([]));
        first["prompt_filter_results"] = prompt_filter.clone();
        frames.push(Frame::data(Duration::ZERO, &first));
    }
    let opening = if script.tool_calls.is_empty() { json!("") } else { Value::Null };
    let role = json!({ "role": "assistant", "content": opening, "refusal": null });
    frames.push(Frame::data(Duration::ZERO, &chunks.choice(role, None, None)));

    for piece in &script.reasoning {
        let delta = json!({ "content": null, "reasoning_content": piece });
        frames.push(Frame::data(pace, &chunks.choice(delta, None, None)));
    }
    for (i, piece) in script.text.iter().enumerate() {
        let delta = json!({ "content": piece.text });
        let mut chunk = chunks.choice(delta, piece.filter.as_ref(), None);
        if let Some(top) = req.logprobs {
            let entry = super::logprobs::entry(&piece.text, i, top);
            chunk["choices"][0]["logprobs"] = json!({ "content": [entry], "refusal": null });
        }
        frames.push(Frame::data(pace, &chunk));
    }
    for (index, call) in script.tool_calls.iter().enumerate() {
        let head = json!({ "tool_calls": [{
            "index": index, "id": ctx.call_id(index), "type": "function",
            "function": { "name": call.name, "arguments": "" },
        }]});
        frames.push(Frame::data(pace, &chunks.choice(head, None, None)));
        for piece in split_arguments(&call.arguments) {
            let delta = json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] });
            frames.push(Frame::data(pace, &chunks.choice(delta, None, None)));
        }
    }

    if script.ending == Ending::ServerError {
        // A mid-stream failure is a bare error object, and the stream just ends: no [DONE].
        frames.push(Frame::data(pace, &errors::server_error_body()));
        return frames;
    }
    let finish = chunks.choice(json!({}), script.finish_filter.as_ref(), Some(script.ending.finish_reason()));
    frames.push(Frame::data(Duration::ZERO, &finish));
    if req.include_usage {
        let mut usage = chunks.envelope(json!([]));
        usage["usage"] = script.usage.chat_json();
        frames.push(Frame::data(Duration::ZERO, &usage));
    }
    frames.push(Frame::done());
    frames
}

pub fn completion(ctx: &Ctx, req: &Request, script: &Script) -> Value {
    let text = script.text();
    let content = if text.is_empty() && !script.tool_calls.is_empty() { Value::Null } else { json!(text) };
    let mut message = json!({ "role": "assistant", "content": content, "refusal": null, "annotations": [] });
    if !script.tool_calls.is_empty() {
        let calls: Vec<Value> = script
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                json!({
                    "id": ctx.call_id(index), "type": "function",
                    "function": { "name": call.name, "arguments": call.arguments },
                })
            })
            .collect();
        message["tool_calls"] = json!(calls);
    }
    if !script.reasoning.is_empty() {
        message["reasoning_content"] = json!(script.reasoning_text());
    }
    let logprobs = req.logprobs.map_or(Value::Null, |top| {
        let content = super::logprobs::entries(script.text.iter().map(|p| p.text.as_str()), top);
        json!({ "content": content, "refusal": null })
    });
    let mut choice = json!({
        "index": 0, "message": message, "logprobs": logprobs,
        "finish_reason": script.ending.finish_reason(),
    });
    if script.azure() {
        choice["content_filter_results"] = script.overall_filter().unwrap_or_else(|| json!({}));
    }
    let mut body = json!({
        "id": ctx.chat_id(),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "system_fingerprint": "fp_demo",
        "choices": [choice],
        "usage": script.usage.chat_json(),
    });
    if let Some(prompt_filter) = &script.prompt_filter {
        body["prompt_filter_results"] = prompt_filter.clone();
    }
    body
}
