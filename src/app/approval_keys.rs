//! The approval modal's keys. Nothing is decided by accident: for `GUARD_MS` after a call
//! shows, no key is the modal's (text goes to the composer, Enter decides nothing); after that
//! a choice is an option highlighted with ↑/↓/Tab, or with its letter, and confirmed by the
//! Enter right after. A letter typed mid-sentence, or followed by more text, is text and goes
//! to the composer. Esc and Ctrl+C cancel the turn; the page keys scroll the details; the other
//! keys of "Everywhere" pass to the global bindings.

use super::approval::{Choice, Decision, Mode, check_arguments, input};
use super::effect::Effect;
use super::keymap::{Action, Context};
use super::state::State;
use super::tools::{Owner, ToolEffect};
use crate::app::state::FlashAbout;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Lines PgUp / PgDn move the details by.
const DETAILS_PAGE: u16 = 8;

fn plain(key: &KeyEvent) -> bool {
    !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

/// Which way a choosing key moves the highlight: ↓ and Tab forward, ↑ and Shift+Tab back.
fn step(key: &KeyEvent) -> Option<isize> {
    match key.code {
        KeyCode::Down | KeyCode::Tab if key.modifiers.is_empty() => Some(1),
        KeyCode::Up if key.modifiers.is_empty() => Some(-1),
        KeyCode::BackTab => Some(-1),
        KeyCode::Tab if key.modifiers == KeyModifiers::SHIFT => Some(-1),
        _ => None,
    }
}

impl State {
    /// Keys for the approval modal; true when used. Keys it does not use reach the global
    /// bindings (quit, help, the palette, the inspector…).
    pub(crate) fn approval_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        let Some(a) = self.tools.approval.as_mut() else { return false };
        // Enter confirms only right after a choosing key: every key takes the highlight away,
        // and only the choosing keys put it back.
        let (highlight, pending) = (a.highlight.take(), a.pending.take());
        let choosing = matches!(a.mode, Mode::Choose);
        let owner = a.owner;
        let interrupt = self.keymap.is(Action::Interrupt, key)
            || key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
        if key.code == KeyCode::Esc && choosing || interrupt {
            // Esc or Ctrl+C in the modal cancels the whole turn: the chat's, or every column's
            // (as Esc does on the compare screen).
            match owner {
                Owner::Chat => self.cancel_live(fx),
                Owner::Column { .. } => self.compare_cancel_all(fx),
            }
            return true;
        }
        if let Some(used) = self.approval_global(key) {
            return used;
        }
        if choosing {
            return self.approval_choose_key(key, highlight, pending, fx);
        }
        self.approval_input_key(key, fx)
    }

    /// Global bindings in the modal: the scroll keys move the details; the rest pass through
    /// (`Some(false)`). `None` for a key no global binding has.
    fn approval_global(&mut self, key: &KeyEvent) -> Option<bool> {
        let action = self.keymap.action(Context::Global, key)?;
        let a = self.tools.approval.as_mut()?;
        match action {
            Action::PageUp => a.scroll = a.scroll.saturating_sub(DETAILS_PAGE),
            Action::PageDown => a.scroll = a.scroll.saturating_add(DETAILS_PAGE),
            Action::ScrollUp => a.scroll = a.scroll.saturating_sub(1),
            Action::ScrollDown => a.scroll = a.scroll.saturating_add(1),
            // Esc means "back" in the reason and edit inputs.
            Action::Cancel => return None,
            _ => return Some(false),
        }
        Some(true)
    }

    /// A key while the modal lists its options.
    fn approval_choose_key(
        &mut self,
        key: &KeyEvent,
        highlight: Option<usize>,
        pending: Option<char>,
        fx: &mut Vec<Effect>,
    ) -> bool {
        let send = self.keymap.action(Context::Composer, key) == Some(Action::Send);
        if self.approval_guarded() {
            if send {
                self.flash_about("Enter did nothing: a tool call just asked", false, FlashAbout::Approval);
                return true;
            }
            // Typed ahead: text, whatever letters it holds. The choosing keys mean nothing yet.
            return self.type_ahead(true, key) || step(key).is_some();
        }
        let choices = self.approval_choices();
        if send {
            match highlight.and_then(|h| choices.get(h)) {
                Some(&c) => self.choose(c, fx),
                None => {
                    let letters = choices.iter().any(|&c| self.approval_letter(c).is_some());
                    let how =
                        if letters { "↑↓ (or a letter) first" } else { "↑↓ first (no letter decides here)" };
                    self.flash_about(format!("Enter did nothing: {how}"), false, FlashAbout::Approval);
                }
            }
            return true;
        }
        if let Some(d) = step(key) {
            let n = choices.len().max(1);
            let next = match highlight {
                None if d > 0 => 0,
                None => n - 1,
                Some(h) => (h + n).wrapping_add_signed(d) % n,
            };
            if let Some(a) = self.tools.approval.as_mut() {
                a.highlight = Some(next);
            }
            return true;
        }
        if let (KeyCode::Char(c), true, None) = (key.code, plain(key), pending) {
            // A letter after a pause picks its option; mid-sentence it is text.
            let at = choices.iter().position(|&ch| self.approval_letter(ch) == Some(c));
            if let Some(i) = at.filter(|_| !self.mid_sentence()) {
                if let Some(a) = self.tools.approval.as_mut() {
                    a.highlight = Some(i);
                    a.pending = Some(c);
                }
                return true;
            }
        }
        // Anything else that edits text is text, with the letter it followed.
        self.text_to_composer(key, pending)
    }

    /// Confirms an option.
    fn choose(&mut self, c: Choice, fx: &mut Vec<Effect>) {
        let Some(a) = self.tools.approval.as_ref() else { return };
        let (owner, id, index) = (a.owner, a.id, a.index);
        match c {
            Choice::Once => self.decide(Decision::Once, fx),
            Choice::Session => self.decide(Decision::Session, fx),
            Choice::Outside => self.decide(Decision::Outside, fx),
            Choice::Deny => self.decide(Decision::Deny(None), fx),
            Choice::Reason => {
                let mut c = input("");
                c.area.set_placeholder_text("why not? (sent to the model)");
                if let Some(a) = self.tools.approval.as_mut() {
                    a.mode = Mode::Reason(c);
                }
            }
            Choice::Edit => {
                let Some(call) = self.call_at(owner, id, index) else { return };
                let text = crate::text::fmt::pretty_json(&call.arguments);
                if let Some(a) = self.tools.approval.as_mut() {
                    a.mode = Mode::Edit(input(&text));
                    a.error = None;
                }
            }
        }
    }

    /// A key in the reason or the arguments input: they keep their keys once chosen.
    fn approval_input_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        let Some(a) = self.tools.approval.as_mut() else { return false };
        let (owner, id, index) = (a.owner, a.id, a.index);
        match &mut a.mode {
            Mode::Choose => return false,
            Mode::Reason(c) => match key.code {
                KeyCode::Esc => a.mode = Mode::Choose,
                KeyCode::Enter => {
                    let reason = c.text().trim().to_owned();
                    self.decide(Decision::Deny(Some(reason).filter(|r| !r.is_empty())), fx);
                }
                _ => c.input(*key),
            },
            Mode::Edit(c) => {
                let save = key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('s')
                    || key.code == KeyCode::Enter && key.modifiers.contains(KeyModifiers::ALT);
                if key.code == KeyCode::Esc {
                    a.mode = Mode::Choose;
                    a.error = None;
                } else if save {
                    let text = c.text();
                    let kind = self.call_at(owner, id, index).map(|c| c.kind.clone()).unwrap_or_default();
                    match check_arguments(&kind, &text) {
                        Ok(args) => self.decide(Decision::Edited(args), fx),
                        Err(e) => {
                            if let Some(a) = self.tools.approval.as_mut() {
                                a.error = Some(e);
                            }
                        }
                    }
                } else if self.keymap.is(Action::Editor, key) {
                    fx.push(Effect::Tools(ToolEffect::EditArgs(c.text())));
                } else {
                    c.input(*key);
                }
            }
        }
        true
    }
}

#[cfg(test)]
#[path = "approval_tests.rs"]
mod tests;
