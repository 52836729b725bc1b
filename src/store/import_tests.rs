//! The import checks: every malformed file is refused with a message naming what is wrong and
//! where; a sound file parses.

use super::*;
use crate::store::export::{CompareExport, Export, ExportBlob, ExportBranch, ExportRow};
use std::collections::BTreeMap;

fn export() -> Export {
    Export {
        format: FORMAT.into(),
        version: VERSION,
        id: "20260101-000000-abcd".into(),
        title: "t".into(),
        model: Some("demo".into()),
        provider: Some("demo".into()),
        api: Some("chat".into()),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:01.000Z".into(),
        compare_group: None,
        compare_column: None,
        active_branch: 0,
        messages: vec![Message::user("q"), Message::with_text(crate::engine::message::Role::Assistant, "a")],
        branches: Vec::new(),
        attachments: BTreeMap::new(),
    }
}

fn text(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn refused(json: &str) -> String {
    match parse(json) {
        Ok(_) => panic!("accepted: {json}"),
        Err(e) => e.to_string(),
    }
}

/// `e` edited as JSON.
fn edited(e: &Export, f: impl FnOnce(&mut Value)) -> String {
    let mut v = serde_json::to_value(e).unwrap_or_default();
    f(&mut v);
    v.to_string()
}

#[test]
fn a_sound_export_parses() {
    let e = export();
    assert_eq!(parse(&text(&e)).ok(), Some(Document::Conversation(Box::new(e))));
}

#[test]
fn what_is_not_an_export_says_what_it_is() {
    assert!(refused("{\"format\": ").starts_with("not JSON"), "{}", refused("{"));
    assert!(refused("[1, 2]").contains("not an object"));
    assert!(refused(r#"{"format":"other","version":1}"#).contains("format is \"other\""));
    assert!(refused(r#"{"version":1}"#).contains("no \"format\""));
    assert!(refused(r#"{"format":"palaver.conversation","version":9}"#).contains("newer palaver"));
    assert!(refused(r#"{"format":"palaver.conversation"}"#).contains("version"));
}

#[test]
fn a_broken_part_is_named_by_its_place() {
    let e = export();
    let bad = edited(&e, |v| v["messages"][1]["status"] = "exploded".into());
    assert!(refused(&bad).starts_with("messages[1]: unknown variant `exploded`"), "{}", refused(&bad));
    let bad = edited(&e, |v| {
        v.as_object_mut().map(|o| o.remove("title"));
    });
    assert!(refused(&bad).contains("missing field `title`"), "{}", refused(&bad));
}

#[test]
fn ids_that_could_be_paths_or_flags_are_refused() {
    for id in ["../../etc/x", "-rf", ".hidden", "", "a b", "é", &"x".repeat(65)] {
        let mut e = export();
        e.id = id.into();
        let msg = refused(&text(&e));
        assert!(msg.contains("is not a conversation id"), "{id}: {msg}");
        assert!(!msg.contains('\u{1b}'));
    }
    let mut e = export();
    e.id = "\u{1b}[2Jx".into();
    assert!(refused(&text(&e)).contains("\\u{1b}[2Jx"), "control characters are escaped in the message");
}

#[test]
fn times_branches_and_attachments_are_checked() {
    let mut e = export();
    e.updated_at = "yesterday".into();
    assert!(refused(&text(&e)).starts_with("updated_at \"yesterday\" is not an RFC 3339 time"));

    let mut e = export();
    e.active_branch = 3;
    assert!(refused(&text(&e)).contains("active_branch 3 names no branch"));

    let branch = |branch, parent, fork, msgs: &[(usize, &str)]| ExportBranch {
        branch,
        parent,
        fork_position: fork,
        created_at: "2026-01-01T00:00:00.000Z".into(),
        messages: msgs.iter().map(|(p, t)| ExportRow { position: *p, message: Message::user(t) }).collect(),
    };
    let mut e = export();
    e.messages = vec![Message::user("a"), Message::user("B")];
    e.active_branch = 5;
    e.branches = vec![branch(0, None, 0, &[(0, "a"), (1, "b")]), branch(5, Some(0), 1, &[(1, "B")])];
    assert!(parse(&text(&e)).is_ok(), "{:?}", parse(&text(&e)).err());
    let mut cycle = e.clone();
    cycle.branches.push(branch(6, Some(7), 1, &[]));
    cycle.branches.push(branch(7, Some(6), 1, &[]));
    assert!(refused(&text(&cycle)).contains("go round in a circle"), "{}", refused(&text(&cycle)));
    let mut orphan = e.clone();
    orphan.branches[1].parent = Some(9);
    assert!(refused(&text(&orphan)).contains("parent 9 is not a branch"));
    let mut early = e.clone();
    early.branches[1].messages[0].position = 0;
    assert!(refused(&text(&early)).contains("before its fork at 1"));
    let mut edited_one = e.clone();
    edited_one.messages[1] = Message::user("changed");
    assert!(refused(&text(&edited_one)).contains("messages do not match"));

    let bytes = b"hello";
    let hash = sha256_hex(bytes);
    let mut e = export();
    e.attachments.insert(hash.clone(), ExportBlob { media_type: "text/plain".into(), data: "aGVsbG8=".into() });
    assert!(parse(&text(&e)).is_ok());
    e.attachments.insert(hash.clone(), ExportBlob { media_type: "text/plain".into(), data: "aGVsbG9v".into() });
    assert!(refused(&text(&e)).contains("do not match their SHA-256"));
    e.attachments.insert(hash, ExportBlob { media_type: "text/plain".into(), data: "%%%".into() });
    assert!(refused(&text(&e)).contains("not base64"));
}

#[test]
fn a_reply_exported_mid_stream_comes_back_interrupted() {
    let mut e = export();
    e.messages[1].status = MessageStatus::Streaming;
    let Ok(Document::Conversation(back)) = parse(&text(&e)) else { panic!("refused") };
    assert_eq!(back.messages[1].status, MessageStatus::Interrupted);
}

#[test]
fn a_compare_export_is_checked_column_by_column() {
    let col = |i: u32| Export {
        id: format!("c{i}"),
        compare_group: Some("cmp-x".into()),
        compare_column: Some(i),
        ..export()
    };
    let c = CompareExport {
        format: COMPARE_FORMAT.into(),
        version: VERSION,
        id: "cmp-x".into(),
        title: "t".into(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:00.000Z".into(),
        columns: vec![col(0), col(1)],
    };
    assert!(matches!(parse(&text(&c)), Ok(Document::Compare(_))));
    let mut twice = c.clone();
    twice.columns[1].compare_column = Some(0);
    assert!(refused(&text(&twice)).starts_with("columns[1]: compare_column repeats"), "{}", refused(&text(&twice)));
    let mut v = serde_json::to_value(&c).unwrap_or_default();
    v["columns"][0]["messages"][0]["role"] = 5.into();
    assert!(refused(&v.to_string()).starts_with("columns[0].messages[0]: "), "{}", refused(&v.to_string()));
    // One conversation is not a compare, and the other way round.
    assert!(crate::store::export::parse(&text(&c)).is_err());
}
