//! Usage panel snapshots for a real llama.cpp reply: the recorded streams in
//! `tests/fixtures/sse/llamacpp_*.sse` are mapped frame by frame and fed to `State::apply` (no
//! network), so the panel shows palaver's own ttft and tok/s beside the server's `timings`,
//! with usage and without it. Regenerate with
//! `INSTA_UPDATE=always cargo test --test ui_usage_snapshots`, then read the diffs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

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
    state_for(api, "gemma-3-270m")
}

fn state_for(api: Api, model: &str) -> State {
    let target = TargetInfo::new("llama", model, api);
    let cfg = Config::parse("", std::path::Path::new("config.toml")).unwrap();
    let theme = Theme::load("dark", None, true).unwrap();
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    State::new(target, settings, cfg, theme, "dark")
}

/// Sends a prompt and streams the recorded body into the reply, one frame every 40 ms after a
/// 200 ms wait for the first.
fn replay(api: Api, fixture: &str) -> State {
    let path = format!("{}/tests/fixtures/sse/{fixture}", env!("CARGO_MANIFEST_DIR"));
    replay_body(state(api), api, &std::fs::read(path).unwrap())
}

/// Sends a prompt to `s` and streams `body` into the reply (see `replay`).
fn replay_body(mut s: State, api: Api, body: &[u8]) -> State {
    for c in "Name a colour.".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    let id = s.live.as_ref().map(|l| l.id).unwrap();
    let start = 1000;
    s.apply(Msg::RequestStarted { id, now_ms: start });
    let mut frames = Vec::new();
    let mut dec = SseDecoder::new();
    dec.push(body, &mut |e| frames.push(e.owned()));
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

/// A model the user set no price for: the panel's costs are the catalogue's, marked `~`.
#[test]
fn catalogue_prices_show_as_estimates() {
    let body = "data: {\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Teal.\"},\"finish_reason\":null}]}\n\n\
        data: {\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
        data: {\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":12000,\"completion_tokens\":800,\"total_tokens\":12800,\"prompt_tokens_details\":{\"cached_tokens\":8000}}}\n\n\
        data: [DONE]\n\n";
    let mut s = replay_body(state_for(Api::Chat, "gpt-4o-mini"), Api::Chat, body.as_bytes());
    // 4,000 × $0.15 + 8,000 × $0.075 + 800 × $0.60 per million.
    let screen = screen::text(&screen::settle(&mut s, 120, 40, &mut RenderCache::default()));
    assert!(screen.contains("cost                   ~$0.00168"), "{screen}");
    snap_all(&mut s, "usage_catalogue_estimate");
}

/// A flash too long for the room beside the reply's metrics takes the whole status line for
/// its few seconds, as the status bar promises, rather than losing its end: `/export html`
/// names the file it wrote, and a cut path is no use.
#[test]
fn a_long_flash_takes_the_whole_status_line_instead_of_being_cut() {
    let body = "data: {\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Teal.\"},\"finish_reason\":\"stop\"}]}\n\n\
        data: {\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":12000,\"completion_tokens\":800,\"total_tokens\":12800}}\n\n\
        data: [DONE]\n\n";
    let mut s = replay_body(state_for(Api::Chat, "gpt-4o-mini"), Api::Chat, body.as_bytes());
    let path = "/home/someone/.local/share/palaver/exports/conversation-20261126-161622-ff30-1795709812695.html";
    s.flash(format!("exported to {path}"));
    let screen = screen::text(&screen::settle(&mut s, 110, 30, &mut RenderCache::default()));
    let status = screen.lines().last().unwrap();
    assert!(status.contains(&format!("exported to {path}")), "the whole path is shown:\n{screen}");
    // One that needs the line hides the state for its few seconds, and where requests go does
    // not take the state's place (the tools setting is what must never go unnoticed).
    for c in "/vim".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    s.flash("queued: it goes out when this turn ends · Ctrl+S sends it now");
    let screen = screen::text(&screen::settle(&mut s, 110, 30, &mut RenderCache::default()));
    let status = screen.lines().last().unwrap();
    assert!(status.starts_with(" INSERT ·"), "the vim mode stays: {screen}");
    assert!(status.ends_with("Ctrl+S sends it now") && !status.contains("llama ·"), "{screen}");
    // A short flash still leaves the metrics and the context meter beside it.
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    s.flash("copied");
    let screen = screen::text(&screen::settle(&mut s, 110, 30, &mut RenderCache::default()));
    let status = screen.lines().last().unwrap();
    assert!(status.contains("copied") && status.contains("✓ done") && status.contains("ctx"), "{screen}");
}

/// With the usage panel hidden (a narrow screen, or `/panels`), the status bar carries the
/// conversation's cost; with `/schema` on, it says the answers must follow one.
#[test]
fn the_status_bar_shows_cost_without_the_panel_and_the_schema_when_on() {
    let body = "data: {\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Teal.\"},\"finish_reason\":\"stop\"}]}\n\n\
        data: {\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":12000,\"completion_tokens\":800,\"total_tokens\":12800}}\n\n\
        data: [DONE]\n\n";
    let mut s = replay_body(state_for(Api::Chat, "gpt-4o-mini"), Api::Chat, body.as_bytes());
    let status = |s: &mut State, w: u16, h: u16| {
        let screen = screen::text(&screen::settle(s, w, h, &mut RenderCache::default()));
        (screen.lines().last().unwrap_or_default().to_owned(), screen)
    };
    // The panel shows it: the bar does not repeat it.
    let (bar, screen) = status(&mut s, 120, 40);
    assert!(screen.contains("cost") && !bar.contains("~$"), "{screen}");
    // Hidden: the bar has it.
    let (bar, _) = status(&mut s, 90, 24);
    assert!(bar.contains("~$0.00228"), "{bar}");
    assert!(!bar.contains("schema"), "{bar}");
    for c in "/schema name, age int".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    s.flash = None;
    let (bar, screen) = status(&mut s, 90, 24);
    assert!(bar.contains("schema") && bar.contains("~$0.00228"), "{bar}");
    insta::assert_snapshot!("status_cost_and_schema_90x24", screen);
}
