//! Vim keys in the chat screen: the draft moves from the text area into the emulation
//! (`vim.rs`) and back. Only plain keys in normal and visual mode, and Esc in insert mode, are
//! taken; every other key goes on to the chat screen's own handling (Enter sends, Esc with
//! nothing pending cancels a reply, Ctrl keys do what they always do).

use super::state::State;
use super::vim::{Buf, Mode, Outcome, Vim};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::CursorMove;

impl State {
    /// `/vim`: on (in insert mode, so typing goes on as before) or off.
    pub(crate) fn toggle_vim(&mut self) {
        if self.vim.take().is_some() {
            self.flash("vim keys off");
        } else {
            self.vim = Some(Vim::new(Mode::Insert));
            self.flash("vim keys on: Esc for normal mode, i to type again");
        }
    }

    /// Gives `key` to the vim emulation when it is on; true when it used the key.
    pub(crate) fn vim_key(&mut self, key: KeyEvent) -> bool {
        let Some(mut vim) = self.vim.take() else { return false };
        let used = match vim.mode {
            Mode::Insert if key.code == KeyCode::Esc && key.modifiers == KeyModifiers::NONE => {
                let mut b = self.composer_buf();
                vim.leave_insert(&mut b);
                self.set_composer_buf(&b);
                true
            }
            Mode::Insert => {
                let typing = matches!(key.code, KeyCode::Char(_) | KeyCode::Backspace)
                    && !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
                let newline =
                    key.code == KeyCode::Enter && key.modifiers.intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
                if typing || newline {
                    vim.typed(key);
                }
                false
            }
            Mode::Normal | Mode::Visual => {
                let mut b = self.composer_buf();
                let out = vim.key(&mut b, key);
                if out == Outcome::Used {
                    self.set_composer_buf(&b);
                }
                out == Outcome::Used
            }
        };
        self.vim = Some(vim);
        used
    }

    /// The draft and its cursor as the emulation sees them.
    fn composer_buf(&self) -> Buf {
        let lines = self.composer.area.lines();
        let ratatui_textarea::DataCursor(row, col) = self.composer.area.cursor();
        let pos = lines.iter().take(row).map(|l| l.chars().count() + 1).sum::<usize>() + col;
        Buf::new(&lines.join("\n"), pos)
    }

    /// Puts the emulation's draft and cursor back into the text area.
    fn set_composer_buf(&mut self, b: &Buf) {
        let text = b.string();
        if text != self.composer.area.lines().join("\n") {
            self.composer.edit_text(&text);
        }
        let before = &b.text[..b.pos.min(b.text.len())];
        let row = before.iter().filter(|c| **c == '\n').count();
        let col = before.iter().rev().take_while(|c| **c != '\n').count();
        let (row, col) = (u16::try_from(row).unwrap_or(u16::MAX), u16::try_from(col).unwrap_or(u16::MAX));
        self.composer.area.move_cursor(CursorMove::Jump(row, col));
    }
}

#[cfg(test)]
mod tests {
    use crate::app::msg::Msg;
    use crate::app::test_state;
    use crate::app::vim::Mode;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    fn press(s: &mut crate::app::State, code: KeyCode) -> Vec<crate::app::Effect> {
        s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    fn typed(s: &mut crate::app::State, text: &str) {
        for c in text.chars() {
            press(s, KeyCode::Char(c));
        }
    }

    #[test]
    fn vim_edits_the_draft_and_enter_still_sends() {
        let mut s = test_state();
        typed(&mut s, "/vim");
        press(&mut s, KeyCode::Enter);
        assert!(s.vim.is_some());
        typed(&mut s, "hello big world");
        press(&mut s, KeyCode::Esc);
        assert_eq!(s.vim.as_ref().map(|v| v.mode), Some(Mode::Normal));
        typed(&mut s, "bdiw0");
        assert_eq!(s.composer.text(), "hello big ");
        typed(&mut s, "wcwsmall<");
        assert_eq!(s.composer.text(), "hello small< ", "insert mode types into the text area");
        press(&mut s, KeyCode::Backspace);
        press(&mut s, KeyCode::Esc);
        typed(&mut s, "u");
        assert_eq!(s.composer.text(), "hello big ");
        let fx = press(&mut s, KeyCode::Enter);
        assert!(fx.iter().any(|e| matches!(e, crate::app::Effect::StartRequest { .. })), "Enter sends in normal mode");
    }

    #[test]
    fn dd_then_p_of_a_paste_chip_puts_back_its_text() {
        let mut s = test_state();
        s.vim = Some(crate::app::vim::Vim::new(Mode::Insert));
        let big: String = (0..3000).map(|i| format!("pasted line {i}\n")).collect();
        s.composer.set_text("first\n");
        s.composer.paste(&big);
        let label = s.composer.area.lines()[1].clone();
        assert!(label.starts_with("[pasted 3,000 lines"), "{label}");
        press(&mut s, KeyCode::Esc);
        typed(&mut s, "dd");
        assert_eq!(s.composer.text(), "first", "the chip's line is cut");
        typed(&mut s, "p");
        assert_eq!(s.composer.text(), format!("first\n{big}"), "its text is back, not its label");
        typed(&mut s, "yyp");
        assert_eq!(s.composer.text(), format!("first\n{big}\n{big}"), "a copy of the chip is its text too");
        typed(&mut s, "dddduu");
        assert!(s.composer.text().ends_with(&big), "undo puts the chip back with its text");
        let fx = press(&mut s, KeyCode::Enter);
        let sent = fx.iter().find_map(|e| match e {
            crate::app::Effect::StartRequest { body, .. } => Some(body.to_string()),
            _ => None,
        });
        let sent = sent.expect("a request");
        assert!(sent.contains("pasted line 2999") && !sent.contains("[pasted 3,000"), "the paste went, not its label");
    }

    #[test]
    fn esc_in_insert_mode_does_not_cancel_the_reply() {
        let mut s = test_state();
        s.cfg.vim_mode = Some(true);
        s.vim = Some(crate::app::vim::Vim::new(Mode::Insert));
        typed(&mut s, "question");
        press(&mut s, KeyCode::Enter);
        assert!(s.live.is_some());
        let fx = press(&mut s, KeyCode::Esc);
        assert!(s.live.is_some() && fx.is_empty(), "the first Esc only leaves insert mode");
        let fx = press(&mut s, KeyCode::Esc);
        assert!(fx.iter().any(|e| matches!(e, crate::app::Effect::CancelRequest { .. })), "in normal mode Esc cancels");
    }

    #[test]
    fn enter_in_visual_mode_sends_and_leaves_visual_mode() {
        let mut s = test_state();
        s.vim = Some(crate::app::vim::Vim::new(Mode::Insert));
        typed(&mut s, "question");
        press(&mut s, KeyCode::Esc);
        typed(&mut s, "0v");
        assert_eq!(s.vim.as_ref().map(|v| v.mode), Some(Mode::Visual));
        let fx = press(&mut s, KeyCode::Enter);
        assert!(fx.iter().any(|e| matches!(e, crate::app::Effect::StartRequest { .. })), "Enter sends");
        // The draft is gone; the next keys are normal mode's: `i` types again.
        assert_eq!(s.vim.as_ref().map(|v| v.mode), Some(Mode::Normal));
        typed(&mut s, "ihello");
        assert_eq!(s.composer.text(), "hello");
    }
}
