//! Screen snapshot of the provider picker (issue 40 §4): no provider configured and several
//! presets' keys set, the chat screen opens on the first with the others offered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use palaver::api::Api;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::target::TurnSettings;
use palaver::ui::RenderCache;
use palaver::ui::theme::Theme;

#[test]
fn the_provider_picker_names_each_key_and_its_model() {
    let mut cfg = Config::default();
    for name in ["groq", "mistral", "deepseek"] {
        assert!(cfg.adopt_preset(name));
    }
    let mut target = TargetInfo::new("groq", "openai/gpt-oss-120b", Api::Chat);
    target.base_url = Some("https://api.groq.com/openai/v1".into());
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    let mut s = State::new(target, settings, cfg, Theme::load("dark", None, true).unwrap(), "dark");
    let found: Vec<(String, String)> =
        [("groq", "GROQ_API_KEY"), ("mistral", "MISTRAL_API_KEY"), ("deepseek", "DEEPSEEK_API_KEY")]
            .iter()
            .map(|(p, v)| ((*p).to_owned(), (*v).to_owned()))
            .collect();
    s.offer_providers(&found);
    let shown = screen::text(&screen::settle(&mut s, 80, 24, &mut RenderCache::default()));
    insta::assert_snapshot!("provider_picker_80x24", shown);
    // Typing filters it, as every picker does.
    for c in "mis".chars() {
        s.apply(Msg::Key(crossterm::event::KeyEvent::new(
            crossterm::event::KeyCode::Char(c),
            crossterm::event::KeyModifiers::NONE,
        )));
    }
    let shown = screen::text(&screen::settle(&mut s, 80, 24, &mut RenderCache::default()));
    assert!(shown.contains("mistral") && !shown.contains("DEEPSEEK_API_KEY"), "{shown}");
}
