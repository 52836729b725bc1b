//! A conversation opened on its tail: what waits for the head, what does not, and where its
//! messages are saved.

use super::*;
use crate::app::effect::Effect;
use crate::app::persist::{Loaded, PersistOp, StoreMsg};
use crate::app::test_state;
use crate::engine::message::{Message, Role};
use crate::store::{BranchInfo, ConversationSummary, StoredConversation};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

const ID: &str = "20260101-000001-0001";

fn turn(i: usize) -> Message {
    if i % 2 == 0 {
        Message::user(&format!("prompt {i}"))
    } else {
        Message::with_text(Role::Assistant, &format!("answer {i}"))
    }
}

/// A state that reopened a 10-message conversation on its last 4 (6 still to come).
fn opened() -> (State, Vec<Effect>) {
    let summary = ConversationSummary {
        id: ID.into(),
        title: "long one".into(),
        model: None,
        provider: None,
        api: None,
        created_at: 0,
        updated_at: 0,
        messages: 10,
        active_branch: 7,
        compare_group: None,
        compare_column: None,
    };
    let branches = vec![BranchInfo { branch: 7, parent: None, fork_position: 0, created_at: 0, messages: 10 }];
    let messages = (6..10).map(turn).collect();
    let loaded = Loaded {
        active: StoredConversation { summary, branch: 7, messages, branches },
        others: Vec::new(),
        switch: false,
        focus: None,
        adopt_model: false,
        notice: None,
        older: 6,
    };
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    let fx = s.apply(Msg::Store(StoreMsg::Opened(Ok(Box::new(loaded)))));
    (s, fx)
}

fn head() -> Result<Vec<Cell>, String> {
    Ok((0..6).map(|i| Cell::Message(turn(i).into())).collect())
}

fn texts(s: &State) -> Vec<String> {
    s.transcript.cells.iter().filter_map(Cell::message).map(|m| m.text().to_owned()).collect()
}

fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
    s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(s: &mut State, text: &str) -> Vec<Effect> {
    text.chars().flat_map(|c| key(s, KeyCode::Char(c))).collect()
}

fn requests(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::StartRequest { body, .. } => Some(body.to_string()),
            _ => None,
        })
        .collect()
}

fn saves(fx: &[Effect]) -> Vec<usize> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Persist(PersistOp::Save { position, .. }) => Some(*position),
            _ => None,
        })
        .collect()
}

#[test]
fn the_tail_opens_at_once_and_asks_for_the_head() {
    let (s, fx) = opened();
    assert_eq!(texts(&s), ["prompt 6", "answer 7", "prompt 8", "answer 9"]);
    assert!(
        fx.iter().any(|e| matches!(e, Effect::Persist(PersistOp::LoadHead { id, branch: 7, upto: 6 }) if id == ID)),
        "{fx:?}"
    );
    assert!(s.head_loading());
    let notice = s.transcript.cells.iter().find_map(|c| match c {
        Cell::Notice(n) => Some(n.text.clone()),
        Cell::Message(_) => None,
    });
    assert!(notice.is_some_and(|n| n.contains("10 messages")), "the whole count is said");
}

#[test]
fn a_prompt_sent_before_the_head_waits_for_it_and_carries_the_whole_history() {
    let (mut s, _) = opened();
    // Typing goes on meanwhile.
    typed(&mut s, "next");
    assert_eq!(s.composer.text(), "next");
    // Enter would send half the history: it waits, and so does everything typed after it.
    let fx = key(&mut s, KeyCode::Enter);
    assert!(requests(&fx).is_empty(), "nothing may be sent before the head is in");
    typed(&mut s, "more");
    assert_eq!(s.composer.text(), "next", "keys after a held one wait too, in order");
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("6 earlier messages")));

    let fx = s.apply(Msg::Store(StoreMsg::Head { id: ID.into(), branch: 7, result: head() }));
    let want: Vec<String> =
        (0..10).map(|i| turn(i).text().to_owned()).chain(["next".to_owned(), String::new()]).collect();
    assert_eq!(texts(&s), want, "the head in front, then the held prompt and its reply");
    let sent = requests(&fx);
    assert_eq!(sent.len(), 1, "{fx:?}");
    assert!(sent[0].contains("prompt 0") && sent[0].contains("answer 9") && sent[0].contains("next"), "{}", sent[0]);
    assert_eq!(s.composer.text(), "more", "what was typed after Enter landed in the new draft");
    // Saved where the store counts it: after all ten, not after the four shown first.
    assert_eq!(saves(&fx).first(), Some(&10), "{:?}", saves(&fx));
    assert!(!s.head_loading());
    assert_eq!(s.persist.path.len(), 12);
}

#[test]
fn scrolling_goes_on_while_the_head_loads_and_a_stale_head_is_dropped() {
    let (mut s, _) = opened();
    let v = s.version;
    s.apply(Msg::Key(KeyEvent::new(KeyCode::PageUp, KeyModifiers::NONE)));
    assert!(s.held_input.is_empty(), "PgUp is not held");
    assert!(s.version > v);
    // A head for another conversation (one opened since) changes nothing.
    s.apply(Msg::Store(StoreMsg::Head { id: "other".into(), branch: 7, result: head() }));
    assert_eq!(texts(&s).len(), 4);
    assert!(s.head_loading());
}

#[test]
fn a_head_that_cannot_be_loaded_is_said_and_what_was_held_goes_on() {
    let (mut s, _) = opened();
    typed(&mut s, "go");
    key(&mut s, KeyCode::Enter);
    let fx = s.apply(Msg::Store(StoreMsg::Head { id: ID.into(), branch: 7, result: Err("disk I/O error".into()) }));
    assert!(!s.head_loading());
    let said = s.transcript.cells.iter().any(
        |c| matches!(c, Cell::Notice(n) if n.text.contains("6 earlier messages") && n.text.contains("disk I/O error")),
    );
    assert!(said);
    assert_eq!(requests(&fx).len(), 1, "the held prompt went, as the notice says, without the head");
    // Still saved at its true position.
    assert_eq!(saves(&fx).first(), Some(&10));
}
