//! The session store: conversations in SQLite (WAL, versioned schema, FTS5 search), written
//! by one background thread so neither the UI nor the network loop ever waits on the disk.
//!
//! [`StoreHandle`] is cheap to clone and share. Writes (`create_conversation`, `save_message`,
//! `rename`, `delete`, `fork`…) queue and return at once; a message still streaming may be
//! saved on every delta, the writer keeps at most one disk write per message per 250 ms and
//! writes finished replies immediately. Failed writes become [`StoreNotice`]s through the
//! callback in [`StoreOptions`] and are retried; the caller's in-memory conversation is never
//! touched. Reads (`list`, `search`, `load`…) run on a separate read-only connection and block
//! only the calling thread: from async code, call them inside `spawn_blocking`.
//!
//! Nothing here ever sees an API key: messages carry none, and requests are not stored.

pub mod blobs;
mod continued;
pub mod entries;
pub mod export;
pub mod export_html;
pub mod export_html_md;
pub mod fit;
pub mod ids;
pub mod import;
mod import_apply;
pub mod lock;
pub mod ops;
pub mod others;
pub mod read;
mod read_only;
pub mod reply_cache;
pub mod runs;
pub mod runs_batches;
mod runs_read;
pub mod schema;
pub mod writer;

pub use import_apply::Imported;

use crate::engine::message::Message;
use ops::{NewRow, Op};
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use writer::{Cmd, Writer, WriterConfig};

/// Receives notices from the writer thread (called on that thread: keep it quick).
pub type NoticeFn = Arc<dyn Fn(StoreNotice) + Send + Sync>;

/// What a notice is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// Writes are failing (locked, read-only, disk full…); they stay queued and are retried.
    WriteFailed,
    /// Writes succeed again after failing.
    Recovered,
    /// One write was rejected for good and dropped.
    Dropped,
    /// The store closed with writes it could not save.
    Lost,
    /// Another palaver added turns to a conversation open here; this one's were saved after them.
    Interleaved,
}

/// A readable message for the user about the store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreNotice {
    pub kind: NoticeKind,
    pub message: String,
    /// With `Interleaved`: what the other palaver added, for a screen to show.
    pub added: Option<Box<others::Added>>,
}

/// Errors of opening and reading.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}", describe(.0))]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot create {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the history database comes from a newer palaver (schema {found}; this one knows up to {known})")]
    TooNew { found: u32, known: u32 },
    #[error("`{prefix}` matches several conversations: {}", matches.join(", "))]
    Ambiguous { prefix: String, matches: Vec<String> },
    #[error("the history writer has stopped")]
    Closed,
    #[error("history not saved: {0}")]
    Write(String),
    #[error("not a palaver conversation export: {0}")]
    Format(String),
    /// A file to import that does not hold together (what is wrong, where).
    #[error("{0}")]
    Invalid(String),
}

/// SQLite errors in words a user can act on.
#[must_use]
pub fn describe(e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode as C;
    match e.sqlite_error_code() {
        Some(C::DiskFull) => "the disk is full".into(),
        Some(C::DatabaseBusy | C::DatabaseLocked) => "the database is locked by another program".into(),
        Some(C::ReadOnly) => "the database is read-only".into(),
        Some(C::CannotOpen | C::PermissionDenied) => "the database file cannot be opened".into(),
        Some(C::NotADatabase) => "the file is not a palaver database".into(),
        Some(C::SystemIoFailure) => "disk I/O error".into(),
        _ => e.to_string(),
    }
}

/// How a store behaves.
#[derive(Clone)]
pub struct StoreOptions {
    /// How long a write waits for another program's lock before counting as failed.
    pub busy_timeout: Duration,
    /// At most one disk write per streaming message per this interval.
    pub coalesce: Duration,
    /// Wait between retries of failed writes.
    pub retry: Duration,
    /// Keep raw wire frames (for the inspector) in the database.
    pub store_frames: bool,
    /// Bytes of frames kept per message.
    pub frames_cap: usize,
    /// Where notices go; `None` prints them on stderr (fine headless, not under a TUI).
    pub on_notice: Option<NoticeFn>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            busy_timeout: Duration::from_secs(5),
            coalesce: Duration::from_millis(250),
            retry: Duration::from_secs(1),
            store_frames: false,
            frames_cap: crate::engine::reducer::RAW_FRAME_BUDGET,
            on_notice: None,
        }
    }
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("busy_timeout", &self.busy_timeout)
            .field("coalesce", &self.coalesce)
            .field("store_frames", &self.store_frames)
            .field("frames_cap", &self.frames_cap)
            .finish_non_exhaustive()
    }
}

/// A conversation as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub api: Option<String>,
    /// Unix ms.
    pub created_at: u64,
    pub updated_at: u64,
    /// Messages on the active branch.
    pub messages: u64,
    pub active_branch: i64,
    pub compare_group: Option<String>,
    pub compare_column: Option<u32>,
}

/// A branch of a conversation: its own messages start at `fork_position`; earlier ones come
/// from `parent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BranchInfo {
    pub branch: i64,
    pub parent: Option<i64>,
    pub fork_position: usize,
    pub created_at: u64,
    /// Messages this branch holds itself.
    pub messages: u64,
}

/// A conversation loaded for display: the messages of one branch, in position order.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredConversation {
    pub summary: ConversationSummary,
    pub branch: i64,
    pub messages: Vec<Message>,
    pub branches: Vec<BranchInfo>,
}

impl StoredConversation {
    /// The engine's conversation (message ids are renumbered by `Conversation::push`).
    #[must_use]
    pub fn into_conversation(self) -> crate::engine::message::Conversation {
        let mut c = crate::engine::message::Conversation::new();
        c.id = Some(self.summary.id);
        c.title = Some(self.summary.title);
        for m in self.messages {
            c.push(m);
        }
        c
    }
}

/// A search result. `ranges` are byte ranges of the matched words within `snippet`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub conversation_id: String,
    pub title: String,
    pub branch: i64,
    pub position: usize,
    pub role: String,
    pub snippet: String,
    pub ranges: Vec<std::ops::Range<usize>>,
    pub updated_at: u64,
    /// The conversation's model.
    pub model: Option<String>,
    /// The compare the conversation is a column of, if any.
    pub compare_group: Option<String>,
}

/// A conversation to create.
#[derive(Debug, Clone, Default)]
pub struct NewConversation {
    pub title: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub api: Option<String>,
    /// `(group, column)` for a compare column; see [`StoreHandle::new_compare_group`].
    pub compare: Option<(String, u32)>,
}

/// The shared handle. Clones share one writer thread and one read connection; the last one
/// dropped writes what is queued and stops the thread.
#[derive(Clone)]
pub struct StoreHandle {
    inner: Arc<Inner>,
}

struct Inner {
    tx: Option<Sender<Cmd>>,
    /// Streaming saves sent and not yet taken by the writer: while one is in flight, the next
    /// is skipped (the caller saves again later), so a fast stream on a slow disk never queues
    /// copy after copy of a growing reply.
    live_in_flight: Arc<std::sync::atomic::AtomicUsize>,
    reader: Mutex<Connection>,
    path: PathBuf,
    store_frames: bool,
    notify: NoticeFn,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl StoreHandle {
    /// Opens (creating and migrating as needed) the database at `path`, marks replies left
    /// streaming by a dead process as interrupted, and starts the writer thread.
    ///
    /// # Errors
    /// The directory or file cannot be created or opened, is not a database, is read-only,
    /// or comes from a newer palaver.
    pub fn open(path: &Path, opts: StoreOptions) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
        }
        let mut conn = Connection::open(path)?;
        schema::configure(&conn, opts.busy_timeout)?;
        schema::migrate(&mut conn)?;
        ops::mark_interrupted(&conn)?;
        let reader = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )?;
        reader.busy_timeout(opts.busy_timeout)?;
        let notify: NoticeFn =
            opts.on_notice.clone().unwrap_or_else(|| Arc::new(|n| eprintln!("palaver: {}", n.message)));
        let cfg = WriterConfig {
            coalesce: opts.coalesce,
            retry: opts.retry,
            store_frames: opts.store_frames,
            frames_cap: opts.frames_cap,
        };
        let w = Writer::new(conn, cfg, notify.clone());
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("palaver-store".into())
            .spawn(move || writer::run(w, &rx))
            .map_err(|source| StoreError::Io { path: path.to_path_buf(), source })?;
        Ok(Self {
            inner: Arc::new(Inner {
                tx: Some(tx),
                live_in_flight: Arc::default(),
                reader: Mutex::new(reader),
                path: path.to_path_buf(),
                store_frames: opts.store_frames,
                notify,
                thread: Some(thread),
            }),
        })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    fn send(&self, op: Op) {
        let sent = self.inner.tx.as_ref().is_some_and(|tx| tx.send(Cmd::Op(op)).is_ok());
        if !sent {
            (self.inner.notify)(StoreNotice {
                kind: NoticeKind::Dropped,
                message: StoreError::Closed.to_string(),
                added: None,
            });
        }
    }

    /// Creates a conversation and returns its id at once (the row is written in the background).
    #[must_use]
    pub fn create_conversation(&self, new: NewConversation) -> String {
        let now = ids::now_ms();
        let id = ids::new_id(now);
        self.send(Op::Create(NewRow {
            id: id.clone(),
            title: new.title,
            model: new.model,
            provider: new.provider,
            api: new.api,
            compare: new.compare,
            created_at: now,
        }));
        id
    }

    /// Saves the message at `position` of the conversation's active branch (insert or
    /// update). Call it as often as the message changes: while it streams, at most one disk
    /// write per 250 ms happens; once it is finished, cancelled or failed, it is written at once.
    pub fn save_message(&self, conv: &str, position: usize, msg: &Message) {
        self.save_message_in(conv, None, position, msg);
    }

    /// [`StoreHandle::save_message`] on a given branch.
    pub fn save_message_in(&self, conv: &str, branch: Option<i64>, position: usize, msg: &Message) {
        self.save_owned(conv, branch, position, std::sync::Arc::new(msg.clone()));
    }

    /// [`StoreHandle::save_message_in`] of a message the caller shares or already copied:
    /// queued as it is, so a long reply's checkpoint is not copied on its way to the writer.
    pub fn save_owned(&self, conv: &str, branch: Option<i64>, position: usize, msg: std::sync::Arc<Message>) {
        self.send(Op::Save { conv: conv.to_owned(), branch, position, msg });
    }

    /// [`StoreHandle::save_message`] for a reply being streamed: the same, but when frames are
    /// not stored it copies the message without its raw frames (lent out and put back), which
    /// would otherwise be most of the cost of a save. Returns false, saving nothing, while the
    /// writer has not yet taken the previous streaming save: call it again later (a finished
    /// reply goes through [`StoreHandle::save_message`], which always queues).
    pub fn save_streaming(&self, conv: &str, position: usize, msg: &mut Message) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        let in_flight = &self.inner.live_in_flight;
        if in_flight.load(SeqCst) > 0 {
            return false;
        }
        let mut copy = if self.inner.store_frames || msg.frames.is_empty() {
            msg.clone()
        } else {
            let frames = std::mem::take(&mut msg.frames);
            let mut copy = msg.clone();
            msg.frames = frames;
            copy.frames_bytes = 0;
            copy.frames_dropped += msg.frames.len() as u64;
            copy
        };
        copy.frames.shrink_to_fit();
        let op = Op::Save { conv: conv.to_owned(), branch: None, position, msg: std::sync::Arc::new(copy) };
        in_flight.fetch_add(1, SeqCst);
        let sent = self.inner.tx.as_ref().is_some_and(|tx| tx.send(Cmd::Live(op, in_flight.clone())).is_ok());
        if !sent {
            in_flight.fetch_sub(1, SeqCst);
        }
        true
    }

    /// Deletes the active branch's messages from `from` on (before re-running a turn in place).
    pub fn truncate(&self, conv: &str, from: usize) {
        self.send(Op::Truncate { conv: conv.to_owned(), branch: None, from });
    }

    pub fn rename(&self, conv: &str, title: &str) {
        self.send(Op::Rename { conv: conv.to_owned(), title: title.to_owned() });
    }

    /// Deletes a conversation with its messages, tool calls, frames and branches.
    pub fn delete(&self, conv: &str) {
        self.send(Op::Delete { conv: conv.to_owned() });
    }

    /// Starts a branch off `parent` at `fork_position` (editing the message there) and makes
    /// it active; returns its id. Earlier positions keep coming from `parent`.
    #[must_use]
    pub fn fork(&self, conv: &str, parent: i64, fork_position: usize) -> i64 {
        // Branch ids are creation times in ms, bumped so one process never repeats one.
        static LAST: AtomicI64 = AtomicI64::new(0);
        let now = ids::now_ms();
        let candidate = i64::try_from(now).unwrap_or(i64::MAX - 1);
        let next = |last: i64| last.max(candidate - 1) + 1;
        let branch = next(LAST.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| Some(next(l))).unwrap_or(0));
        self.send(Op::Fork { conv: conv.to_owned(), branch, parent, fork_position, at: now });
        branch
    }

    /// Makes another branch the one `load` and `save_message` use.
    pub fn set_active_branch(&self, conv: &str, branch: i64) {
        self.send(Op::Activate { conv: conv.to_owned(), branch });
    }

    /// Says the caller renumbered its messages of `branch` from `from` on by `by`, past what
    /// another palaver added (a [`StoreNotice`] with `added`): its later saves land as numbered.
    pub fn adopt_moved(&self, conv: &str, branch: Option<i64>, from: usize, by: usize) {
        self.send(Op::Adopt { conv: conv.to_owned(), branch, from, by });
    }

    /// Blocks until everything queued, streaming saves included, is on disk.
    ///
    /// # Errors
    /// Why the writes failed (they stay queued and are retried), or a stopped writer.
    pub fn flush(&self) -> Result<(), StoreError> {
        let (reply, rx) = mpsc::channel();
        let tx = self.inner.tx.as_ref().ok_or(StoreError::Closed)?;
        tx.send(Cmd::Flush(reply)).map_err(|_| StoreError::Closed)?;
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let conn = self.inner.reader.lock().unwrap_or_else(PoisonError::into_inner);
        f(&conn)
    }

    /// Conversations, most recently updated first.
    ///
    /// # Errors
    /// A database error.
    pub fn list(&self, limit: usize, offset: usize) -> Result<Vec<ConversationSummary>, StoreError> {
        self.read(|c| Ok(read::list(c, limit, offset)?))
    }

    /// The most recently updated conversation that is not a compare's column (`--continue`).
    ///
    /// # Errors
    /// A database error.
    pub fn latest(&self) -> Result<Option<ConversationSummary>, StoreError> {
        self.read(|c| Ok(read::latest_chat(c)?))
    }

    /// One conversation's summary by exact id.
    ///
    /// # Errors
    /// A database error.
    pub fn get(&self, id: &str) -> Result<Option<ConversationSummary>, StoreError> {
        self.read(|c| Ok(read::get(c, id)?))
    }

    /// An exact id, or a unique prefix of one.
    ///
    /// # Errors
    /// An ambiguous prefix, or a database error.
    pub fn resolve_id(&self, prefix: &str) -> Result<Option<String>, StoreError> {
        self.read(|c| read::resolve(c, prefix))
    }

    /// Full-text search over content and reasoning, newest first; punctuation and FTS
    /// operators in `query` are taken literally.
    ///
    /// # Errors
    /// A database error.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, StoreError> {
        self.read(|c| Ok(read::search(c, query, limit)?))
    }

    /// A conversation's active branch, every message field as saved.
    ///
    /// # Errors
    /// A database error.
    pub fn load(&self, id: &str) -> Result<Option<StoredConversation>, StoreError> {
        self.read(|c| Ok(read::load(c, id, None)?))
    }

    /// The last `keep` messages of a long one-branch conversation, and how many come before
    /// them; `None` when it is to be loaded whole (see `read::load_tail`).
    ///
    /// # Errors
    /// A database error.
    pub fn load_tail(
        &self,
        id: &str,
        keep: usize,
        over: usize,
    ) -> Result<Option<(StoredConversation, usize)>, StoreError> {
        self.read(|c| Ok(read::load_tail(c, id, keep, over)?))
    }

    /// Positions `[0, upto)` of `branch`: what `load_tail` left out.
    ///
    /// # Errors
    /// A database error, or the conversation changed meanwhile.
    pub fn load_head(&self, id: &str, branch: i64, upto: usize) -> Result<Vec<Message>, StoreError> {
        self.read(|c| Ok(read::load_head(c, id, branch, upto)?))
    }

    /// A given branch of a conversation.
    ///
    /// # Errors
    /// A database error.
    pub fn load_branch(&self, id: &str, branch: i64) -> Result<Option<StoredConversation>, StoreError> {
        self.read(|c| Ok(read::load(c, id, Some(branch))?))
    }

    /// The columns of a compare group, in column order.
    ///
    /// # Errors
    /// A database error.
    pub fn compare_group(&self, group: &str) -> Result<Vec<ConversationSummary>, StoreError> {
        self.read(|c| Ok(read::compare_group(c, group)?))
    }

    /// Runs `f` on the read connection (exports read every branch in one go).
    ///
    /// # Errors
    /// Whatever `f` returns.
    pub fn with_reader<T>(&self, f: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        self.read(f)
    }
}

/// The next batch a writer thread takes in one transaction: waits for one command, then takes
/// what is already queued, up to `max` (so a flush waits little). `None` once every sender is gone.
pub(crate) fn next_batch<T>(rx: &std::sync::mpsc::Receiver<T>, max: usize) -> Option<Vec<T>> {
    let mut batch = vec![rx.recv().ok()?];
    while batch.len() < max {
        match rx.try_recv() {
            Ok(c) => batch.push(c),
            Err(_) => break,
        }
    }
    Some(batch)
}
