//! Queued messages: Enter while a reply streams (or its tools run) queues the draft instead of
//! refusing it. The queue goes out in order, one prompt per turn, when the turn ends (after the
//! tool loop); the send-now key stops the running turn and sends the first one at once. A turn
//! that was cancelled or failed holds the queue until the user says so (Enter, or send-now),
//! so nothing goes out on top of an answer the user just stopped.

use super::composer::Draft;
use super::effect::Effect;
use super::keymap::Action;
use super::state::State;
use crate::engine::attachment::Attachment;

/// One message waiting for the turn to end, as the composer held it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Queued {
    /// The draft with its paste chips, given back whole by ↑.
    pub draft: Draft,
    /// The text that will be sent (chips opened), for the row under the transcript.
    pub text: String,
    /// The attachment chips that go with it.
    pub attachments: Vec<Attachment>,
    /// For each attachment chip, the pasted path it was made from.
    pub pasted_paths: Vec<Option<String>>,
}

/// The messages waiting to go out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Queue {
    pub items: Vec<Queued>,
    /// The last turn was cancelled or failed: wait for the user before sending.
    pub held: bool,
    /// A queued message is being sent: `submit` must not queue it again.
    sending: bool,
}

impl Queue {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl State {
    /// Whether a prompt sent now would have to wait for the turn in flight.
    #[must_use]
    pub fn turn_running(&self) -> bool {
        self.live.is_some() || self.tools.busy() || self.held.is_some()
    }

    /// Whether a prompt submitted now joins the queue: a turn runs, or earlier messages wait
    /// (held after a cancel) and must go first.
    pub(crate) fn queues_prompt(&self) -> bool {
        !self.queue.sending
            && self.compare.active.is_none()
            && (self.turn_running() || (!self.queue.is_empty() && self.editing.is_none()))
    }

    /// Moves the composer's draft (and its chips) to the end of the queue.
    pub(crate) fn enqueue(&mut self, text: String) {
        let draft = self.composer.draft();
        self.composer.remember(&text);
        self.composer.clear();
        let attachments = std::mem::take(&mut self.attachments);
        let pasted_paths = std::mem::take(&mut self.pasted_paths);
        self.queue.items.push(Queued { draft, text, attachments, pasted_paths });
        self.dirty = true;
        if self.turn_running() {
            let now = self.keymap.hint(Action::SendNow);
            self.flash(format!("queued: it goes out when this turn ends · {now} sends it now"));
        } else {
            // Queued behind a held queue: the user asked to send, so the queue goes.
            self.queue.held = false;
        }
    }

    /// ↑ on an empty composer: the newest queued message back into the composer to edit.
    pub(crate) fn unqueue_to_composer(&mut self) -> bool {
        if !self.composer.is_empty() {
            return false;
        }
        let Some(q) = self.queue.items.pop() else { return false };
        self.composer.restore(q.draft);
        if self.attachments.is_empty() {
            self.attachments = q.attachments;
            self.pasted_paths = q.pasted_paths;
        }
        self.flash("the queued message is back in the composer");
        true
    }

    /// The remove key: drops the newest queued message.
    pub(crate) fn drop_queued(&mut self) -> bool {
        if self.queue.items.pop().is_none() {
            return false;
        }
        let left = self.queue.items.len();
        self.flash(if left == 0 {
            "queued message removed".to_owned()
        } else {
            format!("removed; {left} still queued")
        });
        true
    }

    /// The send-now key: queues the draft if there is one, stops the running turn (keeping what
    /// arrived) and lets the queue go at once.
    pub(crate) fn send_now(&mut self, fx: &mut Vec<Effect>) -> bool {
        let text = self.composer.text();
        let has_draft = !text.trim().is_empty() || !self.attachments.is_empty();
        if self.queue.is_empty() && !(has_draft && self.turn_running()) {
            return false;
        }
        if has_draft {
            self.enqueue(text);
        }
        if self.live.is_some() || self.tools.busy() {
            self.cancel_live(fx);
        }
        self.queue.held = false;
        true
    }

    /// Sends the first queued message when nothing runs any more (called after every message).
    pub(crate) fn drain_queue(&mut self, fx: &mut Vec<Effect>) {
        if self.queue.is_empty()
            || self.queue.held
            || self.turn_running()
            || self.editing.is_some()
            || self.compare.active.is_some()
            || self.quit
        {
            return;
        }
        let q = self.queue.items.remove(0);
        // The user may be typing the next one: keep that draft aside while this one goes.
        let mine = self.composer.draft();
        let my_attachments = std::mem::replace(&mut self.attachments, q.attachments.clone());
        let my_paths = std::mem::replace(&mut self.pasted_paths, q.pasted_paths.clone());
        self.composer.restore(q.draft.clone());
        self.queue.sending = true;
        self.submit(q.text.clone(), fx);
        self.queue.sending = false;
        let sent = self.turn_running();
        if !sent {
            // Refused (a limit, the window): it waits at the front, and says why in the flash.
            self.queue.items.insert(0, q);
            self.queue.held = true;
        }
        self.composer.restore(mine);
        self.attachments = my_attachments;
        self.pasted_paths = my_paths;
        self.dirty = true;
    }
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod queue_tests;
