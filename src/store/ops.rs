//! The write operations as SQL. Each runs inside the writer's batch transaction under its own
//! savepoint, so one bad operation never takes its neighbours down with it.

use super::ids::now_ms;
use crate::engine::message::{Message, MessageStatus, RawFrame};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use std::collections::HashMap;

/// One queued write.
#[derive(Debug, Clone)]
pub enum Op {
    Create(NewRow),
    /// Upserts the message at `position` of `branch` (the active branch when `None`).
    Save {
        conv: String,
        branch: Option<i64>,
        position: usize,
        /// Shared with whoever queued it (the chat screen's transcript): the writer copies it
        /// only when it must cut it and the other holder still has it.
        msg: std::sync::Arc<Message>,
    },
    /// Deletes the messages of a branch from `from` on.
    Truncate {
        conv: String,
        branch: Option<i64>,
        from: usize,
    },
    Rename {
        conv: String,
        title: String,
    },
    Delete {
        conv: String,
    },
    Fork {
        conv: String,
        branch: i64,
        parent: i64,
        fork_position: usize,
        at: u64,
    },
    Activate {
        conv: String,
        branch: i64,
    },
    /// The caller renumbered its messages from `from` on by `by`, past what another palaver
    /// added (see `others.rs`): stop moving them.
    Adopt {
        conv: String,
        branch: Option<i64>,
        from: usize,
        by: usize,
    },
}

impl Op {
    /// The conversation an operation touches.
    #[must_use]
    pub fn conversation(&self) -> &str {
        match self {
            Self::Create(r) => &r.id,
            Self::Save { conv, .. }
            | Self::Truncate { conv, .. }
            | Self::Rename { conv, .. }
            | Self::Delete { conv }
            | Self::Fork { conv, .. }
            | Self::Activate { conv, .. }
            | Self::Adopt { conv, .. } => conv,
        }
    }
}

/// A conversation row about to be created.
#[derive(Debug, Clone)]
pub struct NewRow {
    pub id: String,
    pub title: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub api: Option<String>,
    pub compare: Option<(String, u32)>,
    pub created_at: u64,
}

/// What the writer remembers between operations; cleared whenever a batch rolls back.
#[derive(Debug, Default)]
pub struct Caches {
    /// Active branch per conversation.
    pub branch: HashMap<String, i64>,
    /// Frames already stored per message row.
    pub frames: HashMap<i64, usize>,
}

/// Settings an operation needs.
pub struct Ctx<'a> {
    pub writer: &'a str,
    pub store_frames: bool,
    pub frames_cap: usize,
    pub caches: &'a mut Caches,
    /// Turns other processes added to the conversations written here.
    pub others: &'a mut super::others::Others,
}

/// Runs one operation.
///
/// # Errors
/// Any SQLite error; a missing conversation is a constraint error.
pub fn apply(db: &Connection, op: &mut Op, ctx: &mut Ctx<'_>) -> rusqlite::Result<()> {
    if let Op::Save { conv, branch, position, msg } = op {
        let branch = resolve_branch(db, conv, *branch, ctx)?;
        let at = ctx.others.check(db, conv, branch, *position)?;
        return save(db, conv, branch, at, std::sync::Arc::make_mut(msg), ctx);
    }
    match &*op {
        Op::Save { .. } => Ok(()),
        Op::Create(r) => {
            let (group, column) = r.compare.clone().unzip();
            db.prepare_cached(
                "INSERT INTO conversations (id, title, model, provider, api, created_at, updated_at, compare_group, compare_column)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8)",
            )?
            .execute(params![r.id, redact(&r.title), r.model, r.provider, r.api, int(r.created_at), group, column])?;
            db.prepare_cached("INSERT INTO branches (conversation_id, branch, parent, fork_position, created_at) VALUES (?1, 0, NULL, 0, ?2)")?
                .execute(params![r.id, int(r.created_at)])?;
            Ok(())
        }
        Op::Truncate { conv, branch, from } => {
            let branch = resolve_branch(db, conv, *branch, ctx)?;
            let from = &ctx.others.place(conv, branch, *from);
            db.prepare_cached("DELETE FROM messages WHERE conversation_id = ?1 AND branch = ?2 AND position >= ?3")?
                .execute(params![conv, branch, *from as i64])?;
            touch(db, conv, now_ms())
        }
        Op::Rename { conv, title } => {
            db.prepare_cached("UPDATE conversations SET title = ?2 WHERE id = ?1")?
                .execute(params![conv, redact(title)])?;
            Ok(())
        }
        Op::Delete { conv } => {
            ctx.caches.branch.remove(conv.as_str());
            ctx.caches.frames.clear();
            db.prepare_cached("DELETE FROM conversations WHERE id = ?1")?.execute(params![conv])?;
            Ok(())
        }
        Op::Fork { conv, branch, parent, fork_position, at } => {
            db.prepare_cached(
                "INSERT INTO branches (conversation_id, branch, parent, fork_position, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![conv, *branch, *parent, *fork_position as i64, int(*at)])?;
            activate(db, conv, *branch, ctx)
        }
        Op::Activate { conv, branch } => activate(db, conv, *branch, ctx),
        Op::Adopt { conv, branch, from, by } => {
            let branch = resolve_branch(db, conv, *branch, ctx)?;
            ctx.others.adopt(conv, branch, *from, *by);
            Ok(())
        }
    }
}

fn activate(db: &Connection, conv: &str, branch: i64, ctx: &mut Ctx<'_>) -> rusqlite::Result<()> {
    let n = db
        .prepare_cached("UPDATE conversations SET active_branch = ?2 WHERE id = ?1")?
        .execute(params![conv, branch])?;
    if n == 0 {
        return Err(rusqlite::Error::QueryReturnedNoRows);
    }
    ctx.caches.branch.insert(conv.to_owned(), branch);
    Ok(())
}

fn touch(db: &Connection, conv: &str, at: u64) -> rusqlite::Result<()> {
    db.prepare_cached("UPDATE conversations SET updated_at = ?2 WHERE id = ?1")?.execute(params![conv, int(at)])?;
    Ok(())
}

fn resolve_branch(db: &Connection, conv: &str, branch: Option<i64>, ctx: &mut Ctx<'_>) -> rusqlite::Result<i64> {
    if let Some(b) = branch {
        return Ok(b);
    }
    if let Some(b) = ctx.caches.branch.get(conv) {
        return Ok(*b);
    }
    let b: i64 = db
        .prepare_cached("SELECT active_branch FROM conversations WHERE id = ?1")?
        .query_row(params![conv], |r| r.get(0))?;
    ctx.caches.branch.insert(conv.to_owned(), b);
    Ok(b)
}

/// SQLite integers are signed; times and counts here never come near the limit.
#[must_use]
pub fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A serde enum as the plain string it serialises to.
pub fn enum_str<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Every text column goes through the one redactor ([`crate::sys::secrets`]): the secrets
/// palaver knows, and their encodings, are never written. JSON text stays JSON: the mark has
/// nothing JSON escapes, and a secret's escaped form is one of the forms searched.
fn redact(s: &str) -> std::borrow::Cow<'_, str> {
    crate::sys::secrets::redact(s)
}

fn json<T: Serialize>(v: &T) -> rusqlite::Result<String> {
    serde_json::to_string(v).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn opt_json<T: Serialize>(v: Option<&T>) -> rusqlite::Result<Option<String>> {
    v.map(json).transpose()
}

/// The upsert. Choice 0's text lives in its own columns (searchable, and the part that grows
/// while streaming), so it is taken out of the message for the JSON body and put back after:
/// no copy of the text is made.
fn save(
    db: &Connection,
    conv: &str,
    branch: i64,
    position: usize,
    msg: &mut Message,
    ctx: &mut Ctx<'_>,
) -> rusqlite::Result<()> {
    // The writer's own copy: cutting it never touches what the user sees.
    super::fit::fit(msg, super::fit::FIELD_BYTES);
    let mut texts = msg
        .choices
        .first_mut()
        .map(|c| (std::mem::take(&mut c.content), std::mem::take(&mut c.reasoning), std::mem::take(&mut c.refusal)));
    let frames = std::mem::take(&mut msg.frames);
    let (keep, kept_bytes) = if ctx.store_frames { frames_prefix(&frames, ctx.frames_cap) } else { (0, 0) };
    let (bytes, dropped) = (msg.frames_bytes, msg.frames_dropped);
    msg.frames_bytes = kept_bytes;
    msg.frames_dropped += (frames.len() - keep) as u64;
    let body = json(&*msg);
    msg.frames_bytes = bytes;
    msg.frames_dropped = dropped;
    msg.frames = frames;
    let result = body.and_then(|body| {
        let (content, reasoning, refusal) =
            texts.as_ref().map_or(("", "", ""), |(a, b, c)| (a.as_str(), b.as_str(), c.as_str()));
        // Redacted here, the one way into `messages`: the FTS index, filled from it by
        // triggers, never sees a secret either.
        let [content, reasoning, refusal, body] = [content, reasoning, refusal, body.as_str()].map(redact);
        upsert(db, conv, branch, position, msg, &body, [&content, &reasoning, &refusal], ctx)
    });
    if let (Some(c), Some((content, reasoning, refusal))) = (msg.choices.first_mut(), texts.take()) {
        c.content = content;
        c.reasoning = reasoning;
        c.refusal = refusal;
    }
    let row = result?;
    ctx.others.wrote(row);
    save_tool_calls(db, row, msg)?;
    super::blobs::save(db, row, msg)?;
    if ctx.store_frames {
        save_frames(db, row, &msg.frames[..keep], ctx)?;
    }
    let assistant = msg.role() == crate::engine::message::Role::Assistant;
    db.prepare_cached(
        "UPDATE conversations SET updated_at = ?2, model = COALESCE(?3, model), provider = COALESCE(?4, provider),
         api = COALESCE(?5, api) WHERE id = ?1",
    )?
    .execute(params![
        conv,
        int(now_ms()),
        msg.model.as_ref().filter(|_| assistant),
        msg.provider.as_ref().filter(|_| assistant),
        msg.api.as_ref().filter(|_| assistant)
    ])?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn upsert(
    db: &Connection,
    conv: &str,
    branch: i64,
    position: usize,
    msg: &Message,
    body: &str,
    [content, reasoning, refusal]: [&str; 3],
    ctx: &Ctx<'_>,
) -> rusqlite::Result<i64> {
    let main = msg.choices.first();
    let items = if msg.items.is_empty() { None } else { Some(redact(&json(&msg.items)?).into_owned()) };
    let writer = msg.is_live().then_some(ctx.writer);
    let now = now_ms();
    db.prepare_cached(
        "INSERT INTO messages (conversation_id, branch, position, role, content, reasoning, refusal, model, provider,
            api, finish_reason, status, started_at_ms, ttft_ms, total_ms, usage, prompt_filter, content_filter, items,
            error, tool_call_id, writer, body, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?24)
         ON CONFLICT (conversation_id, branch, position) DO UPDATE SET role = excluded.role, content = excluded.content,
            reasoning = excluded.reasoning, refusal = excluded.refusal, model = excluded.model,
            provider = excluded.provider, api = excluded.api, finish_reason = excluded.finish_reason,
            status = excluded.status, started_at_ms = excluded.started_at_ms, ttft_ms = excluded.ttft_ms,
            total_ms = excluded.total_ms, usage = excluded.usage, prompt_filter = excluded.prompt_filter,
            content_filter = excluded.content_filter, items = excluded.items, error = excluded.error,
            tool_call_id = excluded.tool_call_id, writer = excluded.writer, body = excluded.body,
            updated_at = excluded.updated_at
         RETURNING id",
    )?
    .query_row(
        params![
            conv,
            branch,
            position as i64,
            enum_str(&msg.role()),
            content,
            reasoning,
            refusal,
            msg.model,
            msg.provider,
            msg.api,
            main.and_then(|c| c.finish_reason.as_deref()),
            enum_str(&msg.status),
            int(msg.timing.started_at_ms),
            msg.timing.ttft_ms.map(int),
            msg.timing.total_ms.map(int),
            opt_json(msg.usage.as_ref())?,
            opt_json(msg.prompt_filter.as_ref())?,
            opt_json(main.and_then(|c| c.content_filter.as_ref()))?,
            items,
            opt_json(msg.error.as_ref())?.map(|e| redact(&e).into_owned()),
            msg.tool_call_id,
            writer,
            body,
            int(now),
        ],
        |r| r.get(0),
    )
}

fn save_tool_calls(db: &Connection, row: i64, msg: &Message) -> rusqlite::Result<()> {
    if msg.role() != crate::engine::message::Role::Assistant {
        return Ok(());
    }
    db.prepare_cached("DELETE FROM tool_calls WHERE message_id = ?1")?.execute(params![row])?;
    let mut insert = db.prepare_cached(
        "INSERT INTO tool_calls (message_id, choice, slot, call_id, name, arguments, output, status, duration_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for c in &msg.choices {
        for (slot, t) in c.tool_calls.iter().enumerate() {
            insert.execute(params![
                row,
                c.index,
                slot as i64,
                t.id,
                t.name,
                redact(&t.arguments),
                t.output.as_deref().map(redact),
                enum_str(&t.status),
                t.duration_ms.map(int)
            ])?;
        }
    }
    Ok(())
}

/// How many leading frames fit in `cap` bytes, and their size.
fn frames_prefix(frames: &[RawFrame], cap: usize) -> (usize, usize) {
    let mut bytes = 0;
    for (i, f) in frames.iter().enumerate() {
        let size = f.data.len() + f.event.len();
        if bytes + size > cap {
            return (i, bytes);
        }
        bytes += size;
    }
    (frames.len(), bytes)
}

/// Frames only ever grow while a message streams, so only the new ones are inserted.
fn save_frames(db: &Connection, row: i64, frames: &[RawFrame], ctx: &mut Ctx<'_>) -> rusqlite::Result<()> {
    let stored = match ctx.caches.frames.get(&row) {
        Some(n) => *n,
        None => db
            .prepare_cached("SELECT count(*) FROM frames WHERE message_id = ?1")?
            .query_row(params![row], |r| r.get::<_, i64>(0))? as usize,
    };
    let mut from = stored;
    if frames.len() < stored {
        // A different message now sits at this position: start over.
        db.prepare_cached("DELETE FROM frames WHERE message_id = ?1")?.execute(params![row])?;
        from = 0;
    }
    let mut insert = db.prepare_cached(
        "INSERT OR REPLACE INTO frames (message_id, seq, at_ms, event, data) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (seq, f) in frames.iter().enumerate().skip(from) {
        insert.execute(params![row, seq as i64, int(f.at_ms), f.event, redact(&f.data)])?;
    }
    ctx.caches.frames.insert(row, frames.len());
    Ok(())
}

/// This process as recorded on live messages: pid and start time, so a later run can tell a
/// crashed writer (mark its messages interrupted) from one still streaming in another window.
#[must_use]
pub fn process_token() -> String {
    let pid = std::process::id();
    start_time(pid).map(|t| format!("{pid}:{t}")).unwrap_or_default()
}

fn start_time(pid: u32) -> Option<String> {
    // A process's stat line is a few hundred bytes; its name is at most 16.
    let stat = std::fs::File::open(format!("/proc/{pid}/stat")).and_then(|f| crate::sys::read::head(f, 4096)).ok()?;
    let stat = String::from_utf8_lossy(&stat);
    // Fields after the parenthesised name: state is the first, starttime the 20th. A zombie
    // (killed, not yet reaped) is as dead as a writer gets.
    let mut fields = stat.rsplit(')').next()?.split_whitespace();
    if matches!(fields.next(), Some("Z" | "X" | "x")) {
        return None;
    }
    fields.nth(18).map(str::to_owned)
}

fn is_alive(token: &str) -> bool {
    let Some((pid, start)) = token.split_once(':') else { return false };
    pid.parse::<u32>().ok().and_then(start_time).is_some_and(|s| s == start)
}

/// Marks replies left `streaming`/`waiting` by a process that is gone as `interrupted`: this
/// is how a `kill -9` mid-stream shows up on the next start. Returns how many.
///
/// # Errors
/// Any SQLite error.
pub fn mark_interrupted(db: &Connection) -> rusqlite::Result<usize> {
    let live: Vec<(i64, Option<String>, String)> = db
        .prepare("SELECT id, writer, body FROM messages WHERE status IN ('streaming', 'waiting')")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut n = 0;
    for (id, writer, body) in live {
        if writer.as_deref().is_some_and(is_alive) {
            continue;
        }
        let mut v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let status = enum_str(&MessageStatus::Interrupted);
        if let Some(obj) = v.as_object_mut() {
            obj.insert("status".into(), status.clone().into());
            if obj.get("error").is_none_or(serde_json::Value::is_null) {
                obj.insert(
                    "error".into(),
                    serde_json::json!({"status": null, "kind": "interrupted", "body": null,
                        "message": "palaver stopped before this reply finished (killed or crashed)"}),
                );
            }
        }
        let error = v.get("error").map(ToString::to_string);
        n += db.execute(
            "UPDATE messages SET status = ?2, writer = NULL, body = ?3, error = ?4 WHERE id = ?1",
            params![id, status, v.to_string(), error],
        )?;
    }
    Ok(n)
}

/// Whether a conversation exists (the writer uses it to reject a duplicate id early).
///
/// # Errors
/// Any SQLite error.
pub fn exists(db: &Connection, id: &str) -> rusqlite::Result<bool> {
    Ok(db.query_row("SELECT 1 FROM conversations WHERE id = ?1", params![id], |_| Ok(())).optional()?.is_some())
}
