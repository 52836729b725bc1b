//! Benchmarks for the text path every frame may hit: markdown rendering (with code
//! highlighting) and the terminal-control sanitizer; and what streaming costs per line as an
//! answer grows: a code block of 50 lines against one of 5,000, 10 KB of prose against 1 MB
//! (criterion's per-element time is the cost of one line; it should not grow with the answer);
//! and issue 41's shapes (tests/common/shapes.rs) streamed through the chat screen's cell path
//! at 10,000 and 40,000 deltas (the per-element time is one delta's: it should not grow either).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::target::TurnSettings;
use palaver::ui::RenderCache;
use palaver::ui::highlight::LineHighlighter;
use palaver::ui::markdown::render;
use palaver::ui::sanitize::sanitize;
use palaver::ui::stream_md::StreamingMarkdown;
use palaver::ui::theme::Theme;
use std::hint::black_box;

/// Roughly 50 KB of typical assistant output: prose, lists, a table and code.
fn document() -> String {
    let section = "## Section heading\n\n\
Here is a paragraph with **bold**, *italic*, `inline code` and a [link](https://example.com/docs). \
It goes on long enough to wrap several times at a typical terminal width, as answers do.\n\n\
- first point with some words\n- second point\n  - nested detail\n1. ordered\n2. list\n\n\
> A quoted remark that also wraps across the available width of the terminal window.\n\n\
| Column | Value | Notes |\n|--------|------:|-------|\n| alpha | 1 | short |\n| beta | 22 | a longer note |\n\n\
```rust\nfn fibonacci(n: u64) -> u64 {\n    match n {\n        0 | 1 => n,\n        _ => fibonacci(n - 1) + fibonacci(n - 2),\n    }\n}\n\nfn main() {\n    for i in 0..10 {\n        println!(\"{}\", fibonacci(i));\n    }\n}\n```\n\n\
```python\ndef greet(name: str) -> str:\n    return f\"Hello, {name}!\"\n```\n\n";
    let mut doc = String::new();
    while doc.len() < 50_000 {
        doc.push_str(section);
    }
    doc
}

/// About 1 MB of text; with `escapes`, an SGR/OSC/C1/bidi control every ~200 bytes.
fn mixed_text(escapes: bool) -> String {
    let prose = "The quick brown fox jumps over the lazy dog. 日本語のテキスト 🎉 ünïcödé text.\n";
    let controls = ["\x1b[31m", "\x1b]0;title\x07", "\u{9b}2J", "\u{202e}", "\t", "\x1b[0m"];
    let mut s = String::with_capacity(1 << 20);
    let mut i = 0;
    while s.len() < 1 << 20 {
        s.push_str(prose);
        if escapes && i % 2 == 0 {
            s.push_str(controls[i / 2 % controls.len()]);
        }
        i += 1;
    }
    s
}

fn benches(c: &mut Criterion) {
    let theme = Theme::default();
    let doc = document();
    // Load syntect's sets outside the measurement.
    black_box(render(&doc, 120, &theme));
    c.bench_function("render 50KB markdown @120", |b| b.iter(|| render(black_box(&doc), 120, &theme)));

    let clean = mixed_text(false);
    let dirty = mixed_text(true);
    c.bench_function("sanitize 1MB clean", |b| b.iter(|| sanitize(black_box(&clean)).len()));
    c.bench_function("sanitize 1MB with escapes", |b| b.iter(|| sanitize(black_box(&dirty)).len()));
}

/// Line `i` of a long Rust function: code, strings, comments, as models write them.
fn code_line(i: usize) -> String {
    match i % 6 {
        0 => format!("    let value_{i} = compute(\"input {i}\", {i}); // the {i}th step"),
        1 => format!("    if value_{} > {i} {{", i - 1),
        2 => format!("        out.push(format!(\"{{}}-{{}}\", name, {i}));"),
        3 => "    }".to_owned(),
        4 => format!("    /* block comment {i} */ let list = vec![{i}, {}, {}];", i + 1, i + 2),
        _ => format!("    match list.get({i}) {{ Some(v) => total += v, None => break }}"),
    }
}

/// An answer as it arrives: the whole text and where each line ends.
struct Answer {
    text: String,
    ends: Vec<usize>,
}

impl Answer {
    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
        self.ends.push(self.text.len());
    }
}

/// An answer that is one code block of `n` lines.
fn code_answer(n: usize) -> Answer {
    let mut a = Answer { text: String::from("```rust\nfn long() {\n"), ends: Vec::new() };
    for i in 0..n {
        a.line(&code_line(i));
    }
    a.line("}\n```");
    a
}

/// About `bytes` of prose in paragraphs of four lines.
fn prose_answer(bytes: usize) -> Answer {
    let mut a = Answer { text: String::new(), ends: Vec::new() };
    let mut i = 0;
    while a.text.len() < bytes {
        a.line(&format!(
            "Line {i} of the answer says something with **weight** and a `name`, long enough to wrap once."
        ));
        if i % 4 == 3 {
            a.line("");
        }
        i += 1;
    }
    a
}

/// Streams `a` a line at a time into a fresh renderer at 120 columns, reading the last 40 rows
/// after each line as a screen following the answer draws them (so every line is drawn once),
/// then finishes it and reads every row (as if scrolled through).
fn stream(a: &Answer, theme: &Theme) -> usize {
    let mut md = StreamingMarkdown::default();
    for &end in &a.ends {
        md.update(&a.text[..end], true, 120, theme);
        for i in md.len().saturating_sub(40)..md.len() {
            black_box(md.get(i));
        }
    }
    md.update(&a.text, false, 120, theme);
    (0..md.len()).filter_map(|i| md.get(i)).map(|l| l.spans.len()).sum()
}

fn per_line(c: &mut Criterion) {
    let theme = Theme::load("dark", None, false).unwrap_or_default();
    let mut g = c.benchmark_group("per_line");
    g.sample_size(10);
    for n in [50usize, 5_000] {
        let lines: Vec<String> = (0..n).map(code_line).collect();
        g.throughput(Throughput::Elements(n as u64));
        // syntect alone, one line after the other (no size guard).
        g.bench_function(format!("highlight_{n}_lines"), |b| {
            b.iter(|| {
                let mut hl = LineHighlighter::new("rust", theme.syntax_theme()).unwrap_or_else(|| panic!("rust"));
                lines.iter().map(|l| hl.line(&format!("{l}\n")).map_or(0, |p| p.len())).sum::<usize>()
            });
        });
        // The streaming renderer (above 2,000 lines a block is plain, as it always was).
        let answer = code_answer(n);
        g.bench_function(format!("stream_code_block_{n}_lines"), |b| b.iter(|| stream(&answer, &theme)));
    }
    for (name, bytes) in [("10KB", 10_000usize), ("1MB", 1_000_000)] {
        let answer = prose_answer(bytes);
        g.throughput(Throughput::Elements(answer.ends.len() as u64));
        g.bench_function(format!("stream_prose_{name}"), |b| b.iter(|| stream(&answer, &theme)));
    }
    g.finish();
}

#[path = "../tests/common/shapes.rs"]
mod shapes;

/// A chat state whose reply to a prompt is streaming; returns it and the reply's id.
fn streaming_state() -> (State, u64) {
    let target = TargetInfo::new("bench", "bench", Api::Chat);
    let theme = Theme::load("dark", None, false).unwrap_or_default();
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    let mut s = State::new(target, settings, Config::default(), theme, "dark");
    for c in "go".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    let id = s.live.as_ref().map(|l| l.id).unwrap_or_else(|| panic!("no reply started"));
    s.apply(Msg::RequestStarted { id, now_ms: 0 });
    (s, id)
}

fn wire(s: &mut State, id: u64, events: Vec<StreamEvent>) {
    let event = Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 1 });
    s.apply(Msg::Wire { id, event, now_ms: 1 });
}

/// Streams `deltas` into a fresh chat state, 64 deltas between two frames; each frame lays the
/// reply out through the render cache at 100 columns and reads its last 40 rows, as the screen
/// following the answer does (no frame budget: all the work is done); then ends the answer and
/// lays out the end.
fn stream_cells(deltas: &[&str]) -> usize {
    let (mut s, id) = streaming_state();
    let mut cache = RenderCache::default();
    let frame = |s: &State, cache: &mut RenderCache| {
        cache.retain(s);
        let cell = cache.cell(s, s.transcript.cells.len() - 1, 100).unwrap_or_else(|| panic!("no reply"));
        let n = cell.body_len();
        (n.saturating_sub(40)..n).filter_map(|i| cell.body_line(i)).map(|l| l.spans.len()).sum::<usize>()
    };
    for burst in deltas.chunks(64) {
        wire(&mut s, id, burst.iter().map(|d| StreamEvent::Text { choice: 0, delta: (*d).into() }).collect());
        black_box(frame(&s, &mut cache));
    }
    wire(&mut s, id, vec![StreamEvent::Finish { choice: 0, reason: "stop".into() }, StreamEvent::End]);
    s.apply(Msg::Wire { id, event: Box::new(WireEvent::Closed { at_ms: 1 }), now_ms: 2 });
    frame(&s, &mut cache)
}

fn per_shape(c: &mut Criterion) {
    let mut g = c.benchmark_group("shapes");
    g.sample_size(10);
    for shape in shapes::ALL {
        for n in [10_000usize, 40_000] {
            let text = shapes::text(shape, n);
            let deltas = shapes::deltas(&text);
            g.throughput(Throughput::Elements(deltas.len() as u64));
            g.bench_function(format!("{}_{}k_deltas", shape.name(), n / 1000), |b| b.iter(|| stream_cells(&deltas)));
        }
    }
    g.finish();
}

criterion_group!(markdown, benches, per_line, per_shape);
criterion_main!(markdown);
