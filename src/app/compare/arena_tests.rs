//! The arena's vote through `State::apply`: once both answered the keys stay on the composer
//! (typing is a follow-up for both); a vote takes the bar (Tab), a choice and the Enter right
//! after; the store is told once, one battle with its id and every column, and the vote is
//! final once the names are shown.

use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::app::compare::{Compare, CompareEffect, CompareMsg};
use crate::app::effect::Effect;
use crate::app::msg::Msg;
use crate::app::state::{Focus, State, TargetInfo};
use crate::app::test_state;
use crate::store::runs::BattleRow;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
    s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(s: &mut State, text: &str) -> Vec<Effect> {
    text.chars().flat_map(|c| key(s, KeyCode::Char(c))).collect()
}

/// (generation, column, id) of the column requests started.
fn starts(fx: &[Effect]) -> Vec<(u64, usize, u64)> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Compare(CompareEffect::Start { generation, column, id, .. }) => Some((*generation, *column, *id)),
            _ => None,
        })
        .collect()
}

/// The battles the effects ask the store to keep.
fn votes(fx: &[Effect]) -> Vec<BattleRow> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Compare(CompareEffect::Vote(battle)) => Some((**battle).clone()),
            _ => None,
        })
        .collect()
}

fn winner(fx: &[Effect]) -> Option<String> {
    match votes(fx).as_slice() {
        [row] => Some(row.vote.clone()),
        _ => None,
    }
}

/// Sends `prompt` from the composer and lets both columns answer it.
fn battle(s: &mut State, prompt: &str) -> Vec<(u64, usize, u64)> {
    typed(s, prompt);
    let started = starts(&key(s, KeyCode::Enter));
    assert_eq!(started.len(), 2, "both columns are asked");
    for &(generation, column, id) in &started {
        let events = vec![
            StreamEvent::Text { choice: 0, delta: format!("answer of column {column}").into() },
            StreamEvent::Finish { choice: 0, reason: "stop".into() },
            StreamEvent::End,
        ];
        for event in
            [WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 }, WireEvent::Closed { at_ms: 20 }]
        {
            s.apply(Msg::Compare(CompareMsg::Wire { generation, column, id, event: Box::new(event), now_ms: 300 }));
        }
    }
    started
}

fn arena() -> State {
    let mut s = test_state();
    let targets = vec![
        TargetInfo::new("demo", "demo", crate::api::Api::Chat),
        TargetInfo::new("demo", "demo-reasoning", crate::api::Api::Chat),
    ];
    s.open_arena(targets, 7).unwrap_or_else(|e| panic!("{e}"));
    s
}

fn awaiting(s: &State) -> bool {
    s.arena().is_some_and(|a| a.awaiting)
}

#[test]
fn after_both_answers_typing_goes_to_the_composer_and_asks_both_again() {
    let mut s = arena();
    battle(&mut s, "Which is better?");
    assert!(awaiting(&s));
    assert_eq!(s.focus, Focus::Composer, "the keys stay on the composer");
    let fx = typed(&mut s, "tell me more");
    assert!(votes(&fx).is_empty(), "t is not a tie: {fx:?}");
    assert_eq!(s.composer.text(), "tell me more");
    assert!(s.compare.active.as_ref().is_some_and(Compare::hidden));
    // Enter asks both again in the same battle: same columns, names still hidden.
    let fx = key(&mut s, KeyCode::Enter);
    assert_eq!(starts(&fx).len(), 2);
    let cmp = s.compare.active.as_ref().unwrap_or_else(|| panic!("compare"));
    assert!(cmp.columns.iter().all(|c| c.transcript.cells.len() == 4), "the follow-up joins the battle");
    assert!(!awaiting(&s) && cmp.hidden());
}

#[test]
fn a_vote_is_the_bar_a_choice_and_enter() {
    let mut s = arena();
    battle(&mut s, "Which is better?");
    // Tab reaches the bar with nothing chosen; Enter alone votes nothing.
    key(&mut s, KeyCode::Tab);
    assert!(s.vote_bar_focused());
    assert!(votes(&key(&mut s, KeyCode::Enter)).is_empty());
    // A letter, then Enter right after.
    key(&mut s, KeyCode::Char('b'));
    let fx = key(&mut s, KeyCode::Enter);
    assert_eq!(winner(&fx).as_deref(), Some("b"));
    let order: Vec<String> = s
        .compare
        .active
        .as_ref()
        .map(|c| c.columns.iter().map(|c| c.target.model.clone()).collect())
        .unwrap_or_default();
    let row = votes(&fx).remove(0);
    let models: Vec<String> = row.models.iter().map(|m| m.model.clone()).collect();
    assert_eq!(models, order);
    assert_eq!(row.prompt, "Which is better?");
    let group = s.compare.active.as_ref().map(|c| c.group.clone()).unwrap_or_default();
    assert_eq!(row.id, format!("{group}/1"), "the battle's id names its compare");
    assert!(s.arena().is_some_and(|a| a.revealed && a.vote.is_some()));
    assert_eq!(s.focus, Focus::Composer);
}

#[test]
fn the_arrows_choose_on_the_bar() {
    let mut s = arena();
    battle(&mut s, "q");
    key(&mut s, KeyCode::Tab);
    // → from nothing is the first option, A; → again is B; ← back to A; ← wraps to both bad.
    key(&mut s, KeyCode::Right);
    key(&mut s, KeyCode::Right);
    key(&mut s, KeyCode::Left);
    key(&mut s, KeyCode::Left);
    assert_eq!(winner(&key(&mut s, KeyCode::Enter)).as_deref(), Some("bad"));
}

#[test]
fn a_letter_followed_by_text_is_text() {
    let mut s = arena();
    battle(&mut s, "q");
    key(&mut s, KeyCode::Tab);
    let mut fx = typed(&mut s, "tell me more");
    fx.extend(key(&mut s, KeyCode::Enter));
    assert!(votes(&fx).is_empty(), "{fx:?}");
    assert_eq!(s.focus, Focus::Composer);
    assert!(s.arena().is_some_and(|a| a.vote.is_none() && !a.revealed));
    // The sentence went to the composer and Enter sent it to both.
    assert_eq!(starts(&fx).len(), 2);
    let cmp = s.compare.active.as_ref().unwrap_or_else(|| panic!("compare"));
    let last = cmp.columns[0].transcript.cells.iter().filter_map(|c| c.message()).nth(2).map(|m| m.text().to_owned());
    assert_eq!(last.as_deref(), Some("tell me more"));
}

#[test]
fn a_vote_is_final_once_the_names_are_shown() {
    let mut s = arena();
    battle(&mut s, "first");
    key(&mut s, KeyCode::Tab);
    key(&mut s, KeyCode::Char('a'));
    let first = votes(&key(&mut s, KeyCode::Enter));
    assert_eq!(first.len(), 1);
    // Choosing again, or u and Backspace, store nothing and change nothing.
    key(&mut s, KeyCode::Tab);
    key(&mut s, KeyCode::Char('t'));
    let fx = key(&mut s, KeyCode::Enter);
    assert!(votes(&fx).is_empty(), "{fx:?}");
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("the vote is final")));
    key(&mut s, KeyCode::Tab);
    let mut fx = key(&mut s, KeyCode::Char('u'));
    fx.extend(key(&mut s, KeyCode::Backspace));
    assert!(votes(&fx).is_empty(), "{fx:?}");
    assert!(s.arena().is_some_and(|a| a.vote == Some(super::Vote::A) && a.revealed));
    // The next prompt is a new battle with an id of its own.
    key(&mut s, KeyCode::Esc);
    battle(&mut s, "second");
    assert!(s.compare.active.as_ref().is_some_and(Compare::hidden));
    key(&mut s, KeyCode::Tab);
    key(&mut s, KeyCode::Char('a'));
    let second = votes(&key(&mut s, KeyCode::Enter));
    assert_eq!(second.len(), 1);
    assert_ne!(second[0].id, first[0].id);
}

#[test]
fn tab_goes_to_the_columns_when_there_is_nothing_to_vote_on() {
    let mut s = arena();
    key(&mut s, KeyCode::Tab);
    assert_eq!(s.focus, Focus::Transcript);
    assert!(!s.vote_bar_focused());
    // On the bar, Tab goes on to the columns, where k (keep) is refused before the vote.
    key(&mut s, KeyCode::Esc);
    battle(&mut s, "q");
    key(&mut s, KeyCode::Tab);
    key(&mut s, KeyCode::Tab);
    assert!(!s.vote_bar_focused() && s.focus == Focus::Transcript);
    key(&mut s, KeyCode::Char('k'));
    assert!(s.compare.is_active(), "k does not leave the arena before the vote");
}

#[test]
fn the_inspector_waits_for_the_vote() {
    let mut s = arena();
    battle(&mut s, "q");
    key(&mut s, KeyCode::F(3));
    assert!(s.overlays.is_empty(), "its requests would name the models");
    assert!(s.flash.as_ref().is_some_and(|f| f.text.contains("after the vote")));
    key(&mut s, KeyCode::Tab);
    key(&mut s, KeyCode::Char('a'));
    key(&mut s, KeyCode::Enter);
    key(&mut s, KeyCode::F(3));
    assert!(matches!(s.overlays.last(), Some(crate::app::overlay::Overlay::Inspector)));
}

#[test]
fn the_vote_bar_has_one_better_per_column() {
    use super::Vote;
    assert_eq!(Vote::options(3).iter().map(|v| v.letter()).collect::<String>(), "abctn");
    assert_eq!(Vote::options(9).len(), 6, "at most four columns");
    assert_eq!((Vote::BothBad.label(2), Vote::BothBad.label(3)), ("both bad", "all bad"));
    assert_eq!(Vote::C.stored(), "c");
}

#[test]
fn a_three_model_vote_is_one_battle_with_every_answers_style() {
    let mut s = test_state();
    let targets = ["demo", "demo-reasoning", "demo-tools"]
        .iter()
        .map(|m| TargetInfo::new("demo", *m, crate::api::Api::Chat))
        .collect();
    s.open_arena(targets, 3).unwrap_or_else(|e| panic!("{e}"));
    typed(&mut s, "q");
    let started = starts(&key(&mut s, KeyCode::Enter));
    assert_eq!(started.len(), 3);
    for &(generation, column, id) in &started {
        let events = vec![
            StreamEvent::Text { choice: 0, delta: "answer".into() },
            StreamEvent::Finish { choice: 0, reason: "stop".into() },
            StreamEvent::End,
        ];
        for event in
            [WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 10 }, WireEvent::Closed { at_ms: 20 }]
        {
            s.apply(Msg::Compare(CompareMsg::Wire { generation, column, id, event: Box::new(event), now_ms: 300 }));
        }
    }
    key(&mut s, KeyCode::Tab);
    typed(&mut s, "t");
    let cast = votes(&key(&mut s, KeyCode::Enter));
    assert_eq!(cast.len(), 1, "one battle, not three pairs");
    assert_eq!((cast[0].vote.as_str(), cast[0].models.len()), ("tie", 3));
    assert_eq!(cast[0].ranking(), [1, 1, 1]);
    // Each model carries its answers' style ("answer": six bytes, two tokens estimated).
    assert!(cast[0].models.iter().all(|m| m.style.is_some_and(|s| s.tokens == 2)));
}

#[test]
fn the_arena_refuses_a_model_named_twice() {
    let mut s = test_state();
    let t = |m: &str| TargetInfo::new("demo", m, crate::api::Api::Chat);
    let err = s.open_arena(vec![t("demo-reasoning"), t("demo"), t("demo-reasoning")], 3).err();
    assert_eq!(err.as_deref(), Some("the arena takes different models; demo-reasoning is named twice"));
    assert!(s.compare.active.is_none(), "no arena opened");
    assert!(s.open_arena(vec![t("demo-reasoning"), t("demo"), t("demo-tools")], 3).is_ok());
}
