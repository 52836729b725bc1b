//! The arena's store: a battle is one row with its vote and ranking, written once (a vote is
//! final), and votes stored a pair at a time before battles were still read, as battles of two.

use super::{BattleModel, BattleRow, RunStore};
use crate::engine::evals::style::Style;

fn battle(id: &str, models: &[&str], vote: &str) -> BattleRow {
    BattleRow {
        id: id.into(),
        created_at: 0,
        prompt: "which?".into(),
        models: models
            .iter()
            .map(|m| BattleModel { model: (*m).into(), provider: "demo".into(), style: Some(Style::default()) })
            .collect(),
        vote: vote.into(),
    }
}

#[test]
fn a_battle_is_one_row_with_its_ranking_and_its_vote_is_final() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = dir.path().join("palaver.db");
    let store = RunStore::open(&db).unwrap_or_else(|e| panic!("{e}"));
    let ok = |r: Result<(), super::StoreError>| r.unwrap_or_else(|e| panic!("{e}"));
    ok(store.write_battle(battle("g/1", &["x", "y", "z"], "c")));
    // The same battle again (a second vote) changes nothing: the first vote stands.
    ok(store.write_battle(battle("g/1", &["x", "y", "z"], "a")));
    ok(store.write_battle(battle("g/2", &["y", "x"], "tie")));
    let back = store.battles().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.len(), 2, "one row per battle, not per pair: {back:?}");
    assert_eq!((back[0].id.as_str(), back[0].vote.as_str(), back[0].models.len()), ("g/1", "c", 3));
    assert_eq!(back[0].models[2].style, Some(Style::default()));
    assert_eq!(back[1].vote, "tie");
    let conn = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
    let ranking: String = conn
        .query_row("SELECT ranking FROM arena_battles WHERE id = 'g/1'", [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ranking, "[2,2,1]");
}

#[test]
fn votes_stored_a_pair_at_a_time_read_as_battles_of_two() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = dir.path().join("palaver.db");
    let store = RunStore::open(&db).unwrap_or_else(|e| panic!("{e}"));
    drop(store);
    // As an older palaver wrote them.
    let conn = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
    conn.execute_batch(
        r#"INSERT INTO arena_votes (created_at, model_a, provider_a, model_b, provider_b, winner, prompt, style_a, style_b)
           VALUES (1, 'x', 'demo', 'y', 'demo', 'b', 'old?', '{"tokens":5,"headers":0,"lists":0,"bold":0}', NULL);"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    let store = RunStore::open(&db).unwrap_or_else(|e| panic!("{e}"));
    store.write_battle(battle("g/1", &["x", "y"], "a")).unwrap_or_else(|e| panic!("{e}"));
    let back = store.battles().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back.len(), 2);
    let old = &back[0];
    assert_eq!((old.id.as_str(), old.vote.as_str(), old.prompt.as_str()), ("vote-1", "b", "old?"));
    assert_eq!((old.models[0].model.as_str(), old.models[1].model.as_str()), ("x", "y"));
    assert_eq!((old.models[0].style.map(|s| s.tokens), old.models[1].style), (Some(5), None));
    drop(store);
    // A file from before battles, opened read-only (not migrated): its votes still read.
    let conn = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
    conn.execute_batch("DROP TABLE arena_battles; PRAGMA user_version = 6;").unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    let old = RunStore::open_read_only(&db).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(old.battles().unwrap_or_else(|e| panic!("{e}")).len(), 1);
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
    conn.execute_batch(
        "DROP TABLE arena_battles; ALTER TABLE compare_prompts DROP COLUMN vars;
         ALTER TABLE compare_prompts DROP COLUMN threshold; ALTER TABLE compare_prompts DROP COLUMN turns;
         ALTER TABLE compare_cells DROP COLUMN cached; ALTER TABLE compare_cells DROP COLUMN turns;
         PRAGMA user_version = 5;",
    )
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

#[test]
fn cells_stored_before_samples_become_sample_zero_and_samples_are_kept_apart() {
    use super::super::schema::{VERSION_CELL_SAMPLES, migrate_to};
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let db = dir.path().join("palaver.db");
    // A file at the version before samples, with a run and one cell as that palaver wrote them.
    let mut conn = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
    let before = VERSION_CELL_SAMPLES - 1;
    assert_eq!(migrate_to(&mut conn, before).unwrap_or_else(|e| panic!("{e}")), before);
    conn.execute_batch(
        "INSERT INTO compare_runs (id, created_at, updated_at, models, settings, source, prompts, status)
             VALUES ('run-old', 1, 1, '[]', '{}', 'set.jsonl', 1, 'finished');
         INSERT INTO compare_prompts (run_id, idx, pid, prompt) VALUES ('run-old', 0, 'p', 'hi');
         INSERT INTO compare_cells (run_id, prompt_idx, model_idx, model, provider, ok, text, checks, cost, finished_at)
             VALUES ('run-old', 0, 1, 'demo', 'demo', 1, 'hello', '[{\"kind\":\"contains\",\"pass\":true}]', 0.5, 9);",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    let store = RunStore::open(&db).unwrap_or_else(|e| panic!("{e}"));
    let cells = store.prompt_cells("run-old", 0).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cells.len(), 1);
    let c = &cells[0];
    assert_eq!((c.model_idx, c.sample, c.text.as_str(), c.cost, c.finished_at), (1, 0, "hello", Some(0.5), 9));
    assert_eq!(c.checks, Some(serde_json::json!([{"kind": "contains", "pass": true}])));
    assert_eq!(store.prompts("run-old").unwrap_or_else(|e| panic!("{e}"))[0].threshold, None);
    // Samples of one prompt × model are rows of their own, read back in order.
    for sample in [2, 1] {
        let row = super::CellRow { model_idx: 1, sample, ok: true, text: format!("s{sample}"), ..Default::default() };
        store.save_cell("run-old", row);
    }
    store.flush().unwrap_or_else(|e| panic!("{e}"));
    let texts: Vec<(u32, String)> = store
        .prompt_cells("run-old", 0)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .map(|c| (c.sample, c.text))
        .collect();
    assert_eq!(texts, [(0, "hello".into()), (1, "s1".into()), (2, "s2".into())]);
    let done = store.done_cells("run-old", false).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done, [(0, 1, 0), (0, 1, 1), (0, 1, 2)].into_iter().collect());
    let run = store.run("run-old").unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("no run"));
    assert_eq!(run.cells_ok, 3);
}

#[test]
fn a_conversation_and_its_cells_turns_are_kept() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = RunStore::open(&dir.path().join("palaver.db")).unwrap_or_else(|e| panic!("{e}"));
    let conversation = serde_json::json!({"turns": [{"prompt": "a"}, {"prompt": "b", "expect": "x"}],
        "tool_outputs": [{"name": "read_file", "output": "o"}]});
    let rows =
        vec![super::PromptRow { prompt: "a".into(), conversation: Some(conversation.clone()), ..Default::default() }];
    let id = store.create_run(&[], &serde_json::Value::Null, "set.jsonl", rows).unwrap_or_else(|e| panic!("{e}"));
    let turns = serde_json::json!([{"turn": 1, "text": "one"}, {"turn": 2, "text": "two"}]);
    store.save_cell(&id, super::CellRow { ok: true, turns: Some(turns.clone()), ..Default::default() });
    store.flush().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(store.prompts(&id).unwrap_or_else(|e| panic!("{e}"))[0].conversation, Some(conversation));
    assert_eq!(store.prompt_cells(&id, 0).unwrap_or_else(|e| panic!("{e}"))[0].turns, Some(turns));
}
