//! Typing that reaches the composer from elsewhere: from under the approval modal, from the
//! arena's vote bar, from the compare columns. It is stamped on the app clock (`typed_ms`), so a
//! letter typed a moment later counts as more text, never as a choice.

use super::keymap::{Action, Context};
use super::overlay::Overlay;
use super::state::{Focus, State};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

impl State {
    /// Gives a key that edits text to the composer, after `prefix` (a letter that turned out to
    /// be text): from under the approval modal, or from the arena's vote bar. False when the
    /// key does not edit text (then nothing happens).
    pub(crate) fn text_to_composer(&mut self, key: &KeyEvent, prefix: Option<char>) -> bool {
        let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let action = self.keymap.action(Context::Composer, key);
        let edit = matches!(
            action,
            Some(Action::Newline | Action::LineStart | Action::LineEnd | Action::KillLine | Action::KillWord)
        );
        let text = plain
            && matches!(
                key.code,
                KeyCode::Char(_)
                    | KeyCode::Backspace
                    | KeyCode::Delete
                    | KeyCode::Left
                    | KeyCode::Right
                    | KeyCode::Home
                    | KeyCode::End
            );
        if !edit && !text {
            return false;
        }
        self.focus_composer();
        if let Some(c) = prefix {
            self.composer.input(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        match action {
            Some(Action::Newline) => self.composer.newline(),
            Some(Action::LineStart) => self.composer.line_start(),
            Some(Action::LineEnd) => self.composer.line_end(),
            Some(Action::KillLine) => self.composer.kill_line(),
            Some(Action::KillWord) => self.composer.kill_word(),
            _ => self.composer.input(*key),
        }
        self.typed_ms = Some(self.now_ms);
        true
    }

    /// The rule for type-ahead under a modal that asks (the approval modal, the elicitation
    /// form): while it is new (`guarded`), or the user is still in the middle of a sentence,
    /// a key that edits text is part of what they were typing and goes on into the composer,
    /// never into the modal. True when it did.
    pub(crate) fn type_ahead(&mut self, guarded: bool, key: &KeyEvent) -> bool {
        (guarded || self.mid_sentence()) && self.text_to_composer(key, None)
    }

    /// Whether text typed now lands in the composer: nothing over it but the approval modal
    /// while it lists its options (its keys send text on), and the keys not on a selected
    /// message, the compare columns or the vote bar (there letters are commands).
    #[must_use]
    pub fn typing_reaches_composer(&self) -> bool {
        match self.overlays.last() {
            Some(Overlay::Approval) => {
                self.tools.approval.as_ref().is_some_and(|a| matches!(a.mode, super::approval::Mode::Choose))
            }
            Some(Overlay::Elicit) => self.elicit_guarded(),
            Some(_) => false,
            None => self.focus == Focus::Composer,
        }
    }

    /// Puts the keys on the composer (from a selected message, the columns or the vote bar).
    pub(crate) fn focus_composer(&mut self) {
        self.leave_selection();
        self.arena_bar_leave();
    }
}
