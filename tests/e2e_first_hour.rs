//! End to end in tmux, issue 14's first hour: the chat screen refused cleanly when stdout is not
//! a terminal, headless output rendered on a terminal (a pseudo-terminal is the only way to
//! test that), the demo saying it is the demo, and the keys a newcomer's fingers already know.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};

#[test]
fn the_chat_screen_with_stdout_redirected_says_to_use_p_and_leaves_the_terminal_alone() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    // After palaver, the shell reports the terminal's modes and the exit status.
    let args = format!(
        "> '{}'; s=$?; stty -a | grep -o -- '-*icanon'; stty -a | grep -o -- ' -*echo '; (exit $s)",
        out.display()
    );
    let t = Tmux::start(&args);
    let s = t.wait_for("palaver to exit", |s| s.contains("EXITED-"));
    assert!(s.contains("EXITED-2"), "{s}");
    assert!(s.contains("stdout is not one") && s.contains("use -p"), "{s}");
    assert!(s.lines().any(|l| l.trim() == "icanon") && s.lines().any(|l| l.trim() == "echo"), "terminal modes: {s}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "", "nothing may be written to the file");
}

#[test]
fn the_welcome_screen_says_why_it_is_on_the_demo_and_how_to_leave_it() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("");
    t.wait_ready();
    let s = t.wait_for("the demo note", |s| s.contains("built-in demo provider"));
    assert!(s.contains("OPENAI_API_KEY is not set"), "{s}");
    assert!(s.contains("palaver config init"), "{s}");
    t.quit();
    // Asked for with --demo: no note.
    let t = Tmux::start("--demo");
    t.wait_ready();
    assert!(!t.screen().contains("built-in demo provider"), "{}", t.screen());
}
