//! End to end, issue 40's "commands you can discover": the `/` menu read from the real
//! binary's screen in tmux (opened, filtered, completed, run), and `--help` naming every exit
//! status and compare's own flags.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::tmux::{Tmux, tmux_available};

#[test]
fn the_slash_menu_opens_filters_completes_and_runs() {
    if !tmux_available() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let commands = home.path().join("commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(commands.join("review.md"), "---\ndescription: Review a file for bugs\n---\nReview $ARGUMENTS\n")
        .unwrap();
    let t = Tmux::launch("--demo").home(home.path()).size(100, 30).start();
    t.wait_ready();
    t.type_text("/");
    let s = t.wait_for("the menu", |s| s.contains("commands · ↑↓ choose"));
    assert!(s.contains("/model [NAME]") && s.contains("switch model"), "{s}");
    assert!(s.contains("/system TEXT") && s.contains("/compare A B [C D]"), "arguments hinted: {s}");
    // Filtering: only what matches stays, the user's own command among them.
    t.type_text("rev");
    let s = t.wait_for("the filtered menu", |s| s.contains("/review ARGUMENTS") && !s.contains("/model [NAME]"));
    assert!(s.contains("Review a file for bugs"), "{s}");
    // Tab completes the name, the cursor waits for the arguments; the menu gives way.
    t.keys(&["Tab"]);
    t.wait_for("the completed name", |s| s.contains("│ /review ") && !s.contains("commands · ↑↓ choose"));
    t.send("main.rs");
    t.wait_for("the command's reply", |s| s.contains("✓ done"));
    // ↓ then Enter runs a command that needs no arguments: `/here` (it needs models) comes
    // first, `/help` next.
    t.type_text("/he");
    t.wait_for("the menu on /he", |s| s.contains("▸/here A [B C]"));
    t.keys(&["Down"]);
    t.wait_for("/help chosen", |s| s.contains("▸/help"));
    t.keys(&["Enter"]);
    t.wait_for("the help overlay", |s| s.contains("┌ Help"));
    t.keys(&["Escape"]);
    // Esc closes the menu and keeps the text.
    t.type_text("/cl");
    t.wait_for("the menu on /cl", |s| s.contains("▸/clear"));
    t.keys(&["Escape"]);
    t.wait_for("the menu closed, the text kept", |s| !s.contains("commands · ↑↓ choose") && s.contains("│ /cl "));
    t.quit();
    // What went out was the command's prompt, filled in.
    let out = common::cli::run(home.path(), &["history", "list", "--json"]);
    let id = common::cli::lines(&out)[0]["id"].as_str().unwrap().to_owned();
    let shown = common::cli::run(home.path(), &["history", "show", &id]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("Review main.rs"), "{shown:?}");
}

#[test]
fn help_lists_every_exit_status_and_compare_help_its_report_flags() {
    let home = tempfile::tempdir().unwrap();
    let out = common::cli::run(home.path(), &["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for status in [
        "0    ok",
        "1    provider/API error",
        "2    usage or config error",
        "3    a check failed",
        "4    the provider's content filter",
        "130  interrupted",
    ] {
        assert!(help.contains(status), "--help lacks exit status `{status}`:\n{help}");
    }
    let out = common::cli::run(home.path(), &["compare", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--report <FILE>") && help.contains("--min-pass <RATE>"), "{help}");
    let out = common::cli::run(home.path(), &["compare", "show", "--help"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("--report <FILE>"));
    // Elsewhere they are still not listed.
    let out = common::cli::run(home.path(), &["history", "--help"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("--min-pass"));
}
