//! No delta's work may grow with the length of the history (issue 31): `State::apply` of one
//! streamed delta, with the history store on (as the chat screen runs), in a fresh conversation
//! and at the end of one of 10,000 messages; then the same delta with the frame drawn at 120×40.
//! The pairs should match: whatever differs is a term that walks the history per delta.
//! Last, a compare opened from the end of that conversation (`/here demo`: each column holds
//! the history) with one column streaming, a delta and a frame: the columns measure only their
//! last turn each frame, so this pair should match too.
//! And two Enters, in a fresh conversation and after 10,000 messages: one that sends a new prompt
//! (its request carries the whole history, borrowed, not copied) and one that opens `/here demo`
//! (each column copies the history once).

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
use palaver::app::compare::CompareMsg;
use palaver::app::persist::StoreMsg;
use palaver::app::{Msg, State, TargetInfo};
use palaver::config::Config;
use palaver::engine::message::{Message, MessageStatus, Role};
use palaver::engine::target::TurnSettings;
use palaver::ui::{self, RenderCache, theme::Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::hint::black_box;
use std::time::{Duration, Instant};

const HISTORIES: [usize; 2] = [0, 10_000];

/// Deltas in one reply before the next starts.
const PER_REPLY: u64 = 5_000;

fn state() -> State {
    let target = TargetInfo::new("bench", "bench", Api::Chat);
    let theme = Theme::load("dark", None, true).unwrap_or_else(|e| panic!("{e}"));
    let settings = TurnSettings { stream: true, ..TurnSettings::default() };
    State::new(target, settings, Config::default(), theme, "dark")
}

/// A state with the store on and `n` saved messages.
fn with_history(n: usize) -> State {
    let mut s = state();
    s.apply(Msg::Store(StoreMsg::Ready));
    s.apply(Msg::Resize { width: 120, height: 40 });
    for i in 0..n {
        if i % 2 == 0 {
            s.transcript.push_message(Message::user(&format!("question {i}: tell me about part {i}")));
        } else {
            let text = format!("Part {i} in a few words: the **answer**, then a `detail` or two.\n");
            let mut m = Message::with_text(Role::Assistant, &text);
            m.status = MessageStatus::Complete;
            s.transcript.push_message(m);
        }
    }
    // Saved as a reopened conversation is: the store holds every message.
    s.apply(Msg::Tick { now_ms: 0 });
    s
}

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(s: &mut State, text: &str) {
    for c in text.chars() {
        s.apply(key(KeyCode::Char(c)));
    }
}

/// A prompt typed after the first `n` messages, not sent yet (a reply streaming before is
/// cancelled and dropped with its prompt, so the history stays `n` long).
fn ready_to_ask(s: &mut State, n: usize) {
    if s.live.is_some() {
        s.apply(key(KeyCode::Esc));
    }
    s.transcript.cells.truncate(n);
    s.apply(Msg::Tick { now_ms: 0 });
    typed(s, "go on");
}

/// Sends a prompt after the first `n` messages; returns the new reply's id.
fn ask(s: &mut State, n: usize) -> u64 {
    ready_to_ask(s, n);
    s.apply(key(KeyCode::Enter));
    let id = s.live.as_ref().map(|l| l.id).unwrap_or_else(|| panic!("no reply started"));
    s.apply(Msg::RequestStarted { id, now_ms: 0 });
    id
}

/// Delta `i` of a reply; the app clock moves 1 ms a delta, so the reply is saved every 100th
/// delta as the chat screen saves it while it streams.
fn delta(id: u64, i: usize, clock: u64) -> Msg {
    let text = if i % 12 == 11 { "end of line.\n".to_owned() } else { format!("word{} ", i % 100) };
    let events = vec![StreamEvent::Text { choice: 0, delta: text.into() }];
    let event = Box::new(WireEvent::Chunk { frames_skipped: 0, frames: vec![], events, at_ms: clock });
    Msg::Wire { id, event, now_ms: clock }
}

/// A reply streaming after `n` messages of history, carried on across criterion's samples.
struct Stream {
    s: State,
    n: usize,
    /// The reply streaming and the deltas it has had.
    reply: Option<(u64, u64)>,
}

impl Stream {
    fn new(n: usize) -> Self {
        Self { s: with_history(n), n, reply: None }
    }

    /// Times `iters` deltas (and a frame after each, with `draw`), in replies of at most
    /// [`PER_REPLY`] deltas so the answer stays short and only the history differs between
    /// runs; starting a reply is not timed.
    fn run(&mut self, iters: u64, mut draw: Option<(&mut Terminal<TestBackend>, &mut RenderCache)>) -> Duration {
        let mut total = Duration::ZERO;
        let mut done = 0;
        while done < iters {
            let (id, had) = match self.reply {
                Some((id, had)) if had < PER_REPLY => (id, had),
                _ => (ask(&mut self.s, self.n), 0),
            };
            let k = (iters - done).min(PER_REPLY - had);
            let s = &mut self.s;
            let start = Instant::now();
            for i in had..had + k {
                let clock = s.now_ms + 1;
                black_box(s.apply(delta(id, i as usize, clock)));
                if let Some((term, cache)) = draw.as_mut() {
                    term.draw(|f| {
                        black_box(ui::draw(f, s, cache));
                    })
                    .unwrap_or_else(|e| panic!("{e}"));
                }
            }
            total += start.elapsed();
            done += k;
            self.reply = Some((id, had + k));
        }
        total
    }
}

fn bench_apply(c: &mut Criterion) {
    let mut g = c.benchmark_group("history_apply_delta");
    for n in HISTORIES {
        let mut stream = Stream::new(n);
        g.bench_function(format!("{n}_messages"), |b| b.iter_custom(|iters| stream.run(iters, None)));
    }
    g.finish();
}

fn bench_apply_and_draw(c: &mut Criterion) {
    let mut g = c.benchmark_group("history_apply_delta_and_draw_120x40");
    for n in HISTORIES {
        let mut stream = Stream::new(n);
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|e| panic!("{e}"));
        let mut cache = RenderCache::default();
        g.bench_function(format!("{n}_messages"), |b| {
            b.iter_custom(|iters| stream.run(iters, Some((&mut term, &mut cache))));
        });
    }
    g.finish();
}

/// A compare from here after `n` messages: (state, generation, the streaming column's reply id).
fn compare_here(n: usize) -> (State, u64, u64) {
    let mut s = with_history(n);
    if n == 0 {
        s.transcript.push_message(Message::user("question"));
    }
    typed(&mut s, "/here demo");
    s.apply(key(KeyCode::Enter));
    let cmp = s.compare.active.as_ref().unwrap_or_else(|| panic!("no compare opened"));
    let id = cmp.columns[1].live.as_ref().map(|l| l.id).unwrap_or_else(|| panic!("column 1 is not answering"));
    let generation = cmp.generation;
    (s, generation, id)
}

fn bench_compare_here(c: &mut Criterion) {
    let mut g = c.benchmark_group("history_compare_here_delta_and_draw_120x40");
    for n in HISTORIES {
        let (mut s, generation, id) = compare_here(n);
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|e| panic!("{e}"));
        let mut cache = RenderCache::default();
        let mut i = 0;
        g.bench_function(format!("{n}_messages"), |b| {
            b.iter(|| {
                i += 1;
                let Msg::Wire { event, now_ms, .. } = delta(id, i, i as u64) else { unreachable!() };
                let m = CompareMsg::Wire { generation, column: 1, id, event, now_ms };
                black_box(s.apply(Msg::Compare(m)));
                term.draw(|f| {
                    black_box(ui::draw(f, &s, &mut cache));
                })
                .unwrap_or_else(|e| panic!("{e}"));
            });
        });
    }
    g.finish();
}

/// Times the Enter that sends a prompt after `n` messages; the reply it starts is cancelled
/// and dropped (untimed) before the next.
fn bench_send(c: &mut Criterion) {
    let mut g = c.benchmark_group("history_send_prompt");
    for n in HISTORIES {
        let mut s = with_history(n);
        g.bench_function(format!("{n}_messages"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    ready_to_ask(&mut s, n);
                    let start = Instant::now();
                    black_box(s.apply(key(KeyCode::Enter)));
                    total += start.elapsed();
                }
                total
            });
        });
    }
    g.finish();
}

/// Times the Enter of `/here demo` after `n` messages: a compare whose columns each start from
/// the whole history. The compare is closed (untimed) before the next.
fn bench_open_here(c: &mut Criterion) {
    let mut g = c.benchmark_group("history_open_here");
    for n in HISTORIES {
        let mut s = with_history(n.max(2));
        g.bench_function(format!("{n}_messages"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    typed(&mut s, "/here demo");
                    let start = Instant::now();
                    black_box(s.apply(key(KeyCode::Enter)));
                    total += start.elapsed();
                    assert!(s.compare.active.is_some(), "no compare opened");
                    typed(&mut s, "/compare off");
                    s.apply(key(KeyCode::Enter));
                    s.compare.kept.clear();
                }
                total
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench_apply, bench_apply_and_draw, bench_compare_here, bench_send, bench_open_here);
criterion_main!(benches);
