//! Appending to a conversation from several processes at once: a headless run that continues a
//! conversation (`--continue`, `--resume`) holds an advisory lock on it from before it reads the
//! history until its last message is written, so two runs never compute the same next
//! position. A run that finds it taken waits (saying so) and then reads the history afresh —
//! its turn lands after the other's — or, past the wait, is told the conversation is busy.
//!
//! The lock is `flock` on `<data dir>/locks/<id>.lock`: released by the kernel whatever way the
//! holder ends, so a `kill -9` never leaves a conversation locked.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a run waits for another to finish with the conversation.
pub const BUSY_WAIT: Duration = Duration::from_secs(120);

/// A held lock on one conversation; dropping it releases the lock.
#[derive(Debug)]
pub struct ConversationLock {
    _file: File,
}

/// Why a lock was not had.
#[derive(Debug, PartialEq, Eq)]
pub enum LockError {
    /// Another process held it for the whole wait.
    Busy,
    /// The caller gave up (Ctrl+C).
    Cancelled,
    /// The lock file could not be made (a read-only data directory): the caller goes on unlocked.
    Unavailable(String),
}

fn lock_path(database: &Path, id: &str) -> PathBuf {
    let name: String = id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    database.parent().unwrap_or(Path::new(".")).join("locks").join(format!("{name}.lock"))
}

/// Takes the lock on conversation `id` of the store at `database` without waiting; `Ok(None)`
/// when another process holds it.
///
/// # Errors
/// The lock file cannot be created or locked.
pub fn try_lock(database: &Path, id: &str) -> std::io::Result<Option<ConversationLock>> {
    use rustix::fs::{FlockOperation, flock};
    let path = lock_path(database, id);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Some(ConversationLock { _file: file })),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Whether some process holds the lock on `id` right now: `Some(false)` when its lock file is
/// free (whoever held it has ended, however it ended), `None` when there is no lock file or it
/// cannot be tried. Takes nothing: the file is opened read-only (a read-only store can be asked)
/// and a lock that was had is let go at once.
#[must_use]
pub fn held(database: &Path, id: &str) -> Option<bool> {
    use rustix::fs::{FlockOperation, flock};
    let file = File::open(lock_path(database, id)).ok()?;
    match flock(&file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            let _ = flock(&file, FlockOperation::Unlock);
            Some(false)
        }
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Some(true),
        Err(_) => None,
    }
}

/// Takes the lock, waiting up to `wait` while another process holds it. `waiting` is called
/// once when the wait starts; `cancelled` is polled while waiting.
///
/// # Errors
/// Busy past the wait, cancelled, or no lock file could be made.
pub async fn lock(
    database: &Path,
    id: &str,
    wait: Duration,
    waiting: impl FnOnce(),
    cancelled: impl Fn() -> bool,
) -> Result<ConversationLock, LockError> {
    let started = Instant::now();
    let mut waiting = Some(waiting);
    loop {
        match try_lock(database, id) {
            Ok(Some(l)) => return Ok(l),
            Ok(None) => {}
            Err(e) => return Err(LockError::Unavailable(e.to_string())),
        }
        if let Some(say) = waiting.take() {
            say();
        }
        if cancelled() {
            return Err(LockError::Cancelled);
        }
        if started.elapsed() >= wait {
            return Err(LockError::Busy);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_holder_at_a_time() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join("palaver.sqlite3");
        let held = try_lock(&db, "c1").ok().flatten();
        assert!(held.is_some());
        assert!(try_lock(&db, "c1").ok().flatten().is_none(), "a second lock on the same conversation");
        assert!(try_lock(&db, "c2").ok().flatten().is_some(), "another conversation is free");
        let busy = lock(&db, "c1", Duration::from_millis(60), || {}, || false).await;
        assert_eq!(busy.err(), Some(LockError::Busy));
        drop(held);
        assert!(lock(&db, "c1", Duration::from_millis(60), || {}, || false).await.is_ok());
    }
}
