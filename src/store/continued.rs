//! Where a conversation's last reply came from (provider, base URL, model, API), for
//! `--continue` and `--resume` to go back there. The base URL is stored without secrets
//! (`engine::target::storable_url`); a key is never stored.

use super::{StoreError, StoreHandle};
use crate::engine::target::StoredTarget;
use rusqlite::{OptionalExtension, params};

/// Migration 5: the base URL of the conversation's last reply (conversations from before it
/// have none: they continue on their provider as configured).
pub const MIGRATION_BASE_URL: &str = "ALTER TABLE conversations ADD COLUMN base_url TEXT;";

impl StoreHandle {
    /// What conversation `id` last talked to; `None` when there is no such conversation.
    ///
    /// # Errors
    /// A database error.
    pub fn stored_target(&self, id: &str) -> Result<Option<StoredTarget>, StoreError> {
        self.with_reader(|c| {
            Ok(c.prepare_cached("SELECT provider, base_url, model, api FROM conversations WHERE id = ?1")?
                .query_row(params![id], |r| {
                    Ok(StoredTarget { provider: r.get(0)?, base_url: r.get(1)?, model: r.get(2)?, api: r.get(3)? })
                })
                .optional()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::message::{Message, MessageStatus, Role};
    use crate::engine::target::StoredTarget;
    use crate::store::{NewConversation, StoreHandle, StoreOptions, schema};

    fn reply(provider: &str, url: Option<&str>, model: &str) -> Message {
        let mut m = Message::with_text(Role::Assistant, "hi");
        m.status = MessageStatus::Complete;
        (m.provider, m.model, m.api) = (Some(provider.into()), Some(model.into()), Some("chat".into()));
        m.base_url = url.map(Into::into);
        m
    }

    #[test]
    fn the_last_reply_says_where_the_conversation_continues() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.sqlite3");
        // A file from before the column: migrating adds it, empty.
        {
            let mut c = rusqlite::Connection::open(&path).unwrap();
            schema::migrate_to(&mut c, 4).unwrap();
        }
        let store = StoreHandle::open(&path, StoreOptions::default()).unwrap();
        let id = store.create_conversation(NewConversation { title: "t".into(), ..NewConversation::default() });
        store.save_message(&id, 0, &Message::user("q"));
        store.save_message(&id, 1, &reply("local", Some("http://127.0.0.1:9/v1"), "smol"));
        store.flush().unwrap();
        let want = StoredTarget {
            provider: Some("local".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            model: Some("smol".into()),
            api: Some("chat".into()),
        };
        assert_eq!(store.stored_target(&id).unwrap(), Some(want));
        // A user message changes nothing; a demo reply (no base URL) clears it with its provider.
        store.save_message(&id, 2, &Message::user("more"));
        store.save_message(&id, 3, &reply("demo", None, "demo"));
        store.flush().unwrap();
        let t = store.stored_target(&id).unwrap().unwrap();
        assert_eq!((t.provider.as_deref(), t.base_url), (Some("demo"), None));
        assert_eq!(store.stored_target("nope").unwrap(), None);
    }
}
