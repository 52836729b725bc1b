//! The elicitation form: an MCP server asking the user for input (`elicitation/create`) while a
//! call runs. The form is a modal over the chat (`Overlay::Elicit`); forms that arrive while one
//! is open wait their turn. Nothing is answered by accident, as in the approval modal: for
//! `GUARD_MS` after a form shows, and while the user is still mid-sentence, text goes on into
//! the composer (`State::type_ahead`, the approval modal's rule); Enter in
//! a field moves to the next field and never answers; a button answers only with the Enter
//! right after Tab or an arrow put the focus on it. Esc and Ctrl+C answer "cancel". The answer
//! goes back to the waiting server request through `ToolEffect::Answer`.

use super::approval::GUARD_MS;
use super::effect::Effect;
use super::overlay::Overlay;
use super::state::State;
use super::tools::ToolEffect;
use crate::tools::mcp::elicit::{Answer, Field, FieldKind, Form, Reply, values};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// The buttons after the fields, in order.
pub const BUTTONS: [&str; 3] = ["Accept", "Decline", "Cancel"];

/// One form waiting for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitForm {
    /// The server's name in `config.toml` (unsanitised).
    pub server: String,
    /// What the server says it needs (unsanitised).
    pub message: String,
    pub fields: Vec<Field>,
    /// The focused field, or a button past the fields (`fields.len() + i` is `BUTTONS[i]`).
    pub focus: usize,
    /// Whether Enter answers now: the last key put the focus on a button.
    pub armed: bool,
    /// The app clock when the form showed (the guard counts from it).
    pub shown_at: u64,
    /// Why Accept did not answer (a required field left empty, a bad number).
    pub error: Option<String>,
    pub reply: Reply,
}

impl ElicitForm {
    /// The button that has the focus, if one has.
    #[must_use]
    pub fn button(&self) -> Option<usize> {
        self.focus.checked_sub(self.fields.len())
    }
}

impl State {
    /// A server asks for a form: it opens, or waits behind the one that is open.
    pub(crate) fn on_elicit(&mut self, server: String, form: Form, reply: Reply) {
        let f = ElicitForm {
            server,
            message: form.message,
            fields: form.fields,
            focus: 0,
            armed: false,
            shown_at: self.now_ms,
            error: None,
            reply,
        };
        self.tools.forms.push_back(f);
        if !self.overlays.iter().any(|o| matches!(o, Overlay::Elicit)) {
            self.overlays.push(Overlay::Elicit);
        }
    }

    /// Keys for the form; false for a key it leaves to the screen (during the guard).
    pub(crate) fn elicit_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) -> bool {
        let now = self.now_ms;
        let Some(form) = self.tools.forms.front_mut() else {
            self.overlays.retain(|o| !matches!(o, Overlay::Elicit));
            return false;
        };
        let ctrl = key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        if key.code == KeyCode::Esc || ctrl && key.code == KeyCode::Char('c') {
            self.answer_form(Answer::Cancel, fx);
            return true;
        }
        let guarded = now < form.shown_at.saturating_add(GUARD_MS);
        // What the user was typing when the form showed is not an answer: it goes on into
        // the composer, as under the approval modal.
        if self.type_ahead(guarded, key) {
            return true;
        }
        let Some(form) = self.tools.forms.front_mut() else { return false };
        if guarded {
            return false;
        }
        let n = form.fields.len() + BUTTONS.len();
        let armed = std::mem::take(&mut form.armed);
        match key.code {
            KeyCode::Tab | KeyCode::Down if !ctrl => {
                form.focus = (form.focus + 1) % n;
                form.armed = form.button().is_some();
            }
            KeyCode::BackTab | KeyCode::Up if !ctrl => {
                form.focus = (form.focus + n - 1) % n;
                form.armed = form.button().is_some();
            }
            KeyCode::Enter => match form.button() {
                // Enter in a field goes to the next one and leaves the buttons unarmed.
                None => form.focus += 1,
                Some(b) if armed => {
                    let answer = match b {
                        0 => match values(&form.fields) {
                            Ok(v) => Answer::Accept(v),
                            Err(e) => {
                                form.error = Some(e);
                                return true;
                            }
                        },
                        1 => Answer::Decline,
                        _ => Answer::Cancel,
                    };
                    self.answer_form(answer, fx);
                }
                Some(_) => {}
            },
            _ if ctrl => return false,
            _ => {
                if let Some(field) = form.fields.get_mut(form.focus) {
                    edit(field, key);
                }
            }
        }
        true
    }

    /// Whether the front form has just shown (its keys are not its own yet).
    #[must_use]
    pub fn elicit_guarded(&self) -> bool {
        self.tools.forms.front().is_some_and(|f| self.now_ms < f.shown_at.saturating_add(GUARD_MS))
    }

    /// Sends `answer` for the front form and shows the next one, if any.
    fn answer_form(&mut self, answer: Answer, fx: &mut Vec<Effect>) {
        if let Some(form) = self.tools.forms.pop_front() {
            fx.push(Effect::Tools(ToolEffect::Answer { reply: form.reply, answer }));
        }
        match self.tools.forms.front_mut() {
            Some(next) => next.shown_at = self.now_ms,
            None => self.overlays.retain(|o| !matches!(o, Overlay::Elicit)),
        }
    }
}

/// A key typed into a field: text and numbers take characters, a switch flips with Space, a
/// choice moves with Space and ←/→.
fn edit(field: &mut Field, key: &KeyEvent) {
    match (&field.kind, key.code) {
        (FieldKind::Text | FieldKind::Number { .. }, KeyCode::Char(c)) => field.value.push(c),
        (FieldKind::Text | FieldKind::Number { .. }, KeyCode::Backspace) => {
            field.value.pop();
        }
        (FieldKind::Bool, KeyCode::Char(' ') | KeyCode::Left | KeyCode::Right) => {
            field.value = if field.value == "true" { "false" } else { "true" }.to_owned();
        }
        (FieldKind::Choice(options), KeyCode::Char(' ') | KeyCode::Right | KeyCode::Left) if !options.is_empty() => {
            let at = options.iter().position(|o| o.0 == field.value);
            let n = options.len();
            let next = match (at, key.code) {
                (None, KeyCode::Left) => n - 1,
                (None, _) => 0,
                (Some(i), KeyCode::Left) => (i + n - 1) % n,
                (Some(i), _) => (i + 1) % n,
            };
            field.value = options[next].0.clone();
        }
        _ => {}
    }
}

#[cfg(test)]
#[path = "elicit_tests.rs"]
mod tests;
