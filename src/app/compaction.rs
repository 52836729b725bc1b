//! The chat's side of compaction and the context meter: `/compact`, the automatic compaction
//! that runs before a prompt that would pass `auto_compact` (announced, Esc cancels it), the
//! warning before a prompt that cannot fit the window, and the folding of compacted turns
//! behind their card. The summary is an ordinary reply through `start_reply`'s path; what a
//! request carries after it is the request builder's (`engine::compact`).

use super::effect::Effect;
use super::state::{Live, SentDraft, State};
use super::transcript::{Cell, NoticeKind};
use crate::engine::compact::{self, Compaction};
use crate::engine::compact_fit;
use crate::engine::message::Message;
use std::collections::HashMap;
use std::sync::Arc;

/// The context the next request carries, recounted when the transcript changes (never per frame).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextCount {
    /// Tokens of the conversation as the next request carries it (the draft not included).
    pub tokens: u64,
    /// (cell index, id) of each compaction that took effect, in order: the cells between one
    /// and the one before are folded behind it until its card is opened.
    pub marks: Vec<(usize, u64)>,
    pub memo: TokenMemo,
}

/// Token estimates of the chat's messages, so a recount (every Enter) estimates only the
/// messages that changed: keyed by the message's id and where it is held, checked by the mark
/// of its last change (`Cells::changed`), its revision and its length. A cache, not state: two
/// counts are equal whatever their caches hold.
#[derive(Debug, Clone, Default)]
pub struct TokenMemo(HashMap<(u64, usize), ([u64; 3], u64)>);

impl PartialEq for TokenMemo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for TokenMemo {}

impl TokenMemo {
    /// The estimate of `m`, whose last change had the mark `changed`.
    fn tokens(&mut self, m: &Message, changed: u64) -> u64 {
        let key = (m.id, std::ptr::from_ref(m) as usize);
        let check = [changed, m.revision, m.main().content.len() as u64];
        match self.0.get(&key) {
            Some((c, t)) if *c == check => *t,
            _ => {
                let t = compact::message_tokens(m);
                self.0.insert(key, (check, t));
                t
            }
        }
    }
}

/// A prompt held while the automatic compaction before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub text: String,
    pub draft: SentDraft,
    pub attachments: Vec<crate::engine::attachment::Attachment>,
}

impl State {
    /// The model's context window, as configured (or catalogued).
    #[must_use]
    pub fn context_window(&self) -> Option<u64> {
        self.cfg.model_facts(&self.target.model).and_then(|f| f.context_window).filter(|w| *w > 0)
    }

    /// Tokens the next request would carry with the composer's draft and chips, and the window.
    /// Costs the draft's length, never the history's.
    #[must_use]
    pub fn context_meter(&self) -> Option<(u64, u64)> {
        // Looked up each time: `/model` changes it without changing the transcript.
        let window = self.context_window()?;
        Some((self.context.tokens + self.draft_tokens(), window))
    }

    /// The draft's and the chips' tokens, estimated.
    fn draft_tokens(&self) -> u64 {
        let text: u64 = self.composer.area.lines().iter().map(|l| compact::estimate(l) + 1).sum();
        // A big paste is a chip in the text area: its bytes are held beside it, counted as a
        // text attachment's are.
        let pasted = self.composer.pasted().map_or(0, |(_, bytes)| compact::text_bytes_tokens(bytes as u64));
        let files: u64 = self.attachments.iter().map(compact::attachment_tokens).sum();
        if self.composer.is_empty() && self.attachments.is_empty() { 0 } else { text + pasted + files + 4 }
    }

    /// Recounts the context and the folds: after a reply ends or the transcript changes shape.
    pub(crate) fn recount_context(&mut self) {
        // The tool definitions go with every request: counted until a reply's usage holds them.
        let tools = compact::definitions_tokens(&self.request_options().tools);
        let msgs = self.transcript.request_refs();
        let (memo, cells) = (&mut self.context.memo, &self.transcript.cells);
        if memo.0.len() > 2 * cells.len() + 1024 {
            // Messages dropped or replaced: their estimates go.
            memo.0.clear();
        }
        let mut tokens = |m: &Message| memo.tokens(m, cells.changed(m.id));
        self.context.tokens = compact::context_tokens_by(&msgs, self.settings.system.as_deref(), tools, &mut tokens);
        self.context.marks = self
            .transcript
            .cells
            .iter()
            .enumerate()
            .filter(|(_, c)| c.message().is_some_and(compact::effective))
            .map(|(i, c)| (i, c.id()))
            .collect();
    }

    /// Whether cell `index` is folded behind a compaction card that is closed.
    #[must_use]
    pub fn folded(&self, index: usize) -> bool {
        let marks = &self.context.marks;
        let after = marks.partition_point(|(i, _)| *i <= index);
        let Some(&(at, id)) = marks.get(after) else { return false };
        // A stale mark (the transcript changed shape since the count) folds nothing.
        self.transcript.cells.get(at).map(Cell::id) == Some(id) && !self.tools.open.contains(&id)
    }

    /// `/compact`, or the automatic one: summarise the earlier turns with the conversation's
    /// model, as a reply marked as the summary.
    pub(crate) fn compact(&mut self, instructions: Option<String>, auto: bool, fx: &mut Vec<Effect>) {
        if self.live.is_some() || self.tools.busy() {
            self.flash("a reply is still streaming: Esc cancels it");
            return;
        }
        if self.compare.active.is_some() {
            self.flash("compaction works on the chat, not on a compare");
            return;
        }
        let messages = self.transcript.request_refs();
        let turns = compact::turns(&messages);
        if turns == 0 {
            self.flash("nothing to compact yet");
            return;
        }
        let ask = compact::ask(self.cfg.compact_prompt(), instructions.as_deref());
        let mut opts = self.request_options();
        // A summary is text: offering tools would invite a call instead.
        opts.tools.clear();
        let window = self.context_window();
        let budget = compact_fit::budget(self.cfg.compact_max_tokens, window);
        let fitted = compact_fit::summary_request(&messages, &ask, opts.system.as_deref(), window, budget);
        opts.max_tokens = Some(fitted.max_tokens);
        let body = crate::engine::request::build_body(self.target.api, &fitted.messages, &opts);
        if let Some(n) = fitted.trimmed.notice() {
            self.transcript.push_notice(NoticeKind::Info, n);
        }
        let mut m = Message::assistant_pending();
        m.model = Some(self.target.model.clone());
        m.provider = Some(self.target.provider.clone());
        m.api = Some(self.target.api.name().to_owned());
        m.base_url.clone_from(&self.target.base_url);
        m.compaction = Some(Compaction { turns, tokens_before: self.context.tokens, auto, instructions });
        let id = self.transcript.push_message(m);
        self.live = Some(Live { id, started_ms: None, draft: None });
        self.selected = None;
        self.scroll_bottom();
        fx.push(Effect::StartRequest { id, api: self.target.api, body: Arc::new(body.into()) });
    }

    /// Before a prompt goes out: compacts first when it would pass `auto_compact` (holding the
    /// prompt until the summary is in), or asks for a second Enter when it cannot fit at all.
    /// Returns true when the prompt was held or stopped.
    pub(crate) fn before_send(&mut self, text: &str, fx: &mut Vec<Effect>) -> bool {
        let Some((next, window)) = self.context_meter() else { return false };
        let own = self.draft_tokens();
        #[allow(clippy::cast_precision_loss)]
        let share = next as f64 / window as f64;
        // Whether there is anything to compact walks the history: asked only past a threshold.
        let past_auto = self.cfg.auto_compact_at().is_some_and(|at| !self.auto_declined && share > at);
        if past_auto && own < window && self.can_compact() {
            let pct = (share * 100.0).round();
            self.transcript.push_notice(
                NoticeKind::Info,
                format!(
                    "the next request would fill {pct}% of the {} token window: compacting the earlier turns \
                     first (Esc cancels; auto_compact in config.toml)",
                    crate::text::fmt::thousands(window)
                ),
            );
            let draft =
                SentDraft { composer: self.composer.draft(), pasted_paths: std::mem::take(&mut self.pasted_paths) };
            self.composer.remember(text);
            self.held = Some(Held { text: text.to_owned(), draft, attachments: std::mem::take(&mut self.attachments) });
            self.composer.clear();
            self.compact(None, true, fx);
            return true;
        }
        if next > window && self.overflow_ok.as_deref() != Some(text) {
            self.overflow_ok = Some(text.to_owned());
            let hint = if self.can_compact() { ", or /compact first" } else { "" };
            self.transcript.push_notice(
                NoticeKind::Error,
                format!(
                    "this prompt would make the request about {} tokens, over the model's {} token window: \
                     Enter sends it anyway{hint}",
                    crate::text::fmt::thousands(next),
                    crate::text::fmt::thousands(window)
                ),
            );
            self.scroll_bottom();
            return true;
        }
        false
    }

    /// Whether `/compact` has turns to summarise here (the chat's, not a compare's).
    fn can_compact(&self) -> bool {
        self.compare.active.is_none() && compact::turns(&self.transcript.request_refs()) > 0
    }

    /// A compaction reply ended (any way): sends the prompt it held when it took effect, or
    /// gives the prompt back when it did not.
    pub(crate) fn after_compaction(&mut self, id: u64, fx: &mut Vec<Effect>) {
        let Some(m) = self.transcript.message(id).filter(|m| m.compaction.is_some()) else { return };
        let done = compact::effective(m);
        let cut = compact::cut(m);
        let came_back = m.status == crate::engine::MessageStatus::Complete;
        self.recount();
        if cut {
            self.transcript.push_notice(
                NoticeKind::Info,
                "the summary was cut at its token budget and is kept as it is (compact_max_tokens in config.toml \
                 sets the budget; /compact again summarises anew)",
            );
        } else if !done && came_back {
            self.transcript.push_notice(NoticeKind::Error, "the summary came back empty: nothing was replaced");
        }
        let Some(held) = self.held.take() else { return };
        if done {
            self.auto_declined = false;
            let mut user = Message::user(&held.text);
            user.attachments = held.attachments;
            self.transcript.push_message(user);
            self.start_reply(Some(held.draft), fx);
        } else {
            // Esc, or a failure: the prompt comes back, and the next Enter sends it as it is.
            self.auto_declined = true;
            if !self.composer.is_empty() || !self.attachments.is_empty() {
                // Never over what was typed meanwhile; the prompt is in the composer's history.
                let up = self.keymap.hint(super::keymap::Action::HistoryPrev);
                self.flash(format!(
                    "not compacted and your prompt was not sent: {up} on an empty composer brings it back"
                ));
                return;
            }
            self.composer.restore(held.draft.composer);
            self.attachments = held.attachments;
            self.pasted_paths = held.draft.pasted_paths;
            self.pasted_paths.resize(self.attachments.len(), None);
            self.flash("not compacted: your prompt is back in the composer; Enter sends it as it is");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::client::WireEvent;
    use crate::api::event::StreamEvent;
    use crate::app::Msg;
    use crate::config::ModelFacts;

    fn state_with_window(window: u64) -> State {
        let mut s = crate::app::test_state();
        s.cfg.models.insert("demo".into(), ModelFacts { context_window: Some(window), ..ModelFacts::default() });
        s.recount();
        s
    }

    fn finish(s: &mut State, text: &str, usage: serde_json::Value) -> Vec<Effect> {
        finish_as(s, text, usage, "stop")
    }

    fn finish_as(s: &mut State, text: &str, usage: serde_json::Value, reason: &str) -> Vec<Effect> {
        let id = s.live.as_ref().map(|l| l.id).unwrap_or_default();
        let events = vec![
            StreamEvent::Text { choice: 0, delta: text.into() },
            StreamEvent::Usage(usage),
            StreamEvent::Finish { choice: 0, reason: reason.into() },
        ];
        let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 1 };
        let mut fx = s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 1 });
        fx.extend(s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 2 }), now_ms: 2 }));
        fx
    }

    #[test]
    fn the_recount_estimates_again_only_what_changed_and_always_agrees_with_a_fresh_count() {
        use crate::engine::message::Role;
        let mut s = crate::app::test_state();
        let ids: Vec<u64> = (0..50)
            .map(|i| {
                let role = if i % 2 == 0 { Role::User } else { Role::Assistant };
                s.transcript.push_message(Message::with_text(role, &format!("message number {i} says something")))
            })
            .collect();
        let fresh = |s: &State| {
            let tools = compact::definitions_tokens(&s.request_options().tools);
            compact::context_tokens_with(&s.transcript.request_refs(), s.settings.system.as_deref(), tools)
        };
        s.recount_context();
        assert_eq!(s.context.tokens, fresh(&s));
        let held = s.context.memo.0.len();
        assert!(held >= 50, "every message's estimate kept ({held})");
        // A message changed in place (same place, same revision) is estimated again.
        if let Some(m) = s.transcript.message_mut(ids[10]) {
            m.main_mut().content.push_str(&" and a great deal more".repeat(40));
        }
        s.recount_context();
        assert_eq!(s.context.tokens, fresh(&s));
        // So is one whose text keeps its length, and one replaced by another at its index.
        if let Some(m) = s.transcript.message_mut(ids[12]) {
            m.main_mut().content = "MESSAGE NUMBER 12 SAYS SOMETHING".into();
        }
        s.transcript.cells[14] = Cell::Message(Arc::new(Message::with_text(Role::User, &"x".repeat(900))));
        s.recount_context();
        assert_eq!(s.context.tokens, fresh(&s));
        assert!(s.context.memo.0.len() <= 2 * s.transcript.cells.len() + 1024);
    }

    fn send(s: &mut State, text: &str) -> Vec<Effect> {
        let mut fx = Vec::new();
        s.submit(text.to_owned(), &mut fx);
        fx
    }

    fn bodies(fx: &[Effect]) -> Vec<serde_json::Value> {
        fx.iter()
            .filter_map(|e| if let Effect::StartRequest { body, .. } = e { Some((**body).clone()) } else { None })
            .collect()
    }

    #[test]
    fn compact_sends_the_summary_in_place_of_the_turns() {
        let mut s = state_with_window(100_000);
        for i in 0..3 {
            send(&mut s, &format!("question {i}"));
            finish(&mut s, &format!("answer {i}"), serde_json::json!({"prompt_tokens": 50, "completion_tokens": 10}));
        }
        let fx = send(&mut s, "/compact keep the numbers");
        let body = &bodies(&fx)[0];
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(msgs.len(), 7, "the six turns and the prompt: {body}");
        assert!(msgs[6]["content"].as_str().is_some_and(|c| c.contains("keep the numbers")));
        assert!(body.get("tools").is_none());
        finish(&mut s, "they asked three questions", serde_json::json!({"prompt_tokens": 70, "completion_tokens": 6}));
        assert_eq!(s.context.marks.len(), 1);
        assert!(s.folded(0) && !s.folded(s.context.marks[0].0));
        assert_eq!(s.context.tokens, 6, "the summary stands for the turns");
        let fx = send(&mut s, "next");
        let msgs = bodies(&fx)[0]["messages"].as_array().cloned().unwrap_or_default();
        let texts: Vec<&str> = msgs.iter().filter_map(|m| m["content"].as_str()).collect();
        assert_eq!(texts, [format!("{}they asked three questions", compact::SUMMARY_HEADER).as_str(), "next"]);
        // Opening the card unfolds the originals.
        let card = s.context.marks[0].1;
        s.selected = Some(card);
        s.toggle_tool_output();
        assert!(!s.folded(0));
    }

    #[test]
    fn regenerating_a_summary_asks_for_a_summary_again() {
        let mut s = state_with_window(100_000);
        send(&mut s, "q");
        finish(&mut s, "a", serde_json::json!({"prompt_tokens": 5, "completion_tokens": 1}));
        send(&mut s, "/compact the names");
        finish(&mut s, "first summary", serde_json::json!({"prompt_tokens": 9, "completion_tokens": 2}));
        let mut fx = Vec::new();
        s.regenerate(&mut fx);
        let body = bodies(&fx)[0].to_string();
        assert!(body.contains("Summarise the conversation") && body.contains("the names"), "{body}");
        assert!(!body.contains("first summary"), "the old summary is a kept branch, not context");
        let live = s.live.as_ref().and_then(|l| s.transcript.message(l.id));
        assert!(live.is_some_and(|m| m.compaction.is_some()));
    }

    #[test]
    fn passing_auto_compact_compacts_first_and_esc_gives_the_prompt_back() {
        let mut s = state_with_window(1_000);
        send(&mut s, "q");
        finish(&mut s, "a", serde_json::json!({"prompt_tokens": 800, "completion_tokens": 90}));
        s.composer.set_text("next one");
        let fx = send(&mut s, "next one");
        assert!(s.held.is_some(), "the prompt waits for the summary");
        let body = &bodies(&fx)[0];
        assert!(body.to_string().contains("Summarise the conversation"), "{body}");
        assert!(s.transcript.cells.iter().any(|c| matches!(c, Cell::Notice(n) if n.text.contains("Esc cancels"))));
        // Esc: the prompt is back, and Enter then sends it as it is.
        let mut fx = Vec::new();
        s.cancel_live(&mut fx);
        assert_eq!(s.composer.text(), "next one");
        let fx = send(&mut s, "next one");
        let body = &bodies(&fx)[0];
        assert!(!body.to_string().contains("Summarise the conversation"));
    }

    #[test]
    fn the_held_prompt_goes_after_the_summary() {
        let mut s = state_with_window(1_000);
        send(&mut s, "q");
        finish(&mut s, "a", serde_json::json!({"prompt_tokens": 800, "completion_tokens": 90}));
        send(&mut s, "next one");
        let fx = finish(&mut s, "summary", serde_json::json!({"prompt_tokens": 900, "completion_tokens": 5}));
        let msgs = bodies(&fx)[0]["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[1]["content"], "next one");
    }

    #[test]
    fn the_summary_request_fits_the_window_with_its_own_budget_and_a_cut_summary_is_kept() {
        let mut s = state_with_window(4_096);
        s.settings.max_tokens = Some(40);
        let paste = "line 12: the quick brown fox 48213 jumps over the lazy dog\n".repeat(60);
        for i in 0..3 {
            send(&mut s, &format!("{paste}question {i}"));
            finish(
                &mut s,
                &format!("answer {i}"),
                serde_json::json!({"prompt_tokens": 1_300 * (i + 1), "completion_tokens": 10}),
            );
        }
        let fx = send(&mut s, "/compact");
        let body = &bodies(&fx)[0];
        assert_eq!(body["max_tokens"], 1_024, "the summary's own budget, not the turn's 40");
        let sent: u64 = body["messages"]
            .as_array()
            .map(|m| m.iter().map(|m| compact::estimate(m["content"].as_str().unwrap_or_default()) + 4).sum())
            .unwrap_or_default();
        assert!(sent + 1_024 <= 4_096, "the request fits: {sent} + 1,024");
        assert!(body.to_string().contains("cut to fit the summary request"), "{body}");
        assert!(
            s.transcript
                .cells
                .iter()
                .any(|c| matches!(c, Cell::Notice(n) if n.text.contains("to fit the summary request")))
        );
        finish_as(
            &mut s,
            "they asked three ques",
            serde_json::json!({"prompt_tokens": 2_900, "completion_tokens": 1_024}),
            "length",
        );
        assert_eq!(s.context.marks.len(), 1, "the cut summary took effect");
        assert_eq!(s.context.tokens, 1_024, "counted as what it is");
        assert!(
            s.transcript
                .cells
                .iter()
                .any(|c| matches!(c, Cell::Notice(n) if n.text.contains("cut at its token budget")))
        );
        let fx = send(&mut s, "next");
        let msgs = bodies(&fx)[0]["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(msgs.len(), 2, "the summary and the prompt");
        assert_eq!(bodies(&fx)[0]["max_tokens"], 40, "the turn keeps its own");
    }

    #[test]
    fn an_overflow_error_suggests_slash_commands_on_the_chat_screen() {
        let mut s = state_with_window(100_000);
        send(&mut s, "q");
        let id = s.live.as_ref().map(|l| l.id).unwrap_or_default();
        // The chat screen's runner asks for its wording (`Face::Screen`).
        let message = crate::api::errors::what_to_do(
            crate::api::errors::Problem::ContextOverflow,
            "",
            &crate::api::endpoint::KeySource::Unknown,
            true,
            crate::api::errors::Face::Screen,
        );
        let err =
            crate::engine::ErrorInfo { status: Some(400), message, kind: "http".into(), body: serde_json::Value::Null };
        s.apply(Msg::Wire { id, event: Box::new(WireEvent::Failed(err)), now_ms: 1 });
        let m = s.transcript.message(id).and_then(|m| m.error.clone()).map(|e| e.message).unwrap_or_default();
        assert!(m.contains("(/compact)") && m.contains("(/new)") && !m.contains("--"), "{m}");
    }

    #[test]
    fn the_meter_counts_the_tool_definitions_until_a_reply_has_usage() {
        let mut s = state_with_window(100_000);
        let bare = s.context.tokens;
        s.tools.set = crate::app::tools::ToolSet(std::sync::Arc::new(crate::tools::Registry::builtins()));
        s.tools.flags.mode = crate::engine::tool_loop::ToolMode::Auto;
        s.recount();
        let defs = compact::definitions_tokens(&s.request_options().tools);
        assert!(defs > 300, "six built-in tools: {defs}");
        assert_eq!(s.context.tokens, bare + defs, "the definitions go with every request");
        send(&mut s, "q");
        finish(&mut s, "a", serde_json::json!({"prompt_tokens": 700, "completion_tokens": 5}));
        assert_eq!(s.context.tokens, 705, "once counted by the provider, not twice");
    }

    #[test]
    fn the_meter_counts_the_draft_and_its_pasted_chips() {
        let mut s = state_with_window(100_000);
        assert_eq!(s.context_meter(), Some((0, 100_000)));
        s.composer.set_text("12345678");
        let typed = s.context_meter().map(|m| m.0).unwrap_or_default();
        assert_eq!(typed, 8 + 1 + 4);
        s.apply(Msg::Paste("word\n".repeat(4_000)));
        let pasted = s.context_meter().map(|m| m.0).unwrap_or_default();
        assert!(pasted >= typed + 5_000, "a chip counts its 20,000 bytes: {pasted}");
    }

    #[test]
    fn a_prompt_over_the_window_asks_for_a_second_enter() {
        let mut s = state_with_window(100);
        s.cfg.auto_compact = Some(crate::config::AutoCompact::On(false));
        let big = "word ".repeat(200);
        s.composer.set_text(&big);
        assert!(bodies(&send(&mut s, &big)).is_empty(), "held back with a notice");
        assert!(
            s.transcript.cells.iter().any(|c| matches!(c, Cell::Notice(n) if n.text.contains("Enter sends it anyway")))
        );
        assert_eq!(bodies(&send(&mut s, &big)).len(), 1, "the second Enter sends it");
    }
}
