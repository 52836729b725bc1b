//! Usage panel snapshots for a real llama.cpp reply: the recorded streams in
//! `tests/fixtures/sse/llamacpp_*.sse` are mapped frame by frame and fed to `State::apply` (no
//! network), so the panel shows palaver's own ttft and tok/s beside the server's `timings`,
//! with usage and without it. Regenerate with
//! `INSTA_UPDATE=always cargo test --test ui_usage_snapshots`, then read the diffs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::client::WireEvent;
use palaver::api::sse::SseDecoder;
use palaver::api::{Api, Mapper};
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::target::TurnSettings;
use palaver::ui::{RenderCache, theme::Theme};

/// 100 columns is the narrowest screen that shows the panels by default (26 columns inside).
const SIZES: [(u16, u16); 2] = [(100, 32), (120, 40)];

fn state(api: Api) -> State {
    let target = TargetInfo::new("llama", "gemma-3-270m", api);
    let cfg = Config::parse("", std::path::Path::new("config.toml")).unwrap();
    let theme = Theme::load("dark", None, true).unwrap();
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    State::new(target, settings, cfg, theme, "dark")
}

/// Sends a prompt and streams the recorded body into the reply, one frame every 40 ms after a
/// 200 ms wait for the first.
fn replay(api: Api, fixture: &str) -> State {
    let mut s = state(api);
    for c in "Name a colour.".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    let id = s.live.as_ref().map(|l| l.id).unwrap();
    let start = 1000;
    s.apply(Msg::RequestStarted { id, now_ms: start });
    let path = format!("{}/tests/fixtures/sse/{fixture}", env!("CARGO_MANIFEST_DIR"));
    let body = std::fs::read(path).unwrap();
    let mut frames = Vec::new();
    let mut dec = SseDecoder::new();
    dec.push(&body, &mut |e| frames.push(e.owned()));
    dec.finish(&mut |e| frames.push(e.owned()));
    let mut mapper = Mapper::new(api);
    let mut at_ms = 200;
    for f in frames {
        let mut events = Vec::new();
        mapper.map(&f.event, f.data.as_bytes(), &mut events);
        let chunk = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms };
        s.apply(Msg::Wire { id, event: Box::new(chunk), now_ms: start + at_ms });
        at_ms += 40;
    }
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms }), now_ms: start + at_ms });
    s
}

fn snap_all(s: &mut State, name: &str) {
    for (w, h) in SIZES {
        let screen = screen::text(&screen::settle(s, w, h, &mut RenderCache::default()));
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

#[test]
fn llamacpp_usage_and_server_timings() {
    snap_all(&mut replay(Api::Chat, "llamacpp_chat_usage_timings.sse"), "usage_llamacpp_timings");
}

#[test]
fn llamacpp_timings_without_usage() {
    snap_all(&mut replay(Api::Chat, "llamacpp_chat_timings.sse"), "usage_llamacpp_timings_only");
}
