//! The arena's vote bar: A better · B better (· C · D better) · tie · both (all) bad. It comes
//! up when every column has answered and is reached with Tab from the composer. A vote is deliberate: ←/→ (or ↑/↓)
//! highlight an option, or its letter does; Enter right after one of those casts it. A letter
//! followed by any other text is text: both go to the composer, as does any other typing.
//! Once cast it is final (the names are shown): the next prompt starts a new battle. Esc goes
//! back to the composer, Tab on to the columns.

use super::arena::Vote;
use crate::app::effect::Effect;
use crate::app::keymap::{Action, Context};
use crate::app::state::State;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

impl State {
    /// A key while the vote bar has the keys (global bindings were handled before).
    pub(crate) fn vote_bar_key(&mut self, key: &KeyEvent, fx: &mut Vec<Effect>) {
        let columns = self.compare.active.as_ref().map_or(2, |c| c.columns.len());
        let Some(arena) = self.arena_mut() else { return };
        // Enter votes only right after a choosing key: every key takes the highlight away.
        let (highlight, pending) = (arena.bar.highlight.take(), arena.bar.pending.take());
        let options = Vote::options(columns);
        let n = options.len();
        let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let moved = match key.code {
            KeyCode::Right | KeyCode::Down if plain => Some(highlight.map_or(0, |h| (h + 1) % n)),
            KeyCode::Left | KeyCode::Up if plain => Some(highlight.map_or(n - 1, |h| (h + n - 1) % n)),
            _ => None,
        };
        if let Some(h) = moved {
            arena.bar.highlight = Some(h);
            return;
        }
        if self.keymap.action(Context::Composer, key) == Some(Action::Send) {
            match highlight.and_then(|h| options.get(h)) {
                Some(&v) => self.arena_vote(v, fx),
                None => self.flash("Enter did nothing: choose with ←→ (or a b t n), then Enter"),
            }
            return;
        }
        match key.code {
            KeyCode::Tab if key.modifiers.is_empty() => {
                // On to the columns (scroll, full width, diff).
                self.arena_bar_leave();
                return;
            }
            KeyCode::BackTab => {
                self.focus_composer();
                return;
            }
            KeyCode::Char(c) if plain && pending.is_none() => {
                if let Some(i) = options.iter().position(|v| v.letter() == c) {
                    if let Some(arena) = self.arena_mut() {
                        arena.bar.highlight = Some(i);
                        arena.bar.pending = Some(c);
                    }
                    return;
                }
            }
            _ => {}
        }
        // Anything else that edits text goes to the composer, after a letter it followed.
        self.text_to_composer(key, pending);
    }
}
