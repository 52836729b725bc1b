//! The response cache of prompt sets: answers kept by request key ([`crate::api::reply_cache`])
//! in a SQLite file of its own in the cache directory, not in the history database. It is
//! disposable (deleting the file loses nothing but time), it must not grow the database that
//! is backed up and exported, and its writes never wait on the run store's lock. Entries
//! older than the TTL are not served; past the size budget the least recently used go.
//! Writes go to a thread of its own, as the run store's do: a cell never waits on the disk.

use super::StoreError;
use super::ids::now_ms;
use crate::api::reply_cache::{CachedReply, ReplyCache};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

const SCHEMA: &str = r"
CREATE TABLE IF NOT EXISTS replies (
    key        TEXT PRIMARY KEY NOT NULL,   -- SHA-256 of the URL and the redacted request body
    url        TEXT NOT NULL,               -- where it went (user and password left out)
    created_at INTEGER NOT NULL,            -- unix ms: the TTL counts from here
    used_at    INTEGER NOT NULL,            -- unix ms: eviction takes the oldest first
    status     INTEGER NOT NULL,
    headers    TEXT NOT NULL,               -- JSON [[name, value]], secret ones never kept
    body       BLOB NOT NULL,               -- the body as it arrived, secrets redacted
    bytes      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS replies_by_use ON replies(used_at);
";

const BUSY: Duration = Duration::from_secs(10);

enum Cmd {
    Put(String, CachedReply),
    Touch(String),
    Flush(Sender<()>),
}

/// The cache's figures, for `compare cache`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    pub entries: u64,
    pub bytes: u64,
    /// Entries past the TTL (not served; dropped at the next run).
    pub expired: u64,
}

/// One entry as `compare cache` lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CacheEntry {
    pub key: String,
    pub url: String,
    pub created_at: u64,
    pub used_at: u64,
    pub bytes: u64,
}

/// An open cache.
pub struct ReplyStore {
    tx: Mutex<Option<Sender<Cmd>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    reader: Mutex<Connection>,
    ttl: Duration,
    path: PathBuf,
}

impl std::fmt::Debug for ReplyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReplyStore({})", self.path.display())
    }
}

fn open_conn(path: &Path) -> Result<Connection, StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
    }
    let conn = Connection::open(path)?;
    super::schema::configure(&conn, BUSY)?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn now() -> i64 {
    i64::try_from(now_ms()).unwrap_or(i64::MAX)
}

impl ReplyStore {
    /// Opens (creating) the cache at `path`; entries past `ttl` are dropped now, and the cache
    /// is kept within `budget` bytes from here on.
    ///
    /// # Errors
    /// The file cannot be created or opened, or is not a database.
    pub fn open(path: &Path, ttl: Duration, budget: u64) -> Result<Self, StoreError> {
        let conn = open_conn(path)?;
        conn.execute("DELETE FROM replies WHERE created_at <= ?1", params![now().saturating_sub(ms(ttl))])?;
        let reader = open_conn(path)?;
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("palaver-cache".into())
            .spawn(move || write_loop(&conn, &rx, budget))
            .map_err(|source| StoreError::Io { path: path.to_path_buf(), source })?;
        Ok(Self {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            reader: Mutex::new(reader),
            ttl,
            path: path.to_path_buf(),
        })
    }

    fn send(&self, cmd: Cmd) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            let _ = tx.send(cmd);
        }
    }

    /// Blocks until every answer queued is on disk.
    pub fn flush(&self) {
        let (reply, rx) = mpsc::channel();
        self.send(Cmd::Flush(reply));
        let _ = rx.recv();
    }

    /// Writes what is queued and stops the writer.
    pub fn close(&self) {
        drop(self.tx.lock().unwrap_or_else(PoisonError::into_inner).take());
        if let Some(t) = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = t.join();
        }
    }

    fn lookup(&self, key: &str) -> rusqlite::Result<Option<CachedReply>> {
        let conn = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh_since = now().saturating_sub(ms(self.ttl));
        conn.prepare_cached("SELECT url, status, headers, body FROM replies WHERE key = ?1 AND created_at > ?2")?
            .query_row(params![key, fresh_since], |r| {
                let headers: String = r.get(2)?;
                Ok(CachedReply {
                    url: r.get(0)?,
                    status: r.get(1)?,
                    headers: serde_json::from_str(&headers).unwrap_or_default(),
                    body: r.get(3)?,
                })
            })
            .optional()
    }
}

impl Drop for ReplyStore {
    fn drop(&mut self) {
        self.close();
    }
}

impl ReplyCache for ReplyStore {
    fn get(&self, key: &str) -> Option<CachedReply> {
        // A cache that cannot be read is a miss: the request goes out as it would without one.
        let hit = self.lookup(key).ok().flatten()?;
        self.send(Cmd::Touch(key.to_owned()));
        Some(hit)
    }

    fn put(&self, key: String, reply: CachedReply) {
        self.send(Cmd::Put(key, reply));
    }
}

/// Most commands one transaction takes.
const BATCH: usize = 256;

fn write_loop(conn: &Connection, rx: &Receiver<Cmd>, budget: u64) {
    while let Some(batch) = super::next_batch(rx, BATCH) {
        // A write that fails loses only time: the next run asks the network again.
        if let Err(e) = write_batch(conn, &batch, budget) {
            eprintln!("palaver: could not write the response cache: {}", super::describe(&e));
        }
        for c in batch {
            if let Cmd::Flush(reply) = c {
                let _ = reply.send(());
            }
        }
    }
}

fn write_batch(conn: &Connection, cmds: &[Cmd], budget: u64) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    let now = now();
    let mut grew = false;
    for c in cmds {
        match c {
            Cmd::Put(key, r) => {
                let headers = serde_json::to_string(&r.headers).unwrap_or_else(|_| "[]".into());
                let bytes = i64::try_from(r.body.len() + headers.len()).unwrap_or(i64::MAX);
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO replies (key, url, created_at, used_at, status, headers, body, bytes)
                     VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7)",
                )?
                .execute(params![key, r.url, now, r.status, headers, r.body, bytes])?;
                grew = true;
            }
            Cmd::Touch(key) => {
                tx.prepare_cached("UPDATE replies SET used_at = ?2 WHERE key = ?1")?.execute(params![key, now])?;
            }
            Cmd::Flush(_) => {}
        }
    }
    if grew {
        evict(&tx, budget)?;
    }
    tx.commit()
}

/// Drops the least recently used entries until the cache is within `budget` bytes.
fn evict(tx: &rusqlite::Transaction<'_>, budget: u64) -> rusqlite::Result<()> {
    let total: i64 = tx.query_row("SELECT COALESCE(SUM(bytes), 0) FROM replies", [], |r| r.get(0))?;
    let mut over = u64::try_from(total).unwrap_or(0).saturating_sub(budget);
    if over == 0 {
        return Ok(());
    }
    let mut gone = Vec::new();
    {
        let mut st = tx.prepare("SELECT key, bytes FROM replies ORDER BY used_at, created_at")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            if over == 0 {
                break;
            }
            let bytes: i64 = r.get(1)?;
            over = over.saturating_sub(u64::try_from(bytes).unwrap_or(0));
            gone.push(r.get::<_, String>(0)?);
        }
    }
    for key in gone {
        tx.prepare_cached("DELETE FROM replies WHERE key = ?1")?.execute(params![key])?;
    }
    Ok(())
}

/// The figures of the cache at `path` (an absent file is an empty cache).
///
/// # Errors
/// The file is not a database.
pub fn stats(path: &Path, ttl: Duration) -> Result<(CacheStats, Vec<CacheEntry>), StoreError> {
    if !path.exists() {
        return Ok((CacheStats::default(), Vec::new()));
    }
    let conn = open_conn(path)?;
    let fresh_since = now().saturating_sub(ms(ttl));
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    let mut stats = CacheStats::default();
    let mut entries = Vec::new();
    let mut st = conn.prepare("SELECT key, url, created_at, used_at, bytes FROM replies ORDER BY used_at DESC")?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let e = CacheEntry {
            key: r.get(0)?,
            url: r.get(1)?,
            created_at: u(r.get(2)?),
            used_at: u(r.get(3)?),
            bytes: u(r.get(4)?),
        };
        stats.entries += 1;
        stats.bytes += e.bytes;
        stats.expired += u64::from(r.get::<_, i64>(2)? <= fresh_since);
        entries.push(e);
    }
    Ok((stats, entries))
}

/// Empties the cache at `path`; returns how many entries it held.
///
/// # Errors
/// The file cannot be written, or is not a database.
pub fn clear(path: &Path) -> Result<u64, StoreError> {
    if !path.exists() {
        return Ok(0);
    }
    let conn = open_conn(path)?;
    let n = conn.execute("DELETE FROM replies", [])?;
    // The pages go back to the disk: a cleared cache is small again.
    conn.execute_batch("VACUUM")?;
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::compare::DEFAULT_CACHE_TTL as DEFAULT_TTL;

    fn reply(n: usize) -> CachedReply {
        CachedReply {
            url: "http://127.0.0.1/v1/chat/completions".into(),
            status: 200,
            headers: vec![],
            body: vec![b'x'; n],
        }
    }

    #[test]
    fn an_answer_comes_back_as_it_was_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replies.sqlite3");
        let c = ReplyStore::open(&path, DEFAULT_TTL, 1 << 20).unwrap();
        assert_eq!(c.get("k"), None);
        let mut r = reply(10);
        r.headers = vec![("content-type".into(), "text/event-stream".into())];
        c.put("k".into(), r.clone());
        c.flush();
        assert_eq!(c.get("k"), Some(r));
        assert_eq!(stats(&path, DEFAULT_TTL).unwrap().0.entries, 1);
        c.close();
        assert_eq!(clear(&path).unwrap(), 1);
        assert_eq!(stats(&path, DEFAULT_TTL).unwrap().0, CacheStats::default());
    }

    #[test]
    fn past_the_budget_the_least_recently_used_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replies.sqlite3");
        // Room for two entries of 100 bytes (and their "[]" headers), not three.
        let c = ReplyStore::open(&path, DEFAULT_TTL, 250).unwrap();
        c.put("a".into(), reply(100));
        c.flush();
        std::thread::sleep(Duration::from_millis(5));
        c.put("b".into(), reply(100));
        c.flush();
        std::thread::sleep(Duration::from_millis(5));
        // `a` is used again: `b` is now the least recently used.
        assert!(c.get("a").is_some());
        c.flush();
        std::thread::sleep(Duration::from_millis(5));
        c.put("c".into(), reply(100));
        c.flush();
        assert!(c.get("a").is_some());
        assert!(c.get("b").is_none());
        assert!(c.get("c").is_some());
    }

    #[test]
    fn an_answer_past_the_ttl_is_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replies.sqlite3");
        let c = ReplyStore::open(&path, Duration::ZERO, 1 << 20).unwrap();
        c.put("k".into(), reply(1));
        c.flush();
        assert_eq!(c.get("k"), None);
        assert_eq!(stats(&path, Duration::ZERO).unwrap().0.expired, 1);
    }
}
