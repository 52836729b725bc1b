//! A fast path for the common chat chunk: a strict typed parse that borrows strings from the
//! payload. Any surprise (an unknown field, an error object, content as blocks, a type other
//! than expected) makes it decline, and the tolerant `Value` path in `chat_mapper` takes the
//! chunk instead; both emit events through the same helpers, so the result is the same.

use super::chat_mapper::{ChatMapper, ChoiceTail, DeltaTexts};
use super::event::StreamEvent;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::borrow::Cow;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Chunk<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[allow(dead_code)]
    object: Option<IgnoredAny>,
    created: Option<i64>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    system_fingerprint: Option<Cow<'a, str>>,
    #[serde(borrow)]
    service_tier: Option<Cow<'a, str>>,
    #[serde(borrow)]
    choices: Option<Vec<Choice<'a>>>,
    usage: Option<Value>,
    /// llama.cpp's server-side speeds, kept beside usage.
    timings: Option<Value>,
    /// Side-channel padding; meaningless.
    #[allow(dead_code)]
    obfuscation: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Choice<'a> {
    index: Option<u32>,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Cow<'a, str>>,
    logprobs: Option<Value>,
    content_filter_results: Option<Value>,
    stop_reason: Option<Value>,
    matched_stop: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Delta<'a> {
    #[allow(dead_code)]
    role: Option<IgnoredAny>,
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    refusal: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning: Option<Cow<'a, str>>,
    tool_calls: Option<Vec<Value>>,
}

/// Maps `data` if it is a plain chunk; returns false (having emitted nothing) otherwise.
pub(super) fn try_map(mapper: &mut ChatMapper, data: &str, out: &mut Vec<StreamEvent>) -> bool {
    let Ok(chunk) = serde_json::from_str::<Chunk<'_>>(data) else { return false };
    mapper.update_meta(
        [
            chunk.id.as_deref(),
            chunk.model.as_deref(),
            chunk.system_fingerprint.as_deref(),
            chunk.service_tier.as_deref(),
        ],
        chunk.created,
        out,
    );
    for (pos, c) in chunk.choices.iter().flatten().enumerate() {
        let choice = c.index.unwrap_or(pos as u32);
        if let Some(d) = &c.delta {
            let texts = DeltaTexts {
                reasoning_content: d.reasoning_content.as_deref(),
                reasoning: d.reasoning.as_deref(),
                content: d.content.as_deref(),
                refusal: d.refusal.as_deref(),
            };
            texts.emit(choice, out);
            if let Some(calls) = &d.tool_calls {
                mapper.map_tool_calls(choice, calls, out);
            }
        }
        let notes = [("stop_reason", c.stop_reason.as_ref()), ("matched_stop", c.matched_stop.as_ref())];
        ChoiceTail {
            content_filter: c.content_filter_results.as_ref(),
            notes: &notes,
            logprobs: c.logprobs.as_ref(),
            finish_reason: c.finish_reason.as_deref(),
        }
        .emit(choice, out);
    }
    mapper.note_usage(chunk.usage.as_ref(), chunk.timings.as_ref(), out);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// llama.cpp's chunks, `timings` included, take the fast path and give what the tolerant
    /// path gives.
    #[test]
    fn llamacpp_chunks_take_the_fast_path() {
        let body = include_str!("../../tests/fixtures/sse/llamacpp_chat_usage_timings.sse");
        let (mut fast, mut slow) = (ChatMapper::new(), ChatMapper::new());
        for data in body.lines().filter_map(|l| l.strip_prefix("data: ")).filter(|d| !d.starts_with('[')) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            assert!(try_map(&mut fast, data, &mut a), "declined: {data}");
            let obj = serde_json::from_str::<Value>(data).ok().and_then(|v| v.as_object().cloned());
            slow.map_chunk(&obj.unwrap_or_default(), &mut b);
            assert_eq!(a, b, "{data}");
        }
    }
}
