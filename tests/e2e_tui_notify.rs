//! End to end in tmux, issue 29 item 4: with the terminal's focus gone (a focus-out report,
//! `ESC [ O`, as a terminal sends it) a finished reply notifies — through `notify_command`, and
//! as OSC 9 in the bytes palaver writes to the pane (`pipe-pane`) — and with focus back it
//! does not. Skips when tmux is missing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::time::Duration;

/// Sends raw bytes to palaver as the terminal would (focus reports are not keys tmux names).
fn raw(t: &Tmux, hex: &[&str]) {
    let mut args = vec!["send-keys", "-t", "main", "-H"];
    args.extend_from_slice(hex);
    assert!(t.tmux(&args).status.success());
    std::thread::sleep(Duration::from_millis(150));
}

fn focus_out(t: &Tmux) {
    raw(t, &["1b", "5b", "4f"]);
}

fn focus_in(t: &Tmux) {
    raw(t, &["1b", "5b", "49"]);
}

fn read(path: &std::path::Path) -> String {
    std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}

#[test]
fn an_unfocused_terminal_is_told_when_the_reply_ends_and_a_focused_one_is_not() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("notified.txt");
    let config = format!(
        "notify = \"command\"\nnotify_command = [\"sh\", \"-c\", \"printf '%s\\\\n' \\\"$1\\\" >> '{}'\", \"sh\"]\n",
        log.display()
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let t = Tmux::launch("--demo").home(home.path()).start();
    t.wait_ready();
    t.chat("while you look");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(read(&log), "", "focused (never told otherwise): no notification");
    focus_out(&t);
    t.send("while you are away");
    t.wait_for("the second answer", |s| s.contains("you said: “while you are away”") && s.contains("✓ done"));
    let deadline = std::time::Instant::now() + common::tmux::patience();
    while read(&log).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(read(&log), "demo finished its reply\n");
    focus_in(&t);
    t.send("back again");
    t.wait_for("the third answer", |s| s.contains("you said: “back again”") && s.contains("✓ done"));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(read(&log), "demo finished its reply\n", "focus is back: nothing more");
    t.quit();
}

#[test]
fn osc_9_reaches_the_pane_only_while_unfocused() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "notify = \"osc\"\n").unwrap();
    let out = home.path().join("pane.bin");
    let t = Tmux::launch("--demo").home(home.path()).start();
    t.wait_ready();
    let pipe = format!("cat >> '{}'", out.display());
    assert!(t.tmux(&["pipe-pane", "-o", "-t", "main", &pipe]).status.success());
    t.chat("focused turn");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!read(&out).contains("\x1b]9;"), "no OSC 9 while focused");
    focus_out(&t);
    t.send("unfocused turn");
    t.wait_for("the answer", |s| s.contains("you said: “unfocused turn”") && s.contains("✓ done"));
    let deadline = std::time::Instant::now() + common::tmux::patience();
    while !read(&out).contains("\x1b]9;") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let bytes = read(&out);
    assert!(bytes.contains("\x1b]9;palaver: demo finished its reply\x07"), "OSC 9 written: {:?}", bytes.len());
    assert!(!bytes.contains("\x1b]777;"), "xterm-256color is not known to take OSC 777");
    t.quit();
    // Focus reporting was turned on for the session and off again on the way out.
    let bytes = read(&out);
    assert!(bytes.contains("\x1b[?1004l"), "focus reporting restored on exit");
}
