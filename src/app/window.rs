//! When the chat screen asks the server for the model's context window: at start and on
//! `/model`, in the background (`Effect::LearnWindow`); what it says joins `Config::served`,
//! which `State::context_window` (the meter, the pre-send check, auto-compaction) reads.

use super::effect::Effect;
use super::state::State;

impl State {
    /// The lookup to start, if any: not for the demo (no base URL); otherwise as
    /// `Config::asks_server_for_window` says.
    #[must_use]
    pub fn window_lookup(&self) -> Option<Effect> {
        let m = &self.target.model;
        let url = self.target.base_url.as_deref()?;
        self.cfg.asks_server_for_window(m, url).then(|| Effect::LearnWindow(m.clone()))
    }
}

#[cfg(test)]
mod tests {
    use crate::api::window::ServedWindow;
    use crate::app::effect::Effect;
    use crate::app::msg::Msg;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    #[test]
    fn the_server_is_asked_once_and_its_window_feeds_the_meter() {
        let mut s = crate::app::test_state();
        s.target.model = "smollm2".into();
        // The demo has no base URL: nothing to ask.
        assert_eq!(s.window_lookup(), None);
        s.target.base_url = Some("http://127.0.0.1:1/v1".into());
        assert_eq!(s.window_lookup(), Some(Effect::LearnWindow("smollm2".into())));
        assert_eq!(s.context_window(), None);
        let window = ServedWindow { tokens: 4096, source: "llama.cpp /v1/models" };
        let _ = s.apply(Msg::Window { model: "smollm2".into(), window });
        assert_eq!(s.context_window(), Some(4096));
        assert_eq!(s.window_lookup(), None);
        // `/model` asks again for the new model.
        for c in "/model other".chars() {
            let _ = s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
        }
        let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        assert!(fx.contains(&Effect::LearnWindow("other".into())), "{fx:?}");
    }
}
