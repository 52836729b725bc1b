//! The limits on what a server (or a tool) can make palaver hold, print or send, in one place.
//! Each has a name, a generous default, and can be set per provider profile in `config.toml`
//! (`limits = { reply_bytes = 16777216 }`); reaching one ends the turn (or the one tool call)
//! with a message naming it and how to raise it, keeping what arrived before it.
//!
//! They are checked where the data arrives: the SSE decoder (a line or an event), the body
//! reader (a non-streamed body), [`ReplyBudget`] over the mapped events of a reply (its text,
//! its tool calls and output items), the client before sending (the request body), the tool
//! registry (one tool's output) and the turn engine (all tool output of one round).

use super::event::{CallFragment, ItemUpdate, StreamEvent};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

const MIB: usize = 1024 * 1024;

/// How much of one reply's raw frames is kept (for the inspector and the store); later frames
/// are only counted. Not a setting: the mapped reply is whole either way.
pub const RAW_FRAME_BUDGET: usize = 256 * 1024;

/// Whether a frame of `size` bytes is kept after `kept` bytes of the same reply's frames. The
/// client builds only the frames this admits; the reducer records by the same rule.
#[must_use]
pub fn frame_fits(kept: usize, size: usize) -> bool {
    kept.saturating_add(size) <= RAW_FRAME_BUDGET
}

/// What one token or alternative of `--logprobs` costs in memory, about (a JSON object of two
/// fields: 6,116 tokens of 20 alternatives held 340 MB in a debug build with three copies).
pub const LOGPROB_ENTRY_BYTES: usize = 512;

/// Every limit, in bytes or counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// One SSE line, or one event's data (an image generation's partial images are large).
    pub sse_event_bytes: usize,
    /// One non-streamed response body.
    pub body_bytes: usize,
    /// One reply's text: content, reasoning, refusal, tool-call arguments and item text.
    pub reply_bytes: usize,
    /// Tool calls in one reply.
    pub tool_calls: usize,
    /// Output items in one reply (Responses API).
    pub output_items: usize,
    /// One tool's output (what is kept and sent back).
    pub tool_output_bytes: usize,
    /// All tool output sent back in one round.
    pub round_tool_output_bytes: usize,
    /// Nesting of one JSON frame or body (serde_json refuses past 128 anyway).
    pub json_depth: usize,
    /// The request body palaver builds (history, tool results, attachments).
    pub request_bytes: usize,
    /// The body of `GET /models` (`palaver models`, the model picker).
    pub model_list_bytes: usize,
    /// Models in that list.
    pub model_list_entries: usize,
    /// Generated images kept in one reply (image generation, code interpreter); later ones
    /// are dropped and said, the reply goes on.
    pub images_per_reply: usize,
    /// Bytes of those images (as base64) kept in one reply; past it, as for the count.
    pub item_payload_bytes: usize,
    /// The JSON answers of the batch API (`GET /batches/ID`, creating, cancelling, uploading).
    pub batch_body_bytes: usize,
    /// One line of a batch's output or error file (one request's answer); a longer line is
    /// refused and its cell stored failed, the other lines are read.
    pub batch_line_bytes: usize,
    /// All of one batch output or error file, as it streams (it is never written to disk).
    pub batch_file_bytes: usize,
    /// Alternatives kept per token of `--logprobs` (the APIs' own maximum is 20); the rest are
    /// dropped as they arrive.
    pub logprob_alternatives: usize,
    /// Tokens whose log probabilities one reply keeps; later ones are dropped and said, the
    /// reply goes on.
    pub logprob_tokens: usize,
    /// What those log probabilities may hold in one reply: their text plus 512 bytes for each
    /// token and alternative (about what each costs in memory, measured); past it, as for the tokens.
    pub logprob_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            sse_event_bytes: 32 * MIB,
            body_bytes: 64 * MIB,
            reply_bytes: 4 * MIB,
            tool_calls: 10_000,
            output_items: 10_000,
            tool_output_bytes: MIB,
            round_tool_output_bytes: 2 * MIB,
            json_depth: 128,
            request_bytes: 32 * MIB,
            model_list_bytes: 32 * MIB,
            model_list_entries: 100_000,
            images_per_reply: 16,
            item_payload_bytes: 64 * MIB,
            batch_body_bytes: 4 * MIB,
            batch_line_bytes: 64 * MIB,
            batch_file_bytes: 2048 * MIB,
            logprob_alternatives: 20,
            logprob_tokens: 100_000,
            logprob_bytes: 8 * MIB,
        }
    }
}

impl Limits {
    /// The words for a limit that was reached: what, which limit, how to raise it.
    #[must_use]
    pub fn reached(name: &'static str, what: &str, value: usize) -> String {
        crate::sys::read::reached(name, what, value)
    }

    /// The words for a body refused whole at a limit (nothing of it is kept).
    #[must_use]
    pub fn refused(name: &'static str, what: &str, value: usize) -> String {
        crate::sys::read::refused(name, what, value)
    }

    /// A limit as a budget for `sys::read`.
    #[must_use]
    pub fn budget(name: &'static str, value: usize) -> crate::sys::read::Budget {
        crate::sys::read::Budget::profile(name, value)
    }
}

/// Counts what one reply has made palaver hold, event by event.
#[derive(Debug, Default)]
pub struct ReplyBudget {
    limits: Limits,
    text: usize,
    calls: HashSet<(u32, u32)>,
    items: HashSet<u32>,
    /// Items whose image is kept, with its size (a later copy of the item replaces it).
    images: HashMap<u32, usize>,
    /// Items whose image was dropped, with the limit that dropped it: later copies are too.
    dropped: HashMap<u32, (&'static str, usize)>,
    /// Log probabilities kept: tokens, and their cost as `logprob_bytes` counts it.
    logprob_tokens: usize,
    logprob_bytes: usize,
    /// Set once a logprob limit dropped some (said once; later ones are dropped quietly).
    logprobs_cut: bool,
}

impl ReplyBudget {
    #[must_use]
    pub fn new(limits: Limits) -> Self {
        Self { limits, ..Self::default() }
    }

    /// Takes one event into account; `Err` names the limit it passes (the event is not to be
    /// applied).
    ///
    /// # Errors
    /// The message for the user when a limit is passed.
    pub fn take(&mut self, ev: &StreamEvent) -> Result<(), String> {
        let l = &self.limits;
        let grown = match ev {
            StreamEvent::Text { delta, .. }
            | StreamEvent::Reasoning { delta, .. }
            | StreamEvent::Refusal { delta, .. } => delta.len(),
            StreamEvent::ToolCall(c) => {
                let CallFragment { choice, slot, arguments, .. } = &**c;
                if self.calls.insert((*choice, *slot)) && self.calls.len() > l.tool_calls {
                    return Err(Limits::reached("tool_calls", "the reply asked for too many tool calls", l.tool_calls));
                }
                arguments.len()
            }
            StreamEvent::ToolCallArguments { arguments, .. } => arguments.len(),
            StreamEvent::Item { index, .. } => {
                if self.items.insert(*index) && self.items.len() > l.output_items {
                    return Err(Limits::reached("output_items", "the reply has too many output items", l.output_items));
                }
                // An item replaces its earlier copy (one SSE event, within sse_event_bytes).
                0
            }
            StreamEvent::ItemUpdate { update: ItemUpdate::Append { delta, .. }, .. } => delta.len(),
            _ => 0,
        };
        self.text += grown;
        if self.text > l.reply_bytes {
            return Err(Limits::reached("reply_bytes", "the reply is too long", l.reply_bytes));
        }
        Ok(())
    }
}

impl ReplyBudget {
    /// Takes `events[from..]` into the reply's budget; the first event past a limit and those
    /// after it are dropped, and the limit's words returned. An image past the reply's image
    /// limits is taken out of its item instead, and the reason noted beside the item
    /// (`ItemUpdate::Note` "dropped"): the reply goes on.
    pub fn admit(&mut self, events: &mut Vec<StreamEvent>, from: usize) -> Option<String> {
        let mut i = from;
        while i < events.len() {
            if let Err(message) = self.take(&events[i]) {
                events.truncate(i);
                return Some(message);
            }
            if let StreamEvent::Logprobs { choice, value } = &mut events[i] {
                let choice = *choice;
                if let Some(why) = self.trim_logprobs(value) {
                    let note = serde_json::json!({ "logprobs": why });
                    i += 1;
                    events.insert(i, StreamEvent::FilterOffsets { choice, value: note });
                }
            }
            if let StreamEvent::Item { index, item, .. } = &mut events[i] {
                let index = *index;
                if let Some(why) = self.trim_item(index, item) {
                    let update = ItemUpdate::Note { field: "dropped".into(), value: why.into() };
                    i += 1;
                    events.insert(i, StreamEvent::ItemUpdate { index, update });
                }
            }
            i += 1;
        }
        None
    }

    /// Keeps one event's log probabilities within `logprob_alternatives` per token, and the
    /// reply's within `logprob_tokens` and `logprob_bytes`: what passes is dropped (the reply goes
    /// on); the first time, the words that say so are returned.
    pub fn trim_logprobs(&mut self, value: &mut Value) -> Option<String> {
        let l = self.limits;
        // Chat puts the list under `content`; Responses sends the list itself.
        let list = match value {
            Value::Object(m) => m.get_mut("content").and_then(Value::as_array_mut),
            Value::Array(a) => Some(a),
            _ => None,
        }?;
        let mut keep = list.len();
        let mut why = None;
        for (n, entry) in list.iter_mut().enumerate() {
            if self.logprobs_cut {
                keep = n;
                break;
            }
            if let Some(Value::Array(top)) = entry.get_mut("top_logprobs") {
                top.truncate(l.logprob_alternatives);
                top.iter_mut().filter_map(Value::as_object_mut).for_each(|a| drop(a.remove("bytes")));
            }
            if let Some(e) = entry.as_object_mut() {
                // The token's UTF-8 bytes as a list of numbers: its text says the same.
                e.remove("bytes");
            }
            let cost = logprob_cost(entry);
            let past = if self.logprob_tokens + 1 > l.logprob_tokens {
                Some(("logprob_tokens", l.logprob_tokens))
            } else if self.logprob_bytes + cost > l.logprob_bytes {
                Some(("logprob_bytes", l.logprob_bytes))
            } else {
                None
            };
            if let Some((name, value)) = past {
                self.logprobs_cut = true;
                why = Some(format!(
                    "token probabilities past the limit {name} = {value} were dropped; the reply goes on \
                     (raise it in the provider's profile in config.toml: limits = {{ {name} = … }})"
                ));
                keep = n;
                break;
            }
            self.logprob_tokens += 1;
            self.logprob_bytes += cost;
        }
        list.truncate(keep);
        why
    }

    /// Keeps an output item's image within `images_per_reply` and `item_payload_bytes`: past
    /// either, the image is taken out of the item (the reply goes on) and the reason returned,
    /// to be noted beside the item.
    pub fn trim_item(&mut self, index: u32, item: &mut Value) -> Option<String> {
        let size = item_payload(item).map_or(0, |p| p.len());
        if size == 0 {
            return None;
        }
        let l = self.limits;
        let others: usize = self.images.iter().filter(|(i, _)| **i != index).map(|(_, n)| n).sum();
        let new_image = !self.images.contains_key(&index);
        // A later copy of a dropped item is dropped too, whatever made room since.
        let why = if let Some(&why) = self.dropped.get(&index) {
            Some(why)
        } else if new_image && self.images.len() >= l.images_per_reply {
            Some(("images_per_reply", l.images_per_reply))
        } else if others + size > l.item_payload_bytes {
            Some(("item_payload_bytes", l.item_payload_bytes))
        } else {
            None
        };
        let Some((name, value)) = why else {
            self.images.insert(index, size);
            return None;
        };
        self.images.remove(&index);
        self.dropped.insert(index, (name, value));
        drop_payload(item);
        Some(image_dropped(name, value))
    }
}

/// The images one reply holds, counted against `images_per_reply` and `item_payload_bytes`
/// after the reply has streamed: the images its tool calls returned (MCP image content) join
/// the images the reply generated, under the same two limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImageBudget {
    limits: Limits,
    /// Images kept so far.
    count: usize,
    /// Their bytes, as base64 (how a generated image arrives and a tool image is sent).
    bytes: usize,
}

impl ImageBudget {
    /// An empty budget under `limits`.
    #[must_use]
    pub fn new(limits: Limits) -> Self {
        Self { limits, count: 0, bytes: 0 }
    }

    /// The base64 size of `raw` bytes.
    #[must_use]
    pub fn base64_len(raw: usize) -> usize {
        raw.div_ceil(3).saturating_mul(4)
    }

    /// Counts an image the reply already holds (kept whatever the limits: it is there).
    pub fn hold(&mut self, size: usize) {
        self.count += 1;
        self.bytes = self.bytes.saturating_add(size);
    }

    /// Takes one image of `size` bytes (base64); `Err` names the limit it would pass, and the
    /// image is then not counted (it is to be dropped).
    ///
    /// # Errors
    /// The words for the user and the model when a limit is passed.
    pub fn take(&mut self, size: usize) -> Result<(), String> {
        let l = self.limits;
        let why = if self.count >= l.images_per_reply {
            ("images_per_reply", l.images_per_reply)
        } else if self.bytes.saturating_add(size) > l.item_payload_bytes {
            ("item_payload_bytes", l.item_payload_bytes)
        } else {
            self.count += 1;
            self.bytes += size;
            return Ok(());
        };
        Err(image_dropped(why.0, why.1))
    }
}

/// What one token's log probabilities cost, as `logprob_bytes` counts it: their text, and
/// [`LOGPROB_ENTRY_BYTES`] for the token and each alternative.
fn logprob_cost(entry: &Value) -> usize {
    let text = |v: &Value| v.get("token").and_then(Value::as_str).map_or(0, str::len);
    let top = entry.get("top_logprobs").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    top.iter().map(|a| LOGPROB_ENTRY_BYTES + text(a)).sum::<usize>() + LOGPROB_ENTRY_BYTES + text(entry)
}

/// Why an image was dropped, naming the limit and how to raise it.
fn image_dropped(name: &str, value: usize) -> String {
    format!(
        "image dropped: this reply passed the limit {name} = {value}; the reply goes on without it \
         (raise it in the provider's profile in config.toml: limits = {{ {name} = … }})"
    )
}

/// The base64 image an output item carries: an `image_generation_call`'s `result`, or a
/// `code_interpreter_call`'s image outputs (data URIs), joined in size.
fn item_payload(item: &Value) -> Option<&str> {
    match item.get("type")?.as_str()? {
        "image_generation_call" => item.get("result")?.as_str(),
        "code_interpreter_call" => {
            item.get("outputs")?.as_array()?.iter().filter_map(|o| o.get("url")?.as_str()).max_by_key(|u| u.len())
        }
        _ => None,
    }
}

fn drop_payload(item: &mut Value) {
    if let Some(r) = item.get_mut("result") {
        *r = Value::String(String::new());
    }
    if let Some(Value::Array(outputs)) = item.get_mut("outputs") {
        outputs.retain(|o| o.get("type").and_then(Value::as_str) != Some("image"));
    }
}

/// Whether a JSON text nests arrays and objects deeper than `limit`: a check before parsing that
/// names the limit instead of a parser error. It runs on every streamed event, so it first
/// counts opening brackets (nesting never exceeds their number) and walks the bytes only when
/// there are more than `limit` of them.
#[must_use]
pub fn json_deeper_than(bytes: &[u8], limit: usize) -> bool {
    bytes.len() > limit && opening_brackets(bytes) > limit && json_depth(bytes) > limit
}

/// How many `{` and `[` a text holds. A branch-free count the compiler turns into SIMD compares:
/// an event has a handful of brackets, and a search that stops at each one cost more than
/// looking at every byte (`'[' | 0x20 == '{'`, and no other byte maps to `{`).
fn opening_brackets(bytes: &[u8]) -> usize {
    bytes.chunks(255).map(|c| c.iter().map(|&b| u8::from(b | 0x20 == b'{')).sum::<u8>() as usize).sum()
}

/// The deepest nesting of arrays and objects in a JSON text, counting only brackets outside
/// strings.
#[must_use]
pub fn json_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_ignores_brackets_in_strings() {
        assert_eq!(json_depth(br#"{"a":[1,{"b":"[[[{"}]}"#), 3);
        assert_eq!(json_depth(br#""\"[""#), 0);
        assert_eq!(json_depth(&[b'['; 100_000]), 100_000);
        assert_eq!(opening_brackets(br#"{"a":[1,{"b":"x"}],"c":"{"}"#), 4);
        assert_eq!(opening_brackets(&[b'['; 1_000]), 1_000);
        // Only `{` and `[` count: every other byte, `{`'s and `[`'s neighbours included, does not.
        let others: Vec<u8> = (0..=255u8).filter(|b| *b != b'{' && *b != b'[').collect();
        assert_eq!(opening_brackets(&others), 0);
        assert!(json_deeper_than(&[b'['; 129], 128) && !json_deeper_than(&[b'['; 128], 128));
        assert!(!json_deeper_than(br#"{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}"#, 8));
    }

    #[test]
    fn deeper_than_agrees_with_the_depth() {
        for text in [&br#"{"a":[1,{"b":"[[[{"}]}"#[..], br#"[[["[[[[[[[[[["]]]"#, b"[]", b"", &[b'['; 40]] {
            for limit in 0..12 {
                assert_eq!(json_deeper_than(text, limit), json_depth(text) > limit, "{limit}");
            }
        }
    }

    #[test]
    fn budget_names_the_limit() {
        let limits = Limits { reply_bytes: 10, tool_calls: 2, ..Limits::default() };
        let mut b = ReplyBudget::new(limits);
        let text = |s: &str| StreamEvent::Text { choice: 0, delta: s.into() };
        assert!(b.take(&text("hello")).is_ok());
        let e = b.take(&text("world!")).err().unwrap_or_default();
        assert!(e.contains("reply_bytes = 10") && e.contains("limits = { reply_bytes"), "{e}");
        let mut b = ReplyBudget::new(limits);
        let call = |slot| {
            StreamEvent::ToolCall(Box::new(CallFragment {
                choice: 0,
                slot,
                id: None,
                name: None,
                arguments: String::new(),
                extra: None,
                kind: None,
                index: None,
            }))
        };
        assert!(b.take(&call(0)).is_ok() && b.take(&call(1)).is_ok() && b.take(&call(1)).is_ok());
        assert!(b.take(&call(2)).err().unwrap_or_default().contains("tool_calls"));
    }

    #[test]
    fn logprobs_keep_twenty_alternatives_and_stop_at_the_reply_s_limits_saying_so() {
        let limits = Limits { logprob_tokens: 3, ..Limits::default() };
        let mut b = ReplyBudget::new(limits);
        let alt = |i: usize| serde_json::json!({"token": format!("t{i}"), "logprob": -1.0, "bytes": [116]});
        let token = |n: usize| {
            serde_json::json!({"token": "a", "logprob": -0.5, "bytes": [97],
            "top_logprobs": (0..n).map(alt).collect::<Vec<_>>()})
        };
        let mut events =
            vec![StreamEvent::Logprobs { choice: 0, value: serde_json::json!({"content": [token(100_000)]}) }];
        assert_eq!(b.admit(&mut events, 0), None);
        let StreamEvent::Logprobs { value, .. } = &events[0] else { panic!() };
        assert_eq!(value["content"][0]["top_logprobs"].as_array().unwrap().len(), 20);
        assert!(
            value["content"][0].get("bytes").is_none() && value["content"][0]["top_logprobs"][0].get("bytes").is_none()
        );
        // Responses' shape (a list); the third token is the last kept, then it is said once.
        let mut events =
            vec![StreamEvent::Logprobs { choice: 0, value: serde_json::json!([token(1), token(1), token(1)]) }];
        assert_eq!(b.admit(&mut events, 0), None);
        assert_eq!(events.len(), 2, "{events:?}");
        let StreamEvent::Logprobs { value, .. } = &events[0] else { panic!() };
        assert_eq!(value.as_array().unwrap().len(), 2);
        let StreamEvent::FilterOffsets { value, .. } = &events[1] else { panic!("{events:?}") };
        assert!(value["logprobs"].as_str().unwrap().contains("logprob_tokens = 3"), "{value}");
        let mut events = vec![StreamEvent::Logprobs { choice: 0, value: serde_json::json!([token(1)]) }];
        b.admit(&mut events, 0);
        assert_eq!(events.len(), 1, "said once");
        // Bytes: 200 tokens of 20 alternatives pass a small byte budget.
        let mut b = ReplyBudget::new(Limits { logprob_bytes: 10_000, ..Limits::default() });
        let mut v = serde_json::json!({"content": (0..200).map(|_| token(20)).collect::<Vec<_>>()});
        assert!(b.trim_logprobs(&mut v).unwrap().contains("logprob_bytes = 10000"));
        assert!(v["content"].as_array().unwrap().len() < 5);
    }

    #[test]
    fn an_image_budget_counts_what_the_reply_holds_and_refuses_past_either_limit() {
        let limits = Limits { images_per_reply: 3, item_payload_bytes: 100, ..Limits::default() };
        let mut b = ImageBudget::new(limits);
        b.hold(40);
        assert_eq!(b.take(40), Ok(()));
        let why = b.take(30).unwrap_err();
        assert!(why.contains("item_payload_bytes = 100") && why.contains("limits = { item_payload_bytes"), "{why}");
        // A refused image is not counted: a smaller one still fits, then the count is full.
        assert_eq!(b.take(20), Ok(()));
        assert!(b.take(0).unwrap_err().contains("images_per_reply = 3"));
        assert_eq!(ImageBudget::base64_len(4), 8);
        assert_eq!(ImageBudget::base64_len(3), 4);
    }

    #[test]
    fn images_past_the_count_or_bytes_are_dropped_and_said_and_the_reply_goes_on() {
        let limits = Limits { images_per_reply: 2, item_payload_bytes: 100, ..Limits::default() };
        let mut b = ReplyBudget::new(limits);
        let image =
            |n: usize| serde_json::json!({"type": "image_generation_call", "id": "ig", "result": "A".repeat(n)});
        let mut first = image(40);
        assert_eq!(b.trim_item(0, &mut first), None);
        // The same item again (added, then done) replaces its copy: it is not a second image.
        assert_eq!(b.trim_item(0, &mut image(45)), None);
        let mut too_big = image(60);
        let why = b.trim_item(1, &mut too_big).unwrap();
        assert!(why.contains("item_payload_bytes = 100") && why.contains("goes on"), "{why}");
        assert_eq!(too_big["result"], "", "the image was taken out of the item");
        assert_eq!(too_big["id"], "ig", "the rest of the item stays");
        // Once dropped, later copies of that item are dropped too, for the same reason.
        assert!(b.trim_item(1, &mut image(10)).unwrap().contains("item_payload_bytes"));
        assert_eq!(b.trim_item(2, &mut image(10)), None);
        let mut third = serde_json::json!({"type": "code_interpreter_call",
            "outputs": [{"type": "logs", "logs": "ok"}, {"type": "image", "url": "data:image/png;base64,AAAA"}]});
        let why = b.trim_item(3, &mut third).unwrap();
        assert!(why.contains("images_per_reply = 2"), "{why}");
        assert_eq!(third["outputs"], serde_json::json!([{"type": "logs", "logs": "ok"}]));
        // Items without an image cost nothing.
        assert_eq!(b.trim_item(4, &mut serde_json::json!({"type": "message", "content": []})), None);
        // Text still counts as before.
        assert!(b.take(&StreamEvent::Text { choice: 0, delta: "x".into() }).is_ok());
    }
}
