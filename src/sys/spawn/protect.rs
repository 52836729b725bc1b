//! Paths a sandboxed command may not write even inside its workspace, because what is written
//! there runs later outside any sandbox: `.git/hooks/*` and `.git/config` (a hook or a
//! `core.hooksPath`/filter runs at the next git command), the repository's `.palaver/` commands
//! and palaver's own config and data.
//!
//! Landlock rules only add rights, so a read-only hole in a writable workspace cannot be made
//! with Landlock alone. The sandbox helper, before it applies Landlock, enters a mount namespace
//! of its own (as root; otherwise inside a user namespace mapping the user to itself), makes
//! every mount private (nothing propagates back to the host), pins the parent of each protected
//! path (a mount point cannot be renamed or removed, so `.git` cannot be swapped for another)
//! and binds each protected path onto itself read-only. The namespace ends with the command.

use std::path::{Path, PathBuf};

/// Whether this system lets the helper make protected paths read-only, probed once: in a
/// throwaway thread (a thread may enter a mount namespace of its own without touching the
/// rest of the process), else, since a threaded process cannot enter a user namespace, by
/// asking palaver's own binary as the helper ([`PROBE_ARG`]).
#[must_use]
pub fn available() -> bool {
    static PROBED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROBED.get_or_init(|| {
        std::thread::spawn(|| private_namespace().is_ok()).join().unwrap_or(false) || helper_can("/proc/self/exe")
    })
}

/// The helper's argument (after `__sandbox-exec`) that only answers whether it can have a
/// private mount namespace: exit status 0 when it can.
pub const PROBE_ARG: &str = "--probe-protect";

/// Whether palaver's binary at `exe`, run as the helper, can have a private mount namespace.
fn helper_can(exe: &str) -> bool {
    use std::process::Stdio;
    let mut probe = super::Spawn::helper(exe, super::Role::Contained);
    probe
        .arg(super::sandbox::HELPER_ARG)
        .arg(PROBE_ARG)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    probe.std().and_then(|mut c| c.wait()).is_ok_and(|s| s.success())
}

/// The helper's answer to [`PROBE_ARG`].
#[must_use]
pub fn probe_main() -> u8 {
    u8::from(private_namespace().is_err())
}

/// A mount namespace of the caller's own with nothing shared back.
#[cfg(target_os = "linux")]
#[allow(deprecated)] // `unshare` is safe for a single-threaded helper or a throwaway thread.
fn private_namespace() -> std::io::Result<()> {
    use rustix::mount::{MountPropagationFlags, mount_change};
    use rustix::thread::{UnshareFlags, unshare};
    if unshare(UnshareFlags::NEWNS).is_err() {
        let (uid, gid) = (rustix::process::getuid().as_raw(), rustix::process::getgid().as_raw());
        unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNS)?;
        // Map the user to itself: files keep their owner, and the command sees its own uid.
        std::fs::write("/proc/self/setgroups", "deny")?;
        std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    }
    mount_change("/", MountPropagationFlags::REC | MountPropagationFlags::PRIVATE)?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn private_namespace() -> std::io::Result<()> {
    Err(std::io::Error::other("mount namespaces are Linux's"))
}

/// In the helper, before Landlock: makes each existing path of `paths` read-only for this
/// process and what it executes. A `.git` without `hooks` gets an empty one first, so none can
/// be planted.
///
/// # Errors
/// When no private mount namespace can be had, or a bind fails.
#[cfg(target_os = "linux")]
pub fn apply(paths: &[PathBuf]) -> std::io::Result<()> {
    use rustix::mount::{MountFlags, mount_bind, mount_remount};
    if paths.is_empty() {
        return Ok(());
    }
    for p in paths {
        if p.ends_with(".git/hooks") && p.parent().is_some_and(Path::is_dir) && !p.exists() {
            let _ = std::fs::create_dir(p);
        }
    }
    private_namespace()?;
    let mut existing: Vec<&PathBuf> = paths.iter().filter(|p| p.exists()).collect();
    let mut pinned: Vec<&Path> = Vec::new();
    for parent in existing.iter().filter_map(|p| p.parent()) {
        if !pinned.contains(&parent) && !existing.iter().any(|p| parent.starts_with(p)) {
            pinned.push(parent);
        }
    }
    // Shallow first: a bind over a folder hides the binds already below it.
    pinned.sort_by_key(|p| p.components().count());
    existing.sort_by_key(|p| p.components().count());
    for parent in pinned {
        mount_bind(parent, parent)?;
    }
    for p in existing {
        mount_bind(p.as_path(), p.as_path())?;
        // A remount must keep the flags the mount already has (a user namespace may not drop them).
        let kept = rustix::fs::statvfs(p.as_path())
            .map(|s| s.f_flag)
            .unwrap_or_else(|_| rustix::fs::StatVfsMountFlags::empty());
        let mut flags = MountFlags::BIND | MountFlags::RDONLY;
        for (have, keep) in [
            (rustix::fs::StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
            (rustix::fs::StatVfsMountFlags::NODEV, MountFlags::NODEV),
            (rustix::fs::StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        ] {
            if kept.contains(have) {
                flags |= keep;
            }
        }
        mount_remount(p.as_path(), flags, "")?;
    }
    // The working directory still points below the binds, where nothing is read-only: walk
    // to it again, through them.
    std::env::set_current_dir(std::env::current_dir()?)
}

#[cfg(not(target_os = "linux"))]
pub fn apply(_paths: &[PathBuf]) -> std::io::Result<()> {
    Err(std::io::Error::other("mount namespaces are Linux's"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_and_config_are_read_only_in_a_protected_thread() {
        if !available() {
            eprintln!("no mount namespace here");
            return;
        }
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let git = ws.path().join(".git");
        std::fs::create_dir(&git).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(git.join("config"), "[core]\n").unwrap_or_else(|e| panic!("{e}"));
        let (hooks, config) = (git.join("hooks"), git.join("config"));
        let paths = vec![hooks.clone(), config.clone()];
        let (wrote_hook, wrote_config, renamed, wrote_beside) = std::thread::spawn(move || {
            apply(&paths).unwrap_or_else(|e| panic!("{e}"));
            (
                std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\n").is_ok(),
                std::fs::write(&config, "[core]\nhooksPath = /tmp\n").is_ok(),
                std::fs::rename(hooks.parent().unwrap_or(&hooks), "/tmp/elsewhere-git").is_ok(),
                std::fs::write(hooks.parent().unwrap_or(&hooks).join("HEAD"), "x").is_ok(),
            )
        })
        .join()
        .unwrap_or_else(|_| panic!("the protected thread panicked"));
        assert!(!wrote_hook && !wrote_config && !renamed, "a protected path was written");
        assert!(wrote_beside, "the rest of .git stays writable");
        // The thread's namespace is gone: this process never saw the binds.
        assert!(git.join("hooks").is_dir() && std::fs::write(git.join("hooks/x"), "y").is_ok());
    }
}
