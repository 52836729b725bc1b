//! Chat Completions: turns each SSE data payload (or a whole non-streaming response) into
//! domain `StreamEvent`s. Tolerant by construction: every field is looked up in an open JSON
//! map, so a missing or unknown field is never a reason to fail.

use super::event::{CallFragment, ProviderError, ResponseMeta, StreamEvent};
use super::timings::UsageAndTimings;
use super::wire::{error_from_value, str_field};
use serde_json::{Map, Value};

/// Per-stream state: tool-call slots by (choice, wire index), because providers repeat,
/// omit or start indices at odd values (PROTOCOL.md §1.4).
#[derive(Debug, Default)]
pub struct ChatMapper {
    slots: Vec<Slot>,
    meta: ResponseMeta,
    usage: UsageAndTimings,
    /// The envelope of the last plain text chunk, to map the next ones without parsing them.
    pub(super) envelope: Option<super::chat_fast::Envelope>,
}

#[derive(Debug)]
struct Slot {
    choice: u32,
    wire_index: Option<i64>,
    id: Option<String>,
    has_name: bool,
    index_sent: bool,
}

impl ChatMapper {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Maps one `data:` payload as it came off the wire (not yet decoded as UTF-8).
    pub fn map_bytes(&mut self, data: &[u8], out: &mut Vec<StreamEvent>) {
        if let Some(text) = self.envelope.as_ref().and_then(|e| e.text(data)) {
            text.emit(out);
            return;
        }
        self.map_data(&String::from_utf8_lossy(data), out);
    }

    /// Maps one `data:` payload of a chat stream.
    pub fn map_data(&mut self, data: &str, out: &mut Vec<StreamEvent>) {
        if let Some(text) = self.envelope.as_ref().and_then(|e| e.text(data.as_bytes())) {
            text.emit(out);
            return;
        }
        // Only a chunk that follows one mapped in full may skip the parse (see `Envelope`).
        self.envelope = None;
        if data.starts_with("[DONE]") {
            out.push(StreamEvent::End);
            return;
        }
        if super::chat_fast::try_map(self, data, out) {
            return;
        }
        match super::json_bounded::from_str(data) {
            Ok(Value::Object(obj)) => self.map_chunk(&obj, out),
            Ok(other) => out.push(StreamEvent::Unknown { event: String::new(), raw: other }),
            Err(e) => out.push(StreamEvent::Malformed { data: data.to_owned(), reason: e.to_string() }),
        }
    }

    /// Maps one chunk object; also used for the non-streaming response (`message` in place of `delta`).
    pub fn map_chunk(&mut self, obj: &Map<String, Value>, out: &mut Vec<StreamEvent>) {
        if is_error_payload(obj) {
            out.push(StreamEvent::Error(Box::new(error_from_value(None, &Value::Object(obj.clone())))));
            // OpenRouter puts `finish_reason: "error"` beside the error in a normal chunk.
        }
        self.map_meta(obj, out);
        if let Some(pf) = obj.get("prompt_filter_results").or_else(|| obj.get("prompt_annotations")) {
            if !pf.is_null() {
                out.push(StreamEvent::PromptFilter(pf.clone()));
            }
        }
        if let Some(Value::Array(choices)) = obj.get("choices") {
            for (pos, choice) in choices.iter().enumerate() {
                if let Value::Object(c) = choice {
                    self.map_choice(c, pos, out);
                }
            }
        }
        self.note_usage(obj.get("usage"), obj.get(super::timings::KEY), out);
        let known = [
            "id",
            "object",
            "created",
            "model",
            "system_fingerprint",
            "service_tier",
            "choices",
            "usage",
            "timings",
            "prompt_filter_results",
            "prompt_annotations",
            "error",
            "obfuscation",
        ];
        if obj.keys().any(|k| !known.contains(&k.as_str())) {
            let extra: Map<String, Value> =
                obj.iter().filter(|(k, _)| !known.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
            out.push(StreamEvent::Unknown { event: "chunk.extra".into(), raw: Value::Object(extra) });
        }
    }

    fn map_meta(&mut self, obj: &Map<String, Value>, out: &mut Vec<StreamEvent>) {
        let created = obj.get("created").and_then(Value::as_i64);
        let s = |k| str_field(obj, k);
        self.update_meta([s("id"), s("model"), s("system_fingerprint"), s("service_tier")], created, out);
    }

    /// Usage and llama.cpp's `timings`, as one chunk carried them.
    pub(super) fn note_usage(&mut self, usage: Option<&Value>, timings: Option<&Value>, out: &mut Vec<StreamEvent>) {
        self.usage.note(usage, timings, out);
    }

    /// Updates id, model, fingerprint and tier; Azure annotation chunks carry empty values and
    /// `created: 0`, which must never overwrite what is known.
    pub(super) fn update_meta(&mut self, fields: [Option<&str>; 4], created: Option<i64>, out: &mut Vec<StreamEvent>) {
        let mut changed = false;
        let m = &mut self.meta;
        for (slot, v) in
            [&mut m.id, &mut m.model, &mut m.system_fingerprint, &mut m.service_tier].into_iter().zip(fields)
        {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                if slot.as_deref() != Some(v) {
                    *slot = Some(v.to_owned());
                    changed = true;
                }
            }
        }
        if let Some(c) = created.filter(|c| *c > 0) {
            if m.created != Some(c) {
                m.created = Some(c);
                changed = true;
            }
        }
        if changed {
            out.push(StreamEvent::Meta(Box::new(self.meta.clone())));
        }
    }

    fn map_choice(&mut self, c: &Map<String, Value>, pos: usize, out: &mut Vec<StreamEvent>) {
        let choice = c.get("index").and_then(Value::as_u64).map_or(pos as u32, |i| i as u32);
        // Apply the delta before looking at finish_reason: vLLM puts the last token beside it.
        let delta = c.get("delta").or_else(|| c.get("message"));
        if let Some(Value::Object(d)) = delta {
            self.map_delta(choice, d, out);
        }
        let notes =
            ["content_filter_offsets", "content_filter_raw", "stop_reason", "matched_stop"].map(|k| (k, c.get(k)));
        let tail = ChoiceTail {
            content_filter: c.get("content_filter_results"),
            notes: &notes,
            logprobs: c.get("logprobs"),
            finish_reason: str_field(c, "finish_reason"),
        };
        tail.emit(choice, out);
    }

    fn map_delta(&mut self, choice: u32, d: &Map<String, Value>, out: &mut Vec<StreamEvent>) {
        let content = d.get("content");
        let texts = DeltaTexts {
            reasoning_content: str_field(d, "reasoning_content"),
            reasoning: str_field(d, "reasoning"),
            content: content.and_then(Value::as_str),
            refusal: str_field(d, "refusal"),
        };
        texts.emit(choice, out);
        // Databricks reasoning models send content as an array of typed blocks.
        if let Some(Value::Array(blocks)) = content {
            map_content_blocks(choice, blocks, out);
        }
        if let Some(Value::Array(calls)) = d.get("tool_calls") {
            self.map_tool_calls(choice, calls, out);
        }
        if let Some(Value::Object(fc)) = d.get("function_call") {
            let mut call = Map::new();
            call.insert("index".into(), Value::from(0));
            call.insert("function".into(), Value::Object(fc.clone()));
            self.map_tool_call(choice, &call, 0, out);
        }
        if let Some(Value::Array(anns)) = d.get("annotations") {
            for a in anns {
                out.push(StreamEvent::Annotation { choice, value: a.clone() });
            }
        }
    }

    pub(super) fn map_tool_calls(&mut self, choice: u32, calls: &[Value], out: &mut Vec<StreamEvent>) {
        for (pos, call) in calls.iter().enumerate() {
            if let Value::Object(call) = call {
                self.map_tool_call(choice, call, pos, out);
            }
        }
    }

    fn map_tool_call(&mut self, choice: u32, call: &Map<String, Value>, pos: usize, out: &mut Vec<StreamEvent>) {
        let wire_index = call.get("index").and_then(Value::as_i64);
        let id = str_field(call, "id").filter(|s| !s.is_empty());
        let func = call.get("function").and_then(Value::as_object);
        let name = func.and_then(|f| str_field(f, "name")).filter(|s| !s.is_empty());
        let arguments = match func.and_then(|f| f.get("arguments")) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            // llama.cpp and others send arguments as an object: keep it as the JSON text it means.
            Some(other) => other.to_string(),
        };
        let slot = self.resolve_slot(choice, wire_index, pos, id);
        let entry = &mut self.slots[slot];
        let new_index = if entry.index_sent { None } else { wire_index.and_then(|i| u32::try_from(i).ok()) };
        entry.index_sent |= new_index.is_some();
        let new_id = match id {
            Some(id) if entry.id.is_none() => {
                entry.id = Some(id.to_owned());
                Some(id.to_owned())
            }
            _ => None,
        };
        let new_name = match name {
            Some(n) if !entry.has_name => {
                entry.has_name = true;
                Some(n.to_owned())
            }
            _ => None,
        };
        let extra = call.get("extra_content").cloned();
        let local_slot = self.slots[..slot].iter().filter(|s| s.choice == choice).count() as u32;
        if new_id.is_some() || new_name.is_some() || !arguments.is_empty() || extra.is_some() || wire_index.is_some() {
            out.push(StreamEvent::ToolCall(Box::new(CallFragment {
                choice,
                slot: local_slot,
                id: new_id,
                name: new_name,
                arguments,
                extra,
                kind: None,
                index: new_index,
            })));
        }
    }

    /// Finds the slot for a fragment: by wire index, or by position when the index is missing;
    /// a different non-empty id at a known index opens a new call (Ollama sends index 0 for all).
    fn resolve_slot(&mut self, choice: u32, wire_index: Option<i64>, pos: usize, id: Option<&str>) -> usize {
        let key = wire_index.or_else(|| if id.is_some() { None } else { Some(pos as i64) });
        let found = self.slots.iter().rposition(|s| {
            s.choice == choice
                && match key {
                    Some(k) => s.wire_index == Some(k),
                    None => false,
                }
        });
        if let Some(i) = found {
            let clash = matches!((&self.slots[i].id, id), (Some(known), Some(new)) if known != new);
            if !clash {
                return i;
            }
        } else if wire_index.is_none() && id.is_none() {
            // No index and no id: a continuation of this choice's latest call, if any.
            if let Some(i) = self.slots.iter().rposition(|s| s.choice == choice) {
                return i;
            }
        }
        self.slots.push(Slot { choice, wire_index: key, id: None, has_name: false, index_sent: false });
        self.slots.len() - 1
    }
}

/// The text fields of a delta, however they were parsed.
pub(super) struct DeltaTexts<'a> {
    pub reasoning_content: Option<&'a str>,
    pub reasoning: Option<&'a str>,
    pub content: Option<&'a str>,
    pub refusal: Option<&'a str>,
}

impl DeltaTexts<'_> {
    pub(super) fn emit(&self, choice: u32, out: &mut Vec<StreamEvent>) {
        // Prefer reasoning_content when both names are present (PROTOCOL.md §1.11); "" and null
        // mean the same: nothing.
        if let Some(r) = self.reasoning_content.or(self.reasoning).filter(|r| !r.is_empty()) {
            out.push(StreamEvent::Reasoning { choice, delta: r.into() });
        }
        if let Some(t) = self.content.filter(|t| !t.is_empty()) {
            out.push(StreamEvent::Text { choice, delta: t.into() });
        }
        if let Some(r) = self.refusal.filter(|r| !r.is_empty()) {
            out.push(StreamEvent::Refusal { choice, delta: r.into() });
        }
    }
}

/// What follows the delta in a choice, however it was parsed.
pub(super) struct ChoiceTail<'a> {
    pub content_filter: Option<&'a Value>,
    pub notes: &'a [(&'static str, Option<&'a Value>)],
    pub logprobs: Option<&'a Value>,
    pub finish_reason: Option<&'a str>,
}

impl ChoiceTail<'_> {
    pub(super) fn emit(&self, choice: u32, out: &mut Vec<StreamEvent>) {
        if let Some(cfr) = self.content_filter.filter(|v| v.as_object().is_some_and(|m| !m.is_empty())) {
            out.push(StreamEvent::ContentFilter { choice, results: cfr.clone() });
        }
        for (key, v) in self.notes {
            if let Some(v) = v.filter(|v| !v.is_null()) {
                out.push(StreamEvent::FilterOffsets { choice, value: serde_json::json!({ *key: v }) });
            }
        }
        if let Some(lp) = self.logprobs.filter(|v| !v.is_null()) {
            out.push(StreamEvent::Logprobs { choice, value: lp.clone() });
        }
        // Empty finish reasons (sent on every chunk by some proxies) mean none.
        if let Some(reason) = self.finish_reason.filter(|r| !r.is_empty()) {
            out.push(StreamEvent::Finish { choice, reason: reason.to_owned() });
        }
    }
}

fn map_content_blocks(choice: u32, blocks: &[Value], out: &mut Vec<StreamEvent>) {
    for b in blocks {
        let Some(b) = b.as_object() else { continue };
        match str_field(b, "type") {
            Some("text") => {
                if let Some(t) = str_field(b, "text").filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::Text { choice, delta: t.into() });
                }
            }
            Some("reasoning") => {
                for part in b.get("summary").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(t) = part.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                        out.push(StreamEvent::Reasoning { choice, delta: t.into() });
                    }
                }
            }
            _ => out.push(StreamEvent::Unknown { event: "content.block".into(), raw: Value::Object(b.clone()) }),
        }
    }
}

fn is_error_payload(obj: &Map<String, Value>) -> bool {
    obj.get("error").is_some_and(|e| !e.is_null()) || str_field(obj, "object") == Some("error")
}

/// Maps a complete non-streaming chat response into the same events a stream would give.
pub fn map_full_response(body: &Value) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    let mut mapper = ChatMapper::new();
    match body.as_object() {
        Some(obj) => {
            mapper.map_chunk(obj, &mut out);
            let no_choices = obj.get("choices").and_then(Value::as_array).is_none_or(Vec::is_empty);
            if no_choices && !is_error_payload(obj) {
                // Said as what it is: a whole answer with nothing in it, not a cut stream.
                out.push(StreamEvent::Error(Box::new(super::errors::no_choices(body))));
                out.push(StreamEvent::Finish { choice: 0, reason: "error".into() });
            }
        }
        None => out.push(StreamEvent::Error(Box::new(ProviderError {
            status: None,
            message: "the provider answered with something that is not a JSON object".into(),
            kind: None,
            code: None,
            param: None,
            body: body.clone(),
        }))),
    }
    out.push(StreamEvent::End);
    out
}
