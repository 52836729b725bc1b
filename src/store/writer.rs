//! The writer: one thread owns the write connection and drains a command channel, so nothing
//! that draws ever waits on the disk. Saves of a message that is still streaming are
//! coalesced (at most one disk write per message per `coalesce` interval, the latest content
//! wins); a finished, cancelled or failed message is written at once. Everything waiting is
//! written in one transaction, each operation under its own savepoint.
//!
//! Failures never panic and never lose the queue: a busy, locked, read-only or full database
//! keeps the operations queued and retries them, reporting one notice until a write succeeds
//! again; an operation SQLite rejects for good (a missing conversation) is dropped with a
//! notice. [`Writer`] is the synchronous core, driven with explicit instants so benches can
//! run it on a simulated clock.

use super::ops::{self, Caches, Ctx, Op};
use super::{NoticeFn, NoticeKind, StoreError, StoreNotice, describe};
use rusqlite::{Connection, TransactionBehavior};
use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// A command for the writer thread.
pub enum Cmd {
    Op(Op),
    /// A streaming save; the counter is the sender's count of those not yet taken.
    Live(Op, std::sync::Arc<std::sync::atomic::AtomicUsize>),
    /// Write everything now (streaming saves included) and answer.
    Flush(Sender<Result<(), StoreError>>),
    /// Write everything queued, then import a checked export in one transaction and answer.
    Import(Box<super::import::Document>, Sender<Result<Vec<super::import_apply::Imported>, StoreError>>),
}

/// Which message a save is for.
type Key = (String, Option<i64>, usize);

struct Pending {
    op: Op,
    due: Instant,
}

/// Writer settings.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    pub coalesce: Duration,
    pub retry: Duration,
    pub store_frames: bool,
    pub frames_cap: usize,
}

/// The synchronous core of the writer thread.
pub struct Writer {
    conn: Connection,
    cfg: WriterConfig,
    notify: NoticeFn,
    token: String,
    caches: Caches,
    /// Turns other processes added to conversations written here (see `others.rs`).
    others: super::others::Others,
    /// Streaming saves held back until `due`.
    pending: HashMap<Key, Pending>,
    /// When each message last reached the disk, for coalescing.
    last_write: HashMap<Key, Instant>,
    /// Operations to write, in order.
    backlog: Vec<Op>,
    retry_at: Option<Instant>,
    /// The reason writes are failing, reported once.
    failing: Option<String>,
    /// Disk writes (batches committed), for benches.
    pub batches: u64,
}

impl Writer {
    #[must_use]
    pub fn new(conn: Connection, cfg: WriterConfig, notify: NoticeFn) -> Self {
        Self {
            conn,
            cfg,
            notify,
            token: ops::process_token(),
            caches: Caches::default(),
            others: super::others::Others::new(super::ids::now_ms()),
            pending: HashMap::new(),
            last_write: HashMap::new(),
            backlog: Vec::new(),
            retry_at: None,
            failing: None,
            batches: 0,
        }
    }

    /// Takes one operation; writes nothing yet (see [`Writer::tick`]).
    pub fn submit(&mut self, op: Op, now: Instant) {
        match op {
            Op::Save { conv, branch, position, msg } => {
                let key = (conv, branch, position);
                if !msg.is_live() {
                    self.pending.remove(&key);
                    let (conv, branch, position) = key;
                    return self.enqueue(Op::Save { conv, branch, position, msg });
                }
                if let Some(p) = self.pending.get_mut(&key) {
                    if let Op::Save { msg: held, .. } = &mut p.op {
                        *held = msg;
                    }
                    return;
                }
                let due = self.last_write.get(&key).map(|t| *t + self.cfg.coalesce);
                let op = Op::Save { conv: key.0.clone(), branch: key.1, position: key.2, msg };
                match due {
                    Some(due) if due > now => {
                        self.pending.insert(key, Pending { op, due });
                    }
                    _ => self.enqueue(op),
                }
            }
            Op::Delete { conv } => {
                self.pending.retain(|k, _| k.0 != conv);
                self.enqueue(Op::Delete { conv });
            }
            Op::Truncate { conv, branch, from } => {
                self.pending.retain(|k, _| !(k.0 == conv && k.1 == branch && k.2 >= from));
                self.release_pending(&conv);
                self.enqueue(Op::Truncate { conv, branch, from });
            }
            other => {
                // Held saves were made before this branch change: they go first.
                if matches!(other, Op::Fork { .. } | Op::Activate { .. } | Op::Adopt { .. }) {
                    self.release_pending(other.conversation());
                }
                self.enqueue(other);
            }
        }
    }

    fn release_pending(&mut self, conv: &str) {
        let keys: Vec<Key> = self.pending.keys().filter(|k| k.0 == conv).cloned().collect();
        for k in keys {
            if let Some(p) = self.pending.remove(&k) {
                self.enqueue(p.op);
            }
        }
    }

    /// Queues an operation; a save replaces an earlier queued save of the same message when
    /// nothing that could depend on the order sits between them (keeps a failing store's
    /// backlog from growing with every streamed delta).
    fn enqueue(&mut self, op: Op) {
        if let Op::Save { conv, branch, position, .. } = &op {
            for queued in self.backlog.iter_mut().rev() {
                match queued {
                    Op::Save { conv: c, branch: b, position: p, .. } => {
                        if c == conv && b == branch && p == position {
                            *queued = op;
                            return;
                        }
                    }
                    _ => break,
                }
            }
        }
        self.backlog.push(op);
    }

    /// When the writer next has something to do on its own.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        let due = self.pending.values().map(|p| p.due).min();
        match (due, self.retry_at.filter(|_| !self.backlog.is_empty())) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Releases held saves that are due and writes the backlog, unless waiting to retry.
    pub fn tick(&mut self, now: Instant) {
        let due: Vec<Key> = self.pending.iter().filter(|(_, p)| p.due <= now).map(|(k, _)| k.clone()).collect();
        for k in due {
            if let Some(p) = self.pending.remove(&k) {
                self.enqueue(p.op);
            }
        }
        if self.retry_at.is_some_and(|r| r > now) {
            return;
        }
        self.write(now);
    }

    /// Writes everything, held saves included, ignoring the retry delay.
    ///
    /// # Errors
    /// Why the queue could not be written (it stays queued).
    pub fn flush(&mut self, now: Instant) -> Result<(), StoreError> {
        let keys: Vec<Key> = self.pending.keys().cloned().collect();
        for k in keys {
            if let Some(p) = self.pending.remove(&k) {
                self.enqueue(p.op);
            }
        }
        self.write(now);
        match &self.failing {
            Some(reason) if !self.backlog.is_empty() => Err(StoreError::Write(reason.clone())),
            _ => Ok(()),
        }
    }

    /// Writes an import in one transaction of its own: all of it, or nothing and the reason.
    ///
    /// # Errors
    /// The SQLite error that rolled it back.
    pub fn import(&mut self, doc: &super::import::Document) -> Result<Vec<super::import_apply::Imported>, StoreError> {
        // Its own caches: nothing of a rolled-back import may linger in the writer's.
        let mut caches = Caches::default();
        let mut others = super::others::Others::new(0);
        let mut ctx = Ctx {
            writer: &self.token,
            store_frames: self.cfg.store_frames,
            frames_cap: self.cfg.frames_cap,
            caches: &mut caches,
            others: &mut others,
        };
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let done = super::import_apply::apply(&tx, doc, &mut ctx)?;
        tx.commit()?;
        self.batches += 1;
        Ok(done)
    }

    /// Operations not yet on disk.
    #[must_use]
    pub fn queued(&self) -> usize {
        self.backlog.len() + self.pending.len()
    }

    fn write(&mut self, now: Instant) {
        if self.backlog.is_empty() {
            return;
        }
        let mut ops = std::mem::take(&mut self.backlog);
        match self.batch(&mut ops) {
            Ok(rejected) => {
                self.batches += 1;
                self.retry_at = None;
                for op in &ops {
                    if let Op::Save { conv, branch, position, .. } = op {
                        self.last_write.insert((conv.clone(), *branch, *position), now);
                    }
                }
                if self.last_write.len() > 1024 {
                    let keep = self.cfg.coalesce;
                    self.last_write.retain(|_, t| now.saturating_duration_since(*t) < keep);
                }
                if let Some(reason) = self.failing.take() {
                    self.notice(NoticeKind::Recovered, format!("history is being saved again (after: {reason})"));
                }
                for msg in rejected {
                    self.notice(NoticeKind::Dropped, msg);
                }
                for found in std::mem::take(&mut self.others.found) {
                    let (added, conv) = (found.messages.len(), &found.conv);
                    let s = if added == 1 { "" } else { "s" };
                    let message = format!(
                        "another palaver added {added} message{s} to this conversation while it was open here; \
                         yours are saved after them, nothing was overwritten (palaver --resume {conv} shows them all)"
                    );
                    (self.notify)(StoreNotice { kind: NoticeKind::Interleaved, message, added: Some(Box::new(found)) });
                }
            }
            Err(e) => {
                self.caches = Caches::default();
                self.backlog = ops;
                self.retry_at = Some(now + self.cfg.retry);
                let reason = describe(&e);
                if self.failing.as_ref() != Some(&reason) {
                    self.notice(
                        NoticeKind::WriteFailed,
                        format!("history not saved: {reason}; the conversation stays in memory and palaver will retry"),
                    );
                    self.failing = Some(reason);
                }
            }
        }
    }

    /// One transaction. A transient error (busy, locked, full, read-only, I/O) fails the whole
    /// batch so it is retried in order; any other error drops just that operation.
    fn batch(&mut self, ops: &mut [Op]) -> rusqlite::Result<Vec<String>> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut ctx = Ctx {
            writer: &self.token,
            store_frames: self.cfg.store_frames,
            frames_cap: self.cfg.frames_cap,
            caches: &mut self.caches,
            others: &mut self.others,
        };
        let mut rejected = Vec::new();
        for op in ops.iter_mut() {
            tx.execute_batch("SAVEPOINT op")?;
            match ops::apply(&tx, op, &mut ctx) {
                Ok(()) => tx.execute_batch("RELEASE op")?,
                Err(e) if is_transient(&e) => return Err(e),
                Err(e) => {
                    tx.execute_batch("ROLLBACK TO op; RELEASE op")?;
                    ctx.caches.branch.remove(op.conversation());
                    rejected.push(format!("a history write for {} was dropped: {}", op.conversation(), describe(&e)));
                }
            }
        }
        tx.commit()?;
        Ok(rejected)
    }

    fn notice(&self, kind: NoticeKind, message: String) {
        (self.notify)(StoreNotice { kind, message, added: None });
    }
}

/// Errors worth retrying: the database may work again later.
#[must_use]
pub fn is_transient(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode as C;
    matches!(
        e.sqlite_error_code(),
        Some(
            C::DatabaseBusy
                | C::DatabaseLocked
                | C::DiskFull
                | C::ReadOnly
                | C::SystemIoFailure
                | C::CannotOpen
                | C::OutOfMemory
                | C::PermissionDenied
        )
    )
}

/// The thread body: drain commands, batch what arrives together, sleep until the next due
/// save or retry. When every handle is gone, write what is left and stop.
pub fn run(mut w: Writer, rx: &Receiver<Cmd>) {
    loop {
        let first = match w.next_deadline() {
            Some(d) => match rx.recv_timeout(d.saturating_duration_since(Instant::now())) {
                Ok(c) => Some(c),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            },
            None => match rx.recv() {
                Ok(c) => Some(c),
                Err(_) => break,
            },
        };
        let mut next = first;
        while let Some(cmd) = next {
            match cmd {
                Cmd::Op(op) => w.submit(op, Instant::now()),
                Cmd::Live(op, in_flight) => {
                    w.submit(op, Instant::now());
                    in_flight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                }
                Cmd::Flush(reply) => {
                    let _ = reply.send(w.flush(Instant::now()));
                }
                Cmd::Import(doc, reply) => {
                    // What was queued before goes first; a failing queue is already a notice.
                    let _ = w.flush(Instant::now());
                    let _ = reply.send(w.import(&doc));
                }
            }
            next = rx.try_recv().ok();
        }
        w.tick(Instant::now());
    }
    if w.flush(Instant::now()).is_err() {
        let n = w.queued();
        let reason = w.failing.clone().unwrap_or_default();
        w.notice(NoticeKind::Lost, format!("{n} history writes could not be saved: {reason}"));
    }
}
