//! Scrolling reaches every line: a property test over generated conversations (prose, headings,
//! tables, code, wide and combining characters, tool cards, hosted items, reasoning open and
//! closed, edits with versions, notices) × widths 20–250 × random key sequences. After every key
//! the settled view is checked against the heights the render cache measured: the top line is
//! in range, PgUp/Shift+↑ move up by their step until the first line and stay there, PgDn and
//! Shift+↓ move down until the last, Ctrl+Home/Ctrl+End show the first/last line, and a selected
//! message is on screen and marked. Paging up from the bottom shows every line.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::screen;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::app::transcript::NoticeKind;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::message::{Message, MessageStatus, Role, ToolCall, ToolStatus};
use palaver::engine::target::TurnSettings;
use palaver::ui::{RenderCache, theme::Theme};
use proptest::prelude::*;
use ratatui::buffer::Buffer;
use serde_json::json;

/// Pieces an answer is made of.
const BLOCKS: &[&str] = &[
    "A short paragraph of prose that wraps on narrow screens and keeps going for a while longer.",
    "## A heading\n\nText under it.",
    "# Title\n\n### Smaller heading",
    "- one\n- two with **bold** and `code`\n  - nested item\n- three",
    "1. first\n2. second\n3. third",
    "| Model | What it shows |\n|---|---|\n| `demo-tools` | Parallel tool calls |\n| `demo-reasoning` | Reasoning before the answer |\n| `demo-slow` | A long reply you can cancel |",
    "```rust\nfn main() {\n    let turns = [\"hello\", \"again\"];\n    for (i, turn) in turns.iter().enumerate() {\n        println!(\"turn {}: {turn}\", i + 1);\n    }\n}\n```",
    "```\nplain code line that is rather long and will need to be wrapped when the screen is narrow\n```",
    "漢字とかなの混じった文章が続きます。全角の文字は二列を占めます。漢字とかなの混じった文章。",
    "Combining: e\u{301}e\u{301}e\u{301} cafe\u{301} n\u{303}o\u{308} and emoji 🎉🎉 👩‍👩‍👧 wide ＡＢＣ.",
    "> A quote that goes on\n> and on across lines.",
    "---",
    "averyveryveryveryveryveryveryveryveryveryveryveryveryveryverylongwordwithoutanyspaces",
];

/// One generated cell (or group of cells) of the conversation.
#[derive(Debug, Clone)]
enum Spec {
    User(usize),
    Answer(Vec<usize>),
    Reasoning {
        blocks: Vec<usize>,
        open: bool,
    },
    Tools(usize),
    Hosted,
    Notice(usize),
    Refused,
    /// An edit: the tail from here becomes a kept version.
    Edit,
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        3 => (0..BLOCKS.len()).prop_map(Spec::User),
        4 => prop::collection::vec(0..BLOCKS.len(), 1..6).prop_map(Spec::Answer),
        1 => (prop::collection::vec(0..BLOCKS.len(), 1..3), any::<bool>())
            .prop_map(|(blocks, open)| Spec::Reasoning { blocks, open }),
        1 => (1usize..4).prop_map(Spec::Tools),
        1 => Just(Spec::Hosted),
        1 => (0..BLOCKS.len()).prop_map(Spec::Notice),
        1 => Just(Spec::Refused),
        1 => Just(Spec::Edit),
    ]
}

#[derive(Debug, Clone, Copy)]
enum Key {
    PageUp,
    PageDown,
    ShiftUp,
    ShiftDown,
    Home,
    End,
    /// Alt+↑: select the previous message (the last one from the composer).
    SelectPrev,
    /// Alt+↓: the next message (past the last: back to the composer).
    SelectNext,
}

fn key() -> impl Strategy<Value = Key> {
    prop_oneof![
        3 => Just(Key::PageUp),
        2 => Just(Key::PageDown),
        2 => Just(Key::ShiftUp),
        1 => Just(Key::ShiftDown),
        1 => Just(Key::Home),
        1 => Just(Key::End),
        2 => Just(Key::SelectPrev),
        1 => Just(Key::SelectNext),
    ]
}

fn state() -> State {
    let target = TargetInfo::new("demo", "demo", Api::Chat);
    let cfg = Config::parse("", std::path::Path::new("config.toml")).unwrap();
    let theme = Theme::load("dark", None, true).unwrap();
    State::new(target, TurnSettings { stream: true, ..TurnSettings::default() }, cfg, theme, "dark")
}

fn answer(text: &str) -> Message {
    let mut m = Message::with_text(Role::Assistant, text);
    m.model = Some("demo".into());
    m.status = MessageStatus::Complete;
    m.timing.total_ms = Some(1200);
    m
}

fn build(specs: &[Spec]) -> State {
    let mut s = state();
    for (n, sp) in specs.iter().enumerate() {
        let t = &mut s.transcript;
        match sp {
            Spec::User(b) => {
                t.push_message(Message::user(BLOCKS[*b]));
            }
            Spec::Answer(bs) => {
                let text: Vec<&str> = bs.iter().map(|b| BLOCKS[*b]).collect();
                t.push_message(answer(&text.join("\n\n")));
            }
            Spec::Reasoning { blocks, open } => {
                let mut m = answer("The answer after thinking.");
                m.main_mut().reasoning = blocks.iter().map(|b| BLOCKS[*b]).collect::<Vec<_>>().join("\n");
                let id = t.push_message(m);
                if *open {
                    s.reasoning_open.insert(id);
                }
            }
            Spec::Tools(k) => {
                let mut m = answer("");
                let calls: Vec<ToolCall> = (0..*k)
                    .map(|i| ToolCall {
                        id: format!("call_{n}_{i}"),
                        name: "read_file".into(),
                        arguments: format!("{{\"path\":\"file{i}.txt\"}}"),
                        output: Some("line one\nline two\nline three\nline four\nline five".into()),
                        status: if i % 2 == 0 { ToolStatus::Done } else { ToolStatus::Denied },
                        duration_ms: Some(12),
                        ..ToolCall::default()
                    })
                    .collect();
                m.main_mut().tool_calls.clone_from(&calls);
                t.push_message(m);
                for c in &calls {
                    t.push_message(Message::answer_to(c));
                }
            }
            Spec::Hosted => {
                let mut m = answer("Found it.");
                m.api = Some("responses".into());
                m.items = vec![
                    json!({"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"rust ratatui"}}),
                    json!({"type":"code_interpreter_call","id":"ci_1","status":"completed","code":"print(1)\nprint(2)"}),
                    json!({"type":"something_new","id":"x_1","status":"completed"}),
                    json!({"type":"message","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Found it."}]}),
                ];
                t.push_message(m);
            }
            Spec::Notice(b) => {
                t.push_notice(if b % 2 == 0 { NoticeKind::Info } else { NoticeKind::Error }, BLOCKS[*b]);
            }
            Spec::Refused => {
                let mut m = answer("");
                m.main_mut().refusal = "I can't help with that.".into();
                m.main_mut().finish_reason = Some("content_filter".into());
                t.push_message(m);
            }
            Spec::Edit => {
                let at = t.cells.len().saturating_sub(2);
                t.branch_off(at);
                t.push_message(Message::user("an edited prompt"));
                t.push_message(answer("A new answer to the edited prompt."));
            }
        }
    }
    s
}

fn press(s: &mut State, k: Key) {
    let (code, mods) = match k {
        Key::PageUp => (KeyCode::PageUp, KeyModifiers::NONE),
        Key::PageDown => (KeyCode::PageDown, KeyModifiers::NONE),
        Key::ShiftUp => (KeyCode::Up, KeyModifiers::SHIFT),
        Key::ShiftDown => (KeyCode::Down, KeyModifiers::SHIFT),
        Key::Home => (KeyCode::Home, KeyModifiers::CONTROL),
        Key::End => (KeyCode::End, KeyModifiers::CONTROL),
        Key::SelectPrev => (KeyCode::Up, KeyModifiers::ALT),
        Key::SelectNext => (KeyCode::Down, KeyModifiers::ALT),
    };
    s.apply(Msg::Key(KeyEvent::new(code, mods)));
}

/// The settled view measured against the cache's heights.
struct View {
    /// Global index of the top line shown.
    top: usize,
    /// Largest top there can be.
    max_top: usize,
    total: usize,
    rows: usize,
}

fn measure(s: &State, cache: &mut RenderCache) -> View {
    let (_, _, w, h) = s.view.transcript;
    let cols = palaver::ui::transcript::body_cols(s, w);
    let heights: Vec<usize> =
        (0..s.transcript.cells.len()).map(|i| cache.cell(s, i, cols).map_or(1, |c| c.height())).collect();
    let total: usize = heights.iter().sum();
    let rows = usize::from(h);
    let top = heights[..s.view.top.cell].iter().sum::<usize>() + usize::try_from(s.view.top.line).unwrap();
    View { top, max_top: total.saturating_sub(rows), total, rows }
}

/// Checks the view after a key; `before` is the top line before it.
fn check(s: &State, v: &View, buf: &Buffer, k: Option<Key>, before: usize, was_bottom: bool) -> Result<(), String> {
    let ctx = || format!("key {k:?}: top {} (before {before}), max {}, rows {}", v.top, v.max_top, v.rows);
    if v.top > v.max_top {
        return Err(format!("the view is past the last line: {}", ctx()));
    }
    if s.view.at_bottom != (v.top == v.max_top) {
        return Err(format!("at_bottom {} is wrong: {}", s.view.at_bottom, ctx()));
    }
    // The rows drawn are the rows the cache measured from the top.
    let drawn: usize = s.view.cells.iter().map(|c| usize::from(c.bottom - c.top)).sum();
    if drawn != v.rows.min(v.total - v.top) {
        return Err(format!("{drawn} rows drawn, {} measured: {}", v.rows.min(v.total - v.top), ctx()));
    }
    let page = v.rows.saturating_sub(2).max(1);
    let want = match k {
        Some(Key::PageUp) => Some(before.saturating_sub(page)),
        Some(Key::ShiftUp) => Some(before.saturating_sub(3)),
        Some(Key::PageDown) if !was_bottom => Some((before + page).min(v.max_top)),
        Some(Key::ShiftDown) if !was_bottom => Some((before + 3).min(v.max_top)),
        Some(Key::PageDown | Key::ShiftDown) => Some(v.max_top),
        Some(Key::Home) => Some(0),
        Some(Key::End) => Some(v.max_top),
        _ => None,
    };
    if let Some(want) = want {
        if v.top != want {
            return Err(format!("expected top {want}: {}", ctx()));
        }
    }
    if matches!(k, Some(Key::SelectPrev | Key::SelectNext)) {
        if let Some(id) = s.selected {
            let Some(rows) = s.view.cells.iter().find(|c| c.id == id) else {
                return Err(format!("the selected message {id} is not on screen: {}", ctx()));
            };
            let x = s.view.transcript.0;
            let marked = (rows.top..rows.bottom).any(|y| buf[(x, y)].symbol() == "▌");
            if !marked {
                return Err(format!("the selected message {id} is not marked: {}", ctx()));
            }
        }
    }
    Ok(())
}

fn run_case(specs: &[Spec], w: u16, h: u16, keys: &[Key]) -> Result<(), String> {
    let mut s = build(specs);
    if s.transcript.cells.is_empty() {
        return Ok(());
    }
    let mut cache = RenderCache::default();
    let buf = screen::settle(&mut s, w, h, &mut cache);
    let mut v = measure(&s, &mut cache);
    check(&s, &v, &buf, None, v.top, true)?;
    for &k in keys {
        let (before, was_bottom) = (v.top, s.view.at_bottom);
        press(&mut s, k);
        let buf = screen::settle(&mut s, w, h, &mut cache);
        v = measure(&s, &mut cache);
        check(&s, &v, &buf, Some(k), before, was_bottom)?;
    }
    // From the bottom, paging up shows every line and ends on the first.
    press(&mut s, Key::End);
    screen::settle(&mut s, w, h, &mut cache);
    v = measure(&s, &mut cache);
    let mut seen_from = v.top;
    for _ in 0..v.total + 1 {
        press(&mut s, Key::PageUp);
        screen::settle(&mut s, w, h, &mut cache);
        let next = measure(&s, &mut cache);
        if next.top + next.rows < seen_from {
            return Err(format!("PgUp skipped lines {}..{seen_from}", next.top + next.rows));
        }
        seen_from = next.top;
        if next.top == 0 {
            break;
        }
    }
    if seen_from != 0 {
        return Err(format!("PgUp never reached the first line (stuck at {seen_from})"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_line_is_reachable_with_every_scroll_key(
        specs in prop::collection::vec(spec(), 1..14),
        w in 20u16..=250,
        h in 8u16..=60,
        keys in prop::collection::vec(key(), 1..24),
    ) {
        if let Err(e) = run_case(&specs, w, h, &keys) {
            return Err(TestCaseError::fail(e));
        }
    }
}

/// The report of issue 14: four demo turns at 120×40; the sum of a user cell and a reply was
/// exactly one screen, so paging up jumped back to the bottom and Ctrl+Home landed on the end.
#[test]
fn four_demo_turns_page_up_to_the_first_line() {
    let specs: Vec<Spec> = (0..4).flat_map(|_| [Spec::User(0), Spec::Answer(vec![10, 1, 3, 5, 6, 0])]).collect();
    for (w, h) in [(120, 40), (80, 24), (60, 20), (250, 60), (20, 8)] {
        let keys = [Key::End, Key::PageUp, Key::PageUp, Key::PageUp, Key::PageUp, Key::PageUp, Key::PageUp, Key::Home];
        run_case(&specs, w, h, &keys).unwrap();
    }
}

/// Found by the property test: a reply whose top was scrolled off counted as on screen (its
/// drawn rows fitted the view), so selecting it, or the prompt above it, scrolled nowhere and
/// the prompt's only visible row was its blank separator, left unmarked.
#[test]
fn a_selected_message_whose_top_is_scrolled_off_is_scrolled_to() {
    let specs = vec![Spec::User(0), Spec::Answer(vec![6, 6, 8, 5, 8])];
    run_case(&specs, 135, 23, &[Key::SelectPrev, Key::PageUp, Key::SelectPrev]).unwrap();
}
