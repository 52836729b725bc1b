//! Screens: the `/` menu over the composer — every command, filtered as typed, the user's own
//! commands and an MCP server's prompts with their argument hints — and the argument hint an
//! MCP prompt shows once its name is completed; at a normal and at a small size.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::app::{Msg, State};
use palaver::config::{McpConfig, McpServer};
use palaver::ui::RenderCache;

fn state() -> State {
    screen::with_user_commands("---\ndescription: Review code \u{1b}[2Jfor bugs\n---\nReview $ARGUMENTS")
}

/// The state with the scripted MCP server (`tests/mcp_server/server.py`) as `t`: its prompts
/// are `greet who [mood]` (a description with an escape in it) and `plain`.
async fn with_mcp() -> State {
    let script = format!("{}/tests/mcp_server/server.py", env!("CARGO_MANIFEST_DIR"));
    let server = McpServer { command: vec!["python3".into(), script], ..McpServer::default() };
    let cfg = McpConfig { servers: [("t".to_owned(), server)].into() };
    let mut registry = palaver::tools::Registry::builtins();
    assert!(registry.add_mcp_servers(&cfg).await.is_empty());
    let mut s = state();
    s.tools.set = palaver::app::tools::ToolSet(std::sync::Arc::new(registry));
    s
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
}

fn press(s: &mut State, code: KeyCode) {
    s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn render(s: &mut State, w: u16, h: u16) -> String {
    screen::text(&screen::settle(s, w, h, &mut RenderCache::default()))
}

#[test]
fn a_slash_lists_every_command_with_its_arguments_and_what_it_does() {
    let mut s = state();
    typed(&mut s, "/");
    let screen = render(&mut s, 100, 30);
    assert!(screen.contains("▸/model [NAME]") && screen.contains("switch model"), "{screen}");
    assert!(screen.contains("1/25"), "23 built in and 2 of the user's: {screen}");
    insta::assert_snapshot!("slash_menu_all_100x30", screen);
    // Down past the last shown row scrolls the list.
    for _ in 0..11 {
        press(&mut s, KeyCode::Down);
    }
    let screen = render(&mut s, 100, 30);
    assert!(screen.contains("12/25") && screen.contains("▸/set [KEY VALUE]"), "{screen}");
}

#[test]
fn small_it_fits_above_the_composer_and_filters_as_typed() {
    let mut s = state();
    typed(&mut s, "/");
    let screen = render(&mut s, 50, 15);
    insta::assert_snapshot!("slash_menu_all_50x15", screen);
    typed(&mut s, "re");
    let screen = render(&mut s, 50, 15);
    assert!(screen.contains("/review ARGUMENTS") && screen.contains("/release-notes $1"), "{screen}");
    assert!(screen.contains("Review code for bugs") && !screen.contains('\u{1b}'), "sanitised: {screen}");
    insta::assert_snapshot!("slash_menu_re_50x15", screen);
}

#[tokio::test]
async fn mcp_prompts_show_their_arguments_in_the_menu_and_once_completed() {
    let mut s = with_mcp().await;
    typed(&mut s, "/mcp");
    let screen = render(&mut s, 80, 24);
    assert!(screen.contains("/mcp:t:greet who [mood]") && screen.contains("Greets someone politely."), "{screen}");
    insta::assert_snapshot!("slash_menu_mcp_80x24", screen);
    press(&mut s, KeyCode::Tab);
    let screen = render(&mut s, 80, 24);
    assert!(screen.contains("who (required, missing) — whom to greet"), "{screen}");
    assert!(screen.contains("mood (optional) — how"), "{screen}");
    insta::assert_snapshot!("slash_menu_mcp_hint_80x24", screen);
    typed(&mut s, "Ada");
    let screen = render(&mut s, 50, 15);
    assert!(screen.contains("who (required) — whom") && !screen.contains("missing"), "{screen}");
    insta::assert_snapshot!("slash_menu_mcp_hint_given_50x15", screen);
}
