//! The schema and its migrations. `PRAGMA user_version` holds how many migrations a file has
//! had; opening runs the missing ones in order, in one transaction, so a file is never left
//! half-migrated. Never edit a shipped migration: append a new one.

use super::StoreError;
use rusqlite::{Connection, TransactionBehavior};
use std::time::Duration;

/// Migration `i` (0-based) brings a file from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    MIGRATION_1,
    super::blobs::MIGRATION_ATTACHMENTS,
    super::runs::MIGRATION_RUNS,
    MIGRATION_INDEX_FINISHED,
    super::runs::MIGRATION_VOTE_STYLE,
    super::runs::MIGRATION_RUN_VARS,
    super::runs::MIGRATION_BATTLES,
    super::runs::MIGRATION_CELL_SAMPLES,
    super::runs::MIGRATION_CELL_CACHED,
    super::runs::MIGRATION_TURNS,
];

/// The version at which the search index holds finished messages only (tests build files just before it).
pub const VERSION_INDEX_FINISHED: u32 = 4;

/// The version at which cells have samples (tests build files just before it).
pub const VERSION_CELL_SAMPLES: u32 = 8;

/// The version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

const MIGRATION_1: &str = r"
CREATE TABLE conversations (
    id             TEXT PRIMARY KEY NOT NULL,
    title          TEXT NOT NULL DEFAULT '',
    model          TEXT,
    provider       TEXT,
    api            TEXT,
    created_at     INTEGER NOT NULL,          -- unix ms
    updated_at     INTEGER NOT NULL,
    active_branch  INTEGER NOT NULL DEFAULT 0,
    compare_group  TEXT,                      -- conversations reopened side by side
    compare_column INTEGER
);
CREATE INDEX conversations_by_update ON conversations(updated_at DESC, id DESC);
CREATE INDEX conversations_by_group ON conversations(compare_group, compare_column)
    WHERE compare_group IS NOT NULL;

-- Branch 0 is the root. A branch holds its own messages from fork_position on; the positions
-- before come from its parent (recursively).
CREATE TABLE branches (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    branch          INTEGER NOT NULL,
    parent          INTEGER,
    fork_position   INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, branch)
) WITHOUT ROWID;

CREATE TABLE messages (
    id              INTEGER PRIMARY KEY,      -- also the FTS rowid; grows with time
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    branch          INTEGER NOT NULL DEFAULT 0,
    position        INTEGER NOT NULL,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL DEFAULT '', -- choice 0; the rest of the message is in body
    reasoning       TEXT NOT NULL DEFAULT '',
    refusal         TEXT NOT NULL DEFAULT '',
    model           TEXT,
    provider        TEXT,
    api             TEXT,
    finish_reason   TEXT,
    status          TEXT NOT NULL,            -- complete|waiting|streaming|cancelled|interrupted|failed
    started_at_ms   INTEGER,
    ttft_ms         INTEGER,
    total_ms        INTEGER,
    usage           TEXT,                     -- JSON as the provider sent it
    prompt_filter   TEXT,
    content_filter  TEXT,
    items           TEXT,
    error           TEXT,
    tool_call_id    TEXT,
    writer          TEXT,                     -- process that is streaming it (pid:start), while live
    body            TEXT NOT NULL,            -- the whole Message as JSON minus content/reasoning/refusal/frames
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (conversation_id, branch, position)
);
CREATE INDEX messages_live ON messages(status) WHERE status IN ('streaming', 'waiting');

CREATE TABLE tool_calls (
    message_id  INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    choice      INTEGER NOT NULL,
    slot        INTEGER NOT NULL,
    call_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    arguments   TEXT NOT NULL,
    output      TEXT,
    status      TEXT NOT NULL,
    duration_ms INTEGER,
    PRIMARY KEY (message_id, choice, slot)
) WITHOUT ROWID;

-- Raw wire frames, only with store_frames on, capped per message.
CREATE TABLE frames (
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    at_ms      INTEGER NOT NULL,
    event      TEXT NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (message_id, seq)
) WITHOUT ROWID;

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, reasoning, content = 'messages', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content, reasoning) VALUES (new.id, new.content, new.reasoning);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, reasoning)
        VALUES ('delete', old.id, old.content, old.reasoning);
END;
-- Status-only updates (the last save of a stream) do not re-index.
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, reasoning ON messages
WHEN old.content IS NOT new.content OR old.reasoning IS NOT new.reasoning BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, reasoning)
        VALUES ('delete', old.id, old.content, old.reasoning);
    INSERT INTO messages_fts(rowid, content, reasoning) VALUES (new.id, new.content, new.reasoning);
END;
";

/// The search index holds finished messages only. Migration 1 re-indexed a streaming reply at
/// every checkpoint (its old text taken out, its new text put in): a long answer cost the
/// square of its length in tokenising. A reply is now indexed once, when it stops being
/// `waiting` or `streaming` (finished, cancelled, failed, or marked interrupted after a crash).
const MIGRATION_INDEX_FINISHED: &str = r"
DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
-- Live rows were indexed by the old triggers: out of the index until they end.
INSERT INTO messages_fts(messages_fts, rowid, content, reasoning)
    SELECT 'delete', id, content, reasoning FROM messages WHERE status IN ('waiting', 'streaming');
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
WHEN new.status NOT IN ('waiting', 'streaming') BEGIN
    INSERT INTO messages_fts(rowid, content, reasoning) VALUES (new.id, new.content, new.reasoning);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
WHEN old.status NOT IN ('waiting', 'streaming') BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, reasoning)
        VALUES ('delete', old.id, old.content, old.reasoning);
END;
-- One trigger, so the old text always leaves the index before the new text enters it. A live
-- row saved again (every checkpoint of a stream) touches nothing.
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, reasoning, status ON messages
WHEN NOT (old.status IN ('waiting', 'streaming') AND new.status IN ('waiting', 'streaming'))
    AND (old.status IN ('waiting', 'streaming') OR new.status IN ('waiting', 'streaming')
         OR old.content IS NOT new.content OR old.reasoning IS NOT new.reasoning)
BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content, reasoning)
        SELECT 'delete', old.id, old.content, old.reasoning WHERE old.status NOT IN ('waiting', 'streaming');
    INSERT INTO messages_fts(rowid, content, reasoning)
        SELECT new.id, new.content, new.reasoning WHERE new.status NOT IN ('waiting', 'streaming');
END;
";

/// Connection settings every connection gets: WAL so readers never wait for the writer,
/// `synchronous = NORMAL` (a commit survives a process crash; only power loss can roll back
/// the last commits), foreign keys for cascading deletes.
///
/// # Errors
/// When the file cannot be switched to WAL (read-only directory, not a database…).
pub fn configure(conn: &Connection, busy: Duration) -> rusqlite::Result<()> {
    conn.busy_timeout(busy)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("the database refused WAL mode (journal_mode = {mode})")),
        ));
    }
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
}

/// The file's schema version.
///
/// # Errors
/// When the file is not a database.
pub fn version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Brings the file to [`SCHEMA_VERSION`].
///
/// # Errors
/// A file from a newer palaver, or a failed migration (nothing is changed then).
pub fn migrate(conn: &mut Connection) -> Result<u32, StoreError> {
    migrate_to(conn, SCHEMA_VERSION)
}

/// Brings the file to `target` (tests use this to build files at older versions).
///
/// # Errors
/// A file from a newer palaver, or a failed migration (nothing is changed then).
pub fn migrate_to(conn: &mut Connection, target: u32) -> Result<u32, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = version(&tx)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::TooNew { found, known: SCHEMA_VERSION });
    }
    for v in found..target.min(SCHEMA_VERSION) {
        tx.execute_batch(MIGRATIONS[v as usize])?;
        tx.pragma_update(None, "user_version", v + 1)?;
    }
    let now = version(&tx)?;
    tx.commit()?;
    Ok(now)
}
