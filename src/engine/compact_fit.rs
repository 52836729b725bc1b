//! The summary request, made to fit the window. Compaction is what a user reaches for when the
//! conversation no longer fits, so its own request must: it gets its own output budget (never
//! the turn's `--max-tokens`), and before it goes its estimate (system prompt, messages, the
//! ask, the budget) is held against the window and the request trimmed until it fits — the
//! oldest tool outputs cut first, then the oldest long texts and attachments, and as the last
//! resort the oldest turns left out. Only the request is trimmed: the conversation and the
//! store keep every message as it was.

use super::compact::{self, estimate, message_tokens};
use super::message::{Message, Role};
use std::borrow::{Borrow, Cow};
use std::fmt::Write as _;

/// The largest summary asked for when `compact_max_tokens` is not set.
pub const DEFAULT_BUDGET: u64 = 1_024;
/// What a cut tool output keeps of its beginning, in bytes.
const OUTPUT_KEEP: usize = 300;
/// What a cut long text keeps of its beginning, in bytes; shorter texts are left whole.
const TEXT_KEEP: usize = 800;
/// The estimate errs high, but not on every text (German ran 0.9× the real count): the request
/// is fitted into this share of the window.
const FILL: u64 = 90;

/// The summary's output budget: `compact_max_tokens` when set, else a quarter of the window up
/// to [`DEFAULT_BUDGET`] (a summary of a small window must leave room for what it summarises).
#[must_use]
pub fn budget(configured: Option<u64>, window: Option<u64>) -> u64 {
    configured.filter(|n| *n > 0).unwrap_or_else(|| window.map_or(DEFAULT_BUDGET, |w| (w / 4).clamp(1, DEFAULT_BUDGET)))
}

/// What fitting did to the summary request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trimmed {
    /// Tool outputs cut to their beginning.
    pub outputs: usize,
    /// Long texts cut to their beginning (attachments left out with them).
    pub texts: usize,
    /// The oldest turns left out of the request altogether.
    pub turns: usize,
    /// Failed turns left out (never re-sent).
    pub failed: usize,
}

impl Trimmed {
    /// One line for the user when fitting changed what the summary sees; `None` when not.
    #[must_use]
    pub fn notice(&self) -> Option<String> {
        let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
        let mut parts = Vec::new();
        if self.outputs > 0 {
            parts.push(format!("cut {}", plural(self.outputs, "tool output")));
        }
        if self.texts > 0 {
            parts.push(format!("cut {}", plural(self.texts, "long message")));
        }
        if self.turns > 0 {
            parts.push(format!("left the oldest {} out", plural(self.turns, "turn")));
        }
        if parts.is_empty() {
            return None;
        }
        let what = parts.join(", ");
        Some(format!(
            "to fit the summary request into the model's window, palaver {what}; the summary may miss them \
             (they stay in the conversation and its history)"
        ))
    }
}

/// The summary request: its messages (the conversation as a request carries it, then the
/// ask), its output budget, and what was trimmed to make it fit.
#[derive(Debug, Clone)]
pub struct SummaryRequest<'a> {
    pub messages: Vec<Cow<'a, Message>>,
    pub max_tokens: u64,
    pub trimmed: Trimmed,
}

/// The summary request for `messages` (the conversation) and `ask`, fitted into `window` when
/// it is known. Borrowed: only the messages it cuts are copied.
#[must_use]
pub fn summary_request<'a, M: Borrow<Message>>(
    messages: &'a [M],
    ask: &'a Message,
    system: Option<&str>,
    window: Option<u64>,
    budget: u64,
) -> SummaryRequest<'a> {
    let (sendable, failed) = compact::sendable::<Message>(messages.iter().map(Borrow::borrow));
    let (summary, rest) = compact::in_context(&sendable);
    let mut msgs: Vec<Cow<'a, Message>> = summary.map(Cow::Owned).into_iter().collect();
    msgs.extend(rest.iter().map(|m| Cow::Borrowed(*m)));
    let mut trimmed = Trimmed { failed, ..Trimmed::default() };
    let Some(window) = window else {
        msgs.push(Cow::Borrowed(ask));
        return SummaryRequest { messages: msgs, max_tokens: budget, trimmed };
    };
    let limit = (window * FILL / 100).saturating_sub(budget);
    let fixed = message_tokens(ask) + estimate(system.unwrap_or_default());
    let mut total = fixed + msgs.iter().map(|m| message_tokens(m)).sum::<u64>();
    // Oldest first: the newest turns are what the conversation goes on from.
    for (tool, keep) in [(true, OUTPUT_KEEP), (false, TEXT_KEEP)] {
        for m in &mut msgs {
            if total <= limit {
                break;
            }
            if (m.role() == Role::Tool) == tool && long(m, keep) {
                let before = message_tokens(m);
                cut_text(m.to_mut(), keep);
                total = total - before + message_tokens(m);
                *if tool { &mut trimmed.outputs } else { &mut trimmed.texts } += 1;
            }
        }
    }
    while total > limit && !msgs.is_empty() {
        // A whole turn at a time: the request still starts with a user message.
        let next = msgs.iter().skip(1).position(|m| m.role() == Role::User).map_or(msgs.len(), |p| p + 1);
        total -= msgs.drain(..next).map(|m| message_tokens(&m)).sum::<u64>();
        trimmed.turns += 1;
    }
    msgs.push(Cow::Borrowed(ask));
    // Even the ask alone leaves less than the budget: ask for what room there is.
    let room = (window * FILL / 100).saturating_sub(total).max(1);
    SummaryRequest { messages: msgs, max_tokens: budget.min(room), trimmed }
}

/// Whether `m` has a text longer than twice `keep` bytes or an attachment: something to cut.
fn long(m: &Message, keep: usize) -> bool {
    m.main().content.len() > keep * 2 || !m.attachments.is_empty()
}

/// Cuts `m`'s text to its first `keep` bytes with a marker, and leaves its attachments out.
fn cut_text(m: &mut Message, keep: usize) {
    let len = m.main().content.len();
    let mut note = String::new();
    if len > keep * 2 {
        let mut at = keep;
        while !m.main().content.is_char_boundary(at) {
            at -= 1;
        }
        let content = &mut m.main_mut().content;
        content.truncate(at);
        note = format!("\n[… {} more bytes cut to fit the summary request]", len - at);
    }
    for a in std::mem::take(&mut m.attachments) {
        let _ = write!(note, "\n[attachment {} left out to fit the summary request]", a.name);
    }
    m.main_mut().content.push_str(&note);
    // Responses re-sends an assistant's output items verbatim: without them its (cut) text goes.
    m.items.clear();
}

#[cfg(test)]
#[path = "compact_fit_tests.rs"]
mod tests;
