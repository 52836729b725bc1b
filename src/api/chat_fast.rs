//! A fast path for the common chat chunk: a strict typed parse that borrows strings from the
//! payload. Any surprise (an unknown field, an error object, content as blocks, a type other
//! than expected) makes it decline, and the tolerant `Value` path in `chat_mapper` takes the
//! chunk instead; both emit events through the same helpers, so the result is the same.
//!
//! Faster still, for the chunks that are nearly all of a stream: a server wraps every text
//! delta in the same envelope (id, model, created, the choice…), so once one plain text chunk
//! has been parsed, the next one that has exactly the same bytes around its content is that
//! chunk with other text ([`Envelope`]); its content is the only thing read.

use super::chat_mapper::{ChatMapper, ChoiceTail, DeltaTexts};
use super::event::StreamEvent;
use serde::de::{IgnoredAny, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::borrow::Cow;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Chunk<'a> {
    #[serde(borrow, default, deserialize_with = "opt_cow")]
    id: Option<Cow<'a, str>>,
    #[allow(dead_code)]
    object: Option<IgnoredAny>,
    created: Option<i64>,
    #[serde(borrow, default, deserialize_with = "opt_cow")]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_cow")]
    system_fingerprint: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_cow")]
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
    #[serde(borrow, default, deserialize_with = "opt_cow")]
    finish_reason: Option<Cow<'a, str>>,
    /// Bounded as it is parsed: a server's 100,000 alternatives are never built.
    #[serde(default, deserialize_with = "super::json_bounded::logprobs")]
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
    #[serde(borrow, default, deserialize_with = "opt_cow")]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_cow")]
    refusal: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_cow")]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "opt_cow")]
    reasoning: Option<Cow<'a, str>>,
    tool_calls: Option<Vec<Value>>,
}

/// An optional string borrowed from the payload when it has no escapes. (serde's own
/// `#[serde(borrow)]` does not reach through `Option`: every `Option<Cow<str>>` would be a copy.)
fn opt_cow<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    struct Opt;
    struct Str;
    impl<'de> Visitor<'de> for Opt {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string or null")
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_str(Str).map(Some)
        }
    }
    impl<'de> Visitor<'de> for Str {
        type Value = Cow<'de, str>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Cow::Borrowed(v))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Cow::Owned(v.to_owned()))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Cow::Owned(v))
        }
    }
    d.deserialize_option(Opt)
}

/// The bytes around the content of a plain text chunk: one whose other fields emit nothing
/// (no finish reason, usage, filter results, logprobs, other deltas) and change nothing once
/// seen (its id, model, created… are what the mapper now holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Envelope {
    /// Up to and including the content's opening quote.
    prefix: String,
    /// From the content's closing quote on.
    suffix: String,
    choice: u32,
}

/// A text delta read through an envelope.
pub(crate) struct EnvelopedText<'a> {
    choice: u32,
    text: Cow<'a, str>,
}

impl EnvelopedText<'_> {
    /// The events a full parse of the chunk gives.
    pub(super) fn emit(self, out: &mut Vec<StreamEvent>) {
        if !self.text.is_empty() {
            out.push(StreamEvent::Text { choice: self.choice, delta: self.text.into() });
        }
    }
}

impl Envelope {
    /// The content of `data` when it is this envelope around one JSON string. Only the content
    /// is checked to be UTF-8: the bytes around it are the envelope's, which were.
    pub(crate) fn text<'a>(&self, data: &'a [u8]) -> Option<EnvelopedText<'a>> {
        let (p, s) = (self.prefix.len(), self.suffix.len());
        if data.len() < p + s || !data.starts_with(self.prefix.as_bytes()) || !data.ends_with(self.suffix.as_bytes()) {
            return None;
        }
        let body = &data[p..data.len() - s];
        // One plain pass: a token is a few bytes, less than a SIMD search's set-up.
        let text = if body.iter().all(|&b| b != b'"' && b != b'\\' && b >= 0x20) {
            Cow::Borrowed(std::str::from_utf8(body).ok()?)
        } else {
            // Escapes: the quoted body must be one JSON string, or this is not the same shape.
            Cow::Owned(serde_json::from_slice::<String>(&data[p - 1..=data.len() - s]).ok()?)
        };
        Some(EnvelopedText { choice: self.choice, text })
    }

    /// The envelope of a chunk just mapped in full, when it is a plain text chunk whose content
    /// was read in place.
    fn of(data: &str, chunk: &Chunk<'_>) -> Option<Self> {
        if chunk.usage.as_ref().is_some_and(|v| !v.is_null()) || chunk.timings.as_ref().is_some_and(|v| !v.is_null()) {
            return None;
        }
        let [c] = chunk.choices.as_deref()? else { return None };
        let quiet = |v: &Option<Value>| v.as_ref().is_none_or(Value::is_null);
        if !(quiet(&c.logprobs) && quiet(&c.content_filter_results) && quiet(&c.stop_reason) && quiet(&c.matched_stop))
            || c.finish_reason.is_some()
        {
            return None;
        }
        let d = c.delta.as_ref()?;
        if d.refusal.is_some() || d.reasoning_content.is_some() || d.reasoning.is_some() || d.tool_calls.is_some() {
            return None;
        }
        let Some(Cow::Borrowed(content)) = &d.content else { return None };
        // Where the content sits in `data` (it was borrowed from it).
        let start = (content.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
        let end = start + content.len();
        let bytes = data.as_bytes();
        if end >= bytes.len() || start == 0 || bytes[start - 1] != b'"' || bytes[end] != b'"' {
            return None;
        }
        Some(Self { prefix: data[..start].to_owned(), suffix: data[end..].to_owned(), choice: c.index.unwrap_or(0) })
    }
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
    mapper.envelope = Envelope::of(data, &chunk);
    true
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read what they wrote
mod tests {
    use super::*;

    /// Maps every `data:` payload twice: through the envelope when it fits, and always in full.
    fn both_ways(payloads: &[&str]) {
        let (mut fast, mut full) = (ChatMapper::new(), ChatMapper::new());
        for data in payloads {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            fast.map_data(data, &mut a);
            full.envelope = None;
            full.map_data(data, &mut b);
            assert_eq!(a, b, "{data}");
        }
    }

    #[test]
    fn enveloped_chunks_map_as_parsed_ones() {
        for name in std::fs::read_dir("tests/fixtures/sse").unwrap().filter_map(Result::ok).map(|e| e.path()) {
            if name.extension().is_some_and(|x| x == "sse") && !name.to_string_lossy().contains("responses") {
                let body = std::fs::read_to_string(&name).unwrap();
                let data: Vec<&str> =
                    body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect();
                both_ways(&data);
            }
        }
        let head = r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"content":"#;
        let tail = r#"},"finish_reason":null}]}"#;
        let chunk = |text: &str| format!("{head}{text}{tail}");
        let mut payloads: Vec<String> = [
            r#""a""#,
            r#""b c""#,
            r#""line\nbreak \"quoted\" \u00e9""#,
            r#""""#,
            r#""x","refusal":"y""#,
            "\"raw\u{1}control\"",
            r#""日本語 🎉""#,
            r#"null"#,
            r#""d""#,
        ]
        .iter()
        .map(|t| chunk(t))
        .collect();
        payloads.push(head.replace("\"m\"", "\"other\"") + r#""e""# + tail);
        payloads.push(chunk(r#""f""#));
        payloads.push(head.to_owned() + r#""g""# + &tail.replace("null", "\"stop\""));
        payloads.push(chunk(r#""h""#) + " ");
        payloads.push("[DONE]".to_owned());
        both_ways(&payloads.iter().map(String::as_str).collect::<Vec<_>>());
        // The envelope did take the plain chunks.
        let mut m = ChatMapper::new();
        m.map_data(&chunk(r#""a""#), &mut Vec::new());
        assert!(m.envelope.is_some());
        let mut out = Vec::new();
        m.map_data(&chunk(r#""tab\there""#), &mut out);
        assert_eq!(out, [StreamEvent::Text { choice: 0, delta: "tab\there".into() }]);
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let c: Chunk<'_> = serde_json::from_str(
            r#"{"id":"a","model":null,"choices":[{"index":0,"delta":{"content":"x\ny","refusal":"r"},"finish_reason":null}]}"#,
        )
        .unwrap();
        assert!(matches!(c.id, Some(Cow::Borrowed("a"))));
        assert!(c.model.is_none());
        let d = c.choices.unwrap().remove(0).delta.unwrap();
        assert!(matches!(d.content, Some(Cow::Owned(ref s)) if s == "x\ny"));
        assert!(matches!(d.refusal, Some(Cow::Borrowed("r"))));
        assert!(serde_json::from_str::<Chunk<'_>>(r#"{"id":1}"#).is_err(), "a number is not a string");
    }

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
