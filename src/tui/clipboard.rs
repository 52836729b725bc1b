//! The system clipboard through its command-line tools (`wl-copy`, `xclip`, `xsel`, `pbcopy`),
//! tried beside OSC 52: a tool that exits successfully has the text, which OSC 52 can never
//! confirm. Also tells whether tmux would drop OSC 52 (`set-clipboard off`).

use crate::sys::spawn::{Role, Spawn};
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long a clipboard tool may take to read the text.
const WAIT: Duration = Duration::from_secs(2);

/// The tools worth trying here, in order: (name, arguments).
fn candidates() -> Vec<(&'static str, &'static [&'static str])> {
    let mut out: Vec<(&'static str, &'static [&'static str])> = Vec::new();
    if cfg!(target_os = "macos") {
        out.push(("pbcopy", &[]));
    }
    let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    if set("WAYLAND_DISPLAY") {
        out.push(("wl-copy", &[]));
    }
    if set("DISPLAY") {
        out.push(("xclip", &["-selection", "clipboard"]));
        out.push(("xsel", &["--clipboard", "--input"]));
    }
    out
}

/// Puts `text` on the system clipboard with the first tool that takes it; its name, or why none
/// did. Blocking: call it off the UI task.
///
/// # Errors
/// When no tool is installed for this session, or each one failed.
pub fn system_copy(text: &str) -> Result<&'static str, String> {
    let tools = candidates();
    if tools.is_empty() {
        return Err("no system clipboard here (no Wayland or X display, not macOS)".to_owned());
    }
    let mut failures = Vec::new();
    for (tool, args) in tools {
        match run(tool, args, text) {
            Ok(()) => return Ok(tool),
            Err(e) => failures.push(format!("{tool}: {e}")),
        }
    }
    Err(failures.join("; "))
}

fn run(tool: &str, args: &[&str], text: &str) -> Result<(), String> {
    // Lasting: xclip and wl-copy stay behind on purpose, owning the selection.
    let mut spawn = Spawn::helper(tool, Role::Lasting);
    spawn.args(args).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = spawn.std().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound { "not installed".to_owned() } else { e.to_string() }
    })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    }
    let deadline = Instant::now() + WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("exited with {status}")),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                return Err("did not finish".to_owned());
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Inside tmux with `set-clipboard off`, OSC 52 never reaches the outer terminal.
#[must_use]
pub fn tmux_drops_osc52() -> bool {
    if std::env::var_os("TMUX").is_none_or(|v| v.is_empty()) {
        return false;
    }
    let mut spawn = Spawn::helper("tmux", Role::Contained);
    spawn
        .args(["show-options", "-gv", "set-clipboard"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let Ok(mut child) = spawn.std() else { return false };
    // The answer is a word: one short read, not the whole pipe.
    let mut out = [0u8; 64];
    let n = child.stdout.take().and_then(|mut s| std::io::Read::read(&mut s, &mut out).ok()).unwrap_or(0);
    let _ = child.wait();
    String::from_utf8_lossy(&out[..n]).trim() == "off"
}
