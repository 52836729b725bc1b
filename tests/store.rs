//! The session store: lossless round trips, migrations, concurrent reads while writing,
//! search, cascading deletes, crash recovery on open, failures as notices, coalescing, and
//! that no API key ever reaches the disk.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::field_reassign_with_default, clippy::disallowed_methods)]

use palaver::engine::message::{
    Choice, ErrorInfo, Message, MessageStatus, RawFrame, Role, Timing, ToolCall, ToolStatus,
};
use palaver::store::ops::{NewRow, Op};
use palaver::store::writer::{Writer, WriterConfig};
use palaver::store::{NewConversation, NoticeKind, StoreError, StoreHandle, StoreNotice, StoreOptions, export, schema};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Notices = Arc<Mutex<Vec<StoreNotice>>>;

fn options(notices: &Notices) -> StoreOptions {
    let sink = notices.clone();
    StoreOptions { on_notice: Some(Arc::new(move |n| sink.lock().unwrap().push(n))), ..StoreOptions::default() }
}

fn open(dir: &Path) -> (StoreHandle, Notices) {
    let notices = Notices::default();
    (StoreHandle::open(&dir.join("palaver.sqlite3"), options(&notices)).unwrap(), notices)
}

fn conversation(store: &StoreHandle, title: &str) -> String {
    store.create_conversation(NewConversation { title: title.into(), model: Some("m".into()), ..Default::default() })
}

/// A message with every field set to something other than its default.
fn full_message() -> Message {
    let mut call = ToolCall::default();
    call.id = "call_1".into();
    call.name = "read_file".into();
    call.arguments = r#"{"path":"a.txt"}"#.into();
    call.output = Some("file contents".into());
    call.status = ToolStatus::Done;
    call.duration_ms = Some(12);
    call.extra = Some(json!({"extra_content": {"google": {"thought_signature": "sig"}}}));
    call.kind = "custom".into();
    let mut main = Choice::default();
    main.index = 0;
    main.content = "The answer is **42**. ```rust\nfn main() {}\n```".into();
    main.reasoning = "Let me think about foxes.".into();
    main.refusal = "I can't help with the rest.".into();
    main.tool_calls = vec![call];
    main.finish_reason = Some("content_filter".into());
    main.content_filter = Some(json!({"hate": {"filtered": true, "severity": "medium"}}).as_object().cloned().unwrap());
    main.filter_notes = vec![json!({"check_offset": 10})];
    main.logprobs = vec![json!({"token": "The", "logprob": -0.1})];
    main.annotations = vec![json!({"type": "url_citation", "url": "https://example.com"})];
    let mut second = main.clone();
    second.index = 1;
    second.content = "the second choice".into();
    let mut m = Message::default();
    m.id = 7;
    m.revision = 99;
    m.role = Some(Role::Assistant);
    m.status = MessageStatus::Failed;
    m.choices = vec![main, second];
    m.tool_call_id = Some("call_0".into());
    m.tool_kind = Some("custom".into());
    m.provider = Some("azure".into());
    m.model = Some("gpt-4o-mini".into());
    m.api = Some("responses".into());
    m.meta.id = Some("resp_1".into());
    m.meta.model = Some("gpt-4o-mini-2024".into());
    m.meta.created = Some(1_700_000_000);
    m.meta.system_fingerprint = Some("fp_1".into());
    m.meta.service_tier = Some("default".into());
    m.usage = Some(json!({"prompt_tokens": 12, "completion_tokens": 15, "total_tokens": 27,
        "prompt_tokens_details": {"cached_tokens": 4}}));
    m.prompt_filter = Some(json!([{"prompt_index": 0, "content_filter_results": {"jailbreak": {"detected": true}}}]));
    m.items = vec![json!({"type": "message", "status": "completed"}), json!({"type": "reasoning", "id": "rs_1"})];
    m.error =
        Some(ErrorInfo { status: Some(429), message: "slow down".into(), kind: "http".into(), body: json!({"e": 1}) });
    m.damaged = vec!["bad json: {".into()];
    m.unknown = vec![json!({"event": "ping", "raw": "{}"})];
    m.timing = Timing { started_at_ms: 1_700_000_000_000, ttft_ms: Some(180), total_ms: Some(950), deltas: 33 };
    m.http_status = Some(200);
    m.response_headers = vec![("x-request-id".into(), "req_1".into())];
    m.frames = vec![
        RawFrame { at_ms: 5, event: "message".into(), data: r#"{"choices":[]}"#.into() },
        RawFrame { at_ms: 9, event: "done".into(), data: "[DONE]".into() },
    ];
    m.frames_bytes = m.frames.iter().map(|f| f.data.len() + f.event.len()).sum();
    m.frames_dropped = 3;
    m
}

/// Fails when a field of the message is left at its default, so a field added to `Message`
/// later cannot escape the round trip test.
fn assert_all_set(v: &Value, path: &str) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                match k.as_str() {
                    "index" => {}
                    // Provider JSON kept as sent: only has to be there.
                    "usage" | "prompt_filter" | "items" | "unknown" | "body" | "extra" | "content_filter"
                    | "filter_notes" | "logprobs" | "annotations" => {
                        assert!(!x.is_null(), "{path}.{k} is null: set it in full_message()");
                    }
                    _ => assert_all_set(x, &format!("{path}.{k}")),
                }
            }
        }
        Value::Array(a) => {
            assert!(!a.is_empty(), "{path} is empty: set it in full_message()");
            assert_all_set(&a[0], &format!("{path}[0]"));
        }
        Value::Null => panic!("{path} is null: set it in full_message()"),
        Value::Bool(false) => panic!("{path} is false: set it in full_message()"),
        Value::String(s) => assert!(!s.is_empty(), "{path} is empty: set it in full_message()"),
        Value::Number(n) => assert!(n.as_f64() != Some(0.0), "{path} is 0: set it in full_message()"),
        Value::Bool(true) => {}
    }
}

#[test]
fn every_message_field_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let notices = Notices::default();
    let store = StoreHandle::open(
        &dir.path().join("palaver.sqlite3"),
        StoreOptions { store_frames: true, ..options(&notices) },
    )
    .unwrap();
    let msg = full_message();
    assert_all_set(&serde_json::to_value(&msg).unwrap(), "message");
    let id = conversation(&store, "round trip");
    let user = Message::user("hello");
    store.save_message(&id, 0, &user);
    store.save_message(&id, 1, &msg);
    store.flush().unwrap();
    let loaded = store.load(&id).unwrap().unwrap();
    assert_eq!(loaded.messages, vec![user, msg.clone()]);
    assert_eq!(loaded.summary.messages, 2);
    assert_eq!(loaded.summary.model.as_deref(), Some("gpt-4o-mini"), "the last reply's model");
    // Reopened by another handle (a new process), still identical.
    drop(store);
    let (again, _) = open(dir.path());
    assert_eq!(again.load(&id).unwrap().unwrap().messages[1], msg);
    assert!(notices.lock().unwrap().is_empty(), "{:?}", notices.lock().unwrap());
}

#[test]
fn frames_are_off_by_default_and_counted_as_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let id = conversation(&store, "frames");
    let mut msg = full_message();
    store.save_streaming(&id, 0, &mut msg);
    assert_eq!(msg.frames.len(), 2, "the caller's message keeps its frames");
    msg.status = MessageStatus::Complete;
    store.save_message(&id, 0, &msg);
    store.flush().unwrap();
    let got = store.load(&id).unwrap().unwrap().messages.remove(0);
    assert!(got.frames.is_empty());
    assert_eq!((got.frames_bytes, got.frames_dropped), (0, 5));
    assert_eq!(got.main(), msg.main());
}

#[test]
fn json_export_reimports_every_field_and_branch() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let id = conversation(&store, "export me");
    let msgs = [Message::user("q1"), full_message(), Message::tool_result("call_1", "out"), Message::user("q2")];
    for (i, m) in msgs.iter().enumerate() {
        store.save_message(&id, i, m);
    }
    let branch = store.fork(&id, 0, 3);
    store.save_message(&id, 3, &Message::user("q2, edited"));
    store.flush().unwrap();
    let text = serde_json::to_string_pretty(&export::export(&store, &id).unwrap().unwrap()).unwrap();
    let parsed = export::parse(&text).unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let (other, _) = open(dir2.path());
    let new_id = export::import(&other, &parsed).unwrap();
    assert_eq!(new_id, id);
    let (a, b) = (store.load(&id).unwrap().unwrap(), other.load(&id).unwrap().unwrap());
    assert_eq!(a.branch, branch);
    assert_eq!(a.messages[3].text(), "q2, edited");
    let frameless = |m: &Message| Message { frames: vec![], frames_bytes: 0, ..m.clone() };
    assert_eq!(b.messages, a.messages.iter().map(frameless).collect::<Vec<_>>());
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.branches, b.branches);
    let root = other.load_branch(&id, 0).unwrap().unwrap();
    assert_eq!(root.messages[3].text(), "q2");
    assert!(export::parse("{\"format\":\"other\"}").is_err());
}

#[test]
fn migrations_run_from_an_empty_file_and_every_older_version() {
    let dir = tempfile::tempdir().unwrap();
    for from in 0..schema::SCHEMA_VERSION {
        let path = dir.path().join(format!("v{from}.sqlite3"));
        std::fs::write(&path, b"").unwrap();
        if from > 0 {
            let mut c = rusqlite::Connection::open(&path).unwrap();
            assert_eq!(schema::migrate_to(&mut c, from).unwrap(), from);
        }
        let store = StoreHandle::open(&path, StoreOptions::default()).unwrap();
        let id = conversation(&store, "migrated");
        store.flush().unwrap();
        assert_eq!(store.list(10, 0).unwrap()[0].id, id);
        let c = rusqlite::Connection::open(&path).unwrap();
        assert_eq!(schema::version(&c).unwrap(), schema::SCHEMA_VERSION);
        let mode: String = c.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
    }
    let newer = dir.path().join("newer.sqlite3");
    rusqlite::Connection::open(&newer).unwrap().pragma_update(None, "user_version", 999).unwrap();
    let err = StoreHandle::open(&newer, StoreOptions::default()).err().unwrap();
    assert!(matches!(err, StoreError::TooNew { found: 999, .. }), "{err}");
}

#[test]
fn a_reader_lists_and_searches_while_the_writer_appends() {
    let dir = tempfile::tempdir().unwrap();
    let (store, notices) = open(dir.path());
    let id = conversation(&store, "busy");
    store.flush().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (store, stop) = (store.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut reads, mut slowest) = (0u32, Duration::ZERO);
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let list = store.list(50, 0).unwrap();
                assert_eq!(list.len(), 1);
                store.search("zebra", 20).unwrap();
                slowest = slowest.max(t.elapsed());
                reads += 1;
            }
            (reads, slowest)
        })
    };
    for i in 0..1000 {
        store.save_message(&id, i, &Message::user(&format!("message {i} about a zebra")));
    }
    store.flush().unwrap();
    stop.store(true, Ordering::Relaxed);
    let (reads, slowest) = reader.join().unwrap();
    assert!(reads > 0);
    assert!(slowest < Duration::from_secs(2), "a read waited {slowest:?}");
    assert_eq!(store.get(&id).unwrap().unwrap().messages, 1000);
    assert_eq!(store.search("zebra", 5).unwrap()[0].position, 999, "newest first");
    assert!(notices.lock().unwrap().is_empty());
}

#[test]
fn search_finds_highlights_and_takes_punctuation_literally() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let old = conversation(&store, "old");
    store.save_message(&old, 0, &Message::user("a quick brown fox jumps"));
    store.flush().unwrap();
    let new = conversation(&store, "new");
    let mut reply = Message::with_text(Role::Assistant, "nothing here");
    reply.main_mut().reasoning = "the Fox was quick, surely".into();
    store.save_message(&new, 0, &reply);
    store.flush().unwrap();
    let hits = store.search("quick fox", 10).unwrap();
    assert_eq!(hits.iter().map(|h| h.conversation_id.as_str()).collect::<Vec<_>>(), [new.as_str(), old.as_str()]);
    for h in &hits {
        let marked: Vec<String> = h.ranges.iter().map(|r| h.snippet[r.clone()].to_lowercase()).collect();
        assert!(marked.contains(&"quick".into()) && marked.contains(&"fox".into()), "{h:?}");
    }
    assert_eq!(hits[1].title, "old");
    assert_eq!(store.search("brow", 10).unwrap()[0].conversation_id, old, "typing a prefix finds");
    for q in ["\"unbalanced (paren* OR", "fox's", "NEAR(", "-", "*", "a:b", "'; DROP TABLE messages; --"] {
        store.search(q, 10).unwrap_or_else(|e| panic!("{q}: {e}"));
    }
    assert_eq!(store.search("fox's", 10).unwrap().len(), 0, "phrase `fox s`");
    assert!(store.search("zzz", 10).unwrap().is_empty());
}

/// The index holds finished messages: a streaming reply is indexed once, when it ends, and a
/// file migrated with a reply still live (indexed by the old triggers) stays consistent.
#[test]
fn a_reply_is_indexed_once_when_it_stops_streaming() {
    let fts_ok = |path: &Path| {
        let c = rusqlite::Connection::open(path).unwrap();
        c.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')", []).unwrap();
        c.query_row("SELECT count(*) FROM messages_fts_docsize", [], |r| r.get::<_, i64>(0)).unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palaver.sqlite3");
    let live = |text: &str| {
        let mut m = Message::with_text(Role::Assistant, text);
        m.status = MessageStatus::Streaming;
        m
    };
    // A file at the version before, with a reply still streaming when palaver stopped.
    {
        let mut c = rusqlite::Connection::open(&path).unwrap();
        schema::migrate_to(&mut c, schema::VERSION_INDEX_FINISHED - 1).unwrap();
    }
    let (store, _) = open(dir.path());
    let id = conversation(&store, "live");
    store.save_message(&id, 0, &Message::user("tell me about zebras"));
    store.flush().unwrap();
    assert_eq!(fts_ok(&path), 1);
    store.save_message(&id, 1, &live("a zebra"));
    store.save_message(&id, 1, &live("a zebra has stripes"));
    store.flush().unwrap();
    assert_eq!(store.search("stripes", 10).unwrap().len(), 0, "a live reply is not in the index");
    assert_eq!(fts_ok(&path), 1);
    let mut done = Message::with_text(Role::Assistant, "a zebra has stripes, black and white");
    done.status = MessageStatus::Complete;
    store.save_message(&id, 1, &done);
    store.flush().unwrap();
    assert_eq!(store.search("black", 10).unwrap()[0].position, 1);
    assert_eq!(fts_ok(&path), 2);
    // Edited after it finished: the old words leave the index, the new ones enter it.
    done.main_mut().content = "an okapi".into();
    store.save_message(&id, 1, &done);
    store.flush().unwrap();
    assert!(store.search("black", 10).unwrap().is_empty());
    assert_eq!(store.search("okapi", 10).unwrap().len(), 1);
    assert_eq!(fts_ok(&path), 2);
    drop(store);
    // Migrating a file whose live row the old triggers indexed: it leaves the index until it ends.
    let old = dir.path().join("old.sqlite3");
    {
        let mut c = rusqlite::Connection::open(&old).unwrap();
        schema::migrate_to(&mut c, schema::VERSION_INDEX_FINISHED - 1).unwrap();
        c.execute_batch(
            "INSERT INTO conversations (id, title, created_at, updated_at) VALUES ('c', '', 1, 1);
             INSERT INTO messages (conversation_id, position, role, content, status, writer, body, created_at, updated_at)
                 VALUES ('c', 0, 'assistant', 'half a giraffe', 'streaming', NULL, '{}', 1, 1);",
        )
        .unwrap();
        assert_eq!(fts_ok(&old), 1, "the old triggers indexed the live row");
        schema::migrate(&mut c).unwrap();
        assert_eq!(fts_ok(&old), 0);
        c.execute("UPDATE messages SET status = 'interrupted'", []).unwrap();
        assert_eq!(fts_ok(&old), 1);
        let hit: String = c
            .query_row("SELECT content FROM messages_fts WHERE messages_fts MATCH 'giraffe'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(hit, "half a giraffe");
    }
}

#[test]
fn delete_cascades_to_every_table_and_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let notices = Notices::default();
    let path = dir.path().join("palaver.sqlite3");
    let store = StoreHandle::open(&path, StoreOptions { store_frames: true, ..options(&notices) }).unwrap();
    let id = conversation(&store, "doomed");
    let keep = conversation(&store, "kept");
    store.save_message(&id, 0, &full_message());
    store.save_message(&keep, 0, &Message::user("unrelated"));
    let _ = store.fork(&id, 0, 1);
    store.save_message(&id, 1, &Message::user("foxes again"));
    store.flush().unwrap();
    assert!(!store.search("foxes", 10).unwrap().is_empty());
    store.delete(&id);
    store.flush().unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    for table in ["messages", "tool_calls", "frames", "branches"] {
        let sql = format!(
            "SELECT count(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = {})",
            if table == "messages" || table == "branches" {
                "t.conversation_id"
            } else {
                "(SELECT conversation_id FROM messages m WHERE m.id = t.message_id)"
            }
        );
        let orphans: i64 = c.query_row(&sql, [], |r| r.get(0)).unwrap();
        assert_eq!(orphans, 0, "{table}");
    }
    let left: i64 = c.query_row("SELECT count(*) FROM tool_calls", [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0);
    assert!(store.search("foxes", 10).unwrap().is_empty());
    assert!(store.get(&id).unwrap().is_none());
    assert_eq!(store.list(10, 0).unwrap().len(), 1);
}

#[test]
fn replies_left_streaming_by_a_dead_process_are_interrupted_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palaver.sqlite3");
    let (store, _) = open(dir.path());
    let id = conversation(&store, "crash");
    let mut live = Message::with_text(Role::Assistant, "half a sent");
    live.status = MessageStatus::Streaming;
    store.save_message(&id, 0, &live);
    store.flush().unwrap();
    drop(store);
    // Our own process is alive: its streaming reply is left alone.
    let (store, _) = open(dir.path());
    assert_eq!(store.load(&id).unwrap().unwrap().messages[0].status, MessageStatus::Streaming);
    drop(store);
    // A writer that is gone (pid 0 never writes).
    rusqlite::Connection::open(&path).unwrap().execute("UPDATE messages SET writer = '0:1'", []).unwrap();
    let (store, _) = open(dir.path());
    let got = store.load(&id).unwrap().unwrap().messages.remove(0);
    assert_eq!(got.status, MessageStatus::Interrupted);
    assert_eq!(got.text(), "half a sent");
    assert_eq!(got.error.unwrap().kind, "interrupted");
}

#[test]
fn a_locked_database_is_a_notice_and_the_writes_are_retried() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palaver.sqlite3");
    let notices = Notices::default();
    let opts =
        StoreOptions { busy_timeout: Duration::from_millis(50), retry: Duration::from_millis(50), ..options(&notices) };
    let store = StoreHandle::open(&path, opts).unwrap();
    let id = conversation(&store, "locked");
    store.flush().unwrap();
    let blocker = rusqlite::Connection::open(&path).unwrap();
    blocker
        .execute_batch("BEGIN EXCLUSIVE; INSERT INTO conversations (id, created_at, updated_at) VALUES ('x', 0, 0);")
        .unwrap();
    let msg = Message::user("keep me");
    store.save_message(&id, 0, &msg);
    let err = store.flush().unwrap_err();
    assert!(err.to_string().contains("locked"), "{err}");
    {
        let n = notices.lock().unwrap();
        assert_eq!(n.len(), 1, "one notice, not one per retry: {n:?}");
        assert_eq!(n[0].kind, NoticeKind::WriteFailed);
        assert!(n[0].message.contains("locked"), "{}", n[0].message);
    }
    assert_eq!(msg.text(), "keep me");
    blocker.execute_batch("ROLLBACK").unwrap();
    store.flush().unwrap();
    assert_eq!(store.load(&id).unwrap().unwrap().messages, vec![msg]);
    assert_eq!(notices.lock().unwrap().last().unwrap().kind, NoticeKind::Recovered);
}

#[test]
fn an_unusable_location_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let err = StoreHandle::open(&file.join("palaver.sqlite3"), StoreOptions::default()).err().unwrap();
    assert!(err.to_string().contains("not-a-dir"), "{err}");
    let garbage = dir.path().join("garbage.sqlite3");
    std::fs::write(&garbage, vec![7u8; 8192]).unwrap();
    let err = StoreHandle::open(&garbage, StoreOptions::default()).err().unwrap();
    assert!(err.to_string().contains("not a palaver database"), "{err}");
}

#[test]
fn saves_to_an_unknown_conversation_are_dropped_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    let (store, notices) = open(dir.path());
    let id = conversation(&store, "real");
    store.save_message("no-such-id", 0, &Message::user("lost"));
    store.save_message(&id, 0, &Message::user("kept"));
    store.flush().unwrap();
    assert_eq!(store.load(&id).unwrap().unwrap().messages.len(), 1);
    let n = notices.lock().unwrap();
    assert!(n.iter().any(|n| n.kind == NoticeKind::Dropped && n.message.contains("no-such-id")), "{n:?}");
}

#[test]
fn compare_groups_and_branches_reopen_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let group = StoreHandle::new_compare_group();
    let ids: Vec<String> = (0..3u32)
        .rev()
        .map(|col| {
            store.create_conversation(NewConversation {
                title: format!("column {col}"),
                compare: Some((group.clone(), col)),
                ..Default::default()
            })
        })
        .collect();
    store.flush().unwrap();
    let cols = store.compare_group(&group).unwrap();
    assert_eq!(cols.iter().map(|c| c.compare_column).collect::<Vec<_>>(), [Some(0), Some(1), Some(2)]);
    assert_eq!(cols[0].id, ids[2]);
    let id = &ids[0];
    for (i, t) in ["a", "b", "c", "d"].iter().enumerate() {
        store.save_message(id, i, &Message::user(t));
    }
    let b = store.fork(id, 0, 2);
    store.save_message(id, 2, &Message::user("C"));
    store.flush().unwrap();
    let texts =
        |c: palaver::store::StoredConversation| c.messages.iter().map(|m| m.text().to_owned()).collect::<Vec<_>>();
    assert_eq!(texts(store.load(id).unwrap().unwrap()), ["a", "b", "C"]);
    assert_eq!(store.get(id).unwrap().unwrap().messages, 3);
    assert_eq!(texts(store.load_branch(id, 0).unwrap().unwrap()), ["a", "b", "c", "d"]);
    store.set_active_branch(id, 0);
    store.truncate(id, 3);
    store.flush().unwrap();
    assert_eq!(texts(store.load(id).unwrap().unwrap()), ["a", "b", "c"]);
    assert_eq!(store.load(id).unwrap().unwrap().branches.len(), 2);
    assert_eq!(texts(store.load_branch(id, b).unwrap().unwrap()), ["a", "b", "C"]);
}

#[test]
fn streaming_saves_are_coalesced_and_the_finish_written_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut conn = rusqlite::Connection::open(dir.path().join("w.sqlite3")).unwrap();
    schema::configure(&conn, Duration::from_secs(1)).unwrap();
    schema::migrate(&mut conn).unwrap();
    let cfg = WriterConfig {
        coalesce: Duration::from_millis(250),
        retry: Duration::from_secs(1),
        store_frames: false,
        frames_cap: 0,
    };
    let mut w = Writer::new(conn, cfg, Arc::new(|n| panic!("{n:?}")));
    let t0 = Instant::now();
    let row = NewRow {
        id: "c".into(),
        title: String::new(),
        model: None,
        provider: None,
        api: None,
        compare: None,
        created_at: 1,
    };
    w.submit(Op::Create(row), t0);
    w.tick(t0);
    let mut msg = Message::assistant_pending();
    msg.status = MessageStatus::Streaming;
    // One second of a stream at 1,000 deltas per second.
    for i in 0..1000u64 {
        let now = t0 + Duration::from_millis(i);
        msg.main_mut().content.push_str("tok ");
        w.submit(Op::Save { conv: "c".into(), branch: None, position: 0, msg: msg.clone().into() }, now);
        w.tick(now);
    }
    let streamed = w.batches - 1;
    assert!((4..=5).contains(&streamed), "{streamed} disk writes for 1 s of streaming");
    msg.status = MessageStatus::Complete;
    let end = t0 + Duration::from_millis(1001);
    w.submit(Op::Save { conv: "c".into(), branch: None, position: 0, msg: msg.into() }, end);
    w.tick(end);
    assert_eq!(w.batches - 1, streamed + 1, "the finished reply is written at once");
    assert_eq!(w.queued(), 0);
}

#[test]
fn no_api_key_reaches_the_disk() {
    const KEY: &str = "sk-palaver-test-SECRET-0123456789";
    let home = tempfile::tempdir().unwrap();
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
        .arg("serve-demo")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.stdout.take().unwrap()), &mut url).unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_palaver"))
            .args(args)
            .env("PALAVER_HOME", home.path())
            .env("OPENAI_API_KEY", KEY)
            .output()
            .unwrap()
    };
    let out = run(&["--base-url", url.trim(), "-m", "demo-tools", "-p", "what files are here?"]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list = run(&["history", "list"]);
    let id = String::from_utf8_lossy(&list.stdout).split_whitespace().next().unwrap().to_owned();
    let export = run(&["history", "export", &id, "--format", "json"]);
    assert!(String::from_utf8_lossy(&export.stdout).contains("what files are here?"));
    assert!(!String::from_utf8_lossy(&export.stdout).contains(KEY));
    for entry in std::fs::read_dir(home.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the key is on disk");
    }
}

#[test]
fn a_known_secret_and_its_encodings_are_stored_redacted_and_never_found() {
    use base64::Engine as _;
    const KEY: &str = "sk-store-redact-0123456789abcdefghij";
    palaver::sys::secrets::register(KEY);
    let b64 = base64::engine::general_purpose::STANDARD.encode(KEY);
    let b64url = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("x{KEY}"));
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let conv = conversation(&store, &format!("about {KEY}"));
    store.save_message(&conv, 0, &Message::user(&format!("my key is {KEY}, keep it")));
    let mut call = ToolCall::default();
    call.id = "call_1".into();
    call.name = "run_command".into();
    call.arguments = json!({ "command": format!("echo {KEY}") }).to_string();
    call.output = Some(format!("{b64}\n{hex}\n"));
    call.status = ToolStatus::Done;
    let mut reply = Message::assistant_pending();
    reply.main_mut().content = format!("it is {} and {b64url}", hex.to_ascii_uppercase());
    reply.main_mut().reasoning = format!("the key {KEY}");
    reply.main_mut().tool_calls = vec![call];
    reply.status = MessageStatus::Complete;
    store.save_message(&conv, 1, &reply);
    store.save_message(&conv, 2, &Message::tool_result("call_1", &format!("{b64}\n{hex}\n")));
    store.flush().unwrap();
    for term in [KEY, b64.as_str(), hex.as_str(), "store-redact"] {
        assert!(store.search(term, 10).unwrap().is_empty(), "the index finds {term}");
    }
    assert!(!store.search("redacted", 10).unwrap().is_empty(), "the messages are there, redacted");
    let loaded = store.load(&conv).unwrap().unwrap();
    assert!(loaded.messages[0].main().content.contains("[redacted]"));
    drop(store);
    // The base64url text embeds the key at offset 1: its middle is the key's alone.
    let forms = [KEY.to_owned(), b64, hex.clone(), hex.to_ascii_uppercase(), b64url[4..40].to_owned()];
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        for form in &forms {
            assert!(!bytes.windows(form.len()).any(|w| w == form.as_bytes()), "{form} is in {}", path.display());
        }
    }
}

#[test]
fn attachments_are_stored_once_by_hash_and_go_with_their_last_message() {
    use palaver::engine::attachment::Attachment;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palaver.sqlite3");
    let (store, notices) = open(dir.path());
    let bytes = b"%PDF-1.4\n1 0 obj << /Type /Page >>\n".to_vec();
    let with = |text: &str| {
        let mut m = Message::user(text);
        m.attachments.push(Attachment::from_bytes("doc.pdf", bytes.clone()).unwrap());
        m
    };
    let a = conversation(&store, "a");
    let b = conversation(&store, "b");
    store.save_message(&a, 0, &with("first"));
    // Saved again (a later save of the same message) and from another conversation: one blob.
    store.save_message(&a, 0, &with("first"));
    store.save_message(&b, 0, &with("second"));
    store.flush().unwrap();
    let c = rusqlite::Connection::open(&path).unwrap();
    let count = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT count(*) FROM blobs"), 1);
    assert_eq!(count("SELECT count(*) FROM message_blobs"), 2);
    // Loaded back with its bytes (the message's JSON holds only the facts).
    let loaded = store.load(&a).unwrap().unwrap();
    let att = &loaded.messages[0].attachments[0];
    assert_eq!(att.data.as_ref().map(|d| d.bytes().to_vec()), Some(bytes.clone()));
    assert_eq!(att.media_type, "application/pdf");
    let body: String = c.query_row("SELECT body FROM messages LIMIT 1", [], |r| r.get(0)).unwrap();
    assert!(!body.contains("JVBER"), "bytes leaked into the message JSON");
    // The blob stays while one message uses it, and goes with the last.
    store.delete(&a);
    store.flush().unwrap();
    assert_eq!(count("SELECT count(*) FROM blobs"), 1);
    store.delete(&b);
    store.flush().unwrap();
    assert_eq!(count("SELECT count(*) FROM blobs"), 0);
    assert!(notices.lock().unwrap().is_empty(), "{:?}", notices.lock().unwrap());
}

/// Issue 25 item 3: two writers of one conversation (two palavers). The one that finds a
/// message another wrote since it started where its next one goes saves after it, keeps its
/// later turns after it too, and says so; nothing is overwritten.
#[test]
fn a_writer_never_saves_over_turns_another_writer_added() {
    let dir = tempfile::tempdir().unwrap();
    let (screen, notices) = open(dir.path());
    let id = conversation(&screen, "shared");
    screen.save_message(&id, 0, &Message::user("a"));
    screen.save_message(&id, 1, &Message::user("b"));
    screen.flush().unwrap();
    std::thread::sleep(Duration::from_millis(5));
    // Another palaver appends after what is stored.
    let (other, _) = open(dir.path());
    other.save_message(&id, 2, &Message::user("c (elsewhere)"));
    other.save_message(&id, 3, &Message::user("d (elsewhere)"));
    other.flush().unwrap();
    // The first one goes on where it thinks the end is, saving its reply more than once.
    screen.save_message(&id, 2, &Message::user("e"));
    screen.save_message(&id, 3, &Message::user("f, streaming"));
    screen.save_message(&id, 3, &Message::user("f"));
    screen.save_message(&id, 1, &Message::user("b, edited"));
    screen.save_message(&id, 4, &Message::user("g"));
    screen.flush().unwrap();
    let texts: Vec<String> = screen.load(&id).unwrap().unwrap().messages.iter().map(|m| m.text().to_owned()).collect();
    assert_eq!(texts, ["a", "b, edited", "c (elsewhere)", "d (elsewhere)", "e", "f", "g"]);
    let said = notices.lock().unwrap();
    assert_eq!(said.iter().filter(|n| n.kind == NoticeKind::Interleaved).count(), 1, "{said:?}");
    assert!(said.iter().any(|n| n.message.contains("added 2 messages") && n.message.contains(&id)), "{said:?}");
}

/// Issue 25 item 3, the chat screen's side: the notice carries what the other palaver added
/// (for the screen to show); once the screen has put those turns before its own and says so
/// (`adopt_moved`), its later saves land where it numbers them.
#[test]
fn the_added_turns_are_read_back_and_an_adopted_move_stops_moving() {
    let dir = tempfile::tempdir().unwrap();
    let (screen, notices) = open(dir.path());
    let id = conversation(&screen, "shared");
    screen.save_message(&id, 0, &Message::user("a"));
    screen.flush().unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let (other, _) = open(dir.path());
    other.save_message(&id, 1, &Message::user("b (elsewhere)"));
    other.save_message(&id, 2, &Message::user("c (elsewhere)"));
    other.flush().unwrap();
    screen.save_message(&id, 1, &Message::user("d"));
    screen.flush().unwrap();
    let added = notices.lock().unwrap().iter().find_map(|n| n.added.clone()).expect("the added turns");
    assert_eq!((added.conv.as_str(), added.branch, added.from, added.by), (id.as_str(), 0, 1, 2));
    let texts: Vec<&str> = added.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["b (elsewhere)", "c (elsewhere)"]);
    // The screen renumbers: its "d" is 3 now, its reply 4.
    screen.adopt_moved(&id, None, 1, 2);
    screen.save_message(&id, 3, &Message::user("d, again"));
    screen.save_message(&id, 4, &Message::user("e"));
    screen.flush().unwrap();
    let texts: Vec<String> = screen.load(&id).unwrap().unwrap().messages.iter().map(|m| m.text().to_owned()).collect();
    assert_eq!(texts, ["a", "b (elsewhere)", "c (elsewhere)", "d, again", "e"]);
}
