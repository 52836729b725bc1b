//! What stopped a reply that did not simply end, said to whoever runs palaver headless: a reply
//! cut by the token limit (exit 0, a notice) or stopped by the provider's content filter (exit 4,
//! DESIGN.md §2). One place for the words, so `-p`, `replay` and `compare -p` say the same.

use super::exit::{EXIT_FILTERED, EXIT_OK};
use crate::engine::message::{Message, MessageStatus};
use crate::text::sanitize::sanitize;

/// Why a complete reply stopped short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// `finish_reason: length`: the token limit cut it.
    Length,
    /// `finish_reason: content_filter`: the provider's filter stopped it.
    ContentFilter,
}

impl Stopped {
    /// What stopped `msg`, if it came to an end by itself short of an answer (a failed or
    /// cancelled reply has its own message).
    #[must_use]
    pub fn of(msg: &Message) -> Option<Self> {
        if msg.error.is_some() || matches!(msg.status, MessageStatus::Cancelled | MessageStatus::Failed) {
            return None;
        }
        match msg.main().finish_reason.as_deref() {
            Some("length") => Some(Self::Length),
            Some("content_filter") => Some(Self::ContentFilter),
            _ => None,
        }
    }

    /// The exit status it leads to.
    #[must_use]
    pub fn exit(self) -> u8 {
        match self {
            Self::Length => EXIT_OK,
            Self::ContentFilter => EXIT_FILTERED,
        }
    }

    /// A few words for a footer or a column.
    #[must_use]
    pub fn short(self) -> &'static str {
        match self {
            Self::Length => "cut by the token limit",
            Self::ContentFilter => "stopped by the content filter",
        }
    }

    /// The notice for stderr (and the result line's `notice`), sanitised: the filtered
    /// categories come from the server.
    #[must_use]
    pub fn notice(self, msg: &Message) -> String {
        match self {
            Self::Length => "the reply was cut by the token limit (finish_reason: length); raise --max-tokens, \
                             or ask for the rest (--continue -p \"go on\")"
                .to_owned(),
            Self::ContentFilter => {
                let cats = filtered_categories(msg);
                let why = if cats.is_empty() { String::new() } else { format!(" ({})", cats.join(", ")) };
                sanitize(&format!("the provider's content filter stopped the reply{why}")).into_owned()
            }
        }
    }
}

/// The categories the reply's merged filter results mark as filtered, with their severity.
fn filtered_categories(msg: &Message) -> Vec<String> {
    crate::engine::safety::filtered_categories(msg.main().content_filter.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::message::ErrorInfo;
    use serde_json::json;

    fn reply(finish: &str) -> Message {
        let mut m = Message::assistant_pending();
        m.status = MessageStatus::Complete;
        m.main_mut().finish_reason = Some(finish.into());
        m
    }

    #[test]
    fn a_cut_reply_exits_0_and_a_filtered_one_4_with_its_categories() {
        assert_eq!(Stopped::of(&reply("stop")), None);
        assert_eq!(Stopped::of(&reply("tool_calls")), None);
        let cut = reply("length");
        assert_eq!(Stopped::of(&cut), Some(Stopped::Length));
        assert_eq!(Stopped::Length.exit(), 0);
        assert!(Stopped::Length.notice(&cut).contains("--max-tokens"));
        let mut filtered = reply("content_filter");
        let results = json!({"hate": {"filtered": false, "severity": "safe"},
            "violence": {"filtered": true, "severity": "high"}, "evil\u{1b}[2J": {"filtered": true}});
        filtered.main_mut().content_filter = serde_json::from_value(results).ok();
        assert_eq!(Stopped::of(&filtered), Some(Stopped::ContentFilter));
        assert_eq!(Stopped::ContentFilter.exit(), 4);
        let n = Stopped::ContentFilter.notice(&filtered);
        assert!(n.starts_with("the provider's content filter stopped the reply ("), "{n}");
        assert!(n.contains("violence: high") && !n.contains("hate") && !n.contains('\u{1b}'), "{n}");
        // A reply that failed is an error, whatever its finish reason said.
        let mut failed = reply("content_filter");
        failed.error = Some(ErrorInfo { status: None, message: "x".into(), kind: "stream".into(), body: json!(null) });
        assert_eq!(Stopped::of(&failed), None);
    }
}
