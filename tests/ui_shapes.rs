//! Issue 41's invariant for every answer shape (tests/common/shapes.rs): an answer streamed
//! delta by delta through the chat screen (`State::apply`, `ui::draw` into a `TestBackend`, the
//! render cache) in bursts of odd sizes, each frame under a small layout or highlighting budget
//! so the rendering falls behind and catches up as it does on screen, ends byte-identical to
//! rendering the whole answer fresh: every row of the reply (text and styles), and the screen.

// Test helpers panic on setup failures by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/shapes.rs"]
mod shapes;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::msg::ViewReport;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::target::TurnSettings;
use palaver::ui::frame_budget::FrameBudget;
use palaver::ui::{self, RenderCache, theme::Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::text::Line;
use shapes::{Rng, Shape};

/// Deltas an answer has in these tests (about 24 KB).
const DELTAS: usize = 3_000;

/// Screens from wide to narrow (a narrow one wraps every table row, code line and word).
const SIZES: [(u16, u16); 4] = [(120, 40), (80, 24), (41, 16), (26, 12)];

fn state(colour: bool) -> State {
    let target = TargetInfo::new("bench", "bench", Api::Chat);
    let theme = Theme::load("dark", None, !colour).unwrap();
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    State::new(target, settings, Config::default(), theme, "dark")
}

/// Types a prompt and starts its reply; returns the reply's id.
fn send(s: &mut State) -> u64 {
    for c in "go".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    let id = s.live.as_ref().map(|l| l.id).unwrap();
    s.apply(Msg::RequestStarted { id, now_ms: 1000 });
    id
}

fn events(s: &mut State, id: u64, events: Vec<StreamEvent>) {
    let event = WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 50 };
    s.apply(Msg::Wire { id, event: Box::new(event), now_ms: 1050 });
}

/// One frame as the loop draws it: under `budget` (none: unbounded), the view reported back.
/// Returns whether the frame was short of budget (the loop draws again), the report, and the
/// frame's buffer (not the backend's: its cells under a wide glyph keep what was there before).
fn frame(
    s: &mut State,
    term: &mut Terminal<TestBackend>,
    cache: &mut RenderCache,
    budget: Option<FrameBudget>,
) -> (bool, ViewReport, Buffer) {
    let mut report = None;
    let buffer = term.draw(|f| report = Some(ui::draw(f, s, cache))).unwrap().buffer.clone();
    let short = budget.is_some_and(|b| b.starved());
    let report = report.unwrap();
    s.apply(Msg::Viewport(report.clone()));
    (short, report, buffer)
}

/// A small budget, of layout or of highlighting lines in turn, so both fall behind.
fn small_budget(rng: &mut Rng) -> FrameBudget {
    let n = 1 + rng.below(12);
    if rng.below(2) == 0 { FrameBudget::layout_lines(n) } else { FrameBudget::lines(n) }
}

/// Every body row of the reply (the last cell), as the cache holds it for `cols` columns.
fn rows(s: &State, cache: &mut RenderCache, cols: usize) -> Vec<Line<'static>> {
    let cell = cache.cell(s, s.transcript.cells.len() - 1, cols).unwrap();
    (0..cell.body_len()).map(|i| cell.body_line(i).cloned().unwrap()).collect()
}

fn first_difference(got: &[Line<'static>], want: &[Line<'static>]) -> String {
    let i = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
    format!(
        "{} rows streamed, {} rendered whole; first difference at row {i}:\n streamed {:?}\n whole    {:?}",
        got.len(),
        want.len(),
        got.get(i),
        want.get(i)
    )
}

/// Streams `shape` into a `w`×`h` chat screen in bursts with frames between, ends it, draws until
/// caught up; then checks the reply's rows and the screen against a fresh render of the end.
/// Returns how many frames fell behind while it streamed.
fn streams_as_the_whole_render(shape: Shape, colour: bool, w: u16, h: u16) -> usize {
    let text = shapes::text(shape, DELTAS);
    let deltas = shapes::deltas(&text);
    let mut s = state(colour);
    s.apply(Msg::Resize { width: w, height: h });
    let id = send(&mut s);
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut cache = RenderCache::default();
    let mut rng = Rng::new(u64::from(w) * 1000 + u64::from(h));
    let (mut at, mut short) = (0, 0);
    while at < deltas.len() {
        // A burst of 1 to 40 deltas, as they arrive between two wake-ups of the loop.
        let n = (1 + rng.below(40)).min(deltas.len() - at);
        let burst = deltas[at..at + n].iter().map(|d| StreamEvent::Text { choice: 0, delta: (*d).into() }).collect();
        events(&mut s, id, burst);
        at += n;
        if rng.below(3) == 0 {
            let budget = small_budget(&mut rng);
            short += usize::from(frame(&mut s, &mut term, &mut cache, Some(budget)).0);
        }
    }
    events(&mut s, id, vec![StreamEvent::Finish { choice: 0, reason: "stop".into() }, StreamEvent::End]);
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 1234 }), now_ms: 1100 });
    assert_eq!(s.transcript.cells.last().and_then(|c| c.message()).map(|m| m.text().to_owned()), Some(text.clone()));
    // The end: frames until the screen has caught up (the final check may run off the frame).
    let mut frames = 0;
    let report = loop {
        frames += 1;
        let budget = small_budget(&mut rng);
        if let (false, report, _) = frame(&mut s, &mut term, &mut cache, Some(budget)) {
            break report;
        }
        assert!(frames < 20_000, "{}: the screen never caught up", shape.name());
        if frames % 64 == 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    };
    let cols = ui::transcript::body_cols(&s, report.transcript.2);
    let streamed = rows(&s, &mut cache, cols);
    let whole = rows(&s, &mut RenderCache::default(), cols);
    assert!(
        streamed == whole,
        "{} at {w}x{h} (colour {colour}): {}",
        shape.name(),
        first_difference(&streamed, &whole)
    );
    // The screen as drawn from the streamed cache, and from a fresh one.
    let (_, _, drawn) = frame(&mut s, &mut term, &mut cache, None);
    let mut fresh = Terminal::new(TestBackend::new(w, h)).unwrap();
    let (_, _, want) = frame(&mut s, &mut fresh, &mut RenderCache::default(), None);
    assert_eq!(drawn, want, "{} at {w}x{h}: the screens differ", shape.name());
    short
}

fn check(shape: Shape) {
    let mut short = 0;
    for (k, (w, h)) in SIZES.into_iter().enumerate() {
        // Colour at most sizes; without it (NO_COLOR) code blocks are ruled, at one size.
        short += streams_as_the_whole_render(shape, k != 2, w, h);
    }
    // (One line has no complete line to lay out until it ends.)
    assert!(short > 0 || shape == Shape::Line, "{}: no frame fell behind: the budgets went unused", shape.name());
}

#[test]
fn many_paragraphs_stream_as_the_whole_render() {
    check(Shape::Paragraphs);
}

#[test]
fn one_long_paragraph_streams_as_the_whole_render() {
    check(Shape::Paragraph);
}

#[test]
fn one_line_without_spaces_streams_as_the_whole_render() {
    check(Shape::Line);
}

#[test]
fn one_long_code_block_streams_as_the_whole_render() {
    check(Shape::Code);
}

#[test]
fn one_long_table_streams_as_the_whole_render() {
    check(Shape::Table);
}

#[test]
fn one_long_list_streams_as_the_whole_render() {
    check(Shape::List);
}

#[test]
fn cjk_streams_as_the_whole_render() {
    check(Shape::Cjk);
}

#[test]
fn emoji_and_combining_marks_stream_as_the_whole_render() {
    check(Shape::Emoji);
}

#[test]
fn the_shapes_are_what_they_say() {
    for shape in shapes::ALL {
        let text = shapes::text(shape, DELTAS);
        let deltas = shapes::deltas(&text);
        // (The last line that would not fit is left out: a CJK line is about 800 bytes.)
        assert!(deltas.len().abs_diff(DELTAS) < DELTAS / 25, "{}: {} deltas", shape.name(), deltas.len());
        assert_eq!(deltas.concat(), text);
        let lines = text.lines().count();
        match shape {
            Shape::Line => assert!(!text.contains([' ', '\n'])),
            Shape::Paragraph => assert!(!text.contains("\n\n") && lines > 300, "{lines} lines"),
            Shape::Cjk => assert!(!text.contains(' ') && !text.contains("\n\n") && lines > 20, "{lines} lines"),
            Shape::Code => assert!(text.starts_with("```rust\n") && text.ends_with("\n```\n")),
            Shape::Table => assert!(lines > 100 && text.lines().all(|l| l.starts_with('|') && l.ends_with('|'))),
            Shape::List => assert!(lines > 300 && text.lines().all(|l| l.starts_with("- item "))),
            Shape::Emoji => assert!(text.contains('\u{200d}') && text.contains('\u{301}')),
            Shape::Paragraphs => assert!(text.matches("\n\n").count() > 50),
        }
    }
}
