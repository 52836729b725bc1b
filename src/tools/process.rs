//! Child processes of tools (`run_command`, user tools, shell calls), started through
//! `sys::spawn`: each runs in its own process group, and the whole group, with whatever escaped
//! it (`setsid`, a double fork: see `sys::spawn::reap`), is ended when the call is over, times
//! out, is cancelled (its future dropped) or palaver exits on a second Ctrl+C — so nothing a
//! command started outlives it. Output is read with a cap, and a command that passes it is
//! stopped rather than read to the end.
//!
//! A group of its own also means the terminal's Ctrl+C no longer reaches the command directly:
//! palaver's own interrupt handling ends it instead (through the drop of the future, or
//! [`kill_all`] on the way out).

pub use crate::sys::spawn::Group;
use crate::sys::spawn::Spawn;
use std::process::{ExitStatus, Stdio};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

pub use crate::sys::spawn::kill_all;

/// What a command produced.
#[derive(Debug)]
pub struct Captured {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The output passed the cap: the command was stopped there.
    pub truncated: bool,
}

/// Runs `cmd` (in a process group of its own, as every [`Spawn`]) with `stdin` written to it
/// (or no stdin), reading stdout and stderr up to `cap` bytes each. When the command exits,
/// whatever it left running is ended too, in its group or escaped from it (it would hold the
/// pipes open, or outlive palaver). Dropping the future ends the group.
///
/// # Errors
/// When the command cannot be started.
pub async fn run(mut cmd: Spawn, stdin: Option<Vec<u8>>, cap: usize) -> std::io::Result<Captured> {
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.tokio()?;
    let group = Group::tool(child.id().unwrap_or(0));
    let pid = group.pid();
    let input = child.stdin.take();
    let write = async move {
        if let (Some(mut pipe), Some(bytes)) = (input, stdin) {
            // A command that does not read its stdin is fine: ignore a broken pipe.
            let _ = pipe.write_all(&bytes).await;
        }
    };
    let out = read_capped(child.stdout.take(), cap, pid);
    let err = read_capped(child.stderr.take(), cap, pid);
    let wait = async {
        let status = child.wait().await;
        group.end();
        status
    };
    let (status, (stdout, cut_out), (stderr, cut_err), ()) = tokio::join!(wait, out, err, write);
    Ok(Captured { status: status?, stdout, stderr, truncated: cut_out || cut_err })
}

/// Output bytes as text, marked when the command was stopped at the cap.
#[must_use]
pub fn text(bytes: &[u8], truncated: bool, cap: usize) -> String {
    let mut s = String::from_utf8_lossy(bytes).into_owned();
    if truncated {
        s.push_str(&cut_note(cap));
    }
    s
}

/// The line that ends an output cut at `cap` bytes: it names the limit and how to raise it.
#[must_use]
pub fn cut_note(cap: usize) -> String {
    format!(
        "\n[palaver cut this output at {cap} bytes: the limit tool_output_bytes; raise it in the provider's \
         profile: limits = {{ tool_output_bytes = … }}]"
    )
}

/// Reads a pipe up to `cap` bytes; past that, ends the group (the rest is not wanted, and a
/// command writing forever would otherwise run until its timeout).
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, cap: usize, group: u32) -> (Vec<u8>, bool) {
    let Some(mut pipe) = pipe else { return (Vec::new(), false) };
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return (buf, false),
            Ok(n) => {
                let room = cap.saturating_sub(buf.len());
                buf.extend_from_slice(&chunk[..n.min(room)]);
                if n > room {
                    crate::sys::spawn::kill_group(group);
                    return (buf, true);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests read what they wrote
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn sh(script: &str) -> Spawn {
        let mut c = Spawn::helper("sh", crate::sys::spawn::Role::Contained);
        c.arg("-c").arg(script);
        c
    }

    fn alive(pid: &str) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default().contains(") Z")
    }

    #[tokio::test]
    async fn leftovers_and_cancelled_commands_leave_no_orphan() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let pidfile = dir.path().join("pid");
        // A background child that would hold the pipe open and outlive the shell.
        let script = format!("sleep 1000 & echo $! > {}; echo done", pidfile.display());
        let started = Instant::now();
        let out = run(sh(&script), None, 1024).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
        let pid = std::fs::read_to_string(&pidfile).unwrap_or_default().trim().to_owned();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(&pid), "the background sleep {pid} survived");

        // A cancelled (timed out) command: its grandchild ends with it.
        let script = format!("sh -c 'sleep 1000 & echo $! > {}; wait'", pidfile.display());
        let cancelled = tokio::time::timeout(Duration::from_millis(300), run(sh(&script), None, 1024)).await;
        assert!(cancelled.is_err());
        std::thread::sleep(Duration::from_millis(100));
        let pid = std::fs::read_to_string(&pidfile).unwrap_or_default().trim().to_owned();
        assert!(!pid.is_empty() && !alive(&pid), "the grandchild {pid} survived the timeout");
    }

    #[tokio::test]
    async fn endless_output_stops_at_the_cap() {
        let started = Instant::now();
        let out = run(sh("yes"), None, 100_000).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(out.truncated && out.stdout.len() == 100_000);
        assert!(started.elapsed() < Duration::from_secs(5));
        let echo = run(sh("cat"), Some(b"in".to_vec()), 10).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(echo.stdout, b"in");
    }
}
