//! Round trips through a real store: what a session saves (edits and regenerates included)
//! reopens as the same transcript, kept versions and all.

use super::*;
use crate::api::client::WireEvent;
use crate::api::event::StreamEvent;
use crate::app::Effect;
use crate::app::test_state;
use crate::app::transcript::{Branch, Cell, Transcript};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A state wired to a store in a temporary directory; effects are carried out as the loop would.
struct Rig {
    s: State,
    storage: Storage,
    now: u64,
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl Rig {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("palaver.sqlite3");
        let storage = Storage::open(&path).unwrap();
        let mut s = test_state();
        s.apply(Msg::Store(StoreMsg::Ready));
        Self { s, storage, now: 1000, _dir: dir, path }
    }

    fn apply(&mut self, msg: Msg) {
        let fx = self.s.apply(msg);
        self.run(fx);
    }

    fn run(&mut self, fx: Vec<Effect>) {
        for e in fx {
            if let Effect::Persist(op) = e {
                let created = matches!(op, PersistOp::Create { .. });
                self.storage.run(op);
                if created {
                    let (local, id) = self.storage.convs.iter().next().map(|(l, i)| (*l, i.clone())).unwrap();
                    self.apply(Msg::Store(StoreMsg::Created { local, id }));
                }
            }
        }
    }

    fn key(&mut self, code: KeyCode, mods: KeyModifiers) {
        self.apply(Msg::Key(KeyEvent::new(code, mods)));
    }

    fn typed(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    fn reply(&mut self, text: &str) {
        let id = self.s.live.as_ref().map(|l| l.id).unwrap();
        self.now += 300;
        let events = vec![
            StreamEvent::Text { choice: 0, delta: text.into() },
            StreamEvent::Finish { choice: 0, reason: "stop".into() },
            StreamEvent::End,
        ];
        let now_ms = self.now;
        self.apply(Msg::Wire {
            id,
            event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 5 }),
            now_ms,
        });
        self.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 6 }), now_ms });
    }

    fn turn(&mut self, prompt: &str, answer: &str) {
        self.typed(prompt);
        self.key(KeyCode::Enter, KeyModifiers::NONE);
        self.reply(answer);
    }

    /// Selects the `n`th message (0 = first).
    fn select(&mut self, n: usize) {
        let id = self.s.transcript.cells.iter().filter_map(Cell::message).nth(n).map(|m| m.id).unwrap();
        self.s.select(id);
    }

    fn flush(&self) {
        self.storage.store.as_ref().unwrap().flush().unwrap();
    }

    fn id(&self) -> String {
        self.s.persist.id.clone().unwrap()
    }
}

/// The texts of a transcript's messages and, recursively, its kept versions.
fn shape(t: &Transcript) -> String {
    fn cells(c: &[Cell]) -> String {
        c.iter()
            .filter_map(Cell::message)
            .map(|m| format!("{}:{}", m.role.map_or("?", role), m.text()))
            .collect::<Vec<_>>()
            .join(" | ")
    }
    fn role(r: crate::engine::message::Role) -> &'static str {
        match r {
            crate::engine::message::Role::User => "u",
            crate::engine::message::Role::Assistant => "a",
            crate::engine::message::Role::Tool => "t",
            crate::engine::message::Role::System => "s",
        }
    }
    fn branches(b: &[Branch], depth: usize, out: &mut String) {
        for b in b {
            out.push_str(&format!("\n{}@{} {}", "  ".repeat(depth), b.at, cells(&b.cells)));
            branches(&b.nested, depth + 1, out);
        }
    }
    let mut out = cells(&t.cells);
    branches(&t.branches, 0, &mut out);
    out
}

fn reopen(rig: &Rig) -> State {
    rig.flush();
    let store = rig.storage.store.clone().unwrap();
    let loaded = load(&store, &rig.id(), None).unwrap().unwrap();
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    s.apply(Msg::Store(StoreMsg::Opened(Ok(Box::new(loaded)))));
    s
}

fn messages_only(s: &State) -> Transcript {
    let mut t = s.transcript.clone();
    t.cells.retain(|c| c.message().is_some());
    t
}

#[test]
fn a_plain_conversation_reopens_as_it_was() {
    let mut rig = Rig::new();
    rig.turn("first question", "first answer");
    rig.turn("second question", "second answer");
    let s = reopen(&rig);
    assert_eq!(shape(&messages_only(&s)), shape(&messages_only(&rig.s)));
    let title = rig.storage.store.as_ref().unwrap().get(&rig.id()).unwrap().unwrap().title;
    assert_eq!(title, "first question");
}

#[test]
fn edits_and_regenerates_reopen_with_their_versions_nested_as_they_were() {
    let mut rig = Rig::new();
    rig.turn("q1", "a1");
    rig.turn("q2", "a2");
    // Regenerate the last reply twice: three versions at position 3.
    rig.select(3);
    rig.key(KeyCode::Char('r'), KeyModifiers::NONE);
    rig.reply("a2 take two");
    rig.select(3);
    rig.key(KeyCode::Char('r'), KeyModifiers::NONE);
    rig.reply("a2 take three");
    // Edit the first prompt: everything after it becomes a kept version (with its own versions).
    rig.select(0);
    rig.key(KeyCode::Char('e'), KeyModifiers::NONE);
    rig.typed(" (edited)");
    rig.key(KeyCode::Enter, KeyModifiers::NONE);
    rig.reply("a1 for the edit");
    let original = shape(&messages_only(&rig.s));
    assert!(original.contains("@0 u:q1 | a:a1 | u:q2 | a:a2 take three"), "{original}");
    let mut s = reopen(&rig);
    assert_eq!(shape(&messages_only(&s)), original);
    // Switching back reaches the old conversation with its nested versions, in both states.
    for st in [&mut rig.s, &mut s] {
        let first = st.transcript.cells.iter().filter_map(Cell::message).next().map(|m| m.id).unwrap();
        st.select(first);
        st.apply(Msg::Key(KeyEvent::new(KeyCode::Char('['), KeyModifiers::NONE)));
    }
    assert_eq!(shape(&messages_only(&s)), shape(&messages_only(&rig.s)));
    assert!(shape(&messages_only(&s)).starts_with("u:q1 | a:a1 | u:q2 | a:a2 take three"));
}

#[test]
fn the_version_on_screen_is_the_one_that_reopens_and_new_turns_land_on_it() {
    let mut rig = Rig::new();
    rig.turn("q1", "a1");
    rig.select(1);
    rig.key(KeyCode::Char('r'), KeyModifiers::NONE);
    rig.reply("a1 again");
    // Back to the first reply, and continue from there.
    rig.select(1);
    rig.key(KeyCode::Char('['), KeyModifiers::NONE);
    rig.s.apply(Msg::Key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)));
    rig.turn("q2", "a2");
    let s = reopen(&rig);
    let shown = shape(&messages_only(&s));
    assert!(shown.starts_with("u:q1 | a:a1 | u:q2 | a:a2\n@1 a:a1 again"), "{shown}");
    // And a reopened conversation keeps saving where it left off.
    let mut rig2 = Rig {
        s,
        storage: Storage::open(&rig.path).unwrap(),
        now: 5000,
        _dir: tempfile::tempdir().unwrap(),
        path: rig.path.clone(),
    };
    rig2.turn("q3", "a3");
    rig2.flush();
    let again = load(rig2.storage.store.as_ref().unwrap(), &rig2.id(), None).unwrap().unwrap();
    let texts: Vec<&str> = again.active.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["q1", "a1", "q2", "a2", "q3", "a3"]);
}

#[test]
fn a_live_reply_left_by_a_dead_process_reopens_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palaver.sqlite3");
    let id = {
        let store = StoreHandle::open(&path, StoreOptions::default()).unwrap();
        let id = store.create_conversation(NewConversation { title: "t".into(), ..NewConversation::default() });
        store.save_message(&id, 0, &crate::engine::message::Message::user("tell me"));
        let mut m = crate::engine::message::Message::assistant_pending();
        m.status = crate::engine::message::MessageStatus::Streaming;
        m.main_mut().content = "half a rep".into();
        store.save_message(&id, 1, &m);
        store.flush().unwrap();
        id
    };
    // Pretend the writer was another process, one that died.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE messages SET writer = '1:0' WHERE position = 1", []).unwrap();
    drop(conn);
    let store = StoreHandle::open(&path, StoreOptions::default()).unwrap();
    let loaded = load(&store, &id, None).unwrap().unwrap();
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    s.apply(Msg::Store(StoreMsg::Opened(Ok(Box::new(loaded)))));
    let reply = s.transcript.cells.iter().filter_map(Cell::message).nth(1).unwrap();
    assert_eq!(reply.status, crate::engine::message::MessageStatus::Interrupted);
    assert_eq!(reply.text(), "half a rep");
    assert!(s.transcript.cells.iter().any(|c| matches!(c, Cell::Notice(n) if n.text.contains("cut off"))));
}

#[test]
fn a_reply_that_could_not_connect_reopens_without_blaming_a_stop() {
    let dir = tempfile::tempdir().unwrap();
    let store = StoreHandle::open(&dir.path().join("palaver.sqlite3"), StoreOptions::default()).unwrap();
    let id = store.create_conversation(NewConversation { title: "t".into(), ..NewConversation::default() });
    store.save_message(&id, 0, &crate::engine::message::Message::user("hello"));
    let mut m = crate::engine::message::Message::assistant_pending();
    m.status = crate::engine::message::MessageStatus::Interrupted;
    m.error = Some(crate::engine::message::ErrorInfo {
        status: None,
        message: "could not connect to http://127.0.0.1:1/v1".into(),
        kind: "connect".into(),
        body: serde_json::Value::Null,
    });
    store.save_message(&id, 1, &m);
    store.flush().unwrap();
    let loaded = load(&store, &id, None).unwrap().unwrap();
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    s.apply(Msg::Store(StoreMsg::Opened(Ok(Box::new(loaded)))));
    assert!(!s.transcript.cells.iter().any(|c| matches!(c, Cell::Notice(n) if n.text.contains("cut off"))));
}

#[test]
fn a_long_conversation_opened_from_the_list_opens_on_its_tail_unless_the_hit_is_further_up() {
    let mut rig = Rig::new();
    for i in 0..520 {
        rig.turn(&format!("prompt {i}"), &format!("answer {i}"));
    }
    rig.flush();
    let store = rig.storage.store.clone().unwrap();
    let id = rig.id();
    let shown = |l: &Loaded| (l.older, l.active.messages.len());
    assert_eq!(shown(&open(&store, &id, None, None).unwrap().unwrap()), (1040 - TAIL, TAIL));
    // A search hit in the tail opens there; one further up, or a branch asked for, loads whole.
    let hit = open(&store, &id, None, Some(1030)).unwrap().unwrap();
    assert_eq!(shown(&hit), (1040 - TAIL, TAIL));
    assert_eq!(shown(&open(&store, &id, None, Some(3)).unwrap().unwrap()), (0, 1040));
    let branch = hit.active.branch;
    assert_eq!(shown(&open(&store, &id, Some(branch), None).unwrap().unwrap()), (0, 1040));
    // On screen: the hit is selected in the tail, and the head is asked for.
    let mut s = test_state();
    s.apply(Msg::Store(StoreMsg::Ready));
    let fx = s.apply(Msg::Store(StoreMsg::Opened(Ok(Box::new(hit)))));
    let head = fx.iter().any(|e| matches!(e, Effect::Persist(PersistOp::LoadHead { upto: 840, .. })));
    assert!(head, "{fx:?}");
    let selected = s.selected.and_then(|id| s.transcript.message(id)).map(|m| m.text().to_owned());
    assert_eq!(selected.as_deref(), Some("prompt 515"));
}
