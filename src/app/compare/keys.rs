//! Keys and the mouse in compare mode. The composer keeps its keys (Enter sends to every
//! column); Tab puts the keys on the columns, where letters act on the focused column (in an
//! arena with both answers in, Tab goes to the vote bar first: `vote.rs`). Global bindings
//! that mean something else here (cancel, scrolling) are taken first; the rest (quit, help,
//! palette…) fall through to the chat's handling, wherever the keys are.

use crate::app::effect::Effect;
use crate::app::keymap::{Action, Context};
use crate::app::state::{Focus, State};
use crossterm::event::{KeyCode, KeyEvent, MouseButton, MouseEvent, MouseEventKind};

/// Lines one wheel notch or scroll key moves.
const STEP: i64 = 3;

impl State {
    /// Handles a key in compare mode; false when compare is off or the key is not its business.
    pub(crate) fn compare_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        if !self.compare.is_active() {
            return false;
        }
        if let Some(action) = self.keymap.action(Context::Global, key) {
            // What compare does not take is the chat's: Ctrl+Q, F1, Ctrl+P… work everywhere.
            return self.compare_global(action, fx).unwrap_or(false);
        }
        if self.vote_bar_focused() {
            self.vote_bar_key(key, fx);
            return true;
        }
        match self.focus {
            Focus::Composer => self.compare_composer_key(key, fx),
            Focus::Transcript => {
                self.compare_columns_key(key, fx);
                true
            }
        }
    }

    /// Global actions in compare mode: `Some(used)` when compare handles it, `None` to let the
    /// chat's handling have it.
    fn compare_global(&mut self, action: Action, fx: &mut Vec<Effect>) -> Option<bool> {
        let cmp = self.compare.active.as_ref()?;
        // Tool calls running or waiting in a column count as work in flight: Esc stops them too.
        let (live, diff, full) = (self.compare_busy(), cmp.diff.is_some(), cmp.full);
        match action {
            Action::Cancel => {
                if live {
                    self.compare_cancel_all(fx);
                } else if diff {
                    self.compare_toggle_diff();
                } else if full {
                    self.compare_toggle_full();
                } else if self.focus == Focus::Transcript {
                    self.focus_composer();
                } else {
                    return Some(false);
                }
            }
            Action::Interrupt if live => self.compare_cancel_all(fx),
            // The compare's panel is the metrics strip under the columns.
            Action::Panels => {
                self.compare.strip_hidden = !self.compare.strip_hidden;
                let key = self.keymap.hint(Action::Panels);
                self.flash(if self.compare.strip_hidden {
                    format!("metrics strip hidden · {key} shows it")
                } else {
                    format!("metrics strip shown · {key} hides it")
                });
            }
            Action::ScrollUp => self.compare_scroll(-STEP),
            Action::ScrollDown => self.compare_scroll(STEP),
            Action::PageUp => self.compare_scroll(-self.compare_page()),
            Action::PageDown => self.compare_scroll(self.compare_page()),
            Action::Top => self.compare_scroll_end(false),
            Action::Bottom => self.compare_scroll_end(true),
            _ => return None,
        }
        Some(true)
    }

    fn compare_composer_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        match self.keymap.action(Context::Composer, key) {
            Some(Action::Send) => {
                let text = self.composer.text();
                if text.trim().is_empty() {
                    return true;
                }
                if crate::app::commands::parse(&text).is_some() {
                    // Slash commands behave as in the chat (`/compare off` leaves).
                    self.submit(text, fx);
                } else {
                    self.compare_send(text, fx);
                }
                true
            }
            Some(Action::Select) => {
                self.arena_bar_leave();
                self.focus = Focus::Transcript;
                true
            }
            _ if self.keymap.is(Action::CompareColumns, key) => {
                // In an arena with both answers in, the vote bar comes first.
                if !self.arena_bar_enter() {
                    self.focus = Focus::Transcript;
                }
                true
            }
            _ => false,
        }
    }

    fn compare_columns_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) {
        match self.keymap.action(Context::Compare, key) {
            Some(Action::CompareNext | Action::CompareColumns) => self.compare_focus_step(1),
            Some(Action::ComparePrev) => self.compare_focus_step(-1),
            Some(Action::CompareFull) => self.compare_toggle_full(),
            Some(Action::CompareSync) => self.compare_toggle_sync(),
            Some(Action::CompareDiff) => self.compare_toggle_diff(),
            Some(Action::CompareKeep) => self.compare_keep(fx),
            Some(Action::CompareRetry) => self.compare_retry(fx),
            Some(Action::CompareClose) => self.close_compare(fx),
            Some(Action::CompareLineUp) => self.compare_scroll(-1),
            Some(Action::CompareLineDown) => self.compare_scroll(1),
            Some(Action::CompareLeave) => self.focus_composer(),
            Some(Action::CompareCopy) => self.compare_copy(fx),
            _ => {
                // Typing goes back to the composer with the character.
                if matches!(key.code, KeyCode::Char(_)) {
                    self.text_to_composer(key, None);
                }
            }
        }
    }

    /// Copies the focused column's last answer.
    fn compare_copy(&mut self, fx: &mut Vec<Effect>) {
        let text = self
            .compare
            .active
            .as_ref()
            .and_then(super::Compare::focused)
            .and_then(super::Column::last_reply)
            .map(|m| m.text().to_owned())
            .unwrap_or_default();
        if text.is_empty() {
            self.flash("nothing to copy in this column");
            return;
        }
        self.copying(format!("{} characters", text.chars().count()));
        fx.push(Effect::Copy(text));
    }

    /// The mouse in compare mode: the wheel scrolls the column under it, a click focuses a
    /// column or the composer.
    pub(crate) fn compare_mouse(&mut self, m: &MouseEvent) -> bool {
        if !self.compare.is_active() {
            return false;
        }
        let under = self.view.compare.columns.iter().find(|v| v.contains(m.column, m.row)).map(|v| v.column);
        match m.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                self.dirty = true;
                let diff = self.compare.active.as_ref().is_some_and(|c| c.diff.is_some());
                if let Some(i) = under.filter(|_| !diff) {
                    self.compare_focus_on(i);
                }
                self.compare_scroll(if m.kind == MouseEventKind::ScrollUp { -STEP } else { STEP });
                true
            }
            MouseEventKind::Down(MouseButton::Left) if self.overlays.is_empty() => {
                self.dirty = true;
                if let Some(i) = under {
                    self.compare_focus_on(i);
                    self.arena_bar_leave();
                    self.focus = Focus::Transcript;
                } else if self.view.in_composer(m.column, m.row) {
                    self.focus_composer();
                }
                true
            }
            _ => false,
        }
    }
}
