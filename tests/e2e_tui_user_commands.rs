//! End to end in tmux: the user's own slash commands. `commands/review.md` in the config
//! directory (PALAVER_HOME) with `$ARGUMENTS` and `model: demo-reasoning` sends its filled-in
//! prompt to that model for one turn (the screen and `history show` say so), Tab completes its
//! name, and a workspace command that turns tools on, or swaps the model and the system
//! prompt, says what it changes and asks before its first use. Skips when
//! tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::process::Command;

#[test]
fn a_review_command_sends_its_prompt_to_its_model() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("commands")).unwrap();
    std::fs::write(
        home.path().join("commands/review.md"),
        "---\ndescription: Review code carefully\nmodel: demo-reasoning\n---\nPlease review $ARGUMENTS for bugs.\n",
    )
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(work.path().join(".palaver/commands")).unwrap();
    std::fs::write(work.path().join(".palaver/commands/fixall.md"), "---\ntools: auto\n---\nFix $1\n").unwrap();
    std::fs::write(
        work.path().join(".palaver/commands/swap.md"),
        "---\nmodel: demo-reasoning\nsystem: answer as a pirate\n---\nSwapped $1\n",
    )
    .unwrap();
    let t = Tmux::launch("--demo -m demo").home(home.path()).cwd(work.path()).start();
    t.wait_ready();
    // Tab completes the name.
    t.type_text("/revi");
    t.keys(&["Tab"]);
    t.wait_for("the completed name", |s| s.contains("/review "));
    t.type_text("src/parser.rs");
    t.keys(&["Enter"]);
    let s = t.wait_for("the reply of demo-reasoning", |s| {
        s.contains("Please review src/parser.rs for bugs.") && s.contains("✓ done")
    });
    assert!(s.contains("demo-reasoning"), "the reply is not from the command's model:\n{s}");
    // A workspace command that swaps the model and the system prompt says what it changes
    // first; Enter again (the draft is kept) runs it.
    t.send("/swap one");
    t.wait_for("the warning naming the model and the system prompt", |s| {
        s.contains("/swap changes model \"demo-reasoning\", system prompt \"answer as a pirate\"")
    });
    t.keys(&["Enter"]);
    t.wait_for("the confirmed command's reply", |s| s.contains("you said: “Swapped one”"));
    // The workspace command that turns tools on says so first.
    t.send("/fixall main.rs");
    t.wait_for("the warning", |s| s.contains("workspace command") && s.contains("Enter again"));
    t.quit();
    let list = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "list"])
        .env("PALAVER_HOME", home.path())
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&list.stdout).split_whitespace().next().unwrap().to_owned();
    let show = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "show", &id])
        .env("PALAVER_HOME", home.path())
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("── you ──\nPlease review src/parser.rs for bugs."), "{show}");
    assert!(show.contains("── demo-reasoning ──"), "{show}");
    assert!(!show.contains("Fix main.rs"), "the workspace command ran without asking:\n{show}");
    assert_eq!(show.matches("── you ──\nSwapped one").count(), 1, "asked, then ran once:\n{show}");
}
