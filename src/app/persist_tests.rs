//! What `State::apply` asks the store to do, and when.

use super::*;
use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::app::msg::Msg;
use crate::app::persist_ops as ops;
use crate::app::test_state;
use crate::app::transcript::Cell;
use crate::engine::message::MessageStatus;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn on() -> State {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    s
}

fn send(s: &mut State, text: &str) -> Vec<Effect> {
    for c in text.chars() {
        s.apply(key(KeyCode::Char(c)));
    }
    s.apply(key(KeyCode::Enter))
}

fn live_id(s: &State) -> u64 {
    s.live.as_ref().map(|l| l.id).unwrap_or_default()
}

fn delta(s: &mut State, id: u64, text: &str, now_ms: u64) -> Vec<Effect> {
    let events = vec![StreamEvent::Text { choice: 0, delta: text.into() }];
    s.apply(Msg::Wire {
        id,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: now_ms }),
        now_ms,
    })
}

fn finish(s: &mut State, id: u64, now_ms: u64) -> Vec<Effect> {
    let events = vec![StreamEvent::Finish { choice: 0, reason: "stop".into() }, StreamEvent::End];
    let mut fx = s.apply(Msg::Wire {
        id,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: now_ms }),
        now_ms,
    });
    fx.extend(s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: now_ms }), now_ms }));
    fx
}

/// (position, branch, status, text) of every save.
fn saves(fx: &[Effect]) -> Vec<(usize, BranchKey, MessageStatus, String)> {
    ops(fx)
        .into_iter()
        .filter_map(|op| match op {
            PersistOp::Save { position, branch, msg, .. } => {
                Some((*position, *branch, msg.status, msg.text().to_owned()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn nothing_is_saved_without_a_store() {
    let mut s = test_state();
    let fx = send(&mut s, "hello");
    assert!(ops(&fx).is_empty(), "{fx:?}");
}

#[test]
fn first_send_creates_the_conversation_and_saves_the_prompt_before_the_request() {
    let mut s = on();
    let fx = send(&mut s, "What is a borrow checker?\nsecond line");
    let request = fx.iter().position(|e| matches!(e, Effect::StartRequest { .. })).unwrap();
    let create = fx.iter().position(|e| matches!(e, Effect::Persist(PersistOp::Create { .. }))).unwrap();
    let prompt = fx.iter().position(|e| matches!(e, Effect::Persist(PersistOp::Save { position: 0, .. }))).unwrap();
    assert!(create < prompt && prompt < request, "{fx:?}");
    match &fx[create] {
        Effect::Persist(PersistOp::Create { local, title, model, provider, api, compare }) => {
            assert_eq!(*compare, None);
            assert_eq!((*local, title.as_str()), (1, "What is a borrow checker?"));
            assert_eq!((model.as_str(), provider.as_str(), api.as_str()), ("demo", "demo", "chat"));
        }
        other => panic!("{other:?}"),
    }
    // The pending reply is saved too, so a crash before the first token still shows the turn.
    assert_eq!(
        saves(&fx),
        [
            (0, 0, MessageStatus::Complete, "What is a borrow checker?\nsecond line".into()),
            (1, 0, MessageStatus::Waiting, String::new())
        ]
    );
    // The store's id comes back; later operations still name the conversation by its local number.
    s.apply(Msg::Store(StoreMsg::Created { local: 1, id: "20260101-000000-abcd".into() }));
    assert_eq!(s.persist.id.as_deref(), Some("20260101-000000-abcd"));
}

#[test]
fn a_streaming_reply_is_saved_at_most_every_100_ms_and_at_once_when_it_ends() {
    let mut s = on();
    send(&mut s, "hi");
    let id = live_id(&s);
    s.apply(Msg::RequestStarted { id, now_ms: 1000 });
    assert_eq!(saves(&delta(&mut s, id, "a", 1010)).len(), 1, "the first token is saved");
    assert!(saves(&delta(&mut s, id, "b", 1050)).is_empty(), "too soon");
    assert!(saves(&delta(&mut s, id, "c", 1100)).is_empty(), "too soon");
    let fx = delta(&mut s, id, "d", 1111);
    assert_eq!(saves(&fx), [(1, 0, MessageStatus::Streaming, "abcd".into())]);
    // A pause: the tick saves what arrived.
    delta(&mut s, id, "e", 1150);
    let fx = s.apply(Msg::Tick { now_ms: 1215 });
    assert_eq!(saves(&fx), [(1, 0, MessageStatus::Streaming, "abcde".into())]);
    assert!(saves(&s.apply(Msg::Tick { now_ms: 1400 })).is_empty(), "nothing changed");
    delta(&mut s, id, "f", 1420);
    let fx = finish(&mut s, id, 1425);
    assert_eq!(saves(&fx), [(1, 0, MessageStatus::Complete, "abcdef".into())]);
}

#[test]
fn saved_replies_carry_no_raw_frames() {
    let mut s = on();
    send(&mut s, "hi");
    let id = live_id(&s);
    let frame = crate::api::client::Frame { at_ms: 1, event: String::new(), data: "{}".into() };
    let events = vec![StreamEvent::Text { choice: 0, delta: "x".into() }];
    let event = WireEvent::Chunk { frames_skipped: 0, frames: vec![frame], events, at_ms: 5 };
    let fx = s.apply(Msg::Wire { id, event: Box::new(event), now_ms: 500 });
    let Some(PersistOp::Save { msg, .. }) = ops(&fx).into_iter().find(|o| matches!(o, PersistOp::Save { .. })) else {
        panic!("no save in {fx:?}")
    };
    assert!(msg.frames.is_empty());
    assert!(s.transcript.message(id).is_some_and(|m| !m.frames.is_empty()), "the screen keeps them");
}

#[test]
fn cancel_saves_the_partial_reply_as_cancelled() {
    let mut s = on();
    send(&mut s, "hi");
    let id = live_id(&s);
    delta(&mut s, id, "partial", 300);
    let fx = s.apply(key(KeyCode::Esc));
    assert!(fx.contains(&Effect::CancelRequest { id }));
    assert_eq!(saves(&fx), [(1, 0, MessageStatus::Cancelled, "partial".into())]);
}

#[test]
fn quitting_mid_stream_saves_what_arrived_without_waiting() {
    let mut s = on();
    send(&mut s, "hi");
    let id = live_id(&s);
    delta(&mut s, id, "a", 300);
    delta(&mut s, id, "b", 310);
    let fx = s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::CONTROL)));
    assert_eq!(saves(&fx), [(1, 0, MessageStatus::Cancelled, "ab".into())]);
}

#[test]
fn a_signal_mid_stream_saves_the_reply_as_interrupted_by_that_signal() {
    for signal in ["SIGHUP", "SIGTERM"] {
        let mut s = on();
        send(&mut s, "hi");
        let id = live_id(&s);
        delta(&mut s, id, "a", 300);
        delta(&mut s, id, "b", 310);
        // Its latest text already went out as streaming: the signal still settles it.
        s.apply(Msg::Tick { now_ms: 500 });
        let fx = s.apply(Msg::Terminated(signal));
        assert_eq!(saves(&fx), [(1, 0, MessageStatus::Interrupted, "ab".into())]);
        let error = ops(&fx)
            .into_iter()
            .find_map(|op| match op {
                PersistOp::Save { msg, .. } => msg.error.clone(),
                _ => None,
            })
            .expect("the reason is stored");
        assert_eq!(error.kind, "interrupted");
        assert!(error.message.starts_with(&format!("interrupted by {signal} (")), "{}", error.message);
        assert!(!error.message.contains("killed or crashed"), "{}", error.message);
    }
}

#[test]
fn regenerate_forks_a_branch_at_the_reply() {
    let mut s = on();
    send(&mut s, "hi");
    let id = live_id(&s);
    finish(&mut s, id, 200);
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
    let fx = s.apply(key(KeyCode::Char('r')));
    let o = ops(&fx);
    assert!(matches!(o[0], PersistOp::Fork { conv: ConvKey::Local(1), parent: 0, branch: -1, position: 1 }), "{fx:?}");
    assert_eq!(saves(&fx), [(1, -1, MessageStatus::Waiting, String::new())]);
}

#[test]
fn editing_a_prompt_forks_and_switching_versions_activates_branches() {
    let mut s = on();
    send(&mut s, "first");
    let a = live_id(&s);
    finish(&mut s, a, 200);
    send(&mut s, "second");
    let b = live_id(&s);
    finish(&mut s, b, 400);
    // Select "second" (two messages up from the bottom) and edit it.
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::ALT)));
    s.apply(key(KeyCode::Up));
    s.apply(key(KeyCode::Char('e')));
    s.apply(key(KeyCode::Char('!')));
    let fx = s.apply(key(KeyCode::Enter));
    assert!(matches!(ops(&fx)[0], PersistOp::Fork { parent: 0, branch: -1, position: 2, .. }), "{fx:?}");
    assert_eq!(
        saves(&fx),
        [(2, -1, MessageStatus::Complete, "second!".into()), (3, -1, MessageStatus::Waiting, String::new())]
    );
    let c = live_id(&s);
    finish(&mut s, c, 600);
    // Back to the old version, then forward again: activation only, nothing re-saved.
    let edited = s.transcript.cells.iter().filter_map(|c| c.message()).nth(2).map(|m| m.id).unwrap();
    s.select(edited);
    let fx = s.apply(key(KeyCode::Char('[')));
    assert_eq!(ops(&fx), [&PersistOp::Activate { conv: ConvKey::Local(1), branch: 0 }]);
    let fx = s.apply(key(KeyCode::Char(']')));
    assert_eq!(ops(&fx), [&PersistOp::Activate { conv: ConvKey::Local(1), branch: -1 }]);
}

#[test]
fn tool_results_are_saved_by_position() {
    let mut s = on();
    send(&mut s, "list files");
    let id = live_id(&s);
    finish(&mut s, id, 200);
    // The tool loop pushes results into the transcript; whatever it holds is saved.
    s.transcript.push_message(crate::engine::message::Message::tool_result("call_1", "a.txt"));
    let fx = s.apply(Msg::Tick { now_ms: 300 });
    assert_eq!(saves(&fx), [(2, 0, MessageStatus::Complete, "a.txt".into())]);
}

#[test]
fn new_starts_another_conversation_and_settles_a_reply_cut_off_by_it() {
    let mut s = on();
    send(&mut s, "one");
    let id = live_id(&s);
    delta(&mut s, id, "half", 300);
    let fx = send(&mut s, "/new");
    assert_eq!(saves(&fx), [(1, 0, MessageStatus::Cancelled, "half".into())]);
    assert!(s.persist.conv.is_none());
    let fx = send(&mut s, "two");
    assert!(matches!(ops(&fx)[0], PersistOp::Create { local: 2, .. }), "{fx:?}");
    assert_eq!(saves(&fx)[0], (0, 0, MessageStatus::Complete, "two".into()));
}

#[test]
fn store_notices_become_notice_cells_and_the_conversation_stays() {
    let mut s = on();
    send(&mut s, "hello");
    let before = s.transcript.cells.len();
    s.apply(Msg::Store(StoreMsg::Notice { error: true, text: "history not saved: the disk is full".into() }));
    assert_eq!(s.transcript.cells.len(), before + 1);
    let last = s.transcript.cells.last().unwrap();
    assert!(matches!(last, Cell::Notice(n) if n.kind == NoticeKind::Error && n.text.contains("disk is full")));
    assert_eq!(s.transcript.cells.iter().filter_map(Cell::message).count(), 2);
}

#[test]
fn an_unavailable_store_is_a_notice_and_the_app_works_in_memory() {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Unavailable("cannot open /x: read-only".into())));
    assert!(s.transcript.cells.iter().any(|c| matches!(c, Cell::Notice(n) if n.text.contains("history is off"))));
    let fx = send(&mut s, "hello");
    assert!(ops(&fx).is_empty());
    assert!(fx.iter().any(|e| matches!(e, Effect::StartRequest { .. })));
}

#[test]
fn prompts_seed_the_composer_history() {
    let mut s = on();
    s.apply(Msg::Store(StoreMsg::Prompts(vec!["old one".into(), "old two".into()])));
    s.apply(key(KeyCode::Up));
    assert_eq!(s.composer.text(), "old two");
    s.apply(key(KeyCode::Up));
    assert_eq!(s.composer.text(), "old one");
}
