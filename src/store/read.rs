//! Reads: listing, lookup, loading a branch, compare groups and full-text search. Plain
//! functions over a connection so they run on the handle's read-only connection, which WAL
//! lets proceed while the writer thread commits.

use super::{BranchInfo, ConversationSummary, Hit, StoreError, StoredConversation};
use crate::engine::message::{Message, RawFrame};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::collections::HashMap;

const SUMMARY: &str = "SELECT c.id, c.title, c.model, c.provider, c.api, c.created_at, c.updated_at, c.active_branch,
    c.compare_group, c.compare_column FROM conversations c";

/// Snippet markers: private-use characters, so text that happens to contain ASCII controls
/// cannot forge a highlight.
const MARK_START: char = '\u{E000}';
const MARK_END: char = '\u{E001}';

fn uint(r: &Row<'_>, i: usize) -> rusqlite::Result<u64> {
    Ok(u64::try_from(r.get::<_, i64>(i)?).unwrap_or(0))
}

fn summary(r: &Row<'_>) -> rusqlite::Result<ConversationSummary> {
    Ok(ConversationSummary {
        id: r.get(0)?,
        title: r.get(1)?,
        model: r.get(2)?,
        provider: r.get(3)?,
        api: r.get(4)?,
        created_at: uint(r, 5)?,
        updated_at: uint(r, 6)?,
        messages: 0,
        active_branch: r.get(7)?,
        compare_group: r.get(8)?,
        compare_column: r.get(9)?,
    })
}

fn summaries(db: &Connection, sql: &str, p: impl rusqlite::Params) -> rusqlite::Result<Vec<ConversationSummary>> {
    let mut list: Vec<ConversationSummary> =
        db.prepare_cached(sql)?.query_map(p, summary)?.collect::<Result<_, _>>()?;
    for s in &mut list {
        s.messages = count(db, &s.id, s.active_branch)?;
    }
    Ok(list)
}

/// Newest first.
///
/// # Errors
/// Any SQLite error.
pub fn list(db: &Connection, limit: usize, offset: usize) -> rusqlite::Result<Vec<ConversationSummary>> {
    summaries(
        db,
        &format!("{SUMMARY} ORDER BY c.updated_at DESC, c.id DESC LIMIT ?1 OFFSET ?2"),
        params![i64::try_from(limit).unwrap_or(-1), i64::try_from(offset).unwrap_or(0)],
    )
}

/// The most recently updated conversation that is not a compare's column (`--continue`): a
/// column goes on as part of its compare (reopened from the conversation list), not as the
/// chat's own conversation.
///
/// # Errors
/// Any SQLite error.
pub fn latest_chat(db: &Connection) -> rusqlite::Result<Option<ConversationSummary>> {
    let sql = format!("{SUMMARY} WHERE c.compare_group IS NULL ORDER BY c.updated_at DESC, c.id DESC LIMIT 1");
    Ok(summaries(db, &sql, params![])?.pop())
}

/// One conversation by exact id.
///
/// # Errors
/// Any SQLite error.
pub fn get(db: &Connection, id: &str) -> rusqlite::Result<Option<ConversationSummary>> {
    Ok(summaries(db, &format!("{SUMMARY} WHERE c.id = ?1"), params![id])?.pop())
}

/// An exact id, or a prefix that names exactly one conversation.
///
/// # Errors
/// A prefix matching several conversations, or an SQLite error.
pub fn resolve(db: &Connection, prefix: &str) -> Result<Option<String>, StoreError> {
    if get(db, prefix)?.is_some() {
        return Ok(Some(prefix.to_owned()));
    }
    // Ids are ASCII, so every id starting with `prefix` sorts below `prefix` + DEL.
    let mut ids: Vec<String> = db
        .prepare_cached("SELECT id FROM conversations WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 11")?
        .query_map(params![prefix, format!("{prefix}\u{7f}")], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    match ids.len() {
        0 | 1 => Ok(ids.pop()),
        _ => Err(StoreError::Ambiguous { prefix: prefix.to_owned(), matches: ids }),
    }
}

/// The conversations of a compare group, by column.
///
/// # Errors
/// Any SQLite error.
pub fn compare_group(db: &Connection, group: &str) -> rusqlite::Result<Vec<ConversationSummary>> {
    summaries(db, &format!("{SUMMARY} WHERE c.compare_group = ?1 ORDER BY c.compare_column, c.id"), params![group])
}

/// Every branch of a conversation, with how many messages each holds itself.
///
/// # Errors
/// Any SQLite error.
pub fn branches(db: &Connection, id: &str) -> rusqlite::Result<Vec<BranchInfo>> {
    db.prepare_cached(
        "SELECT b.branch, b.parent, b.fork_position, b.created_at,
            (SELECT count(*) FROM messages m WHERE m.conversation_id = b.conversation_id AND m.branch = b.branch)
         FROM branches b WHERE b.conversation_id = ?1 ORDER BY b.branch",
    )?
    .query_map(params![id], |r| {
        Ok(BranchInfo {
            branch: r.get(0)?,
            parent: r.get(1)?,
            fork_position: r.get::<_, i64>(2)? as usize,
            created_at: uint(r, 3)?,
            messages: uint(r, 4)?,
        })
    })?
    .collect()
}

/// The position ranges each branch contributes to `branch`'s messages, root first: a branch
/// owns its positions from its fork on, up to where its child forked.
fn segments(db: &Connection, id: &str, branch: i64) -> rusqlite::Result<Vec<(i64, i64, i64)>> {
    // A bounded walk: a corrupt parent cycle must not hang a read.
    walk_segments(branch, 10_000, |b| {
        let row: Option<(Option<i64>, i64)> = db
            .prepare_cached("SELECT parent, fork_position FROM branches WHERE conversation_id = ?1 AND branch = ?2")?
            .query_row(params![id, b], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        Ok(row.unwrap_or((None, 0)))
    })
}

/// How branches compose, in one place for the store and for an import's check: walking up from
/// `start` (each branch's `(parent, fork position)` from `parent_of`, at most `steps` steps), a
/// branch owns its positions from its fork (0 for the root) up to where its child forked.
/// Returns `(branch, from, to)` ranges, root first.
///
/// # Errors
/// Whatever `parent_of` fails with.
pub(crate) fn walk_segments<E>(
    start: i64,
    steps: usize,
    mut parent_of: impl FnMut(i64) -> Result<(Option<i64>, i64), E>,
) -> Result<Vec<(i64, i64, i64)>, E> {
    let mut segs = Vec::new();
    let (mut current, mut limit) = (Some(start), i64::MAX);
    for _ in 0..steps {
        let Some(b) = current else { break };
        let (parent, fork) = parent_of(b)?;
        let fork = if parent.is_none() { 0 } else { fork };
        if fork < limit {
            segs.push((b, fork, limit));
        }
        limit = limit.min(fork);
        current = parent;
    }
    segs.reverse();
    Ok(segs)
}

fn count(db: &Connection, id: &str, branch: i64) -> rusqlite::Result<u64> {
    let mut n = 0;
    for (b, lo, hi) in segments(db, id, branch)? {
        n += db
            .prepare_cached(
                "SELECT count(*) FROM messages WHERE conversation_id = ?1 AND branch = ?2 AND position >= ?3 AND position < ?4",
            )?
            .query_row(params![id, b, lo, hi], |r| uint(r, 0))?;
    }
    Ok(n)
}

/// A stored row back into the message it was saved from.
fn message(r: &Row<'_>) -> rusqlite::Result<(i64, usize, Message)> {
    // Parsed where SQLite holds it: a long conversation's bodies are megabytes, not worth a copy.
    let body = r.get_ref(5)?.as_str()?;
    let mut msg: Message = serde_json::from_str(body)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(5, rusqlite::types::Type::Text, Box::new(e)))?;
    let (content, reasoning, refusal): (String, String, String) = (r.get(2)?, r.get(3)?, r.get(4)?);
    if let Some(c) = msg.choices.first_mut() {
        (c.content, c.reasoning, c.refusal) = (content, reasoning, refusal);
    }
    // The column is authoritative: recovery after a crash updates it.
    let status: String = r.get(6)?;
    if let Ok(s) = serde_json::from_value(serde_json::Value::String(status)) {
        msg.status = s;
    }
    Ok((r.get(0)?, r.get::<_, i64>(1)? as usize, msg))
}

/// The rows a branch holds itself in `[lo, hi)`, by position, with their row ids.
///
/// # Errors
/// Any SQLite error, or a body that is not a message.
pub fn rows(db: &Connection, id: &str, branch: i64, lo: i64, hi: i64) -> rusqlite::Result<Vec<(i64, usize, Message)>> {
    db.prepare_cached(
        "SELECT id, position, content, reasoning, refusal, body, status FROM messages
         WHERE conversation_id = ?1 AND branch = ?2 AND position >= ?3 AND position < ?4 ORDER BY position",
    )?
    .query_map(params![id, branch, lo, hi], message)?
    .collect::<rusqlite::Result<Vec<_>>>()
    .and_then(|mut rows| {
        super::blobs::load_into(db, rows.iter_mut().map(|r| &mut r.2))?;
        Ok(rows)
    })
}

/// Puts stored frames back on their messages.
fn attach_frames(db: &Connection, id: &str, rows: &mut [(i64, usize, Message)]) -> rusqlite::Result<()> {
    let index: HashMap<i64, usize> = rows.iter().enumerate().map(|(i, r)| (r.0, i)).collect();
    let mut stmt = db.prepare_cached(
        "SELECT f.message_id, f.at_ms, f.event, f.data FROM frames f JOIN messages m ON m.id = f.message_id
         WHERE m.conversation_id = ?1 ORDER BY f.message_id, f.seq",
    )?;
    let mut q = stmt.query(params![id])?;
    while let Some(r) = q.next()? {
        if let Some(&i) = index.get(&r.get::<_, i64>(0)?) {
            rows[i].2.frames.push(RawFrame { at_ms: uint(r, 1)?, event: r.get(2)?, data: r.get(3)? });
        }
    }
    Ok(())
}

/// A branch's messages (the active branch when `branch` is `None`), lossless.
///
/// # Errors
/// Any SQLite error, or a stored body that is not a message.
pub fn load(db: &Connection, id: &str, branch: Option<i64>) -> rusqlite::Result<Option<StoredConversation>> {
    let Some(summary) = get(db, id)? else { return Ok(None) };
    let branch = branch.unwrap_or(summary.active_branch);
    let mut all = Vec::new();
    for (b, lo, hi) in segments(db, id, branch)? {
        all.extend(rows(db, id, b, lo, hi)?);
    }
    attach_frames(db, id, &mut all)?;
    let branches = branches(db, id)?;
    Ok(Some(StoredConversation { summary, branch, messages: all.into_iter().map(|r| r.2).collect(), branches }))
}

/// The last `keep` messages of a conversation whose only branch holds more than `over`: the
/// conversation with just those, and how many come before them. `None` when it should be
/// loaded whole ([`load`]): it does not exist, has branches, is short, or has a gap in its
/// positions. The screen opens on the tail; [`load_head`] brings the rest.
///
/// # Errors
/// Any SQLite error, or a stored body that is not a message.
pub fn load_tail(
    db: &Connection,
    id: &str,
    keep: usize,
    over: usize,
) -> rusqlite::Result<Option<(StoredConversation, usize)>> {
    let Some(summary) = get(db, id)? else { return Ok(None) };
    let branches = branches(db, id)?;
    let branch = summary.active_branch;
    if branches.len() != 1 || branches[0].branch != branch {
        return Ok(None);
    }
    let (count, end): (i64, i64) = db
        .prepare_cached(
            "SELECT COUNT(*), COALESCE(MAX(position) + 1, 0) FROM messages WHERE conversation_id = ?1 AND branch = ?2",
        )?
        .query_row(params![id, branch], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let count = usize::try_from(count).unwrap_or(0);
    if count != usize::try_from(end).unwrap_or(usize::MAX) || count <= over.max(keep) {
        return Ok(None);
    }
    let older = count - keep;
    let mut rows = rows(db, id, branch, older as i64, end)?;
    attach_frames(db, id, &mut rows)?;
    let messages = rows.into_iter().map(|r| r.2).collect();
    Ok(Some((StoredConversation { summary, branch, messages, branches }, older)))
}

/// Positions `[0, upto)` of `branch`: what [`load_tail`] left out.
///
/// # Errors
/// Any SQLite error, a stored body that is not a message, or fewer rows than asked for (the
/// conversation changed meanwhile).
pub fn load_head(db: &Connection, id: &str, branch: i64, upto: usize) -> rusqlite::Result<Vec<Message>> {
    let mut rows = rows(db, id, branch, 0, upto as i64)?;
    if rows.len() != upto || rows.iter().enumerate().any(|(i, r)| r.1 != i) {
        return Err(rusqlite::Error::InvalidQuery);
    }
    attach_frames(db, id, &mut rows)?;
    Ok(rows.into_iter().map(|r| r.2).collect())
}

/// A user's search text as an FTS5 query: every word quoted (so punctuation and operators are
/// literal), all required; the last word also matches as a prefix when it has 3+ characters,
/// for search-as-you-type. `None` when nothing searchable is left.
#[must_use]
pub fn fts_query(input: &str) -> Option<String> {
    let words: Vec<&str> = input.split_whitespace().filter(|w| w.chars().any(char::is_alphanumeric)).collect();
    let last = words.len().checked_sub(1)?;
    let typing = !input.ends_with(char::is_whitespace);
    let parts: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let quoted = format!("\"{}\"", w.replace('"', "\"\""));
            if i == last && typing && w.chars().filter(|c| c.is_alphanumeric()).count() >= 3 {
                format!("{quoted}*")
            } else {
                quoted
            }
        })
        .collect();
    Some(parts.join(" "))
}

/// Splits an FTS snippet into plain text and the byte ranges of its matches.
fn unmark(snippet: &str) -> (String, Vec<std::ops::Range<usize>>) {
    let mut text = String::with_capacity(snippet.len());
    let (mut ranges, mut start) = (Vec::new(), None);
    for ch in snippet.chars() {
        match ch {
            MARK_START => start = Some(text.len()),
            MARK_END => {
                if let Some(s) = start.take() {
                    ranges.push(s..text.len());
                }
            }
            _ => text.push(ch),
        }
    }
    (text, ranges)
}

/// Messages matching `query`, newest first, with a snippet and its highlighted ranges.
///
/// # Errors
/// Any SQLite error.
pub fn search(db: &Connection, query: &str, limit: usize) -> rusqlite::Result<Vec<Hit>> {
    let Some(q) = fts_query(query) else { return Ok(Vec::new()) };
    // Newest first is rowid order, which FTS5 walks backwards without sorting; the LIMIT sits
    // inside so only the returned rows pay for a snippet.
    let sql = format!(
        "SELECT m.conversation_id, c.title, m.branch, m.position, m.role, s.snip, m.updated_at, c.model,
            c.compare_group
         FROM (SELECT rowid AS rid, snippet(messages_fts, -1, '{MARK_START}', '{MARK_END}', '…', 24) AS snip
               FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2) s
         JOIN messages m ON m.id = s.rid JOIN conversations c ON c.id = m.conversation_id
         ORDER BY s.rid DESC"
    );
    db.prepare_cached(&sql)?
        .query_map(params![q, limit as i64], |r| {
            let (snippet, ranges) = unmark(&r.get::<_, String>(5)?);
            Ok(Hit {
                conversation_id: r.get(0)?,
                title: r.get(1)?,
                branch: r.get(2)?,
                position: r.get::<_, i64>(3)? as usize,
                role: r.get(4)?,
                snippet,
                ranges,
                updated_at: uint(r, 6)?,
                model: r.get(7)?,
                compare_group: r.get(8)?,
            })
        })?
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_escaped() {
        assert_eq!(fts_query("  "), None);
        assert_eq!(fts_query("?!"), None);
        assert_eq!(fts_query("a \"b\" OR c"), Some(r#""a" """b""" "OR" "c""#.into()));
        assert_eq!(fts_query("rust trai"), Some(r#""rust" "trai"*"#.into()));
        assert_eq!(fts_query("rust trait "), Some(r#""rust" "trait""#.into()));
    }

    #[test]
    fn snippets_unmark() {
        let (t, r) = unmark("a \u{E000}bé\u{E001} c");
        assert_eq!(t, "a bé c");
        assert_eq!(&t[r[0].clone()], "bé");
    }
}
