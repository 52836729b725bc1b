//! Compaction and the context count. A compaction is an ordinary reply of the conversation's own
//! model to "summarise the conversation so far", marked with [`Compaction`]; once it finished
//! well, every request starts at it: the summary goes as a user message in place of the turns
//! before it, which stay in the conversation (and the store) untouched. [`in_context`] is that
//! cut, made by the request builder for every driver alike.
//!
//! Token counts here are estimates for what the provider has not counted yet: a draft, an
//! attachment, the messages since the last reply with usage. They are meant to err high: a
//! small model's vocabulary spends a token on each digit and on most punctuation, so "four
//! bytes a token" undercounted numbers, code and JSON by up to 2.5 times.

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

/// Whether `m` is a compaction that took effect: it finished with a summary. One cut by its
/// token budget (`length`) takes effect too, marked as cut ([`cut`]): on a small window a cut
/// summary is still far better than the turns it stands for, which may not fit at all. A
/// failed, cancelled, filtered or empty summary replaces nothing.
#[must_use]
pub fn effective(m: &Message) -> bool {
    // Asked of every message of the history on each recount: the cheap test first.
    if m.compaction.is_none() || m.status != MessageStatus::Complete {
        return false;
    }
    let main = m.main();
    !main.content.trim().is_empty()
        && main.tool_calls.is_empty()
        && main.finish_reason.as_deref() != Some("content_filter")
}

/// Whether `m` is a summary that took effect though its token budget cut it short.
#[must_use]
pub fn cut(m: &Message) -> bool {
    effective(m) && m.main().finish_reason.as_deref() == Some("length")
}

/// A reply that ended in an error, or with nothing at all: its turn is not part of the context.
#[must_use]
pub fn failed_turn(m: &Message) -> bool {
    let main = m.main();
    let empty = main.content.is_empty() && main.tool_calls.is_empty() && main.refusal.is_empty();
    matches!(m.status, MessageStatus::Failed | MessageStatus::Interrupted) || empty
}

/// What a request may carry of `messages`, and how many failed turns it leaves out: no reply
/// in flight, no summary that did not take effect (its ask was never a turn), and no failed
/// turn — the reply and the prompt it failed on, which the user sends again from the draft or
/// a new run; re-sending a prompt that was over the window would only fail again.
#[must_use]
pub fn sendable<'a, M: Borrow<Message>>(messages: impl IntoIterator<Item = &'a M>) -> (Vec<&'a M>, usize) {
    let mut out: Vec<&M> = Vec::new();
    let mut failed = 0;
    for held in messages {
        let m: &Message = held.borrow();
        if m.is_live() || (m.compaction.is_some() && !effective(m)) {
            continue;
        }
        if m.role() == Role::Assistant && failed_turn(m) {
            if out.last().is_some_and(|p| Borrow::<Message>::borrow(*p).role() == Role::User) {
                out.pop();
                failed += 1;
            }
            continue;
        }
        out.push(held);
    }
    (out, failed)
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

/// User turns in context: those after the last compaction (the summary counts for none).
#[must_use]
pub fn turns<M: Borrow<Message>>(messages: &[M]) -> usize {
    let from = last_effective(messages).map_or(0, |i| i + 1);
    messages[from..].iter().filter(|m| Borrow::<Message>::borrow(*m).role() == Role::User).count()
}

/// Tokens of `text`, estimated high, by kind of character (hundredths of a token each): a
/// letter or a space a little over a quarter, a digit, a newline or a non-ASCII byte most of a
/// token or more, punctuation most of one. Measured against SmolLM2's tokenizer (llama.cpp's
/// `/tokenize`): English and code 1.2-1.35× the real count, numbers and JSON 1.0-1.1×,
/// CJK 1.2×, German 0.9×; four bytes a token was 0.4-0.9× on all but plain English words.
#[must_use]
pub fn estimate(text: &str) -> u64 {
    let hundredths: u64 = text
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' => 30,
            b' ' | b'\t' => 25,
            b'0'..=b'9' | b'\n' => 100,
            0x80.. => 60,
            _ => 80,
        })
        .sum();
    hundredths.div_ceil(100)
}

/// Tokens of a text held as bytes (a paste, a text attachment), estimated without reading it: a
/// third of a token a byte, as numbers and code need. The meter, the paste chip and the
/// composer's title all count a paste this way, so they never disagree.
#[must_use]
pub fn text_bytes_tokens(bytes: u64) -> u64 {
    bytes.div_ceil(3)
}

/// Tokens an attachment adds, estimated: text by its bytes (a third of a token each, as
/// numbers and code need), an image at a typical tile cost, a document by its bytes (their
/// text is usually far less than their bytes), a URL little.
#[must_use]
pub fn attachment_tokens(a: &Attachment) -> u64 {
    match a.kind {
        AttachKind::Text => text_bytes_tokens(a.size),
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
/// (its completion tokens) stands for everything before it. Counts what a request carries
/// ([`sendable`]): never a failed turn, nor a summary that was thrown away.
#[must_use]
pub fn context_tokens<M: Borrow<Message>>(messages: &[M], system: Option<&str>) -> u64 {
    context_tokens_with(messages, system, 0)
}

/// Tokens of the tool definitions a request offers, estimated as the JSON that is sent.
#[must_use]
pub fn definitions_tokens(definitions: &[serde_json::Value]) -> u64 {
    definitions.iter().map(|d| estimate(&d.to_string())).sum()
}

/// [`context_tokens`] for a request that also offers tool definitions of `tools` tokens
/// ([`definitions_tokens`]): added where no reply's count holds them already (before the
/// first reply with usage, and after a compaction).
#[must_use]
pub fn context_tokens_with<M: Borrow<Message>>(messages: &[M], system: Option<&str>, tools: u64) -> u64 {
    context_tokens_by(messages, system, tools, &mut message_tokens)
}

/// [`context_tokens_with`], with each message's estimate from `tokens` (a cache of
/// [`message_tokens`]: a prompt after 10,000 replies without usage estimates only what changed).
pub fn context_tokens_by<M: Borrow<Message>>(
    messages: &[M],
    system: Option<&str>,
    tools: u64,
    tokens: &mut dyn FnMut(&Message) -> u64,
) -> u64 {
    let (sent, _) = sendable::<Message>(messages.iter().map(Borrow::borrow));
    let from = last_effective(&sent).unwrap_or(0);
    let tail = &sent[from..];
    let base = tail.iter().rposition(|m| m.role() == Role::Assistant && !m.is_live() && counted(m).is_some());
    let mut rest = |messages: &[&Message]| -> u64 { messages.iter().filter(|m| !m.is_live()).map(|m| tokens(m)).sum() };
    match base {
        Some(0) if tail[0].compaction.is_some() => {
            let m = tail[0];
            let summary = m.usage.as_ref().map(UsageView::from_raw).and_then(|u| u.completion);
            let summary = summary.unwrap_or_else(|| message_tokens(m));
            summary + estimate(system.unwrap_or_default()) + tools + rest(&tail[1..])
        }
        Some(i) => counted(tail[i]).unwrap_or(0) + rest(&tail[i + 1..]),
        None => estimate(system.unwrap_or_default()) + tools + rest(tail),
    }
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
    fn a_failed_cancelled_or_empty_summary_replaces_nothing_and_a_cut_one_is_kept() {
        for status in [MessageStatus::Failed, MessageStatus::Cancelled, MessageStatus::Interrupted] {
            let msgs = vec![Message::user("q1"), summary("half", status), Message::user("q2")];
            assert!(matches!(in_context(&msgs), (None, all) if all.len() == 3), "{status:?}");
        }
        let empty = summary("  ", MessageStatus::Complete);
        assert!(!effective(&empty));
        let mut cut_short = summary("half of it", MessageStatus::Complete);
        cut_short.main_mut().finish_reason = Some("length".into());
        assert!(effective(&cut_short) && cut(&cut_short));
        assert!(!cut(&summary("whole", MessageStatus::Complete)));
        let msgs = vec![Message::user("q1"), reply("a1", None), cut_short, Message::user("q2")];
        let (s, rest) = in_context(&msgs);
        assert_eq!(s.map(|m| m.text().to_owned()), Some(format!("{SUMMARY_HEADER}half of it")));
        assert_eq!(rest.len(), 1);
        assert_eq!(turns(&msgs), 1);
        // The meter counts the cut summary as what it is: its completion tokens.
        assert_eq!(context_tokens(&msgs, None), 40 + estimate("q2") + 4);
    }

    #[test]
    fn the_meter_never_counts_a_thrown_away_summary_nor_a_failed_turn() {
        let counted = reply("a1", Some(json!({"prompt_tokens": 100, "completion_tokens": 20})));
        let mut thrown = summary("half", MessageStatus::Cancelled);
        thrown.usage = Some(json!({"prompt_tokens": 3_000, "completion_tokens": 400}));
        let mut failed = Message::assistant_pending();
        failed.status = MessageStatus::Failed;
        let huge = "1234567890".repeat(3_000);
        let msgs = vec![Message::user("q1"), counted, thrown, Message::user(&huge), failed, Message::user("1234")];
        assert_eq!(context_tokens(&msgs, None), 120 + estimate("1234") + 4);
        let (sent, failed) = sendable(&msgs);
        assert_eq!(sent.iter().map(|m| m.text()).collect::<Vec<_>>(), ["q1", "a1", "1234"]);
        assert_eq!(failed, 1);
    }

    #[test]
    fn the_estimate_errs_high_on_digits_code_and_json() {
        // Counts llama.cpp's /tokenize gave for SmolLM2-135M's tokenizer.
        let cases = [
            ("line 12: the quick brown fox 48213 jumps over lazy dog\n", 20),
            (r#"{"id": 17, "name": "item 17", "v": 53.38}"#, 26),
            ("fn main() { println!(\"{}\", 1 + 2); }", 16),
            ("The quick brown fox jumps over the lazy dog.", 10),
        ];
        for (text, real) in cases {
            let e = estimate(text);
            assert!(e >= real && e <= real * 2, "{text:?}: estimated {e}, counted {real}");
        }
        assert_eq!(estimate(""), 0);
    }
    #[test]
    fn the_count_starts_from_the_last_usage_and_estimates_the_rest() {
        let msgs = vec![
            Message::user("q1"),
            reply("a1", Some(json!({"prompt_tokens": 100, "completion_tokens": 20}))),
            Message::user("12345678"),
        ];
        assert_eq!(context_tokens(&msgs, None), 120 + 8 + 4);
        // After a compaction, the summary's length stands for the turns it replaced.
        let msgs = vec![Message::user("q1"), summary("s", MessageStatus::Complete), Message::user("1234")];
        assert_eq!(context_tokens(&msgs, None), 40 + 4 + 4);
        // No usage anywhere: estimates alone.
        let msgs = vec![Message::user("12345678"), reply("abcd", None)];
        assert_eq!(context_tokens(&msgs, Some("abcd")), 2 + (8 + 4) + (2 + 4));
    }

    #[test]
    fn the_ask_carries_the_users_instructions() {
        let with = ask("Summarise.", Some(" keep the names "));
        assert_eq!(with.text(), "Summarise.\n\nThe user asks for this in particular: keep the names");
        assert_eq!(ask("Summarise.", Some("  ")).text(), "Summarise.");
    }
}
