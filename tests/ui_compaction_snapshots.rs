//! Screen snapshots of the context meter (below and past 80 % of the window, where it takes the
//! theme's warning colour) and of the compaction card (folded over the originals, and opened).
//! States are built by feeding `Msg`s to `State::apply`; no network.
//! Regenerate with `INSTA_UPDATE=always cargo test --test ui_compaction_snapshots`, then read them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::{Effect, Msg, State, TargetInfo};
use palaver::config::{AutoCompact, Config, ModelFacts};
use palaver::engine::target::TurnSettings;
use palaver::ui::RenderCache;
use palaver::ui::theme::{Role, Theme};
use serde_json::json;

fn state(window: u64, auto: bool) -> State {
    let mut cfg = Config::default();
    cfg.models.insert("demo".into(), ModelFacts { context_window: Some(window), ..ModelFacts::default() });
    if !auto {
        cfg.auto_compact = Some(AutoCompact::On(false));
    }
    // In colour: the meter's warning is a colour.
    let theme = Theme::load("dark", None, false).unwrap();
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    State::new(TargetInfo::new("demo", "demo", Api::Chat), settings, cfg, theme, "dark")
}

fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
    s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

/// Types `text` and presses Enter; returns the id of the reply that starts.
fn send(s: &mut State, text: &str) -> u64 {
    for c in text.chars() {
        key(s, KeyCode::Char(c));
    }
    key(s, KeyCode::Enter);
    s.live.as_ref().map(|l| l.id).expect("a reply started")
}

/// Reply `id` answers `text` and ends, with usage (prompt, completion).
fn answer(s: &mut State, id: u64, text: &str, usage: (u64, u64)) {
    answer_as(s, id, text, usage, "stop");
}

/// Reply `id` answers `text` and ends with finish reason `reason`.
fn answer_as(s: &mut State, id: u64, text: &str, usage: (u64, u64), reason: &str) {
    let events = vec![
        StreamEvent::Text { choice: 0, delta: text.into() },
        StreamEvent::Usage(json!({"prompt_tokens": usage.0, "completion_tokens": usage.1,
            "total_tokens": usage.0 + usage.1})),
        StreamEvent::Finish { choice: 0, reason: reason.into() },
    ];
    let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 };
    s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: 1010 });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 20 }), now_ms: 1020 });
}

/// Three turns, the last one's request counted at `prompt` + 40 tokens.
fn three_turns(s: &mut State, prompt: u64) {
    for (i, (q, a)) in [("Where is Lyon?", "In France."), ("And Turin?", "In Italy."), ("Which is bigger?", "Lyon.")]
        .into_iter()
        .enumerate()
    {
        let id = send(s, q);
        answer(s, id, a, (prompt / 3 * (i as u64 + 1), 40));
    }
}

/// The status bar row of the screen.
fn status_row(buf: &ratatui::buffer::Buffer) -> u16 {
    buf.area.height - 1
}

/// The style of the first cell of `needle` on the status bar.
fn style_of(buf: &ratatui::buffer::Buffer, needle: &str) -> ratatui::style::Style {
    let y = status_row(buf);
    let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
    let at = row.find(needle).unwrap_or_else(|| panic!("{needle} not on the status bar: {row}"));
    let x = row[..at].chars().count() as u16;
    buf[(x, y)].style()
}

#[test]
fn the_meter_shows_the_next_request_against_the_window() {
    let mut s = state(8_000, false);
    three_turns(&mut s, 1_200);
    let mut cache = RenderCache::default();
    let buf = screen::settle(&mut s, 80, 24, &mut cache);
    insta::assert_snapshot!("meter_normal_80x24", screen::text(&buf));
    let warn = s.theme.style(Role::Warning).fg;
    assert!(warn.is_some());
    assert_ne!(style_of(&buf, "ctx 16%").fg, warn, "under 80 %: not a warning");
    // The draft counts before it is sent.
    for c in "x".repeat(400).chars() {
        key(&mut s, KeyCode::Char(c));
    }
    let buf = screen::settle(&mut s, 80, 24, &mut cache);
    assert!(screen::text(&buf).contains("ctx 17%"), "{}", screen::text(&buf));
}

#[test]
fn past_eighty_percent_the_meter_warns() {
    let mut s = state(8_000, false);
    three_turns(&mut s, 6_600);
    let mut cache = RenderCache::default();
    let buf = screen::settle(&mut s, 80, 24, &mut cache);
    insta::assert_snapshot!("meter_warning_80x24", screen::text(&buf));
    assert_eq!(style_of(&buf, "ctx 83%").fg, s.theme.style(Role::Warning).fg);
}

#[test]
fn the_compaction_card_folds_the_originals_and_opens_them() {
    for (w, h) in [(80, 24), (120, 40)] {
        let mut s = state(8_000, true);
        three_turns(&mut s, 1_200);
        let id = send(&mut s, "/compact keep the city names");
        answer(&mut s, id, "- Lyon is in France, Turin in Italy.\n- Lyon is the bigger city.", (1_300, 18));
        let mut cache = RenderCache::default();
        let buf = screen::settle(&mut s, w, h, &mut cache);
        let folded = screen::text(&buf);
        assert!(!folded.contains("Where is Lyon?"), "the originals are folded:\n{folded}");
        assert!(folded.contains("3 turns summarised · 1,240 → 18 tokens"), "{folded}");
        insta::assert_snapshot!(format!("card_folded_{w}x{h}"), folded);
        // Select the card (alt+up from the composer) and open it.
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
        assert_eq!(s.selected, Some(id));
        key(&mut s, KeyCode::Enter);
        let buf = screen::settle(&mut s, w, h, &mut cache);
        let open = screen::text(&buf);
        assert!(open.contains("the originals are shown above"), "{open}");
        if h >= 40 {
            assert!(open.contains("Where is Lyon?"), "the originals are back:\n{open}");
        }
        insta::assert_snapshot!(format!("card_open_{w}x{h}"), open);
    }
}

#[test]
fn a_summary_cut_by_its_budget_is_kept_and_says_so() {
    let mut s = state(8_000, true);
    three_turns(&mut s, 1_200);
    let id = send(&mut s, "/compact");
    answer_as(&mut s, id, "- Lyon is in France, Turin in Italy.\n- Lyon is the", (1_300, 1_024), "length");
    let mut cache = RenderCache::default();
    let buf = screen::settle(&mut s, 80, 24, &mut cache);
    let text = screen::text(&buf);
    assert!(!text.contains("Where is Lyon?"), "the cut summary took effect: the originals are folded:\n{text}");
    assert!(text.contains("1,240 → 1,024 tokens · cut at its token"), "{text}");
    assert!(text.contains("ctx 13%"), "the meter counts the summary at its length:\n{text}");
    insta::assert_snapshot!("card_cut_80x24", text);
}
