//! The history as entries (a compare is one entry holding its columns), ids resolved to a
//! conversation or a compare, and import: export → import → export is the same file, an id
//! the store has is never overwritten, a compare's column slot is never doubled, and an import
//! that fails part way writes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::field_reassign_with_default)]

use palaver::engine::attachment::Attachment;
use palaver::engine::message::{Choice, Message, MessageStatus, Role, ToolCall, ToolStatus};
use palaver::store::entries::EntryRef;
use palaver::store::import::{Document, parse};
use palaver::store::{NewConversation, StoreError, StoreHandle, StoreOptions, export};
use serde_json::{Value, json};
use std::path::Path;

fn open(dir: &Path) -> StoreHandle {
    StoreHandle::open(&dir.join("palaver.sqlite3"), StoreOptions::default()).unwrap()
}

fn create(store: &StoreHandle, title: &str, model: &str, compare: Option<(&str, u32)>) -> String {
    store.create_conversation(NewConversation {
        title: title.into(),
        model: Some(model.into()),
        provider: Some("demo".into()),
        api: Some("chat".into()),
        compare: compare.map(|(g, c)| (g.to_owned(), c)),
    })
}

fn turn(store: &StoreHandle, id: &str, from: usize, prompt: &str, answer: &str) {
    store.save_message(id, from, &Message::user(prompt));
    store.save_message(id, from + 1, &Message::with_text(Role::Assistant, answer));
}

#[test]
fn a_compare_is_one_entry_where_its_newest_column_sorts() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let older = create(&store, "older", "demo", None);
    turn(&store, &older, 0, "first", "one");
    store.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let group = StoreHandle::new_compare_group();
    let cols: Vec<String> = ["demo", "demo-reasoning", "demo-slow"]
        .iter()
        .enumerate()
        .map(|(i, m)| create(&store, "hi", m, Some((&group, i as u32))))
        .collect();
    for c in &cols {
        turn(&store, c, 0, "hi", "hello");
    }
    store.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let newer = create(&store, "newer", "demo", None);
    turn(&store, &newer, 0, "later", "two");
    store.flush().unwrap();

    let entries = store.list_entries(usize::MAX, 0).unwrap();
    let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, [newer.as_str(), group.as_str(), older.as_str()]);
    let cmp = &entries[1];
    assert!(cmp.is_compare());
    assert_eq!((cmp.messages, cmp.model.as_deref(), cmp.title.as_str()), (6, None, "hi"));
    assert_eq!(cmp.models(), ["demo", "demo-reasoning", "demo-slow"]);
    assert_eq!(
        cmp.columns.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        cols.iter().map(String::as_str).collect::<Vec<_>>()
    );
    // Pages count entries, a compare once; the plain per-conversation list is unchanged.
    let page = store.list_entries(1, 1).unwrap();
    assert_eq!(page.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), [group.as_str()]);
    assert_eq!(store.list_entries(5, 2).unwrap().len(), 1);
    assert_eq!(store.list(usize::MAX, 0).unwrap().len(), 5);
    // A turn in the oldest column brings the whole compare to the top.
    std::thread::sleep(std::time::Duration::from_millis(5));
    turn(&store, &cols[2], 2, "more", "sure");
    store.flush().unwrap();
    assert_eq!(store.list_entries(1, 0).unwrap()[0].id, group);
}

#[test]
fn an_id_or_prefix_names_a_conversation_or_a_compare() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let group = "cmp-20260101-000000-aaaa";
    let col = create(&store, "hi", "demo", Some((group, 0)));
    let other = create(&store, "x", "demo", None);
    store.flush().unwrap();
    assert_eq!(store.resolve_entry(group).unwrap(), Some(EntryRef::Compare(group.into())));
    assert_eq!(store.resolve_entry("cmp-").unwrap(), Some(EntryRef::Compare(group.into())));
    assert_eq!(store.resolve_entry(&col).unwrap(), Some(EntryRef::Conversation(col.clone())));
    assert_eq!(store.resolve_entry("nothing").unwrap(), None);
    // A prefix both conversations share is ambiguous and names them.
    let shared: String = col.chars().zip(other.chars()).take_while(|(a, b)| a == b).map(|(a, _)| a).collect();
    match store.resolve_entry(&shared) {
        Err(StoreError::Ambiguous { matches, .. }) => assert!(matches.contains(&col) && matches.contains(&other)),
        other => panic!("{other:?}"),
    }
}

/// A conversation with every kind of content: a tool call with an image, an attachment, usage,
/// safety results, a failed reply and a second branch.
fn rich(store: &StoreHandle) -> String {
    let id = create(store, "rich", "demo-tools", Some(("cmp-20260101-000000-bbbb", 1)));
    let mut user = Message::user("look at this");
    user.attachments.push(Attachment::from_bytes("notes.txt", b"some notes\n".to_vec()).unwrap());
    let mut call = ToolCall::default();
    call.id = "call_1".into();
    call.name = "read_file".into();
    call.arguments = r#"{"path":"a.txt"}"#.into();
    call.output = Some("contents".into());
    call.status = ToolStatus::Done;
    call.images.push(Attachment::from_bytes("shot.txt", b"pretend image\n".to_vec()).unwrap());
    let mut main = Choice::default();
    main.content = "here".into();
    main.reasoning = "thinking".into();
    main.tool_calls = vec![call];
    main.finish_reason = Some("content_filter".into());
    main.content_filter = json!({"hate": {"filtered": true, "severity": "medium"}}).as_object().cloned();
    let mut reply = Message::default();
    reply.role = Some(Role::Assistant);
    reply.model = Some("demo-tools".into());
    reply.choices = vec![main];
    reply.usage = Some(json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}));
    reply.prompt_filter = Some(json!([{"prompt_index": 0, "content_filter_results": {}}]));
    let mut failed = Message::with_text(Role::Assistant, "partial");
    failed.status = MessageStatus::Failed;
    store.save_message(&id, 0, &user);
    store.save_message(&id, 1, &reply);
    store.save_message(&id, 2, &Message::tool_result("call_1", "contents"));
    store.save_message(&id, 3, &Message::user("and?"));
    store.save_message(&id, 4, &failed);
    let _ = store.fork(&id, 0, 3);
    store.save_message(&id, 3, &Message::user("and then?"));
    store.save_message(&id, 4, &Message::with_text(Role::Assistant, "done"));
    store.flush().unwrap();
    id
}

fn export_json(store: &StoreHandle, id: &str) -> String {
    serde_json::to_string_pretty(&export::export(store, id).unwrap().unwrap()).unwrap()
}

fn import_text(store: &StoreHandle, text: &str) -> Vec<palaver::store::Imported> {
    store.import(parse(text).unwrap()).unwrap()
}

#[test]
fn export_import_export_is_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let id = rich(&store);
    let first = export_json(&store, &id);
    let v: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(v["attachments"].as_object().map(serde_json::Map::len), Some(2), "both files travel: {first}");
    assert_eq!(v["branches"].as_array().map(Vec::len), Some(2));

    // Into an empty history: the same id, the same times, the same everything.
    let dir2 = tempfile::tempdir().unwrap();
    let other = open(dir2.path());
    let done = import_text(&other, &first);
    assert_eq!((done[0].id.as_str(), done[0].renamed_from.as_deref()), (id.as_str(), None));
    assert_eq!(export_json(&other, &id), first);
    let back = other.load(&id).unwrap().unwrap();
    let bytes =
        |m: &Message| m.all_attachments().map(|a| a.data.as_ref().map(|d| d.bytes().to_vec())).collect::<Vec<_>>();
    assert_eq!(bytes(&back.messages[0]), [Some(b"some notes\n".to_vec())]);
    assert_eq!(bytes(&back.messages[1]), [Some(b"pretend image\n".to_vec())]);
    assert_eq!(other.search("thinking", 10).unwrap().len(), 1, "imported text is searchable");

    // Into the history it came from: a new id and no compare slot taken twice; nothing else changes.
    let again = import_text(&store, &first);
    assert_ne!(again[0].id, id);
    assert_eq!(again[0].renamed_from.as_deref(), Some(id.as_str()));
    assert_eq!(again[0].group_dropped.as_deref(), Some("cmp-20260101-000000-bbbb"));
    assert_eq!(store.get(&id).unwrap().unwrap().title, "rich", "the original is untouched");
    let mut copy: Value = serde_json::from_str(&export_json(&store, &again[0].id)).unwrap();
    let mut orig = v.clone();
    for x in [&mut copy, &mut orig] {
        x["id"] = Value::Null;
        x["compare_group"] = Value::Null;
        x["compare_column"] = Value::Null;
    }
    assert_eq!(copy, orig);
}

#[test]
fn a_compare_round_trips_and_an_import_that_fails_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let group = StoreHandle::new_compare_group();
    for (i, m) in ["demo", "demo-reasoning"].iter().enumerate() {
        let c = create(&store, "hi", m, Some((&group, i as u32)));
        turn(&store, &c, 0, "hi", &format!("answer of {m}"));
    }
    store.flush().unwrap();
    let text = serde_json::to_string_pretty(&export::export_compare(&store, &group).unwrap().unwrap()).unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let other = open(dir2.path());
    let Document::Compare(doc) = parse(&text).unwrap() else { panic!("not a compare") };
    let done = other.import(Document::Compare(doc)).unwrap();
    assert_eq!(done.iter().map(|d| d.compare.clone().unwrap().0).collect::<Vec<_>>(), [group.clone(), group.clone()]);
    let back = serde_json::to_string_pretty(&export::export_compare(&other, &group).unwrap().unwrap()).unwrap();
    assert_eq!(back, text);

    // A database that refuses the second column's reply: nothing of the compare is left.
    let dir3 = tempfile::tempdir().unwrap();
    let third = open(dir3.path());
    rusqlite::Connection::open(dir3.path().join("palaver.sqlite3"))
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER poison BEFORE INSERT ON messages WHEN new.content = 'answer of demo-reasoning'
             BEGIN SELECT RAISE(ABORT, 'poisoned'); END;",
        )
        .unwrap();
    let err = third.import(parse(&text).unwrap()).unwrap_err();
    assert!(err.to_string().contains("poisoned"), "{err}");
    assert!(third.list_entries(usize::MAX, 0).unwrap().is_empty(), "all or nothing");
    assert!(third.search("answer", 10).unwrap().is_empty());
    // The writer carries on after a failed import.
    let after = create(&third, "after", "demo", None);
    turn(&third, &after, 0, "still", "works");
    third.flush().unwrap();
    assert_eq!(third.list_entries(usize::MAX, 0).unwrap().len(), 1);
}

#[test]
fn continue_takes_the_newest_conversation_that_is_not_a_compare_column() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let chat = create(&store, "chat", "demo", None);
    turn(&store, &chat, 0, "first", "one");
    store.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let group = StoreHandle::new_compare_group();
    let col = create(&store, "hi", "demo-reasoning", Some((&group, 0)));
    turn(&store, &col, 0, "hi", "hello");
    store.flush().unwrap();
    assert_eq!(store.list(1, 0).unwrap()[0].id, col, "the column is the newest row");
    assert_eq!(store.latest().unwrap().map(|s| s.id), Some(chat), "--continue goes on with the chat");
}

#[test]
fn a_long_conversation_loads_as_its_tail_then_its_head_and_the_two_make_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let id = create(&store, "long", "demo", None);
    for i in 0..30 {
        turn(&store, &id, 2 * i, &format!("prompt {i}"), &format!("answer {i}"));
    }
    store.flush().unwrap();
    let whole = store.load(&id).unwrap().unwrap();
    // Short enough to load whole: no tail.
    assert!(store.load_tail(&id, 10, 60).unwrap().is_none());
    let (tail, older) = store.load_tail(&id, 10, 40).unwrap().unwrap();
    assert_eq!(older, 50);
    assert_eq!(tail.messages, whole.messages[50..]);
    assert_eq!(tail.summary, whole.summary);
    let head = store.load_head(&id, tail.branch, older).unwrap();
    assert_eq!(head, whole.messages[..50]);
    // A head asked for beyond what is there (the conversation changed meanwhile) is an error.
    assert!(store.load_head(&id, tail.branch, 70).is_err());
    // A conversation with a branch loads whole (its kept versions need every view).
    let b = store.fork(&id, tail.branch, 58);
    store.save_message_in(&id, Some(b), 58, &Message::user("another way"));
    store.flush().unwrap();
    assert!(store.load_tail(&id, 10, 40).unwrap().is_none());
}
