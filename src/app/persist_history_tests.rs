//! The store sync in a long conversation: a delta looks at the live reply only, and whatever
//! changes deep in the history (an edit, a regenerate, a version switch, a message changed in
//! place) is still saved where it belongs.

use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::app::effect::Effect;
use crate::app::msg::Msg;
use crate::app::persist::{ConvKey, PersistOp, StoreMsg};
use crate::app::persist_ops as ops;
use crate::app::test_state;
use crate::app::transcript::{Cell, Transcript};
use crate::app::{State, state::Live};
use crate::engine::message::{Message, MessageStatus, Role};

const HISTORY: usize = 400;

/// A state with a store and a conversation of `HISTORY` messages, all saved.
fn long() -> State {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    for i in 0..HISTORY / 2 {
        s.transcript.push_message(Message::user(&format!("question {i}")));
        s.transcript.push_message(Message::with_text(Role::Assistant, &format!("answer {i}")));
    }
    let fx = s.apply(Msg::Tick { now_ms: 1 });
    assert_eq!(saves(&fx).len(), HISTORY);
    s
}

fn ids(s: &State) -> Vec<u64> {
    s.transcript.cells.iter().filter_map(Cell::message).map(|m| m.id).collect()
}

/// Asks for a reply (as a sent prompt does) and returns its id.
fn ask(s: &mut State, prompt: &str) -> u64 {
    s.transcript.push_message(Message::user(prompt));
    let id = s.transcript.push_message(Message::assistant_pending());
    s.live = Some(Live { id, started_ms: Some(10), draft: None });
    s.apply(Msg::Tick { now_ms: 10 });
    id
}

fn delta(s: &mut State, id: u64, text: &str, now_ms: u64) -> Vec<Effect> {
    let events = vec![StreamEvent::Text { choice: 0, delta: text.into() }];
    let event = Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: now_ms });
    s.apply(Msg::Wire { id, event, now_ms })
}

/// (position, branch, text) of every save.
fn saves(fx: &[Effect]) -> Vec<(usize, i64, String)> {
    ops(fx)
        .into_iter()
        .filter_map(|op| match op {
            PersistOp::Save { position, branch, msg, .. } => Some((*position, *branch, msg.text().to_owned())),
            _ => None,
        })
        .collect()
}

/// Changes message `nth` behind the sync's back (no stamp, not touched): only a walk of the
/// whole path would see it.
fn change_unseen(s: &mut State, nth: usize) {
    change_unseen_in(&mut s.transcript, nth);
}

#[test]
fn a_delta_in_a_long_history_looks_at_the_live_reply_alone() {
    let mut s = long();
    let id = ask(&mut s, "one more");
    change_unseen(&mut s, 3);
    let fx = delta(&mut s, id, "hello", 200);
    // The reply is saved; message 3, changed unseen, is not: the delta did not walk the history.
    assert_eq!(saves(&fx), [(HISTORY + 1, 0, "hello".into())]);
    // A change of shape walks again, and then the unseen change is found.
    s.transcript.push_notice(crate::app::transcript::NoticeKind::Info, "a notice");
    let fx = s.apply(Msg::Tick { now_ms: 210 });
    assert_eq!(saves(&fx), [(3, 0, "answer 1".into())]);
}

#[test]
fn a_reply_held_back_by_its_pace_is_saved_by_a_later_tick_without_a_new_delta() {
    let mut s = long();
    let id = ask(&mut s, "one more");
    assert_eq!(saves(&delta(&mut s, id, "a", 200)).len(), 1);
    assert!(saves(&delta(&mut s, id, "b", 250)).is_empty(), "too soon");
    assert!(saves(&s.apply(Msg::Tick { now_ms: 270 })).is_empty(), "still too soon");
    assert_eq!(saves(&s.apply(Msg::Tick { now_ms: 310 })), [(HISTORY + 1, 0, "ab".into())]);
    assert!(saves(&s.apply(Msg::Tick { now_ms: 500 })).is_empty(), "saved once");
}

#[test]
fn a_message_changed_in_place_deep_in_the_history_is_saved_at_its_position() {
    let mut s = long();
    let deep = ids(&s)[7];
    if let Some(m) = s.transcript.message_mut(deep) {
        m.choices[0].content.push_str(" (amended)");
        m.revision += 1;
    }
    let fx = s.apply(Msg::Tick { now_ms: 50 });
    assert_eq!(saves(&fx), [(7, 0, "answer 3 (amended)".into())]);
    assert!(saves(&s.apply(Msg::Tick { now_ms: 60 })).is_empty());
}

#[test]
fn an_edit_deep_in_the_history_forks_there_and_saves_the_new_tail() {
    let mut s = long();
    let at = s.transcript.index_of(ids(&s)[10]).unwrap_or_default();
    s.transcript.branch_off(at);
    s.transcript.push_message(Message::user("question 5, again"));
    let fx = s.apply(Msg::Tick { now_ms: 50 });
    assert!(
        matches!(ops(&fx)[0], PersistOp::Fork { conv: ConvKey::Local(1), parent: 0, branch: -1, position: 10 }),
        "{fx:?}"
    );
    assert_eq!(saves(&fx), [(10, -1, "question 5, again".into())]);
    // Back to the old version: the kept branch is activated, nothing is saved again.
    assert!(s.transcript.switch_version(at, true));
    let fx = s.apply(Msg::Tick { now_ms: 60 });
    assert_eq!(ops(&fx), [&PersistOp::Activate { conv: ConvKey::Local(1), branch: 0 }]);
    // A delta-like change to the kept version's last message is saved on its branch.
    let last = *ids(&s).last().unwrap_or(&0);
    if let Some(m) = s.transcript.message_mut(last) {
        m.revision += 1;
    }
    assert_eq!(saves(&s.apply(Msg::Tick { now_ms: 70 })), [(HISTORY - 1, 0, format!("answer {}", HISTORY / 2 - 1))]);
}

#[test]
fn a_regenerated_reply_after_a_long_history_forks_at_the_reply() {
    let mut s = long();
    let at = s.transcript.cells.len() - 1;
    s.transcript.branch_off(at);
    let id = s.transcript.push_message(Message::assistant_pending());
    s.live = Some(Live { id, started_ms: Some(10), draft: None });
    let fx = s.apply(Msg::Tick { now_ms: 20 });
    assert!(matches!(ops(&fx)[0], PersistOp::Fork { branch: -1, position, .. } if *position == HISTORY - 1), "{fx:?}");
    assert_eq!(saves(&fx), [(HISTORY - 1, -1, String::new())]);
    assert_eq!(saves(&delta(&mut s, id, "again", 200)), [(HISTORY - 1, -1, "again".into())]);
}

#[test]
fn a_transcript_replaced_wholesale_is_walked_again() {
    let mut s = long();
    // The same messages in a new transcript (a copy: a stamp of its own), one changed.
    let mut copy: Transcript = s.transcript.clone();
    change_unseen_in(&mut copy, 5);
    s.transcript = copy;
    assert_eq!(saves(&s.apply(Msg::Tick { now_ms: 50 })), [(5, 0, "answer 2".into())]);
}

fn change_unseen_in(t: &mut Transcript, nth: usize) {
    if let Some(m) = t.cells.messages_unmarked().nth(nth) {
        std::sync::Arc::make_mut(m).revision += 1;
    }
}

#[test]
fn quitting_mid_stream_in_a_long_history_settles_the_reply() {
    let mut s = long();
    let id = ask(&mut s, "one more");
    assert_eq!(saves(&delta(&mut s, id, "a", 200)).len(), 1);
    assert!(saves(&delta(&mut s, id, "b", 220)).is_empty(), "held back by its pace");
    let fx = s.apply(Msg::Terminated("SIGTERM"));
    // Saved at once with its latest text, as interrupted by the signal, not left streaming.
    let settled: Vec<_> = ops(&fx)
        .into_iter()
        .filter_map(|op| match op {
            PersistOp::Save { position, msg, .. } => Some((*position, msg.status, msg.text().to_owned())),
            _ => None,
        })
        .collect();
    assert_eq!(settled, [(HISTORY + 1, MessageStatus::Interrupted, "ab".into())]);
}

fn type_line(s: &mut State, text: &str) -> Vec<Effect> {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    for c in text.chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
}

#[test]
fn a_compare_from_here_on_a_long_history_saves_the_new_columns_and_not_the_seeded_one() {
    let mut s = long();
    let fx = type_line(&mut s, "/here demo");
    let cmp = s.compare.active.as_ref().map(|c| c.columns.len());
    assert_eq!(cmp, Some(2), "{fx:?}");
    // Column 1 answers the last prompt afresh: a conversation of its own; column 0 holds the
    // chat's history and answer only: nothing of its own to save.
    let creates = |fx: &[Effect]| ops(fx).iter().filter(|op| matches!(op, PersistOp::Create { .. })).count();
    assert_eq!(creates(&fx), 1, "{fx:?}");
    let columns = s.compare.active.as_ref().map(|c| &c.columns[..]).unwrap_or_default();
    assert!(columns[0].persist.conv.is_none() && columns[1].persist.conv.is_some());
    // Column 0 is not counted again while its shape holds; a prompt of its own changes that.
    let stamp = columns[0].transcript.cells.stamp();
    assert_eq!(columns[0].persist.quiet, Some(stamp));
    let fx = s.apply(Msg::Tick { now_ms: 500 });
    assert_eq!(creates(&fx), 0);
    if let Some(c) = s.compare.active.as_mut() {
        c.columns[0].transcript.push_message(Message::user("only here"));
    }
    let fx = s.apply(Msg::Tick { now_ms: 600 });
    assert_eq!(creates(&fx), 1, "{fx:?}");
}

/// Whether `held` are the chat's own messages (the same allocations), in order.
fn shared_with_chat(s: &State, held: &[&std::sync::Arc<Message>]) -> bool {
    let chat: Vec<&std::sync::Arc<Message>> = s.transcript.cells.iter().filter_map(Cell::shared).collect();
    held.len() <= chat.len() && held.iter().zip(&chat).all(|(a, b)| std::sync::Arc::ptr_eq(a, b))
}

#[test]
fn a_prompt_sent_after_a_long_history_takes_it_shared_and_builds_nothing_on_the_ui_task() {
    let mut s = long();
    let fx = type_line(&mut s, "one more");
    let Some(body) = fx.iter().find_map(|e| if let Effect::StartRequest { body, .. } = e { Some(body) } else { None })
    else {
        panic!("no request in {fx:?}");
    };
    // The request task builds the JSON; printing the effect must not.
    assert!(format!("{body:?}").contains("not built"), "the body's JSON was built on the UI task");
    let held: Vec<&std::sync::Arc<Message>> = body.messages().iter().collect();
    assert_eq!(held.len(), HISTORY + 1, "the history and the prompt");
    assert!(shared_with_chat(&s, &held), "the request holds copies of the history, not the transcript's messages");
    // The prompt is saved as the transcript's own message, not a copy.
    let prompt = ops(&fx).into_iter().find_map(|op| match op {
        PersistOp::Save { position, msg, .. } if *position == HISTORY => Some(msg.clone()),
        _ => None,
    });
    assert!(prompt.is_some_and(|m| std::sync::Arc::ptr_eq(&m, held[HISTORY])), "the prompt's save is a copy");
    let json = body.json();
    assert_eq!(json["messages"].as_array().map(Vec::len), Some(HISTORY + 1));
}

#[test]
fn the_streaming_reply_is_changed_in_place_while_a_request_holds_the_history() {
    let mut s = long();
    let fx = type_line(&mut s, "one more");
    let id = s.live.as_ref().map(|l| l.id).unwrap_or_default();
    let at = |s: &State| s.transcript.cells.iter().filter_map(Cell::shared).next_back().map(std::sync::Arc::as_ptr);
    delta(&mut s, id, "a", 20);
    let first = at(&s);
    for (i, d) in ["b", "c", "d"].into_iter().enumerate() {
        delta(&mut s, id, d, 30 + i as u64);
        assert_eq!(at(&s), first, "a delta copied the reply");
    }
    assert_eq!(s.transcript.message(id).map(Message::text), Some("abcd"));
    drop(fx);
}

#[test]
fn a_compare_from_here_shares_the_history_with_every_column_and_their_saves() {
    let mut s = long();
    let fx = type_line(&mut s, "/here demo");
    let cmp = s.compare.active.as_ref().unwrap_or_else(|| panic!("no compare: {fx:?}"));
    for col in &cmp.columns {
        let held: Vec<&std::sync::Arc<Message>> = col.transcript.cells.iter().filter_map(Cell::shared).collect();
        assert!(held.len() >= HISTORY - 1);
        assert!(shared_with_chat(&s, &held[..HISTORY - 1]), "column {} copied the history", col.index);
    }
    // Column 1 is a conversation of its own: its saves of the history are the chat's messages.
    let chat: Vec<&std::sync::Arc<Message>> = s.transcript.cells.iter().filter_map(Cell::shared).collect();
    let saved: Vec<_> = ops(&fx)
        .into_iter()
        .filter_map(|op| match op {
            PersistOp::Save { position, msg, .. } if *position < HISTORY - 1 => Some((*position, msg.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(saved.len(), HISTORY - 1);
    assert!(saved.iter().all(|(p, m)| std::sync::Arc::ptr_eq(m, chat[*p])), "a column's save copied a message");
    let body = fx.iter().find_map(|e| match e {
        Effect::Compare(crate::app::compare::CompareEffect::Start { body, .. }) => Some(body),
        _ => None,
    });
    assert!(body.is_some_and(|b| format!("{b:?}").contains("not built")), "a column's body was built on the UI task");
}
