//! End to end in tmux against the embedded demo provider: the blind arena (`palaver compare
//! --arena -m demo -m demo-reasoning`: names and numbers hidden, a sentence typed as the vote
//! bar appears goes to the composer and votes nothing, a deliberate vote, final once the names
//! show, `compare stats` counting battles), a battle of
//! three models whose reasoning stays hidden until the vote, and compare from here (a chat of two turns, `m` on the first prompt, another
//! model answers it beside the chat's answer, keeping it continues the chat on a branch that
//! the history keeps beside the old one), and a prompt set's progress bar on a terminal. Skips
//! (and says so) when tmux is not installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};
use std::process::Command;

fn palaver(home: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_palaver"))
        .args(args)
        .env("PALAVER_HOME", home)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The sentence typed the moment the vote bar appears.
const SENTENCE: &str = "yes and also tell me more about everything";

#[test]
fn the_blind_arena_hides_names_takes_a_vote_and_counts_it() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::launch("compare --arena -m demo -m demo-reasoning").keys_one_at_a_time().start();
    let s = t.wait_for("the arena", |s| s.contains("message to 2 models"));
    let titles = |s: &str| s.lines().next().unwrap_or("").to_owned();
    assert!(!titles(&s).contains("demo"), "no name before the vote: {s}");
    t.type_text("Which is better?");
    t.keys(&["Enter"]);
    let s = t.wait_for("both answers and the vote bar", |s| s.contains("✓ 2 done") && s.contains("Tab to vote"));
    assert!(s.contains("▸ A ") && s.contains("  B "), "columns are A and B: {s}");
    // (The demo's scripted answer mentions model names in its text: the titles must not.)
    assert!(!titles(&s).contains("demo") && !s.contains("A demo") && !s.contains("B demo"), "names stay hidden: {s}");
    // Nor do palaver's own numbers that tell them apart: token counts, speed, cost.
    assert!(!s.contains("tok/s") && !s.contains("reasoning)") && !s.contains("no price"), "{s}");
    // Nor the time to the first token or the finish reason.
    assert!(!s.contains("ttft ") && !s.contains("finish stop"), "{s}");
    // The moment the bar shows, a whole sentence: it goes to the composer, no vote is cast.
    t.type_text(SENTENCE);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let s = t.screen();
    assert!(s.contains(SENTENCE), "the sentence is in the composer: {s}");
    assert!(!s.contains("voted") && !s.contains("A demo") && !s.contains("B demo"), "nothing was voted: {s}");
    // The deliberate vote: Tab to the bar, → to "A better", Enter.
    t.keys(&["Tab", "Right"]);
    t.wait_for("A better highlighted", |s| s.contains("▸ a A better"));
    t.keys(&["Enter"]);
    let s = t.wait_for("the names after the vote", |s| s.contains("voted A is better"));
    assert!(s.contains("A demo") || s.contains("A demo-reasoning"), "{s}");
    assert!(s.contains("tok/s"), "the numbers show after the vote: {s}");
    assert!(s.contains(SENTENCE), "the sentence is still in the composer: {s}");
    // The names are shown: the vote is final, a second one changes nothing.
    t.keys(&["Tab", "b", "Enter"]);
    t.wait_for("the final vote", |s| s.contains("the vote is final"));
    // The sentence is sent: a new battle, hidden again, with its own prompt on screen.
    t.keys(&["Enter"]);
    let s = t.wait_for("the second battle", |s| s.contains("✓ 2 done") && s.contains("Tab to vote"));
    assert!(!titles(&s).contains("demo"), "{s}");
    assert!(s.contains("tell me more") && !s.contains("Which is better?"), "this battle's prompt: {s}");
    t.keys(&["Tab", "t", "Enter"]);
    t.wait_for("the second vote", |s| s.contains("voted a tie"));
    t.keys(&["C-q"]);
    t.wait_for("the shell after palaver", |s| s.contains("EXITED-0"));

    let stats = palaver(t.home(), &["compare", "stats"]);
    assert!(stats.contains("demo/demo ") && stats.contains("demo/demo-reasoning"), "{stats}");
    assert!(stats.contains("2 battles"), "one vote per battle, the first of each: {stats}");
    let json = palaver(t.home(), &["compare", "stats", "--json"]);
    let rows: Vec<serde_json::Value> = json.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["votes"] == 2 && r["rating_low"].as_f64() <= r["rating_high"].as_f64()));
    // A won the first, the second was a tie: one win, the B vote refused counted nowhere.
    assert_eq!(rows.iter().map(|r| r["wins"].as_u64().unwrap()).sum::<u64>(), 1, "{json}");
    // The history shows the arena battle by battle, each column by its letter and model.
    let list = palaver(t.home(), &["history", "list"]);
    let id = list.split_whitespace().next().unwrap_or_default().to_owned();
    let shown = palaver(t.home(), &["history", "show", &id]);
    assert!(shown.contains("arena · 2 battles"), "{shown}");
    let rules: Vec<&str> = shown.lines().filter(|l| l.starts_with("══ ")).collect();
    assert_eq!(rules.len(), 4, "{shown}");
    assert!(rules[0].starts_with("══ battle 1 · A · demo") && rules[0].contains("(voted best)"), "{shown}");
    assert!(rules[1].starts_with("══ battle 1 · B · demo") && !rules[1].contains("(voted"), "{shown}");
    assert!(rules[2].starts_with("══ battle 2 · A · demo") && rules[2].contains("(a tie)"), "{shown}");
}

#[test]
fn a_three_model_battle_keeps_reasoning_hidden_until_the_vote() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::launch("compare --arena -m demo -m demo-reasoning -m demo-hosted")
        .size(150, 40)
        .keys_one_at_a_time()
        .start();
    t.wait_for("the arena", |s| s.contains("message to 3 models"));
    t.type_text("Which is best?");
    t.keys(&["Enter"]);
    let s = t.wait_for("three answers and the vote bar", |s| s.contains("✓ 3 done") && s.contains("Tab to vote"));
    let titles = s.lines().next().unwrap_or("").to_owned();
    assert!(titles.contains(" A ") && titles.contains(" B ") && titles.contains(" C "), "{s}");
    assert!(!titles.contains("demo"), "no name before the vote: {s}");
    // demo-reasoning thinks before it answers: not a trace of it shows before the vote.
    assert!(!s.contains("▸ reasoning") && !s.contains("▾ reasoning") && !s.contains("reasoning ·"), "{s}");
    assert!(s.contains("c C better") && s.contains("n all bad"), "an option for each column: {s}");
    // C is the best: Tab to the bar, its letter, Enter.
    t.keys(&["Tab", "c", "Enter"]);
    let s = t.wait_for("the names after the vote", |s| s.contains("voted C is better"));
    assert!(s.contains("▸ reasoning"), "the reasoning block shows once the vote is cast: {s}");
    assert!(s.lines().next().unwrap_or("").contains("demo-reasoning"), "{s}");
    t.keys(&["C-q"]);
    t.wait_for("the shell after palaver", |s| s.contains("EXITED-0"));

    // One vote of three models is one battle: C won it, A and B lost it, each with the
    // answers' style (too few for style control, which says so).
    let stats = palaver(t.home(), &["compare", "stats"]);
    assert!(stats.contains("1 battle "), "{stats}");
    assert!(stats.contains("styled: not fitted — 1 vote carries the answers' style"), "{stats}");
    let json = palaver(t.home(), &["compare", "stats", "--json"]);
    let rows: Vec<serde_json::Value> = json.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(rows.len(), 3, "{json}");
    assert_eq!(rows.iter().filter(|r| r["wins"] == 1 && r["votes"] == 1).count(), 1, "C won: {json}");
    assert_eq!(rows.iter().filter(|r| r["losses"] == 1 && r["votes"] == 1).count(), 2, "{json}");
    assert!(rows.iter().all(|r| r["styled_votes"] == 1), "{json}");
}

#[test]
fn compare_from_here_forks_a_chat_and_keeps_the_branch() {
    if !tmux_available() {
        return;
    }
    let t = Tmux::launch("--demo").keys_one_at_a_time().start();
    t.wait_ready();
    t.chat("first question");
    t.wait_for("the first answer", |s| s.contains("Turn 1 · you said") && s.contains("✓"));
    t.chat("second question");
    t.wait_for("the second answer", |s| s.contains("Turn 2 · you said"));
    // Select the first prompt and compare from there.
    t.keys(&["M-Up", "Up", "Up", "Up"]);
    t.keys(&["m"]);
    t.wait_for("the /here prompt", |s| s.contains("/here") && s.contains("compare from here"));
    t.type_text("demo-reasoning");
    t.keys(&["Enter"]);
    let s = t.wait_for("both columns", |s| s.contains("✓ 2 done") && s.contains("2 demo-reasoning"));
    assert!(s.contains("1 demo"), "the chat's own answer is column 1: {s}");
    assert!(!s.contains("second question"), "the history stops at the fork: {s}");
    // Keep the new column: the chat carries on with demo-reasoning from the first turn.
    t.keys(&["Tab", "l", "k"]);
    let s = t.wait_for("the kept branch", |s| s.contains("continuing with demo-reasoning from here"));
    assert!(!s.contains("second question"), "the later turn is on the other branch: {s}");
    t.chat("a follow-up");
    t.wait_for("the follow-up on the branch", |s| s.contains("Turn 2 · you said: “a follow-up”"));
    t.keys(&["C-q"]);
    t.wait_for("the shell after palaver", |s| s.contains("EXITED-0"));

    // The stored conversation keeps both branches: the old turn and the new one.
    let list = palaver(t.home(), &["history", "list", "--json"]);
    let rows: Vec<serde_json::Value> = list.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let chat = rows
        .iter()
        .find(|r| r["title"].as_str().is_some_and(|t| t.contains("first question")) && r.get("columns").is_none());
    let id = chat
        .or_else(|| rows.iter().find(|r| r["title"].as_str().is_some_and(|t| t.contains("first question"))))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let export = palaver(t.home(), &["history", "export", &id, "--format", "json"]);
    assert!(export.contains("second question"), "the old branch is still stored");
    assert!(export.contains("a follow-up"), "the new branch is stored");
    let shown = palaver(t.home(), &["history", "show", &id]);
    assert!(
        shown.contains("a follow-up") && !shown.contains("second question"),
        "the kept branch is the active one: {shown}"
    );
}

#[test]
fn a_prompt_set_shows_a_progress_bar_on_a_terminal() {
    if !tmux_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("p.txt");
    std::fs::write(&set, (1..=10).map(|i| format!("question {i}\n")).collect::<String>()).unwrap();
    let args = format!("compare --demo -m demo -m demo-reasoning --prompts '{}' --concurrency 2", set.display());
    let t = Tmux::launch(&args).start();
    let s = t.wait_for("the progress bar", |s| s.contains("/20 · 0 failed") && s.contains("ETA") && s.contains('['));
    assert!(s.contains('█') || s.contains('░'), "{s}");
    let s = t.wait_for("the summary", |s| s.contains("EXITED-0"));
    assert!(s.contains("cells ok") && s.contains("10 prompts × 2 models · 20 cells stored"), "{s}");
    assert!(!s.contains("ETA"), "the bar is cleared at the end: {s}");
}
