//! Turns: sending a prompt, regenerating, folding wire events into the reply, cancelling, and
//! what happens when a reply fails (the draft comes back).

use super::effect::Effect;
use super::state::{Focus, Live, SentDraft, State};
use crate::api::client::WireEvent;
use crate::engine::body::Body;
use crate::engine::message::{Message, MessageStatus, Role};
use crate::engine::reducer::{self, Ending};
use crate::engine::turn::apply_wire;
use std::sync::Arc;

impl State {
    /// Sends the composer's text: a slash command, or a prompt.
    pub(crate) fn submit(&mut self, text: String, fx: &mut Vec<Effect>) {
        match super::commands::parse(&text) {
            Some(Ok(cmd)) => {
                self.composer.remember(&text);
                self.composer.clear();
                self.run_command(cmd, fx);
                return;
            }
            Some(Err(e)) => {
                if !self.run_user_command(&text, fx) && !self.run_mcp_prompt(&text, fx) && !self.run_resource(&text, fx)
                {
                    self.flash_error(e);
                }
                return;
            }
            None => {}
        }
        self.end_one_turn();
        self.send_prompt(text, fx);
    }

    /// Sends `text` as the next prompt (`//` keeps a leading slash).
    pub(crate) fn send_prompt(&mut self, text: String, fx: &mut Vec<Effect>) {
        if self.queues_prompt() {
            self.enqueue(text);
            return;
        }
        // Limits and the provider's policy, before anything is sent; the draft and chips stay.
        if !self.attachments.is_empty() {
            let earlier = crate::engine::attachment::history_bytes(&self.transcript.request_refs());
            if let Err(e) =
                crate::engine::attachment::check(&self.attachments, earlier, &self.target.attachments, self.target.api)
            {
                self.flash_error(e);
                return;
            }
        }
        // An image to a model the catalogue says takes none: said before it goes (it still goes).
        if let Some(w) = crate::engine::abilities::unsupported_inputs(&self.cfg, &self.target.model, &self.attachments)
        {
            self.transcript.push_notice(crate::app::transcript::NoticeKind::Info, format!("⚠ {w}"));
        }
        // Compacts first past `auto_compact`; asks again before a prompt that cannot fit.
        if self.editing.is_none() && self.before_send(&text, fx) {
            return;
        }
        // `//text` sends a message that starts with a slash.
        let prompt = if text.starts_with("//") { text[1..].to_owned() } else { text.clone() };
        if let Some(edit) = self.editing.take() {
            if let Some(at) = self.transcript.index_of(edit) {
                self.transcript.branch_off(at);
                self.recount();
            }
        }
        self.composer.remember(&text);
        let draft = SentDraft { composer: self.composer.draft(), pasted_paths: std::mem::take(&mut self.pasted_paths) };
        self.composer.clear();
        let mut user = Message::user(&prompt);
        user.attachments = std::mem::take(&mut self.attachments);
        self.transcript.push_message(user);
        self.start_reply(Some(draft), fx);
    }

    /// Starts a reply to the conversation as it stands.
    pub(crate) fn start_reply(&mut self, draft: Option<SentDraft>, fx: &mut Vec<Effect>) {
        // Shared: a request after 10,000 messages copies none of them on the UI task, and its
        // JSON is built by the request task.
        let body = self.request_body();
        let mut m = Message::assistant_pending();
        m.model = Some(self.turn_model());
        m.provider = Some(self.target.provider.clone());
        m.api = Some(self.target.api.name().to_owned());
        m.base_url.clone_from(&self.target.base_url);
        let id = self.transcript.push_message(m);
        self.live = Some(Live { id, started_ms: None, draft });
        self.focus = Focus::Composer;
        self.selected = None;
        self.scroll_bottom();
        fx.push(Effect::StartRequest { id, api: self.target.api, body });
        self.recount_context();
    }

    /// The body of the next request: the transcript's messages, shared (see `engine::body`).
    fn request_body(&self) -> Arc<Body> {
        let messages = self.transcript.request_shared().into_iter().cloned().collect();
        Arc::new(Body::new(self.target.api, messages, self.with_one_turn(self.request_options())))
    }

    /// Regenerates the last reply; the old one is kept as a branch.
    pub(crate) fn regenerate(&mut self, fx: &mut Vec<Effect>) {
        if self.live.is_some() || self.tools.busy() {
            self.flash("a reply is still streaming: Esc cancels it");
            return;
        }
        let cells = &self.transcript.cells;
        let Some(at) = cells.iter().rposition(|c| c.message().is_some_and(|m| m.role() == Role::Assistant)) else {
            self.flash("there is no reply to regenerate");
            return;
        };
        if cells[at + 1..].iter().any(|c| c.message().is_some()) {
            self.flash("only the last reply can be regenerated");
            return;
        }
        // A summary is asked for again as a summary, with the same words.
        let compaction = cells[at].message().and_then(|m| m.compaction.clone());
        self.transcript.branch_off(at);
        self.recount();
        match compaction {
            Some(c) => self.compact(c.instructions, c.auto, fx),
            None => self.start_reply(None, fx),
        }
    }

    /// Cancels the reply in flight, keeping what arrived.
    pub(crate) fn cancel_live(&mut self, fx: &mut Vec<Effect>) {
        // What was queued waits: the user stopped this turn and decides what goes next.
        self.queue.held = true;
        self.cancel_tools(fx);
        let Some(live) = self.live.take() else { return };
        let elapsed = live.started_ms.map_or(0, |s| self.now_ms.saturating_sub(s));
        let mut kept = "nothing had arrived, so there is nothing to keep";
        if let Some(m) = self.transcript.message_mut(live.id) {
            reducer::finish(m, Ending::Cancelled, elapsed);
            kept = m.kept_when_stopped();
        }
        fx.push(Effect::CancelRequest { id: live.id });
        self.recount();
        self.flash(format!("cancelled; {kept}"));
        self.after_compaction(live.id, fx);
    }

    pub(crate) fn on_wire(&mut self, id: u64, event: WireEvent, now_ms: u64) {
        self.now_ms = self.now_ms.max(now_ms);
        let Some(live) = self.live.as_ref().filter(|l| l.id == id) else { return };
        if let WireEvent::Retrying { attempt, wait_ms, reason } = &event {
            #[allow(clippy::cast_precision_loss)]
            let secs = *wait_ms as f64 / 1000.0;
            let text = format!("{}; retry {attempt} in {secs:.1} s", crate::text::sanitize::sanitize(reason));
            self.flash_about(text, true, super::state::FlashAbout::Retry(id));
            return;
        }
        let started = live.started_ms.unwrap_or(now_ms);
        let rel = now_ms.saturating_sub(started);
        let Some(msg) = self.transcript.message_mut(id) else {
            self.live = None;
            return;
        };
        let before = msg.revision;
        let done = apply_wire(msg, event, rel, &mut |_| {});
        if msg.revision != before || done {
            self.dirty = true;
            if !self.scroll.follow {
                self.unseen = true;
            }
        }
        if done {
            self.finish_live();
            self.recount();
        }
    }

    /// The reply ended by itself: settle it, and bring the draft back if it failed.
    fn finish_live(&mut self) {
        let Some(live) = self.live.take() else { return };
        let Some(m) = self.transcript.message(live.id) else { return };
        let failed = matches!(m.status, MessageStatus::Failed | MessageStatus::Interrupted);
        if !failed {
            self.schema_verdict(live.id);
            return;
        }
        // Nothing queued goes out on top of a failure: the user decides (Enter sends it).
        self.queue.held = true;
        let what = m.error.as_ref().map_or_else(|| "the request failed".to_owned(), |e| e.message.clone());
        let what = crate::text::sanitize::sanitize(&what).into_owned();
        match live.draft {
            Some(draft) if self.composer.is_empty() && self.editing.is_none() => {
                // As the user left it: big pastes as chips, not as their thousands of lines.
                self.composer.restore(draft.composer);
                // Its attachments come back as chips too (the failed turn is not re-sent).
                if self.attachments.is_empty() {
                    let at = self.transcript.index_of(live.id).unwrap_or(0);
                    let prompt = self.transcript.cells[..at]
                        .iter()
                        .rev()
                        .find_map(|c| c.message().filter(|m| m.role() == Role::User));
                    self.attachments = prompt.map(|m| m.attachments.clone()).unwrap_or_default();
                    self.pasted_paths = draft.pasted_paths;
                    self.pasted_paths.resize(self.attachments.len(), None);
                }
                let text = format!("{what} — your prompt is back in the composer");
                self.flash_about(text, true, super::state::FlashAbout::DraftBack);
            }
            _ => self.flash_error(what),
        }
    }
}
