//! End to end: `palaver compare -m demo -m demo-reasoning` in tmux (its own socket, its own
//! `PALAVER_HOME`, no API key, so the embedded demo provider answers). Sends a prompt and a
//! follow-up to both columns, opens the diff, keeps one column and carries on with it as a
//! chat, then checks the history holds the compare columns and the kept chat. A second run
//! compares `demo-tools` with `demo`: the tool loop runs in its column. Skips (and says so)
//! when tmux is not installed.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::process::Command;

/// The text of screen rows whose column-`x0..x1` slice is one compare column.
fn column(screen: &str, x0: usize, x1: usize) -> String {
    screen.lines().map(|l| l.chars().skip(x0).take(x1 - x0).collect::<String>()).collect::<Vec<_>>().join("\n")
}

#[test]
fn compare_two_demo_models_follow_up_diff_and_keep_one() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::launch("compare -m demo -m demo-reasoning").keys_one_at_a_time().start();
    let s = t.wait_for("the compare screen", |s| s.contains("message to 2 models"));
    assert!(s.contains("1 demo") && s.contains("2 demo-reasoning"), "{s}");
    assert!(s.contains("Metrics"), "the metrics strip: {s}");

    // One prompt, both columns answer, each with its numbers.
    t.type_text("What is Rust?");
    t.keys(&["Enter"]);
    let s = t.wait_for("both answers", |s| s.contains("✓ 2 done"));
    let (left, right) = (column(&s, 0, 60), column(&s, 60, 120));
    assert!(left.contains("✓ done in") && left.contains("ttft"), "{left}");
    assert!(right.contains("reasoning"), "the reasoning column shows its reasoning tokens: {right}");
    assert!(s.contains("★"), "the best of each metric is marked: {s}");

    // A follow-up goes to both, each with its own history (the demo counts the turns it saw).
    t.type_text("Tell me more");
    t.keys(&["Enter"]);
    t.wait_for("both replies to the follow-up", |s| s.contains("✓ 2 done") && column(s, 60, 120).contains("Turn 2"));
    // The first column's long answer pushed its turn marker up: scroll that column to it.
    t.keys(&["Tab", "PageUp"]);
    t.wait_for("the first column's second turn", |s| column(s, 0, 60).contains("Turn 2 · you said"));

    // The diff of the two answers, then back.
    t.keys(&["d"]);
    let s = t.wait_for("the diff view", |s| s.contains("diff of the last answers"));
    assert!(s.contains("− 1 demo") && s.contains("+ 2 demo-reasoning") && s.contains("% in common"), "{s}");
    t.keys(&["Escape"]);
    t.wait_for("the columns again", |s| !s.contains("diff of the last answers") && s.contains("2 demo-reasoning"));

    // Full width and back, synchronised scrolling on.
    t.keys(&["f"]);
    t.wait_for("the focused column full width", |s| s.contains("full width") && !s.contains("2 demo-reasoning ─"));
    t.keys(&["f", "s"]);
    t.wait_for("sync on", |s| s.contains("⇅ sync"));

    // Keep the second column: it carries on as a normal chat with its model and history.
    t.keys(&["Tab", "k"]);
    let s = t.wait_for("the kept column as the chat", |s| s.contains("kept column 2 (demo-reasoning)"));
    assert!(s.contains("palaver ─ demo · demo-reasoning"), "{s}");
    t.type_text("and a third");
    t.keys(&["Enter"]);
    t.wait_for("the third turn, in the kept conversation", |s| s.contains("Turn 3") && s.contains("✓ done"));

    t.keys(&["C-q"]);
    t.wait_for("the shell after palaver", |s| s.contains("EXITED-0"));

    // The history holds both compare columns and the kept chat.
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "list", "--json"])
        .env("PALAVER_HOME", t.home())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<serde_json::Value> = list.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    // The compare is one entry with its columns inside; the kept chat is an entry of its own.
    let compare = rows.iter().find(|r| r.get("columns").is_some()).unwrap_or_else(|| panic!("no compare: {list}"));
    let models: Vec<&str> = compare["columns"].as_array().unwrap().iter().filter_map(|c| c["model"].as_str()).collect();
    assert_eq!(rows.len(), 2, "the compare and the kept chat: {list}");
    assert_eq!(models, ["demo", "demo-reasoning"], "{list}");
    assert!(rows.iter().any(|r| r["messages"].as_u64() == Some(6)), "the kept chat has three turns: {list}");
}

#[test]
fn compare_command_inside_a_chat_and_a_failing_column() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::launch("").keys_one_at_a_time().start();
    t.wait_for("the chat", |s| s.contains("Type a message and press Enter"));
    t.type_text("/compare demo demo-error");
    t.keys(&["Enter"]);
    t.wait_for("the compare screen", |s| s.contains("message to 2 models"));
    t.type_text("hello");
    t.keys(&["Enter"]);
    // demo-error fails in its own column; demo answers regardless.
    let s = t.wait_for("one done, one failed", |s| s.contains("✓ 1 done") && s.contains("✗ 1 failed"));
    assert!(column(&s, 0, 60).contains("Ask another question"), "{s}");
    assert!(column(&s, 60, 120).contains("✗"), "{s}");
    t.type_text("/compare off");
    t.keys(&["Enter"]);
    t.wait_for("the chat again", |s| s.contains("Type a message and press Enter") && s.contains("left compare"));
}

#[test]
fn compare_a_tool_model_runs_its_tool_loop_in_its_column() {
    if !tmux_available() {
        return;
    }
    // A scratch directory for the read-only tools demo-tools calls (list_directory `.`,
    // read_file `Cargo.toml`).
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("Cargo.toml"), "[package]\nname = \"scratch\"\n").unwrap();
    std::fs::write(cwd.path().join("notes.txt"), "hello\n").unwrap();
    let t = Tmux::launch("compare -m demo-tools -m demo").size(120, 60).cwd(cwd.path()).keys_one_at_a_time().start();
    t.wait_for("the compare screen", |s| s.contains("message to 2 models"));
    t.type_text("What is in this directory?");
    t.keys(&["Enter"]);
    // The tool column is done only after its second request: calls, results, then the answer.
    let s = t.wait_for("both answers", |s| s.contains("✓ 2 done"));
    let (left, right) = (column(&s, 0, 60), column(&s, 60, 120));
    for tool in ["⚙ list_directory", "⚙ read_file", "⚙ current_time"] {
        assert!(left.contains(tool), "{tool} card: {left}");
    }
    assert_eq!(left.matches("✓ done ·").count(), 3, "three tool cards, each done: {left}");
    assert!(left.contains("I called 3 tools and got the results back"), "the answer built from them: {left}");
    assert!(left.contains("name = \"scratch\""), "read_file read the scratch Cargo.toml: {left}");
    assert!(right.contains("Ask another question") && !right.contains("⚙"), "demo just answers: {right}");

    t.keys(&["C-q"]);
    t.wait_for("the shell after palaver", |s| s.contains("EXITED-0"));
    // Each column is its own conversation in the history; the tool column's holds the prompt,
    // the reply with 3 calls, 3 tool results and the answer.
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(["history", "list", "--json"])
        .env("PALAVER_HOME", t.home())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<serde_json::Value> = list.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    // The compare's columns are inside its one entry.
    let columns: Vec<&serde_json::Value> = rows.iter().filter_map(|r| r["columns"].as_array()).flatten().collect();
    let tools = columns.iter().find(|r| r["model"] == "demo-tools").unwrap_or_else(|| panic!("{list}"));
    assert_eq!(tools["messages"].as_u64(), Some(6), "{list}");
    assert!(columns.iter().any(|r| r["model"] == "demo" && r["messages"].as_u64() == Some(2)), "{list}");
}
