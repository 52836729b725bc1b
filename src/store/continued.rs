//! Where a conversation's last answer came from (provider, base URL, model, API), for
//! `--continue` and `--resume` to go back there. Each reply carries its base URL, stored
//! without secrets (`engine::target::storable_url`); a key is never stored. A reply that failed
//! or never started does not count: a server that was gone, or a mistyped `--provider`, does
//! not move the conversation away from where its answers came from.

use super::{StoreError, StoreHandle};
use crate::engine::target::StoredTarget;
use rusqlite::{OptionalExtension, params};

/// The newest reply that answered (on any branch: the most recent one); when none did, the
/// newest that was at least tried (all of them failed: it goes back to where it was tried). A
/// connect failure ends `interrupted` with nothing in it: that is no answer.
const LAST_ANSWER: &str = "SELECT provider, json_extract(body, '$.base_url'), model, api FROM messages
    WHERE conversation_id = ?1 AND role = 'assistant' AND provider IS NOT NULL AND status <> 'waiting'
    ORDER BY (status IN ('complete', 'streaming')
              OR (status IN ('interrupted', 'cancelled') AND (content <> '' OR reasoning <> ''))) DESC, id DESC
    LIMIT 1";

impl StoreHandle {
    /// What conversation `id` last talked to: its newest answered reply's provider, base URL,
    /// model and API, else what the conversation was created with (no base URL). `None` when
    /// there is no such conversation.
    ///
    /// # Errors
    /// A database error.
    pub fn stored_target(&self, id: &str) -> Result<Option<StoredTarget>, StoreError> {
        self.with_reader(|c| {
            let row = |r: &rusqlite::Row<'_>| {
                Ok(StoredTarget { provider: r.get(0)?, base_url: r.get(1)?, model: r.get(2)?, api: r.get(3)? })
            };
            if let Some(t) = c.prepare_cached(LAST_ANSWER)?.query_row(params![id], row).optional()? {
                return Ok(Some(t));
            }
            let created = "SELECT provider, NULL, model, api FROM conversations WHERE id = ?1";
            Ok(c.prepare_cached(created)?.query_row(params![id], row).optional()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::message::{Message, MessageStatus, Role};
    use crate::engine::target::StoredTarget;
    use crate::store::{NewConversation, StoreHandle, StoreOptions};

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
        let store = StoreHandle::open(&path, StoreOptions::default()).unwrap();
        let new = NewConversation { title: "t".into(), provider: Some("p0".into()), ..NewConversation::default() };
        let id = store.create_conversation(new);
        store.flush().unwrap();
        // No answer yet: what it was created with.
        assert_eq!(store.stored_target(&id).unwrap().unwrap().provider.as_deref(), Some("p0"));
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
        // Replies that only failed still say where the conversation was tried.
        let tried = store.create_conversation(NewConversation::default());
        let mut failed = reply("local", Some("http://127.0.0.1:9/v1"), "smol");
        failed.status = MessageStatus::Failed;
        store.save_message(&tried, 0, &Message::user("q"));
        store.save_message(&tried, 1, &failed);
        store.flush().unwrap();
        let t = store.stored_target(&tried).unwrap().unwrap();
        assert_eq!(t.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        // A user message changes nothing; a demo reply (no base URL) clears it with its provider.
        store.save_message(&id, 2, &Message::user("more"));
        store.save_message(&id, 3, &reply("demo", None, "demo"));
        store.flush().unwrap();
        let t = store.stored_target(&id).unwrap().unwrap();
        assert_eq!((t.provider.as_deref(), t.base_url), (Some("demo"), None));
        // A reply that failed (or never started) does not move the conversation.
        let mut failed = reply("typo", Some("http://127.0.0.1:1/v1"), "x");
        failed.status = MessageStatus::Failed;
        let mut refused = reply("typo", Some("http://127.0.0.1:1/v1"), "x");
        (refused.status, refused.main_mut().content) = (MessageStatus::Interrupted, String::new());
        store.save_message(&id, 4, &Message::user("again"));
        store.save_message(&id, 5, &failed);
        store.save_message(&id, 6, &Message::user("and again"));
        store.save_message(&id, 7, &refused);
        store.flush().unwrap();
        assert_eq!(store.stored_target(&id).unwrap().unwrap().provider.as_deref(), Some("demo"));
        assert_eq!(store.stored_target("nope").unwrap(), None);
    }
}
