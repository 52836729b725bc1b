//! Attachment bytes, stored once per SHA-256 in the database beside the conversation that
//! sent them. In the database rather than as files under the data dir: one file to back up or
//! move, written in the same transaction as the message (a crash never leaves a message
//! pointing at a half-written file), and gone with the last message that uses it (a trigger).
//! The message's JSON keeps everything else about an attachment.

use crate::engine::attachment::{Attachment, Blob};
use crate::engine::message::Message;
use rusqlite::{Connection, OptionalExtension, params};

/// The migration adding the blob tables (its own, self-contained: appended after the others).
pub const MIGRATION_ATTACHMENTS: &str = r"
CREATE TABLE blobs (
    sha256     TEXT PRIMARY KEY NOT NULL,     -- lowercase hex of data
    media_type TEXT NOT NULL,
    size       INTEGER NOT NULL,
    data       BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE message_blobs (
    message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    slot       INTEGER NOT NULL,               -- the attachment's index on the message
    sha256     TEXT NOT NULL,
    PRIMARY KEY (message_id, slot)
) WITHOUT ROWID;
CREATE INDEX message_blobs_by_hash ON message_blobs(sha256);
-- The last reference gone (a conversation deleted, a branch cut), the bytes go too.
CREATE TRIGGER blobs_unreferenced AFTER DELETE ON message_blobs
WHEN NOT EXISTS (SELECT 1 FROM message_blobs WHERE sha256 = old.sha256) BEGIN
    DELETE FROM blobs WHERE sha256 = old.sha256;
END;
";

/// Stores the bytes of `msg`'s attachments (its own and its tool calls' images) (each hash once) and links them to row `row`.
/// Attachments never change after a message is created, so a message already linked costs
/// one count.
///
/// # Errors
/// Any SQLite error.
pub fn save(db: &Connection, row: i64, msg: &Message) -> rusqlite::Result<()> {
    let stored: Vec<&Attachment> = msg.all_attachments().filter(|a| a.data.is_some() && !a.sha256.is_empty()).collect();
    if stored.is_empty() {
        return Ok(());
    }
    let linked: i64 = db
        .prepare_cached("SELECT count(*) FROM message_blobs WHERE message_id = ?1")?
        .query_row(params![row], |r| r.get(0))?;
    if linked as usize >= stored.len() {
        return Ok(());
    }
    for (slot, a) in msg.all_attachments().enumerate() {
        let Some(data) = &a.data else { continue };
        if a.sha256.is_empty() {
            continue;
        }
        let have = db
            .prepare_cached("SELECT 1 FROM blobs WHERE sha256 = ?1")?
            .query_row(params![a.sha256], |_| Ok(()))
            .optional()?
            .is_some();
        if !have {
            db.prepare_cached(
                "INSERT INTO blobs (sha256, media_type, size, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                a.sha256,
                a.media_type,
                data.bytes().len() as i64,
                data.bytes(),
                super::ops::int(super::ids::now_ms())
            ])?;
        }
        db.prepare_cached("INSERT OR IGNORE INTO message_blobs (message_id, slot, sha256) VALUES (?1, ?2, ?3)")?
            .execute(params![row, slot as i64, a.sha256])?;
    }
    Ok(())
}

/// Puts the stored bytes back on the attachments of `msgs`. A hash the store does not hold
/// leaves `data` empty (the request says the attachment is no longer available).
///
/// # Errors
/// Any SQLite error.
pub fn load_into<'a>(db: &Connection, msgs: impl IntoIterator<Item = &'a mut Message>) -> rusqlite::Result<()> {
    for m in msgs {
        for a in m.all_attachments_mut().filter(|a| a.data.is_none() && !a.sha256.is_empty()) {
            a.data = get(db, &a.sha256)?.map(Blob::new);
        }
    }
    Ok(())
}

/// The bytes stored under `sha256`.
///
/// # Errors
/// Any SQLite error.
pub fn get(db: &Connection, sha256: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    db.prepare_cached("SELECT data FROM blobs WHERE sha256 = ?1")?.query_row(params![sha256], |r| r.get(0)).optional()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::message::ToolCall;

    #[test]
    fn a_replys_tool_images_are_stored_and_linked() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch("CREATE TABLE messages (id INTEGER PRIMARY KEY); INSERT INTO messages VALUES (7);").unwrap();
        db.execute_batch(MIGRATION_ATTACHMENTS).unwrap();
        let mut m = Message::assistant_pending();
        let images = vec![
            Attachment::from_bytes("shot-1.gif", b"GIF89a\x01\x00\x01\x00one".to_vec()).unwrap(),
            Attachment::from_bytes("shot-2.gif", b"GIF89a\x01\x00\x01\x00two".to_vec()).unwrap(),
        ];
        m.main_mut().tool_calls.push(ToolCall { name: "shot".into(), images, ..ToolCall::default() });
        save(&db, 7, &m).unwrap();
        save(&db, 7, &m).unwrap();
        let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(count("SELECT count(*) FROM blobs"), 2);
        assert_eq!(count("SELECT count(*) FROM message_blobs WHERE message_id = 7"), 2);
    }
}
