//! The list overlay: search input, selection, rename, delete confirmation, and the effects the
//! state emits for them.

use super::*;
use crate::app::effect::Effect;
use crate::app::msg::Msg;
use crate::app::overlay::Overlay;
use crate::app::persist::PersistOp;
use crate::app::persist::StoreMsg;
use crate::app::test_state;
use crate::store::ConversationSummary;

fn k(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn summary(id: &str, title: &str, n: u64) -> ListEntry {
    ListEntry::conversation(conv(id, title, n))
}

pub(super) fn conv(id: &str, title: &str, n: u64) -> ConversationSummary {
    ConversationSummary {
        id: id.into(),
        title: title.into(),
        model: Some("demo".into()),
        provider: Some("demo".into()),
        api: Some("chat".into()),
        created_at: 1_700_000_000_000,
        updated_at: 1_700_000_000_000,
        messages: n,
        active_branch: 0,
        compare_group: None,
        compare_column: None,
    }
}

fn hit(id: &str, position: usize) -> Hit {
    Hit {
        conversation_id: id.into(),
        title: format!("title {id}"),
        branch: 7,
        position,
        role: "assistant".into(),
        snippet: "…the borrow checker…".into(),
        ranges: std::iter::once(4..10).collect(),
        updated_at: 1_700_000_000_000,
        model: Some("demo".into()),
        compare_group: None,
    }
}

fn listed() -> ConversationList {
    let mut l = ConversationList::new(1, Some("b".into()));
    l.listed(0, Ok(vec![summary("a", "Alpha", 2), summary("b", "Beta", 4), summary("c", "Gamma", 1)]));
    l
}

fn typed(l: &mut ConversationList, text: &str) -> ListAction {
    let mut last = ListAction::Consumed;
    for c in text.chars() {
        last = l.key(&k(KeyCode::Char(c)));
    }
    last
}

#[test]
fn typing_searches_and_numbers_each_request() {
    let mut l = listed();
    assert_eq!(typed(&mut l, "bo"), ListAction::Search { seq: 2, query: "bo".into() });
    assert!(l.searching_mode() && l.searching);
    assert_eq!(l.key(&k(KeyCode::Backspace)), ListAction::Search { seq: 3, query: "b".into() });
    // Emptying the query goes back to the list without a search.
    assert_eq!(l.key(&k(KeyCode::Backspace)), ListAction::Consumed);
    assert!(!l.searching_mode());
    assert_eq!(l.len(), 3);
}

#[test]
fn selection_moves_and_stays_in_range() {
    let mut l = listed();
    l.key(&k(KeyCode::Down));
    l.key(&k(KeyCode::Down));
    l.key(&k(KeyCode::Down));
    assert_eq!(l.selected, 2);
    l.key(&k(KeyCode::PageUp));
    assert_eq!(l.selected, 0);
    l.key(&k(KeyCode::Tab));
    l.key(&k(KeyCode::Char('G')));
    assert_eq!(l.selected, 2);
    l.key(&k(KeyCode::Char('k')));
    assert_eq!(l.selected, 1);
}

#[test]
fn enter_opens_the_selected_row_or_hit() {
    let mut l = listed();
    assert_eq!(l.key(&k(KeyCode::Enter)), ListAction::Open { id: "a".into(), branch: None, position: None });
    l.key(&k(KeyCode::Down));
    assert_eq!(l.key(&k(KeyCode::Enter)), ListAction::Close, "the current one is already open");
    typed(&mut l, "borrow");
    l.found(Ok(vec![hit("x", 3), hit("y", 5)]));
    l.key(&k(KeyCode::Down));
    assert_eq!(l.key(&k(KeyCode::Enter)), ListAction::Open { id: "y".into(), branch: Some(7), position: Some(5) });
}

#[test]
fn rename_edits_the_title_inline() {
    let mut l = listed();
    l.key(&k(KeyCode::Tab));
    assert_eq!(l.key(&k(KeyCode::Char('r'))), ListAction::Consumed);
    assert_eq!(l.mode, Mode::Rename("Alpha".into()));
    for _ in 0..5 {
        l.key(&k(KeyCode::Backspace));
    }
    typed(&mut l, "Omega  one");
    assert_eq!(l.mode, Mode::Rename("Omega  one".into()));
    assert_eq!(l.key(&k(KeyCode::Enter)), ListAction::Rename { ids: vec!["a".into()], title: "Omega one".into() });
    assert_eq!(l.mode, Mode::Browse);
    assert_eq!(l.rows[0].title, "Omega one");
    // Esc leaves the title alone; Ctrl+R works from the search field too.
    l.key(&k(KeyCode::Char('/')));
    l.key(&ctrl('r'));
    typed(&mut l, "xx");
    assert_eq!(l.key(&k(KeyCode::Esc)), ListAction::Consumed);
    assert_eq!((l.mode.clone(), l.rows[0].title.as_str()), (Mode::Browse, "Omega one"));
}

#[test]
fn delete_asks_first_and_only_y_deletes() {
    let mut l = listed();
    l.key(&k(KeyCode::Tab));
    l.key(&k(KeyCode::Char('d')));
    assert_eq!(l.mode, Mode::ConfirmDelete);
    assert_eq!(l.key(&k(KeyCode::Enter)), ListAction::Consumed);
    assert_eq!((l.mode.clone(), l.rows.len()), (Mode::Browse, 3));
    l.key(&k(KeyCode::Char('d')));
    assert_eq!(l.key(&k(KeyCode::Char('n'))), ListAction::Consumed);
    assert_eq!(l.rows.len(), 3);
    l.key(&k(KeyCode::Char('d')));
    assert_eq!(l.key(&k(KeyCode::Char('y'))), ListAction::Delete { ids: vec!["a".into()] });
    assert_eq!(l.rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["b", "c"]);
}

#[test]
fn letters_in_the_rows_are_commands_and_others_start_a_search() {
    let mut l = listed();
    l.key(&k(KeyCode::Tab));
    assert_eq!(l.key(&k(KeyCode::Char('n'))), ListAction::New);
    assert_eq!(l.key(&k(KeyCode::Char('x'))), ListAction::Search { seq: 1, query: "x".into() });
    assert_eq!(l.focus, ListFocus::Search);
    // In the search field the same letters are text.
    assert_eq!(l.key(&k(KeyCode::Char('n'))), ListAction::Search { seq: 2, query: "xn".into() });
    assert_eq!(l.key(&ctrl('q')), ListAction::Ignored, "global keys pass through");
}

#[test]
fn a_full_page_asks_for_the_next_one_near_its_end() {
    let mut l = ConversationList::new(1, None);
    let page: Vec<_> = (0..super::super::storage::PAGE).map(|i| summary(&i.to_string(), "t", 1)).collect();
    l.listed(0, Ok(page));
    assert!(l.more);
    let mut asked = None;
    for _ in 0..super::super::storage::PAGE {
        if let ListAction::More { offset } = l.key(&k(KeyCode::Down)) {
            asked = Some(offset);
            break;
        }
    }
    assert_eq!(asked, Some(super::super::storage::PAGE));
    l.listed(super::super::storage::PAGE, Ok(vec![summary("last", "t", 1)]));
    assert_eq!(l.rows.len(), super::super::storage::PAGE + 1);
    assert!(!l.more);
}

fn persist_ops(fx: &[Effect]) -> Vec<PersistOp> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Persist(op) => Some(op.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_state_lists_searches_and_drops_stale_answers() {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    let fx = s.apply(Msg::Key(ctrl('l')));
    assert_eq!(persist_ops(&fx), [PersistOp::List { seq: 1, offset: 0 }]);
    s.apply(Msg::Store(StoreMsg::Listed { seq: 1, offset: 0, result: Ok(vec![summary("a", "Alpha", 2)]) }));
    let fx = s.apply(Msg::Key(k(KeyCode::Char('b'))));
    assert_eq!(persist_ops(&fx), [PersistOp::Search { seq: 1, query: "b".into() }]);
    let fx = s.apply(Msg::Key(k(KeyCode::Char('o'))));
    assert_eq!(persist_ops(&fx), [PersistOp::Search { seq: 2, query: "bo".into() }]);
    // The answer to "b" arrives late and is ignored; the one to "bo" is shown.
    s.apply(Msg::Store(StoreMsg::Found { seq: 1, result: Ok(vec![hit("old", 0)]) }));
    s.apply(Msg::Store(StoreMsg::Found { seq: 2, result: Ok(vec![hit("new", 1)]) }));
    let Some(Overlay::Conversations(l)) = s.overlays.last() else { panic!("no list") };
    assert_eq!(l.hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["new"]);
    // Enter opens it: the overlay closes and the load goes out.
    let fx = s.apply(Msg::Key(k(KeyCode::Enter)));
    assert!(s.overlays.is_empty());
    assert_eq!(persist_ops(&fx), [PersistOp::Open { id: "new".into(), branch: Some(7), focus: Some(1) }]);
}

#[test]
fn the_state_renames_deletes_and_starts_new() {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    s.apply(Msg::Key(ctrl('l')));
    s.apply(Msg::Store(StoreMsg::Listed {
        seq: 1,
        offset: 0,
        result: Ok(vec![summary("a", "Alpha", 2), summary("b", "Beta", 1)]),
    }));
    s.apply(Msg::Key(ctrl('r')));
    s.apply(Msg::Key(k(KeyCode::Char('!'))));
    let fx = s.apply(Msg::Key(k(KeyCode::Enter)));
    assert_eq!(persist_ops(&fx), [PersistOp::Rename { id: "a".into(), title: "Alpha!".into() }]);
    s.apply(Msg::Key(ctrl('d')));
    let fx = s.apply(Msg::Key(k(KeyCode::Char('y'))));
    assert_eq!(persist_ops(&fx), [PersistOp::Delete { id: "a".into() }]);
    assert!(matches!(s.overlays.last(), Some(Overlay::Conversations(l)) if l.rows.len() == 1));
    s.apply(Msg::Key(ctrl('n')));
    assert!(s.overlays.is_empty());
}

#[test]
fn deleting_the_open_conversation_clears_the_screen_and_does_not_resave_it() {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    for c in "hello".chars() {
        s.apply(Msg::Key(k(KeyCode::Char(c))));
    }
    s.apply(Msg::Key(k(KeyCode::Enter)));
    s.apply(Msg::Store(StoreMsg::Created { local: 1, id: "cur".into() }));
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    s.apply(Msg::Key(ctrl('l')));
    s.apply(Msg::Store(StoreMsg::Listed { seq: 1, offset: 0, result: Ok(vec![summary("cur", "hello", 2)]) }));
    s.apply(Msg::Key(ctrl('d')));
    let fx = s.apply(Msg::Key(k(KeyCode::Char('y'))));
    assert_eq!(persist_ops(&fx), [PersistOp::Delete { id: "cur".into() }]);
    assert!(s.transcript.cells.iter().all(|c| c.message().is_none()));
    assert!(s.persist.conv.is_none());
}

#[test]
fn without_a_store_the_list_says_why() {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Unavailable("cannot open x".into())));
    let fx = s.apply(Msg::Key(ctrl('l')));
    assert!(persist_ops(&fx).is_empty());
    let Some(Overlay::Conversations(l)) = s.overlays.last() else { panic!("no list") };
    assert!(l.error.as_deref().is_some_and(|e| e.contains("cannot open x")));
}

#[test]
fn a_hit_in_the_open_conversation_selects_it_without_reloading() {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    for c in "hello borrow".chars() {
        s.apply(Msg::Key(k(KeyCode::Char(c))));
    }
    s.apply(Msg::Key(k(KeyCode::Enter)));
    s.apply(Msg::Store(StoreMsg::Created { local: 1, id: "cur".into() }));
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    s.apply(Msg::Key(ctrl('l')));
    for c in "borrow".chars() {
        s.apply(Msg::Key(k(KeyCode::Char(c))));
    }
    let mut h = hit("cur", 0);
    h.branch = 0;
    s.apply(Msg::Store(StoreMsg::Found { seq: 6, result: Ok(vec![h]) }));
    let fx = s.apply(Msg::Key(k(KeyCode::Enter)));
    assert!(persist_ops(&fx).is_empty(), "{fx:?}");
    let first = s.transcript.cells.iter().find_map(|c| c.message()).map(|m| m.id);
    assert_eq!(s.selected, first);
}
