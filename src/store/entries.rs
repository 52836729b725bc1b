//! The history as a reader sees it: one entry per conversation, and one per compare with its
//! columns inside it (each column is a conversation of its own, linked by its compare group).
//! `history list`, `history show|export|rm` of a compare and the chat screen's list read this;
//! the plain per-conversation reads (`--continue`, a column by its own id) stay in `read.rs`.

use super::read::{compare_group, get};
use super::{ConversationSummary, StoreError, StoreHandle};
use rusqlite::{Connection, params};
use serde::Serialize;

/// The prefix of every compare group id (`StoreHandle::new_compare_group`).
pub const GROUP_PREFIX: &str = "cmp-";

/// One line of the history: a conversation, or a compare with its columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListEntry {
    /// The conversation's id, or the compare group's.
    pub id: String,
    pub title: String,
    /// The conversation's model; `None` for a compare (its columns name theirs).
    pub model: Option<String>,
    /// Unix ms; a compare's are its columns' earliest creation and latest update.
    pub created_at: u64,
    pub updated_at: u64,
    /// Messages on the active branch; for a compare, the sum over its columns.
    pub messages: u64,
    /// A compare's columns in column order; empty for a conversation.
    pub columns: Vec<ConversationSummary>,
}

impl ListEntry {
    /// Whether this entry is a compare.
    #[must_use]
    pub fn is_compare(&self) -> bool {
        !self.columns.is_empty()
    }

    /// A plain conversation's entry.
    #[must_use]
    pub fn conversation(s: ConversationSummary) -> Self {
        Self {
            id: s.id,
            title: s.title,
            model: s.model,
            created_at: s.created_at,
            updated_at: s.updated_at,
            messages: s.messages,
            columns: Vec::new(),
        }
    }

    /// A compare's entry from its columns (in column order); `None` without columns. The title
    /// is the first column's (every column starts from the same prompt).
    #[must_use]
    pub fn compare(group: &str, columns: Vec<ConversationSummary>) -> Option<Self> {
        let first = columns.first()?;
        Some(Self {
            id: group.to_owned(),
            title: first.title.clone(),
            model: None,
            created_at: columns.iter().map(|c| c.created_at).min().unwrap_or(0),
            updated_at: columns.iter().map(|c| c.updated_at).max().unwrap_or(0),
            messages: columns.iter().map(|c| c.messages).sum(),
            columns,
        })
    }

    /// The columns' models in column order (`-` for one with none).
    #[must_use]
    pub fn models(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.model.as_deref().unwrap_or("-")).collect()
    }
}

/// What an id typed by the user names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryRef {
    Conversation(String),
    /// A compare group, by its id.
    Compare(String),
}

/// Entries, most recently updated first: a compare sorts where its newest column does.
///
/// The walk follows the `updated_at` index and takes each compare at its newest column (a
/// lookup in the group index), so a page costs its own rows, not the whole history.
///
/// # Errors
/// Any SQLite error.
pub fn list(db: &Connection, limit: usize, offset: usize) -> rusqlite::Result<Vec<ListEntry>> {
    let heads: Vec<(String, Option<String>)> = db
        .prepare_cached(
            "SELECT c.id, c.compare_group FROM conversations c
             WHERE c.compare_group IS NULL
                OR c.id = (SELECT g.id FROM conversations g WHERE g.compare_group = c.compare_group
                           ORDER BY g.updated_at DESC, g.id DESC LIMIT 1)
             ORDER BY c.updated_at DESC, c.id DESC LIMIT ?1 OFFSET ?2",
        )?
        .query_map(params![i64::try_from(limit).unwrap_or(-1), i64::try_from(offset).unwrap_or(0)], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(heads.len());
    for (id, group) in heads {
        let entry = match group {
            Some(g) => ListEntry::compare(&g, compare_group(db, &g)?),
            None => get(db, &id)?.map(ListEntry::conversation),
        };
        out.extend(entry);
    }
    Ok(out)
}

/// One compare's entry by its group id.
///
/// # Errors
/// Any SQLite error.
pub fn compare(db: &Connection, group: &str) -> rusqlite::Result<Option<ListEntry>> {
    Ok(ListEntry::compare(group, compare_group(db, group)?))
}

/// A conversation id or a compare group id, exact or a prefix naming exactly one of either.
///
/// # Errors
/// A prefix matching several, or an SQLite error.
pub fn resolve(db: &Connection, prefix: &str) -> Result<Option<EntryRef>, StoreError> {
    if get(db, prefix)?.is_some() {
        return Ok(Some(EntryRef::Conversation(prefix.to_owned())));
    }
    if group_exists(db, prefix)? {
        return Ok(Some(EntryRef::Compare(prefix.to_owned())));
    }
    // Ids are ASCII, so every id starting with `prefix` sorts below `prefix` + DEL.
    let end = format!("{prefix}\u{7f}");
    let mut found: Vec<EntryRef> = db
        .prepare_cached("SELECT id FROM conversations WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 11")?
        .query_map(params![prefix, end], |r| r.get(0).map(EntryRef::Conversation))?
        .collect::<Result<_, _>>()?;
    let groups: Vec<EntryRef> = db
        .prepare_cached(
            "SELECT DISTINCT compare_group FROM conversations
             WHERE compare_group >= ?1 AND compare_group < ?2 ORDER BY compare_group LIMIT 11",
        )?
        .query_map(params![prefix, end], |r| r.get(0).map(EntryRef::Compare))?
        .collect::<Result<_, _>>()?;
    found.extend(groups);
    match found.len() {
        0 | 1 => Ok(found.pop()),
        _ => {
            let matches = found
                .into_iter()
                .map(|f| match f {
                    EntryRef::Conversation(id) | EntryRef::Compare(id) => id,
                })
                .collect();
            Err(StoreError::Ambiguous { prefix: prefix.to_owned(), matches })
        }
    }
}

/// Whether any conversation belongs to compare group `group`.
///
/// # Errors
/// Any SQLite error.
pub fn group_exists(db: &Connection, group: &str) -> rusqlite::Result<bool> {
    db.prepare_cached("SELECT EXISTS (SELECT 1 FROM conversations WHERE compare_group = ?1)")?
        .query_row(params![group], |r| r.get(0))
}

impl StoreHandle {
    /// A fresh id for a compare group, to pass in [`super::NewConversation::compare`].
    #[must_use]
    pub fn new_compare_group() -> String {
        format!("{GROUP_PREFIX}{}", super::ids::new_id(super::ids::now_ms()))
    }

    /// The history's entries, newest first: a compare is one entry holding its columns.
    ///
    /// # Errors
    /// A database error.
    pub fn list_entries(&self, limit: usize, offset: usize) -> Result<Vec<ListEntry>, StoreError> {
        self.read(|c| Ok(list(c, limit, offset)?))
    }

    /// One compare's entry by its group id.
    ///
    /// # Errors
    /// A database error.
    pub fn compare_entry(&self, group: &str) -> Result<Option<ListEntry>, StoreError> {
        self.read(|c| Ok(compare(c, group)?))
    }

    /// A conversation or a compare by id or unique prefix (of either).
    ///
    /// # Errors
    /// An ambiguous prefix, or a database error.
    pub fn resolve_entry(&self, prefix: &str) -> Result<Option<EntryRef>, StoreError> {
        self.read(|c| resolve(c, prefix))
    }
}
