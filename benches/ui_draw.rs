//! Drawing cost of the chat screen: `ui::draw` of a long transcript (about 500 bytes of markdown
//! with a code block per message) at 120×40 while the last reply streams, at 200, 2,000 and
//! 20,000 messages to show it stays flat; and applying 100,000 deltas through `State::apply`,
//! alone and as the loop does it (bursts, frames capped at 60 per second), next to the cost of
//! parsing the same stream off the wire.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::api::sse::SseDecoder;
use palaver::api::{Api, Mapper};
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::message::{Message, MessageStatus, Role};
use palaver::engine::target::TurnSettings;
use palaver::tui::frame::FrameLimiter;
use palaver::ui::{self, RenderCache, theme::Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::time::Instant;

const DELTAS: usize = 100_000;

/// The loop simulation prints its frame count once, not every iteration.
static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn markdown(i: usize) -> String {
    format!(
        "## Section {i}\n\nSome **bold** text, some `inline code` and a [link](https://example.com/{i}). \
         This paragraph is long enough to wrap at least once on a 120 column screen, like real answers do.\n\n\
         - first point about item {i}\n- second point, a little longer than the first\n\n\
         ```rust\nfn answer_{i}() -> u64 {{\n    let x = {i};\n    // Double it, because that is what the question asked for.\n    x * 2\n}}\n```\n\n\
         > A quoted remark about part {i}, the kind of aside a model likes to add.\n\n\
         | Option | Cost | Notes |\n|---|---|---|\n| fast | low | good for item {i} |\n| careful | high | slower but thorough |\n\n\
         A second paragraph follows with more prose: streaming answers are mostly text, so most of a \
         transcript is paragraphs that wrap, with the odd list, table and code block in between. That is all for part {i}.\n"
    )
}

fn state() -> State {
    let target = TargetInfo::new("bench", "bench", Api::Chat);
    let theme = Theme::load("dark", None, true).unwrap_or_else(|e| panic!("{e}"));
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    State::new(target, settings, Config::default(), theme, "dark")
}

/// A state holding `n` finished messages, then a prompt whose reply is streaming; returns its id.
fn long_transcript(n: usize) -> (State, u64) {
    let mut s = state();
    for i in 0..n.saturating_sub(2) {
        if i % 2 == 0 {
            s.transcript.push_message(Message::user(&format!("question {i}: tell me about part {i}")));
        } else {
            let mut m = Message::with_text(Role::Assistant, &markdown(i));
            m.status = MessageStatus::Complete;
            m.model = Some("bench".into());
            s.transcript.push_message(m);
        }
    }
    for c in "go on".chars() {
        s.apply(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
    }
    s.apply(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
    let id = s.live.as_ref().map(|l| l.id).unwrap_or_else(|| panic!("no reply started"));
    s.apply(Msg::RequestStarted { id, now_ms: 0 });
    (s, id)
}

fn delta(id: u64, i: usize) -> Msg {
    let text = if i % 12 == 11 { "end of line.\n".to_owned() } else { format!("word{} ", i % 100) };
    let events = vec![StreamEvent::Text { choice: 0, delta: text.into() }];
    Msg::Wire {
        id,
        event: Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: 1 }),
        now_ms: 1,
    }
}

fn bench_draw(c: &mut Criterion) {
    let mut g = c.benchmark_group("ui_draw_streaming_120x40");
    for n in [200usize, 2_000, 20_000] {
        let (mut s, id) = long_transcript(n);
        let bytes: usize = s.transcript.cells.iter().filter_map(|c| c.message()).map(|m| m.text().len()).sum();
        eprintln!("{n} messages, {:.2} MB of text", bytes as f64 / 1e6);
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|e| panic!("{e}"));
        let mut cache = RenderCache::default();
        s.apply(Msg::Resize { width: 120, height: 40 });
        let mut i = 0;
        g.bench_function(format!("{n}_messages"), |b| {
            b.iter(|| {
                s.apply(delta(id, i));
                i += 1;
                let mut report = None;
                term.draw(|f| report = Some(ui::draw(f, &s, &mut cache))).unwrap_or_else(|e| panic!("{e}"));
                black_box(report);
            });
        });
    }
    g.finish();
}

fn bench_apply(c: &mut Criterion) {
    let mut g = c.benchmark_group("deltas");
    g.throughput(Throughput::Elements(DELTAS as u64));
    g.sample_size(10);
    g.bench_function("apply_100k", |b| {
        b.iter_batched(
            || {
                let (s, id) = long_transcript(2);
                let msgs: Vec<Msg> = (0..DELTAS).map(|i| delta(id, i)).collect();
                (s, msgs)
            },
            |(mut s, msgs)| {
                for m in msgs {
                    s.apply(m);
                }
                black_box(s.version)
            },
            BatchSize::PerIteration,
        );
    });
    // As the loop runs it: bursts of up to 1024 messages, a frame when the limiter allows.
    g.bench_function("apply_and_draw_100k_at_60fps", |b| {
        b.iter_batched(
            || {
                let (s, id) = long_transcript(2_000);
                let msgs: Vec<Msg> = (0..DELTAS).map(|i| delta(id, i)).collect();
                (s, msgs)
            },
            |(mut s, msgs)| {
                let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|e| panic!("{e}"));
                let mut cache = RenderCache::default();
                let mut frames = FrameLimiter::default();
                let start = Instant::now();
                let mut draws = 0u32;
                let mut it = msgs.into_iter().peekable();
                while it.peek().is_some() {
                    for m in it.by_ref().take(1024) {
                        s.apply(m);
                    }
                    frames.request();
                    if frames.ready(Instant::now()) {
                        term.draw(|f| {
                            black_box(ui::draw(f, &s, &mut cache));
                        })
                        .unwrap_or_else(|e| panic!("{e}"));
                        frames.drew(Instant::now());
                        draws += 1;
                    }
                }
                let secs = start.elapsed().as_secs_f64();
                if !REPORTED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    eprintln!("100k deltas applied in {:.1} ms with {draws} frame(s) drawn", secs * 1e3);
                }
            },
            BatchSize::PerIteration,
        );
    });
    // The same stream's own cost on the wire side: SSE decode and chat mapping.
    let mut body = String::new();
    for i in 0..DELTAS {
        body.push_str(&format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"word{} \"}},\"finish_reason\":null}}]}}\n\n",
            i % 100
        ));
    }
    g.bench_function("parse_100k_chunks", |b| {
        b.iter(|| {
            let mut dec = SseDecoder::new();
            let mut mapper = Mapper::new(Api::Chat);
            let mut out = Vec::new();
            for piece in body.as_bytes().chunks(4096) {
                dec.push(piece, &mut |e| mapper.map(e.event, e.data, &mut out));
            }
            black_box(out.len())
        });
    });
    g.finish();
}

criterion_group!(benches, bench_draw, bench_apply);
criterion_main!(benches);
