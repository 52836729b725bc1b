//! Screen snapshots of the conversation list overlay (with data, empty, search results with
//! highlighted matches, rename and delete prompts) over ratatui's `TestBackend`. The store's
//! answers are fed to `State::apply` as messages, so no database is involved.
//! Regenerate with `INSTA_UPDATE=always cargo test --test ui_store_snapshots`, then read them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::persist::StoreMsg;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::target::TurnSettings;
use palaver::store::entries::ListEntry;
use palaver::store::{ConversationSummary, Hit};
use palaver::ui::{self, RenderCache, theme::Theme};
use ratatui::buffer::Buffer;

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];
/// 2026-03-14 09:26:40 UTC and earlier.
const T0: u64 = 1_773_480_400_000;
const HOUR: u64 = 3_600_000;

fn state() -> State {
    let target = TargetInfo::new("demo", "demo", Api::Chat);
    // Colours on: the match highlight is checked by style below.
    let theme = Theme::load("dark", None, false).unwrap();
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    let mut s = State::new(target, settings, Config::default(), theme, "dark");
    s.apply(Msg::Store(StoreMsg::Ready));
    s
}

fn key(s: &mut State, code: KeyCode, mods: KeyModifiers) {
    s.apply(Msg::Key(KeyEvent::new(code, mods)));
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        key(s, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

fn summary(id: &str, title: &str, model: &str, hours_ago: u64, messages: u64) -> ConversationSummary {
    ConversationSummary {
        id: id.into(),
        title: title.into(),
        model: Some(model.into()),
        provider: Some("demo".into()),
        api: Some("chat".into()),
        created_at: T0 - hours_ago * HOUR - HOUR,
        updated_at: T0 - hours_ago * HOUR,
        messages,
        active_branch: 0,
        compare_group: None,
        compare_column: None,
    }
}

fn conversations() -> Vec<ConversationSummary> {
    vec![
        summary("20260314-092640-1a2b", "What is a borrow checker?", "demo", 0, 4),
        summary("20260314-071200-9f00", "Explain async/await in Rust with a small example program", "demo-slow", 2, 12),
        summary("20260313-180000-3c3c", "List the files in this folder", "demo-tools", 15, 6),
        summary("20260312-101010-beef", "Why did the filter stop this reply?", "demo-safety", 47, 2),
        summary("20260301-000000-0001", "Rename me", "demo", 321, 1),
    ]
}

fn hit(id: &str, title: &str, role: &str, position: usize, snippet: &str, words: &[&str], hours_ago: u64) -> Hit {
    let mut ranges: Vec<std::ops::Range<usize>> =
        words.iter().flat_map(|w| snippet.match_indices(w).map(|(i, m)| i..i + m.len())).collect();
    ranges.sort_by_key(|r| r.start);
    Hit {
        conversation_id: id.into(),
        title: title.into(),
        branch: 0,
        position,
        role: role.into(),
        snippet: snippet.into(),
        ranges,
        updated_at: T0 - hours_ago * HOUR,
        model: Some("demo".into()),
        compare_group: None,
    }
}

fn hits() -> Vec<Hit> {
    vec![
        hit(
            "20260314-092640-1a2b",
            "What is a borrow checker?",
            "assistant",
            1,
            "…The borrow checker makes sure every reference is valid: a value has one owner, and you may borrow it…",
            &["borrow"],
            0,
        ),
        hit(
            "20260314-092640-1a2b",
            "What is a borrow checker?",
            "user",
            0,
            "What is a borrow checker?",
            &["borrow"],
            0,
        ),
        hit(
            "20260314-071200-9f00",
            "Explain async/await in Rust with a small example program",
            "assistant",
            3,
            "…a future can borrow from its caller\nonly while it is pinned; borrowing across an await point…",
            &["borrow"],
            2,
        ),
    ]
}

/// The list overlay open over a conversation whose id is the first row.
fn listed(rows: Vec<ConversationSummary>) -> State {
    listed_entries(rows.into_iter().map(ListEntry::conversation).collect())
}

/// [`listed`] with entries that may be compares.
fn listed_entries(rows: Vec<ListEntry>) -> State {
    let mut s = state();
    typed(&mut s, "What is a borrow checker?");
    key(&mut s, KeyCode::Enter, KeyModifiers::NONE);
    s.apply(Msg::Store(StoreMsg::Created { local: 1, id: "20260314-092640-1a2b".into() }));
    let id = s.live.as_ref().unwrap().id;
    let events = vec![
        StreamEvent::Text { choice: 0, delta: "It checks that references never outlive their data.".into() },
        StreamEvent::Finish { choice: 0, reason: "stop".into() },
        StreamEvent::End,
    ];
    s.apply(Msg::Wire {
        id,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 40 }),
        now_ms: 40,
    });
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 41 }), now_ms: 41 });
    key(&mut s, KeyCode::Char('l'), KeyModifiers::CONTROL);
    s.apply(Msg::Store(StoreMsg::Listed { seq: 1, offset: 0, result: Ok(rows) }));
    s
}

fn draw(s: &mut State, w: u16, h: u16) -> Buffer {
    screen::settle(s, w, h, &mut RenderCache::default())
}

fn text(buf: &Buffer) -> String {
    screen::text(buf)
}

fn snap_all(s: &mut State, name: &str) {
    for (w, h) in SIZES {
        let screen = text(&draw(s, w, h));
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
    }
}

#[test]
fn list_with_conversations() {
    let mut s = listed(conversations());
    key(&mut s, KeyCode::Down, KeyModifiers::NONE);
    snap_all(&mut s, "history_list");
}

#[test]
fn list_empty() {
    let mut s = state();
    key(&mut s, KeyCode::Char('l'), KeyModifiers::CONTROL);
    s.apply(Msg::Store(StoreMsg::Listed { seq: 1, offset: 0, result: Ok(vec![]) }));
    snap_all(&mut s, "history_empty");
}

#[test]
fn list_loading_and_store_off() {
    let mut s = state();
    key(&mut s, KeyCode::Char('l'), KeyModifiers::CONTROL);
    insta::assert_snapshot!("history_loading_80x24", text(&draw(&mut s, 80, 24)));
    let mut off = state();
    off.apply(Msg::Store(StoreMsg::Unavailable("cannot open /ro/palaver.sqlite3: the database is read-only".into())));
    key(&mut off, KeyCode::Char('l'), KeyModifiers::CONTROL);
    insta::assert_snapshot!("history_off_80x24", text(&draw(&mut off, 80, 24)));
}

#[test]
fn search_results_with_highlighted_matches() {
    let mut s = listed(conversations());
    typed(&mut s, "borrow");
    s.apply(Msg::Store(StoreMsg::Found { seq: 6, result: Ok(hits()) }));
    key(&mut s, KeyCode::Down, KeyModifiers::NONE);
    snap_all(&mut s, "history_search");
    // Every matched word in a snippet, and nothing else, is drawn in the match style.
    let buf = draw(&mut s, 120, 40);
    let mark = ui::conversations::match_style(&s);
    let mut snippets = 0;
    for y in 0..buf.area.height {
        let row: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        let marked: String = (0..buf.area.width)
            .filter(|&x| buf[(x, y)].modifier.contains(mark.add_modifier) && buf[(x, y)].fg == mark.fg.unwrap())
            .map(|x| buf[(x, y)].symbol())
            .collect();
        // The overlay is 110 wide, centred: its text starts at column 6.
        let inner: String = (6..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        if inner.starts_with("    ") && inner.contains("borrow") {
            snippets += 1;
            assert_eq!(marked, "borrow".repeat(row.matches("borrow").count()), "row {y}: {row:?}");
        } else {
            assert_eq!(marked, "", "row {y}: {row:?}");
        }
    }
    assert_eq!(snippets, 3);
}

#[test]
fn search_without_matches() {
    let mut s = listed(conversations());
    typed(&mut s, "zebra");
    s.apply(Msg::Store(StoreMsg::Found { seq: 5, result: Ok(vec![]) }));
    insta::assert_snapshot!("history_search_none_80x24", text(&draw(&mut s, 80, 24)));
}

#[test]
fn rename_and_delete_prompts() {
    let mut s = listed(conversations());
    key(&mut s, KeyCode::Tab, KeyModifiers::NONE);
    key(&mut s, KeyCode::End, KeyModifiers::NONE);
    key(&mut s, KeyCode::Char('r'), KeyModifiers::NONE);
    for _ in 0..2 {
        key(&mut s, KeyCode::Backspace, KeyModifiers::NONE);
    }
    typed(&mut s, "d later");
    insta::assert_snapshot!("history_rename_80x24", text(&draw(&mut s, 80, 24)));
    key(&mut s, KeyCode::Esc, KeyModifiers::NONE);
    key(&mut s, KeyCode::Up, KeyModifiers::NONE);
    key(&mut s, KeyCode::Char('d'), KeyModifiers::NONE);
    insta::assert_snapshot!("history_delete_80x24", text(&draw(&mut s, 80, 24)));
}

/// A compare of three models between two conversations.
fn with_a_compare() -> Vec<ListEntry> {
    let column = |n: u32, model: &str, messages: u64| ConversationSummary {
        compare_group: Some("cmp-20260314-080000-77aa".into()),
        compare_column: Some(n),
        ..summary(&format!("20260314-080000-77a{n}"), "Which sort is stable?", model, 1, messages)
    };
    let compare = ListEntry::compare(
        "cmp-20260314-080000-77aa",
        vec![column(0, "demo", 2), column(1, "demo-reasoning", 2), column(2, "demo-slow", 4)],
    )
    .unwrap();
    let mut rows: Vec<ListEntry> = conversations().into_iter().map(ListEntry::conversation).collect();
    rows.insert(1, compare);
    rows
}

#[test]
fn list_with_a_compare_folded_and_unfolded() {
    let mut s = listed_entries(with_a_compare());
    key(&mut s, KeyCode::Down, KeyModifiers::NONE);
    let folded = text(&draw(&mut s, 120, 40));
    assert!(folded.contains("+ Which sort is stable?") && folded.contains("compare · 3 models"), "{folded}");
    assert!(folded.contains("Enter reopen side by side"), "{folded}");
    snap_all(&mut s, "history_compare_folded");
    key(&mut s, KeyCode::Right, KeyModifiers::NONE);
    key(&mut s, KeyCode::Down, KeyModifiers::NONE);
    key(&mut s, KeyCode::Down, KeyModifiers::NONE);
    let open = text(&draw(&mut s, 120, 40));
    for want in ["− Which sort is stable?", "├ column 1", "├ column 2", "└ column 3", "demo-reasoning", "8 msgs"]
    {
        assert!(open.contains(want), "{want}: {open}");
    }
    assert!(open.contains("Enter open this column as a chat"), "{open}");
    snap_all(&mut s, "history_compare_unfolded");
    key(&mut s, KeyCode::Left, KeyModifiers::NONE);
    key(&mut s, KeyCode::Char('d'), KeyModifiers::CONTROL);
    let ask = text(&draw(&mut s, 80, 24));
    assert!(ask.contains("Delete compare “Which sort is stable?” (3 columns, 8 messages)"), "{ask}");
}

#[test]
fn a_search_hit_in_a_compare_column_names_its_model() {
    let mut s = listed_entries(with_a_compare());
    typed(&mut s, "stable");
    let mut h =
        hit("20260314-080000-77a1", "Which sort is stable?", "assistant", 1, "…merge sort is stable…", &["stable"], 1);
    h.model = Some("demo-reasoning".into());
    h.compare_group = Some("cmp-20260314-080000-77aa".into());
    s.apply(Msg::Store(StoreMsg::Found { seq: 6, result: Ok(vec![h]) }));
    let screen = text(&draw(&mut s, 80, 24));
    assert!(screen.contains("reply · demo-reasoning in a compare"), "{screen}");
    insta::assert_snapshot!("history_search_compare_column_80x24", screen);
}
