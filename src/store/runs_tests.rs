//! The arena votes writer: a vote stored, changed and taken back leaves only the final one,
//! in its place among the others (stats replay votes in row order).

use super::{RunStore, VoteRow, VoteWrite};

fn row(a: &str, b: &str, winner: &str) -> VoteRow {
    VoteRow {
        model_a: a.into(),
        provider_a: "demo".into(),
        model_b: b.into(),
        provider_b: "demo".into(),
        winner: winner.into(),
        prompt: "which?".into(),
        style_a: None,
        style_b: None,
    }
}

fn winners(store: &RunStore) -> Vec<String> {
    store.votes().unwrap_or_else(|e| panic!("{e}")).into_iter().map(|v| v.winner).collect()
}

#[test]
fn a_vote_changed_and_taken_back_leaves_only_the_final_one() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = RunStore::open(&dir.path().join("palaver.db")).unwrap_or_else(|e| panic!("{e}"));
    let ok = |r: Result<i64, super::StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
    let first = ok(store.write_vote(VoteWrite::Insert(row("x", "y", "a"))));
    let second = ok(store.write_vote(VoteWrite::Insert(row("y", "x", "b"))));
    assert_ne!(first, second);
    // Changing the first keeps its place before the second.
    assert_eq!(ok(store.write_vote(VoteWrite::Replace(first, row("x", "y", "tie")))), first);
    assert_eq!(winners(&store), ["tie", "b"]);
    // Taken back: gone; voted again: a new row, after the others.
    ok(store.write_vote(VoteWrite::Delete(second)));
    assert_eq!(winners(&store), ["tie"]);
    let third = ok(store.write_vote(VoteWrite::Insert(row("y", "x", "bad"))));
    assert!(third > first);
    assert_eq!(winners(&store), ["tie", "bad"]);
    // Reopened, the store holds the same.
    drop(store);
    let store = RunStore::open(&dir.path().join("palaver.db")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(winners(&store), ["tie", "bad"]);
}

#[test]
fn a_running_run_whose_process_let_go_of_its_lock_is_stopped() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = dir.path().join("palaver.db");
    let store = RunStore::open(&db).unwrap_or_else(|e| panic!("{e}"));
    let id = store.create_run(&[], &serde_json::Value::Null, "set.txt", Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    let status = |s: &RunStore| s.run(&id).unwrap_or_else(|e| panic!("{e}")).map(|r| r.status);
    // Just made, no lock yet: running.
    assert_eq!(status(&store).as_deref(), Some("running"));
    // Its process holds the lock: running, in the list too.
    let lock = super::super::lock::try_lock(&db, &id).unwrap_or_else(|e| panic!("{e}"));
    assert!(lock.is_some());
    assert_eq!(status(&store).as_deref(), Some("running"));
    assert_eq!(store.runs(10).unwrap_or_else(|e| panic!("{e}"))[0].status, "running");
    // The process ended (the kernel let go of its lock) without marking the run: stopped.
    drop(lock);
    assert_eq!(status(&store).as_deref(), Some("stopped"));
    assert_eq!(store.runs(10).unwrap_or_else(|e| panic!("{e}"))[0].status, "stopped");
    // A finished run is what it says, lock or none.
    store.set_status(&id, "finished");
    store.flush().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status(&store).as_deref(), Some("finished"));
}

#[test]
fn a_votes_answer_style_is_stored_and_read_back() {
    use crate::engine::evals::style::Style;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = RunStore::open(&dir.path().join("palaver.db")).unwrap_or_else(|e| panic!("{e}"));
    let styled = VoteRow {
        style_a: Some(Style { tokens: 120, headers: 2, lists: 5, bold: 1 }),
        style_b: Some(Style { tokens: 30, ..Style::default() }),
        ..row("x", "y", "a")
    };
    let id = store.write_vote(VoteWrite::Insert(row("x", "y", "b"))).unwrap_or_else(|e| panic!("{e}"));
    store.write_vote(VoteWrite::Replace(id, styled.clone())).unwrap_or_else(|e| panic!("{e}"));
    store.write_vote(VoteWrite::Insert(row("y", "x", "tie"))).unwrap_or_else(|e| panic!("{e}"));
    let votes = store.votes().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(votes[0], styled, "a changed vote carries its new style");
    assert_eq!((votes[1].style_a, votes[1].style_b), (None, None));
}

#[test]
fn a_templated_prompts_row_is_kept_and_an_older_file_reads_without_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = dir.path().join("palaver.db");
    let store = RunStore::open(&db).unwrap_or_else(|e| panic!("{e}"));
    let vars = serde_json::json!({"lang": "fr", "n": 2});
    let rows = vec![
        super::PromptRow {
            idx: 0,
            id: "say.1".into(),
            prompt: "hi".into(),
            vars: Some(vars.clone()),
            ..Default::default()
        },
        super::PromptRow { idx: 1, id: "plain".into(), prompt: "x".into(), ..Default::default() },
    ];
    let id = store.create_run(&[], &serde_json::Value::Null, "set.jsonl", rows).unwrap_or_else(|e| panic!("{e}"));
    let back = store.prompts(&id).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((back[0].vars.as_ref(), back[1].vars.as_ref()), (Some(&vars), None));
    drop(store);
    // A file from before the column, opened read-only (so not migrated): the prompts still read.
    let conn = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
    conn.execute_batch("ALTER TABLE compare_prompts DROP COLUMN vars; PRAGMA user_version = 5;")
        .unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    let old = RunStore::open_read_only(&db).unwrap_or_else(|e| panic!("{e}"));
    let back = old.prompts(&id).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((back.len(), back[0].vars.as_ref()), (2, None));
    drop(old);
    // Opened to write, it is migrated and takes rows again.
    let again = RunStore::open(&db).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.prompts(&id).unwrap_or_else(|e| panic!("{e}"))[0].vars, None);
}
