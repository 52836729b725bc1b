//! Snapshots of the compare screen over ratatui's `TestBackend`: 2, 3 and 4 columns mid-stream
//! and finished, the metrics strip, the diff view, full width, at 120×40 and 200×50. States are
//! built by feeding `Msg`s to `State::apply` (no network) and drawn with `ui::draw`.
//! Regenerate with `INSTA_UPDATE=always cargo test --test ui_compare_snapshots`, then read them.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::compare::{CompareEffect, CompareMsg};
use palaver::app::tools::{Owner, ToolMsg, ToolSet};
use palaver::app::{Effect, Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::message::ErrorInfo;
use palaver::engine::target::TurnSettings;
use palaver::tools::{Registry, ToolOutput};
use palaver::ui::{self, RenderCache, theme::Role, theme::Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Modifier;
use serde_json::{Value, json};

const SIZES: [(u16, u16); 2] = [(120, 40), (200, 50)];

const CONFIG: &str = r#"
[models.demo]
price = { input = 0.15, cached_input = 0.075, output = 0.60 }
[models.demo-reasoning]
price = { input = 1.10, output = 4.40 }
"#;

const MARKDOWN: &str = "## A quick tour\n\nThis answer is **scripted**, so it looks the same every time.\n\n- **Bold** and *italic* text\n- Inline `code` spans\n\n```rust\nfn main() {\n    println!(\"hello\");\n}\n```\n\nAsk another question.";

const REASONED: &str = "**Short answer:** reasoning arrives before the reply, and its tokens are reported as `reasoning_tokens` in the usage.\n\nThe answer itself stays short, so the difference is easy to see.";

const TERSE: &str = "## A short tour\n\nThis answer is **brief**, so it reads the same every time.\n\n- **Bold** text\n- Inline `code` spans\n\nAsk again.";

struct Sim {
    s: State,
    now: u64,
    /// (generation, column, id) of each column's reply in flight.
    live: Vec<(u64, usize, u64)>,
    cache: RenderCache,
}

fn target(model: &str) -> TargetInfo {
    TargetInfo::new("demo", model, Api::Chat)
}

impl Sim {
    fn new(models: &[&str]) -> Self {
        let cfg = Config::parse(CONFIG, std::path::Path::new("config.toml")).unwrap();
        let theme = Theme::load("dark", None, false).unwrap();
        let settings = TurnSettings { stream: true, ..TurnSettings::default() };
        let mut s = State::new(target(models[0]), settings, cfg, theme, "dark");
        s.open_compare(models.iter().map(|m| target(m)).collect()).unwrap();
        Self { s, now: 1000, live: Vec::new(), cache: RenderCache::default() }
    }

    fn key(&mut self, code: KeyCode) -> Vec<Effect> {
        self.s.apply(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    /// Sends a prompt to every column; the replies start at the current clock.
    fn send(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c));
        }
        let fx = self.key(KeyCode::Enter);
        self.live = fx
            .iter()
            .filter_map(|e| match e {
                Effect::Compare(CompareEffect::Start { generation, column, id, .. }) => {
                    Some((*generation, *column, *id))
                }
                _ => None,
            })
            .collect();
        for &(generation, column, id) in &self.live.clone() {
            self.s.apply(Msg::Compare(CompareMsg::Started { generation, column, id, now_ms: self.now }));
        }
    }

    fn wire(&mut self, column: usize, event: WireEvent) {
        let (generation, column, id) = self.live[column];
        self.s.apply(Msg::Compare(CompareMsg::Wire {
            generation,
            column,
            id,
            event: Box::new(event),
            now_ms: self.now,
        }));
    }

    /// Moves the clock to `ms` after the send and feeds events stamped with it.
    fn events(&mut self, column: usize, at: u64, events: Vec<StreamEvent>) {
        self.now = self.now.max(1000 + at);
        self.wire(column, WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: at });
    }

    /// Streams `text` in `pieces` deltas from `from` to `to` ms.
    fn stream(&mut self, column: usize, text: &str, pieces: usize, from: u64, to: u64) {
        let words: Vec<&str> = text.split_inclusive(' ').collect();
        let per = words.len().div_ceil(pieces).max(1);
        let chunks: Vec<String> = words.chunks(per).map(|c| c.concat()).collect();
        let n = chunks.len().max(1) as u64;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let at = from + (to - from) * i as u64 / n;
            self.events(column, at, vec![StreamEvent::Text { choice: 0, delta: chunk.into() }]);
        }
    }

    fn reasoning(&mut self, column: usize, at: u64, text: &str) {
        self.events(column, at, vec![StreamEvent::Reasoning { choice: 0, delta: text.into() }]);
    }

    fn finish(&mut self, column: usize, at: u64, reason: &str, usage: Value) {
        self.events(
            column,
            at,
            vec![StreamEvent::Finish { choice: 0, reason: reason.into() }, StreamEvent::Usage(usage), StreamEvent::End],
        );
        self.wire(column, WireEvent::Closed { at_ms: at });
    }

    fn fail(&mut self, column: usize, at: u64, status: u16, message: &str) {
        self.now = self.now.max(1000 + at);
        let err = ErrorInfo { status: Some(status), message: message.into(), kind: "http".into(), body: Value::Null };
        self.wire(column, WireEvent::Failed(err));
    }

    /// Streams tool calls (name, arguments) into `column`'s reply and ends it asking for them.
    fn tool_calls(&mut self, column: usize, at: u64, calls: &[(&str, &str)], usage: Value) {
        let mut events: Vec<StreamEvent> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                StreamEvent::ToolCall(Box::new(palaver::api::event::CallFragment {
                    choice: 0,
                    slot: u32::try_from(i).unwrap(),
                    id: Some(format!("call_{i}")),
                    name: Some((*name).into()),
                    arguments: (*args).into(),
                    extra: None,
                    kind: None,
                    index: None,
                }))
            })
            .collect();
        events.push(StreamEvent::Finish { choice: 0, reason: "tool_calls".into() });
        events.push(StreamEvent::Usage(usage));
        events.push(StreamEvent::End);
        self.events(column, at, events);
        self.wire(column, WireEvent::Closed { at_ms: at });
    }

    /// Reports call `index` of `column`'s reply done; when that settles the column's calls, its
    /// follow-up request starts at the current clock.
    fn tool_done(&mut self, column: usize, at: u64, index: usize, output: &str, ms: u64) {
        self.now = self.now.max(1000 + at);
        let (generation, column, id) = self.live[column];
        let owner = Owner::Column { generation, column };
        let output = ToolOutput::ok(output);
        let fx = self.s.apply(Msg::Tools(ToolMsg::Done { owner, id, index, output, duration_ms: ms }));
        for e in fx {
            if let Effect::Compare(CompareEffect::Start { generation, column, id, .. }) = e {
                self.live[column] = (generation, column, id);
                self.s.apply(Msg::Compare(CompareMsg::Started { generation, column, id, now_ms: self.now }));
            }
        }
    }

    fn tick(&mut self, at: u64) {
        self.now = self.now.max(1000 + at);
        self.s.apply(Msg::Tick { now_ms: self.now });
    }

    fn terminal(&mut self, w: u16, h: u16) -> Terminal<TestBackend> {
        self.s.apply(Msg::Resize { width: w, height: h });
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        // Draw twice: the first draw reports the layout, the second shows the settled view.
        for _ in 0..2 {
            let mut report = None;
            term.draw(|f| report = Some(ui::draw(f, &self.s, &mut self.cache))).unwrap();
            self.s.apply(Msg::Viewport(report.unwrap()));
        }
        term
    }

    fn render(&mut self, w: u16, h: u16) -> String {
        let term = self.terminal(w, h);
        text_of(&term, 0, h)
    }

    fn snap_all(&mut self, name: &str) {
        for (w, h) in SIZES {
            let screen = self.render(w, h);
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen);
        }
    }
}

fn text_of(term: &Terminal<TestBackend>, from: u16, to: u16) -> String {
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in from..to {
        let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn usage(prompt: u64, completion: u64, cached: u64, reasoning: u64) -> Value {
    json!({"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt+completion,
        "prompt_tokens_details":{"cached_tokens":cached},
        "completion_tokens_details":{"reasoning_tokens":reasoning}})
}

const THINKING: &str = "The user asked for a tour. First, show markdown. Second, explain where reasoning tokens are counted. Third, keep the answer short.";

/// Two columns part way: `demo` mid-markdown, `demo-reasoning` still thinking.
fn two_mid_stream() -> Sim {
    let mut sim = Sim::new(&["demo", "demo-reasoning"]);
    sim.send("Give me a quick tour");
    sim.stream(0, &MARKDOWN[..120], 6, 180, 900);
    sim.reasoning(1, 420, THINKING);
    sim.tick(1000);
    sim
}

fn two_finished() -> Sim {
    let mut sim = two_mid_stream();
    sim.stream(0, &MARKDOWN[120..], 6, 1000, 1600);
    sim.finish(0, 1650, "stop", usage(30, 192, 15, 24));
    sim.stream(1, REASONED, 4, 1200, 2100);
    sim.finish(1, 2150, "stop", usage(32, 120, 0, 58));
    sim
}

#[test]
fn two_columns_mid_stream() {
    two_mid_stream().snap_all("two_mid_stream");
}

#[test]
fn two_columns_finished() {
    two_finished().snap_all("two_finished");
}

fn three_columns() -> Sim {
    let mut sim = Sim::new(&["demo", "demo-reasoning", "demo-error"]);
    sim.send("Give me a quick tour");
    sim.stream(0, &MARKDOWN[..160], 8, 200, 1000);
    sim.reasoning(1, 380, THINKING);
    sim.stream(1, &REASONED[..60], 3, 900, 1100);
    sim.stream(2, "Let me start on that. Here is the first part of an answer that", 3, 250, 600);
    sim.tick(1200);
    sim
}

#[test]
fn three_columns_mid_stream_and_finished() {
    let mut sim = three_columns();
    sim.snap_all("three_mid_stream");
    sim.stream(0, &MARKDOWN[160..], 4, 1200, 1600);
    sim.finish(0, 1650, "stop", usage(30, 192, 15, 24));
    sim.stream(1, &REASONED[60..], 3, 1200, 1900);
    sim.finish(1, 2000, "stop", usage(32, 120, 0, 58));
    sim.fail(2, 1300, 429, "Rate limit reached for demo-error. Please try again in 20s.");
    sim.snap_all("three_finished");
}

fn four_columns() -> Sim {
    let mut sim = Sim::new(&["demo", "demo-reasoning", "demo-slow", "demo-safety"]);
    sim.send("Give me a quick tour");
    sim.stream(0, &MARKDOWN[..140], 6, 150, 900);
    sim.reasoning(1, 300, THINKING);
    sim.stream(2, "This is a long answer that arrives at a few tokens a second so you can watch it", 8, 700, 1400);
    sim.events(
        3,
        100,
        vec![StreamEvent::PromptFilter(
            json!([{"prompt_index":0,"content_filter_results":{"jailbreak":{"filtered":false,"detected":true}}}]),
        )],
    );
    sim.stream(3, "I can help with part of that. ", 2, 300, 500);
    sim.tick(1500);
    sim
}

#[test]
fn four_columns_mid_stream_and_finished() {
    let mut sim = four_columns();
    sim.snap_all("four_mid_stream");
    sim.stream(0, &MARKDOWN[140..], 4, 1500, 1800);
    sim.finish(0, 1850, "stop", usage(30, 192, 15, 24));
    sim.stream(1, REASONED, 3, 1500, 2300);
    sim.finish(1, 2400, "stop", usage(32, 120, 0, 58));
    sim.stream(2, " and cancel it if you get bored, which is the point.", 4, 1500, 3900);
    sim.finish(2, 4000, "stop", usage(28, 40, 0, 0));
    sim.finish(3, 1600, "content_filter", usage(31, 9, 0, 0));
    sim.snap_all("four_finished");
}

#[test]
fn metrics_strip_alone_and_best_highlighted() {
    let mut sim = two_finished();
    for (w, h) in SIZES {
        let term = sim.terminal(w, h);
        // The strip sits above the composer (3 rows) and the status bar.
        let top = h - 1 - 3 - 7;
        let strip = text_of(&term, top, top + 7);
        insta::assert_snapshot!(format!("metrics_strip_{w}x{h}"), strip);
    }
    // The best value of a row is bold in the success colour; the others are not.
    let term = sim.terminal(120, 40);
    let buf = term.backend().buffer();
    let row = 40 - 1 - 3 - 7 + 2; // the ttft row
    let star: Vec<u16> = (0..120).filter(|&x| buf[(x, row)].symbol() == "★").collect();
    assert_eq!(star.len(), 1, "one best per row");
    assert!(buf[(star[0], row)].modifier.contains(Modifier::BOLD));
    let success = sim.s.theme.style(Role::Success);
    assert_eq!(buf[(star[0], row)].fg, success.fg.unwrap_or_default());
}

#[test]
fn diff_view_of_two_columns() {
    let mut sim = Sim::new(&["demo", "demo-terse"]);
    sim.send("Give me a quick tour");
    sim.stream(0, MARKDOWN, 5, 200, 1200);
    sim.finish(0, 1250, "stop", usage(30, 192, 15, 24));
    sim.stream(1, TERSE, 5, 150, 700);
    sim.finish(1, 750, "stop", usage(30, 60, 15, 0));
    sim.key(KeyCode::Tab);
    sim.key(KeyCode::Char('d'));
    sim.snap_all("diff_view");
    // Removed words are struck through, added ones underlined (visible without colour too).
    let term = sim.terminal(120, 40);
    let buf = term.backend().buffer();
    let mut struck = String::new();
    let mut under = String::new();
    for y in 0..40 {
        for x in 0..120 {
            let c = &buf[(x, y)];
            if c.modifier.contains(Modifier::CROSSED_OUT) {
                struck.push_str(c.symbol());
            }
            if c.modifier.contains(Modifier::UNDERLINED) {
                under.push_str(c.symbol());
            }
        }
    }
    assert!(struck.contains("quick"), "removed: {struck}");
    assert!(under.contains("short"), "added: {under}");
    assert!(!struck.contains("Inline"), "shared words are plain");
}

#[test]
fn full_width_column() {
    let mut sim = two_finished();
    sim.key(KeyCode::Tab);
    sim.key(KeyCode::Tab);
    sim.key(KeyCode::Char('f'));
    sim.snap_all("full_width");
}

#[test]
fn synchronised_scrolling_keeps_turns_together() {
    let mut sim = two_finished();
    sim.send("And once more");
    sim.stream(0, MARKDOWN, 3, 100, 400);
    sim.finish(0, 450, "stop", usage(230, 192, 200, 0));
    sim.stream(1, &format!("{TERSE}\n\n{REASONED}\n\n{TERSE}"), 3, 100, 600);
    sim.finish(1, 650, "stop", usage(190, 80, 0, 20));
    sim.render(120, 40);
    sim.key(KeyCode::Tab);
    sim.key(KeyCode::Char('s'));
    // A few lines up in the focused column: the other column keeps the same place in the same turn.
    for _ in 0..4 {
        sim.s.apply(Msg::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::SHIFT)));
    }
    let screen = sim.render(120, 40);
    insta::assert_snapshot!("sync_scrolled_120x40", screen);
}

const TOOLS_ANSWER: &str = "I called 2 tools and got the results back:\n\n- `list_directory` returned 3 lines; first line: `Cargo.toml`\n- `read_file` returned 4 lines; first line: `[package]`\n\nThat is what this directory holds.";

/// `demo-tools` running its tool loop in column 1 (one call done, one running), `demo`
/// answering in column 2.
fn tools_running() -> Sim {
    let mut sim = Sim::new(&["demo-tools", "demo"]);
    sim.s.tools.set = ToolSet(std::sync::Arc::new(Registry::builtins()));
    sim.s.tools.flags.mode = palaver::engine::tool_loop::ToolMode::Auto;
    sim.send("What is in this directory?");
    sim.tool_calls(
        0,
        300,
        &[("list_directory", r#"{"path":"."}"#), ("read_file", r#"{"path":"Cargo.toml"}"#)],
        // The six tool definitions alone are about 360 tokens of every prompt.
        usage(420, 24, 0, 0),
    );
    sim.stream(1, TERSE, 4, 200, 900);
    sim.tool_done(0, 340, 0, "Cargo.toml\nsrc/\ntests/", 12);
    sim.tick(1000);
    sim
}

#[test]
fn a_column_with_tool_cards() {
    let mut sim = tools_running();
    let screen = sim.render(120, 40);
    insta::assert_snapshot!("tool_cards_running_120x40", screen);
    // The read finishes: the follow-up carries both results and the model answers.
    sim.tool_done(0, 1100, 1, "[package]\nname = \"palaver\"\nversion = \"0.1.0\"\nedition = \"2024\"", 8);
    sim.stream(0, TOOLS_ANSWER, 5, 1300, 1900);
    sim.finish(0, 1950, "stop", usage(560, 70, 0, 0));
    sim.finish(1, 1000, "stop", usage(400, 60, 15, 0));
    sim.snap_all("tool_cards_finished");
}

#[test]
fn flow_inspector_on_a_column() {
    let mut sim = two_finished();
    sim.key(KeyCode::F(3));
    sim.key(KeyCode::Tab);
    sim.snap_all("flow_inspector_column_b");
}

#[test]
fn a_column_whose_server_names_another_model_shows_both() {
    let mut sim = Sim::new(&["demo", "demo-reasoning"]);
    sim.send("hi");
    let meta = palaver::api::event::ResponseMeta { model: Some("demo-reasoning-0324".into()), ..Default::default() };
    sim.events(1, 10, vec![StreamEvent::Meta(Box::new(meta))]);
    sim.stream(0, "The first answer.", 2, 20, 40);
    sim.stream(1, "The second answer.", 2, 20, 40);
    sim.finish(0, 50, "stop", usage(5, 4, 0, 0));
    sim.finish(1, 60, "stop", usage(5, 4, 0, 0));
    let screen = sim.render(120, 30);
    assert!(screen.contains("served demo-reasoning-0324"), "{screen}");
    insta::assert_snapshot!("served_model_column_120x30", screen);
}

/// One frame drawn as the chat screen draws it, within a frame budget of `lines` markdown
/// lines; whether the budget ran short.
fn budget_frame(sim: &mut Sim, term: &mut Terminal<TestBackend>, lines: usize) -> bool {
    let budget = palaver::ui::frame_budget::FrameBudget::layout_lines(lines);
    let mut report = None;
    term.draw(|f| report = Some(ui::draw(f, &sim.s, &mut sim.cache))).unwrap();
    sim.s.apply(Msg::Viewport(report.unwrap()));
    budget.starved()
}

#[test]
fn four_columns_bursting_past_the_frame_budget_advance_together_and_end_whole() {
    // Four answers of 150 lines each arrive between two frames.
    let long: String = (0..150).map(|i| format!("Line {i} of a long answer, with *some* markdown.\n\n")).collect();
    let mut sim = Sim::new(&["demo", "demo-reasoning", "demo-slow", "demo-safety"]);
    sim.send("A long burst");
    for column in 0..4 {
        sim.stream(column, &long, 1, 100, 100);
    }
    sim.s.apply(Msg::Resize { width: 200, height: 50 });
    let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
    assert!(budget_frame(&mut sim, &mut term, 40), "a burst of 600 lines does not fit a 40-line frame");
    // After one frame every column shows its answer's start, and none has reached its end.
    let screen = text_of(&term, 0, 50);
    assert_eq!(screen.matches("Line 0 of a long answer").count(), 4, "{screen}");
    assert!(!screen.contains("Line 149 "), "{screen}");
    let mut frames = 1;
    while budget_frame(&mut sim, &mut term, 40) {
        frames += 1;
        assert!(frames < 100, "the columns never caught up");
    }
    assert!(frames >= 4 * 300 / 40 / 2, "{frames} frames");
    let screen = text_of(&term, 0, 50);
    assert_eq!(screen.matches("Line 149 of a long answer").count(), 4, "every column caught up:\n{screen}");
    // Finished, then drawn within the budget until it stops being short: the same screen as a
    // fresh cache drawn without any bound.
    for column in 0..4 {
        sim.finish(column, 200, "stop", usage(10, 1500, 0, 0));
    }
    while budget_frame(&mut sim, &mut term, 40) {}
    let bounded = text_of(&term, 0, 50);
    sim.cache = RenderCache::default();
    assert_eq!(bounded, sim.render(200, 50));
}

#[test]
fn a_column_seeded_with_a_long_history_measures_only_its_last_turn_each_frame() {
    let cfg = Config::parse(CONFIG, std::path::Path::new("config.toml")).unwrap();
    let theme = Theme::load("dark", None, false).unwrap();
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    let mut s = State::new(target("demo"), settings, cfg, theme, "dark");
    for i in 0..300 {
        s.transcript.push_message(palaver::engine::message::Message::user(&format!("question {i}")));
        let mut m = palaver::engine::message::Message::with_text(
            palaver::engine::message::Role::Assistant,
            &format!("Answer {i}, with a **bold** word.\n"),
        );
        m.status = palaver::engine::message::MessageStatus::Complete;
        s.transcript.push_message(m);
    }
    let mut sim = Sim { s, now: 1000, live: Vec::new(), cache: RenderCache::default() };
    sim.send("/here demo-reasoning");
    assert_eq!(sim.s.compare.active.as_ref().map(|c| c.columns.len()), Some(2));
    let measured = |sim: &Sim| sim.cache.compare.columns.iter().map(|c| c.measured).sum::<u64>();
    sim.render(120, 40);
    let after_open = measured(&sim);
    assert!(after_open >= 1200, "the first draw measures every seeded cell: {after_open}");
    // The new column streams: each frame measures its last turn, not the 600 cells before.
    for k in 0..5 {
        // (The one reply in flight is column 1's.)
        sim.stream(0, &format!("Part {k} of the answer.\n\n"), 1, 100 + k * 10, 100 + k * 10);
        let before = measured(&sim);
        sim.render(120, 40);
        let per_frame = (measured(&sim) - before) / 2;
        assert!(per_frame <= 4, "{per_frame} cells measured in a frame");
    }
    // Scrolled to the top, the seeded history is where it was, as a fresh cache lays it out.
    if let Some(c) = sim.s.compare.active.as_mut() {
        c.columns.iter_mut().for_each(|col| col.scroll = Some(0));
    }
    let kept = sim.render(120, 40);
    assert!(kept.contains("question 0"), "{kept}");
    sim.cache = RenderCache::default();
    assert_eq!(kept, sim.render(120, 40));
    // An old message changed in place (not a new shape) is measured again.
    if let Some(c) = sim.s.compare.active.as_mut() {
        let id = c.columns[0].transcript.cells[1].id();
        if let Some(m) = c.columns[0].transcript.cells.message_mut(id) {
            m.choices[0].content = "Answer 0, now\nover\nfour\nlines.\n".into();
            m.revision += 1;
        }
    }
    let changed = sim.render(120, 40);
    assert!(changed.contains("four"), "{changed}");
    sim.cache = RenderCache::default();
    assert_eq!(changed, sim.render(120, 40));
}
