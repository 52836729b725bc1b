//! The queue through `State::apply`: Enter during a turn queues, the turn's end sends in order,
//! ↑ edits, the remove key drops, send-now stops the turn, a stop or failure holds the queue.

use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::app::effect::Effect;
use crate::app::msg::Msg;
use crate::app::state::State;
use crate::app::test_state;
use crate::engine::message::{ErrorInfo, MessageStatus};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn send(s: &mut State, text: &str) -> Vec<Effect> {
    for c in text.chars() {
        s.apply(key(KeyCode::Char(c)));
    }
    s.apply(key(KeyCode::Enter))
}

fn started(fx: &[Effect]) -> Option<(u64, serde_json::Value)> {
    fx.iter().find_map(|e| match e {
        Effect::StartRequest { id, body, .. } => Some((*id, serde_json::Value::clone(body))),
        _ => None,
    })
}

fn finish(s: &mut State, id: u64) -> Vec<Effect> {
    let events = vec![
        StreamEvent::Text { choice: 0, delta: "ok".into() },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    s.apply(Msg::Wire {
        id,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 20 }),
        now_ms: 120,
    });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 21 }), now_ms: 121 })
}

/// The last user message of the request body.
fn last_prompt(body: &serde_json::Value) -> String {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    let user = msgs.iter().rev().find(|m| m["role"] == "user").cloned().unwrap_or_default();
    user["content"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn enter_during_a_reply_queues_and_the_end_sends_in_order() {
    let mut s = test_state();
    let (first, _) = started(&send(&mut s, "one")).unwrap();
    assert!(started(&send(&mut s, "two")).is_none(), "a queued message is not sent while the reply streams");
    assert!(started(&send(&mut s, "three")).is_none());
    let queued: Vec<&str> = s.queue.items.iter().map(|q| q.text.as_str()).collect();
    assert_eq!(queued, ["two", "three"]);
    assert!(s.composer.is_empty());
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("queued")));
    // The first turn ends: "two" goes at once, "three" waits for its turn.
    let (second, body) = started(&finish(&mut s, first)).unwrap();
    assert_eq!(last_prompt(&body), "two");
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(3), "one, its answer, two");
    assert_eq!(s.queue.items.len(), 1);
    let (_, body) = started(&finish(&mut s, second)).unwrap();
    assert_eq!(last_prompt(&body), "three");
    assert!(s.queue.is_empty());
}

#[test]
fn a_draft_typed_while_the_queue_goes_stays_in_the_composer() {
    let mut s = test_state();
    let (first, _) = started(&send(&mut s, "one")).unwrap();
    send(&mut s, "two");
    for c in "half typed".chars() {
        s.apply(key(KeyCode::Char(c)));
    }
    let (_, body) = started(&finish(&mut s, first)).unwrap();
    assert_eq!(last_prompt(&body), "two");
    assert_eq!(s.composer.text(), "half typed");
}

#[test]
fn up_edits_the_queued_message_and_the_remove_key_drops_it() {
    let mut s = test_state();
    let (first, _) = started(&send(&mut s, "one")).unwrap();
    send(&mut s, "two");
    send(&mut s, "three");
    s.apply(key(KeyCode::Up));
    assert_eq!(s.composer.text(), "three", "↑ brings the newest queued message back");
    assert_eq!(s.queue.items.len(), 1);
    // With text in the composer, ↑ is the text area's own again: nothing leaves the queue.
    s.apply(key(KeyCode::Up));
    assert_eq!(s.queue.items.len(), 1);
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::ALT)));
    assert!(s.queue.is_empty(), "Alt+D removes the queued one");
    assert_eq!(s.composer.text(), "three", "and leaves the draft alone");
    // The ended turn sends nothing: the queue is empty.
    assert!(started(&finish(&mut s, first)).is_none());
}

#[test]
fn send_now_stops_the_turn_and_sends_the_draft() {
    let mut s = test_state();
    let (first, _) = started(&send(&mut s, "one")).unwrap();
    for c in "now please".chars() {
        s.apply(key(KeyCode::Char(c)));
    }
    let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL)));
    assert!(fx.contains(&Effect::CancelRequest { id: first }));
    assert_eq!(s.transcript.message(first).unwrap().status, MessageStatus::Cancelled);
    let (_, body) = started(&fx).unwrap();
    assert_eq!(last_prompt(&body), "now please");
    assert!(s.queue.is_empty() && s.composer.is_empty());
}

#[test]
fn a_cancelled_or_failed_turn_holds_the_queue_until_enter() {
    let mut s = test_state();
    let (first, _) = started(&send(&mut s, "one")).unwrap();
    send(&mut s, "two");
    let fx = s.apply(key(KeyCode::Esc));
    assert!(fx.contains(&Effect::CancelRequest { id: first }));
    assert!(started(&fx).is_none(), "Esc stops; it does not send what was queued");
    assert!(s.queue.held && s.queue.items.len() == 1);
    let (second, body) = started(&s.apply(key(KeyCode::Enter))).unwrap();
    assert_eq!(last_prompt(&body), "two");
    // A failure holds it too.
    send(&mut s, "three");
    let err =
        ErrorInfo { status: Some(500), message: "boom".into(), kind: "http".into(), body: serde_json::Value::Null };
    let fx = s.apply(Msg::Wire { id: second, event: Box::new(WireEvent::Failed(err)), now_ms: 50 });
    assert!(started(&fx).is_none());
    assert_eq!(s.queue.items.len(), 1);
    assert_eq!(s.composer.text(), "two", "the failed prompt is back in the composer");
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)));
    // Typing a new message with a held queue queues it behind and lets the queue go, in order.
    let (_, body) = started(&send(&mut s, "four")).unwrap();
    assert_eq!(last_prompt(&body), "three");
    assert_eq!(s.queue.items.iter().map(|q| q.text.as_str()).collect::<Vec<_>>(), ["four"]);
}

#[test]
fn slash_commands_still_run_during_a_reply() {
    let mut s = test_state();
    started(&send(&mut s, "one")).unwrap();
    send(&mut s, "/panels");
    assert!(s.queue.is_empty(), "a command runs at once, it is not queued");
}

#[test]
fn a_users_command_typed_during_a_turn_waits_and_takes_its_model_when_it_goes() {
    let mut s = test_state();
    let cmd = "---\nmodel: demo-reasoning\n---\nReview $ARGUMENTS";
    s.mine.commands = vec![crate::config::commands::parse(
        "review",
        cmd,
        crate::config::commands::CommandSource::User,
        std::path::PathBuf::from("review.md"),
    )];
    let chat_model = s.target.model.clone();
    let (first, _) = started(&send(&mut s, "one")).unwrap();
    assert!(started(&send(&mut s, "/review a.rs")).is_none(), "queued, not run mid-turn");
    assert_eq!(s.queue.items.len(), 1);
    assert_eq!(s.turn_model(), chat_model, "the running turn keeps the chat's model");
    let (_, body) = started(&finish(&mut s, first)).expect("the queued command goes out when the turn ends");
    assert_eq!(body["model"], "demo-reasoning");
    assert_eq!(last_prompt(&body), "Review a.rs");
}

#[test]
fn the_quit_question_names_queued_messages_that_would_not_be_sent() {
    let mut s = test_state();
    send(&mut s, "one");
    send(&mut s, "two");
    s.apply(key(KeyCode::Esc));
    assert!(s.queue.held && s.queue.items.len() == 1);
    let ctrl_c = || Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    s.apply(ctrl_c());
    let flash = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
    assert!(flash.starts_with("quit? 1 queued message is not sent · "), "{flash}");
    assert!(!s.quit, "it only asks");
    // Nothing queued: the question as before.
    let mut s = test_state();
    s.apply(ctrl_c());
    let flash = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
    assert!(flash.starts_with("quit? ") && !flash.contains("queued"), "{flash}");
}
