//! Token probabilities on the chat screen: `/logprobs [N|off]` asks for them, and on a selected
//! message `p` opens its heatmap (`Overlay::Probs`), where ←/→ move through the tokens and the
//! cursor's alternatives show below. The tokens come from `engine::logprobs`; drawing is `ui::probs`.

use super::overlay::Overlay;
use super::state::State;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Tokens moved by ↑/↓ (about a line of prose).
const LINE_STEP: usize = 12;

impl State {
    /// `/logprobs [N|off]`: ask for token log probabilities with N alternatives (alone: 5).
    pub(crate) fn logprobs_command(&mut self, arg: Option<&str>) {
        let n = match arg {
            None => Some(5),
            Some("off" | "none" | "0ff") => None,
            Some(a) => match a.parse::<u8>() {
                Ok(n) if n <= 20 => Some(n),
                _ => {
                    self.flash_error(format!("/logprobs takes 0 to 20 alternatives, or off — not {a}"));
                    return;
                }
            },
        };
        self.settings.logprobs = n;
        match n {
            Some(n) => self.flash(format!(
                "token probabilities on ({n} alternatives) · select a reply, {} shows its heatmap",
                self.keymap.hint(super::keymap::Action::Probabilities)
            )),
            None => self.flash("token probabilities off"),
        }
    }

    /// Opens the heatmap of the selected message, or says why there is none.
    pub(crate) fn open_probs(&mut self) {
        let Some(id) = self.selected else { return };
        let has = self.transcript.message(id).is_some_and(|m| !m.main().logprobs.is_empty());
        if has {
            self.overlays.push(Overlay::Probs { id, cursor: 0 });
        } else {
            self.flash("no token probabilities on this message · /logprobs 5 asks for them on the next reply");
        }
    }

    /// Keys of the heatmap; false lets a key fall through to the global bindings.
    pub(crate) fn probs_key(&mut self, key: &KeyEvent) -> bool {
        if key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) {
            return false;
        }
        let Some(Overlay::Probs { id, cursor }) = self.overlays.last() else { return false };
        let (id, cursor) = (*id, *cursor);
        let count =
            self.transcript.message(id).map_or(0, |m| crate::engine::logprobs::tokens(&m.main().logprobs).len());
        let last = count.saturating_sub(1);
        let next = match key.code {
            KeyCode::Esc | KeyCode::Char('q' | 'p') => {
                self.overlays.pop();
                return true;
            }
            KeyCode::Left | KeyCode::Char('h') => cursor.saturating_sub(1),
            KeyCode::Right | KeyCode::Char('l') => (cursor + 1).min(last),
            KeyCode::Up | KeyCode::Char('k') => cursor.saturating_sub(LINE_STEP),
            KeyCode::Down | KeyCode::Char('j') => (cursor + LINE_STEP).min(last),
            KeyCode::Home => 0,
            KeyCode::End => last,
            // The next token the model was less than half sure of.
            KeyCode::Char('n') => self.next_unsure(id, cursor).unwrap_or(cursor),
            _ => return false,
        };
        if let Some(Overlay::Probs { cursor, .. }) = self.overlays.last_mut() {
            *cursor = next;
        }
        true
    }

    fn next_unsure(&self, id: u64, from: usize) -> Option<usize> {
        let m = self.transcript.message(id)?;
        let tokens = crate::engine::logprobs::tokens(&m.main().logprobs);
        tokens.iter().enumerate().skip(from + 1).find(|(_, t)| t.prob() < 0.5).map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::client::WireEvent;
    use crate::api::event::StreamEvent;
    use crate::app::msg::Msg;
    use serde_json::{Value, json};

    /// A chat whose one reply is `text` with `logprobs` (as the reducer keeps them), selected.
    fn state_with_reply(text: &str, logprobs: Vec<Value>) -> State {
        let mut s = super::super::test_state();
        for c in "hi".chars() {
            key(&mut s, KeyCode::Char(c));
        }
        let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        let id = fx
            .iter()
            .find_map(|e| match e {
                crate::app::effect::Effect::StartRequest { id, .. } => Some(*id),
                _ => None,
            })
            .unwrap();
        let mut events = vec![StreamEvent::Text { choice: 0, delta: text.into() }];
        events.extend(logprobs.into_iter().map(|value| StreamEvent::Logprobs { choice: 0, value }));
        events.extend([StreamEvent::Finish { choice: 0, reason: "stop".into() }, StreamEvent::End]);
        let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 };
        s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 110 });
        s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 21 }), now_ms: 121 });
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
        s
    }

    fn key(s: &mut State, code: KeyCode) {
        s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }

    fn cursor(s: &State) -> Option<usize> {
        match s.overlays.last() {
            Some(Overlay::Probs { cursor, .. }) => Some(*cursor),
            _ => None,
        }
    }

    #[test]
    fn p_opens_the_heatmap_and_the_arrows_walk_the_tokens() {
        let lp = |t: &str, l: f64| json!({"token": t, "logprob": l, "top_logprobs": []});
        let mut s = state_with_reply("Hi there", vec![json!({"content": [lp("Hi", -0.01), lp(" there", -2.0)]})]);
        key(&mut s, KeyCode::Char('p'));
        assert_eq!(cursor(&s), Some(0));
        key(&mut s, KeyCode::Right);
        key(&mut s, KeyCode::Right);
        assert_eq!(cursor(&s), Some(1), "stops at the last token");
        key(&mut s, KeyCode::Home);
        key(&mut s, KeyCode::Char('n'));
        assert_eq!(cursor(&s), Some(1), "n: the next unsure token");
        key(&mut s, KeyCode::Esc);
        assert_eq!(cursor(&s), None);
    }

    #[test]
    fn without_logprobs_p_says_how_to_ask() {
        let mut s = state_with_reply("Hi", Vec::new());
        key(&mut s, KeyCode::Char('p'));
        assert_eq!(cursor(&s), None);
        assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("/logprobs")), "{:?}", s.flash);
    }

    #[test]
    fn the_command_sets_and_clears_the_request() {
        let mut s = state_with_reply("Hi", Vec::new());
        s.logprobs_command(Some("3"));
        assert_eq!(s.settings.logprobs, Some(3));
        s.logprobs_command(None);
        assert_eq!(s.settings.logprobs, Some(5));
        s.logprobs_command(Some("off"));
        assert_eq!(s.settings.logprobs, None);
        s.logprobs_command(Some("99"));
        assert_eq!(s.settings.logprobs, None);
    }
}
