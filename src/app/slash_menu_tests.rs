//! The `/` menu driven by keys alone: when it opens, filtering, ↑/↓, Tab, Enter, Esc, and the
//! keys it must not steal.

use super::*;
use crate::app::msg::Msg;
use crate::app::test_state;
use crate::config::commands::{CommandSource, parse};
use std::path::PathBuf;

fn key(s: &mut State, code: KeyCode) -> Vec<Effect> {
    s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        key(s, KeyCode::Char(c));
    }
}

fn names(s: &State) -> Vec<String> {
    s.slash_menu().map(|(rows, _)| rows.into_iter().map(|e| e.name).collect()).unwrap_or_default()
}

fn chosen(s: &State) -> String {
    let (rows, i) = s.slash_menu().expect("the menu shows");
    rows[i].name.clone()
}

fn entry(name: &str, args: &str) -> Entry {
    Entry { name: name.into(), args: args.into(), about: String::new(), kind: Kind::BuiltIn, params: Vec::new() }
}

#[test]
fn filtering_puts_the_exact_name_then_prefixes_then_substrings() {
    let all = [entry("/help", ""), entry("/history", ""), entry("/here", ""), entry("/schema", ""), entry("/h", "")];
    let got: Vec<String> = filter(&all, "/h").into_iter().map(|e| e.name).collect();
    assert_eq!(got, ["/h", "/help", "/history", "/here", "/schema"]);
    let got: Vec<String> = filter(&all, "/HE").into_iter().map(|e| e.name).collect();
    assert_eq!(got, ["/help", "/here", "/schema"], "case is ignored; `he` inside schema comes last");
    assert!(filter(&all, "/etc/hosts").is_empty());
    assert_eq!(filter(&all, "/").len(), all.len());
}

#[test]
fn what_needs_arguments_is_read_from_the_hint() {
    assert!(!entry("/clear", "").needs_args());
    assert!(!entry("/compact", "[WHAT TO KEEP]").needs_args());
    assert!(!entry("/x", "[a] [b c]").needs_args());
    assert!(entry("/model", "NAME").needs_args());
    assert!(entry("/export", "html [PATH]").needs_args());
    assert!(entry("/mcp:t:greet", "who [mood]").needs_args());
}

#[test]
fn a_slash_in_an_empty_draft_opens_every_command_and_typing_filters() {
    let mut s = test_state();
    assert!(s.slash_menu().is_none());
    typed(&mut s, "/");
    let all = names(&s);
    assert_eq!(all.len(), crate::app::commands::COMMANDS.len(), "every built-in command: {all:?}");
    assert_eq!(chosen(&s), "/model");
    typed(&mut s, "com");
    assert_eq!(names(&s), ["/compare", "/compact"]);
    // Backspace widens it again.
    key(&mut s, KeyCode::Backspace);
    key(&mut s, KeyCode::Backspace);
    assert_eq!(s.composer.text(), "/c");
    assert!(names(&s).len() > 2, "{:?}", names(&s));
}

#[test]
fn arrows_choose_tab_completes_and_leaves_the_cursor_for_arguments() {
    let mut s = test_state();
    typed(&mut s, "/com");
    key(&mut s, KeyCode::Down);
    assert_eq!(chosen(&s), "/compact");
    key(&mut s, KeyCode::Down);
    assert_eq!(chosen(&s), "/compare", "it wraps");
    key(&mut s, KeyCode::Up);
    assert_eq!(chosen(&s), "/compact");
    key(&mut s, KeyCode::Tab);
    assert_eq!(s.composer.text(), "/compact ");
    assert!(s.slash_menu().is_none(), "completed: the menu gives way to the argument hint");
    let (hint, missing) = s.argument_hint().expect("the arguments are hinted");
    assert_eq!((hint.usage().as_str(), missing.len()), ("/compact [WHAT TO KEEP]", 0));
    typed(&mut s, "x");
    assert_eq!(s.composer.text(), "/compact x", "the cursor was at the end");
}

#[test]
fn enter_runs_a_command_without_arguments_and_completes_one_that_needs_them() {
    let mut s = test_state();
    typed(&mut s, "/hel");
    key(&mut s, KeyCode::Enter);
    assert!(matches!(s.overlays.last(), Some(crate::app::overlay::Overlay::Help { .. })), "/help ran");
    assert!(s.composer.is_empty());
    s.overlays.clear();
    typed(&mut s, "/exp");
    let fx = key(&mut s, KeyCode::Enter);
    assert!(fx.is_empty());
    assert_eq!(s.composer.text(), "/export ", "it needs `html`: completed, not run");
}

#[test]
fn esc_closes_it_and_keeps_the_text() {
    let mut s = test_state();
    typed(&mut s, "/mo");
    key(&mut s, KeyCode::Esc);
    assert!(s.slash_menu().is_none());
    assert_eq!(s.composer.text(), "/mo");
    // Closed stays closed while the command is typed on; Tab opens it again.
    typed(&mut s, "u");
    assert!(s.slash_menu().is_none());
    key(&mut s, KeyCode::Backspace);
    key(&mut s, KeyCode::Tab);
    assert_eq!(names(&s), ["/model", "/mouse"]);
}

#[test]
fn it_never_steals_keys_from_text_that_is_not_a_command() {
    let mut s = test_state();
    // A slash mid-sentence.
    typed(&mut s, "see a/b");
    assert!(s.slash_menu().is_none());
    key(&mut s, KeyCode::Up);
    key(&mut s, KeyCode::Enter);
    assert!(s.composer.is_empty(), "Enter sent the sentence");
    assert!(s.slash_menu().is_none());
    // A pasted path.
    s.composer.clear();
    s.apply(Msg::Paste("/etc/hosts".into()));
    assert!(s.slash_menu().is_none());
    // A typed path matches no command: Enter sends as it always did (and is refused).
    s.composer.clear();
    typed(&mut s, "/etc/hosts");
    assert!(s.slash_menu().is_none());
    key(&mut s, KeyCode::Enter);
    assert!(s.flash.clone().unwrap().text.contains("unknown command /etc/hosts"));
    // `//` sends a slash.
    s.composer.clear();
    typed(&mut s, "//");
    assert!(s.slash_menu().is_none());
    // ↑ on an empty draft still walks the history (a recalled command is not a menu).
    s.composer.clear();
    s.composer.remember("/help");
    key(&mut s, KeyCode::Up);
    assert_eq!(s.composer.text(), "/help");
    assert!(s.slash_menu().is_none());
}

#[test]
fn user_commands_are_listed_sanitised_with_their_placeholders() {
    let mut s = test_state();
    let file = "---\ndescription: Review \u{1b}[31mcode\n---\nReview $ARGUMENTS";
    s.mine.commands =
        vec![parse("review", file, CommandSource::Workspace, PathBuf::from(".palaver/commands/review.md"))];
    typed(&mut s, "/rev");
    let (rows, _) = s.slash_menu().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].usage().as_str(), rows[0].about.as_str()), ("/review ARGUMENTS", "Review code (workspace)"));
    key(&mut s, KeyCode::Enter);
    assert_eq!(s.composer.text(), "/review ", "its prompt wants arguments: completed");
}

#[tokio::test]
async fn an_mcp_prompt_shows_its_arguments_before_it_is_sent() {
    let mut s = crate::app::mcp_prompts::tests::with_test_server().await;
    typed(&mut s, "/mcp");
    let (rows, _) = s.slash_menu().unwrap();
    let greet = rows.iter().find(|e| e.name == "/mcp:t:greet").unwrap();
    assert_eq!(greet.usage(), "/mcp:t:greet who [mood]");
    assert_eq!(greet.about, "Greets someone politely.");
    let shown: Vec<(&str, bool, &str)> =
        greet.params.iter().map(|p| (p.name.as_str(), p.required, p.about.as_str())).collect();
    assert_eq!(shown, [("who", true, "whom to greet"), ("mood", false, "how")]);
    typed(&mut s, ":t:g");
    let fx = key(&mut s, KeyCode::Enter);
    assert!(fx.is_empty(), "not sent: `who` is required");
    assert_eq!(s.composer.text(), "/mcp:t:greet ");
    let (_, missing) = s.argument_hint().unwrap();
    assert_eq!(missing, ["who"]);
    typed(&mut s, "mood=warm");
    assert_eq!(s.argument_hint().unwrap().1, ["who"]);
    typed(&mut s, " Ada");
    assert!(s.argument_hint().unwrap().1.is_empty());
}

#[test]
fn text_from_files_and_servers_is_one_clean_short_line() {
    assert_eq!(one_line("\n  first \u{1b}]0;title\u{7}line  \nsecond"), "first line");
    assert_eq!(one_line(&"w".repeat(100_000)).chars().count(), 200);
}
