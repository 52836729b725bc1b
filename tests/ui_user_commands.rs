//! Screens: the user's own slash commands in the palette (filtered to them) and at the end of
//! the help overlay, each with its description; a workspace one is marked as such.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::app::overlay::Overlay;
use palaver::app::{Msg, State};
use palaver::ui::RenderCache;

fn state() -> State {
    screen::with_user_commands("---\ndescription: Review code for bugs\nmodel: demo-reasoning\n---\nReview $ARGUMENTS")
}

fn render(s: &mut State, w: u16, h: u16) -> String {
    screen::text(&screen::settle(s, w, h, &mut RenderCache::default()))
}

#[test]
fn the_palette_lists_them_with_their_descriptions() {
    let mut s = state();
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Char('p'), KeyModifiers::CONTROL)));
    for c in "/re".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    let screen = render(&mut s, 80, 24);
    assert!(screen.contains("/review") && screen.contains("Review code for bugs"), "{screen}");
    assert!(screen.contains("Write release notes for $1 (workspace)"), "{screen}");
    insta::assert_snapshot!("user_commands_palette_80x24", screen);
}

#[test]
fn help_lists_them_at_the_end() {
    let mut s = state();
    s.overlays.push(Overlay::Help { scroll: u16::MAX });
    let screen = render(&mut s, 100, 30);
    assert!(screen.contains("Your commands"), "{screen}");
    assert!(screen.contains("/release-notes"), "{screen}");
    insta::assert_snapshot!("user_commands_help_100x30", screen);
}
