//! End to end in tmux: `--schema` against the demo, the answer drawn as JSON under a ✓, and
//! Enter on the selected answer folding its nested levels and back, read off the screen.
//! Skips without tmux.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};

#[test]
fn a_schema_answer_is_json_that_enter_folds() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--schema 'name, age int, tags [str]'");
    t.wait_ready();
    t.chat("a person");
    let s = t.wait_for("the verdict", |s| s.contains("✓ the answer follows the schema"));
    assert!(s.contains("json · select, Enter to fold"), "{s}");
    assert!(s.contains("\"tags\": ["), "unfolded: {s}");
    t.keys(&["M-Up"]);
    t.wait_for("the reply selected", |s| s.contains("message selected"));
    t.keys(&["Enter"]);
    let s = t.wait_for("the folded JSON", |s| s.contains("\"tags\": […] "));
    assert!(s.contains("json · folded"), "{s}");
    assert!(s.contains("✓ the answer follows the schema"), "the verdict stays: {s}");
    t.keys(&["Enter"]);
    t.wait_for("unfolded again", |s| s.contains("\"tags\": [") && !s.contains("[…]"));
    t.keys(&["Escape"]);
    t.quit();
}
