//! End to end in tmux, issue 14's first hour: the chat screen refused cleanly when stdout is not
//! a terminal, headless output rendered on a terminal (a pseudo-terminal is the only way to
//! test that), the demo saying it is the demo, and the keys a newcomer's fingers already know.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

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

/// The answer's screen lines (the shell's own lines after it are left out).
fn answer_lines(s: &str) -> Vec<String> {
    s.lines().take_while(|l| !l.starts_with("EXITED-")).map(str::to_owned).collect()
}

#[test]
fn a_headless_answer_on_a_terminal_is_rendered_with_a_footer_on_stderr() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::launch("--demo -p hello").size(100, 60).start();
    let s = t.wait_for("the rendered answer", |s| s.contains("EXITED-"));
    assert!(s.contains("EXITED-0"), "{s}");
    let lines = answer_lines(&s);
    let text = lines.join("\n");
    assert!(lines.iter().any(|l| l == "A quick tour"), "the heading, without its ##:\n{text}");
    assert!(text.contains("This answer is scripted,") && !text.contains("**"), "{text}");
    assert!(text.contains("• Bold and italic text"), "{text}");
    assert!(text.contains("│ demo-tools     │ Parallel tool calls         │"), "{text}");
    assert!(text.contains("fn main() {") && !text.contains("```"), "{text}");
    assert!(lines.iter().all(|l| l.chars().count() <= 100), "wrapped to the width:\n{text}");
    let footer = lines.iter().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(footer.starts_with("─ demo · ") && footer.contains("tokens") && footer.ends_with(" s"), "{footer}");
}

#[test]
fn render_never_and_a_pipe_keep_the_raw_text() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::launch("--demo -p hello --render never").size(100, 60).start();
    let s = t.wait_for("the raw answer", |s| s.contains("EXITED-"));
    assert!(s.contains("## A quick tour") && s.contains("| `demo-tools` |") && s.contains("```rust"), "{s}");
    assert!(!s.contains("─ demo ·"), "no footer on raw output: {s}");
    let t = Tmux::launch("--demo -p hello | cat").size(100, 60).start();
    let s = t.wait_for("the piped answer", |s| s.contains("EXITED-"));
    assert!(s.contains("## A quick tour") && s.contains("**scripted**"), "{s}");
}

#[test]
fn ctrl_c_asks_once_and_quitting_says_how_to_come_back() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--demo");
    t.wait_ready();
    t.send("hello");
    t.wait_for("the answer", |s| s.contains("Ask another question") && s.contains("✓ done"));
    // A draft: Ctrl+C clears it, ↑ brings it back.
    t.type_text("half a thought");
    t.keys(&["C-c"]);
    t.wait_for("the draft cleared", |s| s.contains("draft cleared") && !s.contains("half a thought"));
    t.keys(&["Up"]);
    t.wait_for("the draft back", |s| s.contains("half a thought"));
    t.keys(&["C-c"]);
    // Empty composer: the first Ctrl+C asks, the second quits.
    t.keys(&["C-c"]);
    t.wait_for("the question", |s| s.contains("quit?"));
    assert!(!t.screen().contains("EXITED-"));
    t.keys(&["C-c"]);
    let s = t.wait_for("palaver to exit", |s| s.contains("EXITED-"));
    assert!(s.contains("EXITED-0"), "{s}");
    assert!(s.contains("palaver --resume "), "{s}");
}

#[test]
fn two_quick_ctrl_cs_cancel_a_stream_without_quitting() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--demo -m demo-slow");
    t.wait_ready();
    t.send("tell me about streaming");
    t.wait_for("streaming text", |s| s.contains("● streaming") && s.contains("A language model"));
    t.keys(&["C-c", "C-c"]);
    t.wait_for("the cancelled reply", |s| s.contains("cancelled — the partial reply is kept"));
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!t.screen().contains("EXITED-"), "{}", t.screen());
    t.quit();
}

#[test]
fn a_big_paste_is_a_chip_and_a_long_message_folds_with_a_key_to_open_it() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--demo");
    t.wait_ready();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("paste.txt");
    let text: String = (0..2000).map(|i| format!("log line {i:04} with a few words\n")).collect();
    std::fs::write(&file, &text).unwrap();
    t.tmux(&["load-buffer", &file.display().to_string()]);
    t.tmux(&["paste-buffer", "-p", "-t", "main"]);
    let s = t.wait_for("the paste chip", |s| s.contains("[pasted 2,000 lines"));
    assert!(s.contains("1 paste · ") && s.contains("tokens"), "size and tokens before sending: {s}");
    assert!(!s.contains("log line 0001"), "the lines stay out of the draft: {s}");
    t.keys(&["Enter"]);
    let s = t.wait_for("the folded message and the answer", |s| s.contains("more lines") && s.contains("✓ done"));
    assert!(s.contains("log line 0000"), "{s}");
    // Select the prompt (the reply first, then the prompt) and open it.
    t.keys(&["M-Up"]);
    t.keys(&["M-Up"]);
    t.keys(&["Enter"]);
    // Folded, it showed 28 lines at 40 rows; opened, it fills the view past them.
    let s = t.wait_for("the opened message", |s| s.contains("log line 0032"));
    assert!(!s.contains("more lines · select"), "{s}");
}

#[test]
fn copying_says_copied_only_when_something_received_it() {
    if !tmux_available() {
        return;
    }
    let has_display = ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
    let t = Tmux::start("--demo");
    t.wait_ready();
    t.send("hello");
    t.wait_for("the answer", |s| s.contains("Ask another question") && s.contains("✓ done"));
    t.keys(&["M-Up"]);
    t.keys(&["y"]);
    let s = t.wait_for("the copy note", |s| s.contains("copied ") || s.contains("sent "));
    if !has_display {
        assert!(s.contains("sent ") && s.contains("OSC 52"), "no tool here, so not copied: {s}");
        // A tmux that drops OSC 52 gets a hint.
        t.tmux(&["set-option", "-g", "set-clipboard", "off"]);
        t.keys(&["y"]);
        t.wait_for("the tmux hint", |s| s.contains("set-clipboard on"));
    }
}
