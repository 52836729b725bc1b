//! End to end, issue 14's scrolling report: four demo turns at 120×40, then every scroll key
//! must reach the first turn and stay there, Ctrl+Home/Ctrl+End show the first/last line, and a
//! message selected with Alt+↑ is scrolled into view and marked.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};

/// The transcript column of the screen (the panels are to its right).
fn transcript(s: &str) -> String {
    s.lines().map(|l| l.chars().take(84).collect::<String>()).collect::<Vec<_>>().join("\n")
}

fn four_turns() -> Tmux {
    let t = Tmux::start("");
    t.wait_ready();
    for (i, word) in ["one", "two", "three", "four"].iter().enumerate() {
        t.send(word);
        let turn = format!("Turn {} · you said: “{word}”", i + 1);
        t.wait_for(&turn, |s| s.contains(&turn) && s.contains("✓ done"));
    }
    t
}

#[test]
fn page_up_reaches_the_first_turn_and_stays_there() {
    if !tmux_available() {
        return;
    }
    let t = four_turns();
    t.keys(&["C-End"]);
    let mut seen = Vec::new();
    for _ in 0..12 {
        t.keys(&["PPage"]);
        std::thread::sleep(std::time::Duration::from_millis(150));
        seen.push(transcript(&t.screen()));
    }
    let first = seen.iter().position(|s| s.contains("Turn 1 · you said")).expect("turn 1 never appeared");
    // Once at the first line, PgUp stays there: no jump back to the last turn.
    for s in &seen[first..] {
        assert!(s.lines().nth(1).is_some_and(|l| l.contains("│ you")), "not at the first line:\n{s}");
        assert!(!s.contains("Turn 4"), "jumped back to the bottom:\n{s}");
    }
    // Ctrl+End shows the last line, Ctrl+Home the first.
    t.keys(&["C-End"]);
    t.wait_for("the last turn", |s| transcript(s).contains("Turn 4") && transcript(s).contains("Ask another question"));
    t.keys(&["C-Home"]);
    let s = t.wait_for("the first turn", |s| transcript(s).contains("Turn 1 · you said"));
    assert!(transcript(&s).lines().nth(2).is_some_and(|l| l.contains("one")), "{s}");
    // Shift+↑ from the bottom also gets there.
    t.keys(&["C-End"]);
    for _ in 0..50 {
        t.keys(&["S-Up"]);
    }
    t.wait_for("the first line by Shift+Up", |s| transcript(s).lines().nth(2).is_some_and(|l| l.contains("one")));
}

#[test]
fn a_selected_message_is_scrolled_into_view_and_marked() {
    if !tmux_available() {
        return;
    }
    let t = four_turns();
    // Alt+↑ from the composer selects the last message; seven more reach the first prompt.
    t.keys(&["M-Up"]);
    for _ in 0..7 {
        t.keys(&["M-Up"]);
    }
    let s = t.wait_for("the first prompt selected", |s| {
        transcript(s).lines().any(|l| l.contains("▌you")) && transcript(s).contains("one")
    });
    let marked: Vec<&str> = s.lines().filter(|l| l.contains('▌')).collect();
    assert!(marked.iter().any(|l| l.contains("one")), "the first prompt is not marked:\n{s}");
}
