//! No delta's work may grow with the length of the history (issue 31): `State::apply` of one
//! streamed delta, with the history store on (as the chat screen runs), in a fresh conversation
//! and at the end of one of 10,000 messages; then the same delta with the frame drawn at 120×40.
//! The pairs should match: whatever differs is a term that walks the history per delta.

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use palaver::api::Api;
use palaver::api::client::WireEvent;
use palaver::api::event::StreamEvent;
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
const PER_REPLY: u64 = 20_000;

fn state() -> State {
    let target = TargetInfo {
        provider: "bench".into(),
        model: "bench".into(),
        api: Api::Chat,
        include_usage: true,
        request_extra: serde_json::Map::new(),
        chain_responses: false,
        attachments: Default::default(),
        base_url: None,
    };
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

/// Sends a prompt after the first `n` messages (a reply streaming before is cancelled and
/// dropped with its prompt, so the history stays `n` long); returns the new reply's id.
fn ask(s: &mut State, n: usize) -> u64 {
    let key = |code| Msg::Key(KeyEvent::new(code, KeyModifiers::NONE));
    if s.live.is_some() {
        s.apply(key(KeyCode::Esc));
    }
    s.transcript.cells.truncate(n);
    s.apply(Msg::Tick { now_ms: 0 });
    for c in "go on".chars() {
        s.apply(key(KeyCode::Char(c)));
    }
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

/// Times `iters` deltas (and a frame after each, with `draw`), in replies of at most
/// [`PER_REPLY`] deltas so the answer stays short and only the history differs between runs;
/// starting each reply is not timed.
fn run(
    s: &mut State,
    n: usize,
    iters: u64,
    mut draw: Option<(&mut Terminal<TestBackend>, &mut RenderCache)>,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let id = ask(s, n);
        let k = (iters - done).min(PER_REPLY);
        let start = Instant::now();
        for i in 0..k {
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
    }
    total
}

fn bench_apply(c: &mut Criterion) {
    let mut g = c.benchmark_group("history_apply_delta");
    for n in HISTORIES {
        let mut s = with_history(n);
        g.bench_function(format!("{n}_messages"), |b| b.iter_custom(|iters| run(&mut s, n, iters, None)));
    }
    g.finish();
}

fn bench_apply_and_draw(c: &mut Criterion) {
    let mut g = c.benchmark_group("history_apply_delta_and_draw_120x40");
    for n in HISTORIES {
        let mut s = with_history(n);
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|e| panic!("{e}"));
        let mut cache = RenderCache::default();
        g.bench_function(format!("{n}_messages"), |b| {
            b.iter_custom(|iters| run(&mut s, n, iters, Some((&mut term, &mut cache))));
        });
    }
    g.finish();
}

criterion_group!(benches, bench_apply, bench_apply_and_draw);
criterion_main!(benches);
