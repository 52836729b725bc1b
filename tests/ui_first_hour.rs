//! Screens of issue 14's first hour over `TestBackend`: the welcome screen on an unasked-for
//! demo, a terminal too small, prose held to a readable width on a wide terminal, a long prompt
//! folded, a big paste as a chip, and a reply stopped by the content filter in the status bar.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::message::{Message, MessageStatus, Role};
use palaver::engine::target::TurnSettings;
use palaver::ui::{RenderCache, theme::Theme};

fn state(config: &str) -> State {
    let target = TargetInfo::new("demo", "demo", Api::Chat);
    let cfg = Config::parse(config, std::path::Path::new("config.toml")).unwrap();
    let theme = Theme::load("dark", None, true).unwrap();
    State::new(target, TurnSettings { stream: true, ..TurnSettings::default() }, cfg, theme, "dark")
}

fn render(s: &mut State, w: u16, h: u16) -> String {
    screen::text(&screen::settle(s, w, h, &mut RenderCache::default()))
}

fn reply(text: &str) -> Message {
    let mut m = Message::with_text(Role::Assistant, text);
    m.model = Some("demo".into());
    m.status = MessageStatus::Complete;
    m
}

#[test]
fn the_welcome_screen_says_why_the_demo_answers() {
    let mut s = state("");
    s.demo_fallback = Some("OPENAI_API_KEY is not set and there is no /home/u/.config/palaver/config.toml".into());
    insta::assert_snapshot!("welcome_demo_fallback_80x24", render(&mut s, 80, 24));
}

#[test]
fn a_terminal_too_small_says_so() {
    let mut s = state("");
    s.transcript.push_message(Message::user("hello"));
    let screen = render(&mut s, 18, 6);
    assert!(screen.contains("too small"), "{screen}");
}

#[test]
fn prose_keeps_a_readable_width_on_a_wide_terminal() {
    let long = "word ".repeat(200);
    let mut s = state("");
    s.panels = Some(false);
    s.transcript.push_message(reply(&long));
    let screen = render(&mut s, 250, 30);
    let widest = screen
        .lines()
        .filter(|l| l.contains("word"))
        .map(|l| l.trim_end_matches(['│', ' ']).chars().count())
        .max()
        .unwrap();
    assert!(widest <= 2 + 3 + 100, "prose wider than 100 columns: {widest}");
    let mut s = state("prose_width = 0\n");
    s.panels = Some(false);
    s.transcript.push_message(reply(&long));
    let screen = render(&mut s, 250, 30);
    let widest = screen
        .lines()
        .filter(|l| l.contains("word"))
        .map(|l| l.trim_end_matches(['│', ' ']).chars().count())
        .max()
        .unwrap();
    assert!(widest > 200, "prose_width = 0 is the full width: {widest}");
}

#[test]
fn a_long_prompt_is_folded_after_a_screenful_and_enter_opens_it() {
    let mut s = state("");
    let text: String = (0..200).map(|i| format!("line {i}\n")).collect();
    s.transcript.push_message(Message::user(&text));
    s.transcript.push_message(reply("Short answer."));
    let screen = render(&mut s, 80, 24);
    assert!(screen.contains("more lines · select the message"), "{screen}");
    insta::assert_snapshot!("long_prompt_folded_80x24", screen);
    // Alt+↑ twice selects the prompt; Enter shows it all.
    for _ in 0..2 {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    s.apply(Msg::Key(KeyEvent::new(KeyCode::End, KeyModifiers::CONTROL)));
    let screen = render(&mut s, 80, 24);
    assert!(screen.contains("folds this message") && screen.contains("line 199"), "{screen}");
}

#[test]
fn a_big_paste_shows_its_size_and_tokens_before_sending() {
    let mut s = state("");
    let text: String = (0..2000).map(|i| format!("row {i} of a pasted log\n")).collect();
    s.apply(Msg::Paste(text));
    insta::assert_snapshot!("big_paste_chip_80x24", render(&mut s, 80, 24));
}

#[test]
fn a_reply_stopped_by_the_content_filter_is_not_a_green_done() {
    let mut s = state("");
    s.transcript.push_message(Message::user("tell me"));
    let mut m = reply("Once upon");
    m.main_mut().finish_reason = Some("content_filter".into());
    s.transcript.push_message(m);
    let screen = render(&mut s, 80, 24);
    let status = screen.lines().last().unwrap();
    assert!(status.contains("⊘ filtered") && !status.contains("✓ done"), "{status}");
}
