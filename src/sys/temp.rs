//! Temporary files palaver makes (a batch's input file), removed on every exit path: when
//! dropped, by [`remove_all`] on the way out of an exit that skips the drops (a second Ctrl+C,
//! SIGTERM or SIGHUP exits at once), and, after a `kill -9` that nothing can catch, by [`sweep`]
//! at the next start: a file whose process is gone is removed.
//!
//! Named `palaver-KIND-PID-NAME` in the temporary folder: the process id keeps two palavers
//! apart and tells a live one's files from a dead one's.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The files alive now, for [`remove_all`].
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A path in the temporary folder, removed when dropped (whether or not it was written).
#[derive(Debug)]
pub struct TempFile(PathBuf);

impl TempFile {
    /// A path for a file of `kind` (`batch`) named after `name` (palaver's own ids; other
    /// characters become `_`).
    #[must_use]
    pub fn new(kind: &str, name: &str) -> Self {
        let safe: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        let path = std::env::temp_dir().join(format!("palaver-{kind}-{}-{safe}", std::process::id()));
        if let Ok(mut live) = LIVE.lock() {
            live.push(path.clone());
        }
        Self(path)
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|p| *p != self.0);
        }
    }
}

/// Removes every temporary file still alive: called on the way out of an exit that skips drops.
pub fn remove_all() {
    // try_lock: a signal's exit must not wait on a thread that holds the list.
    let Ok(live) = LIVE.try_lock() else { return };
    for p in live.iter() {
        let _ = std::fs::remove_file(p);
    }
}

/// Removes the files of `kind` that palavers no longer running left behind (killed with
/// `kill -9`); returns how many. A file whose process id was taken by another process since is
/// left, to be removed by a later sweep.
pub fn sweep(kind: &str) -> usize {
    let prefix = format!("palaver-{kind}-");
    let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else { return 0 };
    let mut removed = 0;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else { continue };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else { continue };
        let gone = rustix::process::Pid::from_raw(pid)
            .is_some_and(|p| rustix::process::test_kill_process(p) == Err(rustix::io::Errno::SRCH));
        // Only plain files of ours: a link or a folder under our name is not touched.
        let plain = entry.file_type().is_ok_and(|t| t.is_file());
        if gone && plain && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temp_file_goes_when_dropped_or_on_remove_all_and_a_dead_processs_files_are_swept() {
        let kind = format!("test{}", std::process::id());
        let f = TempFile::new(&kind, "a/b c");
        assert!(f.path().to_string_lossy().ends_with("-a_b_c"));
        std::fs::write(f.path(), "x").unwrap();
        let p = f.path().to_path_buf();
        drop(f);
        assert!(!p.exists());
        let g = TempFile::new(&kind, "g");
        std::fs::write(g.path(), "x").unwrap();
        remove_all();
        assert!(!g.path().exists());
        // A file of a process that is gone (pid 0x7ffffff0 is never running), and one of ours.
        let dead = std::env::temp_dir().join(format!("palaver-{kind}-2147483632-old"));
        std::fs::write(&dead, "x").unwrap();
        let mine = TempFile::new(&kind, "mine");
        std::fs::write(mine.path(), "x").unwrap();
        assert_eq!(sweep(&kind), 1);
        assert!(!dead.exists() && mine.path().exists());
    }
}
