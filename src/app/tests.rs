//! Unit tests of `State::apply`: feeding messages, checking state and effects. No I/O.

use super::effect::Effect;
use super::msg::Msg;
use super::state::{Focus, State};
use super::test_state;
use crate::api::Api;
use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::engine::message::{ErrorInfo, MessageStatus, Role};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        s.apply(key(KeyCode::Char(c)));
    }
}

/// Types `text` and presses Enter; returns the effects of Enter.
fn send(s: &mut State, text: &str) -> Vec<Effect> {
    typed(s, text);
    s.apply(key(KeyCode::Enter))
}

fn started(fx: &[Effect]) -> (u64, serde_json::Value) {
    fx.iter()
        .find_map(|e| match e {
            Effect::StartRequest { id, body, .. } => Some((*id, serde_json::Value::clone(body))),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no request in {fx:?}"))
}

fn text(s: &mut State, id: u64, delta: &str) {
    let events = vec![StreamEvent::Text { choice: 0, delta: delta.into() }];
    s.apply(Msg::Wire {
        id,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 }),
        now_ms: 110,
    });
}

fn finish(s: &mut State, id: u64) {
    let events = vec![StreamEvent::Finish { choice: 0, reason: "stop".into() }, StreamEvent::End];
    s.apply(Msg::Wire {
        id,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 20 }),
        now_ms: 120,
    });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 21 }), now_ms: 121 });
}

#[test]
fn send_streams_and_completes() {
    let mut s = test_state();
    let fx = send(&mut s, "hello");
    let (id, body) = started(&fx);
    assert_eq!(body["messages"][0]["content"], "hello");
    assert_eq!(body["model"], "demo");
    assert!(s.composer.is_empty());
    assert_eq!(s.live.as_ref().map(|l| l.id), Some(id));
    s.apply(Msg::RequestStarted { id, now_ms: 100 });
    text(&mut s, id, "Hi ");
    text(&mut s, id, "there");
    let m = s.transcript.message(id).unwrap();
    assert_eq!(m.text(), "Hi there");
    assert_eq!(m.status, MessageStatus::Streaming);
    finish(&mut s, id);
    assert!(s.live.is_none());
    assert_eq!(s.transcript.message(id).unwrap().status, MessageStatus::Complete);
}

#[test]
fn multi_turn_sends_the_whole_conversation() {
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "one"));
    text(&mut s, id, "first answer");
    finish(&mut s, id);
    let (_, body) = started(&send(&mut s, "two"));
    let msgs = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(msgs[1]["content"], "first answer");
}

#[test]
fn esc_cancels_and_keeps_the_partial() {
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "long please"));
    text(&mut s, id, "partial");
    let fx = s.apply(key(KeyCode::Esc));
    assert!(fx.contains(&Effect::CancelRequest { id }));
    let m = s.transcript.message(id).unwrap();
    assert_eq!(m.status, MessageStatus::Cancelled);
    assert_eq!(m.text(), "partial");
    assert!(s.live.is_none());
    // Late events of the cancelled request change nothing.
    text(&mut s, id, " more");
    assert_eq!(s.transcript.message(id).unwrap().text(), "partial");
}

#[test]
fn failed_request_keeps_the_draft_and_drops_the_turn() {
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "try this"));
    let err = ErrorInfo {
        status: Some(429),
        message: "slow down".into(),
        kind: "http".into(),
        body: serde_json::Value::Null,
    };
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Failed(err)), now_ms: 50 });
    assert_eq!(s.transcript.message(id).unwrap().status, MessageStatus::Failed);
    assert_eq!(s.composer.text(), "try this");
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("slow down")));
    // Resending does not carry the failed turn twice.
    let (_, body) = started(&s.apply(key(KeyCode::Enter)));
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
}

#[test]
fn enter_while_streaming_queues_the_draft() {
    let mut s = test_state();
    started(&send(&mut s, "first"));
    let fx = send(&mut s, "second");
    assert!(fx.is_empty(), "nothing goes out while the reply streams");
    assert!(s.composer.is_empty());
    assert_eq!(s.queue.items.iter().map(|q| q.text.as_str()).collect::<Vec<_>>(), ["second"]);
}

#[test]
fn newline_keys_do_not_send() {
    let mut s = test_state();
    typed(&mut s, "a");
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT)));
    typed(&mut s, "b");
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT)));
    typed(&mut s, "c");
    assert_eq!(s.composer.text(), "a\nb\nc");
    assert!(s.live.is_none());
}

#[test]
fn history_walk_on_empty_composer() {
    let mut s = test_state();
    for p in ["one", "two"] {
        let (id, _) = started(&send(&mut s, p));
        finish(&mut s, id);
    }
    s.apply(key(KeyCode::Up));
    assert_eq!(s.composer.text(), "two");
    s.apply(key(KeyCode::Up));
    assert_eq!(s.composer.text(), "one");
    s.apply(key(KeyCode::Down));
    assert_eq!(s.composer.text(), "two");
    s.apply(key(KeyCode::Down));
    assert_eq!(s.composer.text(), "");
}

#[test]
fn slash_commands() {
    let mut s = test_state();
    send(&mut s, "/model demo-slow");
    assert_eq!(s.target.model, "demo-slow");
    send(&mut s, "/system be brief");
    assert_eq!(s.settings.system.as_deref(), Some("be brief"));
    send(&mut s, "/api responses");
    assert_eq!(s.target.api, Api::Responses);
    let (_, body) = started(&send(&mut s, "hi"));
    assert_eq!(body["instructions"], "be brief");
    assert_eq!(body["model"], "demo-slow");
    let fx = send(&mut s, "/theme light");
    assert_eq!(fx, [Effect::LoadTheme("light".into())]);
    send(&mut s, "/new");
    assert!(s.transcript.cells.is_empty());
    // The model and API the user picked stay; the system prompt goes back to the session's.
    assert_eq!((s.target.model.as_str(), s.target.api, s.settings.system.clone()), ("demo-slow", Api::Responses, None));
    // An unknown command keeps the draft and says so.
    send(&mut s, "/bogus");
    assert_eq!(s.composer.text(), "/bogus");
    assert!(s.flash.as_ref().is_some_and(|f| f.error));
    s.apply(ctrl('c'));
    send(&mut s, "/api chat");
    // `//` sends a literal slash.
    let (_, body) = started(&send(&mut s, "//etc is a folder"));
    assert_eq!(body["messages"][0]["content"], "/etc is a folder");
}

#[test]
fn a_cancel_says_what_it_kept() {
    // Before any text: nothing to keep, and it does not say it kept a partial reply.
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "go"));
    assert!(s.apply(key(KeyCode::Esc)).contains(&Effect::CancelRequest { id }));
    let flash = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
    assert_eq!(flash, "cancelled; nothing had arrived, so there is nothing to keep");
    // After some text: what arrived is kept.
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "go"));
    text(&mut s, id, "Half");
    s.apply(key(KeyCode::Esc));
    let flash = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
    assert_eq!(flash, "cancelled; what arrived is kept");
}

#[test]
fn ctrl_c_cancels_then_clears_then_asks_once_then_quits() {
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "go"));
    typed(&mut s, "draft");
    assert!(s.apply(ctrl('c')).contains(&Effect::CancelRequest { id }));
    assert_eq!(s.composer.text(), "draft");
    s.apply(ctrl('c'));
    assert!(s.composer.is_empty());
    // The cleared draft comes back with ↑.
    s.apply(key(KeyCode::Up));
    assert_eq!(s.composer.text(), "draft");
    s.apply(ctrl('c'));
    assert!(!s.quit);
    // On an empty composer Ctrl+C asks; any other key stays; asked again, a second one quits.
    assert!(!s.apply(ctrl('c')).contains(&Effect::Quit));
    assert!(!s.quit && s.flash.as_ref().is_some_and(|f| f.text.contains("quit?")));
    s.apply(key(KeyCode::Left));
    assert!(!s.apply(ctrl('c')).contains(&Effect::Quit));
    assert!(s.apply(ctrl('c')).contains(&Effect::Quit));
    // Ctrl+D confirms too, and asks first on its own.
    let mut s = test_state();
    s.apply(ctrl('c'));
    assert!(s.apply(ctrl('d')).contains(&Effect::Quit));
    let mut s = test_state();
    assert!(!s.apply(ctrl('d')).contains(&Effect::Quit));
    assert!(s.apply(ctrl('d')).contains(&Effect::Quit));
    // Ctrl+Q quits at once.
    let mut s = test_state();
    typed(&mut s, "x");
    assert!(s.apply(ctrl('q')).contains(&Effect::Quit));
    // SIGTERM or SIGHUP quits at once, without asking: nobody is at the keyboard to answer.
    let mut s = test_state();
    typed(&mut s, "x");
    assert!(s.apply(Msg::Terminated("SIGTERM")).contains(&Effect::Quit));
    assert!(s.quit);
}

#[test]
fn two_quick_ctrl_cs_stop_a_stream_and_do_not_quit() {
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "go"));
    assert!(s.apply(ctrl('c')).contains(&Effect::CancelRequest { id }));
    assert!(!s.apply(ctrl('c')).contains(&Effect::Quit));
    assert!(!s.quit);
}

#[test]
fn readline_keys_in_the_composer() {
    let mut s = test_state();
    typed(&mut s, "hello big world");
    s.apply(ctrl('w'));
    assert_eq!(s.composer.text(), "hello big ");
    s.apply(ctrl('a'));
    typed(&mut s, ">");
    s.apply(ctrl('e'));
    typed(&mut s, "!");
    assert_eq!(s.composer.text(), ">hello big !");
    s.apply(ctrl('u'));
    assert_eq!(s.composer.text(), "");
    // Ctrl+D on a draft deletes forward, it does not quit.
    typed(&mut s, "ab");
    s.apply(ctrl('a'));
    assert!(!s.apply(ctrl('d')).contains(&Effect::Quit));
    assert_eq!(s.composer.text(), "b");
}

#[test]
fn scroll_unfollows_and_new_output_is_flagged() {
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "go"));
    s.view.height = 10;
    s.apply(key(KeyCode::PageUp));
    assert!(!s.scroll.follow);
    text(&mut s, id, "more");
    assert!(s.unseen);
    s.apply(Msg::Key(KeyEvent::new(KeyCode::End, KeyModifiers::CONTROL)));
    assert!(s.scroll.follow);
    assert!(!s.unseen);
}

#[test]
fn overlays_take_keys_first() {
    let mut s = test_state();
    s.apply(ctrl('p'));
    typed(&mut s, "clear");
    assert!(s.composer.is_empty(), "typing goes to the palette, not the draft");
    assert!(matches!(s.overlays.last(), Some(super::overlay::Overlay::Palette(p)) if p.query == "clear"));
    s.apply(key(KeyCode::Esc));
    assert!(s.overlays.is_empty());
    s.apply(Msg::Key(KeyEvent::new(KeyCode::F(1), KeyModifiers::NONE)));
    typed(&mut s, "zz");
    assert!(s.composer.is_empty());
    assert!(s.apply(ctrl('q')).contains(&Effect::Quit), "Ctrl+Q reaches past an overlay");
}

#[test]
fn regenerate_and_edit_keep_branches() {
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "q1"));
    text(&mut s, id, "a1");
    finish(&mut s, id);
    // Select the reply and regenerate it.
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
    assert_eq!(s.focus, Focus::Transcript);
    assert_eq!(s.selected, Some(id));
    let (id2, body) = started(&s.apply(key(KeyCode::Char('r'))));
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
    text(&mut s, id2, "a2");
    finish(&mut s, id2);
    assert_eq!(s.transcript.versions_at(1), 1);
    // Edit the prompt and resend: the first tail is kept as a branch too.
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
    s.apply(key(KeyCode::Up));
    assert_eq!(s.transcript.message(s.selected.unwrap()).unwrap().role(), Role::User);
    s.apply(key(KeyCode::Char('e')));
    assert_eq!(s.composer.text(), "q1");
    s.apply(key(KeyCode::Backspace));
    s.apply(key(KeyCode::Backspace));
    let (_, body) = started(&send(&mut s, "q1 edited"));
    assert_eq!(body["messages"][0]["content"], "q1 edited");
    assert_eq!(s.transcript.versions_at(0), 1);
    assert_eq!(s.transcript.cells.len(), 2);
}

#[test]
fn copy_sends_osc52_effect() {
    let mut s = test_state();
    let (id, _) = started(&send(&mut s, "q"));
    text(&mut s, id, "answer text");
    finish(&mut s, id);
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
    let fx = s.apply(key(KeyCode::Char('y')));
    assert_eq!(fx, [Effect::Copy("answer text".into())]);
}

#[test]
fn ticks_only_matter_while_live() {
    let mut s = test_state();
    assert!(!s.wants_tick());
    let v = s.version;
    s.apply(Msg::Tick { now_ms: 5 });
    assert_eq!(s.version, v, "an idle tick changes nothing visible");
    started(&send(&mut s, "go"));
    assert!(s.wants_tick());
    let v = s.version;
    s.apply(Msg::Tick { now_ms: 500 });
    assert_ne!(s.version, v, "the spinner moves");
}

#[test]
fn paste_and_mouse() {
    use super::msg::{CellRows, ViewReport};
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut s = test_state();
    s.apply(Msg::Paste("line one\r\nline two".into()));
    assert_eq!(s.composer.text(), "line one\nline two");
    let (id, _) = started(&s.apply(key(KeyCode::Enter)));
    finish(&mut s, id);
    let user = s.transcript.cells[0].id();
    s.apply(Msg::Viewport(ViewReport {
        height: 10,
        transcript: (1, 1, 60, 10),
        composer: (0, 12, 62, 3),
        cells: vec![
            CellRows { id: user, top: 1, bottom: 4, whole: true },
            CellRows { id, top: 4, bottom: 6, whole: true },
        ],
        ..ViewReport::default()
    }));
    let click = |column, row| {
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    s.apply(click(5, 4));
    assert_eq!((s.selected, s.focus), (Some(id), Focus::Transcript));
    s.apply(click(5, 13));
    assert_eq!((s.selected, s.focus), (None, Focus::Composer));
    let wheel =
        Msg::Mouse(MouseEvent { kind: MouseEventKind::ScrollUp, column: 5, row: 3, modifiers: KeyModifiers::NONE });
    s.apply(wheel);
    assert!(!s.scroll.follow);
}

/// A failed send gives back the draft as the user left it: the big paste as its chip (not its
/// 500 lines), the attachment chip, and the chip's pasted path (removing it types the path).
#[test]
fn a_failed_send_gives_back_the_draft_with_its_chips() {
    use crate::app::attach::AttachMsg;
    let mut s = test_state();
    let big: String = (0..500).map(|i| format!("log line {i}\n")).collect();
    typed(&mut s, "see ");
    s.apply(Msg::Paste(big.clone()));
    typed(&mut s, " and this");
    let mut png = Vec::new();
    image::RgbImage::new(2, 2).write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png).unwrap();
    let a = crate::engine::attachment::Attachment::from_bytes("p.png", png).unwrap();
    s.apply(Msg::Attach(AttachMsg::Loaded {
        spec: "/tmp/p.png".into(),
        result: Ok(a),
        paste: Some("/tmp/p.png".into()),
    }));
    let shown = s.composer.area.lines().to_vec();
    assert_eq!(shown.len(), 1, "{shown:?}");
    let (id, body) = started(&s.apply(key(KeyCode::Enter)));
    let sent = body["messages"][0]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert_eq!(sent, format!("see {big} and this"));
    assert!(s.composer.is_empty() && s.attachments.is_empty());
    // llama.cpp's answer to an image for a model without vision (not retried: see api::retry).
    let err = ErrorInfo {
        status: Some(500),
        message: "image input is not supported — this model (or server) cannot read images".into(),
        kind: "http".into(),
        body: serde_json::Value::Null,
    };
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Failed(err)), now_ms: 50 });
    assert_eq!(s.composer.area.lines(), &shown[..], "the chip, not the pasted lines");
    assert_eq!(s.composer.pasted(), Some((1, big.len())));
    assert_eq!(s.composer.text(), format!("see {big} and this"));
    assert_eq!(s.attachments.len(), 1, "the attachment chip is back");
    assert!(s.flash.as_ref().is_some_and(|f| f.error && f.text.contains("cannot read images")));
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("your prompt is back")));
    // The attachment chip still knows the path it was pasted as.
    s.remove_attachment();
    assert!(s.composer.text().ends_with(" and this/tmp/p.png"), "{}", s.composer.text());
}

#[test]
fn a_hundred_thousand_models_open_and_filter_to_one() {
    use super::overlay::Overlay;
    let mut s = test_state();
    s.apply(ctrl('o'));
    // Duplicates are listed once; the first copy keeps its place.
    let ids: Vec<String> =
        (0..100_000).map(|i| format!("vendor/Model-{i}")).chain(["vendor/Model-7".to_owned()]).collect();
    // How fast is a benchmark's question (speed targets live in benches/, not in tests); the
    // quadratic de-duplication this replaced took minutes here and would time the suite out.
    s.apply(Msg::Models(Ok(ids)));
    for c in "MODEL-99999".chars() {
        s.apply(key(KeyCode::Char(c)));
    }
    let Some(Overlay::Models { picker, .. }) = s.overlays.last() else { panic!("no model picker") };
    // The list, the configured models and the current one ("demo"), each once.
    assert_eq!(picker.items.iter().filter(|i| i.value == "vendor/Model-7").count(), 1);
    assert_eq!(picker.items.len(), 100_001);
    let shown: Vec<&str> = picker.visible().iter().map(|&i| picker.items[i].value.as_str()).collect();
    assert_eq!(shown, ["vendor/Model-99999"]);
}
