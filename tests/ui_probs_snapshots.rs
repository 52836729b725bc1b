//! The token-probability heatmap (`p` on a reply with logprobs): snapshots at 80×24 and
//! 120×40, and the ranks told apart by text attributes alone (the tests' theme has NO_COLOR).
//! Regenerate with `INSTA_UPDATE=always cargo test --test ui_probs_snapshots`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::target::TurnSettings;
use palaver::ui::{RenderCache, theme::Theme};
use ratatui::style::Modifier;
use serde_json::{Value, json};

/// (token, logprob): one of each rank, a newline, and a long tail to wrap.
const TOKENS: &[(&str, f64)] = &[
    ("The", -0.01),
    (" capital", -0.2),
    (" of", -0.02),
    (" France", -0.8),
    (" is", -0.05),
    (" Paris", -1.9),
    (".", -0.01),
    ("\n", -0.3),
    ("It", -0.1),
    (" sits", -1.1),
    (" on", -0.02),
    (" the", -0.01),
    (" Seine", -0.4),
    (" river", -2.5),
    (".", -0.01),
];

fn key(s: &mut State, code: KeyCode, mods: KeyModifiers) {
    s.apply(Msg::Key(KeyEvent::new(code, mods)));
}

fn entry(i: usize, (token, lp): (&str, f64)) -> Value {
    let alts = [" Lyon", " Marseille", " Nice"];
    let mut top = vec![json!({"token": token, "logprob": lp})];
    top.extend(
        alts.iter().enumerate().map(|(k, a)| json!({"token": a, "logprob": lp - 0.7 - k as f64 - i as f64 * 0.01})),
    );
    json!({"token": token, "logprob": lp, "top_logprobs": top})
}

/// A chat with one reply carrying logprobs, the reply selected and its heatmap open.
fn heatmap() -> State {
    let target = TargetInfo::new("demo", "demo", Api::Chat);
    let theme = Theme::load("dark", None, true).unwrap();
    let settings = TurnSettings { stream: true, logprobs: Some(4), ..TurnSettings::default() };
    let mut s = State::new(target, settings, Config::default(), theme, "dark");
    for c in "Tell me about Paris".chars() {
        key(&mut s, KeyCode::Char(c), KeyModifiers::NONE);
    }
    key(&mut s, KeyCode::Enter, KeyModifiers::NONE);
    let id = s.live.as_ref().map(|l| l.id).unwrap();
    s.apply(Msg::RequestStarted { id, now_ms: 1000 });
    let text: String = TOKENS.iter().map(|t| t.0).collect();
    let content: Vec<Value> = TOKENS.iter().enumerate().map(|(i, t)| entry(i, *t)).collect();
    let events = vec![
        StreamEvent::Text { choice: 0, delta: text.into() },
        StreamEvent::Logprobs { choice: 0, value: json!({"content": content, "refusal": null}) },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 200 };
    s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 1200 });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 300 }), now_ms: 1300 });
    key(&mut s, KeyCode::Up, KeyModifiers::ALT);
    key(&mut s, KeyCode::Char('p'), KeyModifiers::NONE);
    // The cursor on " Paris", the least sure token of the first sentence.
    for _ in 0..5 {
        key(&mut s, KeyCode::Right, KeyModifiers::NONE);
    }
    s
}

#[test]
fn heatmap_snapshots() {
    for (w, h) in [(80, 24), (120, 40)] {
        let mut s = heatmap();
        let buf = screen::settle(&mut s, w, h, &mut RenderCache::default());
        insta::assert_snapshot!(format!("probs_heatmap_{w}x{h}"), screen::text(&buf));
    }
}

/// Where `needle` starts on screen.
fn find(buf: &ratatui::buffer::Buffer, needle: &str) -> (u16, u16) {
    let text = screen::text(buf);
    for (y, line) in text.lines().enumerate() {
        if let Some(byte) = line.find(needle) {
            let x = line[..byte].chars().count();
            return (x as u16, y as u16);
        }
    }
    panic!("`{needle}` not on screen:\n{text}");
}

#[test]
fn without_colour_each_rank_has_its_own_attributes() {
    let mut s = heatmap();
    let buf = screen::settle(&mut s, 120, 40, &mut RenderCache::default());
    let attrs = |needle: &str| {
        let (x, y) = find(&buf, needle);
        let cell = &buf[(x + 1, y)];
        assert_eq!(cell.fg, ratatui::style::Color::Reset, "NO_COLOR: no colour on `{needle}`");
        cell.modifier
    };
    // ≥ 90 %: plain; 60–90 %: underlined; 30–60 %: bold underlined; < 30 %: reversed.
    assert!(!attrs("The capital").intersects(Modifier::UNDERLINED | Modifier::REVERSED | Modifier::BOLD));
    assert_eq!(attrs(" capital") & (Modifier::UNDERLINED | Modifier::BOLD), Modifier::UNDERLINED);
    assert!(attrs(" France").contains(Modifier::UNDERLINED | Modifier::BOLD));
    assert!(attrs(" river").contains(Modifier::REVERSED));
    // The cursor is bracketed, whatever the colours.
    assert!(screen::text(&buf).contains("⟦ Paris⟧"));
}
