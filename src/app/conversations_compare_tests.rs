//! Compares in the conversation list: one row, columns on demand, reopened side by side with
//! every column's conversation carrying on in the store; a column opened as a chat says so.

use super::super::tests::conv;
use super::*;
use crate::app::Msg;
use crate::app::compare::CompareEffect;
use crate::app::conversations::{ConversationList, ListAction};
use crate::app::overlay::Overlay;
use crate::app::persist::{ConvKey, StoreMsg};
use crate::app::test_state;
use crate::engine::message::{Message, Role};
use crate::store::entries::ListEntry;
use crate::store::{BranchInfo, StoredConversation};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn k(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn column(id: &str, model: &str, provider: &str, n: u32) -> ConversationSummary {
    let mut c = conv(id, "hi", 2);
    c.model = Some(model.into());
    c.provider = Some(provider.into());
    c.compare_group = Some("cmp-g".into());
    c.compare_column = Some(n);
    c
}

fn entries() -> Vec<ListEntry> {
    let cols = vec![column("c1", "demo", "demo", 0), column("c2", "demo-reasoning", "demo", 1)];
    vec![
        ListEntry::conversation(conv("a", "Alpha", 2)),
        ListEntry::compare("cmp-g", cols).unwrap_or_else(|| panic!("a compare")),
        ListEntry::conversation(conv("b", "Beta", 1)),
    ]
}

fn listed() -> ConversationList {
    let mut l = ConversationList::new(1, None);
    l.listed(0, Ok(entries()));
    l
}

#[test]
fn a_compare_is_one_row_whose_columns_show_on_demand() {
    let mut l = listed();
    assert_eq!(l.len(), 3);
    assert_eq!((l.rows[1].model.as_str(), l.rows[1].messages), ("compare · 2 models", 4));
    l.key(&k(KeyCode::Down));
    assert_eq!(l.key(&k(KeyCode::Enter)), ListAction::OpenCompare { group: "cmp-g".into() });
    l.key(&k(KeyCode::Right));
    assert_eq!((l.len(), l.selected), (5, 1), "its columns show under it; the compare stays selected");
    l.key(&k(KeyCode::Right));
    l.key(&k(KeyCode::Down));
    assert_eq!(l.selection().map(|s| s.0), Some("c2"));
    assert_eq!(l.key(&k(KeyCode::Enter)), ListAction::Open { id: "c2".into(), branch: None, position: None });
    l.key(&k(KeyCode::Left));
    assert_eq!((l.len(), l.selected), (3, 1), "← folds it and selects the compare again");
    l.key(&k(KeyCode::Right));
    l.key(&k(KeyCode::End));
    assert_eq!(l.selection().map(|s| s.0), Some("b"), "the last row is still reachable");
}

#[test]
fn rename_and_delete_of_a_compare_act_on_every_column() {
    let mut l = listed();
    l.key(&k(KeyCode::Down));
    l.key(&ctrl('r'));
    l.key(&k(KeyCode::Char('!')));
    let ids = vec!["c1".to_owned(), "c2".to_owned()];
    assert_eq!(l.key(&k(KeyCode::Enter)), ListAction::Rename { ids: ids.clone(), title: "hi!".into() });
    assert_eq!(l.rows[1].title, "hi!");
    l.key(&ctrl('d'));
    assert_eq!(l.key(&k(KeyCode::Char('y'))), ListAction::Delete { ids });
    assert_eq!(l.rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    // Deleting one column leaves the compare with the other.
    let mut l = listed();
    l.key(&k(KeyCode::Down));
    l.key(&k(KeyCode::Right));
    l.key(&k(KeyCode::Down));
    l.key(&ctrl('d'));
    assert_eq!(l.key(&k(KeyCode::Char('y'))), ListAction::Delete { ids: vec!["c1".into()] });
    assert_eq!((l.rows[1].columns.len(), l.rows[1].messages), (1, 2));
}

#[test]
fn the_open_compare_is_not_deleted_and_an_arena_hides_its_models() {
    let mut l = ConversationList::new(1, None);
    l.current_group = Some("cmp-g".into());
    l.hidden_group = Some("cmp-g".into());
    l.listed(0, Ok(entries()));
    l.key(&k(KeyCode::Down));
    assert_eq!(l.key(&k(KeyCode::Enter)), ListAction::Close, "it is already on screen");
    l.key(&ctrl('d'));
    assert_eq!(l.mode, super::super::Mode::Browse);
    assert!(l.error.as_deref().is_some_and(|e| e.contains("leave it first")));
    assert!(l.rows[1].columns.iter().all(|c| c.model == super::super::rows::HIDDEN_MODEL));
    let mut h = crate::store::Hit {
        conversation_id: "c2".into(),
        title: "hi".into(),
        branch: 0,
        position: 1,
        role: "assistant".into(),
        snippet: "x".into(),
        ranges: Vec::new(),
        updated_at: 0,
        model: Some("demo-reasoning".into()),
        compare_group: Some("cmp-g".into()),
    };
    l.query = "x".into();
    l.found(Ok(vec![h.clone()]));
    assert_eq!(l.hits[0].model, super::super::rows::HIDDEN_MODEL);
    h.compare_group = None;
    l.found(Ok(vec![h]));
    assert_eq!(l.hits[0].model, "demo-reasoning");
}

fn loaded(s: ConversationSummary, answer: &str) -> Loaded {
    let messages = vec![Message::user("hi"), Message::with_text(Role::Assistant, answer)];
    let branches = vec![BranchInfo { branch: 0, parent: None, fork_position: 0, created_at: 0, messages: 2 }];
    Loaded {
        active: StoredConversation { summary: s, branch: 0, messages, branches },
        others: Vec::new(),
        switch: false,
        focus: None,
        adopt_model: false,
        notice: None,
        older: 0,
    }
}

#[test]
fn reopening_a_compare_puts_every_column_back_and_new_turns_go_on_in_them() {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    s.apply(Msg::Key(ctrl('l')));
    s.apply(Msg::Store(StoreMsg::Listed { seq: 1, offset: 0, result: Ok(entries()) }));
    s.apply(Msg::Key(k(KeyCode::Down)));
    let fx = s.apply(Msg::Key(k(KeyCode::Enter)));
    assert!(fx.contains(&Effect::Persist(PersistOp::OpenCompare { group: "cmp-g".into() })), "{fx:?}");
    assert!(!s.overlays.iter().any(|o| matches!(o, Overlay::Conversations(_))));
    let cols = vec![
        loaded(column("c1", "demo", "demo", 0), "one"),
        loaded(column("c2", "demo-reasoning", "gone-provider", 1), "two"),
    ];
    s.apply(Msg::Store(StoreMsg::OpenedCompare(Ok(Box::new(LoadedCompare { group: "cmp-g".into(), columns: cols })))));
    let cmp = s.compare.active.as_ref().unwrap_or_else(|| panic!("no compare"));
    assert_eq!(cmp.group, "cmp-g");
    let models: Vec<_> = cmp.columns.iter().map(|c| (c.target.model.as_str(), c.target.provider.as_str())).collect();
    assert_eq!(models, [("demo", "demo"), ("demo-reasoning", "demo")], "a provider that is gone: the chat's");
    assert_eq!(cmp.columns[1].transcript.cells.iter().filter_map(|c| c.message()).count(), 2);
    let flash = s.flash.as_ref().map(|f| f.text.clone()).unwrap_or_default();
    assert!(flash.contains("column 2: provider gone-provider is not configured"), "{flash}");
    // The next prompt goes to both columns and is saved in their own conversations.
    for c in "again".chars() {
        s.apply(Msg::Key(k(KeyCode::Char(c))));
    }
    let fx = s.apply(Msg::Key(k(KeyCode::Enter)));
    let starts = fx.iter().filter(|e| matches!(e, Effect::Compare(CompareEffect::Start { .. }))).count();
    assert_eq!(starts, 2, "{fx:?}");
    let saves: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Persist(PersistOp::Save { conv: ConvKey::Stored(id), position, .. }) => {
                Some((id.as_str(), *position))
            }
            _ => None,
        })
        .collect();
    assert!(saves.contains(&("c1", 2)) && saves.contains(&("c2", 2)), "{saves:?}");
    assert!(!fx.iter().any(|e| matches!(e, Effect::Persist(PersistOp::Create { .. }))), "no new conversation");
}

#[test]
fn a_column_opened_as_a_chat_says_which_compare_it_is_from() {
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    s.apply(Msg::Store(StoreMsg::Opened(Ok(Box::new(loaded(column("c2", "demo-reasoning", "demo", 1), "two"))))));
    let notes: Vec<_> = s
        .transcript
        .cells
        .iter()
        .filter_map(|c| match c {
            crate::app::transcript::Cell::Notice(n) => Some(n.text.as_str()),
            crate::app::transcript::Cell::Message(_) => None,
        })
        .collect();
    assert!(notes.iter().any(|n| n.contains("column 2 (demo-reasoning) of compare cmp-g")), "{notes:?}");
    // A single column left opens as a chat too.
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    let one = vec![loaded(column("c1", "demo", "demo", 0), "one")];
    s.apply(Msg::Store(StoreMsg::OpenedCompare(Ok(Box::new(LoadedCompare { group: "cmp-g".into(), columns: one })))));
    assert!(s.compare.active.is_none());
    assert!(s.persist.is_current("c1"));
}
