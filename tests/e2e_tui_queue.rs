//! End to end in tmux, issue 29 item 3: a message typed while `demo-slow` streams is queued
//! (shown under the transcript), goes out when the reply ends, and is stored in that order;
//! the send-now key stops the running reply and sends at once. Skips when tmux is missing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::path::Path;
use std::process::Command;

fn palaver(home: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "palaver {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_message_typed_during_a_slow_reply_goes_out_after_it_in_order() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--demo -m demo-slow");
    t.wait_ready();
    t.send("first question");
    t.wait_for("the slow reply streaming", |s| s.contains("● streaming") && s.contains("Why answers stream"));
    t.send("queued question");
    let s = t.wait_for("the queued row", |s| s.contains("queued (1)") && s.contains("1. queued question"));
    assert!(!s.contains("still streaming"), "Enter is no longer refused: {s}");
    // It waits for the whole first reply, then goes: the demo names the prompt it answers.
    // The whole slow reply takes about 25 s: longer than one `wait_for`.
    let deadline = std::time::Instant::now() + common::tmux::patience() * 4;
    let mut s = t.screen();
    while !s.contains("you said: “queued question”") || s.contains("queued (1)") {
        assert!(std::time::Instant::now() < deadline, "the queued message never went out:\n{s}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        s = t.screen();
    }
    assert!(s.contains("● streaming"), "the second reply streams: {s}");
    t.keys(&["Escape"]);
    t.wait_for("the second reply cancelled", |s| s.contains("cancelled"));
    t.quit();
    let id = palaver(t.home(), &["history", "list"]).split_whitespace().next().unwrap().to_owned();
    let stored = palaver(t.home(), &["history", "show", &id]);
    let at = |what: &str| stored.find(what).unwrap_or_else(|| panic!("{what:?} is not stored:\n{stored}"));
    // The whole first reply (its last words included) comes before the queued prompt.
    assert!(at("first question") < at("Why answers stream"), "{stored}");
    assert!(at("first question") < at("something left to cancel."), "the first reply whole: {stored}");
    assert!(at("something left to cancel.") < at("queued question"), "{stored}");
    assert_eq!(stored.matches("── you ──").count(), 2, "each prompt once:\n{stored}");
}

#[test]
fn send_now_stops_the_reply_and_sends_the_typed_message() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--demo -m demo-slow");
    t.wait_ready();
    t.send("long one");
    t.wait_for("the slow reply streaming", |s| s.contains("● streaming") && s.contains("Why answers stream"));
    t.type_text("never mind, this instead");
    t.wait_for("the title offering send-now", |s| s.contains("Ctrl+S sends now"));
    t.keys(&["C-s"]);
    let s = t.wait_for("the new prompt answered", |s| s.contains("you said: “never mind, this instead”"));
    assert!(s.contains("cancelled"), "the first reply was stopped: {s}");
    assert!(!s.contains("queued ("), "nothing left queued: {s}");
}

/// Issue 29 item 1, in the same file to share its build: `/vim`, then vim motions edit a draft
/// and Enter sends what they left.
#[test]
fn vim_keys_edit_a_draft_that_enter_then_sends() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::launch("--demo").keys_one_at_a_time().start();
    t.wait_ready();
    t.send("/vim");
    t.wait_for("vim on", |s| s.contains("INSERT"));
    t.type_text("say hello there world");
    t.keys(&["Escape"]);
    t.wait_for("normal mode", |s| s.contains("NORMAL"));
    // b to "world", daw deletes it; 0 w to "hello", ciw replaces it, Esc, then . on "there".
    t.type_text("bdaw0wciwgoodbye");
    t.keys(&["Escape"]);
    t.type_text("w.");
    t.wait_for("the edited draft", |s| s.contains("say goodbye goodbye"));
    t.type_text("u");
    t.wait_for("undo", |s| s.contains("say goodbye there"));
    t.keys(&["Enter"]);
    t.wait_for("the answer to the edited draft", |s| s.contains("you said: “say goodbye there”"));
}
