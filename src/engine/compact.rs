//! Compaction and the context count. A compaction is an ordinary reply of the conversation's own
//! model to "summarise the conversation so far", marked with [`Compaction`]; once it finished
//! well, every request starts at it: the summary goes as a user message in place of the turns
//! before it, which stay in the conversation (and the store) untouched. [`in_context`] is that
//! cut, made by the request builder for every driver alike.
//!
//! Token counts here are estimates (four bytes a token) for what the provider has not counted
//! yet: a draft, an attachment, the messages since the last reply with usage.

use super::attachment::{AttachKind, Attachment};
use super::message::{Message, MessageStatus, Role};
use super::usage::UsageView;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;

pub use crate::config::DEFAULT_COMPACT_PROMPT as DEFAULT_PROMPT;

/// What the summary is sent as, before its text (a user message: every server takes one first).
pub const SUMMARY_HEADER: &str = "[Summary of the earlier part of this conversation, which was compacted]\n\n";

/// Marks a reply as the summary of the turns before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compaction {
    /// User turns the summary replaces (since the previous compaction).
    pub turns: usize,
    /// Tokens the context held before, as the provider counted them where it did.
    pub tokens_before: u64,
    /// Started by `auto_compact` rather than asked for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub auto: bool,
    /// The user's words for what to keep (`/compact keep the API design`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Whether `m` is a compaction that took effect: it finished with its whole summary. A failed,
/// cancelled or cut summary replaces nothing.
#[must_use]
pub fn effective(m: &Message) -> bool {
    // Asked of every message of the history on each recount: the cheap test first.
    if m.compaction.is_none() || m.status != MessageStatus::Complete {
        return false;
    }
    let main = m.main();
    !main.content.trim().is_empty()
        && main.tool_calls.is_empty()
        && !matches!(main.finish_reason.as_deref(), Some("length" | "content_filter"))
}

/// Index of the last compaction that took effect.
#[must_use]
pub fn last_effective<M: Borrow<Message>>(messages: &[M]) -> Option<usize> {
    messages.iter().rposition(|m| effective(m.borrow()))
}

/// What a request carries of `messages`: all of them, or from the last compaction on, with the
/// summary as a user message in place of everything before it. The summary (when there is one)
/// and the messages after it: nothing else is copied.
#[must_use]
pub fn in_context<M: Borrow<Message>>(messages: &[M]) -> (Option<Message>, &[M]) {
    match last_effective(messages) {
        Some(at) => (Some(summary_as_user(messages[at].borrow())), &messages[at + 1..]),
        None => (None, messages),
    }
}

/// The summary reply as the user message a request sends.
fn summary_as_user(m: &Message) -> Message {
    let mut u = Message::user(&format!("{SUMMARY_HEADER}{}", m.text()));
    u.id = m.id;
    u
}

/// The last message of the summary request: the prompt, with the user's instructions.
#[must_use]
pub fn ask(prompt: &str, instructions: Option<&str>) -> Message {
    match instructions.map(str::trim).filter(|i| !i.is_empty()) {
        Some(i) => Message::user(&format!("{prompt}\n\nThe user asks for this in particular: {i}")),
        None => Message::user(prompt),
    }
}

/// The messages of the summary request: the conversation as a request carries it, then `ask`.
/// Borrowed: compacting a long conversation copies none of it.
#[must_use]
pub fn request<'a, M: Borrow<Message>>(messages: &'a [M], ask: &'a Message) -> Vec<&'a Message> {
    messages.iter().map(Borrow::borrow).chain([ask]).collect()
}

/// User turns in context: those after the last compaction (the summary counts for none).
#[must_use]
pub fn turns<M: Borrow<Message>>(messages: &[M]) -> usize {
    let from = last_effective(messages).map_or(0, |i| i + 1);
    messages[from..].iter().filter(|m| Borrow::<Message>::borrow(*m).role() == Role::User).count()
}

/// Tokens of `text`, estimated (about four bytes a token in English and code).
#[must_use]
pub fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Tokens an attachment adds, estimated: text by its bytes, an image at a typical tile cost, a
/// document by its bytes (their text is usually far less than their bytes), a URL little.
#[must_use]
pub fn attachment_tokens(a: &Attachment) -> u64 {
    match a.kind {
        AttachKind::Text => a.size.div_ceil(4),
        AttachKind::Image => 1_000,
        AttachKind::File => a.size.div_ceil(16),
        AttachKind::Url => 100,
    }
}

/// Tokens a message adds to a request, estimated: its text, reasoning, tool calls, attachments.
#[must_use]
pub fn message_tokens(m: &Message) -> u64 {
    let main = m.main();
    let calls: u64 = main.tool_calls.iter().map(|c| estimate(&c.name) + estimate(&c.arguments) + 8).sum();
    let files: u64 = m.all_attachments().map(attachment_tokens).sum();
    estimate(&main.content) + estimate(&main.refusal) + calls + files + 4
}

/// Tokens the provider counted for the context after reply `m`: its prompt plus its completion.
#[must_use]
pub fn counted(m: &Message) -> Option<u64> {
    let u = UsageView::from_raw(m.usage.as_ref()?);
    u.prompt.zip(u.completion).map(|(p, c)| p + c).or(u.total)
}

/// Tokens the next request carries of `messages` (the draft not included): the last reply's
/// count as the provider made it, plus estimates for what came after it; estimates alone when
/// no reply since the last compaction has usage. After a compaction the summary's own length
/// (its completion tokens) stands for everything before it.
#[must_use]
pub fn context_tokens<M: Borrow<Message>>(messages: &[M], system: Option<&str>) -> u64 {
    let from = last_effective(messages).unwrap_or(0);
    let tail: Vec<&Message> = messages[from..].iter().map(Borrow::borrow).collect();
    let base = tail.iter().rposition(|m| m.role() == Role::Assistant && !m.is_live() && counted(m).is_some());
    let summary = |m: &Message| {
        m.usage.as_ref().map(UsageView::from_raw).and_then(|u| u.completion).unwrap_or_else(|| message_tokens(m))
    };
    match base {
        Some(0) if tail[0].compaction.is_some() => {
            summary(tail[0]) + estimate(system.unwrap_or_default()) + rest(&tail[1..])
        }
        Some(i) => counted(tail[i]).unwrap_or(0) + rest(&tail[i + 1..]),
        None => estimate(system.unwrap_or_default()) + rest(&tail),
    }
}

fn rest(messages: &[&Message]) -> u64 {
    messages.iter().filter(|m| !m.is_live()).map(|m| message_tokens(m)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(text: &str, usage: Option<serde_json::Value>) -> Message {
        let mut m = Message::with_text(Role::Assistant, text);
        m.main_mut().finish_reason = Some("stop".into());
        m.usage = usage;
        m
    }

    fn summary(text: &str, status: MessageStatus) -> Message {
        let mut m = reply(text, Some(json!({"prompt_tokens": 900, "completion_tokens": 40})));
        m.status = status;
        m.compaction = Some(Compaction { turns: 2, tokens_before: 940, ..Compaction::default() });
        m
    }

    #[test]
    fn a_finished_summary_replaces_what_came_before_it() {
        let mut msgs = vec![Message::user("q1"), reply("a1", None), Message::user("q2"), reply("a2", None)];
        msgs.push(summary("they talked", MessageStatus::Complete));
        msgs.push(Message::user("q3"));
        let (summary, rest) = in_context(&msgs);
        let sent: Vec<&Message> = summary.iter().chain(rest).collect();
        let texts: Vec<&str> = sent.iter().map(|m| m.text()).collect();
        assert_eq!(texts, [format!("{SUMMARY_HEADER}they talked").as_str(), "q3"]);
        assert_eq!(sent[0].role(), Role::User);
        assert_eq!(turns(&msgs), 1);
    }

    #[test]
    fn a_failed_cancelled_or_cut_summary_replaces_nothing() {
        for status in [MessageStatus::Failed, MessageStatus::Cancelled, MessageStatus::Interrupted] {
            let msgs = vec![Message::user("q1"), summary("half", status), Message::user("q2")];
            assert!(matches!(in_context(&msgs), (None, all) if all.len() == 3), "{status:?}");
        }
        let mut cut = summary("half", MessageStatus::Complete);
        cut.main_mut().finish_reason = Some("length".into());
        let msgs = vec![Message::user("q1"), cut, Message::user("q2")];
        assert!(matches!(in_context(&msgs), (None, all) if all.len() == 3));
        assert_eq!(turns(&msgs), 2);
    }

    #[test]
    fn the_count_starts_from_the_last_usage_and_estimates_the_rest() {
        let msgs = vec![
            Message::user("q1"),
            reply("a1", Some(json!({"prompt_tokens": 100, "completion_tokens": 20}))),
            Message::user("12345678"),
        ];
        assert_eq!(context_tokens(&msgs, None), 120 + 2 + 4);
        // After a compaction, the summary's length stands for the turns it replaced.
        let msgs = vec![Message::user("q1"), summary("s", MessageStatus::Complete), Message::user("1234")];
        assert_eq!(context_tokens(&msgs, None), 40 + 1 + 4);
        // No usage anywhere: estimates alone.
        let msgs = vec![Message::user("12345678"), reply("1234", None)];
        assert_eq!(context_tokens(&msgs, Some("1234")), 1 + (2 + 4) + (1 + 4));
    }

    #[test]
    fn the_request_ends_with_the_prompt_and_the_users_instructions() {
        let msgs = vec![Message::user("q1"), reply("a1", None)];
        let with = ask("Summarise.", Some(" keep the names "));
        let r = request(&msgs, &with);
        assert_eq!(r.len(), 3);
        assert_eq!(r[2].text(), "Summarise.\n\nThe user asks for this in particular: keep the names");
        let plain = ask("Summarise.", Some("  "));
        assert_eq!(request(&msgs, &plain).last().map(|m| m.text()), Some("Summarise."));
    }
}
