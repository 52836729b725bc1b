//! The provider picker: no provider configured, and several presets' key variables set
//! (`GROQ_API_KEY`, `MISTRAL_API_KEY`…). The chat screen opens on the first and offers the others
//! in a small overlay; choosing one moves the chat to that preset (its endpoint, its default
//! model), as `--provider NAME` would have.

use super::effect::Effect;
use super::overlay::{Overlay, PickItem, Picker};
use super::state::{State, TargetInfo};
use super::transcript::NoticeKind;

impl State {
    /// Says which preset a key found (one), or opens the picker over `found` (preset, key
    /// variable), the first one in use (several).
    pub fn offer_providers(&mut self, found: &[(String, String)]) {
        if let [(name, var)] = found {
            let text = format!(
                "using the built-in `{name}` preset: {var} is set (no provider is configured; --provider NAME picks another)"
            );
            self.transcript.push_notice(NoticeKind::Info, text);
            return;
        }
        let items = found
            .iter()
            .map(|(name, var)| {
                let model = self.cfg.providers.get(name).and_then(|p| p.default_model.clone()).unwrap_or_default();
                PickItem { label: name.clone(), detail: format!("{var} is set · {model}"), value: name.clone() }
            })
            .collect();
        self.overlays.push(Overlay::Providers(Picker::new(items)));
        self.transcript.push_notice(
            NoticeKind::Info,
            format!(
                "no provider is configured and {} provider keys are set: pick one (↑↓ Enter); Esc stays on {}",
                found.len(),
                self.target.provider
            ),
        );
    }

    /// Moves the chat to preset `name` (adopted into the config by the CLI).
    pub(crate) fn use_provider(&mut self, name: &str, fx: &mut Vec<Effect>) {
        if name == self.target.provider {
            self.transcript.push_notice(NoticeKind::Info, format!("provider: {name}"));
            return;
        }
        let Some(p) = self.cfg.providers.get(name) else { return };
        let model = p.default_model.clone().or_else(|| p.models.first().cloned()).unwrap_or_default();
        let mut t = TargetInfo::new(name, model, p.api());
        t.include_usage = p.include_usage.unwrap_or(true);
        t.chain_responses = p.previous_response_id.unwrap_or(false);
        t.base_url = p.base_url.clone();
        t.key_shown = p.key_source().shell();
        t.attachments = crate::config::attachments::AttachmentPolicy {
            request_bytes: self.target.attachments.request_bytes,
            ..p.attachments
        };
        self.transcript.push_notice(NoticeKind::Info, format!("provider: {name} · model {}", t.model));
        self.target = t;
        fx.push(Effect::Compare(super::compare::CompareEffect::UseEndpoint { provider: name.to_owned() }));
        fx.extend(self.window_lookup());
    }
}

#[cfg(test)]
mod tests {
    use crate::app::effect::Effect;
    use crate::app::msg::Msg;
    use crate::app::overlay::Overlay;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    #[test]
    fn the_picker_moves_the_chat_to_the_chosen_preset() {
        let mut s = crate::app::test_state();
        for name in ["groq", "mistral"] {
            assert!(s.cfg.adopt_preset(name));
        }
        s.target.provider = "groq".into();
        s.offer_providers(&[("groq".into(), "GROQ_API_KEY".into()), ("mistral".into(), "MISTRAL_API_KEY".into())]);
        assert!(matches!(s.overlays.last(), Some(Overlay::Providers(_))));
        let key = |c| Msg::Key(KeyEvent::new(c, KeyModifiers::NONE));
        let _ = s.apply(key(KeyCode::Down));
        let fx = s.apply(key(KeyCode::Enter));
        assert!(s.overlays.is_empty());
        assert_eq!((s.target.provider.as_str(), s.target.model.as_str()), ("mistral", "mistral-small-latest"));
        assert!(!s.target.include_usage, "the preset's own settings come with it");
        let to = Effect::Compare(crate::app::compare::CompareEffect::UseEndpoint { provider: "mistral".into() });
        assert!(fx.contains(&to), "{fx:?}");
        // A hosted provider's catalogued model: the catalogue's window, no round trip to ask.
        assert!(s.context_window().is_some(), "the catalogue knows mistral-small-latest's window");
        assert!(!fx.iter().any(|e| matches!(e, Effect::LearnWindow(_))), "{fx:?}");
    }
}
