//! Unit tests of compare mode through `State::apply`: messages in, state and effects out.

use super::{ColumnView, CompareEffect, CompareMsg, CompareView};
use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::app::effect::Effect;
use crate::app::msg::{Msg, ViewReport};
use crate::app::state::{Focus, State};
use crate::app::test_state;
use crate::engine::message::{ErrorInfo, MessageStatus};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::Value;

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(s: &mut State, text: &str) -> Vec<Effect> {
    let mut fx = Vec::new();
    for c in text.chars() {
        fx.extend(s.apply(key(KeyCode::Char(c))));
    }
    fx
}

fn enter(s: &mut State, text: &str) -> Vec<Effect> {
    typed(s, text);
    s.apply(key(KeyCode::Enter))
}

/// (generation, column, id, provider, body) of every column request started.
fn starts(fx: &[Effect]) -> Vec<(u64, usize, u64, String, Value)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Compare(CompareEffect::Start { generation, column, id, provider, body, .. }) => {
                Some((*generation, *column, *id, provider.clone(), Value::clone(body)))
            }
            _ => None,
        })
        .collect()
}

fn wire(s: &mut State, generation: u64, column: usize, id: u64, event: WireEvent) {
    let msg = CompareMsg::Wire { generation, column, id, event: Box::new(event), now_ms: 500 };
    s.apply(Msg::Compare(msg));
}

fn text(s: &mut State, generation: u64, column: usize, id: u64, delta: &str) {
    let events = vec![StreamEvent::Text { choice: 0, delta: delta.into() }];
    wire(s, generation, column, id, WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 });
}

fn finish(s: &mut State, generation: u64, column: usize, id: u64) {
    let events = vec![StreamEvent::Finish { choice: 0, reason: "stop".into() }, StreamEvent::End];
    wire(s, generation, column, id, WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 20 });
    wire(s, generation, column, id, WireEvent::Closed { at_ms: 21 });
}

fn contents(body: &Value) -> Vec<String> {
    body["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap_or("").to_owned()).collect()
}

#[test]
fn compare_command_opens_columns_on_the_chat_provider() {
    let mut s = test_state();
    enter(&mut s, "/compare demo demo-reasoning demo/demo-slow");
    let cmp = s.compare.active.as_ref().unwrap();
    let models: Vec<&str> = cmp.columns.iter().map(|c| c.target.model.as_str()).collect();
    assert_eq!(models, ["demo", "demo-reasoning", "demo-slow"]);
    assert!(cmp.columns.iter().all(|c| c.target.provider == "demo"));
    // Too few models: an error, nothing opens.
    let mut s = test_state();
    enter(&mut s, "/compare demo");
    assert!(s.compare.active.is_none());
    assert!(s.flash.as_ref().is_some_and(|f| f.error));
}

#[test]
fn provider_prefixes_pick_configured_profiles() {
    let mut s = test_state();
    let toml = "[providers.local]\nbase_url = \"http://127.0.0.1:1/v1\"\napi = \"responses\"\ninclude_usage = false\n";
    s.cfg = crate::config::Config::parse(toml, std::path::Path::new("config.toml")).unwrap();
    enter(&mut s, "/compare local/m1 demo/m2 org/model-3");
    let cmp = s.compare.active.as_ref().unwrap();
    let t: Vec<(&str, &str, crate::api::Api, bool)> = cmp
        .columns
        .iter()
        .map(|c| (c.target.provider.as_str(), c.target.model.as_str(), c.target.api, c.target.include_usage))
        .collect();
    assert_eq!(
        t,
        [
            ("local", "m1", crate::api::Api::Responses, false),
            ("demo", "m2", crate::api::Api::Chat, true),
            // An unknown prefix is part of the model's name, on the chat's provider.
            ("demo", "org/model-3", crate::api::Api::Chat, true),
        ]
    );
    // Each column's request goes to its own provider.
    let fx = enter(&mut s, "hi");
    let providers: Vec<String> = starts(&fx).into_iter().map(|(_, _, _, p, _)| p).collect();
    assert_eq!(providers, ["local", "demo", "demo"]);
}

#[test]
fn a_bare_model_goes_to_the_one_provider_that_lists_it() {
    let mut s = test_state();
    let toml = "[providers.local]\nbase_url = \"http://127.0.0.1:1/v1\"\nmodels = [\"smollm2\"]\n\
                [providers.other]\nbase_url = \"http://127.0.0.1:2/v1\"\nmodels = [\"both\"]\n\
                [providers.third]\nbase_url = \"http://127.0.0.1:3/v1\"\nmodels = [\"both\"]\n";
    s.cfg = crate::config::Config::parse(toml, std::path::Path::new("config.toml")).unwrap();
    enter(&mut s, "/compare smollm2 both demo");
    let cmp = s.compare.active.as_ref().unwrap();
    let t: Vec<(&str, &str)> =
        cmp.columns.iter().map(|c| (c.target.provider.as_str(), c.target.model.as_str())).collect();
    // Listed by two providers: the chat's own (the command line asks for provider/model).
    assert_eq!(t, [("local", "smollm2"), ("demo", "both"), ("demo", "demo")]);
    let local = &cmp.columns[0].target;
    assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:1/v1"));
}

#[test]
fn every_column_gets_the_prompt_and_follow_ups_carry_its_own_history() {
    let mut s = test_state();
    enter(&mut s, "/compare demo other");
    let fx = enter(&mut s, "hello");
    let first = starts(&fx);
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].4["model"], "demo");
    assert_eq!(first[1].4["model"], "other");
    assert_eq!(contents(&first[0].4), ["hello"]);
    let g = first[0].0;
    text(&mut s, g, 0, first[0].2, "answer A");
    text(&mut s, g, 1, first[1].2, "answer B");
    finish(&mut s, g, 0, first[0].2);
    finish(&mut s, g, 1, first[1].2);
    assert!(!s.compare.is_live());
    let fx = enter(&mut s, "and then?");
    let second = starts(&fx);
    assert_eq!(contents(&second[0].4), ["hello", "answer A", "and then?"]);
    assert_eq!(contents(&second[1].4), ["hello", "answer B", "and then?"]);
}

#[test]
fn one_failing_column_leaves_the_others_streaming() {
    let mut s = test_state();
    enter(&mut s, "/compare demo demo-error");
    let fx = enter(&mut s, "go");
    let st = starts(&fx);
    let g = st[0].0;
    text(&mut s, g, 0, st[0].2, "partial ");
    let err = ErrorInfo { status: Some(429), message: "slow down".into(), kind: "http".into(), body: Value::Null };
    wire(&mut s, g, 1, st[1].2, WireEvent::Failed(err));
    let cmp = s.compare.active.as_ref().unwrap();
    assert!(cmp.columns[1].live.is_none());
    assert_eq!(cmp.columns[1].last_reply().unwrap().status, MessageStatus::Failed);
    assert!(cmp.columns[0].live.is_some(), "the other column keeps streaming");
    text(&mut s, g, 0, st[0].2, "more");
    assert_eq!(s.compare.active.as_ref().unwrap().columns[0].last_reply().unwrap().text(), "partial more");
    // Events of another compare (older generation) are dropped.
    text(&mut s, g + 7, 0, st[0].2, "stale");
    assert_eq!(s.compare.active.as_ref().unwrap().columns[0].last_reply().unwrap().text(), "partial more");
    // Retry the failed column: a new request for it alone, with its prompt.
    finish(&mut s, g, 0, st[0].2);
    s.apply(key(KeyCode::Tab));
    s.apply(key(KeyCode::Tab));
    assert_eq!(s.compare.active.as_ref().unwrap().focus, 1);
    let fx = s.apply(key(KeyCode::Char('r')));
    let again = starts(&fx);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].1, 1);
    assert_eq!(contents(&again[0].4), ["go"]);
}

#[test]
fn escape_cancels_every_column_and_keeps_partials() {
    let mut s = test_state();
    enter(&mut s, "/compare a b");
    let st = starts(&enter(&mut s, "go"));
    text(&mut s, st[0].0, 0, st[0].2, "half");
    let fx = s.apply(key(KeyCode::Esc));
    let cancels = fx.iter().filter(|e| matches!(e, Effect::Compare(CompareEffect::Cancel { .. }))).count();
    assert_eq!(cancels, 2);
    let cmp = s.compare.active.as_ref().unwrap();
    assert_eq!(cmp.columns[0].last_reply().unwrap().status, MessageStatus::Cancelled);
    assert_eq!(cmp.columns[0].last_reply().unwrap().text(), "half");
}

#[test]
fn keys_move_focus_toggle_views_and_fall_back_to_typing() {
    let mut s = test_state();
    enter(&mut s, "/compare a b c");
    assert_eq!(s.focus, Focus::Composer);
    s.apply(key(KeyCode::Tab));
    assert_eq!(s.focus, Focus::Transcript);
    s.apply(key(KeyCode::Tab));
    assert_eq!(s.compare.active.as_ref().unwrap().focus, 1);
    s.apply(Msg::Key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT)));
    s.apply(Msg::Key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT)));
    assert_eq!(s.compare.active.as_ref().unwrap().focus, 2, "focus wraps");
    s.apply(key(KeyCode::Char('f')));
    assert!(s.compare.active.as_ref().unwrap().full);
    s.apply(key(KeyCode::Esc));
    assert!(!s.compare.active.as_ref().unwrap().full, "Esc leaves full width first");
    s.apply(key(KeyCode::Char('d')));
    let d = s.compare.active.as_ref().unwrap().diff.unwrap();
    assert_eq!((d.a, d.b), (2, 0));
    s.apply(key(KeyCode::Tab));
    let d = s.compare.active.as_ref().unwrap().diff.unwrap();
    assert_eq!((d.a, d.b), (0, 1), "Tab moves the diff to the next pair");
    s.apply(key(KeyCode::Esc));
    assert!(s.compare.active.as_ref().unwrap().diff.is_none());
    s.apply(key(KeyCode::Char('s')));
    assert!(s.compare.active.as_ref().unwrap().sync);
    // An unbound letter goes back to the composer, typed.
    s.apply(key(KeyCode::Char('w')));
    assert_eq!(s.focus, Focus::Composer);
    assert_eq!(s.composer.text(), "w");
}

#[test]
fn keeping_a_column_continues_it_as_the_chat() {
    let mut s = test_state();
    enter(&mut s, "/compare demo demo-reasoning");
    let st = starts(&enter(&mut s, "q"));
    let g = st[0].0;
    for (i, a) in ["A", "B"].iter().enumerate() {
        text(&mut s, g, i, st[i].2, a);
        finish(&mut s, g, i, st[i].2);
    }
    s.apply(key(KeyCode::Tab));
    s.apply(key(KeyCode::Tab));
    let fx = s.apply(key(KeyCode::Char('k')));
    assert!(fx.contains(&Effect::Compare(CompareEffect::UseEndpoint { provider: "demo".into() })));
    assert!(s.compare.active.is_none());
    assert_eq!(s.compare.kept.len(), 1, "the other columns stay in memory");
    assert_eq!(s.target.model, "demo-reasoning");
    let fx = enter(&mut s, "next");
    let body = fx
        .iter()
        .find_map(|e| match e {
            Effect::StartRequest { body, .. } => Some(body.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(body["model"], "demo-reasoning");
    assert_eq!(contents(&body), ["q", "B", "next"]);
}

#[test]
fn synchronised_scrolling_keeps_the_same_turn_in_view() {
    let mut s = test_state();
    enter(&mut s, "/compare a b");
    let view = |column, lines, turns: Vec<usize>| ColumnView {
        column,
        area: (0, 0, 30, 10),
        lines,
        turns,
        ..ColumnView::default()
    };
    s.apply(Msg::Viewport(ViewReport {
        compare: CompareView {
            columns: vec![view(0, 100, vec![0, 40, 70]), view(1, 60, vec![0, 20, 45])],
            ..CompareView::default()
        },
        ..ViewReport::default()
    }));
    s.apply(key(KeyCode::Tab));
    s.apply(key(KeyCode::Char('s')));
    // Column 0 at its bottom (follow) → up 45 lines: top 45, 5 lines into turn 2 (40..70).
    s.compare_scroll(-45);
    let cmp = s.compare.active.as_ref().unwrap();
    assert_eq!(cmp.columns[0].scroll, Some(45));
    // Column 1's turn 2 is 20..45: the same fraction (5/30) of its 25 lines is 4 in.
    assert_eq!(cmp.columns[1].scroll, Some(24));
    s.compare_scroll(20);
    let cmp = s.compare.active.as_ref().unwrap();
    assert_eq!(cmp.columns[0].scroll, Some(65));
    assert_eq!(cmp.columns[1].scroll, Some(40));
    // Reaching a prompt in the focused column brings the other to the same prompt.
    s.compare_scroll(5);
    assert_eq!(s.compare.active.as_ref().unwrap().columns[1].scroll, Some(45));
    s.compare_scroll_end(true);
    let cmp = s.compare.active.as_ref().unwrap();
    assert!(cmp.columns.iter().all(|c| c.scroll.is_none()), "the bottom follows again, in every column");
}

#[test]
fn closing_returns_to_the_chat_untouched() {
    let mut s = test_state();
    enter(&mut s, "/compare a b");
    enter(&mut s, "/compare off");
    assert!(s.compare.active.is_none());
    assert_eq!(s.compare.kept.len(), 1);
    assert!(s.transcript.cells.iter().all(|c| c.message().is_none()));
}

#[test]
fn a_click_focuses_the_column_under_it_and_the_wheel_scrolls_it() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut s = test_state();
    enter(&mut s, "/compare a b");
    let view = |column, x| ColumnView {
        column,
        area: (x + 2, 4, 26, 10),
        frame: (x, 0, 30, 15),
        lines: 40,
        top: 30,
        ..ColumnView::default()
    };
    s.apply(Msg::Viewport(ViewReport {
        compare: CompareView { columns: vec![view(0, 0), view(1, 30)], ..CompareView::default() },
        ..ViewReport::default()
    }));
    let mouse = |kind, column, row| Msg::Mouse(MouseEvent { kind, column, row, modifiers: KeyModifiers::NONE });
    s.apply(mouse(MouseEventKind::Down(MouseButton::Left), 40, 1));
    assert_eq!(s.compare.active.as_ref().unwrap().focus, 1);
    assert_eq!(s.focus, Focus::Transcript);
    s.apply(mouse(MouseEventKind::ScrollUp, 5, 8));
    let cmp = s.compare.active.as_ref().unwrap();
    assert_eq!(cmp.focus, 0, "the wheel acts on the column under it");
    assert_eq!(cmp.columns[0].scroll, Some(27));
    assert_eq!(cmp.columns[1].scroll, None);
}

fn png() -> crate::engine::attachment::Attachment {
    let mut bytes = Vec::new();
    image::RgbImage::new(4, 4).write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).unwrap();
    crate::engine::attachment::Attachment::from_bytes("p.png", bytes).unwrap()
}

fn attach(s: &mut State) {
    let loaded = crate::app::attach::AttachMsg::Loaded { spec: "p.png".into(), result: Ok(png()), paste: None };
    s.apply(Msg::Attach(loaded));
}

fn no_images(s: &mut State, column: usize) {
    let col = s.compare.active.as_mut().unwrap().columns.get_mut(column).unwrap();
    col.target.attachments.images = crate::config::attachments::ImagesSetting::No;
}

#[test]
fn attachments_go_to_every_column_that_takes_them() {
    let mut s = test_state();
    enter(&mut s, "/compare demo demo-vision");
    no_images(&mut s, 0);
    attach(&mut s);
    assert_eq!(s.attachments.len(), 1, "one column takes it");
    let note = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
    assert!(note.contains("sent without it to demo"), "{note}");
    let fx = enter(&mut s, "what is this?");
    let started = starts(&fx);
    assert_eq!(started.len(), 2, "every column answers");
    let parts = |body: &Value| body["messages"][0]["content"].as_array().map_or(0, Vec::len);
    assert_eq!(parts(&started[0].4), 0, "column A got the text alone: {}", started[0].4);
    assert_eq!(parts(&started[1].4), 2, "column B got the text and the image: {}", started[1].4);
    assert!(s.attachments.is_empty());
    let cmp = s.compare.active.as_ref().unwrap();
    let said = cmp.columns[0].transcript.cells.iter().any(|c| match c {
        crate::app::transcript::Cell::Notice(n) => n.text.contains("p.png not sent to this model"),
        crate::app::transcript::Cell::Message(_) => false,
    });
    assert!(said, "the column says what its model did not get");
}

#[test]
fn an_attachment_no_column_can_take_is_refused_when_attached() {
    let mut s = test_state();
    enter(&mut s, "/compare demo demo-vision");
    no_images(&mut s, 0);
    no_images(&mut s, 1);
    attach(&mut s);
    assert!(s.attachments.is_empty());
    let f = s.flash.clone().unwrap();
    assert!(f.error && f.text.contains("no column can take it"), "{}", f.text);
}

#[test]
fn f3_shows_each_columns_round_trips() {
    let mut s = test_state();
    enter(&mut s, "/compare demo demo-reasoning");
    let fx = enter(&mut s, "hello");
    let started = starts(&fx);
    s.apply(key(KeyCode::F(3)));
    let src = s.flow_source();
    assert_eq!(src.label.as_deref(), Some("column A · demo"));
    let steps = crate::app::inspector::steps(&s);
    let request = steps.iter().find(|x| x.kind == crate::app::inspector::StepKind::Request).unwrap();
    assert_eq!(request.id, started[0].2);
    let raw = crate::app::inspector::step_text(&s, request);
    assert!(raw.contains("\"model\": \"demo\""), "{raw}");
    s.apply(key(KeyCode::Tab));
    assert_eq!(s.flow_source().label.as_deref(), Some("column B · demo-reasoning"));
    let steps = crate::app::inspector::steps(&s);
    let request = steps.iter().find(|x| x.kind == crate::app::inspector::StepKind::Request).unwrap();
    let raw = crate::app::inspector::step_text(&s, request);
    assert!(raw.contains("\"model\": \"demo-reasoning\""), "the second column's own request: {raw}");
}

#[test]
fn f3_in_the_arena_waits_for_the_vote() {
    let mut s = test_state();
    let targets = vec![
        crate::app::state::TargetInfo::new("demo", "demo", crate::api::Api::Chat),
        crate::app::state::TargetInfo::new("demo", "demo-reasoning", crate::api::Api::Chat),
    ];
    s.open_arena(targets, 7).unwrap();
    enter(&mut s, "hello");
    s.apply(key(KeyCode::F(3)));
    let src = s.flow_source();
    assert!(src.hidden);
    assert_eq!(src.label.as_deref(), Some("column A"), "no model name before the vote");
    assert!(crate::app::inspector::steps(&s).is_empty(), "requests and frames would name the models");
}

#[test]
fn f2_in_a_compare_hides_and_shows_its_metrics_strip() {
    let mut s = test_state();
    enter(&mut s, "/compare demo demo-reasoning");
    s.apply(key(KeyCode::F(2)));
    assert!(s.compare.strip_hidden);
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("metrics strip hidden")));
    s.apply(key(KeyCode::F(2)));
    assert!(!s.compare.strip_hidden);
}
