//! A long conversation reopened on its tail (`--resume`, `--continue`): the screen opens on
//! its last messages at once, and the messages before them (its head) arrive from the store a
//! moment later (`StoreMsg::Head`), put in front without moving what is on screen.
//!
//! Until they are in, nothing may build a request or change the conversation: a reply would
//! be asked for with half the history. So input that could do either is held, in order, with
//! everything after it, and replayed the moment the head is in; typing into the composer and
//! scrolling go on meanwhile. Nothing typed is lost, and nothing runs on a key meant for
//! something else.

use super::keymap::{Action, Context};
use super::msg::Msg;
use super::persist::Slot;
use super::state::{Focus, State};
use super::transcript::{Cell, NoticeKind};
use crossterm::event::MouseEventKind;

/// Actions that neither send nor change the conversation: they go ahead while the head loads.
const SAFE: &[Action] = &[
    Action::Quit,
    Action::Interrupt,
    Action::Cancel,
    Action::Help,
    Action::Panels,
    Action::ScrollUp,
    Action::ScrollDown,
    Action::PageUp,
    Action::PageDown,
    Action::Top,
    Action::Bottom,
    Action::Newline,
    Action::LineStart,
    Action::LineEnd,
    Action::KillLine,
    Action::KillWord,
    Action::Eof,
    Action::HistoryPrev,
    Action::HistoryNext,
];

impl State {
    /// Whether a reopened conversation's head is still on its way.
    #[must_use]
    pub fn head_loading(&self) -> bool {
        self.persist.offset > 0 && !self.persist.head_failed
    }

    /// How many earlier messages of a reopened conversation are still on their way.
    #[must_use]
    pub fn head_unread(&self) -> Option<usize> {
        self.head_loading().then_some(self.persist.offset)
    }

    /// `msg` back when it may be applied now; `None` when it was held for after the head.
    pub(crate) fn hold(&mut self, msg: Msg) -> Option<Msg> {
        if !self.head_loading() || !self.must_wait(&msg) {
            return Some(msg);
        }
        if self.held_input.is_empty() {
            let n = self.persist.offset;
            self.flash(format!("loading the {n} earlier messages; what you typed follows in a moment"));
            self.version = self.version.wrapping_add(1);
        }
        self.held_input.push(msg);
        None
    }

    /// Whether `msg` has to wait for the head: it could send or change the conversation, or
    /// something before it is already waiting (order is kept).
    fn must_wait(&self, msg: &Msg) -> bool {
        let first = self.held_input.is_empty();
        match msg {
            Msg::Compact(_) => true,
            Msg::Key(k) => !first || !self.overlays.is_empty() || !self.key_is_safe(k),
            Msg::Paste(_) => !first || !self.overlays.is_empty() || self.focus != Focus::Composer,
            Msg::Mouse(m) => {
                !first
                    || !matches!(m.kind, MouseEventKind::ScrollUp | MouseEventKind::ScrollDown | MouseEventKind::Moved)
            }
            _ => false,
        }
    }

    /// A key that only types, edits the draft or scrolls.
    fn key_is_safe(&self, key: &crossterm::event::KeyEvent) -> bool {
        let context = match self.focus {
            Focus::Composer => Context::Composer,
            Focus::Transcript => Context::Transcript,
        };
        let action = self.keymap.action(Context::Global, key).or_else(|| self.keymap.action(context, key));
        match action {
            Some(a) => SAFE.contains(&a),
            // Not bound: a character typed into the draft (the transcript ignores it).
            None => self.vim.is_none(),
        }
    }

    /// Applies what was held, once the head is in (or could not be loaded).
    pub(crate) fn replay_held(&mut self, fx: &mut Vec<super::effect::Effect>) {
        if self.held_input.is_empty() || self.head_loading() {
            return;
        }
        for msg in std::mem::take(&mut self.held_input) {
            fx.extend(self.apply(msg));
        }
    }

    /// The head of the conversation on screen arrived: in front of the tail, ids fresh, the
    /// view where it was. A head for a conversation no longer open is dropped.
    pub(crate) fn on_head(&mut self, id: &str, branch: i64, result: Result<Vec<Cell>, String>) {
        let p = &self.persist;
        let expected = p.offset;
        if !p.is_current(id) || expected == 0 || p.path.first().is_some_and(|s| s.branch != branch) {
            return;
        }
        let msgs = match result {
            Ok(m) if m.len() == expected => m,
            Ok(m) => {
                return self.head_failed(&format!("expected {expected} messages, found {}", m.len()));
            }
            Err(e) => return self.head_failed(&e),
        };
        let revisions: Vec<u64> = msgs.iter().map(Cell::revision).collect();
        let ids = self.transcript.prepend(msgs);
        let slots = ids.iter().zip(revisions).map(|(&id, rev)| Slot { id, branch, revision: Some(rev), at_ms: 0 });
        self.persist.path.splice(0..0, slots);
        self.persist.offset = 0;
        if self.scroll.follow {
            self.scroll_bottom();
        } else {
            self.scroll.anchor.cell += expected;
        }
        self.recount();
        self.dirty = true;
    }

    fn head_failed(&mut self, why: &str) {
        self.persist.head_failed = true;
        let n = self.persist.offset;
        let why = crate::text::sanitize::sanitize(why).into_owned();
        self.transcript.push_notice(
            NoticeKind::Error,
            format!("the {n} earlier messages of this conversation could not be loaded ({why}); replies from here on do not see them"),
        );
        self.dirty = true;
    }
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;
