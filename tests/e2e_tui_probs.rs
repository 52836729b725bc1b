//! End to end in tmux: `--logprobs 5` against the demo, then the selected reply's heatmap and
//! the alternatives of the token under the cursor, read off the screen. Skips without tmux.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};

/// The alternatives' rows: a bar, a percentage, the token in quotes.
fn alternative_rows(screen: &str) -> Vec<&str> {
    screen.lines().filter(|l| l.contains("█") || l.contains("░")).filter(|l| l.contains(" %  “")).collect()
}

#[test]
fn logprobs_show_a_heatmap_and_each_tokens_alternatives() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("--logprobs 5");
    t.wait_ready();
    t.chat("hello there");
    let s = t.screen();
    assert!(s.contains("mean logprob") && s.contains("perplexity"), "the usage panel: {s}");
    t.keys(&["M-Up"]);
    t.wait_for("the reply selected", |s| s.contains("message selected"));
    t.keys(&["p"]);
    let s = t.wait_for("the heatmap", |s| s.contains("Token probabilities ·") && s.contains("perplexity"));
    // The whole reply is there, the first token under the cursor, with its five alternatives.
    assert!(s.contains("Ask another question"), "{s}");
    assert!(s.contains("⟦> Turn"), "the cursor starts on the first token: {s}");
    assert_eq!(alternative_rows(&s).len(), 5, "{s}");
    assert!(s.contains("◂ chosen"), "{s}");
    let first = s.lines().find(|l| l.contains("token “")).unwrap().to_owned();
    // Moving along shows another token and its alternatives.
    t.keys(&["Right", "Right"]);
    let s = t.wait_for("the cursor moved", |s| s.lines().find(|l| l.contains("token “")).is_some_and(|l| l != first));
    assert_eq!(alternative_rows(&s).len(), 5, "{s}");
    assert!(!s.contains("⟦> Turn"), "{s}");
    // n goes to the next token the model was less than half sure of.
    t.keys(&["n"]);
    let s = t.wait_for("an unsure token", |s| {
        s.lines()
            .find(|l| l.contains("token “"))
            .and_then(|l| l.split("  ").nth(1))
            .is_some_and(|p| p.trim_end_matches(" %").trim().parse::<f64>().is_ok_and(|p| p < 50.0))
    });
    assert!(s.contains("◂ chosen"), "{s}");
    t.keys(&["Escape"]);
    t.wait_for("the heatmap closed", |s| !s.contains("Token probabilities ·"));
    t.quit();
}

#[test]
fn a_reply_without_logprobs_says_how_to_ask_and_the_command_turns_them_on() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("");
    t.wait_ready();
    t.chat("first");
    t.keys(&["M-Up"]);
    t.wait_for("the reply selected", |s| s.contains("message selected"));
    t.keys(&["p"]);
    t.wait_for("the hint", |s| s.contains("/logprobs 5 asks for them"));
    t.keys(&["Escape"]);
    t.send("/logprobs 2");
    t.wait_for("the flash", |s| s.contains("token probabilities on (2 alternatives)"));
    t.chat("second");
    t.keys(&["M-Up"]);
    t.wait_for("the reply selected", |s| s.contains("message selected"));
    t.keys(&["p"]);
    let s = t.wait_for("the heatmap", |s| s.contains("Token probabilities ·"));
    assert_eq!(alternative_rows(&s).len(), 2, "{s}");
    t.quit();
}

#[test]
fn compare_columns_show_their_logprob_and_perplexity_side_by_side() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::start("compare -m demo -m demo-reasoning --logprobs 2");
    t.wait_for("the compare screen", |s| s.contains("message to 2 models"));
    t.send("hello");
    let s = t.wait_for("both answers", |s| s.contains("✓ 2 done"));
    assert_eq!(s.matches("ppl ").count(), 2, "{s}");
    t.quit();
}
