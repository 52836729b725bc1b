//! An answer checked against a schema (`/schema`, `--schema`) drawn as JSON: snapshots of a
//! valid answer unfolded and folded (Enter on the selected message), and of an invalid one
//! with the failing value's line marked, at 80×24 and 120×40. The tests' theme has NO_COLOR,
//! so the marks must read without colour. Regenerate with
//! `INSTA_UPDATE=always cargo test --test ui_json_snapshots`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::structured::Structured;
use palaver::engine::target::TurnSettings;
use palaver::ui::{RenderCache, theme::Theme};

const VALID: &str = r#"{"name": "Ada Lovelace", "age": 36, "tags": ["math", "engines", "poetry"], "home": {"city": "London", "street": "St James's Square"}}"#;
const INVALID: &str = r#"{"name": "Ada Lovelace", "age": "thirty-six", "tags": ["math"], "home": {"city": "London"}}"#;

const SCHEMA: &str = r#"{"type": "object", "required": ["name", "age"], "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}, "home": {"type": "object"}}}"#;

fn key(s: &mut State, code: KeyCode) {
    s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

/// A chat with a schema, one prompt, and `answer` as the finished reply.
fn answered(answer: &str) -> State {
    let target = TargetInfo::new("demo", "demo", Api::Chat);
    let theme = Theme::load("dark", None, true).unwrap();
    let schema = Structured::from_text(SCHEMA, None).unwrap();
    let settings = TurnSettings { stream: true, schema: Some(schema), ..TurnSettings::default() };
    let mut s = State::new(target, settings, Config::default(), theme, "dark");
    for c in "a person".chars() {
        key(&mut s, KeyCode::Char(c));
    }
    key(&mut s, KeyCode::Enter);
    let id = s.live.as_ref().map(|l| l.id).unwrap();
    s.apply(Msg::RequestStarted { id, now_ms: 1000 });
    let events = vec![
        StreamEvent::Text { choice: 0, delta: answer.into() },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 200 };
    s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 1200 });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 300 }), now_ms: 1300 });
    s
}

fn draw(s: &mut State, w: u16, h: u16, cache: &mut RenderCache) -> String {
    screen::text(&screen::settle(s, w, h, cache))
}

#[test]
fn a_valid_answer_is_json_unfolded_then_folded() {
    for (w, h) in [(80, 24), (120, 40)] {
        let mut s = answered(VALID);
        let mut cache = RenderCache::default();
        let open = draw(&mut s, w, h, &mut cache);
        assert!(open.contains("\"city\": \"London\","), "{open}");
        assert!(open.contains("✓ the answer follows the schema"), "{open}");
        assert!(!open.contains('✗'), "{open}");
        insta::assert_snapshot!(format!("json_valid_{w}x{h}"), open);
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
        key(&mut s, KeyCode::Enter);
        let folded = draw(&mut s, w, h, &mut cache);
        assert!(folded.contains("\"tags\": […] 3 items"), "{folded}");
        assert!(folded.contains("\"home\": {…},"), "{folded}");
        assert!(!folded.contains("London"), "{folded}");
        assert!(folded.contains("✓ the answer follows the schema"), "{folded}");
        insta::assert_snapshot!(format!("json_valid_folded_{w}x{h}"), folded);
        key(&mut s, KeyCode::Enter);
        assert!(draw(&mut s, w, h, &mut cache).contains("\"city\": \"London\","), "Enter again unfolds");
    }
}

#[test]
fn an_invalid_answer_marks_the_failing_line() {
    for (w, h) in [(80, 24), (120, 40)] {
        let mut s = answered(INVALID);
        let shown = draw(&mut s, w, h, &mut RenderCache::default());
        let marked: Vec<&str> = shown.lines().filter(|l| l.contains("✗ ")).collect();
        assert!(marked.iter().any(|l| l.contains("✗   \"age\": \"thirty-six\",")), "{shown}");
        assert!(shown.contains("↑ at /age:"), "{shown}");
        assert!(shown.contains("✗ the answer does not follow the schema at /age"), "{shown}");
        insta::assert_snapshot!(format!("json_invalid_{w}x{h}"), shown);
    }
}
