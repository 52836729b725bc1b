//! The conversation reducer: applies one domain `StreamEvent` to the assistant message being
//! built. Pure and cheap: a text delta costs a `push_str` and a revision bump.

use super::message::{Choice, ErrorInfo, Message, MessageStatus, RawFrame, ToolCall, ToolStatus};
use super::safety::merge_filter;
use crate::api::event::{CallFragment, ItemUpdate, StreamEvent};

/// Raw frames kept per message for the inspector; past this, frames are only counted, so a
/// long stream's memory is its text and not its wire bytes.
pub use crate::api::limits::RAW_FRAME_BUDGET;

/// Applies one event. `now_ms` is milliseconds since the request went out.
pub fn apply(msg: &mut Message, event: StreamEvent, now_ms: u64) {
    msg.revision += 1;
    match event {
        StreamEvent::Meta(meta) => msg.meta = *meta,
        StreamEvent::Text { choice, delta } => {
            first_token(msg, now_ms);
            msg.choice_mut(choice).content.push_str(&delta);
        }
        StreamEvent::Reasoning { choice, delta } => {
            first_token(msg, now_ms);
            msg.choice_mut(choice).reasoning.push_str(&delta);
        }
        StreamEvent::Refusal { choice, delta } => {
            first_token(msg, now_ms);
            msg.choice_mut(choice).refusal.push_str(&delta);
        }
        StreamEvent::ToolCall(c) => {
            let CallFragment { choice, slot, id, name, arguments, extra, kind, index } = *c;
            first_token(msg, now_ms);
            let call = call_slot(msg.choice_mut(choice), slot);
            if index.is_some() {
                call.index = index;
            }
            if let Some(kind) = kind {
                call.kind = kind;
            }
            if let Some(id) = id {
                call.id = id;
            }
            if let Some(name) = name {
                call.name = name;
            }
            if extra.is_some() {
                call.extra = extra;
            }
            call.arguments.push_str(&arguments);
        }
        StreamEvent::ToolCallArguments { choice, slot, arguments } => {
            call_slot(msg.choice_mut(choice), slot).arguments = arguments;
        }
        StreamEvent::Usage(u) => msg.usage = Some(u),
        StreamEvent::PromptFilter(pf) => msg.prompt_filter = Some(pf),
        StreamEvent::ContentFilter { choice, results } => {
            let c = msg.choice_mut(choice);
            merge_filter(c.content_filter.get_or_insert_with(Default::default), &results);
        }
        StreamEvent::FilterOffsets { choice, value } => msg.choice_mut(choice).filter_notes.push(value),
        StreamEvent::Logprobs { choice, value } => msg.choice_mut(choice).logprobs.push(value),
        StreamEvent::Annotation { choice, value } => msg.choice_mut(choice).annotations.push(value),
        StreamEvent::Finish { choice, reason } => msg.choice_mut(choice).finish_reason = Some(reason),
        StreamEvent::Item { index, item, .. } => {
            let i = index as usize;
            if msg.items.len() <= i {
                msg.items.resize(i + 1, serde_json::Value::Null);
            }
            msg.items[i] = item;
        }
        StreamEvent::ItemUpdate { index, update: ItemUpdate::Note { field, value } } => {
            msg.item_notes.entry(index).or_default().insert(field, value);
        }
        StreamEvent::ItemUpdate { index, update } => update_item(msg, index as usize, update),
        StreamEvent::Error(e) => {
            msg.error = Some(ErrorInfo::from_provider(&e, "stream"));
        }
        StreamEvent::Unknown { event, raw } => {
            if msg.unknown.len() < 64 {
                msg.unknown.push(serde_json::json!({ "event": event, "raw": raw }));
            }
        }
        StreamEvent::Malformed { data, reason } => {
            if msg.damaged.len() < 16 {
                let clipped: String = data.chars().take(200).collect();
                msg.damaged.push(format!("{reason}: {clipped}"));
            }
        }
        StreamEvent::End => {}
    }
}

fn update_item(msg: &mut Message, i: usize, update: ItemUpdate) {
    if msg.items.len() <= i {
        msg.items.resize(i + 1, serde_json::Value::Null);
    }
    if !msg.items[i].is_object() {
        msg.items[i] = serde_json::Value::Object(serde_json::Map::new());
    }
    let Some(item) = msg.items[i].as_object_mut() else { return };
    match update {
        ItemUpdate::Status(s) => {
            item.insert("status".into(), serde_json::Value::String(s));
        }
        ItemUpdate::Append { field, delta } => match item.get_mut(&field) {
            Some(serde_json::Value::String(s)) => s.push_str(&delta),
            _ => {
                item.insert(field, serde_json::Value::String(delta));
            }
        },
        ItemUpdate::Set { field, value } => {
            item.insert(field, value);
        }
        ItemUpdate::Note { .. } => {}
    }
}

/// Records a raw frame within the message's budget.
pub fn record_frame(msg: &mut Message, at_ms: u64, event: String, data: String) {
    let size = data.len() + event.len();
    if !crate::api::limits::frame_fits(msg.frames_bytes, size) {
        msg.frames_dropped += 1;
        return;
    }
    msg.frames_bytes += size;
    msg.frames.push(RawFrame { at_ms, event, data });
}

fn first_token(msg: &mut Message, now_ms: u64) {
    msg.timing.deltas += 1;
    if msg.timing.ttft_ms.is_none() {
        msg.timing.ttft_ms = Some(now_ms);
    }
    if msg.status == MessageStatus::Waiting {
        msg.status = MessageStatus::Streaming;
    }
}

fn call_slot(choice: &mut Choice, slot: u32) -> &mut ToolCall {
    let i = slot as usize;
    while choice.tool_calls.len() <= i {
        choice.tool_calls.push(ToolCall::default());
    }
    &mut choice.tool_calls[i]
}

/// How a stream ended, as seen by the transport.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The body ended (with or without `[DONE]`).
    Eof,
    /// The user cancelled.
    Cancelled,
    /// The transport failed (connection dropped, idle timeout…).
    Transport(ErrorInfo),
}

/// Why a reply stopped when the process was told to end (`signal`: "SIGTERM", "SIGHUP"): kept
/// on the reply, so the history names the signal rather than "killed or crashed" (what a reply
/// left streaming by a process that vanished is marked on the next start).
#[must_use]
pub fn signal_reason(signal: &str) -> ErrorInfo {
    let why = match signal {
        "SIGHUP" => "its terminal went away",
        _ => "palaver was told to stop",
    };
    ErrorInfo {
        status: None,
        message: format!("interrupted by {signal} ({why}) before this reply finished"),
        kind: "interrupted".into(),
        body: serde_json::Value::Null,
    }
}

/// Settles the message when the stream is over: final status, finish reason and total time.
pub fn finish(msg: &mut Message, ending: Ending, now_ms: u64) {
    msg.revision += 1;
    msg.timing.total_ms = Some(now_ms);
    for choice in &mut msg.choices {
        // Each event was redacted as it came; a secret a reply spelled across two events is
        // whole only now, before the calls run and anything stores or sends the reply back.
        for text in [&mut choice.content, &mut choice.reasoning, &mut choice.refusal] {
            crate::sys::secrets::redact_string(text);
        }
        for call in &mut choice.tool_calls {
            crate::sys::secrets::redact_string(&mut call.arguments);
        }
        // Fragments arrive in any order; the message's calls are in the order of their index
        // (a stable sort: calls without one keep their place after those with one).
        choice.tool_calls.sort_by_key(|c| c.index.unwrap_or(u32::MAX));
    }
    for call in msg.choices.iter_mut().flat_map(|c| c.tool_calls.iter_mut()) {
        if call.status == ToolStatus::Streaming {
            call.status = ToolStatus::Pending;
        }
    }
    let has_finish = msg.main().finish_reason.is_some();
    match ending {
        Ending::Cancelled => {
            msg.status = MessageStatus::Cancelled;
            msg.main_mut().finish_reason = Some("cancelled".into());
        }
        Ending::Transport(err) => {
            msg.status = MessageStatus::Interrupted;
            msg.error = Some(err);
            msg.main_mut().finish_reason = Some("error".into());
        }
        Ending::Eof if msg.error.is_some() => {
            msg.status = MessageStatus::Failed;
            msg.main_mut().finish_reason = Some("error".into());
        }
        Ending::Eof if !msg.damaged.is_empty() => {
            msg.status = MessageStatus::Failed;
            let first = msg.damaged.first().cloned().unwrap_or_default();
            msg.error = Some(ErrorInfo {
                status: None,
                message: format!("the stream carried a malformed frame ({first})"),
                kind: "malformed".into(),
                body: serde_json::Value::Null,
            });
            msg.main_mut().finish_reason = Some("error".into());
        }
        Ending::Eof if !has_finish => {
            let main = msg.main();
            let empty = main.content.is_empty() && main.tool_calls.is_empty() && main.refusal.is_empty();
            let why = if empty {
                "the stream ended with no content and no finish reason"
            } else {
                "the stream ended before the provider sent a finish reason"
            };
            msg.status = MessageStatus::Interrupted;
            msg.error = Some(ErrorInfo {
                status: None,
                message: why.into(),
                kind: "truncated".into(),
                body: serde_json::Value::Null,
            });
            msg.main_mut().finish_reason = Some("error".into());
        }
        Ending::Eof => msg.status = MessageStatus::Complete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::event::StreamEvent;

    #[test]
    fn a_secret_spelled_across_deltas_is_redacted_when_the_reply_ends() {
        crate::sys::secrets::register("reducer-split-0123456789");
        let mut msg = Message::assistant_pending();
        for delta in ["the key: reducer-sp", "lit-0123456789."] {
            apply(&mut msg, StreamEvent::Text { choice: 0, delta: delta.into() }, 1);
        }
        let call = crate::api::event::CallFragment {
            choice: 0,
            slot: 0,
            id: Some("c1".into()),
            name: Some("t".into()),
            arguments: r#"{"k":"reducer-split-0123456789"}"#.into(),
            extra: None,
            kind: None,
            index: None,
        };
        apply(&mut msg, StreamEvent::ToolCall(Box::new(call)), 1);
        finish(&mut msg, Ending::Eof, 2);
        assert_eq!(msg.main().content, "the key: [redacted].");
        assert_eq!(msg.main().tool_calls[0].arguments, r#"{"k":"[redacted]"}"#);
    }

    /// A long stream keeps its text and a bounded sample of its wire frames, nothing more.
    #[test]
    fn memory_is_the_text_plus_a_bounded_frame_sample() {
        let mut msg = Message::assistant_pending();
        let frame = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"}}]}";
        for i in 0..100_000 {
            record_frame(&mut msg, i, String::new(), frame.to_owned());
            apply(&mut msg, StreamEvent::Text { choice: 0, delta: " word".into() }, i);
            apply(&mut msg, StreamEvent::Unknown { event: "x".into(), raw: serde_json::Value::Null }, i);
        }
        assert_eq!(msg.text().len(), 500_000);
        assert!(msg.frames_bytes <= RAW_FRAME_BUDGET);
        assert_eq!(msg.frames_bytes, msg.frames.iter().map(|f| f.data.len()).sum::<usize>());
        assert!(msg.frames_dropped > 90_000);
        assert!(msg.unknown.len() <= 64);
    }
}
