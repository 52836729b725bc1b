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
