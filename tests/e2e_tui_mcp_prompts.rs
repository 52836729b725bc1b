//! End to end in tmux: an MCP server's prompts as slash commands. The scripted stdio server
//! (tests/mcp_server/server.py) offers `greet` (argument `who` required, `mood` optional):
//! Tab completes `/mcp:t:gr`, a missing `who` is named, and `/mcp:t:greet Ada mood=warm` sends
//! the text the server returned as the user's prompt (on screen and in `history show`).
//! Skips when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::process::Command;

#[test]
fn an_mcp_prompt_is_fetched_and_sent_as_the_users_prompt() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let script = format!("{}/tests/mcp_server/server.py", env!("CARGO_MANIFEST_DIR"));
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.t]\ncommand = [\"python3\", \"{script}\"]\n"),
    )
    .unwrap();
    let t = Tmux::launch("--demo -m demo").home(home.path()).start();
    t.wait_for("the MCP server", |s| s.contains("tools ready"));
    t.type_text("/mcp:t:gr");
    t.keys(&["Tab"]);
    t.wait_for("the completed prompt name", |s| s.contains("/mcp:t:greet "));
    t.type_text("mood=warm");
    t.keys(&["Enter"]);
    t.wait_for("the missing argument named", |s| s.contains("needs its argument `who`"));
    t.keys(&["C-u"]);
    t.send("/mcp:t:greet Ada mood=warm");
    t.wait_for("the reply to the server's prompt", |s| {
        s.contains("Please greet Ada in a warm way.") && s.contains("✓ done")
    });
    t.quit();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_palaver")).args(args).env("PALAVER_HOME", home.path()).output();
        String::from_utf8_lossy(&out.unwrap().stdout).into_owned()
    };
    let list = run(&["history", "list"]);
    let id = list.split_whitespace().next().unwrap().to_owned();
    let show = run(&["history", "show", &id]);
    assert!(show.contains("── you ──\nPlease greet Ada in a warm way."), "{show}");
}

#[test]
fn an_mcp_resource_becomes_a_chip_and_reaches_the_model() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let script = format!("{}/tests/mcp_server/server.py", env!("CARGO_MANIFEST_DIR"));
    std::fs::write(
        home.path().join("config.toml"),
        format!("[mcp.servers.t]\ncommand = [\"python3\", \"{script}\"]\n"),
    )
    .unwrap();
    let t = Tmux::launch("--demo -m demo-vision").home(home.path()).start();
    t.wait_for("the MCP server", |s| s.contains("tools ready"));
    t.send("/resource");
    t.wait_for("the resource list", |s| s.contains("t  test://notes.txt  notes") && s.contains("test://dot.png"));
    t.send("/resource test://dot.png");
    t.wait_for("the image chip", |s| s.contains("▣ dot 1×1"));
    t.send("/resource test://notes.txt");
    t.wait_for("the text chip", |s| s.contains("attached notes"));
    t.send("what are these?");
    let s = t.wait_for("the reply", |s| s.contains("✓ done"));
    assert!(s.contains("1×1 px"), "the image did not reach the model:\n{s}");
    // The text part: `<file name="notes">\n` + the 29 bytes of the note + `\n</file>`.
    assert!(s.contains("3. text: 57 characters"), "the text did not reach the model:\n{s}");
    t.quit();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_palaver")).args(args).env("PALAVER_HOME", home.path()).output();
        String::from_utf8_lossy(&out.unwrap().stdout).into_owned()
    };
    let id = run(&["history", "list"]).split_whitespace().next().unwrap().to_owned();
    let show = run(&["history", "show", &id]);
    assert!(show.contains("notes") && show.contains("dot"), "{show}");
}
