//! One conversation, several writers: when another palaver adds turns to a conversation this
//! one has open (a headless `--continue` beside the chat screen), this writer must not save
//! its next message over them. Before a message is written at a position, the row already
//! there is checked: one that this writer did not write and that changed since it started
//! belongs to another palaver, so this writer's turns from that position on are moved after
//! the last stored message (and stay moved for the rest of the session: a streaming reply is
//! saved many times at the same position).
//!
//! What another palaver added is read back ([`Added`]) for the chat screen to show: once it has
//! put those turns before its own and renumbered them, it says so ([`Others::adopt`]) and this
//! writer stops moving its positions.

use crate::engine::message::Message;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::{HashMap, HashSet};

/// Messages another palaver added to a conversation open here, found before a save.
#[derive(Debug, Clone, PartialEq)]
pub struct Added {
    pub conv: String,
    /// The store branch they are on.
    pub branch: i64,
    /// The position, as this writer's caller numbered it, where its own messages were moved
    /// from: the added messages go before it.
    pub from: usize,
    /// By how many positions this writer's messages from `from` on were moved.
    pub by: usize,
    /// The messages the other palaver wrote, in order.
    pub messages: Vec<Message>,
}

/// What the writer knows about other writers of its conversations.
#[derive(Debug)]
pub struct Others {
    /// When this writer started (ms since the epoch): a row changed before is not a new turn.
    since_ms: u64,
    /// Rows this writer wrote.
    own: HashSet<i64>,
    /// Per conversation and branch, from which position on this writer's positions move and by
    /// how much, in the order found.
    shifts: HashMap<(String, i64), Vec<(usize, usize)>>,
    /// Found and not yet reported.
    pub found: Vec<Added>,
}

impl Others {
    #[must_use]
    pub fn new(since_ms: u64) -> Self {
        Self { since_ms, own: HashSet::new(), shifts: HashMap::new(), found: Vec::new() }
    }

    /// Where this writer's message at `position` goes, after the moves found so far.
    #[must_use]
    pub fn place(&self, conv: &str, branch: i64, position: usize) -> usize {
        let by = self
            .shifts
            .get(&(conv.to_owned(), branch))
            .and_then(|s| s.iter().rev().find(|(from, _)| *from <= position));
        position + by.map_or(0, |(_, by)| *by)
    }

    /// A row this writer wrote.
    pub fn wrote(&mut self, row: i64) {
        self.own.insert(row);
    }

    /// Where to write the message this writer calls `position`: its place, or, when another
    /// palaver has written there since, after the last stored message (remembered for the
    /// positions after it too).
    ///
    /// # Errors
    /// A database error.
    pub fn check(&mut self, db: &Connection, conv: &str, branch: i64, position: usize) -> rusqlite::Result<usize> {
        let at = self.place(conv, branch, position);
        let row: Option<(i64, i64)> = db
            .prepare_cached(
                "SELECT id, updated_at FROM messages WHERE conversation_id = ?1 AND branch = ?2 AND position = ?3",
            )?
            .query_row(params![conv, branch, at as i64], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let foreign = row.is_some_and(|(id, updated)| {
            !self.own.contains(&id) && u64::try_from(updated).unwrap_or(0) > self.since_ms
        });
        if !foreign {
            return Ok(at);
        }
        let end: i64 = db
            .prepare_cached(
                "SELECT COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?1 AND branch = ?2",
            )?
            .query_row(params![conv, branch], |r| r.get(0))?;
        let end = usize::try_from(end).unwrap_or(at);
        let by = end.saturating_sub(position);
        self.shifts.entry((conv.to_owned(), branch)).or_default().push((position, by));
        let messages = super::read::rows(db, conv, branch, at as i64, end as i64)?.into_iter().map(|r| r.2).collect();
        self.found.push(Added { conv: conv.to_owned(), branch, from: position, by, messages });
        Ok(end)
    }

    /// The caller took the move found at `from` (by `by`) into its own numbering (the chat
    /// screen put the added turns before its own): its positions are the store's again.
    pub fn adopt(&mut self, conv: &str, branch: i64, from: usize, by: usize) {
        if let Some(s) = self.shifts.get_mut(&(conv.to_owned(), branch)) {
            s.retain(|m| *m != (from, by));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_move_from_where_another_writer_was_found() {
        let mut o = Others::new(0);
        assert_eq!(o.place("c", 0, 3), 3);
        o.shifts.insert(("c".into(), 0), vec![(2, 2), (6, 3)]);
        assert_eq!(o.place("c", 0, 1), 1, "before the first move: unchanged");
        assert_eq!(o.place("c", 0, 2), 4);
        assert_eq!(o.place("c", 0, 5), 7);
        assert_eq!(o.place("c", 0, 6), 9, "the later move counts from its own position");
        assert_eq!(o.place("c", 1, 6), 6, "another branch is not moved");
        o.adopt("c", 0, 2, 2);
        assert_eq!(o.place("c", 0, 4), 4, "an adopted move no longer applies");
        assert_eq!(o.place("c", 0, 6), 9, "the other move still does");
    }
}
