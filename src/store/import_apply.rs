//! Writing a checked import (`import.rs`) on the writer's connection, in one transaction: the
//! conversations, their branches, every message with its tool calls and attachment bytes, and
//! the conversation rows as exported (times, model, active branch). Any error rolls all of it
//! back. An id the store already has is never overwritten: the import gets a fresh one.

use super::export::Export;
use super::ids::{new_id, now_ms, parse_rfc3339};
use super::import::Document;
use super::ops::{self, Ctx, NewRow, Op, exists, int};
use super::{StoreError, StoreHandle};
use rusqlite::{Connection, params};

/// What one imported conversation became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    /// Its id in this store.
    pub id: String,
    /// The id in the file, when this store already had it (so a fresh one was made).
    pub renamed_from: Option<String>,
    /// The compare group and column it is filed under here.
    pub compare: Option<(String, u32)>,
    /// The file's compare group, when it could not be kept (that column is taken here).
    pub group_dropped: Option<String>,
    pub title: String,
    /// Messages on its active branch.
    pub messages: usize,
}

/// A fresh conversation id no row has.
fn fresh_id(db: &Connection) -> rusqlite::Result<String> {
    loop {
        let id = new_id(now_ms());
        if !exists(db, &id)? {
            return Ok(id);
        }
    }
}

fn slot_taken(db: &Connection, group: &str, column: u32) -> rusqlite::Result<bool> {
    db.prepare_cached("SELECT EXISTS (SELECT 1 FROM conversations WHERE compare_group = ?1 AND compare_column = ?2)")?
        .query_row(params![group, column], |r| r.get(0))
}

/// Writes `doc` inside the caller's transaction.
///
/// # Errors
/// Any SQLite error (the caller rolls back).
pub(crate) fn apply(db: &Connection, doc: &Document, ctx: &mut Ctx<'_>) -> rusqlite::Result<Vec<Imported>> {
    match doc {
        Document::Conversation(e) => {
            let (compare, group_dropped) = match e.compare_group.clone().zip(e.compare_column) {
                Some((g, c)) if slot_taken(db, &g, c)? => (None, Some(g)),
                other => (other, None),
            };
            let mut done = conversation(db, e, compare, ctx)?;
            done.group_dropped = group_dropped;
            Ok(vec![done])
        }
        Document::Compare(c) => {
            let mut group = c.id.clone();
            while super::entries::group_exists(db, &group)? {
                group = StoreHandle::new_compare_group();
            }
            let mut out = Vec::with_capacity(c.columns.len());
            for (i, col) in c.columns.iter().enumerate() {
                let column = col.compare_column.unwrap_or(u32::try_from(i).unwrap_or(u32::MAX));
                out.push(conversation(db, col, Some((group.clone(), column)), ctx)?);
            }
            Ok(out)
        }
    }
}

fn run(db: &Connection, mut op: Op, ctx: &mut Ctx<'_>) -> rusqlite::Result<()> {
    ops::apply(db, &mut op, ctx)
}

/// One conversation with every branch and message.
fn conversation(
    db: &Connection,
    e: &Export,
    compare: Option<(String, u32)>,
    ctx: &mut Ctx<'_>,
) -> rusqlite::Result<Imported> {
    let taken = exists(db, &e.id)?;
    let id = if taken { fresh_id(db)? } else { e.id.clone() };
    let created_at = parse_rfc3339(&e.created_at).unwrap_or_else(now_ms);
    run(
        db,
        Op::Create(NewRow {
            id: id.clone(),
            title: e.title.clone(),
            model: e.model.clone(),
            provider: e.provider.clone(),
            api: e.api.clone(),
            compare: compare.clone(),
            created_at,
        }),
        ctx,
    )?;
    let save = |branch: i64, position: usize, m| Op::Save {
        conv: id.clone(),
        branch: Some(branch),
        position,
        msg: std::sync::Arc::new(e.restored(m)),
    };
    if e.branches.is_empty() {
        for (position, m) in e.messages.iter().enumerate() {
            run(db, save(0, position, m), ctx)?;
        }
    }
    for b in &e.branches {
        let at = parse_rfc3339(&b.created_at).unwrap_or(created_at);
        match b.parent {
            Some(parent) => {
                let fork = Op::Fork { conv: id.clone(), branch: b.branch, parent, fork_position: b.fork_position, at };
                run(db, fork, ctx)?;
            }
            None => {
                db.prepare_cached("UPDATE branches SET created_at = ?2 WHERE conversation_id = ?1 AND branch = 0")?
                    .execute(params![id, int(at)])?;
            }
        }
        for row in &b.messages {
            run(db, save(b.branch, row.position, &row.message), ctx)?;
        }
    }
    // The row as exported: the saves above moved its time and model along with each message.
    let updated_at = parse_rfc3339(&e.updated_at).unwrap_or(created_at);
    db.prepare_cached(
        "UPDATE conversations SET updated_at = ?2, model = ?3, provider = ?4, api = ?5, active_branch = ?6 WHERE id = ?1",
    )?
    .execute(params![id, int(updated_at), e.model, e.provider, e.api, e.active_branch])?;
    Ok(Imported {
        renamed_from: taken.then(|| e.id.clone()),
        id,
        compare,
        group_dropped: None,
        title: e.title.clone(),
        messages: e.messages.len(),
    })
}

impl StoreHandle {
    /// Writes a checked export (see [`super::import::parse`]) in one transaction, after
    /// everything queued before it, and waits for it. Ids the store already has are never
    /// overwritten: those conversations get fresh ids (see [`Imported::renamed_from`]).
    ///
    /// # Errors
    /// A database error (nothing was written), or a stopped writer.
    pub fn import(&self, doc: Document) -> Result<Vec<Imported>, StoreError> {
        let (reply, rx) = std::sync::mpsc::channel();
        let tx = self.inner.tx.as_ref().ok_or(StoreError::Closed)?;
        tx.send(super::writer::Cmd::Import(Box::new(doc), reply)).map_err(|_| StoreError::Closed)?;
        rx.recv().map_err(|_| StoreError::Closed)?
    }
}
