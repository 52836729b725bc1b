//! End to end in tmux, issue 24's small truths: the mouse can be left to the terminal, `/theme`
//! is remembered, and a reply that could not connect says so.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};

#[test]
fn the_mouse_can_be_left_to_the_terminal() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--demo");
    t.wait_ready();
    assert_eq!(t.display("#{mouse_any_flag}"), "1", "captured by default");
    t.send("/mouse off");
    t.wait_for("the mouse note", |s| s.contains("mouse off: select text"));
    assert_eq!(t.display("#{mouse_any_flag}"), "0", "/mouse off gives it back");
    t.send("/mouse");
    t.wait_for("the mouse note", |s| s.contains("mouse on: the wheel scrolls"));
    assert_eq!(t.display("#{mouse_any_flag}"), "1");
    t.quit();

    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "mouse = false\n").unwrap();
    let t = Tmux::launch("--demo").home(home.path()).start();
    t.wait_ready();
    assert_eq!(t.display("#{mouse_any_flag}"), "0", "mouse = false in config.toml");
    t.quit();
}

#[test]
fn a_theme_chosen_with_slash_theme_is_there_next_time() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let t = Tmux::launch("--demo").home(home.path()).start();
    t.wait_ready();
    t.send("/theme");
    t.wait_for("the theme in use", |s| s.contains("theme: dark (built in"));
    t.send("/theme light");
    t.wait_for("the theme switch", |s| s.contains("theme: light"));
    t.quit();
    let t = Tmux::launch("--demo").home(home.path()).start();
    t.wait_ready();
    t.send("/theme");
    t.wait_for("the remembered theme", |s| s.contains("theme: light (built in"));
    t.quit();
}

#[test]
fn a_reply_that_could_not_connect_says_so() {
    if !tmux_available() {
        return;
    }
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let t = Tmux::start(&format!("--base-url http://127.0.0.1:{port}/v1 -m m"));
    t.wait_ready();
    t.send("hello");
    let s = t.wait_for("the failed reply", |s| s.contains("could not connect"));
    assert!(!s.contains("interrupted"), "{s}");
    t.quit();
}
