//! Nothing a child started outlives it. Each child palaver starts leads a process group of its
//! own, ended whole when its call is over; and palaver is its descendants' subreaper
//! (`PR_SET_CHILD_SUBREAPER`, see [`adopt_orphans`]), so a process that escapes its group
//! (`setsid`, a double fork) is re-parented to palaver instead of init. [`sweep`] then finds
//! those orphans (children of palaver it did not start itself, by `/proc/*/stat`), ends their
//! groups and reaps each by its pid — never `waitpid(-1)`, which would steal the children tokio
//! and `std` wait for.
//!
//! Only what a command could have started is ended: an orphan that started before the command
//! did cannot be its descendant (a daemon an earlier `api_key_cmd` left, a gpg-agent), so the
//! sweep at a command's end takes orphans started since that command, and the one at exit or on
//! a Ctrl+C those started since the oldest command still running. Spared besides: the groups of
//! MCP servers and of helpers that may leave a daemon on purpose (a clipboard owner, the viewer
//! an opener starts), and palaver's own group (an orphan there is killed alone, never the
//! group: that would be palaver).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What palaver started and spares: the pids of its own children and the process groups
/// whose orphans are left alone. One lock, held across a spawn and its registration, so a sweep
/// never sees a child of palaver's that is not yet known.
#[derive(Debug, Default)]
pub(super) struct Known {
    pids: BTreeSet<i32>,
    spared_groups: BTreeSet<i32>,
}

static KNOWN: Mutex<Known> = Mutex::new(Known { pids: BTreeSet::new(), spared_groups: BTreeSet::new() });
/// Process groups of tools running now, each with its leader's start time, for [`kill_all`].
static RUNNING: Mutex<BTreeMap<u32, u64>> = Mutex::new(BTreeMap::new());
/// Process groups of MCP servers, for [`kill_all`] too (kept apart: they live for the session).
static SERVERS: Mutex<BTreeMap<u32, u64>> = Mutex::new(BTreeMap::new());
/// Whether palaver is its descendants' subreaper (only then can there be orphans to sweep).
static ADOPTING: AtomicBool = AtomicBool::new(false);

pub(super) fn known() -> MutexGuard<'static, Known> {
    KNOWN.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Known {
    pub(super) fn started(&mut self, pid: u32, spare_group: bool) {
        // Not adopting: no sweep will read this (and a long session would only grow it).
        let Ok(pid) = i32::try_from(pid) else { return };
        if !ADOPTING.load(Ordering::SeqCst) {
            return;
        }
        self.pids.insert(pid);
        if spare_group {
            self.spared_groups.insert(pid);
        }
    }
}

/// Makes palaver the subreaper of everything it starts, so that escapes re-parent to it.
/// Called once by `main`; a library caller that does not call it sweeps nothing.
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    if rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok() {
        ADOPTING.store(true, Ordering::SeqCst);
    }
}

/// Ends a process group palaver started (never palaver's own, never init's).
pub fn kill_group(pid: u32) {
    let Some(pid) = i32::try_from(pid).ok().filter(|p| *p > 1).and_then(rustix::process::Pid::from_raw) else {
        return;
    };
    if rustix::process::getpgrp() == pid {
        return;
    }
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

/// Ends its process group when dropped (or when [`Group::end`] is called first); while it
/// lives, [`kill_all`] ends the group too.
#[derive(Debug)]
pub struct Group {
    pid: u32,
    set: &'static Mutex<BTreeMap<u32, u64>>,
    /// When its leader started (clock ticks since boot): its descendants started later.
    since: u64,
}

impl Group {
    /// Tracks a tool's process group, led by `pid`.
    #[must_use]
    pub fn tool(pid: u32) -> Self {
        Self::tracked(pid, &RUNNING)
    }

    /// Tracks an MCP server's process group, led by `pid`.
    #[must_use]
    pub fn server(pid: u32) -> Self {
        Self::tracked(pid, &SERVERS)
    }

    fn tracked(pid: u32, set: &'static Mutex<BTreeMap<u32, u64>>) -> Self {
        // A child gone before it was tracked (it cannot be, but a slow machine must not turn
        // that into "sweep everything since boot"): its escapes started no earlier than now.
        let since =
            i32::try_from(pid).ok().and_then(stat).map(|(_, p)| p.started).or_else(now_ticks).unwrap_or(u64::MAX);
        set.lock().unwrap_or_else(PoisonError::into_inner).insert(pid, since);
        Self { pid, set, since }
    }

    #[must_use]
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Ends the group, and (a tool's) whatever escaped it.
    pub fn end(&self) {
        // No longer running: the sweep may end what is left in it.
        self.set.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.pid);
        kill_group(self.pid);
        // A server's escapes are its own business, as its daemons would be.
        if std::ptr::eq(self.set, &RUNNING) {
            sweep(self.since);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.end();
    }
}

/// Ends every tool's and MCP server's process group still running, and every orphan
/// (palaver is about to exit, or a Ctrl+C ends all).
pub fn kill_all() {
    let running: Vec<(u32, u64)> =
        RUNNING.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|(p, s)| (*p, *s)).collect();
    let servers: Vec<u32> = SERVERS.lock().unwrap_or_else(PoisonError::into_inner).keys().copied().collect();
    for pid in running.iter().map(|(p, _)| *p).chain(servers) {
        kill_group(pid);
    }
    // Escapes of the commands running now; earlier ones were ended with their commands.
    sweep(running.iter().map(|(_, s)| *s).min().unwrap_or(u64::MAX));
}

/// Rounds of [`sweep`]: each ends one generation of escapes (their children re-parent next).
const ROUNDS: usize = 8;

/// Ends and reaps every orphan palaver adopted that started at `since` or later (clock ticks
/// since boot, as `/proc/PID/stat` counts), and reaps every exited one; see the module's notes.
/// Returns how many it ended.
pub fn sweep(since: u64) -> usize {
    if !ADOPTING.load(Ordering::SeqCst) {
        return 0;
    }
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let own_group = rustix::process::getpgrp().as_raw_nonzero().get();
    let mut known = known();
    // An orphan still in a running tool's group (a double fork caught before its `setsid`) is
    // that tool's: ending its group here would end the tool. Its group's end takes it.
    let running: BTreeSet<i32> =
        RUNNING.lock().unwrap_or_else(PoisonError::into_inner).keys().filter_map(|p| i32::try_from(*p).ok()).collect();
    let mut ended = 0;
    for _ in 0..ROUNDS {
        let children = children_of(me);
        // A pid palaver started that is no longer its child was reaped: forget it.
        known.pids.retain(|p| children.iter().any(|c| c.pid == *p));
        let mut found = false;
        for c in children.iter().filter(|c| !known.pids.contains(&c.pid)) {
            if c.zombie {
                reap(c.pid);
                continue;
            }
            if c.started < since || known.spared_groups.contains(&c.group) || running.contains(&c.group) {
                continue;
            }
            if c.group != own_group {
                kill_group(u32::try_from(c.group).unwrap_or(0));
            }
            if let Some(pid) = rustix::process::Pid::from_raw(c.pid) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            reap(c.pid);
            ended += 1;
            found = true;
        }
        if !found {
            break;
        }
    }
    ended
}

/// Waits for one killed orphan by its pid, a second at most (a process in the kernel's
/// uninterruptible sleep dies when it wakes; it is reaped by the next sweep then).
fn reap(pid: i32) {
    let Some(p) = rustix::process::Pid::from_raw(pid) else { return };
    for _ in 0..100 {
        match rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG) {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}

/// A process as `/proc/PID/stat` shows it.
struct Proc {
    pid: i32,
    group: i32,
    zombie: bool,
    /// Clock ticks after boot when it started.
    started: u64,
}

/// Every process whose parent is `parent`.
fn children_of(parent: i32) -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter_map(stat)
        .filter(|(ppid, _)| *ppid == parent)
        .map(|(_, p)| p)
        .collect()
}

/// The parent and the process of `/proc/PID/stat`: `pid (comm) state ppid pgrp … starttime …`
/// (starttime is the 22nd field), where `comm` may hold spaces and parentheses, so the fields
/// are read after the last `)`.
/// Now, in the clock ticks since boot that `/proc/PID/stat` counts start times in (USER_HZ,
/// which the kernel fixes at 100 for `/proc` whatever its own tick rate).
fn now_ticks() -> Option<u64> {
    use std::io::Read;
    let mut buf = [0u8; 64];
    let n = std::fs::File::open("/proc/uptime").ok()?.read(&mut buf).ok()?;
    let up: f64 = std::str::from_utf8(buf.get(..n)?).ok()?.split_ascii_whitespace().next()?.parse().ok()?;
    // Whole ticks: a second's hundredths, never negative nor fractional.
    Some((up * 100.0).floor().max(0.0) as u64)
}

fn stat(pid: i32) -> Option<(i32, Proc)> {
    use std::io::Read;
    let mut file = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    // The fields palaver reads sit in the first few hundred bytes: one bounded read.
    let mut buf = [0u8; 1024];
    let n = file.read(&mut buf).ok()?;
    let text = std::str::from_utf8(buf.get(..n)?).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    // Fields 6 to 21, then starttime.
    let started = fields.nth(16)?.parse().ok()?;
    Some((ppid, Proc { pid, group, zombie: state == "Z", started }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_reads_past_a_comm_with_parentheses() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let (ppid, p) = stat(me).unwrap_or_else(|| panic!("no stat for {me}"));
        assert_eq!(ppid, rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get()));
        assert_eq!((p.pid, p.group, p.zombie), (me, rustix::process::getpgrp().as_raw_nonzero().get(), false));
        // A child started after this process: its start time is not earlier.
        let mut child = std::process::Command::new("sleep").arg("1").spawn().unwrap_or_else(|e| panic!("{e}"));
        let child_started = stat(i32::try_from(child.id()).unwrap_or(0)).map(|(_, c)| c.started);
        let _ = child.kill().and_then(|()| child.wait());
        assert!(child_started.is_some_and(|c| c >= p.started) && p.started > 0, "{child_started:?} {}", p.started);
        // Not adopting (a library caller): nothing is swept.
        assert_eq!(sweep(0), 0);
    }
}
